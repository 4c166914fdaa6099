//! `hackdiff`: compare two identical series of `runmany hackbench` results.
//!
//! Input, as a `hackseries` script writes it:
//!
//! ```text
//! hackbench 1 process 50000
//!  4.096  4.090  4.073  4.129  4.092     Average 4.096   stdev 0.5%
//! ```
//!
//! The first occurrence of a group is the base series; the series that starts
//! when a group shows up again is the new one, and must run the same groups in
//! the same order with the same parameters. Other lines are ignored. Anything
//! malformed or out of step is an error naming the input line.

use super::{Decimal, DecimalError};
use crate::compare::stats::{adjust_verdicts, bench_test, Correction, Verdict, ALPHA};
use std::collections::HashSet;
use std::io::{self, BufRead, Write};

/// One `Average T   stdev S%` result.
#[derive(Debug, Clone, PartialEq)]
pub struct Measurement {
    /// The average time in seconds, as written.
    pub average: Decimal,
    /// The standard deviation in percent, as written (without `%`).
    pub stdev: Decimal,
    /// Each run's time in seconds, as runmany printed them before `Average` (none when the
    /// line gives only the summary).
    pub times: Vec<f64>,
}

/// One table row: a group measured in both series.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// The hackbench group count.
    pub group: u64,
    /// The base series' result.
    pub base: Measurement,
    /// The new series' result.
    pub new: Measurement,
    /// Speedup of new over base in percent, in fixed point with 3 decimals
    /// (26500 is 26.5%): `(base_ms * 1000 / new_ms - 1000) * 100`, truncating.
    pub speedup_fixed: i64,
}

/// Why the input cannot be compared. Line numbers count from 1.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HackdiffError {
    /// Reading the input failed.
    #[error("reading line {line}")]
    Read {
        /// The line being read.
        line: usize,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// A `hackbench` line whose group is not a whole number.
    #[error("line {line}: expected `hackbench G ...` with a whole-number group G, found `{text}`")]
    BadHeader {
        /// Where.
        line: usize,
        /// The line.
        text: String,
    },
    /// The new series runs a different group than the base series at this point.
    #[error("line {line}: expected group {expected} but found {found}")]
    GroupMismatch {
        /// Where.
        line: usize,
        /// The group the base series has at this position.
        expected: u64,
        /// The group found.
        found: u64,
    },
    /// Same group, different hackbench parameters.
    #[error("line {line}: `{found}` differs from `{expected}` of the base series (line {base_line}); both series must run the same parameters")]
    ParamsMismatch {
        /// Where.
        line: usize,
        /// The new series' line.
        found: String,
        /// The base series' line.
        expected: String,
        /// Where the base series' line is.
        base_line: usize,
    },
    /// The new series has more groups than the base series.
    #[error("line {line}: found group {found} but the base series has only {base_groups} groups; hackdiff compares exactly two series")]
    ExtraGroup {
        /// Where.
        line: usize,
        /// The group found.
        found: u64,
        /// How many groups the base series has.
        base_groups: usize,
    },
    /// An `Average` line that does not read `Average T   stdev S%`.
    #[error("line {line}: expected `... Average <seconds>   stdev <percent>%`, found `{text}`{}", detail(.error))]
    BadAverage {
        /// Where.
        line: usize,
        /// The line.
        text: String,
        /// The number that was refused, if that was the problem.
        error: Option<DecimalError>,
    },
    /// An `Average` line with no `hackbench` line before it to belong to.
    #[error("line {line}: Average line without a `hackbench G ...` line before it")]
    OrphanAverage {
        /// Where.
        line: usize,
    },
    /// A `hackbench` line never followed by its result.
    #[error("line {line}: group {group} has no Average line (did its runmany fail?)")]
    MissingAverage {
        /// The `hackbench` line.
        line: usize,
        /// Its group.
        group: u64,
    },
    /// No result lines at all.
    #[error("no `hackbench G ...` lines with Average results in the input; expected runmany series as hackseries writes them")]
    Empty,
    /// Only one series: no group was ever repeated.
    #[error("only one series found ({groups} groups, none repeated); expected a base series followed by a new series with the same groups")]
    NoNewSeries {
        /// Groups in the one series.
        groups: usize,
    },
    /// The new series stopped early.
    #[error("the new series ends after {found} of the base series' {expected} groups; expected group {next} next")]
    ShortNewSeries {
        /// Groups in the new series.
        found: usize,
        /// Groups in the base series.
        expected: usize,
        /// The first missing group.
        next: u64,
    },
    /// A new average of 0.000 seconds leaves the speedup undefined.
    #[error("line {line}: the new time of group {group} is 0.000 s; cannot compute a speedup")]
    ZeroTime {
        /// The `Average` line.
        line: usize,
        /// Its group.
        group: u64,
    },
    /// A time too large for the fixed-point arithmetic.
    #[error("line {line}: time too large to compare")]
    TooLarge {
        /// The `Average` line.
        line: usize,
    },
}

fn detail(error: &Option<DecimalError>) -> String {
    error.as_ref().map(|e| format!(" ({e})")).unwrap_or_default()
}

#[derive(Debug)]
struct Entry {
    line: usize,
    words: Vec<String>,
    group: u64,
    result: Option<(Measurement, usize)>,
}

/// Reads runmany series and pairs each base group with its new result.
pub fn parse(input: impl BufRead) -> Result<Vec<Row>, HackdiffError> {
    let mut base: Vec<Entry> = Vec::new();
    let mut new: Vec<Entry> = Vec::new();
    let mut seen = HashSet::new();
    let mut in_new = false;
    let mut line_no = 0;
    for line in input.lines() {
        line_no += 1;
        let line = line.map_err(|source| HackdiffError::Read { line: line_no, source })?;
        let text = line.trim();
        let words: Vec<&str> = text.split_whitespace().collect();
        if words.first() == Some(&"hackbench") {
            let entry = parse_header(text, &words, line_no)?;
            let series = if in_new { &new } else { &base };
            check_complete(series.last())?;
            if !in_new && seen.contains(&entry.group) {
                in_new = true;
            }
            seen.insert(entry.group);
            if in_new {
                check_matches(&base, new.len(), &entry)?;
                new.push(entry);
            } else {
                base.push(entry);
            }
        } else if text.contains("Average") {
            let series = if in_new { &mut new } else { &mut base };
            let Some(entry) = series.last_mut().filter(|e| e.result.is_none()) else {
                return Err(HackdiffError::OrphanAverage { line: line_no });
            };
            entry.result = Some((parse_average(text, line_no)?, line_no));
        }
    }
    check_complete(base.last())?;
    check_complete(new.last())?;
    if base.is_empty() {
        return Err(HackdiffError::Empty);
    }
    if new.is_empty() {
        return Err(HackdiffError::NoNewSeries { groups: base.len() });
    }
    if new.len() < base.len() {
        return Err(HackdiffError::ShortNewSeries {
            found: new.len(),
            expected: base.len(),
            next: base[new.len()].group,
        });
    }
    base.into_iter()
        .zip(new)
        .map(|(b, n)| {
            let (base, _) = b.result.expect("checked complete");
            let (new, new_line) = n.result.expect("checked complete");
            let too_large = HackdiffError::TooLarge { line: new_line };
            let (Some(base_ms), Some(new_ms)) = (base.average.to_fixed(3), new.average.to_fixed(3)) else {
                return Err(too_large);
            };
            if new_ms == 0 {
                return Err(HackdiffError::ZeroTime {
                    line: new_line,
                    group: b.group,
                });
            }
            let speedup_fixed = speedup_fixed(base_ms, new_ms).ok_or(too_large)?;
            Ok(Row {
                group: b.group,
                base,
                new,
                speedup_fixed,
            })
        })
        .collect()
}

// hackbench 1 process 50000
fn parse_header(text: &str, words: &[&str], line: usize) -> Result<Entry, HackdiffError> {
    let group = words
        .get(1)
        .and_then(|g| g.parse::<u64>().ok())
        .ok_or_else(|| HackdiffError::BadHeader {
            line,
            text: text.to_string(),
        })?;
    Ok(Entry {
        line,
        words: words.iter().map(|w| w.to_string()).collect(),
        group,
        result: None,
    })
}

//  4.096  4.090  4.073  4.129  4.092     Average 4.096   stdev 0.5%
fn parse_average(text: &str, line: usize) -> Result<Measurement, HackdiffError> {
    let bad = |error| HackdiffError::BadAverage {
        line,
        text: text.to_string(),
        error,
    };
    // Like the original's `sed 's/^.*Average *//'`: what follows the last "Average".
    let (_, rest) = text.rsplit_once("Average").expect("caller checked");
    let words: Vec<&str> = rest.split_whitespace().collect();
    let [average, "stdev", stdev] = words.as_slice() else {
        return Err(bad(None));
    };
    let Some(stdev) = stdev.strip_suffix('%') else {
        return Err(bad(None));
    };
    // The runs' own times, printed before `Average`; anything else there is not a series.
    let (before, _) = text.rsplit_once("Average").expect("caller checked");
    let times: Vec<f64> = before.split_whitespace().map_while(|w| w.parse().ok()).collect();
    let times = if times.len() == before.split_whitespace().count() {
        times
    } else {
        Vec::new()
    };
    Ok(Measurement {
        average: Decimal::parse(average).map_err(|e| bad(Some(e)))?,
        stdev: Decimal::parse(stdev).map_err(|e| bad(Some(e)))?,
        times,
    })
}

fn check_complete(entry: Option<&Entry>) -> Result<(), HackdiffError> {
    match entry {
        Some(e) if e.result.is_none() => Err(HackdiffError::MissingAverage {
            line: e.line,
            group: e.group,
        }),
        _ => Ok(()),
    }
}

fn check_matches(base: &[Entry], index: usize, entry: &Entry) -> Result<(), HackdiffError> {
    let Some(expected) = base.get(index) else {
        return Err(HackdiffError::ExtraGroup {
            line: entry.line,
            found: entry.group,
            base_groups: base.len(),
        });
    };
    if expected.group != entry.group {
        return Err(HackdiffError::GroupMismatch {
            line: entry.line,
            expected: expected.group,
            found: entry.group,
        });
    }
    if expected.words != entry.words {
        return Err(HackdiffError::ParamsMismatch {
            line: entry.line,
            found: entry.words.join(" "),
            expected: expected.words.join(" "),
            base_line: expected.line,
        });
    }
    Ok(())
}

/// The original's speedup from the two averages in integer milliseconds
/// (truncated, `ftoi t 3`): `(base_ms * 1000 / new_ms - 1000) * 100` in integer
/// arithmetic, a percent with 3 decimals. `None` when `new_ms` is 0 or the
/// arithmetic overflows.
pub fn speedup_fixed(base_ms: i64, new_ms: i64) -> Option<i64> {
    let ratio = base_ms.checked_mul(1000)?.checked_div(new_ms)?;
    (ratio - 1000).checked_mul(100)
}

/// Writes the comparison table exactly as the original's `printf`s did.
/// The verdict of each row's change: Welch's t-test on the runs' times (each side's
/// variance floored by the rounding of runmany's three decimals), Holm-adjusted across
/// the groups at 5%; `n/a` where a side has fewer than two runs.
pub fn verdicts(rows: &[Row]) -> Vec<&'static str> {
    let tests: Vec<Verdict> = rows
        .iter()
        .map(|r| bench_test(&r.base.times, &r.new.times, 0.001))
        .collect();
    let adjusted = adjust_verdicts(Correction::Holm, &tests);
    adjusted
        .iter()
        .map(|p| match p {
            Some(p) if *p < ALPHA => "significant",
            Some(_) => "noise",
            None => "n/a",
        })
        .collect()
}

/// Writes the original's table, and after its %speedup the 95% verdict of each change
/// (see [`verdicts`]).
pub fn render(rows: &[Row], mut out: impl Write) -> io::Result<()> {
    writeln!(out, "{:>21}  {:>13}", "--- base --", "--- new ---")?;
    writeln!(
        out,
        "{:>6}  {:>6} {:>6}  {:>6} {:>6}  {:>8}  95% test",
        "groups", "time", "%stdev", "time", "%stdev", "%speedup"
    )?;
    for (row, verdict) in rows.iter().zip(verdicts(rows)) {
        writeln!(
            out,
            "{:>6}  {:>6} {:>6}  {:>6} {:>6}  {:>8}  {verdict}",
            row.group,
            row.base.average.printf(3),
            row.base.stdev.printf(1),
            row.new.average.printf(3),
            row.new.stdev.printf(1),
            Decimal::from_fixed(row.speedup_fixed, 3).printf(1),
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> Decimal {
        Decimal::parse(s).unwrap()
    }

    #[test]
    fn speedup_is_truncating_integer_arithmetic() {
        // 4096 * 1000 / 3236 = 1265 (1265.76...), -1000 = 265, * 100 = 26500.
        assert_eq!(speedup_fixed(4096, 3236), Some(26500));
        // 3000000 / 4000 = 750 -> -25.0%.
        assert_eq!(speedup_fixed(3000, 4000), Some(-25000));
        // 4000000 / 4001 = 999 -> -0.1%: a tiny slowdown still shows.
        assert_eq!(speedup_fixed(4000, 4001), Some(-100));
        assert_eq!(speedup_fixed(4000, 4000), Some(0));
        assert_eq!(speedup_fixed(1000, 0), None);
        assert_eq!(speedup_fixed(i64::MAX, 1), None);
    }

    #[test]
    fn average_line_is_checked() {
        let ok = parse_average(" 1.000     Average 1.000   stdev 0.0%", 3).unwrap();
        assert_eq!(ok.average, d("1.000"));
        for bad in [
            "Average",
            "Average 1.0 stdev 0.5",
            "Average x stdev 0.5%",
            "Average 1.0 sd 0.5%",
            "Average 1.0 stdev 0.5% extra",
        ] {
            let err = parse_average(bad, 7).unwrap_err().to_string();
            assert!(err.starts_with("line 7: expected `... Average"), "{err}");
        }
    }

    #[test]
    fn group_mismatch_uses_the_original_message() {
        let input = "hackbench 1 process 9\n Average 1.0 stdev 1%\nhackbench 2 process 9\n Average 1.0 stdev 1%\nhackbench 1 process 9\n Average 1.0 stdev 1%\nhackbench 3 process 9\n";
        let err = parse(input.as_bytes()).unwrap_err().to_string();
        assert_eq!(err, "line 7: expected group 2 but found 3");
    }
}
