//! The page's "Inside functions" rows (`upcmp --annotate`): one expandable row per
//! annotated function of a test, holding its line table and its instructions, the
//! hottest changed lines highlighted. Plain `<details>` elements: they open without the
//! page's script, and print.

use super::verdict;
use crate::compare::annotate::{Annotation, InstructionRow, LineRow};
use crate::compare::Mark;
use maud::{html, Markup};

/// How many changed lines are highlighted per function at most.
const HOTTEST: usize = 3;

/// A line's change is beyond the noise (against the run-to-run noise, or the sampling
/// error alone where there are no repetitions).
fn changed(l: &LineRow) -> bool {
    matches!(l.verdict.verdict, Mark::Significant | Mark::SamplingOnly)
}

/// The indices (in `lines`) of the hottest changed lines: the changed ones of largest
/// |delta|, at most [`HOTTEST`].
fn hottest(lines: &[LineRow]) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..lines.len()).filter(|&i| changed(&lines[i])).collect();
    idx.sort_by(|&a, &b| lines[b].delta.abs().total_cmp(&lines[a].delta.abs()));
    idx.truncate(HOTTEST);
    idx
}

fn seconds(s: f64) -> String {
    format!("{s:.4}")
}

fn signed(s: f64) -> String {
    format!("{s:+.4}")
}

fn place(l: &LineRow) -> String {
    let short = l.file.rsplit('/').next().unwrap_or(&l.file);
    match l.lines {
        [Some(a), Some(b)] if a != b => format!("{short}:{a}→{b}"),
        [Some(a), _] | [None, Some(a)] => format!("{short}:{a}"),
        [None, None] => format!("{short}:?"),
    }
}

/// The summary of an annotated function: its name and its hottest changed line.
fn summary(a: &Annotation, hot: &[usize]) -> Markup {
    html! {
        summary {
            code.fname { (a.function) }
            " — "
            @match hot.first().map(|&i| &a.lines[i]) {
                Some(l) => {
                    "hottest changed line " code { (place(l)) } " " (signed(l.delta)) " s"
                    @if let Some(s) = l.share_of_delta { " (" (format!("{:.0}", s * 100.0)) "% of the function's change)" }
                }
                None if a.lines.is_empty() => { "no source lines" }
                None => { "no line changed beyond the noise" }
            }
        }
    }
}

fn line_table(a: &Annotation, hot: &[usize]) -> Markup {
    html! {
        table.annotate-lines {
            thead { tr {
                th { "line" } th { "function" } th { "source" } th.num { "run 1 s" } th.num { "run 2 s" }
                th.num { "samples 1" } th.num { "samples 2" } th.num { "delta s" } th.num { "% of change" }
                th { "verdict" }
            } }
            tbody {
                @for (i, l) in a.lines.iter().enumerate() {
                    tr class=[hot.contains(&i).then_some("hot")] title=(l.file) {
                        td { code { (place(l)) } }
                        td {
                            (l.function)
                            @if let Some(into) = &l.inlined_into { " (inlined into " (into) ")" }
                        }
                        td.src { code { (l.text.as_deref().unwrap_or("")) } }
                        td.num { (seconds(l.seconds[0])) }
                        td.num { (seconds(l.seconds[1])) }
                        td.num { (l.samples[0]) }
                        td.num { (l.samples[1]) }
                        td.num { (signed(l.delta)) }
                        td.num { (l.share_of_delta.map_or(String::new(), |s| format!("{:.1}", s * 100.0))) }
                        td { (verdict(&l.verdict)) }
                    }
                }
            }
        }
    }
}

fn instruction_row(i: &InstructionRow, same_build: bool) -> Markup {
    html! {
        tr {
            @if !same_build { td { "run " (i.side + 1) } }
            td.num { code { (format!("+{:#x}", i.offset)) } }
            td { code { (i.text) } }
            td { (i.line.as_ref().map_or(String::new(), |(f, n)| format!("{}:{n}", f.rsplit('/').next().unwrap_or(f)))) }
            td.num { (i.samples[0]) }
            td.num { (i.samples[1]) }
            td.num { (i.delta.map_or(String::new(), signed)) }
        }
    }
}

/// A row's notes, line table and instructions; `sampled_only` leaves out the
/// instructions without a sample on either side (the page's listed functions: a kernel
/// function may have thousands), saying how many.
fn body(a: &Annotation, hot: &[usize], sampled_only: bool) -> Markup {
    let shown: Vec<&InstructionRow> = a
        .instructions
        .iter()
        .filter(|i| !sampled_only || i.samples != [0, 0])
        .collect();
    let left_out = a.instructions.len() - shown.len();
    html! {
        @if !a.notes.is_empty() || !a.missing.is_empty() {
            ul.notes {
                @for n in &a.notes { li { (n) } }
                @for m in &a.missing { li { strong { "Missing: " } (m) } }
            }
        }
        @if !a.lines.is_empty() { (line_table(a, hot)) }
        @if !shown.is_empty() {
            details.annotate-insns {
                summary { "Instructions (" (shown.len()) ")"
                    @if !a.same_build { ", per build" }
                    @if left_out > 0 {
                        "; " (left_out) " without samples left out (" code { "--annotate " (a.function) } " lists all)"
                    }
                }
                table.annotate-insns {
                    thead { tr {
                        @if !a.same_build { th { "build" } }
                        th.num { "offset" } th { "instruction" } th { "line" }
                        th.num { "samples 1" } th.num { "samples 2" } th.num { "delta s" }
                    } }
                    tbody { @for i in &shown { (instruction_row(i, a.same_build)) } }
                }
            }
        }
    }
}

/// The expandable rows of a test's annotated functions: those asked for (`--annotate`)
/// rendered, then the other listed functions, each held in a `<template>` the page's
/// script renders when the row is opened (or its function clicked in the table above).
pub(super) fn section(annotations: &[&Annotation], listed: &[&Annotation]) -> Markup {
    html! {
        @if !annotations.is_empty() || !listed.is_empty() {
            h3 { "Inside functions" }
            p.annotate-help {
                "Each function's samples on its source lines and instructions, each line tested as the rows "
                "above (one family per function); the hottest changed lines are highlighted. Open a row"
                @if !listed.is_empty() { ", or click a function's name in the table," }
                " to see them."
            }
            @for a in annotations {
                @let hot = hottest(&a.lines);
                details.annotate data-function=(a.function) {
                    (summary(a, &hot))
                    (body(a, &hot, false))
                }
            }
            @for a in listed {
                @let hot = hottest(&a.lines);
                details.annotate.on-demand data-function=(a.function) {
                    (summary(a, &hot))
                    template { (body(a, &hot, true)) }
                    noscript { "The lines open with the page's script; " code { "upcmp --annotate " (a.function) } " writes them to results.annotate." }
                }
            }
        }
    }
}
