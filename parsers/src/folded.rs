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
//! longest line.

use crate::ParseError;
use std::io::BufRead;

/// One stack and its count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FoldedStack<'a> {
    /// Frames joined by `;`, outermost first.
    pub stack: &'a str,
    /// Samples with this stack.
    pub count: u64,
}

impl<'a> FoldedStack<'a> {
    /// The frames, outermost first.
    pub fn frames(&self) -> impl DoubleEndedIterator<Item = &'a str> {
        self.stack.split(';')
    }

    /// The innermost frame: where the samples were taken.
    pub fn leaf(&self) -> &'a str {
        self.stack.rsplit(';').next().unwrap_or(self.stack)
    }
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
    let (stack, count) = (body[..sp].trim_end(), &body[sp + 1..]);
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

/// Reads folded stacks from `input`, calling `on_stack` for each; returns the number of
/// lines read. `name` names the input in errors.
pub fn for_each_stack<R: BufRead>(
    input: R,
    name: &str,
    mut on_stack: impl FnMut(FoldedStack<'_>),
) -> Result<usize, ParseError> {
    let mut lines = crate::LineReader::new(input);
    let mut read = 0;
    loop {
        let Some((line_no, text)) = lines.next_line(name)? else {
            return Ok(read);
        };
        read = line_no;
        let text = text.trim_end_matches(['\n', '\r']);
        if text.trim().is_empty() {
            continue;
        }
        on_stack(parse_line(text, name, line_no)?);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    }

    #[test]
    fn stream() {
        let mut total = 0;
        let n = for_each_stack(&b"a;b 2\n\nc 3\r\nd 5"[..], "f", |s| total += s.count).unwrap();
        assert_eq!((n, total), (4, 10));
        let e = for_each_stack(&b"a 1\nb\xfe 2\n"[..], "f", |_| {}).unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.expected.contains("byte offset 5"), "{e}");
    }
}
