//! Records of `samples.gz` (after decompression), one per line; see `docs/format.md`.
//!
//! ```text
//! upcmp-samples 2
//! c 4242 4242 unixperf
//! s 81234567890 1 4242 4242 k @1000000 ffffffff8110a2b0 ffffffff8110a2b0 ffffffff81c0007c
//! f 4243 4242 4243 4242
//! l 1 3
//! t 0
//! ```
//!
//! Bounds: [`for_each_record`] reads at most [`MAX_LINE_BYTES`] a line, so a stream
//! without newlines (a decompression bomb) is an error after 4 MiB, not an allocation of
//! the whole stream. CPU numbers are below [`MAX_CPUS`]; command names longer than
//! [`MAX_NAME_BYTES`](crate::MAX_NAME_BYTES) are cut and counted. The `l` records' counts
//! are read up to `u64::MAX`: adding them up (with checked arithmetic) is the caller's job.

use crate::{bounded_name, LineReader, LineRef, NomError, ParseError, EXPECT_CPU, MAX_CPUS};
use nom::branch::alt;
use nom::bytes::complete::tag;
use nom::character::complete::{hex_digit1, space1, u32 as dec_u32, u64 as dec_u64};
use nom::combinator::{map, map_res, opt, rest, value};
use nom::multi::many0;
use nom::sequence::preceded;
use nom::Parser;

/// The first line of a samples stream this version writes. Version 2 adds each sample's
/// period (`@N`, in the event's unit); version 1 streams (no periods) are read too.
pub const HEADER: &str = "upcmp-samples 2";

/// The first line of a version 1 stream.
pub const HEADER_V1: &str = "upcmp-samples 1";

/// The longest record line read, in bytes. A sample's line holds its whole call chain
/// (17 bytes a frame at most): 4 MiB holds a chain of perf's deepest
/// (`kernel.perf_event_max_stack` at its limit, 65535 frames).
pub const MAX_LINE_BYTES: usize = 4 << 20;

/// What a whole stream held.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SamplesStats {
    /// Records read (the header line not included).
    pub records: u64,
    /// Command names longer than [`MAX_NAME_BYTES`](crate::MAX_NAME_BYTES) that were cut.
    pub truncated_names: u64,
}

/// The processor mode a sample was taken in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mode {
    /// Kernel (`k`).
    Kernel,
    /// User space (`u`).
    User,
    /// Hypervisor (`h`).
    Hypervisor,
    /// A guest's kernel (`gk`).
    GuestKernel,
    /// A guest's user space (`gu`).
    GuestUser,
    /// Not said (`?`).
    Unknown,
}

impl Mode {
    /// The code written to disk.
    pub fn code(self) -> &'static str {
        match self {
            Mode::Kernel => "k",
            Mode::User => "u",
            Mode::Hypervisor => "h",
            Mode::GuestKernel => "gk",
            Mode::GuestUser => "gu",
            Mode::Unknown => "?",
        }
    }
}

/// One sample.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sample {
    /// perf clock time, nanoseconds.
    pub time_ns: u64,
    /// CPU it was taken on.
    pub cpu: u32,
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// Processor mode.
    pub mode: Mode,
    /// The sample's period, in the event's unit (ns for time events); `None` in a
    /// version 1 stream, where every sample stands for the profile's period.
    pub period: Option<u64>,
    /// Program counter.
    pub pc: u64,
    /// Call chain, innermost first, with perf's context markers kept (empty when stacks
    /// were not taken).
    pub callchain: Vec<u64>,
}

/// One record of the stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Record {
    /// A sample.
    Sample(Sample),
    /// A thread's command name from here on.
    Comm {
        /// Process id.
        pid: u32,
        /// Thread id.
        tid: u32,
        /// Its name.
        comm: String,
    },
    /// Samples the kernel dropped on a CPU.
    Lost {
        /// The CPU.
        cpu: u32,
        /// How many.
        count: u64,
    },
    /// A new thread or process: it has its parent's command name until a `Comm`.
    Fork {
        /// Process id of the child.
        pid: u32,
        /// Process id of the parent.
        ppid: u32,
        /// Thread id of the child.
        tid: u32,
        /// Thread id of the parent.
        ptid: u32,
    },
    /// The kernel throttled sampling on a CPU.
    Throttle {
        /// The CPU.
        cpu: u32,
    },
}

/// A CPU number; one that does not fit a `u32` reads as `u32::MAX`, for the caller to
/// refuse as out of range.
fn cpu(i: &str) -> nom::IResult<&str, u32, NomError<'_>> {
    map(dec_u64, |c| u32::try_from(c).unwrap_or(u32::MAX)).parse(i)
}

fn hex(i: &str) -> nom::IResult<&str, u64, NomError<'_>> {
    map_res(hex_digit1, |h| u64::from_str_radix(h, 16)).parse(i)
}

fn mode(i: &str) -> nom::IResult<&str, Mode, NomError<'_>> {
    alt((
        value(Mode::GuestKernel, tag("gk")),
        value(Mode::GuestUser, tag("gu")),
        value(Mode::Kernel, tag("k")),
        value(Mode::User, tag("u")),
        value(Mode::Hypervisor, tag("h")),
        value(Mode::Unknown, tag("?")),
    ))
    .parse(i)
}

// s 81234567890 1 4242 4242 k @1000000 ffffffff8110a2b0 ffffffff8110a2b0 ffffffff81c0007c
fn sample(i: &str) -> nom::IResult<&str, Record, NomError<'_>> {
    map(
        preceded(
            tag("s"),
            (
                preceded(space1, dec_u64),
                preceded(space1, cpu),
                preceded(space1, dec_u32),
                preceded(space1, dec_u32),
                preceded(space1, mode),
                opt(preceded((space1, tag("@")), dec_u64)),
                preceded(space1, hex),
                many0(preceded(space1, hex)),
            ),
        ),
        |(time_ns, cpu, pid, tid, mode, period, pc, callchain)| {
            Record::Sample(Sample {
                time_ns,
                cpu,
                pid,
                tid,
                mode,
                period,
                pc,
                callchain,
            })
        },
    )
    .parse(i)
}

// c 4242 4242 unixperf
fn comm(i: &str) -> nom::IResult<&str, Record, NomError<'_>> {
    map(
        preceded(
            tag("c"),
            (
                preceded(space1, dec_u32),
                preceded(space1, dec_u32),
                preceded(space1, rest),
            ),
        ),
        |(pid, tid, comm): (u32, u32, &str)| Record::Comm {
            pid,
            tid,
            comm: comm.to_string(),
        },
    )
    .parse(i)
}

/// Parses one record line (not the header); `number` is its 1-based line number. A
/// command name longer than [`MAX_NAME_BYTES`](crate::MAX_NAME_BYTES) is cut.
pub fn parse_record(line: &str, file: &str, number: usize) -> Result<Record, ParseError> {
    let l = LineRef {
        file,
        number,
        text: line,
    };
    Ok(parse_bounded(&l)?.0)
}

/// A record with its CPU number checked and its command name cut, and whether the name
/// was cut.
fn parse_bounded(l: &LineRef<'_>) -> Result<(Record, bool), ParseError> {
    let mut record = parse_line(l)?;
    // The CPU field: the third of a sample, the second of `l` and `t`.
    let cpu = match &record {
        Record::Sample(s) => Some((s.cpu, 2)),
        Record::Lost { cpu, .. } | Record::Throttle { cpu } => Some((*cpu, 1)),
        _ => None,
    };
    if let Some((cpu, field)) = cpu {
        if cpu >= MAX_CPUS {
            let at = l
                .text
                .split([' ', '\t'])
                .filter(|f| !f.is_empty())
                .nth(field)
                .map_or(l.text.len(), |f| f.as_ptr() as usize - l.text.as_ptr() as usize);
            return Err(l.error(&l.text[at..], EXPECT_CPU));
        }
    }
    let mut cut = false;
    if let Record::Comm { comm, .. } = &mut record {
        let (short, was_cut) = bounded_name(comm);
        if was_cut {
            *comm = short.to_string();
            cut = true;
        }
    }
    Ok((record, cut))
}

fn parse_line(l: &LineRef<'_>) -> Result<Record, ParseError> {
    let line = l.text;
    match line.as_bytes().first() {
        Some(b's') => l.parse_all(
            line,
            sample,
            "'s TIME CPU PID TID MODE [@PERIOD] PC [CALLCHAIN...]' (hex PCs, MODE k/u/h/gk/gu/?)",
        ),
        Some(b'c') => l.parse_all(line, comm, "'c PID TID COMM'"),
        Some(b'l') => l.parse_all(
            line,
            map(
                preceded(tag("l"), (preceded(space1, cpu), preceded(space1, dec_u64))),
                |(cpu, count)| Record::Lost { cpu, count },
            ),
            "'l CPU COUNT'",
        ),
        Some(b'f') => l.parse_all(
            line,
            map(
                preceded(
                    tag("f"),
                    (
                        preceded(space1, dec_u32),
                        preceded(space1, dec_u32),
                        preceded(space1, dec_u32),
                        preceded(space1, dec_u32),
                    ),
                ),
                |(pid, ppid, tid, ptid)| Record::Fork { pid, ppid, tid, ptid },
            ),
            "'f PID PPID TID PTID'",
        ),
        Some(b't') => l.parse_all(
            line,
            map(preceded(tag("t"), preceded(space1, cpu)), |cpu| Record::Throttle {
                cpu,
            }),
            "'t CPU'",
        ),
        _ => Err(l.error(line, "a record starting with s, c, f, l or t")),
    }
}

/// Checks the first line of a samples stream (either version).
pub fn check_header(line: &str, file: &str) -> Result<(), ParseError> {
    if line.trim_end() == HEADER || line.trim_end() == HEADER_V1 {
        Ok(())
    } else {
        Err(ParseError::at(
            file,
            1,
            line,
            line,
            format!("'{HEADER}' (is this an upcmp samples file?)"),
        ))
    }
}

/// Reads a samples stream (header, then records) from `input`, calling `on_record` for
/// each record, in bounded memory: at most [`MAX_LINE_BYTES`] a line. `name` names the
/// input in errors.
pub fn for_each_record<R: std::io::BufRead>(
    input: R,
    name: &str,
    mut on_record: impl FnMut(Record),
) -> Result<SamplesStats, ParseError> {
    let mut lines = LineReader::new(input, MAX_LINE_BYTES);
    let Some((_, first)) = lines.next_line(name)? else {
        return Err(ParseError::whole(name, "a samples stream, but it is empty"));
    };
    check_header(first.trim_end_matches(['\n', '\r']), name)?;
    let mut stats = SamplesStats::default();
    while let Some((number, text)) = lines.next_line(name)? {
        let text = text.strip_suffix('\n').unwrap_or(text);
        let text = text.strip_suffix('\r').unwrap_or(text);
        let (record, cut) = parse_bounded(&LineRef {
            file: name,
            number,
            text,
        })?;
        stats.records += 1;
        stats.truncated_names += u64::from(cut);
        on_record(record);
    }
    Ok(stats)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_of_record() {
        let s = parse_record("s 5 1 10 11 gk ffffffff81000010 1 2", "f", 2).unwrap();
        let want = Sample {
            time_ns: 5,
            cpu: 1,
            pid: 10,
            tid: 11,
            mode: Mode::GuestKernel,
            period: None,
            pc: 0xffffffff81000010,
            callchain: vec![1, 2],
        };
        assert_eq!(s, Record::Sample(want.clone()));
        let s = parse_record("s 5 1 10 11 gk @250000 ffffffff81000010 1 2", "f", 2).unwrap();
        assert_eq!(
            s,
            Record::Sample(Sample {
                period: Some(250000),
                ..want
            })
        );
        assert_eq!(
            parse_record("c 1 2 my prog", "f", 3).unwrap(),
            Record::Comm {
                pid: 1,
                tid: 2,
                comm: "my prog".into()
            }
        );
        assert_eq!(
            parse_record("l 1 7", "f", 3).unwrap(),
            Record::Lost { cpu: 1, count: 7 }
        );
        assert_eq!(parse_record("t 3", "f", 3).unwrap(), Record::Throttle { cpu: 3 });
        assert_eq!(
            parse_record("f 5 4 6 4", "f", 3).unwrap(),
            Record::Fork {
                pid: 5,
                ppid: 4,
                tid: 6,
                ptid: 4
            }
        );
    }

    #[test]
    fn cpu_numbers_are_bounded() {
        for (line, column) in [
            ("s 5 8192 10 11 k ff", 5),
            ("s 5 99999999999 10 11 k ff", 5),
            ("l 8192 1", 3),
            ("t  100000000", 4),
        ] {
            let e = parse_record(line, "f", 2).unwrap_err();
            assert_eq!((e.line, e.column), (2, column), "{line}");
            assert!(e.expected.contains("below 8192"), "{line}: {e}");
        }
        assert!(parse_record("t 8191", "f", 2).is_ok());
    }

    #[test]
    fn streams_are_read_in_bounded_memory() {
        let text = format!(
            "{HEADER}\nc 1 1 {}\nt 0\r\nl 1 7\n",
            "x".repeat(crate::MAX_NAME_BYTES + 9)
        );
        let mut got = Vec::new();
        let stats = for_each_record(text.as_bytes(), "s.gz", |r| got.push(r)).unwrap();
        assert_eq!((stats.records, stats.truncated_names), (3, 1));
        assert!(matches!(&got[0], Record::Comm { comm, .. } if comm.len() == crate::MAX_NAME_BYTES));
        assert_eq!(got[2], Record::Lost { cpu: 1, count: 7 });
        // 4 GiB without a newline once took 4.2 GB: now an error after MAX_LINE_BYTES.
        let header = format!("{HEADER}\n");
        let endless = std::io::BufReader::new(std::io::Read::chain(header.as_bytes(), std::io::repeat(b'7')));
        let e = for_each_record(endless, "s.gz", |_| {}).unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.expected.contains("at most 4194304 bytes"), "{e}");
        let e = for_each_record(&b""[..], "s.gz", |_| {}).unwrap_err();
        assert!(e.to_string().contains("empty"), "{e}");
        let e = for_each_record(&b"upcmp-samples 3\n"[..], "s.gz", |_| {}).unwrap_err();
        assert_eq!(e.line, 1);
    }

    #[test]
    fn errors_are_located() {
        let e = parse_record("s 5 1 10 11 k zz", "f", 9).unwrap_err();
        assert_eq!((e.line, e.column), (9, 15));
        assert!(parse_record("x", "f", 1).is_err());
        assert!(parse_record("s 5 1 10", "f", 1).is_err());
        assert!(check_header("upcmp-samples 3", "f").is_err());
        assert!(check_header(HEADER, "f").is_ok());
        assert!(check_header(HEADER_V1, "f").is_ok());
    }
}
