//! Tests on repetitions (the measured run-to-run spread), and the per-row entry points
//! that choose between them and the sampling error (docs/formulas.md, "Noise").

use super::counts::{sampling_test, Counted, Degenerate, SampledTime, ShareCount};
use super::dist::two_sided_p;
use super::moderated::{test_with, Prior};
use super::{mean, stddev, with_few, Growth, NoiseTest, NotTested, Tested, Verdict};

fn sample_var(xs: &[f64]) -> f64 {
    stddev(xs).powi(2)
}

fn verdict(test: NoiseTest, delta: f64, var: f64, df: Option<f64>) -> Verdict {
    if var <= 0.0 {
        return if delta == 0.0 {
            Verdict::Tested(Tested {
                test,
                delta,
                se: 0.0,
                df,
                p_value: 1.0,
                sampling_only: false,
                growth: Growth::NONE,
                welch_sides: None,
            })
        } else {
            Verdict::NotTested(NotTested::NoVariance)
        };
    }
    let se = var.sqrt();
    Verdict::Tested(Tested {
        test,
        delta,
        se,
        df,
        p_value: two_sided_p(delta / se, df),
        sampling_only: false,
        growth: Growth::NONE,
        welch_sides: None,
    })
}

/// Welch's t-test of `b` against `a` (at least two values each; other sizes are passed
/// on as in [`bench_test`]), each side's variance per value floored: s² is replaced by
/// the side's floor when below it (the sampling variance of a profile row, d²/12 for a
/// printed value).
///
/// A floored side keeps its k − 1 degrees of freedom in Welch–Satterthwaite's ν: the
/// floor is a lower bound of the variance, not the variance. (Taking it as known, with
/// no degrees of freedom, keeps each test's size near 5% but makes small p-values too
/// frequent whenever run-to-run noise hides below the floor by chance: in the seeded
/// simulation, A/A families of 100 functions with 3 repetitions a side then showed a
/// false row under BH in 12% of comparisons, against 0.3% this way.)
pub fn welch_floored(a: &[f64], floor_a: f64, b: &[f64], floor_b: f64) -> Verdict {
    if a.len() < 2 || b.len() < 2 {
        return spread_test(a, floor_a, b, floor_b);
    }
    let side = |xs: &[f64], f: f64| {
        let k = xs.len() as f64;
        let v = sample_var(xs).max(f) / k;
        (v, v * v / (k - 1.0))
    };
    let ((va, da), (vb, db)) = (side(a, floor_a), side(b, floor_b));
    let df = (da + db > 0.0).then(|| (va + vb).powi(2) / (da + db));
    match verdict(NoiseTest::Welch, mean(b) - mean(a), va + vb, df) {
        Verdict::Tested(t) => Verdict::Tested(Tested {
            welch_sides: Some((a.len() as u32, b.len() as u32)),
            ..t
        }),
        v => v,
    }
}

/// One run against k >= 2 repetitions: t = d / (s·√(1/k + 1)), ν = k − 1, the k side's
/// s standing for both sides' run-to-run noise. Each side's part is floored (s² by the
/// single run's floor, s²/k by the repetitions' floor / k); ν stays k − 1 when a floor
/// binds, as in [`welch_floored`]. Other sizes are passed on as in [`bench_test`].
pub fn one_vs_many(a: &[f64], floor_a: f64, b: &[f64], floor_b: f64) -> Verdict {
    let (single, f1, many, fk) = match (a.len(), b.len()) {
        (1, k) if k >= 2 => (a[0], floor_a, b, floor_b),
        (k, 1) if k >= 2 => (b[0], floor_b, a, floor_a),
        _ => return spread_test(a, floor_a, b, floor_b),
    };
    let k = many.len() as f64;
    let s2 = sample_var(many);
    let var = s2.max(f1) + s2.max(fk) / k;
    let delta = if a.len() == 1 {
        mean(many) - single
    } else {
        single - mean(many)
    };
    verdict(NoiseTest::OneVsMany, delta, var, Some(k - 1.0))
}

/// The spread test for the sides' sizes: Welch with two or more a side, one against many
/// with one on a side, nothing with one a side (no run-to-run noise measured) or none.
fn spread_test(a: &[f64], floor_a: f64, b: &[f64], floor_b: f64) -> Verdict {
    match (a.len(), b.len()) {
        (0, _) | (_, 0) => Verdict::NotTested(NotTested::NoValues),
        (1, 1) => Verdict::NotTested(NotTested::SingleRuns),
        (1, _) | (_, 1) => one_vs_many(a, floor_a, b, floor_b),
        _ => welch_floored(a, floor_a, b, floor_b),
    }
}

/// Profile rows: with one run a side the sampling test alone (`sampling_only`); with
/// repetitions the spread test with each side floored by its mean sampling variance,
/// and the change must also stand above the sampling error of the summed counts: the
/// larger p-value decides. (Each test is valid where its noise dominates; requiring both
/// keeps the size at most that of the valid one, and costs little power, since the
/// other is the more lenient there.)
fn profile_test(a: &[Counted], b: &[Counted], degenerate: Degenerate) -> Verdict {
    let sampling = sampling_test(a, b, degenerate);
    if a.len() <= 1 && b.len() <= 1 {
        return sampling;
    }
    let values = |s: &[Counted]| s.iter().map(|c| c.value).collect::<Vec<_>>();
    let floor = |s: &[Counted]| mean(&s.iter().map(|c| c.var).collect::<Vec<_>>());
    let spread = spread_test(&values(a), floor(a), &values(b), floor(b));
    match (spread, sampling) {
        (Verdict::Tested(s), Verdict::Tested(c)) if c.p_value > s.p_value => Verdict::Tested(Tested {
            sampling_only: false,
            ..c
        }),
        (spread, _) => spread,
    }
}

/// A function's time (or time per operation) in run 1 against run 2, each side one or
/// more repetitions. A function absent from a repetition is passed with zero samples and
/// that run's totals.
pub fn time_test(run1: &[SampledTime], run2: &[SampledTime]) -> Verdict {
    with_few(run1.iter().map(Counted::from), |a| {
        with_few(run2.iter().map(Counted::from), |b| {
            profile_test(a, b, Degenerate::NotTested)
        })
    })
}

/// [`time_test`] under the model shared by the functions of the test (`prior`, see
/// [`Prior::fit`]); as [`time_test`] where the model does not apply.
pub fn time_test_with(run1: &[SampledTime], run2: &[SampledTime], prior: &Prior) -> Verdict {
    with_few(run1.iter().map(Counted::from), |a| {
        with_few(run2.iter().map(Counted::from), |b| {
            test_with(a, b, Degenerate::NotTested, prior).unwrap_or_else(|| profile_test(a, b, Degenerate::NotTested))
        })
    })
}

/// [`share_test`] under the model shared by the shares of the test (`prior`).
pub fn share_test_with(run1: &[ShareCount], run2: &[ShareCount], prior: &Prior) -> Verdict {
    with_few(run1.iter().map(Counted::from), |a| {
        with_few(run2.iter().map(Counted::from), |b| {
            test_with(a, b, Degenerate::Exact, prior).unwrap_or_else(|| profile_test(a, b, Degenerate::Exact))
        })
    })
}

/// A share (a frame's or a function's samples of the run's CPU samples) in run 1 against
/// run 2, each side one or more repetitions.
pub fn share_test(run1: &[ShareCount], run2: &[ShareCount]) -> Verdict {
    with_few(run1.iter().map(Counted::from), |a| {
        with_few(run2.iter().map(Counted::from), |b| {
            profile_test(a, b, Degenerate::Exact)
        })
    })
}

/// A benchmark value (one per repetition) in run 1 against run 2, printed with
/// `resolution` d (e.g. 0.001 for three decimals): each side's variance floored by the
/// rounding variance d²/12. One run a side: [`NotTested::SingleRuns`].
pub fn bench_test(run1: &[f64], run2: &[f64], resolution: f64) -> Verdict {
    let floor = resolution * resolution / 12.0;
    spread_test(run1, floor, run2, floor)
}

#[cfg(test)]
mod tests {
    use super::super::dist::t_cdf;
    use super::*;

    fn close(a: f64, b: f64, tol: f64) {
        assert!((a - b).abs() <= tol * b.abs().max(1e-300), "{a} vs {b}");
    }

    fn p(v: Verdict) -> f64 {
        v.p_value().expect("tested")
    }

    // The one-against-many case: 3.0/3.1/2.9 s against one run of 3.5 s gave
    // p = 9.1e-14; with the repetitions' s for both sides t = 0.5 / (0.1·√(4/3)) = 4.330,
    // ν = 2: p = 0.0494 (scipy 1.17.1: 2 * t.sf(4.330127018922194, 2)).
    #[test]
    fn one_run_against_three_uses_their_spread() {
        let v = bench_test(&[3.0, 3.1, 2.9], &[3.5], 0.001);
        let t = *v.tested().unwrap();
        assert_eq!(t.test, NoiseTest::OneVsMany);
        assert_eq!(t.df, Some(2.0));
        close(t.delta, 0.5, 1e-12);
        close(t.se, 0.1 * (4.0f64 / 3.0).sqrt(), 1e-12);
        close(t.p_value, 0.04941362421328312, 1e-9);
        // The other way round, the delta changes sign and nothing else.
        let w = *bench_test(&[3.5], &[3.0, 3.1, 2.9], 0.001).tested().unwrap();
        close(w.delta, -0.5, 1e-12);
        close(w.p_value, t.p_value, 1e-12);
    }

    // The zero-spread benchmark: 0.123 ×3 against 0.124 ×3 had p = 0. Floored by
    // d²/12 with d = 0.001 and ν = 4 (each side keeps 2): t = 0.001 / √(2·d²/36) = 4.243.
    // scipy 1.17.1: 2 * t.sf(4.242640687119285, 4).
    #[test]
    fn identical_benchmark_values_are_floored_by_the_print_resolution() {
        let t = *bench_test(&[0.123; 3], &[0.124; 3], 0.001).tested().unwrap();
        assert_eq!(t.test, NoiseTest::Welch);
        assert_eq!(t.df, Some(4.0));
        close(t.se, (2.0f64 / 36.0).sqrt() * 0.001, 1e-9);
        close(t.p_value, 0.01323559956368269, 1e-9);
        assert!(t.p_value > 0.0);
        // Two a side cannot tell a one-digit step from rounding.
        assert!(p(bench_test(&[0.123; 2], &[0.124; 2], 0.001)) > 0.05);
        // Identical on both sides: no change, p = 1, not n/a.
        assert_eq!(p(bench_test(&[0.5; 3], &[0.5; 3], 0.001)), 1.0);
        // One run a side: nothing can be said.
        assert_eq!(
            bench_test(&[1.0], &[2.0], 0.001),
            Verdict::NotTested(NotTested::SingleRuns)
        );
        assert_eq!(
            bench_test(&[], &[2.0, 2.1], 0.001),
            Verdict::NotTested(NotTested::NoValues)
        );
        // No resolution and no spread: a difference without any noise is n/a, not p = 0.
        assert_eq!(
            bench_test(&[1.0; 3], &[2.0; 3], 0.0),
            Verdict::NotTested(NotTested::NoVariance)
        );
    }

    // With spread above the floor, Welch's test is unchanged (scipy 1.17.1:
    // ttest_ind([10, 10.5, 9.8], [10.2, 10.9, 10.4, 10.6], equal_var=False)).
    #[test]
    fn welch_above_the_floor_matches_scipy() {
        let v = bench_test(&[10.0, 10.5, 9.8], &[10.2, 10.9, 10.4, 10.6], 0.1);
        close(p(v), 0.17429083917463256, 1e-9);
        let a = [4.096, 4.090, 4.073, 4.129, 4.092];
        let b = [3.193, 3.261, 3.257, 3.223, 3.247];
        close(p(bench_test(&a, &b, 0.001)), 8.288154539362828e-11, 1e-6);
    }

    // The zero-spread profile row: a function absent in run 1 and 7 samples in
    // each of 3 repetitions of run 2 had p = 0. Floored by the sampling variance of the
    // mean count, 7p²(1 − 7/100,000)/3: t = 4.583 with ν = 2 (run 1's zeros add no
    // variance). The summed counts, 0 vs 21, give the exact p = 2·0.5^21 = 9.5e-7,
    // smaller: the Welch p decides. scipy 1.17.1: 2 * t.sf(4.582736093526138, 2).
    #[test]
    fn zero_spread_profile_rows_are_floored_by_sampling() {
        let p1 = 0.001;
        let rep = |n| SampledTime::fixed_period(n, p1, 100_000);
        let t = *time_test(&[rep(0); 3], &[rep(7); 3]).tested().unwrap();
        assert_eq!(t.test, NoiseTest::Welch);
        assert_eq!(t.df, Some(2.0));
        close(t.se, p1 * (7.0f64 * (1.0 - 7e-5) / 3.0).sqrt(), 1e-12);
        close(t.p_value, 0.04446400593663997, 1e-9);
        assert!(!t.sampling_only);
        // One sample in each of 2 repetitions against none: 1.41 standard errors (was
        // p = 0, the commonest false alarm of an A/A with --runs 2).
        assert!(p(time_test(&[rep(0); 2], &[rep(1); 2])) > 0.15);
        // 0,0 against 2,2: t = 2 with ν = 1, p = 0.295 (scipy 1.17.1); the summed
        // counts 0 vs 4 give the exact 0.125 (the normal would say 0.0455).
        let t = *time_test(&[rep(0); 2], &[rep(2); 2]).tested().unwrap();
        assert_eq!(t.test, NoiseTest::Welch);
        close(t.p_value, 0.2951646888039516, 1e-9);
        assert!(!t.sampling_only);
        // The floors make Welch's p at least the normal sampling p; at the smallest
        // counts the exact one can be larger and then decides: one sample in five
        // repetitions against none (Welch: t = 1, ν = 4, p = 0.37; exact: 0 vs 1, p = 1).
        let t = *time_test(&[rep(0); 5], &[rep(0), rep(0), rep(0), rep(0), rep(1)])
            .tested()
            .unwrap();
        assert_eq!(t.test, NoiseTest::ExactCounts);
        close(t.p_value, 1.0, 1e-12);
        assert!(!t.sampling_only);
    }

    // A floored side keeps its degrees of freedom. By hand: a = 1, 2, 3 (s² = 1, above
    // a floor of 0.5: v = 1/3); b = 5, 5, 5 floored at 3: v = 1. ν = (4/3)² / ((1/3)²/2
    // + 1²/2) = 3.2; t = 3 / √(4/3).
    #[test]
    fn welch_degrees_of_freedom_with_a_floor() {
        let t = *welch_floored(&[1.0, 2.0, 3.0], 0.5, &[5.0; 3], 3.0).tested().unwrap();
        close(t.df.unwrap(), (16.0 / 9.0) / (1.0 / 18.0 + 0.5), 1e-12);
        close(t.df.unwrap(), 3.2, 1e-12);
        close(t.se, (4.0f64 / 3.0).sqrt(), 1e-12);
        close(t.p_value, 2.0 * t_cdf(-3.0 / (4.0f64 / 3.0).sqrt(), 3.2), 1e-12);
    }

    // One run against repetitions of a profile row: floors from the sampling variances.
    // 100 samples against 100, 100, 100 (no spread): delta 0, p = 1. 100, 100, 100
    // against 10: var = 10p²(1 − 0.001) + 100p²(1 − 0.01)/3 (each side's floor), ν = 2.
    #[test]
    fn one_run_against_repetitions_of_a_profile_row() {
        let rep = |n| SampledTime::fixed_period(n, 0.01, 10_000);
        assert_eq!(p(time_test(&[rep(100)], &[rep(100); 3])), 1.0);
        let t = *time_test(&[rep(100), rep(100), rep(100)], &[rep(10)]).tested().unwrap();
        let var: f64 = 10.0 * 1e-4 * 0.999 + 100.0 * 1e-4 * 0.99 / 3.0;
        assert_eq!(t.test, NoiseTest::OneVsMany);
        close(t.se, var.sqrt(), 1e-12);
        close(t.p_value, 2.0 * t_cdf(-0.9 / var.sqrt(), 2.0), 1e-12);
    }

    // The same function asked the two questions (the 500/10,000 against
    // 600/12,000 samples, period 1 ms): its time grew 20% (0.5 s -> 0.6 s, significant),
    // its share of CPU samples did not move (5% both: p = 1). The table's time column
    // and the flame graph answer these two questions; the table's share column and the
    // flame graph ask the same one and get the same answer from share_test.
    #[test]
    fn time_and_share_answer_different_questions() {
        let t = time_test(
            &[SampledTime::fixed_period(500, 0.001, 10_000)],
            &[SampledTime::fixed_period(600, 0.001, 12_000)],
        );
        let t = *t.tested().unwrap();
        close(t.delta, 0.1, 1e-12);
        assert!(t.p_value < 0.01, "{}", t.p_value);
        let s = share_test(&[ShareCount::of(500, 10_000)], &[ShareCount::of(600, 12_000)]);
        assert_eq!(s.tested().unwrap().delta, 0.0);
        assert!(s.p_value().unwrap() > 0.9);
    }

    // A frame at 100% in both runs: no change, no error. From 100% to 0% (a renamed
    // top frame): the exact test, p ~ 0. 99% -> 98% and 1% -> 2% of 10,000: same z.
    #[test]
    fn share_test_edges_and_mirrors() {
        let s = |a, n| ShareCount::of(a, n);
        let v = *share_test(&[s(10_000, 10_000)], &[s(12_000, 12_000)]).tested().unwrap();
        assert_eq!((v.delta, v.se, v.p_value), (0.0, 0.0, 1.0));
        let gone = *share_test(&[s(10_000, 10_000)], &[s(0, 12_000)]).tested().unwrap();
        assert_eq!(gone.test, NoiseTest::ExactCounts);
        assert!(gone.p_value < 1e-300);
        let down = *share_test(&[s(9900, 10_000)], &[s(9800, 10_000)]).tested().unwrap();
        let up = *share_test(&[s(100, 10_000)], &[s(200, 10_000)]).tested().unwrap();
        close(down.se, up.se, 1e-12);
        close(100.0 * up.se, 100.0 * (2.95e-6f64).sqrt(), 1e-12);
        assert!(down.p_value < 1e-8 && up.p_value < 1e-8);
        // Repetitions of shares use their spread, as the table does.
        let reps = share_test(&[s(100, 10_000), s(130, 10_000), s(70, 10_000)], &[s(200, 10_000)]);
        assert_eq!(reps.tested().unwrap().test, NoiseTest::OneVsMany);
    }
}
