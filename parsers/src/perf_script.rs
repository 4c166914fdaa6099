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
//! Policy: a line of neither kind is an error naming its line and column, as is invalid
//! UTF-8 (with its byte offset) and input that stops in the middle of a line (perf script
//! ends every line with a newline, so a missing final newline means truncation). Memory
//! is bounded by the longest sample: one sample's lines are held at a time.

use crate::ParseError;
use std::io::BufRead;

/// One call-chain frame (or the sampled instruction when there is no call chain).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frame<'a> {
    /// Instruction address.
    pub ip: u64,
    /// Symbol without its `+0x…` offset; `[unknown]` as perf prints it; None when the
    /// line has no symbol field.
    pub symbol: Option<&'a str>,
    /// The DSO in the parentheses (`[kernel.kallsyms]`, `/usr/lib/…/libc.so.6`), when
    /// printed.
    pub dso: Option<&'a str>,
}

/// One sample: its header fields and frames, borrowing the input's lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sample<'a> {
    /// Command name (may contain spaces).
    pub comm: &'a str,
    /// Process id, when printed (`PID/TID`).
    pub pid: Option<u32>,
    /// Thread id.
    pub tid: u32,
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
}

impl Sample<'_> {
    /// The sampled function's frame: the innermost one.
    pub fn leaf(&self) -> Option<&Frame<'_>> {
        self.frames.first()
    }
}

/// What a whole stream held besides samples.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScriptStats {
    /// Samples read.
    pub samples: u64,
    /// Lines read.
    pub lines: usize,
}

fn is_digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

// `1234` or `1234/1235` (PID/TID)
fn thread_ids(tok: &str) -> Option<(Option<u32>, u32)> {
    match tok.split_once('/') {
        Some((p, t)) if is_digits(p) && is_digits(t) => Some((p.parse().ok(), t.parse().ok()?)),
        None if is_digits(tok) => Some((None, tok.parse().ok()?)),
        _ => None,
    }
}

// `[001]`
fn cpu_field(tok: &str) -> Option<u32> {
    tok.strip_prefix('[')?
        .strip_suffix(']')
        .filter(|s| is_digits(s))?
        .parse()
        .ok()
}

// `2183.577483:` (µs) or `2183.577483123:` (ns, with --ns)
fn time_field(tok: &str) -> Option<u64> {
    let (sec, frac) = tok.strip_suffix(':')?.split_once('.')?;
    if !is_digits(sec) || !is_digits(frac) || frac.len() > 9 {
        return None;
    }
    let scale = 10u64.pow(9 - frac.len() as u32);
    Some(sec.parse::<u64>().ok()?.checked_mul(1_000_000_000)? + frac.parse::<u64>().ok()? * scale)
}

/// Whitespace-separated tokens of `s` with their byte offsets.
fn tokens(s: &str) -> impl Iterator<Item = (usize, &str)> {
    s.split([' ', '\t'])
        .scan(0usize, |pos, t| {
            let start = *pos;
            *pos += t.len() + 1;
            Some((start, t))
        })
        .filter(|(_, t)| !t.is_empty())
}

/// Parses a header line; `file`/`line_no` name it in errors.
///
/// `       opt cgu.0 25608 [001]  2183.577483:     250000 cpu-clock:  ffffffff813695e2 handle_softirqs+0x72 ([kernel.kallsyms])`
pub fn parse_header<'a>(line: &'a str, file: &str, line_no: usize) -> Result<Sample<'a>, ParseError> {
    let err = |at: usize, expected: &str| ParseError::at(file, line_no, line, &line[at..], expected);
    let toks: Vec<(usize, &str)> = tokens(line).collect();
    // The thread id is the first numeric token after the command name that is followed
    // by a field that can only come after it (a `[cpu]`, a `time:`, an `event:`) or by
    // nothing; a command name may itself hold spaces and numbers ("Thread 2").
    let tid_at = (1..toks.len()).find(|&i| {
        thread_ids(toks[i].1).is_some()
            && toks
                .get(i + 1)
                .is_none_or(|(_, n)| cpu_field(n).is_some() || n.ends_with(':') || is_digits(n))
    });
    let Some(ti) = tid_at else {
        let at = toks.first().map(|t| t.0 + t.1.len()).unwrap_or(0);
        return Err(err(at, "a sample header: COMM [PID/]TID [CPU] TIME: [PERIOD] EVENT:"));
    };
    let comm = line[toks[0].0..toks[ti - 1].0 + toks[ti - 1].1.len()].trim();
    let (pid, tid) = thread_ids(toks[ti].1).expect("checked above");
    let mut s = Sample {
        comm,
        pid,
        tid,
        cpu: None,
        time_ns: None,
        period: None,
        event: None,
        frames: Vec::new(),
    };
    let mut i = ti + 1;
    if let Some(c) = toks.get(i).and_then(|t| cpu_field(t.1)) {
        s.cpu = Some(c);
        i += 1;
    }
    if let Some(t) = toks.get(i).and_then(|t| time_field(t.1)) {
        s.time_ns = Some(t);
        i += 1;
    }
    if let Some((_, p)) = toks.get(i).filter(|t| is_digits(t.1)) {
        s.period = p.parse().ok();
        i += 1;
    }
    if let Some((_, e)) = toks.get(i).filter(|t| t.1.ends_with(':')) {
        // `cpu-clock:ppp:` → `cpu-clock`; a tracepoint `sched:sched_switch:` keeps its
        // subsystem.
        let e = e.trim_end_matches(':');
        let e = match e.rsplit_once(':') {
            Some((name, mods)) if mods.bytes().all(|b| b"ukhGHpPSDIeW".contains(&b)) => name,
            _ => e,
        };
        s.event = Some(e);
        i += 1;
    }
    if let Some(&(at, _)) = toks.get(i) {
        match parse_frame_text(&line[at..]) {
            Some(f) => s.frames.push(f),
            None => return Err(err(at, "an instruction address (hex) after the event")),
        }
    }
    Ok(s)
}

/// Parses a call-chain line (indented).
///
/// `    ffffffff815fa4ad unmap_page_range+0x51d ([kernel.kallsyms])`
pub fn parse_frame<'a>(line: &'a str, file: &str, line_no: usize) -> Result<Frame<'a>, ParseError> {
    let body = line.trim_start();
    parse_frame_text(body).ok_or_else(|| {
        ParseError::at(
            file,
            line_no,
            line,
            body,
            "a call-chain frame: ADDRESS [SYMBOL[+0xOFFSET]] [(DSO)]",
        )
    })
}

fn parse_frame_text(body: &str) -> Option<Frame<'_>> {
    let body = body.trim_end();
    let (ip, rest) = body.split_once([' ', '\t']).unwrap_or((body, ""));
    let ip = u64::from_str_radix(ip, 16).ok()?;
    let rest = rest.trim();
    let (sym, dso) = match rest.strip_suffix(')') {
        Some(r) => match r
            .rfind(" (")
            .map(|p| (p, p + 2))
            .or_else(|| r.starts_with('(').then_some((0, 1)))
        {
            Some((end, start)) => (r[..end].trim(), Some(&r[start..])),
            None => return None,
        },
        None => (rest, None),
    };
    let symbol = (!sym.is_empty()).then(|| strip_offset(sym));
    Some(Frame { ip, symbol, dso })
}

// `unmap_page_range+0x51d` → `unmap_page_range`
fn strip_offset(sym: &str) -> &str {
    match sym.rsplit_once("+0x") {
        Some((name, off)) if !name.is_empty() && off.bytes().all(|b| b.is_ascii_hexdigit()) => name,
        _ => sym,
    }
}

/// Reads `perf script` output from `input` and calls `on_sample` for every sample, in
/// order. `name` names the input in errors.
pub fn for_each_sample<R: BufRead>(
    input: R,
    name: &str,
    mut on_sample: impl FnMut(&Sample<'_>),
) -> Result<ScriptStats, ParseError> {
    let mut stats = ScriptStats::default();
    // One sample's text and where each of its lines starts (with its line number).
    let mut block = String::new();
    let mut starts: Vec<(usize, usize)> = Vec::new();
    let mut lines = crate::LineReader::new(input);
    let flush = |block: &str, starts: &[(usize, usize)], stats: &mut ScriptStats, f: &mut dyn FnMut(&Sample<'_>)| {
        if starts.is_empty() {
            return Ok(());
        }
        let line_at = |k: usize| {
            let end = starts.get(k + 1).map_or(block.len(), |n| n.0);
            &block[starts[k].0..end]
        };
        let mut s = parse_header(line_at(0), name, starts[0].1)?;
        for (k, &(_, line_no)) in starts.iter().enumerate().skip(1) {
            s.frames.push(parse_frame(line_at(k), name, line_no)?);
        }
        stats.samples += 1;
        f(&s);
        Ok::<(), ParseError>(())
    };
    while let Some((line_no, text)) = lines.next_line(name)? {
        stats.lines = line_no;
        let Some(text) = text.strip_suffix('\n') else {
            return Err(ParseError::at(
                name,
                line_no,
                text,
                "",
                format!("a newline: the input stops in the middle of line {line_no} (truncated?)"),
            ));
        };
        let text = text.strip_suffix('\r').unwrap_or(text);
        if text.trim().is_empty() {
            flush(&block, &starts, &mut stats, &mut on_sample)?;
            block.clear();
            starts.clear();
            continue;
        }
        if text.starts_with('#') && starts.is_empty() {
            continue; // `perf script --header` comments
        }
        // perf indents call-chain lines with a tab; a header of the default layout is
        // indented with spaces (the command name is right-aligned). A space-indented line
        // that is no header but reads as a frame is taken as one.
        let is_frame = !starts.is_empty()
            && (text.starts_with('\t')
                || (parse_header(text, name, line_no).is_err() && parse_frame_text(text.trim_start()).is_some()));
        if !is_frame && !starts.is_empty() {
            flush(&block, &starts, &mut stats, &mut on_sample)?;
            block.clear();
            starts.clear();
        }
        starts.push((block.len(), line_no));
        block.push_str(text);
    }
    flush(&block, &starts, &mut stats, &mut on_sample)?;
    Ok(stats)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(text: &str) -> Result<Vec<String>, ParseError> {
        let mut out = Vec::new();
        for_each_sample(text.as_bytes(), "s.txt", |s| out.push(format!("{s:?}")))?;
        Ok(out)
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
                dso: Some("[kernel.kallsyms]")
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
        let f = parse_frame("   ffff ([kernel.kallsyms])", "f", 2).unwrap();
        assert_eq!((f.symbol, f.dso), (None, Some("[kernel.kallsyms]")));
        let e = parse_frame("\tnot-an-address foo", "f", 9).unwrap_err();
        assert_eq!((e.line, e.column), (9, 2));
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
        let stats = for_each_sample(text.as_bytes(), "s", |s| {
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
    fn consecutive_headers_without_blank_lines() {
        let text = "  a 1 [000] 1.0: 1 cpu-clock:  ff x ([kernel.kallsyms])\n  b 2 [001] 1.1: 1 cpu-clock:  fe y (/lib/l.so)\n";
        assert_eq!(all(text).unwrap().len(), 2);
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
        let e = for_each_sample(&b"a 1 [000] 1.0: 1 c:\nb\xff 2 [0] 1.0: 1 c:\n"[..], "s", |_| {}).unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.expected.contains("byte offset 21"), "{e}");
    }
}
