//! Multiple testing: the p-values of a family adjusted together, so that a report of
//! many rows keeps few false alarms (docs/formulas.md, "Families").

use super::Verdict;

/// How a family's p-values are adjusted. A row is significant when its adjusted value is
/// below [`super::ALPHA`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Correction {
    /// Benjamini–Hochberg q-values: the false-discovery rate is at most α for
    /// independent or positively dependent tests.
    BenjaminiHochberg,
    /// Benjamini–Yekutieli: BH times Σ 1/i, valid under any dependence (and that much
    /// less powerful).
    BenjaminiYekutieli,
    /// Holm's step-down adjusted p-values: the family-wise error rate is at most α
    /// under any dependence.
    Holm,
}

/// The indices of `p` by increasing p-value (ties in input order).
fn order(p: &[f64]) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..p.len()).collect();
    idx.sort_by(|&i, &j| p[i].total_cmp(&p[j]));
    idx
}

/// The adjusted p-values of the family `p`, in the input's order; as R's `p.adjust`
/// ("BH", "BY", "holm") and statsmodels' `multipletests`.
pub fn adjust(correction: Correction, p: &[f64]) -> Vec<f64> {
    let m = p.len();
    let idx = order(p);
    let mut out = vec![0.0; m];
    match correction {
        Correction::BenjaminiHochberg | Correction::BenjaminiYekutieli => {
            let c = if correction == Correction::BenjaminiYekutieli {
                (1..=m).map(|i| 1.0 / i as f64).sum()
            } else {
                1.0
            };
            // q_(i) = min over j >= i of c·m·p_(j)/j: step up from the largest.
            let mut running = f64::INFINITY;
            for (rank, &i) in idx.iter().enumerate().rev() {
                running = running.min(c * m as f64 * p[i] / (rank + 1) as f64);
                out[i] = running.min(1.0);
            }
        }
        Correction::Holm => {
            // p~_(i) = max over j <= i of (m − j + 1)·p_(j): step down from the smallest.
            let mut running: f64 = 0.0;
            for (rank, &i) in idx.iter().enumerate() {
                running = running.max((m - rank) as f64 * p[i]);
                out[i] = running.min(1.0);
            }
        }
    }
    out
}

/// The adjusted p-values of a family of verdicts: the tested ones form the family (m is
/// their number); rows not tested stay None.
pub fn adjust_verdicts(correction: Correction, verdicts: &[Verdict]) -> Vec<Option<f64>> {
    let tested: Vec<(usize, f64)> = verdicts
        .iter()
        .enumerate()
        .filter_map(|(i, v)| v.p_value().map(|p| (i, p)))
        .collect();
    let adjusted = adjust(correction, &tested.iter().map(|t| t.1).collect::<Vec<_>>());
    let mut out = vec![None; verdicts.len()];
    for ((i, _), q) in tested.into_iter().zip(adjusted) {
        out[i] = Some(q);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Growth, NoiseTest, NotTested, Tested};

    fn close_all(a: &[f64], b: &[f64]) {
        assert_eq!(a.len(), b.len());
        for (x, y) in a.iter().zip(b) {
            assert!((x - y).abs() <= 1e-12 * y.abs().max(1e-300), "{a:?} vs {b:?}");
        }
    }

    // Unsorted, with ties. Reference: statsmodels 0.15.0,
    // multipletests(P, 0.05, method)[1] for "fdr_bh", "fdr_by" and "holm".
    const P: [f64; 10] = [0.01, 0.04, 0.03, 0.005, 0.2, 0.04, 0.9, 0.001, 0.5, 0.025];

    #[test]
    fn benjamini_hochberg_matches_statsmodels() {
        let q = 0.05714285714285715;
        close_all(
            &adjust(Correction::BenjaminiHochberg, &P),
            &[
                0.03333333333333333,
                q,
                q,
                0.024999999999999998,
                0.25,
                q,
                0.9,
                0.01,
                0.5555555555555556,
                q,
            ],
        );
        close_all(&adjust(Correction::BenjaminiHochberg, &[0.02, 0.03, 0.04]), &[0.04; 3]);
    }

    #[test]
    fn benjamini_yekutieli_matches_statsmodels() {
        let q = 0.16736961451247165;
        close_all(
            &adjust(Correction::BenjaminiYekutieli, &P),
            &[
                0.09763227513227513,
                q,
                q,
                0.07322420634920634,
                0.7322420634920634,
                q,
                1.0,
                0.029289682539682536,
                1.0,
                q,
            ],
        );
        close_all(
            &adjust(Correction::BenjaminiYekutieli, &[0.02, 0.03, 0.04]),
            &[0.07333333333333332; 3],
        );
    }

    #[test]
    fn holm_matches_statsmodels() {
        close_all(
            &adjust(Correction::Holm, &P),
            &[
                0.08,
                0.2,
                0.18,
                0.045,
                0.6000000000000001,
                0.2,
                1.0,
                0.01,
                1.0,
                0.17500000000000002,
            ],
        );
        close_all(&adjust(Correction::Holm, &[0.02, 0.03, 0.04]), &[0.06; 3]);
        assert!(adjust(Correction::Holm, &[]).is_empty());
        close_all(&adjust(Correction::BenjaminiHochberg, &[0.3]), &[0.3]);
    }

    #[test]
    fn untested_rows_are_not_in_the_family() {
        let t = |p_value| {
            Verdict::Tested(Tested {
                test: NoiseTest::Welch,
                delta: 1.0,
                se: 1.0,
                df: Some(4.0),
                p_value,
                sampling_only: false,
                growth: Growth::NONE,
                welch_sides: None,
            })
        };
        let v = [t(0.02), Verdict::NotTested(NotTested::SingleRuns), t(0.03), t(0.04)];
        let q = adjust_verdicts(Correction::BenjaminiHochberg, &v);
        assert_eq!(q[1], None);
        close_all(&[q[0].unwrap(), q[2].unwrap(), q[3].unwrap()], &[0.04; 3]);
    }
}
