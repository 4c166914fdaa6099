//! Reading a dataset back with polars. A selection by test, kernel or host picks the
//! partition directories (`test=T/kernel=K/host=H`) by name; labels (`commit=...`) select
//! runs from each run's small `labels` file. The tables are then read run file by run file,
//! a batch of files at a time and only the columns asked for, so memory is that of one
//! batch whatever the number of runs. Rows come back as plain structs (or, for the large
//! functions table, as borrowed rows to a callback) for the statistics, which stay ours.
//!
//! Over 1,000 lines with its unit tests; the code alone is under 1,000.

use super::check::{check_file, contained};
use super::layout::{decode, encode, is_run_id, partition, partition_dirs, run_files, Dataset, DatasetFile};
use super::{DatasetError, SCHEMA_VERSION};
use polars::prelude::*;
use std::collections::{BTreeMap, HashMap};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

/// The keys of `--where` that are hive partitions; any other key is a label.
pub const PARTITIONS: &[&str] = &["test", "kernel", "host"];

/// Which runs to read: a test (or all) and `KEY=VALUE` conditions, all of which must hold.
/// `test`, `kernel` and `host` match the partitions; any other key matches a `--label` the
/// run was exported with.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Selection {
    /// Only this test.
    pub test: Option<String>,
    /// `KEY=VALUE` conditions.
    pub conditions: Vec<(String, String)>,
}

impl Selection {
    /// A selection of `test` with `conditions`.
    pub fn new(test: Option<String>, conditions: Vec<(String, String)>) -> Self {
        Selection { test, conditions }
    }
}

/// Parses a `--where KEY=VALUE`.
pub fn parse_condition(s: &str) -> Result<(String, String), DatasetError> {
    match s.split_once('=') {
        Some((k, v)) if !k.is_empty() => Ok((k.to_string(), v.to_string())),
        _ => Err(DatasetError::Usage(format!(
            "--where {s:?}: expected KEY=VALUE, e.g. kernel=6.1, host=box1 or commit=3f2a1b"
        ))),
    }
}

/// One repetition of a run of one test.
#[derive(Debug, Clone, PartialEq)]
pub struct ScannedRepetition {
    /// Its number, 1-based.
    pub repetition: i64,
    /// CPU seconds outside idle (null for a non-time event).
    pub cpu_seconds: Option<f64>,
    /// CPU weight outside idle, in the profile's unit.
    pub cpu_weight: f64,
    /// Operations the benchmark counted, where it counts them.
    pub operations: Option<i64>,
    /// Wall time of the repetition.
    pub wall_sec: f64,
}

/// A run of one test, with its labels and repetitions.
#[derive(Debug, Clone, PartialEq)]
pub struct ScannedRun {
    /// The run's id (the file name).
    pub run_id: String,
    /// The test.
    pub test: String,
    /// Host name.
    pub host: String,
    /// Kernel release.
    pub kernel: String,
    /// Start time, as the run wrote it (ISO 8601 UTC, so it sorts as text).
    pub started: String,
    /// Its `--label`s, by key.
    pub labels: BTreeMap<String, String>,
    /// Its repetitions, in order.
    pub repetitions: Vec<ScannedRepetition>,
}

/// A benchmark value of one repetition.
#[derive(Debug, Clone, PartialEq)]
pub struct ScannedBenchmark {
    /// The run's id.
    pub run_id: String,
    /// The test.
    pub test: String,
    /// The repetition.
    pub repetition: i64,
    /// The benchmark's description.
    pub benchmark: String,
    /// The copy, or none for the whole run.
    pub copy: Option<i64>,
    /// The value.
    pub value: f64,
    /// Its unit.
    pub unit: String,
    /// Whether higher is better.
    pub higher_is_better: bool,
}

/// The run files of one partition of a table: its directory below the table
/// (`test=T/kernel=K/host=H`), the decoded partition values, and its run ids, sorted.
#[derive(Debug, Clone)]
struct Partition {
    rel: PathBuf,
    test: String,
    kernel: String,
    host: String,
    ids: Vec<String>,
}

/// The partitions of `table` that `sel` picks, by test directory (each list sorted). The
/// partition values are matched in their encoded form (the directory names), so no name
/// is decoded to be matched. Every directory is listed through its fd, none through a link.
fn partitions(ds: &Dataset, table: &str, sel: &Selection) -> Result<Vec<Vec<Partition>>, DatasetError> {
    let root = ds.table(table)?;
    let wanted = |key: &str| -> Vec<String> {
        sel.test
            .iter()
            .filter(|_| key == "test")
            .chain(sel.conditions.iter().filter(|c| c.0 == key).map(|c| &c.1))
            .map(|v| format!("{key}={}", encode(v)))
            .collect()
    };
    let (tw, kw, hw) = (wanted("test"), wanted("kernel"), wanted("host"));
    let value = |name: &str| decode(name.split_once('=').map_or("", |x| x.1));
    let mut out = Vec::new();
    for t in partition_dirs(&root, "test", |n| tw.iter().all(|w| w == n))? {
        let tdir = root.open_dir(OsStr::new(&t))?;
        let mut parts = Vec::new();
        for k in partition_dirs(&tdir, "kernel", |n| kw.iter().all(|w| w == n))? {
            let kdir = tdir.open_dir(OsStr::new(&k))?;
            for h in partition_dirs(&kdir, "host", |n| hw.iter().all(|w| w == n))? {
                let hdir = kdir.open_dir(OsStr::new(&h))?;
                let ids = run_files(&hdir)?;
                if !ids.is_empty() {
                    parts.push(Partition {
                        rel: Path::new(&t).join(&k).join(&h),
                        test: value(&t),
                        kernel: value(&k),
                        host: value(&h),
                        ids,
                    });
                }
            }
        }
        if !parts.is_empty() {
            out.push(parts);
        }
    }
    Ok(out)
}

/// The lazy scan of one table, with the partitions as string columns (`test`, `kernel`,
/// `host`, decoded from the directory names) and the test, kernel and host conditions
/// applied to the directories. Each file is opened without following a link and read
/// whole ([`DatasetFile`]), and its rows checked ([`check_rows`]; a runs row must name
/// the partition it is in); a table with no file of the selection is an error.
pub fn scan_table(dataset: &Path, table: &str, sel: &Selection) -> Result<LazyFrame, DatasetError> {
    let ds = Dataset::open(dataset)?;
    let mut frames = Vec::new();
    for part in partitions(&ds, table, sel)?.into_iter().flatten() {
        for ids in part.ids.chunks(FILES_PER_BATCH) {
            let files = ids
                .iter()
                .map(|id| ds.must_open_run_file(table, &part.rel, id))
                .collect::<Result<Vec<_>, _>>()?;
            let lf = scan_files(&files)?;
            let df = contained(&files, || Ok(lf.collect()?))?;
            check_rows(&df, &files, rules_of(table))?;
            if table == "runs" {
                check_partition(&df, &files, &part)?;
            }
            frames.push(df.lazy().with_columns([
                lit(part.test.as_str()).alias("test"),
                lit(part.kernel.as_str()).alias("kernel"),
                lit(part.host.as_str()).alias("host"),
            ]));
        }
    }
    if frames.is_empty() {
        return Err(DatasetError::Io {
            path: dataset.join(table),
            source: std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "no RUNID.parquet file in the partitions selected",
            ),
        });
    }
    Ok(concat(frames, UnionArgs::default())?)
}

fn strs(df: &DataFrame, name: &str) -> Result<Vec<String>, DatasetError> {
    let c = df.column(name)?.str()?;
    Ok(c.iter().map(|v| v.unwrap_or_default().to_string()).collect())
}

fn f64s(df: &DataFrame, name: &str) -> Result<Vec<Option<f64>>, DatasetError> {
    let c = df.column(name)?.cast(&DataType::Float64)?;
    Ok(c.f64()?.iter().collect())
}

fn i64s(df: &DataFrame, name: &str) -> Result<Vec<Option<i64>>, DatasetError> {
    let c = df.column(name)?.cast(&DataType::Int64)?;
    Ok(c.i64()?.iter().collect())
}

fn check_version(df: &DataFrame, dataset: &Path, table: &str) -> Result<(), DatasetError> {
    if df.height() == 0 {
        return Ok(());
    }
    let newest = i64s(df, "schema_version")?.into_iter().flatten().max().unwrap_or(0);
    if newest > SCHEMA_VERSION {
        return Err(DatasetError::Usage(format!(
            "{}: schema version {newest}, newer than this upcmp reads ({SCHEMA_VERSION}): update upcmp",
            dataset.join(table).display()
        )));
    }
    Ok(())
}

/// What the rows of a table read from a batch of files must hold: the columns of counts,
/// seconds and weights (finite and not negative where not null), and the columns of names
/// with the most bytes each may have.
#[derive(Debug, Clone, Copy)]
pub(super) struct RowRules<'a> {
    /// Columns of amounts.
    pub amounts: &'a [&'a str],
    /// Columns of names, and the most bytes of one.
    pub names: &'a [(&'a str, usize)],
}

/// The most bytes of a name (function, module, test, host, benchmark, counter, label): the
/// suite's cap everywhere ([`upcmp_parsers::MAX_NAME_BYTES`]). upcmp export writes names
/// cut to it already, so a longer one is an error here, not a name to cut.
pub(super) const NAME: usize = upcmp_parsers::MAX_NAME_BYTES;

/// Checks the rows of `df`, read from `files` (one run's rows each, in order): every row's
/// `run_id` is the run id of one of the files (a run id is a key, never a path), and
/// `rules` hold. An error names the file and the row in it.
pub(super) fn check_rows(df: &DataFrame, files: &[DatasetFile], rules: RowRules) -> Result<(), DatasetError> {
    let ids = df.column("run_id")?.str()?;
    let known: HashMap<String, &Path> = files
        .iter()
        .filter_map(|f| Some((f.run_id()?, f.path.as_path())))
        .collect();
    // The file and 1-based row of row `i` (counted among the rows of its run id).
    let at = |i: usize| -> (PathBuf, usize) {
        let id = ids.get(i).unwrap_or_default();
        let row = (0..i).filter(|&j| ids.get(j) == Some(id)).count() + 1;
        let path = known.get(id).map_or_else(
            || files.first().map(|f| f.path.clone()).unwrap_or_default(),
            |p| p.to_path_buf(),
        );
        (path, row)
    };
    let bad = |i: usize, what: String| {
        let (path, row) = at(i);
        DatasetError::BadFile {
            path,
            reason: format!("row {row}: {what}"),
        }
    };
    for (i, id) in ids.iter().enumerate() {
        let id = id.unwrap_or_default();
        if !known.contains_key(id) {
            let shown = crate::model::escaped(&id.chars().take(64).collect::<String>()).into_owned();
            let what = if is_run_id(id) {
                format!("run_id {shown} is not the run id of this file")
            } else {
                format!("run_id {shown:?} is not a run id (16 hex digits): a run id is never a path")
            };
            let path = files.first().map(|f| f.path.clone()).unwrap_or_default();
            return Err(DatasetError::BadFile {
                path,
                reason: format!("row {}: {what}", i + 1),
            });
        }
    }
    for name in rules.amounts {
        let Ok(c) = df.column(name) else { continue };
        let c = c.cast(&DataType::Float64)?;
        let found = c
            .f64()?
            .iter()
            .enumerate()
            .find_map(|(i, v)| v.filter(|v| !(v.is_finite() && *v >= 0.0)).map(|v| (i, v)));
        if let Some((i, v)) = found {
            return Err(bad(i, format!("{name} is {v}, expected a finite number, not negative")));
        }
    }
    for (name, most) in rules.names {
        let Ok(c) = df.column(name) else { continue };
        if let Some((i, n)) = c
            .str()?
            .iter()
            .enumerate()
            .find_map(|(i, v)| v.filter(|v| v.len() > *most).map(|v| (i, v.len())))
        {
            return Err(bad(
                i,
                format!(
                    "{name} is {n} bytes long, longer than upcmp keeps ({}): not written by upcmp export",
                    crate::fsio::human_bytes(*most as u64)
                ),
            ));
        }
    }
    Ok(())
}

/// The rules of the `runs` table.
pub(super) const RUNS_RULES: RowRules<'static> = RowRules {
    amounts: &[
        "repetition",
        "cpu_seconds",
        "cpu_weight",
        "operations",
        "wall_sec",
        "period",
        "cpus",
    ],
    names: &[
        ("test_name", NAME),
        ("host_name", NAME),
        ("kernel_release", NAME),
        ("event", NAME),
        ("unit", NAME),
        ("started", NAME),
    ],
};

/// The rules of the `labels` and `system` tables (a system value may be a long line of
/// the machine's description: it is held to the `system` file's own cap).
pub(super) const PAIRS_RULES: RowRules<'static> = RowRules {
    amounts: &[],
    names: &[("key", NAME), ("value", 1 << 20)],
};

/// The rules of the `functions` table.
pub(super) const FUNCTIONS_RULES: RowRules<'static> = RowRules {
    amounts: &["repetition", "samples", "weight", "seconds"],
    names: &[("function", NAME), ("module", NAME)],
};

/// The rules of the `benchmarks` table.
pub(super) const BENCHMARKS_RULES: RowRules<'static> = RowRules {
    amounts: &["repetition", "copy", "value"],
    names: &[("benchmark", NAME), ("unit", NAME)],
};

/// The rules of the `counters` table (a delta may be negative: a level that fell).
pub(super) const COUNTERS_RULES: RowRules<'static> = RowRules {
    amounts: &["repetition", "level_start", "level_end", "window_sec"],
    names: &[("counter", NAME)],
};

/// The rules of `table`'s rows.
pub(super) fn rules_of(table: &str) -> RowRules<'static> {
    match table {
        "runs" => RUNS_RULES,
        "labels" | "system" => PAIRS_RULES,
        "functions" => FUNCTIONS_RULES,
        "benchmarks" => BENCHMARKS_RULES,
        "counters" => COUNTERS_RULES,
        _ => RowRules {
            amounts: &[],
            names: &[],
        },
    }
}

/// Checks that each runs row of `df` (from `files`, in `part`) names the test, kernel and
/// host of the partition its file is in: the other tables' files of the run are looked up
/// there.
fn check_partition(df: &DataFrame, files: &[DatasetFile], part: &Partition) -> Result<(), DatasetError> {
    let (tests, kernels, hosts) = (
        df.column("test_name")?.str()?,
        df.column("kernel_release")?.str()?,
        df.column("host_name")?.str()?,
    );
    for i in 0..df.height() {
        let got = super::layout::partition(
            tests.get(i).unwrap_or_default(),
            kernels.get(i).unwrap_or_default(),
            hosts.get(i).unwrap_or_default(),
        );
        if got != part.rel {
            return Err(DatasetError::BadFile {
                path: files.first().map(|f| f.path.clone()).unwrap_or_default(),
                reason: format!(
                    "row {}: its test, kernel and host are not those of the directory it is in",
                    i + 1
                ),
            });
        }
    }
    Ok(())
}

/// A lazy scan of `files` (no partition columns: each file holds one run's rows of one
/// test). polars is handed the bytes of the files opened (their copies in memory,
/// [`DatasetFile::snapshot`]), never a path: nothing renamed, swapped or rewritten since
/// the open is read, and no file descriptor is held for polars. Each copy is checked
/// ([`check_file`]) before polars is given it: the bytes checked are the bytes read. The
/// caller collects the scan under [`contained`].
pub(super) fn scan_files(files: &[DatasetFile]) -> Result<LazyFrame, DatasetError> {
    let args = ScanArgsParquet {
        hive_options: HiveOptions::new_disabled(),
        glob: false,
        ..Default::default()
    };
    let mut buffers = Vec::with_capacity(files.len());
    for f in files {
        // Each file's content is checked before polars reads it (check.rs).
        check_file(&f.file, &f.path)?;
        buffers.push(f.bytes()?.into());
    }
    Ok(LazyFrame::scan_parquet_sources(
        ScanSources::Buffers(buffers.into()),
        args,
    )?)
}

/// [`scan_files`], only `columns`.
fn scan_columns(files: &[DatasetFile], columns: &[&str]) -> Result<LazyFrame, DatasetError> {
    Ok(scan_files(files)?.select(columns.iter().map(|c| col(*c)).collect::<Vec<Expr>>()))
}

/// The selected runs of each test, in start order (then run id and test), with their labels
/// and repetitions. Runs missing a label condition are left out. The `runs` table is read
/// [`FILES_PER_BATCH`] files at a time, each with the same run's `labels` file, so memory
/// stays that of one batch whatever the number of runs.
pub fn scan_runs(dataset: &Path, sel: &Selection) -> Result<Vec<ScannedRun>, DatasetError> {
    runs_in_batches(dataset, sel, FILES_PER_BATCH)
}

fn runs_in_batches(dataset: &Path, sel: &Selection, batch: usize) -> Result<Vec<ScannedRun>, DatasetError> {
    let wanted: Vec<&(String, String)> = sel
        .conditions
        .iter()
        .filter(|c| !PARTITIONS.contains(&c.0.as_str()))
        .collect();
    let ds = Dataset::open(dataset)?;
    let mut out: Vec<ScannedRun> = Vec::new();
    for parts in partitions(&ds, "runs", sel)? {
        for part in parts {
            for chunk in part.ids.chunks(batch.max(1)) {
                out.extend(runs_of(&ds, &part, chunk)?);
            }
        }
    }
    out.retain(|r| wanted.iter().all(|(k, v)| r.labels.get(k) == Some(v)));
    out.sort_by(|a, b| (&a.started, &a.run_id, &a.test).cmp(&(&b.started, &b.run_id, &b.test)));
    Ok(out)
}

/// The runs `ids` of one partition, with their labels.
fn runs_of(ds: &Dataset, part: &Partition, ids: &[String]) -> Result<Vec<ScannedRun>, DatasetError> {
    let dataset = ds.path();
    let mut label_files = Vec::new();
    for id in ids {
        label_files.extend(ds.open_run_file("labels", &part.rel, id)?);
    }
    // One test's files: a run id names its labels.
    let mut labels: HashMap<String, BTreeMap<String, String>> = HashMap::new();
    if !label_files.is_empty() {
        let lf = scan_columns(&label_files, &["run_id", "key", "value", "schema_version"])?;
        let df = contained(&label_files, || Ok(lf.collect()?))?;
        check_version(&df, dataset, "labels")?;
        check_rows(&df, &label_files, PAIRS_RULES)?;
        let (ids, keys, values) = (strs(&df, "run_id")?, strs(&df, "key")?, strs(&df, "value")?);
        for ((id, k), v) in ids.into_iter().zip(keys).zip(values) {
            labels.entry(id).or_default().insert(k, v);
        }
    }
    let files = ids
        .iter()
        .map(|id| ds.must_open_run_file("runs", &part.rel, id))
        .collect::<Result<Vec<_>, _>>()?;
    let lf = scan_columns(
        &files,
        &[
            "run_id",
            "test_name",
            "schema_version",
            "repetition",
            "host_name",
            "kernel_release",
            "started",
            "cpu_seconds",
            "cpu_weight",
            "operations",
            "wall_sec",
        ],
    )?;
    let df = contained(&files, || Ok(lf.collect()?))?;
    check_version(&df, dataset, "runs")?;
    check_rows(&df, &files, RUNS_RULES)?;
    check_partition(&df, &files, part)?;
    let (ids, tests, hosts, kernels, started) = (
        strs(&df, "run_id")?,
        strs(&df, "test_name")?,
        strs(&df, "host_name")?,
        strs(&df, "kernel_release")?,
        strs(&df, "started")?,
    );
    let (reps, cpu_s, cpu_w, ops, wall) = (
        i64s(&df, "repetition")?,
        f64s(&df, "cpu_seconds")?,
        f64s(&df, "cpu_weight")?,
        i64s(&df, "operations")?,
        f64s(&df, "wall_sec")?,
    );
    // By run, then repetition (the rows were checked in file order, to name their row).
    let mut order: Vec<usize> = (0..ids.len()).collect();
    order.sort_by(|&a, &b| (&ids[a], reps[a]).cmp(&(&ids[b], reps[b])));
    let mut out: Vec<ScannedRun> = Vec::new();
    for i in order {
        let rep = ScannedRepetition {
            repetition: reps[i].unwrap_or(1),
            cpu_seconds: cpu_s[i],
            cpu_weight: cpu_w[i].unwrap_or(0.0),
            operations: ops[i],
            wall_sec: wall[i].unwrap_or(0.0),
        };
        if let Some(last) = out.last_mut().filter(|r| r.run_id == ids[i]) {
            last.repetitions.push(rep);
            continue;
        }
        out.push(ScannedRun {
            run_id: ids[i].clone(),
            test: tests[i].clone(),
            host: hosts[i].clone(),
            kernel: kernels[i].clone(),
            started: started[i].clone(),
            labels: labels.remove(&ids[i]).unwrap_or_default(),
            repetitions: vec![rep],
        });
    }
    Ok(out)
}

/// The benchmark values of `runs` (from [`scan_runs`]), read a batch of runs at a time.
pub fn scan_benchmarks(dataset: &Path, runs: &[ScannedRun]) -> Result<Vec<ScannedBenchmark>, DatasetError> {
    let columns = [
        "run_id",
        "repetition",
        "benchmark",
        "copy",
        "value",
        "unit",
        "higher_is_better",
    ];
    let mut out = Vec::new();
    each_batch(
        dataset,
        "benchmarks",
        runs,
        FILES_PER_BATCH,
        &columns,
        |test, files, lf| {
            let df = lf.collect()?;
            check_rows(&df, files, BENCHMARKS_RULES)?;
            let (ids, names, units) = (strs(&df, "run_id")?, strs(&df, "benchmark")?, strs(&df, "unit")?);
            let (reps, copies, values) = (i64s(&df, "repetition")?, i64s(&df, "copy")?, f64s(&df, "value")?);
            let hib: Vec<Option<bool>> = df.column("higher_is_better")?.bool()?.iter().collect();
            out.extend((0..df.height()).map(|i| ScannedBenchmark {
                run_id: ids[i].clone(),
                test: test.to_string(),
                repetition: reps[i].unwrap_or(1),
                benchmark: names[i].clone(),
                copy: copies[i],
                value: values[i].unwrap_or(f64::NAN),
                unit: units[i].clone(),
                higher_is_better: hib[i].unwrap_or(true),
            }));
            Ok(())
        },
    )?;
    Ok(out)
}

/// Files read by one collect when a large table is scanned run by run: the memory of the
/// scan is that of one batch (about 2,000 function rows a file), whatever the number of runs.
/// It also bounds the files held open at once, well below the usual limit of 1024.
const FILES_PER_BATCH: usize = 256;

/// Calls `each` with the test, the files and a lazy scan of `columns` of `runs`' files of
/// `table`, `batch` files of one test at a time, under [`contained`] (`each` collects the
/// scan). A run without a file has no rows (as in a join).
fn each_batch(
    dataset: &Path,
    table: &str,
    runs: &[ScannedRun],
    batch: usize,
    columns: &[&str],
    mut each: impl FnMut(&str, &[DatasetFile], LazyFrame) -> Result<(), DatasetError>,
) -> Result<(), DatasetError> {
    let ds = Dataset::open(dataset)?;
    let mut by_test: BTreeMap<&str, Vec<&ScannedRun>> = BTreeMap::new();
    for r in runs {
        by_test.entry(r.test.as_str()).or_default().push(r);
    }
    for (test, runs) in by_test {
        for chunk in runs.chunks(batch.max(1)) {
            let mut files = Vec::new();
            for r in chunk {
                files.extend(ds.open_run_file(table, &partition(&r.test, &r.kernel, &r.host), &r.run_id)?);
            }
            if !files.is_empty() {
                let lf = scan_columns(&files, columns)?;
                contained(&files, || each(test, &files, lf))?;
            }
        }
    }
    Ok(())
}

/// One function's seconds in one repetition, borrowed from the scanned batch.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FunctionSeconds<'a> {
    /// The run's id.
    pub run_id: &'a str,
    /// The repetition.
    pub repetition: i64,
    /// The function (clones folded).
    pub function: &'a str,
    /// Its module.
    pub module: &'a str,
    /// Seconds (null for a non-time event).
    pub seconds: Option<f64>,
}

/// Calls `each` with every function row of `runs` (with `only`, just those `(function,
/// module)` pairs), a batch of runs at a time, keeping nothing: a caller that sums as it
/// goes (the history's series) holds its sums, not the rows.
pub fn each_function_seconds(
    dataset: &Path,
    runs: &[ScannedRun],
    only: Option<&[(String, String)]>,
    each: impl FnMut(FunctionSeconds<'_>),
) -> Result<(), DatasetError> {
    seconds_in_batches(dataset, runs, only, FILES_PER_BATCH, each)
}

fn seconds_in_batches(
    dataset: &Path,
    runs: &[ScannedRun],
    only: Option<&[(String, String)]>,
    batch: usize,
    mut each: impl FnMut(FunctionSeconds<'_>),
) -> Result<(), DatasetError> {
    function_frames(dataset, runs, only, batch, |_, lf| {
        let df = lf.collect()?;
        let (ids, names, modules) = (
            df.column("run_id")?.str()?,
            df.column("function")?.str()?,
            df.column("module")?.str()?,
        );
        let reps = df.column("repetition")?.cast(&DataType::Int64)?;
        let secs = df.column("seconds")?.cast(&DataType::Float64)?;
        for ((((id, rep), name), module), s) in ids
            .iter()
            .zip(reps.i64()?.iter())
            .zip(names.iter())
            .zip(modules.iter())
            .zip(secs.f64()?.iter())
        {
            each(FunctionSeconds {
                run_id: id.unwrap_or_default(),
                repetition: rep.unwrap_or(1),
                function: name.unwrap_or_default(),
                module: module.unwrap_or_default(),
                seconds: s,
            });
        }
        Ok(())
    })
}

/// Calls `each` with the test and the lazy function rows of a batch of `runs` (with
/// `only`, just those `(function, module)` pairs).
fn function_frames(
    dataset: &Path,
    runs: &[ScannedRun],
    only: Option<&[(String, String)]>,
    batch: usize,
    mut each: impl FnMut(&str, LazyFrame) -> Result<(), DatasetError>,
) -> Result<(), DatasetError> {
    let names = match only {
        Some(only) => Some(DataFrame::new(
            only.len(),
            vec![
                Column::new("function".into(), only.iter().map(|f| f.0.clone()).collect::<Vec<_>>()),
                Column::new("module".into(), only.iter().map(|f| f.1.clone()).collect::<Vec<_>>()),
            ],
        )?),
        None => None,
    };
    let columns = ["run_id", "repetition", "function", "module", "seconds"];
    each_batch(dataset, "functions", runs, batch, &columns, |test, files, lf| {
        // Every row is checked (and named by its row in its file), then the names picked.
        let df = lf.collect()?;
        check_rows(&df, files, FUNCTIONS_RULES)?;
        let mut lf = df.lazy();
        if let Some(names) = &names {
            lf = lf.join(
                names.clone().lazy(),
                [col("function"), col("module")],
                [col("function"), col("module")],
                JoinArgs::new(JoinType::Inner),
            );
        }
        each(test, lf)
    })
}

/// The `n` functions of `runs` with the most weight summed over all their repetitions,
/// leaving out `skip` (the idle functions), heaviest first (ties by name). Each batch of runs
/// is summed by polars and the partial sums added up here: the memory is that of one batch
/// and of one sum per distinct function, whatever the number of runs.
pub fn top_functions(
    dataset: &Path,
    runs: &[ScannedRun],
    n: usize,
    skip: &[String],
) -> Result<Vec<(String, String)>, DatasetError> {
    top_in_batches(dataset, runs, n, skip, FILES_PER_BATCH)
}

fn top_in_batches(
    dataset: &Path,
    runs: &[ScannedRun],
    n: usize,
    skip: &[String],
    batch: usize,
) -> Result<Vec<(String, String)>, DatasetError> {
    let mut totals: HashMap<(String, String), f64> = HashMap::new();
    each_batch(
        dataset,
        "functions",
        runs,
        batch,
        &["run_id", "function", "module", "weight"],
        |_, files, lf| {
            let df = lf.collect()?;
            check_rows(&df, files, FUNCTIONS_RULES)?;
            let df = df
                .lazy()
                .group_by([col("function"), col("module")])
                .agg([col("weight").sum().alias("total")])
                .collect()?;
            for ((f, m), w) in strs(&df, "function")?
                .into_iter()
                .zip(strs(&df, "module")?)
                .zip(f64s(&df, "total")?)
            {
                *totals.entry((f, m)).or_default() += w.unwrap_or(0.0);
            }
            Ok(())
        },
    )?;
    let mut ranked: Vec<((String, String), f64)> = totals.into_iter().filter(|(k, _)| !skip.contains(&k.0)).collect();
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    Ok(ranked.into_iter().take(n).map(|(k, _)| k).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A function's time in one repetition.
    #[derive(Debug, Clone, PartialEq)]
    struct ScannedFunction {
        /// The run's id.
        run_id: String,
        /// The test.
        test: String,
        /// The repetition.
        repetition: i64,
        /// The function (clones folded).
        function: String,
        /// Its module.
        module: String,
        /// Seconds (null for a non-time event).
        seconds: Option<f64>,
    }

    fn functions_of(df: &DataFrame) -> Result<Vec<ScannedFunction>, DatasetError> {
        let (ids, tests, names, modules) = (
            strs(df, "run_id")?,
            strs(df, "test")?,
            strs(df, "function")?,
            strs(df, "module")?,
        );
        let (reps, secs) = (i64s(df, "repetition")?, f64s(df, "seconds")?);
        Ok((0..df.height())
            .map(|i| ScannedFunction {
                run_id: ids[i].clone(),
                test: tests[i].clone(),
                repetition: reps[i].unwrap_or(1),
                function: names[i].clone(),
                module: modules[i].clone(),
                seconds: secs[i],
            })
            .collect())
    }

    use polars_io::parquet::write::ParquetWriter;

    fn write(dataset: &Path, table: &str, test: &str, kernel: &str, host: &str, id: &str, mut df: DataFrame) {
        let dir = dataset.join(table).join(partition(test, kernel, host));
        std::fs::create_dir_all(&dir).unwrap();
        let mut bytes = Vec::new();
        ParquetWriter::new(&mut bytes).finish(&mut df).unwrap();
        crate::fsio::write_atomic(&dir.join(format!("{id}.parquet")), &bytes, 0o644).unwrap();
    }

    /// A dataset of 23 runs of test `t` and 5 of `u` (sharing run ids), on two kernels and
    /// two hosts (one of them needing percent-encoding), 1 to 3 repetitions, 40 functions
    /// of integral weight (as nanoseconds are) with some missing from some repetitions, a
    /// function in two modules, two functions of equal weight, an idle function heavier
    /// than all, and a run of a non-time event (no seconds). Runs labelled `side=a|b`.
    fn dataset(d: &Path) {
        let mut x: u64 = 7;
        let mut rnd = move |m: u64| {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (x >> 33) % m
        };
        for (test, count) in [("t/1 ä", 23), ("u", 5)] {
            for k in 0..count {
                let id = format!("{k:016x}");
                let (kernel, host) = (["6.1", "6.2"][k % 2], ["h0", "box 1/ä=x"][(k / 2) % 2]);
                let reps = 1 + (k % 3) as i64;
                let time = k != 5;
                let runs = df! {
                    "run_id" => vec![id.clone(); reps as usize],
                    "schema_version" => vec![SCHEMA_VERSION; reps as usize],
                    "repetition" => (1..=reps).collect::<Vec<_>>(),
                    "test_name" => vec![test; reps as usize],
                    "host_name" => vec![host; reps as usize],
                    "kernel_release" => vec![kernel; reps as usize],
                    "started" => vec![format!("2026-01-01T00:{k:02}:00Z"); reps as usize],
                    "cpu_seconds" => vec![time.then_some(1.0); reps as usize],
                    "cpu_weight" => vec![1e9; reps as usize],
                    "operations" => vec![None::<i64>; reps as usize],
                    "wall_sec" => vec![1.0; reps as usize],
                }
                .unwrap();
                write(d, "runs", test, kernel, host, &id, runs);
                let side = if k % 3 == 0 { "b" } else { "a" };
                let labels = df! {
                    "run_id" => [id.clone()], "schema_version" => [SCHEMA_VERSION],
                    "key" => ["side"], "value" => [side],
                }
                .unwrap();
                write(d, "labels", test, kernel, host, &id, labels);
                let (mut rep, mut func, mut module, mut samples, mut weight) = (vec![], vec![], vec![], vec![], vec![]);
                for r in 1..=reps {
                    for i in 0..40u64 {
                        if i > 5 && rnd(5) == 0 {
                            continue;
                        }
                        let w = match i {
                            0 => 90_000_000_000,
                            2 => 20_000_000_000,
                            _ => (1 + rnd(1000)) * 1_000_000 * (40 - i),
                        };
                        let name = match i {
                            0 => "do_idle".to_string(),
                            1 | 2 => "tied".to_string(),
                            _ => format!("f{i:02}"),
                        };
                        rep.push(r);
                        func.push(name);
                        module.push(if i == 1 {
                            "ext4"
                        } else if i == 2 {
                            "kernel"
                        } else {
                            ["kernel", "user"][(i % 2) as usize]
                        });
                        samples.push((w / 1_000_000) as i64);
                        weight.push(if i == 1 { 20e9 } else { w as f64 });
                    }
                }
                let n = rep.len();
                let seconds: Vec<Option<f64>> = weight.iter().map(|w| time.then_some(w * 1e-9)).collect();
                let functions = df! {
                    "run_id" => vec![id.clone(); n], "schema_version" => vec![SCHEMA_VERSION; n],
                    "repetition" => rep, "function" => func, "module" => module,
                    "samples" => samples, "weight" => weight, "seconds" => seconds,
                }
                .unwrap();
                write(d, "functions", test, kernel, host, &id, functions);
            }
        }
    }

    fn keep_runs(lf: LazyFrame, runs: &[ScannedRun]) -> LazyFrame {
        let keys = df! {
            "run_id" => runs.iter().map(|r| r.run_id.clone()).collect::<Vec<_>>(),
            "test" => runs.iter().map(|r| r.test.clone()).collect::<Vec<_>>(),
        }
        .unwrap();
        lf.join(
            keys.lazy(),
            [col("run_id"), col("test")],
            [col("run_id"), col("test")],
            JoinArgs::new(JoinType::Inner),
        )
    }

    /// The straightforward ranking: the whole table of the selection, joined and summed.
    fn whole_top(d: &Path, sel: &Selection, runs: &[ScannedRun], n: usize, skip: &[String]) -> Vec<(String, String)> {
        let lf = scan_table(d, "functions", sel).unwrap();
        let df = keep_runs(lf, runs)
            .group_by([col("function"), col("module")])
            .agg([col("weight").sum().alias("total")])
            .sort_by_exprs(
                [col("total"), col("function"), col("module")],
                SortMultipleOptions::default().with_order_descending_multi([true, false, false]),
            )
            .collect()
            .unwrap();
        let (f, m) = (strs(&df, "function").unwrap(), strs(&df, "module").unwrap());
        f.into_iter()
            .zip(m)
            .filter(|(f, _)| !skip.contains(f))
            .take(n)
            .collect()
    }

    /// The straightforward rows: the whole table of the selection joined to the runs and names.
    fn whole_rows(d: &Path, sel: &Selection, runs: &[ScannedRun], only: &[(String, String)]) -> Vec<ScannedFunction> {
        let names = df! {
            "function" => only.iter().map(|f| f.0.clone()).collect::<Vec<_>>(),
            "module" => only.iter().map(|f| f.1.clone()).collect::<Vec<_>>(),
        }
        .unwrap();
        let lf = keep_runs(scan_table(d, "functions", sel).unwrap(), runs).join(
            names.lazy(),
            [col("function"), col("module")],
            [col("function"), col("module")],
            JoinArgs::new(JoinType::Inner),
        );
        sorted(functions_of(&lf.collect().unwrap()).unwrap())
    }

    fn sorted(mut rows: Vec<ScannedFunction>) -> Vec<ScannedFunction> {
        rows.sort_by(|a, b| {
            (&a.run_id, &a.test, a.repetition, &a.function, &a.module).cmp(&(
                &b.run_id,
                &b.test,
                b.repetition,
                &b.function,
                &b.module,
            ))
        });
        rows
    }

    /// The runs, in any batch size: selected by test, partition (an encoded host name) and
    /// label, in start order, each with its repetitions and labels.
    #[test]
    fn runs_are_selected_by_partition_and_label_in_any_batch() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        dataset(d);
        let cond = |k: &str, v: &str| (k.to_string(), v.to_string());
        let cases = [
            ("t/1 ä", vec![], (0..23).collect()),
            (
                "t/1 ä",
                vec![cond("side", "b")],
                (0..23).filter(|k| k % 3 == 0).collect(),
            ),
            (
                "t/1 ä",
                vec![cond("host", "box 1/ä=x")],
                (0..23).filter(|k| (k / 2) % 2 == 1).collect(),
            ),
            ("u", vec![cond("kernel", "6.1"), cond("side", "a")], vec![2, 4]),
            ("u", vec![cond("kernel", "6.3")], vec![]),
        ];
        for (test, conditions, want) in cases {
            let sel = Selection::new(Some(test.into()), conditions.clone());
            for batch in [1, 4, 1000] {
                let runs = runs_in_batches(d, &sel, batch).unwrap();
                let ks: Vec<usize> = runs
                    .iter()
                    .map(|r| usize::from_str_radix(&r.run_id, 16).unwrap())
                    .collect();
                assert_eq!(ks, want, "{test} {conditions:?} batch {batch}");
                for (r, k) in runs.iter().zip(ks) {
                    assert_eq!(r.test, test);
                    assert_eq!(r.host, ["h0", "box 1/ä=x"][(k / 2) % 2]);
                    assert_eq!(r.kernel, ["6.1", "6.2"][k % 2]);
                    let reps: Vec<i64> = r.repetitions.iter().map(|p| p.repetition).collect();
                    assert_eq!(reps, (1..=1 + (k % 3) as i64).collect::<Vec<_>>());
                    assert_eq!(
                        r.labels.get("side").map(String::as_str),
                        Some(if k % 3 == 0 { "b" } else { "a" })
                    );
                }
            }
        }
        // No test named: every test's runs, the two tests of a run id apart.
        assert_eq!(scan_runs(d, &Selection::default()).unwrap().len(), 28);
    }

    #[test]
    fn batched_scan_gives_the_rows_and_ranking_of_the_whole_table() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        dataset(d);
        let skip = vec!["do_idle".to_string()];
        let cases: [(Vec<(String, String)>, usize); 3] = [
            (vec![], 23),
            (vec![("side".into(), "a".into())], 15),
            (vec![("kernel".into(), "6.2".into())], 11),
        ];
        for (conditions, count) in cases {
            let sel = Selection::new(Some("t/1 ä".into()), conditions);
            let runs = scan_runs(d, &sel).unwrap();
            assert_eq!(runs.len(), count);
            assert!(runs.iter().any(|r| r.host == "box 1/ä=x"));
            let top = whole_top(d, &sel, &runs, 10, &skip);
            assert_eq!(top.len(), 10);
            assert!(top.contains(&("tied".into(), "ext4".into())));
            let rows = whole_rows(d, &sel, &runs, &top);
            assert!(rows.iter().any(|r| r.seconds.is_none()) == runs.iter().any(|r| r.run_id == format!("{:016x}", 5)));
            for batch in [1, 4, 1000] {
                assert_eq!(
                    top_in_batches(d, &runs, 10, &skip, batch).unwrap(),
                    top,
                    "batch {batch}"
                );
                let mut got = Vec::new();
                seconds_in_batches(d, &runs, Some(&top), batch, |f| {
                    got.push((
                        f.run_id.to_string(),
                        f.repetition,
                        f.function.to_string(),
                        f.module.to_string(),
                        f.seconds,
                    ))
                })
                .unwrap();
                got.sort_by(|a, b| (&a.0, a.1, &a.2, &a.3).cmp(&(&b.0, b.1, &b.2, &b.3)));
                let want: Vec<_> = rows
                    .iter()
                    .map(|r| {
                        (
                            r.run_id.clone(),
                            r.repetition,
                            r.function.clone(),
                            r.module.clone(),
                            r.seconds,
                        )
                    })
                    .collect();
                assert_eq!(got.len(), want.len(), "batch {batch}");
                assert_eq!(got, want, "batch {batch}");
            }
        }
    }
}
