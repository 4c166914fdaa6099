//! The everyday loop: sides not run alike, errors that say what to do, the report for a
//! mailing list.

use crate::util::{copy_tree, run_in, stderr, stdout, tempdir, testdata};
use std::fs;
use std::path::Path;

const UPCMP: &str = env!("CARGO_BIN_EXE_upcmp");
const PRFCMP: &str = env!("CARGO_BIN_EXE_prfcmp");
const UPRUN: &str = env!("CARGO_BIN_EXE_uprun");

/// The fixture's two runs in `dir`, with `edit` applied to run 2's `forkwait/status`.
fn fixture_with_status(dir: &Path, edit: impl Fn(String) -> String) {
    for run in ["outdir1", "outdir2"] {
        copy_tree(&testdata(&format!("forkwait/{run}")), &dir.join(run));
    }
    let p = dir.join("outdir2/forkwait/status");
    let text = edit(fs::read_to_string(&p).unwrap());
    fs::write(&p, text).unwrap();
}

/// The values of the report line that starts with `name`.
fn line_starting<'a>(text: &'a str, name: &str) -> &'a str {
    text.lines()
        .find(|l| l.starts_with(name))
        .unwrap_or_else(|| panic!("no line '{name}' in:\n{text}"))
}

#[test]
fn runs_of_other_options_are_warned_and_get_no_summary_ratio() {
    let tmp = tempdir();
    fixture_with_status(tmp.path(), |s| s.replace("-loop 200000", "-loop 2000"));
    // Another loop count is another benchmark: compared once declared the same test.
    let out = run_in(
        tmp.path(),
        UPCMP,
        &["outdir1", "outdir2", "res", "--same-test", "forkwait"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.starts_with(
            "WARNING: forkwait: the runs differ in command: 'unixperf -forkwait -loop 200000 -repeat 2' vs \
             'unixperf -forkwait -loop 2000 -repeat 2'; declared the same test (--same-test): compared; they did \
             different amounts of work"
        ),
        "{text}"
    );
    // Only -loop differs: the rates stay comparable, the totals do not.
    assert!(line_starting(&text, "   425.0").contains("( 0.99)"), "{text}");
    assert!(line_starting(&text, "CPU time").trim_end().ends_with(" -"), "{text}");
    assert!(
        line_starting(&text, "Elapsed time").trim_end().ends_with(" -"),
        "{text}"
    );
    // The System section accounts for the note below it.
    assert!(
        text.contains("The tests note what else can bias the comparison: forkwait (1 note)"),
        "{text}"
    );
    assert!(
        !text.contains("no differences between the two system descriptions"),
        "{text}"
    );
}

#[test]
fn runs_of_other_copies_or_benchmarks_get_no_speed_ratio() {
    let tmp = tempdir();
    fixture_with_status(tmp.path(), |s| s.replace("copies: 1", "copies: 3"));
    let out = run_in(tmp.path(), UPCMP, &["outdir1", "outdir2", "res"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("WARNING: forkwait: the runs differ in copies: '1' vs '3'; the copies compete"),
        "{text}"
    );
    assert!(line_starting(&text, "   425.0").contains("(  -  )"), "{text}");
    assert!(line_starting(&text, "CPU time").trim_end().ends_with(" -"), "{text}");

    let tmp = tempdir();
    fixture_with_status(tmp.path(), |s| s.replace("-forkwait", "-forkexit"));
    let text = stdout(&run_in(tmp.path(), UPCMP, &["outdir1", "outdir2", "res"]));
    assert!(text.contains("they ran different benchmarks: no speed ratio"), "{text}");
    assert!(line_starting(&text, "   425.0").contains("(  -  )"), "{text}");
}

#[test]
fn other_sample_rates_are_warned_about() {
    let tmp = tempdir();
    fixture_with_status(tmp.path(), |s| s);
    let p = tmp.path().join("outdir2/forkwait/prfout");
    let text = fs::read_to_string(&p)
        .unwrap()
        .replace("period-sec 0.0001", "period-sec 0.001")
        // The same samples at ten times the period fill ten times the window.
        .replace("wall-sec 912.563000", "wall-sec 9125.630000");
    fs::write(&p, text).unwrap();
    let text = stdout(&run_in(tmp.path(), UPCMP, &["outdir1", "outdir2", "res"]));
    assert!(
        text.contains("WARNING: forkwait: the runs differ in sample period: '0.1 msec' vs '1 msec'"),
        "{text}"
    );
    // The totals are still comparable: each sample weighs its period.
    assert!(!line_starting(&text, "CPU time").trim_end().ends_with(" -"), "{text}");
}

#[test]
fn a_quiet_comparison_says_so_in_the_system_section() {
    let tmp = tempdir();
    fixture_with_status(tmp.path(), |s| s);
    let text = stdout(&run_in(tmp.path(), UPCMP, &["outdir1", "outdir2", "res"]));
    assert!(
        text.contains("System\n  no differences between the two system descriptions that can bias the comparison\n"),
        "{text}"
    );
}

/// The error of a command that must fail with status 2, each cause said once.
fn error_of(cwd: &Path, bin: &str, args: &[&str]) -> String {
    let out = run_in(cwd, bin, args);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let e = stderr(&out);
    let line = e.lines().last().unwrap_or_default();
    // No cause repeated: "x: no such directory: no such directory" and the like.
    let parts: Vec<&str> = line.split(": ").collect();
    assert!(parts.windows(2).all(|w| w[0] != w[1]), "a cause said twice: {line}");
    e
}

#[test]
fn upcmp_on_perf_files_suggests_perf() {
    let tmp = tempdir();
    fs::copy(testdata("import/a.folded"), tmp.path().join("before.data")).unwrap();
    fs::copy(testdata("import/b.folded"), tmp.path().join("after.data")).unwrap();
    let e = error_of(tmp.path(), UPCMP, &["before.data", "after.data", "r"]);
    assert!(
        e.contains("before.data (OUTDIR1) is a file, not a directory written by uprun")
            && e.contains("add --perf: upcmp --perf before.data after.data r"),
        "{e}"
    );
    assert!(!tmp.path().join("r").exists());
    let e = error_of(tmp.path(), UPCMP, &["nothere", "after.data", "r"]);
    assert!(e.contains("upcmp: error: nothere: no such directory (OUTDIR1)"), "{e}");
}

#[test]
fn prfcmp_on_runs_lists_their_tests() {
    let tmp = tempdir();
    fixture_with_status(tmp.path(), |s| s);
    let e = error_of(tmp.path(), PRFCMP, &["outdir1", "outdir2"]);
    assert!(
        e.contains("outdir1 is a whole run written by uprun, not a profile"),
        "{e}"
    );
    assert!(
        e.contains("(its tests: forkwait), e.g. prfcmp outdir1/forkwait outdir2/forkwait"),
        "{e}"
    );
    let out = run_in(tmp.path(), PRFCMP, &["outdir1/forkwait", "outdir2/forkwait"]);
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn uprun_with_swapped_arguments_says_which_is_which() {
    let tmp = tempdir();
    fs::create_dir(tmp.path().join("before")).unwrap();
    let e = error_of(tmp.path(), UPRUN, &["before", "auto"]);
    assert!(
        e.contains("before is a directory, but the first argument is VMLINUX"),
        "{e}"
    );
    assert!(e.contains("the arguments look swapped: uprun auto before"), "{e}");
    assert!(!tmp.path().join("auto").exists());
}

#[test]
fn uprun_refuses_a_missing_command_before_running_anything() {
    let tmp = tempdir();
    fs::write(tmp.path().join("test_list"), "x: true\nfooo: nonexistent_cmd\n").unwrap();
    let e = error_of(tmp.path(), UPRUN, &["auto", "out"]);
    assert!(e.contains("test_list:2:7: expected a program on PATH"), "{e}");
    assert!(!tmp.path().join("out").exists());
}

/// Every line of `text` at most 80 columns, and no Markdown escape.
fn assert_fits_a_mail(text: &str) {
    for (k, l) in text.lines().enumerate() {
        assert!(
            l.chars().count() <= 80,
            "line {} is {} columns:\n{l}",
            k + 1,
            l.chars().count()
        );
    }
    assert!(
        !text.contains("\\_") && !text.contains("\\|") && !text.contains("|:--") && !text.contains("**Run"),
        "{text}"
    );
}

#[test]
fn mail_format_fits_80_columns_golden() {
    let tmp = tempdir();
    fixture_with_status(tmp.path(), |s| s);
    let out = run_in(tmp.path(), UPCMP, &["outdir1", "outdir2", "res", "--format", "mail"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert_fits_a_mail(&text);
    // Every column that matters: the verdict, the noise line, what the cutoff hid.
    assert!(text.contains("bcopy") && text.contains("  sampl\n"), "{text}");
    assert!(text.contains("Benchmark values: one run a side"), "{text}");
    assert!(
        text.contains("(115 functions below the cutoff are in results.csv"),
        "{text}"
    );
    crate::util::assert_golden(&text, "forkwait/expected_results.mail");

    // What --hide-noise hid is counted apart from what the cutoff left out.
    let out = run_in(
        tmp.path(),
        UPCMP,
        &["outdir1", "outdir2", "res2", "--format", "mail", "--hide-noise"],
    );
    let text = stdout(&out);
    assert_fits_a_mail(&text);
    assert!(
        text.contains("functions within the noise, hidden by --hide-noise, and"),
        "{text}"
    );
}

/// The demo's comparison (a stored copy of two runs of the built-in list, real kernel
/// names and nine tests) fits a mail too, and so does prfcmp's.
#[test]
fn mail_format_fits_80_columns_on_the_demo() {
    let tmp = tempdir();
    for run in ["run1", "run2"] {
        copy_tree(&testdata(&format!("demo/{run}")), &tmp.path().join(run));
    }
    let out = run_in(tmp.path(), UPCMP, &["run1", "run2", "1vs2", "--format", "mail"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert_fits_a_mail(&text);
    assert!(
        text.matches(" results ").count() == 0 && text.contains(" getpid "),
        "{text}"
    );
    let out = run_in(tmp.path(), PRFCMP, &["run1/getpid", "run2/getpid", "--format", "mail"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_fits_a_mail(&stdout(&out));
}

#[test]
fn an_upsrun_run_against_a_uprun_run_says_why_there_are_no_stacks() {
    let tmp = tempdir();
    fixture_with_status(tmp.path(), |s| s);
    let p = tmp.path().join("outdir2/upcmp-run");
    let marker = fs::read_to_string(&p).unwrap() + "kind: upsrun\n";
    fs::write(&p, marker).unwrap();
    let out = run_in(tmp.path(), UPCMP, &["outdir1", "outdir2", "res"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains(
            "WARNING: run 1 (outdir1) was written by uprun and run 2 (outdir2) by upsrun: only upsrun records \
             call stacks, so there is no stack comparison"
        ),
        "{}",
        stdout(&out)
    );
}

#[test]
fn recordings_get_no_benchmark_section_nor_advice_for_uprun() {
    let tmp = tempdir();
    for f in ["a.folded", "b.folded"] {
        fs::copy(testdata(&format!("import/{f}")), tmp.path().join(f)).unwrap();
    }
    let out = run_in(tmp.path(), UPCMP, &["--perf", "a.folded", "b.folded", "res"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        !text.contains("wall time of") && !text.contains("Benchmark values"),
        "{text}"
    );
    assert!(!text.contains("uprun --runs"), "{text}");
    assert!(text.contains("Elapsed time"), "{text}");
    // prfcmp writes no results.csv: it does not send the reader there.
    let out = run_in(tmp.path(), PRFCMP, &["a.folded", "b.folded", "30"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        !text.contains("results.csv") && !text.contains("uprun --runs"),
        "{text}"
    );
    assert!(
        text.contains("below the cutoff are listed by --format csv or --format json"),
        "{text}"
    );
}

/// A live run: a failed test shows why on the terminal, and the filters rebuild its
/// profiles from the raw samples.
#[test]
fn filters_count_only_the_samples_asked_for() {
    if !crate::util::perf_usable(true) {
        return;
    }
    let _perf = crate::util::perf_lock();
    let tmp = tempdir();
    let d = tmp.path();
    fs::write(
        d.join("test_list"),
        "getpid -loop 1500000 -repeat 2\nbad: echo oops; exit 3\n",
    )
    .unwrap();
    let out = run_in(d, UPRUN, &["auto", "run1"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("  exit status of its copies: 3\n") && text.contains("  | oops\n"),
        "{text}"
    );

    let cmp = |extra: &[&str]| {
        let mut args = vec!["run1", "run1", "res", "--cutoff", "0"];
        args.extend_from_slice(extra);
        let out = run_in(d, UPCMP, &args);
        assert!(out.status.success(), "{}", stderr(&out));
        stdout(&out)
    };
    let all = cmp(&[]);
    let getpid = all.split("*** bad results").next().unwrap();
    assert!(getpid.lines().any(|l| l.starts_with("user ")), "{all}");
    let kernel = cmp(&["--comm", "unixperf", "--kernel-only"]);
    assert!(
        kernel.contains("WARNING: only the samples kept by --comm unixperf --kernel-only are counted"),
        "{kernel}"
    );
    let getpid = kernel.split("*** bad results").next().unwrap();
    assert!(!getpid.lines().any(|l| l.starts_with("user ")), "{kernel}");
    let none = cmp(&["--comm", "no-such-command"]);
    let cpu_line = line_starting(&none, "CPU time");
    assert!(cpu_line.split_whitespace().nth(2) == Some("0.000"), "{none}");
    let one = cmp(&["--cpu", "0"]);
    assert!(
        line_starting(&one, "Number of cpu's").split_whitespace().nth(3) == Some("1"),
        "{one}"
    );
    let out = run_in(d, PRFCMP, &["run1/getpid", "run1/getpid", "--cpu", "0"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        line_starting(&stdout(&out), "Number of cpu's")
            .split_whitespace()
            .nth(3)
            == Some("1")
    );
    // Folded stacks carry no thread or CPU: the error says why and how to filter with perf.
    fs::copy(testdata("import/a.folded"), d.join("a.folded")).unwrap();
    for filter in [&["--comm", "dd"][..], &["--kernel-only"], &["--cpu", "0"]] {
        let mut args = vec!["a.folded", "a.folded"];
        args.extend_from_slice(filter);
        let e = error_of(d, PRFCMP, &args);
        assert!(
            e.contains("a.folded: folded stacks cannot be filtered: they carry no command, pid, tid, CPU or mode")
                && e.contains("perf script -i FILE --comms NAME --pid N --tid N --cpu N | inferno-collapse-perf"),
            "{e}"
        );
    }
}

/// Samples kept by prfcmp's filter from `text` (perf script output of a 1 ms cpu-clock
/// recording): every function row of its CSV, none of them taken for idle.
fn kept_samples(d: &Path, text: &str, filter: &[&str]) -> u64 {
    let mut args = vec![text, text, "--format", "csv", "--idle-symbols", "no_such_function"];
    args.extend_from_slice(filter);
    let out = run_in(d, PRFCMP, &args);
    assert!(out.status.success(), "{filter:?}: {}", stderr(&out));
    let sec: f64 = stdout(&out)
        .lines()
        .map(crate::util::csv_fields)
        .filter(|f| f[1] == "function")
        .map(|f| f[3].parse::<f64>().unwrap())
        .sum();
    (sec / 0.001).round() as u64
}

/// `perf report`'s samples of `data` under `filter`: all, and those in kernel mode
/// (`[k]`). The sort keys hold the command, which perf 6.1 needs to apply --comms to
/// every row.
fn perf_report_samples(d: &Path, data: &str, filter: &[&str]) -> (u64, u64) {
    let mut args = vec!["report", "-i", data, "--stdio", "-n", "--sort", "comm,pid,cpu,sym"];
    args.extend_from_slice(filter);
    let out = run_in(d, "perf", &args);
    assert!(out.status.success(), "{}", stderr(&out));
    let (mut all, mut kernel) = (0, 0);
    for line in stdout(&out).lines().filter(|l| !l.starts_with('#')) {
        let words: Vec<&str> = line.split_whitespace().collect();
        if words.len() < 3 || !words[0].ends_with('%') {
            continue;
        }
        let n: u64 = words[1].parse().unwrap();
        all += n;
        if words.contains(&"[k]") {
            kernel += n;
        }
    }
    (all, kernel)
}

/// perf script text is filtered sample by sample, as perf report filters the recording
/// it was written from (testdata/import/filter.*).
#[test]
fn perf_script_text_is_filtered_as_perf_report_filters_its_recording() {
    let tmp = tempdir();
    let d = tmp.path();
    for f in ["filter.perf-script", "filter-fields.perf-script", "filter.data"] {
        fs::copy(testdata(&format!("import/{f}")), d.join(f)).unwrap();
    }
    let text = fs::read_to_string(d.join("filter.perf-script")).unwrap();
    // A thread of a process of several threads (pid/tid printed with -F +pid).
    let ids = text
        .lines()
        .find(|l| l.trim_start().starts_with("lto cgu.04 "))
        .unwrap()
        .split_whitespace()
        .nth(2)
        .unwrap();
    let (pid, tid) = ids.split_once('/').unwrap();
    let cases: [(&[&str], &[&str]); 7] = [
        (&[], &[]),
        (&["--comm", "dd"], &["--comms", "dd"]),
        (&["--comm", "lto cgu.04,sh"], &["--comms", "lto cgu.04,sh"]),
        (&["--pid", pid], &["--pid", pid]),
        (&["--tid", tid], &["--tid", tid]),
        (&["--cpu", "1"], &["--cpu", "1"]),
        (&["--cpu", "0", "--comm", "dd"], &["--cpu", "0", "--comms", "dd"]),
    ];
    let perf = crate::util::perf_usable(false);
    let mut seen = Vec::new();
    for (ours, theirs) in cases {
        let all = kept_samples(d, "filter.perf-script", ours);
        let kernel = kept_samples(d, "filter.perf-script", &[ours, &["--kernel-only"][..]].concat());
        let user = kept_samples(d, "filter.perf-script", &[ours, &["--user-only"][..]].concat());
        assert_eq!(kernel + user, all, "{ours:?}: every sample is kernel or user");
        assert!(all > 0, "{ours:?}");
        if perf {
            assert_eq!((all, kernel), perf_report_samples(d, "filter.data", theirs), "{ours:?}");
        }
        seen.push(all);
    }
    // The filters keep different samples: none of them is a no-op.
    assert!(seen[1..].iter().all(|&n| n < seen[0]), "{seen:?}");
    assert_ne!(seen[3], seen[4], "a process is more than one of its threads");

    // A filter on a field the text does not print: refused, naming the first sample's
    // line and the perf script fields that print it.
    let first = fs::read_to_string(d.join("filter-fields.perf-script"))
        .unwrap()
        .lines()
        .position(|l| !l.starts_with('#'))
        .unwrap()
        + 1;
    for (filter, says) in [
        (&["--pid", pid][..], "--pid filters on each sample's pid, which this sample does not print; write the text with it: perf script -F +pid"),
        (&["--cpu", "0"], "--cpu filters on each sample's cpu, which this sample does not print; write the text with it: perf script -F +cpu"),
        (&["--kernel-only"], "--kernel-only filters on each sample's ip, which this sample does not print; write the text with it: perf script -F +ip,+sym,+dso"),
        (&["--user-only"], "--user-only filters on each sample's ip"),
    ] {
        let mut args = vec!["filter-fields.perf-script", "filter.perf-script"];
        args.extend_from_slice(filter);
        let e = error_of(d, PRFCMP, &args);
        assert!(e.contains(&format!("filter-fields.perf-script:{first}: {says}")), "{e}");
        let mut args = vec!["--perf", "filter.perf-script", "filter-fields.perf-script", "res"];
        args.extend_from_slice(filter);
        let e = error_of(d, UPCMP, &args);
        assert!(e.contains(&format!("filter-fields.perf-script:{first}: {says}")), "{e}");
        assert!(!d.join("res").exists());
    }
    // What the text prints, it filters on: the command and the thread.
    let sh = kept_samples(d, "filter-fields.perf-script", &["--comm", "sh"]);
    assert!(sh > 0 && sh < 3, "{sh}");

    // upcmp --perf filters the text too, and says so.
    let out = run_in(
        d,
        UPCMP,
        &[
            "--perf",
            "filter.perf-script",
            "filter.perf-script",
            "res",
            "--comm",
            "dd",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("WARNING: only the samples kept by --comm dd are counted"));
}

/// A perf.data recording is filtered while it is read, as perf report filters it.
#[test]
fn recordings_are_filtered_while_read() {
    if !crate::util::perf_usable(true) {
        return;
    }
    let _perf = crate::util::perf_lock();
    let tmp = tempdir();
    let d = tmp.path();
    let rec = run_in(
        d,
        "perf",
        &[
            "record",
            "-q",
            "-N",
            "-e",
            "cpu-clock",
            "-a",
            "-o",
            "a.data",
            "--",
            "dd",
            "if=/dev/zero",
            "of=/dev/null",
            "bs=64k",
            "count=20000",
        ],
    );
    assert!(rec.status.success(), "{}", stderr(&rec));
    let cpu_time = |extra: &[&str]| -> f64 {
        let mut args = vec!["a.data", "a.data"];
        args.extend_from_slice(extra);
        let out = run_in(d, PRFCMP, &args);
        assert!(out.status.success(), "{}", stderr(&out));
        let text = stdout(&out);
        line_starting(&text, "CPU time")
            .split_whitespace()
            .nth(2)
            .unwrap()
            .parse()
            .unwrap()
    };
    let all = cpu_time(&[]);
    let dd = cpu_time(&["--comm", "dd"]);
    let dd_kernel = cpu_time(&["--comm", "dd", "--kernel-only"]);
    assert!(dd > 0.0 && dd <= all && dd_kernel <= dd, "{all} {dd} {dd_kernel}");
    let e = error_of(d, PRFCMP, &["a.data", "a.data", "--comm", "no-such-command"]);
    assert!(e.contains("a.data: no samples that the filter keeps"), "{e}");
    let out = run_in(d, UPCMP, &["--perf", "a.data", "a.data", "res", "--comm", "dd"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("WARNING: only the samples kept by --comm dd are counted"));
}
