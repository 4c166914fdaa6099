//! # upcmp
//!
//! Where did a kernel change move CPU time? `uprun` samples the program counter on every
//! CPU while each benchmark of a test list runs and writes one directory per test;
//! `upcmp` compares two such runs (benchmark rates, a time summary, and per-function
//! times sorted by their change); `prfcmp` compares two single profiles. `upsrun` is uprun
//! with call stacks: a gprof-style `prof.out`, folded stacks and a flame graph per test,
//! which upcmp compares as differential flame graphs (`docs/upsrun.md`).
//!
//! ## The house
//!
//! Data flows one way: [`collect`] → [`store`] → [`model`] → [`compare`] → [`report`].
//! The lowest floors are crates of their own, so the compiler holds them: `upcmp-parsers`
//! (the text formats), `upcmp-stats` (the statistics of a verdict, numbers only),
//! `upcmp-model` (the profile model, re-exported as [`model`]), `upcmp-fsio` (safe
//! files, re-exported as [`fsio`]) and `upcmp-perf` (perf's files read into the model,
//! and the symbols: [`import`] and [`symbols`]); `tests/architecture.rs` checks the
//! crate graph from `cargo metadata`. Inside this crate each module uses only the modules of the layers
//! below its own (`docs/architecture.md`; the same test reads every `use crate::` and
//! holds it to [`LAYERS`]):
//!
//! | layer | modules | what they own |
//! |---|---|---|
//! | 0 | [`host`], [`store`] | facts about this machine; the output-directory format |
//! | 1 | [`collect`], [`compare`], `dataset` | sampling and running tests; model → comparison; many runs as Parquet |
//! | 2 | [`report`] | pure renderers |
//! | 3 | [`analyse`] | per-test analyses of a stored run |
//! | 4 | [`app`] | each command's orchestration |
//! | 5 | [`cli`] | the command lines that `src/bin` parses, built once |
//!
//! [`helpers`] (runmany, hackdiff) and [`exit`] stand beside the house: they use no
//! module of it but [`host`] and [`compare`]'s statistics (and [`exit`], the model's
//! escape for the names its messages quote).
//!
//! ```
//! use upcmp::compare::{compare_profiles, CompareOptions};
//! use upcmp::store::prfout::parse;
//!
//! let text = "upcmp-prfout 1\ntest t\nevent cpu-clock\nperiod-sec 0.001\ncpus 1\n\
//!             wall-sec 2\nidle-set idle\ncpu 0 samples 1500 lost 0 throttled 0\n\
//!             functions 2\n1000 [kernel] bcopy\n500 [kernel] idle\nend\n";
//! let p = parse(text, "a/prfout").unwrap();
//! let cmp = compare_profiles(&p, &p, &CompareOptions::default());
//! assert_eq!(cmp.run1.cpu, 1.0); // bcopy's 1000 samples of 1 ms
//! assert_eq!(cmp.run1.idle, 1.0); // 2 s wall x 1 CPU - 1 s CPU
//! assert_eq!(cmp.rows[0].function, "bcopy");
//! ```
#![deny(missing_docs)]

pub mod analyse;
pub mod app;
pub mod cli;
pub mod collect;
pub mod compare;
#[cfg(feature = "parquet")]
pub mod dataset;
pub mod exit;
/// Files opened and written safely: the crate `upcmp-fsio`.
pub use upcmp_fsio as fsio;
pub mod helpers;
pub mod host;
/// The profile model: the crate `upcmp-model`.
pub use upcmp_model as model;
/// perf's files into the model: the crate `upcmp-perf`.
pub use upcmp_perf::import;
pub mod report;
pub mod store;
/// Symbol tables: the crate `upcmp-perf`.
pub use upcmp_perf::symbols;

/// The version of the tools, written into every output directory.
pub const TOOL_VERSION: &str = env!("CARGO_PKG_VERSION");

pub use upcmp_parsers::ParseError;

/// The layers of this crate's modules, lowest first: a module may use only modules of
/// lower layers, and the crates below (`model`, `fsio`, `import`, `symbols`,
/// `compare::stats`) from anywhere
/// (the test `the_house_has_one_way_layers` checks every `use crate::` against it).
pub const LAYERS: &[&[&str]] = &[
    &["host", "store"],
    &["collect", "compare", "dataset"],
    &["report"],
    &["analyse"],
    &["app"],
    &["cli"],
];
