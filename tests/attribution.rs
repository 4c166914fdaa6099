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

/// Test `test`'s entry in a results.json.
fn test_json(results: &Path, test: &str) -> serde_json::Value {
    let json: serde_json::Value = serde_json::from_str(&fs::read_to_string(results).unwrap()).unwrap();
    json["tests"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == test)
        .unwrap_or_else(|| panic!("no test {test}"))
        .clone()
}

/// The owners of test `test` in a results.json: (run1, run2).
fn owners(results: &Path, test: &str) -> (serde_json::Value, serde_json::Value) {
    let t = test_json(results, test);
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

/// The function rows of test `test` in a results.json: (name, run1, run2), absent as 0.
fn function_rows(results: &Path, test: &str) -> Vec<(String, f64, f64)> {
    let t = test_json(results, test);
    t["outcome"]["profile"]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let v = |k: &str| r[k].as_f64().unwrap_or(0.0);
            (r["function"].as_str().unwrap().to_string(), v("run1"), v("run2"))
        })
        .collect()
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

    // Issue 31: the spinner's user time is a row of its own, out of the test's, both
    // sides split alike; every user row together is all the user time there was.
    let rows = function_rows(&dir.join("cmp/results.json"), "probe");
    let row = |name: &str| rows.iter().find(|r| r.0 == name).cloned();
    let (_, s1, s2) = row("user [upcmpbusy]").unwrap_or_else(|| panic!("no spinner row: {rows:?}"));
    assert!(
        s1 == 0.0 && s2 > 0.5 * got && s2 <= got + 0.0015,
        "spinner row {s1} -> {s2}, spinner {got}"
    );
    let (_, t1, t2) = row("user (the test)").unwrap_or_else(|| panic!("no test row: {rows:?}"));
    assert!(t1 < 0.5 && t2 < 0.5, "the probe sleeps: {t1} {t2}");
    assert!(row("user").is_none(), "the one user row is split: {rows:?}");
    let user_time = |o: &serde_json::Value| -> f64 {
        o["user_by_command"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e[1].as_f64().unwrap())
            .sum()
    };
    let split: f64 = rows.iter().filter(|r| r.0.starts_with("user ")).map(|r| r.2).sum();
    assert!(
        (split - user_time(&o2)).abs() < 1e-6 * split.max(1.0),
        "{split} vs {o2}"
    );
    assert!(
        report.lines().any(|l| l.trim_start().starts_with("user [upcmpbusy] ")),
        "the text report's row: {report}"
    );
    // The page: the summary lines, the note, and the toggle to the test's share alone.
    if let Some(browser) = crate::html::browser() {
        page_views(browser, &dir.join("cmp/results.html"), dir);
    }

    // --only-test: the spinner (and every other process) is gone.
    let out = upcmp(dir, &["quiet", "busy", "only", "--only-test"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let only = stdout(&out);
    assert_eq!(summary_line(&only, "other processes"), (0.0, 0.0), "{only}");
    let cpu = |report: &str| summary_line(report, "CPU time");
    assert_eq!(cpu(&only), summary_line(&only, "the test's processes"), "{only}");
    assert!(cpu(&only).1 < cpu(&report).1, "{only}");
    assert!(
        !only.contains("user:upcmpbusy") && !only.contains("user [") && only.contains("--only-test"),
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

/// The page of the busy comparison as a reader sees it in each view: the whole system's
/// (the spinner's row, the summary's lines, the note naming it) and the test's alone
/// (none of the spinner's time); a screenshot of each is left in `dir`.
fn page_views(browser: &str, page: &Path, dir: &Path) {
    let r = crate::html::open(browser, page);
    crate::html::assert_no_errors(&r);
    let views = r.selftest["views"]
        .as_array()
        .unwrap_or_else(|| panic!("no views: {}", r.selftest));
    let view = |name: &str| {
        views
            .iter()
            .find(|v| v["view"] == name)
            .unwrap_or_else(|| panic!("{name}"))
    };
    // The probe's section text and table rows in a view.
    let probe = |v: &serde_json::Value| -> (String, Vec<String>) {
        let texts = v["text"].as_array().unwrap();
        let at = texts
            .iter()
            .position(|t| t.as_str().unwrap().starts_with("probe"))
            .unwrap();
        let rows = v["tables"][at]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|row| row[0].as_str().map(str::to_string))
            .collect();
        (texts[at].as_str().unwrap().to_string(), rows)
    };
    let (text, rows) = probe(view("system"));
    assert_eq!(view("system")["pressed"], "Whole system");
    assert!(rows.iter().any(|n| n == "user [upcmpbusy]"), "{rows:?}");
    assert!(rows.iter().any(|n| n == "user (the test)"), "{rows:?}");
    let line = |text: &str, name: &str| -> Vec<f64> {
        let l = text
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("no line {name}: {text}"));
        l[name.len()..]
            .split_whitespace()
            .take(2)
            .map(|x| x.parse().unwrap())
            .collect()
    };
    let others = line(&text, "other processes");
    assert!(others[1] > 0.2, "the spinner is other processes' time: {text}");
    assert!(line(&text, "the test's processes")[1] < 0.5, "{text}");
    assert!(
        text.contains("NOTE: other processes than the test's held more than 5%") && text.contains("upcmpbusy "),
        "the note on busy processes: {text}"
    );
    let (text, rows) = probe(view("test"));
    assert_eq!(view("test")["pressed"], "The test's processes only");
    assert!(!rows.iter().any(|n| n.starts_with("user [")), "{rows:?}");
    assert_eq!(line(&text, "other processes"), [0.0, 0.0], "{text}");
    // (uprun's own check of busy processes, a note of the test, may name it in both.)
    assert!(!text.contains("other processes than the test's held"), "{text}");
    let cpu = line(&text, "CPU time");
    assert_eq!(cpu, line(&text, "the test's processes"), "{text}");
    for (view, hash) in [("system", ""), ("test", "#view=test")] {
        let png = dir.join(format!("page-{view}.png"));
        let profile = crate::util::tempdir();
        let url = format!("file://{}{hash}", page.canonicalize().unwrap().display());
        let o = Command::new(browser)
            .args(crate::html::headless_args(profile.path()))
            .args(["--window-size=1300,2400", "--virtual-time-budget=10000"])
            .arg(format!("--screenshot={}", png.display()))
            .arg(&url)
            .output()
            .unwrap();
        assert!(png.is_file(), "no screenshot: {}", String::from_utf8_lossy(&o.stderr));
        if let Ok(keep) = std::env::var("UPCMP_KEEP_SCREENSHOTS") {
            fs::copy(&png, Path::new(&keep).join(format!("attribution-{view}.png"))).unwrap();
        }
    }
}
