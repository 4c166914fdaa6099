//! Collection: perf_event sampling on every CPU and the execution of each test, written
//! into the store (`crate::store`). Nothing here renders or compares.

pub mod attribution;
pub mod counting;
pub mod group;
pub mod plan;
pub mod prepare;
pub mod run;
pub mod sampler;
pub mod signals;

use crate::host::{kernel_release, running_kernel_build_id};
use crate::symbols::{find_vmlinux, KernelSymbols, SymbolError};
use std::io::Write;
use std::path::PathBuf;

/// Where a run's kernel symbols come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KernelImage {
    /// An ELF vmlinux of the running kernel if one is in the usual places, else
    /// /proc/kallsyms.
    Auto,
    /// This ELF file.
    Path(PathBuf),
}

impl KernelImage {
    /// `auto`, or a path.
    pub fn parse(s: &str) -> Self {
        if s == "auto" {
            KernelImage::Auto
        } else {
            KernelImage::Path(PathBuf::from(s))
        }
    }
}

/// Where the running kernel lists its symbols.
pub const PROC_KALLSYMS: &str = "/proc/kallsyms";

/// Loads the running kernel's symbols from `image` (module symbols always from
/// `kallsyms`, the text of /proc/kallsyms, read once by the caller, which keeps it too),
/// saying where they came from on `say`. An ELF whose build-id is not the running
/// kernel's is refused unless `force`.
pub fn load_kernel_symbols(
    image: &KernelImage,
    force: bool,
    kallsyms: &str,
    say: &mut dyn Write,
) -> Result<KernelSymbols, SymbolError> {
    let kallsyms = KernelSymbols::from_kallsyms_text(kallsyms, PROC_KALLSYMS)?;
    let elf = match image {
        KernelImage::Auto => {
            let release = kernel_release();
            let found = find_vmlinux(&release);
            if found.is_none() {
                let _ = writeln!(
                    say,
                    "uprun: no vmlinux for {release} in the usual places; using {}",
                    kallsyms.describe()
                );
            }
            found
        }
        KernelImage::Path(p) => {
            // Refused at once when it is no regular file (/dev/zero would be read forever).
            crate::fsio::open_regular(p, crate::fsio::Links::Follow).map_err(|source| SymbolError::Io {
                path: p.clone(),
                source,
            })?;
            Some(p.clone())
        }
    };
    match elf {
        Some(p) => {
            let syms = KernelSymbols::from_vmlinux(&p, &kallsyms, running_kernel_build_id().as_deref(), force)?;
            let _ = writeln!(say, "uprun: kernel symbols from {}", syms.describe());
            Ok(syms)
        }
        None => Ok(kallsyms),
    }
}
