//! The output-directory format (`docs/format.md`): writing and reading it.

pub mod counters;
pub mod folded;
pub mod outdir;
pub mod prfout;
pub mod procstat;
pub mod run;
pub mod samples;
pub mod settings;
pub mod stacks;
pub mod system;

use crate::fsio::{self, Links};
use std::io;
use std::path::{Path, PathBuf};

/// Errors reading or writing an output directory.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// An I/O error on a named path.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// What went wrong.
        source: io::Error,
    },
    /// A file that does not parse.
    #[error(transparent)]
    Parse(#[from] upcmp_parsers::ParseError),
    /// A directory that upcmp did not write, which it therefore never moves or deletes.
    #[error("{path}: exists but has no {marker} file, so upcmp did not create it and will not move or delete it; choose another name or move it away yourself")]
    NotOurs {
        /// The directory.
        path: PathBuf,
        /// The marker file it lacks.
        marker: &'static str,
    },
    /// A directory that is not an upcmp run.
    #[error("{path}: not a uprun output directory (no {marker} file); give a directory that uprun wrote")]
    NotARun {
        /// The directory.
        path: PathBuf,
        /// The marker file it lacks.
        marker: &'static str,
    },
    /// Another process holds the lock of a directory being written.
    #[error("another {tool} is writing {path} (it holds {path}.lock); wait for it to end, or choose another name")]
    Locked {
        /// The directory.
        path: PathBuf,
        /// The command that writes it (`uprun`, `upcmp`).
        tool: &'static str,
    },
    /// The directory to write sits where every user may replace what is put there.
    #[error(
        "{path}: its directory {parent} may be written by every user and has no sticky bit, so anyone \
         could replace what is written there; choose another place, or insist with --allow-world-writable-parent"
    )]
    SharedParent {
        /// The directory to write.
        path: PathBuf,
        /// Its parent.
        parent: PathBuf,
    },
    /// A run or results directory owned by another user, written only when asked.
    #[error(
        "{path}: owned by user {owner}, neither root nor you; whoever owns it may have placed links \
         in it to make this command overwrite other files. Copy it somewhere of your own, or insist \
         with --allow-foreign-run"
    )]
    ForeignRun {
        /// The directory.
        path: PathBuf,
        /// Its owner's user id.
        owner: u32,
    },
    /// A symbolic link on an output path that the kernel's `fs.protected_symlinks` would
    /// not follow either.
    #[error(
        "{path}: its path goes through the symbolic link {link}, owned by user {owner} in a sticky \
         directory every user may write; it is not followed (docs/security.md). Give the real path"
    )]
    UntrustedLink {
        /// The path to write.
        path: PathBuf,
        /// The link.
        link: PathBuf,
        /// The link's owner.
        owner: u32,
    },
    /// A directory inside a run that is a symbolic link where the run's own directory
    /// belongs.
    #[error("{path}: a symbolic link, not a directory of the run; it is not followed (docs/security.md)")]
    LinkInRun {
        /// The link.
        path: PathBuf,
    },
    /// A path that names no directory of its own (`/`, `.`, `..`).
    #[error("{path}: names no new directory; give a name such as results1")]
    NoName {
        /// The path.
        path: PathBuf,
    },
    /// A format version this build cannot read.
    #[error(
        "{path}: output-directory format {found}, but this upcmp reads formats 1 to {supported}; use the upcmp that wrote it"
    )]
    Version {
        /// The marker file.
        path: PathBuf,
        /// Its version.
        found: u32,
        /// What this build reads.
        supported: u32,
    },
}

/// Attaches a path to an I/O error.
pub(crate) fn io_err(path: &Path) -> impl FnOnce(io::Error) -> StoreError + '_ {
    move |source| StoreError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// The most a small file of a run may hold: the marker, `system`, `test_list`, `status`,
/// `checks` (a test list of a million bytes is already absurd).
pub const SMALL_FILE_CAP: u64 = 1 << 20;
/// The most a benchmark's `upout` may hold.
pub const UPOUT_CAP: u64 = 256 << 20;
/// The most a profile or a stack file may hold: the importer's bound, one for both.
pub use upcmp_perf::import::PROFILE_CAP;

/// Reads a whole regular text file of at most `cap` bytes, naming it in the error. Inside
/// a run directory `links` is [`Links::Refuse`]: a run may have been written by another
/// user, and a link there must not make upcmp read, or quote, a file it points to.
pub fn read_text_with(path: &Path, links: Links, cap: u64) -> Result<String, StoreError> {
    fsio::read_text(path, links, cap).map_err(io_err(path))
}

/// Reads a small file of a run directory ([`SMALL_FILE_CAP`], no symbolic link).
pub fn read_text(path: &Path) -> Result<String, StoreError> {
    read_text_with(path, Links::Refuse, SMALL_FILE_CAP)
}

/// Writes `bytes` to `path` through a new temporary file and a rename, so a reader never
/// sees a half-written file; the mode is 0666 less the umask (a run sets its own, see
/// `docs/security.md`).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), StoreError> {
    fsio::write_atomic(path, bytes, 0o666).map_err(io_err(path))
}

pub use crate::model::shown::{unquoted, NOT_QUOTED};

/// Seconds since the epoch as `YYYY-MM-DDTHH:MM:SSZ`.
pub fn iso8601_utc(secs: i64) -> String {
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Civil date from days since 1970-01-01 (proleptic Gregorian calendar).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Now, as `YYYY-MM-DDTHH:MM:SSZ`.
pub fn now_utc() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    iso8601_utc(secs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(iso8601_utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(iso8601_utc(951_782_400), "2000-02-29T00:00:00Z");
        // `date -u -d @1796015529`
        assert_eq!(iso8601_utc(1_796_015_529), "2026-11-30T05:12:09Z");
    }
}
