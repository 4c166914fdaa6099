//! Comparing two profiles: summaries, per-function deltas (polars), benchmark ratios.
//!
//! The formulas are those of `docs/formulas.md`; numbers are computed here once and only
//! formatted by the renderers of the report layer.

pub mod bench;
pub mod imported;
pub mod runs;
pub mod stacks;
pub mod stats;

use crate::model::profile::module;
use crate::model::{IdleSet, Profile};
use polars::prelude::*;
use serde::Serialize;

pub use stats::{Method, Significance};

/// The cutoff when none is given, as the original: a function is listed when it holds at
/// least 0.5% of its run's CPU time.
pub const DEFAULT_CUTOFF_PCT: f64 = 0.5;

/// Options of a profile comparison.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct CompareOptions {
    /// A function is listed when its time is at least this percentage of its run's CPU
    /// time in either run.
    pub cutoff_pct: f64,
    /// Replaces each profile's own idle set when given.
    pub idle_override: Option<IdleSet>,
    /// List only functions whose change is significant (beyond the noise).
    pub hide_noise: bool,
}

impl Default for CompareOptions {
    fn default() -> Self {
        Self::new(DEFAULT_CUTOFF_PCT, None)
    }
}

impl CompareOptions {
    /// Options with the given cutoff and idle set override.
    pub fn new(cutoff_pct: f64, idle_override: Option<IdleSet>) -> Self {
        CompareOptions {
            cutoff_pct,
            idle_override,
            hide_noise: false,
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
    /// Repetitions averaged (1 for a single run).
    pub repetitions: usize,
    /// Standard deviation of the CPU time over the repetitions, % of the mean.
    pub cpu_sd_pct: f64,
    /// Each repetition's CPU time, in order.
    pub cpu_sec_per_repetition: Vec<f64>,
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
            repetitions: 1,
            cpu_sd_pct: 0.0,
            cpu_sec_per_repetition: vec![cpu_sec],
        }
    }

    /// The mean summary of several repetitions (at least one).
    pub fn of_set(ps: &[Profile], idle: &IdleSet) -> Self {
        let all: Vec<ProfileSummary> = ps.iter().map(|p| Self::of(p, idle)).collect();
        let avg = |f: fn(&ProfileSummary) -> f64| stats::mean(&all.iter().map(f).collect::<Vec<_>>());
        let cpu: Vec<f64> = all.iter().map(|s| s.cpu_sec).collect();
        ProfileSummary {
            elapsed_sec: avg(|s| s.elapsed_sec),
            idle_sec: avg(|s| s.idle_sec),
            cpu_sec: avg(|s| s.cpu_sec),
            lost_sec: avg(|s| s.lost_sec),
            wall_sec: avg(|s| s.wall_sec),
            idle_samples: all.iter().map(|s| s.idle_samples).sum::<u64>() / all.len() as u64,
            repetitions: all.len(),
            cpu_sd_pct: stats::stddev_pct(&cpu),
            cpu_sec_per_repetition: cpu,
            ..all[0].clone()
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
    /// Standard deviation over run 1's repetitions, % of its mean (0 with one run).
    pub run1_sd_pct: f64,
    /// Standard deviation over run 2's repetitions, % of its mean (0 with one run).
    pub run2_sd_pct: f64,
    /// Whether the delta stands above the noise, and how that was decided.
    pub noise: Significance,
    /// At or above the cutoff in either run (and significant, with `hide_noise`): shown
    /// in the text report.
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
    /// The test of the total CPU time: its `ci95` is the smallest change of CPU time the
    /// data can resolve.
    pub cpu_noise: Significance,
}

impl ProfileComparison {
    /// How noise was estimated, for the report.
    pub fn method(&self) -> Method {
        self.cpu_noise.method
    }

    /// The smallest change of total CPU time the data resolve, % of run 1's CPU time.
    pub fn resolvable_pct(&self) -> f64 {
        if self.run1.cpu_sec > 0.0 {
            100.0 * self.cpu_noise.ci95 / self.run1.cpu_sec
        } else {
            0.0
        }
    }
}

impl ProfileComparison {
    /// The rows at or above the cutoff (and significant, with `hide_noise`).
    pub fn listed(&self) -> impl Iterator<Item = &FunctionDelta> {
        self.rows.iter().filter(|r| r.listed)
    }
}

/// The display name of a function: modules other than the core kernel and user space
/// are named, so two modules' functions of the same name stay apart.
pub fn display_name(name: &str, module: &str) -> String {
    match module {
        module::KERNEL | module::USER => name.to_string(),
        m => format!("{name} [{m}]"),
    }
}

/// One side's non-idle functions: each one's seconds in every repetition (0 where it
/// is absent) and its samples over all repetitions. Rows with the same display name (as
/// in a hand-made prfout) are summed.
struct SideFunctions {
    names: Vec<String>,
    per_rep_sec: Vec<Vec<f64>>,
    samples: Vec<u64>,
}

fn side_functions(ps: &[Profile], idle: &IdleSet) -> SideFunctions {
    let mut index: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    let mut side = SideFunctions {
        names: Vec::new(),
        per_rep_sec: Vec::new(),
        samples: Vec::new(),
    };
    for (r, p) in ps.iter().enumerate() {
        for f in p.functions.iter().filter(|f| !idle.contains(&f.name)) {
            let name = display_name(&f.name, &f.module);
            let i = *index.entry(name.clone()).or_insert_with(|| {
                side.names.push(name);
                side.per_rep_sec.push(vec![0.0; ps.len()]);
                side.samples.push(0);
                side.names.len() - 1
            });
            side.per_rep_sec[i][r] += f.total() as f64 * p.period_sec;
            side.samples[i] += f.total();
        }
    }
    side
}

/// A side's functions as a DataFrame: function, mean seconds, row index into the side.
fn side_frame(side: &SideFunctions, mean_col: &str, index_col: &str) -> PolarsResult<DataFrame> {
    let means: Vec<f64> = side.per_rep_sec.iter().map(|v| stats::mean(v)).collect();
    let idx: Vec<u32> = (0..side.names.len() as u32).collect();
    DataFrame::new(
        side.names.len(),
        vec![
            Column::new("function".into(), side.names.clone()),
            Column::new(mean_col.into(), means),
            Column::new(index_col.into(), idx),
        ],
    )
}

/// Compares two profiles (one run on each side).
pub fn compare_profiles(p1: &Profile, p2: &Profile, opts: &CompareOptions) -> PolarsResult<ProfileComparison> {
    compare_profile_sets(std::slice::from_ref(p1), std::slice::from_ref(p2), opts)
}

fn noise_of(a: &[f64], b: &[f64], n1: u64, p1: f64, n2: u64, p2: f64) -> Significance {
    stats::welch(a, b).unwrap_or_else(|| {
        // Mean over k repetitions of Poisson counts: each sample weighs period / k.
        let (k1, k2) = (a.len().max(1) as f64, b.len().max(1) as f64);
        stats::sampling(n1 as f64, p1 / k1, n2 as f64, p2 / k2)
    })
}

/// The functions of both sides joined by name (polars outer join), with their mean
/// seconds, deltas and shares, largest delta first (equal deltas by name, so the order
/// never depends on hashing).
struct Joined {
    function: Vec<String>,
    t1: Vec<Option<f64>>,
    t2: Vec<Option<f64>>,
    delta: Vec<Option<f64>>,
    delta_pct: Vec<Option<f64>>,
    share1: Vec<Option<f64>>,
    share2: Vec<Option<f64>>,
    above: Vec<bool>,
    /// Each row's index into side 1 and side 2.
    i1: Vec<Option<u32>>,
    i2: Vec<Option<u32>>,
}

fn join_sides(
    side1: &SideFunctions,
    side2: &SideFunctions,
    cpu1: f64,
    cpu2: f64,
    cutoff_pct: f64,
) -> PolarsResult<Joined> {
    let joined = side_frame(side1, "t1", "i1")?.join(
        &side_frame(side2, "t2", "i2")?,
        ["function"],
        ["function"],
        JoinArgs::new(JoinType::Full).with_coalesce(JoinCoalesce::CoalesceColumns),
        None,
    )?;
    let t1 = joined.column("t1")?.f64()?.clone();
    let t2 = joined.column("t2")?.f64()?.clone();
    let zero1 = t1.fill_null_with_values(0.0)?;
    let zero2 = t2.fill_null_with_values(0.0)?;
    let delta = &zero2 - &zero1;
    let pct = |t: &Float64Chunked, cpu: f64| if cpu > 0.0 { t * (100.0 / cpu) } else { t * 0.0 };
    let delta_pct = pct(&delta, cpu1);
    let share1 = pct(&zero1, cpu1);
    let share2 = pct(&zero2, cpu2);
    let above = share1.gt_eq(cutoff_pct) | share2.gt_eq(cutoff_pct);

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
            above.with_name("above".into()).into_column(),
            joined.column("i1")?.clone(),
            joined.column("i2")?.clone(),
        ],
    )?;
    df = df.sort(
        ["delta", "function"],
        SortMultipleOptions::default().with_order_descending_multi([true, false]),
    )?;
    let col_f64 = |name: &str| -> PolarsResult<Vec<Option<f64>>> { Ok(df.column(name)?.f64()?.iter().collect()) };
    let col_idx = |name: &str| -> PolarsResult<Vec<Option<u32>>> { Ok(df.column(name)?.u32()?.iter().collect()) };
    Ok(Joined {
        function: df
            .column("function")?
            .str()?
            .iter()
            .map(|s| s.unwrap_or_default().to_string())
            .collect(),
        t1: col_f64("t1")?,
        t2: col_f64("t2")?,
        delta: col_f64("delta")?,
        delta_pct: col_f64("delta_pct")?,
        share1: col_f64("share1")?,
        share2: col_f64("share2")?,
        above: df.column("above")?.bool()?.iter().map(|b| b.unwrap_or(false)).collect(),
        i1: col_idx("i1")?,
        i2: col_idx("i2")?,
    })
}

/// Compares two sides of one or more repetitions each: mean summaries, and every
/// function's mean delta with its noise (polars outer join on the function name, deltas,
/// cutoff filter, sort by delta).
pub fn compare_profile_sets(s1: &[Profile], s2: &[Profile], opts: &CompareOptions) -> PolarsResult<ProfileComparison> {
    assert!(!s1.is_empty() && !s2.is_empty(), "each side has at least one profile");
    let idle_of = |s: &[Profile]| {
        opts.idle_override
            .clone()
            .unwrap_or_else(|| IdleSet::new(s[0].idle_set.clone()))
    };
    let (idle1, idle2) = (idle_of(s1), idle_of(s2));
    let run1 = ProfileSummary::of_set(s1, &idle1);
    let run2 = ProfileSummary::of_set(s2, &idle2);
    let (side1, side2) = (side_functions(s1, &idle1), side_functions(s2, &idle2));
    let (period1, period2) = (s1[0].period_sec, s2[0].period_sec);
    let j = join_sides(&side1, &side2, run1.cpu_sec, run2.cpu_sec, opts.cutoff_pct)?;

    let zeros1 = vec![0.0; s1.len()];
    let zeros2 = vec![0.0; s2.len()];
    let rows = (0..j.function.len())
        .map(|i| {
            let v1 = j.i1[i].map_or(&zeros1, |k| &side1.per_rep_sec[k as usize]);
            let v2 = j.i2[i].map_or(&zeros2, |k| &side2.per_rep_sec[k as usize]);
            let n1 = j.i1[i].map_or(0, |k| side1.samples[k as usize]);
            let n2 = j.i2[i].map_or(0, |k| side2.samples[k as usize]);
            let noise = noise_of(v1, v2, n1, period1, n2, period2);
            FunctionDelta {
                function: j.function[i].clone(),
                run1_sec: j.t1[i],
                run2_sec: j.t2[i],
                delta_sec: j.delta[i].unwrap_or(0.0),
                delta_pct_of_run1_cpu: j.delta_pct[i].unwrap_or(0.0),
                run1_pct_of_cpu: j.share1[i].unwrap_or(0.0),
                run2_pct_of_cpu: j.share2[i].unwrap_or(0.0),
                run1_sd_pct: stats::stddev_pct(v1),
                run2_sd_pct: stats::stddev_pct(v2),
                noise,
                listed: j.above[i] && (!opts.hide_noise || noise.significant),
            }
        })
        .collect();

    let (cpu1, cpu2) = (&run1.cpu_sec_per_repetition, &run2.cpu_sec_per_repetition);
    let busy = |ss: &[f64], period: f64| (ss.iter().sum::<f64>() / period).round() as u64;
    let cpu_noise = noise_of(cpu1, cpu2, busy(cpu1, period1), period1, busy(cpu2, period2), period2);
    Ok(ProfileComparison {
        run1,
        run2,
        cutoff_pct: opts.cutoff_pct,
        rows,
        cpu_noise,
    })
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
        // Single runs: the sampling error, 10 ms x sqrt(300 + 250) = 0.2345 s; a 0.5 s
        // drop is 2.13 standard errors: significant at 95%.
        assert_eq!(a.noise.method, Method::SamplingError);
        assert!((a.noise.ci95 - stats::Z_CRIT * 0.01 * 550f64.sqrt()).abs() < 1e-9);
        assert!(a.noise.significant);
        let b = &c.rows[3];
        assert_eq!(b.run2_sec, None);
        assert!((b.delta_sec + 1.0).abs() < 1e-9);
        // m: 0.01 s of run 2's 4.51 s CPU = 0.22 % < 1 % cutoff; the others are above.
        assert!(!c.rows[1].listed);
        assert_eq!(c.listed().count(), 3);
    }

    // Three repetitions a side: a = 3.0/3.1/2.9 s vs 3.5/3.6/3.4 s (significant),
    // b = 1.0/1.2/0.8 s vs 1.1/0.9/1.0 s (noise).
    #[test]
    fn repetitions_use_welch() {
        let side = |a: [u64; 3], b: [u64; 3]| -> Vec<Profile> {
            (0..3)
                .map(|r| {
                    profile(
                        10.0,
                        0,
                        &[("kernel", "a", a[r]), ("kernel", "b", b[r]), ("kernel", "idle", 100)],
                    )
                })
                .collect()
        };
        let s1 = side([300, 310, 290], [100, 120, 80]);
        let s2 = side([350, 360, 340], [110, 90, 100]);
        let c = compare_profile_sets(&s1, &s2, &CompareOptions::default()).unwrap();
        assert_eq!(c.run1.repetitions, 3);
        assert!((c.run1.cpu_sec - 4.0).abs() < 1e-9);
        let a = c.rows.iter().find(|r| r.function == "a").unwrap();
        assert_eq!(a.noise.method, Method::Welch);
        assert!((a.delta_sec - 0.5).abs() < 1e-9);
        assert!((a.run1_sd_pct - 100.0 * 0.1 / 3.0).abs() < 1e-9);
        assert!(a.noise.significant);
        let b = c.rows.iter().find(|r| r.function == "b").unwrap();
        assert!(!b.noise.significant);
        let hide = CompareOptions {
            hide_noise: true,
            ..CompareOptions::default()
        };
        let c = compare_profile_sets(&s1, &s2, &hide).unwrap();
        assert_eq!(c.listed().map(|r| r.function.as_str()).collect::<Vec<_>>(), ["a"]);
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
    fn ratio_of_zero_is_none() {
        assert_eq!(ratio(0.0, 1.0), None);
        assert_eq!(ratio(2.0, 1.0), Some(0.5));
    }
}
