//! The stack files of an upsrun test directory: `stacks.folded` (read back for
//! comparisons), `prof.out` and `flame.svg` (written by the stack analysis).

use super::{read_text_with, StoreError, PROFILE_CAP};
use crate::fsio::{self, Links};
use crate::model::StackProfile;
use std::path::{Path, PathBuf};

/// The gprof-style report.
pub const PROF_OUT: &str = "prof.out";
/// Folded stacks.
pub const STACKS_FOLDED: &str = "stacks.folded";
/// The flame graph.
pub const FLAME_SVG: &str = "flame.svg";

/// Whether every repetition directory of a test holds its folded stacks.
pub fn has_stacks(reps: &[PathBuf]) -> bool {
    !reps.is_empty() && reps.iter().all(|r| fsio::is_real_file(&r.join(STACKS_FOLDED)))
}

/// The folded stacks of a test, summed over its repetitions (`RUN/TEST` or `RUN/TEST/rK`).
pub fn read_folded(reps: &[PathBuf]) -> Result<StackProfile, StoreError> {
    let mut text = String::new();
    for d in reps {
        text += &read_text_with(&d.join(STACKS_FOLDED), Links::Refuse, PROFILE_CAP)?;
    }
    let name = reps
        .first()
        .map_or_else(|| Path::new(STACKS_FOLDED).to_path_buf(), |d| d.join(STACKS_FOLDED));
    Ok(StackProfile::from_suite_folded(&text, &name.display().to_string())?)
}
