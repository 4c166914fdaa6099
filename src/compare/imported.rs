//! Two imported profiles (perf.data, perf script, folded stacks) as a one-test
//! [`RunComparison`], so `upcmp --perf` reports, writes and exports them as it does two
//! uprun directories.

use super::runs::{RunComparison, TestComparison, TestOutcome};
use super::{compare_sides, CompareOptions, Repetition};
use crate::model::Profile;
use std::path::Path;

/// The one test's name: the recordings' common name, else `NAME1 vs NAME2`.
pub fn test_name(p1: &Profile, p2: &Profile) -> String {
    if p1.test == p2.test {
        p1.test.clone()
    } else {
        format!("{} vs {}", p1.test, p2.test)
    }
}

/// A warning when the recordings' lengths differ by more than 10%: their times are
/// totals over different lengths (2 s against 10 s reads as five times the CPU time).
pub fn lengths_differ(wall1: f64, wall2: f64) -> Option<String> {
    let (short, long) = (wall1.min(wall2), wall1.max(wall2));
    (short > 0.0 && long > 1.1 * short).then(|| {
        format!(
            "the recordings are {wall1:.2} s and {wall2:.2} s long: their times (Elapsed, CPU, Idle, each \
             function's) are totals over different lengths; record both for the same time (perf record -a -- sleep \
             N), or read the shares (%)"
        )
    })
}

/// Compares `p1` (read from `path1`) with `p2` (from `path2`). A recording has no
/// benchmark result: section 1 is empty (its wall time is the summary's Elapsed time,
/// not the speed of a benchmark).
pub fn compare_imported(
    path1: &Path,
    p1: &Profile,
    path2: &Path,
    p2: &Profile,
    opts: &CompareOptions,
) -> RunComparison {
    let bench = Vec::new();
    let profile = compare_sides(vec![Repetition::borrowed(p1)], vec![Repetition::borrowed(p2)], opts);
    let mut warnings = Vec::new();
    if p1.event != p2.event {
        warnings.push(format!(
            "the recordings sampled different events: '{}' vs '{}'",
            p1.event, p2.event
        ));
    }
    if p1.cpus.len() != p2.cpus.len() {
        warnings.push(format!(
            "the recordings cover {} and {} CPUs",
            p1.cpus.len(),
            p2.cpus.len()
        ));
    }
    if let Some(w) = lengths_differ(p1.wall_sec, p2.wall_sec) {
        warnings.push(w);
    }
    warnings.extend(profile.warnings.iter().cloned());
    let mut notes: Vec<String> = p1.warnings.iter().map(|w| format!("run 1: {w}")).collect();
    notes.extend(p2.warnings.iter().map(|w| format!("run 2: {w}")));
    let name = test_name(p1, p2);
    let mut r = RunComparison {
        dir1: path1.to_path_buf(),
        dir2: path2.to_path_buf(),
        warnings,
        system_differences: Vec::new(),
        setting_differences: Vec::new(),
        tests: vec![TestComparison {
            name,
            outcome: TestOutcome::Compared {
                upout1: path1.to_path_buf(),
                upout2: path2.to_path_buf(),
                repetitions1: 1,
                repetitions2: 1,
                bench,
                profile: Box::new(profile),
                notes,
                counters: Vec::new(),
                unlike: Vec::new(),
            },
        }],
        counter_family: 0,
    };
    r.adjust(opts);
    r
}
