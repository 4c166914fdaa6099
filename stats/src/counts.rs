//! The sampling error of profile rows: a function's time or a frame's share, from its
//! sample counts (docs/formulas.md, "One run a side: the sampling error").

use super::dist::{binomial_lower, binomial_upper, normal_two_sided_p};
use super::{Growth, NoiseTest, NotTested, Tested, Verdict, EXACT_BELOW};

/// One function in one run (or one repetition): its samples, and the run's totals.
///
/// With a fixed period p (cpu-clock) every weight is p: see [`SampledTime::fixed_period`].
/// With varying periods (perf's `cycles` in frequency mode) `weight` is the sum of the
/// samples' periods in seconds and `weight_sq` the sum of their squares.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SampledTime {
    /// n: the function's samples.
    pub samples: u64,
    /// W: the seconds they stand for (the sum of their weights).
    pub weight: f64,
    /// Q: the sum of the squared weights (the compound-Poisson variance of W; W²/n
    /// when every weight is equal).
    pub weight_sq: f64,
    /// N: all samples of the run, idle included (the multinomial total).
    pub run_samples: u64,
    /// W_total: the seconds of all samples of the run.
    pub run_weight: f64,
    /// The compared value is `weight * scale`: 1 for seconds, 1/operations for seconds
    /// per benchmark operation.
    pub scale: f64,
}

impl SampledTime {
    /// `samples` of `run_samples`, each worth `period` seconds.
    pub fn fixed_period(samples: u64, period: f64, run_samples: u64) -> Self {
        SampledTime {
            samples,
            weight: samples as f64 * period,
            weight_sq: samples as f64 * period * period,
            run_samples,
            run_weight: run_samples as f64 * period,
            scale: 1.0,
        }
    }

    /// The same samples compared as seconds per operation, the run having done
    /// `operations` of them.
    pub fn per_operation(self, operations: f64) -> Self {
        SampledTime {
            scale: 1.0 / operations,
            ..self
        }
    }

    /// The compared value: seconds (or seconds per operation).
    pub fn value(&self) -> f64 {
        self.weight * self.scale
    }

    /// The sampling variance of [`value`](Self::value) given the run's total: the
    /// multinomial Q·(1 − W/W_total), scaled.
    pub fn sampling_var(&self) -> f64 {
        let rest = if self.run_weight > 0.0 {
            (1.0 - self.weight / self.run_weight).max(0.0)
        } else {
            1.0
        };
        self.weight_sq * self.scale * self.scale * rest
    }

    /// Expected samples per unit of the compared value: N / (W_total · scale). The exact
    /// test assumes the function's samples weigh what the run's weigh on average.
    fn exposure(&self) -> f64 {
        if self.run_weight > 0.0 && self.scale > 0.0 {
            self.run_samples as f64 / (self.run_weight * self.scale)
        } else {
            0.0
        }
    }
}

/// A count out of a total: a frame's (or a function's) samples of a run's CPU samples,
/// with their weights (summed periods). The share shown is of weight, as perf report
/// weighs samples ([`share`](Self::share)); its sampling error is counted in samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ShareCount {
    /// a: the frame's samples.
    pub count: u64,
    /// N: the run's samples (the share's denominator).
    pub total: u64,
    /// The summed weight of the frame's samples.
    pub weight: u64,
    /// The summed weight of the run's samples.
    pub total_weight: u64,
}

impl ShareCount {
    /// `count` of `total` samples, each weighing one.
    pub fn of(count: u64, total: u64) -> Self {
        ShareCount {
            count,
            total,
            weight: count,
            total_weight: total,
        }
    }

    /// `count` of `total` samples, weighing `weight` of `total_weight`.
    pub fn weighted(count: u64, total: u64, weight: u64, total_weight: u64) -> Self {
        ShareCount {
            count,
            total,
            weight,
            total_weight,
        }
    }

    /// The share shown: weight of the total weight (0 of nothing).
    pub fn share(&self) -> f64 {
        if self.total_weight == 0 {
            0.0
        } else {
            self.weight as f64 / self.total_weight as f64
        }
    }

    fn value(&self) -> f64 {
        if self.total == 0 {
            0.0
        } else {
            self.count as f64 / self.total as f64
        }
    }
}

/// The standard error of the share a/N of `count` a out of `total` N: √(a(N−a)/N³)
/// (binomial; 0 at 0% and at 100%).
pub fn share_se(count: u64, total: u64) -> f64 {
    if total == 0 {
        return 0.0;
    }
    let (a, n) = (count as f64, total as f64);
    (a * (n - a) / (n * n * n)).max(0.0).sqrt()
}

/// The variance of a count n given its run's total M: n(1 − n/M) (multinomial; Poisson's
/// n overstates it for large functions).
pub fn multinomial_count_var(count: u64, total: u64) -> f64 {
    if total == 0 {
        return 0.0;
    }
    let n = count as f64;
    (n * (1.0 - n / total as f64)).max(0.0)
}

/// One side's observation as the sampling test sees it.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Counted {
    /// The count.
    pub count: u64,
    /// Expected count per unit of the compared value.
    pub exposure: f64,
    /// The compared value.
    pub value: f64,
    /// Its sampling variance.
    pub var: f64,
}

impl From<&SampledTime> for Counted {
    fn from(s: &SampledTime) -> Self {
        Counted {
            count: s.samples,
            exposure: s.exposure(),
            value: s.value(),
            var: s.sampling_var(),
        }
    }
}

impl From<&ShareCount> for Counted {
    fn from(s: &ShareCount) -> Self {
        Counted {
            count: s.count,
            exposure: s.total as f64,
            value: s.value(),
            var: share_se(s.count, s.total).powi(2),
        }
    }
}

/// The exact conditional test of two Poisson counts x1 and x2 with exposures e1 and e2
/// (expected counts per unit of the compared value): given m = x1 + x2, under the null
/// x2 ~ Binomial(m, e2/(e1+e2)). Two-sided by doubling the smaller tail (capped at 1):
/// the definition of the equal-tailed (Clopper–Pearson) interval, and the one whose
/// large-count limit is the normal test used above [`EXACT_BELOW`].
pub fn exact_conditional_p(x1: u64, e1: f64, x2: u64, e2: f64) -> f64 {
    let m = x1 + x2;
    if m == 0 || e1 + e2 <= 0.0 {
        return 1.0;
    }
    let pi = e2 / (e1 + e2);
    // The two tails sum to 1 + P(X = x2): one under 1/2 is the smaller (by at least
    // P(X = x2), far above their rounding), and the other is not computed. The tail on
    // x2's side of the mean is tried first.
    let (upper, lower) = (|| binomial_upper(x2, m, pi), || binomial_lower(x2, m, pi));
    let (first, other): (&dyn Fn() -> f64, &dyn Fn() -> f64) = match x2 as f64 >= m as f64 * pi {
        true => (&upper, &lower),
        false => (&lower, &upper),
    };
    let first = first();
    let tail = if first < 0.5 { first } else { first.min(other()) };
    (2.0 * tail).min(1.0)
}

/// What a zero sampling variance with a non-zero delta means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Degenerate {
    /// A time: the function is every sample of both runs; given the totals its change
    /// is theirs, which the sampling error cannot test.
    NotTested,
    /// A share at 0% or 100% in every run: the exact test still applies.
    Exact,
}

/// The sampling-error test of the mean value of two sides of one or more repetitions:
/// exact on the summed counts below [`EXACT_BELOW`], normal (the summed sampling
/// variances) from there on.
pub(super) fn sampling_test(a: &[Counted], b: &[Counted], degenerate: Degenerate) -> Verdict {
    if a.is_empty() || b.is_empty() {
        return Verdict::NotTested(NotTested::NoValues);
    }
    let side = |s: &[Counted]| {
        let k = s.len() as f64;
        (
            s.iter().map(|c| c.count).sum::<u64>(),
            s.iter().map(|c| c.exposure).sum::<f64>(),
            // mean(), without a vector: s is not empty.
            s.iter().map(|c| c.value).sum::<f64>() / k,
            s.iter().map(|c| c.var).sum::<f64>() / (k * k),
        )
    };
    let ((x1, e1, m1, v1), (x2, e2, m2, v2)) = (side(a), side(b));
    let delta = m2 - m1;
    let se = (v1 + v2).sqrt();
    let tested = |test, p_value| {
        Verdict::Tested(Tested {
            test,
            delta,
            se,
            df: None,
            p_value,
            sampling_only: true,
            growth: Growth::NONE,
            welch_sides: None,
        })
    };
    if se == 0.0 && delta != 0.0 && degenerate == Degenerate::NotTested {
        return Verdict::NotTested(NotTested::NoVariance);
    }
    if x1 + x2 < EXACT_BELOW || se == 0.0 {
        tested(NoiseTest::ExactCounts, exact_conditional_p(x1, e1, x2, e2))
    } else {
        tested(NoiseTest::NormalCounts, normal_two_sided_p(delta / se))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) {
        assert!((a - b).abs() <= tol * b.abs().max(1e-300), "{a} vs {b}");
    }

    fn single(n1: u64, n2: u64, total: u64, period: f64) -> Verdict {
        sampling_test(
            &[Counted::from(&SampledTime::fixed_period(n1, period, total))],
            &[Counted::from(&SampledTime::fixed_period(n2, period, total))],
            Degenerate::NotTested,
        )
    }

    // The small-count case: 0 vs 4 samples gave p = 0.0455 (normal); exact is
    // 2 * 0.5^4 = 0.125 (scipy 1.17.1: binomtest(4, 4, 0.5).pvalue = 0.125).
    #[test]
    fn zero_against_four_samples_is_not_significant() {
        close(exact_conditional_p(0, 1.0, 4, 1.0), 0.125, 1e-14);
        let t = *single(0, 4, 100_000, 0.001).tested().unwrap();
        assert_eq!(t.test, NoiseTest::ExactCounts);
        close(t.p_value, 0.125, 1e-12);
        assert!(t.sampling_only);
    }

    // Unequal exposures: run 2 sampled at twice the rate (period 0.5 ms against 1 ms),
    // so equal times give run 2 twice the samples: pi = 2/3.
    // scipy 1.17.1: 2*min(binom.cdf(x, m, 2/3), binom.sf(x-1, m, 2/3)).
    // Only the smaller tail is computed when it is under 1/2: the p-value is the one of
    // both tails, bit for bit.
    #[test]
    fn the_exact_test_needs_one_tail_only_when_it_is_the_smaller() {
        for m in (0..60u64).chain((100..crate::EXACT_BELOW).step_by(113)) {
            for x2 in 0..=m {
                for (e1, e2) in [(1.0, 1.0), (3.0, 1.0), (1.0, 7.5), (1e6, 2e6), (0.0, 1.0), (5.0, 0.0)] {
                    let both = if e1 + e2 <= 0.0 || m == 0 {
                        1.0
                    } else {
                        let pi = e2 / (e1 + e2);
                        (2.0 * binomial_upper(x2, m, pi).min(binomial_lower(x2, m, pi))).min(1.0)
                    };
                    let p = exact_conditional_p(m - x2, e1, x2, e2);
                    assert_eq!(p.to_bits(), both.to_bits(), "x2 {x2} of {m}, exposures {e1} {e2}");
                }
            }
        }
    }

    #[test]
    fn exact_test_with_exposures_matches_scipy() {
        close(exact_conditional_p(10, 1.0, 12, 2.0), 0.32629046697528963, 1e-11);
        close(exact_conditional_p(5, 1.0, 25, 2.0), 0.07090834363259796, 1e-11);
        close(exact_conditional_p(30, 1.0, 20, 2.0), 0.00020002469938345385, 1e-10);
        // Same through SampledTime: exposure = N / W_total = 1/period.
        let a = SampledTime::fixed_period(10, 0.001, 50_000);
        let b = SampledTime::fixed_period(12, 0.0005, 100_000);
        let v = sampling_test(&[(&a).into()], &[(&b).into()], Degenerate::NotTested);
        close(v.p_value().unwrap(), 0.32629046697528963, 1e-11);
        // Empty and one-sided exposures are no evidence.
        assert_eq!(exact_conditional_p(0, 1.0, 0, 1.0), 1.0);
        assert_eq!(exact_conditional_p(0, 1.0, 0, 0.0), 1.0);
    }

    // Both sides of the switch-over at EXACT_BELOW: the exact and the normal p-values of
    // the same counts agree within 10% near p = 0.05, and each side uses its own.
    // Exact: scipy 1.17.1 2*binom.sf(531-1, 1000, 0.5) etc.
    #[test]
    fn switch_over_between_exact_and_normal() {
        let below = *single(469, 530, 1_000_000, 0.001).tested().unwrap();
        assert_eq!(below.test, NoiseTest::ExactCounts);
        close(below.p_value, 0.057600162008086084, 1e-9);
        let above = *single(469, 531, 1_000_000, 0.001).tested().unwrap();
        assert_eq!(above.test, NoiseTest::NormalCounts);
        // Normal: z = 62 / sqrt(469 (1 - 469e-6) + 531 (1 - 531e-6)).
        let z = 62.0 / (469.0 * (1.0 - 469e-6) + 531.0 * (1.0 - 531e-6f64)).sqrt();
        close(above.p_value, normal_two_sided_p(z), 1e-12);
        close(above.p_value, exact_conditional_p(469, 1.0, 531, 1.0), 0.1);
        close(exact_conditional_p(469, 1.0, 531, 1.0), 0.053677849645010045, 1e-9);
    }

    // The large functions: h 9,900 -> 9,800 and x 100 -> 200 of 10,000 samples.
    // Given the total, h lost exactly what x gained: same standard error, and h's
    // z = -100/sqrt(99 + 196) = -5.82 (Poisson's sqrt(19,700) made it -0.71). x, with 300
    // samples, takes the exact test: 2*binom.cdf(100, 300, 0.5) (scipy 1.17.1).
    #[test]
    fn large_functions_are_multinomial() {
        let h = *single(9900, 9800, 10_000, 0.001).tested().unwrap();
        let x = *single(100, 200, 10_000, 0.001).tested().unwrap();
        close(h.se, x.se, 1e-12);
        close(h.se, 0.001 * 295f64.sqrt(), 1e-12);
        close(h.delta, -x.delta, 1e-9);
        assert_eq!(h.test, NoiseTest::NormalCounts);
        close(h.p_value, normal_two_sided_p(100.0 / 295f64.sqrt()), 1e-12);
        assert_eq!(x.test, NoiseTest::ExactCounts);
        close(x.p_value, 8.014875216538921e-09, 1e-9);
        close(multinomial_count_var(9900, 10_000), 99.0, 1e-12);
    }

    // The flame-graph errors: a frame at 100% has no error (it was ±1.35 points),
    // 99% -> 98% and its mirror 1% -> 2% have the same ±0.17 points.
    #[test]
    fn share_errors_are_binomial() {
        assert_eq!(share_se(10_000, 10_000), 0.0);
        assert_eq!(share_se(0, 10_000), 0.0);
        let pair = |a1, a2| (share_se(a1, 10_000).powi(2) + share_se(a2, 10_000).powi(2)).sqrt();
        close(100.0 * pair(9900, 9800), 100.0 * (2.95e-6f64).sqrt(), 1e-12);
        close(100.0 * pair(9900, 9800), 100.0 * pair(100, 200), 1e-12);
        assert!((100.0 * pair(9900, 9800) - 0.17).abs() < 0.005);
        close(share_se(1, 4), (3.0f64 / 64.0).sqrt(), 1e-15);
    }

    // A function that is every sample of both runs: given the totals there is no
    // sampling error, so the test says so instead of a p-value.
    #[test]
    fn all_samples_of_both_runs_is_not_tested() {
        let whole = |n| SampledTime::fixed_period(n, 0.001, n);
        let v = sampling_test(
            &[(&whole(5000)).into()],
            &[(&whole(6000)).into()],
            Degenerate::NotTested,
        );
        assert_eq!(v, Verdict::NotTested(NotTested::NoVariance));
        let same = sampling_test(
            &[(&whole(5000)).into()],
            &[(&whole(5000)).into()],
            Degenerate::NotTested,
        );
        assert_eq!(same.p_value(), Some(1.0));
    }

    #[test]
    fn seconds_per_operation_scale_value_variance_and_exposure() {
        let s = SampledTime::fixed_period(400, 0.001, 10_000).per_operation(200.0);
        close(s.value(), 0.4 / 200.0, 1e-15);
        close(s.sampling_var(), 400.0 * 1e-6 * 0.96 / 40_000.0, 1e-12);
        close(s.exposure(), 1000.0 * 200.0, 1e-12);
    }
}
