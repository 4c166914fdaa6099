//! Comparing two stored runs, test by test.

use super::bench::{compare_bench, wall_time_result, BenchRow};
use super::counters::{adjust_counters, compare_counters, CountedRepetition, CounterRow};
use super::{adjust_report, compare_sides, CompareOptions, ProfileComparison, Repetition};
use crate::model::{FunctionSamples, Profile};
use crate::store::outdir::Status;
use crate::store::run::{StoredRepetition, StoredRun, StoredTest};
use crate::store::system::BIASING_KEYS;
use serde::Serialize;
use std::borrow::Cow;
use std::collections::HashMap;
use std::path::PathBuf;
use upcmp_parsers::keyvalue::KeyValues;
use upcmp_parsers::upout::BenchResult;

/// Errors of a run comparison.
#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    /// Nothing to compare.
    #[error("{dir1} and {dir2} have no test in common (run 1: {tests1}; run 2: {tests2}); compare runs of the same test list")]
    NoCommonTest {
        /// Run 1.
        dir1: PathBuf,
        /// Run 2.
        dir2: PathBuf,
        /// Run 1's tests.
        tests1: String,
        /// Run 2's tests.
        tests2: String,
    },
    /// Nothing to compare, and a run is not finished: still being written, or its writer
    /// stopped before its end.
    #[error("no test to compare: {0}")]
    Unfinished(String),
}

/// A line of the two `system` files that differs and can bias the comparison.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SystemDifference {
    /// The key in `system`.
    pub key: String,
    /// Run 1's value.
    pub run1: String,
    /// Run 2's value.
    pub run2: String,
}

/// What became of one test.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum TestOutcome {
    /// Present (with a profile) in one run only.
    OnlyIn {
        /// 1 or 2.
        run: u8,
        /// Its directory there.
        dir: PathBuf,
    },
    /// Compared.
    Compared {
        /// Run 1's upout (of its first repetition).
        upout1: PathBuf,
        /// Run 2's upout (of its first repetition).
        upout2: PathBuf,
        /// Repetitions in run 1.
        repetitions1: usize,
        /// Repetitions in run 2.
        repetitions2: usize,
        /// Section 1.
        bench: Vec<BenchRow>,
        /// Sections 2 and 3.
        profile: Box<ProfileComparison>,
        /// Things the reader must know (a failed or interrupted test, collector warnings).
        notes: Vec<String>,
        /// "System Activity": what the kernel counted, when both runs recorded it.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        counters: Vec<CounterRow>,
        /// How the two sides were not run alike (also warned at the top of the report).
        #[serde(skip_serializing_if = "Vec::is_empty")]
        unlike: Vec<Unlike>,
    },
}

/// One way the two sides of a test were not run alike: a different command (its
/// options), number of copies, sampling event, sampling period or number of repetitions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Unlike {
    /// What differs, e.g. `command`, `copies`.
    pub item: String,
    /// Run 1's.
    pub run1: String,
    /// Run 2's.
    pub run2: String,
    /// What the difference does to the comparison.
    pub effect: String,
    /// The Profiling Summary's R2/R1 means nothing (different work).
    pub no_summary_ratio: bool,
    /// The benchmark's speed ratios mean nothing (another benchmark or copies).
    pub no_speed_ratio: bool,
}

/// One test of the report.
#[derive(Debug, Clone, Serialize)]
pub struct TestComparison {
    /// The test's directory name.
    pub name: String,
    /// What became of it.
    pub outcome: TestOutcome,
}

/// The comparison of two runs.
#[derive(Debug, Clone, Serialize)]
pub struct RunComparison {
    /// Run 1's directory.
    pub dir1: PathBuf,
    /// Run 2's directory.
    pub dir2: PathBuf,
    /// Warnings for the top of the report.
    pub warnings: Vec<String>,
    /// Differences of the system descriptions that can bias the comparison.
    pub system_differences: Vec<SystemDifference>,
    /// Differences of the kernel settings (`OUTDIR/settings`: configuration, mitigations,
    /// sysctls, ...), every one of them; none when a run has no settings file.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub setting_differences: Vec<SystemDifference>,
    /// Tests in run 1's order, then those only in run 2.
    pub tests: Vec<TestComparison>,
    /// Tested counters of all tests, adjusted together (Holm).
    #[serde(skip_serializing_if = "is_zero")]
    pub counter_family: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

fn system_differences(s1: &KeyValues, s2: &KeyValues) -> Vec<SystemDifference> {
    let mut diffs: Vec<SystemDifference> = BIASING_KEYS
        .iter()
        .filter_map(|k| {
            let (a, b) = (s1.get(k).unwrap_or("absent"), s2.get(k).unwrap_or("absent"));
            (a != b).then(|| SystemDifference {
                key: k.to_string(),
                run1: a.to_string(),
                run2: b.to_string(),
            })
        })
        .collect();
    // The load always differs a little; it biases a comparison once either machine was
    // not quiet (1-minute load of 0.5 or more) and the two differ.
    let load1 = |kv: &KeyValues| -> Option<f64> { kv.get("load-average")?.split_whitespace().next()?.parse().ok() };
    if let (Some(a), Some(b)) = (load1(s1), load1(s2)) {
        if a.max(b) >= 0.5 && (a - b).abs() >= 0.25 {
            diffs.push(SystemDifference {
                key: "load-average (1 min)".into(),
                run1: format!("{a:.2}"),
                run2: format!("{b:.2}"),
            });
        }
    }
    diffs
}

/// What the reader must know of a repetition: a test that did not complete, and the
/// collector's warnings.
fn repetition_notes(run: u8, r: &StoredRepetition) -> Vec<String> {
    let mut notes = Vec::new();
    if let Some(s) = r.status.as_ref().filter(|s| s.status != Status::Completed) {
        notes.push(format!(
            "run {run}: {} {} (exit codes {:?})",
            r.dir.display(),
            s.status.as_str(),
            s.exit_codes
        ));
    }
    notes.extend(r.profile.warnings.iter().map(|w| format!("run {run}: {w}")));
    notes
}

/// The benchmark results of a repetition: its upout's, or the wall time of its command
/// when the upout reports none.
fn bench_results(r: &StoredRepetition) -> Vec<BenchResult> {
    if r.bench.is_empty() {
        let p = &r.profile;
        let command = p.command.clone().unwrap_or_else(|| p.test.clone());
        vec![wall_time_result(&command, p.wall_sec)]
    } else {
        r.bench.clone()
    }
}

/// One side of a test: its profiles, benchmark results and notes.
struct Side<'a> {
    profiles: Vec<&'a Profile>,
    bench: Vec<Vec<BenchResult>>,
    notes: Vec<String>,
}

fn side(run: u8, t: &StoredTest) -> Side<'_> {
    Side {
        profiles: t.repetitions.iter().map(|r| &r.profile).collect(),
        bench: t.repetitions.iter().map(bench_results).collect(),
        notes: t.repetitions.iter().flat_map(|r| repetition_notes(run, r)).collect(),
    }
}

/// A side's command with the values of unixperf's `-loop` and `-repeat` left out: two
/// commands that differ only there run the same operation.
fn operation_of(command: &str) -> Vec<&str> {
    let mut words = Vec::new();
    let mut it = command.split_whitespace();
    while let Some(w) = it.next() {
        words.push(w);
        if w == "-loop" || w == "-repeat" {
            it.next();
        }
    }
    words
}

/// A command split into the wrapper that runs the benchmark (`taskset -c 1`, `env X=1`,
/// a seccomp setter; empty when none) and the benchmark's own command.
#[derive(Debug, PartialEq, Eq)]
struct Wrapped<'a> {
    wrapper: Vec<&'a str>,
    benchmark: Vec<&'a str>,
}

fn basename(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

/// Splits two commands of one test into wrapper and benchmark: at the unixperf program
/// when both run it (its directory left out), else at the longest common tail of words
/// when it begins with a program (not an option or a number) and is the whole of one
/// command or a path; else each command is all benchmark.
fn split_wrappers<'a>(c1: &'a str, c2: &'a str) -> (Wrapped<'a>, Wrapped<'a>) {
    let words = |c: &'a str| c.split_whitespace().collect::<Vec<_>>();
    let (w1, w2) = (words(c1), words(c2));
    let at_unixperf = |w: &[&str]| w.iter().position(|x| basename(x) == "unixperf");
    let split = |w: &[&'a str], at: usize| {
        let mut benchmark = w[at..].to_vec();
        if let Some(first) = benchmark.first_mut() {
            if basename(first) == "unixperf" {
                *first = "unixperf";
            }
        }
        Wrapped {
            wrapper: w[..at].to_vec(),
            benchmark,
        }
    };
    if let (Some(a), Some(b)) = (at_unixperf(&w1), at_unixperf(&w2)) {
        return (split(&w1, a), split(&w2, b));
    }
    let common = w1.iter().rev().zip(w2.iter().rev()).take_while(|(a, b)| a == b).count();
    let program = |w: &str| !w.starts_with('-') && w.parse::<f64>().is_err();
    let whole = common == w1.len() || common == w2.len();
    let head = (common > 0).then(|| w1[w1.len() - common]);
    if head.is_some_and(|h| program(h) && (whole || h.contains('/'))) {
        (split(&w1, w1.len() - common), split(&w2, w2.len() - common))
    } else {
        (split(&w1, 0), split(&w2, 0))
    }
}

/// How the sides of a test were not run alike (docs/upcmp.md, "Like with like"). A
/// changed benchmark (another test, other options, another loop count) is refused: no
/// speed ratio, no R2/R1 and no verdict, unless `declared` says how the user declared the
/// sides the same test (`--same-test NAME`, or one `key=KEY` on both test_list lines). A changed way of running the same benchmark (a wrapper
/// before its command: taskset, numactl, chrt, env, a seccomp setter) is warned and
/// compared. Copies are refused. Events are warned about by the comparison of the
/// profiles.
pub fn unlike_sides(t1: &StoredTest, t2: &StoredTest, declared: Option<&str>) -> Vec<Unlike> {
    let (r1, r2) = (&t1.repetitions[0], &t2.repetitions[0]);
    let command = |r: &StoredRepetition| {
        r.status
            .as_ref()
            .map(|s| s.command.clone())
            .or_else(|| r.profile.command.clone())
    };
    let mut out = Vec::new();
    if let (Some(c1), Some(c2)) = (command(r1), command(r2)) {
        out.extend(unlike_commands(&c1, &c2, declared));
    }
    let copies = |r: &StoredRepetition| r.status.as_ref().map(|s| s.copies);
    if let (Some(k1), Some(k2)) = (copies(r1), copies(r2)) {
        if k1 != k2 {
            out.push(Unlike {
                item: "copies".into(),
                run1: k1.to_string(),
                run2: k2.to_string(),
                effect: "the copies compete differently for the CPUs: no speed ratio and no R2/R1 is given".into(),
                no_summary_ratio: true,
                no_speed_ratio: true,
            });
        }
    }
    let (p1, p2) = (&r1.profile, &r2.profile);
    if p1.event == p2.event && p1.unit == p2.unit && (p1.period - p2.period).abs() > 1e-9 * p1.period.max(p2.period) {
        let period = |p: &Profile| match p.period_sec() {
            Some(s) => {
                let ms = format!("{:.6}", s * 1000.0);
                format!("{} msec", ms.trim_end_matches('0').trim_end_matches('.'))
            }
            None => format!("{:.0} {}", p.period, p.event),
        };
        out.push(Unlike {
            item: "sample period".into(),
            run1: period(p1),
            run2: period(p2),
            effect: "values stay comparable (each sample weighs its period); their sampling errors differ".into(),
            no_summary_ratio: false,
            no_speed_ratio: false,
        });
    }
    let (n1, n2) = (t1.repetitions.len(), t2.repetitions.len());
    if n1 != n2 {
        out.push(Unlike {
            item: "repetitions".into(),
            run1: n1.to_string(),
            run2: n2.to_string(),
            effect: if n1 == 1 || n2 == 1 {
                "the single run is tested against the other side's spread"
            } else {
                "each side's spread is its own (Welch's test)"
            }
            .into(),
            no_summary_ratio: false,
            no_speed_ratio: false,
        });
    }
    out
}

/// What differs between the commands `c1` and `c2` of a test's sides: their wrappers
/// (warned), their benchmarks (refused unless `declared` the same test), or both.
fn unlike_commands(c1: &str, c2: &str, declared: Option<&str>) -> Vec<Unlike> {
    let (w1, w2) = split_wrappers(c1, c2);
    let mut out = Vec::new();
    let shown = |w: &[&str]| match w.is_empty() {
        true => "none".to_string(),
        false => w.join(" "),
    };
    if w1.wrapper != w2.wrapper {
        out.push(Unlike {
            item: "wrapper".into(),
            run1: shown(&w1.wrapper),
            run2: shown(&w2.wrapper),
            effect: "the same benchmark run another way: compared, and what changed may be the wrapper's doing".into(),
            no_summary_ratio: false,
            no_speed_ratio: false,
        });
    }
    if w1.benchmark == w2.benchmark {
        return out;
    }
    let (b1, b2) = (w1.benchmark.join(" "), w2.benchmark.join(" "));
    let same_work = operation_of(&b1) == operation_of(&b2);
    let (effect, refused) = match (declared, same_work) {
        (None, _) => (
            "they ran different benchmarks: no speed ratio, no R2/R1 and no verdict (--same-test NAME, or one \
             key=KEY before the test on both test_list lines, compares them as one test)"
                .to_string(),
            true,
        ),
        (Some(how), true) => (
            format!(
                "declared the same test ({how}): compared; they did different amounts of work, so the Profiling \
                 Summary's R2/R1 is not given"
            ),
            false,
        ),
        (Some(how), false) => (format!("declared the same test ({how}): compared"), false),
    };
    out.push(Unlike {
        item: "command".into(),
        run1: b1,
        run2: b2,
        effect,
        no_summary_ratio: refused || same_work,
        no_speed_ratio: refused,
    });
    out
}

/// How the user declared the two sides of a test the same benchmark, if they did: by
/// `--same-test NAME`, or by one `key=KEY` on the test's line in both runs' test lists.
fn declared_same(t1: &StoredTest, t2: &StoredTest, opts: &CompareOptions) -> Option<String> {
    if opts.same_tests.contains(&t1.name) {
        return Some("--same-test".into());
    }
    match (&t1.key, &t2.key) {
        (Some(k1), Some(k2)) if k1 == k2 => Some(format!("key={k1} in both test lists")),
        _ => None,
    }
}

/// Compares the test `name`, present (with a profile) in both runs. The profiles'
/// function lists move into the comparison.
fn compare_test(t1: &mut StoredTest, t2: &mut StoredTest, opts: &CompareOptions) -> Result<TestOutcome, CompareError> {
    let taken = |t: &mut StoredTest| -> Vec<Vec<FunctionSamples>> {
        t.repetitions
            .iter_mut()
            .map(|r| std::mem::take(&mut r.profile.functions))
            .collect()
    };
    let (f1, f2) = (taken(t1), taken(t2));
    let (t1, t2) = (&*t1, &*t2);
    let (s1, s2) = (side(1, t1), side(2, t2));
    let mut notes = s1.notes;
    notes.extend(s2.notes);
    let (c1, c2) = (s1.profiles[0].cpus.len(), s2.profiles[0].cpus.len());
    if c1 != c2 {
        notes.push(format!("the runs sampled {c1} and {c2} CPUs"));
    }
    let unlike = unlike_sides(t1, t2, declared_same(t1, t2, opts).as_deref());
    let no_summary_ratio = unlike.iter().any(|u| u.no_summary_ratio);
    let no_speed_ratio = unlike.iter().any(|u| u.no_speed_ratio);
    let mut bench = compare_bench(&s1.bench, &s2.bench);
    if no_speed_ratio {
        // Different benchmarks: their values are shown, neither compared nor tested.
        for b in &mut bench {
            b.speed_ratio = None;
            b.noise = None;
        }
    }
    fn repetitions<'a>(profiles: &[&'a Profile], f: Vec<Vec<FunctionSamples>>) -> Vec<Repetition<'a>> {
        profiles
            .iter()
            .zip(f)
            .map(|(&profile, functions)| Repetition {
                profile,
                functions: Cow::Owned(functions),
            })
            .collect()
    }
    let mut profile = compare_sides(repetitions(&s1.profiles, f1), repetitions(&s2.profiles, f2), opts);
    profile.ratios_refused = no_summary_ratio;
    profile.of_runs = true;
    Ok(TestOutcome::Compared {
        upout1: t1.repetitions[0].dir.join(crate::store::run::UPOUT_FILE),
        upout2: t2.repetitions[0].dir.join(crate::store::run::UPOUT_FILE),
        repetitions1: t1.repetitions.len(),
        repetitions2: t2.repetitions.len(),
        bench,
        profile: Box::new(profile),
        counters: test_counters(t1, t2, &mut notes),
        notes,
        unlike,
    })
}

/// The counters of a test in both runs; a note when only one run recorded them.
fn test_counters(t1: &StoredTest, t2: &StoredTest, notes: &mut Vec<String>) -> Vec<CounterRow> {
    fn counted(t: &StoredTest) -> Option<Vec<CountedRepetition<'_>>> {
        t.repetitions
            .iter()
            .map(|r| {
                Some(CountedRepetition {
                    counters: r.counters.as_ref()?,
                    operations: r.operations,
                })
            })
            .collect()
    }
    match (counted(t1), counted(t2)) {
        (Some(a), Some(b)) => compare_counters(&a, &b),
        (None, None) => Vec::new(),
        (a, _) => {
            let without = if a.is_none() { 1 } else { 2 };
            notes.push(format!(
                "run {without} recorded no counters for this test (written without them), so System Activity is left out"
            ));
            Vec::new()
        }
    }
}

/// Compares two stored runs (read whole by `crate::store::run::load_run`).
///
/// The runs' function lists move into the comparison, each freed once it is valued (two
/// runs of 10^5 functions hold 46 MiB of them): their profiles are left with none.
pub fn compare_runs(
    run1: &mut StoredRun,
    run2: &mut StoredRun,
    opts: &CompareOptions,
) -> Result<RunComparison, CompareError> {
    let mut warnings = Vec::new();
    for (k, r) in [(1, &*run1), (2, &*run2)] {
        if r.marker.status != Status::Completed {
            warnings.push(format!(
                "run {k} ({}) is marked '{}', not completed",
                r.dir.display(),
                r.marker.status.as_str()
            ));
        }
    }
    let system_differences = system_differences(&run1.system, &run2.system);
    for d in &system_differences {
        warnings.push(format!("the runs differ in {}: '{}' vs '{}'", d.key, d.run1, d.run2));
    }

    // Each run's tests by name, looked up once per test: a test list of 10^5 lines must
    // not be searched 10^5 times.
    let index = |r: &StoredRun| -> HashMap<String, usize> {
        r.tests.iter().enumerate().map(|(k, t)| (t.name.clone(), k)).collect()
    };
    let (index1, index2) = (index(run1), index(run2));
    let profiled = |r: &StoredRun, k: Option<usize>| k.is_some_and(|k| !r.tests[k].repetitions.is_empty());
    let mut names: Vec<String> = run1.tests.iter().map(|t| t.name.clone()).collect();
    names.extend(
        run2.tests
            .iter()
            .map(|t| t.name.clone())
            .filter(|n| !index1.contains_key(n)),
    );
    let mut tests = Vec::new();
    for name in names {
        let name = name.as_str();
        let (k1, k2) = (index1.get(name).copied(), index2.get(name).copied());
        let outcome = match (profiled(run1, k1), profiled(run2, k2)) {
            (true, true) => compare_test(
                &mut run1.tests[k1.expect("profiled")],
                &mut run2.tests[k2.expect("profiled")],
                opts,
            )?,
            (true, false) => TestOutcome::OnlyIn {
                run: 1,
                dir: run1.dir.join(name),
            },
            (false, true) => TestOutcome::OnlyIn {
                run: 2,
                dir: run2.dir.join(name),
            },
            (false, false) => continue,
        };
        // What makes a test's numbers incomparable goes to the top of the report.
        if let TestOutcome::Compared { profile, unlike, .. } = &outcome {
            warnings.extend(unlike.iter().map(|u| {
                format!(
                    "{name}: the runs differ in {}: '{}' vs '{}'; {}",
                    u.item, u.run1, u.run2, u.effect
                )
            }));
            warnings.extend(profile.warnings.iter().map(|w| format!("{name}: {w}")));
        }
        tests.push(TestComparison {
            name: name.to_string(),
            outcome,
        });
    }
    if !tests.iter().any(|t| matches!(t.outcome, TestOutcome::Compared { .. })) {
        let unfinished: Vec<String> = [(1, &*run1), (2, &*run2)]
            .into_iter()
            .filter_map(|(k, r)| unfinished_note(k, r))
            .collect();
        if !unfinished.is_empty() {
            return Err(CompareError::Unfinished(unfinished.join("; ")));
        }
        // The first names are enough to see that the lists differ.
        const SHOWN: usize = 20;
        let list = |r: &StoredRun| {
            let mut l = r
                .tests
                .iter()
                .take(SHOWN)
                .map(|t| t.name.as_str())
                .collect::<Vec<_>>()
                .join(" ");
            if r.tests.len() > SHOWN {
                l += &format!(" ... ({} tests)", r.tests.len());
            }
            l
        };
        return Err(CompareError::NoCommonTest {
            dir1: run1.dir.clone(),
            dir2: run2.dir.clone(),
            tests1: list(run1),
            tests2: list(run2),
        });
    }
    let mut r = RunComparison {
        dir1: run1.dir.clone(),
        dir2: run2.dir.clone(),
        warnings,
        system_differences,
        setting_differences: Vec::new(),
        tests,
        counter_family: 0,
    };
    r.adjust(opts);
    Ok(r)
}

/// Why run `k` has nothing to compare when it is not marked completed: who is still
/// writing it, or how it stopped.
fn unfinished_note(k: usize, r: &StoredRun) -> Option<String> {
    let m = &r.marker;
    let head = format!("run {k} ({}) is unfinished", r.dir.display());
    let tool = m.kind.as_str();
    match m.status {
        Status::Completed => None,
        Status::Running => Some(match &m.writer {
            Some(w) => format!(
                "{head}: {tool} (pid {}) is still writing it (it holds {}.lock); compare it once {tool} has ended",
                w.pid,
                r.dir.display()
            ),
            None => format!("{head}: it is marked running by a {tool} that recorded no pid"),
        }),
        Status::Interrupted => Some(format!(
            "{head}: {tool} was interrupted (a signal) before its tests had profiles"
        )),
        Status::Failed => Some(match &m.reason {
            Some(reason) => format!("{head}: {reason}"),
            None => format!("{head}: it is marked failed"),
        }),
    }
}

impl RunComparison {
    /// Each test's function rows; None for a test of one run only.
    pub fn function_rows(&self) -> impl Iterator<Item = Option<&[super::FunctionDelta]>> {
        self.tests.iter().map(|t| match &t.outcome {
            TestOutcome::Compared { profile, .. } => Some(&profile.rows[..]),
            TestOutcome::OnlyIn { .. } => None,
        })
    }

    /// A copy without the tests' function rows ([`ProfileComparison::without_rows`]).
    pub fn without_function_rows(&self) -> Self {
        let tests = self
            .tests
            .iter()
            .map(|t| TestComparison {
                name: t.name.clone(),
                outcome: match &t.outcome {
                    TestOutcome::OnlyIn { run, dir } => TestOutcome::OnlyIn {
                        run: *run,
                        dir: dir.clone(),
                    },
                    TestOutcome::Compared {
                        upout1,
                        upout2,
                        repetitions1,
                        repetitions2,
                        bench,
                        profile,
                        notes,
                        counters,
                        unlike,
                    } => TestOutcome::Compared {
                        upout1: upout1.clone(),
                        upout2: upout2.clone(),
                        repetitions1: *repetitions1,
                        repetitions2: *repetitions2,
                        bench: bench.clone(),
                        profile: Box::new(profile.without_rows()),
                        notes: notes.clone(),
                        counters: counters.clone(),
                        unlike: unlike.clone(),
                    },
                },
            })
            .collect();
        RunComparison {
            dir1: self.dir1.clone(),
            dir2: self.dir2.clone(),
            warnings: self.warnings.clone(),
            system_differences: self.system_differences.clone(),
            setting_differences: self.setting_differences.clone(),
            tests,
            counter_family: self.counter_family,
        }
    }

    /// The tests with notes of their own (a failed test, collector warnings, sides not
    /// run alike), with how many: what the System section must not leave unsaid.
    pub fn noted_tests(&self) -> Vec<(&str, usize)> {
        self.tests
            .iter()
            .filter_map(|t| match &t.outcome {
                TestOutcome::Compared {
                    notes, unlike, profile, ..
                } => {
                    let n = notes.len() + unlike.len() + profile.warnings.len();
                    (n > 0).then_some((t.name.as_str(), n))
                }
                TestOutcome::OnlyIn { .. } => None,
            })
            .collect()
    }

    /// Adjusts the p-values of every compared test together, as the report's families
    /// ([`adjust_report`]), and lists the function rows.
    pub(super) fn adjust(&mut self, opts: &CompareOptions) {
        let mut parts: Vec<(&mut [BenchRow], &mut ProfileComparison)> = self
            .tests
            .iter_mut()
            .filter_map(|t| match &mut t.outcome {
                TestOutcome::Compared { bench, profile, .. } => Some((&mut bench[..], &mut **profile)),
                TestOutcome::OnlyIn { .. } => None,
            })
            .collect();
        adjust_report(&mut parts, opts);
        self.adjust_counters(opts);
    }

    /// Adjusts every test's counters as one family ([`adjust_counters`]).
    fn adjust_counters(&mut self, opts: &CompareOptions) {
        let mut all: Vec<&mut Vec<CounterRow>> = self
            .tests
            .iter_mut()
            .filter_map(|t| match &mut t.outcome {
                TestOutcome::Compared { counters, .. } => Some(counters),
                TestOutcome::OnlyIn { .. } => None,
            })
            .collect();
        self.counter_family = adjust_counters(&mut all, opts.all_counters);
    }
}

#[cfg(test)]
mod tests {
    use super::{operation_of, split_wrappers, unlike_commands};

    fn split<'a>(c1: &'a str, c2: &'a str) -> [(String, String); 2] {
        let (a, b) = split_wrappers(c1, c2);
        [
            (a.wrapper.join(" "), a.benchmark.join(" ")),
            (b.wrapper.join(" "), b.benchmark.join(" ")),
        ]
    }

    // A wrapper is what comes before the benchmark common to both sides.
    #[test]
    fn wrappers_are_told_from_benchmarks() {
        let s = |w: &str, b: &str| (w.to_string(), b.to_string());
        assert_eq!(
            split("unixperf -getpid", "./seccomp-wrap /opt/bin/unixperf -getpid"),
            [s("", "unixperf -getpid"), s("./seccomp-wrap", "unixperf -getpid")]
        );
        assert_eq!(
            split("env A=1 unixperf -getpid", "taskset -c 1 unixperf -getpid -loop 5"),
            [
                s("env A=1", "unixperf -getpid"),
                s("taskset -c 1", "unixperf -getpid -loop 5")
            ]
        );
        assert_eq!(
            split("./bench -n 5", "numactl -N 0 ./bench -n 5"),
            [s("", "./bench -n 5"), s("numactl -N 0", "./bench -n 5")]
        );
        assert_eq!(
            split("chrt -f 1 ./bench 5", "nice ./bench 5"),
            [s("chrt -f 1", "./bench 5"), s("nice", "./bench 5")]
        );
        // A common tail that is an argument is no benchmark.
        assert_eq!(split("./a 5", "./b 5"), [s("", "./a 5"), s("", "./b 5")]);
        assert_eq!(
            split("hackbench 4", "hackbench 8"),
            [s("", "hackbench 4"), s("", "hackbench 8")]
        );
    }

    // A changed wrapper is compared, a changed benchmark refused unless declared the same.
    #[test]
    fn changed_benchmarks_are_refused_unless_declared_the_same() {
        let u = unlike_commands("unixperf -getpid", "env X=1 unixperf -getpid", None);
        assert_eq!(u.len(), 1);
        assert_eq!((u[0].item.as_str(), u[0].run1.as_str()), ("wrapper", "none"));
        assert!(!u[0].no_speed_ratio && !u[0].no_summary_ratio);
        let u = unlike_commands("unixperf -getpid -loop 5", "unixperf -getpid -loop 9", None);
        assert_eq!(u.len(), 1);
        assert!(u[0].no_speed_ratio && u[0].no_summary_ratio, "{u:?}");
        let u = unlike_commands(
            "unixperf -getpid -loop 5",
            "unixperf -getpid -loop 9",
            Some("--same-test"),
        );
        assert!(!u[0].no_speed_ratio && u[0].no_summary_ratio, "{u:?}");
        let u = unlike_commands("unixperf -getpid", "unixperf -getppid", Some("--same-test"));
        assert!(!u[0].no_speed_ratio && !u[0].no_summary_ratio, "{u:?}");
        assert!(unlike_commands("/a/unixperf -getpid", "/b/unixperf -getpid", None).is_empty());
    }

    // Only unixperf's -loop and -repeat values leave the operation the same.
    #[test]
    fn loop_counts_do_not_change_the_operation() {
        let op = operation_of("unixperf -forkwait -loop 5000 -repeat 2");
        assert_eq!(op, operation_of("unixperf  -forkwait -loop 2000 -repeat 3"));
        assert_eq!(op, ["unixperf", "-forkwait", "-loop", "-repeat"]);
        assert_ne!(op, operation_of("unixperf -forkexit -loop 5000 -repeat 2"));
        assert_ne!(
            operation_of("unixperf -hackbench -groups 4 -loop 10"),
            operation_of("unixperf -hackbench -groups 8 -loop 10")
        );
    }
}
