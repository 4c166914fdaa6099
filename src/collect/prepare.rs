//! Preparing a repetition: the `--pre` command, run untimed and unprofiled.

use std::fs::File;
use std::process::{Command, ExitStatus, Stdio};

/// Why the preparation command failed.
#[derive(Debug, thiserror::Error)]
pub enum PreError {
    /// /bin/sh could not start (or its output file could not be shared).
    #[error("cannot run the preparation command with /bin/sh: {0}")]
    Spawn(#[source] std::io::Error),
    /// It ran and failed.
    #[error("the preparation command '{command}' failed ({status})")]
    Failed {
        /// The command.
        command: String,
        /// How it ended.
        status: ExitStatus,
    },
}

/// Runs `cmd` with /bin/sh; its output goes to `log`.
pub fn run_pre(cmd: &str, log: &File) -> Result<(), PreError> {
    let out = log.try_clone().map_err(PreError::Spawn)?;
    let err = log.try_clone().map_err(PreError::Spawn)?;
    let status = Command::new("/bin/sh")
        .args(["-c", cmd])
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .status()
        .map_err(PreError::Spawn)?;
    if status.success() {
        Ok(())
    } else {
        Err(PreError::Failed {
            command: cmd.to_string(),
            status,
        })
    }
}
