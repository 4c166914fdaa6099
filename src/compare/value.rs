//! What a profile's functions are worth, and in which unit (docs/formulas.md, "Time"):
//! every sample weighs its period, and the weights become
//! - seconds, for the time events (`cpu-clock`, `task-clock`: the weights are ns);
//! - seconds, for another event sampled by uprun: a function's share of its CPU's busy
//!   weight x that CPU's busy time from /proc/stat over the same window, summed over CPUs;
//! - the event's own count, for another event of a recording, which says nothing of how
//!   busy each CPU was.

use crate::model::profile::Unit;
use crate::model::{FunctionSamples, IdleSet, Profile};
use serde::Serialize;

/// How values were made from weights.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Basis {
    /// Time events: summed periods, in seconds.
    SampledTime,
    /// Another event sampled by uprun: shares of each CPU's busy weight x its busy time
    /// from /proc/stat, in seconds.
    BusyTime,
    /// Another event of a recording: the event's own count.
    EventCount,
    /// The two sides cannot be put in one unit: each value is a percentage of its run's
    /// total.
    Share,
}

/// The unit a comparison's values are in, as the report prints it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Measure {
    /// How the values were made.
    pub basis: Basis,
    /// The values' unit as printed: `sec`, `%`, or the event's name with a prefix for
    /// `scale` (`Mcycles`).
    pub unit: String,
    /// Values are divided by this when printed (10^3, 10^6 or 10^9 for event counts).
    pub scale: f64,
}

impl Measure {
    /// Seconds.
    pub fn seconds(basis: Basis) -> Self {
        Measure {
            basis,
            unit: "sec".into(),
            scale: 1.0,
        }
    }

    /// Whether values are seconds.
    pub fn is_time(&self) -> bool {
        matches!(self.basis, Basis::SampledTime | Basis::BusyTime)
    }

    /// Counts of `event`, scaled to print readably at the size of `typical`.
    pub fn events(event: &str, typical: f64) -> Self {
        let (scale, prefix) = match typical.abs() {
            x if x >= 1e10 => (1e9, "G"),
            x if x >= 1e7 => (1e6, "M"),
            x if x >= 1e4 => (1e3, "k"),
            _ => (1.0, ""),
        };
        Measure {
            basis: Basis::EventCount,
            unit: format!("{prefix}{event}"),
            scale,
        }
    }
}

/// A profile's totals as values, with the variance of the busy value under the sampling
/// (compound Poisson) model; its functions go to the caller of [`value_each`].
#[derive(Debug, Clone, PartialEq)]
pub struct Valued {
    /// How the values were made.
    pub basis: Basis,
    /// The non-idle total (CPU time, or the event's count outside idle functions).
    pub busy: f64,
    /// Its variance.
    pub busy_var: f64,
    /// The value of the idle functions (counts only: time is idle by what is left).
    pub idle: f64,
    /// The value of the samples the kernel reported lost.
    pub lost: f64,
    /// Samples in idle functions.
    pub idle_samples: u64,
    /// Samples outside idle functions.
    pub busy_samples: u64,
    /// Every sample of the run, idle functions included (the multinomial total of the
    /// sampling tests).
    pub samples: u64,
    /// The value of every sample of the run: busy + idle, the idle functions valued at
    /// the run's mean value per unit of weight when they have none of their own (busy
    /// time from /proc/stat).
    pub total: f64,
}

/// The basis a profile's values can be made on.
pub fn basis_of(p: &Profile) -> Basis {
    match p.unit {
        Unit::Nanoseconds => Basis::SampledTime,
        Unit::Events if !p.cpus.is_empty() && p.cpus.iter().all(|c| c.procstat_busy_sec.is_some()) => Basis::BusyTime,
        Unit::Events => Basis::EventCount,
    }
}

/// The totals of `p` on its own basis, idle functions per `idle`.
pub fn value(p: &Profile, idle: &IdleSet) -> Valued {
    value_each(p, &p.functions, idle, |_, _, _, _| {})
}

/// [`value`] of `p` with the functions `functions` (its own, or its own moved out of it),
/// giving `each` every non-idle function's index in `functions`, value, variance and
/// samples, in order. Functions of the same display name (as in a hand-made prfout) are
/// the caller's to sum.
pub fn value_each(
    p: &Profile,
    functions: &[FunctionSamples],
    idle: &IdleSet,
    mut each: impl FnMut(usize, f64, f64, u64),
) -> Valued {
    let basis = basis_of(p);
    // Value per unit of weight, per CPU.
    let per_weight: Vec<f64> = match basis {
        Basis::SampledTime => vec![1e-9; p.cpus.len()],
        Basis::BusyTime => (0..p.cpus.len())
            .map(|k| {
                let busy_weight: u64 = functions
                    .iter()
                    .filter(|f| !idle.contains(&f.name))
                    .map(|f| f.weight_per_cpu[k])
                    .sum();
                let busy_sec = p.cpus[k].procstat_busy_sec.unwrap_or(0.0);
                if busy_weight == 0 {
                    0.0
                } else {
                    busy_sec / busy_weight as f64
                }
            })
            .collect(),
        Basis::EventCount | Basis::Share => vec![1.0; p.cpus.len()],
    };
    let mut v = Valued {
        basis,
        busy: 0.0,
        busy_var: 0.0,
        idle: 0.0,
        lost: 0.0,
        idle_samples: 0,
        busy_samples: 0,
        samples: 0,
        total: 0.0,
    };
    let (mut busy_weight, mut all_weight) = (0.0, 0.0);
    for (k, f) in functions.iter().enumerate() {
        v.samples += f.total();
        all_weight += f.weight() as f64;
        let x: f64 = f
            .weight_per_cpu
            .iter()
            .zip(&per_weight)
            .map(|(&w, s)| w as f64 * s)
            .sum();
        if idle.contains(&f.name) {
            // Busy time is what /proc/stat saw outside the idle loop: none of it is idle.
            v.idle += if basis == Basis::BusyTime { 0.0 } else { x };
            v.idle_samples += f.total();
            continue;
        }
        // The variance of a sum of weights is the sum of their squares; a value scales it
        // by the square of its mean value per unit of weight.
        let w = f.weight();
        let s = if w == 0 { 0.0 } else { x / w as f64 };
        let var = s * s * f.weight_sq;
        each(k, x, var, f.total());
        v.busy += x;
        v.busy_var += var;
        v.busy_samples += f.total();
        busy_weight += w as f64;
    }
    v.total = match basis {
        Basis::BusyTime if busy_weight > 0.0 => v.busy * all_weight / busy_weight,
        Basis::BusyTime => v.busy,
        _ => v.busy + v.idle,
    };
    v.lost = p
        .cpus
        .iter()
        .zip(&per_weight)
        .map(|(c, s)| c.lost as f64 * p.period * s)
        .sum();
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::CpuTotals;
    use std::collections::HashMap;

    /// `value_each`'s functions summed by name.
    fn valued(p: &Profile) -> (Valued, HashMap<String, (f64, f64, u64)>) {
        let mut functions = HashMap::<String, (f64, f64, u64)>::new();
        let v = value_each(p, &p.functions, &IdleSet::new(p.idle_set.clone()), |k, x, var, n| {
            let e = functions.entry(p.functions[k].name.clone()).or_default();
            *e = (e.0 + x, e.1 + var, e.2 + n);
        });
        (v, functions)
    }

    fn f(name: &str, per_cpu: Vec<u64>, weights: Vec<u64>) -> FunctionSamples {
        let sq = weights.iter().map(|&w| (w as f64) * (w as f64)).sum();
        FunctionSamples {
            module: "kernel".into(),
            name: name.into(),
            per_cpu,
            weight_per_cpu: weights,
            weight_sq: sq,
        }
    }

    fn cpu(cpu: u32, busy: Option<f64>) -> CpuTotals {
        CpuTotals {
            procstat_busy_sec: busy,
            ..CpuTotals::empty(cpu)
        }
    }

    fn profile(unit: Unit, busy: [Option<f64>; 2]) -> Profile {
        Profile {
            test: "t".into(),
            command: None,
            event: "cycles".into(),
            unit,
            period: 1000.0,
            wall_sec: 2.0,
            idle_set: vec!["idle".into()],
            cpus: vec![cpu(0, busy[0]), cpu(1, busy[1])],
            warnings: vec![],
            // One sample each, of varying periods.
            functions: vec![
                f("a", vec![1, 1], vec![3000, 1000]),
                f("b", vec![1, 1], vec![1000, 3000]),
                f("idle", vec![1, 0], vec![500, 0]),
            ],
        }
    }

    // By hand: CPU 0 has busy weight 4000 (a 3000, b 1000) and 1 s busy; CPU 1 has 4000
    // (a 1000, b 3000) and 3 s busy. a = 3/4 x 1 + 1/4 x 3 = 1.5 s; b = 1/4 + 9/4 = 2.5 s.
    #[test]
    fn other_events_become_time_by_each_cpus_busy_time() {
        let p = profile(Unit::Events, [Some(1.0), Some(3.0)]);
        let (v, functions) = valued(&p);
        assert_eq!(v, value(&p, &IdleSet::new(p.idle_set.clone())));
        assert_eq!(v.basis, Basis::BusyTime);
        assert!((functions["a"].0 - 1.5).abs() < 1e-12);
        assert!((functions["b"].0 - 2.5).abs() < 1e-12);
        assert!((v.busy - 4.0).abs() < 1e-12, "all of the busy time");
        assert_eq!(v.idle, 0.0, "idle functions get none of the busy time");
        // Totals for the sampling tests: 5 samples, 4 of them busy; the idle function's
        // 500 cycles valued at the run's 4 s per 8000 cycles: 4.25 s in all.
        assert_eq!((v.samples, v.busy_samples), (5, 4));
        assert!((v.total - 4.25).abs() < 1e-12);
        // a: 4000 cycles for 1.5 s; its squares 3000² + 1000² scale by (1.5/4000)².
        let want = (1.5f64 / 4000.0).powi(2) * 1e7;
        assert!((functions["a"].1 - want).abs() < 1e-15);
    }

    #[test]
    fn time_events_weigh_their_periods_and_recordings_keep_their_counts() {
        let p = profile(Unit::Nanoseconds, [None, None]);
        let (v, functions) = valued(&p);
        assert_eq!(v.basis, Basis::SampledTime);
        assert!((functions["a"].0 - 4000e-9).abs() < 1e-18);
        assert!((v.idle - 500e-9).abs() < 1e-18);
        assert!((v.total - 8500e-9).abs() < 1e-18);
        let p = profile(Unit::Events, [Some(1.0), None]);
        let (v, functions) = valued(&p);
        assert_eq!(v.basis, Basis::EventCount, "a CPU without /proc/stat: no time basis");
        assert_eq!(functions["b"], (4000.0, 1e7, 2));
        assert_eq!(v.busy, 8000.0);
    }

    #[test]
    fn event_units_scale_readably() {
        assert_eq!(Measure::events("cycles", 3.2e9).unit, "Mcycles");
        assert_eq!(Measure::events("cycles", 3.2e10).scale, 1e9);
        assert_eq!(Measure::events("page-faults", 15000.0).unit, "kpage-faults");
        assert_eq!(Measure::events("page-faults", 150.0).unit, "page-faults");
    }
}
