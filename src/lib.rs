//! # upcmp
//!
//! Where did a kernel change move CPU time? `uprun` samples the program counter on every
//! CPU while each benchmark of a test list runs and writes one directory per test;
//! `upcmp` compares two such runs (benchmark rates, a time summary, and per-function
//! times sorted by their change); `prfcmp` compares two single profiles. `upsrun` is uprun
//! with call stacks: a gprof-style `prof.out`, folded stacks and a flame graph per test,
//! which upcmp compares as differential flame graphs (`docs/upsrun.md`).
//!
//! Data flows one way: [`collect`] → [`store`] → [`compare`] → [`report`].
//!
//! ```
//! use upcmp::compare::{compare_profiles, CompareOptions};
//! use upcmp::store::prfout::parse;
//!
//! let text = "upcmp-prfout 1\ntest t\nevent cpu-clock\nperiod-sec 0.001\ncpus 1\n\
//!             wall-sec 2\nidle-set idle\ncpu 0 samples 1500 lost 0 throttled 0\n\
//!             functions 2\n1000 [kernel] bcopy\n500 [kernel] idle\nend\n";
//! let p = parse(text, "a/prfout").unwrap();
//! let cmp = compare_profiles(&p, &p, &CompareOptions::default()).unwrap();
//! assert_eq!(cmp.run1.cpu_sec, 1.0); // bcopy's 1000 samples of 1 ms
//! assert_eq!(cmp.run1.idle_sec, 1.0); // 2 s wall x 1 CPU - 1 s CPU
//! assert_eq!(cmp.rows[0].function, "bcopy");
//! ```
#![deny(missing_docs)]

pub mod collect;
pub mod compare;
pub mod exit;
pub mod helpers;
pub mod import;
pub mod report;
pub mod store;

/// The version of the tools, written into every output directory.
pub const TOOL_VERSION: &str = env!("CARGO_PKG_VERSION");

pub use upcmp_parsers::prfout::{CpuTotals, FunctionSamples, Prfout as Profile};
pub use upcmp_parsers::ParseError;
