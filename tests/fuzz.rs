//! The importers' fuzz corpus on stable Rust, and a bounded mutation pass over their seeds:
//! the counterpart of `parsers/tests/fuzz_corpus.rs` for perf.data and `perf script` text
//! as the main package imports them (`upcmp::import::fuzz`, docs/fuzzing.md).
//!
//! Every file of `testdata/fuzz/import_perf_data/` and `testdata/fuzz/import_perf_script/`
//! goes through its check within a memory and a time bound; then each target's seeds
//! (`testdata/fuzz/seeds.list` and the corpus) are mutated by the seeded mutator of
//! `upcmp_parsers::mutate`, `UPCMP_MUTATIONS` inputs a target (default 100), each checked
//! the same way. A failing input is written to `target/tmp/fuzz-failures/`.

use crate::util::testdata;
use std::path::{Path, PathBuf};
use std::time::Duration;
use upcmp::import::fuzz::{check_perf_data, check_perf_script};
use upcmp_parsers::harness::{measured, CountingAllocator};
use upcmp_parsers::mutate::{mutate, mutate_binary, Rng};

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

/// An importer of the main package, as a fuzz target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    PerfData,
    PerfScript,
}

impl Target {
    const ALL: [Target; 2] = [Target::PerfData, Target::PerfScript];

    fn name(self) -> &'static str {
        match self {
            Target::PerfData => "import_perf_data",
            Target::PerfScript => "import_perf_script",
        }
    }

    fn check(self, data: &[u8]) -> bool {
        let kallsyms = testdata("upsrun/callgraph/kallsyms");
        match self {
            Target::PerfData => check_perf_data(data, &kallsyms),
            Target::PerfScript => check_perf_script(data, &kallsyms),
        }
    }
}

/// The most bytes an import may hold at once: a fixed allowance for what it reads besides
/// its input (the symbol tables of the files a recording names, as found on this machine)
/// plus a multiple of the input. A reader that allocates from a size in the input (a
/// perf.data header once asked for 756 GB) exceeds it.
fn memory_bound(input_len: usize) -> isize {
    (256 << 20) + 64 * input_len as isize
}

/// An import of a small input takes far less, on a busy machine too: this catches hangs.
const TIME_BOUND: Duration = Duration::from_secs(20);

/// Runs `target`'s check on `data`, measured: a panic, more memory than
/// [`memory_bound`] or more time than [`TIME_BOUND`] is a failure.
fn run(target: Target, data: &[u8]) -> Result<(), String> {
    let m = measured(|| target.check(data));
    let (used, elapsed) = (m.peak_bytes, m.elapsed);
    if let Err(message) = m.outcome {
        return Err(format!("panicked: {message}"));
    }
    if used > memory_bound(data.len()) {
        return Err(format!("held {used} bytes for an input of {}", data.len()));
    }
    if elapsed > TIME_BOUND {
        return Err(format!("took {elapsed:?}"));
    }
    Ok(())
}

/// The files of `testdata/fuzz/TARGET/`, sorted.
fn corpus(target: Target) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = testdata(&format!("fuzz/{}", target.name()));
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

/// The seeds of `target` in `testdata/fuzz/seeds.list`.
fn listed_seeds(target: Target) -> Vec<(PathBuf, Vec<u8>)> {
    let text = std::fs::read_to_string(testdata("fuzz/seeds.list")).expect("testdata/fuzz/seeds.list");
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split_once(' '))
        .filter(|(t, _)| *t == target.name())
        .map(|(_, path)| {
            let p = repo.join(path.trim());
            let data = std::fs::read(&p).unwrap_or_else(|e| panic!("{} (seeds.list): {e}", p.display()));
            (p, data)
        })
        .collect()
}

/// Writes a failing input where a developer finds it, and says how to keep it.
fn report(target: Target, what: &str, data: &[u8], failure: &str) -> String {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("fuzz-failures");
    std::fs::create_dir_all(&dir).expect("target/tmp/fuzz-failures");
    let file = dir.join(format!("{}-{what}", target.name()));
    std::fs::write(&file, data).expect("writing a failing input");
    format!(
        "{} {what}: {failure} (input written to {}; once fixed, copy it to testdata/fuzz/{}/)",
        target.name(),
        file.display(),
        target.name()
    )
}

#[test]
fn every_import_seed_imports_and_every_corpus_input_returns_within_bounds() {
    let mut failures = Vec::new();
    for target in Target::ALL {
        let seeds = listed_seeds(target);
        assert!(seeds.len() >= 3, "{}: {} seeds", target.name(), seeds.len());
        for (path, data) in seeds {
            assert!(target.check(&data), "{}: does not import", path.display());
        }
        for (path, data) in corpus(target) {
            if let Err(f) = run(target, &data) {
                failures.push(format!("{}: {f}", path.display()));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Mutated inputs a target: `UPCMP_MUTATIONS`, default 100.
fn mutations() -> usize {
    std::env::var("UPCMP_MUTATIONS")
        .ok()
        .map(|v| v.parse().expect("UPCMP_MUTATIONS: a whole number"))
        .unwrap_or(100)
}

fn mutation_pass(target: Target) {
    let mut seeds: Vec<Vec<u8>> = listed_seeds(target).into_iter().map(|s| s.1).collect();
    seeds.extend(corpus(target).into_iter().map(|s| s.1));
    // The target's name seeds the generator: each gets its own sequence.
    let mut rng = Rng(target.name().bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    }));
    let mut failures = Vec::new();
    for k in 0..mutations() {
        let seed = rng.pick(&seeds).clone();
        let input = match target {
            Target::PerfData => mutate_binary(&mut rng, &seed, &seeds),
            Target::PerfScript => mutate(&mut rng, &seed, &seeds),
        };
        if let Err(f) = run(target, &input) {
            failures.push(report(target, &format!("mutation-{k}"), &input, &f));
            if failures.len() >= 5 {
                break;
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn mutation_pass_import_perf_data() {
    mutation_pass(Target::PerfData);
}

#[test]
fn mutation_pass_import_perf_script() {
    mutation_pass(Target::PerfScript);
}

#[test]
fn a_perf_data_sample_on_a_cpu_past_linux_limit_is_an_error() {
    // A damaged CPU field (4294967295) gave the profile a CPU column that no prfout can
    // hold; perf script text of the same sample is refused, and so is the recording.
    let input = testdata("fuzz/import_perf_data/sample-cpu-4294967295");
    let opts = upcmp::import::ImportOptions::new(None, Some(testdata("upsrun/callgraph/kallsyms")), None, None);
    let e = upcmp::import::read_profile(&input, &opts).unwrap_err().to_string();
    assert!(e.contains("names CPU 4294967295, but Linux has fewer than 8192"), "{e}");
}

/// The bounds above mean something only while the counting allocator is installed.
#[test]
fn the_allocator_counts() {
    let m = measured(|| vec![1u8; 1 << 20]);
    assert!(m.peak_bytes >= 1 << 20, "{}", m.peak_bytes);
    assert_eq!(m.outcome.map(|v| v.len()), Ok(1 << 20));
}
