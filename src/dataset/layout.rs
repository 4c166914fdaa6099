//! Where each file of a dataset goes: `DATASET/TABLE/test=T/kernel=K/host=H/RUNID.parquet`.
//! The run id is a digest of what identifies a run (host, start time, command, repetition
//! count), so exporting a run again writes the same file names and replaces them.

use super::{io_err, DatasetError};
use crate::fsio;
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

/// The directory of `table` for one test, kernel and host.
pub fn partition_dir(dataset: &Path, table: &str, test: &str, kernel: &str, host: &str) -> PathBuf {
    dataset
        .join(table)
        .join(format!("test={}", encode(test)))
        .join(format!("kernel={}", encode(kernel)))
        .join(format!("host={}", encode(host)))
}

/// Creates `dir` and its missing parents below `root` (which must exist), each as a real
/// directory: one made meanwhile by another exporter is fine, a link in its place is not.
pub fn make_dirs(root: &Path, dir: &Path) -> Result<(), DatasetError> {
    let rel = dir.strip_prefix(root).unwrap_or(dir);
    let mut at = root.to_path_buf();
    for c in rel.components() {
        at.push(c);
        match fsio::create_dir(&at, 0o755) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && fsio::is_real_dir(&at) => {}
            Err(e) => return Err(io_err(&at)(e)),
        }
    }
    Ok(())
}
