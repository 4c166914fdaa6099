//! `uprun --export DATASET --label K=V` (issue 33): a short live run, added to a dataset at
//! its end, reads back with the run's repetitions, label and function times.
#![cfg(feature = "parquet")]

use crate::dataset::scan;
use crate::util::{perf_usable, run_in, stderr, stdout, tempdir};
use polars::prelude::*;
use std::fs;

const UPRUN: &str = env!("CARGO_BIN_EXE_uprun");

#[test]
fn uprun_exports_the_completed_run() {
    if !perf_usable(true) {
        return;
    }
    let _perf = crate::util::perf_lock();
    let tmp = tempdir();
    // A command test: no unixperf needed.
    fs::write(
        tmp.path().join("test_list"),
        "spin: sh -c 'i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done'\n",
    )
    .unwrap();
    let out = run_in(
        tmp.path(),
        UPRUN,
        &["auto", "run1", "--runs", "2", "--export", "ds", "--label", "commit=abc"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("uprun: exported to ds as run "),
        "{}",
        stdout(&out)
    );
    let ds = tmp.path().join("ds");
    let runs = scan(&ds, "runs");
    assert_eq!(runs.height(), 2, "two repetitions: {runs}");
    let labels = scan(&ds, "labels");
    let v = labels
        .column("value")
        .unwrap()
        .str()
        .unwrap()
        .get(0)
        .unwrap()
        .to_string();
    assert_eq!(v, "abc");
    // Each repetition's function seconds add up to its CPU time outside idle and more.
    let f = scan(&ds, "functions");
    assert!(f.height() > 2);
    let total: f64 = f.column("seconds").unwrap().f64().unwrap().sum().unwrap();
    let cpu: f64 = runs.column("cpu_seconds").unwrap().f64().unwrap().sum().unwrap();
    assert!(total >= cpu - 1e-9 && cpu > 0.0, "functions {total} s, cpu {cpu} s");
    // A bad label is refused before anything runs.
    let out = run_in(
        tmp.path(),
        UPRUN,
        &["auto", "run2", "--export", "ds", "--label", "nokey"],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(!tmp.path().join("run2").exists());
}
