//! Reading a dataset back: polars lazy scans of the tables with hive partitions, so a
//! selection by test, kernel or host reads only those directories (predicate pushdown) and
//! only the columns asked for (projection pushdown). Labels (`commit=...`) select runs by a
//! scan of the small `labels` table, then an inner join keeps those runs' rows of the
//! large tables. Rows come back as plain structs for the statistics, which stay ours.

use super::{io_err, DatasetError, SCHEMA_VERSION};
use polars::prelude::*;
use std::collections::BTreeMap;
use std::path::Path;

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

/// The function rows of `runs`; with `only`, just those `(function, module)` pairs.
pub fn scan_functions(
    dataset: &Path,
    sel: &Selection,
    runs: &[ScannedRun],
    only: Option<&[(String, String)]>,
) -> Result<Vec<ScannedFunction>, DatasetError> {
    let mut lf = keep_runs(
        scan_table(dataset, "functions", sel)?.select([
            col("run_id"),
            col("test"),
            col("repetition"),
            col("function"),
            col("module"),
            col("samples"),
            col("weight"),
            col("seconds"),
        ]),
        runs,
    )?;
    if let Some(only) = only {
        let names = DataFrame::new(
            only.len(),
            vec![
                Column::new("function".into(), only.iter().map(|f| f.0.clone()).collect::<Vec<_>>()),
                Column::new("module".into(), only.iter().map(|f| f.1.clone()).collect::<Vec<_>>()),
            ],
        )?;
        lf = lf.join(
            names.lazy(),
            [col("function"), col("module")],
            [col("function"), col("module")],
            JoinArgs::new(JoinType::Inner),
        );
    }
    functions_of(&lf.collect()?)
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
/// leaving out `skip` (the idle functions), heaviest first; aggregated by polars, so only
/// `n` rows leave the scan.
pub fn top_functions(
    dataset: &Path,
    sel: &Selection,
    runs: &[ScannedRun],
    n: usize,
    skip: &[String],
) -> Result<Vec<(String, String)>, DatasetError> {
    let lf = keep_runs(
        scan_table(dataset, "functions", sel)?.select([
            col("run_id"),
            col("test"),
            col("function"),
            col("module"),
            col("weight"),
        ]),
        runs,
    )?;
    let df = lf
        .group_by([col("function"), col("module")])
        .agg([col("weight").sum().alias("total")])
        .sort_by_exprs(
            [col("total"), col("function"), col("module")],
            SortMultipleOptions::default().with_order_descending_multi([true, false, false]),
        )
        .collect()?;
    let (names, modules) = (strs(&df, "function")?, strs(&df, "module")?);
    Ok(names
        .into_iter()
        .zip(modules)
        .filter(|(f, _)| !skip.contains(f))
        .take(n)
        .collect())
}
