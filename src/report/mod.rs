//! Pure renderers: the text report, CSV and JSON, the HTML page. Numbers come computed from
//! [`crate::compare`]; this module only formats them and writes to the `Write` given.

pub mod activity;
pub mod annotate;
pub mod export;
pub mod flame;
mod flat;
pub mod format;
pub mod gprof;
pub mod history;
pub mod html;
pub mod mail;
pub mod markdown;
#[cfg(feature = "parquet")]
pub mod parquet;
pub mod stackcmp;
pub mod text;
pub mod unknown;

use rayon::iter::{IndexedParallelIterator, ParallelIterator};
use rayon::slice::ParallelSlice;
use std::io::{self, Write};

/// Function rows made in one piece, and pieces made at once: 4096 rows of results.json
/// are 3.7 MB.
pub(crate) const BLOCK: usize = 512;
pub(crate) const BLOCKS_AT_ONCE: usize = 8;

/// `make(index of its first row, block)` for each block of `BLOCK` rows of `rows`, in
/// order, made on whichever core is free; `first` is the index of `rows[0]`.
pub(crate) fn in_blocks<T: Sync, R: Send>(rows: &[T], first: usize, make: impl Fn(usize, &[T]) -> R + Sync) -> Vec<R> {
    rows.par_chunks(BLOCK)
        .enumerate()
        .map(|(b, block)| make(first + b * BLOCK, block))
        .collect()
}

/// Writes `rows` in order, each block of them made by `make(index of its first row,
/// block, text)` ([`in_blocks`]), `BLOCKS_AT_ONCE` at a time. results.json, results.csv
/// and the page are written side by side, each on a thread of its own, and the function
/// rows are most of their text: made in blocks, they keep both cores busy until the last
/// file is done (before, one core was idle while the longest file was still written).
pub(crate) fn write_blocks<T: Sync>(
    rows: &[T],
    out: &mut impl Write,
    make: impl Fn(usize, &[T], &mut Vec<u8>) -> io::Result<()> + Sync,
) -> io::Result<()> {
    for (w, window) in rows.chunks(BLOCK * BLOCKS_AT_ONCE).enumerate() {
        let blocks = in_blocks(window, w * BLOCK * BLOCKS_AT_ONCE, |first, block| {
            let mut text = Vec::new();
            make(first, block, &mut text).map(|()| text)
        });
        for text in blocks {
            out.write_all(&text?)?;
        }
    }
    Ok(())
}

/// Seconds with three decimals, as the original.
pub fn fmt_sec(x: f64) -> String {
    no_negative_zero(format!("{x:.3}"))
}

/// A percentage with two decimals; a value that rounds to zero prints `0.00`, never
/// `-0.00` (the original printed allocpreg's -0.0036 % as 0.00).
pub fn fmt_pct(x: f64) -> String {
    no_negative_zero(format!("{x:.2}"))
}

/// A rate as the original unixperf printed it: three significant digits, and at least
/// one decimal (`440000.0`, `425.0`, `25.3`, `2.51`).
pub fn fmt_rate(x: f64) -> String {
    if x == 0.0 || !x.is_finite() {
        return format!("{x:.1}");
    }
    let decimals = (2 - x.abs().log10().floor() as i32).max(1) as usize;
    format!("{x:.decimals$}")
}

/// A change in seconds with its sign and three decimals (`+0.012`), never `-0.000`.
pub fn fmt_signed_sec(x: f64) -> String {
    no_negative_zero(format!("{x:+.3}"))
}

/// A ratio with two decimals, or `-` when undefined.
pub fn fmt_ratio(x: Option<f64>) -> String {
    x.map(|x| format!("{x:.2}")).unwrap_or_else(|| "-".into())
}

/// Seconds as milliseconds with up to six decimals and no trailing zeros (`1`, `0.25`).
pub fn msec(period_sec: f64) -> String {
    let ms = period_sec * 1000.0;
    let s = format!("{ms:.6}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// The value lines of a Profiling Summary as every report prints them: name, run 1, run 2
/// and R2/R1 (`-` where the runs have no common measure or the ratio is refused).
pub(crate) fn summary_lines(c: &crate::compare::ProfileComparison) -> Vec<[String; 4]> {
    use crate::compare::{ratio, Basis};
    let (a, b, m) = (&c.run1, &c.run2, &c.measure);
    let comparable = m.basis != Basis::Share && !c.ratios_refused;
    let line = |name: &str, x: f64, y: f64, scale: f64| {
        let r = if comparable { fmt_ratio(ratio(x, y)) } else { "-".into() };
        [name.to_string(), fmt_sec(x / scale), fmt_sec(y / scale), r]
    };
    let mut lines = if m.is_time() {
        vec![
            line("Elapsed time", a.elapsed_sec, b.elapsed_sec, 1.0),
            line("Idle time", a.idle, b.idle, 1.0),
            line("CPU time", a.cpu, b.cpu, 1.0),
        ]
    } else {
        vec![
            line("Elapsed time (sec)", a.elapsed_sec, b.elapsed_sec, 1.0),
            line("Idle functions", a.idle, b.idle, m.scale),
            line("Other functions", a.cpu, b.cpu, m.scale),
        ]
    };
    if a.lost > 0.0 || b.lost > 0.0 {
        lines.push(line("Lost samples", a.lost, b.lost, m.scale));
    }
    // Whose the CPU time is, where the samples say: seconds, and the change in seconds.
    if let Some(o) = c.owners.as_ref().filter(|_| m.is_time()) {
        for (name, x, y) in [
            ("  the test's processes", o.run1.test, o.run2.test),
            ("  other processes", o.run1.other, o.run2.other),
        ] {
            let [name, x_text, y_text, r] = line(name, x, y, 1.0);
            lines.push([name, x_text, y_text, format!("{r} ({} s)", fmt_signed_sec(y - x))]);
        }
    }
    lines
}

/// An idle set as the notes name it: the Linux default set by its name, any other set
/// listed in quotes.
pub(crate) fn idle_set_words(set: &[String]) -> String {
    if set
        .iter()
        .map(String::as_str)
        .eq(crate::model::DEFAULT_IDLE_FUNCTIONS.iter().copied())
    {
        format!("the Linux default set of {} (docs/formulas.md)", set.len())
    } else {
        // An idle set named on the command line or read from a run's files.
        set.iter()
            .map(|s| format!("\"{}\"", crate::model::shown::Shown(s)))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

fn no_negative_zero(s: String) -> String {
    match s.strip_prefix('-') {
        Some(rest) if rest.chars().all(|c| c == '0' || c == '.') => rest.to_string(),
        _ => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounding_like_the_original() {
        assert_eq!(fmt_pct(-0.0036), "0.00");
        assert_eq!(fmt_pct(-0.034), "-0.03");
        assert_eq!(fmt_pct(2.5774), "2.58");
        assert_eq!(fmt_sec(-0.0004), "0.000");
        assert_eq!(fmt_sec(22.604), "22.604");
        assert_eq!(fmt_ratio(Some(1825.126 / 1745.514)), "1.05");
        assert_eq!(fmt_ratio(None), "-");
        assert_eq!(fmt_rate(440000.0), "440000.0");
        assert_eq!(fmt_rate(425.0), "425.0");
        assert_eq!(fmt_rate(25.3), "25.3");
        assert_eq!(fmt_rate(2.51), "2.51");
        assert_eq!(fmt_rate(0.251), "0.251");
    }
}
