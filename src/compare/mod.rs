//! Comparing two profiles: summaries, per-function deltas, benchmark ratios.
//!
//! The formulas are those of `docs/formulas.md`; numbers are computed here once and only
//! formatted by the renderers of the report layer.
//!
//! Over 1,000 lines: the per-function join, its rows and their verdicts (over 1,000 lines
//! of code, one path that every comparison takes) and its unit tests.

pub mod annotate;
pub mod annotate_runs;
pub mod bench;
pub mod changepoint;
pub mod counters;
#[cfg(test)]
mod frame_simulation;
pub mod history;
pub mod imported;
pub mod moves;
pub mod owners;
pub mod runs;
pub mod settings;
pub mod stacks;
/// The statistics of a verdict: the crate `upcmp-stats`.
pub use upcmp_stats as stats;
pub mod value;
pub mod verdict;

use crate::model::profile::module;
use crate::model::{naming, FunctionSamples, IdleSet, Profile};
use bench::BenchRow;
use rayon::iter::{IntoParallelIterator, IntoParallelRefIterator, ParallelIterator};
use rayon::slice::ParallelSliceMut;
use serde::Serialize;
use stats::{Correction, Detectable, SampledTime, ShareCount};
use std::borrow::Cow;
use std::collections::HashMap;

pub use stats::{Mark, Method, Significance};
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
    /// List only functions whose change stands above the noise (marked significant, or
    /// sampling only with one run a side), after the report's adjustment.
    pub hide_noise: bool,
    /// List every counter of "System Activity", not only those whose change stands out.
    pub all_counters: bool,
    /// One row per symbol: a function's compiler clones (`.isra.0`, `.constprop.1`, ...)
    /// are not folded into its base name (`model::naming`).
    pub keep_clones: bool,
    /// Tests whose two sides the user declares the same benchmark (`--same-test NAME`),
    /// compared although their commands differ.
    pub same_tests: Vec<String>,
    /// The functions annotated below the table, line by line (`--annotate FUNC`).
    pub annotate: annotate::AnnotateOptions,
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
            all_counters: false,
            keep_clones: false,
            same_tests: Vec::new(),
            annotate: annotate::AnnotateOptions::default(),
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
    /// Times the kernel throttled sampling (over all CPUs, and all repetitions): the time
    /// it did not sample counts as Idle.
    pub throttled: u64,
    /// Repetitions averaged (1 for a single run).
    pub repetitions: usize,
    /// Standard deviation of the CPU value over the repetitions, % of the mean; none for
    /// a single repetition (null in results.json, as in the other formats).
    pub cpu_sd_pct: Option<f64>,
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
                // negative one): a sample of each CPU (a CPU's sampling timer keeps what was
                // left of its period when the previous window closed, so a window of n
                // periods may hold n + 1 samples), or for /proc/stat's busy time a tick
                // (USER_HZ = 100) of each CPU.
                let resolution = match v.basis {
                    Basis::BusyTime => 0.01 * f64::from(cpus),
                    _ => p.period_sec().unwrap_or(0.0) * f64::from(cpus),
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
            throttled: p.cpus.iter().map(|c| c.throttled).sum(),
            repetitions: 1,
            cpu_sd_pct: None,
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
            throttled: all.iter().map(|s| s.throttled).sum(),
            repetitions: all.len(),
            fixed_period: all.iter().all(|s| s.fixed_period),
            cpu_sd_pct: (cpu.len() > 1).then(|| stats::stddev_pct(&cpu)),
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
    /// Standard deviation over run 1's repetitions, % of its mean (none with one run).
    pub run1_sd_pct: Option<f64>,
    /// Standard deviation over run 2's repetitions, % of its mean (none with one run).
    pub run2_sd_pct: Option<f64>,
    /// The test of its time (the table's question: did its CPU time change?), adjusted
    /// with every function row above the cutoff of the report.
    pub noise: Significance,
    /// The test of its share of its run's CPU samples (the flame graph's question), in
    /// percentage points, adjusted with the shares of the same rows.
    pub share_noise: Significance,
    /// At or above the cutoff in either run: in the report's families.
    pub above_cutoff: bool,
    /// Above the cutoff (and standing out, with `hide_noise`): shown in the text report.
    pub listed: bool,
    /// The symbols folded into this row (its clones and suffixed copies), each with its
    /// value in each run; empty when the row is one symbol.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub clones: Vec<CloneTime>,
    /// How the row was matched across the runs when not by its name alone (a module in
    /// one kernel, built in in the other).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub matched: Option<String>,
}

/// One symbol folded into a row, with its mean value in each run (None: absent there).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CloneTime {
    /// The symbol's display name, e.g. `finish_task_switch.isra.0`.
    pub name: String,
    /// Its value in run 1.
    pub run1: Option<f64>,
    /// Its value in run 2.
    pub run2: Option<f64>,
}

impl FunctionDelta {
    /// The run this row's function is the only one in (1 or 2), none when in both.
    pub fn only_in(&self) -> Option<u8> {
        match (self.run1, self.run2) {
            (None, Some(_)) => Some(2),
            (Some(_), None) => Some(1),
            _ => None,
        }
    }
}

/// The sizes of the families a comparison's rows were adjusted in, counted over the
/// whole report (docs/formulas.md, "Families").
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Families {
    /// Tested function rows above the cutoff (Benjamini–Hochberg; their shares are a
    /// second family of the same rows).
    pub functions: usize,
    /// Tested CPU totals (Holm).
    pub headline: usize,
    /// Tested benchmark values (Holm): a family of their own, so that what changes a
    /// profile (a filter such as `--comm`) never changes a benchmark's verdict.
    pub benchmarks: usize,
}

/// The variance models of a comparison's rows, each fitted over the functions of its
/// test: one for their times, one for their shares.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct NoiseModel {
    /// The model of the functions' times (the table's test).
    pub time: stats::Prior,
    /// The model of the functions' shares (the share columns).
    pub share: stats::Prior,
}

impl Default for NoiseModel {
    fn default() -> Self {
        NoiseModel {
            time: stats::Prior::Unfitted,
            share: stats::Prior::Unfitted,
        }
    }
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
    /// The test of the total CPU time, adjusted with the report's CPU totals.
    pub cpu_noise: Significance,
    /// The families the rows were adjusted in.
    pub families: Families,
    /// The variance model shared by the rows (docs/formulas.md, "The variance model").
    pub noise_model: NoiseModel,
    /// The two sides did different work (another command or number of copies): a ratio
    /// of their totals means nothing and none is given (`runs::unlike_sides`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub ratios_refused: bool,
    /// Whose the time is on each side (the test's processes, the kernel's, others'), when
    /// both sides' samples say (uprun runs of samples version 5).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub owners: Option<owners::OwnerComparison>,
    /// The profiles are of uprun runs, not recordings or lone profiles: repetitions can
    /// be asked for (`uprun --runs`), and the benchmark results come from upouts.
    #[serde(skip)]
    pub of_runs: bool,
}

impl ProfileComparison {
    /// A copy without the function rows, for a writer that writes them apart (10^5 rows
    /// are 37 MB). Every field is named, so a new one is not left out silently.
    pub fn without_rows(&self) -> Self {
        let ProfileComparison {
            measure,
            warnings,
            run1,
            run2,
            cutoff_pct,
            rows: _,
            cpu_noise,
            families,
            noise_model,
            ratios_refused,
            owners,
            of_runs,
        } = self;
        ProfileComparison {
            measure: measure.clone(),
            warnings: warnings.clone(),
            run1: run1.clone(),
            run2: run2.clone(),
            cutoff_pct: *cutoff_pct,
            rows: Vec::new(),
            cpu_noise: *cpu_noise,
            families: *families,
            noise_model: *noise_model,
            ratios_refused: *ratios_refused,
            owners: owners.clone(),
            of_runs: *of_runs,
        }
    }

    /// How noise was estimated, for the report.
    pub fn method(&self) -> Method {
        self.cpu_noise.method
    }

    /// What the repetitions can resolve of the total CPU time, in % of run 1's: the
    /// observed change below which it is not significant, and the true change detected
    /// 80% of the time. None with one run a side (run-to-run noise not measured) or
    /// without a test.
    pub fn cpu_detectable_pct(&self) -> Option<Detectable> {
        let d = self.cpu_noise.detectable.filter(|_| !self.cpu_noise.sampling_only)?;
        (self.run1.cpu > 0.0).then(|| Detectable {
            observed: 100.0 * d.observed / self.run1.cpu,
            true_change_80: 100.0 * d.true_change_80 / self.run1.cpu,
        })
    }

    /// The rows at or above the cutoff (and standing out, with `hide_noise`).
    pub fn listed(&self) -> impl Iterator<Item = &FunctionDelta> {
        self.rows.iter().filter(|r| r.listed)
    }
}

/// The display name of a function: modules other than the core kernel and user space
/// are named, so two modules' functions of the same name stay apart.
pub fn display_name<'a>(name: &'a str, module: &str) -> Cow<'a, str> {
    match module {
        module::KERNEL | module::USER => name.into(),
        m => format!("{name} [{m}]").into(),
    }
}

/// One repetition of a side as the comparison takes it: its profile (totals, CPUs, idle
/// set) and its functions, borrowed or moved out of it. Moved functions are freed as soon
/// as they are valued: two stored runs of 10^5 functions hold 46 MiB of them.
struct Repetition<'a> {
    profile: &'a Profile,
    functions: Cow<'a, [FunctionSamples]>,
}

impl<'a> Repetition<'a> {
    fn borrowed(profile: &'a Profile) -> Self {
        Repetition {
            profile,
            functions: Cow::Borrowed(&profile.functions),
        }
    }
}

/// The names of an index of names (name, position), by position.
fn by_position<N: Default + Clone>(index: impl ExactSizeIterator<Item = (N, usize)>) -> Vec<N> {
    let mut names = vec![N::default(); index.len()];
    for (name, i) in index {
        names[i] = name;
    }
    names
}

/// One side's non-idle functions: each one's samples in every repetition (zero where it
/// is absent) with that repetition's totals, as the time and share tests take them. Each
/// function's repetitions sit side by side in one vector: per-function maps, copies and
/// vectors were half of a comparison's peak at 10^5 functions.
struct SideFunctions {
    /// Each repetition's totals.
    valued: Vec<value::Valued>,
    /// Each function's position, by display name.
    index: HashMap<String, usize, foldhash::fast::RandomState>,
    repetitions: usize,
    times: Vec<SampledTime>,
    /// The symbols folded into a function of another name, by its position: each
    /// symbol's display name and value in each repetition.
    members: HashMap<usize, Vec<(String, Vec<f64>)>, foldhash::fast::RandomState>,
    /// Whether each function's own name was among its symbols.
    plain: Vec<bool>,
}

impl SideFunctions {
    /// The functions of a side's repetitions `s`, in their own measure: the values of
    /// [`value::value_each`], summed by display name, without the run's totals yet
    /// ([`Self::in_measure`] puts them in). With `fold`, a function's clones count as
    /// the function (`model::naming`).
    fn of(s: Vec<Repetition>, idle: &IdleSet, fold: bool) -> Self {
        let reps = s.len();
        let n = s[0].functions.len();
        let mut side = SideFunctions {
            valued: Vec::with_capacity(reps),
            index: HashMap::default(),
            repetitions: reps,
            times: Vec::with_capacity(n * reps),
            members: HashMap::default(),
            plain: Vec::new(),
        };
        side.index.reserve(n);
        let none = SampledTime {
            samples: 0,
            weight: 0.0,
            weight_sq: 0.0,
            run_samples: 0,
            run_weight: 0.0,
            scale: 1.0,
        };
        let mut values = Vec::new();
        for (r, rep) in s.into_iter().enumerate() {
            values.clear();
            side.valued
                .push(value::value_each(rep.profile, &rep.functions, idle, |k, x, var, n| {
                    values.push((k, x, var, n))
                }));
            let mut add = |name: Cow<str>, (x, var, n): (f64, f64, u64)| {
                let (name, member) = match fold.then(|| naming::fold_display_name(&name)) {
                    Some(base) if base.len() != name.len() => (Cow::Owned(base.into_owned()), Some(name.into_owned())),
                    _ => (name, None),
                };
                let next = side.index.len();
                // A borrowed name is copied only when it is new.
                let known = match &name {
                    Cow::Borrowed(b) => side.index.get(*b).copied(),
                    Cow::Owned(_) => None,
                };
                let i = known.unwrap_or_else(|| *side.index.entry(name.into_owned()).or_insert(next));
                if i == next {
                    side.times.extend(std::iter::repeat(none).take(reps));
                    side.plain.push(false);
                }
                match member {
                    Some(m) => {
                        let list = side.members.entry(i).or_default();
                        let k = match list.iter().position(|(n, _)| *n == m) {
                            Some(k) => k,
                            None => {
                                list.push((m, vec![0.0; reps]));
                                list.len() - 1
                            }
                        };
                        list[k].1[r] += x;
                    }
                    None => side.plain[i] = true,
                }
                let t = &mut side.times[i * reps + r];
                t.weight += x;
                t.weight_sq += var;
                t.samples += n;
            };
            match rep.functions {
                Cow::Borrowed(fs) => {
                    for &(k, x, var, n) in &values {
                        add(display_name(&fs[k].name, &fs[k].module), (x, var, n));
                    }
                }
                // Each name is moved, not copied; the rest of each function is freed here.
                Cow::Owned(fs) => {
                    let mut valued = values.iter().peekable();
                    for (k, f) in fs.into_iter().enumerate() {
                        let Some(&(_, x, var, n)) = valued.next_if(|v| v.0 == k) else {
                            continue;
                        };
                        let made = match display_name(&f.name, &f.module) {
                            Cow::Owned(name) => Some(name),
                            Cow::Borrowed(_) => None,
                        };
                        add(Cow::Owned(made.unwrap_or(f.name)), (x, var, n));
                    }
                }
            }
        }
        side
    }

    /// The functions' names, by position.
    fn names(&self) -> Vec<&str> {
        by_position(self.index.iter().map(|(name, &i)| (name.as_str(), i)))
    }
    /// The side in measure `m`: as it is, or each repetition's values as % of its busy
    /// total; with each repetition's totals, for the time test.
    fn in_measure(mut self, m: &Measure) -> Self {
        let reps = self.repetitions;
        let scales: Vec<f64> = self
            .valued
            .iter()
            .map(|v| match m.basis {
                Basis::Share if v.busy > 0.0 => 100.0 / v.busy,
                Basis::Share => 0.0,
                _ => 1.0,
            })
            .collect();
        let share = m.basis == Basis::Share;
        for (k, t) in self.times.iter_mut().enumerate() {
            let (v, s) = (&self.valued[k % reps], scales[k % reps]);
            if share {
                t.weight *= s;
                t.weight_sq *= s * s;
            }
            t.run_samples = v.samples;
            t.run_weight = v.total;
        }
        if share {
            for (_, x) in self.members.values_mut().flatten() {
                for (x, s) in x.iter_mut().zip(&scales) {
                    *x *= s;
                }
            }
            for (v, s) in self.valued.iter_mut().zip(scales) {
                v.busy *= s;
                v.busy_var *= s * s;
                v.idle *= s;
                v.lost *= s;
                v.basis = Basis::Share;
            }
        }
        self
    }

    fn times(&self, i: usize) -> &[SampledTime] {
        &self.times[i * self.repetitions..(i + 1) * self.repetitions]
    }

    /// The symbols of function `i` named `name` (its display name) and their mean
    /// values, when any was folded into it: its own name (the rest of its value) first
    /// when it was seen itself, then its clones.
    fn symbols(&self, i: usize, name: &str) -> Vec<(String, f64)> {
        let Some(members) = self.members.get(&i) else {
            return Vec::new();
        };
        let reps = self.repetitions as f64;
        let mut out: Vec<(String, f64)> = members
            .iter()
            .map(|(n, x)| (n.clone(), x.iter().sum::<f64>() / reps))
            .collect();
        if self.plain[i] {
            let rest = self.mean(i) - out.iter().map(|m| m.1).sum::<f64>();
            out.insert(0, (name.to_string(), rest.max(0.0)));
        }
        out
    }

    /// [`stats::mean`] of the values of function `i`, without a vector of them.
    fn mean(&self, i: usize) -> f64 {
        let t = self.times(i);
        t.iter().map(SampledTime::value).sum::<f64>() / t.len() as f64
    }
}

/// Repetition `v`'s totals with `samples` samples worth `weight` (variance `var`) of them.
fn sampled(v: &value::Valued, samples: u64, weight: f64, var: f64) -> SampledTime {
    SampledTime {
        samples,
        weight,
        weight_sq: var,
        run_samples: v.samples,
        run_weight: v.total,
        scale: 1.0,
    }
}

/// Compares two profiles (one run on each side).
pub fn compare_profiles(p1: &Profile, p2: &Profile, opts: &CompareOptions) -> ProfileComparison {
    compare_profile_sets(std::slice::from_ref(p1), std::slice::from_ref(p2), opts)
}

/// The measure both sides are valued in, with a warning when there is none in common.
fn common_measure(s1: &[&Profile], s2: &[&Profile], v1: &[value::Valued]) -> (Measure, Vec<String>) {
    let (b1, b2) = (v1[0].basis, value::basis_of(s2[0]));
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

/// A function of either side, joined by name: its mean value on each side (None: absent
/// there) and its index into each side.
struct Joined {
    delta: f64,
    t1: Option<f64>,
    t2: Option<f64>,
    i1: Option<u32>,
    i2: Option<u32>,
    /// Matched as a module's function in one run and the core kernel's in the other:
    /// the module's name and the run it is a module in.
    moved: Option<(String, u8)>,
}

impl Joined {
    fn name<'a>(&self, names1: &[&'a str], names2: &[&'a str]) -> &'a str {
        match (self.i1, self.i2) {
            (Some(k), _) => names1[k as usize],
            (None, Some(k)) => names2[k as usize],
            (None, None) => "",
        }
    }
}

/// The functions of both sides joined by name, largest delta first (equal deltas by
/// name, so the order never depends on hashing). A hash join on side 2's own index of
/// its names: at 10^5 functions a DataFrame join took as long and 30 MiB more, its
/// columns copies of the names (docs/import.md, "upcmp at scale").
fn join_sides(side1: &SideFunctions, side2: &SideFunctions, names1: &[&str], names2: &[&str]) -> Vec<Joined> {
    let row = |i1: Option<u32>, i2: Option<u32>| {
        let (t1, t2) = (i1.map(|k| side1.mean(k as usize)), i2.map(|k| side2.mean(k as usize)));
        Joined {
            delta: t2.unwrap_or(0.0) - t1.unwrap_or(0.0),
            t1,
            t2,
            i1,
            i2,
            moved: None,
        }
    };
    let mut rows: Vec<Joined> = (0..names1.len() as u32)
        .into_par_iter()
        .map(|k1| row(Some(k1), side2.index.get(names1[k1 as usize]).map(|&k2| k2 as u32)))
        .collect();
    let mut in1 = vec![false; names2.len()];
    for k2 in rows.iter().filter_map(|r| r.i2) {
        in1[k2 as usize] = true;
    }
    rows.extend(
        (0..names2.len() as u32)
            .filter(|&k| !in1[k as usize])
            .map(|k| row(None, Some(k))),
    );
    match_module_moves(&mut rows, side2, names1, names2);
    // `+ 0.0` makes -0.0 equal to 0.0 in the total order; names are unique, so the
    // order is total and the parallel sort's is the only one.
    rows.par_sort_unstable_by(|a, b| {
        (b.delta + 0.0)
            .total_cmp(&(a.delta + 0.0))
            .then_with(|| a.name(names1, names2).cmp(b.name(names1, names2)))
    });
    rows
}

/// Joins a function that is a module's (`f [ext4]`) in one run and the core kernel's
/// (`f`) in the other, each in one run only, into one row: the same function, built as
/// a module in one kernel and built in in the other. Only where the name is unique on
/// both sides: two modules' `f` against a built-in `f` stay apart.
fn match_module_moves(rows: &mut Vec<Joined>, side2: &SideFunctions, names1: &[&str], names2: &[&str]) {
    type Unmatched<'a> = HashMap<&'a str, Vec<usize>, foldhash::fast::RandomState>;
    let (mut only1, mut only2) = (Unmatched::default(), Unmatched::default());
    for (k, r) in rows.iter().enumerate() {
        match (r.i1, r.i2) {
            (Some(i), None) => only1
                .entry(naming::split_module(names1[i as usize]).0)
                .or_default()
                .push(k),
            (None, Some(i)) => only2
                .entry(naming::split_module(names2[i as usize]).0)
                .or_default()
                .push(k),
            _ => {}
        }
    }
    let mut gone = Vec::new();
    for (f, a) in &only1 {
        let Some(b) = only2.get(f) else { continue };
        let ([ka], [kb]) = (&a[..], &b[..]) else { continue };
        let (i2, t2) = (rows[*kb].i2, rows[*kb].t2);
        let n1 = names1[rows[*ka].i1.unwrap_or_default() as usize];
        let n2 = names2[i2.unwrap_or_default() as usize];
        let moved = match (naming::module_of(n1), naming::module_of(n2)) {
            (Some(m), None) => (m.to_string(), 1),
            (None, Some(m)) => (m.to_string(), 2),
            _ => continue,
        };
        let r = &mut rows[*ka];
        r.i2 = i2;
        r.t2 = i2.map(|k| side2.mean(k as usize));
        r.delta = t2.unwrap_or(0.0) - r.t1.unwrap_or(0.0);
        r.moved = Some(moved);
        gone.push(*kb);
    }
    gone.sort_unstable();
    for k in gone.into_iter().rev() {
        rows.swap_remove(k);
    }
}

/// Compares two sides of one or more repetitions each: mean summaries, and every
/// function's mean delta with its noise (a join on the function name, deltas, cutoff
/// filter, sort by delta). The comparison is its own report: its rows are adjusted as
/// families of their own (see [`adjust_report`]).
pub fn compare_profile_sets(s1: &[Profile], s2: &[Profile], opts: &CompareOptions) -> ProfileComparison {
    fn borrowed(s: &[Profile]) -> Vec<Repetition<'_>> {
        s.iter().map(Repetition::borrowed).collect()
    }
    let mut c = compare_sides(borrowed(s1), borrowed(s2), opts);
    adjust_report(&mut [(&mut [][..], &mut c)], opts);
    c
}

/// [`compare_profile_sets`] before any adjustment: every row's verdict is in no family yet.
fn compare_sides(s1: Vec<Repetition>, s2: Vec<Repetition>, opts: &CompareOptions) -> ProfileComparison {
    assert!(!s1.is_empty() && !s2.is_empty(), "each side has at least one profile");
    let repeated = s1.len() > 1 || s2.len() > 1;
    let (p1, p2): (Vec<&Profile>, Vec<&Profile>) = (
        s1.iter().map(|r| r.profile).collect(),
        s2.iter().map(|r| r.profile).collect(),
    );
    let idle_of = |s: &[&Profile]| {
        opts.idle_override
            .clone()
            .unwrap_or_else(|| IdleSet::new(s[0].idle_set.clone()))
    };
    let (idle1, idle2) = (idle_of(&p1), idle_of(&p2));
    let fold = !opts.keep_clones;
    let (side1, side2) = rayon::join(
        || SideFunctions::of(s1, &idle1, fold),
        || SideFunctions::of(s2, &idle2, fold),
    );
    let (measure, mut warnings) = common_measure(&p1, &p2, &side1.valued);
    let (mut side1, mut side2) = (side1.in_measure(&measure), side2.in_measure(&measure));
    let (v1, v2) = (&side1.valued, &side2.valued);
    let summary = |s: &[&Profile], v: &[value::Valued], idle: &IdleSet| {
        ProfileSummary::mean_of(
            s.iter()
                .zip(v)
                .map(|(p, v)| ProfileSummary::of_valued(p, v, idle))
                .collect(),
        )
    };
    let run1 = summary(&p1, v1, &idle1);
    let run2 = summary(&p2, v2, &idle2);
    for (k, s) in [(1, &run1), (2, &run2)] {
        if s.throttled > 0 {
            warnings.push(format!(
                "run {k}: the kernel throttled sampling {} times (kernel.perf_event_max_sample_rate); \
                 the time it did not sample counts as Idle time, not CPU time",
                s.throttled
            ));
        }
    }
    let joined = {
        let (names1, names2) = (side1.names(), side2.names());
        join_sides(&side1, &side2, &names1, &names2)
    };
    // The names by position, out of the indexes, which are no longer needed.
    let mut names = (
        by_position(std::mem::take(&mut side1.index).into_iter()),
        by_position(std::mem::take(&mut side2.index).into_iter()),
    );

    // A function absent from a side has no samples in any of its repetitions.
    let absent_times = |v: &[value::Valued]| v.iter().map(|v| sampled(v, 0, 0.0, 0.0)).collect::<Vec<_>>();
    /// A function's samples in each repetition, of that repetition's busy samples.
    fn shares<'a>(t: &'a [SampledTime], v: &'a [value::Valued]) -> impl ExactSizeIterator<Item = ShareCount> + 'a {
        t.iter().zip(v).map(|(t, v)| ShareCount::of(t.samples, v.busy_samples))
    }
    let (none_t1, none_t2) = (absent_times(v1), absent_times(v2));
    let times_of = |j: &Joined| {
        (
            j.i1.map_or(&none_t1[..], |k| side1.times(k as usize)),
            j.i2.map_or(&none_t2[..], |k| side2.times(k as usize)),
        )
    };
    // The model shared by the functions of the test, fitted over all of them (above the
    // cutoff or not): only those with enough samples enter the fit.
    let (time_spreads, share_spreads): (Vec<_>, Vec<_>) = joined
        .par_iter()
        .filter_map(|j| {
            let (t1, t2) = times_of(j);
            let time = stats::RowSpread::of_times(t1, t2);
            let share = stats::with_few(shares(t1, v1), |a| {
                stats::with_few(shares(t2, v2), |b| stats::RowSpread::of_shares(a, b))
            });
            (time.eligible() || share.eligible()).then_some((time, share))
        })
        .unzip();
    let noise_model = NoiseModel {
        time: stats::Prior::fit(&time_spreads),
        share: stats::Prior::fit(&share_spreads),
    };
    drop((time_spreads, share_spreads));
    let pct = |t: f64, cpu: f64| if cpu > 0.0 { t * (100.0 / cpu) } else { t * 0.0 };
    let mut rows: Vec<FunctionDelta> = joined
        .par_iter()
        .map(|j| {
            let (t1, t2) = times_of(j);
            let values = |t: &[SampledTime]| t.iter().map(SampledTime::value).collect::<Vec<_>>();
            let share1 = pct(j.t1.unwrap_or(0.0), run1.cpu);
            let share2 = pct(j.t2.unwrap_or(0.0), run2.cpu);
            let above = share1 >= opts.cutoff_pct || share2 >= opts.cutoff_pct;
            FunctionDelta {
                // Moved in below.
                function: String::new(),
                run1: j.t1,
                run2: j.t2,
                delta: j.delta,
                delta_pct_of_run1_cpu: pct(j.delta, run1.cpu),
                run1_pct_of_cpu: share1,
                run2_pct_of_cpu: share2,
                run1_sd_pct: (t1.len() > 1).then(|| stats::stddev_pct(&values(t1))),
                run2_sd_pct: (t2.len() > 1).then(|| stats::stddev_pct(&values(t2))),
                noise: Significance::unadjusted(stats::time_test_with(t1, t2, &noise_model.time), j.delta, repeated),
                // In percentage points, as the share columns.
                share_noise: Significance::unadjusted(
                    stats::with_few(shares(t1, v1), |a| {
                        stats::with_few(shares(t2, v2), |b| stats::share_test_with(a, b, &noise_model.share))
                    }),
                    (share2 - share1) / 100.0,
                    repeated,
                )
                .scaled(100.0),
                above_cutoff: above,
                listed: above,
                clones: Vec::new(),
                matched: j.moved.as_ref().map(|(m, k)| {
                    let other = 3 - k;
                    format!("module {m} in run {k}, built into the kernel in run {other}")
                }),
            }
        })
        .collect();
    // Each row's name is moved from side 1, or side 2 for a function only it has, not
    // copied: 10^5 rows, 10^5 strings.
    for (row, j) in rows.iter_mut().zip(&joined) {
        row.clones = clone_times(
            j.i1.map(|k| (names.0[k as usize].as_str(), k as usize)),
            &side1,
            j.i2.map(|k| (names.1[k as usize].as_str(), k as usize)),
            &side2,
        );
        let name = match (j.i1, j.i2) {
            (Some(k), _) => &mut names.0[k as usize],
            (None, Some(k)) => &mut names.1[k as usize],
            (None, None) => continue,
        };
        row.function = std::mem::take(name);
    }
    // Each function's dispersion, summed: the total's with one run a side.
    let sum_sq: f64 = joined
        .iter()
        .map(|j| j.t1.unwrap_or(0.0).powi(2) + j.t2.unwrap_or(0.0).powi(2))
        .sum();
    drop((joined, names));

    let cpu = |v: &[value::Valued]| {
        v.iter()
            .map(|v| sampled(v, v.busy_samples, v.busy, v.busy_var))
            .collect::<Vec<_>>()
    };
    let cpu_noise = Significance::unadjusted(
        stats::total_test_with(&cpu(v1), &cpu(v2), &noise_model.time, sum_sq),
        run2.cpu - run1.cpu,
        repeated,
    );
    ProfileComparison {
        measure,
        warnings,
        run1,
        run2,
        cutoff_pct: opts.cutoff_pct,
        rows,
        cpu_noise,
        families: Families::default(),
        noise_model,
        ratios_refused: false,
        owners: None,
        of_runs: false,
    }
}

/// The symbols folded into a row (joined from function `i1` of side 1 and `i2` of side
/// 2, each with its name), with their values in each run; empty when the row is one
/// symbol on both sides.
fn clone_times(
    i1: Option<(&str, usize)>,
    side1: &SideFunctions,
    i2: Option<(&str, usize)>,
    side2: &SideFunctions,
) -> Vec<CloneTime> {
    let symbols = |i: Option<(&str, usize)>, side: &SideFunctions| i.map(|(n, k)| side.symbols(k, n));
    let (s1, s2) = (symbols(i1, side1), symbols(i2, side2));
    let empty = |s: &Option<Vec<(String, f64)>>| s.as_ref().map_or(true, Vec::is_empty);
    if empty(&s1) && empty(&s2) {
        return Vec::new();
    }
    // A side with nothing folded has the row's own name only.
    let all = |s: Option<Vec<(String, f64)>>, i: Option<(&str, usize)>, side: &SideFunctions| match (s, i) {
        (Some(s), _) if !s.is_empty() => s,
        (_, Some((n, k))) => vec![(n.to_string(), side.mean(k))],
        _ => Vec::new(),
    };
    let mut out: Vec<CloneTime> = all(s1, i1, side1)
        .into_iter()
        .map(|(name, x)| CloneTime {
            name,
            run1: Some(x),
            run2: None,
        })
        .collect();
    for (name, x) in all(s2, i2, side2) {
        match out.iter_mut().find(|c| c.name == name) {
            Some(c) => c.run2 = Some(x),
            None => out.push(CloneTime {
                name,
                run1: None,
                run2: Some(x),
            }),
        }
    }
    out
}

/// Adjusts the p-values of a report (its tests' benchmark rows and profile comparisons)
/// as families fixed before testing, and lists the rows (docs/formulas.md, "Families"):
///
/// - every function row above the cutoff, over all tests: Benjamini–Hochberg (their
///   times, and separately their shares);
/// - benchmark values: Holm;
/// - total CPU times: Holm, a family of their own.
///
/// Rows that were not tested are in no family; `hide_noise` applies after the
/// adjustment.
pub fn adjust_report(tests: &mut [(&mut [BenchRow], &mut ProfileComparison)], opts: &CompareOptions) {
    let mut times: Vec<&mut Significance> = Vec::new();
    let mut shares: Vec<&mut Significance> = Vec::new();
    let mut headline: Vec<&mut Significance> = Vec::new();
    let mut benchmarks: Vec<&mut Significance> = Vec::new();
    for (bench, profile) in tests.iter_mut() {
        benchmarks.extend(bench.iter_mut().filter_map(|b| b.noise.as_mut()));
        headline.push(&mut profile.cpu_noise);
        for r in profile.rows.iter_mut().filter(|r| r.above_cutoff) {
            times.push(&mut r.noise);
            shares.push(&mut r.share_noise);
        }
    }
    let families = Families {
        functions: stats::adjust_family(Correction::BenjaminiHochberg, &mut times),
        headline: stats::adjust_family(Correction::Holm, &mut headline),
        benchmarks: stats::adjust_family(Correction::Holm, &mut benchmarks),
    };
    stats::adjust_family(Correction::BenjaminiHochberg, &mut shares);
    for (_, profile) in tests.iter_mut() {
        profile.families = families;
        for r in &mut profile.rows {
            r.listed = r.above_cutoff && (!opts.hide_noise || r.noise.stands_out());
        }
    }
}

/// `b / a`, or None when `a` is zero (a ratio to nothing is not a number to print).
pub fn ratio(a: f64, b: f64) -> Option<f64> {
    (a != 0.0).then(|| b / a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::prfout::parse;

    fn close(a: f64, b: f64, tol: f64) {
        assert!((a - b).abs() <= tol * b.abs().max(1e-300), "{a} vs {b}");
    }

    fn profile_with(period: f64, wall: f64, lost: u64, throttled: u64, rows: &[(&str, &str, u64)]) -> Profile {
        let mut text = format!(
            "upcmp-prfout 1\ntest t\nevent cpu-clock\nperiod-sec {period}\ncpus 1\nwall-sec {wall}\nidle-set idle\n\
             cpu 0 samples {} lost {lost} throttled {throttled}\nfunctions {}\n",
            rows.iter().map(|r| r.2).sum::<u64>(),
            rows.len()
        );
        for (m, n, c) in rows {
            text += &format!("{c} [{m}] {n}\n");
        }
        text += "end\n";
        parse(&text, "t").unwrap()
    }

    fn profile(wall: f64, lost: u64, rows: &[(&str, &str, u64)]) -> Profile {
        profile_with(0.01, wall, lost, 0, rows)
    }

    fn row<'a>(c: &'a ProfileComparison, f: &str) -> &'a FunctionDelta {
        c.rows.iter().find(|r| r.function == f).unwrap()
    }

    fn all_listed() -> CompareOptions {
        CompareOptions::new(0.0, None)
    }

    // The runs' function lists are moved into the comparison, recordings' lent: both ways
    // give the same comparison, with modules named, a name that comes twice summed, idle
    // functions left out, functions of one side only, and repetitions.
    #[test]
    fn functions_moved_in_compare_as_functions_lent() {
        let s1 = [
            profile(
                10.0,
                0,
                &[
                    ("kernel", "a", 300),
                    ("ext4", "m", 40),
                    ("kernel", "a", 20),
                    ("kernel", "idle", 500),
                    ("kernel", "one", 7),
                ],
            ),
            profile(
                10.0,
                0,
                &[("ext4", "m", 45), ("kernel", "a", 310), ("kernel", "idle", 490)],
            ),
        ];
        let s2 = [
            profile(
                10.0,
                0,
                &[
                    ("ext4", "m", 60),
                    ("kernel", "a", 290),
                    ("kernel", "idle", 480),
                    ("kernel", "two", 9),
                    ("xfs", "m", 5),
                ],
            ),
            profile(
                10.0,
                0,
                &[
                    ("kernel", "a", 280),
                    ("xfs", "m", 6),
                    ("kernel", "idle", 470),
                    ("ext4", "m", 70),
                ],
            ),
        ];
        fn lent(s: &[Profile]) -> Vec<Repetition<'_>> {
            s.iter().map(Repetition::borrowed).collect()
        }
        // Each profile without its functions, and a copy of them moved in.
        fn moved<'a>(bare: &'a [Profile], s: &[Profile]) -> Vec<Repetition<'a>> {
            bare.iter()
                .zip(s)
                .map(|(profile, p)| Repetition {
                    profile,
                    functions: Cow::Owned(p.functions.clone()),
                })
                .collect()
        }
        let bare = |s: &[Profile]| -> Vec<Profile> {
            s.iter()
                .map(|p| Profile {
                    functions: Vec::new(),
                    ..p.clone()
                })
                .collect()
        };
        let (bare1, bare2) = (bare(&s1), bare(&s2));
        let a = compare_sides(lent(&s1), lent(&s2), &all_listed());
        let b = compare_sides(moved(&bare1, &s1), moved(&bare2, &s2), &all_listed());
        assert_eq!(format!("{a:?}"), format!("{b:?}"));
        let names: Vec<&str> = b.rows.iter().map(|r| r.function.as_str()).collect();
        for want in ["a", "m [ext4]", "m [xfs]", "one", "two"] {
            assert!(names.contains(&want), "{names:?}");
        }
        assert!(!names.contains(&"idle"), "{names:?}");
        // a: (320 + 310) / 2 samples of 10 ms in run 1.
        close(row(&b, "a").run1.unwrap(), 3.15, 1e-12);
        assert_eq!(row(&b, "two").run1, None);
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
        assert_eq!(s.throttled, 0);
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
        let c = compare_profiles(&p1, &p2, &CompareOptions::new(1.0, None));
        let names: Vec<&str> = c.rows.iter().map(|r| r.function.as_str()).collect();
        assert_eq!(names, ["c", "m [ext4]", "a", "b"]);
        let r = &c.rows[0];
        assert_eq!((r.run1, r.run2), (None, Some(2.0)));
        assert!((r.delta_pct_of_run1_cpu - 50.0).abs() < 1e-9);
        // One run a side: the spread over repetitions is undefined, not 0.
        assert_eq!((r.run1_sd_pct, r.run2_sd_pct, c.run1.cpu_sd_pct), (None, None, None));
        let a = &c.rows[2];
        assert!((a.delta + 0.5).abs() < 1e-9);
        assert!((a.delta_pct_of_run1_cpu + 12.5).abs() < 1e-9);
        // Single runs: the sampling error only. a's 300 and 250 samples (550 < 1000) take
        // the exact test, equal exposures (period 10 ms both): 2 P(X <= 250), X ~
        // Binomial(550, 1/2) (scipy 1.17.1: 2*binom.cdf(250, 550, 0.5)).
        assert_eq!(a.noise.method, Method::SamplingError);
        assert_eq!(a.noise.test, Some(stats::NoiseTest::ExactCounts));
        close(a.noise.p_value.unwrap(), 0.036578745549102676, 1e-9);
        // Its family: the three rows above the cutoff; c and b (200 and 100 samples
        // against none) have far smaller p, so a's q = 3p/3 = p: below 5%, but only
        // against the sampling error.
        assert_eq!(c.families.functions, 3);
        close(a.noise.q_value.unwrap(), a.noise.p_value.unwrap(), 1e-12);
        assert_eq!(a.noise.verdict, Mark::SamplingOnly);
        assert!(!a.noise.significant && a.noise.stands_out());
        let b = &c.rows[3];
        assert_eq!(b.run2, None);
        assert!((b.delta + 1.0).abs() < 1e-9);
        // m: 0.01 s of run 2's 4.51 s CPU = 0.22 % < 1 % cutoff; the others are above.
        assert!(!c.rows[1].listed && !c.rows[1].above_cutoff);
        assert_eq!(c.rows[1].noise.verdict, Mark::BelowCutoff);
        assert_eq!(c.rows[1].noise.q_value, None);
        assert_eq!(c.listed().count(), 3);
        // The CPU total with one run a side: sampling only, and nothing to resolve.
        assert!(c.cpu_noise.sampling_only);
        assert_eq!(c.cpu_detectable_pct(), None);
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
        let c = compare_profile_sets(&s1, &s2, &CompareOptions::default());
        assert_eq!(c.run1.repetitions, 3);
        assert!((c.run1.cpu - 4.0).abs() < 1e-9);
        let a = row(&c, "a");
        assert_eq!(a.noise.method, Method::Welch);
        assert!((a.delta - 0.5).abs() < 1e-9);
        assert!((a.run1_sd_pct.unwrap() - 100.0 * 0.1 / 3.0).abs() < 1e-9);
        // s = 0.1 s a side, below each side's sampling variance n p^2 (1 - n/N) (0.0120
        // and 0.0127 s^2, the means over the repetitions), which floors it: se = 0.0908,
        // t = 5.51, nu = 4.00; scipy 1.17.1: 2*t.sf(5.5093370831701085, 3.996544666033164).
        assert_eq!(a.noise.test, Some(stats::NoiseTest::Welch));
        close(a.noise.se.unwrap(), 0.09075502051370157, 1e-9);
        close(a.noise.df.unwrap(), 3.996544666033164, 1e-9);
        close(a.noise.p_value.unwrap(), 0.005308993324930965, 1e-6);
        assert_eq!(a.noise.verdict, Mark::Significant);
        assert_eq!(row(&c, "b").noise.verdict, Mark::Noise);
        // With repetitions the total CPU time has thresholds: X = t_0.975 se, in %.
        let d = c.cpu_detectable_pct().unwrap();
        assert!(d.observed > 0.0 && d.true_change_80 > d.observed);
        let hide = CompareOptions {
            hide_noise: true,
            ..CompareOptions::default()
        };
        let c = compare_profile_sets(&s1, &s2, &hide);
        assert_eq!(c.listed().map(|r| r.function.as_str()).collect::<Vec<_>>(), ["a"]);
    }

    // The issue's small counts: a function absent from run 1 with 4 samples in run 2
    // had p = 0.0455 and was "significant"; the exact test gives 2 * 0.5^4 = 0.125
    // (scipy 1.17.1: binomtest(4, 4, 0.5).pvalue).
    #[test]
    fn zero_against_four_samples_is_noise() {
        let p1 = profile(10.0, 0, &[("kernel", "f", 100), ("kernel", "idle", 900)]);
        let p2 = profile(
            10.0,
            0,
            &[("kernel", "f", 100), ("kernel", "x", 4), ("kernel", "idle", 896)],
        );
        let c = compare_profiles(&p1, &p2, &all_listed());
        let x = row(&c, "x");
        close(x.noise.p_value.unwrap(), 0.125, 1e-12);
        assert_eq!(x.noise.verdict, Mark::Noise);
    }

    // The issue's zero spread: a function absent in run 1, with 7 samples in each of 3
    // repetitions of run 2, had p = 0 ("significant", "changes below 0.0% are within
    // noise"). Floored by its sampling variance: t = 4.58, nu = 2, p = 0.0445 (scipy
    // 1.17.1: 2*t.sf(4.582736093526138, 2)), with 100,000 samples a repetition.
    #[test]
    fn identical_repetitions_are_floored_not_exact() {
        let p1 = profile_with(
            0.001,
            100.0,
            0,
            0,
            &[("kernel", "f", 50_000), ("kernel", "idle", 50_000)],
        );
        let p2 = profile_with(
            0.001,
            100.0,
            0,
            0,
            &[("kernel", "f", 50_000), ("kernel", "z", 7), ("kernel", "idle", 49_993)],
        );
        let c = compare_profile_sets(
            &[p1.clone(), p1.clone(), p1],
            &[p2.clone(), p2.clone(), p2],
            &all_listed(),
        );
        let z = row(&c, "z");
        assert_eq!(z.noise.df, Some(2.0));
        close(z.noise.p_value.unwrap(), 0.04446400593663997, 1e-9);
        // f did not move at all: p = 1, not n/a.
        assert_eq!(row(&c, "f").noise.p_value, Some(1.0));
    }

    // The issue's large functions, 10,000 samples a run: h 9,900 -> 9,800 and x 100 ->
    // 200. h lost exactly what x gained; given the totals (multinomial) both have
    // se = 1 ms x sqrt(99 + 196): h z = -5.82 (Poisson made it -0.71, noise).
    #[test]
    fn large_functions_are_multinomial() {
        let p1 = profile_with(0.001, 10.0, 0, 0, &[("kernel", "h", 9900), ("kernel", "x", 100)]);
        let p2 = profile_with(0.001, 10.0, 0, 0, &[("kernel", "h", 9800), ("kernel", "x", 200)]);
        let c = compare_profiles(&p1, &p2, &all_listed());
        let (h, x) = (row(&c, "h"), row(&c, "x"));
        close(h.noise.se.unwrap(), 0.001 * 295f64.sqrt(), 1e-9);
        close(
            h.noise.p_value.unwrap(),
            stats::normal_two_sided_p(100.0 / 295f64.sqrt()),
            1e-9,
        );
        assert_eq!(h.noise.verdict, Mark::SamplingOnly);
        assert_eq!(x.noise.verdict, Mark::SamplingOnly);
    }

    // The issue's two questions: 500 of 10,000 samples against 600 of 12,000 (1 ms): the
    // time grew by 0.1 s (normal test, 1,100 samples: p = 0.0021), the share of CPU
    // samples stayed at 5% (p = 1). The table marks the time; the share column (the
    // flame graph's question) says noise.
    #[test]
    fn time_and_share_are_two_questions() {
        let p1 = profile_with(0.001, 10.0, 0, 0, &[("kernel", "f", 500), ("kernel", "g", 9500)]);
        let p2 = profile_with(0.001, 12.0, 0, 0, &[("kernel", "f", 600), ("kernel", "g", 11_400)]);
        let c = compare_profiles(&p1, &p2, &all_listed());
        let f = row(&c, "f");
        assert_eq!(f.noise.test, Some(stats::NoiseTest::NormalCounts));
        // z = 0.1 / (1 ms x sqrt(500 x 0.95 + 600 x 0.95)); scipy 1.17.1:
        // 2*norm.sf(0.1/(0.001*sqrt(1045))) = 0.0019...
        close(
            f.noise.p_value.unwrap(),
            stats::normal_two_sided_p(0.1 / (0.001 * 1045f64.sqrt())),
            1e-12,
        );
        assert!(f.noise.stands_out());
        assert_eq!(f.share_noise.p_value, Some(1.0));
        assert_eq!(f.share_noise.verdict, Mark::Noise);
    }

    // Families span the report: a row at p = 0.03 is marked alone, not beside a second
    // test's row at p = 0.5 (BH: q = 2 x 0.03 / 1 = 0.06). --hide-noise then lists the
    // row only when it stands out after the adjustment.
    #[test]
    fn families_span_the_tests_of_a_report() {
        let sig = |p_value| {
            Significance::unadjusted(
                stats::Verdict::Tested(stats::Tested {
                    test: stats::NoiseTest::Welch,
                    delta: 1.0,
                    se: 0.4,
                    df: Some(4.0),
                    p_value,
                    sampling_only: false,
                    growth: stats::Growth::NONE,
                    welch_sides: None,
                }),
                1.0,
                true,
            )
        };
        let p = profile(10.0, 0, &[("kernel", "f", 100), ("kernel", "idle", 900)]);
        let hide = CompareOptions {
            hide_noise: true,
            ..all_listed()
        };
        let mut one = compare_sides(vec![Repetition::borrowed(&p)], vec![Repetition::borrowed(&p)], &hide);
        let mut two = one.clone();
        one.rows[0].noise = sig(0.03);
        two.rows[0].noise = sig(0.5);
        let mut alone = one.clone();
        adjust_report(&mut [(&mut [][..], &mut alone)], &hide);
        assert_eq!(alone.rows[0].noise.verdict, Mark::Significant);
        assert!(alone.rows[0].listed);
        adjust_report(&mut [(&mut [][..], &mut one), (&mut [][..], &mut two)], &hide);
        close(one.rows[0].noise.q_value.unwrap(), 0.06, 1e-12);
        assert_eq!(one.rows[0].noise.verdict, Mark::Noise);
        assert!(!one.rows[0].listed);
        assert_eq!((one.families.functions, two.families.functions), (2, 2));
        // The two CPU totals (no change: p = 1) are the Holm family.
        assert_eq!(one.families.headline, 2);
    }

    // Issue 28: more data never weaker. f 500 -> 650 samples (1 ms) beside 34 unchanged
    // functions of 300 samples, 100,000 samples a run: one run a side, z = 150 /
    // sqrt(1150 - (500² + 650²)/10⁵) = 4.43, q = 35·p = 3.2e-4 (the others have p = 1, so
    // no dispersion is measured). The same counts repeated 3 times a side had Welch's
    // p = 0.00165 on 4 degrees of freedom and q = 0.058 (noise); now the functions share
    // their variance model (no spread: the sampling error of the summed counts) and the
    // q is smaller than with one run.
    #[test]
    fn issue_28_repeating_the_same_counts_never_weakens_the_verdict() {
        let names: Vec<String> = (0..34).map(|i| format!("g{i:02}")).collect();
        let rows: Vec<(&str, &str, u64)> = names.iter().map(|n| ("kernel", n.as_str(), 300)).collect();
        let side = |f: u64| {
            let mut r = rows.clone();
            r.push(("kernel", "f", f));
            r.push(("kernel", "idle", 100_000 - 34 * 300 - f));
            profile_with(0.001, 100.0, 0, 0, &r)
        };
        let (p1, p2) = (side(500), side(650));
        let one = compare_profiles(&p1, &p2, &CompareOptions::default());
        let q1 = row(&one, "f").noise.q_value.unwrap();
        let z = 150.0 / (1150.0f64 - (500.0f64.powi(2) + 650.0f64.powi(2)) / 1e5).sqrt();
        close(q1, 35.0 * stats::normal_two_sided_p(z), 1e-9);
        assert!((3.1e-4..3.3e-4).contains(&q1), "{q1}");
        assert_eq!(row(&one, "f").noise.verdict, Mark::SamplingOnly);
        for k in [2, 3, 5] {
            let c = compare_profile_sets(&vec![p1.clone(); k], &vec![p2.clone(); k], &CompareOptions::default());
            assert!(
                matches!(c.noise_model.time, stats::Prior::Moderated { .. }),
                "{:?}",
                c.noise_model
            );
            let f = row(&c, "f");
            assert!(f.noise.q_value.unwrap() <= q1, "{k}: {:?}", f.noise);
            assert_eq!(f.noise.verdict, Mark::Significant);
            assert_eq!(c.families.functions, 35);
            assert!(c
                .rows
                .iter()
                .filter(|r| r.function != "f")
                .all(|r| !r.noise.stands_out()));
        }
    }

    #[test]
    fn throttled_sampling_is_counted_and_warned_about() {
        let p1 = profile_with(0.01, 10.0, 0, 3, &[("kernel", "f", 100), ("kernel", "idle", 900)]);
        let p2 = profile(10.0, 0, &[("kernel", "f", 100), ("kernel", "idle", 900)]);
        let c = compare_profiles(&p1, &p2, &all_listed());
        assert_eq!((c.run1.throttled, c.run2.throttled), (3, 0));
        assert_eq!(c.warnings.len(), 1);
        assert!(
            c.warnings[0].starts_with("run 1: the kernel throttled sampling 3 times"),
            "{:?}",
            c.warnings
        );
    }

    #[test]
    fn idle_override_moves_time() {
        let p = profile(10.0, 0, &[("kernel", "a", 300), ("kernel", "idle", 500)]);
        let opts = CompareOptions::new(0.5, Some(IdleSet::new(vec!["a".into()])));
        let c = compare_profiles(&p, &p, &opts);
        assert!((c.run1.cpu - 5.0).abs() < 1e-9);
        assert_eq!(c.rows.len(), 1);
        assert_eq!(c.rows[0].function, "idle");
    }

    // Two repetitions a side: f.isra.0 (100, 120) and f (50, 30) in run 1 are f, 150 a
    // repetition (1.5 s); run 2 has f.constprop.0 (160, 140). Two modules' g against a
    // built-in g stay three rows; h [ext4] against a built-in h is one.
    #[test]
    fn clones_fold_and_a_module_move_is_one_row() {
        let side = |rows: [&[(&str, &str, u64)]; 2]| rows.map(|r| profile(10.0, 0, r)).to_vec();
        let s1 = side([
            &[
                ("kernel", "f.isra.0", 100),
                ("kernel", "f", 50),
                ("ext4", "g", 9),
                ("xfs", "g", 9),
                ("ext4", "h", 7),
            ],
            &[
                ("kernel", "f.isra.0", 120),
                ("kernel", "f", 30),
                ("ext4", "g", 9),
                ("xfs", "g", 9),
                ("ext4", "h", 7),
            ],
        ]);
        let s2 = side([
            &[("kernel", "f.constprop.0", 160), ("kernel", "g", 9), ("kernel", "h", 8)],
            &[("kernel", "f.constprop.0", 140), ("kernel", "g", 9), ("kernel", "h", 8)],
        ]);
        let c = compare_profile_sets(&s1, &s2, &all_listed());
        let f = row(&c, "f");
        close(f.run1.unwrap(), 1.5, 1e-12);
        close(f.run2.unwrap(), 1.5, 1e-12);
        let clones: Vec<(&str, Option<f64>, Option<f64>)> =
            f.clones.iter().map(|k| (k.name.as_str(), k.run1, k.run2)).collect();
        assert_eq!(clones.len(), 3, "{clones:?}");
        assert_eq!(clones[0].0, "f");
        close(clones[0].1.unwrap(), 0.4, 1e-9);
        assert_eq!((clones[1].0, clones[1].2), ("f.isra.0", None));
        close(clones[1].1.unwrap(), 1.1, 1e-9);
        assert_eq!((clones[2].0, clones[2].1), ("f.constprop.0", None));
        close(clones[2].2.unwrap(), 1.5, 1e-9);
        for g in ["g [ext4]", "g [xfs]", "g"] {
            assert_eq!(row(&c, g).matched, None, "{g}");
        }
        let h = row(&c, "h [ext4]");
        assert_eq!(
            h.matched.as_deref(),
            Some("module ext4 in run 1, built into the kernel in run 2")
        );
        close(h.delta, 0.01, 1e-9);
        assert!(c.rows.iter().all(|r| r.function != "h"));
        let keep = CompareOptions {
            keep_clones: true,
            ..all_listed()
        };
        let c = compare_profile_sets(&s1, &s2, &keep);
        assert!(c.rows.iter().all(|r| r.clones.is_empty()));
        assert_eq!(row(&c, "f.isra.0").run2, None);
    }

    #[test]
    fn ratio_of_zero_is_none() {
        assert_eq!(ratio(0.0, 1.0), None);
        assert_eq!(ratio(2.0, 1.0), Some(0.5));
    }
}
