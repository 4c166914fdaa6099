//! upcmp's dataset commands (`upcmp export`, `upcmp history`), parsed apart from the two-run comparison.

use clap::Parser;
use std::path::PathBuf;
use std::process::ExitCode;

/// Add runs to a dataset of Parquet files (docs/dataset.md): one file per run, test and
/// table, hive-partitioned by test, kernel and host. Exporting a run again replaces it.
#[derive(Parser, Debug)]
#[command(name = "upcmp export", version)]
#[cfg_attr(not(feature = "parquet"), allow(dead_code))]
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
}

/// Runs `upcmp export` on `args` (the command line after `export`).
#[cfg(feature = "parquet")]
pub fn export(args: Vec<std::ffi::OsString>) -> anyhow::Result<ExitCode> {
    use upcmp::dataset::export::parse_label;
    let a = ExportArgs::parse_from(args);
    let mut opts = upcmp::dataset::ExportOptions::default();
    opts.labels = a.labels.iter().map(|l| parse_label(l)).collect::<Result<_, _>>()?;
    for (run, s) in a
        .runs
        .iter()
        .zip(upcmp::app::dataset::export_runs(&a.runs, &a.to, &opts)?)
    {
        eprintln!(
            "upcmp: {} exported as run {} ({} tests, {} files, {} bytes)",
            upcmp::model::escaped(&run.display().to_string()),
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
