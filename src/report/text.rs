//! The text report, in the layout of the original upcmp (seed 001's example).

use super::{fmt_pct, fmt_ratio, fmt_sec};
use crate::compare::bench::BenchRow;
use crate::compare::runs::{RunComparison, TestComparison, TestOutcome};
use crate::compare::{ratio, ProfileComparison};
use prettytable::format::{FormatBuilder, LinePosition, LineSeparator, TableFormat};
use prettytable::{Cell, Row, Table};
use std::io::{self, Write};

fn plain_format() -> TableFormat {
    FormatBuilder::new()
        .column_separator(' ')
        .separators(&[LinePosition::Title], LineSeparator::new('-', '-', '-', '-'))
        .padding(0, 0)
        .build()
}

fn right(s: impl Into<String>) -> Cell {
    Cell::new(&s.into()).style_spec("r")
}

fn left(s: impl Into<String>) -> Cell {
    Cell::new(&s.into())
}

fn print_table(t: &Table, out: &mut dyn Write) -> io::Result<()> {
    t.print(out).map(|_| ())
}

/// Section 1: the benchmark results side by side.
pub fn render_bench(rows: &[BenchRow], out: &mut dyn Write) -> io::Result<()> {
    if rows.is_empty() {
        return writeln!(out, "(no benchmark results in either upout)");
    }
    let mut t = Table::new();
    t.set_format(plain_format());
    t.set_titles(Row::new(vec![right("1"), right("2"), left(""), left("Operation")]));
    for r in rows {
        let v = |x: Option<f64>| match x {
            Some(x) if r.unit == "sec" => format!("{x:.3}"),
            Some(x) => format!("{x:.1}"),
            None => String::new(),
        };
        let ratio = r
            .speed_ratio
            .map(|x| format!("({x:5.2})"))
            .unwrap_or_else(|| "(  -  )".into());
        let mut desc = r.description.clone();
        if r.lower_is_better {
            desc += " [sec, lower is better; ratio is R1/R2]";
        }
        t.add_row(Row::new(vec![
            right(format!("{:>8}", v(r.run1))),
            right(format!(" {:>8}", v(r.run2))),
            right(format!(" {ratio}")),
            left(format!(" {desc}")),
        ]));
    }
    print_table(&t, out)
}

/// Sections 2 and 3: the profiling summary and the per-function table, with notes.
pub fn render_profile(c: &ProfileComparison, out: &mut dyn Write) -> io::Result<()> {
    let (a, b) = (&c.run1, &c.run2);
    let mut t = Table::new();
    t.set_format(plain_format());
    t.set_titles(Row::new(vec![
        left("Profiling Summary\nSum of all cpus"),
        right("Run1\n(sec)"),
        right("Run2\n(sec)"),
        right("R2/R1\n"),
    ]));
    t.add_row(Row::new(vec![
        left("Number of cpu's"),
        right(a.cpus.to_string()),
        right(b.cpus.to_string()),
        right(""),
    ]));
    let mut line = |name: &str, x: f64, y: f64| {
        t.add_row(Row::new(vec![
            left(name),
            right(format!("    {}", fmt_sec(x))),
            right(format!("    {}", fmt_sec(y))),
            right(format!("    {}", fmt_ratio(ratio(x, y)))),
        ]));
    };
    line("Elapsed time", a.elapsed_sec, b.elapsed_sec);
    line("Idle time", a.idle_sec, b.idle_sec);
    line("CPU time", a.cpu_sec, b.cpu_sec);
    if a.lost_sec > 0.0 || b.lost_sec > 0.0 {
        line("Lost samples", a.lost_sec, b.lost_sec);
    }
    print_table(&t, out)?;
    writeln!(out)?;

    let mut t = Table::new();
    t.set_format(plain_format());
    t.set_titles(Row::new(vec![
        left(format!("CPU Time Analysis\nFunction (cutoff={:.2}%)", c.cutoff_pct)),
        right("Run1\n(sec)"),
        right("Run2\n(sec)"),
        right("R2-R1\n(sec)"),
        right("R2-R1/total R1 CPU\n(%)"),
    ]));
    let opt = |x: Option<f64>| x.map(fmt_sec).unwrap_or_default();
    for r in c.listed() {
        t.add_row(Row::new(vec![
            left(r.function.clone()),
            right(format!("  {}", opt(r.run1_sec))),
            right(format!("  {}", opt(r.run2_sec))),
            right(format!("  {}", fmt_sec(r.delta_sec))),
            right(format!("  {}", fmt_pct(r.delta_pct_of_run1_cpu))),
        ]));
    }
    print_table(&t, out)?;
    let hidden = c.rows.len() - c.listed().count();
    if hidden > 0 {
        writeln!(
            out,
            "({hidden} functions below the cutoff are in results.csv and results.json)"
        )?;
    }
    render_notes(c, out)
}

fn msec(period_sec: f64) -> String {
    let ms = period_sec * 1000.0;
    let s = format!("{ms:.6}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

fn render_notes(c: &ProfileComparison, out: &mut dyn Write) -> io::Result<()> {
    let (a, b) = (&c.run1, &c.run2);
    if a.period_sec == b.period_sec && a.event == b.event {
        writeln!(
            out,
            "Notes: {} msec profiling sample rate ({}).",
            msec(a.period_sec),
            a.event
        )?;
    } else {
        writeln!(
            out,
            "Notes: {} msec ({}) in run 1, {} msec ({}) in run 2 profiling sample rate.",
            msec(a.period_sec),
            a.event,
            msec(b.period_sec),
            b.event
        )?;
    }
    let quoted = |set: &[String]| set.iter().map(|s| format!("\"{s}\"")).collect::<Vec<_>>().join(", ");
    writeln!(out, "Idle time calculated as elapsed - CPU time - lost samples.")?;
    if a.idle_set == b.idle_set {
        writeln!(
            out,
            "Idle functions (not counted as CPU time, not listed): {}.",
            quoted(&a.idle_set)
        )?;
    } else {
        writeln!(out, "Idle functions, run 1: {}.", quoted(&a.idle_set))?;
        writeln!(out, "Idle functions, run 2: {}.", quoted(&b.idle_set))?;
    }
    Ok(())
}

fn banner(name: &str) -> String {
    let stars = "*".repeat(30);
    format!("{stars} {name} results {stars}")
}

/// One test of an upcmp report.
pub fn render_test(t: &TestComparison, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "{}", banner(&t.name))?;
    match &t.outcome {
        TestOutcome::OnlyIn { run, dir } => {
            writeln!(out, "Only in run {run} ({}): nothing to compare.", dir.display())?;
        }
        TestOutcome::Compared {
            upout1,
            upout2,
            bench,
            profile,
            notes,
        } => {
            writeln!(out, "1: {}", upout1.display())?;
            writeln!(out, "2: {}", upout2.display())?;
            for n in notes {
                writeln!(out, "NOTE: {n}")?;
            }
            writeln!(out)?;
            render_bench(bench, out)?;
            writeln!(out)?;
            render_profile(profile, out)?;
        }
    }
    writeln!(out)
}

/// The whole upcmp report.
pub fn render_runs(r: &RunComparison, out: &mut dyn Write) -> io::Result<()> {
    for w in &r.warnings {
        writeln!(out, "WARNING: {w}")?;
    }
    if !r.warnings.is_empty() {
        writeln!(out)?;
    }
    writeln!(out, "1: {}", r.dir1.display())?;
    writeln!(out, "2: {}", r.dir2.display())?;
    writeln!(out)?;
    writeln!(out, "System")?;
    if r.system_differences.is_empty() {
        writeln!(
            out,
            "  no differences between the two system descriptions that can bias the comparison"
        )?;
    } else {
        let mut t = Table::new();
        t.set_format(FormatBuilder::new().column_separator(' ').padding(2, 0).build());
        t.set_titles(Row::new(vec![left("item"), left("run 1"), left("run 2")]));
        for d in &r.system_differences {
            t.add_row(Row::new(vec![
                left(d.key.clone()),
                left(d.run1.clone()),
                left(d.run2.clone()),
            ]));
        }
        print_table(&t, out)?;
    }
    writeln!(out)?;
    for t in &r.tests {
        render_test(t, out)?;
    }
    Ok(())
}
