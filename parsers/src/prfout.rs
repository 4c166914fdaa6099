//! `prfout`: one test's profile as text (format in `docs/format.md`).
//!
//! ```text
//! upcmp-prfout 2
//! test forkwait
//! command unixperf -forkwait -loop 200000 -repeat 2
//! event cpu-clock
//! unit ns
//! period-sec 0.001
//! cpus 2
//! wall-sec 872.757
//! idle-set idle checkRunq
//! cpu 0 samples 871793 lost 964 throttled 0 procstat-busy-sec 438.10
//! cpu 1 samples 871793 lost 964 throttled 0
//! warning cpu 1: sampled busy time 3.1 s differs from /proc/stat busy time 3.5 s by 11.4%
//! functions 2
//! #     cpu0     cpu1 module   function
//!      73480    73481 [kernel] bcopy
//!     798313   798312 [kernel] idle
//! end
//! ```
//!
//! Version 2 adds each sample's weight (its period, in the event's unit): a `unit` line,
//! a `period N` line for events that are not time, `weight W` on a cpu line and
//! `| WEIGHT... | SQUARES` after a row's counts, where the weights are not simply the
//! counts times the period (a sampling frequency, or an event counted per sample).
//! Version 1 files read as version 2 files without weights.
//!
//! Policy: every line must be of a known kind; anything else is an error with its
//! location. The `functions` count and the closing `end` line make truncation an error,
//! and the per-CPU columns must add up to each CPU's sample (and weight) total.
//!
//! Values are checked against what a profile can hold, each error naming its line:
//! `period-sec` is a finite number of seconds above 0 and `wall-sec` one not below 0,
//! both at most [`MAX_SECONDS`]; `period` (events) is finite, above 0 and at most 2^64;
//! `cpus` is 1 to [`MAX_CPUS`] and each `cpu` line names another CPU below it; a
//! `procstat-busy-sec` is finite and not negative; every sum of counts (a CPU's column,
//! and the samples, lost samples and throttle events of all CPUs) and of weights (a CPU's
//! column, and the weights of all CPUs, given or implied by the period) stays below 2^64,
//! so that [`FunctionSamples::total`] and any sum over the profile's CPUs or functions
//! cannot overflow. Names (test, command, event, idle set, modules, functions) longer
//! than [`MAX_NAME_BYTES`] are cut, rows whose cut names are one are merged, and a
//! `warning` says how many names were cut.

use crate::{bounded_name, numbered_lines, LineRef, NomError, ParseError, EXPECT_CPU, MAX_CPUS, MAX_NAME_BYTES};
use nom::branch::alt;
use nom::bytes::complete::{is_not, tag, take_while1};
use nom::character::complete::{space0, space1, u32 as dec_u32, u64 as dec_u64};
use nom::combinator::{map, opt, rest};
use nom::multi::{many0, separated_list0};
use nom::number::complete::double;
use nom::sequence::{delimited, preceded};
use nom::Parser;

/// The format version upcmp writes; this parser reads it and every older one.
pub const FORMAT_VERSION: u32 = 2;

/// The first word of every prfout file.
pub const MAGIC: &str = "upcmp-prfout";

/// The largest `period-sec` and `wall-sec` read (about 31 years): far above any run, and
/// low enough that no product of a time and a count or a CPU count leaves the finite
/// range of `f64`.
pub const MAX_SECONDS: f64 = 1e9;

/// A parsed prfout file.
#[derive(Debug, Clone, PartialEq)]
pub struct Prfout {
    /// Format version from the first line.
    pub format: u32,
    /// The test's name (its directory name in the run).
    pub test: String,
    /// The command that ran, when recorded.
    pub command: Option<String>,
    /// Sampling event, e.g. `cpu-clock`.
    pub event: String,
    /// The unit of the weights: `ns` for time events, `events` for counts of the event.
    pub unit: String,
    /// What one sample stands for in `unit` (the sampling period, or the mean of the
    /// periods when they vary); `period-sec` × 10⁹ for time events.
    pub period: f64,
    /// Wall-clock duration of the sampled interval, in seconds.
    pub wall_sec: f64,
    /// Functions whose samples count as idle.
    pub idle_set: Vec<String>,
    /// One entry per sampled CPU, in column order.
    pub cpus: Vec<CpuTotals>,
    /// Warnings the collector recorded (without the `warning ` prefix).
    pub warnings: Vec<String>,
    /// Sample counts per function, one count per CPU in `cpus` order.
    pub functions: Vec<FunctionSamples>,
}

/// Per-CPU totals of one test.
#[derive(Debug, Clone, PartialEq)]
pub struct CpuTotals {
    /// The CPU's number.
    pub cpu: u32,
    /// Samples taken on it (all functions, idle included).
    pub samples: u64,
    /// Samples the kernel reported lost (PERF_RECORD_LOST).
    pub lost: u64,
    /// Throttle events seen.
    pub throttled: u64,
    /// The samples' summed weight, when given (else `samples` × the period).
    pub weight: Option<u64>,
    /// Busy time from /proc/stat over the same interval, when recorded.
    pub procstat_busy_sec: Option<f64>,
}

/// Sample counts of one function.
#[derive(Debug, Clone, PartialEq)]
pub struct FunctionSamples {
    /// Module: `kernel`, `user`, or a kernel module's name (written in brackets).
    pub module: String,
    /// Function name (may contain spaces, e.g. a user command's name).
    pub name: String,
    /// Samples on each CPU, in the order of [`Prfout::cpus`].
    pub per_cpu: Vec<u64>,
    /// The samples' summed weights on each CPU and the sum of their squares, when given
    /// (else the counts times the period, and the counts times its square).
    pub weights: Option<(Vec<u64>, f64)>,
}

impl FunctionSamples {
    /// Samples on all CPUs. Cannot overflow for a parsed profile (the parser checks the
    /// sum of all CPUs' samples); saturates for a hand-built one.
    pub fn total(&self) -> u64 {
        self.per_cpu.iter().fold(0u64, |sum, &n| sum.saturating_add(n))
    }
}

fn word(i: &str) -> nom::IResult<&str, &str, NomError<'_>> {
    is_not(" \t")(i)
}

// cpu 0 samples 871793 [weight 871793000000] lost 964 throttled 0 procstat-busy-sec 438.10
fn cpu_line(i: &str) -> nom::IResult<&str, CpuTotals, NomError<'_>> {
    map(
        (
            preceded(tag("cpu"), preceded(space1, dec_u32)),
            preceded(key_sp("samples"), dec_u64),
            opt(preceded(key_sp("weight"), dec_u64)),
            preceded(key_sp("lost"), dec_u64),
            preceded(key_sp("throttled"), dec_u64),
            opt(preceded(key_sp("procstat-busy-sec"), double)),
        ),
        |(cpu, samples, weight, lost, throttled, procstat_busy_sec)| CpuTotals {
            cpu,
            samples,
            lost,
            throttled,
            weight,
            procstat_busy_sec,
        },
    )
    .parse(i)
}

/// A number of seconds as `period-sec` and `wall-sec` need it: finite, at most
/// [`MAX_SECONDS`], and above 0 (or, with `zero`, not below 0: an imported count of events
/// without times has no wall time).
fn seconds(l: &LineRef<'_>, arg: &str, zero: bool) -> Result<f64, ParseError> {
    let s = l.parse_all(arg, double, "a number of seconds")?;
    if s.is_finite() && (s > 0.0 || (zero && s == 0.0)) && s <= MAX_SECONDS {
        Ok(s)
    } else if zero {
        Err(l.error(arg, format!("a number of seconds from 0 to {MAX_SECONDS:e}")))
    } else {
        Err(l.error(arg, format!("a number of seconds above 0 and at most {MAX_SECONDS:e}")))
    }
}

/// Cuts `name` to [`MAX_NAME_BYTES`], noting the first line where a name was cut and how
/// many were.
fn bounded(name: &str, line: usize, cut: &mut (usize, usize)) -> String {
    let (short, was_cut) = bounded_name(name);
    if was_cut {
        if cut.0 == 0 {
            cut.1 = line;
        }
        cut.0 += 1;
    }
    short.to_string()
}

fn key_sp<'a>(k: &'static str) -> impl Parser<&'a str, Output = &'a str, Error = NomError<'a>> {
    delimited(space1, tag(k), space1)
}

/// A function row: counts, weights and their sum of squares when given, module, name.
type Row<'a> = (Vec<u64>, Option<(Vec<u64>, f64)>, &'a str, &'a str);

// "     73480    73481 [kernel] bcopy": counts, then the module, then the name to the end;
// "  3  1 | 3000 999 | 4.1e6 [kernel] bcopy" with weights.
fn function_row(i: &str) -> nom::IResult<&str, Row<'_>, NomError<'_>> {
    (
        many0(preceded(space0, dec_u64)),
        opt((
            preceded((space0, tag("|")), many0(preceded(space0, dec_u64))),
            preceded((space0, tag("|"), space0), double),
        )),
        preceded(space0, delimited(tag("["), take_while1(|c| c != ']'), tag("]"))),
        preceded(space1, rest),
    )
        .parse(i)
}

/// The bounds a sum of squared weights `sq` breaks, when it breaks them: `n` samples of
/// non-negative weights summing to `W` have squares summing to at least `W²/n` (all equal)
/// and at most `W²` (all in one); no samples weigh nothing. A relative 10^-6 is left for
/// the rounding of the sum as it was added up and written.
fn impossible_squares(counts: &[u64], weights: &[u64], sq: f64) -> Option<(f64, f64)> {
    let n: f64 = counts.iter().map(|&c| c as f64).sum();
    let w: f64 = weights.iter().map(|&x| x as f64).sum();
    let (low, high) = if n == 0.0 { (0.0, 0.0) } else { (w * w / n, w * w) };
    let slack = 1e-6 * high;
    (n == 0.0 && w > 0.0 || sq < low - slack || sq > high + slack).then_some((low, high))
}

/// The weight of `count` samples of `period` each, when it fits in 64 bits.
pub fn implied_weight(count: u64, period: f64) -> Option<u64> {
    let w = (count as f64 * period).round();
    (w.is_finite() && w >= 0.0 && w < u64::MAX as f64).then_some(w as u64)
}

/// `functions` with the rows of one module and name (names cut to one) made one. The sums
/// fit: the parser checked every column's sums of counts and weights.
fn merge_same_names(functions: Vec<FunctionSamples>, period: f64) -> Vec<FunctionSamples> {
    let mut merged: Vec<FunctionSamples> = Vec::with_capacity(functions.len());
    let mut index = std::collections::HashMap::new();
    // A row's weights, given or implied by the period, and their sum of squares.
    let weights_of = |f: &FunctionSamples| {
        f.weights.clone().unwrap_or_else(|| {
            let w = f.per_cpu.iter().map(|&n| implied_weight(n, period).unwrap_or(u64::MAX));
            (w.collect(), f.total() as f64 * period * period)
        })
    };
    for f in functions {
        let key = (f.module.clone(), f.name.clone());
        let Some(&i) = index.get(&key) else {
            index.insert(key, merged.len());
            merged.push(f);
            continue;
        };
        let m: &mut FunctionSamples = &mut merged[i];
        // Weights first: a row without them weighs its own counts.
        if m.weights.is_some() || f.weights.is_some() {
            let (mut w, sq) = weights_of(m);
            let (fw, fsq) = weights_of(&f);
            for (a, b) in w.iter_mut().zip(fw) {
                *a = a.saturating_add(b);
            }
            m.weights = Some((w, (sq + fsq).min(f64::MAX)));
        }
        for (a, b) in m.per_cpu.iter_mut().zip(&f.per_cpu) {
            *a = a.saturating_add(*b);
        }
    }
    merged
}

/// Parses a whole prfout text; `file` names it in errors.
pub fn parse_prfout(text: &str, file: &str) -> Result<Prfout, ParseError> {
    if text.trim().is_empty() {
        return Err(ParseError::whole(file, "an upcmp prfout file, but it is empty"));
    }
    let mut lines = numbered_lines(text).peekable();
    let (n, first) = lines.next().expect("non-empty text has a line");
    let l = LineRef {
        file,
        number: n,
        text: first,
    };
    let format = l.parse_all(
        first,
        preceded((tag(MAGIC), space1), dec_u32),
        &format!("'{MAGIC} <version>' (is this an upcmp prfout file?)"),
    )?;
    if !(1..=FORMAT_VERSION).contains(&format) {
        return Err(l.error(
            first,
            format!("prfout format version 1 to {FORMAT_VERSION} (this upcmp cannot read version {format})"),
        ));
    }

    let mut test = None;
    let mut command = None;
    let mut event = None;
    let mut unit = None;
    let mut period_sec = None;
    let mut period_events = None;
    let mut ncpus = None;
    let mut wall_sec = None;
    let mut idle_set = None;
    let mut cpus: Vec<CpuTotals> = Vec::new();
    let mut warnings = Vec::new();
    let mut nfunctions = None;
    let mut last_header_line = n;
    // Names cut to MAX_NAME_BYTES: how many, and the line of the first.
    let mut cut = (0usize, 0usize);
    // The sums over all CPUs of samples, lost samples and throttle events.
    let mut cpu_sums = [0u64; 3];
    let mut cpu_lines = std::collections::HashMap::new();

    // Header: keyword lines up to `functions N`.
    for (n, line) in lines.by_ref() {
        last_header_line = n;
        let l = LineRef {
            file,
            number: n,
            text: line,
        };
        let (kw, tail) = match word(line) {
            Ok((tail, kw)) => (kw, tail),
            Err(_) => return Err(l.error(line, "a keyword")),
        };
        let arg = tail.trim_start();
        let text_arg = || -> Result<String, ParseError> {
            if arg.trim().is_empty() {
                Err(l.error(tail, format!("a value after '{kw}'")))
            } else {
                Ok(arg.trim_end().to_string())
            }
        };
        match kw {
            "test" => test = Some(bounded(&text_arg()?, n, &mut cut)),
            "command" => command = Some(bounded(&text_arg()?, n, &mut cut)),
            "event" => event = Some(bounded(&text_arg()?, n, &mut cut)),
            "unit" => unit = Some(l.parse_all(arg, alt((tag("ns"), tag("events"))), "ns or events")?.to_string()),
            "period-sec" => period_sec = Some(seconds(&l, arg, false)?),
            "period" => {
                let p = l.parse_all(arg, double, "a number of events")?;
                // 2^64: perf's periods are 64-bit counts.
                if !(p.is_finite() && p > 0.0 && p <= u64::MAX as f64) {
                    return Err(l.error(arg, "a number of events above 0 and at most 2^64"));
                }
                period_events = Some(p);
            }
            "cpus" => {
                let count = l.parse_all(arg, dec_u32, "a CPU count")?;
                if count == 0 || count > MAX_CPUS {
                    return Err(l.error(arg, format!("a CPU count from 1 to {MAX_CPUS}")));
                }
                ncpus = Some(count);
            }
            "wall-sec" => wall_sec = Some(seconds(&l, arg, true)?),
            "idle-set" => {
                let names = l.parse_all(arg, separated_list0(space1, word), "function names")?;
                idle_set = Some(names.into_iter().map(|f| bounded(f, n, &mut cut)).collect());
            }
            "cpu" => {
                let c = l.parse_all(
                    line,
                    cpu_line,
                    "'cpu N samples N lost N throttled N [procstat-busy-sec S]'",
                )?;
                let number_at = line[3..].trim_start();
                if c.cpu >= MAX_CPUS {
                    return Err(l.error(number_at, EXPECT_CPU));
                }
                if let Some(first) = cpu_lines.insert(c.cpu, n) {
                    return Err(l.error(
                        number_at,
                        format!("a CPU not listed before (cpu {} is on line {first} too)", c.cpu),
                    ));
                }
                if c.procstat_busy_sec.is_some_and(|b| !b.is_finite() || b < 0.0) {
                    let at = &line[line.find("procstat-busy-sec").unwrap_or(0)..];
                    return Err(l.error(at, "a finite, non-negative procstat-busy-sec"));
                }
                for (sum, (count, what)) in cpu_sums.iter_mut().zip([
                    (c.samples, "samples"),
                    (c.lost, "lost samples"),
                    (c.throttled, "throttle events"),
                ]) {
                    *sum = sum.checked_add(count).ok_or_else(|| {
                        l.error(
                            number_at,
                            format!("{what} that add up to at most {} over all CPUs", u64::MAX),
                        )
                    })?;
                }
                cpus.push(c);
            }
            "warning" => warnings.push(text_arg()?),
            "functions" => {
                nfunctions = Some(l.parse_all(arg, dec_u64, "a function count")?);
                break;
            }
            _ => {
                return Err(l.error(
                    line,
                    "a header keyword (test, command, event, unit, period-sec, period, cpus, wall-sec, idle-set, cpu, warning, functions)",
                ))
            }
        }
    }
    let missing = |what: &str| {
        ParseError::whole(
            file,
            format!("a '{what}' line in the header (the file ends or the table starts without it)"),
        )
    };
    let nfunctions = nfunctions.ok_or_else(|| missing("functions"))?;
    let test = test.ok_or_else(|| missing("test"))?;
    let event = event.ok_or_else(|| missing("event"))?;
    let unit = unit.unwrap_or_else(|| "ns".to_string());
    let period = match (unit.as_str(), period_sec, period_events) {
        ("ns", Some(s), _) => s * 1e9,
        ("ns", None, _) => return Err(missing("period-sec")),
        (_, _, Some(p)) => p,
        _ => return Err(missing("period")),
    };
    let ncpus = ncpus.ok_or_else(|| missing("cpus"))?;
    let wall_sec = wall_sec.ok_or_else(|| missing("wall-sec"))?;
    let idle_set = idle_set.ok_or_else(|| missing("idle-set"))?;
    if cpus.len() != ncpus as usize {
        return Err(ParseError {
            line: last_header_line,
            ..ParseError::whole(
                file,
                format!("{ncpus} 'cpu' lines (as 'cpus' says), found {}", cpus.len()),
            )
        });
    }
    // Every CPU's weight, given or implied by the period, and their sum fit in 64 bits.
    let mut all_weight = 0u64;
    for c in &cpus {
        let sum = c
            .weight
            .or_else(|| implied_weight(c.samples, period))
            .and_then(|w| all_weight.checked_add(w));
        let Some(sum) = sum else {
            return Err(ParseError {
                line: cpu_lines.get(&c.cpu).copied().unwrap_or(0),
                ..ParseError::whole(
                    file,
                    format!(
                        "weights (given, or the samples times the period) that add up to at most {} over all CPUs",
                        u64::MAX
                    ),
                )
            });
        };
        all_weight = sum;
    }

    // Table: rows until `end`. Not sized by `functions N`, which the rows have yet to
    // confirm.
    let mut functions = Vec::new();
    let mut column_sums = vec![0u64; cpus.len()];
    let mut weight_sums = vec![0u64; cpus.len()];
    let mut ended = false;
    let mut last_line = last_header_line;
    for (n, line) in lines {
        last_line = n;
        let l = LineRef {
            file,
            number: n,
            text: line,
        };
        let trimmed = line.trim();
        if trimmed.starts_with('#') || trimmed.is_empty() {
            continue;
        }
        if trimmed == "end" {
            ended = true;
            break;
        }
        let (counts, weights, module, name) = l.parse_all(
            line,
            function_row,
            "'<count per CPU>... [| <weight per CPU>... | <sum of squares>] [module] function'",
        )?;
        if counts.len() != cpus.len() {
            return Err(l.error(
                line,
                format!("{} sample counts (one per CPU), found {}", cpus.len(), counts.len()),
            ));
        }
        if let Some((w, sq)) = &weights {
            if w.len() != cpus.len() || !sq.is_finite() || *sq < 0.0 {
                return Err(l.error(
                    line,
                    format!(
                        "{} weights (one per CPU) and a non-negative sum of squares, found {} weights and {sq}",
                        cpus.len(),
                        w.len()
                    ),
                ));
            }
            if let Some((low, high)) = impossible_squares(&counts, w, *sq) {
                return Err(l.error(
                    line,
                    format!(
                        "a sum of squared weights the row's samples can have (from {low:e} to {high:e} for \
                         these counts and weights), found {sq:e}"
                    ),
                ));
            }
        }
        let name = name.trim_end();
        if name.is_empty() {
            return Err(l.error("", "a function name after the module"));
        }
        for ((sum, &count), c) in column_sums.iter_mut().zip(&counts).zip(&cpus) {
            *sum = sum.checked_add(count).ok_or_else(|| {
                l.error(
                    line,
                    format!(
                        "counts that add up to cpu {}'s {} samples, but its column passes {} here",
                        c.cpu,
                        c.samples,
                        u64::MAX
                    ),
                )
            })?;
        }
        // A row without weights weighs its counts times the period.
        for (k, (sum, c)) in weight_sums.iter_mut().zip(&cpus).enumerate() {
            let w = match &weights {
                Some((w, _)) => Some(w[k]),
                None => implied_weight(counts[k], period),
            };
            *sum = w.and_then(|w| sum.checked_add(w)).ok_or_else(|| {
                l.error(
                    line,
                    format!("weights that add up to at most {} in cpu {}'s column", u64::MAX, c.cpu),
                )
            })?;
        }
        functions.push(FunctionSamples {
            module: bounded(module, n, &mut cut),
            name: bounded(name, n, &mut cut),
            per_cpu: counts,
            weights,
        });
    }
    if !ended {
        return Err(ParseError {
            line: last_line,
            ..ParseError::whole(file, "the closing 'end' line: the file is truncated")
        });
    }
    if functions.len() as u64 != nfunctions {
        return Err(ParseError::whole(
            file,
            format!(
                "{nfunctions} function rows (as 'functions' says), found {}",
                functions.len()
            ),
        ));
    }
    for ((&sum, &weight), cpu) in column_sums.iter().zip(&weight_sums).zip(&cpus) {
        if sum != cpu.samples {
            return Err(ParseError::whole(
                file,
                format!(
                    "function rows adding up to cpu {}'s {} samples, but they add up to {sum}",
                    cpu.cpu, cpu.samples
                ),
            ));
        }
        if cpu.weight.is_some_and(|total| total != weight) {
            return Err(ParseError::whole(
                file,
                format!(
                    "function rows adding up to cpu {}'s weight {}, but they add up to {weight}",
                    cpu.cpu,
                    cpu.weight.unwrap_or(0)
                ),
            ));
        }
    }
    // A time event's samples fit in the window they were taken in: a CPU's timer takes
    // at most one sample more than the window holds periods (it keeps what was left of
    // its period from the window before), and runs of older uprun builds timed the window
    // from after the test's start (tens of ms on a busy machine, 1.6% of a 4 s test).
    // Far more is a damaged or forged file (a wall-sec of 0 made Idle -918 s).
    if unit == "ns" {
        let window = wall_sec * 1e9;
        for (&weight, cpu) in weight_sums.iter().zip(&cpus) {
            if weight as f64 > window * 1.5 + 0.1e9 + 2.0 * period {
                return Err(ParseError::whole(
                    file,
                    format!(
                        "cpu {}'s samples to stand for at most the {wall_sec} s of wall-sec (a time event's \
                         samples fit in the window they were taken in), but they stand for {:.6} s",
                        cpu.cpu,
                        weight as f64 / 1e9
                    ),
                ));
            }
        }
    }
    if cut.0 > 0 {
        functions = merge_same_names(functions, period);
        warnings.push(format!(
            "{} names longer than {MAX_NAME_BYTES} bytes were cut to that length (the first on line {})",
            cut.0, cut.1
        ));
    }
    Ok(Prfout {
        format,
        test,
        command,
        event,
        unit,
        period,
        wall_sec,
        idle_set,
        cpus,
        warnings,
        functions,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "upcmp-prfout 1
test forkwait
command unixperf -forkwait
event cpu-clock
period-sec 0.001
cpus 2
wall-sec 10.5
idle-set idle checkRunq
cpu 0 samples 12 lost 1 throttled 0 procstat-busy-sec 0.02
cpu 1 samples 7 lost 0 throttled 2
warning cpu 1: something
functions 3
#  cpu0 cpu1 module function
      10    3 [kernel] bcopy
       0    4 [user] user:my prog
       2    0 [ext4] ext4_find_entry
end
";

    #[test]
    fn parses_every_field() {
        let p = parse_prfout(GOOD, "x/prfout").unwrap();
        assert_eq!(p.test, "forkwait");
        assert_eq!(p.command.as_deref(), Some("unixperf -forkwait"));
        assert_eq!(p.event, "cpu-clock");
        assert_eq!((p.unit.as_str(), p.period), ("ns", 1e6));
        assert_eq!(p.wall_sec, 10.5);
        assert_eq!(p.idle_set, vec!["idle", "checkRunq"]);
        assert_eq!(p.cpus.len(), 2);
        assert_eq!(p.cpus[0].lost, 1);
        assert_eq!(p.cpus[0].procstat_busy_sec, Some(0.02));
        assert_eq!(p.cpus[1].throttled, 2);
        assert_eq!(p.cpus[1].procstat_busy_sec, None);
        assert_eq!(p.warnings, vec!["cpu 1: something"]);
        assert_eq!(p.functions[1].name, "user:my prog");
        assert_eq!(p.functions[1].module, "user");
        assert_eq!(p.functions[2].module, "ext4");
        assert_eq!(p.functions[0].total(), 13);
    }

    fn err(text: &str) -> ParseError {
        parse_prfout(text, "f").unwrap_err()
    }

    #[test]
    fn empty_file_is_named() {
        let e = err("");
        assert_eq!(e.to_string(), "f: expected an upcmp prfout file, but it is empty");
    }

    #[test]
    fn foreign_file_is_refused_at_line_one() {
        let e = err("hello world\n");
        assert_eq!((e.line, e.column), (1, 1));
        assert!(e.expected.contains("upcmp-prfout"));
    }

    #[test]
    fn newer_version_is_refused() {
        let e = err(&GOOD.replace("upcmp-prfout 1", "upcmp-prfout 7"));
        assert_eq!(e.line, 1);
        assert!(e.expected.contains("cannot read version 7"), "{e}");
    }

    #[test]
    fn truncated_file_is_an_error() {
        let cut = &GOOD[..GOOD.find("[ext4]").unwrap()];
        let e = err(cut);
        assert_eq!(e.line, 16);
        let cut = &GOOD[..GOOD.find("end").unwrap()];
        assert!(err(cut).expected.contains("truncated"));
    }

    #[test]
    fn bad_number_names_line_and_column() {
        let e = err(&GOOD.replace("wall-sec 10.5", "wall-sec ten"));
        assert_eq!((e.line, e.column), (7, 10));
        assert_eq!(e.expected, "a number of seconds");
        assert_eq!(e.found, "ten");
    }

    #[test]
    fn wrong_count_of_columns() {
        let e = err(&GOOD.replace("      10    3 [kernel]", "      10 [kernel]"));
        assert_eq!(e.line, 14);
        assert!(e.expected.contains("2 sample counts"), "{e}");
    }

    #[test]
    fn sums_must_match_cpu_totals() {
        let e = err(&GOOD.replace("cpu 1 samples 7", "cpu 1 samples 8"));
        assert!(e.expected.contains("cpu 1's 8 samples"), "{e}");
    }

    /// A version 2 profile of an event: one row with weights, one without.
    const WEIGHTED: &str = "upcmp-prfout 2
test t
event cycles
unit events
period 1000
cpus 2
wall-sec 1
idle-set
cpu 0 samples 3 weight 3500 lost 0 throttled 0
cpu 1 samples 1 lost 0 throttled 0
functions 2
#  cpu0 cpu1 | weights | squares  module function
     2    0 | 2500 0 | 3.25e6 [kernel] a
     1    1 [kernel] b
end
";

    #[test]
    fn weights_of_version_2() {
        let text = WEIGHTED;
        let p = parse_prfout(text, "v2").unwrap();
        assert_eq!((p.unit.as_str(), p.period), ("events", 1000.0));
        assert_eq!(p.cpus[0].weight, Some(3500));
        assert_eq!(p.functions[0].weights, Some((vec![2500, 0], 3.25e6)));
        assert_eq!(p.functions[1].weights, None);
        // The weights must add up as the counts do.
        let e = parse_prfout(&text.replace("weight 3500", "weight 3400"), "v2").unwrap_err();
        assert!(e.expected.contains("cpu 0's weight 3400"), "{e}");
        let e = parse_prfout(&text.replace("| 2500 0 |", "| 2500 |"), "v2").unwrap_err();
        assert!(e.expected.contains("2 weights"), "{e}");
        let e = parse_prfout(&text.replace("period 1000\n", ""), "v2").unwrap_err();
        assert!(e.expected.contains("'period'"), "{e}");
    }

    // Issue 26: 2 samples weighing 2500 in all have squares summing to 3.125e6 (1250
    // each) to 6.25e6 (all in one): anything else is a damaged or forged file, whose
    // noise estimate would be wrong.
    #[test]
    fn impossible_sums_of_squares_are_errors() {
        for sq in ["3.125e6", "6.25e6"] {
            let ok = WEIGHTED.replace("| 3.25e6 [kernel]", &format!("| {sq} [kernel]"));
            assert!(parse_prfout(&ok, "v2").is_ok(), "{sq}");
        }
        for sq in ["1", "3.1e6", "6.3e6", "1e300"] {
            let bad = WEIGHTED.replace("| 3.25e6 [kernel]", &format!("| {sq} [kernel]"));
            let e = parse_prfout(&bad, "v2").unwrap_err();
            assert_eq!(e.line, 13, "{sq}: {e}");
            assert!(e.expected.contains("sum of squared weights"), "{sq}: {e}");
        }
        // No samples weigh nothing.
        let bad = WEIGHTED.replace("     2    0 | 2500 0 | 3.25e6", "     0    0 | 2500 0 | 3.25e6");
        assert!(parse_prfout(&bad, "v2").is_err());
    }

    #[test]
    fn missing_header_line() {
        let e = err(&GOOD.replace("event cpu-clock\n", ""));
        assert!(e.expected.contains("'event'"), "{e}");
    }

    #[test]
    fn unknown_keyword() {
        let e = err(&GOOD.replace("event cpu-clock", "evnt cpu-clock"));
        assert_eq!(e.line, 4);
        assert!(e.expected.starts_with("a header keyword"));
    }

    #[test]
    fn cpu_count_mismatch() {
        let e = err(&GOOD.replace("cpus 2", "cpus 3"));
        assert!(e.expected.contains("3 'cpu' lines"), "{e}");
    }

    /// The error of GOOD with `from` replaced by `to`.
    fn err_with(from: &str, to: &str) -> ParseError {
        assert!(GOOD.contains(from), "{from}");
        err(&GOOD.replace(from, to))
    }

    #[test]
    fn counts_wrapping_past_u64_are_an_error() {
        // 2^64 - 1 + 8 wraps to 7, cpu 1's total: accepted before sums were checked.
        let max = u64::MAX;
        let e = err_with("       0    4 [user]", &format!("       0 {max} [user]"));
        assert_eq!(e.line, 15);
        assert!(e.expected.contains("passes 18446744073709551615"), "{e}");
        let e = err_with("cpu 1 samples 7", &format!("cpu 1 samples {max}"));
        assert_eq!(e.line, 10);
        assert!(e.expected.contains("samples that add up to at most"), "{e}");
        let e = err_with("lost 0 throttled 2", &format!("lost {max} throttled 2"));
        assert!(e.expected.contains("lost samples that add up"), "{e}");
    }

    #[test]
    fn impossible_times_are_an_error() {
        for (from, to, line) in [
            ("period-sec 0.001", "period-sec inf", 5),
            ("period-sec 0.001", "period-sec nan", 5),
            ("period-sec 0.001", "period-sec 0", 5),
            ("period-sec 0.001", "period-sec -0.001", 5),
            ("wall-sec 10.5", "wall-sec 1e308", 7),
            ("wall-sec 10.5", "wall-sec -1", 7),
            ("wall-sec 10.5", "wall-sec nan", 7),
        ] {
            let e = err_with(from, to);
            assert_eq!((e.line, e.column), (line, from.find(' ').unwrap() + 2), "{to}");
            assert!(
                e.expected.contains("seconds") && e.expected.contains("1e9"),
                "{to}: {e}"
            );
        }
        // A count of events without times has no wall time.
        let events = GOOD
            .replace("upcmp-prfout 1", "upcmp-prfout 2")
            .replace("period-sec 0.001", "unit events\nperiod 1000")
            .replace("wall-sec 10.5", "wall-sec 0");
        let p = parse_prfout(&events, "f").unwrap();
        assert_eq!(p.wall_sec, 0.0);
        // A time event's samples fit in their window, with room for a timer's sample and
        // older builds' late start: 12 samples of 0.1 s fit in 0.7 s, not in 0.5 s or 0.
        let slow = GOOD.replace("period-sec 0.001", "period-sec 0.1");
        let e = err(&slow.replace("wall-sec 10.5", "wall-sec 0"));
        assert!(
            e.expected.contains("cpu 0's samples to stand for at most the 0 s"),
            "{e}"
        );
        let e = err(&slow.replace("wall-sec 10.5", "wall-sec 0.5"));
        assert!(e.expected.contains("but they stand for 1.200000 s"), "{e}");
        parse_prfout(&slow.replace("wall-sec 10.5", "wall-sec 0.7"), "f").unwrap();
        let e = err_with("procstat-busy-sec 0.02", "procstat-busy-sec nan");
        assert_eq!((e.line, e.column), (9, 37));
        assert_eq!(e.expected, "a finite, non-negative procstat-busy-sec");
    }

    #[test]
    fn impossible_cpus_are_an_error() {
        let e = err_with("cpus 2", "cpus 0");
        assert_eq!((e.line, e.column), (6, 6));
        assert!(e.expected.contains("from 1 to 8192"), "{e}");
        assert!(err_with("cpus 2", "cpus 8193").expected.contains("from 1 to 8192"));
        let e = err_with("cpu 1 samples", "cpu 8192 samples");
        assert_eq!((e.line, e.column), (10, 5));
        assert!(e.expected.contains("below 8192"), "{e}");
        let e = err_with("cpu 1 samples", "cpu 0 samples");
        assert_eq!(e.line, 10);
        assert!(e.expected.contains("cpu 0 is on line 9 too"), "{e}");
    }

    #[test]
    fn long_names_are_cut_with_a_warning() {
        // A 100 MB name once made upcmp allocate 4.7 GB; 1 MB shows the cut.
        let long = "f".repeat(1 << 20);
        let p = parse_prfout(&GOOD.replace("bcopy", &long).replace("idle checkRunq", &long), "f").unwrap();
        assert_eq!(p.functions[0].name.len(), MAX_NAME_BYTES);
        assert_eq!(p.idle_set[0].len(), MAX_NAME_BYTES);
        assert_eq!(
            p.warnings.last().unwrap(),
            "2 names longer than 4096 bytes were cut to that length (the first on line 8)"
        );
    }

    #[test]
    fn rows_whose_cut_names_are_one_are_merged() {
        // Two names that differ only past the bound: one row, counts and weights added
        // (a row without weights weighs its counts times the period).
        let long = format!("a{}", "é".repeat(MAX_NAME_BYTES));
        let text = WEIGHTED
            .replace("] a\n", &format!("] {long}a\n"))
            .replace("] b\n", &format!("] {long}b\n"));
        let p = parse_prfout(&text, "f").unwrap();
        assert_eq!(p.functions.len(), 1);
        let f = &p.functions[0];
        assert_eq!(f.name.len(), MAX_NAME_BYTES - 1, "cut at a character boundary");
        assert_eq!(f.per_cpu, [3, 1]);
        assert_eq!(f.weights, Some((vec![3500, 1000], 3.25e6 + 2e6)));
    }

    #[test]
    fn weights_past_u64_are_an_error() {
        let max = u64::MAX;
        // Given weights of one column.
        let text = GOOD
            .replace("upcmp-prfout 1", "upcmp-prfout 2")
            .replace(
                "      10    3 [kernel]",
                &format!("      10    3 | {max} 3000000 | 1e38 [kernel]"),
            )
            .replace("       0    4 [user]", "       0    4 | 1 4000000 | 5e12 [user]");
        let e = err(&text);
        assert_eq!(e.line, 15);
        assert!(e.expected.contains("in cpu 0's column"), "{e}");
        // 2^64: 12 + 7 samples of a period of 1e9 s (1e18 ns).
        let e = err_with("period-sec 0.001", "period-sec 1e9");
        assert_eq!(e.line, 10);
        assert!(
            e.expected.contains("weights (given, or the samples times the period)"),
            "{e}"
        );
        let e = err_with("period-sec 0.001", "unit events\nperiod 1e30");
        assert_eq!(e.line, 6);
        assert!(e.expected.contains("at most 2^64"), "{e}");
    }

    #[test]
    fn a_huge_function_count_allocates_nothing() {
        // The count is checked against the rows, never trusted for an allocation.
        let e = err_with("functions 3", &format!("functions {}", u64::MAX));
        assert!(e.expected.contains("function rows"), "{e}");
    }

    #[test]
    fn missing_module() {
        let e = err(&GOOD.replace("[kernel] bcopy", "bcopy"));
        assert_eq!(e.line, 14);
    }
}
