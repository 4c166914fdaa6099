//! The fuzz corpus on stable Rust, and a bounded mutation pass over the seed inputs.
//!
//! Every file of `testdata/fuzz/TARGET/` (inputs that once crashed, hung or ballooned a
//! parser) goes through its parser's checks (`upcmp_parsers::harness`), within a memory
//! and a time bound. Then each format's seeds (`testdata/fuzz/seeds.list` and the corpus)
//! are mutated by a seeded, deterministic mutator, `UPCMP_MUTATIONS` inputs per format
//! (default 400; CI runs more), each checked the same way. An input that fails is written to
//! `target/tmp/fuzz-failures/` to be added to the corpus once fixed. docs/fuzzing.md
//! has the workflow.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use upcmp_parsers::harness::Format;

/// Counts the bytes each thread has allocated, and the peak, so that a test can measure
/// what one parse costs while other tests run on other threads.
struct CountingAllocator;

thread_local! {
    static LIVE: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

fn count(delta: isize) {
    // try_with: the allocator also runs while a thread's locals are torn down.
    let _ = LIVE.try_with(|live| {
        let now = live.get().wrapping_add(delta);
        live.set(now);
        let _ = PEAK.try_with(|peak| peak.set(peak.get().max(now)));
    });
}

unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc(layout);
        if !p.is_null() {
            count(layout.size() as isize);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc_zeroed(layout);
        if !p.is_null() {
            count(layout.size() as isize);
        }
        p
    }

    unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
        System.dealloc(p, layout);
        count(-(layout.size() as isize));
    }

    unsafe fn realloc(&self, p: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let q = System.realloc(p, layout, new_size);
        if !q.is_null() {
            count(new_size as isize - layout.size() as isize);
        }
        q
    }
}

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
    let base = LIVE.with(Cell::get);
    PEAK.with(|p| p.set(base));
    let start = Instant::now();
    let outcome = catch_unwind(AssertUnwindSafe(|| format.check(data)));
    let elapsed = start.elapsed();
    let used = PEAK.with(Cell::get) - base;
    if let Err(panic) = outcome {
        let message = panic
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| panic.downcast_ref::<&str>().copied())
            .unwrap_or("a panic");
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
        let base = LIVE.with(Cell::get);
        PEAK.with(|p| p.set(base));
        let result = match format {
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
        };
        let used = PEAK.with(Cell::get) - base;
        let e = result.expect_err(format.name());
        assert!(e.expected.contains("a line of at most"), "{}: {e}", format.name());
        // The line buffer grows by doubling up to the bound.
        assert!(
            used <= 2 * line_bound as isize + (1 << 20),
            "{}: held {used} bytes",
            format.name()
        );
    }
}

/// A small, seeded pseudo-random generator (splitmix64): the same seed gives the same
/// mutations on every machine.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number below `n` (0 when `n` is 0).
    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// Numbers that parsers get wrong: zero, signs, the edges of u32 and u64, huge and
/// special floats, CPU numbers at and past the bound, too many digits.
const NUMBERS: &[&str] = &[
    "0",
    "-1",
    "-0",
    "1",
    "4294967295",
    "4294967296",
    "18446744073709551615",
    "18446744073709551616",
    "99999999999999999999999999",
    "1e308",
    "-1e308",
    "1e-320",
    "inf",
    "-inf",
    "nan",
    "NaN",
    "infinity",
    "0.0",
    "8191",
    "8192",
    "100000000",
    "ffffffffffffffff",
    "10000000000000000",
    "0x",
    "",
];

/// Words of the formats, to splice in where a mutation needs structure.
const WORDS: &[&str] = &[
    "\n",
    "\r\n",
    "\t",
    " ",
    "\n\n",
    ";",
    ":",
    "[",
    "]",
    "(",
    ")",
    "#",
    "/",
    "+0x",
    "é",
    "\u{0}",
    " PERF_RECORD_COMM ",
    "upcmp-prfout 1\n",
    "upcmp-samples 1\n",
    "functions ",
    "end\n",
    "cpu 0 samples 1 lost 0 throttled 0\n",
    "cpus ",
    " trep @ ",
    " reps @ ",
    " msec (",
    "/sec): ",
    " [aggregate of 2 copies]",
    "Time: ",
    "Total time: ",
    " [sec]",
    "# Running '",
    "' benchmark:",
    "_[k]",
    " [kernel.kallsyms]",
];

/// Applies one to four random edits to `data`: bit flips, inserted runs long enough to
/// pass the name and line bounds, number substitutions, duplicated, dropped or swapped
/// lines, truncation, inserted format words, and splices of another seed.
fn mutate(rng: &mut Rng, data: &[u8], seeds: &[Vec<u8>]) -> Vec<u8> {
    let mut out = data.to_vec();
    for _ in 0..1 + rng.below(4) {
        match rng.below(10) {
            0 => {
                if !out.is_empty() {
                    let at = rng.below(out.len());
                    out[at] ^= 1 << rng.below(8);
                }
            }
            1 => {
                // A run: usually past MAX_NAME_BYTES, rarely past a line bound.
                let len = match rng.below(20) {
                    0 => (1 << 20) + rng.below(1 << 10),
                    1..=9 => 4096 + rng.below(64),
                    _ => rng.below(300),
                };
                let byte = *rng.pick(b"a7 ;\t\n:[]f.");
                let at = rng.below(out.len() + 1);
                out.splice(at..at, std::iter::repeat_n(byte, len));
            }
            2 | 3 => {
                // Replace a number (a run of digits, dots and hex letters) with an odd one.
                let starts: Vec<usize> = (0..out.len())
                    .filter(|&i| out[i].is_ascii_digit() && (i == 0 || !out[i - 1].is_ascii_alphanumeric()))
                    .collect();
                if !starts.is_empty() {
                    let at = *rng.pick(&starts);
                    let end = (at..out.len())
                        .find(|&i| !(out[i].is_ascii_hexdigit() || out[i] == b'.'))
                        .unwrap_or(out.len());
                    out.splice(at..end, rng.pick(NUMBERS).bytes());
                }
            }
            4 | 5 => {
                // Duplicate, drop or swap lines.
                let mut lines: Vec<Vec<u8>> = out.split_inclusive(|&b| b == b'\n').map(<[u8]>::to_vec).collect();
                if !lines.is_empty() {
                    let k = rng.below(lines.len());
                    match rng.below(3) {
                        0 => {
                            let copies = if rng.below(4) == 0 { 1 + rng.below(200) } else { 1 };
                            let line = lines[k].clone();
                            for _ in 0..copies {
                                lines.insert(k, line.clone());
                            }
                        }
                        1 => {
                            lines.remove(k);
                        }
                        _ => {
                            let j = rng.below(lines.len());
                            lines.swap(k, j);
                        }
                    }
                    out = lines.concat();
                }
            }
            6 => out.truncate(rng.below(out.len() + 1)),
            7 | 8 => {
                let at = rng.below(out.len() + 1);
                out.splice(at..at, rng.pick(WORDS).bytes());
            }
            _ => {
                // Splice a piece of a seed in.
                let other = rng.pick(seeds);
                if !other.is_empty() {
                    let from = rng.below(other.len());
                    let to = (from + rng.below(400)).min(other.len());
                    let at = rng.below(out.len() + 1);
                    out.splice(at..at, other[from..to].iter().copied());
                }
            }
        }
    }
    out
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
fn the_mutator_is_deterministic() {
    let seeds = vec![b"a;b 12\nc 3\n".to_vec()];
    let run = |seed| {
        let mut rng = Rng(seed);
        (0..50).map(|_| mutate(&mut rng, &seeds[0], &seeds)).collect::<Vec<_>>()
    };
    assert_eq!(run(7), run(7));
    assert_ne!(run(7), run(8));
}
