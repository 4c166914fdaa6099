//! The kernel's settings that most often bias a comparison of two machines or boots,
//! beside `system`'s description: the kernel configuration, CPU vulnerability
//! mitigations, microcode, the boot command line, transparent huge pages, the cpufreq
//! driver and governor, SMT, and the scheduler and VM sysctls.

use super::read_trim;
use std::io::Read as _;
use std::path::Path;

/// `(key, value)` pairs of one file's lines `NAME=VALUE` and `# NAME is not set` (`n`),
/// keyed `config.NAME`.
pub fn parse_kernel_config(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter_map(|l| {
            if let Some(name) = l.strip_prefix("# ").and_then(|r| r.strip_suffix(" is not set")) {
                return Some((format!("config.{name}"), "n".to_string()));
            }
            let (name, value) = l.split_once('=')?;
            name.starts_with("CONFIG_")
                .then(|| (format!("config.{name}"), value.trim_matches('"').to_string()))
        })
        .collect()
}

/// The running kernel's configuration: `/proc/config.gz`, else `/boot/config-RELEASE`.
fn kernel_config(release: &str) -> Vec<(String, String)> {
    let gz = std::fs::File::open("/proc/config.gz").ok().and_then(|f| {
        let mut text = String::new();
        flate2::read::GzDecoder::new(f.take(64 << 20))
            .read_to_string(&mut text)
            .ok()
            .map(|_| text)
    });
    let text = gz.or_else(|| std::fs::read_to_string(format!("/boot/config-{release}")).ok());
    text.map(|t| parse_kernel_config(&t)).unwrap_or_default()
}

/// Each readable file of `dir` whose name `keep` accepts, as (`prefix` + name, value).
fn files_of(dir: &Path, prefix: &str, keep: impl Fn(&str) -> bool) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            if !keep(&name) {
                return None;
            }
            let value = read_trim(e.path())?;
            Some((format!("{prefix}{name}"), value))
        })
        .collect();
    out.sort();
    out
}

/// The settings of this machine now, sorted by key; a value's white space runs are one
/// space. What cannot be read is left out.
pub fn kernel_settings(release: &str) -> Vec<(String, String)> {
    let mut out = kernel_config(release);
    out.extend(files_of(
        Path::new("/sys/devices/system/cpu/vulnerabilities"),
        "vulnerability.",
        |_| true,
    ));
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    if let Some(m) = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("microcode").and_then(|r| r.split_once(':')))
    {
        out.push(("microcode".into(), m.1.trim().to_string()));
    }
    let one = |key: &str, path: &str| read_trim(path).map(|v| (key.to_string(), v));
    out.extend(one("cmdline", "/proc/cmdline"));
    out.extend(one("thp.enabled", "/sys/kernel/mm/transparent_hugepage/enabled"));
    out.extend(one("thp.defrag", "/sys/kernel/mm/transparent_hugepage/defrag"));
    out.extend(one(
        "cpufreq.driver",
        "/sys/devices/system/cpu/cpu0/cpufreq/scaling_driver",
    ));
    out.extend(one(
        "cpufreq.governor",
        "/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor",
    ));
    out.extend(one("smt.control", "/sys/devices/system/cpu/smt/control"));
    out.extend(one("smt.active", "/sys/devices/system/cpu/smt/active"));
    out.extend(files_of(Path::new("/proc/sys/kernel"), "sysctl.kernel.", |n| {
        n.starts_with("sched_") || n == "numa_balancing"
    }));
    out.extend(files_of(Path::new("/proc/sys/vm"), "sysctl.vm.", |_| true));
    for (_, v) in &mut out {
        *v = v.split_whitespace().collect::<Vec<_>>().join(" ");
    }
    out.sort();
    out.dedup_by(|a, b| a.0 == b.0);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_lines() {
        let c = parse_kernel_config("#\n# comment\nCONFIG_A=y\n# CONFIG_B is not set\nCONFIG_C=\"x y\"\nX=1\n");
        assert_eq!(
            c,
            [
                ("config.CONFIG_A".to_string(), "y".to_string()),
                ("config.CONFIG_B".into(), "n".into()),
                ("config.CONFIG_C".into(), "x y".into())
            ]
        );
    }
}
