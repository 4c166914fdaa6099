//! upcmp and prfcmp end to end: the seed's example as a golden test, and bad input.

use crate::util::{assert_golden, copy_tree, run_in, stderr, stdout, tempdir, testdata};
use std::fs;
use std::path::Path;

const UPCMP: &str = env!("CARGO_BIN_EXE_upcmp");
const PRFCMP: &str = env!("CARGO_BIN_EXE_prfcmp");

/// The rows of a report whose first word is one of `names`, split on white space.
fn rows_named(text: &str, names: &[&str]) -> Vec<Vec<String>> {
    text.lines()
        .map(|l| l.split_whitespace().map(str::to_string).collect::<Vec<_>>())
        .filter(|w| w.first().is_some_and(|f| names.contains(&f.as_str())))
        .collect()
}

/// Copies the fixture runs into `dir` (relative paths keep the report stable).
fn copy_fixture(dir: &Path) {
    for run in ["outdir1", "outdir2"] {
        copy_tree(&testdata(&format!("forkwait/{run}")), &dir.join(run));
    }
}

#[test]
fn seed_example_every_number() {
    let tmp = tempdir();
    copy_fixture(tmp.path());
    let out = run_in(tmp.path(), UPCMP, &["outdir1", "outdir2", "1vs2"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report = fs::read_to_string(tmp.path().join("1vs2/results")).unwrap();
    assert_eq!(report, stdout(&out), "the printed report is the results file");
    let seed = fs::read_to_string(testdata("forkwait/seed_example.txt")).unwrap();

    // The benchmark line, the summary lines and every function row, in order.
    let fold = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(fold(&report).contains("425.0 421.0 ( 0.99) fork, child immediately exits, parent waits"));
    for line in [
        "Number of cpu's 2 2",
        "Elapsed time 1745.514 1825.126 1.05",
        "Idle time 866.599 907.122 1.05",
        "CPU time 876.987 915.842 1.04",
    ] {
        assert!(report.lines().any(|l| fold(l) == line), "missing '{line}' in\n{report}");
    }
    let seed_rows: Vec<Vec<String>> = seed
        .lines()
        .skip_while(|l| !l.starts_with("-----------------------------------------------------------------------------"))
        .skip(1)
        .take_while(|l| !l.starts_with("Notes:"))
        .map(|l| l.split_whitespace().map(str::to_string).collect())
        .collect();
    assert_eq!(seed_rows.len(), 41);
    let names: Vec<&str> = seed_rows.iter().map(|r| r[0].as_str()).collect();
    let got = rows_named(&report, &names);
    let got_five: Vec<Vec<String>> = got.iter().map(|r| r[..5].to_vec()).collect();
    assert_eq!(got_five, seed_rows);
    // After the seed's columns, each row's verdict. One run a side: a change beyond the
    // sampling error is "sampling only", never "significant" (run-to-run noise was not
    // measured).
    let verdict = |r: &Vec<String>| r[5..].join(" ");
    assert!(
        got.iter()
            .all(|r| verdict(r) == "sampling only" || verdict(r) == "noise"),
        "{got:?}"
    );
    // bcopy's 22.604 s (+15%) on ~1.5 million samples of 0.1 ms is far beyond the sampling
    // error (1.96 x 0.1 ms x sqrt(1.5e6) = 0.24 s), but not beyond the run-to-run spread
    // the other functions of the comparison show (about 4%, docs/formulas.md); bzero's
    // -26% is beyond both. dupreg's 0.037 s is within either.
    assert_eq!(verdict(&got[0]), "noise");
    assert_eq!(verdict(&rows_named(&report, &["bzero"])[0]), "sampling only");
    assert_eq!(verdict(&rows_named(&report, &["dupreg"])[0]), "noise");
    assert!(report.contains("Noise: one run a side"));
    assert!(report.contains(
        "Total CPU time +4.43%: sampling only against its sampling error and the functions' run-to-run spread \
         summed (one run a side: the total's own run-to-run noise was not measured)"
    ));
    assert!(report.contains("over the 41 tested functions above the cutoff in this report"));
    // Lost samples (the example's time that is neither CPU nor idle) get their own line.
    assert!(report.lines().any(|l| fold(l) == "Lost samples 1.928 2.162 1.12"));
    // Nothing below the cutoff and no idle function is listed.
    assert!(!report.contains("below_cutoff_"));
    assert!(!report
        .lines()
        .any(|l| l.starts_with("idle ") || l.starts_with("checkRunq")));
}

#[test]
fn seed_example_golden_file() {
    let tmp = tempdir();
    copy_fixture(tmp.path());
    let out = run_in(tmp.path(), UPCMP, &["outdir1", "outdir2", "1vs2", "--quiet"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let got = fs::read_to_string(tmp.path().join("1vs2/results")).unwrap();
    assert_golden(&got, "forkwait/expected_results");
}

#[test]
fn machine_readable_results_carry_every_function() {
    let tmp = tempdir();
    copy_fixture(tmp.path());
    let out = run_in(tmp.path(), UPCMP, &["outdir1", "outdir2", "r", "-q"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let csv = fs::read_to_string(tmp.path().join("r/results.csv")).unwrap();
    let functions: Vec<&str> = csv.lines().filter(|l| l.starts_with("forkwait,function,")).collect();
    // 41 listed + the functions below the cutoff of either run; the idle pair is left out.
    let mut names = std::collections::BTreeSet::new();
    for run in ["outdir1", "outdir2"] {
        let prfout = fs::read_to_string(testdata(&format!("forkwait/{run}/forkwait/prfout"))).unwrap();
        names.extend(
            prfout
                .lines()
                .filter_map(|l| l.split_once("] ").map(|(_, n)| n.to_string())),
        );
    }
    let non_idle = names.len() - 2;
    assert_eq!(functions.len(), non_idle);
    assert!(
        functions[0].starts_with("forkwait,function,bcopy,146.961"),
        "{}",
        functions[0]
    );
    let json: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(tmp.path().join("r/results.json")).unwrap()).unwrap();
    let rows = json["tests"][0]["outcome"]["profile"]["rows"].as_array().unwrap();
    assert_eq!(rows.len(), non_idle);
    assert_eq!(rows.iter().filter(|r| r["listed"] == true).count(), 41);
    let cpu1 = json["tests"][0]["outcome"]["profile"]["run1"]["cpu"].as_f64().unwrap();
    assert!((cpu1 - 876.987).abs() < 1e-6);
}

#[test]
fn prfcmp_on_the_fixture_profiles() {
    let tmp = tempdir();
    let p1 = testdata("forkwait/outdir1/forkwait/prfout");
    let p2 = testdata("forkwait/outdir2/forkwait");
    let out = run_in(
        tmp.path(),
        PRFCMP,
        &[p1.to_str().unwrap(), p2.to_str().unwrap(), "--cutoff", "1"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    // At 1 %, bcopy (16.8 %), user, mutex_spinunlock, ... are listed; pagealloc (0.6 %) is not.
    assert!(text.contains("cutoff=1.00%"));
    assert_eq!(rows_named(&text, &["bcopy"])[0][3], "22.604");
    assert!(rows_named(&text, &["pagealloc"]).is_empty());
    assert!(!rows_named(&text, &["bzero"]).is_empty());
}

#[test]
fn results_dir_rotation_never_touches_foreign_directories() {
    let tmp = tempdir();
    copy_fixture(tmp.path());
    let args = ["outdir1", "outdir2", "res", "-q"];
    assert!(run_in(tmp.path(), UPCMP, &args).status.success());
    assert!(run_in(tmp.path(), UPCMP, &args).status.success());
    assert!(
        tmp.path().join("res.old/results").is_file(),
        "the first results became res.old"
    );
    // A third run keeps both earlier ones, and says what moved where.
    let out = run_in(tmp.path(), UPCMP, &args);
    assert!(
        stderr(&out).contains("upcmp: kept the earlier results: moved res.old to res.old.2\n"),
        "{}",
        stderr(&out)
    );
    assert!(tmp.path().join("res.old.2/results").is_file());
    // A directory of the user's own is refused and left as it was.
    fs::create_dir(tmp.path().join("mine")).unwrap();
    fs::write(tmp.path().join("mine/notes"), "keep").unwrap();
    let out = run_in(tmp.path(), UPCMP, &["outdir1", "outdir2", "mine"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("will not move or delete it"), "{}", stderr(&out));
    assert_eq!(fs::read_to_string(tmp.path().join("mine/notes")).unwrap(), "keep");
    assert!(!tmp.path().join("mine.old").exists());
}

/// Runs upcmp on the fixture after `damage`, and checks for exit 2, a message
/// containing `expect`, and no results directory.
fn bad_input(damage: impl FnOnce(&Path), expect: &str) {
    let tmp = tempdir();
    copy_fixture(tmp.path());
    damage(tmp.path());
    let out = run_in(tmp.path(), UPCMP, &["outdir1", "outdir2", "res"]);
    assert_eq!(out.status.code(), Some(2), "stderr: {}", stderr(&out));
    assert!(
        stderr(&out).contains(expect),
        "expected '{expect}' in: {}",
        stderr(&out)
    );
    assert!(stdout(&out).is_empty());
    assert!(!tmp.path().join("res").exists(), "no half-written results");
    let leftovers: Vec<_> = fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n != "outdir1" && n != "outdir2")
        .collect();
    assert!(leftovers.is_empty(), "nothing but the two runs: {leftovers:?}");
}

#[test]
fn missing_directory() {
    bad_input(
        |d| fs::remove_dir_all(d.join("outdir2")).unwrap(),
        "outdir2: no such directory",
    );
}

#[test]
fn directory_that_is_not_a_run() {
    bad_input(
        |d| fs::remove_file(d.join("outdir1/upcmp-run")).unwrap(),
        "outdir1: not a uprun output directory",
    );
}

#[test]
fn truncated_prfout() {
    bad_input(
        |d| {
            let p = d.join("outdir2/forkwait/prfout");
            let text = fs::read_to_string(&p).unwrap();
            fs::write(&p, &text[..text.len() / 2]).unwrap();
        },
        "outdir2/forkwait/prfout:",
    );
}

#[test]
fn malformed_prfout_names_line_and_column() {
    bad_input(
        |d| {
            let p = d.join("outdir1/forkwait/prfout");
            let text = fs::read_to_string(&p)
                .unwrap()
                .replace("wall-sec 872.757000", "wall-sec 872,757");
            fs::write(&p, text).unwrap();
        },
        "outdir1/forkwait/prfout:7:13: expected end of line",
    );
}

#[test]
fn wrong_format_version() {
    bad_input(
        |d| {
            let p = d.join("outdir1/upcmp-run");
            let text = fs::read_to_string(&p).unwrap().replace("format: 1", "format: 9");
            fs::write(&p, text).unwrap();
        },
        "format 9, but this upcmp reads formats 1 to 3",
    );
}

#[test]
fn empty_prfout() {
    bad_input(
        |d| fs::write(d.join("outdir1/forkwait/prfout"), "").unwrap(),
        "it is empty",
    );
}

#[test]
fn empty_test_list() {
    bad_input(
        |d| fs::write(d.join("outdir1/test_list"), "").unwrap(),
        "outdir1/test_list: expected at least one test line",
    );
}

#[test]
fn no_test_in_common() {
    bad_input(
        |d| {
            fs::write(d.join("outdir2/test_list"), "pipeping1\n").unwrap();
            fs::rename(d.join("outdir2/forkwait"), d.join("outdir2/pipeping1")).unwrap();
        },
        "have no test in common (run 1: forkwait; run 2: pipeping1)",
    );
}

#[test]
fn a_test_in_one_run_only_is_reported_not_an_error() {
    let tmp = tempdir();
    copy_fixture(tmp.path());
    let d = tmp.path();
    fs::write(d.join("outdir2/test_list"), "forkwait\nextra: true\n").unwrap();
    copy_tree(&d.join("outdir2/forkwait"), &d.join("outdir2/extra"));
    let out = run_in(d, UPCMP, &["outdir1", "outdir2", "res"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("Only in run 2 (outdir2/extra): nothing to compare."),
        "{}",
        stdout(&out)
    );
}

#[test]
fn different_machines_are_warned_about_at_the_top() {
    let tmp = tempdir();
    copy_fixture(tmp.path());
    let p = tmp.path().join("outdir2/system");
    let text = fs::read_to_string(&p)
        .unwrap()
        .replace("cpus-online: 2", "cpus-online: 4")
        .replace("kernel-release: 6.2", "kernel-release: 6.5");
    fs::write(&p, text).unwrap();
    let out = run_in(tmp.path(), UPCMP, &["outdir1", "outdir2", "res"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.starts_with("WARNING: "), "{text}");
    assert!(text.contains("WARNING: the runs differ in cpus-online: '2' vs '4'"));
    assert!(text.contains("WARNING: the runs differ in kernel-release: '6.2' vs '6.5'"));
    // A busy machine in one run is a difference too; a small wobble of the load is not.
    let p = tmp.path().join("outdir1/system");
    let text = fs::read_to_string(&p)
        .unwrap()
        .replace("load-average: 0.00", "load-average: 2.50");
    fs::write(&p, text).unwrap();
    let out = run_in(tmp.path(), UPCMP, &["outdir1", "outdir2", "res"]);
    assert!(stdout(&out).contains("WARNING: the runs differ in load-average (1 min): '2.50' vs '0.00'"));
}

/// Section 1 on two real reports of the original unixperf: every operation of both, in
/// order, with R2/R1 as printed.
#[test]
fn benchmark_section_on_real_unixperf_reports() {
    use upcmp::compare::bench::compare_bench;
    use upcmp::report::text::render_bench;
    use upcmp_parsers::upout::parse_upout;
    for (a, b) in [
        ("zap.62patched.n32", "zap.65aug3c.n32"),
        ("blitzen.62mr.n32", "blitzen.65jul13b.n32"),
    ] {
        let read = |n: &str| {
            let p = testdata(&format!("unixperf/{n}"));
            parse_upout(&fs::read_to_string(&p).unwrap(), &p.display().to_string()).unwrap()
        };
        let (r1, r2) = (read(a), read(b));
        let rows = compare_bench(std::slice::from_ref(&r1), std::slice::from_ref(&r2));
        let mut text = Vec::new();
        render_bench(&rows, &mut text).unwrap();
        let text = String::from_utf8(text).unwrap();
        // Every trep line of either report is a row; ratios are R2/R1 of the printed rates.
        for r in &rows {
            if let (Some(x), Some(y)) = (r.run1, r.run2) {
                assert!((r.speed_ratio.unwrap() - y / x).abs() < 1e-12);
            }
        }
        assert!(rows.len() >= r1.len().max(r2.len()));
        assert_golden(&text, &format!("unixperf/{a}-vs-{b}.section1"));
    }
}

#[test]
fn every_format_matches_its_golden_file() {
    let tmp = tempdir();
    copy_fixture(tmp.path());
    for (format, ext) in [("csv", "csv"), ("json", "json"), ("markdown", "md")] {
        let out = run_in(
            tmp.path(),
            UPCMP,
            &["outdir1", "outdir2", &format!("r-{ext}"), "--format", format],
        );
        assert!(out.status.success(), "{}", stderr(&out));
        assert_golden(&stdout(&out), &format!("forkwait/expected_results.{ext}"));
    }
    // The files in the results directory are the same tables.
    assert_golden(
        &fs::read_to_string(tmp.path().join("r-csv/results.csv")).unwrap(),
        "forkwait/expected_results.csv",
    );
    assert_golden(
        &fs::read_to_string(tmp.path().join("r-csv/results.json")).unwrap(),
        "forkwait/expected_results.json",
    );
    // prfcmp, on imported folded stacks.
    let import = testdata("import");
    for (format, ext) in [("text", "txt"), ("csv", "csv"), ("json", "json"), ("markdown", "md")] {
        let out = run_in(&import, PRFCMP, &["a.folded", "b.folded", "--format", format]);
        assert!(out.status.success(), "{}", stderr(&out));
        assert_golden(&stdout(&out), &format!("import/expected_prfcmp.{ext}"));
    }
}

/// `results.parquet` (with `--features parquet`) holds the CSV's table: same columns, same
/// rows, same values, nulls where the CSV is empty.
#[test]
fn results_parquet_holds_the_csv_table() {
    let tmp = tempdir();
    copy_fixture(tmp.path());
    let out = run_in(tmp.path(), UPCMP, &["outdir1", "outdir2", "r", "-q"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let parquet = tmp.path().join("r/results.parquet");
    #[cfg(not(feature = "parquet"))]
    assert!(!parquet.exists(), "built without the parquet feature");
    #[cfg(feature = "parquet")]
    {
        use polars::prelude::*;
        use polars_io::SerReader;
        let df = polars_io::parquet::read::ParquetReader::new(fs::File::open(&parquet).unwrap())
            .finish()
            .unwrap();
        let csv = fs::read_to_string(tmp.path().join("r/results.csv")).unwrap();
        let mut lines = csv.lines();
        let header: Vec<&str> = lines.next().unwrap().split(',').collect();
        let names: Vec<&str> = df.get_column_names().iter().map(|n| n.as_str()).collect();
        assert_eq!(names, header);
        let rows: Vec<&str> = lines.collect();
        assert_eq!(df.height(), rows.len());
        assert!(df.height() > 40);
        for (i, line) in rows.iter().enumerate() {
            let fields = crate::util::csv_fields(line);
            assert_eq!(fields.len(), header.len(), "{line}");
            for (col, field) in header.iter().zip(&fields) {
                let v = df.column(col).unwrap().get(i).unwrap();
                let got = match v {
                    AnyValue::Null => String::new(),
                    AnyValue::Float64(x) => format!("{x}"),
                    AnyValue::Boolean(b) => b.to_string(),
                    AnyValue::String(s) => s.to_string(),
                    AnyValue::StringOwned(s) => s.to_string(),
                    other => panic!("{col}: unexpected {other:?}"),
                };
                assert_eq!(&got, field, "row {i} column {col}");
            }
        }
    }
}
