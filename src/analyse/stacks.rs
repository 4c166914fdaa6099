//! upsrun's analysis of one test: from `samples.gz` to `stacks.folded`, `prof.out` and
//! `flame.svg` (`docs/upsrun.md`). uprun calls it after each test of an upsrun run;
//! `upsrun --analyse` calls it on a test directory written earlier.

use crate::fsio;
use crate::host::kernel_max_stack;
use crate::model::stacks::{StackBuilder, StackOptions};
use crate::model::{CallGraph, Profile, StackProfile, UserBy};
use crate::report::format::for_people;
use crate::report::{flame, gprof};
use crate::store::outdir::{check_links, check_not_foreign};
use crate::store::outdir::{RunMarker, COMMAND_ROOTS_FORMAT, FORMAT_VERSION};
use crate::store::samples::for_each_record;
use crate::store::stacks::{FLAME_SVG, PROF_OUT, STACKS_FOLDED};
use crate::store::{io_err, prfout, write_atomic, StoreError};
use crate::symbols::{KernelSymbols, SymbolError};
use std::io::Write;
use std::path::Path;

/// Why a test's stacks could not be analysed.
#[derive(Debug, thiserror::Error)]
pub enum AnalyseError {
    /// Reading the samples or writing the analysis.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The run's kernel symbols could not be loaded.
    #[error(transparent)]
    Symbols(#[from] SymbolError),
}

/// What the analysis needs besides the samples.
#[derive(Debug, Clone)]
pub struct AnalyseOptions {
    /// The test's name.
    pub test: String,
    /// The run, as the flame graph's title names it.
    pub run: String,
    /// The sampled event.
    pub event: String,
    /// Seconds one sample stands for (see [`seconds_per_sample`]).
    pub period_sec: f64,
    /// How stacks are built.
    pub stacks: StackOptions,
}

/// What one sample (of the mean period) stands for in seconds: the period of a time
/// event; for another event, /proc/stat's busy time over the test divided among its
/// non-idle samples, as the flat profile values it (docs/formulas.md).
pub fn seconds_per_sample(p: &Profile) -> f64 {
    if let Some(s) = p.period_sec() {
        return s;
    }
    let idle = crate::model::IdleSet::new(p.idle_set.clone());
    let busy_samples: u64 = p
        .functions
        .iter()
        .filter(|f| !idle.contains(&f.name))
        .map(|f| f.total())
        .sum();
    let busy_sec: f64 = p.cpus.iter().filter_map(|c| c.procstat_busy_sec).sum();
    if busy_samples == 0 {
        0.0
    } else {
        busy_sec / busy_samples as f64
    }
}

/// Reads `dir/samples.gz` into a stack profile (memory: distinct stacks, not samples).
/// The stream starts with the names of the threads that ran before sampling started.
pub fn read_stacks(dir: &Path, symbols: &KernelSymbols, opts: StackOptions) -> Result<StackProfile, StoreError> {
    let mut b = StackBuilder::new(symbols, opts);
    for_each_record(&dir.join("samples.gz"), |r| b.add(&r))?;
    Ok(b.finish())
}

/// Writes `stacks.folded`, `prof.out` and `flame.svg` of `p` into `dir`; returns the
/// warnings (truncated stacks).
pub fn write_analysis(dir: &Path, p: &StackProfile, o: &AnalyseOptions) -> Result<Vec<String>, StoreError> {
    let mut warnings = Vec::new();
    if p.truncated > 0 {
        warnings.push(format!(
            "{} of {} stacks reached the depth limit of {} frames and are shown under [truncated] \
             (raise it with: sysctl kernel.perf_event_max_stack=N)",
            p.truncated, p.samples, o.stacks.max_stack
        ));
    }
    // Each file replaces the old one by a rename: a reader sees the old file or the new
    // one whole, and a link placed where it goes is replaced, never followed.
    let write_file = |name: &str, f: &dyn Fn(&mut dyn Write) -> std::io::Result<()>| -> Result<(), StoreError> {
        let path = dir.join(name);
        let mut w = fsio::Replacement::create(&path, 0o666).map_err(io_err(&path))?;
        f(&mut w).map_err(io_err(&path))?;
        w.commit().map_err(io_err(&path))
    };
    write_file(STACKS_FOLDED, &|w| p.write_folded(w))?;
    let header = gprof::GprofHeader {
        test: &o.test,
        event: &o.event,
        period_sec: o.period_sec,
        truncated: p.truncated,
        max_stack: o.stacks.max_stack,
        lost: p.lost,
    };
    let graph = if o.stacks.command_roots {
        CallGraph::of_command_rooted(p)
    } else {
        CallGraph::of(p)
    };
    write_file(PROF_OUT, &|w| for_people(w, |w| gprof::render(&graph, &header, w)))?;
    let path = dir.join(FLAME_SVG);
    if p.samples == 0 {
        // inferno refuses an empty graph; say so in the file instead.
        return write_atomic(
            &path,
            b"<svg xmlns=\"http://www.w3.org/2000/svg\"><text y=\"20\">no samples</text></svg>\n",
        )
        .map(|_| warnings);
    }
    let title = format!("{}: test {}", o.run, o.test);
    let subtitle =
        (p.truncated > 0).then(|| format!("{} stacks truncated at {} frames", p.truncated, o.stacks.max_stack));
    write_file(FLAME_SVG, &|w| {
        for_people(w, |w| {
            flame::render(p, &title, subtitle.clone(), o.stacks.command_roots, w)
        })
    })?;
    Ok(warnings)
}

/// The analysis of a test that just ran in the run `run` (its name in the graph's title).
pub fn analyse_test(
    dir: &Path,
    symbols: &KernelSymbols,
    profile: &Profile,
    run: &str,
    user_by: UserBy,
) -> Result<Vec<String>, AnalyseError> {
    let stacks = StackOptions {
        max_stack: kernel_max_stack(),
        user_by,
        default_period: profile.period.round() as u64,
        command_roots: true,
    };
    let p = read_stacks(dir, symbols, stacks)?;
    let o = AnalyseOptions {
        test: profile.test.clone(),
        run: run.to_string(),
        event: profile.event.clone(),
        period_sec: seconds_per_sample(profile),
        stacks,
    };
    Ok(write_analysis(dir, &p, &o)?)
}

/// Analyses a test directory written earlier (`RUN/TEST`), with the kernel symbols the
/// run kept (`RUN/kallsyms.gz`) and its `prfout`'s event and period. The run's lock is
/// held while its files are replaced; a run owned by another user is refused unless
/// `allow_foreign_run` (docs/security.md).
pub fn analyse_dir(
    test_dir: &Path,
    user_by: UserBy,
    max_stack: usize,
    allow_foreign_run: bool,
) -> Result<Vec<String>, AnalyseError> {
    let test_dir = &fsio::clean(test_dir);
    // RUN/TEST, or RUN/TEST/rK for a repetition.
    let run = test_dir
        .ancestors()
        .skip(1)
        .find(|d| d.join("kallsyms.gz").is_file())
        .unwrap_or(Path::new("."));
    check_links(test_dir)?;
    // The run's own directories below RUN are real ones, never links its owner placed.
    let below_run: Vec<&Path> = if run == Path::new(".") {
        vec![test_dir]
    } else {
        test_dir.ancestors().take_while(|d| *d != run).collect()
    };
    for d in below_run {
        if !fsio::is_real_dir(d) {
            return Err(StoreError::LinkInRun { path: d.to_path_buf() }.into());
        }
    }
    for d in [run, test_dir.as_path()] {
        check_not_foreign(d, allow_foreign_run)?;
    }
    let lock_of = if run == Path::new(".") { test_dir.as_path() } else { run };
    let _lock = match fsio::DirLock::try_lock(lock_of) {
        Ok(Some(lock)) => lock,
        Ok(None) => {
            return Err(StoreError::Locked {
                path: lock_of.to_path_buf(),
                tool: "uprun or upsrun",
            }
            .into())
        }
        Err(e) => return Err(io_err(lock_of)(e).into()),
    };
    let symbols = KernelSymbols::from_kallsyms_file(&run.join("kallsyms.gz"))?;
    let profile = prfout::read(&test_dir.join(prfout::PRFOUT_FILE))?;
    // A run written before format 3 keeps its stacks' shape: no command roots.
    let format = RunMarker::read(run).map_or(FORMAT_VERSION, |m| m.format);
    let stacks = StackOptions {
        max_stack,
        user_by,
        default_period: profile.period.round() as u64,
        command_roots: format >= COMMAND_ROOTS_FORMAT,
    };
    let p = read_stacks(test_dir, &symbols, stacks)?;
    let o = AnalyseOptions {
        test: profile.test.clone(),
        run: run.display().to_string(),
        event: profile.event.clone(),
        period_sec: seconds_per_sample(&profile),
        stacks,
    };
    Ok(write_analysis(test_dir, &p, &o)?)
}
