//! The user stacks of `--call-graph dwarf` samples: the registers and the copy of the
//! stack the kernel took at the sample, unwound with the call frame information of the
//! mapped ELF files (framehop, as samply does), so that each sample has the stack
//! `perf report` shows. x86-64 only; a sample whose leaf is in a file without call frame
//! information keeps its sampled address as its only user frame.

use crate::symbols::{load_unwind_info, UnwindInfo};
use framehop::x86_64::{CacheX86_64, UnwindRegsX86_64, UnwinderX86_64};
use framehop::{ExplicitModuleSectionInfo, Module, Unwinder};
use linux_perf_data::linux_perf_event_reader::Regs;
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

type FastMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

/// x86-64's `perf_regs` indices (`arch/x86/include/uapi/asm/perf_regs.h`).
const X86_BP: u64 = 6;
const X86_SP: u64 = 7;
const X86_IP: u64 = 8;
/// A register x86-64 does not have and aarch64 does (x30, the link register): tells the
/// two dumps apart.
const AARCH64_LR: u64 = 30;

/// The most user frames a sample is given (perf's `PERF_MAX_STACK_DEPTH` is 127).
const MAX_FRAMES: usize = 256;

/// An executable mapping of a process and the file behind it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct MappedFile<'m> {
    pub(crate) start: u64,
    pub(crate) end: u64,
    pub(crate) pgoff: u64,
    /// The file's index among the import's files.
    pub(crate) dso: usize,
    pub(crate) path: &'m [u8],
    pub(crate) build_id: Option<&'m [u8]>,
}

/// A mapping as a key: (start, end, file offset, file).
type MappingKey = (u64, u64, u64, usize);

/// A process's unwinder and the mappings it was made of.
struct ProcessUnwinder {
    mappings: Vec<MappingKey>,
    unwinder: UnwinderX86_64<Arc<[u8]>>,
}

/// Unwinds the user stack dumps of one import. The files' call frame information is
/// read once per file, a module made once per mapping, an unwinder once per process
/// until its mappings change; recordings without stack dumps never get here.
#[derive(Default)]
pub(crate) struct DwarfUnwinder {
    infos: FastMap<usize, Option<Arc<UnwindInfo>>>,
    modules: FastMap<MappingKey, Module<Arc<[u8]>>>,
    processes: FastMap<i32, ProcessUnwinder>,
    cache: Option<Box<CacheX86_64>>,
    /// Samples unwound, and those left at their sampled address for want of call frame
    /// information, with the files that lacked it.
    pub(crate) unwound: u64,
    pub(crate) leaf_only: u64,
    pub(crate) files_without_cfi: BTreeSet<String>,
}

impl DwarfUnwinder {
    /// An unwinder for a second reader of the same file: the files' call frame
    /// information already read is shared.
    pub(crate) fn for_second_reader(&self) -> Self {
        DwarfUnwinder {
            infos: self.infos.clone(),
            ..Self::default()
        }
    }

    /// Adds a second reader's counts.
    pub(crate) fn absorb(&mut self, other: DwarfUnwinder) {
        self.unwound += other.unwound;
        self.leaf_only += other.leaf_only;
        self.files_without_cfi.extend(other.files_without_cfi);
    }

    /// The user stack of a sample of process `pid` whose user registers are `regs` and
    /// stack dump `stack`, in `out` leaf first, as the addresses that name each frame (a
    /// return address less one: the call, not what follows it). Nothing when the
    /// registers are not x86-64's. Only the sampled address when the file it is in has
    /// no call frame information (counted, for a note).
    pub(crate) fn unwind(
        &mut self,
        pid: i32,
        mapped: &[MappedFile<'_>],
        regs: &Regs<'_>,
        stack: &[u8],
        out: &mut Vec<u64>,
    ) {
        let (Some(ip), Some(sp), Some(bp)) = (regs.get(X86_IP), regs.get(X86_SP), regs.get(X86_BP)) else {
            return;
        };
        if regs.get(AARCH64_LR).is_some() {
            return;
        }
        let leaf = mapped.iter().find(|m| m.start <= ip && ip < m.end);
        let leaf_cfi = leaf.is_some_and(|m| self.info(m).is_some());
        if !leaf_cfi {
            if let Some(m) = leaf {
                self.files_without_cfi
                    .insert(String::from_utf8_lossy(m.path).into_owned());
            }
            self.leaf_only += 1;
            out.push(ip);
            return;
        }
        self.unwound += 1;
        let keys: Vec<MappingKey> = mapped.iter().map(|m| (m.start, m.end, m.pgoff, m.dso)).collect();
        let stale = !self.processes.get(&pid).is_some_and(|p| p.mappings == keys);
        if stale {
            let mut unwinder = UnwinderX86_64::new();
            for m in mapped {
                if let Some(module) = self.module(m) {
                    unwinder.add_module(module);
                }
            }
            self.processes.insert(
                pid,
                ProcessUnwinder {
                    mappings: keys,
                    unwinder,
                },
            );
        }
        let unwinder = &self.processes[&pid].unwinder;
        let cache = self.cache.get_or_insert_with(|| Box::new(CacheX86_64::new()));
        let mut read_stack = |addr: u64| -> Result<u64, ()> {
            let at = usize::try_from(addr.checked_sub(sp).ok_or(())?).map_err(|_| ())?;
            let bytes = stack.get(at..at.checked_add(8).ok_or(())?).ok_or(())?;
            Ok(u64::from_le_bytes(bytes.try_into().map_err(|_| ())?))
        };
        let mut frames = unwinder.iter_frames(ip, UnwindRegsX86_64::new(ip, sp, bp), cache, &mut read_stack);
        // An error ends the stack where it was found, as perf's unwinders end it.
        while let Ok(Some(frame)) = frames.next() {
            out.push(frame.address_for_lookup());
            if out.len() >= MAX_FRAMES {
                break;
            }
        }
    }

    /// The call frame information of the file of `m`, read the first time.
    fn info(&mut self, m: &MappedFile<'_>) -> Option<Arc<UnwindInfo>> {
        self.infos
            .entry(m.dso)
            .or_insert_with(|| load_unwind_info(m.path, m.build_id).map(Arc::new))
            .clone()
    }

    /// The unwinding module of the mapping `m`, made the first time.
    fn module(&mut self, m: &MappedFile<'_>) -> Option<Module<Arc<[u8]>>> {
        let key = (m.start, m.end, m.pgoff, m.dso);
        if let Some(module) = self.modules.get(&key) {
            return Some(module.clone());
        }
        let info = self.info(m)?;
        let section_info = ExplicitModuleSectionInfo {
            base_svma: 0,
            text_svma: info.text.as_ref().map(|t| t.0.clone()),
            text: info.text.as_ref().map(|t| t.1.clone()),
            got_svma: info.got.clone(),
            eh_frame_svma: info.eh_frame.as_ref().map(|t| t.0.clone()),
            eh_frame: info.eh_frame.as_ref().map(|t| t.1.clone()),
            eh_frame_hdr_svma: info.eh_frame_hdr.as_ref().map(|t| t.0.clone()),
            eh_frame_hdr: info.eh_frame_hdr.as_ref().map(|t| t.1.clone()),
            debug_frame: info.debug_frame.clone(),
            ..Default::default()
        };
        let name = String::from_utf8_lossy(m.path).into_owned();
        let module = Module::new(name, m.start..m.end, info.base_address(m.start, m.pgoff), section_info);
        self.modules.insert(key, module.clone());
        Some(module)
    }
}
