//! `prfcmp`: compare two profiles of any source (prfout, perf.data, perf script, folded).

use crate::compare::annotate::Annotation;
use crate::compare::{compare_profiles, CompareOptions, ProfileComparison};
use crate::import::{ImportError, ImportOptions, InputFormat};
use crate::model::{Profile, SampleFilter};
use std::path::{Path, PathBuf};

/// Why prfcmp stopped.
#[derive(Debug, thiserror::Error)]
pub enum PrfcmpError {
    /// An argument of the wrong kind (a whole run given for a profile), with what to do.
    #[error("{0}")]
    Arguments(String),
    /// A profile could not be read.
    #[error("reading profile {which}, {}", path.display())]
    Import {
        /// 1 or 2.
        which: u8,
        /// Its path.
        path: PathBuf,
        /// Why.
        source: ImportError,
    },
}

/// Two profiles and their comparison.
#[derive(Debug, Clone)]
pub struct Compared {
    /// The first profile.
    pub profile1: Profile,
    /// The second profile.
    pub profile2: Profile,
    /// Their comparison.
    pub comparison: ProfileComparison,
    /// The functions `--annotate` names, line by line.
    pub annotations: Vec<Annotation>,
}

/// Reads `path1` and `path2` (any supported format) and compares them.
pub fn prfcmp(
    path1: &Path,
    path2: &Path,
    import: &ImportOptions,
    opts: &CompareOptions,
) -> Result<Compared, PrfcmpError> {
    prfcmp_filtered(path1, path2, import, opts, &SampleFilter::default())
}

/// Whether `path` is read as a uprun profile.
fn is_prfout(path: &Path, import: &ImportOptions) -> bool {
    match import.format {
        Some(f) => f == InputFormat::Prfout,
        None => path != Path::new("-") && InputFormat::detect(path).is_ok_and(|f| f == InputFormat::Prfout),
    }
}

/// A uprun profile (a `prfout` or its test directory) rebuilt with only the samples
/// `filter` keeps.
fn filtered(path: &Path, old: &Profile, filter: &SampleFilter) -> Result<Profile, String> {
    let dir = if path.is_dir() {
        path
    } else {
        path.parent().unwrap_or(Path::new("."))
    };
    let run = super::run_of(dir)
        .ok_or_else(|| super::filter_error(path, "not a profile of a uprun run with its kallsyms.gz"))?;
    let symbols = super::run_symbols(run)?;
    super::filtered_profile(dir, old, &symbols, filter)
}

/// [`prfcmp`] counting only the samples `filter` keeps: each profile must be a uprun
/// profile, rebuilt from its raw samples.
pub fn prfcmp_filtered(
    path1: &Path,
    path2: &Path,
    import: &ImportOptions,
    opts: &CompareOptions,
    filter: &SampleFilter,
) -> Result<Compared, PrfcmpError> {
    super::inputs::check_prfcmp_profile(path1, path2).map_err(PrfcmpError::Arguments)?;
    super::inputs::check_prfcmp_profile(path2, path1).map_err(PrfcmpError::Arguments)?;
    let import = &import
        .clone()
        .with_filter(filter.clone())
        .with_annotate(opts.annotate.functions.clone());
    let (r1, r2) = {
        // The two recordings share the symbol tables of the files both map, until both
        // are read.
        let sharing = import.clone().sharing_symbols();
        let read = |which: u8, path: &Path| {
            crate::import::import(path, &sharing).map_err(|source| PrfcmpError::Import {
                which,
                path: path.to_path_buf(),
                source: super::unquoted_import(source, path),
            })
        };
        // The two imports are independent: each on its own core.
        std::thread::scope(|s| {
            let second = s.spawn(|| read(2, path2));
            (read(1, path1), second.join())
        })
    };
    let r1 = r1?;
    let r2 = r2.unwrap_or_else(|panic| std::panic::resume_unwind(panic))?;
    let (mut profile1, mut profile2) = (r1.profile, r2.profile);
    super::give_back_freed_memory();
    if !filter.is_empty() {
        // A recording was filtered while it was read; a uprun profile is rebuilt.
        for (path, p) in [(path1, &mut profile1), (path2, &mut profile2)] {
            if is_prfout(path, import) {
                *p = filtered(path, p, filter).map_err(PrfcmpError::Arguments)?;
            }
        }
        profile1.warnings.push(super::upcmp::filtered_note(filter));
    }
    let comparison = compare_profiles(&profile1, &profile2, opts);
    let annotations = super::annotate::annotate_recordings(
        (&r1.annotated, &profile1),
        (&r2.annotated, &profile2),
        [path1, path2],
        &opts.annotate,
    );
    Ok(Compared {
        profile1,
        profile2,
        comparison,
        annotations,
    })
}
