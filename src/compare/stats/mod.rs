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
//! Hochberg for function rows and for flame-graph frames, Holm for benchmark values,
//! total CPU and system counters. [`detectable`] turns a standard error into the
//! report's "observed change below X%" and "true change of Y% detected 80% of the time".
//!
//! [`welch`] and [`sampling`] are the tests of the current comparison, superseded by the
//! functions above.

mod counts;
mod dist;
mod family;
mod power;
#[cfg(test)]
mod simulation;
mod spread;

pub use counts::{exact_conditional_p, multinomial_count_var, share_se, SampledTime, ShareCount};
pub use dist::{inc_beta, normal_sf, normal_two_sided_p, t_cdf, t_quantile};
pub use family::{adjust, adjust_verdicts, Correction};
pub use power::{detectable, Detectable};
pub use spread::{bench_test, one_vs_many, share_test, time_test, welch_floored};

use serde::Serialize;

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

/// The result of a test for a difference between run 2 and run 1 (superseded by
/// [`Verdict`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Significance {
    /// How the noise was estimated.
    pub method: Method,
    /// Mean of run 2 minus mean of run 1.
    pub delta: f64,
    /// Half-width of the 95% confidence interval of the delta.
    pub ci95: f64,
    /// Two-sided p-value.
    pub p_value: f64,
    /// p < ALPHA.
    pub significant: bool,
}

/// How noise was estimated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// Welch's t-test on repeated runs.
    Welch,
    /// Poisson error of sample counts (single runs).
    SamplingError,
}

/// Welch's t-test of `b` against `a` (each at least two values). Superseded by
/// [`welch_floored`]: with no spread it calls any difference significant.
pub fn welch(a: &[f64], b: &[f64]) -> Option<Significance> {
    if a.len() < 2 || b.len() < 2 {
        return None;
    }
    let (va, vb) = (stddev(a).powi(2) / a.len() as f64, stddev(b).powi(2) / b.len() as f64);
    let delta = mean(b) - mean(a);
    let se = (va + vb).sqrt();
    if se == 0.0 {
        // No spread at all: any difference is exact, none is noise.
        return Some(Significance {
            method: Method::Welch,
            delta,
            ci95: 0.0,
            p_value: if delta == 0.0 { 1.0 } else { 0.0 },
            significant: delta != 0.0,
        });
    }
    let df = (va + vb).powi(2) / (va * va / (a.len() - 1) as f64 + vb * vb / (b.len() - 1) as f64);
    let t = delta / se;
    let p_value = 2.0 * t_cdf(-t.abs(), df);
    Some(Significance {
        method: Method::Welch,
        delta,
        ci95: t_quantile(1.0 - ALPHA / 2.0, df) * se,
        p_value,
        significant: p_value < ALPHA,
    })
}

/// Sampling-error test of a count difference: counts `n1` and `n2` (Poisson), each
/// sample worth `p1` and `p2` seconds. Superseded by [`time_test`]: wrong for small
/// counts (normal only) and for large shares (Poisson, not multinomial).
pub fn sampling(n1: f64, p1: f64, n2: f64, p2: f64) -> Significance {
    let delta = n2 * p2 - n1 * p1;
    let se = (n1 * p1 * p1 + n2 * p2 * p2).sqrt();
    let (p_value, significant) = if se == 0.0 {
        (1.0, false)
    } else {
        // The report's current numbers: the normal tail as the t distribution's limit
        // (its far tail is less precise than normal_two_sided_p's; the golden files
        // hold these values until the report moves to time_test).
        let p = 2.0 * t_cdf(-(delta / se).abs(), 1e9);
        (p, p < ALPHA)
    };
    Significance {
        method: Method::SamplingError,
        delta,
        ci95: Z_CRIT * se,
        p_value,
        significant,
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

    // Reference values from scipy 1.17.1: scipy.stats.ttest_ind(equal_var=False).
    #[test]
    fn welch_matches_scipy() {
        // The seed's hackbench series for 1 group: base and new.
        let a = [4.096, 4.090, 4.073, 4.129, 4.092];
        let b = [3.193, 3.261, 3.257, 3.223, 3.247];
        let s = welch(&a, &b).unwrap();
        close(
            s.delta / ((stddev(&a).powi(2) / 5.0 + stddev(&b).powi(2) / 5.0).sqrt()),
            -55.07240435857833,
            1e-12,
        );
        close(s.p_value, 8.288154539362828e-11, 1e-6);
        assert!(s.significant);
        let s = welch(&[10.0, 10.5, 9.8], &[10.2, 10.9, 10.4, 10.6]).unwrap();
        close(s.p_value, 0.17429083917463256, 1e-9);
        assert!(!s.significant);
        assert!(welch(&[1.0], &[1.0, 2.0]).is_none());
    }

    #[test]
    fn sampling_error_by_hand() {
        // 10000 vs 10400 samples of 1 ms: delta 0.4 s, se = 1 ms * sqrt(20400) = 0.1428 s,
        // z = 2.80: significant. 10000 vs 10200: z = 1.41: within noise.
        let s = sampling(10000.0, 0.001, 10400.0, 0.001);
        close(s.delta, 0.4, 1e-12);
        close(s.ci95, Z_CRIT * 0.001 * 20400f64.sqrt(), 1e-12);
        assert!(s.significant);
        // scipy: 2 * norm.sf(0.4 / (0.001 * sqrt(20400)))
        close(s.p_value, 0.005101399646004968, 1e-5);
        assert!(!sampling(10000.0, 0.001, 10200.0, 0.001).significant);
        assert!(!sampling(0.0, 0.001, 0.0, 0.001).significant);
    }
}
