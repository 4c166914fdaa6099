//! The processor mode of a sample, as perf reports it: in a record's `misc` field and, in
//! a call chain, as context markers between the frames of different modes.

use std::collections::HashMap;
pub use upcmp_parsers::samples::{Mode, Record};

/// `PERF_RECORD_MISC_CPUMODE_MASK`: the bits of a record's `misc` that hold its mode.
const CPUMODE_MASK: u16 = 7;
const MISC_KERNEL: u16 = 1;
const MISC_USER: u16 = 2;
const MISC_HYPERVISOR: u16 = 3;
const MISC_GUEST_KERNEL: u16 = 4;
const MISC_GUEST_USER: u16 = 5;

/// The mode in a perf record's `misc` field.
pub fn mode_of_misc(misc: u16) -> Mode {
    match misc & CPUMODE_MASK {
        MISC_KERNEL => Mode::Kernel,
        MISC_USER => Mode::User,
        MISC_HYPERVISOR => Mode::Hypervisor,
        MISC_GUEST_KERNEL => Mode::GuestKernel,
        MISC_GUEST_USER => Mode::GuestUser,
        _ => Mode::Unknown,
    }
}

/// perf's context markers are the call-chain values at or above this (`PERF_CONTEXT_MAX`,
/// -4095 as u64); they say which mode the following frames were taken in.
pub const PERF_CONTEXT_MAX: u64 = -4095i64 as u64;
/// The frames after it are the hypervisor's.
pub const PERF_CONTEXT_HV: u64 = -32i64 as u64;
/// The frames after it are the kernel's.
pub const PERF_CONTEXT_KERNEL: u64 = -128i64 as u64;
/// The frames after it are user space's.
pub const PERF_CONTEXT_USER: u64 = -512i64 as u64;
/// The frames after it are a guest kernel's.
pub const PERF_CONTEXT_GUEST_KERNEL: u64 = -2176i64 as u64;
/// The frames after it are a guest's user space.
pub const PERF_CONTEXT_GUEST_USER: u64 = -2560i64 as u64;

/// The mode the call-chain frames after the context `marker` (a value at or above
/// [`PERF_CONTEXT_MAX`]) were taken in. A value that is no context the kernel writes, a
/// junk value from a user stack walked without frame pointers, leaves `current`.
pub fn context_mode(marker: u64, current: Mode) -> Mode {
    match marker {
        PERF_CONTEXT_KERNEL => Mode::Kernel,
        PERF_CONTEXT_USER => Mode::User,
        PERF_CONTEXT_HV => Mode::Hypervisor,
        PERF_CONTEXT_GUEST_KERNEL => Mode::GuestKernel,
        PERF_CONTEXT_GUEST_USER => Mode::GuestUser,
        _ => current,
    }
}

/// Whether `ip` is in the upper half of a 64-bit address space, where Linux maps itself
/// on x86_64 and arm64: how a sample of unknown mode is placed.
pub fn is_kernel_address(ip: u64) -> bool {
    ip >> 63 == 1
}

/// The command name of every thread, followed through a record stream: a `Comm` names a
/// thread from then on, and a new thread has its parent's name until it sets its own.
#[derive(Debug, Clone, Default)]
pub struct ThreadNames {
    // Asked per sample: foldhash, not SipHash.
    comms: HashMap<u32, String, foldhash::fast::RandomState>,
}

impl ThreadNames {
    /// Takes the `Comm` and `Fork` records; others are ignored.
    pub fn observe(&mut self, r: &Record) {
        match r {
            Record::Comm { tid, comm, .. } => {
                self.comms.insert(*tid, comm.clone());
            }
            Record::Fork { tid, ptid, .. } => {
                if let Some(c) = self.comms.get(ptid).cloned() {
                    self.comms.insert(*tid, c);
                }
            }
            _ => {}
        }
    }

    /// The command of `tid`, when known.
    pub fn get(&self, tid: u32) -> Option<&str> {
        self.comms.get(&tid).map(String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_of_misc_and_markers() {
        assert_eq!(mode_of_misc(0x4001), Mode::Kernel);
        assert_eq!(mode_of_misc(2), Mode::User);
        assert_eq!(mode_of_misc(0), Mode::Unknown);
        assert_eq!(context_mode(PERF_CONTEXT_USER, Mode::Kernel), Mode::User);
        assert_eq!(context_mode(u64::MAX, Mode::Kernel), Mode::Kernel);
        assert!(is_kernel_address(0xffffffff81000000) && !is_kernel_address(0x400000));
    }

    #[test]
    fn a_child_is_named_after_its_parent_until_it_execs() {
        let mut t = ThreadNames::default();
        t.observe(&Record::Comm {
            pid: 1,
            tid: 1,
            comm: "sh".into(),
        });
        t.observe(&Record::Fork {
            pid: 2,
            ppid: 1,
            tid: 2,
            ptid: 1,
        });
        assert_eq!(t.get(2), Some("sh"));
        t.observe(&Record::Comm {
            pid: 2,
            tid: 2,
            comm: "ls".into(),
        });
        assert_eq!((t.get(1), t.get(2), t.get(3)), (Some("sh"), Some("ls"), None));
    }
}
