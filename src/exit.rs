//! How every command ends: errors printed with their causes, a fixed exit status, and a
//! quiet exit on a closed pipe (`upcmp … | head`).

use std::process::ExitCode;

/// Exit status for bad input (a missing, malformed or foreign file or directory).
pub const EXIT_BAD_INPUT: u8 = 2;
/// Exit status of `upcmp --fail-if-worse` (and prfcmp's) when a value is worse beyond the
/// limit and significant.
pub const EXIT_WORSE: u8 = 1;
/// Exit status of `--fail-if-worse` when nothing is worse but something could not be
/// compared (a test on one side only, different benchmarks, a value with no test): what
/// `git bisect run` takes for "cannot test this commit" (skip), never "good".
pub const EXIT_CANNOT_TEST: u8 = 125;
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
            // A message may quote a name or a line of someone else's file.
            let message = message(&e);
            let text = crate::model::shown::escaped_text(&message);
            match voice(&e) {
                Voice::Tool => eprintln!("{prog}: error: {text}"),
                Voice::Helper => eprintln!("{prog}: {text}"),
                Voice::Plain => eprintln!("{text}"),
            }
            ExitCode::from(code)
        }
    }
}

/// An error with its causes, `: `-separated as anyhow's `{:#}`, but each cause once: an
/// error whose message already ends with its cause's (`{path}: {source}`) is not
/// followed by that cause again.
pub fn message(e: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in e.chain() {
        let c = cause.to_string();
        if text.is_empty() {
            text = c;
        } else if !text.ends_with(&c) {
            text.push_str(": ");
            text.push_str(&c);
        }
    }
    text
}

/// [`run_as`] in the suite's own voice.
pub fn run(prog: &str, code: u8, body: impl FnOnce() -> anyhow::Result<ExitCode>) -> ExitCode {
    run_as(prog, code, |_| Voice::Tool, body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("{path}: {source}")]
    struct WithSource {
        path: String,
        source: std::io::Error,
    }

    // An error that prints its cause is not followed by it again; other causes are.
    #[test]
    fn each_cause_is_printed_once() {
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "no such directory");
        let e = anyhow::Error::new(WithSource {
            path: "before.data".into(),
            source: io,
        })
        .context("reading run 1");
        assert_eq!(message(&e), "reading run 1: before.data: no such directory");
        let e = anyhow::anyhow!("inner").context("outer");
        assert_eq!(message(&e), "outer: inner");
    }
}
