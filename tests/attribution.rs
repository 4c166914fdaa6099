//! Issue 31: whose the time is. A busy process started beside uprun (outside the test's
//! cgroup) is counted as "other processes", within 10% of what the kernel charged it over
//! the same interval; `upcmp --only-test` leaves it out; and the benchmark's verdict is
//! the same with and without it.

use crate::util::{perf_usable, run_in, stderr, stdout, tempdir};
use std::fs;
use std::path::Path;
use std::process::{Child, Command, Stdio};

const UPRUN: &str = env!("CARGO_BIN_EXE_uprun");
const UPCMP: &str = env!("CARGO_BIN_EXE_upcmp");

/// A benchmark, and a probe that sleeps 2 s between two reads of the busy process's stat
/// line (the pid in ./busy.pid; `self` on the quiet runs): the same commands on every run.
const LIST: &str = "getpid -loop 300000 -repeat 1\n\
                    probe: p=$(cat busy.pid); cat /proc/$p/stat >> busy.stat; sleep 2; cat /proc/$p/stat >> busy.stat\n";

/// The spinner beside the benchmark, killed however the test ends.
struct Busy(Child);

impl Drop for Busy {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn run(dir: &Path, name: &str) {
    let out = run_in(dir, UPRUN, &["auto", name, "--runs", "2"]);
    assert!(out.status.success(), "uprun {name}: {}", stderr(&out));
}

/// utime + stime (seconds) of each stat line, in order.
fn charged(stat: &str) -> Vec<f64> {
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    stat.lines()
        .map(|l| {
            let f: Vec<&str> = l.rsplit_once(") ").unwrap().1.split_whitespace().collect();
            (f[11].parse::<f64>().unwrap() + f[12].parse::<f64>().unwrap()) / hz
        })
        .collect()
}

/// The owners of test `test` in a results.json: (run1, run2).
fn owners(results: &Path, test: &str) -> (serde_json::Value, serde_json::Value) {
    let json: serde_json::Value = serde_json::from_str(&fs::read_to_string(results).unwrap()).unwrap();
    let t = json["tests"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == test)
        .unwrap_or_else(|| panic!("no test {test}"));
    let o = &t["outcome"]["profile"]["owners"];
    assert!(o.is_object(), "no owners for {test}");
    (o["run1"].clone(), o["run2"].clone())
}

/// The values of the Profiling Summary line `name` of the probe's section: (run 1, run 2).
fn summary_line(report: &str, name: &str) -> (f64, f64) {
    let section = report
        .split("probe results")
        .nth(1)
        .unwrap_or_else(|| panic!("{report}"));
    let line = section
        .lines()
        .find(|l| l.trim_start().starts_with(name))
        .unwrap_or_else(|| panic!("no line {name}: {section}"));
    let v: Vec<f64> = line[line.find(name).unwrap() + name.len()..]
        .split_whitespace()
        .take(2)
        .map(|x| x.parse().unwrap())
        .collect();
    (v[0], v[1])
}

fn upcmp(dir: &Path, args: &[&str]) -> std::process::Output {
    run_in(dir, UPCMP, args)
}

#[test]
fn a_busy_process_beside_the_test_is_other_processes_time() {
    if !perf_usable(true) {
        return;
    }
    let _perf = crate::util::perf_lock();
    let tmp = tempdir();
    let dir = tmp.path();
    fs::write(dir.join("test_list"), LIST).unwrap();
    fs::copy("/bin/sh", dir.join("upcmpbusy")).unwrap();
    fs::write(dir.join("busy.pid"), "self").unwrap();
    run(dir, "base");
    run(dir, "quiet");
    let busy = Busy(
        Command::new(dir.join("upcmpbusy"))
            .args(["-c", "while :; do :; done"])
            .stdin(Stdio::null())
            .spawn()
            .unwrap(),
    );
    fs::write(dir.join("busy.pid"), busy.0.id().to_string()).unwrap();
    let _ = fs::remove_file(dir.join("busy.stat"));
    run(dir, "busy");
    drop(busy);

    // The busy process's CPU time over each repetition of the probe, as the kernel
    // charged it; their mean is what the profile's mean should hold.
    let c = charged(&fs::read_to_string(dir.join("busy.stat")).unwrap());
    assert_eq!(c.len(), 4, "two reads in each of two repetitions");
    let expect = ((c[1] - c[0]) + (c[3] - c[2])) / 2.0;
    assert!(expect > 0.2, "the spinner ran {expect} s in 2 s");

    let out = upcmp(dir, &["quiet", "busy", "cmp"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report = stdout(&out);
    let (o1, o2) = owners(&dir.join("cmp/results.json"), "probe");
    let spinner = |o: &serde_json::Value| -> f64 {
        o["other_by_command"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e[0] == "upcmpbusy")
            .map(|e| e[1].as_f64().unwrap())
            .sum()
    };
    let got = spinner(&o2);
    assert!(
        (got - expect).abs() <= 0.1 * expect,
        "the spinner sampled {got:.3} s, charged {expect:.3} s"
    );
    assert_eq!(spinner(&o1), 0.0, "no spinner on the quiet side: {o1}");
    // The Profiling Summary's line holds it, and whatever else ran on the machine (on a
    // saturated machine the spinner takes its time from the others: no rise is asked).
    let (other1, other2) = summary_line(&report, "other processes");
    assert!(other2 >= got - 0.0015, "{other1} -> {other2}, spinner {got}");
    eprintln!("spinner: sampled {got:.3} s, charged {expect:.3} s; other processes {other1:.3} -> {other2:.3} s");
    let (test1, test2) = summary_line(&report, "the test's processes");
    assert!(test1 < 0.5 && test2 < 0.5, "the probe sleeps: {test1} {test2}");
    // Over 5% of the CPU time: the note names it.
    assert!(
        report.contains("upcmp --only-test") && report.contains("upcmpbusy "),
        "{report}"
    );

    // --only-test: the spinner (and every other process) is gone.
    let out = upcmp(dir, &["quiet", "busy", "only", "--only-test"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let only = stdout(&out);
    assert_eq!(summary_line(&only, "other processes"), (0.0, 0.0), "{only}");
    let cpu = |report: &str| summary_line(report, "CPU time");
    assert_eq!(cpu(&only), summary_line(&only, "the test's processes"), "{only}");
    assert!(cpu(&only).1 < cpu(&report).1, "{only}");
    assert!(
        !only.contains("user:upcmpbusy") && only.contains("--only-test"),
        "{only}"
    );

    // The benchmark's verdict is the same beside the spinner as without it.
    let verdict = |run: &str| {
        let out = upcmp(dir, &["base", run, &format!("v-{run}"), "-q", "--fail-if-worse", "50"]);
        let code = out.status.code();
        assert!(matches!(code, Some(0) | Some(1)), "{run}: {code:?} {}", stderr(&out));
        code
    };
    assert_eq!(verdict("quiet"), verdict("busy"));
}
