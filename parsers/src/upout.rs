//! The `upout` file: what a benchmark printed while uprun profiled it.
//!
//! upcmp compares two runs' benchmark results by operation. This module reads them from the
//! text the benchmark wrote, in any mix of these shapes (docs/upout-format.md is the full
//! specification):
//!
//! - unixperf and x11perf result lines. Only `trep` lines (the total over all passes) give a
//!   result; `reps` lines (one pass) are checked for shape and otherwise ignored:
//!   `7054200 trep @   0.0035 msec (282000.0/sec): 4 by 4 double matrix multiply`
//! - the line `unixperf -mp N` adds after its copies' lines, a `trep` line whose description
//!   ends with [`aggregate_marker`]: `... (880000.0/sec): getpid system call [aggregate of 2 copies]`
//! - hackbench's `Time: 2.839` (also `Time 2.839`), labelled [`HACKBENCH_TIME`];
//! - perf bench's `Total time: 0.123 [sec]`, labelled `Total time (perf bench NAME)` after
//!   perf's `# Running 'NAME' benchmark:` line, else `Total time (perf bench)`.
//!
//! Every other line (report headers, blank lines, tables, shell noise) is skipped: a upout is
//! whatever the benchmark printed, and only result lines matter. A line that *starts* like a
//! unixperf result line (a count, then `reps` or `trep` or the start of one of them) but does
//! not finish like one is an error naming the file, line, column and what was expected: such
//! a line is a truncated or corrupted result, and skipping it would make a comparison quietly
//! lose a row. Time lines are results only when complete (`Time: 2.839`, `Total time: 0.123
//! [sec]`); anything else that starts with "Time" is prose and skipped, as tools print clock
//! times and durations in many shapes.
//!
//! The same operation reported several times is several copies of the benchmark run at once
//! (uprun's parallelism, or `unixperf -mp N`): each report becomes a result with
//! `copy: Some(k)` in order of appearance, plus one `copy: None` aggregate, which comes first.
//! The aggregate is the explicit aggregate line when the upout has one, else it is computed:
//! the sum of the copies' rates (the system's throughput), or the maximum of their times (the
//! run is over when its slowest copy is).
//!
//! Bounds: a result's description and a perf bench name are at most
//! [`MAX_NAME_BYTES`] long; a longer one is an error (no benchmark prints one, so it means
//! a damaged file). Rates whose sum is not a finite number are an error too.

use std::collections::HashMap;

use nom::bytes::complete::{tag, take_while};
use nom::character::complete::{char, digit1, space0, space1};
use nom::number::complete::double;
use nom::{IResult, Parser};

use crate::{ParseError, MAX_NAME_BYTES};

/// Which way a result improves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Rates: operations per second.
    HigherIsBetter,
    /// Times: seconds for a fixed amount of work.
    LowerIsBetter,
}

/// One benchmark result of a upout.
#[derive(Debug, Clone, PartialEq)]
pub struct BenchResult {
    /// The operation: unixperf's description (e.g. `fork, child immediately exits, parent
    /// waits`) without an aggregate marker, [`HACKBENCH_TIME`] for hackbench's time, or
    /// `Total time (perf bench NAME)` for perf bench.
    pub description: String,
    /// The `trep` rate per second, or the time in seconds.
    pub value: f64,
    /// `/sec` for rates, `sec` for times.
    pub unit: String,
    /// Whether a larger value is better.
    pub direction: Direction,
    /// `None` for the whole run or the aggregate of copies; `Some(k)` for copy `k` (1-based,
    /// in order of appearance) when several copies reported the same operation.
    pub copy: Option<u32>,
}

/// The label of hackbench's `Time: S` line.
pub const HACKBENCH_TIME: &str = "Time (hackbench)";

/// The suffix that marks an aggregate line of `copies` copies: ` [aggregate of N copies]`.
pub fn aggregate_marker(copies: u32) -> String {
    format!(" [aggregate of {copies} copies]")
}

/// Parses a upout. `file` names the input in errors. Empty input, or input without any
/// result line, gives an empty list (upcmp then compares wall time only).
pub fn parse_upout(text: &str, file: &str) -> Result<Vec<BenchResult>, ParseError> {
    let mut acc = Accumulator::default();
    let mut perf_bench_name: Option<&str> = None;
    for (idx, raw) in text.split('\n').enumerate() {
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        let at = |fail: Fail<'_>| ParseError::at(file, idx + 1, line, fail.rest, fail.expected);
        if let Some(rep) = rep_line(line).map_err(at)? {
            if rep.total {
                if let Some(rate) = rep.rate {
                    acc.add(rep.description, "/sec", Direction::HigherIsBetter, rate, rep.aggregate);
                }
            }
        } else if let Some(time) = time_line(line).map_err(at)? {
            acc.add(
                HACKBENCH_TIME,
                "sec",
                Direction::LowerIsBetter,
                time.seconds,
                time.aggregate,
            );
        } else if let Some(seconds) = total_time_line(line).map_err(at)? {
            let label = match perf_bench_name {
                Some(name) => format!("Total time (perf bench {name})"),
                None => "Total time (perf bench)".to_string(),
            };
            acc.add(&label, "sec", Direction::LowerIsBetter, seconds, None);
        } else if let Some(name) = perf_running_line(line) {
            if name.len() > MAX_NAME_BYTES {
                return Err(at(Fail {
                    rest: from(line, name),
                    expected: EXPECT_SHORT_NAME,
                }));
            }
            perf_bench_name = Some(name);
        }
    }
    acc.finish(file)
}

/// The operations a upout's benchmark performed: the summed `trep` counts of its first
/// operation over its copies (aggregate lines left out), or None when it has no `trep`
/// line (hackbench, perf bench, an external command). Lines that do not parse count
/// nothing here; [`parse_upout`] reports them.
pub fn operation_count(text: &str) -> Option<u64> {
    let mut first: Option<&str> = None;
    let mut total: Option<u64> = None;
    for raw in text.split('\n') {
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        let Ok(Some(rep)) = rep_line(line) else { continue };
        if !rep.total || rep.aggregate.is_some() || rep.rate.is_none() {
            continue;
        }
        if *first.get_or_insert(rep.description) == rep.description {
            total = Some(total.unwrap_or(0).saturating_add(rep.count));
        }
    }
    total
}

const EXPECT_SHORT_NAME: &str = "a name of at most 4096 bytes";

/// Why a line that started like a result line is not one.
struct Fail<'a> {
    /// The unparsed tail of the line, where the problem starts.
    rest: &'a str,
    expected: &'static str,
}

/// Runs one step of a line parser, naming what it expected if the step fails.
fn step<'a, O>(
    input: &'a str,
    mut parser: impl Parser<&'a str, Output = O, Error = nom::error::Error<&'a str>>,
    expected: &'static str,
) -> Result<(&'a str, O), Fail<'a>> {
    parser.parse(input).map_err(|_| Fail { rest: input, expected })
}

/// A finite, non-negative decimal number such as `0.0035` or `282000.0`.
fn number<'a>(input: &'a str, expected: &'static str) -> Result<(&'a str, f64), Fail<'a>> {
    // nom's double also takes `inf` and `nan`, which no benchmark prints as a result.
    let (rest, value) = step(input, double, expected)?;
    if !value.is_finite() || value < 0.0 || !input.starts_with(|c: char| c.is_ascii_digit()) {
        return Err(Fail { rest: input, expected });
    }
    Ok((rest, value))
}

/// A unixperf or x11perf result line.
struct RepLine<'a> {
    /// `trep` (total over passes) rather than `reps` (one pass).
    total: bool,
    /// The repetitions the line counts.
    count: u64,
    /// Operations per second; `None` for x11perf's `(unmeasurably fast)`.
    rate: Option<f64>,
    /// The operation, with trailing blanks and any aggregate marker removed.
    description: &'a str,
    /// `Some(N)` when the description carried ` [aggregate of N copies]`.
    aggregate: Option<u32>,
}

// 1410840 reps @   0.0035 msec (282000.0/sec): 4 by 4 double matrix multiply
// 7054200 trep @   0.0035 msec (282000.0/sec): 4 by 4 double matrix multiply
//     100 trep @ 0.0 msec (unmeasurably fast): some x11perf test
/// Parses a line that starts like a result line (a count, then a word that is a prefix of
/// `reps` or `trep`); `Ok(None)` for any other line.
fn rep_line(line: &str) -> Result<Option<RepLine<'_>>, Fail<'_>> {
    let start: IResult<&str, (&str, &str, &str, &str)> =
        (space0, digit1, space1, take_while(|c: char| c.is_ascii_alphabetic())).parse(line);
    let Ok((after_word, (_, count, _, word))) = start else {
        return Ok(None);
    };
    let starts_like = !word.is_empty() && ("reps".starts_with(word) || "trep".starts_with(word));
    if !starts_like {
        return Ok(None);
    }
    let word_at = from(line, word);
    let total = match word {
        "reps" => false,
        "trep" => true,
        _ => {
            return Err(Fail {
                rest: word_at,
                expected: "`reps` or `trep`",
            })
        }
    };
    let Ok(count) = count.parse::<u64>() else {
        let count_at = from(line, count);
        return Err(Fail {
            rest: count_at,
            expected: "a repetition count below 2^64",
        });
    };
    let (r, _) = step(after_word, (space1, char('@'), space1), "` @ ` after the count")?;
    if let Ok((r, _)) = step(r, tag("0.0 msec (unmeasurably fast): "), "") {
        let description = description(r)?;
        return Ok(Some(RepLine {
            total,
            count,
            rate: None,
            description,
            aggregate: None,
        }));
    }
    let (r, _msec) = number(r, "milliseconds per operation, e.g. `0.0035`")?;
    let (r, _) = step(r, (space1, tag("msec"), space1, char('(')), "` msec (`")?;
    let (r, _) = step(r, space0, "a rate")?;
    let (r, rate) = number(r, "a rate per second, e.g. `282000.0`")?;
    let (r, _) = step(r, tag("/sec): "), "`/sec): ` after the rate")?;
    let text = description(r)?;
    let (description, aggregate) = split_aggregate(text);
    Ok(Some(RepLine {
        total,
        count,
        rate: Some(rate),
        description,
        aggregate,
    }))
}

/// The tail of `line` that starts where its sub-slice `part` starts.
fn from<'a>(line: &'a str, part: &str) -> &'a str {
    &line[part.as_ptr() as usize - line.as_ptr() as usize..]
}

/// The description at the end of a result line: not empty, trailing blanks removed (the
/// original unixperf printed `mmap megabyte /dev/zero region ` with a trailing space).
fn description(rest: &str) -> Result<&str, Fail<'_>> {
    let text = rest.trim_end();
    if text.is_empty() {
        return Err(Fail {
            rest,
            expected: "a description of the operation",
        });
    }
    if text.len() > MAX_NAME_BYTES {
        return Err(Fail {
            rest,
            expected: EXPECT_SHORT_NAME,
        });
    }
    Ok(text)
}

/// Splits ` [aggregate of N copies]` off a description.
fn split_aggregate(text: &str) -> (&str, Option<u32>) {
    if let Some(at) = text.rfind(" [aggregate of ") {
        let (desc, marker) = text.split_at(at);
        if let (false, Some(n)) = (desc.trim_end().is_empty(), marker_copies(marker)) {
            return (desc.trim_end(), Some(n));
        }
    }
    (text, None)
}

/// N of exactly ` [aggregate of N copies]`.
fn marker_copies(marker: &str) -> Option<u32> {
    marker
        .strip_prefix(" [aggregate of ")?
        .strip_suffix(" copies]")?
        .parse()
        .ok()
}

/// hackbench's time (or unixperf's hackbench time aggregate).
struct TimeLine {
    seconds: f64,
    aggregate: Option<u32>,
}

// Time: 2.839
// Time 2.839
// Time: 2.839 [aggregate of 2 copies]
/// hackbench's time; `None` for any other line, including prose that starts with "Time".
/// A whole time line whose time is no number of seconds (`Time: nan`, `Time: inf`,
/// `Time: -1`) is an error: skipped as prose, it would lose the test's result quietly.
fn time_line(line: &str) -> Result<Option<TimeLine>, Fail<'_>> {
    let Some(r) = line.trim_start().strip_prefix("Time") else {
        return Ok(None);
    };
    let r = r.strip_prefix(':').unwrap_or(r);
    let parsed: IResult<&str, (&str, f64)> = (space1, double).parse(r);
    let Ok((tail, (_, seconds))) = parsed else {
        return Ok(None);
    };
    let time = match tail.trim_end() {
        "" => TimeLine {
            seconds,
            aggregate: None,
        },
        marker => match marker_copies(marker) {
            Some(n) => TimeLine {
                seconds,
                aggregate: Some(n),
            },
            None => return Ok(None),
        },
    };
    check_seconds(seconds, r.trim_start(), tail)?;
    Ok(Some(time))
}

/// What a time line's number must be.
const EXPECT_SECONDS: &str = "a time in seconds (a finite number, 0 or more)";

/// A time of `seconds`, written `text` up to `tail`, must be a finite number, 0 or more.
fn check_seconds<'a>(seconds: f64, text: &'a str, tail: &str) -> Result<(), Fail<'a>> {
    if seconds.is_finite() && seconds >= 0.0 {
        return Ok(());
    }
    Err(Fail {
        rest: &text[..text.len() - tail.len()],
        expected: EXPECT_SECONDS,
    })
}

//      Total time: 0.123 [sec]
/// perf bench's total time in seconds; `None` for other lines, an error for a whole line
/// whose time is no number of seconds.
fn total_time_line(line: &str) -> Result<Option<f64>, Fail<'_>> {
    let Some(r) = line.trim_start().strip_prefix("Total time:") else {
        return Ok(None);
    };
    let parsed: IResult<&str, (&str, f64, &str, &str)> = (space1, double, space1, tag("[sec]")).parse(r);
    let Ok((tail, (_, seconds, _, _))) = parsed else {
        return Ok(None);
    };
    if !tail.trim().is_empty() {
        return Ok(None);
    }
    let number = r.trim_start();
    let end = number.find(char::is_whitespace).unwrap_or(number.len());
    check_seconds(seconds, number, &number[end..])?;
    Ok(Some(seconds))
}

// # Running 'sched/messaging' benchmark:
/// The benchmark name of perf bench's banner line.
fn perf_running_line(line: &str) -> Option<&str> {
    line.strip_prefix("# Running '")?.strip_suffix("' benchmark:")
}

/// The reports of one operation, in order of appearance.
struct Operation {
    description: String,
    unit: &'static str,
    direction: Direction,
    copies: Vec<f64>,
    aggregates: Vec<f64>,
}

/// Collects results by operation, keeping the order of first appearance.
#[derive(Default)]
struct Accumulator {
    operations: Vec<Operation>,
    index: HashMap<(String, &'static str), usize>,
}

impl Accumulator {
    fn add(&mut self, description: &str, unit: &'static str, direction: Direction, value: f64, aggregate: Option<u32>) {
        let key = (description.to_string(), unit);
        let operations = &mut self.operations;
        let i = *self.index.entry(key).or_insert_with(|| {
            operations.push(Operation {
                description: description.to_string(),
                unit,
                direction,
                copies: Vec::new(),
                aggregates: Vec::new(),
            });
            operations.len() - 1
        });
        let op = &mut self.operations[i];
        match aggregate {
            Some(_) => op.aggregates.push(value),
            None => op.copies.push(value),
        }
    }

    /// The results; `file` names the upout in the error about rates too large to add up.
    fn finish(self, file: &str) -> Result<Vec<BenchResult>, ParseError> {
        let mut out = Vec::new();
        for op in self.operations {
            let result = |value: f64, copy: Option<u32>| BenchResult {
                description: op.description.clone(),
                value,
                unit: op.unit.to_string(),
                direction: op.direction,
                copy,
            };
            if op.copies.len() == 1 && op.aggregates.is_empty() {
                out.push(result(op.copies[0], None));
                continue;
            }
            // Explicit aggregate lines win over a computed one; several of them (several
            // `-mp` runs in one upout) combine like copies do.
            let combined = if op.aggregates.is_empty() {
                &op.copies
            } else {
                &op.aggregates
            };
            let aggregate = combine(op.direction, combined);
            if !aggregate.is_finite() {
                return Err(ParseError::whole(
                    file,
                    format!(
                        "rates of '{}' that add up to a finite number",
                        crate::shorten(&op.description)
                    ),
                ));
            }
            out.push(result(aggregate, None));
            for (k, &value) in op.copies.iter().enumerate() {
                out.push(result(value, Some(u32::try_from(k + 1).unwrap_or(u32::MAX))));
            }
        }
        Ok(out)
    }
}

/// The aggregate of copies: rates add up, times are as long as the slowest copy.
fn combine(direction: Direction, values: &[f64]) -> f64 {
    match direction {
        Direction::HigherIsBetter => values.iter().sum(),
        Direction::LowerIsBetter => values.iter().copied().fold(0.0, f64::max),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TESTDATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../testdata/unixperf/");

    fn read(name: &str) -> String {
        std::fs::read_to_string(format!("{TESTDATA}{name}")).expect("testdata file")
    }

    fn find<'a>(results: &'a [BenchResult], description: &str) -> &'a BenchResult {
        results
            .iter()
            .find(|r| r.description == description)
            .expect(description)
    }

    fn err(text: &str) -> ParseError {
        parse_upout(text, "t.upout").expect_err("should not parse")
    }

    #[test]
    fn real_reports_yield_every_trep_line() {
        // grep -c ' trep @' testdata/unixperf/FILE: one result per trep line, each
        // description appears once per report.
        for (name, treps) in [
            ("zap.62patched.n32", 78),
            ("zap.65aug3c.n32", 66),
            ("blitzen.62mr.n32", 75),
            ("blitzen.65jul13b.n32", 75),
        ] {
            let results = parse_upout(&read(name), name).expect(name);
            assert_eq!(results.len(), treps, "{name}");
            for r in &results {
                assert_eq!(r.copy, None, "{name}: {}", r.description);
                assert_eq!(r.unit, "/sec");
                assert_eq!(r.direction, Direction::HigherIsBetter);
                assert!(r.value > 0.0, "{name}: {}", r.description);
            }
        }
    }

    #[test]
    fn operation_counts() {
        let one = "1410840 reps @   0.0035 msec (282000.0/sec): mm\n7054200 trep @   0.0035 msec (282000.0/sec): mm\n\
                   25 trep @ 1187.2743 msec (    0.84/sec): other\n";
        assert_eq!(operation_count(one), Some(7054200));
        let copies = "10 trep @ 1.0 msec (1000.0/sec): fork\n12 trep @ 1.0 msec (1000.0/sec): fork\n\
                      22 trep @ 1.0 msec (2000.0/sec): fork [aggregate of 2 copies]\n";
        assert_eq!(operation_count(copies), Some(22));
        assert_eq!(operation_count("Time: 2.839\n"), None);
        assert_eq!(operation_count(&read("zap.62patched.n32")).map(|n| n > 0), Some(true));
    }

    #[test]
    fn golden_values_from_real_reports() {
        let zap = parse_upout(&read("zap.62patched.n32"), "zap").unwrap();
        // First result of the file: the first trep line, in order.
        assert_eq!(zap[0].description, "4 by 4 double matrix multiply");
        let fork = find(&zap, "fork, child immediately exits, parent waits");
        let blitzen = parse_upout(&read("blitzen.62mr.n32"), "blitzen").unwrap();
        // 7054200 trep @   0.0035 msec (282000.0/sec): 4 by 4 double matrix multiply
        assert_eq!(find(&blitzen, "4 by 4 double matrix multiply").value, 282000.0);
        //     25 trep @ 1187.2743 msec (    0.84/sec): use regexec with long .* pattern ...
        let last = blitzen.last().unwrap();
        assert_eq!(
            last.description,
            "use regexec with long .* pattern to search 142 kilobyte text"
        );
        assert_eq!(last.value, 0.84);
        // The original's description has a trailing blank, which is not part of the name.
        assert!(blitzen
            .iter()
            .any(|r| r.description == "mmap megabyte /dev/zero region"));
        assert!(fork.value > 0.0);
        let line = read("zap.62patched.n32")
            .lines()
            .find(|l| l.contains("trep") && l.ends_with("fork, child immediately exits, parent waits"))
            .unwrap()
            .to_string();
        let rate: f64 = line
            .split('(')
            .nth(1)
            .unwrap()
            .split('/')
            .next()
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert_eq!(fork.value, rate);
    }

    #[test]
    fn reps_lines_are_checked_but_not_results() {
        let text = "   1000 reps @   0.0100 msec (100000.0/sec): getpid system call\n";
        assert_eq!(parse_upout(text, "t").unwrap(), vec![]);
        let e = err("   1000 reps @   0.0100 msec (100000.0/sec\n");
        assert_eq!((e.line, e.column), (1, 39));
    }

    #[test]
    fn empty_and_resultless_inputs_give_nothing() {
        assert_eq!(parse_upout("", "t").unwrap(), vec![]);
        let text = "UNIX PERFORMANCE REPORT\nHostname: x\n\nLoad average: 0.1\n5 tests ran\n12 reported\n";
        assert_eq!(parse_upout(text, "t").unwrap(), vec![]);
    }

    #[test]
    fn truncated_trep_line_is_an_error_with_its_place() {
        let text = "header\n\n7054200 trep @   0.0035 msec (282000.0/s";
        let e = err(text);
        assert_eq!(e.file, "t.upout");
        assert_eq!(e.line, 3);
        assert_eq!(e.column, 39);
        assert_eq!(e.expected, "`/sec): ` after the rate");
        assert_eq!(e.found, "/s");
        let shown = e.to_string();
        assert!(shown.starts_with("t.upout:3:39: expected `/sec): `"), "{shown}");
    }

    #[test]
    fn malformed_result_lines_name_what_was_expected() {
        let cases: [(&str, usize, &str); 7] = [
            ("   100 tr", 8, "`reps` or `trep`"),
            ("   100 trep", 12, "` @ ` after the count"),
            (
                "   100 trep @ x msec (1.0/sec): d",
                15,
                "milliseconds per operation, e.g. `0.0035`",
            ),
            ("   100 trep @ 1.0 ms (1.0/sec): d", 18, "` msec (`"),
            (
                "   100 trep @ 1.0 msec (fast/sec): d",
                25,
                "a rate per second, e.g. `282000.0`",
            ),
            (
                "   100 trep @ 1.0 msec (1.0/sec): ",
                35,
                "a description of the operation",
            ),
            (
                "99999999999999999999 trep @ 1.0 msec (1.0/sec): d",
                1,
                "a repetition count below 2^64",
            ),
        ];
        for (line, column, expected) in cases {
            let e = err(line);
            assert_eq!((e.line, e.column, e.expected.as_str()), (1, column, expected), "{line}");
        }
    }

    #[test]
    fn same_operation_several_times_gives_copies_and_their_sum() {
        let text = "\
   1000 trep @   0.0100 msec (100000.0/sec): getpid system call
   1000 trep @   0.0125 msec ( 80000.0/sec): getpid system call
     50 trep @   2.0000 msec (   500.0/sec): fork, child immediately exits, parent waits
";
        let r = parse_upout(text, "t").unwrap();
        let got: Vec<(&str, f64, Option<u32>)> = r.iter().map(|r| (r.description.as_str(), r.value, r.copy)).collect();
        assert_eq!(
            got,
            vec![
                ("getpid system call", 180000.0, None),
                ("getpid system call", 100000.0, Some(1)),
                ("getpid system call", 80000.0, Some(2)),
                ("fork, child immediately exits, parent waits", 500.0, None),
            ]
        );
    }

    #[test]
    fn explicit_aggregate_line_is_the_aggregate() {
        // What `unixperf -mp 2 -getpid` prints (reps lines omitted).
        let text = "\
   1000 trep @   0.0100 msec (100000.0/sec): getpid system call
   1000 trep @   0.0125 msec ( 80000.0/sec): getpid system call
   2000 trep @   0.0056 msec (179000.0/sec): getpid system call [aggregate of 2 copies]
";
        let r = parse_upout(text, "t").unwrap();
        assert_eq!(r.len(), 3);
        assert_eq!((r[0].value, r[0].copy), (179000.0, None));
        assert_eq!(r[0].description, "getpid system call");
        assert_eq!((r[1].value, r[1].copy), (100000.0, Some(1)));
        assert_eq!((r[2].value, r[2].copy), (80000.0, Some(2)));
        assert_eq!(aggregate_marker(2), " [aggregate of 2 copies]");
    }

    #[test]
    fn hackbench_times_take_the_slowest_copy() {
        let one = parse_upout("Running in process mode\nTime: 2.839\n", "t").unwrap();
        assert_eq!(one.len(), 1);
        assert_eq!(one[0].description, HACKBENCH_TIME);
        assert_eq!((one[0].value, one[0].unit.as_str()), (2.839, "sec"));
        assert_eq!(one[0].direction, Direction::LowerIsBetter);
        let two = parse_upout("Time 1.5\nTime: 2.5\n", "t").unwrap();
        let got: Vec<(f64, Option<u32>)> = two.iter().map(|r| (r.value, r.copy)).collect();
        assert_eq!(got, vec![(2.5, None), (1.5, Some(1)), (2.5, Some(2))]);
        let marked = parse_upout("Time: 1.0\nTime: 2.0\nTime: 2.1 [aggregate of 2 copies]\n", "t").unwrap();
        assert_eq!((marked[0].value, marked[0].copy), (2.1, None));
        // Prose that happens to start with "Time" is not a result, nor is a time that is
        // not hackbench's bare seconds.
        let prose = "Time is up\nTime 3 seconds\nTime: 12:30:00\nTime: soon\nTime: 1.0 sec\n";
        assert_eq!(parse_upout(prose, "t").unwrap(), vec![]);
    }

    // Issue 26: a whole time line whose time is not a number of seconds was skipped as
    // prose, and the test lost its result without a word.
    #[test]
    fn times_that_are_no_seconds_are_errors() {
        for (text, column) in [
            ("Time: nan\n", 7),
            ("Time: inf\n", 7),
            ("Time 1e999\n", 6),
            ("Time: -1.5 [aggregate of 2 copies]\n", 7),
            ("ok\n     Total time: NaN [sec]\n", 18),
        ] {
            let e = parse_upout(text, "t/upout").unwrap_err();
            assert_eq!(
                (e.line, e.column),
                (1 + usize::from(text.starts_with("ok")), column),
                "{text:?}: {e}"
            );
            assert!(e.expected.contains("a time in seconds"), "{e}");
        }
    }

    #[test]
    fn perf_bench_total_time_is_named_after_its_benchmark() {
        let text = "\
# Running 'sched/messaging' benchmark:
# 20 sender and receiver processes per group
# 10 groups == 400 processes run

     Total time: 0.123 [sec]
";
        let r = parse_upout(text, "t").unwrap();
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].description, "Total time (perf bench sched/messaging)");
        assert_eq!((r[0].value, r[0].unit.as_str()), (0.123, "sec"));
        let bare = parse_upout("Total time: 1.5 [sec]\r\n", "t").unwrap();
        assert_eq!(bare[0].description, "Total time (perf bench)");
        assert_eq!(
            parse_upout("Total time: 5 minutes\nTotal time: 0.1\n", "t").unwrap(),
            vec![]
        );
    }

    #[test]
    fn x11perf_unmeasurably_fast_lines_are_valid_but_give_no_rate() {
        let text = "   100 trep @ 0.0 msec (unmeasurably fast): nothing at all\n";
        assert_eq!(parse_upout(text, "t").unwrap(), vec![]);
    }

    #[test]
    fn long_descriptions_are_an_error() {
        let long = "d".repeat(MAX_NAME_BYTES + 1);
        let e = err(&format!("\n   10 trep @ 1.0000 msec (1000.0/sec): {long}\n"));
        assert_eq!((e.line, e.column, e.expected.as_str()), (2, 40, EXPECT_SHORT_NAME));
        let e = err(&format!("# Running '{long}' benchmark:\n"));
        assert_eq!((e.line, e.column), (1, 12));
        let ok = "d".repeat(MAX_NAME_BYTES);
        assert_eq!(
            parse_upout(&format!("   10 trep @ 1.0 msec (1.0/sec): {ok}\n"), "t").unwrap()[0].description,
            ok
        );
    }

    #[test]
    fn rates_that_add_up_to_infinity_are_an_error() {
        let line = "   10 trep @ 0.0 msec (1e308/sec): op\n";
        let e = err(&line.repeat(2));
        assert_eq!(e.line, 0);
        assert!(e.expected.contains("'op' that add up to a finite number"), "{e}");
    }

    #[test]
    fn aggregate_marker_needs_a_number() {
        let text = "   10 trep @ 1.0000 msec (1000.0/sec): odd [aggregate of some copies]\n";
        let r = parse_upout(text, "t").unwrap();
        assert_eq!(r[0].description, "odd [aggregate of some copies]");
        assert_eq!(r[0].copy, None);
    }
}
