//! Comparing two profiles: summaries, per-function deltas (polars), benchmark ratios.
//!
//! The formulas are those of `docs/formulas.md`; numbers are computed here once and only
//! formatted by [`crate::report`].

pub mod bench;
pub mod idle;
pub mod imported;
pub mod runs;

use crate::Profile;
use polars::prelude::*;
use serde::Serialize;

pub use idle::{IdleSet, DEFAULT_IDLE_FUNCTIONS};

/// Options of a profile comparison.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct CompareOptions {
    /// A function is listed when its time is at least this percentage of its run's CPU
    /// time in either run.
    pub cutoff_pct: f64,
    /// Replaces each profile's own idle set when given.
    pub idle_override: Option<IdleSet>,
}

impl Default for CompareOptions {
    fn default() -> Self {
        CompareOptions {
            cutoff_pct: 0.5,
            idle_override: None,
        }
    }
}

impl CompareOptions {
    /// Options with the given cutoff and idle set override.
    pub fn new(cutoff_pct: f64, idle_override: Option<IdleSet>) -> Self {
        CompareOptions {
            cutoff_pct,
            idle_override,
        }
    }
}

/// The "Profiling Summary" numbers of one run, summed over all CPUs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProfileSummary {
    /// Sampled CPUs.
    pub cpus: u32,
    /// Wall time x CPUs.
    pub elapsed_sec: f64,
    /// Elapsed - CPU - Lost.
    pub idle_sec: f64,
    /// Samples outside the idle set x period.
    pub cpu_sec: f64,
    /// Lost samples x period.
    pub lost_sec: f64,
    /// Wall-clock length of the sampled interval.
    pub wall_sec: f64,
    /// Seconds per sample.
    pub period_sec: f64,
    /// Sampling event.
    pub event: String,
    /// The idle functions used.
    pub idle_set: Vec<String>,
    /// Samples in idle functions (shown for information; Idle is not derived from them).
    pub idle_samples: u64,
}

impl ProfileSummary {
    /// Computes the summary of `p` with the idle set `idle`.
    pub fn of(p: &Profile, idle: &IdleSet) -> Self {
        let cpus = p.cpus.len() as u32;
        let mut busy: u64 = 0;
        let mut idle_samples: u64 = 0;
        for f in &p.functions {
            if idle.contains(&f.name) {
                idle_samples += f.total();
            } else {
                busy += f.total();
            }
        }
        let lost: u64 = p.cpus.iter().map(|c| c.lost).sum();
        let elapsed_sec = p.wall_sec * f64::from(cpus);
        let cpu_sec = busy as f64 * p.period_sec;
        let lost_sec = lost as f64 * p.period_sec;
        ProfileSummary {
            cpus,
            elapsed_sec,
            idle_sec: elapsed_sec - cpu_sec - lost_sec,
            cpu_sec,
            lost_sec,
            wall_sec: p.wall_sec,
            period_sec: p.period_sec,
            event: p.event.clone(),
            idle_set: idle.names().to_vec(),
            idle_samples,
        }
    }
}

/// One function's line of the "CPU Time Analysis".
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FunctionDelta {
    /// Display name: the function, with `[module]` after it for kernel modules.
    pub function: String,
    /// Seconds in run 1 (None: absent there).
    pub run1_sec: Option<f64>,
    /// Seconds in run 2 (None: absent there).
    pub run2_sec: Option<f64>,
    /// Run2 - Run1, absent counting as 0.
    pub delta_sec: f64,
    /// (Run2 - Run1) as a percentage of run 1's CPU time.
    pub delta_pct_of_run1_cpu: f64,
    /// Share of its run's CPU time, run 1 (%).
    pub run1_pct_of_cpu: f64,
    /// Share of its run's CPU time, run 2 (%).
    pub run2_pct_of_cpu: f64,
    /// Sampling (Poisson) standard error of the delta, in seconds: period x sqrt(n1 + n2).
    pub delta_stderr_sec: f64,
    /// At or above the cutoff in either run: shown in the text report.
    pub listed: bool,
}

/// The comparison of two profiles.
#[derive(Debug, Clone, Serialize)]
pub struct ProfileComparison {
    /// Run 1's summary.
    pub run1: ProfileSummary,
    /// Run 2's summary.
    pub run2: ProfileSummary,
    /// The cutoff used (%).
    pub cutoff_pct: f64,
    /// Every non-idle function of either run, sorted by delta (largest first).
    pub rows: Vec<FunctionDelta>,
}

impl ProfileComparison {
    /// The rows at or above the cutoff.
    pub fn listed(&self) -> impl Iterator<Item = &FunctionDelta> {
        self.rows.iter().filter(|r| r.listed)
    }
}

/// The display name of a function: modules other than the core kernel and user space
/// are named, so two modules' functions of the same name stay apart.
pub fn display_name(name: &str, module: &str) -> String {
    match module {
        "kernel" | "user" => name.to_string(),
        m => format!("{name} [{m}]"),
    }
}

/// One run's non-idle function times as a DataFrame (function, samples). Rows with the
/// same display name (possible in a hand-made prfout) are summed so the join is
/// one-to-one.
fn function_frame(p: &Profile, idle: &IdleSet, samples_col: &str) -> PolarsResult<DataFrame> {
    let mut index: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    let mut names: Vec<String> = Vec::with_capacity(p.functions.len());
    let mut samples: Vec<u64> = Vec::with_capacity(p.functions.len());
    for f in p.functions.iter().filter(|f| !idle.contains(&f.name)) {
        let name = display_name(&f.name, &f.module);
        match index.get(&name) {
            Some(&i) => samples[i] += f.total(),
            None => {
                index.insert(name.clone(), names.len());
                names.push(name);
                samples.push(f.total());
            }
        }
    }
    DataFrame::new(
        names.len(),
        vec![
            Column::new("function".into(), names),
            Column::new(samples_col.into(), samples),
        ],
    )
}

/// Compares two profiles: summaries, and every function's delta (polars outer join on
/// the function name, deltas, cutoff filter, sort by delta).
pub fn compare_profiles(p1: &Profile, p2: &Profile, opts: &CompareOptions) -> PolarsResult<ProfileComparison> {
    let idle1 = opts
        .idle_override
        .clone()
        .unwrap_or_else(|| IdleSet::new(p1.idle_set.clone()));
    let idle2 = opts
        .idle_override
        .clone()
        .unwrap_or_else(|| IdleSet::new(p2.idle_set.clone()));
    let run1 = ProfileSummary::of(p1, &idle1);
    let run2 = ProfileSummary::of(p2, &idle2);

    let f1 = function_frame(p1, &idle1, "n1")?;
    let f2 = function_frame(p2, &idle2, "n2")?;
    let joined = f1.join(
        &f2,
        ["function"],
        ["function"],
        JoinArgs::new(JoinType::Full).with_coalesce(JoinCoalesce::CoalesceColumns),
        None,
    )?;
    let n1 = joined.column("n1")?.cast(&DataType::Float64)?;
    let n2 = joined.column("n2")?.cast(&DataType::Float64)?;
    let n1 = n1.f64()?;
    let n2 = n2.f64()?;
    let t1 = n1 * p1.period_sec;
    let t2 = n2 * p2.period_sec;
    let zero1 = t1.fill_null_with_values(0.0)?;
    let zero2 = t2.fill_null_with_values(0.0)?;
    let delta = &zero2 - &zero1;
    let pct = |t: &Float64Chunked, cpu: f64| if cpu > 0.0 { t * (100.0 / cpu) } else { t * 0.0 };
    let delta_pct = pct(&delta, run1.cpu_sec);
    let share1 = pct(&zero1, run1.cpu_sec);
    let share2 = pct(&zero2, run2.cpu_sec);
    let listed = share1.gt_eq(opts.cutoff_pct) | share2.gt_eq(opts.cutoff_pct);
    // Poisson error of a count n is sqrt(n); of a difference of independent counts,
    // the root of the sum of their variances.
    let var = &(&(&zero1 * p1.period_sec) + &(&zero2 * p2.period_sec));
    let stderr: Float64Chunked = var.apply_values(f64::sqrt);

    let mut df = DataFrame::new(
        joined.height(),
        vec![
            joined.column("function")?.clone(),
            t1.with_name("t1".into()).into_column(),
            t2.with_name("t2".into()).into_column(),
            delta.with_name("delta".into()).into_column(),
            delta_pct.with_name("delta_pct".into()).into_column(),
            share1.with_name("share1".into()).into_column(),
            share2.with_name("share2".into()).into_column(),
            stderr.with_name("stderr".into()).into_column(),
            listed.with_name("listed".into()).into_column(),
        ],
    )?;
    // Largest delta first; equal deltas by name so the order never depends on hashing.
    df = df.sort(
        ["delta", "function"],
        SortMultipleOptions::default().with_order_descending_multi([true, false]),
    )?;

    let col_f64 = |name: &str| -> PolarsResult<Vec<Option<f64>>> { Ok(df.column(name)?.f64()?.iter().collect()) };
    let function: Vec<String> = df
        .column("function")?
        .str()?
        .iter()
        .map(|s| s.unwrap_or_default().to_string())
        .collect();
    let (t1, t2, delta, delta_pct) = (col_f64("t1")?, col_f64("t2")?, col_f64("delta")?, col_f64("delta_pct")?);
    let (share1, share2, stderr) = (col_f64("share1")?, col_f64("share2")?, col_f64("stderr")?);
    let listed: Vec<bool> = df
        .column("listed")?
        .bool()?
        .iter()
        .map(|b| b.unwrap_or(false))
        .collect();
    let rows = (0..df.height())
        .map(|i| FunctionDelta {
            function: function[i].clone(),
            run1_sec: t1[i],
            run2_sec: t2[i],
            delta_sec: delta[i].unwrap_or(0.0),
            delta_pct_of_run1_cpu: delta_pct[i].unwrap_or(0.0),
            run1_pct_of_cpu: share1[i].unwrap_or(0.0),
            run2_pct_of_cpu: share2[i].unwrap_or(0.0),
            delta_stderr_sec: stderr[i].unwrap_or(0.0),
            listed: listed[i],
        })
        .collect();
    Ok(ProfileComparison {
        run1,
        run2,
        cutoff_pct: opts.cutoff_pct,
        rows,
    })
}

/// The cutoff from the original's positional `cutoff%` or `--cutoff` (they must agree
/// when both are given); 0.5 when neither is.
pub fn resolve_cutoff(positional: Option<f64>, option: Option<f64>) -> Result<f64, String> {
    let c = match (positional, option) {
        (Some(a), Some(b)) if a != b => {
            return Err(format!(
                "the cutoff is given twice ({a} and --cutoff {b}); give it once"
            ))
        }
        (a, b) => a.or(b).unwrap_or(0.5),
    };
    if !(0.0..=100.0).contains(&c) {
        return Err(format!(
            "cutoff {c} is not a percentage between 0 and 100 (e.g. --cutoff 1)"
        ));
    }
    Ok(c)
}

/// `b / a`, or None when `a` is zero (a ratio to nothing is not a number to print).
pub fn ratio(a: f64, b: f64) -> Option<f64> {
    (a != 0.0).then(|| b / a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::prfout::parse;

    fn profile(wall: f64, lost: u64, rows: &[(&str, &str, u64)]) -> Profile {
        let mut text = format!(
            "upcmp-prfout 1\ntest t\nevent cpu-clock\nperiod-sec 0.01\ncpus 1\nwall-sec {wall}\nidle-set idle\n\
             cpu 0 samples {} lost {lost} throttled 0\nfunctions {}\n",
            rows.iter().map(|r| r.2).sum::<u64>(),
            rows.len()
        );
        for (m, n, c) in rows {
            text += &format!("{c} [{m}] {n}\n");
        }
        text += "end\n";
        parse(&text, "t").unwrap()
    }

    // Hand-worked: run 1 = 10 s wall, 1 CPU, period 10 ms; a=300, b=100, idle=500,
    // lost=20 samples: CPU = 4 s, Lost = 0.2 s, Idle = 10 - 4 - 0.2 = 5.8 s.
    #[test]
    fn summary_by_hand() {
        let p = profile(
            10.0,
            20,
            &[("kernel", "a", 300), ("kernel", "b", 100), ("kernel", "idle", 500)],
        );
        let s = ProfileSummary::of(&p, &IdleSet::new(p.idle_set.clone()));
        assert_eq!(s.cpus, 1);
        assert!((s.elapsed_sec - 10.0).abs() < 1e-12);
        assert!((s.cpu_sec - 4.0).abs() < 1e-12);
        assert!((s.lost_sec - 0.2).abs() < 1e-12);
        assert!((s.idle_sec - 5.8).abs() < 1e-12);
        assert_eq!(s.idle_samples, 500);
    }

    // Run 2: a=250 (-0.5 s), b absent (-1 s), c=200 (new, +2 s), m=1 in module ext4.
    // CPU1 = 4 s, so a: -12.5 %, b: -25 %, c: +50 %.
    #[test]
    fn deltas_by_hand() {
        let p1 = profile(
            10.0,
            0,
            &[("kernel", "a", 300), ("kernel", "b", 100), ("kernel", "idle", 500)],
        );
        let p2 = profile(
            10.0,
            0,
            &[
                ("kernel", "a", 250),
                ("kernel", "c", 200),
                ("ext4", "m", 1),
                ("kernel", "idle", 9),
            ],
        );
        let c = compare_profiles(&p1, &p2, &CompareOptions::new(1.0, None)).unwrap();
        let names: Vec<&str> = c.rows.iter().map(|r| r.function.as_str()).collect();
        assert_eq!(names, ["c", "m [ext4]", "a", "b"]);
        let r = &c.rows[0];
        assert_eq!((r.run1_sec, r.run2_sec), (None, Some(2.0)));
        assert!((r.delta_pct_of_run1_cpu - 50.0).abs() < 1e-9);
        let a = &c.rows[2];
        assert!((a.delta_sec + 0.5).abs() < 1e-9);
        assert!((a.delta_pct_of_run1_cpu + 12.5).abs() < 1e-9);
        assert!((a.delta_stderr_sec - 0.01 * 550f64.sqrt()).abs() < 1e-9);
        let b = &c.rows[3];
        assert_eq!(b.run2_sec, None);
        assert!((b.delta_sec + 1.0).abs() < 1e-9);
        // m: 0.01 s of run 2's 4.51 s CPU = 0.22 % < 1 % cutoff; the others are above.
        assert!(!c.rows[1].listed);
        assert_eq!(c.listed().count(), 3);
    }

    #[test]
    fn idle_override_moves_time() {
        let p = profile(10.0, 0, &[("kernel", "a", 300), ("kernel", "idle", 500)]);
        let opts = CompareOptions::new(0.5, Some(IdleSet::new(vec!["a".into()])));
        let c = compare_profiles(&p, &p, &opts).unwrap();
        assert!((c.run1.cpu_sec - 5.0).abs() < 1e-9);
        assert_eq!(c.rows.len(), 1);
        assert_eq!(c.rows[0].function, "idle");
    }

    #[test]
    fn cutoffs() {
        assert_eq!(resolve_cutoff(Some(1.0), None), Ok(1.0));
        assert_eq!(resolve_cutoff(None, Some(2.0)), Ok(2.0));
        assert_eq!(resolve_cutoff(Some(2.0), Some(2.0)), Ok(2.0));
        assert!(resolve_cutoff(Some(1.0), Some(2.0)).is_err());
        assert!(resolve_cutoff(Some(101.0), None).is_err());
        assert!(resolve_cutoff(Some(-1.0), None).is_err());
        assert_eq!(resolve_cutoff(None, None), Ok(0.5));
    }

    #[test]
    fn ratio_of_zero_is_none() {
        assert_eq!(ratio(0.0, 1.0), None);
        assert_eq!(ratio(2.0, 1.0), Some(0.5));
    }
}
