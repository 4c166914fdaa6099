//! Statistics for telling a real change from noise (`docs/formulas.md`, "Noise").
//!
//! Every comparison of one number between run 1 and run 2 gets a [`Verdict`]: a
//! [`Tested`] p-value, or [`NotTested`] when nothing can be said. Which test:
//!
//! - Profile rows (a function's time, [`time_test`]; a frame's or function's share,
//!   [`share_test`]) with one run a side: the sampling error of the counts alone, exact
//!   ([`exact_conditional_p`]) below [`EXACT_BELOW`] samples, normal above. With
//!   repetitions: Welch's t-test on the repetitions ([`welch_floored`]), or one run
//!   against k ([`one_vs_many`]), each side's variance floored by its sampling variance;
//!   the change must also stand above the sampling error of the summed counts.
//! - Benchmark values ([`bench_test`]): the same tests on the repetitions, variances
//!   floored by the print resolution's d²/12; nothing with one run a side.
//!
//! The p-values of a report are then adjusted as families ([`adjust`]): Benjamini–
//! Hochberg for function rows and for flame-graph frames, Holm for benchmark values, Holm
//! for total CPU times, and Holm for system counters (a family of their own). [`detectable`] turns a standard error into the
//! report's "observed change below X%" and "true change of Y% detected 80% of the time".
//!
//! [`Significance`] is what the report carries of a test: the test, its p-value, and the
//! verdict ([`Mark`]) once its family has been adjusted ([`adjust_family`]).

//!
//! The crate knows numbers only: no profile, file or report. The comparison of upcmp
//! (`upcmp::compare`) builds each row's numbers and calls it.
//!
//! ```
//! use upcmp_stats::{time_test, SampledTime};
//!
//! // A function's samples of 1 ms each in two runs of 100,000 samples: 800, then 1,000.
//! let side = |n: u64| SampledTime {
//!     samples: n,
//!     weight: n as f64 * 1e-3,
//!     weight_sq: n as f64 * 1e-6,
//!     run_samples: 100_000,
//!     run_weight: 100.0,
//!     scale: 1.0,
//! };
//! // 200 samples more against a sampling error of about 42: no noise.
//! assert!(time_test(&[side(800)], &[side(1000)]).p_value().unwrap() < 1e-4);
//! // 20 more: within it.
//! assert!(time_test(&[side(800)], &[side(820)]).p_value().unwrap() > 0.3);
//! ```
#![deny(missing_docs)]

mod counts;
mod dist;
mod family;
mod moderated;
mod power;
pub mod rng;
#[cfg(test)]
mod simulation;
mod spread;

pub use counts::{exact_conditional_p, multinomial_count_var, share_se, SampledTime, ShareCount};
pub use dist::{inc_beta, normal_sf, normal_two_sided_p, t_cdf, t_quantile};
pub use family::{adjust, adjust_verdicts, Correction};
pub use moderated::{total_test_with, Prior, RowSpread, SideSpread, FIT_MIN_COUNT, FIT_MIN_FUNCTIONS};
pub use power::{detectable, detectable_at, Detectable};
pub use spread::{bench_test, one_vs_many, share_test, share_test_with, time_test, time_test_with, welch_floored};

use serde::Serialize;
use std::collections::HashMap;

/// Significance level of every test (two-sided), and the false-discovery rate or
/// family-wise error rate of every family.
pub const ALPHA: f64 = 0.05;
/// The two-sided normal quantile for [`ALPHA`].
pub const Z_CRIT: f64 = dist::Z_975;
/// Sampling tests use the exact conditional test when the two sides' summed counts are
/// below this, the normal approximation from here on (docs/formulas.md, "One run a side").
pub const EXACT_BELOW: u64 = 1000;

/// Which test produced a p-value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NoiseTest {
    /// The exact conditional test of the sample counts (small counts).
    ExactCounts,
    /// The normal approximation of the counts' sampling error (large counts).
    NormalCounts,
    /// Welch's t-test on the repetitions, each side's variance floored.
    Welch,
    /// One run against k repetitions, with the repetitions' spread for both sides.
    OneVsMany,
    /// The moderated t: the row's variance shrunk towards the trend fitted over the
    /// functions of its test, with the prior's added degrees of freedom.
    Moderated,
    /// One run a side: the sampling error plus the run-to-run dispersion measured on
    /// the other functions of the test (normal).
    Dispersed,
}

/// A test of the change from run 1 to run 2.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Tested {
    /// The test that decided.
    pub test: NoiseTest,
    /// Run 2's value (mean over repetitions) minus run 1's.
    pub delta: f64,
    /// Standard error of `delta` (for the exact test, that of its normal approximation).
    pub se: f64,
    /// Degrees of freedom of the t distribution; None for the normal or an exact test.
    pub df: Option<f64>,
    /// Two-sided p-value, before any family adjustment.
    pub p_value: f64,
    /// Only the sampling error was known (one run a side): run-to-run noise, usually
    /// larger, was not measured and the report must say so.
    pub sampling_only: bool,
    /// How the variance of `delta` would grow with a true change (for the stated Y).
    #[serde(skip)]
    pub growth: Growth,
    /// Welch's test: the repetitions a side, whose estimated degrees of freedom set its
    /// power (the stated Y, [`power::welch_true_change_80`]); None for other tests.
    #[serde(skip)]
    pub welch_sides: Option<(u32, u32)>,
}

/// The variance a true change Y adds to a test's: a·Y + b·Y². Under the shared model a
/// function's sampling variance grows with its time and its run-to-run variance with the
/// time's square, so a function that grows by Y is noisier by as much; without it a
/// stated Y at 2 and 3 runs a side was found 68–73% of the time, not 80%. Tests with no
/// model of their variance (Welch on benchmark values, totals) leave it at zero.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Growth {
    /// a, in the unit of the value.
    pub per_change: f64,
    /// b, no unit.
    pub per_change_sq: f64,
}

impl Growth {
    /// No growth: the variance is taken as it was measured.
    pub const NONE: Growth = Growth {
        per_change: 0.0,
        per_change_sq: 0.0,
    };

    /// The true change Y = g·√(se² + a·Y + b·Y²): the positive root of
    /// (1 − g²b)·Y² − g²a·Y − g²se² = 0, g = Y/se without growth. When g²b nears 1 (a
    /// value noisier run to run than the test can resolve at any size) the factor is
    /// held at 1/10: a large, finite Y.
    pub fn true_change(&self, g: f64, se: f64) -> f64 {
        let (a, b) = (self.per_change.max(0.0), self.per_change_sq.max(0.0));
        if a == 0.0 && b == 0.0 {
            return g * se;
        }
        let g2 = g * g;
        let lead = (1.0 - g2 * b).max(0.1);
        (g2 * a + (g2 * g2 * a * a + 4.0 * lead * g2 * se * se).sqrt()) / (2.0 * lead)
    }

    /// The same growth with the value in another unit: `k` times the value.
    fn scaled(self, k: f64) -> Growth {
        Growth {
            per_change: k * self.per_change,
            ..self
        }
    }
}

impl Tested {
    /// Half-width of the 95% confidence interval of `delta` (normal or t).
    pub fn ci95(&self) -> f64 {
        dist::quantile(0.975, self.df) * self.se
    }

    /// The observed change needed for significance, and the true change detected 80% of
    /// the time, at this test's standard error.
    pub fn detectable(&self) -> Detectable {
        detectable(self.se, self.df)
    }
}

/// Why a change could not be tested.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NotTested {
    /// One run a side of a value with no sampling model (a benchmark value): its noise
    /// is unknown.
    SingleRuns,
    /// The values differ but nothing about them varies: no spread, no sampling error
    /// (e.g. a function that is every sample of both runs: given the runs' totals its
    /// change is their change, which one run a side cannot test).
    NoVariance,
    /// A side has no value at all.
    NoValues,
}

/// The outcome of a noise test: a p-value, or a reason why there is none (never a made-up
/// p-value).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Tested.
    Tested(Tested),
    /// Not tested (the report prints n/a).
    NotTested(NotTested),
}

impl Verdict {
    /// The test, if there was one.
    pub fn tested(&self) -> Option<&Tested> {
        match self {
            Verdict::Tested(t) => Some(t),
            Verdict::NotTested(_) => None,
        }
    }

    /// The unadjusted p-value, if tested.
    pub fn p_value(&self) -> Option<f64> {
        self.tested().map(|t| t.p_value)
    }
}

/// `f` of `items`, held on the stack when they are few, as a side's repetitions are: the
/// tests of each of 10^5 function rows made ten vectors a row.
pub fn with_few<U: Copy + Default, R>(items: impl ExactSizeIterator<Item = U>, f: impl FnOnce(&[U]) -> R) -> R {
    const FEW: usize = 8;
    if items.len() <= FEW {
        let mut held = [U::default(); FEW];
        let mut n = 0;
        for (h, x) in held.iter_mut().zip(items) {
            *h = x;
            n += 1;
        }
        f(&held[..n])
    } else {
        f(&items.collect::<Vec<_>>())
    }
}

/// Arithmetic mean (0 for no values).
pub fn mean(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        0.0
    } else {
        xs.iter().sum::<f64>() / xs.len() as f64
    }
}

/// Sample standard deviation (n - 1); 0 for fewer than two values.
pub fn stddev(xs: &[f64]) -> f64 {
    if xs.len() < 2 {
        return 0.0;
    }
    let m = mean(xs);
    (xs.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (xs.len() - 1) as f64).sqrt()
}

/// Standard deviation as a percentage of the mean (0 when the mean is 0).
pub fn stddev_pct(xs: &[f64]) -> f64 {
    let m = mean(xs);
    if m == 0.0 {
        0.0
    } else {
        100.0 * stddev(xs) / m.abs()
    }
}

/// How a row's noise was estimated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// From the repetitions (Welch's t-test, or one run against k), each side's variance
    /// at least its sampling (or rounding) variance.
    Welch,
    /// From the sampling error of the sample counts alone (one run a side).
    SamplingError,
}

/// What the report prints for a row: its verdict after its family's adjustment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Mark {
    /// The adjusted p-value is below [`ALPHA`], against the measured run-to-run noise.
    #[serde(rename = "significant")]
    Significant,
    /// The adjusted p-value is below [`ALPHA`], but only the sampling error was known (one
    /// run a side): run-to-run noise, usually larger, was not measured.
    #[serde(rename = "sampling only")]
    SamplingOnly,
    /// The adjusted p-value is [`ALPHA`] or more.
    #[serde(rename = "noise")]
    Noise,
    /// Not tested: nothing can be said (see [`NotTested`]).
    #[serde(rename = "n/a")]
    NotTested,
    /// Tested, but in no family (a function below the cutoff, a frame below the flame
    /// graph's cutoff): its p-value alone marks nothing.
    #[serde(rename = "below cutoff")]
    BelowCutoff,
}

impl Mark {
    /// The word the report prints.
    pub fn word(self) -> &'static str {
        match self {
            Mark::Significant => "significant",
            Mark::SamplingOnly => "sampling only",
            Mark::Noise => "noise",
            Mark::NotTested => "n/a",
            Mark::BelowCutoff => "below cutoff",
        }
    }

    /// Whether the change stands above the noise the test knew of (significant, or
    /// beyond the sampling error with one run a side).
    pub fn stands_out(self) -> bool {
        matches!(self, Mark::Significant | Mark::SamplingOnly)
    }
}

/// A row's noise test as the report carries it: the test, its p-value, and the verdict
/// after the family's adjustment (`docs/formulas.md`, "Noise").
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Significance {
    /// From the repetitions or from the sampling error alone.
    pub method: Method,
    /// The test that decided; None when not tested.
    pub test: Option<NoiseTest>,
    /// Why there is no test, when there is none.
    pub not_tested: Option<NotTested>,
    /// Run 2's value (mean over repetitions) minus run 1's.
    pub delta: f64,
    /// Standard error of `delta`.
    pub se: Option<f64>,
    /// Degrees of freedom of the t distribution; None for the normal or an exact test.
    pub df: Option<f64>,
    /// Half-width of the 95% confidence interval of `delta`.
    pub ci95: Option<f64>,
    /// Two-sided p-value, before the family's adjustment.
    pub p_value: Option<f64>,
    /// The p-value adjusted in the row's family (Benjamini–Hochberg q-value, or Holm's
    /// adjusted p-value); None when the row is in no family.
    pub q_value: Option<f64>,
    /// Only the sampling error was known (one run a side).
    pub sampling_only: bool,
    /// The adjusted p-value is below [`ALPHA`] and the run-to-run noise was measured:
    /// `verdict` is [`Mark::Significant`].
    pub significant: bool,
    /// What the report prints.
    pub verdict: Mark,
    /// The observed change needed for significance and the true change detected 80% of
    /// the time, at this test's standard error: at the level of its family (`level`)
    /// once adjusted, at [`ALPHA`] before.
    pub detectable: Option<Detectable>,
    /// The level the unadjusted p-value had to pass in the row's family (see
    /// [`adjust_family`]); None in no family.
    pub level: Option<f64>,
    /// How the variance of `delta` would grow with a true change (see [`Growth`]).
    #[serde(skip)]
    pub growth: Growth,
    /// Welch's repetitions a side (see [`Tested::welch_sides`]).
    #[serde(skip)]
    pub welch_sides: Option<(u32, u32)>,
}

impl Significance {
    /// The test `v` of a change `delta`, estimated from repetitions when `repeated`,
    /// before any adjustment: in no family yet ([`Mark::BelowCutoff`], or n/a).
    pub fn unadjusted(v: Verdict, delta: f64, repeated: bool) -> Self {
        let t = v.tested();
        Significance {
            method: if repeated { Method::Welch } else { Method::SamplingError },
            test: t.map(|t| t.test),
            not_tested: match v {
                Verdict::NotTested(why) => Some(why),
                Verdict::Tested(_) => None,
            },
            delta: t.map_or(delta, |t| t.delta),
            se: t.map(|t| t.se),
            df: t.and_then(|t| t.df),
            ci95: t.map(Tested::ci95),
            p_value: t.map(|t| t.p_value),
            q_value: None,
            sampling_only: t.is_some_and(|t| t.sampling_only),
            significant: false,
            verdict: if t.is_some() {
                Mark::BelowCutoff
            } else {
                Mark::NotTested
            },
            detectable: t.map(Tested::detectable),
            level: None,
            growth: t.map_or(Growth::NONE, |t| t.growth),
            welch_sides: t.and_then(|t| t.welch_sides),
        }
    }

    /// The same test with the delta in another unit: `k` times the value (a share's
    /// fraction as percentage points, k = 100).
    pub fn scaled(self, k: f64) -> Self {
        Significance {
            delta: k * self.delta,
            se: self.se.map(|x| k * x),
            ci95: self.ci95.map(|x| k * x),
            detectable: self.detectable.map(|d| Detectable {
                observed: k * d.observed,
                true_change_80: k * d.true_change_80,
            }),
            growth: self.growth.scaled(k),
            ..self
        }
    }

    /// Sets the adjusted p-value `q` of a tested row, and the verdict it gives.
    fn set_adjusted(&mut self, q: f64) {
        self.q_value = Some(q);
        self.verdict = match (q < ALPHA, self.sampling_only) {
            (false, _) => Mark::Noise,
            (true, true) => Mark::SamplingOnly,
            (true, false) => Mark::Significant,
        };
        self.significant = self.verdict == Mark::Significant;
    }

    /// Whether the change stands above the noise the test knew of.
    pub fn stands_out(&self) -> bool {
        self.verdict.stands_out()
    }
}

/// Adjusts a family's p-values together and sets each member's verdict; members that
/// were not tested stay n/a and are not counted. Returns the family's size.
///
/// Each member's thresholds ([`Significance::detectable`]) are then those of the level
/// its p-value had to pass in this family: with r other members marked, α·(r + 1)/m for
/// Benjamini–Hochberg (BY: also divided by Σ 1/i) and α/(m − r) for Holm, the level at
/// which it would be marked (or was) with the others' verdicts as they are.
pub fn adjust_family(correction: Correction, members: &mut [&mut Significance]) -> usize {
    let p: Vec<f64> = members.iter().filter_map(|m| m.p_value).collect();
    let q = adjust(correction, &p);
    let mut q = q.into_iter();
    for m in members.iter_mut().filter(|m| m.p_value.is_some()) {
        m.set_adjusted(q.next().expect("one q per p"));
    }
    let m = p.len();
    let marked = members.iter().filter(|s| s.q_value.is_some_and(|q| q < ALPHA)).count();
    // The thresholds depend only on (ν, level) and Welch's sides: a few a family.
    let mut known: HashMap<(u64, u64), Detectable> = HashMap::new();
    let mut welch: HashMap<((u32, u32), u64), f64> = HashMap::new();
    for s in members.iter_mut().filter(|s| s.q_value.is_some()) {
        let others = marked - usize::from(s.q_value.is_some_and(|q| q < ALPHA));
        let level = family_level(correction, m, others);
        let (Some(se), df) = (s.se, s.df) else { continue };
        // ν rounded down (fewer degrees of freedom: larger thresholds), to a tenth below
        // 30 and to 2% above, so that a family has few distinct values.
        let df = df.map(|d| {
            if d < 30.0 {
                (d * 10.0).floor() / 10.0
            } else {
                1.02f64.powf((d.ln() / 1.02f64.ln()).floor()).max(30.0)
            }
        });
        let mut unit = *known
            .entry((df.map_or(u64::MAX, f64::to_bits), level.to_bits()))
            .or_insert_with(|| detectable_at(1.0, df, level));
        // Welch's Y follows the test's power with ν estimated, not the ν it observed.
        if let Some((k1, k2)) = s.welch_sides {
            unit.true_change_80 = *welch
                .entry(((k1, k2), level.to_bits()))
                .or_insert_with(|| power::welch_true_change_80(k1 as usize, k2 as usize, level));
        }
        s.detectable = Some(Detectable {
            observed: unit.observed * se,
            true_change_80: s.growth.true_change(unit.true_change_80, se),
        });
        s.level = Some(level);
    }
    m
}

/// The level a member of a family of `m` faces when `others` other members are marked.
pub fn family_level(correction: Correction, m: usize, others: usize) -> f64 {
    let m = m.max(1) as f64;
    let r = others as f64;
    match correction {
        Correction::BenjaminiHochberg => ALPHA * (r + 1.0) / m,
        Correction::BenjaminiYekutieli => {
            ALPHA * (r + 1.0) / (m * (1..=m as usize).map(|i| 1.0 / i as f64).sum::<f64>())
        }
        Correction::Holm => ALPHA / (m - r).max(1.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) {
        assert!((a - b).abs() <= tol * b.abs().max(1e-300), "{a} vs {b}");
    }

    #[test]
    fn mean_and_stddev_by_hand() {
        assert_eq!(mean(&[1.0, 2.0, 3.0, 4.0]), 2.5);
        // Deviations ±1.5, ±0.5: (2.25+0.25)*2/3 = 5/3.
        close(stddev(&[1.0, 2.0, 3.0, 4.0]), (5.0f64 / 3.0).sqrt(), 1e-15);
        close(
            stddev_pct(&[1.0, 2.0, 3.0, 4.0]),
            100.0 * (5.0f64 / 3.0).sqrt() / 2.5,
            1e-15,
        );
        assert_eq!(stddev(&[7.0]), 0.0);
    }

    // A family's verdicts: BH q-values (statsmodels 0.15.0, multipletests([0.01, 0.04,
    // 0.03], method="fdr_bh"): 0.03, 0.04, 0.04); n/a rows are left out of the family;
    // Y = g·√(se² + a·Y + b·Y²), by hand: g = 4, se = 1, a = 0.5, b = 0.01: (1 − 0.16)Y²
    // − 8Y − 16 = 0, Y = (8 + √(64 + 53.76))/1.68 = 11.2209...; no growth: g·se.
    #[test]
    fn a_change_that_adds_its_own_noise_must_be_larger() {
        let none = Growth::NONE;
        assert_eq!(none.true_change(4.0, 2.0), 8.0);
        let g = Growth {
            per_change: 0.5,
            per_change_sq: 0.01,
        };
        let y = g.true_change(4.0, 1.0);
        assert!((y - (8.0 + 117.76f64.sqrt()) / 1.68).abs() < 1e-12, "{y}");
        assert!((y - 4.0 * (1.0 + 0.5 * y + 0.01 * y * y).sqrt()).abs() < 1e-9);
        // g²b past 1: held finite, and larger than without the square term.
        let wild = Growth {
            per_change: 0.5,
            per_change_sq: 0.1,
        };
        let y = wild.true_change(4.0, 1.0);
        assert!(y.is_finite() && y > g.true_change(4.0, 1.0), "{y}");
        assert_eq!(g.scaled(100.0).per_change, 50.0);
    }

    // sampling-only rows that pass print as such.
    #[test]
    fn a_family_sets_each_verdict() {
        let t = |p_value, sampling_only| {
            Verdict::Tested(Tested {
                test: NoiseTest::Welch,
                delta: 1.0,
                se: 0.5,
                df: Some(4.0),
                p_value,
                sampling_only,
                growth: Growth::NONE,
                welch_sides: None,
            })
        };
        let mut rows = [
            Significance::unadjusted(t(0.01, false), 1.0, true),
            Significance::unadjusted(Verdict::NotTested(NotTested::NoVariance), 2.0, true),
            Significance::unadjusted(t(0.04, false), 1.0, true),
            Significance::unadjusted(t(0.03, true), 1.0, false),
        ];
        assert_eq!(rows[0].verdict, Mark::BelowCutoff, "no family, no mark");
        assert!(!rows[0].significant);
        let n = adjust_family(Correction::BenjaminiHochberg, &mut rows.iter_mut().collect::<Vec<_>>());
        assert_eq!(n, 3);
        let q: Vec<Option<f64>> = rows.iter().map(|r| r.q_value).collect();
        assert_eq!(q[1], None);
        close(q[0].unwrap(), 0.03, 1e-12);
        close(q[2].unwrap(), 0.04, 1e-12);
        close(q[3].unwrap(), 0.04, 1e-12);
        assert_eq!(rows[0].verdict, Mark::Significant);
        assert!(rows[0].significant);
        assert_eq!(rows[1].verdict, Mark::NotTested);
        assert_eq!(rows[1].delta, 2.0);
        assert_eq!(rows[3].verdict, Mark::SamplingOnly);
        assert!(!rows[3].significant && rows[3].stands_out());
        // Holm over the same p-values: 0.03, 0.06, 0.06.
        adjust_family(Correction::Holm, &mut rows.iter_mut().collect::<Vec<_>>());
        assert_eq!(rows[0].verdict, Mark::Significant);
        assert_eq!(rows[2].verdict, Mark::Noise);
        close(rows[0].ci95.unwrap(), 0.5 * 2.7764451051977934, 1e-9);
    }
}
