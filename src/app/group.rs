//! `upcmp DATASET --side K=V --side K=V RESULTS_DIR`: two groups of a dataset's runs,
//! compared as two runs (every run of a side a repetition, hosts as blocks), with the
//! ordinary report.

use super::upcmp::{claim_results, publish_results, UpcmpError, UpcmpOutput};
use crate::compare::runs::compare_runs;
use crate::compare::CompareOptions;
use crate::dataset::group::{load_groups, Selectors};
use crate::dataset::DatasetError;
use std::path::PathBuf;

/// What a group comparison does.
#[derive(Debug, Clone)]
pub struct GroupOptions {
    /// The dataset.
    pub dataset: PathBuf,
    /// The selectors of side 1 (the base) and side 2 (the change).
    pub sides: [Selectors; 2],
    /// Where the results go.
    pub results_dir: PathBuf,
    /// How the sides are compared.
    pub compare: CompareOptions,
    /// Write RESULTS_DIR even when its parent may be written by every user.
    pub allow_shared_parent: bool,
    /// Move aside a RESULTS_DIR owned by another user.
    pub allow_foreign_run: bool,
    /// Also write `results.html`.
    pub html: bool,
}

/// Why a group comparison stopped.
#[derive(Debug, thiserror::Error)]
pub enum GroupError {
    /// The dataset could not be read, or a side selects nothing.
    #[error(transparent)]
    Dataset(#[from] DatasetError),
    /// The comparison or its results.
    #[error(transparent)]
    Upcmp(#[from] UpcmpError),
}

/// Compares the two sides and publishes `RESULTS_DIR` as upcmp does for two runs.
pub fn group_compare(opts: &GroupOptions) -> Result<UpcmpOutput, GroupError> {
    super::inputs::check_results_dir(&opts.results_dir).map_err(UpcmpError::Arguments)?;
    let claim = claim_results(&opts.results_dir, opts.allow_shared_parent, opts.allow_foreign_run)?;
    let mut g = load_groups(&opts.dataset, [&opts.sides[0], &opts.sides[1]])?;
    let mut cmp = compare_runs(&mut g.run1, &mut g.run2, &opts.compare).map_err(UpcmpError::from)?;
    cmp.warnings.extend(g.notes);
    Ok(publish_results(
        &claim.path,
        cmp,
        None,
        Vec::new(),
        None,
        opts.html
            .then(|| crate::report::html::HtmlOptions::new(opts.compare.hide_noise)),
    )?)
}
