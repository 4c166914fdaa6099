//! Whose time a test's profiles hold: the test's processes, the kernel's own work, and
//! other processes (docs/upcmp.md, "The test's time and everyone else's"), from the owner
//! each sample of a version 5 `samples.gz` carries.

use crate::model::mode::{Mode, Record, ThreadNames};
use crate::store::samples::for_each_record;
use crate::store::StoreError;
use serde::Serialize;
use std::collections::HashMap;
use std::path::Path;
use upcmp_parsers::samples::Owner;

/// Other processes' share of the CPU time above which the report names them.
pub const BUSY_OTHERS_SHARE: f64 = 0.05;

/// How many busy other commands a note names.
const NAMED: usize = 5;

/// One profile's (or the mean of its repetitions') time by owner, in seconds.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct OwnerTime {
    /// The test's processes.
    pub test: f64,
    /// Kernel work outside any process: pid 0 (idle, and the softirqs and interrupts
    /// taken there) and kernel threads.
    pub kernel: f64,
    /// Other processes.
    pub other: f64,
    /// Other processes' time by command, largest first.
    pub other_by_command: Vec<(String, f64)>,
    /// User-mode time by command (all owners), largest first.
    pub user_by_command: Vec<(String, f64)>,
}

impl OwnerTime {
    /// The time by owner of the test (or repetition) directory `dir`; `None` when its
    /// samples carry no owner (written before version 5) or are not in nanoseconds.
    pub fn of_test_dir(dir: &Path) -> Result<Option<Self>, StoreError> {
        if !dir.join("samples.gz").is_file() {
            return Ok(None);
        }
        let mut names = ThreadNames::default();
        let mut time = [0u128; 3];
        let mut others: HashMap<String, u128> = HashMap::new();
        let mut users: HashMap<String, u128> = HashMap::new();
        let (mut attributed, mut timed) = (false, true);
        for_each_record(&dir.join("samples.gz"), |r| match &r {
            Record::Sample(s) => {
                let Some(owner) = s.owner else { return };
                attributed = true;
                let Some(p) = s.period else {
                    timed = false;
                    return;
                };
                time[owner as usize] += u128::from(p);
                let comm = || names.get(s.tid).unwrap_or("[unknown]").to_string();
                if owner == Owner::Other {
                    *others.entry(comm()).or_default() += u128::from(p);
                }
                if s.mode == Mode::User {
                    *users.entry(comm()).or_default() += u128::from(p);
                }
            }
            r => names.observe(r),
        })?;
        if !attributed || !timed {
            return Ok(None);
        }
        let sec = |ns: u128| ns as f64 * 1e-9;
        let sorted = |m: HashMap<String, u128>| {
            let mut v: Vec<(String, f64)> = m.into_iter().map(|(c, t)| (c, sec(t))).collect();
            v.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
            v
        };
        Ok(Some(OwnerTime {
            test: sec(time[Owner::Test as usize]),
            kernel: sec(time[Owner::Kernel as usize]),
            other: sec(time[Owner::Other as usize]),
            other_by_command: sorted(others),
            user_by_command: sorted(users),
        }))
    }

    /// The mean of repetitions (at least one).
    pub fn mean(all: &[OwnerTime]) -> OwnerTime {
        let n = all.len().max(1) as f64;
        let avg = |f: fn(&OwnerTime) -> f64| all.iter().map(f).sum::<f64>() / n;
        let merge = |f: fn(&OwnerTime) -> &Vec<(String, f64)>| {
            let mut m: HashMap<&str, f64> = HashMap::new();
            for o in all {
                for (c, t) in f(o) {
                    *m.entry(c).or_default() += t / n;
                }
            }
            let mut v: Vec<(String, f64)> = m.into_iter().map(|(c, t)| (c.to_string(), t)).collect();
            v.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
            v
        };
        OwnerTime {
            test: avg(|o| o.test),
            kernel: avg(|o| o.kernel),
            other: avg(|o| o.other),
            other_by_command: merge(|o| &o.other_by_command),
            user_by_command: merge(|o| &o.user_by_command),
        }
    }

    /// The sampled CPU time of every owner but the kernel's idle.
    fn busy(&self, cpu: f64) -> f64 {
        cpu.max(self.test + self.other)
    }
}

/// The two sides' time by owner.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OwnerComparison {
    /// Run 1 (the mean of its repetitions).
    pub run1: OwnerTime,
    /// Run 2.
    pub run2: OwnerTime,
}

impl OwnerComparison {
    /// The note naming the other processes that held more than [`BUSY_OTHERS_SHARE`] of
    /// the CPU time (`cpu1`, `cpu2`: the summary's) on either side, with their shares;
    /// names are given as they are (the renderer escapes them).
    pub fn busy_others_note(&self, cpu1: f64, cpu2: f64) -> Option<String> {
        let share = |o: &OwnerTime, cpu: f64| {
            let busy = o.busy(cpu);
            if busy > 0.0 {
                o.other / busy
            } else {
                0.0
            }
        };
        let (s1, s2) = (share(&self.run1, cpu1), share(&self.run2, cpu2));
        if s1 <= BUSY_OTHERS_SHARE && s2 <= BUSY_OTHERS_SHARE {
            return None;
        }
        let side = |k: u8, o: &OwnerTime, cpu: f64, s: f64| {
            let busy = o.busy(cpu);
            let named: Vec<String> = o
                .other_by_command
                .iter()
                .take(NAMED)
                .filter(|(_, t)| *t > 0.0)
                .map(|(c, t)| format!("{c} {:.1}%", 100.0 * t / busy))
                .collect();
            let list = if named.is_empty() {
                String::new()
            } else {
                format!(": {}", named.join(", "))
            };
            format!("run {k} {:.1}%{list}", 100.0 * s)
        };
        Some(format!(
            "other processes than the test's held more than {:.0}% of the CPU time ({}; {}): the comparison \
             counts them (it is system-wide); upcmp --only-test compares the test's processes alone",
            100.0 * BUSY_OTHERS_SHARE,
            side(1, &self.run1, cpu1, s1),
            side(2, &self.run2, cpu2, s2)
        ))
    }
}

/// The note of a comparison where a side's samples carry no owner.
pub fn unattributed_note(sides: &[u8]) -> String {
    let which = match sides {
        [k] => format!("run {k}'s samples do"),
        _ => "neither run's samples do".to_string(),
    };
    format!(
        "{which} not say whose each is (recorded before uprun attributed samples, or not in time): the \
         Profiling Summary has no lines for the test's and other processes, and --only-test cannot \
         compare"
    )
}

/// Adds to every compared test of `cmp` whose time each side's processes held (the mean
/// of its repetitions, from their `samples.gz`), and the note on busy other processes; a
/// note at the top when a side's samples do not say whose they are. With `only_test`
/// (the profiles hold the test's samples alone), the others' time is none.
pub fn attach(
    cmp: &mut super::runs::RunComparison,
    run1: &crate::store::run::StoredRun,
    run2: &crate::store::run::StoredRun,
    only_test: bool,
) -> Result<(), StoreError> {
    use super::runs::TestOutcome;
    let side = |run: &crate::store::run::StoredRun, name: &str| -> Result<Option<OwnerTime>, StoreError> {
        let Some(t) = run.test(name) else { return Ok(None) };
        let mut all = Vec::new();
        for r in &t.repetitions {
            match OwnerTime::of_test_dir(&r.dir)? {
                Some(o) => all.push(o),
                None => return Ok(None),
            }
        }
        Ok((!all.is_empty()).then(|| {
            let mean = OwnerTime::mean(&all);
            if only_test {
                OwnerTime {
                    test: mean.test,
                    ..OwnerTime::default()
                }
            } else {
                mean
            }
        }))
    };
    let mut unattributed = [false; 2];
    for t in &mut cmp.tests {
        let TestOutcome::Compared { profile, .. } = &mut t.outcome else {
            continue;
        };
        let (o1, o2) = (side(run1, &t.name)?, side(run2, &t.name)?);
        unattributed[0] |= o1.is_none();
        unattributed[1] |= o2.is_none();
        let (Some(run1), Some(run2)) = (o1, o2) else { continue };
        let owners = OwnerComparison { run1, run2 };
        if profile.measure.is_time() {
            profile
                .warnings
                .extend(owners.busy_others_note(profile.run1.cpu, profile.run2.cpu));
        }
        profile.owners = Some(owners);
    }
    let sides: Vec<u8> = (1..=2).filter(|&k| unattributed[k as usize - 1]).collect();
    // Two runs of before attribution compare as they always did; one of each is noted.
    if sides.len() == 1 {
        cmp.warnings.push(unattributed_note(&sides));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn side(test: f64, other: f64, by: &[(&str, f64)]) -> OwnerTime {
        OwnerTime {
            test,
            kernel: 0.0,
            other,
            other_by_command: by.iter().map(|(c, t)| (c.to_string(), *t)).collect(),
            user_by_command: vec![],
        }
    }

    #[test]
    fn busy_others_are_named_above_five_percent() {
        let quiet = side(10.0, 0.4, &[("cron", 0.4)]);
        let busy = side(10.0, 2.0, &[("make", 1.5), ("cc1", 0.5)]);
        let c = OwnerComparison {
            run1: quiet.clone(),
            run2: quiet.clone(),
        };
        assert_eq!(c.busy_others_note(10.4, 10.4), None, "3.8% is not busy");
        let c = OwnerComparison {
            run1: quiet,
            run2: busy,
        };
        let note = c.busy_others_note(10.4, 12.0).unwrap();
        assert!(note.contains("run 2 16.7%: make 12.5%, cc1 4.2%"), "{note}");
        assert!(note.contains("run 1 3.8%: cron 3.8%"), "{note}");
    }

    #[test]
    fn repetitions_are_averaged() {
        let m = OwnerTime::mean(&[side(1.0, 2.0, &[("a", 2.0)]), side(3.0, 0.0, &[])]);
        assert_eq!((m.test, m.other), (2.0, 1.0));
        assert_eq!(m.other_by_command, vec![("a".to_string(), 1.0)]);
    }
}
