//! The files a stack comparison adds to RESULTS_DIR: a differential flame graph and a
//! caller/callee table per test, and the section of `results` that names them.

use crate::compare::stacks::{ArcChange, RunStacks, ShareChange, TestStacks, FRAME_CUTOFF_PCT};
use crate::model::shown::Shown;
use crate::report::flame::render_differential;
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
        return Ok(());
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
    Ok(())
}

/// The files for RESULTS_DIR: (name, contents) per test.
pub fn files(s: &RunStacks) -> io::Result<Vec<(String, Vec<u8>)>> {
    let mut out = Vec::new();
    for t in &s.tests {
        let mut svg = Vec::new();
        let title = format!("{} → {}: test {}", s.dir1.display(), s.dir2.display(), t.test);
        let subtitle = format!(
            "width: run 2; colour: change of inclusive share of CPU time (red grew, blue shrank, neutral \
             within the noise: 5% false-discovery rate over the frames, {})",
            noise_words(t.diff.repetitions())
        );
        if t.diff.samples[1] > 0 {
            render_differential(&t.diff, &title, Some(subtitle), &mut svg)?;
            out.push((flame_file(&t.test), svg));
        }
        let mut table = Vec::new();
        render_callers(t, &mut table)?;
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
        "the noise) and the callers and callees of the functions that changed most."
    )?;
    for t in &s.tests {
        for name in [flame_file(&t.test), callers_file(&t.test)] {
            if names.iter().any(|(n, _)| *n == name) {
                writeln!(w, "  {}: {}", Shown(&t.test), Shown(&format!("{results_dir}/{name}")))?;
            }
        }
    }
    Ok(())
}
