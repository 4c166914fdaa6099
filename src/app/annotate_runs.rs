//! `upcmp OUTDIR1 OUTDIR2 R --annotate FUNC`: the kernel functions asked for (and the
//! top N of each test's table, `--annotate-top N`) annotated per test from the two
//! runs' raw samples and the code their symbols came from (`docs/annotate.md`).

use crate::compare::annotate::{annotate, AnnotateOptions, Annotation};
use crate::compare::annotate_runs::{run_side_samples, KernelCode, Repetition};
use crate::compare::runs::{RunComparison, TestOutcome};
use crate::store::run::StoredRun;
use crate::store::StoreError;
use crate::symbols::KernelSymbols;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// What to annotate in two runs.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct RunAnnotate {
    /// Also the N listed kernel functions of largest |delta| of each test
    /// (`--annotate-top N`).
    pub top: usize,
    /// The functions named (`--annotate FUNC`, repeatable) and how lines are annotated
    /// (`--source-dir`).
    pub options: AnnotateOptions,
    /// For the page, also every other listed kernel function of each test, up to this
    /// many of largest |delta| (0: none), when the runs name a kernel image that is there.
    pub listed: usize,
}

/// How many listed functions of a test the page holds annotations of, at most.
pub const PAGE_LISTED: usize = 100;

/// The annotations of two runs: the functions asked for (every output shows them) and
/// the page's other listed functions (opened there on demand).
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct RunAnnotations {
    /// The asked-for functions, each with its test's name, in test order.
    pub asked: Vec<(String, Annotation)>,
    /// The other listed functions whose code was found, each with its test's name.
    pub listed: Vec<(String, Annotation)>,
}

impl RunAnnotate {
    /// The functions `options` names and the top N of each test.
    pub fn new(options: AnnotateOptions, top: usize) -> Self {
        RunAnnotate {
            top,
            options,
            listed: 0,
        }
    }

    /// The page also holds up to `listed` other listed functions of each test.
    pub fn with_page(mut self, listed: usize) -> Self {
        self.listed = listed;
        self
    }

    /// Whether any function is asked for (the page's listed ones aside).
    pub fn is_empty(&self) -> bool {
        self.options.functions.is_empty() && self.top == 0
    }
}

/// The kernel symbols and code of each run a side's repetitions come from (run 1 and
/// its `--baseline` runs may be different boots).
struct Runs {
    symbols: HashMap<PathBuf, KernelSymbols>,
    code: HashMap<PathBuf, KernelCode>,
}

impl Runs {
    fn new() -> Self {
        Runs {
            symbols: HashMap::new(),
            code: HashMap::new(),
        }
    }

    /// Loads the symbols and code places of the run holding `rep_dir`.
    fn load(&mut self, rep_dir: &Path) -> Result<PathBuf, String> {
        let run = super::run_of(rep_dir)
            .ok_or_else(|| {
                format!(
                    "{}: no kallsyms.gz in its run: --annotate places a run's samples with the kernel symbols it kept",
                    rep_dir.display()
                )
            })?
            .to_path_buf();
        if !self.symbols.contains_key(&run) {
            let symbols = super::run_symbols(&run)?;
            let system = crate::store::system::read(&run).map_err(|e| e.to_string())?;
            let marker = crate::store::outdir::RunMarker::read(&run).map_err(|e| e.to_string())?;
            let mut code = KernelCode::of_run(&system, &marker.command);
            // A run someone else wrote: only what they could read is read for it.
            code.owner = crate::fsio::foreign_owner(&run.join("system"));
            self.code.insert(run.clone(), code);
            self.symbols.insert(run.clone(), symbols);
        }
        Ok(run)
    }
}

/// The function names of the `top` listed rows of largest |delta| that `keep` keeps,
/// each once (a row names its function `name [module]`).
pub(crate) fn top_functions(
    rows: &[crate::compare::FunctionDelta],
    top: usize,
    keep: impl Fn(&str) -> bool,
) -> Vec<String> {
    let mut listed: Vec<&crate::compare::FunctionDelta> = rows.iter().filter(|r| r.listed).collect();
    listed.sort_by(|a, b| b.delta.abs().total_cmp(&a.delta.abs()));
    let mut out: Vec<String> = Vec::new();
    for r in listed {
        if out.len() == top {
            break;
        }
        let name = r.function.split(" [").next().unwrap_or(&r.function);
        if keep(name) && !out.iter().any(|o| o == name) {
            out.push(name.to_string());
        }
    }
    out
}

/// Whether the first repetition's run names a kernel image that is there (the page's
/// listed functions are annotated only then: without code a run's samples give no lines).
fn has_kernel_code(run1: &StoredRun) -> bool {
    let kept_symbols = run1
        .tests
        .iter()
        .flat_map(|t| &t.repetitions)
        .all(|r| super::run_of(&r.dir).is_some());
    kept_symbols
        && KernelCode::of_run(&run1.system, &run1.marker.command)
            .vmlinux
            .is_some_and(|v| v.is_file())
}

/// Annotates the functions `what` asks for in each test compared in `cmp`, from the
/// repetitions of `run1` (with its baselines pooled) and `run2`; and, for the page,
/// the other listed functions whose code is found.
pub fn annotate_runs(
    run1: &StoredRun,
    run2: &StoredRun,
    cmp: &RunComparison,
    what: &RunAnnotate,
) -> Result<RunAnnotations, String> {
    let listed = if what.listed > 0 && has_kernel_code(run1) {
        what.listed
    } else {
        0
    };
    if what.is_empty() && listed == 0 {
        return Ok(RunAnnotations::default());
    }
    let mut runs = Runs::new();
    let mut out = RunAnnotations::default();
    for t in &cmp.tests {
        let TestOutcome::Compared { profile, .. } = &t.outcome else {
            continue;
        };
        let (Some(t1), Some(t2)) = (run1.test(&t.name), run2.test(&t.name)) else {
            continue;
        };
        let mut sides = Vec::new();
        for st in [t1, t2] {
            let mut reps = Vec::new();
            for r in &st.repetitions {
                reps.push((r.dir.clone(), runs.load(&r.dir)?));
            }
            sides.push(reps);
        }
        let Some(first_run) = sides[0].first().map(|r| r.1.clone()) else {
            continue;
        };
        let mut functions = what.options.functions.clone();
        let symbols = &runs.symbols[&first_run];
        let kernel_function = |f: &str| symbols.range_of(f).is_some();
        for f in top_functions(&profile.rows, what.top, kernel_function) {
            if !functions.contains(&f) {
                functions.push(f);
            }
        }
        let asked = functions.len();
        for f in top_functions(&profile.rows, listed, kernel_function) {
            if !functions.contains(&f) {
                functions.push(f);
            }
        }
        if functions.is_empty() {
            continue;
        }
        let names: Vec<&str> = functions.iter().map(String::as_str).collect();
        // The two sides' samples are read side by side, each on its own core.
        let side = |reps: &Vec<(PathBuf, PathBuf)>| {
            let with: Vec<Repetition<'_>> = reps.iter().map(|(d, run)| (d.as_path(), &runs.symbols[run])).collect();
            run_side_samples(&with, &names, &runs.code[&reps[0].1]).map_err(|e: StoreError| e.to_string())
        };
        let (one, two) = std::thread::scope(|s| {
            let two = s.spawn(|| side(&sides[1]));
            (
                side(&sides[0]),
                two.join().unwrap_or_else(|p| std::panic::resume_unwind(p)),
            )
        });
        let samples = [one?, two?];
        let owners = sides.iter().flatten().filter_map(|(_, run)| runs.code[run].owner);
        let options = super::annotate::with_readers(&what.options, owners);
        for (k, f) in functions.iter().enumerate() {
            let a = annotate(f, &samples[0][k], &samples[1][k], &options);
            if k < asked {
                out.asked.push((t.name.clone(), a));
            } else if !a.lines.is_empty() || !a.instructions.is_empty() {
                out.listed.push((t.name.clone(), a));
            }
        }
    }
    Ok(out)
}
