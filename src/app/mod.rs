//! What each command does, in order: the orchestration the binaries in `src/bin` call
//! after parsing their command line.

pub mod prfcmp;
pub mod upcmp;
pub mod uprun;
