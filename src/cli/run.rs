//! The options uprun and upsrun share.

use crate::app::uprun::{RunOutcome, UprunError, UprunOptions};
use crate::collect::run::RunError;
use crate::collect::sampler::{EventChoice, EVENTS};
use crate::collect::KernelImage;
use crate::exit::EXIT_INTERRUPTED;
use crate::host::tuning::TuningError;
use crate::model::{IdleSet, UserBy};
use crate::store::outdir::Status;
use crate::symbols::SymbolError;
use clap::ValueEnum;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// `--user-by`: how user time is named.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum UserNaming {
    /// all user time is one function, `user`
    Single,
    /// one function per command, `user:COMM`
    Comm,
}

impl UserNaming {
    /// The model's naming.
    pub fn user_by(self) -> UserBy {
        match self {
            UserNaming::Single => UserBy::Single,
            UserNaming::Comm => UserBy::Comm,
        }
    }
}

/// The options of a run, uprun's and upsrun's.
#[derive(clap::Args, Debug)]
pub struct RunArgs {
    /// The test list to run instead of ./test_list, e.g. --test-list lists/syscalls.
    #[arg(long, value_name = "FILE")]
    pub test_list: Option<PathBuf>,
    /// Samples per second on each CPU, e.g. --freq 4000.
    #[arg(long, default_value_t = 1000, value_name = "HZ", value_parser = clap::value_parser!(u64).range(1..=100_000))]
    pub freq: u64,
    /// The sampled event: `auto` (cycles where the machine counts them, else
    /// cpu-clock), or an event by perf's name, e.g. --event cpu-clock, --event
    /// instructions, --event page-faults. Time events (cpu-clock, task-clock) are sampled
    /// at a fixed period; the others at --freq, each sample weighing its period.
    #[arg(long, default_value = "auto", value_name = "EVENT", value_parser = event_names())]
    pub event: String,
    /// Idle functions (comma-separated), replacing the Linux default set, e.g.
    /// --idle-symbols do_idle,default_idle.
    #[arg(long, value_name = "LIST")]
    pub idle_symbols: Option<String>,
    /// How to name user-mode time: `single` (one `user` line) or `comm` (one per command).
    #[arg(long, value_enum, default_value_t = UserNaming::Single)]
    pub user_by: UserNaming,
    /// Use VMLINUX even when its build-id differs from the running kernel's.
    #[arg(long)]
    pub force_vmlinux: bool,
    /// The unixperf program (default: next to this program, else on PATH).
    #[arg(long, value_name = "PATH")]
    pub unixperf: Option<PathBuf>,
    /// Run and profile each test N times, keeping each repetition (TEST/r1, TEST/r2, ...),
    /// so upcmp can tell changes from noise, e.g. --runs 5.
    #[arg(long, default_value_t = 1, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub runs: u32,
    /// A command to run before each repetition, not timed and not profiled, e.g.
    /// --pre 'rm -rf /tmp/build && cp -a src /tmp/build'.
    #[arg(long, value_name = "CMD")]
    pub pre: Option<String>,
    /// Sync and drop the page cache before each repetition (needs root).
    #[arg(long)]
    pub drop_caches: bool,
    /// Set a scheduler feature for the run and restore it afterwards (also on Ctrl-C);
    /// repeatable, e.g. --feat NO_TTWU_QUEUE.
    #[arg(long = "feat", value_name = "FEATURE")]
    pub features: Vec<String>,
    /// Set this cpufreq governor on every CPU for the run and restore the previous ones
    /// afterwards, e.g. --set-governor performance.
    #[arg(long, value_name = "GOVERNOR")]
    pub set_governor: Option<String>,
    /// Also write each test's profile as folded stacks (TEST/profile.folded, one line per
    /// function) for inferno, FlameGraph or speedscope, e.g. --export-folded (also
    /// spelled --export-perf-folded).
    #[arg(long, visible_alias = "export-perf-folded")]
    pub export_folded: bool,
    /// Let every user read the run (directories 0755, files 0644). By default a run is
    /// private (0700, files 0600, as perf writes perf.data), whatever the umask: its raw
    /// samples and kernel symbol table give away kernel addresses (docs/security.md).
    #[arg(long)]
    pub share: bool,
    /// Write OUTDIR even when its directory may be written by every user and has no sticky
    /// bit (anyone there could replace the run), e.g. a shared scratch directory you trust.
    #[arg(long)]
    pub allow_world_writable_parent: bool,
    /// Write into (upsrun --analyse) or move aside (an existing OUTDIR) a run directory
    /// owned by another user (neither root nor you). Refused by default: its owner may
    /// have placed links where the files go (docs/security.md).
    #[arg(long)]
    pub allow_foreign_run: bool,
    /// Keep at most this many MiB of each test's output (TEST/upout); a test that prints
    /// more keeps its first and last halves with a note of what was cut, and uprun warns.
    #[arg(long, value_name = "MIB", default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..=255))]
    pub max_output_mib: u64,
    /// Do not record what the kernel counted over each test (TEST/counters: /proc/vmstat,
    /// interrupts, softirqs, /proc/stat, schedstat, meminfo and counting perf events), e.g.
    /// to measure what recording them costs.
    #[arg(long)]
    pub no_counters: bool,
    /// Add the completed run to a dataset of Parquet files (docs/dataset.md), as
    /// `upcmp export OUTDIR --to DATASET` does, e.g. --export /shared/ds --label commit=3f2a1b.
    #[arg(long, value_name = "DATASET")]
    pub export: Option<PathBuf>,
    /// A KEY=VALUE label of the exported run (commit, patch, ...); repeatable; needs --export.
    #[arg(long = "label", value_name = "KEY=VALUE", value_parser = label, requires = "export")]
    pub labels: Vec<(String, String)>,
}

/// `KEY=VALUE` with a non-empty key.
fn label(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.is_empty() && !k.contains(['\n', '\0']) && !v.contains('\0') => Ok((k.into(), v.into())),
        _ => Err(format!(
            "expected KEY=VALUE with a non-empty KEY (e.g. commit=3f2a1b), got {s:?}"
        )),
    }
}

/// `auto` and every event name uprun knows, for clap's check and completions.
fn event_names() -> clap::builder::PossibleValuesParser {
    let names = std::iter::once("auto").chain(EVENTS.iter().map(|(n, _)| *n));
    clap::builder::PossibleValuesParser::new(names)
}

impl RunArgs {
    /// The library's options for `vmlinux`, `outdir` and `parallelism` with these flags.
    pub fn options(&self, vmlinux: &str, outdir: PathBuf, parallelism: u32) -> UprunOptions {
        let mut o = UprunOptions::new(KernelImage::parse(vmlinux), outdir);
        o.parallelism = parallelism;
        o.test_list = self.test_list.clone();
        o.sampler.frequency_hz = self.freq;
        o.sampler.event = EventChoice::parse(&self.event).expect("clap checks the name");
        if let Some(list) = &self.idle_symbols {
            o.idle = IdleSet::parse_list(list);
        }
        o.user_by = self.user_by.user_by();
        o.force_vmlinux = self.force_vmlinux;
        o.unixperf = self.unixperf.clone();
        o.runs = self.runs;
        o.pre = self.pre.clone();
        o.drop_caches = self.drop_caches;
        o.features = self.features.clone();
        o.set_governor = self.set_governor.clone();
        o.export_folded = self.export_folded;
        o.share = self.share;
        o.allow_shared_parent = self.allow_world_writable_parent;
        o.allow_foreign_run = self.allow_foreign_run;
        o.max_output = self.max_output_mib << 20;
        o.counters = !self.no_counters;
        o.export_to = self.export.clone();
        o.export_labels = self.labels.clone();
        o.command_line = std::env::args().collect::<Vec<_>>().join(" ");
        o
    }
}

/// The exit status of a run, said on standard error: 130 interrupted, 1 when a test
/// failed, 0 otherwise.
pub fn finish(prog: &str, outcome: &RunOutcome, outdir: &Path) -> ExitCode {
    if outcome.status == Status::Interrupted {
        eprintln!(
            "{prog}: interrupted; what ran is kept in {} (marked interrupted)",
            outdir.display()
        );
        return ExitCode::from(EXIT_INTERRUPTED);
    }
    if !outcome.failed.is_empty() {
        eprintln!(
            "{prog}: {} of {} tests exited non-zero: {} (output kept in their upout)",
            outcome.failed.len(),
            outcome.ran,
            outcome.failed.join(", ")
        );
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}

/// The error of a run, with the option that caused it named (the library's messages do
/// not know the command line).
pub fn with_option(e: UprunError) -> anyhow::Error {
    let option = match &e {
        UprunError::Features(_) => Some("--feat"),
        UprunError::Tuning(TuningError::NoCpufreq { .. }) => Some("--set-governor"),
        UprunError::Tuning(TuningError::Write { path, .. }) if path.starts_with("/sys") => Some("--set-governor"),
        UprunError::Tuning(_) | UprunError::Run(RunError::Tuning(_)) => Some("--drop-caches"),
        UprunError::Run(RunError::Pre(_)) => Some("--pre"),
        UprunError::Plan(crate::collect::plan::PlanError::NoUnixperf { .. }) => Some("--unixperf"),
        _ => None,
    };
    let forcible = matches!(
        e,
        UprunError::Symbols(SymbolError::BuildIdMismatch { .. } | SymbolError::MissingBuildId { .. })
    );
    match option {
        Some(o) => anyhow::Error::new(e).context(o),
        None if forcible => anyhow::anyhow!("{e}; pass --force-vmlinux to use it anyway"),
        None => e.into(),
    }
}
