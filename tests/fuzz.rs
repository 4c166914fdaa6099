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
use upcmp::import::fuzz::{check_ksymbols, check_perf_data, check_perf_script};
use upcmp_parsers::harness::{self, measured, CountingAllocator};
use upcmp_parsers::mutate::{mutate, mutate_binary};

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

/// An importer of the main package, as a fuzz target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    PerfData,
    PerfScript,
    /// KSYMBOL and BPF_EVENT records made from the bytes, inside a real recording.
    Ksymbol,
    /// An ELF file a recording or run names, read for symbols and annotated.
    Elf,
}

impl Target {
    const ALL: [Target; 4] = [Target::PerfData, Target::PerfScript, Target::Ksymbol, Target::Elf];

    fn name(self) -> &'static str {
        match self {
            Target::PerfData => "import_perf_data",
            Target::PerfScript => "import_perf_script",
            Target::Ksymbol => "import_ksymbol",
            Target::Elf => "elf_annotate",
        }
    }

    fn check(self, data: &[u8]) -> bool {
        let kallsyms = testdata("upsrun/callgraph/kallsyms");
        match self {
            Target::PerfData => check_perf_data(data, &kallsyms),
            Target::PerfScript => check_perf_script(data, &kallsyms),
            Target::Ksymbol => {
                let base = std::fs::read(testdata("import/stacks.data")).unwrap();
                check_ksymbols(data, &base, &kallsyms)
            }
            Target::Elf => upcmp::symbols::fuzz::check_elf(data),
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

/// Runs `target`'s check on `data` within [`memory_bound`] and [`TIME_BOUND`].
fn run(target: Target, data: &[u8]) -> Result<(), String> {
    harness::within_bounds(data.len(), memory_bound(data.len()), TIME_BOUND, || target.check(data))
}

fn corpus(target: Target) -> Vec<(PathBuf, Vec<u8>)> {
    harness::corpus_files(&testdata(&format!("fuzz/{}", target.name())))
}

fn listed_seeds(target: Target) -> Vec<(PathBuf, Vec<u8>)> {
    harness::listed_seeds(Path::new(env!("CARGO_MANIFEST_DIR")), target.name())
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

/// Mutated inputs a target by default (`UPCMP_MUTATIONS` sets it).
const MUTATIONS: usize = 100;

fn mutation_pass(target: Target) {
    let mut seeds: Vec<Vec<u8>> = listed_seeds(target).into_iter().map(|s| s.1).collect();
    seeds.extend(corpus(target).into_iter().map(|s| s.1));
    let mutator = match target {
        Target::PerfData | Target::Ksymbol | Target::Elf => mutate_binary,
        Target::PerfScript => mutate,
    };
    let keep = Path::new(env!("CARGO_TARGET_TMPDIR")).join("fuzz-failures");
    let failures = harness::mutation_pass(target.name(), &seeds, MUTATIONS, mutator, |d| run(target, d), &keep);
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
fn mutation_pass_import_ksymbol_issue_46() {
    mutation_pass(Target::Ksymbol);
}

#[test]
fn mutation_pass_elf_annotate_issue_46() {
    mutation_pass(Target::Elf);
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

/// The messages both perf.data record readers (the import's own and linux-perf-data's)
/// give for the corpus input `name`, which each must refuse with the same message.
fn both_readers_refuse(name: &str) -> String {
    let input = testdata(&format!("fuzz/import_perf_data/{name}"));
    let opts = upcmp::import::ImportOptions::new(None, Some(testdata("upsrun/callgraph/kallsyms")), None, None);
    let own = upcmp::import::perf_data::read(&input, &opts).unwrap_err().to_string();
    let other = upcmp::import::perf_data::read_with_crate(&input, &opts)
        .unwrap_err()
        .to_string();
    assert_eq!(own, other);
    assert!(
        own.contains(&format!("{name}: not a readable perf.data file: ")),
        "{own}"
    );
    own
}

#[test]
fn a_perf_data_record_shorter_than_its_fields_is_damaged_not_cut_short() {
    // A sample whose call chain claims 1000 entries in 80 bytes, in the middle of a file
    // of 12648: the record is damaged. Both record readers said the file "stops at byte
    // 12648 in the middle of a header or record", where it does not stop.
    let e = both_readers_refuse("sample-chain-past-its-record");
    assert!(
        e.contains("a SAMPLE record of 80 bytes ends before the fields its event's sample format"),
        "{e}"
    );
    assert!(e.contains("CALLCHAIN") && e.contains("the file is damaged"), "{e}");
    assert!(!e.contains("stops at"), "{e}");
}

#[test]
fn a_finished_round_with_a_body_is_refused_alike_by_both_readers() {
    // A FINISHED_ROUND is a header alone; linux-perf-data skips 8 bytes past one whatever
    // its size, so it read this one's 64-byte body as records while the own reader
    // skipped it by its size: two messages for one file.
    let e = both_readers_refuse("finished-round-with-a-body");
    assert!(
        e.contains("the FINISHED_ROUND record at byte 2744 has a size of 72; it is 8 bytes, a header alone"),
        "{e}"
    );
}

#[test]
fn event_desc_unlike_the_attribute_section_is_refused_alike_by_both_readers() {
    // perf lays records out by the attribute section, linux-perf-data by the EVENT_DESC
    // feature: with the two unlike, the own reader's samples (read formats from the
    // attribute section) imported while the crate's failed to parse.
    let e = both_readers_refuse("event-desc-other-than-its-attributes");
    assert!(
        e.contains(
            "its EVENT_DESC feature gives event 0 the sample format 0x11d, but its attribute section 0x127: \
             the file is damaged (feature 12 at byte 10004)"
        ),
        "{e}"
    );
}

/// The bounds above mean something only while the counting allocator is installed.
#[test]
fn the_allocator_counts() {
    let m = measured(|| vec![1u8; 1 << 20]);
    assert!(m.peak_bytes >= 1 << 20, "{}", m.peak_bytes);
    assert_eq!(m.outcome.map(|v| v.len()), Ok(1 << 20));
}

/// A dataset's Parquet files (issue 46): the corpus of `testdata/fuzz/dataset_parquet/`
/// and a mutation pass over the exported seeds, each input read by the history's and the
/// group comparison's readers (`upcmp::dataset::fuzz`).
#[cfg(feature = "parquet")]
mod dataset_parquet {
    use super::*;
    use upcmp::dataset::fuzz::{check_parquet, fuzz_dataset, set_number, FuzzDataset};
    use upcmp_parsers::mutate::Rng;

    const TARGET: &str = "dataset_parquet";

    /// As for the importers: a fixed allowance (the dataset's other files, polars' own
    /// tables) and a multiple of the input. Counted on this thread, where the check runs;
    /// polars' threads are bounded by the check's decoded-size cap.
    fn memory_bound(input_len: usize) -> isize {
        (256 << 20) + 64 * input_len as isize
    }

    /// Each input is read up to six times (once in each table's place).
    const TIME_BOUND: Duration = Duration::from_secs(60);

    fn dataset(tmp: &Path) -> FuzzDataset {
        fuzz_dataset(&testdata("demo/run1"), &testdata("demo/run2"), &tmp.join("ds")).unwrap()
    }

    fn run(ds: &FuzzDataset, data: &[u8]) -> Result<(), String> {
        harness::within_bounds(data.len(), memory_bound(data.len()), TIME_BOUND, || {
            check_parquet(data, ds)
        })
    }

    #[test]
    fn every_dataset_seed_is_read_and_every_corpus_input_returns_within_bounds_issue_46() {
        let tmp = crate::util::tempdir();
        let ds = dataset(tmp.path());
        let seeds = harness::listed_seeds(Path::new(env!("CARGO_MANIFEST_DIR")), TARGET);
        assert_eq!(seeds.len(), 6, "a seed a table");
        for (path, data) in seeds {
            assert!(check_parquet(&data, &ds), "{}: refused", path.display());
        }
        let mut failures = Vec::new();
        for (path, data) in harness::corpus_files(&testdata(&format!("fuzz/{TARGET}"))) {
            if let Err(f) = run(&ds, &data) {
                failures.push(format!("{}: {f}", path.display()));
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    /// Half the inputs: one integer of the footer or of a page header set to 0, -1, 2^31,
    /// 2^61, 2^63 - 1 and the like; the other half: the binary mutator's bit flips,
    /// truncations and splices.
    fn mutate_parquet(rng: &mut Rng, data: &[u8], seeds: &[Vec<u8>]) -> Vec<u8> {
        if rng.below(2) == 0 {
            if let Some(m) = set_number(data, rng.next_u64()) {
                return m;
            }
        }
        mutate_binary(rng, data, seeds)
    }

    #[test]
    fn mutation_pass_dataset_parquet_issue_46() {
        let tmp = crate::util::tempdir();
        let ds = dataset(tmp.path());
        let mut seeds: Vec<Vec<u8>> = harness::listed_seeds(Path::new(env!("CARGO_MANIFEST_DIR")), TARGET)
            .into_iter()
            .map(|s| s.1)
            .collect();
        seeds.extend(
            harness::corpus_files(&testdata(&format!("fuzz/{TARGET}")))
                .into_iter()
                .map(|s| s.1),
        );
        let keep = Path::new(env!("CARGO_TARGET_TMPDIR")).join("fuzz-failures");
        let failures = harness::mutation_pass(TARGET, &seeds, MUTATIONS, mutate_parquet, |d| run(&ds, d), &keep);
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }
}
