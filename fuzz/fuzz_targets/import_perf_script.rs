#![no_main]
//! The perf script import (events, periods) on any bytes; properties in upcmp::import::fuzz.

use libfuzzer_sys::fuzz_target;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let kallsyms = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../testdata/upsrun/callgraph/kallsyms"));
    upcmp::import::fuzz::check_perf_script(data, kallsyms);
});
