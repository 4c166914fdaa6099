//! What the machine looks like just before a test: what can bias a run (governor, boost,
//! SMT, other busy processes).

use super::{clock_ticks, governors, read_trim};
use crate::model::shown::Shown;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::time::{Duration, Instant};

/// What the machine looked like just before a test.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MachineCheck {
    /// `cpuN=governor` for each CPU with cpufreq.
    pub governors: Vec<String>,
    /// Turbo/boost: `on`, `off`, or None where the machine does not say.
    pub boost: Option<String>,
    /// SMT active: `1`, `0`, or None.
    pub smt_active: Option<String>,
    /// 1-minute load average.
    pub load1: f64,
    /// Other processes that used more than 10% of a CPU over the check, busiest first.
    pub busy: Vec<BusyProcess>,
}

/// A process that used a CPU beside the test.
#[derive(Debug, Clone, PartialEq)]
pub struct BusyProcess {
    /// Its process id.
    pub pid: u32,
    /// Its command name.
    pub comm: String,
    /// The share of one CPU it used over the check, in percent.
    pub cpu_pct: f64,
}

impl MachineCheck {
    /// Warnings for the terminal and prfout: a governor other than `performance`, a
    /// machine that is not quiet.
    pub fn warnings(&self) -> Vec<String> {
        let mut w = Vec::new();
        let slow: Vec<&String> = self.governors.iter().filter(|g| !g.ends_with("=performance")).collect();
        if !slow.is_empty() {
            w.push(format!(
                "cpufreq governor is not 'performance' ({}): frequency changes can look like regressions; \
                 set the performance governor for the run",
                slow.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(" ")
            ));
        }
        // The load average is recorded, not warned about: it carries the previous tests'
        // own load for minutes. Busy processes measure what runs now.
        if !self.busy.is_empty() {
            let list: Vec<String> = self
                .busy
                .iter()
                .map(|b| format!("{}({}) {:.0}%", Shown(&b.comm), b.pid, b.cpu_pct))
                .collect();
            w.push(format!("busy processes before the test: {}", list.join(", ")));
        }
        w
    }

    /// The check as `key: value` lines (the test's `checks` file).
    pub fn to_text(&self) -> String {
        let mut s = String::new();
        let none = || "none".to_string();
        let _ = writeln!(
            s,
            "cpufreq-governors: {}",
            if self.governors.is_empty() {
                "none (no cpufreq)".into()
            } else {
                self.governors.join(" ")
            }
        );
        let _ = writeln!(s, "boost: {}", self.boost.clone().unwrap_or_else(|| "unknown".into()));
        let _ = writeln!(
            s,
            "smt-active: {}",
            self.smt_active.clone().unwrap_or_else(|| "unknown".into())
        );
        let _ = writeln!(s, "load-1min: {:.2}", self.load1);
        let busy: Vec<String> = self
            .busy
            .iter()
            .map(|b| format!("{}({})={:.0}%", Shown(&b.comm), b.pid, b.cpu_pct))
            .collect();
        let _ = writeln!(
            s,
            "busy-processes: {}",
            if busy.is_empty() { none() } else { busy.join(" ") }
        );
        s
    }
}

/// Turbo/boost state from intel_pstate or the generic cpufreq boost switch.
fn boost() -> Option<String> {
    if let Some(no_turbo) = read_trim("/sys/devices/system/cpu/intel_pstate/no_turbo") {
        return Some(if no_turbo == "1" { "off" } else { "on" }.into());
    }
    read_trim("/sys/devices/system/cpu/cpufreq/boost").map(|b| if b == "1" { "on" } else { "off" }.into())
}

/// How a look measures the CPU time of the processes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CpuClock {
    /// The run time of every live thread in nanoseconds (`/proc/PID/task/TID/schedstat`,
    /// where the kernel keeps it: CONFIG_SCHED_INFO).
    ThreadRunTime,
    /// utime + stime of each process in clock ticks (`/proc/PID/stat`): 10 ms steps at
    /// the usual 100 Hz.
    Ticks,
}

impl CpuClock {
    /// The thread run times where the kernel keeps them (init has run, so a kernel that
    /// keeps none shows 0 for it), else the ticks.
    pub fn of_this_kernel() -> Self {
        let init_ran = read_trim("/proc/1/schedstat")
            .and_then(|s| s.split_whitespace().next().and_then(|n| n.parse::<u64>().ok()))
            .is_some_and(|ns| ns > 0);
        if init_ran {
            CpuClock::ThreadRunTime
        } else {
            CpuClock::Ticks
        }
    }

    /// The shortest look that tells a process using a tenth of a CPU from one that is
    /// idle: with nanoseconds, 50 ms (a tenth is 5 ms, a few scheduler ticks of error);
    /// with clock ticks, 100 ms (a tenth is one tick, and the check needs more than one).
    pub fn window(self) -> Duration {
        match self {
            CpuClock::ThreadRunTime => Duration::from_millis(50),
            CpuClock::Ticks => Duration::from_millis(100),
        }
    }
}

/// The comm and CPU time in nanoseconds of every process, by `clock`.
fn process_times(clock: CpuClock) -> HashMap<u32, (String, u64)> {
    let mut out = HashMap::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return out;
    };
    let ns_per_tick = 1e9 / clock_ticks();
    for e in dir.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            continue;
        };
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
            continue;
        };
        let comm = stat[open + 1..close].to_string();
        let ns = match clock {
            CpuClock::ThreadRunTime => {
                let Some(ns) = thread_run_time(&e.path()) else {
                    continue;
                };
                ns
            }
            CpuClock::Ticks => {
                let f: Vec<&str> = stat[close + 1..].split_whitespace().collect();
                let ticks = f.get(11).and_then(|u| u.parse::<u64>().ok()).unwrap_or(0)
                    + f.get(12).and_then(|s| s.parse::<u64>().ok()).unwrap_or(0);
                (ticks as f64 * ns_per_tick) as u64
            }
        };
        out.insert(pid, (comm, ns));
    }
    out
}

/// The run time in nanoseconds of the live threads of the process at `proc_dir`.
fn thread_run_time(proc_dir: &std::path::Path) -> Option<u64> {
    let mut ns = 0u64;
    for t in std::fs::read_dir(proc_dir.join("task")).ok()?.flatten() {
        // Line: `run-ns wait-ns timeslices`, e.g. "209785256 20843133 775".
        let Ok(s) = std::fs::read_to_string(t.path().join("schedstat")) else {
            continue;
        };
        ns += s
            .split_whitespace()
            .next()
            .and_then(|n| n.parse::<u64>().ok())
            .unwrap_or(0);
    }
    Some(ns)
}

/// A look at the machine under way: every process's CPU time when it began. It may
/// begin before this process's own preparation (which it does not count) so that the
/// wait overlaps that work.
#[derive(Debug)]
pub struct CheckWindow {
    clock: CpuClock,
    before: HashMap<u32, (String, u64)>,
    began: Instant,
}

impl CheckWindow {
    /// Begins the look, with the most precise clock of this kernel.
    pub fn begin() -> Self {
        Self::begin_with(CpuClock::of_this_kernel())
    }

    /// Begins the look with `clock`.
    pub fn begin_with(clock: CpuClock) -> Self {
        CheckWindow {
            clock,
            before: process_times(clock),
            began: Instant::now(),
        }
    }

    /// Ends the look once its clock's [`window`](CpuClock::window) has passed since it
    /// began (sleeping what is left), ignoring this process.
    pub fn finish(self) -> MachineCheck {
        let window = self.clock.window();
        self.finish_after(window)
    }

    /// Ends the look once at least `window` has passed since it began (sleeping what is
    /// left), ignoring this process; shares of a CPU are over the whole time looked.
    pub fn finish_after(self, window: Duration) -> MachineCheck {
        if let Some(rest) = window.checked_sub(self.began.elapsed()) {
            std::thread::sleep(rest);
        }
        let after = process_times(self.clock);
        let looked = self.began.elapsed().as_secs_f64();
        let me = std::process::id();
        let mut busy: Vec<BusyProcess> = after
            .iter()
            .filter(|(pid, _)| **pid != me)
            .filter_map(|(pid, (comm, t1))| {
                let t0 = self.before.get(pid).map_or(0, |(_, t)| *t);
                let pct = 100.0 * (t1.saturating_sub(t0)) as f64 * 1e-9 / looked;
                (pct > 10.0).then(|| BusyProcess {
                    pid: *pid,
                    comm: comm.clone(),
                    cpu_pct: pct,
                })
            })
            .collect();
        busy.sort_by(|a, b| b.cpu_pct.total_cmp(&a.cpu_pct));
        MachineCheck {
            governors: governors(),
            boost: boost(),
            smt_active: read_trim("/sys/devices/system/cpu/smt/active"),
            load1: read_trim("/proc/loadavg")
                .and_then(|l| l.split_whitespace().next().and_then(|v| v.parse().ok()))
                .unwrap_or(0.0),
            busy,
        }
    }
}

/// Looks at the machine for `window`, ignoring this process.
pub fn check_machine(window: Duration) -> MachineCheck {
    CheckWindow::begin().finish_after(window)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warnings_name_what_biases_a_run() {
        let c = MachineCheck {
            governors: vec!["cpu0=performance".into(), "cpu1=powersave".into()],
            boost: Some("on".into()),
            smt_active: Some("1".into()),
            load1: 1.25,
            busy: vec![BusyProcess {
                pid: 42,
                comm: "make".into(),
                cpu_pct: 95.0,
            }],
        };
        let w = c.warnings();
        assert_eq!(w.len(), 2);
        assert!(w[0].contains("cpu1=powersave") && !w[0].contains("cpu0"));
        assert!(w[1].contains("make(42) 95%"));
        let quiet = MachineCheck {
            governors: vec!["cpu0=performance".into()],
            ..Default::default()
        };
        assert!(quiet.warnings().is_empty());
        assert!(c.to_text().contains("busy-processes: make(42)=95%"));
    }

    #[test]
    fn a_busy_process_is_seen() {
        let mut child = std::process::Command::new("sh")
            .args(["-c", "while :; do :; done"])
            .spawn()
            .unwrap();
        let c = check_machine(Duration::from_millis(300));
        let _ = child.kill();
        let _ = child.wait();
        assert!(c.busy.iter().any(|b| b.pid == child.id()), "{:?}", c.busy);
    }

    /// The shortest look (50 ms with thread run times) still sees a process busy on a
    /// CPU, and does not name one that sleeps.
    #[test]
    fn the_shortest_look_sees_a_busy_process() {
        let mut busy = std::process::Command::new("sh")
            .args(["-c", "while :; do :; done"])
            .spawn()
            .unwrap();
        let mut idle = std::process::Command::new("sleep").arg("5").spawn().unwrap();
        // Both have started (and exec'd) before the look begins.
        std::thread::sleep(Duration::from_millis(50));
        for clock in [CpuClock::of_this_kernel(), CpuClock::Ticks] {
            let c = CheckWindow::begin_with(clock).finish();
            assert!(c.busy.iter().any(|b| b.pid == busy.id()), "{clock:?}: {:?}", c.busy);
            assert!(!c.busy.iter().any(|b| b.pid == idle.id()), "{clock:?}: {:?}", c.busy);
        }
        for c in [&mut busy, &mut idle] {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// uprun begins the look before its own preparation: its own work is not counted,
    /// and a process busy on a CPU beside it is still seen, its share over the whole look.
    #[test]
    fn a_look_begun_before_own_work_still_sees_a_busy_process() {
        let window = CheckWindow::begin();
        let mut child = std::process::Command::new("sh")
            .args(["-c", "while :; do :; done"])
            .spawn()
            .unwrap();
        // This process busy for 300 ms: longer than the window asked for below.
        let spin = Instant::now();
        let mut x = 0u64;
        while spin.elapsed() < Duration::from_millis(300) {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        let c = window.finish_after(Duration::from_millis(100));
        let _ = child.kill();
        let _ = child.wait();
        assert!(c.busy.iter().any(|b| b.pid == child.id()), "{:?}", c.busy);
        assert!(!c.busy.iter().any(|b| b.pid == std::process::id()), "{:?}", c.busy);
    }
}
