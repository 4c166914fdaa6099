//! The records of a perf.data file written to a file (`perf record -o FILE`), read in
//! large chunks and handed out in place, in the order `linux-perf-data` hands them out;
//! and samples parsed for the fields the import uses only.
//!
//! The crate copies each record into a buffer of its own, orders them in rounds and
//! parses every field of a sample; that was a third of an import's time. This reader
//! keeps the crate's order exactly (so a profile and its stacks come out the same,
//! [`super::perf_data::read_with_crate`] being the check), and leaves it the rest: the
//! header and its features, the parsing of every record but a sample, and any sample of
//! a format it does not know. It reads only files the check of
//! [`super::perf_header`] found whole and plainly framed: little-endian, records
//! that fill the data section exactly, no AUXTRACE or compressed records, not written by
//! simpleperf ([`eligible`]); the others are read by the crate from the start.
//!
//! The order (`linux-perf-data`'s `file_reader.rs` and `sorter.rs`): each record has the
//! key (timestamp, file offset). A sample's timestamp is its `PERF_SAMPLE_TIME`, another
//! kernel record's is the `sample_id_all` trailer's; records without one (and perf's own
//! records, type 64 and up) have none, which sorts before every timestamp. At each
//! `FINISHED_ROUND` (type 68) the records whose key is at most the largest key seen
//! before the previous `FINISHED_ROUND` are handed out, sorted by key; at the end of the
//! data, all the rest. The file offset makes every key distinct, so the sort needs no
//! stability: records of equal timestamps come out in file order, as the crate's do.
//!
//! Over 1,000 lines with its unit tests; the code alone is under 1,000.

use super::perf_header::Records;
use crate::model::mode::Mode;
use linux_perf_data::linux_perf_event_reader::{
    AttrFlags, CpuMode, Endianness, RawData, RawDataU64, RawEventRecord, RecordIdParseInfo, RecordParseInfo,
    RecordType, Regs, SampleFormat,
};
use linux_perf_data::{Feature, PerfFile};
use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::FileExt;

/// How many bytes a read asks for: large enough that reading costs little per record,
/// small enough that two imports side by side keep their memory low.
const CHUNK: usize = 4 << 20;

/// `PERF_RECORD_FINISHED_ROUND`: every record before it that the next round cannot
/// precede may be handed out.
const FINISHED_ROUND: u32 = super::perf_header::PERF_RECORD_FINISHED_ROUND;

/// Records whose contents lie outside their size or inside them compressed.
const FRAMED_APART: [u32; 3] = [
    super::perf_header::PERF_RECORD_AUXTRACE,
    super::perf_header::PERF_RECORD_COMPRESSED,
    super::perf_header::PERF_RECORD_COMPRESSED2,
];

/// perf's own record types start here; they carry no attribute and no timestamp.
const USER_TYPE_START: u32 = 64;

/// The fields of a sample the import uses.
#[derive(Debug, Clone)]
pub(crate) struct Sample<'a> {
    pub(crate) ip: Option<u64>,
    pub(crate) pid: Option<i32>,
    pub(crate) tid: Option<i32>,
    pub(crate) timestamp: Option<u64>,
    pub(crate) cpu: Option<u32>,
    pub(crate) period: Option<u64>,
    pub(crate) mode: Mode,
    /// The call chain, leaf first, as the file has it.
    pub(crate) callchain: Option<Chain<'a>>,
    /// The `READ` values' bytes (`PERF_SAMPLE_READ`), in the kernel's layout, when this
    /// reader read the sample ([`read_values`]).
    pub(crate) read: Option<&'a [u8]>,
    /// The user registers and the used part of the user stack copied at the sample
    /// (`--call-graph dwarf`), for unwinding.
    pub(crate) user_regs: Option<Regs<'a>>,
    pub(crate) user_stack: Option<RawData<'a>>,
}

/// A sample's call chain, leaf first, where it lies.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Chain<'a> {
    /// Little-endian addresses in the record's bytes.
    Bytes(&'a [u8]),
    /// As the crate parsed it.
    Parsed(RawDataU64<'a>),
}

impl Chain<'_> {
    /// The addresses, leaf first.
    pub(crate) fn iter(&self) -> impl Iterator<Item = u64> + '_ {
        let (bytes, parsed) = match self {
            Chain::Bytes(b) => (*b, None),
            Chain::Parsed(p) => (&[][..], Some(p)),
        };
        let from_bytes = bytes
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")));
        let from_parsed = parsed.into_iter().flat_map(|p| (0..p.len()).filter_map(|k| p.get(k)));
        from_bytes.chain(from_parsed)
    }
}

/// The sampling mode in the collector's terms, so both read call chains alike.
pub(crate) fn mode_of(m: CpuMode) -> Mode {
    match m {
        CpuMode::Kernel => Mode::Kernel,
        CpuMode::User => Mode::User,
        CpuMode::Hypervisor => Mode::Hypervisor,
        CpuMode::GuestKernel => Mode::GuestKernel,
        CpuMode::GuestUser => Mode::GuestUser,
        _ => Mode::Unknown,
    }
}

impl<'a> Sample<'a> {
    /// The fields of a sample the crate parsed.
    pub(crate) fn of(s: &linux_perf_data::linux_perf_event_reader::SampleRecord<'a>) -> Self {
        Sample {
            ip: s.ip,
            pid: s.pid,
            tid: s.tid,
            timestamp: s.timestamp,
            cpu: s.cpu,
            period: s.period,
            mode: mode_of(s.cpu_mode),
            callchain: s.callchain.map(Chain::Parsed),
            read: None,
            user_regs: s.user_regs.clone(),
            // The kernel copies `stack_size` bytes, of which the first `dynamic_size` are
            // the stack's.
            user_stack: s
                .user_stack
                .as_ref()
                .and_then(|(d, used)| d.get(0..(*used as usize).min(d.len()))),
        }
    }

    /// The fields of the sample `r`, when its format has nothing past the call chain
    /// and nothing between the period and the call chain (perf record's formats, with
    /// or without `-g`, `-a`, several events), read straight from its bytes. `None`: for
    /// the crate to parse, which reads every field and says what is wrong with a damaged
    /// one (the same bytes read here would be short).
    ///
    /// `read_format` is the attribute's `read_format` as the file has it (with
    /// `PERF_FORMAT_LOST`, which the crate drops): with it, a sample's `READ` values are
    /// stepped over here in the kernel's layout (linux-perf-event-reader 0.10 swaps the
    /// group and single layouts, and knows no `LOST`, so it reads past them wrong).
    pub(crate) fn parse_plain(r: &RawEventRecord<'a>, read_format: Option<u64>) -> Option<Self> {
        const PLAIN: SampleFormat = SampleFormat::IDENTIFIER
            .union(SampleFormat::IP)
            .union(SampleFormat::TID)
            .union(SampleFormat::TIME)
            .union(SampleFormat::ADDR)
            .union(SampleFormat::ID)
            .union(SampleFormat::STREAM_ID)
            .union(SampleFormat::CPU)
            .union(SampleFormat::PERIOD)
            .union(SampleFormat::CALLCHAIN);
        let f = r.parse_info.sample_format;
        let RawData::Single(body) = r.data else { return None };
        let read = read_format.filter(|_| f.contains(SampleFormat::READ));
        if !PLAIN.contains(f.difference(SampleFormat::READ))
            || (f.contains(SampleFormat::READ) && read.is_none())
            || r.parse_info.endian != Endianness::LittleEndian
        {
            return None;
        }
        let mut at = 0usize;
        // The field of `flag` at `at`, when the sample has it (None when not); `at` moves past it.
        let u64_if = |at: &mut usize, flag: SampleFormat| -> Option<Option<u64>> {
            if !f.contains(flag) {
                return Some(None);
            }
            let v = u64_at(body, *at)?;
            *at += 8;
            Some(Some(v))
        };
        u64_if(&mut at, SampleFormat::IDENTIFIER)?;
        let ip = u64_if(&mut at, SampleFormat::IP)?;
        let pid_tid = u64_if(&mut at, SampleFormat::TID)?;
        let timestamp = u64_if(&mut at, SampleFormat::TIME)?;
        u64_if(&mut at, SampleFormat::ADDR)?;
        u64_if(&mut at, SampleFormat::ID)?;
        u64_if(&mut at, SampleFormat::STREAM_ID)?;
        let cpu_res = u64_if(&mut at, SampleFormat::CPU)?;
        let period = u64_if(&mut at, SampleFormat::PERIOD)?;
        let mut read_bytes = None;
        if let Some(rf) = read {
            let size = read_values_size(rf, body.get(at..)?)?;
            read_bytes = Some(body.get(at..at + size)?);
            at = at.checked_add(size)?;
        }
        let callchain = if f.contains(SampleFormat::CALLCHAIN) {
            let n = u64_if(&mut at, SampleFormat::CALLCHAIN)?.expect("asked for");
            let bytes = usize::try_from(n).ok()?.checked_mul(8)?;
            let chain = body.get(at..at.checked_add(bytes)?)?;
            Some(Chain::Bytes(chain))
        } else {
            None
        };
        Some(Sample {
            ip,
            // In the file's order: pid, then tid (u32 each); cpu, then a reserved u32.
            pid: pid_tid.map(|v| v as u32 as i32),
            tid: pid_tid.map(|v| (v >> 32) as u32 as i32),
            timestamp,
            cpu: cpu_res.map(|v| v as u32),
            period,
            mode: mode_of(CpuMode::from_misc(r.misc)),
            callchain,
            read: read_bytes,
            user_regs: None,
            user_stack: None,
        })
    }
}

/// `PERF_FORMAT_*` bits of `read_format`.
const FORMAT_TOTAL_TIME_ENABLED: u64 = 1 << 0;
const FORMAT_TOTAL_TIME_RUNNING: u64 = 1 << 1;
const FORMAT_ID: u64 = 1 << 2;
const FORMAT_GROUP: u64 = 1 << 3;
const FORMAT_LOST: u64 = 1 << 4;

/// The bytes of a sample's `READ` values at the start of `b`, in the kernel's layout
/// (`perf_output_read`):
///
/// ```text
/// !GROUP: value, [time_enabled], [time_running], [id], [lost]
///  GROUP: nr, [time_enabled], [time_running], nr x { value, [id], [lost] }
/// ```
/// `None` when `b` is too short for them.
fn read_values_size(read_format: u64, b: &[u8]) -> Option<usize> {
    let has = |bit: u64| usize::from(read_format & bit != 0);
    let times = has(FORMAT_TOTAL_TIME_ENABLED) + has(FORMAT_TOTAL_TIME_RUNNING);
    let per_value = 1 + has(FORMAT_ID) + has(FORMAT_LOST);
    let words = if read_format & FORMAT_GROUP != 0 {
        let nr = usize::try_from(u64_at(b, 0)?).ok()?;
        nr.checked_mul(per_value)?.checked_add(1 + times)?
    } else {
        per_value + times
    };
    let size = words.checked_mul(8)?;
    (size <= b.len()).then_some(size)
}

/// The values of a sample's `READ` bytes `b` (of `read_format`): (id, value) each, the id
/// `None` without `PERF_FORMAT_ID`; the group's members in order with `GROUP`.
pub(crate) fn read_values(read_format: u64, b: &[u8]) -> impl Iterator<Item = (Option<u64>, u64)> + '_ {
    let has = |bit: u64| usize::from(read_format & bit != 0);
    let times = has(FORMAT_TOTAL_TIME_ENABLED) + has(FORMAT_TOTAL_TIME_RUNNING);
    let (group, id, lost) = (read_format & FORMAT_GROUP != 0, has(FORMAT_ID), has(FORMAT_LOST));
    // Word positions: GROUP: nr, times, then {value, [id], [lost]}; else value, times, [id], [lost].
    let (nr, first, stride, id_at) = match group {
        true => (u64_at(b, 0).unwrap_or(0) as usize, 1 + times, 1 + id + lost, 1),
        false => (1, 0, 1 + times + id + lost, 1 + times),
    };
    (0..nr).map_while(move |k| {
        let at = (first + k * stride) * 8;
        let value = u64_at(b, at)?;
        let id = match id {
            1 => Some(u64_at(b, at + id_at * 8)?),
            _ => None,
        };
        Some((id, value))
    })
}

/// The `read_format` of each attribute of the perf.data file `file` (of little-endian
/// byte order), as its header's attribute section has them, in the file's order.
pub(crate) fn read_formats(file: &File) -> Option<Vec<u64>> {
    let mut header = [0u8; 40];
    file.read_exact_at(&mut header, 0).ok()?;
    let (attr_size, offset, size) = (u64_at(&header, 16)?, u64_at(&header, 24)?, u64_at(&header, 32)?);
    // Each entry is an attribute and the file section of its ids (16 bytes), which the
    // header's attribute size counts.
    let entry = attr_size;
    if attr_size < 40 + 16 || size % entry != 0 || size / entry > 1 << 16 {
        return None;
    }
    let mut out = Vec::new();
    for k in 0..size / entry {
        let mut rf = [0u8; 8];
        file.read_exact_at(&mut rf, offset.checked_add(k * entry + 32)?).ok()?;
        out.push(u64::from_le_bytes(rf));
    }
    Some(out)
}

/// The little-endian u64 at byte `at` of `b`, if `b` holds it.
fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    let bytes: [u8; 8] = b.get(at..at.checked_add(8)?)?.try_into().ok()?;
    Some(u64::from_le_bytes(bytes))
}

/// The little-endian u32 at byte `at` of `b`, if `b` holds it.
fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    let bytes: [u8; 4] = b.get(at..at.checked_add(4)?)?.try_into().ok()?;
    Some(u32::from_le_bytes(bytes))
}

/// Whether this reader reads the file whose header `perf_file` describes and whose
/// records the check saw as `records` (see the module's documentation).
pub(crate) fn eligible(perf_file: &PerfFile, records: &Records) -> bool {
    let features = perf_file.features();
    perf_file.endian() == Endianness::LittleEndian
        && records.tiled
        && !records.framed_apart
        && !features.has_feature(Feature::COMPRESSED)
        && !features.has_feature(Feature::SIMPLEPERF_META_INFO)
        && !perf_file.event_attributes().is_empty()
}

/// How a record's attribute is found (the crate's `IdParseInfos`).
enum Ids {
    /// One attribute: every record is its.
    One,
    /// Every attribute puts the id at the same place.
    Same(RecordIdParseInfo),
    /// Each attribute has `PERF_SAMPLE_IDENTIFIER`: first in a sample, last in the
    /// trailer of other records (when `sample_id_all` is set, the bool).
    Identifier(bool),
}

/// A record waiting for its turn: its key and its attribute.
#[derive(Debug, Clone, Copy)]
struct Pending {
    /// The timestamp (`None` before every timestamp), then the file offset.
    key: (Option<u64>, u64),
    /// `None`: one of perf's own records, which only takes its place in the order.
    attr: Option<u32>,
}

/// Which of a file's records a walk reads, and which it hands out for their state only.
///
/// A file can be read by two walks, each on its own core: the first from the start until
/// the round where the two meet ([`Boundary`]), the second from where the first was when
/// it split ([`Resume`]), handing out the records before that round only for the state
/// they set (mappings, commands), and read from that round on. Records are handed out
/// round by round, so each is read by exactly one of the two, in the order one walk
/// would hand it out.
#[derive(Debug, Clone)]
pub(crate) enum Part<'b> {
    /// Every record, read; the walk may be asked to split at each round's end.
    Whole,
    /// The records of the rounds ending before the boundary (all of them when none ends
    /// at or past it, the last ones too).
    Before(&'b Boundary),
    /// The rest: from `resume`, the records of the rounds ending at or past the boundary
    /// read, those before for their state only.
    From { boundary: &'b Boundary, resume: Resume },
}

/// Where a file's two walks meet: the first round end the second walk reads from.
///
/// The second walk first walks the first one's part for its state, which costs it a
/// share `k` of reading it (about half on a fork load, less where samples outnumber
/// mappings); the two finish together when the first reads `1 / (2 - k)` of what was
/// left. `k` is measured as they go, as the ratio of how far each has come since the
/// split (the first reading, the second walking), and the meeting round moved to match
/// at each of the first walk's round ends, until the second walk reaches it. So a
/// second walk that is slower than planned (its core shared, heavier records) leaves
/// more to the first, and a faster one takes more.
#[derive(Debug)]
pub(crate) struct Boundary {
    meeting: std::sync::Mutex<Meeting>,
    end: u64,
}

#[derive(Debug, Clone, Copy)]
struct Meeting {
    /// Where both walks were when the file was split.
    from: u64,
    /// The first walk reads the rounds that end before `at`, the second from the first
    /// one that ends at or past it.
    at: u64,
    /// The second walk reached `at`, which no longer moves.
    fixed: bool,
    /// The last round end the second walk passed walking for state (`from` before any).
    second_at: u64,
    /// The first walk read to the end of the data: the second reads nothing.
    first_ended: bool,
}

/// How far both walks must have come before their rates are compared: below it they are
/// noise (a round is about 10⁵ bytes).
const MEASURED: u64 = 4 << 20;

impl Boundary {
    /// Two walks from `from`, planned to meet at `at`, of data that ends at `end`.
    pub(crate) fn new(from: u64, at: u64, end: u64) -> Self {
        Boundary {
            meeting: std::sync::Mutex::new(Meeting {
                from,
                at: at.max(from + 1),
                fixed: false,
                second_at: from,
                first_ended: false,
            }),
            end,
        }
    }

    fn meeting(&self) -> std::sync::MutexGuard<'_, Meeting> {
        self.meeting.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The first walk is at the round end `q`: whether it stops here (the second reads
    /// from here on). It never stops before a round end the second walk has passed.
    fn first_stops_at(&self, q: u64) -> bool {
        let mut m = self.meeting();
        if m.fixed {
            return q >= m.at;
        }
        // Every round end the first walk reads is before `at`, and so is every one the
        // second walk passes: the round where they meet is after both.
        let at = m.balanced(q, self.end).unwrap_or(m.at).max(m.second_at + 1);
        if at <= q {
            m.at = q;
            return true;
        }
        m.at = at;
        false
    }

    /// The second walk, walking for state, is at the round end `p`: whether it reads from
    /// here on, walks on, or stops (the first read to the end of the data).
    fn second_at(&self, p: u64) -> SecondStep {
        let mut m = self.meeting();
        if m.first_ended {
            // The first read every round: none was at or past `at`.
            return SecondStep::Stop;
        }
        if p >= m.at {
            m.fixed = true;
            m.at = p;
            return SecondStep::Read;
        }
        m.second_at = p;
        SecondStep::Walk
    }

    /// The first walk read to the end of the data.
    fn first_ended(&self) {
        self.meeting().first_ended = true;
    }

    /// Whether the second walk has nothing to read (the first read to the end).
    pub(crate) fn second_reads_nothing(&self) -> bool {
        let m = self.meeting();
        m.first_ended && !m.fixed
    }
}

/// What the second walk does at a round end ([`Boundary::second_at`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SecondStep {
    Read,
    Walk,
    Stop,
}

impl Meeting {
    /// Where the two walks finish together, the first at `q`, from their rates so far;
    /// None before they are measured.
    fn balanced(&self, q: u64, end: u64) -> Option<u64> {
        let (first, second) = (q - self.from, self.second_at - self.from);
        if first < MEASURED || second < MEASURED {
            return None;
        }
        // What walking for state costs the second walk, reading costing 1: the first
        // reads B - q more, the second walks B - second_at and reads end - B.
        let k = first as f64 / second as f64;
        if k >= 1.95 {
            return Some(end);
        }
        let b = (q as f64 + end as f64 - k * self.second_at as f64) / (2.0 - k);
        Some(b.clamp(q as f64, end as f64) as u64)
    }
}

/// Where a walk was at a round's end, for a second walk to go on from.
#[derive(Debug, Clone)]
pub(crate) struct Resume {
    /// The offset of the next record.
    pos: u64,
    order: Order,
}

/// What a walk hands out.
pub(crate) enum Step<'a> {
    /// A record with its attribute's index: each of the walk's part, and before it
    /// those that set state (mappings, commands, forks, exits; not samples nor losses).
    Record { attr: usize, record: RawEventRecord<'a> },
    /// A round ended (a [`Part::Whole`] walk only): the caller may answer with the
    /// [`Boundary`] of a split from here, and start another walk from
    /// [`RoundEnd::resume`].
    Round { at: RoundEnd<'a> },
}

/// Where a walk is at a round's end.
pub(crate) struct RoundEnd<'a> {
    pos: u64,
    order: &'a Order,
}

impl RoundEnd<'_> {
    /// The offset of the next record.
    pub(crate) fn pos(&self) -> u64 {
        self.pos
    }

    /// Where a second walk goes on from.
    pub(crate) fn resume(&self) -> Resume {
        Resume {
            pos: self.pos,
            order: self.order.clone(),
        }
    }
}

/// Reads the records of `file` (checked as `records` says, [`eligible`]) and hands each
/// kernel record to `each` with its attribute's index, in the crate's order: those of
/// `part` of the file ([`Part`]). `each` answers a [`Step::Round`] with `Some(boundary)`
/// to split there; other steps with `None`.
pub(crate) fn walk<'b>(
    file: &File,
    records: &Records,
    perf_file: &PerfFile,
    mut part: Part<'b>,
    mut each: impl FnMut(Step<'_>) -> Result<Option<&'b Boundary>, super::ImportError>,
    err: impl Fn(linux_perf_data::Error) -> super::ImportError,
) -> Result<(), super::ImportError> {
    let attrs = perf_file.event_attributes();
    let parse_infos: Vec<RecordParseInfo> = attrs
        .iter()
        .map(|a| RecordParseInfo::new(&a.attr, Endianness::LittleEndian))
        .collect();
    // Looked up for every record when the file has several attributes (perf adds a dummy
    // event beside the one asked for): a fast hasher, the ids being the kernel's.
    let mut by_id: HashMap<u64, usize, foldhash::fast::RandomState> = HashMap::default();
    for (k, a) in attrs.iter().enumerate() {
        for id in &a.event_ids {
            by_id.insert(*id, k);
        }
    }
    let first = parse_infos[0].id_parse_info;
    let ids = if parse_infos.len() == 1 {
        Ids::One
    } else if parse_infos.iter().all(|p| p.id_parse_info == first) {
        Ids::Same(first)
    } else {
        // The crate refused such a file on opening unless every attribute has
        // IDENTIFIER and the first one's sample_id_all.
        Ids::Identifier(attrs[0].attr.flags.contains(AttrFlags::SAMPLE_ID_ALL))
    };
    let (start, end) = (records.data.0, records.data.0 + records.data.1);
    // A second walk starts where the first was, with the records it had waiting.
    let (mut pos, mut order) = match &part {
        Part::From { resume, .. } => (resume.pos, resume.order.clone()),
        _ => (start, Order::default()),
    };
    let mut w = Walker {
        file,
        buf: Vec::new(),
        base: order.oldest().unwrap_or(pos),
        filled: 0,
    };
    // The records the first walk had waiting are read in before any is handed out.
    if let Some(oldest) = order.oldest().filter(|&o| o < pos) {
        w.read_in(oldest, (pos - oldest) as usize, oldest).map_err(&err)?;
    }
    // Whether the records released are read: a second walk's are once it meets the round
    // the first stopped at.
    let mut read = !matches!(part, Part::From { .. });
    // Hands out, in key order, the records `order` releases.
    let mut out = Vec::new();
    // A file read before its records were walked (`open_header_checked`) must be as
    // that walk would have let this reader read it: records each whole inside the data
    // section and filling it, none framed apart. Anything else is an error here, and the
    // caller reads the file again, checked first.
    let not_tiled = || err(linux_perf_data::Error::InvalidPerfEventSize);
    while pos < end {
        if pos + 8 > end {
            return Err(not_tiled());
        }
        if !w.holds(pos, 8) {
            w.read_in(pos, 8, order.oldest().unwrap_or(pos)).map_err(&err)?;
        }
        let (kind, _, size) = w.header(pos);
        // A FINISHED_ROUND with a body is refused by the checked read, as the crate
        // would misread it.
        if size < 8
            || pos + u64::from(size) > end
            || FRAMED_APART.contains(&kind)
            || (kind == FINISHED_ROUND && size != 8)
        {
            return Err(not_tiled());
        }
        if !w.holds(pos, usize::from(size)) {
            w.read_in(pos, usize::from(size), order.oldest().unwrap_or(pos))
                .map_err(&err)?;
        }
        if kind == FINISHED_ROUND {
            match &part {
                // The second walk reads from this round on.
                Part::Before(b) if b.first_stops_at(pos) => return Ok(()),
                Part::From { boundary, .. } if !read => match boundary.second_at(pos) {
                    SecondStep::Read => read = true,
                    SecondStep::Walk => {}
                    SecondStep::Stop => return Ok(()),
                },
                _ => {}
            }
            order.finish_round(&mut out);
            release(&w, &mut out, read, &parse_infos, &mut each)?;
            pos += u64::from(size);
            if let Part::Whole = part {
                if let Some(boundary) = each(Step::Round {
                    at: RoundEnd { pos, order: &order },
                })? {
                    part = Part::Before(boundary);
                }
            }
            continue;
        }
        let pending = if kind < USER_TYPE_START {
            let (_, _, body) = w.record(pos);
            let attr = match &ids {
                Ids::One => 0,
                Ids::Same(info) => record_id(kind, body, info)
                    .and_then(|id| by_id.get(&id).copied())
                    .unwrap_or(0),
                Ids::Identifier(sample_id_all) => record_identifier(kind, body, *sample_id_all)
                    .and_then(|id| by_id.get(&id).copied())
                    .unwrap_or(0),
            };
            Pending {
                key: (record_time(kind, body, &parse_infos[attr]), pos),
                attr: Some(attr as u32),
            }
        } else {
            Pending {
                key: (None, pos),
                attr: None,
            }
        };
        order.insert(pending);
        pos += u64::from(size);
    }
    order.finish(&mut out);
    release(&w, &mut out, read, &parse_infos, &mut each)?;
    if let Part::Before(b) = part {
        b.first_ended();
    }
    Ok(())
}

/// Hands out, in key order, the records `order` released into `out`.
fn release<'b>(
    w: &Walker<'_>,
    out: &mut Vec<Pending>,
    read: bool,
    parse_infos: &[RecordParseInfo],
    each: &mut impl FnMut(Step<'_>) -> Result<Option<&'b Boundary>, super::ImportError>,
) -> Result<(), super::ImportError> {
    for p in out.drain(..) {
        let Some(attr) = p.attr else { continue };
        let (kind, misc, body) = w.record(p.key.1);
        // Samples and losses not read set no state: the reader would drop them at once.
        if !read && (kind == SAMPLE || kind == LOST) {
            continue;
        }
        let record = RawEventRecord::new(
            RecordType(kind),
            misc,
            RawData::Single(body),
            parse_infos[attr as usize],
        );
        each(Step::Record {
            attr: attr as usize,
            record,
        })?;
    }
    Ok(())
}

/// `PERF_RECORD_SAMPLE`.
const SAMPLE: u32 = 9;
/// `PERF_RECORD_LOST`.
const LOST: u32 = 2;

/// A record's id where `info` puts it (the crate's `get_record_id`).
fn record_id(kind: u32, body: &[u8], info: &RecordIdParseInfo) -> Option<u64> {
    field_at(
        kind,
        body,
        info.sample_record_id_offset_from_start,
        info.nonsample_record_id_offset_from_end,
    )
}

/// The u64 a sample has `from_start` bytes into its body, and another record
/// `from_end` bytes before the end of its (in its `sample_id_all` trailer).
fn field_at(kind: u32, body: &[u8], from_start: Option<u8>, from_end: Option<u8>) -> Option<u64> {
    if kind == SAMPLE {
        u64_at(body, usize::from(from_start?))
    } else {
        u64_at(body, body.len().checked_sub(usize::from(from_end?))?)
    }
}

/// A record's `PERF_SAMPLE_IDENTIFIER` (the crate's `get_record_identifier`).
fn record_identifier(kind: u32, body: &[u8], sample_id_all: bool) -> Option<u64> {
    if kind == SAMPLE {
        u64_at(body, 0)
    } else if sample_id_all {
        u64_at(body, body.len().checked_sub(8)?)
    } else {
        None
    }
}

/// A record's timestamp (the crate's `get_record_timestamp`): a sample's
/// `PERF_SAMPLE_TIME`, another record's `sample_id_all` trailer's.
fn record_time(kind: u32, body: &[u8], info: &RecordParseInfo) -> Option<u64> {
    field_at(
        kind,
        body,
        info.sample_record_time_offset_from_start,
        info.nonsample_record_time_offset_from_end,
    )
}

/// The bytes of the file from `base` on, `filled` of them in `buf`, read in chunks.
struct Walker<'f> {
    file: &'f File,
    /// Its length is what has been allocated (zeroed once); `filled` bytes are the file's.
    buf: Vec<u8>,
    base: u64,
    filled: usize,
}

impl Walker<'_> {
    /// Whether the `n` bytes at file offset `at` are read in.
    fn holds(&self, at: u64, n: usize) -> bool {
        (at - self.base) as usize + n <= self.filled
    }

    /// Reads in the `n` bytes at file offset `at` and a chunk more, dropping what lies
    /// before `keep` (the oldest record still waiting). A file that ends first is an
    /// error, as the crate reports it.
    fn read_in(&mut self, at: u64, n: usize, keep: u64) -> Result<(), linux_perf_data::Error> {
        let end = (at - self.base) as usize + n;
        // Move what is kept to the front; the records waiting are a round or two.
        let drop = (keep - self.base) as usize;
        self.buf.copy_within(drop..self.filled, 0);
        self.filled -= drop;
        self.base = keep;
        let end = end - drop;
        // Room for a chunk past what is needed (a record is at most 64 KiB).
        let want = end.max(self.filled + CHUNK);
        if self.buf.len() < want {
            self.buf.resize(want.max(CHUNK), 0);
        }
        while self.filled < end {
            let from = self.base + self.filled as u64;
            match self.file.read_at(&mut self.buf[self.filled..], from) {
                Ok(0) => return Err(std::io::Error::from(std::io::ErrorKind::UnexpectedEof).into()),
                Ok(k) => self.filled += k,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }

    /// The type, misc and size of the record at file offset `at` (read in).
    fn header(&self, at: u64) -> (u32, u16, u16) {
        let h = &self.buf[(at - self.base) as usize..][..8];
        (
            u32::from_le_bytes([h[0], h[1], h[2], h[3]]),
            u16::from_le_bytes([h[4], h[5]]),
            u16::from_le_bytes([h[6], h[7]]),
        )
    }

    /// The type, misc and body of the record at file offset `at` (read in whole).
    fn record(&self, at: u64) -> (u32, u16, &[u8]) {
        let (kind, misc, size) = self.header(at);
        let from = (at - self.base) as usize;
        (kind, misc, &self.buf[from + 8..from + usize::from(size)])
    }
}

/// The crate's round-by-round ordering (`sorter.rs`), on keys that are all distinct.
#[derive(Debug, Clone, Default)]
struct Order {
    incoming: Vec<Pending>,
    /// The largest key seen before the last round ended, and the largest seen.
    prev_max: (Option<u64>, u64),
    cur_max: (Option<u64>, u64),
    /// How many of `incoming` are at most `prev_max`.
    at_most_prev: usize,
}

impl Order {
    fn insert(&mut self, p: Pending) {
        if p.key <= self.prev_max {
            self.at_most_prev += 1;
        } else if p.key > self.cur_max {
            self.cur_max = p.key;
        }
        self.incoming.push(p);
    }

    /// The file offset of the oldest record waiting.
    fn oldest(&self) -> Option<u64> {
        self.incoming.iter().map(|p| p.key.1).min()
    }

    /// A round ended: the records at most the previous round's largest key go to `out`,
    /// in order.
    fn finish_round(&mut self, out: &mut Vec<Pending>) {
        let n = self.at_most_prev;
        if n > 0 {
            // The rounds come as runs sorted per CPU: a merging sort takes them as such.
            self.incoming.sort_by_key(|p| p.key);
            out.extend(self.incoming.drain(..n));
        }
        self.prev_max = self.cur_max;
        self.at_most_prev = self.incoming.len();
    }

    /// The data ended: everything goes to `out`, in order.
    fn finish(&mut self, out: &mut Vec<Pending>) {
        self.incoming.sort_by_key(|p| p.key);
        out.append(&mut self.incoming);
        self.prev_max = self.cur_max;
    }
}

/// A record that sets a reader's state (a command, a fork, an exit, a mapping), with the
/// fields the import uses, read in place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StateRecord<'a> {
    Comm {
        tid: i32,
        name: &'a [u8],
    },
    Fork {
        ppid: i32,
        pid: i32,
        ptid: i32,
        tid: i32,
    },
    Exit {
        pid: i32,
        tid: i32,
    },
    Mmap2 {
        pid: i32,
        address: u64,
        length: u64,
        page_offset: u64,
        build_id: Option<&'a [u8]>,
        protection: u32,
        path: &'a [u8],
    },
}

/// `PERF_RECORD_MISC_MMAP_BUILD_ID`: an MMAP2 record carries a build-id, not an inode.
const MISC_MMAP_BUILD_ID: u16 = 1 << 14;

/// A COMM, FORK, EXIT or MMAP2 record of a little-endian file read in place as the
/// crate's `RawEventRecord::parse` reads it (a name or path ends at its first NUL, or
/// with the record); None for any other record, or one the crate would refuse. The
/// crate's parse copies a large enum per record and allocates each build-id: on a fork
/// load these records are half of the file.
pub(crate) fn state_record<'a>(r: &RawEventRecord<'a>) -> Option<StateRecord<'a>> {
    if r.parse_info.endian != Endianness::LittleEndian {
        return None;
    }
    let RawData::Single(b) = r.data else {
        return None;
    };
    let i32_at = |at: usize| u32_at(b, at).map(|v| v as i32);
    let string_at = |at: usize| {
        let rest = b.get(at..)?;
        Some(&rest[..memchr::memchr(0, rest).unwrap_or(rest.len())])
    };
    match r.record_type {
        RecordType::COMM => Some(StateRecord::Comm {
            tid: i32_at(4)?,
            name: string_at(8)?,
        }),
        RecordType::FORK | RecordType::EXIT => {
            // The crate reads the timestamp too: a record without one is its to refuse.
            u64_at(b, 16)?;
            let (pid, ppid, tid, ptid) = (i32_at(0)?, i32_at(4)?, i32_at(8)?, i32_at(12)?);
            Some(match r.record_type {
                RecordType::FORK => StateRecord::Fork { ppid, pid, ptid, tid },
                _ => StateRecord::Exit { pid, tid },
            })
        }
        RecordType::MMAP2 => {
            let build_id = match r.misc & MISC_MMAP_BUILD_ID {
                0 => None,
                // The crate panics on a build-id longer than 20 bytes: left to it.
                _ => Some(b.get(36..36 + usize::from(*b.get(32).filter(|&&n| n <= 20)?))?),
            };
            Some(StateRecord::Mmap2 {
                pid: i32_at(0)?,
                address: u64_at(b, 8)?,
                length: u64_at(b, 16)?,
                page_offset: u64_at(b, 24)?,
                build_id,
                protection: u32_at(b, 56)?,
                path: string_at(64)?,
            })
        }
        _ => None,
    }
}

/// A `PERF_RECORD_KSYMBOL` (type 17: `u64 addr; u32 len; u16 ksym_type; u16 flags;
/// char name[]`, the name NUL-terminated and padded); `None` for another record or one
/// too short. The linux-perf-event-reader crate does not parse it. A name longer than
/// [`MAX_NAME_BYTES`](upcmp_parsers::MAX_NAME_BYTES) is cut, as every name the suite
/// reads, and the second value says so.
pub(crate) fn ksymbol_of(r: &RawEventRecord<'_>) -> Option<(upcmp_parsers::samples::Ksymbol, bool)> {
    if r.record_type != RecordType::KSYMBOL {
        return None;
    }
    let body = r.data.as_slice();
    let big = r.parse_info.endian == Endianness::BigEndian;
    let field = |at: usize, n: usize| -> Option<u64> {
        let b = body.get(at..at + n)?;
        Some(b.iter().enumerate().fold(0u64, |v, (i, &x)| {
            let shift = if big { 8 * (n - 1 - i) } else { 8 * i };
            v | u64::from(x) << shift
        }))
    };
    let name = body.get(16..)?;
    let name = String::from_utf8_lossy(&name[..name.iter().position(|&c| c == 0)?]);
    let (name, cut) = upcmp_parsers::bounded_name(&name);
    Some((
        upcmp_parsers::samples::Ksymbol {
            addr: field(0, 8)?,
            len: field(8, 4)? as u32,
            kind: field(12, 2)? as u16,
            // PERF_RECORD_KSYMBOL_FLAGS_UNREGISTER
            unregister: field(14, 2)? & 1 != 0,
            name: name.to_string(),
        },
        cut,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use linux_perf_data::linux_perf_event_reader::EventRecord;

    /// The parse information of a recording's first attribute.
    fn parse_info_of_a_fixture() -> RecordParseInfo {
        // The workspace's fixtures are beside this crate's directory.
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/import/stacks.data");
        let file = File::open(path).unwrap();
        let reader = linux_perf_data::PerfFileReader::parse_file(std::io::BufReader::new(&file)).unwrap();
        RecordParseInfo::new(&reader.perf_file.event_attributes()[0].attr, Endianness::LittleEndian)
    }

    /// The crate's parse of a state record, as a [`StateRecord`]; the build-id it
    /// allocates is kept in `id`, the name and path are the record's bytes.
    fn crate_state<'a>(r: &RawEventRecord<'a>, id: &'a mut Option<Vec<u8>>) -> Option<StateRecord<'a>> {
        use linux_perf_data::linux_perf_event_reader::{EventRecord, Mmap2FileId};
        let bytes = |d: RawData<'a>| match d {
            RawData::Single(b) => b,
            RawData::Split(..) => unreachable!("the test's records are whole"),
        };
        Some(match r.parse().ok()? {
            EventRecord::Comm(c) => StateRecord::Comm {
                tid: c.tid,
                name: bytes(c.name),
            },
            EventRecord::Fork(f) => StateRecord::Fork {
                ppid: f.ppid,
                pid: f.pid,
                ptid: f.ptid,
                tid: f.tid,
            },
            EventRecord::Exit(e) => StateRecord::Exit { pid: e.pid, tid: e.tid },
            EventRecord::Mmap2(m) => {
                if let Mmap2FileId::BuildId(b) = m.file_id {
                    *id = Some(b);
                }
                StateRecord::Mmap2 {
                    pid: m.pid,
                    address: m.address,
                    length: m.length,
                    page_offset: m.page_offset,
                    build_id: id.as_deref(),
                    protection: m.protection,
                    path: bytes(m.path),
                }
            }
            _ => return None,
        })
    }

    /// Commands, forks, exits and mappings (with an inode or a build-id of each length),
    /// whole and cut at every length, with and without a NUL: read in place as the crate
    /// parses them, or left to it.
    #[test]
    fn state_records_read_as_the_crate_parses_them() {
        let info = parse_info_of_a_fixture();
        let words = |n: usize| (0..n).flat_map(|k| (0x1122_3344_5566_7788u64 ^ (k as u64 * 0x0101)).to_le_bytes());
        let mut bodies: Vec<(RecordType, u16, Vec<u8>)> = Vec::new();
        for name in [&b"true\0\0\0\0"[..], b"sh\0", b"no-nul", b""] {
            let mut b: Vec<u8> = words(1).collect();
            b.extend_from_slice(name);
            b.extend(words(2));
            bodies.push((RecordType::COMM, 1 << 13, b));
        }
        for kind in [RecordType::FORK, RecordType::EXIT] {
            bodies.push((kind, 0, words(5).collect()));
        }
        for id_len in [None, Some(0u8), Some(3), Some(20), Some(21)] {
            let mut b: Vec<u8> = words(4).collect();
            match id_len {
                None => b.extend(words(3)),
                Some(n) => {
                    b.extend([n, 0, 0, 0]);
                    b.extend((0..20).map(|i| i as u8 + 1));
                }
            }
            b.extend(5u32.to_le_bytes());
            b.extend(2u32.to_le_bytes());
            b.extend_from_slice(b"/usr/lib/libc.so.6\0\0\0\0\0\0");
            b.extend(words(2));
            let misc = if id_len.is_some() { MISC_MMAP_BUILD_ID } else { 0 } | 2;
            bodies.push((RecordType::MMAP2, misc, b));
        }
        let mut read = 0;
        for (kind, misc, body) in &bodies {
            for len in 0..=body.len() {
                let r = RawEventRecord::new(*kind, *misc, RawData::Single(&body[..len]), info);
                let ours = state_record(&r);
                // A build-id longer than 20 bytes panics the crate: left to it.
                if *kind == RecordType::MMAP2 && misc & MISC_MMAP_BUILD_ID != 0 && body[32] > 20 {
                    assert_eq!(ours, None);
                    continue;
                }
                let mut id = None;
                let theirs = crate_state(&r, &mut id);
                assert_eq!(ours, theirs, "{kind:?} {len}");
                read += usize::from(ours.is_some());
            }
        }
        assert!(read > 100, "{read}");
    }

    #[test]
    fn plain_samples_read_as_the_crate_parses_them() {
        let flags = [
            SampleFormat::IDENTIFIER,
            SampleFormat::IP,
            SampleFormat::TID,
            SampleFormat::TIME,
            SampleFormat::ADDR,
            SampleFormat::ID,
            SampleFormat::STREAM_ID,
            SampleFormat::CPU,
            SampleFormat::PERIOD,
            SampleFormat::CALLCHAIN,
        ];
        let mut info = parse_info_of_a_fixture();
        let mut checked = 0;
        // Every combination of the plain fields, each word distinct, whole and cut short.
        for combo in 0u32..1 << flags.len() {
            info.sample_format = flags
                .iter()
                .enumerate()
                .filter(|(k, _)| combo & (1 << k) != 0)
                .fold(SampleFormat::empty(), |f, (_, &flag)| f | flag);
            let mut body = Vec::new();
            for (k, flag) in flags.iter().enumerate() {
                if !info.sample_format.contains(*flag) {
                    continue;
                }
                if *flag == SampleFormat::CALLCHAIN {
                    body.extend_from_slice(&3u64.to_le_bytes());
                    for a in [0xffff_ffff_ffff_ff80u64, 0xffff_ffff_8100_0000, 0x7f00_0000_1234] {
                        body.extend_from_slice(&a.to_le_bytes());
                    }
                } else {
                    body.extend_from_slice(&(0x0102_0304_0506_0708u64 * (k as u64 + 1)).to_le_bytes());
                }
            }
            for len in [body.len(), body.len().saturating_sub(3)] {
                for misc in [1u16, 2, 3, 6] {
                    let r = RawEventRecord::new(RecordType::SAMPLE, misc, RawData::Single(&body[..len]), info);
                    let ours = Sample::parse_plain(&r, None);
                    match r.parse() {
                        Ok(EventRecord::Sample(s)) => {
                            let ours = ours.expect("the crate read it whole");
                            let theirs = Sample::of(&s);
                            assert_eq!(
                                (
                                    ours.ip,
                                    ours.pid,
                                    ours.tid,
                                    ours.timestamp,
                                    ours.cpu,
                                    ours.period,
                                    ours.mode
                                ),
                                (
                                    theirs.ip,
                                    theirs.pid,
                                    theirs.tid,
                                    theirs.timestamp,
                                    theirs.cpu,
                                    theirs.period,
                                    theirs.mode
                                ),
                                "{:?}",
                                info.sample_format
                            );
                            let chain = |c: &Option<Chain<'_>>| c.map(|c| c.iter().collect::<Vec<u64>>());
                            assert_eq!(chain(&ours.callchain), chain(&theirs.callchain));
                            checked += 1;
                        }
                        Ok(other) => panic!("{other:?}"),
                        Err(_) => assert!(ours.is_none(), "read a sample the crate cannot"),
                    }
                }
            }
        }
        assert!(checked > 4000, "{checked}");
        // A format with a field past the call chain is the crate's to read.
        info.sample_format = SampleFormat::IP | SampleFormat::RAW;
        let body = [0u8; 16];
        let r = RawEventRecord::new(RecordType::SAMPLE, 2, RawData::Single(&body), info);
        assert!(Sample::parse_plain(&r, None).is_none());
    }

    /// Two walks meeting at a moving boundary, stepped in every kind of interleaving
    /// (either much faster, the second walking ahead of the first, the first reading to
    /// the end): each round is read by exactly one, the first's a prefix.
    #[test]
    fn walks_meeting_at_a_moving_boundary_read_each_round_once() {
        const ROUND: u64 = 100_000;
        let n = 2_000u64;
        let end = n * ROUND + 17;
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut rand = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let (mut moved_later, mut moved_earlier, mut unread) = (0, 0, 0);
        for case in 0..400 {
            // Rounds end at 1..=n times ROUND; the split is at round `from`.
            let from = 1 + rand() % 200;
            let plan = from + 1 + rand() % (n - from);
            let b = Boundary::new(from * ROUND, plan * ROUND, end);
            // Chances in 1000 that the first, not the second, takes the next step.
            let first_share = [5, 200, 500, 800, 995][case % 5];
            let (mut q, mut p) = (from + 1, from + 1);
            let (mut first_read, mut second_from) = (Vec::new(), None);
            let (mut first_done, mut second_done) = (false, false);
            let mut seen_at = Vec::new();
            while !(first_done && second_done) {
                let first_turn = !first_done && (second_done || rand() % 1000 < first_share);
                if first_turn {
                    if q > n {
                        b.first_ended();
                        first_done = true;
                    } else if b.first_stops_at(q * ROUND) {
                        first_done = true;
                    } else {
                        first_read.push(q);
                        q += 1;
                    }
                    seen_at.push(b.meeting().at);
                } else if p > n {
                    second_done = true;
                } else {
                    match b.second_at(p * ROUND) {
                        SecondStep::Read => {
                            second_from = Some(p);
                            second_done = true;
                        }
                        SecondStep::Stop => second_done = true,
                        SecondStep::Walk => p += 1,
                    }
                }
            }
            // The first read from+1.. up to where the second reads from, or everything.
            let upto = second_from.unwrap_or(n + 1);
            assert_eq!(first_read, (from + 1..upto).collect::<Vec<_>>(), "case {case}");
            assert_eq!(b.second_reads_nothing(), second_from.is_none(), "case {case}");
            unread += u32::from(second_from.is_none());
            let planned = plan * ROUND;
            moved_later += u32::from(seen_at.iter().any(|&a| a > planned));
            moved_earlier += u32::from(seen_at.iter().any(|&a| a < planned && a > from * ROUND + MEASURED));
        }
        // Every kind of case came up.
        assert!(
            moved_later > 20 && moved_earlier > 20 && unread > 5,
            "{moved_later} {moved_earlier} {unread}"
        );
    }

    /// With walking for state costing `k` of reading, the meeting planned is where the two
    /// finish together.
    #[test]
    fn the_meeting_is_where_both_finish_together() {
        let (from, end) = (0u64, 1_000u64 << 20);
        for k in [0.3, 0.5, 0.8] {
            // After 100 MiB read by the first, the second has walked 100/k MiB.
            let q = 100u64 << 20;
            let m = Meeting {
                from,
                at: 1,
                fixed: false,
                second_at: (q as f64 / k) as u64,
                first_ended: false,
            };
            let b = m.balanced(q, end).unwrap() as f64;
            let first = b - q as f64;
            let second = k * (b - m.second_at as f64) + (end as f64 - b);
            assert!((first - second).abs() < 1e-6 * end as f64, "k {k}: {first} vs {second}");
        }
        // Walking for state slower than that, the first reads everything.
        let slow = Meeting {
            from,
            at: 1,
            fixed: false,
            second_at: (100u64 << 20) * 5 / 6,
            first_ended: false,
        };
        assert_eq!(slow.balanced(100 << 20, end), Some(end));
        let early = Meeting {
            from: 0,
            at: 1,
            fixed: false,
            second_at: MEASURED - 1,
            first_ended: false,
        };
        assert_eq!(early.balanced(MEASURED * 2, end), None);
    }

    /// The crate's own example of rounds (its `sorter.rs` test), with the keys as
    /// timestamps at increasing offsets, as its file reader makes them: a timestamp equal
    /// to the previous round's largest but later in the file waits for the next round.
    #[test]
    fn rounds_release_what_the_next_cannot_precede() {
        let mut o = Order::default();
        let mut offset = 0;
        let mut put = |o: &mut Order, t: u64| {
            offset += 1;
            o.insert(Pending {
                key: (Some(t), offset),
                attr: Some(0),
            });
        };
        let times = |out: &mut Vec<Pending>| out.drain(..).map(|p| p.key.0.unwrap()).collect::<Vec<_>>();
        let mut out = Vec::new();
        for t in [1, 2, 3, 2, 4] {
            put(&mut o, t);
        }
        o.finish_round(&mut out);
        assert!(out.is_empty());
        for t in [3, 5, 6, 7, 4, 5] {
            put(&mut o, t);
        }
        o.finish_round(&mut out);
        assert_eq!(times(&mut out), [1, 2, 2, 3, 3, 4]);
        for t in [6, 8, 9, 7, 10] {
            put(&mut o, t);
        }
        o.finish_round(&mut out);
        assert_eq!(times(&mut out), [4, 5, 5, 6, 6, 7]);
        o.finish(&mut out);
        assert_eq!(times(&mut out), [7, 8, 9, 10]);
    }

    #[test]
    fn records_without_time_go_first_in_the_round_that_releases_them() {
        let mut o = Order::default();
        let mut out = Vec::new();
        let p = |t: Option<u64>, off: u64| Pending {
            key: (t, off),
            attr: Some(0),
        };
        o.insert(p(Some(5), 10));
        o.finish_round(&mut out);
        o.insert(p(Some(7), 20));
        o.insert(p(None, 30));
        o.insert(p(Some(5), 40));
        o.finish_round(&mut out);
        let keys: Vec<_> = out.drain(..).map(|p| p.key).collect();
        // Timestamp-less first; the 5 later in the file than the largest key of the
        // previous round waits.
        assert_eq!(keys, [(None, 30), (Some(5), 10)]);
        o.finish(&mut out);
        let keys: Vec<_> = out.iter().map(|p| p.key).collect();
        assert_eq!(keys, [(Some(5), 40), (Some(7), 20)]);
    }
}
