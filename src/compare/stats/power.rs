//! What a test can see: the observed change it calls significant, and the true change it
//! detects 80% of the time (docs/formulas.md, "What the data can resolve").

use super::dist::quantile;
use serde::Serialize;

/// The two thresholds of a test with a given standard error, in the delta's unit.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Detectable {
    /// X: an observed change below this is not significant at the two-sided 5% level
    /// (t₀.₉₇₅·se). A true change of X is detected only about half the time.
    pub observed: f64,
    /// Y: a true change of this size is detected 80% of the time
    /// ((t₀.₉₇₅ + t₀.₈₀)·se; normal: 2.80·se).
    pub true_change_80: f64,
}

/// The thresholds for standard error `se` and `df` degrees of freedom (None: normal).
///
/// With t the power is that of the noncentral t; t₀.₉₇₅ + t₀.₈₀ approximates it within a
/// few points (scipy 1.17.1 nct: 77% at ν = 2, 79% at ν = 4, 80% from ν = 8 on).
pub fn detectable(se: f64, df: Option<f64>) -> Detectable {
    let c = quantile(0.975, df);
    Detectable {
        observed: c * se,
        true_change_80: (c + quantile(0.8, df)) * se,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) {
        assert!((a - b).abs() <= tol * b.abs().max(1e-300), "{a} vs {b}");
    }

    // Normal: X = 1.96 se, Y = (1.96 + 0.8416) se = 2.8016 se. t with ν = 4 (scipy
    // 1.17.1: t.ppf(0.975, 4) = 2.7764451051977934, t.ppf(0.8, 4) = 0.9409645772351816).
    #[test]
    fn thresholds_by_hand_and_scipy() {
        let n = detectable(2.0, None);
        close(n.observed, 2.0 * 1.959963984540054, 1e-15);
        close(n.true_change_80, 2.0 * (1.959963984540054 + 0.8416212335729143), 1e-15);
        let t = detectable(1.0, Some(4.0));
        close(t.observed, 2.7764451051977934, 1e-9);
        close(t.true_change_80, 2.7764451051977934 + 0.9409645772351816, 1e-9);
        assert_eq!(detectable(0.0, None).observed, 0.0);
    }
}
