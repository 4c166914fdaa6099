//! Which renderer writes a comparison: `--format text|csv|json|markdown`.

use super::{export, mail, markdown, text};
use crate::compare::runs::RunComparison;
use crate::compare::ProfileComparison;
use std::io::{self, Write};

/// An output format of upcmp and prfcmp.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OutputFormat {
    /// The seed's text layout.
    #[default]
    Text,
    /// One row per number (`export::CSV_HEADER`).
    Csv,
    /// Everything, as JSON.
    Json,
    /// GitHub-flavoured Markdown tables.
    Markdown,
    /// Plain text of at most 80 columns, for a mailing list.
    Mail,
}

/// Writes a run comparison (upcmp) in `format`.
pub fn render_runs(format: OutputFormat, r: &RunComparison, out: &mut dyn Write) -> io::Result<()> {
    match format {
        OutputFormat::Text => text::render_runs(r, out),
        OutputFormat::Csv => export::write_csv(r, out),
        OutputFormat::Json => export::write_json(r, out),
        OutputFormat::Markdown => markdown::render_runs(r, out),
        OutputFormat::Mail => mail::render_runs(r, out),
    }
}

/// Writes a profile comparison (prfcmp) in `format`; `test` names it in CSV rows.
pub fn render_profile(format: OutputFormat, test: &str, c: &ProfileComparison, out: &mut dyn Write) -> io::Result<()> {
    match format {
        OutputFormat::Text => text::render_profile(c, out),
        OutputFormat::Csv => export::write_profile_csv(test, c, out),
        OutputFormat::Json => export::write_profile_json(c, out),
        OutputFormat::Markdown => markdown::render_profile(c, out),
        OutputFormat::Mail => mail::render_profile(c, out),
    }
}
