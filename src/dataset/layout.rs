//! Where each file of a dataset goes: `DATASET/TABLE/test=T/kernel=K/host=H/RUNID.parquet`.
//! The run id is a digest of what identifies a run (host, start time, command, repetition
//! count), so exporting a run again writes the same file names and replaces them.
//!
//! A dataset may belong to another user, who can put links, FIFOs and files of his making
//! anywhere in it. Everything in it is reached from a directory fd of its root without
//! following a link ([`crate::fsio::beneath`]), a run id is a key of 16 hex digits and
//! never a path, and polars is handed the bytes of a file opened so, never a path.

use super::DatasetError;
use crate::fsio::beneath::{self, Dir, Kind};
use std::ffi::OsStr;
use std::fs::File;
use std::path::{Path, PathBuf};

/// A partition value as a directory name: bytes other than letters, digits and `.-_+` are
/// percent-encoded (as Hive, Spark and DuckDB decode them), so `/`, `=` and newlines in a
/// host or test name can neither escape the dataset nor split a partition.
pub fn encode(value: &str) -> String {
    let mut s = String::with_capacity(value.len());
    for b in value.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_' | b'+') {
            s.push(b as char);
        } else {
            s.push_str(&format!("%{b:02X}"));
        }
    }
    if s.is_empty() || s.starts_with('.') {
        // Never "", "." or ".." as a directory, never a hidden one.
        s.insert_str(0, "%00");
    }
    s
}

/// FNV-1a 64 of the parts, each followed by a NUL: stable across builds and machines.
pub fn run_id(parts: &[&str]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for &b in p.as_bytes().iter().chain(&[0u8]) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    format!("{h:016x}")
}

/// `value` of a partition directory's name (`%XX` decoded), as Hive reads it.
pub fn decode(value: &str) -> String {
    let b = value.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        match (
            b[i],
            b.get(i + 1).copied().and_then(hex),
            b.get(i + 2).copied().and_then(hex),
        ) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (c, _, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    // The "%00" that stands before an empty or hidden name is no part of it.
    let out = match out.strip_prefix(b"\0") {
        Some(rest) if value.starts_with("%00") => rest.to_vec(),
        _ => out,
    };
    String::from_utf8_lossy(&out).into_owned()
}

/// The partition of one test, kernel and host, below a table: `test=T/kernel=K/host=H`.
pub fn partition(test: &str, kernel: &str, host: &str) -> PathBuf {
    PathBuf::from(format!("test={}", encode(test)))
        .join(format!("kernel={}", encode(kernel)))
        .join(format!("host={}", encode(host)))
}

/// The directory of `table` for one test, kernel and host.
pub fn partition_dir(dataset: &Path, table: &str, test: &str, kernel: &str, host: &str) -> PathBuf {
    dataset.join(table).join(partition(test, kernel, host))
}

/// Whether `id` is a run id as [`run_id`] makes them: 16 lowercase hex digits. Nothing else
/// read from a dataset becomes part of a file name.
pub fn is_run_id(id: &str) -> bool {
    id.len() == 16 && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// The run id of a file named `RUNID.parquet`; `None` for any other name (a temporary
/// file of an export, a file of someone else's).
pub fn run_id_of(name: &OsStr) -> Option<String> {
    let id = name.to_str()?.strip_suffix(".parquet")?;
    is_run_id(id).then(|| id.to_string())
}

/// The file name of run `id`'s rows; an id that is not a run id is an error naming `what`.
pub fn file_name(id: &str, what: &Path) -> Result<String, DatasetError> {
    if !is_run_id(id) {
        return Err(DatasetError::BadFile {
            path: what.to_path_buf(),
            reason: format!(
                "run id {:?} is not one upcmp export writes (16 hex digits): a run id is never a path",
                crate::model::escaped(&id.chars().take(64).collect::<String>())
            ),
        });
    }
    Ok(format!("{id}.parquet"))
}

/// The most bytes one file of a dataset may hold (a functions file of a run is about
/// 100 KiB a repetition).
pub const FILE_CAP: u64 = 1 << 30;

/// A file of the dataset, opened for reading without following a link and checked to be
/// a regular file; `path` is for messages only and is never opened again.
#[derive(Debug)]
pub struct DatasetFile {
    /// Its path, for messages.
    pub path: PathBuf,
    /// The file opened.
    pub file: File,
}

impl DatasetFile {
    /// A copy of the opened `file` in memory (`memfd_create`: no path, no other process
    /// holds it), at most [`FILE_CAP`] bytes, positioned at its start. Whoever checks the
    /// file and polars then read the same bytes, whatever the file's owner does to it
    /// meanwhile (rewrites it, truncates it under a mapping).
    pub fn snapshot(path: PathBuf, file: &File) -> Result<DatasetFile, DatasetError> {
        use std::io::{Seek, SeekFrom};
        let err = |source| DatasetError::Io {
            path: path.clone(),
            source,
        };
        let bytes = beneath::read_all(file, FILE_CAP).map_err(err)?;
        let mut copy = crate::fsio::memory_file("upcmp-dataset-file", &bytes).map_err(err)?;
        copy.seek(SeekFrom::Start(0)).map_err(err)?;
        Ok(DatasetFile { path, file: copy })
    }

    /// Its bytes (of the copy: the same whoever reads them, and whenever), from the start
    /// whatever the file's offset.
    pub fn bytes(&self) -> Result<Vec<u8>, DatasetError> {
        beneath::read_all(&self.file, FILE_CAP).map_err(|source| DatasetError::Io {
            path: self.path.clone(),
            source,
        })
    }

    /// The run id its name carries.
    pub fn run_id(&self) -> Option<String> {
        self.path.file_name().and_then(run_id_of)
    }
}

/// Its path, for messages (as [`check::contained`](super::check) names the files it reads).
impl AsRef<Path> for DatasetFile {
    fn as_ref(&self) -> &Path {
        &self.path
    }
}

impl From<beneath::Error> for DatasetError {
    fn from(e: beneath::Error) -> Self {
        DatasetError::Io {
            path: e.path,
            source: e.source,
        }
    }
}

/// A dataset opened for reading: its root held open, everything below reached through it.
#[derive(Debug)]
pub struct Dataset {
    root: Dir,
}

impl Dataset {
    /// Opens the dataset at `path` (the user named it: a link to it is followed).
    pub fn open(path: &Path) -> Result<Dataset, DatasetError> {
        Ok(Dataset { root: Dir::open(path)? })
    }

    /// Its path.
    pub fn path(&self) -> &Path {
        self.root.path()
    }

    /// The directory of `table`; missing, it is an error saying this is no dataset.
    pub fn table(&self, table: &str) -> Result<Dir, DatasetError> {
        self.root.open_dir(OsStr::new(table)).map_err(|e| {
            if e.is_not_found() {
                DatasetError::Io {
                    path: e.path,
                    source: std::io::Error::new(
                        std::io::ErrorKind::NotFound,
                        format!("no table {table:?}: not a dataset written by upcmp export"),
                    ),
                }
            } else {
                e.into()
            }
        })
    }

    /// Opens run `id`'s file of `table` in `partition` (see [`partition`]); `None` when
    /// there is none. A link, FIFO or device on the way is an error naming it.
    pub fn open_run_file(&self, table: &str, partition: &Path, id: &str) -> Result<Option<DatasetFile>, DatasetError> {
        let rel = Path::new(table).join(partition);
        let name = file_name(id, &self.path().join(&rel))?;
        let rel = rel.join(name);
        match self.root.open_file_beneath(&rel) {
            Ok(file) => Ok(Some(DatasetFile::snapshot(self.path().join(rel), &file)?)),
            Err(e) if e.is_not_found() => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// Opens [`Dataset::open_run_file`]'s file, which must be there.
    pub fn must_open_run_file(&self, table: &str, partition: &Path, id: &str) -> Result<DatasetFile, DatasetError> {
        let rel = Path::new(table).join(partition);
        let name = file_name(id, &self.path().join(&rel))?;
        let rel = rel.join(name);
        let file = self.root.open_file_beneath(&rel)?;
        DatasetFile::snapshot(self.path().join(rel), &file)
    }
}

/// The entries of `dir` named `KEY=...` (`test=`, `kernel=`, `host=`) that `keep` keeps,
/// each a real directory: a link or a file under such a name is an error naming it.
pub fn partition_dirs(dir: &Dir, key: &str, keep: impl Fn(&str) -> bool) -> Result<Vec<String>, DatasetError> {
    let prefix = format!("{key}=");
    let mut out = Vec::new();
    for (name, kind) in dir.entries()? {
        let Some(name) = name.to_str().filter(|n| n.starts_with(&prefix)) else {
            continue;
        };
        if !keep(name) {
            continue;
        }
        if kind != Kind::Dir {
            // Opening it says what it is (a link is not followed).
            dir.open_dir(OsStr::new(name))?;
        }
        out.push(name.to_string());
    }
    Ok(out)
}

/// The run ids of the files `RUNID.parquet` in `dir`, sorted; a link, FIFO or device
/// under such a name is an error naming it.
pub fn run_files(dir: &Dir) -> Result<Vec<String>, DatasetError> {
    let mut out = Vec::new();
    for (name, kind) in dir.entries()? {
        let Some(id) = run_id_of(&name) else { continue };
        if kind != Kind::File {
            dir.open_file(&name)?;
        }
        out.push(id);
    }
    Ok(out)
}
