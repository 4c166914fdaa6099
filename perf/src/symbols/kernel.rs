//! Kernel symbols: a sampled kernel PC becomes (function, module), the way `perf`
//! names it.
//!
//! The symbols come from `/proc/kallsyms` (or a saved copy), or from an ELF `vmlinux`
//! relocated by the KASLR offset with module symbols still taken from kallsyms. Loading
//! follows perf's rules (`tools/perf/util/symbol.c`) so that a PC gets the name perf would
//! print: which symbol types are kept, how a symbol's end is found, which of several
//! symbols at one address wins, and which PCs stay unknown. `docs/symbols.md` explains
//! each rule; the integration tests check the result against `perf script`.
//!
//! Lookups are a binary search over a sorted vector of start addresses; names live in one
//! `String` and entries hold offsets into it.

use super::elf::{code_symbols, parse_elf};
use super::table::{name_at, sort_by_start, Binding, Builder, Candidate, CORE};
use super::{hex, SymbolError};
use crate::fsio::{self, Links};
use std::ops::Range;
use std::path::Path;

use crate::model::shown::unquoted;
use object::{Object, ObjectSymbol, SymbolSection};
use upcmp_parsers::kallsyms;

/// The x86_64 entry trampoline lives in the cpu_entry_area; perf drops its kallsyms symbol
/// and maps that area onto the text section instead.
const ENTRY_TRAMPOLINE: &str = "__entry_SYSCALL_64_trampoline";

pub use crate::model::profile::JIT_FUNCTION;

/// Where x86_64 maps the kernel's text (`__START_KERNEL_map`).
const X86_64_KERNEL_TEXT: u64 = 0xffff_ffff_8000_0000;

/// Where x86_64's module area starts when KASLR gives the kernel's image 1 GiB: the end
/// of where the core kernel may be.
const X86_64_KASLR_MODULES: u64 = 0xffff_ffff_c000_0000;

/// x86_64's module area (`MODULES_VADDR` at its lowest, without KASLR's larger image,
/// to `MODULES_END`): modules, BPF JIT images and trampolines live here.
const X86_64_MODULES: Range<u64> = 0xffff_ffff_a000_0000..0xffff_ffff_ff00_0000;

/// Symbols resolved for one kernel, sorted by address with at most one symbol per address.
#[derive(Debug, Clone)]
pub struct KernelSymbols {
    starts: Vec<u64>,
    entries: Vec<Entry>,
    names: String,
    modules: Vec<String>,
    /// The kernel map, `[_text, _edata or _etext)`: perf attributes core PCs outside it to
    /// no symbol. `None` when the source has neither bound.
    core_range: Option<Range<u64>>,
    /// The relocation reference, `_text` (else `_stext`), and its address as listed (before
    /// aliases are dropped): the KASLR offset is measured at this symbol.
    reloc_ref: Option<(&'static str, u64)>,
    /// `_text` and `_stext` where listed: what a recording may place the kernel by.
    anchors: Vec<(&'static str, u64)>,
    kaslr_offset: Option<u64>,
    pub(super) text_count: usize,
    module_text_count: usize,
    origin: String,
    from_kallsyms: String,
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    end: u64,
    name: u32,
    name_len: u32,
    module: u32,
    text: bool,
}

/// What perf keeps from kallsyms: text, weak, data and bss symbols, global or local.
/// Data symbols never contain a PC but still end the text symbol before them.
fn perf_keeps(kind: char) -> bool {
    matches!(kind.to_ascii_uppercase(), 'T' | 'W' | 'D' | 'B')
}

fn kallsyms_binding(kind: char) -> Binding {
    // As perf: only upper-case `W` is weak; a lower-case `w` counts as local.
    match kind {
        'W' => Binding::Weak,
        k if k.is_ascii_uppercase() => Binding::Global,
        _ => Binding::Local,
    }
}

/// Pseudo-modules in kallsyms that are not in /proc/modules (ftrace and kprobe
/// trampolines): perf finds no module map for them and drops their symbols.
fn is_pseudo_module(module: &str) -> bool {
    module.starts_with("__builtin__")
}

/// Whether `path`, or a directory it names on the way, is a symbolic link.
fn through_link(path: &Path) -> bool {
    path.ancestors()
        .filter(|a| !a.as_os_str().is_empty())
        .any(fsio::is_symlink)
}

/// The most text a kallsyms file may hold (a kernel with every module loaded lists about
/// 20 MB).
pub const KALLSYMS_CAP: u64 = 256 << 20;

/// The text of a kallsyms file (`.gz` files are decompressed): a regular file only, of at
/// most [`KALLSYMS_CAP`] bytes of text. uprun reads /proc/kallsyms once with this, to load
/// its symbols and to keep its copy (`kallsyms.gz`) from the same text.
pub fn read_kallsyms_text(path: &Path) -> Result<String, SymbolError> {
    let io = |source| SymbolError::Io {
        path: path.to_path_buf(),
        source,
    };
    // A regular file only, and at most KALLSYMS_CAP bytes of text, also once
    // decompressed: /dev/zero or a gzip bomb stop there. (Not mmap: /proc files have
    // no size.)
    let file = fsio::open_regular(path, Links::Follow).map_err(io)?;
    let bytes = if path.extension().is_some_and(|e| e == "gz") {
        fsio::read_capped(flate2::read::GzDecoder::new(file), KALLSYMS_CAP)
    } else {
        fsio::read_capped(file, KALLSYMS_CAP)
    }
    .map_err(io)?;
    String::from_utf8(bytes).map_err(|e| {
        io(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("not UTF-8 text (byte {})", e.utf8_error().valid_up_to()),
        ))
    })
}

impl KernelSymbols {
    /// Text symbols from a kallsyms file (normally /proc/kallsyms). `origin` names it in
    /// errors and in [`describe`](Self::describe).
    pub fn from_kallsyms_text(text: &str, origin: &str) -> Result<Self, SymbolError> {
        // Room for every name and (at 32 bytes a line or more) every line: growing the
        // two tables line by line copied them over and over.
        let mut b = Builder {
            names: String::with_capacity(text.len()),
            candidates: Vec::with_capacity(text.len() / 32),
            ..Builder::default()
        };
        let (mut text_address, mut stext, mut etext, mut edata) = (None, None, None, None);
        let mut any_nonzero = false;
        for entry in kallsyms::entries(text, origin) {
            let e = entry?;
            any_nonzero |= e.address != 0;
            if e.module.is_none() {
                match e.name {
                    "_text" => text_address = Some(e.address),
                    "_stext" => stext = Some(e.address),
                    "_etext" => etext = Some(e.address),
                    "_edata" => edata = Some(e.address),
                    _ => {}
                }
            }
            // perf skips ARM mapping symbols (`$a`, `$d`, `$x`).
            if !perf_keeps(e.kind) || e.name.starts_with('$') {
                continue;
            }
            let text = matches!(e.kind.to_ascii_uppercase(), 'T' | 'W');
            b.push(e.address, e.address, kallsyms_binding(e.kind), e.name, e.module, text);
        }
        if !b.candidates.iter().any(|c| c.text) {
            return Err(SymbolError::NoTextSymbols {
                origin: origin.to_string(),
            });
        }
        if !any_nonzero {
            return Err(SymbolError::HiddenAddresses {
                origin: origin.to_string(),
            });
        }
        b.fix_up(true);
        // perf's kernel map starts at `_text` (else `_stext`) and ends at `_edata` (else
        // `_etext`); without a start it has no bounds here either.
        let core_range = text_address
            .or(stext)
            .map(|start| start..edata.or(etext).unwrap_or(u64::MAX));
        let mut syms = Self::finish(b, core_range, origin.to_string(), |b, c| {
            let pseudo = c.module != CORE && is_pseudo_module(&b.modules[c.module as usize]);
            let trampoline = c.module == CORE && b.name(c) == ENTRY_TRAMPOLINE;
            !pseudo && !trampoline
        });
        syms.reloc_ref = match (text_address, stext) {
            (Some(a), _) => Some(("_text", a)),
            (None, Some(a)) => Some(("_stext", a)),
            (None, None) => None,
        };
        syms.anchors = [("_text", text_address), ("_stext", stext)]
            .into_iter()
            .filter_map(|(n, a)| Some((n, a?)))
            .collect();
        Ok(syms)
    }

    /// Reads a kallsyms file (`.gz` files are decompressed) and loads its symbols.
    /// A regular file only, of at most [`KALLSYMS_CAP`] bytes of text.
    /// A parse error quotes nothing of a file reached through a symbolic link.
    pub fn from_kallsyms_file(path: &Path) -> Result<Self, SymbolError> {
        let text = read_kallsyms_text(path)?;
        Self::from_kallsyms_text(&text, &path.display().to_string()).map_err(|e| match e {
            SymbolError::Parse(p) => SymbolError::Parse(unquoted(p, through_link(path))),
            e => e,
        })
    }

    /// Core-kernel symbols from an ELF vmlinux, relocated by the KASLR offset (kallsyms
    /// `_text` minus the ELF's `_text`), plus the module symbols of `kallsyms`. Refuses an
    /// ELF whose GNU build-id differs from `running_build_id` (when given) unless `force`.
    pub fn from_vmlinux(
        elf: &Path,
        kallsyms: &KernelSymbols,
        running_build_id: Option<&[u8]>,
        force: bool,
    ) -> Result<Self, SymbolError> {
        let data = super::elf::map_file(elf)?;
        let file = parse_elf(elf, &data)?;
        if let (Some(running), false) = (running_build_id, force) {
            match file.build_id().ok().flatten() {
                Some(id) if id == running => {}
                Some(id) => {
                    return Err(SymbolError::BuildIdMismatch {
                        path: elf.to_path_buf(),
                        file_id: hex(id),
                        running_id: hex(running),
                    })
                }
                None => {
                    return Err(SymbolError::MissingBuildId {
                        path: elf.to_path_buf(),
                        running_id: hex(running),
                    })
                }
            }
        }
        if file.symbols().next().is_none() {
            return Err(SymbolError::NoElfSymbols {
                path: elf.to_path_buf(),
            });
        }
        // As perf: the offset is measured at `_text`, or `_stext` when kallsyms lacks it.
        let (reloc_name, running_text) = kallsyms.reloc_ref.ok_or_else(|| SymbolError::MissingSymbol {
            origin: kallsyms.origin.clone(),
            symbol: "_text",
            hint: "pass the running kernel's /proc/kallsyms",
        })?;
        let elf_text = file
            .symbols()
            .find(|s| s.name() == Ok(reloc_name) && s.section() != SymbolSection::Undefined)
            .map(|s| s.address())
            .ok_or_else(|| SymbolError::MissingSymbol {
                origin: elf.display().to_string(),
                symbol: reloc_name,
                hint: "is this a kernel image with its symbol table?",
            })?;
        let offset = running_text.wrapping_sub(elf_text);

        let mut b = Builder::default();
        let mut names_read = Vec::new();
        let names = code_symbols(&file, false, |sym| names_read.push(sym));
        for sym in names_read {
            // A name that is not NUL-terminated UTF-8 names nothing.
            let Some(name) = names.as_ref().and_then(|n| name_at(&data, sym.name_at, n.end)) else {
                continue;
            };
            let start = sym.start.wrapping_add(offset);
            b.push(start, start.wrapping_add(sym.size), sym.binding, name, None, true);
        }
        if b.candidates.is_empty() {
            return Err(SymbolError::NoElfSymbols {
                path: elf.to_path_buf(),
            });
        }
        b.fix_up(false);
        // Module symbols keep the ends perf gave them in kallsyms.
        for (i, e) in kallsyms.entries.iter().enumerate() {
            if e.module != CORE {
                let name = kallsyms.name_of(e);
                let module = kallsyms.modules[e.module as usize].as_str();
                let start = kallsyms.starts[i];
                b.push(start, e.end, Binding::Global, name, Some(module), e.text);
            }
        }
        sort_by_start(&mut b.candidates);
        let core_range = kallsyms.core_range.clone();
        let mut syms = Self::finish(b, core_range, elf.display().to_string(), |_, _| true);
        syms.reloc_ref = kallsyms.reloc_ref;
        syms.anchors = kallsyms.anchors.clone();
        syms.kaslr_offset = Some(offset);
        syms.from_kallsyms = kallsyms.origin.clone();
        Ok(syms)
    }

    /// Packs the kept candidates (already sorted, one per address) into the lookup form.
    pub(super) fn finish(
        b: Builder<'_>,
        core_range: Option<Range<u64>>,
        origin: String,
        keep: impl Fn(&Builder<'_>, &Candidate) -> bool,
    ) -> Self {
        let mut s = KernelSymbols {
            starts: Vec::with_capacity(b.candidates.len()),
            entries: Vec::with_capacity(b.candidates.len()),
            names: String::new(),
            modules: b.modules.clone(),
            core_range,
            reloc_ref: None,
            anchors: Vec::new(),
            kaslr_offset: None,
            text_count: 0,
            module_text_count: 0,
            origin,
            from_kallsyms: String::new(),
        };
        for c in b.candidates.iter().filter(|c| keep(&b, c)) {
            let name = s.names.len() as u32;
            s.names.push_str(b.name(c));
            s.starts.push(c.start);
            s.entries.push(Entry {
                end: c.end,
                name,
                name_len: c.name_len,
                module: c.module,
                text: c.text,
            });
            if c.text {
                s.text_count += 1;
                if c.module != CORE {
                    s.module_text_count += 1;
                }
            }
        }
        s.names.shrink_to_fit();
        s
    }

    fn name_of(&self, e: &Entry) -> &str {
        &self.names[e.name as usize..(e.name + e.name_len) as usize]
    }

    /// The function containing `pc`, and its module (`None` for the core kernel); `None`
    /// when perf would print `[unknown]`, but for code the kernel made ([`JIT_FUNCTION`]):
    /// a PC of the module area that no symbol covers (classic BPF compiled by the JIT has
    /// no symbol anywhere, not even for perf).
    pub fn resolve(&self, pc: u64) -> Option<(&str, Option<&str>)> {
        self.symbol_at(pc)
            .or_else(|| self.in_module_area(pc).then_some((JIT_FUNCTION, None)))
    }

    /// Whether `pc` is in the module area (where the kernel also places its JIT code),
    /// outside the core kernel: x86_64's, `[0xffffffffa0000000, 0xffffffffff000000)`, when
    /// the core kernel is where x86_64 maps it. Other architectures keep `[unknown]`.
    pub fn in_module_area(&self, pc: u64) -> bool {
        let x86_64_kernel = self
            .core_range
            .as_ref()
            .is_some_and(|r| (X86_64_KERNEL_TEXT..X86_64_KASLR_MODULES).contains(&r.start));
        x86_64_kernel && X86_64_MODULES.contains(&pc) && !self.core_range.as_ref().is_some_and(|r| r.contains(&pc))
    }

    /// The kept symbol containing `pc` (see [`resolve`](Self::resolve)).
    fn symbol_at(&self, pc: u64) -> Option<(&str, Option<&str>)> {
        let i = self.starts.partition_point(|&s| s <= pc).checked_sub(1)?;
        let e = &self.entries[i];
        if pc >= e.end {
            return None;
        }
        if e.module == CORE {
            if let Some(r) = &self.core_range {
                if !r.contains(&pc) {
                    return None;
                }
            }
            return Some((self.name_of(e), None));
        }
        Some((self.name_of(e), Some(self.modules[e.module as usize].as_str())))
    }

    /// The start and end (exclusive) of the symbol named `name` (core kernel first, then
    /// modules), as used by [`resolve`](Self::resolve); `None` if no kept symbol has it.
    pub fn range_of(&self, name: &str) -> Option<Range<u64>> {
        self.entries
            .iter()
            .enumerate()
            .filter(|(_, e)| self.name_of(e) == name)
            .min_by_key(|(_, e)| e.module != CORE)
            .map(|(i, e)| self.starts[i]..e.end)
    }

    /// Moves the core kernel's symbols to where a recording found the kernel: there the
    /// symbol `anchor` (`_text`, which perf's `[kernel.kallsyms]_text` mapping names) was
    /// at `recorded`. A copy of kallsyms from another boot lists the kernel at another
    /// KASLR offset; perf moves its symbols the same way (`kallsyms__delta`). Kernel
    /// modules' symbols stay: modules are placed apart from the kernel, and a recording
    /// does not say where that boot put them (perf does not move them either). Returns how
    /// far the symbols moved, or `None` when they do not list `anchor`.
    pub fn relocate(&mut self, anchor: &str, recorded: u64) -> Option<u64> {
        let shift = self.shift_to(anchor, recorded)?;
        if shift == 0 {
            return Some(0);
        }
        let moved = |a: u64| a.wrapping_add(shift);
        let mut order: Vec<(u64, Entry)> = self
            .starts
            .iter()
            .zip(&self.entries)
            .map(|(&start, &e)| match e.module {
                CORE => (moved(start), Entry { end: moved(e.end), ..e }),
                _ => (start, e),
            })
            .collect();
        // Stable: symbols at one address keep their order.
        order.sort_by_key(|(start, _)| *start);
        (self.starts, self.entries) = order.into_iter().unzip();
        if let Some(r) = &mut self.core_range {
            // An open end (no `_etext` or `_edata` listed) stays open.
            let end = if r.end == u64::MAX { r.end } else { moved(r.end) };
            *r = moved(r.start)..end;
        }
        if let Some((_, a)) = &mut self.reloc_ref {
            *a = moved(*a);
        }
        for (_, a) in &mut self.anchors {
            *a = moved(*a);
        }
        Some(shift)
    }

    /// How far [`relocate`](Self::relocate) would move the core kernel's symbols (modulo
    /// 2^64), without moving them.
    pub fn shift_to(&self, anchor: &str, recorded: u64) -> Option<u64> {
        let listed = self.anchors.iter().find(|(n, _)| *n == anchor)?.1;
        Some(recorded.wrapping_sub(listed))
    }

    /// The kernel image the core kernel's symbols came from, when an ELF (a vmlinux).
    pub fn image(&self) -> Option<&str> {
        self.kaslr_offset.is_some().then_some(self.origin.as_str())
    }

    /// The KASLR offset applied to the vmlinux symbols (`None` for kallsyms symbols).
    pub fn kaslr_offset(&self) -> Option<u64> {
        self.kaslr_offset
    }

    /// The number of text symbols kept (after dropping aliases).
    pub fn text_symbol_count(&self) -> usize {
        self.text_count
    }

    /// Human description of where the symbols came from, e.g.
    /// "/proc/kallsyms (45123 text symbols)".
    pub fn describe(&self) -> String {
        let core = self.text_count - self.module_text_count;
        let modules = self
            .entries
            .iter()
            .filter(|e| e.module != CORE && e.text)
            .map(|e| e.module)
            .collect::<std::collections::HashSet<_>>()
            .len();
        match self.kaslr_offset {
            None if modules == 0 => format!("{} ({core} text symbols)", self.origin),
            None => format!(
                "{} ({} text symbols, {} of them in {modules} modules)",
                self.origin, self.text_count, self.module_text_count
            ),
            Some(offset) => format!(
                "{} ({core} text symbols, KASLR offset {:#x}) + modules from {} \
                 ({} text symbols in {modules} modules)",
                self.origin, offset as i64, self.from_kallsyms, self.module_text_count
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fmt::Write as _;

    fn load(text: &str) -> KernelSymbols {
        KernelSymbols::from_kallsyms_text(text, "test").unwrap()
    }

    #[test]
    fn a_symbol_ends_where_the_next_kept_one_starts() {
        let k = load(
            "ffffffff81000000 T _text\n\
             ffffffff81000100 t first\n\
             ffffffff81000180 r some_rodata\n\
             ffffffff81000200 T second\n\
             ffffffff81000300 T _etext\n",
        );
        // `r` is not kept, so `first` runs up to `second`.
        assert_eq!(k.resolve(0xffffffff810001ff), Some(("first", None)));
        assert_eq!(k.resolve(0xffffffff81000200), Some(("second", None)));
        assert_eq!(k.range_of("first"), Some(0xffffffff81000100..0xffffffff81000200));
        assert_eq!(k.text_symbol_count(), 4);
    }

    #[test]
    fn the_kernel_map_ends_at_etext() {
        let k = load(
            "ffffffff81000000 T _text\n\
             ffffffff81000100 T last_fn\n\
             ffffffff81000200 T _etext\n\
             ffffffff82000000 D __start_rodata\n",
        );
        // `_etext` itself spans up to the data symbol, but perf's kernel map stops there.
        assert_eq!(k.range_of("_etext"), Some(0xffffffff81000200..0xffffffff82000000));
        assert_eq!(k.resolve(0xffffffff810001ff), Some(("last_fn", None)));
        assert_eq!(k.resolve(0xffffffff81000200), None);
        assert_eq!(k.resolve(0xffffffff80ffffff), None);
    }

    #[test]
    fn aliases_keep_the_last_listed_because_only_it_has_a_length() {
        // As perf: ends are fixed before aliases are dropped, so only the last alias at an
        // address has a non-zero length and it wins whatever its name or binding.
        let k = load(
            "ffffffff81000000 T srso_alias_untrain_ret\n\
             ffffffff81000000 T _stext\n\
             ffffffff81000000 T _text\n\
             ffffffff81000000 T __pi__text\n\
             ffffffff81000010 T __entry_text_start\n\
             ffffffff81000020 t __pfx_run_init_process\n\
             ffffffff81000020 T __split_text_end\n\
             ffffffff81000030 T run_init_process\n",
        );
        assert_eq!(k.resolve(0xffffffff81000005), Some(("__pi__text", None)));
        assert_eq!(k.resolve(0xffffffff81000025), Some(("__split_text_end", None)));
        assert_eq!(k.range_of("_text"), None);
        // `_text` still places the kernel even though its name lost.
        assert_eq!(k.reloc_ref, Some(("_text", 0xffffffff81000000)));
    }

    #[test]
    fn memcpy_is_reported_under_its_last_listed_name() {
        // Lines from a 6.18 x86_64 kernel; perf 6.1 names PCs here `__pi_memcpy`.
        let k = load(
            "ffffffff81000000 T _text\n\
             ffffffff82261890 T __pfx_memcpy\n\
             ffffffff822618a0 T memcpy\n\
             ffffffff822618a0 T __memcpy\n\
             ffffffff822618a0 T __pi_memcpy\n\
             ffffffff822618b0 t __pfx_memcpy_orig\n\
             ffffffff82277288 T _etext\n",
        );
        assert_eq!(k.resolve(0xffffffff822618aa), Some(("__pi_memcpy", None)));
        assert_eq!(k.resolve(0xffffffff8226189f), Some(("__pfx_memcpy", None)));
    }

    #[test]
    fn another_boots_symbols_move_to_where_the_recording_found_the_kernel() {
        let text = "ffffffff85000000 T _text\n\
                    ffffffff85000100 T core_fn\n\
                    ffffffff85000200 T _etext\n\
                    ffffffffc0a01000 t ext4_a\t[ext4]\n";
        let mut k = load(text);
        // Recorded with the kernel 0x4000000 lower: core symbols follow, modules stay.
        assert_eq!(
            k.relocate("_text", 0xffffffff81000000),
            Some(0u64.wrapping_sub(0x4000000))
        );
        assert_eq!(k.resolve(0xffffffff81000150), Some(("core_fn", None)));
        assert_eq!(k.resolve(0xffffffff85000150), None);
        assert_eq!(
            k.resolve(0xffffffff81000200),
            None,
            "the kernel map ends at _etext, moved too"
        );
        assert_eq!(k.resolve(0xffffffffc0a01010), Some(("ext4_a", Some("ext4"))));
        assert_eq!(k.reloc_ref, Some(("_text", 0xffffffff81000000)));
        // Placed again at the same address: nothing moves.
        assert_eq!(k.relocate("_text", 0xffffffff81000000), Some(0));
        // Moved above the modules' addresses, the order of lookups still holds.
        assert!(k.relocate("_text", 0xffffffffd0000000).is_some());
        assert_eq!(k.resolve(0xffffffffd0000150), Some(("core_fn", None)));
        assert_eq!(k.resolve(0xffffffffc0a01010), Some(("ext4_a", Some("ext4"))));
        assert_eq!(k.relocate("_sdata", 0), None);
    }

    #[test]
    fn padding_symbols_are_functions_of_their_own() {
        let k = load(
            "ffffffff81000000 T _text\n\
             ffffffff81001000 T __pfx_do_thing\n\
             ffffffff81001010 T do_thing\n",
        );
        assert_eq!(k.resolve(0xffffffff8100100f), Some(("__pfx_do_thing", None)));
        assert_eq!(k.resolve(0xffffffff81001010), Some(("do_thing", None)));
    }

    #[test]
    fn module_symbols_carry_their_module_and_end_a_page_on() {
        let k = load(
            "ffffffff81000000 T _text\n\
             ffffffff81000100 T core_fn\n\
             ffffffff81000200 T _etext\n\
             ffffffffc0a01000 t ext4_a\t[ext4]\n\
             ffffffffc0a01800 t ext4_b\t[ext4]\n\
             ffffffffc0a03000 t xfs_a\t[xfs]\n\
             ffffffffc0a03040 d xfs_data\t[xfs]\n",
        );
        assert_eq!(k.resolve(0xffffffffc0a01000), Some(("ext4_a", Some("ext4"))));
        // Consecutive modules: the end is the next module's first symbol.
        assert_eq!(k.resolve(0xffffffffc0a02fff), Some(("ext4_b", Some("ext4"))));
        assert_eq!(k.resolve(0xffffffffc0a03000), Some(("xfs_a", Some("xfs"))));
        // The last symbol of all ends one page past its own page.
        assert_eq!(k.range_of("xfs_data"), Some(0xffffffffc0a03040..0xffffffffc0a05000));
        // The core symbol before the first module ends a page past its own.
        let core_end = k.range_of("_etext").unwrap().end;
        assert_eq!(core_end, 0xffffffff81002000);
        // Before the first module, in the module area: the kernel's JIT code (issue 30).
        assert_eq!(k.resolve(0xffffffffc0a00fff), Some((JIT_FUNCTION, None)));
        assert!(k.describe().contains("2 modules"), "{}", k.describe());
    }

    #[test]
    fn pseudo_modules_and_the_entry_trampoline_are_unknown() {
        let k = load(
            "ffffffff81000000 T _text\n\
             ffffffff81000100 T _etext\n\
             fffffe0000001000 T __entry_SYSCALL_64_trampoline\n\
             ffffffffa0001000 t bpf_prog_6deef7357e7b4530_sd_fw_ingress\t[bpf]\n\
             ffffffffc0201000 t ftrace_trampoline\t[__builtin__ftrace]\n",
        );
        // perf drops the trampoline's symbol; its code is the kernel's own JIT (issue 30).
        assert_eq!(k.resolve(0xffffffffc0201010), Some((JIT_FUNCTION, None)));
        assert_eq!(k.resolve(0xfffffe0000001000), None);
        assert_eq!(
            k.resolve(0xffffffffa0001010),
            Some(("bpf_prog_6deef7357e7b4530_sd_fw_ingress", Some("bpf")))
        );
    }

    #[test]
    fn issue_30_module_area_code_without_symbol_is_jit_code() {
        let k = load(
            "ffffffff81000000 T _text\n\
             ffffffff81000100 T core_fn\n\
             ffffffff81000200 T _etext\n\
             ffffffffc0a01000 t ext4_a\t[ext4]\n",
        );
        // A seccomp filter's JIT image, as perf's `[unknown] [k] 0xffffffffc00273a9`.
        assert_eq!(k.resolve(0xffffffffc00273a9), Some((JIT_FUNCTION, None)));
        assert_eq!(k.resolve(0xffffffffc0a01010), Some(("ext4_a", Some("ext4"))));
        // The core kernel's gaps, the entry area and the user half stay unknown.
        assert_eq!(k.resolve(0xffffffff81000200), None);
        assert_eq!(k.resolve(0xfffffe0000001000), None);
        assert!(!k.in_module_area(0x7f0000001000));
        // A kernel mapped elsewhere (another architecture): no module area is assumed.
        let arm = load("ffff800080000000 T _text\nffff800080000100 T f\nffff800080000200 T _etext\n");
        assert_eq!(arm.resolve(0xffffffffc00273a9), None);
    }

    #[test]
    fn data_only_hidden_and_malformed_inputs_are_errors() {
        let err = KernelSymbols::from_kallsyms_text("ffffffff82000000 D x\n", "f").unwrap_err();
        assert!(matches!(err, SymbolError::NoTextSymbols { .. }), "{err}");
        let err =
            KernelSymbols::from_kallsyms_text("0000000000000000 T _text\n0000000000000000 t a\n", "/proc/kallsyms")
                .unwrap_err();
        assert!(err.to_string().contains("kptr_restrict"), "{err}");
        let err = KernelSymbols::from_kallsyms_text("ffffffff81000000 T _text\nnot kallsyms\n", "k").unwrap_err();
        let msg = err.to_string();
        assert!(msg.starts_with("k:2:1: expected a hexadecimal address"), "{msg}");
    }

    #[test]
    fn every_address_of_a_large_table_resolves() {
        let mut text = String::from("ffffffff81000000 T _text\n");
        for i in 0..100_000u64 {
            let _ = writeln!(text, "{:x} t f{i}", 0xffffffff81001000 + i * 0x40);
        }
        let k = load(&text);
        let mut hits = 0usize;
        for i in 0..500_000u64 {
            hits += usize::from(k.resolve(0xffffffff81001000 + (i * 7919) % 6_400_000).is_some());
        }
        assert_eq!(hits, 500_000);
    }
}
