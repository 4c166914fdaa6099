//! Thin, allocation-free wrappers over the system calls the workloads and the harness use.
//!
//! The workloads call these inside their timed loops, so nothing here allocates on the
//! success path: errors are built only when a call fails.

use std::ffi::CStr;
use std::fmt;
use std::io;
use std::os::fd::RawFd;

/// A failed system call or a failed correctness check of a workload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    message: String,
    kind: io::ErrorKind,
}

impl Error {
    /// What failed, as printed.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The kind of the failed system call's errno (`BrokenPipe` for EPIPE), so that callers
    /// tell causes apart by type; `Other` for a failed correctness check.
    pub fn kind(&self) -> io::ErrorKind {
        self.kind
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

/// Result of the harness and the workloads.
pub type Result<T> = std::result::Result<T, Error>;

/// An error for the system call `what` that just failed, with errno's text and kind.
#[cold]
pub fn os_error(what: &str) -> Error {
    let e = io::Error::last_os_error();
    Error {
        message: format!("{what}: {e}"),
        kind: e.kind(),
    }
}

/// A failed correctness check.
#[cold]
pub fn check_failed(msg: impl Into<String>) -> Error {
    Error {
        message: msg.into(),
        kind: io::ErrorKind::Other,
    }
}

/// Turns a `-1` return into an error naming `what`.
#[inline]
pub fn cvt(ret: libc::c_int, what: &str) -> Result<libc::c_int> {
    if ret < 0 {
        Err(os_error(what))
    } else {
        Ok(ret)
    }
}

/// An owned file descriptor, closed on drop.
#[derive(Debug)]
pub struct Fd(pub RawFd);

impl Fd {
    /// The raw descriptor, still owned by `self`.
    pub fn raw(&self) -> RawFd {
        self.0
    }

    /// Closes now (a no-op if already closed), reporting an error.
    pub fn close(&mut self) -> Result<()> {
        if self.0 >= 0 {
            let fd = std::mem::replace(&mut self.0, -1);
            cvt(unsafe { libc::close(fd) }, "close")?;
        }
        Ok(())
    }
}

impl Drop for Fd {
    fn drop(&mut self) {
        if self.0 >= 0 {
            unsafe { libc::close(self.0) };
        }
    }
}

/// A pipe as (read end, write end), close-on-exec.
pub fn pipe() -> Result<(Fd, Fd)> {
    let mut fds = [0; 2];
    cvt(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, "pipe")?;
    Ok((Fd(fds[0]), Fd(fds[1])))
}

/// A connected pair of Unix stream sockets, close-on-exec.
pub fn socketpair() -> Result<(Fd, Fd)> {
    let mut fds = [0; 2];
    let kind = libc::SOCK_STREAM | libc::SOCK_CLOEXEC;
    cvt(
        unsafe { libc::socketpair(libc::AF_UNIX, kind, 0, fds.as_mut_ptr()) },
        "socketpair",
    )?;
    Ok((Fd(fds[0]), Fd(fds[1])))
}

/// Writes all of `buf`, retrying short writes and EINTR.
#[inline]
pub fn write_all(fd: RawFd, mut buf: &[u8]) -> Result<()> {
    while !buf.is_empty() {
        let n = unsafe { libc::write(fd, buf.as_ptr().cast(), buf.len()) };
        if n < 0 {
            if errno() == libc::EINTR {
                continue;
            }
            return Err(os_error("write"));
        }
        buf = &buf[n as usize..];
    }
    Ok(())
}

/// Fills `buf`; `Ok(false)` on end of file before the first byte, an error on a short read.
#[inline]
pub fn read_exact(fd: RawFd, buf: &mut [u8]) -> Result<bool> {
    let mut done = 0;
    while done < buf.len() {
        let n = unsafe { libc::read(fd, buf[done..].as_mut_ptr().cast(), buf.len() - done) };
        if n < 0 {
            if errno() == libc::EINTR {
                continue;
            }
            return Err(os_error("read"));
        }
        if n == 0 {
            if done == 0 {
                return Ok(false);
            }
            return Err(check_failed(format!(
                "read: end of file after {done} of {} bytes",
                buf.len()
            )));
        }
        done += n as usize;
    }
    Ok(true)
}

/// The calling thread's errno.
#[inline]
pub fn errno() -> i32 {
    unsafe { *libc::__errno_location() }
}

/// CLOCK_MONOTONIC in nanoseconds (a vDSO call, no system call).
#[inline]
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Forks a child that runs `body` and exits with its return value. The child dies with its
/// parent (PR_SET_PDEATHSIG), so an interrupted benchmark leaves no process behind.
pub fn fork_child(body: impl FnOnce() -> i32) -> Result<libc::pid_t> {
    let parent = unsafe { libc::getpid() };
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(os_error("fork"));
    }
    if pid == 0 {
        unsafe {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            // The parent may have died before prctl: then nobody would kill us.
            if libc::getppid() != parent {
                libc::_exit(1);
            }
        }
        let code = body();
        unsafe { libc::_exit(code) };
    }
    Ok(pid)
}

/// Closes every descriptor above 2 but those in `keep`: a forked child must not hold other
/// pipes' ends open, or their readers never see end of file. Allocation-free (it runs between fork and exit); at most 8 descriptors are kept.
pub fn close_other_fds(keep: &[RawFd]) {
    let mut sorted = [RawFd::MAX; 8];
    let count = keep.len().min(sorted.len());
    sorted[..count].copy_from_slice(&keep[..count]);
    sorted.sort_unstable();
    let mut first: libc::c_uint = 3;
    for &fd in sorted[..count].iter().filter(|&&fd| fd > 2) {
        let fd = fd as libc::c_uint;
        if fd > first {
            unsafe { libc::syscall(libc::SYS_close_range, first, fd - 1, 0) };
        }
        first = fd + 1;
    }
    unsafe { libc::syscall(libc::SYS_close_range, first, libc::c_uint::MAX, 0) };
}

/// Waits for the child `pid` and returns its exit code; an error if it was killed.
pub fn wait_exit(pid: libc::pid_t) -> Result<i32> {
    let mut status = 0;
    loop {
        let r = unsafe { libc::waitpid(pid, &mut status, 0) };
        if r == pid {
            break;
        }
        if r < 0 && errno() == libc::EINTR {
            continue;
        }
        return Err(os_error("waitpid"));
    }
    if libc::WIFEXITED(status) {
        Ok(libc::WEXITSTATUS(status))
    } else {
        Err(check_failed(format!(
            "child {pid} was killed by signal {}",
            libc::WTERMSIG(status)
        )))
    }
}

/// Kills and reaps a child, ignoring errors: for drop paths.
pub fn kill_and_reap(pid: libc::pid_t) {
    unsafe {
        libc::kill(pid, libc::SIGKILL);
        let mut status = 0;
        while libc::waitpid(pid, &mut status, 0) < 0 && errno() == libc::EINTR {}
    }
}

/// A C string for a path or command, built once outside timed loops.
pub fn cstring(s: &str) -> Result<std::ffi::CString> {
    std::ffi::CString::new(s).map_err(|_| check_failed(format!("{s:?} contains a NUL byte")))
}

/// `path` as a C string.
pub fn cpath(path: &std::path::Path) -> Result<std::ffi::CString> {
    use std::os::unix::ffi::OsStrExt;
    std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| check_failed(format!("{path:?} contains a NUL byte")))
}

/// Opens a directory for the `*at` calls.
pub fn open_dir(path: &CStr) -> Result<Fd> {
    let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC;
    Ok(Fd(cvt(unsafe { libc::open(path.as_ptr(), flags) }, "open directory")?))
}

/// The CPUs this process may run on.
pub fn allowed_cpus() -> Vec<usize> {
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let size = std::mem::size_of::<libc::cpu_set_t>();
    if unsafe { libc::sched_getaffinity(0, size, &mut set) } < 0 {
        return vec![0];
    }
    (0..libc::CPU_SETSIZE as usize)
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .collect()
}

/// Pins the calling thread (and its future children) to `cpu`.
pub fn pin_to_cpu(cpu: usize) -> Result<()> {
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    unsafe { libc::CPU_SET(cpu, &mut set) };
    let size = std::mem::size_of::<libc::cpu_set_t>();
    cvt(unsafe { libc::sched_setaffinity(0, size, &set) }, "sched_setaffinity")?;
    Ok(())
}

/// The calling thread's affinity, to restore after a temporary pin.
pub fn get_affinity() -> Result<libc::cpu_set_t> {
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let size = std::mem::size_of::<libc::cpu_set_t>();
    cvt(
        unsafe { libc::sched_getaffinity(0, size, &mut set) },
        "sched_getaffinity",
    )?;
    Ok(set)
}

/// Restores an affinity saved by [`get_affinity`].
pub fn set_affinity(set: &libc::cpu_set_t) -> Result<()> {
    let size = std::mem::size_of::<libc::cpu_set_t>();
    cvt(unsafe { libc::sched_setaffinity(0, size, set) }, "sched_setaffinity")?;
    Ok(())
}
