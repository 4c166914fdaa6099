//! # upcmp-perf
//!
//! perf's files read into upcmp's profile model (the crate `upcmp-model`), and the
//! symbols that name what they sampled:
//!
//! - [`import`]: perf.data, from a file or a pipe-mode stream, through a reader of its
//!   own checked against linux-perf-data's; `perf script` text; folded stacks; a uprun
//!   `prfout`. Every input is another user's: lengths are checked before they are
//!   trusted, names are cut to 4 KiB, and a damaged file is an error that names it.
//! - [`symbols`]: kernel symbols from kallsyms or a vmlinux (perf's choices among aliases
//!   and its ends of symbols), user symbols from ELF files, source lines and inlined
//!   frames from DWARF, instructions, JIT and BPF code, read as the user who owns the
//!   recording may read them.
//!
//! It knows nothing of uprun's run directories, the comparison or the reports: another
//! program could read perf's files with it.
//!
//! ```
//! use upcmp_perf::import::{import, ImportOptions};
//!
//! let dir = std::env::temp_dir().join(format!("upcmp-perf-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir).unwrap();
//! let folded = dir.join("a.folded");
//! std::fs::write(&folded, "bash;main;work 3\nbash;main 1\n").unwrap();
//! let imported = import(&folded, &ImportOptions::default()).unwrap();
//! let work = imported.profile.functions.iter().find(|f| f.name == "work").unwrap();
//! assert_eq!(work.total(), 3);
//! std::fs::remove_dir_all(&dir).unwrap();
//! ```
#![deny(missing_docs)]

pub mod import;
pub mod symbols;

// The paths the readers' files use for the crates below.
use upcmp_fsio as fsio;
use upcmp_model as model;
