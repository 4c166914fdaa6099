//! Inter-process communication: token passing over pipes and sockets, select.

use std::os::fd::RawFd;

use crate::sys::{self, check_failed, cvt, os_error, Fd, Result};
use crate::workload::Workload;

/// The largest token.
const MAX_TOKEN: usize = 1024;

/// What carries the tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Channel {
    /// Two pipes, one each way.
    Pipes,
    /// One Unix stream socketpair.
    UnixSocket,
    /// One TCP connection over 127.0.0.1.
    Tcp,
}

/// A token of `size` bytes sent to a partner process that sends it back: one operation is
/// one round trip. The partner counts the tokens and reports the count at the end, so the
/// parent can check that every token really made the round trip.
pub struct PingPong {
    size: usize,
    to_partner: Fd,
    from_partner: Fd,
    /// Whether `to_partner` is a socket, ended by shutdown (its dup is `from_partner`).
    socket: bool,
    partner: libc::pid_t,
    saved_affinity: Option<libc::cpu_set_t>,
    /// Round trips completed with the token intact.
    pub round_trips: u64,
}

impl PingPong {
    /// Starts the partner. With `same_cpu`, both processes are pinned to the CPU the caller
    /// runs on, so every hop is a context switch (the caller's affinity is restored on drop).
    pub fn new(channel: Channel, size: usize, same_cpu: bool) -> Result<Self> {
        assert!(size > 0 && size <= MAX_TOKEN);
        let saved_affinity = if same_cpu {
            let saved = sys::get_affinity()?;
            let cpu = cvt(unsafe { libc::sched_getcpu() }, "sched_getcpu")?;
            sys::pin_to_cpu(cpu as usize)?;
            Some(saved)
        } else {
            None
        };
        let (parent_to, child_from, child_to, parent_from, socket) = match channel {
            Channel::Pipes => {
                let (a_read, a_write) = sys::pipe()?;
                let (b_read, b_write) = sys::pipe()?;
                (a_write, a_read, b_write, b_read, false)
            }
            Channel::UnixSocket => {
                let (parent, child) = sys::socketpair()?;
                let parent2 = Fd(cvt(unsafe { libc::dup(parent.raw()) }, "dup")?);
                let child2 = Fd(cvt(unsafe { libc::dup(child.raw()) }, "dup")?);
                (parent, child, child2, parent2, true)
            }
            Channel::Tcp => {
                let (parent, child) = tcp_pair()?;
                let parent2 = Fd(cvt(unsafe { libc::dup(parent.raw()) }, "dup")?);
                let child2 = Fd(cvt(unsafe { libc::dup(child.raw()) }, "dup")?);
                (parent, child, child2, parent2, true)
            }
        };
        let (cf, ct) = (child_from.raw(), child_to.raw());
        let partner = sys::fork_child(|| {
            // Inherited copies of the parent's ends (or anyone's) would hold off end of file.
            sys::close_other_fds(&[cf, ct]);
            echo_partner(cf, ct, size)
        })?;
        drop(child_from);
        drop(child_to);
        Ok(PingPong {
            size,
            to_partner: parent_to,
            from_partner: parent_from,
            socket,
            partner,
            saved_affinity,
            round_trips: 0,
        })
    }
}

/// A connected TCP pair over 127.0.0.1, Nagle off: (client, server side).
fn tcp_pair() -> Result<(Fd, Fd)> {
    let kind = libc::SOCK_STREAM | libc::SOCK_CLOEXEC;
    let listener = Fd(cvt(unsafe { libc::socket(libc::AF_INET, kind, 0) }, "socket")?);
    let mut addr: libc::sockaddr_in = unsafe { std::mem::zeroed() };
    addr.sin_family = libc::AF_INET as libc::sa_family_t;
    addr.sin_addr.s_addr = u32::from_ne_bytes([127, 0, 0, 1]);
    addr.sin_port = 0;
    let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
    let sa = &mut addr as *mut libc::sockaddr_in as *mut libc::sockaddr;
    cvt(unsafe { libc::bind(listener.raw(), sa, len) }, "bind 127.0.0.1")?;
    cvt(unsafe { libc::listen(listener.raw(), 1) }, "listen")?;
    let mut bound_len = len;
    cvt(
        unsafe { libc::getsockname(listener.raw(), sa, &mut bound_len) },
        "getsockname",
    )?;
    let client = Fd(cvt(unsafe { libc::socket(libc::AF_INET, kind, 0) }, "socket")?);
    cvt(unsafe { libc::connect(client.raw(), sa, len) }, "connect 127.0.0.1")?;
    let flags = libc::SOCK_CLOEXEC;
    let server = Fd(cvt(
        unsafe { libc::accept4(listener.raw(), std::ptr::null_mut(), std::ptr::null_mut(), flags) },
        "accept",
    )?);
    for fd in [client.raw(), server.raw()] {
        let one: libc::c_int = 1;
        let p = &one as *const libc::c_int as *const libc::c_void;
        let size = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        cvt(
            unsafe { libc::setsockopt(fd, libc::IPPROTO_TCP, libc::TCP_NODELAY, p, size) },
            "TCP_NODELAY",
        )?;
    }
    Ok((client, server))
}

/// The partner: echoes tokens until end of file, then sends the count of tokens echoed.
fn echo_partner(from: RawFd, to: RawFd, size: usize) -> i32 {
    let mut buf = [0u8; MAX_TOKEN];
    let mut count: u64 = 0;
    loop {
        match sys::read_exact(from, &mut buf[..size]) {
            Ok(true) => {}
            Ok(false) => break,
            Err(_) => return 2,
        }
        if sys::write_all(to, &buf[..size]).is_err() {
            return 3;
        }
        count += 1;
    }
    match sys::write_all(to, &count.to_le_bytes()) {
        Ok(()) => 0,
        Err(_) => 4,
    }
}

impl Workload for PingPong {
    fn run(&mut self, n: u64) -> Result<()> {
        let mut buf = [0u8; MAX_TOKEN];
        let size = self.size;
        for i in 0..n {
            // A different first and last byte each time: a stale token would be noticed.
            let mark = (self.round_trips.wrapping_add(i) & 0xff) as u8;
            buf[0] = mark;
            buf[size - 1] = mark;
            sys::write_all(self.to_partner.raw(), &buf[..size])?;
            buf[0] = !mark;
            buf[size - 1] = !mark;
            if !sys::read_exact(self.from_partner.raw(), &mut buf[..size])? {
                return Err(check_failed("token passing: partner closed the channel"));
            }
            if buf[0] != mark || buf[size - 1] != mark {
                return Err(check_failed("token passing: token came back changed"));
            }
        }
        self.round_trips += n;
        Ok(())
    }

    fn finish(&mut self) -> Result<()> {
        if self.partner <= 0 {
            return Ok(());
        }
        if self.socket {
            cvt(
                unsafe { libc::shutdown(self.to_partner.raw(), libc::SHUT_WR) },
                "shutdown",
            )?;
        }
        self.to_partner.close()?;
        let mut count = [0u8; 8];
        if !sys::read_exact(self.from_partner.raw(), &mut count)? {
            return Err(check_failed("token passing: partner sent no token count"));
        }
        let partner = std::mem::replace(&mut self.partner, 0);
        let code = sys::wait_exit(partner)?;
        let seen = u64::from_le_bytes(count);
        if code != 0 || seen != self.round_trips {
            return Err(check_failed(format!(
                "token passing: partner echoed {seen} tokens and exited {code}, expected {} and 0",
                self.round_trips
            )));
        }
        Ok(())
    }
}

impl Drop for PingPong {
    fn drop(&mut self) {
        if self.partner > 0 {
            sys::kill_and_reap(self.partner);
        }
        if let Some(set) = &self.saved_affinity {
            let _ = sys::set_affinity(set);
        }
    }
}

/// select(2) with an immediate timeout on `reads` empty pipes' read ends and `writes` pipes'
/// write ends (always writable), checking the number of ready descriptors.
pub struct Select {
    _pipes: Vec<(Fd, Fd)>,
    nfds: libc::c_int,
    read_set: libc::fd_set,
    write_set: libc::fd_set,
    expected: libc::c_int,
    /// select calls that returned the expected count.
    pub calls: u64,
}

impl Select {
    /// Opens the pipes and builds the descriptor sets once.
    pub fn new(reads: usize, writes: usize) -> Result<Self> {
        let mut pipes = Vec::new();
        let mut read_set: libc::fd_set = unsafe { std::mem::zeroed() };
        let mut write_set: libc::fd_set = unsafe { std::mem::zeroed() };
        let mut nfds = 0;
        for i in 0..reads.max(writes) {
            let (r, w) = sys::pipe()?;
            if r.raw().max(w.raw()) >= libc::FD_SETSIZE as RawFd {
                return Err(check_failed("select: descriptors beyond FD_SETSIZE"));
            }
            if i < reads {
                unsafe { libc::FD_SET(r.raw(), &mut read_set) };
                nfds = nfds.max(r.raw() + 1);
            }
            if i < writes {
                unsafe { libc::FD_SET(w.raw(), &mut write_set) };
                nfds = nfds.max(w.raw() + 1);
            }
            pipes.push((r, w));
        }
        Ok(Select {
            _pipes: pipes,
            nfds,
            read_set,
            write_set,
            expected: writes as libc::c_int,
            calls: 0,
        })
    }
}

impl Workload for Select {
    fn run(&mut self, n: u64) -> Result<()> {
        for _ in 0..n {
            // select overwrites its sets: hand it copies (plain memory, no system call).
            let mut rs = self.read_set;
            let mut ws = self.write_set;
            let mut timeout = libc::timeval { tv_sec: 0, tv_usec: 0 };
            let ready = unsafe { libc::select(self.nfds, &mut rs, &mut ws, std::ptr::null_mut(), &mut timeout) };
            if ready != self.expected {
                if ready < 0 {
                    return Err(os_error("select"));
                }
                return Err(check_failed(format!(
                    "select returned {ready} ready descriptors, expected {}",
                    self.expected
                )));
            }
        }
        self.calls += n;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads and writes made by this thread, from /proc/thread-self/io.
    fn thread_io() -> (u64, u64, u64, u64) {
        let io = std::fs::read_to_string("/proc/thread-self/io").unwrap();
        let get = |key: &str| -> u64 {
            let line = io.lines().find(|l| l.starts_with(key)).unwrap();
            line[key.len()..].trim().parse().unwrap()
        };
        (get("rchar:"), get("wchar:"), get("syscr:"), get("syscw:"))
    }

    #[test]
    fn pipeping_passes_every_token_both_ways() {
        for size in [1, 1024] {
            let (rchar, wchar, syscr, syscw) = thread_io();
            let mut w = PingPong::new(Channel::Pipes, size, false).unwrap();
            w.run(200).unwrap();
            w.run(50).unwrap();
            assert_eq!(w.round_trips, 250);
            // The partner's count is checked in finish.
            w.finish().unwrap();
            let (rchar2, wchar2, syscr2, syscw2) = thread_io();
            assert!(syscw2 - syscw >= 250 && syscr2 - syscr >= 250);
            assert!(wchar2 - wchar >= 250 * size as u64 && rchar2 - rchar >= 250 * size as u64);
        }
    }

    #[test]
    fn socket_pings_pass_every_token() {
        for channel in [Channel::UnixSocket, Channel::Tcp] {
            let mut w = PingPong::new(channel, 1, false).unwrap();
            w.run(100).unwrap();
            w.finish().unwrap();
            assert_eq!(w.round_trips, 100, "{channel:?}");
        }
    }

    #[test]
    fn same_cpu_ping_restores_affinity() {
        let before = sys::allowed_cpus();
        let mut w = PingPong::new(Channel::Pipes, 1, true).unwrap();
        assert_eq!(sys::allowed_cpus().len(), 1);
        w.run(20).unwrap();
        w.finish().unwrap();
        drop(w);
        assert_eq!(sys::allowed_cpus(), before);
    }

    #[test]
    fn a_partner_that_vanishes_is_an_error() {
        let mut w = PingPong::new(Channel::Pipes, 1, false).unwrap();
        w.run(3).unwrap();
        unsafe { libc::kill(w.partner, libc::SIGKILL) };
        assert!(w.run(100).is_err() || w.finish().is_err());
    }

    #[test]
    fn select_counts_ready_descriptors() {
        for (reads, writes) in [(0, 0), (16, 0), (32, 0), (0, 16), (0, 32), (64, 64)] {
            let mut w = Select::new(reads, writes).unwrap();
            w.run(100).unwrap();
            assert_eq!(w.calls, 100);
            assert_eq!(w.expected as usize, writes);
        }
        // A read end with data is ready: the check notices the unexpected count.
        let mut w = Select::new(1, 0).unwrap();
        sys::write_all(w._pipes[0].1.raw(), b"x").unwrap();
        assert!(w.run(1).is_err());
    }
}
