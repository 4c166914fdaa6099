//! The workloads, one module per kind of kernel work.

pub mod files;
pub mod ipc;
pub mod memory;
pub mod procs;
pub mod sched;
pub mod syscalls;
