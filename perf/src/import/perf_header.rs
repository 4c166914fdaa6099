//! A perf.data file checked before `linux-perf-data` reads it: every size and offset of
//! its header, sections and records against the file's real length, and every count
//! inside the sections that the crate reads on opening against the bytes that hold it.
//! The crate trusts them and allocates what they say (a 1 TiB allocation aborts the
//! process; a count times an element size past `isize::MAX` panics), so a damaged or
//! crafted file must be refused here, with the byte offset of what is wrong.
//!
//! The layout is perf's `tools/perf/util/header.c` (file mode, and pipe mode written to a
//! file: a 16-byte header, then records, the metadata among them).

use super::ImportError;
use std::cell::RefCell;
use std::fs::File;
use std::io::{self, BufReader, Read, Seek, SeekFrom};
use std::path::Path;

/// `perf_file_header`: magic, size, attr_size, three sections, four words of features.
const FILE_HEADER_SIZE: u64 = 104;
/// The header of a pipe-mode stream: magic and size.
const PIPE_HEADER_SIZE: u64 = 16;
/// The first versions of `perf_event_attr` (PERF_ATTR_SIZE_VER0).
const ATTR_SIZE_MIN: u64 = 64;
/// No `perf_event_attr` is near this (version 8 is 136 bytes).
const ATTR_SIZE_MAX: u64 = 1 << 16;
// Linux's largest `NR_CPUS` (x86-64 and powerpc): the import makes a column per CPU.
use upcmp_parsers::MAX_CPUS;

const HEADER_NRCPUS: u32 = 7;
const HEADER_CMDLINE: u32 = 11;
const HEADER_EVENT_DESC: u32 = 12;
const HEADER_PMU_MAPPINGS: u32 = 16;
const PERF_RECORD_HEADER_FEATURE: u32 = 80;
/// `PERF_RECORD_AUXTRACE`, whose trace data follows the record outside its size.
pub(crate) const PERF_RECORD_AUXTRACE: u32 = 71;
/// pipe mode's `PERF_RECORD_HEADER_TRACING_DATA`: the tracepoints' formats follow it,
/// outside its size (`perf record -e TRACEPOINT -o -`).
pub(crate) const PERF_RECORD_HEADER_TRACING_DATA: u32 = 66;
pub(crate) const PERF_RECORD_COMPRESSED: u32 = 81;
pub(crate) const PERF_RECORD_COMPRESSED2: u32 = 83;
/// A header alone: the crate skips 8 bytes past it whatever its size says, so a larger
/// one would make it read the rest of its body as records.
pub(crate) const PERF_RECORD_FINISHED_ROUND: u32 = 68;

/// The byte order of the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endian {
    /// `PERFILE2`.
    Little,
    /// `2ELIFREP`.
    Big,
}

impl Endian {
    fn u32(self, b: &[u8]) -> u32 {
        let a = [b[0], b[1], b[2], b[3]];
        match self {
            Endian::Little => u32::from_le_bytes(a),
            Endian::Big => u32::from_be_bytes(a),
        }
    }

    fn u64(self, b: &[u8]) -> u64 {
        let a = [b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]];
        match self {
            Endian::Little => u64::from_le_bytes(a),
            Endian::Big => u64::from_be_bytes(a),
        }
    }

    fn u16(self, b: &[u8]) -> u16 {
        let a = [b[0], b[1]];
        match self {
            Endian::Little => u16::from_le_bytes(a),
            Endian::Big => u16::from_be_bytes(a),
        }
    }
}

/// Why a file is refused: what is wrong and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused(pub String);

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

fn refuse<T>(what: String) -> Result<T, Refused> {
    Err(Refused(what))
}

fn io_refused(e: io::Error) -> Refused {
    Refused(format!("reading it: {e}"))
}

/// What the check saw of a file's records: enough to choose, before reading any, which
/// reader reads them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Records {
    /// Where the data section starts and how many bytes it has (file mode).
    pub data: (u64, u64),
    /// Whether the records fill the data section exactly, each whole inside it.
    pub tiled: bool,
    /// Whether a record's contents lie outside its size or inside a compressed record:
    /// an AUXTRACE, COMPRESSED or COMPRESSED2 record.
    pub framed_apart: bool,
}

/// Opens the perf.data file `path` (a regular file) and checks it (see the module's
/// documentation), ready to be read from its start; returns what the check saw of its
/// records.
pub fn open_checked(path: &Path) -> Result<(File, Records), ImportError> {
    open_checked_as(path, true)
}

/// [`open_checked`] without the walk over a file's records: its header, sections and
/// features checked, its records taken to fill the data section with none framed apart.
/// For a reader that checks the records as it reads them, and gives up (for
/// [`open_checked`]) at the first that is not so. A stream is not walked either, and is
/// left to no reader (`Records::default()`).
pub fn open_header_checked(path: &Path) -> Result<(File, Records), ImportError> {
    open_checked_as(path, false)
}

fn open_checked_as(path: &Path, walk: bool) -> Result<(File, Records), ImportError> {
    let mut file = super::open_input(path).map_err(ImportError::io(path))?;
    let len = file.metadata().map_err(ImportError::io(path))?.len();
    let records = check_file_as(&mut file, len, walk).map_err(|Refused(reason)| ImportError::PerfData {
        path: path.to_path_buf(),
        reason,
    })?;
    file.seek(SeekFrom::Start(0)).map_err(ImportError::io(path))?;
    Ok((file, records))
}

thread_local! {
    /// The message of a panic caught by [`contained`] on this thread.
    static CAUGHT: RefCell<Option<Option<String>>> = const { RefCell::new(None) };
}

/// Runs `read` (which reads `path` with the perf.data crate), turning a panic inside it
/// into a clear error instead of a crash: what the checks above do not foresee in the
/// crate's reading of a damaged file. The panic is not printed.
pub fn contained<T>(path: &Path, read: impl FnOnce() -> Result<T, ImportError>) -> Result<T, ImportError> {
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let quiet = CAUGHT.with(|c| {
                let mut c = c.borrow_mut();
                match c.as_mut() {
                    Some(slot) => {
                        let msg = info
                            .payload()
                            .downcast_ref::<&str>()
                            .map(|s| s.to_string())
                            .or_else(|| info.payload().downcast_ref::<String>().cloned());
                        *slot = msg;
                        true
                    }
                    None => false,
                }
            });
            if !quiet {
                previous(info);
            }
        }));
    });
    CAUGHT.with(|c| *c.borrow_mut() = Some(None));
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(read));
    let message = CAUGHT.with(|c| c.borrow_mut().take()).flatten();
    result.unwrap_or_else(|_| {
        Err(ImportError::PerfData {
            path: path.to_path_buf(),
            reason: format!(
                "the perf.data reader failed on it ({}): the file is damaged or of a kind it does not know",
                message.as_deref().unwrap_or("no message")
            ),
        })
    })
}

/// What a file cut short most likely is.
const CUT_SHORT: &str = "(truncated? perf record still running?)";

/// A section (offset, size) that must lie inside a file of `len` bytes.
fn check_section(name: &str, at: u64, offset: u64, size: u64, len: u64) -> Result<(), Refused> {
    match offset.checked_add(size) {
        Some(end) if end <= len => Ok(()),
        _ => refuse(format!(
            "it stops at byte {len}, but the {name} section (described at byte {at}) claims {size} bytes at byte {offset} {CUT_SHORT}"
        )),
    }
}

/// Checks the perf.data file `file` of `len` bytes (see the module's documentation), and
/// says what it saw of the records.
pub fn check_file(file: &mut File, len: u64) -> Result<Records, Refused> {
    check_file_as(file, len, true)
}

fn check_file_as(file: &mut File, len: u64, walk: bool) -> Result<Records, Refused> {
    file.seek(SeekFrom::Start(0)).map_err(io_refused)?;
    let mut head = [0u8; FILE_HEADER_SIZE as usize];
    let n = read_up_to(file, &mut head).map_err(io_refused)?;
    if n < PIPE_HEADER_SIZE as usize {
        return refuse(format!("it stops at byte {n} in the middle of its header {CUT_SHORT}"));
    }
    let e = match &head[..8] {
        b"PERFILE2" => Endian::Little,
        b"2ELIFREP" => Endian::Big,
        _ => return refuse("it does not start with PERFILE2".into()),
    };
    let header_size = e.u64(&head[8..16]);
    if header_size == PIPE_HEADER_SIZE {
        // A stream's records are walked whenever it is checked: no reader checks them as
        // it goes. Unwalked, it is left as no reader's.
        if !walk {
            return Ok(Records::default());
        }
        return check_records(file, e, PIPE_HEADER_SIZE, len, true);
    }
    if (n as u64) < FILE_HEADER_SIZE {
        return refuse(format!("it stops at byte {n} in the middle of its header {CUT_SHORT}"));
    }
    if header_size < FILE_HEADER_SIZE || header_size > len {
        return refuse(format!(
            "its header size is {header_size} (byte 8), but a header has at least {FILE_HEADER_SIZE} bytes within the file's {len}"
        ));
    }
    let attr_size = e.u64(&head[16..24]);
    let section = |at: usize| (e.u64(&head[at..at + 8]), e.u64(&head[at + 8..at + 16]));
    let (attrs, data, event_types) = (section(24), section(40), section(56));
    check_section("attribute", 24, attrs.0, attrs.1, len)?;
    check_section("data", 40, data.0, data.1, len)?;
    check_section("event type", 56, event_types.0, event_types.1, len)?;
    if (attrs.1 > 0 || event_types.1 > 0) && !(ATTR_SIZE_MIN..=ATTR_SIZE_MAX).contains(&attr_size) {
        return refuse(format!(
            "its attribute size is {attr_size} (byte 16), not {ATTR_SIZE_MIN} to {ATTR_SIZE_MAX}"
        ));
    }
    // Each attribute, and each event type (an attribute followed by a section), ends with
    // the section of its event ids, which the crate reads.
    check_id_sections(file, e, "attribute", attrs, attr_size, len)?;
    check_id_sections(file, e, "event type", event_types, attr_size + 16, len)?;
    let features: Vec<u32> = (0..256u32)
        .filter(|bit| e.u64(&head[72 + (bit / 64) as usize * 8..][..8]) & (1u64 << (bit % 64)) != 0)
        .collect();
    // The table of feature sections follows the data section.
    let table = data.0 + data.1;
    check_section("feature table", 40, table, features.len() as u64 * 16, len)?;
    let mut raw = vec![0u8; features.len() * 16];
    file.seek(SeekFrom::Start(table)).map_err(io_refused)?;
    file.read_exact(&mut raw).map_err(io_refused)?;
    for (k, feature) in features.iter().enumerate() {
        let at = table + k as u64 * 16;
        let (offset, size) = (e.u64(&raw[k * 16..]), e.u64(&raw[k * 16 + 8..]));
        check_section(&format!("feature {feature}"), at, offset, size, len)?;
        if checked_feature(*feature) {
            let mut bytes = vec![0u8; size as usize];
            file.seek(SeekFrom::Start(offset)).map_err(io_refused)?;
            file.read_exact(&mut bytes).map_err(io_refused)?;
            check_feature(*feature, &bytes, e)
                .map_err(|Refused(why)| Refused(format!("{why} (feature {feature} at byte {offset})")))?;
            if *feature == HEADER_EVENT_DESC && attrs.1 > 0 {
                let mut section = vec![0u8; attrs.1 as usize];
                file.seek(SeekFrom::Start(attrs.0)).map_err(io_refused)?;
                file.read_exact(&mut section).map_err(io_refused)?;
                check_event_desc_agrees(&bytes, &section, attr_size, e)
                    .map_err(|Refused(why)| Refused(format!("{why} (feature {feature} at byte {offset})")))?;
            }
        }
    }
    if !walk {
        return Ok(Records {
            data,
            tiled: true,
            framed_apart: false,
        });
    }
    let mut records = check_records(file, e, data.0, data.0 + data.1, false)?;
    records.data = data;
    Ok(records)
}

fn read_up_to(r: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..])? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n)
}

/// The id sections at the end of each `entry`-byte entry of `section`.
fn check_id_sections(
    file: &mut File,
    e: Endian,
    name: &str,
    section: (u64, u64),
    entry: u64,
    len: u64,
) -> Result<(), Refused> {
    let (offset, size) = section;
    if size == 0 {
        return Ok(());
    }
    let count = size / entry;
    let mut raw = [0u8; 16];
    for k in 0..count {
        let at = offset + k * entry + entry - 16;
        file.seek(SeekFrom::Start(at)).map_err(io_refused)?;
        file.read_exact(&mut raw).map_err(io_refused)?;
        check_section(&format!("{name} {k} ids"), at, e.u64(&raw[..8]), e.u64(&raw[8..]), len)?;
    }
    Ok(())
}

/// The features whose contents the crate reads on opening, or the import asks for.
fn checked_feature(feature: u32) -> bool {
    matches!(
        feature,
        HEADER_NRCPUS | HEADER_CMDLINE | HEADER_EVENT_DESC | HEADER_PMU_MAPPINGS
    )
}

/// The `perf_event_attr` fields that decide how an event's records are laid out:
/// `sample_type`, `read_format` and the `sample_id_all` bit of its flags.
fn layout_of(attr: &[u8], e: Endian) -> [u64; 3] {
    [
        e.u64(&attr[24..32]),
        e.u64(&attr[32..40]),
        e.u64(&attr[40..48]) & (1 << 18),
    ]
}

/// Checks that the events of an EVENT_DESC feature (already checked by [`check_feature`])
/// are laid out as the attribute section's, entries of `entry` bytes: perf reads the
/// records by the attribute section, the crate by EVENT_DESC, so a file where they differ
/// would be read as two different recordings.
fn check_event_desc_agrees(desc: &[u8], attrs: &[u8], entry: u64, e: Endian) -> Result<(), Refused> {
    let described = event_desc_attributes(desc, e)?;
    let n = described.len() as u64;
    let count = attrs.len() as u64 / entry;
    if n != count {
        let events = |n: u64| {
            if n == 1 {
                "1 event".to_string()
            } else {
                format!("{n} events")
            }
        };
        return refuse(format!(
            "its EVENT_DESC feature describes {}, but its attribute section {}: the file is damaged",
            events(n),
            events(count)
        ));
    }
    for (k, attr) in described.into_iter().enumerate() {
        let ours = layout_of(attr, e);
        let theirs = layout_of(&attrs[k * entry as usize..], e);
        for (i, what) in ["sample format", "read format", "sample_id_all flag"]
            .iter()
            .enumerate()
        {
            if ours[i] != theirs[i] {
                return refuse(format!(
                    "its EVENT_DESC feature gives event {k} the {what} {:#x}, but its attribute section {:#x}: \
                     the file is damaged",
                    ours[i], theirs[i]
                ));
            }
        }
    }
    Ok(())
}

/// The attributes an EVENT_DESC feature describes, each count and length checked
/// against the bytes that follow it.
fn event_desc_attributes(bytes: &[u8], e: Endian) -> Result<Vec<&[u8]>, Refused> {
    let mut c = Cursor { bytes, at: 0, e };
    let n = c.u32("the number of events")?;
    let attr_size = u64::from(c.u32("the attribute size")?);
    if !(ATTR_SIZE_MIN..=ATTR_SIZE_MAX).contains(&attr_size) {
        return refuse(format!("an event attribute size of {attr_size}"));
    }
    if u64::from(n) * (attr_size + 8) > c.left() {
        return refuse(format!("{n} events do not fit in {} bytes", c.left()));
    }
    let mut attrs = Vec::with_capacity(n as usize);
    for _ in 0..n {
        attrs.push(c.take(attr_size, "an event attribute")?);
        let ids = c.u32("the number of event ids")?;
        c.string("an event name")?;
        c.take(u64::from(ids) * 8, "the event ids")?;
    }
    Ok(attrs)
}

/// Reads within one feature section, refusing any count or length past its end.
struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
    e: Endian,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: u64, what: &str) -> Result<&'a [u8], Refused> {
        let left = (self.bytes.len() - self.at) as u64;
        if n > left {
            return refuse(format!(
                "{what} needs {n} bytes at byte {} of a section of {}",
                self.at,
                self.bytes.len()
            ));
        }
        let s = &self.bytes[self.at..self.at + n as usize];
        self.at += n as usize;
        Ok(s)
    }

    fn u32(&mut self, what: &str) -> Result<u32, Refused> {
        let e = self.e;
        Ok(e.u32(self.take(4, what)?))
    }

    /// A `perf_header_string`: a length, then that many bytes.
    fn string(&mut self, what: &str) -> Result<(), Refused> {
        let n = self.u32(what)?;
        self.take(u64::from(n), what).map(|_| ())
    }

    fn left(&self) -> u64 {
        (self.bytes.len() - self.at) as u64
    }
}

/// Checks the contents of a feature section (or of a pipe-mode feature record): every
/// count against the bytes that follow it.
pub fn check_feature(feature: u32, bytes: &[u8], e: Endian) -> Result<(), Refused> {
    let mut c = Cursor { bytes, at: 0, e };
    match feature {
        HEADER_NRCPUS => {
            let _available = c.u32("the number of CPUs")?;
            let online = c.u32("the number of online CPUs")?;
            if online > MAX_CPUS {
                return refuse(format!("{online} online CPUs, more than Linux supports ({MAX_CPUS})"));
            }
        }
        HEADER_CMDLINE => {
            let n = c.u32("the number of command-line words")?;
            // Each word takes at least its 4-byte length.
            if u64::from(n) * 4 > c.left() {
                return refuse(format!("{n} command-line words do not fit in {} bytes", c.left()));
            }
            for _ in 0..n {
                c.string("a command-line word")?;
            }
        }
        HEADER_EVENT_DESC => {
            event_desc_attributes(bytes, e)?;
        }
        HEADER_PMU_MAPPINGS => {
            let n = c.u32("the number of PMUs")?;
            if u64::from(n) * 8 > c.left() {
                return refuse(format!("{n} PMUs do not fit in {} bytes", c.left()));
            }
            for _ in 0..n {
                c.u32("a PMU type")?;
                c.string("a PMU name")?;
            }
        }
        _ => {}
    }
    Ok(())
}

/// The feature a pipe-mode feature record is read as: the reader takes the low 32 bits of
/// its 64-bit type, so an EVENT_DESC record with high bits set is still parsed as one (a
/// stream with 2^48 + 12 made it allocate 738 MB).
fn feature_of_record(feature: u64) -> u32 {
    feature as u32
}

/// Walks the records from byte `start` to `end` (to the end of the file in pipe mode):
/// the size of an AUXTRACE record's trailing data is allocated by the crate, so it must
/// fit in what is left; in pipe mode, the feature records are checked as sections are.
fn check_records(file: &mut File, e: Endian, start: u64, end: u64, pipe: bool) -> Result<Records, Refused> {
    let end = if pipe {
        file.metadata().map_err(io_refused)?.len()
    } else {
        end
    };
    let mut r = BufReader::with_capacity(1 << 16, &mut *file);
    r.seek(SeekFrom::Start(start)).map_err(io_refused)?;
    let mut pos = start;
    let mut header = [0u8; 8];
    let mut body = Vec::new();
    let mut framed_apart = false;
    while pos + 8 <= end {
        r.read_exact(&mut header).map_err(io_refused)?;
        let (kind, size) = (e.u32(&header[..4]), u64::from(e.u16(&header[6..8])));
        if size < 8 {
            return refuse(format!(
                "the record at byte {pos} has a size of {size}, less than its header"
            ));
        }
        let body_len = size - 8;
        if pos + size > end {
            // A file cut short: the crate reports where it stops.
            return Ok(Records::default());
        }
        framed_apart |= matches!(
            kind,
            PERF_RECORD_AUXTRACE | PERF_RECORD_COMPRESSED | PERF_RECORD_COMPRESSED2
        );
        match kind {
            PERF_RECORD_AUXTRACE => {
                body.resize(body_len as usize, 0);
                r.read_exact(&mut body).map_err(io_refused)?;
                let aux = if body.len() >= 8 { e.u64(&body[..8]) } else { 0 };
                let left = end - pos - size;
                if aux > left {
                    return refuse(format!(
                        "the AUXTRACE record at byte {pos} claims {aux} bytes of trace, but {left} are left"
                    ));
                }
                r.seek_relative(aux as i64).map_err(io_refused)?;
                pos += size + aux;
                continue;
            }
            // The tracepoints' formats follow it outside its size (its first u32), padded to 8.
            PERF_RECORD_HEADER_TRACING_DATA if pipe && body_len >= 4 => {
                body.resize(body_len as usize, 0);
                r.read_exact(&mut body).map_err(io_refused)?;
                let data = u64::from(e.u32(&body[..4])).next_multiple_of(8);
                let left = end - pos - size;
                if data > left {
                    return Ok(Records::default());
                }
                r.seek_relative(data as i64).map_err(io_refused)?;
                pos += size + data;
                continue;
            }
            PERF_RECORD_HEADER_FEATURE if pipe => {
                body.resize(body_len as usize, 0);
                r.read_exact(&mut body).map_err(io_refused)?;
                if body.len() >= 8 {
                    check_feature(feature_of_record(e.u64(&body[..8])), &body[8..], e)
                        .map_err(|Refused(why)| Refused(format!("{why} (feature record at byte {pos})")))?;
                }
            }
            PERF_RECORD_FINISHED_ROUND if size != 8 => {
                return refuse(format!(
                    "the FINISHED_ROUND record at byte {pos} has a size of {size}; it is 8 bytes, a header alone"
                ));
            }
            _ => r.seek_relative(body_len as i64).map_err(io_refused)?,
        }
        pos += size;
    }
    Ok(Records {
        data: (start, end - start),
        tiled: pos == end,
        framed_apart,
    })
}

/// The largest AUXTRACE trace a stream may announce: the reader allocates it whole, and a
/// stream has no length to check it against (an Intel PT AUX area is a few MiB).
pub const AUX_STREAM_CAP: u64 = 1 << 30;

/// Follows a pipe-mode stream (`perf record -o -`) record by record as its bytes pass, and
/// refuses, before the reader parses them, what a file's length would have refused: a
/// feature record whose counts do not fit in it, an AUXTRACE record announcing more than
/// [`AUX_STREAM_CAP`] of trace.
#[derive(Debug, Clone)]
pub struct StreamCheck {
    e: Endian,
    /// Bytes passed.
    pos: u64,
    /// Where the current record (with its trace) ends.
    record_end: u64,
    header: [u8; 8],
    have: usize,
    kind: u32,
    /// Where the current record started, for messages.
    record_start: u64,
    /// The body bytes kept of the current record, and how many are wanted.
    body: Vec<u8>,
    want: usize,
}

impl StreamCheck {
    /// A check of a stream whose 16-byte header has not passed yet.
    pub fn new(big_endian: bool) -> Self {
        StreamCheck {
            e: if big_endian { Endian::Big } else { Endian::Little },
            pos: 0,
            record_end: PIPE_HEADER_SIZE,
            header: [0; 8],
            have: 0,
            kind: 0,
            record_start: 0,
            body: Vec::new(),
            want: 0,
        }
    }

    /// Follows `data`, the next bytes of the stream.
    pub fn pass(&mut self, mut data: &[u8]) -> Result<(), Refused> {
        while !data.is_empty() {
            if self.pos < self.record_end {
                let k = (self.record_end - self.pos).min(data.len() as u64) as usize;
                let keep = (self.want - self.body.len()).min(k);
                self.body.extend_from_slice(&data[..keep]);
                self.pos += k as u64;
                data = &data[k..];
                if self.want > 0 && self.body.len() == self.want {
                    self.want = 0;
                    self.record_complete()?;
                }
                continue;
            }
            let k = (8 - self.have).min(data.len());
            self.header[self.have..self.have + k].copy_from_slice(&data[..k]);
            self.have += k;
            self.pos += k as u64;
            data = &data[k..];
            if self.have < 8 {
                continue;
            }
            self.have = 0;
            self.record_start = self.pos - 8;
            self.kind = self.e.u32(&self.header[..4]);
            let size = u64::from(self.e.u16(&self.header[6..8]));
            if size < 8 {
                return refuse(format!(
                    "the record at byte {} has a size of {size}, less than its header",
                    self.record_start
                ));
            }
            self.record_end = self.record_start + size;
            self.body.clear();
            let body = (size - 8) as usize;
            self.want = match self.kind {
                PERF_RECORD_HEADER_FEATURE => body,
                PERF_RECORD_AUXTRACE => body.min(8),
                _ => 0,
            };
        }
        Ok(())
    }

    fn record_complete(&mut self) -> Result<(), Refused> {
        let at = self.record_start;
        if self.body.len() < 8 {
            return Ok(());
        }
        let first = self.e.u64(&self.body[..8]);
        match self.kind {
            PERF_RECORD_HEADER_FEATURE => check_feature(feature_of_record(first), &self.body[8..], self.e)
                .map_err(|Refused(why)| Refused(format!("{why} (feature record at byte {at})"))),
            PERF_RECORD_AUXTRACE if first > AUX_STREAM_CAP => refuse(format!(
                "the AUXTRACE record at byte {at} announces {first} bytes of trace, more than the {} a stream may carry",
                crate::fsio::human_bytes(AUX_STREAM_CAP)
            )),
            // The trace follows the record, outside its size.
            PERF_RECORD_AUXTRACE => {
                self.record_end += first;
                Ok(())
            }
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn le_header(attr_size: u64, attrs: (u64, u64), data: (u64, u64), features: u64) -> Vec<u8> {
        let mut h = b"PERFILE2".to_vec();
        for v in [
            FILE_HEADER_SIZE,
            attr_size,
            attrs.0,
            attrs.1,
            data.0,
            data.1,
            0,
            0,
            features,
            0,
            0,
            0,
        ] {
            h.extend_from_slice(&v.to_le_bytes());
        }
        h
    }

    fn check_bytes(bytes: &[u8]) -> Result<(), Refused> {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("x.data");
        crate::fsio::write_atomic(&p, bytes, 0o644).unwrap();
        let mut f = File::open(&p).unwrap();
        check_file(&mut f, bytes.len() as u64).map(|_| ())
    }

    #[test]
    fn sections_past_the_end_are_refused() {
        // A data section that ends past the file, a feature table that does.
        let h = le_header(136, (104, 0), (104, 1 << 40), 0);
        let e = check_bytes(&h).unwrap_err().0;
        assert!(e.contains("the data section (described at byte 40)"), "{e}");
        let h = le_header(136, (104, 0), (104, 0), 1 << HEADER_EVENT_DESC);
        let e = check_bytes(&h).unwrap_err().0;
        assert!(e.contains("the feature table section"), "{e}");
        // An attribute size of zero would divide by zero in the crate.
        let mut h = le_header(0, (104, 8), (112, 0), 0);
        h.extend_from_slice(&[0; 8]);
        let e = check_bytes(&h).unwrap_err().0;
        assert!(e.contains("attribute size is 0"), "{e}");
    }

    #[test]
    fn counts_inside_features_must_fit() {
        let e = Endian::Little;
        // 2^32 - 1 events, each at least 72 bytes, in 8 bytes.
        let mut desc = u32::MAX.to_le_bytes().to_vec();
        desc.extend_from_slice(&136u32.to_le_bytes());
        let err = check_feature(HEADER_EVENT_DESC, &desc, e).unwrap_err().0;
        assert!(err.contains("4294967295 events do not fit in 0 bytes"), "{err}");
        // A command line of 2^31 words.
        let err = check_feature(HEADER_CMDLINE, &(1u32 << 31).to_le_bytes(), e)
            .unwrap_err()
            .0;
        assert!(err.contains("command-line words do not fit"), "{err}");
        // A string longer than what follows it.
        let mut cmd = 1u32.to_le_bytes().to_vec();
        cmd.extend_from_slice(&1000u32.to_le_bytes());
        cmd.extend_from_slice(b"perf");
        assert!(check_feature(HEADER_CMDLINE, &cmd, e).is_err());
        let mut cpus = 4u32.to_le_bytes().to_vec();
        cpus.extend_from_slice(&100_000_000u32.to_le_bytes());
        assert!(check_feature(HEADER_NRCPUS, &cpus, e).is_err());
        // Well-formed contents pass.
        let mut cmd = 2u32.to_le_bytes().to_vec();
        for w in ["perf", "record"] {
            cmd.extend_from_slice(&(w.len() as u32).to_le_bytes());
            cmd.extend_from_slice(w.as_bytes());
        }
        assert!(check_feature(HEADER_CMDLINE, &cmd, e).is_ok());
    }

    #[test]
    fn event_desc_must_lay_events_out_as_the_attribute_section() {
        let e = Endian::Little;
        // An attribute of 64 bytes with its sample type, read format and flags.
        let attr = |sample_type: u64, read_format: u64, flags: u64| {
            let mut a = vec![0u8; 64];
            a[24..32].copy_from_slice(&sample_type.to_le_bytes());
            a[32..40].copy_from_slice(&read_format.to_le_bytes());
            a[40..48].copy_from_slice(&flags.to_le_bytes());
            a
        };
        // The attribute section's entries: an attribute and its ids section (16 bytes).
        let section = |attrs: &[Vec<u8>]| {
            attrs
                .iter()
                .flat_map(|a| [a.clone(), vec![0; 16]])
                .flatten()
                .collect::<Vec<u8>>()
        };
        // EVENT_DESC: the count, the attribute size, then each attribute, no ids, a name.
        let desc = |attrs: &[Vec<u8>]| {
            let mut d = (attrs.len() as u32).to_le_bytes().to_vec();
            d.extend_from_slice(&64u32.to_le_bytes());
            for a in attrs {
                d.extend_from_slice(a);
                d.extend_from_slice(&0u32.to_le_bytes());
                d.extend_from_slice(&4u32.to_le_bytes());
                d.extend_from_slice(b"ev\0\0");
            }
            d
        };
        let one = [attr(0x127, 0x14, 1 << 18 | 3)];
        // Flags other than sample_id_all may differ; the layout may not.
        let alike = [attr(0x127, 0x14, 1 << 18)];
        assert!(check_event_desc_agrees(&desc(&alike), &section(&one), 80, e).is_ok());
        let err = check_event_desc_agrees(&desc(&[attr(0x127, 0x1c, 1 << 18)]), &section(&one), 80, e)
            .unwrap_err()
            .0;
        assert!(
            err.contains("event 0 the read format 0x1c, but its attribute section 0x14"),
            "{err}"
        );
        let err = check_event_desc_agrees(&desc(&[attr(0x127, 0x14, 0)]), &section(&one), 80, e)
            .unwrap_err()
            .0;
        assert!(
            err.contains("the sample_id_all flag 0x0, but its attribute section 0x40000"),
            "{err}"
        );
        let two = [one[0].clone(), attr(0x127, 0x14, 1 << 18)];
        let err = check_event_desc_agrees(&desc(&one), &section(&two), 80, e)
            .unwrap_err()
            .0;
        assert!(
            err.contains("describes 1 event, but its attribute section 2 events"),
            "{err}"
        );
    }

    /// A record of `kind` with `body`, little-endian.
    fn record(kind: u32, body: &[u8]) -> Vec<u8> {
        let mut r = kind.to_le_bytes().to_vec();
        r.extend_from_slice(&0u16.to_le_bytes());
        r.extend_from_slice(&(8 + body.len() as u16).to_le_bytes());
        r.extend_from_slice(body);
        r
    }

    #[test]
    fn a_stream_is_checked_as_it_passes() {
        let mut stream = b"PERFILE2".to_vec();
        stream.extend_from_slice(&16u64.to_le_bytes());
        // An AUXTRACE record with 3 bytes of trace after it, then a sound feature record.
        let mut aux = 3u64.to_le_bytes().to_vec();
        aux.extend_from_slice(&[0; 32]);
        stream.extend(record(PERF_RECORD_AUXTRACE, &aux));
        stream.extend_from_slice(b"xyz");
        let mut cpus = u64::from(HEADER_NRCPUS).to_le_bytes().to_vec();
        cpus.extend_from_slice(&[2, 0, 0, 0, 2, 0, 0, 0]);
        stream.extend(record(PERF_RECORD_HEADER_FEATURE, &cpus));
        // Fed a byte at a time, or whole: the same verdict.
        let mut c = StreamCheck::new(false);
        for b in &stream {
            c.pass(std::slice::from_ref(b)).unwrap();
        }
        StreamCheck::new(false).pass(&stream).unwrap();
        // 2^32 - 1 events announced in a feature record of 8 bytes.
        let mut desc = u64::from(HEADER_EVENT_DESC).to_le_bytes().to_vec();
        desc.extend_from_slice(&u32::MAX.to_le_bytes());
        desc.extend_from_slice(&136u32.to_le_bytes());
        let mut bad = stream.clone();
        let at = bad.len();
        bad.extend(record(PERF_RECORD_HEADER_FEATURE, &desc));
        let e = StreamCheck::new(false).pass(&bad).unwrap_err().0;
        assert!(
            e.contains(&format!(
                "4294967295 events do not fit in 0 bytes (feature record at byte {at})"
            )),
            "{e}"
        );
        // The same with high bits in the feature's type: the reader takes its low 32 bits.
        let mut high = desc.clone();
        high[..8].copy_from_slice(&((1u64 << 48) + u64::from(HEADER_EVENT_DESC)).to_le_bytes());
        let mut bad = stream.clone();
        bad.extend(record(PERF_RECORD_HEADER_FEATURE, &high));
        let e = StreamCheck::new(false).pass(&bad).unwrap_err().0;
        assert!(e.contains("4294967295 events do not fit"), "{e}");
        // A trace of 1 TiB announced.
        let mut huge = (1u64 << 40).to_le_bytes().to_vec();
        huge.extend_from_slice(&[0; 32]);
        let mut bad = stream;
        bad.extend(record(PERF_RECORD_AUXTRACE, &huge));
        let e = StreamCheck::new(false).pass(&bad).unwrap_err().0;
        assert!(e.contains("announces 1099511627776 bytes of trace"), "{e}");
    }

    #[test]
    fn a_panic_in_the_reader_becomes_an_error() {
        let p = Path::new("x.data");
        let e = contained::<()>(p, || panic!("capacity overflow"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("x.data: not a readable perf.data file: the perf.data reader failed on it (capacity overflow)"),
            "{e}"
        );
        // Outside, panics are as they were.
        assert!(std::panic::catch_unwind(|| panic!("elsewhere")).is_err());
        assert_eq!(contained(p, || Ok(3)).unwrap(), 3);
    }

    #[test]
    fn an_auxtrace_record_may_not_claim_more_than_the_file_holds() {
        let mut rec = Vec::new();
        rec.extend_from_slice(&PERF_RECORD_AUXTRACE.to_le_bytes());
        rec.extend_from_slice(&0u16.to_le_bytes());
        rec.extend_from_slice(&48u16.to_le_bytes());
        rec.extend_from_slice(&(1u64 << 40).to_le_bytes());
        rec.extend_from_slice(&[0; 32]);
        let mut h = le_header(136, (104, 0), (104, rec.len() as u64), 0);
        h.extend_from_slice(&rec);
        let e = check_bytes(&h).unwrap_err().0;
        assert!(
            e.contains("the AUXTRACE record at byte 104 claims 1099511627776 bytes"),
            "{e}"
        );
    }
}
