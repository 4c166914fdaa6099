//! Shared helpers of the integration tests.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A fresh temporary directory for one test.
pub fn tempdir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("upcmp-test-")
        .tempdir()
        .expect("temp dir")
}

/// The repository's root (the tests' working directory).
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A file or directory under `testdata/`.
pub fn testdata(rel: &str) -> PathBuf {
    repo().join("testdata").join(rel)
}

/// Compares `got` with the golden file `rel` under `testdata/`; `UPCMP_BLESS=1` rewrites
/// the file first (then review the diff before committing it).
pub fn assert_golden(got: &str, rel: &str) {
    let golden = testdata(rel);
    if std::env::var("UPCMP_BLESS").as_deref() == Ok("1") {
        std::fs::write(&golden, got).unwrap();
    }
    let want = std::fs::read_to_string(&golden).unwrap_or_else(|e| panic!("{}: {e}", golden.display()));
    assert!(
        got == want,
        "{} differs (UPCMP_BLESS=1 rewrites it):\n{got}",
        golden.display()
    );
}

/// Runs `bin` with `args` in `cwd`.
pub fn run_in(cwd: &Path, bin: &str, args: &[&str]) -> Output {
    Command::new(bin)
        .args(args)
        .current_dir(cwd)
        .output()
        .unwrap_or_else(|e| panic!("running {bin}: {e}"))
}

/// Standard output as text.
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Standard error as text.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Whether perf-backed tests may run; otherwise prints why and returns false, unless
/// `UPCMP_REQUIRE_PERF=1`, which turns the skip into a failure.
pub fn perf_usable(need_root: bool) -> bool {
    let mut missing = Vec::new();
    let perf_runs = Command::new("perf")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !perf_runs {
        missing.push("the `perf` command");
    }
    if need_root && !is_root() {
        missing.push("root (perf record -a of kernel PCs)");
    }
    if missing.is_empty() {
        return true;
    }
    let why = format!("needs {}", missing.join(" and "));
    if std::env::var("UPCMP_REQUIRE_PERF").as_deref() == Ok("1") {
        panic!("UPCMP_REQUIRE_PERF=1 but this test {why}");
    }
    eprintln!("skipped: this test {why} (set UPCMP_REQUIRE_PERF=1 to make this a failure)");
    false
}

pub fn is_root() -> bool {
    // The effective uid is the second field of the `Uid:` line.
    std::fs::read_to_string("/proc/self/status").is_ok_and(|s| {
        s.lines()
            .find_map(|l| l.strip_prefix("Uid:"))
            .and_then(|l| l.split_whitespace().nth(1).map(|u| u == "0"))
            .unwrap_or(false)
    })
}

/// Serializes the tests that sample the whole machine, so one does not measure another.
pub fn perf_lock() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// Copies the directory tree `from` to `to` (created), files and subdirectories.
pub fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &to.join(e.file_name()));
        } else {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

/// The six orders of three sides, one a round: over six rounds each side runs twice
/// first, twice second and twice last, and within the rounds follows each other side
/// twice.
pub const ORDERS: [[usize; 3]; 6] = [[0, 1, 2], [1, 2, 0], [2, 0, 1], [0, 2, 1], [1, 0, 2], [2, 1, 0]];

/// Runs the three commands `lines` in one uprun run, round after round in the orders of
/// [`ORDERS`] after one unrecorded warm-up of `lines[0]`, and makes of each command a
/// run of its own, `names[i]`, whose test `work` has the six repetitions of `lines[i]`;
/// `extra` are more uprun arguments.
/// A drift of the machine (other programs, frequency, caches) then falls on every side
/// alike, and so does any effect of what ran just before, instead of on the side that
/// ran first or after another.
pub fn interleaved_runs(dir: &Path, lines: &[&str; 3], names: &[&str; 3], extra: &[&str]) {
    let rounds = ORDERS.len();
    let mut list = format!("warm: {}\n", lines[0]);
    for order in ORDERS {
        for i in order {
            list += &format!("work: {}\n", lines[i]);
        }
    }
    std::fs::write(dir.join("test_list"), &list).unwrap();
    let mut args = vec!["auto", "all"];
    args.extend_from_slice(extra);
    let o = run_in(dir, env!("CARGO_BIN_EXE_uprun"), &args);
    assert!(o.status.success(), "uprun {args:?}: {}", stderr(&o));
    let all = dir.join("all");
    let marker = std::fs::read_to_string(all.join("upcmp-run")).unwrap();
    for (line, name) in lines.iter().zip(names) {
        let run = dir.join(name);
        std::fs::create_dir_all(run.join("work")).unwrap();
        std::fs::write(
            run.join("upcmp-run"),
            marker.replace("runs: 1", &format!("runs: {rounds}")),
        )
        .unwrap();
        std::fs::write(run.join("test_list"), format!("work: {line}\n")).unwrap();
        for f in ["system", "kallsyms.gz"] {
            if all.join(f).exists() {
                std::fs::copy(all.join(f), run.join(f)).unwrap();
            }
        }
    }
    // The test directories of label work are named work, work.2, work.3, … in list order.
    for (k, (r, i)) in ORDERS
        .iter()
        .enumerate()
        .flat_map(|(r, order)| order.iter().map(move |&i| (r, i)))
        .enumerate()
    {
        let from = if k == 0 {
            "work".to_string()
        } else {
            format!("work.{}", k + 1)
        };
        let to = dir.join(names[i]).join("work").join(format!("r{}", r + 1));
        std::fs::rename(all.join(from), to).unwrap();
    }
}

/// The fields of one CSV line (RFC 4180 quoting, as results.csv writes it).
pub fn csv_fields(line: &str) -> Vec<String> {
    let (mut fields, mut field, mut quoted) = (Vec::new(), String::new(), false);
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                field.push('"');
                chars.next();
            }
            ('"', _) => quoted = !quoted,
            (',', false) => fields.push(std::mem::take(&mut field)),
            (c, _) => field.push(c),
        }
    }
    fields.push(field);
    fields
}
