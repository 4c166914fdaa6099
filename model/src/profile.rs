//! A profile: samples per function and CPU, with what they stand for.

use super::idle::IdleSet;
use upcmp_parsers::prfout::{implied_weight, Prfout};

/// Module names a profile uses besides kernel modules' and user files' own names.
pub mod module {
    /// The core kernel.
    pub const KERNEL: &str = "kernel";
    /// User space as one module (live runs) or code outside any known file.
    pub const USER: &str = "user";
    /// Time in the hypervisor.
    pub const HYPERVISOR: &str = "hypervisor";
    /// Time in a guest.
    pub const GUEST: &str = "guest";
    /// A user address of a recording that no mapping covers.
    pub const UNKNOWN: &str = "unknown";
}

/// The function of a PC that no symbol covers, as perf prints it.
pub const UNKNOWN_FUNCTION: &str = "[unknown]";
/// The function of a kernel PC in code the kernel generated that no symbol names: classic
/// BPF programs (seccomp filters, `SO_ATTACH_FILTER`) compiled by the BPF JIT, ftrace and
/// kprobe trampolines (`docs/symbols.md`).
pub const JIT_FUNCTION: &str = "[jit]";
/// The note of a profile where [`JIT_FUNCTION`] has samples.
pub const JIT_NOTE: &str = "[jit] [kernel] is code in the kernel's module area that no module and no BPF \
     symbol covers: most likely classic BPF compiled by the kernel's JIT (seccomp filters of systemd \
     services and containers, SO_ATTACH_FILTER socket filters), else an ftrace or kprobe trampoline";
/// The function of a sample whose processor mode was not said.
pub const UNKNOWN_MODE_FUNCTION: &str = "[unknown mode]";
/// The function of a recorded sample that carried neither an address nor a symbol.
pub const NO_IP_FUNCTION: &str = "[no ip]";
/// User time as one function (uprun's default, as the original).
pub const USER_FUNCTION: &str = "user";
/// Hypervisor time as one function.
pub const HYPERVISOR_FUNCTION: &str = "hypervisor";
/// Guest time as one function.
pub const GUEST_FUNCTION: &str = "guest";

/// The function user time of the command `comm` counts for with `--user-by comm`.
pub fn user_function_of(comm: &str) -> String {
    format!("{USER_FUNCTION}:{comm}")
}

/// The user time of the test's processes where other commands' user time is split out
/// of [`USER_FUNCTION`] (docs/upcmp.md, "The test's time and everyone else's"). Round
/// brackets: no command's row, `user [COMM]`, can take this name.
pub const USER_TEST_FUNCTION: &str = "user (the test)";

/// The row of the user time of the command `comm` outside the test's processes, split out
/// of [`USER_FUNCTION`].
pub fn user_function_of_other(comm: &str) -> String {
    format!("{USER_FUNCTION} [{comm}]")
}

/// The user-mode samples of one command outside the test's processes, per CPU in a
/// profile's column order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OtherUserTime {
    /// The command's name.
    pub comm: String,
    /// Samples on each CPU.
    pub per_cpu: Vec<u64>,
    /// Their summed weights on each CPU.
    pub weight_per_cpu: Vec<u64>,
    /// The sum of the squares of their weights.
    pub weight_sq: f64,
}

impl Profile {
    /// Splits the one [`USER_FUNCTION`] row into the test's ([`USER_TEST_FUNCTION`]) and
    /// one row per command of `others` ([`user_function_of_other`]): the others' samples
    /// move out of it, CPU by CPU, never more than it holds, so every total is kept. A
    /// profile without that row (user time named by command, or none) is left as it is;
    /// rows left empty are dropped. Says whether it split.
    pub fn split_user_function(&mut self, others: &[OtherUserTime]) -> bool {
        let Some(at) = self
            .functions
            .iter()
            .position(|f| f.module == module::USER && f.name == USER_FUNCTION)
        else {
            return false;
        };
        let mut test = self.functions.swap_remove(at);
        test.name = USER_TEST_FUNCTION.to_string();
        for o in others {
            let mut row = FunctionSamples {
                module: module::USER.to_string(),
                name: user_function_of_other(&o.comm),
                per_cpu: vec![0; test.per_cpu.len()],
                weight_per_cpu: vec![0; test.per_cpu.len()],
                weight_sq: o.weight_sq.min(test.weight_sq),
            };
            for i in 0..test.per_cpu.len() {
                let n = o.per_cpu.get(i).copied().unwrap_or(0).min(test.per_cpu[i]);
                let w = o
                    .weight_per_cpu
                    .get(i)
                    .copied()
                    .unwrap_or(0)
                    .min(test.weight_per_cpu[i]);
                (row.per_cpu[i], row.weight_per_cpu[i]) = (n, w);
                test.per_cpu[i] -= n;
                test.weight_per_cpu[i] -= w;
            }
            test.weight_sq -= row.weight_sq;
            if row.total() > 0 {
                self.functions.push(row);
            }
        }
        if test.total() > 0 {
            self.functions.push(test);
        }
        // The one order every source uses (ProfileMeta::into_profile).
        self.functions.sort_by(|a, b| {
            b.total()
                .cmp(&a.total())
                .then_with(|| a.name.cmp(&b.name))
                .then_with(|| a.module.cmp(&b.module))
        });
        true
    }
}

/// How user-mode samples are named.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum UserBy {
    /// All user time is the one function `user`, as the original.
    #[default]
    Single,
    /// One function per command name: `user:COMM`.
    Comm,
}

/// What a profile's weights count: every sample weighs its period in this unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Unit {
    /// Nanoseconds: the time events `cpu-clock` and `task-clock`.
    #[default]
    Nanoseconds,
    /// Occurrences of the sampled event (cycles, instructions, page faults, ...).
    Events,
}

impl Unit {
    /// The unit of an event: time events count nanoseconds.
    pub fn of_event(event: &str) -> Self {
        if is_time_event(event) {
            Unit::Nanoseconds
        } else {
            Unit::Events
        }
    }

    /// The word written in a profile: `ns` or `events`.
    pub fn as_str(self) -> &'static str {
        match self {
            Unit::Nanoseconds => "ns",
            Unit::Events => "events",
        }
    }
}

/// Whether an event counts time, its period in nanoseconds.
pub fn is_time_event(event: &str) -> bool {
    matches!(event, "cpu-clock" | "task-clock")
}

/// The profile of one test (one repetition), or of one recording.
#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    /// The test's name (its directory name in the run), or the recording's file name.
    pub test: String,
    /// The command that ran, when known.
    pub command: Option<String>,
    /// Sampling event, e.g. `cpu-clock`.
    pub event: String,
    /// What the weights count.
    pub unit: Unit,
    /// What one sample stands for, in `unit`: the sampling period, or the mean of the
    /// periods where they vary (a sampling frequency).
    pub period: f64,
    /// Wall-clock duration of the sampled interval, in seconds.
    pub wall_sec: f64,
    /// Functions whose samples count as idle when the profile was made.
    pub idle_set: Vec<String>,
    /// One entry per sampled CPU, in column order.
    pub cpus: Vec<CpuTotals>,
    /// Things the collector or importer wants the reader to know.
    pub warnings: Vec<String>,
    /// Sample counts per function, one count per CPU in `cpus` order.
    pub functions: Vec<FunctionSamples>,
}

impl Profile {
    /// What one sample stands for in seconds, for a time event.
    pub fn period_sec(&self) -> Option<f64> {
        (self.unit == Unit::Nanoseconds).then_some(self.period * 1e-9)
    }

    /// Whether every weight is its count times the period (a fixed period): the weights
    /// then add nothing to the counts.
    pub fn fixed_period(&self) -> bool {
        let p = self.period;
        let implied = |n: u64| (n as f64 * p).round();
        self.functions.iter().all(|f| {
            f.per_cpu
                .iter()
                .zip(&f.weight_per_cpu)
                .all(|(&n, &w)| implied(n) == w as f64)
                && (f.weight_sq - f.total() as f64 * p * p).abs() <= 1e-9 * f.weight_sq.max(1.0)
        })
    }
}

/// Per-CPU totals of a profile.
#[derive(Debug, Clone, PartialEq)]
pub struct CpuTotals {
    /// The CPU's number.
    pub cpu: u32,
    /// Samples taken on it (all functions, idle included).
    pub samples: u64,
    /// Their summed weight (in the profile's unit).
    pub weight: u64,
    /// Samples the kernel reported lost (PERF_RECORD_LOST).
    pub lost: u64,
    /// Throttle events seen.
    pub throttled: u64,
    /// Busy time from /proc/stat over the same interval, when recorded.
    pub procstat_busy_sec: Option<f64>,
}

impl CpuTotals {
    /// A CPU with nothing counted yet.
    pub fn empty(cpu: u32) -> Self {
        CpuTotals {
            cpu,
            samples: 0,
            weight: 0,
            lost: 0,
            throttled: 0,
            procstat_busy_sec: None,
        }
    }
}

/// Samples and weights of one function.
#[derive(Debug, Clone, PartialEq)]
pub struct FunctionSamples {
    /// Module: `kernel`, `user`, a kernel module's name, or a user file's name.
    pub module: String,
    /// Function name (may contain spaces, e.g. a user command's name).
    pub name: String,
    /// Samples on each CPU, in the order of [`Profile::cpus`].
    pub per_cpu: Vec<u64>,
    /// Their summed weights on each CPU, in the profile's unit.
    pub weight_per_cpu: Vec<u64>,
    /// The sum of the squares of the samples' weights: the variance of the summed weight
    /// when samples arrive as a Poisson process (docs/formulas.md).
    pub weight_sq: f64,
}

impl FunctionSamples {
    /// Samples on all CPUs.
    pub fn total(&self) -> u64 {
        self.per_cpu.iter().sum()
    }

    /// Weight on all CPUs.
    pub fn weight(&self) -> u64 {
        self.weight_per_cpu.iter().fold(0u64, |s, &w| s.saturating_add(w))
    }
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
    /// What the weights count.
    pub unit: Unit,
    /// What one sample stands for, in `unit` (see [`Profile::period`]); `None`: the
    /// mean of the samples' periods.
    pub period: Option<f64>,
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
        let samples: u64 = cpus.iter().map(|c| c.samples).sum();
        let weight: f64 = cpus.iter().map(|c| c.weight as f64).sum();
        let period = self
            .period
            .unwrap_or(if samples > 0 { weight / samples as f64 } else { 1.0 });
        functions.sort_by(|a, b| {
            b.total()
                .cmp(&a.total())
                .then_with(|| a.name.cmp(&b.name))
                .then_with(|| a.module.cmp(&b.module))
        });
        Profile {
            test: self.test,
            command: self.command,
            event: self.event,
            unit: self.unit,
            period,
            wall_sec: self.wall_sec,
            idle_set: idle.names().to_vec(),
            cpus,
            warnings,
            functions,
        }
    }
}

impl Profile {
    /// The profile a prfout file describes: a row without weights weighs its counts times
    /// the period (version 1 files, and fixed periods).
    pub fn from_prfout(f: Prfout) -> Profile {
        let period = f.period;
        let implied = |n: u64| implied_weight(n, period).unwrap_or(u64::MAX);
        Profile {
            test: f.test,
            command: f.command,
            event: f.event,
            unit: if f.unit == "ns" {
                Unit::Nanoseconds
            } else {
                Unit::Events
            },
            period,
            wall_sec: f.wall_sec,
            idle_set: f.idle_set,
            cpus: f
                .cpus
                .into_iter()
                .map(|c| CpuTotals {
                    cpu: c.cpu,
                    samples: c.samples,
                    weight: c.weight.unwrap_or_else(|| implied(c.samples)),
                    lost: c.lost,
                    throttled: c.throttled,
                    procstat_busy_sec: c.procstat_busy_sec,
                })
                .collect(),
            warnings: f.warnings,
            functions: f
                .functions
                .into_iter()
                .map(|r| {
                    let (weight_per_cpu, weight_sq) = r.weights.unwrap_or_else(|| {
                        let n: u64 = r.per_cpu.iter().sum();
                        (
                            r.per_cpu.iter().map(|&c| implied(c)).collect(),
                            n as f64 * period * period,
                        )
                    });
                    FunctionSamples {
                        module: r.module,
                        name: r.name,
                        per_cpu: r.per_cpu,
                        weight_per_cpu,
                        weight_sq,
                    }
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(module: &str, name: &str, per_cpu: [u64; 2], period: u64) -> FunctionSamples {
        let n: u64 = per_cpu.iter().sum();
        FunctionSamples {
            module: module.into(),
            name: name.into(),
            per_cpu: per_cpu.to_vec(),
            weight_per_cpu: per_cpu.iter().map(|x| x * period).collect(),
            weight_sq: (n * period * period) as f64,
        }
    }

    fn profile(functions: Vec<FunctionSamples>) -> Profile {
        Profile {
            test: "t".into(),
            command: None,
            event: "cpu-clock".into(),
            unit: Unit::Nanoseconds,
            period: 10.0,
            wall_sec: 1.0,
            idle_set: vec![],
            cpus: vec![CpuTotals::empty(0), CpuTotals::empty(1)],
            warnings: vec![],
            functions,
        }
    }

    fn other(comm: &str, per_cpu: [u64; 2]) -> OtherUserTime {
        OtherUserTime {
            comm: comm.into(),
            per_cpu: per_cpu.to_vec(),
            weight_per_cpu: per_cpu.iter().map(|x| x * 10).collect(),
            weight_sq: (per_cpu.iter().sum::<u64>() * 100) as f64,
        }
    }

    #[test]
    fn the_user_row_is_split_by_command_keeping_every_total() {
        let mut p = profile(vec![
            row("kernel", "do_syscall_64", [5, 5], 10),
            row("user", "user", [30, 20], 10),
        ]);
        let split = p.split_user_function(&[other("make", [10, 15]), other("cc1", [0, 2])]);
        assert!(split);
        let names: Vec<(&str, Vec<u64>)> = p
            .functions
            .iter()
            .map(|f| (f.name.as_str(), f.per_cpu.clone()))
            .collect();
        assert_eq!(
            names,
            [
                ("user [make]", vec![10, 15]),
                ("user (the test)", vec![20, 3]),
                ("do_syscall_64", vec![5, 5]),
                ("user [cc1]", vec![0, 2]),
            ]
        );
        let user: u64 = p
            .functions
            .iter()
            .filter(|f| f.module == "user")
            .map(|f| f.weight())
            .sum();
        assert_eq!(user, 500, "the user time is all kept");
        let sq: f64 = p
            .functions
            .iter()
            .filter(|f| f.module == "user")
            .map(|f| f.weight_sq)
            .sum();
        assert_eq!(sq, 5000.0);
        assert!(p.functions.iter().all(|f| f.name != "user"));
    }

    #[test]
    fn a_split_takes_no_more_than_the_row_holds_and_drops_empty_rows() {
        // The others' samples on a CPU the row has fewer on (a filtered profile): capped.
        let mut p = profile(vec![row("user", "user", [3, 0], 10)]);
        assert!(p.split_user_function(&[other("make", [5, 4])]));
        assert_eq!(p.functions.len(), 1, "the test's row is empty: dropped");
        assert_eq!(
            (p.functions[0].name.as_str(), p.functions[0].per_cpu.clone()),
            ("user [make]", vec![3, 0])
        );
        // User time named by command (--user-by comm) is not split again.
        let mut p = profile(vec![row("user", "user:make", [3, 0], 10)]);
        assert!(!p.split_user_function(&[other("make", [3, 0])]));
        assert_eq!(p.functions[0].name, "user:make");
    }
}
