//! Every parser of this crate run on raw bytes, checking what must hold whatever the input.
//!
//! The fuzz targets (`fuzz/`, one per [`Format`]) and the stable corpus and mutation tests
//! (`parsers/tests/fuzz_corpus.rs`, and the importers' `tests/fuzz.rs`, which also take
//! its bounded run, corpus reading and mutation pass) share this module, so an input that fails under the
//! fuzzer fails the same way in `cargo test`. [`Format::check`] panics when a property does
//! not hold, and lets a parser's own panic through: both are what a fuzzer reports.
//! Memory and time are bounded by the callers (libFuzzer's `-rss_limit_mb` and `-timeout`,
//! the corpus test's counting allocator and clock).
//!
//! The properties: the parser returns; an error names the input and a line and column
//! inside it; and what a parse returns keeps the bounds the crate promises (names at most
//! [`MAX_NAME_BYTES`], CPU numbers below [`MAX_CPUS`], sums below 2^64, finite times).

use crate::{counters, folded, kallsyms, keyvalue, perf_map, perf_script, prfout, procstat, samples, test_list, upout};
use crate::{ParseError, Position, MAX_CPUS, MAX_NAME_BYTES};

/// The name every check gives its input, as a parser's caller gives a path.
pub const INPUT_NAME: &str = "fuzz-input";

/// A format this crate parses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `perf script` text ([`perf_script::for_each_sample`]).
    PerfScript,
    /// Folded stacks ([`folded::for_each_stack`]).
    Folded,
    /// uprun's `prfout` ([`prfout::parse_prfout`]).
    Prfout,
    /// The text of `samples.gz` ([`samples::for_each_record`]).
    Samples,
    /// A benchmark's output ([`upout::parse_upout`]).
    Upout,
    /// A `test_list` ([`test_list::parse_test_list`]).
    TestList,
    /// `/proc/kallsyms` ([`kallsyms::entries`]).
    Kallsyms,
    /// A JIT's `/tmp/perf-PID.map` ([`perf_map::read`]).
    PerfMap,
    /// `key: value` files: run marker, `system`, `status` ([`keyvalue::parse_key_values`]).
    KeyValue,
    /// `/proc/stat` ([`procstat::parse_proc_stat`]).
    ProcStat,
    /// A test's `counters` file ([`counters::parse_counters`]).
    Counters,
}

impl Format {
    /// Every format, in the order of the fuzz targets' listing.
    pub const ALL: [Format; 11] = [
        Format::PerfScript,
        Format::Folded,
        Format::Prfout,
        Format::Samples,
        Format::Upout,
        Format::TestList,
        Format::Kallsyms,
        Format::PerfMap,
        Format::KeyValue,
        Format::ProcStat,
        Format::Counters,
    ];

    /// The name of the format's fuzz target and of its corpus directory
    /// (`testdata/fuzz/NAME/`).
    pub fn name(self) -> &'static str {
        match self {
            Format::PerfScript => "perf_script",
            Format::Folded => "folded",
            Format::Prfout => "prfout",
            Format::Samples => "samples",
            Format::Upout => "upout",
            Format::TestList => "test_list",
            Format::Kallsyms => "kallsyms",
            Format::PerfMap => "perf_map",
            Format::KeyValue => "keyvalue",
            Format::ProcStat => "procstat",
            Format::Counters => "counters",
        }
    }

    /// The format named `name` (see [`Format::name`]).
    pub fn from_name(name: &str) -> Option<Format> {
        Format::ALL.into_iter().find(|f| f.name() == name)
    }

    /// Parses `data` as this format and checks the result; panics when a property does
    /// not hold. Returns whether `data` parsed. Formats that callers read as text get
    /// `data` with invalid UTF-8 replaced (their callers refuse it before parsing).
    pub fn check(self, data: &[u8]) -> bool {
        let input = Input::new(data);
        let result = match self {
            Format::PerfScript => check_perf_script(&input),
            Format::Folded => check_folded(&input),
            Format::Prfout => check_prfout(&input),
            Format::Samples => check_samples(&input),
            Format::Upout => check_upout(&input),
            Format::TestList => check_test_list(&input),
            Format::Kallsyms => check_kallsyms(&input),
            Format::PerfMap => check_perf_map(&input),
            Format::KeyValue => check_key_values(&input),
            Format::ProcStat => check_proc_stat(&input),
            Format::Counters => check_counters(&input),
        };
        match result {
            Ok(()) => true,
            Err(e) => {
                input.check_error(&e);
                false
            }
        }
    }
}

/// The input as bytes and as text, and how many lines it has.
struct Input<'a> {
    bytes: &'a [u8],
    text: std::borrow::Cow<'a, str>,
    lines: usize,
}

impl<'a> Input<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        let text = String::from_utf8_lossy(bytes);
        // Lines as the readers number them: a last line without a newline counts.
        let lines = text.split('\n').count();
        Input { bytes, text, lines }
    }

    /// An error names the input, a line in it (0: the whole input) and a column in that
    /// line, and says what was expected.
    fn check_error(&self, e: &ParseError) {
        assert_eq!(e.file, INPUT_NAME, "{e}");
        assert!(e.line <= self.lines, "line {} of {}: {e}", e.line, self.lines);
        if e.line > 0 && e.column > 0 {
            let line = self.text.split('\n').nth(e.line - 1).unwrap_or("");
            // A replaced invalid byte is three bytes of text but one character.
            assert!(
                e.column <= line.chars().count() + 1,
                "column {} of {line:?}: {e}",
                e.column
            );
        }
        assert!(!e.expected.is_empty(), "{e:?}");
        assert!(e.found.chars().count() <= 41, "{e:?}");
        assert!(!e.to_string().is_empty());
    }
}

/// Counts the bytes each thread has allocated, and the peak, so that a check can be
/// measured while other tests run on other threads. A test binary installs it with
/// `#[global_allocator] static A: CountingAllocator = CountingAllocator;`; without it,
/// [`measured`] sees no allocation.
pub struct CountingAllocator;

thread_local! {
    static LIVE: std::cell::Cell<isize> = const { std::cell::Cell::new(0) };
    static PEAK: std::cell::Cell<isize> = const { std::cell::Cell::new(0) };
}

fn count(delta: isize) {
    // try_with: the allocator also runs while a thread's locals are torn down.
    let _ = LIVE.try_with(|live| {
        let now = live.get().wrapping_add(delta);
        live.set(now);
        let _ = PEAK.try_with(|peak| peak.set(peak.get().max(now)));
    });
}

// SAFETY: every call is passed on to the system allocator unchanged; only counted.
unsafe impl std::alloc::GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        let p = std::alloc::System.alloc(layout);
        if !p.is_null() {
            count(layout.size() as isize);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: std::alloc::Layout) -> *mut u8 {
        let p = std::alloc::System.alloc_zeroed(layout);
        if !p.is_null() {
            count(layout.size() as isize);
        }
        p
    }

    unsafe fn dealloc(&self, p: *mut u8, layout: std::alloc::Layout) {
        std::alloc::System.dealloc(p, layout);
        count(-(layout.size() as isize));
    }

    unsafe fn realloc(&self, p: *mut u8, layout: std::alloc::Layout, new_size: usize) -> *mut u8 {
        let q = std::alloc::System.realloc(p, layout, new_size);
        if !q.is_null() {
            count(new_size as isize - layout.size() as isize);
        }
        q
    }
}

/// What [`measured`] saw of one call.
pub struct Measured<R> {
    /// Its result, or the message of its panic.
    pub outcome: Result<R, String>,
    /// The most bytes it held at once on this thread, above what was held before.
    pub peak_bytes: isize,
    /// How long it took.
    pub elapsed: std::time::Duration,
}

/// Runs `f` on this thread, catching a panic, and measures its peak memory (with
/// [`CountingAllocator`] installed) and time.
pub fn measured<R>(f: impl FnOnce() -> R) -> Measured<R> {
    let base = LIVE.with(std::cell::Cell::get);
    PEAK.with(|p| p.set(base));
    let start = std::time::Instant::now();
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).map_err(|panic| {
        panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "a panic".into())
    });
    Measured {
        outcome,
        elapsed: start.elapsed(),
        peak_bytes: PEAK.with(std::cell::Cell::get) - base,
    }
}

/// Runs `f` [`measured`]: a panic, more than `max_bytes` held or more than `max_time`
/// taken is a failure, said in words (`input_len` is the input's size, for the message).
pub fn within_bounds<R>(
    input_len: usize,
    max_bytes: isize,
    max_time: std::time::Duration,
    f: impl FnOnce() -> R,
) -> Result<(), String> {
    let m = measured(f);
    if let Err(message) = m.outcome {
        return Err(format!("panicked: {message}"));
    }
    if m.peak_bytes > max_bytes {
        return Err(format!(
            "held {} bytes for an input of {input_len} (bound {max_bytes})",
            m.peak_bytes
        ));
    }
    if m.elapsed > max_time {
        return Err(format!("took {:?}", m.elapsed));
    }
    Ok(())
}

/// The files of `dir` (a target's corpus, `testdata/fuzz/TARGET/`), sorted, with their
/// bytes; none when the directory does not exist.
pub fn corpus_files(dir: &std::path::Path) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let mut files: Vec<std::path::PathBuf> = match std::fs::read_dir(dir) {
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

/// The seed files of `target` that `testdata/fuzz/seeds.list` of the repository at `repo`
/// lists (`TARGET PATH` lines, paths from the repository's root), with their bytes.
pub fn listed_seeds(repo: &std::path::Path, target: &str) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let text = std::fs::read_to_string(repo.join("testdata/fuzz/seeds.list")).expect("testdata/fuzz/seeds.list");
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .filter_map(|l| l.split_once(' '))
        .filter(|(t, _)| *t == target)
        .map(|(_, path)| {
            let p = repo.join(path.trim());
            let data = std::fs::read(&p).unwrap_or_else(|e| panic!("{} (seeds.list): {e}", p.display()));
            (p, data)
        })
        .collect()
}

/// Mutated inputs a target: `UPCMP_MUTATIONS`, else `default`.
pub fn mutations(default: usize) -> usize {
    std::env::var("UPCMP_MUTATIONS")
        .ok()
        .map(|v| v.parse().expect("UPCMP_MUTATIONS: a whole number"))
        .unwrap_or(default)
}

/// A mutator of [`crate::mutate`]: an input from a seed and the other seeds.
pub type Mutator = fn(&mut crate::mutate::Rng, &[u8], &[Vec<u8>]) -> Vec<u8>;

/// A mutation pass: [`mutations`]`(default)` inputs made by `mutate` from `seeds`, with a
/// generator seeded by `target`'s name (each target its own sequence, the same on every
/// machine), each given to `check`. Returns the failures (at most 5), each input written
/// to `keep_dir` by [`keep_failure`].
pub fn mutation_pass(
    target: &str,
    seeds: &[Vec<u8>],
    default: usize,
    mutate: Mutator,
    mut check: impl FnMut(&[u8]) -> Result<(), String>,
    keep_dir: &std::path::Path,
) -> Vec<String> {
    let mut rng = crate::mutate::Rng(target.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    }));
    let mut failures = Vec::new();
    for k in 0..mutations(default) {
        let seed = rng.pick(seeds).clone();
        let input = mutate(&mut rng, &seed, seeds);
        if let Err(f) = check(&input) {
            failures.push(keep_failure(keep_dir, target, &format!("mutation-{k}"), &input, &f));
            if failures.len() >= 5 {
                break;
            }
        }
    }
    failures
}

/// Writes a failing input to `dir` (`target/tmp/fuzz-failures/`) where a developer finds
/// it, and says how to keep it.
pub fn keep_failure(dir: &std::path::Path, target: &str, what: &str, data: &[u8], failure: &str) -> String {
    std::fs::create_dir_all(dir).expect("target/tmp/fuzz-failures");
    let file = dir.join(format!("{target}-{what}"));
    std::fs::write(&file, data).expect("writing a failing input");
    format!(
        "{target} {what}: {failure} (input written to {}; once fixed, copy it to testdata/fuzz/{target}/)",
        file.display()
    )
}

fn assert_name(name: &str) {
    assert!(name.len() <= MAX_NAME_BYTES, "a name of {} bytes", name.len());
}

fn check_perf_script(input: &Input<'_>) -> Result<(), ParseError> {
    // Every line reads as the nom grammar the hand-written field readers come from.
    for line in input.bytes.split(|&b| b == b'\n') {
        if let Ok(line) = std::str::from_utf8(line) {
            perf_script::reference::check_line(line.strip_suffix('\r').unwrap_or(line));
        }
    }
    let run = |chain, bytes: &[u8], at: Position| {
        let mut samples = Vec::new();
        let stats = perf_script::for_each_sample_from(bytes, INPUT_NAME, chain, at, |s| {
            assert_name(s.comm);
            assert!(s.cpu.is_none_or(|c| c < MAX_CPUS), "{s:?}");
            s.event.map(assert_name);
            for f in &s.frames {
                f.symbol.map(assert_name);
                f.dso.map(assert_name);
            }
            if chain == perf_script::Chain::Leaf {
                assert!(s.frames.len() <= 1, "{s:?}");
            }
            samples.push((s.tid, s.cpu, s.time_ns, s.period, s.leaf().map(|f| f.ip)));
        });
        stats.map(|stats| {
            assert_eq!(stats.samples as usize, samples.len());
            (stats, samples)
        })
    };
    let full = run(perf_script::Chain::Full, input.bytes, Position::default());
    // Only the innermost frames: the same samples, the same errors.
    let leaf = run(perf_script::Chain::Leaf, input.bytes, Position::default());
    match (&full, &leaf) {
        (Ok(a), Ok(b)) => assert_eq!(a.1, b.1),
        (Err(a), Err(b)) => assert_eq!((a.line, &a.expected), (b.line, &b.expected)),
        _ => panic!(
            "full chains {:?}, leaves only {:?}",
            full.as_ref().err(),
            leaf.as_ref().err()
        ),
    }
    // Read in place, as the import reads pieces in memory: the same samples, the same errors.
    let in_place = {
        let mut samples = Vec::new();
        perf_script::for_each_sample_in_piece(
            input.bytes,
            INPUT_NAME,
            perf_script::Chain::Leaf,
            Position::default(),
            |s| samples.push((s.tid, s.cpu, s.time_ns, s.period, s.leaf().map(|f| f.ip))),
        )
        .map(|stats| (stats, samples))
    };
    match (&full, &in_place) {
        (Ok(a), Ok(b)) => assert_eq!((a.0.samples, a.0.lines, &a.1), (b.0.samples, b.0.lines, &b.1)),
        (Err(a), Err(b)) => assert_eq!((a.line, &a.expected), (b.line, &b.expected)),
        _ => panic!(
            "read line by line {:?}, in place {:?}",
            full.as_ref().err(),
            in_place.as_ref().err()
        ),
    }
    let (stats, samples) = full?;
    assert!(stats.lines <= input.lines);
    // Cut where piece_end says (as the parallel import does), the pieces hold the same
    // samples as the whole.
    if let Some(cut) = perf_script::piece_end(&input.bytes[..input.bytes.len() / 2]) {
        let (head, tail) = input.bytes.split_at(cut);
        let at = Position {
            lines: head.iter().filter(|&&b| b == b'\n').count(),
            bytes: cut as u64,
        };
        let mut pieces = run(perf_script::Chain::Leaf, head, Position::default())
            .expect("the head of a cut input parses")
            .1;
        pieces.extend(
            run(perf_script::Chain::Leaf, tail, at)
                .expect("the tail of a cut input parses")
                .1,
        );
        assert_eq!(pieces, samples, "cut at byte {cut}");
    }
    Ok(())
}

fn check_folded(input: &Input<'_>) -> Result<(), ParseError> {
    let mut sum = 0u64;
    let mut long = 0;
    let stats = folded::for_each_stack(input.bytes, INPUT_NAME, |s| {
        sum = sum.checked_add(s.count).expect("the parser checks the sum");
        long += s.long_frames();
        assert!(!s.stack.is_empty());
        assert_name(s.leaf());
        s.frames().for_each(assert_name);
    })?;
    assert_eq!((stats.samples, stats.truncated_names), (sum, long));
    assert!(stats.lines <= input.lines);
    Ok(())
}

fn check_prfout(input: &Input<'_>) -> Result<(), ParseError> {
    let p = prfout::parse_prfout(&input.text, INPUT_NAME)?;
    assert!(p.wall_sec.is_finite() && p.wall_sec >= 0.0 && p.wall_sec <= prfout::MAX_SECONDS);
    let most = match p.unit.as_str() {
        "ns" => prfout::MAX_SECONDS * 1e9,
        "events" => u64::MAX as f64,
        unit => panic!("unit {unit:?}"),
    };
    assert!(
        p.period.is_finite() && p.period > 0.0 && p.period <= most,
        "{}",
        p.period
    );
    assert!((1..=MAX_CPUS as usize).contains(&p.cpus.len()));
    let mut numbers: Vec<u32> = p.cpus.iter().map(|c| c.cpu).collect();
    numbers.sort_unstable();
    numbers.dedup();
    assert_eq!(numbers.len(), p.cpus.len(), "CPU numbers are distinct");
    assert!(numbers.iter().all(|&c| c < MAX_CPUS));
    let total = p.cpus.iter().try_fold(0u64, |sum, c| sum.checked_add(c.samples));
    let total = total.expect("the parser checks the sum of all CPUs' samples");
    // Each CPU's weight, given or implied, and their sum fit in 64 bits.
    let weights = p
        .cpus
        .iter()
        .map(|c| c.weight.or_else(|| prfout::implied_weight(c.samples, p.period)));
    let all = weights
        .clone()
        .try_fold(0u64, |sum, w| w.and_then(|w| sum.checked_add(w)));
    assert!(all.is_some(), "the parser checks the sum of all CPUs' weights");
    for c in &p.cpus {
        assert!(c.procstat_busy_sec.is_none_or(|b| b.is_finite() && b >= 0.0));
    }
    let mut functions = 0u64;
    for (k, c) in p.cpus.iter().enumerate() {
        let column = p
            .functions
            .iter()
            .map(|f| f.per_cpu[k])
            .try_fold(0u64, u64::checked_add);
        assert_eq!(column, Some(c.samples));
        let weight = p
            .functions
            .iter()
            .map(|f| match &f.weights {
                Some((w, _)) => Some(w[k]),
                None => prfout::implied_weight(f.per_cpu[k], p.period),
            })
            .try_fold(0u64, |sum, w| w.and_then(|w| sum.checked_add(w)));
        assert!(weight.is_some(), "the parser checks the sum of cpu {}'s weights", c.cpu);
        assert!(c.weight.is_none_or(|w| Some(w) == weight));
    }
    for f in &p.functions {
        assert_eq!(f.per_cpu.len(), p.cpus.len());
        if let Some((w, squares)) = &f.weights {
            assert_eq!(w.len(), p.cpus.len());
            assert!(squares.is_finite() && *squares >= 0.0, "{squares}");
        }
        assert_name(&f.name);
        assert_name(&f.module);
        functions += f.total();
    }
    assert_eq!(functions, total);
    assert_name(&p.test);
    assert_name(&p.event);
    p.command.as_deref().map(assert_name);
    p.idle_set.iter().for_each(|n| assert_name(n));
    Ok(())
}

fn check_samples(input: &Input<'_>) -> Result<(), ParseError> {
    let mut records = 0u64;
    let max_frames = samples::max_frames(input.bytes.len() as u64);
    let mut frames = 0u64;
    let stats = samples::for_each_record(input.bytes, INPUT_NAME, max_frames, |r| {
        records += 1;
        match r {
            samples::Record::Sample(s) => {
                assert!(s.cpu < MAX_CPUS);
                frames += s.callchain.len() as u64;
            }
            samples::Record::Lost { cpu, .. } | samples::Record::Throttle { cpu } => assert!(cpu < MAX_CPUS),
            samples::Record::Comm { comm, .. } => assert_name(&comm),
            samples::Record::Ksymbol(k) => assert_name(&k.name),
            samples::Record::Fork { .. } | samples::Record::BpfEvent { .. } => {}
        }
    })?;
    assert_eq!(stats.records, records);
    assert_eq!(stats.frames, frames);
    assert!(frames <= max_frames);
    assert!(stats.records + stats.chains < input.lines as u64);
    Ok(())
}

fn check_upout(input: &Input<'_>) -> Result<(), ParseError> {
    for r in upout::parse_upout(&input.text, INPUT_NAME)? {
        assert!(r.value.is_finite() && r.value >= 0.0, "{r:?}");
        // A perf bench name within its label.
        assert!(r.description.len() <= MAX_NAME_BYTES + "Total time (perf bench )".len());
        assert!(!r.description.is_empty());
    }
    Ok(())
}

fn check_test_list(input: &Input<'_>) -> Result<(), ParseError> {
    let tests = test_list::parse_test_list(&input.text, INPUT_NAME)?;
    assert!(!tests.is_empty());
    for pair in tests.windows(2) {
        assert!(pair[0].line < pair[1].line);
    }
    for t in &tests {
        let name = t.spec.name();
        assert!(!name.is_empty() && name.len() <= test_list::MAX_TEST_NAME_BYTES && !name.starts_with('.'));
        assert!(t.line <= input.lines);
    }
    Ok(())
}

fn check_kallsyms(input: &Input<'_>) -> Result<(), ParseError> {
    let mut first_error: Option<ParseError> = None;
    let mut last_line = 0;
    let lines = input.text.lines().filter(|l| !l.trim().is_empty());
    for (entry, line) in kallsyms::entries(&input.text, INPUT_NAME).zip(lines) {
        match entry {
            Ok(e) => {
                assert_name(e.name);
                e.module.map(assert_name);
                assert!(e.kind.is_ascii_alphabetic());
                // The byte-by-byte reading of a line is nom's.
                let nom = kallsyms::parse_line(INPUT_NAME, 1, line).expect("nom reads the line too");
                assert_eq!(
                    (nom.address, nom.kind, crate::bounded_name(nom.name).0),
                    (e.address, e.kind, e.name),
                    "{line:?}"
                );
                assert_eq!(nom.module.map(|m| crate::bounded_name(m).0), e.module, "{line:?}");
            }
            // Every bad line is reported, in order; the first error stands for the input
            // (and is checked in full by the caller).
            Err(e) => {
                assert!(e.line > last_line && e.line <= input.lines, "{e}");
                last_line = e.line;
                first_error.get_or_insert(e);
            }
        }
    }
    first_error.map_or(Ok(()), Err)
}

fn check_perf_map(input: &Input<'_>) -> Result<(), ParseError> {
    let map = perf_map::read(&input.text, INPUT_NAME);
    let non_blank = input.text.lines().filter(|l| !l.trim().is_empty()).count();
    assert_eq!(map.entries.len() + map.bad_lines, non_blank);
    assert!(map.truncated_names <= map.entries.len());
    map.entries.iter().for_each(|e| assert_name(e.name));
    Ok(())
}

fn check_key_values(input: &Input<'_>) -> Result<(), ParseError> {
    let kv = keyvalue::parse_key_values(&input.text, INPUT_NAME)?;
    let mut keys: Vec<&str> = kv.entries.iter().map(|(k, _, _)| k.as_str()).collect();
    keys.sort_unstable();
    let all = keys.len();
    keys.dedup();
    assert_eq!(keys.len(), all, "each key once");
    for pair in kv.entries.windows(2) {
        assert!(pair[0].2 < pair[1].2, "lines in order");
    }
    assert!(kv.entries.iter().all(|(_, _, line)| *line >= 1 && *line <= input.lines));
    if let Some((k, v, _)) = kv.entries.last() {
        assert_eq!(kv.get(k), Some(v.as_str()));
    }
    Ok(())
}

fn check_proc_stat(input: &Input<'_>) -> Result<(), ParseError> {
    for s in procstat::parse_proc_stat(&input.text, INPUT_NAME)? {
        assert!(s.cpu < MAX_CPUS);
        let all = s.ticks.iter().try_fold(0u64, |sum, &t| sum.checked_add(t));
        assert!(all.is_some_and(|all| s.busy() <= all));
    }
    Ok(())
}

fn check_counters(input: &Input<'_>) -> Result<(), ParseError> {
    let c = counters::parse_counters(&input.text, INPUT_NAME)?;
    assert!(c.window_sec.is_finite() && c.window_sec >= 0.0, "{}", c.window_sec);
    let mut names: Vec<&str> = c.counters.iter().map(|(n, _)| n.as_str()).collect();
    assert!(names.iter().all(|n| !n.is_empty() && !n.contains(char::is_whitespace)));
    names.sort_unstable();
    let all = names.len();
    names.dedup();
    assert_eq!(names.len(), all, "each counter once");
    for (n, v) in &c.counters {
        assert_eq!(c.get(n), Some(*v));
        assert!(v.change().is_none_or(f64::is_finite));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for f in Format::ALL {
            assert_eq!(Format::from_name(f.name()), Some(f));
        }
        assert_eq!(Format::from_name("perf-script"), None);
    }

    #[test]
    fn good_and_bad_inputs() {
        assert!(Format::Folded.check(b"a;b 1\n"));
        assert!(!Format::Folded.check(b"a;b\n"));
        assert!(Format::Samples.check(b"upcmp-samples 1\nt 1\n"));
        assert!(!Format::Samples.check(b"upcmp-samples 1\nt 8192\n"));
        assert!(Format::Samples.check(b"upcmp-samples 3\nk 0 -80 = +1\ns 5 0 1 1 k ff *0\ns -1 0 1 1 k fe *0\n"));
        assert!(!Format::Samples.check(b"upcmp-samples 3\nk 0 -80 =\ns 5 0 1 1 k ff *1\n"));
        // One frame a byte of input, at most: 64 frames named 30 times in 688 bytes.
        let named = format!(
            "upcmp-samples 3\nk 0{}\n{}",
            " 0".repeat(64),
            "s 1 0 1 1 k ff *0\n".repeat(30)
        );
        assert!(!Format::Samples.check(named.as_bytes()), "{}", named.len());
        assert!(!Format::KeyValue.check(b"a: 1\na: 2\n"));
    }

    #[test]
    #[should_panic(expected = "line 9 of 1")]
    fn an_error_outside_the_input_is_caught() {
        Input::new(b"x").check_error(&ParseError::at(INPUT_NAME, 9, "x", "", "y"));
    }
}
