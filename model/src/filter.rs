//! Which samples a profile keeps, as `perf report` filters them: by command, process,
//! thread, CPU and processor mode. A system-wide profile otherwise puts a background
//! process's functions in the test's table.

use super::mode::Mode;
use upcmp_parsers::samples::Owner;

/// The processor modes a filter keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModeFilter {
    /// Kernel samples only (`--kernel-only`).
    Kernel,
    /// User samples only (`--user-only`).
    User,
}

/// The samples a profile keeps: a sample is kept when it passes every list given (an
/// empty list passes all) and the mode.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SampleFilter {
    /// Command names (`--comm`): the thread's name when the sample was taken.
    pub comms: Vec<String>,
    /// Process ids (`--pid`).
    pub pids: Vec<u32>,
    /// Thread ids (`--tid`).
    pub tids: Vec<u32>,
    /// CPUs (`--cpu`).
    pub cpus: Vec<u32>,
    /// Kernel or user samples only.
    pub mode: Option<ModeFilter>,
    /// The samples of the test's processes only (`--only-test`): a sample that does not
    /// say whose it is is not kept.
    pub only_test: bool,
}

impl SampleFilter {
    /// Whether the filter keeps every sample.
    pub fn is_empty(&self) -> bool {
        self.comms.is_empty()
            && self.pids.is_empty()
            && self.tids.is_empty()
            && self.cpus.is_empty()
            && self.mode.is_none()
            && !self.only_test
    }

    /// Whether a sample of `owner` is kept.
    pub fn keeps_owner(&self, owner: Option<Owner>) -> bool {
        !self.only_test || owner == Some(Owner::Test)
    }

    /// Whether the filter needs each sample's command name.
    pub fn needs_comm(&self) -> bool {
        !self.comms.is_empty()
    }

    /// Whether a sample on `cpu` of thread `tid` of process `pid`, in `mode`, whose
    /// thread was called `comm` (None: not known), is kept.
    pub fn keeps(&self, cpu: u32, pid: u32, tid: u32, mode: Mode, comm: Option<&str>) -> bool {
        let any = |list: &[u32], x: u32| list.is_empty() || list.contains(&x);
        let mode_ok = match self.mode {
            None => true,
            Some(ModeFilter::Kernel) => mode == Mode::Kernel,
            Some(ModeFilter::User) => mode == Mode::User,
        };
        mode_ok
            && any(&self.cpus, cpu)
            && any(&self.pids, pid)
            && any(&self.tids, tid)
            && (self.comms.is_empty() || comm.is_some_and(|c| self.comms.iter().any(|x| x == c)))
    }

    /// The filter as its command-line options, for the report: `--comm forkwait --cpu 1`.
    pub fn describe(&self) -> String {
        let list = |v: &[u32]| v.iter().map(u32::to_string).collect::<Vec<_>>().join(",");
        let mut parts = Vec::new();
        if !self.comms.is_empty() {
            parts.push(format!("--comm {}", self.comms.join(",")));
        }
        if !self.pids.is_empty() {
            parts.push(format!("--pid {}", list(&self.pids)));
        }
        if !self.tids.is_empty() {
            parts.push(format!("--tid {}", list(&self.tids)));
        }
        if !self.cpus.is_empty() {
            parts.push(format!("--cpu {}", list(&self.cpus)));
        }
        match self.mode {
            Some(ModeFilter::Kernel) => parts.push("--kernel-only".into()),
            Some(ModeFilter::User) => parts.push("--user-only".into()),
            None => {}
        }
        if self.only_test {
            parts.push("--only-test".into());
        }
        parts.join(" ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_list_and_the_mode_must_pass() {
        let all = SampleFilter::default();
        assert!(all.is_empty() && all.keeps(3, 10, 11, Mode::User, None));
        let f = SampleFilter {
            comms: vec!["unixperf".into()],
            cpus: vec![1],
            mode: Some(ModeFilter::Kernel),
            ..SampleFilter::default()
        };
        assert!(f.keeps(1, 10, 11, Mode::Kernel, Some("unixperf")));
        assert!(!f.keeps(0, 10, 11, Mode::Kernel, Some("unixperf")), "another CPU");
        assert!(!f.keeps(1, 10, 11, Mode::User, Some("unixperf")), "user mode");
        assert!(!f.keeps(1, 10, 11, Mode::Kernel, Some("rustc")), "another command");
        assert!(!f.keeps(1, 10, 11, Mode::Kernel, None), "an unknown command");
        assert_eq!(f.describe(), "--comm unixperf --cpu 1 --kernel-only");
        let t = SampleFilter {
            pids: vec![10],
            tids: vec![12],
            ..SampleFilter::default()
        };
        assert!(t.keeps(0, 10, 12, Mode::User, None) && !t.keeps(0, 10, 11, Mode::User, None));
        let test = SampleFilter {
            only_test: true,
            ..SampleFilter::default()
        };
        assert!(!test.is_empty() && test.keeps_owner(Some(Owner::Test)));
        assert!(
            !test.keeps_owner(Some(Owner::Other)) && !test.keeps_owner(Some(Owner::Kernel)) && !test.keeps_owner(None)
        );
        assert!(all.keeps_owner(None) && all.keeps_owner(Some(Owner::Other)));
        assert_eq!(test.describe(), "--only-test");
    }
}
