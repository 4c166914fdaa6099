//! Running one test of a list while every CPU is sampled, and writing its files into the
//! store: `upout`, `checks`, `samples.gz`, `prfout`, `procstat`, `status` (and
//! `profile.folded` when asked for). The run as a whole is the application's (uprun, upsrun).

use super::attribution::Attribution;
use super::counting::CpuCounters;
use super::group::TestGroup;
use super::plan::PlannedTest;
use super::prepare::{run_pre, PreError};
use super::sampler::CpuSamplers;
use super::signals::interrupted;
use crate::host::check::CheckWindow;
use crate::host::counters::{Snapshot, SnapshotError};
use crate::host::tuning::{drop_caches, TuningError};
use crate::host::{clock_ticks, current_comms};
use crate::model::mode::Mode;
use crate::model::mode::Record;
use crate::model::profile::Unit;
use crate::model::{IdleSet, Profile, ProfileMeta, RecordProfiler, Shown, UserBy};
use crate::store::outdir::{Status, TestStatus};
use crate::store::procstat::{self, ProcstatRow};
use crate::store::samples::SamplesWriter;
use crate::store::{folded, now_utc, prfout, write_atomic, StoreError};
use crate::symbols::{perf_map_name, perf_map_names, read_process_perf_map, KernelSymbols, PerfMaps};
use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use upcmp_parsers::procstat::{parse_proc_stat, CpuStat};

/// Why a test could not be run or recorded.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// Writing the test's files.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// I/O on a named path.
    #[error("{}: {source}", path.display())]
    Io {
        /// The path.
        path: PathBuf,
        /// The error.
        source: io::Error,
    },
    /// /proc/stat did not parse.
    #[error(transparent)]
    Parse(#[from] upcmp_parsers::ParseError),
    /// The preparation command failed.
    #[error(transparent)]
    Pre(#[from] PreError),
    /// The page cache could not be dropped.
    #[error(transparent)]
    Tuning(#[from] TuningError),
    /// The kernel's counters could not be read.
    #[error(transparent)]
    Snapshot(#[from] SnapshotError),
}

fn io_at(path: &Path) -> impl FnOnce(io::Error) -> RunError + '_ {
    move |source| RunError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// What every test of a run shares.
pub struct TestContext<'a> {
    /// Kernel symbols for the profile.
    pub symbols: &'a KernelSymbols,
    /// The CPUs sampled (the profile's columns).
    pub cpus: &'a [u32],
    /// Idle functions recorded in the profile.
    pub idle: &'a IdleSet,
    /// How user time is named.
    pub user_by: UserBy,
    /// Copies of the test at once.
    pub copies: u32,
    /// A command run (untimed, unprofiled) before the test.
    pub pre: Option<&'a str>,
    /// Sync and drop the page cache before the test.
    pub drop_caches: bool,
    /// Also write the profile as folded stacks.
    pub export_folded: bool,
    /// The umask of the tests' processes (the user's; the run's own files have another).
    pub child_umask: u32,
    /// The look at the machine before the next test when the run began it already, to
    /// overlap its wait with the run's own preparation; taken by the next test (unless a
    /// preparation command or a cache drop comes first: the look then starts after them).
    pub machine_check: Option<CheckWindow>,
    /// The most of a test's output (`upout`) kept; more keeps its head and tail.
    pub max_output: u64,
    /// The command run (`uprun` or `upsrun`), which the notes it leaves in a test's
    /// output name.
    pub tool: &'static str,
}

/// How much of a test's output is kept by default: far more than any benchmark's result
/// lines, well under what upcmp reads (`UPOUT_CAP`).
pub const DEFAULT_MAX_OUTPUT: u64 = 64 << 20;

/// The most `--max-output-mib` may give: room for the note under upcmp's `UPOUT_CAP`.
pub const MAX_OUTPUT_LIMIT: u64 = crate::store::UPOUT_CAP - (1 << 20);

/// Keeps the test's output `path` within `cap` bytes once the test has ended: a test that
/// printed more keeps its first and last `cap / 2` bytes (whole lines: where benchmarks
/// print their results) with a note saying what was cut between them, so the run stays
/// comparable. The file is replaced by a rename. Returns the warning to give.
fn bound_output(path: &Path, cap: u64, tool: &str) -> Result<Option<String>, RunError> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = crate::fsio::open_regular(path, crate::fsio::Links::Refuse).map_err(io_at(path))?;
    let len = f.metadata().map_err(io_at(path))?.len();
    let cap = cap.min(MAX_OUTPUT_LIMIT);
    if len <= cap {
        return Ok(None);
    }
    // The note (under 1 KiB) fits in the cap too.
    let half = (cap.saturating_sub(1024) / 2).max(1) as usize;
    let mut head = vec![0; half];
    f.read_exact(&mut head).map_err(io_at(path))?;
    if let Some(i) = head.iter().rposition(|&b| b == b'\n') {
        head.truncate(i + 1);
    }
    let mut tail = vec![0; half];
    f.seek(SeekFrom::Start(len - half as u64)).map_err(io_at(path))?;
    f.read_exact(&mut tail).map_err(io_at(path))?;
    let tail = match tail.iter().position(|&b| b == b'\n') {
        Some(i) if i + 1 < tail.len() => &tail[i + 1..],
        _ => &tail[..],
    };
    let cut = len - head.len() as u64 - tail.len() as u64;
    let newline = if head.ends_with(b"\n") || head.is_empty() {
        ""
    } else {
        "\n"
    };
    let note = format!(
        "{newline}[{tool}: {cut} bytes of the test's output cut here; it printed {len} bytes, of which the first {} and the last {} are kept]\n",
        head.len(),
        tail.len()
    );
    let mut w = crate::fsio::Replacement::create(path, 0o666).map_err(io_at(path))?;
    w.write_all(&head)
        .and_then(|()| w.write_all(note.as_bytes()))
        .and_then(|()| w.write_all(tail))
        .map_err(io_at(path))?;
    w.commit().map_err(io_at(path))?;
    let mib = |n: u64| n as f64 / f64::from(1 << 20);
    Ok(Some(format!(
        "it printed {:.1} MiB of output; {} keeps its first and last {:.1} MiB and a note of the \
         {:.1} MiB cut between them (raise the limit with --max-output-mib)",
        mib(len),
        path.display(),
        mib(half as u64),
        mib(cut)
    )))
}

/// What one test left: its status and profile (both also written to its directory).
#[derive(Debug, Clone)]
pub struct TestRecord {
    /// How it ended.
    pub status: TestStatus,
    /// Its profile.
    pub profile: Profile,
}

fn local_hms() -> String {
    // SAFETY: localtime_r writes only into the struct given.
    unsafe {
        let t = libc::time(std::ptr::null_mut());
        let mut tm: libc::tm = std::mem::zeroed();
        libc::localtime_r(&t, &mut tm);
        format!("{:02}:{:02}:{:02}", tm.tm_hour, tm.tm_min, tm.tm_sec)
    }
}

fn read_proc_stat() -> Result<Vec<CpuStat>, RunError> {
    let p = Path::new("/proc/stat");
    let text = std::fs::read_to_string(p).map_err(io_at(p))?;
    Ok(parse_proc_stat(&text, "/proc/stat")?)
}

/// Sets each CPU's /proc/stat busy time in `profile`, warns where the sampled busy time
/// disagrees with it, and returns the rows of the `procstat` file.
fn cross_check(profile: &mut Profile, idle: &IdleSet, before: &[CpuStat], after: &[CpuStat]) -> Vec<ProcstatRow> {
    let hz = clock_ticks();
    let mut rows = Vec::new();
    for (k, cpu) in profile.cpus.iter_mut().enumerate() {
        let (Some(b), Some(a)) = (
            before.iter().find(|s| s.cpu == cpu.cpu),
            after.iter().find(|s| s.cpu == cpu.cpu),
        ) else {
            continue;
        };
        let mut ticks = [0u64; 8];
        for (i, d) in ticks.iter_mut().enumerate() {
            *d = a.ticks[i].saturating_sub(b.ticks[i]);
        }
        let busy = (a.busy().saturating_sub(b.busy())) as f64 / hz;
        cpu.procstat_busy_sec = Some(busy);
        // The samples tell busy time only when their weights are time.
        let sampled = (profile.unit == Unit::Nanoseconds).then(|| {
            let ns: u64 = profile
                .functions
                .iter()
                .filter(|f| !idle.contains(&f.name))
                .map(|f| f.weight_per_cpu[k])
                .sum();
            ns as f64 * 1e-9
        });
        rows.push(ProcstatRow {
            cpu: cpu.cpu,
            sampled_busy_sec: sampled,
            procstat_busy_sec: busy,
            ticks,
        });
    }
    for r in &rows {
        let (Some(sampled), busy) = (r.sampled_busy_sec, r.procstat_busy_sec) else {
            continue;
        };
        if let Some(w) = procstat_disagreement(r.cpu, sampled, busy, hz) {
            profile.warnings.push(w);
        }
    }
    rows
}

/// The fewest clock ticks of busy time (of either measure) a CPU needs for the
/// /proc/stat cross-check: below, a tick's resolution alone makes the two differ by
/// 10% or more, so a short test is not checked.
pub const CROSS_CHECK_MIN_TICKS: f64 = 100.0;

/// The warning when a CPU's sampled busy time and /proc/stat's disagree beyond both 5%
/// of the larger and the error of /proc/stat's tick sampling (docs/formulas.md, "The
/// /proc/stat cross-check"), with what may cause it and what to do.
pub fn procstat_disagreement(cpu: u32, sampled: f64, busy: f64, hz: f64) -> Option<String> {
    let larger = sampled.max(busy);
    if larger * hz < CROSS_CHECK_MIN_TICKS {
        return None;
    }
    // /proc/stat's busy time is itself sampled, at every tick: n ticks carry an error
    // of about sqrt(n), so a short test is only flagged beyond three of those.
    let tick_noise = 3.0 * (busy * hz).max(1.0).sqrt() / hz;
    if (sampled - busy).abs() <= (0.05 * larger).max(tick_noise) {
        return None;
    }
    let cause = if sampled < busy {
        "samples were lost or throttled (see Lost samples), or the idle set counts as idle a function \
         that /proc/stat counts as busy"
    } else {
        "this kernel idles in a function the idle set does not name (a polling idle loop), or its tick \
         accounting misses time (nohz_full CPUs, a guest's steal time)"
    };
    Some(format!(
        "cpu {cpu}: sampled busy time {sampled:.3} s differs from /proc/stat busy time {busy:.3} s by {:.1}%; \
         likely causes: {cause}; look at the profile's functions on that CPU and give the idle functions \
         with --idle-symbols (uprun, upcmp), or lower --freq if samples were lost",
        100.0 * (sampled - busy).abs() / larger
    ))
}

/// Where a test's records go as they are drained: the profile and `samples.gz`, in time
/// order. The ring buffers are read CPU by CPU, so without sorting a thread's exec on one
/// CPU could be read after its samples on another, and its samples named after the old
/// program.
struct Recorder<'a> {
    profile: RecordProfiler<'a, KernelSymbols>,
    samples: SamplesWriter,
    batch: Vec<(u64, Record)>,
    write_error: Option<StoreError>,
    /// The processes with user samples, and the user each ran as (`None` when it ended
    /// before it was asked): whose perf maps are kept.
    user_pids: HashMap<u32, Option<u32>>,
    /// Whose each sample is.
    attribution: Attribution,
}

/// The effective uid of process `pid` (the second field of `Uid:` in its status).
fn uid_of(pid: u32) -> Option<u32> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find_map(|l| l.strip_prefix("Uid:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

impl Recorder<'_> {
    fn take_batch(&mut self) {
        self.batch.sort_by_key(|(t, _)| *t);
        for (_, mut r) in self.batch.drain(..) {
            match &mut r {
                Record::Sample(s) => self.attribution.settle(s),
                r => self.attribution.observe(r),
            }
            if let Record::Sample(s) = &r {
                if s.mode == Mode::User && s.pid != 0 && !self.user_pids.contains_key(&s.pid) {
                    self.user_pids.insert(s.pid, uid_of(s.pid));
                }
            }
            self.profile.add(&r);
            if self.write_error.is_none() {
                if let Err(e) = self.samples.write(&r) {
                    self.write_error = Some(e);
                }
            }
        }
    }

    fn drain(&mut self, samplers: &mut CpuSamplers) {
        samplers.drain(&mut |t, r| self.batch.push((t, r)));
        self.take_batch();
    }
}

/// How the copies of a test ended.
struct Ended {
    exit_codes: Vec<i32>,
    started_all: bool,
    interrupted: bool,
    wall_sec: f64,
}

/// Starts the copies of `t` in `group`, their output into `upout`.
fn spawn_copies(
    t: &PlannedTest,
    copies: u32,
    upout: &File,
    upout_path: &Path,
    group: &TestGroup,
    tool: &str,
) -> Result<Vec<Child>, RunError> {
    let mut children = Vec::new();
    for _ in 0..copies.max(1) {
        let stdout = upout.try_clone().map_err(io_at(upout_path))?;
        let stderr = upout.try_clone().map_err(io_at(upout_path))?;
        let mut cmd = Command::new(&t.argv[0]);
        // Each copy leads its own process group, away from the terminal's Ctrl-C, which
        // uprun handles.
        cmd.args(&t.argv[1..])
            .stdin(Stdio::null())
            .stdout(stdout)
            .stderr(stderr)
            .process_group(0);
        group.prepare(&mut cmd);
        let spawned = cmd.spawn();
        match spawned {
            Ok(c) => children.push(c),
            Err(e) => {
                let _ = writeln!(&*upout, "{tool}: cannot start {}: {e}", t.argv[0]);
                break;
            }
        }
    }
    Ok(children)
}

/// How often the ring buffers are drained while a test runs.
const DRAIN_EVERY: Duration = Duration::from_millis(20);

/// Wakes the sampling loop when a copy of the test ends, so a short test's window closes
/// when it ends rather than at the next drain (up to 20 ms later).
struct ExitWatch {
    /// One pidfd per copy; empty where the kernel has none (before 5.3): the loop then
    /// only sleeps.
    pidfds: Vec<OwnedFd>,
}

impl ExitWatch {
    fn new(children: &[Child]) -> Self {
        let mut pidfds = Vec::new();
        for c in children {
            // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
            let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, c.id() as libc::pid_t, 0) };
            if fd < 0 {
                return ExitWatch { pidfds: Vec::new() };
            }
            // SAFETY: fd was just returned by pidfd_open and is owned by nothing else.
            pidfds.push(unsafe { OwnedFd::from_raw_fd(fd as RawFd) });
        }
        ExitWatch { pidfds }
    }

    /// Waits at most `timeout` for a copy not yet ended (`codes[i]` None) to end.
    fn wait(&self, codes: &[Option<i32>], timeout: Duration) {
        if self.pidfds.len() != codes.len() {
            std::thread::sleep(timeout);
            return;
        }
        let mut fds: Vec<libc::pollfd> = self
            .pidfds
            .iter()
            .zip(codes)
            .filter(|(_, code)| code.is_none())
            .map(|(fd, _)| libc::pollfd {
                fd: fd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        // SAFETY: fds is a valid array of fds.len() pollfd structures for the call.
        // A signal ends the wait early (EINTR); the loop then looks at what happened.
        unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout.as_millis() as i32) };
    }
}

/// Samples until every copy has ended (a signal ends the test's whole group: SIGTERM,
/// then SIGKILL after 3 s), draining the buffers every 20 ms and when a copy ends. The
/// wall time runs from `t0`, when sampling was enabled, to when it is disabled.
fn sample_until_done(
    t0: Instant,
    mut children: Vec<Child>,
    copies: u32,
    dir_name: &str,
    group: &TestGroup,
    rec: &mut Recorder,
    samplers: &mut CpuSamplers,
) -> Ended {
    let mut codes: Vec<Option<i32>> = vec![None; children.len()];
    let exits = ExitWatch::new(&children);
    let tty = io::IsTerminal::is_terminal(&io::stderr());
    let mut last_progress = Instant::now();
    let mut interrupt_at: Option<Instant> = None;
    loop {
        rec.drain(samplers);
        for (c, code) in children.iter_mut().zip(codes.iter_mut()) {
            if code.is_none() {
                if let Ok(Some(st)) = c.try_wait() {
                    *code = Some(st.code().unwrap_or_else(|| -st.signal().unwrap_or(0)));
                }
            }
        }
        if codes.iter().all(Option::is_some) {
            break;
        }
        if interrupted() {
            match interrupt_at {
                None => {
                    interrupt_at = Some(Instant::now());
                    group.signal(libc::SIGTERM);
                }
                Some(at) if at.elapsed() > Duration::from_secs(3) => group.signal(libc::SIGKILL),
                Some(_) => {}
            }
        }
        if tty && last_progress.elapsed() >= Duration::from_secs(1) {
            last_progress = Instant::now();
            eprint!(
                "\r  {} running for {:.0} s ",
                Shown(dir_name),
                t0.elapsed().as_secs_f64()
            );
        }
        exits.wait(&codes, DRAIN_EVERY);
    }
    samplers.disable();
    let wall_sec = t0.elapsed().as_secs_f64();
    if tty {
        eprint!("\r{:60}\r", "");
    }
    Ended {
        exit_codes: codes.iter().map(|c| c.unwrap_or(-1)).collect(),
        started_all: children.len() == copies.max(1) as usize,
        interrupted: interrupt_at.is_some(),
        wall_sec,
    }
}

/// What the kernel counted over a test: the /proc counters at its start, and the
/// counting events (when the run records counters).
struct Counting<'a> {
    events: &'a mut CpuCounters,
    start: Snapshot,
    started: Instant,
}

impl<'a> Counting<'a> {
    fn start(events: Option<&'a mut CpuCounters>) -> Result<Option<Self>, RunError> {
        let Some(events) = events else { return Ok(None) };
        let start = Snapshot::take()?;
        events.start().map_err(io_at(Path::new("perf_event")))?;
        Ok(Some(Counting {
            events,
            start,
            started: Instant::now(),
        }))
    }

    /// Stops counting and writes `dir/counters`.
    fn finish(self, dir: &Path) -> Result<(), RunError> {
        self.events.stop();
        let window_sec = self.started.elapsed().as_secs_f64();
        let end = Snapshot::take()?;
        let mut all = self.start.until(&end);
        all.extend(self.events.read().map_err(io_at(Path::new("perf_event")))?);
        crate::store::counters::write(dir, window_sec, &all)?;
        Ok(())
    }
}

/// Runs the test `t` into `dir` (created here): prepared, started, sampled (and its
/// counters counted, when `counters` is given) until its copies end or a signal comes,
/// and its files written. `label` names it on `out`.
pub fn run_test(
    t: &PlannedTest,
    dir: &Path,
    label: &str,
    ctx: &mut TestContext,
    samplers: &mut CpuSamplers,
    counters: Option<&mut CpuCounters>,
    out: &mut dyn Write,
) -> Result<TestRecord, RunError> {
    std::fs::create_dir_all(dir).map_err(io_at(dir))?;
    let upout_path = dir.join(crate::store::run::UPOUT_FILE);
    // A new file in the test's new directory: created exclusively, never through a link.
    let upout = crate::fsio::create_new(&upout_path, 0o666).map_err(io_at(&upout_path))?;

    // Everything the test (and its preparation) starts, ended when it ends.
    let group = TestGroup::new(ctx.child_umask);
    // Preparation, untimed and unprofiled.
    if let Some(cmd) = ctx.pre {
        run_pre(cmd, &upout, &group)?;
    }
    if ctx.drop_caches {
        drop_caches()?;
    }
    let begun = ctx.machine_check.take();
    let window = match begun {
        Some(w) if ctx.pre.is_none() && !ctx.drop_caches => w,
        _ => CheckWindow::begin(),
    };
    // Dirty data (the run's files, other writers') is written back before the test rather
    // than during it; the sync waits on the disk beside the check's wait.
    // SAFETY: sync has no preconditions.
    let sync = || unsafe { libc::sync() };
    let syncing = std::thread::Builder::new().name("sync".into()).spawn(sync);
    if syncing.is_err() {
        sync();
    }
    let check = window.finish();
    write_atomic(&dir.join("checks"), check.to_text().as_bytes())?;

    let started = now_utc();
    let _ = writeln!(out, "{} Running {label} ({}) test...", local_hms(), t.shown_args);

    if let Ok(h) = syncing {
        let _ = h.join();
    }
    let mut rec = Recorder {
        profile: RecordProfiler::new(ctx.symbols, ctx.cpus, ctx.user_by, samplers.fixed_period().unwrap_or(1)),
        samples: SamplesWriter::create(&dir.join("samples.gz"))?,
        batch: Vec::new(),
        write_error: None,
        user_pids: HashMap::new(),
        attribution: Attribution::default(),
    };
    // The names of the threads already running go first, so samples.gz alone can name
    // user time by command when a profile is rebuilt.
    rec.batch = current_comms()
        .into_iter()
        .map(|(pid, tid, comm)| (0, Record::Comm { pid, tid, comm }))
        .collect();
    rec.take_batch();
    samplers.drain(&mut |_, _| {});

    let before = read_proc_stat()?;
    let counting = Counting::start(counters)?;
    // The wall time is the sampled window's: starting the copies (slow on a loaded
    // machine) is sampled too, so it must be inside Elapsed, or Idle goes negative.
    let t0 = Instant::now();
    samplers.set_test_cgroup(group.cgroup_id());
    samplers.enable().map_err(io_at(Path::new("perf_event")))?;
    let children = spawn_copies(t, ctx.copies, &upout, &upout_path, &group, ctx.tool)?;
    rec.attribution.add_roots(children.iter().map(Child::id));
    let ended = sample_until_done(t0, children, ctx.copies, &t.dir, &group, &mut rec, samplers);
    let after = read_proc_stat()?;
    if let Some(c) = counting {
        c.finish(dir)?;
    }
    let mut warnings = check.warnings();
    let survivors = group.end();
    // Everything of the test has ended: nothing writes its output any more.
    warnings.extend(bound_output(&upout_path, ctx.max_output, ctx.tool)?);
    if !survivors.is_empty() {
        let list: Vec<String> = survivors.iter().map(ToString::to_string).collect();
        warnings.push(format!(
            "{} process{} of the test still ran when it ended, and {} killed: {}",
            survivors.len(),
            if survivors.len() == 1 { "" } else { "es" },
            if survivors.len() == 1 { "was" } else { "were" },
            list.join(", ")
        ));
    }
    rec.drain(samplers);
    samplers.set_test_cgroup(None);
    if let Some(e) = rec.write_error {
        return Err(e.into());
    }
    rec.samples.finish()?;
    let maps = keep_perf_maps(dir, &rec.user_pids)?;

    let meta = ProfileMeta {
        test: t.dir.clone(),
        command: Some(t.argv.join(" ")),
        event: samplers.event_name().to_string(),
        unit: Unit::of_event(samplers.event_name()),
        period: samplers.fixed_period().map(|p| p as f64),
        wall_sec: ended.wall_sec,
    };
    let profiler = if maps.0.is_empty() {
        rec.profile
    } else {
        // The maps are whole only now: the samples are named again with them.
        let period = samplers.fixed_period().unwrap_or(1);
        let mut p = RecordProfiler::new(ctx.symbols, ctx.cpus, ctx.user_by, period).with_user_code(&maps);
        crate::store::samples::for_each_record(&dir.join("samples.gz"), |r| p.add(&r))?;
        p
    };
    let profile = write_profile(dir, profiler, meta, ctx, warnings, &before, &after)?;
    let status = if ended.interrupted {
        Status::Interrupted
    } else if ended.exit_codes.iter().any(|&c| c != 0) || !ended.started_all {
        Status::Failed
    } else {
        Status::Completed
    };
    let st = TestStatus {
        test: t.dir.clone(),
        command: t.argv.join(" "),
        copies: ctx.copies.max(1),
        status,
        exit_codes: ended.exit_codes,
        started,
        ended: now_utc(),
        wall_sec: ended.wall_sec,
    };
    st.write(dir)?;
    for w in &profile.warnings {
        let _ = writeln!(out, "uprun: warning: {}: {}", Shown(label), Shown(w));
    }
    let _ = writeln!(
        out,
        "{} {} {} after {:.3} s",
        local_hms(),
        label,
        st.status.as_str(),
        ended.wall_sec
    );
    if st.status == Status::Failed {
        let _ = write!(out, "{}", failure_reason(&st, &upout_path));
    }
    Ok(TestRecord { status: st, profile })
}

/// Keeps in `dir` the perf maps (`/tmp/perf-PID.map`, written by JITs) of the processes
/// sampled in user mode, before they vanish with /tmp's cleaning; returns them. A map is
/// read as [`read_process_perf_map`] allows (no link, the process's user's or root's, of
/// bounded size); a process that ended before its user was known is skipped.
fn keep_perf_maps(dir: &Path, pids: &HashMap<u32, Option<u32>>) -> Result<PerfMaps, RunError> {
    let mut maps = PerfMaps::default();
    for (&pid, &uid) in pids {
        let Some(bytes) = uid.and_then(|uid| read_process_perf_map(pid, uid)) else {
            continue;
        };
        let path = dir.join(perf_map_name(pid));
        write_atomic(&path, &bytes)?;
        let names = perf_map_names(&String::from_utf8_lossy(&bytes), &path.display().to_string());
        maps.0.insert(pid, names);
    }
    Ok(maps)
}

/// How many of the last lines of a failed test's output the terminal shows.
const FAILURE_TAIL_LINES: usize = 5;

/// Why a test failed, for the terminal: its exit codes (or that a copy did not start) and
/// the last lines of its output, where a benchmark says what went wrong. Control
/// characters of the output are escaped (`\x1b`), so the test cannot drive the terminal.
fn failure_reason(st: &TestStatus, upout: &Path) -> String {
    let codes: Vec<String> = st
        .exit_codes
        .iter()
        .map(|&c| if c < 0 { format!("signal {}", -c) } else { c.to_string() })
        .collect();
    let mut text = if codes.is_empty() {
        "  no copy of the test started\n".to_string()
    } else {
        format!("  exit status of its copies: {}\n", codes.join(", "))
    };
    let tail = upout_tail(upout, FAILURE_TAIL_LINES);
    if tail.is_empty() {
        text.push_str("  (it printed nothing)\n");
    } else {
        text.push_str(&format!("  the last lines of {}:\n", upout.display()));
        for l in tail {
            text.push_str(&format!("  | {l}\n"));
        }
    }
    text
}

/// The last `n` non-blank lines of the file at `path`, read from its last 8 KiB only.
fn upout_tail(path: &Path, n: usize) -> Vec<String> {
    use std::io::{Read, Seek, SeekFrom};
    const TAIL_BYTES: u64 = 8192;
    let Ok(mut f) = crate::fsio::open_regular(path, crate::fsio::Links::Refuse) else {
        return Vec::new();
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    if f.seek(SeekFrom::Start(len.saturating_sub(TAIL_BYTES))).is_err() {
        return Vec::new();
    }
    let mut bytes = Vec::new();
    if f.take(TAIL_BYTES).read_to_end(&mut bytes).is_err() {
        return Vec::new();
    }
    let text = String::from_utf8_lossy(&bytes);
    let mut lines: Vec<String> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| crate::model::shown::escaped(l).into_owned())
        .collect();
    lines.drain(..lines.len().saturating_sub(n));
    lines
}

/// The profile of a test that has ended, checked against /proc/stat and written with its
/// `procstat` (and `profile.folded` when asked for).
fn write_profile(
    dir: &Path,
    profiler: RecordProfiler<KernelSymbols>,
    meta: ProfileMeta,
    ctx: &TestContext,
    warnings: Vec<String>,
    before: &[CpuStat],
    after: &[CpuStat],
) -> Result<Profile, RunError> {
    let mut profile = profiler.finish(meta, ctx.idle, warnings);
    let rows = cross_check(&mut profile, ctx.idle, before, after);
    let lost: u64 = profile.cpus.iter().map(|c| c.lost).sum();
    if lost > 0 {
        profile.warnings.push(format!(
            "{lost} samples were lost (the ring buffers overflowed); see 'Lost samples'"
        ));
    }
    prfout::write_file(&profile, &dir.join(prfout::PRFOUT_FILE))?;
    procstat::write(dir, &rows, clock_ticks())?;
    if ctx.export_folded {
        let mut buf = Vec::new();
        folded::write_profile(&profile, &mut buf).map_err(io_at(dir))?;
        write_atomic(&dir.join(folded::PROFILE_FOLDED), &buf)?;
    }
    Ok(profile)
}

#[cfg(test)]
mod tests {
    use super::*;

    // A 0.021 s test at 100 Hz has 2 ticks: far too few to check, however far apart.
    #[test]
    fn short_tests_are_not_cross_checked() {
        assert_eq!(procstat_disagreement(0, 0.02, 0.0, 100.0), None);
        assert_eq!(procstat_disagreement(0, 0.99, 0.5, 100.0), None);
        // 1 s of busy time (100 ticks) is checked: 48% apart is a real disagreement.
        let w = procstat_disagreement(1, 1.92, 1.0, 100.0).expect("warned");
        assert!(
            w.starts_with("cpu 1: sampled busy time 1.920 s differs from /proc/stat busy time 1.000 s by 47.9%"),
            "{w}"
        );
        assert!(w.contains("likely causes: this kernel idles in a function"), "{w}");
        assert!(w.contains("--idle-symbols"), "{w}");
        let w = procstat_disagreement(1, 1.0, 1.92, 100.0).expect("warned");
        assert!(w.contains("likely causes: samples were lost or throttled"), "{w}");
        // Within 5%, or within three times the tick error: no warning.
        assert_eq!(procstat_disagreement(0, 10.3, 10.0, 100.0), None);
        assert_eq!(procstat_disagreement(0, 1.25, 1.0, 100.0), None);
    }

    #[test]
    fn a_failed_test_shows_the_end_of_its_output() {
        let d = tempfile::tempdir().unwrap();
        let upout = d.path().join("upout");
        let mut text = String::new();
        for i in 0..20 {
            text.push_str(&format!("line {i}\n"));
        }
        text.push_str("\nfooo: cannot open /dev/nothing\x1b[2J\n\n");
        crate::fsio::write_atomic(&upout, text.as_bytes(), 0o644).unwrap();
        let st = TestStatus {
            test: "t".into(),
            command: "fooo".into(),
            copies: 2,
            status: Status::Failed,
            exit_codes: vec![1, -9],
            started: String::new(),
            ended: String::new(),
            wall_sec: 0.021,
        };
        let r = failure_reason(&st, &upout);
        assert!(r.starts_with("  exit status of its copies: 1, signal 9\n"), "{r}");
        assert!(r.contains("  | line 16\n"), "{r}");
        assert!(!r.contains("line 15"), "{r}");
        assert!(r.ends_with("  | fooo: cannot open /dev/nothing\\x1b[2J\n"), "{r}");
        crate::fsio::write_atomic(&upout, b"", 0o644).unwrap();
        assert!(failure_reason(&st, &upout).ends_with("  (it printed nothing)\n"));
    }
}
