//! The symbols of a user DSO of a recording: the recorded build's ELF file (a separate
//! debug file, perf's build-id cache, or the file itself), or a JIT's perf map; names
//! demangled as perf prints them.

use super::{buildid_dir, hex, load_perf_map, ElfSymbols, RangeNames};
use std::borrow::Cow;
use std::path::{Path, PathBuf};

/// Where a DSO's function names come from.
pub enum UserSymbols {
    /// An ELF file, looked up by file offset.
    Elf(Box<ElfSymbols>),
    /// A JIT's `/tmp/perf-PID.map`, looked up by address.
    PerfMap(RangeNames),
}

/// Why a DSO's user samples stay `[unknown]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UserSymbolsMissing {
    /// No file: neither in perf's build-id cache nor at its path.
    NoFile,
    /// The file at its path is another build than the one recorded.
    OtherBuild,
}

/// A user DSO's symbols: a JIT's perf map, or an ELF file's.
pub fn load_user_symbols(path: &[u8], build_id: Option<&[u8]>) -> Result<UserSymbols, UserSymbolsMissing> {
    use std::os::unix::ffi::OsStrExt;
    let local = Path::new(std::ffi::OsStr::from_bytes(path));
    if path.starts_with(b"/tmp/perf-") && path.ends_with(b".map") {
        return load_perf_map(local)
            .map(UserSymbols::PerfMap)
            .ok_or(UserSymbolsMissing::NoFile);
    }
    if super::vdso::is_vdso(path) {
        return super::vdso::vdso_symbols(path, build_id).map(|s| UserSymbols::Elf(Box::new(s)));
    }
    load_elf_symbols(local, build_id).map(|s| UserSymbols::Elf(Box::new(s)))
}

/// An ELF DSO's symbols, from the first of these files that has a `.symtab` (else the
/// first with a `.dynsym`), as perf chooses: the separate debug file
/// (`/usr/lib/debug/.build-id/ab/cdef….debug`), perf's build-id cache
/// (`~/.debug/.build-id/ab/cdef…/elf`), the file at its path. A file whose build-id is not
/// the recorded one is never used; without a recorded build-id, the file at its path gives
/// it.
fn load_elf_symbols(local: &Path, build_id: Option<&[u8]>) -> Result<ElfSymbols, UserSymbolsMissing> {
    let recorded = build_id.filter(|id| !id.is_empty());
    // A recording that names no build-id for the file (pipe mode writes none): the file at
    // its path is taken for the recorded one, as perf takes it, and its build-id finds
    // its separate debug file. It is read once, here, not again below.
    let mut local_syms = match recorded {
        None if local.is_absolute() => Some(ElfSymbols::from_file(local)),
        _ => None,
    };
    let on_disk = local_syms
        .as_ref()
        .and_then(|s| s.as_ref().ok()?.build_id().map(<[u8]>::to_vec));
    let build_id = recorded.or(on_disk.as_deref());
    let mut candidates = Vec::new();
    if let Some(id) = build_id {
        let h = hex(id);
        candidates.push(PathBuf::from(format!(
            "/usr/lib/debug/.build-id/{}/{}.debug",
            &h[..2],
            &h[2..]
        )));
        if let Some(d) = buildid_dir() {
            candidates.push(d.join(".build-id").join(&h[..2]).join(&h[2..]).join("elf"));
        }
    }
    if local.is_absolute() {
        candidates.push(local.to_path_buf());
    }
    let mut why = UserSymbolsMissing::NoFile;
    let mut found: Vec<ElfSymbols> = Vec::new();
    let full = |s: &ElfSymbols| s.from_symtab() && !s.is_empty();
    for p in candidates {
        let read = match local_syms.take() {
            Some(loaded) if p == local => loaded,
            other => {
                local_syms = other;
                ElfSymbols::from_file(&p)
            }
        };
        let Ok(syms) = read else {
            continue;
        };
        match (build_id, syms.build_id()) {
            (Some(want), Some(have)) if want != have => why = UserSymbolsMissing::OtherBuild,
            _ => found.push(syms),
        }
        // Enough once there is a .symtab and a file that holds the code.
        if found.iter().any(full) && found.iter().any(ElfSymbols::maps_code) {
            break;
        }
    }
    let best = found
        .iter()
        .position(full)
        .or_else(|| found.iter().position(|s| !s.is_empty()))
        .ok_or(why)?;
    let mut syms = found.swap_remove(best);
    if !syms.maps_code() {
        let code = found.iter().find(|s| s.maps_code()).ok_or(why)?;
        syms.use_segments_of(code);
    }
    Ok(syms)
}

/// A symbol name as perf prints it: C++ and Rust names demangled, without parameters and
/// without Rust's hash.
pub fn demangle(name: &str) -> Option<String> {
    // LLVM's `.llvm.NNNN` suffix on local copies is not part of the mangled name.
    let base = name.find(".llvm.").map_or(name, |at| &name[..at]);
    if base.starts_with("_R") || (base.starts_with("_ZN") && is_legacy_rust(base)) {
        let d = rustc_demangle::try_demangle(base).ok()?;
        return Some(format!("{d:#}"));
    }
    if base.starts_with("_Z") {
        let sym = cpp_demangle::Symbol::new(base).ok()?;
        let opts = cpp_demangle::DemangleOptions::new().no_params().no_return_type();
        // An empty template parameter pack prints as `, >`; perf prints `>`.
        return sym.demangle(&opts).ok().map(|d| d.replace(", >", ">"));
    }
    None
}

/// A function's name as perf report prints it from a symbol table, from a demangled name
/// that says more: C++ parameters, the qualifiers after them and GCC's clone suffixes
/// (`ns::work(std::vector<int> const&, unsigned long) const [clone .isra.0]` →
/// `ns::work`), which `perf script -v` and perf builds that demangle with libstdc++ print,
/// and a legacy Rust name's hash (`rs::spin::h5a1d81fd52a4894a` → `rs::spin`). Other
/// names (C, the kernel's) are returned as they are.
///
/// A legacy Rust name printed with its hash by a demangler that knows C++ only keeps
/// Rust's escapes too (`_$LT$impl$u20$core..cmp..PartialOrd$u20$for$u20$usize$GT$::lt`):
/// they are decoded as rustc-demangle decodes them (`<impl core::cmp::PartialOrd for
/// usize>::lt`), the name the symbol table gives.
pub fn function_name(name: &str) -> Cow<'_, str> {
    // Most names end otherwise, and perf's own (`[unknown]`) start with a bracket: they are
    // returned at once (this runs for every frame).
    let plain = !name.ends_with([')', ']', 't', 'e', '&']) && !name.ends_with(|c: char| c.is_ascii_hexdigit());
    if plain || name.starts_with('[') {
        return Cow::Borrowed(name);
    }
    if let Some(base) = without_rust_hash(name) {
        return unescape_legacy_rust(base);
    }
    Cow::Borrowed(without_cpp_suffixes(name))
}

/// [`function_name`] of a name that is no Rust name with its hash.
fn without_cpp_suffixes(name: &str) -> &str {
    let mut n = name;
    while let Some(at) = n.strip_suffix(']').and_then(|b| b.rfind(" [clone .")) {
        n = &n[..at];
    }
    let mut q = n;
    while let Some(base) = [" const", " volatile", " &&", " &", " noexcept"]
        .iter()
        .find_map(|s| q.strip_suffix(s))
    {
        q = base;
    }
    if !q.ends_with(')') {
        return n;
    }
    // The parameter list is the parenthesis that closes last, found by depth: parameters
    // hold parentheses of their own (`f(void (*)(int))`).
    let mut depth = 0usize;
    for (at, c) in q.char_indices().rev() {
        match c {
            ')' => depth += 1,
            '(' => {
                depth -= 1;
                if depth == 0 {
                    // `operator()` with no parameter list printed: the name itself.
                    return if at == 0 || q[..at].ends_with("operator") {
                        n
                    } else {
                        &q[..at]
                    };
                }
            }
            _ => {}
        }
    }
    n
}

/// The escapes of a legacy Rust path, `::`-separated, decoded as rustc-demangle decodes
/// them: `$LT$` `<`, `$GT$` `>`, `$RF$` `&`, `$BP$` `*`, `$SP$` `@`, `$LP$` `(`, `$RP$` `)`,
/// `$C$` `,`, `$uXX$` the character of hex code XX, `..` `::`, and a component's leading
/// `_` before a `$` dropped. A name without escapes is returned as it is; one with an
/// escape not among these is too (it is no Rust name).
fn unescape_legacy_rust(path: &str) -> Cow<'_, str> {
    if !path.contains('$') && !path.contains("..") {
        return Cow::Borrowed(path);
    }
    let mut out = String::with_capacity(path.len());
    for (i, part) in path.split("::").enumerate() {
        if i > 0 {
            out.push_str("::");
        }
        let mut rest = part.strip_prefix('_').filter(|r| r.starts_with('$')).unwrap_or(part);
        while !rest.is_empty() {
            if let Some(r) = rest.strip_prefix("..") {
                out.push_str("::");
                rest = r;
            } else if let Some(r) = rest.strip_prefix('$') {
                let Some(end) = r.find('$') else {
                    return Cow::Borrowed(path);
                };
                let c = match &r[..end] {
                    "SP" => '@',
                    "BP" => '*',
                    "RF" => '&',
                    "LT" => '<',
                    "GT" => '>',
                    "LP" => '(',
                    "RP" => ')',
                    "C" => ',',
                    e => match e
                        .strip_prefix('u')
                        .and_then(|h| u32::from_str_radix(h, 16).ok())
                        .and_then(char::from_u32)
                    {
                        Some(c) => c,
                        None => return Cow::Borrowed(path),
                    },
                };
                out.push(c);
                rest = &r[end + 1..];
            } else {
                let n = rest.find(['$', '.']).map_or(rest.len(), |n| n.max(1));
                out.push_str(&rest[..n]);
                rest = &rest[n..];
            }
        }
    }
    Cow::Owned(out)
}

/// A legacy Rust name as some demanglers print it, with its hash as a last component
/// (`rs::spin::h5a1d81fd52a4894a`): the name without it.
fn without_rust_hash(name: &str) -> Option<&str> {
    let at = name.len().checked_sub(19)?;
    let (base, hash) = (name.get(..at)?, name.get(at..)?);
    let digits = hash.strip_prefix("::h")?;
    (!base.is_empty() && digits.bytes().all(|b| b.is_ascii_hexdigit())).then_some(base)
}

/// A legacy Rust name ends in a 16-digit hash component: `…17h0123456789abcdefE`.
fn is_legacy_rust(name: &str) -> bool {
    name.strip_suffix('E')
        .and_then(|n| n.get(n.len().saturating_sub(19)..))
        .and_then(|h| h.strip_prefix("17h"))
        .is_some_and(|h| h.bytes().all(|b| b.is_ascii_hexdigit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_demangled_as_perf_prints_them() {
        // C++: no parameters, no return type; an empty parameter pack prints nothing.
        assert_eq!(
            demangle("_ZN4llvm15InstCombinePass3runERNS_8FunctionE").as_deref(),
            Some("llvm::InstCombinePass::run")
        );
        assert_eq!(demangle("_ZN3foo3barIiJEEEvv").as_deref(), Some("foo::bar<int>"));
        // Rust, legacy with its hash and v0, without the hash; an LLVM clone suffix dropped.
        assert_eq!(
            demangle("_ZN4core3fmt5write17h0123456789abcdefE.llvm.123").as_deref(),
            Some("core::fmt::write")
        );
        assert_eq!(demangle("_RNvCs1234_7mycrate3foo").as_deref(), Some("mycrate::foo"));
        // C and anything else stay as they are.
        assert_eq!(demangle("__GI___libc_write"), None);
        assert_eq!(demangle("_Zgarbage"), None);
    }

    #[test]
    fn names_from_text_lose_what_perf_report_leaves_out() {
        // As `perf script -v` prints them (perf 6.1, libiberty).
        assert_eq!(
            function_name("ns::work(std::vector<int, std::allocator<int> > const&, unsigned long)"),
            "ns::work"
        );
        assert_eq!(
            function_name("ns::Box<unsigned long>::spin(unsigned long, int) const"),
            "ns::Box<unsigned long>::spin"
        );
        assert_eq!(function_name("foo(int) [clone .isra.0] [clone .cold]"), "foo");
        assert_eq!(function_name("f(void (*)(int), char) volatile &&"), "f");
        assert_eq!(
            function_name("main::{lambda(int)#1}::operator()(int) const"),
            "main::{lambda(int)#1}::operator()"
        );
        assert_eq!(
            function_name("(anonymous namespace)::g(long)"),
            "(anonymous namespace)::g"
        );
        assert_eq!(function_name("Foo::operator bool() const"), "Foo::operator bool");
        // Already as perf report prints them: unchanged.
        for same in [
            "Foo::operator()",
            "main::{lambda(int)#1}::operator()",
            "std::vector<int, std::allocator<int> >::push_back",
            "rs::inner::generic::<u32>",
            "do_syscall_64",
            "finish_task_switch.isra.0",
            "[unknown]",
            "(unbalanced",
            "unbalanced)",
        ] {
            assert_eq!(function_name(same), same);
        }
        // A legacy Rust name's hash, as demanglers built on libiberty's print it.
        assert_eq!(function_name("rs::spin_rust::h5a1d81fd52a4894a"), "rs::spin_rust");
        assert_eq!(function_name("x::h5a1d81fd52a4894"), "x::h5a1d81fd52a4894");
        assert_eq!(function_name("::h5a1d81fd52a4894a"), "::h5a1d81fd52a4894a");
    }

    #[test]
    fn legacy_rust_escapes_are_decoded_as_the_symbol_table_names_them_issue_30() {
        let mangled =
            "_ZN4core3cmp5impls57_$LT$impl$u20$core..cmp..PartialOrd$u20$for$u20$usize$GT$2lt17h0123456789abcdefE";
        let from_table = demangle(mangled).unwrap();
        assert_eq!(
            from_table,
            "core::cmp::impls::<impl core::cmp::PartialOrd for usize>::lt"
        );
        // As a demangler of C++ only prints it, hash and all (perf script of some builds).
        let text = "core::cmp::impls::_$LT$impl$u20$core..cmp..PartialOrd$u20$for$u20$usize$GT$::lt::h0123456789abcdef";
        assert_eq!(function_name(text), from_table);
        assert_eq!(
            function_name("_$LT$$RF$T$u20$as$u20$core..fmt..Debug$GT$::fmt::h0123456789abcdef"),
            "<&T as core::fmt::Debug>::fmt"
        );
        // A `$` that is no escape: left as it is.
        assert_eq!(function_name("a$b::c::h0123456789abcdef"), "a$b::c");
        assert_eq!(function_name("a::$zz$::h0123456789abcdef"), "a::$zz$");
    }

    #[test]
    fn legacy_rust_needs_its_hash() {
        assert!(is_legacy_rust("_ZN4core3fmt5write17h0123456789abcdefE"));
        assert!(!is_legacy_rust("_ZN4llvm15InstCombinePass3runERNS_8FunctionE"));
        assert!(!is_legacy_rust("_ZN4core3fmt5write17h0123456789abcdxyE"));
    }
}
