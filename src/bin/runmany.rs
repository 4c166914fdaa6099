//! `runmany`: run a command many times and print the times, average and stdev.

use clap::Parser;
use std::ffi::OsString;
use std::io;
use std::process::ExitCode;
use upcmp::exit::is_broken_pipe;
use upcmp::helpers::runmany::{self, RunError, RunOptions};

/// Run a command num times, take the `Time <seconds>` line it prints (as
/// hackbench does), and print each run's time, the average and the standard
/// deviation as a percent of the average.
#[derive(Parser, Debug)]
#[command(
    name = "runmany",
    version,
    override_usage = "runmany num command args ...",
    after_help = "Example:\n    runmany 5 hackbench 1 process 50000\n     4.096  4.090  4.073  4.129  4.092     Average 4.096   stdev 0.5%"
)]
struct Args {
    /// How many times to run the command
    #[arg(value_name = "num", allow_hyphen_values = true)]
    num: Option<String>,
    /// The command and its arguments, run as given (no shell)
    #[arg(value_name = "command args", trailing_var_arg = true, allow_hyphen_values = true)]
    command: Vec<OsString>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    match run(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) if is_broken_pipe(&err) => ExitCode::SUCCESS,
        Err(err) => {
            match err.downcast_ref::<RunError>() {
                // The usage text stands alone, as the original printed it.
                Some(RunError::Usage { .. }) => eprintln!("{err:#}"),
                _ => eprintln!("runmany: {err:#}"),
            }
            ExitCode::FAILURE
        }
    }
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
        Args::command().debug_assert();
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
}
