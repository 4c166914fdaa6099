//! Facts about this machine from procfs, sysfs and sysconf (CPUs, uname, clock ticks,
//! governors, the kernel's build-id and limits), and the few settings a run changes and
//! puts back (cpufreq governors, scheduler features, the page cache).

pub mod check;
pub mod counters;
pub mod sched_features;
pub mod settings;
pub mod system;
pub mod tuning;

use std::path::Path;

/// A file's content without surrounding white space; `None` when it cannot be read.
pub fn read_trim(path: impl AsRef<Path>) -> Option<String> {
    std::fs::read_to_string(path).ok().map(|s| s.trim().to_string())
}

/// uname(2)'s fields.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Uname {
    /// The host name.
    pub nodename: String,
    /// The kernel release, as `uname -r`.
    pub release: String,
    /// The kernel version, as `uname -v`.
    pub version: String,
    /// The architecture, as `uname -m`.
    pub machine: String,
}

/// uname(2); empty fields when it fails.
pub fn uname() -> Uname {
    // SAFETY: utsname is plain data; uname fills it and NUL-terminates each field.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    if unsafe { libc::uname(&mut u) } != 0 {
        return Uname::default();
    }
    let field = |f: &[libc::c_char]| {
        let bytes: Vec<u8> = f.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect();
        String::from_utf8_lossy(&bytes).into_owned()
    };
    Uname {
        nodename: field(&u.nodename),
        release: field(&u.release),
        version: field(&u.version),
        machine: field(&u.machine),
    }
}

/// The running kernel's release (`uname -r`).
pub fn kernel_release() -> String {
    uname().release
}

/// Clock ticks per second (`USER_HZ`, the unit of /proc/stat and /proc/PID/stat): 100
/// when sysconf does not say, as on every Linux architecture.
pub fn clock_ticks() -> f64 {
    // SAFETY: sysconf has no memory effects.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as f64
    } else {
        100.0
    }
}

/// Whether this process runs as root.
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// `/proc/sys/kernel/perf_event_paranoid`, or `unknown`.
pub fn perf_event_paranoid() -> String {
    read_trim("/proc/sys/kernel/perf_event_paranoid").unwrap_or_else(|| "unknown".into())
}

/// Online CPUs, from /sys/devices/system/cpu/online (e.g. `0-3,6`).
pub fn online_cpus() -> Vec<u32> {
    let text = read_trim("/sys/devices/system/cpu/online").unwrap_or_default();
    let parsed = parse_cpu_list(&text);
    if parsed.is_empty() {
        // SAFETY: sysconf has no memory effects.
        let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) }.max(1) as u32;
        (0..n).collect()
    } else {
        parsed
    }
}

/// Parses a kernel CPU list such as `0-3,6`.
pub fn parse_cpu_list(text: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                if let (Ok(a), Ok(b)) = (a.parse::<u32>(), b.parse::<u32>()) {
                    out.extend(a..=b);
                }
            }
            None => out.extend(part.parse::<u32>().ok()),
        }
    }
    out
}

/// The path of `cpu`'s cpufreq governor.
pub fn governor_path(cpu: u32) -> String {
    format!("/sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_governor")
}

/// The scaling governor of each online CPU that has one, as `cpuN=governor`.
pub fn governors() -> Vec<String> {
    online_cpus()
        .into_iter()
        .filter_map(|c| read_trim(governor_path(c)).map(|g| format!("cpu{c}={g}")))
        .collect()
}

/// The running kernel's build-id: the kernel's symbols read it (`symbols`), and a run
/// records it.
pub use upcmp_perf::symbols::{build_id_from_notes, running_kernel_build_id};

/// The running kernel's call-chain depth limit (`/proc/sys/kernel/perf_event_max_stack`).
pub fn kernel_max_stack() -> usize {
    read_trim("/proc/sys/kernel/perf_event_max_stack")
        .and_then(|s| s.parse().ok())
        .unwrap_or(crate::model::stacks::DEFAULT_MAX_STACK)
}

/// (pid, tid, command name) of every thread now running, from /proc.
pub fn current_comms() -> Vec<(u32, u32, String)> {
    let mut out = Vec::new();
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return out;
    };
    for p in procs.flatten() {
        let Some(pid) = p.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
            continue;
        };
        for t in tasks.flatten() {
            let Some(tid) = t.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
                continue;
            };
            if let Ok(c) = std::fs::read_to_string(t.path().join("comm")) {
                out.push((pid, tid, c.trim_end().to_string()));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists() {
        assert_eq!(parse_cpu_list("0-3,6\n"), [0, 1, 2, 3, 6]);
        assert_eq!(parse_cpu_list("0"), [0]);
        assert!(parse_cpu_list("").is_empty());
    }

    #[test]
    fn notes_dump_parsing_skips_other_notes() {
        let mut notes = Vec::new();
        let mut note = |name: &[u8], kind: u32, desc: &[u8]| {
            notes.extend((name.len() as u32).to_ne_bytes());
            notes.extend((desc.len() as u32).to_ne_bytes());
            notes.extend(kind.to_ne_bytes());
            notes.extend(name);
            notes.resize(notes.len().div_ceil(4) * 4, 0);
            notes.extend(desc);
            notes.resize(notes.len().div_ceil(4) * 4, 0);
        };
        note(b"Linux\0", 6, b"\x01\x01");
        note(b"Xen\0", 3, b"\x00\x00\x00\x01");
        note(b"GNU\0", 3, &[0xab, 0xcd, 0xef]);
        assert_eq!(build_id_from_notes(&notes), Some(vec![0xab, 0xcd, 0xef]));
        assert_eq!(build_id_from_notes(&notes[..notes.len() - 4]), None);
        assert_eq!(build_id_from_notes(&[]), None);
    }
}
