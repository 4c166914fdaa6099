//! Renders a test's history (docs/history.md): text, CSV, JSON, and a self-contained page
//! with one SVG plot per series (each repetition a dot, each point's spread a line from
//! its lowest to its highest repetition, the mean joined, change points marked).

use crate::compare::changepoint::ChangePoint;
use crate::compare::history::{History, Newest, SeriesHistory};
use crate::model::{escaped, ShownText};
use maud::{html, Markup, PreEscaped, DOCTYPE};
use std::io::{self, Write};

/// No network: the page runs no script and loads nothing.
const CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'";

fn newest_word(n: Newest) -> &'static str {
    match n {
        Newest::Unchanged => "unchanged",
        Newest::Better => "better",
        Newest::Worse => "WORSE",
        Newest::CannotTell => "cannot tell",
    }
}

fn pct(x: Option<f64>) -> String {
    x.map_or_else(|| "-".into(), |v| format!("{v:+.2}%"))
}

/// Six significant digits, in scientific notation for a value per operation.
fn num(x: f64) -> String {
    if x != 0.0 && (x.abs() < 0.01 || x.abs() >= 1e9) {
        format!("{x:.5e}")
    } else {
        format!("{x:.6}")
    }
}

fn label_of<'a>(h: &'a History, c: &ChangePoint) -> &'a str {
    h.points.get(c.index).map_or("", |p| p.label.as_str())
}

/// The text report: each series with its change points and the newest run's verdict;
/// every name and label escaped.
pub fn write_text(h: &History, out: impl Write) -> io::Result<()> {
    let mut out = ShownText::new(out);
    writeln!(
        out,
        "History of {} ({} points by {}, change points at p <= {})",
        escaped(&h.test),
        h.points.len(),
        h.by,
        h.alpha
    )?;
    if let (Some(a), Some(b)) = (h.points.first(), h.points.last()) {
        writeln!(out, "from {} to {}", escaped(&a.label), escaped(&b.label))?;
    }
    for s in &h.series {
        writeln!(out)?;
        writeln!(
            out,
            "{} ({}, {}): newest run {}",
            escaped(&s.series.name),
            escaped(&s.series.unit),
            if s.series.higher_is_better {
                "higher is better"
            } else {
                "lower is better"
            },
            newest_word(s.newest)
        )?;
        if s.change_points.is_empty() {
            writeln!(out, "  no change point")?;
        }
        for c in &s.change_points {
            writeln!(
                out,
                "  change at point {} ({}): {} -> {} ({}), confidence {:.1}%",
                c.index + 1,
                escaped(label_of(h, c)),
                num(c.before),
                num(c.after),
                pct(c.change_pct),
                c.confidence() * 100.0
            )?;
        }
    }
    let worse: Vec<_> = h.regressions().map(|s| escaped(&s.series.name).into_owned()).collect();
    writeln!(out)?;
    if worse.is_empty() {
        writeln!(out, "The newest run starts no regression.")?;
    } else {
        writeln!(out, "The newest run is worse in: {}", worse.join(", "))?;
    }
    out.finish().map(drop)
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// CSV: one line per series and point (`kind,series,unit,point,label,started,repetitions,mean,min,max,change_point,change_pct,p_value`).
pub fn write_csv(h: &History, mut out: impl Write) -> io::Result<()> {
    writeln!(
        out,
        "test,kind,series,unit,point,label,started,repetitions,mean,min,max,change_point,change_pct,p_value"
    )?;
    for s in &h.series {
        let kind = serde_json::to_value(s.series.kind)
            .ok()
            .and_then(|v| v.as_str().map(String::from));
        for (i, (p, vals)) in h.points.iter().zip(&s.series.values).enumerate() {
            let cp = s.change_points.iter().find(|c| c.index == i);
            let (mean, lo, hi) = stats(vals);
            let num = |x: Option<f64>| x.map_or(String::new(), |v| format!("{v}"));
            writeln!(
                out,
                "{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
                csv_field(&h.test),
                kind.as_deref().unwrap_or(""),
                csv_field(&s.series.name),
                csv_field(&s.series.unit),
                i + 1,
                csv_field(&p.label),
                csv_field(&p.started),
                vals.len(),
                num(mean),
                num(lo),
                num(hi),
                cp.is_some(),
                num(cp.and_then(|c| c.change_pct)),
                num(cp.map(|c| c.p_value)),
            )?;
        }
    }
    Ok(())
}

/// JSON: the whole history as it was computed.
pub fn write_json(h: &History, mut out: impl Write) -> io::Result<()> {
    serde_json::to_writer_pretty(&mut out, h).map_err(io::Error::other)?;
    writeln!(out)
}

fn stats(vals: &[f64]) -> (Option<f64>, Option<f64>, Option<f64>) {
    if vals.is_empty() {
        return (None, None, None);
    }
    let mean = vals.iter().sum::<f64>() / vals.len() as f64;
    let lo = vals.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = vals.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (Some(mean), Some(lo), Some(hi))
}

/// The page: a table of the change points, then one plot per series.
pub fn write_html(h: &History, out: impl Write) -> io::Result<()> {
    let page = html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta http-equiv="Content-Security-Policy" content=(CSP);
                title { "History of " (h.test) }
                style { (PreEscaped(STYLE)) }
            }
            body {
                h1 { "History of " (h.test) }
                p.sub {
                    (h.points.len()) " points by " (h.by) ", "
                    (h.points.first().map_or("", |p| p.label.as_str())) " to "
                    (h.points.last().map_or("", |p| p.label.as_str()))
                    ". Change points: E-Divisive means, permutation test at p ≤ " (h.alpha) "."
                }
                h2 { "Change points" }
                table id="changes" {
                    thead { tr { th { "series" } th { "point" } th { "label" } th { "before" } th { "after" } th { "change" } th { "confidence" } } }
                    tbody {
                        @for s in &h.series {
                            @for c in &s.change_points {
                                tr {
                                    td { (s.series.name) }
                                    td { (c.index + 1) }
                                    td { (label_of(h, c)) }
                                    td { (num(c.before)) }
                                    td { (num(c.after)) }
                                    td class=(if worse(s, c) { "worse" } else { "better" }) { (pct(c.change_pct)) }
                                    td { (format!("{:.1}%", c.confidence() * 100.0)) }
                                }
                            }
                        }
                    }
                }
                @if h.series.iter().all(|s| s.change_points.is_empty()) { p id="nochange" { "No change point in any series." } }
                p id="newest" {
                    @let worse: Vec<&str> = h.regressions().map(|s| s.series.name.as_str()).collect();
                    @if worse.is_empty() { "The newest run starts no regression." }
                    @else { "The newest run is worse in: " (worse.join(", ")) }
                }
                @for s in &h.series {
                    section.series {
                        h2 { (s.series.name) " " span.unit { "(" (s.series.unit) ")" } " " span class=(format!("newest {}", newest_word(s.newest).replace(' ', "-").to_lowercase())) { "newest: " (newest_word(s.newest)) } }
                        (plot(h, s))
                    }
                }
            }
        }
    };
    // Labels and names reach the page's text: none may put a control character in it.
    let mut out = ShownText::new(out);
    out.write_all(page.into_string().as_bytes())?;
    out.finish().map(drop)
}

fn worse(s: &SeriesHistory, c: &ChangePoint) -> bool {
    (c.after > c.before) != s.series.higher_is_better
}

const STYLE: &str = "body{font:14px sans-serif;margin:1em 2em;color:#222}h1{font-size:1.4em}\
h2{font-size:1.1em;margin:1.2em 0 .3em}.sub{color:#555}table{border-collapse:collapse}\
td,th{padding:2px 8px;border-bottom:1px solid #ddd;text-align:left}.worse{color:#b00}\
.better{color:#070}.unit{color:#777;font-weight:normal}.newest{font-weight:normal;font-size:.9em}\
.newest.worse{color:#b00}svg{background:#fafafa;border:1px solid #ddd}";

/// One series as an SVG: x the point, y the value.
fn plot(h: &History, s: &SeriesHistory) -> Markup {
    let (w, ht, pad) = (900.0, 220.0, 50.0);
    let all: Vec<f64> = s
        .series
        .values
        .iter()
        .flatten()
        .copied()
        .filter(|v| v.is_finite())
        .collect();
    let lo = all.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = all.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let (lo, hi) = if !lo.is_finite() {
        (0.0, 1.0)
    } else if hi - lo <= hi.abs() * 1e-12 {
        (lo - lo.abs().max(1e-12) * 0.01, hi + hi.abs().max(1e-12) * 0.01)
    } else {
        (lo - (hi - lo) * 0.05, hi + (hi - lo) * 0.05)
    };
    let n = h.points.len().max(2) as f64;
    let x = |i: usize| pad + (w - 2.0 * pad) * i as f64 / (n - 1.0);
    let y = |v: f64| ht - 25.0 - (ht - 40.0) * (v - lo) / (hi - lo);
    let means: Vec<(usize, f64)> = s
        .series
        .values
        .iter()
        .enumerate()
        .filter_map(|(i, v)| stats(v).0.map(|m| (i, m)))
        .collect();
    let path: String = means
        .iter()
        .map(|&(i, m)| format!("{:.1},{:.1}", x(i), y(m)))
        .collect::<Vec<_>>()
        .join(" ");
    let bounds = {
        let mut b = vec![0usize];
        b.extend(s.change_points.iter().map(|c| c.index));
        b.push(h.points.len());
        b
    };
    html! {
        svg width=(w) height=(ht) viewBox=(format!("0 0 {w} {ht}")) role="img" {
            title { (s.series.name) }
            text x="4" y=(y(hi) + 10.0) font-size="10" { (num(hi)) }
            text x="4" y=(y(lo) - 2.0) font-size="10" { (num(lo)) }
            polyline points=(path) fill="none" stroke="#89a" stroke-width="1" {}
            @for (i, v) in s.series.values.iter().enumerate() {
                @if let (_, Some(a), Some(b)) = stats(v) {
                    line x1=(x(i)) x2=(x(i)) y1=(y(a)) y2=(y(b)) stroke="#9ab" stroke-width="3" {}
                }
                @for val in v { circle cx=(x(i)) cy=(y(*val)) r="2" fill="#246" {} }
            }
            @for k in 0..bounds.len() - 1 {
                @let seg: Vec<f64> = s.series.values[bounds[k]..bounds[k + 1]].iter().filter_map(|v| stats(v).0).collect();
                @if !seg.is_empty() {
                    @let m = seg.iter().sum::<f64>() / seg.len() as f64;
                    line.segment x1=(x(bounds[k])) x2=(x(bounds[k + 1].saturating_sub(1))) y1=(y(m)) y2=(y(m)) stroke="#e80" stroke-width="1.5" {}
                }
            }
            @for c in &s.change_points {
                @let cx = (x(c.index) + x(c.index.saturating_sub(1))) / 2.0;
                line.changepoint x1=(cx) x2=(cx) y1="5" y2=(ht - 20.0) stroke=(if worse(s, c) { "#c00" } else { "#080" }) stroke-dasharray="4 3" {}
                text x=(cx + 3.0) y="14" font-size="11" fill=(if worse(s, c) { "#c00" } else { "#080" }) {
                    (label_of(h, c)) " " (pct(c.change_pct))
                }
            }
            text x=(pad) y=(ht - 5.0) font-size="10" { (h.points.first().map_or("", |p| p.label.as_str())) }
            text x=(w - pad) y=(ht - 5.0) font-size="10" text-anchor="end" { (h.points.last().map_or("", |p| p.label.as_str())) }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::history::{analyse, HistoryPoint, Series, SeriesKind};

    fn hostile() -> History {
        let points = (0..4)
            .map(|i| HistoryPoint {
                label: format!("c{i}\x1b[2J"),
                started: format!("2026-12-0{}T00:00:00Z", i + 1),
                run_ids: vec![format!("{i}")],
                hosts: vec!["h".into()],
                kernels: vec!["k".into()],
            })
            .collect();
        let series = vec![Series {
            kind: SeriesKind::Function,
            name: "evil\n<script>alert(1)</script>".into(),
            unit: "s".into(),
            higher_is_better: false,
            values: vec![vec![1.0], vec![1.1], vec![0.9], vec![1.0]],
        }];
        analyse("t\x07", "time", points, series)
    }

    #[test]
    fn foreign_names_are_escaped_in_text_csv_and_page() {
        let h = hostile();
        let mut text = Vec::new();
        write_text(&h, &mut text).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert!(
            text.contains("evil\\n<script>") && text.contains("History of t\\a"),
            "{text}"
        );
        assert!(!text.contains('\x1b') && !text.contains('\x07'));
        let mut csv = Vec::new();
        write_csv(&h, &mut csv).unwrap();
        let csv = String::from_utf8(csv).unwrap();
        // Data for programs keeps the exact bytes, RFC 4180 quoted (docs/security.md).
        assert_eq!(csv.matches("t\x07,function,").count(), 4);
        assert!(csv.contains("\"evil\n<script>alert(1)</script>\""), "{csv}");
        let mut page = Vec::new();
        write_html(&h, &mut page).unwrap();
        let page = String::from_utf8(page).unwrap();
        assert!(!page.contains("<script>"), "{page}");
        assert!(page.contains("evil\n&lt;script&gt;"));
        // Four points, one value each: four dots.
        assert_eq!(page.matches("<circle").count(), 4);
    }
}
