//! The list of tests: name on the command line, description in the report, how to set up.
//!
//! Descriptions are the original unixperf's wherever the test does the same operation, so
//! old and new reports line up by description; where Linux does the operation differently
//! (the vDSO), the description says so.

use crate::bench::files::{Chmod, CreateRemove, Entry, OpenClose, Stat, StatDir, WriteLog};
use crate::bench::ipc::{Channel, PingPong, Select};
use crate::bench::memory::{Align, Bcopy, Bzero, DevZero, EmptyLoop, MmapMegFile, PageFault, MEGABYTE};
use crate::bench::procs::{ForkExec, ForkWait, PopenEcho};
use crate::bench::sched::{Hackbench, SchedYield};
use crate::bench::syscalls::{Clock, EzSyscalls, GetPid, ReadClock, Sleep1, Via};
use crate::sys::Result;
use crate::workload::{Ctx, Workload};

/// Sets up a workload.
type Make = fn(&Ctx) -> Result<Box<dyn Workload>>;

/// One test of the suite.
pub struct TestDef {
    /// The name, given on the command line as `-name`.
    pub name: &'static str,
    /// What one operation is, as printed after each result (see [`TestDef::describe`]).
    pub description: &'static str,
    /// Part of `-all`.
    pub standard: bool,
    make: Make,
}

impl std::fmt::Debug for TestDef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "-{}", self.name)
    }
}

impl TestDef {
    /// The description in the report; hackbench's names its parameters.
    pub fn describe(&self, ctx: &Ctx) -> String {
        if self.name == "hackbench" {
            ctx.hackbench.describe()
        } else {
            self.description.to_string()
        }
    }

    /// Sets up the workload (outside any timing).
    pub fn make(&self, ctx: &Ctx) -> Result<Box<dyn Workload>> {
        (self.make)(ctx)
    }
}

fn boxed<W: Workload + 'static>(w: W) -> Result<Box<dyn Workload>> {
    Ok(Box::new(w))
}

macro_rules! test {
    ($name:literal, $desc:expr, $std:literal, $make:expr) => {
        TestDef {
            name: $name,
            description: $desc,
            standard: $std,
            make: $make,
        }
    };
}

/// Every test, in the order `-all` and `-list` use.
pub static TESTS: &[TestDef] = &[
    // Processes.
    test!("forkwait", "fork, child immediately exits, parent waits", true, |_| {
        boxed(ForkWait::default())
    }),
    test!(
        "forkexec",
        "fork, child execs /bin/true, parent waits",
        true,
        |_| boxed(ForkExec::new("/bin/true")?)
    ),
    test!("popenecho", "popen and read from \"/bin/echo hello\"", true, |_| boxed(
        PopenEcho::new()?
    )),
    // System calls.
    test!("getpid", "getpid system call", true, |_| boxed(GetPid::new(Via::Libc))),
    test!(
        "getpidraw",
        "getpid system call via syscall(SYS_getpid), without the libc wrapper",
        true,
        |_| { boxed(GetPid::new(Via::Raw)) }
    ),
    test!(
        "ezsyscalls",
        "easy system calls, ie. dup/close/getpid/getuid/umask",
        true,
        |_| boxed(EzSyscalls::new()?)
    ),
    test!(
        "gettimeofday",
        "gettimeofday library call (vDSO, no system call on Linux)",
        true,
        |_| { boxed(ReadClock::new(Clock::GetTimeOfDay, Via::Libc)) }
    ),
    test!(
        "gettimeofdayraw",
        "gettimeofday system call via syscall(SYS_gettimeofday), bypassing the vDSO",
        true,
        |_| { boxed(ReadClock::new(Clock::GetTimeOfDay, Via::Raw)) }
    ),
    test!(
        "clockgettime",
        "clock_gettime(CLOCK_MONOTONIC) library call (vDSO, no system call on Linux)",
        true,
        |_| { boxed(ReadClock::new(Clock::Monotonic, Via::Libc)) }
    ),
    test!(
        "clockgettimeraw",
        "clock_gettime(CLOCK_MONOTONIC) system call via syscall(SYS_clock_gettime), bypassing the vDSO",
        true,
        |_| boxed(ReadClock::new(Clock::Monotonic, Via::Raw))
    ),
    test!("schedyield", "sched_yield system call", true, |_| boxed(
        SchedYield::default()
    )),
    test!(
        "sleep1",
        "sleep for one second (validates test time)",
        false,
        |_| boxed(Sleep1::default())
    ),
    // Inter-process communication.
    test!(
        "pipeping1",
        "1 byte token passing between two processes using two pipes",
        true,
        |_| { boxed(PingPong::new(Channel::Pipes, 1, false)?) }
    ),
    test!(
        "pipeping1k",
        "1 kilobyte token passing between two processes using two pipes",
        true,
        |_| { boxed(PingPong::new(Channel::Pipes, 1024, false)?) }
    ),
    test!(
        "unixping",
        "1 byte token passing between two processes using a Unix socketpair",
        true,
        |_| { boxed(PingPong::new(Channel::UnixSocket, 1, false)?) }
    ),
    test!(
        "tcpecho",
        "1 byte echoed by another process over one loopback TCP connection (127.0.0.1)",
        true,
        |_| { boxed(PingPong::new(Channel::Tcp, 1, false)?) }
    ),
    test!("select0", "select on no fds with no timeout", true, |_| boxed(
        Select::new(0, 0)?
    )),
    test!(
        "select16r",
        "select on 16 pipe read fds with immediate timeout",
        true,
        |_| boxed(Select::new(16, 0)?)
    ),
    test!(
        "select32r",
        "select on 32 pipe read fds with immediate timeout",
        true,
        |_| boxed(Select::new(32, 0)?)
    ),
    test!(
        "select16w",
        "select on 16 pipe write fds with immediate timeout",
        true,
        |_| boxed(Select::new(0, 16)?)
    ),
    test!(
        "select32w",
        "select on 32 pipe write fds with immediate timeout",
        true,
        |_| boxed(Select::new(0, 32)?)
    ),
    test!(
        "select64rw",
        "select on 64 pipe read & 64 pipe write fds with immediate timeout",
        true,
        |_| { boxed(Select::new(64, 64)?) }
    ),
    // Files.
    test!("writelog", "write 80 bytes to a log file", true, |c| boxed(
        WriteLog::new(&c.dir)?
    )),
    test!(
        "createunlink",
        "per-file cost of creating 100 files then unlinking them all",
        true,
        |c| { boxed(CreateRemove::new(&c.dir, Entry::File)?) }
    ),
    test!(
        "openclose",
        "per-file cost of open and immediate close of 100 files",
        true,
        |c| { boxed(OpenClose::new(&c.dir)?) }
    ),
    test!(
        "chmod",
        "per-chmod cost of chmod permissions toggle of 100 files",
        true,
        |c| boxed(Chmod::new(&c.dir)?)
    ),
    test!("stat", "cost of stat'ing current dir", true, |c| boxed(
        Stat::current_dir(&c.dir)?
    )),
    test!("statlong", "cost of stat'ing 5 component path", true, |c| boxed(
        Stat::long_path(&c.dir)?
    )),
    test!("statdir", "open directory and stat 100 files in it", true, |c| boxed(
        StatDir::new(&c.dir)?
    )),
    test!(
        "mkdirrmdir",
        "per-dir cost of making 100 dirs then rmdiring them all",
        true,
        |c| { boxed(CreateRemove::new(&c.dir, Entry::Dir)?) }
    ),
    // Memory.
    test!("devzeromap", "mmap megabyte /dev/zero region", true, |_| boxed(
        DevZero::new(false)?
    )),
    test!(
        "devzerowalk",
        "touch newly mmaped megabyte /dev/zero region at every 1024 bytes",
        true,
        |_| { boxed(DevZero::new(true)?) }
    ),
    test!(
        "mmapmegfile",
        "copy every byte of newly mmaped megabyte file",
        true,
        |c| boxed(MmapMegFile::new(&c.dir)?)
    ),
    test!(
        "pagefault",
        "page fault on first write to a page of fresh anonymous memory",
        true,
        |_| { boxed(PageFault::new()) }
    ),
    test!("bcopy256", "bcopy of 256 bytes", true, |_| boxed(Bcopy::new(
        256,
        Align::Plain
    ))),
    test!("bcopy16k", "bcopy of 16 kilobytes", true, |_| boxed(Bcopy::new(
        16 << 10,
        Align::Plain
    ))),
    test!("bcopy100k", "bcopy of 100 kilobytes", true, |_| boxed(Bcopy::new(
        100 << 10,
        Align::Plain
    ))),
    test!("bcopy1meg", "bcopy of 1 megabyte", true, |_| boxed(Bcopy::new(
        MEGABYTE,
        Align::Plain
    ))),
    test!("bcopy10meg", "bcopy of 10 megabytes", true, |_| boxed(Bcopy::new(
        10 * MEGABYTE,
        Align::Plain
    ))),
    test!("bcopy10mega", "bcopy of 10 megabytes (cacheline-aligned)", true, |_| {
        boxed(Bcopy::new(10 * MEGABYTE, Align::CacheLine))
    }),
    test!("bcopy10megu", "bcopy of 10 megabytes (word mis-aligned)", true, |_| {
        boxed(Bcopy::new(10 * MEGABYTE, Align::WordMisaligned))
    }),
    test!(
        "bcopy10megudw",
        "bcopy of 10 megabytes (dword mis-aligned)",
        true,
        |_| { boxed(Bcopy::new(10 * MEGABYTE, Align::DwordMisaligned)) }
    ),
    test!("bzero256", "bzero of 256 bytes", true, |_| boxed(Bzero::new(
        256,
        Align::Plain
    ))),
    test!("bzero16k", "bzero of 16 kilobytes", true, |_| boxed(Bzero::new(
        16 << 10,
        Align::Plain
    ))),
    test!("bzero100k", "bzero of 100 kilobytes", true, |_| boxed(Bzero::new(
        100 << 10,
        Align::Plain
    ))),
    test!("bzero1meg", "bzero of 1 megabyte", true, |_| boxed(Bzero::new(
        MEGABYTE,
        Align::Plain
    ))),
    test!("bzero10meg", "bzero of 10 megabytes", true, |_| boxed(Bzero::new(
        10 * MEGABYTE,
        Align::Plain
    ))),
    test!("bzero10mega", "bzero of 10 megabytes (cacheline-aligned)", true, |_| {
        boxed(Bzero::new(10 * MEGABYTE, Align::CacheLine))
    }),
    test!("bzero10megu", "bzero of 10 megabytes (word mis-aligned)", true, |_| {
        boxed(Bzero::new(10 * MEGABYTE, Align::WordMisaligned))
    }),
    test!(
        "bzero10megudw",
        "bzero of 10 megabytes (dword mis-aligned)",
        true,
        |_| { boxed(Bzero::new(10 * MEGABYTE, Align::DwordMisaligned)) }
    ),
    // Scheduler.
    test!(
        "hackbench",
        "hackbench (see -groups, -fds, -msgs, -datasize, -threads, -pipe)",
        true,
        |c| { boxed(Hackbench::new(&c.hackbench)?) }
    ),
    test!(
        "ctxswitch",
        "1 byte token passing between two processes pinned to one CPU using two pipes",
        true,
        |_| { boxed(PingPong::new(Channel::Pipes, 1, true)?) }
    ),
    // The harness itself.
    test!(
        "emptyloop",
        "empty loop iteration (the harness's own cost per operation)",
        false,
        |_| { boxed(EmptyLoop::default()) }
    ),
];

/// Names that stand for several tests, as the original's aliases did.
pub static ALIASES: &[(&str, &[&str])] = &[
    (
        "bcopy",
        &[
            "bcopy256",
            "bcopy16k",
            "bcopy100k",
            "bcopy1meg",
            "bcopy10meg",
            "bcopy10mega",
            "bcopy10megu",
            "bcopy10megudw",
        ],
    ),
    (
        "bzero",
        &[
            "bzero256",
            "bzero16k",
            "bzero100k",
            "bzero1meg",
            "bzero10meg",
            "bzero10mega",
            "bzero10megu",
            "bzero10megudw",
        ],
    ),
    (
        "select",
        &[
            "select0",
            "select16r",
            "select32r",
            "select16w",
            "select32w",
            "select64rw",
        ],
    ),
    ("pipeping", &["pipeping1", "pipeping1k"]),
    ("devzero", &["devzeromap", "devzerowalk"]),
    (
        "clock",
        &["gettimeofday", "gettimeofdayraw", "clockgettime", "clockgettimeraw"],
    ),
];

/// The test called `name` (without the dash).
pub fn find(name: &str) -> Option<&'static TestDef> {
    TESTS.iter().find(|t| t.name == name)
}

/// The tests `name` stands for: one test, or an alias's tests.
pub fn resolve(name: &str) -> Option<Vec<&'static TestDef>> {
    if let Some(t) = find(name) {
        return Some(vec![t]);
    }
    let (_, names) = ALIASES.iter().find(|(alias, _)| *alias == name)?;
    Some(names.iter().map(|n| find(n).expect("alias of a known test")).collect())
}

/// The tests of `-all`.
pub fn standard() -> Vec<&'static TestDef> {
    TESTS.iter().filter(|t| t.standard).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_descriptions_are_unique_and_colon_free() {
        let mut names: Vec<_> = TESTS.iter().map(|t| t.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), TESTS.len());
        let mut descs: Vec<_> = TESTS.iter().map(|t| t.description).collect();
        descs.sort_unstable();
        descs.dedup();
        assert_eq!(descs.len(), TESTS.len());
        for t in TESTS {
            // The x11perf-style parsers split a result line at its first "): ".
            assert!(!t.description.contains("): "), "{}", t.name);
            assert_eq!(t.description.trim(), t.description, "{}", t.name);
        }
    }

    #[test]
    fn original_descriptions_are_kept_where_the_test_is_the_same() {
        let want = [
            ("forkwait", "fork, child immediately exits, parent waits"),
            ("popenecho", "popen and read from \"/bin/echo hello\""),
            ("getpid", "getpid system call"),
            (
                "pipeping1",
                "1 byte token passing between two processes using two pipes",
            ),
            (
                "select64rw",
                "select on 64 pipe read & 64 pipe write fds with immediate timeout",
            ),
            ("writelog", "write 80 bytes to a log file"),
        ];
        for (name, desc) in want {
            assert_eq!(find(name).unwrap().description, desc);
        }
        // And they are the descriptions of the 1997 reports.
        let report = include_str!("../../testdata/unixperf/zap.62patched.n32");
        for t in [
            "forkwait",
            "popenecho",
            "ezsyscalls",
            "select16w",
            "statlong",
            "bzero10megudw",
            "mmapmegfile",
        ] {
            let line = format!("): {}\n", find(t).unwrap().description);
            assert!(report.contains(&line), "{t}");
        }
    }

    #[test]
    fn every_test_sets_up_runs_and_cleans_up() {
        let dir = std::env::temp_dir().join(format!("unixperf-unit-{}-suite", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut ctx = Ctx::new(&dir);
        ctx.hackbench = crate::workload::HackbenchConfig {
            groups: 1,
            fds: 2,
            messages: 3,
            ..Default::default()
        };
        for t in TESTS.iter().filter(|t| t.name != "sleep1") {
            let mut w = t.make(&ctx).unwrap_or_else(|e| panic!("{}: {e}", t.name));
            w.run(3).unwrap_or_else(|e| panic!("{}: {e}", t.name));
            w.run(2).unwrap_or_else(|e| panic!("{}: {e}", t.name));
            w.finish().unwrap_or_else(|e| panic!("{}: {e}", t.name));
            assert_eq!(w.own_seconds().is_some(), t.name == "hackbench", "{}", t.name);
        }
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0, "files left behind");
        std::fs::remove_dir(&dir).unwrap();
    }

    #[test]
    fn aliases_resolve_to_known_tests() {
        assert_eq!(resolve("select").unwrap().len(), 6);
        assert_eq!(resolve("forkwait").unwrap()[0].name, "forkwait");
        assert!(resolve("nosuchtest").is_none());
        // No alias may hide behind an option of the same name.
        for (alias, _) in ALIASES {
            let parsed = crate::options::parse(&[format!("-{alias}")]).unwrap();
            assert!(!parsed.tests.is_empty(), "-{alias}");
        }
        assert!(standard().iter().all(|t| t.name != "sleep1"));
    }
}
