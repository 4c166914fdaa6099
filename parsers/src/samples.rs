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

use crate::{LineRef, NomError, ParseError};
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
                preceded(space1, dec_u32),
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

/// Parses one record line (not the header); `number` is its 1-based line number.
pub fn parse_record(line: &str, file: &str, number: usize) -> Result<Record, ParseError> {
    let l = LineRef {
        file,
        number,
        text: line,
    };
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
                preceded(tag("l"), (preceded(space1, dec_u32), preceded(space1, dec_u64))),
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
            map(preceded(tag("t"), preceded(space1, dec_u32)), |cpu| Record::Throttle {
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
