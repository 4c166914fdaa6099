//! `feat`: list or toggle scheduler features.

use clap::Parser;
use std::io;
use std::path::PathBuf;
use std::process::ExitCode;
use upcmp::exit::is_broken_pipe;
use upcmp::helpers::feat::{self, FeatureFile, DEFAULT_DEBUGFS};

/// Enable or disable one or more scheduler features (sched_features).
/// With no FEATURE, print the current features, one per line.
#[derive(Parser, Debug)]
#[command(
    name = "feat",
    version,
    after_help = "Examples:\n    feat                 list the features; NO_X means X is off\n    feat NO_TTWU_QUEUE   disable TTWU_QUEUE\n    feat TTWU_QUEUE      enable it again"
)]
struct Args {
    /// X enables feature X, NO_X disables it
    #[arg(value_name = "FEATURE")]
    features: Vec<String>,
    /// Where debugfs is mounted
    #[arg(long, value_name = "DIR", default_value = DEFAULT_DEBUGFS)]
    debugfs: PathBuf,
}

fn main() -> ExitCode {
    let args = Args::parse();
    match run(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) if is_broken_pipe(&err) => ExitCode::SUCCESS,
        Err(err) => {
            // The messages are whole sentences, as the original printed them.
            eprintln!("{err:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: Args) -> anyhow::Result<()> {
    let file = FeatureFile::locate(&args.debugfs)?;
    if args.features.is_empty() {
        feat::render_list(&file.read()?, io::stdout().lock())?;
    } else {
        // The command line is the undo: the previous states are not kept.
        let _previous = file.set(&args.features)?;
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
        let args = Args::try_parse_from(["feat"]).unwrap();
        assert!(args.features.is_empty());
        assert_eq!(args.debugfs, PathBuf::from("/sys/kernel/debug"));
        let args = Args::try_parse_from(["feat", "NO_STEAL", "TTWU_QUEUE", "--debugfs", "/tmp/d"]).unwrap();
        assert_eq!(args.features, ["NO_STEAL", "TTWU_QUEUE"]);
        assert_eq!(args.debugfs, PathBuf::from("/tmp/d"));
    }
}
