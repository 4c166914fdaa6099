//! JIT symbol maps, `/tmp/perf-PID.map`, as runtimes with a JIT write them for perf (the
//! JVM with an agent, V8's `--perf-basic-prof`, CPython's `-X perf`): one code region per
//! line, `START SIZE NAME`, both numbers in hex (`0x` allowed), the name to the end of the
//! line.
//!
//! ```text
//! 7f1c2c000100 40 LazyCompile:~fib /app/fib.js:1
//! ```
//!
//! Policy: a runtime may be writing the file while it is read, so [`read`] keeps the lines
//! that parse and counts the others (as perf skips them); [`parse_line`] reports a bad
//! line with its column. [`read`] cuts names longer than
//! [`MAX_NAME_BYTES`](crate::MAX_NAME_BYTES) and counts them.

use crate::{bounded_name, numbered_lines, LineRef, NomError, ParseError};
use nom::bytes::complete::{tag, take_while1};
use nom::character::complete::{space0, space1};
use nom::combinator::{map_res, opt, rest, verify};
use nom::sequence::preceded;
use nom::Parser;

/// One code region.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MapEntry<'a> {
    /// Its first address.
    pub start: u64,
    /// Its size in bytes.
    pub size: u64,
    /// The name the runtime gave it.
    pub name: &'a str,
}

fn hex(i: &str) -> nom::IResult<&str, u64, NomError<'_>> {
    map_res(
        preceded(opt(tag("0x")), take_while1(|c: char| c.is_ascii_hexdigit())),
        |h| u64::from_str_radix(h, 16),
    )
    .parse(i)
}

/// What [`read`] found in a whole map.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PerfMap<'a> {
    /// The entries of the lines that parse, in file order.
    pub entries: Vec<MapEntry<'a>>,
    /// Non-blank lines that do not parse (skipped).
    pub bad_lines: usize,
    /// Names longer than [`MAX_NAME_BYTES`](crate::MAX_NAME_BYTES), cut to that length.
    pub truncated_names: usize,
}

/// Parses one line (without its line ending); `file`/`line_no` name it in errors. The name
/// is returned as written; [`read`] cuts long ones.
pub fn parse_line<'a>(line: &'a str, file: &'a str, line_no: usize) -> Result<MapEntry<'a>, ParseError> {
    let at = LineRef {
        file,
        number: line_no,
        text: line,
    };
    let (start, size, name) = at.parse_all(
        line,
        (
            preceded(space0, hex),
            preceded(space1, hex),
            preceded(space1, verify(rest, |n: &str| !n.trim().is_empty())),
        ),
        "START SIZE NAME (hex addresses)",
    )?;
    Ok(MapEntry {
        start,
        size,
        name: name.trim_end(),
    })
}

/// The entries of a whole map that parse (names cut to
/// [`MAX_NAME_BYTES`](crate::MAX_NAME_BYTES)), and how many non-blank lines did not.
pub fn read<'a>(text: &'a str, file: &'a str) -> PerfMap<'a> {
    let mut map = PerfMap::default();
    for (n, line) in numbered_lines(text).filter(|(_, l)| !l.trim().is_empty()) {
        match parse_line(line, file, n) {
            Ok(mut e) => {
                let (name, cut) = bounded_name(e.name);
                e.name = name;
                map.truncated_names += usize::from(cut);
                map.entries.push(e);
            }
            Err(_) => map.bad_lines += 1,
        }
    }
    map
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_and_bad_lines() {
        let text =
            "7f1c2c000100 40 LazyCompile:~fib /app/fib.js:1\n0x7f1c2c000200 0x10 py::f:/x.py\n\nzz 10 x\n7f00 10\n7f1c";
        let map = read(text, "perf-1.map");
        assert_eq!(
            map.entries,
            [
                MapEntry {
                    start: 0x7f1c2c000100,
                    size: 0x40,
                    name: "LazyCompile:~fib /app/fib.js:1"
                },
                MapEntry {
                    start: 0x7f1c2c000200,
                    size: 0x10,
                    name: "py::f:/x.py"
                }
            ]
        );
        // `zz 10 x`, a line without a name, and a line cut short.
        assert_eq!((map.bad_lines, map.truncated_names), (3, 0));
        let long = format!("7f00 10 {}", "n".repeat(crate::MAX_NAME_BYTES * 2));
        let map = read(&long, "perf-1.map");
        assert_eq!(map.entries[0].name.len(), crate::MAX_NAME_BYTES);
        assert_eq!(map.truncated_names, 1);
        let e = parse_line("7f00 10", "perf-1.map", 5).unwrap_err();
        assert_eq!((e.line, e.column), (5, 8));
    }
}
