//! `perf script` text output, read as a stream of samples.
//!
//! The default fields, with and without call chains:
//!
//! ```text
//!        opt cgu.0 25608 [001]  2183.577483:     250000 cpu-clock:  ffffffff813695e2 handle_softirqs+0x72 ([kernel.kallsyms])
//! cargo 25381 [001]  2181.478404:     250000 cpu-clock:
//!     ffffffff815fa4ad unmap_page_range+0x51d ([kernel.kallsyms])
//!                d4ad7 __GI___execve+0x7 (/usr/lib/x86_64-linux-gnu/libc.so.6)
//!
//! ```
//!
//! A sample starts with an unindented header line:
//! `COMM [PID/]TID [[CPU]] [TIME:] [PERIOD] [EVENT:] [IP SYM+OFF (DSO)]`; every field
//! after the thread id is optional, so the common `-F` variants (`-F +pid`,
//! `-F comm,tid,time,event,ip,sym,dso`, `-F comm,pid,tid,cpu,time,period,event,ip,sym`) read
//! the same way. Indented lines (perf indents them with a tab) that follow are its call chain, innermost first:
//! `IP [SYM[+OFF]] [(DSO)]`. A blank line ends a sample.
//!
//! The fields are read by hand, byte by byte, to the nom grammar kept in `reference`
//! (which the tests and the fuzz harness hold them to, line by line); a header is read by
//! trying each word after the first as the thread id until the rest of the line parses (a
//! command name may hold blanks and numbers). DSOs keep nested parentheses
//! (`(/tmp/a.out (deleted))`).
//!
//! Side-band records that `--show-task-events` and `--show-mmap-events` add
//! (`dd 25959 11214.081030: PERF_RECORD_COMM exec: dd:25959/25959`) are skipped.
//!
//! Policy: a line of neither kind is an error naming its line and column, as is invalid
//! UTF-8 (with its byte offset) and input that stops in the middle of a line (perf script
//! ends every line with a newline, so a missing final newline means truncation). Memory
//! is bounded by the longest sample: one sample's lines are held at a time.
//!
//! Bounds: a line longer than [`MAX_LINE_BYTES`] is an error; a CPU number of
//! [`MAX_CPUS`](crate::MAX_CPUS) or more is an error; [`for_each_sample`] cuts command,
//! event, symbol and DSO names to [`MAX_NAME_BYTES`](crate::MAX_NAME_BYTES) and counts them in
//! [`ScriptStats::truncated_names`]. Periods are read as printed, up to `u64::MAX`: adding
//! them up (with checked arithmetic) is the caller's job.
//!
//! Over 1,000 lines with its unit tests; the code alone is under 1,000.

use crate::{bounded_name, ParseError, Position, EXPECT_CPU, MAX_CPUS};
use std::io::BufRead;

/// The longest line read, in bytes: far beyond a header or a frame line (a symbol, even a
/// long C++ one, and a path of at most 4096 bytes), small enough to hold in memory.
pub const MAX_LINE_BYTES: usize = 1 << 20;

/// One call-chain frame (or the sampled instruction when there is no call chain).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frame<'a> {
    /// Instruction address.
    pub ip: u64,
    /// Symbol without its `+0x…` offset; `[unknown]` as perf prints it; None when the
    /// line has no symbol field.
    pub symbol: Option<&'a str>,
    /// The `+0x…` offset into the symbol, when printed (`-F +symoff`, or in call chains).
    pub offset: Option<u64>,
    /// The DSO in the parentheses (`[kernel.kallsyms]`, `/usr/lib/…/libc.so.6`), when
    /// printed.
    pub dso: Option<&'a str>,
    /// Whether perf marked it `(inlined)`: a function inlined into the next frame, at the
    /// same address, which is the function the code ran in.
    pub inlined: bool,
}

/// One sample: its header fields and frames, borrowing the input's lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sample<'a> {
    /// Command name (may contain spaces).
    pub comm: &'a str,
    /// Process id, when printed (`PID/TID`).
    pub pid: Option<i32>,
    /// Thread id.
    pub tid: i32,
    /// CPU, when printed.
    pub cpu: Option<u32>,
    /// Time in nanoseconds, when printed (perf prints microseconds or nanoseconds).
    pub time_ns: Option<u64>,
    /// The sample's period, when printed (for cpu-clock and task-clock, nanoseconds).
    pub period: Option<u64>,
    /// Event name without its modifiers (`cpu-clock` for `cpu-clock:ppp:`), when printed.
    pub event: Option<&'a str>,
    /// Innermost first; one frame for a sample without a call chain; may be empty when
    /// neither `ip` nor a call chain was printed.
    pub frames: Vec<Frame<'a>>,
    /// The line of its header in the input (from 1), for errors about the sample.
    pub line: usize,
}

impl Sample<'_> {
    /// The sampled function's frame: the innermost one not `(inlined)`, the function the
    /// code ran in, as perf report attributes the sample.
    pub fn leaf(&self) -> Option<&Frame<'_>> {
        self.frames.iter().find(|f| !f.inlined).or(self.frames.first())
    }
}

/// What a whole stream held besides samples.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScriptStats {
    /// Samples read.
    pub samples: u64,
    /// Lines read.
    pub lines: usize,
    /// Side-band records skipped (`PERF_RECORD_COMM`, `PERF_RECORD_MMAP2`...).
    pub side_band: u64,
    /// Names (command, event, symbol, DSO) longer than [`MAX_NAME_BYTES`](crate::MAX_NAME_BYTES) that were cut.
    pub truncated_names: u64,
}

// The fields are read by hand, byte by byte: nom's combinators were a third of the
// import's time on a large input. `reference` keeps the nom grammar they were written
// from, and the fuzz harness checks that both read every input line alike.

/// A blank between fields, as nom's `space0`/`space1` read it.
fn is_space(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

/// `i` after its leading blanks (`space0`).
fn skip_spaces(i: &str) -> &str {
    &i[i.bytes().take_while(|&b| is_space(b)).count()..]
}

/// `i` after one or more blanks (`space1`), or None.
fn after_spaces(i: &str) -> Option<&str> {
    let r = skip_spaces(i);
    (r.len() < i.len()).then_some(r)
}

/// Whether a field ends here: at a blank or at the end of the line.
fn at_field_end(i: &str) -> bool {
    i.as_bytes().first().is_none_or(|&b| is_space(b))
}

/// The leading ASCII digits of `i` (`digit1`) and the rest, or None.
fn digits(i: &str) -> Option<(&str, &str)> {
    let n = i.bytes().take_while(u8::is_ascii_digit).count();
    (n > 0).then(|| i.split_at(n))
}

/// A decimal number that fits a `u64`, and the rest.
fn dec_u64(i: &str) -> Option<(u64, &str)> {
    let (d, r) = digits(i)?;
    Some((dec_value(d)?, r))
}

/// The value of ASCII digits (from [`digits`]), if it fits a `u64`.
fn dec_value(d: &str) -> Option<u64> {
    d.bytes()
        .try_fold(0u64, |v, b| v.checked_mul(10)?.checked_add(u64::from(b - b'0')))
}

/// `s` without its leading white space: the ASCII blanks by bytes, the rest (rare) by
/// `str::trim_start`, which it equals.
fn trim_start(s: &str) -> &str {
    let rest = &s[s.bytes().take_while(|b| matches!(b, b'\t'..=b'\r' | b' ')).count()..];
    match rest.as_bytes().first() {
        Some(b) if !b.is_ascii() => rest.trim_start(),
        _ => rest,
    }
}

/// A process or thread id: perf prints `-1` for a task it does not know (`:-1 -1`).
fn task_id(i: &str) -> Option<(i32, &str)> {
    if let Some(r) = i.strip_prefix("-1") {
        return Some((-1, r));
    }
    let (v, r) = dec_u64(i)?;
    Some((i32::try_from(u32::try_from(v).ok()?).ok()?, r))
}

/// `1234` or `1234/1235` (PID/TID).
fn thread_ids(i: &str) -> Option<((Option<i32>, i32), &str)> {
    let (p, r) = task_id(i)?;
    let (ids, r) = match r.strip_prefix('/').and_then(task_id) {
        Some((t, r)) => ((Some(p), t), r),
        None => ((None, p), r),
    };
    at_field_end(r).then_some((ids, r))
}

/// `[001]`: the digits, checked against [`MAX_CPUS`] by the caller.
fn cpu(i: &str) -> Option<(&str, &str)> {
    let (d, r) = digits(i.strip_prefix('[')?)?;
    let r = r.strip_prefix(']')?;
    at_field_end(r).then_some((d, r))
}

/// `2183.577483:` (µs) or `2183.577483123:` (ns, with --ns), in nanoseconds.
fn time(i: &str) -> Option<(u64, &str)> {
    let (sec, r) = digits(i)?;
    let (frac, r) = digits(r.strip_prefix('.')?)?;
    let r = r.strip_prefix(':')?;
    if !at_field_end(r) || frac.len() > 9 {
        return None;
    }
    let scale = 10u64.pow(9 - frac.len() as u32);
    let ns = dec_value(sec)?
        .checked_mul(1_000_000_000)?
        .checked_add(dec_value(frac)? * scale)?;
    Some((ns, r))
}

/// `250000`
fn period(i: &str) -> Option<(u64, &str)> {
    let (p, r) = dec_u64(i)?;
    at_field_end(r).then_some((p, r))
}

/// `cpu-clock:`, `cpu-clock:ppp:` → `cpu-clock`; a tracepoint `sched:sched_switch:` keeps
/// its subsystem.
fn event(i: &str) -> Option<(&str, &str)> {
    let (t, r) = i.split_at(i.bytes().take_while(|&b| !is_space(b)).count());
    if t.len() <= 1 || !t.ends_with(':') {
        return None;
    }
    let e = t.trim_end_matches(':');
    let e = match e.rsplit_once(':') {
        Some((name, mods)) if mods.bytes().all(|b| b"ukhGHpPSDIeW".contains(&b)) => name,
        _ => e,
    };
    Some((e, r))
}

/// `ffffffff815fa4ad unmap_page_range+0x51d ([kernel.kallsyms])`: an address, then
/// optionally a symbol and a DSO in parentheses.
fn frame(i: &str) -> Option<Frame<'_>> {
    let (hex, r) = frame_address(i)?;
    // At most 16 hex digits after leading zeros: the zeros shift out, nothing overflows.
    let ip = hex.bytes().fold(0u64, |v, b| (v << 4) | u64::from(hex_value(b)));
    let (tail, inlined) = without_inlined(skip_spaces(r).trim_end());
    let (sym, dso) = symbol_and_dso(tail);
    let (symbol, offset) = split_offset(sym);
    Some(Frame {
        ip,
        symbol,
        offset,
        dso,
        inlined,
    })
}

/// `foo (/tmp/a.out) (inlined)` → (`foo (/tmp/a.out)`, true): perf script's mark of an
/// inlined function's frame, after its DSO.
fn without_inlined(tail: &str) -> (&str, bool) {
    match tail.strip_suffix("(inlined)") {
        Some(t) if t.is_empty() || t.ends_with([' ', '\t']) => (t.trim_end(), true),
        _ => (tail, false),
    }
}

/// The value of an ASCII hex digit.
fn hex_value(b: u8) -> u8 {
    match b {
        b'0'..=b'9' => b - b'0',
        b'a'..=b'f' => b - b'a' + 10,
        _ => b - b'A' + 10,
    }
}

/// Splits `SYM+OFF (DSO)` at the parenthesis that matches the last one, so that a DSO
/// like `(/tmp/a.out (deleted))` and a symbol like `f(int, char) const` stay whole. A
/// `(` glued to a word (`operator()`) belongs to the symbol.
fn symbol_and_dso(tail: &str) -> (&str, Option<&str>) {
    let Some(inner) = tail.strip_suffix(')') else {
        return (tail, None);
    };
    // Bytes, not chars: parentheses and blanks are ASCII, never part of another char.
    let bytes = inner.as_bytes();
    let mut depth = 0usize;
    for at in (0..bytes.len()).rev() {
        match bytes[at] {
            b')' => depth += 1,
            b'(' if depth > 0 => depth -= 1,
            b'(' if at == 0 || is_space(bytes[at - 1]) => {
                return (inner[..at].trim_end(), Some(&inner[at + 1..]));
            }
            b'(' => break,
            _ => {}
        }
    }
    (tail, None)
}

// `unmap_page_range+0x51d` → `unmap_page_range`
fn strip_offset(sym: &str) -> &str {
    // Byte search, not a substring search: this runs for every frame of a large input.
    match sym.bytes().rposition(|b| b == b'+') {
        Some(at)
            if at > 0
                && sym[at + 1..]
                    .strip_prefix("0x")
                    .is_some_and(|off| off.bytes().all(|b| b.is_ascii_hexdigit())) =>
        {
            &sym[..at]
        }
        _ => sym,
    }
}

// `unmap_page_range+0x51d` → (`unmap_page_range`, 0x51d); "" → no symbol. An offset too
// long for 64 bits is no offset.
fn split_offset(sym: &str) -> (Option<&str>, Option<u64>) {
    if sym.is_empty() {
        return (None, None);
    }
    let name = strip_offset(sym);
    let offset = (name.len() < sym.len())
        .then(|| u64::from_str_radix(&sym[name.len() + 3..], 16).ok())
        .flatten();
    (Some(name), offset)
}

/// Where the header after the command name failed: the unparsed tail and what was
/// expected there.
type TailError<'a> = (&'a str, &'static str);

/// The header after the command name: `[PID/]TID [[CPU]] [TIME:] [PERIOD] [EVENT:] [FRAME]`,
/// every field after the thread id optional, the whole line consumed.
fn header_tail<'a>(i: &'a str, s: &mut Sample<'a>) -> Result<(), TailError<'a>> {
    let ((pid, tid), mut i) = thread_ids(i).ok_or((i, EXPECT_HEADER))?;
    (s.pid, s.tid) = (pid, tid);
    if let Some((digits, r)) = after_spaces(i).and_then(cpu) {
        match dec_value(digits) {
            Some(c) if c < u64::from(MAX_CPUS) => (i, s.cpu) = (r, Some(c as u32)),
            _ => return Err((digits_at(i, digits), EXPECT_CPU)),
        }
    }
    if let Some((t, r)) = after_spaces(i).and_then(time) {
        (i, s.time_ns) = (r, Some(t));
    }
    if let Some((p, r)) = after_spaces(i).and_then(period) {
        (i, s.period) = (r, Some(p));
    }
    if let Some((e, r)) = after_spaces(i).and_then(event) {
        (i, s.event) = (r, Some(e));
    }
    let i = skip_spaces(i);
    if i.is_empty() {
        return Ok(());
    }
    match frame(i) {
        Some(f) => s.frames.push(f),
        // A tracepoint's or probe's fields (`prev_comm=perf prev_pid=7 ...`), printed
        // where another event prints its address: its frames are its call chain, if any.
        None if s.event.is_some_and(is_tracepoint) => {}
        None => return Err((i, EXPECT_ADDRESS)),
    }
    Ok(())
}

/// Whether an event, as [`event`] reads it, is a tracepoint or probe (`sched:sched_switch`,
/// `probe_libc:malloc`): perf prints its fields after it, not an address.
pub fn is_tracepoint(event: &str) -> bool {
    event.contains(':')
}

const EXPECT_ADDRESS: &str = "an instruction address (hex) after the event";

/// The tail of `line` that starts at its sub-slice `part`.
fn digits_at<'a>(line: &'a str, part: &str) -> &'a str {
    &line[part.as_ptr() as usize - line.as_ptr() as usize..]
}

const EXPECT_FRAME: &str = "a call-chain frame: ADDRESS [SYMBOL[+0xOFFSET]] [(DSO)]";
const EXPECT_HEADER: &str = "a sample header: COMM [PID/]TID [[CPU]] [TIME:] [PERIOD] [EVENT:] [IP SYMBOL (DSO)]";

/// Parses a header line; `file`/`line_no` name it in errors.
///
/// `       opt cgu.0 25608 [001]  2183.577483:     250000 cpu-clock:  ffffffff813695e2 handle_softirqs+0x72 ([kernel.kallsyms])`
///
/// A command name may hold blanks and numbers ("Thread 2"), so the thread id is the first
/// word after the first one from which the rest of the line parses as a header; when no
/// word does, the error is the one that got furthest.
pub fn parse_header<'a>(line: &'a str, file: &str, line_no: usize) -> Result<Sample<'a>, ParseError> {
    read_header(line, file, line_no, header_tail)
}

/// [`parse_header`] with `tail` reading what follows the command name.
fn read_header<'a>(
    line: &'a str,
    file: &str,
    line_no: usize,
    tail: impl Fn(&'a str, &mut Sample<'a>) -> Result<(), TailError<'a>>,
) -> Result<Sample<'a>, ParseError> {
    let body = trim_start(line);
    let mut furthest: Option<TailError<'a>> = None;
    // Where each word after the first starts (blanks are ASCII: these are char boundaries).
    let bytes = body.as_bytes();
    let words = (1..bytes.len()).filter(|&at| !is_space(bytes[at]) && is_space(bytes[at - 1]));
    for at in words {
        let mut s = Sample {
            comm: body[..at].trim_end(),
            pid: None,
            tid: 0,
            cpu: None,
            time_ns: None,
            period: None,
            event: None,
            frames: Vec::new(),
            line: line_no,
        };
        match tail(&body[at..], &mut s) {
            Ok(()) => return Ok(s),
            // A CPU field out of range is damage, not a sign that the thread id comes
            // later: a later reading would take the CPU and the time into the command.
            Err((rest, EXPECT_CPU)) => return Err(ParseError::at(file, line_no, line, rest, EXPECT_CPU)),
            // Past the thread id: remember how far this reading got.
            Err(e) if e.1 != EXPECT_HEADER => {
                if furthest.is_none_or(|f| e.0.len() < f.0.len()) {
                    furthest = Some(e);
                }
            }
            Err(_) => {}
        }
    }
    Err(match furthest {
        Some((rest, expected)) => ParseError::at(file, line_no, line, rest, expected),
        None => {
            // No thread id anywhere: point after the command name.
            let comm_end = body.find([' ', '\t']).unwrap_or(body.len());
            ParseError::at(file, line_no, line, &body[comm_end..], EXPECT_HEADER)
        }
    })
}

/// Parses a call-chain line (indented).
///
/// `    ffffffff815fa4ad unmap_page_range+0x51d ([kernel.kallsyms])`
pub fn parse_frame<'a>(line: &'a str, file: &str, line_no: usize) -> Result<Frame<'a>, ParseError> {
    let body = trim_start(line);
    frame(body).ok_or_else(|| ParseError::at(file, line_no, line, body, EXPECT_FRAME))
}

/// The address that starts a frame, and the rest; all a frame needs to be well formed
/// (the symbol and DSO after it are free text). At most 16 hex digits after leading
/// zeros, so that every address read here is a `u64` (and the leaf-only reading agrees
/// with the full one).
fn frame_address(i: &str) -> Option<(&str, &str)> {
    // One pass: the leading zeros, then the other digits.
    let b = i.as_bytes();
    let zeros = b.iter().take_while(|&&c| c == b'0').count();
    let mut n = zeros;
    while b.get(n).is_some_and(u8::is_ascii_hexdigit) {
        n += 1;
    }
    let (hex, r) = i.split_at(n);
    (n > 0 && n - zeros <= 16 && at_field_end(r)).then_some((hex, r))
}

/// Whether a line (without its ending) that follows another line of a sample is one of
/// its call-chain frames: perf indents those with a tab; a line indented with spaces that
/// is no header but reads as a frame is taken as one too.
fn continues_sample(line: &str, name: &str, line_no: usize) -> bool {
    line.starts_with('\t')
        || (line.starts_with(' ')
            && frame_address(trim_start(line)).is_some()
            && parse_header(line, name, line_no).is_err())
}

/// Where `buf` (the start of the rest of an input) can be cut so that both sides hold whole
/// samples: after its last blank line (call-chain output), or, when it has none, after its
/// last newline that is followed by a whole line that can only start a sample (it is not a
/// call-chain frame, nor a `#` comment, whose meaning depends on what comes before).
/// `None` when no such place exists. Cutting there lets pieces be parsed apart, in
/// parallel, with the same result as the whole.
pub fn piece_end(buf: &[u8]) -> Option<usize> {
    if let Some(at) = buf.windows(2).rposition(|w| w == b"\n\n") {
        return Some(at + 2);
    }
    let starts_sample = |rest: &[u8]| {
        let Some(len) = rest.iter().position(|&b| b == b'\n') else {
            return false; // not a whole line: cannot tell
        };
        let Ok(line) = std::str::from_utf8(&rest[..len]) else {
            return false;
        };
        let line = line.strip_suffix('\r').unwrap_or(line);
        !line.starts_with('#') && !continues_sample(line, "", 0)
    };
    let mut end = buf.len();
    while let Some(nl) = buf[..end].iter().rposition(|&b| b == b'\n') {
        if starts_sample(&buf[nl + 1..]) {
            return Some(nl + 1);
        }
        end = nl;
    }
    None
}

/// Cuts the names of `s` to [`MAX_NAME_BYTES`](crate::MAX_NAME_BYTES); returns how many were cut.
fn bound_names(s: &mut Sample<'_>) -> u64 {
    fn cut(name: &mut &str) -> u64 {
        let (short, was_cut) = bounded_name(name);
        *name = short;
        u64::from(was_cut)
    }
    let mut n = cut(&mut s.comm);
    n += s.event.as_mut().map_or(0, cut);
    for f in &mut s.frames {
        n += f.symbol.as_mut().map_or(0, cut) + f.dso.as_mut().map_or(0, cut);
    }
    n
}

/// How much of each call chain [`for_each_sample`] hands over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Chain {
    /// Every frame.
    Full,
    /// Only the innermost frame; the others are still checked (each must start with an
    /// address) but not split into symbol and DSO, which is most of the work.
    Leaf,
}

/// Reads `perf script` output from `input` and calls `on_sample` for every sample, in
/// order. `name` names the input in errors; `chain` says whether the samples carry
/// every frame or only the innermost. Names longer than [`MAX_NAME_BYTES`](crate::MAX_NAME_BYTES) are cut.
pub fn for_each_sample<R: BufRead>(
    input: R,
    name: &str,
    chain: Chain,
    on_sample: impl FnMut(&Sample<'_>),
) -> Result<ScriptStats, ParseError> {
    for_each_sample_from(input, name, chain, Position::default(), on_sample)
}

/// [`for_each_sample`] on a piece of a larger input that starts at `at` (as cut by
/// [`piece_end`]), so that errors name the line and byte of the whole input.
pub fn for_each_sample_from<R: BufRead>(
    input: R,
    name: &str,
    chain: Chain,
    at: Position,
    mut on_sample: impl FnMut(&Sample<'_>),
) -> Result<ScriptStats, ParseError> {
    let mut stats = ScriptStats::default();
    // One sample's text and where each of its lines starts (with its line number).
    let mut block = String::new();
    let mut starts: Vec<(usize, usize)> = Vec::new();
    let mut lines = crate::LineReader::starting_at(input, MAX_LINE_BYTES, at);
    let flush = |block: &str, starts: &[(usize, usize)], stats: &mut ScriptStats, f: &mut dyn FnMut(&Sample<'_>)| {
        let ranges: Vec<(usize, usize, usize)> = (0..starts.len())
            .map(|k| (starts[k].0, starts.get(k + 1).map_or(block.len(), |n| n.0), starts[k].1))
            .collect();
        flush_sample(block, &ranges, name, chain, stats, f)
    };
    while let Some((line_no, text)) = lines.next_line(name)? {
        stats.lines = line_no;
        let text = line_text(text, line_no, name)?;
        let kind = classify(text, starts.is_empty(), name, line_no);
        if matches!(kind, LineKind::Skip) {
            continue;
        }
        if !matches!(kind, LineKind::Frame) {
            flush(&block, &starts, &mut stats, &mut on_sample)?;
            block.clear();
            starts.clear();
        }
        match kind {
            LineKind::SideBand => stats.side_band += 1,
            LineKind::Header | LineKind::Frame => {
                starts.push((block.len(), line_no));
                block.push_str(text);
            }
            LineKind::Skip | LineKind::End => {}
        }
    }
    flush(&block, &starts, &mut stats, &mut on_sample)?;
    Ok(stats)
}

/// [`for_each_sample_from`] on a piece in memory: valid UTF-8 is read in place, each
/// sample's lines where they are rather than copied line by line; a piece that is not
/// UTF-8 is read line by line, which says where it stops being.
pub fn for_each_sample_in_piece(
    piece: &[u8],
    name: &str,
    chain: Chain,
    at: Position,
    on_sample: impl FnMut(&Sample<'_>),
) -> Result<ScriptStats, ParseError> {
    match std::str::from_utf8(piece) {
        Ok(text) => for_each_sample_in(text, name, chain, at, on_sample),
        Err(_) => for_each_sample_from(piece, name, chain, at, on_sample),
    }
}

/// What one line of perf script output is, given whether a sample is open.
enum LineKind {
    /// A `perf script --header` comment before any sample.
    Skip,
    /// A blank line: the end of a sample.
    End,
    /// A side-band record (`--show-task-events`, `--show-mmap-events`).
    SideBand,
    /// A sample's first line.
    Header,
    /// A call-chain line of the open sample.
    Frame,
}

/// Whether a line is blank; an ASCII character after the leading blanks answers without
/// the Unicode-aware trim (this runs for every line of a large input).
fn is_blank(text: &str) -> bool {
    // The ASCII characters Unicode calls white space (is_ascii_whitespace leaves out \x0b).
    match text.bytes().find(|b| !matches!(b, b'\t'..=b'\r' | b' ')) {
        None => true,
        Some(b) if b.is_ascii() => false,
        Some(_) => text.trim().is_empty(),
    }
}

fn classify(text: &str, none_open: bool, name: &str, line_no: usize) -> LineKind {
    if is_blank(text) {
        return LineKind::End;
    }
    if text.starts_with('#') && none_open {
        return LineKind::Skip; // `perf script --header` comments
    }
    // `--show-task-events`, `--show-mmap-events`...: side-band records, not samples. Told
    // apart before grouping, as such a line can start with a word that reads as an
    // address (`dd 25959 ...: PERF_RECORD_COMM`).
    if !text.starts_with('\t') && text.contains(" PERF_RECORD_") {
        return LineKind::SideBand;
    }
    // perf indents call-chain lines with a tab; a header of the default layout is
    // indented with spaces (the command name is right-aligned).
    let is_frame = !none_open && continues_sample(text, name, line_no);
    if is_frame {
        LineKind::Frame
    } else {
        LineKind::Header
    }
}

/// A line without its newline (and carriage return); an error when it has none.
fn line_text<'t>(text: &'t str, line_no: usize, name: &str) -> Result<&'t str, ParseError> {
    let Some(text) = text.strip_suffix('\n') else {
        return Err(ParseError::at(
            name,
            line_no,
            text,
            "",
            "a newline: the input stops in the middle of this line (truncated?)",
        ));
    };
    Ok(text.strip_suffix('\r').unwrap_or(text))
}

/// Parses one sample, its lines at `ranges` (start, end, line number) of `text`, and hands
/// it to `f`.
fn flush_sample(
    text: &str,
    ranges: &[(usize, usize, usize)],
    name: &str,
    chain: Chain,
    stats: &mut ScriptStats,
    f: &mut dyn FnMut(&Sample<'_>),
) -> Result<(), ParseError> {
    let Some(&(start, end, line_no)) = ranges.first() else {
        return Ok(());
    };
    let mut s = parse_header(&text[start..end], name, line_no)?;
    for &(start, end, line_no) in &ranges[1..] {
        let line = &text[start..end];
        // A leaf-only reading reads on past inlined frames, to the function they ran in.
        if chain == Chain::Full || s.frames.last().is_none_or(|f| f.inlined) {
            s.frames.push(parse_frame(line, name, line_no)?);
        } else if frame_address(trim_start(line)).is_none() {
            return Err(ParseError::at(name, line_no, line, trim_start(line), EXPECT_FRAME));
        }
    }
    stats.truncated_names += bound_names(&mut s);
    stats.samples += 1;
    f(&s);
    Ok(())
}

/// [`for_each_sample_from`] on text in memory: each sample's lines are read where they
/// are, not copied.
fn for_each_sample_in(
    text: &str,
    name: &str,
    chain: Chain,
    at: Position,
    mut on_sample: impl FnMut(&Sample<'_>),
) -> Result<ScriptStats, ParseError> {
    let mut stats = ScriptStats::default();
    let mut ranges: Vec<(usize, usize, usize)> = Vec::new();
    let (mut pos, mut line_no) = (0, at.lines);
    let mut newlines = memchr::memchr_iter(b'\n', text.as_bytes());
    while pos < text.len() {
        let end = newlines.next().map_or(text.len(), |n| n + 1);
        line_no += 1;
        stats.lines = line_no;
        // The streaming reader's bound, so that a piece gives the same result either way.
        if end - pos > MAX_LINE_BYTES {
            return Err(crate::line_too_long(name, line_no, MAX_LINE_BYTES));
        }
        let line = line_text(&text[pos..end], line_no, name)?;
        let (start, stop) = (pos, pos + line.len());
        pos = end;
        // Past the leaf, a leaf-only reading checks no more of a call-chain line than its
        // address: checked here, a sound line is not kept for the sample; a damaged one
        // is, and the sample's reading reports it after any error of the lines before.
        let after_leaf = ranges.len() >= 2 && ranges.last().is_some_and(|r| !text[r.0..r.1].ends_with("(inlined)"));
        if chain == Chain::Leaf && after_leaf && line.starts_with('\t') {
            let body = trim_start(line);
            if !body.is_empty() && frame_address(body).is_some() {
                continue;
            }
        }
        let kind = classify(line, ranges.is_empty(), name, line_no);
        if matches!(kind, LineKind::Skip) {
            continue;
        }
        if !matches!(kind, LineKind::Frame) {
            flush_sample(text, &ranges, name, chain, &mut stats, &mut on_sample)?;
            ranges.clear();
        }
        match kind {
            LineKind::SideBand => stats.side_band += 1,
            LineKind::Header | LineKind::Frame => ranges.push((start, stop, line_no)),
            LineKind::Skip | LineKind::End => {}
        }
    }
    flush_sample(text, &ranges, name, chain, &mut stats, &mut on_sample)?;
    Ok(stats)
}

/// The nom grammar the hand-written field readers were written from, kept as their
/// specification: [`check_line`](reference::check_line) asserts that both read a line alike,
/// and the fuzz harness calls it on every line of the corpus and of the mutation passes.
pub(crate) mod reference {
    use super::{
        digits_at, read_header, split_offset, symbol_and_dso, without_inlined, Frame, Sample, TailError, EXPECT_CPU,
        EXPECT_FRAME, EXPECT_HEADER, MAX_CPUS,
    };
    use crate::{NomError, ParseError};
    use nom::branch::alt;
    use nom::bytes::complete::{tag, take_till1};
    use nom::character::complete::{char, digit1, hex_digit1, space0, space1, u32 as dec_u32, u64 as dec_u64};
    use nom::combinator::{eof, map, map_opt, map_res, peek, rest, value, verify};
    use nom::sequence::{delimited, pair, preceded, separated_pair, terminated};
    use nom::Parser;

    /// Lines longer than this are left to the bounded-time checks: reading a header tries
    /// every word, and the reference is slower.
    pub(crate) const CHECKED_LINE_BYTES: usize = 4096;

    /// Asserts that the hand-written readers read `line` (without its newline) as the nom
    /// grammar does: as a header, as a frame, and for where a frame's address ends.
    pub(crate) fn check_line(line: &str) {
        if line.len() > CHECKED_LINE_BYTES {
            return;
        }
        assert_eq!(
            super::parse_header(line, "f", 1),
            read_header(line, "f", 1, header_tail),
            "header {line:?}"
        );
        assert_eq!(super::parse_frame(line, "f", 1), parse_frame(line), "frame {line:?}");
        let body = line.trim_start();
        assert_eq!(
            super::frame_address(body).map(|(hex, _)| hex),
            frame_address(body).ok().map(|(_, hex)| hex),
            "address {line:?}"
        );
    }

    fn parse_frame(line: &str) -> Result<Frame<'_>, ParseError> {
        let body = line.trim_start();
        frame(body)
            .map(|(_, f)| f)
            .map_err(|_| ParseError::at("f", 1, line, body, EXPECT_FRAME))
    }

    type IResult<'a, O> = nom::IResult<&'a str, O, NomError<'a>>;

    /// A field ends at a blank or at the end of the line.
    fn field_end(i: &str) -> IResult<'_, ()> {
        peek(alt((value((), space1), value((), eof)))).parse(i)
    }

    /// A process or thread id: perf prints `-1` for a task it does not know (`:-1 -1`).
    fn task_id(i: &str) -> IResult<'_, i32> {
        alt((value(-1, tag("-1")), map_res(dec_u32, i32::try_from))).parse(i)
    }

    /// `1234` or `1234/1235` (PID/TID).
    fn thread_ids(i: &str) -> IResult<'_, (Option<i32>, i32)> {
        terminated(
            alt((
                map(separated_pair(task_id, char('/'), task_id), |(p, t)| (Some(p), t)),
                map(task_id, |t| (None, t)),
            )),
            field_end,
        )
        .parse(i)
    }

    /// `[001]`: the digits, checked against [`MAX_CPUS`] by the caller.
    fn cpu(i: &str) -> IResult<'_, &str> {
        terminated(delimited(char('['), digit1, char(']')), field_end).parse(i)
    }

    /// `2183.577483:` (µs) or `2183.577483123:` (ns, with --ns), in nanoseconds.
    fn time(i: &str) -> IResult<'_, u64> {
        map_opt(
            terminated(separated_pair(digit1, char('.'), digit1), pair(char(':'), field_end)),
            |(sec, frac): (&str, &str)| {
                if frac.len() > 9 {
                    return None;
                }
                let scale = 10u64.pow(9 - frac.len() as u32);
                sec.parse::<u64>()
                    .ok()?
                    .checked_mul(1_000_000_000)?
                    .checked_add(frac.parse::<u64>().ok()? * scale)
            },
        )
        .parse(i)
    }

    /// `250000`
    fn period(i: &str) -> IResult<'_, u64> {
        terminated(dec_u64, field_end).parse(i)
    }

    /// `cpu-clock:`, `cpu-clock:ppp:` → `cpu-clock`; a tracepoint `sched:sched_switch:` keeps
    /// its subsystem.
    fn event(i: &str) -> IResult<'_, &str> {
        map(
            verify(take_till1(|c| c == ' ' || c == '\t'), |t: &str| {
                t.len() > 1 && t.ends_with(':')
            }),
            |t: &str| {
                let e = t.trim_end_matches(':');
                match e.rsplit_once(':') {
                    Some((name, mods)) if mods.bytes().all(|b| b"ukhGHpPSDIeW".contains(&b)) => name,
                    _ => e,
                }
            },
        )
        .parse(i)
    }

    /// `ffffffff815fa4ad unmap_page_range+0x51d ([kernel.kallsyms])`: an address, then
    /// optionally a symbol and a DSO in parentheses.
    fn frame(i: &str) -> IResult<'_, Frame<'_>> {
        map(
            (
                map_res(frame_address, |h| u64::from_str_radix(h, 16)),
                preceded(space0, map(rest, str::trim_end)),
            ),
            |(ip, tail)| {
                let (tail, inlined) = without_inlined(tail);
                let (sym, dso) = symbol_and_dso(tail);
                let (symbol, offset) = split_offset(sym);
                Frame {
                    ip,
                    symbol,
                    offset,
                    dso,
                    inlined,
                }
            },
        )
        .parse(i)
    }

    /// The header after the command name: `[PID/]TID [[CPU]] [TIME:] [PERIOD] [EVENT:] [FRAME]`,
    /// every field after the thread id optional, the whole line consumed.
    fn header_tail<'a>(i: &'a str, s: &mut Sample<'a>) -> Result<(), TailError<'a>> {
        let (mut i, (pid, tid)) = thread_ids(i).map_err(|_| (i, EXPECT_HEADER))?;
        (s.pid, s.tid) = (pid, tid);
        if let Ok((r, digits)) = preceded(space1, cpu).parse(i) {
            match digits.parse::<u32>() {
                Ok(c) if c < MAX_CPUS => (i, s.cpu) = (r, Some(c)),
                _ => return Err((digits_at(i, digits), EXPECT_CPU)),
            }
        }
        if let Ok((r, t)) = preceded(space1, time).parse(i) {
            (i, s.time_ns) = (r, Some(t));
        }
        if let Ok((r, p)) = preceded(space1, period).parse(i) {
            (i, s.period) = (r, Some(p));
        }
        if let Ok((r, e)) = preceded(space1, event).parse(i) {
            (i, s.event) = (r, Some(e));
        }
        let (i, _) = space0::<_, NomError<'_>>(i).expect("space0 cannot fail");
        if i.is_empty() {
            return Ok(());
        }
        match frame(i) {
            Ok((_, f)) => s.frames.push(f),
            Err(_) if s.event.is_some_and(super::is_tracepoint) => {}
            Err(_) => return Err((i, "an instruction address (hex) after the event")),
        }
        Ok(())
    }

    /// The address that starts a frame; all a frame needs to be well formed (the symbol and
    /// DSO after it are free text). At most 16 hex digits after leading zeros, so that every
    /// address read here is a `u64` (and the leaf-only reading agrees with the full one).
    fn frame_address(i: &str) -> IResult<'_, &str> {
        terminated(
            // Bytes, not chars: this runs for every frame of a large input.
            verify(hex_digit1, |h: &str| {
                h.len() - h.bytes().take_while(|&b| b == b'0').count() <= 16
            }),
            field_end,
        )
        .parse(i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(text: &str) -> Result<Vec<String>, ParseError> {
        let mut out = Vec::new();
        for_each_sample(text.as_bytes(), "s.txt", Chain::Full, |s| out.push(format!("{s:?}")))?;
        Ok(out)
    }

    #[test]
    fn hand_written_fields_read_as_the_nom_grammar() {
        // The fixtures' lines, then lines of every field's edge cases; each also cut at
        // every char and with every char replaced by one that a field reads or stops at.
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../testdata");
        let mut lines: Vec<String> = Vec::new();
        for f in [
            "import/a.perf-script",
            "import/g.perf-script",
            "fuzz/seeds/perf-script-events",
        ] {
            let text = std::fs::read_to_string(format!("{dir}/{f}")).unwrap();
            lines.extend(text.lines().map(str::to_string));
        }
        lines.extend(
            [
                "  :-1 -1/-1 [001] 1.5: -1 c:u: ff",
                "a 4294967296 [0] 1.0: 1 c:",
                "a 2147483648 1.0: 1 c:",
                "a 1/ [0] 1.0:",
                "a 1 [8192] 1.0: 1 c:",
                "a 1 [] 1.0: 1 c:",
                "a 1 1.0123456789: 1 c:",
                "a 1 18446744073.709551616: 18446744073709551616 c:",
                "a 1 \u{a0}[0]\t1.0:\t\t1 sched:sched_switch: \tFf x+0xZ (d (deleted))",
                "\u{2003} 10 00000000000000000ffffffffffffffff f(int) const+0x1",
                "\t 1ffffffffffffffff y",
                "\t ff Foo::operator()",
                "\t ff (x) (y)",
                "\t ff\u{e9} z",
                "x\u{e9} 1 [0] 2.0: c:ppp:  ff f+0x1f ([k])",
            ]
            .map(str::to_string),
        );
        let swaps = [
            ' ', '\t', '/', '-', '[', ']', ':', '.', '0', '9', 'f', 'G', '(', ')', '+', '\u{a0}',
        ];
        for line in &lines {
            reference::check_line(line);
            for (at, c) in line.char_indices() {
                reference::check_line(&line[..at]);
                for swap in swaps {
                    let mut l = line.clone();
                    l.replace_range(at..at + c.len_utf8(), swap.encode_utf8(&mut [0; 4]));
                    reference::check_line(&l);
                }
            }
        }
    }

    #[test]
    fn blank_lines_are_blank_as_trim_sees_them() {
        for line in [
            "", " ", "\t \r", "\x0b", " \u{a0} ", "\u{2003}", "x", " \tff", " \u{a0}x", "\u{e9}",
        ] {
            assert_eq!(is_blank(line), line.trim().is_empty(), "{line:?}");
        }
    }

    #[test]
    fn default_fields_without_call_chain() {
        let line = "       opt cgu.0 25608 [001]  2183.577483:     250000 cpu-clock:ppp:  ffffffff813695e2 handle_softirqs+0x72 ([kernel.kallsyms])";
        let s = parse_header(line, "f", 1).unwrap();
        assert_eq!(s.comm, "opt cgu.0");
        assert_eq!((s.pid, s.tid, s.cpu), (None, 25608, Some(1)));
        assert_eq!(s.time_ns, Some(2_183_577_483_000));
        assert_eq!(s.period, Some(250000));
        assert_eq!(s.event, Some("cpu-clock"));
        assert_eq!(
            s.frames,
            [Frame {
                ip: 0xffffffff813695e2,
                symbol: Some("handle_softirqs"),
                offset: Some(0x72),
                dso: Some("[kernel.kallsyms]"),
                inlined: false,
            }]
        );
    }

    #[test]
    fn f_variants() {
        // -F comm,pid,tid,time,event,ip,sym (no cpu, no period, no dso), --ns
        let s = parse_header("Thread 2 10/12 5.000000001: cpu-clock:  7f00 main", "f", 1).unwrap();
        assert_eq!((s.comm, s.pid, s.tid, s.cpu), ("Thread 2", Some(10), 12, None));
        assert_eq!(s.time_ns, Some(5_000_000_001));
        assert_eq!(s.frames[0].symbol, Some("main"));
        assert_eq!(s.frames[0].dso, None);
        // -F comm,tid,cpu only
        let s = parse_header("bash 7 [003]", "f", 1).unwrap();
        assert_eq!((s.tid, s.cpu, s.frames.len()), (7, Some(3), 0));
        // a tracepoint keeps its subsystem
        let s = parse_header("x 1 [0] 1.0: sched:sched_switch:", "f", 1).unwrap();
        assert_eq!(s.event, Some("sched:sched_switch"));
    }

    #[test]
    fn frames() {
        let f = parse_frame("\t           d4ad7 __GI___execve+0x7 (/usr/lib/libc.so.6)", "f", 2).unwrap();
        assert_eq!(
            (f.ip, f.symbol, f.dso),
            (0xd4ad7, Some("__GI___execve"), Some("/usr/lib/libc.so.6"))
        );
        let f = parse_frame("\t 149ca9 [unknown] (/usr/bin/perf)", "f", 2).unwrap();
        assert_eq!(f.symbol, Some("[unknown]"));
        let f = parse_frame("\t 10 foo(int, char) const+0x1f (/bin/a b)", "f", 2).unwrap();
        assert_eq!((f.symbol, f.dso), (Some("foo(int, char) const"), Some("/bin/a b")));
        assert_eq!(f.offset, Some(0x1f));
        let f = parse_frame("   ffff ([kernel.kallsyms])", "f", 2).unwrap();
        assert_eq!((f.symbol, f.offset, f.dso), (None, None, Some("[kernel.kallsyms]")));
        // No offset printed, an empty one, one beyond 64 bits: no offset.
        for (text, symbol) in [
            ("	 10 main (/bin/a)", "main"),
            ("	 10 main+0x (/bin/a)", "main"),
            ("	 10 main+0x10000000000000000 (/bin/a)", "main"),
            ("	 10 a+b (/bin/a)", "a+b"),
        ] {
            let f = parse_frame(text, "f", 2).unwrap();
            assert_eq!((f.symbol, f.offset), (Some(symbol), None), "{text}");
        }
        let e = parse_frame("\tnot-an-address foo", "f", 9).unwrap_err();
        assert_eq!((e.line, e.column), (9, 2));
    }

    #[test]
    fn dso_and_symbol_parentheses() {
        let f = parse_frame("\t 4011 main+0x5 (/tmp/a.out (deleted))", "f", 2).unwrap();
        assert_eq!((f.symbol, f.dso), (Some("main"), Some("/tmp/a.out (deleted)")));
        // -F ip,sym: no DSO, a symbol ending in a parenthesis stays whole
        let f = parse_frame("\t 4011 Foo::operator()", "f", 2).unwrap();
        assert_eq!((f.symbol, f.dso), (Some("Foo::operator()"), None));
        let f = parse_frame("\t 4011 std::f(int) (/bin/x)", "f", 2).unwrap();
        assert_eq!((f.symbol, f.dso), (Some("std::f(int)"), Some("/bin/x")));
    }

    #[test]
    fn command_names_with_numbers_and_slashes() {
        let s = parse_header(
            "kworker/0:1 12 [000] 1.5: 1 cpu-clock: ff f ([kernel.kallsyms])",
            "f",
            1,
        )
        .unwrap();
        assert_eq!((s.comm, s.tid), ("kworker/0:1", 12));
        // A task perf does not know: `:-1` with thread id -1.
        let s = parse_header(
            "             :-1    -1 [001]  1815.573617:     250000 cpu-clock:  ffffffff8226e079 f+0x19 ([kernel.kallsyms])",
            "x",
            1,
        )
        .unwrap();
        assert_eq!((s.comm, s.tid, s.cpu), (":-1", -1, Some(1)));
        // "foo 12" is a command; the thread id is the number a header can follow.
        let s = parse_header("foo 12 13 [000] 1.5: cpu-clock:", "f", 1).unwrap();
        assert_eq!((s.comm, s.tid, s.cpu), ("foo 12", 13, Some(0)));
        let s = parse_header("  web server 2 77/78 [1] 2.000001: 10 task-clock:u:", "f", 1).unwrap();
        assert_eq!(
            (s.comm, s.pid, s.tid, s.event),
            ("web server 2", Some(77), 78, Some("task-clock"))
        );
    }

    #[test]
    fn error_is_where_the_best_reading_stopped() {
        // Both "1"s read as thread ids; both readings fail at the address.
        let e = parse_header("a 1 [000] 1.0: 1 cpu-clock: 12zz sym", "f", 4).unwrap_err();
        assert_eq!((e.line, e.column), (4, 29));
        assert!(e.expected.contains("instruction address"), "{e}");
        // No thread id at all: after the command name.
        let e = parse_header("   perf record: woken up", "f", 1).unwrap_err();
        assert_eq!(e.column, 8);
        assert!(e.expected.contains("[PID/]TID"), "{e}");
    }

    #[test]
    fn stream_with_call_chains() {
        let text = "perf-exec 1 [000] 1.000000: 250000 cpu-clock: \n\
                    \t 149ca9 [unknown] (/usr/bin/perf)\n\
                    \t 2724a __libc_start_call_main+0x7a (/usr/lib/libc.so.6)\n\
                    \n\
                    swapper     0 [001]  1.000250:     250000 cpu-clock: \n\
                    \tffffffff822601ab pv_native_safe_halt+0xb ([kernel.kallsyms])\n\
                    \n";
        let mut leaves = Vec::new();
        let stats = for_each_sample(text.as_bytes(), "s", Chain::Full, |s| {
            leaves.push((
                s.cpu,
                s.frames.len(),
                s.leaf().and_then(|f| f.symbol).unwrap().to_string(),
            ))
        })
        .unwrap();
        assert_eq!(stats.samples, 2);
        assert_eq!(
            leaves,
            [
                (Some(0), 2, "[unknown]".into()),
                (Some(1), 1, "pv_native_safe_halt".into())
            ]
        );
    }

    #[test]
    fn inlined_frames_give_the_function_they_ran_in_issue_30() {
        let text = "a 1 [000] 1.0: 1 cpu-clock:\n\t401136 inner (/tmp/a.out) (inlined)\n\t401136 outer+0x16 (/tmp/a.out)\n\t401200 main+0x5 (/tmp/a.out)\n\n";
        for chain in [Chain::Full, Chain::Leaf] {
            let mut got = Vec::new();
            for_each_sample(text.as_bytes(), "s", chain, |s| {
                let l = s.leaf().unwrap();
                let first = &s.frames[0];
                got.push(format!(
                    "{:?} {:?} {} {} {:?}",
                    l.symbol, l.dso, l.inlined, first.inlined, first.dso
                ));
            })
            .unwrap();
            assert_eq!(
                got,
                [r#"Some("outer") Some("/tmp/a.out") false true Some("/tmp/a.out")"#],
                "{chain:?}"
            );
        }
        reference::check_line("\t401136 inner (/tmp/a.out) (inlined)");
    }

    #[test]
    fn tracepoint_fields_are_no_address_issue_30() {
        let text = "perf 7 [000] 1.0: sched:sched_switch: prev_comm=perf prev_pid=7 prev_prio=120 prev_state=D ==> next_comm=swapper/0 next_pid=0 next_prio=120\n\tffffffff82246e88 __schedule+0x628 ([kernel.kallsyms])\n\n\
                    perf 7 [000] 1.1: 250000 cpu-clock: \n\tffffffff81000000 f ([kernel.kallsyms])\n\n\
                    perf 7 [000] 1.2: sched:sched_switch: prev_comm=perf prev_pid=7\n\n";
        let mut got = Vec::new();
        for_each_sample(text.as_bytes(), "s", Chain::Leaf, |s| {
            got.push(format!("{:?} {:?}", s.event, s.leaf().and_then(|f| f.symbol)))
        })
        .unwrap();
        assert_eq!(
            got,
            [
                r#"Some("sched:sched_switch") Some("__schedule")"#,
                r#"Some("cpu-clock") Some("f")"#,
                r#"Some("sched:sched_switch") None"#
            ]
        );
        for line in text.lines() {
            reference::check_line(line);
        }
        // Another event's words where the address belongs are still an error.
        assert!(parse_header("a 1 [000] 1.0: 1 cpu-clock: prev_comm=a", "f", 1).is_err());
    }

    #[test]
    fn leaf_only_still_checks_every_frame() {
        let text = "a 1 [000] 1.0: 1 cpu-clock:\n\tff x+0x1 ([kernel.kallsyms])\n\tfe y (/lib/l.so)\n\n";
        let mut got = Vec::new();
        for_each_sample(text.as_bytes(), "s", Chain::Leaf, |s| {
            got.push(format!("{:?}", s.frames))
        })
        .unwrap();
        let leaf = Frame {
            ip: 0xff,
            symbol: Some("x"),
            offset: Some(1),
            dso: Some("[kernel.kallsyms]"),
            inlined: false,
        };
        assert_eq!(got, [format!("{:?}", [leaf])]);
        let bad = "a 1 [000] 1.0: 1 cpu-clock:\n\tff x ([kernel.kallsyms])\n\tzz y (/lib/l.so)\n\n";
        let e = for_each_sample(bad.as_bytes(), "s", Chain::Leaf, |_| {}).unwrap_err();
        assert_eq!((e.line, e.column), (3, 2));
        assert!(e.expected.contains("call-chain frame"), "{e}");
    }

    #[test]
    fn read_in_place_leaf_only_frames_past_the_leaf_are_checked_in_order() {
        // Read in place, frames past the leaf are checked as they are met; errors and
        // samples must still be those of the line-by-line reading, in the same order.
        let cases = [
            // A damaged header and a damaged frame after it: the header's error.
            "a 1 [000] 1.0: 1 cpu-clock:  zz\n\tff x\n\tfe y\n\tzz z\n\n",
            // A damaged frame past the leaf.
            "a 1 [000] 1.0: 1 cpu-clock:\n\tff x\n\tfe y\n\tzz z\n\n",
            // The header's own frame, then frames; lines with \r; a blank line of blanks.
            "a 1 [000] 1.0: 1 cpu-clock:  ff f\r\n\tfe y\r\n\tfd z\n\t \t\nb 2 [001] 1.1: 1 c:\n\tff x\n\t\u{a0}fe y\n\n",
            // An address past 64 bits and one glued to its symbol, past the leaf.
            "a 1 [000] 1.0: 1 c:\n\tff x\n\tfe y\n\t1ffffffffffffffff z\n\n",
            "a 1 [000] 1.0: 1 c:\n\tff x\n\tfe y\n\tfdz\n\n",
        ];
        let read = |text: &str, in_place: bool| {
            let mut got = Vec::new();
            let on = |s: &Sample<'_>| got.push(format!("{s:?}"));
            let r = if in_place {
                for_each_sample_in_piece(text.as_bytes(), "s", Chain::Leaf, Position::default(), on)
            } else {
                for_each_sample(text.as_bytes(), "s", Chain::Leaf, on)
            };
            (r, got)
        };
        for text in cases {
            assert_eq!(read(text, true), read(text, false), "{text:?}");
        }
        let (r, _) = read(cases[0], true);
        assert_eq!(r.unwrap_err().line, 1);
        let (r, _) = read(cases[1], true);
        assert_eq!(r.unwrap_err().line, 4);
        let (r, got) = read(cases[2], true);
        assert_eq!((r.unwrap().samples, got.len()), (2, 2));
    }

    #[test]
    fn side_band_records_are_skipped() {
        let text = "swapper     0     0.000000: PERF_RECORD_MMAP -1/0: [0xffffffff81000000(0x1277288) @ 0xffffffff81000000]: x [kernel.kallsyms]_text\n\
                    dd 25959 11214.081030: PERF_RECORD_COMM exec: dd:25959/25959\n\
                    dd 25959 11214.081031: 250000 cpu-clock: \n\
                    \tffffffff81000000 do_syscall_64+0x1 ([kernel.kallsyms])\n\
                    \n\
                    dd 25959 11214.081066: PERF_RECORD_MMAP2 25959/25959: [0x55d9a6d78000(0xe000) @ 0x2000 fe:00 247085 0]: r-xp /usr/bin/dd\n";
        let mut leaves = Vec::new();
        let stats = for_each_sample(text.as_bytes(), "s", Chain::Leaf, |s| {
            leaves.push(s.leaf().and_then(|f| f.symbol).map(str::to_string))
        })
        .unwrap();
        assert_eq!(leaves, [Some("do_syscall_64".to_string())]);
        assert_eq!((stats.samples, stats.side_band), (1, 3));
    }

    #[test]
    fn consecutive_headers_without_blank_lines() {
        let text = "  a 1 [000] 1.0: 1 cpu-clock:  ff x ([kernel.kallsyms])\n  b 2 [001] 1.1: 1 cpu-clock:  fe y (/lib/l.so)\n";
        assert_eq!(all(text).unwrap().len(), 2);
    }

    #[test]
    fn cpu_numbers_above_linux_limit_are_refused() {
        // One 115-byte line made an importer size its per-CPU tables for 100,000,001 CPUs.
        let line = "dd 25959 [100000000] 11214.081031: 250000 cpu-clock:  ffffffff81000000 do_syscall_64+0x1 ([kernel.kallsyms])";
        let e = parse_header(line, "s.txt", 3).unwrap_err();
        assert_eq!((e.line, e.column), (3, 11));
        assert!(e.expected.contains("below 8192"), "{e}");
        let e = all(&format!("{line}\n")).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("s.txt:1:11: expected a CPU number below 8192"),
            "{e}"
        );
        let s = parse_header("dd 1 [8191] 1.0: 1 cpu-clock:", "f", 1).unwrap();
        assert_eq!(s.cpu, Some(8191));
        assert!(parse_header("dd 1 [99999999999] 1.0: 1 cpu-clock:", "f", 1).is_err());
    }

    #[test]
    fn periods_are_read_up_to_u64_max() {
        // Summing them is the caller's job.
        let s = parse_header("dd 1 [000] 1.0: 18446744073709551615 cpu-clock:", "f", 1).unwrap();
        assert_eq!(s.period, Some(u64::MAX));
    }

    #[test]
    fn long_names_are_cut_and_counted() {
        let long = "s".repeat(3 * crate::MAX_NAME_BYTES);
        let text = format!("{long} 1 [000] 1.0: 1 {long}:\n\tff {long}+0x1 ({long})\n\tfe {long}\n\n");
        let mut got = Vec::new();
        let stats = for_each_sample(text.as_bytes(), "s", Chain::Full, |s| {
            got.push((s.comm.len(), s.event.map(str::len), s.frames.len()));
            for f in &s.frames {
                assert_eq!(f.symbol.map(str::len), Some(crate::MAX_NAME_BYTES));
            }
            assert_eq!(s.frames[0].dso.map(str::len), Some(crate::MAX_NAME_BYTES));
        })
        .unwrap();
        assert_eq!(got, [(crate::MAX_NAME_BYTES, Some(crate::MAX_NAME_BYTES), 2)]);
        assert_eq!(stats.truncated_names, 5);
    }

    #[test]
    fn a_line_longer_than_the_bound_is_an_error() {
        let text = format!("a 1 [000] 1.0: 1 cpu-clock:\n\tff {}\n", "x".repeat(MAX_LINE_BYTES));
        let e = all(&text).unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.expected.contains("a line of at most 1048576 bytes"), "{e}");
        // Read in place, as the import reads a piece in memory: the same error.
        let e2 =
            for_each_sample_in_piece(text.as_bytes(), "s.txt", Chain::Leaf, Position::default(), |_| {}).unwrap_err();
        assert_eq!(e2, e);
    }

    #[test]
    fn an_unindented_line_is_never_a_frame() {
        // "dd" reads as an address: this broken header was once taken for a frame of the
        // sample before it, and disappeared.
        let text =
            "dd 1 [000] 1.0: 1 cpu-clock:  ff f ([kernel.kallsyms])\ndd -2 [000] 1.1: 99999999999 cpu-clock:  ff f\n";
        let e = all(text).unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.expected.contains("sample header"), "{e}");
        // Indented with spaces, a line that reads only as a frame still is one.
        let n = all("a 1 [000] 1.0: 1 cpu-clock:\n    ffff x ([kernel.kallsyms])\n").unwrap();
        assert_eq!(n.len(), 1);
    }

    #[test]
    fn addresses_past_64_bits_are_refused_with_or_without_the_chain() {
        let text = "a 1 [000] 1.0: 1 cpu-clock:\n\tff x\n\t1ffffffffffffffff y\n\n";
        for chain in [Chain::Full, Chain::Leaf] {
            let e = for_each_sample(text.as_bytes(), "s", chain, |_| {}).unwrap_err();
            assert_eq!((e.line, e.column), (3, 2), "{chain:?}");
        }
        // Leading zeros do not count.
        let f = parse_frame("\t0000ffffffffffffffff x", "s", 1).unwrap();
        assert_eq!(f.ip, u64::MAX);
    }

    #[test]
    fn pieces_are_cut_only_before_a_sample() {
        let head = "a 1 [000] 1.0: 1 cpu-clock:  ff x ([kernel.kallsyms])\n";
        // Not before a space-indented frame, nor a comment, nor a line not yet whole.
        assert_eq!(piece_end(format!("{head}   ffff y ([k])\n").as_bytes()), None);
        assert_eq!(piece_end(format!("{head}# c\n").as_bytes()), None);
        assert_eq!(piece_end(format!("{head}b 2 [0").as_bytes()), None);
        let two = format!("{head}  b 2 [001] 1.1: 1 cpu-clock:  fe y (/lib/l.so)\n");
        assert_eq!(piece_end(format!("{two}c").as_bytes()), Some(head.len()));
        assert_eq!(piece_end(b"a 1 [0] 1.0: c:\n\tff x\n\nb"), Some(23));
    }

    #[test]
    fn malformed_and_truncated() {
        let e = all("garbage line here\n").unwrap_err();
        assert_eq!(e.line, 1);
        assert!(e.to_string().starts_with("s.txt:1:"), "{e}");
        assert!(e.expected.contains("sample header"), "{e}");
        let e = all("a 1 [000] 1.0: 1 cpu-clock:\n\tffff x ([kernel.kallsyms])\n\tffff y ([ker").unwrap_err();
        assert_eq!(e.line, 3);
        assert!(e.expected.contains("truncated"), "{e}");
        let e = all("a 1 [000] 1.0: 1 cpu-clock: zz\n").unwrap_err();
        assert_eq!((e.line, e.column), (1, 29));
        let e = for_each_sample(
            &b"a 1 [000] 1.0: 1 c:\nb\xff 2 [0] 1.0: 1 c:\n"[..],
            "s",
            Chain::Full,
            |_| {},
        )
        .unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.expected.contains("byte offset 21"), "{e}");
    }
}
