//! Section 1 of upcmp: the benchmark results of two runs side by side.

use super::stats::{self, Detectable, Significance};
use serde::Serialize;
use upcmp_parsers::upout::{BenchResult, Direction};

/// One operation of both runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BenchRow {
    /// The operation's description, with the copy number when several copies ran.
    pub description: String,
    /// Run 1's value (None: absent there).
    pub run1: Option<f64>,
    /// Run 2's value (None: absent there).
    pub run2: Option<f64>,
    /// Unit of the values: `/sec` (a rate) or `sec` (a time).
    pub unit: String,
    /// Whether a smaller value is better (times).
    pub lower_is_better: bool,
    /// Speed of run 2 relative to run 1: R2/R1 for rates, R1/R2 for times, so that
    /// above 1 always means run 2 was faster.
    pub speed_ratio: Option<f64>,
    /// Run 1's value in each of its repetitions that has the operation, in order.
    pub run1_values: Vec<f64>,
    /// Run 2's value in each of its repetitions that has the operation, in order.
    pub run2_values: Vec<f64>,
    /// Standard deviation over run 1's repetitions, % of the mean; none for a single
    /// value, whose spread is undefined (not 0).
    pub run1_sd_pct: Option<f64>,
    /// The same for run 2.
    pub run2_sd_pct: Option<f64>,
    /// The test of the change on the repetitions (Welch's t-test, or one run against
    /// k), adjusted with the report's benchmark values (Holm); None with one run
    /// a side (run-to-run noise not measured: nothing to test).
    pub noise: Option<Significance>,
}

impl BenchRow {
    /// Run `side`'s (1 or 2) standard deviation over its repetitions, % of the mean;
    /// `None` for a single value, whose spread is undefined (not 0).
    pub fn sd_pct(&self, side: usize) -> Option<f64> {
        match side {
            1 => self.run1_sd_pct,
            _ => self.run2_sd_pct,
        }
    }
}

/// The step of the printed value `x` (the rounding the floor of each side's variance
/// stands for): unixperf rounds rates to three significant digits with at least one
/// decimal (two below 10); times are printed with three decimals.
fn print_resolution(unit: &str, x: f64) -> f64 {
    if unit != "/sec" {
        return 0.001;
    }
    let decimals = if x.abs() < 10.0 { 0.01 } else { 0.1 };
    if x == 0.0 || !x.is_finite() {
        return decimals;
    }
    10f64.powi(x.abs().log10().floor() as i32 - 2).max(decimals)
}

fn label(r: &BenchResult) -> String {
    match r.copy {
        None => r.description.clone(),
        Some(k) => format!("{} [copy {k}]", r.description),
    }
}

/// Pairs the results of two runs by description and copy, in run 1's order, then the
/// operations only run 2 has. Each side is a list of repetitions; values are averaged.
pub fn compare_bench(r1: &[Vec<BenchResult>], r2: &[Vec<BenchResult>]) -> Vec<BenchRow> {
    type Key = (String, Option<u32>);
    let key = |r: &BenchResult| (r.description.clone(), r.copy);
    let mut order: Vec<(Key, &BenchResult)> = Vec::new();
    for r in r1.iter().chain(r2.iter()).flatten() {
        if !order.iter().any(|(k, _)| *k == key(r)) {
            order.push((key(r), r));
        }
    }
    let values = |side: &[Vec<BenchResult>], k: &Key| -> Vec<f64> {
        side.iter()
            .filter_map(|rep| rep.iter().find(|r| key(r) == *k).map(|r| r.value))
            .collect()
    };
    order
        .into_iter()
        .map(|(k, first)| {
            let (v1, v2) = (values(r1, &k), values(r2, &k));
            let lower_is_better = matches!(first.direction, Direction::LowerIsBetter);
            let (m1, m2) = (
                (!v1.is_empty()).then(|| stats::mean(&v1)),
                (!v2.is_empty()).then(|| stats::mean(&v2)),
            );
            let speed_ratio = match (m1, m2) {
                (Some(x), Some(y)) if lower_is_better => super::ratio(y, x),
                (Some(x), Some(y)) => super::ratio(x, y),
                _ => None,
            };
            let noise = (v1.len() > 1 || v2.len() > 1).then(|| {
                let d = [m1, m2]
                    .iter()
                    .flatten()
                    .map(|&x| print_resolution(&first.unit, x))
                    .fold(0.0, f64::max);
                let delta = m2.unwrap_or(0.0) - m1.unwrap_or(0.0);
                Significance::unadjusted(stats::bench_test(&v1, &v2, d), delta, true)
            });
            BenchRow {
                description: label(first),
                run1: m1,
                run2: m2,
                unit: first.unit.clone(),
                lower_is_better,
                speed_ratio,
                run1_sd_pct: (v1.len() > 1).then(|| stats::stddev_pct(&v1)),
                run2_sd_pct: (v2.len() > 1).then(|| stats::stddev_pct(&v2)),
                run1_values: v1,
                run2_values: v2,
                noise,
            }
        })
        .collect()
}

/// What the repetitions resolve of the first tested operation, in % of run 1's mean: the
/// observed change below which it is not significant, and the true change detected 80%
/// of the time. None without a test (one run a side).
pub fn first_detectable_pct(rows: &[BenchRow]) -> Option<(&BenchRow, Detectable)> {
    rows.iter().find_map(|r| {
        let (m, d) = (r.run1?, r.noise?.detectable?);
        (m != 0.0).then(|| {
            (
                r,
                Detectable {
                    observed: 100.0 * d.observed / m.abs(),
                    true_change_80: 100.0 * d.true_change_80 / m.abs(),
                },
            )
        })
    })
}

/// A wall-time result for a command whose output has no result the upout parser knows.
pub fn wall_time_result(command: &str, wall_sec: f64) -> BenchResult {
    BenchResult {
        description: format!("wall time of '{command}'"),
        value: wall_sec,
        unit: "sec".to_string(),
        direction: Direction::LowerIsBetter,
        copy: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rate(d: &str, v: f64) -> BenchResult {
        BenchResult {
            description: d.into(),
            value: v,
            unit: "/sec".into(),
            direction: Direction::HigherIsBetter,
            copy: None,
        }
    }

    #[test]
    fn rates_and_times_read_the_same_way() {
        let rows = compare_bench(
            &[vec![rate("fork", 425.0), wall_time_result("x", 4.0)]],
            &[vec![rate("fork", 421.0), wall_time_result("x", 2.0)]],
        );
        assert!((rows[0].speed_ratio.unwrap() - 421.0 / 425.0).abs() < 1e-12);
        assert_eq!(rows[1].speed_ratio, Some(2.0));
        assert!(rows[1].lower_is_better);
    }

    #[test]
    fn one_sided_rows_keep_their_place() {
        let rows = compare_bench(
            &[vec![rate("a", 1.0), rate("b", 2.0)]],
            &[vec![rate("c", 3.0), rate("a", 2.0)]],
        );
        let d: Vec<_> = rows.iter().map(|r| r.description.as_str()).collect();
        assert_eq!(d, ["a", "b", "c"]);
        assert_eq!(rows[1].run2, None);
        assert_eq!(rows[2].run1, None);
        assert_eq!(rows[1].speed_ratio, None);
        assert!(rows[0].noise.is_none(), "no repetitions, no test");
    }

    // 100/102/98 against 110/111/109 per second: Welch's t = 10 / sqrt(4/3 + 1/3) = 7.75,
    // nu = 2.94 (scipy 1.17.1: ttest_ind(a, b, equal_var=False).pvalue = 0.0048). The
    // floor (a step of 1 at three significant digits: 1/12) is below both spreads.
    #[test]
    fn repetitions_are_averaged_and_tested() {
        let reps = |v: &[f64]| v.iter().map(|&x| vec![rate("op", x)]).collect::<Vec<_>>();
        let rows = compare_bench(&reps(&[100.0, 102.0, 98.0]), &reps(&[110.0, 111.0, 109.0]));
        assert_eq!(rows[0].run1, Some(100.0));
        assert!((rows[0].run1_sd_pct.unwrap() - 2.0).abs() < 1e-12);
        let n = rows[0].noise.unwrap();
        assert_eq!(n.test, Some(stats::NoiseTest::Welch));
        assert!((n.p_value.unwrap() - 0.004797999699128055).abs() < 1e-9, "{n:?}");
        // Unadjusted until the report's Holm family is formed.
        assert!(!n.significant && n.q_value.is_none());
        let (first, d) = first_detectable_pct(&rows).unwrap();
        assert_eq!(first.description, "op");
        // X = t_0.975,nu x se as % of 100.
        let x = stats::t_quantile(0.975, n.df.unwrap()) * n.se.unwrap();
        assert!((d.observed - x).abs() < 1e-9 && d.true_change_80 > d.observed, "{d:?}");
    }

    // The cases: identical repetitions (0.123 x3 against 0.124 x3, seconds) are
    // floored by the print step, d^2/12, not given p = 0; one run against three
    // (3.0/3.1/2.9 s against 3.5 s) uses the three's spread for both sides: p = 0.049
    // (scipy 1.17.1: 2*t.sf(4.330127018922194, 2)), where the sampling error said 9.1e-14.
    #[test]
    fn zero_spread_and_one_against_many() {
        let time = |v: f64| BenchResult {
            description: "t".into(),
            value: v,
            unit: "sec".into(),
            direction: Direction::LowerIsBetter,
            copy: None,
        };
        let reps = |v: &[f64]| v.iter().map(|&x| vec![time(x)]).collect::<Vec<_>>();
        let rows = compare_bench(&reps(&[0.123; 3]), &reps(&[0.124; 3]));
        let n = rows[0].noise.unwrap();
        assert!((n.p_value.unwrap() - 0.01323559956368269).abs() < 1e-9, "{n:?}");
        let rows = compare_bench(&reps(&[3.0, 3.1, 2.9]), &reps(&[3.5]));
        let n = rows[0].noise.unwrap();
        assert_eq!(n.test, Some(stats::NoiseTest::OneVsMany));
        assert!((n.p_value.unwrap() - 0.04941362421328312).abs() < 1e-9, "{n:?}");
    }

    #[test]
    fn print_resolution_follows_unixperf() {
        assert_eq!(print_resolution("/sec", 425.0), 1.0);
        assert_eq!(print_resolution("/sec", 440_000.0), 1000.0);
        assert_eq!(print_resolution("/sec", 25.3), 0.1);
        assert_eq!(print_resolution("/sec", 2.51), 0.01);
        assert_eq!(print_resolution("/sec", 0.84), 0.01);
        assert_eq!(print_resolution("/sec", 0.0), 0.01);
        assert_eq!(print_resolution("sec", 4.096), 0.001);
    }
}
