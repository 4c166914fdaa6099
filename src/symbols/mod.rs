//! Symbols: a sampled address becomes the function perf would name. The kernel's from
//! kallsyms or an ELF vmlinux (with KASLR and modules), user space's from ELF files and
//! perf's build-id cache, JIT code's from perf maps (`docs/symbols.md`).

mod elf;
mod kernel;
mod ranges;
mod user;

pub use elf::{elf_build_id, ElfSymbols};
pub use kernel::{read_kallsyms_text, KernelSymbols};
pub use ranges::{load_perf_map, RangeNames};
pub use user::{demangle, function_name, load_user_symbols, UserSymbols, UserSymbolsMissing};

use crate::model::builder::KernelResolver;
use std::path::{Path, PathBuf};
use upcmp_parsers::ParseError;

/// Why kernel symbols could not be loaded or checked.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SymbolError {
    /// A file could not be read.
    #[error("reading {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A kallsyms line did not have the expected shape.
    #[error("{0}; is this a copy of /proc/kallsyms?")]
    Parse(#[from] ParseError),
    /// A kallsyms text held no symbol perf would use for code.
    #[error("{origin} has no text symbols; pass a copy of /proc/kallsyms")]
    NoTextSymbols {
        /// Where the text came from.
        origin: String,
    },
    /// Every address is zero: the kernel hides them from this user.
    #[error(
        "{origin} shows every address as 0: kernel pointers are hidden \
         (kernel.kptr_restrict); read it as root, or run `sysctl kernel.kptr_restrict=0`"
    )]
    HiddenAddresses {
        /// Where the text came from.
        origin: String,
    },
    /// A symbol needed to place the kernel is missing.
    #[error("{origin} has no `{symbol}` symbol, so the KASLR offset cannot be computed; {hint}")]
    MissingSymbol {
        /// The file or text lacking it.
        origin: String,
        /// The symbol's name.
        symbol: &'static str,
        /// What to do about it.
        hint: &'static str,
    },
    /// The vmlinux file is not an ELF file.
    #[error(
        "{} is not an ELF file ({reason}); pass the uncompressed vmlinux with symbols \
         (e.g. /usr/lib/debug/boot/vmlinux-$(uname -r)), not a vmlinuz image",
        path.display()
    )]
    NotElf {
        /// The file.
        path: PathBuf,
        /// What the ELF reader said.
        reason: String,
    },
    /// The ELF file has no function symbols.
    #[error("{} has no function symbols (stripped?); use an unstripped vmlinux, or kallsyms alone", path.display())]
    NoElfSymbols {
        /// The file.
        path: PathBuf,
    },
    /// The vmlinux was built from other sources than the running kernel.
    #[error(
        "build-id mismatch: {} has {file_id}, the running kernel has {running_id}",
        path.display()
    )]
    BuildIdMismatch {
        /// The vmlinux file.
        path: PathBuf,
        /// Its build-id, in hex.
        file_id: String,
        /// The running kernel's build-id, in hex.
        running_id: String,
    },
    /// The vmlinux has no build-id to check against the running kernel's.
    #[error(
        "{} has no GNU build-id, so it cannot be checked against the running kernel \
         ({running_id})",
        path.display()
    )]
    MissingBuildId {
        /// The vmlinux file.
        path: PathBuf,
        /// The running kernel's build-id, in hex.
        running_id: String,
    },
}

impl KernelResolver for KernelSymbols {
    fn resolve_kernel(&self, pc: u64) -> Option<(&str, Option<&str>)> {
        self.resolve(pc)
    }
}

pub(crate) use crate::model::to_hex as hex;

/// The largest ELF file mapped (a vmlinux or a library with its debug information is a few
/// hundred MB, the largest some GB).
pub const ELF_CAP: u64 = 8 << 30;

/// perf's build-id cache directory: `$PERF_BUILDID_DIR`, else `~/.debug`.
pub fn buildid_dir() -> Option<PathBuf> {
    std::env::var_os("PERF_BUILDID_DIR")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".debug")))
}

/// `VMLINUX=auto`: the first of /boot/vmlinux-RELEASE, /usr/lib/debug/boot/vmlinux-RELEASE
/// and /lib/modules/RELEASE/build/vmlinux that exists; `None` if none does.
pub fn find_vmlinux(release: &str) -> Option<PathBuf> {
    find_vmlinux_in(Path::new("/"), release)
}

/// [`find_vmlinux`] under another root directory (a chroot, or a test tree).
pub fn find_vmlinux_in(root: &Path, release: &str) -> Option<PathBuf> {
    [
        format!("boot/vmlinux-{release}"),
        format!("usr/lib/debug/boot/vmlinux-{release}"),
        format!("lib/modules/{release}/build/vmlinux"),
    ]
    .into_iter()
    .map(|p| root.join(p))
    .find(|p| p.is_file())
}
