//! `upcmp OUTDIR1 OUTDIR2 RESULTS_DIR [cutoff%]`: compare two uprun runs.

#[path = "common/cli.rs"]
mod cli;
#[path = "common/generate.rs"]
mod generate;

use anyhow::Context;
use clap::{CommandFactory, Parser};
use std::path::PathBuf;
use std::process::ExitCode;
use upcmp::compare::imported::compare_imported;
use upcmp::compare::runs::compare_runs;
use upcmp::compare::stacks::{compare_run_stacks, compare_stacks, RunStacks};
use upcmp::compare::{resolve_cutoff, CompareOptions, IdleSet};
use upcmp::exit::{run, EXIT_BAD_INPUT};
use upcmp::import;
use upcmp::report::html::{self, HtmlOptions};
use upcmp::report::{machine, stackcmp, text};
use upcmp::store::outdir::{publish_dir, RESULTS_MARKER};

/// Compare two uprun output directories: benchmark rates side by side, a summary of
/// elapsed, idle and CPU time, and the functions whose CPU time changed most.
#[derive(Parser, Debug)]
#[command(
    name = "upcmp",
    version,
    after_help = "Examples:\n  upcmp before after 1vs2            # report in 1vs2/results, also printed\n  upcmp before after 1vs2 1          # list functions with at least 1% of CPU time\n  upcmp before after 1vs2 --idle-symbols do_idle,default_idle\n  upcmp --perf before.data after.data 1vs2   # two perf record files (or perf script, folded)\n  upcmp before after 1vs2 --format markdown -q\n  upcmp before after 1vs2 --open     # and show 1vs2/results.html in the browser"
)]
struct Args {
    /// The first run (the base), as written by uprun; with --perf, a perf.data file,
    /// perf script output or folded stacks.
    #[arg(required_unless_present = "generate")]
    outdir1: Option<PathBuf>,
    /// The second run (the change).
    #[arg(required_unless_present = "generate")]
    outdir2: Option<PathBuf>,
    /// Where results, results.html, results.csv and results.json go (and results.parquet, when built
    /// with the parquet feature). An existing one (made by upcmp) becomes RESULTS_DIR.old;
    /// a directory upcmp did not make is never touched.
    #[arg(required_unless_present = "generate")]
    results_dir: Option<PathBuf>,
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
    /// Compare two recordings of perf (perf.data, perf script output or folded stacks)
    /// instead of two uprun directories, e.g. upcmp --perf before.data after.data 1vs2;
    /// recordings with call chains (perf record -g) also get a differential flame graph.
    #[arg(long)]
    perf: bool,
    /// Do not write RESULTS_DIR/results.html (the report as one self-contained page).
    #[arg(long)]
    no_html: bool,
    /// Open RESULTS_DIR/results.html with xdg-open when a display exists.
    #[arg(long, conflicts_with = "no_html")]
    open: bool,
    /// Format of the report on standard output (the files written are the same), e.g.
    /// --format markdown.
    #[arg(long, value_enum, default_value = "text", value_name = "FORMAT")]
    format: cli::FormatArg,
    #[command(flatten)]
    import: cli::ImportArgs,
    /// Print shell completions or the man page and exit, e.g.
    /// `upcmp --generate man > /usr/local/share/man/man1/upcmp.1`.
    #[arg(long, value_enum, value_name = "WHAT", exclusive = true)]
    generate: Option<generate::GenerateArg>,
}

fn main() -> ExitCode {
    run("upcmp", EXIT_BAD_INPUT, || {
        let a = Args::parse();
        if let Some(what) = a.generate {
            generate::generate(what, Args::command())?;
            return Ok(ExitCode::SUCCESS);
        }
        let (Some(outdir1), Some(outdir2), Some(results_dir)) = (&a.outdir1, &a.outdir2, &a.results_dir) else {
            unreachable!("clap requires the three paths without --generate");
        };
        let mut opts = CompareOptions::new(
            resolve_cutoff(a.cutoff_pct, a.cutoff_opt).map_err(anyhow::Error::msg)?,
            a.idle_symbols.as_deref().map(IdleSet::parse_list),
        );
        opts.hide_noise = a.hide_noise;
        // With --perf, the recordings' call chains (when both have them) become the
        // same stack comparison as two upsrun runs get.
        let mut imported_stacks = None;
        let cmp = if a.perf {
            let import = a.import.options().with_stacks(true);
            let i1 = import::import(outdir1, &import).with_context(|| format!("reading {}", outdir1.display()))?;
            let i2 = import::import(outdir2, &import).with_context(|| format!("reading {}", outdir2.display()))?;
            let cmp = compare_imported(outdir1, &i1.profile, outdir2, &i2.profile, &opts)?;
            if let (Some(s1), Some(s2)) = (&i1.stacks, &i2.stacks) {
                let idle = opts
                    .idle_override
                    .clone()
                    .unwrap_or_else(|| IdleSet::new(i1.profile.idle_set.clone()));
                let test = cmp.tests.first().map_or("recording", |t| t.name.as_str());
                imported_stacks = Some(RunStacks {
                    dir1: outdir1.clone(),
                    dir2: outdir2.clone(),
                    tests: vec![compare_stacks(test, s1, s2, &idle)],
                });
            }
            cmp
        } else {
            compare_runs(outdir1, outdir2, &opts)?
        };
        let (mut report, mut csv, mut json) = (Vec::new(), Vec::new(), Vec::new());
        text::render_runs(&cmp, &mut report)?;
        machine::write_csv(&cmp, &mut csv)?;
        machine::write_json(&cmp, &mut json)?;
        // upsrun runs: differential flame graphs and caller/callee tables, named in results.
        let stacks = if a.perf {
            imported_stacks
        } else {
            compare_run_stacks(outdir1, outdir2, opts.idle_override.as_ref())?
        };
        let stack_files = stacks.as_ref().map(stackcmp::files).transpose()?.unwrap_or_default();
        if let Some(s) = &stacks {
            stackcmp::render_index(s, &stack_files, &results_dir.display().to_string(), &mut report)?;
        }
        let mut files = vec![
            ("results", report.clone()),
            ("results.csv", csv),
            ("results.json", json),
        ];
        #[cfg(feature = "parquet")]
        {
            let mut parquet = Vec::new();
            upcmp::report::parquet::write(&machine::rows(&cmp), &mut parquet)?;
            files.push(("results.parquet", parquet));
        }
        if !a.no_html {
            let mut page = Vec::new();
            let opts = HtmlOptions::new(a.hide_noise);
            html::render(&cmp, stacks.as_ref(), &stack_files, &opts, &mut page)?;
            files.push(("results.html", page));
        }
        files.extend(stack_files.iter().map(|(n, b)| (n.as_str(), b.clone())));
        publish_dir(results_dir, RESULTS_MARKER, &files)
            .with_context(|| format!("writing results to {}", results_dir.display()))?;
        if !a.quiet {
            use std::io::Write;
            let mut out = Vec::new();
            match upcmp::report::format::OutputFormat::from(a.format) {
                upcmp::report::format::OutputFormat::Text if cli::color_enabled() => {
                    out = cli::colorize_text(&String::from_utf8_lossy(&report)).into_bytes()
                }
                upcmp::report::format::OutputFormat::Text => out = report.clone(),
                f => upcmp::report::format::render_runs(f, &cmp, &mut out)?,
            }
            std::io::stdout().write_all(&out)?;
        }
        let d = results_dir.display();
        let parquet = if cfg!(feature = "parquet") {
            ", results.parquet"
        } else {
            ""
        };
        let page = if a.no_html {
            String::new()
        } else {
            format!(", {d}/results.html")
        };
        eprintln!("upcmp: results written to {d}/results{page}, {d}/results.csv{parquet} and {d}/results.json");
        if a.open {
            open_page(&results_dir.join("results.html"));
        }
        Ok(ExitCode::SUCCESS)
    })
}

/// Opens `page` in the desktop's browser when there is a display; otherwise says where
/// it is. The results are written either way, so this never fails the command.
fn open_page(page: &std::path::Path) {
    let display = ["DISPLAY", "WAYLAND_DISPLAY"]
        .iter()
        .any(|v| std::env::var_os(v).is_some_and(|x| !x.is_empty()));
    if !display {
        eprintln!(
            "upcmp: no display (DISPLAY and WAYLAND_DISPLAY unset): open {} in a browser",
            page.display()
        );
        return;
    }
    let null = std::process::Stdio::null;
    match std::process::Command::new("xdg-open")
        .arg(page)
        .stdin(null())
        .stdout(null())
        .stderr(null())
        .spawn()
    {
        Ok(_) => eprintln!("upcmp: opening {} with xdg-open", page.display()),
        Err(e) => eprintln!("upcmp: cannot run xdg-open ({e}): open {} in a browser", page.display()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cli_is_consistent() {
        Args::command().debug_assert();
        generate::assert_documented(Args::command());
        let a = Args::parse_from(["upcmp", "a", "b", "r", "1"]);
        assert_eq!(a.cutoff_pct, Some(1.0));
        let a = Args::parse_from(["upcmp", "a", "b", "r", "--cutoff", "2", "--idle-symbols", "x"]);
        assert_eq!(a.cutoff_opt, Some(2.0));
        assert_eq!(a.idle_symbols.as_deref(), Some("x"));
        let a = Args::parse_from(["upcmp", "--perf", "a.data", "b.data", "r", "--format", "csv"]);
        assert!(a.perf);
        assert_eq!(a.format, cli::FormatArg::Csv);
        assert!(Args::try_parse_from(["upcmp", "--generate", "fish"]).is_ok());
        let a = Args::parse_from(["upcmp", "a", "b", "r", "--open"]);
        assert!(a.open && !a.no_html);
        assert!(Args::try_parse_from(["upcmp", "a", "b", "r", "--open", "--no-html"]).is_err());
    }
}
