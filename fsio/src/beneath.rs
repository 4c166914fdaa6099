//! Files and directories below a directory another user may write (a dataset), reached
//! without following any symbolic link: every step is an `openat` relative to the
//! directory fd before it (`O_NOFOLLOW|O_DIRECTORY` for a directory, `O_NOFOLLOW|O_NONBLOCK`
//! and a regular-file check for a file), listings read through the fd, and new files made
//! and renamed relative to the fd of their directory. A directory swapped for a link
//! between two steps is an error naming it, never a way out; one renamed elsewhere after
//! it was opened keeps what is written into it. Names are single components only: no `/`,
//! `.` or `..`.

use std::ffi::{CStr, CString, OsStr, OsString};
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::FileExt;
use std::path::{Component, Path, PathBuf};

/// What went wrong, and at which path (the directory's path joined with the names walked).
#[derive(Debug)]
pub struct Error {
    /// The path that could not be opened, listed, made or renamed.
    pub path: PathBuf,
    /// Why.
    pub source: io::Error,
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.source)
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

impl Error {
    /// Whether nothing exists at the path.
    pub fn is_not_found(&self) -> bool {
        self.source.kind() == io::ErrorKind::NotFound
    }
}

/// What a directory entry is, as `lstat` sees it (a link is a link, never its target).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A directory.
    Dir,
    /// A regular file.
    File,
    /// A symbolic link.
    Link,
    /// A FIFO, socket or device.
    Other,
}

fn kind_of_mode(mode: u32) -> Kind {
    match mode & libc::S_IFMT {
        libc::S_IFDIR => Kind::Dir,
        libc::S_IFREG => Kind::File,
        libc::S_IFLNK => Kind::Link,
        _ => Kind::Other,
    }
}

fn what(kind: Kind) -> &'static str {
    match kind {
        Kind::Dir => "a directory",
        Kind::File => "a regular file",
        Kind::Link => "a symbolic link, which is not followed here (docs/security.md)",
        Kind::Other => "a FIFO, socket or device",
    }
}

fn c_name(name: &OsStr) -> io::Result<CString> {
    let b = name.as_bytes();
    if b.is_empty() || b == b"." || b == b".." || b.contains(&b'/') {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a plain name (empty, `.`, `..` or with a `/`)",
        ));
    }
    CString::new(b).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL byte in the name"))
}

/// A directory held open; everything below it is reached through its fd.
#[derive(Debug)]
pub struct Dir {
    fd: OwnedFd,
    path: PathBuf,
}

impl Dir {
    /// Opens the directory `path` that the user named (a link in it is followed, as for any
    /// path the user gives; below it none is).
    pub fn open(path: &Path) -> Result<Dir, Error> {
        let err = |source| Error {
            path: path.to_path_buf(),
            source,
        };
        let c = CString::new(path.as_os_str().as_bytes())
            .map_err(|_| err(io::Error::new(io::ErrorKind::InvalidInput, "a NUL byte in the path")))?;
        // SAFETY: a NUL-terminated path; the fd returned is ours.
        let fd = unsafe { libc::open(c.as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC) };
        if fd < 0 {
            return Err(err(io::Error::last_os_error()));
        }
        Ok(Dir {
            // SAFETY: a new descriptor owned by nothing else.
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
            path: path.to_path_buf(),
        })
    }

    /// The directory's path, for messages.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn error(&self, name: &OsStr, source: io::Error) -> Error {
        Error {
            path: self.path.join(name),
            source,
        }
    }

    /// What `name` is, without following a link; `None` when nothing is there.
    pub fn kind(&self, name: &OsStr) -> Result<Option<Kind>, Error> {
        let c = c_name(name).map_err(|e| self.error(name, e))?;
        // SAFETY: a zeroed stat is a valid value to be overwritten.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: our fd, a NUL-terminated name and a stat to fill.
        let r = unsafe { libc::fstatat(self.fd.as_raw_fd(), c.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) };
        if r != 0 {
            let e = io::Error::last_os_error();
            return match e.kind() {
                io::ErrorKind::NotFound => Ok(None),
                _ => Err(self.error(name, e)),
            };
        }
        Ok(Some(kind_of_mode(st.st_mode)))
    }

    /// The error for an `openat` of `name` that failed with `e`: what is there when it is
    /// not what was asked for (a link, a FIFO), else `e`.
    fn open_error(&self, name: &OsStr, e: io::Error, want: Kind) -> Error {
        if matches!(
            e.raw_os_error(),
            Some(libc::ELOOP) | Some(libc::ENOTDIR) | Some(libc::ENXIO)
        ) {
            if let Ok(Some(k)) = self.kind(name) {
                if k != want {
                    let msg = format!("{}, not {}", what(k), what(want));
                    return self.error(name, io::Error::new(io::ErrorKind::InvalidInput, msg));
                }
            }
        }
        self.error(name, e)
    }

    fn openat(&self, name: &OsStr, flags: libc::c_int, mode: libc::c_uint, want: Kind) -> Result<OwnedFd, Error> {
        let c = c_name(name).map_err(|e| self.error(name, e))?;
        // SAFETY: our fd and a NUL-terminated name; the fd returned is ours.
        let fd = unsafe { libc::openat(self.fd.as_raw_fd(), c.as_ptr(), flags | libc::O_CLOEXEC, mode) };
        if fd < 0 {
            return Err(self.open_error(name, io::Error::last_os_error(), want));
        }
        // SAFETY: a new descriptor owned by nothing else.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    }

    /// Opens the directory `name` in this one; a link there is an error.
    pub fn open_dir(&self, name: &OsStr) -> Result<Dir, Error> {
        let fd = self.openat(
            name,
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW,
            0,
            Kind::Dir,
        )?;
        Ok(Dir {
            fd,
            path: self.path.join(name),
        })
    }

    /// Opens the directory at `rel` below this one, one component at a time, each a real
    /// directory.
    pub fn open_dir_beneath(&self, rel: &Path) -> Result<Dir, Error> {
        let mut names = components(rel).map_err(|e| self.error(rel.as_os_str(), e))?;
        let Some(first) = names.first().cloned() else {
            return self.try_clone();
        };
        names.remove(0);
        let mut at = self.open_dir(&first)?;
        for n in names {
            at = at.open_dir(&n)?;
        }
        Ok(at)
    }

    /// Opens the regular file `name` in this one for reading: never through a link, never
    /// blocking (a FIFO), and checked after opening to be a regular file.
    pub fn open_file(&self, name: &OsStr) -> Result<File, Error> {
        let fd = self.openat(
            name,
            libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY,
            0,
            Kind::File,
        )?;
        let file = File::from(fd);
        let meta = file.metadata().map_err(|e| self.error(name, e))?;
        let kind = kind_of_mode(std::os::unix::fs::MetadataExt::mode(&meta));
        if kind != Kind::File {
            let msg = format!("{}, not a regular file", what(kind));
            return Err(self.error(name, io::Error::new(io::ErrorKind::InvalidInput, msg)));
        }
        Ok(file)
    }

    /// Opens the regular file at `rel` below this one (see [`Dir::open_file`]), every
    /// directory on the way a real one.
    pub fn open_file_beneath(&self, rel: &Path) -> Result<File, Error> {
        let mut names = components(rel).map_err(|e| self.error(rel.as_os_str(), e))?;
        let Some(last) = names.pop() else {
            let e = io::Error::new(io::ErrorKind::InvalidInput, "no file name");
            return Err(self.error(rel.as_os_str(), e));
        };
        if names.is_empty() {
            return self.open_file(&last);
        }
        let dir = self.open_dir_beneath(&names.iter().collect::<PathBuf>())?;
        dir.open_file(&last)
    }

    /// Another fd of this directory.
    pub fn try_clone(&self) -> Result<Dir, Error> {
        Ok(Dir {
            fd: self.fd.try_clone().map_err(|source| Error {
                path: self.path.clone(),
                source,
            })?,
            path: self.path.clone(),
        })
    }

    /// The entries of this directory (not `.` and `..`), each with what it is, sorted by
    /// name. Read through the directory's fd, so the listing is of this directory whatever
    /// has been renamed since it was opened.
    pub fn entries(&self) -> Result<Vec<(OsString, Kind)>, Error> {
        let err = |source| Error {
            path: self.path.clone(),
            source,
        };
        // fdopendir takes the fd it is given: a duplicate, wound back to the start (it
        // shares the offset of ours).
        // SAFETY: fcntl on our fd; the new fd is owned by the DIR stream below.
        let dup = unsafe { libc::fcntl(self.fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 0) };
        if dup < 0 {
            return Err(err(io::Error::last_os_error()));
        }
        // SAFETY: `dup` is a directory fd we own; on success the stream owns it.
        let stream = unsafe { libc::fdopendir(dup) };
        if stream.is_null() {
            let e = io::Error::last_os_error();
            // SAFETY: fdopendir failed, so `dup` is still ours to close.
            unsafe { libc::close(dup) };
            return Err(err(e));
        }
        struct Stream(*mut libc::DIR);
        impl Drop for Stream {
            fn drop(&mut self) {
                // SAFETY: a stream from fdopendir, closed once.
                unsafe { libc::closedir(self.0) };
            }
        }
        let stream = Stream(stream);
        // SAFETY: a valid stream.
        unsafe { libc::rewinddir(stream.0) };
        let mut out = Vec::new();
        loop {
            // readdir returns NULL at the end and on error; errno tells them apart.
            // SAFETY: errno is thread-local.
            unsafe { *libc::__errno_location() = 0 };
            // SAFETY: a valid stream; the entry is read before the next call.
            let ent = unsafe { libc::readdir(stream.0) };
            if ent.is_null() {
                let e = io::Error::last_os_error();
                if e.raw_os_error().is_some_and(|c| c != 0) {
                    return Err(err(e));
                }
                break;
            }
            // SAFETY: d_name is NUL-terminated within the entry.
            let (name, d_type) = unsafe {
                (
                    CStr::from_ptr((*ent).d_name.as_ptr()).to_bytes().to_vec(),
                    (*ent).d_type,
                )
            };
            if name == b"." || name == b".." {
                continue;
            }
            let name = OsString::from_vec(name);
            let kind = match d_type {
                libc::DT_DIR => Kind::Dir,
                libc::DT_REG => Kind::File,
                libc::DT_LNK => Kind::Link,
                libc::DT_UNKNOWN => match self.kind(&name)? {
                    Some(k) => k,
                    None => continue,
                },
                _ => Kind::Other,
            };
            out.push((name, kind));
        }
        out.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(out)
    }

    /// Makes the directory `name` here with exactly `mode` (whatever the umask) unless a
    /// real directory is there already (made meanwhile by another writer), and opens it; a
    /// link or anything else there is an error.
    pub fn make_dir(&self, name: &OsStr, mode: u32) -> Result<Dir, Error> {
        let c = c_name(name).map_err(|e| self.error(name, e))?;
        // SAFETY: our fd and a NUL-terminated name.
        let made = unsafe { libc::mkdirat(self.fd.as_raw_fd(), c.as_ptr(), mode) } == 0;
        if !made {
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::AlreadyExists {
                return Err(self.error(name, e));
            }
        }
        let dir = self.open_dir(name)?;
        if made {
            // mkdirat applied the umask: the mode asked for, on the directory opened.
            // SAFETY: fchmod on our fd.
            if unsafe { libc::fchmod(dir.fd.as_raw_fd(), mode) } != 0 {
                return Err(self.error(name, io::Error::last_os_error()));
            }
        }
        Ok(dir)
    }

    /// Creates the new file `name` here (`O_CREAT|O_EXCL|O_NOFOLLOW`: never an existing
    /// file, never through a link) with `mode` less the umask, open for writing.
    pub fn create_new(&self, name: &OsStr, mode: u32) -> Result<File, Error> {
        let fd = self.openat(
            name,
            libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW,
            mode,
            Kind::File,
        )?;
        Ok(File::from(fd))
    }

    /// Writes `bytes` to a new temporary file here (`.NAME.tmp-` and 12 random characters)
    /// and returns its name; the file is removed again when the write fails.
    pub fn write_temp(&self, name: &OsStr, bytes: &[u8], mode: u32) -> Result<OsString, Error> {
        let mut tmp = OsString::from(".");
        tmp.push(name);
        tmp.push(format!(".tmp-{}", super::random_name(12)));
        let mut f = self.create_new(&tmp, mode)?;
        if let Err(e) = f.write_all(bytes) {
            drop(f);
            let _ = self.remove_file(&tmp);
            return Err(self.error(&tmp, e));
        }
        Ok(tmp)
    }

    /// Renames `from` to `to`, both in this directory (`renameat` on its fd), replacing
    /// what `to` is (a link placed there is replaced, not followed).
    pub fn rename(&self, from: &OsStr, to: &OsStr) -> Result<(), Error> {
        let (f, t) = (
            c_name(from).map_err(|e| self.error(from, e))?,
            c_name(to).map_err(|e| self.error(to, e))?,
        );
        let fd = self.fd.as_raw_fd();
        // SAFETY: our fd twice and two NUL-terminated names.
        if unsafe { libc::renameat(fd, f.as_ptr(), fd, t.as_ptr()) } != 0 {
            return Err(self.error(to, io::Error::last_os_error()));
        }
        Ok(())
    }

    /// [`Dir::write_temp`], then [`Dir::rename`] over `name`: a reader sees the old file
    /// or the new one whole, and a link at `name` is replaced, never followed.
    pub fn write_atomic(&self, name: &OsStr, bytes: &[u8], mode: u32) -> Result<(), Error> {
        let tmp = self.write_temp(name, bytes, mode)?;
        self.rename(&tmp, name).inspect_err(|_| {
            let _ = self.remove_file(&tmp);
        })
    }

    /// Removes the file (or link) `name` here.
    pub fn remove_file(&self, name: &OsStr) -> Result<(), Error> {
        let c = c_name(name).map_err(|e| self.error(name, e))?;
        // SAFETY: our fd and a NUL-terminated name.
        if unsafe { libc::unlinkat(self.fd.as_raw_fd(), c.as_ptr(), 0) } != 0 {
            return Err(self.error(name, io::Error::last_os_error()));
        }
        Ok(())
    }
}

/// The plain names of a relative path; `.` is skipped, anything else (`..`, a root) is an
/// error.
fn components(rel: &Path) -> io::Result<Vec<OsString>> {
    let mut out = Vec::new();
    for c in rel.components() {
        match c {
            Component::Normal(n) => out.push(n.to_os_string()),
            Component::CurDir => {}
            _ => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "not a path below the directory (`..` or absolute)",
                ))
            }
        }
    }
    Ok(out)
}

/// Reads the whole of an opened regular `file` from its start (whatever its offset), at
/// most `cap` bytes; more is an error.
pub fn read_all(file: &File, cap: u64) -> io::Result<Vec<u8>> {
    let len = file.metadata()?.len();
    if len > cap {
        return Err(super::too_large(cap));
    }
    let mut buf = Vec::with_capacity(len as usize);
    let mut reader = At { file, at: 0 };
    (&mut reader).take(cap.saturating_add(1)).read_to_end(&mut buf)?;
    if buf.len() as u64 > cap {
        return Err(super::too_large(cap));
    }
    Ok(buf)
}

/// A reader of a file from an offset of its own (`pread`), leaving the file's offset be.
struct At<'a> {
    file: &'a File,
    at: u64,
}

impl Read for At<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.file.read_at(buf, self.at)?;
        self.at += n as u64;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fifo(p: &Path) {
        let c = CString::new(p.as_os_str().as_bytes()).unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    }

    #[test]
    fn nothing_below_is_reached_through_a_link() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("root");
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        std::fs::write(root.join("a/b/f"), "mine").unwrap();
        let outside = tmp.path().join("outside");
        std::fs::create_dir(&outside).unwrap();
        std::fs::write(outside.join("f"), "secret").unwrap();
        std::os::unix::fs::symlink(&outside, root.join("a/l")).unwrap();
        std::os::unix::fs::symlink(outside.join("f"), root.join("a/b/lf")).unwrap();
        fifo(&root.join("a/b/p"));
        let d = Dir::open(&root).unwrap();
        let mut s = String::new();
        d.open_file_beneath(Path::new("a/b/f"))
            .unwrap()
            .read_to_string(&mut s)
            .unwrap();
        assert_eq!(s, "mine");
        let e = d.open_file_beneath(Path::new("a/l/f")).unwrap_err();
        assert!(e.to_string().contains("a/l: a symbolic link"), "{e}");
        let e = d.open_file_beneath(Path::new("a/b/lf")).unwrap_err();
        assert!(e.to_string().contains("lf: a symbolic link"), "{e}");
        // A FIFO without a writer: refused at once, not waited on.
        let e = d.open_file_beneath(Path::new("a/b/p")).unwrap_err();
        assert!(
            e.to_string().contains("a FIFO, socket or device, not a regular file"),
            "{e}"
        );
        assert!(d.open_file_beneath(Path::new("a/../a/b/f")).is_err());
        assert!(d.open_file_beneath(Path::new("/etc/passwd")).is_err());
        assert!(d
            .open_file_beneath(Path::new("a/b/missing"))
            .unwrap_err()
            .is_not_found());
        let names: Vec<_> = d.open_dir_beneath(Path::new("a/b")).unwrap().entries().unwrap();
        let names: Vec<(String, Kind)> = names
            .into_iter()
            .map(|(n, k)| (n.to_string_lossy().into_owned(), k))
            .collect();
        assert_eq!(
            names,
            [
                ("f".to_string(), Kind::File),
                ("lf".to_string(), Kind::Link),
                ("p".to_string(), Kind::Other)
            ]
        );
        // Listed twice through one fd: the same entries.
        let b = d.open_dir_beneath(Path::new("a/b")).unwrap();
        assert_eq!(b.entries().unwrap(), b.entries().unwrap());
    }

    #[test]
    fn writes_stay_in_the_directory_opened() {
        let tmp = tempfile::tempdir().unwrap();
        let _mask = super::super::Umask::set(0o077);
        let root = Dir::open(tmp.path()).unwrap();
        let p = root.make_dir(OsStr::new("p"), 0o755).unwrap();
        assert_eq!(
            std::os::unix::fs::PermissionsExt::mode(&tmp.path().join("p").metadata().unwrap().permissions()) & 0o777,
            0o755
        );
        // Made again meanwhile: fine; a link in its place is not.
        assert!(root.make_dir(OsStr::new("p"), 0o755).is_ok());
        std::os::unix::fs::symlink("p", tmp.path().join("l")).unwrap();
        assert!(root.make_dir(OsStr::new("l"), 0o755).is_err());
        // The directory renamed away after it was opened: the file goes with it.
        std::fs::rename(tmp.path().join("p"), tmp.path().join("moved")).unwrap();
        std::fs::create_dir(tmp.path().join("p")).unwrap();
        p.write_atomic(OsStr::new("f"), b"x", 0o644).unwrap();
        assert_eq!(std::fs::read(tmp.path().join("moved/f")).unwrap(), b"x");
        assert!(!tmp.path().join("p/f").exists());
        // A link at the name is replaced, not followed.
        std::fs::write(tmp.path().join("target"), "mine").unwrap();
        std::os::unix::fs::symlink(tmp.path().join("target"), tmp.path().join("moved/g")).unwrap();
        p.write_atomic(OsStr::new("g"), b"new", 0o644).unwrap();
        assert_eq!(std::fs::read_to_string(tmp.path().join("target")).unwrap(), "mine");
        assert_eq!(std::fs::read_to_string(tmp.path().join("moved/g")).unwrap(), "new");
        let names: Vec<_> = p.entries().unwrap().into_iter().map(|e| e.0).collect();
        assert_eq!(names, ["f", "g"], "no temporary file left");
        assert_eq!(read_all(&p.open_file(OsStr::new("g")).unwrap(), 3).unwrap(), b"new");
        assert!(read_all(&p.open_file(OsStr::new("g")).unwrap(), 2).is_err());
    }
}
