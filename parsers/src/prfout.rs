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

use crate::{numbered_lines, LineRef, NomError, ParseError};
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
    /// Samples on all CPUs.
    pub fn total(&self) -> u64 {
        self.per_cpu.iter().sum()
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

fn key_sp<'a>(k: &'static str) -> impl Parser<&'a str, Output = &'a str, Error = NomError<'a>> {
    delimited(space1, tag(k), space1)
}

/// A function row: counts, weights and their sum of squares when given, module, name.
type Row<'a> = (Vec<u64>, Option<(Vec<u64>, f64)>, &'a str, &'a str);

// "     73480    73481 [kernel] bcopy": counts, then the module, then the name to the end;
// "  3  1 | 3000 999 | 3.1e6 [kernel] bcopy" with weights.
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

/// The weight of `count` samples of `period` each, when it fits in 64 bits.
pub fn implied_weight(count: u64, period: f64) -> Option<u64> {
    let w = (count as f64 * period).round();
    (w.is_finite() && w >= 0.0 && w < u64::MAX as f64).then_some(w as u64)
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
            "test" => test = Some(text_arg()?),
            "command" => command = Some(text_arg()?),
            "event" => event = Some(text_arg()?),
            "unit" => unit = Some(l.parse_all(arg, alt((tag("ns"), tag("events"))), "ns or events")?.to_string()),
            "period-sec" => period_sec = Some(l.parse_all(arg, double, "a number of seconds")?),
            "period" => period_events = Some(l.parse_all(arg, double, "a number of events")?),
            "cpus" => ncpus = Some(l.parse_all(arg, dec_u32, "a CPU count")?),
            "wall-sec" => wall_sec = Some(l.parse_all(arg, double, "a number of seconds")?),
            "idle-set" => {
                let names = l.parse_all(arg, separated_list0(space1, word), "function names")?;
                idle_set = Some(names.into_iter().map(str::to_string).collect());
            }
            "cpu" => cpus.push(l.parse_all(
                line,
                cpu_line,
                "'cpu N samples N lost N throttled N [procstat-busy-sec S]'",
            )?),
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
    if !(period.is_finite() && period > 0.0 && wall_sec.is_finite() && wall_sec >= 0.0) {
        return Err(ParseError::whole(
            file,
            "a positive, finite period and a non-negative, finite wall-sec",
        ));
    }

    // Table: rows until `end`.
    let mut functions = Vec::with_capacity(nfunctions.min(1 << 20) as usize);
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
        }
        let name = name.trim_end();
        if name.is_empty() {
            return Err(l.error("", "a function name after the module"));
        }
        functions.push(FunctionSamples {
            module: module.to_string(),
            name: name.to_string(),
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
    for (k, cpu) in cpus.iter().enumerate() {
        let sum = functions.iter().try_fold(0u64, |s, f| s.checked_add(f.per_cpu[k]));
        if sum != Some(cpu.samples) {
            return Err(ParseError::whole(
                file,
                format!(
                    "function rows adding up to cpu {}'s {} samples, but they add up to {}",
                    cpu.cpu,
                    cpu.samples,
                    sum.map_or("more than 2^64".into(), |s| s.to_string())
                ),
            ));
        }
        let Some(total) = cpu.weight else { continue };
        // A row without weights weighs its counts times the period.
        let weight = |f: &FunctionSamples| match &f.weights {
            Some((w, _)) => Some(w[k]),
            None => implied_weight(f.per_cpu[k], period),
        };
        let sum = functions
            .iter()
            .try_fold(0u64, |s, f| weight(f).and_then(|w| s.checked_add(w)));
        if sum != Some(total) {
            return Err(ParseError::whole(
                file,
                format!(
                    "function rows adding up to cpu {}'s weight {total}, but they add up to {}",
                    cpu.cpu,
                    sum.map_or("more than 2^64".into(), |s| s.to_string())
                ),
            ));
        }
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

    #[test]
    fn weights_of_version_2() {
        let text = "upcmp-prfout 2
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

    #[test]
    fn missing_module() {
        let e = err(&GOOD.replace("[kernel] bcopy", "bcopy"));
        assert_eq!(e.line, 14);
    }
}
