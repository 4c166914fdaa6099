//! A test's history: series of values in run order (benchmark values, the CPU total, the
//! top functions' seconds), each with its change points ([`super::changepoint`]) and the
//! newest run judged against the runs since the last change point. Pure: the app layer
//! reads the dataset and hands the series in.

use super::changepoint::{change_points, newest_departs, ChangeOptions, ChangePoint, NewestRun, ALPHA};
use serde::Serialize;

/// A point of the history: one run (`--by time`) or every run of one commit (`--by commit`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HistoryPoint {
    /// What the point is called: the commit label, else the run's start time.
    pub label: String,
    /// Start time of its first run.
    pub started: String,
    /// Its runs' ids.
    pub run_ids: Vec<String>,
    /// Its runs' hosts, distinct, in order.
    pub hosts: Vec<String>,
    /// Its runs' kernel releases, distinct, in order.
    pub kernels: Vec<String>,
}

/// What a series measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SeriesKind {
    /// A benchmark value of upout.
    Benchmark,
    /// CPU time outside idle.
    CpuTotal,
    /// One function's time.
    Function,
}

/// One series: for each point, the values of its repetitions (empty where it has none).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Series {
    /// What it measures.
    pub kind: SeriesKind,
    /// The benchmark's description, `CPU time`, or the function (with ` [module]` outside
    /// the kernel and user).
    pub name: String,
    /// Its unit (`s`, `s/op`, or the benchmark's).
    pub unit: String,
    /// Whether a higher value is better.
    pub higher_is_better: bool,
    /// Values per point.
    pub values: Vec<Vec<f64>>,
}

/// What the newest point did to a series.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Newest {
    /// Within the noise of the runs since the last change point.
    Unchanged,
    /// Better beyond the noise.
    Better,
    /// Worse beyond the noise: a regression starts at the newest run.
    Worse,
    /// Too few runs since the last change point, no spread among them, or no value in the
    /// newest run.
    CannotTell,
}

/// A series with what was found in it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SeriesHistory {
    /// The series.
    pub series: Series,
    /// Its change points, in run order.
    pub change_points: Vec<ChangePoint>,
    /// The newest point against the runs since the last change point.
    pub newest_test: Option<NewestRun>,
    /// Its verdict.
    pub newest: Newest,
}

/// A test's history.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct History {
    /// The test.
    pub test: String,
    /// `time` or `commit`.
    pub by: String,
    /// The points, oldest first.
    pub points: Vec<HistoryPoint>,
    /// The series.
    pub series: Vec<SeriesHistory>,
    /// Significance level of the change points and of the newest run's test (the latter
    /// divided among the series, Bonferroni).
    pub alpha: f64,
}

impl History {
    /// The series whose newest point is worse beyond the noise.
    pub fn regressions(&self) -> impl Iterator<Item = &SeriesHistory> {
        self.series.iter().filter(|s| s.newest == Newest::Worse)
    }

    /// The series whose newest point could not be judged.
    pub fn untestable(&self) -> impl Iterator<Item = &SeriesHistory> {
        self.series.iter().filter(|s| s.newest == Newest::CannotTell)
    }
}

/// FNV-1a of the name: each series has its own permutations, the same on every run.
fn seed_of(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Finds the change points of every series and judges its newest point.
pub fn analyse(test: &str, by: &str, points: Vec<HistoryPoint>, series: Vec<Series>) -> History {
    let alpha_each = ALPHA / series.len().max(1) as f64;
    let series = series
        .into_iter()
        .map(|s| {
            let opts = ChangeOptions {
                seed: seed_of(&s.name),
                ..Default::default()
            };
            let change_points = change_points(&s.values, &opts);
            let newest_test = newest_departs(&s.values, &change_points);
            let newest = match &newest_test {
                None => Newest::CannotTell,
                Some(t) if t.p_value > alpha_each => Newest::Unchanged,
                Some(t) if (t.delta > 0.0) == s.higher_is_better => Newest::Better,
                Some(_) => Newest::Worse,
            };
            SeriesHistory {
                series: s,
                change_points,
                newest_test,
                newest,
            }
        })
        .collect();
    History {
        test: test.to_string(),
        by: by.to_string(),
        points,
        series,
        alpha: ALPHA,
    }
}
