//! What each command does, in order: the orchestration the binaries in `src/bin` call
//! after parsing their command line.

pub mod annotate;
pub mod annotate_runs;
#[cfg(feature = "parquet")]
pub mod dataset;
#[cfg(feature = "parquet")]
pub mod group;
#[cfg(feature = "parquet")]
pub mod history;
pub mod inputs;
pub mod prfcmp;
pub mod upcmp;
pub mod uprun;

use crate::analyse::profile::rebuild_filtered;
use crate::import::ImportError;
use crate::model::profile::USER_FUNCTION;
use crate::model::{IdleSet, Profile, SampleFilter, UserBy};
use crate::store::unquoted;
use crate::symbols::KernelSymbols;
use std::path::Path;

/// An import's error with no text of the input quoted when the input was reached through
/// a symbolic link (`docs/security.md`).
pub(crate) fn unquoted_import(e: ImportError, path: &Path) -> ImportError {
    if !crate::fsio::is_symlink(path) {
        return e;
    }
    match e {
        ImportError::Parse(p) => ImportError::Parse(unquoted(p, true)),
        e => e,
    }
}

/// What the filters need and did not find, or could not read.
pub(crate) fn filter_error(path: &Path, why: &str) -> String {
    format!(
        "{}: {why}; filters (--comm, --pid, --tid, --cpu, --kernel-only, --user-only) rebuild a uprun profile \
         from its raw samples (samples.gz) and its run's kallsyms.gz",
        path.display()
    )
}

/// The run directory of a test (or repetition) directory: the first of its parent and
/// grandparent that holds `kallsyms.gz`.
pub(crate) fn run_of(test_dir: &Path) -> Option<&Path> {
    test_dir
        .ancestors()
        .skip(1)
        .take(2)
        .find(|d| d.join("kallsyms.gz").is_file())
}

/// The profile of the test (or repetition) directory `test_dir`, whose current profile
/// is `old`, rebuilt with only the samples `filter` keeps, named as `old` named them.
pub(crate) fn filtered_profile(
    test_dir: &Path,
    old: &Profile,
    symbols: &KernelSymbols,
    filter: &SampleFilter,
) -> Result<Profile, String> {
    let idle = IdleSet::new(old.idle_set.clone());
    let by_comm = old
        .functions
        .iter()
        .any(|f| f.name.starts_with(&format!("{USER_FUNCTION}:")));
    let user_by = if by_comm { UserBy::Comm } else { UserBy::Single };
    let samples = test_dir.join("samples.gz");
    if !samples.is_file() {
        return Err(filter_error(&samples, "no raw samples"));
    }
    rebuild_filtered(test_dir, symbols, &idle, user_by, filter).map_err(|e| filter_error(test_dir, &e.to_string()))
}

/// The kernel symbols a run kept, for rebuilding its profiles.
pub(crate) fn run_symbols(run: &Path) -> Result<KernelSymbols, String> {
    let k = run.join("kallsyms.gz");
    KernelSymbols::from_kallsyms_file(&k).map_err(|e| filter_error(&k, &e.to_string()))
}

pub(crate) use crate::model::give_back_freed_memory;

/// The exit status of a `--fail-if-worse` verdict: 0 not worse, 1 worse, 125 cannot test.
pub fn verdict_status(v: &crate::compare::verdict::FailVerdict) -> u8 {
    use crate::compare::verdict::Outcome;
    match v.outcome() {
        Outcome::NotWorse => 0,
        Outcome::Worse => crate::exit::EXIT_WORSE,
        Outcome::CannotTest => crate::exit::EXIT_CANNOT_TEST,
    }
}
