//! Counting perf events on every CPU, system-wide, over each test's window: the software
//! events every kernel counts and the hardware ones where the PMU counts them (an event
//! the machine cannot count is recorded as absent, never as zero).

use super::sampler::PerfEvent;
use perf_event::events::{Hardware, Software};
use perf_event::{Builder, Counter};
use std::io;
use upcmp_parsers::counters::CounterValue;

/// The events counted, under perf's names.
pub const COUNTED: &[(&str, PerfEvent)] = &[
    ("context-switches", PerfEvent::Software(Software::CONTEXT_SWITCHES)),
    ("cpu-migrations", PerfEvent::Software(Software::CPU_MIGRATIONS)),
    ("page-faults", PerfEvent::Software(Software::PAGE_FAULTS)),
    ("minor-faults", PerfEvent::Software(Software::PAGE_FAULTS_MIN)),
    ("major-faults", PerfEvent::Software(Software::PAGE_FAULTS_MAJ)),
    ("cycles", PerfEvent::Hardware(Hardware::CPU_CYCLES)),
    ("instructions", PerfEvent::Hardware(Hardware::INSTRUCTIONS)),
    ("branch-misses", PerfEvent::Hardware(Hardware::BRANCH_MISSES)),
    ("cache-misses", PerfEvent::Hardware(Hardware::CACHE_MISSES)),
];

/// One event on every CPU, or absent.
struct Event {
    name: &'static str,
    /// (cpu, counter) for each CPU; empty when the machine does not count the event.
    counters: Vec<(u32, Counter)>,
}

/// The counting events of a run, opened once and read around each test.
pub struct CpuCounters {
    events: Vec<Event>,
}

/// Whether the kernel says it cannot count an event here (no PMU, no such counter).
fn not_counted(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::ENOENT) | Some(libc::EOPNOTSUPP) | Some(libc::ENODEV) | Some(libc::EINVAL)
    )
}

fn open_one(event: PerfEvent, cpu: u32) -> io::Result<Counter> {
    let mut b = match event {
        PerfEvent::Hardware(h) => Builder::new(h),
        PerfEvent::Software(s) => Builder::new(s),
    };
    b.one_cpu(cpu as usize).any_pid().include_kernel().exclude_user(false);
    b.build()
}

impl CpuCounters {
    /// Opens (disabled) each event of [`COUNTED`] on each CPU of `cpus`. An event that
    /// the machine cannot count on some CPU is absent; any other failure (permission) is
    /// an error.
    pub fn open(cpus: &[u32]) -> io::Result<Self> {
        let mut events = Vec::new();
        for &(name, event) in COUNTED {
            let mut counters = Vec::with_capacity(cpus.len());
            for &cpu in cpus {
                match open_one(event, cpu) {
                    Ok(c) => counters.push((cpu, c)),
                    Err(e) if not_counted(&e) => {
                        counters.clear();
                        break;
                    }
                    Err(e) => return Err(io::Error::new(e.kind(), format!("counting {name} on CPU {cpu}: {e}"))),
                }
            }
            events.push(Event { name, counters });
        }
        Ok(CpuCounters { events })
    }

    /// The names of the events this machine counts.
    pub fn counted(&self) -> Vec<&'static str> {
        self.events
            .iter()
            .filter(|e| !e.counters.is_empty())
            .map(|e| e.name)
            .collect()
    }

    /// Sets every counter to zero and starts it.
    pub fn start(&mut self) -> io::Result<()> {
        for (_, c) in self.events.iter_mut().flat_map(|e| e.counters.iter_mut()) {
            c.reset()?;
            c.enable()?;
        }
        Ok(())
    }

    /// Stops every counter.
    pub fn stop(&mut self) {
        for (_, c) in self.events.iter_mut().flat_map(|e| e.counters.iter_mut()) {
            let _ = c.disable();
        }
    }

    /// The counts since [`start`](Self::start): `perf.NAME` (all CPUs) and
    /// `perf.NAME.cpuN`, or `perf.NAME` absent. A hardware counter the kernel could not
    /// keep on the PMU all the time (multiplexed) is scaled by its enabled over running
    /// time, as perf stat does.
    pub fn read(&mut self) -> io::Result<Vec<(String, CounterValue)>> {
        let mut out = Vec::new();
        for e in &mut self.events {
            if e.counters.is_empty() {
                out.push((format!("perf.{}", e.name), CounterValue::Absent));
                continue;
            }
            let mut per_cpu = Vec::with_capacity(e.counters.len());
            for (cpu, c) in &mut e.counters {
                let t = c.read_count_and_time()?;
                let count = if t.time_running > 0 && t.time_running < t.time_enabled {
                    (u128::from(t.count) * u128::from(t.time_enabled) / u128::from(t.time_running)) as u64
                } else {
                    t.count
                };
                per_cpu.push((*cpu, count));
            }
            let total: u64 = per_cpu.iter().map(|(_, c)| c).sum();
            out.push((format!("perf.{}", e.name), CounterValue::Delta(total as i64)));
            for (cpu, c) in per_cpu {
                out.push((format!("perf.{}.cpu{cpu}", e.name), CounterValue::Delta(c as i64)));
            }
        }
        Ok(out)
    }
}

impl Drop for CpuCounters {
    fn drop(&mut self) {
        self.stop();
    }
}
