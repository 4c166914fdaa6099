//! Comparing two uprun output directories, test by test.

use super::bench::{compare_bench, wall_time_result, BenchRow};
use super::{compare_profile_sets, CompareOptions, ProfileComparison};
use crate::store::outdir::{repetition_dirs, Run, Status, TestStatus};
use crate::store::system::BIASING_KEYS;
use crate::store::{prfout, read_text, StoreError};
use serde::Serialize;
use std::path::{Path, PathBuf};
use upcmp_parsers::keyvalue::parse_key_values;
use upcmp_parsers::upout::parse_upout;

/// Errors of a run comparison.
#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    /// Reading a run failed.
    #[error(transparent)]
    Store(#[from] StoreError),
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

fn system_differences(d1: &Path, d2: &Path) -> Result<Vec<SystemDifference>, StoreError> {
    let read = |d: &Path| -> Result<_, StoreError> {
        let p = d.join("system");
        Ok(parse_key_values(&read_text(&p)?, &p.display().to_string())?)
    };
    let (s1, s2) = (read(d1)?, read(d2)?);
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
    let load1 = |kv: &upcmp_parsers::keyvalue::KeyValues| -> Option<f64> {
        kv.get("load-average")?.split_whitespace().next()?.parse().ok()
    };
    if let (Some(a), Some(b)) = (load1(&s1), load1(&s2)) {
        if a.max(b) >= 0.5 && (a - b).abs() >= 0.25 {
            diffs.push(SystemDifference {
                key: "load-average (1 min)".into(),
                run1: format!("{a:.2}"),
                run2: format!("{b:.2}"),
            });
        }
    }
    Ok(diffs)
}

/// A test's repetition directories, or None when the run has no profile for it (the
/// test did not run, or was interrupted before its profile was written).
fn profiled(run: &Run, name: &str) -> Option<Vec<PathBuf>> {
    run.test_dir(name)
        .map(|d| repetition_dirs(&d))
        .filter(|reps| !reps.is_empty())
}

fn test_notes(run: u8, dir: &Path, p: &crate::Profile) -> Result<Vec<String>, StoreError> {
    let mut notes = Vec::new();
    if dir.join(crate::store::outdir::STATUS_FILE).is_file() {
        let s = TestStatus::read(dir)?;
        if s.status != Status::Completed {
            notes.push(format!(
                "run {run}: {} {} (exit codes {:?})",
                dir.display(),
                s.status.as_str(),
                s.exit_codes
            ));
        }
    }
    notes.extend(p.warnings.iter().map(|w| format!("run {run}: {w}")));
    Ok(notes)
}

fn bench_results(upout: &Path, p: &crate::Profile) -> Result<Vec<upcmp_parsers::upout::BenchResult>, StoreError> {
    let text = if upout.is_file() {
        read_text(upout)?
    } else {
        String::new()
    };
    let mut r = parse_upout(&text, &upout.display().to_string())?;
    if r.is_empty() {
        let command = p.command.clone().unwrap_or_else(|| p.test.clone());
        r.push(wall_time_result(&command, p.wall_sec));
    }
    Ok(r)
}

/// Every repetition of one side: profiles, benchmark results, notes.
#[allow(clippy::type_complexity)]
fn read_side(
    run: u8,
    reps: &[PathBuf],
) -> Result<
    (
        Vec<crate::Profile>,
        Vec<Vec<upcmp_parsers::upout::BenchResult>>,
        Vec<String>,
    ),
    StoreError,
> {
    let (mut profiles, mut bench, mut notes) = (Vec::new(), Vec::new(), Vec::new());
    for d in reps {
        let p = prfout::read(&d.join("prfout"))?;
        bench.push(bench_results(&d.join("upout"), &p)?);
        notes.extend(test_notes(run, d, &p)?);
        profiles.push(p);
    }
    Ok((profiles, bench, notes))
}

/// Compares two uprun output directories. Nothing is written; every input is read and
/// checked before the result is returned, so a bad input leaves no partial report.
pub fn compare_runs(dir1: &Path, dir2: &Path, opts: &CompareOptions) -> Result<RunComparison, CompareError> {
    let run1 = Run::open(dir1)?;
    let run2 = Run::open(dir2)?;
    let mut warnings = Vec::new();
    for (k, r) in [(1, &run1), (2, &run2)] {
        if r.marker.status != Status::Completed {
            warnings.push(format!(
                "run {k} ({}) is marked '{}', not completed",
                r.dir.display(),
                r.marker.status.as_str()
            ));
        }
    }
    let system_differences = system_differences(dir1, dir2)?;
    for d in &system_differences {
        warnings.push(format!("the runs differ in {}: '{}' vs '{}'", d.key, d.run1, d.run2));
    }

    let mut names: Vec<&String> = run1.test_dirs.iter().collect();
    names.extend(run2.test_dirs.iter().filter(|n| !run1.test_dirs.contains(n)));
    let mut tests = Vec::new();
    for name in names {
        let outcome = match (profiled(&run1, name), profiled(&run2, name)) {
            (Some(d1), Some(d2)) => {
                let (p1, b1, mut notes) = read_side(1, &d1)?;
                let (p2, b2, notes2) = read_side(2, &d2)?;
                notes.extend(notes2);
                if p1[0].cpus.len() != p2[0].cpus.len() {
                    notes.push(format!(
                        "the runs sampled {} and {} CPUs",
                        p1[0].cpus.len(),
                        p2[0].cpus.len()
                    ));
                }
                TestOutcome::Compared {
                    upout1: d1[0].join("upout"),
                    upout2: d2[0].join("upout"),
                    repetitions1: d1.len(),
                    repetitions2: d2.len(),
                    bench: compare_bench(&b1, &b2),
                    profile: Box::new(compare_profile_sets(&p1, &p2, opts)?),
                    notes,
                }
            }
            (Some(_), None) => TestOutcome::OnlyIn {
                run: 1,
                dir: run1.dir.join(name),
            },
            (None, Some(_)) => TestOutcome::OnlyIn {
                run: 2,
                dir: run2.dir.join(name),
            },
            (None, None) => continue,
        };
        tests.push(TestComparison {
            name: name.clone(),
            outcome,
        });
    }
    if !tests.iter().any(|t| matches!(t.outcome, TestOutcome::Compared { .. })) {
        return Err(CompareError::NoCommonTest {
            dir1: dir1.to_path_buf(),
            dir2: dir2.to_path_buf(),
            tests1: run1.test_dirs.join(" "),
            tests2: run2.test_dirs.join(" "),
        });
    }
    Ok(RunComparison {
        dir1: dir1.to_path_buf(),
        dir2: dir2.to_path_buf(),
        warnings,
        system_differences,
        tests,
    })
}
