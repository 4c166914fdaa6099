#![no_main]
//! The counters parser on any bytes; properties in upcmp_parsers::harness.

use libfuzzer_sys::fuzz_target;
use upcmp_parsers::harness::Format;

fuzz_target!(|data: &[u8]| {
    Format::Counters.check(data);
});
