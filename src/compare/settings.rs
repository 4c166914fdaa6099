//! The differences of two runs' kernel settings (`OUTDIR/settings`): what the System
//! section lists beside the system description's.

use super::runs::SystemDifference;

/// The settings that differ, by key: a key one run lacks is `absent` there.
pub fn setting_differences(s1: &[(String, String)], s2: &[(String, String)]) -> Vec<SystemDifference> {
    let mut keys: Vec<&str> = s1.iter().chain(s2).map(|(k, _)| k.as_str()).collect();
    keys.sort_unstable();
    keys.dedup();
    let get = |s: &[(String, String)], k: &str| {
        s.iter()
            .find(|(x, _)| x == k)
            .map_or("absent".to_string(), |(_, v)| v.clone())
    };
    let (m1, m2): (std::collections::HashMap<_, _>, std::collections::HashMap<_, _>) = (
        s1.iter().map(|(k, v)| (k.as_str(), v)).collect(),
        s2.iter().map(|(k, v)| (k.as_str(), v)).collect(),
    );
    keys.into_iter()
        .filter(|k| m1.get(k) != m2.get(k))
        .map(|k| SystemDifference {
            key: k.to_string(),
            run1: get(s1, k),
            run2: get(s2, k),
        })
        .collect()
}

/// Whether a setting is of the kernel configuration (`config.CONFIG_X`).
pub fn is_config(d: &SystemDifference) -> bool {
    d.key.starts_with("config.")
}

/// The line of a setting's difference: `CONFIG_X: y -> n`, `sysctl.vm.swappiness: 60 -> 10`.
pub fn difference_line(d: &SystemDifference) -> String {
    let key = d.key.strip_prefix("config.").unwrap_or(&d.key);
    format!("{key}: {} -> {}", d.run1, d.run2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn differences_by_key() {
        let s = |v: &[(&str, &str)]| {
            v.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<Vec<_>>()
        };
        let d = setting_differences(
            &s(&[("config.CONFIG_A", "y"), ("config.CONFIG_B", "y"), ("microcode", "0x1")]),
            &s(&[("config.CONFIG_A", "n"), ("microcode", "0x1"), ("thp.enabled", "never")]),
        );
        let lines: Vec<String> = d.iter().map(difference_line).collect();
        assert_eq!(
            lines,
            [
                "CONFIG_A: y -> n",
                "CONFIG_B: y -> absent",
                "thp.enabled: absent -> never"
            ]
        );
    }
}
