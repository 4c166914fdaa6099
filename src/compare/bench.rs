//! Section 1 of upcmp: the benchmark results of two runs side by side.

use super::stats::{self, Significance};
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
    /// Standard deviation over run 1's repetitions, % of the mean (0 with one).
    pub run1_sd_pct: f64,
    /// Standard deviation over run 2's repetitions, % of the mean (0 with one).
    pub run2_sd_pct: f64,
    /// Welch's test of the change, when both sides have at least two repetitions.
    pub noise: Option<Significance>,
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
            BenchRow {
                description: label(first),
                run1: m1,
                run2: m2,
                unit: first.unit.clone(),
                lower_is_better,
                speed_ratio,
                run1_sd_pct: stats::stddev_pct(&v1),
                run2_sd_pct: stats::stddev_pct(&v2),
                noise: stats::welch(&v1, &v2),
            }
        })
        .collect()
}

/// The smallest change of the first operation's value that the repetitions resolve, %
/// of run 1's mean (None without repetitions on both sides).
pub fn resolvable_pct(rows: &[BenchRow]) -> Option<f64> {
    let (m, noise) = rows.iter().find_map(|r| Some((r.run1?, r.noise?)))?;
    (m != 0.0).then(|| 100.0 * noise.ci95 / m.abs())
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

    #[test]
    fn repetitions_are_averaged_and_tested() {
        let reps = |v: &[f64]| v.iter().map(|&x| vec![rate("op", x)]).collect::<Vec<_>>();
        let rows = compare_bench(&reps(&[100.0, 102.0, 98.0]), &reps(&[110.0, 111.0, 109.0]));
        assert_eq!(rows[0].run1, Some(100.0));
        assert!((rows[0].run1_sd_pct - 2.0).abs() < 1e-12);
        assert!(rows[0].noise.unwrap().significant);
        let pct = resolvable_pct(&rows).unwrap();
        assert!(pct > 0.0 && pct < 10.0, "{pct}");
    }
}
