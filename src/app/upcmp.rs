//! `upcmp`: compare two runs (or two perf recordings), write `RESULTS_DIR`, and give the
//! report back for the terminal.

use super::annotate_runs::RunAnnotations;
use crate::compare::annotate::Annotation;
use crate::compare::imported::{self, compare_imported};
use crate::compare::runs::{compare_runs, CompareError, RunComparison};
use crate::compare::stacks::{compare_prepared, compare_run_stacks_with, PreparedStacks, RunStacks};
use crate::compare::CompareOptions;
use crate::import::{import, ImportError, ImportOptions, Imported};
use crate::model::{IdleSet, SampleFilter};
use crate::report::format::for_people;
use crate::report::html::{self, HtmlOptions};
use crate::report::{export, stackcmp, text};
use crate::store::outdir::{
    check_not_foreign, claim_dir, publish_dir_with, Moved, RunKind, COMMAND_ROOTS_FORMAT, RESULTS_MARKER,
};
use crate::store::run::{load_run, pool_runs, StoredRun};
use crate::store::StoreError;
use std::io::Write as _;
use std::path::{Path, PathBuf};

/// What upcmp compares.
#[derive(Debug, Clone)]
// One value per command: the size of the larger variant costs nothing.
#[allow(clippy::large_enum_variant)]
pub enum Inputs {
    /// Two uprun or upsrun output directories.
    Runs {
        /// The base.
        dir1: PathBuf,
        /// The change.
        dir2: PathBuf,
        /// More runs of the base (`--baseline`), pooled with `dir1` as repetitions.
        baselines: Vec<PathBuf>,
    },
    /// Two perf recordings (perf.data, perf script output or folded stacks).
    Recordings {
        /// The base.
        path1: PathBuf,
        /// The change.
        path2: PathBuf,
        /// How they are read (boxed: the options are most of the variant).
        import: Box<ImportOptions>,
    },
}

/// What upcmp does.
#[derive(Debug, Clone)]
pub struct UpcmpOptions {
    /// The two sides.
    pub inputs: Inputs,
    /// Where the results go.
    pub results_dir: PathBuf,
    /// How they are compared.
    pub compare: CompareOptions,
    /// Write RESULTS_DIR even when its parent directory may be written by every user and
    /// has no sticky bit.
    pub allow_shared_parent: bool,
    /// Move aside an existing RESULTS_DIR (or an older generation) owned by another user.
    pub allow_foreign_run: bool,
    /// Also write `results.html`, the comparison as one self-contained page.
    pub html: bool,
    /// Only the samples this keeps are counted (uprun runs: each profile is rebuilt from
    /// its raw samples).
    pub filter: SampleFilter,
    /// The functions annotated below the function table (`--annotate FUNC`,
    /// `--annotate-top N`, `--source-dir DIR`): uprun runs.
    pub annotate: super::annotate_runs::RunAnnotate,
}

/// Why upcmp stopped.
#[derive(Debug, thiserror::Error)]
pub enum UpcmpError {
    /// An argument of the wrong kind (a file given for a run, ...), with what to do.
    #[error("{0}")]
    Arguments(String),
    /// A recording could not be read.
    #[error("reading {}", path.display())]
    Import {
        /// The recording.
        path: PathBuf,
        /// Why.
        source: ImportError,
    },
    /// A run could not be read.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The comparison failed.
    #[error(transparent)]
    Compare(#[from] CompareError),
    /// A report could not be rendered.
    #[error("rendering the report: {0}")]
    Render(#[from] std::io::Error),
    /// The results directory could not be written.
    #[error("writing results to {}", path.display())]
    Publish {
        /// The results directory.
        path: PathBuf,
        /// Why.
        source: StoreError,
    },
}

/// What upcmp wrote, for the terminal.
#[derive(Debug, Clone)]
pub struct UpcmpOutput {
    /// The comparison.
    pub comparison: RunComparison,
    /// The text report, as written to `RESULTS_DIR/results`.
    pub report: Vec<u8>,
    /// The earlier results directories moved aside (none is ever deleted).
    pub moved: Vec<Moved>,
    /// Where the results are (RESULTS_DIR without trailing slashes).
    pub results_dir: PathBuf,
    /// The annotated functions (`--annotate`), each with its test's name.
    pub annotations: Vec<(String, crate::compare::annotate::Annotation)>,
}

fn import_one(path: &Path, opts: &ImportOptions) -> Result<Imported, UpcmpError> {
    import(path, opts).map_err(|source| UpcmpError::Import {
        path: path.to_path_buf(),
        source: super::unquoted_import(source, path),
    })
}

/// The stack comparison of two recordings and its files (flame graph, callers).
type RecordingStacks = (RunStacks, Vec<(String, Vec<u8>)>);

/// Two recordings compared: the runs' comparison, the stacks', the functions
/// `--annotate` names, line by line, and the page's other listed functions.
type ComparedRecordings = (RunComparison, Option<RecordingStacks>, Vec<Annotation>, Vec<Annotation>);

/// Compares two recordings; with call chains in both, the same stack comparison as two
/// upsrun runs get, and its files.
fn compare_recordings(
    path1: &Path,
    path2: &Path,
    import_opts: &ImportOptions,
    opts: &CompareOptions,
    listed: usize,
) -> Result<ComparedRecordings, UpcmpError> {
    // The two recordings share the symbol tables of the files both map, until both are
    // read. With `listed`, every function's sampled addresses are kept for the page.
    let import_opts = import_opts
        .clone()
        .with_stacks(true)
        .with_annotate(opts.annotate.functions.clone())
        .with_annotate_all(listed > 0)
        .sharing_symbols();
    // The two imports are independent: each on its own core, and each makes its side of
    // the stack comparison as soon as it is read, so the core of the shorter import
    // does that while the other import still runs: the recording read first builds its
    // call graph and begins the frame tree; the one read last leaves its call graph to
    // be built beside its half of the tree.
    let first_read = std::sync::atomic::AtomicBool::new(true);
    let read = |path: &Path, run: usize| -> Result<(Imported, Option<PreparedStacks>), UpcmpError> {
        let mut imported = import_one(path, &import_opts)?;
        // Every import's idle set is the default one; the first recording's is the
        // comparison's, as for the flat profile.
        let idle = opts
            .idle_override
            .clone()
            .unwrap_or_else(|| IdleSet::new(imported.profile.idle_set.clone()));
        let first = first_read.swap(false, std::sync::atomic::Ordering::Relaxed);
        let side = imported.stacks.take().map(|s| match first {
            true => PreparedStacks::new(vec![s], &idle)
                .with_clones(opts.keep_clones)
                .with_graphs_and_tree(run, [1, 1]),
            false => PreparedStacks::new(vec![s], &idle).with_clones(opts.keep_clones),
        });
        Ok((imported, side))
    };
    let (r1, r2) = std::thread::scope(|s| {
        let second = s.spawn(|| read(path2, 1));
        (read(path1, 0), second.join())
    });
    drop(import_opts);
    let (i1, side1) = r1?;
    let (i2, side2) = r2.unwrap_or_else(|panic| std::panic::resume_unwind(panic))?;
    debug_assert!(
        opts.idle_override.is_some() || side1.is_none() || i1.profile.idle_set == i2.profile.idle_set,
        "each side's idle stacks are left out by the first recording's idle set"
    );
    super::give_back_freed_memory();
    // The flat comparison and the stacks' are independent: side by side, the flame
    // graph drawn as soon as the stacks are compared.
    let one_sided = match (&side1, &side2) {
        (Some(_), None) => Some((1, 2)),
        (None, Some(_)) => Some((2, 1)),
        _ => None,
    };
    let (cmp, stacks) = rayon::join(
        || compare_imported(path1, &i1.profile, path2, &i2.profile, opts),
        || -> Result<_, UpcmpError> {
            let (Some(side1), Some(side2)) = (side1, side2) else {
                return Ok(None);
            };
            let stacks = RunStacks {
                dir1: path1.to_path_buf(),
                dir2: path2.to_path_buf(),
                tests: vec![compare_prepared(
                    &imported::test_name(&i1.profile, &i2.profile),
                    side1,
                    side2,
                )],
            };
            let files = stackcmp::files(&stacks)?;
            Ok(Some((stacks, files)))
        },
    );
    // The functions asked for, then the page's listed ones (those of largest |delta| not
    // asked for), annotated together; of the latter, those whose code was found are kept.
    let mut functions = opts.annotate.functions.clone();
    let asked = functions.len();
    if let Some(crate::compare::runs::TestOutcome::Compared { profile, .. }) = cmp.tests.first().map(|t| &t.outcome) {
        let listed =
            super::annotate_runs::top_functions(&profile.rows, listed, |f| !functions[..asked].iter().any(|a| a == f));
        functions.extend(listed);
    }
    let all = crate::compare::annotate::AnnotateOptions {
        functions,
        ..opts.annotate.clone()
    };
    let (one, two) = ((&i1.annotated[..], &i1.profile), (&i2.annotated[..], &i2.profile));
    let mut annotations = super::annotate::annotate_recordings(one, two, [path1, path2], &all);
    let mut listed = annotations.split_off(asked);
    listed.retain(|a| !a.lines.is_empty() || !a.instructions.is_empty());
    let mut cmp = cmp;
    if let Some((with, without)) = one_sided {
        cmp.warnings.push(format!(
            "only recording {with} has call stacks (recording {without} was made without perf record -g): no \
             differential flame graph and no caller/callee table; record both with -g to get them"
        ));
    }
    Ok((cmp, stacks?, annotations, listed))
}

/// What the reader must know of runs that did not complete: why a run failed, and which
/// tests have no profile (not run, or stopped before their profile was written), which
/// the comparison otherwise leaves out without a word.
fn incomplete_runs(runs: &[&StoredRun]) -> Vec<String> {
    let mut notes = Vec::new();
    for (k, r) in runs.iter().enumerate() {
        if let Some(reason) = &r.marker.reason {
            notes.push(format!("run {} ({}) failed: {reason}", k + 1, r.dir.display()));
        }
        let missing: Vec<&str> = r
            .tests
            .iter()
            .filter(|t| t.repetitions.is_empty())
            .map(|t| t.name.as_str())
            .collect();
        if !missing.is_empty() {
            // A list of 10^5 lines that never ran is named by its first tests.
            const NAMED: usize = 20;
            let more = match missing.len() {
                n if n > NAMED => format!(" and {} more", n - NAMED),
                _ => String::new(),
            };
            notes.push(format!(
                "run {} ({}) has no profile of {}{more}: not run, or stopped before its profile was written",
                k + 1,
                r.dir.display(),
                missing[..missing.len().min(NAMED)].join(", ")
            ));
        }
    }
    notes
}

/// Every profile of `run` rebuilt with only the samples `filter` keeps. The stacks are
/// left out: they are not filtered.
fn filter_run(run: &mut StoredRun, filter: &SampleFilter) -> Result<(), UpcmpError> {
    let symbols = super::run_symbols(&run.dir).map_err(UpcmpError::Arguments)?;
    for t in &mut run.tests {
        for r in &mut t.repetitions {
            if filter.only_test && crate::compare::owners::OwnerTime::of_test_dir(&r.dir)?.is_none() {
                return Err(UpcmpError::Arguments(format!(
                    "--only-test: the samples of {} do not say whose each is (recorded before uprun \
                     attributed samples to the test's processes): compare without --only-test",
                    r.dir.display()
                )));
            }
            r.profile = super::filtered_profile(&r.dir, &r.profile, &symbols, filter).map_err(UpcmpError::Arguments)?;
        }
        t.stacks = None;
    }
    Ok(())
}

/// The warning of a filtered comparison: what was counted, and what the idle time is.
pub(crate) fn filtered_note(filter: &SampleFilter) -> String {
    format!(
        "only the samples kept by {} are counted: CPU time is theirs, and Idle time is the rest of the \
         sampled CPUs' time",
        filter.describe()
    )
}

/// Upsrun runs written before format 3 have stacks without their command root: when such
/// runs meet newer ones, the newer ones' roots are stripped so that every stack does not
/// pass for changed, with a note naming the runs of each shape.
fn match_stack_roots(runs: &mut [&mut StoredRun]) -> Option<String> {
    let with_stacks = |r: &StoredRun| r.marker.kind == RunKind::Upsrun;
    let names = |rooted: bool, runs: &[&mut StoredRun]| {
        runs.iter()
            .filter(|r| with_stacks(r) && r.command_rooted() == rooted)
            .map(|r| r.dir.display().to_string())
            .collect::<Vec<_>>()
    };
    let (old, new) = (names(false, runs), names(true, runs));
    if old.is_empty() || new.is_empty() {
        return None;
    }
    for r in runs.iter_mut().filter(|r| r.command_rooted()) {
        r.strip_command_roots();
    }
    Some(format!(
        "the stacks of {} were written before upsrun rooted each stack at its command (format {}), those of {} \
         after: they are compared without the command roots",
        old.join(", "),
        COMMAND_ROOTS_FORMAT,
        new.join(", ")
    ))
}

/// Why two runs of which only one is an upsrun run get no stack comparison, which the
/// report would otherwise leave out without a word.
fn no_stacks_why(run1: &StoredRun, run2: &StoredRun) -> Option<String> {
    let by = |r: &StoredRun| {
        if r.marker.kind == RunKind::Upsrun {
            "upsrun"
        } else {
            "uprun"
        }
    };
    (run1.marker.kind != run2.marker.kind).then(|| {
        format!(
            "run 1 ({}) was written by {} and run 2 ({}) by {}: only upsrun records call stacks, so there is no \
             stack comparison (differential flame graphs); run both sides with upsrun to get one",
            run1.dir.display(),
            by(run1),
            run2.dir.display(),
            by(run2)
        )
    })
}

/// The differences of the two runs' kernel settings; a note when a run has none (written
/// before runs kept them), which the System section would otherwise not say.
fn compare_settings(cmp: &mut RunComparison, dir1: &Path, dir2: &Path) -> Result<(), UpcmpError> {
    use crate::store::settings;
    match (settings::read(dir1)?, settings::read(dir2)?) {
        (Some(s1), Some(s2)) => {
            cmp.setting_differences = crate::compare::settings::setting_differences(&s1, &s2);
        }
        (None, None) => {}
        (s1, _) => {
            let (k, dir) = if s1.is_none() { (1, dir1) } else { (2, dir2) };
            cmp.warnings.push(format!(
                "run {k} ({}) has no settings file (written before runs kept the kernel's configuration, \
                 mitigations and sysctls): they are not compared",
                dir.display()
            ));
        }
    }
    Ok(())
}

/// Compares, renders and publishes `RESULTS_DIR` whole: `results`, `results.csv`,
/// `results.json` (and `results.parquet` with the `parquet` feature), plus the stack
/// comparison's files when both sides have stacks.
pub fn upcmp(opts: &UpcmpOptions) -> Result<UpcmpOutput, UpcmpError> {
    super::inputs::check_results_dir(&opts.results_dir).map_err(UpcmpError::Arguments)?;
    match &opts.inputs {
        Inputs::Runs { dir1, dir2, baselines } => {
            super::inputs::check_upcmp_runs(dir1, dir2, &opts.results_dir).map_err(UpcmpError::Arguments)?;
            super::inputs::check_baselines(dir1, dir2, baselines).map_err(UpcmpError::Arguments)?
        }
        Inputs::Recordings { .. } => {}
    }
    // First, so that a second upcmp writing the same directory stops at once.
    let claim = claim_results(&opts.results_dir, opts.allow_shared_parent, opts.allow_foreign_run)?;
    let results_dir = claim.path.as_path();
    let (cmp, stacks, stack_files, annotations, test_share) = match &opts.inputs {
        Inputs::Recordings { path1, path2, import } => {
            let import = ImportOptions::clone(import).with_filter(opts.filter.clone());
            let listed = if opts.html { opts.annotate.listed } else { 0 };
            let (mut cmp, stacks, annotated, listed) =
                compare_recordings(path1, path2, &import, &opts.compare, listed)?;
            let test = cmp.tests.first().map(|t| t.name.clone()).unwrap_or_default();
            let of_test = |all: Vec<Annotation>| -> Vec<(String, Annotation)> {
                all.into_iter().map(|a| (test.clone(), a)).collect()
            };
            let (annotated, listed) = (of_test(annotated), of_test(listed));
            // The imported profiles and the stacks' working copies are gone.
            super::give_back_freed_memory();
            if !opts.filter.is_empty() {
                cmp.warnings.push(filtered_note(&opts.filter));
            }
            let (stacks, files) = stacks.unzip();
            let annotated = RunAnnotations {
                asked: annotated,
                listed,
            };
            (cmp, stacks, files.unwrap_or_default(), annotated, None)
        }
        Inputs::Runs { dir1, dir2, baselines } => {
            // Each run filtered with its own kernel symbols, before the baselines are
            // pooled into run 1.
            let load = |dir: &PathBuf| -> Result<StoredRun, UpcmpError> {
                let mut run = load_run(dir)?;
                if !opts.filter.is_empty() {
                    filter_run(&mut run, &opts.filter)?;
                }
                Ok(run)
            };
            // The runs are read side by side: they share nothing until compared.
            let (mut run1, mut run2, mut others) = std::thread::scope(|s| {
                let run2 = s.spawn(|| load(dir2));
                let rest = (|| {
                    let others = baselines.iter().map(load).collect::<Result<Vec<_>, _>>()?;
                    Ok::<_, UpcmpError>((load(dir1)?, others))
                })();
                let run2 = run2.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
                let (run1, others) = rest?;
                Ok::<_, UpcmpError>((run1, run2?, others))
            })?;
            let roots_note = {
                let mut runs: Vec<&mut StoredRun> = vec![&mut run1, &mut run2];
                runs.extend(others.iter_mut());
                match_stack_roots(&mut runs)
            };
            let mut run1 = pool_runs(run1, others)?;
            let attributions = crate::compare::owners::split_user_rows(&mut run1, &mut run2, &opts.filter)?;
            let mut cmp = compare_runs(&mut run1, &mut run2, &opts.compare)?;
            crate::compare::owners::attach(&mut cmp, &run1, &run2, &attributions, opts.filter.only_test);
            // The page's toggle: the test's processes alone, where every repetition's
            // samples say whose they are.
            let attributed = !attributions.is_empty() && attributions.values().all(Option::is_some);
            let test_share = match opts.html && opts.filter.is_empty() && attributed {
                true => Some(compare_test_share(dir1, dir2, baselines, &opts.compare)?),
                false => None,
            };
            cmp.warnings.extend(super::inputs::same_run(dir1, dir2));
            compare_settings(&mut cmp, dir1, dir2)?;
            cmp.warnings.extend(incomplete_runs(&[&run1, &run2]));
            cmp.warnings.extend(roots_note);
            if !opts.filter.is_empty() {
                cmp.warnings.push(filtered_note(&opts.filter));
            }
            let stacks = compare_run_stacks_with(
                &run1,
                &run2,
                opts.compare.idle_override.as_ref(),
                opts.compare.keep_clones,
            );
            if stacks.is_none() && opts.filter.is_empty() {
                cmp.warnings.extend(no_stacks_why(&run1, &run2));
            }
            let stack_files = stacks.as_ref().map(stackcmp::files).transpose()?.unwrap_or_default();
            // The page holds the listed functions' lines too, opened on demand.
            let mut what = opts.annotate.clone();
            if !opts.html {
                what.listed = 0;
            }
            let annotations = match super::annotate_runs::annotate_runs(&run1, &run2, &cmp, &what) {
                Ok(a) => a,
                Err(e) if !what.is_empty() => return Err(UpcmpError::Arguments(e)),
                // Nothing was asked for: the page goes without them.
                Err(_) => RunAnnotations::default(),
            };
            (cmp, stacks, stack_files, annotations, test_share)
        }
    };
    let asked = !opts.annotate.is_empty() || !annotations.asked.is_empty();
    let page = opts.html.then(|| {
        let mut page = HtmlOptions::new(opts.compare.hide_noise);
        page.test_share = test_share;
        page.listed_annotations = annotations.listed;
        page
    });
    let annotations = asked.then_some(annotations.asked);
    publish_results(results_dir, cmp, stacks, stack_files, annotations, page)
}

/// The runs compared on the samples of the test's processes alone, as `--only-test`
/// compares them: each run read again and filtered with its own symbols, then pooled.
fn compare_test_share(
    dir1: &PathBuf,
    dir2: &PathBuf,
    baselines: &[PathBuf],
    opts: &CompareOptions,
) -> Result<RunComparison, UpcmpError> {
    let only = SampleFilter {
        only_test: true,
        ..SampleFilter::default()
    };
    let load = |dir: &PathBuf| -> Result<StoredRun, UpcmpError> {
        let mut run = load_run(dir)?;
        filter_run(&mut run, &only)?;
        Ok(run)
    };
    let others = baselines.iter().map(load).collect::<Result<Vec<_>, _>>()?;
    let mut run1 = pool_runs(load(dir1)?, others)?;
    let mut run2 = load(dir2)?;
    let attributions = crate::compare::owners::split_user_rows(&mut run1, &mut run2, &only)?;
    let mut cmp = compare_runs(&mut run1, &mut run2, opts)?;
    crate::compare::owners::attach(&mut cmp, &run1, &run2, &attributions, true);
    Ok(cmp)
}

/// Claims `results_dir` for upcmp (its lock, held until dropped), refusing one owned by
/// another user unless `allow_foreign`.
pub(crate) fn claim_results(
    results_dir: &Path,
    allow_shared_parent: bool,
    allow_foreign: bool,
) -> Result<crate::store::outdir::Claim, UpcmpError> {
    let claim = claim_dir(results_dir, "upcmp", allow_shared_parent).map_err(|source| UpcmpError::Publish {
        path: results_dir.to_path_buf(),
        source,
    })?;
    check_not_foreign(&claim.path, allow_foreign).map_err(|source| UpcmpError::Publish {
        path: results_dir.to_path_buf(),
        source,
    })?;
    Ok(claim)
}

/// Renders the comparison and publishes the claimed `results_dir` whole.
pub(crate) fn publish_results(
    results_dir: &Path,
    cmp: RunComparison,
    stacks: Option<RunStacks>,
    stack_files: Vec<(String, Vec<u8>)>,
    annotations: Option<Vec<(String, crate::compare::annotate::Annotation)>>,
    page: Option<HtmlOptions>,
) -> Result<UpcmpOutput, UpcmpError> {
    let asked = annotations.is_some();
    let annotations = annotations.unwrap_or_default();
    let page = page.map(|mut page| {
        page.annotations = annotations.clone();
        page
    });
    let mut report = Vec::new();
    for_people(&mut report, |w| {
        text::render_runs(&cmp, w)?;
        if let Some(s) = &stacks {
            stackcmp::render_index(s, &stack_files, &results_dir.display().to_string(), w)?;
        }
        Ok(())
    })?;
    // Each file goes to disk as it is rendered (results.json is 0.9 kB per function
    // row), and the two largest are rendered beside the rest; the function rows of all
    // three are made in blocks on whichever core is free (report::write_blocks).
    let moved = publish_dir_with(results_dir, RESULTS_MARKER, |dir| {
        let dir = &*dir;
        std::thread::scope(|s| {
            let json = s.spawn(|| dir.write("results.json", |w| export::write_json(&cmp, w)));
            let page = page.as_ref().map(|html_opts| {
                s.spawn(|| {
                    dir.write("results.html", |w| {
                        html::render(&cmp, stacks.as_ref(), &stack_files, html_opts, w)
                    })
                })
            });
            let rest = (|| {
                dir.write("results", |w| w.write_all(&report))?;
                dir.write("results.csv", |w| export::write_csv(&cmp, w))?;
                #[cfg(feature = "parquet")]
                dir.write("results.parquet", |w| {
                    crate::report::parquet::write(&export::rows(&cmp), w).map_err(std::io::Error::other)
                })?;
                for (name, bytes) in &stack_files {
                    dir.write(name, |w| w.write_all(bytes))?;
                }
                if asked {
                    write_annotations(dir, &annotations)?;
                }
                Ok(())
            })();
            let joined = |h: std::thread::ScopedJoinHandle<'_, Result<(), StoreError>>| {
                h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))
            };
            let json = joined(json);
            let page = page.map(joined).unwrap_or(Ok(()));
            rest.and(json).and(page)
        })
    })
    .map_err(|source| UpcmpError::Publish {
        path: results_dir.to_path_buf(),
        source,
    })?;
    Ok(UpcmpOutput {
        comparison: cmp,
        report,
        moved,
        results_dir: results_dir.to_path_buf(),
        annotations,
    })
}

/// Writes `results.annotate` (text), `results.annotate.csv` and
/// `results.annotate.json`: each annotated function of each test, the test named (a
/// `Test NAME` line before its functions; a first CSV column `test`; a `test` field).
fn write_annotations(
    dir: &crate::store::outdir::NewFiles,
    annotations: &[(String, crate::compare::annotate::Annotation)],
) -> Result<(), StoreError> {
    use crate::report::annotate as render;
    // The tests in order, each with its functions.
    let mut tests: Vec<(&str, Vec<crate::compare::annotate::Annotation>)> = Vec::new();
    for (t, a) in annotations {
        match tests.last_mut() {
            Some((last, v)) if last == t => v.push(a.clone()),
            _ => tests.push((t, vec![a.clone()])),
        }
    }
    dir.write("results.annotate", |w| {
        for (t, a) in &tests {
            writeln!(w, "Test {}", crate::model::escaped(t))?;
            render::write_text(a, w)?;
            writeln!(w)?;
        }
        Ok(())
    })?;
    dir.write("results.annotate.csv", |w| {
        writeln!(w, "test,{}", render::CSV_HEADER)?;
        for (t, a) in &tests {
            let mut rows = Vec::new();
            render::write_csv(a, &mut rows)?;
            let rows = String::from_utf8_lossy(&rows);
            let test = csv_field(t);
            // Each record after the header, with the test first (a quoted field may
            // hold a line break: records end at line breaks outside quotes).
            let mut quoted = false;
            let mut start = true;
            for c in rows.split_once('\n').map_or("", |(_, r)| r).chars() {
                if start {
                    write!(w, "{test},")?;
                }
                if c == '"' {
                    quoted = !quoted;
                }
                write!(w, "{c}")?;
                start = c == '\n' && !quoted;
            }
        }
        Ok(())
    })?;
    dir.write("results.annotate.json", |w| {
        let rows: Vec<serde_json::Value> = annotations
            .iter()
            .map(|(t, a)| {
                let mut v = serde_json::to_value(a).unwrap_or_default();
                if let Some(o) = v.as_object_mut() {
                    o.insert("test".into(), serde_json::Value::String(t.clone()));
                }
                v
            })
            .collect();
        serde_json::to_writer_pretty(&mut *w, &serde_json::json!({ "annotate": rows }))
            .map_err(std::io::Error::other)?;
        writeln!(w)
    })
}

/// A CSV field, quoted when it must be.
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// What upcmp does after writing RESULTS_DIR.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct AfterOptions {
    /// `results.html` was written (it is named among the files).
    pub html: bool,
    /// Open `results.html` in the desktop's browser.
    pub open: bool,
    /// `--fail-if-worse PCT`: the verdict for scripts.
    pub fail_if_worse: Option<f64>,
}

impl AfterOptions {
    /// What to say and do after writing.
    pub fn new(html: bool, open: bool, fail_if_worse: Option<f64>) -> Self {
        AfterOptions {
            html,
            open,
            fail_if_worse,
        }
    }
}

/// Says on standard error what was moved aside and where the results are, opens the page
/// when asked, and gives the verdict of `--fail-if-worse` last (the line a script's log
/// ends with). Returns the exit status.
pub fn after_writing(out: &UpcmpOutput, opts: &AfterOptions) -> u8 {
    for m in &out.moved {
        eprintln!(
            "upcmp: kept the earlier results: moved {} to {}",
            m.from.display(),
            m.to.display()
        );
    }
    let d = out.results_dir.display();
    let parquet = if cfg!(feature = "parquet") {
        ", results.parquet"
    } else {
        ""
    };
    let page = if opts.html {
        format!(", {d}/results.html")
    } else {
        String::new()
    };
    eprintln!("upcmp: results written to {d}/results{page}, {d}/results.csv{parquet} and {d}/results.json");
    if opts.open {
        open_page(&out.results_dir.join("results.html"));
    }
    match opts.fail_if_worse {
        Some(limit) => {
            let v = crate::compare::verdict::fail_if_worse(&out.comparison, limit);
            eprintln!("upcmp: {}", crate::model::Shown(&v.reason()));
            super::verdict_status(&v)
        }
        None => 0,
    }
}

/// Opens `page` in the desktop's browser when there is a display; otherwise says where
/// it is. The results are written either way, so this never fails the command.
fn open_page(page: &Path) {
    let display = ["DISPLAY", "WAYLAND_DISPLAY"]
        .iter()
        .any(|v| std::env::var_os(v).is_some_and(|x| !x.is_empty()));
    if !display {
        eprintln!(
            "upcmp: no display (DISPLAY and WAYLAND_DISPLAY unset): open {} in a browser",
            page.display()
        );
        return;
    }
    let null = std::process::Stdio::null;
    match std::process::Command::new("xdg-open")
        .arg(page)
        .stdin(null())
        .stdout(null())
        .stderr(null())
        .spawn()
    {
        Ok(_) => eprintln!("upcmp: opening {} with xdg-open", page.display()),
        Err(e) => eprintln!("upcmp: cannot run xdg-open ({e}): open {} in a browser", page.display()),
    }
}
