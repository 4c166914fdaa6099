//! Scheduler: hackbench's many-to-many messaging, sched_yield.

use std::os::fd::RawFd;

use crate::sys::{self, check_failed, os_error, Fd, Result};
use crate::workload::{HackbenchConfig, Workload};

/// One operation is one complete hackbench run: start all senders and receivers, let every
/// sender pass its messages to every receiver of its group, wait for all. hackbench's own
/// `Time:` (from the start signal to the last task's end, creation excluded) is kept too.
pub struct Hackbench {
    cfg: HackbenchConfig,
    data: Vec<u8>,
    /// Complete runs.
    pub runs: u64,
    /// Messages received in full, over all runs.
    pub messages_delivered: u64,
    timed_ns: u64,
}

impl Hackbench {
    /// Checks the parameters.
    pub fn new(cfg: &HackbenchConfig) -> Result<Self> {
        if cfg.groups == 0 || cfg.fds == 0 || cfg.messages == 0 || cfg.datasize == 0 {
            return Err(check_failed(
                "hackbench: groups, fds, messages and datasize must be positive",
            ));
        }
        Ok(Hackbench {
            cfg: cfg.clone(),
            data: vec![b'x'; cfg.datasize],
            runs: 0,
            messages_delivered: 0,
            timed_ns: 0,
        })
    }

    fn channel(&self) -> Result<(Fd, Fd)> {
        if self.cfg.pipes {
            sys::pipe()
        } else {
            sys::socketpair()
        }
    }

    /// One run; returns the nanoseconds from the start signal to the end of the last task.
    fn run_once(&mut self) -> Result<u64> {
        let (ready_r, ready_w) = sys::pipe()?;
        let (wake_r, wake_w) = sys::pipe()?;
        let tasks = 2 * self.cfg.groups as usize * self.cfg.fds as usize;
        let result = if self.cfg.threads {
            self.run_threads(&ready_r, &ready_w, &wake_r, wake_w, tasks)
        } else {
            self.run_processes(&ready_r, &ready_w, &wake_r, wake_w, tasks)
        };
        let ns = result?;
        let per_run = self.cfg.groups as u64 * self.cfg.fds as u64 * self.cfg.fds as u64 * self.cfg.messages as u64;
        self.messages_delivered += per_run;
        Ok(ns)
    }

    fn run_processes(&self, ready_r: &Fd, ready_w: &Fd, wake_r: &Fd, wake_w: Fd, tasks: usize) -> Result<u64> {
        let mut pids = Vec::with_capacity(tasks);
        let outcome = (|| -> Result<u64> {
            for _ in 0..self.cfg.groups {
                let mut readers = Vec::new();
                let mut writers = Vec::new();
                for _ in 0..self.cfg.fds {
                    let (r, w) = self.channel()?;
                    readers.push(r);
                    writers.push(w);
                }
                for r in &readers {
                    let fd = r.raw();
                    pids.push(sys::fork_child(|| {
                        receiver(fd, self.cfg.bytes_per_receiver(), ready_w.raw(), wake_r.raw())
                    })?);
                }
                let targets: Vec<RawFd> = writers.iter().map(Fd::raw).collect();
                for _ in 0..self.cfg.fds {
                    pids.push(sys::fork_child(|| {
                        sender(&targets, self.cfg.messages, &self.data, ready_w.raw(), wake_r.raw())
                    })?);
                }
                // The group's ends are the children's now.
            }
            start_and_wait(ready_r, wake_w, tasks, || {
                for &pid in &pids {
                    let code = sys::wait_exit(pid)?;
                    if code != 0 {
                        return Err(check_failed(format!("hackbench: task {pid} failed with exit {code}")));
                    }
                }
                Ok(())
            })
        })();
        if outcome.is_err() {
            for &pid in &pids {
                sys::kill_and_reap(pid);
            }
        }
        outcome
    }

    fn run_threads(&self, ready_r: &Fd, ready_w: &Fd, wake_r: &Fd, wake_w: Fd, tasks: usize) -> Result<u64> {
        let mut channels = Vec::new();
        for _ in 0..self.cfg.groups * self.cfg.fds {
            channels.push(self.channel()?);
        }
        let (ready, wake) = (ready_w.raw(), wake_r.raw());
        std::thread::scope(|scope| {
            let mut handles = Vec::with_capacity(tasks);
            for group in channels.chunks(self.cfg.fds as usize) {
                for (r, _) in group {
                    let fd = r.raw();
                    let bytes = self.cfg.bytes_per_receiver();
                    handles.push(scope.spawn(move || receiver(fd, bytes, ready, wake)));
                }
                let targets: Vec<RawFd> = group.iter().map(|(_, w)| w.raw()).collect();
                for _ in 0..self.cfg.fds {
                    let targets = targets.clone();
                    let data = &self.data;
                    let messages = self.cfg.messages;
                    handles.push(scope.spawn(move || sender(&targets, messages, data, ready, wake)));
                }
            }
            start_and_wait(ready_r, wake_w, tasks, || {
                let mut failed = 0;
                for h in handles {
                    if h.join().unwrap_or(1) != 0 {
                        failed += 1;
                    }
                }
                match failed {
                    0 => Ok(()),
                    n => Err(check_failed(format!("hackbench: {n} threads failed"))),
                }
            })
        })
    }
}

/// Waits until `tasks` tasks are ready, wakes them all, and times `wait_all`.
fn start_and_wait(ready_r: &Fd, mut wake_w: Fd, tasks: usize, wait_all: impl FnOnce() -> Result<()>) -> Result<u64> {
    let mut byte = [0u8; 1];
    for _ in 0..tasks {
        if !sys::read_exact(ready_r.raw(), &mut byte)? {
            return Err(check_failed("hackbench: a task ended before it was ready"));
        }
    }
    let start = sys::now_ns();
    sys::write_all(wake_w.raw(), b"!")?;
    wake_w.close()?;
    wait_all()?;
    Ok(sys::now_ns() - start)
}

/// Tells the parent this task is ready and waits for the start signal.
fn ready_and_wait(ready: RawFd, wake: RawFd) -> bool {
    if sys::write_all(ready, b"r").is_err() {
        return false;
    }
    let mut pfd = libc::pollfd {
        fd: wake,
        events: libc::POLLIN,
        revents: 0,
    };
    loop {
        let r = unsafe { libc::poll(&mut pfd, 1, -1) };
        if r == 1 {
            return true;
        }
        if r < 0 && sys::errno() != libc::EINTR {
            return false;
        }
    }
}

/// A receiver: reads exactly `bytes`; exit code 0 when it got them all.
fn receiver(fd: RawFd, bytes: u64, ready: RawFd, wake: RawFd) -> i32 {
    if !ready_and_wait(ready, wake) {
        return 2;
    }
    let mut buf = [0u8; 4096];
    let mut left = bytes;
    while left > 0 {
        let want = left.min(buf.len() as u64) as usize;
        let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), want) };
        if n < 0 && sys::errno() == libc::EINTR {
            continue;
        }
        if n <= 0 {
            return 3;
        }
        left -= n as u64;
    }
    0
}

/// A sender: `messages` rounds of one message to each receiver of the group.
fn sender(targets: &[RawFd], messages: u32, data: &[u8], ready: RawFd, wake: RawFd) -> i32 {
    if !ready_and_wait(ready, wake) {
        return 2;
    }
    for _ in 0..messages {
        for &fd in targets {
            if sys::write_all(fd, data).is_err() {
                return 4;
            }
        }
    }
    0
}

impl Workload for Hackbench {
    fn run(&mut self, n: u64) -> Result<()> {
        for _ in 0..n {
            self.timed_ns += self.run_once()?;
            self.runs += 1;
        }
        Ok(())
    }

    fn own_seconds(&self) -> Option<f64> {
        (self.runs > 0).then(|| self.timed_ns as f64 / 1e9 / self.runs as f64)
    }
}

/// sched_yield(2): with nothing else runnable on the CPU, the scheduler's fast path.
#[derive(Debug, Default)]
pub struct SchedYield {
    /// Calls made.
    pub calls: u64,
}

impl Workload for SchedYield {
    fn run(&mut self, n: u64) -> Result<()> {
        for _ in 0..n {
            if unsafe { libc::sched_yield() } != 0 {
                return Err(os_error("sched_yield"));
            }
        }
        self.calls += n;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small(threads: bool, pipes: bool) -> HackbenchConfig {
        HackbenchConfig {
            groups: 2,
            fds: 3,
            messages: 10,
            datasize: 100,
            threads,
            pipes,
        }
    }

    #[test]
    fn hackbench_delivers_every_message_in_all_modes() {
        for (threads, pipes) in [(false, false), (false, true), (true, false), (true, true)] {
            let mut w = Hackbench::new(&small(threads, pipes)).unwrap();
            w.run(2).unwrap();
            assert_eq!(w.runs, 2);
            // 2 runs x 2 groups x 3 senders x 3 receivers x 10 messages.
            assert_eq!(w.messages_delivered, 360, "threads {threads} pipes {pipes}");
            let t = w.own_seconds().unwrap();
            assert!(t > 0.0 && t < 10.0);
        }
    }

    #[test]
    fn hackbench_rejects_empty_groups_and_describes_itself() {
        let cfg = HackbenchConfig {
            groups: 0,
            ..HackbenchConfig::default()
        };
        assert!(Hackbench::new(&cfg).is_err());
        assert_eq!(
            HackbenchConfig::default().describe(),
            "hackbench, 10 groups of 20 senders and 20 receivers, 100 messages of 100 bytes, processes over socketpairs"
        );
    }

    #[test]
    fn receivers_notice_missing_bytes() {
        // A receiver expecting more than is ever sent fails instead of passing quietly.
        let (r, mut w) = sys::pipe().unwrap();
        let (ready_r, ready_w) = sys::pipe().unwrap();
        let (wake_r, wake_w) = sys::pipe().unwrap();
        sys::write_all(wake_w.raw(), b"!").unwrap();
        sys::write_all(w.raw(), &[0u8; 10]).unwrap();
        w.close().unwrap();
        assert_eq!(receiver(r.raw(), 11, ready_w.raw(), wake_r.raw()), 3);
        let mut b = [0u8; 1];
        assert!(sys::read_exact(ready_r.raw(), &mut b).unwrap());
    }

    #[test]
    fn sched_yield_counts() {
        let mut w = SchedYield::default();
        w.run(100).unwrap();
        assert_eq!(w.calls, 100);
    }
}
