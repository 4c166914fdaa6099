//! `uprun VMLINUX OUTDIR [PARALLELISM]`: run the test list while sampling every CPU.

use clap::{Parser, ValueEnum};
use std::path::PathBuf;
use std::process::ExitCode;
use upcmp::collect::profile::UserBy;
use upcmp::collect::run::{install_signal_handlers, uprun, UprunOptions};
use upcmp::collect::sampler::EventChoice;
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
    /// all user time is one function, `user`
    Single,
    /// one function per command, `user:COMM`
    Comm,
}

/// Run each test named in ./test_list while sampling the program counter on every CPU,
/// and write one directory per test into OUTDIR (compare two such runs with upcmp).
#[derive(Parser, Debug)]
#[command(
    name = "uprun",
    version,
    after_help = "Examples:\n  uprun auto before                 # ./test_list, or the built-in list\n  uprun /boot/vmlinux-6.8 after 2   # two copies of each test at once\n  uprun auto run1 --test-list my_tests --freq 4000\n\nA test_list line is a unixperf test with options ('forkwait -loop 10000') or any\ncommand as 'NAME: command args' ('hb: hackbench 4 process 1000'). See docs/format.md."
)]
struct Args {
    /// The running kernel's ELF image for symbols, or `auto`: look in /boot,
    /// /usr/lib/debug/boot and /lib/modules/RELEASE/build, else use /proc/kallsyms.
    vmlinux: String,
    /// Output directory. An existing one (written by uprun) becomes OUTDIR.old; any
    /// other existing directory is refused.
    outdir: PathBuf,
    /// Copies of each test to run at once (e.g. the number of CPUs).
    #[arg(default_value_t = 1)]
    parallelism: u32,
    /// The test list to run instead of ./test_list, e.g. --test-list lists/syscalls.
    #[arg(long, value_name = "FILE")]
    test_list: Option<PathBuf>,
    /// Samples per second on each CPU, e.g. --freq 4000.
    #[arg(long, default_value_t = 1000, value_name = "HZ", value_parser = clap::value_parser!(u64).range(1..=100_000))]
    freq: u64,
    /// The sampled event.
    #[arg(long, value_enum, default_value_t = Event::Auto)]
    event: Event,
    /// Idle functions (comma-separated), replacing the Linux default set, e.g.
    /// --idle-symbols do_idle,default_idle.
    #[arg(long, value_name = "LIST")]
    idle_symbols: Option<String>,
    /// How to name user-mode time: `single` (one `user` line) or `comm` (one per command).
    #[arg(long, value_enum, default_value_t = UserNaming::Single)]
    user_by: UserNaming,
    /// Use VMLINUX even when its build-id differs from the running kernel's.
    #[arg(long)]
    force_vmlinux: bool,
    /// The unixperf program (default: next to uprun, else on PATH).
    #[arg(long, value_name = "PATH")]
    unixperf: Option<PathBuf>,
    /// Run and profile each test N times, keeping each repetition (TEST/r1, TEST/r2, ...),
    /// so upcmp can tell changes from noise, e.g. --runs 5.
    #[arg(long, default_value_t = 1, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1000))]
    runs: u32,
    /// A command to run before each repetition, not timed and not profiled, e.g.
    /// --pre 'rm -rf /tmp/build && cp -a src /tmp/build'.
    #[arg(long, value_name = "CMD")]
    pre: Option<String>,
    /// Sync and drop the page cache before each repetition (needs root).
    #[arg(long)]
    drop_caches: bool,
    /// Set a scheduler feature for the run and restore it afterwards (also on Ctrl-C);
    /// repeatable, e.g. --feat NO_TTWU_QUEUE.
    #[arg(long = "feat", value_name = "FEATURE")]
    features: Vec<String>,
    /// Set this cpufreq governor on every CPU for the run and restore the previous ones
    /// afterwards, e.g. --set-governor performance.
    #[arg(long, value_name = "GOVERNOR")]
    set_governor: Option<String>,
}

fn main() -> ExitCode {
    run("uprun", EXIT_BAD_INPUT, || {
        let a = Args::parse();
        let mut o = UprunOptions::new(a.vmlinux.clone(), a.outdir.clone());
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
        o.user_by = match a.user_by {
            UserNaming::Single => UserBy::Single,
            UserNaming::Comm => UserBy::Comm,
        };
        o.force_vmlinux = a.force_vmlinux;
        o.unixperf = a.unixperf.clone();
        o.runs = a.runs;
        o.pre = a.pre.clone();
        o.drop_caches = a.drop_caches;
        o.features = a.features.clone();
        o.set_governor = a.set_governor.clone();
        o.command_line = std::env::args().collect::<Vec<_>>().join(" ");
        install_signal_handlers();
        let outcome = uprun(&o, &mut std::io::stdout())?;
        if outcome.status == Status::Interrupted {
            eprintln!(
                "uprun: interrupted; what ran is kept in {} (marked interrupted)",
                a.outdir.display()
            );
            return Ok(ExitCode::from(EXIT_INTERRUPTED));
        }
        if !outcome.failed.is_empty() {
            eprintln!(
                "uprun: {} of {} tests exited non-zero: {} (output kept in their upout)",
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
        let a = Args::parse_from(["uprun", "auto", "out", "2", "--freq", "500", "--user-by", "comm"]);
        assert_eq!(a.parallelism, 2);
        assert_eq!(a.freq, 500);
        assert!(Args::try_parse_from(["uprun", "auto", "out", "--freq", "0"]).is_err());
    }
}
