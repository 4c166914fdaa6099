//! `--generate`: shell completions and man pages from each command's clap definition.
//! Every command has it, so it is built once, in the library.

use clap::ValueEnum;
use std::io::Write;

/// `--generate`: what to print instead of running.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum GenerateArg {
    /// Bash completions.
    Bash,
    /// Zsh completions.
    Zsh,
    /// Fish completions.
    Fish,
    /// A man page (roff).
    Man,
}

/// Parses the command line of `A`; when `--generate` (read by `generate_of`) asks for
/// completions or the man page, prints them and returns `None`: the command has nothing
/// more to do.
pub fn parse_or_generate<A: clap::Parser>(generate_of: fn(&A) -> Option<GenerateArg>) -> anyhow::Result<Option<A>> {
    let a = A::parse();
    match generate_of(&a) {
        Some(what) => generate(what, A::command()).map(|()| None),
        None => Ok(Some(a)),
    }
}

/// The `main` of a helper command (feat, hackdiff, runmany): parses the command line of
/// `A` (or prints what `--generate` asks for), runs `body`, and exits as `run_as` does,
/// with 1 on failure.
pub fn helper_main<A: clap::Parser>(
    prog: &str,
    voice: impl Fn(&anyhow::Error) -> crate::exit::Voice,
    generate_of: fn(&A) -> Option<GenerateArg>,
    body: fn(A) -> anyhow::Result<()>,
) -> std::process::ExitCode {
    use std::process::ExitCode;
    crate::exit::run_as(prog, crate::exit::EXIT_FAILURE, voice, || {
        let Some(args) = parse_or_generate::<A>(generate_of)? else {
            return Ok(ExitCode::SUCCESS);
        };
        body(args).map(|()| ExitCode::SUCCESS)
    })
}

/// Prints the completions or man page of `cmd` to standard output.
pub fn generate(what: GenerateArg, mut cmd: clap::Command) -> anyhow::Result<()> {
    let name = cmd.get_name().to_string();
    // Rendered whole first: clap's generators panic on a failed write, a closed pipe included;
    // a write error here is the caller's (a broken pipe exits 0).
    let mut out = Vec::new();
    match what {
        GenerateArg::Bash => clap_complete::generate(clap_complete::Shell::Bash, &mut cmd, name, &mut out),
        GenerateArg::Zsh => clap_complete::generate(clap_complete::Shell::Zsh, &mut cmd, name, &mut out),
        GenerateArg::Fish => clap_complete::generate(clap_complete::Shell::Fish, &mut cmd, name, &mut out),
        GenerateArg::Man => man_page(cmd, &mut out)?,
    }
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(&out)?;
    stdout.flush()?;
    Ok(())
}

/// clap's man page, with the examples of `--help` (its after-help) kept line for line under
/// EXAMPLES instead of filled into a paragraph.
fn man_page(cmd: clap::Command, out: &mut Vec<u8>) -> std::io::Result<()> {
    let after = cmd
        .get_after_long_help()
        .or(cmd.get_after_help())
        .map(|h| h.to_string());
    let man = clap_mangen::Man::new(cmd);
    man.render_title(out)?;
    man.render_name_section(out)?;
    man.render_synopsis_section(out)?;
    man.render_description_section(out)?;
    man.render_options_section(out)?;
    if let Some(after) = after {
        out.write_all(b".SH EXAMPLES\n.nf\n")?;
        for line in after.strip_prefix("Examples:\n").unwrap_or(&after).lines() {
            // Escaped for roff: backslashes, dashes, and a control character at the start.
            let line = line.replace('\\', "\\e").replace('-', "\\-");
            let guard = if line.starts_with(['.', '\'']) { "\\&" } else { "" };
            writeln!(out, "{guard}{line}")?;
        }
        out.write_all(b".fi\n")?;
    }
    man.render_version_section(out)
}

/// Asserts that `cmd` is well formed (clap's own checks) and that `--help` explains
/// every argument and shows examples (each command's unit tests call this).
pub fn assert_documented(mut cmd: clap::Command) {
    cmd.clone().debug_assert();
    cmd.build();
    let name = cmd.get_name().to_string();
    for arg in cmd.get_arguments() {
        let help = arg.get_help().or(arg.get_long_help()).map(|h| h.to_string());
        assert!(
            help.is_some_and(|h| !h.trim().is_empty()),
            "{name}: argument {} has no help line",
            arg.get_id()
        );
    }
    let after = cmd
        .get_after_long_help()
        .or(cmd.get_after_help())
        .map(|h| h.to_string());
    assert!(
        after.is_some_and(|h| h.contains("Examples:\n")),
        "{name}: --help shows no Examples section"
    );
}
