//! The ELF and DWARF readers of annotate and of the imports' symbols run on raw bytes,
//! checking what must hold whatever the input: the counterpart, for ELF files, of
//! `upcmp_parsers::harness` and `import::fuzz` (`docs/fuzzing.md`).
//!
//! The fuzz target `elf_annotate` (`fuzz/`) and the stable corpus and mutation tests
//! (`tests/fuzz.rs`) call [`check_elf`], so an input fails the same way under each. A
//! recording or a run names ELF files another user may have written (a library, a
//! vmlinux, a module, a separate debug file), and annotate reads their code, line
//! programs and inlined frames into a report.
//!
//! The properties: every reader returns, `Ok` or an error that says what is wrong; a
//! function's bytes lie inside the file and its instructions inside its bytes, in order;
//! every offset asked about has a place (or none), and no other.

use super::lines::{debug_file_for, functions_code};
use super::{elf_build_id, ElfSymbols};
use std::os::fd::AsRawFd;
use std::path::PathBuf;

/// The functions asked for, with offsets to place beside their instructions: a name most
/// ELF files the tests build have, and offsets at the start, inside and far past the end.
const WANTED: [&str; 3] = ["main", "work", "_start"];
const OFFSETS: [u64; 5] = [0, 1, 7, 4096, 1 << 40];

/// Reads `data` as an ELF file the way a recording's library and an annotated function's
/// file are read (symbols, build-id, debug file, code, instructions, lines, inlined
/// frames); panics when a property does not hold. Returns whether its symbols were read.
pub fn check_elf(data: &[u8]) -> bool {
    let file = crate::fsio::memory_file("upcmp-fuzz-elf", data).expect("an in-memory file");
    let path = PathBuf::from(format!("/proc/self/fd/{}", file.as_raw_fd()));
    let symbols = ElfSymbols::from_file(&path);
    if let Err(e) = &symbols {
        assert!(!e.to_string().is_empty());
    }
    let _ = elf_build_id(&path);
    let _ = debug_file_for(&path, &[]);
    let wanted: Vec<(&str, &[u64])> = WANTED.iter().map(|&n| (n, &OFFSETS[..])).collect();
    match functions_code(&path, None, &wanted, "", &[]) {
        Err(e) => assert!(!e.to_string().is_empty()),
        Ok(all) => {
            assert_eq!(all.len(), wanted.len(), "one answer a function asked");
            for code in all.into_iter().flatten() {
                assert!(
                    code.bytes.len() <= data.len(),
                    "{}: more bytes than the file",
                    code.symbol
                );
                assert!(code.bytes.len() as u64 <= code.size.max(code.bytes.len() as u64));
                let mut end = 0;
                for i in &code.instructions {
                    assert!(i.offset >= end, "{}: instructions out of order", code.symbol);
                    end = i.offset + i.len;
                    assert!(
                        end <= code.bytes.len() as u64,
                        "{}: an instruction past its bytes",
                        code.symbol
                    );
                }
                for offset in code.places.keys() {
                    let asked = OFFSETS.contains(offset) || code.instructions.iter().any(|i| i.offset == *offset);
                    assert!(asked, "{}: a place at {offset}, which nobody asked for", code.symbol);
                }
            }
        }
    }
    symbols.is_ok()
}
