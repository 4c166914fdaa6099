//! The text report, in the layout of the original upcmp (seed 001's example).

use super::{fmt_pct, fmt_sec, msec};
use crate::compare::bench::{first_detectable_pct, BenchRow};
use crate::compare::runs::{RunComparison, TestComparison, TestOutcome};
use crate::compare::stats::{NoiseTest, NotTested, Prior, EXACT_BELOW, FIT_MIN_COUNT};
use crate::compare::{Basis, Measure, Method, ProfileComparison, ProfileSummary, Significance};
use crate::model::shown::{escaped, Shown};
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

fn noise_word(n: &Significance) -> &'static str {
    n.verdict.word()
}

/// The line under the benchmark table: what the repetitions resolve of the first
/// operation, or that one run a side measured no run-to-run noise.
pub(crate) fn bench_noise_line(rows: &[BenchRow]) -> Option<String> {
    if let Some((r, d)) = first_detectable_pct(rows) {
        return Some(format!(
            "Benchmark ({}): an observed change below {:.1}% is not marked (at its level after the adjustment, \
             p < {}); a true change of about {:.1}% is detected 80% of the time.",
            r.description,
            d.observed,
            fmt_level(r.noise.and_then(|n| n.level)),
            d.true_change_80
        ));
    }
    // Rows of different benchmarks are not tested either, whatever their repetitions.
    let single = |r: &BenchRow| r.noise.is_none() && r.run1_values.len() <= 1 && r.run2_values.len() <= 1;
    (!rows.is_empty() && rows.iter().all(single)).then(|| {
        "Benchmark values: one run a side, so their run-to-run noise was not measured and no change is tested."
            .to_string()
    })
}

/// Section 1: the benchmark results side by side (with repetitions: means, their
/// standard deviation in %, and the verdict of the repetitions' test).
pub fn render_bench(rows: &[BenchRow], out: &mut dyn Write) -> io::Result<()> {
    if rows.is_empty() {
        return writeln!(out, "(no benchmark results in either upout)");
    }
    let repeated = rows
        .iter()
        .any(|r| r.noise.is_some() || r.run1_values.len() > 1 || r.run2_values.len() > 1);
    let mut t = Table::new();
    t.set_format(plain_format());
    let mut titles = vec![right("1")];
    if repeated {
        titles.push(right(" sd%"));
    }
    titles.push(right("2"));
    if repeated {
        titles.extend([right(" sd%"), left(""), left(" 95% test")]);
    } else {
        titles.push(left(""));
    }
    titles.push(left("Operation"));
    t.set_titles(Row::new(titles));
    for r in rows {
        let v = |x: Option<f64>| match x {
            Some(x) if r.unit == "sec" => format!("{x:.3}"),
            Some(x) => super::fmt_rate(x),
            None => String::new(),
        };
        let ratio = r
            .speed_ratio
            .map(|x| format!("({x:5.2})"))
            .unwrap_or_else(|| "(  -  )".into());
        let mut desc = escaped(&r.description).into_owned();
        if r.lower_is_better {
            desc += " [sec, lower is better; ratio is R1/R2]";
        }
        let mut cells = vec![right(format!("{:>8}", v(r.run1)))];
        if repeated {
            cells.push(right(r.sd_pct(1).map_or(" -".into(), |x| format!(" {x:.1}"))));
        }
        cells.push(right(format!(" {:>8}", v(r.run2))));
        if repeated {
            cells.push(right(r.sd_pct(2).map_or(" -".into(), |x| format!(" {x:.1}"))));
        }
        cells.push(right(format!(" {ratio}")));
        if repeated {
            cells.push(left(format!(" {}", r.noise.as_ref().map_or("n/a", noise_word))));
        }
        cells.push(left(format!(" {desc}")));
        t.add_row(Row::new(cells));
    }
    print_table(&t, out)?;
    if let Some(line) = bench_noise_line(rows) {
        writeln!(out, "{line}")?;
    }
    Ok(())
}

/// Sections 2 and 3: the profiling summary and the per-function table, with notes.
pub fn render_profile(c: &ProfileComparison, out: &mut dyn Write) -> io::Result<()> {
    let (a, b) = (&c.run1, &c.run2);
    let m = &c.measure;
    let unit = format!("({})", m.unit);
    for w in &c.warnings {
        writeln!(out, "NOTE: {}", Shown(w))?;
    }
    if !c.warnings.is_empty() {
        writeln!(out)?;
    }
    let mut t = Table::new();
    t.set_format(plain_format());
    t.set_titles(Row::new(vec![
        left("Profiling Summary\nSum of all cpus"),
        right(format!("Run1\n{unit}")),
        right(format!("Run2\n{unit}")),
        right("R2/R1\n"),
    ]));
    t.add_row(Row::new(vec![
        left("Number of cpu's"),
        right(a.cpus.to_string()),
        right(b.cpus.to_string()),
        right(""),
    ]));
    let repeated = a.repetitions > 1 || b.repetitions > 1;
    if repeated {
        t.add_row(Row::new(vec![
            left("Repetitions (means below)"),
            right(a.repetitions.to_string()),
            right(b.repetitions.to_string()),
            right(""),
        ]));
    }
    // Runs in different units, or of different work, have no ratio of values.
    for [name, x, y, r] in super::summary_lines(c) {
        t.add_row(Row::new(vec![
            left(name),
            right(format!("    {x}")),
            right(format!("    {y}")),
            right(format!("    {r}")),
        ]));
    }
    print_table(&t, out)?;
    writeln!(out)?;

    let mut t = Table::new();
    t.set_format(plain_format());
    let mut titles = vec![
        left(format!("CPU Time Analysis\nFunction (cutoff={:.2}%)", c.cutoff_pct)),
        right(format!("Run1\n{unit}")),
    ];
    if repeated {
        titles.push(right("\n sd%"));
    }
    titles.push(right(format!("Run2\n{unit}")));
    if repeated {
        titles.push(right("\n sd%"));
    }
    titles.extend([
        right(format!("R2-R1\n{unit}")),
        right("R2-R1/total R1 CPU\n(%)"),
        left("\n 95% test"),
    ]);
    t.set_titles(Row::new(titles));
    let value = |x: f64| fmt_sec(x / m.scale);
    let opt = |x: Option<f64>| x.map(value).unwrap_or_default();
    for r in c.listed() {
        // One run has no spread: its sd% is undefined (None), not 0.
        let sd = |x: Option<f64>| x.map_or_else(|| " -".into(), |x| format!(" {x:.1}"));
        let mut cells = vec![left(escaped(&r.function)), right(format!("  {}", opt(r.run1)))];
        if repeated {
            cells.push(right(sd(r.run1_sd_pct)));
        }
        cells.push(right(format!("  {}", opt(r.run2))));
        if repeated {
            cells.push(right(sd(r.run2_sd_pct)));
        }
        // A function of one run only has no ordinary delta: its time is all there is.
        let delta = match r.only_in() {
            Some(k) => format!("  only in run {k}"),
            None => format!("  {}", value(r.delta)),
        };
        cells.extend([
            right(delta),
            right(format!("  {}", fmt_pct(r.delta_pct_of_run1_cpu))),
            left(format!(" {}", noise_word(&r.noise))),
        ]);
        t.add_row(Row::new(cells));
    }
    print_table(&t, out)?;
    if let Some(f) = left_out(c) {
        writeln!(out, "{f}")?;
    }
    for line in matching_notes(c) {
        writeln!(out, "{line}")?;
    }
    render_notes(c, out)
}

/// The notes on how the listed rows were matched across the runs: the clones folded
/// into a row, the functions that moved between a module and the core kernel, and what
/// a row of one run only was tested for (shared with the other text renderers). Each
/// name in them is escaped here, where the note is made: every renderer writes them as
/// they are.
pub(crate) fn matching_notes(c: &ProfileComparison) -> Vec<String> {
    let value = |x: Option<f64>| x.map_or_else(|| "-".to_string(), |x| fmt_sec(x / c.measure.scale));
    let mut notes = Vec::new();
    for r in c.listed() {
        if !r.clones.is_empty() {
            let each: Vec<String> = r
                .clones
                .iter()
                .map(|k| format!("{} {}/{}", Shown(&k.name), value(k.run1), value(k.run2)))
                .collect();
            notes.push(format!(
                "Clones: {} is one row of {} (run 1/run 2; --keep-clones lists them apart).",
                Shown(&r.function),
                each.join(", ")
            ));
        }
        if let Some(m) = &r.matched {
            notes.push(format!("Moved: {}: {}; one row.", Shown(&r.function), Shown(m)));
        }
    }
    for k in [1, 2] {
        let only: Vec<std::borrow::Cow<'_, str>> = c
            .listed()
            .filter(|r| r.only_in() == Some(k))
            .map(|r| escaped(&r.function))
            .collect();
        if !only.is_empty() {
            let other = 3 - k;
            notes.push(format!(
                "Only in run {k}: {} (no symbol of that name, or of its clones, in run {other}); the 95% test of \
                 such a row asks whether its samples could arise from none.{}",
                only.join(", "),
                if k == 1 {
                    " Inlined into its callers in run 2? Call stacks (upsrun, or recordings made with -g) say \
                     where its time went, in the stack comparison."
                } else {
                    ""
                }
            ));
        }
    }
    notes
}

/// What the function table left out and where it is: RESULTS_DIR's files for upcmp,
/// `--format csv|json` for prfcmp, which writes no file.
pub(crate) fn left_out(c: &ProfileComparison) -> Option<String> {
    let below = c.rows.iter().filter(|r| !r.above_cutoff).count();
    let hidden = c.rows.iter().filter(|r| r.above_cutoff && !r.listed).count();
    let where_ = if c.of_runs {
        "are in results.csv and results.json"
    } else {
        "are listed by --format csv or --format json"
    };
    match (below, hidden) {
        (0, 0) => None,
        (below, 0) => Some(format!("({below} functions below the cutoff {where_})")),
        (0, hidden) => Some(format!(
            "({hidden} functions within the noise, hidden by --hide-noise, {where_})"
        )),
        (below, hidden) => Some(format!(
            "({hidden} functions within the noise, hidden by --hide-noise, and {below} below the cutoff {where_})"
        )),
    }
}

/// A run's period, for the notes: milliseconds for time, else counts of the event.
fn period_text(s: &ProfileSummary, m: &Measure) -> String {
    match m.basis {
        Basis::SampledTime => format!("{} msec", msec(s.period * 1e-9)),
        _ => format!("{:.0} {}", s.period, s.event),
    }
}

/// How one run's samples were taken and weighed, for the notes.
fn sampling(s: &ProfileSummary, m: &Measure) -> String {
    match (m.basis, s.fixed_period) {
        (Basis::SampledTime, true) => format!("{} profiling sample rate ({})", period_text(s, m), s.event),
        (_, true) => format!("{} sampled every {}", s.event, period_text(s, m)),
        (_, false) => format!(
            "{} sampled at a varying period (mean {}); every sample weighs its period",
            s.event,
            period_text(s, m)
        ),
    }
}

pub(crate) fn render_notes(c: &ProfileComparison, out: &mut dyn Write) -> io::Result<()> {
    let (a, b) = (&c.run1, &c.run2);
    let m = &c.measure;
    let (sa, sb) = (sampling(a, m), sampling(b, m));
    if sa == sb {
        writeln!(out, "Notes: {sa}.")?;
    } else if a.event == b.event && !a.fixed_period && !b.fixed_period {
        writeln!(
            out,
            "Notes: {} sampled at a varying period (mean {} in run 1, {} in run 2); every sample weighs its period.",
            a.event,
            period_text(a, m),
            period_text(b, m)
        )?;
    } else {
        writeln!(out, "Notes: run 1: {sa}; run 2: {sb}.")?;
    }
    match m.basis {
        Basis::BusyTime => writeln!(
            out,
            "Time: each function's share of its CPU's {} outside idle functions x that CPU's busy time \
             from /proc/stat (docs/formulas.md).",
            a.event
        )?,
        Basis::EventCount => writeln!(
            out,
            "Values are counts of {} in {}; a recording does not say how busy each CPU was, so they are \
             not turned into time.",
            a.event, m.unit
        )?,
        Basis::Share => writeln!(
            out,
            "Values are each run's % of its own total: the runs were measured in different units."
        )?,
        Basis::SampledTime => {}
    }
    if m.is_time() {
        writeln!(
            out,
            "Idle time calculated as elapsed - CPU time - lost samples: the time not sampled (idle CPUs, and \
             any sampling the kernel throttled)."
        )?;
    }
    for line in noise_notes(c) {
        writeln!(out, "{line}")?;
    }
    if a.idle_set == b.idle_set {
        writeln!(
            out,
            "Idle functions (not counted as CPU time, not listed): {}.",
            super::idle_set_words(&a.idle_set)
        )?;
    } else {
        writeln!(out, "Idle functions, run 1: {}.", super::idle_set_words(&a.idle_set))?;
        writeln!(out, "Idle functions, run 2: {}.", super::idle_set_words(&b.idle_set))?;
    }
    // What each listed row without a symbol is.
    let mut hinted: Vec<&str> = Vec::new();
    for r in c.listed() {
        if let Some(hint) = super::unknown::unknown_hint(&r.function) {
            if !hinted.contains(&r.function.as_str()) {
                hinted.push(&r.function);
                writeln!(out, "{}: {hint}.", Shown(&r.function))?;
            }
        }
    }
    Ok(())
}

/// The notes that say how each verdict of a profile comparison was reached: the test,
/// the question it answers, the family, and what the data resolve of the total CPU time
/// (shared with the Markdown report).
pub(crate) fn noise_notes(c: &ProfileComparison) -> Vec<String> {
    let (a, b) = (c.run1.repetitions, c.run2.repetitions);
    let mut notes = vec![match (c.method(), c.noise_model.time) {
        (_, Prior::Dispersion { phi, fitted, .. }) => format!(
            "Noise: one run a side, so each function's change of CPU time is tested against the sampling error \
             of its samples and the run-to-run spread of the other functions of this test: {:.1}% of a \
             function's time per run beyond the sampling error, estimated from the {fitted} functions with at \
             least {FIT_MIN_COUNT} samples a side (most functions of a comparison do not change; where most \
             do, this overstates the noise). The total CPU time takes the functions' spread summed. A change \
             beyond both is marked \"sampling only\": each function's own run-to-run noise was not measured.{}",
            100.0 * phi.sqrt(),
            if c.of_runs {
                " Repeat the runs (uprun --runs N)."
            } else {
                ""
            }
        ),
        (
            _,
            Prior::Moderated {
                phi, d0, s0_sq, fitted, ..
            },
        ) => format!(
            "Noise: {a} and {b} repetitions; each function's variance is moderated towards the trend fitted over \
             the {fitted} functions of this test with at least {FIT_MIN_COUNT} samples a side (its sampling \
             variance{}; prior degrees of freedom {}), and its change tested with the moderated t; the change \
             must also stand above the sampling error of the summed samples.",
            // With repetitions that vary no more than their sampling error, the trend is the
            // sampling variance itself: a scale of 0 says nothing a reader can use.
            match phi * s0_sq {
                // Two significant digits: a scale that rounds to 0.00 reads as no variance.
                extra if extra > 0.0 && s0_sq >= 0.01 =>
                    format!(" plus {:.1}% of its time per run, times {s0_sq:.2}", 100.0 * phi.sqrt()),
                extra if extra > 0.0 => format!(
                    " plus {:.1}% of its time per run, times {s0_sq:.1e}",
                    100.0 * phi.sqrt()
                ),
                _ => " alone: the repetitions vary no more than their sampling error".to_string(),
            },
            d0.map_or("infinite (the trend alone)".to_string(), |d| format!("{d:.1}"))
        ),
        (Method::SamplingError, _) => format!(
            "Noise: one run a side, so each function's change of CPU time is tested against the sampling error \
             of its samples only (exact below {EXACT_BELOW} samples, the multinomial normal above). \
             Run-to-run variation was not measured and is usually larger: a change beyond the sampling error is \
             marked \"sampling only\", not \"significant\".{}",
            if c.of_runs {
                " Repeat the runs (uprun --runs N)."
            } else {
                " Measuring it takes repeated runs of each side."
            }
        ),
        (Method::Welch, _) if a == 1 || b == 1 => format!(
            "Noise: {a} and {b} repetitions; each function's change of CPU time is tested against the \
             repetitions' spread, taken for both sides (t-test with {} degrees of freedom), each side's variance \
             at least its sampling variance; the change must also stand above the sampling error of the summed \
             samples.",
            a.max(b) - 1
        ),
        (Method::Welch, _) => format!(
            "Noise: {a} and {b} repetitions; each function's change of CPU time is tested with Welch's t-test on \
             the repetitions, each side's variance at least its sampling variance; the change must also stand \
             above the sampling error of the summed samples."
        ),
    }];
    notes.push(format!(
        "The 95% test asks whether a function's CPU time changed (whether its share of CPU time changed, the \
         flame graph's question, is share_verdict in the CSV and JSON results); marked at a false-discovery \
         rate of 5% over the {} tested functions above the cutoff in this report (Benjamini-Hochberg).",
        c.families.functions
    ));
    let cpu_change = if c.run1.cpu > 0.0 {
        format!("{:+.2}%", 100.0 * (c.run2.cpu - c.run1.cpu) / c.run1.cpu)
    } else {
        "-".into()
    };
    let n = &c.cpu_noise;
    notes.push(match c.cpu_detectable_pct() {
        Some(d) => format!(
            "Total CPU time {cpu_change}: {} (Holm over the {} CPU total{} tested in this report). An observed \
             change below {:.2}% is not marked (at its level after the adjustment, p < {}); a true change of \
             about {:.2}% is detected 80% of the time.",
            n.verdict.word(),
            c.families.headline,
            if c.families.headline == 1 { "" } else { "s" },
            d.observed,
            fmt_level(n.level),
            d.true_change_80
        ),
        None if n.test == Some(NoiseTest::Dispersed) => format!(
            "Total CPU time {cpu_change}: {} against its sampling error and the functions' run-to-run spread \
             summed (one run a side: the total's own run-to-run noise was not measured).",
            n.verdict.word()
        ),
        None if n.sampling_only || a == 1 && b == 1 => format!(
            "Total CPU time {cpu_change}: one run a side, so its run-to-run noise was not measured and no \
             smallest detectable change can be given."
        ),
        None => format!("Total CPU time {cpu_change}: not tested ({}).", not_tested_why(n)),
    });
    notes
}

/// A family's level, as the notes print it.
fn fmt_level(level: Option<f64>) -> String {
    level.map_or("0.05".into(), |l| format!("{l:.2e}"))
}

fn not_tested_why(n: &Significance) -> &'static str {
    match (n.not_tested, n.test) {
        (Some(NotTested::NoValues), _) => "a side has no value",
        (Some(_), _) => "the values vary neither between repetitions nor by sampling",
        (None, Some(NoiseTest::ExactCounts | NoiseTest::NormalCounts)) => "sampling error only",
        (None, _) => "run 1 has no CPU time",
    }
}

/// A path as the report shows it: a test's directory is named after the test, and the
/// test list is another user's text.
pub(crate) fn shown_path(p: &std::path::Path) -> String {
    escaped(&p.display().to_string()).into_owned()
}

fn banner(name: &str) -> String {
    let stars = "*".repeat(30);
    format!("{stars} {} results {stars}", Shown(name))
}

/// One test of an upcmp report; `counter_family` is the number of counters tested in the
/// report (their family).
pub fn render_test(t: &TestComparison, counter_family: usize, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "{}", banner(&t.name))?;
    match &t.outcome {
        TestOutcome::OnlyIn { run, dir } => {
            writeln!(out, "Only in run {run} ({}): nothing to compare.", shown_path(dir))?;
        }
        TestOutcome::Compared {
            upout1,
            upout2,
            bench,
            profile,
            notes,
            counters,
            ..
        } => {
            writeln!(out, "1: {}", shown_path(upout1))?;
            writeln!(out, "2: {}", shown_path(upout2))?;
            for n in notes {
                writeln!(out, "NOTE: {}", Shown(n))?;
            }
            writeln!(out)?;
            // A recording has no benchmark result to show.
            if profile.of_runs || !bench.is_empty() {
                render_bench(bench, out)?;
                writeln!(out)?;
            }
            render_profile(profile, out)?;
            // System Activity: after the CPU Time Analysis.
            if !counters.is_empty() {
                writeln!(out)?;
                super::activity::render_counters(counters, counter_family, out)?;
            }
        }
    }
    writeln!(out)
}

/// The whole upcmp report.
pub fn render_runs(r: &RunComparison, out: &mut dyn Write) -> io::Result<()> {
    for w in &r.warnings {
        writeln!(out, "WARNING: {}", Shown(w))?;
    }
    if !r.warnings.is_empty() {
        writeln!(out)?;
    }
    writeln!(out, "1: {}", shown_path(&r.dir1))?;
    writeln!(out, "2: {}", shown_path(&r.dir2))?;
    writeln!(out)?;
    // The digest: one line per test, before the details.
    super::activity::render_digest(r, out)?;
    writeln!(out, "System")?;
    if r.system_differences.is_empty() {
        writeln!(out, "  {}", system_summary(r))?;
    } else {
        let mut t = Table::new();
        t.set_format(FormatBuilder::new().column_separator(' ').padding(2, 0).build());
        t.set_titles(Row::new(vec![left("item"), left("run 1"), left("run 2")]));
        for d in &r.system_differences {
            t.add_row(Row::new(vec![
                left(escaped(&d.key)),
                left(escaped(&d.run1)),
                left(escaped(&d.run2)),
            ]));
        }
        print_table(&t, out)?;
        if let Some(n) = notes_below(r) {
            writeln!(out, "  {n}")?;
        }
    }
    for line in settings_lines(r) {
        writeln!(out, "  {line}")?;
    }
    writeln!(out)?;
    for t in &r.tests {
        render_test(t, r.counter_family, out)?;
    }
    Ok(())
}

/// Kernel configuration options listed one a line up to this many; beyond, a count and
/// the first few (all of them are in the page and the JSON).
pub const CONFIG_LINES: usize = 20;

/// The System section's lines of the kernel settings that differ: each other setting,
/// then the configuration's options (`CONFIG_X: y -> n`), counted when there are many.
pub(crate) fn settings_lines(r: &RunComparison) -> Vec<String> {
    use crate::compare::settings::{difference_line, is_config};
    let d = &r.setting_differences;
    if d.is_empty() {
        return Vec::new();
    }
    let mut lines = vec![format!(
        "Kernel settings that differ ({}; each file 'settings' of the runs):",
        d.len()
    )];
    lines.extend(
        d.iter()
            .filter(|x| !is_config(x))
            .map(|x| format!("  {}", escaped(&difference_line(x)))),
    );
    // A run's files are foreign input: their values are escaped like any name.
    let config: Vec<String> = d
        .iter()
        .filter(|x| is_config(x))
        .map(|x| escaped(&difference_line(x)).into_owned())
        .collect();
    if config.len() <= CONFIG_LINES {
        lines.extend(config.iter().map(|l| format!("  {l}")));
    } else {
        lines.push(format!(
            "  kernel config: {} options differ, the first: {}; all of them in results.html and results.json",
            config.len(),
            config[..5].join(", ")
        ));
    }
    lines
}

/// What the tests note below the System section, when they note anything: so that the
/// section never says the comparison is unbiased above a note that says otherwise.
pub(crate) fn notes_below(r: &RunComparison) -> Option<String> {
    let noted = r.noted_tests();
    if noted.is_empty() {
        return None;
    }
    let list: Vec<String> = noted
        .iter()
        .map(|(t, n)| format!("{} ({n} note{})", Shown(t), if *n == 1 { "" } else { "s" }))
        .collect();
    Some(format!(
        "The tests note what else can bias the comparison: {}; read them before the numbers.",
        list.join(", ")
    ))
}

/// The System section's line when the system descriptions do not differ.
pub(crate) fn system_summary(r: &RunComparison) -> String {
    if !r.setting_differences.is_empty() {
        let tail = notes_below(r).map(|n| format!(" {n}")).unwrap_or_default();
        return format!(
            "the two system descriptions do not differ in what can bias the comparison, but the kernel settings \
             do (below).{tail}"
        );
    }
    match notes_below(r) {
        None => "no differences between the two system descriptions that can bias the comparison".into(),
        Some(n) => format!("the two system descriptions do not differ in what can bias the comparison. {n}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::{compare_profile_sets, CompareOptions};
    use crate::model::Profile;
    use crate::store::prfout::parse;

    fn profile(a: u64, idle: u64) -> Profile {
        let text = format!(
            "upcmp-prfout 1\ntest t\nevent cpu-clock\nperiod-sec 0.01\ncpus 1\nwall-sec 10\nidle-set idle\n\
             cpu 0 samples {} lost 0 throttled 0\nfunctions 2\n{a} [kernel] a\n{idle} [kernel] idle\nend\n",
            a + idle
        );
        parse(&text, "t").unwrap()
    }

    fn notes(s1: &[Profile], s2: &[Profile]) -> String {
        let c = compare_profile_sets(s1, s2, &CompareOptions::default());
        let mut out = Vec::new();
        render_profile(&c, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    // With repetitions the total CPU time gets its verdict and both thresholds; with
    // one run a side, the statement that run-to-run noise was not measured instead of a
    // threshold of sampling error (which is 0 for a run without idle samples).
    #[test]
    fn the_notes_say_what_the_data_resolve() {
        let r = notes(
            &[profile(300, 700), profile(310, 690), profile(290, 710)],
            &[profile(350, 650), profile(360, 640), profile(340, 660)],
        );
        assert!(
            r.contains("Noise: 3 and 3 repetitions; each function's change of CPU time is tested with Welch's t-test"),
            "{r}"
        );
        assert!(
            r.contains("marked at a false-discovery rate of 5% over the 1 tested functions"),
            "{r}"
        );
        assert!(
            r.contains("Total CPU time +16.67%: significant (Holm over the 1 CPU total tested"),
            "{r}"
        );
        assert!(
            r.contains("An observed change below ") && r.contains("is detected 80% of the time."),
            "{r}"
        );
        assert!(
            r.lines().any(|l| l.starts_with("a ") && l.ends_with(" significant")),
            "{r}"
        );
        let r = notes(&[profile(1000, 0)], &[profile(900, 0)]);
        assert!(
            r.contains("Total CPU time -10.00%: one run a side, so its run-to-run noise was not measured"),
            "{r}"
        );
        assert!(!r.contains("An observed change below"), "{r}");
    }

    fn many(counts: &[u64]) -> Profile {
        let rows: String = counts
            .iter()
            .enumerate()
            .map(|(i, c)| format!("{c} [kernel] f{i:02}\n"))
            .collect();
        let busy: u64 = counts.iter().sum();
        let text = format!(
            "upcmp-prfout 1\ntest t\nevent cpu-clock\nperiod-sec 0.01\ncpus 1\nwall-sec 1000\nidle-set idle\n\
             cpu 0 samples {} lost 0 throttled 0\nfunctions {}\n{rows}{} [kernel] idle\nend\n",
            busy + 1000,
            counts.len() + 1,
            1000
        );
        parse(&text, "t").unwrap()
    }

    // Issue 28: identical repetitions (and repetitions a sample apart) vary no more than
    // their sampling error: the note says so, never "times 0.00".
    #[test]
    fn identical_repetitions_say_the_trend_is_the_sampling_variance() {
        let base: Vec<u64> = (0..20).map(|i| 200 + 50 * i).collect();
        let bumped = |d: i64| -> Vec<u64> { base.iter().map(|&c| (c as i64 + d) as u64).collect() };
        for (s1, s2) in [
            (vec![many(&base); 3], vec![many(&bumped(30)); 3]),
            (
                vec![many(&base), many(&bumped(1)), many(&base)],
                vec![many(&bumped(30)), many(&bumped(31)), many(&bumped(30))],
            ),
        ] {
            let r = notes(&s1, &s2);
            assert!(
                r.contains("its sampling variance alone: the repetitions vary no more than their sampling error"),
                "{r}"
            );
            assert!(!r.contains("times 0.00"), "{r}");
        }
    }
}
