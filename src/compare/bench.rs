//! Section 1 of upcmp: the benchmark results of two runs side by side.

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
}

fn label(r: &BenchResult) -> String {
    match r.copy {
        None => r.description.clone(),
        Some(k) => format!("{} [copy {k}]", r.description),
    }
}

/// Pairs the results of two runs by description and copy, in run 1's order, then the
/// operations only run 2 has.
pub fn compare_bench(r1: &[BenchResult], r2: &[BenchResult]) -> Vec<BenchRow> {
    let mut rows: Vec<BenchRow> = Vec::new();
    let key = |r: &BenchResult| (r.description.clone(), r.copy);
    for a in r1 {
        let b = r2.iter().find(|b| key(b) == key(a));
        rows.push(row(label(a), Some(a), b));
    }
    for b in r2.iter().filter(|b| !r1.iter().any(|a| key(a) == key(b))) {
        rows.push(row(label(b), None, Some(b)));
    }
    rows
}

fn row(description: String, a: Option<&BenchResult>, b: Option<&BenchResult>) -> BenchRow {
    let any = a.or(b).expect("a row has at least one side");
    let lower_is_better = matches!(any.direction, Direction::LowerIsBetter);
    let (v1, v2) = (a.map(|r| r.value), b.map(|r| r.value));
    let speed_ratio = match (v1, v2) {
        (Some(x), Some(y)) if lower_is_better => super::ratio(y, x),
        (Some(x), Some(y)) => super::ratio(x, y),
        _ => None,
    };
    BenchRow {
        description,
        run1: v1,
        run2: v2,
        unit: any.unit.clone(),
        lower_is_better,
        speed_ratio,
    }
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
            &[rate("fork", 425.0), wall_time_result("x", 4.0)],
            &[rate("fork", 421.0), wall_time_result("x", 2.0)],
        );
        assert!((rows[0].speed_ratio.unwrap() - 421.0 / 425.0).abs() < 1e-12);
        assert_eq!(rows[1].speed_ratio, Some(2.0));
        assert!(rows[1].lower_is_better);
    }

    #[test]
    fn one_sided_rows_keep_their_place() {
        let rows = compare_bench(&[rate("a", 1.0), rate("b", 2.0)], &[rate("c", 3.0), rate("a", 2.0)]);
        let d: Vec<_> = rows.iter().map(|r| r.description.as_str()).collect();
        assert_eq!(d, ["a", "b", "c"]);
        assert_eq!(rows[1].run2, None);
        assert_eq!(rows[2].run1, None);
        assert_eq!(rows[1].speed_ratio, None);
    }
}
