//! `feat`: list or toggle scheduler features.

use upcmp::cli::generate;

use clap::Parser;
use std::io;
use std::path::PathBuf;
use std::process::ExitCode;
use upcmp::exit::Voice;
use upcmp::host::sched_features::{self as feat, FeatureFile, DEFAULT_DEBUGFS};

/// Enable or disable one or more scheduler features (sched_features).
/// With no FEATURE, print the current features, one per line.
#[derive(Parser, Debug)]
#[command(
    name = "feat",
    version,
    after_help = "Examples:\n    feat                          list the features; NO_X means X is off\n    feat NO_TTWU_QUEUE            disable TTWU_QUEUE\n    feat TTWU_QUEUE               enable it again\n    feat --debugfs /mnt/debug     debugfs mounted elsewhere\n\nChanging features needs root and a kernel with CONFIG_SCHED_DEBUG (docs/feat.md)."
)]
struct Args {
    /// X enables feature X, NO_X disables it, e.g. NO_TTWU_QUEUE; several may be given
    #[arg(value_name = "FEATURE")]
    features: Vec<String>,
    /// Where debugfs is mounted, e.g. --debugfs /mnt/debug
    #[arg(long, value_name = "DIR", default_value = DEFAULT_DEBUGFS, value_hint = clap::ValueHint::DirPath)]
    debugfs: PathBuf,
    /// Print shell completions or the man page and exit, e.g.
    /// `feat --generate zsh > /usr/local/share/zsh/site-functions/_feat`
    #[arg(long, value_enum, value_name = "WHAT", exclusive = true)]
    generate: Option<generate::GenerateArg>,
}

fn main() -> ExitCode {
    generate::helper_main("feat", |_| Voice::Plain, |a: &Args| a.generate, run)
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
        generate::assert_documented(Args::command());
        let args = Args::try_parse_from(["feat"]).unwrap();
        assert!(args.features.is_empty());
        assert_eq!(args.debugfs, PathBuf::from("/sys/kernel/debug"));
        let args = Args::try_parse_from(["feat", "NO_STEAL", "TTWU_QUEUE", "--debugfs", "/tmp/d"]).unwrap();
        assert_eq!(args.features, ["NO_STEAL", "TTWU_QUEUE"]);
        assert_eq!(args.debugfs, PathBuf::from("/tmp/d"));
        let args = Args::try_parse_from(["feat", "--generate", "man"]).unwrap();
        assert_eq!(args.generate, Some(generate::GenerateArg::Man));
        assert!(Args::try_parse_from(["feat", "NO_STEAL", "--generate", "man"]).is_err());
    }
}
