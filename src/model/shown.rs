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

/// Whether `c` must not reach a terminal as it is: C0 and C1 controls, DEL, and the
/// characters that reorder or end lines of text (bidirectional overrides and isolates,
/// the Unicode line and paragraph separators).
fn is_unsafe(c: char) -> bool {
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
        let mut rest = self.0;
        while let Some(k) = rest.find(is_unsafe) {
            f.write_str(&rest[..k])?;
            let c = rest[k..].chars().next().expect("found at k");
            write_escape(f, c)?;
            rest = &rest[k + c.len_utf8()..];
        }
        f.write_str(rest)
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
}
