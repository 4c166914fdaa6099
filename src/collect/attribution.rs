//! Whose each sample is: the test's processes, the kernel's own work, or another
//! process's (docs/uprun.md, "Whose time"). The sampler tells the test's cgroup from the
//! others by each sample's cgroup id; without one (an old kernel, or no cgroup for the
//! test) the test is its copies and every process they fork, followed through the fork
//! records in time order. Pid 0 (idle, and the interrupts and softirqs taken there) and
//! kernel threads (kworkers, ksoftirqd: the kernel-thread flag) are the kernel's.

use crate::model::mode::Record;
use std::collections::{HashMap, HashSet};
use upcmp_parsers::samples::{Owner, Sample};

/// `PF_KTHREAD` in the flags of /proc/PID/stat.
const PF_KTHREAD: u64 = 0x0020_0000;
/// kthreadd: every kernel thread is its child.
const KTHREADD: u32 = 2;

/// Attributes the samples of one test.
#[derive(Debug, Default)]
pub struct Attribution {
    /// The test's processes, for samples without a cgroup id.
    tree: HashSet<u32>,
    /// Whether a pid is a kernel thread, asked once.
    kernel_threads: HashMap<u32, bool>,
}

/// Whether `pid` is a kernel thread now (false when it has ended).
fn is_kernel_thread(pid: u32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    // The command may hold blanks and parentheses: the fields follow the last ')'.
    let flags = stat
        .rsplit_once(')')
        .and_then(|(_, rest)| rest.split_whitespace().nth(6))
        .and_then(|f| f.parse::<u64>().ok());
    flags.is_some_and(|f| f & PF_KTHREAD != 0)
}

impl Attribution {
    /// The test's first processes (its copies).
    pub fn add_roots(&mut self, pids: impl IntoIterator<Item = u32>) {
        self.tree.extend(pids);
    }

    /// Follows a fork: a child of the test's is the test's, a child of kthreadd a kernel
    /// thread.
    pub fn observe(&mut self, r: &Record) {
        if let Record::Fork { pid, ppid, .. } = *r {
            if self.tree.contains(&ppid) {
                self.tree.insert(pid);
            }
            if ppid == KTHREADD {
                self.kernel_threads.insert(pid, true);
            }
        }
    }

    /// Sets whose `s` is, from its cgroup's verdict (the sampler's) or its pid.
    pub fn settle(&mut self, s: &mut Sample) {
        let test = match s.owner {
            Some(o) => o == Owner::Test,
            None => self.tree.contains(&s.pid),
        };
        s.owner = Some(if s.pid == 0 {
            Owner::Kernel
        } else if test {
            Owner::Test
        } else if *self
            .kernel_threads
            .entry(s.pid)
            .or_insert_with(|| is_kernel_thread(s.pid))
        {
            Owner::Kernel
        } else {
            Owner::Other
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::mode::Mode;

    fn sample(pid: u32, owner: Option<Owner>) -> Sample {
        Sample {
            time_ns: 0,
            cpu: 0,
            pid,
            tid: pid,
            mode: Mode::Kernel,
            period: Some(1),
            pc: 0,
            callchain: vec![],
            owner,
        }
    }

    fn settled(a: &mut Attribution, pid: u32, owner: Option<Owner>) -> Option<Owner> {
        let mut s = sample(pid, owner);
        a.settle(&mut s);
        s.owner
    }

    #[test]
    fn the_cgroup_decides_else_the_process_tree() {
        let mut a = Attribution::default();
        a.add_roots([std::process::id()]);
        let me = std::process::id();
        // No cgroup id: this process is a root of the tree, its children follow it.
        assert_eq!(settled(&mut a, me, None), Some(Owner::Test));
        assert_eq!(settled(&mut a, 4_000_001, None), Some(Owner::Other));
        a.observe(&Record::Fork {
            pid: 4_000_001,
            ppid: me,
            tid: 4_000_001,
            ptid: me,
        });
        assert_eq!(settled(&mut a, 4_000_001, None), Some(Owner::Test));
        // A cgroup id's verdict stands over the tree.
        assert_eq!(settled(&mut a, me, Some(Owner::Other)), Some(Owner::Other));
        assert_eq!(settled(&mut a, 4_000_002, Some(Owner::Test)), Some(Owner::Test));
        // Pid 0, kthreadd and its children are the kernel's, whatever their cgroup.
        assert_eq!(settled(&mut a, 0, Some(Owner::Other)), Some(Owner::Kernel));
        assert_eq!(settled(&mut a, KTHREADD, Some(Owner::Other)), Some(Owner::Kernel));
        a.observe(&Record::Fork {
            pid: 4_000_003,
            ppid: KTHREADD,
            tid: 4_000_003,
            ptid: KTHREADD,
        });
        assert_eq!(settled(&mut a, 4_000_003, Some(Owner::Other)), Some(Owner::Kernel));
    }
}
