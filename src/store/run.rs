//! A stored run read whole for comparison: every test's repetitions with their profiles,
//! benchmark output, status and (for upsrun runs) folded stacks. Everything is read and
//! checked here, so the comparison that follows is pure.

use super::outdir::{repetition_dirs, Run, RunKind, RunMarker, TestStatus, STATUS_FILE};
use super::prfout::{self, PRFOUT_FILE};
use super::stacks::{has_stacks, read_folded};
use super::{read_text, system, StoreError};
use crate::model::{Profile, StackProfile};
use std::path::{Path, PathBuf};
use upcmp_parsers::keyvalue::KeyValues;
use upcmp_parsers::upout::{parse_upout, BenchResult};

/// The benchmark's own output of a test.
pub const UPOUT_FILE: &str = "upout";

/// One repetition of a test, as stored.
#[derive(Debug, Clone)]
pub struct StoredRepetition {
    /// Its directory (`RUN/TEST` or `RUN/TEST/rK`).
    pub dir: PathBuf,
    /// Its profile.
    pub profile: Profile,
    /// The results its `upout` reports (none when it reports none or has no `upout`).
    pub bench: Vec<BenchResult>,
    /// How it ended, when its `status` was written.
    pub status: Option<TestStatus>,
}

/// One test of a run.
#[derive(Debug, Clone)]
pub struct StoredTest {
    /// Its directory name.
    pub name: String,
    /// Its repetitions with a profile, in order; empty when the test has no profile (it
    /// did not run, or was interrupted before its profile was written).
    pub repetitions: Vec<StoredRepetition>,
    /// The folded stacks of each repetition, in order, when the run is an upsrun run and
    /// each repetition has them (their spread is the stack comparison's noise).
    pub stacks: Option<Vec<StackProfile>>,
}

/// A run read for comparison.
#[derive(Debug, Clone)]
pub struct StoredRun {
    /// Its directory.
    pub dir: PathBuf,
    /// Its marker.
    pub marker: RunMarker,
    /// Its `system` description.
    pub system: KeyValues,
    /// Its tests in test-list order.
    pub tests: Vec<StoredTest>,
}

impl StoredRun {
    /// The test called `name`, when the run has it.
    pub fn test(&self, name: &str) -> Option<&StoredTest> {
        self.tests.iter().find(|t| t.name == name)
    }
}

fn read_repetition(dir: &Path) -> Result<StoredRepetition, StoreError> {
    let profile = prfout::read(&dir.join(PRFOUT_FILE))?;
    let upout = dir.join(UPOUT_FILE);
    let text = if upout.is_file() {
        read_text(&upout)?
    } else {
        String::new()
    };
    let bench = parse_upout(&text, &upout.display().to_string())?;
    let status = if dir.join(STATUS_FILE).is_file() {
        Some(TestStatus::read(dir)?)
    } else {
        None
    };
    Ok(StoredRepetition {
        dir: dir.to_path_buf(),
        profile,
        bench,
        status,
    })
}

/// Reads the run in `dir` whole (see the module's documentation).
pub fn load_run(dir: &Path) -> Result<StoredRun, StoreError> {
    let run = Run::open(dir)?;
    let system = system::read(dir)?;
    let mut tests = Vec::new();
    for name in &run.test_dirs {
        let reps = run.test_dir(name).map(|d| repetition_dirs(&d)).unwrap_or_default();
        let stacks = if run.marker.kind == RunKind::Upsrun && has_stacks(&reps) {
            Some(
                reps.iter()
                    .map(|d| read_folded(std::slice::from_ref(d)))
                    .collect::<Result<_, _>>()?,
            )
        } else {
            None
        };
        let repetitions = reps.iter().map(|d| read_repetition(d)).collect::<Result<_, _>>()?;
        tests.push(StoredTest {
            name: name.clone(),
            repetitions,
            stacks,
        });
    }
    Ok(StoredRun {
        dir: dir.to_path_buf(),
        marker: run.marker,
        system,
        tests,
    })
}
