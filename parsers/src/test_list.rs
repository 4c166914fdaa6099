//! `test_list`: which tests `uprun` runs (syntax in `docs/format.md`).
//!
//! ```text
//! # comment
//! forkwait                      unixperf test, default options
//! pipeping1 -loop 50000         unixperf test with its options
//! hackbench: hackbench 4 process 1000    external command (run by /bin/sh)
//! key=fw forkwait -loop 5000    the benchmark's key: upcmp takes two sides of one key for one benchmark
//! ```
//!
//! A test's name is the name of its directory in the run, so it is at most
//! [`MAX_TEST_NAME_BYTES`] long; a longer one is an error naming its line.

use crate::{numbered_lines, LineRef, NomError, ParseError};
use nom::bytes::complete::{tag, take_while1};
use nom::character::complete::space0;
use nom::combinator::rest;
use nom::sequence::terminated;
use nom::Parser;

/// The longest test name, in bytes: a directory name (at most 255 bytes, NAME_MAX) with
/// room for the `.N` that tells repeated names apart.
pub const MAX_TEST_NAME_BYTES: usize = 200;

/// What one line asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TestSpec {
    /// A test of the unixperf suite and its options (empty: the defaults apply).
    Unixperf {
        /// The test's name as unixperf knows it (`forkwait`).
        test: String,
        /// Options for unixperf, split on white space.
        args: Vec<String>,
    },
    /// Any command, run by `/bin/sh -c`.
    External {
        /// The name the user gave it (also its directory name).
        name: String,
        /// The command line.
        command: String,
    },
}

impl TestSpec {
    /// The name the line gives its test.
    pub fn name(&self) -> &str {
        match self {
            TestSpec::Unixperf { test, .. } => test,
            TestSpec::External { name, .. } => name,
        }
    }
}

/// One test line with its line number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestLine {
    /// 1-based line number in the file.
    pub line: usize,
    /// What it asks for.
    pub spec: TestSpec,
    /// The benchmark's key (`key=KEY` before the test): two runs' tests of one name and
    /// one key are the same benchmark, whatever their options or loop counts.
    pub key: Option<String>,
}

/// The word that gives a line its benchmark key.
pub const KEY_PREFIX: &str = "key=";

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.'
}

// "hackbench: hackbench 4 process 1000"
fn external(i: &str) -> nom::IResult<&str, (&str, &str), NomError<'_>> {
    (terminated(take_while1(is_name_char), (tag(":"), space0)), rest).parse(i)
}

/// Parses a test_list text; `file` names it in errors.
pub fn parse_test_list(text: &str, file: &str) -> Result<Vec<TestLine>, ParseError> {
    let mut out = Vec::new();
    for (n, raw) in numbered_lines(text) {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let l = LineRef {
            file,
            number: n,
            text: raw,
        };
        let mut start = &raw[raw.len() - raw.trim_start().len()..];
        let mut line = line;
        // "key=fw forkwait -loop 5000": the key comes first, so neither unixperf's options
        // nor a command's words can be taken for it.
        let mut key = None;
        if let Some(after) = line.strip_prefix(KEY_PREFIX) {
            let word = &after[..after.find(char::is_whitespace).unwrap_or(after.len())];
            if word.is_empty() || !word.chars().all(is_name_char) {
                return Err(l.error(
                    start,
                    "'key=KEY' with KEY of letters, digits, '_', '-', '.', then the test (e.g. 'key=fw forkwait')",
                ));
            }
            let rest = after[word.len()..].trim_start();
            if rest.is_empty() {
                return Err(l.error("", format!("a test after 'key={word}'")));
            }
            key = Some(word.to_string());
            line = rest;
            // `rest` ends where the trimmed line ends: it starts this far into the line.
            start = &raw[raw.trim_end().len() - rest.len()..];
        }
        let first = line.split_whitespace().next().unwrap_or_default();
        let spec = if first.contains(':') {
            let (name, command) = l.parse_all(
                start,
                external,
                "'NAME: command args' with NAME of letters, digits, '_', '-', '.'",
            )?;
            if command.trim().is_empty() {
                return Err(l.error("", format!("a command after '{name}:'")));
            }
            TestSpec::External {
                name: name.to_string(),
                command: command.trim().to_string(),
            }
        } else {
            // "my test: cmd": a NAME of words before a ':' (no option among them).
            if let Some((name, _)) = line.split_once(':') {
                let words: Vec<&str> = name.split_whitespace().collect();
                if words.len() > 1 && words.iter().all(|w| !w.starts_with('-') && w.chars().all(is_name_char)) {
                    return Err(l.error(
                        start,
                        format!(
                            "a NAME without spaces before ':' (it names the test's directory; spaces are not \
                             allowed), e.g. '{}: ...'",
                            words.join("_")
                        ),
                    ));
                }
            }
            if !first.chars().all(is_name_char) {
                return Err(l.error(start, "a test name (letters, digits, '_', '-', '.') or 'NAME: command'"));
            }
            let args = line.split_whitespace().skip(1).map(str::to_string).collect();
            TestSpec::Unixperf {
                test: first.to_string(),
                args,
            }
        };
        if spec.name().starts_with('.') {
            return Err(l.error(start, "a test name that does not start with '.'"));
        }
        if spec.name().len() > MAX_TEST_NAME_BYTES {
            return Err(l.error(
                start,
                format!("a test name of at most {MAX_TEST_NAME_BYTES} bytes (it names a directory)"),
            ));
        }
        out.push(TestLine { line: n, spec, key });
    }
    if out.is_empty() {
        return Err(ParseError::whole(
            file,
            "at least one test line (the list has only comments or blank lines)",
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_seeds_list() {
        let t = parse_test_list("# test_list\n#\nforkwait\n", "test_list").unwrap();
        assert_eq!(t.len(), 1);
        assert_eq!(t[0].line, 3);
        assert_eq!(
            t[0].spec,
            TestSpec::Unixperf {
                test: "forkwait".into(),
                args: vec![]
            }
        );
    }

    #[test]
    fn options_and_external_commands() {
        let text = "  pipeping1 -loop 5000  -repeat 3\nhb: hackbench 2 process 100 | tail -1\n";
        let t = parse_test_list(text, "t").unwrap();
        assert_eq!(
            t[0].spec,
            TestSpec::Unixperf {
                test: "pipeping1".into(),
                args: vec!["-loop".into(), "5000".into(), "-repeat".into(), "3".into()]
            }
        );
        assert_eq!(
            t[1].spec,
            TestSpec::External {
                name: "hb".into(),
                command: "hackbench 2 process 100 | tail -1".into()
            }
        );
        assert_eq!(t[1].spec.name(), "hb");
    }

    #[test]
    fn bad_names_are_located() {
        let e = parse_test_list("forkwait\n  a/b: ls\n", "tl").unwrap_err();
        assert_eq!((e.line, e.column), (2, 4));
        let e = parse_test_list("fork$wait\n", "tl").unwrap_err();
        assert_eq!((e.line, e.column), (1, 1));
        let e = parse_test_list("x:   \n", "tl").unwrap_err();
        assert!(e.expected.contains("a command after 'x:'"), "{e}");
        let e = parse_test_list("..: ls\n", "tl").unwrap_err();
        assert_eq!(e.line, 1);
    }

    // Regression test of issue 31: a NAME with a space was refused without saying why.
    #[test]
    fn names_with_spaces_say_spaces_are_not_allowed() {
        let e = parse_test_list("forkwait\nmy test: hackbench 4\n", "tl").unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.expected.contains("spaces are not allowed"), "{e}");
        assert!(e.expected.contains("e.g. 'my_test: ...'"), "{e}");
        // An option's value with a colon is no name.
        assert!(parse_test_list("forkwait -opt a:b\n", "tl").is_ok());
    }

    #[test]
    fn long_names_are_refused() {
        let name = "t".repeat(MAX_TEST_NAME_BYTES);
        assert!(parse_test_list(&format!("{name}: true\n"), "tl").is_ok());
        let e = parse_test_list(&format!("ok\n  {name}x: true\n"), "tl").unwrap_err();
        assert_eq!((e.line, e.column), (2, 3));
        assert!(e.expected.contains("at most 200 bytes"), "{e}");
        assert!(parse_test_list(&format!("{name}x -loop 1\n"), "tl").is_err());
    }

    #[test]
    fn a_key_names_the_benchmark() {
        let text = "forkwait\n  key=fw   forkwait -loop 5000\nkey=hb.1 hb: hackbench 2\n";
        let t = parse_test_list(text, "t").unwrap();
        assert_eq!(t[0].key, None);
        assert_eq!(t[1].key.as_deref(), Some("fw"));
        assert_eq!(
            t[1].spec,
            TestSpec::Unixperf {
                test: "forkwait".into(),
                args: vec!["-loop".into(), "5000".into()]
            }
        );
        assert_eq!(t[2].key.as_deref(), Some("hb.1"));
        assert_eq!(t[2].spec.name(), "hb");
        // Only the first word is a key: a command's own 'key=' is the command's.
        let t = parse_test_list("x: env key=1 true\n", "t").unwrap();
        assert_eq!(t[0].key, None);
    }

    #[test]
    fn bad_keys_are_located() {
        let e = parse_test_list("forkwait\n key=a/b forkwait\n", "tl").unwrap_err();
        assert_eq!((e.line, e.column), (2, 2));
        assert!(e.expected.contains("'key=KEY'"), "{e}");
        let e = parse_test_list("key= forkwait\n", "tl").unwrap_err();
        assert_eq!((e.line, e.column), (1, 1));
        let e = parse_test_list("key=fw   \n", "tl").unwrap_err();
        assert!(e.expected.contains("a test after 'key=fw'"), "{e}");
        // Errors in the test after a key point into the test, not the key.
        let e = parse_test_list("key=fw  fork$wait\n", "tl").unwrap_err();
        assert_eq!((e.line, e.column), (1, 9));
        let e = parse_test_list("key=fw a/b: ls\n", "tl").unwrap_err();
        assert_eq!((e.line, e.column), (1, 9));
    }

    #[test]
    fn empty_list_is_an_error() {
        let e = parse_test_list("# nothing\n\n", "tl").unwrap_err();
        assert!(e.to_string().starts_with("tl: expected at least one test line"));
    }
}
