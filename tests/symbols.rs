//! Kernel symbolization: agreement with `perf script` on a live recording, and the ELF path
//! (build-id, KASLR offset, errors) on small programs built here with gcc.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::util::perf_usable;
use upcmp::host::{build_id_from_notes, running_kernel_build_id};
use upcmp::symbols::{elf_build_id, find_vmlinux_in, ElfSymbols, FunctionAt, KernelSymbols, SymbolError};

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("running {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

/// A module name as perf's dso shows it (`[ext4]`, or a path to `ext4.ko.xz`), in the
/// spelling kallsyms uses.
fn module_of_dso(dso: &str) -> Option<String> {
    if dso == "[kernel.kallsyms]" || dso.starts_with("[kernel.") {
        return None;
    }
    let name = if let Some(inner) = dso.strip_prefix('[').and_then(|d| d.strip_suffix(']')) {
        inner.to_string()
    } else {
        let base = Path::new(dso).file_name()?.to_str()?;
        base.split(".ko").next()?.to_string()
    };
    Some(name.replace('-', "_"))
}

/// perf and this resolver give every sampled kernel PC the same function and module.
#[test]
fn kernel_pcs_resolve_like_perf_script() {
    if !perf_usable(true) {
        return;
    }
    let _perf = crate::util::perf_lock();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("perf.data");
    // Run in the temp dir so perf picks up no stray ./vmlinux; -N keeps ~/.debug untouched.
    run(Command::new("perf")
        .current_dir(dir.path())
        .args(["record", "-a", "-N", "-q", "-F", "999", "-o"])
        .arg(&data)
        .args([
            "--",
            "sh",
            "-c",
            // Syscall-heavy, then memcpy/memset-heavy: the kernel lists those under three
            // names at one address, which exercises perf's choice among aliases.
            "for i in $(seq 2000); do cat /proc/self/stat >/dev/null; done; \
             ls -lR /usr/share >/dev/null 2>&1; true",
        ]));
    // Symbols read right after recording: /proc/kallsyms does not change while no module
    // is loaded, and --kallsyms makes perf use that same file rather than any vmlinux.
    let ours = KernelSymbols::from_kallsyms_file(Path::new("/proc/kallsyms")).unwrap();
    let script = run(Command::new("perf")
        .current_dir(dir.path())
        .args(["script", "--kallsyms", "/proc/kallsyms", "-F", "ip,sym,dso", "-i"])
        .arg(&data));

    // Addresses listed under more than one text name, to report how often aliases mattered.
    let kallsyms_text = std::fs::read_to_string("/proc/kallsyms").unwrap();
    let mut names_at: BTreeMap<u64, usize> = BTreeMap::new();
    let mut address_of: BTreeMap<&str, u64> = BTreeMap::new();
    for line in kallsyms_text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if let [addr, "T" | "t" | "W" | "w", name, ..] = f.as_slice() {
            let addr = u64::from_str_radix(addr, 16).unwrap();
            *names_at.entry(addr).or_default() += 1;
            address_of.entry(name).or_insert(addr);
        }
    }
    let mut aliased = 0usize;

    let mut compared = 0usize;
    let mut unknown = 0usize;
    let mut by_dso: BTreeMap<String, usize> = BTreeMap::new();
    let mut mismatches = String::new();
    for line in script.lines() {
        // `ffffffff815fa3d8 unmap_page_range ([kernel.kallsyms])`
        let line = line.trim();
        let Some((ip, rest)) = line.split_once(char::is_whitespace) else {
            continue;
        };
        let Ok(ip) = u64::from_str_radix(ip, 16) else {
            continue;
        };
        if ip < 0xffff_8000_0000_0000 {
            continue; // user space
        }
        let (sym, dso) = rest
            .rsplit_once(" (")
            .map(|(s, d)| (s.trim(), d.trim_end_matches(')')))
            .unwrap_or_else(|| panic!("unexpected perf script line {line:?}"));
        compared += 1;
        aliased += usize::from(address_of.get(sym).is_some_and(|a| names_at[a] > 1));
        *by_dso.entry(dso.to_string()).or_default() += 1;
        let got = ours.resolve(ip);
        let agrees = match (sym, got) {
            ("[unknown]", None) => {
                unknown += 1;
                true
            }
            (_, Some((name, module))) => {
                name == sym
                    && (dso.starts_with("bpf_prog_") || module.map(|m| m.replace('-', "_")) == module_of_dso(dso))
            }
            _ => false,
        };
        if !agrees {
            let _ = writeln!(mismatches, "{ip:x}: perf {sym} ({dso}), ours {got:?}");
        }
    }
    eprintln!(
        "compared {compared} kernel PCs with perf ({unknown} unknown to both, {aliased} in \
         functions listed under several names); by dso: {by_dso:?}; symbols: {}",
        ours.describe()
    );
    assert!(mismatches.is_empty(), "disagreements with perf:\n{mismatches}");
    assert!(
        compared >= 50,
        "only {compared} kernel PCs sampled; the workload should spend seconds in the kernel"
    );
}

#[test]
fn running_kernel_build_id_matches_perf() {
    if !perf_usable(false) {
        return;
    }
    let perf = run(Command::new("perf").args(["buildid-list", "--kernel"]));
    let ours = running_kernel_build_id().map(|id| hex(&id));
    assert_eq!(ours.as_deref(), Some(perf.trim()));
}

#[test]
fn proc_kallsyms_loads_and_a_gzipped_copy_resolves_the_same() {
    let text = std::fs::read_to_string("/proc/kallsyms").unwrap();
    let live = match KernelSymbols::from_kallsyms_file(Path::new("/proc/kallsyms")) {
        Ok(k) => k,
        Err(e @ SymbolError::HiddenAddresses { .. }) => {
            eprintln!("skipped: {e}");
            return;
        }
        Err(e) => panic!("{e}"),
    };
    let described = live.describe();
    assert!(described.starts_with("/proc/kallsyms ("), "{described}");
    assert!(live.text_symbol_count() > 1000, "{described}");

    let dir = tempfile::tempdir().unwrap();
    let gz = dir.path().join("kallsyms.gz");
    let mut enc = flate2::write::GzEncoder::new(std::fs::File::create(&gz).unwrap(), flate2::Compression::fast());
    enc.write_all(text.as_bytes()).unwrap();
    enc.finish().unwrap();
    let saved = KernelSymbols::from_kallsyms_file(&gz).unwrap();
    assert_eq!(saved.text_symbol_count(), live.text_symbol_count());
    // Every listed text address resolves to a name, the same from both copies.
    let mut checked = 0;
    for line in text.lines().step_by(97) {
        let mut f = line.split_whitespace();
        let (Some(addr), Some(kind)) = (f.next(), f.next()) else {
            continue;
        };
        if !matches!(kind, "T" | "t") || line.contains('[') {
            continue;
        }
        let addr = u64::from_str_radix(addr, 16).unwrap();
        assert_eq!(live.resolve(addr), saved.resolve(addr));
        checked += 1;
    }
    assert!(checked > 100);
}

const TEST_PROGRAM: &str = r#"
/* A `_text` label at the start of this unit's code, as a kernel has. */
__asm__(".text\n.globl _text\n_text:\n");

__attribute__((noinline, used)) int alpha(int x) { return x * 3 + 1; }
__attribute__((noinline, used)) static int beta(int x) {
    int s = 0;
    for (int i = 0; i < x; i++) s += i * i ^ x;
    return s;
}
__attribute__((noinline, used, weak)) int gamma_weak(int x) { return beta(x) - alpha(x); }
/* Same address and size as alpha: perf keeps the longer name. */
extern int alpha_alias(int) __attribute__((alias("alpha")));

int main(int argc, char **argv) { (void)argv; return gamma_weak(argc) + alpha_alias(argc); }
"#;

/// Builds the test program with the given `--build-id` style; returns its path.
fn build_elf(dir: &Path, build_id: &str) -> PathBuf {
    compile(
        dir,
        &format!("prog-{build_id}"),
        TEST_PROGRAM,
        &[
            "-fno-toplevel-reorder",
            "-fno-inline",
            &format!("-Wl,--build-id={build_id}"),
        ],
    )
}

/// `gcc -O1 FLAGS` of the C `source` into `dir/name`; returns its path.
fn compile(dir: &Path, name: &str, source: &str, flags: &[&str]) -> PathBuf {
    let src = dir.join(format!("{name}.c"));
    std::fs::write(&src, source).unwrap();
    let out = dir.join(name);
    run(Command::new("gcc").arg("-O1").args(flags).arg("-o").arg(&out).arg(&src));
    out
}

/// `nm -S` of the defined symbols: name -> (address, size).
fn nm(path: &Path) -> BTreeMap<String, (u64, u64)> {
    let out = run(Command::new("nm").args(["-S", "--defined-only"]).arg(path));
    let mut map = BTreeMap::new();
    for line in out.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let (addr, size, name) = match f.as_slice() {
            [a, s, _, n] => (a, u64::from_str_radix(s, 16).unwrap(), n),
            [a, _, n] => (a, 0, n),
            _ => continue,
        };
        map.insert(name.to_string(), (u64::from_str_radix(addr, 16).unwrap(), size));
    }
    map
}

/// The build-id `readelf -n` prints, as bytes.
fn readelf_build_id(path: &Path) -> Option<Vec<u8>> {
    let out = run(Command::new("readelf").arg("-n").arg(path));
    let id = out.lines().find_map(|l| l.trim().strip_prefix("Build ID:"))?.trim();
    Some(
        (0..id.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&id[i..i + 2], 16).unwrap())
            .collect(),
    )
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A kallsyms text for a kernel whose `_text` is at `text`, with one module.
fn synthetic_kallsyms(text: u64) -> KernelSymbols {
    let k = format!(
        "{text:016x} T _text\n\
         {:016x} T core_fn_only_in_kallsyms\n\
         {:016x} T _etext\n\
         ffffffffc0001000 t mod_init_fn\t[mymod]\n\
         ffffffffc0001200 T mod_fn\t[mymod]\n",
        text + 0x10,
        text + 0x100_0000
    );
    KernelSymbols::from_kallsyms_text(&k, "synthetic kallsyms").unwrap()
}

#[test]
fn elf_build_id_reads_the_gnu_note() {
    let dir = tempfile::tempdir().unwrap();
    let with = build_elf(dir.path(), "sha1");
    let id = elf_build_id(&with).unwrap().expect("a build-id");
    assert_eq!(id.len(), 20, "sha1 build-ids are 20 bytes");
    assert_eq!(Some(id.clone()), readelf_build_id(&with));

    // The same note, dumped alone, is what /sys/kernel/notes looks like.
    let notes = dir.path().join("notes.bin");
    run(Command::new("objcopy")
        .args(["-O", "binary", "--only-section=.note.gnu.build-id"])
        .arg(&with)
        .arg(&notes));
    assert_eq!(build_id_from_notes(&std::fs::read(&notes).unwrap()), Some(id));

    let without = build_elf(dir.path(), "none");
    assert_eq!(readelf_build_id(&without), None);
    assert_eq!(elf_build_id(&without).unwrap(), None);
}

#[test]
fn vmlinux_symbols_are_shifted_by_the_kaslr_offset() {
    let dir = tempfile::tempdir().unwrap();
    let elf = build_elf(dir.path(), "sha1");
    let syms = nm(&elf);
    let elf_text = syms["_text"].0;
    let running_text = 0xffff_ffff_9a00_0000;
    let kallsyms = synthetic_kallsyms(running_text);

    let k = KernelSymbols::from_vmlinux(&elf, &kallsyms, None, false).unwrap();
    let offset = running_text.wrapping_sub(elf_text);
    assert_eq!(k.kaslr_offset(), Some(offset));

    for name in ["alpha", "beta", "gamma_weak", "main"] {
        let (addr, size) = syms[name];
        assert!(size > 0, "{name} has no size in nm");
        let expected = if name == "alpha" { "alpha_alias" } else { name };
        let first = addr.wrapping_add(offset);
        assert_eq!(k.resolve(first), Some((expected, None)), "{name} start");
        assert_eq!(k.resolve(first + size - 1), Some((expected, None)), "{name} end");
        // Unshifted addresses are not this kernel's.
        assert_eq!(k.resolve(addr), None, "{name} unshifted");
    }
    // Core symbols now come from the ELF only; modules still from kallsyms.
    assert_eq!(k.range_of("core_fn_only_in_kallsyms"), None);
    assert_eq!(k.resolve(0xffffffffc0001010), Some(("mod_init_fn", Some("mymod"))));
    assert_eq!(k.resolve(0xffffffffc0001210), Some(("mod_fn", Some("mymod"))));
    let described = k.describe();
    assert!(described.contains(&elf.display().to_string()), "{described}");
    assert!(described.contains("synthetic kallsyms"), "{described}");
}

#[test]
fn build_id_mismatch_is_refused_unless_forced() {
    let dir = tempfile::tempdir().unwrap();
    let elf = build_elf(dir.path(), "sha1");
    let id = elf_build_id(&elf).unwrap().unwrap();
    let kallsyms = synthetic_kallsyms(0xffff_ffff_8100_0000);

    assert!(KernelSymbols::from_vmlinux(&elf, &kallsyms, Some(&id), false).is_ok());

    let mut other = id.clone();
    other[0] ^= 0xff;
    let err = KernelSymbols::from_vmlinux(&elf, &kallsyms, Some(&other), false).unwrap_err();
    assert!(matches!(err, SymbolError::BuildIdMismatch { .. }), "{err}");
    let msg = err.to_string();
    for part in [elf.display().to_string(), hex(&id), hex(&other)] {
        assert!(msg.contains(&part), "{msg:?} lacks {part:?}");
    }
    assert!(KernelSymbols::from_vmlinux(&elf, &kallsyms, Some(&other), true).is_ok());

    // No build-id at all cannot be checked either.
    let bare = build_elf(dir.path(), "none");
    let err = KernelSymbols::from_vmlinux(&bare, &kallsyms, Some(&id), false).unwrap_err();
    assert!(matches!(err, SymbolError::MissingBuildId { .. }), "{err}");
    assert!(err.to_string().contains(&bare.display().to_string()));
    assert!(KernelSymbols::from_vmlinux(&bare, &kallsyms, Some(&id), true).is_ok());
}

#[test]
fn missing_and_non_elf_files_are_named_in_errors() {
    let dir = tempfile::tempdir().unwrap();
    let kallsyms = synthetic_kallsyms(0xffff_ffff_8100_0000);

    let missing = dir.path().join("no-such-vmlinux");
    for err in [
        elf_build_id(&missing).unwrap_err(),
        KernelSymbols::from_vmlinux(&missing, &kallsyms, None, true).unwrap_err(),
        KernelSymbols::from_kallsyms_file(&missing).unwrap_err(),
    ] {
        assert!(matches!(err, SymbolError::Io { .. }), "{err}");
        assert!(err.to_string().contains("no-such-vmlinux"), "{err}");
    }

    let text = dir.path().join("vmlinuz-not-elf");
    std::fs::write(&text, "this is not an ELF file\n").unwrap();
    for err in [
        elf_build_id(&text).unwrap_err(),
        KernelSymbols::from_vmlinux(&text, &kallsyms, None, true).unwrap_err(),
    ] {
        assert!(matches!(err, SymbolError::NotElf { .. }), "{err}");
        let msg = err.to_string();
        assert!(msg.contains("vmlinuz-not-elf") && msg.contains("not an ELF"), "{msg}");
    }
    // And a kallsyms file that is not kallsyms says where it stopped making sense.
    let err = KernelSymbols::from_kallsyms_file(&text).unwrap_err();
    assert!(err.to_string().contains("vmlinuz-not-elf:1:"), "{err}");
}

#[test]
fn find_vmlinux_prefers_boot_then_debug_then_build() {
    let root = tempfile::tempdir().unwrap();
    let r = root.path();
    assert_eq!(find_vmlinux_in(r, "6.1.0-test"), None);
    let place = |rel: &str| {
        let p = r.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, b"x").unwrap();
        p
    };
    let build = place("lib/modules/6.1.0-test/build/vmlinux");
    assert_eq!(find_vmlinux_in(r, "6.1.0-test"), Some(build));
    let debug = place("usr/lib/debug/boot/vmlinux-6.1.0-test");
    assert_eq!(find_vmlinux_in(r, "6.1.0-test"), Some(debug));
    let boot = place("boot/vmlinux-6.1.0-test");
    assert_eq!(find_vmlinux_in(r, "6.1.0-test"), Some(boot));
    assert_eq!(find_vmlinux_in(r, "other"), None);
}

#[test]
fn elf_without_symbols_or_text_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let elf = build_elf(dir.path(), "sha1");
    let kallsyms = synthetic_kallsyms(0xffff_ffff_8100_0000);

    let stripped = dir.path().join("stripped");
    run(Command::new("objcopy").arg("--strip-all").arg(&elf).arg(&stripped));
    let err = KernelSymbols::from_vmlinux(&stripped, &kallsyms, None, false).unwrap_err();
    assert!(matches!(err, SymbolError::NoElfSymbols { .. }), "{err}");
    assert!(err.to_string().contains("stripped"), "{err}");

    let no_text = dir.path().join("no-text");
    run(Command::new("objcopy")
        .args(["--strip-symbol", "_text"])
        .arg(&elf)
        .arg(&no_text));
    let err = KernelSymbols::from_vmlinux(&no_text, &kallsyms, None, false).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, SymbolError::MissingSymbol { .. }), "{msg}");
    assert!(msg.contains("no-text") && msg.contains("`_text`"), "{msg}");
}

/// File offset of virtual address `addr` in `path`, from `readelf -lW`'s LOAD lines.
fn file_offset_of(path: &Path, addr: u64) -> u64 {
    let out = run(Command::new("readelf").arg("-lW").arg(path));
    for l in out.lines().map(str::trim).filter(|l| l.starts_with("LOAD")) {
        let f: Vec<u64> = l
            .split_whitespace()
            .skip(1)
            .take(5)
            .map(|x| u64::from_str_radix(x.trim_start_matches("0x"), 16).unwrap())
            .collect();
        let (offset, vaddr, filesz) = (f[0], f[1], f[3]);
        if addr >= vaddr && addr < vaddr + filesz {
            return addr - vaddr + offset;
        }
    }
    panic!("{addr:#x} is in no LOAD segment of {}", path.display());
}

#[test]
fn user_elf_symbols_resolve_file_offsets_like_nm() {
    let d = tempfile::tempdir().unwrap();
    let elf = build_elf(d.path(), "sha1");
    let syms = ElfSymbols::from_file(&elf).unwrap();
    assert!(syms.from_symtab() && syms.maps_code());
    assert_eq!(syms.build_id().map(<[u8]>::to_vec), readelf_build_id(&elf));
    let nm = nm(&elf);
    // Every function, at its start and at its last byte; the alias goes by the longer name.
    for (name, want) in [
        ("alpha", "alpha_alias"),
        ("beta", "beta"),
        ("gamma_weak", "gamma_weak"),
        ("main", "main"),
    ] {
        let (addr, size) = nm[name];
        assert!(size > 0, "{name}");
        for a in [addr, addr + size - 1] {
            assert_eq!(
                syms.resolve_offset(file_offset_of(&elf, a)).as_deref(),
                Some(want),
                "{name} at {a:#x}"
            );
        }
        // Both ends are one function, whose name is read once by a caller.
        let ends = [addr, addr + size - 1].map(|a| syms.function_at(file_offset_of(&elf, a)));
        assert_eq!(ends[0], ends[1], "{name}");
        let Some(FunctionAt::Symbol(i)) = ends[0] else {
            panic!("{name}: {:?}", ends[0])
        };
        assert_eq!(syms.symbol_name(i).as_deref(), Some(want));
    }
    // Before the first function (the ELF header) there is none.
    assert_eq!(syms.resolve_offset(0), None);

    // Split: a stripped binary keeps only .dynsym; its debug file keeps the symbols but not
    // the code, so the two together name what the binary alone cannot.
    let debug = d.path().join("prog.debug");
    run(Command::new("objcopy").arg("--only-keep-debug").arg(&elf).arg(&debug));
    run(Command::new("strip").arg("--strip-all").arg(&elf));
    let stripped = ElfSymbols::from_file(&elf).unwrap();
    assert!(!stripped.from_symtab());
    let beta_at = file_offset_of(&elf, nm["beta"].0);
    assert_eq!(stripped.resolve_offset(beta_at), None, "beta is static: not in .dynsym");
    let mut split = ElfSymbols::from_file(&debug).unwrap();
    assert!(split.from_symtab() && !split.maps_code());
    assert_eq!(split.build_id(), stripped.build_id());
    split.use_segments_of(&stripped);
    assert_eq!(split.resolve_offset(beta_at).as_deref(), Some("beta"));
}

#[test]
fn user_elf_labels_and_long_names_are_kept_as_perf_keeps_them() {
    let d = tempfile::tempdir().unwrap();
    // Past the 256 bytes a name is read in at a time.
    let long = format!("f_{}", "long_name_".repeat(30));
    let elf = compile(
        d.path(),
        "labels",
        &format!(
            "__asm__(\".text\\n.globl asm_entry\\nasm_entry:\\n nop\\n nop\\n\
             .globl hidden_label\\n.hidden hidden_label\\nhidden_label:\\n nop\\n nop\\n\
             \\\"$x\\\":\\n nop\\n nop\\n\
             .globl asm_end\\n.type asm_end,@function\\nasm_end:\\n ret\\n.size asm_end, 1\\n\");\n\
             int {long}(int x) {{ return x * 3; }}\n\
             int main(int argc, char **argv) {{ (void)argv; return {long}(argc); }}\n"
        ),
        &["-fno-inline"],
    );
    let syms = ElfSymbols::from_file(&elf).unwrap();
    let nm = nm(&elf);
    let at = |name: &str| syms.resolve_offset(file_offset_of(&elf, nm[name].0));
    // An untyped label in code is a function; a hidden one and an ARM-style mapping
    // symbol are not, so the label before them runs on over them.
    assert_eq!(at("asm_entry").as_deref(), Some("asm_entry"));
    assert_eq!(at("hidden_label").as_deref(), Some("asm_entry"));
    assert_eq!(at("$x").as_deref(), Some("asm_entry"));
    assert_eq!(at("asm_end").as_deref(), Some("asm_end"));
    assert_eq!(at(&long).as_deref(), Some(long.as_str()));
}

#[test]
fn plt_entries_are_named_like_objdump_names_them() {
    let d = tempfile::tempdir().unwrap();
    // Lazy binding keeps the classic .plt with a header and one entry per function.
    let elf = compile(
        d.path(),
        "plt",
        "#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n\
         int main(int argc, char **argv) { char b[64]; strcpy(b, argv[0]); \
         printf(\"%lu %s\\n\", strtoul(argc > 1 ? argv[1] : \"1\", 0, 10), b); return (int)strlen(b); }\n",
        &["-Wl,-z,lazy"],
    );
    let syms = ElfSymbols::from_file(&elf).unwrap();
    // `0000000000001030 <strtoul@plt>:`
    let dump = run(Command::new("objdump")
        .args(["-d", "-j", ".plt", "-j", ".plt.sec"])
        .arg(&elf));
    let mut named = 0;
    for l in dump.lines() {
        let Some((addr, rest)) = l.split_once(" <") else {
            continue;
        };
        let Some(name) = rest.strip_suffix(">:") else { continue };
        let addr = u64::from_str_radix(addr.trim(), 16).unwrap();
        let offset = file_offset_of(&elf, addr);
        // objdump labels the PLT's header after its first entry (`strcpy@plt-0x10`);
        // perf calls it `.plt`.
        let name = if name.contains("@plt-0x") { ".plt" } else { name };
        assert_eq!(
            syms.resolve_offset(offset).as_deref(),
            Some(name),
            "{name} at {addr:#x}"
        );
        assert_eq!(
            syms.resolve_offset(offset + 15).as_deref(),
            Some(name),
            "{name} at {addr:#x} + 15"
        );
        named += usize::from(name.ends_with("@plt"));
    }
    assert!(named >= 3, "strcpy, strtoul, printf...: {dump}");
}

/// The library names the mismatch; uprun adds the way out, its own option.
#[test]
fn uprun_names_the_option_that_forces_a_vmlinux() {
    if !perf_usable(true) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let elf = build_elf(dir.path(), "sha1");
    std::fs::write(dir.path().join("test_list"), "x: true\n").unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_uprun"))
        .arg(&elf)
        .arg("out")
        .current_dir(dir.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("build-id mismatch") && err.contains("pass --force-vmlinux to use it anyway"),
        "{err}"
    );
    assert!(!dir.path().join("out").exists(), "nothing is written before the check");
}
