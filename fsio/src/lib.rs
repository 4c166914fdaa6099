//! Files opened and written safely, for a tool that runs as root on shared machines
//! (`docs/security.md`): only regular files where a file is expected (never a FIFO that
//! blocks or a device that never ends), reads capped at a size, no symbolic link followed
//! where the caller says so, new files and directories created exclusively with the mode
//! asked for whatever the umask, renames that never replace, and a lock beside a
//! directory. Plain `std` and `libc`: it knows nothing of profiles or runs.
//!
//! ```
//! use upcmp_fsio::{read_file, write_atomic, Links};
//!
//! let dir = std::env::temp_dir().join(format!("upcmp-fsio-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir).unwrap();
//! let path = dir.join("results");
//! // Written whole under a new name, then renamed into place: a reader sees the old
//! // file or the new one, never half of one.
//! write_atomic(&path, b"bcopy 1.0\n", 0o644).unwrap();
//! assert_eq!(read_file(&path, Links::Refuse, 1 << 20).unwrap(), b"bcopy 1.0\n");
//! // A link where a file is read is refused when the caller says so.
//! let link = dir.join("link");
//! std::os::unix::fs::symlink(&path, &link).unwrap();
//! assert!(read_file(&link, Links::Refuse, 1 << 20).is_err());
//! std::fs::remove_dir_all(&dir).unwrap();
//! ```
#![deny(missing_docs)]

pub mod beneath;

use std::ffi::CString;
use std::fs::File;
use std::io::{self, Read};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};

pub mod foreign;

/// Whether an open may follow a symbolic link in the last component of its path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Links {
    /// Follow it (the user named the path).
    Follow,
    /// Refuse it (a path inside a directory that someone else may have written).
    Refuse,
}

fn c_path(path: &Path) -> io::Result<CString> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL byte in the path"))
}

/// What a file that is not a regular one is, for messages.
fn kind_of(mode: u32) -> &'static str {
    match mode & libc::S_IFMT {
        libc::S_IFDIR => "a directory",
        libc::S_IFIFO => "a FIFO",
        libc::S_IFCHR => "a character device",
        libc::S_IFBLK => "a block device",
        libc::S_IFSOCK => "a socket",
        libc::S_IFLNK => "a symbolic link",
        _ => "not a regular file",
    }
}

fn not_regular(what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("{what}, not a regular file; give a file"),
    )
}

/// Opens `path` for reading if it is a regular file. The open itself cannot block (a FIFO
/// with no writer would hang a plain open) and the file is checked after opening, so
/// nothing can swap it in between. With [`Links::Refuse`] a symbolic link is refused.
pub fn open_regular(path: &Path, links: Links) -> io::Result<File> {
    let mut flags = libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC;
    if links == Links::Refuse {
        flags |= libc::O_NOFOLLOW;
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) if links == Links::Refuse => io::Error::new(
                io::ErrorKind::InvalidInput,
                "a symbolic link, which is not followed here (docs/security.md)",
            ),
            _ => e,
        })?;
    let meta = file.metadata()?;
    if !meta.file_type().is_file() {
        return Err(not_regular(kind_of(meta.mode())));
    }
    // Back to blocking reads (a regular file never blocks; this is for clarity of intent).
    // SAFETY: fcntl on an fd we own.
    unsafe {
        let fd = std::os::fd::AsRawFd::as_raw_fd(&file);
        let fl = libc::fcntl(fd, libc::F_GETFL);
        if fl >= 0 {
            libc::fcntl(fd, libc::F_SETFL, fl & !libc::O_NONBLOCK);
        }
    }
    Ok(file)
}

/// An error for input larger than `cap` bytes.
pub fn too_large(cap: u64) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!(
            "larger than {} (the most this file may hold; docs/security.md)",
            human_bytes(cap)
        ),
    )
}

/// `n` bytes as `N GiB`, `N MiB`, `N KiB` or `N bytes`, for messages.
pub fn human_bytes(n: u64) -> String {
    match n {
        n if n >= 1 << 30 && n % (1 << 30) == 0 => format!("{} GiB", n >> 30),
        n if n >= 1 << 20 && n % (1 << 20) == 0 => format!("{} MiB", n >> 20),
        n if n >= 1 << 10 && n % (1 << 10) == 0 => format!("{} KiB", n >> 10),
        n => format!("{n} bytes"),
    }
}

/// Reads at most `cap` bytes of `input`; more is an error, so an endless or enormous
/// input stops at the cap.
pub fn read_capped(input: impl Read, cap: u64) -> io::Result<Vec<u8>> {
    let mut buf = Vec::new();
    input.take(cap.saturating_add(1)).read_to_end(&mut buf)?;
    if buf.len() as u64 > cap {
        return Err(too_large(cap));
    }
    Ok(buf)
}

/// Reads the regular file `path` whole, at most `cap` bytes (see [`open_regular`]).
pub fn read_file(path: &Path, links: Links, cap: u64) -> io::Result<Vec<u8>> {
    let file = open_regular(path, links)?;
    if file.metadata()?.len() > cap {
        return Err(too_large(cap));
    }
    read_capped(file, cap)
}

/// [`read_file`] as UTF-8 text.
pub fn read_text(path: &Path, links: Links, cap: u64) -> io::Result<String> {
    String::from_utf8(read_file(path, links, cap)?).map_err(|e| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("not UTF-8 text (byte {})", e.utf8_error().valid_up_to()),
        )
    })
}

/// Whether `path` itself (its last component) is a symbolic link.
pub fn is_symlink(path: &Path) -> bool {
    path.symlink_metadata().is_ok_and(|m| m.file_type().is_symlink())
}

/// Whether `path` is a directory and not a symbolic link to one.
pub fn is_real_dir(path: &Path) -> bool {
    path.symlink_metadata().is_ok_and(|m| m.file_type().is_dir())
}

/// Whether `path` is a regular file and not a symbolic link to one.
pub fn is_real_file(path: &Path) -> bool {
    path.symlink_metadata().is_ok_and(|m| m.file_type().is_file())
}

/// `path` without trailing slashes or `.` components (`res/` and `res/.` are `res`), so
/// that the sibling and lock names made from it are siblings. `..` is kept.
pub fn clean(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir if out.as_os_str().is_empty() => out.push("."),
            Component::CurDir => {}
            c => out.push(c),
        }
    }
    out
}

/// The directory that holds `path` (`.` for a bare name).
pub fn parent_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// If the directory holding `path` is writable by every user and lacks the sticky bit
/// (so any of them may rename or replace what is put there), that directory.
pub fn shared_parent(path: &Path) -> Option<PathBuf> {
    let parent = parent_of(path);
    let mode = std::fs::metadata(&parent).ok()?.permissions().mode();
    (mode & 0o002 != 0 && mode & libc::S_ISVTX == 0).then_some(parent)
}

/// The process's umask, from `/proc/self/status` (reading it with umask(2) would change it
/// for a moment under other threads); 022 when /proc does not say.
pub fn current_umask() -> u32 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Umask:"))
                .and_then(|v| u32::from_str_radix(v.trim(), 8).ok())
        })
        .unwrap_or(0o022)
}

/// Sets the process's umask while alive and puts the previous one back when dropped.
pub struct Umask {
    previous: libc::mode_t,
}

impl Umask {
    /// Sets `mask`.
    pub fn set(mask: u32) -> Self {
        // SAFETY: umask has no memory effects.
        let previous = unsafe { libc::umask(mask) };
        Umask { previous }
    }

    /// The umask in force before this one (for child processes, which should not inherit
    /// ours).
    pub fn previous(&self) -> u32 {
        self.previous
    }
}

impl Drop for Umask {
    fn drop(&mut self) {
        // SAFETY: as above.
        unsafe { libc::umask(self.previous) };
    }
}

/// Creates the directory `path` (not its parents) with exactly `mode`, whatever the umask.
/// An existing entry, a symbolic link included, is an error: nothing is created through
/// a link.
pub fn create_dir(path: &Path, mode: u32) -> io::Result<()> {
    std::fs::DirBuilder::new().mode(mode).create(path)?;
    // mkdir applied the umask; the mode asked for is set on the directory just made
    // (opened without following a link, in case it was replaced in between).
    let dir = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)?;
    dir.set_permissions(std::fs::Permissions::from_mode(mode))
}

/// A random string of `n` letters and digits, from the kernel's generator.
pub fn random_name(n: usize) -> String {
    const CHARS: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    let mut bytes = vec![0u8; n];
    let mut filled = 0;
    while filled < n {
        // SAFETY: getrandom writes at most the length given into the buffer given.
        let r = unsafe { libc::getrandom(bytes[filled..].as_mut_ptr().cast(), n - filled, 0) };
        if r <= 0 {
            // No entropy source at all: time and pid still make a name nobody predicts
            // exactly; exclusive creation keeps it safe either way.
            let t = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos());
            for (i, b) in bytes[filled..].iter_mut().enumerate() {
                *b = ((t >> (i % 16 * 8)) as u8) ^ (std::process::id() as u8).wrapping_mul(i as u8 + 1);
            }
            break;
        }
        filled += r as usize;
    }
    bytes.iter().map(|b| CHARS[*b as usize % CHARS.len()] as char).collect()
}

/// Creates a new directory beside `path`, named `NAME.tmp-RANDOM` after `path`'s last
/// component, with mode 0700 and exclusively (`mkdtemp`): nobody can have placed it, or a
/// link under its name, in advance.
pub fn create_temp_dir_beside(path: &Path) -> io::Result<PathBuf> {
    for _ in 0..100 {
        let mut name = path.as_os_str().to_os_string();
        name.push(format!(".tmp-{}", random_name(12)));
        let tmp = PathBuf::from(name);
        match create_dir(&tmp, 0o700) {
            Ok(()) => return Ok(tmp),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::new(
        io::ErrorKind::AlreadyExists,
        "no free temporary name after 100 tries",
    ))
}

/// Creates the new file `path` (never an existing one, never through a link) with `mode`
/// less the umask, open for writing.
pub fn create_new(path: &Path, mode: u32) -> io::Result<File> {
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
}

/// Creates the new file `path` as [`create_new`] does, and writes `bytes`.
pub fn write_new(path: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
    use std::io::Write;
    create_new(path, mode)?.write_all(bytes)
}

/// Writes `bytes` to `path` with `mode` (less the umask) through a new temporary file
/// beside it and a rename, so a reader never sees a half-written file and nothing is written through a
/// link placed at `path` (the rename replaces the link itself). On any failure (a full
/// disk) the temporary file is removed.
pub fn write_atomic(path: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
    use std::io::Write;
    let mut file = Replacement::create(path, mode)?;
    file.write_all(bytes)?;
    file.commit()
}

/// A file that replaces `path` when committed: written into a new temporary file beside
/// it (created exclusively, never through a link) and renamed over `path`, so a reader
/// sees the old file or the new one whole, and a link placed at `path` is replaced, never
/// followed. Dropped without [`Replacement::commit`], the temporary file is removed and
/// `path` is untouched.
#[derive(Debug)]
pub struct Replacement {
    path: PathBuf,
    tmp: PathBuf,
    out: Option<io::BufWriter<File>>,
    renamed: bool,
}

impl Replacement {
    /// Creates the temporary file for `path` with `mode` (less the umask).
    pub fn create(path: &Path, mode: u32) -> io::Result<Self> {
        let name = path
            .file_name()
            .map_or_else(|| "file".into(), |n| n.to_string_lossy().into_owned());
        let tmp = parent_of(path).join(format!(".{name}.tmp-{}", random_name(12)));
        let file = create_new(&tmp, mode)?;
        Ok(Replacement {
            path: path.to_path_buf(),
            tmp,
            out: Some(io::BufWriter::with_capacity(1 << 16, file)),
            renamed: false,
        })
    }

    /// Flushes the file and renames it over `path`.
    pub fn commit(mut self) -> io::Result<()> {
        let out = self.out.take().expect("committed once");
        out.into_inner().map_err(|e| e.into_error())?;
        std::fs::rename(&self.tmp, &self.path)?;
        self.renamed = true;
        Ok(())
    }
}

impl io::Write for Replacement {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.out.as_mut().expect("not committed").write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.as_mut().expect("not committed").flush()
    }
}

impl Drop for Replacement {
    fn drop(&mut self) {
        // Not committed, or the rename failed: nothing of it stays.
        if !self.renamed {
            drop(self.out.take());
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

/// Opens a file of the kernel's (`/proc/sys/...`, `/sys/...`, a cgroup's `cgroup.procs`)
/// for writing: never created (`O_CREAT` is not given, so a missing file is an error,
/// not a new file), and not followed when it is a symbolic link (`O_NOFOLLOW`).
pub fn open_kernel_file(path: &Path) -> io::Result<File> {
    std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
}

/// Whether the kernel's file `path` may be written, by opening it as [`open_kernel_file`]
/// does but without truncating: the probe changes nothing, even where the "kernel file" is
/// a plain file (a test's stand-in for debugfs).
pub fn probe_kernel_file(path: &Path) -> io::Result<()> {
    std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .map(drop)
}

/// Writes `bytes` to the kernel's file `path` in one write (see [`open_kernel_file`]).
pub fn write_kernel_file(path: &Path, bytes: &[u8]) -> io::Result<()> {
    use std::io::Write;
    open_kernel_file(path)?.write_all(bytes)
}

/// A file in memory only (`memfd_create`: no path, nothing on disk, gone when closed)
/// holding `bytes`: for a reader that wants a file of what this process has in memory
/// (its own vDSO image). `name` is what /proc shows for it.
pub fn memory_file(name: &str, bytes: &[u8]) -> io::Result<File> {
    use std::io::Write;
    use std::os::fd::FromRawFd;
    let name = CString::new(name).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL byte in the name"))?;
    // SAFETY: memfd_create reads the NUL-terminated name; the fd it returns is ours.
    let fd = unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` is a new descriptor owned by nothing else.
    let mut file = unsafe { File::from_raw_fd(fd) };
    file.write_all(bytes)?;
    Ok(file)
}

/// The effective user id of this process.
pub fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() }
}

/// The owner of `path` (following a link) when it is neither root nor this process's
/// user: a directory someone else owns, into which root must not write unasked.
pub fn foreign_owner(path: &Path) -> Option<u32> {
    let uid = std::fs::metadata(path).ok()?.uid();
    (uid != 0 && uid != euid()).then_some(uid)
}

/// A symbolic link on a path that [`check_links`] refuses to follow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UntrustedLink {
    /// The link.
    pub link: PathBuf,
    /// Its owner.
    pub owner: u32,
}

/// Resolves `path` component by component, as the kernel does with
/// `fs.protected_symlinks=1`, and finds a symbolic link it must not follow: one in a
/// sticky directory that every user may write (`/tmp`), owned neither by root, by this
/// process's user, nor by the directory's owner. Machines with the sysctl off exist, and
/// the check costs a few `lstat`s. Components that do not exist yet end the walk (they
/// will be created). At most 40 links are followed, as the kernel does.
pub fn check_links(path: &Path) -> io::Result<Result<(), UntrustedLink>> {
    let mut todo: Vec<std::ffi::OsString> = path.components().rev().map(|c| c.as_os_str().to_os_string()).collect();
    let mut at = if path.is_absolute() {
        PathBuf::new()
    } else {
        std::env::current_dir()?
    };
    let mut links = 0;
    while let Some(c) = todo.pop() {
        match c.to_str() {
            Some(".") => continue,
            Some("..") => {
                at.pop();
                continue;
            }
            _ => {}
        }
        let next = at.join(&c);
        let Ok(meta) = next.symlink_metadata() else {
            return Ok(Ok(()));
        };
        if !meta.file_type().is_symlink() {
            at = next;
            continue;
        }
        links += 1;
        if links > 40 {
            return Err(io::Error::from_raw_os_error(libc::ELOOP));
        }
        let dir = std::fs::metadata(&at)?;
        let mode = dir.mode();
        let owner = meta.uid();
        let shared_sticky = mode & 0o002 != 0 && mode & libc::S_ISVTX != 0;
        if shared_sticky && owner != 0 && owner != euid() && owner != dir.uid() {
            return Ok(Err(UntrustedLink { link: next, owner }));
        }
        let target = std::fs::read_link(&next)?;
        if target.is_absolute() {
            at = PathBuf::from("/");
        }
        todo.extend(target.components().rev().map(|c| c.as_os_str().to_os_string()));
    }
    Ok(Ok(()))
}

/// Overwrites the existing regular file `path` in place (no link followed, no new file):
/// for a last word when the disk is full and no temporary file can be made.
pub fn overwrite_in_place(path: &Path, bytes: &[u8]) -> io::Result<()> {
    use std::io::{Seek, Write};
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK)
        .open(path)?;
    if !f.metadata()?.file_type().is_file() {
        return Err(not_regular("not a regular file"));
    }
    f.seek(io::SeekFrom::Start(0))?;
    f.write_all(bytes)?;
    f.set_len(bytes.len() as u64)?;
    f.sync_data()
}

/// Renames `from` to `to` unless `to` exists (a link included), atomically where the
/// file system can (`renameat2` with `RENAME_NOREPLACE`).
pub fn rename_noreplace(from: &Path, to: &Path) -> io::Result<()> {
    let (f, t) = (c_path(from)?, c_path(to)?);
    // SAFETY: two NUL-terminated paths that outlive the call.
    let r = unsafe {
        libc::syscall(
            libc::SYS_renameat2,
            libc::AT_FDCWD,
            f.as_ptr(),
            libc::AT_FDCWD,
            t.as_ptr(),
            libc::RENAME_NOREPLACE,
        )
    };
    if r == 0 {
        return Ok(());
    }
    let e = io::Error::last_os_error();
    match e.raw_os_error() {
        // A kernel or file system without RENAME_NOREPLACE: check, then rename.
        Some(libc::ENOSYS) | Some(libc::EINVAL) => {
            if to.symlink_metadata().is_ok() {
                return Err(io::Error::from_raw_os_error(libc::EEXIST));
            }
            std::fs::rename(from, to)
        }
        _ => Err(e),
    }
}

/// An exclusive lock held on `PATH.lock` beside a directory while one process writes it.
/// The lock file is removed when the lock is dropped.
#[derive(Debug)]
pub struct DirLock {
    path: PathBuf,
    file: Option<File>,
}

impl DirLock {
    /// Takes the lock of `dir` without waiting: `Ok(None)` when another process holds it.
    pub fn try_lock(dir: &Path) -> io::Result<Option<DirLock>> {
        let mut name = dir.as_os_str().to_os_string();
        name.push(".lock");
        let path = PathBuf::from(name);
        loop {
            let file = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .mode(0o600)
                .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK)
                .open(&path)?;
            let meta = file.metadata()?;
            if !meta.file_type().is_file() {
                return Err(not_regular(kind_of(meta.mode())));
            }
            // SAFETY: flock on an fd we own.
            let r = unsafe { libc::flock(std::os::fd::AsRawFd::as_raw_fd(&file), libc::LOCK_EX | libc::LOCK_NB) };
            if r != 0 {
                let e = io::Error::last_os_error();
                return match e.raw_os_error() {
                    Some(libc::EWOULDBLOCK) => Ok(None),
                    _ => Err(e),
                };
            }
            // The holder before us may have removed the file between our open and our lock:
            // then we hold a lock nobody else can see, and try again on the new file.
            match path.symlink_metadata() {
                Ok(now) if now.ino() == meta.ino() && now.dev() == meta.dev() => {
                    return Ok(Some(DirLock { path, file: Some(file) }))
                }
                _ => continue,
            }
        }
    }

    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for DirLock {
    fn drop(&mut self) {
        // Removed while still locked, so a process waiting on the old file notices (above).
        let _ = std::fs::remove_file(&self.path);
        drop(self.file.take());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_regular_files_open() {
        let tmp = tempfile::tempdir().unwrap();
        let fifo = tmp.path().join("fifo");
        let c = c_path(&fifo).unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        // A FIFO without a writer would block a plain open forever.
        let e = open_regular(&fifo, Links::Follow).unwrap_err();
        assert!(e.to_string().contains("a FIFO, not a regular file"), "{e}");
        let e = read_file(Path::new("/dev/zero"), Links::Follow, 100).unwrap_err();
        assert!(e.to_string().contains("a character device"), "{e}");
        let e = read_file(tmp.path(), Links::Follow, 100).unwrap_err();
        assert!(
            e.to_string().contains("a directory") || e.raw_os_error() == Some(libc::EISDIR),
            "{e}"
        );
        let file = tmp.path().join("f");
        std::fs::write(&file, "12345").unwrap();
        assert_eq!(read_file(&file, Links::Follow, 5).unwrap(), b"12345");
        let e = read_file(&file, Links::Follow, 4).unwrap_err();
        assert!(e.to_string().contains("larger than 4 bytes"), "{e}");
        let link = tmp.path().join("link");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        assert!(read_file(&link, Links::Follow, 5).is_ok());
        let e = read_file(&link, Links::Refuse, 5).unwrap_err();
        assert!(e.to_string().contains("a symbolic link, which is not followed"), "{e}");
    }

    #[test]
    fn paths_are_cleaned() {
        assert_eq!(clean(Path::new("res/")), PathBuf::from("res"));
        assert_eq!(clean(Path::new("a/./res/.")), PathBuf::from("a/res"));
        assert_eq!(clean(Path::new("./res")), PathBuf::from("./res"));
        assert_eq!(clean(Path::new("/tmp//x/")), PathBuf::from("/tmp/x"));
        assert_eq!(parent_of(Path::new("res")), PathBuf::from("."));
    }

    #[test]
    fn creation_is_exclusive_and_modes_exact() {
        let tmp = tempfile::tempdir().unwrap();
        let _mask = Umask::set(0o027);
        let d = tmp.path().join("d");
        create_dir(&d, 0o755).unwrap();
        assert_eq!(d.metadata().unwrap().permissions().mode() & 0o7777, 0o755);
        assert_eq!(create_dir(&d, 0o755).unwrap_err().kind(), io::ErrorKind::AlreadyExists);
        // A link placed where a new file goes is neither followed nor replaced.
        let target = tmp.path().join("target");
        std::fs::write(&target, "mine").unwrap();
        let link = tmp.path().join("new");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert!(write_new(&link, b"x", 0o644).is_err());
        assert!(create_dir(&link, 0o700).is_err());
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "mine");
        // write_atomic replaces the link itself, not its target.
        write_atomic(&link, b"new", 0o666).unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "mine");
        assert_eq!(std::fs::read_to_string(&link).unwrap(), "new");
        assert_eq!(link.metadata().unwrap().permissions().mode() & 0o777, 0o640);
        let t1 = create_temp_dir_beside(&d).unwrap();
        let t2 = create_temp_dir_beside(&d).unwrap();
        assert_ne!(t1, t2);
        assert_eq!(t1.metadata().unwrap().permissions().mode() & 0o777, 0o700);
        assert!(t1.file_name().unwrap().to_string_lossy().starts_with("d.tmp-"));
        // A rename never replaces.
        let e = rename_noreplace(&t1, &t2).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EEXIST));
        rename_noreplace(&t1, &tmp.path().join("moved")).unwrap();
    }

    #[test]
    fn a_replacement_is_whole_or_nothing() {
        use std::io::Write;
        let tmp = tempfile::tempdir().unwrap();
        let target = tmp.path().join("target");
        std::fs::write(&target, "mine").unwrap();
        let link = tmp.path().join("out");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        // Dropped before its commit: nothing changes, nothing is left.
        let mut r = Replacement::create(&link, 0o600).unwrap();
        r.write_all(b"half").unwrap();
        drop(r);
        assert!(is_symlink(&link));
        assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 2);
        let mut r = Replacement::create(&link, 0o600).unwrap();
        r.write_all(b"new").unwrap();
        r.commit().unwrap();
        assert!(is_real_file(&link) && std::fs::read_to_string(&link).unwrap() == "new");
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "mine");
        assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 2);
    }

    #[test]
    fn links_are_resolved_as_the_kernel_would() {
        let tmp = tempfile::tempdir().unwrap();
        let real = tmp.path().join("real");
        create_dir(&real, 0o700).unwrap();
        // Links outside shared sticky directories, chained and relative, are followed.
        std::os::unix::fs::symlink("real", tmp.path().join("a")).unwrap();
        std::os::unix::fs::symlink(tmp.path().join("a"), tmp.path().join("b")).unwrap();
        assert_eq!(check_links(&tmp.path().join("b/x/y")).unwrap(), Ok(()));
        std::os::unix::fs::symlink("loop", tmp.path().join("loop")).unwrap();
        assert!(check_links(&tmp.path().join("loop/x")).is_err());
    }

    #[test]
    fn a_directory_lock_is_exclusive_and_leaves_nothing() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path().join("res");
        let lock = DirLock::try_lock(&d).unwrap().expect("free");
        assert!(tmp.path().join("res.lock").is_file());
        assert!(DirLock::try_lock(&d).unwrap().is_none(), "held");
        drop(lock);
        assert!(!tmp.path().join("res.lock").exists());
        assert!(DirLock::try_lock(&d).unwrap().is_some());
    }
}
