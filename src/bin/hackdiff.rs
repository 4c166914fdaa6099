//! `hackdiff`: compare a base and a new series of runmany hackbench results.

use upcmp::cli::generate;

use anyhow::Context;
use clap::Parser;
use std::io;
use std::path::PathBuf;
use std::process::ExitCode;
use upcmp::exit::Voice;
use upcmp::fsio::{self, Links};
use upcmp::helpers::hackdiff;

/// The most input hackdiff reads: a hackseries run writes a few kilobytes, and
/// `/dev/zero` or an endless pipe must end in an error, not in all the memory there is.
const INPUT_CAP: u64 = 16 << 20;

/// Print the difference between two identical series of `runmany hackbench`
/// runs: the first occurrence of each group is the base, the next the new one.
#[derive(Parser, Debug)]
#[command(
    name = "hackdiff",
    version,
    after_help = "Examples:\n    hackdiff series.txt             # the base series, then the new one\n    ./hackseries | hackdiff         # straight from the script that runs both (docs/hackdiff.md)\n\nInput, as a hackseries script writes it:\n    hackbench 1 process 50000\n     4.096  4.090  4.073  4.129  4.092     Average 4.096   stdev 0.5%\n    ...\n\n%speedup = (base time / new time - 1) * 100, in the original's integer arithmetic."
)]
struct Args {
    /// Read the series from FILE instead of standard input ("-" is standard input),
    /// e.g. series.txt
    #[arg(value_name = "FILE", value_hint = clap::ValueHint::FilePath)]
    input: Option<PathBuf>,
    /// Print shell completions or the man page and exit, e.g.
    /// `hackdiff --generate man > /usr/local/share/man/man1/hackdiff.1`
    #[arg(long, value_enum, value_name = "WHAT", exclusive = true)]
    generate: Option<generate::GenerateArg>,
}

fn main() -> ExitCode {
    generate::helper_main("hackdiff", |_| Voice::Helper, |a: &Args| a.generate, run)
}

fn run(args: Args) -> anyhow::Result<()> {
    let rows = match args.input {
        Some(path) if path.as_os_str() != "-" => {
            // A regular file only, opened without blocking: a FIFO would wait for a writer
            // and a device would never end (docs/security.md).
            let file = fsio::open_regular(&path, Links::Follow).with_context(|| format!("opening {path:?}"))?;
            let text = fsio::read_capped(file, INPUT_CAP).with_context(|| format!("reading {path:?}"))?;
            hackdiff::parse(&text[..]).with_context(|| format!("{path:?}"))?
        }
        _ => {
            let text = fsio::read_capped(io::stdin().lock(), INPUT_CAP).context("reading standard input")?;
            hackdiff::parse(&text[..])?
        }
    };
    hackdiff::render(&rows, io::stdout().lock())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_is_well_formed() {
        generate::assert_documented(Args::command());
        assert_eq!(Args::try_parse_from(["hackdiff"]).unwrap().input, None);
        let args = Args::try_parse_from(["hackdiff", "series.txt"]).unwrap();
        assert_eq!(args.input, Some(PathBuf::from("series.txt")));
        assert!(Args::try_parse_from(["hackdiff", "a", "b"]).is_err());
        let args = Args::try_parse_from(["hackdiff", "--generate", "fish"]).unwrap();
        assert_eq!((args.generate, args.input), (Some(generate::GenerateArg::Fish), None));
        assert!(Args::try_parse_from(["hackdiff", "series.txt", "--generate", "fish"]).is_err());
    }
}
