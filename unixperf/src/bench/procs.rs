//! Process creation: fork, fork+exec, popen.

use std::ffi::CString;

use crate::sys::{self, check_failed, os_error, Result};
use crate::workload::Workload;

/// The exit code forkwait's children return, checked through the wait status.
const FORKWAIT_EXIT: i32 = 42;

/// `fork`, the child `_exit`s at once, the parent `waitpid`s for it.
#[derive(Debug, Default)]
pub struct ForkWait {
    /// Children reaped with the expected exit status.
    pub reaped: u64,
}

impl Workload for ForkWait {
    fn run(&mut self, n: u64) -> Result<()> {
        for _ in 0..n {
            let pid = unsafe { libc::fork() };
            if pid == 0 {
                unsafe { libc::_exit(FORKWAIT_EXIT) };
            }
            if pid < 0 {
                return Err(os_error("fork"));
            }
            // waitpid on this pid, not wait(): other children (tests, partners) are not ours.
            let mut status = 0;
            while unsafe { libc::waitpid(pid, &mut status, 0) } != pid {
                if sys::errno() != libc::EINTR {
                    return Err(os_error("waitpid"));
                }
            }
            if !libc::WIFEXITED(status) || libc::WEXITSTATUS(status) != FORKWAIT_EXIT {
                return Err(check_failed(format!(
                    "forkwait: child {pid} ended with wait status {status:#x}, expected exit {FORKWAIT_EXIT}"
                )));
            }
            self.reaped += 1;
        }
        Ok(())
    }
}

/// `fork`, the child `execv`s a program, the parent `waitpid`s for it.
pub struct ForkExec {
    path: CString,
    // argv's pointers are built once so the child allocates nothing before exec.
    _arg0: CString,
    argv: [*const libc::c_char; 2],
    /// Children reaped with exit status 0.
    pub reaped: u64,
}

impl ForkExec {
    /// Execs `path` (e.g. `/bin/true`, which must exit 0) with no arguments.
    pub fn new(path: &str) -> Result<Self> {
        let path = sys::cstring(path)?;
        let arg0 = path.clone();
        let argv = [arg0.as_ptr(), std::ptr::null()];
        Ok(ForkExec {
            path,
            _arg0: arg0,
            argv,
            reaped: 0,
        })
    }
}

impl Workload for ForkExec {
    fn run(&mut self, n: u64) -> Result<()> {
        for _ in 0..n {
            let pid = unsafe { libc::fork() };
            if pid == 0 {
                unsafe {
                    libc::execv(self.path.as_ptr(), self.argv.as_ptr());
                    libc::_exit(127);
                }
            }
            if pid < 0 {
                return Err(os_error("fork"));
            }
            let code = sys::wait_exit(pid)?;
            if code != 0 {
                return Err(check_failed(format!(
                    "forkexec: {:?} exited with {code}, expected 0 (127: exec failed)",
                    self.path
                )));
            }
            self.reaped += 1;
        }
        Ok(())
    }
}

/// `popen("/bin/echo hello", "r")`, read until end of file, `pclose`.
pub struct PopenEcho {
    command: CString,
    mode: CString,
    /// Times the expected `hello\n` was read and the command exited 0.
    pub echoes: u64,
}

impl PopenEcho {
    /// Prepares the command.
    pub fn new() -> Result<Self> {
        Ok(PopenEcho {
            command: sys::cstring("/bin/echo hello")?,
            mode: sys::cstring("r")?,
            echoes: 0,
        })
    }
}

impl Workload for PopenEcho {
    fn run(&mut self, n: u64) -> Result<()> {
        let mut buf = [0u8; 64];
        for _ in 0..n {
            let f = unsafe { libc::popen(self.command.as_ptr(), self.mode.as_ptr()) };
            if f.is_null() {
                return Err(os_error("popen"));
            }
            let mut len = 0;
            loop {
                let got = unsafe { libc::fread(buf[len..].as_mut_ptr().cast(), 1, buf.len() - len, f) };
                if got == 0 {
                    break;
                }
                len += got;
                if len == buf.len() {
                    break;
                }
            }
            let status = unsafe { libc::pclose(f) };
            if status < 0 {
                return Err(os_error("pclose"));
            }
            if &buf[..len] != b"hello\n" || !libc::WIFEXITED(status) || libc::WEXITSTATUS(status) != 0 {
                return Err(check_failed(format!(
                    "popenecho: read {:?} with wait status {status:#x}, expected \"hello\\n\" and exit 0",
                    String::from_utf8_lossy(&buf[..len])
                )));
            }
            self.echoes += 1;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Forks since boot, from /proc/stat's `processes` line: counts forks independently of
    /// the workload's own bookkeeping (other processes fork too, hence `>=` below).
    fn forks_since_boot() -> u64 {
        let stat = std::fs::read_to_string("/proc/stat").unwrap();
        let line = stat.lines().find(|l| l.starts_with("processes ")).unwrap();
        line[10..].trim().parse().unwrap()
    }

    #[test]
    fn forkwait_forks_and_reaps_n_children() {
        let before = forks_since_boot();
        let mut w = ForkWait::default();
        w.run(25).unwrap();
        w.run(5).unwrap();
        assert_eq!(w.reaped, 30);
        assert!(forks_since_boot() - before >= 30);
    }

    #[test]
    fn forkexec_runs_the_program_n_times() {
        let before = forks_since_boot();
        let mut w = ForkExec::new("/bin/true").unwrap();
        w.run(10).unwrap();
        assert_eq!(w.reaped, 10);
        assert!(forks_since_boot() - before >= 10);
        let mut bad = ForkExec::new("/bin/false").unwrap();
        let e = bad.run(1).unwrap_err();
        assert!(e.message().contains("exited with 1"), "{e}");
        let mut missing = ForkExec::new("/nonexistent/program").unwrap();
        assert!(missing.run(1).unwrap_err().message().contains("127"));
    }

    #[test]
    fn popenecho_reads_hello_n_times() {
        let mut w = PopenEcho::new().unwrap();
        w.run(5).unwrap();
        assert_eq!(w.echoes, 5);
    }
}
