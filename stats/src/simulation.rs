//! Seeded simulations of synthetic comparisons with known truth: the size of each test at
//! 5%, the false-discovery (or family-wise error) rate of each family, and the power at
//! the detectable change. Run with `--nocapture` to see the measured rates; the
//! numbers quoted in docs/formulas.md are these.
//!
//! Each rate is a proportion over `trials` synthetic comparisons; the bounds allow two
//! Monte Carlo standard errors where a bound sits at the nominal rate itself, so that the
//! outcome does not hang on the seed.

use super::moderated::{Prior, RowSpread};
use super::*;
use crate::rng::Rng;

fn rate(hits: usize, trials: usize) -> f64 {
    hits as f64 / trials as f64
}

/// Two Monte Carlo standard errors of a proportion near `p` over `trials`.
fn two_se(p: f64, trials: usize) -> f64 {
    2.0 * (p * (1.0 - p) / trials as f64).sqrt()
}

fn significant(v: Verdict) -> bool {
    v.p_value().is_some_and(|p| p < ALPHA)
}

#[test]
fn the_sampler_is_poisson() {
    // Mean and variance within 3 standard errors, both branches; P(0) for λ = 2.
    let mut rng = Rng::new(1);
    for lambda in [2.0, 15.0, 400.0] {
        let n = 40_000;
        let xs: Vec<f64> = (0..n).map(|_| rng.poisson(lambda) as f64).collect();
        let (m, s) = (mean(&xs), stddev(&xs).powi(2));
        assert!(
            (m - lambda).abs() < 3.0 * (lambda / n as f64).sqrt(),
            "{lambda}: mean {m}"
        );
        assert!(
            (s / lambda - 1.0).abs() < 3.0 * (2.0 / n as f64).sqrt() + 0.01,
            "{lambda}: var {s}"
        );
        if lambda == 2.0 {
            let zeros = rate(xs.iter().filter(|&&x| x == 0.0).count(), n);
            assert!((zeros - (-2.0f64).exp()).abs() < 0.006, "P(0) = {zeros}");
        }
    }
}

/// Single runs, time: both runs sample the same 10 s of work, run 1 at 1 ms (10,000
/// samples), run 2 at 0.5 ms (20,000): counts multinomial given the totals, functions
/// from 2 to 6,000 samples, up to 60% of the run.
#[test]
fn single_run_time_tests_keep_their_size() {
    const TRIALS: usize = 2000;
    let shares = [0.0002, 0.003, 0.02, 0.3, 0.6, 0.0768];
    let cum: Vec<f64> = shares
        .iter()
        .scan(0.0, |c, s| Some(*c + s))
        .map(|c: f64| c.min(1.0))
        .collect();
    let mut rng = Rng::new(2);
    let mut hits = [0usize; 5];
    let mut tests = [None; 5];
    for _ in 0..TRIALS {
        let (c1, c2) = (rng.multinomial(10_000, &cum), rng.multinomial(20_000, &cum));
        for f in 0..5 {
            let v = time_test(
                &[SampledTime::fixed_period(c1[f], 0.001, 10_000)],
                &[SampledTime::fixed_period(c2[f], 0.0005, 20_000)],
            );
            tests[f] = v.tested().map(|t| t.test);
            hits[f] += usize::from(significant(v));
        }
    }
    let size: Vec<f64> = hits.iter().map(|&h| rate(h, TRIALS)).collect();
    eprintln!(
        "single-run time test, size at 5% by share {:?}: {size:.4?}",
        &shares[..5]
    );
    // ~6 samples a side: the exact test is conservative (discrete), never above 5%.
    assert!(size[0] <= ALPHA + two_se(ALPHA, TRIALS), "{size:?}");
    // ~90 and ~600 samples: exact; 9,000 and 18,000 samples at 30% and 60%: normal,
    // multinomial.
    assert_eq!(tests[2], Some(NoiseTest::ExactCounts));
    assert_eq!(tests[3], Some(NoiseTest::NormalCounts));
    for s in &size[1..] {
        assert!((0.03..=0.07).contains(s), "{size:?}");
    }
}

/// Repetitions with 3% run-to-run noise on every function's rate, on top of Poisson
/// sampling: Welch (k a side) and one against k.
#[test]
fn repetition_tests_keep_their_size() {
    const TRIALS: usize = 4000;
    let mut rng = Rng::new(3);
    let mut rep = |lambda: f64, k: usize| -> Vec<SampledTime> {
        (0..k)
            .map(|_| {
                let rate = lambda * (1.0 + 0.03 * rng.normal()).max(0.0);
                let n = rng.poisson(rate);
                SampledTime::fixed_period(n, 0.001, 10_000_000)
            })
            .collect()
    };
    for lambda in [20.0, 2_000.0, 50_000.0] {
        for (k1, k2) in [(2, 2), (3, 3), (5, 5), (1, 3), (1, 5)] {
            let hits = (0..TRIALS)
                .filter(|_| significant(time_test(&rep(lambda, k1), &rep(lambda, k2))))
                .count();
            let size = rate(hits, TRIALS);
            eprintln!("time test, {k1} vs {k2} repetitions, {lambda} samples, 3% noise: size {size:.4}");
            assert!(size <= 0.07, "{lambda} {k1} {k2}: {size}");
            // Where run-to-run noise dominates, the tests are near 5% from 3 a side.
            if lambda == 50_000.0 && k2 >= 3 {
                assert!(size >= 0.03, "{lambda} {k1} {k2}: {size}");
            }
        }
    }
}

/// Shares (the table's share column and the flame graph's colours): single runs of
/// 10,000 and 20,000 samples, multinomial; and 3 repetitions a side of 10,000 samples
/// with 3% run-to-run noise on every share. Sizes near 5% where the counts are not small.
#[test]
fn share_tests_keep_their_size() {
    const TRIALS: usize = 2000;
    let shares = [0.02, 0.3, 0.6, 0.08];
    let cum: Vec<f64> = shares.iter().scan(0.0, |c, s| Some(*c + s)).collect();
    let mut rng = Rng::new(9);
    let mut hits = [0usize; 3];
    for _ in 0..TRIALS {
        let (c1, c2) = (rng.multinomial(10_000, &cum), rng.multinomial(20_000, &cum));
        for f in 0..3 {
            let v = share_test(&[ShareCount::of(c1[f], 10_000)], &[ShareCount::of(c2[f], 20_000)]);
            hits[f] += usize::from(significant(v));
        }
    }
    let size: Vec<f64> = hits.iter().map(|&h| rate(h, TRIALS)).collect();
    eprintln!(
        "single-run share test, size at 5% by share {:?}: {size:.4?}",
        &shares[..3]
    );
    for s in &size {
        assert!((0.03..=0.07).contains(s), "{size:?}");
    }

    // Repetitions: each repetition's shares drawn around 3%-noisy rates, counts binomial
    // (normal approximation: thousands of samples). With 5 a side of 100,000 samples the
    // noise dominates the sampling error (900 against 145 samples at 30%) and the size is
    // Welch's; with 3 a side of 10,000 the floors bind often and the test is conservative.
    for (k, total) in [(3, 10_000u64), (5, 100_000)] {
        let mut hits = [0usize; 2];
        for _ in 0..TRIALS {
            let mut side = || -> Vec<[ShareCount; 2]> {
                (0..k)
                    .map(|_| {
                        [0.3, 0.6].map(|s: f64| {
                            let mean = total as f64 * s * (1.0 + 0.03 * rng.normal());
                            let sd = (mean * (1.0 - mean / total as f64)).sqrt();
                            let count = (mean + sd * rng.normal()).round() as u64;
                            ShareCount::of(count, total)
                        })
                    })
                    .collect()
            };
            let (a, b) = (side(), side());
            for (f, h) in hits.iter_mut().enumerate() {
                let reps = |s: &[[ShareCount; 2]]| s.iter().map(|r| r[f]).collect::<Vec<_>>();
                *h += usize::from(significant(share_test(&reps(&a), &reps(&b))));
            }
        }
        let size: Vec<f64> = hits.iter().map(|&h| rate(h, TRIALS)).collect();
        eprintln!(
            "share test, {k} vs {k} repetitions of {total} samples, 3% noise, shares 30% and 60%: size {size:.4?}"
        );
        for s in &size {
            assert!(*s <= 0.07, "{k} {size:?}");
            if k == 5 {
                assert!(*s >= 0.03, "{k} {size:?}");
            }
        }
    }
}

/// Benchmark values, 3% noise, printed to three decimals (and to one, coarser than the
/// noise).
#[test]
fn benchmark_tests_keep_their_size() {
    const TRIALS: usize = 4000;
    let mut rng = Rng::new(4);
    for d in [0.001, 0.1] {
        let mut side = |k: usize| -> Vec<f64> {
            (0..k)
                .map(|_| ((2.0 * (1.0 + 0.03 * rng.normal())) / d).round() * d)
                .collect()
        };
        for (k1, k2) in [(3, 3), (5, 5), (1, 4)] {
            let hits = (0..TRIALS)
                .filter(|_| significant(bench_test(&side(k1), &side(k2), d)))
                .count();
            let size = rate(hits, TRIALS);
            eprintln!("benchmark test, {k1} vs {k2}, resolution {d}: size {size:.4}");
            assert!(size <= 0.07, "{d} {k1} {k2}: {size}");
            if d == 0.001 {
                assert!(size >= 0.03, "{d} {k1} {k2}: {size}");
            }
        }
    }
}

/// The false-discovery rate of function rows under Benjamini–Hochberg: 100 functions
/// from 5 to 50,000 samples, 10 of which truly grow by 50% (A/B), or none (A/A, where
/// the FDR is the chance of any false row). Single runs are tested against sampling
/// noise alone (the test's premise); the last case adds 3% run-to-run noise to single
/// runs, which the sampling error cannot see: it is measured, not bounded, and every
/// verdict must say `sampling_only`.
#[test]
fn function_families_keep_their_false_discovery_rate() {
    const TRIALS: usize = 1000;
    let mut rng = Rng::new(5);
    let lambdas: Vec<f64> = (0..100).map(|i| 5.0 * 10f64.powf(4.0 * i as f64 / 99.0)).collect();
    for (changed, k, noise) in [(0, 1, 0.0), (10, 1, 0.0), (0, 3, 0.03), (10, 3, 0.03), (0, 1, 0.03)] {
        let (mut fdp, mut any_false, mut found, mut false_total) = (0.0, 0, 0usize, 0usize);
        for _ in 0..TRIALS {
            let mut side = |factor: &dyn Fn(usize) -> f64| -> Vec<Vec<SampledTime>> {
                (0..lambdas.len())
                    .map(|f| {
                        (0..k)
                            .map(|_| {
                                let l = lambdas[f] * factor(f) * (1.0 + noise * rng.normal()).max(0.0);
                                let n = rng.poisson(l);
                                SampledTime::fixed_period(n, 0.001, 100_000_000)
                            })
                            .collect()
                    })
                    .collect()
            };
            // Every tenth function changes (spread over the sizes).
            let truly = |f: usize| changed > 0 && f % (100 / changed.max(1)) == 0;
            let s1 = side(&|_| 1.0);
            let s2 = side(&|f| if truly(f) { 1.5 } else { 1.0 });
            let verdicts: Vec<Verdict> = s1.iter().zip(&s2).map(|(a, b)| time_test(a, b)).collect();
            let single = k == 1;
            assert!(verdicts.iter().all(|v| v.tested().unwrap().sampling_only == single));
            let q = adjust_verdicts(Correction::BenjaminiHochberg, &verdicts);
            let flagged: Vec<usize> = (0..q.len()).filter(|&i| q[i].is_some_and(|q| q < ALPHA)).collect();
            let false_rows = flagged.iter().filter(|&&f| !truly(f)).count();
            fdp += false_rows as f64 / flagged.len().max(1) as f64;
            any_false += usize::from(false_rows > 0);
            false_total += false_rows;
            found += flagged.len() - false_rows;
        }
        let fdr = fdp / TRIALS as f64;
        eprintln!(
            "functions, BH, {changed} of 100 changed, {k} run(s) a side, {noise} noise: FDR {fdr:.4}, \
             P(any false row) {:.4}, false rows {:.2}, true rows found {:.2} of {changed}",
            rate(any_false, TRIALS),
            false_total as f64 / TRIALS as f64,
            found as f64 / TRIALS as f64
        );
        if !(k == 1 && noise > 0.0) {
            assert!(fdr <= ALPHA + two_se(ALPHA, TRIALS), "FDR {fdr}");
        }
    }
}

/// Flame-graph frames: inclusive shares of a random call tree, A/A. Shares of siblings
/// are negatively dependent and a frame's share is part of its parent's (positive); the
/// simulation shows BH keeps the chance of any false frame at or below 5%, and BY far
/// below.
#[test]
fn frame_families_keep_their_false_discovery_rate() {
    const TRIALS: usize = 1000;
    const NODES: usize = 400;
    const SAMPLES: f64 = 20_000.0;
    let mut rng = Rng::new(6);
    let mut parent = vec![0usize; NODES];
    for (i, p) in parent.iter_mut().enumerate().skip(1) {
        let u = rng.uniform();
        *p = if u < 0.7 {
            (rng.uniform() * i as f64) as usize
        } else {
            i - 1 - ((rng.uniform() * 5.0) as usize).min(i - 1)
        };
    }
    // Self weights heavy-tailed (Pareto, shape 1.2), normalised.
    let mut w: Vec<f64> = (0..NODES)
        .map(|_| (1.0 - rng.uniform()).powf(-1.0 / 1.2) - 0.99)
        .collect();
    let total: f64 = w.iter().sum();
    w.iter_mut().for_each(|x| *x /= total);
    let inclusive = |own: &[u64]| -> Vec<u64> {
        let mut inc = own.to_vec();
        // Parents have smaller indices: accumulate from the leaves up.
        for i in (1..NODES).rev() {
            inc[parent[i]] += inc[i];
        }
        inc
    };
    let (mut any_bh, mut any_by, mut tested) = (0, 0, 0);
    for _ in 0..TRIALS {
        // Poisson counts per frame: given the total they are multinomial, as the share
        // test assumes.
        let own1: Vec<u64> = w.iter().map(|x| rng.poisson(x * SAMPLES)).collect();
        let own2: Vec<u64> = w.iter().map(|x| rng.poisson(x * SAMPLES)).collect();
        let (i1, i2) = (inclusive(&own1), inclusive(&own2));
        let (n1, n2) = (i1[0], i2[0]);
        let verdicts: Vec<Verdict> = (1..NODES)
            .filter(|&f| i1[f].max(i2[f]) as f64 >= 0.005 * n1.min(n2) as f64)
            .map(|f| share_test(&[ShareCount::of(i1[f], n1)], &[ShareCount::of(i2[f], n2)]))
            .collect();
        tested += verdicts.len();
        let any = |c| {
            adjust_verdicts(c, &verdicts)
                .iter()
                .any(|q| q.is_some_and(|q| q < ALPHA))
        };
        any_bh += usize::from(any(Correction::BenjaminiHochberg));
        any_by += usize::from(any(Correction::BenjaminiYekutieli));
    }
    let (bh, by) = (rate(any_bh, TRIALS), rate(any_by, TRIALS));
    eprintln!(
        "frames A/A, {:.0} frames tested a comparison: P(any false frame) BH {bh:.4}, BY {by:.4}",
        tested as f64 / TRIALS as f64
    );
    assert!(bh <= ALPHA + two_se(ALPHA, TRIALS), "BH {bh}");
    assert!(by <= bh);
}

/// Benchmark values, total CPU and system counters: Holm keeps the chance of any false
/// row at or below 5% (12 rows, 3 repetitions a side, 3% noise, A/A).
#[test]
fn holm_keeps_the_family_wise_error_rate() {
    const TRIALS: usize = 2000;
    let mut rng = Rng::new(7);
    let mut any = 0;
    for _ in 0..TRIALS {
        let verdicts: Vec<Verdict> = (0..12)
            .map(|r| {
                let mu = 1.0 + r as f64;
                let mut side = || (0..3).map(|_| mu * (1.0 + 0.03 * rng.normal())).collect::<Vec<_>>();
                let (a, b) = (side(), side());
                bench_test(&a, &b, 0.001)
            })
            .collect();
        any += usize::from(
            adjust_verdicts(Correction::Holm, &verdicts)
                .iter()
                .any(|q| q.is_some_and(|q| q < ALPHA)),
        );
    }
    let fwer = rate(any, TRIALS);
    eprintln!("benchmarks A/A, Holm, 12 rows: P(any false row) {fwer:.4}");
    assert!(fwer <= ALPHA + two_se(ALPHA, TRIALS), "{fwer}");
}

/// Power: a true change of 1.5 X (X = the observed-significance threshold at the true
/// standard error) is detected at least 75% of the time; a true change of Y about 80%.
#[test]
fn power_at_the_detectable_change() {
    const TRIALS: usize = 4000;
    let mut rng = Rng::new(8);
    // Single runs, 10,000 samples of 1 ms: the normal test.
    let se = 0.001 * (2.0 * 10_000.0f64).sqrt();
    let mut single = |change: f64| {
        let lambda2 = 10_000.0 + change / 0.001;
        let hits = (0..TRIALS)
            .filter(|_| {
                significant(time_test(
                    &[SampledTime::fixed_period(rng.poisson(10_000.0), 0.001, 100_000_000)],
                    &[SampledTime::fixed_period(rng.poisson(lambda2), 0.001, 100_000_000)],
                ))
            })
            .count();
        rate(hits, TRIALS)
    };
    let d = detectable(se, None);
    let (at_15x, at_y) = (single(1.5 * d.observed), single(d.true_change_80));
    eprintln!("single runs, normal: power at 1.5X {at_15x:.4}, at Y {at_y:.4}");
    assert!(at_15x >= 0.75 && (0.75..=0.85).contains(&at_y), "{at_15x} {at_y}");

    // Profile rows with repetitions, 5 a side of 50,000 samples with 3% run-to-run noise
    // (Welch, ν = 8 when the noise dominates): X from the true standard error.
    let (lambda, sigma, k) = (50_000.0, 0.03, 5);
    let se = 0.001 * (2.0 * ((sigma * lambda) * (sigma * lambda) + lambda) / k as f64).sqrt();
    let d = detectable(se, Some(2.0 * (k as f64 - 1.0)));
    let mut reps = |change: f64| {
        let hits = (0..TRIALS)
            .filter(|_| {
                let mut side = |l: f64| -> Vec<SampledTime> {
                    (0..k)
                        .map(|_| {
                            let z = rng.normal();
                            let n = rng.poisson(l * (1.0 + sigma * z));
                            SampledTime::fixed_period(n, 0.001, 100_000_000)
                        })
                        .collect()
                };
                significant(time_test(&side(lambda), &side(lambda + change / 0.001)))
            })
            .count();
        rate(hits, TRIALS)
    };
    let (at_15x, at_y) = (reps(1.5 * d.observed), reps(d.true_change_80));
    eprintln!("profile rows 5 vs 5, 3% noise: power at 1.5X {at_15x:.4}, at Y {at_y:.4}");
    assert!(at_15x >= 0.75 && (0.72..=0.88).contains(&at_y), "{at_15x} {at_y}");

    // Benchmark values, 3% noise: Welch with 5 a side (ν = 8) and one against 3 (ν = 2).
    for (k1, k2) in [(5, 5), (1, 3)] {
        let sigma = 0.03;
        let (se, df) = if k1 == 1 {
            (sigma * (1.0 + 1.0 / k2 as f64).sqrt(), k2 as f64 - 1.0)
        } else {
            (sigma * (2.0 / k1 as f64).sqrt(), 2.0 * (k1 as f64 - 1.0))
        };
        let d = detectable(se, Some(df));
        let mut power = |change: f64| {
            let hits = (0..TRIALS)
                .filter(|_| {
                    let a: Vec<f64> = (0..k1).map(|_| 1.0 + sigma * rng.normal()).collect();
                    let b: Vec<f64> = (0..k2).map(|_| 1.0 + change + sigma * rng.normal()).collect();
                    significant(bench_test(&a, &b, 1e-6))
                })
                .count();
            rate(hits, TRIALS)
        };
        let (at_15x, at_y) = (power(1.5 * d.observed), power(d.true_change_80));
        eprintln!("benchmarks {k1} vs {k2}: power at 1.5X {at_15x:.4}, at Y {at_y:.4}");
        assert!(
            at_15x >= 0.75 && (0.72..=0.88).contains(&at_y),
            "{k1} {k2}: {at_15x} {at_y}"
        );
    }
}

/// The comparisons of issue 28: 200 functions of Zipf-distributed shares, 10^5 samples of
/// 1 ms a run of which 60% busy, every function's rate with 3% lognormal run-to-run noise
/// per run; the rows above 0.5% of the CPU time (about 35) are the BH family, the model is
/// fitted over all 200 (as `compare_sides` does).
mod shared {
    use super::*;

    pub const FUNCTIONS: usize = 200;
    const BUSY: f64 = 60_000.0;
    const IDLE: f64 = 40_000.0;
    pub const PERIOD: f64 = 0.001;

    /// Expected busy samples of each function.
    pub fn lambdas() -> Vec<f64> {
        let h: f64 = (1..=FUNCTIONS).map(|r| 1.0 / r as f64).sum();
        (1..=FUNCTIONS).map(|r| BUSY / (r as f64 * h)).collect()
    }

    /// One side: each function's time in each of `k` repetitions.
    pub fn side(
        rng: &mut Rng,
        lambdas: &[f64],
        factor: &dyn Fn(usize) -> f64,
        k: usize,
        noise: f64,
    ) -> Vec<Vec<SampledTime>> {
        let counts: Vec<Vec<u64>> = (0..k)
            .map(|_| {
                lambdas
                    .iter()
                    .enumerate()
                    .map(|(f, l)| {
                        let z = rng.normal();
                        rng.poisson(l * factor(f) * (noise * z - noise * noise / 2.0).exp())
                    })
                    .collect()
            })
            .collect();
        let totals: Vec<u64> = counts
            .iter()
            .map(|c| c.iter().sum::<u64>() + rng.poisson(IDLE))
            .collect();
        (0..lambdas.len())
            .map(|f| {
                (0..k)
                    .map(|r| SampledTime::fixed_period(counts[r][f], PERIOD, totals[r]))
                    .collect()
            })
            .collect()
    }

    /// One comparison: each function's verdict after the family's adjustment (None below
    /// the cutoff), and the model.
    pub fn compare(s1: &[Vec<SampledTime>], s2: &[Vec<SampledTime>]) -> (Vec<Option<Significance>>, Prior) {
        let spreads: Vec<RowSpread> = s1.iter().zip(s2).map(|(a, b)| RowSpread::of_times(a, b)).collect();
        let prior = Prior::fit(&spreads);
        let busy = |s: &[Vec<SampledTime>]| -> f64 {
            s.iter().map(|t| t.iter().map(|x| x.value()).sum::<f64>()).sum::<f64>() / s[0].len() as f64
        };
        let (b1, b2) = (busy(s1), busy(s2));
        let mean = |t: &[SampledTime]| t.iter().map(|x| x.value()).sum::<f64>() / t.len() as f64;
        let repeated = s1[0].len() > 1 || s2[0].len() > 1;
        let mut rows: Vec<Option<Significance>> = s1
            .iter()
            .zip(s2)
            .map(|(a, b)| {
                let above = mean(a) / b1 >= 0.005 || mean(b) / b2 >= 0.005;
                above.then(|| Significance::unadjusted(time_test_with(a, b, &prior), mean(b) - mean(a), repeated))
            })
            .collect();
        adjust_family(
            Correction::BenjaminiHochberg,
            &mut rows.iter_mut().flatten().collect::<Vec<_>>(),
        );
        (rows, prior)
    }

    /// The rates over `trials` comparisons with functions `changed` (index, factor):
    /// reports with any false row, the false-discovery rate, and each changed
    /// function's detection rate; and the median Y stated for the first changed function
    /// (or for function `watch` in an A/A).
    pub struct Rates {
        pub any_false: f64,
        pub fdr: f64,
        pub found: Vec<f64>,
        pub stated_y: f64,
        pub phi: f64,
    }

    pub fn run(
        seed: u64,
        trials: usize,
        k: (usize, usize),
        noise: f64,
        changed: &[(usize, f64)],
        watch: usize,
    ) -> Rates {
        let mut rng = Rng::new(seed);
        let lambdas = lambdas();
        let (mut any, mut fdp) = (0usize, 0.0);
        let mut found = vec![0usize; changed.len()];
        let mut ys = Vec::new();
        let mut phis = Vec::new();
        let factor = |f: usize| changed.iter().find(|c| c.0 == f).map_or(1.0, |c| c.1);
        for _ in 0..trials {
            let s1 = side(&mut rng, &lambdas, &|_| 1.0, k.0, noise);
            let s2 = side(&mut rng, &lambdas, &factor, k.1, noise);
            let (rows, prior) = compare(&s1, &s2);
            phis.push(prior.phi());
            let marked: Vec<usize> = (0..rows.len())
                .filter(|&f| rows[f].as_ref().is_some_and(|r| r.stands_out()))
                .collect();
            let false_rows = marked.iter().filter(|&&f| factor(f) == 1.0).count();
            any += usize::from(false_rows > 0);
            fdp += false_rows as f64 / marked.len().max(1) as f64;
            for (i, c) in changed.iter().enumerate() {
                found[i] += usize::from(marked.contains(&c.0));
            }
            if let Some(d) = rows[watch].as_ref().and_then(|r| r.detectable) {
                ys.push(d.true_change_80);
            }
        }
        ys.sort_by(f64::total_cmp);
        phis.sort_by(f64::total_cmp);
        Rates {
            any_false: rate(any, trials),
            fdr: fdp / trials as f64,
            found: found.iter().map(|&h| rate(h, trials)).collect(),
            stated_y: ys.get(ys.len() / 2).copied().unwrap_or(f64::NAN),
            phi: phis[phis.len() / 2],
        }
    }
}

/// The targets: A/A at most 5% of reports with a false row from 2 against 2 (10%
/// with one run a side), FDR at most 5%; f019 (510 samples, 0.51 s) +20% found at least
/// 50% / 70% / 85% of the time at 2v2 / 3v3 / 5v5; a 2 s function +50% found 90% of the
/// time with one run a side. Prints the table of sizes and powers (`--nocapture`).
/// `UPCMP_SIM_TRIALS` sets the trials (400 by default), `UPCMP_SIM_SEED` the seeds.
#[test]
fn shared_variance_sizes_and_powers() {
    let trials: usize = std::env::var("UPCMP_SIM_TRIALS")
        .ok()
        .and_then(|t| t.parse().ok())
        .unwrap_or(400);
    // Another seed set: `UPCMP_SIM_SEED=N` adds N to every seed below.
    let offset: u64 = std::env::var("UPCMP_SIM_SEED")
        .ok()
        .and_then(|t| t.parse().ok())
        .unwrap_or(0);
    let f019 = 19;
    let f004 = 4;
    let mut failed = Vec::new();
    eprintln!("runs a side | A/A: reports with a false row, FDR | A/B: found (f019 +20%, or f004 +50% at 1v1), FDR | median sqrt(phi)");
    for (seed, k) in [(21u64, (1usize, 1usize)), (22, (2, 2)), (23, (3, 3)), (24, (5, 5))] {
        let seed = seed + offset;
        let aa = shared::run(seed, trials, k, 0.03, &[], f019);
        let (changed, want) = if k.0 == 1 {
            ((f004, 1.5), 0.90)
        } else {
            ((f019, 1.2), [0.0, 0.0, 0.50, 0.70, 0.0, 0.85][k.0])
        };
        let ab = shared::run(seed + 100, trials, k, 0.03, &[changed], f019);
        eprintln!(
            "{}v{} | {:.4}, {:.4} | {:.4}, {:.4} | {:.4}",
            k.0,
            k.1,
            aa.any_false,
            aa.fdr,
            ab.found[0],
            ab.fdr,
            aa.phi.sqrt()
        );
        let limit = if k.0 == 1 { 0.10 } else { ALPHA };
        if aa.any_false > limit + two_se(limit, trials) {
            failed.push(format!("{k:?}: A/A {}", aa.any_false));
        }
        if ab.fdr > ALPHA + two_se(ALPHA, trials) {
            failed.push(format!("{k:?}: FDR {}", ab.fdr));
        }
        if ab.found[0] < want - two_se(want, trials) {
            failed.push(format!("{k:?}: found {}", ab.found[0]));
        }
    }
    assert!(failed.is_empty(), "{failed:?}");
}

/// Trials of a simulation: `UPCMP_SIM_TRIALS` when set, else `default`.
fn sim_trials(default: usize) -> usize {
    std::env::var("UPCMP_SIM_TRIALS")
        .ok()
        .and_then(|t| t.parse().ok())
        .unwrap_or(default)
}

/// Another seed set: `UPCMP_SIM_SEED=N` adds N to every seed.
fn sim_seed(seed: u64) -> u64 {
    seed + std::env::var("UPCMP_SIM_SEED")
        .ok()
        .and_then(|t| t.parse::<u64>().ok())
        .unwrap_or(0)
}

/// Whether a detection rate measured over `trials` confirms "80%": within 70–90%, the
/// band of the issue, widened by two Monte Carlo standard errors at its edge (2.3 points
/// at 300 trials) so that a rate truly inside the band fails about 2% of the time.
fn confirms_80(found: f64, trials: usize) -> bool {
    let slack = two_se(0.7, trials);
    (0.70 - slack..=0.90 + slack).contains(&found)
}

/// The stated "detected 80% of the time": f019's Y at 2v2, 3v3 and 5v5 (in its family,
/// the median over A/A comparisons), then f019 changed by exactly Y: found 70–90% of the
/// time. `UPCMP_SIM_TRIALS` comparisons a line (300 by default, half as many A/A for the median).
#[test]
fn stated_power_is_confirmed() {
    let trials = sim_trials(300);
    let mut failed = Vec::new();
    for (seed, k) in [(30u64, (2usize, 2usize)), (31, (3, 3)), (32, (5, 5))] {
        let aa = shared::run(sim_seed(seed), trials / 2, k, 0.03, &[], 19);
        let y = aa.stated_y;
        let lambda = shared::lambdas()[19] * shared::PERIOD;
        let ab = shared::run(sim_seed(seed + 100), trials, k, 0.03, &[(19, 1.0 + y / lambda)], 19);
        eprintln!(
            "{}v{}: f019 ({lambda:.3} s) stated Y = {y:.4} s (+{:.1}%), found {:.4}",
            k.0,
            k.1,
            100.0 * y / lambda,
            ab.found[0]
        );
        if !confirms_80(ab.found[0], trials) {
            failed.push(format!("{k:?}: {}", ab.found[0]));
        }
    }
    assert!(failed.is_empty(), "{failed:?}");
}

/// The stated Y of a Holm family's first row (the median over A/A families of `m` rows),
/// then that row changed by Y: the share of families where it is marked. `row(rng,
/// change)` makes the row's verdict.
fn holm_stated_and_found(
    rng: &mut Rng,
    m: usize,
    trials: usize,
    row: &mut dyn FnMut(&mut Rng, f64) -> Verdict,
) -> (f64, f64) {
    let mut family = |rng: &mut Rng, change: f64| -> Vec<Significance> {
        let mut rows: Vec<Significance> = (0..m)
            .map(|i| {
                let v = row(rng, if i == 0 { change } else { 0.0 });
                Significance::unadjusted(v, 0.0, true)
            })
            .collect();
        adjust_family(Correction::Holm, &mut rows.iter_mut().collect::<Vec<_>>());
        rows
    };
    let mut ys: Vec<f64> = (0..200)
        .filter_map(|_| family(rng, 0.0)[0].detectable.map(|d| d.true_change_80))
        .collect();
    ys.sort_by(f64::total_cmp);
    let y = ys[ys.len() / 2];
    let found = (0..trials).filter(|_| family(rng, y)[0].stands_out()).count();
    (y, rate(found, trials))
}

/// The stated Y of benchmark values (3% noise, Holm over a report's 1, 5 and 10
/// benchmarks) and of the total CPU time (the profiles: 10^5 samples a run, 60%
/// busy, 3% noise on every function; Holm over 1 and 3 tests' totals), at 2v2, 3v3 and
/// 5v5: both are tested with the repetitions' own spread (Welch, 1 to 8 degrees of
/// freedom) and state Y from the median-unbiased standard error. Each found 70–90% of
/// the time (`UPCMP_SIM_TRIALS` comparisons a line, 300 by default).
#[test]
fn stated_power_of_benchmarks_and_cpu_totals_is_confirmed() {
    let trials = sim_trials(300);
    let mut rng = Rng::new(sim_seed(33));
    let mut failed = Vec::new();
    eprintln!("row, runs a side, Holm over m | stated Y | found at Y");
    for k in [2usize, 3, 5] {
        for m in [1usize, 5, 10] {
            let (y, found) = holm_stated_and_found(&mut rng, m, trials, &mut |rng, change| {
                let mut side = |c: f64| (0..k).map(|_| 1.0 + c + 0.03 * rng.normal()).collect::<Vec<_>>();
                let a = side(0.0);
                bench_test(&a, &side(change), 1e-6)
            });
            eprintln!("benchmark, {k}v{k}, {m} | +{:.1}% | {found:.4}", 100.0 * y);
            if !confirms_80(found, trials) {
                failed.push(format!("benchmark {k}v{k} over {m}: {found}"));
            }
        }
    }
    let lambdas = shared::lambdas();
    for k in [2usize, 3, 5] {
        for m in [1usize, 3] {
            let (y, found) = holm_stated_and_found(&mut rng, m, trials, &mut |rng, change| {
                // The busy time of each repetition; `change` in seconds, spread over
                // every function in proportion (on f000 alone a change of Y at 2v2 is
                // +90% of it and nearly doubles its noise with it).
                let busy = lambdas.iter().sum::<f64>() * shared::PERIOD;
                let grow = 1.0 + change / busy;
                let mut total = |f: f64| -> Vec<SampledTime> {
                    let s = shared::side(rng, &lambdas, &|_| f, k, 0.03);
                    (0..k)
                        .map(|r| {
                            let busy: u64 = s.iter().map(|t| t[r].samples).sum();
                            SampledTime::fixed_period(busy, shared::PERIOD, s[0][r].run_samples)
                        })
                        .collect()
                };
                let a = total(1.0);
                time_test(&a, &total(grow))
            });
            eprintln!(
                "CPU total, {k}v{k}, {m} | {y:.3} s (+{:.2}%) | {found:.4}",
                100.0 * y / 60.0
            );
            if !confirms_80(found, trials) {
                failed.push(format!("CPU total {k}v{k} over {m}: {found}"));
            }
        }
    }
    assert!(failed.is_empty(), "{failed:?}");
}
