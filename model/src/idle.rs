//! The idle set: functions whose samples mean "this CPU had nothing to run".

use std::collections::HashSet;

/// Linux's idle loop and the halt/mwait/cpuidle entry points where an idle CPU's
/// samples land (x86 and arm64 names; see docs/formulas.md). The original tools
/// counted `idle` and `checkRunq`, IRIX's idle loop.
pub const DEFAULT_IDLE_FUNCTIONS: &[&str] = &[
    "do_idle",
    "cpu_startup_entry",
    "cpu_idle_poll",
    "default_idle",
    "default_idle_call",
    "arch_cpu_idle",
    "cpuidle_idle_call",
    "cpuidle_enter",
    "cpuidle_enter_state",
    "poll_idle",
    "intel_idle",
    "intel_idle_irq",
    "intel_idle_ibrs",
    "intel_idle_xstate",
    "acpi_idle_enter",
    "acpi_idle_do_entry",
    "acpi_safe_halt",
    "amd_e400_idle",
    "mwait_idle",
    "mwait_idle_with_hints",
    "native_safe_halt",
    "pv_native_safe_halt",
    "safe_halt",
    "xen_safe_halt",
    "cpu_do_idle",
    "psci_enter_idle_state",
];

/// A set of idle function names, in the order given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdleSet {
    names: Vec<String>,
    // Asked of every function of a profile: foldhash, not SipHash.
    set: HashSet<String, foldhash::fast::RandomState>,
}

impl IdleSet {
    /// The set of `names`.
    pub fn new(names: Vec<String>) -> Self {
        let set = names.iter().cloned().collect();
        IdleSet { names, set }
    }

    /// The Linux default, [`DEFAULT_IDLE_FUNCTIONS`].
    pub fn linux_default() -> Self {
        Self::new(DEFAULT_IDLE_FUNCTIONS.iter().map(|s| s.to_string()).collect())
    }

    /// Parses a comma- or space-separated list (the `--idle-symbols` option).
    pub fn parse_list(list: &str) -> Self {
        Self::new(
            list.split([',', ' '])
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect(),
        )
    }

    /// Whether `function` is idle.
    pub fn contains(&self, function: &str) -> bool {
        self.set.contains(function)
    }

    /// The names, in the order given.
    pub fn names(&self) -> &[String] {
        &self.names
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_parsing() {
        let s = IdleSet::parse_list("idle,checkRunq  x");
        assert_eq!(s.names(), ["idle", "checkRunq", "x"]);
        assert!(s.contains("checkRunq"));
        assert!(!s.contains("bcopy"));
        assert!(IdleSet::linux_default().contains("pv_native_safe_halt"));
    }
}
