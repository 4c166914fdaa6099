//! `OUTDIR/system`: a description of the machine, written at the start of a run
//! (docs/format.md lists the keys).

use super::{read_text, write_atomic, StoreError};
use std::fmt::Write as _;
use std::path::Path;
use upcmp_parsers::keyvalue::{parse_key_values, KeyValues};

/// The file's name in a run directory.
pub const SYSTEM_FILE: &str = "system";

/// Writes `dir/system` from `(key, value)` pairs, in their order.
pub fn write(dir: &Path, facts: &[(&str, String)]) -> Result<(), StoreError> {
    let mut s = String::new();
    for (k, v) in facts {
        let _ = writeln!(s, "{k}: {}", v.replace('\n', " "));
    }
    write_atomic(&dir.join(SYSTEM_FILE), s.as_bytes())
}

/// Reads `dir/system`.
pub fn read(dir: &Path) -> Result<KeyValues, StoreError> {
    let p = dir.join(SYSTEM_FILE);
    Ok(parse_key_values(&read_text(&p)?, &p.display().to_string())?)
}

/// The key naming the kernel image (vmlinux) uprun took the kernel's symbols from, by
/// its absolute path; absent when they came from kallsyms.
pub const VMLINUX_KEY: &str = "vmlinux";

/// The keys whose difference between two runs can bias a comparison.
pub const BIASING_KEYS: &[&str] = &[
    "kernel-release",
    "kernel-version",
    "kernel-build-id",
    "cpus-online",
    "cpu-model",
    "mem-total",
    "cpufreq-governors",
    "kernel-cmdline",
    "sampling-event",
    "sampling-frequency-hz",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn written_facts_read_back() {
        let dir = tempfile::tempdir().unwrap();
        write(
            dir.path(),
            &[("cpus-online", "2".into()), ("kernel-cmdline", "a\nb".into())],
        )
        .unwrap();
        let kv = read(dir.path()).unwrap();
        assert_eq!(kv.get("cpus-online"), Some("2"));
        assert_eq!(kv.get("kernel-cmdline"), Some("a b"));
    }
}
