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
use upcmp_parsers::harness::{measured, CountingAllocator, Format};
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

/// What went wrong with one input.
struct Failure(String);

/// Runs `format`'s checks on `data` and measures them: a panic, more memory than
/// [`memory_bound`] or more time than [`TIME_BOUND`] is a failure.
fn run(format: Format, data: &[u8]) -> Result<(), Failure> {
    let m = measured(|| format.check(data));
    let (used, elapsed) = (m.peak_bytes, m.elapsed);
    if let Err(message) = m.outcome {
        return Err(Failure(format!("panicked: {message}")));
    }
    if used > memory_bound(data.len()) {
        return Err(Failure(format!(
            "held {used} bytes for an input of {} (bound {})",
            data.len(),
            memory_bound(data.len())
        )));
    }
    if elapsed > TIME_BOUND {
        return Err(Failure(format!("took {elapsed:?}")));
    }
    Ok(())
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The files of `testdata/fuzz/TARGET/`, sorted; none when the directory does not exist.
fn corpus(format: Format) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = repo().join("testdata/fuzz").join(format.name());
    let mut files: Vec<PathBuf> = match std::fs::read_dir(&dir) {
        Ok(entries) => entries.map(|e| e.expect("a directory entry").path()).collect(),
        Err(_) => Vec::new(),
    };
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let data = std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            (p, data)
        })
        .collect()
}

/// The seed files of `format` listed in `testdata/fuzz/seeds.list`.
fn listed_seeds(format: Format) -> Vec<(PathBuf, Vec<u8>)> {
    let list = repo().join("testdata/fuzz/seeds.list");
    let text = std::fs::read_to_string(&list).expect("testdata/fuzz/seeds.list");
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .filter_map(|l| l.split_once(' '))
        .filter(|(target, _)| *target == format.name())
        .map(|(_, path)| {
            let p = repo().join(path.trim());
            let data = std::fs::read(&p).unwrap_or_else(|e| panic!("{} (seeds.list): {e}", p.display()));
            (p, data)
        })
        .collect()
}

/// Writes a failing input where a developer finds it, and says how to keep it.
fn report(format: Format, what: &str, data: &[u8], failure: &Failure) -> String {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("fuzz-failures");
    std::fs::create_dir_all(&dir).expect("target/tmp/fuzz-failures");
    let file = dir.join(format!("{}-{what}", format.name()));
    std::fs::write(&file, data).expect("writing a failing input");
    format!(
        "{} {what}: {} (input written to {}; once fixed, copy it to testdata/fuzz/{}/)",
        format.name(),
        failure.0,
        file.display(),
        format.name()
    )
}

#[test]
fn every_corpus_input_returns_within_bounds() {
    let mut failures = Vec::new();
    let mut inputs = 0;
    for format in Format::ALL {
        for (path, data) in corpus(format) {
            inputs += 1;
            if let Err(f) = run(format, &data) {
                failures.push(format!("{}: {}", path.display(), f.0));
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
                upcmp_parsers::samples::for_each_record(std::io::BufReader::new(bomb), "b", |_| {}).map(|_| ())
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

/// Mutated inputs per format: `UPCMP_MUTATIONS`, default 400.
fn mutations() -> usize {
    std::env::var("UPCMP_MUTATIONS")
        .ok()
        .map(|v| v.parse().expect("UPCMP_MUTATIONS: a whole number"))
        .unwrap_or(400)
}

fn mutation_pass(format: Format) {
    let mut seeds: Vec<Vec<u8>> = listed_seeds(format).into_iter().map(|s| s.1).collect();
    seeds.extend(corpus(format).into_iter().map(|s| s.1));
    // The format's name seeds the generator: each format gets its own sequence.
    let mut rng = Rng(format.name().bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    }));
    let mut failures = Vec::new();
    for k in 0..mutations() {
        let seed = rng.pick(&seeds).clone();
        let input = mutate(&mut rng, &seed, &seeds);
        if let Err(f) = run(format, &input) {
            failures.push(report(format, &format!("mutation-{k}"), &input, &f));
            if failures.len() >= 5 {
                break;
            }
        }
    }
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
