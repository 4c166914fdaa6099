//! Profiles from the files Linux users already have: `perf.data`, `perf script` text and
//! folded stacks. Each becomes the same [`Profile`] a uprun test directory holds, so
//! there is one comparison path whatever the source (`docs/import.md`).
//!
//! How time is derived: [`SampleTimes::derive`] (folded stacks, which carry no time: 1 ms
//! a sample unless [`ImportOptions::period_sec`] says otherwise, and samples × period of
//! wall time).
//! - **CPUs**: perf.data's online-CPU count (and any other CPU seen in a sample); for
//!   perf script, the highest CPU number seen + 1; folded stacks: 1.
//!
//! Over 1,000 lines: what every importer shares lives here (the input formats, the
//! options, the errors, the collector that counts stacks on a thread of its own, and
//! `SampleTimes`, the one derivation of time), over 1,000 lines of code alone;
//! the stack collector and `SampleTimes` (about 200 lines each) are the pieces to move
//! out next.

pub mod folded;
pub mod fuzz;
mod kernel;
mod maps;
pub mod perf_data;
pub mod perf_header;
pub(crate) mod perf_records;
mod pipe;
pub mod script;
mod unwind;

use crate::fsio::{self, Links};
use crate::model::mode::is_kernel_address;
use crate::model::profile::{module, Unit, UNKNOWN_FUNCTION};
use crate::model::{IdleSet, Profile, ProfileBuilder, ProfileMeta, SampleFilter, StackProfile};
use crate::symbols::SymbolCache;
use std::borrow::Cow;
use std::io::{BufRead, BufReader, Cursor, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use upcmp_parsers::ParseError;

/// The most a profile or a stack file may hold (`prfout`, `stacks.folded`): a profile of
/// 10^5 functions on 64 CPUs takes about 100 MB.
pub const PROFILE_CAP: u64 = 2 << 30;

/// Why a profile could not be imported.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ImportError {
    /// A sample filter was given for an input that does not carry what it filters on.
    #[error(
        "{}: {what} cannot be filtered: they carry no command, pid, tid, CPU or mode per sample (--comm, --pid, \
         --tid, --cpu, --kernel-only, --user-only apply to perf.data, perf script text and uprun profiles); give \
         the perf.data or its perf script text instead, or filter when collapsing: perf script -i FILE --comms NAME \
         --pid N --tid N --cpu N | inferno-collapse-perf > FILE.folded",
        path.display()
    )]
    Unfilterable {
        /// The input.
        path: PathBuf,
        /// What it is: folded stacks.
        what: &'static str,
    },
    /// A filter needs a field that a sample of perf script text does not print.
    #[error(
        "{file}:{line}: {option} filters on each sample's {field}, which this sample does not print; write the \
         text with it: perf script {fields}"
    )]
    FilterField {
        /// The input, as named in errors.
        file: String,
        /// The line of the first sample without the field.
        line: usize,
        /// The filter's option.
        option: &'static str,
        /// The missing field, as perf script names it.
        field: &'static str,
        /// The `perf script` fields that print it.
        fields: &'static str,
    },
    /// A file could not be read.
    #[error("reading {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A text input did not parse.
    #[error(transparent)]
    Parse(#[from] ParseError),
    /// A prfout file could not be read.
    #[error("{}: {source}", path.display())]
    Prfout {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        source: std::io::Error,
    },
    /// perf.data could not be read.
    #[error("{}: not a readable perf.data file: {reason}; `perf report -i {}` should read it", path.display(), path.display())]
    PerfData {
        /// The file.
        path: PathBuf,
        /// What was wrong, with the byte offset where the file stops when it is cut short.
        reason: String,
    },
    /// Kernel symbols could not be loaded.
    #[error(transparent)]
    Symbols(#[from] crate::symbols::SymbolError),
    /// The kernel symbols of a recording are not on this machine.
    #[error("{}: {why}; the kernel's symbols are needed: a copy of that machine's /proc/kallsyms, or its vmlinux", path.display())]
    NoKernelSymbols {
        /// The recording.
        path: PathBuf,
        /// What was looked for.
        why: String,
    },
    /// The event asked for is not in the recording.
    #[error("{}: no event {event}; the input has {available} (--event NAME picks one)", path.display())]
    NoSuchEvent {
        /// The input.
        path: PathBuf,
        /// The event asked for.
        event: String,
        /// The events it has.
        available: String,
    },
    /// The event read by default, the first, has no sample, but a later one has: perf
    /// report shows that one first (a hybrid CPU's `cpu_atom` and `cpu_core` events).
    /// A file is read again for it; a stream cannot be.
    #[error(
        "{}: its first event, {first}, has no samples; {with_samples} has: --event {with_samples} reads it",
        path.display()
    )]
    FirstEventEmpty {
        /// The input.
        path: PathBuf,
        /// The first event.
        first: String,
        /// The first event with samples.
        with_samples: String,
    },
    /// The input held no sample.
    #[error("{}: no samples{hint}", path.display())]
    NoSamples {
        /// The input.
        path: PathBuf,
        /// What may be wrong.
        hint: &'static str,
    },
}

impl ImportError {
    fn io(path: &Path) -> impl FnOnce(std::io::Error) -> ImportError + '_ {
        move |source| ImportError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}

/// The kinds of profile input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputFormat {
    /// A uprun `prfout` file, or a test directory holding one.
    Prfout,
    /// A `perf record` file.
    PerfData,
    /// `perf script` output.
    PerfScript,
    /// Folded stacks (`a;b;c 123`).
    Folded,
}

impl InputFormat {
    /// Every format, with the name used on the command line.
    pub const ALL: [(&'static str, InputFormat); 4] = [
        ("prfout", InputFormat::Prfout),
        ("perf-data", InputFormat::PerfData),
        ("perf-script", InputFormat::PerfScript),
        ("folded", InputFormat::Folded),
    ];

    /// Guesses the format of `path` from its first bytes: a directory or a file starting
    /// `upcmp-prfout` is a prfout, `PERFILE2` is perf.data, text whose first line ends in a
    /// count after a `;`-joined stack is folded, and other text is perf script output.
    /// The first line is read whole, however long.
    pub fn detect(path: &Path) -> Result<InputFormat, ImportError> {
        if path.is_dir() {
            return Ok(InputFormat::Prfout);
        }
        let f = open_input(path).map_err(ImportError::io(path))?;
        let mut head = Vec::new();
        read_head(&mut BufReader::new(f), &mut head).map_err(ImportError::io(path))?;
        Ok(Self::detect_bytes(&head))
    }

    /// [`InputFormat::detect`] on the first bytes of an input, which must hold its first
    /// line that is neither blank nor a `#` comment whole (as [`read_head`] reads them): a
    /// line cut short reads as neither folded nor perf script.
    pub fn detect_bytes(head: &[u8]) -> InputFormat {
        if is_perf_data(head) {
            return InputFormat::PerfData;
        }
        if head.starts_with(prfout_magic().as_bytes()) {
            return InputFormat::Prfout;
        }
        let text = String::from_utf8_lossy(head);
        let first = text.lines().find(|l| !l.trim().is_empty() && !l.starts_with('#'));
        match first {
            Some(l) if upcmp_parsers::folded::parse_line(l, "", 1).is_ok() && !looks_like_script(l) => {
                InputFormat::Folded
            }
            _ => InputFormat::PerfScript,
        }
    }
}

/// Opens an input file: a regular file only, so a FIFO cannot block and a device cannot
/// be read without end (standard input, `-`, is the way to pipe text in).
pub(crate) fn open_input(path: &Path) -> std::io::Result<std::fs::File> {
    crate::fsio::open_regular(path, crate::fsio::Links::Follow)
}

/// Whether `head` starts with perf.data's magic, in either byte order, of the format
/// read (version 2) or of the old one (version 1, `PERFFILE`, refused by the importer
/// with what it is rather than read as text).
fn is_perf_data(head: &[u8]) -> bool {
    head.starts_with(b"PERFILE2") || head.starts_with(b"2ELIFREP") || perf_data::is_version_1(head)
}

/// Reads the start of `input` into `head`, enough to tell its format: the 8 bytes of a
/// binary magic, or every line up to and including the first that is neither blank nor a
/// `#` comment (whole: the format is decided on whole lines, so a folded stack of
/// thousands of frames is still seen to end in its count). What is read stays in `head`;
/// the input continues after it.
pub fn read_head(input: &mut impl BufRead, head: &mut Vec<u8>) -> std::io::Result<()> {
    // perf.data has no line structure: look for its magic before reading lines.
    while head.len() < 8 {
        let avail = input.fill_buf()?;
        if avail.is_empty() {
            return Ok(());
        }
        let n = avail.len().min(8 - head.len());
        head.extend_from_slice(&avail[..n]);
        input.consume(n);
    }
    if is_perf_data(head) {
        return Ok(());
    }
    let mut start = 0;
    loop {
        if let Some(nl) = head[start..].iter().position(|&b| b == b'\n') {
            let line = &head[start..start + nl];
            if !line.trim_ascii().is_empty() && !line.starts_with(b"#") {
                return Ok(());
            }
            start += nl + 1;
            continue;
        }
        if input.read_until(b'\n', head)? == 0 {
            return Ok(());
        }
    }
}

fn prfout_magic() -> &'static str {
    upcmp_parsers::prfout::MAGIC
}

// A perf script header has a `[cpu]` or a `time:` after the thread id.
fn looks_like_script(line: &str) -> bool {
    upcmp_parsers::perf_script::parse_header(line, "", 1)
        .is_ok_and(|s| s.cpu.is_some() || s.time_ns.is_some() || s.event.is_some())
}

/// Options of an import.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct ImportOptions {
    /// The input's format; guessed from its content when None.
    pub format: Option<InputFormat>,
    /// Kernel symbols for perf.data (a copy of /proc/kallsyms, `.gz` allowed).
    pub kallsyms: Option<PathBuf>,
    /// An ELF vmlinux for perf.data's core-kernel symbols.
    pub vmlinux: Option<PathBuf>,
    /// Time one sample stands for, overriding what the input says (seconds).
    pub period_sec: Option<f64>,
    /// Also collect the call stacks (for differential flame graphs), when the input has
    /// call chains.
    pub stacks: bool,
    /// The event to read from a recording of several (`cpu-clock`, or `cpu-clock:u` as
    /// perf names it); the first one when None, as `perf report` shows it first.
    pub event: Option<String>,
    /// Only the samples this keeps are read (perf.data; other text inputs are refused
    /// with a filter, and a prfout is rebuilt from its raw samples by the caller).
    pub filter: SampleFilter,
    /// Symbol tables shared with the imports that run beside this one (perf.data), so that
    /// a file both read is loaded once; None: this import loads its own.
    pub symbols: Option<SymbolCache>,
    /// When a perf.data file is read by two readers, one per core ([`Split`]).
    pub split: Split,
    /// The readers running of the imports given these options or their clones: a
    /// perf.data import splits only while a core has none.
    pub readers: Readers,
    /// Functions whose sampled addresses are collected (`--annotate FUNC`; perf.data's
    /// user-space functions): [`Imported::annotated`].
    pub annotate: Vec<String>,
    /// Collect every function's sampled addresses (a perf.data file's user-space
    /// functions in ELF files, and its core-kernel ones given `vmlinux`): the page's
    /// listed functions are annotated from them (`upcmp --perf`, `--annotate-page`).
    pub annotate_all: bool,
}

/// When a perf.data import hands the rest of its file to a second reader on another core,
/// which reads it from where the first one is (its mappings, commands, caches and names
/// copied), the two profiles and stacks merged at the end: the same result as one
/// reader's, bit for bit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Split {
    /// At a round's end, when a core has no reader, at least [`SPLIT_MIN_BYTES`] are
    /// read and two thirds of the file or more are left: a large file read alone, or
    /// beside a much smaller one. (The larger of a comparison's two recordings of a
    /// similar size is not split when the smaller one ends: too little is left then.)
    #[default]
    WhenCoreIdle,
    /// Never: one reader.
    Never,
    /// At the first round's end, in the middle of what is left, however little (to test
    /// the split on small files).
    AtOnce,
}

/// What a file must have been read of before it is split, and have left: the imports
/// beside it have all begun by then, and below it a second reader (which copies the
/// first one's tables, walks the records before its part, and is merged) costs more
/// than it saves.
pub const SPLIT_MIN_BYTES: u64 = 32 << 20;

/// The readers running (see [`ImportOptions::readers`]).
#[derive(Debug, Clone, Default)]
pub struct Readers(Arc<AtomicUsize>);

impl Readers {
    /// Counts a reader until the guard is dropped.
    pub(crate) fn enter(&self) -> ReaderGuard {
        self.0.fetch_add(1, Ordering::Relaxed);
        ReaderGuard(Arc::clone(&self.0))
    }

    /// Whether a core has no reader.
    pub(crate) fn core_idle(&self) -> bool {
        // Asked at every round's end; the answer reads the cgroup's files.
        static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
        let cores = *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
        self.0.load(Ordering::Relaxed) < cores
    }
}

/// A running reader, counted until dropped.
pub(crate) struct ReaderGuard(Arc<AtomicUsize>);

impl Drop for ReaderGuard {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl ImportOptions {
    /// Options with every field given.
    pub fn new(
        format: Option<InputFormat>,
        kallsyms: Option<PathBuf>,
        vmlinux: Option<PathBuf>,
        period_sec: Option<f64>,
    ) -> Self {
        ImportOptions {
            format,
            kallsyms,
            vmlinux,
            period_sec,
            stacks: false,
            event: None,
            filter: SampleFilter::default(),
            symbols: None,
            split: Split::default(),
            readers: Readers::default(),
            annotate: Vec::new(),
            annotate_all: false,
        }
    }

    /// The same options with a new symbol cache, which the imports given clones of them
    /// share (and free with the last clone).
    pub fn sharing_symbols(mut self) -> Self {
        self.symbols = Some(SymbolCache::default());
        self
    }

    /// The same options, splitting a perf.data file between two readers as `split` says.
    pub fn with_split(mut self, split: Split) -> Self {
        self.split = split;
        self
    }

    /// The same options, collecting call stacks or not.
    pub fn with_stacks(mut self, stacks: bool) -> Self {
        self.stacks = stacks;
        self
    }

    /// The same options, reading `event` (None: the first).
    pub fn with_event(mut self, event: Option<String>) -> Self {
        self.event = event;
        self
    }

    /// The same options, collecting the sampled addresses of `functions`.
    pub fn with_annotate(mut self, functions: Vec<String>) -> Self {
        self.annotate = functions;
        self
    }

    /// The same options, collecting every function's sampled addresses when `all`.
    pub fn with_annotate_all(mut self, all: bool) -> Self {
        self.annotate_all = all;
        self
    }

    /// The same options, reading only the samples `filter` keeps.
    pub fn with_filter(mut self, filter: SampleFilter) -> Self {
        self.filter = filter;
        self
    }
}

/// A profile and, when asked for and the input has call chains, its call stacks.
#[derive(Debug, Clone)]
pub struct Imported {
    /// The flat profile, as a uprun test directory holds it.
    pub profile: Profile,
    /// Samples per call stack, root first (the command name as the root frame, as
    /// `perf script | stackcollapse-perf` folds them); `None` without call chains.
    pub stacks: Option<StackProfile>,
    /// The sampled addresses of the functions [`ImportOptions::annotate`] names, one
    /// entry per function and file.
    pub annotated: Vec<AnnotatedSamples>,
}

/// The file of [`AnnotatedSamples`] of a kernel function of a recording read without a
/// vmlinux: perf's name of the kernel mapping, no file to read code from.
pub const KERNEL_MAPPING: &str = "[kernel.kallsyms]";

/// A function's samples by address, in the ELF file that holds it.
#[derive(Debug, Clone, PartialEq)]
pub struct AnnotatedSamples {
    /// The function's name, as the profile names it.
    pub function: String,
    /// The file, as the recording names it.
    pub file: PathBuf,
    /// Its build-id, when recorded.
    pub build_id: Option<Vec<u8>>,
    /// Samples per address in the file (its virtual addresses, as its symbols have them).
    pub samples: std::collections::BTreeMap<u64, u64>,
    /// A core-kernel function (its file the vmlinux, or [`KERNEL_MAPPING`]).
    pub kernel: bool,
    /// `samples` are by offset from the function's start, not by address (perf script
    /// text prints `SYMBOL+0xOFFSET`, not where the file was mapped).
    pub by_offset: bool,
}

/// Collects call stacks during an import when [`ImportOptions::stacks`] asks for them
/// (the default collects none).
#[derive(Default)]
pub(crate) struct StackCollector {
    /// The stacks, or, while a [`StackCounter`] counts them, the frame names alone.
    profile: Option<StackProfile>,
    frames: Vec<u32>,
    /// Whether any sample had more than its own frame.
    chains: bool,
    counter: Option<StackCounter>,
}

/// Counts the stacks of an import on a thread of its own: the reading thread names the
/// frames and sends their ids in batches. Counting a stack hashes all its frames (a
/// tenth of a perf.data import with call chains), and the import of the larger
/// recording of a comparison is what the comparison waits for.
struct StackCounter {
    /// Stacks not yet sent, each `[frames, count (2 words), weight (2 words), frames...]`.
    batch: Vec<u32>,
    /// Frame names already sent: the counter interns them in the same order, so that
    /// the ids agree.
    names_sent: usize,
    to_counter: std::sync::mpsc::SyncSender<StackBatch>,
    counter: std::thread::JoinHandle<StackProfile>,
}

/// Stacks for the counter, and the frame names interned before them.
struct StackBatch {
    names: Vec<String>,
    stacks: Vec<u32>,
}

/// The words of a batch after which it is sent (256 KiB).
const STACK_BATCH_WORDS: usize = 1 << 16;

impl StackCounter {
    fn spawn() -> std::io::Result<Self> {
        // Two batches in flight: the reading thread never waits unless the counter lags.
        let (to_counter, batches) = std::sync::mpsc::sync_channel::<StackBatch>(2);
        let counter = std::thread::Builder::new()
            .name("stack counter".into())
            .spawn(move || {
                let mut p = StackProfile::default();
                for b in batches {
                    for n in &b.names {
                        p.intern(n);
                    }
                    let mut words = &b.stacks[..];
                    while let [n, c0, c1, w0, w1, rest @ ..] = words {
                        let (frames, next) = rest.split_at(*n as usize);
                        let joined = |lo: u32, hi: u32| u64::from(lo) | u64::from(hi) << 32;
                        p.add_weighted(frames, joined(*c0, *c1), joined(*w0, *w1));
                        words = next;
                    }
                }
                p
            })?;
        Ok(StackCounter {
            batch: Vec::with_capacity(STACK_BATCH_WORDS + 1024),
            names_sent: 0,
            to_counter,
            counter,
        })
    }

    fn add(&mut self, names: &StackProfile, frames: &[u32], count: u64, weight: u64) {
        let b = &mut self.batch;
        b.push(frames.len() as u32);
        b.extend([count as u32, (count >> 32) as u32, weight as u32, (weight >> 32) as u32]);
        b.extend_from_slice(frames);
        if b.len() >= STACK_BATCH_WORDS {
            self.send(names);
        }
    }

    fn send(&mut self, names: &StackProfile) {
        let batch = StackBatch {
            names: names.names()[self.names_sent..].to_vec(),
            stacks: std::mem::replace(&mut self.batch, Vec::with_capacity(STACK_BATCH_WORDS + 1024)),
        };
        self.names_sent = names.names().len();
        // The counter ends only when this side hangs up, or by a panic, which `finish`
        // passes on.
        let _ = self.to_counter.send(batch);
    }

    /// The stacks counted, once the last batch is.
    fn finish(mut self, names: &StackProfile) -> StackProfile {
        self.send(names);
        drop(self.to_counter);
        self.counter.join().unwrap_or_else(|p| std::panic::resume_unwind(p))
    }
}

impl StackCollector {
    pub(crate) fn new(wanted: bool) -> Self {
        StackCollector {
            profile: wanted.then(StackProfile::default),
            frames: Vec::new(),
            chains: false,
            counter: None,
        }
    }

    /// [`new`](Self::new), the stacks counted on a thread of their own ([`StackCounter`])
    /// when wanted (and the thread starts).
    pub(crate) fn counted_apart(wanted: bool) -> Self {
        StackCollector {
            counter: wanted.then(StackCounter::spawn).and_then(Result::ok),
            ..Self::new(wanted)
        }
    }

    /// A collector for a second reader of the same input ([`counted_apart`]): this one's
    /// frame names, so that the ids a reader has cached name the same frames there,
    /// nothing counted.
    ///
    /// [`counted_apart`]: Self::counted_apart
    pub(crate) fn for_second_reader(&self) -> Self {
        let wanted = self.wanted();
        StackCollector {
            profile: self.profile.as_ref().map(StackProfile::names_only),
            frames: Vec::new(),
            chains: false,
            counter: wanted.then(StackCounter::spawn).and_then(Result::ok),
        }
    }

    /// Whether stacks are being collected.
    pub(crate) fn wanted(&self) -> bool {
        self.profile.is_some()
    }

    /// Adds `count` samples weighing `weight` of the stack `root`, then `frames` (root
    /// first).
    pub(crate) fn add<'f>(
        &mut self,
        root: Option<&str>,
        frames: impl Iterator<Item = &'f str>,
        count: u64,
        weight: u64,
    ) {
        let Some(p) = &mut self.profile else { return };
        self.frames.clear();
        self.frames.extend(root.map(|r| p.intern(r)));
        let own = self.frames.len();
        self.frames.extend(frames.map(|f| p.intern(f)));
        self.chains |= self.frames.len() > own + 1;
        self.count(count, weight);
    }

    /// Notes that the input has call chains, even if each held one frame (the leaf of a
    /// `--call-graph dwarf` sample, whose user stack is left to unwinding).
    pub(crate) fn note_chains(&mut self) {
        self.chains = true;
    }

    /// The id of the frame called `name` (0 when stacks are not collected).
    pub(crate) fn intern(&mut self, name: &str) -> u32 {
        self.profile.as_mut().map_or(0, |p| p.intern(name))
    }

    /// [`add`](Self::add) with the frames interned: the root `root`, then `leaf_first`
    /// from the last (outermost) to the first.
    pub(crate) fn add_ids(&mut self, root: u32, leaf_first: &[u32], count: u64, weight: u64) {
        if self.profile.is_none() {
            return;
        }
        self.frames.clear();
        self.frames.push(root);
        self.frames.extend(leaf_first.iter().rev());
        self.chains |= leaf_first.len() > 1;
        self.count(count, weight);
    }

    /// Counts the stack in `frames`, here or on the counter's thread.
    fn count(&mut self, count: u64, weight: u64) {
        let Some(p) = &mut self.profile else { return };
        match &mut self.counter {
            Some(c) => c.add(p, &self.frames, count, weight),
            None => p.add_weighted(&self.frames, count, weight),
        }
    }

    /// The stacks, all counted.
    fn counted(&mut self) -> Option<StackProfile> {
        let names = self.profile.take()?;
        Some(match self.counter.take() {
            Some(c) => c.finish(&names),
            None => names,
        })
    }

    /// Adds the stacks `other` collected (a piece of the same input read apart).
    pub(crate) fn merge(&mut self, mut other: StackCollector) {
        self.chains |= other.chains;
        self.profile = self.counted();
        if let (Some(p), Some(o)) = (&mut self.profile, other.counted()) {
            p.merge(&o);
        }
    }

    /// The stacks, when some sample had a call chain.
    pub(crate) fn finish(mut self) -> Option<StackProfile> {
        self.counted().filter(|_| self.chains)
    }
}

/// Reads a profile of any supported format; `-` reads perf script or folded text from
/// standard input.
pub fn read_profile(path: &Path, opts: &ImportOptions) -> Result<Profile, ImportError> {
    Ok(import(path, opts)?.profile)
}

/// Reads a profile of any supported format, and its call stacks when
/// [`ImportOptions::stacks`] asks for them; `-` reads perf script or folded text from
/// standard input.
pub fn import(path: &Path, opts: &ImportOptions) -> Result<Imported, ImportError> {
    let _reading = opts.readers.enter();
    if path == Path::new("-") {
        let mut stdin = BufReader::with_capacity(1 << 16, std::io::stdin().lock());
        let mut head = Vec::new();
        read_head(&mut stdin, &mut head).map_err(ImportError::io(path))?;
        let format = opts.format.unwrap_or_else(|| InputFormat::detect_bytes(&head));
        // What was read to tell the format is read again by the importer.
        let input = Cursor::new(head).chain(stdin);
        return read_stream(format, input, "(standard input)", path, opts);
    }
    let format = match opts.format {
        Some(f) => f,
        None => InputFormat::detect(path)?,
    };
    match format {
        InputFormat::Prfout => {
            let p = if path.is_dir() {
                path.join("prfout")
            } else {
                path.to_path_buf()
            };
            let text = fsio::read_text(&p, Links::Follow, PROFILE_CAP).map_err(|source| ImportError::Prfout {
                path: p.clone(),
                source,
            })?;
            Ok(Imported {
                profile: upcmp_parsers::prfout::parse_prfout(&text, &p.display().to_string())
                    .map(Profile::from_prfout)?,
                stacks: None,
                annotated: Vec::new(),
            })
        }
        InputFormat::PerfData => perf_data::read(path, opts),
        InputFormat::PerfScript | InputFormat::Folded => {
            let f = open_input(path).map_err(ImportError::io(path))?;
            let input = BufReader::with_capacity(1 << 16, f);
            read_stream(format, input, &path.display().to_string(), path, opts)
        }
    }
}

/// Folded stacks carry no command, thread, CPU or mode per sample: a filter is refused
/// there, with what to give instead. perf script text is filtered as it is read
/// (`script::read`), sample by sample.
fn check_filterable(format: InputFormat, path: &Path, opts: &ImportOptions) -> Result<(), ImportError> {
    let what = match format {
        InputFormat::Folded => "folded stacks",
        InputFormat::PerfScript | InputFormat::PerfData | InputFormat::Prfout => return Ok(()),
    };
    if opts.filter.is_empty() {
        return Ok(());
    }
    Err(ImportError::Unfilterable {
        path: path.to_path_buf(),
        what,
    })
}

/// Reads an input that is read once, front to back (standard input, or a text file).
fn read_stream(
    format: InputFormat,
    input: impl BufRead,
    name: &str,
    path: &Path,
    opts: &ImportOptions,
) -> Result<Imported, ImportError> {
    check_filterable(format, path, opts)?;
    match format {
        InputFormat::Folded => folded::read(input, name, path, opts),
        InputFormat::PerfScript => script::read(input, name, path, opts),
        InputFormat::PerfData => perf_header::contained(path, || perf_data::read_pipe(input, path, opts)),
        InputFormat::Prfout => Err(ImportError::NoSamples {
            path: path.to_path_buf(),
            hint: " (a prfout is read from its file, not standard input)",
        }),
    }
}

/// The module of a perf DSO name, as the live collector names modules: `kernel` for the
/// kernel image (`[kernel.kallsyms]`, or the vmlinux file perf read its symbols from), the
/// module's name for a kernel module (`[ext4]`, or its `.ko` file: `nf-nat.ko.xz` is
/// `nf_nat`, as the kernel names it), the file name for user code (`libc.so.6`), and the
/// bracketed name of perf's special maps (`[vdso]` → `vdso`).
pub fn module_of_dso(dso: Option<&str>, ip: u64) -> Cow<'_, str> {
    let Some(dso) = dso else {
        return Cow::Borrowed(if is_kernel_address(ip) {
            module::KERNEL
        } else {
            module::USER
        });
    };
    let file = dso.rsplit('/').next().unwrap_or(dso);
    Cow::Borrowed(match dso {
        "[kernel.kallsyms]" | "[kernel.vmlinux]" | "[guest.kernel.kallsyms]" => module::KERNEL,
        // A kernel address perf found no map for: the kernel's, as the perf.data import
        // names a kernel address it cannot resolve (one rule for unresolved frames).
        "[unknown]" if is_kernel_address(ip) => module::KERNEL,
        d if d.starts_with('[') && d.ends_with(']') => &d[1..d.len() - 1],
        d if d.starts_with("[kernel.kallsyms]") => module::KERNEL,
        _ if is_kernel_address(ip) && file.starts_with("vmlinux") => module::KERNEL,
        _ if is_kernel_address(ip) => match kernel_module_file(file) {
            Some(m) if m.contains('-') => return Cow::Owned(m.replace('-', "_")),
            Some(m) => m,
            None => file,
        },
        _ => file,
    })
}

/// The module name of a kernel module's file name: `ext4.ko`, `ext4.ko.xz` → `ext4`.
fn kernel_module_file(file: &str) -> Option<&str> {
    [".ko", ".ko.xz", ".ko.zst", ".ko.gz"]
        .iter()
        .find_map(|ext| file.strip_suffix(ext))
        .filter(|m| !m.is_empty())
}

/// The name of a call-stack frame: the function as the flat profile names it, with the
/// module where the name alone would merge what differs. An unresolved frame keeps its
/// DSO (`[unknown] [libjvm.so]`, as the flat profile shows it) and a kernel module's
/// function its module (`ext4_file_write_iter [ext4]`, as a live run's stacks); user
/// functions and the core kernel's are their bare names, as `perf script` folds them.
pub(crate) fn push_frame_name(out: &mut String, module: &str, name: &str, kernel_module: bool) {
    out.push_str(name);
    let keep_module = match module {
        module::KERNEL | module::USER => false,
        _ => kernel_module || name == UNKNOWN_FUNCTION,
    };
    if keep_module {
        out.push_str(" [");
        out.push_str(module);
        out.push(']');
    }
}

/// A call chain's frame names in one reused buffer: no allocation per frame.
#[derive(Default)]
pub(crate) struct FrameNames {
    text: String,
    ends: Vec<usize>,
}

impl FrameNames {
    pub(crate) fn clear(&mut self) {
        self.text.clear();
        self.ends.clear();
    }

    /// Adds the next frame, named by [`push_frame_name`].
    pub(crate) fn push(&mut self, module: &str, name: &str, kernel_module: bool) {
        push_frame_name(&mut self.text, module, name, kernel_module);
        self.ends.push(self.text.len());
    }

    /// The names, last pushed first.
    pub(crate) fn rev(&self) -> impl Iterator<Item = &str> {
        (0..self.ends.len()).rev().map(|k| {
            let start = if k == 0 { 0 } else { self.ends[k - 1] };
            &self.text[start..self.ends[k]]
        })
    }
}

/// An event's name without perf's modifiers: `cpu-clock:u` → `cpu-clock`; a tracepoint
/// keeps its subsystem (`sched:sched_switch`).
pub(crate) fn bare_event_name(name: &str) -> &str {
    match name.rsplit_once(':') {
        Some((bare, mods)) if mods.bytes().all(|b| b"ukhGHpPSDIeW".contains(&b)) => bare,
        _ => name,
    }
}

/// Which of an input's events to read (an index into `events`, the names in the input's
/// order): the one `wanted` names, as perf names it with or without its modifiers
/// (`cpu-clock` finds `cpu-clock:u`), else the first.
pub(crate) fn choose_event(events: &[&str], wanted: Option<&str>, path: &Path) -> Result<usize, ImportError> {
    let Some(w) = wanted else { return Ok(0) };
    events
        .iter()
        .position(|n| *n == w)
        .or_else(|| events.iter().position(|n| bare_event_name(n) == bare_event_name(w)))
        .ok_or_else(|| ImportError::NoSuchEvent {
            path: path.to_path_buf(),
            event: w.to_string(),
            available: if events.is_empty() {
                "no event".into()
            } else {
                events.join(", ")
            },
        })
}

/// The note that lists the events of an input that were left out: `events` are (name,
/// samples), `chosen` the one read.
pub(crate) fn other_events_note(events: &[(&str, u64)], chosen: usize) -> Option<String> {
    let others: Vec<String> = events
        .iter()
        .enumerate()
        .filter(|&(k, _)| k != chosen)
        .map(|(_, (n, s))| format!("{n} ({s} samples)"))
        .collect();
    (!others.is_empty()).then(|| {
        format!(
            "{} samples are read; the input also has {}: --event NAME reads another",
            events[chosen].0,
            others.join(", ")
        )
    })
}

/// What the samples of an input say about time: the range of their timestamps and the
/// periods they carry. Every importer derives a profile's period and wall time from it by
/// one rule ([`SampleTimes::derive`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct SampleTimes {
    first: u64,
    last: u64,
    period_sum: u128,
    with_period: u64,
    without_period: u64,
}

impl Default for SampleTimes {
    fn default() -> Self {
        SampleTimes {
            first: u64::MAX,
            last: 0,
            period_sum: 0,
            with_period: 0,
            without_period: 0,
        }
    }
}

/// What a profile's samples weigh and the wall time they cover.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Basis {
    /// What the weights count.
    pub(crate) unit: Unit,
    /// Every sample weighs this, in `unit`, instead of its own period (none carried one,
    /// or the user said what a sample stands for); `None`: each weighs its period.
    pub(crate) weigh_by_count: Option<f64>,
    pub(crate) wall_sec: f64,
}

impl SampleTimes {
    /// Takes one sample's time (ns) and period, when it has them.
    pub(crate) fn sample(&mut self, time_ns: Option<u64>, period: Option<u64>) {
        if let Some(t) = time_ns {
            self.first = self.first.min(t);
            self.last = self.last.max(t);
        }
        match period {
            Some(p) => {
                self.period_sum += u128::from(p);
                self.with_period += 1;
            }
            None => self.without_period += 1,
        }
    }

    /// Adds what `o` saw (a piece of the same input read apart).
    pub(crate) fn merge(&mut self, o: &SampleTimes) {
        self.first = self.first.min(o.first);
        self.last = self.last.max(o.last);
        self.period_sum += o.period_sum;
        self.with_period += o.with_period;
        self.without_period += o.without_period;
    }

    fn range_sec(&self) -> Option<f64> {
        (self.first <= self.last).then(|| (self.last - self.first) as f64 * 1e-9)
    }

    /// What the samples weigh, by one rule for every importer:
    /// - the user's `override_sec` when given: every sample stands for that much time;
    /// - the samples' own periods when every sample carries one (perf report's weights),
    ///   in nanoseconds for the time events `cpu-clock` and `task-clock`, else in the
    ///   event's own unit;
    /// - otherwise every sample weighs the same: the `declared` period (the recording's
    ///   sampling setting, in the event's unit); for a time event without one, the time
    ///   range x CPUs / samples, or 1 ms without sample times; for other events, one
    ///   event. Each of these says so in a warning.
    ///
    /// The wall time is the time range plus one sample's share of it (the first sample
    /// stands for the time before it), or samples x period / CPUs without sample times.
    pub(crate) fn basis(
        &self,
        event: &str,
        override_sec: Option<f64>,
        declared: Option<f64>,
        cpus: usize,
        warnings: &mut Vec<String>,
    ) -> Basis {
        let cpus = cpus.max(1) as f64;
        let samples = (self.with_period + self.without_period).max(1) as f64;
        // Sample times whose span on all CPUs holds more nanoseconds than 2^63 (0.47 years
        // on 616 CPUs) are damaged: a period drawn from them overflowed the weights.
        let range = self.range_sec().filter(|r| {
            let fits = r * cpus * 1e9 < 2f64.powi(63);
            if !fits {
                warnings.push(format!(
                    "the samples' times span {r:.0} s on {cpus} CPU(s), more than a recording can (damaged \
                     times?): the time range is not used"
                ));
            }
            fits
        });
        let unit = Unit::of_event(event);
        let time = unit == Unit::Nanoseconds;
        // A time event's periods fit in the recording's window on the CPUs that took them
        // (1% and, for the time before each CPU's first sample, 1 s each aside): far more
        // is a damaged field (a period of 2^64 - 1 made Idle -6e12 s).
        let periods_fit = !time || range.map_or(true, |r| self.period_sum as f64 <= cpus * (r * 1e9 * 1.01 + 1e9));
        let (unit, fixed) = if let Some(s) = override_sec {
            (Unit::Nanoseconds, Some(s * 1e9))
        } else if self.without_period == 0 && self.period_sum > 0 && periods_fit {
            (unit, None)
        } else {
            if !periods_fit {
                warnings.push(format!(
                    "the {event} samples' periods add up to {:.3} s, more than {cpus} CPU(s) x the {:.3} s \
                     between the first and last sample can hold (a damaged period?): every sample is \
                     weighed the same",
                    self.period_sum as f64 * 1e-9,
                    range.unwrap_or(0.0)
                ));
            } else if self.with_period > 0 && self.period_sum == 0 {
                // Nothing to weigh them by (and a mean period of 0 to divide by).
                warnings.push(format!(
                    "every {event} sample carries a period of 0: every sample is weighed the same"
                ));
            } else if self.with_period > 0 {
                warnings.push(format!(
                    "{} of {} samples carry no period: every sample is weighed the same",
                    self.without_period,
                    self.with_period + self.without_period
                ));
            }
            let p = match (declared, range.filter(|r| *r > 0.0)) {
                (Some(d), _) => d,
                (None, Some(r)) if time => {
                    if periods_fit {
                        warnings.push(format!(
                            "{event} samples carry no period: one sample is taken as the time range x CPUs / samples"
                        ));
                    }
                    r * cpus / samples * 1e9
                }
                (None, None) if time => {
                    warnings.push(
                        "no sample times or periods: one sample is taken as 1 ms unless a period is given".into(),
                    );
                    DEFAULT_PERIOD_SEC * 1e9
                }
                (None, _) => {
                    warnings.push(format!(
                        "{event} samples carry no period: each counts as one event (print the period, e.g. perf script -F +period)"
                    ));
                    1.0
                }
            };
            (unit, Some(p))
        };
        let mean = fixed.unwrap_or(if self.with_period > 0 {
            self.period_sum as f64 / self.with_period as f64
        } else {
            1.0
        });
        let wall_sec = match (range, unit) {
            (Some(r), Unit::Nanoseconds) => r + mean * 1e-9,
            (Some(r), Unit::Events) => r + r * cpus / samples,
            (None, Unit::Nanoseconds) => samples * mean * 1e-9 / cpus,
            (None, Unit::Events) => 0.0,
        };
        Basis {
            unit,
            weigh_by_count: fixed,
            wall_sec,
        }
    }
}

/// The period assumed for inputs that carry none (folded stacks; text without times): the
/// seed's 1 ms.
pub const DEFAULT_PERIOD_SEC: f64 = 0.001;

impl Basis {
    /// The profile of `counts`, weighed as this basis says.
    pub(crate) fn finish(
        &self,
        mut counts: ProfileBuilder,
        test: String,
        command: Option<String>,
        event: String,
        warnings: Vec<String>,
    ) -> Profile {
        if let Some(p) = self.weigh_by_count {
            counts.weigh_by_count(p);
        }
        let meta = ProfileMeta {
            test,
            command,
            event,
            unit: self.unit,
            period: self.weigh_by_count,
            wall_sec: self.wall_sec,
        };
        counts.finish(meta, &IdleSet::linux_default(), warnings)
    }
}

/// The name a profile read from `path` gets as its test: the file name.
pub(crate) fn test_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "stdin".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stacks_counted_apart_are_the_stacks_counted_in_place() {
        // Enough stacks for several batches, weights past 32 bits, names interned
        // between them, and a piece merged in while the counter runs.
        let fill = |c: &mut StackCollector| {
            for i in 0..40_000u32 {
                let root = c.intern(&format!("comm{}", i % 7));
                let leaf_first: Vec<u32> = (0..(i % 9))
                    .map(|k| c.intern(&format!("f{}", (i + k) % 1000)))
                    .collect();
                c.add_ids(root, &leaf_first, 1 + u64::from(i % 3), u64::from(i) << 20);
            }
            let mut piece = StackCollector::new(true);
            piece.add(Some("merged"), ["a", "b", "f3"].into_iter(), 5, 5 << 33);
            c.merge(piece);
            c.add(None, ["after", "merge"].into_iter(), 2, 2);
        };
        let (mut here, mut apart) = (StackCollector::new(true), StackCollector::counted_apart(true));
        assert!(apart.counter.is_some());
        fill(&mut here);
        fill(&mut apart);
        let (here, apart) = (here.finish().unwrap(), apart.finish().unwrap());
        assert_eq!(here.names(), apart.names());
        assert_eq!(
            (here.samples, here.folded_lines()),
            (apart.samples, apart.folded_lines())
        );
        assert!(here.folded_lines().iter().any(|l| l.starts_with("merged;a;b;f3 ")));
        // Not wanted: no thread, no stacks.
        let none = StackCollector::counted_apart(false);
        assert!(none.counter.is_none() && none.finish().is_none());
    }

    #[test]
    fn time_periods_past_the_window_are_not_weights() {
        // Two CPUs, samples over 1 s: 2 s of 1 ms periods fit (and 1 s more, for the time
        // before each CPU's first sample); one period of 2^64 - 1 ns does not.
        let mut t = SampleTimes::default();
        for k in 0..2000u64 {
            t.sample(Some(k * 500_000), Some(1_000_000));
        }
        let mut warnings = Vec::new();
        let b = t.basis("cpu-clock", None, None, 2, &mut warnings);
        assert_eq!((b.weigh_by_count, warnings.len()), (None, 0), "{warnings:?}");
        t.sample(Some(1_000_000_000), Some(u64::MAX));
        let b = t.basis("cpu-clock", None, None, 2, &mut warnings);
        let each = b.weigh_by_count.expect("every sample weighed the same");
        assert!((each - 2.0 * 1e9 / 2001.0).abs() < 1.0, "{each}");
        assert!(b.wall_sec < 1.01, "{}", b.wall_sec);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(
            warnings[0].contains("more than 2 CPU(s) x the 1.000 s"),
            "{}",
            warnings[0]
        );
        // A count of events has no window to fit in.
        let mut warnings = Vec::new();
        assert_eq!(
            t.basis("page-faults", None, None, 2, &mut warnings).weigh_by_count,
            None
        );
    }

    #[test]
    fn detects_formats() {
        assert_eq!(InputFormat::detect_bytes(b"PERFILE2\x68\0"), InputFormat::PerfData);
        assert_eq!(InputFormat::detect_bytes(b"upcmp-prfout 1\n"), InputFormat::Prfout);
        assert_eq!(InputFormat::detect_bytes(b"a;b;c 12\n"), InputFormat::Folded);
        assert_eq!(InputFormat::detect_bytes(b"swapper 12\n"), InputFormat::Folded);
        assert_eq!(
            InputFormat::detect_bytes(b"  swapper     0 [001]  1.000250:     250000 cpu-clock: \n"),
            InputFormat::PerfScript
        );
        assert_eq!(
            InputFormat::detect_bytes(b"# ========\n# captured on: x\nperf 1 [000] 1.0: 1 cpu-clock:\n"),
            InputFormat::PerfScript
        );
    }

    #[test]
    fn modules_of_dsos() {
        let k = 0xffffffff81000000;
        assert_eq!(module_of_dso(Some("[kernel.kallsyms]"), k), "kernel");
        assert_eq!(module_of_dso(Some("[ext4]"), k), "ext4");
        assert_eq!(
            module_of_dso(Some("/usr/lib/x86_64-linux-gnu/libc.so.6"), 0x1000),
            "libc.so.6"
        );
        assert_eq!(module_of_dso(Some("[vdso]"), 0x7fff0000), "vdso");
        assert_eq!(module_of_dso(None, k), "kernel");
        assert_eq!(module_of_dso(None, 0x400000), "user");
        // The files perf read the kernel's symbols from, when it found them.
        assert_eq!(
            module_of_dso(Some("/usr/lib/debug/boot/vmlinux-6.1.0-28-amd64"), k),
            "kernel"
        );
        assert_eq!(
            module_of_dso(Some("/lib/modules/6.1.0/kernel/fs/ext4/ext4.ko"), k),
            "ext4"
        );
        assert_eq!(
            module_of_dso(Some("/lib/modules/6.1.0/kernel/nf-nat.ko.xz"), k),
            "nf_nat"
        );
        // A user file that only looks like one.
        assert_eq!(module_of_dso(Some("/home/me/vmlinux-tools"), 0x1000), "vmlinux-tools");
    }

    #[test]
    fn the_format_is_told_from_whole_lines() {
        // A folded stack of 2000 frames: its first line is far longer than any buffer.
        let deep: Vec<String> = (0..2000).map(|i| format!("frame_{i}")).collect();
        let text = format!("\n{} 7\nb;c 3\n", deep.join(";"));
        assert!(text.len() > 20_000);
        let mut input = std::io::BufReader::with_capacity(64, text.as_bytes());
        let mut head = Vec::new();
        read_head(&mut input, &mut head).unwrap();
        assert_eq!(
            head.len(),
            text.find("\nb;c").unwrap() + 1,
            "the first line, whole, and no more"
        );
        assert_eq!(InputFormat::detect_bytes(&head), InputFormat::Folded);
        // What was read is read again: nothing is lost.
        let mut rest = Vec::new();
        Cursor::new(head).chain(input).read_to_end(&mut rest).unwrap();
        assert_eq!(rest, text.as_bytes());
        // perf.data: the magic alone is read.
        let mut head = Vec::new();
        read_head(&mut &b"PERFILE2\x10\0\0\0\0\0\0\0\n"[..], &mut head).unwrap();
        assert_eq!(head, b"PERFILE2");
        // Comments and a short input.
        let mut head = Vec::new();
        read_head(&mut &b"# c\n#\n a 1 [000] 1.0: 1 cpu-clock:\n"[..], &mut head).unwrap();
        assert_eq!(InputFormat::detect_bytes(&head), InputFormat::PerfScript);
        let mut head = Vec::new();
        read_head(&mut &b"ab"[..], &mut head).unwrap();
        assert_eq!(head, b"ab");
    }

    #[test]
    fn events_are_chosen_by_name_with_or_without_modifiers() {
        let path = Path::new("r.data");
        let events = ["cpu-clock:u", "page-faults", "sched:sched_switch"];
        assert_eq!(choose_event(&events, None, path).unwrap(), 0);
        assert_eq!(choose_event(&events, Some("cpu-clock"), path).unwrap(), 0);
        assert_eq!(choose_event(&events, Some("page-faults:u"), path).unwrap(), 1);
        assert_eq!(choose_event(&events, Some("sched:sched_switch"), path).unwrap(), 2);
        let e = choose_event(&events, Some("sched"), path).unwrap_err();
        assert!(
            e.to_string()
                .contains("no event sched; the input has cpu-clock:u, page-faults"),
            "{e}"
        );
        assert_eq!(bare_event_name("cycles:ppp"), "cycles");
        assert_eq!(bare_event_name("sched:sched_switch"), "sched:sched_switch");
        assert_eq!(other_events_note(&[("cpu-clock", 5)], 0), None);
        assert_eq!(
            other_events_note(&[("cpu-clock", 5), ("page-faults", 2)], 1).unwrap(),
            "page-faults samples are read; the input also has cpu-clock (5 samples): --event NAME reads another"
        );
    }
}
