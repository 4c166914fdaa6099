//! `TEST/counters`: what the kernel counted over a test (docs/format.md).

use super::{read_text, write_atomic, StoreError};
use std::fmt::Write as _;
use std::path::Path;
use upcmp_parsers::counters::{parse_counters, CounterValue, CountersFile, MAGIC, VERSION};

/// The file's name in a test (or repetition) directory.
pub const COUNTERS_FILE: &str = "counters";

/// The file's text: `window_sec` of wall time, then every counter in order.
pub fn to_text(window_sec: f64, counters: &[(String, CounterValue)]) -> String {
    let mut s = format!(
        "{MAGIC} {VERSION}\n# What the kernel counted over the test; see docs/format.md.\nwindow-sec {window_sec:.6}\n\
         # delta CHANGE NAME | level START END NAME | absent NAME\n"
    );
    for (name, v) in counters {
        let _ = match v {
            CounterValue::Delta(d) => writeln!(s, "delta {d} {name}"),
            CounterValue::Level { start, end } => writeln!(s, "level {start} {end} {name}"),
            CounterValue::Absent => writeln!(s, "absent {name}"),
        };
    }
    s.push_str("end\n");
    s
}

/// Writes `dir/counters` (atomically).
pub fn write(dir: &Path, window_sec: f64, counters: &[(String, CounterValue)]) -> Result<(), StoreError> {
    write_atomic(&dir.join(COUNTERS_FILE), to_text(window_sec, counters).as_bytes())
}

/// Reads `dir/counters`; None when the test has none (runs written before counters were
/// recorded). Anything at that name that is not a regular file is an error.
pub fn read(dir: &Path) -> Result<Option<CountersFile>, StoreError> {
    let path = dir.join(COUNTERS_FILE);
    if path.symlink_metadata().is_err() {
        return Ok(None);
    }
    let text = read_text(&path)?;
    Ok(Some(parse_counters(&text, &path.display().to_string())?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let d = tempfile::tempdir().unwrap();
        assert!(read(d.path()).unwrap().is_none());
        let c = vec![
            ("vmstat.pgfault".to_string(), CounterValue::Delta(20188)),
            ("vmstat.nr_free_pages".to_string(), CounterValue::Delta(-3)),
            ("meminfo.MemFree".to_string(), CounterValue::Level { start: 9, end: 7 }),
            ("perf.cycles".to_string(), CounterValue::Absent),
        ];
        write(d.path(), 1.25, &c).unwrap();
        let back = read(d.path()).unwrap().unwrap();
        assert_eq!(back.window_sec, 1.25);
        assert_eq!(back.counters, c);
    }
}
