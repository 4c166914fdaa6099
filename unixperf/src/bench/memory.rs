//! Virtual memory and memory bandwidth: mmap, page faults, bcopy, bzero.

use std::hint::black_box;
use std::path::{Path, PathBuf};

use crate::sys::{self, check_failed, cvt, os_error, Fd, Result};
use crate::workload::Workload;

/// A megabyte, the size of the original's mappings.
pub const MEGABYTE: usize = 1 << 20;
/// The original's walk stride: "touch ... at every 1024 bytes".
pub const WALK_STRIDE: usize = 1024;

fn page_size() -> usize {
    unsafe { libc::sysconf(libc::_SC_PAGESIZE) as usize }
}

/// `mmap` of a private megabyte of /dev/zero, then `munmap`, optionally touching it.
pub struct DevZero {
    fd: Fd,
    walk: bool,
    /// Mappings made and removed.
    pub maps: u64,
}

impl DevZero {
    /// Opens /dev/zero. With `walk`, each mapping is written at every 1024 bytes.
    pub fn new(walk: bool) -> Result<Self> {
        let path = sys::cstring("/dev/zero")?;
        let fd = Fd(cvt(
            unsafe { libc::open(path.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) },
            "open /dev/zero",
        )?);
        Ok(DevZero { fd, walk, maps: 0 })
    }
}

impl Workload for DevZero {
    fn run(&mut self, n: u64) -> Result<()> {
        let prot = libc::PROT_READ | libc::PROT_WRITE;
        for _ in 0..n {
            let p = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    MEGABYTE,
                    prot,
                    libc::MAP_PRIVATE,
                    self.fd.raw(),
                    0,
                )
            };
            if p == libc::MAP_FAILED {
                return Err(os_error("mmap /dev/zero"));
            }
            let bytes = p as *mut u8;
            if self.walk {
                for off in (0..MEGABYTE).step_by(WALK_STRIDE) {
                    unsafe { bytes.add(off).write_volatile(1) };
                }
                // /dev/zero's pages start zeroed and keep what we wrote.
                let first = unsafe { bytes.read_volatile() };
                let between = unsafe { bytes.add(1).read_volatile() };
                if first != 1 || between != 0 {
                    unsafe { libc::munmap(p, MEGABYTE) };
                    return Err(check_failed("devzerowalk: mapping does not hold what was written"));
                }
            }
            if unsafe { libc::munmap(p, MEGABYTE) } < 0 {
                return Err(os_error("munmap"));
            }
        }
        self.maps += n;
        Ok(())
    }
}

/// `mmap` of a megabyte file, copy of every byte out of it, `munmap`.
pub struct MmapMegFile {
    path: PathBuf,
    fd: Fd,
    buf: Vec<u8>,
    /// Files mapped and copied.
    pub copies: u64,
}

/// The byte at `offset` of the megabyte file.
fn file_byte(offset: usize) -> u8 {
    (offset % 251) as u8
}

impl MmapMegFile {
    /// Writes the megabyte file into `base` (removed on drop).
    pub fn new(base: &Path) -> Result<Self> {
        let path = base.join("mmapmegfile");
        let content: Vec<u8> = (0..MEGABYTE).map(file_byte).collect();
        std::fs::write(&path, &content).map_err(|e| check_failed(format!("writing {path:?}: {e}")))?;
        let c = sys::cpath(&path)?;
        let fd = Fd(cvt(
            unsafe { libc::open(c.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) },
            "open megabyte file",
        )?);
        Ok(MmapMegFile {
            path,
            fd,
            buf: vec![0; MEGABYTE],
            copies: 0,
        })
    }
}

impl Workload for MmapMegFile {
    fn run(&mut self, n: u64) -> Result<()> {
        for _ in 0..n {
            let p = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    MEGABYTE,
                    libc::PROT_READ,
                    libc::MAP_SHARED,
                    self.fd.raw(),
                    0,
                )
            };
            if p == libc::MAP_FAILED {
                return Err(os_error("mmap file"));
            }
            unsafe { std::ptr::copy_nonoverlapping(p as *const u8, self.buf.as_mut_ptr(), MEGABYTE) };
            black_box(&mut self.buf);
            if unsafe { libc::munmap(p, MEGABYTE) } < 0 {
                return Err(os_error("munmap"));
            }
        }
        for off in (0..MEGABYTE).step_by(4093) {
            if n > 0 && self.buf[off] != file_byte(off) {
                return Err(check_failed(format!("mmapmegfile: byte {off} of the copy is wrong")));
            }
        }
        self.copies += n;
        Ok(())
    }
}

impl Drop for MmapMegFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// First write to each page of fresh anonymous memory: one operation is one page fault.
/// Memory is mapped a megabyte at a time and unmapped once written.
pub struct PageFault {
    page: usize,
    /// Pages written (faulted in).
    pub faults: u64,
}

impl PageFault {
    /// Reads the page size.
    pub fn new() -> Self {
        PageFault {
            page: page_size(),
            faults: 0,
        }
    }
}

impl Default for PageFault {
    fn default() -> Self {
        Self::new()
    }
}

impl Workload for PageFault {
    fn run(&mut self, n: u64) -> Result<()> {
        let pages_per_map = (MEGABYTE / self.page) as u64;
        let mut left = n;
        while left > 0 {
            let pages = left.min(pages_per_map) as usize;
            let len = pages * self.page;
            let prot = libc::PROT_READ | libc::PROT_WRITE;
            let flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS;
            let p = unsafe { libc::mmap(std::ptr::null_mut(), len, prot, flags, -1, 0) };
            if p == libc::MAP_FAILED {
                return Err(os_error("mmap anonymous"));
            }
            // No transparent huge page may turn 256 faults into one.
            unsafe { libc::madvise(p, len, libc::MADV_NOHUGEPAGE) };
            let bytes = p as *mut u8;
            for i in 0..pages {
                unsafe { bytes.add(i * self.page).write_volatile(1) };
            }
            if unsafe { libc::munmap(p, len) } < 0 {
                return Err(os_error("munmap"));
            }
            left -= pages as u64;
        }
        self.faults += n;
        Ok(())
    }
}

/// Where bcopy's and bzero's buffers start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    /// As the allocator returns them.
    Plain,
    /// On a 64-byte cache line.
    CacheLine,
    /// Destination 2 bytes past a cache line: not 4-byte (word) aligned.
    WordMisaligned,
    /// Destination 4 bytes past a cache line: word but not 8-byte (dword) aligned.
    DwordMisaligned,
}

impl Align {
    fn dst_offset(self) -> usize {
        match self {
            Align::Plain | Align::CacheLine => 0,
            Align::WordMisaligned => 2,
            Align::DwordMisaligned => 4,
        }
    }
}

/// A buffer of `len` bytes starting as `align` asks.
struct Buffer {
    storage: Vec<u8>,
    start: usize,
    len: usize,
}

impl Buffer {
    fn new(len: usize, align: Align, fill: u8) -> Self {
        let storage = vec![fill; len + 128];
        let start = match align {
            Align::Plain => 0,
            _ => {
                let addr = storage.as_ptr() as usize;
                (64 - addr % 64) % 64 + align.dst_offset()
            }
        };
        Buffer { storage, start, len }
    }

    fn ptr(&mut self) -> *mut u8 {
        unsafe { self.storage.as_mut_ptr().add(self.start) }
    }

    fn bytes(&self) -> &[u8] {
        &self.storage[self.start..self.start + self.len]
    }
}

/// `memmove` (bcopy) of `size` bytes between two buffers.
pub struct Bcopy {
    src: Buffer,
    dst: Buffer,
    /// Copies made.
    pub copies: u64,
}

impl Bcopy {
    /// Allocates and fills the buffers outside the timed loop.
    pub fn new(size: usize, align: Align) -> Self {
        let src_align = if align == Align::Plain {
            Align::Plain
        } else {
            Align::CacheLine
        };
        let mut src = Buffer::new(size, src_align, 0);
        for (i, b) in src.storage.iter_mut().enumerate() {
            *b = (i % 253) as u8;
        }
        Bcopy {
            src,
            dst: Buffer::new(size, align, 0),
            copies: 0,
        }
    }
}

impl Workload for Bcopy {
    fn run(&mut self, n: u64) -> Result<()> {
        let len = self.src.len;
        let (s, d) = (self.src.ptr(), self.dst.ptr());
        for _ in 0..n {
            // bcopy allows overlap, so memmove it is; black_box keeps each copy.
            unsafe { std::ptr::copy(black_box(s), black_box(d), len) };
        }
        if n > 0 && self.src.bytes() != self.dst.bytes() {
            return Err(check_failed("bcopy: destination differs from source"));
        }
        self.copies += n;
        Ok(())
    }
}

/// `memset` to zero (bzero) of `size` bytes.
pub struct Bzero {
    buf: Buffer,
    /// Clears made.
    pub clears: u64,
}

impl Bzero {
    /// Allocates the buffer, non-zero so the first clear has work to show.
    pub fn new(size: usize, align: Align) -> Self {
        Bzero {
            buf: Buffer::new(size, align, 0xa5),
            clears: 0,
        }
    }
}

impl Workload for Bzero {
    fn run(&mut self, n: u64) -> Result<()> {
        let len = self.buf.len;
        let p = self.buf.ptr();
        for _ in 0..n {
            unsafe { std::ptr::write_bytes(black_box(p), 0, len) };
        }
        if n > 0 && self.buf.bytes().iter().any(|&b| b != 0) {
            return Err(check_failed("bzero: buffer not zero"));
        }
        self.clears += n;
        Ok(())
    }
}

/// An empty loop iteration: the harness's own cost per operation, the reference of
/// `-scaling`.
#[derive(Debug, Default)]
pub struct EmptyLoop {
    /// Iterations made.
    pub iterations: u64,
}

impl Workload for EmptyLoop {
    fn run(&mut self, n: u64) -> Result<()> {
        for i in 0..n {
            black_box(i);
        }
        self.iterations += n;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Minor page faults of this thread.
    fn minor_faults() -> u64 {
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
        ru.ru_minflt as u64
    }

    #[test]
    fn devzero_maps_and_walk_faults_every_page() {
        let mut map = DevZero::new(false).unwrap();
        map.run(10).unwrap();
        assert_eq!(map.maps, 10);
        let mut walk = DevZero::new(true).unwrap();
        let before = minor_faults();
        walk.run(4).unwrap();
        let pages = (MEGABYTE / page_size()) as u64;
        assert!(
            minor_faults() - before >= 4 * pages,
            "{} faults",
            minor_faults() - before
        );
        assert_eq!(walk.maps, 4);
    }

    #[test]
    fn pagefault_faults_once_per_operation() {
        let mut w = PageFault::new();
        let before = minor_faults();
        w.run(300).unwrap();
        let faults = minor_faults() - before;
        assert!(faults >= 300, "{faults} faults");
        assert_eq!(w.faults, 300);
    }

    #[test]
    fn mmapmegfile_copies_the_file() {
        let dir = std::env::temp_dir().join(format!("unixperf-unit-{}-mmap", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut w = MmapMegFile::new(&dir).unwrap();
        w.run(3).unwrap();
        assert_eq!(w.copies, 3);
        assert_eq!(w.buf[MEGABYTE - 1], file_byte(MEGABYTE - 1));
        drop(w);
        std::fs::remove_dir(&dir).unwrap();
    }

    #[test]
    fn bcopy_and_bzero_do_their_bytes_at_each_alignment() {
        for align in [
            Align::Plain,
            Align::CacheLine,
            Align::WordMisaligned,
            Align::DwordMisaligned,
        ] {
            let mut c = Bcopy::new(16 * 1024, align);
            c.run(5).unwrap();
            assert_eq!(c.dst.bytes(), c.src.bytes());
            let dst = c.dst.ptr() as usize;
            match align {
                Align::CacheLine => assert_eq!(dst % 64, 0),
                Align::WordMisaligned => assert_eq!(dst % 4, 2),
                Align::DwordMisaligned => assert_eq!(dst % 8, 4),
                Align::Plain => {}
            }
            let mut z = Bzero::new(256, align);
            assert!(z.buf.bytes().iter().all(|&b| b == 0xa5));
            z.run(3).unwrap();
            assert_eq!(z.clears, 3);
        }
    }
}
