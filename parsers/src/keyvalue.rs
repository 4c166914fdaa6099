//! `key: value` files: the run marker, `system`, and each test's `status`.
//!
//! Policy: every line that is not blank or a `#` comment is `key: value`, and each key
//! appears once: a second line with the same key is an error naming both lines (the
//! writers never repeat a key, so a repeated one means a damaged or hand-edited file, and
//! which of the two values is meant cannot be told).

use crate::{numbered_lines, LineRef, NomError, ParseError};
use nom::bytes::complete::{tag, take_while1};
use nom::character::complete::space0;
use nom::combinator::rest;
use nom::sequence::terminated;
use nom::Parser;

/// Ordered `key: value` pairs, with each pair's line number.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KeyValues {
    /// (key, value, line) in file order.
    pub entries: Vec<(String, String, usize)>,
    /// The file's name, for error messages.
    pub file: String,
}

impl KeyValues {
    /// The value of the first `key`, if present.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.entries
            .iter()
            .find(|(k, _, _)| k == key)
            .map(|(_, v, _)| v.as_str())
    }

    /// The value of `key`, or an error naming the file and the key.
    pub fn require(&self, key: &str) -> Result<&str, ParseError> {
        self.get(key)
            .ok_or_else(|| ParseError::whole(&self.file, format!("a '{key}:' line")))
    }

    /// The value of `key` parsed as `T`, or an error naming the file, line and key.
    pub fn require_parsed<T: std::str::FromStr>(&self, key: &str, what: &str) -> Result<T, ParseError> {
        let (_, v, line) = self
            .entries
            .iter()
            .find(|(k, _, _)| k == key)
            .ok_or_else(|| ParseError::whole(&self.file, format!("a '{key}:' line")))?;
        v.parse().map_err(|_| ParseError {
            file: self.file.clone(),
            line: *line,
            column: key.len() + 3,
            expected: what.to_string(),
            found: crate::shorten(v),
        })
    }
}

// "kernel-release: 6.1.0-18-amd64"
fn pair(i: &str) -> nom::IResult<&str, (&str, &str), NomError<'_>> {
    (
        terminated(
            take_while1(|c: char| c.is_ascii_alphanumeric() || "-_.".contains(c)),
            (tag(":"), space0),
        ),
        rest,
    )
        .parse(i)
}

/// Parses `key: value` lines; blank lines and `#` comments are skipped.
pub fn parse_key_values(text: &str, file: &str) -> Result<KeyValues, ParseError> {
    let mut entries = Vec::new();
    let mut seen = std::collections::HashMap::new();
    for (n, line) in numbered_lines(text) {
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        let l = LineRef {
            file,
            number: n,
            text: line,
        };
        let (k, v) = l.parse_all(line, pair, "'key: value'")?;
        if let Some(first) = seen.insert(k, n) {
            return Err(l.error(line, format!("each key once ('{k}' is on line {first} too)")));
        }
        entries.push((k.to_string(), v.trim_end().to_string(), n));
    }
    Ok(KeyValues {
        entries,
        file: file.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_in_order() {
        let kv = parse_key_values("# c\nformat: 1\n\ncommand: uprun a b: c\nempty:\n", "m").unwrap();
        assert_eq!(kv.get("format"), Some("1"));
        assert_eq!(kv.get("command"), Some("uprun a b: c"));
        assert_eq!(kv.get("empty"), Some(""));
        assert_eq!(kv.require_parsed::<u32>("format", "a number").unwrap(), 1);
        let e = kv.require_parsed::<u32>("command", "a number").unwrap_err();
        assert_eq!(e.line, 4);
        assert!(kv.require("missing").unwrap_err().to_string().contains("'missing:'"));
    }

    #[test]
    fn duplicate_key_names_both_lines() {
        let e = parse_key_values("format: 2\nstatus: running\n\nstatus: completed\n", "upcmp-run").unwrap_err();
        assert_eq!((e.line, e.column), (4, 1));
        assert!(e.expected.contains("'status' is on line 2 too"), "{e}");
        assert!(
            e.to_string().starts_with("upcmp-run:4:1: expected each key once"),
            "{e}"
        );
    }

    #[test]
    fn line_without_colon() {
        let e = parse_key_values("a: 1\nno colon here\n", "m").unwrap_err();
        assert_eq!((e.line, e.column), (2, 3));
    }
}
