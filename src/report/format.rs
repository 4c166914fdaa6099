//! Which renderer writes a comparison: `--format text|csv|json|markdown`.

use super::{export, mail, markdown, text};
use crate::compare::runs::RunComparison;
use crate::compare::ProfileComparison;
use crate::model::ShownText;
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
        OutputFormat::Text => for_people(out, |w| text::render_runs(r, w)),
        OutputFormat::Csv => export::write_csv(r, out),
        OutputFormat::Json => export::write_json(r, out),
        OutputFormat::Markdown => for_people(out, |w| markdown::render_runs(r, w)),
        OutputFormat::Mail => for_people(out, |w| mail::render_runs(r, w)),
    }
}

/// Writes a profile comparison (prfcmp) in `format`; `test` names it in CSV rows.
pub fn render_profile(format: OutputFormat, test: &str, c: &ProfileComparison, out: &mut dyn Write) -> io::Result<()> {
    match format {
        OutputFormat::Text => for_people(out, |w| text::render_profile(c, w)),
        OutputFormat::Csv => export::write_profile_csv(test, c, out),
        OutputFormat::Json => export::write_profile_json(c, out),
        OutputFormat::Markdown => for_people(out, |w| markdown::render_profile(c, w)),
        OutputFormat::Mail => for_people(out, |w| mail::render_profile(c, w)),
    }
}

/// Renders a text for people into `out` through [`ShownText`]: a name a renderer put in
/// unescaped (a note, a caller) writes no control character. CSV and JSON keep the
/// names' bytes, each in the format's own quoting.
pub fn for_people(out: &mut dyn Write, render: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> io::Result<()> {
    let mut w = ShownText::new(out);
    render(&mut w)?;
    w.finish().map(drop)
}
