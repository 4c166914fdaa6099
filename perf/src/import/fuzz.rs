//! The importers run on raw bytes, checking what must hold whatever the input: the
//! counterpart, for perf.data and `perf script` text, of `upcmp_parsers::harness`.
//!
//! The fuzz targets `import_perf_data` and `import_perf_script` (`fuzz/`) and the stable
//! corpus and mutation tests (`tests/fuzz.rs`) call these functions, so an input fails the
//! same way under each (`docs/fuzzing.md`). A check panics when a property does not hold,
//! and lets a panic of the importer through; a panic inside the perf.data crate is the
//! hardened reader's to catch ([`contained`](super::perf_header::contained)), and comes
//! back as an error.
//!
//! The properties: the import returns, `Ok` or an error that says what is wrong; a profile
//! it returns has 1 to 8192 CPUs, each once and numbered below 8192, a count and a weight
//! per CPU in every row, columns that add up to each CPU's samples without passing 2^64,
//! finite times and names of at most 4 KiB.

use super::{perf_data, script, ImportOptions, Imported};
use crate::model::Profile;
use std::io::{Seek, Write};
use std::os::fd::{AsRawFd, FromRawFd};
use std::path::{Path, PathBuf};
use upcmp_parsers::{MAX_CPUS, MAX_NAME_BYTES};

/// The options every check imports with: kernel symbols from `kallsyms` (a fixed file,
/// so that no check reads this machine's), call stacks collected.
fn options(kallsyms: &Path, event: Option<&str>) -> ImportOptions {
    ImportOptions {
        kallsyms: Some(kallsyms.to_path_buf()),
        stacks: true,
        event: event.map(str::to_string),
        ..ImportOptions::default()
    }
}

/// Imports `data` as a perf.data file (from its path, as prfcmp reads a file) and as a
/// stream (as prfcmp reads standard input), kernel symbols from `kallsyms`, and checks
/// what each import returns; panics when a property does not hold. Returns whether the
/// file imported.
pub fn check_perf_data(data: &[u8], kallsyms: &Path) -> bool {
    let file = in_memory_file(data);
    let path = PathBuf::from(format!("/proc/self/fd/{}", file.as_raw_fd()));
    let opts = options(kallsyms, None);
    let read = perf_data::read(&path, &opts);
    check_result(&read);
    // The import's own record reader and the crate's: the same profile, or the same error.
    assert_same_import(&read, &perf_data::read_with_crate(&path, &opts));
    let streamed = super::perf_header::contained(&path, || perf_data::read_pipe(data, &path, &opts));
    check_result(&streamed);
    read.is_ok()
}

/// Imports `data` as `perf script` text, the first event and then each other event it
/// names, kernel symbols from `kallsyms`; panics when a property does not hold. Returns
/// whether it imported.
pub fn check_perf_script(data: &[u8], kallsyms: &Path) -> bool {
    let path = Path::new("fuzz-input.perf-script");
    let read = script::read(data, "fuzz-input", path, &options(kallsyms, None));
    check_result(&read);
    if let Ok(imported) = &read {
        // `--event NAME` of an event the warning lists, or of one not recorded.
        for name in other_events(&imported.profile).chain(["no-such-event".to_string()]) {
            let other = script::read(data, "fuzz-input", path, &options(kallsyms, Some(&name)));
            check_result(&other);
        }
    }
    read.is_ok()
}

/// The events a profile's warning lists besides the one it holds (at most three):
/// "... the input also has A (3 samples), B (5 samples): --event NAME reads another".
fn other_events(p: &Profile) -> impl Iterator<Item = String> + '_ {
    p.warnings
        .iter()
        .filter_map(|w| {
            w.split_once(" the input also has ")?
                .1
                .rsplit_once(": --event NAME")?
                .0
                .into()
        })
        .flat_map(|list: &str| list.split(" samples), "))
        .filter_map(|item| Some(item.rsplit_once(" (")?.0.to_string()))
        .take(3)
}

/// Panics unless two imports of one input came out the same: equal profiles and equal
/// stacks (frame names in the order they were first seen, each stack's weight, the
/// counts of samples, truncated and lost), or errors of the same message.
pub fn assert_same_import<E: std::fmt::Display>(a: &Result<Imported, E>, b: &Result<Imported, E>) {
    match (a, b) {
        (Ok(a), Ok(b)) => {
            assert_eq!(a.profile, b.profile);
            assert_eq!(stacks_of(a), stacks_of(b));
        }
        (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string()),
        (a, b) => panic!(
            "one import failed: {:?} against {:?}",
            a.as_ref().map(|_| "a profile").map_err(|e| e.to_string()),
            b.as_ref().map(|_| "a profile").map_err(|e| e.to_string())
        ),
    }
}

/// An import's stacks in a form that compares: names by id, stacks sorted, counts.
#[allow(clippy::type_complexity)]
fn stacks_of(i: &Imported) -> Option<(Vec<String>, Vec<(Vec<u32>, u64)>, [u64; 3])> {
    i.stacks.as_ref().map(|s| {
        let mut stacks: Vec<(Vec<u32>, u64)> = s.weighted_stacks().map(|(f, w)| (f.to_vec(), w)).collect();
        stacks.sort_unstable();
        (s.names().to_vec(), stacks, [s.samples, s.truncated, s.lost])
    })
}

/// An anonymous regular file holding `data`, read through `/proc/self/fd/N` as a path.
fn in_memory_file(data: &[u8]) -> std::fs::File {
    // SAFETY: the name is a NUL-terminated string; the descriptor returned is new and
    // owned by the File alone.
    let fd = unsafe { libc::memfd_create(c"upcmp-fuzz-input".as_ptr(), libc::MFD_CLOEXEC) };
    assert!(fd >= 0, "memfd_create: {}", std::io::Error::last_os_error());
    let mut file = unsafe { std::fs::File::from_raw_fd(fd) };
    file.write_all(data).expect("writing an in-memory file");
    file.rewind().expect("rewinding an in-memory file");
    file
}

fn check_result<E: std::fmt::Display>(result: &Result<Imported, E>) {
    match result {
        Ok(imported) => check_profile(&imported.profile),
        Err(e) => assert!(!e.to_string().is_empty()),
    }
}

fn assert_name(name: &str) {
    assert!(name.len() <= MAX_NAME_BYTES, "a name of {} bytes", name.len());
}

/// What every imported profile keeps, whatever its input.
pub fn check_profile(p: &Profile) {
    assert!((1..=MAX_CPUS as usize).contains(&p.cpus.len()), "{} CPUs", p.cpus.len());
    let mut numbers: Vec<u32> = p.cpus.iter().map(|c| c.cpu).collect();
    numbers.sort_unstable();
    numbers.dedup();
    assert_eq!(numbers.len(), p.cpus.len(), "CPU numbers are distinct");
    assert!(numbers.iter().all(|&c| c < MAX_CPUS), "{numbers:?}");
    assert!(p.period.is_finite() && p.period > 0.0, "period {}", p.period);
    assert!(p.wall_sec.is_finite() && p.wall_sec >= 0.0, "wall-sec {}", p.wall_sec);
    let total = p.cpus.iter().try_fold(0u64, |sum, c| sum.checked_add(c.samples));
    assert!(total.is_some(), "the samples of all CPUs add up past 2^64");
    for f in &p.functions {
        assert_eq!(f.per_cpu.len(), p.cpus.len(), "{f:?}");
        assert_eq!(f.weight_per_cpu.len(), p.cpus.len(), "{f:?}");
        assert!(f.weight_sq.is_finite() && f.weight_sq >= 0.0, "{f:?}");
        assert_name(&f.name);
        assert_name(&f.module);
    }
    for (k, c) in p.cpus.iter().enumerate() {
        let column = p
            .functions
            .iter()
            .try_fold(0u64, |sum, f| sum.checked_add(f.per_cpu[k]));
        assert_eq!(column, Some(c.samples), "cpu {}'s column", c.cpu);
    }
    assert_name(&p.test);
    assert_name(&p.event);
}

/// Kernel code records made from `data` ([`code_records`]) inside the recording `base`,
/// imported and checked as [`check_perf_data`] does: the fuzz target `import_ksymbol`.
/// Returns whether the file imported; `false` for a `base` that is no perf.data file.
pub fn check_ksymbols(data: &[u8], base: &[u8], kallsyms: &Path) -> bool {
    match code_records(base, data) {
        Some(file) => check_perf_data(&file, kallsyms),
        None => false,
    }
}

/// `PERF_RECORD_KSYMBOL` and `PERF_RECORD_BPF_EVENT`.
const KSYMBOL: u32 = 17;
const BPF_EVENT: u32 = 18;

/// A KSYMBOL record as the kernel writes it (`u64 addr; u32 len; u16 ksym_type; u16
/// flags; char name[]`, NUL-terminated and padded to 8 bytes), without its header and
/// `sample_id` trailer: the body [`with_records`] frames.
pub fn ksymbol_body(addr: u64, len: u32, kind: u16, unregister: bool, name: &[u8]) -> Vec<u8> {
    let mut b = Vec::with_capacity(24 + name.len());
    b.extend_from_slice(&addr.to_le_bytes());
    b.extend_from_slice(&len.to_le_bytes());
    b.extend_from_slice(&kind.to_le_bytes());
    b.extend_from_slice(&u16::from(unregister).to_le_bytes());
    b.extend_from_slice(name);
    b.push(0);
    b.resize(b.len().next_multiple_of(8), 0);
    b
}

/// What [`with_records`] needs of a (little-endian, file-mode) recording: where its data
/// section and feature table are, its records' offsets, its first event's `sample_id`
/// trailer and the kernel addresses its samples hit.
struct Layout {
    data_at: usize,
    data_len: usize,
    features: usize,
    records: Vec<usize>,
    trailer: Vec<u8>,
    kernel_ips: Vec<u64>,
}

fn layout(base: &[u8]) -> Option<Layout> {
    let u64_at = |at: usize| Some(u64::from_le_bytes(base.get(at..at + 8)?.try_into().ok()?));
    if base.get(..8)? != b"PERFILE2" {
        return None;
    }
    let attr_size = usize::try_from(u64_at(16)?).ok()?;
    let attrs_at = usize::try_from(u64_at(24)?).ok()?;
    let (data_at, data_len) = (usize::try_from(u64_at(40)?).ok()?, usize::try_from(u64_at(48)?).ok()?);
    let features = base.get(72..104)?.iter().map(|b| b.count_ones() as usize).sum();
    if data_at < 104 {
        return None;
    }
    base.get(data_at..data_at.checked_add(data_len)?.checked_add(16 * features)?)?;
    // The first event's sample_type and flags (`sample_id_all` is bit 18).
    let sample_type = u64_at(attrs_at.checked_add(24)?)?;
    let id_all = u64_at(attrs_at.checked_add(40)?)? & (1 << 18) != 0;
    let id = u64_at(attrs_at.checked_add(attr_size)?.checked_sub(16)?)
        .and_then(|at| u64_at(usize::try_from(at).ok()?))
        .unwrap_or(0);
    // TID, TIME (0: before every other record of its round), ID, STREAM_ID, CPU,
    // IDENTIFIER, in the kernel's order.
    let mut trailer = Vec::new();
    if id_all {
        for (bit, value) in [
            (1 << 1, 0),
            (1 << 2, 0),
            (1 << 6, id),
            (1 << 9, id),
            (1 << 7, 0),
            (1 << 16, id),
        ] {
            if sample_type & bit != 0 {
                trailer.extend_from_slice(&u64::to_le_bytes(value));
            }
        }
    }
    let mut records = Vec::new();
    let mut kernel_ips = Vec::new();
    let mut at = data_at;
    while at + 8 <= data_at + data_len {
        let size = usize::from(u16::from_le_bytes(base[at + 6..at + 8].try_into().ok()?));
        if size < 8 {
            return None;
        }
        records.push(at);
        // A sample's IP: its first field, after the IDENTIFIER where there is one.
        let kind = u32::from_le_bytes(base[at..at + 4].try_into().ok()?);
        if kind == 9 && sample_type & 1 != 0 {
            let ip_at = at + 8 + if sample_type & (1 << 16) != 0 { 8 } else { 0 };
            if let Some(ip) = u64_at(ip_at).filter(|&ip| crate::model::mode::is_kernel_address(ip)) {
                kernel_ips.push(ip);
            }
        }
        at += size;
    }
    if kernel_ips.is_empty() {
        kernel_ips.push(0xffff_ffff_8100_0000);
    }
    Some(Layout {
        data_at,
        data_len,
        features,
        records,
        trailer,
        kernel_ips,
    })
}

/// `base` with records of type `kind` and body `body` put before its records of the
/// given indices (modulo their count): each framed with a header and the first event's
/// `sample_id` trailer (time 0), the data section's size and the feature sections'
/// offsets moved to match. `None` when `base` is not a little-endian perf.data file or a
/// record would pass 64 KiB.
pub fn with_records(base: &[u8], records: &[(usize, u32, Vec<u8>)]) -> Option<Vec<u8>> {
    let l = layout(base)?;
    with_records_in(base, &l, records)
}

fn with_records_in(base: &[u8], l: &Layout, records: &[(usize, u32, Vec<u8>)]) -> Option<Vec<u8>> {
    let mut before: Vec<Vec<u8>> = vec![Vec::new(); l.records.len() + 1];
    for (at, kind, body) in records {
        let size = u16::try_from(8 + body.len() + l.trailer.len()).ok()?;
        let slots = before.len();
        let out = &mut before[at % slots];
        out.extend_from_slice(&kind.to_le_bytes());
        out.extend_from_slice(&0u16.to_le_bytes());
        out.extend_from_slice(&size.to_le_bytes());
        out.extend_from_slice(body);
        out.extend_from_slice(&l.trailer);
    }
    let added: usize = before.iter().map(Vec::len).sum();
    let table = l.data_at + l.data_len;
    let mut out = Vec::with_capacity(base.len() + added);
    out.extend_from_slice(&base[..l.data_at]);
    out[48..56].copy_from_slice(&((l.data_len + added) as u64).to_le_bytes());
    let ends = l.records.iter().skip(1).copied().chain([table]);
    for ((&start, end), extra) in l.records.iter().zip(ends).zip(&before) {
        out.extend_from_slice(extra);
        out.extend_from_slice(&base[start..end]);
    }
    out.extend_from_slice(&before[l.records.len()]);
    for i in 0..l.features {
        let at = table + 16 * i;
        let offset = u64::from_le_bytes(base[at..at + 8].try_into().ok()?);
        out.extend_from_slice(&(offset + added as u64).to_le_bytes());
        out.extend_from_slice(&base[at + 8..at + 16]);
    }
    out.extend_from_slice(&base[table + 16 * l.features..]);
    Some(out)
}

/// `base` with KSYMBOL and BPF_EVENT records read from `data` (the fuzzer's bytes) put
/// among its records: for each, an operation byte and a place among the records (u16),
/// then a BPF_EVENT's 16 bytes, or a KSYMBOL's address (near a kernel address the
/// samples hit, or any), length, type, unregister flag and name (short, or past 4 KiB:
/// up to 8 of those).
/// `None` when `base` is not a little-endian perf.data file.
pub fn code_records(base: &[u8], data: &[u8]) -> Option<Vec<u8>> {
    let l = layout(base)?;
    let mut d = Bytes(data);
    let mut records = Vec::new();
    // Names past 4 KiB, each up to 20 KB: a few per input keep the file small.
    let mut long_names = 0;
    while !d.0.is_empty() {
        let op = d.u8();
        let at = usize::from(d.u16());
        if op & 3 == 3 {
            records.push((at, BPF_EVENT, d.take(16)));
            continue;
        }
        let addr = if op & 4 != 0 {
            d.u64()
        } else {
            let ip = l.kernel_ips[usize::from(d.u8()) % l.kernel_ips.len()];
            ip.wrapping_sub(u64::from(d.u16()))
        };
        let len = u32::from(d.u16());
        let n = usize::from(d.u8());
        let name = if op & 0x40 != 0 && long_names < 8 {
            long_names += 1;
            // Past 4 KiB, below a record's 64 KiB; no NUL inside.
            let fill = [d.u8() | 0x20, d.u8() | 0x20];
            (0..4000 + 64 * n).map(|i| fill[i % 2]).collect()
        } else {
            d.take(n)
        };
        let body = ksymbol_body(addr, len, u16::from((op >> 4) & 3), op & 8 != 0, &name);
        records.push((at, KSYMBOL, body));
    }
    with_records_in(base, &l, &records)
}

/// The fuzzer's bytes, read front to back; zeros past their end.
struct Bytes<'a>(&'a [u8]);

impl Bytes<'_> {
    fn take(&mut self, n: usize) -> Vec<u8> {
        let (head, rest) = self.0.split_at(n.min(self.0.len()));
        self.0 = rest;
        let mut v = head.to_vec();
        v.resize(n, 0);
        v
    }

    fn u8(&mut self) -> u8 {
        self.take(1)[0]
    }

    fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.u8(), self.u8()])
    }

    fn u64(&mut self) -> u64 {
        u64::from_le_bytes(self.take(8).try_into().unwrap_or_default())
    }
}
