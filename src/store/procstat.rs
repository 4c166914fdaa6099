//! `TEST/procstat`: per-CPU /proc/stat deltas over a test, and busy time both ways.

use super::{write_atomic, StoreError};
use std::fmt::Write as _;
use std::path::Path;

/// The file's name in a test directory.
pub const PROCSTAT_FILE: &str = "procstat";

/// One CPU's line.
#[derive(Debug, Clone, PartialEq)]
pub struct ProcstatRow {
    /// The CPU.
    pub cpu: u32,
    /// Busy time the samples saw (the non-idle samples' periods), for a time event.
    pub sampled_busy_sec: Option<f64>,
    /// Busy time /proc/stat saw.
    pub procstat_busy_sec: f64,
    /// The deltas of user, nice, system, idle, iowait, irq, softirq, steal, in ticks.
    pub ticks: [u64; 8],
}

/// Writes `dir/procstat`; `ticks_per_sec` is the unit of the deltas.
pub fn write(dir: &Path, rows: &[ProcstatRow], ticks_per_sec: f64) -> Result<(), StoreError> {
    let mut s = format!(
        "# Per-CPU /proc/stat deltas over the test, in ticks of 1/{ticks_per_sec} s, and busy time both ways.\n\
         # cpu user nice system idle iowait irq softirq steal | sampled-busy-sec procstat-busy-sec\n",
    );
    for r in rows {
        let ticks: Vec<String> = r.ticks.iter().map(u64::to_string).collect();
        let sampled = r.sampled_busy_sec.map_or("-".to_string(), |x| format!("{x:.3}"));
        let _ = writeln!(
            s,
            "cpu{} {} | {sampled} {:.3}",
            r.cpu,
            ticks.join(" "),
            r.procstat_busy_sec
        );
    }
    write_atomic(&dir.join(PROCSTAT_FILE), s.as_bytes())
}
