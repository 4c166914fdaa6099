//! upcmp's dataset commands (`upcmp export`, `upcmp history`, `upcmp DATASET --side ...`),
//! parsed apart from the two-run comparison.

use clap::Parser;
use std::path::PathBuf;
use std::process::ExitCode;

/// Add runs to a dataset of Parquet files (docs/dataset.md): one file per run, test and
/// table, hive-partitioned by test, kernel and host. Exporting a run again replaces it.
#[derive(Parser, Debug)]
#[command(name = "upcmp export", version)]
pub struct ExportArgs {
    /// uprun output directories.
    #[arg(required = true)]
    pub runs: Vec<PathBuf>,
    /// The dataset's directory (created if missing).
    #[arg(long = "to", value_name = "DATASET")]
    pub to: PathBuf,
    /// KEY=VALUE labels given to every run exported (commit=..., patch=...).
    #[arg(long = "label", value_name = "KEY=VALUE")]
    pub labels: Vec<String>,
    /// Write into DATASET even when its directory may be written by every user.
    #[arg(long)]
    pub allow_world_writable_parent: bool,
}

/// Runs `upcmp export` on `args` (the command line after `export`).
#[cfg(feature = "parquet")]
pub fn export(args: Vec<std::ffi::OsString>) -> anyhow::Result<ExitCode> {
    use crate::dataset::export::parse_label;
    let a = ExportArgs::parse_from(args);
    let opts = crate::dataset::ExportOptions {
        labels: a.labels.iter().map(|l| parse_label(l)).collect::<Result<_, _>>()?,
        allow_shared_parent: a.allow_world_writable_parent,
    };
    for (run, s) in a
        .runs
        .iter()
        .zip(crate::app::dataset::export_runs(&a.runs, &a.to, &opts)?)
    {
        eprintln!(
            "upcmp: {} exported as run {} ({} tests, {} files, {} bytes)",
            crate::model::escaped(&run.display().to_string()),
            s.run_id,
            s.tests,
            s.files,
            s.bytes
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Without the `parquet` feature there is no dataset.
#[cfg(not(feature = "parquet"))]
pub fn export(_: Vec<std::ffi::OsString>) -> anyhow::Result<ExitCode> {
    anyhow::bail!("this upcmp was built without the parquet feature: rebuild with cargo install --features parquet")
}

/// Compare two groups of a dataset's runs (docs/dataset.md, "Group comparisons"): every
/// run a side selects is a repetition of it, and runs are paired by host.
#[derive(Parser, Debug)]
#[command(
    name = "upcmp DATASET --side",
    version,
    after_help = "Examples:\n  upcmp ds --side kernel=6.1 --side kernel=6.2 61vs62\n  upcmp ds --side commit=abc,test=getpid --side commit=def,test=getpid res"
)]
pub struct GroupArgs {
    /// The dataset's directory (written by upcmp export).
    pub dataset: PathBuf,
    /// Where results, results.html, results.csv and results.json go.
    pub results_dir: PathBuf,
    /// A side, given twice (the base, then the change): KEY=VALUE selectors, comma-separated,
    /// that each of its runs matches (a label, kernel, host, test or a key of its system
    /// description), e.g. --side kernel=6.1 --side kernel=6.2.
    #[arg(long = "side", value_name = "KEY=VALUE,...", required = true, num_args = 1)]
    pub sides: Vec<String>,
    /// List a function when its time is at least this % of its side's CPU time (default 0.5).
    #[arg(long = "cutoff", value_name = "PCT", value_parser = super::options::percent)]
    pub cutoff: Option<f64>,
    /// List only the functions whose change is beyond the noise.
    #[arg(long)]
    pub hide_noise: bool,
    /// One row per symbol: do not fold compiler clones (the dataset keeps them folded).
    #[arg(long)]
    pub keep_clones: bool,
    /// List every counter in System Activity.
    #[arg(long)]
    pub all_counters: bool,
    /// Exit 1 when a benchmark of side 2 is worse than side 1's by more than PCT percent
    /// and the change is significant (as upcmp --fail-if-worse).
    #[arg(long, value_name = "PCT", value_parser = super::options::limit_percent)]
    pub fail_if_worse: Option<f64>,
    /// Do not print the report; only say where it was written.
    #[arg(long, short)]
    pub quiet: bool,
    /// Do not write RESULTS_DIR/results.html.
    #[arg(long)]
    pub no_html: bool,
    /// Write RESULTS_DIR even when its directory may be written by every user.
    #[arg(long)]
    pub allow_world_writable_parent: bool,
    /// Move aside an existing RESULTS_DIR owned by another user.
    #[arg(long)]
    pub allow_foreign_run: bool,
}

/// Runs `upcmp DATASET --side ... RESULTS_DIR` on `args` (the whole command line).
#[cfg(feature = "parquet")]
pub fn group(args: Vec<std::ffi::OsString>) -> anyhow::Result<ExitCode> {
    use crate::app::group::{group_compare, GroupOptions};
    use crate::app::upcmp::{after_writing, AfterOptions};
    use crate::dataset::export::parse_label;
    let a = GroupArgs::parse_from(args);
    let [s1, s2] = a.sides.as_slice() else {
        anyhow::bail!("give --side twice, the base then the change (e.g. --side kernel=6.1 --side kernel=6.2)");
    };
    let side = |s: &str| s.split(',').map(parse_label).collect::<Result<Vec<_>, _>>();
    let mut compare = crate::compare::CompareOptions::new(super::options::resolve_cutoff(None, a.cutoff)?, None);
    compare.hide_noise = a.hide_noise;
    compare.keep_clones = a.keep_clones;
    compare.all_counters = a.all_counters;
    let opts = GroupOptions {
        dataset: a.dataset,
        sides: [side(s1)?, side(s2)?],
        results_dir: a.results_dir,
        compare,
        allow_shared_parent: a.allow_world_writable_parent,
        allow_foreign_run: a.allow_foreign_run,
        html: !a.no_html,
    };
    let out = group_compare(&opts)?;
    if !a.quiet {
        use std::io::Write;
        std::io::stdout().write_all(&out.report)?;
    }
    Ok(ExitCode::from(after_writing(
        &out,
        &AfterOptions::new(!a.no_html, false, a.fail_if_worse),
    )))
}

/// Without the `parquet` feature there is no dataset.
#[cfg(not(feature = "parquet"))]
pub fn group(_: Vec<std::ffi::OsString>) -> anyhow::Result<ExitCode> {
    anyhow::bail!("this upcmp was built without the parquet feature: rebuild with cargo install --features parquet")
}

/// Whether `argv` is a group comparison (`upcmp DATASET --side ...`).
pub fn is_group(argv: &[std::ffi::OsString]) -> bool {
    let side = |a: &std::ffi::OsString| a.to_str().is_some_and(|a| a == "--side" || a.starts_with("--side="));
    argv.iter().skip(1).any(side)
}

/// The dataset command `argv` names, if any (`export`, `history`): its arguments, the
/// command name first.
pub fn dataset_command(argv: &[std::ffi::OsString]) -> Option<Vec<std::ffi::OsString>> {
    let cmd = argv.get(1)?.to_str()?;
    ["export", "history"].contains(&cmd).then(|| {
        let mut v = vec![std::ffi::OsString::from(format!("upcmp {cmd}"))];
        v.extend(argv[2..].iter().cloned());
        v
    })
}
