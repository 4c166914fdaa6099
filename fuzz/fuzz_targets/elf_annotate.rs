#![no_main]
//! An ELF file from any bytes, read as a recording's library is for its symbols and as an
//! annotated function's file is for its code, instructions, lines and inlined frames; the
//! properties in upcmp::symbols::fuzz::check_elf.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    upcmp::symbols::fuzz::check_elf(data);
});
