//! `results.html`: one self-contained page per comparison (docs/upcmp.md, "results.html").
//!
//! The page is drawn in two halves. This module renders, with maud (escaped by
//! construction), everything that is small and fixed: the header, the digest, and per
//! test the benchmark table, the Profiling Summary, the notes, small inline SVG plots and
//! the caller/callee tables. The function tables (up to 10^5 rows, sortable, filterable,
//! drawn lazily), the flame graphs and any counters are drawn by the page's script from
//! JSON embedded in the page; `html/data.js` is the only script that reads field names.
//! Nothing is fetched: a Content-Security-Policy forbids every network request.
//!
//! Over 1,000 lines with its unit tests; the code alone is under 1,000.

use super::{fmt_pct, fmt_rate, fmt_ratio, fmt_sec, msec};
use crate::compare::bench::BenchRow;
use crate::compare::runs::{RunComparison, TestComparison, TestOutcome};
use crate::compare::stacks::{ArcChange, FunctionChange, RunStacks, ShareChange, TestStacks, FRAME_CUTOFF_PCT};
use crate::compare::stats::{Mark, Significance};
use crate::compare::{ratio, Basis, FunctionDelta, Measure, ProfileComparison, ProfileSummary};
use crate::model::shown::{is_unsafe, ShownText};
use crate::report::stackcmp::{flame_file, flame_run1_file};
use maud::{html, Markup, PreEscaped, DOCTYPE};
use std::io::{self, Write};

mod annotate;

/// The page's style sheet, script modules and self-test, included at compile time.
const CSS: &str = include_str!("html/page.css");
const ERRORS_JS: &str = include_str!("html/errors.js");
const DATA_JS: &str = include_str!("html/data.js");
const PAGE_JS: &str = include_str!("html/page.js");
const SELFTEST_JS: &str = include_str!("html/selftest.js");

/// No network, ever: the page and its flame graphs (srcdoc frames inherit it) may only
/// run their own inline code.
const CSP: &str = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; \
                   img-src data:; base-uri 'none'; form-action 'none'";

/// The version of the embedded data's layout, read by `html/data.js`.
const DATA_SCHEMA: u32 = 1;

/// Options of the HTML report.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct HtmlOptions {
    /// Open the function tables with the noise rows hidden (upcmp --hide-noise).
    pub hide_noise: bool,
    /// The annotated functions (`upcmp --annotate`), each with its test's name: an
    /// expandable row each under its test's function table.
    pub annotations: Vec<(String, crate::compare::annotate::Annotation)>,
    /// The other listed functions' annotations, each with its test's name: rendered
    /// when the reader opens one (or clicks its row's function).
    pub listed_annotations: Vec<(String, crate::compare::annotate::Annotation)>,
    /// The same runs compared on the test's processes' samples alone (as `upcmp
    /// --only-test`): the page then has a toggle between the whole system and this.
    pub test_share: Option<RunComparison>,
}

impl HtmlOptions {
    /// Options with the noise rows hidden or shown at first.
    pub fn new(hide_noise: bool) -> Self {
        HtmlOptions {
            hide_noise,
            annotations: Vec::new(),
            listed_annotations: Vec::new(),
            test_share: None,
        }
    }
}

/// Writes `results.html` for `cmp`. `stacks` is the stack comparison when the runs have
/// call stacks, and `stack_svgs` the files [`crate::report::stackcmp::files`] made of
/// it: each test's differential flame graph is embedded from there.
pub fn render(
    cmp: &RunComparison,
    stacks: Option<&RunStacks>,
    stack_svgs: &[(String, Vec<u8>)],
    opts: &HtmlOptions,
    out: impl Write,
) -> io::Result<()> {
    // Names reach the page's text from many places: none may put a control character
    // in the file (docs/security.md).
    let mut out = ShownText::new(out);
    let stacks_of = |name: &str| stacks.and_then(|s| s.tests.iter().find(|t| t.test == name));
    // The test's share of each test, in the comparison's test order.
    let share: Vec<Option<&ProfileComparison>> = cmp
        .tests
        .iter()
        .map(|t| {
            let s = opts.test_share.as_ref()?.tests.iter().find(|s| s.name == t.name)?;
            match &s.outcome {
                TestOutcome::Compared { profile, .. } => Some(&**profile),
                TestOutcome::OnlyIn { .. } => None,
            }
        })
        .collect();
    type Annotations<'a> = Vec<&'a crate::compare::annotate::Annotation>;
    let annotations_of = |name: &str| -> [Annotations<'_>; 2] {
        [&opts.annotations, &opts.listed_annotations]
            .map(|all| all.iter().filter(|(t, _)| t == name).map(|(_, a)| a).collect())
    };
    // The flame graphs, in test order; each becomes one JSON string in its own block.
    let mut flames: Vec<&str> = Vec::new();
    let mut flame_of_test: Vec<Flames> = Vec::new();
    for t in &cmp.tests {
        let mut of_test = Flames::default();
        for (file, slot) in [
            (flame_file as fn(&str) -> String, &mut of_test.run2),
            (flame_run1_file, &mut of_test.run1),
        ] {
            let file = stacks_of(&t.name).map(|s| file(&s.test));
            let svg = file.and_then(|f| stack_svgs.iter().find(|(n, _)| *n == f));
            match svg.map(|(_, b)| std::str::from_utf8(b)) {
                Some(Ok(s)) => {
                    flames.push(svg_element(s));
                    *slot = Some(flames.len() - 1);
                }
                Some(Err(e)) => return Err(io::Error::new(io::ErrorKind::InvalidData, e)),
                None => {}
            }
        }
        flame_of_test.push(of_test);
    }
    let page = html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta http-equiv="Content-Security-Policy" content=(CSP);
                meta name="viewport" content="width=device-width, initial-scale=1";
                meta name="generator" content={ "upcmp " (crate::TOOL_VERSION) };
                title { "upcmp: " (cmp.dir1.display()) " vs " (cmp.dir2.display()) }
                style { (PreEscaped(CSS)) }
                script { (PreEscaped(ERRORS_JS)) }
            }
            body data-view="system" {
                (header(cmp, opts.test_share.is_some()))
                (digest(cmp))
                @for (i, t) in cmp.tests.iter().enumerate() {
                    (test_section(i, t, share[i], stacks_of(&t.name), flame_of_test[i], &annotations_of(&t.name)))
                }
                footer {
                    "Written by upcmp " (crate::TOOL_VERSION) " beside results, results.csv and results.json, "
                    "which carry the same numbers. This page loads nothing from the network."
                }
                script #upcmp-data type="application/json" { (PreEscaped(DATA_SLOT)) }
                @for (k, svg) in flames.iter().enumerate() {
                    script.flame-svg id={ "flame-" (k) } type="application/json" {
                        (PreEscaped(script_safe_json(svg)?))
                    }
                }
                script { (PreEscaped(DATA_JS)) (PreEscaped(PAGE_JS)) (PreEscaped(SELFTEST_JS)) }
            }
        }
    };
    // The data, 400 bytes per function row, goes from the serializer to `out` directly
    // instead of through the markup.
    let page = page.into_string();
    let at = page.find(DATA_SLOT).expect("the page has its data slot");
    out.write_all(&page.as_bytes()[..at])?;
    page_data(cmp, opts, &share, &mut out)?;
    out.write_all(&page.as_bytes()[at + DATA_SLOT.len()..])?;
    out.finish().map(drop)
}

/// A test's differential flame graphs on the page: the numbers of their JSON blocks, in
/// run 2's shape and in run 1's.
#[derive(Debug, Clone, Copy, Default)]
struct Flames {
    run2: Option<usize>,
    run1: Option<usize>,
}

/// Where [`page_data`] goes in the page: a `<` that nothing else on the page can hold
/// unescaped (text is escaped by maud, JSON by [`ScriptSafe`]; the page's own CSS and
/// scripts have no such tag).
const DATA_SLOT: &str = "<upcmp-data-slot>";

/// The `<svg>` element of inferno's file, without the XML declaration and doctype that an
/// HTML document must not carry.
fn svg_element(svg: &str) -> &str {
    svg.find("<svg").map_or(svg, |at| &svg[at..])
}

/// `value` as JSON that cannot end or confuse the `<script>` block holding it: every `<`
/// (only ever inside a string) is written `\u003c`, so neither `</script` nor `<!--`
/// can appear.
fn script_safe_json(value: &impl serde::Serialize) -> io::Result<String> {
    let mut w = ScriptSafe(Vec::new());
    serde_json::to_writer(&mut w, value).map_err(io::Error::other)?;
    String::from_utf8(w.0).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

/// A writer that replaces `<` by its JSON escape (serde_json writes `<` only in strings),
/// and so every character a text for people must not hold raw that serde_json leaves
/// as it is (DEL, the C1 controls, U+2028, the bidirectional controls): the page's
/// [`ShownText`] would write them `\u{2028}`, which is no JSON.
struct ScriptSafe<W>(W);

impl<W: Write> Write for ScriptSafe<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.write_all(buf)?;
        Ok(buf.len())
    }

    fn write_all(&mut self, mut buf: &[u8]) -> io::Result<()> {
        // serde_json writes a string in pieces cut at its escapes, all ASCII: each piece is
        // UTF-8 whole.
        if let Ok(text) = std::str::from_utf8(buf) {
            let mut rest = text;
            while let Some(k) = rest.find(|c: char| c == '<' || is_unsafe(c)) {
                self.0.write_all(&rest.as_bytes()[..k])?;
                let c = rest[k..].chars().next().expect("found at k");
                write!(self.0, "\\u{:04x}", c as u32)?;
                rest = &rest[k + c.len_utf8()..];
            }
            return self.0.write_all(rest.as_bytes());
        }
        while let Some(at) = memchr::memchr(b'<', buf) {
            self.0.write_all(&buf[..at])?;
            self.0.write_all(b"\\u003c")?;
            buf = &buf[at + 1..];
        }
        self.0.write_all(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

/// The data the page's script reads: the comparison as `results.json` has it, except
/// that each test's function rows are moved to `function_rows` as arrays under one list
/// of keys (10^5 rows would otherwise repeat every field name 10^5 times). The rows are
/// written one by one, never held as JSON values all at once.
fn page_data(
    cmp: &RunComparison,
    opts: &HtmlOptions,
    share: &[Option<&ProfileComparison>],
    out: impl Write,
) -> io::Result<()> {
    let stripped = cmp.without_function_rows();
    let rows: Vec<Option<&[FunctionDelta]>> = cmp.function_rows().collect();
    let mut w = ScriptSafe(out);
    write!(
        w,
        "{{\"schema\":{DATA_SCHEMA},\"hide_noise\":{},\"comparison\":",
        opts.hide_noise
    )?;
    serde_json::to_writer(&mut w, &stripped).map_err(io::Error::other)?;
    // What the rows without a symbol are: their tooltips.
    let hints: std::collections::BTreeMap<&str, String> = rows
        .iter()
        .flatten()
        .flat_map(|r| r.iter())
        .filter_map(|f| Some((f.function.as_str(), super::unknown::unknown_hint(&f.function)?)))
        .collect();
    w.write_all(b",\"hints\":")?;
    serde_json::to_writer(&mut w, &hints).map_err(io::Error::other)?;
    w.write_all(b",\"function_rows\":")?;
    write_row_tables(&rows, &mut w)?;
    // The test's share, test by test in the same order: its profile comparison without
    // rows, and its rows (null where there is none).
    if opts.test_share.is_some() {
        w.write_all(b",\"test_share\":{\"profiles\":")?;
        let profiles: Vec<Option<ProfileComparison>> = share.iter().map(|p| p.map(|p| p.without_rows())).collect();
        serde_json::to_writer(&mut w, &profiles).map_err(io::Error::other)?;
        w.write_all(b",\"function_rows\":")?;
        let rows: Vec<Option<&[FunctionDelta]>> = share.iter().map(|p| p.map(|p| &p.rows[..])).collect();
        write_row_tables(&rows, &mut w)?;
        w.write_all(b"}")?;
    }
    w.write_all(b"}")
}

/// A JSON list of row tables ([`super::flat::write_table`]), `null` for a test without.
fn write_row_tables(rows: &[Option<&[FunctionDelta]>], w: &mut impl Write) -> io::Result<()> {
    w.write_all(b"[")?;
    for (i, r) in rows.iter().enumerate() {
        if i > 0 {
            w.write_all(b",")?;
        }
        match r {
            Some(r) => super::flat::write_table(r, &mut *w)?,
            None => w.write_all(b"null")?,
        }
    }
    w.write_all(b"]")
}

fn header(cmp: &RunComparison, with_share: bool) -> Markup {
    html! {
        header {
            h1 { "upcmp: " span.run1 { (cmp.dir1.display()) } " → " span.run2 { (cmp.dir2.display()) } }
            p.runs {
                "1: " code { (cmp.dir1.display()) } br;
                "2: " code { (cmp.dir2.display()) }
            }
            @if !cmp.warnings.is_empty() {
                ul.warnings {
                    @for w in &cmp.warnings { li { strong { "WARNING: " } (w) } }
                }
            }
            @if with_share { (view_toggle()) }
            h2 { "System" }
            @if cmp.system_differences.is_empty() {
                p { (sentence(&super::text::system_summary(cmp))) }
            } @else {
                table.system {
                    thead { tr { th { "item" } th { "run 1" } th { "run 2" } } }
                    tbody {
                        @for d in &cmp.system_differences {
                            tr { td { (d.key) } td { (d.run1) } td { (d.run2) } }
                        }
                    }
                }
                @if let Some(n) = super::text::notes_below(cmp) { p { (n) } }
            }
            @if !cmp.setting_differences.is_empty() {
                details.settings open[cmp.setting_differences.len() <= super::text::CONFIG_LINES] {
                    summary { "Kernel settings that differ (" (cmp.setting_differences.len()) ")" }
                    table.system {
                        thead { tr { th { "setting" } th { "run 1" } th { "run 2" } } }
                        tbody {
                            @for d in &cmp.setting_differences {
                                tr { td { (d.key.strip_prefix("config.").unwrap_or(&d.key)) } td { (d.run1) } td { (d.run2) } }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// The buttons that switch every test's Profiling Summary and function table between the
/// whole system's samples and the test's processes' alone (page.js).
fn view_toggle() -> Markup {
    html! {
        div.views role="group" aria-label="whose samples the tables count" {
            "Tables: "
            button.view type="button" data-view="system" aria-pressed="true"
                title="every sample of the sampled CPUs, as results and results.csv count them" { "Whole system" }
            button.view type="button" data-view="test" aria-pressed="false"
                title="the samples of the test's processes alone, as upcmp --only-test counts them" {
                "The test's processes only"
            }
        }
        p.note {
            "Whole system: every sample, as results and results.csv count them. The test's processes only: "
            "the samples of the test's processes alone (upcmp --only-test), without kernel threads, interrupts "
            "taken in idle, and other processes. The digest and the benchmark tables are the same in both."
        }
    }
}

/// `text` with a capital and a full stop.
fn sentence(text: &str) -> String {
    let mut c = text.chars();
    let mut s: String = c
        .next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default();
    if !s.ends_with('.') {
        s.push('.');
    }
    s
}

fn verdict(n: &Significance) -> Markup {
    let class = match n.verdict {
        Mark::Significant => "verdict significant",
        Mark::SamplingOnly => "verdict sampling",
        Mark::Noise => "verdict noise",
        Mark::NotTested | Mark::BelowCutoff => "verdict untested",
    };
    html! { span class=(class) { (n.verdict.word()) } }
}

/// Which way a ratio is an improvement, for its colour.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Better {
    /// Above 1 is better (speed).
    Higher,
    /// Below 1 is better (CPU time).
    Lower,
    /// Neither (elapsed and idle time).
    Neither,
}

/// A ratio drawn from 1.0 on a log scale: to the right when above 1, full width at
/// ±25 % (a change off the scale ends in an arrow), coloured by `better`; a change
/// within the noise is drawn faint.
fn ratio_bar(r: Option<f64>, better: Better, faint: bool) -> Markup {
    const W: f64 = 120.0;
    const LIMIT: f64 = 0.223_143_551_314_209_76; // ln 1.25
    let Some(r) = r.filter(|r| r.is_finite() && *r > 0.0) else {
        return html! {};
    };
    let x = (r.ln() / LIMIT).clamp(-1.0, 1.0) * (W / 2.0 - 6.0);
    let (start, width) = if x >= 0.0 { (W / 2.0, x) } else { (W / 2.0 + x, -x) };
    let colour = match better {
        Better::Neither => "neutral",
        Better::Higher if r >= 1.0 => "good",
        Better::Lower if r <= 1.0 => "good",
        _ => "bad",
    };
    let class = format!("bar {colour}{}", if faint { " faint" } else { "" });
    let off_scale = r.ln().abs() > LIMIT;
    let arrow = if x >= 0.0 {
        format!("{},2 {},7 {},12", W - 6.0, W - 1.0, W - 6.0)
    } else {
        "6,2 1,7 6,12".to_string()
    };
    html! {
        svg.ratio width=(W) height="14" viewBox={ "0 0 " (W) " 14" } role="img"
            aria-label={ "ratio " (format!("{r:.3}")) } {
            rect.track x="0" y="6" width=(W) height="2" {}
            rect class=(class) x=(format!("{start:.1}")) y="2" width=(format!("{:.1}", width.max(1.0))) height="10" {}
            @if off_scale { polygon class=(class) points=(arrow) {} }
            line.one x1=(W / 2.0) x2=(W / 2.0) y1="0" y2="14" {}
        }
    }
}

/// Two runs' values on one axis: each repetition as a dot, the mean as a tick.
fn strip_plot(v1: &[f64], v2: &[f64], unit: &str) -> Markup {
    let all = || v1.iter().chain(v2).copied().filter(|v| v.is_finite());
    let (lo, hi) = (
        all().fold(f64::INFINITY, f64::min),
        all().fold(f64::NEG_INFINITY, f64::max),
    );
    if !lo.is_finite() {
        return html! {};
    }
    let (lo, hi) = pad_range(lo, hi);
    let x = |v: f64| 24.0 + (v - lo) / (hi - lo) * 252.0;
    let row = |vs: &[f64], y: f64, class: &str| -> Markup {
        let mean = crate::compare::stats::mean(vs);
        html! {
            @for v in vs {
                circle class=(class) cx=(format!("{:.1}", x(*v))) cy=(y) r="3.5" {
                    title { (format!("{v:.4} {unit}")) }
                }
            }
            @if !vs.is_empty() {
                line class=(class) x1=(format!("{:.1}", x(mean))) x2=(format!("{:.1}", x(mean)))
                    y1=(y - 7.0) y2=(y + 7.0) {}
            }
        }
    };
    html! {
        svg.spread width="300" height="52" viewBox="0 0 300 52" role="img" aria-label="the repetitions of each run" {
            text x="2" y="16" { "1" } text x="2" y="36" { "2" }
            (row(v1, 12.0, "run1")) (row(v2, 32.0, "run2"))
            text.axis x="24" y="50" { (fmt_rate(lo)) }
            text.axis x="276" y="50" text-anchor="end" { (fmt_rate(hi)) " " (unit) }
        }
    }
}

fn pad_range(lo: f64, hi: f64) -> (f64, f64) {
    let span = (hi - lo).max(hi.abs() * 1e-3).max(1e-12);
    (lo - span * 0.1, hi + span * 0.1)
}

fn anchor(i: usize) -> String {
    format!("t{i}")
}

/// The first operation's speed change, and the CPU time's, per test: the same changes and
/// verdicts as the text report's digest, a bar for the ratio, and in words why there is
/// none; then the functions beyond the noise, significant ones apart from those beyond
/// the sampling error only.
fn digest(cmp: &RunComparison) -> Markup {
    html! {
        section #digest {
            h2 { "Digest" }
            table.digest {
                thead {
                    tr {
                        th rowspan="2" { "Test" }
                        th colspan="3" { "Benchmark speed, run 2 vs run 1" }
                        th colspan="3" { "CPU time, run 2 vs run 1" }
                        th colspan="2" { "Functions beyond the noise" }
                    }
                    tr {
                        th { "change" } th { "ratio" } th { "95% test" }
                        th { "change" } th { "ratio" } th { "95% test" }
                        th title="changes beyond the run-to-run noise (Welch's test on the repetitions)" { "significant" }
                        th title="with one run a side: beyond the sampling error, run-to-run noise not measured" {
                            "sampling only"
                        }
                    }
                }
                tbody {
                    @for (i, t) in cmp.tests.iter().enumerate() {
                        tr {
                            td { a href={ "#" (anchor(i)) } { (t.name) } }
                            @match &t.outcome {
                                TestOutcome::OnlyIn { run, .. } => {
                                    td colspan="8" { "only in run " (run) ": nothing to compare" }
                                }
                                TestOutcome::Compared { bench, profile, unlike, .. } => {
                                    @match unlike.iter().find(|u| u.no_speed_ratio) {
                                        Some(u) => td colspan="3" { (super::activity::refused_what(u)) " differ: no ratio" },
                                        None => (digest_bench(bench, unlike)),
                                    }
                                    (digest_cpu(profile, unlike))
                                    @let significant = listed_with(profile, Mark::Significant);
                                    td.num.significant[significant > 0] { (significant) }
                                    td.num.sampling { (listed_with(profile, Mark::SamplingOnly)) }
                                }
                            }
                        }
                    }
                }
            }
            p.legend {
                "Bars: the ratio from 1.0 on a log scale (full width at ±25 %); green is faster or less CPU time, "
                "red slower or more; faint within the noise. Single runs test the benchmark against nothing: "
                "repeat the runs (uprun --runs N) to test it."
            }
        }
    }
}

/// The listed functions of `p` whose verdict is `mark`.
fn listed_with(p: &ProfileComparison, mark: Mark) -> usize {
    p.listed().filter(|r| r.noise.verdict == mark).count()
}

/// Why a ratio cannot be given when the sides were not run alike: what differs.
fn unlike_words(
    unlike: &[crate::compare::runs::Unlike],
    refused: impl Fn(&crate::compare::runs::Unlike) -> bool,
) -> String {
    let items: Vec<&str> = unlike.iter().filter(|u| refused(u)).map(|u| u.item.as_str()).collect();
    format!("no ratio: unlike runs ({})", items.join(", "))
}

fn digest_bench(bench: &[BenchRow], unlike: &[crate::compare::runs::Unlike]) -> Markup {
    let Some(b) = bench.first() else {
        return html! { td colspan="3" { "no benchmark result" } };
    };
    let Some((change, word)) = super::activity::bench_digest(bench) else {
        let why = match (b.run1, b.run2) {
            (None, _) => "no change: only run 2 has this operation",
            (_, None) => "no change: only run 1 has this operation",
            _ => "no change: run 1's value is 0",
        };
        return html! { td colspan="3" title=(b.description) { (why) } };
    };
    let class = match b.noise.map(|n| n.verdict) {
        Some(Mark::Significant) => "verdict significant",
        Some(Mark::SamplingOnly) => "verdict sampling",
        Some(Mark::Noise) => "verdict noise",
        _ => "verdict untested",
    };
    html! {
        td.num.change title=(b.description) { (change) }
        @if b.speed_ratio.is_some() {
            td title={ "R2/R1 speed " (fmt_ratio(b.speed_ratio)) "×" } {
                (ratio_bar(b.speed_ratio, Better::Higher, b.noise.is_some_and(|n| !n.stands_out())))
            }
        } @else {
            td.why { (unlike_words(unlike, |u| u.no_speed_ratio)) }
        }
        td {
            span class=(class) { (word) }
            @if b.noise.is_none() { span.why { ": one run a side, not tested" } }
        }
    }
}

fn digest_cpu(p: &ProfileComparison, unlike: &[crate::compare::runs::Unlike]) -> Markup {
    let r = ratio(p.run1.cpu, p.run2.cpu).filter(|_| !p.ratios_refused);
    html! {
        @match super::activity::cpu_digest(p) {
            Some(change) => td.num.change { (change) },
            None => td.why { "no change: no CPU time in run 1" },
        }
        @if p.ratios_refused {
            td.why { (unlike_words(unlike, |u| u.no_summary_ratio)) }
        } @else {
            td title={ "R2/R1 " (fmt_ratio(r)) } { (ratio_bar(r, Better::Lower, !p.cpu_noise.stands_out())) }
        }
        td { (verdict(&p.cpu_noise)) }
    }
}

fn test_section(
    i: usize,
    t: &TestComparison,
    share: Option<&ProfileComparison>,
    stacks: Option<&TestStacks>,
    flame: Flames,
    annotations: &[Vec<&crate::compare::annotate::Annotation>; 2],
) -> Markup {
    html! {
        section.test id=(anchor(i)) {
            h2 { (t.name) a.top href="#digest" title="back to the digest" { "↑" } }
            @match &t.outcome {
                TestOutcome::OnlyIn { run, dir } => {
                    p { "Only in run " (run) " (" code { (dir.display()) } "): nothing to compare." }
                }
                TestOutcome::Compared { upout1, upout2, repetitions1, repetitions2, bench, profile, notes, .. } => {
                    p.runs {
                        "1: " code { (upout1.display()) }
                        @if *repetitions1 > 1 { " (" (repetitions1) " repetitions)" }
                        br;
                        "2: " code { (upout2.display()) }
                        @if *repetitions2 > 1 { " (" (repetitions2) " repetitions)" }
                    }
                    @if !notes.is_empty() {
                        ul.notes { @for n in notes { li { strong { "NOTE: " } (n) } } }
                    }
                    h3 { "Benchmark" }
                    (bench_table(bench))
                    h3 { "Profiling Summary" }
                    div.system-view { (profile_warnings(profile)) (summary_table(profile)) }
                    @if let Some(s) = share {
                        div.test-view { (profile_warnings(s)) (summary_table(s)) }
                    }
                    h3 { "CPU Time Analysis" }
                    div.ftable data-test=(i) {
                        noscript {
                            "The function table needs JavaScript; every row is in results.csv and results.json."
                        }
                    }
                    div.system-view { (profile_notes(profile)) }
                    @if let Some(s) = share { div.test-view { (profile_notes(s)) } }
                    (annotate::section(&annotations[0], &annotations[1]))
                    div.counters data-test=(i) {}
                    @if let Some(s) = stacks { (stack_section(s, flame)) }
                }
            }
        }
    }
}

fn bench_value(b: &BenchRow, v: Option<f64>) -> String {
    match v {
        Some(x) if b.unit == "sec" => format!("{x:.3}"),
        Some(x) => fmt_rate(x),
        None => String::new(),
    }
}

fn bench_table(rows: &[BenchRow]) -> Markup {
    if rows.is_empty() {
        return html! { p { "No benchmark results in either upout." } };
    }
    let repeated = rows.iter().any(|r| r.noise.is_some());
    html! {
        table.bench {
            thead {
                tr {
                    th { "Operation" }
                    th.num { "Run 1" } @if repeated { th.num { "sd%" } }
                    th.num { "Run 2" } @if repeated { th.num { "sd%" } }
                    th.num { "Speed" } th { "R2 vs R1" }
                    @if repeated { th { "95% test" } th { "Spread (mean ± sd)" } }
                }
            }
            tbody {
                @for b in rows {
                    tr {
                        td {
                            (b.description)
                            @if b.lower_is_better {
                                " " span.unit { "[" (b.unit) ", lower is better; speed is R1/R2]" }
                            }
                            @else if !b.unit.is_empty() { " " span.unit { "[" (b.unit) "]" } }
                        }
                        td.num { (bench_value(b, b.run1)) }
                        @if repeated { td.num { (b.sd_pct(1).map_or("-".into(), |x| format!("{x:.1}"))) } }
                        td.num { (bench_value(b, b.run2)) }
                        @if repeated { td.num { (b.sd_pct(2).map_or("-".into(), |x| format!("{x:.1}"))) } }
                        td.num { (fmt_ratio(b.speed_ratio)) }
                        td { (ratio_bar(b.speed_ratio, Better::Higher, b.noise.is_some_and(|n| !n.stands_out()))) }
                        @if repeated {
                            td { @match b.noise { Some(n) => (verdict(&n)), None => "n/a" } }
                            td { (strip_plot(&b.run1_values, &b.run2_values, &b.unit)) }
                        }
                    }
                }
            }
        }
        @if let Some(line) = super::text::bench_noise_line(rows) {
            p.note { (line) }
        }
    }
}

fn summary_table(c: &ProfileComparison) -> Markup {
    let (a, b) = (&c.run1, &c.run2);
    let m = &c.measure;
    let repeated = a.repetitions > 1 || b.repetitions > 1;
    // Runs in different units, or of different work, have no ratio of values.
    let comparable = m.basis != Basis::Share && !c.ratios_refused;
    let line = |name: &str, x: f64, y: f64, scale: f64, better: Better, faint: bool| {
        let r = if comparable { ratio(x, y) } else { None };
        html! {
            tr {
                th { (name) }
                td.num { (fmt_sec(x / scale)) } td.num { (fmt_sec(y / scale)) } td.num { (fmt_ratio(r)) }
                td { (ratio_bar(r, better, faint)) }
            }
        }
    };
    let unit = format!("({})", m.unit);
    let faint = !c.cpu_noise.stands_out();
    html! {
        table.summary {
            thead {
                tr {
                    th { "Sum of all CPUs" } th.num { "Run1 " (unit) } th.num { "Run2 " (unit) }
                    th.num { "R2/R1" } th {}
                }
            }
            tbody {
                tr { th { "Number of CPUs" } td.num { (a.cpus) } td.num { (b.cpus) } td {} td {} }
                @if repeated {
                    tr {
                        th { "Repetitions (means below)" }
                        td.num { (a.repetitions) } td.num { (b.repetitions) } td {} td {}
                    }
                }
                @if m.is_time() {
                    (line("Elapsed time", a.elapsed_sec, b.elapsed_sec, 1.0, Better::Neither, false))
                    (line("Idle time", a.idle, b.idle, 1.0, Better::Neither, false))
                    (line("CPU time", a.cpu, b.cpu, 1.0, Better::Lower, faint))
                } @else {
                    (line("Elapsed time (sec)", a.elapsed_sec, b.elapsed_sec, 1.0, Better::Neither, false))
                    (line("Idle functions", a.idle, b.idle, m.scale, Better::Neither, false))
                    (line("Other functions", a.cpu, b.cpu, m.scale, Better::Lower, faint))
                }
                @if a.lost > 0.0 || b.lost > 0.0 {
                    (line("Lost samples", a.lost, b.lost, m.scale, Better::Lower, false))
                }
                // Whose the CPU time is, where the samples say, as the text report has it.
                @if let Some(o) = c.owners.as_ref().filter(|_| m.is_time()) {
                    @for (name, x, y) in [
                        ("the test's processes", o.run1.test, o.run2.test),
                        ("other processes", o.run1.other, o.run2.other),
                    ] {
                        @let r = if comparable { ratio(x, y) } else { None };
                        tr.owner title={ "R2−R1 " (super::fmt_signed_sec(y - x)) " s" } {
                            th { (name) }
                            td.num { (fmt_sec(x)) } td.num { (fmt_sec(y)) }
                            td.num { (fmt_ratio(r)) " (" (super::fmt_signed_sec(y - x)) " s)" }
                            td { (ratio_bar(r, Better::Neither, false)) }
                        }
                    }
                }
            }
        }
        p.note {
            "CPU time: " (verdict(&c.cpu_noise))
            @if repeated {
                " (sd " (sd_words(a.cpu_sd_pct)) " and " (sd_words(b.cpu_sd_pct))
                " over the repetitions)"
            }
        }
        @if repeated {
            figure.spread {
                (strip_plot(&a.cpu_per_repetition, &b.cpu_per_repetition, "s"))
                figcaption { "CPU time of each repetition (dots) and their mean (tick)." }
            }
        }
    }
}

/// What the comparison of a test's profiles warns of (the text report's NOTE lines under
/// its Profiling Summary): busy other processes, throttled sampling, unnamed code.
fn profile_warnings(c: &ProfileComparison) -> Markup {
    html! {
        @if !c.warnings.is_empty() {
            ul.warnings { @for w in &c.warnings { li { strong { "NOTE: " } (w) } } }
        }
    }
}

/// How a run's samples were taken and weighed, as the text report's notes say it.
/// A side's standard deviation in %, `-` for a single repetition.
fn sd_words(sd: Option<f64>) -> String {
    sd.map_or_else(|| "-".into(), |x| format!("{x:.1}%"))
}

fn sampling_note(s: &ProfileSummary, m: &Measure) -> String {
    let period = match m.basis {
        Basis::SampledTime => format!("{} msec", msec(s.period * 1e-9)),
        _ => format!("{:.0} {}", s.period, s.event),
    };
    match (m.basis, s.fixed_period) {
        (Basis::SampledTime, true) => format!("{period} profiling sample rate ({})", s.event),
        (_, true) => format!("{} sampled every {period}", s.event),
        (_, false) => format!(
            "{} sampled at a varying period (mean {period}); every sample weighs its period",
            s.event
        ),
    }
}

/// The notes of the text report under the function table.
fn profile_notes(c: &ProfileComparison) -> Markup {
    let (a, b) = (&c.run1, &c.run2);
    html! {
        ul.notes {
            @let (sa, sb) = (sampling_note(a, &c.measure), sampling_note(b, &c.measure));
            @if sa == sb {
                li { (sa) "." }
            } @else {
                li { "Run 1: " (sa) "; run 2: " (sb) "." }
            }
            @if c.measure.is_time() {
                li { "Idle time calculated as elapsed − CPU time − lost samples." }
            } @else {
                li { "Values are in " (c.measure.unit) "." }
            }
            // The same notes as the text report: the test, its question and family, and what
            // the data resolve of the total CPU time.
            @for note in super::text::noise_notes(c) {
                li { (note) }
            }
            // How rows were matched across the runs: clones, module moves, one run only.
            @for note in super::text::matching_notes(c) {
                li { (note) }
            }
            @if a.idle_set == b.idle_set {
                li { "Idle functions (not counted as CPU time, not listed): " (super::idle_set_words(&a.idle_set)) "." }
            } @else {
                li { "Idle functions, run 1: " (super::idle_set_words(&a.idle_set)) "." }
                li { "Idle functions, run 2: " (super::idle_set_words(&b.idle_set)) "." }
            }
        }
    }
}

fn share_cells(c: &ShareChange) -> Markup {
    html! {
        td.num { (fmt_pct(c.pct1)) } td.num { (fmt_pct(c.pct2)) }
        td.num.significant[c.stands_out()] { (format!("{:+.2}", c.delta_pct)) } td.num { "±" (fmt_pct(c.error_pct)) }
    }
}

fn stack_section(s: &TestStacks, flame: Flames) -> Markup {
    let arcs = |what: &str, list: &[ArcChange]| {
        html! {
            @if !list.is_empty() {
                tr.group { th colspan="5" { (what) } }
                @for a in list { tr { td.arc { (a.function) } (share_cells(&a.change)) } }
            }
        }
    };
    let function = |f: &FunctionChange| {
        html! {
            tbody {
                tr.function { th colspan="5" { (f.function) } }
                tr { td { "inclusive" } (share_cells(&f.inclusive)) }
                tr { td { "self" } (share_cells(&f.self_time)) }
                (arcs("callers (calling it)", &f.callers))
                (arcs("callees (called by it)", &f.callees))
            }
        }
    };
    html! {
        h3 { "Differential flame graph" }
        @if let Some(k) = flame.run2 {
            @if let Some(j) = flame.run1 {
                // Run 1's shape draws what vanished in run 2; the buttons swap the graph.
                div.shapes role="group" aria-label="the graph's widths" {
                    button.shape type="button" data-side="2" aria-pressed="true"
                        title="widths are run 2's samples: frames new in run 2 are drawn" { "Run 2's shape" }
                    button.shape type="button" data-side="1" aria-pressed="false"
                        title="widths are run 1's samples: frames that vanished in run 2 are drawn" { "Run 1's shape" }
                }
                div.flame data-svg={ "flame-" (k) } data-svg2={ "flame-" (k) } data-svg1={ "flame-" (j) } data-side="2" {
                    noscript {
                        "The flame graphs need JavaScript; they are also in RESULTS_DIR as " (flame_file(&s.test))
                        " and " (flame_run1_file(&s.test)) "."
                    }
                }
            } @else {
                div.flame data-svg={ "flame-" (k) } {
                    noscript { "The flame graph needs JavaScript; it is also in RESULTS_DIR as " (flame_file(&s.test)) "." }
                }
            }
            p.note {
                "Width: run 2's samples, or run 1's in run 1's shape (where the frames that vanished in run 2 are "
                "drawn); colour: the change of each frame's inclusive share of CPU time from run 1 to run 2 in both "
                "(red grew, blue shrank, neutral where the change does not stand out at a false-discovery rate of 5% "
                "over the frames at or above " (FRAME_CUTOFF_PCT) "%). Click a frame to zoom, "
                "Search (top right, or Ctrl-F inside the graph) to highlight."
            }
        } @else if let Some(j) = flame.run1 {
            p { "Run 2 has no CPU samples with stacks: the graph is drawn in run 1's shape (widths are run 1's samples)." }
            div.flame data-svg={ "flame-" (j) } {
                noscript { "The flame graph needs JavaScript; it is also in RESULTS_DIR as " (flame_run1_file(&s.test)) "." }
            }
        } @else {
            p { "Neither run has CPU samples with stacks: nothing to draw." }
        }
        h3 { "Callers and callees" }
        @if s.functions.is_empty() {
            p { "No function's inclusive time changed beyond the noise." }
        } @else {
            p.note {
                "The functions whose inclusive CPU time changed most, and the arcs that carry it: percent of each "
                "run's CPU samples (idle left out), R2−R1 in points ± one standard error; bold where the change stands out at a false-discovery rate "
                "of 5% (Benjamini-Hochberg over the frames at or above " (FRAME_CUTOFF_PCT) "%)."
            }
            table.callers {
                thead { tr { th {} th.num { "R1%" } th.num { "R2%" } th.num { "R2−R1" } th.num { "error" } } }
                @for f in &s.functions { (function(f)) }
            }
        }
        @if !s.inlined.is_empty() || !s.shifts.is_empty() {
            h3 { "Where did its time go; cost shifts" }
            pre.moves {
                (String::from_utf8_lossy(&{
                    let mut notes = Vec::new();
                    // Written to memory: cannot fail.
                    let _ = super::stackcmp::render_moves(s, &mut notes);
                    notes
                }))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_code_cannot_end_its_own_block() {
        // A style block ends at `</style`; a script block at `</script`, and `<!--` in
        // it changes how the parser looks for that end.
        let script = ["</script", "<!--"].as_slice();
        for (name, text, bad) in [
            ("page.css", CSS, ["</style"].as_slice()),
            ("errors.js", ERRORS_JS, script),
            ("data.js", DATA_JS, script),
            ("page.js", PAGE_JS, script),
            ("selftest.js", SELFTEST_JS, script),
        ] {
            let lower = text.to_ascii_lowercase();
            for b in bad {
                assert!(!lower.contains(b), "{name} contains {b}");
            }
        }
    }

    #[test]
    fn json_in_a_script_block_has_no_angle_bracket() {
        let s = script_safe_json(&serde_json::json!({"a": "</script><!-- <b>", "b": 1})).unwrap();
        assert!(!s.contains('<'), "{s}");
        let back: serde_json::Value = serde_json::from_str(&s).unwrap();
        assert_eq!(back["a"], "</script><!-- <b>");
    }

    fn significant() -> Significance {
        use crate::compare::stats::{NotTested, Verdict};
        Significance {
            significant: true,
            verdict: Mark::Significant,
            ..Significance::unadjusted(Verdict::NotTested(NotTested::NoValues), -1.5, false)
        }
    }

    #[test]
    fn row_tables_flatten_nested_fields() {
        let row = FunctionDelta {
            function: "f<int>".into(),
            run1: Some(1.5),
            run2: None,
            delta: -1.5,
            delta_pct_of_run1_cpu: -10.0,
            run1_pct_of_cpu: 10.0,
            run2_pct_of_cpu: 0.0,
            run1_sd_pct: None,
            run2_sd_pct: None,
            noise: significant(),
            share_noise: significant(),
            above_cutoff: true,
            listed: true,
            clones: Vec::new(),
            matched: None,
        };
        let (keys, rows) = super::super::flat::read_back(&[row.clone(), row]);
        assert!(
            keys.iter().any(|k| k == "noise.significant") && keys.iter().any(|k| k == "function"),
            "{keys:?}"
        );
        let at = |k: &str| keys.iter().position(|x| *x == k).unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[1][at("function")], "f<int>");
        assert_eq!(rows[0][at("run2")], serde_json::Value::Null);
        assert_eq!(rows[0][at("noise.significant")], true);
        assert_eq!(rows[0][at("noise.verdict")], "significant");
    }

    #[test]
    fn ratio_bars_point_the_right_way() {
        let faster = ratio_bar(Some(1.1), Better::Higher, false).into_string();
        assert!(faster.contains("bar good") && faster.contains("x=\"60.0\""), "{faster}");
        let more_cpu = ratio_bar(Some(1.1), Better::Lower, true).into_string();
        assert!(more_cpu.contains("bar bad faint"), "{more_cpu}");
        let slower = ratio_bar(Some(0.5), Better::Higher, false).into_string();
        assert!(
            slower.contains("bar bad") && slower.contains("polygon"),
            "off the scale: an arrow: {slower}"
        );
        assert!(!slower.contains("x=\"60.0\""), "drawn left of 1.0: {slower}");
        assert!(ratio_bar(Some(2.0), Better::Neither, false)
            .into_string()
            .contains("bar neutral"));
        assert!(ratio_bar(None, Better::Higher, false).into_string().is_empty());
    }
}
