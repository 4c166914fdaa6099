//! The report for a mailing list (`--format mail`): plain text of at most [`WIDTH`]
//! columns, ready to paste into a reply. The same sections, numbers, verdicts and notes
//! as the text report, in narrower tables: a name that leaves no room for its numbers
//! gets a line of its own above them, and every sentence is wrapped.

use super::{fmt_pct, fmt_ratio, fmt_sec};
use crate::compare::bench::BenchRow;
use crate::compare::runs::{RunComparison, TestOutcome};
use crate::compare::stats::Mark;
use crate::compare::ProfileComparison;
use crate::model::shown::{escaped, Shown};
use std::io::{self, Write};

/// The widest line the mail report writes.
pub const WIDTH: usize = 80;

/// The widest function name that keeps its row in the CPU Time Analysis: kernel names
/// run to 40 characters.
const NAME_WIDTH: usize = 40;

/// The verdicts of the CPU Time Analysis, short enough for its 80 columns (five at most).
fn short_verdict(m: Mark) -> &'static str {
    match m {
        Mark::Significant => "sig",
        Mark::SamplingOnly => "sampl",
        Mark::Noise => "noise",
        Mark::NotTested | Mark::BelowCutoff => "n/a",
    }
}

/// What the short verdicts say.
const VERDICT_LEGEND: &str = "95% test: sig significant, sampl beyond the sampling error only (run-to-run \
                              noise not measured), noise within the noise, n/a not tested.";

/// `text` wrapped at [`WIDTH`]: the first line starts with `first`, the others with
/// `rest`. A word longer than a line is cut, so no line is ever wider.
pub fn wrap(text: &str, first: &str, rest: &str) -> Vec<String> {
    let len = |s: &str| s.chars().count();
    let mut lines = Vec::new();
    let mut line = first.to_string();
    let mut has_word = false;
    for word in text.split_whitespace() {
        if has_word && len(&line) + 1 + len(word) > WIDTH {
            lines.push(std::mem::replace(&mut line, rest.to_string()));
            has_word = false;
        }
        if has_word {
            line.push(' ');
        }
        for c in word.chars() {
            // A word wider than a whole line is cut where the line ends.
            if len(&line) == WIDTH {
                lines.push(std::mem::replace(&mut line, rest.to_string()));
            }
            line.push(c);
        }
        has_word = true;
    }
    lines.push(line);
    lines
}

/// `text` wrapped, its control characters escaped: names and notes hold names of other
/// users' processes and functions.
fn para(out: &mut dyn Write, text: &str, first: &str, rest: &str) -> io::Result<()> {
    for l in wrap(&escaped(text), first, rest) {
        writeln!(out, "{}", l.trim_end())?;
    }
    Ok(())
}

/// A row of right-aligned `cells` after `name`: on one line when it fits in [`WIDTH`],
/// else the name alone on a line and the cells under the name's column.
fn row(out: &mut dyn Write, name: &str, name_width: usize, cells: &str) -> io::Result<()> {
    let name = &*escaped(name);
    if name.chars().count() <= name_width {
        return writeln!(out, "{name:<name_width$}{cells}").map(|_| ());
    }
    if name.chars().count() < WIDTH {
        writeln!(out, "{name}")?;
        return writeln!(out, "{:<name_width$}{cells}", "").map(|_| ());
    }
    para(out, name, "", "  ")?;
    writeln!(out, "{:<name_width$}{cells}", "")
}

/// An sd% column's cell: empty when no side is repeated (no column), `-` for a side of
/// one run (its spread is undefined, not 0).
fn sd_cell(sd: Option<f64>, shown: bool) -> String {
    match (shown, sd) {
        (false, _) => String::new(),
        (true, None) => format!("{:>6}", "-"),
        (true, Some(x)) => format!("{x:>6.1}"),
    }
}

fn bench(rows: &[BenchRow], out: &mut dyn Write) -> io::Result<()> {
    if rows.is_empty() {
        return writeln!(out, "(no benchmark results in either upout)");
    }
    let repeated = rows.iter().any(|r| r.noise.is_some());
    let head_sd = if repeated { "   sd%" } else { "" };
    let head_test = if repeated { "  95% test" } else { "" };
    writeln!(out, "Benchmark")?;
    writeln!(
        out,
        "  {:>10}{head_sd}{:>11}{head_sd}{:>8}{head_test}",
        "Run1", "Run2", "R2/R1"
    )?;
    for r in rows {
        let v = |x: Option<f64>| match x {
            Some(x) if r.unit == "sec" => format!("{x:.3}"),
            Some(x) => super::fmt_rate(x),
            None => String::new(),
        };
        let mut desc = r.description.clone();
        if r.lower_is_better {
            desc += " [sec, lower is better; ratio is R1/R2]";
        }
        para(out, &desc, "  ", "    ")?;
        let verdict = if repeated {
            format!("  {}", r.noise.as_ref().map_or("n/a", |n| n.verdict.word()))
        } else {
            String::new()
        };
        writeln!(
            out,
            "  {:>10}{}{:>11}{}{:>8}{verdict}",
            v(r.run1),
            sd_cell(r.sd_pct(1), repeated),
            v(r.run2),
            sd_cell(r.sd_pct(2), repeated),
            fmt_ratio(r.speed_ratio)
        )?;
    }
    if let Some(line) = super::text::bench_noise_line(rows) {
        para(out, &line, "", "")?;
    }
    Ok(())
}

/// The Profiling Summary, the CPU Time Analysis and the notes of one comparison.
pub fn render_profile(c: &ProfileComparison, out: &mut dyn Write) -> io::Result<()> {
    let (a, b) = (&c.run1, &c.run2);
    let m = &c.measure;
    let unit = format!("({})", m.unit);
    for w in &c.warnings {
        para(out, w, "NOTE: ", "  ")?;
    }
    if !c.warnings.is_empty() {
        writeln!(out)?;
    }
    writeln!(
        out,
        "{:<26}{:>12}{:>12}{:>8}",
        "Profiling Summary", "Run1", "Run2", "R2/R1"
    )?;
    writeln!(out, "{:<26}{unit:>12}{unit:>12}", "Sum of all cpus")?;
    writeln!(out, "{:<26}{:>12}{:>12}", "Number of cpu's", a.cpus, b.cpus)?;
    let repeated = a.repetitions > 1 || b.repetitions > 1;
    if repeated {
        writeln!(
            out,
            "{:<26}{:>12}{:>12}",
            "Repetitions (means below)", a.repetitions, b.repetitions
        )?;
    }
    for [name, x, y, r] in super::summary_lines(c) {
        writeln!(out, "{name:<26}{x:>12}{y:>12}{r:>8}")?;
    }
    writeln!(out)?;

    // Names of up to NAME_WIDTH columns keep their row: the numbers get the other 40
    // (with repetitions an sd% column a side instead of % of R1), each 8 wide.
    let units = format!("({})", m.unit);
    // A unit too wide for its columns is said once, on the cutoff line.
    let (unit_cell, unit_note) = match units.chars().count() <= 8 {
        true => (units.as_str(), String::new()),
        false => ("", format!(", values in {}", m.unit)),
    };
    let (head, unit_row) = if repeated {
        (
            format!("{:>8}{:>5}{:>8}{:>5}{:>8} 95%", "Run1", "sd%", "Run2", "sd%", "R2-R1"),
            format!("{unit_cell:>8}{:>5}{unit_cell:>8}{:>5}{unit_cell:>8}", "", ""),
        )
    } else {
        (
            format!("{:>8}{:>8}{:>8}{:>7}  95%", "Run1", "Run2", "R2-R1", "%R1CPU"),
            format!("{unit_cell:>8}{unit_cell:>8}{unit_cell:>8}"),
        )
    };
    writeln!(out, "{:<NAME_WIDTH$}{head}", "CPU Time Analysis")?;
    let cutoff = format!("cutoff={:.2}%{unit_note}", c.cutoff_pct);
    if cutoff.chars().count() > NAME_WIDTH {
        writeln!(out, "{cutoff}")?;
        writeln!(out, "{:<NAME_WIDTH$}{}", "", unit_row.trim_end())?;
    } else {
        writeln!(out, "{}", format!("{cutoff:<NAME_WIDTH$}{unit_row}").trim_end())?;
    }
    writeln!(out, "{}", "-".repeat(WIDTH - 1))?;
    let value = |x: f64| fmt_sec(x / m.scale);
    let opt = |x: Option<f64>| x.map(value).unwrap_or_default();
    let sd = |x: Option<f64>| x.map_or("-".to_string(), |x| format!("{x:.1}"));
    for r in c.listed() {
        let cells = if repeated {
            format!(
                "{:>8}{:>5}{:>8}{:>5}{:>8} {}",
                opt(r.run1),
                sd(r.run1_sd_pct),
                opt(r.run2),
                sd(r.run2_sd_pct),
                value(r.delta),
                short_verdict(r.noise.verdict)
            )
        } else {
            format!(
                "{:>8}{:>8}{:>8}{:>7}  {}",
                opt(r.run1),
                opt(r.run2),
                value(r.delta),
                fmt_pct(r.delta_pct_of_run1_cpu),
                short_verdict(r.noise.verdict)
            )
        };
        row(out, &r.function, NAME_WIDTH, cells.trim_end())?;
    }
    para(out, VERDICT_LEGEND, "", "  ")?;
    if let Some(f) = super::text::left_out(c) {
        para(out, &f, "", " ")?;
    }
    writeln!(out)?;
    let mut notes = Vec::new();
    super::text::render_notes(c, &mut notes)?;
    for l in String::from_utf8_lossy(&notes).lines() {
        para(out, l, "", "  ")?;
    }
    Ok(())
}

/// A whole upcmp comparison for a mailing list.
pub fn render_runs(r: &RunComparison, out: &mut dyn Write) -> io::Result<()> {
    let digest = super::activity::digest_lines(r);
    if !digest.is_empty() {
        writeln!(out, "Digest")?;
        for (name, parts) in digest {
            para(out, &parts.join("; "), &format!("  {name}: "), "      ")?;
        }
        writeln!(out)?;
    }
    for w in &r.warnings {
        para(out, w, "WARNING: ", "  ")?;
    }
    if !r.warnings.is_empty() {
        writeln!(out)?;
    }
    para(out, &r.dir1.display().to_string(), "1: ", "   ")?;
    para(out, &r.dir2.display().to_string(), "2: ", "   ")?;
    writeln!(out)?;
    writeln!(out, "System")?;
    if r.system_differences.is_empty() {
        para(out, &super::text::system_summary(r), "  ", "  ")?;
    } else {
        for d in &r.system_differences {
            para(out, &format!("{}: '{}' vs '{}'", d.key, d.run1, d.run2), "  ", "    ")?;
        }
        if let Some(n) = super::text::notes_below(r) {
            para(out, &n, "  ", "  ")?;
        }
    }
    // The text report's lines, the options counted beyond a screenful: a mail is read
    // whole, and the page and the JSON list them all.
    for line in super::text::settings_lines(r) {
        let indent = " ".repeat(2 + line.len() - line.trim_start().len());
        para(out, &line, &indent, &format!("{indent}  "))?;
    }
    writeln!(out)?;
    for t in &r.tests {
        let name = format!(" {} ", Shown(&t.name));
        writeln!(out, "{:*^78}", name)?;
        match &t.outcome {
            TestOutcome::OnlyIn { run, dir } => {
                para(
                    out,
                    &format!("Only in run {run} ({}): nothing to compare.", dir.display()),
                    "",
                    "  ",
                )?;
            }
            TestOutcome::Compared {
                bench: rows,
                profile,
                notes,
                ..
            } => {
                for n in notes {
                    para(out, n, "NOTE: ", "  ")?;
                }
                if !notes.is_empty() {
                    writeln!(out)?;
                }
                if profile.of_runs || !rows.is_empty() {
                    bench(rows, out)?;
                    writeln!(out)?;
                }
                render_profile(profile, out)?;
            }
        }
        writeln!(out)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrapping_never_passes_the_width() {
        let text = "word ".repeat(40) + &"x".repeat(200) + " end";
        let lines = wrap(&text, "NOTE: ", "  ");
        assert!(lines.iter().all(|l| l.chars().count() <= WIDTH), "{lines:#?}");
        assert!(lines[0].starts_with("NOTE: word word"));
        assert!(lines[1].starts_with("  word"));
        assert!(lines.last().unwrap().ends_with("x end"), "{lines:#?}");
        let joined: String = lines.concat().replace(' ', "").replace("NOTE:", "");
        assert_eq!(joined, "word".repeat(40) + &"x".repeat(200) + "end");
        assert_eq!(wrap("", "a: ", ""), ["a: "]);
        assert_eq!(wrap("one two", "", ""), ["one two"]);
    }
}
