//! `upcmp OUTDIR1 OUTDIR2 RESULTS_DIR [cutoff%]`: compare two uprun runs.

use upcmp::cli::dataset as dataset_cli;
use upcmp::cli::generate;
use upcmp::cli::history as history_cli;
use upcmp::cli::options as cli;

use clap::Parser;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use upcmp::app::annotate_runs::{RunAnnotate, PAGE_LISTED};
use upcmp::app::upcmp::{after_writing, upcmp, AfterOptions, Inputs, UpcmpOptions, UpcmpOutput};
use upcmp::compare::CompareOptions;
use upcmp::exit::{run, EXIT_BAD_INPUT};
use upcmp::model::IdleSet;
use upcmp::report::format::{render_runs, OutputFormat};

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
    #[arg(value_parser = cli::percent, value_name = "CUTOFF%")]
    cutoff_pct: Option<f64>,
    /// The cutoff, as an option: e.g. --cutoff 1.
    #[arg(long = "cutoff", value_name = "PCT", value_parser = cli::percent)]
    cutoff_opt: Option<f64>,
    /// Replace the runs' idle sets with these functions (comma-separated), e.g.
    /// --idle-symbols do_idle,default_idle.
    #[arg(long, value_name = "LIST")]
    idle_symbols: Option<String>,
    /// List only the functions whose change is beyond the noise (significant at 95%);
    /// results.csv and results.json keep every function with its statistics.
    #[arg(long)]
    hide_noise: bool,
    /// One row per symbol: do not fold a function's compiler clones (`.isra.0`,
    /// `.constprop.1`, `.part.0`, `.cold`, `.llvm.<hash>`, ...) into its base name, e.g.
    /// --keep-clones to see each clone's time apart (docs/symbols.md, "Clones").
    #[arg(long)]
    keep_clones: bool,
    /// List every counter in System Activity, also those whose change is within the noise
    /// (results.csv and results.json always keep them all).
    #[arg(long)]
    all_counters: bool,
    /// Exit with status 1 when a benchmark value of run 2 is worse than run 1's by more
    /// than PCT percent (a rate lower, a time higher) and the change is significant; 125
    /// when none is but something could not be compared (a test on one side only,
    /// different benchmarks, a value with no test: git bisect run's "cannot test"); 0
    /// otherwise, 2 on bad input. The reason is the last line on standard error, e.g.
    /// --fail-if-worse 5 (needs repetitions: uprun --runs N).
    #[arg(long, value_name = "PCT", value_parser = cli::limit_percent)]
    fail_if_worse: Option<f64>,
    /// Compare the test NAME although its two sides ran different commands (another
    /// unixperf test, other options or loop count): you say they are the same benchmark.
    /// Repeatable or comma-separated, e.g. --same-test getpid. A wrapper before the same
    /// benchmark (taskset, env, ...) needs none: it is warned about and compared.
    #[arg(long, value_name = "NAME", value_delimiter = ',')]
    same_test: Vec<String>,
    /// Compare only the time of the test's processes (uprun records whose each sample
    /// is): other processes and the kernel's own work (idle, kworkers, softirqs outside
    /// the test) are left out. Runs recorded before uprun did so cannot be compared so.
    #[arg(long, conflicts_with = "perf")]
    only_test: bool,
    /// Another run of the base, pooled with OUTDIR1 as further repetitions; repeatable,
    /// e.g. --baseline base2 --baseline base3.
    #[arg(long, value_name = "DIR", conflicts_with = "perf")]
    baseline: Vec<PathBuf>,
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
    /// Write RESULTS_DIR even when its directory may be written by every user and has no
    /// sticky bit (anyone there could replace the results), e.g. a shared scratch
    /// directory you trust.
    #[arg(long)]
    allow_world_writable_parent: bool,
    /// Move aside an existing RESULTS_DIR owned by another user (neither root nor you).
    /// Refused by default (docs/security.md).
    #[arg(long)]
    allow_foreign_run: bool,
    #[command(flatten)]
    annotate: cli::AnnotateArgs,
    /// Also annotate the N listed kernel functions of largest change of each test
    /// (RESULTS_DIR/results.annotate and an expandable row each on the page), e.g.
    /// --annotate-top 10 (uprun runs: the code and lines come from the vmlinux given to
    /// uprun, its debug file by build-id, or a module's .ko).
    #[arg(long, value_name = "N", conflicts_with = "perf")]
    annotate_top: Option<usize>,
    /// How many listed functions of each test results.html holds the lines and
    /// instructions of, opened there on demand (uprun runs whose vmlinux is found; with
    /// --perf, a perf.data file's functions in ELF files, and its core-kernel ones with
    /// --vmlinux; 0: none).
    #[arg(long, value_name = "N", default_value_t = PAGE_LISTED)]
    annotate_page: usize,
    #[command(flatten)]
    import: cli::ImportArgs,
    #[command(flatten)]
    filter: cli::FilterArgs,
    /// Print shell completions or the man page and exit, e.g.
    /// `upcmp --generate man > /usr/local/share/man/man1/upcmp.1`.
    #[arg(long, value_enum, value_name = "WHAT", exclusive = true)]
    generate: Option<generate::GenerateArg>,
}

impl Args {
    /// The library's options: what to compare, and what to do after writing.
    fn options(self) -> anyhow::Result<(UpcmpOptions, AfterOptions)> {
        let (Some(outdir1), Some(outdir2), Some(results_dir)) = (self.outdir1, self.outdir2, self.results_dir) else {
            unreachable!("clap requires the three paths without --generate");
        };
        let mut compare = CompareOptions::new(
            cli::resolve_cutoff(self.cutoff_pct, self.cutoff_opt)?,
            self.idle_symbols.as_deref().map(IdleSet::parse_list),
        );
        compare.hide_noise = self.hide_noise;
        compare.keep_clones = self.keep_clones;
        compare.all_counters = self.all_counters;
        compare.same_tests = self.same_test;
        compare.annotate = self.annotate.options();
        let inputs = if self.perf {
            Inputs::Recordings {
                path1: outdir1,
                path2: outdir2,
                import: Box::new(self.import.options()),
            }
        } else {
            Inputs::Runs {
                dir1: outdir1,
                dir2: outdir2,
                baselines: self.baseline,
            }
        };
        let mut filter = self.filter.filter();
        filter.only_test = self.only_test;
        let opts = UpcmpOptions {
            inputs,
            results_dir,
            compare,
            allow_shared_parent: self.allow_world_writable_parent,
            allow_foreign_run: self.allow_foreign_run,
            html: !self.no_html,
            filter,
            annotate: RunAnnotate::new(self.annotate.options(), self.annotate_top.unwrap_or(0))
                .with_page(self.annotate_page),
        };
        Ok((opts, AfterOptions::new(!self.no_html, self.open, self.fail_if_worse)))
    }
}

/// The report on standard output, in the format asked for.
fn print_report(out: &UpcmpOutput, format: cli::FormatArg) -> anyhow::Result<()> {
    let text = match OutputFormat::from(format) {
        OutputFormat::Text if cli::color_enabled() => {
            cli::colorize_text(&String::from_utf8_lossy(&out.report)).into_bytes()
        }
        OutputFormat::Text => out.report.clone(),
        f => {
            let mut text = Vec::new();
            render_runs(f, &out.comparison, &mut text)?;
            text
        }
    };
    let mut text = text;
    let annotations: Vec<_> = out.annotations.iter().map(|(_, a)| a.clone()).collect();
    cli::append_annotations(OutputFormat::from(format), &annotations, &mut text)?;
    std::io::stdout().write_all(&text)?;
    Ok(())
}

fn main() -> ExitCode {
    run("upcmp", EXIT_BAD_INPUT, || {
        let argv = std::env::args_os().collect::<Vec<_>>();
        if let Some(args) = dataset_cli::dataset_command(&argv) {
            return match args[0].to_str() {
                Some("upcmp history") => history_cli::history(args),
                _ => dataset_cli::export(args),
            };
        }
        if dataset_cli::is_group(&argv) {
            return dataset_cli::group(argv);
        }
        let Some(a) = generate::parse_or_generate::<Args>(|a| a.generate)? else {
            return Ok(ExitCode::SUCCESS);
        };
        let (quiet, format) = (a.quiet, a.format);
        let (opts, after) = a.options()?;
        let out = upcmp(&opts).map_err(|e| cli::with_import_hint(e.into()))?;
        if !quiet {
            print_report(&out, format)?;
        }
        Ok(ExitCode::from(after_writing(&out, &after)))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_is_consistent() {
        generate::assert_documented(Args::command());
        let a = Args::parse_from(["upcmp", "a", "b", "r", "1"]);
        assert_eq!(a.cutoff_pct, Some(1.0));
        // The synopsis writes `[cutoff%]`: the sign is allowed.
        let a = Args::parse_from(["upcmp", "a", "b", "r", "1%"]);
        assert_eq!(a.cutoff_pct, Some(1.0));
        let a = Args::parse_from(["upcmp", "a", "b", "r", "--cutoff", "2", "--idle-symbols", "x"]);
        assert_eq!(a.cutoff_opt, Some(2.0));
        assert_eq!(a.idle_symbols.as_deref(), Some("x"));
        let a = Args::parse_from(["upcmp", "--perf", "a.data", "b.data", "r", "--format", "csv"]);
        assert!(a.perf);
        assert_eq!(a.format, cli::FormatArg::Csv);
        assert!(Args::try_parse_from(["upcmp", "--generate", "fish"]).is_ok());
        let a = Args::parse_from([
            "upcmp",
            "a",
            "b",
            "r",
            "--fail-if-worse",
            "5",
            "--baseline",
            "c",
            "--baseline",
            "d",
        ]);
        assert_eq!(a.fail_if_worse, Some(5.0));
        assert_eq!(a.baseline, vec![PathBuf::from("c"), PathBuf::from("d")]);
        assert!(Args::try_parse_from(["upcmp", "--perf", "a", "b", "r", "--baseline", "c"]).is_err());
        let a = Args::parse_from(["upcmp", "a", "b", "r", "--same-test", "x,y", "--same-test", "z"]);
        assert_eq!(a.same_test, ["x", "y", "z"]);
        let a = Args::parse_from(["upcmp", "a", "b", "r", "--open"]);
        assert!(a.open && !a.no_html);
        assert!(Args::try_parse_from(["upcmp", "a", "b", "r", "--open", "--no-html"]).is_err());
        let a = Args::parse_from([
            "upcmp",
            "a",
            "b",
            "r",
            "--comm",
            "x,y",
            "--cpu",
            "0-2,5",
            "--kernel-only",
        ]);
        let f = a.filter.filter();
        assert_eq!((f.comms, f.cpus), (vec!["x".to_string(), "y".into()], vec![0, 1, 2, 5]));
        assert!(Args::try_parse_from(["upcmp", "a", "b", "r", "--kernel-only", "--user-only"]).is_err());
        assert!(Args::try_parse_from(["upcmp", "a", "b", "r", "--cpu", "3-1"]).is_err());
    }
}
