//! `uprun` and `upsrun`: run each test of a test list while sampling every CPU, and write
//! the output directory of `docs/format.md` (upsrun adds each test's stack analysis).

use crate::analyse::stacks::{analyse_test, AnalyseError};
use crate::collect::counting::CpuCounters;
use crate::collect::group::reap_orphans;
use crate::collect::plan::{find_unixperf, plan, PlanError, PlannedTest, TestList};
use crate::collect::run::{run_test, RunError, TestContext};
use crate::collect::sampler::{CpuSamplers, SamplerConfig, SamplerError};
use crate::collect::signals::interrupted;
use crate::collect::{load_kernel_symbols, KernelImage, PROC_KALLSYMS};
use crate::fsio::Umask;
use crate::host::check::CheckWindow;
use crate::host::sched_features::{set_features, FeatError, Restore};
use crate::host::tuning::{check_drop_caches, set_governor, GovernorRestore, TuningError};
use crate::host::{online_cpus, system};
use crate::model::{IdleSet, Shown, UserBy};
use crate::store::outdir::{
    check_not_foreign, check_rotatable, claim_dir, repetition_name, rotate_and_create, Claim, RunKind, RunMarker,
    Status, RUN_MARKER,
};
use crate::store::{now_utc, write_atomic, StoreError};
use crate::symbols::{read_kallsyms_text, KernelSymbols, SymbolError};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use crate::collect::signals::install_signal_handlers;

/// What uprun does.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct UprunOptions {
    /// Where kernel symbols come from.
    pub vmlinux: KernelImage,
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
    /// Let every user read the run (directories 0755, files 0644). By default a run is
    /// private to its writer (0700 and 0600, as perf writes perf.data): its raw samples and
    /// kernel symbol table give away the kernel's addresses (`docs/security.md`).
    pub share: bool,
    /// Write OUTDIR even when its parent directory may be written by every user and has no
    /// sticky bit.
    pub allow_shared_parent: bool,
    /// Move aside an existing OUTDIR (or an older generation) owned by another user.
    pub allow_foreign_run: bool,
    /// The most of each test's output (`upout`) kept, in bytes: more keeps its head and
    /// tail with a note of what was cut.
    pub max_output: u64,
    /// Record what the kernel counted over each test (`TEST/counters`: /proc counters and
    /// counting perf events on every CPU).
    pub counters: bool,
    /// Add the completed run to this dataset (`--export DATASET`, docs/dataset.md); needs
    /// the `parquet` feature.
    pub export_to: Option<PathBuf>,
    /// `KEY=VALUE` labels of the exported run (`--label`).
    pub export_labels: Vec<(String, String)>,
}

impl UprunOptions {
    /// Options with defaults for everything but the kernel image and the output directory.
    pub fn new(vmlinux: KernelImage, outdir: PathBuf) -> Self {
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
            share: false,
            allow_shared_parent: false,
            allow_foreign_run: false,
            max_output: crate::collect::run::DEFAULT_MAX_OUTPUT,
            counters: true,
            export_to: None,
            export_labels: Vec::new(),
        }
    }
}

/// Why uprun stopped.
#[derive(Debug, thiserror::Error)]
pub enum UprunError {
    /// An argument of the wrong kind (a directory given as the kernel image), with what
    /// to do.
    #[error("{0}")]
    Arguments(String),
    /// A file or directory problem.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The test list cannot run.
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// Kernel symbols could not be loaded.
    #[error(transparent)]
    Symbols(#[from] SymbolError),
    /// Sampling could not start.
    #[error(transparent)]
    Sampler(#[from] SamplerError),
    /// A test could not be run or recorded.
    #[error(transparent)]
    Run(#[from] RunError),
    /// A test's stack analysis failed.
    #[error(transparent)]
    Analyse(#[from] AnalyseError),
    /// A machine setting could not be changed.
    #[error(transparent)]
    Tuning(#[from] TuningError),
    /// Scheduler features could not be set.
    #[error(transparent)]
    Features(#[from] FeatError),
    /// The counting events could not be opened.
    #[error("opening the counting perf events: {0}")]
    Counting(io::Error),
    /// The run is complete, but adding it to the dataset failed.
    #[error("{0}")]
    Export(String),
    /// A count that must be at least one.
    #[error("{what} must be at least 1")]
    Zero {
        /// What was zero.
        what: &'static str,
    },
    /// The run's kernel symbol table could not be kept.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: io::Error,
    },
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

/// Restores scheduler features when the run ends, also on an error or a signal; a
/// failure is said in the voice of the command run (`uprun` or `upsrun`).
struct FeatureGuard(Restore, &'static str);

impl Drop for FeatureGuard {
    fn drop(&mut self) {
        if let Err(e) = self.0.restore() {
            eprintln!("{}", restore_failed(self.1, &e));
        }
    }
}

/// The message of a failed restore of the scheduler features.
fn restore_failed(tool: &str, e: &dyn std::fmt::Display) -> String {
    format!("{tool}: restoring scheduler features: {e}")
}

/// Restores the cpufreq governors when the run ends.
struct GovernorGuard(GovernorRestore);

impl Drop for GovernorGuard {
    fn drop(&mut self) {
        self.0.restore();
    }
}

/// The run's copy of the kernel's symbol table (`kallsyms.gz`; addresses change at every
/// boot, so prfout can be rebuilt from samples.gz later), compressed on a thread of its
/// own from the text the symbols were loaded from, while uprun goes on preparing.
struct KallsymsCopy(std::thread::JoinHandle<Vec<u8>>);

impl KallsymsCopy {
    fn compress(text: Arc<String>) -> Result<Self, UprunError> {
        std::thread::Builder::new()
            .name("kallsyms.gz".into())
            .spawn(move || {
                let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
                // Writing into memory cannot fail.
                let _ = gz.write_all(text.as_bytes());
                gz.finish().unwrap_or_default()
            })
            .map(KallsymsCopy)
            .map_err(|source| UprunError::Io {
                path: PathBuf::from(KALLSYMS_GZ),
                source,
            })
    }

    /// Writes `outdir/kallsyms.gz` once compressed.
    fn save(self, outdir: &Path) -> Result<(), UprunError> {
        let gz = self.0.join().map_err(|_| UprunError::Io {
            path: PathBuf::from(KALLSYMS_GZ),
            source: io::Error::other("compressing the kernel's symbol table failed"),
        })?;
        write_atomic(&outdir.join(KALLSYMS_GZ), &gz)?;
        Ok(())
    }
}

/// The run's copy of /proc/kallsyms.
const KALLSYMS_GZ: &str = "kallsyms.gz";

/// Everything checked before the output directory is touched: the options, the list,
/// the permission to sample, the kernel image, the directory's ownership and lock.
struct Prepared {
    claim: Claim,
    list: TestList,
    tests: Vec<PlannedTest>,
    cpus: Vec<u32>,
    samplers: CpuSamplers,
    /// The counting events, unless the run records no counters.
    counters: Option<CpuCounters>,
    symbols: KernelSymbols,
    kallsyms: Option<KallsymsCopy>,
    /// The sync begun during the preparation; it ends before the first test starts.
    early_sync: Option<std::thread::JoinHandle<()>>,
}

/// The command the user ran: upsrun takes stacks.
fn tool_name(opts: &UprunOptions) -> &'static str {
    if opts.stacks {
        "upsrun"
    } else {
        "uprun"
    }
}

fn prepare(opts: &UprunOptions, out: &mut dyn Write) -> Result<Prepared, UprunError> {
    let vmlinux = match &opts.vmlinux {
        KernelImage::Path(p) => Some(p.as_path()),
        KernelImage::Auto => None,
    };
    let tool = tool_name(opts);
    super::inputs::check_uprun_arguments(tool, vmlinux, &opts.outdir).map_err(UprunError::Arguments)?;
    if opts.parallelism == 0 {
        return Err(UprunError::Zero {
            what: "the number of copies (PARALLELISM)",
        });
    }
    if opts.runs == 0 {
        return Err(UprunError::Zero {
            what: "the number of repetitions",
        });
    }
    let claim = claim_dir(&opts.outdir, tool, opts.allow_shared_parent)?;
    check_not_foreign(&claim.path, opts.allow_foreign_run)?;
    let list = TestList::load(opts.test_list.as_deref())?;
    let unixperf = opts.unixperf.clone().or_else(find_unixperf);
    let tests = plan(&list, unixperf.as_deref())?;
    if list.builtin {
        let _ = writeln!(out, "uprun: no ./test_list; running the built-in list:\n{}", list.text);
    }
    // Permission first: without it nothing else matters.
    let cpus = online_cpus();
    let mut sampler = opts.sampler.clone();
    sampler.callchain |= opts.stacks;
    let samplers = CpuSamplers::open(&cpus, &sampler)?;
    let counters = if opts.counters {
        Some(CpuCounters::open(&cpus).map_err(UprunError::Counting)?)
    } else {
        None
    };
    // What is dirty now (other writers' data) starts going to disk beside the rest of
    // the preparation, so the sync before the first test has less to wait for. Not
    // earlier: a process whose thread is in sync cannot exit, and a mistyped command
    // line would wait for the disk.
    let early_sync = std::thread::Builder::new()
        .name("sync".into())
        .spawn(|| {
            // SAFETY: sync has no preconditions.
            unsafe { libc::sync() }
        })
        .ok();
    // /proc/kallsyms is read once (the kernel formats its 5 MB as it is read): its
    // symbols are loaded from the text while a thread compresses the run's copy of it.
    let kallsyms = Arc::new(read_kallsyms_text(Path::new(PROC_KALLSYMS))?);
    let copy = KallsymsCopy::compress(Arc::clone(&kallsyms))?;
    let symbols = load_kernel_symbols(&opts.vmlinux, opts.force_vmlinux, &kallsyms, out)?;
    drop(kallsyms);
    check_rotatable(&claim.path, RUN_MARKER)?;
    if opts.drop_caches {
        check_drop_caches()?;
    }
    Ok(Prepared {
        claim,
        list,
        tests,
        cpus,
        samplers,
        counters,
        symbols,
        kallsyms: Some(copy),
        early_sync,
    })
}

/// Creates the output directory with its marker; the marker is written first, so a
/// failure after it can mark the run failed.
fn create_outdir(opts: &UprunOptions, outdir: &Path, out: &mut dyn Write) -> Result<RunMarker, UprunError> {
    let mode = if opts.share { 0o755 } else { 0o700 };
    let moved = rotate_and_create(outdir, RUN_MARKER, mode)?;
    let mut marker = RunMarker::start(opts.command_line.clone());
    marker.runs = opts.runs;
    if opts.stacks {
        marker.kind = RunKind::Upsrun;
    }
    if let Err(e) = marker.write(outdir) {
        // A full disk: a directory without its marker would block this name until removed
        // by hand. It is empty (a failed write leaves no temporary file), so it goes, and
        // the earlier runs move back to their names.
        if std::fs::remove_dir(outdir).is_ok() {
            for m in &moved {
                let _ = crate::fsio::rename_noreplace(&m.to, &m.from);
            }
        }
        return Err(e.into());
    }
    for m in moved {
        let _ = writeln!(
            out,
            "uprun: kept the earlier run: moved {} to {}",
            m.from.display(),
            m.to.display()
        );
    }
    Ok(marker)
}

/// Writes the run's `system`, `test_list` and `kallsyms.gz`.
fn describe_run(opts: &UprunOptions, p: &mut Prepared) -> Result<(), UprunError> {
    let outdir = p.claim.path.as_path();
    let mut facts = system::describe(now_utc());
    facts.push(("sampling-event", p.samplers.event_name().to_string()));
    facts.push(("sampling-frequency-hz", opts.sampler.frequency_hz.to_string()));
    if let Some(c) = &p.counters {
        facts.push(("counted-events", c.counted().join(" ")));
    }
    facts.push(("tool-version", format!("upcmp {}", crate::TOOL_VERSION)));
    // Where upcmp --annotate finds the core kernel's code and lines.
    if let Some(image) = p.symbols.image() {
        let image = std::fs::canonicalize(image).unwrap_or_else(|_| image.into());
        facts.push((crate::store::system::VMLINUX_KEY, image.display().to_string()));
    }
    crate::store::system::write(outdir, &facts)?;
    let release = crate::host::uname().release;
    crate::store::settings::write(outdir, &crate::host::settings::kernel_settings(&release))?;
    write_atomic(&outdir.join("test_list"), p.list.text.as_bytes())?;
    if let Some(copy) = p.kallsyms.take() {
        copy.save(outdir)?;
    }
    Ok(())
}

/// Runs the whole list. Everything that can be checked is checked before the output
/// directory is touched: the list, the kernel image, the permission to sample.
pub fn uprun(opts: &UprunOptions, out: &mut dyn Write) -> Result<RunOutcome, UprunError> {
    if !opts.stacks {
        return run_in_voice(opts, out);
    }
    let mut voiced = Voiced { out, line: Vec::new() };
    let r = run_in_voice(opts, &mut voiced);
    let _ = voiced.flush();
    r
}

/// upsrun's output: the lines that the run (and the collector under it) begin with
/// `uprun: ` begin with `upsrun: `, so that each line names the command the user ran.
struct Voiced<'a> {
    out: &'a mut dyn Write,
    /// The line begun and not yet ended.
    line: Vec<u8>,
}

impl Voiced<'_> {
    fn emit(&mut self, line: &[u8]) -> std::io::Result<()> {
        match line.strip_prefix(b"uprun: ") {
            Some(rest) => {
                self.out.write_all(b"upsrun: ")?;
                self.out.write_all(rest)
            }
            None => self.out.write_all(line),
        }
    }
}

impl Write for Voiced<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.line.extend_from_slice(buf);
        while let Some(end) = self.line.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.line.drain(..=end).collect();
            self.emit(&line)?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        let rest = std::mem::take(&mut self.line);
        self.emit(&rest)?;
        self.out.flush()
    }
}

fn run_in_voice(opts: &UprunOptions, out: &mut dyn Write) -> Result<RunOutcome, UprunError> {
    // The look at the machine before the first test begins now: its wait (it measures
    // what else runs) passes while uprun prepares, which it does not count.
    let machine_check = CheckWindow::begin();
    if opts.export_to.is_some() && !cfg!(feature = "parquet") {
        return Err(UprunError::Arguments(
            "--export: this build has no dataset (built without the parquet feature): rebuild with \
             cargo install --features parquet"
                .into(),
        ));
    }
    let mut p = prepare(opts, out)?;
    for line in reap_orphans() {
        let _ = writeln!(out, "uprun: {line}");
    }
    // Machine settings for the run; the guards put them back however the run ends.
    let _features = if opts.features.is_empty() {
        None
    } else {
        let r = set_features(&opts.features)?;
        let _ = writeln!(out, "uprun: scheduler features set: {}", opts.features.join(" "));
        Some(FeatureGuard(r, tool_name(opts)))
    };
    let _governor = match &opts.set_governor {
        Some(g) => Some(GovernorGuard(set_governor(g)?)),
        None => None,
    };
    // The run's files are private (or, with --share, readable by all) whatever the
    // user's umask; the tests themselves get the user's.
    let umask = Umask::set(if opts.share { 0o022 } else { 0o077 });
    let outdir = p.claim.path.clone();
    let mut marker = create_outdir(opts, &outdir, out)?;
    let result = run_tests(opts, &mut p, umask.previous(), machine_check, out);
    drop(p.samplers);
    drop(p.counters);
    let outcome = match result {
        Ok(o) => o,
        Err(e) => {
            // A full disk, a file that cannot be written: the run says so, with the reason,
            // instead of staying marked running.
            marker.fail(&e.to_string());
            match marker.write(&outdir) {
                Ok(()) => {
                    let _ = writeln!(out, "uprun: {} is marked failed", outdir.display());
                }
                Err(w) => {
                    let _ = writeln!(out, "uprun: could not mark {} failed: {w}", outdir.display());
                }
            }
            return Err(e);
        }
    };
    marker.ended = Some(now_utc());
    marker.status = outcome.status;
    marker.write(&outdir)?;
    export_run(opts, &outdir, &outcome, out)?;
    Ok(outcome)
}

/// `--export DATASET`: adds the completed run to the dataset (an interrupted one is not).
#[cfg(feature = "parquet")]
fn export_run(opts: &UprunOptions, outdir: &Path, outcome: &RunOutcome, out: &mut dyn Write) -> Result<(), UprunError> {
    let Some(dataset) = &opts.export_to else {
        return Ok(());
    };
    if outcome.status != Status::Completed {
        let _ = writeln!(
            out,
            "uprun: the run is not complete: not exported to {}",
            dataset.display()
        );
        return Ok(());
    }
    let o = crate::dataset::ExportOptions {
        labels: opts.export_labels.clone(),
        // The one --allow-world-writable-parent of the command covers both outputs.
        allow_shared_parent: opts.allow_shared_parent,
    };
    let done = super::dataset::export_runs(&[outdir.to_path_buf()], dataset, &o).map_err(|e| {
        UprunError::Export(format!(
            "the run is complete in {}, but exporting it to {} failed: {e}",
            outdir.display(),
            dataset.display()
        ))
    })?;
    for s in done {
        let _ = writeln!(
            out,
            "uprun: exported to {} as run {} ({} tests, {} bytes)",
            dataset.display(),
            s.run_id,
            s.tests,
            s.bytes
        );
    }
    Ok(())
}

/// Without the `parquet` feature, `--export` is refused before the run begins.
#[cfg(not(feature = "parquet"))]
fn export_run(_: &UprunOptions, _: &Path, _: &RunOutcome, _: &mut dyn Write) -> Result<(), UprunError> {
    Ok(())
}

/// Describes the run and runs every test of the list (each repetition), until the end or
/// a signal.
fn run_tests(
    opts: &UprunOptions,
    p: &mut Prepared,
    child_umask: u32,
    machine_check: CheckWindow,
    out: &mut dyn Write,
) -> Result<RunOutcome, UprunError> {
    let outdir = p.claim.path.clone();
    describe_run(opts, p)?;
    // No writeback of uprun's own making goes on during a test.
    if let Some(h) = p.early_sync.take() {
        let _ = h.join();
    }
    let every = match p.samplers.fixed_period() {
        Some(ns) => format!("every {:.3} ms", ns as f64 * 1e-6),
        None => format!(
            "{} times a second (the kernel adjusts the period)",
            opts.sampler.frequency_hz
        ),
    };
    let _ = writeln!(
        out,
        "uprun: sampling {} CPUs with {} {every}; output in {}",
        p.cpus.len(),
        p.samplers.event_name(),
        outdir.display()
    );

    let mut ctx = TestContext {
        symbols: &p.symbols,
        cpus: &p.cpus,
        idle: &opts.idle,
        user_by: opts.user_by,
        copies: opts.parallelism,
        pre: opts.pre.as_deref(),
        drop_caches: opts.drop_caches,
        export_folded: opts.export_folded,
        child_umask,
        machine_check: Some(machine_check),
        max_output: opts.max_output,
        tool: tool_name(opts),
    };
    let mut outcome = RunOutcome {
        status: Status::Completed,
        failed: Vec::new(),
        ran: 0,
    };
    'tests: for t in &p.tests {
        for k in 1..=opts.runs {
            if interrupted() {
                break 'tests;
            }
            let (dir, label) = if opts.runs == 1 {
                (outdir.join(&t.dir), t.dir.clone())
            } else {
                let rep = repetition_name(k as usize);
                (outdir.join(&t.dir).join(&rep), format!("{} [{k}/{}]", t.dir, opts.runs))
            };
            let rec = run_test(t, &dir, &label, &mut ctx, &mut p.samplers, p.counters.as_mut(), out)?;
            if opts.stacks {
                let run = outdir.display().to_string();
                for w in analyse_test(&dir, &p.symbols, &rec.profile, &run, opts.user_by)? {
                    let _ = writeln!(out, "upsrun: warning: {}: {}", Shown(&label), Shown(&w));
                }
            }
            outcome.ran += 1;
            match rec.status.status {
                Status::Failed => outcome.failed.push(label),
                Status::Interrupted => break 'tests,
                _ => {}
            }
        }
    }
    outcome.status = if interrupted() {
        Status::Interrupted
    } else {
        Status::Completed
    };
    Ok(outcome)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_restore_message_names_the_command_run() {
        let mut opts = UprunOptions::new(KernelImage::Auto, PathBuf::from("out"));
        assert!(restore_failed(tool_name(&opts), &"EPERM").starts_with("uprun: restoring"));
        opts.stacks = true;
        let m = restore_failed(tool_name(&opts), &"EPERM");
        assert_eq!(m, "upsrun: restoring scheduler features: EPERM");
    }
}
