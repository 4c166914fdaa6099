//! `runmany`: run a command N times, take the time each run prints, and report
//! the runs, their average and their standard deviation as a percent.
//!
//! ```text
//!  4.096  4.090  4.073  4.129  4.092     Average 4.096   stdev 0.5%
//! ```
//!
//! Times are kept as integer milliseconds, truncated, and the standard deviation
//! goes through the same `bc` steps as the original script, so the printed
//! numbers are identical (see `docs/formulas-helpers.md`).

use super::{format_fixed, Decimal, DecimalError};
use std::ffi::OsString;
use std::io::{self, Write};
use std::process::{Command, Stdio};

/// The usage line, exactly as the original printed it.
pub const USAGE: &str = "usage: runmany num command args ...";

/// What to run and how often.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct RunOptions {
    /// How many times to run the command; at least 1.
    pub runs: u32,
    /// The program and its arguments, passed as given (no shell, no re-splitting).
    pub command: Vec<OsString>,
}

impl RunOptions {
    /// Options to run `command` `runs` times.
    pub fn new(runs: u32, command: Vec<OsString>) -> RunOptions {
        RunOptions { runs, command }
    }
}

/// Why `runmany` stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// No usable run count or no command: print the usage line.
    #[error("{}", usage_text(.reason))]
    Usage {
        /// What was wrong, when the bare usage line would not say it.
        reason: Option<String>,
    },
    /// The command could not be started at all.
    #[error("run {run} of {runs}: cannot start `{command}`: {error}; check the command name and PATH")]
    Spawn {
        /// 1-based run number.
        run: u32,
        /// Runs asked for.
        runs: u32,
        /// The command line.
        command: String,
        /// What the operating system said.
        error: io::Error,
    },
    /// The command exited unsuccessfully.
    #[error(
        "run {run} of {runs}: `{command}` failed ({status}); expected it to exit 0 and print a `Time <seconds>` line"
    )]
    Failed {
        /// 1-based run number.
        run: u32,
        /// Runs asked for.
        runs: u32,
        /// The command line.
        command: String,
        /// Its exit status, e.g. `exit status: 1`.
        status: std::process::ExitStatus,
    },
    /// The command succeeded but its time could not be found.
    #[error("run {run} of {runs}: `{command}` {error}")]
    Time {
        /// 1-based run number.
        run: u32,
        /// Runs asked for.
        runs: u32,
        /// The command line.
        command: String,
        /// What was wrong with its output.
        error: TimeError,
    },
    /// The times are too large for the exact arithmetic.
    #[error("the run times are too large to average exactly (largest {largest_ms} ms)")]
    TooLarge {
        /// The largest time seen, in milliseconds.
        largest_ms: i64,
    },
    /// Writing the results failed (a broken pipe is one such case).
    #[error("writing the results")]
    Output(#[source] io::Error),
}

fn usage_text(reason: &Option<String>) -> String {
    match reason {
        Some(reason) => format!("{reason}\n{USAGE}"),
        None => USAGE.to_string(),
    }
}

/// Why no time could be taken from a command's output.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TimeError {
    /// No `Time` line at all.
    #[error("printed no `Time <seconds>` line on standard output (hackbench prints `Time: 4.096`)")]
    Missing,
    /// More than one `Time` line, so which run time is meant is unclear.
    #[error("printed {count} `Time` lines (`{first}`, `{second}`...); expected exactly one")]
    Several {
        /// How many.
        count: usize,
        /// The first one.
        first: String,
        /// The second one.
        second: String,
    },
    /// A `Time` line whose value is not a number.
    #[error("printed `{line}`, expected `Time <seconds>`: {error}")]
    BadNumber {
        /// The line.
        line: String,
        /// Why its value was refused.
        error: DecimalError,
    },
}

/// Reads the run count argument. Missing or `0` gives the bare usage line, as
/// the original did; anything else that is not a whole number says so.
pub fn parse_runs(arg: Option<&str>) -> Result<u32, RunError> {
    let Some(arg) = arg else {
        return Err(RunError::Usage { reason: None });
    };
    match arg.parse::<u32>() {
        Ok(0) => Err(RunError::Usage { reason: None }),
        Ok(n) => Ok(n),
        Err(_) => Err(RunError::Usage {
            reason: Some(format!(
                "runmany: `{arg}` is not a number of runs; give a whole number from 1 up"
            )),
        }),
    }
}

/// Finds the run time in a command's standard output: the single line whose first
/// word is `Time` or `Time:` (hackbench prints `Time: 4.096`), its second word the time
/// in seconds; or perf bench's `Total time: 0.123 [sec]`, the lines upcmp reads too.
pub fn extract_time(stdout: &str) -> Result<Decimal, TimeError> {
    let mut found: Vec<(&str, &str)> = Vec::new();
    for line in stdout.lines() {
        let mut words = line.split_whitespace();
        match (words.next(), words.clone().next()) {
            (Some("Time" | "Time:"), _) => found.push((line.trim(), words.next().unwrap_or(""))),
            (Some("Total"), Some("time:")) => found.push((line.trim(), words.nth(1).unwrap_or(""))),
            _ => {}
        }
    }
    match found.as_slice() {
        [] => Err(TimeError::Missing),
        [(line, value)] => Decimal::parse(value).map_err(|error| TimeError::BadNumber {
            line: line.to_string(),
            error,
        }),
        [first, second, ..] => Err(TimeError::Several {
            count: found.len(),
            first: first.0.to_string(),
            second: second.0.to_string(),
        }),
    }
}

/// The statistics of a series of runs, computed as the original did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summary {
    /// Each run's time in whole milliseconds, truncated (`ftoi t 3`).
    pub times_ms: Vec<i64>,
    /// Sum of the times divided by their count, truncated, in milliseconds.
    pub average_ms: i64,
    /// Sample standard deviation (n - 1) as a percent of the average, with the
    /// six decimals `bc` computed. `None` when undefined: a single run, or an
    /// average of zero (the original's `bc` divided by zero there).
    pub stdev_pct: Option<Decimal>,
}

impl Summary {
    /// Computes the summary of run times given in milliseconds.
    /// `None` for an empty list, or for times too large for exact arithmetic.
    pub fn from_times(times_ms: Vec<i64>) -> Option<Summary> {
        let n = i128::try_from(times_ms.len()).ok()?;
        if n == 0 {
            return None;
        }
        let sum: i128 = times_ms.iter().map(|&t| i128::from(t)).sum();
        let average_ms = i64::try_from(sum / n).ok()?;
        let mut var: i128 = 0;
        for &t in &times_ms {
            let d = i128::from(t) - i128::from(average_ms);
            var = var.checked_add(d.checked_mul(d)?)?;
        }
        let stdev_pct = if n < 2 || average_ms == 0 {
            None
        } else {
            let pct = bc_stdev_pct(var, n - 1, i128::from(average_ms))?;
            Some(Decimal {
                digits: u128::try_from(pct.v).ok()?,
                scale: pct.s,
                negative: false,
            })
        };
        Some(Summary {
            times_ms,
            average_ms,
            stdev_pct,
        })
    }

    /// The standard deviation as printed: `%.1f` of `bc`'s result, and `0.0`
    /// when it is undefined, which is what the original printed (its `printf`
    /// got an empty argument when `bc` failed).
    pub fn stdev_display(&self) -> String {
        match &self.stdev_pct {
            Some(pct) => pct.printf(1),
            None => "0.0".to_string(),
        }
    }

    /// A note for standard error when the printed `stdev 0.0%` means "undefined".
    pub fn stdev_note(&self) -> Option<String> {
        if self.stdev_pct.is_some() {
            None
        } else if self.times_ms.len() < 2 {
            Some("runmany: one run has no standard deviation; printed as 0.0%".to_string())
        } else {
            Some(
                "runmany: the average time is 0.000, so stdev as a percent of it is undefined; printed as 0.0%"
                    .to_string(),
            )
        }
    }
}

/// Writes one run's time as the original did: `printf "%6.3f " $time`.
pub fn render_run(time: &Decimal, mut out: impl Write) -> io::Result<()> {
    write!(out, "{:>6} ", time.printf(3))
}

/// Writes the end of the line: `printf "    Average %.3f   stdev %.1f%%\n"`.
pub fn render_summary(summary: &Summary, mut out: impl Write) -> io::Result<()> {
    writeln!(
        out,
        "    Average {}   stdev {}%",
        format_fixed(summary.average_ms, 3),
        summary.stdev_display()
    )
}

/// Runs the command `opts.runs` times, writing each time to `out` as it comes
/// (flushed, so a long series shows progress) and the average and stdev at the
/// end. The command's standard output is read for its time; its standard input
/// and error are the caller's. On a failed run the partial line is ended with a
/// newline and the error names the run.
pub fn run_many(opts: &RunOptions, out: &mut dyn Write) -> Result<Summary, RunError> {
    if opts.runs == 0 {
        return Err(RunError::Usage { reason: None });
    }
    let Some((program, args)) = opts.command.split_first() else {
        return Err(RunError::Usage {
            reason: Some("runmany: no command given".to_string()),
        });
    };
    let command = opts
        .command
        .iter()
        .map(|a| a.to_string_lossy())
        .collect::<Vec<_>>()
        .join(" ");
    let runs = opts.runs;
    let mut times = Vec::with_capacity(runs as usize);
    for run in 1..=runs {
        let time = match run_once(program, args) {
            Ok(time) => time,
            Err(failure) => {
                if run > 1 {
                    // End the partial line; the error itself goes to stderr.
                    let _ = writeln!(out);
                }
                let command = command.clone();
                return Err(match failure {
                    Failure::Spawn(error) => RunError::Spawn {
                        run,
                        runs,
                        command,
                        error,
                    },
                    Failure::Status(status) => RunError::Failed {
                        run,
                        runs,
                        command,
                        status,
                    },
                    Failure::Time(error) => RunError::Time {
                        run,
                        runs,
                        command,
                        error,
                    },
                });
            }
        };
        let Some(ms) = time.to_fixed(3) else {
            return Err(RunError::TooLarge { largest_ms: i64::MAX });
        };
        times.push(ms);
        render_run(&time, &mut *out).map_err(RunError::Output)?;
        out.flush().map_err(RunError::Output)?;
    }
    let largest_ms = times.iter().copied().max().unwrap_or(0);
    let summary = Summary::from_times(times).ok_or(RunError::TooLarge { largest_ms })?;
    render_summary(&summary, &mut *out).map_err(RunError::Output)?;
    out.flush().map_err(RunError::Output)?;
    Ok(summary)
}

enum Failure {
    Spawn(io::Error),
    Status(std::process::ExitStatus),
    Time(TimeError),
}

fn run_once(program: &OsString, args: &[OsString]) -> Result<Decimal, Failure> {
    let output = Command::new(program)
        .args(args)
        .stdin(Stdio::inherit())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .output()
        .map_err(Failure::Spawn)?;
    if !output.status.success() {
        return Err(Failure::Status(output.status));
    }
    extract_time(&String::from_utf8_lossy(&output.stdout)).map_err(Failure::Time)
}

// ---- bc, as far as the original's one expression needs it ----
//
// `scale=6; sqrt($var / ($# - 1)) * 100 / $avg` run by GNU bc. A bc number is
// an exact decimal `v / 10^s` whose scale `s` follows bc's rules per operation;
// results are truncated, never rounded. Reproducing the scales matters because
// bc's square root (Newton's method with truncating steps) can differ from the
// exact floor in its last digit.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Bc {
    v: i128,
    s: u32,
}

fn p10(n: u32) -> Option<i128> {
    10i128.checked_pow(n)
}

impl Bc {
    fn int(v: i128) -> Bc {
        Bc { v, s: 0 }
    }

    fn rescaled(self, s: u32) -> Option<i128> {
        self.v.checked_mul(p10(s - self.s)?)
    }

    /// Digits before the point (bc's `n_len`), at least 1.
    fn int_len(self) -> u32 {
        let int = (self.v / 10i128.pow(self.s)).unsigned_abs();
        int.checked_ilog10().map_or(1, |d| d + 1)
    }
}

/// `bc_divide`: quotient truncated to exactly `scale` decimals.
fn bc_div(a: Bc, b: Bc, scale: u32) -> Option<Bc> {
    let num = a.v.checked_mul(p10(b.s + scale)?)?;
    let den = b.v.checked_mul(p10(a.s)?)?;
    Some(Bc {
        v: num.checked_div(den)?,
        s: scale,
    })
}

/// `bc_add` (or `bc_sub` with `negate`): exact, scale `max(a.s, b.s, min_scale)`.
fn bc_add(a: Bc, b: Bc, min_scale: u32, negate: bool) -> Option<Bc> {
    let s = a.s.max(b.s).max(min_scale);
    let bv = b.rescaled(s)?;
    let v = a.rescaled(s)?.checked_add(if negate { -bv } else { bv })?;
    Some(Bc { v, s })
}

/// `bc_multiply`: scale `min(a.s + b.s, max(scale, a.s, b.s))`, truncated.
fn bc_mul(a: Bc, b: Bc, scale: u32) -> Option<Bc> {
    let full = a.s + b.s;
    let s = full.min(scale.max(a.s).max(b.s));
    let v = a.v.checked_mul(b.v)? / p10(full - s)?;
    Some(Bc { v, s })
}

/// `bc_is_near_zero`: at most one unit in the last of `scale` decimals.
fn bc_near_zero(d: Bc, scale: u32) -> bool {
    let scale = scale.min(d.s);
    d.v.unsigned_abs() / 10u128.pow(d.s - scale) <= 1
}

/// `bc_sqrt` for a non-negative `x`, GNU bc 1.07's algorithm step for step.
fn bc_sqrt(x: Bc, scale: u32) -> Option<Bc> {
    if x.v == 0 {
        return Some(Bc::int(0));
    }
    if x.v == 10i128.pow(x.s) {
        return Some(Bc::int(1));
    }
    let rscale = scale.max(x.s);
    let (mut guess, mut cscale) = if x.v < 10i128.pow(x.s) {
        (Bc::int(1), x.s)
    } else {
        // 10^(n_len/2), the exponent truncated.
        (Bc::int(p10(x.int_len() / 2)?), 3)
    };
    let point5 = Bc { v: 5, s: 1 };
    loop {
        let previous = guess;
        guess = bc_div(x, guess, cscale)?;
        guess = bc_add(guess, previous, 0, false)?;
        guess = bc_mul(guess, point5, cscale)?;
        let diff = bc_add(guess, previous, cscale + 1, true)?;
        if bc_near_zero(diff, cscale) {
            if cscale < rscale + 1 {
                cscale = (cscale * 3).min(rscale + 1);
            } else {
                break;
            }
        }
    }
    bc_div(guess, Bc::int(1), rscale)
}

/// `scale=6; sqrt(var / df) * 100 / avg`; `df` and `avg` are non-zero.
fn bc_stdev_pct(var: i128, df: i128, avg: i128) -> Option<Bc> {
    let root = bc_sqrt(bc_div(Bc::int(var), Bc::int(df), 6)?, 6)?;
    bc_div(bc_mul(root, Bc::int(100), 6)?, Bc::int(avg), 6)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(times: &[&str]) -> Vec<i64> {
        times
            .iter()
            .map(|t| Decimal::parse(t).unwrap().to_fixed(3).unwrap())
            .collect()
    }

    fn line(times: &[&str]) -> String {
        let mut out = Vec::new();
        for t in times {
            render_run(&Decimal::parse(t).unwrap(), &mut out).unwrap();
        }
        let summary = Summary::from_times(ms(times)).unwrap();
        render_summary(&summary, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn seed_series_first_line() {
        let times = ["4.096", "4.090", "4.073", "4.129", "4.092"];
        let summary = Summary::from_times(ms(&times)).unwrap();
        // 20480 / 5 = 4096; deviations 0 -6 -23 33 -4, squares sum to 1670.
        assert_eq!(summary.average_ms, 4096);
        // sqrt(1670 / 4) = 20.432816, * 100 / 4096 = 0.498848.
        assert_eq!(summary.stdev_pct.unwrap().to_string(), "0.498848");
        assert_eq!(
            line(&times),
            " 4.096  4.090  4.073  4.129  4.092     Average 4.096   stdev 0.5%\n"
        );
    }

    #[test]
    fn average_truncates() {
        // 10082+10035+10049+10068+10082 = 50316, / 5 = 10063.2 -> 10063.
        let s = Summary::from_times(ms(&["10.082", "10.035", "10.049", "10.068", "10.082"]));
        assert_eq!(s.unwrap().average_ms, 10063);
        assert_eq!(Summary::from_times(vec![1, 2]).unwrap().average_ms, 1);
    }

    #[test]
    fn single_run_and_zero_average_have_no_stdev() {
        let one = Summary::from_times(vec![4096]).unwrap();
        assert_eq!(one.stdev_pct, None);
        assert_eq!(one.stdev_display(), "0.0");
        assert!(one.stdev_note().unwrap().contains("one run"));
        let zero = Summary::from_times(vec![0, 0]).unwrap();
        assert_eq!(zero.stdev_pct, None);
        assert!(zero.stdev_note().unwrap().contains("average time is 0.000"));
        assert!(Summary::from_times(vec![]).is_none());
        let flat = Summary::from_times(vec![5, 5, 5]).unwrap();
        assert_eq!(flat.stdev_display(), "0.0");
        assert_eq!(flat.stdev_note(), None);
    }

    // Values printed by GNU bc 1.07.1 for `scale=6; sqrt(a / b)` and the
    // whole stdev expression.
    #[test]
    fn bc_sqrt_matches_gnu_bc() {
        let sqrt = |a, b| bc_sqrt(bc_div(Bc::int(a), Bc::int(b), 6).unwrap(), 6).unwrap();
        assert_eq!(sqrt(1650, 4), Bc { v: 20310096, s: 6 });
        assert_eq!(sqrt(1, 4), Bc { v: 500000, s: 6 });
        assert_eq!(sqrt(2, 1), Bc { v: 1414213, s: 6 });
        assert_eq!(sqrt(0, 3), Bc::int(0));
        assert_eq!(sqrt(4, 4), Bc::int(1));
        assert_eq!(bc_stdev_pct(1234, 4, 4096), Some(Bc { v: 428812, s: 6 }));
    }

    #[test]
    fn extract_time_takes_the_single_time_line() {
        let hackbench = "Running in process mode with 1 groups using 40 file descriptors each (== 40 tasks)\nEach sender will pass 50000 messages of 100 bytes\nTime: 4.096\n";
        assert_eq!(extract_time(hackbench).unwrap().to_string(), "4.096");
        assert_eq!(extract_time("Time 12.5 s\n").unwrap().to_string(), "12.5");
        // perf bench, as upcmp reads it.
        let perf_bench = "# Running 'sched/messaging' benchmark:\n# 20 sender and receiver processes per group\n\n     Total time: 0.123 [sec]\n";
        assert_eq!(extract_time(perf_bench).unwrap().to_string(), "0.123");
        assert!(matches!(extract_time("Total time\n"), Err(TimeError::Missing)));
        assert!(matches!(extract_time("Timer 1\n"), Err(TimeError::Missing)));
        assert!(matches!(
            extract_time("Time: 1\nTime: 2\n"),
            Err(TimeError::Several { count: 2, .. })
        ));
        assert!(matches!(extract_time("Time:\n"), Err(TimeError::BadNumber { .. })));
        assert!(matches!(extract_time("Time: 1e3\n"), Err(TimeError::BadNumber { .. })));
    }

    #[test]
    fn parse_runs_follows_the_original_usage_rules() {
        assert_eq!(parse_runs(Some("5")).unwrap(), 5);
        assert!(matches!(parse_runs(None), Err(RunError::Usage { reason: None })));
        assert!(matches!(parse_runs(Some("0")), Err(RunError::Usage { reason: None })));
        let err = parse_runs(Some("five")).unwrap_err().to_string();
        assert_eq!(
            err,
            format!("runmany: `five` is not a number of runs; give a whole number from 1 up\n{USAGE}")
        );
        assert!(parse_runs(Some("-3")).is_err());
    }
}
