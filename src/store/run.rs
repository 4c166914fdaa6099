//! A stored run read whole for comparison: every test's repetitions with their profiles,
//! benchmark output, status and (for upsrun runs) folded stacks. Everything is read and
//! checked here, so the comparison that follows is pure.

use super::outdir::{repetition_dirs, Run, RunKind, RunMarker, TestStatus, COMMAND_ROOTS_FORMAT, STATUS_FILE};
use super::prfout::{self, PRFOUT_FILE};
use super::stacks::{has_stacks, read_folded};
use super::{read_text_with, system, StoreError, UPOUT_CAP};
use crate::fsio::Links;
use crate::model::{Profile, StackProfile};
use std::path::{Path, PathBuf};
use upcmp_parsers::counters::CountersFile;
use upcmp_parsers::keyvalue::KeyValues;
use upcmp_parsers::upout::{operation_count, parse_upout, BenchResult};

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
    /// What the kernel counted over it, when its run recorded that (`counters`).
    pub counters: Option<CountersFile>,
    /// The operations its benchmark reports performing (unixperf's `trep` count), if any.
    pub operations: Option<u64>,
}

/// One test of a run.
#[derive(Debug, Clone)]
pub struct StoredTest {
    /// Its directory name.
    pub name: String,
    /// The benchmark's key its test_list line gives it (`key=KEY`), if any.
    pub key: Option<String>,
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

    /// Whether its stacks are rooted at their command (an upsrun run of format 3 on).
    pub fn command_rooted(&self) -> bool {
        self.marker.kind == RunKind::Upsrun && self.marker.format >= COMMAND_ROOTS_FORMAT
    }

    /// Its stacks in the shape of a run written before format 3: without the command
    /// roots, so that they compare with such a run's.
    pub fn strip_command_roots(&mut self) {
        for t in &mut self.tests {
            if let Some(stacks) = &mut t.stacks {
                for s in stacks.iter_mut() {
                    *s = s.without_roots();
                }
            }
        }
    }
}

/// How much of each end of an `upout` larger than [`UPOUT_CAP`] is read: a run written
/// before uprun bounded its tests' output keeps its benchmark lines, which come at the
/// start and the end.
const UPOUT_END: usize = 16 << 20;

/// The text of `upout`: whole, or for one larger than [`UPOUT_CAP`], its first and last
/// [`UPOUT_END`] bytes in whole lines, with the warning to give.
fn read_upout(upout: &Path) -> Result<(String, Option<String>), StoreError> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = crate::fsio::open_regular(upout, Links::Refuse).map_err(super::io_err(upout))?;
    let len = f.metadata().map_err(super::io_err(upout))?.len();
    if len <= UPOUT_CAP {
        return Ok((read_text_with(upout, Links::Refuse, UPOUT_CAP)?, None));
    }
    let mut head = vec![0; UPOUT_END];
    f.read_exact(&mut head).map_err(super::io_err(upout))?;
    head.truncate(head.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1));
    let mut tail = vec![0; UPOUT_END];
    f.seek(SeekFrom::Start(len - UPOUT_END as u64))
        .and_then(|_| f.read_exact(&mut tail))
        .map_err(super::io_err(upout))?;
    let from = tail.iter().position(|&b| b == b'\n').map_or(0, |i| i + 1);
    head.extend_from_slice(&tail[from..]);
    let warning = format!(
        "{}: {:.1} MiB of output, more than upcmp reads whole; its first and last {} MiB were read",
        upout.display(),
        len as f64 / f64::from(1 << 20),
        UPOUT_END >> 20
    );
    Ok((String::from_utf8_lossy(&head).into_owned(), Some(warning)))
}

fn read_repetition(dir: &Path) -> Result<StoredRepetition, StoreError> {
    let mut profile = prfout::read_with(&dir.join(PRFOUT_FILE), Links::Refuse)?;
    let upout = dir.join(UPOUT_FILE);
    // Absent is allowed; anything else at that name (a link, a FIFO) is an error.
    let text = if upout.symlink_metadata().is_ok() {
        let (text, warning) = read_upout(&upout)?;
        profile.warnings.extend(warning);
        text
    } else {
        String::new()
    };
    let bench = parse_upout(&text, &upout.display().to_string())?;
    let status = if dir.join(STATUS_FILE).symlink_metadata().is_ok() {
        Some(TestStatus::read(dir)?)
    } else {
        None
    };
    Ok(StoredRepetition {
        dir: dir.to_path_buf(),
        profile,
        operations: operation_count(&text),
        bench,
        status,
        counters: super::counters::read(dir)?,
    })
}

/// Repetitions are averaged CPU by CPU: they must have sampled the same CPUs.
fn check_same_cpus(reps: &[StoredRepetition]) -> Result<(), StoreError> {
    let cpus = |r: &StoredRepetition| {
        r.profile
            .cpus
            .iter()
            .map(|c| c.cpu.to_string())
            .collect::<Vec<_>>()
            .join(" ")
    };
    let Some(first) = reps.first() else { return Ok(()) };
    match reps.iter().find(|r| cpus(r) != cpus(first)) {
        None => Ok(()),
        Some(r) => Err(upcmp_parsers::ParseError {
            file: r.dir.join(PRFOUT_FILE).display().to_string(),
            line: 0,
            column: 0,
            expected: format!(
                "the CPUs of the other repetitions of the test ({} in {}), which are averaged CPU by CPU",
                cpus(first),
                first.dir.join(PRFOUT_FILE).display()
            ),
            found: cpus(r),
        }
        .into()),
    }
}

/// Reads the run in `dir` whole (see the module's documentation).
pub fn load_run(dir: &Path) -> Result<StoredRun, StoreError> {
    let run = Run::open(dir)?;
    let system = system::read(dir)?;
    let mut tests = Vec::new();
    for (name, line) in run.test_dirs.iter().zip(&run.tests) {
        // Each name is one of the run's own: no search of the list per test.
        let reps = repetition_dirs(&run.dir.join(name))?;
        let stacks = if run.marker.kind == RunKind::Upsrun && has_stacks(&reps) {
            Some(
                reps.iter()
                    .map(|d| read_folded(std::slice::from_ref(d)))
                    .collect::<Result<_, _>>()?,
            )
        } else {
            None
        };
        let repetitions: Vec<StoredRepetition> = reps.iter().map(|d| read_repetition(d)).collect::<Result<_, _>>()?;
        check_same_cpus(&repetitions)?;
        tests.push(StoredTest {
            name: name.clone(),
            key: line.key.clone(),
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

/// Pools `others` into `base` as further repetitions of its tests (`upcmp --baseline`):
/// each test's repetitions in `base` come first, then those of each other run in order;
/// a test only another run has is added. The runs must have sampled the same CPUs (their
/// repetitions are averaged CPU by CPU).
pub fn pool_runs(mut base: StoredRun, others: Vec<StoredRun>) -> Result<StoredRun, StoreError> {
    let mut index: std::collections::HashMap<String, usize> = base
        .tests
        .iter()
        .enumerate()
        .map(|(k, t)| (t.name.clone(), k))
        .collect();
    for other in others {
        for t in other.tests {
            match index.get(&t.name).map(|&k| &mut base.tests[k]) {
                Some(b) => {
                    b.repetitions.extend(t.repetitions);
                    // Stacks are compared only when every repetition has them.
                    b.stacks = match (b.stacks.take(), t.stacks) {
                        (Some(mut a), Some(c)) => {
                            a.extend(c);
                            Some(a)
                        }
                        _ => None,
                    };
                    check_same_cpus(&b.repetitions)?;
                }
                None => {
                    index.insert(t.name.clone(), base.tests.len());
                    base.tests.push(t);
                }
            }
        }
    }
    Ok(base)
}
