//! From raw samples to a [`Profile`]: symbolization, per-function per-CPU counts.
//!
//! The same code builds `prfout` during a run and rebuilds it later from `samples.gz`
//! with another symbol table or idle set.

use super::symbols::KernelSymbols;
use crate::compare::IdleSet;
use crate::{CpuTotals, FunctionSamples, Profile};
use std::collections::HashMap;
use upcmp_parsers::samples::{Mode, Record};

/// How user-mode samples are named.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum UserBy {
    /// All user time is the one function `user`, as the original.
    #[default]
    Single,
    /// One function per command name: `user:COMM`.
    Comm,
}

/// What a profile says about itself, apart from its counts.
#[derive(Debug, Clone)]
pub struct ProfileMeta {
    /// The test's name.
    pub test: String,
    /// What ran, when known.
    pub command: Option<String>,
    /// The sampled event.
    pub event: String,
    /// Time one sample stands for, in seconds.
    pub period_sec: f64,
    /// Wall-clock length of the sampled interval.
    pub wall_sec: f64,
}

impl ProfileMeta {
    /// The profile of `functions`, in the one order every source uses: by total samples
    /// (largest first), then by name.
    pub fn into_profile(
        self,
        idle: &IdleSet,
        cpus: Vec<CpuTotals>,
        mut functions: Vec<FunctionSamples>,
        warnings: Vec<String>,
    ) -> Profile {
        functions.sort_by(|a, b| b.total().cmp(&a.total()).then_with(|| a.name.cmp(&b.name)));
        Profile {
            format: upcmp_parsers::prfout::FORMAT_VERSION,
            test: self.test,
            command: self.command,
            event: self.event,
            period_sec: self.period_sec,
            wall_sec: self.wall_sec,
            idle_set: idle.names().to_vec(),
            cpus,
            warnings,
            functions,
        }
    }
}

/// Accumulates samples into per-function, per-CPU counts.
pub struct ProfileBuilder<'a> {
    symbols: &'a KernelSymbols,
    user_by: UserBy,
    cpu_index: HashMap<u32, usize>,
    cpus: Vec<CpuTotals>,
    functions: HashMap<(String, String), Vec<u64>>,
    comms: HashMap<u32, String>,
    foreign_cpu_samples: u64,
}

impl<'a> ProfileBuilder<'a> {
    /// A builder for the CPUs `cpus` (column order), resolving kernel PCs with `symbols`.
    pub fn new(symbols: &'a KernelSymbols, cpus: &[u32], user_by: UserBy) -> Self {
        ProfileBuilder {
            symbols,
            user_by,
            cpu_index: cpus.iter().enumerate().map(|(i, &c)| (c, i)).collect(),
            cpus: cpus
                .iter()
                .map(|&cpu| CpuTotals {
                    cpu,
                    samples: 0,
                    lost: 0,
                    throttled: 0,
                    procstat_busy_sec: None,
                })
                .collect(),
            functions: HashMap::new(),
            comms: HashMap::new(),
            foreign_cpu_samples: 0,
        }
    }

    fn function_of(&self, mode: Mode, pc: u64, tid: u32) -> (String, String) {
        match mode {
            Mode::Kernel => match self.symbols.resolve(pc) {
                Some((name, module)) => (module.unwrap_or("kernel").to_string(), name.to_string()),
                None => ("kernel".into(), "[unknown]".into()),
            },
            Mode::User => match self.user_by {
                UserBy::Single => ("user".into(), "user".into()),
                UserBy::Comm => {
                    let comm = self.comms.get(&tid).map(String::as_str).unwrap_or("[unknown]");
                    ("user".into(), format!("user:{comm}"))
                }
            },
            Mode::Hypervisor => ("hypervisor".into(), "hypervisor".into()),
            Mode::GuestKernel | Mode::GuestUser => ("guest".into(), "guest".into()),
            Mode::Unknown => ("kernel".into(), "[unknown mode]".into()),
        }
    }

    /// Adds one record.
    pub fn add(&mut self, r: &Record) {
        match r {
            Record::Sample(s) => {
                let Some(&i) = self.cpu_index.get(&s.cpu) else {
                    self.foreign_cpu_samples += 1;
                    return;
                };
                let key = self.function_of(s.mode, s.pc, s.tid);
                let n = self.cpus.len();
                self.functions.entry(key).or_insert_with(|| vec![0; n])[i] += 1;
                self.cpus[i].samples += 1;
            }
            Record::Lost { cpu, count } => {
                if let Some(&i) = self.cpu_index.get(cpu) {
                    self.cpus[i].lost += count;
                }
            }
            Record::Throttle { cpu } => {
                if let Some(&i) = self.cpu_index.get(cpu) {
                    self.cpus[i].throttled += 1;
                }
            }
            Record::Comm { tid, comm, .. } => {
                self.comms.insert(*tid, comm.clone());
            }
            Record::Fork { tid, ptid, .. } => {
                if let Some(c) = self.comms.get(ptid).cloned() {
                    self.comms.insert(*tid, c);
                }
            }
        }
    }

    /// The profile: functions by total samples (largest first), then by name.
    pub fn finish(self, meta: ProfileMeta, idle: &IdleSet, mut warnings: Vec<String>) -> Profile {
        let functions = self
            .functions
            .into_iter()
            .map(|((module, name), per_cpu)| FunctionSamples { module, name, per_cpu })
            .collect();
        if self.foreign_cpu_samples > 0 {
            warnings.push(format!(
                "{} samples came from CPUs that were not online at the start and are left out",
                self.foreign_cpu_samples
            ));
        }
        meta.into_profile(idle, self.cpus, functions, warnings)
    }
}

/// Rebuilds a test's profile from its `samples.gz` with another symbol table, idle set
/// or user naming, keeping the header (CPUs, wall time, period, /proc/stat) of its
/// `prfout`: no rerun needed.
pub fn rebuild(
    test_dir: &std::path::Path,
    symbols: &KernelSymbols,
    idle: &IdleSet,
    user_by: UserBy,
) -> Result<Profile, crate::store::StoreError> {
    let old = crate::store::prfout::read(&test_dir.join("prfout"))?;
    let cpus: Vec<u32> = old.cpus.iter().map(|c| c.cpu).collect();
    let mut b = ProfileBuilder::new(symbols, &cpus, user_by);
    crate::store::samples::for_each_record(&test_dir.join("samples.gz"), |r| b.add(&r))?;
    let meta = ProfileMeta {
        test: old.test,
        command: old.command,
        event: old.event,
        period_sec: old.period_sec,
        wall_sec: old.wall_sec,
    };
    let mut p = b.finish(meta, idle, old.warnings);
    for (new, old) in p.cpus.iter_mut().zip(&old.cpus) {
        new.procstat_busy_sec = old.procstat_busy_sec;
    }
    Ok(p)
}

/// (pid, tid, command name) of every thread now running, from /proc.
pub fn current_comms() -> Vec<(u32, u32, String)> {
    let mut out = Vec::new();
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return out;
    };
    for p in procs.flatten() {
        let Some(pid) = p.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
            continue;
        };
        for t in tasks.flatten() {
            let Some(tid) = t.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
                continue;
            };
            if let Ok(c) = std::fs::read_to_string(t.path().join("comm")) {
                out.push((pid, tid, c.trim_end().to_string()));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use upcmp_parsers::samples::Sample;

    fn sample(cpu: u32, tid: u32, mode: Mode, pc: u64) -> Record {
        Record::Sample(Sample {
            time_ns: 0,
            cpu,
            pid: tid,
            tid,
            mode,
            pc,
            callchain: vec![],
        })
    }

    #[test]
    fn counts_per_function_and_cpu() {
        let syms = KernelSymbols::from_kallsyms_text(
            "ffffffff81000000 T _text\nffffffff81000000 T alpha\nffffffff81000100 T beta\nffffffff81000200 T _etext\n\
             ffffffffc0000000 t gamma\t[ext4]\n",
            "test",
        )
        .unwrap();
        let mut b = ProfileBuilder::new(&syms, &[0, 2], UserBy::Comm);
        for r in [
            Record::Comm {
                pid: 10,
                tid: 10,
                comm: "bash".into(),
            },
            sample(0, 1, Mode::Kernel, 0xffffffff81000010),
            sample(2, 1, Mode::Kernel, 0xffffffff81000010),
            sample(2, 1, Mode::Kernel, 0xffffffff81000180),
            sample(0, 10, Mode::User, 0x400000),
            Record::Fork {
                pid: 11,
                ppid: 10,
                tid: 11,
                ptid: 10,
            },
            sample(2, 11, Mode::User, 0x400000),
            Record::Comm {
                pid: 11,
                tid: 11,
                comm: "ls".into(),
            },
            sample(2, 11, Mode::User, 0x400000),
            sample(0, 1, Mode::Kernel, 0xffffffffc0000004),
            sample(7, 1, Mode::Kernel, 0xffffffff81000010),
            Record::Lost { cpu: 2, count: 5 },
            Record::Throttle { cpu: 0 },
        ] {
            b.add(&r);
        }
        let meta = ProfileMeta {
            test: "t".into(),
            command: None,
            event: "cpu-clock".into(),
            period_sec: 0.001,
            wall_sec: 1.0,
        };
        let p = b.finish(meta, &IdleSet::new(vec![]), vec![]);
        let get = |n: &str| {
            p.functions
                .iter()
                .find(|f| f.name == n)
                .unwrap_or_else(|| panic!("{n}"))
        };
        assert_eq!(get("alpha").per_cpu, [1, 1]);
        assert_eq!(get("beta").per_cpu, [0, 1]);
        assert_eq!(
            get("user:bash").per_cpu,
            [1, 1],
            "the forked child is bash until it execs"
        );
        assert_eq!(get("user:ls").per_cpu, [0, 1]);
        assert_eq!(get("gamma").module, "ext4");
        assert_eq!(p.functions[0].name, "alpha", "largest first, then by name");
        assert_eq!(p.cpus[0].samples, 3);
        assert_eq!(p.cpus[1].samples, 4);
        assert_eq!(p.cpus[1].lost, 5);
        assert_eq!(p.cpus[0].throttled, 1);
        assert!(p.warnings[0].starts_with("1 samples came from CPUs"));
        // What the builder makes, the prfout writer and parser keep.
        let mut buf = Vec::new();
        crate::store::prfout::write(&p, &mut buf).unwrap();
        assert_eq!(
            crate::store::prfout::parse(std::str::from_utf8(&buf).unwrap(), "x").unwrap(),
            p
        );
    }
}
