//! Every process a test starts, found and ended when the test ends, whatever it does to
//! its session (`setsid`, a double fork, a daemon): each test runs in a cgroup v2 of its
//! own (`upcmp-PID-START-N` under the cgroup2 mount), which is killed whole
//! (`cgroup.kill`) when the test ends, on a signal, and by the next uprun when the one
//! that made it was killed (`kill -9`). Where no cgroup can be made (no cgroup2 mount, not
//! root, a read-only mount), the fallback is the environment: every process of the test
//! inherits `UPCMP_TEST_GROUP=PID-START-N-SECRET`, and /proc is searched for it (a process
//! that clears its environment escapes the fallback). In both cases the direct children die
//! with uprun (`PR_SET_PDEATHSIG`). Processes found still running after a test are killed
//! and reported (`docs/uprun.md`).
//!
//! The variable is never trusted from the environment: anyone may set it, and a stale
//! one inherited by the user's shell named an uprun long gone. A tag counts only with the
//! random secret of its uprun: a running uprun knows its own, and a killed one left its
//! secret in the registry ([`REGISTRY_DIR`], private to its user), which the next uprun
//! reads to end what it left behind.

use crate::store::outdir::Writer;
use std::fs::File;
use std::io;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// The environment variable naming a test's group in all its processes.
pub const GROUP_ENV: &str = "UPCMP_TEST_GROUP";
/// The prefix of a test's cgroup.
const CGROUP_PREFIX: &str = "upcmp-";
/// Where root's uprun registers the secret of its environment tags (`PID-START-SECRET`, an
/// empty file) for the next uprun, should it be killed; a tmpfs, so a reboot clears it.
/// Another user's uprun uses `$XDG_RUNTIME_DIR/upcmp-groups`.
pub const REGISTRY_DIR: &str = "/run/upcmp-groups";

/// A process: its pid and command name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proc {
    /// Its pid.
    pub pid: i32,
    /// Its command name (`/proc/PID/comm`).
    pub comm: String,
}

impl std::fmt::Display for Proc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Anyone names their processes: the name is escaped for root's terminal.
        write!(f, "{} ({})", self.pid, crate::model::shown::Shown(&self.comm))
    }
}

/// The processes of one test.
pub struct TestGroup {
    /// `PID-START-N`: this uprun and the test's number.
    tag: String,
    /// The test's cgroup and its `cgroup.procs`, open for the children to join.
    cgroup: Option<(PathBuf, File)>,
    /// The umask the test's processes get (the user's, not the run's).
    child_umask: u32,
    ended: bool,
}

/// The cgroup2 file system's mount point, from /proc/self/mountinfo.
fn cgroup2_root() -> Option<PathBuf> {
    let info = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    info.lines().find_map(|l| {
        let (left, right) = l.split_once(" - ")?;
        let mount = left.split_whitespace().nth(4)?;
        (right.split_whitespace().next() == Some("cgroup2")).then(|| PathBuf::from(mount))
    })
}

/// This uprun as a tag prefix: `PID-START`.
fn this_uprun() -> String {
    match Writer::current() {
        Some(w) => format!("{}-{}", w.pid, w.start_ticks),
        None => format!("{}-0", std::process::id()),
    }
}

/// This uprun's secret, the last part of its tags: 20 random letters and digits.
fn this_secret() -> &'static str {
    static SECRET: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    SECRET.get_or_init(|| crate::fsio::random_name(20))
}

/// The registry of this user's uprun secrets, when it is a real directory of this user
/// that nobody else may write (made when `create`).
fn registry(create: bool) -> Option<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    let dir = if me == 0 {
        PathBuf::from(REGISTRY_DIR)
    } else {
        PathBuf::from(std::env::var_os("XDG_RUNTIME_DIR")?).join("upcmp-groups")
    };
    if create && dir.is_absolute() {
        let _ = crate::fsio::create_dir(&dir, 0o700);
    }
    let m = dir.symlink_metadata().ok()?;
    (m.file_type().is_dir() && m.uid() == me && m.mode() & 0o022 == 0).then_some(dir)
}

/// Registers this uprun's secret, once, so that the next uprun can end what this one's
/// tests leave should it be killed. Without a registry the tags still end everything
/// while this uprun runs.
fn register_secret() {
    static DONE: std::sync::Once = std::sync::Once::new();
    DONE.call_once(|| {
        if let Some(dir) = registry(true) {
            let entry = dir.join(format!("{}-{}", this_uprun(), this_secret()));
            let _ = crate::fsio::write_new(&entry, b"", 0o600);
        }
    });
}

/// The registered tags of upruns that no longer run: `(PID-START, SECRET, entry file)`.
fn registered_dead() -> Vec<(String, String, PathBuf)> {
    let Some(dir) = registry(false) else {
        return Vec::new();
    };
    let entries = std::fs::read_dir(&dir).into_iter().flatten().flatten();
    entries
        .filter_map(|e| {
            let name = e.file_name().to_str()?.to_string();
            let (uprun, secret) = name.rsplit_once('-')?;
            let real = e.file_type().ok()?.is_file();
            (real && !uprun_of_tag_runs(uprun)).then(|| (uprun.to_string(), secret.to_string(), e.path()))
        })
        .collect()
}

/// Whether `tag` (`PID-START-N-SECRET`) is one of the uprun `uprun` (`PID-START`) with
/// `secret`.
fn tag_of(tag: &str, uprun: &str, secret: &str) -> bool {
    tag.strip_prefix(uprun)
        .and_then(|t| t.strip_prefix('-'))
        .and_then(|t| t.strip_suffix(secret))
        .and_then(|n| n.strip_suffix('-'))
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

impl TestGroup {
    /// A group for the next test of this uprun: a new cgroup where one can be made, else
    /// the environment tag alone. The test's processes get `child_umask`.
    pub fn new(child_umask: u32) -> Self {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(1);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let tag = format!("{}-{n}-{}", this_uprun(), this_secret());
        let cgroup = cgroup2_root().and_then(|root| {
            let dir = root.join(format!("{CGROUP_PREFIX}{tag}"));
            std::fs::create_dir(&dir).ok()?;
            match crate::fsio::open_kernel_file(&dir.join("cgroup.procs")) {
                Ok(procs) => Some((dir, procs)),
                Err(_) => {
                    let _ = std::fs::remove_dir(&dir);
                    None
                }
            }
        });
        if cgroup.is_none() {
            register_secret();
        }
        TestGroup {
            tag,
            cgroup,
            child_umask,
            ended: false,
        }
    }

    /// The id of the group's cgroup (its directory's inode number, as the kernel gives it
    /// in `PERF_SAMPLE_CGROUP`); `None` without a cgroup.
    pub fn cgroup_id(&self) -> Option<u64> {
        use std::os::unix::fs::MetadataExt;
        let (dir, _) = self.cgroup.as_ref()?;
        std::fs::metadata(dir).ok().map(|m| m.ino())
    }

    /// Whether the group is a cgroup (else the environment fallback).
    pub fn is_cgroup(&self) -> bool {
        self.cgroup.is_some()
    }

    /// Makes `cmd` start in the group: the tag in its environment, the cgroup joined before
    /// it runs, death with uprun, and the user's umask.
    pub fn prepare(&self, cmd: &mut Command) {
        cmd.env(GROUP_ENV, &self.tag);
        let procs_fd = self.cgroup.as_ref().map(|(_, f)| std::os::fd::AsRawFd::as_raw_fd(f));
        let umask = self.child_umask as libc::mode_t;
        // SAFETY: getpid has no preconditions.
        let parent = unsafe { libc::getpid() };
        // SAFETY: between fork and exec the closure calls only async-signal-safe functions
        // (write, prctl, getppid, umask) and allocates nothing.
        unsafe {
            cmd.pre_exec(move || {
                if let Some(fd) = procs_fd {
                    // "0" moves the writing process itself. Should the kernel refuse, the
                    // environment tag still finds the process.
                    libc::write(fd, b"0".as_ptr().cast(), 1);
                }
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0) != 0 {
                    return Err(io::Error::last_os_error());
                }
                // uprun died before the line above: nobody would end this process.
                if libc::getppid() != parent {
                    return Err(io::Error::from_raw_os_error(libc::ESRCH));
                }
                libc::umask(umask);
                Ok(())
            });
        }
    }

    /// The processes in the group now: in its cgroup, or carrying its tag.
    pub fn members(&self) -> Vec<Proc> {
        let mut procs = match &self.cgroup {
            Some((dir, _)) => cgroup_members(dir),
            None => Vec::new(),
        };
        for p in tagged(|t| t == self.tag) {
            if !procs.iter().any(|q| q.pid == p.pid) {
                procs.push(p);
            }
        }
        procs
    }

    /// Sends `sig` to every process of the group.
    pub fn signal(&self, sig: libc::c_int) {
        for p in self.members() {
            // SAFETY: kill has no memory effects.
            unsafe { libc::kill(p.pid, sig) };
        }
    }

    /// Ends the group: every process still in it is killed, and the cgroup removed once
    /// empty. Returns the processes that were still running.
    pub fn end(mut self) -> Vec<Proc> {
        let survivors = self.members();
        self.kill_all();
        survivors
    }

    fn kill_all(&mut self) {
        self.ended = true;
        if let Some((dir, _)) = &self.cgroup {
            kill_cgroup(dir);
        }
        kill_until_gone(|| tagged(|t| t == self.tag));
    }
}

impl Drop for TestGroup {
    fn drop(&mut self) {
        // Also on an error or a panic part-way through a test: nothing it started stays.
        if !self.ended {
            self.kill_all();
        }
    }
}

/// The processes of a cgroup.
fn cgroup_members(dir: &Path) -> Vec<Proc> {
    let procs = std::fs::read_to_string(dir.join("cgroup.procs")).unwrap_or_default();
    procs
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .map(proc_of)
        .collect()
}

fn proc_of(pid: i32) -> Proc {
    let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
    Proc {
        pid,
        comm: comm.strip_suffix('\n').unwrap_or(&comm).to_string(),
    }
}

/// Kills everything in the cgroup `dir` (`cgroup.kill`, since Linux 5.14; before, each
/// process until none is left), waits until it is empty and removes it.
fn kill_cgroup(dir: &Path) {
    if !dir.exists() {
        return;
    }
    let killed = crate::fsio::write_kernel_file(&dir.join("cgroup.kill"), b"1").is_ok();
    if !killed {
        kill_until_gone(|| cgroup_members(dir));
    }
    let t0 = Instant::now();
    while !cgroup_members(dir).is_empty() && t0.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(5));
    }
    // Removable once no process is left (the kernel says EBUSY until then).
    while std::fs::remove_dir(dir).is_err() && t0.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// SIGKILLs what `members` lists until it lists nothing (a process may fork while its
/// siblings are being killed), for at most 10 s.
fn kill_until_gone(members: impl Fn() -> Vec<Proc>) {
    let t0 = Instant::now();
    loop {
        let procs = members();
        if procs.is_empty() || t0.elapsed() > Duration::from_secs(10) {
            return;
        }
        for p in procs {
            // SAFETY: kill has no memory effects.
            unsafe { libc::kill(p.pid, libc::SIGKILL) };
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The processes whose environment holds a `UPCMP_TEST_GROUP` value for which `wanted`
/// says yes (zombies, whose environment is gone, are not listed).
fn tagged(wanted: impl Fn(&str) -> bool) -> Vec<Proc> {
    let me = std::process::id() as i32;
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let key = format!("{GROUP_ENV}=");
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| pid != me)
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ")).is_ok_and(|env| {
                env.split(|&b| b == 0)
                    .filter_map(|v| v.strip_prefix(key.as_bytes()))
                    .any(|t| std::str::from_utf8(t).is_ok_and(&wanted))
            })
        })
        .map(proc_of)
        .collect()
}

/// Whether the uprun of a tag `PID-START-N` still runs.
fn uprun_of_tag_runs(tag: &str) -> bool {
    let mut parts = tag.split('-');
    let (Some(pid), Some(start)) = (
        parts.next().and_then(|p| p.parse::<u32>().ok()),
        parts.next().and_then(|s| s.parse::<u64>().ok()),
    ) else {
        return true; // not ours to judge
    };
    match Writer::current() {
        Some(now) => Writer {
            pid,
            start_ticks: start,
            boot_id: now.boot_id,
        }
        .is_running(),
        None => true,
    }
}

/// Ends what earlier uprun processes left behind when they were killed without a chance
/// to clean up (`kill -9`): the processes of their tests' cgroups (which are removed) and
/// the processes carrying their tag. Returns one line per group found.
pub fn reap_orphans() -> Vec<String> {
    let mut said = Vec::new();
    if let Some(root) = cgroup2_root() {
        let dirs = std::fs::read_dir(&root).into_iter().flatten().flatten();
        for e in dirs {
            let name = e.file_name().to_string_lossy().into_owned();
            let Some(tag) = name.strip_prefix(CGROUP_PREFIX) else {
                continue;
            };
            if uprun_of_tag_runs(tag) {
                continue;
            }
            let dir = e.path();
            let left = cgroup_members(&dir);
            kill_cgroup(&dir);
            if !left.is_empty() {
                said.push(orphan_line(tag, &left));
            }
        }
    }
    // Only the tags of upruns that registered their secret: a tag in the environment of
    // a process that no uprun made (a stale variable of the user's shell) ends nothing.
    for (uprun, secret, entry) in registered_dead() {
        let ours = |t: &str| tag_of(t, &uprun, &secret);
        let left = tagged(ours);
        if !left.is_empty() {
            kill_until_gone(|| tagged(ours));
            said.push(orphan_line(&uprun, &left));
        }
        let _ = std::fs::remove_file(entry);
    }
    said
}

fn orphan_line(tag: &str, left: &[Proc]) -> String {
    let who = match tag.split('-').next() {
        Some(pid) if pid.parse::<u32>().is_ok() => format!("uprun (pid {pid})"),
        _ => tag.to_string(),
    };
    let procs: Vec<String> = left.iter().map(Proc::to_string).collect();
    format!(
        "ended {} process{} that {who}, since killed, left running: {}",
        left.len(),
        if left.len() == 1 { "" } else { "es" },
        procs.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_a_cgroup_the_tag_finds_and_ends_everything() {
        // The fallback: a tag no other test uses, no cgroup.
        let group = TestGroup {
            tag: format!("0-0-fallback{}", std::process::id()),
            cgroup: None,
            child_umask: 0o022,
            ended: false,
        };
        let mut sh = Command::new("/bin/sh");
        sh.args(["-c", "setsid sleep 30 & sleep 30 & wait"]);
        group.prepare(&mut sh);
        let mut child = sh.spawn().unwrap();
        let t0 = Instant::now();
        // Until both sleeps run: a process between its fork and its exec (a copy of sh,
        // then setsid) can be counted one moment and missed the next.
        let sleeps = |m: &[Proc]| m.iter().filter(|p| p.comm == "sleep").count();
        while sleeps(&group.members()) < 2 && t0.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(10));
        }
        let members = group.members();
        assert_eq!(members.len(), 3, "sh and its two sleeps: {members:?}");
        let ended = group.end();
        assert_eq!(ended.len(), 3);
        child.wait().unwrap();
        for p in ended {
            // SAFETY: signal 0 only checks that the process exists.
            let alive = unsafe { libc::kill(p.pid, 0) } == 0
                && std::fs::read_to_string(format!("/proc/{}/stat", p.pid)).is_ok_and(|s| !s.contains(") Z "));
            assert!(!alive, "{p} still runs");
        }
    }

    #[test]
    fn tags_name_their_uprun() {
        assert!(
            uprun_of_tag_runs(&format!("{}-x-1", std::process::id())),
            "not ours to judge"
        );
        let me = Writer::current().unwrap();
        assert!(uprun_of_tag_runs(&format!("{}-{}-1", me.pid, me.start_ticks)));
        assert!(!uprun_of_tag_runs(&format!("{}-{}-1", me.pid, me.start_ticks + 1)));
        assert_eq!(
            orphan_line(
                "42-7-1",
                &[Proc {
                    pid: 9,
                    comm: "sleep".into()
                }]
            ),
            "ended 1 process that uprun (pid 42), since killed, left running: 9 (sleep)"
        );
    }

    #[test]
    fn tags_count_only_with_their_uprun_secret() {
        assert!(tag_of("42-7-3-abc", "42-7", "abc"));
        assert!(!tag_of("42-7-3-abd", "42-7", "abc"));
        assert!(!tag_of("42-7--abc", "42-7", "abc"));
        assert!(!tag_of("42-70-3-abc", "42-7", "abc"));
        assert!(!tag_of("1-1-1", "1-1", "1"));
    }

    // Issue 26: a stale UPCMP_TEST_GROUP of a dead uprun (pid 1 never started at tick 1)
    // in some process's environment ends nothing; the same uprun's tag with the secret it
    // registered ends its process.
    #[test]
    fn only_registered_tags_of_dead_upruns_are_reaped() {
        let sleep = |tag: &str| Command::new("sleep").arg("30").env(GROUP_ENV, tag).spawn().unwrap();
        let alive = |c: &mut std::process::Child| c.try_wait().unwrap().is_none();
        // The registry is root's (/run); without one there is nothing to reap from.
        let Some(dir) = registry(true) else {
            return;
        };
        let mut forged = sleep("1-1-1");
        let secret = crate::fsio::random_name(20);
        let mut registered = sleep(&format!("1-1-5-{secret}"));
        let entry = dir.join(format!("1-1-{secret}"));
        crate::fsio::write_new(&entry, b"", 0o600).unwrap();
        // The environment of a process is readable once it has exec'd.
        let t0 = Instant::now();
        while tagged(|t| t.ends_with(&secret)).is_empty() && t0.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(10));
        }
        reap_orphans();
        let t0 = Instant::now();
        while alive(&mut registered) && t0.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(!alive(&mut registered), "the registered tag's process was ended");
        assert!(alive(&mut forged), "a forged tag ends nothing");
        assert!(!entry.exists(), "the dead uprun's entry is removed");
        let _ = forged.kill();
        let _ = forged.wait();
    }
}
