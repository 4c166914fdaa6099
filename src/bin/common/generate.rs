//! `--generate`: shell completions and man pages from each command's clap definition.
//! Included with `#[path]` by every command that has it.

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

/// Prints the completions or man page of `cmd` to standard output.
pub fn generate(what: GenerateArg, mut cmd: clap::Command) -> anyhow::Result<()> {
    let name = cmd.get_name().to_string();
    let mut out = std::io::stdout().lock();
    match what {
        GenerateArg::Bash => clap_complete::generate(clap_complete::Shell::Bash, &mut cmd, name, &mut out),
        GenerateArg::Zsh => clap_complete::generate(clap_complete::Shell::Zsh, &mut cmd, name, &mut out),
        GenerateArg::Fish => clap_complete::generate(clap_complete::Shell::Fish, &mut cmd, name, &mut out),
        GenerateArg::Man => clap_mangen::Man::new(cmd).render(&mut out)?,
    }
    out.flush()?;
    Ok(())
}
