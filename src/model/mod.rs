//! The model every source meets before comparison: profiles, the one profile builder, the
//! idle set, stacks and call graphs. Plain data and its invariants; no I/O.
//!
//! A live run, a run rebuilt from its raw samples and an imported
//! recording all count samples through [`builder::ProfileBuilder`], so
//! there is one comparison path whatever the source.

pub mod builder;
pub mod callgraph;
pub mod filter;
pub mod idle;
pub mod mode;
pub mod profile;
pub mod stacks;

pub use builder::{KernelResolver, ProfileBuilder, RecordProfiler};
pub use callgraph::CallGraph;
pub use filter::{ModeFilter, SampleFilter};
pub use idle::{IdleSet, DEFAULT_IDLE_FUNCTIONS};
pub use profile::{CpuTotals, FunctionSamples, Profile, ProfileMeta, UserBy};
pub use stacks::StackProfile;

/// Bytes as lower-case hex: how build-ids are written and named.
pub fn to_hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes.iter().fold(String::with_capacity(2 * bytes.len()), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}
