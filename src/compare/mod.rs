//! Comparing two profiles: summaries, per-function deltas (polars), benchmark ratios.
//!
//! The formulas are those of `docs/formulas.md`; numbers are computed here once and only
//! formatted by the renderers of the report layer.

pub mod bench;
pub mod imported;
pub mod runs;
pub mod stacks;
pub mod stats;
pub mod value;

use crate::model::profile::module;
use crate::model::{IdleSet, Profile};
use polars::prelude::*;
use serde::Serialize;

pub use stats::{Method, Significance};
pub use value::{Basis, Measure};

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

/// The "Profiling Summary" numbers of one run, summed over all CPUs. Values are in the
/// comparison's [`Measure`]; with a time measure, Idle = Elapsed - CPU - Lost.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProfileSummary {
    /// Sampled CPUs.
    pub cpus: u32,
    /// Wall time x CPUs, in seconds.
    pub elapsed_sec: f64,
    /// Idle: Elapsed - CPU - Lost with a time measure, else the idle functions' count.
    pub idle: f64,
    /// The functions outside the idle set: CPU time, or the event's count.
    pub cpu: f64,
    /// The samples the kernel reported lost, valued as the others.
    pub lost: f64,
    /// Wall-clock length of the sampled interval, in seconds.
    pub wall_sec: f64,
    /// What one sample stands for, in the profile's unit (ns or events): the sampling
    /// period, or the mean period.
    pub period: f64,
    /// Whether every sample weighs the same period.
    pub fixed_period: bool,
    /// Sampling event.
    pub event: String,
    /// The idle functions used.
    pub idle_set: Vec<String>,
    /// Samples in idle functions (shown for information; Idle is not derived from them).
    pub idle_samples: u64,
    /// Repetitions averaged (1 for a single run).
    pub repetitions: usize,
    /// Standard deviation of the CPU value over the repetitions, % of the mean.
    pub cpu_sd_pct: f64,
    /// Each repetition's CPU value, in order.
    pub cpu_per_repetition: Vec<f64>,
}

impl ProfileSummary {
    /// The summary of `p` valued as `v` (see [`value::value`]).
    fn of_valued(p: &Profile, v: &value::Valued, idle: &IdleSet) -> Self {
        let cpus = p.cpus.len() as u32;
        let elapsed_sec = p.wall_sec * f64::from(cpus);
        let idle_value = match v.basis {
            Basis::SampledTime | Basis::BusyTime => {
                let i = elapsed_sec - v.busy - v.lost;
                // Below the resolution of the busy time it is rounding, not idle time (nor a
                // negative one): half a sample, or for /proc/stat's busy time a tick
                // (USER_HZ = 100) of each CPU.
                let resolution = match v.basis {
                    Basis::BusyTime => 0.01 * f64::from(cpus),
                    _ => 0.5 * p.period_sec().unwrap_or(0.0),
                };
                if i.abs() < resolution {
                    0.0
                } else {
                    i
                }
            }
            Basis::EventCount | Basis::Share => v.idle,
        };
        ProfileSummary {
            cpus,
            elapsed_sec,
            idle: idle_value,
            cpu: v.busy,
            lost: v.lost,
            wall_sec: p.wall_sec,
            period: p.period,
            fixed_period: p.fixed_period(),
            event: p.event.clone(),
            idle_set: idle.names().to_vec(),
            idle_samples: v.idle_samples,
            repetitions: 1,
            cpu_sd_pct: 0.0,
            cpu_per_repetition: vec![v.busy],
        }
    }

    /// Computes the summary of `p` with the idle set `idle`, on its own basis.
    pub fn of(p: &Profile, idle: &IdleSet) -> Self {
        Self::of_valued(p, &value::value(p, idle), idle)
    }

    /// The mean summary of several repetitions (at least one).
    fn mean_of(all: Vec<ProfileSummary>) -> Self {
        let avg = |f: fn(&ProfileSummary) -> f64| stats::mean(&all.iter().map(f).collect::<Vec<_>>());
        let cpu: Vec<f64> = all.iter().map(|s| s.cpu).collect();
        ProfileSummary {
            elapsed_sec: avg(|s| s.elapsed_sec),
            idle: avg(|s| s.idle),
            cpu: avg(|s| s.cpu),
            lost: avg(|s| s.lost),
            wall_sec: avg(|s| s.wall_sec),
            idle_samples: all.iter().map(|s| s.idle_samples).sum::<u64>() / all.len() as u64,
            repetitions: all.len(),
            fixed_period: all.iter().all(|s| s.fixed_period),
            cpu_sd_pct: stats::stddev_pct(&cpu),
            cpu_per_repetition: cpu,
            ..all[0].clone()
        }
    }

    /// The mean summary of several repetitions (at least one), each on its own basis.
    pub fn of_set(ps: &[Profile], idle: &IdleSet) -> Self {
        Self::mean_of(ps.iter().map(|p| Self::of(p, idle)).collect())
    }
}

/// One function's line of the "CPU Time Analysis".
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FunctionDelta {
    /// Display name: the function, with `[module]` after it for kernel modules.
    pub function: String,
    /// Its value in run 1 (None: absent there), in the comparison's measure.
    pub run1: Option<f64>,
    /// Its value in run 2 (None: absent there).
    pub run2: Option<f64>,
    /// Run2 - Run1, absent counting as 0.
    pub delta: f64,
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
    /// The unit of every value.
    pub measure: Measure,
    /// Things the reader must know before reading the numbers (runs that cannot be put in
    /// one unit).
    pub warnings: Vec<String>,
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
        if self.run1.cpu > 0.0 {
            100.0 * self.cpu_noise.ci95 / self.run1.cpu
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

/// One side's non-idle functions: each one's value in every repetition (0 where it is
/// absent), the variance of its mean under the sampling model, and its samples over all
/// repetitions.
struct SideFunctions {
    names: Vec<String>,
    per_rep: Vec<Vec<f64>>,
    mean_var: Vec<f64>,
    samples: Vec<u64>,
}

fn side_functions(vals: &[value::Valued]) -> SideFunctions {
    let mut index: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    let mut side = SideFunctions {
        names: Vec::new(),
        per_rep: Vec::new(),
        mean_var: Vec::new(),
        samples: Vec::new(),
    };
    let k = vals.len() as f64;
    for (r, v) in vals.iter().enumerate() {
        for (name, &(x, var, n)) in &v.functions {
            let i = *index.entry(name.as_str()).or_insert_with(|| {
                side.names.push(name.clone());
                side.per_rep.push(vec![0.0; vals.len()]);
                side.mean_var.push(0.0);
                side.samples.push(0);
                side.names.len() - 1
            });
            side.per_rep[i][r] += x;
            // The mean of k repetitions: its variance is the sum of theirs over k².
            side.mean_var[i] += var / (k * k);
            side.samples[i] += n;
        }
    }
    side
}

/// A side's functions as a DataFrame: function, mean seconds, row index into the side.
fn side_frame(side: &SideFunctions, mean_col: &str, index_col: &str) -> PolarsResult<DataFrame> {
    let means: Vec<f64> = side.per_rep.iter().map(|v| stats::mean(v)).collect();
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

/// The test of a difference of two sides' values: Welch's t-test with repetitions on
/// both sides, else the sampling error of the means, `var1` and `var2`.
fn noise_of(a: &[f64], b: &[f64], var1: f64, var2: f64) -> Significance {
    stats::welch(a, b).unwrap_or_else(|| {
        // As Poisson counts of an effective sample size n = mean² / var, each sample worth
        // var / mean: n·p is the mean and n·p² the variance.
        let effective = |mean: f64, var: f64| {
            if mean == 0.0 || var == 0.0 {
                (0.0, 0.0)
            } else {
                (mean * mean / var, var / mean)
            }
        };
        let (n1, p1) = effective(stats::mean(a), var1);
        let (n2, p2) = effective(stats::mean(b), var2);
        stats::sampling(n1, p1, n2, p2)
    })
}

/// The measure both sides are valued in, with a warning when there is none in common.
fn common_measure(s1: &[Profile], s2: &[Profile], v1: &[value::Valued]) -> (Measure, Vec<String>) {
    let (b1, b2) = (v1[0].basis, value::basis_of(&s2[0]));
    let (e1, e2) = (&s1[0].event, &s2[0].event);
    let time = |b| matches!(b, Basis::SampledTime | Basis::BusyTime);
    if time(b1) && time(b2) {
        let mut w = Vec::new();
        if e1 != e2 {
            w.push(format!(
                "the runs sampled different events ('{e1}' vs '{e2}'); both are measured in time"
            ));
        }
        return (Measure::seconds(b1), w);
    }
    if b1 == Basis::EventCount && b2 == Basis::EventCount && e1 == e2 {
        return (Measure::events(e1, v1[0].busy), Vec::new());
    }
    let unit = |b: Basis, e: &str| {
        if time(b) {
            "seconds".to_string()
        } else {
            format!("counts of {e}")
        }
    };
    (
        Measure {
            basis: Basis::Share,
            unit: "%".into(),
            scale: 1.0,
        },
        vec![format!(
            "the runs are measured in different units ({} vs {}): values are each run's % of its total, \
             and no ratio of values is given",
            unit(b1, e1),
            unit(b2, e2)
        )],
    )
}

/// Each side's values in the common measure: as they are, or as % of their run's total.
fn in_measure(vals: Vec<value::Valued>, m: &Measure) -> Vec<value::Valued> {
    if m.basis != Basis::Share {
        return vals;
    }
    vals.into_iter()
        .map(|mut v| {
            let s = if v.busy > 0.0 { 100.0 / v.busy } else { 0.0 };
            for x in v.functions.values_mut() {
                x.0 *= s;
                x.1 *= s * s;
            }
            v.busy *= s;
            v.busy_var *= s * s;
            v.idle *= s;
            v.lost *= s;
            v.basis = Basis::Share;
            v
        })
        .collect()
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
    let v1: Vec<value::Valued> = s1.iter().map(|p| value::value(p, &idle1)).collect();
    let v2: Vec<value::Valued> = s2.iter().map(|p| value::value(p, &idle2)).collect();
    let (measure, warnings) = common_measure(s1, s2, &v1);
    let (v1, v2) = (in_measure(v1, &measure), in_measure(v2, &measure));
    let summary = |s: &[Profile], v: &[value::Valued], idle: &IdleSet| {
        ProfileSummary::mean_of(
            s.iter()
                .zip(v)
                .map(|(p, v)| ProfileSummary::of_valued(p, v, idle))
                .collect(),
        )
    };
    let run1 = summary(s1, &v1, &idle1);
    let run2 = summary(s2, &v2, &idle2);
    let (side1, side2) = (side_functions(&v1), side_functions(&v2));
    let j = join_sides(&side1, &side2, run1.cpu, run2.cpu, opts.cutoff_pct)?;

    let zeros1 = vec![0.0; s1.len()];
    let zeros2 = vec![0.0; s2.len()];
    let rows = (0..j.function.len())
        .map(|i| {
            let v1 = j.i1[i].map_or(&zeros1, |k| &side1.per_rep[k as usize]);
            let v2 = j.i2[i].map_or(&zeros2, |k| &side2.per_rep[k as usize]);
            let var1 = j.i1[i].map_or(0.0, |k| side1.mean_var[k as usize]);
            let var2 = j.i2[i].map_or(0.0, |k| side2.mean_var[k as usize]);
            let noise = noise_of(v1, v2, var1, var2);
            FunctionDelta {
                function: j.function[i].clone(),
                run1: j.t1[i],
                run2: j.t2[i],
                delta: j.delta[i].unwrap_or(0.0),
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

    let (cpu1, cpu2) = (&run1.cpu_per_repetition, &run2.cpu_per_repetition);
    let mean_var = |v: &[value::Valued]| v.iter().map(|x| x.busy_var).sum::<f64>() / (v.len() * v.len()) as f64;
    let cpu_noise = noise_of(cpu1, cpu2, mean_var(&v1), mean_var(&v2));
    Ok(ProfileComparison {
        measure,
        warnings,
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
        assert!((s.cpu - 4.0).abs() < 1e-12);
        assert!((s.lost - 0.2).abs() < 1e-12);
        assert!((s.idle - 5.8).abs() < 1e-12);
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
        assert_eq!((r.run1, r.run2), (None, Some(2.0)));
        assert!((r.delta_pct_of_run1_cpu - 50.0).abs() < 1e-9);
        let a = &c.rows[2];
        assert!((a.delta + 0.5).abs() < 1e-9);
        assert!((a.delta_pct_of_run1_cpu + 12.5).abs() < 1e-9);
        // Single runs: the sampling error, 10 ms x sqrt(300 + 250) = 0.2345 s; a 0.5 s
        // drop is 2.13 standard errors: significant at 95%.
        assert_eq!(a.noise.method, Method::SamplingError);
        assert!((a.noise.ci95 - stats::Z_CRIT * 0.01 * 550f64.sqrt()).abs() < 1e-9);
        assert!(a.noise.significant);
        let b = &c.rows[3];
        assert_eq!(b.run2, None);
        assert!((b.delta + 1.0).abs() < 1e-9);
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
        assert!((c.run1.cpu - 4.0).abs() < 1e-9);
        let a = c.rows.iter().find(|r| r.function == "a").unwrap();
        assert_eq!(a.noise.method, Method::Welch);
        assert!((a.delta - 0.5).abs() < 1e-9);
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
        assert!((c.run1.cpu - 5.0).abs() < 1e-9);
        assert_eq!(c.rows.len(), 1);
        assert_eq!(c.rows[0].function, "idle");
    }

    #[test]
    fn ratio_of_zero_is_none() {
        assert_eq!(ratio(0.0, 1.0), None);
        assert_eq!(ratio(2.0, 1.0), Some(0.5));
    }
}
