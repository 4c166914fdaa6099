//! How every command ends: errors printed with their causes, a fixed exit status, and a
//! quiet exit on a closed pipe (`upcmp … | head`).

use std::process::ExitCode;

/// Exit status for bad input (a missing, malformed or foreign file or directory).
pub const EXIT_BAD_INPUT: u8 = 2;
/// Exit status of a run stopped by SIGINT or SIGTERM.
pub const EXIT_INTERRUPTED: u8 = 130;

/// Whether an error chain ends in a broken pipe.
pub fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// Runs a command's body: prints `prog: error: …` with every cause on failure and
/// returns `code`; a broken pipe exits 0 without a word.
pub fn run(prog: &str, code: u8, body: impl FnOnce() -> anyhow::Result<ExitCode>) -> ExitCode {
    match body() {
        Ok(c) => c,
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{prog}: error: {e:#}");
            ExitCode::from(code)
        }
    }
}
