//! `upcmp history DATASET --test T`: a test's history with change points (docs/history.md).

use clap::Parser;
use std::path::PathBuf;
use std::process::ExitCode;

/// How `--by` orders the runs.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ByArg {
    /// Each run is a point, oldest first.
    Time,
    /// Every run of one `commit` label is a point, commits by their first run.
    Commit,
}

/// What goes to standard output.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum HistoryFormat {
    /// Each series with its change points.
    Text,
    /// One line per series and point.
    Csv,
    /// Everything, as JSON.
    Json,
}

/// A test's history from a dataset (upcmp export): each benchmark value, the CPU total and
/// the top functions' seconds (per operation where the benchmark counts them) as series in
/// run order, with change points (E-Divisive means, permutation test; docs/formulas.md).
#[derive(Parser, Debug)]
#[command(
    name = "upcmp history",
    version,
    after_help = "Examples:\n  upcmp history ds --test getpid\n  upcmp history ds --test getpid --where host=box1 --by commit --out hist\n  upcmp history ds --test getpid --fail-if-changed -q   # nightly CI"
)]
pub struct HistoryArgs {
    /// The dataset's directory.
    pub dataset: PathBuf,
    /// The test (its directory name in the runs).
    #[arg(long, value_name = "TEST")]
    pub test: String,
    /// Only runs where KEY is VALUE: test, kernel, host, or a label given at export
    /// (commit, patch, ...); repeatable, all must hold, e.g. --where host=box1.
    #[arg(long = "where", value_name = "KEY=VALUE")]
    pub conditions: Vec<String>,
    /// Order by each run's start time, or make each commit label one point.
    #[arg(long, value_enum, default_value = "time")]
    pub by: ByArg,
    /// How many functions (the heaviest outside idle) get a series.
    #[arg(long, default_value_t = 10, value_name = "N")]
    pub top: usize,
    /// Also write DIR/history.txt, history.csv, history.json and history.html (created if
    /// missing).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Write --out DIR even when its directory may be written by every user.
    #[arg(long)]
    pub allow_world_writable_parent: bool,
    /// Format on standard output.
    #[arg(long, value_enum, default_value = "text")]
    pub format: HistoryFormat,
    /// Print nothing on standard output.
    #[arg(long, short)]
    pub quiet: bool,
    /// Exit 1 when the newest run is worse than the runs since the last change point in
    /// some series (significant at 1%, Bonferroni over the series); 125 when none is but
    /// some series could not be judged (fewer than 3 earlier runs in its segment, no value
    /// in the newest run); 0 otherwise, 2 on bad input.
    #[arg(long)]
    pub fail_if_changed: bool,
}

/// Runs `upcmp history` on `args` (the command line after `history`).
#[cfg(feature = "parquet")]
pub fn history(args: Vec<std::ffi::OsString>) -> anyhow::Result<ExitCode> {
    use crate::app::history::{history, write_files, By, HistoryOptions};
    use crate::report::history::{write_csv, write_html, write_json, write_text};
    let a = HistoryArgs::parse_from(args);
    let mut opts = HistoryOptions::new(a.dataset, a.test);
    opts.conditions = a
        .conditions
        .iter()
        .map(|c| crate::dataset::scan::parse_condition(c))
        .collect::<Result<_, _>>()?;
    opts.by = match a.by {
        ByArg::Time => By::Time,
        ByArg::Commit => By::Commit,
    };
    opts.top = a.top;
    let h = history(&opts)?;
    let render = |f: &dyn Fn(&mut Vec<u8>) -> std::io::Result<()>| -> std::io::Result<Vec<u8>> {
        let mut b = Vec::new();
        f(&mut b)?;
        Ok(b)
    };
    if let Some(dir) = &a.out {
        let files = [
            ("history.txt", render(&|b| write_text(&h, b))?),
            ("history.csv", render(&|b| write_csv(&h, b))?),
            ("history.json", render(&|b| write_json(&h, b))?),
            ("history.html", render(&|b| write_html(&h, b))?),
        ];
        write_files(dir, &files, a.allow_world_writable_parent)?;
    }
    if !a.quiet {
        use std::io::Write;
        let text = match a.format {
            HistoryFormat::Text => render(&|b| write_text(&h, b))?,
            HistoryFormat::Csv => render(&|b| write_csv(&h, b))?,
            HistoryFormat::Json => render(&|b| write_json(&h, b))?,
        };
        std::io::stdout().write_all(&text)?;
    }
    if !a.fail_if_changed {
        return Ok(ExitCode::SUCCESS);
    }
    let names = |it: &mut dyn Iterator<Item = &crate::compare::history::SeriesHistory>| {
        it.map(|s| crate::model::escaped(&s.series.name).into_owned())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let worse = names(&mut h.regressions());
    let untested = names(&mut h.untestable());
    Ok(ExitCode::from(if !worse.is_empty() {
        eprintln!("upcmp: the newest run is worse in: {worse}");
        crate::exit::EXIT_WORSE
    } else if !untested.is_empty() {
        eprintln!("upcmp: cannot tell whether the newest run changed: {untested}");
        crate::exit::EXIT_CANNOT_TEST
    } else {
        eprintln!("upcmp: the newest run starts no regression");
        0
    }))
}

/// Without the `parquet` feature there is no dataset.
#[cfg(not(feature = "parquet"))]
pub fn history(_: Vec<std::ffi::OsString>) -> anyhow::Result<ExitCode> {
    anyhow::bail!("this upcmp was built without the parquet feature: rebuild with cargo install --features parquet")
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn history_cli_is_consistent() {
        crate::cli::generate::assert_documented(HistoryArgs::command());
        let a = HistoryArgs::parse_from([
            "upcmp history",
            "ds",
            "--test",
            "getpid",
            "--where",
            "host=a",
            "--where",
            "commit=b",
            "--by",
            "commit",
            "--fail-if-changed",
        ]);
        assert_eq!(a.conditions, ["host=a", "commit=b"]);
        assert_eq!(a.by, ByArg::Commit);
        assert!(a.fail_if_changed && a.top == 10);
        assert!(HistoryArgs::try_parse_from(["upcmp history", "ds"]).is_err());
    }
}
