//! Pipe mode's framing (`perf record -o -`): the records of a stream are found one after
//! another by their sizes, the tracing data that follows a `HEADER_TRACING_DATA` record
//! outside its size is taken out (its event formats name the tracepoints), and what the
//! crate's reader is given is only whole records.

use super::perf_header::{PERF_RECORD_AUXTRACE, PERF_RECORD_HEADER_TRACING_DATA};
use std::cell::Cell;
use std::collections::HashMap;
use std::io::{Cursor, Read};
use std::rc::Rc;

/// The size of pipe mode's header (magic and size), which a file's header is larger than.
pub(super) const PIPE_HEADER_SIZE: u64 = 16;

/// The most bytes of a stream's tracing data kept to name its tracepoints: the event
/// formats come first, before the kallsyms and printk formats perf adds.
pub(super) const TRACING_DATA_KEPT: u64 = 16 << 20;

/// The tracepoints' names (`sched:sched_switch`) by id, from a pipe-mode stream's tracing
/// data (perf's `trace-event-read.c`): its magic and version, the header page and event
/// files, the ftrace formats, then per system its name and its events' formats, each
/// holding `name: NAME` and `ID: N`. Empty for data of another shape.
pub(super) fn tracepoint_names(d: &[u8]) -> HashMap<u64, String> {
    let mut names = HashMap::new();
    let _ = read_tracing_formats(d, &mut names);
    names
}

pub(super) fn read_tracing_formats(d: &[u8], names: &mut HashMap<u64, String>) -> Option<()> {
    let mut c = Cursor::new(d);
    let take = |c: &mut Cursor<&[u8]>, n: u64| -> Option<&[u8]> {
        let at = usize::try_from(c.position()).ok()?;
        let end = at.checked_add(usize::try_from(n).ok()?)?;
        c.set_position(end as u64);
        d.get(at..end)
    };
    let cstr = |c: &mut Cursor<&[u8]>| -> Option<String> {
        let at = usize::try_from(c.position()).ok()?;
        let len = d.get(at..)?.iter().position(|&b| b == 0)?;
        c.set_position((at + len + 1) as u64);
        Some(String::from_utf8_lossy(&d[at..at + len]).into_owned())
    };
    if take(&mut c, 10)? != b"\x17\x08\x44tracing" {
        return None;
    }
    cstr(&mut c)?; // version
    let big = take(&mut c, 1)?[0] != 0;
    take(&mut c, 1 + 4)?; // long size, page size
    let u32_ = |c: &mut Cursor<&[u8]>| -> Option<u64> {
        let b: [u8; 4] = take(c, 4)?.try_into().ok()?;
        Some(u64::from(if big {
            u32::from_be_bytes(b)
        } else {
            u32::from_le_bytes(b)
        }))
    };
    let u64_ = |c: &mut Cursor<&[u8]>| -> Option<u64> {
        let b: [u8; 8] = take(c, 8)?.try_into().ok()?;
        Some(if big {
            u64::from_be_bytes(b)
        } else {
            u64::from_le_bytes(b)
        })
    };
    for header in ["header_page", "header_event"] {
        if cstr(&mut c)? != header {
            return None;
        }
        let n = u64_(&mut c)?;
        take(&mut c, n)?;
    }
    for _ in 0..u32_(&mut c)? {
        let n = u64_(&mut c)?;
        take(&mut c, n)?;
    }
    for _ in 0..u32_(&mut c)? {
        let system = cstr(&mut c)?;
        for _ in 0..u32_(&mut c)? {
            let n = u64_(&mut c)?;
            let format = String::from_utf8_lossy(take(&mut c, n)?);
            let field = |key: &str| format.lines().find_map(|l| l.strip_prefix(key)).map(str::trim);
            if let (Some(name), Some(id)) = (field("name: "), field("ID: ").and_then(|i| i.parse().ok())) {
                names.insert(id, format!("{system}:{name}"));
            }
        }
    }
    Some(())
}

/// Where a pipe-mode stream's records begin and end, followed as its bytes pass. The
/// reader takes the end of the input for the end of the recording wherever it comes; this
/// tells a stream cut inside a record (copied while `perf record` still wrote it) from a
/// whole one.
#[derive(Debug, Clone, Copy)]
pub(super) struct Framing {
    /// Bytes passed.
    pub(super) pos: u64,
    /// Where the current record ends (the next one's header starts).
    pub(super) record_end: u64,
    /// The next record's header, as far as it has passed.
    pub(super) header: [u8; 8],
    pub(super) have: usize,
    pub(super) big_endian: bool,
    /// Whether the input has ended.
    pub(super) ended: bool,
    /// An AUXTRACE record carries data beyond its size: the framing is no longer known.
    pub(super) lost: bool,
}

impl Framing {
    pub(super) fn new(first_record: u64, big_endian: bool) -> Self {
        Framing {
            pos: 0,
            record_end: first_record,
            header: [0; 8],
            have: 0,
            big_endian,
            ended: false,
            lost: false,
        }
    }

    /// Follows the bytes `data`, the next ones of the stream.
    pub(super) fn pass(&mut self, mut data: &[u8]) {
        while !data.is_empty() {
            if self.lost {
                self.pos += data.len() as u64;
                return;
            }
            if self.pos < self.record_end {
                let k = (self.record_end - self.pos).min(data.len() as u64) as usize;
                self.pos += k as u64;
                data = &data[k..];
                continue;
            }
            // A record header: type (u32), misc (u16), size (u16, header included).
            let k = (8 - self.have).min(data.len());
            self.header[self.have..self.have + k].copy_from_slice(&data[..k]);
            self.have += k;
            self.pos += k as u64;
            data = &data[k..];
            if self.have == 8 {
                let (ty, size) = if self.big_endian {
                    (
                        u32::from_be_bytes(self.header[..4].try_into().expect("4 bytes")),
                        u16::from_be_bytes([self.header[6], self.header[7]]),
                    )
                } else {
                    (
                        u32::from_le_bytes(self.header[..4].try_into().expect("4 bytes")),
                        u16::from_le_bytes([self.header[6], self.header[7]]),
                    )
                };
                self.lost = ty == PERF_RECORD_AUXTRACE;
                self.record_end = self.pos - 8 + u64::from(size.max(8));
                self.have = 0;
            }
        }
    }

    /// Where the input stopped inside a record, if it did.
    pub(super) fn cut_at(&self) -> Option<u64> {
        (self.ended && !self.lost && (self.have > 0 || self.pos < self.record_end)).then_some(self.pos)
    }
}

/// A pipe-mode stream without the tracing data that follows a
/// `PERF_RECORD_HEADER_TRACING_DATA` record (its `size`, padded to 8 bytes), skipped as
/// perf skips it: the reader knows no such record and would take the data for records.
/// Its first bytes are kept: a stream that names no event names its tracepoints there.
/// Past an AUXTRACE record, whose trace also follows it, the stream is passed as it is.
pub(super) struct WithoutTracingData<R> {
    pub(super) inner: R,
    pub(super) big_endian: bool,
    /// The tracing data's first [`TRACING_DATA_KEPT`] bytes, for [`tracepoint_names`].
    pub(super) tracing: Rc<std::cell::RefCell<Vec<u8>>>,
    /// Bytes of the current record (at first, the stream's header) still to pass.
    pub(super) left: u64,
    /// A record's start, read to see its type, and how much of it is handed out.
    pub(super) pending: Vec<u8>,
    pub(super) served: usize,
    /// The framing is no longer followed.
    pub(super) lost: bool,
}

impl<R: Read> WithoutTracingData<R> {
    pub(super) fn new(inner: R, big_endian: bool, tracing: Rc<std::cell::RefCell<Vec<u8>>>) -> Self {
        WithoutTracingData {
            inner,
            big_endian,
            tracing,
            left: PIPE_HEADER_SIZE,
            pending: Vec::new(),
            served: 0,
            lost: false,
        }
    }

    /// Reads up to `n` more bytes into `pending`; whether all came.
    pub(super) fn pend(&mut self, n: usize) -> std::io::Result<bool> {
        let want = self.pending.len() + n;
        (&mut self.inner).take(n as u64).read_to_end(&mut self.pending)?;
        Ok(self.pending.len() == want)
    }

    pub(super) fn u32_at(&self, at: usize) -> u32 {
        let b: [u8; 4] = self.pending[at..at + 4].try_into().expect("4 bytes");
        if self.big_endian {
            u32::from_be_bytes(b)
        } else {
            u32::from_le_bytes(b)
        }
    }

    /// Reads the next record's header (and a tracing-data record's body, skipping the
    /// data after it) into `pending`.
    pub(super) fn next_record(&mut self) -> std::io::Result<()> {
        self.pending.clear();
        self.served = 0;
        if !self.pend(8)? {
            // The end of the stream, or a cut header: handed out as it is.
            self.lost = true;
            return Ok(());
        }
        let size_bytes = [self.pending[6], self.pending[7]];
        let size = match self.big_endian {
            true => u16::from_be_bytes(size_bytes),
            false => u16::from_le_bytes(size_bytes),
        };
        let size = u64::from(size).max(8);
        let kind = self.u32_at(0);
        self.left = size - 8;
        match kind {
            PERF_RECORD_HEADER_TRACING_DATA if size >= 12 => {
                if !self.pend((size - 8) as usize)? {
                    self.lost = true;
                    return Ok(());
                }
                self.left = 0;
                let data = u64::from(self.u32_at(8)).next_multiple_of(8);
                let mut kept = self.tracing.borrow_mut();
                kept.clear();
                let mut skipped = (&mut self.inner)
                    .take(data.min(TRACING_DATA_KEPT))
                    .read_to_end(&mut kept)? as u64;
                skipped += std::io::copy(&mut (&mut self.inner).take(data - skipped), &mut std::io::sink())?;
                if skipped < data {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::UnexpectedEof,
                        "the stream stops inside its tracing data (truncated?)",
                    ));
                }
            }
            PERF_RECORD_AUXTRACE => self.lost = true,
            _ => {}
        }
        Ok(())
    }
}

impl<R: Read> Read for WithoutTracingData<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            if self.served < self.pending.len() {
                let n = (self.pending.len() - self.served).min(buf.len());
                buf[..n].copy_from_slice(&self.pending[self.served..self.served + n]);
                self.served += n;
                return Ok(n);
            }
            if self.lost {
                return self.inner.read(buf);
            }
            if self.left > 0 {
                let want = buf.len().min(usize::try_from(self.left).unwrap_or(usize::MAX));
                let n = self.inner.read(&mut buf[..want])?;
                self.left -= n as u64;
                return Ok(n);
            }
            self.next_record()?;
        }
    }
}

/// A stream whose framing is followed ([`Framing`]).
pub(super) struct Framed<R> {
    pub(super) inner: R,
    pub(super) state: Rc<Cell<Framing>>,
    /// What a stream may not announce, refused before the reader parses it.
    pub(super) check: super::perf_header::StreamCheck,
}

impl<R: Read> Read for Framed<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.check
            .pass(&buf[..n])
            .map_err(|r| std::io::Error::new(std::io::ErrorKind::InvalidData, r.0))?;
        let mut s = self.state.get();
        s.ended |= n == 0 && !buf.is_empty();
        s.pass(&buf[..n]);
        self.state.set(s);
        Ok(n)
    }
}
