//! `TEST/profile.folded` (`uprun --export-folded`): a flat profile as folded stacks, for
//! tools that read them (inferno, FlameGraph, speedscope): one line per function,
//! `[module;]function COUNT`, each name escaped as in `stacks.folded`
//! (`upcmp_parsers::folded::escape_frame`).

use crate::model::profile::module;
use crate::model::Profile;
use std::io::{self, Write};

/// The file written next to `prfout` when asked for.
pub const PROFILE_FOLDED: &str = "profile.folded";

/// Writes every function of `p` (idle ones too: the reader decides) as a one- or
/// two-frame stack: kernel modules and hypervisor/guest time under their module's
/// frame, the rest on their own. Counts are the function's weight over all CPUs in
/// samples of the profile's period: its samples when the period is fixed.
pub fn write_profile(p: &Profile, out: &mut dyn Write) -> io::Result<()> {
    for f in &p.functions {
        let name = upcmp_parsers::folded::escape_frame(&f.name);
        let count = (f.weight() as f64 / p.period).round() as u64;
        match f.module.as_str() {
            module::KERNEL | module::USER => writeln!(out, "{name} {count}")?,
            m => writeln!(out, "[{m}];{name} {count}")?,
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::FunctionSamples;

    #[test]
    fn one_line_per_function_readable_as_folded() {
        let f = |m: &str, n: &str, c: Vec<u64>| FunctionSamples {
            module: m.into(),
            name: n.into(),
            weight_per_cpu: c.iter().map(|n| n * 1_000_000).collect(),
            weight_sq: c.iter().sum::<u64>() as f64 * 1e12,
            per_cpu: c,
        };
        let p = Profile {
            test: "t".into(),
            command: None,
            event: "cpu-clock".into(),
            unit: crate::model::profile::Unit::Nanoseconds,
            period: 1e6,
            wall_sec: 1.0,
            idle_set: vec![],
            cpus: vec![],
            warnings: vec![],
            functions: vec![
                f("kernel", "do_syscall_64", vec![3, 4]),
                f("ext4", "ext4_find_entry", vec![1, 0]),
                f("user", "user:a;b", vec![2, 2]),
            ],
        };
        let mut out = Vec::new();
        write_profile(&p, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(text, "do_syscall_64 7\n[ext4];ext4_find_entry 1\nuser:a\\x3bb 4\n");
        let mut total = 0;
        upcmp_parsers::folded::for_each_stack(text.as_bytes(), "x", |s| total += s.count).unwrap();
        assert_eq!(total, 12);
    }
}
