//! Folded stacks → [`Profile`](crate::Profile): each line's count goes to its innermost frame.
//!
//! Folded stacks carry no CPU, module or time: the profile has one CPU, a period of
//! [`ImportOptions::period_sec`] (1 ms when not given), and a wall time of samples ×
//! period, so its idle time is what its idle functions hold. A frame with inferno's
//! `_[k]` annotation is kernel code; others are counted under the module `user`.

use super::{test_name, ImportError, ImportOptions, Imported, StackCollector, DEFAULT_PERIOD_SEC};
use crate::model::profile::{module, Unit};
use crate::model::{IdleSet, ProfileBuilder, ProfileMeta};
use std::io::BufRead;
use std::path::Path;
use upcmp_parsers::folded::for_each_stack;

/// Splits inferno's annotations off a frame: `do_idle_[k]` → (`kernel`, `do_idle`).
pub fn annotated(frame: &str) -> (&'static str, &str) {
    if let Some(f) = frame.strip_suffix("_[k]") {
        (module::KERNEL, f)
    } else if let Some(f) = frame.strip_suffix("_[j]").or_else(|| frame.strip_suffix("_[i]")) {
        (module::USER, f)
    } else {
        (module::USER, frame)
    }
}

/// Reads folded stacks from `input` (named `name` in errors).
pub fn read(input: impl BufRead, name: &str, path: &Path, opts: &ImportOptions) -> Result<Imported, ImportError> {
    let mut counts = ProfileBuilder::new();
    let mut stacks = StackCollector::new(opts.stacks);
    for_each_stack(input, name, |s| {
        let (module, f) = annotated(s.leaf());
        counts.add(0, module, f, s.count, s.count, s.count as f64);
        // The stacks already start at the command (as folded by stackcollapse-perf).
        stacks.add(None, s.frames().map(|f| annotated(f).1), s.count, s.count);
    })?;
    let samples = counts.samples();
    if samples == 0 {
        return Err(ImportError::NoSamples {
            path: path.to_path_buf(),
            hint: " (every count is zero, or the input is empty)",
        });
    }
    let period_sec = opts.period_sec.unwrap_or(DEFAULT_PERIOD_SEC);
    let warnings = vec![format!(
        "folded stacks carry no time or CPU: one CPU, {} ms per sample, elapsed = samples x period",
        period_sec * 1e3
    )];
    let period = period_sec * 1e9;
    counts.weigh_by_count(period);
    let meta = ProfileMeta {
        test: test_name(path),
        command: None,
        event: "folded".into(),
        unit: Unit::Nanoseconds,
        period: Some(period),
        wall_sec: samples as f64 * period_sec,
    };
    Ok(Imported {
        profile: counts.finish(meta, &IdleSet::linux_default(), warnings),
        stacks: stacks.finish(),
        annotated: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leaves_and_annotations() {
        let text = "dd;main;write_[k];vfs_write_[k] 30\nswapper;do_idle_[k] 60\ndd;main 10\nx;vfs_write_[k] 5\n";
        let opts = ImportOptions::new(None, None, None, Some(0.01));
        let p = read(text.as_bytes(), "f", Path::new("f.folded"), &opts)
            .unwrap()
            .profile;
        let rows: Vec<(&str, &str, u64)> = p
            .functions
            .iter()
            .map(|f| (f.module.as_str(), f.name.as_str(), f.total()))
            .collect();
        assert_eq!(
            rows,
            [
                ("kernel", "do_idle", 60),
                ("kernel", "vfs_write", 35),
                ("user", "main", 10)
            ]
        );
        assert!((p.wall_sec - 1.05).abs() < 1e-12);
        assert_eq!(p.cpus.len(), 1);
    }
}
