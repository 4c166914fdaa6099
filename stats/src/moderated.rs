//! The variance of a profile row shared across the functions of a test
//! (docs/formulas.md, "The variance model"): a run-to-run dispersion φ common to the
//! test's functions on top of each one's sampling variance, V = F + φ·m², and with
//! repetitions an empirical-Bayes prior for each function's own variance around that
//! trend (limma's moderated t, Smyth 2004), so that a row is tested with the degrees of
//! freedom of the whole test rather than its k − 1.

use super::counts::{sampling_test, Counted, Degenerate, SampledTime, ShareCount};
use super::dist::{gamma_q, two_sided_p};
use super::{with_few, Growth, NoiseTest, NotTested, Tested, Verdict};
use serde::Serialize;

/// Functions enter the fit when their mean count is at least this on both sides: below
/// it, the spread of a count is too discrete for the χ² the fit assumes, and a function
/// absent from a side is a change, not noise.
pub const FIT_MIN_COUNT: f64 = 10.0;
/// Fewer functions than this in the fit: no shared model, each row is tested alone.
pub const FIT_MIN_FUNCTIONS: usize = 10;

/// One side of a row: its repetitions' number, mean value, sample variance, mean sampling
/// variance (the floor) and mean count.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SideSpread {
    /// Repetitions.
    pub k: usize,
    /// Mean value.
    pub mean: f64,
    /// Sample variance of the values (0 with one repetition).
    pub s2: f64,
    /// Mean sampling variance of a value.
    pub floor: f64,
    /// Mean count.
    pub count: f64,
    /// The value is a share of its run's samples: its run-to-run part is φ·m²·(1 − m)²
    /// (a share's own change moves the whole it is a share of, and a frame that is most
    /// of its graph barely moves against it).
    pub share: bool,
}

impl SideSpread {
    fn of(s: &[Counted], share: bool) -> Self {
        let k = s.len();
        if k == 0 {
            return SideSpread {
                share,
                ..SideSpread::default()
            };
        }
        let kf = k as f64;
        let mean = s.iter().map(|c| c.value).sum::<f64>() / kf;
        let s2 = if k > 1 {
            s.iter().map(|c| (c.value - mean).powi(2)).sum::<f64>() / (kf - 1.0)
        } else {
            0.0
        };
        SideSpread {
            k,
            mean,
            s2,
            floor: s.iter().map(|c| c.var).sum::<f64>() / kf,
            count: s.iter().map(|c| c.count as f64).sum::<f64>() / kf,
            share,
        }
    }

    /// What φ multiplies in the variance of one value: m², or m²·(1 − m)² for a share.
    fn disp_sq(&self) -> f64 {
        let m2 = self.mean * self.mean;
        if self.share {
            m2 * (1.0 - self.mean).powi(2)
        } else {
            m2
        }
    }

    /// The variance of one value under the shared model: sampling plus dispersion.
    fn model_var(&self, phi: f64) -> f64 {
        self.floor + phi * self.disp_sq()
    }
}

/// A row's two sides, as the fit takes them.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RowSpread(pub [SideSpread; 2]);

impl RowSpread {
    fn of(a: &[Counted], b: &[Counted], share: bool) -> Self {
        RowSpread([SideSpread::of(a, share), SideSpread::of(b, share)])
    }

    /// A function's times in run 1 and run 2 (one per repetition).
    pub fn of_times(run1: &[SampledTime], run2: &[SampledTime]) -> Self {
        with_few(run1.iter().map(Counted::from), |a| {
            with_few(run2.iter().map(Counted::from), |b| Self::of(a, b, false))
        })
    }

    /// A share's counts in run 1 and run 2 (one per repetition).
    pub fn of_shares(run1: &[ShareCount], run2: &[ShareCount]) -> Self {
        with_few(run1.iter().map(Counted::from), |a| {
            with_few(run2.iter().map(Counted::from), |b| Self::of(a, b, true))
        })
    }

    /// Whether the row enters the fit.
    pub fn eligible(&self) -> bool {
        self.0.iter().all(|s| s.k > 0 && s.count >= FIT_MIN_COUNT)
    }

    /// Residual degrees of freedom of the row's repetitions.
    fn df(&self) -> usize {
        self.0.iter().map(|s| s.k.saturating_sub(1)).sum()
    }

    /// The pooled variance of the row in units of its model variance, u = Σ (k−1)·s²/V
    /// / Σ (k−1), and its degrees of freedom (sides with no model variance left out).
    fn scaled_var(&self, phi: f64) -> (f64, f64) {
        let (mut sum, mut d) = (0.0, 0.0);
        for s in &self.0 {
            let v = s.model_var(phi);
            if s.k >= 2 && v > 0.0 {
                sum += (s.k - 1) as f64 * s.s2 / v;
                d += (s.k - 1) as f64;
            }
        }
        (if d > 0.0 { sum / d } else { 0.0 }, d)
    }
}

/// The model shared by the rows of one test, fitted over its functions.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Prior {
    /// Fewer than [`FIT_MIN_FUNCTIONS`] functions to fit: each row is tested alone.
    Unfitted,
    /// One run a side: every row's variance is its sampling variance plus φ·(m₁² + m₂²),
    /// φ such that the median |z| of the fitted functions is that of a standard normal.
    Dispersion {
        /// φ: the squared relative run-to-run spread of a function (√φ = 0.03 for 3%).
        phi: f64,
        /// φ's degrees of freedom (Σ f² over the fitted functions, f the share of a
        /// function's variance that is φ's); a row whose variance is a share f of φ's
        /// is tested with t on df/f² degrees of freedom.
        df: f64,
        /// Functions in the fit.
        fitted: usize,
    },
    /// Repetitions: each row's variance moderated towards the trend s0²·(F + φ·m²) with
    /// d0 prior degrees of freedom (None: infinite, the trend alone).
    Moderated {
        /// φ: the squared relative run-to-run spread of the trend.
        phi: f64,
        /// The prior's degrees of freedom; None for infinitely many.
        d0: Option<f64>,
        /// The prior's scale, in units of the trend.
        s0_sq: f64,
        /// The degrees of freedom of φ itself (2/π·Σ d·f² over the fitted functions, f
        /// the share of a function's trend that is φ's, 2/π the median's efficiency): a
        /// row whose trend is a share f of φ's has at most phi_df/f² prior degrees of
        /// freedom, however large d0.
        phi_df: f64,
        /// Functions in the fit.
        fitted: usize,
    },
}

impl Prior {
    /// The model of a test whose rows (every function, above the cutoff or not) are `rows`.
    pub fn fit(rows: &[RowSpread]) -> Prior {
        let fit: Vec<&RowSpread> = rows.iter().filter(|r| r.eligible()).collect();
        if fit.len() < FIT_MIN_FUNCTIONS {
            return Prior::Unfitted;
        }
        if fit.iter().all(|r| r.df() == 0) {
            let (phi, df) = fit_dispersion(&fit);
            return Prior::Dispersion {
                phi,
                df,
                fitted: fit.len(),
            };
        }
        let fit: Vec<&RowSpread> = fit.into_iter().filter(|r| r.df() > 0).collect();
        if fit.len() < FIT_MIN_FUNCTIONS {
            return Prior::Unfitted;
        }
        fit_moderated(&fit)
    }

    /// φ, the dispersion of the model (0 when unfitted).
    pub fn phi(&self) -> f64 {
        match *self {
            Prior::Unfitted => 0.0,
            Prior::Dispersion { phi, .. } | Prior::Moderated { phi, .. } => phi,
        }
    }
}

/// The c ≥ 0 where `stat(c)` crosses `target` from above (bisection); 0 when already at
/// or below the target at 0.
fn solve_decreasing(stat: impl Fn(f64) -> f64, target: f64) -> f64 {
    if stat(0.0) <= target {
        return 0.0;
    }
    let mut hi = 1e-6;
    while stat(hi) > target && hi < 1e6 {
        hi *= 4.0;
    }
    let mut lo = 0.0;
    for _ in 0..80 {
        let mid = 0.5 * (lo + hi);
        if stat(mid) > target {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// z² is clipped here in the dispersion fit, so that a few functions that did change
/// weigh little (3 standard errors).
const CLIP: f64 = 9.0;

/// E[min(Z², c)] for Z standard normal: P(χ²₃ ≤ c) + c·P(χ²₁ > c).
fn clipped_target() -> f64 {
    1.0 - gamma_q(1.5, CLIP / 2.0) + CLIP * gamma_q(0.5, CLIP / 2.0)
}

/// One run a side: most functions of an A/B do not change, so the spread of their
/// standardized deltas beyond the sampling error is run-to-run noise. φ solves the
/// normal likelihood's score equation Σ w·(z² − 1) = 0, w = M/V (M = m₁² + m₂², V the
/// row's variance), with z² clipped at [`CLIP`] (and its expectation with it); its
/// degrees of freedom are Σ f², f = φM/V the row's share of variance from φ (Fisher's
/// information: var(φ̂)/φ² = 2/Σ f²).
fn fit_dispersion(rows: &[&RowSpread]) -> (f64, f64) {
    let target = clipped_target();
    let parts = |r: &RowSpread, phi: f64| {
        let [a, b] = r.0;
        let m = a.disp_sq() + b.disp_sq();
        let v = a.model_var(phi) + b.model_var(phi);
        (m, v, (b.mean - a.mean).powi(2))
    };
    let score = |phi: f64| {
        rows.iter()
            .map(|r| {
                let (m, v, d2) = parts(r, phi);
                if v > 0.0 {
                    m / v * ((d2 / v).min(CLIP) - target)
                } else {
                    0.0
                }
            })
            .sum::<f64>()
    };
    let phi = solve_decreasing(score, 0.0);
    let df = rows
        .iter()
        .map(|r| {
            let (m, v, _) = parts(r, phi);
            if v > 0.0 {
                (phi * m / v).powi(2)
            } else {
                0.0
            }
        })
        .sum();
    (phi, df)
}

/// The tail probability beyond which a side's scaled variance is clipped in the fit of φ
/// with repetitions: that of |Z| > 3, as [`CLIP`] with one run a side.
const CLIP_TAIL: f64 = 0.0027;

/// The clip point c_d of χ²_d/d (its upper [`CLIP_TAIL`] quantile) and E[min(χ²_d/d, c_d)]
/// = P(χ²_{d+2} ≤ d·c_d) + c_d·P(χ²_d > d·c_d).
fn clipped_chi2(d: f64) -> (f64, f64) {
    let tail = |c: f64| gamma_q(d / 2.0, c * d / 2.0);
    let (mut lo, mut hi) = (0.0, 1.0);
    while tail(hi) > CLIP_TAIL {
        hi *= 2.0;
    }
    for _ in 0..100 {
        let mid = 0.5 * (lo + hi);
        if tail(mid) > CLIP_TAIL {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    let c = 0.5 * (lo + hi);
    (c, 1.0 - gamma_q(d / 2.0 + 1.0, c * d / 2.0) + c * tail(c))
}

/// Repetitions: φ by the likelihood of the sides' sample variances (s² ~ V·χ²_d/d, V =
/// F + φm², d = k − 1), whose score is Σ d·(m²/V)·(s²/V − 1): each side weighs by what φ
/// tells of it, so that the many small functions, whose variance is their sampling
/// variance whatever φ, add no noise to it (a median over all functions did, and φ then
/// had far fewer degrees of freedom than it claimed). s²/V is clipped at its upper
/// 0.27% point (and its expectation with it) so that a few functions far noisier than
/// the rest weigh little. Then the prior's scale and degrees of freedom from the moments
/// of log u (limma's `fitFDist`).
fn fit_moderated(rows: &[&RowSpread]) -> Prior {
    // One clip point per residual degrees of freedom (all sides of a test share theirs).
    let mut by_df: Vec<(usize, (f64, f64))> = Vec::new();
    let mut sides: Vec<(&SideSpread, f64, f64, f64)> = Vec::new();
    for s in rows.iter().flat_map(|r| r.0.iter()).filter(|s| s.k >= 2) {
        let d = s.k - 1;
        let (c, e) = match by_df.iter().find(|b| b.0 == d) {
            Some(b) => b.1,
            None => {
                let ce = clipped_chi2(d as f64);
                by_df.push((d, ce));
                ce
            }
        };
        sides.push((s, d as f64, c, e));
    }
    let phi = solve_decreasing(
        |phi| {
            sides
                .iter()
                .map(|&(s, d, c, e)| {
                    let v = s.model_var(phi);
                    if v > 0.0 {
                        d * s.disp_sq() / v * ((s.s2 / v).min(c) - e)
                    } else {
                        0.0
                    }
                })
                .sum::<f64>()
        },
        0.0,
    );
    // log u − E[log(χ²_d/d)] has variance trigamma(d/2) + trigamma(d0/2).
    let logs: Vec<(f64, f64)> = rows
        .iter()
        .map(|r| r.scaled_var(phi))
        .filter(|&(u, d)| u > 0.0 && d > 0.0)
        .map(|(u, d)| (u.ln() - digamma(d / 2.0) + (d / 2.0).ln(), trigamma(d / 2.0)))
        .collect();
    // Fisher's information: var(φ̂)/φ² = 2/Σ d·f², f = φm²/V the side's share of
    // variance from φ.
    let phi_df = sides
        .iter()
        .map(|&(s, d, _, _)| {
            let v = s.model_var(phi);
            if v > 0.0 {
                d * (phi * s.disp_sq() / v).powi(2)
            } else {
                0.0
            }
        })
        .sum::<f64>();
    if logs.len() < FIT_MIN_FUNCTIONS {
        // No measurable spread (e.g. identical repetitions): the trend alone.
        return Prior::Moderated {
            phi,
            d0: None,
            s0_sq: 1.0,
            phi_df,
            fitted: rows.len(),
        };
    }
    let n = logs.len() as f64;
    let e_bar = logs.iter().map(|l| l.0).sum::<f64>() / n;
    let var = logs.iter().map(|l| (l.0 - e_bar).powi(2)).sum::<f64>() / (n - 1.0);
    let excess = var - logs.iter().map(|l| l.1).sum::<f64>() / n;
    let (d0, s0_sq) = if excess > 0.0 {
        let d0 = 2.0 * trigamma_inverse(excess);
        (Some(d0), (e_bar + digamma(d0 / 2.0) - (d0 / 2.0).ln()).exp())
    } else {
        (None, e_bar.exp())
    };
    Prior::Moderated {
        phi,
        d0,
        s0_sq,
        phi_df,
        fitted: rows.len(),
    }
}

/// ψ(x), x > 0 (recurrence up to 10, then the asymptotic series).
pub(super) fn digamma(mut x: f64) -> f64 {
    let mut acc = 0.0;
    while x < 10.0 {
        acc -= 1.0 / x;
        x += 1.0;
    }
    let x2 = 1.0 / (x * x);
    acc + x.ln()
        - 0.5 / x
        - x2 * (1.0 / 12.0 - x2 * (1.0 / 120.0 - x2 * (1.0 / 252.0 - x2 * (1.0 / 240.0 - x2 * 5.0 / 660.0))))
}

/// ψ′(x), x > 0.
pub(super) fn trigamma(mut x: f64) -> f64 {
    let mut acc = 0.0;
    while x < 10.0 {
        acc += 1.0 / (x * x);
        x += 1.0;
    }
    let x2 = 1.0 / (x * x);
    acc + 1.0 / x
        + x2 / 2.0
        + x2 / x * (1.0 / 6.0 - x2 * (1.0 / 30.0 - x2 * (1.0 / 42.0 - x2 * (1.0 / 30.0 - x2 * 5.0 / 66.0))))
}

/// x with ψ′(x) = y (ψ′ decreases from ∞ to 0: bisection on log x).
fn trigamma_inverse(y: f64) -> f64 {
    let (mut lo, mut hi) = (-30.0f64, 30.0f64);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if trigamma(mid.exp()) > y {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    (0.5 * (lo + hi)).exp()
}

/// The test of a row under `prior`: the sampling test, with the shared model where
/// there is one; the larger p-value of the two decides (the sampling test is exact at
/// small counts).
pub(super) fn test_with(a: &[Counted], b: &[Counted], degenerate: Degenerate, prior: &Prior) -> Option<Verdict> {
    let sampling = sampling_test(a, b, degenerate);
    let r = RowSpread::of(a, b, degenerate == Degenerate::Exact);
    let [s1, s2] = r.0;
    if s1.k == 0 || s2.k == 0 {
        return None;
    }
    let delta = s2.mean - s1.mean;
    // Run 2 as run 1 changed by Y: its sampling variance grows with the value, its
    // run-to-run variance with the value's square, both scaled by `u` as the row's.
    let growth = |u: f64, phi: f64| {
        if s1.share || s1.mean <= 0.0 {
            return Growth::NONE;
        }
        let k2 = s2.k as f64;
        Growth {
            per_change: u * (s1.floor / s1.mean + 2.0 * phi * s1.mean) / k2,
            per_change_sq: u * phi / k2,
        }
    };
    let (test, var, df, sampling_only, growth) = match *prior {
        Prior::Unfitted => return None,
        Prior::Dispersion { phi, df, .. } => {
            if r.df() > 0 || phi == 0.0 {
                return None;
            }
            let var = s1.model_var(phi) + s2.model_var(phi);
            let share = phi * (s1.disp_sq() + s2.disp_sq()) / var;
            (
                NoiseTest::Dispersed,
                var,
                dispersion_df(df, share),
                true,
                growth(1.0, phi),
            )
        }
        Prior::Moderated {
            phi, d0, s0_sq, phi_df, ..
        } => {
            if s1.k + s2.k <= 2 {
                return None;
            }
            let (u, d) = r.scaled_var(phi);
            let trend = s1.model_var(phi) / s1.k as f64 + s2.model_var(phi) / s2.k as f64;
            let share = phi * (s1.disp_sq() / s1.k as f64 + s2.disp_sq() / s2.k as f64) / trend;
            // The trend is known no better than φ is.
            let cap = if share > 0.0 {
                phi_df / (share * share)
            } else {
                f64::INFINITY
            };
            let d0 = match (d0, cap) {
                (_, cap) if cap >= 1e4 => d0,
                (Some(d0), cap) => Some(d0.min(cap)),
                (None, cap) => Some(cap),
            };
            let u_mod = match d0 {
                Some(d0) => (d0 * s0_sq + d * u) / (d0 + d),
                None => s0_sq,
            };
            let floor = s1.floor / s1.k as f64 + s2.floor / s2.k as f64;
            (
                NoiseTest::Moderated,
                (u_mod * trend).max(floor),
                d0.map(|d0| d0 + d),
                false,
                growth(u_mod, phi),
            )
        }
    };
    let own = if var > 0.0 {
        let se = var.sqrt();
        Tested {
            test,
            delta,
            se,
            df,
            p_value: two_sided_p(delta / se, df),
            sampling_only,
            growth,
            welch_sides: None,
        }
    } else if delta == 0.0 {
        Tested {
            test,
            delta,
            se: 0.0,
            df,
            p_value: 1.0,
            sampling_only,
            growth,
            welch_sides: None,
        }
    } else {
        return Some(match sampling {
            Verdict::Tested(_) => sampling,
            Verdict::NotTested(_) => Verdict::NotTested(NotTested::NoVariance),
        });
    };
    Some(match sampling {
        Verdict::Tested(c) if c.p_value > own.p_value => Verdict::Tested(Tested {
            sampling_only,
            growth,
            ..c
        }),
        _ => Verdict::Tested(own),
    })
}

/// The degrees of freedom of a variance whose share `share` is φ's, φ having `df`: t
/// where they are few, normal from 10⁴ on.
fn dispersion_df(df: f64, share: f64) -> Option<f64> {
    if share <= 0.0 {
        return None;
    }
    let d = df / (share * share);
    (d < 1e4).then_some(d.max(1.0))
}

/// The total CPU time of one run a side under `prior`: its sampling variance plus φ
/// times `sum_sq`, the sum over the test's functions of m₁² + m₂² (each function's
/// dispersion, the functions varying independently). Otherwise as [`super::time_test`].
pub fn total_test_with(run1: &[SampledTime], run2: &[SampledTime], prior: &Prior, sum_sq: f64) -> Verdict {
    let plain = super::time_test(run1, run2);
    let Prior::Dispersion { phi, df, .. } = *prior else {
        return plain;
    };
    if run1.len() != 1 || run2.len() != 1 || phi == 0.0 {
        return plain;
    }
    let (a, b) = (Counted::from(&run1[0]), Counted::from(&run2[0]));
    let delta = b.value - a.value;
    let var = a.var + b.var + phi * sum_sq;
    if var <= 0.0 {
        return plain;
    }
    let se = var.sqrt();
    let df = dispersion_df(df, phi * sum_sq / var);
    let own = Tested {
        test: NoiseTest::Dispersed,
        delta,
        se,
        df,
        p_value: two_sided_p(delta / se, df),
        sampling_only: true,
        growth: Growth::NONE,
        welch_sides: None,
    };
    match plain {
        Verdict::Tested(c) if c.p_value > own.p_value => plain,
        _ => Verdict::Tested(own),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) {
        assert!((a - b).abs() <= tol * b.abs().max(1e-300), "{a} vs {b}");
    }

    // mpmath 1.3 at 30 digits: digamma(1), digamma(0.5), digamma(7.3), trigamma(1) =
    // π²/6, trigamma(0.5) = π²/2, psi(1, 7.3); the median of χ²₁ (findroot on gammainc).
    #[test]
    fn polygamma_by_reference() {
        close(digamma(1.0), -0.5772156649015329, 1e-13);
        close(digamma(0.5), -1.9635100260214235, 1e-13);
        close(digamma(7.3), 1.917820335637986, 1e-13);
        close(trigamma(1.0), std::f64::consts::PI.powi(2) / 6.0, 1e-13);
        close(trigamma(0.5), std::f64::consts::PI.powi(2) / 2.0, 1e-13);
        close(trigamma(7.3), 0.1467957681314271, 1e-12);
        close(trigamma(trigamma_inverse(0.3)), 0.3, 1e-12);
        // χ²₂/2 is Exp(1): its 0.27% point is −ln 0.0027 and E[min(X, c)] = 1 − e^(−c);
        // with one degree of freedom the clip is |Z| = 3 and its mean the one-run fit's.
        let (c, e) = clipped_chi2(2.0);
        close(c, -(0.0027f64.ln()), 1e-10);
        close(e, 1.0 - 0.0027, 1e-10);
        let (c, e) = clipped_chi2(1.0);
        close(c, 9.0, 1e-4);
        close(e, clipped_target(), 1e-5);
    }

    fn side(k: usize, mean: f64, s2: f64, floor: f64) -> SideSpread {
        SideSpread {
            k,
            mean,
            s2,
            floor,
            count: 100.0,
            share: false,
        }
    }

    // Too few functions: no model. One run a side with every function exactly as the
    // sampling error predicts (|z| = 0.6745 for all): no dispersion.
    #[test]
    fn fits_need_functions_and_find_no_dispersion_in_pure_sampling() {
        let rows = vec![RowSpread([side(1, 100.0, 0.0, 100.0), side(1, 110.0, 0.0, 100.0)]); 5];
        assert_eq!(Prior::fit(&rows), Prior::Unfitted);
        let d = 0.9 * 200f64.sqrt();
        let rows = vec![RowSpread([side(1, 100.0, 0.0, 100.0), side(1, 100.0 + d, 0.0, 100.0)]); 20];
        let p = Prior::fit(&rows);
        assert!(matches!(p, Prior::Dispersion { fitted: 20, .. }), "{p:?}");
        assert!(p.phi() < 1e-9, "{p:?}");
    }

    // One run a side, every delta 2 times the sampling error: by hand, z² = 4·200 /
    // (200 + φM) = t, the clipped χ²₁'s mean (0.9950073 = 1 − Q(1.5, 4.5) + 9·Q(0.5, 4.5),
    // mpmath 1.3), gives φ = (800/t − 200)/M, M = m₁² + m₂²; every row's share of
    // variance from φ is f = φM/(800/t): df = 11·f².
    #[test]
    fn dispersion_by_hand() {
        let t = clipped_target();
        close(t, 0.995007278034453, 1e-9);
        let d = 2.0 * 200f64.sqrt();
        let rows = vec![RowSpread([side(1, 1000.0, 0.0, 100.0), side(1, 1000.0 + d, 0.0, 100.0)]); 11];
        let m = 1000f64.powi(2) + (1000.0 + d).powi(2);
        match Prior::fit(&rows) {
            Prior::Dispersion { phi, df, fitted } => {
                close(phi, (800.0 / t - 200.0) / m, 1e-9);
                close(df, 11.0 * (phi * m / (800.0 / t)).powi(2), 1e-9);
                assert_eq!(fitted, 11);
            }
            p => panic!("{p:?}"),
        }
    }

    // Repetitions with every function's variance exactly its trend times the clipped
    // mean of χ²_d/d: φ is recovered; identical variances leave no excess, so d0 is
    // infinite.
    #[test]
    fn moderated_fit_recovers_the_trend() {
        let m2 = clipped_chi2(2.0).1;
        let rows: Vec<RowSpread> = (1..=30)
            .map(|i| {
                let mean = 100.0 * i as f64;
                let v = mean + 0.0009 * mean * mean;
                RowSpread([side(3, mean, v * m2, mean), side(3, mean, v * m2, mean)])
            })
            .collect();
        match Prior::fit(&rows) {
            Prior::Moderated { phi, d0, fitted, .. } => {
                close(phi, 0.0009, 1e-6);
                assert_eq!((d0, fitted), (None, 30));
            }
            p => panic!("{p:?}"),
        }
    }
}
