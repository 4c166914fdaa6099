//! `upcmp history DATASET --test T`: reads the selected runs of one test from the dataset,
//! makes its series (benchmark values, CPU total, top functions), finds their change points
//! and writes the history (docs/history.md).

use crate::compare::history::{analyse, History, HistoryPoint, Series, SeriesKind};
use crate::dataset::scan::{each_function_seconds, scan_benchmarks, scan_runs, top_functions, ScannedRun, Selection};
use crate::dataset::DatasetError;
use crate::model::IdleSet;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

/// How the runs are ordered and grouped into points.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum By {
    /// Each run is a point, by start time.
    #[default]
    Time,
    /// Every run of a `commit` label is one point; commits by their first run's start.
    Commit,
}

/// What `upcmp history` does.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct HistoryOptions {
    /// The dataset.
    pub dataset: PathBuf,
    /// The test.
    pub test: String,
    /// `--where KEY=VALUE` conditions.
    pub conditions: Vec<(String, String)>,
    /// Ordering and grouping.
    pub by: By,
    /// How many functions get a series.
    pub top: usize,
}

impl HistoryOptions {
    /// Options for `test` in `dataset`, every run, by time, 10 functions.
    pub fn new(dataset: PathBuf, test: String) -> Self {
        HistoryOptions {
            dataset,
            test,
            conditions: Vec::new(),
            by: By::Time,
            top: 10,
        }
    }
}

/// The history of `opts.test`.
pub fn history(opts: &HistoryOptions) -> Result<History, DatasetError> {
    let sel = Selection::new(Some(opts.test.clone()), opts.conditions.clone());
    let runs = scan_runs(&opts.dataset, &sel)?;
    if runs.is_empty() {
        return Err(DatasetError::Usage(format!(
            "{}: no run of test {:?} matches{}",
            opts.dataset.display(),
            opts.test,
            if opts.conditions.is_empty() {
                ""
            } else {
                " the --where conditions"
            }
        )));
    }
    let (points, point_of) = group(&runs, opts.by)?;
    let at = |run: &str, rep: i64| point_of.get(&(run.to_string(), rep)).copied();
    let n = points.len();
    // Per operation where the benchmark counts them.
    let ops: HashMap<(String, i64), i64> = runs
        .iter()
        .flat_map(|r| {
            r.repetitions
                .iter()
                .filter_map(|p| Some(((r.run_id.clone(), p.repetition), p.operations?)))
        })
        .filter(|(_, o)| *o > 0)
        .collect();
    let per_op = !ops.is_empty();
    let unit = if per_op { "s/op" } else { "s" };
    let scale = |run: &str, rep: i64, v: f64| match ops.get(&(run.to_string(), rep)) {
        Some(&o) => v / o as f64,
        None => v,
    };
    let mut series = Vec::new();
    // Benchmarks: the whole run's values (a copy's values are spread, not history).
    let mut benches: BTreeMap<String, Series> = BTreeMap::new();
    for b in scan_benchmarks(&opts.dataset, &runs)?
        .into_iter()
        .filter(|b| b.copy.is_none())
    {
        let Some(i) = at(&b.run_id, b.repetition) else { continue };
        let s = benches.entry(b.benchmark.clone()).or_insert_with(|| Series {
            kind: SeriesKind::Benchmark,
            name: b.benchmark.clone(),
            unit: b.unit.clone(),
            higher_is_better: b.higher_is_better,
            values: vec![Vec::new(); n],
        });
        s.values[i].push(b.value);
    }
    series.extend(benches.into_values());
    let mut cpu = Series {
        kind: SeriesKind::CpuTotal,
        name: "CPU time".into(),
        unit: unit.into(),
        higher_is_better: false,
        values: vec![Vec::new(); n],
    };
    for r in &runs {
        for p in &r.repetitions {
            if let (Some(i), Some(s)) = (at(&r.run_id, p.repetition), p.cpu_seconds) {
                cpu.values[i].push(scale(&r.run_id, p.repetition, s));
            }
        }
    }
    if cpu.values.iter().any(|v| !v.is_empty()) {
        series.push(cpu);
    }
    let idle = IdleSet::linux_default();
    let top = top_functions(&opts.dataset, &runs, opts.top, idle.names())?;
    // Summed as the rows are read (by function, run and repetition): what is kept is the
    // series' values, not the rows.
    let top_index: HashMap<(&str, &str), usize> = top
        .iter()
        .enumerate()
        .map(|(i, (f, m))| ((f.as_str(), m.as_str()), i))
        .collect();
    let run_index: HashMap<&str, usize> = runs.iter().enumerate().map(|(i, r)| (r.run_id.as_str(), i)).collect();
    let mut seconds: HashMap<(usize, usize, i64), f64> = HashMap::new();
    each_function_seconds(&opts.dataset, &runs, Some(&top), |f| {
        let (Some(s), Some(&t), Some(&r)) = (
            f.seconds,
            top_index.get(&(f.function, f.module)),
            run_index.get(f.run_id),
        ) else {
            return;
        };
        *seconds.entry((t, r, f.repetition)).or_default() += s;
    })?;
    for (t, (function, module)) in top.iter().enumerate() {
        let name = if module == "kernel" || module == "user" {
            function.clone()
        } else {
            format!("{function} [{module}]")
        };
        let mut s = Series {
            kind: SeriesKind::Function,
            name,
            unit: unit.into(),
            higher_is_better: false,
            values: vec![Vec::new(); n],
        };
        for (ri, r) in runs.iter().enumerate() {
            for p in r.repetitions.iter().filter(|p| p.cpu_seconds.is_some()) {
                let Some(i) = at(&r.run_id, p.repetition) else { continue };
                // Absent from a repetition: no time there, as in the comparison.
                let v = seconds.get(&(t, ri, p.repetition)).copied().unwrap_or(0.0);
                s.values[i].push(scale(&r.run_id, p.repetition, v));
            }
        }
        if s.values.iter().any(|v| !v.is_empty()) {
            series.push(s);
        }
    }
    let by = match opts.by {
        By::Time => "time",
        By::Commit => "commit",
    };
    Ok(analyse(&opts.test, by, points, series))
}

type PointOf = HashMap<(String, i64), usize>;

/// The points of `runs` (in start order) and the point of each run's repetition.
fn group(runs: &[ScannedRun], by: By) -> Result<(Vec<HistoryPoint>, PointOf), DatasetError> {
    let mut points: Vec<HistoryPoint> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut point_of = PointOf::new();
    for r in runs {
        let key = match by {
            By::Time => r.run_id.clone(),
            By::Commit => r.labels.get("commit").cloned().ok_or_else(|| {
                DatasetError::Usage(format!(
                    "--by commit: run {} (started {}) has no commit label: export it with --label commit=...",
                    r.run_id, r.started
                ))
            })?,
        };
        let i = *index.entry(key.clone()).or_insert_with(|| {
            points.push(HistoryPoint {
                label: r.labels.get("commit").cloned().unwrap_or_else(|| r.started.clone()),
                started: r.started.clone(),
                run_ids: Vec::new(),
                hosts: Vec::new(),
                kernels: Vec::new(),
            });
            points.len() - 1
        });
        let p = &mut points[i];
        p.run_ids.push(r.run_id.clone());
        for (list, v) in [(&mut p.hosts, &r.host), (&mut p.kernels, &r.kernel)] {
            if !list.contains(v) {
                list.push(v.clone());
            }
        }
        for rep in &r.repetitions {
            point_of.insert((r.run_id.clone(), rep.repetition), i);
        }
    }
    Ok((points, point_of))
}

/// Writes `files` (name, bytes) into `dir`, created if missing, under the rules of every
/// output directory (docs/security.md): its parent not one every user may write without
/// the sticky bit (unless `allow_shared_parent`), no link in a shared sticky directory on
/// its path, one writer at a time (`DIR.lock`). Each file is a temporary file renamed in,
/// both relative to the directory's fd: a link at a file's name is replaced, never
/// followed, and the directory swapped for a link after it was opened changes nothing.
pub fn write_files(dir: &Path, files: &[(&str, Vec<u8>)], allow_shared_parent: bool) -> Result<(), DatasetError> {
    let claim = crate::store::outdir::claim_dir(dir, "upcmp history", allow_shared_parent)?;
    match crate::fsio::create_dir(&claim.path, 0o755) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(source) => {
            return Err(DatasetError::Io {
                path: claim.path.clone(),
                source,
            })
        }
    }
    let out = crate::fsio::beneath::Dir::open(&claim.path)?;
    for (name, bytes) in files {
        out.write_atomic(std::ffi::OsStr::new(name), bytes, 0o644)?;
    }
    Ok(())
}
