//! Running one test of a list while every CPU is sampled, and writing its files into the
//! store: `upout`, `checks`, `samples.gz`, `prfout`, `procstat`, `status` (and
//! `profile.folded` when asked for). The run as a whole is the application's (uprun, upsrun).

use super::group::TestGroup;
use super::plan::PlannedTest;
use super::prepare::{run_pre, PreError};
use super::sampler::CpuSamplers;
use super::signals::interrupted;
use crate::host::check::check_machine;
use crate::host::tuning::{drop_caches, TuningError};
use crate::host::{clock_ticks, current_comms};
use crate::model::mode::Record;
use crate::model::profile::Unit;
use crate::model::{IdleSet, Profile, ProfileMeta, RecordProfiler, UserBy};
use crate::store::outdir::{Status, TestStatus};
use crate::store::procstat::{self, ProcstatRow};
use crate::store::samples::SamplesWriter;
use crate::store::{folded, now_utc, prfout, write_atomic, StoreError};
use crate::symbols::KernelSymbols;
use std::fs::File;
use std::io::{self, Write};
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
        let larger = sampled.max(busy);
        // /proc/stat's busy time is itself sampled, at every tick: n ticks carry an error
        // of about sqrt(n), so a short test is only flagged beyond three of those.
        let tick_noise = 3.0 * (busy * hz).sqrt() / hz;
        if (sampled - busy).abs() > (0.05 * larger).max(tick_noise) {
            profile.warnings.push(format!(
                "cpu {}: sampled busy time {sampled:.3} s differs from /proc/stat busy time {busy:.3} s by {:.1}%",
                r.cpu,
                100.0 * (sampled - busy).abs() / larger
            ));
        }
    }
    rows
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
}

impl Recorder<'_> {
    fn take_batch(&mut self) {
        self.batch.sort_by_key(|(t, _)| *t);
        for (_, r) in self.batch.drain(..) {
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
                let _ = writeln!(&*upout, "uprun: cannot start {}: {e}", t.argv[0]);
                break;
            }
        }
    }
    Ok(children)
}

/// Samples until every copy has ended (a signal ends the test's whole group: SIGTERM,
/// then SIGKILL after 3 s), draining the buffers every 20 ms. The wall time runs from
/// `t0`, when sampling was enabled, to when it is disabled.
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
            eprint!("\r  {dir_name} running for {:.0} s ", t0.elapsed().as_secs_f64());
        }
        std::thread::sleep(Duration::from_millis(20));
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

/// Runs the test `t` into `dir` (created here): prepared, started, sampled until its
/// copies end or a signal comes, and its files written. `label` names it on `out`.
pub fn run_test(
    t: &PlannedTest,
    dir: &Path,
    label: &str,
    ctx: &TestContext,
    samplers: &mut CpuSamplers,
    out: &mut dyn Write,
) -> Result<TestRecord, RunError> {
    std::fs::create_dir_all(dir).map_err(io_at(dir))?;
    let upout_path = dir.join(crate::store::run::UPOUT_FILE);
    let upout = File::create(&upout_path).map_err(io_at(&upout_path))?;

    // Everything the test (and its preparation) starts, ended when it ends.
    let group = TestGroup::new(ctx.child_umask);
    // Preparation, untimed and unprofiled.
    if let Some(cmd) = ctx.pre {
        run_pre(cmd, &upout, &group)?;
    }
    if ctx.drop_caches {
        drop_caches()?;
    }
    let check = check_machine(Duration::from_millis(100));
    write_atomic(&dir.join("checks"), check.to_text().as_bytes())?;

    let started = now_utc();
    let _ = writeln!(out, "{} Running {label} ({}) test...", local_hms(), t.shown_args);

    // SAFETY: sync has no preconditions.
    unsafe { libc::sync() };
    let mut rec = Recorder {
        profile: RecordProfiler::new(ctx.symbols, ctx.cpus, ctx.user_by, samplers.fixed_period().unwrap_or(1)),
        samples: SamplesWriter::create(&dir.join("samples.gz"))?,
        batch: Vec::new(),
        write_error: None,
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
    // The wall time is the sampled window's: starting the copies (slow on a loaded
    // machine) is sampled too, so it must be inside Elapsed, or Idle goes negative.
    let t0 = Instant::now();
    samplers.enable().map_err(io_at(Path::new("perf_event")))?;
    let children = spawn_copies(t, ctx.copies, &upout, &upout_path, &group)?;
    let ended = sample_until_done(t0, children, ctx.copies, &t.dir, &group, &mut rec, samplers);
    let after = read_proc_stat()?;
    let mut warnings = check.warnings();
    let survivors = group.end();
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
    if let Some(e) = rec.write_error {
        return Err(e.into());
    }
    rec.samples.finish()?;

    let meta = ProfileMeta {
        test: t.dir.clone(),
        command: Some(t.argv.join(" ")),
        event: samplers.event_name().to_string(),
        unit: Unit::of_event(samplers.event_name()),
        period: samplers.fixed_period().map(|p| p as f64),
        wall_sec: ended.wall_sec,
    };
    let profile = write_profile(dir, rec.profile, meta, ctx, warnings, &before, &after)?;
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
        let _ = writeln!(out, "uprun: warning: {label}: {w}");
    }
    let _ = writeln!(
        out,
        "{} {} {} after {:.3} s",
        local_hms(),
        label,
        st.status.as_str(),
        ended.wall_sec
    );
    Ok(TestRecord { status: st, profile })
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
