//! `perf script` text → [`Profile`](crate::Profile): each sample counts for its innermost frame, named as
//! perf report names it from the symbol table (without the C++ parameters or Rust hash
//! some `perf script` builds print), under the module of its DSO.

use super::{
    bare_event_name, choose_event, module_of_dso, other_events_note, test_name, AnnotatedSamples, FrameNames,
    ImportError, ImportOptions, Imported, SampleTimes, StackCollector, KERNEL_MAPPING,
};
use crate::model::mode::{is_kernel_address, Mode};
use crate::model::profile::{module, NO_IP_FUNCTION, UNKNOWN_FUNCTION};
use crate::model::{ModeFilter, ProfileBuilder, SampleFilter};
use crate::symbols::function_name;
use crate::symbols::lines::answers_to;
use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::sync::{mpsc, Mutex};
use upcmp_parsers::perf_script::{for_each_sample_in_piece, piece_end, Chain, Frame, Sample, MAX_LINE_BYTES};
use upcmp_parsers::{ParseError, Position};

/// What is collected beside the flat profile.
#[derive(Clone, Copy)]
struct Want<'a> {
    /// The call stacks.
    stacks: bool,
    /// The sampled offsets of these functions (`--annotate`).
    annotate: &'a [String],
}

/// Samples by function, DSO and offset: looked up by borrowed names, so a sample allocates
/// nothing once its function and DSO have been seen.
type Annotated = HashMap<String, HashMap<String, BTreeMap<u64, u64>>>;

/// What the samples of one event add up to.
#[derive(Default)]
struct EventTally {
    counts: ProfileBuilder,
    stacks: StackCollector,
    names: FrameNames,
    times: SampleTimes,
    max_cpu: Option<u32>,
    no_ip: u64,
    /// Where the event's first sample is: (piece, sample in the piece), to find the
    /// input's first event however the pieces were merged.
    first_seen: (usize, u64),
    /// The functions annotated, and their samples by function, DSO and offset.
    annotate: Vec<String>,
    annotated: Annotated,
}

impl EventTally {
    fn new(want: Want<'_>, first_seen: (usize, u64)) -> Self {
        EventTally {
            stacks: StackCollector::new(want.stacks),
            first_seen,
            annotate: want.annotate.to_vec(),
            ..Default::default()
        }
    }

    /// Counts a sample, or only its time and CPU when the filter left it out (the wall
    /// time and the CPUs sampled are the recording's either way, as for perf.data).
    fn sample(&mut self, s: &Sample<'_>, kept: bool) {
        self.times.sample(s.time_ns, s.period);
        // Without its own period a sample weighs one here; the basis reweighs them all.
        let period = s.period.unwrap_or(1);
        let cpu = s.cpu.unwrap_or(0);
        self.max_cpu = self.max_cpu.max(s.cpu);
        if !kept {
            return;
        }
        match s.leaf() {
            Some(f) => {
                let name = frame_function(f);
                self.counts.add_one(cpu, &module_of_dso(f.dso, f.ip), &name, period);
                if let (false, Some(dso), Some(offset)) = (self.annotate.is_empty(), f.dso, f.offset) {
                    // Code is read from an ELF file the DSO names, or the kernel's vmlinux; a
                    // module's (`[ext4]`) or `[vdso]` has no file here.
                    let file = dso == KERNEL_MAPPING || !dso.starts_with('[');
                    if file && self.annotate.iter().any(|w| answers_to(&name, w)) {
                        count_at(&mut self.annotated, &name, dso, offset, 1);
                    }
                }
                if self.stacks.wanted() {
                    self.names.clear();
                    // Inlined frames are left out, as perf report's stacks of perf.data
                    // (and the perf.data import's) have none.
                    for f in s.frames.iter().filter(|f| !f.inlined) {
                        let name = frame_function(f);
                        // Most frames are named alone; only these carry their module.
                        let kernel_module = is_kernel_address(f.ip) && f.dso.is_some_and(|d| d != "[kernel.kallsyms]");
                        if name == UNKNOWN_FUNCTION || kernel_module {
                            let m = module_of_dso(f.dso, f.ip);
                            self.names.push(&m, &name, kernel_module && m != module::KERNEL);
                        } else {
                            self.names.push(module::USER, &name, false);
                        }
                    }
                    self.stacks.add(Some(s.comm), self.names.rev(), 1, period);
                }
            }
            None => {
                self.no_ip += 1;
                self.counts.add_one(cpu, module::USER, NO_IP_FUNCTION, period);
            }
        }
    }

    fn merge(&mut self, o: EventTally) {
        self.counts.merge(o.counts);
        self.stacks.merge(o.stacks);
        self.times.merge(&o.times);
        self.max_cpu = self.max_cpu.max(o.max_cpu);
        self.no_ip += o.no_ip;
        self.first_seen = self.first_seen.min(o.first_seen);
        for (function, by_dso) in o.annotated {
            for (dso, m) in by_dso {
                for (offset, n) in m {
                    count_at(&mut self.annotated, &function, &dso, offset, n);
                }
            }
        }
    }
}

/// Adds `n` samples of `function` in `dso` at `offset`.
fn count_at(annotated: &mut Annotated, function: &str, dso: &str, offset: u64, n: u64) {
    if !annotated.contains_key(function) {
        annotated.insert(function.to_string(), HashMap::new());
    }
    let by_dso = annotated.get_mut(function).expect("inserted above");
    if !by_dso.contains_key(dso) {
        by_dso.insert(dso.to_string(), BTreeMap::new());
    }
    *by_dso.get_mut(dso).expect("inserted above").entry(offset).or_default() += n;
}

/// The function of a frame, as perf report names it from the symbol table.
fn frame_function<'a>(f: &Frame<'a>) -> Cow<'a, str> {
    match f.symbol {
        // A JIT's names are its own, not a demangler's.
        Some(sym) if f.dso.is_some_and(is_jit_dso) => Cow::Borrowed(sym),
        Some(sym) => function_name(sym),
        None => Cow::Borrowed(UNKNOWN_FUNCTION),
    }
}

/// Whether a DSO is a JIT's: its perf map (`/tmp/perf-PID.map`) or jitdump (`[JIT] tid N`).
fn is_jit_dso(dso: &str) -> bool {
    dso.starts_with("[JIT]") || (dso.starts_with("/tmp/perf-") && dso.ends_with(".map"))
}

/// The processor mode of a sample as perf script text shows it: by its sampled address,
/// as the import puts it in a module (`module_of_dso`): kernel space is the kernel and
/// its modules, a guest kernel's DSO is the guest's, anything else is user space.
fn frame_mode(f: &Frame<'_>) -> Mode {
    match f.dso {
        Some("[guest.kernel.kallsyms]") => Mode::GuestKernel,
        Some("[kernel.kallsyms]") => Mode::Kernel,
        _ if is_kernel_address(f.ip) => Mode::Kernel,
        _ => Mode::User,
    }
}

/// A field a filter needs that a sample of the text does not print.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct MissingField {
    /// The line of the sample's header.
    line: usize,
    /// The option that needs it.
    option: &'static str,
    /// The field, as perf script names it.
    field: &'static str,
    /// The `perf script` fields that print it.
    fields: &'static str,
}

impl MissingField {
    /// What `filter` needs of `s` that it lacks, if anything.
    fn of(filter: &SampleFilter, s: &Sample<'_>) -> Option<Self> {
        let missing = |option, field, fields| {
            Some(MissingField {
                line: s.line,
                option,
                field,
                fields,
            })
        };
        // The command and thread id start every sample line (the parser requires them).
        if !filter.pids.is_empty() && s.pid.is_none() {
            return missing("--pid", "pid", "-F +pid");
        }
        if !filter.cpus.is_empty() && s.cpu.is_none() {
            return missing("--cpu", "cpu", "-F +cpu");
        }
        if filter.mode.is_some() && s.frames.is_empty() {
            let option = match filter.mode {
                Some(ModeFilter::Kernel) => "--kernel-only",
                _ => "--user-only",
            };
            return missing(option, "ip", "-F +ip,+sym,+dso");
        }
        None
    }

    fn error(&self, name: &str) -> ImportError {
        ImportError::FilterField {
            file: name.to_string(),
            line: self.line,
            option: self.option,
            field: self.field,
            fields: self.fields,
        }
    }
}

/// The samples of an input (or of a piece of it), by event; samples that print no event
/// are under "".
#[derive(Default)]
struct Tally {
    // Looked up per sample: foldhash, not SipHash.
    events: HashMap<String, EventTally, foldhash::fast::RandomState>,
    /// The first sample that lacks a field the filter needs, with the index of its piece
    /// (its line counts from the piece's start until [`tally_in_pieces`] places it).
    missing: Option<(usize, MissingField)>,
}

impl Tally {
    /// Parses one piece of the input, which starts at `at` and is the `index`-th, adding
    /// the samples `filter` keeps; the piece's lines. Pieces are added in input order
    /// (each worker takes the next), so an event's first sample and the first sample
    /// that lacks a field are the earliest of the pieces added.
    fn add_piece(
        &mut self,
        piece: &[u8],
        name: &str,
        at: Position,
        index: usize,
        want: Want<'_>,
        filter: &SampleFilter,
    ) -> Result<usize, ParseError> {
        let t = self;
        let chain = if want.stacks { Chain::Full } else { Chain::Leaf };
        let mut n = 0u64;
        let stats = for_each_sample_in_piece(piece, name, chain, at, |s| {
            let kept = filter.is_empty() || {
                if t.missing.is_none() {
                    t.missing = MissingField::of(filter, s).map(|m| (index, m));
                }
                let mode = s.leaf().map_or(Mode::Unknown, frame_mode);
                let pid = s.pid.unwrap_or(-1) as u32;
                filter.keeps(s.cpu.unwrap_or(0), pid, s.tid as u32, mode, Some(s.comm))
            };
            let key = s.event.unwrap_or("");
            let e = match t.events.get_mut(key) {
                Some(e) => e,
                None => t
                    .events
                    .entry(key.to_string())
                    .or_insert_with(|| EventTally::new(want, (index, n))),
            };
            e.sample(s, kept);
            n += 1;
        })?;
        Ok(stats.lines.saturating_sub(at.lines))
    }

    fn merge(&mut self, o: Tally) {
        // The earliest line wins, as a sequential read would report it.
        self.missing = match (self.missing, o.missing) {
            (Some(a), Some(b)) => Some(if (b.0, b.1.line) < (a.0, a.1.line) { b } else { a }),
            (a, b) => a.or(b),
        };
        for (k, v) in o.events {
            match self.events.get_mut(&k) {
                Some(e) => e.merge(v),
                None => {
                    self.events.insert(k, v);
                }
            }
        }
    }
}

/// Bytes a piece holds before it is cut at the next sample boundary.
const PIECE_BYTES: usize = 1 << 20;

/// Reads until `buf` holds `want` bytes or the input ends; whether it ended.
fn fill(input: &mut impl BufRead, buf: &mut Vec<u8>, want: usize, path: &Path) -> Result<bool, ImportError> {
    while buf.len() < want {
        let avail = input.fill_buf().map_err(ImportError::io(path))?;
        if avail.is_empty() {
            return Ok(true);
        }
        let n = avail.len().min(want - buf.len());
        buf.extend_from_slice(&avail[..n]);
        input.consume(n);
    }
    Ok(false)
}

/// What a worker of [`tally_in_pieces`] sends back.
enum Done {
    /// A piece parsed: its index, its lines or its error, and its buffer to reuse.
    Piece(usize, Result<usize, ParseError>, Vec<u8>),
    /// A worker's samples, of every piece it parsed, once the input is read.
    Worker(Tally),
}

/// Reads the input in pieces of about `piece_bytes` cut at sample boundaries and parses
/// them on every CPU (one piece inline when the input is small). Memory is bounded by the
/// pieces in flight, whose buffers are reused. Each worker adds its pieces to its own
/// tally, merged once at the end: a tally per piece cost as much to build and merge as
/// its samples did to count. The reading thread does not count lines (8% of the
/// import's time): each piece counts its own from 0, and the lines of errors and of the
/// first sample that lacks a filter's field are placed once the pieces before theirs
/// are in.
fn tally_in_pieces(
    mut input: impl BufRead,
    name: &str,
    path: &Path,
    want: Want<'_>,
    filter: &SampleFilter,
    piece_bytes: usize,
    start: Position,
) -> Result<Tally, ImportError> {
    let mut first = Vec::with_capacity(piece_bytes.min(PIECE_BYTES));
    if fill(&mut input, &mut first, piece_bytes, path)? {
        let mut t = Tally::default();
        t.add_piece(&first, name, start, 0, want, filter)?;
        return Ok(t);
    }
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get()).clamp(2, 8);
    let (work_tx, work_rx) = mpsc::sync_channel::<(usize, Position, Vec<u8>)>(workers);
    let work_rx = Mutex::new(work_rx);
    let (done_tx, done_rx) = mpsc::channel::<Done>();
    std::thread::scope(|scope| {
        for _ in 0..workers {
            let (work_rx, done_tx) = (&work_rx, done_tx.clone());
            scope.spawn(move || {
                let mut t = Tally::default();
                loop {
                    let job = work_rx.lock().unwrap_or_else(|e| e.into_inner()).recv();
                    let Ok((index, at, piece)) = job else { break };
                    let r = t.add_piece(&piece, name, at, index, want, filter);
                    if done_tx.send(Done::Piece(index, r, piece)).is_err() {
                        return;
                    }
                }
                let _ = done_tx.send(Done::Worker(t));
            });
        }
        drop(done_tx);
        let mut total = Tally::default();
        // The error of the earliest piece wins, as a sequential read would report it.
        let mut error: Option<(usize, ParseError)> = None;
        // Lines per piece, by index (a few bytes per megabyte of input).
        let mut lines: Vec<usize> = Vec::new();
        // Buffers of parsed pieces, for the next ones.
        let mut spare: Vec<Vec<u8>> = Vec::new();
        let mut take = |done: Done, total: &mut Tally, spare: &mut Vec<Vec<u8>>| match done {
            Done::Piece(index, r, buf) => {
                spare.push(buf);
                match r {
                    Ok(n) => {
                        if lines.len() <= index {
                            lines.resize(index + 1, 0);
                        }
                        lines[index] = n;
                    }
                    Err(e) if error.as_ref().map_or(true, |(i, _)| index < *i) => error = Some((index, e)),
                    Err(_) => {}
                }
            }
            Done::Worker(t) => total.merge(t),
        };
        // Each piece's lines count from 0; its bytes from the start of the input.
        let mut at = Position {
            lines: 0,
            bytes: start.bytes,
        };
        let (mut index, mut buf, mut want) = (0usize, first, piece_bytes);
        let read: Result<(), ImportError> = (|| loop {
            let ended = fill(&mut input, &mut buf, want, path)?;
            if ended && buf.is_empty() {
                return Ok(());
            }
            let cut = if ended { buf.len() } else { piece_end(&buf).unwrap_or(0) };
            if cut == 0 {
                let line_start = buf.iter().rposition(|&b| b == b'\n').map_or(0, |n| n + 1);
                if buf.len() - line_start > MAX_LINE_BYTES {
                    // A line longer than the parser reads: its piece says so, and reading
                    // on would hold the rest of the input in memory.
                    let _ = work_tx.send((index, at, std::mem::take(&mut buf)));
                    return Ok(());
                }
                // One sample longer than a piece: read on.
                want = buf.len() + piece_bytes;
                continue;
            }
            want = piece_bytes;
            let mut rest = spare
                .pop()
                .unwrap_or_else(|| Vec::with_capacity(piece_bytes.min(PIECE_BYTES)));
            rest.clear();
            rest.extend_from_slice(&buf[cut..]);
            buf.truncate(cut);
            let here = at;
            at.bytes += buf.len() as u64;
            if work_tx.send((index, here, buf)).is_err() {
                return Ok(());
            }
            index += 1;
            buf = rest;
            while let Ok(done) = done_rx.try_recv() {
                take(done, &mut total, &mut spare);
            }
        })();
        drop(work_tx);
        for done in done_rx.iter() {
            take(done, &mut total, &mut spare);
        }
        read?;
        // The first line of piece i: the pieces before it succeeded, or the earliest
        // error would be theirs.
        let base = |i: usize| start.lines + lines.iter().take(i).sum::<usize>();
        if let Some((i, mut e)) = error {
            if e.line > 0 {
                e.line += base(i);
            }
            return Err(e.into());
        }
        if let Some((i, m)) = &mut total.missing {
            m.line += base(*i);
        }
        Ok(total)
    })
}

/// The events `perf script --header` lists before the samples, in the recording's order
/// (perf report's), read off the start of `input`, and where the samples start.
///
/// `# event : name = cpu-clock, , id = { 1942, 1943 }, type = 1, size = 128, ...`
fn header_events(input: &mut impl BufRead, name: &str, path: &Path) -> Result<(Vec<String>, Position), ImportError> {
    let (mut events, mut at, mut line) = (Vec::new(), Position::default(), Vec::new());
    while input.fill_buf().map_err(ImportError::io(path))?.first() == Some(&b'#') {
        line.clear();
        let n = input.read_until(b'\n', &mut line).map_err(ImportError::io(path))?;
        at.lines += 1;
        at.bytes += n as u64;
        let text = String::from_utf8_lossy(&line);
        if line.last() != Some(&b'\n') {
            let expected = format!(
                "a newline: the input stops in the middle of line {} (truncated?)",
                at.lines
            );
            return Err(ParseError::at(name, at.lines, &text, "", expected).into());
        }
        if let Some(rest) = text.strip_prefix("# event : name = ") {
            let name = rest.split(',').next().unwrap_or(rest).trim();
            events.push(bare_event_name(name).to_string());
        }
    }
    Ok((events, at))
}

/// Reads perf script output from `input` (named `name` in errors).
pub fn read(mut input: impl BufRead, name: &str, path: &Path, opts: &ImportOptions) -> Result<Imported, ImportError> {
    let (listed, start) = header_events(&mut input, name, path)?;
    let want = Want {
        stacks: opts.stacks,
        annotate: &opts.annotate,
    };
    let mut tally = tally_in_pieces(input, name, path, want, &opts.filter, PIECE_BYTES, start)?;
    if let Some((_, m)) = tally.missing {
        return Err(m.error(name));
    }
    // One event per profile: the first unless --event names another, first in the order
    // of the header when it lists them (perf report's), else of the samples. Samples that
    // print no event count with it.
    let mut events: Vec<(&String, &EventTally)> = tally.events.iter().filter(|(k, _)| !k.is_empty()).collect();
    let listed_at = |k: &str| listed.iter().position(|l| l == k).unwrap_or(usize::MAX);
    events.sort_by_key(|(k, e)| (listed_at(k), e.first_seen));
    let names: Vec<&str> = events.iter().map(|(k, _)| k.as_str()).collect();
    let (event, note) = match events.len() {
        0 => (None, None),
        _ => {
            let chosen = choose_event(&names, opts.event.as_deref(), path)?;
            let counts: Vec<(&str, u64)> = events.iter().map(|(k, e)| (k.as_str(), e.counts.samples())).collect();
            (Some(events[chosen].0.clone()), other_events_note(&counts, chosen))
        }
    };
    let mut chosen = EventTally::new(want, (0, 0));
    for (k, e) in std::mem::take(&mut tally.events) {
        if k.is_empty() || Some(&k) == event.as_ref() {
            chosen.merge(e);
        }
    }
    let EventTally {
        mut counts,
        stacks,
        times,
        max_cpu,
        no_ip,
        annotated,
        ..
    } = chosen;
    let samples = counts.samples();
    if samples == 0 {
        return Err(ImportError::NoSamples {
            path: path.to_path_buf(),
            hint: if opts.filter.is_empty() {
                " (is this the output of `perf script`?)"
            } else {
                " that the filter keeps (--comm, --pid, --tid, --cpu, --kernel-only, --user-only)"
            },
        });
    }
    // CPUs with no sample (a CPU that never ran, or was never sampled) still count, up to
    // Linux's most (8192): not a column per number a damaged line may name.
    for c in 0..=max_cpu.unwrap_or(0).min(8191) {
        counts.ensure_cpu(c);
    }
    let event = event.unwrap_or_else(|| "cpu-clock".to_string());
    let mut warnings: Vec<String> = note.into_iter().collect();
    if no_ip > 0 {
        warnings.push(format!(
            "{no_ip} samples had no address or symbol (add -F ip,sym,dso to perf script)"
        ));
    }
    let basis = times.basis(&event, opts.period_sec, None, counts.cpu_count(), &mut warnings);
    Ok(Imported {
        stacks: stacks.finish(),
        annotated: annotated_samples(annotated, opts),
        profile: basis.finish(counts, test_name(path), None, event, warnings),
    })
}

/// The annotated functions' samples by offset into their symbol, in the DSO perf script
/// names (no build-id is printed); the kernel's in `--vmlinux`'s file, else
/// [`KERNEL_MAPPING`].
fn annotated_samples(annotated: Annotated, opts: &ImportOptions) -> Vec<AnnotatedSamples> {
    let mut out: Vec<AnnotatedSamples> = annotated
        .into_iter()
        .flat_map(|(function, by_dso)| by_dso.into_iter().map(move |(dso, m)| (function.clone(), dso, m)))
        .map(|(function, dso, samples)| {
            let kernel = dso == KERNEL_MAPPING;
            let file = match (&opts.vmlinux, kernel) {
                (Some(v), true) => v.clone(),
                _ => PathBuf::from(dso),
            };
            AnnotatedSamples {
                function,
                file,
                build_id: None,
                samples,
                kernel,
                by_offset: true,
            }
        })
        .collect();
    out.sort_by(|a, b| (&a.function, &a.file).cmp(&(&b.function, &b.file)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all() -> SampleFilter {
        SampleFilter::default()
    }

    /// [`tally_in_pieces`] of `input`, named `s`.
    fn tally(
        input: impl BufRead,
        stacks: bool,
        filter: &SampleFilter,
        piece_bytes: usize,
        start: Position,
    ) -> Result<Tally, ImportError> {
        let want = Want { stacks, annotate: &[] };
        tally_in_pieces(input, "s", Path::new("s.txt"), want, filter, piece_bytes, start)
    }

    /// Three processes on two CPUs, with call chains: sh (pid 10, two threads) in the kernel
    /// and in user space, dd (pid 20) in the kernel, and the idle task.
    const THREADS: &str = "sh 10/10 [000] 1.000: 1000 cpu-clock: \n\
        \tffffffff81000010 read_zero+0x1 ([kernel.kallsyms])\n\
        \t401000 main+0x1 (/bin/sh)\n\n\
        sh 10/11 [001] 1.001: 1000 cpu-clock: \n\
        \t401000 main+0x1 (/bin/sh)\n\n\
        dd 20/20 [001] 1.002: 1000 cpu-clock: \n\
        \tffffffffc0000010 ext4_write+0x1 ([ext4])\n\
        \t402000 write+0x1 (/usr/lib/libc.so.6)\n\n\
        swapper 0/0 [000] 1.003: 1000 cpu-clock: \n\
        \tffffffff81000020 default_idle+0x1 ([kernel.kallsyms])\n\n";

    fn filtered(text: &str, f: SampleFilter) -> Result<Imported, ImportError> {
        let opts = ImportOptions::default().with_stacks(true).with_filter(f);
        read(text.as_bytes(), "t", Path::new("t"), &opts)
    }

    /// The functions kept and their samples, sorted.
    fn leaves(i: &Imported) -> Vec<(String, u64)> {
        let mut v: Vec<(String, u64)> = i
            .profile
            .functions
            .iter()
            .map(|f| (f.name.clone(), f.weight()))
            .filter(|x| x.1 > 0)
            .collect();
        v.sort();
        v
    }

    #[test]
    fn each_filter_keeps_its_samples_and_their_stacks() {
        let f = |comms: &[&str], pids: &[u32], tids: &[u32], cpus: &[u32], mode| SampleFilter {
            comms: comms.iter().map(|c| c.to_string()).collect(),
            pids: pids.to_vec(),
            tids: tids.to_vec(),
            cpus: cpus.to_vec(),
            mode,
            only_test: false,
        };
        let names = |i: &Imported| leaves(i).into_iter().map(|x| x.0).collect::<Vec<_>>();
        let sh = filtered(THREADS, f(&["sh"], &[], &[], &[], None)).unwrap();
        assert_eq!(names(&sh), ["main", "read_zero"]);
        assert_eq!(
            sh.stacks.as_ref().unwrap().folded_lines(),
            ["sh;main 1", "sh;main;read_zero 1"]
        );
        assert_eq!(
            names(&filtered(THREADS, f(&[], &[10], &[], &[], None)).unwrap()),
            ["main", "read_zero"]
        );
        assert_eq!(
            names(&filtered(THREADS, f(&[], &[], &[11], &[], None)).unwrap()),
            ["main"]
        );
        assert_eq!(
            names(&filtered(THREADS, f(&[], &[], &[], &[1], None)).unwrap()),
            ["ext4_write", "main"]
        );
        // Kernel mode: kernel addresses, the core kernel's and a module's.
        let kernel = filtered(THREADS, f(&[], &[], &[], &[], Some(ModeFilter::Kernel))).unwrap();
        assert_eq!(names(&kernel), ["default_idle", "ext4_write", "read_zero"]);
        let user = filtered(THREADS, f(&[], &[], &[], &[], Some(ModeFilter::User))).unwrap();
        assert_eq!(names(&user), ["main"]);
        // Every list and the mode must pass.
        let both = filtered(THREADS, f(&["sh", "dd"], &[], &[], &[1], Some(ModeFilter::Kernel))).unwrap();
        assert_eq!(names(&both), ["ext4_write"]);
        // The wall time and the CPUs are the recording's, whatever is kept.
        let all = filtered(THREADS, SampleFilter::default()).unwrap();
        assert_eq!(sh.profile.wall_sec, all.profile.wall_sec);
        assert_eq!(both.profile.cpus.len(), all.profile.cpus.len());
        let e = filtered(THREADS, f(&["nobody"], &[], &[], &[], None)).err().unwrap();
        assert!(e.to_string().contains("no samples that the filter keeps"), "{e}");
    }

    #[test]
    fn a_filter_on_a_field_not_printed_names_the_first_sample_without_it() {
        // The first two samples print their pid and CPU, the third neither, the fourth no
        // address; perf never mixes them, but a sample may be any of these.
        let text = "# header\n\
                    a 1/1 [000] 1.0: 1 cpu-clock:  ffffffff81000010 f ([kernel.kallsyms])\n\
                    a 1/1 [001] 1.1: 1 cpu-clock:  ffffffff81000010 f ([kernel.kallsyms])\n\
                    a 1 1.2: 1 cpu-clock:  ffffffff81000010 f ([kernel.kallsyms])\n\
                    a 1/1 [000] 1.3: 1 cpu-clock: \n";
        let cases = [
            (
                SampleFilter {
                    pids: vec![1],
                    ..Default::default()
                },
                "t:4: --pid filters on each sample's pid",
                "perf script -F +pid",
            ),
            (
                SampleFilter {
                    cpus: vec![0],
                    ..Default::default()
                },
                "t:4: --cpu filters on each sample's cpu",
                "perf script -F +cpu",
            ),
            (
                SampleFilter {
                    mode: Some(ModeFilter::User),
                    ..Default::default()
                },
                "t:5: --user-only filters on each sample's ip",
                "perf script -F +ip,+sym,+dso",
            ),
        ];
        for (filter, at, fix) in cases {
            for piece in [usize::MAX, 64] {
                let t = tally(text.as_bytes(), false, &filter, piece, Position::default()).unwrap();
                let e = t.missing.expect("a field is missing").1.error("t").to_string();
                assert!(e.starts_with(at) && e.ends_with(fix), "{piece}: {e}");
            }
            let e = filtered(text, filter).err().unwrap().to_string();
            assert!(e.starts_with(at), "{e}");
        }
        // Filters on what every sample prints are read.
        let comm = SampleFilter {
            comms: vec!["a".into()],
            tids: vec![1],
            ..Default::default()
        };
        let p = filtered(text, comm).unwrap().profile;
        assert_eq!(p.functions.iter().map(|f| f.weight()).sum::<u64>(), 4);
    }

    #[test]
    fn a_missing_field_in_a_later_piece_names_its_line_in_the_whole_input() {
        // Every sample prints its CPU but one, after 2000 samples of 4 lines.
        let mut text = synthetic(2000);
        text += "dd 11 99.000000: 250000 cpu-clock: \n\tffffffff81000000 f ([kernel.kallsyms])\n\n";
        text += &synthetic(10);
        let filter = SampleFilter {
            cpus: vec![0],
            ..Default::default()
        };
        let start = Position { lines: 3, bytes: 0 };
        for piece_bytes in [usize::MAX, 4096] {
            let t = tally(text.as_bytes(), false, &filter, piece_bytes, start).unwrap();
            let (_, m) = t.missing.expect("the sample without its CPU");
            assert_eq!(m.line, 3 + 2000 * 4 + 1, "{piece_bytes}-byte pieces");
        }
    }

    #[test]
    fn periods_of_0_weigh_every_sample_the_same() {
        // A damaged period field: every sample of the event says 0. The profile's period
        // was their mean, 0, which nothing can be divided by.
        let text = "dd 7 [000] 10.0: 0 page-faults:  ff f ([kernel.kallsyms])\n\
                    dd 7 [000] 10.1: 0 page-faults:  ff g ([kernel.kallsyms])\n";
        let p = read(text.as_bytes(), "s", Path::new("s.txt"), &ImportOptions::default())
            .unwrap()
            .profile;
        assert!(p.period > 0.0, "{}", p.period);
        assert_eq!(
            p.functions.iter().map(|f| f.weight()).sum::<u64>(),
            2,
            "{:?}",
            p.functions
        );
        assert!(
            p.warnings
                .iter()
                .any(|w| w.contains("every page-faults sample carries a period of 0")),
            "{:?}",
            p.warnings
        );
    }

    #[test]
    fn counts_leaves_and_derives_time() {
        let text = "perf 1 [000] 10.000000: 250000 cpu-clock: \n\
                    \tffffffff81000000 do_syscall_64+0x1 ([kernel.kallsyms])\n\
                    \t 2724a main+0x7a (/usr/bin/dd)\n\
                    \n\
                    swapper 0 [001] 10.000250: 250000 cpu-clock: \n\
                    \tffffffff82000000 default_idle+0xb ([kernel.kallsyms])\n\
                    \n\
                    dd 7 [001] 10.000500: 250000 cpu-clock: \n\
                    \t 2724a memcpy (/usr/lib/libc.so.6)\n\
                    \n\
                    dd 7 [003] 10.000750: 1 page-faults: \n\
                    \t 2724a memcpy (/usr/lib/libc.so.6)\n\
                    \n";
        let p = read(
            text.as_bytes(),
            "s",
            Path::new("a/script.txt"),
            &ImportOptions::default(),
        )
        .unwrap()
        .profile;
        assert_eq!(p.test, "script.txt");
        assert_eq!(p.event, "cpu-clock");
        assert_eq!((p.unit, p.period), (crate::model::profile::Unit::Nanoseconds, 250000.0));
        assert!((p.wall_sec - 0.00075).abs() < 1e-12, "{}", p.wall_sec);
        assert_eq!(p.cpus.len(), 2, "the page-fault sample's CPU is not counted");
        let names: Vec<(&str, &str, u64)> = p
            .functions
            .iter()
            .map(|f| (f.module.as_str(), f.name.as_str(), f.total()))
            .collect();
        assert_eq!(
            names,
            [
                ("kernel", "default_idle", 1),
                ("kernel", "do_syscall_64", 1),
                ("libc.so.6", "memcpy", 1)
            ]
        );
        assert_eq!(
            p.warnings[0],
            "cpu-clock samples are read; the input also has page-faults (1 samples): --event NAME reads another"
        );
        let opts = ImportOptions::default().with_event(Some("page-faults".into()));
        let p = read(text.as_bytes(), "s", Path::new("s.txt"), &opts).unwrap().profile;
        assert_eq!(
            (p.event.as_str(), p.unit),
            ("page-faults", crate::model::profile::Unit::Events)
        );
        assert_eq!(p.functions[0].name, "memcpy");
        assert!(p.warnings[0].starts_with("page-faults samples are read; the input also has cpu-clock (3 samples)"));
        // perf script --header lists the events in the recording's order: page-faults first.
        let header = "# ========\n# event : name = page-faults, , id = { 3 }, type = 1\n\
                      # event : name = cpu-clock:u, , id = { 4 }, type = 1\n# ========\n#\n";
        let p = read(
            format!("{header}{text}").as_bytes(),
            "s",
            Path::new("s.txt"),
            &ImportOptions::default(),
        )
        .unwrap()
        .profile;
        assert_eq!(p.event, "page-faults");
        let e = read(
            format!("{header}{text}zz\n").as_bytes(),
            "s",
            Path::new("s.txt"),
            &ImportOptions::default(),
        )
        .unwrap_err();
        // Errors still name their line in the whole input, header included.
        assert!(
            e.to_string().starts_with("s:19:") && e.to_string().contains("sample header"),
            "{e}"
        );
        let e = read(
            &b"# event : name = x"[..],
            "s",
            Path::new("s.txt"),
            &ImportOptions::default(),
        )
        .unwrap_err();
        assert!(e.to_string().starts_with("s:1:19: expected a newline"), "{e}");
        let opts = ImportOptions::default().with_event(Some("cycles".into()));
        let e = read(text.as_bytes(), "s", Path::new("s.txt"), &opts).unwrap_err();
        assert_eq!(
            e.to_string(),
            "s.txt: no event cycles; the input has cpu-clock, page-faults (--event NAME picks one)"
        );
    }

    #[test]
    fn frames_are_named_as_perf_report_and_the_flat_profile_name_them() {
        // `perf script -v` of a C++ program: parameters; a JIT's name with a `;`; frames of
        // a kernel module, of a vmlinux file, and unresolved ones.
        let text = "java 7 [000] 1.000000: 250000 cpu-clock: \n\
                    \tffffffffc0a01000 ext4_write+0x10 ([ext4])\n\
                    \tffffffff81000010 do_syscall_64+0x1 (/usr/lib/debug/boot/vmlinux-6.1.0)\n\
                    \t7f0000001000 [unknown] (/usr/lib/jvm/libjvm.so)\n\
                    \t7f0000002000 Lfoo;.bar(I)V+0x5 (/tmp/perf-7.map)\n\
                    \t401000 ns::work(std::vector<int, std::allocator<int> > const&) const+0x30 (/tmp/cpp)\n\
                    \n\
                    java 7 [000] 1.000250: 250000 cpu-clock: \n\
                    \t401000 ns::work(std::vector<int, std::allocator<int> > const&) const+0x30 (/tmp/cpp)\n\
                    \n";
        let opts = ImportOptions::default().with_stacks(true);
        let i = read(text.as_bytes(), "s", Path::new("s.txt"), &opts).unwrap();
        let rows: Vec<(&str, &str)> = i
            .profile
            .functions
            .iter()
            .map(|f| (f.module.as_str(), f.name.as_str()))
            .collect();
        assert_eq!(rows, [("ext4", "ext4_write"), ("cpp", "ns::work")]);
        assert_eq!(
            i.stacks.unwrap().folded_lines(),
            [
                "java;ns::work 1",
                "java;ns::work;Lfoo;.bar(I)V;[unknown] [libjvm.so];do_syscall_64;ext4_write [ext4] 1",
            ]
        );
    }

    /// A perf script text of `n` samples with call chains over 2 CPUs and 3 events.
    fn synthetic(n: usize) -> String {
        let mut t = String::new();
        for i in 0..n {
            let event = if i % 7 == 3 { "page-faults" } else { "cpu-clock" };
            t += &format!(
                "dd {} [{:03}] {}.{:06}: 250000 {event}: \n",
                10 + i % 3,
                i % 2,
                10 + i / 1000,
                i % 1000
            );
            t += &format!("\tffffffff8100{:04x} f{}+0x1 ([kernel.kallsyms])\n", i % 50, i % 50);
            t += &format!("\t{:x} main+0x2 (/usr/bin/dd)\n\n", 0x4000 + i % 5);
        }
        t
    }

    /// Per event: its function rows (module, name, per-CPU counts) and folded stacks.
    fn summary(t: Tally) -> Vec<(String, Vec<String>, Option<Vec<String>>)> {
        let mut v: Vec<_> = t
            .events
            .into_iter()
            .map(|(k, e)| {
                let meta = crate::model::ProfileMeta {
                    test: "t".into(),
                    command: None,
                    event: k.clone(),
                    unit: crate::model::profile::Unit::Nanoseconds,
                    period: None,
                    wall_sec: 1.0,
                };
                let p = e.counts.finish(meta, &crate::model::IdleSet::linux_default(), vec![]);
                let rows = p
                    .functions
                    .iter()
                    .map(|f| format!("{} {} {:?}", f.module, f.name, f.per_cpu))
                    .collect();
                let stacks = e.stacks.finish().map(|s| s.folded_lines());
                (k, rows, stacks)
            })
            .collect();
        v.sort();
        v
    }

    #[test]
    fn pieces_read_in_parallel_add_up_to_one_read() {
        let text = synthetic(5000);
        for stacks in [false, true] {
            let whole = tally(text.as_bytes(), stacks, &all(), usize::MAX, Position::default()).unwrap();
            // 300-byte pieces: thousands of them, cut at blank lines.
            let pieces = tally(text.as_bytes(), stacks, &all(), 300, Position::default()).unwrap();
            let first = |t: &Tally| t.events["cpu-clock"].first_seen.min(t.events["page-faults"].first_seen);
            assert_eq!(first(&whole), (0, 0));
            assert_eq!(first(&pieces), (0, 0));
            assert_eq!(summary(whole), summary(pieces));
        }
        // Without call chains every line is a sample and any newline a boundary.
        let flat: String = text
            .lines()
            .filter(|l| l.starts_with("dd "))
            .map(|l| format!("{l} ffffffff81000000 f ([kernel.kallsyms])\n"))
            .collect();
        let whole = tally(flat.as_bytes(), false, &all(), usize::MAX, Position::default()).unwrap();
        let pieces = tally(flat.as_bytes(), false, &all(), 256, Position::default()).unwrap();
        assert_eq!(summary(whole), summary(pieces));
    }

    #[test]
    fn an_error_in_a_later_piece_names_its_line_in_the_whole_input() {
        let mut text = synthetic(2000);
        text += "dd 1 [000] 99.000000: 250000 cpu-clock: \n\tzz bad\n\n";
        text += &synthetic(500);
        text += "garbage line\n";
        let line = 2000 * 4 + 2;
        let e = tally(text.as_bytes(), false, &all(), 4096, Position::default())
            .err()
            .unwrap();
        assert!(e.to_string().starts_with(&format!("s:{line}:2:")), "{e}");
    }

    #[test]
    fn a_line_without_end_is_an_error_after_the_line_bound() {
        // Endless input without a newline: read up to the parser's line bound, not on.
        let header = "dd 1 [000] 1.0: 1 cpu-clock:\n\tff ";
        let endless = std::io::BufReader::new(std::io::Read::chain(header.as_bytes(), std::io::repeat(b'x')));
        let e = tally(endless, false, &all(), 4096, Position::default()).err().unwrap();
        assert!(
            e.to_string()
                .starts_with("s:2: expected a line of at most 1048576 bytes"),
            "{e}"
        );
    }

    #[test]
    fn empty_input_is_an_error() {
        let e = read(&b"\n"[..], "s", Path::new("e.txt"), &ImportOptions::default()).unwrap_err();
        assert!(e.to_string().contains("no samples"), "{e}");
    }
}
