//! Foreign text as it may be shown: process, thread, function and symbol names escaped
//! before they reach a terminal or a text report, and parse errors that quote nothing of a
//! file reached through a symbolic link (`docs/security.md`).
//!
//! Anyone on the machine names their processes (`prctl(PR_SET_NAME)`, the name of the
//! file they run) and the functions of the programs they build, and root's terminal and
//! reports show those names: an escape sequence in one would set the window's title or
//! move the cursor over lines already printed, a newline would start a line the name's
//! owner writes. [`escaped`] writes every control character as `ls -b` and `ps` do.

use std::borrow::Cow;
use std::fmt::{self, Write as _};
use std::io;

/// Whether `c` must not reach a terminal as it is: C0 and C1 controls, DEL, and the
/// characters that reorder or end lines of text (bidirectional overrides and isolates,
/// the Unicode line and paragraph separators).
pub fn is_unsafe(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{2028}' | '\u{2029}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
        )
}

/// Writes `c` escaped: `\n`, `\r`, `\t`, `\a` (BEL), `\b`, `\v`, `\f`, `\x1b` for the
/// other ASCII controls, `\u{9b}` for the others.
fn write_escape(out: &mut impl fmt::Write, c: char) -> fmt::Result {
    match c {
        '\n' => out.write_str("\\n"),
        '\r' => out.write_str("\\r"),
        '\t' => out.write_str("\\t"),
        '\u{07}' => out.write_str("\\a"),
        '\u{08}' => out.write_str("\\b"),
        '\u{0b}' => out.write_str("\\v"),
        '\u{0c}' => out.write_str("\\f"),
        c if c.is_ascii() => write!(out, "\\x{:02x}", c as u32),
        c => write!(out, "\\u{{{:x}}}", c as u32),
    }
}

/// `name` as it may be printed: every control character escaped (see [`write_escape`]),
/// the rest as it is. Borrowed when there is nothing to escape (nearly always).
pub fn escaped(name: &str) -> Cow<'_, str> {
    if !name.chars().any(is_unsafe) {
        return Cow::Borrowed(name);
    }
    let mut out = String::with_capacity(name.len() + 8);
    let _ = write!(out, "{}", Shown(name));
    Cow::Owned(out)
}

/// A name escaped as it is formatted, without a copy: `format!("{}", Shown(name))`.
#[derive(Debug, Clone, Copy)]
pub struct Shown<'a>(pub &'a str);

impl fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_escaped(f, self.0, is_unsafe)
    }
}

/// Writes `text` with each character `unsafe_` picks escaped (see [`write_escape`]).
fn write_escaped(out: &mut impl fmt::Write, text: &str, unsafe_: impl Fn(char) -> bool) -> fmt::Result {
    let mut rest = text;
    while let Some(k) = rest.find(&unsafe_) {
        out.write_str(&rest[..k])?;
        let c = rest[k..].chars().next().expect("found at k");
        write_escape(out, c)?;
        rest = &rest[k + c.len_utf8()..];
    }
    out.write_str(rest)
}

/// Whether `c` must not reach a terminal from a whole text: as [`is_unsafe`], except
/// the text's own line ends and tabs (a carriage return is escaped: no text of the suite
/// writes one, and alone it moves the cursor back over its line).
fn is_unsafe_in_text(c: char) -> bool {
    c != '\n' && c != '\t' && is_unsafe(c)
}

/// A whole text for people (a report, a note, a message) as it may be printed: every
/// control character escaped as [`escaped`] does, except line ends and tabs. A name in
/// it must still go through [`escaped`] or [`Shown`] where it is put in, or its newline
/// would start a line; this is what holds when one is forgotten.
pub fn escaped_text(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_unsafe_in_text) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    let _ = write_escaped(&mut out, text, is_unsafe_in_text);
    Cow::Owned(out)
}

/// A writer that passes a whole text for people through [`escaped_text`] on its way to
/// `W`: every report, page, graph and table of the suite is written through one, so that
/// no name that reached it unescaped (a note, a title, a caller) puts a control character
/// on a terminal or in a file. Bytes that are no UTF-8 are written `\xHH`; a character
/// split between two writes is held until its end comes. [`ShownText::finish`] writes
/// what is held and gives `W` back.
#[derive(Debug)]
pub struct ShownText<W: io::Write> {
    inner: W,
    held: Vec<u8>,
}

impl<W: io::Write> ShownText<W> {
    /// A writer escaping what it passes to `inner`.
    pub fn new(inner: W) -> Self {
        ShownText {
            inner,
            held: Vec::new(),
        }
    }

    /// Writes the bytes held (the start of a character that never ended, escaped) and
    /// gives the inner writer back.
    pub fn finish(mut self) -> io::Result<W> {
        let held = std::mem::take(&mut self.held);
        self.write_invalid(&held)?;
        Ok(self.inner)
    }

    fn write_invalid(&mut self, bytes: &[u8]) -> io::Result<()> {
        for b in bytes {
            write!(self.inner, "\\x{b:02x}")?;
        }
        Ok(())
    }

    fn write_str(&mut self, text: &str) -> io::Result<()> {
        self.inner.write_all(escaped_text(text).as_bytes())
    }
}

impl<W: io::Write> io::Write for ShownText<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.write_all(buf)?;
        Ok(buf.len())
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        let joined;
        let mut rest = if self.held.is_empty() {
            buf
        } else {
            self.held.extend_from_slice(buf);
            joined = std::mem::take(&mut self.held);
            &joined[..]
        };
        loop {
            match std::str::from_utf8(rest) {
                Ok(text) => return self.write_str(text),
                Err(e) => {
                    let (valid, after) = rest.split_at(e.valid_up_to());
                    self.write_str(std::str::from_utf8(valid).expect("valid up to here"))?;
                    match e.error_len() {
                        // The start of a character whose end is still to come.
                        None => {
                            self.held = after.to_vec();
                            return Ok(());
                        }
                        Some(n) => {
                            self.write_invalid(&after[..n])?;
                            rest = &after[n..];
                        }
                    }
                }
            }
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// What an error shows instead of the text of a file reached through a symbolic link.
pub const NOT_QUOTED: &str = "(not quoted: the file is reached through a symbolic link)";

/// Drops the quoted text of `e` when its file was reached through a symbolic link: a link
/// someone else placed must not make an error message show what the file it points to
/// holds (`docs/security.md`). The file, line and column stay.
pub fn unquoted(mut e: upcmp_parsers::ParseError, through_link: bool) -> upcmp_parsers::ParseError {
    if through_link && !e.found.is_empty() {
        e.found = NOT_QUOTED.to_string();
    }
    e
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_are_escaped_as_ls_does() {
        assert!(matches!(escaped("do_syscall_64"), Cow::Borrowed(_)));
        assert_eq!(escaped("über ünd (x, y)"), "über ünd (x, y)");
        assert_eq!(escaped("a\x1b]0;owned\x07b"), "a\\x1b]0;owned\\ab");
        assert_eq!(escaped("x\ny\rz\tw\u{7f}"), "x\\ny\\rz\\tw\\x7f");
        assert_eq!(escaped("\u{9b}2J\u{202e}cba"), "\\u{9b}2J\\u{202e}cba");
        assert_eq!(format!("{}|", Shown("l1\nl2")), "l1\\nl2|");
        // Backslashes are left alone: the escapes are for reading, not for parsing back.
        assert_eq!(escaped("a\\x1b"), "a\\x1b");
    }

    // Issue 46: a whole text keeps its lines and tabs, and nothing else raw, whatever
    // pieces it is written in.
    #[test]
    fn a_whole_text_keeps_its_lines_only_issue_46() {
        use std::io::Write as _;
        let text = "row\tf\x1b]0;t\x07\r\n\u{2028}\u{9b}2J\u{202e}x\n";
        let want = "row\tf\\x1b]0;t\\a\\r\n\\u{2028}\\u{9b}2J\\u{202e}x\n";
        assert_eq!(escaped_text(text), want);
        assert!(matches!(escaped_text("a\tb\n"), Cow::Borrowed(_)));
        let bytes = text.as_bytes();
        for cut in 0..bytes.len() {
            let mut w = ShownText::new(Vec::new());
            w.write_all(&bytes[..cut]).unwrap();
            w.write_all(&bytes[cut..]).unwrap();
            assert_eq!(String::from_utf8(w.finish().unwrap()).unwrap(), want, "cut at {cut}");
        }
        let mut w = ShownText::new(Vec::new());
        w.write_all(b"a\xffb\xe2\x80").unwrap();
        assert_eq!(w.finish().unwrap(), b"a\\xffb\\xe2\\x80");
    }
}
