//! The files a stack comparison adds to RESULTS_DIR: a differential flame graph and a
//! caller/callee table per test, and the section of `results` that names them.

use crate::compare::moves::MIN_PCT;
use crate::compare::stacks::{ArcChange, RunStacks, Shape, ShareChange, TestStacks, FRAME_CUTOFF_PCT};
use crate::model::shown::Shown;
use crate::report::flame::{render_differential, render_shape, Subtitle};
use crate::report::format::for_people;
use std::io::{self, Write};

/// `test` as part of a file name: blanks and slashes become `_` (an imported comparison
/// is named `a.data vs b.data`).
fn stem(test: &str) -> String {
    test.replace([' ', '/'], "_")
}

/// The differential flame graph's file name for `test`.
pub fn flame_file(test: &str) -> String {
    format!("{}.flamediff.svg", stem(test))
}

/// The file name of `test`'s differential flame graph in run 1's shape (the frames that
/// vanished in run 2 drawn).
pub fn flame_run1_file(test: &str) -> String {
    format!("{}.flamediff-run1.svg", stem(test))
}

/// The line under a differential graph's title that fits its 1200 pixels, and its
/// tooltip, for the graph whose widths are `run`'s samples.
fn flame_subtitle(t: &TestStacks, run: u8) -> Subtitle {
    let other = 3 - run;
    let shows = match run {
        1 => "frames that vanished in run 2 are drawn, blue; run 2's new frames are in the other graph",
        _ => "frames that vanished in run 2 have no width: they are in the other graph, drawn in run 1's shape",
    };
    let shape = if run == 1 { Shape::Run1 } else { Shape::Run2 };
    let (weighed, periods) = match t.diff.samples_per_weight(shape) {
        Some(_) => (
            " by period",
            " The samples' periods vary: each is weighed by its period, as perf report weighs it, so a \
             frame's width is its share of the flat profile; counts are in samples of the mean period.",
        ),
        None => ("", ""),
    };
    Subtitle {
        line: format!(
            "width: run {run}'s samples{weighed}; colour: change of inclusive CPU share (red grew, blue shrank)"
        ),
        tooltip: format!(
            "Width: run {run}'s samples ({shows}; run {other}'s samples are in the other column of each frame). \
             Colour: the change of each frame's inclusive share of CPU time from run 1 to run 2, red where it \
             grew, blue where it shrank, neutral within the noise (5% false-discovery rate over the frames, {}).{periods}",
            noise_words(t.diff.repetitions())
        ),
    }
}

/// The caller/callee table's file name for `test`.
pub fn callers_file(test: &str) -> String {
    format!("{}.callers", stem(test))
}

fn share(c: &ShareChange) -> String {
    format!(
        "{:7.2} {:7.2} {:+8.2} ±{:5.2}{}",
        c.pct1,
        c.pct2,
        c.delta_pct,
        c.error_pct,
        if c.stands_out() { " *" } else { "" }
    )
}

/// What the noise of a stack comparison with `repetitions` of each run was, for the
/// table's header and the flame graph's subtitle.
fn noise_words(repetitions: [usize; 2]) -> String {
    if repetitions[0] > 1 || repetitions[1] > 1 {
        format!(
            "tested on the spread of {} and {} repetitions",
            repetitions[0], repetitions[1]
        )
    } else {
        "tested against the sampling error only (one run a side: run-to-run noise not measured)".into()
    }
}

/// Writes the caller/callee table of one test.
pub fn render_callers(t: &TestStacks, mut w: impl Write) -> io::Result<()> {
    let (test, functions) = (Shown(&t.test), &t.functions);
    writeln!(
        w,
        "Test {test}: the functions whose inclusive CPU time changed most, and the arcs that carry it."
    )?;
    writeln!(
        w,
        "Percent of each run's CPU samples (idle left out); R2-R1 in points ± one standard error;"
    )?;
    writeln!(
        w,
        "* marks a change that stands out at a false-discovery rate of 5% (Benjamini-Hochberg over the"
    )?;
    writeln!(
        w,
        "functions, and over the rows below, at or above {FRAME_CUTOFF_PCT}%), {}.",
        noise_words(t.diff.repetitions())
    )?;
    if functions.is_empty() {
        writeln!(w)?;
        writeln!(w, "No function's inclusive time changed beyond the noise.")?;
        return render_moves(t, &mut w);
    }
    let arcs = |w: &mut dyn Write, what: &str, list: &[ArcChange]| -> io::Result<()> {
        writeln!(w, "    {what}")?;
        for a in list {
            writeln!(w, "      {}  {}", share(&a.change), Shown(&a.function))?;
        }
        Ok(())
    };
    for f in functions {
        writeln!(w)?;
        writeln!(w, "{}", Shown(&f.function))?;
        writeln!(w, "                   R1%     R2%    R2-R1   error")?;
        writeln!(w, "    inclusive  {}", share(&f.inclusive))?;
        writeln!(w, "    self       {}", share(&f.self_time))?;
        arcs(&mut w, "callers (calling it):", &f.callers)?;
        arcs(&mut w, "callees (called by it):", &f.callees)?;
    }
    render_moves(t, &mut w)
}

/// The notes on where a vanished function's time went, and the cost-shift view, of one
/// test (in its callers file and in `results`); nothing when there is neither.
pub fn render_moves(t: &TestStacks, mut w: impl Write) -> io::Result<()> {
    render_inlined(t, &mut w)?;
    render_shifts(t, &mut w)
}

/// Where the time of the functions run 2 lacks went.
fn render_inlined(t: &TestStacks, mut w: impl Write) -> io::Result<()> {
    if !t.inlined.is_empty() {
        writeln!(w)?;
        writeln!(
            w,
            "Where did its time go: functions of run 1 that run 2 lacks or has at less than half, and their \
             callers (% of each run's CPU samples; an estimate: the function's time under each caller in run 1 \
             against the growth of that caller's self time in run 2)."
        )?;
        for f in &t.inlined {
            let now = if f.absent {
                "absent in run 2".to_string()
            } else {
                format!("{:.2}% in run 2", f.run2_pct)
            };
            writeln!(w, "  {}: {:.2}% in run 1, {now}.", Shown(&f.function), f.run1_pct)?;
            for c in &f.callers {
                let caller = Shown(&c.caller);
                writeln!(
                    w,
                    "    under {caller}: {:.2}% (self {:.2}%) in run 1; {caller}'s self time {:+.2} points in run 2",
                    c.under_pct, c.self_under_pct, c.self_growth_pct
                )?;
            }
            match f.likely_caller() {
                Some(c) => writeln!(w, "    inlined into {} in run 2?", Shown(&c.caller))?,
                None => writeln!(w, "    no caller's self time grew by {:.0} point or more", MIN_PCT)?,
            }
        }
    }
    Ok(())
}

/// The cost-shift view.
fn render_shifts(t: &TestStacks, mut w: impl Write) -> io::Result<()> {
    if !t.shifts.is_empty() {
        writeln!(w)?;
        writeln!(
            w,
            "Cost shifts: the functions whose self time changed most, against the self time of the function and \
             its direct callers together (% of each run's CPU samples); time moved between them leaves the group \
             unchanged."
        )?;
        for c in &t.shifts {
            let [a, b] = c.self_pct;
            let [g1, g2] = c.group_pct;
            let callers = if c.callers.is_empty() {
                "no callers".to_string()
            } else {
                let callers: Vec<String> = c.callers.iter().map(|n| Shown(n).to_string()).collect();
                callers.join(", ")
            };
            writeln!(
                w,
                "  {}: self {a:.2}% -> {b:.2}% ({:+.2}); with {callers}: {g1:.2}% -> {g2:.2}% ({:+.2}): {}",
                Shown(&c.function),
                b - a,
                g2 - g1,
                if c.within_group() {
                    "moved within the group"
                } else {
                    "the group changed too"
                }
            )?;
        }
    }
    Ok(())
}

/// The files for RESULTS_DIR: (name, contents) per test.
pub fn files(s: &RunStacks) -> io::Result<Vec<(String, Vec<u8>)>> {
    let mut out = Vec::new();
    for t in &s.tests {
        let mut svg = Vec::new();
        let title = format!(
            "{} → {}: test {}",
            Shown(&s.dir1.display().to_string()),
            Shown(&s.dir2.display().to_string()),
            Shown(&t.test)
        );
        if t.diff.samples[1] > 0 {
            for_people(&mut svg, |w| {
                render_differential(&t.diff, &title, Some(flame_subtitle(t, 2)), w)
            })?;
            out.push((flame_file(&t.test), svg));
        }
        // Run 1's shape: what run 2 lost is drawn too.
        if t.diff.samples[0] > 0 {
            let mut svg = Vec::new();
            let title = format!("{title} (run 1's shape)");
            for_people(&mut svg, |w| {
                render_shape(&t.diff, Shape::Run1, &title, Some(flame_subtitle(t, 1)), w)
            })?;
            out.push((flame_run1_file(&t.test), svg));
        }
        let mut table = Vec::new();
        for_people(&mut table, |w| render_callers(t, w))?;
        out.push((callers_file(&t.test), table));
    }
    Ok(out)
}

/// The section of `results` naming the stack comparison files in `results_dir`.
pub fn render_index(
    s: &RunStacks,
    names: &[(String, Vec<u8>)],
    results_dir: &str,
    mut w: impl Write,
) -> io::Result<()> {
    writeln!(w)?;
    writeln!(w, "{:*^78}", " stack comparison ")?;
    writeln!(
        w,
        "Both runs have call stacks (upsrun, or recordings with call chains). Per test: a differential flame"
    )?;
    writeln!(
        w,
        "graph (widths: run 2; colour: the change of each frame's inclusive share of CPU time, neutral within"
    )?;
    writeln!(
        w,
        "the noise), the same graph in run 1's shape (widths: run 1, so frames that vanished in run 2 are"
    )?;
    writeln!(
        w,
        "drawn; `-run1.svg`) and the callers and callees of the functions that changed most."
    )?;
    for t in &s.tests {
        for name in [flame_file(&t.test), flame_run1_file(&t.test), callers_file(&t.test)] {
            if names.iter().any(|(n, _)| *n == name) {
                writeln!(w, "  {}: {}", Shown(&t.test), Shown(&format!("{results_dir}/{name}")))?;
            }
        }
    }
    // Where a vanished function's time went, under the tables; the cost shifts are in
    // each test's callers file.
    for t in s.tests.iter().filter(|t| !t.inlined.is_empty()) {
        writeln!(w)?;
        writeln!(w, "Test {}:", Shown(&t.test))?;
        render_inlined(t, &mut w)?;
    }
    Ok(())
}
