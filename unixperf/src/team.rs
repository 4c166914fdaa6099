//! Copies of the benchmark as worker processes, run by a supervisor.
//!
//! The unixperf process itself only supervises: it forks one worker per copy, and every test
//! runs in a worker. Each worker leads its own process group, so everything a test starts
//! (fork children, token partners, hackbench tasks) can be killed at once; the supervisor is
//! a child subreaper, so orphans of killed workers come back to it to be reaped. On SIGINT,
//! SIGTERM or SIGHUP the supervisor's handler kills the workers' groups, and the supervisor
//! then reaps everything, removes the scratch directory and dies of the same signal.
//!
//! Workers and supervisor talk over pipes in fixed-size records (shorter than PIPE_BUF, so
//! writes by several workers to the one report pipe never mix): the supervisor sends each
//! worker a command (set up test, run it, quit), and workers answer with a report.

use std::os::fd::RawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI32, Ordering};

use crate::measure::{self, Plan};
use crate::options::{Config, MAX_COPIES};
use crate::report::{self, EXIT_BROKEN_PIPE};
use crate::suite::TESTS;
use crate::sys::{self, cvt, Fd};
use crate::workload::{Ctx, Workload};

/// Why a run stopped before its end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stop {
    /// A signal asked unixperf to stop.
    Signal(i32),
    /// A test or the harness failed; the message was printed or is here.
    Failed(String),
    /// Standard output's reader went away.
    BrokenPipe,
}

/// Worker process groups, for the signal handler, which may not allocate or lock.
static WORKER_GROUPS: [AtomicI32; MAX_COPIES as usize] = [const { AtomicI32::new(0) }; MAX_COPIES as usize];
/// The signal that asked us to stop, or 0.
static STOP_SIGNAL: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_stop_signal(sig: libc::c_int) {
    STOP_SIGNAL.store(sig, Ordering::SeqCst);
    kill_workers();
}

/// Kills every worker's process group (async-signal-safe).
fn kill_workers() {
    for g in &WORKER_GROUPS {
        let pid = g.load(Ordering::SeqCst);
        if pid > 0 {
            unsafe {
                libc::kill(-pid, libc::SIGKILL);
                libc::kill(pid, libc::SIGKILL);
            }
        }
    }
}

/// The signal that asked us to stop, if any.
pub fn stop_signal() -> Option<i32> {
    match STOP_SIGNAL.load(Ordering::SeqCst) {
        0 => None,
        s => Some(s),
    }
}

const STOP_SIGNALS: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// Makes this process the supervisor: a subreaper with handlers for the stop signals.
/// Without SA_RESTART, so a blocked wait returns EINTR and notices the signal.
pub fn become_supervisor() -> sys::Result<()> {
    cvt(
        unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1) },
        "prctl(PR_SET_CHILD_SUBREAPER)",
    )?;
    for sig in STOP_SIGNALS {
        let mut sa: libc::sigaction = unsafe { std::mem::zeroed() };
        sa.sa_sigaction = on_stop_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
        unsafe { libc::sigemptyset(&mut sa.sa_mask) };
        cvt(unsafe { libc::sigaction(sig, &sa, std::ptr::null_mut()) }, "sigaction")?;
    }
    Ok(())
}

/// Kills all workers and reaps every child and adopted orphan, for at most a few seconds.
pub fn kill_and_reap_everything() {
    kill_workers();
    let deadline = sys::now_ns() + 5_000_000_000;
    loop {
        let mut status = 0;
        let r = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
        if r < 0 && sys::errno() == libc::ECHILD {
            break;
        }
        if r <= 0 {
            if sys::now_ns() > deadline {
                break;
            }
            // Killed processes take a moment to exit; kill again in case one forked.
            kill_workers();
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
    }
    for g in &WORKER_GROUPS {
        g.store(0, Ordering::SeqCst);
    }
}

/// Dies of `sig` as if the supervisor had no handler, so the parent sees the real cause.
pub fn die_of(sig: i32) -> ! {
    unsafe {
        libc::signal(sig, libc::SIG_DFL);
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, sig);
        libc::sigprocmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
        libc::raise(sig);
        libc::_exit(128 + sig)
    }
}

/// Commands to workers.
const CMD_INIT: u64 = 1;
const CMD_RUN: u64 = 2;
const CMD_RUN_QUIET: u64 = 3;
const CMD_QUIT: u64 = 4;

/// Report kinds from workers.
const REP_READY: u64 = 1;
const REP_DONE: u64 = 2;
const REP_FAILED: u64 = 3;

/// What one copy measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CopyReport {
    /// 1-based copy number.
    pub copy: u32,
    /// Operations per pass.
    pub count: u64,
    /// Operations over all passes.
    pub ops: u64,
    /// Nanoseconds over all passes.
    pub nanos: u64,
    /// Start of the first timed pass (CLOCK_MONOTONIC ns).
    pub start: u64,
    /// End of the last timed pass.
    pub end: u64,
    /// hackbench's own seconds per run.
    pub own_seconds: Option<f64>,
}

impl CopyReport {
    /// Operations per second.
    pub fn rate(&self) -> f64 {
        self.ops as f64 * 1e9 / self.nanos.max(1) as f64
    }
}

const REPORT_WORDS: usize = 9;
// Records up to PIPE_BUF are written atomically, however many workers share the pipe.
const _: () = assert!(REPORT_WORDS * 8 <= libc::PIPE_BUF);

fn encode(kind: u64, r: &CopyReport) -> [u8; REPORT_WORDS * 8] {
    let words = [
        kind,
        r.copy as u64,
        r.count,
        r.ops,
        r.nanos,
        r.start,
        r.end,
        r.own_seconds.is_some() as u64,
        r.own_seconds.unwrap_or(0.0).to_bits(),
    ];
    let mut buf = [0u8; REPORT_WORDS * 8];
    for (chunk, w) in buf.chunks_mut(8).zip(words) {
        chunk.copy_from_slice(&w.to_le_bytes());
    }
    buf
}

fn decode(buf: &[u8; REPORT_WORDS * 8]) -> (u64, CopyReport) {
    let w = |i: usize| u64::from_le_bytes(buf[i * 8..i * 8 + 8].try_into().unwrap());
    let report = CopyReport {
        copy: w(1) as u32,
        count: w(2),
        ops: w(3),
        nanos: w(4),
        start: w(5),
        end: w(6),
        own_seconds: (w(7) != 0).then(|| f64::from_bits(w(8))),
    };
    (w(0), report)
}

struct Worker {
    pid: libc::pid_t,
    copy: u32,
    cmd: Fd,
    exited: Fd,
}

/// The running copies.
pub struct Team {
    workers: Vec<Worker>,
    reports: Fd,
}

impl Team {
    /// Starts `copies` workers; with `cpus`, copy k is pinned to `cpus[(k-1) % len]`.
    pub fn spawn(cfg: &Config, copies: u32, cpus: Option<&[usize]>, scratch: &Path) -> Result<Team, Stop> {
        let failed = |e: sys::Error| Stop::Failed(e.to_string());
        let (reports, report_w) = sys::pipe().map_err(failed)?;
        let mut team = Team {
            workers: Vec::new(),
            reports,
        };
        for copy in 1..=copies {
            let (cmd_r, cmd_w) = sys::pipe().map_err(failed)?;
            let cpu = cpus.map(|c| c[(copy as usize - 1) % c.len()]);
            let dir = scratch.join(format!("copy{copy}"));
            let pid = unsafe { libc::fork() };
            if pid < 0 {
                return Err(failed(sys::os_error("fork")));
            }
            if pid == 0 {
                let code = worker_main(cfg, copy, cpu, cmd_r.raw(), report_w.raw(), dir);
                unsafe { libc::_exit(code) };
            }
            // Both sides set the group, so it is set whichever runs first.
            unsafe { libc::setpgid(pid, pid) };
            WORKER_GROUPS[copy as usize - 1].store(pid, Ordering::SeqCst);
            let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) } as RawFd;
            let exited = Fd(cvt(pidfd, "pidfd_open").map_err(failed)?);
            team.workers.push(Worker {
                pid,
                copy,
                cmd: cmd_w,
                exited,
            });
            if let Some(sig) = stop_signal() {
                return Err(Stop::Signal(sig));
            }
        }
        Ok(team)
    }

    fn send_all(&self, cmd: u64, test: usize, count: u64) -> Result<(), Stop> {
        let mut buf = [0u8; 24];
        for (chunk, w) in buf.chunks_mut(8).zip([cmd, test as u64, count]) {
            chunk.copy_from_slice(&w.to_le_bytes());
        }
        for w in &self.workers {
            if let Err(e) = sys::write_all(w.cmd.raw(), &buf) {
                return Err(stop_signal().map_or(Stop::Failed(format!("copy {}: {e}", w.copy)), Stop::Signal));
            }
        }
        Ok(())
    }

    /// One report from each worker, in copy order; fails if any worker failed or died.
    fn collect(&self, want: u64) -> Result<Vec<CopyReport>, Stop> {
        let mut got: Vec<Option<CopyReport>> = vec![None; self.workers.len()];
        while got.iter().any(Option::is_none) {
            if let Some(sig) = stop_signal() {
                return Err(Stop::Signal(sig));
            }
            let mut fds = vec![libc::pollfd {
                fd: self.reports.raw(),
                events: libc::POLLIN,
                revents: 0,
            }];
            fds.extend(self.workers.iter().map(|w| libc::pollfd {
                fd: w.exited.raw(),
                events: libc::POLLIN,
                revents: 0,
            }));
            let r = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, -1) };
            if r < 0 {
                if sys::errno() == libc::EINTR {
                    continue;
                }
                return Err(Stop::Failed(sys::os_error("poll").to_string()));
            }
            // Reports first: a worker that failed says so before it exits.
            if fds[0].revents & libc::POLLIN != 0 {
                let mut buf = [0u8; REPORT_WORDS * 8];
                match sys::read_exact(self.reports.raw(), &mut buf) {
                    Ok(true) => {}
                    Ok(false) => return Err(Stop::Failed("all copies ended without a report".into())),
                    Err(e) => return Err(Stop::Failed(e.to_string())),
                }
                let (kind, report) = decode(&buf);
                let i = report.copy as usize - 1;
                match kind {
                    REP_FAILED => return Err(Stop::Failed(String::new())),
                    k if k == want && i < got.len() => got[i] = Some(report),
                    k => return Err(Stop::Failed(format!("copy {}: unexpected report {k}", report.copy))),
                }
                continue;
            }
            if let Some(i) = fds[1..].iter().position(|f| f.revents != 0) {
                let w = &self.workers[i];
                return Err(match sys::wait_exit(w.pid) {
                    Ok(EXIT_BROKEN_PIPE) => Stop::BrokenPipe,
                    Ok(code) => Stop::Failed(format!("copy {} exited with {code} in the middle of a test", w.copy)),
                    Err(e) => stop_signal().map_or(Stop::Failed(format!("copy {}: {e}", w.copy)), Stop::Signal),
                });
            }
        }
        Ok(got.into_iter().map(|r| r.expect("all reported")).collect())
    }

    /// Has every copy set up test `test` (an index into [`TESTS`]).
    pub fn init(&self, test: usize) -> Result<(), Stop> {
        self.send_all(CMD_INIT, test, 0)?;
        self.collect(REP_READY).map(|_| ())
    }

    /// Runs the set-up test in every copy at once, each printing its lines; `count` 0
    /// calibrates.
    pub fn run(&self, count: u64) -> Result<Vec<CopyReport>, Stop> {
        self.send_all(CMD_RUN, 0, count)?;
        self.collect(REP_DONE)
    }

    /// Runs one silent timed pass of `count` operations (0: calibrate first) in every copy.
    pub fn run_quiet(&self, count: u64) -> Result<Vec<CopyReport>, Stop> {
        self.send_all(CMD_RUN_QUIET, 0, count)?;
        self.collect(REP_DONE)
    }

    /// Ends the workers and checks they exited cleanly.
    pub fn quit(self) -> Result<(), Stop> {
        self.send_all(CMD_QUIT, 0, 0)?;
        for w in &self.workers {
            match sys::wait_exit(w.pid) {
                Ok(0) => {}
                Ok(EXIT_BROKEN_PIPE) => return Err(Stop::BrokenPipe),
                Ok(code) => return Err(Stop::Failed(format!("copy {} exited with {code}", w.copy))),
                Err(e) => return Err(stop_signal().map_or(Stop::Failed(format!("copy {}: {e}", w.copy)), Stop::Signal)),
            }
            WORKER_GROUPS[w.copy as usize - 1].store(0, Ordering::SeqCst);
        }
        Ok(())
    }
}

/// Prints `unixperf: msg` to standard error in one write.
pub fn complain(msg: &str) {
    let line = format!("unixperf: {msg}\n");
    let _ = sys::write_all(2, line.as_bytes());
}

/// A worker's life: commands in, reports out. Returns the exit code.
fn worker_main(cfg: &Config, copy: u32, cpu: Option<usize>, cmd: RawFd, reports: RawFd, dir: PathBuf) -> i32 {
    unsafe {
        libc::setpgid(0, 0);
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
        for sig in STOP_SIGNALS {
            libc::signal(sig, libc::SIG_DFL);
        }
    }
    // Other copies' command pipes would keep them from seeing the end of theirs.
    sys::close_other_fds(&[cmd, reports]);
    let mut report = CopyReport {
        copy,
        count: 0,
        ops: 0,
        nanos: 0,
        start: 0,
        end: 0,
        own_seconds: None,
    };
    let send = |kind: u64, r: &CopyReport| sys::write_all(reports, &encode(kind, r)).is_ok();
    let fail = |test: &str, e: &sys::Error| {
        complain(&format!("{test} (copy {copy}): {e}"));
        send(
            REP_FAILED,
            &CopyReport {
                copy,
                count: 0,
                ops: 0,
                nanos: 0,
                start: 0,
                end: 0,
                own_seconds: None,
            },
        );
        1
    };
    if let Some(cpu) = cpu {
        if let Err(e) = sys::pin_to_cpu(cpu) {
            return fail("-pin", &e);
        }
    }
    if let Err(e) = std::fs::create_dir_all(&dir) {
        return fail(
            "scratch directory",
            &sys::check_failed(format!("creating {dir:?}: {e}")),
        );
    }
    let ctx = Ctx {
        dir,
        hackbench: cfg.hackbench.clone(),
    };
    let mut current: Option<(usize, Box<dyn Workload>)> = None;
    loop {
        let mut buf = [0u8; 24];
        match sys::read_exact(cmd, &mut buf) {
            Ok(true) => {}
            _ => return 0,
        }
        let word = |i: usize| u64::from_le_bytes(buf[i * 8..i * 8 + 8].try_into().unwrap());
        let (op, test, count) = (word(0), word(1) as usize, word(2));
        match op {
            CMD_INIT => {
                // The previous test's clean-up first.
                drop(current.take());
                let def = &TESTS[test];
                match def.make(&ctx) {
                    Ok(w) => current = Some((test, w)),
                    Err(e) => return fail(def.name, &e),
                }
                report = CopyReport {
                    copy,
                    count: 0,
                    ops: 0,
                    nanos: 0,
                    start: 0,
                    end: 0,
                    own_seconds: None,
                };
                if !send(REP_READY, &report) {
                    return 1;
                }
            }
            CMD_RUN | CMD_RUN_QUIET => {
                let Some((test, w)) = current.as_mut() else {
                    return 1;
                };
                let def = &TESTS[*test];
                // Set when standard output's reader went away: not a failure of the test.
                let mut stdout_closed = false;
                let result = if op == CMD_RUN {
                    let plan = Plan {
                        count: (count > 0).then_some(count),
                        repeat: cfg.repeat,
                        seconds: cfg.seconds,
                    };
                    let mut emit = |line: &str| {
                        report::emit(line).inspect_err(|e| stdout_closed = e.kind() == std::io::ErrorKind::BrokenPipe)
                    };
                    measure::measure(w.as_mut(), &plan, &def.describe(&ctx), &mut emit).map(|o| {
                        report.count = o.count;
                        report.ops = o.ops;
                        report.nanos = o.nanos;
                        report.own_seconds = o.own_seconds;
                    })
                } else {
                    quiet_pass(w.as_mut(), count, cfg.seconds, &mut report)
                };
                if let Err(e) = result {
                    // Ends the copy quietly, as a pipeline member should.
                    if stdout_closed {
                        return EXIT_BROKEN_PIPE;
                    }
                    return fail(def.name, &e);
                }
                if !send(REP_DONE, &report) {
                    return 1;
                }
            }
            _ => return 0,
        }
    }
}

/// One timed pass without output, for `-scaling`.
fn quiet_pass(w: &mut dyn Workload, count: u64, seconds: f64, report: &mut CopyReport) -> sys::Result<()> {
    let count = if count > 0 {
        count
    } else {
        measure::calibrate(w, seconds)?
    };
    let (start, end) = measure::timed_pass(w, count)?;
    w.finish()?;
    *report = CopyReport {
        count,
        ops: count,
        nanos: end - start,
        start,
        end,
        own_seconds: w.own_seconds(),
        ..*report
    };
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_survive_the_pipe_encoding() {
        let r = CopyReport {
            copy: 3,
            count: 7,
            ops: 21,
            nanos: 99,
            start: 5,
            end: 104,
            own_seconds: Some(0.25),
        };
        assert_eq!(decode(&encode(REP_DONE, &r)), (REP_DONE, r));
        let none = CopyReport { own_seconds: None, ..r };
        assert_eq!(decode(&encode(REP_READY, &none)), (REP_READY, none));
    }
}
