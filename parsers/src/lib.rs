//! nom parsers for upcmp's text formats.
//!
//! One exception: the `perf script` reader, whose header and frame lines are most of an
//! import's time on a large text, reads its fields by hand; its nom grammar stays as the
//! reference it is checked against (on the fixtures, the fuzz corpus and every mutation).
//!
//! Every parser here works line by line on borrowed input and reports errors as a
//! [`ParseError`] that names the file, the line, the column and what was expected, so a
//! user can open the file at the right place. No parser here reads files or knows about
//! clap or polars: callers hand in text and a name for it.
//!
//! # Bounds
//!
//! Whatever the input, a parser returns (`Ok` or `Err`), in time and memory proportional to
//! the input (`docs/fuzzing.md` says how this is checked):
//!
//! - The streaming readers (`perf script`, folded stacks, `samples`) read at most a fixed
//!   number of bytes per line ([`perf_script::MAX_LINE_BYTES`],
//!   [`folded::MAX_LINE_BYTES`], [`samples::MAX_LINE_BYTES`]); a longer line is an error
//!   naming the file and line, so a line without an end (a decompression bomb) cannot fill
//!   memory. The other formats are handed whole texts, which bound their lines.
//! - A version 3 samples stream's chain table holds at most [`samples::MAX_CHAINS`] chains
//!   and [`samples::MAX_TABLE_FRAMES`] frames, and the frames its samples name, in all,
//!   are at most what the caller allows ([`samples::max_frames`]: one a byte of text), so
//!   a short stream naming a long chain many times cannot expand without bound.
//! - Names (functions, symbols, DSOs, commands, events, JIT code) longer than
//!   [`MAX_NAME_BYTES`] are cut to that length at a character boundary, and each parser
//!   counts the names it cut so that the caller can warn: a 100 MB name in a file costs
//!   4 KiB in every table and report made from it. Two formats refuse long names instead:
//!   a `test_list` name is a directory name, and a `upout` result line is checked strictly.
//! - CPU numbers are below [`MAX_CPUS`]; counts that are summed are summed with checked
//!   arithmetic, and an overflow is an error naming the line.
#![deny(missing_docs)]

use std::fmt;

/// A parse failure at a known place in a named input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// The input's name as the user knows it (usually a path).
    pub file: String,
    /// 1-based line number; 0 when the problem is the input as a whole (e.g. empty).
    pub line: usize,
    /// 1-based column (in characters) where the problem starts; 0 when not known.
    pub column: usize,
    /// What the parser expected to find there.
    pub expected: String,
    /// What it found instead (shortened).
    pub found: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.line, self.column) {
            (0, _) => write!(f, "{}: expected {}", self.file, self.expected)?,
            (l, 0) => write!(f, "{}:{}: expected {}", self.file, l, self.expected)?,
            (l, c) => write!(f, "{}:{}:{}: expected {}", self.file, l, c, self.expected)?,
        }
        if !self.found.is_empty() {
            write!(f, ", found {:?}", self.found)?;
        }
        Ok(())
    }
}

impl std::error::Error for ParseError {}

impl ParseError {
    /// An error at `line` (1-based) of `file`; `rest` is the unparsed part of `full_line`
    /// (a slice of it, or else as long as its tail), from which the column is computed.
    pub fn at(file: &str, line: usize, full_line: &str, rest: &str, expected: impl Into<String>) -> Self {
        let start = full_line.as_ptr() as usize;
        let at = rest.as_ptr() as usize;
        // A slice of the line (that need not reach its end, as when trailing blanks were
        // trimmed) is where it starts; any other text counts from the end.
        let mut consumed = if (start..=start + full_line.len()).contains(&at) {
            at - start
        } else {
            full_line.len().saturating_sub(rest.len())
        };
        while !full_line.is_char_boundary(consumed) {
            consumed -= 1;
        }
        let column = full_line[..consumed].chars().count() + 1;
        ParseError {
            file: file.to_string(),
            line,
            column,
            expected: expected.into(),
            found: shorten(rest),
        }
    }

    /// An error about the input as a whole (empty, truncated, missing a section).
    pub fn whole(file: &str, expected: impl Into<String>) -> Self {
        ParseError {
            file: file.to_string(),
            line: 0,
            column: 0,
            expected: expected.into(),
            found: String::new(),
        }
    }
}

/// The longest name, in bytes, that a parser hands on; longer names are cut (see the
/// crate's "Bounds"). 4 KiB holds any kernel symbol (the kernel's own limit, KSYM_NAME_LEN,
/// is 512), any path (PATH_MAX is 4096) and all but the most extreme C++ template names,
/// whose first 4 KiB still tell them apart.
pub const MAX_NAME_BYTES: usize = 4096;

/// CPU numbers are below this. Linux numbers CPUs from 0 to `nr_cpu_ids - 1`, and
/// `nr_cpu_ids` is at most `CONFIG_NR_CPUS`, whose largest value on any architecture is
/// 8192 (x86-64 and powerpc). A larger number cannot come from a Linux machine; refusing it
/// keeps the callers' per-CPU tables small whatever the input says.
pub const MAX_CPUS: u32 = 8192;

/// `name` cut to at most [`MAX_NAME_BYTES`] bytes at a character boundary, and whether it
/// was cut.
pub fn bounded_name(name: &str) -> (&str, bool) {
    if name.len() <= MAX_NAME_BYTES {
        return (name, false);
    }
    let mut end = MAX_NAME_BYTES;
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    (&name[..end], true)
}

/// What an error about a CPU number out of range expected (a test checks that it names
/// [`MAX_CPUS`]).
pub(crate) const EXPECT_CPU: &str = "a CPU number below 8192 (the most CPUs Linux supports)";

/// At most 40 characters of `s`, for error messages.
pub fn shorten(s: &str) -> String {
    let mut out: String = s.chars().take(40).collect();
    if s.chars().count() > 40 {
        out.push('…');
    }
    out
}

pub mod counters;
pub mod folded;
pub mod harness;
pub mod kallsyms;
pub mod keyvalue;
pub mod mutate;
pub mod perf_map;
pub mod perf_script;
pub mod prfout;
pub mod procfs;
pub mod procstat;
pub mod samples;
pub mod test_list;
pub mod upout;

/// The nom error type every parser here uses internally.
pub(crate) type NomError<'a> = nom::error::Error<&'a str>;

/// Where a line of a named input is, for turning a nom failure into a [`ParseError`].
#[derive(Clone, Copy)]
pub(crate) struct LineRef<'a> {
    pub file: &'a str,
    pub number: usize,
    pub text: &'a str,
}

impl<'a> LineRef<'a> {
    /// Runs `parser` over `input` (a tail of this line) and requires it to consume the
    /// whole line except trailing blanks; failures name `expected`.
    pub(crate) fn parse_all<O>(
        &self,
        input: &'a str,
        mut parser: impl nom::Parser<&'a str, Output = O, Error = NomError<'a>>,
        expected: &str,
    ) -> Result<O, ParseError> {
        match parser.parse(input) {
            Ok((rest, out)) => {
                if rest.trim().is_empty() {
                    Ok(out)
                } else {
                    Err(self.error(rest, "end of line"))
                }
            }
            Err(nom::Err::Error(e)) | Err(nom::Err::Failure(e)) => Err(self.error(e.input, expected)),
            Err(nom::Err::Incomplete(_)) => Err(self.error("", expected)),
        }
    }

    /// Runs `parser` over the start of `input` (a tail of this line) and returns what is
    /// left; failures name `expected`.
    pub(crate) fn parse_prefix<O>(
        &self,
        input: &'a str,
        mut parser: impl nom::Parser<&'a str, Output = O, Error = NomError<'a>>,
        expected: &str,
    ) -> Result<(&'a str, O), ParseError> {
        match parser.parse(input) {
            Ok(done) => Ok(done),
            Err(nom::Err::Error(e)) | Err(nom::Err::Failure(e)) => Err(self.error(e.input, expected)),
            Err(nom::Err::Incomplete(_)) => Err(self.error("", expected)),
        }
    }

    /// An error at the position where `rest` starts.
    pub(crate) fn error(&self, rest: &str, expected: impl Into<String>) -> ParseError {
        ParseError::at(self.file, self.number, self.text, rest, expected)
    }
}

/// Numbered lines of `text` (1-based), without their line endings.
pub(crate) fn numbered_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines().enumerate().map(|(i, l)| (i + 1, l))
}

/// The error for line `line_no` of `name`, longer than `max` bytes.
pub(crate) fn line_too_long(name: &str, line_no: usize, max: usize) -> ParseError {
    ParseError {
        file: name.to_string(),
        line: line_no,
        column: 0,
        expected: format!("a line of at most {max} bytes (line {line_no} is longer; is this the right kind of file?)"),
        found: String::new(),
    }
}

/// Reads text line by line from a `BufRead`, at most `max` bytes a line, keeping the line
/// number and byte offset that errors report.
///
/// Memory stays bounded by `max` whatever the input: a line longer than `max` bytes (its
/// ending included) is an error once `max + 1` of its bytes are read, so a stream without
/// a newline (a decompression bomb, a binary file) cannot fill memory.
pub struct LineReader<R> {
    input: R,
    raw: Vec<u8>,
    max: usize,
    line_no: usize,
    offset: u64,
}

/// Where a piece of a larger input starts: the number of lines and bytes before it, so
/// that errors in the piece name the line and byte of the whole input.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Position {
    /// Lines before the piece.
    pub lines: usize,
    /// Bytes before the piece.
    pub bytes: u64,
}

impl<R: std::io::BufRead> LineReader<R> {
    /// A reader of lines of at most `max` bytes.
    pub fn new(input: R, max: usize) -> Self {
        Self::starting_at(input, max, Position::default())
    }

    /// A reader of a piece of an input that starts at `at`.
    pub fn starting_at(input: R, max: usize, at: Position) -> Self {
        LineReader {
            input,
            raw: Vec::new(),
            max,
            line_no: at.lines,
            offset: at.bytes,
        }
    }

    /// The next line's number (1-based) and text with its ending (`\n`, when present),
    /// or None at the end. I/O errors, invalid UTF-8 (with its byte offset) and lines
    /// longer than the reader's maximum are errors naming `name` and the line.
    pub fn next_line(&mut self, name: &str) -> Result<Option<(usize, &str)>, ParseError> {
        use std::io::{BufRead, Read};
        self.raw.clear();
        let limit = u64::try_from(self.max).unwrap_or(u64::MAX).saturating_add(1);
        let n = (&mut self.input)
            .take(limit)
            .read_until(b'\n', &mut self.raw)
            .map_err(|e| ParseError {
                file: name.to_string(),
                line: self.line_no + 1,
                column: 0,
                expected: format!("readable input ({e})"),
                found: String::new(),
            })?;
        if n == 0 {
            return Ok(None);
        }
        self.line_no += 1;
        if n > self.max {
            return Err(line_too_long(name, self.line_no, self.max));
        }
        let text = std::str::from_utf8(&self.raw).map_err(|e| ParseError {
            file: name.to_string(),
            line: self.line_no,
            column: 0,
            expected: format!(
                "UTF-8 text (invalid byte at byte offset {})",
                self.offset + e.valid_up_to() as u64
            ),
            found: String::new(),
        })?;
        self.offset += n as u64;
        Ok(Some((self.line_no, text)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn names_are_cut_at_a_character_boundary() {
        let short = "f".repeat(MAX_NAME_BYTES);
        assert_eq!(bounded_name(&short), (short.as_str(), false));
        // 'é' is two bytes: the cut may not split it.
        let long = format!("{}é", "f".repeat(MAX_NAME_BYTES - 1));
        let (cut, was_cut) = bounded_name(&long);
        assert!(was_cut);
        assert_eq!(cut.len(), MAX_NAME_BYTES - 1);
    }

    #[test]
    fn the_cpu_error_names_the_bound() {
        assert!(EXPECT_CPU.contains(&format!("below {MAX_CPUS} ")), "{EXPECT_CPU}");
    }

    #[test]
    fn a_line_without_end_is_an_error_after_the_bound() {
        // An endless stream without a newline, as a decompression bomb gives one.
        let endless = std::io::BufReader::new(std::io::repeat(b'a'));
        let mut lines = LineReader::new(endless, 1000);
        let e = lines.next_line("bomb.gz").unwrap_err();
        assert_eq!((e.file.as_str(), e.line), ("bomb.gz", 1));
        assert!(e.expected.contains("at most 1000 bytes"), "{e}");
        assert!(lines.raw.capacity() < 10_000, "{}", lines.raw.capacity());
    }

    #[test]
    fn lines_up_to_the_bound_are_read() {
        let text = format!("{}\n{}\nb\n", "a".repeat(9), "a".repeat(10));
        let mut lines = LineReader::new(text.as_bytes(), 10);
        assert_eq!(lines.next_line("f").unwrap(), Some((1, "aaaaaaaaa\n")));
        let e = lines.next_line("f").unwrap_err();
        assert_eq!(e.line, 2);
        // The tail of a line without its end, up to the bound.
        let mut lines = LineReader::new(std::io::BufReader::new(std::io::repeat(b'a').take(10)), 10);
        assert_eq!(lines.next_line("f").unwrap().map(|l| l.1.len()), Some(10));
        assert_eq!(lines.next_line("f").unwrap(), None);
    }
}
