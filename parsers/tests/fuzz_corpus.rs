//! The fuzz corpus on stable Rust, and a bounded mutation pass over the seed inputs.
//!
//! Every file of `testdata/fuzz/TARGET/` (inputs that once crashed, hung or ballooned a
//! parser) goes through its parser's checks (`upcmp_parsers::harness`), within a memory
//! and a time bound. Then each format's seeds (`testdata/fuzz/seeds.list` and the corpus)
//! are mutated by a seeded, deterministic mutator, `UPCMP_MUTATIONS` inputs per format
//! (default 400; CI runs more), each checked the same way. An input that fails is written to
//! `target/tmp/fuzz-failures/` to be added to the corpus once fixed. docs/fuzzing.md
//! has the workflow.

use std::path::{Path, PathBuf};
use std::time::Duration;
use upcmp_parsers::harness::{self, measured, CountingAllocator, Format};
use upcmp_parsers::mutate::{mutate, Rng};

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

/// The most bytes a parse may hold at once: a fixed allowance (line buffers, tables of a
/// few KiB) plus a multiple of the input. The parsers keep a few machine words for every
/// line or frame they hand on, so a factor of 64 is generous; a parser that allocates
/// from a count in the input, or copies a name per row, exceeds it.
fn memory_bound(input_len: usize) -> isize {
    (1 << 20) + 64 * input_len as isize
}

/// A parse takes far less than this, on a busy machine too: the bound is libFuzzer's
/// `-timeout` as the fuzz runs use it, and it catches hangs, not slowness.
const TIME_BOUND: Duration = Duration::from_secs(5);

/// Runs `format`'s checks on `data` within [`memory_bound`] and [`TIME_BOUND`].
fn run(format: Format, data: &[u8]) -> Result<(), String> {
    harness::within_bounds(data.len(), memory_bound(data.len()), TIME_BOUND, || format.check(data))
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn corpus(format: Format) -> Vec<(PathBuf, Vec<u8>)> {
    harness::corpus_files(&repo().join("testdata/fuzz").join(format.name()))
}

fn listed_seeds(format: Format) -> Vec<(PathBuf, Vec<u8>)> {
    harness::listed_seeds(&repo(), format.name())
}

#[test]
fn every_corpus_input_returns_within_bounds() {
    let mut failures = Vec::new();
    let mut inputs = 0;
    for format in Format::ALL {
        for (path, data) in corpus(format) {
            inputs += 1;
            if let Err(f) = run(format, &data) {
                failures.push(format!("{}: {f}", path.display()));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(inputs >= Format::ALL.len(), "the corpus holds {inputs} inputs");
}

#[test]
fn every_seed_parses() {
    // The mutation pass starts from valid inputs of each format.
    for format in Format::ALL {
        let seeds = listed_seeds(format);
        assert!(
            !seeds.is_empty(),
            "{}: no seed in testdata/fuzz/seeds.list",
            format.name()
        );
        for (path, data) in seeds {
            assert!(
                format.check(&data),
                "{}: does not parse as {}",
                path.display(),
                format.name()
            );
        }
    }
}

#[test]
fn a_stream_without_newlines_is_read_in_bounded_memory() {
    // A 4 MB samples.gz that expands to 4 GiB without a newline once took 4.2 GB; 64 MiB
    // shows the bound. The streaming readers stop at their line bound.
    use std::io::Read;
    for (format, header, line_bound) in [
        (
            Format::Samples,
            "upcmp-samples 1\n",
            upcmp_parsers::samples::MAX_LINE_BYTES,
        ),
        (Format::Folded, "", upcmp_parsers::folded::MAX_LINE_BYTES),
        (Format::PerfScript, "", upcmp_parsers::perf_script::MAX_LINE_BYTES),
    ] {
        let bomb = header.as_bytes().chain(std::io::repeat(b'7').take(64 << 20));
        let m = measured(|| match format {
            Format::Samples => {
                upcmp_parsers::samples::for_each_record(std::io::BufReader::new(bomb), "b", u64::MAX, |_| {})
                    .map(|_| ())
            }
            Format::Folded => {
                upcmp_parsers::folded::for_each_stack(std::io::BufReader::new(bomb), "b", |_| {}).map(|_| ())
            }
            _ => upcmp_parsers::perf_script::for_each_sample(
                std::io::BufReader::new(bomb),
                "b",
                upcmp_parsers::perf_script::Chain::Full,
                |_| {},
            )
            .map(|_| ()),
        });
        let used = m.peak_bytes;
        let e = m.outcome.unwrap().expect_err(format.name());
        assert!(e.expected.contains("a line of at most"), "{}: {e}", format.name());
        // The line buffer grows by doubling up to the bound.
        assert!(
            used <= 2 * line_bound as isize + (1 << 20),
            "{}: held {used} bytes",
            format.name()
        );
    }
}

/// Mutated inputs per format by default (`UPCMP_MUTATIONS` sets it; CI runs more).
const MUTATIONS: usize = 400;

fn mutation_pass(format: Format) {
    let mut seeds: Vec<Vec<u8>> = listed_seeds(format).into_iter().map(|s| s.1).collect();
    seeds.extend(corpus(format).into_iter().map(|s| s.1));
    let keep = Path::new(env!("CARGO_TARGET_TMPDIR")).join("fuzz-failures");
    let failures = harness::mutation_pass(format.name(), &seeds, MUTATIONS, mutate, |d| run(format, d), &keep);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn mutation_pass_perf_script() {
    mutation_pass(Format::PerfScript);
}

#[test]
fn mutation_pass_folded() {
    mutation_pass(Format::Folded);
}

#[test]
fn mutation_pass_prfout() {
    mutation_pass(Format::Prfout);
}

#[test]
fn mutation_pass_samples() {
    mutation_pass(Format::Samples);
}

#[test]
fn mutation_pass_upout() {
    mutation_pass(Format::Upout);
}

#[test]
fn mutation_pass_test_list() {
    mutation_pass(Format::TestList);
}

#[test]
fn mutation_pass_kallsyms() {
    mutation_pass(Format::Kallsyms);
}

#[test]
fn mutation_pass_perf_map() {
    mutation_pass(Format::PerfMap);
}

#[test]
fn mutation_pass_keyvalue() {
    mutation_pass(Format::KeyValue);
}

#[test]
fn mutation_pass_procstat() {
    mutation_pass(Format::ProcStat);
}

#[test]
fn mutation_pass_counters() {
    mutation_pass(Format::Counters);
}

#[test]
fn the_mutator_is_deterministic() {
    let seeds = vec![b"a;b 12\nc 3\n".to_vec()];
    let run = |seed| {
        let mut rng = Rng(seed);
        (0..50).map(|_| mutate(&mut rng, &seeds[0], &seeds)).collect::<Vec<_>>()
    };
    assert_eq!(run(7), run(7));
    assert_ne!(run(7), run(8));
}

/// The bounds above mean something only while the counting allocator is installed.
#[test]
fn the_allocator_counts() {
    let m = measured(|| vec![1u8; 1 << 20]);
    assert!(m.peak_bytes >= 1 << 20, "{}", m.peak_bytes);
    assert_eq!(m.outcome.map(|v| v.len()), Ok(1 << 20));
}
