//! unixperf: x11perf-style micro-benchmarks of the Unix operations a kernel change can make
//! faster or slower — fork, system calls, pipes, select, sockets, file metadata, mmap, page
//! faults, scheduling.
//!
//! Each test performs one well-defined operation `-loop N` times per pass and prints one
//! line per pass and a total, exactly as the original unixperf (1996) did, so that uprun can
//! run it under the profiler and upcmp can compare two runs' rates:
//!
//! ```text
//!      50 reps @   2.3529 msec (   425.0/sec): fork, child immediately exits, parent waits
//!     250 trep @   2.3529 msec (   425.0/sec): fork, child immediately exits, parent waits
//! ```
//!
//! The library holds the workloads so tests can run them directly:
//!
//! ```
//! use unixperf::bench::procs::ForkWait;
//! use unixperf::workload::Workload;
//!
//! let mut forks = ForkWait::default();
//! forks.run(10).unwrap();
//! assert_eq!(forks.reaped, 10);
//! ```
#![deny(missing_docs)]

pub mod bench;
pub mod cli;
pub mod measure;
pub mod options;
pub mod report;
pub mod suite;
pub mod sys;
pub mod sysinfo;
pub mod team;
pub mod workload;
