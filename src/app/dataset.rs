//! `upcmp export RUN... --to DATASET`: reads each run whole, as the comparison does, and
//! adds it to the dataset (docs/dataset.md).

use crate::dataset::{export_run, DatasetError, ExportOptions, ExportSummary};
use crate::store::run::load_run;
use std::path::{Path, PathBuf};

/// Exports each run in `runs` into `dataset`, in order; the first that cannot be read
/// stops the export (the runs before it are in the dataset whole).
pub fn export_runs(runs: &[PathBuf], dataset: &Path, opts: &ExportOptions) -> Result<Vec<ExportSummary>, DatasetError> {
    runs.iter().map(|r| export_run(&load_run(r)?, dataset, opts)).collect()
}
