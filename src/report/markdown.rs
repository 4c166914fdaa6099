//! Markdown (GitHub-flavoured tables), for pull requests and mailing lists: the same
//! sections and numbers as the text report.

use super::{fmt_pct, fmt_ratio, fmt_sec, msec};
use crate::compare::runs::{RunComparison, TestOutcome};
use crate::compare::{Basis, ProfileComparison};
use crate::model::shown::escaped;
use crate::report::text::shown_path;
use std::io::{self, Write};

// `|` would end a table cell early; `*`, `_` and backquotes would start emphasis or code.
// Control characters are escaped as in every text report (`\x1b`, `\n`): a newline would
// end the table row, and the page is also read in a terminal.
fn cell(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if matches!(c, '|' | '*' | '_' | '`' | '<' | '>' | '[' | ']' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    match escaped(&out) {
        std::borrow::Cow::Borrowed(_) => out,
        std::borrow::Cow::Owned(e) => e,
    }
}

/// The Profiling Summary and the CPU Time Analysis of one comparison.
pub fn render_profile(c: &ProfileComparison, out: &mut dyn Write) -> io::Result<()> {
    let (a, b) = (&c.run1, &c.run2);
    let m = &c.measure;
    let unit = cell(&m.unit);
    for w in &c.warnings {
        writeln!(out, "> **Note:** {}\n", cell(w))?;
    }
    writeln!(
        out,
        "| Profiling Summary (sum of all CPUs) | Run1 ({unit}) | Run2 ({unit}) | R2/R1 |"
    )?;
    writeln!(out, "|:--|--:|--:|--:|")?;
    writeln!(out, "| Number of CPUs | {} | {} | |", a.cpus, b.cpus)?;
    for [name, x, y, r] in super::summary_lines(c) {
        writeln!(out, "| {name} | {x} | {y} | {r} |")?;
    }
    writeln!(out)?;
    writeln!(
        out,
        "| Function (cutoff {:.2}%) | Run1 ({unit}) | Run2 ({unit}) | R2-R1 ({unit}) | R2-R1 / total R1 CPU (%) | 95% test |",
        c.cutoff_pct
    )?;
    writeln!(out, "|:--|--:|--:|--:|--:|:--|")?;
    let value = |x: f64| fmt_sec(x / m.scale);
    let opt = |x: Option<f64>| x.map(value).unwrap_or_default();
    for r in c.listed() {
        writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} |",
            cell(&r.function),
            opt(r.run1),
            opt(r.run2),
            value(r.delta),
            fmt_pct(r.delta_pct_of_run1_cpu),
            r.noise.verdict.word()
        )?;
    }
    writeln!(out)?;
    let below = c.rows.iter().filter(|r| !r.above_cutoff).count();
    let quiet = c.rows.iter().filter(|r| r.above_cutoff && !r.listed).count();
    if below > 0 {
        writeln!(out, "{below} functions below the cutoff are not shown.")?;
    }
    if quiet > 0 {
        writeln!(out, "{quiet} functions within the noise are not shown.")?;
    }
    let per_sample = |s: &crate::compare::ProfileSummary| match m.basis {
        Basis::SampledTime => format!("{} ms", msec(s.period * 1e-9)),
        _ => format!("{:.0} {}", s.period, cell(&s.event)),
    };
    let idle = if m.is_time() {
        " Idle = elapsed - CPU - lost."
    } else {
        ""
    };
    writeln!(
        out,
        "Sampling: {} ({} per sample in run 1, {} in run 2).{idle}",
        cell(&a.event),
        per_sample(a),
        per_sample(b)
    )?;
    for line in super::text::noise_notes(c) {
        writeln!(out, "\n{}", cell(&line))?;
    }
    Ok(())
}

/// A whole upcmp comparison: warnings, then per test its benchmark and profile tables.
pub fn render_runs(r: &RunComparison, out: &mut dyn Write) -> io::Result<()> {
    writeln!(
        out,
        "**Run 1:** `{}`  \n**Run 2:** `{}`\n",
        shown_path(&r.dir1),
        shown_path(&r.dir2)
    )?;
    for w in &r.warnings {
        writeln!(out, "> **Warning:** {}", cell(w))?;
    }
    if !r.warnings.is_empty() {
        writeln!(out)?;
    }
    if !r.system_differences.is_empty() {
        writeln!(out, "| System item | Run 1 | Run 2 |\n|:--|:--|:--|")?;
        for d in &r.system_differences {
            writeln!(out, "| {} | {} | {} |", cell(&d.key), cell(&d.run1), cell(&d.run2))?;
        }
        writeln!(out)?;
        if let Some(n) = super::text::notes_below(r) {
            writeln!(out, "{}\n", cell(&n))?;
        }
    } else {
        writeln!(out, "System: {}\n", cell(&super::text::system_summary(r)))?;
    }
    render_settings(r, out)?;
    for t in &r.tests {
        writeln!(out, "### {}\n", cell(&t.name))?;
        match &t.outcome {
            TestOutcome::OnlyIn { run, dir } => {
                writeln!(out, "Only in run {run} (`{}`): nothing to compare.\n", shown_path(dir))?;
            }
            TestOutcome::Compared {
                bench,
                profile,
                notes,
                counters,
                ..
            } => {
                for n in notes {
                    writeln!(out, "> **Note:** {}", cell(n))?;
                }
                if !notes.is_empty() {
                    writeln!(out)?;
                }
                if !bench.is_empty() {
                    writeln!(
                        out,
                        "| Operation | Run1 | Run2 | Speed R2 vs R1 | 95% test |\n|:--|--:|--:|--:|:--|"
                    )?;
                    for b in bench {
                        let v = |x: Option<f64>| x.map(|x| format!("{x:.3}")).unwrap_or_default();
                        writeln!(
                            out,
                            "| {} ({}) | {} | {} | {} | {} |",
                            cell(&b.description),
                            cell(&b.unit),
                            v(b.run1),
                            v(b.run2),
                            fmt_ratio(b.speed_ratio),
                            b.noise.as_ref().map_or("n/a", |n| n.verdict.word())
                        )?;
                    }
                    if let Some(line) = super::text::bench_noise_line(bench) {
                        writeln!(out, "\n{}", cell(&line))?;
                    }
                    writeln!(out)?;
                }
                render_profile(profile, out)?;
                writeln!(out)?;
                render_counters(counters, out)?;
            }
        }
    }
    Ok(())
}

/// The kernel settings that differ, every one of them: the configuration's options in a
/// folded block of their own when there are more than the text report lists.
fn render_settings(r: &RunComparison, out: &mut dyn Write) -> io::Result<()> {
    use crate::compare::runs::SystemDifference;
    use crate::compare::settings::is_config;
    let d = &r.setting_differences;
    if d.is_empty() {
        return Ok(());
    }
    let table = |out: &mut dyn Write, head: &str, rows: &[&SystemDifference]| -> io::Result<()> {
        writeln!(out, "| {head} | Run 1 | Run 2 |\n|:--|:--|:--|")?;
        for x in rows {
            let key = x.key.strip_prefix("config.").unwrap_or(&x.key);
            writeln!(out, "| {} | {} | {} |", cell(key), cell(&x.run1), cell(&x.run2))?;
        }
        writeln!(out)
    };
    writeln!(
        out,
        "Kernel settings that differ ({}; each file `settings` of the runs):\n",
        d.len()
    )?;
    let (config, other): (Vec<&SystemDifference>, Vec<&SystemDifference>) = d.iter().partition(|x| is_config(x));
    // The text report's order: the other settings, then the configuration's options.
    if config.len() <= super::text::CONFIG_LINES {
        return table(out, "Setting", &[other, config].concat());
    }
    if !other.is_empty() {
        table(out, "Setting", &other)?;
    }
    writeln!(
        out,
        "<details><summary>Kernel configuration: {} options differ</summary>\n",
        config.len()
    )?;
    table(out, "Option", &config)?;
    writeln!(out, "</details>\n")
}

/// System Activity: the counters the text report lists.
fn render_counters(rows: &[crate::compare::counters::CounterRow], out: &mut dyn Write) -> io::Result<()> {
    use super::activity::{counter_label, fmt_count};
    let listed: Vec<_> = rows.iter().filter(|r| r.listed).collect();
    if listed.is_empty() {
        return Ok(());
    }
    writeln!(
        out,
        "| Counter | Run1 | Run2 | Change | Run1/s | Run2/s | 95% test |\n|:--|--:|--:|--:|--:|--:|:--|"
    )?;
    let v = |x: Option<f64>| x.map(fmt_count).unwrap_or_else(|| "absent".into());
    for r in listed {
        writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} |",
            cell(&counter_label(r)),
            v(r.run1),
            v(r.run2),
            r.change.map(|c| format!("{c:+.1}%")).unwrap_or_else(|| "-".into()),
            v(r.per_sec1),
            v(r.per_sec2),
            r.verdict.word()
        )?;
    }
    writeln!(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::{compare_profiles, CompareOptions};
    use crate::store::prfout::parse;

    #[test]
    fn tables_escape_and_align() {
        let text = "upcmp-prfout 1\ntest t\nevent cpu-clock\nperiod-sec 0.001\ncpus 1\nwall-sec 2\n\
                    idle-set idle\ncpu 0 samples 1500 lost 0 throttled 0\nfunctions 2\n\
                    1000 [kernel] __do_sys|x\n500 [kernel] idle\nend\n";
        let p = parse(text, "p").unwrap();
        let c = compare_profiles(&p, &p, &CompareOptions::default());
        let mut out = Vec::new();
        render_profile(&c, &mut out).unwrap();
        let md = String::from_utf8(out).unwrap();
        assert!(md.contains("| Elapsed time | 2.000 | 2.000 | 1.00 |"), "{md}");
        assert!(
            md.contains("| \\_\\_do\\_sys\\|x | 1.000 | 1.000 | 0.000 | 0.00 | noise |"),
            "{md}"
        );
        // Every table row has as many cells as its header.
        for block in md.split("\n\n").filter(|b| b.starts_with('|')) {
            let widths: Vec<usize> = block
                .lines()
                .map(|l| l.replace("\\|", "").matches('|').count())
                .collect();
            assert!(widths.windows(2).all(|w| w[0] == w[1]), "{block}");
        }
    }
}
