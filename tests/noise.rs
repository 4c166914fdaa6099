//! Noise you can trust: repeated runs, A/A and A/B experiments, machine preparation.

use crate::util::{csv_fields, interleaved_runs, perf_lock, perf_usable, run_in, stderr, stdout, tempdir};
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

/// A function row of results.csv.
#[derive(Debug)]
struct FunctionRow {
    name: String,
    /// Run 1's and run 2's seconds (0 when absent).
    run1: f64,
    run2: f64,
    /// R2-R1, seconds.
    delta: f64,
    /// Standard deviation over run 2's repetitions, % of its mean.
    run2_sd_pct: f64,
    listed: bool,
    verdict: String,
    p_value: Option<f64>,
    q_value: Option<f64>,
}

impl FunctionRow {
    fn marked(&self) -> bool {
        self.verdict == "significant" || self.verdict == "sampling only"
    }
}

fn function_rows(results_dir: &Path) -> Vec<FunctionRow> {
    let csv = fs::read_to_string(results_dir.join("results.csv")).unwrap();
    let mut lines = csv.lines();
    let header = csv_fields(lines.next().unwrap());
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    let (kind, name, run1, run2, delta, sd2, listed, verdict, p, q) = (
        col("kind"),
        col("name"),
        col("run1"),
        col("run2"),
        col("delta"),
        col("run2_sd_pct"),
        col("listed"),
        col("verdict"),
        col("p_value"),
        col("q_value"),
    );
    lines
        .map(csv_fields)
        .filter(|f| f[kind] == "function")
        .map(|f| FunctionRow {
            name: f[name].clone(),
            run1: f[run1].parse().unwrap_or(0.0),
            run2: f[run2].parse().unwrap_or(0.0),
            delta: f[delta].parse().unwrap(),
            run2_sd_pct: f[sd2].parse().unwrap(),
            listed: f[listed] == "true",
            verdict: f[verdict].clone(),
            p_value: f[p].parse().ok(),
            q_value: f[q].parse().ok(),
        })
        .collect()
}

/// The verdicts of the text report's CPU Time Analysis, by function.
fn printed_verdicts(report: &str) -> Vec<(String, String)> {
    report
        .lines()
        .skip_while(|l| !l.starts_with("CPU Time Analysis"))
        .skip(3)
        .take_while(|l| !l.is_empty() && !l.starts_with('(') && !l.starts_with("Notes"))
        .map(|l| {
            let verdict = ["sampling only", "significant", "noise", "n/a"]
                .into_iter()
                .find(|v| l.ends_with(v))
                .unwrap_or_else(|| panic!("no verdict in {l:?}"));
            (l.split_whitespace().next().unwrap().to_string(), verdict.to_string())
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
    let format = format!("format: {}", upcmp::store::outdir::FORMAT_VERSION);
    assert!(marker.contains(&format) && marker.contains("runs: 3"), "{marker}");
    let out = run_in(tmp.path(), UPCMP, &["a", "b", "r"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report = stdout(&out);
    assert!(report.contains("Repetitions (means below)"), "{report}");
    assert!(
        report.contains("Noise: 3 and 2 repetitions; each function's change of CPU time is tested with Welch's t-test"),
        "{report}"
    );
    assert!(
        report.contains("Benchmark (getpid system call): an observed change below"),
        "{report}"
    );
    assert!(report.contains("a true change of about"), "{report}");
    assert!(report.contains(" sd%"));
    let csv = fs::read_to_string(tmp.path().join("r/results.csv")).unwrap();
    assert!(
        csv.lines()
            .any(|l| l.starts_with("getpid,function,") && l.contains(",welch,")),
        "{csv}"
    );
}

/// An A/A comparison (the same work on both sides) and an A/B comparison (B makes 3
/// million stat(2) calls, about 0.7 s of CPU, where A makes 11 million getpid(2) calls for
/// as long; every side also forks and execs /bin/true 100 times, work that reaches a few
/// hundred kernel functions), each side 6 repetitions sampled at 4,000 Hz, the three
/// sides interleaved in time in balanced orders ([`crate::util::ORDERS`]): a drift of the machine
/// falls on every side alike, and since every repetition lasts about as long, so does the
/// time other programs take on the sampled CPUs (the profile is system-wide).
///
/// A/A, every function listed (cutoff 0): at most 1% of the listed rows marked, and at
/// least 2 allowed. Over rows that all hold the null, Benjamini-Hochberg at 5% marks one
/// row or more in 5% of reports, two or more in 0.47% and three or more in 0.05%,
/// whatever their number (numpy, seed 1: 400,000 reports of independent uniform p-values,
/// 30 to 300 rows): allowing a single row would fail 1 run in 210.
///
/// A/B, cutoff 0.1%: the injected path, every function of the stat path that grew by
/// 10 ms or more (40 samples a repetition) from less than a tenth of that (so not other
/// programs' path lookups, which both sides see alike), is marked significant; the text
/// report prints the verdicts of results.csv; --hide-noise lists exactly the marked rows.
///
/// False failures: below 1 in 1000 runs. Measured with 30 runs on a 2-CPU machine under
/// load (other builds, load average 10 to 16, and a busy loop on each CPU:
/// `for i in 1 2; do nice -n 10 sh -c 'while :; do :; done' & done`, then 30 times
/// `cargo test --release --test tests noise::a_a_marks`): no failure. A/A: 712 to
/// 1,630 listed rows a report, 30,396 in all; 0.37% of them had p < 0.05 and 0.016%
/// p < 0.01 (smallest 0.0025), no q-value below 1: the tests are conservative on rows of
/// few samples, which most rows are, so BH's 0.05% for three marked all-null rows (above)
/// overstates the chance (and with 700 rows, 8 allowed, by far). A/B: the largest q of the
/// checked rows (3 a run: cp_new_stat, filename_lookup, vfs_statx, each 10 to 24 ms a
/// repetition) was 6.7e-4, 75 times below 0.05; log10(0.05/q) had mean 3.0 and standard
/// deviation 0.31 over the runs, which puts a q above 0.05 beyond 9 standard deviations.
/// Runtime: 17 to 20 s of CPU (user 7 to 8 s, system 10 to 12 s); 42 to 98 s (median
/// 68 s) on that busy machine.
///
/// Re-measured with the shared variance model (issue 28): 10 runs while the machine ran
/// other builds and tests (load average 2.8 to 14): A/A 761 to 1,632 listed rows, none
/// marked, smallest p 0.0034. Two runs failed, both because a stat-path row that grew
/// 11–14 ms fell under the 0.1% cutoff (the other programs' CPU time counts in the
/// total) and a row out of the family is never marked: only listed rows are checked now.
/// A/B: the largest q of the checked rows was 1.5e-4 to 8.2e-3; log10(0.05/q) had mean
/// 1.5 and standard deviation 0.65, which puts a q above 0.05 about 2.3 standard
/// deviations out: a false failure about 1 run in 100 (against 1 in 1000 before, with
/// Welch per row), to be watched.
///
/// Measured again (issue 28): the three `noise::` tests 11 times in a row, load average
/// 13.8 to 16.6 (about 8 other builds and tests), 1 to 8 minutes a run: 1 failed, the
/// A/A part never (none of 904 to 2,172 listed rows marked). The failure: every
/// stat-path row (15–28 ms) fell under the 0.1% cutoff, other programs' CPU time making
/// 0.1% of a run more than 28 ms; the A/B cutoff is now lowered to keep 8 ms rows listed
/// on a busy machine. Measured with that change (the three `noise::` tests in a row, load
/// average 15 to 18): 2 of 5 runs failed. One was the test's again: another program's BPF
/// program, listed with NUL bytes in its name, is escaped in the text report and raw in
/// the CSV, and the names are now compared as printed. The other's cause is not known
/// (its message was not kept: an assertion listing A/B rows). The rate after the fix is
/// not yet measured.
///
/// Then (docs/formulas.md, "The live test"): under load the model fitted over every
/// function of the system-wide profile took other programs' run-to-run spread (143% of a
/// function's time per run, against 6.9% on the test's own samples), and a stat-path row
/// with a 7% spread had q up to 0.063. The stat path is now checked on the test's own
/// samples (`--only-test`, with an A/A of them too), and system-wide only when the report
/// does not say that other processes held more than 5% of the CPU time. 15 runs with
/// twelve busy loops (load 13 to 15) and 3 idle: none failed; the `--only-test` check's
/// largest q was 5.6e-6, four orders of magnitude inside 0.05.
#[test]
fn a_a_marks_almost_nothing_and_a_b_marks_the_injected_path() {
    if !perf_usable(true) {
        return;
    }
    let _perf = perf_lock();
    let tmp = tempdir();
    let up = unixperf();
    // A getpid(2) call costs about a quarter of a stat(2) call.
    let common = format!("{up} -forkexec -loop 100 -repeat 1");
    let base = format!("{common} && {up} -getpid -loop 11000000 -repeat 1");
    let injected = format!("{common} && {up} -getpid -loop 250000 -repeat 1 && {up} -stat -loop 3000000 -repeat 1");
    // 4,000 samples a second on each CPU: the counts of 4 s of work in 1 s.
    interleaved_runs(
        tmp.path(),
        &[&base, &injected, &base],
        &["a1", "b", "a2"],
        &["--freq", "4000"],
    );

    let out = run_in(tmp.path(), UPCMP, &["a1", "a2", "aa", "0"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let aa: Vec<FunctionRow> = function_rows(&tmp.path().join("aa"))
        .into_iter()
        .filter(|r| r.listed)
        .collect();
    assert!(!aa.is_empty(), "{}", stdout(&out));
    let marked = aa.iter().filter(|r| r.marked()).count();
    let allowed = (aa.len() / 100).max(2);
    // The margin: the test fails when the (allowed+1)-th smallest q-value is below 0.05.
    let mut qs: Vec<f64> = aa.iter().filter_map(|r| r.q_value).collect();
    qs.sort_by(f64::total_cmp);
    let next_q = qs.get(allowed).copied().unwrap_or(1.0);
    let smallest_p = aa.iter().filter_map(|r| r.p_value).fold(1.0, f64::min);
    let below = |x: f64| aa.iter().filter(|r| r.p_value.is_some_and(|p| p < x)).count();
    eprintln!(
        "A/A: {marked} of {} listed rows marked ({allowed} allowed); p < 0.05: {}, p < 0.01: {}; smallest p {smallest_p:.3e}, q {:.3e}, q #{} {next_q:.3e}",
        aa.len(),
        below(0.05),
        below(0.01),
        qs.first().copied().unwrap_or(1.0),
        allowed + 1,
    );
    assert!(marked <= allowed, "A/A: {marked} of {} rows marked: {aa:#?}", aa.len());
    // The same on the test's own samples, whose noise model is not widened by others'.
    let out = run_in(tmp.path(), UPCMP, &["a1", "a2", "aa_own", "0", "--only-test"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let aa_own: Vec<FunctionRow> = function_rows(&tmp.path().join("aa_own"))
        .into_iter()
        .filter(|r| r.listed)
        .collect();
    let marked_own = aa_own.iter().filter(|r| r.marked()).count();
    let allowed_own = (aa_own.len() / 100).max(2);
    eprintln!(
        "A/A --only-test: {marked_own} of {} listed rows marked ({allowed_own} allowed); smallest p {:.3e}",
        aa_own.len(),
        aa_own.iter().filter_map(|r| r.p_value).fold(1.0, f64::min)
    );
    assert!(
        marked_own <= allowed_own,
        "A/A --only-test: {marked_own} of {} rows marked: {aa_own:#?}",
        aa_own.len()
    );

    // Cutoff 0.1%, or less when other programs' CPU time (the profile is system-wide) makes
    // 0.1% of a run more than 8 ms: the stat path's 10 ms rows must be in the family.
    let out = run_in(tmp.path(), UPCMP, &["a1", "b", "ab", "0.1"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let mut ab = function_rows(&tmp.path().join("ab"));
    let busy = |f: fn(&FunctionRow) -> f64| ab.iter().map(f).sum::<f64>();
    let cutoff = (100.0 * 0.008 / busy(|r| r.run1).max(busy(|r| r.run2))).min(0.1);
    let cutoff = format!("{cutoff:.4}");
    let out = if cutoff == "0.1000" {
        out
    } else {
        eprintln!("A/B: busy machine, cutoff {cutoff}%");
        let out = run_in(tmp.path(), UPCMP, &["a1", "b", "ab_busy", &cutoff]);
        assert!(out.status.success(), "{}", stderr(&out));
        ab = function_rows(&tmp.path().join("ab_busy"));
        out
    };
    let printed = printed_verdicts(&stdout(&out));
    // The text report escapes foreign names, the CSV keeps them: on a busy machine other
    // programs' BPF programs were listed with NUL bytes in their names (1 run in 7).
    let listed: Vec<(String, String)> = ab
        .iter()
        .filter(|r| r.listed)
        .map(|r| {
            let shown = upcmp::model::escaped(&r.name).into_owned();
            (shown.split_whitespace().next().unwrap().to_string(), r.verdict.clone())
        })
        .collect();
    assert_eq!(printed, listed);
    // The others' note: other processes held much of the CPU time (the comparison counts
    // them) and their run-to-run spread is in the noise model fitted over every function.
    let results = fs::read_to_string(
        tmp.path()
            .join(if cutoff == "0.1000" { "ab" } else { "ab_busy" })
            .join("results"),
    )
    .unwrap();
    let others_busy = results.contains("other processes than the test's held more than");
    let system_wide = stat_path(&ab, "A/B");
    assert!(!system_wide.is_empty(), "A/B: no growth on the stat path: {ab:#?}");
    if others_busy {
        eprintln!("A/B: other processes were busy: the stat path is checked on the test's own samples");
    } else {
        assert!(
            system_wide.iter().all(|r| r.verdict == "significant"),
            "A/B: a large growth on the stat path is not marked: {system_wide:#?}"
        );
    }
    // The test's own samples (--only-test), busy machine or not.
    let out = run_in(tmp.path(), UPCMP, &["a1", "b", "ab_own", "0.1", "--only-test"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let own_rows = function_rows(&tmp.path().join("ab_own"));
    let own = stat_path(&own_rows, "A/B --only-test");
    assert!(
        !own.is_empty(),
        "A/B --only-test: no growth on the stat path: {own_rows:#?}"
    );
    assert!(
        own.iter().all(|r| r.verdict == "significant"),
        "A/B --only-test: a large growth on the stat path is not marked: {own:#?}"
    );

    // --hide-noise keeps only the marked rows.
    let out = run_in(tmp.path(), UPCMP, &["a1", "b", "ab2", &cutoff, "--hide-noise"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let hidden = printed_verdicts(&stdout(&out));
    assert!(hidden.iter().all(|r| r.1 == "significant"), "{hidden:?}");
    assert_eq!(hidden.len(), ab.iter().filter(|r| r.listed && r.marked()).count());
}

/// The listed rows of the stat path that grew by 10 ms a repetition or more from less
/// than a tenth of that (so not other programs' path lookups, which both sides see
/// alike), each printed with its test.
fn stat_path<'a>(rows: &'a [FunctionRow], what: &str) -> Vec<&'a FunctionRow> {
    let path: Vec<&FunctionRow> = rows
        .iter()
        .filter(|r| r.name.contains("stat") || r.name.contains("lookup") || r.name.contains("walk_component"))
        .filter(|r| r.delta >= 0.01 && r.run1 * 10.0 <= r.run2)
        // Only listed rows are in the family (the cutoff lists these).
        .filter(|r| r.listed)
        .collect();
    for r in &path {
        eprintln!(
            "{what}: {} +{:.3} s, sd {:.1}%, p {:.3e}, q {:.3e}",
            r.name,
            r.delta,
            r.run2_sd_pct,
            r.p_value.unwrap_or(f64::NAN),
            r.q_value.unwrap_or(f64::NAN)
        );
    }
    path
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
