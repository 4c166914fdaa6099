//! The dataset of many runs: plain Parquet files, hive-partitioned by test, kernel and host
//! (docs/dataset.md), that upcmp writes one run at a time and any engine (polars, DuckDB,
//! Spark) reads unchanged. Built only with the `parquet` cargo feature.

mod check;
pub mod export;
pub mod fuzz;
pub mod group;
pub mod layout;
pub mod scan;
pub mod thrift;

pub use export::{export_run, ExportOptions, ExportSummary};

/// The dataset's schema version, a column of every table: a reader refuses a newer one.
pub const SCHEMA_VERSION: i64 = 1;

/// The tables of a dataset, one directory each.
pub const TABLES: &[&str] = &["runs", "labels", "system", "benchmarks", "functions", "counters"];

/// What went wrong exporting or reading a dataset.
#[derive(Debug, thiserror::Error)]
pub enum DatasetError {
    /// The run could not be read.
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
    /// A file or directory of the dataset.
    #[error("{path}: {source}")]
    Io {
        /// The path.
        path: std::path::PathBuf,
        /// What went wrong.
        source: std::io::Error,
    },
    /// polars could not build or read a table.
    #[error("{0}")]
    Polars(#[from] polars::prelude::PolarsError),
    /// A file of the dataset that is not one `upcmp export` writes: its layout (checked
    /// before polars reads it, check.rs), a value in it (a NaN, a negative count, a name
    /// longer than the suite keeps, a run id that is no run id), or one polars failed on.
    #[error("{path}: {reason}")]
    BadFile {
        /// The file (and row or byte, in `reason`).
        path: std::path::PathBuf,
        /// What is wrong with it, where, and what was expected.
        reason: String,
    },
    /// A bad argument (a label that is not KEY=VALUE, ...).
    #[error("{0}")]
    Usage(String),
}

pub(crate) fn io_err(path: &std::path::Path) -> impl FnOnce(std::io::Error) -> DatasetError + '_ {
    move |source| DatasetError::Io {
        path: path.to_path_buf(),
        source,
    }
}
