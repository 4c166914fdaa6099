//! `TEST/samples.gz`: the raw samples, gzip-compressed text (`docs/format.md`).

use super::{io_err, StoreError};
use crate::fsio::{self, Links};
use flate2::read::GzDecoder;
use flate2::write::GzEncoder;
use flate2::Compression;
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
pub use upcmp_parsers::samples::MAX_LINE_BYTES;
use upcmp_parsers::samples::{Record, HEADER};

/// Streams records into a `samples.gz`.
pub struct SamplesWriter {
    out: GzEncoder<BufWriter<File>>,
    path: PathBuf,
}

impl SamplesWriter {
    /// Creates `path` and writes the header.
    pub fn create(path: &Path) -> Result<Self, StoreError> {
        let f = File::create(path).map_err(io_err(path))?;
        let mut out = GzEncoder::new(BufWriter::new(f), Compression::fast());
        writeln!(out, "{HEADER}").map_err(io_err(path))?;
        Ok(SamplesWriter {
            out,
            path: path.to_path_buf(),
        })
    }

    /// Appends one record.
    pub fn write(&mut self, r: &Record) -> Result<(), StoreError> {
        let o = &mut self.out;
        let res = match r {
            Record::Sample(s) => {
                let mut res = write!(o, "s {} {} {} {} {}", s.time_ns, s.cpu, s.pid, s.tid, s.mode.code());
                if let Some(p) = s.period {
                    res = res.and_then(|_| write!(o, " @{p}"));
                }
                res = res.and_then(|_| write!(o, " {:x}", s.pc));
                for pc in &s.callchain {
                    res = res.and_then(|_| write!(o, " {pc:x}"));
                }
                res.and_then(|_| writeln!(o))
            }
            Record::Comm { pid, tid, comm } => writeln!(o, "c {pid} {tid} {}", comm.replace(['\n', '\r'], " ")),
            Record::Fork { pid, ppid, tid, ptid } => writeln!(o, "f {pid} {ppid} {tid} {ptid}"),
            Record::Lost { cpu, count } => writeln!(o, "l {cpu} {count}"),
            Record::Throttle { cpu } => writeln!(o, "t {cpu}"),
        };
        res.map_err(io_err(&self.path))
    }

    /// Finishes the gzip stream and flushes it to disk.
    pub fn finish(self) -> Result<(), StoreError> {
        let path = self.path;
        let inner = self.out.finish().map_err(io_err(&path))?;
        let f = inner.into_inner().map_err(|e| io_err(&path)(e.into_error()))?;
        f.sync_all().map_err(io_err(&path))
    }
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
/// [`MAX_LINE_BYTES`], CPU numbers checked, command names cut).
pub fn for_each_record(path: &Path, f: impl FnMut(Record)) -> Result<(), StoreError> {
    let file = fsio::open_regular(path, Links::Refuse).map_err(io_err(path))?;
    let compressed = file.metadata().map_err(io_err(path))?.len();
    let reader = BufReader::new(Capped {
        inner: GzDecoder::new(file),
        read: 0,
        cap: max_text_bytes(compressed),
    });
    upcmp_parsers::samples::for_each_record(reader, &path.display().to_string(), f)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use upcmp_parsers::samples::{Mode, Sample};

    #[test]
    fn round_trip() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("samples.gz");
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
                mode: Mode::Kernel,
                period: Some(1_000_000),
                pc: 0xffffffff81000000,
                callchain: vec![0xfffffffffffffe00, 0x10],
            }),
            Record::Lost { cpu: 1, count: 3 },
            Record::Fork {
                pid: 2,
                ppid: 1,
                tid: 2,
                ptid: 1,
            },
            Record::Throttle { cpu: 0 },
        ];
        let mut w = SamplesWriter::create(&p).unwrap();
        for r in &recs {
            w.write(r).unwrap();
        }
        w.finish().unwrap();
        let mut back = Vec::new();
        for_each_record(&p, |r| back.push(r)).unwrap();
        assert_eq!(back, recs);
    }

    #[test]
    fn a_corrupt_line_is_located() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("samples.gz");
        let mut e = GzEncoder::new(File::create(&p).unwrap(), Compression::fast());
        write!(e, "{HEADER}\nt 0\ns 1 2\n").unwrap();
        e.finish().unwrap();
        let err = for_each_record(&p, |_| {}).unwrap_err().to_string();
        assert!(err.contains("samples.gz:3:"), "{err}");
    }
}
