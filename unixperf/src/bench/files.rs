//! File system metadata and small writes, in a scratch directory of the copy.
//!
//! Paths are resolved relative to an open directory (`openat`, `fstatat`...), as the
//! original resolved them relative to its working directory: one path component per lookup
//! unless the test says otherwise (statlong).

use std::ffi::CString;
use std::path::{Path, PathBuf};

use crate::sys::{self, check_failed, cvt, os_error, Fd, Result};
use crate::workload::Workload;

/// The original's batch: "per-file cost of ... 100 files".
pub const FILES: usize = 100;

/// A fresh directory `name` under `base`, opened, removed with its contents on drop.
struct Scratch {
    path: PathBuf,
    dir: Fd,
}

impl Scratch {
    fn new(base: &Path, name: &str) -> Result<Self> {
        let path = base.join(name);
        // A leftover of an earlier, killed run must not make the counts wrong.
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).map_err(|e| check_failed(format!("creating {path:?}: {e}")))?;
        let dir = sys::open_dir(&sys::cpath(&path)?)?;
        Ok(Scratch { path, dir })
    }

    fn raw(&self) -> libc::c_int {
        self.dir.raw()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// The names `f000` .. `f099`, as C strings built outside the timed loop.
fn names(prefix: &str) -> Vec<CString> {
    (0..FILES)
        .map(|i| CString::new(format!("{prefix}{i:03}")).unwrap())
        .collect()
}

/// Creates the files `names` (empty, mode 0644 whatever the umask) in `dir`.
fn create_files(dir: &Scratch, names: &[CString]) -> Result<()> {
    for name in names {
        let flags = libc::O_CREAT | libc::O_WRONLY | libc::O_CLOEXEC;
        let fd = cvt(
            unsafe { libc::openat(dir.raw(), name.as_ptr(), flags, 0o644) },
            "create file",
        )?;
        let chmod = unsafe { libc::fchmod(fd, 0o644) };
        unsafe { libc::close(fd) };
        cvt(chmod, "chmod")?;
    }
    Ok(())
}

/// `open` and immediate `close` of one of 100 existing files, in turn.
pub struct OpenClose {
    dir: Scratch,
    names: Vec<CString>,
    /// Files opened and closed.
    pub opened: u64,
}

impl OpenClose {
    /// Creates the 100 files.
    pub fn new(base: &Path) -> Result<Self> {
        let dir = Scratch::new(base, "openclose")?;
        let names = names("f");
        create_files(&dir, &names)?;
        Ok(OpenClose { dir, names, opened: 0 })
    }
}

impl Workload for OpenClose {
    fn run(&mut self, n: u64) -> Result<()> {
        for i in 0..n {
            let name = &self.names[((self.opened + i) % FILES as u64) as usize];
            let flags = libc::O_RDONLY | libc::O_CLOEXEC;
            let fd = unsafe { libc::openat(self.dir.raw(), name.as_ptr(), flags) };
            if fd < 0 {
                return Err(os_error("open"));
            }
            if unsafe { libc::close(fd) } < 0 {
                return Err(os_error("close"));
            }
        }
        self.opened += n;
        Ok(())
    }
}

/// What [`CreateRemove`] creates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Entry {
    /// Files: `open(O_CREAT|O_EXCL)`+`close`, then `unlink`.
    File,
    /// Directories: `mkdir`, then `rmdir`.
    Dir,
}

/// Creates up to 100 entries, then removes them all; one operation is one entry.
pub struct CreateRemove {
    dir: Scratch,
    entry: Entry,
    names: Vec<CString>,
    /// Entries created and removed again.
    pub created: u64,
}

impl CreateRemove {
    /// An empty scratch directory.
    pub fn new(base: &Path, entry: Entry) -> Result<Self> {
        let name = match entry {
            Entry::File => "createunlink",
            Entry::Dir => "mkdirrmdir",
        };
        Ok(CreateRemove {
            dir: Scratch::new(base, name)?,
            entry,
            names: names("e"),
            created: 0,
        })
    }
}

impl Workload for CreateRemove {
    fn run(&mut self, n: u64) -> Result<()> {
        let dir = self.dir.raw();
        let mut left = n;
        while left > 0 {
            let batch = left.min(FILES as u64) as usize;
            for name in &self.names[..batch] {
                let p = name.as_ptr();
                match self.entry {
                    Entry::File => {
                        // O_EXCL: each create really creates.
                        let flags = libc::O_CREAT | libc::O_EXCL | libc::O_WRONLY | libc::O_CLOEXEC;
                        let fd = unsafe { libc::openat(dir, p, flags, 0o644) };
                        if fd < 0 || unsafe { libc::close(fd) } < 0 {
                            return Err(os_error("create file"));
                        }
                    }
                    Entry::Dir => {
                        if unsafe { libc::mkdirat(dir, p, 0o755) } < 0 {
                            return Err(os_error("mkdir"));
                        }
                    }
                }
            }
            let flags = if self.entry == Entry::Dir {
                libc::AT_REMOVEDIR
            } else {
                0
            };
            for name in &self.names[..batch] {
                if unsafe { libc::unlinkat(dir, name.as_ptr(), flags) } < 0 {
                    return Err(os_error("unlink"));
                }
            }
            left -= batch as u64;
        }
        self.created += n;
        Ok(())
    }
}

/// `stat` of a path relative to the scratch directory, checked against its inode.
pub struct Stat {
    dir: Scratch,
    path: CString,
    ino: libc::ino_t,
    /// Successful stats of the right inode.
    pub stats: u64,
}

impl Stat {
    /// `stat(".")` of the scratch directory: the original's "stat'ing current dir".
    pub fn current_dir(base: &Path) -> Result<Self> {
        Self::with(Scratch::new(base, "stat")?, ".")
    }

    /// `stat("a/b/c/d/e")`: a 5 component path.
    pub fn long_path(base: &Path) -> Result<Self> {
        let dir = Scratch::new(base, "statlong")?;
        let long = "a/b/c/d/e";
        std::fs::create_dir_all(dir.path.join(long)).map_err(|e| check_failed(format!("mkdir {long}: {e}")))?;
        Self::with(dir, long)
    }

    fn with(dir: Scratch, path: &str) -> Result<Self> {
        let path = sys::cstring(path)?;
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        cvt(unsafe { libc::fstatat(dir.raw(), path.as_ptr(), &mut st, 0) }, "stat")?;
        Ok(Stat {
            dir,
            path,
            ino: st.st_ino,
            stats: 0,
        })
    }
}

impl Workload for Stat {
    fn run(&mut self, n: u64) -> Result<()> {
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        for _ in 0..n {
            if unsafe { libc::fstatat(self.dir.raw(), self.path.as_ptr(), &mut st, 0) } < 0 {
                return Err(os_error("stat"));
            }
            if st.st_ino != self.ino || st.st_mode & libc::S_IFMT != libc::S_IFDIR {
                return Err(check_failed(format!("stat {:?}: not the directory it was", self.path)));
            }
        }
        self.stats += n;
        Ok(())
    }
}

/// `opendir(".")`, `readdir` to the end and `stat` of each of its 100 files, `closedir`.
pub struct StatDir {
    dir: Scratch,
    dot: CString,
    /// Files stat'ed, 100 per operation.
    pub stats: u64,
}

impl StatDir {
    /// Creates the 100 files.
    pub fn new(base: &Path) -> Result<Self> {
        let dir = Scratch::new(base, "statdir")?;
        create_files(&dir, &names("f"))?;
        Ok(StatDir {
            dir,
            dot: sys::cstring(".")?,
            stats: 0,
        })
    }
}

impl Workload for StatDir {
    fn run(&mut self, n: u64) -> Result<()> {
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        for _ in 0..n {
            let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC;
            let fd = unsafe { libc::openat(self.dir.raw(), self.dot.as_ptr(), flags) };
            if fd < 0 {
                return Err(os_error("open directory"));
            }
            let d = unsafe { libc::fdopendir(fd) };
            if d.is_null() {
                unsafe { libc::close(fd) };
                return Err(os_error("fdopendir"));
            }
            let mut files = 0;
            loop {
                let ent = unsafe { libc::readdir(d) };
                if ent.is_null() {
                    break;
                }
                let name = unsafe { (*ent).d_name.as_ptr() };
                // Skip "." and "..".
                let bytes = unsafe { std::ffi::CStr::from_ptr(name) }.to_bytes();
                if bytes == b"." || bytes == b".." {
                    continue;
                }
                if unsafe { libc::fstatat(fd, name, &mut st, 0) } < 0 {
                    unsafe { libc::closedir(d) };
                    return Err(os_error("stat"));
                }
                if st.st_mode & libc::S_IFMT == libc::S_IFREG {
                    files += 1;
                }
            }
            unsafe { libc::closedir(d) };
            if files != FILES {
                return Err(check_failed(format!("statdir: found {files} files, expected {FILES}")));
            }
            self.stats += FILES as u64;
        }
        Ok(())
    }
}

/// `chmod` of one of 100 files, toggling its mode between 0644 and 0600 on each round.
pub struct Chmod {
    dir: Scratch,
    names: Vec<CString>,
    /// chmod calls made.
    pub chmods: u64,
}

impl Chmod {
    /// Creates the 100 files.
    pub fn new(base: &Path) -> Result<Self> {
        let dir = Scratch::new(base, "chmod")?;
        let names = names("f");
        create_files(&dir, &names)?;
        Ok(Chmod { dir, names, chmods: 0 })
    }

    /// The mode the `k`-th chmod (0-based) sets: rounds of 100 alternate.
    fn mode_of(k: u64) -> libc::mode_t {
        if (k / FILES as u64) & 1 == 0 {
            0o600
        } else {
            0o644
        }
    }

    /// Checks that every file has the mode its last chmod gave it.
    pub fn check_modes(&self) -> Result<()> {
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        for (i, name) in self.names.iter().enumerate() {
            cvt(
                unsafe { libc::fstatat(self.dir.raw(), name.as_ptr(), &mut st, 0) },
                "stat",
            )?;
            // The last chmod of file i was number k with k % 100 == i, if any.
            let expected = match self.chmods {
                c if c > i as u64 => Self::mode_of((c - 1 - i as u64) / FILES as u64 * FILES as u64 + i as u64),
                _ => 0o644,
            };
            if st.st_mode & 0o777 != expected {
                return Err(check_failed(format!(
                    "chmod: {name:?} has mode {:o}, expected {expected:o}",
                    st.st_mode & 0o777
                )));
            }
        }
        Ok(())
    }
}

impl Workload for Chmod {
    fn run(&mut self, n: u64) -> Result<()> {
        for i in 0..n {
            let k = self.chmods + i;
            let name = &self.names[(k % FILES as u64) as usize];
            if unsafe { libc::fchmodat(self.dir.raw(), name.as_ptr(), Self::mode_of(k), 0) } < 0 {
                return Err(os_error("chmod"));
            }
        }
        self.chmods += n;
        Ok(())
    }

    fn finish(&mut self) -> Result<()> {
        self.check_modes()
    }
}

/// Bytes per log record.
pub const LOG_RECORD: usize = 80;
/// Records after which the log is checked and emptied, so long runs do not fill the disk
/// (10 MB; amortised, the check adds under a thousandth of a system call per write).
const LOG_RECORDS_KEPT: u64 = 131_072;

/// `write` of an 80-byte record to a log file opened with O_APPEND.
pub struct WriteLog {
    _dir: Scratch,
    fd: Fd,
    record: [u8; LOG_RECORD],
    in_file: u64,
    /// Records written.
    pub records: u64,
}

impl WriteLog {
    /// Creates the empty log.
    pub fn new(base: &Path) -> Result<Self> {
        let dir = Scratch::new(base, "writelog")?;
        let name = sys::cstring("log")?;
        let flags = libc::O_CREAT | libc::O_WRONLY | libc::O_APPEND | libc::O_CLOEXEC;
        let fd = Fd(cvt(
            unsafe { libc::openat(dir.raw(), name.as_ptr(), flags, 0o644) },
            "create log",
        )?);
        let mut record = [b'.'; LOG_RECORD];
        record[LOG_RECORD - 1] = b'\n';
        Ok(WriteLog {
            _dir: dir,
            fd,
            record,
            in_file: 0,
            records: 0,
        })
    }

    /// Checks the log holds exactly the records written since it was last emptied.
    fn check_size(&self) -> Result<()> {
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        cvt(unsafe { libc::fstat(self.fd.raw(), &mut st) }, "fstat log")?;
        let expected = self.in_file * LOG_RECORD as u64;
        if st.st_size as u64 != expected {
            return Err(check_failed(format!(
                "writelog: log has {} bytes, expected {expected}",
                st.st_size
            )));
        }
        Ok(())
    }
}

impl Workload for WriteLog {
    fn run(&mut self, n: u64) -> Result<()> {
        for _ in 0..n {
            let w = unsafe { libc::write(self.fd.raw(), self.record.as_ptr().cast(), LOG_RECORD) };
            if w != LOG_RECORD as isize {
                return Err(if w < 0 {
                    os_error("write")
                } else {
                    check_failed("writelog: short write")
                });
            }
            self.in_file += 1;
            if self.in_file == LOG_RECORDS_KEPT {
                self.check_size()?;
                cvt(unsafe { libc::ftruncate(self.fd.raw(), 0) }, "ftruncate log")?;
                self.in_file = 0;
            }
        }
        self.records += n;
        Ok(())
    }

    fn finish(&mut self) -> Result<()> {
        self.check_size()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base(name: &str) -> PathBuf {
        let p = std::env::temp_dir().join(format!("unixperf-unit-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&p).unwrap();
        p
    }

    fn entries(p: &Path) -> usize {
        std::fs::read_dir(p).unwrap().count()
    }

    #[test]
    fn openclose_opens_existing_files_and_cleans_up() {
        let b = base("openclose");
        let mut w = OpenClose::new(&b).unwrap();
        assert_eq!(entries(&b.join("openclose")), FILES);
        w.run(250).unwrap();
        assert_eq!(w.opened, 250);
        drop(w);
        assert_eq!(entries(&b), 0);
        std::fs::remove_dir(&b).unwrap();
    }

    #[test]
    fn createunlink_and_mkdirrmdir_leave_the_directory_empty() {
        let b = base("create");
        for entry in [Entry::File, Entry::Dir] {
            let mut w = CreateRemove::new(&b, entry).unwrap();
            w.run(150).unwrap();
            assert_eq!(w.created, 150);
            assert_eq!(entries(&w.dir.path), 0);
            // O_EXCL and mkdir fail on an entry that is already there: the check is real.
            std::fs::write(w.dir.path.join("e000"), b"").unwrap();
            assert!(w.run(1).is_err(), "{entry:?}");
        }
        std::fs::remove_dir_all(&b).unwrap();
    }

    #[test]
    fn stats_find_the_directory() {
        let b = base("stat");
        let mut here = Stat::current_dir(&b).unwrap();
        here.run(100).unwrap();
        let mut long = Stat::long_path(&b).unwrap();
        long.run(100).unwrap();
        assert_eq!((here.stats, long.stats), (100, 100));
        assert_ne!(here.ino, long.ino);
        let mut dir = StatDir::new(&b).unwrap();
        dir.run(3).unwrap();
        assert_eq!(dir.stats, 300);
        std::fs::write(dir.dir.path.join("extra"), b"").unwrap();
        assert!(dir.run(1).is_err());
        drop((here, long, dir));
        std::fs::remove_dir_all(&b).unwrap();
    }

    #[test]
    fn chmod_toggles_modes() {
        let b = base("chmod");
        let mut w = Chmod::new(&b).unwrap();
        w.check_modes().unwrap();
        w.run(150).unwrap();
        w.finish().unwrap();
        let mode = |i: usize| {
            let meta = std::fs::metadata(w.dir.path.join(format!("f{i:03}"))).unwrap();
            std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o777
        };
        // First round set 0600 on all 100; the second round's 50 set 0644 on f000..f049.
        assert_eq!((mode(0), mode(49), mode(50), mode(99)), (0o644, 0o644, 0o600, 0o600));
        drop(w);
        std::fs::remove_dir_all(&b).unwrap();
    }

    #[test]
    fn writelog_appends_80_bytes_per_operation() {
        let b = base("writelog");
        let mut w = WriteLog::new(&b).unwrap();
        w.run(1000).unwrap();
        w.finish().unwrap();
        let len = std::fs::metadata(b.join("writelog/log")).unwrap().len();
        assert_eq!(len, 80_000);
        assert_eq!(w.records, 1000);
        drop(w);
        std::fs::remove_dir_all(&b).unwrap();
    }
}
