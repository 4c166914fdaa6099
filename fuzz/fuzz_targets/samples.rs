#![no_main]
//! The samples parser on any bytes; properties in upcmp_parsers::harness.

use libfuzzer_sys::fuzz_target;
use upcmp_parsers::harness::Format;

fuzz_target!(|data: &[u8]| {
    Format::Samples.check(data);
});
