//! `upsrun VMLINUX OUTDIR [PARALLELISM]`: uprun with call stacks, and a gprof-style
//! analysis, folded stacks and a flame graph per test.

use upcmp::cli::generate;
use upcmp::cli::run as run_cli;

use clap::Parser;
use run_cli::{finish, with_option, RunArgs};
use std::path::PathBuf;
use std::process::ExitCode;
use upcmp::analyse::stacks::analyse_dir;
use upcmp::app::uprun::{install_signal_handlers, uprun};
use upcmp::exit::{run, EXIT_BAD_INPUT};
use upcmp::host::kernel_max_stack;

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
    #[arg(required_unless_present_any = ["analyse", "generate"])]
    vmlinux: Option<String>,
    /// Output directory. An existing one (written by uprun or upsrun) becomes OUTDIR.old.
    #[arg(required_unless_present_any = ["analyse", "generate"])]
    outdir: Option<PathBuf>,
    /// Copies of each test to run at once.
    #[arg(default_value_t = 1)]
    parallelism: u32,
    #[command(flatten)]
    run: RunArgs,
    /// Only (re)write prof.out, stacks.folded and flame.svg of the test directory
    /// RUN/TEST from its samples.gz and RUN/kallsyms.gz; nothing is sampled.
    #[arg(long, value_name = "RUN/TEST", conflicts_with_all = ["vmlinux", "outdir"])]
    analyse: Option<PathBuf>,
    /// Print shell completions or the man page and exit, e.g. `upsrun --generate man`.
    #[arg(long, value_enum, value_name = "WHAT", exclusive = true)]
    generate: Option<generate::GenerateArg>,
}

fn main() -> ExitCode {
    run("upsrun", EXIT_BAD_INPUT, || {
        let Some(a) = generate::parse_or_generate::<Args>(|a| a.generate)? else {
            return Ok(ExitCode::SUCCESS);
        };
        let user_by = a.run.user_by.user_by();
        if let Some(dir) = &a.analyse {
            for w in analyse_dir(dir, user_by, kernel_max_stack(), a.run.allow_foreign_run)? {
                eprintln!("upsrun: warning: {}", upcmp::model::Shown(&w));
            }
            eprintln!(
                "upsrun: wrote prof.out, stacks.folded and flame.svg in {}",
                dir.display()
            );
            return Ok(ExitCode::SUCCESS);
        }
        let outdir = a.outdir.clone().expect("required by clap");
        let mut o = a.run.options(
            a.vmlinux.as_deref().expect("required by clap"),
            outdir.clone(),
            a.parallelism,
        );
        o.stacks = true;
        install_signal_handlers();
        let outcome = uprun(&o, &mut std::io::stdout()).map_err(with_option)?;
        Ok(finish("upsrun", &outcome, &outdir))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_is_consistent() {
        generate::assert_documented(Args::command());
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
