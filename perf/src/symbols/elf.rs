//! User-space ELF symbols: functions named as perf names them, looked up by file offset.

use super::ranges::RangeNames;
use super::table::{Binding, Builder, Span};
use super::SymbolError;
use object::read::elf::{ElfFile, FileHeader, SectionHeader as _, Sym as _};
use object::{Object, ObjectSymbol as _};
use std::borrow::Cow;
use std::path::Path;

/// An ELF symbol perf keeps as a function (see [`code_symbols`]).
#[derive(Debug, Clone, Copy)]
pub(super) struct CodeSymbol {
    pub start: u64,
    pub size: u64,
    pub binding: Binding,
    /// Where its name starts in the file: a NUL-terminated string, not yet read (a
    /// large library's names take tens of MB, of which a profile names a few thousand).
    pub name_at: usize,
}

/// The symbols of `file`'s `.symtab` (`.dynsym` when `dynamic`) that perf keeps as
/// functions, in table order: a defined function, or a label in code (entry points
/// written in assembly, such as `_start`, often have no type); never an unnamed symbol or
/// an ARM mapping symbol (`$x`, `$d`). Code is told by the section's flag, not its kind:
/// a separate debug file's code sections are NOBITS. Gives where the table's names lie in
/// the file (`None`: the table has none to read).
///
/// The table is read as ELF lays it out, without a name read or checked per symbol: of
/// a name, only its first byte is looked at here.
pub(super) fn code_symbols(
    file: &object::File<'_>,
    dynamic: bool,
    each: impl FnMut(CodeSymbol),
) -> Option<std::ops::Range<usize>> {
    match file {
        object::File::Elf32(elf) => code_symbols_of(elf, dynamic, each),
        object::File::Elf64(elf) => code_symbols_of(elf, dynamic, each),
        _ => None,
    }
}

fn code_symbols_of<'d, Elf: FileHeader<Endian = object::Endianness>>(
    elf: &ElfFile<'d, Elf>,
    dynamic: bool,
    mut each: impl FnMut(CodeSymbol),
) -> Option<std::ops::Range<usize>> {
    use object::elf::{
        SHN_ABS, SHN_COMMON, SHN_LORESERVE, SHN_UNDEF, SHN_XINDEX, STB_LOCAL, STB_WEAK, STT_FUNC, STT_GNU_IFUNC,
        STT_NOTYPE, STV_HIDDEN, STV_INTERNAL,
    };
    let endian = elf.endian();
    let data = elf.data();
    let table = match dynamic {
        true => elf.elf_dynamic_symbol_table(),
        false => elf.elf_symbol_table(),
    };
    let sections = elf.elf_section_table();
    let in_code: Vec<bool> = sections
        .iter()
        .map(|s| s.sh_flags(endian).into() & u64::from(object::elf::SHF_EXECINSTR) != 0)
        .collect();
    let (at, size) = sections.section(table.string_section()).ok()?.file_range(endian)?;
    let names = usize::try_from(at).ok()?..usize::try_from(at.checked_add(size)?).ok()?.min(data.len());
    // Entry 0 is the null symbol.
    for (i, sym) in table.symbols().iter().enumerate().skip(1) {
        let section = match sym.st_shndx(endian) {
            SHN_UNDEF | SHN_ABS | SHN_COMMON => continue,
            SHN_XINDEX => match table.shndx(endian, object::SymbolIndex(i)) {
                Some(0) | None => continue,
                Some(k) => k as usize,
            },
            k if k < SHN_LORESERVE => usize::from(k),
            _ => continue,
        };
        let kept = match sym.st_type() {
            STT_FUNC | STT_GNU_IFUNC => true,
            // perf's `elf_sym__is_label`: untyped, not hidden or internal, in code.
            STT_NOTYPE => {
                !matches!(sym.st_other() & 3, STV_HIDDEN | STV_INTERNAL) && in_code.get(section) == Some(&true)
            }
            _ => false,
        };
        if !kept {
            continue;
        }
        let Some(name_at) = names.start.checked_add(sym.st_name(endian) as usize) else {
            continue;
        };
        if name_at >= names.end || matches!(data[name_at], 0 | b'$') {
            continue;
        }
        let binding = match sym.st_bind() {
            STB_WEAK => Binding::Weak,
            STB_LOCAL => Binding::Local,
            _ => Binding::Global,
        };
        each(CodeSymbol {
            start: sym.st_value(endian).into(),
            size: sym.st_size(endian).into(),
            binding,
            name_at,
        });
    }
    Some(names)
}

pub(super) fn parse_elf<'d>(path: &Path, data: &'d [u8]) -> Result<object::File<'d>, SymbolError> {
    let not_elf = |reason: String| SymbolError::NotElf {
        path: path.to_path_buf(),
        reason,
    };
    let file = object::File::parse(data).map_err(|e| not_elf(e.to_string()))?;
    if file.format() != object::BinaryFormat::Elf {
        return Err(not_elf(format!("{:?} format", file.format())));
    }
    Ok(file)
}

/// The bytes of the file at `path`, mapped rather than read: a library of hundreds of
/// megabytes (libLLVM) is read only where its headers and symbol tables are, instead of
/// whole into memory.
pub(super) fn map_file(path: &Path) -> Result<memmap2::Mmap, SymbolError> {
    map_open_file(path).map(|(_, map)| map)
}

/// [`map_file`] of a file another user's run or recording names: opened only as far as
/// each user of `readers` could (`fsio::foreign::open_as`, docs/security.md).
pub(super) fn map_file_as(path: &Path, readers: &[u32]) -> Result<memmap2::Mmap, SymbolError> {
    let io = |source| SymbolError::Io {
        path: path.to_path_buf(),
        source,
    };
    let f = crate::fsio::foreign::open_as(path, readers).map_err(io)?;
    map_opened(f, path).map(|(_, map)| map)
}

/// [`map_file`], and the file it maps.
fn map_open_file(path: &Path) -> Result<(std::fs::File, memmap2::Mmap), SymbolError> {
    let io = |source| SymbolError::Io {
        path: path.to_path_buf(),
        source,
    };
    // A regular file only, of at most ELF_CAP bytes: a mapping's path in a recording may
    // name /dev/random or /proc/self/fd/0.
    // Each table keeps its file open (its names are read when asked for): a recording of
    // a machine that ran many programs can pass a soft limit of 1024 open files, and then
    // any other file the import opens. The hard limit is what the system allows.
    static RAISED: std::sync::Once = std::sync::Once::new();
    RAISED.call_once(raise_open_file_limit);
    let f = crate::fsio::open_regular(path, crate::fsio::Links::Follow).map_err(io)?;
    map_opened(f, path)
}

/// Maps the opened regular file `f` (`path` for messages), at most `ELF_CAP` bytes.
fn map_opened(f: std::fs::File, path: &Path) -> Result<(std::fs::File, memmap2::Mmap), SymbolError> {
    let io = |source| SymbolError::Io {
        path: path.to_path_buf(),
        source,
    };
    if f.metadata().map_err(io)?.len() > super::ELF_CAP {
        return Err(io(crate::fsio::too_large(super::ELF_CAP)));
    }
    // SAFETY: the map is only read, and lives no longer than this import's use of it. A
    // file truncated by another process while mapped would fault, as it would for perf,
    // which maps the same files.
    let map = unsafe { memmap2::Mmap::map(&f) }.map_err(io)?;
    Ok((f, map))
}

/// Raises this process's soft limit of open files to its hard limit.
fn raise_open_file_limit() {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit only read and write `lim`.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 && lim.rlim_cur < lim.rlim_max {
            lim.rlim_cur = lim.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
        }
    }
}

/// The GNU build-id of an ELF file; `None` if it has none.
pub fn elf_build_id(path: &Path) -> Result<Option<Vec<u8>>, SymbolError> {
    let data = map_file(path)?;
    let file = parse_elf(path, &data)?;
    let id = file.build_id().map_err(|e| SymbolError::NotElf {
        path: path.to_path_buf(),
        reason: e.to_string(),
    })?;
    Ok(id.map(<[u8]>::to_vec))
}

/// Symbols read between two releases of the mapped file's pages (at 24 bytes each in
/// `.symtab`, and their names, about 4 MB of the file).
const RELEASE_EVERY: usize = 1 << 15;

/// Drops the pages of `map` from this process's memory.
fn release(map: &memmap2::Mmap) {
    // SAFETY: the mapping is private and read-only: its pages are read again from the
    // file (the page cache) when touched.
    let _ = unsafe { map.unchecked_advise(memmap2::UncheckedAdvice::DontNeed) };
}

/// Function symbols of a user-space ELF file (an executable or a shared library), named
/// as perf names them: `.symtab` when the file has one, else `.dynsym`; functions in code
/// sections only; sizes, zero-size ends and aliases by the same rules as the kernel's.
/// Looked up by file offset, which is what a sample's address in a mapping gives.
#[derive(Debug)]
pub struct ElfSymbols {
    /// The functions' start addresses, sorted, one per address.
    starts: Vec<u64>,
    /// Their ends and names, as places in `file`.
    spans: Vec<Span>,
    /// Where the names end in `file`: each is read up to its NUL, which lies before.
    names_end: u64,
    /// The file the names are read from when looked up, not copied when loaded: the
    /// names of a large library's functions take tens of MB, of which a profile names a
    /// few thousand.
    file: std::fs::File,
    /// Loadable segments: (file offset, size in the file, virtual address).
    loads: Vec<(u64, u64, u64)>,
    build_id: Option<Vec<u8>>,
    from_symtab: bool,
    maps_code: bool,
    /// PLT entries named as perf names them (`memmove@plt`).
    plt: RangeNames,
}

impl ElfSymbols {
    /// Reads `path`.
    pub fn from_file(path: &Path) -> Result<Self, SymbolError> {
        let (opened, map) = map_open_file(path)?;
        Self::from_map(path, opened, map)
    }

    /// Reads the open file `file` (one of memory, say), named `path` in messages.
    pub fn from_opened(path: &Path, file: std::fs::File) -> Result<Self, SymbolError> {
        let io = |source| SymbolError::Io {
            path: path.to_path_buf(),
            source,
        };
        // SAFETY: as in `map_open_file`; the file is this process's own.
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(io)?;
        Self::from_map(path, file, map)
    }

    fn from_map(path: &Path, opened: std::fs::File, map: memmap2::Mmap) -> Result<Self, SymbolError> {
        use object::ObjectSegment;
        let file = parse_elf(path, &map)?;
        let mut maps_code = false;
        let loads = file
            .segments()
            .filter_map(|seg| {
                let (offset, size) = seg.file_range();
                // A separate debug file keeps the headers but not the bytes (size 0).
                if size == 0 {
                    return None;
                }
                maps_code |=
                    matches!(seg.flags(), object::SegmentFlags::Elf { p_flags } if p_flags & object::elf::PF_X != 0);
                Some((offset, size, seg.address()))
            })
            .collect();
        let build_id = file.build_id().ok().flatten().map(<[u8]>::to_vec);
        let mut b = Builder::over(&map);
        let from_symtab = file.symbols().next().is_some();
        let mut kept = 0usize;
        let names = code_symbols(&file, !from_symtab, |sym| {
            b.push_in_data(sym.start, sym.start.wrapping_add(sym.size), sym.binding, sym.name_at);
            // The tables are read front to back: the pages behind need not stay (prfcmp
            // on the speed pair: 31-36 MB of mapped file at the peak without, 14-22 with).
            kept += 1;
            if kept % RELEASE_EVERY == 0 {
                release(&map);
            }
        });
        b.fix_up(false);
        let plt = RangeNames::new(match &file {
            object::File::Elf64(elf) => plt_symbols(elf),
            _ => Vec::new(),
        });
        let (starts, spans) = b.into_spans();
        Ok(ElfSymbols {
            starts,
            spans,
            names_end: names.map_or(0, |n| n.end as u64),
            file: opened,
            plt,
            loads,
            build_id,
            from_symtab,
            maps_code,
        })
    }

    /// The file's GNU build-id, if it has one.
    pub fn build_id(&self) -> Option<&[u8]> {
        self.build_id.as_deref()
    }

    /// Whether the symbols come from `.symtab` (all functions), not `.dynsym` (exported
    /// ones only).
    pub fn from_symtab(&self) -> bool {
        self.from_symtab
    }

    /// Whether the file holds its code (a separate debug file holds only symbols): only
    /// then can a file offset be placed.
    pub fn maps_code(&self) -> bool {
        self.maps_code
    }

    /// Places file offsets with `other`'s segments: a debug file's symbols with the
    /// segments of the binary it was split from.
    pub fn use_segments_of(&mut self, other: &ElfSymbols) {
        self.loads.clone_from(&other.loads);
        self.maps_code = other.maps_code;
        // The PLT is code, so only the binary has it.
        self.plt.clone_from(&other.plt);
    }

    /// The number of function symbols kept, PLT entries included.
    pub fn len(&self) -> usize {
        self.spans.len() + self.plt.len()
    }

    /// Whether the file names nothing: no function symbol and no PLT (a stripped
    /// executable that calls shared libraries still names its PLT entries).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The function at `offset` in the file; `None` when no function covers it.
    pub fn resolve_offset(&self, offset: u64) -> Option<Cow<'_, str>> {
        match self.function_at(offset)? {
            FunctionAt::Plt(name) => Some(Cow::Borrowed(name)),
            FunctionAt::Symbol(i) => self.symbol_name(i).map(Cow::Owned),
        }
    }

    /// The virtual address of `offset` in the file (where its loadable segments put it).
    pub fn address_of_offset(&self, offset: u64) -> Option<u64> {
        let &(file_off, _, vaddr) = self
            .loads
            .iter()
            .find(|&&(o, size, _)| offset >= o && offset - o < size.max(1))?;
        Some(offset - file_off + vaddr)
    }

    /// What covers `offset` in the file, without reading a symbol's name: offsets in one
    /// function give the same answer, so a caller reads each name once.
    pub fn function_at(&self, offset: u64) -> Option<FunctionAt<'_>> {
        let &(file_off, _, vaddr) = self
            .loads
            .iter()
            .find(|&&(o, size, _)| offset >= o && offset - o < size.max(1))?;
        let addr = offset - file_off + vaddr;
        // The PLT first: a zero-size symbol before it (`_init`) is stretched over it.
        if let Some(name) = self.plt.lookup(addr) {
            return Some(FunctionAt::Plt(name));
        }
        let i = self.starts.partition_point(|&s| s <= addr).checked_sub(1)?;
        (addr < self.spans[i].end).then_some(FunctionAt::Symbol(i as u32))
    }

    /// The name of function symbol `i` (from [`function_at`](Self::function_at)), read
    /// from the file; `None` if the file no longer holds a name there.
    pub fn symbol_name(&self, i: u32) -> Option<String> {
        use std::os::unix::fs::FileExt;
        let mut at = self.spans.get(i as usize)?.name;
        let mut name = Vec::new();
        let mut chunk = [0u8; 256];
        while at < self.names_end {
            let n = chunk.len().min((self.names_end - at) as usize);
            self.file.read_exact_at(&mut chunk[..n], at).ok()?;
            match memchr::memchr(0, &chunk[..n]) {
                Some(end) => {
                    name.extend_from_slice(&chunk[..end]);
                    return String::from_utf8(name).ok();
                }
                None => name.extend_from_slice(&chunk[..n]),
            }
            at += n as u64;
        }
        None
    }
}

/// What covers an offset in an ELF file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FunctionAt<'s> {
    /// A PLT entry, named as perf names it.
    Plt(&'s str),
    /// A function symbol, by index.
    Symbol(u32),
}

/// perf's synthesized PLT symbols (`dso__synthesize_plt_symbols`): `.plt` for the whole
/// PLT (its header), then one `NAME@plt` per `.rela.plt` entry, in GOT order, each of the
/// PLT's entry size, in `.plt.sec` when there is one, else after the header in `.plt`. A
/// relocation without a symbol (an IFUNC's IRELATIVE) gives `@plt`.
fn plt_symbols<'d>(elf: &object::read::elf::ElfFile64<'d, object::Endianness>) -> Vec<(u64, u64, String)> {
    use object::read::elf::{Rela as _, SectionHeader as _};
    use object::ObjectSymbolTable as _;
    let endian = elf.endian();
    let header = |name: &str| {
        elf.section_by_name(name)
            .map(|s| *s.elf_section_header())
            .filter(|h| h.sh_type(endian) != object::elf::SHT_NOBITS)
    };
    let (Some(plt), Some(rela)) = (header(".plt"), header(".rela.plt")) else {
        return Vec::new();
    };
    let entry = plt.sh_entsize(endian);
    let Ok(relocs) = rela.data_as_array::<object::elf::Rela64<object::Endianness>, _>(endian, elf.data()) else {
        return Vec::new();
    };
    if entry == 0 {
        return Vec::new();
    }
    let dynsym = elf.dynamic_symbol_table();
    let start = plt.sh_addr(endian);
    let mut out = vec![(start, start + entry, ".plt".to_string())];
    let mut at = match header(".plt.sec") {
        Some(sec) => {
            // The header symbol covers the whole .plt: its entries only jump to .plt.sec.
            out[0].1 = start + plt.sh_size(endian);
            sec.sh_addr(endian)
        }
        None => start + entry,
    };
    let mut relocs: Vec<_> = relocs.iter().collect();
    relocs.sort_by_key(|r| r.r_offset(endian));
    for r in relocs {
        let name = match r.r_sym(endian, false) {
            0 => "",
            i => dynsym
                .as_ref()
                .and_then(|t| t.symbol_by_index(object::SymbolIndex(i as usize)).ok())
                .and_then(|s| s.name().ok())
                .unwrap_or(""),
        };
        out.push((at, at + entry, format!("{name}@plt")));
        at += entry;
    }
    out
}
