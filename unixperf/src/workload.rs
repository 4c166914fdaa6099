//! What a benchmark is to the harness: something that performs N operations on demand.

use std::path::PathBuf;

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

/// hackbench's parameters (its defaults: 10 groups, 20 fds, 100 loops of 100 bytes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HackbenchConfig {
    /// Groups of senders and receivers.
    pub groups: u32,
    /// Senders per group, and receivers per group.
    pub fds: u32,
    /// Messages each sender sends to each receiver of its group.
    pub messages: u32,
    /// Bytes per message.
    pub datasize: usize,
    /// Threads instead of processes.
    pub threads: bool,
    /// Pipes instead of Unix socketpairs.
    pub pipes: bool,
}

impl Default for HackbenchConfig {
    fn default() -> Self {
        HackbenchConfig {
            groups: 10,
            fds: 20,
            messages: 100,
            datasize: 100,
            threads: false,
            pipes: false,
        }
    }
}

impl HackbenchConfig {
    /// The test's description, naming every parameter.
    pub fn describe(&self) -> String {
        format!(
            "hackbench, {} groups of {} senders and {} receivers, {} messages of {} bytes, {} over {}",
            self.groups,
            self.fds,
            self.fds,
            self.messages,
            self.datasize,
            if self.threads { "threads" } else { "processes" },
            if self.pipes { "pipes" } else { "socketpairs" },
        )
    }

    /// Bytes each receiver must get in one run.
    pub(crate) fn bytes_per_receiver(&self) -> u64 {
        self.fds as u64 * self.messages as u64 * self.datasize as u64
    }
}
