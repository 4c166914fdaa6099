//! A description of this machine: what `OUTDIR/system` records (docs/format.md).

use super::{governors, online_cpus, read_trim, running_kernel_build_id, uname};
use crate::model::to_hex;

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

/// The value written for a fact that cannot be read.
pub const UNKNOWN_VALUE: &str = "unknown";

/// This machine as `(key, value)` pairs, in the order `system` lists them; `date` is the
/// caller's (the run's start).
pub fn describe(date: String) -> Vec<(&'static str, String)> {
    let u = uname();
    let g = governors();
    let facts: Vec<(&'static str, Option<String>)> = vec![
        ("date", Some(date)),
        ("host", Some(u.nodename)),
        ("kernel-release", Some(u.release)),
        ("kernel-version", Some(u.version)),
        ("architecture", Some(u.machine)),
        ("distribution", distribution()),
        ("cpus-online", Some(online_cpus().len().to_string())),
        ("cpu-list", read_trim("/sys/devices/system/cpu/online")),
        ("cpu-model", cpu_model()),
        ("mem-total", meminfo("MemTotal:")),
        ("mem-free", meminfo("MemFree:")),
        (
            "uptime-sec",
            read_trim("/proc/uptime").and_then(|u| u.split_whitespace().next().map(str::to_string)),
        ),
        ("load-average", read_trim("/proc/loadavg")),
        (
            "cpufreq-governors",
            Some(if g.is_empty() {
                "none (no cpufreq)".into()
            } else {
                g.join(" ")
            }),
        ),
        ("kernel-cmdline", read_trim("/proc/cmdline")),
        ("kernel-build-id", running_kernel_build_id().map(|b| to_hex(&b))),
        ("perf-event-paranoid", read_trim("/proc/sys/kernel/perf_event_paranoid")),
    ];
    facts
        .into_iter()
        .map(|(k, v)| (k, v.unwrap_or_else(|| UNKNOWN_VALUE.into())))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn describes_this_machine() {
        let d = describe("2026-01-01T00:00:00Z".into());
        let get = |k: &str| d.iter().find(|(key, _)| *key == k).map(|(_, v)| v.as_str());
        assert_eq!(
            get("cpus-online").unwrap().parse::<usize>().unwrap(),
            online_cpus().len()
        );
        assert!(get("kernel-release").unwrap().len() > 2);
        assert_eq!(get("date"), Some("2026-01-01T00:00:00Z"));
    }
}
