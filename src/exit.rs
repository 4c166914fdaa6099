//! How every command ends: errors printed with their causes, a fixed exit status, and a
//! quiet exit on a closed pipe (`upcmp … | head`).

use std::process::ExitCode;

/// Exit status for bad input (a missing, malformed or foreign file or directory).
pub const EXIT_BAD_INPUT: u8 = 2;
/// Exit status of a run stopped by SIGINT or SIGTERM.
pub const EXIT_INTERRUPTED: u8 = 130;
/// Exit status of the helpers (runmany, hackdiff, feat) on any error, as their originals.
pub const EXIT_FAILURE: u8 = 1;

/// How a command words its errors on standard error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Voice {
    /// `prog: error: message` (the suite's own commands).
    Tool,
    /// `prog: message`, as the original helper scripts printed.
    Helper,
    /// The message alone: whole sentences or a usage text that stands by itself.
    Plain,
}

/// Whether an error chain ends in a broken pipe.
pub fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// Runs a command's body: on failure prints the error with every cause in the voice
/// `voice` picks for it and returns `code`; a broken pipe exits 0 without a word.
pub fn run_as(
    prog: &str,
    code: u8,
    voice: impl Fn(&anyhow::Error) -> Voice,
    body: impl FnOnce() -> anyhow::Result<ExitCode>,
) -> ExitCode {
    match body() {
        Ok(c) => c,
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            match voice(&e) {
                Voice::Tool => eprintln!("{prog}: error: {e:#}"),
                Voice::Helper => eprintln!("{prog}: {e:#}"),
                Voice::Plain => eprintln!("{e:#}"),
            }
            ExitCode::from(code)
        }
    }
}

/// [`run_as`] in the suite's own voice.
pub fn run(prog: &str, code: u8, body: impl FnOnce() -> anyhow::Result<ExitCode>) -> ExitCode {
    run_as(prog, code, |_| Voice::Tool, body)
}
