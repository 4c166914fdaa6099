//! `prfcmp PROFILE1 PROFILE2 [cutoff%]`: compare two profiles.

use clap::Parser;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use upcmp::compare::{compare_profiles, resolve_cutoff, CompareOptions, IdleSet};
use upcmp::exit::{run, EXIT_BAD_INPUT};
use upcmp::report::text::render_profile;
use upcmp::store::prfout;

/// Compare two profiles: the Profiling Summary (elapsed, idle, CPU time) and the CPU
/// Time Analysis (functions sorted by their change).
#[derive(Parser, Debug)]
#[command(
    name = "prfcmp",
    version,
    after_help = "Examples:\n  prfcmp run1/forkwait/prfout run2/forkwait/prfout\n  prfcmp run1/forkwait run2/forkwait 1     # a test directory stands for its prfout"
)]
struct Args {
    /// The first profile: a prfout file, or a test directory that holds one.
    profile1: PathBuf,
    /// The second profile.
    profile2: PathBuf,
    /// List a function when its time is at least this % of its run's CPU time in either
    /// run (same as --cutoff; default 0.5).
    cutoff_pct: Option<f64>,
    /// The cutoff, as an option: e.g. --cutoff 1.
    #[arg(long = "cutoff", value_name = "PCT")]
    cutoff_opt: Option<f64>,
    /// Replace the profiles' idle sets with these functions (comma-separated).
    #[arg(long, value_name = "LIST")]
    idle_symbols: Option<String>,
    /// List only the functions whose change is beyond the noise (significant at 95%);
    /// results.csv and results.json keep every function with its statistics.
    #[arg(long)]
    hide_noise: bool,
}

fn prfout_path(p: &Path) -> PathBuf {
    if p.is_dir() {
        p.join("prfout")
    } else {
        p.to_path_buf()
    }
}

fn main() -> ExitCode {
    run("prfcmp", EXIT_BAD_INPUT, || {
        let a = Args::parse();
        let cutoff = resolve_cutoff(a.cutoff_pct, a.cutoff_opt).map_err(anyhow::Error::msg)?;
        let p1 = prfout::read(&prfout_path(&a.profile1))?;
        let p2 = prfout::read(&prfout_path(&a.profile2))?;
        let mut opts = CompareOptions::new(cutoff, a.idle_symbols.as_deref().map(IdleSet::parse_list));
        opts.hide_noise = a.hide_noise;
        let cmp = compare_profiles(&p1, &p2, &opts)?;
        let mut out = Vec::new();
        render_profile(&cmp, &mut out)?;
        std::io::stdout().write_all(&out)?;
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
        let a = Args::parse_from(["prfcmp", "a", "b", "--cutoff", "1", "--idle-symbols", "x,y"]);
        assert_eq!(a.cutoff_opt, Some(1.0));
        assert_eq!(a.idle_symbols.as_deref(), Some("x,y"));
    }
}
