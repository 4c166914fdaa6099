//! `upcmp OUTDIR1 OUTDIR2 RESULTS_DIR [cutoff%]`: compare two uprun runs.

use anyhow::Context;
use clap::Parser;
use std::path::PathBuf;
use std::process::ExitCode;
use upcmp::compare::runs::compare_runs;
use upcmp::compare::stacks::compare_run_stacks;
use upcmp::compare::{resolve_cutoff, CompareOptions, IdleSet};
use upcmp::exit::{run, EXIT_BAD_INPUT};
use upcmp::report::{machine, stackcmp, text};
use upcmp::store::outdir::{publish_dir, RESULTS_MARKER};

/// Compare two uprun output directories: benchmark rates side by side, a summary of
/// elapsed, idle and CPU time, and the functions whose CPU time changed most.
#[derive(Parser, Debug)]
#[command(
    name = "upcmp",
    version,
    after_help = "Examples:\n  upcmp before after 1vs2            # report in 1vs2/results, also printed\n  upcmp before after 1vs2 1          # list functions with at least 1% of CPU time\n  upcmp before after 1vs2 --idle-symbols do_idle,default_idle"
)]
struct Args {
    /// The first run (the base), as written by uprun.
    outdir1: PathBuf,
    /// The second run (the change).
    outdir2: PathBuf,
    /// Where results, results.csv and results.json go. An existing one (made by upcmp)
    /// becomes RESULTS_DIR.old; a directory upcmp did not make is never touched.
    results_dir: PathBuf,
    /// List a function when its time is at least this % of its run's CPU time in either
    /// run (same as --cutoff; default 0.5).
    cutoff_pct: Option<f64>,
    /// The cutoff, as an option: e.g. --cutoff 1.
    #[arg(long = "cutoff", value_name = "PCT")]
    cutoff_opt: Option<f64>,
    /// Replace the runs' idle sets with these functions (comma-separated), e.g.
    /// --idle-symbols do_idle,default_idle.
    #[arg(long, value_name = "LIST")]
    idle_symbols: Option<String>,
    /// List only the functions whose change is beyond the noise (significant at 95%);
    /// results.csv and results.json keep every function with its statistics.
    #[arg(long)]
    hide_noise: bool,
    /// Do not print the report; only say where it was written.
    #[arg(long, short)]
    quiet: bool,
}

fn main() -> ExitCode {
    run("upcmp", EXIT_BAD_INPUT, || {
        let a = Args::parse();
        let mut opts = CompareOptions::new(
            resolve_cutoff(a.cutoff_pct, a.cutoff_opt).map_err(anyhow::Error::msg)?,
            a.idle_symbols.as_deref().map(IdleSet::parse_list),
        );
        opts.hide_noise = a.hide_noise;
        let cmp = compare_runs(&a.outdir1, &a.outdir2, &opts)?;
        let (mut report, mut csv, mut json) = (Vec::new(), Vec::new(), Vec::new());
        text::render_runs(&cmp, &mut report)?;
        machine::write_csv(&cmp, &mut csv)?;
        machine::write_json(&cmp, &mut json)?;
        // upsrun runs: differential flame graphs and caller/callee tables, named in results.
        let stacks = compare_run_stacks(&a.outdir1, &a.outdir2, opts.idle_override.as_ref())?;
        let stack_files = stacks.as_ref().map(stackcmp::files).transpose()?.unwrap_or_default();
        if let Some(s) = &stacks {
            stackcmp::render_index(s, &stack_files, &a.results_dir.display().to_string(), &mut report)?;
        }
        let mut files = vec![
            ("results", report.clone()),
            ("results.csv", csv),
            ("results.json", json),
        ];
        files.extend(stack_files.iter().map(|(n, b)| (n.as_str(), b.clone())));
        publish_dir(&a.results_dir, RESULTS_MARKER, &files)
            .with_context(|| format!("writing results to {}", a.results_dir.display()))?;
        if !a.quiet {
            use std::io::Write;
            std::io::stdout().write_all(&report)?;
        }
        let d = a.results_dir.display();
        eprintln!("upcmp: results written to {d}/results, {d}/results.csv and {d}/results.json");
        Ok(ExitCode::SUCCESS)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_is_consistent() {
        Args::command().debug_assert();
        let a = Args::parse_from(["upcmp", "a", "b", "r", "1"]);
        assert_eq!(a.cutoff_pct, Some(1.0));
        let a = Args::parse_from(["upcmp", "a", "b", "r", "--cutoff", "2", "--idle-symbols", "x"]);
        assert_eq!(a.cutoff_opt, Some(2.0));
        assert_eq!(a.idle_symbols.as_deref(), Some("x"));
    }
}
