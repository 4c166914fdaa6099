//! The kernel of a recording: which kallsyms and vmlinux name its kernel PCs (the
//! recording's build-id, perf's build-id cache, this machine's kernel when it is the
//! same), moved to where the recording placed the kernel, and the kernel modules it
//! mapped, which name an address that no symbol does.

use super::{ImportError, ImportOptions};
use crate::model::profile::{module, JIT_FUNCTION, UNKNOWN_FUNCTION};
use crate::model::KernelResolver;
use crate::symbols::{buildid_dir, hex, running_kernel_build_id, KernelSymbols};
use std::path::PathBuf;
use std::sync::Arc;

/// What the kernel's symbols are looked up by: the recording and its kernel.
#[derive(Clone)]
pub(super) struct KernelSource<'o> {
    pub(super) path: PathBuf,
    pub(super) opts: &'o ImportOptions,
    pub(super) build_id: Option<Vec<u8>>,
    pub(super) release: Option<String>,
    /// The event read excludes the kernel (`cycles:u`): its few kernel addresses are
    /// skid at the boundary, named `[unknown]` without kernel symbols, as perf does.
    pub(super) user_only: bool,
}

/// The kernel's symbols for `src`, moved to where the recording put the kernel (`text`:
/// the symbol perf's `[kernel.kallsyms]_text` mapping names and its address then), and
/// notes on where they came from.
pub(super) fn kernel_symbols(
    src: &KernelSource<'_>,
    text: Option<(&str, u64)>,
) -> Result<(Arc<KernelSymbols>, Vec<String>), ImportError> {
    let (kallsyms, note) = kallsyms_of(src)?;
    let mut k = match &src.opts.symbols {
        Some(cache) => cache.kallsyms(&kallsyms)?,
        None => Arc::new(KernelSymbols::from_kallsyms_file(&kallsyms)?),
    };
    let mut notes: Vec<String> = note.into_iter().collect();
    if let Some((name, at)) = text {
        // Moved on a copy of its own when another import shares the table.
        let shift = match k.shift_to(name, at) {
            Some(0) => Some(0),
            Some(_) => Arc::make_mut(&mut k).relocate(name, at),
            None => None,
        };
        match shift {
            Some(0) => {}
            Some(shift) => notes.push(format!(
                "the recording found the kernel {} bytes from where {} lists it (another boot): its \
                 core-kernel symbols are moved by that, as perf moves them; kernel modules' are not",
                signed_hex(shift),
                kallsyms.display()
            )),
            None => notes.push(format!(
                "{} has no {name} symbol to place the kernel by: its addresses are taken as recorded",
                kallsyms.display()
            )),
        }
    }
    let k = match &src.opts.vmlinux {
        // The recording's build-id, not the running kernel's, is what the ELF must match.
        Some(v) => Arc::new(KernelSymbols::from_vmlinux(v, &k, src.build_id.as_deref(), false)?),
        None => k,
    };
    Ok((k, notes))
}

/// Which kallsyms names the recording's kernel, and a note when the choice is a guess.
fn kallsyms_of(src: &KernelSource<'_>) -> Result<(PathBuf, Option<String>), ImportError> {
    let (path, build_id, release) = (src.path.as_path(), src.build_id.as_deref(), src.release.as_deref());
    if let Some(k) = &src.opts.kallsyms {
        return Ok((k.clone(), None));
    }
    if let (Some(id), Some(dir)) = (build_id, buildid_dir()) {
        let cached = dir.join("[kernel.kallsyms]").join(hex(id)).join("kallsyms");
        if cached.is_file() {
            return Ok((cached, None));
        }
    }
    let running = running_kernel_build_id();
    let this_release = std::fs::read_to_string("/proc/sys/kernel/osrelease").ok();
    let proc = PathBuf::from("/proc/kallsyms");
    match (build_id, running.as_deref()) {
        (Some(id), Some(r)) if id == r => Ok((proc, None)),
        (Some(id), _) => Err(ImportError::NoKernelSymbols {
            path: path.to_path_buf(),
            why: format!(
                "recorded on another kernel (build-id {}{}), whose kallsyms is not in perf's build-id cache",
                hex(id),
                release.map(|r| format!(", release {r}")).unwrap_or_default()
            ),
        }),
        (None, _) if release.is_some() && release.map(str::trim) == this_release.as_deref().map(str::trim) => Ok((
            proc,
            Some(
                "the recording names no kernel build-id; /proc/kallsyms of this machine (same release) is used".into(),
            ),
        )),
        (None, _) => Err(ImportError::NoKernelSymbols {
            path: path.to_path_buf(),
            why: "the recording names neither a kernel build-id nor this machine's kernel release".into(),
        }),
    }
}

/// An address difference taken modulo 2^64, as a signed hexadecimal number: `-0x4000000`.
fn signed_hex(d: u64) -> String {
    match d as i64 {
        n if n < 0 => format!("-{:#x}", n.unsigned_abs()),
        n => format!("{n:#x}"),
    }
}

/// No kernel symbols: what a recording without kernel samples is read with.
pub(super) struct NoKernel;

impl KernelResolver for NoKernel {
    fn resolve_kernel(&self, _pc: u64) -> Option<(&str, Option<&str>)> {
        None
    }
}

/// Kernel modules as the recording mapped them (perf record's MMAP records of pid -1:
/// `[kvm]`, or the module's `.ko` file): whose code an address that no symbol names is,
/// as perf script prints it (`[unknown] ([kvm])`).
#[derive(Clone, Default)]
pub(super) struct ModuleMaps(Vec<(u64, u64, String)>);

impl ModuleMaps {
    /// A module mapped at `[start, start + len)`; the core kernel's map is not one.
    pub(super) fn add(&mut self, start: u64, len: u64, path: &[u8]) {
        let path = String::from_utf8_lossy(path);
        let m = super::module_of_dso(Some(&path), start);
        if m == module::KERNEL {
            return;
        }
        let end = start.saturating_add(len);
        self.0.retain(|&(s, e, _)| e <= start || s >= end);
        let at = self.0.partition_point(|&(s, _, _)| s < start);
        self.0.insert(at, (start, end, m.into_owned()));
    }

    /// The module whose map covers `pc`.
    pub(super) fn module_at(&self, pc: u64) -> Option<&str> {
        let i = self.0.partition_point(|&(s, _, _)| s <= pc).checked_sub(1)?;
        let (_, end, m) = &self.0[i];
        (pc < *end).then_some(m.as_str())
    }

    /// What names a kernel `pc` given what the symbols `found`: a module's `[unknown]`
    /// where no symbol names it (nor the JIT rule, for an address no module covers).
    pub(super) fn or_module<'a>(
        &'a self,
        found: Option<(&'a str, Option<&'a str>)>,
        pc: u64,
    ) -> Option<(&'a str, Option<&'a str>)> {
        match found {
            None | Some((JIT_FUNCTION, None)) => self.module_at(pc).map(|m| (UNKNOWN_FUNCTION, Some(m))).or(found),
            found => found,
        }
    }
}

/// Kernel symbols, then the recording's module maps ([`ModuleMaps::or_module`]).
pub(super) struct WithModuleMaps<'a, K: ?Sized> {
    pub(super) kernel: &'a K,
    pub(super) modules: &'a ModuleMaps,
}

impl<K: KernelResolver + ?Sized> KernelResolver for WithModuleMaps<'_, K> {
    fn resolve_kernel(&self, pc: u64) -> Option<(&str, Option<&str>)> {
        self.modules.or_module(self.kernel.resolve_kernel(pc), pc)
    }
}
