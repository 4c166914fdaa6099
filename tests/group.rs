//! Group comparisons of a dataset (issue 33): `upcmp DATASET --side K=V --side K=V RESULTS_DIR`,
//! every run of a side a repetition, the host a block. Checked by simulation against known
//! truth: hosts of different speed, a known change in one function.
#![cfg(feature = "parquet")]

use crate::util::{csv_fields, run_in, stderr, tempdir};
use std::fs;
use std::path::Path;

const UPCMP: &str = env!("CARGO_BIN_EXE_upcmp");

/// A seeded generator of normal deviates (xorshift64* and Box-Muller).
struct Normal(u64);

impl Normal {
    fn uniform(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        ((self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }
    fn next(&mut self) -> f64 {
        let (u, v) = (self.uniform(), self.uniform());
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }
}

const HOSTS: [(&str, f64); 4] = [("fast", 1.0), ("medium", 1.4), ("slow", 2.0), ("slowest", 2.8)];
const FUNCTIONS: usize = 40;

/// Writes one uprun run of test `t` at `dir`: on `host` (whose speed multiplies every
/// function's time), each function's samples its base count times the speed, the run's
/// own factor (1% spread), 2% spread of its own and Poisson noise; `target` times `change`.
fn write_run(dir: &Path, host: &str, speed: f64, change: f64, started: &str, rng: &mut Normal) {
    let t = dir.join("t");
    fs::create_dir_all(&t).unwrap();
    let run_factor = 1.0 + 0.01 * rng.next();
    let mut lines = Vec::new();
    let mut total = 0u64;
    for i in 0..FUNCTIONS {
        let (name, base) = match i {
            0 => ("target_fn".to_string(), 3000.0),
            _ => (format!("func_{i:02}"), 20000.0 / i as f64),
        };
        let mean = base * speed * run_factor * if i == 0 { change } else { 1.0 } * (1.0 + 0.02 * rng.next());
        let n = (mean + mean.sqrt() * rng.next()).round().max(0.0) as u64;
        total += n;
        lines.push(format!("{n} [kernel] {name}"));
    }
    let idle = 5000u64;
    lines.push(format!("{idle} [kernel] do_idle"));
    total += idle;
    let prfout = format!(
        "upcmp-prfout 2\ntest t\ncommand loop\nevent cpu-clock\nunit ns\nperiod-sec 0.001\ncpus 1\nwall-sec {:.3}\nidle-set do_idle\n\
         cpu 0 samples {total} lost 0 throttled 0\nfunctions {}\n{}\nend\n",
        total as f64 / 1000.0,
        lines.len(),
        lines.join("\n")
    );
    fs::write(t.join("prfout"), prfout).unwrap();
    fs::write(dir.join("test_list"), "t: loop\n").unwrap();
    fs::write(
        dir.join("system"),
        format!("host: {host}\nkernel-release: 6.1.0\nkernel-build-id: ab\n"),
    )
    .unwrap();
    fs::write(
        dir.join("upcmp-run"),
        format!(
            "format: 2\ntool-version: 0\ncommand: uprun x {started}\nstarted: {started}\nstatus: completed\nruns: 1\n"
        ),
    )
    .unwrap();
}

/// A dataset of 4 hosts of different speed, 3 runs each per side; side b's `target_fn`
/// times `change`. Returns the dataset's directory.
fn dataset(root: &Path, change: f64, seed: u64) -> std::path::PathBuf {
    let mut rng = Normal(seed);
    for (side, c) in [("a", 1.0), ("b", change)] {
        let mut runs = Vec::new();
        for (h, speed) in HOSTS {
            for k in 0..3 {
                let started = format!("2026-12-0{}T10:0{k}:00Z-{h}-{side}", if side == "a" { 1 } else { 2 });
                let dir = root.join(format!("{side}-{h}-{k}"));
                write_run(&dir, h, speed, c, &started, &mut rng);
                runs.push(dir.display().to_string());
            }
        }
        let mut args: Vec<&str> = vec!["export"];
        args.extend(runs.iter().map(String::as_str));
        args.extend(["--to", "ds", "--label"]);
        let label = format!("side={side}");
        args.push(&label);
        let out = run_in(root, UPCMP, &args);
        assert!(out.status.success(), "{}", stderr(&out));
    }
    root.join("ds")
}

/// The function rows of `RESULTS_DIR/results.csv`: (name, run1, run2, significant).
fn rows(res: &Path) -> Vec<(String, f64, f64, bool)> {
    let csv = fs::read_to_string(res.join("results.csv")).unwrap();
    csv.lines()
        .skip(1)
        .map(csv_fields)
        .filter(|c| c[1] == "function")
        .map(|c| {
            let num = |s: &str| s.parse::<f64>().unwrap_or(0.0);
            (c[2].clone(), num(&c[3]), num(&c[4]), c[15] == "true")
        })
        .collect()
}

fn compare(root: &Path) -> std::process::Output {
    run_in(
        root,
        UPCMP,
        &["ds", "--side", "side=a", "--side", "side=b", "res", "-q"],
    )
}

#[test]
fn group_comparison_finds_a_10_percent_change_across_hosts() {
    let tmp = tempdir();
    dataset(tmp.path(), 1.10, 7);
    let out = compare(tmp.path());
    assert!(out.status.success(), "{}", stderr(&out));
    let rows = rows(&tmp.path().join("res"));
    assert!(rows.len() >= FUNCTIONS, "{rows:?}");
    let target = rows.iter().find(|r| r.0 == "target_fn").expect("target_fn row");
    assert!(target.3, "the 10% change is not found: {target:?}");
    let ratio = target.2 / target.1;
    assert!((ratio - 1.10).abs() < 0.03, "ratio {ratio}");
    let marked: Vec<_> = rows.iter().filter(|r| r.3 && r.0 != "target_fn").collect();
    assert!(marked.is_empty(), "unchanged functions marked: {marked:?}");
    let report = fs::read_to_string(tmp.path().join("res/results")).unwrap();
    assert!(report.contains("paired by host on 4 hosts"), "{report}");
}

#[test]
fn group_comparison_a_a_marks_nothing() {
    let tmp = tempdir();
    dataset(tmp.path(), 1.0, 11);
    let out = compare(tmp.path());
    assert!(out.status.success(), "{}", stderr(&out));
    let rows = rows(&tmp.path().join("res"));
    assert!(rows.len() >= FUNCTIONS);
    let marked: Vec<_> = rows.iter().filter(|r| r.3).collect();
    assert!(marked.is_empty(), "A/A marked: {marked:?}");
}

#[test]
fn group_comparison_refuses_an_empty_side() {
    let tmp = tempdir();
    dataset(tmp.path(), 1.0, 3);
    let out = run_in(
        tmp.path(),
        UPCMP,
        &["ds", "--side", "side=a", "--side", "side=zzz", "res", "-q"],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("no run matches side 2"), "{}", stderr(&out));
    assert!(!tmp.path().join("res").join("results").exists());
}

/// The group query of docs/dataset.md run by Spark SQL in local mode (scripts/spark_group.py)
/// gives upcmp's per-function means to 1e-9. Takes about 3 minutes (a JVM and Spark's
/// planning); skipped without Python's pyspark unless `UPCMP_REQUIRE_SPARK=1`.
#[test]
fn spark_means_agree_with_upcmp() {
    let have = std::process::Command::new("python3")
        .args(["-c", "import pyspark"])
        .status()
        .is_ok_and(|s| s.success());
    if !have {
        assert!(
            std::env::var("UPCMP_REQUIRE_SPARK").as_deref() != Ok("1"),
            "python3 -c 'import pyspark' failed"
        );
        eprintln!("skipped: no pyspark for python3 (pip install pyspark; needs Java 17)");
        return;
    }
    let tmp = tempdir();
    let (r1, r2) = (crate::util::testdata("demo/run1"), crate::util::testdata("demo/run2"));
    for (r, side) in [(&r1, "side=a"), (&r2, "side=b")] {
        let out = run_in(
            tmp.path(),
            UPCMP,
            &["export", r.to_str().unwrap(), "--to", "ds", "--label", side],
        );
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let out = run_in(
        tmp.path(),
        UPCMP,
        &[r1.to_str().unwrap(), r2.to_str().unwrap(), "res", "-q"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let script = crate::util::repo().join("scripts/spark_group.py");
    let out = run_in(tmp.path(), "python3", &[script.to_str().unwrap(), "ds", "res"]);
    let said = crate::util::stdout(&out);
    assert!(out.status.success(), "{said}{}", stderr(&out));
    // At least the functions of the demo's nine tests were compared.
    let compared: usize = said
        .split(" compared")
        .next()
        .and_then(|s| s.rsplit(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    assert!(compared > 500, "{said}");
}

// Issue 46: a dataset another user may write.

use crate::dataset::{fifo_at, files_of, run_for, two_runs, two_runs_with_a_link_to_a_secret};

/// Root's group comparison of `nobody`'s dataset: a functions file that is a link to a
/// file only root may read is an error naming the link (nothing of the file in the
/// results), and a FIFO in place of a labels file is refused at once.
#[test]
fn group_never_reads_through_a_link_or_waits_on_a_fifo_issue_46() {
    let args = ["ds", "--side", "side=a", "--side", "side=b", "res", "-q"];
    if crate::util::is_root() {
        let tmp = tempdir();
        two_runs_with_a_link_to_a_secret(tmp.path());
        let out = run_for(tmp.path(), &args, 60);
        assert_ne!(out.code, Some(0), "{}", out.stderr);
        assert!(
            out.stderr.contains("a symbolic link, which is not followed"),
            "{}",
            out.stderr
        );
        assert!(!tmp.path().join("res").exists());
    }
    let tmp = tempdir();
    let ds = two_runs(tmp.path());
    fifo_at(&files_of(&ds, "labels", "getpid")[0]);
    let out = run_for(tmp.path(), &args, 30);
    assert!(out.code.is_some(), "still waiting on the FIFO after 30 s");
    assert_ne!(out.code, Some(0));
    assert!(out.stderr.contains("a FIFO"), "{}", out.stderr);
}
