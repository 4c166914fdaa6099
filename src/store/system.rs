//! `OUTDIR/system`: a description of the machine, written at the start of a run.

use std::fmt::Write as _;
use std::path::Path;

fn read_trim(path: &str) -> Option<String> {
    std::fs::read_to_string(path).ok().map(|s| s.trim().to_string())
}

fn uname() -> (String, String, String, String) {
    // SAFETY: utsname is plain data; uname fills it and NUL-terminates each field.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    if unsafe { libc::uname(&mut u) } != 0 {
        return Default::default();
    }
    let field = |f: &[libc::c_char]| {
        let bytes: Vec<u8> = f.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect();
        String::from_utf8_lossy(&bytes).into_owned()
    };
    (
        field(&u.nodename),
        field(&u.release),
        field(&u.version),
        field(&u.machine),
    )
}

/// The running kernel's release (`uname -r`).
pub fn kernel_release() -> String {
    uname().1
}

/// The GNU build-id of the running kernel (from /sys/kernel/notes), as hex.
pub fn kernel_build_id_hex() -> Option<String> {
    crate::collect::symbols::running_kernel_build_id().map(|b| b.iter().map(|x| format!("{x:02x}")).collect())
}

fn meminfo(field: &str) -> Option<String> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    text.lines()
        .find(|l| l.starts_with(field))
        .map(|l| l[field.len()..].trim().to_string())
}

fn distribution() -> Option<String> {
    let text = std::fs::read_to_string("/etc/os-release").ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("PRETTY_NAME="))
        .map(|v| v.trim_matches('"').to_string())
}

fn cpu_model() -> Option<String> {
    let text = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    text.lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
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

/// The scaling governor of each online CPU that has one, as `cpuN=governor`.
pub fn governors() -> Vec<String> {
    online_cpus()
        .into_iter()
        .filter_map(|c| {
            read_trim(&format!("/sys/devices/system/cpu/cpu{c}/cpufreq/scaling_governor"))
                .map(|g| format!("cpu{c}={g}"))
        })
        .collect()
}

/// What the sampler was set to, for the description.
#[derive(Debug, Clone)]
pub struct SamplingDescription {
    /// The event, e.g. `cpu-clock`.
    pub event: String,
    /// Samples per second per CPU.
    pub frequency_hz: u64,
}

/// Describes this machine as `key: value` lines (`docs/format.md` lists the keys).
pub fn describe(sampling: &SamplingDescription) -> String {
    let (host, release, version, machine) = uname();
    let cpus = online_cpus();
    let mut s = String::new();
    let mut kv = |k: &str, v: Option<String>| {
        let _ = writeln!(s, "{k}: {}", v.unwrap_or_else(|| "unknown".into()));
    };
    kv("date", Some(super::now_utc()));
    kv("host", Some(host));
    kv("kernel-release", Some(release));
    kv("kernel-version", Some(version));
    kv("architecture", Some(machine));
    kv("distribution", distribution());
    kv("cpus-online", Some(cpus.len().to_string()));
    kv("cpu-list", read_trim("/sys/devices/system/cpu/online"));
    kv("cpu-model", cpu_model());
    kv("mem-total", meminfo("MemTotal:"));
    kv("mem-free", meminfo("MemFree:"));
    kv(
        "uptime-sec",
        read_trim("/proc/uptime").and_then(|u| u.split_whitespace().next().map(str::to_string)),
    );
    kv("load-average", read_trim("/proc/loadavg"));
    let g = governors();
    kv(
        "cpufreq-governors",
        Some(if g.is_empty() {
            "none (no cpufreq)".into()
        } else {
            g.join(" ")
        }),
    );
    kv("kernel-cmdline", read_trim("/proc/cmdline"));
    kv("kernel-build-id", kernel_build_id_hex());
    kv("perf-event-paranoid", read_trim("/proc/sys/kernel/perf_event_paranoid"));
    kv("sampling-event", Some(sampling.event.clone()));
    kv("sampling-frequency-hz", Some(sampling.frequency_hz.to_string()));
    kv("tool-version", Some(format!("upcmp {}", crate::TOOL_VERSION)));
    s
}

/// Writes `dir/system`.
pub fn write(dir: &Path, sampling: &SamplingDescription) -> Result<(), super::StoreError> {
    super::write_atomic(&dir.join("system"), describe(sampling).as_bytes())
}

/// The keys whose difference between two runs can bias a comparison.
pub const BIASING_KEYS: &[&str] = &[
    "kernel-release",
    "kernel-version",
    "kernel-build-id",
    "cpus-online",
    "cpu-model",
    "mem-total",
    "cpufreq-governors",
    "kernel-cmdline",
    "sampling-event",
    "sampling-frequency-hz",
];

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
    fn describes_this_machine() {
        let d = describe(&SamplingDescription {
            event: "cpu-clock".into(),
            frequency_hz: 1000,
        });
        let kv = upcmp_parsers::keyvalue::parse_key_values(&d, "system").unwrap();
        assert_eq!(
            kv.get("cpus-online").unwrap().parse::<usize>().unwrap(),
            online_cpus().len()
        );
        assert!(kv.get("kernel-release").unwrap().len() > 2);
        assert_eq!(kv.get("sampling-frequency-hz"), Some("1000"));
    }
}
