//! Comparing two stored runs, test by test.

use super::bench::{compare_bench, wall_time_result, BenchRow};
use super::{adjust_report, compare_sides, CompareOptions, ProfileComparison};
use crate::model::Profile;
use crate::store::outdir::Status;
use crate::store::run::{StoredRepetition, StoredRun, StoredTest};
use crate::store::system::BIASING_KEYS;
use serde::Serialize;
use std::path::PathBuf;
use upcmp_parsers::keyvalue::KeyValues;
use upcmp_parsers::upout::BenchResult;

/// Errors of a run comparison.
#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    /// The DataFrame computation failed.
    #[error("computing the comparison: {0}")]
    Polars(#[from] polars::error::PolarsError),
    /// Nothing to compare.
    #[error("{dir1} and {dir2} have no test in common (run 1: {tests1}; run 2: {tests2}); compare runs of the same test list")]
    NoCommonTest {
        /// Run 1.
        dir1: PathBuf,
        /// Run 2.
        dir2: PathBuf,
        /// Run 1's tests.
        tests1: String,
        /// Run 2's tests.
        tests2: String,
    },
}

/// A line of the two `system` files that differs and can bias the comparison.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SystemDifference {
    /// The key in `system`.
    pub key: String,
    /// Run 1's value.
    pub run1: String,
    /// Run 2's value.
    pub run2: String,
}

/// What became of one test.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum TestOutcome {
    /// Present (with a profile) in one run only.
    OnlyIn {
        /// 1 or 2.
        run: u8,
        /// Its directory there.
        dir: PathBuf,
    },
    /// Compared.
    Compared {
        /// Run 1's upout (of its first repetition).
        upout1: PathBuf,
        /// Run 2's upout (of its first repetition).
        upout2: PathBuf,
        /// Repetitions in run 1.
        repetitions1: usize,
        /// Repetitions in run 2.
        repetitions2: usize,
        /// Section 1.
        bench: Vec<BenchRow>,
        /// Sections 2 and 3.
        profile: Box<ProfileComparison>,
        /// Things the reader must know (a failed or interrupted test, collector warnings).
        notes: Vec<String>,
    },
}

/// One test of the report.
#[derive(Debug, Clone, Serialize)]
pub struct TestComparison {
    /// The test's directory name.
    pub name: String,
    /// What became of it.
    pub outcome: TestOutcome,
}

/// The comparison of two runs.
#[derive(Debug, Clone, Serialize)]
pub struct RunComparison {
    /// Run 1's directory.
    pub dir1: PathBuf,
    /// Run 2's directory.
    pub dir2: PathBuf,
    /// Warnings for the top of the report.
    pub warnings: Vec<String>,
    /// Differences of the system descriptions that can bias the comparison.
    pub system_differences: Vec<SystemDifference>,
    /// Tests in run 1's order, then those only in run 2.
    pub tests: Vec<TestComparison>,
}

fn system_differences(s1: &KeyValues, s2: &KeyValues) -> Vec<SystemDifference> {
    let mut diffs: Vec<SystemDifference> = BIASING_KEYS
        .iter()
        .filter_map(|k| {
            let (a, b) = (s1.get(k).unwrap_or("absent"), s2.get(k).unwrap_or("absent"));
            (a != b).then(|| SystemDifference {
                key: k.to_string(),
                run1: a.to_string(),
                run2: b.to_string(),
            })
        })
        .collect();
    // The load always differs a little; it biases a comparison once either machine was
    // not quiet (1-minute load of 0.5 or more) and the two differ.
    let load1 = |kv: &KeyValues| -> Option<f64> { kv.get("load-average")?.split_whitespace().next()?.parse().ok() };
    if let (Some(a), Some(b)) = (load1(s1), load1(s2)) {
        if a.max(b) >= 0.5 && (a - b).abs() >= 0.25 {
            diffs.push(SystemDifference {
                key: "load-average (1 min)".into(),
                run1: format!("{a:.2}"),
                run2: format!("{b:.2}"),
            });
        }
    }
    diffs
}

/// What the reader must know of a repetition: a test that did not complete, and the
/// collector's warnings.
fn repetition_notes(run: u8, r: &StoredRepetition) -> Vec<String> {
    let mut notes = Vec::new();
    if let Some(s) = r.status.as_ref().filter(|s| s.status != Status::Completed) {
        notes.push(format!(
            "run {run}: {} {} (exit codes {:?})",
            r.dir.display(),
            s.status.as_str(),
            s.exit_codes
        ));
    }
    notes.extend(r.profile.warnings.iter().map(|w| format!("run {run}: {w}")));
    notes
}

/// The benchmark results of a repetition: its upout's, or the wall time of its command
/// when the upout reports none.
fn bench_results(r: &StoredRepetition) -> Vec<BenchResult> {
    if r.bench.is_empty() {
        let p = &r.profile;
        let command = p.command.clone().unwrap_or_else(|| p.test.clone());
        vec![wall_time_result(&command, p.wall_sec)]
    } else {
        r.bench.clone()
    }
}

/// One side of a test: its profiles, benchmark results and notes.
struct Side<'a> {
    profiles: Vec<&'a Profile>,
    bench: Vec<Vec<BenchResult>>,
    notes: Vec<String>,
}

fn side(run: u8, t: &StoredTest) -> Side<'_> {
    Side {
        profiles: t.repetitions.iter().map(|r| &r.profile).collect(),
        bench: t.repetitions.iter().map(bench_results).collect(),
        notes: t.repetitions.iter().flat_map(|r| repetition_notes(run, r)).collect(),
    }
}

/// Compares the test `name`, present (with a profile) in both runs.
fn compare_test(t1: &StoredTest, t2: &StoredTest, opts: &CompareOptions) -> Result<TestOutcome, CompareError> {
    let (s1, s2) = (side(1, t1), side(2, t2));
    let mut notes = s1.notes;
    notes.extend(s2.notes);
    let (c1, c2) = (s1.profiles[0].cpus.len(), s2.profiles[0].cpus.len());
    if c1 != c2 {
        notes.push(format!("the runs sampled {c1} and {c2} CPUs"));
    }
    Ok(TestOutcome::Compared {
        upout1: t1.repetitions[0].dir.join(crate::store::run::UPOUT_FILE),
        upout2: t2.repetitions[0].dir.join(crate::store::run::UPOUT_FILE),
        repetitions1: t1.repetitions.len(),
        repetitions2: t2.repetitions.len(),
        bench: compare_bench(&s1.bench, &s2.bench),
        profile: Box::new(compare_sides(&s1.profiles, &s2.profiles, opts)?),
        notes,
    })
}

/// Compares two stored runs (read whole by `crate::store::run::load_run`).
pub fn compare_runs(run1: &StoredRun, run2: &StoredRun, opts: &CompareOptions) -> Result<RunComparison, CompareError> {
    let mut warnings = Vec::new();
    for (k, r) in [(1, run1), (2, run2)] {
        if r.marker.status != Status::Completed {
            warnings.push(format!(
                "run {k} ({}) is marked '{}', not completed",
                r.dir.display(),
                r.marker.status.as_str()
            ));
        }
    }
    let system_differences = system_differences(&run1.system, &run2.system);
    for d in &system_differences {
        warnings.push(format!("the runs differ in {}: '{}' vs '{}'", d.key, d.run1, d.run2));
    }

    let profiled = |r: &'_ StoredRun, name: &str| -> bool { r.test(name).is_some_and(|t| !t.repetitions.is_empty()) };
    let mut names: Vec<&str> = run1.tests.iter().map(|t| t.name.as_str()).collect();
    names.extend(
        run2.tests
            .iter()
            .map(|t| t.name.as_str())
            .filter(|n| run1.test(n).is_none()),
    );
    let mut tests = Vec::new();
    for name in names {
        let outcome = match (profiled(run1, name), profiled(run2, name)) {
            (true, true) => compare_test(
                run1.test(name).expect("profiled"),
                run2.test(name).expect("profiled"),
                opts,
            )?,
            (true, false) => TestOutcome::OnlyIn {
                run: 1,
                dir: run1.dir.join(name),
            },
            (false, true) => TestOutcome::OnlyIn {
                run: 2,
                dir: run2.dir.join(name),
            },
            (false, false) => continue,
        };
        // What makes a test's numbers incomparable goes to the top of the report.
        if let TestOutcome::Compared { profile, .. } = &outcome {
            warnings.extend(profile.warnings.iter().map(|w| format!("{name}: {w}")));
        }
        tests.push(TestComparison {
            name: name.to_string(),
            outcome,
        });
    }
    if !tests.iter().any(|t| matches!(t.outcome, TestOutcome::Compared { .. })) {
        let list = |r: &StoredRun| r.tests.iter().map(|t| t.name.as_str()).collect::<Vec<_>>().join(" ");
        return Err(CompareError::NoCommonTest {
            dir1: run1.dir.clone(),
            dir2: run2.dir.clone(),
            tests1: list(run1),
            tests2: list(run2),
        });
    }
    let mut r = RunComparison {
        dir1: run1.dir.clone(),
        dir2: run2.dir.clone(),
        warnings,
        system_differences,
        tests,
    };
    r.adjust(opts);
    Ok(r)
}

impl RunComparison {
    /// Adjusts the p-values of every compared test together, as the report's families
    /// ([`adjust_report`]), and lists the function rows.
    pub(super) fn adjust(&mut self, opts: &CompareOptions) {
        let mut parts: Vec<(&mut [BenchRow], &mut ProfileComparison)> = self
            .tests
            .iter_mut()
            .filter_map(|t| match &mut t.outcome {
                TestOutcome::Compared { bench, profile, .. } => Some((&mut bench[..], &mut **profile)),
                TestOutcome::OnlyIn { .. } => None,
            })
            .collect();
        adjust_report(&mut parts, opts);
    }
}
