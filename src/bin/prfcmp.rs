//! `prfcmp PROFILE1 PROFILE2 [cutoff%]`: compare two profiles.

use upcmp::cli::generate;
use upcmp::cli::options as cli;

use clap::Parser;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use upcmp::app::prfcmp::prfcmp_filtered;
use upcmp::compare::verdict::fail_if_worse_profile;
use upcmp::compare::CompareOptions;
use upcmp::exit::{run, EXIT_BAD_INPUT};
use upcmp::model::IdleSet;
use upcmp::report::format::{render_profile, OutputFormat};

/// Compare two profiles: the Profiling Summary (elapsed, idle, CPU time) and the CPU
/// Time Analysis (functions sorted by their change). A profile is a uprun prfout (or its
/// test directory), a perf.data file, `perf script` output, or folded stacks; `-` reads
/// perf script or folded text from standard input.
#[derive(Parser, Debug)]
#[command(
    name = "prfcmp",
    version,
    after_help = "Examples:\n  prfcmp run1/forkwait/prfout run2/forkwait/prfout\n  prfcmp run1/forkwait run2/forkwait 1     # a test directory stands for its prfout\n  prfcmp before.data after.data            # two perf record files\n  perf script -i after.data | prfcmp before.data -\n  prfcmp a.folded b.folded --format markdown"
)]
struct Args {
    /// The first profile: a prfout file or test directory, perf.data, perf script output
    /// or folded stacks (e.g. run1/forkwait, perf.data.old).
    #[arg(required_unless_present = "generate")]
    profile1: Option<PathBuf>,
    /// The second profile, of any of the same kinds (e.g. perf.data).
    #[arg(required_unless_present = "generate")]
    profile2: Option<PathBuf>,
    /// List a function when its time is at least this % of its run's CPU time in either
    /// run (same as --cutoff; default 0.5), e.g. 1.
    #[arg(value_parser = cli::percent, value_name = "CUTOFF%")]
    cutoff_pct: Option<f64>,
    /// The cutoff, as an option: e.g. --cutoff 1.
    #[arg(long = "cutoff", value_name = "PCT", value_parser = cli::percent)]
    cutoff_opt: Option<f64>,
    /// Replace the profiles' idle sets with these functions (comma-separated), e.g.
    /// --idle-symbols do_idle,default_idle; --idle-symbols '' counts every function.
    #[arg(long, value_name = "LIST")]
    idle_symbols: Option<String>,
    /// List only the functions whose change is beyond the noise (significant at 95%);
    /// CSV and JSON keep every function with its statistics.
    #[arg(long)]
    hide_noise: bool,
    /// One row per symbol: do not fold a function's compiler clones (`.isra.0`,
    /// `.constprop.1`, `.part.0`, `.cold`, `.llvm.<hash>`, ...) into its base name, e.g.
    /// --keep-clones to see each clone's time apart (docs/symbols.md, "Clones").
    #[arg(long)]
    keep_clones: bool,
    /// Exit with status 1 when profile 2's total CPU time is higher than profile 1's by
    /// more than PCT percent and beyond the noise (with one profile a side, the sampling
    /// error: run-to-run noise is not measured); 125 when the CPU time could not be tested
    /// (for git bisect run: cannot test); 0 otherwise, 2 on bad input. The reason is the
    /// last line on standard error, e.g. --fail-if-worse 5.
    #[arg(long, value_name = "PCT", value_parser = cli::limit_percent)]
    fail_if_worse: Option<f64>,
    /// Output format on standard output, e.g. --format markdown for a pull request.
    #[arg(long, value_enum, default_value = "text", value_name = "FORMAT")]
    format: cli::FormatArg,
    #[command(flatten)]
    import: cli::ImportArgs,
    #[command(flatten)]
    filter: cli::FilterArgs,
    #[command(flatten)]
    annotate: cli::AnnotateArgs,
    /// Print shell completions or the man page and exit, e.g.
    /// `prfcmp --generate bash > /usr/share/bash-completion/completions/prfcmp`.
    #[arg(long, value_enum, value_name = "WHAT", exclusive = true)]
    generate: Option<generate::GenerateArg>,
}

/// Each profile's warnings, on standard error so that CSV and JSON on standard output
/// stay clean.
fn print_warnings(profiles: [(&std::path::PathBuf, &upcmp::model::Profile); 2]) {
    for (n, (path, p)) in profiles.into_iter().enumerate() {
        for w in &p.warnings {
            eprintln!(
                "prfcmp: warning: profile {} ({}): {}",
                n + 1,
                path.display(),
                upcmp::model::Shown(w)
            );
        }
    }
}

fn main() -> ExitCode {
    run("prfcmp", EXIT_BAD_INPUT, || {
        let Some(a) = generate::parse_or_generate::<Args>(|a| a.generate)? else {
            return Ok(ExitCode::SUCCESS);
        };
        let (Some(path1), Some(path2)) = (&a.profile1, &a.profile2) else {
            unreachable!("clap requires both profiles without --generate");
        };
        let mut opts = CompareOptions::new(
            cli::resolve_cutoff(a.cutoff_pct, a.cutoff_opt)?,
            a.idle_symbols.as_deref().map(IdleSet::parse_list),
        );
        opts.hide_noise = a.hide_noise;
        opts.keep_clones = a.keep_clones;
        opts.annotate = a.annotate.options();
        let c = prfcmp_filtered(path1, path2, &a.import.options(), &opts, &a.filter.filter())
            .map_err(|e| cli::with_import_hint(e.into()))?;
        print_warnings([(path1, &c.profile1), (path2, &c.profile2)]);
        let format = OutputFormat::from(a.format);
        let mut out = Vec::new();
        render_profile(format, &c.profile1.test, &c.comparison, &mut out)?;
        cli::append_annotations(format, &c.annotations, &mut out)?;
        if format == OutputFormat::Text && cli::color_enabled() {
            out = cli::colorize_text(&String::from_utf8_lossy(&out)).into_bytes();
        }
        std::io::stdout().write_all(&out)?;
        if let Some(limit) = a.fail_if_worse {
            let v = fail_if_worse_profile(&c.profile1.test, &c.comparison, limit);
            eprintln!("prfcmp: {}", upcmp::model::Shown(&v.reason()));
            return Ok(ExitCode::from(upcmp::app::verdict_status(&v)));
        }
        Ok(ExitCode::SUCCESS)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_is_consistent() {
        generate::assert_documented(Args::command());
        let a = Args::parse_from(["prfcmp", "a", "b", "--cutoff", "1", "--idle-symbols", "x,y"]);
        assert_eq!(a.cutoff_opt, Some(1.0));
        assert_eq!(a.idle_symbols.as_deref(), Some("x,y"));
        let a = Args::parse_from(["prfcmp", "a.data", "-", "--format", "json", "--kallsyms", "k"]);
        assert_eq!(a.format, cli::FormatArg::Json);
        assert_eq!(a.import.kallsyms, Some(PathBuf::from("k")));
        assert!(Args::try_parse_from(["prfcmp", "a"]).is_err());
        assert!(Args::try_parse_from(["prfcmp", "--generate", "zsh"]).is_ok());
        assert!(Args::try_parse_from(["prfcmp", "a", "b", "--generate", "zsh"]).is_err());
    }

    #[test]
    fn colour_marks_only_function_rows() {
        let text = "Elapsed time 2.000 1.000 -0.50\n\nCPU Time Analysis\nFunction x\n-----\nf 1 2 1 0.50\ng 2 1 -1 -0.50\nh 1 1 0 0.00\n\nNotes: 1 msec\n";
        let c = cli::colorize_text(text);
        assert!(c.starts_with("Elapsed time 2.000 1.000 -0.50\n"));
        assert!(c.contains("\x1b[31mf 1 2 1 0.50\x1b[0m\n"));
        assert!(c.contains("\x1b[32mg 2 1 -1 -0.50\x1b[0m\n"));
        assert!(c.contains("\nh 1 1 0 0.00\n"));
        assert_eq!(
            c.replace("\x1b[31m", "").replace("\x1b[32m", "").replace("\x1b[0m", ""),
            text
        );
    }
}
