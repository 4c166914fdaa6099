//! Preparing a repetition: the `--pre` command, run untimed and unprofiled.

use super::group::TestGroup;
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

/// Runs `cmd` with /bin/sh in the test's `group`; its output goes to `log`.
pub fn run_pre(cmd: &str, log: &File, group: &TestGroup) -> Result<(), PreError> {
    let out = log.try_clone().map_err(PreError::Spawn)?;
    let err = log.try_clone().map_err(PreError::Spawn)?;
    let mut sh = Command::new("/bin/sh");
    sh.args(["-c", cmd]).stdin(Stdio::null()).stdout(out).stderr(err);
    group.prepare(&mut sh);
    let status = sh.status().map_err(PreError::Spawn)?;
    if status.success() {
        Ok(())
    } else {
        Err(PreError::Failed {
            command: cmd.to_string(),
            status,
        })
    }
}
