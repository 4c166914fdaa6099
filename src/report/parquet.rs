//! `results.parquet`: the machine-readable table of [`export::rows`](super::export::rows)
//! as one Parquet file, for comparisons too large to read as CSV. Built only with the
//! `parquet` cargo feature (polars-io's Parquet writer).

use super::export::Row;
use polars::prelude::*;
use polars_io::parquet::write::ParquetWriter;
use std::io::Write;

/// The rows as a DataFrame: the CSV's columns, with nulls where the CSV has empty fields.
pub fn frame<'r>(rows: &[Row<'r>]) -> PolarsResult<DataFrame> {
    let text = |name: &str, f: &dyn Fn(&Row<'r>) -> Option<&'r str>| {
        Column::new(name.into(), rows.iter().map(f).collect::<Vec<Option<&'r str>>>())
    };
    let number = |name: &str, f: &dyn Fn(&Row<'r>) -> Option<f64>| {
        Column::new(name.into(), rows.iter().map(f).collect::<Vec<Option<f64>>>())
    };
    let flag = |name: &str, f: &dyn Fn(&Row<'r>) -> Option<bool>| {
        Column::new(name.into(), rows.iter().map(f).collect::<Vec<Option<bool>>>())
    };
    DataFrame::new(
        rows.len(),
        vec![
            text("test", &|r| Some(r.test)),
            text("kind", &|r| Some(r.kind)),
            text("name", &|r| Some(r.name)),
            number("run1", &|r| r.run1),
            number("run2", &|r| r.run2),
            number("delta", &|r| r.delta),
            number("ratio", &|r| r.ratio),
            number("delta_pct_of_run1_cpu", &|r| r.delta_pct_of_run1_cpu),
            number("run1_pct_of_cpu", &|r| r.run1_pct_of_cpu),
            number("run2_pct_of_cpu", &|r| r.run2_pct_of_cpu),
            number("run1_sd_pct", &|r| r.run1_sd_pct),
            number("run2_sd_pct", &|r| r.run2_sd_pct),
            text("noise_method", &|r| r.noise_method),
            number("ci95", &|r| r.ci95),
            number("p_value", &|r| r.p_value),
            flag("significant", &|r| r.significant),
            flag("listed", &|r| r.listed),
            text("unit", &|r| (!r.unit.is_empty()).then_some(r.unit)),
            text("verdict", &|r| r.verdict),
            number("q_value", &|r| r.q_value),
            text("noise_test", &|r| r.noise_test),
            number("detectable_observed", &|r| r.detectable_observed),
            number("detectable_true_80", &|r| r.detectable_true_80),
            number("share_p_value", &|r| r.share_p_value),
            number("share_q_value", &|r| r.share_q_value),
            text("share_verdict", &|r| r.share_verdict),
            Column::new(
                "clones".into(),
                rows.iter()
                    .map(|r| super::export::clones_text(r.clones))
                    .collect::<Vec<Option<String>>>(),
            ),
            text("matched", &|r| r.matched),
        ],
    )
}

/// Writes the rows as Parquet (zstd-compressed, polars' default).
pub fn write(rows: &[Row<'_>], out: &mut dyn Write) -> PolarsResult<()> {
    let mut df = frame(rows)?;
    ParquetWriter::new(out).finish(&mut df)?;
    Ok(())
}
