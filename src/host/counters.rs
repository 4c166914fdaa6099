//! Snapshots of the kernel's own counters (`/proc/vmstat`, `/proc/interrupts`,
//! `/proc/softirqs`, `/proc/stat`, `/proc/schedstat`, `/proc/meminfo`), taken at the start
//! and the end of a test; their difference is what the kernel counted over it
//! (docs/format.md, `TEST/counters`).

use std::path::{Path, PathBuf};
use upcmp_parsers::counters::CounterValue;
use upcmp_parsers::procfs::{parse_interrupts, parse_meminfo, parse_schedstat, parse_softirqs, parse_vmstat, CpuTable};
use upcmp_parsers::procstat::{parse_proc_stat, parse_proc_stat_totals};
use upcmp_parsers::ParseError;

/// Why a snapshot could not be taken.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    /// A file that exists could not be read.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A file did not parse.
    #[error(transparent)]
    Parse(#[from] ParseError),
}

/// Whether a counter only grows (its change is what happened) or is a level that may
/// go both ways (its start and end are both kept).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A count of events since boot.
    Cumulative,
    /// A level at the moment of reading (free memory, runnable tasks).
    Level,
}

/// The counters of the machine at one moment, by name (`vmstat.pgfault`, …), in the
/// order of their files.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// (name, kind, value).
    pub values: Vec<(String, Kind, u64)>,
}

/// The /proc/stat modes, in the order of its `cpuN` lines.
const MODES: [&str; 8] = ["user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal"];

/// The name of an interrupt source: its label when it is a name (`LOC`, `RES`), else
/// `IRQ:DEVICE` (the number, then the last word of the description, the device), since
/// numbers alone are assigned at boot and mean nothing across machines.
fn interrupt_name(label: &str, description: &str) -> String {
    if label.bytes().all(|b| b.is_ascii_digit()) {
        match description.split_whitespace().last() {
            Some(dev) => format!("{label}:{dev}"),
            None => label.to_string(),
        }
    } else {
        label.to_string()
    }
}

fn read(path: &Path) -> Result<Option<String>, SnapshotError> {
    match std::fs::read_to_string(path) {
        Ok(t) => Ok(Some(t)),
        // A file this kernel lacks (no CONFIG_SCHEDSTATS): its counters are absent.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(SnapshotError::Io {
            path: path.to_path_buf(),
            source,
        }),
    }
}

impl Snapshot {
    fn push(&mut self, name: String, kind: Kind, v: u64) {
        self.values.push((name, kind, v));
    }

    fn table(&mut self, prefix: &str, t: &CpuTable, per_cpu: bool) {
        for r in &t.rows {
            let name = if prefix == "interrupts" {
                interrupt_name(r.label, r.description)
            } else {
                r.label.to_string()
            };
            // Two rows may have the same name (shared IRQ lines): keep the first.
            let full = format!("{prefix}.{name}");
            if !self.values.iter().any(|(n, _, _)| *n == full) {
                self.push(full, Kind::Cumulative, r.total());
            }
        }
        if per_cpu {
            for (k, cpu) in t.cpus.iter().enumerate() {
                let total: u64 = t.rows.iter().filter_map(|r| r.counts.get(k)).sum();
                self.push(format!("{prefix}.cpu{cpu}"), Kind::Cumulative, total);
            }
        }
    }

    /// Reads the files under `root` (`/proc` on a live machine; a copy in tests). A file
    /// that does not exist contributes nothing; one that exists must parse.
    pub fn take_from(root: &Path) -> Result<Self, SnapshotError> {
        let mut s = Snapshot::default();
        let name_of = |f: &str| root.join(f).display().to_string();
        if let Some(t) = read(&root.join("vmstat"))? {
            for (n, v) in parse_vmstat(&t, &name_of("vmstat"))? {
                s.push(format!("vmstat.{n}"), Kind::Cumulative, v);
            }
        }
        if let Some(t) = read(&root.join("interrupts"))? {
            s.table("interrupts", &parse_interrupts(&t, &name_of("interrupts"))?, true);
        }
        if let Some(t) = read(&root.join("softirqs"))? {
            s.table("softirqs", &parse_softirqs(&t, &name_of("softirqs"))?, false);
        }
        if let Some(t) = read(&root.join("stat"))? {
            let file = name_of("stat");
            for (n, v) in parse_proc_stat_totals(&t, &file)? {
                let kind = if n.starts_with("procs_") {
                    Kind::Level
                } else {
                    Kind::Cumulative
                };
                s.push(format!("stat.{n}"), kind, v);
            }
            for c in parse_proc_stat(&t, &file)? {
                for (mode, v) in MODES.iter().zip(c.ticks) {
                    s.push(format!("stat.cpu{}.{mode}", c.cpu), Kind::Cumulative, v);
                }
            }
        }
        if let Some(t) = read(&root.join("schedstat"))? {
            let cpus = parse_schedstat(&t, &name_of("schedstat"))?;
            type Field = fn(&upcmp_parsers::procfs::SchedCpu) -> u64;
            let fields: [(&str, Field); 3] = [
                ("run-ns", |c| c.run_ns),
                ("run-delay-ns", |c| c.run_delay_ns),
                ("timeslices", |c| c.timeslices),
            ];
            for (f, get) in fields {
                s.push(format!("schedstat.{f}"), Kind::Cumulative, cpus.iter().map(get).sum());
                for c in &cpus {
                    s.push(format!("schedstat.cpu{}.{f}", c.cpu), Kind::Cumulative, get(c));
                }
            }
        }
        if let Some(t) = read(&root.join("meminfo"))? {
            for (n, v) in parse_meminfo(&t, &name_of("meminfo"))? {
                s.push(format!("meminfo.{n}"), Kind::Level, v);
            }
        }
        Ok(s)
    }

    /// The live machine's counters.
    pub fn take() -> Result<Self, SnapshotError> {
        Self::take_from(Path::new("/proc"))
    }

    /// What changed from `self` (the start) to `end`, in `end`'s order: a cumulative
    /// counter's difference (a source that appeared meanwhile started at 0), a level's
    /// start and end (only when both were read).
    pub fn until(&self, end: &Snapshot) -> Vec<(String, CounterValue)> {
        let start: std::collections::HashMap<&str, u64> =
            self.values.iter().map(|(n, _, v)| (n.as_str(), *v)).collect();
        end.values
            .iter()
            .filter_map(|(n, kind, v)| {
                let s = start.get(n.as_str()).copied();
                let value = match kind {
                    Kind::Cumulative => {
                        let d = i128::from(*v) - i128::from(s.unwrap_or(0));
                        CounterValue::Delta(d.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64)
                    }
                    Kind::Level => CounterValue::Level { start: s?, end: *v },
                };
                Some((n.clone(), value))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) {
        crate::fsio::write_atomic(&dir.join(name), text.as_bytes(), 0o644).unwrap();
    }

    #[test]
    fn deltas_of_two_snapshots() {
        let a = tempfile::tempdir().unwrap();
        let b = tempfile::tempdir().unwrap();
        write(a.path(), "vmstat", "nr_free_pages 100\npgfault 1000\n");
        write(b.path(), "vmstat", "nr_free_pages 90\npgfault 1500\n");
        write(
            a.path(),
            "interrupts",
            "CPU0 CPU1\n 31: 1 2 PCI-MSI 3-edge virtio0\nLOC: 10 20 Local timer\n",
        );
        write(
            b.path(),
            "interrupts",
            "CPU0 CPU1\n 31: 2 4 PCI-MSI 3-edge virtio0\n 40: 5 0 PCI-MSI x new\nLOC: 15 30 Local timer\n",
        );
        write(a.path(), "meminfo", "MemFree: 500 kB\n");
        write(b.path(), "meminfo", "MemFree: 400 kB\n");
        write(a.path(), "stat", "cpu0 1 0 2 3 0 0 0 0\nctxt 7\nprocs_running 2\n");
        write(b.path(), "stat", "cpu0 4 0 2 9 0 0 0 0\nctxt 17\nprocs_running 1\n");
        let (s, e) = (
            Snapshot::take_from(a.path()).unwrap(),
            Snapshot::take_from(b.path()).unwrap(),
        );
        let d = s.until(&e);
        let get = |n: &str| d.iter().find(|(k, _)| k == n).map(|(_, v)| *v);
        assert_eq!(get("vmstat.pgfault"), Some(CounterValue::Delta(500)));
        assert_eq!(get("vmstat.nr_free_pages"), Some(CounterValue::Delta(-10)));
        assert_eq!(get("interrupts.31:virtio0"), Some(CounterValue::Delta(3)));
        assert_eq!(
            get("interrupts.40:new"),
            Some(CounterValue::Delta(5)),
            "new source from 0"
        );
        assert_eq!(get("interrupts.LOC"), Some(CounterValue::Delta(15)));
        assert_eq!(get("interrupts.cpu0"), Some(CounterValue::Delta(2 + 5 + 15 - 11)));
        assert_eq!(get("interrupts.cpu1"), Some(CounterValue::Delta(34 - 22)));
        assert_eq!(
            get("meminfo.MemFree"),
            Some(CounterValue::Level { start: 500, end: 400 })
        );
        assert_eq!(get("stat.ctxt"), Some(CounterValue::Delta(10)));
        assert_eq!(
            get("stat.procs_running"),
            Some(CounterValue::Level { start: 2, end: 1 })
        );
        assert_eq!(get("stat.cpu0.user"), Some(CounterValue::Delta(3)));
        assert_eq!(get("stat.cpu0.idle"), Some(CounterValue::Delta(6)));
        // No schedstat, no softirqs here: nothing of theirs.
        assert!(d
            .iter()
            .all(|(n, _)| !n.starts_with("schedstat") && !n.starts_with("softirqs")));
    }

    #[test]
    fn a_malformed_file_is_an_error_naming_it() {
        let a = tempfile::tempdir().unwrap();
        write(a.path(), "vmstat", "pgfault 12\npgmajfault twelve\n");
        let e = Snapshot::take_from(a.path()).unwrap_err().to_string();
        assert!(e.contains("vmstat:2:12"), "{e}");
    }

    #[test]
    fn the_live_machine() {
        let s = Snapshot::take().unwrap();
        for n in ["vmstat.pgfault", "stat.ctxt", "meminfo.MemFree", "interrupts.cpu0"] {
            assert!(s.values.iter().any(|(k, _, _)| k == n), "{n}");
        }
    }
}
