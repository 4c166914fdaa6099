//! The Parquet dataset of many runs (issue 33): `upcmp export`, its layout and tables, re-export
//! replacing, concurrent exporters, and the group query of docs/dataset.md in DuckDB.
#![cfg(feature = "parquet")]

use crate::util::{copy_tree, repo, run_in, stderr, tempdir, testdata};
use polars::prelude::*;
use std::fs;
use std::path::{Path, PathBuf};
use upcmp::dataset::thrift::{self, Value};

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

// Issue 46: a dataset another user may write: its links, FIFOs, run ids and values, and
// the writers of the dataset and of the history.

/// The outcome of [`run_for`]: the exit code (`None` when it was killed at the timeout),
/// standard output and standard error.
pub(crate) struct Ran {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

/// Runs `upcmp args` in `cwd`, killed after `secs` seconds (a hang is then a failure of
/// the caller's assertions, not of the whole suite).
pub(crate) fn run_for(cwd: &Path, args: &[&str], secs: u64) -> Ran {
    use std::io::Read;
    let mut child = std::process::Command::new(UPCMP)
        .args(args)
        .current_dir(cwd)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let reader = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut s = Vec::new();
            let _ = r.read_to_end(&mut s);
            String::from_utf8_lossy(&s).into_owned()
        })
    };
    let out = reader(Box::new(child.stdout.take().unwrap()));
    let err = reader(Box::new(child.stderr.take().unwrap()));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    let code = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s.code();
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    Ran {
        code,
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    }
}

/// A dataset `ds` in `dir` of demo/run1 (`side=a`) and demo/run2 (`side=b`).
pub(crate) fn two_runs(dir: &Path) -> PathBuf {
    let (r1, r2) = (testdata("demo/run1"), testdata("demo/run2"));
    export(dir, &[r1.to_str().unwrap(), "--to", "ds", "--label", "side=a"]);
    export(dir, &[r2.to_str().unwrap(), "--to", "ds", "--label", "side=b"]);
    dir.join("ds")
}

/// The files of `table` for test `test` in `ds`, sorted.
pub(crate) fn files_of(ds: &Path, table: &str, test: &str) -> Vec<PathBuf> {
    parquet_files(&ds.join(table).join(format!("test={test}")))
}

/// A functions file of getpid whose heaviest kernel function is `secret_fn_46`, in a
/// directory of `dir` that only root may enter (0700): what another user must never see.
pub(crate) fn secret_functions(dir: &Path) -> PathBuf {
    let run = dir.join("secret-run");
    copy_tree(&testdata("demo/run1"), &run);
    let prfout = run.join("getpid/prfout");
    let text = fs::read_to_string(&prfout)
        .unwrap()
        .replace("do_syscall_64", "secret_fn_46");
    fs::write(&prfout, text).unwrap();
    let private = dir.join("private");
    fs::create_dir(&private).unwrap();
    export(&private, &[run.to_str().unwrap(), "--to", "ds"]);
    let file = files_of(&private.join("ds"), "functions", "getpid").remove(0);
    let secret = private.join("secret.parquet");
    fs::rename(&file, &secret).unwrap();
    fs::remove_dir_all(private.join("ds")).unwrap();
    fs::remove_dir_all(&run).unwrap();
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(&private, fs::Permissions::from_mode(0o700)).unwrap();
    secret
}

/// Rewrites the Parquet file `path` with `change` applied to its rows.
pub(crate) fn rewrite(path: &Path, change: impl FnOnce(DataFrame) -> DataFrame) {
    let df = ParquetReader::new(fs::File::open(path).unwrap()).finish().unwrap();
    let mut df = change(df);
    let mut bytes = Vec::new();
    ParquetWriter::new(&mut bytes).finish(&mut df).unwrap();
    fs::remove_file(path).unwrap();
    fs::write(path, bytes).unwrap();
}

/// Makes a FIFO at `path` (in place of a file removed first).
pub(crate) fn fifo_at(path: &Path) {
    let _ = fs::remove_file(path);
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o666) }, 0);
}

/// A failed export (one table's directory is a file) leaves nothing of the run: no file of
/// any table, no temporary file.
#[test]
fn a_failed_export_leaves_nothing_issue_46() {
    let tmp = tempdir();
    let ds = tmp.path().join("ds");
    fs::create_dir(&ds).unwrap();
    fs::write(ds.join("counters"), "in the way").unwrap();
    let run1 = testdata("demo/run1");
    let out = run_in(tmp.path(), UPCMP, &["export", run1.to_str().unwrap(), "--to", "ds"]);
    assert_ne!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains("counters"), "{}", stderr(&out));
    let mut left = Vec::new();
    let mut stack = vec![ds.clone()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                left.push(p);
            }
        }
    }
    assert_eq!(left, [ds.join("counters")], "half a run left");
}

/// `export --to` follows the rules of every output directory: a parent every user may
/// write without the sticky bit is refused unless insisted, and a link another user placed
/// in a shared sticky directory is not followed.
#[test]
fn export_follows_the_rules_of_every_output_issue_46() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempdir();
    let run1 = testdata("demo/run1");
    let r1 = run1.to_str().unwrap();
    let shared = tmp.path().join("shared");
    fs::create_dir(&shared).unwrap();
    fs::set_permissions(&shared, fs::Permissions::from_mode(0o777)).unwrap();
    let out = run_in(tmp.path(), UPCMP, &["export", r1, "--to", "shared/ds"]);
    assert_ne!(out.status.code(), Some(0));
    assert!(
        stderr(&out).contains("--allow-world-writable-parent"),
        "{}",
        stderr(&out)
    );
    assert!(!shared.join("ds").exists());
    let out = run_in(
        tmp.path(),
        UPCMP,
        &["export", r1, "--to", "shared/ds", "--allow-world-writable-parent"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    if !crate::util::is_root() {
        return;
    }
    // /tmp/x -> /victim, placed by another user: `--to /tmp/x/ds` would land in /victim.
    let victim = sticky_link_by_nobody(tmp.path());
    let out = run_in(tmp.path(), UPCMP, &["export", r1, "--to", "sticky/x/ds"]);
    assert_ne!(out.status.code(), Some(0));
    assert!(stderr(&out).contains("is not followed"), "{}", stderr(&out));
    assert_eq!(fs::read_dir(&victim).unwrap().count(), 0, "written through the link");
}

/// Root exports into a dataset of `nobody`'s while he swaps one of its partition
/// directories for a link to a directory only root may write, over and over: no file ever
/// lands there (each export succeeds, or fails naming the link).
#[test]
fn export_never_writes_through_a_swapped_partition_issue_46() {
    use std::os::unix::fs::PermissionsExt;
    if !crate::util::is_root() {
        return;
    }
    let tmp = tempdir();
    let run1 = testdata("demo/run1");
    let r1 = run1.to_str().unwrap().to_string();
    export(tmp.path(), &[&r1, "--to", "ds"]);
    let ds = tmp.path().join("ds");
    crate::hostile::chown_tree(&ds, crate::hostile::NOBODY);
    let private = tmp.path().join("private");
    fs::create_dir(&private).unwrap();
    fs::set_permissions(&private, fs::Permissions::from_mode(0o700)).unwrap();
    let part = files_of(&ds, "functions", "getpid")[0].parent().unwrap().to_path_buf();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let swapper = {
        let (stop, part, private) = (stop.clone(), part.clone(), private.clone());
        std::thread::spawn(move || {
            // Each time under a new name (never a `host=` one: readers skip it), so that a
            // directory an export made in the gap is swapped as well.
            for k in 0.. {
                if stop.load(std::sync::atomic::Ordering::Relaxed) {
                    break;
                }
                let aside = part.with_file_name(format!("aside-{k}"));
                if fs::rename(&part, &aside).is_ok() {
                    let _ = std::os::unix::fs::symlink(&private, &part);
                    std::thread::yield_now();
                    let _ = fs::remove_file(&part);
                    let _ = fs::rename(&aside, &part);
                }
            }
        })
    };
    let until = std::time::Instant::now() + std::time::Duration::from_secs(8);
    let mut exports = 0;
    while std::time::Instant::now() < until && fs::read_dir(&private).unwrap().count() == 0 {
        let out = run_in(tmp.path(), UPCMP, &["export", &r1, "--to", "ds"]);
        // Success, or an error (the link met, the directory gone): never a crash.
        assert!(out.status.code().is_some(), "{}", stderr(&out));
        exports += 1;
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    swapper.join().unwrap();
    let landed: Vec<_> = fs::read_dir(&private).unwrap().map(|e| e.unwrap().path()).collect();
    assert!(landed.is_empty(), "after {exports} exports, root wrote {landed:?}");
}

/// How a run of upcmp ended, what it printed on stderr, and the most memory it held.
struct Measured {
    status: i32,
    signal: Option<i32>,
    stderr: String,
    max_rss_bytes: u64,
}

/// Runs upcmp in `cwd` with `args`; its peak resident memory from `wait4`.
// The child is reaped by wait4 (for its rusage), which clippy does not see.
#[allow(clippy::zombie_processes)]
fn run_measured(cwd: &Path, args: &[&str]) -> Measured {
    let err = cwd.join(format!("stderr-{}", std::process::id()));
    let child = std::process::Command::new(UPCMP)
        .args(args)
        .current_dir(cwd)
        .stdout(std::process::Stdio::null())
        .stderr(fs::File::create(&err).unwrap())
        .spawn()
        .unwrap();
    let mut status = 0;
    // SAFETY: a zeroed rusage is valid; wait4 on our own child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut usage) };
    assert_eq!(pid, child.id() as i32);
    let stderr = fs::read_to_string(&err).unwrap_or_default();
    fs::remove_file(&err).unwrap();
    Measured {
        status: if libc::WIFEXITED(status) {
            libc::WEXITSTATUS(status)
        } else {
            -1
        },
        signal: libc::WIFSIGNALED(status).then(|| libc::WTERMSIG(status)),
        stderr,
        max_rss_bytes: usage.ru_maxrss as u64 * 1024,
    }
}

/// A dataset of demo/run1 (`side=a`) and demo/run2 (`side=b`) at `tmp/ds`, and the
/// functions file of run1's test getpid in it.
fn two_sides(tmp: &Path) -> PathBuf {
    let (r1, r2) = (testdata("demo/run1"), testdata("demo/run2"));
    export(tmp, &[r1.to_str().unwrap(), "--to", "ds", "--label", "side=a"]);
    export(tmp, &[r2.to_str().unwrap(), "--to", "ds", "--label", "side=b"]);
    let runs = scan(&tmp.join("ds"), "runs");
    let c = runs.column("run_id").unwrap().str().unwrap().clone();
    let started = runs.column("started").unwrap().str().unwrap().clone();
    // run1 started first.
    let first = (0..c.len())
        .min_by_key(|&i| started.get(i).unwrap().to_string())
        .unwrap();
    let id = c.get(first).unwrap().to_string();
    parquet_files(&tmp.join("ds/functions"))
        .into_iter()
        .find(|p| p.to_string_lossy().contains("test=getpid") && p.ends_with(format!("{id}.parquet")))
        .unwrap()
}

/// Parquet `data`'s footer and the offset it starts at.
fn footer(data: &[u8]) -> (usize, &[u8]) {
    let n = data.len();
    let len = u32::from_le_bytes(data[n - 8..n - 4].try_into().unwrap()) as usize;
    (n - 8 - len, &data[n - 8 - len..n - 8])
}

/// `data` with its footer replaced by `new`.
fn with_footer(data: &[u8], new: &[u8]) -> Vec<u8> {
    let (at, _) = footer(data);
    let mut out = data[..at].to_vec();
    out.extend_from_slice(new);
    out.extend_from_slice(&(new.len() as u32).to_le_bytes());
    out.extend_from_slice(b"PAR1");
    out
}

/// `data` with its footer read, changed by `edit` and written back.
fn edit_footer(data: &[u8], edit: impl FnOnce(&mut Value)) -> Vec<u8> {
    let (mut meta, _) = thrift::read(footer(data).1, &thrift::FILE_META_DATA).unwrap();
    edit(&mut meta);
    let mut new = Vec::new();
    thrift::write(&meta, &thrift::FILE_META_DATA, &mut new);
    with_footer(data, &new)
}

/// Field `id` of the structure `v`.
fn field(v: &mut Value, id: i16) -> &mut Value {
    match v {
        Value::Struct(f) => &mut f.iter_mut().find(|x| x.0 == id).unwrap().1,
        _ => panic!("not a structure"),
    }
}

fn item(v: &mut Value, k: usize) -> &mut Value {
    match v {
        Value::List(l) => &mut l[k],
        _ => panic!("not a list"),
    }
}

/// `upcmp history` and a group comparison of the dataset at `tmp/ds` whose file `bad` was
/// crafted: each ends with an error naming the file (not a panic or an abort), in bounded
/// memory.
fn refused_by_history_and_groups(tmp: &Path, bad: &Path, why: &str) {
    let name = bad.file_name().unwrap().to_string_lossy().to_string();
    for args in [
        &["history", "ds", "--test", "getpid", "-q"][..],
        &["ds", "--side", "side=a", "--side", "side=b", "res", "-q"][..],
    ] {
        let m = run_measured(tmp, args);
        let what = format!(
            "upcmp {}: exit {} signal {:?}: {}",
            args.join(" "),
            m.status,
            m.signal,
            m.stderr
        );
        assert_eq!(m.signal, None, "{what}");
        assert!(m.status == 1 || m.status == 2, "{what}");
        assert!(!m.stderr.contains("panicked"), "{what}");
        assert!(m.stderr.contains(&name) && m.stderr.contains(why), "{what}");
        assert!(
            m.max_rss_bytes < 400 << 20,
            "{what}: {} bytes resident",
            m.max_rss_bytes
        );
    }
}

#[test]
fn a_footer_with_a_boolean_for_a_number_is_an_error_naming_the_file_issue_46() {
    let tmp = tempdir();
    let bad = two_sides(tmp.path());
    let data = fs::read(&bad).unwrap();
    // FileMetaData.version, an i32 (header 0x15 and a varint), sent as a boolean (0x11).
    let f = footer(&data).1;
    assert_eq!(f[0], 0x15);
    let mut new = vec![0x11];
    new.extend_from_slice(&f[2..]);
    fs::write(&bad, with_footer(&data, &new)).unwrap();
    refused_by_history_and_groups(tmp.path(), &bad, "FileMetaData.version: wire type 1");
}

#[test]
fn a_row_group_unlike_its_file_is_an_error_naming_the_file_issue_46() {
    let tmp = tempdir();
    let bad = two_sides(tmp.path());
    let data = fs::read(&bad).unwrap();
    // The row group says one row more than its file and its columns.
    let crafted = edit_footer(&data, |m| {
        let n = field(item(field(m, 4), 0), 3);
        if let Value::Int(x) = n {
            *x += 1;
        }
    });
    fs::write(&bad, crafted).unwrap();
    refused_by_history_and_groups(tmp.path(), &bad, "row group 0:");
}

#[test]
fn a_row_count_of_2_to_the_61_is_an_error_naming_the_file_issue_46() {
    let tmp = tempdir();
    let bad = two_sides(tmp.path());
    let data = fs::read(&bad).unwrap();
    // File, row group and every column: 2^61 rows, consistent with one another.
    let crafted = edit_footer(&data, |m| {
        *field(m, 3) = Value::Int(1 << 61);
        let rg = item(field(m, 4), 0);
        *field(rg, 3) = Value::Int(1 << 61);
        if let Value::List(cols) = field(rg, 1) {
            for c in cols {
                *field(field(c, 3), 5) = Value::Int(1 << 61);
            }
        }
    });
    fs::write(&bad, crafted).unwrap();
    refused_by_history_and_groups(tmp.path(), &bad, "rows that decode to about");
}

#[test]
fn ten_million_run_length_encoded_rows_are_refused_before_reading_issue_46() {
    let tmp = tempdir();
    let bad = two_sides(tmp.path());
    // The functions table's columns, 10^5 rows of one value each, in one row group that
    // the footer then lists 100 times: 10^7 rows in about 300 KB.
    let n = 100_000;
    let mut df = df! {
        "run_id" => vec![bad.file_stem().unwrap().to_string_lossy().to_string(); n],
        "schema_version" => vec![1i64; n],
        "repetition" => vec![1i64; n],
        "function" => vec!["f"; n],
        "module" => vec!["kernel"; n],
        "samples" => vec![1i64; n],
        "weight" => vec![1.0f64; n],
        "seconds" => vec![Some(1e-9f64); n],
        "clones" => vec![None::<String>; n],
    }
    .unwrap();
    let mut bytes = Vec::new();
    polars_io::parquet::write::ParquetWriter::new(&mut bytes)
        .finish(&mut df)
        .unwrap();
    let crafted = edit_footer(&bytes, |m| {
        *field(m, 3) = Value::Int(100 * n as i64);
        if let Value::List(groups) = field(m, 4) {
            assert_eq!(groups.len(), 1);
            let g = groups[0].clone();
            groups.resize(100, g);
        }
    });
    assert!(crafted.len() < 1 << 20, "{} bytes", crafted.len());
    fs::write(&bad, &crafted).unwrap();
    refused_by_history_and_groups(tmp.path(), &bad, "rows that decode to about");
}

/// `AT/sticky` (mode 1777, as /tmp) holding `x`, a link owned by `nobody` to the new
/// directory `AT/victim`, which it returns: an output under `sticky/x` would land there.
pub(crate) fn sticky_link_by_nobody(at: &Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let sticky = at.join("sticky");
    fs::create_dir(&sticky).unwrap();
    fs::set_permissions(&sticky, fs::Permissions::from_mode(0o1777)).unwrap();
    let victim = at.join("victim");
    fs::create_dir(&victim).unwrap();
    std::os::unix::fs::symlink(&victim, sticky.join("x")).unwrap();
    let nobody = Some(crate::hostile::NOBODY);
    std::os::unix::fs::lchown(sticky.join("x"), nobody, nobody).unwrap();
    victim
}

/// [`two_runs`] given to `nobody`, one of whose functions files is a link to a file of
/// root's ([`secret_functions`]): the dataset a hostile user would plant, and the link.
pub(crate) fn two_runs_with_a_link_to_a_secret(dir: &Path) -> (PathBuf, PathBuf) {
    let ds = two_runs(dir);
    let secret = secret_functions(dir);
    let planted = files_of(&ds, "functions", "getpid").remove(0);
    fs::remove_file(&planted).unwrap();
    std::os::unix::fs::symlink(&secret, &planted).unwrap();
    crate::hostile::chown_tree(&ds, crate::hostile::NOBODY);
    (ds, planted)
}
