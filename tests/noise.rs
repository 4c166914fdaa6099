//! Noise you can trust: repeated runs, A/A and A/B experiments, machine preparation.

use crate::util::{perf_lock, perf_usable, run_in, stderr, stdout, tempdir};
use std::fs;
use std::path::Path;

const UPRUN: &str = env!("CARGO_BIN_EXE_uprun");
const UPCMP: &str = env!("CARGO_BIN_EXE_upcmp");

fn unixperf() -> String {
    let p = Path::new(UPRUN).with_file_name("unixperf");
    assert!(p.is_file(), "{} missing: build the workspace", p.display());
    p.display().to_string()
}

fn uprun(dir: &Path, list: &str, out: &str, extra: &[&str]) {
    fs::write(dir.join("test_list"), list).unwrap();
    let mut args = vec!["auto", out];
    args.extend_from_slice(extra);
    let o = run_in(dir, UPRUN, &args);
    assert!(o.status.success(), "uprun {args:?}: {}", stderr(&o));
}

/// The function rows of a report's CPU Time Analysis: (name, delta, verdict).
fn function_rows(report: &str) -> Vec<(String, f64, String)> {
    report
        .lines()
        .skip_while(|l| !l.starts_with("CPU Time Analysis"))
        .skip(3)
        .take_while(|l| !l.is_empty() && !l.starts_with('(') && !l.starts_with("Notes"))
        .map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            let n = w.len();
            (w[0].to_string(), w[n - 3].parse().unwrap(), w[n - 1].to_string())
        })
        .collect()
}

#[test]
fn repeated_runs_are_kept_and_compared_with_welch() {
    if !perf_usable(true) {
        return;
    }
    let _perf = perf_lock();
    let tmp = tempdir();
    let list = "getpid -loop 150000 -repeat 1\n";
    uprun(tmp.path(), list, "a", &["--runs", "3"]);
    uprun(tmp.path(), list, "b", &["--runs", "2"]);
    for k in 1..=3 {
        let d = tmp.path().join(format!("a/getpid/r{k}"));
        for f in ["prfout", "upout", "samples.gz", "status", "checks", "procstat"] {
            assert!(d.join(f).is_file(), "{}/{f}", d.display());
        }
    }
    let marker = fs::read_to_string(tmp.path().join("a/upcmp-run")).unwrap();
    assert!(marker.contains("format: 2") && marker.contains("runs: 3"), "{marker}");
    let out = run_in(tmp.path(), UPCMP, &["a", "b", "r"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report = stdout(&out);
    assert!(report.contains("Repetitions (means below)"), "{report}");
    assert!(
        report.contains("Noise: 3 and 2 repetitions; each delta is tested with Welch's t-test"),
        "{report}"
    );
    assert!(report.contains("Benchmark changes below"), "{report}");
    assert!(report.contains(" sd%"));
    let csv = fs::read_to_string(tmp.path().join("r/results.csv")).unwrap();
    assert!(
        csv.lines()
            .any(|l| l.starts_with("getpid,function,") && l.contains(",welch,")),
        "{csv}"
    );
}

#[test]
fn a_a_marks_almost_nothing_and_a_b_marks_the_injected_path() {
    if !perf_usable(true) {
        return;
    }
    let _perf = perf_lock();
    let tmp = tempdir();
    let up = unixperf();
    let base = format!("work: {up} -getpid -loop 200000 -repeat 1\n");
    // B does the same work plus stat(2) calls: the injected cost.
    let injected = format!("work: {up} -getpid -loop 200000 -repeat 1 && {up} -stat -loop 300000 -repeat 1\n");
    uprun(tmp.path(), &base, "a1", &["--runs", "4"]);
    uprun(tmp.path(), &base, "a2", &["--runs", "4"]);
    uprun(tmp.path(), &injected, "b", &["--runs", "4"]);

    let out = run_in(tmp.path(), UPCMP, &["a1", "a2", "aa"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let aa = function_rows(&stdout(&out));
    assert!(!aa.is_empty(), "{}", stdout(&out));
    let significant = aa.iter().filter(|r| r.2 == "significant").count();
    assert!(
        significant * 5 <= aa.len().max(5),
        "A/A: {significant} of {} rows significant: {aa:?}",
        aa.len()
    );

    let out = run_in(tmp.path(), UPCMP, &["a1", "b", "ab"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let ab = function_rows(&stdout(&out));
    let stat_path: Vec<_> = ab
        .iter()
        .filter(|r| r.0.contains("stat") || r.0.contains("lookup") || r.0.contains("walk_component"))
        .collect();
    assert!(
        stat_path.iter().any(|r| r.1 > 0.0 && r.2 == "significant"),
        "A/B: no significant growth on the stat path: {ab:?}"
    );
    // Every listed function of the stat path grew, and most of them significantly.
    let grown = stat_path.iter().filter(|r| r.1 > 0.0 && r.2 == "significant").count();
    assert!(
        grown * 2 >= stat_path.len(),
        "A/B: {grown} of {} stat-path rows significant: {ab:?}",
        stat_path.len()
    );

    // --hide-noise keeps only the significant rows.
    let out = run_in(tmp.path(), UPCMP, &["a1", "b", "ab2", "--hide-noise"]);
    let hidden = function_rows(&stdout(&out));
    assert!(hidden.iter().all(|r| r.2 == "significant"));
    assert_eq!(hidden.len(), ab.iter().filter(|r| r.2 == "significant").count());
}

#[test]
fn machine_preparation_that_cannot_be_done_here_says_so_before_running() {
    if !perf_usable(true) {
        return;
    }
    let _perf = perf_lock();
    let tmp = tempdir();
    fs::write(tmp.path().join("test_list"), "x: true\n").unwrap();
    if !Path::new("/sys/kernel/debug/sched/features").exists()
        && !Path::new("/sys/kernel/debug/sched_features").exists()
    {
        let o = run_in(tmp.path(), UPRUN, &["auto", "out", "--feat", "NO_TTWU_QUEUE"]);
        assert_eq!(o.status.code(), Some(2));
        assert!(stderr(&o).contains("--feat: debugfs not mounted"), "{}", stderr(&o));
        assert!(!tmp.path().join("out").exists());
    }
    if !Path::new("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor").exists() {
        let o = run_in(tmp.path(), UPRUN, &["auto", "out", "--set-governor", "performance"]);
        assert_eq!(o.status.code(), Some(2));
        assert!(stderr(&o).contains("has no cpufreq governors"), "{}", stderr(&o));
        assert!(!tmp.path().join("out").exists());
    }
    // --pre runs before each repetition, its output kept apart from the timing.
    let o = run_in(
        tmp.path(),
        UPRUN,
        &["auto", "out", "--runs", "2", "--pre", "echo prepared"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    for k in 1..=2 {
        let upout = fs::read_to_string(tmp.path().join(format!("out/x/r{k}/upout"))).unwrap();
        assert_eq!(upout, "prepared\n");
        let checks = fs::read_to_string(tmp.path().join(format!("out/x/r{k}/checks"))).unwrap();
        assert!(checks.contains("load-1min: "), "{checks}");
    }
}
