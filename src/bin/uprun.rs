//! `uprun VMLINUX OUTDIR [PARALLELISM]`: run the test list while sampling every CPU.

use upcmp::cli::generate;
use upcmp::cli::run as run_cli;

use clap::Parser;
use run_cli::{finish, with_option, RunArgs};
use std::path::PathBuf;
use std::process::ExitCode;
use upcmp::app::uprun::{install_signal_handlers, uprun};
use upcmp::exit::{run, EXIT_BAD_INPUT};

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
    #[arg(required_unless_present = "generate")]
    vmlinux: Option<String>,
    /// Output directory. An existing one (written by uprun) becomes OUTDIR.old; any
    /// other existing directory is refused.
    #[arg(required_unless_present = "generate")]
    outdir: Option<PathBuf>,
    /// Copies of each test to run at once (e.g. the number of CPUs).
    #[arg(default_value_t = 1)]
    parallelism: u32,
    #[command(flatten)]
    run: RunArgs,
    /// Print shell completions or the man page and exit, e.g.
    /// `uprun --generate bash > /usr/share/bash-completion/completions/uprun`.
    #[arg(long, value_enum, value_name = "WHAT", exclusive = true)]
    generate: Option<generate::GenerateArg>,
}

fn main() -> ExitCode {
    run("uprun", EXIT_BAD_INPUT, || {
        let Some(a) = generate::parse_or_generate::<Args>(|a| a.generate)? else {
            return Ok(ExitCode::SUCCESS);
        };
        let (Some(vmlinux), Some(outdir)) = (a.vmlinux.as_deref(), a.outdir.clone()) else {
            unreachable!("clap requires VMLINUX and OUTDIR without --generate");
        };
        let o = a.run.options(vmlinux, outdir.clone(), a.parallelism);
        install_signal_handlers();
        let outcome = uprun(&o, &mut std::io::stdout()).map_err(with_option)?;
        Ok(finish("uprun", &outcome, &outdir))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_is_consistent() {
        generate::assert_documented(Args::command());
        let a = Args::parse_from(["uprun", "auto", "out", "2", "--freq", "500", "--user-by", "comm"]);
        assert_eq!(a.parallelism, 2);
        assert_eq!(a.run.freq, 500);
        let a = Args::parse_from(["uprun", "auto", "out", "--runs", "3", "--feat", "A", "--feat", "B"]);
        assert_eq!((a.run.runs, a.run.features.len()), (3, 2));
        assert!(Args::try_parse_from(["uprun", "auto", "out", "--freq", "0"]).is_err());
        assert!(Args::try_parse_from(["uprun", "auto"]).is_err(), "OUTDIR is required");
        assert!(Args::try_parse_from(["uprun", "--generate", "zsh"])
            .unwrap()
            .generate
            .is_some());
    }
}
