//! `feat`: list or toggle scheduler features through debugfs.
//!
//! The kernel lists the features in `<debugfs>/sched/features` (older kernels:
//! `<debugfs>/sched_features`) as one line of space-separated names, a disabled
//! one prefixed `NO_`. Writing `X` enables feature X, writing `NO_X` disables
//! it, one name per write. The debugfs root is a parameter so that tests (and
//! unusual mounts) can point the code at another directory.
//!
//! [`set_features`] returns a [`Restore`] holding the previous states, so that a
//! measurement run can put the machine back as it found it.

use super::is_root;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Where debugfs is normally mounted.
pub const DEFAULT_DEBUGFS: &str = "/sys/kernel/debug";

/// The features file below the debugfs root, newest layout first.
const FEATURE_FILES: [&str; 2] = ["sched/features", "sched_features"];

/// One scheduler feature and whether it is on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Feature {
    /// Its name, without `NO_`, e.g. `TTWU_QUEUE`.
    pub name: String,
    /// Whether it is enabled.
    pub enabled: bool,
}

impl Feature {
    /// Reads one word of the features file or of the command line:
    /// `TTWU_QUEUE` is enabled, `NO_TTWU_QUEUE` disabled.
    pub fn parse(word: &str) -> Feature {
        match word.strip_prefix("NO_") {
            Some(name) => Feature {
                name: name.to_string(),
                enabled: false,
            },
            None => Feature {
                name: word.to_string(),
                enabled: true,
            },
        }
    }
}

impl fmt::Display for Feature {
    /// The word the kernel reads and writes: `X` or `NO_X`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.enabled {
            write!(f, "{}", self.name)
        } else {
            write!(f, "NO_{}", self.name)
        }
    }
}

/// Reading or writing the features file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Opening or reading it.
    Read,
    /// Opening it for writing or writing to it.
    Write,
}

impl Access {
    fn verb(self) -> &'static str {
        match self {
            Access::Read => "reading",
            Access::Write => "writing",
        }
    }

    fn capitalized(self) -> &'static str {
        match self {
            Access::Read => "Reading",
            Access::Write => "Writing",
        }
    }

    fn outcome(self) -> &'static str {
        match self {
            Access::Read => "read",
            Access::Write => "changed",
        }
    }
}

/// Why the features could not be listed or set.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FeatError {
    /// No features file under the debugfs root and nothing mounted there.
    #[error("debugfs not mounted.  Please run as root:\n    mount -t debugfs none {}", .debugfs.display())]
    NotMounted {
        /// The debugfs root looked at.
        debugfs: PathBuf,
    },
    /// Something is mounted but has no features file.
    #[error("{} has neither sched/features nor sched_features: this kernel has no scheduler features to show (it needs CONFIG_SCHED_DEBUG)", .debugfs.display())]
    NoFeatureFile {
        /// The debugfs root looked at.
        debugfs: PathBuf,
    },
    /// Access refused to a user who is not root.
    #[error("Permission denied. You must be root.\n    ({} {}: {})", .access.verb(), .path.display(), errno_text(.errno))]
    PermissionDenied {
        /// The path refused.
        path: PathBuf,
        /// What was attempted.
        access: Access,
        /// The errno, EACCES or EPERM.
        errno: i32,
    },
    /// Access refused although running as root: the kernel or a sandbox forbids it.
    #[error("{} scheduler features is not permitted here: {} {} fails with {}{}.\nThe kernel refuses this debugfs file (kernel lockdown, a security module or a sandboxed VM), so scheduler features cannot be {} on this machine.",
        .access.capitalized(), .access.verb(), .path.display(), errno_text(.errno),
        if *.as_root { " even as root" } else { "" }, .access.outcome())]
    NotPermitted {
        /// The path refused.
        path: PathBuf,
        /// What was attempted.
        access: Access,
        /// The errno, EPERM or EACCES.
        errno: i32,
        /// Whether the process ran as root.
        as_root: bool,
    },
    /// Feature names the kernel does not know; nothing was changed.
    #[error("{}", .names.iter().map(|n| format!("Unrecognized feature {n}")).collect::<Vec<_>>().join("\n"))]
    Unrecognized {
        /// The refused words, as given.
        names: Vec<String>,
    },
    /// Any other I/O failure on the features file.
    #[error("{} {}: {error}", .access.verb(), .path.display())]
    Io {
        /// The features file.
        path: PathBuf,
        /// What was attempted.
        access: Access,
        /// The cause.
        error: io::Error,
    },
}

/// `EPERM (Operation not permitted, errno 1)`.
fn errno_text(errno: &i32) -> String {
    let name = match *errno {
        libc::EPERM => "EPERM",
        libc::EACCES => "EACCES",
        libc::ENOENT => "ENOENT",
        libc::EINVAL => "EINVAL",
        libc::EROFS => "EROFS",
        libc::EBUSY => "EBUSY",
        libc::ENODEV => "ENODEV",
        _ => "errno",
    };
    let text = io::Error::from_raw_os_error(*errno).to_string();
    // Drop std's " (os error N)" suffix; the errno number follows instead.
    let text = text.split(" (os error").next().unwrap_or(&text);
    format!("{name} ({text}, errno {errno})")
}

/// Turns an I/O error on `path` into the message a user can act on.
fn classify(error: io::Error, path: &Path, access: Access) -> FeatError {
    let as_root = is_root();
    match error.raw_os_error() {
        Some(errno @ (libc::EACCES | libc::EPERM)) if !as_root => FeatError::PermissionDenied {
            path: path.to_path_buf(),
            access,
            errno,
        },
        Some(errno @ (libc::EACCES | libc::EPERM)) => FeatError::NotPermitted {
            path: path.to_path_buf(),
            access,
            errno,
            as_root,
        },
        _ => FeatError::Io {
            path: path.to_path_buf(),
            access,
            error,
        },
    }
}

/// The scheduler features file of one debugfs mount.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeatureFile {
    path: PathBuf,
}

impl FeatureFile {
    /// Finds the features file under `debugfs` (normally [`DEFAULT_DEBUGFS`]):
    /// `sched/features`, else the older `sched_features`.
    pub fn locate(debugfs: &Path) -> Result<FeatureFile, FeatError> {
        for name in FEATURE_FILES {
            let path = debugfs.join(name);
            match fs::metadata(&path) {
                Ok(meta) if meta.is_file() => return Ok(FeatureFile { path }),
                Ok(_) => {}
                Err(e) if matches!(e.raw_os_error(), Some(libc::ENOENT | libc::ENOTDIR)) => {}
                Err(e) => return Err(classify(e, &path, Access::Read)),
            }
        }
        // An empty directory is an unmounted debugfs; a populated one is a
        // kernel without the features file.
        let populated = fs::read_dir(debugfs)
            .map(|mut entries| entries.next().is_some())
            .unwrap_or(false);
        if populated {
            Err(FeatError::NoFeatureFile {
                debugfs: debugfs.to_path_buf(),
            })
        } else {
            Err(FeatError::NotMounted {
                debugfs: debugfs.to_path_buf(),
            })
        }
    }

    /// The features file found.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// All features with their current states, in the kernel's order.
    pub fn read(&self) -> Result<Vec<Feature>, FeatError> {
        let text = fs::read_to_string(&self.path).map_err(|e| classify(e, &self.path, Access::Read))?;
        Ok(text.split_whitespace().map(Feature::parse).collect())
    }

    /// Writes one word, `X` or `NO_X`, as `echo X > file` does. The kernel
    /// answers EINVAL for a name it does not know.
    pub fn write(&self, word: &str) -> Result<(), FeatError> {
        let mut file = crate::fsio::open_kernel_file(&self.path).map_err(|e| classify(e, &self.path, Access::Write))?;
        file.write_all(format!("{word}\n").as_bytes())
            .map_err(|e| match e.raw_os_error() {
                Some(libc::EINVAL) => FeatError::Unrecognized {
                    names: vec![word.to_string()],
                },
                _ => classify(e, &self.path, Access::Write),
            })
    }

    /// Sets each word in `words` (`X` enables, `NO_X` disables) and returns the
    /// previous states of the features touched.
    ///
    /// All or nothing: first checks that the file may be opened for writing and
    /// that every name is known (else [`FeatError::Unrecognized`] listing all
    /// unknown ones); if a write still fails, the features already written are
    /// put back before the error is returned.
    pub fn set(&self, words: &[String]) -> Result<Restore, FeatError> {
        // Opening for writing changes nothing but tells early whether writing
        // is allowed at all; on some machines it is refused even to root.
        crate::fsio::probe_kernel_file(&self.path).map_err(|e| classify(e, &self.path, Access::Write))?;
        let current = self.read()?;
        let plan = plan(&current, words)?;
        let mut done = Restore {
            path: self.path.clone(),
            previous: Vec::new(),
        };
        for (word, previous) in words.iter().zip(plan) {
            if let Err(e) = self.write(word) {
                // Best effort: the write error is what the caller must see.
                let _ = done.restore();
                return Err(e);
            }
            if let Some(previous) = previous {
                done.previous.push(previous);
            }
        }
        Ok(done)
    }
}

/// For each word, the previous state to record (first mention of a feature
/// only), or the list of unknown words.
fn plan(current: &[Feature], words: &[String]) -> Result<Vec<Option<Feature>>, FeatError> {
    let mut unknown = Vec::new();
    let mut plan = Vec::new();
    let mut touched: Vec<&str> = Vec::new();
    for word in words {
        let wanted = Feature::parse(word);
        match current.iter().find(|f| f.name == wanted.name) {
            Some(found) if !wanted.name.is_empty() => {
                if touched.contains(&found.name.as_str()) {
                    plan.push(None);
                } else {
                    touched.push(&found.name);
                    plan.push(Some(found.clone()));
                }
            }
            _ => unknown.push(word.clone()),
        }
    }
    if unknown.is_empty() {
        Ok(plan)
    } else {
        Err(FeatError::Unrecognized { names: unknown })
    }
}

/// The states of features before [`set_features`] changed them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[must_use = "restore the features after the measurement"]
pub struct Restore {
    path: PathBuf,
    previous: Vec<Feature>,
}

impl Restore {
    /// The features file the states belong to.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The previous state of every feature touched, in the order first set.
    pub fn previous(&self) -> &[Feature] {
        &self.previous
    }

    /// Writes the previous states back, last changed first. Tries every
    /// feature even if one fails, and returns the first error.
    pub fn restore(&self) -> Result<(), FeatError> {
        let file = FeatureFile {
            path: self.path.clone(),
        };
        let mut first_error = None;
        for feature in self.previous.iter().rev() {
            if let Err(e) = file.write(&feature.to_string()) {
                first_error.get_or_insert(e);
            }
        }
        first_error.map_or(Ok(()), Err)
    }
}

/// Sets features under [`DEFAULT_DEBUGFS`] (see [`FeatureFile::set`]) and
/// returns what to [`restore`] afterwards.
pub fn set_features(words: &[String]) -> Result<Restore, FeatError> {
    set_features_at(Path::new(DEFAULT_DEBUGFS), words)
}

/// [`set_features`] under another debugfs root.
pub fn set_features_at(debugfs: &Path, words: &[String]) -> Result<Restore, FeatError> {
    FeatureFile::locate(debugfs)?.set(words)
}

/// Puts back the feature states recorded by [`set_features`].
pub fn restore(restore: &Restore) -> Result<(), FeatError> {
    restore.restore()
}

/// Writes the features one per line, as the original's `sed 's/ /\n/g'` did
/// (without the blank line its trailing space left).
pub fn render_list(features: &[Feature], mut out: impl Write) -> io::Result<()> {
    for feature in features {
        writeln!(out, "{feature}")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn features(text: &str) -> Vec<Feature> {
        text.split_whitespace().map(Feature::parse).collect()
    }

    #[test]
    fn feature_words_round_trip() {
        let f = Feature::parse("NO_STEAL");
        assert_eq!(
            f,
            Feature {
                name: "STEAL".into(),
                enabled: false
            }
        );
        assert_eq!(f.to_string(), "NO_STEAL");
        assert_eq!(Feature::parse("TTWU_QUEUE").to_string(), "TTWU_QUEUE");
    }

    #[test]
    fn plan_records_first_previous_state_and_rejects_unknown() {
        let current = features("GENTLE_FAIR_SLEEPERS NO_STEAL TTWU_QUEUE");
        let words: Vec<String> = ["STEAL", "NO_TTWU_QUEUE", "NO_STEAL"].map(String::from).into();
        let plan = plan(&current, &words).unwrap();
        assert_eq!(
            plan,
            vec![
                Some(Feature::parse("NO_STEAL")),
                Some(Feature::parse("TTWU_QUEUE")),
                None
            ]
        );
        let words: Vec<String> = ["BOGUS", "STEAL", "NO_", "no_steal"].map(String::from).into();
        match super::plan(&current, &words) {
            Err(FeatError::Unrecognized { names }) => {
                assert_eq!(names, ["BOGUS", "NO_", "no_steal"]);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn messages_name_errno_and_path() {
        let path = Path::new("/sys/kernel/debug/sched/features");
        let e = FeatError::NotPermitted {
            path: path.into(),
            access: Access::Write,
            errno: libc::EPERM,
            as_root: true,
        };
        assert_eq!(
            e.to_string(),
            "Writing scheduler features is not permitted here: writing /sys/kernel/debug/sched/features fails with EPERM (Operation not permitted, errno 1) even as root.\nThe kernel refuses this debugfs file (kernel lockdown, a security module or a sandboxed VM), so scheduler features cannot be changed on this machine."
        );
        let e = FeatError::PermissionDenied {
            path: path.into(),
            access: Access::Read,
            errno: libc::EACCES,
        };
        assert!(e.to_string().starts_with("Permission denied. You must be root.\n"));
        let e = FeatError::Unrecognized {
            names: vec!["A".into(), "NO_B".into()],
        };
        assert_eq!(e.to_string(), "Unrecognized feature A\nUnrecognized feature NO_B");
    }

    #[test]
    fn classify_maps_errno_by_user() {
        let path = Path::new("/x");
        let e = classify(io::Error::from_raw_os_error(libc::EPERM), path, Access::Write);
        if is_root() {
            assert!(matches!(e, FeatError::NotPermitted { as_root: true, .. }));
        } else {
            assert!(matches!(e, FeatError::PermissionDenied { .. }));
        }
        let e = classify(io::Error::from_raw_os_error(libc::EIO), path, Access::Read);
        assert!(matches!(e, FeatError::Io { .. }));
    }
}
