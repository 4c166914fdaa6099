//! Two groups of a dataset's runs, selected by labels, as the two in-memory runs that the
//! ordinary comparison takes (`upcmp DATASET --side K=V --side K=V RESULTS_DIR`). Every run
//! of a side is a repetition of it; the host is a block: each quantity (a function's time,
//! a benchmark value, a counter's delta) of a repetition is rescaled by its host's factor,
//! so that a fast and a slow machine do not become noise (docs/formulas.md, "Group
//! comparisons: hosts as blocks").

use super::layout::{partition, partition_dir, Dataset, DatasetFile};
use super::{DatasetError, SCHEMA_VERSION};
use crate::model::profile::Unit;
use crate::model::{CpuTotals, FunctionSamples, IdleSet, Profile};
use crate::store::outdir::{RunKind, RunMarker, Status, FORMAT_VERSION};
use crate::store::run::{StoredRepetition, StoredRun, StoredTest};
use polars::prelude::*;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use upcmp_parsers::counters::{CounterValue, CountersFile};
use upcmp_parsers::keyvalue::KeyValues;
use upcmp_parsers::upout::{BenchResult, Direction};

/// The two sides' runs, and what the reader must know of how they were made.
#[derive(Debug)]
pub struct Groups {
    /// Side 1 (the base), one test per test of its runs, every repetition of a run of it
    /// a repetition.
    pub run1: StoredRun,
    /// Side 2 (the change).
    pub run2: StoredRun,
    /// Notes for the top of the report (hosts left out, hosts not paired).
    pub notes: Vec<String>,
}

/// `KEY=VALUE` selectors of one side: a run is on the side when each matches one of its
/// labels, its `kernel`, `host` or `test`, or a line of its system description.
pub type Selectors = Vec<(String, String)>;

/// One repetition of a (run, test) of the dataset, as the runs table has it.
#[derive(Debug, Clone)]
struct RepRow {
    run_id: String,
    test: String,
    host: String,
    kernel: String,
    started: String,
    repetition: i64,
    event: String,
    unit: String,
    period: f64,
    wall_sec: f64,
    operations: Option<i64>,
}

/// Only `columns` of a whole table, through the dataset's lazy scan (hive partitions as
/// strings, projection pushed down).
fn scan_table(dataset: &Path, table: &str, columns: &[&str]) -> Result<DataFrame, DatasetError> {
    let cols: Vec<Expr> = columns.iter().map(|c| col(*c)).collect();
    let lf = super::scan::scan_table(dataset, table, &super::scan::Selection::default())?.select(cols);
    super::check::contained(&[dataset.join(table)], || Ok(lf.collect()?))
}

/// The files of one table for some runs of one test, read in one scan (no hive columns:
/// each file holds one run's rows of one test).
fn read_files(files: &[DatasetFile]) -> Result<DataFrame, DatasetError> {
    // Each file's content is checked before polars reads it (check.rs, in scan_files).
    let lf = super::scan::scan_files(files)?;
    super::check::contained(files, || Ok(lf.collect()?))
}

/// Run files kept open at once while a table is read for some runs.
const FILES_AT_ONCE: usize = 256;

/// `table`'s files of `runs` (run id, test, kernel, host; each must have one), read
/// [`FILES_AT_ONCE`] at a time through [`read_files`], each batch's rows checked.
fn read_table(ds: &Dataset, table: &str, runs: &[(&str, &str, &str, &str)]) -> Result<DataFrame, DatasetError> {
    let mut out: Option<DataFrame> = None;
    for chunk in runs.chunks(FILES_AT_ONCE) {
        let files = chunk
            .iter()
            .map(|(id, test, kernel, host)| ds.must_open_run_file(table, &partition(test, kernel, host), id))
            .collect::<Result<Vec<_>, _>>()?;
        let df = read_files(&files)?;
        super::scan::check_rows(&df, &files, super::scan::rules_of(table))?;
        match &mut out {
            Some(all) => {
                all.vstack_mut(&df)?;
            }
            None => out = Some(df),
        }
    }
    out.ok_or_else(|| DatasetError::Usage(format!("{}: no run to read", ds.path().join(table).display())))
}

fn strs<'a>(df: &'a DataFrame, name: &str) -> Result<impl Iterator<Item = Option<&'a str>> + 'a, DatasetError> {
    Ok(df.column(name)?.str()?.iter())
}

fn f64s<'a>(df: &'a DataFrame, name: &str) -> Result<impl Iterator<Item = Option<f64>> + 'a, DatasetError> {
    Ok(df.column(name)?.f64()?.iter())
}

fn i64s<'a>(df: &'a DataFrame, name: &str) -> Result<impl Iterator<Item = Option<i64>> + 'a, DatasetError> {
    Ok(df.column(name)?.i64()?.iter())
}

/// Refuses a table of a newer schema than this upcmp knows.
fn check_version(dataset: &Path, df: &DataFrame) -> Result<(), DatasetError> {
    let newest = i64s(df, "schema_version")?.flatten().max().unwrap_or(SCHEMA_VERSION);
    if newest > SCHEMA_VERSION {
        return Err(DatasetError::Usage(format!(
            "{}: schema version {newest}, newer than this upcmp reads ({SCHEMA_VERSION}): upgrade upcmp",
            dataset.display()
        )));
    }
    Ok(())
}

/// Reads the repetitions of the runs table.
fn rep_rows(dataset: &Path) -> Result<Vec<RepRow>, DatasetError> {
    let df = scan_table(
        dataset,
        "runs",
        &[
            "run_id",
            "schema_version",
            "repetition",
            "test_name",
            "host_name",
            "kernel_release",
            "started",
            "event",
            "unit",
            "period",
            "wall_sec",
            "operations",
        ],
    )?;
    check_version(dataset, &df)?;
    let mut out = Vec::with_capacity(df.height());
    let cols = (
        strs(&df, "run_id")?,
        i64s(&df, "repetition")?,
        strs(&df, "test_name")?,
        strs(&df, "host_name")?,
        strs(&df, "kernel_release")?,
        strs(&df, "started")?,
    );
    let more = (
        strs(&df, "event")?,
        strs(&df, "unit")?,
        f64s(&df, "period")?,
        f64s(&df, "wall_sec")?,
        i64s(&df, "operations")?,
    );
    let s = |x: Option<&str>| x.unwrap_or_default().to_string();
    for ((((((id, rep), test), host), kernel), started), ((((event, unit), period), wall), ops)) in cols
        .0
        .zip(cols.1)
        .zip(cols.2)
        .zip(cols.3)
        .zip(cols.4)
        .zip(cols.5)
        .zip(more.0.zip(more.1).zip(more.2).zip(more.3).zip(more.4))
    {
        out.push(RepRow {
            run_id: s(id),
            test: s(test),
            host: s(host),
            kernel: s(kernel),
            started: s(started),
            repetition: rep.unwrap_or(1),
            event: s(event),
            unit: s(unit),
            period: period.unwrap_or(1.0),
            wall_sec: wall.unwrap_or(0.0),
            operations: ops,
        });
    }
    Ok(out)
}

/// Each `(run_id, test)`'s `(key, value)` pairs.
type Pairs = HashMap<(String, String), Vec<(String, String)>>;

/// `(run_id, test)` -> its `(key, value)` pairs of a key-value table (labels, system).
fn pairs(dataset: &Path, table: &str) -> Result<Pairs, DatasetError> {
    let df = scan_table(dataset, table, &["run_id", "schema_version", "test", "key", "value"])?;
    check_version(dataset, &df)?;
    let mut out: HashMap<_, Vec<_>> = HashMap::new();
    for (((id, test), k), v) in strs(&df, "run_id")?
        .zip(strs(&df, "test")?)
        .zip(strs(&df, "key")?)
        .zip(strs(&df, "value")?)
    {
        let s = |x: Option<&str>| x.unwrap_or_default().to_string();
        out.entry((s(id), s(test))).or_default().push((s(k), s(v)));
    }
    Ok(out)
}

/// The selectors as one says them: `kernel=6.1,commit=abc`.
pub fn describe(sel: &Selectors) -> String {
    sel.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// The runs of `dataset` each side selects, as two runs for the comparison.
pub fn load_groups(dataset: &Path, sides: [&Selectors; 2]) -> Result<Groups, DatasetError> {
    let reps = rep_rows(dataset)?;
    let labels = pairs(dataset, "labels")?;
    let system = pairs(dataset, "system")?;
    let matches = |r: &RepRow, sel: &Selectors| {
        let key = (r.run_id.clone(), r.test.clone());
        sel.iter().all(|(k, v)| {
            let builtin = match k.as_str() {
                "kernel" => Some(&r.kernel),
                "host" => Some(&r.host),
                "test" => Some(&r.test),
                _ => None,
            };
            builtin == Some(v)
                || [&labels, &system]
                    .iter()
                    .any(|t| t.get(&key).is_some_and(|l| l.iter().any(|(a, b)| a == k && b == v)))
        })
    };
    let mut chosen: [Vec<RepRow>; 2] = [Vec::new(), Vec::new()];
    for r in reps {
        match (matches(&r, sides[0]), matches(&r, sides[1])) {
            (true, true) => {
                return Err(DatasetError::Usage(format!(
                    "run {} (test {}, host {}) matches both sides ({} and {}): give selectors that tell them apart",
                    r.run_id,
                    crate::model::escaped(&r.test),
                    crate::model::escaped(&r.host),
                    crate::model::escaped(&describe(sides[0])),
                    crate::model::escaped(&describe(sides[1]))
                )))
            }
            (true, false) => chosen[0].push(r),
            (false, true) => chosen[1].push(r),
            (false, false) => {}
        }
    }
    for (k, c) in chosen.iter().enumerate() {
        if c.is_empty() {
            return Err(DatasetError::Usage(format!(
                "{}: no run matches side {} ({})",
                dataset.display(),
                k + 1,
                crate::model::escaped(&describe(sides[k]))
            )));
        }
    }
    let mut notes = Vec::new();
    let [c1, c2] = chosen;
    let mut t1 = build_tests(dataset, c1)?;
    let mut t2 = build_tests(dataset, c2)?;
    for (name, a) in t1.iter_mut() {
        if let Some(b) = t2.get_mut(name) {
            notes.extend(block_by_host(name, a, b));
        }
    }
    let run = |k: usize, tests: BTreeMap<String, Vec<(String, StoredRepetition)>>| {
        let sel = sides[k];
        let systems: Vec<&Vec<(String, String)>> = tests
            .values()
            .flatten()
            .filter_map(|(id_test, _)| system.get(&split_key(id_test)))
            .collect();
        StoredRun {
            dir: PathBuf::from(format!("{} [{}]", dataset.display(), describe(sel))),
            marker: RunMarker {
                format: FORMAT_VERSION,
                tool_version: String::new(),
                command: format!("upcmp {} --side {}", dataset.display(), describe(sel)),
                started: String::new(),
                ended: None,
                status: Status::Completed,
                runs: tests.values().map(Vec::len).max().unwrap_or(0) as u32,
                kind: RunKind::Uprun,
                reason: None,
                writer: None,
            },
            system: common_system(&systems),
            tests: tests
                .into_iter()
                .map(|(name, reps)| StoredTest {
                    name,
                    key: None,
                    repetitions: reps.into_iter().map(|r| r.1).collect(),
                    stacks: None,
                })
                .collect(),
        }
    };
    Ok(Groups {
        run1: run(0, t1),
        run2: run(1, t2),
        notes,
    })
}

/// The `(run_id, test)` of a tagged repetition (`run_id\0test\0host`).
fn split_key(k: &str) -> (String, String) {
    let mut parts = k.split('\0');
    let id = parts.next().unwrap_or_default().to_string();
    (id, parts.next().unwrap_or_default().to_string())
}

/// A side's system description: each key with the value all its runs share, or
/// `mixed (N values)`.
fn common_system(systems: &[&Vec<(String, String)>]) -> KeyValues {
    let mut values: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for s in systems {
        for (k, v) in s.iter() {
            values.entry(k).or_default().insert(v);
        }
    }
    KeyValues {
        entries: values
            .into_iter()
            .enumerate()
            .map(|(line, (k, v))| {
                let value = match v.len() {
                    1 => v.into_iter().next().unwrap_or_default().to_string(),
                    n => format!("mixed ({n} values)"),
                };
                (k.to_string(), value, line + 1)
            })
            .collect(),
        file: "system".into(),
    }
}

/// Each test of one side: its repetitions, tagged `run_id\0test\0host` and ordered by host, then
/// start time, run and repetition.
fn build_tests(
    dataset: &Path,
    mut rows: Vec<RepRow>,
) -> Result<BTreeMap<String, Vec<(String, StoredRepetition)>>, DatasetError> {
    rows.sort_by(|a, b| {
        (&a.test, &a.host, &a.started, &a.run_id, a.repetition).cmp(&(
            &b.test,
            &b.host,
            &b.started,
            &b.run_id,
            b.repetition,
        ))
    });
    let mut by_test: BTreeMap<String, Vec<RepRow>> = BTreeMap::new();
    for r in rows {
        by_test.entry(r.test.clone()).or_default().push(r);
    }
    let ds = Dataset::open(dataset)?;
    let mut out = BTreeMap::new();
    for (test, rows) in by_test {
        let mut seen = BTreeSet::new();
        let runs: Vec<(&str, &str, &str, &str)> = rows
            .iter()
            .filter(|r| seen.insert(r.run_id.clone()))
            .map(|r| (r.run_id.as_str(), r.test.as_str(), r.kernel.as_str(), r.host.as_str()))
            .collect();
        let functions = read_table(&ds, "functions", &runs)?;
        let benchmarks = read_table(&ds, "benchmarks", &runs)?;
        let counters = read_table(&ds, "counters", &runs)?;
        let mut fns: HashMap<(String, i64), Vec<FunctionRow>> = HashMap::new();
        for (((((id, rep), f), m), n), w) in strs(&functions, "run_id")?
            .zip(i64s(&functions, "repetition")?)
            .zip(strs(&functions, "function")?)
            .zip(strs(&functions, "module")?)
            .zip(i64s(&functions, "samples")?)
            .zip(f64s(&functions, "weight")?)
        {
            fns.entry((id.unwrap_or_default().to_string(), rep.unwrap_or(1)))
                .or_default()
                .push((
                    f.unwrap_or_default().to_string(),
                    m.unwrap_or_default().to_string(),
                    n.unwrap_or(0),
                    w.unwrap_or(0.0),
                ));
        }
        let mut bench: HashMap<(String, i64), Vec<BenchResult>> = HashMap::new();
        let better = benchmarks.column("higher_is_better")?.bool()?.clone();
        for (((((id, rep), d), copy), v), (u, hib)) in strs(&benchmarks, "run_id")?
            .zip(i64s(&benchmarks, "repetition")?)
            .zip(strs(&benchmarks, "benchmark")?)
            .zip(i64s(&benchmarks, "copy")?)
            .zip(f64s(&benchmarks, "value")?)
            .zip(strs(&benchmarks, "unit")?.zip(better.iter()))
        {
            bench
                .entry((id.unwrap_or_default().to_string(), rep.unwrap_or(1)))
                .or_default()
                .push(BenchResult {
                    description: d.unwrap_or_default().to_string(),
                    value: v.unwrap_or(f64::NAN),
                    unit: u.unwrap_or_default().to_string(),
                    direction: if hib.unwrap_or(true) {
                        Direction::HigherIsBetter
                    } else {
                        Direction::LowerIsBetter
                    },
                    copy: copy.map(|c| c as u32),
                });
        }
        let mut counted: HashMap<(String, i64), CountersFile> = HashMap::new();
        for (((((id, rep), name), delta), (start, end)), window) in strs(&counters, "run_id")?
            .zip(i64s(&counters, "repetition")?)
            .zip(strs(&counters, "counter")?)
            .zip(i64s(&counters, "delta")?)
            .zip(i64s(&counters, "level_start")?.zip(i64s(&counters, "level_end")?))
            .zip(f64s(&counters, "window_sec")?)
        {
            let c = counted
                .entry((id.unwrap_or_default().to_string(), rep.unwrap_or(1)))
                .or_insert_with(|| CountersFile {
                    version: 1,
                    window_sec: window.unwrap_or(0.0),
                    counters: Vec::new(),
                });
            let value = match (start, end, delta) {
                (Some(s), Some(e), _) => CounterValue::Level {
                    start: s as u64,
                    end: e as u64,
                },
                (_, _, Some(d)) => CounterValue::Delta(d),
                _ => CounterValue::Absent,
            };
            c.counters.push((name.unwrap_or_default().to_string(), value));
        }
        let idle = IdleSet::linux_default();
        let mut reps = Vec::with_capacity(rows.len());
        for r in &rows {
            let key = (r.run_id.clone(), r.repetition);
            let unit = if r.unit == "ns" {
                Unit::Nanoseconds
            } else {
                Unit::Events
            };
            let functions: Vec<FunctionSamples> = fns
                .remove(&key)
                .unwrap_or_default()
                .into_iter()
                .map(|(name, module, n, w)| FunctionSamples {
                    module,
                    name,
                    per_cpu: vec![n.max(0) as u64],
                    weight_per_cpu: vec![w.max(0.0).round() as u64],
                    // A fixed period's variance: n p^2 = w p (the dataset keeps no squares).
                    weight_sq: w.max(0.0) * r.period,
                })
                .collect();
            let profile = Profile {
                test: r.test.clone(),
                command: None,
                event: r.event.clone(),
                unit,
                period: r.period,
                wall_sec: r.wall_sec,
                idle_set: idle.names().to_vec(),
                cpus: vec![CpuTotals::empty(0)],
                warnings: Vec::new(),
                functions,
            };
            let dir = partition_dir(dataset, "runs", &r.test, &r.kernel, &r.host)
                .join(format!("{}.parquet", r.run_id))
                .join(format!("r{}", r.repetition));
            reps.push((
                format!("{}\0{}", r.run_id, r.test),
                StoredRepetition {
                    dir,
                    profile: with_totals(profile),
                    bench: bench.remove(&key).unwrap_or_default(),
                    status: None,
                    counters: counted.remove(&key),
                    operations: r.operations.map(|o| o.max(0) as u64),
                },
            ));
        }
        // The host of each repetition, for the blocks.
        let hosts: Vec<String> = rows.iter().map(|r| r.host.clone()).collect();
        for ((tag, _), h) in reps.iter_mut().zip(hosts) {
            tag.push('\0');
            tag.push_str(&h);
        }
        out.insert(test, reps);
    }
    Ok(out)
}

/// A function's row: name, module, samples, weight.
type FunctionRow = (String, String, i64, f64);

/// The profile's one CPU holding the sums of its functions.
fn with_totals(mut p: Profile) -> Profile {
    let mut cpu = CpuTotals::empty(0);
    for f in &p.functions {
        cpu.samples += f.total();
        cpu.weight += f.weight();
    }
    p.cpus = vec![cpu];
    p
}

/// The host of a tagged repetition (`run_id\0test\0host`).
fn host_of(tag: &str) -> &str {
    tag.rsplit('\0').next().unwrap_or("")
}

/// Adjusts one quantity's values for the hosts as blocks: `x[s]` are side `s`'s
/// repetitions as (host, value), None where a repetition has no value. Each value becomes
/// `g_h (a_hs + c (x - a_hs))`, where `a_hs` is the mean of side `s` on host `h`, `m_h` the
/// mean of the host's side means, `m` the mean of the `m_h`, `g_h = m / m_h`, and
/// `c = sqrt((N-2)/(N-1-H))` restores the degrees of freedom the host factors took
/// (docs/formulas.md). Never below zero.
pub fn block_adjust(x: [&[(usize, Option<f64>)]; 2], hosts: usize, c: f64) -> [Vec<Option<f64>>; 2] {
    let mut sums = vec![[(0.0, 0usize); 2]; hosts];
    for (s, side) in x.iter().enumerate() {
        for &(h, v) in side.iter() {
            if let Some(v) = v {
                sums[h][s].0 += v;
                sums[h][s].1 += 1;
            }
        }
    }
    let side_mean = |h: usize, s: usize| (sums[h][s].1 > 0).then(|| sums[h][s].0 / sums[h][s].1 as f64);
    let host_mean: Vec<Option<f64>> = (0..hosts)
        .map(|h| {
            let m: Vec<f64> = (0..2).filter_map(|s| side_mean(h, s)).collect();
            (!m.is_empty()).then(|| m.iter().sum::<f64>() / m.len() as f64)
        })
        .collect();
    let known: Vec<f64> = host_mean.iter().flatten().copied().collect();
    let m = if known.is_empty() {
        0.0
    } else {
        known.iter().sum::<f64>() / known.len() as f64
    };
    let adjust = |s: usize, side: &[(usize, Option<f64>)]| {
        side.iter()
            .map(|&(h, v)| {
                let v = v?;
                let (Some(mh), Some(a)) = (host_mean[h], side_mean(h, s)) else {
                    return Some(v);
                };
                let g = if mh > 0.0 { m / mh } else { 1.0 };
                Some((g * (a + c * (v - a))).max(0.0))
            })
            .collect()
    };
    [adjust(0, x[0]), adjust(1, x[1])]
}

/// Pairs one test's two sides by host: repetitions of hosts that ran one side only are
/// left out when some host ran both; every quantity is adjusted by [`block_adjust`].
/// Returns the notes for the report.
fn block_by_host(
    test: &str,
    a: &mut Vec<(String, StoredRepetition)>,
    b: &mut Vec<(String, StoredRepetition)>,
) -> Vec<String> {
    let set = |v: &[(String, StoredRepetition)]| v.iter().map(|r| host_of(&r.0).to_string()).collect::<BTreeSet<_>>();
    let (h1, h2) = (set(a), set(b));
    let paired: Vec<String> = h1.intersection(&h2).cloned().collect();
    let name = crate::model::escaped(test);
    let mut notes = Vec::new();
    if paired.is_empty() {
        notes.push(format!(
            "{name}: no host ran both sides (side 1 on {}, side 2 on {}): the runs are compared unpaired, \
             and the hosts' differences in speed are part of the noise",
            list(&h1),
            list(&h2)
        ));
        return notes;
    }
    let unpaired: BTreeSet<&String> = h1.symmetric_difference(&h2).collect();
    if !unpaired.is_empty() {
        let names: BTreeSet<String> = unpaired.iter().map(|s| s.to_string()).collect();
        notes.push(format!(
            "{name}: the runs of {} are left out: only one side ran there, and runs are paired by host",
            list(&names)
        ));
        a.retain(|r| !unpaired.contains(&host_of(&r.0).to_string()));
        b.retain(|r| !unpaired.contains(&host_of(&r.0).to_string()));
    }
    let host_ix: HashMap<&str, usize> = paired.iter().enumerate().map(|(k, h)| (h.as_str(), k)).collect();
    let hosts = paired.len();
    let n = a.len() + b.len();
    let c = if n > hosts + 1 && paired.len() > 1 {
        ((n as f64 - 2.0) / (n - 1 - hosts) as f64).sqrt()
    } else {
        1.0
    };
    if hosts > 1 {
        notes.push(format!(
            "{name}: runs paired by host on {} hosts ({}): each host's speed is taken out of every value \
             (docs/formulas.md, \"Group comparisons\")",
            hosts,
            list(&paired.iter().cloned().collect())
        ));
    }
    let hs = |v: &[(String, StoredRepetition)]| v.iter().map(|r| host_ix[host_of(&r.0)]).collect::<Vec<_>>();
    let (ha, hb) = (hs(a), hs(b));
    adjust_functions(a, b, &ha, &hb, hosts, c);
    adjust_bench(a, b, &ha, &hb, hosts, c);
    adjust_counters(a, b, &ha, &hb, hosts, c);
    for r in a.iter_mut().chain(b.iter_mut()) {
        r.1.profile = with_totals(std::mem::replace(&mut r.1.profile, empty_profile()));
    }
    notes
}

fn empty_profile() -> Profile {
    Profile {
        test: String::new(),
        command: None,
        event: String::new(),
        unit: Unit::Nanoseconds,
        period: 1.0,
        wall_sec: 0.0,
        idle_set: Vec::new(),
        cpus: Vec::new(),
        warnings: Vec::new(),
        functions: Vec::new(),
    }
}

fn list(names: &BTreeSet<String>) -> String {
    names
        .iter()
        .map(|h| crate::model::escaped(h).into_owned())
        .collect::<Vec<_>>()
        .join(", ")
}

type Reps = Vec<(String, StoredRepetition)>;

/// Each function's weight (0 where absent, as the comparison counts it), adjusted; its
/// samples scaled alike, so that weight per sample stays the period.
fn adjust_functions(a: &mut Reps, b: &mut Reps, ha: &[usize], hb: &[usize], hosts: usize, c: f64) {
    let mut keys: HashMap<(String, String), usize> = HashMap::new();
    for r in a.iter().chain(b.iter()) {
        for f in &r.1.profile.functions {
            let next = keys.len();
            keys.entry((f.name.clone(), f.module.clone())).or_insert(next);
        }
    }
    let k = keys.len();
    let matrix = |v: &Reps| {
        let mut m = vec![0.0; k * v.len()];
        for (j, r) in v.iter().enumerate() {
            for f in &r.1.profile.functions {
                m[keys[&(f.name.clone(), f.module.clone())] * v.len() + j] += f.weight() as f64;
            }
        }
        m
    };
    let (ma, mb) = (matrix(a), matrix(b));
    let (na, nb) = (a.len(), b.len());
    let mut adjusted: Vec<[Vec<Option<f64>>; 2]> = Vec::with_capacity(k);
    for i in 0..k {
        let xa: Vec<(usize, Option<f64>)> = (0..na).map(|j| (ha[j], Some(ma[i * na + j]))).collect();
        let xb: Vec<(usize, Option<f64>)> = (0..nb).map(|j| (hb[j], Some(mb[i * nb + j]))).collect();
        adjusted.push(block_adjust([&xa, &xb], hosts, c));
    }
    let mut names: Vec<(String, String)> = vec![Default::default(); k];
    for (key, i) in keys {
        names[i] = key;
    }
    for (s, side) in [a, b].into_iter().enumerate() {
        for (j, r) in side.iter_mut().enumerate() {
            let p = &mut r.1.profile;
            let old: HashMap<(&str, &str), u64> = p
                .functions
                .iter()
                .map(|f| ((f.name.as_str(), f.module.as_str()), f.total()))
                .collect();
            let mut fresh = Vec::new();
            for (i, (name, module)) in names.iter().enumerate() {
                let w = adjusted[i][s][j].unwrap_or(0.0);
                let before = [&ma, &mb][s][i * [na, nb][s] + j];
                let n = old.get(&(name.as_str(), module.as_str())).copied().unwrap_or(0);
                if w <= 0.0 && n == 0 {
                    continue;
                }
                let samples = if before > 0.0 {
                    (n as f64 * w / before).round() as u64
                } else {
                    0
                };
                fresh.push(FunctionSamples {
                    module: module.clone(),
                    name: name.clone(),
                    per_cpu: vec![samples],
                    weight_per_cpu: vec![w.round() as u64],
                    weight_sq: w * p.period,
                });
            }
            p.functions = fresh;
        }
    }
}

/// Each benchmark value (by operation and copy) adjusted.
fn adjust_bench(a: &mut Reps, b: &mut Reps, ha: &[usize], hb: &[usize], hosts: usize, c: f64) {
    let keys: BTreeSet<(String, Option<u32>)> = a
        .iter()
        .chain(b.iter())
        .flat_map(|r| r.1.bench.iter().map(|x| (x.description.clone(), x.copy)))
        .collect();
    for key in keys {
        let pick = |v: &Reps, h: &[usize]| -> Vec<(usize, Option<f64>)> {
            v.iter()
                .zip(h)
                .map(|(r, &h)| {
                    let x = r.1.bench.iter().find(|x| x.description == key.0 && x.copy == key.1);
                    (h, x.map(|x| x.value))
                })
                .collect()
        };
        let (xa, xb) = (pick(a, ha), pick(b, hb));
        let adj = block_adjust([&xa, &xb], hosts, c);
        for (side, vals) in [&mut *a, &mut *b].into_iter().zip(adj) {
            for (r, v) in side.iter_mut().zip(vals) {
                if let (Some(x), Some(v)) = (
                    r.1.bench.iter_mut().find(|x| x.description == key.0 && x.copy == key.1),
                    v,
                ) {
                    x.value = v;
                }
            }
        }
    }
}

/// Each counter's delta adjusted (levels are states, not work: kept).
fn adjust_counters(a: &mut Reps, b: &mut Reps, ha: &[usize], hb: &[usize], hosts: usize, c: f64) {
    let keys: BTreeSet<String> = a
        .iter()
        .chain(b.iter())
        .flat_map(|r| r.1.counters.iter().flat_map(|c| c.counters.iter().map(|x| x.0.clone())))
        .collect();
    for key in keys {
        let pick = |v: &Reps, h: &[usize]| -> Vec<(usize, Option<f64>)> {
            v.iter()
                .zip(h)
                .map(|(r, &h)| {
                    let d = r.1.counters.as_ref().and_then(|c| match c.get(&key) {
                        Some(CounterValue::Delta(d)) => Some(d as f64),
                        _ => None,
                    });
                    (h, d)
                })
                .collect()
        };
        let (xa, xb) = (pick(a, ha), pick(b, hb));
        let adj = block_adjust([&xa, &xb], hosts, c);
        for (side, vals) in [&mut *a, &mut *b].into_iter().zip(adj) {
            for (r, v) in side.iter_mut().zip(vals) {
                let (Some(cf), Some(v)) = (r.1.counters.as_mut(), v) else {
                    continue;
                };
                for (n, x) in cf.counters.iter_mut() {
                    if *n == key {
                        if let CounterValue::Delta(d) = x {
                            *d = v.round() as i64;
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_adjust_takes_out_the_hosts_speed() {
        // Two hosts, the second twice as slow; side 2 is 10% slower on both.
        let a = [(0, Some(10.0)), (0, Some(10.0)), (1, Some(20.0)), (1, Some(20.0))];
        let b = [(0, Some(11.0)), (0, Some(11.0)), (1, Some(22.0)), (1, Some(22.0))];
        let [x, y] = block_adjust([&a, &b], 2, 1.0);
        let (x0, y0) = (x[0].unwrap(), y[0].unwrap());
        assert!(x.iter().all(|v| (v.unwrap() - x0).abs() < 1e-9), "{x:?}");
        assert!(y.iter().all(|v| (v.unwrap() - y0).abs() < 1e-9), "{y:?}");
        assert!((y0 / x0 - 1.1).abs() < 1e-9);
        // The spread within a host and side is kept, times c.
        let a = [(0, Some(9.0)), (0, Some(11.0))];
        let b = [(0, Some(10.0)), (0, Some(10.0))];
        let [x, _] = block_adjust([&a, &b], 1, 2.0);
        assert_eq!(x, vec![Some(8.0), Some(12.0)]);
    }
}
