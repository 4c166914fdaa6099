//! The code of one function: its instructions (x86-64, AT&T syntax as objdump and perf
//! annotate print them) and the source line of each, inlined functions as the debug
//! information says (`docs/annotate.md`). DWARF is read with `gimli`/`addr2line`, code
//! with `iced-x86`.

use super::elf::{map_file_as, parse_elf};
use super::{buildid_dir, hex};
use object::{Object, ObjectSection, ObjectSymbol};
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Where an instruction's code came from in the source.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SourcePlace {
    /// The source file, as the debug information names it (with its directory).
    pub file: String,
    /// The line, 1-based (0: the compiler said no line).
    pub line: u32,
    /// The function the line belongs to: an inlined helper's own name.
    pub function: String,
    /// The function it was inlined into (the symbol's function), when inlined.
    pub inlined_into: Option<String>,
}

/// One instruction of a function.
#[derive(Debug, Clone, PartialEq)]
pub struct CodeInstruction {
    /// Its offset from the function's start.
    pub offset: u64,
    /// Its length in bytes.
    pub len: u64,
    /// The disassembly (empty when the bytes are missing or not x86-64).
    pub text: String,
}

/// The code and lines of a function in one ELF file.
#[derive(Debug, Clone, Default)]
pub struct FunctionCode {
    /// The symbol found (the name asked for, or a clone of it: `foo.isra.0`).
    pub symbol: String,
    /// Its address in the file and its size.
    pub start: u64,
    /// Its size in bytes.
    pub size: u64,
    /// Its bytes (empty when the file holds none: a separate debug file).
    pub bytes: Vec<u8>,
    /// Its instructions, in order (none without bytes or off x86-64).
    pub instructions: Vec<CodeInstruction>,
    /// The source place of each offset asked about (instruction starts and sampled
    /// offsets); `None` where the debug information has no line.
    pub places: BTreeMap<u64, Option<SourcePlace>>,
    /// What is missing, and which package provides it.
    pub missing: Vec<String>,
}

impl FunctionCode {
    /// The instruction holding `offset`, if known.
    pub fn instruction_at(&self, offset: u64) -> Option<&CodeInstruction> {
        let i = self
            .instructions
            .partition_point(|c| c.offset <= offset)
            .checked_sub(1)?;
        let c = &self.instructions[i];
        (offset < c.offset + c.len.max(1)).then_some(c)
    }

    /// The source place of `offset`: its own, else its instruction's.
    pub fn place_at(&self, offset: u64) -> Option<&SourcePlace> {
        if let Some(p) = self.places.get(&offset) {
            return p.as_ref();
        }
        let start = self.instruction_at(offset)?.offset;
        self.places.get(&start)?.as_ref()
    }
}

/// Which package holds what a kernel function needs.
pub const KERNEL_DEBUG_PACKAGES: &str =
    "the kernel's debug package provides it: linux-image-$(uname -r)-dbg on Debian (its vmlinux is under \
     /usr/lib/debug/boot), kernel-debuginfo on Fedora";
/// Which package holds what a user function needs.
pub const USER_DEBUG_PACKAGES: &str = "the program's debug package provides it: PACKAGE-dbgsym or PACKAGE-dbg on \
     Debian, PACKAGE-debuginfo on Fedora (or build with -g)";

/// Why a function's code could not be read at all.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CodeError {
    /// The file is unreadable or not ELF.
    #[error(transparent)]
    File(#[from] super::SymbolError),
    /// No function symbol of that name.
    #[error("{} has no function symbol {name:?}", path.display())]
    NoSymbol {
        /// The file.
        path: PathBuf,
        /// The name asked for.
        name: String,
    },
}

/// Whether `symbol` is `name` or a clone of it (`name.isra.0`, `name.cold`).
pub fn answers_to(symbol: &str, name: &str) -> bool {
    symbol == name || symbol.strip_prefix(name).is_some_and(|rest| rest.starts_with('.'))
}

/// The code of the function `name` in `code_file`, with lines from `debug_file` (the
/// same file when `None`), and a place for each of `offsets` as well as each instruction.
/// The files are read only as far as each user of `readers` could read them
/// (`fsio::foreign::open_as`; none: as this process).
pub fn function_code(
    code_file: &Path,
    debug_file: Option<&Path>,
    name: &str,
    offsets: &[u64],
    packages: &str,
    readers: &[u32],
) -> Result<FunctionCode, CodeError> {
    let mut all = functions_code(code_file, debug_file, &[(name, offsets)], packages, readers)?;
    all.pop().expect("one function asked, one answered")
}

/// A function symbol found for a name asked about.
struct Found {
    name: String,
    address: u64,
    size: u64,
}

/// The code of each function of `wanted` (a name and the offsets to place besides its
/// instructions) in `code_file`, lines from `debug_file` (the same file when `None`).
/// The files are mapped and parsed, their symbols scanned and their DWARF indexed once
/// for all the functions: a vmlinux has some 10^5 symbols and 10^3 compile units, and
/// its debug sections may be compressed. The files are read only as far as each user of
/// `readers` could read them (`fsio::foreign::open_as`).
pub fn functions_code(
    code_file: &Path,
    debug_file: Option<&Path>,
    wanted: &[(&str, &[u64])],
    packages: &str,
    readers: &[u32],
) -> Result<Vec<Result<FunctionCode, CodeError>>, CodeError> {
    let map = map_file_as(code_file, readers)?;
    let file = parse_elf(code_file, &map)?;
    let (debug_map, separate);
    let debug = match debug_file.filter(|p| *p != code_file) {
        Some(p) => {
            debug_map = map_file_as(p, readers)?;
            separate = parse_elf(p, &debug_map)?;
            &separate
        }
        None => &file,
    };
    // A stripped library has its functions in .dynsym alone; its debug file has them all.
    let tables: Vec<&object::File<'_>> = match std::ptr::eq(debug, &file) {
        true => vec![&file],
        false => vec![&file, debug],
    };
    let found = find_symbols(&tables, wanted.iter().map(|w| w.0));
    let sections = debug_sections(debug);
    let endian = if debug.is_little_endian() {
        gimli::RunTimeEndian::Little
    } else {
        gimli::RunTimeEndian::Big
    };
    let lines = sections.as_ref().and_then(|owned| {
        let dwarf = owned.borrow(|s| gimli::EndianSlice::new(s, endian));
        addr2line::Context::from_dwarf(dwarf).ok()
    });
    let mut out = Vec::with_capacity(wanted.len());
    for (&(name, offsets), found) in wanted.iter().zip(found) {
        let Some(sym) = found else {
            out.push(Err(CodeError::NoSymbol {
                path: code_file.to_path_buf(),
                name: name.to_string(),
            }));
            continue;
        };
        let mut code = FunctionCode {
            symbol: sym.name,
            start: sym.address,
            size: sym.size,
            ..FunctionCode::default()
        };
        // The code file's bytes at the symbol's address (a debug file's symbol has no
        // bytes of its own).
        let bytes = file
            .sections()
            .filter(|s| s.kind() == object::SectionKind::Text)
            .find_map(|s| s.data_range(code.start, code.size).ok().flatten());
        match bytes {
            Some(bytes) if !bytes.is_empty() => code.bytes = bytes.to_vec(),
            _ => code.missing.push(format!(
                "{} holds no code bytes of {} (a separate debug file?): no disassembly; {packages}",
                code_file.display(),
                code.symbol
            )),
        }
        if file.architecture() == object::Architecture::X86_64 {
            code.instructions = disassemble(&code.bytes, code.start);
        } else if !code.bytes.is_empty() {
            code.missing.push(format!(
                "{:?} code is not disassembled (x86-64 only): lines only",
                file.architecture()
            ));
        }
        let mut places: Vec<u64> = code.instructions.iter().map(|c| c.offset).collect();
        places.extend(offsets.iter().copied().filter(|&o| o < code.size.max(1)));
        places.sort_unstable();
        places.dedup();
        match &lines {
            Some(ctx) => code.places = places.iter().map(|&o| (o, place(ctx, code.start + o))).collect(),
            None => code.missing.push(format!(
                "{} has no line information (.debug_info, .debug_line): no source lines; {packages}",
                debug_file.unwrap_or(code_file).display()
            )),
        }
        out.push(Ok(code));
    }
    Ok(out)
}

/// The symbol of each name of `names` in one pass over the symbols and dynamic symbols
/// of `files`: the function itself (not a clone) first, else its largest clone
/// (`name.isra.0`).
fn find_symbols<'n>(files: &[&object::File<'_>], names: impl Iterator<Item = &'n str>) -> Vec<Option<Found>> {
    let mut index: std::collections::HashMap<&str, Vec<usize>> = std::collections::HashMap::new();
    let mut found: Vec<Option<Found>> = Vec::new();
    for (k, n) in names.enumerate() {
        index.entry(n).or_default().push(k);
        found.push(None);
    }
    for s in files.iter().flat_map(|f| f.symbols().chain(f.dynamic_symbols())) {
        if s.kind() != object::SymbolKind::Text || s.size() == 0 {
            continue;
        }
        let Ok(sym_name) = s.name() else { continue };
        // The symbol itself and each prefix of it that a clone's suffix follows.
        let prefixes = std::iter::once(sym_name).chain(sym_name.match_indices('.').map(|(i, _)| &sym_name[..i]));
        for asked in prefixes {
            let Some(ks) = index.get(asked) else { continue };
            let exact = asked == sym_name;
            for &k in ks {
                let better = match &found[k] {
                    None => true,
                    Some(f) => {
                        let f_exact = f.name == asked;
                        (exact, s.size()) > (f_exact, f.size)
                    }
                };
                if better {
                    found[k] = Some(Found {
                        name: sym_name.to_string(),
                        address: s.address(),
                        size: s.size(),
                    });
                }
            }
        }
    }
    found
}

/// The x86-64 instructions of `bytes` placed at `start`, by offset.
fn disassemble(bytes: &[u8], start: u64) -> Vec<CodeInstruction> {
    use iced_x86::{Decoder, DecoderOptions, Formatter, GasFormatter};
    let mut decoder = Decoder::with_ip(64, bytes, start, DecoderOptions::NONE);
    let mut fmt = GasFormatter::new();
    let mut out = Vec::new();
    let mut text = String::new();
    while decoder.can_decode() {
        let insn = decoder.decode();
        text.clear();
        fmt.format(&insn, &mut text);
        out.push(CodeInstruction {
            offset: insn.ip() - start,
            len: insn.len() as u64,
            text: if insn.is_invalid() {
                "(bad)".into()
            } else {
                text.clone()
            },
        });
    }
    out
}

/// `file`'s DWARF sections (decompressed where need be); `None` without line information.
fn debug_sections<'a>(file: &object::File<'a>) -> Option<gimli::DwarfSections<Cow<'a, [u8]>>> {
    file.section_by_name(".debug_line")?;
    let load = |id: gimli::SectionId| -> Result<Cow<'a, [u8]>, gimli::Error> {
        Ok(file
            .section_by_name(id.name())
            .and_then(|s| s.uncompressed_data().ok())
            .unwrap_or(Cow::Borrowed(&[])))
    };
    gimli::DwarfSections::load(load).ok()
}

/// The innermost frame's place at `addr`, with the outermost function it was inlined into.
fn place<R: gimli::Reader>(ctx: &addr2line::Context<R>, addr: u64) -> Option<SourcePlace> {
    let mut frames = ctx.find_frames(addr).skip_all_loads().ok()?;
    let mut inner: Option<SourcePlace> = None;
    let mut outer: Option<String> = None;
    while let Ok(Some(f)) = frames.next() {
        let name = f
            .function
            .as_ref()
            .and_then(|n| n.demangle().ok().map(|d| d.into_owned()))
            .unwrap_or_default();
        if inner.is_none() {
            let loc = f.location.as_ref()?;
            inner = Some(SourcePlace {
                file: loc.file.unwrap_or("??").to_string(),
                line: loc.line.unwrap_or(0),
                function: name,
                inlined_into: None,
            });
        } else {
            outer = Some(name);
        }
    }
    let mut p = inner?;
    p.inlined_into = outer.filter(|o| *o != p.function);
    Some(p)
}

/// The file holding `path`'s debug information: the file itself when it has DWARF, else
/// the separate debug file by build-id (`/usr/lib/debug/.build-id/ab/cdef….debug`,
/// perf's `~/.debug` cache) or by `.gnu_debuglink` (beside it, `.debug/`, under
/// `/usr/lib/debug`). `None` when none is found. Only files each user of `readers` could
/// read are opened (`fsio::foreign::open_as`).
pub fn debug_file_for(path: &Path, readers: &[u32]) -> Option<PathBuf> {
    let map = map_file_as(path, readers).ok()?;
    let file = parse_elf(path, &map).ok()?;
    if file.section_by_name(".debug_line").is_some() {
        return Some(path.to_path_buf());
    }
    let mut candidates = Vec::new();
    if let Some(id) = file.build_id().ok().flatten() {
        let h = hex(id);
        candidates.push(PathBuf::from(format!(
            "/usr/lib/debug/.build-id/{}/{}.debug",
            &h[..2],
            &h[2..]
        )));
        if let Some(d) = buildid_dir() {
            candidates.push(d.join(".build-id").join(&h[..2]).join(&h[2..]).join("debug"));
            candidates.push(d.join(".build-id").join(&h[..2]).join(&h[2..]).join("elf"));
        }
    }
    if let Some((link, _crc)) = file.gnu_debuglink().ok().flatten() {
        use std::os::unix::ffi::OsStrExt;
        let link = Path::new(std::ffi::OsStr::from_bytes(link));
        let dir = path.parent().unwrap_or(Path::new("/"));
        candidates.push(dir.join(link));
        candidates.push(dir.join(".debug").join(link));
        let rel = dir.strip_prefix("/").unwrap_or(dir);
        candidates.push(Path::new("/usr/lib/debug").join(rel).join(link));
    }
    candidates.into_iter().find(|c| {
        map_file_as(c, readers)
            .ok()
            .is_some_and(|m| parse_elf(c, &m).is_ok_and(|f| f.section_by_name(".debug_line").is_some()))
    })
}

/// The lines of source `file` (as DWARF names it), read where it is or under one of
/// `dirs` (`--source-dir`): the path itself, then each shorter tail of it under each
/// directory. `None` when not found; a file over 16 MiB is not read, nor one that any
/// of `readers` could not read: the check and the open are one (`fsio::foreign::open_as`),
/// so the file cannot be swapped for a link in between.
pub fn read_source(file: &str, dirs: &[PathBuf], readers: &[u32]) -> Option<Vec<String>> {
    const CAP: u64 = 16 << 20;
    let read = |p: &Path| -> Option<Vec<String>> {
        use std::io::Read;
        let f = crate::fsio::foreign::open_as(p, readers).ok()?;
        let mut bytes = Vec::new();
        f.take(CAP + 1).read_to_end(&mut bytes).ok()?;
        (bytes.len() as u64 <= CAP).then(|| String::from_utf8_lossy(&bytes).lines().map(str::to_string).collect())
    };
    let path = Path::new(file);
    if path.is_absolute() {
        if let Some(lines) = read(path) {
            return Some(lines);
        }
    }
    let parts: Vec<_> = path
        .components()
        .filter(|c| matches!(c, std::path::Component::Normal(_)))
        .collect();
    for d in dirs {
        for k in 0..parts.len() {
            let tail: PathBuf = parts[k..].iter().collect();
            if let Some(lines) = read(&d.join(tail)) {
                return Some(lines);
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clone_answers_to_its_function_name() {
        assert!(answers_to("copy_page_range", "copy_page_range"));
        assert!(answers_to("copy_page_range.isra.0", "copy_page_range"));
        assert!(!answers_to("copy_page_range_x", "copy_page_range"));
    }

    #[test]
    fn instructions_are_disassembled_in_att_syntax() {
        // push %rbp; mov %rsp,%rbp; ret
        let i = disassemble(&[0x55, 0x48, 0x89, 0xe5, 0xc3], 0x1000);
        let text: Vec<&str> = i.iter().map(|c| c.text.as_str()).collect();
        assert_eq!(text, ["push %rbp", "mov %rsp,%rbp", "ret"]);
        assert_eq!(i[1].offset, 1);
        assert_eq!(i[1].len, 3);
    }
}
