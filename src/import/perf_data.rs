//! `perf.data` → [`Profile`], read with the `linux-perf-data` crate.
//!
//! Kernel PCs are named with [`KernelSymbols`], as in a live run. The symbols are, in
//! order: `--vmlinux`/`--kallsyms` when given; the kallsyms perf saved in its build-id
//! cache (`~/.debug/[kernel.kallsyms]/BUILD_ID/kallsyms`, or under `$PERF_BUILDID_DIR`);
//! this machine's `/proc/kallsyms` when the file's kernel build-id is the running
//! kernel's (or, without a build-id, its release is). User PCs are counted under their
//! DSO's file name as `[unknown]`: perf.data holds no user symbols.

use super::{is_kernel_address, is_time_event, test_name, Counts, ImportError, ImportOptions};
use crate::collect::profile::ProfileMeta;
use crate::collect::symbols::{running_kernel_build_id, KernelSymbols};
use crate::Profile;
use linux_perf_data::linux_perf_event_reader::{CpuMode, EventRecord, SamplingPolicy};
use linux_perf_data::{DsoKey, PerfFileReader, PerfFileRecord};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// perf's build-id cache directory.
fn buildid_dir() -> Option<PathBuf> {
    std::env::var_os("PERF_BUILDID_DIR")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".debug")))
}

fn kernel_symbols(
    path: &Path,
    opts: &ImportOptions,
    build_id: Option<&[u8]>,
    release: Option<&str>,
) -> Result<(KernelSymbols, Option<String>), ImportError> {
    let kallsyms = |p: &Path| KernelSymbols::from_kallsyms_file(p);
    let with_vmlinux = |k: KernelSymbols| -> Result<KernelSymbols, ImportError> {
        match &opts.vmlinux {
            // The recording's build-id, not the running kernel's, is what the ELF must match.
            Some(v) => Ok(KernelSymbols::from_vmlinux(v, &k, build_id, false)?),
            None => Ok(k),
        }
    };
    if let Some(k) = &opts.kallsyms {
        return Ok((with_vmlinux(kallsyms(k)?)?, None));
    }
    if let (Some(id), Some(dir)) = (build_id, buildid_dir()) {
        let cached = dir.join("[kernel.kallsyms]").join(hex(id)).join("kallsyms");
        if cached.is_file() {
            return Ok((with_vmlinux(kallsyms(&cached)?)?, None));
        }
    }
    let running = running_kernel_build_id();
    let this_release = std::fs::read_to_string("/proc/sys/kernel/osrelease").ok();
    let proc = Path::new("/proc/kallsyms");
    match (build_id, running.as_deref()) {
        (Some(id), Some(r)) if id == r => Ok((with_vmlinux(kallsyms(proc)?)?, None)),
        (Some(id), _) => Err(ImportError::NoKernelSymbols {
            path: path.to_path_buf(),
            why: format!(
                "recorded on another kernel (build-id {}{}), whose kallsyms is not in perf's build-id cache",
                hex(id),
                release.map(|r| format!(", release {r}")).unwrap_or_default()
            ),
        }),
        (None, _) if release.is_some() && release.map(str::trim) == this_release.as_deref().map(str::trim) => Ok((
            with_vmlinux(kallsyms(proc)?)?,
            Some(
                "the recording names no kernel build-id; /proc/kallsyms of this machine (same release) is used".into(),
            ),
        )),
        (None, _) => Err(ImportError::NoKernelSymbols {
            path: path.to_path_buf(),
            why: "the recording names neither a kernel build-id nor this machine's kernel release".into(),
        }),
    }
}

/// A process's executable mappings: start → (end, DSO index).
#[derive(Default)]
struct Maps {
    by_pid: HashMap<i32, std::collections::BTreeMap<u64, (u64, usize)>>,
    dsos: Vec<String>,
    dso_index: HashMap<String, usize>,
}

impl Maps {
    fn add(&mut self, pid: i32, start: u64, len: u64, path: &[u8]) {
        let path = String::from_utf8_lossy(path);
        let name = super::module_of_dso(Some(&path), start).to_string();
        let i = match self.dso_index.get(&name) {
            Some(&i) => i,
            None => {
                self.dsos.push(name.clone());
                self.dso_index.insert(name, self.dsos.len() - 1);
                self.dsos.len() - 1
            }
        };
        self.by_pid.entry(pid).or_default().insert(start, (start + len, i));
    }

    fn dso(&self, pid: i32, ip: u64) -> Option<&str> {
        let (_, &(end, i)) = self.by_pid.get(&pid)?.range(..=ip).next_back()?;
        (ip < end).then(|| self.dsos[i].as_str())
    }
}

fn perf_err(path: &Path) -> impl Fn(linux_perf_data::Error) -> ImportError + '_ {
    move |source| ImportError::PerfData {
        path: path.to_path_buf(),
        source,
    }
}

/// Reads a perf.data file.
pub fn read(path: &Path, opts: &ImportOptions) -> Result<Profile, ImportError> {
    let file = std::fs::File::open(path).map_err(ImportError::io(path))?;
    let reader = std::io::BufReader::with_capacity(1 << 16, file);
    let PerfFileReader {
        mut perf_file,
        mut record_iter,
    } = PerfFileReader::parse_file(reader).map_err(perf_err(path))?;

    // One event per profile: the first that samples (perf adds `dummy` events for
    // side-band records).
    let attrs = perf_file.event_attributes();
    let Some(event_index) = attrs.iter().position(|a| {
        !matches!(a.attributes().sampling_policy, SamplingPolicy::NoSampling)
            && a.name() != Some("dummy:u")
            && a.name() != Some("dummy")
    }) else {
        return Err(ImportError::NoSamples {
            path: path.to_path_buf(),
            hint: " (the recording has no sampling event)",
        });
    };
    let event = attrs[event_index]
        .name()
        .map(|n| n.split(':').next().unwrap_or(n).to_string())
        .unwrap_or_else(|| "cpu-clock".into());
    let policy = attrs[event_index].attributes().sampling_policy;
    let other_events = attrs.len() > 1;

    let build_ids = perf_file.build_ids().map_err(perf_err(path))?;
    let kernel_id = build_ids.get(&DsoKey::Kernel).map(|d| d.build_id.clone());
    let release = perf_file.os_release().map_err(perf_err(path))?.map(str::to_string);
    let cmdline = perf_file.cmdline().map_err(perf_err(path))?.map(|c| c.join(" "));
    let online = perf_file.nr_cpus().map_err(perf_err(path))?.map(|n| n.nr_cpus_online);
    let (symbols, symbols_note) = kernel_symbols(path, opts, kernel_id.as_deref(), release.as_deref())?;

    let mut counts = Counts::default();
    for c in 0..online.unwrap_or(0) {
        counts.ensure_cpu(c);
    }
    let mut maps = Maps::default();
    let (mut first, mut last) = (u64::MAX, 0u64);
    let (mut period_sum, mut with_period, mut skipped) = (0u128, 0u64, 0u64);
    while let Some(record) = record_iter.next_record(&mut perf_file).map_err(perf_err(path))? {
        let PerfFileRecord::EventRecord { attr_index, record } = record else {
            continue;
        };
        let parsed = record.parse().map_err(|e| perf_err(path)(e.into()))?;
        match parsed {
            EventRecord::Sample(s) if attr_index == event_index => {
                let cpu = s.cpu.unwrap_or(0);
                if let Some(t) = s.timestamp {
                    first = first.min(t);
                    last = last.max(t);
                }
                if let Some(p) = s.period {
                    period_sum += u128::from(p);
                    with_period += 1;
                }
                let ip = s.ip.unwrap_or(0);
                match s.cpu_mode {
                    CpuMode::Kernel => match symbols.resolve(ip) {
                        Some((name, module)) => counts.add(cpu, module.unwrap_or("kernel"), name, 1),
                        None => counts.add(cpu, "kernel", "[unknown]", 1),
                    },
                    CpuMode::User => {
                        let dso = maps.dso(s.pid.unwrap_or(-1), ip).unwrap_or("unknown");
                        counts.add(cpu, dso, "[unknown]", 1);
                    }
                    CpuMode::Hypervisor => counts.add(cpu, "hypervisor", "hypervisor", 1),
                    CpuMode::GuestKernel | CpuMode::GuestUser => counts.add(cpu, "guest", "guest", 1),
                    _ if is_kernel_address(ip) => counts.add(cpu, "kernel", "[unknown mode]", 1),
                    _ => counts.add(cpu, "user", "[unknown mode]", 1),
                }
            }
            EventRecord::Sample(_) => skipped += 1,
            EventRecord::Mmap(m) if m.is_executable => maps.add(m.pid, m.address, m.length, &m.path.as_slice()),
            EventRecord::Mmap2(m) if m.protection & 4 != 0 => maps.add(m.pid, m.address, m.length, &m.path.as_slice()),
            EventRecord::Lost(l) => {
                let cpu = record.common_data().ok().and_then(|c| c.cpu).unwrap_or(0);
                counts.lost(cpu, l.count);
            }
            _ => {}
        }
    }
    let samples = counts.samples();
    if samples == 0 {
        return Err(ImportError::NoSamples {
            path: path.to_path_buf(),
            hint: " (the recording has no samples of its first event)",
        });
    }
    let mut warnings = Vec::new();
    warnings.extend(symbols_note);
    if other_events && skipped > 0 {
        warnings.push(format!("{skipped} samples of events other than {event} are left out"));
    }
    let cpus = counts.cpu_count() as f64;
    let range_sec = if first <= last {
        (last - first) as f64 * 1e-9
    } else {
        0.0
    };
    let period_sec = match (opts.period_sec, policy) {
        (Some(p), _) => p,
        _ if with_period > 0 && is_time_event(&event) => period_sum as f64 / with_period as f64 * 1e-9,
        (None, SamplingPolicy::Period(n)) if is_time_event(&event) => n.get() as f64 * 1e-9,
        (None, SamplingPolicy::Frequency(f)) if is_time_event(&event) && f > 0 => 1.0 / f as f64,
        _ => {
            warnings.push(format!(
                "{event} is not a time event: one sample is taken as the time range x CPUs / samples"
            ));
            range_sec * cpus / samples as f64
        }
    };
    let wall_sec = range_sec + period_sec;
    Ok(counts.finish(
        ProfileMeta {
            test: test_name(path),
            command: cmdline,
            event,
            period_sec,
            wall_sec,
        },
        warnings,
    ))
}
