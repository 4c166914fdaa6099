//! `runmany`: run a command many times and print the times, average and stdev.

use upcmp::cli::generate;

use clap::Parser;
use std::ffi::OsString;
use std::io;
use std::process::ExitCode;
use upcmp::exit::Voice;
use upcmp::helpers::runmany::{self, RunError, RunOptions};

/// Run a command num times, take the `Time <seconds>` line it prints (as
/// hackbench does), and print each run's time, the average and the standard
/// deviation as a percent of the average.
#[derive(Parser, Debug)]
#[command(
    name = "runmany",
    version,
    override_usage = "runmany num command args ...\n       runmany --generate bash|zsh|fish|man",
    after_help = "Examples:\n    runmany 5 hackbench 1 process 50000\n     4.096  4.090  4.073  4.129  4.092     Average 4.096   stdev 0.5%\n    runmany 10 hackbench -g 4 --pipe      # the command's own options stay its own\n    runmany 3 sh -c 'hackbench 2 thread 1000 2>&1'\n\nThe command must print one `Time <seconds>` line per run, as hackbench does (docs/runmany.md)."
)]
struct Args {
    /// How many times to run the command, a whole number from 1 up, e.g. 5
    #[arg(value_name = "num", allow_hyphen_values = true, value_hint = clap::ValueHint::Other)]
    num: Option<String>,
    /// The command and its arguments, run as given (no shell); everything after the command,
    /// flags too, is the command's, e.g. hackbench 1 process 50000
    #[arg(
        value_name = "command args",
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_hint = clap::ValueHint::CommandWithArguments
    )]
    command: Vec<OsString>,
    /// Print shell completions or the man page and exit, e.g.
    /// `runmany --generate bash > /usr/share/bash-completion/completions/runmany`
    #[arg(long, value_enum, value_name = "WHAT", exclusive = true)]
    generate: Option<generate::GenerateArg>,
}

fn main() -> ExitCode {
    generate::helper_main(
        "runmany",
        |e| match e.downcast_ref::<RunError>() {
            // The usage text stands alone, as the original printed it.
            Some(RunError::Usage { .. }) => Voice::Plain,
            _ => Voice::Helper,
        },
        |a: &Args| a.generate,
        run,
    )
}

fn run(args: Args) -> anyhow::Result<()> {
    let runs = runmany::parse_runs(args.num.as_deref())?;
    let opts = RunOptions::new(runs, args.command);
    let summary = runmany::run_many(&opts, &mut io::stdout().lock())?;
    if let Some(note) = summary.stdev_note() {
        eprintln!("{note}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_is_well_formed() {
        generate::assert_documented(Args::command());
    }

    #[test]
    fn command_keeps_its_own_flags() {
        let args = Args::try_parse_from(["runmany", "5", "hackbench", "-g", "4", "--pipe"]).unwrap();
        assert_eq!(args.num.as_deref(), Some("5"));
        assert_eq!(args.command, ["hackbench", "-g", "4", "--pipe"]);
        let args = Args::try_parse_from(["runmany"]).unwrap();
        assert_eq!(args.num, None);
        assert!(args.command.is_empty());
        let args = Args::try_parse_from(["runmany", "-3", "true"]).unwrap();
        assert_eq!(args.num.as_deref(), Some("-3"));
    }

    #[test]
    fn generate_only_before_the_command() {
        let args = Args::try_parse_from(["runmany", "--generate", "bash"]).unwrap();
        assert_eq!(args.generate, Some(generate::GenerateArg::Bash));
        assert_eq!((args.num, args.command.len()), (None, 0));
        // After the command, --generate (and --help, --version) are the command's own.
        for own in [&["--generate"][..], &["--generate", "bash"], &["--help"], &["-V"]] {
            let mut line = vec!["runmany", "5", "hackbench"];
            line.extend_from_slice(own);
            let args = Args::try_parse_from(&line).unwrap();
            assert_eq!(args.num.as_deref(), Some("5"));
            assert_eq!(args.command, line[2..], "{line:?}");
            assert_eq!(args.generate, None, "{line:?}");
        }
        // With a run count or a command, --generate says it stands alone.
        let err = Args::try_parse_from(["runmany", "5", "--generate", "bash"]).unwrap_err();
        assert_eq!(err.kind(), clap::error::ErrorKind::ArgumentConflict);
        let err = Args::try_parse_from(["runmany", "--generate", "csh"]).unwrap_err();
        assert!(
            err.to_string().contains("[possible values: bash, zsh, fish, man]"),
            "{err}"
        );
    }
}
