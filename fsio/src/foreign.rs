//! Files that another user's run or recording names (its vmlinux, modules, ELF and debug
//! files, the source files their DWARF names), opened only as that user could open them.
//!
//! Checking a path and opening it afterwards leaves a gap: the owner of a directory on the
//! path can swap a file for a link to `/etc/shadow` between the two. Here the check and
//! the open are one walk: the path is resolved by this process, component by component,
//! each from a descriptor of the directory before it (`openat` with `O_NOFOLLOW`), and
//! each directory and the file are judged on what was opened (`fstat`), never on a name
//! looked up again. A symbolic link is read from the descriptor of the link itself and its
//! target walked the same way, so following it grants nothing the user could not reach.

use std::ffi::{CString, OsStr, OsString};
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Component, Path};

/// The most symbolic links followed on one path, as the kernel allows.
const MAX_LINKS: usize = 40;

/// Whether each user of `readers` could open `path` for reading; root and this process's
/// user need no check. See [`open_as`].
pub fn readers_that_matter(readers: &[u32]) -> impl Iterator<Item = u32> + '_ {
    let me = super::euid();
    readers.iter().copied().filter(move |&u| u != 0 && u != me)
}

/// Opens the regular file `path` for reading only as far as every user of `readers` could
/// (see the module's documentation): each directory on its resolved path searchable and
/// the file readable, by owner or by everyone (groups are not counted, to be safe). With
/// no such user (an empty list, root, this process's user) it is [`super::open_regular`]
/// following links. A refusal is `PermissionDenied`, naming the user and the path.
pub fn open_as(path: &Path, readers: &[u32]) -> io::Result<File> {
    let users: Vec<u32> = readers_that_matter(readers).collect();
    if users.is_empty() {
        return super::open_regular(path, super::Links::Follow);
    }
    let absolute;
    let path = if path.is_absolute() {
        path
    } else {
        absolute = std::env::current_dir()?.join(path);
        &absolute
    };
    Walk { users: &users, path }.open()
}

/// Whether every user of `readers` could read `path` (it is opened as [`open_as`] does and
/// closed): `Err(uid)` names the first who could not. For messages only; the read itself
/// must go through [`open_as`], or the file may change in between.
pub fn may_read(path: &Path, readers: &[u32]) -> Result<(), u32> {
    for uid in readers_that_matter(readers) {
        if open_as(path, &[uid]).is_err() {
            return Err(uid);
        }
    }
    Ok(())
}

struct Walk<'a> {
    users: &'a [u32],
    path: &'a Path,
}

/// What `fstat` says of a descriptor.
fn stat(fd: &OwnedFd) -> io::Result<libc::stat> {
    // SAFETY: an all-zero stat is a valid value; fstat fills it for our descriptor.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `fd` is open; `st` is a valid out-pointer.
    if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(st)
}

fn openat(dir: &OwnedFd, name: &OsStr, flags: i32) -> io::Result<OwnedFd> {
    let c = CString::new(name.as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL byte in the path"))?;
    // SAFETY: a NUL-terminated name relative to a directory descriptor we hold.
    let fd = unsafe { libc::openat(dir.as_raw_fd(), c.as_ptr(), flags | libc::O_CLOEXEC | libc::O_NOCTTY) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a new descriptor owned by nothing else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// The target of the symbolic link opened (with `O_PATH|O_NOFOLLOW`) as `link`.
fn read_link(link: &OwnedFd) -> io::Result<OsString> {
    let mut buf = vec![0u8; libc::PATH_MAX as usize + 1];
    // SAFETY: an empty name reads the link the descriptor itself refers to; `buf` is
    // writable for its length.
    let n = unsafe { libc::readlinkat(link.as_raw_fd(), c"".as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    let n = n as usize;
    if n >= buf.len() {
        return Err(io::Error::from_raw_os_error(libc::ENAMETOOLONG));
    }
    buf.truncate(n);
    Ok(OsString::from_vec(buf))
}

impl Walk<'_> {
    /// Whether `st` grants every user the permission `owner_bit` (as owner) or `other_bit`
    /// (as everyone).
    fn may(&self, st: &libc::stat, owner_bit: u32, other_bit: u32) -> Option<u32> {
        self.users
            .iter()
            .copied()
            .find(|&u| st.st_mode & other_bit == 0 && !(st.st_uid == u && st.st_mode & owner_bit != 0))
    }

    fn refused(&self, uid: u32, what: &str) -> io::Error {
        io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "{}: {what} is not open to uid {uid}, for whom it is read: not read (docs/security.md)",
                self.path.display()
            ),
        )
    }

    fn open(&self) -> io::Result<File> {
        let root = || openat_root();
        let mut dir = root()?;
        // Components still to resolve, the next last.
        let mut todo: Vec<OsString> = Vec::new();
        push_components(&mut todo, self.path.as_os_str());
        let mut links = 0;
        while let Some(name) = todo.pop() {
            if name == "/" {
                dir = root()?;
                continue;
            }
            let last = todo.is_empty();
            // The file opened only as a path (it was a link when first opened).
            let mut path_only = false;
            let fd = if last {
                // The file itself, opened for reading at once: a link gives ELOOP (read
                // below), a FIFO does not block, and what was opened is what is judged.
                match openat(&dir, &name, libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK) {
                    Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
                        path_only = true;
                        openat(&dir, &name, libc::O_PATH | libc::O_NOFOLLOW)?
                    }
                    other => other?,
                }
            } else {
                openat(&dir, &name, libc::O_PATH | libc::O_NOFOLLOW)?
            };
            let st = stat(&fd)?;
            match st.st_mode & libc::S_IFMT {
                libc::S_IFLNK => {
                    links += 1;
                    if links > MAX_LINKS {
                        return Err(io::Error::from_raw_os_error(libc::ELOOP));
                    }
                    let target = read_link(&fd)?;
                    push_components(&mut todo, &target);
                }
                libc::S_IFDIR if !last => {
                    if let Some(uid) = self.may(&st, 0o100, 0o001) {
                        return Err(self.refused(uid, &format!("the directory {:?} on its path", name)));
                    }
                    dir = fd;
                }
                libc::S_IFREG if last => {
                    if path_only {
                        // A link when opened, a file now: someone is swapping it.
                        return Err(io::Error::other(format!(
                            "{}: changed while it was opened: not read",
                            self.path.display()
                        )));
                    }
                    if let Some(uid) = self.may(&st, 0o400, 0o004) {
                        return Err(self.refused(uid, "the file"));
                    }
                    return Ok(File::from(fd));
                }
                _ if last => return Err(super::not_regular(super::kind_of(st.st_mode))),
                _ => return Err(io::Error::from_raw_os_error(libc::ENOTDIR)),
            }
        }
        Err(super::not_regular("a directory"))
    }
}

fn openat_root() -> io::Result<OwnedFd> {
    let c = c"/";
    // SAFETY: a NUL-terminated path.
    let fd = unsafe { libc::open(c.as_ptr(), libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a new descriptor owned by nothing else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Pushes the components of `path` onto `todo` so that the first is popped first; an
/// absolute path starts with `/` (back to the root). `.` is dropped; `..` is kept and
/// resolved by the kernel from the directory held (never a link).
fn push_components(todo: &mut Vec<OsString>, path: &OsStr) {
    let parts: Vec<OsString> = Path::new(path)
        .components()
        .filter_map(|c| match c {
            Component::RootDir => Some(OsString::from("/")),
            Component::CurDir | Component::Prefix(_) => None,
            Component::ParentDir => Some(OsString::from("..")),
            Component::Normal(n) => Some(n.to_os_string()),
        })
        .collect();
    todo.extend(parts.into_iter().rev());
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn set(p: &Path, m: u32) {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap();
    }

    #[test]
    fn a_file_opens_only_as_far_as_the_user_could_reach_and_read_it() {
        let tmp = tempfile::tempdir().unwrap();
        set(tmp.path(), 0o755);
        let dir = tmp.path().join("d");
        std::fs::create_dir(&dir).unwrap();
        let file = dir.join("f");
        std::fs::write(&file, "x").unwrap();
        let me = super::super::euid();
        let other = me.wrapping_add(12345);
        set(&dir, 0o755);
        set(&file, 0o644);
        assert!(open_as(&file, &[other]).is_ok() && open_as(&file, &[me]).is_ok());
        set(&file, 0o600);
        let e = open_as(&file, &[other]).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::PermissionDenied, "{e}");
        assert!(e.to_string().contains("the file is not open to uid"), "{e}");
        assert!(open_as(&file, &[me]).is_ok() && open_as(&file, &[0]).is_ok() && open_as(&file, &[]).is_ok());
        assert_eq!(may_read(&file, &[0, other]), Err(other));
        set(&file, 0o644);
        set(&dir, 0o700);
        let e = open_as(&file, &[other]).unwrap_err();
        assert!(e.to_string().contains("the directory \"d\""), "{e}");
        set(&dir, 0o755);
        assert!(open_as(&dir.join("missing"), &[other]).is_err());
        assert!(open_as(&dir, &[other]).is_err(), "a directory is not a file");
        // A relative path is resolved from the current directory, `..` from the directory held.
        assert!(open_as(&dir.join("../d/./f"), &[other]).is_ok());
    }

    #[test]
    fn links_are_followed_and_their_targets_judged_as_any_path() {
        let tmp = tempfile::tempdir().unwrap();
        set(tmp.path(), 0o755);
        let open = tmp.path().join("open");
        let closed = tmp.path().join("closed");
        for d in [&open, &closed] {
            std::fs::create_dir(d).unwrap();
        }
        set(&open, 0o755);
        set(&closed, 0o700);
        std::fs::write(open.join("f"), "open").unwrap();
        std::fs::write(closed.join("secret"), "secret").unwrap();
        set(&open.join("f"), 0o644);
        set(&closed.join("secret"), 0o644);
        let other = super::super::euid().wrapping_add(12345);
        // A relative link and a chain of links to a file the user may read.
        std::os::unix::fs::symlink("f", open.join("rel")).unwrap();
        std::os::unix::fs::symlink(open.join("rel"), open.join("abs")).unwrap();
        let mut s = String::new();
        io::Read::read_to_string(&mut open_as(&open.join("abs"), &[other]).unwrap(), &mut s).unwrap();
        assert_eq!(s, "open");
        // A link into a directory the user cannot search: refused, whatever the file's mode.
        std::os::unix::fs::symlink(closed.join("secret"), open.join("leak")).unwrap();
        assert!(open_as(&open.join("leak"), &[other]).is_err());
        std::os::unix::fs::symlink(&closed, open.join("dirlink")).unwrap();
        assert!(open_as(&open.join("dirlink/secret"), &[other]).is_err());
        std::os::unix::fs::symlink("loop", open.join("loop")).unwrap();
        assert_eq!(
            open_as(&open.join("loop"), &[other]).unwrap_err().raw_os_error(),
            Some(libc::ELOOP)
        );
        // A FIFO is refused without blocking.
        let fifo = CString::new(open.join("fifo").as_os_str().as_bytes()).unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0);
        let e = open_as(&open.join("fifo"), &[other]).unwrap_err();
        assert!(e.to_string().contains("a FIFO"), "{e}");
    }
}
