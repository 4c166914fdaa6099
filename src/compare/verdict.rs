//! The verdict a script or CI job acts on (`upcmp --fail-if-worse PCT`): is a benchmark
//! value worse by more than PCT, and significant?

use super::bench::BenchRow;
use super::runs::{RunComparison, TestOutcome};
use super::stats::{Mark, NoiseTest};
use super::ProfileComparison;
use serde::Serialize;

/// A value that is worse beyond the limit, and significant.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Worse {
    /// The test.
    pub test: String,
    /// The benchmark value's description (or `CPU time`).
    pub what: String,
    /// How much worse, in % of run 1 (rates that fell, times that grew).
    pub worse_pct: f64,
    /// The adjusted p-value of its test.
    pub q_value: Option<f64>,
    /// The test that decided.
    pub noise_test: Option<NoiseTest>,
}

/// The outcome of `--fail-if-worse`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FailVerdict {
    /// The limit, in %.
    pub limit_pct: f64,
    /// Values worse by more than the limit and significant; the run fails when any.
    pub worse: Vec<Worse>,
    /// Values tested (with a verdict from the repetitions).
    pub tested: usize,
    /// Values worse by more than the limit whose change is not significant.
    pub within_noise: usize,
    /// What could not be compared, each with why (a test on one side only, sides that
    /// ran different benchmarks, a value with no test): then "not worse" cannot be said.
    pub untested: Vec<String>,
}

/// What a script does with a verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Every value was compared, and none is significantly worse beyond the limit.
    NotWorse,
    /// A value is significantly worse beyond the limit.
    Worse,
    /// Nothing is significantly worse, but something could not be compared.
    CannotTest,
}

impl FailVerdict {
    /// Whether the change fails the limit.
    pub fn failed(&self) -> bool {
        !self.worse.is_empty()
    }

    /// A value worse beyond the limit decides; else anything not compared makes the
    /// verdict "cannot test", never "not worse".
    pub fn outcome(&self) -> Outcome {
        if self.failed() {
            Outcome::Worse
        } else if self.untested.is_empty() {
            Outcome::NotWorse
        } else {
            Outcome::CannotTest
        }
    }

    /// The sentence a script's log ends with.
    pub fn reason(&self) -> String {
        let limit = self.limit_pct;
        if let Some(w) = self.worse.first() {
            let more = match self.worse.len() {
                1 => String::new(),
                n => format!(" (and {} more)", n - 1),
            };
            let q = w.q_value.map(|q| format!(", adjusted p = {q:.2e}")).unwrap_or_default();
            let by = w
                .noise_test
                .map(|t| format!(" by {}", test_words(t)))
                .unwrap_or_default();
            return format!(
                "worse: {}: {} is {:.1}% worse (more than {limit}%, beyond the noise{by}{q}){more}",
                w.test, w.what, w.worse_pct
            );
        }
        if let Some(first) = self.untested.first() {
            let more = match self.untested.len() {
                1 => String::new(),
                n => format!(" (and {} more)", n - 1),
            };
            return format!(
                "cannot test: {first}{more}; {} value{} compared, none significantly worse than {limit}%",
                self.tested,
                if self.tested == 1 { "" } else { "s" }
            );
        }
        match self.within_noise {
            0 => format!(
                "not worse: no benchmark value is worse by more than {limit}% ({} tested)",
                self.tested
            ),
            n => format!(
                "not worse: {n} benchmark value{} worse by more than {limit}% but within the noise ({} tested)",
                if n == 1 { " is" } else { "s are" },
                self.tested
            ),
        }
    }
}

/// Why the benchmark value `b` of a test with `repetitions` a side has no test, in the
/// words of its case.
fn why_untested(b: &BenchRow, repetitions: (usize, usize)) -> String {
    use super::stats::NotTested;
    match (b.run1, b.run2) {
        (None, _) => return "no value in run 1".into(),
        (_, None) => return "no value in run 2".into(),
        _ => {}
    }
    let (n1, n2) = (b.run1_values.len(), b.run2_values.len());
    match b.noise.and_then(|n| n.not_tested) {
        Some(NotTested::NoVariance) => "the values vary neither between repetitions nor by their rounding".into(),
        Some(NotTested::NoValues) => "a side has no value".into(),
        _ if n1 <= 1 && n2 <= 1 && repetitions == (1, 1) => {
            "one run a side measures no run-to-run noise (run uprun --runs N)".into()
        }
        _ => format!(
            "{n1} and {n2} values in {} and {} repetitions: too few for a test",
            repetitions.0, repetitions.1
        ),
    }
}

/// The test that decided, as the reason line names it.
pub fn test_words(t: NoiseTest) -> &'static str {
    match t {
        NoiseTest::ExactCounts => "the exact test of the sample counts",
        NoiseTest::NormalCounts => "the normal test of the sampling error",
        NoiseTest::Welch => "Welch's t-test on the repetitions",
        NoiseTest::OneVsMany => "the t-test of one run against the repetitions' spread",
        NoiseTest::Moderated => "the moderated t over the test's functions",
        NoiseTest::Dispersed => "the sampling error with the functions' run-to-run spread",
    }
}

/// How much worse `b` is in run 2, in % of run 1: direction-aware (a rate that fell and
/// a time that grew are both positive).
pub fn worse_pct(b: &BenchRow) -> Option<f64> {
    let (x, y) = (b.run1?, b.run2?);
    if x == 0.0 {
        return None;
    }
    let change = 100.0 * (y - x) / x.abs();
    Some(if b.lower_is_better { change } else { -change })
}

/// The verdict of `--fail-if-worse limit_pct` on the benchmark values of a comparison.
pub fn fail_if_worse(r: &RunComparison, limit_pct: f64) -> FailVerdict {
    let mut v = FailVerdict {
        limit_pct,
        worse: Vec::new(),
        tested: 0,
        within_noise: 0,
        untested: Vec::new(),
    };
    for t in &r.tests {
        let (bench, unlike, repetitions) = match &t.outcome {
            TestOutcome::OnlyIn { run, dir } => {
                v.untested
                    .push(format!("{}: only run {run} has it ({})", t.name, dir.display()));
                continue;
            }
            TestOutcome::Compared {
                bench,
                unlike,
                repetitions1,
                repetitions2,
                ..
            } => (bench, unlike, (*repetitions1, *repetitions2)),
        };
        if let Some(u) = unlike.iter().find(|u| u.no_speed_ratio) {
            v.untested.push(match u.item.as_str() {
                "command" => format!(
                    "{0}: the sides ran different benchmarks ('{1}' vs '{2}'; --same-test {0}, or one key=KEY before \
                     the test on both test_list lines, compares them)",
                    t.name, u.run1, u.run2
                ),
                item => format!("{}: the sides differ in {item} ('{}' vs '{}')", t.name, u.run1, u.run2),
            });
            continue;
        }
        if bench.is_empty() {
            v.untested.push(format!("{}: no benchmark value", t.name));
        }
        for b in bench {
            let Some(n) = b.noise.as_ref().filter(|n| n.p_value.is_some()) else {
                v.untested.push(format!(
                    "{}: {}: {}",
                    t.name,
                    b.description,
                    why_untested(b, repetitions)
                ));
                continue;
            };
            v.tested += 1;
            let Some(w) = worse_pct(b).filter(|&w| w > limit_pct) else {
                continue;
            };
            if n.verdict == Mark::Significant {
                v.worse.push(Worse {
                    test: t.name.clone(),
                    what: b.description.clone(),
                    worse_pct: w,
                    q_value: n.q_value,
                    noise_test: n.test,
                });
            } else {
                v.within_noise += 1;
            }
        }
    }
    v
}

/// The verdict of `prfcmp --fail-if-worse limit_pct`: two profiles have no benchmark
/// value, so their total CPU time is the value (lower is better). One profile a side
/// knows only its sampling error: there a change beyond it counts (`sampling only`), and
/// the reason says so.
pub fn fail_if_worse_profile(test: &str, p: &ProfileComparison, limit_pct: f64) -> FailVerdict {
    let mut v = FailVerdict {
        limit_pct,
        worse: Vec::new(),
        tested: 0,
        within_noise: 0,
        untested: Vec::new(),
    };
    let n = &p.cpu_noise;
    if p.run1.cpu <= 0.0 {
        v.untested.push(format!("{test}: profile 1 has no CPU time"));
        return v;
    }
    if n.p_value.is_none() {
        v.untested.push(format!(
            "{test}: the CPU time varies neither between repetitions nor by sampling"
        ));
        return v;
    }
    v.tested = 1;
    let w = 100.0 * (p.run2.cpu - p.run1.cpu) / p.run1.cpu;
    if w > limit_pct {
        if n.verdict.stands_out() {
            let what = if n.test == Some(NoiseTest::Dispersed) {
                "CPU time (beyond the sampling error and the functions' run-to-run spread; one profile a side \
                 measures no run-to-run noise of its own)"
            } else if n.sampling_only {
                "CPU time (beyond the sampling error; one profile a side measures no run-to-run noise)"
            } else {
                "CPU time"
            };
            v.worse.push(Worse {
                test: test.to_string(),
                what: what.into(),
                worse_pct: w,
                q_value: n.q_value,
                noise_test: n.test,
            });
        } else {
            v.within_noise += 1;
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::stats::{Significance, Tested, Verdict};

    fn row(run1: f64, run2: f64, lower_is_better: bool, p: Option<f64>) -> BenchRow {
        let mut noise = p.map(|p| {
            Significance::unadjusted(
                Verdict::Tested(Tested {
                    test: NoiseTest::Welch,
                    delta: run2 - run1,
                    se: 1.0,
                    df: Some(4.0),
                    p_value: p,
                    sampling_only: false,
                    growth: crate::compare::stats::Growth::NONE,
                    welch_sides: None,
                }),
                run2 - run1,
                true,
            )
        });
        if let Some(n) = noise.as_mut() {
            crate::compare::stats::adjust_family(crate::compare::stats::Correction::Holm, &mut [n]);
        }
        BenchRow {
            description: "op".into(),
            run1: Some(run1),
            run2: Some(run2),
            unit: if lower_is_better { "sec" } else { "/sec" }.into(),
            lower_is_better,
            speed_ratio: None,
            run1_values: vec![run1],
            run2_values: vec![run2],
            run1_sd_pct: None,
            run2_sd_pct: None,
            noise,
        }
    }

    // Issue 28: the reason line names the test that decided.
    #[test]
    fn the_reason_names_the_test() {
        let verdict = |noise_test| FailVerdict {
            limit_pct: 5.0,
            worse: vec![Worse {
                test: "t".into(),
                what: "CPU time".into(),
                worse_pct: 12.0,
                q_value: Some(0.001),
                noise_test,
            }],
            tested: 1,
            within_noise: 0,
            untested: Vec::new(),
        };
        assert_eq!(
            verdict(Some(NoiseTest::Welch)).reason(),
            "worse: t: CPU time is 12.0% worse (more than 5%, beyond the noise by Welch's t-test on the \
             repetitions, adjusted p = 1.00e-3)"
        );
        assert!(verdict(Some(NoiseTest::Dispersed))
            .reason()
            .contains("by the sampling error with the functions' run-to-run spread,"));
    }

    #[test]
    fn direction_aware() {
        assert_eq!(
            worse_pct(&row(100.0, 90.0, false, None)),
            Some(10.0),
            "a rate that fell"
        );
        assert_eq!(worse_pct(&row(100.0, 110.0, false, None)), Some(-10.0));
        assert_eq!(worse_pct(&row(2.0, 2.5, true, None)), Some(25.0), "a time that grew");
        assert_eq!(worse_pct(&row(0.0, 2.5, true, None)), None);
    }
}
