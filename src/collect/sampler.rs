//! One perf_event sampler per online CPU, system-wide, kernel and user mode.

use crate::host::{is_root, perf_event_paranoid};
use crate::model::mode::{mode_of_misc, Record};
use perf_event::data::Record as PerfRecord;
use perf_event::events::{Hardware, Software};
use perf_event::{Builder, SampleFlag, Sampler};
use std::io;
use upcmp_parsers::samples::Sample;

/// Which event to sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EventChoice {
    /// CPU cycles where the machine counts them, else `cpu-clock`.
    #[default]
    Auto,
    /// The software `cpu-clock` timer (works everywhere, also in VMs).
    CpuClock,
    /// The hardware cycle counter (fails where there is none).
    Cycles,
}

/// How to sample.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SamplerConfig {
    /// Samples per second per CPU.
    pub frequency_hz: u64,
    /// The event.
    pub event: EventChoice,
    /// Take call chains (kernel and user, frame pointers).
    pub callchain: bool,
    /// Ring buffer bytes per CPU (rounded up to a power of two pages).
    pub buffer_bytes: usize,
}

impl Default for SamplerConfig {
    fn default() -> Self {
        SamplerConfig {
            frequency_hz: 1000,
            event: EventChoice::Auto,
            callchain: false,
            buffer_bytes: 1 << 20,
        }
    }
}

/// Why sampling could not start.
#[derive(Debug, thiserror::Error)]
pub enum SamplerError {
    /// No permission for system-wide sampling.
    #[error(
        "perf_event_open on CPU {cpu} was refused ({source}): system-wide sampling needs root or CAP_PERFMON, \
         and perf_event_paranoid is {paranoid}{root}. Run uprun as root, or lower the setting: \
         sudo sysctl kernel.perf_event_paranoid=-1"
    )]
    Permission {
        /// The CPU.
        cpu: u32,
        /// The kernel's answer.
        source: io::Error,
        /// /proc/sys/kernel/perf_event_paranoid.
        paranoid: String,
        /// ", and you are not root" where that is the case.
        root: &'static str,
    },
    /// Another failure opening or mapping an event.
    #[error("opening the {event} sampler on CPU {cpu}: {source}")]
    Open {
        /// The event.
        event: &'static str,
        /// The CPU.
        cpu: u32,
        /// The kernel's answer.
        source: io::Error,
    },
}

/// The samplers of all CPUs.
pub struct CpuSamplers {
    samplers: Vec<(u32, Sampler)>,
    event_name: &'static str,
    period_sec: f64,
}

fn permission_error(cpu: u32, source: io::Error) -> SamplerError {
    SamplerError::Permission {
        cpu,
        source,
        paranoid: perf_event_paranoid(),
        root: if is_root() { "" } else { ", and you are not root" },
    }
}

fn open_one(cpu: u32, cfg: &SamplerConfig, cycles: bool) -> io::Result<Sampler> {
    let mut b = if cycles {
        Builder::new(Hardware::CPU_CYCLES)
    } else {
        Builder::new(Software::CPU_CLOCK)
    };
    let mut flags = SampleFlag::IP | SampleFlag::TID | SampleFlag::TIME | SampleFlag::CPU | SampleFlag::PERIOD;
    if cfg.callchain {
        flags |= SampleFlag::CALLCHAIN;
    }
    b.one_cpu(cpu as usize)
        .any_pid()
        .include_kernel()
        .exclude_user(false)
        .sample(flags)
        .comm(true)
        .task(true)
        .sample_id_all(true);
    if cycles {
        b.sample_frequency(cfg.frequency_hz);
    } else {
        // cpu-clock counts nanoseconds; a fixed period makes every sample worth the same time.
        b.sample_period(1_000_000_000 / cfg.frequency_hz.max(1));
    }
    b.build()?.sampled(cfg.buffer_bytes)
}

impl CpuSamplers {
    /// Opens (disabled) one sampler per CPU of `cpus`.
    pub fn open(cpus: &[u32], cfg: &SamplerConfig) -> Result<Self, SamplerError> {
        let try_cycles = matches!(cfg.event, EventChoice::Auto | EventChoice::Cycles);
        let mut use_cycles = try_cycles;
        let mut samplers = Vec::with_capacity(cpus.len());
        for &cpu in cpus {
            let s = match open_one(cpu, cfg, use_cycles) {
                Ok(s) => s,
                Err(e) if e.raw_os_error() == Some(libc::EACCES) || e.raw_os_error() == Some(libc::EPERM) => {
                    return Err(permission_error(cpu, e));
                }
                // No hardware counter (ENOENT, EOPNOTSUPP, ENODEV): fall back to cpu-clock.
                Err(_) if use_cycles && cfg.event == EventChoice::Auto && samplers.is_empty() => {
                    use_cycles = false;
                    open_one(cpu, cfg, false).map_err(|source| SamplerError::Open {
                        event: "cpu-clock",
                        cpu,
                        source,
                    })?
                }
                Err(source) => {
                    return Err(SamplerError::Open {
                        event: if use_cycles { "cycles" } else { "cpu-clock" },
                        cpu,
                        source,
                    })
                }
            };
            samplers.push((cpu, s));
        }
        let period_sec = if use_cycles {
            1.0 / cfg.frequency_hz as f64
        } else {
            (1_000_000_000 / cfg.frequency_hz.max(1)) as f64 * 1e-9
        };
        Ok(CpuSamplers {
            samplers,
            event_name: if use_cycles { "cycles" } else { "cpu-clock" },
            period_sec,
        })
    }

    /// The event in use.
    pub fn event_name(&self) -> &'static str {
        self.event_name
    }

    /// Time one sample stands for, in seconds.
    pub fn period_sec(&self) -> f64 {
        self.period_sec
    }

    /// Starts sampling on every CPU.
    pub fn enable(&mut self) -> io::Result<()> {
        for (_, s) in &mut self.samplers {
            s.enable()?;
        }
        Ok(())
    }

    /// Stops sampling on every CPU (records already taken stay in the buffers).
    pub fn disable(&mut self) {
        for (_, s) in &mut self.samplers {
            let _ = s.disable();
        }
    }

    /// Moves every record waiting in the ring buffers to `sink`, with its time (perf
    /// clock, ns); returns how many.
    pub fn drain(&mut self, sink: &mut dyn FnMut(u64, Record)) -> usize {
        let mut n = 0;
        for (cpu, s) in &mut self.samplers {
            while let Some(rec) = s.next_record() {
                let mode = mode_of_misc(rec.misc());
                let Ok(parsed) = rec.parse_record() else { continue };
                // With sample_id_all, every other record ends in pid/tid, time, cpu
                // (24 bytes for this sample type): the time orders them among the samples.
                let trailer_time = || {
                    let bytes = rec.to_contiguous();
                    bytes
                        .len()
                        .checked_sub(16)
                        .and_then(|at| bytes.get(at..at + 8))
                        .map(|b| u64::from_ne_bytes(b.try_into().expect("8 bytes")))
                        .unwrap_or(0)
                };
                let (time, out) = match parsed {
                    PerfRecord::Sample(smp) => (
                        smp.time().unwrap_or(0),
                        Record::Sample(Sample {
                            time_ns: smp.time().unwrap_or(0),
                            cpu: smp.cpu().unwrap_or(*cpu),
                            pid: smp.pid().unwrap_or(0),
                            tid: smp.tid().unwrap_or(0),
                            mode,
                            pc: smp.ip().unwrap_or(0),
                            callchain: smp.callchain().map(<[u64]>::to_vec).unwrap_or_default(),
                        }),
                    ),
                    PerfRecord::Lost(l) => (
                        trailer_time(),
                        Record::Lost {
                            cpu: *cpu,
                            count: l.lost,
                        },
                    ),
                    PerfRecord::Throttle(_) => (trailer_time(), Record::Throttle { cpu: *cpu }),
                    PerfRecord::Comm(c) => (
                        trailer_time(),
                        Record::Comm {
                            pid: c.pid,
                            tid: c.tid,
                            comm: String::from_utf8_lossy(&c.comm).into_owned(),
                        },
                    ),
                    PerfRecord::Fork(f) => (
                        trailer_time(),
                        Record::Fork {
                            pid: f.pid,
                            ppid: f.ppid,
                            tid: f.tid,
                            ptid: f.ptid,
                        },
                    ),
                    _ => continue,
                };
                sink(time, out);
                n += 1;
            }
        }
        n
    }
}

impl Drop for CpuSamplers {
    fn drop(&mut self) {
        // Closing the file descriptors ends the events; disabling first stops them at once.
        self.disable();
    }
}
