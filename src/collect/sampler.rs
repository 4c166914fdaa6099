//! One perf_event sampler per online CPU, system-wide, kernel and user mode.

use crate::host::{is_root, perf_event_paranoid};
use crate::model::mode::{mode_of_misc, Record};
use perf_event::data::KSymbolFlags;
use perf_event::data::Record as PerfRecord;
use perf_event::events::{Hardware, Software};
use perf_event::{Builder, SampleFlag, Sampler};
use std::io;
use upcmp_parsers::samples::{Ksymbol, Owner, Sample};

/// A perf event uprun can sample, by the name perf gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PerfEvent {
    /// A hardware counter (the PMU's).
    Hardware(Hardware),
    /// A software event of the kernel.
    Software(Software),
}

/// The events uprun knows, under perf's names and aliases, first name first.
pub const EVENTS: &[(&str, PerfEvent)] = &[
    ("cpu-clock", PerfEvent::Software(Software::CPU_CLOCK)),
    ("task-clock", PerfEvent::Software(Software::TASK_CLOCK)),
    ("cycles", PerfEvent::Hardware(Hardware::CPU_CYCLES)),
    ("cpu-cycles", PerfEvent::Hardware(Hardware::CPU_CYCLES)),
    ("instructions", PerfEvent::Hardware(Hardware::INSTRUCTIONS)),
    ("cache-references", PerfEvent::Hardware(Hardware::CACHE_REFERENCES)),
    ("cache-misses", PerfEvent::Hardware(Hardware::CACHE_MISSES)),
    ("branches", PerfEvent::Hardware(Hardware::BRANCH_INSTRUCTIONS)),
    (
        "branch-instructions",
        PerfEvent::Hardware(Hardware::BRANCH_INSTRUCTIONS),
    ),
    ("branch-misses", PerfEvent::Hardware(Hardware::BRANCH_MISSES)),
    ("bus-cycles", PerfEvent::Hardware(Hardware::BUS_CYCLES)),
    ("ref-cycles", PerfEvent::Hardware(Hardware::REF_CPU_CYCLES)),
    (
        "stalled-cycles-frontend",
        PerfEvent::Hardware(Hardware::STALLED_CYCLES_FRONTEND),
    ),
    (
        "stalled-cycles-backend",
        PerfEvent::Hardware(Hardware::STALLED_CYCLES_BACKEND),
    ),
    ("page-faults", PerfEvent::Software(Software::PAGE_FAULTS)),
    ("faults", PerfEvent::Software(Software::PAGE_FAULTS)),
    ("minor-faults", PerfEvent::Software(Software::PAGE_FAULTS_MIN)),
    ("major-faults", PerfEvent::Software(Software::PAGE_FAULTS_MAJ)),
    ("context-switches", PerfEvent::Software(Software::CONTEXT_SWITCHES)),
    ("cs", PerfEvent::Software(Software::CONTEXT_SWITCHES)),
    ("cpu-migrations", PerfEvent::Software(Software::CPU_MIGRATIONS)),
    ("migrations", PerfEvent::Software(Software::CPU_MIGRATIONS)),
    ("alignment-faults", PerfEvent::Software(Software::ALIGNMENT_FAULTS)),
    ("emulation-faults", PerfEvent::Software(Software::EMULATION_FAULTS)),
];

impl PerfEvent {
    /// The event perf calls `name` (or one of its aliases).
    pub fn named(name: &str) -> Option<Self> {
        EVENTS.iter().find(|(n, _)| *n == name).map(|(_, e)| *e)
    }

    /// Its name, as perf prints it (the first of its names).
    pub fn name(self) -> &'static str {
        EVENTS
            .iter()
            .find(|(_, e)| *e == self)
            .map(|(n, _)| *n)
            .expect("every event is in EVENTS")
    }

    /// Whether its period is time (nanoseconds): a fixed period then makes every sample
    /// worth the same time.
    pub fn is_time(self) -> bool {
        matches!(
            self,
            PerfEvent::Software(Software::CPU_CLOCK) | PerfEvent::Software(Software::TASK_CLOCK)
        )
    }
}

/// Which event to sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EventChoice {
    /// CPU cycles where the machine counts them, else `cpu-clock`.
    #[default]
    Auto,
    /// This event (fails where the machine cannot count it).
    Event(PerfEvent),
}

impl EventChoice {
    /// `auto`, or an event perf names so; `None` for an unknown name.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "auto" => Some(EventChoice::Auto),
            n => PerfEvent::named(n).map(EventChoice::Event),
        }
    }
}

/// How to sample.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SamplerConfig {
    /// Samples per second per CPU: a fixed period for time events, the kernel's
    /// frequency mode (a period adjusted as it goes) for the others.
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
    #[error("opening the {event} sampler on CPU {cpu}: {source}{hint}")]
    Open {
        /// The event.
        event: &'static str,
        /// The CPU.
        cpu: u32,
        /// The kernel's answer.
        source: io::Error,
        /// What it may mean.
        hint: &'static str,
    },
}

/// The samplers of all CPUs.
pub struct CpuSamplers {
    samplers: Vec<(u32, Sampler)>,
    event: PerfEvent,
    /// The fixed period of a time event, in ns; `None` in frequency mode.
    period: Option<u64>,
    /// The id of the running test's cgroup: a sample whose cgroup (`PERF_SAMPLE_CGROUP`)
    /// it is is the test's, any other cgroup's is not (docs/uprun.md, "Whose time").
    test_cgroup: Option<u64>,
}

fn permission_error(cpu: u32, source: io::Error) -> SamplerError {
    SamplerError::Permission {
        cpu,
        source,
        paranoid: perf_event_paranoid(),
        root: if is_root() { "" } else { ", and you are not root" },
    }
}

/// A sampler that also records each sample's cgroup where the kernel can (Linux 5.7 on);
/// without it, a sample is attributed by its pid alone.
fn open_one(cpu: u32, cfg: &SamplerConfig, event: PerfEvent) -> io::Result<Sampler> {
    match open_with(cpu, cfg, event, true) {
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => open_with(cpu, cfg, event, false),
        r => r,
    }
}

fn open_with(cpu: u32, cfg: &SamplerConfig, event: PerfEvent, cgroup: bool) -> io::Result<Sampler> {
    let mut b = match event {
        PerfEvent::Hardware(h) => Builder::new(h),
        PerfEvent::Software(s) => Builder::new(s),
    };
    let mut flags = SampleFlag::IP | SampleFlag::TID | SampleFlag::TIME | SampleFlag::CPU | SampleFlag::PERIOD;
    if cfg.callchain {
        flags |= SampleFlag::CALLCHAIN;
    }
    if cgroup {
        flags |= SampleFlag::CGROUP;
    }
    b.one_cpu(cpu as usize)
        .any_pid()
        .include_kernel()
        .exclude_user(false)
        .sample(flags)
        .comm(true)
        .task(true)
        // BPF programs loaded and unloaded during a test, named as perf names them.
        .ksymbol(true)
        .bpf_event(true)
        .sample_id_all(true);
    match time_period(event, cfg) {
        // A time event at a fixed period: every sample worth the same time.
        Some(p) => b.sample_period(p),
        None => b.sample_frequency(cfg.frequency_hz),
    };
    b.build()?.sampled(cfg.buffer_bytes)
}

/// The fixed period (ns) a time event is sampled at.
fn time_period(event: PerfEvent, cfg: &SamplerConfig) -> Option<u64> {
    event.is_time().then(|| 1_000_000_000 / cfg.frequency_hz.max(1))
}

/// Whether an error says the machine cannot count the event (no PMU, or no such counter).
fn not_counted(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::ENOENT) | Some(libc::EOPNOTSUPP) | Some(libc::ENODEV) | Some(libc::EINVAL)
    )
}

impl CpuSamplers {
    /// Opens (disabled) one sampler per CPU of `cpus`. `auto` takes cycles where the
    /// machine counts them, else cpu-clock.
    pub fn open(cpus: &[u32], cfg: &SamplerConfig) -> Result<Self, SamplerError> {
        let cycles = PerfEvent::Hardware(Hardware::CPU_CYCLES);
        let clock = PerfEvent::Software(Software::CPU_CLOCK);
        let mut event = match cfg.event {
            EventChoice::Auto => cycles,
            EventChoice::Event(e) => e,
        };
        let mut samplers = Vec::with_capacity(cpus.len());
        for &cpu in cpus {
            let s = match open_one(cpu, cfg, event) {
                Ok(s) => s,
                Err(e) if e.raw_os_error() == Some(libc::EACCES) || e.raw_os_error() == Some(libc::EPERM) => {
                    return Err(permission_error(cpu, e));
                }
                // No hardware counter: fall back to cpu-clock.
                Err(e) if cfg.event == EventChoice::Auto && samplers.is_empty() && not_counted(&e) => {
                    event = clock;
                    open_one(cpu, cfg, clock).map_err(|source| SamplerError::Open {
                        event: clock.name(),
                        cpu,
                        source,
                        hint: "",
                    })?
                }
                Err(source) => {
                    let hint = if not_counted(&source) {
                        " (this machine cannot count that event here: no such hardware counter, or none \
                         in a VM; cpu-clock works everywhere)"
                    } else {
                        ""
                    };
                    return Err(SamplerError::Open {
                        event: event.name(),
                        cpu,
                        source,
                        hint,
                    });
                }
            };
            samplers.push((cpu, s));
        }
        Ok(CpuSamplers {
            samplers,
            event,
            period: time_period(event, cfg),
            test_cgroup: None,
        })
    }

    /// Attributes the samples drained from now on to the test whose cgroup has id `id`
    /// (`None`: no cgroup, or between tests).
    pub fn set_test_cgroup(&mut self, id: Option<u64>) {
        self.test_cgroup = id;
    }

    /// The event in use.
    pub fn event(&self) -> PerfEvent {
        self.event
    }

    /// The event in use, by perf's name.
    pub fn event_name(&self) -> &'static str {
        self.event.name()
    }

    /// The fixed period of a time event in ns; `None` for an event sampled in frequency
    /// mode, whose samples carry each their own period.
    pub fn fixed_period(&self) -> Option<u64> {
        self.period
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
        let test_cgroup = self.test_cgroup;
        let owner = |cgroup: Option<u64>| {
            let (c, t) = (cgroup?, test_cgroup?);
            Some(if c == t { Owner::Test } else { Owner::Other })
        };
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
                            period: smp.period(),
                            time_ns: smp.time().unwrap_or(0),
                            cpu: smp.cpu().unwrap_or(*cpu),
                            pid: smp.pid().unwrap_or(0),
                            tid: smp.tid().unwrap_or(0),
                            mode,
                            pc: smp.ip().unwrap_or(0),
                            callchain: smp.callchain().map(<[u64]>::to_vec).unwrap_or_default(),
                            // The kernel's own work is told apart as the records are taken
                            // in order (collect::attribution).
                            owner: owner(smp.cgroup()),
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
                    PerfRecord::KSymbol(k) => (
                        trailer_time(),
                        Record::Ksymbol(Ksymbol {
                            addr: k.addr,
                            len: k.len,
                            kind: k.ksym_type.0,
                            unregister: k.flags.contains(KSymbolFlags::UNREGISTER),
                            name: String::from_utf8_lossy(&k.name).into_owned(),
                        }),
                    ),
                    PerfRecord::BpfEvent(b) => (
                        trailer_time(),
                        Record::BpfEvent {
                            kind: b.ty.0,
                            id: b.id,
                            tag: b.tag,
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
