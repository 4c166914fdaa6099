//! Records of `samples.gz` (after decompression), one per line; see `docs/format.md`.
//!
//! ```text
//! upcmp-samples 3
//! c 4242 4242 unixperf
//! k 0 -80 = -7eef5b80 +af5c7c
//! s 81234567890 1 4242 4242 k @1000000 ffffffff8110a2b0 *0
//! s 250112 1 4242 4242 k @1000000 ffffffff8110a2c4 *0
//! f 4243 4242 4243 4242
//! l 1 3
//! t 0
//! y ffffffffc0012000 1a4 1 + bpf_prog_6deef7357e7b4530_sd_fw_ingress
//! b 1 42 6deef7357e7b4530
//! ```
//!
//! Version 4 adds the kernel's code changes: `y` (a symbol of kernel code registered `+`
//! or unregistered `-`: a BPF program's JIT image, a trampoline) and `b` (a BPF program
//! loaded or unloaded), in time order among the samples.
//!
//! Version 3 writes each call chain once, in a `k` line that gives it the next id, and a
//! sample names it (`*ID`); a chain's frames are hex addresses, `+X`/`-X` (the previous
//! frame plus or minus X) or `=` (the sample's own PC). A sample's time is the difference
//! from the previous sample's. [`for_each_record`] hands on every sample with its time and
//! full call chain, whatever the version, so callers never see the difference.
//!
//! Bounds: [`for_each_record`] reads at most [`MAX_LINE_BYTES`] a line, so a stream
//! without newlines (a decompression bomb) is an error after 4 MiB, not an allocation of
//! the whole stream. The chain table holds at most [`MAX_CHAINS`] chains and
//! [`MAX_TABLE_FRAMES`] frames (a `k 0` starts a new table), a chain at most
//! [`MAX_CHAIN_FRAMES`]; the frames that the samples' chains hold in all are at most what
//! the caller allows, so a short stream that names a long chain many times cannot hand on
//! more than a stream with the chains written out could. CPU numbers are below
//! [`MAX_CPUS`]; command names longer than [`MAX_NAME_BYTES`](crate::MAX_NAME_BYTES) are
//! cut and counted. The `l` records' counts are read up to `u64::MAX`: adding them up (with
//! checked arithmetic) is the caller's job.
//!
//! Over 1,000 lines with its unit tests; the code alone is under 1,000.

use crate::{bounded_name, LineReader, LineRef, NomError, ParseError, EXPECT_CPU, MAX_CPUS};
use nom::branch::alt;
use nom::bytes::complete::tag;
use nom::character::complete::{digit1, hex_digit1, i64 as dec_i64, space1, u32 as dec_u32, u64 as dec_u64};
use nom::combinator::{map, map_res, opt, recognize, rest, value};
use nom::multi::many0;
use nom::sequence::preceded;
use nom::Parser;

/// The first line of a samples stream this version writes. Version 5 says whose each
/// sample is (`%t`, `%k`, `%o`); version 4 adds the kernel's code changes (`y`, `b`); version 3 writes each call chain once (`k`) and samples' times
/// as differences; version 2 added each sample's period (`@N`, in the event's unit).
/// Streams of versions 1 (no periods), 2, 3 and 4 are read too.
pub const HEADER: &str = "upcmp-samples 5";

/// The first line of a version 4 stream.
pub const HEADER_V4: &str = "upcmp-samples 4";

/// The first line of a version 3 stream.
pub const HEADER_V3: &str = "upcmp-samples 3";

/// The first line of a version 2 stream.
pub const HEADER_V2: &str = "upcmp-samples 2";

/// The first line of a version 1 stream.
pub const HEADER_V1: &str = "upcmp-samples 1";

/// A samples stream's version, from its header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Version {
    /// `upcmp-samples 1`: no periods.
    V1,
    /// `upcmp-samples 2`: periods, chains written out in each sample.
    V2,
    /// `upcmp-samples 3`: chains defined once (`k`), times as differences.
    V3,
    /// `upcmp-samples 4`: version 3 and the kernel's code changes (`y`, `b`).
    V4,
    /// `upcmp-samples 5`: version 4 and whose each sample is (`%t`, `%k`, `%o`).
    V5,
}

/// The longest record line read, in bytes. A version 2 sample's line holds its whole call
/// chain (17 bytes a frame at most): 4 MiB holds a chain of perf's deepest
/// (`kernel.perf_event_max_stack` at its limit, 65535 frames), and a `k` line of
/// [`MAX_CHAIN_FRAMES`] frames (18 bytes a frame at most).
pub const MAX_LINE_BYTES: usize = 4 << 20;

/// The most frames a chain of a `k` line may have: twice perf's deepest chain (65535
/// frames and its context markers).
pub const MAX_CHAIN_FRAMES: usize = 1 << 17;

/// The most chains a version 3 stream's table holds at once; a writer that has defined as
/// many starts a new table (`k 0`).
pub const MAX_CHAINS: usize = 1 << 16;

/// The most frames a version 3 stream's table holds at once (8 MiB of addresses); a writer
/// that would pass it starts a new table (`k 0`).
pub const MAX_TABLE_FRAMES: usize = 1 << 20;

/// What a whole stream held.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SamplesStats {
    /// Records read (the header line and a version 3 stream's `k` lines not included).
    pub records: u64,
    /// Command names longer than [`MAX_NAME_BYTES`](crate::MAX_NAME_BYTES) that were cut.
    pub truncated_names: u64,
    /// The frames of the samples' call chains, in all.
    pub frames: u64,
    /// Call chains defined (`k` lines).
    pub chains: u64,
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

/// Whose work a sample is: the test's processes, the kernel's own (no process: idle,
/// interrupts and softirqs taken there, or a kernel thread), or another process's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Owner {
    /// A process of the test (in its cgroup, or its process tree).
    Test,
    /// The kernel outside any process (pid 0), or a kernel thread (kworker, ksoftirqd).
    Kernel,
    /// Any other process.
    Other,
}

impl Owner {
    /// The code written to disk after `%`.
    pub fn code(self) -> char {
        match self {
            Owner::Test => 't',
            Owner::Kernel => 'k',
            Owner::Other => 'o',
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
    /// Whose work it is; `None` where not recorded (streams before version 5, recordings).
    pub owner: Option<Owner>,
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
    /// Kernel code given a symbol or losing it (`PERF_RECORD_KSYMBOL`): a BPF program's
    /// JIT image, a BPF trampoline or dispatcher, out-of-line code.
    Ksymbol(Ksymbol),
    /// A BPF program loaded or unloaded (`PERF_RECORD_BPF_EVENT`).
    BpfEvent {
        /// `PERF_BPF_EVENT_PROG_LOAD` (1) or `PERF_BPF_EVENT_PROG_UNLOAD` (2).
        kind: u16,
        /// The program's id (as `bpftool prog` lists it).
        id: u32,
        /// The program's tag (the hash of its instructions).
        tag: [u8; 8],
    },
}

/// `PERF_RECORD_KSYMBOL_TYPE_BPF`: a ksymbol of a BPF program.
pub const KSYMBOL_TYPE_BPF: u16 = 1;

/// A kernel code symbol registered or unregistered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ksymbol {
    /// Its first address.
    pub addr: u64,
    /// Its length in bytes.
    pub len: u32,
    /// `PERF_RECORD_KSYMBOL_TYPE_*`: 1 a BPF program, 2 out-of-line code.
    pub kind: u16,
    /// Whether the symbol goes away (else it comes).
    pub unregister: bool,
    /// Its name, as the kernel gives it (`bpf_prog_<tag>_<name>` for a BPF program).
    pub name: String,
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

/// The fields of a sample after its time, through its PC: a sample of no time and no
/// chain, as both versions' samples start.
fn sample_fields(i: &str) -> nom::IResult<&str, Sample, NomError<'_>> {
    map(
        (
            preceded(space1, cpu),
            preceded(space1, dec_u32),
            preceded(space1, dec_u32),
            preceded(space1, mode),
            opt(preceded((space1, tag("@")), dec_u64)),
            preceded(space1, hex),
        ),
        |(cpu, pid, tid, mode, period, pc)| Sample {
            time_ns: 0,
            cpu,
            pid,
            tid,
            mode,
            period,
            pc,
            callchain: Vec::new(),
            owner: None,
        },
    )
    .parse(i)
}

// s 81234567890 1 4242 4242 k @1000000 ffffffff8110a2b0 ffffffff8110a2b0 ffffffff81c0007c
fn sample(i: &str) -> nom::IResult<&str, Record, NomError<'_>> {
    map(
        preceded(
            tag("s"),
            (preceded(space1, dec_u64), sample_fields, many0(preceded(space1, hex))),
        ),
        |(time_ns, sample, callchain)| {
            Record::Sample(Sample {
                time_ns,
                callchain,
                owner: None,
                ..sample
            })
        },
    )
    .parse(i)
}

/// A version 3 sample as written: its time's difference from the previous sample's, the
/// sample without time or chain, the `*ID` naming its chain, and (version 5) its owner.
type SampleRef<'a> = (i64, Sample, Option<&'a str>, Option<Owner>);

fn owner(i: &str) -> nom::IResult<&str, Owner, NomError<'_>> {
    alt((
        value(Owner::Test, tag("%t")),
        value(Owner::Kernel, tag("%k")),
        value(Owner::Other, tag("%o")),
    ))
    .parse(i)
}

// s 250112 1 4242 4242 k @1000000 ffffffff8110a2c4 *0 %t
fn sample_v3(i: &str) -> nom::IResult<&str, SampleRef<'_>, NomError<'_>> {
    preceded(
        tag("s"),
        (
            preceded(space1, dec_i64),
            sample_fields,
            opt(preceded(space1, recognize((tag("*"), digit1)))),
            opt(preceded(space1, owner)),
        ),
    )
    .parse(i)
}

/// A frame of a `k` line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Frame {
    /// `=`: the PC of the sample that names the chain.
    Pc,
    /// An address in hex.
    At(u64),
    /// `+X`: the previous frame plus X.
    Plus(u64),
    /// `-X`: the previous frame minus X.
    Minus(u64),
}

fn frame(i: &str) -> nom::IResult<&str, Frame, NomError<'_>> {
    alt((
        value(Frame::Pc, tag("=")),
        map(preceded(tag("+"), hex), Frame::Plus),
        map(preceded(tag("-"), hex), Frame::Minus),
        map(hex, Frame::At),
    ))
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

// y ffffffffc0012000 1a4 1 + bpf_prog_6deef7357e7b4530_sd_fw_ingress
fn ksymbol(i: &str) -> nom::IResult<&str, Record, NomError<'_>> {
    map(
        preceded(
            tag("y"),
            (
                preceded(space1, hex),
                preceded(space1, map_res(hex_digit1, |h| u32::from_str_radix(h, 16))),
                preceded(space1, nom::character::complete::u16),
                preceded(space1, alt((value(false, tag("+")), value(true, tag("-"))))),
                preceded(space1, rest),
            ),
        ),
        |(addr, len, kind, unregister, name): (u64, u32, u16, bool, &str)| {
            Record::Ksymbol(Ksymbol {
                addr,
                len,
                kind,
                unregister,
                name: name.to_string(),
            })
        },
    )
    .parse(i)
}

// b 1 42 6deef7357e7b4530
fn bpf_event(i: &str) -> nom::IResult<&str, Record, NomError<'_>> {
    map_res(
        preceded(
            tag("b"),
            (
                preceded(space1, nom::character::complete::u16),
                preceded(space1, dec_u32),
                preceded(space1, hex_digit1),
            ),
        ),
        |(kind, id, tag): (u16, u32, &str)| {
            if tag.len() != 16 {
                return Err(());
            }
            let tag = u64::from_str_radix(tag, 16).map_err(|_| ())?.to_be_bytes();
            Ok(Record::BpfEvent { kind, id, tag })
        },
    )
    .parse(i)
}

/// Parses one record line of a version 1 or 2 stream (not the header); `number` is its
/// 1-based line number. A command name longer than
/// [`MAX_NAME_BYTES`](crate::MAX_NAME_BYTES) is cut. (A version 3 sample depends on the
/// lines before it: [`for_each_record`] reads those.)
pub fn parse_record(line: &str, file: &str, number: usize) -> Result<Record, ParseError> {
    let l = LineRef {
        file,
        number,
        text: line,
    };
    Ok(bounded(&l, parse_line(&l, Version::V2)?)?.0)
}

/// `record` with its CPU number checked and its command name cut, and whether the name
/// was cut.
fn bounded(l: &LineRef<'_>, mut record: Record) -> Result<(Record, bool), ParseError> {
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
    if let Record::Comm { comm: name, .. } | Record::Ksymbol(Ksymbol { name, .. }) = &mut record {
        let (short, was_cut) = bounded_name(name);
        if was_cut {
            *name = short.to_string();
            cut = true;
        }
    }
    Ok((record, cut))
}

/// A line of any record but version 3's `s` and `k`, which [`Decoder`] reads.
fn parse_line(l: &LineRef<'_>, version: Version) -> Result<Record, ParseError> {
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
        Some(b'y') if version >= Version::V4 => l.parse_all(
            line,
            ksymbol,
            "'y ADDR LEN TYPE +|- NAME' (hex ADDR and LEN, decimal TYPE)",
        ),
        Some(b'b') if version >= Version::V4 => l.parse_all(line, bpf_event, "'b KIND ID TAG' (hex TAG of 16 digits)"),
        _ if version >= Version::V4 => Err(l.error(line, "a record starting with s, k, c, f, l, t, y or b")),
        _ if version >= Version::V3 => Err(l.error(line, "a record starting with s, k, c, f, l or t")),
        _ => Err(l.error(line, "a record starting with s, c, f, l or t")),
    }
}

/// The call chains a version 3 stream has defined, by id: at most [`MAX_CHAINS`] chains
/// and [`MAX_TABLE_FRAMES`] frames.
#[derive(Default)]
struct ChainTable {
    /// Every chain's frames, one chain after the other; a frame that stands for the
    /// sample's PC (`=`) holds 0 and its index is in `pcs`.
    frames: Vec<u64>,
    /// The indexes in `frames` of the `=` frames.
    pcs: Vec<u32>,
    /// Where each chain ends in `frames` and in `pcs` (it starts where the one before ends).
    ends: Vec<(u32, u32)>,
}

impl ChainTable {
    // k 0 -80 = -7eef5b80 +af5c7c
    /// Reads a `k` line into the table. An error leaves the table as it is mid-line: it
    /// ends the stream's reading.
    fn define(&mut self, l: &LineRef<'_>) -> Result<(), ParseError> {
        let (mut rest, id) = l.parse_prefix(l.text, preceded((tag("k"), space1), digit1), "'k ID FRAME...'")?;
        match id.parse::<usize>() {
            Ok(0) => {
                self.frames.clear();
                self.pcs.clear();
                self.ends.clear();
            }
            Ok(n) if n == self.ends.len() && n < MAX_CHAINS => {}
            Ok(n) if n == self.ends.len() => {
                return Err(l.error(
                    id,
                    format!("0: a table holds at most {MAX_CHAINS} chains, then `k 0` starts a new one"),
                ))
            }
            _ => {
                return Err(l.error(
                    id,
                    format!(
                        "chain id {} (the next; ids are given in order, once each) or 0 (a new table)",
                        self.ends.len()
                    ),
                ))
            }
        }
        let start = self.frames.len();
        let mut previous = 0u64;
        while !rest.trim().is_empty() {
            if self.frames.len() - start >= MAX_CHAIN_FRAMES {
                return Err(l.error(
                    rest,
                    format!("end of line: a chain has at most {MAX_CHAIN_FRAMES} frames"),
                ));
            }
            if self.frames.len() >= MAX_TABLE_FRAMES {
                return Err(l.error(
                    rest,
                    format!("end of line: the chain table holds at most {MAX_TABLE_FRAMES} frames, then `k 0` starts a new one"),
                ));
            }
            let (after, f) = l.parse_prefix(
                rest,
                preceded(space1, frame),
                "a frame: a hex address, +X or -X (the previous frame plus or minus hex X) or = (the sample's PC)",
            )?;
            rest = after;
            let address = match f {
                Frame::Pc => {
                    // Below MAX_TABLE_FRAMES, which fits.
                    self.pcs.push(self.frames.len() as u32);
                    self.frames.push(0);
                    continue;
                }
                Frame::At(a) => a,
                // Wrapping: any address follows from any other.
                Frame::Plus(d) => previous.wrapping_add(d),
                Frame::Minus(d) => previous.wrapping_sub(d),
            };
            previous = address;
            self.frames.push(address);
        }
        if self.frames.len() == start {
            return Err(l.error(rest, "at least one frame after the chain id"));
        }
        // Both below MAX_TABLE_FRAMES, which fits.
        self.ends.push((self.frames.len() as u32, self.pcs.len() as u32));
        Ok(())
    }

    /// The frames of the chain that `token` (`*ID`) names, if it is defined.
    fn chain(&self, token: &str) -> Option<(&[u64], &[u32], usize)> {
        let id = token.strip_prefix('*')?.parse::<usize>().ok()?;
        let (frames_end, pcs_end) = *self.ends.get(id)?;
        let (frames_start, pcs_start) = id.checked_sub(1).map_or((0, 0), |before| self.ends[before]);
        Some((
            &self.frames[frames_start as usize..frames_end as usize],
            &self.pcs[pcs_start as usize..pcs_end as usize],
            frames_start as usize,
        ))
    }
}

/// What reading a stream carries from line to line: its version, and for version 3 the
/// previous sample's time and the chain table; and the frames the samples may still hold.
struct Decoder {
    version: Version,
    time_ns: u64,
    table: ChainTable,
    frames_left: u64,
}

impl Decoder {
    /// The record of a line, or None for a `k` line.
    fn line(&mut self, l: &LineRef<'_>) -> Result<Option<Record>, ParseError> {
        let record = match (self.version, l.text.as_bytes().first()) {
            (Version::V3 | Version::V4 | Version::V5, Some(b'k')) => {
                self.table.define(l)?;
                return Ok(None);
            }
            (Version::V3 | Version::V4 | Version::V5, Some(b's')) => {
                let (delta, mut s, chain, owner) = l.parse_all(
                    l.text,
                    sample_v3,
                    "'s DTIME CPU PID TID MODE [@PERIOD] PC [*CHAIN] [%OWNER]' (DTIME the ns since the previous \
                     sample, hex PC, MODE k/u/h/gk/gu/?, OWNER t/k/o from version 5 on)",
                )?;
                if owner.is_some() && self.version < Version::V5 {
                    return Err(l.error(l.text, "no %OWNER before version 5 (upcmp-samples 5)"));
                }
                s.owner = owner;
                // Two's complement: the writer's wrapping difference.
                self.time_ns = self.time_ns.wrapping_add(delta as u64);
                s.time_ns = self.time_ns;
                if let Some(token) = chain {
                    let Some((frames, pcs, start)) = self.table.chain(token) else {
                        let defined = match self.table.ends.len() {
                            0 => "none is".to_string(),
                            n => format!("0 to {} are", n - 1),
                        };
                        return Err(l.error(
                            token,
                            format!("a chain defined by an earlier `k` line ({defined} defined)"),
                        ));
                    };
                    take_frames(&mut self.frames_left, l, frames.len())?;
                    s.callchain = frames.to_vec();
                    for &i in pcs {
                        s.callchain[i as usize - start] = s.pc;
                    }
                }
                Record::Sample(s)
            }
            _ => {
                let r = parse_line(l, self.version)?;
                if let Record::Sample(s) = &r {
                    take_frames(&mut self.frames_left, l, s.callchain.len())?;
                }
                r
            }
        };
        Ok(Some(record))
    }
}

/// Counts `n` more frames handed on against what is `left` of the caller's bound.
fn take_frames(left: &mut u64, l: &LineRef<'_>, n: usize) -> Result<(), ParseError> {
    match left.checked_sub(n as u64) {
        Some(still) => {
            *left = still;
            Ok(())
        }
        None => Err(l.error(
            l.text,
            "samples whose call chains hold fewer frames in all (the stream names more than its \
             size allows; it is damaged or not a stream uprun wrote)",
        )),
    }
}

/// Checks the first line of a samples stream and returns its version.
pub fn check_header(line: &str, file: &str) -> Result<Version, ParseError> {
    match line.trim_end() {
        HEADER => Ok(Version::V5),
        HEADER_V4 => Ok(Version::V4),
        HEADER_V3 => Ok(Version::V3),
        HEADER_V2 => Ok(Version::V2),
        HEADER_V1 => Ok(Version::V1),
        _ => Err(ParseError::at(
            file,
            1,
            line,
            line,
            format!("'{HEADER}' (is this an upcmp samples file?)"),
        )),
    }
}

/// The most frames the call chains of a stream of at most `text_bytes` bytes may hold in
/// all, for [`for_each_record`]: one a byte. A version 2 stream could not write out more (a
/// frame and its blank take two bytes at least); a version 3 stream names a chain in a few
/// bytes, so this bounds the work that a short stream naming a long chain many times can
/// cause. (`samples.gz` allows 100 bytes of text a compressed byte, at least 256 MiB: a
/// run's stream reaches the bound only when its chains are mostly several hundred frames
/// deep, past perf's default limit of 127.)
pub fn max_frames(text_bytes: u64) -> u64 {
    text_bytes
}

/// Reads a samples stream (header, then records) from `input`, calling `on_record` for
/// each record (each sample with its time and full call chain, whatever the version), in
/// bounded memory: at most [`MAX_LINE_BYTES`] a line and the chain table's bounds. The
/// samples' chains may hold at most `max_frames` frames in all (see [`max_frames`]).
/// `name` names the input in errors.
pub fn for_each_record<R: std::io::BufRead>(
    input: R,
    name: &str,
    max_frames: u64,
    mut on_record: impl FnMut(Record),
) -> Result<SamplesStats, ParseError> {
    let mut lines = LineReader::new(input, MAX_LINE_BYTES);
    let Some((_, first)) = lines.next_line(name)? else {
        return Err(ParseError::whole(name, "a samples stream, but it is empty"));
    };
    let mut decoder = Decoder {
        version: check_header(first.trim_end_matches(['\n', '\r']), name)?,
        time_ns: 0,
        table: ChainTable::default(),
        frames_left: max_frames,
    };
    let mut stats = SamplesStats::default();
    while let Some((number, text)) = lines.next_line(name)? {
        let text = text.strip_suffix('\n').unwrap_or(text);
        let text = text.strip_suffix('\r').unwrap_or(text);
        let l = LineRef {
            file: name,
            number,
            text,
        };
        let Some(record) = decoder.line(&l)? else {
            stats.chains += 1;
            continue;
        };
        let (record, cut) = bounded(&l, record)?;
        stats.records += 1;
        stats.truncated_names += u64::from(cut);
        if let Record::Sample(s) = &record {
            stats.frames += s.callchain.len() as u64;
        }
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
            owner: None,
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
        let stats = for_each_record(text.as_bytes(), "s.gz", u64::MAX, |r| got.push(r)).unwrap();
        assert_eq!((stats.records, stats.truncated_names), (3, 1));
        assert!(matches!(&got[0], Record::Comm { comm, .. } if comm.len() == crate::MAX_NAME_BYTES));
        assert_eq!(got[2], Record::Lost { cpu: 1, count: 7 });
        // 4 GiB without a newline once took 4.2 GB: now an error after MAX_LINE_BYTES.
        let header = format!("{HEADER}\n");
        let endless = std::io::BufReader::new(std::io::Read::chain(header.as_bytes(), std::io::repeat(b'7')));
        let e = for_each_record(endless, "s.gz", u64::MAX, |_| {}).unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.expected.contains("at most 4194304 bytes"), "{e}");
        let e = for_each_record(&b""[..], "s.gz", u64::MAX, |_| {}).unwrap_err();
        assert!(e.to_string().contains("empty"), "{e}");
        let e = for_each_record(&b"upcmp-samples 6\n"[..], "s.gz", u64::MAX, |_| {}).unwrap_err();
        assert_eq!(e.line, 1);
    }

    #[test]
    fn issue_30_kernel_code_records_are_read_from_version_4_on() {
        let text =
            format!("{HEADER}\ny ffffffffc0012000 1a4 1 + bpf_prog_6deef7357e7b4530_sd fw\nb 2 42 6deef7357e7b4530\n");
        let mut got = Vec::new();
        for_each_record(text.as_bytes(), "s", u64::MAX, |r| got.push(r)).unwrap();
        assert_eq!(
            got,
            [
                Record::Ksymbol(Ksymbol {
                    addr: 0xffffffffc0012000,
                    len: 0x1a4,
                    kind: KSYMBOL_TYPE_BPF,
                    unregister: false,
                    name: "bpf_prog_6deef7357e7b4530_sd fw".into(),
                }),
                Record::BpfEvent {
                    kind: 2,
                    id: 42,
                    tag: [0x6d, 0xee, 0xf7, 0x35, 0x7e, 0x7b, 0x45, 0x30],
                },
            ]
        );
        // A version 3 stream has none; a short tag or a sign missing is an error.
        let e = for_each_record(&b"upcmp-samples 3\nb 1 2 6deef7357e7b4530\n"[..], "s", u64::MAX, |_| {}).unwrap_err();
        assert!(e.expected.contains("s, k, c, f, l or t"), "{e}");
        for bad in ["b 1 2 6dee", "y ffffffffc0012000 1a4 1 bpf_prog_x"] {
            let e = for_each_record(format!("{HEADER}\n{bad}\n").as_bytes(), "s", u64::MAX, |_| {}).unwrap_err();
            assert_eq!(e.line, 2, "{bad}: {e}");
        }
    }

    #[test]
    fn issue_31_owners_are_read_from_version_5_on() {
        let v5 = format!(
            "{HEADER}\ns 5 0 7 7 u 401000 %t\ns 1 1 0 0 k ffffffff81000000 %k\ns 1 0 9 9 u 1 %o\ns 1 0 9 9 u 1\n"
        );
        let owners: Vec<Option<Owner>> = read(&v5)
            .unwrap()
            .iter()
            .map(|r| match r {
                Record::Sample(s) => s.owner,
                _ => panic!("{r:?}"),
            })
            .collect();
        assert_eq!(
            owners,
            [Some(Owner::Test), Some(Owner::Kernel), Some(Owner::Other), None]
        );
        let e = read(&format!("{HEADER_V4}\ns 5 0 7 7 u 401000 %t\n")).unwrap_err();
        assert!(e.to_string().contains("version 5"), "{e}");
        assert!(read(&format!("{HEADER}\ns 5 0 7 7 u 401000 %x\n")).is_err());
    }

    #[test]
    fn errors_are_located() {
        let e = parse_record("s 5 1 10 11 k zz", "f", 9).unwrap_err();
        assert_eq!((e.line, e.column), (9, 15));
        assert!(parse_record("x", "f", 1).is_err());
        assert!(parse_record("s 5 1 10", "f", 1).is_err());
        assert!(check_header("upcmp-samples 6", "f").is_err());
        assert_eq!(check_header(HEADER, "f"), Ok(Version::V5));
        assert_eq!(check_header(HEADER_V4, "f"), Ok(Version::V4));
        assert_eq!(check_header(HEADER_V3, "f"), Ok(Version::V3));
        assert_eq!(check_header(HEADER_V2, "f"), Ok(Version::V2));
        assert_eq!(check_header(HEADER_V1, "f"), Ok(Version::V1));
    }

    /// The records of a stream's text, or its error.
    fn read(text: &str) -> Result<Vec<Record>, ParseError> {
        let mut got = Vec::new();
        for_each_record(text.as_bytes(), "s", u64::MAX, |r| got.push(r))?;
        Ok(got)
    }

    fn chain_of(r: &Record) -> (u64, u64, &[u64]) {
        match r {
            Record::Sample(s) => (s.time_ns, s.pc, &s.callchain),
            other => panic!("not a sample: {other:?}"),
        }
    }

    #[test]
    fn version_3_chains_are_defined_once_and_named() {
        let text = "upcmp-samples 3\n\
                    k 0 ffffffffffffff80 = -7eef5b80 +af5c7c\n\
                    s 81234567890 1 4242 4242 k @1000000 ffffffff8110a2b0 *0\n\
                    c 4242 4242 dd\n\
                    s 250112 1 4242 4242 k @1000000 ffffffff8110a2c4 *0\n\
                    k 1 fffffffffffffe00 = 10 -10 -1 +0 = =\n\
                    s -112 0 7 7 u 401000 *1\n\
                    s 5 0 7 7 u 401001\n";
        let got = read(text).unwrap();
        assert_eq!(got.len(), 5);
        let kernel = |pc| vec![0xffffffffffffff80, pc, 0xffffffff8110a400, 0xffffffff81c0007c];
        assert_eq!(
            chain_of(&got[0]),
            (81234567890, 0xffffffff8110a2b0, &kernel(0xffffffff8110a2b0)[..])
        );
        assert_eq!(
            got[1],
            Record::Comm {
                pid: 4242,
                tid: 4242,
                comm: "dd".into()
            }
        );
        // The same chain under another PC; times add up.
        assert_eq!(
            chain_of(&got[2]),
            (81234818002, 0xffffffff8110a2c4, &kernel(0xffffffff8110a2c4)[..])
        );
        // `=` takes no part in the differences; they wrap below 0.
        let user = [
            0xfffffffffffffe00,
            0x401000,
            0x10,
            0,
            u64::MAX,
            u64::MAX,
            0x401000,
            0x401000,
        ];
        assert_eq!(chain_of(&got[3]), (81234817890, 0x401000, &user[..]));
        let Record::Sample(s) = &got[3] else { unreachable!() };
        assert_eq!((s.cpu, s.pid, s.tid, s.mode, s.period), (0, 7, 7, Mode::User, None));
        // A sample without a chain.
        assert_eq!(chain_of(&got[4]), (81234817895, 0x401001, &[][..]));
        let stats = for_each_record(text.as_bytes(), "s", u64::MAX, |_| {}).unwrap();
        assert_eq!((stats.records, stats.chains, stats.frames), (5, 2, 16));
        // Times wrap as the writer's differences do.
        let got = read("upcmp-samples 3\ns -1 0 1 1 k ff\ns 2 0 1 1 k ff\n").unwrap();
        assert_eq!((chain_of(&got[0]).0, chain_of(&got[1]).0), (u64::MAX, 1));
    }

    #[test]
    fn an_undefined_chain_is_an_error_naming_its_line() {
        let e = read("upcmp-samples 3\nt 0\ns 5 0 1 1 k ff *0\n").unwrap_err();
        assert_eq!((e.file.as_str(), e.line, e.column), ("s", 3, 16));
        assert!(
            e.expected.contains("defined by an earlier `k` line (none is defined)"),
            "{e}"
        );
        let e = read("upcmp-samples 3\nk 0 ff\nk 1 fe\ns 5 0 1 1 k ff *2\n").unwrap_err();
        assert_eq!((e.line, e.column), (4, 16));
        assert!(e.expected.contains("(0 to 1 are defined)"), "{e}");
        // An id past any number.
        let e = read("upcmp-samples 3\nk 0 ff\ns 5 0 1 1 k ff *99999999999999999999999\n").unwrap_err();
        assert_eq!((e.line, e.column), (3, 16));
    }

    #[test]
    fn ids_are_given_in_order_and_k_0_starts_a_new_table() {
        // Redefining an id, or skipping one, is an error: a line lost or doubled would
        // otherwise give samples another chain.
        for (text, column) in [
            ("upcmp-samples 3\nk 0 ff\nk 1 fe\nk 1 fd\n", 3),
            ("upcmp-samples 3\nk 0 ff\nk 2 fe\n", 3),
            ("upcmp-samples 3\nk 1 ff\n", 3),
            ("upcmp-samples 3\nk x ff\n", 3),
        ] {
            let e = read(text).unwrap_err();
            assert_eq!((e.line, e.column), (text.lines().count(), column), "{text}");
        }
        let e = read("upcmp-samples 3\nk 0 ff\nk 2 fe\n").unwrap_err();
        assert!(e.expected.contains("chain id 1 (the next"), "{e}");
        // `k 0` again: a new table, in which 1 is not defined any more.
        let text = "upcmp-samples 3\nk 0 ff\nk 1 fe\nk 0 aa\ns 1 0 1 1 k 1 *0\ns 1 0 1 1 k 1 *1\n";
        let e = read(text).unwrap_err();
        assert_eq!((e.line, e.column), (6, 15));
        let got = read(&text[..text.len() - 17]).unwrap();
        assert_eq!(chain_of(&got[0]).2, &[0xaa][..]);
    }

    #[test]
    fn chain_lines_are_checked() {
        for (line, column, expected) in [
            ("k 0", 4, "at least one frame"),
            ("k 0 ", 4, "at least one frame"),
            ("k 0 ff zz", 8, "a frame: a hex address"),
            ("k 0 ff +", 8, "a frame: a hex address"),
            ("k 0 ff -10000000000000000", 8, "a frame: a hex address"),
            ("k", 2, "'k ID FRAME...'"),
        ] {
            let e = read(&format!("upcmp-samples 3\n{line}\n")).unwrap_err();
            assert_eq!((e.line, e.column), (2, column), "{line}: {e}");
            assert!(e.expected.contains(expected), "{line}: {e}");
        }
        // A chain of MAX_CHAIN_FRAMES, then one longer.
        let long = format!("upcmp-samples 3\nk 0{}\n", " =".repeat(MAX_CHAIN_FRAMES));
        assert!(read(&long).is_ok());
        let e = read(&format!("{} =\n", long.trim_end())).unwrap_err();
        assert!(
            e.expected.contains(&format!("at most {MAX_CHAIN_FRAMES} frames")),
            "{e}"
        );
        assert_eq!(e.column, 4 + 2 * MAX_CHAIN_FRAMES);
    }

    #[test]
    fn the_chain_table_is_bounded() {
        // MAX_CHAINS chains, then one more is refused: a writer starts a new table.
        let mut text = String::from("upcmp-samples 3\n");
        for id in 0..MAX_CHAINS {
            text.push_str(&format!("k {id} =\n"));
        }
        assert_eq!(read(&text).unwrap(), []);
        let e = read(&format!("{text}k {MAX_CHAINS} =\n")).unwrap_err();
        assert_eq!(e.line, MAX_CHAINS + 2);
        assert!(e.expected.contains(&format!("at most {MAX_CHAINS} chains")), "{e}");
        assert!(read(&format!("{text}k 0 =\ns 1 0 1 1 k 1 *0\n")).is_ok());
        // MAX_TABLE_FRAMES frames in chains of MAX_CHAIN_FRAMES, then one frame more.
        let mut text = String::from("upcmp-samples 3\n");
        let chain = " 0".repeat(MAX_CHAIN_FRAMES);
        for id in 0..MAX_TABLE_FRAMES / MAX_CHAIN_FRAMES {
            text.push_str(&format!("k {id}{chain}\n"));
        }
        assert!(read(&text).is_ok());
        let e = read(&format!("{text}k {} 0\n", MAX_TABLE_FRAMES / MAX_CHAIN_FRAMES)).unwrap_err();
        assert!(
            e.expected.contains(&format!("at most {MAX_TABLE_FRAMES} frames")),
            "{e}"
        );
    }

    #[test]
    fn the_frames_handed_on_are_bounded() {
        // A chain of 1000 frames named 3 times in a few bytes: within 3000 frames, not 2999.
        let text = format!(
            "upcmp-samples 3\nk 0{}\n{}",
            " 0".repeat(1000),
            "s 1 0 1 1 k 1 *0\n".repeat(3)
        );
        let stats = for_each_record(text.as_bytes(), "s", 3000, |_| {}).unwrap();
        assert_eq!(stats.frames, 3000);
        let e = for_each_record(text.as_bytes(), "s", 2999, |_| {}).unwrap_err();
        assert_eq!((e.line, e.column), (5, 1));
        assert!(e.expected.contains("fewer frames in all"), "{e}");
        // The same bound holds for chains written out.
        let text = "upcmp-samples 2\ns 1 0 1 1 k 1 2 3\ns 1 0 1 1 k 1 2 3\n";
        assert!(for_each_record(text.as_bytes(), "s", 4, |_| {}).is_ok());
        assert_eq!(for_each_record(text.as_bytes(), "s", 3, |_| {}).unwrap_err().line, 3);
        assert_eq!(max_frames(1000), 1000);
    }

    #[test]
    fn each_version_reads_its_own_grammar() {
        // Chains written out, and absolute times, are versions 1 and 2; `k` and `*` are 3's.
        let e = read("upcmp-samples 3\ns 5 0 1 1 k ff fe\n").unwrap_err();
        assert_eq!((e.line, e.column, e.expected.as_str()), (2, 15, "end of line"));
        let e = read("upcmp-samples 2\nk 0 ff\n").unwrap_err();
        assert!(e.expected.contains("starting with s, c, f, l or t"), "{e}");
        let e = read("upcmp-samples 3\nx\n").unwrap_err();
        assert!(e.expected.contains("starting with s, k, c, f, l or t"), "{e}");
        let e = read("upcmp-samples 2\ns 5 0 1 1 k ff *0\n").unwrap_err();
        assert_eq!((e.line, e.column), (2, 15));
        let e = read("upcmp-samples 2\ns -5 0 1 1 k ff\n").unwrap_err();
        assert_eq!((e.line, e.column), (2, 3));
        for v in ["1", "2"] {
            let got = read(&format!("upcmp-samples {v}\ns 5 0 1 1 k ff fe ff\n")).unwrap();
            assert_eq!(chain_of(&got[0]), (5, 0xff, &[0xfe, 0xff][..]));
        }
        // A version 3 CPU number is checked as before.
        let e = read("upcmp-samples 3\ns 5 8192 1 1 k ff\n").unwrap_err();
        assert_eq!((e.line, e.column), (2, 5));
    }
}
