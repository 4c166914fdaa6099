//! The call frame information of a user ELF file (`.eh_frame`, `.eh_frame_hdr`,
//! `.debug_frame`) and the code it describes, copied out of the file once, for the
//! import's unwinding of `--call-graph dwarf` stack dumps.

use super::elf::{map_file, parse_elf};
use std::ops::Range;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::Arc;

/// A section's stated address range and bytes.
pub type CfiSection = (Range<u64>, Arc<[u8]>);

/// What unwinding needs of one ELF file.
#[derive(Debug, Default)]
pub struct UnwindInfo {
    /// `.text`: instruction analysis in prologues and epilogues.
    pub text: Option<CfiSection>,
    /// `.eh_frame`: the call frame information a program keeps loaded.
    pub eh_frame: Option<CfiSection>,
    /// `.eh_frame_hdr`: its sorted index.
    pub eh_frame_hdr: Option<CfiSection>,
    /// `.got`'s range, which `.eh_frame` addresses may be relative to.
    pub got: Option<Range<u64>>,
    /// `.debug_frame`: call frame information kept with the debug information only.
    pub debug_frame: Option<Arc<[u8]>>,
    /// Loadable segments: (file offset, virtual address), to place the file in a mapping.
    pub loads: Vec<(u64, u64)>,
}

impl UnwindInfo {
    /// Whether the file has any call frame information.
    pub fn has_cfi(&self) -> bool {
        self.eh_frame.is_some() || self.debug_frame.is_some()
    }

    /// The address at which the file's address 0 lies when its file offset `pgoff` is
    /// mapped at `start`: by the loadable segment holding `pgoff` (the executable one).
    pub fn base_address(&self, start: u64, pgoff: u64) -> u64 {
        let (offset, vaddr) = self
            .loads
            .iter()
            .rev()
            .find(|(o, _)| *o <= pgoff)
            .copied()
            .unwrap_or((0, 0));
        start.wrapping_sub(pgoff).wrapping_add(offset).wrapping_sub(vaddr)
    }
}

/// The unwinding information of the ELF file at `path`, when the file there is the build
/// recorded (`build_id`, when the recording names one) and has call frame information.
pub fn load_unwind_info(path: &[u8], build_id: Option<&[u8]>) -> Option<UnwindInfo> {
    use object::{Object, ObjectSection, ObjectSegment};
    let local = Path::new(std::ffi::OsStr::from_bytes(path));
    if !local.is_absolute() {
        return None;
    }
    let map = map_file(local).ok()?;
    let file = parse_elf(local, &map).ok()?;
    if let Some(id) = build_id.filter(|id| !id.is_empty()) {
        if file.build_id().ok().flatten() != Some(id) {
            return None;
        }
    }
    let section = |name: &str| -> Option<CfiSection> {
        let s = file.section_by_name(name)?;
        let data = s.uncompressed_data().ok()?;
        Some((s.address()..s.address() + s.size(), Arc::from(&*data)))
    };
    let info = UnwindInfo {
        text: section(".text"),
        eh_frame: section(".eh_frame"),
        eh_frame_hdr: section(".eh_frame_hdr"),
        got: file
            .section_by_name(".got")
            .map(|s| s.address()..s.address() + s.size()),
        debug_frame: section(".debug_frame").map(|(_, d)| d),
        loads: file.segments().map(|s| (s.file_range().0, s.address())).collect(),
    };
    info.has_cfi().then_some(info)
}
