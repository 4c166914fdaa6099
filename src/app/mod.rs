//! What each command does, in order: the orchestration the binaries in `src/bin` call
//! after parsing their command line.

pub mod inputs;
pub mod prfcmp;
pub mod upcmp;
pub mod uprun;

use crate::import::ImportError;
use crate::store::{unquoted, StoreError};
use std::path::Path;

/// An import's error with no text of the input quoted when the input was reached through
/// a symbolic link (`docs/security.md`).
pub(crate) fn unquoted_import(e: ImportError, path: &Path) -> ImportError {
    if !crate::fsio::is_symlink(path) {
        return e;
    }
    match e {
        ImportError::Parse(p) => ImportError::Parse(unquoted(p, true)),
        ImportError::Store(StoreError::Parse(p)) => ImportError::Store(StoreError::Parse(unquoted(p, true))),
        e => e,
    }
}
