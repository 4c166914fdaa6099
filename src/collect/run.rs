//! `uprun`: run each test of a test list while sampling every CPU, and write the output
//! directory of `docs/format.md`.

use super::prepare;
use super::profile::{current_comms, ProfileBuilder, ProfileMeta, UserBy};
use super::sampler::{CpuSamplers, SamplerConfig, SamplerError};
use super::symbols::{find_vmlinux, running_kernel_build_id, KernelSymbols, SymbolError};
use crate::compare::IdleSet;
use crate::store::outdir::{
    check_rotatable, repetition_name, rotate_and_create, test_dir_names, RunKind, RunMarker, Status, TestStatus,
    RUN_MARKER,
};
use crate::store::samples::SamplesWriter;
use crate::store::system::{self, online_cpus, SamplingDescription};
use crate::store::{now_utc, prfout, write_atomic, StoreError};
use std::fs::File;
use std::io::{self, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::time::{Duration, Instant};
use upcmp_parsers::procstat::{parse_proc_stat, CpuStat};
use upcmp_parsers::test_list::{parse_test_list, TestLine, TestSpec};

/// The options a unixperf line gets when it has none, as the original.
pub const DEFAULT_UNIXPERF_ARGS: &[&str] = &["-loop", "200000", "-repeat", "2"];

/// The list used when there is no `./test_list` and none is given: about a minute on a
/// 2-CPU machine.
pub const DEFAULT_TEST_LIST: &str = "\
# uprun's built-in test list (used when ./test_list does not exist)
getpid -loop 12000000 -repeat 2
ezsyscalls -loop 1800000 -repeat 2
forkwait -loop 12000 -repeat 2
pipeping1 -loop 80000 -repeat 2
select16r -loop 1800000 -repeat 2
openclose -loop 1000000 -repeat 2
createunlink -loop 30000 -repeat 2
devzerowalk -loop 5000 -repeat 2
hackbench -groups 4 -msgs 100 -loop 10 -repeat 2
";

/// What uprun does.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct UprunOptions {
    /// An ELF kernel image, or `auto`.
    pub vmlinux: String,
    /// Use a vmlinux whose build-id differs from the running kernel's.
    pub force_vmlinux: bool,
    /// The output directory.
    pub outdir: PathBuf,
    /// Copies of each test at once.
    pub parallelism: u32,
    /// The test list; None: `./test_list`, or the built-in list when there is none.
    pub test_list: Option<PathBuf>,
    /// Sampler settings.
    pub sampler: SamplerConfig,
    /// Idle functions.
    pub idle: IdleSet,
    /// How user time is named.
    pub user_by: UserBy,
    /// The unixperf binary; None: next to this program, else on PATH.
    pub unixperf: Option<PathBuf>,
    /// The command line, for the marker.
    pub command_line: String,
    /// Repetitions of each test, each profiled and kept (`TEST/rK` when more than one).
    pub runs: u32,
    /// A command run (untimed, unprofiled) before each repetition.
    pub pre: Option<String>,
    /// Sync and drop the page cache before each repetition.
    pub drop_caches: bool,
    /// Scheduler features to set for the run (restored afterwards).
    pub features: Vec<String>,
    /// cpufreq governor to set for the run (restored afterwards).
    pub set_governor: Option<String>,
    /// upsrun: take call chains, and write each test's stack analysis (`prof.out`,
    /// `stacks.folded`, `flame.svg`) after its other files.
    pub stacks: bool,
    /// Also write each test's profile as folded stacks (`profile.folded`) for other tools.
    pub export_folded: bool,
}

impl UprunOptions {
    /// Options with defaults for everything but the kernel image and the output directory.
    pub fn new(vmlinux: String, outdir: PathBuf) -> Self {
        UprunOptions {
            vmlinux,
            force_vmlinux: false,
            outdir,
            parallelism: 1,
            test_list: None,
            sampler: SamplerConfig::default(),
            idle: IdleSet::linux_default(),
            user_by: UserBy::Single,
            unixperf: None,
            command_line: String::new(),
            runs: 1,
            pre: None,
            drop_caches: false,
            features: Vec::new(),
            set_governor: None,
            stacks: false,
            export_folded: false,
        }
    }
}

/// Why uprun stopped.
#[derive(Debug, thiserror::Error)]
pub enum UprunError {
    /// A file or directory problem.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The test list is malformed.
    #[error(transparent)]
    Parse(#[from] upcmp_parsers::ParseError),
    /// Kernel symbols could not be loaded.
    #[error(transparent)]
    Symbols(#[from] SymbolError),
    /// Sampling could not start.
    #[error(transparent)]
    Sampler(#[from] SamplerError),
    /// A bad argument.
    #[error("{0}")]
    Usage(String),
    /// I/O on a named path.
    #[error("{path}: {source}")]
    Io {
        /// The path.
        path: PathBuf,
        /// The error.
        source: io::Error,
    },
}

fn io_at(path: &Path) -> impl FnOnce(io::Error) -> UprunError + '_ {
    move |source| UprunError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// How the run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunOutcome {
    /// Completed or interrupted.
    pub status: Status,
    /// Tests that exited non-zero.
    pub failed: Vec<String>,
    /// Tests that ran.
    pub ran: usize,
}

/// A test of the list, ready to run.
#[derive(Debug, Clone)]
pub struct PlannedTest {
    /// Its directory name.
    pub dir: String,
    /// The line it came from.
    pub line: TestLine,
    /// The program and arguments of one copy.
    pub argv: Vec<String>,
    /// What the progress line shows in parentheses.
    pub shown_args: String,
}

/// Reads the test list: the given file, `./test_list`, or the built-in list. Returns
/// its text and a name for it.
pub fn load_test_list(given: Option<&Path>) -> Result<(String, String, bool), UprunError> {
    let path = match given {
        Some(p) => p.to_path_buf(),
        None if Path::new("test_list").exists() => PathBuf::from("test_list"),
        None => return Ok((DEFAULT_TEST_LIST.to_string(), "(built-in test list)".to_string(), true)),
    };
    let text = std::fs::read_to_string(&path).map_err(io_at(&path))?;
    Ok((text, path.display().to_string(), false))
}

/// Finds the unixperf program: next to this executable, else on PATH.
pub fn find_unixperf() -> Option<PathBuf> {
    let beside = std::env::current_exe().ok()?.parent()?.join("unixperf");
    if beside.is_file() {
        return Some(beside);
    }
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|d| Path::new(d).join("unixperf"))
        .find(|p| p.is_file())
}

/// Parses and validates the whole list before anything runs: every unixperf test must
/// exist (an unknown one is an error naming its line).
pub fn plan(text: &str, name: &str, unixperf: Option<&Path>) -> Result<Vec<PlannedTest>, UprunError> {
    let lines = parse_test_list(text, name)?;
    let dirs = test_dir_names(&lines);
    let mut out = Vec::new();
    for (line, dir) in lines.into_iter().zip(dirs) {
        let (argv, shown_args) = match &line.spec {
            TestSpec::Unixperf { test, args } => {
                if unixperf::suite::resolve(test).is_none() {
                    return Err(upcmp_parsers::ParseError {
                        file: name.to_string(),
                        line: line.line,
                        column: 1,
                        expected: "a unixperf test name (see 'unixperf -list') or 'NAME: command'".into(),
                        found: test.clone(),
                    }
                    .into());
                }
                let exe = unixperf.ok_or_else(|| {
                    UprunError::Usage(format!(
                        "{name}:{}: '{test}' is a unixperf test, but no unixperf program was found next to uprun \
                         or on PATH; build it with 'cargo build --release --workspace' or pass --unixperf PATH",
                        line.line
                    ))
                })?;
                let args: Vec<String> = if args.is_empty() {
                    DEFAULT_UNIXPERF_ARGS.iter().map(|s| s.to_string()).collect()
                } else {
                    args.clone()
                };
                let mut argv = vec![exe.display().to_string(), format!("-{test}")];
                argv.extend(args.iter().cloned());
                (argv, args.join(" "))
            }
            TestSpec::External { command, .. } => {
                (vec!["/bin/sh".into(), "-c".into(), command.clone()], command.clone())
            }
        };
        out.push(PlannedTest {
            dir,
            line,
            argv,
            shown_args,
        });
    }
    Ok(out)
}

/// Loads kernel symbols for `vmlinux` (`auto` or a path), saying where they came from.
pub fn load_symbols(vmlinux: &str, force: bool, say: &mut dyn Write) -> Result<KernelSymbols, UprunError> {
    let kallsyms = KernelSymbols::from_kallsyms_file(Path::new("/proc/kallsyms"))?;
    let elf = if vmlinux == "auto" {
        let release = system::kernel_release();
        match find_vmlinux(&release) {
            Some(p) => Some(p),
            None => {
                let _ = writeln!(
                    say,
                    "uprun: no vmlinux for {release} in the usual places; using {}",
                    kallsyms.describe()
                );
                None
            }
        }
    } else {
        let p = PathBuf::from(vmlinux);
        std::fs::File::open(&p).map_err(io_at(&p))?;
        Some(p)
    };
    match elf {
        Some(p) => {
            let syms = KernelSymbols::from_vmlinux(&p, &kallsyms, running_kernel_build_id().as_deref(), force)?;
            let _ = writeln!(say, "uprun: kernel symbols from {}", syms.describe());
            Ok(syms)
        }
        None => Ok(kallsyms),
    }
}

static INTERRUPTED: AtomicBool = AtomicBool::new(false);
static SIGNAL: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    SIGNAL.store(sig, Ordering::SeqCst);
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// Routes SIGINT and SIGTERM to a flag the run loop checks, so an interrupted run
/// stops its tests, closes its events and writes what it has.
pub fn install_signal_handlers() {
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: the handler only stores to atomics, which is async-signal-safe.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}

/// Whether a signal asked the run to stop.
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
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

fn read_proc_stat() -> Result<Vec<CpuStat>, UprunError> {
    let p = Path::new("/proc/stat");
    let text = std::fs::read_to_string(p).map_err(io_at(p))?;
    Ok(parse_proc_stat(&text, "/proc/stat")?)
}

fn clock_ticks() -> f64 {
    // SAFETY: sysconf has no memory effects.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as f64
    } else {
        100.0
    }
}

fn kill_group(child: &Child, sig: libc::c_int) {
    // Each copy leads its own process group, so its children go too.
    // SAFETY: kill has no memory effects.
    unsafe {
        libc::kill(-(child.id() as libc::pid_t), sig);
    }
}

/// What the sampled busy time and /proc/stat say per CPU, and the warnings.
fn cross_check(
    profile: &mut crate::Profile,
    idle: &IdleSet,
    before: &[CpuStat],
    after: &[CpuStat],
) -> Vec<(u32, f64, f64, [u64; 8])> {
    let hz = clock_ticks();
    let mut rows = Vec::new();
    for (k, cpu) in profile.cpus.iter_mut().enumerate() {
        let (Some(b), Some(a)) = (
            before.iter().find(|s| s.cpu == cpu.cpu),
            after.iter().find(|s| s.cpu == cpu.cpu),
        ) else {
            continue;
        };
        let mut delta = [0u64; 8];
        for (i, d) in delta.iter_mut().enumerate() {
            *d = a.ticks[i].saturating_sub(b.ticks[i]);
        }
        let busy = (a.busy().saturating_sub(b.busy())) as f64 / hz;
        cpu.procstat_busy_sec = Some(busy);
        let sampled: u64 = profile
            .functions
            .iter()
            .filter(|f| !idle.contains(&f.name))
            .map(|f| f.per_cpu[k])
            .sum();
        let sampled = sampled as f64 * profile.period_sec;
        rows.push((cpu.cpu, sampled, busy, delta));
    }
    for &(cpu, sampled, busy, _) in &rows {
        let larger = sampled.max(busy);
        // /proc/stat's busy time is itself sampled, at every tick: n ticks carry an error
        // of about sqrt(n), so a short test is only flagged beyond three of those.
        let tick_noise = 3.0 * (busy * hz).sqrt() / hz;
        if (sampled - busy).abs() > (0.05 * larger).max(tick_noise) {
            profile.warnings.push(format!(
                "cpu {cpu}: sampled busy time {sampled:.3} s differs from /proc/stat busy time {busy:.3} s by {:.1}%",
                100.0 * (sampled - busy).abs() / larger
            ));
        }
    }
    rows
}

fn write_procstat(dir: &Path, rows: &[(u32, f64, f64, [u64; 8])]) -> Result<(), StoreError> {
    let mut s = format!(
        "# Per-CPU /proc/stat deltas over the test, in ticks of 1/{} s, and busy time both ways.\n\
         # cpu user nice system idle iowait irq softirq steal | sampled-busy-sec procstat-busy-sec\n",
        clock_ticks()
    );
    for (cpu, sampled, busy, d) in rows {
        let ticks: Vec<String> = d.iter().map(u64::to_string).collect();
        s += &format!("cpu{cpu} {} | {sampled:.3} {busy:.3}\n", ticks.join(" "));
    }
    write_atomic(&dir.join("procstat"), s.as_bytes())
}

/// Feeds one drained batch to the profile and to samples.gz in time order. The ring
/// buffers are read CPU by CPU, so without sorting a thread's exec on one CPU could be
/// read after its samples on another, and its samples named after the old program.
fn take_batch(
    batch: &mut Vec<(u64, upcmp_parsers::samples::Record)>,
    builder: &mut ProfileBuilder,
    samples: &mut SamplesWriter,
    write_err: &mut Option<StoreError>,
) {
    batch.sort_by_key(|(t, _)| *t);
    for (_, r) in batch.drain(..) {
        builder.add(&r);
        if write_err.is_none() {
            if let Err(e) = samples.write(&r) {
                *write_err = Some(e);
            }
        }
    }
}

/// Runs one test: copies started, sampled until they end (or a signal), files written.
#[allow(clippy::too_many_arguments)]
fn run_test(
    t: &PlannedTest,
    dir: &Path,
    label: &str,
    opts: &UprunOptions,
    symbols: &KernelSymbols,
    samplers: &mut CpuSamplers,
    cpus: &[u32],
    out: &mut dyn Write,
) -> Result<TestStatus, UprunError> {
    std::fs::create_dir_all(dir).map_err(io_at(dir))?;
    let upout_path = dir.join("upout");
    let upout = File::create(&upout_path).map_err(io_at(&upout_path))?;

    // Preparation, untimed and unprofiled.
    if let Some(cmd) = &opts.pre {
        prepare::run_pre(cmd, &upout).map_err(UprunError::Usage)?;
    }
    if opts.drop_caches {
        prepare::drop_caches().map_err(UprunError::Usage)?;
    }
    let check = prepare::check_machine(Duration::from_millis(100));
    write_atomic(&dir.join("checks"), check.to_text().as_bytes())?;

    let started = now_utc();
    let _ = writeln!(out, "{} Running {label} ({}) test...", local_hms(), t.shown_args);

    // SAFETY: sync has no preconditions.
    unsafe { libc::sync() };
    let mut builder = ProfileBuilder::new(symbols, cpus, opts.user_by);
    let mut samples = SamplesWriter::create(&dir.join("samples.gz"))?;
    let mut write_err: Option<StoreError> = None;
    // The names of the threads already running go first, so samples.gz alone can name
    // user time by command when a profile is rebuilt.
    let mut batch: Vec<(u64, upcmp_parsers::samples::Record)> = current_comms()
        .into_iter()
        .map(|(pid, tid, comm)| (0, upcmp_parsers::samples::Record::Comm { pid, tid, comm }))
        .collect();
    take_batch(&mut batch, &mut builder, &mut samples, &mut write_err);
    samplers.drain(&mut |_, _| {});

    let before = read_proc_stat()?;
    samplers.enable().map_err(io_at(Path::new("perf_event")))?;
    let t0 = Instant::now();
    let mut children = Vec::new();
    for _ in 0..opts.parallelism.max(1) {
        let stdout = upout.try_clone().map_err(io_at(&upout_path))?;
        let stderr = upout.try_clone().map_err(io_at(&upout_path))?;
        let spawned = Command::new(&t.argv[0])
            .args(&t.argv[1..])
            .stdin(Stdio::null())
            .stdout(stdout)
            .stderr(stderr)
            .process_group(0)
            .spawn();
        match spawned {
            Ok(c) => children.push(c),
            Err(e) => {
                let _ = writeln!(&upout, "uprun: cannot start {}: {e}", t.argv[0]);
                break;
            }
        }
    }
    let mut codes: Vec<Option<i32>> = vec![None; children.len()];
    let tty = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let mut last_progress = Instant::now();
    let mut interrupt_at: Option<Instant> = None;
    loop {
        samplers.drain(&mut |t, r| batch.push((t, r)));
        take_batch(&mut batch, &mut builder, &mut samples, &mut write_err);
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
                    children.iter().for_each(|c| kill_group(c, libc::SIGTERM));
                }
                Some(at) if at.elapsed() > Duration::from_secs(3) => {
                    children.iter().for_each(|c| kill_group(c, libc::SIGKILL));
                }
                Some(_) => {}
            }
        }
        if tty && last_progress.elapsed() >= Duration::from_secs(1) {
            last_progress = Instant::now();
            eprint!("\r  {} running for {:.0} s ", t.dir, t0.elapsed().as_secs_f64());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    samplers.disable();
    let wall_sec = t0.elapsed().as_secs_f64();
    let after = read_proc_stat()?;
    samplers.drain(&mut |t, r| batch.push((t, r)));
    take_batch(&mut batch, &mut builder, &mut samples, &mut write_err);
    if tty {
        eprint!("\r{:60}\r", "");
    }
    if let Some(e) = write_err {
        return Err(e.into());
    }
    samples.finish()?;

    let meta = ProfileMeta {
        test: t.dir.clone(),
        command: Some(t.argv.join(" ")),
        event: samplers.event_name().to_string(),
        period_sec: samplers.period_sec(),
        wall_sec,
    };
    let mut profile = builder.finish(meta, &opts.idle, check.warnings());
    let rows = cross_check(&mut profile, &opts.idle, &before, &after);
    let lost: u64 = profile.cpus.iter().map(|c| c.lost).sum();
    if lost > 0 {
        profile.warnings.push(format!(
            "{lost} samples were lost (the ring buffers overflowed); see 'Lost samples'"
        ));
    }
    prfout::write_file(&profile, &dir.join("prfout"))?;
    write_procstat(dir, &rows)?;
    if opts.export_folded {
        let mut buf = Vec::new();
        crate::report::folded::write_profile(&profile, &mut buf).map_err(io_at(dir))?;
        write_atomic(&dir.join(crate::report::folded::PROFILE_FOLDED), &buf)?;
    }
    if opts.stacks {
        for w in super::upsrun::analyse_test(dir, symbols, &profile, opts)? {
            let _ = writeln!(out, "upsrun: warning: {label}: {w}");
        }
    }

    let exit_codes: Vec<i32> = codes.iter().map(|c| c.unwrap_or(-1)).collect();
    let status = if interrupt_at.is_some() {
        Status::Interrupted
    } else if exit_codes.iter().any(|&c| c != 0) || children.len() < opts.parallelism.max(1) as usize {
        Status::Failed
    } else {
        Status::Completed
    };
    let st = TestStatus {
        test: t.dir.clone(),
        command: t.argv.join(" "),
        copies: opts.parallelism.max(1),
        status,
        exit_codes,
        started,
        ended: now_utc(),
        wall_sec,
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
        wall_sec
    );
    Ok(st)
}

/// Runs the whole list. Everything that can be checked is checked before the output
/// directory is touched: the list, the kernel image, the permission to sample.
pub fn uprun(opts: &UprunOptions, out: &mut dyn Write) -> Result<RunOutcome, UprunError> {
    if opts.parallelism == 0 {
        return Err(UprunError::Usage("PARALLELISM must be at least 1".into()));
    }
    let (text, list_name, builtin) = load_test_list(opts.test_list.as_deref())?;
    let unixperf_exe = opts.unixperf.clone().or_else(find_unixperf);
    let tests = plan(&text, &list_name, unixperf_exe.as_deref())?;
    if builtin {
        let _ = writeln!(out, "uprun: no ./test_list; running the built-in list:\n{text}");
    }
    // Permission first: without it nothing else matters.
    let cpus = online_cpus();
    let mut sampler = opts.sampler.clone();
    sampler.callchain |= opts.stacks;
    let mut samplers = CpuSamplers::open(&cpus, &sampler)?;
    let symbols = load_symbols(&opts.vmlinux, opts.force_vmlinux, out)?;
    check_rotatable(&opts.outdir, RUN_MARKER)?;
    if opts.runs == 0 {
        return Err(UprunError::Usage("--runs must be at least 1".into()));
    }
    if opts.drop_caches {
        std::fs::OpenOptions::new()
            .write(true)
            .open("/proc/sys/vm/drop_caches")
            .map_err(|e| {
                UprunError::Usage(format!(
                    "--drop-caches: cannot write /proc/sys/vm/drop_caches ({e}); run as root"
                ))
            })?;
    }
    // Machine settings for the run; the guards put them back however the run ends.
    let _features = if opts.features.is_empty() {
        None
    } else {
        let r = crate::helpers::feat::set_features(&opts.features)
            .map_err(|e| UprunError::Usage(format!("--feat: {e}")))?;
        let _ = writeln!(out, "uprun: scheduler features set: {}", opts.features.join(" "));
        Some(FeatureGuard(r))
    };
    let _governor = match &opts.set_governor {
        Some(g) => Some(GovernorGuard(prepare::set_governor(g).map_err(UprunError::Usage)?)),
        None => None,
    };
    rotate_and_create(&opts.outdir, RUN_MARKER)?;

    let mut marker = RunMarker::start(opts.command_line.clone());
    marker.runs = opts.runs;
    if opts.stacks {
        marker.kind = RunKind::Upsrun;
    }
    marker.write(&opts.outdir)?;
    system::write(
        &opts.outdir,
        &SamplingDescription {
            event: samplers.event_name().to_string(),
            frequency_hz: opts.sampler.frequency_hz,
        },
    )?;
    write_atomic(&opts.outdir.join("test_list"), text.as_bytes())?;
    save_kallsyms(&opts.outdir)?;
    let _ = writeln!(
        out,
        "uprun: sampling {} CPUs with {} every {:.3} ms; output in {}",
        cpus.len(),
        samplers.event_name(),
        samplers.period_sec() * 1000.0,
        opts.outdir.display()
    );

    let mut outcome = RunOutcome {
        status: Status::Completed,
        failed: Vec::new(),
        ran: 0,
    };
    'tests: for t in &tests {
        for k in 1..=opts.runs {
            if interrupted() {
                break 'tests;
            }
            let (dir, label) = if opts.runs == 1 {
                (opts.outdir.join(&t.dir), t.dir.clone())
            } else {
                let rep = repetition_name(k as usize);
                (
                    opts.outdir.join(&t.dir).join(&rep),
                    format!("{} [{k}/{}]", t.dir, opts.runs),
                )
            };
            let st = run_test(t, &dir, &label, opts, &symbols, &mut samplers, &cpus, out)?;
            outcome.ran += 1;
            match st.status {
                Status::Failed => outcome.failed.push(label),
                Status::Interrupted => break 'tests,
                _ => {}
            }
        }
    }
    drop(samplers);
    marker.ended = Some(now_utc());
    marker.status = if interrupted() {
        Status::Interrupted
    } else {
        Status::Completed
    };
    outcome.status = marker.status;
    marker.write(&opts.outdir)?;
    Ok(outcome)
}

/// Restores scheduler features when the run ends, also on an error or a signal.
struct FeatureGuard(crate::helpers::feat::Restore);

impl Drop for FeatureGuard {
    fn drop(&mut self) {
        if let Err(e) = self.0.restore() {
            eprintln!("uprun: restoring scheduler features: {e}");
        }
    }
}

/// Restores the cpufreq governors when the run ends.
struct GovernorGuard(prepare::GovernorRestore);

impl Drop for GovernorGuard {
    fn drop(&mut self) {
        self.0.restore();
    }
}

/// Keeps the kernel's symbol table with the run (addresses change at every boot), so
/// prfout can be rebuilt from samples.gz later.
fn save_kallsyms(outdir: &Path) -> Result<(), UprunError> {
    let src = Path::new("/proc/kallsyms");
    let dst = outdir.join("kallsyms.gz");
    let mut input = File::open(src).map_err(io_at(src))?;
    let f = File::create(&dst).map_err(io_at(&dst))?;
    let mut gz = flate2::write::GzEncoder::new(f, flate2::Compression::fast());
    io::copy(&mut input, &mut gz).map_err(io_at(&dst))?;
    gz.finish().map_err(io_at(&dst))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_validates_the_whole_list_first() {
        let exe = Path::new("/usr/bin/unixperf");
        let t = plan("forkwait\nhb: echo hi\npipeping1 -loop 10\n", "tl", Some(exe)).unwrap();
        assert_eq!(
            t[0].argv,
            ["/usr/bin/unixperf", "-forkwait", "-loop", "200000", "-repeat", "2"]
        );
        assert_eq!(t[0].shown_args, "-loop 200000 -repeat 2");
        assert_eq!(t[1].argv, ["/bin/sh", "-c", "echo hi"]);
        assert_eq!(t[2].argv[2..], ["-loop", "10"]);
        let e = plan("forkwait\nforkwiat\n", "tl", Some(exe)).unwrap_err().to_string();
        assert!(e.starts_with("tl:2:1: expected a unixperf test name"), "{e}");
        let e = plan("forkwait\n", "tl", None).unwrap_err().to_string();
        assert!(e.contains("no unixperf program was found"), "{e}");
        assert!(
            plan("x: true\n", "tl", None).is_ok(),
            "external commands need no unixperf"
        );
    }

    #[test]
    fn the_built_in_list_is_valid() {
        let t = plan(DEFAULT_TEST_LIST, "builtin", Some(Path::new("unixperf"))).unwrap();
        assert!(t.len() >= 5);
    }
}
