//! Samples weighted by their period: the path of an event that is not time (cycles on a
//! machine with a PMU, driven here by injected records), uprun sampling another event
//! live (page-faults, whose periods vary in frequency mode), and runs in unlike units.

use crate::util::{perf_lock, perf_usable, run_in, stderr, stdout, tempdir};
use std::fs;
use std::path::Path;
use upcmp::compare::{compare_profiles, Basis, CompareOptions};
use upcmp::model::mode::{Mode, Record};
use upcmp::model::profile::{ProfileMeta, Unit};
use upcmp::model::{IdleSet, KernelResolver, RecordProfiler, UserBy};
use upcmp::store::prfout;
use upcmp_parsers::samples::Sample;

const UPRUN: &str = env!("CARGO_BIN_EXE_uprun");
const UPCMP: &str = env!("CARGO_BIN_EXE_upcmp");
const PRFCMP: &str = env!("CARGO_BIN_EXE_prfcmp");

/// Kernel functions `a` (0x1000..0x2000), `b` (0x2000..0x3000) and the idle loop.
struct Kernel;

impl KernelResolver for Kernel {
    fn resolve_kernel(&self, pc: u64) -> Option<(&str, Option<&str>)> {
        match pc {
            0x1000..=0x1fff => Some(("a", None)),
            0x2000..=0x2fff => Some(("b", None)),
            0x3000..=0x3fff => Some(("do_idle", None)),
            _ => None,
        }
    }
}

fn sample(cpu: u32, pc: u64, period: u64) -> Record {
    Record::Sample(Sample {
        time_ns: 0,
        cpu,
        pid: 1,
        tid: 1,
        mode: Mode::Kernel,
        period: Some(period),
        pc,
        callchain: vec![],
        owner: None,
    })
}

/// What a cycles run on a machine with a PMU records: samples of varying period (the
/// kernel's frequency mode) on two CPUs, and /proc/stat's busy time of each.
#[test]
fn cycles_are_weighed_by_their_period_and_timed_by_each_cpus_busy_time() {
    let mut b = RecordProfiler::new(&Kernel, &[0, 1], UserBy::Single, 1);
    // CPU 0: a 3 samples of 1M, 2M, 3M cycles; b 1 sample of 2M; idle 1 of 1M.
    // CPU 1: a 1 sample of 4M; b 2 samples of 2M and 6M.
    for r in [
        sample(0, 0x1000, 1_000_000),
        sample(0, 0x1010, 2_000_000),
        sample(0, 0x1020, 3_000_000),
        sample(0, 0x2000, 2_000_000),
        sample(0, 0x3000, 1_000_000),
        sample(1, 0x1000, 4_000_000),
        sample(1, 0x2000, 2_000_000),
        sample(1, 0x2010, 6_000_000),
    ] {
        b.add(&r);
    }
    let meta = ProfileMeta {
        test: "t".into(),
        command: None,
        event: "cycles".into(),
        unit: Unit::Events,
        period: None,
        wall_sec: 1.0,
    };
    let idle = IdleSet::new(vec!["do_idle".into()]);
    let mut p = b.finish(meta, &idle, vec![]);
    p.cpus[0].procstat_busy_sec = Some(0.8);
    p.cpus[1].procstat_busy_sec = Some(0.6);
    // Through the store and back: prfout keeps every weight.
    let dir = tempdir();
    let path = dir.path().join("prfout");
    prfout::write_file(&p, &path).unwrap();
    let text = fs::read_to_string(&path).unwrap();
    assert!(text.contains("unit events\n") && text.contains(" weight "), "{text}");
    let back = prfout::read(&path).unwrap();
    assert_eq!(back, p);

    // Seconds of a function on a CPU = its share of that CPU's busy cycles (outside idle
    // functions) x that CPU's busy time (docs/formulas.md):
    // a = 6/8 x 0.8 + 4/12 x 0.6 = 0.8 s; b = 2/8 x 0.8 + 8/12 x 0.6 = 0.6 s.
    let c = compare_profiles(&back, &back, &CompareOptions::new(0.0, None));
    assert_eq!(c.measure.basis, Basis::BusyTime);
    assert_eq!(c.measure.unit, "sec");
    let row = |n: &str| c.rows.iter().find(|r| r.function == n).unwrap();
    assert!((row("a").run1.unwrap() - 0.8).abs() < 1e-12);
    assert!((row("b").run1.unwrap() - 0.6).abs() < 1e-12);
    assert!((c.run1.cpu - 1.4).abs() < 1e-12, "all of /proc/stat's busy time");
    // Counted once per sample, a would hold 4 of 7 busy samples; weighed, 10 of 24 Mcycles.
    assert!((row("a").run1_pct_of_cpu - 100.0 * 0.8 / 1.4).abs() < 1e-9);
}

/// A profile of `event` in its own unit, without /proc/stat: what an import of another
/// event gives.
fn counts_profile(event: &str, unit: Unit, weights: [u64; 2]) -> upcmp::model::Profile {
    let mut b = RecordProfiler::new(&Kernel, &[0], UserBy::Single, 1);
    b.add(&sample(0, 0x1000, weights[0]));
    b.add(&sample(0, 0x2000, weights[1]));
    let meta = ProfileMeta {
        test: "t".into(),
        command: None,
        event: event.into(),
        unit,
        period: None,
        wall_sec: 1.0,
    };
    b.finish(meta, &IdleSet::new(vec![]), vec![])
}

#[test]
fn recordings_of_other_events_are_reported_in_their_unit_and_unlike_units_as_shares() {
    let dir = tempdir();
    let write = |name: &str, p: &upcmp::model::Profile| {
        let path = dir.path().join(name);
        prfout::write_file(p, &path).unwrap();
        path.display().to_string()
    };
    let f1 = write(
        "faults1",
        &counts_profile("page-faults", Unit::Events, [30_000, 10_000]),
    );
    let f2 = write(
        "faults2",
        &counts_profile("page-faults", Unit::Events, [30_000, 20_000]),
    );
    let o = run_in(dir.path(), PRFCMP, &[&f1, &f2]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.contains("(kpage-faults)"), "the unit in the column heads: {text}");
    assert!(
        text.contains("Values are counts of page-faults in kpage-faults"),
        "{text}"
    );
    assert!(!text.contains("Idle time calculated"), "{text}");
    // b: 10 -> 20 kpage-faults.
    assert!(
        text.lines()
            .any(|l| l.starts_with("b ") && l.contains("10.000") && l.contains("20.000")),
        "{text}"
    );

    // Time against counts: no common unit, so shares, a warning and no ratio of values.
    let clock = write(
        "clock",
        &counts_profile("cpu-clock", Unit::Nanoseconds, [1_000_000, 1_000_000]),
    );
    let o = run_in(dir.path(), PRFCMP, &[&clock, &f1, "--format", "json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["measure"]["basis"], "share");
    assert!(
        v["warnings"][0].as_str().unwrap().contains("different units"),
        "{}",
        v["warnings"]
    );
    let o = run_in(dir.path(), PRFCMP, &[&clock, &f1]);
    let text = stdout(&o);
    assert!(
        text.lines()
            .any(|l| l.starts_with("Other functions") && l.trim_end().ends_with('-')),
        "{text}"
    );
}

fn uprun(dir: &Path, out: &str, event: &str) {
    let o = run_in(dir, UPRUN, &["auto", out, "--event", event, "--freq", "2000"]);
    assert!(o.status.success(), "uprun --event {event}: {}", stderr(&o));
}

/// page-faults in frequency mode is this machine's event whose periods vary, as cycles'
/// do on bare metal: the live path of an event that is not time.
#[test]
fn uprun_samples_another_event_and_times_it_by_proc_stat() {
    if !perf_usable(true) {
        return;
    }
    let _perf = perf_lock();
    let dir = tempdir();
    let unixperf = Path::new(UPRUN).with_file_name("unixperf");
    fs::write(
        dir.path().join("test_list"),
        format!("faults: {} -pagefault -time 0.5 -repeat 2\n", unixperf.display()),
    )
    .unwrap();
    uprun(dir.path(), "a", "page-faults");
    let system = fs::read_to_string(dir.path().join("a/system")).unwrap();
    assert!(system.contains("sampling-event: page-faults\n"), "{system}");
    let p = prfout::read(&dir.path().join("a/faults/prfout")).unwrap();
    assert_eq!((p.event.as_str(), p.unit), ("page-faults", Unit::Events));
    assert!(p.cpus.iter().all(|c| c.procstat_busy_sec.is_some()));
    assert!(!p.fixed_period(), "frequency mode: the periods vary");
    let faulting = p.functions.iter().map(|f| f.weight()).sum::<u64>();
    assert!(faulting > 10_000, "too few faults counted: {faulting}");

    // Compared with a cpu-clock run of the same test: both in time, with a warning.
    uprun(dir.path(), "b", "cpu-clock");
    let o = run_in(dir.path(), UPCMP, &["a", "b", "r"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let report = stdout(&o);
    assert!(report.contains("sampled different events"), "{report}");
    assert!(report.contains("the runs differ in sampling-event: 'page-faults' vs 'cpu-clock'"));
    let json: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(dir.path().join("r/results.json")).unwrap()).unwrap();
    let profile = &json["tests"][0]["outcome"]["profile"];
    assert_eq!(profile["measure"]["basis"], "busy_time");
    // Run 1's CPU time is /proc/stat's busy time of the CPUs where faults were sampled.
    let busy: f64 = p
        .cpus
        .iter()
        .filter(|c| c.weight > 0)
        .filter_map(|c| c.procstat_busy_sec)
        .sum();
    let cpu = profile["run1"]["cpu"].as_f64().unwrap();
    assert!((cpu - busy).abs() < 1e-6, "{cpu} vs {busy}");
}
