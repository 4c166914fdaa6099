//! `upcmp export RUN... --to DATASET`: each test of each run becomes one file per table,
//! named after the run's id. The dataset may be another user's: every directory in it is
//! made and opened relative to the fd of the one above without following a link, and each
//! file is written as a temporary file and renamed within its directory's fd, so a
//! directory swapped for a link never redirects a write. All of a run's files are written
//! as temporary files first and renamed in only when all are written, the `runs` files
//! last (readers go by the runs table): a failed export leaves nothing, and a reader sees
//! a run whole or not at all. Exporting a run again replaces its files; two exporters never
//! write the same temporary file, so concurrent exports into one dataset lose and corrupt
//! nothing.

use super::layout::{partition, run_id};
use super::{io_err, DatasetError, SCHEMA_VERSION};
use crate::fsio::beneath::Dir;
use crate::model::naming::base_name;
use crate::model::profile::Unit;
use crate::model::Profile;
use crate::store::run::{StoredRepetition, StoredRun, StoredTest};
use crate::store::StoreError;
use polars::prelude::*;
use polars_io::parquet::write::ParquetWriter;
use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use upcmp_parsers::counters::CounterValue;
use upcmp_parsers::upout::Direction;

/// What to add to each exported run, and where the dataset may be.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct ExportOptions {
    /// `KEY=VALUE` labels (commit, patch, ...), in order.
    pub labels: Vec<(String, String)>,
    /// Write into a dataset whose parent directory every user may write (no sticky bit).
    pub allow_shared_parent: bool,
}

/// What an export wrote.
#[derive(Debug, Clone, Default)]
pub struct ExportSummary {
    /// The run's id.
    pub run_id: String,
    /// Tests exported (those with a profile).
    pub tests: usize,
    /// Files written.
    pub files: usize,
    /// Bytes written.
    pub bytes: u64,
}

/// Parses `KEY=VALUE`.
pub fn parse_label(s: &str) -> Result<(String, String), DatasetError> {
    match s.split_once('=') {
        Some((k, v)) if !k.is_empty() && !k.contains(['\n', '\0']) && !v.contains('\0') => Ok((k.into(), v.into())),
        _ => Err(DatasetError::Usage(format!(
            "label {s:?}: expected KEY=VALUE with a non-empty KEY (e.g. commit=3f2a1b)"
        ))),
    }
}

/// The facts of a run that every table's rows share.
struct RunFacts<'a> {
    id: String,
    host: &'a str,
    kernel: &'a str,
}

/// Opens the dataset at `dataset` for writing, made if missing, under the rules of every
/// output path (docs/security.md): no parent that every user may write without the sticky
/// bit (unless `allow_shared_parent`), no link in a shared sticky directory on the path.
pub fn open_for_export(dataset: &Path, allow_shared_parent: bool) -> Result<Dir, DatasetError> {
    let path = crate::fsio::clean(dataset);
    if let (Some(parent), false) = (crate::fsio::shared_parent(&path), allow_shared_parent) {
        return Err(StoreError::SharedParent { path, parent }.into());
    }
    crate::store::outdir::check_links(&path)?;
    match crate::fsio::create_dir(&path, 0o755) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(io_err(&path)(e)),
    }
    Ok(Dir::open(&path)?)
}

/// Opens the directory `rel` below `root`, making each missing component (mode 0755) as a
/// real directory: one made meanwhile by another exporter is fine, a link is an error.
fn make_dirs(root: &Dir, rel: &Path) -> Result<Dir, DatasetError> {
    let mut at = root.try_clone()?;
    for c in rel.components() {
        at = at.make_dir(c.as_os_str(), 0o755)?;
    }
    Ok(at)
}

/// A file written as a temporary file, to be renamed in.
struct Pending {
    dir: PathBuf,
    tmp: OsString,
    name: OsString,
    runs: bool,
}

/// Removes the temporary files of `pending` (after a failure: nothing of the run stays).
fn remove_temps(root: &Dir, pending: &[Pending]) {
    for p in pending {
        if let Ok(dir) = root.open_dir_beneath(&p.dir) {
            let _ = dir.remove_file(&p.tmp);
        }
    }
}

/// Exports every test of `run` into `dataset` (created if missing).
pub fn export_run(run: &StoredRun, dataset: &Path, opts: &ExportOptions) -> Result<ExportSummary, DatasetError> {
    let root = open_for_export(dataset, opts.allow_shared_parent)?;
    export_into(run, &root, opts)
}

/// Exports every test of `run` into the dataset opened at `root` ([`open_for_export`]).
pub fn export_into(run: &StoredRun, root: &Dir, opts: &ExportOptions) -> Result<ExportSummary, DatasetError> {
    let host = run.system.get("host").unwrap_or("unknown");
    let kernel = run.system.get("kernel-release").unwrap_or("unknown");
    let m = &run.marker;
    let runs = m.runs.to_string();
    let facts = RunFacts {
        id: run_id(&[host, kernel, &m.started, &m.command, &runs]),
        host,
        kernel,
    };
    let mut sum = ExportSummary {
        run_id: facts.id.clone(),
        ..Default::default()
    };
    let mut pending: Vec<Pending> = Vec::new();
    let written = write_temps(run, root, opts, &facts, &mut pending, &mut sum);
    if let Err(e) = written {
        remove_temps(root, &pending);
        return Err(e);
    }
    // The runs files last: a reader finds a run by its runs file, so it sees all of the
    // run's files or none.
    pending.sort_by_key(|p| p.runs);
    for (k, p) in pending.iter().enumerate() {
        let renamed = root
            .open_dir_beneath(&p.dir)
            .and_then(|dir| dir.rename(&p.tmp, OsStr::new(&p.name)));
        if let Err(e) = renamed {
            remove_temps(root, &pending[k..]);
            return Err(e.into());
        }
    }
    Ok(sum)
}

/// Writes every table's file of every test of `run` as a temporary file in its partition
/// (made if missing), adding each to `pending` and `sum`.
fn write_temps(
    run: &StoredRun,
    root: &Dir,
    opts: &ExportOptions,
    facts: &RunFacts,
    pending: &mut Vec<Pending>,
    sum: &mut ExportSummary,
) -> Result<(), DatasetError> {
    for test in run.tests.iter().filter(|t| !t.repetitions.is_empty()) {
        let tables = [
            ("runs", runs_table(run, test, facts)?),
            ("labels", labels_table(facts, &opts.labels)?),
            ("system", system_table(run, facts)?),
            ("benchmarks", benchmarks_table(test, facts)?),
            ("functions", functions_table(test, facts)?),
            ("counters", counters_table(test, facts)?),
        ];
        for (table, mut df) in tables {
            let rel = Path::new(table).join(partition(&test.name, facts.kernel, facts.host));
            let dir = make_dirs(root, &rel)?;
            let mut bytes = Vec::new();
            ParquetWriter::new(&mut bytes).finish(&mut df)?;
            let name = OsString::from(format!("{}.parquet", facts.id));
            let tmp = dir.write_temp(&name, &bytes, 0o644)?;
            pending.push(Pending {
                dir: rel,
                tmp,
                name,
                runs: table == "runs",
            });
            sum.files += 1;
            sum.bytes += bytes.len() as u64;
        }
        sum.tests += 1;
    }
    Ok(())
}

fn str_col(name: &str, v: Vec<String>) -> Column {
    Column::new(name.into(), v)
}

fn id_cols(facts: &RunFacts, n: usize) -> Vec<Column> {
    vec![
        str_col("run_id", vec![facts.id.clone(); n]),
        Column::new("schema_version".into(), vec![SCHEMA_VERSION; n]),
    ]
}

/// Seconds of a weight, for a time event.
fn seconds(p: &Profile, weight: f64) -> Option<f64> {
    (p.unit == Unit::Nanoseconds).then_some(weight * 1e-9)
}

/// CPU time outside the idle functions, in the profile's unit.
fn busy_weight(p: &Profile) -> f64 {
    let total: f64 = p.cpus.iter().map(|c| c.weight as f64).sum();
    let idle: f64 = p
        .functions
        .iter()
        .filter(|f| p.idle_set.contains(&f.name))
        .map(|f| f.weight() as f64)
        .sum();
    total - idle
}

fn runs_table(run: &StoredRun, test: &StoredTest, facts: &RunFacts) -> PolarsResult<DataFrame> {
    let reps = &test.repetitions;
    let n = reps.len();
    let m = &run.marker;
    let sys = |k: &str| vec![run.system.get(k).map(str::to_string); n];
    let mut cols = id_cols(facts, n);
    cols.extend([
        Column::new("repetition".into(), (1..=n as i64).collect::<Vec<_>>()),
        str_col("test_name", vec![test.name.clone(); n]),
        str_col("host_name", vec![facts.host.to_string(); n]),
        str_col("kernel_release", vec![facts.kernel.to_string(); n]),
        Column::new("kernel_build_id".into(), sys("kernel-build-id")),
        str_col("started", vec![m.started.clone(); n]),
        Column::new("ended".into(), vec![m.ended.clone(); n]),
        str_col("tool_version", vec![m.tool_version.clone(); n]),
        str_col("command", vec![m.command.clone(); n]),
        str_col("event", reps.iter().map(|r| r.profile.event.clone()).collect()),
        str_col(
            "unit",
            reps.iter().map(|r| r.profile.unit.as_str().to_string()).collect(),
        ),
        Column::new(
            "period".into(),
            reps.iter().map(|r| r.profile.period).collect::<Vec<_>>(),
        ),
        Column::new(
            "wall_sec".into(),
            reps.iter().map(|r| r.profile.wall_sec).collect::<Vec<_>>(),
        ),
        Column::new(
            "cpus".into(),
            reps.iter().map(|r| r.profile.cpus.len() as i64).collect::<Vec<_>>(),
        ),
        Column::new(
            "cpu_seconds".into(),
            reps.iter()
                .map(|r| seconds(&r.profile, busy_weight(&r.profile)))
                .collect::<Vec<_>>(),
        ),
        Column::new(
            "cpu_weight".into(),
            reps.iter().map(|r| busy_weight(&r.profile)).collect::<Vec<_>>(),
        ),
        Column::new(
            "operations".into(),
            reps.iter().map(|r| r.operations.map(|o| o as i64)).collect::<Vec<_>>(),
        ),
    ]);
    DataFrame::new(n, cols)
}

fn labels_table(facts: &RunFacts, labels: &[(String, String)]) -> PolarsResult<DataFrame> {
    let n = labels.len();
    let mut cols = id_cols(facts, n);
    cols.push(str_col("key", labels.iter().map(|l| l.0.clone()).collect()));
    cols.push(str_col("value", labels.iter().map(|l| l.1.clone()).collect()));
    DataFrame::new(n, cols)
}

fn system_table(run: &StoredRun, facts: &RunFacts) -> PolarsResult<DataFrame> {
    let e = &run.system.entries;
    let mut cols = id_cols(facts, e.len());
    cols.push(str_col("key", e.iter().map(|x| x.0.clone()).collect()));
    cols.push(str_col("value", e.iter().map(|x| x.1.clone()).collect()));
    DataFrame::new(e.len(), cols)
}

/// Rows of every repetition: `(repetition, row)`.
fn each<'t, T>(test: &'t StoredTest, rows: impl Fn(&'t StoredRepetition) -> Vec<T>) -> (Vec<i64>, Vec<T>) {
    let mut rep = Vec::new();
    let mut out = Vec::new();
    for (k, r) in test.repetitions.iter().enumerate() {
        let rs = rows(r);
        rep.extend(std::iter::repeat(k as i64 + 1).take(rs.len()));
        out.extend(rs);
    }
    (rep, out)
}

fn benchmarks_table(test: &StoredTest, facts: &RunFacts) -> PolarsResult<DataFrame> {
    let (rep, rows) = each(test, |r| r.bench.iter().collect());
    let mut cols = id_cols(facts, rows.len());
    cols.extend([
        Column::new("repetition".into(), rep),
        str_col("benchmark", rows.iter().map(|b| b.description.clone()).collect()),
        Column::new(
            "copy".into(),
            rows.iter().map(|b| b.copy.map(i64::from)).collect::<Vec<_>>(),
        ),
        Column::new("value".into(), rows.iter().map(|b| b.value).collect::<Vec<_>>()),
        str_col("unit", rows.iter().map(|b| b.unit.clone()).collect()),
        Column::new(
            "higher_is_better".into(),
            rows.iter()
                .map(|b| b.direction == Direction::HigherIsBetter)
                .collect::<Vec<_>>(),
        ),
    ]);
    DataFrame::new(rows.len(), cols)
}

/// One function row: clones of one function (`f.isra.0`, `f.constprop.0`) folded into one,
/// as the comparison shows them.
struct FunctionRow {
    function: String,
    module: String,
    samples: u64,
    weight: f64,
    seconds: Option<f64>,
    clones: Option<String>,
}

fn function_rows(p: &Profile) -> Vec<FunctionRow> {
    let mut by: BTreeMap<(&str, &str), (u64, f64, Vec<&str>)> = BTreeMap::new();
    for f in &p.functions {
        let e = by.entry((base_name(&f.name), &f.module)).or_default();
        e.0 += f.total();
        e.1 += f.weight() as f64;
        e.2.push(&f.name);
    }
    by.into_iter()
        .map(|((function, module), (samples, weight, names))| FunctionRow {
            function: function.to_string(),
            module: module.to_string(),
            samples,
            weight,
            seconds: seconds(p, weight),
            clones: names.iter().any(|n| *n != function).then(|| names.join(" ")),
        })
        .collect()
}

fn functions_table(test: &StoredTest, facts: &RunFacts) -> PolarsResult<DataFrame> {
    let (rep, rows) = each(test, |r| function_rows(&r.profile));
    let mut cols = id_cols(facts, rows.len());
    cols.extend([
        Column::new("repetition".into(), rep),
        str_col("function", rows.iter().map(|f| f.function.clone()).collect()),
        str_col("module", rows.iter().map(|f| f.module.clone()).collect()),
        Column::new(
            "samples".into(),
            rows.iter().map(|f| f.samples as i64).collect::<Vec<_>>(),
        ),
        Column::new("weight".into(), rows.iter().map(|f| f.weight).collect::<Vec<_>>()),
        Column::new("seconds".into(), rows.iter().map(|f| f.seconds).collect::<Vec<_>>()),
        Column::new(
            "clones".into(),
            rows.iter().map(|f| f.clones.clone()).collect::<Vec<_>>(),
        ),
    ]);
    DataFrame::new(rows.len(), cols)
}

fn counters_table(test: &StoredTest, facts: &RunFacts) -> PolarsResult<DataFrame> {
    let (rep, rows) = each(test, |r| {
        r.counters
            .iter()
            .flat_map(|c| c.counters.iter().map(move |(k, v)| (k.clone(), *v, c.window_sec)))
            .collect()
    });
    let pick = |f: &dyn Fn(&CounterValue) -> Option<i64>| rows.iter().map(|r| f(&r.1)).collect::<Vec<_>>();
    let mut cols = id_cols(facts, rows.len());
    cols.extend([
        Column::new("repetition".into(), rep),
        str_col("counter", rows.iter().map(|r| r.0.clone()).collect()),
        Column::new(
            "delta".into(),
            pick(&|v| match v {
                CounterValue::Delta(d) => Some(*d),
                CounterValue::Level { start, end } => Some(*end as i64 - *start as i64),
                CounterValue::Absent => None,
            }),
        ),
        Column::new(
            "level_start".into(),
            pick(&|v| match v {
                CounterValue::Level { start, .. } => Some(*start as i64),
                _ => None,
            }),
        ),
        Column::new(
            "level_end".into(),
            pick(&|v| match v {
                CounterValue::Level { end, .. } => Some(*end as i64),
                _ => None,
            }),
        ),
        Column::new("window_sec".into(), rows.iter().map(|r| r.2).collect::<Vec<_>>()),
    ]);
    DataFrame::new(rows.len(), cols)
}
