//! `upsrun VMLINUX OUTDIR [PARALLELISM]`: uprun with call stacks, and a gprof-style
//! analysis, folded stacks and a flame graph per test.

use clap::{Parser, ValueEnum};
use std::path::PathBuf;
use std::process::ExitCode;
use upcmp::collect::profile::UserBy;
use upcmp::collect::run::{install_signal_handlers, uprun, UprunOptions};
use upcmp::collect::sampler::EventChoice;
use upcmp::collect::stacks::kernel_max_stack;
use upcmp::collect::upsrun::analyse_dir;
use upcmp::compare::IdleSet;
use upcmp::exit::{run, EXIT_BAD_INPUT, EXIT_INTERRUPTED};
use upcmp::store::outdir::Status;

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Event {
    /// cycles where the machine counts them, else cpu-clock
    Auto,
    /// the software timer (works in VMs)
    CpuClock,
    /// the hardware cycle counter
    Cycles,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum UserNaming {
    /// all user space is one node, `user`
    Single,
    /// one node per command, `user:COMM`
    Comm,
}

/// Run each test named in ./test_list as uprun does, sampling call stacks on every CPU,
/// and write per test prof.out (gprof-style), stacks.folded and flame.svg. Compare two
/// such runs with upcmp: it adds differential flame graphs and a caller/callee table.
#[derive(Parser, Debug)]
#[command(
    name = "upsrun",
    version,
    after_help = "Examples:\n  upsrun auto before                # ./test_list, or the built-in list\n  upsrun auto after 2 --user-by comm\n  upsrun --analyse before/getpid    # redo one test's analysis from its samples.gz\n\nStack policy (kernel frames, user space as one node, the depth limit): docs/upsrun.md."
)]
struct Args {
    /// The running kernel's ELF image for symbols, or `auto` (see uprun --help).
    #[arg(required_unless_present = "analyse")]
    vmlinux: Option<String>,
    /// Output directory. An existing one (written by uprun or upsrun) becomes OUTDIR.old.
    #[arg(required_unless_present = "analyse")]
    outdir: Option<PathBuf>,
    /// Copies of each test to run at once.
    #[arg(default_value_t = 1)]
    parallelism: u32,
    /// The test list to run instead of ./test_list.
    #[arg(long, value_name = "FILE")]
    test_list: Option<PathBuf>,
    /// Samples per second on each CPU.
    #[arg(long, default_value_t = 1000, value_name = "HZ", value_parser = clap::value_parser!(u64).range(1..=100_000))]
    freq: u64,
    /// The sampled event.
    #[arg(long, value_enum, default_value_t = Event::Auto)]
    event: Event,
    /// Idle functions (comma-separated), replacing the Linux default set.
    #[arg(long, value_name = "LIST")]
    idle_symbols: Option<String>,
    /// How to name user space: `single` (one `user` node) or `comm` (`user:COMM`).
    #[arg(long, value_enum, default_value_t = UserNaming::Single)]
    user_by: UserNaming,
    /// Use VMLINUX even when its build-id differs from the running kernel's.
    #[arg(long)]
    force_vmlinux: bool,
    /// The unixperf program (default: next to upsrun, else on PATH).
    #[arg(long, value_name = "PATH")]
    unixperf: Option<PathBuf>,
    /// Only (re)write prof.out, stacks.folded and flame.svg of the test directory
    /// RUN/TEST from its samples.gz and RUN/kallsyms.gz; nothing is sampled.
    #[arg(long, value_name = "RUN/TEST", conflicts_with_all = ["vmlinux", "outdir"])]
    analyse: Option<PathBuf>,
}

fn main() -> ExitCode {
    run("upsrun", EXIT_BAD_INPUT, || {
        let a = Args::parse();
        let user_by = match a.user_by {
            UserNaming::Single => UserBy::Single,
            UserNaming::Comm => UserBy::Comm,
        };
        if let Some(dir) = &a.analyse {
            for w in analyse_dir(dir, user_by, kernel_max_stack())? {
                eprintln!("upsrun: warning: {w}");
            }
            eprintln!(
                "upsrun: wrote prof.out, stacks.folded and flame.svg in {}",
                dir.display()
            );
            return Ok(ExitCode::SUCCESS);
        }
        let outdir = a.outdir.clone().expect("required by clap");
        let mut o = UprunOptions::new(a.vmlinux.clone().expect("required by clap"), outdir.clone());
        o.stacks = true;
        o.parallelism = a.parallelism;
        o.test_list = a.test_list.clone();
        o.sampler.frequency_hz = a.freq;
        o.sampler.event = match a.event {
            Event::Auto => EventChoice::Auto,
            Event::CpuClock => EventChoice::CpuClock,
            Event::Cycles => EventChoice::Cycles,
        };
        if let Some(list) = &a.idle_symbols {
            o.idle = IdleSet::parse_list(list);
        }
        o.user_by = user_by;
        o.force_vmlinux = a.force_vmlinux;
        o.unixperf = a.unixperf.clone();
        o.command_line = std::env::args().collect::<Vec<_>>().join(" ");
        install_signal_handlers();
        let outcome = uprun(&o, &mut std::io::stdout())?;
        if outcome.status == Status::Interrupted {
            eprintln!(
                "upsrun: interrupted; what ran is kept in {} (marked interrupted)",
                outdir.display()
            );
            return Ok(ExitCode::from(EXIT_INTERRUPTED));
        }
        if !outcome.failed.is_empty() {
            eprintln!(
                "upsrun: {} of {} tests exited non-zero: {} (output kept in their upout)",
                outcome.failed.len(),
                outcome.ran,
                outcome.failed.join(", ")
            );
            return Ok(ExitCode::from(1));
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
        Args::command().debug_assert();
        let a = Args::parse_from(["upsrun", "auto", "out", "2", "--user-by", "comm"]);
        assert_eq!(
            (a.parallelism, a.outdir.as_deref()),
            (2, Some(std::path::Path::new("out")))
        );
        let a = Args::parse_from(["upsrun", "--analyse", "out/getpid"]);
        assert!(a.analyse.is_some() && a.vmlinux.is_none());
        assert!(Args::try_parse_from(["upsrun", "auto"]).is_err(), "OUTDIR is required");
    }
}
