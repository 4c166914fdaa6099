//! What a benchmark is to the harness: something that performs N operations on demand.

use std::path::PathBuf;

use crate::bench::sched::HackbenchConfig;
use crate::sys::Result;

/// One benchmark, set up and ready to run. Set-up happens in the constructor and clean-up in
/// `Drop`, both outside the timed passes; `run` is the timed part.
pub trait Workload {
    /// Performs exactly `n` operations and checks that each did what it should (a child's
    /// exit status, a token's round trip, a system call's return value). Must not allocate or
    /// make system calls beyond the operation itself, so the rate is the operation's.
    fn run(&mut self, n: u64) -> Result<()>;

    /// Checks what can only be checked when all passes are over (e.g. that a partner
    /// process saw every token), and ends partner processes.
    fn finish(&mut self) -> Result<()> {
        Ok(())
    }

    /// Seconds per operation as the workload measured them itself, for benchmarks whose
    /// own report is a time (hackbench's `Time:`).
    fn own_seconds(&self) -> Option<f64> {
        None
    }
}

/// What a workload may use while it sets up.
#[derive(Debug, Clone)]
pub struct Ctx {
    /// A scratch directory of this copy, removed by the harness.
    pub dir: PathBuf,
    /// hackbench's parameters.
    pub hackbench: HackbenchConfig,
}

impl Ctx {
    /// A context with default hackbench parameters.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Ctx {
            dir: dir.into(),
            hackbench: HackbenchConfig::default(),
        }
    }
}
