//! The Parquet dataset of many runs (issue 33): `upcmp export`, its layout and tables, re-export
//! replacing, concurrent exporters, and the group query of docs/dataset.md in DuckDB.
#![cfg(feature = "parquet")]

use crate::util::{copy_tree, repo, run_in, stderr, tempdir, testdata};
use polars::prelude::*;
use std::fs;
use std::path::{Path, PathBuf};

const UPCMP: &str = env!("CARGO_BIN_EXE_upcmp");

/// Every `.parquet` file under `dir`, sorted.
fn parquet_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// A table read through polars' lazy scan with hive partitions.
/// A table of the dataset at `dataset`, read by polars with its hive partitions as strings.
pub(crate) fn scan(dataset: &Path, table: &str) -> DataFrame {
    let glob = format!("{}/{table}/**/*.parquet", dataset.display());
    let args = ScanArgsParquet {
        // The partitions are strings (a kernel `6.1` is no number), never dates.
        hive_options: HiveOptions {
            schema: Some(std::sync::Arc::new(Schema::from_iter(
                ["test", "kernel", "host"].map(|k| Field::new(k.into(), DataType::String)),
            ))),
            try_parse_dates: false,
            ..HiveOptions::new_enabled()
        },
        ..Default::default()
    };
    LazyFrame::scan_parquet(PlRefPath::new(glob.as_str()), args)
        .unwrap()
        .collect()
        .unwrap()
}

fn export(cwd: &Path, args: &[&str]) {
    let mut a = vec!["export"];
    a.extend(args);
    let out = run_in(cwd, UPCMP, &a);
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn export_writes_partitioned_tables_and_reexport_replaces() {
    let tmp = tempdir();
    let run1 = testdata("demo/run1");
    let r1 = run1.to_str().unwrap();
    export(tmp.path(), &[r1, "--to", "ds", "--label", "commit=abc"]);
    let ds = tmp.path().join("ds");
    let files = parquet_files(&ds);
    // 9 tests, 6 tables, one file each; nothing else (no temporary file left).
    assert_eq!(files.len(), 54, "{files:?}");
    assert!(files.iter().all(|f| f.extension().is_some_and(|e| e == "parquet")));
    assert!(ds
        .join("functions/test=getpid/kernel=6.18.44-fc-v1045/host=vm")
        .is_dir());
    let functions = scan(&ds, "functions");
    let before = functions.height();
    assert!(before > 100);
    // The hive partition is a column; the seconds are the profile's (user in getpid: 8.825 s).
    let user = functions
        .lazy()
        .filter(col("test").eq(lit("getpid")).and(col("function").eq(lit("user"))))
        .select([col("seconds")])
        .collect()
        .unwrap();
    assert_eq!(user.height(), 1);
    let s = user.column("seconds").unwrap().f64().unwrap().get(0).unwrap();
    assert!((s - 8.825).abs() < 1e-9, "{s}");
    let labels = scan(&ds, "labels");
    assert_eq!(labels.height(), 9, "one label per test file");
    // Again, with another label: the same files, replaced, no row twice.
    export(tmp.path(), &[r1, "--to", "ds", "--label", "commit=def"]);
    assert_eq!(parquet_files(&ds), files);
    assert_eq!(scan(&ds, "functions").height(), before);
    let labels = scan(&ds, "labels");
    let v = labels.column("value").unwrap().str().unwrap().clone();
    let values: Vec<_> = (0..v.len()).map(|i| v.get(i).unwrap().to_string()).collect();
    assert!(values.iter().all(|v| *v == "def"), "{values:?}");
}

#[test]
fn export_refuses_a_bad_label_and_writes_nothing() {
    let tmp = tempdir();
    let run1 = testdata("demo/run1");
    let out = run_in(
        tmp.path(),
        UPCMP,
        &["export", run1.to_str().unwrap(), "--to", "ds", "--label", "nokey"],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("expected KEY=VALUE"), "{}", stderr(&out));
    assert!(!tmp.path().join("ds").exists());
}

/// Two processes export into one dataset at once, over and over: every file stays whole and
/// every run's rows are there exactly once.
#[test]
fn concurrent_exports_lose_and_corrupt_nothing() {
    let tmp = tempdir();
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    copy_tree(&testdata("demo/run1"), &a);
    copy_tree(&testdata("demo/run2"), &b);
    let spawn = |run: &Path| {
        let run = run.to_path_buf();
        let cwd = tmp.path().to_path_buf();
        std::thread::spawn(move || {
            for _ in 0..5 {
                export(&cwd, &[run.to_str().unwrap(), "--to", "ds"]);
            }
        })
    };
    let (ta, tb) = (spawn(&a), spawn(&b));
    ta.join().unwrap();
    tb.join().unwrap();
    let ds = tmp.path().join("ds");
    assert_eq!(parquet_files(&ds).len(), 108);
    let runs = scan(&ds, "runs");
    let ids = runs.column("run_id").unwrap().n_unique().unwrap();
    assert_eq!(ids, 2);
    // Each run once: as many function rows as one export of each alone gives.
    let one = tempdir();
    for run in [&a, &b] {
        export(one.path(), &[run.to_str().unwrap(), "--to", "ds"]);
    }
    assert_eq!(
        scan(&ds, "functions").height(),
        scan(&one.path().join("ds"), "functions").height()
    );
}

/// The group query of docs/dataset.md, run by DuckDB on the dataset, gives upcmp's per-function
/// means (its `run1` and `run2` columns) to 1e-9. Skipped without Python's duckdb unless
/// `UPCMP_REQUIRE_DUCKDB=1` (CI installs it).
#[test]
fn duckdb_means_agree_with_upcmp() {
    let have = std::process::Command::new("python3")
        .args(["-c", "import duckdb"])
        .status()
        .is_ok_and(|s| s.success());
    if !have {
        assert!(
            std::env::var("UPCMP_REQUIRE_DUCKDB").as_deref() != Ok("1"),
            "python3 -c 'import duckdb' failed"
        );
        eprintln!("skipped: no duckdb for python3 (pip install duckdb)");
        return;
    }
    let tmp = tempdir();
    let (r1, r2) = (testdata("demo/run1"), testdata("demo/run2"));
    export(tmp.path(), &[r1.to_str().unwrap(), "--to", "ds", "--label", "side=a"]);
    export(tmp.path(), &[r2.to_str().unwrap(), "--to", "ds", "--label", "side=b"]);
    let out = run_in(
        tmp.path(),
        UPCMP,
        &[r1.to_str().unwrap(), r2.to_str().unwrap(), "res", "-q"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let doc = fs::read_to_string(repo().join("docs/dataset.md")).unwrap();
    let sql = doc.split("```sql\n").nth(1).unwrap().split("```").next().unwrap();
    let sql = sql.replace("{DATASET}", &tmp.path().join("ds").display().to_string());
    let script = "import duckdb,sys\nfor r in duckdb.sql(sys.stdin.read()).fetchall(): print('\\t'.join(map(repr, r)))";
    let mut child = std::process::Command::new("python3")
        .args(["-c", script])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child.stdin.take().unwrap().write_all(sql.as_bytes()).unwrap();
    let got = child.wait_with_output().unwrap();
    assert!(got.status.success());
    let mut means = std::collections::HashMap::new();
    for line in String::from_utf8(got.stdout).unwrap().lines() {
        let f: Vec<&str> = line.split('\t').collect();
        let unq = |s: &str| s.trim_matches('\'').to_string();
        means.insert((unq(f[0]), unq(f[1]), unq(f[2])), f[3].parse::<f64>().unwrap());
    }
    let csv = fs::read_to_string(tmp.path().join("res/results.csv")).unwrap();
    let mut checked = 0;
    for line in csv.lines().skip(1) {
        let c = crate::util::csv_fields(line);
        if c[1] != "function" {
            continue;
        }
        for (side, v) in [("a", &c[3]), ("b", &c[4])] {
            let key = (side.to_string(), c[0].clone(), c[2].clone());
            if let (Some(m), Ok(v)) = (means.get(&key), v.parse::<f64>()) {
                assert!((m - v).abs() <= 1e-9, "{key:?}: duckdb {m}, upcmp {v}");
                checked += 1;
            }
        }
    }
    assert!(checked > 500, "only {checked} means compared");
}
