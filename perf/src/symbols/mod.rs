//! Symbols: a sampled address becomes the function perf would name. The kernel's from
//! kallsyms or an ELF vmlinux (with KASLR and modules), user space's from ELF files and
//! perf's build-id cache, JIT code's from perf maps (`docs/symbols.md`).

mod cfi;
mod elf;
pub mod fuzz;
mod kernel;
pub mod lines;
mod ranges;
mod table;
mod user;
mod vdso;

pub use cfi::{load_unwind_info, CfiSection, UnwindInfo};
pub use elf::{elf_build_id, ElfSymbols, FunctionAt};
pub use kernel::{read_kallsyms_text, KernelSymbols, JIT_FUNCTION};
pub use ranges::{
    load_kept_perf_maps, load_perf_map, perf_map_name, perf_map_names, read_process_perf_map, PerfMaps, RangeNames,
};
pub use user::{demangle, function_name, load_user_symbols, UserSymbols, UserSymbolsMissing};

use crate::model::KernelResolver;
use std::collections::HashMap;
use std::hash::Hash;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
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

/// Values loaded once per key and shared by the threads that ask for them: a second asker
/// of a key waits for the first one's load instead of loading it again. A failed load is
/// not kept (the next asker tries, and reports, its own).
struct SharedLoads<K, V>(Mutex<HashMap<K, Arc<Mutex<Option<V>>>>>);

impl<K: Eq + Hash, V: Clone> SharedLoads<K, V> {
    fn get_or_load<E>(&self, key: K, load: impl FnOnce() -> Result<V, E>) -> Result<V, E> {
        let slot = Arc::clone(
            self.0
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .entry(key)
                .or_default(),
        );
        let mut value = slot.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(v) = &*value {
            return Ok(v.clone());
        }
        let loaded = load()?;
        *value = Some(loaded.clone());
        Ok(loaded)
    }
}

impl<K, V> Default for SharedLoads<K, V> {
    fn default() -> Self {
        SharedLoads(Mutex::new(HashMap::new()))
    }
}

/// The symbol tables of imports that run side by side (the two recordings of a
/// comparison, made on one machine, map the same libraries and kernel): each file is read
/// once and its table held once. Clones share the tables; they are freed with the last
/// clone, so a comparison keeps the cache only while it imports.
#[derive(Clone, Default)]
pub struct SymbolCache(Arc<SymbolTables>);

/// A DSO's path and recorded build-id.
type DsoKey = (Vec<u8>, Option<Vec<u8>>);

#[derive(Default)]
struct SymbolTables {
    user: SharedLoads<DsoKey, Result<Arc<UserSymbols>, UserSymbolsMissing>>,
    /// By kallsyms file, as listed (before any move to where a recording found the kernel).
    kallsyms: SharedLoads<PathBuf, Arc<KernelSymbols>>,
}

impl std::fmt::Debug for SymbolCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SymbolCache")
    }
}

impl SymbolCache {
    /// [`load_user_symbols`], once per path and build-id.
    pub fn user(&self, path: &[u8], build_id: Option<&[u8]>) -> Result<Arc<UserSymbols>, UserSymbolsMissing> {
        let key = (path.to_vec(), build_id.map(<[u8]>::to_vec));
        let Ok(loaded) = self.0.user.get_or_load(key, || {
            Ok::<_, std::convert::Infallible>(load_user_symbols(path, build_id).map(Arc::new))
        });
        loaded
    }

    /// [`KernelSymbols::from_kallsyms_file`], once per file.
    pub fn kallsyms(&self, path: &Path) -> Result<Arc<KernelSymbols>, SymbolError> {
        self.0.kallsyms.get_or_load(path.to_path_buf(), || {
            KernelSymbols::from_kallsyms_file(path).map(Arc::new)
        })
    }
}

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

/// The GNU build-id in a dump of ELF notes (the format of /sys/kernel/notes, in the
/// machine's byte order); `None` if no `GNU` note of type 3 is there.
pub fn build_id_from_notes(mut notes: &[u8]) -> Option<Vec<u8>> {
    const NT_GNU_BUILD_ID: u32 = 3;
    let word = |b: &[u8], at: usize| -> Option<u32> { Some(u32::from_ne_bytes(b.get(at..at + 4)?.try_into().ok()?)) };
    let align4 = |n: usize| n.checked_add(3).map(|n| n & !3);
    while notes.len() >= 12 {
        let name_size = word(notes, 0)? as usize;
        let desc_size = word(notes, 4)? as usize;
        let kind = word(notes, 8)?;
        let name_end = 12usize.checked_add(name_size)?;
        let desc_start = align4(name_end)?;
        let desc_end = desc_start.checked_add(desc_size)?;
        let name = notes.get(12..name_end)?;
        let desc = notes.get(desc_start..desc_end)?;
        if kind == NT_GNU_BUILD_ID && name == b"GNU\0" {
            return Some(desc.to_vec());
        }
        notes = notes.get(align4(desc_end)?.min(notes.len())..)?;
    }
    None
}

/// GNU build-id of the running kernel from /sys/kernel/notes; `None` if absent.
pub fn running_kernel_build_id() -> Option<Vec<u8>> {
    std::fs::read("/sys/kernel/notes")
        .ok()
        .and_then(|b| build_id_from_notes(&b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn a_key_asked_for_by_two_threads_is_loaded_once() {
        let shared: SharedLoads<&str, Arc<String>> = SharedLoads::default();
        let loads = AtomicUsize::new(0);
        let load = || {
            loads.fetch_add(1, Ordering::SeqCst);
            // Long enough for the other thread to ask while this one loads.
            std::thread::sleep(std::time::Duration::from_millis(50));
            Ok::<_, ()>(Arc::new("table".to_string()))
        };
        let (a, b) = std::thread::scope(|s| {
            let other = s.spawn(|| shared.get_or_load("lib", load).unwrap());
            (shared.get_or_load("lib", load).unwrap(), other.join().unwrap())
        });
        assert_eq!(loads.load(Ordering::SeqCst), 1);
        assert!(Arc::ptr_eq(&a, &b));
        shared.get_or_load("other", load).unwrap();
        assert_eq!(loads.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn a_failed_load_is_tried_again() {
        let shared: SharedLoads<u8, u8> = SharedLoads::default();
        assert_eq!(shared.get_or_load(1, || Err("no file")), Err("no file"));
        assert_eq!(shared.get_or_load(1, || Ok::<_, &str>(7)), Ok(7));
        assert_eq!(shared.get_or_load(1, || Err("not asked")), Ok(7));
    }

    #[test]
    fn a_table_moved_for_one_import_stays_put_for_the_other() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kallsyms");
        let text = "ffffffff81000000 T _text\nffffffff81000100 T f\nffffffff81000200 T _etext\n";
        crate::fsio::write_atomic(&path, text.as_bytes(), 0o644).unwrap();
        let cache = SymbolCache::default();
        let first = cache.kallsyms(&path).unwrap();
        let mut second = cache.kallsyms(&path).unwrap();
        assert!(Arc::ptr_eq(&first, &second));
        assert_eq!(second.shift_to("_text", 0xffffffff82000000), Some(0x1000000));
        Arc::make_mut(&mut second).relocate("_text", 0xffffffff82000000);
        assert_eq!(second.resolve(0xffffffff82000100).map(|r| r.0), Some("f"));
        assert_eq!(first.resolve(0xffffffff81000100).map(|r| r.0), Some("f"));
        assert_eq!(first.resolve(0xffffffff82000100), None);
    }
}
