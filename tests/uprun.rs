//! uprun for real (perf_event on every CPU), then upcmp on its runs.

use crate::util::{perf_usable, run_in, stderr, stdout, tempdir};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use upcmp::compare::ProfileSummary;
use upcmp::model::IdleSet;
use upcmp::store::outdir::{RunMarker, Status, TestStatus};
use upcmp::store::prfout;

const UPRUN: &str = env!("CARGO_BIN_EXE_uprun");
const UPCMP: &str = env!("CARGO_BIN_EXE_upcmp");

/// uprun finds unixperf next to itself; the workspace build puts it there.
fn unixperf_built() -> bool {
    let p = Path::new(UPRUN).with_file_name("unixperf");
    assert!(
        p.is_file(),
        "{} missing: build the workspace (cargo test --release --workspace)",
        p.display()
    );
    true
}

fn uprun(dir: &Path, list: &str, outdir: &str, extra: &[&str]) -> std::process::Output {
    fs::write(dir.join("test_list"), list).unwrap();
    let mut args = vec!["auto", outdir];
    args.extend_from_slice(extra);
    run_in(dir, UPRUN, &args)
}

fn profile(dir: &Path, test: &str) -> upcmp::model::Profile {
    prfout::read(&dir.join(test).join("prfout")).unwrap()
}

fn summary(p: &upcmp::model::Profile) -> ProfileSummary {
    ProfileSummary::of(p, &IdleSet::new(p.idle_set.clone()))
}

#[test]
fn a_short_run_writes_a_consistent_directory() {
    if !perf_usable(true) || !unixperf_built() {
        return;
    }
    let _perf = crate::util::perf_lock();
    let tmp = tempdir();
    spinner(tmp.path());
    let list = format!("# syscalls\ngetpid -loop 1500000 -repeat 2\nspin: {SPIN}\nbad: echo oops; exit 3\n");
    let list = list.as_str();
    let out = uprun(tmp.path(), list, "run1", &["--user-by", "comm", "--export-folded"]);
    assert_eq!(out.status.code(), Some(1), "one test failed: {}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("Running getpid (-loop 1500000 -repeat 2) test..."),
        "{text}"
    );
    assert!(
        stderr(&out).contains("1 of 3 tests exited non-zero: bad"),
        "{}",
        stderr(&out)
    );
    let run = tmp.path().join("run1");
    let marker = RunMarker::read(&run).unwrap();
    assert_eq!(marker.status, Status::Completed);
    assert!(marker.ended.is_some());
    assert!(run.join("system").is_file() && run.join("kallsyms.gz").is_file());
    assert_eq!(fs::read_to_string(run.join("test_list")).unwrap(), list);

    let bad = TestStatus::read(&run.join("bad")).unwrap();
    assert_eq!((bad.status, bad.exit_codes.clone()), (Status::Failed, vec![3]));
    assert_eq!(fs::read_to_string(run.join("bad/upout")).unwrap(), "oops\n");

    for test in ["getpid", "spin", "bad"] {
        let p = profile(&run, test);
        let s = summary(&p);
        // Parsing already checked that per-CPU function sums equal each CPU's total.
        assert_eq!(s.cpus as usize, upcmp::host::online_cpus().len());
        // Idle within a sample of each CPU of 0 is rounding, printed as 0 (docs/formulas.md);
        // the sampled window lies inside the wall time, so idle is never below that.
        let resolution = p.period_sec().unwrap() * p.cpus.len() as f64;
        assert!(
            (s.cpu + s.idle + s.lost - s.elapsed_sec).abs() <= resolution + 1e-9 && s.idle >= 0.0,
            "{test}: cpu {} + idle {} + lost {} against elapsed {}",
            s.cpu,
            s.idle,
            s.lost,
            s.elapsed_sec
        );
        assert_eq!(
            p.cpus.iter().map(|c| c.lost).sum::<u64>(),
            0,
            "no sample lost at 1000 Hz"
        );
        // Every CPU that /proc/stat saw busy for a while took samples.
        for c in &p.cpus {
            if c.procstat_busy_sec.unwrap() > 0.1 {
                assert!(c.samples > 0, "{test}: cpu {} was busy but took no sample", c.cpu);
            }
        }
        // The sampled busy time agrees with /proc/stat within tick noise, or says so; a
        // CPU busy for fewer ticks than the cross-check needs is not checked.
        let sampled: f64 = s.cpu;
        let procstat: f64 = p.cpus.iter().map(|c| c.procstat_busy_sec.unwrap()).sum();
        let agree =
            (sampled - procstat).abs() <= (0.05 * sampled.max(procstat)).max(3.0 * (procstat * 100.0).sqrt() / 100.0);
        let long_enough = p
            .cpus
            .iter()
            .all(|c| c.procstat_busy_sec.unwrap() * 100.0 >= upcmp::collect::run::CROSS_CHECK_MIN_TICKS);
        assert!(
            agree || !long_enough || !p.warnings.is_empty(),
            "{test}: {sampled} vs {procstat} without a warning"
        );
    }

    // --export-folded: the same samples as folded stacks.
    let folded = fs::read_to_string(run.join("getpid/profile.folded")).unwrap();
    let mut total = 0;
    upcmp_parsers::folded::for_each_stack(folded.as_bytes(), "profile.folded", |s| total += s.count).unwrap();
    assert_eq!(
        total,
        profile(&run, "getpid").cpus.iter().map(|c| c.samples).sum::<u64>()
    );

    // samples.gz and kallsyms.gz rebuild the same prfout; another idle set moves time.
    let syms = upcmp::symbols::KernelSymbols::from_kallsyms_file(&run.join("kallsyms.gz")).unwrap();
    let original = profile(&run, "getpid");
    let idle = IdleSet::new(original.idle_set.clone());
    let dir = run.join("getpid");
    let again = upcmp::analyse::profile::rebuild(&dir, &syms, &idle, upcmp::model::UserBy::Comm).unwrap();
    assert_eq!(again, original);
    let none = upcmp::analyse::profile::rebuild(&dir, &syms, &IdleSet::new(vec![]), Default::default()).unwrap();
    // Equal when no idle function was sampled (both CPUs busy with other programs): the
    // two sums then differ only by rounding, their functions being named differently.
    let (cpu_none, cpu_original) = (summary(&none).cpu, summary(&original).cpu);
    assert!(cpu_none >= cpu_original * (1.0 - 1e-12), "{cpu_none} < {cpu_original}");

    // The syscall-heavy test: the entry path and the handler on top of the kernel time.
    let p = profile(&run, "getpid");
    let idle = IdleSet::new(p.idle_set.clone());
    let top: Vec<&str> = p
        .functions
        .iter()
        .filter(|f| !idle.contains(&f.name) && f.module != "user")
        .take(6)
        .map(|f| f.name.as_str())
        .collect();
    assert!(
        top.iter().any(|n| n.contains("syscall")),
        "no syscall entry among {top:?}"
    );
    // The handler, or the pid lookup it calls (__task_pid_nr_ns), is a few % of the
    // kernel time: some tens of samples at this length. The handler alone is so short that
    // a run on a busy machine once took none of it.
    assert!(
        p.functions
            .iter()
            .any(|f| f.name.ends_with("sys_getpid") || f.name == "__task_pid_nr_ns"),
        "no getpid handler among {:?}",
        &p.functions[..p.functions.len().min(12)]
    );

    // The CPU-bound test: about one CPU for its wall time, nearly all of it user time.
    let p = profile(&run, "spin");
    check_spin(&run.join("spin"), &p, 1.0);
}

/// A shell under a name of its own, so its user time has its own `user:COMM` line.
/// It prints its own /proc stat line at the end: the CPU time the kernel charged it.
const SPIN: &str = "./upcmpspin -c 'i=0; while [ $i -lt 400000 ]; do i=$((i+1)); done; cat /proc/$$/stat'";

/// The spinners' sampled CPU time equals the CPU time the kernel charged them (within
/// sampling and tick noise); on an otherwise quiet machine that is about `copies` x wall.
fn check_spin(test_dir: &Path, p: &upcmp::model::Profile, copies: f64) {
    let upout = fs::read_to_string(test_dir.join("upout")).unwrap();
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    // Fields 14 and 15 (utime, stime) after the ")" that ends the command name.
    let (user, system): (Vec<f64>, Vec<f64>) = upout
        .lines()
        .filter_map(|l| {
            l.rsplit_once(") ")
                .map(|(_, rest)| rest.split_whitespace().collect::<Vec<_>>())
        })
        .map(|f| (f[11].parse::<f64>().unwrap() / hz, f[12].parse::<f64>().unwrap() / hz))
        .unzip();
    let (user, system): (f64, f64) = (user.iter().sum(), system.iter().sum());
    let charged = user + system;
    // CPU-bound: almost no kernel time.
    assert!(system <= 0.1 * charged + 2.0 / hz, "kernel {system} s of {charged} s");
    let spin = spin_sec(p);
    let tolerance = 0.1 * charged + 3.0 * (charged * hz).sqrt() / hz + 0.02;
    assert!(
        (spin - charged).abs() <= tolerance,
        "sampled {spin} s vs charged {charged} s"
    );
    let s = summary(p);
    let others = s.cpu - spin;
    if others < 0.1 * s.wall_sec {
        // Copies start and end a little apart, so they overlap for less than the wall time.
        let expect = copies * s.wall_sec;
        assert!(
            spin > (1.0 - 0.15 * copies) * expect && spin < 1.05 * expect + 0.02,
            "{spin} s of CPU vs {expect}"
        );
    } else {
        eprintln!("the machine was busy ({others:.2} s of other CPU time): {copies} x wall not checked");
    }
}

fn spinner(dir: &Path) {
    fs::copy("/bin/sh", dir.join("upcmpspin")).unwrap();
}

/// Seconds of user time of the spinner.
fn spin_sec(p: &upcmp::model::Profile) -> f64 {
    p.functions
        .iter()
        .filter(|f| f.name == "user:upcmpspin")
        .map(|f| f.total())
        .sum::<u64>() as f64
        * p.period_sec().unwrap()
}

#[test]
fn parallel_copies_use_parallel_cpu_time_and_upcmp_compares_two_runs() {
    if !perf_usable(true) || !unixperf_built() {
        return;
    }
    let _perf = crate::util::perf_lock();
    let tmp = tempdir();
    spinner(tmp.path());
    let list = format!("spin: {SPIN}\ngetpid -loop 200000 -repeat 1\n");
    for run in ["a", "b"] {
        let out = uprun(tmp.path(), &list, run, &["2", "--user-by", "comm"]);
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let p = profile(&tmp.path().join("a"), "spin");
    let s = summary(&p);
    check_spin(&tmp.path().join("a/spin"), &p, 2.0_f64.min(f64::from(s.cpus)));
    let st = TestStatus::read(&tmp.path().join("a/spin")).unwrap();
    assert_eq!(st.copies, 2);
    assert_eq!(st.exit_codes, [0, 0]);
    // unixperf's two copies both wrote to one upout.
    let upout = fs::read_to_string(tmp.path().join("a/getpid/upout")).unwrap();
    assert_eq!(upout.lines().filter(|l| l.contains(" trep @ ")).count(), 2);

    let out = run_in(tmp.path(), UPCMP, &["a", "b", "cmp"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report = stdout(&out);
    assert!(report.contains("****************************** spin results"));
    assert!(report.contains("[copy 1]") && report.contains("[copy 2]"), "{report}");
    assert!(
        report.contains("wall time of"),
        "the external command is compared by wall time"
    );
    assert!(report.contains("Elapsed time"));
    assert!(tmp.path().join("cmp/results.json").is_file());
    // Every operation of both upouts is a row, with R2/R1 of the rates the upouts print.
    let parse = |run: &str| {
        let p = tmp.path().join(run).join("getpid/upout");
        upcmp_parsers::upout::parse_upout(&fs::read_to_string(&p).unwrap(), "upout").unwrap()
    };
    let (a, b) = (parse("a"), parse("b"));
    assert_eq!(a.len(), 3, "two copies and their aggregate: {a:?}");
    for (x, y) in a.iter().zip(&b) {
        let label = match x.copy {
            Some(k) => format!("{} [copy {k}]", x.description),
            None => x.description.clone(),
        };
        let row = report
            .lines()
            .find(|l| l.trim_end().ends_with(&label))
            .unwrap_or_else(|| panic!("no row {label}"));
        let shown = row
            .split('(')
            .nth(1)
            .and_then(|r| r.split(')').next())
            .unwrap()
            .trim()
            .to_string();
        assert_eq!(shown, format!("{:.2}", y.value / x.value), "{row}");
    }
}

#[test]
fn interrupting_a_run_stops_everything_and_keeps_what_was_written() {
    if !perf_usable(true) || !unixperf_built() {
        return;
    }
    let tmp = tempdir();
    let _perf = crate::util::perf_lock();
    // A sleep whose command line no other process has.
    let tag = format!("sleep 61.{}", std::process::id());
    fs::write(
        tmp.path().join("test_list"),
        format!("first: true\nlong: {tag}\nnever: true\n"),
    )
    .unwrap();
    let child = Command::new(UPRUN)
        .args(["auto", "out"])
        .current_dir(tmp.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let long = tmp.path().join("out/long");
    let t0 = Instant::now();
    while !long.join("upout").exists() && t0.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(700));
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(t0.elapsed() < Duration::from_secs(30));
    let dir = tmp.path().join("out");
    assert_eq!(RunMarker::read(&dir).unwrap().status, Status::Interrupted);
    assert_eq!(TestStatus::read(&long).unwrap().status, Status::Interrupted);
    assert!(long.join("prfout").is_file() && long.join("samples.gz").is_file());
    assert!(!dir.join("never").exists(), "nothing runs after the signal");
    assert_eq!(TestStatus::read(&dir.join("first")).unwrap().status, Status::Completed);
    // The test's process is gone, and so is uprun with its perf events.
    let ps = Command::new("pgrep").args(["-f", &tag]).output().unwrap();
    assert!(
        ps.stdout.is_empty(),
        "left behind: {}",
        String::from_utf8_lossy(&ps.stdout)
    );
}

#[test]
fn bad_input_is_refused_before_anything_runs() {
    if !perf_usable(true) || !unixperf_built() {
        return;
    }
    let _perf = crate::util::perf_lock();
    let tmp = tempdir();
    // An unknown test: the error names the line, and no directory is made.
    let out = uprun(tmp.path(), "getpid\nforkwiat -loop 5\n", "out", &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("test_list:2:1: expected a unixperf test name"),
        "{}",
        stderr(&out)
    );
    assert!(!tmp.path().join("out").exists());
    // A directory uprun did not write is never moved or deleted.
    let mine = tmp.path().join("mine");
    fs::create_dir(&mine).unwrap();
    fs::write(mine.join("data"), "precious").unwrap();
    let out = uprun(tmp.path(), "x: true\n", "mine", &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("will not move or delete it"), "{}", stderr(&out));
    assert_eq!(fs::read_to_string(mine.join("data")).unwrap(), "precious");
    // A missing kernel image.
    let out = run_in(tmp.path(), UPRUN, &["/nonexistent/vmlinux", "out2"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("/nonexistent/vmlinux"), "{}", stderr(&out));
    assert!(!tmp.path().join("out2").exists());
    // An unwritable place for OUTDIR.
    let out = uprun(tmp.path(), "x: true\n", "/proc/uprun-out", &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("/proc/uprun-out"), "{}", stderr(&out));
}

#[test]
fn rotation_never_deletes_a_run() {
    if !perf_usable(true) || !unixperf_built() {
        return;
    }
    let _perf = crate::util::perf_lock();
    let tmp = tempdir();
    for k in 0..3 {
        let out = uprun(tmp.path(), &format!("t{k}: true\n"), "out", &[]);
        assert!(out.status.success(), "{}", stderr(&out));
        if k == 2 {
            // The terminal says what moved where.
            let text = stdout(&out);
            assert!(
                text.contains("uprun: kept the earlier run: moved out to out.old\n"),
                "{text}"
            );
            assert!(text.contains("moved out.old to out.old.2\n"), "{text}");
        }
    }
    // The first run (the baseline) survives two more runs under its name.
    assert!(tmp.path().join("out/t2").is_dir());
    assert!(tmp.path().join("out.old/t1").is_dir());
    assert!(tmp.path().join("out.old.2/t0").is_dir());
    let entries: Vec<PathBuf> = fs::read_dir(tmp.path()).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(entries.len(), 4, "out, out.old, out.old.2, test_list: {entries:?}");
}

#[test]
fn without_permission_the_message_says_why_and_how_to_fix_it() {
    if !perf_usable(true) {
        return;
    }
    let paranoid: i32 = fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    if paranoid < 1 {
        eprintln!("skipped: perf_event_paranoid is {paranoid}, so an unprivileged user may sample");
        return;
    }
    let tmp = tempdir();
    fs::write(tmp.path().join("test_list"), "x: true\n").unwrap();
    // Writable by the unprivileged user, with the sticky bit (a parent every user may
    // write without it is refused before anything else).
    let mut perm = fs::metadata(tmp.path()).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perm, 0o1777);
    fs::set_permissions(tmp.path(), perm).unwrap();
    let out = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", UPRUN, "auto", "out"])
        .current_dir(tmp.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains(&format!("perf_event_paranoid is {paranoid}, and you are not root")),
        "{err}"
    );
    assert!(err.contains("sysctl kernel.perf_event_paranoid=-1"), "{err}");
    assert!(!tmp.path().join("out").exists());
}
