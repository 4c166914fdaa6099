//! "System Activity": what the kernel counted over a test in run 1 against run 2
//! (`TEST/counters`), each counter tested with the benchmark values' test on the
//! repetitions and adjusted as a family of its own (docs/formulas.md, "Counters").

use super::stats::{self, Correction, Mark, Significance};
use serde::Serialize;
use upcmp_parsers::counters::CountersFile;

/// One repetition's counters and the operations its benchmark reported.
#[derive(Debug, Clone, Copy)]
pub struct CountedRepetition<'a> {
    /// Its `counters` file.
    pub counters: &'a CountersFile,
    /// Its benchmark's operations (unixperf's `trep` count), if known.
    pub operations: Option<u64>,
}

/// What the tested value of a counter is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CounterBasis {
    /// The change over the test divided by the benchmark's operations (both runs report
    /// them in every repetition): a run that did more work is not "worse" for it.
    PerOperation,
    /// The change over the test (no operation count on some side).
    PerTest,
    /// A ratio of two counters (instructions per cycle).
    Ratio,
}

impl CounterBasis {
    /// The suffix the report puts after a value.
    pub fn suffix(self) -> &'static str {
        match self {
            CounterBasis::PerOperation => "/op",
            CounterBasis::PerTest => "",
            CounterBasis::Ratio => "",
        }
    }
}

/// One counter of a test in both runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CounterRow {
    /// `SOURCE.NAME`: `vmstat.pgfault`, `perf.context-switches`, `interrupts.LOC`, …
    pub name: String,
    /// Run 1's tested value (mean over repetitions; see `basis`); None when absent there
    /// (not counted by the machine, or not in its files).
    pub run1: Option<f64>,
    /// Run 2's tested value.
    pub run2: Option<f64>,
    /// (run2 − run1) as % of run 1; None when run 1 is 0 or a side is absent.
    pub change: Option<f64>,
    /// What the report prints: `significant`, `noise`, `n/a` (one run a side, or absent).
    pub verdict: Mark,
    /// What `run1` and `run2` are.
    pub basis: CounterBasis,
    /// The change over the test (mean over repetitions), run 1.
    pub total1: Option<f64>,
    /// The change over the test, run 2.
    pub total2: Option<f64>,
    /// The change per second of the test's window, run 1.
    pub per_sec1: Option<f64>,
    /// The change per second, run 2.
    pub per_sec2: Option<f64>,
    /// Standard deviation of the tested value over run 1's repetitions, % of its mean.
    /// None with one repetition (its spread is undefined, not 0).
    pub run1_sd_pct: Option<f64>,
    /// The same for run 2.
    pub run2_sd_pct: Option<f64>,
    /// Shown in the text report: its change stands out after the family's adjustment, or
    /// everything was asked for (`--all-counters`), or nothing could be tested (one run a
    /// side) and it is among the largest changes.
    pub listed: bool,
    /// The test of the change of the tested value, adjusted with every counter of the
    /// report (Holm).
    pub noise: Significance,
}

impl CounterRow {
    /// The size of the change the report sorts by: infinite for a counter that was 0 in
    /// run 1 only, -1 for one with no change to speak of (absent).
    fn sort_key(&self) -> f64 {
        match (self.run1, self.run2, self.change) {
            (_, _, Some(c)) => c.abs(),
            (Some(a), Some(b), None) if a == 0.0 && b != 0.0 => f64::INFINITY,
            (Some(_), Some(_), None) => 0.0,
            _ => -1.0,
        }
    }
}

/// The change of `name` over one repetition, as a number; `perf.ipc` is instructions
/// over cycles. None when absent.
fn value_of(c: &CountersFile, name: &str) -> Option<f64> {
    if name == IPC {
        let i = c.get("perf.instructions")?.change()?;
        let y = c.get("perf.cycles")?.change()?;
        return (y > 0.0).then(|| i / y);
    }
    c.get(name)?.change()
}

/// The derived counter of instructions per cycle.
pub const IPC: &str = "perf.ipc";

/// How many untested counters a report with one run a side lists per test (the largest
/// changes): something to look at, marked n/a.
pub const UNTESTED_LISTED: usize = 10;

/// Compares the counters of a test; empty when some repetition of either run has none
/// (a run written without counters). Rows are sorted by the size of the change, largest
/// first; counters that were zero in every repetition of both runs are left out.
pub fn compare_counters(run1: &[CountedRepetition], run2: &[CountedRepetition]) -> Vec<CounterRow> {
    if run1.is_empty() || run2.is_empty() {
        return Vec::new();
    }
    let mut names: Vec<&str> = Vec::new();
    for r in run1.iter().chain(run2) {
        for (n, _) in &r.counters.counters {
            if !names.contains(&n.as_str()) {
                names.push(n);
            }
        }
    }
    let ipc = run1.iter().chain(run2).all(|r| value_of(r.counters, IPC).is_some());
    if ipc {
        names.push(IPC);
    }
    let per_op = run1.iter().chain(run2).all(|r| r.operations.is_some_and(|n| n > 0));
    let mut rows: Vec<CounterRow> = names
        .into_iter()
        .filter_map(|name| counter_row(name, run1, run2, per_op))
        .collect();
    rows.sort_by(|a, b| b.sort_key().total_cmp(&a.sort_key()));
    rows
}

/// A side's values of a counter, one per repetition: the tested ones, the changes over
/// the test, the changes per second.
type Values = (Vec<f64>, Vec<f64>, Vec<f64>);

fn counter_row(name: &str, run1: &[CountedRepetition], run2: &[CountedRepetition], per_op: bool) -> Option<CounterRow> {
    let basis = if name == IPC {
        CounterBasis::Ratio
    } else if per_op {
        CounterBasis::PerOperation
    } else {
        CounterBasis::PerTest
    };
    // Each side's values, or None when any repetition lacks the counter.
    let side = |reps: &[CountedRepetition]| -> Option<Values> {
        let mut tested = Vec::new();
        let mut totals = Vec::new();
        let mut per_sec = Vec::new();
        for r in reps {
            let v = value_of(r.counters, name)?;
            totals.push(v);
            if r.counters.window_sec > 0.0 {
                per_sec.push(v / r.counters.window_sec);
            }
            tested.push(match (basis, r.operations) {
                (CounterBasis::PerOperation, Some(n)) => v / n as f64,
                _ => v,
            });
        }
        Some((tested, totals, per_sec))
    };
    let (s1, s2) = (side(run1), side(run2));
    let all_zero = |s: &Option<Values>| s.as_ref().map_or(true, |(_, t, _)| t.iter().all(|&x| x == 0.0));
    if all_zero(&s1) && all_zero(&s2) && (s1.is_some() || s2.is_some()) {
        return None;
    }
    let mean_of = |s: &Option<Values>, k: usize| {
        s.as_ref().and_then(|s| {
            let v = [&s.0, &s.1, &s.2][k];
            (!v.is_empty()).then(|| stats::mean(v))
        })
    };
    let (m1, m2) = (mean_of(&s1, 0), mean_of(&s2, 0));
    let change = match (m1, m2) {
        (Some(a), Some(b)) if a != 0.0 => Some(100.0 * (b - a) / a.abs()),
        _ => None,
    };
    let empty = Vec::new();
    let (v1, v2) = (
        s1.as_ref().map_or(&empty, |s| &s.0),
        s2.as_ref().map_or(&empty, |s| &s.0),
    );
    let repeated = v1.len() > 1 || v2.len() > 1;
    let delta = m2.unwrap_or(0.0) - m1.unwrap_or(0.0);
    let verdict = if v1.is_empty() || v2.is_empty() {
        stats::Verdict::NotTested(stats::NotTested::NoValues)
    } else {
        // Counts are whole numbers: the floor of each side's variance is that of a
        // rounding to one event (per operation when divided by the operations).
        let ops = |reps: &[CountedRepetition]| reps.iter().filter_map(|r| r.operations).max().unwrap_or(1);
        let resolution = match basis {
            CounterBasis::PerOperation => 1.0 / ops(run1).max(ops(run2)) as f64,
            CounterBasis::PerTest => 1.0,
            CounterBasis::Ratio => 0.0,
        };
        stats::bench_test(v1, v2, resolution)
    };
    Some(CounterRow {
        name: name.to_string(),
        run1: m1,
        run2: m2,
        change,
        verdict: Mark::NotTested,
        basis,
        total1: mean_of(&s1, 1),
        total2: mean_of(&s2, 1),
        per_sec1: mean_of(&s1, 2),
        per_sec2: mean_of(&s2, 2),
        run1_sd_pct: (v1.len() > 1).then(|| stats::stddev_pct(v1)),
        run2_sd_pct: (v2.len() > 1).then(|| stats::stddev_pct(v2)),
        listed: false,
        noise: Significance::unadjusted(verdict, delta, repeated),
    })
}

/// Adjusts the counters of every test of a report together (Holm), sets each row's
/// verdict and whether the text report lists it; returns the family's size.
///
/// A family of their own, not the benchmark values' and CPU totals': a kernel exposes a
/// few hundred counters, and Holm over them all would take from the benchmark verdict
/// (which `--fail-if-worse` acts on) the power the repetitions give it. Holm, not
/// Benjamini–Hochberg: a counter is evidence read one by one, so each marked one must
/// be a real change with the report's 95% (family-wise), as for benchmark values.
pub fn adjust_counters(tests: &mut [&mut Vec<CounterRow>], all_counters: bool) -> usize {
    let n = {
        let mut members: Vec<&mut Significance> = tests
            .iter_mut()
            .flat_map(|t| t.iter_mut().map(|r| &mut r.noise))
            .collect();
        stats::adjust_family(Correction::Holm, &mut members)
    };
    for rows in tests.iter_mut() {
        let mut untested = 0;
        for r in rows.iter_mut() {
            r.verdict = r.noise.verdict;
            let shown_untested = r.verdict == Mark::NotTested
                && r.noise.not_tested == Some(stats::NotTested::SingleRuns)
                && untested < UNTESTED_LISTED;
            if shown_untested {
                untested += 1;
            }
            r.listed = all_counters || r.noise.stands_out() || shown_untested;
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;
    use upcmp_parsers::counters::CounterValue;

    fn file(window: f64, c: &[(&str, CounterValue)]) -> CountersFile {
        CountersFile {
            version: 1,
            window_sec: window,
            counters: c.iter().map(|(n, v)| (n.to_string(), *v)).collect(),
        }
    }

    fn rep(f: &CountersFile, ops: Option<u64>) -> CountedRepetition<'_> {
        CountedRepetition {
            counters: f,
            operations: ops,
        }
    }

    use CounterValue::{Absent, Delta};

    #[test]
    fn per_operation_values_and_their_test() {
        // Run 1: 1000 and 1100 faults for 100 operations (10, 11 a op); run 2: 2000, 2100
        // for 100 (20, 21 a op). Welch: delta 10, s² = 0.5 a side, se = √(0.5/2·2) = 0.7071,
        // ν = 2: t = 14.14.
        let faults = |secs, n| {
            file(
                secs,
                &[
                    ("vmstat.pgfault", Delta(n)),
                    ("perf.cycles", Absent),
                    ("vmstat.zero", Delta(0)),
                ],
            )
        };
        let a = [faults(2.0, 1000), faults(2.0, 1100)];
        let b = [faults(4.0, 2000), faults(4.0, 2100)];
        let r1: Vec<_> = a.iter().map(|f| rep(f, Some(100))).collect();
        let r2: Vec<_> = b.iter().map(|f| rep(f, Some(100))).collect();
        let mut rows = compare_counters(&r1, &r2);
        assert_eq!(rows.len(), 2, "the all-zero counter is left out: {rows:?}");
        let f = &rows[0];
        assert_eq!(f.name, "vmstat.pgfault");
        assert_eq!(f.basis, CounterBasis::PerOperation);
        assert_eq!((f.run1, f.run2), (Some(10.5), Some(20.5)));
        assert_eq!((f.total1, f.total2), (Some(1050.0), Some(2050.0)));
        assert_eq!((f.per_sec1, f.per_sec2), (Some(525.0), Some(512.5)));
        assert!((f.change.unwrap() - 100.0 * 10.0 / 10.5).abs() < 1e-9);
        let t = f.noise.se.unwrap();
        assert!((t - 0.5f64.sqrt()).abs() < 1e-9, "{t}");
        // Absent in both: kept, not tested, never a zero.
        let c = &rows[1];
        assert_eq!((c.name.as_str(), c.run1, c.run2), ("perf.cycles", None, None));
        let n = adjust_counters(&mut [&mut rows], false);
        assert_eq!(n, 1);
        assert_eq!(rows[0].verdict, Mark::Significant);
        assert!(rows[0].listed);
        assert_eq!(rows[1].verdict, Mark::NotTested);
        assert!(!rows[1].listed);
    }

    #[test]
    fn single_runs_are_not_tested_and_the_largest_are_listed() {
        let mut c1 = Vec::new();
        let mut c2 = Vec::new();
        for k in 0..15 {
            c1.push((format!("vmstat.c{k}"), Delta(100)));
            c2.push((format!("vmstat.c{k}"), Delta(100 + k)));
        }
        let f1 = CountersFile {
            version: 1,
            window_sec: 1.0,
            counters: c1,
        };
        let f2 = CountersFile {
            counters: c2,
            ..f1.clone()
        };
        let mut rows = compare_counters(&[rep(&f1, None)], &[rep(&f2, None)]);
        assert_eq!(rows[0].name, "vmstat.c14", "largest change first");
        assert_eq!(rows[0].basis, CounterBasis::PerTest);
        assert_eq!(adjust_counters(&mut [&mut rows], false), 0);
        assert!(rows.iter().all(|r| r.verdict == Mark::NotTested));
        assert_eq!(rows.iter().filter(|r| r.listed).count(), UNTESTED_LISTED);
        adjust_counters(&mut [&mut rows], true);
        assert!(rows.iter().all(|r| r.listed));
    }

    #[test]
    fn instructions_per_cycle_where_both_are_counted() {
        let f = file(1.0, &[("perf.cycles", Delta(1000)), ("perf.instructions", Delta(1500))]);
        let g = file(1.0, &[("perf.cycles", Delta(1000)), ("perf.instructions", Delta(1200))]);
        let rows = compare_counters(&[rep(&f, None)], &[rep(&g, None)]);
        let ipc = rows.iter().find(|r| r.name == IPC).unwrap();
        assert_eq!(
            (ipc.run1, ipc.run2, ipc.basis),
            (Some(1.5), Some(1.2), CounterBasis::Ratio)
        );
    }
}
