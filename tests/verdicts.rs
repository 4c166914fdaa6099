//! Verdicts to act on (issue 31): exit statuses that never say "not worse" when nothing
//! could be compared, benchmark values adjusted as their own family, sides run under
//! another wrapper against sides that ran another benchmark, and the messages that must
//! send people the right way.

use crate::util::{copy_tree, repo, run_in, stderr, tempdir, testdata};
use std::fs;
use std::path::Path;

const UPCMP: &str = env!("CARGO_BIN_EXE_upcmp");

/// The named runs of testdata/verdict/ in a fresh directory (relative paths in reports).
fn verdict_runs(names: &[&str]) -> tempfile::TempDir {
    let tmp = tempdir();
    for run in names {
        copy_tree(&testdata(&format!("verdict/{run}")), &tmp.path().join(run));
    }
    tmp
}

fn last_line(s: &str) -> &str {
    s.lines().last().unwrap_or("")
}

/// Rewrites the file `path` with `f` of its text.
fn edit(path: &Path, f: impl FnOnce(String) -> String) {
    let text = fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    fs::write(path, f(text)).unwrap();
}

/// The lines of each `fn main` under src/bin, from its signature to its closing brace.
#[test]
fn every_binary_main_is_at_most_40_lines() {
    let mut seen = 0;
    for e in fs::read_dir(repo().join("src/bin")).unwrap() {
        let path = e.unwrap().path();
        if path.extension().is_none_or(|x| x != "rs") {
            continue;
        }
        let text = fs::read_to_string(&path).unwrap();
        let Some(start) = text.lines().position(|l| l.starts_with("fn main(")) else {
            continue;
        };
        let len = text
            .lines()
            .skip(start)
            .position(|l| l == "}")
            .expect("main's closing brace")
            + 1;
        assert!(len <= 40, "{}: main is {len} lines (at most 40)", path.display());
        seen += 1;
    }
    assert!(seen >= 7, "found only {seen} binaries' main");
}

/// Runs `upcmp ARGS -q --fail-if-worse 2` in `dir`: its exit status and the reason line.
fn verdict(dir: &Path, args: &[&str]) -> (Option<i32>, String) {
    let mut all = args.to_vec();
    all.extend(["-q", "--fail-if-worse", "2"]);
    let o = run_in(dir, UPCMP, &all);
    let err = stderr(&o);
    (o.status.code(), last_line(&err).to_string())
}

// Regression test of issue 31: a test on one side only, one run a side, or a value
// absent on a side gave "not worse" (0); each is 125 ("cannot test"), with a reason
// that names the true case.
#[test]
fn issue_31_fail_if_worse_says_cannot_test() {
    let tmp = verdict_runs(&["base", "better"]);
    let d = tmp.path();
    // Every value compared and better: 0, as before.
    assert_eq!(verdict(d, &["base", "better", "r0"]).0, Some(0));

    // A second test in run 1 only.
    copy_tree(&d.join("base/forkwait"), &d.join("extra/other"));
    copy_tree(&d.join("base"), &d.join("extra"));
    edit(&d.join("extra/test_list"), |t| t + "other\n");
    let (code, reason) = verdict(d, &["extra", "better", "r1"]);
    assert_eq!(code, Some(125), "{reason}");
    assert!(
        reason.starts_with("upcmp: cannot test: other: only run 1 has it (extra/other); 1 value compared"),
        "{reason}"
    );

    // One run a side: each run keeps its first repetition.
    for run in ["base", "better"] {
        copy_tree(&d.join(run), &d.join(format!("{run}1")));
        for r in ["r2", "r3"] {
            fs::remove_dir_all(d.join(format!("{run}1/forkwait/{r}"))).unwrap();
        }
        edit(&d.join(format!("{run}1/upcmp-run")), |t| {
            t.replace("runs: 3", "runs: 1")
        });
    }
    let (code, reason) = verdict(d, &["base1", "better1", "r2"]);
    assert_eq!(code, Some(125), "{reason}");
    assert!(
        reason.contains(
            "forkwait: fork, child immediately exits, parent waits: one run a side measures no run-to-run noise"
        ),
        "{reason}"
    );

    // Three runs a side, but run 2's benchmark wrote no value: never "one run a side".
    for r in ["r1", "r2", "r3"] {
        edit(&d.join(format!("better/forkwait/{r}/upout")), |t| {
            t.lines()
                .filter(|l| !l.contains("trep"))
                .map(|l| format!("{l}\n"))
                .collect()
        });
    }
    let (code, reason) = verdict(d, &["base", "better", "r3"]);
    assert_eq!(code, Some(125), "{reason}");
    assert!(reason.contains("no value in run 2"), "{reason}");
    assert!(!reason.contains("one run a side"), "{reason}");
}

/// The benchmark row's adjusted p-value and the family sizes of `dir/results.json`.
fn bench_q(dir: &Path) -> (f64, serde_json::Value) {
    let json: serde_json::Value = serde_json::from_str(&fs::read_to_string(dir.join("results.json")).unwrap()).unwrap();
    let outcome = &json["tests"][0]["outcome"];
    let q = outcome["bench"][0]["noise"]["q_value"]
        .as_f64()
        .expect("a tested benchmark value");
    (q, outcome["profile"]["families"].clone())
}

// Regression test of issue 31: the benchmark values shared their Holm family with the
// CPU totals, so what changed a profile (a filter such as --comm) changed a
// benchmark's verdict. Run 2's CPU time is made to grow while its benchmark stays: the
// benchmark's adjusted p-value stays the same.
#[test]
fn issue_31_benchmark_values_are_their_own_family() {
    let tmp = verdict_runs(&["base", "noisy"]);
    let d = tmp.path();
    let o = run_in(d, UPCMP, &["base", "noisy", "r1", "-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let (q1, families) = bench_q(&d.join("r1"));
    assert_eq!(families["benchmarks"], 1, "{families}");
    assert_eq!(families["headline"], 1, "{families}");
    // 100000 samples a CPU move from idle to bcopy in each repetition of run 2.
    for r in ["r1", "r2", "r3"] {
        edit(&d.join(format!("noisy/forkwait/{r}/prfout")), |t| {
            t.replace(
                "     734805     734805 [kernel] bcopy",
                "     834805     834805 [kernel] bcopy",
            )
            .replace(
                "    3899695    3899696 [kernel] idle",
                "    3799695    3799696 [kernel] idle",
            )
        });
    }
    let o = run_in(d, UPCMP, &["base", "noisy", "r2", "-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let json = fs::read_to_string(d.join("r2/results.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(
        v["tests"][0]["outcome"]["profile"]["cpu_noise"]["verdict"], "significant",
        "the CPU time must have changed for the test to mean anything"
    );
    let (q2, _) = bench_q(&d.join("r2"));
    assert_eq!(q1, q2);
}

/// Runs upcmp in `dir` and returns its standard output, standard error and the page.
fn compared(dir: &Path, args: &[&str]) -> (String, String, String) {
    let o = run_in(dir, UPCMP, args);
    assert!(o.status.success(), "upcmp {args:?}: {}", stderr(&o));
    let page = fs::read_to_string(dir.join(args[2]).join("results.html")).unwrap();
    (crate::util::stdout(&o), stderr(&o), page)
}

/// Sets the command of every repetition of `run`'s forkwait.
fn set_command(dir: &Path, run: &str, command: &str) {
    for r in ["r1", "r2", "r3"] {
        edit(&dir.join(format!("{run}/forkwait/{r}/status")), |t| {
            t.lines()
                .map(|l| match l.starts_with("command: ") {
                    true => format!("command: {command}\n"),
                    false => format!("{l}\n"),
                })
                .collect()
        });
    }
}

// Regression test of issue 31: a wrapper before the same benchmark (env here; taskset,
// a seccomp setter alike) was refused as another benchmark, while the text digest
// still gave the change as significant. It is warned and compared; another loop count
// is refused (both digests say so, --fail-if-worse cannot test) unless --same-test.
#[test]
fn issue_31_wrappers_are_compared_other_benchmarks_refused() {
    let tmp = verdict_runs(&["base", "worse"]);
    let d = tmp.path();
    set_command(
        d,
        "worse",
        "env LD_BIND_NOW=1 unixperf -forkwait -loop 200000 -repeat 2",
    );
    let (text, _, page) = compared(d, &["base", "worse", "r1"]);
    assert!(
        text.contains(
            "WARNING: forkwait: the runs differ in wrapper: 'none' vs 'env LD_BIND_NOW=1'; the same benchmark run \
             another way: compared"
        ),
        "{text}"
    );
    assert!(text.contains("-5.9% ops/s (significant)"), "{text}");
    assert!(text.contains("( 0.94)"), "{text}");
    assert!(!page.contains("differ: no ratio"));
    assert_eq!(verdict(d, &["base", "worse", "r2"]).0, Some(1));

    set_command(d, "worse", "unixperf -forkwait -loop 100000 -repeat 2");
    let (text, _, page) = compared(d, &["base", "worse", "r3"]);
    assert!(
        text.contains("they ran different benchmarks: no speed ratio, no R2/R1 and no verdict"),
        "{text}"
    );
    let digest = text.lines().skip_while(|l| *l != "Digest").nth(1).unwrap();
    assert!(digest.contains("benchmarks differ: no ratio"), "{text}");
    assert!(
        !text.contains("(significant)") && !text.contains("one run a side"),
        "{text}"
    );
    assert!(page.contains("benchmarks differ: no ratio"));
    let (code, reason) = verdict(d, &["base", "worse", "r4"]);
    assert_eq!(code, Some(125), "{reason}");
    assert!(
        reason.contains(
            "cannot test: forkwait: the sides ran different benchmarks ('unixperf -forkwait -loop 200000 -repeat 2' \
             vs 'unixperf -forkwait -loop 100000 -repeat 2'; --same-test forkwait, or one key=KEY before the test \
             on both test_list lines, compares them)"
        ),
        "{reason}"
    );
    let (code, reason) = verdict(d, &["base", "worse", "r5", "--same-test", "forkwait"]);
    assert_eq!(code, Some(1), "{reason}");
}

// Issue 31: the test_list says two lines are one benchmark (`key=KEY` before the test, in
// both lists, so in both runs' copies): compared as with --same-test; a key on one side
// only, or two keys, is no declaration, and the sides stay refused.
#[test]
fn issue_31_a_test_list_key_declares_the_same_benchmark() {
    let tmp = verdict_runs(&["base", "worse"]);
    let d = tmp.path();
    set_command(d, "worse", "unixperf -forkwait -loop 100000 -repeat 2");
    let keyed = |run: &str, key: &str| edit(&d.join(run).join("test_list"), |t| format!("key={key} {t}"));
    keyed("worse", "fw");
    let (code, reason) = verdict(d, &["base", "worse", "r1"]);
    assert_eq!(code, Some(125), "a key on one side only: {reason}");
    keyed("base", "other");
    let (code, reason) = verdict(d, &["base", "worse", "r2"]);
    assert_eq!(code, Some(125), "two keys: {reason}");
    edit(&d.join("base/test_list"), |t| t.replace("key=other", "key=fw"));
    let (code, reason) = verdict(d, &["base", "worse", "r3"]);
    assert_eq!(code, Some(1), "one key: {reason}");
    let (text, _, _) = compared(d, &["base", "worse", "r4"]);
    let json = fs::read_to_string(d.join("r4/results.json")).unwrap();
    assert!(
        text.contains(
            "WARNING: forkwait: the runs differ in command: 'unixperf -forkwait -loop 200000 -repeat 2' vs \
             'unixperf -forkwait -loop 100000 -repeat 2'; declared the same test (key=fw in both test lists): \
             compared; they did different amounts of work"
        ),
        "{text}"
    );
    assert!(text.contains("-5.9% ops/s (significant)"), "{text}");
    assert!(json.contains("key=fw in both test lists"), "{json}");
}

const PRFCMP: &str = env!("CARGO_BIN_EXE_prfcmp");
const UPRUN: &str = env!("CARGO_BIN_EXE_uprun");
const UPSRUN: &str = env!("CARGO_BIN_EXE_upsrun");

// Regression test of issue 31: the hint of a test directory given to upcmp named
// prfcmp paths that fail on repeated tests (the profile is under TEST/r1).
#[test]
fn issue_31_prfcmp_hint_works_with_repetitions() {
    let tmp = verdict_runs(&["base", "better"]);
    let d = tmp.path();
    let o = run_in(d, UPCMP, &["base/forkwait", "better/forkwait", "r"]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    let hint = "compare the two tests' profiles with prfcmp base/forkwait/r1 better/forkwait/r1";
    assert!(err.contains(hint), "{err}");
    let o = run_in(d, PRFCMP, &["base/forkwait/r1", "better/forkwait/r1"]);
    assert!(o.status.success(), "the hint's command fails: {}", stderr(&o));
}

// Regression test of issue 31: a run compared with itself was not warned about.
#[test]
fn issue_31_same_run_twice_is_warned() {
    let tmp = verdict_runs(&["base"]);
    let o = run_in(tmp.path(), UPCMP, &["base", "./base/", "r"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = crate::util::stdout(&o);
    assert!(
        text.contains("WARNING: run 1 (base) and run 2 (./base/) are the same run: every change below is zero"),
        "{text}"
    );
}

// Regression test of issue 31: an existing file as RESULTS_DIR was said to have no
// upcmp-results file; it is a file, and that is said.
#[test]
fn issue_31_results_dir_that_is_a_file_is_named() {
    let tmp = verdict_runs(&["base", "better"]);
    let d = tmp.path();
    fs::write(d.join("notes.txt"), "mine\n").unwrap();
    let o = run_in(d, UPCMP, &["base", "better", "notes.txt"]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(
        err.contains("notes.txt (RESULTS_DIR) is an existing file, not a directory"),
        "{err}"
    );
    assert_eq!(fs::read_to_string(d.join("notes.txt")).unwrap(), "mine\n");
}

// Regression test of issue 31: `uprun rX auto` said only "reading rX: No such file".
#[test]
fn issue_31_swapped_uprun_arguments_name_the_order() {
    let tmp = tempdir();
    for tool in [UPRUN, UPSRUN] {
        let o = run_in(tmp.path(), tool, &["rX", "auto"]);
        assert_eq!(o.status.code(), Some(2));
        let err = stderr(&o);
        let name = Path::new(tool).file_name().unwrap().to_str().unwrap();
        assert!(err.contains("the arguments look swapped"), "{err}");
        assert!(err.contains(&format!("{name} takes VMLINUX first")), "{err}");
        assert!(err.trim_end().ends_with(&format!("{name} auto rX")), "{err}");
        assert!(!tmp.path().join("auto").exists());
    }
}

// Regression test of issue 31: a test_list NAME with a space was refused without
// saying that spaces are not allowed.
#[test]
fn issue_31_test_list_name_with_a_space() {
    let tmp = tempdir();
    fs::write(tmp.path().join("tl"), "my test: true\n").unwrap();
    let o = run_in(tmp.path(), UPRUN, &["auto", "out", "--test-list", "tl"]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(err.contains("tl:1"), "{err}");
    assert!(err.contains("spaces are not allowed"), "{err}");
    assert!(!tmp.path().join("out").exists());
}

// Regression test of issue 31: recordings of different lengths, and one with call
// stacks against one without, were compared without a word.
#[test]
fn issue_31_perf_recordings_of_other_lengths_and_stacks() {
    let tmp = tempdir();
    let d = tmp.path();
    let a = fs::read_to_string(testdata("import/a.perf-script")).unwrap();
    fs::write(d.join("short"), &a).unwrap();
    // The last sample 45 ms later: 5 ms against 50 ms.
    fs::write(d.join("long"), a.replace("3223.460760", "3223.505000")).unwrap();
    let o = run_in(d, UPCMP, &["--perf", "short", "long", "r1"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = crate::util::stdout(&o);
    assert!(
        text.contains("WARNING: the recordings are 0.01 s and 0.05 s long"),
        "{text}"
    );
    assert!(!text.contains("call stacks"), "{text}");

    let o = run_in(
        d,
        UPCMP,
        &[
            "--perf",
            testdata("import/g.perf-script").to_str().unwrap(),
            "short",
            "r2",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let text = crate::util::stdout(&o);
    assert!(
        text.contains("only recording 1 has call stacks (recording 2 was made without perf record -g): no differential flame graph"),
        "{text}"
    );
}

// Regression test of issue 31: upsrun's lines said `uprun:`.
#[test]
fn issue_31_upsrun_speaks_as_upsrun() {
    if !crate::util::perf_usable(true) {
        return;
    }
    let _lock = crate::util::perf_lock();
    let tmp = tempdir();
    fs::write(tmp.path().join("tl"), "t: true\n").unwrap();
    let o = run_in(tmp.path(), UPSRUN, &["auto", "out", "--test-list", "tl"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = crate::util::stdout(&o) + &stderr(&o);
    assert!(out.lines().any(|l| l.starts_with("upsrun: ")), "{out}");
    assert!(!out.lines().any(|l| l.starts_with("uprun")), "{out}");
    // The run keeps the kernel's settings; this machine has /proc/config.gz.
    let settings = fs::read_to_string(tmp.path().join("out/settings")).unwrap();
    assert!(settings.starts_with("upcmp-settings 1\n") && settings.ends_with("\nend\n"));
    for key in ["\nconfig.CONFIG_", "\ncmdline ", "\nsysctl.vm.swappiness "] {
        assert!(settings.contains(key), "{key}: {settings}");
    }
}

/// The System section of a text report: from its title to the first blank line.
fn system_section(text: &str) -> String {
    let lines: Vec<&str> = text
        .lines()
        .skip_while(|l| *l != "System")
        .take_while(|l| !l.is_empty())
        .collect();
    lines.join("\n") + "\n"
}

/// Runs base and better of testdata/verdict/ with the settings files `s1` and `s2`
/// (None: none, as a run written before them).
fn runs_with_settings(s1: Option<&str>, s2: Option<&str>) -> tempfile::TempDir {
    let tmp = verdict_runs(&["base", "better"]);
    for (run, s) in [("base", s1), ("better", s2)] {
        if let Some(s) = s {
            fs::write(tmp.path().join(run).join("settings"), s).unwrap();
        }
    }
    tmp
}

// Issue 31: what differs between two machines or boots beyond the system description
// (kernel configuration, mitigations, sysctls, ...) is in the System section, one line
// each; golden file.
#[test]
fn issue_31_kernel_settings_are_diffed() {
    let s1 = fs::read_to_string(testdata("settings/run1")).unwrap();
    let s2 = fs::read_to_string(testdata("settings/run2")).unwrap();
    let tmp = runs_with_settings(Some(&s1), Some(&s2));
    let (text, _, page) = compared(tmp.path(), &["base", "better", "r"]);
    crate::util::assert_golden(&system_section(&text), "settings/expected_system");
    assert!(page.contains("Kernel settings that differ (10)"), "{page}");
    assert!(page.contains("CONFIG_PREEMPT_VOLUNTARY"));
    let json: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(tmp.path().join("r/results.json")).unwrap()).unwrap();
    let d = json["setting_differences"].as_array().unwrap();
    assert_eq!(d.len(), 10);
    assert_eq!(d[0]["key"], "cmdline");
}

/// The lines of `text` from the one that starts with `from` to the first blank line
/// after a line that starts with `to` (both kept).
fn section(text: &str, from: &str, to: &str) -> String {
    let lines: Vec<&str> = text.lines().skip_while(|l| !l.starts_with(from)).collect();
    let at = lines.iter().position(|l| l.starts_with(to)).unwrap_or(lines.len());
    let end = lines[at..]
        .iter()
        .position(|l| l.is_empty())
        .map_or(lines.len(), |k| at + k);
    lines[..end].join("\n") + "\n"
}

// Issue 31: the mail and markdown reports show the kernel settings that differ too,
// their names and values escaped (no control character of a run's file reaches them; in
// markdown `|` and `_` cannot break the table); golden files.
#[test]
fn issue_31_kernel_settings_in_mail_and_markdown() {
    let s1 = fs::read_to_string(testdata("settings/run1")).unwrap();
    let s2 = fs::read_to_string(testdata("settings/run2")).unwrap();
    let s2 = s2.replace(
        "sysctl.kernel.numa_balancing 0",
        "sysctl.kernel.numa_balancing 0|\x1b[31mred",
    );
    let tmp = runs_with_settings(Some(&s1), Some(&s2));
    let o = run_in(tmp.path(), UPCMP, &["base", "better", "r1", "--format", "mail"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let mail = crate::util::stdout(&o);
    assert!(mail.lines().all(|l| l.chars().count() <= 80), "{mail}");
    assert!(!mail.contains('\x1b'), "{mail}");
    crate::util::assert_golden(&section(&mail, "System", "  Kernel settings"), "settings/expected_mail");
    let o = run_in(tmp.path(), UPCMP, &["base", "better", "r2", "--format", "markdown"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let md = crate::util::stdout(&o);
    assert!(!md.contains('\x1b'), "{md}");
    crate::util::assert_golden(&section(&md, "System:", "| Setting"), "settings/expected_markdown");
}

// Issue 31: hundreds of configuration differences are counted in the text, all of them
// in the page and the JSON; a run without a settings file still compares, with a note.
#[test]
fn issue_31_many_config_differences_and_old_runs() {
    let config = |v: &str| {
        let mut s = "upcmp-settings 1\n".to_string();
        for k in 0..300 {
            s += &format!("config.CONFIG_OPT{k:03} {v}\n");
        }
        s + "end\n"
    };
    let tmp = runs_with_settings(Some(&config("y")), Some(&config("m")));
    let (text, _, page) = compared(tmp.path(), &["base", "better", "r"]);
    let system = system_section(&text);
    assert!(
        system.contains(
            "kernel config: 300 options differ, the first: CONFIG_OPT000: y -> m, CONFIG_OPT001: y -> m, \
             CONFIG_OPT002: y -> m, CONFIG_OPT003: y -> m, CONFIG_OPT004: y -> m; all of them in results.html and \
             results.json"
        ),
        "{system}"
    );
    assert!(!system.contains("CONFIG_OPT299"), "{system}");
    assert!(page.contains("CONFIG_OPT299"));
    let json = fs::read_to_string(tmp.path().join("r/results.json")).unwrap();
    assert!(json.contains("config.CONFIG_OPT299"));
    // The mail counts them as the text does; markdown folds all of them into a block.
    let o = run_in(tmp.path(), UPCMP, &["base", "better", "m", "--format", "mail"]);
    let mail = crate::util::stdout(&o);
    assert!(
        mail.contains("    kernel config: 300 options differ, the first: CONFIG_OPT000"),
        "{mail}"
    );
    assert!(
        !mail.contains("CONFIG_OPT299") && mail.lines().all(|l| l.chars().count() <= 80),
        "{mail}"
    );
    let o = run_in(tmp.path(), UPCMP, &["base", "better", "md", "--format", "markdown"]);
    let md = crate::util::stdout(&o);
    assert!(
        md.contains(
            "<details><summary>Kernel configuration: 300 options differ</summary>\n\n| Option | Run 1 | Run 2 |"
        ),
        "{md}"
    );
    assert!(md.contains("| CONFIG\\_OPT299 | y | m |\n\n</details>"), "{md}");

    let tmp = runs_with_settings(None, Some(&config("m")));
    let (text, _, _) = compared(tmp.path(), &["base", "better", "r"]);
    assert!(
        text.contains("WARNING: run 1 (base) has no settings file (written before runs kept the kernel's"),
        "{text}"
    );
    // A value with a terminal's escape sequence reaches no terminal.
    let hostile = "upcmp-settings 1\ncmdline quiet \x1b]0;owned\x07\nend\n";
    let tmp = runs_with_settings(Some(hostile), Some("upcmp-settings 1\ncmdline quiet\nend\n"));
    let (text, _, _) = compared(tmp.path(), &["base", "better", "r"]);
    assert!(text.contains("cmdline: quiet ?]0;owned? -> quiet"), "{text}");
    assert!(!text.contains('\x1b'));
    let tmp = runs_with_settings(Some("upcmp-settings 9\nend\n"), Some(&config("m")));
    let o = run_in(tmp.path(), UPCMP, &["base", "better", "r"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("base/settings: expected a first line 'upcmp-settings 1'"),
        "{}",
        stderr(&o)
    );
}

// Regression test of issue 31: upsrun's notes in a test's output, and its restore message,
// said `uprun:`.
#[test]
fn issue_31_upsrun_notes_in_the_output_say_upsrun() {
    if !crate::util::perf_usable(true) {
        return;
    }
    let _lock = crate::util::perf_lock();
    let tmp = tempdir();
    fs::write(
        tmp.path().join("tl"),
        "loud: echo first; yes 0123456789abcdefghijklmnopqrstuvwxyz | head -c 1500000; echo last\n",
    )
    .unwrap();
    let o = run_in(
        tmp.path(),
        UPSRUN,
        &["auto", "out", "--test-list", "tl", "--max-output-mib", "1"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let out = crate::util::stdout(&o) + &stderr(&o);
    assert!(!out.contains("uprun:"), "{out}");
    let upout = fs::read(tmp.path().join("out/loud/upout")).unwrap();
    let upout = String::from_utf8_lossy(&upout);
    assert!(upout.contains("\n[upsrun: "), "{}", upout.len());
    assert!(!upout.contains("[uprun: "));
}
