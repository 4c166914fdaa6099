#![no_main]
//! KSYMBOL and BPF_EVENT records made from any bytes, put among the records of a real
//! recording (testdata/import/stacks.data), imported as a file and as a stream;
//! the records' recipe in upcmp::import::fuzz::code_records, the properties beside it.

use libfuzzer_sys::fuzz_target;
use std::path::Path;

const BASE: &[u8] = include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/../testdata/import/stacks.data"));

fuzz_target!(|data: &[u8]| {
    let kallsyms = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../testdata/upsrun/callgraph/kallsyms"));
    upcmp::import::fuzz::check_ksymbols(data, BASE, kallsyms);
});
