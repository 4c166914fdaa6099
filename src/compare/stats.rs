//! Statistics for telling a real change from noise (`docs/formulas.md`, "Noise").
//!
//! - Repeated runs on both sides (n >= 2 each): Welch's t-test on the per-repetition
//!   values, two-sided, at [`ALPHA`].
//! - A single run on either side: the sampling (Poisson) error of the sample counts,
//!   a z-test at the same level. It understates run-to-run noise, and the report says so.

use serde::Serialize;

/// Significance level of every test (two-sided).
pub const ALPHA: f64 = 0.05;
/// The two-sided normal quantile for [`ALPHA`].
pub const Z_CRIT: f64 = 1.959_963_984_540_054;

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

/// ln Γ(x) for x > 0 (Lanczos approximation, g = 7, 9 terms; ~15 significant digits).
fn ln_gamma(x: f64) -> f64 {
    const G: f64 = 7.0;
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection: Γ(x)Γ(1-x) = π / sin(πx).
        return (std::f64::consts::PI / (std::f64::consts::PI * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = C[0];
    let t = x + G + 0.5;
    for (i, c) in C.iter().enumerate().skip(1) {
        a += c / (x + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

/// Continued fraction of the incomplete beta function (modified Lentz).
fn beta_cf(a: f64, b: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    let mut c = 1.0;
    let mut d = 1.0 - qab * x / qap;
    if d.abs() < TINY {
        d = TINY;
    }
    d = 1.0 / d;
    let mut h = d;
    for m in 1..300 {
        let m = f64::from(m);
        let m2 = 2.0 * m;
        let aa = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1.0 + aa * d;
        d = if d.abs() < TINY { TINY } else { d };
        c = 1.0 + aa / c;
        c = if c.abs() < TINY { TINY } else { c };
        d = 1.0 / d;
        h *= d * c;
        let aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1.0 + aa * d;
        d = if d.abs() < TINY { TINY } else { d };
        c = 1.0 + aa / c;
        c = if c.abs() < TINY { TINY } else { c };
        d = 1.0 / d;
        let del = d * c;
        h *= del;
        if (del - 1.0).abs() < 1e-15 {
            break;
        }
    }
    h
}

/// The regularized incomplete beta function I_x(a, b).
pub fn inc_beta(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let ln_front = ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln();
    let front = ln_front.exp();
    // The continued fraction converges fast for x < (a+1)/(a+b+2); use symmetry otherwise.
    if x < (a + 1.0) / (a + b + 2.0) {
        front * beta_cf(a, b, x) / a
    } else {
        1.0 - front * beta_cf(b, a, 1.0 - x) / b
    }
}

/// Student's t cumulative distribution with `df` degrees of freedom (df may be fractional).
pub fn t_cdf(t: f64, df: f64) -> f64 {
    let x = df / (df + t * t);
    let tail = 0.5 * inc_beta(df / 2.0, 0.5, x);
    if t >= 0.0 {
        1.0 - tail
    } else {
        tail
    }
}

/// The t value below which lies probability `p` (bisection on [`t_cdf`]).
pub fn t_quantile(p: f64, df: f64) -> f64 {
    let (mut lo, mut hi) = (-1e4, 1e4);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if t_cdf(mid, df) < p {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// The result of a test for a difference between run 2 and run 1.
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

/// Welch's t-test of `b` against `a` (each at least two values).
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

/// The two-sided normal tail probability of |z|.
fn normal_two_sided_p(z: f64) -> f64 {
    // erfc(|z|/√2) by the t distribution's limit: t_cdf with a very large df is the normal.
    2.0 * t_cdf(-z.abs(), 1e9)
}

/// Sampling-error test of a count difference: counts `n1` and `n2` (Poisson), each
/// sample worth `p1` and `p2` seconds.
pub fn sampling(n1: f64, p1: f64, n2: f64, p2: f64) -> Significance {
    let delta = n2 * p2 - n1 * p1;
    let se = (n1 * p1 * p1 + n2 * p2 * p2).sqrt();
    let (p_value, significant) = if se == 0.0 {
        (1.0, false)
    } else {
        let p = normal_two_sided_p(delta / se);
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

    // Reference values from scipy 1.17.1: scipy.stats.t.cdf / t.ppf / ttest_ind(equal_var=False).
    #[test]
    fn t_distribution_matches_scipy() {
        close(t_cdf(-2.0, 3.5), 0.06306926128795672, 1e-10);
        close(t_cdf(1.5, 10.0), 0.9177463367772799, 1e-12);
        close(t_cdf(0.3, 1.0), 0.5927735790777423, 1e-12);
        close(t_quantile(0.975, 2.0), 4.302652729749462, 1e-9);
        close(t_quantile(0.975, 7.3), 2.345066736547703, 1e-9);
        close(t_quantile(0.975, 1000.0), 1.9623390808264083, 1e-9);
    }

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
