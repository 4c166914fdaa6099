//! Folded stacks, as written by `stackcollapse-perf.pl`, `inferno-collapse-perf` and
//! upsrun's `stacks.folded`: one stack per line, outermost frame first, frames joined by `;`, then a space
//! and a sample count.
//!
//! ```text
//! swapper;secondary_startup_64_[k];cpu_startup_entry_[k];do_idle_[k] 3071
//! dd;__GI___libc_write;entry_SYSCALL_64_after_hwframe_[k];do_syscall_64_[k] 308
//! ```
//!
//! Policy: blank lines are skipped; any other line must end in a count, or it is an error
//! naming its line and column (a differential `STACK COUNT1 COUNT2` line is one too:
//! it is not a profile). Lines are read one at a time, so memory is bounded by the
//! longest line, which is at most [`MAX_LINE_BYTES`]. Counts are whole numbers below
//! 2^64, and so is their sum: a total that would pass it is an error at the line that
//! makes it. [`FoldedStack::frames`] and [`FoldedStack::leaf`] cut names longer than
//! [`MAX_NAME_BYTES`]; [`for_each_stack`] counts them.

use crate::{bounded_name, ParseError, MAX_NAME_BYTES};
use std::io::BufRead;

/// The longest line read, in bytes. A line is a whole call chain, so this is far longer
/// than a perf script line: 16 MiB holds thousands of frames of the longest names.
pub const MAX_LINE_BYTES: usize = 16 << 20;

/// What a whole input held.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FoldedStats {
    /// Lines read (blank ones included).
    pub lines: usize,
    /// Stacks read.
    pub stacks: u64,
    /// The sum of all counts.
    pub samples: u64,
    /// Frames longer than [`MAX_NAME_BYTES`], cut by [`FoldedStack::frames`] and
    /// [`FoldedStack::leaf`].
    pub truncated_names: u64,
}

/// One stack and its count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FoldedStack<'a> {
    /// Frames joined by `;`, outermost first, as written (names not cut: use
    /// [`FoldedStack::frames`]).
    pub stack: &'a str,
    /// Samples with this stack.
    pub count: u64,
}

impl<'a> FoldedStack<'a> {
    /// The frames, outermost first, each cut to [`MAX_NAME_BYTES`].
    pub fn frames(&self) -> impl DoubleEndedIterator<Item = &'a str> {
        self.stack.split(';').map(|f| bounded_name(f).0)
    }

    /// The innermost frame, where the samples were taken, cut to [`MAX_NAME_BYTES`].
    pub fn leaf(&self) -> &'a str {
        bounded_name(self.stack.rsplit(';').next().unwrap_or(self.stack)).0
    }

    /// How many frames are longer than [`MAX_NAME_BYTES`].
    pub fn long_frames(&self) -> u64 {
        // Most stacks are shorter than one name can be.
        if self.stack.len() <= MAX_NAME_BYTES {
            return 0;
        }
        self.stack.split(';').filter(|f| f.len() > MAX_NAME_BYTES).count() as u64
    }
}

/// `name` as a frame of the folded files the suite writes (upsrun's `stacks.folded`,
/// uprun's `profile.folded`), so that [`unescape_frame`] reads it back exactly: a
/// backslash is written `\\`, a `;` (which would split the frame) `\x3b`, a control
/// character `\xHH` (a newline would split the line), and each space of a frame's end
/// made of spaces and digits `\x20` (a process named `w 1` would otherwise end its line
/// in two counts, and a trailing space would be trimmed). Other names are written as they
/// are: every kernel and C symbol reads the same in any folded-stack tool.
pub fn escape_frame(name: &str) -> std::borrow::Cow<'_, str> {
    let tail = name.len() - name.trim_end_matches(|c: char| c == ' ' || c.is_ascii_digit()).len();
    let plain = |c: char| !(c == '\\' || c == ';' || c.is_ascii_control());
    if name.chars().all(plain) && !name[name.len() - tail..].contains(' ') {
        return std::borrow::Cow::Borrowed(name);
    }
    let mut out = String::with_capacity(name.len() + 8);
    for (k, c) in name.char_indices() {
        match c {
            '\\' => out.push_str("\\\\"),
            ' ' if k >= name.len() - tail => out.push_str("\\x20"),
            c if !plain(c) => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push(c),
        }
    }
    std::borrow::Cow::Owned(out)
}

/// A frame of a folded file the suite wrote, as [`escape_frame`] escaped it, read back:
/// `\\` and `\xHH` (ASCII) are decoded; any other backslash is kept as it is (a frame
/// cut at [`MAX_NAME_BYTES`] may end inside an escape).
pub fn unescape_frame(frame: &str) -> std::borrow::Cow<'_, str> {
    if !frame.contains('\\') {
        return std::borrow::Cow::Borrowed(frame);
    }
    let mut out = String::with_capacity(frame.len());
    let mut rest = frame;
    while let Some(k) = rest.find('\\') {
        out.push_str(&rest[..k]);
        let after = &rest[k + 1..];
        let hex = after
            .strip_prefix('x')
            .and_then(|h| h.get(..2))
            .and_then(|h| u8::from_str_radix(h, 16).ok())
            .filter(u8::is_ascii);
        rest = match (after.strip_prefix('\\'), hex) {
            (Some(r), _) => {
                out.push('\\');
                r
            }
            (None, Some(b)) => {
                out.push(b as char);
                &after[3..]
            }
            (None, None) => {
                out.push('\\');
                after
            }
        };
    }
    out.push_str(rest);
    std::borrow::Cow::Owned(out)
}

/// Parses one line (without its line ending).
///
/// `dd;__GI___libc_write;entry_SYSCALL_64_after_hwframe_[k];do_syscall_64_[k] 308`
pub fn parse_line<'a>(line: &'a str, file: &str, line_no: usize) -> Result<FoldedStack<'a>, ParseError> {
    let err = |rest: &str, expected: &str| ParseError::at(file, line_no, line, rest, expected);
    let body = line.trim_end();
    let Some(sp) = body.rfind([' ', '\t']) else {
        return Err(err(
            "",
            "a space and a sample count after the stack (FRAME;FRAME;… COUNT)",
        ));
    };
    // One blank separates the count, as flamegraph.pl reads it (`\s+?`): the rest belongs
    // to the stack, whose last frame may be a space (FlameGraph's vertx stacks end `; `).
    let (stack, count) = (&body[..sp], &body[sp + 1..]);
    let Ok(count) = count.parse::<u64>() else {
        return Err(err(count, "a sample count (a whole number) at the end of the line"));
    };
    if stack.is_empty() {
        return Err(err(line, "a stack before the count"));
    }
    if let Some(p) = stack.rfind([' ', '\t']) {
        if stack[p + 1..].parse::<u64>().is_ok() {
            return Err(err(
                &stack[p + 1..],
                "one count per line (two counts are a differential file, not a profile)",
            ));
        }
    }
    Ok(FoldedStack { stack, count })
}

/// Reads folded stacks from `input`, calling `on_stack` for each. `name` names the input
/// in errors.
pub fn for_each_stack<R: BufRead>(
    input: R,
    name: &str,
    mut on_stack: impl FnMut(FoldedStack<'_>),
) -> Result<FoldedStats, ParseError> {
    let mut lines = crate::LineReader::new(input, MAX_LINE_BYTES);
    let mut stats = FoldedStats::default();
    while let Some((line_no, text)) = lines.next_line(name)? {
        stats.lines = line_no;
        let text = text.trim_end_matches(['\n', '\r']);
        if text.trim().is_empty() {
            continue;
        }
        let stack = parse_line(text, name, line_no)?;
        stats.samples = stats.samples.checked_add(stack.count).ok_or_else(|| {
            let count = text.trim_end();
            let count = &count[count.rfind([' ', '\t']).map_or(0, |sp| sp + 1)..];
            ParseError::at(
                name,
                line_no,
                text,
                count,
                format!(
                    "counts that add up to at most {} (those before this line add up to {})",
                    u64::MAX,
                    stats.samples
                ),
            )
        })?;
        stats.stacks += 1;
        stats.truncated_names += stack.long_frames();
        on_stack(stack);
    }
    Ok(stats)
}

#[cfg(test)]
mod tests {
    use super::*;

    // Issue 26: a process named `w 1` made upsrun's stacks.folded unreadable ("two
    // counts"); `;`, newlines and escapes split or forged frames and lines.
    #[test]
    fn frames_round_trip_through_their_escapes() {
        let names = [
            "do_syscall_64",
            "foo(int, char)",
            "opt cgu.0",
            "user:w 1",
            "w 1",
            "a 1 2",
            "trailing ",
            "  ",
            "12",
            "",
            "Lfoo;.bar()V",
            "evil\n1 [kernel] x 99",
            "\x1b]0;title\x07",
            "back\\slash\\x41",
            "\\",
            "é 1",
        ];
        for name in names {
            let e = escape_frame(name);
            assert!(!e.contains([';', '\n', '\r', '\x1b']), "{name:?} -> {e:?}");
            assert_eq!(unescape_frame(&e), name, "{e:?}");
            let line = format!("root;{e} 7");
            let s = parse_line(&line, "f", 1).unwrap_or_else(|err| panic!("{name:?}: {err}"));
            assert_eq!(s.count, 7);
            let frames: Vec<_> = s.frames().map(unescape_frame).collect();
            assert_eq!(frames, ["root", name], "{line:?}");
        }
        assert_eq!(escape_frame("w 1"), "w\\x201");
        assert!(matches!(escape_frame("foo(int, char)"), std::borrow::Cow::Borrowed(_)));
        // What no escape wrote reads as it is.
        assert_eq!(unescape_frame("a\\qb\\x4"), "a\\qb\\x4");
    }

    #[test]
    fn lines() {
        let s = parse_line("dd;__GI___libc_write;do_syscall_64_[k] 308", "f", 1).unwrap();
        assert_eq!(s.count, 308);
        assert_eq!(s.leaf(), "do_syscall_64_[k]");
        assert_eq!(s.frames().count(), 3);
        let s = parse_line("opt cgu.0;foo(int, char) 7", "f", 1).unwrap();
        assert_eq!((s.stack, s.leaf()), ("opt cgu.0;foo(int, char)", "foo(int, char)"));
        assert_eq!(parse_line("single 1", "f", 1).unwrap().leaf(), "single");
    }

    #[test]
    fn a_frame_named_by_a_space_stays_a_space_issue_30() {
        // FlameGraph's perf-vertx-stacks-01-collapsed-kernel.txt ends stacks this way.
        let s = parse_line("java;write0;  3", "f", 1).unwrap();
        assert_eq!((s.leaf(), s.count), (" ", 3));
        assert_eq!(s.frames().collect::<Vec<_>>(), ["java", "write0", " "]);
    }

    #[test]
    fn malformed() {
        let e = parse_line("a;b;c", "x.folded", 4).unwrap_err();
        assert_eq!((e.line, e.column), (4, 6));
        assert!(
            e.to_string()
                .starts_with("x.folded:4:6: expected a space and a sample count"),
            "{e}"
        );
        let e = parse_line("a;b 12x", "f", 1).unwrap_err();
        assert_eq!(e.column, 5);
        assert_eq!(e.found, "12x");
        let e = parse_line("a;b 1 2", "f", 1).unwrap_err();
        assert!(e.expected.contains("differential"), "{e}");
        assert!(parse_line(" 5", "f", 1).is_err());
        // A bad count before trailing blanks: the column is the count's, inside no
        // character (this once panicked).
        let e = parse_line("\té--0\t", "f", 1).unwrap_err();
        assert_eq!((e.column, e.found.as_str()), (2, "é--0"));
        let e = parse_line("a;b 12é  ", "f", 1).unwrap_err();
        assert_eq!(e.column, 5);
    }

    #[test]
    fn counts_that_sum_past_u64_are_an_error() {
        let text = format!("a;b {}\n\nc 1\n", u64::MAX);
        let e = for_each_stack(text.as_bytes(), "x.folded", |_| {}).unwrap_err();
        assert_eq!((e.line, e.column), (3, 3));
        assert!(
            e.to_string()
                .starts_with("x.folded:3:3: expected counts that add up to at most 18446744073709551615"),
            "{e}"
        );
        // One count above u64::MAX is no number at all.
        assert!(parse_line("a 18446744073709551616", "f", 1).is_err());
    }

    #[test]
    fn long_frames_are_cut_and_counted() {
        let long = "f".repeat(MAX_NAME_BYTES + 1);
        let text = format!("{long};b;{long} 2\nshort 1\n");
        let mut leaves = Vec::new();
        let stats = for_each_stack(text.as_bytes(), "f", |s| {
            assert!(s.frames().all(|f| f.len() <= MAX_NAME_BYTES));
            leaves.push(s.leaf().len());
        })
        .unwrap();
        assert_eq!(leaves, [MAX_NAME_BYTES, 5]);
        assert_eq!((stats.truncated_names, stats.samples), (2, 3));
    }

    #[test]
    fn stream() {
        let mut total = 0;
        let n = for_each_stack(&b"a;b 2\n\nc 3\r\nd 5"[..], "f", |s| total += s.count).unwrap();
        assert_eq!((n.lines, n.stacks, n.samples, total), (4, 3, 10, 10));
        let e = for_each_stack(&b"a 1\nb\xfe 2\n"[..], "f", |_| {}).unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.expected.contains("byte offset 5"), "{e}");
    }
}
