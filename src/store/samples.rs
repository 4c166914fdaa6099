//! `TEST/samples.gz`: the raw samples, gzip-compressed text (`docs/format.md`).

use super::{io_err, StoreError};
use crate::fsio::{self, Links};
use flate2::read::GzDecoder;
use flate2::write::GzEncoder;
use flate2::Compression;
use std::collections::HashMap;
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
pub use upcmp_parsers::samples::MAX_LINE_BYTES;
use upcmp_parsers::samples::{Record, Sample, HEADER, MAX_CHAINS, MAX_CHAIN_FRAMES, MAX_TABLE_FRAMES};

/// The gzip level. A stack sample of a loaded machine's run (docs/import.md) takes, in
/// bytes on disk and CPU time to write: 19.0 and 0.64 us at level 1 (flate2's level 1 is a
/// fast mode that finds few repeats), 15.2 and 0.98 us at 3, 14.4 and 1.03 us at 4, 14.2
/// and 1.2 us at 5, 13.8 and 1.95 us at 6.
const LEVEL: u32 = 4;

/// Streams records into a `samples.gz` (version 4: each call chain written once, the
/// kernel's code changes kept).
pub struct SamplesWriter {
    /// Buffered before the encoder: each small write into it costs a call into deflate.
    out: BufWriter<GzEncoder<File>>,
    path: PathBuf,
    /// The previous sample's time.
    time_ns: u64,
    /// The chains defined so far, by their frames (`None` for the sample's PC), with their
    /// ids; as the reader's table, at most MAX_CHAINS chains and MAX_TABLE_FRAMES frames.
    chains: HashMap<Box<[Option<u64>]>, u32>,
    table_frames: usize,
    /// The chain being looked up, reused from sample to sample.
    key: Vec<Option<u64>>,
}

impl SamplesWriter {
    /// Creates `path` and writes the header.
    pub fn create(path: &Path) -> Result<Self, StoreError> {
        // A new file in a new test directory: created exclusively, never through a link.
        let f = crate::fsio::create_new(path, 0o666).map_err(io_err(path))?;
        let mut out = BufWriter::with_capacity(64 << 10, GzEncoder::new(f, Compression::new(LEVEL)));
        writeln!(out, "{HEADER}").map_err(io_err(path))?;
        Ok(SamplesWriter {
            out,
            path: path.to_path_buf(),
            time_ns: 0,
            chains: HashMap::new(),
            table_frames: 0,
            key: Vec::new(),
        })
    }

    /// Appends one record.
    pub fn write(&mut self, r: &Record) -> Result<(), StoreError> {
        let o = &mut self.out;
        let res = match r {
            Record::Sample(s) => return self.write_sample(s),
            Record::Comm { pid, tid, comm } => writeln!(o, "c {pid} {tid} {}", comm.replace(['\n', '\r'], " ")),
            Record::Fork { pid, ppid, tid, ptid } => writeln!(o, "f {pid} {ppid} {tid} {ptid}"),
            Record::Lost { cpu, count } => writeln!(o, "l {cpu} {count}"),
            Record::Throttle { cpu } => writeln!(o, "t {cpu}"),
            Record::Ksymbol(k) => writeln!(
                o,
                "y {:x} {:x} {} {} {}",
                k.addr,
                k.len,
                k.kind,
                if k.unregister { '-' } else { '+' },
                k.name.replace(['\n', '\r'], " ")
            ),
            Record::BpfEvent { kind, id, tag } => {
                writeln!(o, "b {kind} {id} {:016x}", u64::from_be_bytes(*tag))
            }
        };
        res.map_err(io_err(&self.path))
    }

    // k 0 -80 = -7eef5b80 +af5c7c
    // s 81234567890 1 4242 4242 k @1000000 ffffffff8110a2b0 *0 %t
    fn write_sample(&mut self, s: &Sample) -> Result<(), StoreError> {
        let chain = if s.callchain.is_empty() {
            None
        } else {
            Some(self.chain_id(s)?)
        };
        // The reader adds the difference back with wrapping arithmetic.
        let delta = s.time_ns.wrapping_sub(self.time_ns) as i64;
        self.time_ns = s.time_ns;
        let o = &mut self.out;
        let mut res = write!(o, "s {delta} {} {} {} {}", s.cpu, s.pid, s.tid, s.mode.code());
        if let Some(p) = s.period {
            res = res.and_then(|_| write!(o, " @{p}"));
        }
        res = res.and_then(|_| write!(o, " {:x}", s.pc));
        if let Some(id) = chain {
            res = res.and_then(|_| write!(o, " *{id}"));
        }
        if let Some(w) = s.owner {
            res = res.and_then(|_| write!(o, " %{}", w.code()));
        }
        res.and_then(|_| writeln!(o)).map_err(io_err(&self.path))
    }

    /// The id of the sample's chain, defined first (a `k` line) if it is new. The sample's
    /// PC is left out of the chain (`=`), so that samples at different places under the same
    /// callers share one.
    fn chain_id(&mut self, s: &Sample) -> Result<u32, StoreError> {
        self.key.clear();
        self.key.extend(s.callchain.iter().map(|&f| (f != s.pc).then_some(f)));
        if let Some(&id) = self.chains.get(&self.key[..]) {
            return Ok(id);
        }
        let frames = self.key.len();
        if frames > MAX_CHAIN_FRAMES {
            return Err(io_err(&self.path)(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("a call chain of {frames} frames, more than the {MAX_CHAIN_FRAMES} a samples stream holds"),
            )));
        }
        if self.chains.len() == MAX_CHAINS || self.table_frames + frames > MAX_TABLE_FRAMES {
            // A new table, so that a reader's stays bounded.
            self.chains.clear();
            self.table_frames = 0;
        }
        // Below MAX_CHAINS, which fits.
        let id = self.chains.len() as u32;
        self.write_chain(id).map_err(io_err(&self.path))?;
        self.chains.insert(self.key.clone().into_boxed_slice(), id);
        self.table_frames += frames;
        Ok(id)
    }

    /// Writes the `k` line of chain `id`, the chain in `self.key`: each frame as the
    /// shorter of its address and its difference from the frame before (`+X`, `-X`), which
    /// is short between functions of one program and repeats where a stack does.
    fn write_chain(&mut self, id: u32) -> std::io::Result<()> {
        let o = &mut self.out;
        write!(o, "k {id}")?;
        let mut previous = 0u64;
        for frame in &self.key {
            let Some(address) = *frame else {
                write!(o, " =")?;
                continue;
            };
            let up = address.wrapping_sub(previous);
            let down = previous.wrapping_sub(address);
            if hex_len(up).min(hex_len(down)) + 1 < hex_len(address) {
                if up <= down {
                    write!(o, " +{up:x}")?;
                } else {
                    write!(o, " -{down:x}")?;
                }
            } else {
                write!(o, " {address:x}")?;
            }
            previous = address;
        }
        writeln!(o)
    }

    /// Finishes the gzip stream and flushes it to disk.
    pub fn finish(self) -> Result<(), StoreError> {
        let path = self.path;
        let gz = self.out.into_inner().map_err(|e| io_err(&path)(e.into_error()))?;
        let f = gz.finish().map_err(io_err(&path))?;
        f.sync_all().map_err(io_err(&path))
    }
}

/// The number of hex digits of `v`.
fn hex_len(v: u64) -> u32 {
    (64 - v.leading_zeros()).div_ceil(4).max(1)
}

/// The most text a `samples.gz` may expand to: 100 times its compressed size (the
/// collector's text compresses about 5 times), and at least 256 MiB. A gzip bomb stops
/// there with an error instead of running for minutes.
pub fn max_text_bytes(compressed: u64) -> u64 {
    compressed.saturating_mul(100).max(256 << 20)
}

/// Counts what passes through, and fails past a cap.
struct Capped<R> {
    inner: R,
    read: u64,
    cap: u64,
}

impl<R: Read> Read for Capped<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read += n as u64;
        if self.read > self.cap {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!(
                    "expands to more than {} (100 times its compressed size): not samples uprun wrote",
                    crate::fsio::human_bytes(self.cap)
                ),
            ));
        }
        Ok(n)
    }
}

/// Reads a `samples.gz` of a run record by record, in bounded memory: a regular file (no
/// symbolic link), at most [`max_text_bytes`] of text, read by the parser's
/// [`for_each_record`](upcmp_parsers::samples::for_each_record) (lines of at most
/// [`MAX_LINE_BYTES`], CPU numbers checked, command names cut, call chains of at most
/// one frame a byte of that text in all), any version.
pub fn for_each_record(path: &Path, f: impl FnMut(Record)) -> Result<(), StoreError> {
    let file = fsio::open_regular(path, Links::Refuse).map_err(io_err(path))?;
    let compressed = file.metadata().map_err(io_err(path))?.len();
    let cap = max_text_bytes(compressed);
    let reader = BufReader::new(Capped {
        inner: GzDecoder::new(file),
        read: 0,
        cap,
    });
    let max_frames = upcmp_parsers::samples::max_frames(cap);
    upcmp_parsers::samples::for_each_record(reader, &path.display().to_string(), max_frames, f)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use upcmp_parsers::samples::Mode;

    fn sample(time_ns: u64, pc: u64, callchain: &[u64]) -> Record {
        Record::Sample(Sample {
            time_ns,
            cpu: 1,
            pid: 4242,
            tid: 4242,
            mode: Mode::Kernel,
            period: Some(1_000_000),
            pc,
            callchain: callchain.to_vec(),
            owner: Some(upcmp_parsers::samples::Owner::Test),
        })
    }

    /// Writes `recs` to a fresh `samples.gz`, and returns its records read back and its text.
    fn round_trip(recs: &[Record]) -> (Vec<Record>, String) {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("samples.gz");
        let mut w = SamplesWriter::create(&p).unwrap();
        for r in recs {
            w.write(r).unwrap();
        }
        w.finish().unwrap();
        let mut back = Vec::new();
        for_each_record(&p, |r| back.push(r)).unwrap();
        let mut text = String::new();
        GzDecoder::new(File::open(&p).unwrap())
            .read_to_string(&mut text)
            .unwrap();
        (back, text)
    }

    #[test]
    fn every_record_comes_back() {
        let recs = vec![
            Record::Comm {
                pid: 1,
                tid: 1,
                comm: "init".into(),
            },
            Record::Sample(Sample {
                time_ns: 9,
                cpu: 1,
                pid: 1,
                tid: 1,
                mode: Mode::GuestUser,
                period: None,
                pc: 0xffffffff81000000,
                callchain: vec![0xfffffffffffffe00, 0x10],
                // Issue 31: whose the sample is comes back.
                owner: Some(upcmp_parsers::samples::Owner::Other),
            }),
            Record::Lost { cpu: 1, count: 3 },
            Record::Fork {
                pid: 2,
                ppid: 1,
                tid: 2,
                ptid: 1,
            },
            Record::Throttle { cpu: 0 },
            // Issue 30: a BPF program loaded and unloaded.
            Record::BpfEvent {
                kind: 1,
                id: 42,
                tag: [0x6d, 0xee, 0xf7, 0x35, 0x7e, 0x7b, 0x45, 0x30],
            },
            Record::Ksymbol(upcmp_parsers::samples::Ksymbol {
                addr: 0xffffffffc0012000,
                len: 0x1a4,
                kind: 1,
                unregister: false,
                name: "bpf_prog_6deef7357e7b4530_sd_fw_ingress".into(),
            }),
            Record::Ksymbol(upcmp_parsers::samples::Ksymbol {
                addr: 0xffffffffc0012000,
                len: 0x1a4,
                kind: 1,
                unregister: true,
                name: "bpf_prog_6deef7357e7b4530_sd_fw_ingress".into(),
            }),
            // Without a chain (uprun), and times out of order (batches overlap) or at the
            // ends of the range.
            sample(5, 0x401000, &[]),
            sample(u64::MAX, 0x401000, &[]),
            sample(0, 0, &[0, u64::MAX, 0, 1 << 63, (1 << 63) - 1]),
        ];
        assert_eq!(round_trip(&recs).0, recs);
    }

    #[test]
    fn a_chain_is_written_once_under_every_pc() {
        let k = |pc| vec![0xffffffffffffff80, pc, 0xffffffff8110a400, 0xffffffff81c0007c];
        let mut recs = vec![
            sample(81234567890, 0xffffffff8110a2b0, &k(0xffffffff8110a2b0)),
            sample(81234818002, 0xffffffff8110a2c4, &k(0xffffffff8110a2c4)),
        ];
        let (back, text) = round_trip(&recs);
        assert_eq!(back, recs);
        // The example of the parser's documentation and docs/format.md.
        assert_eq!(
            text,
            "upcmp-samples 5\n\
             k 0 -80 = -7eef5b80 +af5c7c\n\
             s 81234567890 1 4242 4242 k @1000000 ffffffff8110a2b0 *0 %t\n\
             s 250112 1 4242 4242 k @1000000 ffffffff8110a2c4 *0 %t\n"
        );
        // 1000 samples over 10 chains of 40 frames (and the PC twice, in recursion): ten
        // `k` lines, in the order the chains first come.
        recs.clear();
        for i in 0..1000u64 {
            let c = i % 10;
            let pc = 0x7f00_1000_0000 + i;
            let mut chain: Vec<u64> = (0..40).map(|f| 0x7f00_0000_0000 + c * 0x100 + f * 0x40).collect();
            chain[3] = pc;
            chain[30] = pc;
            recs.push(sample(1_000_000 + i * 250_000, pc, &chain));
        }
        let (back, text) = round_trip(&recs);
        assert_eq!(back, recs);
        let ids: Vec<&str> = text
            .lines()
            .filter_map(|l| l.strip_prefix("k "))
            .map(|l| &l[..l.find(' ').unwrap()])
            .collect();
        assert_eq!(ids, ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9"]);
        assert_eq!(text.lines().count(), 1 + 10 + 1000);
        assert!(
            text.lines()
                .filter(|l| l.starts_with("s "))
                .skip(1)
                .all(|l| l.starts_with("s 250000 ")),
            "{text}"
        );
    }

    #[test]
    fn a_full_table_starts_a_new_one() {
        // More chains than a table holds: the writer starts again at `k 0`, the reader follows.
        let recs: Vec<Record> = (0..MAX_CHAINS as u64 + 3)
            .map(|i| sample(i, 1, &[0x1000 + i]))
            .collect();
        let (back, text) = round_trip(&recs);
        assert_eq!(back, recs);
        assert_eq!(text.lines().filter(|l| l.starts_with("k 0 ")).count(), 2);
        // More frames than a table holds, in chains of MAX_CHAIN_FRAMES.
        let n = MAX_TABLE_FRAMES / MAX_CHAIN_FRAMES + 1;
        let recs: Vec<Record> = (0..n as u64)
            .map(|i| sample(i, 1, &vec![i + 2; MAX_CHAIN_FRAMES]))
            .collect();
        let (back, text) = round_trip(&recs);
        assert!(back == recs, "the long chains differ");
        assert_eq!(text.lines().filter(|l| l.starts_with("k 0 ")).count(), 2);
    }

    #[test]
    fn a_chain_longer_than_a_stream_holds_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("samples.gz");
        let mut w = SamplesWriter::create(&p).unwrap();
        let err = w
            .write(&sample(1, 1, &vec![2; MAX_CHAIN_FRAMES + 1]))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("samples.gz") && err.contains("more than the 131072"),
            "{err}"
        );
    }

    #[test]
    fn older_versions_are_read_as_before() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("samples.gz");
        for (version, period) in [(1, None), (2, Some(250000))] {
            let at = period.map_or(String::new(), |p| format!(" @{p}"));
            write_gz(
                &p,
                &format!(
                    "upcmp-samples {version}\nc 7 7 sh\ns 81234567890 0 7 7 u{at} 401000 fffffffffffffe00 401000 402000\n"
                ),
            );
            let mut back = Vec::new();
            for_each_record(&p, |r| back.push(r)).unwrap();
            let want = Sample {
                time_ns: 81234567890,
                cpu: 0,
                pid: 7,
                tid: 7,
                mode: Mode::User,
                period,
                pc: 0x401000,
                callchain: vec![0xfffffffffffffe00, 0x401000, 0x402000],
                owner: None,
            };
            assert_eq!(back[1], Record::Sample(want), "version {version}");
        }
    }

    /// `text` gzipped into `p`, replacing it.
    fn write_gz(p: &std::path::Path, text: &str) {
        let mut e = GzEncoder::new(Vec::new(), Compression::fast());
        e.write_all(text.as_bytes()).unwrap();
        crate::fsio::write_atomic(p, &e.finish().unwrap(), 0o644).unwrap();
    }

    #[test]
    fn a_corrupt_line_is_located() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("samples.gz");
        write_gz(&p, &format!("{HEADER}\nt 0\ns 1 2\n"));
        let err = for_each_record(&p, |_| {}).unwrap_err().to_string();
        assert!(err.contains("samples.gz:3:"), "{err}");
        // A sample naming a chain no `k` line defined.
        write_gz(&p, &format!("{HEADER}\nk 0 ff\ns 1 0 1 1 k ff *0\ns 1 0 1 1 k ff *1\n"));
        let err = for_each_record(&p, |_| {}).unwrap_err().to_string();
        assert!(
            err.contains("samples.gz:4:16: expected a chain defined by an earlier `k` line"),
            "{err}"
        );
    }
}
