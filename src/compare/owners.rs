//! Whose time a test's profiles hold: the test's processes, the kernel's own work, and
//! other processes (docs/upcmp.md, "The test's time and everyone else's"), from the owner
//! each sample of a version 5 `samples.gz` carries.

use crate::model::mode::{Mode, Record, ThreadNames};
use crate::model::profile::{OtherUserTime, UNKNOWN_FUNCTION};
use crate::model::SampleFilter;
use crate::store::run::{StoredRun, StoredTest};
use crate::store::samples::for_each_record;
use crate::store::StoreError;
use serde::Serialize;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
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

/// What a test (or repetition) directory's samples say of whose the time is: the time
/// by owner, and the user-mode samples of every command outside the test's processes per
/// CPU (to split the profile's `user` row).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Attribution {
    /// The time by owner.
    pub time: OwnerTime,
    /// User-mode samples outside the test's processes, by command, largest first.
    pub other_user: Vec<OtherUserTime>,
}

impl Attribution {
    /// The attribution of the samples of `dir` that `filter` keeps, the user-mode samples
    /// per CPU in the order of `cpus` (a profile's columns; samples of other CPUs are not
    /// counted there); `None` when its samples carry no owner (written before version 5)
    /// or are not in nanoseconds.
    pub fn of_test_dir(dir: &Path, cpus: &[u32], filter: &SampleFilter) -> Result<Option<Self>, StoreError> {
        if !dir.join("samples.gz").is_file() {
            return Ok(None);
        }
        let column: HashMap<u32, usize> = cpus.iter().enumerate().map(|(i, &c)| (c, i)).collect();
        let mut names = ThreadNames::default();
        let mut time = [0u128; 3];
        let mut others: HashMap<String, u128> = HashMap::new();
        let mut users: HashMap<String, u128> = HashMap::new();
        let mut other_user: HashMap<String, OtherUserTime> = HashMap::new();
        let (mut attributed, mut timed) = (false, true);
        for_each_record(&dir.join("samples.gz"), |r| match &r {
            Record::Sample(s) => {
                let Some(owner) = s.owner else { return };
                attributed = true;
                let Some(p) = s.period else {
                    timed = false;
                    return;
                };
                let comm = names.get(s.tid);
                let kept = filter.is_empty()
                    || (filter.keeps(s.cpu, s.pid, s.tid, s.mode, comm) && filter.keeps_owner(Some(owner)));
                if !kept {
                    return;
                }
                time[owner as usize] += u128::from(p);
                let comm = || comm.unwrap_or(UNKNOWN_FUNCTION).to_string();
                if owner == Owner::Other {
                    *others.entry(comm()).or_default() += u128::from(p);
                }
                if s.mode == Mode::User {
                    *users.entry(comm()).or_default() += u128::from(p);
                    if owner != Owner::Test {
                        if let Some(&i) = column.get(&s.cpu) {
                            let o = other_user.entry(comm()).or_insert_with(|| OtherUserTime {
                                comm: comm(),
                                per_cpu: vec![0; cpus.len()],
                                weight_per_cpu: vec![0; cpus.len()],
                                weight_sq: 0.0,
                            });
                            o.per_cpu[i] += 1;
                            o.weight_per_cpu[i] += p;
                            o.weight_sq += (p as f64) * (p as f64);
                        }
                    }
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
        let mut other_user: Vec<OtherUserTime> = other_user.into_values().collect();
        let weight = |o: &OtherUserTime| o.weight_per_cpu.iter().sum::<u64>();
        other_user.sort_by(|a, b| weight(b).cmp(&weight(a)).then_with(|| a.comm.cmp(&b.comm)));
        Ok(Some(Attribution {
            time: OwnerTime {
                test: sec(time[Owner::Test as usize]),
                kernel: sec(time[Owner::Kernel as usize]),
                other: sec(time[Owner::Other as usize]),
                other_by_command: sorted(others),
                user_by_command: sorted(users),
            },
            other_user,
        }))
    }
}

impl OwnerTime {
    /// The time by owner of the test (or repetition) directory `dir`; `None` when its
    /// samples carry no owner (written before version 5) or are not in nanoseconds.
    pub fn of_test_dir(dir: &Path) -> Result<Option<Self>, StoreError> {
        Ok(Attribution::of_test_dir(dir, &[], &SampleFilter::default())?.map(|a| a.time))
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
             counts them (it is system-wide), and their run-to-run spread enters the noise model of every row; \
             upcmp --only-test compares the test's processes alone",
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

/// Each repetition directory's time by owner (`None`: its samples do not say whose they
/// are), as [`split_user_rows`] read it.
pub type Attributions = HashMap<PathBuf, Option<OwnerTime>>;

/// Reads whose the samples of every repetition of both runs are (the samples `filter`
/// keeps), and where the others' commands hold user time in a test, splits its `user`
/// row into the test's and one per other command ([`crate::model::Profile::split_user_function`]) in
/// every repetition of both sides alike. A test is left as it is where a side's samples
/// do not say whose they are (runs of before attribution compare as they always did), or
/// where no other command holds user time.
pub fn split_user_rows(
    run1: &mut StoredRun,
    run2: &mut StoredRun,
    filter: &SampleFilter,
) -> Result<Attributions, StoreError> {
    // One reading of each side's samples, the sides side by side.
    let read = |run: &StoredRun| -> Result<HashMap<PathBuf, Option<Attribution>>, StoreError> {
        let mut out = HashMap::new();
        for r in run.tests.iter().flat_map(|t| &t.repetitions) {
            let cpus: Vec<u32> = r.profile.cpus.iter().map(|c| c.cpu).collect();
            out.insert(r.dir.clone(), Attribution::of_test_dir(&r.dir, &cpus, filter)?);
        }
        Ok(out)
    };
    let (a1, a2) = std::thread::scope(|s| {
        let a2 = s.spawn(|| read(run2));
        let a1 = read(run1);
        (a1, a2.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
    });
    let mut all = a1?;
    all.extend(a2?);
    // Each side's tests by name (the first of a name, as `StoredRun::test` finds it): a
    // search per name made a test_list of 10^5 lines take minutes.
    let index = |run: &StoredRun| -> HashMap<String, usize> {
        let mut m = HashMap::with_capacity(run.tests.len());
        for (i, t) in run.tests.iter().enumerate() {
            m.entry(t.name.clone()).or_insert(i);
        }
        m
    };
    let (index1, index2) = (index(run1), index(run2));
    for (name, &i1) in &index1 {
        let Some(&i2) = index2.get(name) else { continue };
        let reps = |t: &StoredTest| -> Vec<PathBuf> { t.repetitions.iter().map(|r| r.dir.clone()).collect() };
        let (d1, d2) = (reps(&run1.tests[i1]), reps(&run2.tests[i2]));
        if d1.is_empty() || d2.is_empty() {
            continue;
        }
        let of = |d: &PathBuf| all.get(d).and_then(Option::as_ref);
        let every = d1.iter().chain(&d2).all(|d| of(d).is_some());
        let others = d1
            .iter()
            .chain(&d2)
            .filter_map(of)
            .any(|a| a.other_user.iter().any(|o| o.per_cpu.iter().any(|&n| n > 0)));
        if !every || !others {
            continue;
        }
        for t in [&mut run1.tests[i1], &mut run2.tests[i2]] {
            for r in &mut t.repetitions {
                if let Some(a) = all.get(&r.dir).and_then(Option::as_ref) {
                    r.profile.split_user_function(&a.other_user);
                }
            }
        }
    }
    Ok(all.into_iter().map(|(d, a)| (d, a.map(|a| a.time))).collect())
}

/// Adds to every compared test of `cmp` whose time each side's processes held (the mean
/// of its repetitions, from `attributions`), and the note on busy other processes; a
/// note at the top when a side's samples do not say whose they are. With `only_test`
/// (the profiles hold the test's samples alone), the others' time is none.
pub fn attach(
    cmp: &mut super::runs::RunComparison,
    run1: &StoredRun,
    run2: &StoredRun,
    attributions: &Attributions,
    only_test: bool,
) {
    use super::runs::TestOutcome;
    let side = |run: &StoredRun, name: &str| -> Option<OwnerTime> {
        let t = run.test(name)?;
        let all: Option<Vec<OwnerTime>> = t
            .repetitions
            .iter()
            .map(|r| attributions.get(&r.dir).cloned().flatten())
            .collect();
        let all = all.filter(|a| !a.is_empty())?;
        let mean = OwnerTime::mean(&all);
        Some(if only_test {
            OwnerTime {
                test: mean.test,
                ..OwnerTime::default()
            }
        } else {
            mean
        })
    };
    let mut unattributed = [false; 2];
    for t in &mut cmp.tests {
        let TestOutcome::Compared { profile, .. } = &mut t.outcome else {
            continue;
        };
        let (o1, o2) = (side(run1, &t.name), side(run2, &t.name));
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
    fn other_commands_user_samples_are_counted_per_cpu() {
        use crate::store::samples::SamplesWriter;
        use upcmp_parsers::samples::Sample;
        let dir = tempfile::tempdir().unwrap();
        let mut w = SamplesWriter::create(&dir.path().join("samples.gz")).unwrap();
        for (pid, comm) in [(10, "getpid"), (20, "make"), (30, "bad\u{1b}[2Jname")] {
            w.write(&Record::Comm {
                pid,
                tid: pid,
                comm: comm.into(),
            })
            .unwrap();
        }
        let sample = |cpu, pid, mode, owner| {
            Record::Sample(Sample {
                time_ns: 1,
                cpu,
                pid,
                tid: pid,
                mode,
                period: Some(1_000_000),
                pc: 0x400000,
                callchain: vec![],
                owner: Some(owner),
            })
        };
        for r in [
            sample(0, 10, Mode::User, Owner::Test),
            sample(1, 20, Mode::User, Owner::Other),
            sample(1, 20, Mode::User, Owner::Other),
            sample(0, 20, Mode::Kernel, Owner::Other),
            sample(0, 30, Mode::User, Owner::Other),
            // A CPU the profile did not sample: not in its columns.
            sample(7, 20, Mode::User, Owner::Other),
        ] {
            w.write(&r).unwrap();
        }
        w.finish().unwrap();
        let a = Attribution::of_test_dir(dir.path(), &[0, 1], &SampleFilter::default())
            .unwrap()
            .unwrap();
        let got: Vec<(&str, Vec<u64>, Vec<u64>)> = a
            .other_user
            .iter()
            .map(|o| (o.comm.as_str(), o.per_cpu.clone(), o.weight_per_cpu.clone()))
            .collect();
        assert_eq!(
            got,
            [
                ("make", vec![0, 2], vec![0, 2_000_000]),
                ("bad\u{1b}[2Jname", vec![1, 0], vec![1_000_000, 0])
            ]
        );
        assert_eq!(a.other_user[0].weight_sq, 2e12);
        assert!((a.time.other - 0.005).abs() < 1e-12 && (a.time.test - 0.001).abs() < 1e-12);
        // --only-test keeps none of the others'.
        let only = SampleFilter {
            only_test: true,
            ..SampleFilter::default()
        };
        let a = Attribution::of_test_dir(dir.path(), &[0, 1], &only).unwrap().unwrap();
        assert!(a.other_user.is_empty() && a.time.other == 0.0 && a.time.test > 0.0);
    }

    #[test]
    fn repetitions_are_averaged() {
        let m = OwnerTime::mean(&[side(1.0, 2.0, &[("a", 2.0)]), side(3.0, 0.0, &[])]);
        assert_eq!((m.test, m.other), (2.0, 1.0));
        assert_eq!(m.other_by_command, vec![("a".to_string(), 1.0)]);
    }
}
