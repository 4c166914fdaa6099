//! The model every source meets before comparison: profiles, the one profile builder, the
//! idle set, stacks and call graphs. Plain data and its invariants; no I/O.
//!
//! A live run, a run rebuilt from its raw samples and an imported
//! recording all count samples through [`builder::ProfileBuilder`], so
//! there is one comparison path whatever the source.
//!
//! ```
//! use upcmp_model::{IdleSet, ProfileBuilder, ProfileMeta};
//! use upcmp_model::profile::Unit;
//!
//! // Samples of 1 ms on CPU 0 over 4 s: two in bcopy, one in the idle loop.
//! let mut b = ProfileBuilder::new();
//! for f in ["bcopy", "bcopy", "default_idle"] {
//!     b.add_one(0, "[kernel]", f, 1_000_000);
//! }
//! let meta = ProfileMeta {
//!     test: "bcopy".into(),
//!     command: None,
//!     event: "cpu-clock".into(),
//!     unit: Unit::Nanoseconds,
//!     period: None,
//!     wall_sec: 4.0,
//! };
//! let p = b.finish(meta, &IdleSet::linux_default(), Vec::new());
//! assert_eq!(p.functions[0].name, "bcopy"); // the most samples first
//! assert_eq!(p.functions[0].total(), 2);
//! assert_eq!(p.period_sec(), Some(0.001));
//! ```
#![deny(missing_docs)]

pub mod builder;
pub mod callgraph;
pub mod code;
pub mod filter;
pub mod idle;
pub mod mode;
pub mod naming;
pub mod profile;
pub mod resolver;
pub mod shown;
pub mod stacks;

pub use builder::{ProfileBuilder, RecordProfiler};
pub use callgraph::CallGraph;
pub use filter::{ModeFilter, SampleFilter};
pub use idle::{IdleSet, DEFAULT_IDLE_FUNCTIONS};
pub use profile::{CpuTotals, FunctionSamples, Profile, ProfileMeta, UserBy};
pub use resolver::KernelResolver;
pub use shown::{escaped, escaped_text, Shown, ShownText};
pub use stacks::StackProfile;

/// Bytes as lower-case hex: how build-ids are written and named.
pub fn to_hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes.iter().fold(String::with_capacity(2 * bytes.len()), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// Returns the memory freed so far to the system. The imports run on threads of their
/// own, and the C allocator keeps each thread's freed memory for reuse: what two imports
/// of 10^6 samples freed (read buffers, symbol tables, per-address maps) would stay
/// resident through the comparison that follows.
pub fn give_back_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases free memory of the allocator's arenas.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Drops `value` on a thread of its own, then gives the memory back: freeing a
/// comparison's working copies (hundreds of thousands of stacks, names and tables)
/// takes tens of milliseconds that the result need not wait for. The thread is not
/// waited for: a process that exits first has no memory left to free.
pub fn drop_aside<T: Send + 'static>(value: T) {
    // Without a thread (none left to this process), it is dropped here.
    let _ = std::thread::Builder::new().name("drop".into()).spawn(move || {
        drop(value);
        give_back_freed_memory();
    });
}
