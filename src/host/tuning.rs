//! The settings a run may change for its duration and puts back: cpufreq governors, and
//! the page cache dropped before a repetition. (Scheduler features: [`super::sched_features`].)

use super::{governor_path, online_cpus, read_trim};
use std::path::{Path, PathBuf};

/// Where the kernel takes the order to drop its caches.
pub const DROP_CACHES: &str = "/proc/sys/vm/drop_caches";

/// Why a machine setting could not be changed.
#[derive(Debug, thiserror::Error)]
pub enum TuningError {
    /// A sysfs or procfs file could not be written.
    #[error("writing {}: {source}{hint}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// The kernel's answer.
        source: std::io::Error,
        /// What may help.
        hint: &'static str,
    },
    /// No CPU has a cpufreq governor.
    #[error(
        "cannot set the cpufreq governor to {governor}: this machine has no cpufreq governors \
         ({path} does not exist; typical of a VM), so there is nothing to set"
    )]
    NoCpufreq {
        /// The governor asked for.
        governor: String,
        /// The file looked for.
        path: String,
    },
}

fn needs_root(e: &std::io::Error) -> &'static str {
    match e.kind() {
        std::io::ErrorKind::PermissionDenied => " (it needs root)",
        _ => "",
    }
}

/// Checks, without changing anything, that the caches can be dropped (the file opens for
/// writing), so a run can refuse before it starts.
pub fn check_drop_caches() -> Result<(), TuningError> {
    crate::fsio::open_kernel_file(Path::new(DROP_CACHES))
        .map(drop)
        .map_err(|source| TuningError::Write {
            path: DROP_CACHES.into(),
            hint: needs_root(&source),
            source,
        })
}

/// Flushes dirty data and drops the page cache, dentries and inodes.
pub fn drop_caches() -> Result<(), TuningError> {
    // SAFETY: sync has no preconditions.
    unsafe { libc::sync() };
    crate::fsio::write_kernel_file(Path::new(DROP_CACHES), b"3\n").map_err(|source| TuningError::Write {
        path: DROP_CACHES.into(),
        hint: needs_root(&source),
        source,
    })
}

/// The governors in force before [`set_governor`], to put back afterwards.
#[derive(Debug)]
pub struct GovernorRestore {
    previous: Vec<(u32, String)>,
}

/// Sets `governor` on every online CPU; refuses clearly where there is no cpufreq.
pub fn set_governor(governor: &str) -> Result<GovernorRestore, TuningError> {
    let previous: Vec<(u32, String)> = online_cpus()
        .into_iter()
        .filter_map(|cpu| read_trim(governor_path(cpu)).map(|g| (cpu, g)))
        .collect();
    if previous.is_empty() {
        return Err(TuningError::NoCpufreq {
            governor: governor.to_string(),
            path: governor_path(0),
        });
    }
    let restore = GovernorRestore { previous };
    for (cpu, _) in &restore.previous {
        if let Err(source) = crate::fsio::write_kernel_file(Path::new(&governor_path(*cpu)), governor.as_bytes()) {
            restore.restore();
            return Err(TuningError::Write {
                path: governor_path(*cpu).into(),
                hint: needs_root(&source),
                source,
            });
        }
    }
    Ok(restore)
}

impl GovernorRestore {
    /// Puts the previous governors back.
    pub fn restore(&self) {
        for (cpu, g) in &self.previous {
            let _ = crate::fsio::write_kernel_file(Path::new(&governor_path(*cpu)), g.as_bytes());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_cpufreq_is_said_clearly() {
        if std::path::Path::new(&governor_path(0)).exists() {
            return;
        }
        let e = set_governor("performance").unwrap_err().to_string();
        assert!(e.contains("has no cpufreq governors"), "{e}");
    }
}
