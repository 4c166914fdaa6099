//! Cheap system calls: the cost of entering and leaving the kernel.
//!
//! glibc answers gettimeofday and clock_gettime from the vDSO without entering the kernel,
//! so each has a `raw` variant that makes the system call through `syscall(2)`. getpid is a
//! real system call in glibc since 2.25 (no more pid cache); its raw variant is there to show
//! the libc wrapper's share.

use crate::sys::{self, check_failed, os_error, Fd, Result};
use crate::workload::Workload;

/// Which getpid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    /// The libc function.
    Libc,
    /// `syscall(SYS_...)`.
    Raw,
}

/// getpid, checked against the pid known at set-up.
#[derive(Debug)]
pub struct GetPid {
    via: Via,
    pid: libc::pid_t,
    /// Calls made that returned the right pid.
    pub calls: u64,
}

impl GetPid {
    /// getpid through `via`.
    pub fn new(via: Via) -> Self {
        GetPid {
            via,
            pid: unsafe { libc::getpid() },
            calls: 0,
        }
    }
}

impl Workload for GetPid {
    fn run(&mut self, n: u64) -> Result<()> {
        for _ in 0..n {
            let pid = match self.via {
                Via::Libc => unsafe { libc::getpid() },
                Via::Raw => unsafe { libc::syscall(libc::SYS_getpid) as libc::pid_t },
            };
            if pid != self.pid {
                return Err(check_failed(format!("getpid returned {pid}, expected {}", self.pid)));
            }
        }
        self.calls += n;
        Ok(())
    }
}

/// One round of close(dup(fd)), getpid, getuid, umask: the original's "easy system calls".
#[derive(Debug)]
pub struct EzSyscalls {
    // /dev/null rather than the original's fd 0, which may be closed.
    fd: Fd,
    pid: libc::pid_t,
    uid: libc::uid_t,
    mask: libc::mode_t,
    /// Rounds of five calls that all returned what they should.
    pub rounds: u64,
}

impl EzSyscalls {
    /// Opens /dev/null to dup and reads the umask.
    pub fn new() -> Result<Self> {
        let path = sys::cstring("/dev/null")?;
        let fd = Fd(sys::cvt(
            unsafe { libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) },
            "open /dev/null",
        )?);
        // umask can only be read by setting it: set it back at once.
        let mask = unsafe { libc::umask(0o022) };
        unsafe { libc::umask(mask) };
        Ok(EzSyscalls {
            fd,
            pid: unsafe { libc::getpid() },
            uid: unsafe { libc::getuid() },
            mask,
            rounds: 0,
        })
    }
}

impl Workload for EzSyscalls {
    fn run(&mut self, n: u64) -> Result<()> {
        for _ in 0..n {
            let dup = unsafe { libc::dup(self.fd.raw()) };
            if dup < 0 {
                return Err(os_error("dup"));
            }
            if unsafe { libc::close(dup) } < 0 {
                return Err(os_error("close"));
            }
            let ok = unsafe { libc::getpid() } == self.pid
                && unsafe { libc::getuid() } == self.uid
                // Setting the umask it already has keeps the process's umask unchanged.
                && unsafe { libc::umask(self.mask) } == self.mask;
            if !ok {
                return Err(check_failed(
                    "ezsyscalls: getpid, getuid or umask returned a changed value",
                ));
            }
        }
        self.rounds += n;
        Ok(())
    }
}

/// Which clock call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Clock {
    /// gettimeofday(2).
    GetTimeOfDay,
    /// clock_gettime(CLOCK_MONOTONIC).
    Monotonic,
}

/// Reads a clock through libc (vDSO) or the raw system call, checking it never goes back.
#[derive(Debug)]
pub struct ReadClock {
    clock: Clock,
    via: Via,
    last: (i64, i64),
    /// Reads made.
    pub reads: u64,
}

impl ReadClock {
    /// Reads `clock` through `via`.
    pub fn new(clock: Clock, via: Via) -> Self {
        ReadClock {
            clock,
            via,
            last: (0, 0),
            reads: 0,
        }
    }

    #[inline]
    fn read(&self) -> Result<(i64, i64)> {
        let ret;
        let now = match self.clock {
            Clock::GetTimeOfDay => {
                let mut tv = libc::timeval { tv_sec: 0, tv_usec: 0 };
                ret = match self.via {
                    Via::Libc => unsafe { libc::gettimeofday(&mut tv, std::ptr::null_mut()) },
                    Via::Raw => unsafe {
                        libc::syscall(libc::SYS_gettimeofday, &mut tv, std::ptr::null_mut::<libc::c_void>()) as i32
                    },
                };
                (tv.tv_sec, tv.tv_usec * 1000)
            }
            Clock::Monotonic => {
                let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
                let id = libc::CLOCK_MONOTONIC;
                ret = match self.via {
                    Via::Libc => unsafe { libc::clock_gettime(id, &mut ts) },
                    Via::Raw => unsafe { libc::syscall(libc::SYS_clock_gettime, id, &mut ts) as i32 },
                };
                (ts.tv_sec, ts.tv_nsec)
            }
        };
        if ret < 0 {
            return Err(os_error("reading the clock"));
        }
        Ok(now)
    }
}

impl Workload for ReadClock {
    fn run(&mut self, n: u64) -> Result<()> {
        for _ in 0..n {
            let now = self.read()?;
            // gettimeofday is wall time and may be stepped back by an administrator; the
            // monotonic clock never goes back.
            if (now < self.last && self.clock == Clock::Monotonic) || now.0 == 0 {
                return Err(check_failed(format!("clock read {now:?} after {:?}", self.last)));
            }
            self.last = now;
        }
        self.reads += n;
        Ok(())
    }
}

/// nanosleep for one second: checks that the harness's clock and the kernel's timers agree.
#[derive(Debug, Default)]
pub struct Sleep1 {
    /// Sleeps completed.
    pub sleeps: u64,
}

impl Workload for Sleep1 {
    fn run(&mut self, n: u64) -> Result<()> {
        for _ in 0..n {
            let start = sys::now_ns();
            let mut ts = libc::timespec { tv_sec: 1, tv_nsec: 0 };
            // Resume after signals with the time that is left.
            while unsafe { libc::nanosleep(&ts, &mut ts) } < 0 {
                if sys::errno() != libc::EINTR {
                    return Err(os_error("nanosleep"));
                }
            }
            if sys::now_ns() - start < 1_000_000_000 {
                return Err(check_failed("sleep1: woke up before one second had passed"));
            }
        }
        self.sleeps += n;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // No kernel counter counts getpid calls: each call's return value is the check.
    #[test]
    fn getpid_both_ways_return_our_pid_n_times() {
        for via in [Via::Libc, Via::Raw] {
            let mut w = GetPid::new(via);
            w.run(1000).unwrap();
            assert_eq!(w.calls, 1000);
            // A wrong expectation is caught, so the check is real.
            w.pid += 1;
            assert!(w.run(1).is_err());
        }
    }

    #[test]
    fn ezsyscalls_leave_umask_and_fds_unchanged() {
        let fds_before = std::fs::read_dir("/proc/self/fd").unwrap().count();
        let mut w = EzSyscalls::new().unwrap();
        let mask = w.mask;
        w.run(500).unwrap();
        assert_eq!(w.rounds, 500);
        let now = unsafe { libc::umask(mask) };
        assert_eq!(now, mask);
        drop(w);
        // dup's 500 copies were all closed. Other test threads open files meanwhile, so
        // allow slack far below the 500 a leak would leave.
        let fds_after = std::fs::read_dir("/proc/self/fd").unwrap().count();
        assert!(fds_after < fds_before + 100, "{fds_before} -> {fds_after}");
    }

    #[test]
    fn sleep1_sleeps_a_second() {
        let start = std::time::Instant::now();
        let mut w = Sleep1::default();
        w.run(1).unwrap();
        assert_eq!(w.sleeps, 1);
        assert!(start.elapsed() >= std::time::Duration::from_secs(1));
    }

    #[test]
    fn clocks_read_n_times_and_agree_with_each_other() {
        for clock in [Clock::GetTimeOfDay, Clock::Monotonic] {
            let mut libc_way = ReadClock::new(clock, Via::Libc);
            let mut raw_way = ReadClock::new(clock, Via::Raw);
            libc_way.run(100).unwrap();
            raw_way.run(100).unwrap();
            assert_eq!((libc_way.reads, raw_way.reads), (100, 100));
            // vDSO and kernel read the same clock: within a second of each other.
            assert!((libc_way.last.0 - raw_way.last.0).abs() <= 1);
        }
    }
}
