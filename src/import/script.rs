//! `perf script` text → [`Profile`](crate::Profile): each sample counts for its innermost frame, named as
//! perf named it, under the module of its DSO.

use super::{is_time_event, module_of_dso, test_name, Counts, ImportError, ImportOptions, Imported, StackCollector};
use crate::collect::profile::ProfileMeta;
use std::io::BufRead;
use std::path::Path;
use upcmp_parsers::perf_script::{for_each_sample, Chain};

/// Reads perf script output from `input` (named `name` in errors).
pub fn read(input: impl BufRead, name: &str, path: &Path, opts: &ImportOptions) -> Result<Imported, ImportError> {
    let mut counts = Counts::default();
    let mut stacks = StackCollector::new(opts.stacks);
    let chain = if stacks.wanted() { Chain::Full } else { Chain::Leaf };
    let mut event: Option<String> = None;
    let (mut other_events, mut first, mut last) = (0u64, u64::MAX, 0u64);
    let (mut period_sum, mut with_period, mut max_cpu) = (0u128, 0u64, None::<u32>);
    let mut no_ip = 0u64;
    for_each_sample(input, name, chain, |s| {
        // One event per profile: the first one seen; other events' samples are left out.
        match (&event, s.event) {
            (None, Some(e)) => event = Some(e.to_string()),
            (Some(e), Some(x)) if e != x => {
                other_events += 1;
                return;
            }
            _ => {}
        }
        if let Some(t) = s.time_ns {
            first = first.min(t);
            last = last.max(t);
        }
        if let Some(p) = s.period {
            period_sum += u128::from(p);
            with_period += 1;
        }
        let cpu = s.cpu.unwrap_or(0);
        max_cpu = max_cpu.max(s.cpu);
        match s.leaf() {
            Some(f) => {
                let name = f.symbol.unwrap_or("[unknown]");
                counts.add(cpu, module_of_dso(f.dso, f.ip), name, 1);
                let frames = s.frames.iter().rev().map(|f| f.symbol.unwrap_or("[unknown]"));
                stacks.add(Some(s.comm), frames, 1);
            }
            None => {
                no_ip += 1;
                counts.add(cpu, "user", "[no ip]", 1);
            }
        }
    })?;
    let samples = counts.samples();
    if samples == 0 {
        return Err(ImportError::NoSamples {
            path: path.to_path_buf(),
            hint: " (is this the output of `perf script`?)",
        });
    }
    // CPUs with no sample (a CPU that never ran, or was never sampled) still count.
    for c in 0..=max_cpu.unwrap_or(0) {
        counts.ensure_cpu(c);
    }
    let cpus = counts.cpu_count() as f64;
    let event = event.unwrap_or_else(|| "cpu-clock".to_string());
    let mut warnings = Vec::new();
    if other_events > 0 {
        warnings.push(format!(
            "{other_events} samples of events other than {event} are left out (select one with perf script --event)"
        ));
    }
    if no_ip > 0 {
        warnings.push(format!(
            "{no_ip} samples had no address or symbol (add -F ip,sym,dso to perf script)"
        ));
    }
    let range_sec = if first <= last {
        (last - first) as f64 * 1e-9
    } else {
        0.0
    };
    let period_sec = match opts.period_sec {
        Some(p) => p,
        None if with_period > 0 && is_time_event(&event) => period_sum as f64 / with_period as f64 * 1e-9,
        None if range_sec > 0.0 => {
            warnings.push(format!(
                "{event} samples carry no time period: one sample is taken as the time range x CPUs / samples"
            ));
            range_sec * cpus / samples as f64
        }
        None => {
            warnings.push("no sample times or periods: one sample is taken as 1 ms (--period-sec to change)".into());
            0.001
        }
    };
    let wall_sec = if first <= last {
        range_sec + period_sec
    } else {
        samples as f64 * period_sec / cpus
    };
    Ok(Imported {
        stacks: stacks.finish(),
        profile: counts.finish(
            ProfileMeta {
                test: test_name(path),
                command: None,
                event,
                period_sec,
                wall_sec,
            },
            warnings,
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_leaves_and_derives_time() {
        let text = "perf 1 [000] 10.000000: 250000 cpu-clock: \n\
                    \tffffffff81000000 do_syscall_64+0x1 ([kernel.kallsyms])\n\
                    \t 2724a main+0x7a (/usr/bin/dd)\n\
                    \n\
                    swapper 0 [001] 10.000250: 250000 cpu-clock: \n\
                    \tffffffff82000000 default_idle+0xb ([kernel.kallsyms])\n\
                    \n\
                    dd 7 [001] 10.000500: 250000 cpu-clock: \n\
                    \t 2724a memcpy (/usr/lib/libc.so.6)\n\
                    \n\
                    dd 7 [003] 10.000750: 1 page-faults: \n\
                    \t 2724a memcpy (/usr/lib/libc.so.6)\n\
                    \n";
        let p = read(
            text.as_bytes(),
            "s",
            Path::new("a/script.txt"),
            &ImportOptions::default(),
        )
        .unwrap()
        .profile;
        assert_eq!(p.test, "script.txt");
        assert_eq!(p.event, "cpu-clock");
        assert!((p.period_sec - 0.00025).abs() < 1e-15);
        assert!((p.wall_sec - 0.00075).abs() < 1e-12, "{}", p.wall_sec);
        assert_eq!(p.cpus.len(), 2, "the page-fault sample's CPU is not counted");
        let names: Vec<(&str, &str, u64)> = p
            .functions
            .iter()
            .map(|f| (f.module.as_str(), f.name.as_str(), f.total()))
            .collect();
        assert_eq!(
            names,
            [
                ("kernel", "default_idle", 1),
                ("kernel", "do_syscall_64", 1),
                ("libc.so.6", "memcpy", 1)
            ]
        );
        assert!(p.warnings[0].starts_with("1 samples of events other than cpu-clock"));
    }

    #[test]
    fn empty_input_is_an_error() {
        let e = read(&b"\n"[..], "s", Path::new("e.txt"), &ImportOptions::default()).unwrap_err();
        assert!(e.to_string().contains("no samples"), "{e}");
    }
}
