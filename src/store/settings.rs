//! `OUTDIR/settings`: the kernel's settings that bias a comparison (its configuration,
//! mitigations, sysctls, ...), written at the start of a run; format in docs/format.md.
//! Runs written before it have none, and still compare.

use super::{read_text_with, write_atomic, StoreError};
use crate::fsio::Links;
use std::fmt::Write as _;
use std::path::Path;
use upcmp_parsers::ParseError;

/// The file's name in a run directory.
pub const SETTINGS_FILE: &str = "settings";
/// Its first line, with the format's version.
pub const SETTINGS_HEADER: &str = "upcmp-settings 1";

/// Writes `dir/settings`: the header, one `KEY VALUE` line per setting, and `end`.
pub fn write(dir: &Path, settings: &[(String, String)]) -> Result<(), StoreError> {
    let mut s = format!("{SETTINGS_HEADER}\n");
    for (k, v) in settings {
        let _ = writeln!(s, "{k} {}", v.replace('\n', " "));
    }
    s.push_str("end\n");
    write_atomic(&dir.join(SETTINGS_FILE), s.as_bytes())
}

/// Reads `dir/settings`; None when the run has none (written before it existed).
pub fn read(dir: &Path) -> Result<Option<Vec<(String, String)>>, StoreError> {
    let p = dir.join(SETTINGS_FILE);
    // Absent, or the directory of a test named `settings` in a run written before the
    // file was.
    match p.symlink_metadata() {
        Ok(m) if !m.is_dir() => {}
        _ => return Ok(None),
    }
    let text = read_text_with(&p, Links::Refuse, 16 << 20)?;
    let file = p.display().to_string();
    let mut lines = text.lines();
    if lines.next() != Some(SETTINGS_HEADER) {
        return Err(ParseError::whole(&file, format!("a first line '{SETTINGS_HEADER}'")).into());
    }
    let mut out = Vec::new();
    for (n, l) in lines.enumerate() {
        if l == "end" {
            return Ok(Some(out));
        }
        let (k, v) = l.split_once(' ').unwrap_or((l, ""));
        if k.is_empty() {
            return Err(ParseError::at(&file, n + 2, l, l, "a line 'KEY VALUE'").into());
        }
        // A run may come from another user: no control character reaches a terminal.
        let printable = |t: &str| -> String { t.chars().map(|c| if c.is_control() { '?' } else { c }).collect() };
        out.push((printable(k), printable(v)));
    }
    Err(ParseError::whole(&file, "a last line 'end' (the file is truncated)").into())
}
