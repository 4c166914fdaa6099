//! Reading a dataset back: polars lazy scans of the tables with hive partitions, so a
//! selection by test, kernel or host reads only those directories (predicate pushdown) and
//! only the columns asked for (projection pushdown). Labels (`commit=...`) select runs by a
//! scan of the small `labels` table, then an inner join keeps those runs' rows of the
//! large tables. Rows come back as plain structs for the statistics, which stay ours.

use super::layout::partition_dir;
use super::{io_err, DatasetError, SCHEMA_VERSION};
use polars::prelude::*;
use std::collections::{BTreeMap, HashMap};
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

/// A function's time in one repetition.
#[derive(Debug, Clone, PartialEq)]
pub struct ScannedFunction {
    /// The run's id.
    pub run_id: String,
    /// The test.
    pub test: String,
    /// The repetition.
    pub repetition: i64,
    /// The function (clones folded).
    pub function: String,
    /// Its module.
    pub module: String,
    /// Samples.
    pub samples: i64,
    /// Weight in the profile's unit.
    pub weight: f64,
    /// Seconds (null for a non-time event).
    pub seconds: Option<f64>,
}

/// The lazy scan of one table, with the partitions as string columns and the test,
/// kernel and host conditions pushed down.
pub fn scan_table(dataset: &Path, table: &str, sel: &Selection) -> Result<LazyFrame, DatasetError> {
    let dir = dataset.join(table);
    if !crate::fsio::is_real_dir(&dir) {
        return Err(io_err(&dir)(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            format!("no table {table:?}: not a dataset written by upcmp export"),
        )));
    }
    let glob = format!("{}/**/*.parquet", dir.display());
    let args = ScanArgsParquet {
        // The partitions are strings (a kernel `6.1` is no number), never dates.
        hive_options: HiveOptions {
            schema: Some(Arc::new(Schema::from_iter(
                PARTITIONS.iter().map(|k| Field::new((*k).into(), DataType::String)),
            ))),
            try_parse_dates: false,
            ..HiveOptions::new_enabled()
        },
        ..Default::default()
    };
    let mut lf = LazyFrame::scan_parquet(PlRefPath::new(glob.as_str()), args)?;
    if let Some(t) = &sel.test {
        lf = lf.filter(col("test").eq(lit(t.as_str())));
    }
    for (k, v) in sel
        .conditions
        .iter()
        .filter(|c| c.0 != "test" && PARTITIONS.contains(&c.0.as_str()))
    {
        lf = lf.filter(col(k.as_str()).eq(lit(v.as_str())));
    }
    Ok(lf)
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

/// The selected runs of each test, in start order (then run id), with their labels and
/// repetitions. Runs missing a label condition are left out.
pub fn scan_runs(dataset: &Path, sel: &Selection) -> Result<Vec<ScannedRun>, DatasetError> {
    let labels = scan_table(dataset, "labels", sel)?
        .select([
            col("run_id"),
            col("test"),
            col("key"),
            col("value"),
            col("schema_version"),
        ])
        .collect()?;
    check_version(&labels, dataset, "labels")?;
    let mut by_run: BTreeMap<(String, String), BTreeMap<String, String>> = BTreeMap::new();
    let (ids, tests, keys, values) = (
        strs(&labels, "run_id")?,
        strs(&labels, "test")?,
        strs(&labels, "key")?,
        strs(&labels, "value")?,
    );
    for i in 0..ids.len() {
        by_run
            .entry((ids[i].clone(), tests[i].clone()))
            .or_default()
            .insert(keys[i].clone(), values[i].clone());
    }
    let runs = scan_table(dataset, "runs", sel)?
        .select([
            col("run_id"),
            col("test"),
            col("schema_version"),
            col("repetition"),
            col("host_name"),
            col("kernel_release"),
            col("started"),
            col("cpu_seconds"),
            col("cpu_weight"),
            col("operations"),
            col("wall_sec"),
        ])
        .sort(["started", "run_id", "repetition"], Default::default())
        .collect()?;
    check_version(&runs, dataset, "runs")?;
    let (ids, tests, hosts, kernels, started) = (
        strs(&runs, "run_id")?,
        strs(&runs, "test")?,
        strs(&runs, "host_name")?,
        strs(&runs, "kernel_release")?,
        strs(&runs, "started")?,
    );
    let (reps, cpu_s, cpu_w, ops, wall) = (
        i64s(&runs, "repetition")?,
        f64s(&runs, "cpu_seconds")?,
        f64s(&runs, "cpu_weight")?,
        i64s(&runs, "operations")?,
        f64s(&runs, "wall_sec")?,
    );
    let wanted: Vec<&(String, String)> = sel
        .conditions
        .iter()
        .filter(|c| !PARTITIONS.contains(&c.0.as_str()))
        .collect();
    let mut out: Vec<ScannedRun> = Vec::new();
    for i in 0..ids.len() {
        let rep = ScannedRepetition {
            repetition: reps[i].unwrap_or(1),
            cpu_seconds: cpu_s[i],
            cpu_weight: cpu_w[i].unwrap_or(0.0),
            operations: ops[i],
            wall_sec: wall[i].unwrap_or(0.0),
        };
        if let Some(last) = out.last_mut().filter(|r| r.run_id == ids[i] && r.test == tests[i]) {
            last.repetitions.push(rep);
            continue;
        }
        let labels = by_run
            .get(&(ids[i].clone(), tests[i].clone()))
            .cloned()
            .unwrap_or_default();
        if !wanted.iter().all(|(k, v)| labels.get(k) == Some(v)) {
            continue;
        }
        out.push(ScannedRun {
            run_id: ids[i].clone(),
            test: tests[i].clone(),
            host: hosts[i].clone(),
            kernel: kernels[i].clone(),
            started: started[i].clone(),
            labels,
            repetitions: vec![rep],
        });
    }
    Ok(out)
}

/// The `run_id`/`test` pairs of `runs` as a frame to join on: the rows of other runs drop.
fn run_keys(runs: &[ScannedRun]) -> Result<LazyFrame, DatasetError> {
    let df = DataFrame::new(
        runs.len(),
        vec![
            Column::new(
                "run_id".into(),
                runs.iter().map(|r| r.run_id.clone()).collect::<Vec<_>>(),
            ),
            Column::new("test".into(), runs.iter().map(|r| r.test.clone()).collect::<Vec<_>>()),
        ],
    )?;
    Ok(df.lazy())
}

fn keep_runs(lf: LazyFrame, runs: &[ScannedRun]) -> Result<LazyFrame, DatasetError> {
    Ok(lf.join(
        run_keys(runs)?,
        [col("run_id"), col("test")],
        [col("run_id"), col("test")],
        JoinArgs::new(JoinType::Inner),
    ))
}

/// The benchmark values of `runs` (from [`scan_runs`] with the same selection).
pub fn scan_benchmarks(
    dataset: &Path,
    sel: &Selection,
    runs: &[ScannedRun],
) -> Result<Vec<ScannedBenchmark>, DatasetError> {
    let lf = scan_table(dataset, "benchmarks", sel)?.select([
        col("run_id"),
        col("test"),
        col("repetition"),
        col("benchmark"),
        col("copy"),
        col("value"),
        col("unit"),
        col("higher_is_better"),
    ]);
    let df = keep_runs(lf, runs)?.collect()?;
    let (ids, tests, names, units) = (
        strs(&df, "run_id")?,
        strs(&df, "test")?,
        strs(&df, "benchmark")?,
        strs(&df, "unit")?,
    );
    let (reps, copies, values) = (i64s(&df, "repetition")?, i64s(&df, "copy")?, f64s(&df, "value")?);
    let hib: Vec<Option<bool>> = df.column("higher_is_better")?.bool()?.iter().collect();
    Ok((0..df.height())
        .map(|i| ScannedBenchmark {
            run_id: ids[i].clone(),
            test: tests[i].clone(),
            repetition: reps[i].unwrap_or(1),
            benchmark: names[i].clone(),
            copy: copies[i],
            value: values[i].unwrap_or(f64::NAN),
            unit: units[i].clone(),
            higher_is_better: hib[i].unwrap_or(true),
        })
        .collect())
}

/// Files read by one collect when a large table is scanned run by run: the memory of the
/// scan is that of one batch (about 2,000 function rows a file), whatever the number of runs.
const FILES_PER_BATCH: usize = 256;

/// The file of `table` holding the rows of `run` (the layout of [`super::layout`]).
fn run_file(dataset: &Path, table: &str, run: &ScannedRun) -> PathBuf {
    partition_dir(dataset, table, &run.test, &run.kernel, &run.host).join(format!("{}.parquet", run.run_id))
}

/// Calls `each` with the test and a lazy scan of `columns` of `runs`' files of `table`,
/// `batch` files of one test at a time. A run without a file has no rows (as in a join).
fn each_batch(
    dataset: &Path,
    table: &str,
    runs: &[ScannedRun],
    batch: usize,
    columns: &[&str],
    mut each: impl FnMut(&str, LazyFrame) -> Result<(), DatasetError>,
) -> Result<(), DatasetError> {
    let mut by_test: BTreeMap<&str, Vec<PathBuf>> = BTreeMap::new();
    for r in runs {
        let path = run_file(dataset, table, r);
        match std::fs::symlink_metadata(&path) {
            Ok(_) => by_test.entry(r.test.as_str()).or_default().push(path),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(io_err(&path)(e)),
        }
    }
    let args = ScanArgsParquet {
        // Each file holds one run's rows of one test: no partition columns needed.
        hive_options: HiveOptions::new_disabled(),
        glob: false,
        ..Default::default()
    };
    let cols: Vec<Expr> = columns.iter().map(|c| col(*c)).collect();
    for (test, paths) in by_test {
        for chunk in paths.chunks(batch.max(1)) {
            let files: Vec<PlRefPath> = chunk
                .iter()
                .map(|p| PlRefPath::new(p.to_string_lossy().as_ref()))
                .collect();
            each(
                test,
                LazyFrame::scan_parquet_files(files.into_iter().collect(), args.clone())?.select(cols.clone()),
            )?;
        }
    }
    Ok(())
}

/// The function rows of `runs`; with `only`, just those `(function, module)` pairs. Read a
/// batch of runs at a time, so only the rows kept are ever held together.
pub fn scan_functions(
    dataset: &Path,
    runs: &[ScannedRun],
    only: Option<&[(String, String)]>,
) -> Result<Vec<ScannedFunction>, DatasetError> {
    functions_in_batches(dataset, runs, only, FILES_PER_BATCH)
}

fn functions_in_batches(
    dataset: &Path,
    runs: &[ScannedRun],
    only: Option<&[(String, String)]>,
    batch: usize,
) -> Result<Vec<ScannedFunction>, DatasetError> {
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
    let columns = [
        "run_id",
        "repetition",
        "function",
        "module",
        "samples",
        "weight",
        "seconds",
    ];
    let mut out = Vec::new();
    each_batch(dataset, "functions", runs, batch, &columns, |test, mut lf| {
        if let Some(names) = &names {
            lf = lf.join(
                names.clone().lazy(),
                [col("function"), col("module")],
                [col("function"), col("module")],
                JoinArgs::new(JoinType::Inner),
            );
        }
        out.extend(functions_of(&lf.with_column(lit(test).alias("test")).collect()?)?);
        Ok(())
    })?;
    Ok(out)
}

fn functions_of(df: &DataFrame) -> Result<Vec<ScannedFunction>, DatasetError> {
    let (ids, tests, names, modules) = (
        strs(df, "run_id")?,
        strs(df, "test")?,
        strs(df, "function")?,
        strs(df, "module")?,
    );
    let (reps, samples, weights, secs) = (
        i64s(df, "repetition")?,
        i64s(df, "samples")?,
        f64s(df, "weight")?,
        f64s(df, "seconds")?,
    );
    Ok((0..df.height())
        .map(|i| ScannedFunction {
            run_id: ids[i].clone(),
            test: tests[i].clone(),
            repetition: reps[i].unwrap_or(1),
            function: names[i].clone(),
            module: modules[i].clone(),
            samples: samples[i].unwrap_or(0),
            weight: weights[i].unwrap_or(0.0),
            seconds: secs[i],
        })
        .collect())
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
        &["function", "module", "weight"],
        |_, lf| {
            let df = lf
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
    use polars_io::parquet::write::ParquetWriter;

    fn write(dataset: &Path, table: &str, test: &str, kernel: &str, host: &str, id: &str, mut df: DataFrame) {
        let dir = partition_dir(dataset, table, test, kernel, host);
        super::super::layout::make_dirs(dataset, &dir).unwrap();
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
                let got = sorted(functions_in_batches(d, &runs, Some(&top), batch).unwrap());
                assert_eq!(got.len(), rows.len(), "batch {batch}");
                assert_eq!(got, rows, "batch {batch}");
            }
        }
    }
}
