//! `TEST/counters`: what the kernel counted over a test (docs/format.md).
//!
//! ```text
//! upcmp-counters 1
//! window-sec 1.604311
//! # KIND VALUES NAME
//! delta 20188 vmstat.pgfault
//! level 221468 220012 meminfo.MemFree
//! absent perf.cycles
//! end
//! ```

use crate::{numbered_lines, LineRef, NomError, ParseError};
use nom::bytes::complete::{tag, take_while1};
use nom::character::complete::{i64 as dec_i64, space1, u64 as dec_u64};
use nom::combinator::{all_consuming, map};
use nom::number::complete::double;
use nom::sequence::preceded;
use nom::Parser;

/// The first word of the file.
pub const MAGIC: &str = "upcmp-counters";
/// The version this build writes and reads.
pub const VERSION: u32 = 1;

/// What one counter line says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CounterValue {
    /// The change over the test's window (negative for a level that fell, such as
    /// `vmstat.nr_free_pages`).
    Delta(i64),
    /// A level read at the start and at the end of the window (`/proc/meminfo`).
    Level {
        /// At the start.
        start: u64,
        /// At the end.
        end: u64,
    },
    /// The machine does not count it (a hardware event in a VM): not a zero.
    Absent,
}

impl CounterValue {
    /// The change over the window; None when absent.
    pub fn change(self) -> Option<f64> {
        match self {
            CounterValue::Delta(d) => Some(d as f64),
            CounterValue::Level { start, end } => Some(end as f64 - start as f64),
            CounterValue::Absent => None,
        }
    }
}

/// A parsed `counters` file.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CountersFile {
    /// The version of its first line.
    pub version: u32,
    /// Wall-clock length of the window the deltas cover, in seconds.
    pub window_sec: f64,
    /// Every counter, in file order; names are unique.
    pub counters: Vec<(String, CounterValue)>,
}

impl CountersFile {
    /// The counter called `name`.
    pub fn get(&self, name: &str) -> Option<CounterValue> {
        self.counters.iter().find(|(n, _)| n == name).map(|(_, v)| *v)
    }
}

fn counter_name(i: &str) -> nom::IResult<&str, &str, NomError<'_>> {
    take_while1(|c: char| !c.is_whitespace()).parse(i)
}

// delta 20188 vmstat.pgfault
// level 221468 220012 meminfo.MemFree
// absent perf.cycles
fn counter_line(i: &str) -> nom::IResult<&str, (CounterValue, &str), NomError<'_>> {
    let delta = map(
        (tag("delta"), preceded(space1, dec_i64), preceded(space1, counter_name)),
        |(_, d, n)| (CounterValue::Delta(d), n),
    );
    let level = map(
        (
            tag("level"),
            preceded(space1, dec_u64),
            preceded(space1, dec_u64),
            preceded(space1, counter_name),
        ),
        |(_, start, end, n)| (CounterValue::Level { start, end }, n),
    );
    let absent = map((tag("absent"), preceded(space1, counter_name)), |(_, n)| {
        (CounterValue::Absent, n)
    });
    nom::branch::alt((delta, level, absent)).parse(i)
}

/// Parses a `counters` file (see the module's documentation): its version, every line's
/// syntax, unique names, a finite non-negative window and the closing `end` (a truncated
/// file is an error).
pub fn parse_counters(text: &str, file: &str) -> Result<CountersFile, ParseError> {
    let mut lines = numbered_lines(text).filter(|(_, l)| !l.trim().is_empty() && !l.starts_with('#'));
    let Some((n, first)) = lines.next() else {
        return Err(ParseError::whole(
            file,
            format!("'{MAGIC} {VERSION}' on the first line"),
        ));
    };
    let l = LineRef {
        file,
        number: n,
        text: first,
    };
    let version = l.parse_all(
        first,
        preceded((tag(MAGIC), space1), nom::character::complete::u32),
        &format!("'{MAGIC} {VERSION}'"),
    )?;
    if version != VERSION {
        return Err(l.error(
            first,
            format!("'{MAGIC} {VERSION}' (this build reads version {VERSION})"),
        ));
    }
    let mut out = CountersFile {
        version,
        ..CountersFile::default()
    };
    let mut window = None;
    let mut ended = false;
    for (n, line) in lines {
        let l = LineRef {
            file,
            number: n,
            text: line,
        };
        if ended {
            return Err(l.error(line, "nothing after 'end'"));
        }
        if line.trim_end() == "end" {
            ended = true;
        } else if let Some(rest) = line.strip_prefix("window-sec ") {
            let w = l.parse_all(rest, all_consuming(double), "seconds")?;
            if !w.is_finite() || w < 0.0 {
                return Err(l.error(rest, "a finite, non-negative number of seconds"));
            }
            window = Some(w);
        } else {
            let (value, name) = l.parse_all(
                line,
                counter_line,
                "'delta N NAME', 'level START END NAME' or 'absent NAME'",
            )?;
            if out.get(name).is_some() {
                return Err(l.error(name, "a counter named once"));
            }
            out.counters.push((name.to_string(), value));
        }
    }
    if !ended {
        return Err(ParseError::whole(file, "a last line 'end' (the file is truncated)"));
    }
    out.window_sec = window.ok_or_else(|| ParseError::whole(file, "a 'window-sec S' line"))?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "upcmp-counters 1\nwindow-sec 1.5\n# KIND VALUES NAME\ndelta 20188 vmstat.pgfault\n\
                        delta -12 vmstat.nr_free_pages\nlevel 221468 220012 meminfo.MemFree\nabsent perf.cycles\nend\n";

    #[test]
    fn reads_every_kind() {
        let c = parse_counters(GOOD, "counters").unwrap();
        assert_eq!(c.window_sec, 1.5);
        assert_eq!(c.counters.len(), 4);
        assert_eq!(c.get("vmstat.pgfault"), Some(CounterValue::Delta(20188)));
        assert_eq!(c.get("vmstat.nr_free_pages").unwrap().change(), Some(-12.0));
        assert_eq!(c.get("meminfo.MemFree").unwrap().change(), Some(-1456.0));
        assert_eq!(c.get("perf.cycles"), Some(CounterValue::Absent));
        assert_eq!(c.get("perf.cycles").unwrap().change(), None);
    }

    #[test]
    fn errors_are_located() {
        let e = parse_counters("upcmp-counters 2\nwindow-sec 1\nend\n", "c").unwrap_err();
        assert_eq!(e.line, 1);
        assert!(e.to_string().contains("reads version 1"), "{e}");
        let e = parse_counters("upcmp-counters 1\nwindow-sec 1\ndelta x pgfault\nend\n", "c").unwrap_err();
        assert_eq!((e.line, e.column), (3, 1));
        let e = parse_counters("upcmp-counters 1\nwindow-sec 1\ndelta 1 a\ndelta 2 a\nend\n", "c").unwrap_err();
        assert_eq!((e.line, e.column), (4, 9));
        let e = parse_counters("upcmp-counters 1\nwindow-sec nan\nend\n", "c").unwrap_err();
        assert_eq!(e.line, 2);
        let e = parse_counters("upcmp-counters 1\nwindow-sec 1\ndelta 1 a\n", "c").unwrap_err();
        assert!(e.to_string().contains("truncated"), "{e}");
        assert!(parse_counters("upcmp-counters 1\ndelta 1 a\nend\n", "c").is_err());
        assert!(parse_counters("", "c").is_err());
        assert!(parse_counters("upcmp-counters 1\nwindow-sec 1\nend\ndelta 1 a\n", "c").is_err());
    }
}
