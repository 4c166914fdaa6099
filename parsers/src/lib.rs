//! nom parsers for upcmp's text formats.
//!
//! Every parser here works line by line on borrowed input and reports errors as a
//! [`ParseError`] that names the file, the line, the column and what was expected, so a
//! user can open the file at the right place. No parser here reads files or knows about
//! clap or polars: callers hand in text and a name for it.
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
    /// An error at `line` (1-based) of `file`; `rest` is the unparsed tail of `full_line`,
    /// from which the column is computed.
    pub fn at(file: &str, line: usize, full_line: &str, rest: &str, expected: impl Into<String>) -> Self {
        let consumed = full_line.len().saturating_sub(rest.len());
        let column = full_line[..consumed.min(full_line.len())].chars().count() + 1;
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
pub mod kallsyms;
pub mod keyvalue;
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

/// Reads text line by line from a `BufRead`, in bounded memory, keeping the line number
/// and byte offset that errors report.
pub(crate) struct LineReader<R> {
    input: R,
    raw: Vec<u8>,
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
    pub(crate) fn new(input: R) -> Self {
        Self::starting_at(input, Position::default())
    }

    /// A reader of a piece of an input that starts at `at`.
    pub(crate) fn starting_at(input: R, at: Position) -> Self {
        LineReader {
            input,
            raw: Vec::new(),
            line_no: at.lines,
            offset: at.bytes,
        }
    }

    /// The next line's number (1-based) and text with its ending (`\n`, when present),
    /// or None at the end. I/O errors and invalid UTF-8 (with its byte offset) are errors
    /// naming `name`.
    pub(crate) fn next_line(&mut self, name: &str) -> Result<Option<(usize, &str)>, ParseError> {
        self.raw.clear();
        let n = self.input.read_until(b'\n', &mut self.raw).map_err(|e| ParseError {
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
