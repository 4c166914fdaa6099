//! "System Activity" (what the kernel counted over each test) and the digest at the top
//! of the report: one line per test with the numbers that moved most.

use super::fmt_ratio;
use crate::compare::bench::BenchRow;
use crate::compare::counters::{CounterBasis, CounterRow};
use crate::compare::runs::{RunComparison, TestOutcome};
use crate::compare::stats::{Mark, NotTested};
use crate::compare::{Measure, ProfileComparison};
use crate::model::shown::{escaped, Shown};
use std::io::{self, Write};

/// A count or a rate with three significant digits (no exponent below 10^9).
pub fn fmt_count(x: f64) -> String {
    if x == 0.0 || !x.is_finite() {
        return format!("{x}");
    }
    let a = x.abs();
    if a >= 1e9 {
        return format!("{x:.3e}");
    }
    let decimals = (2 - a.log10().floor() as i32).max(0) as usize;
    format!("{x:.decimals$}")
}

/// A change in %, signed, with one decimal.
fn fmt_change(c: Option<f64>) -> String {
    match c {
        Some(c) => format!("{c:+.1}%"),
        None => "-".into(),
    }
}

fn value(x: Option<f64>) -> String {
    x.map(fmt_count).unwrap_or_else(|| "absent".into())
}

/// The counter's name with what its values are (`/op` when per operation).
pub fn counter_label(r: &CounterRow) -> String {
    format!("{}{}", r.name, r.basis.suffix())
}

/// The "System Activity" section of a test: the listed counters (by the size of their
/// change), then how they were tested and how many are not shown.
pub fn render_counters(rows: &[CounterRow], family: usize, out: &mut dyn Write) -> io::Result<()> {
    if rows.is_empty() {
        return Ok(());
    }
    writeln!(out, "System Activity")?;
    let listed: Vec<&CounterRow> = rows.iter().filter(|r| r.listed).collect();
    if !listed.is_empty() {
        let width = listed.iter().map(|r| counter_label(r).len()).max().unwrap_or(0).max(7);
        writeln!(
            out,
            "  {:<width$} {:>10} {:>10} {:>8} {:>10} {:>10}  95% test",
            "counter", "Run1", "Run2", "change", "Run1/s", "Run2/s"
        )?;
        for r in &listed {
            writeln!(
                out,
                "  {:<width$} {:>10} {:>10} {:>8} {:>10} {:>10}  {}",
                counter_label(r),
                value(r.run1),
                value(r.run2),
                fmt_change(r.change),
                value(r.per_sec1),
                value(r.per_sec2),
                r.verdict.word()
            )?;
        }
    }
    let hidden = rows.len() - listed.len();
    let per_op = rows.iter().any(|r| r.basis == CounterBasis::PerOperation);
    let single = rows.iter().any(|r| r.noise.not_tested == Some(NotTested::SingleRuns));
    let what = if per_op {
        "Values are per benchmark operation (/op) and per second of the test; "
    } else {
        "Values are changes over the test and per second; "
    };
    if single {
        writeln!(
            out,
            "{what}one run a side, so run-to-run noise was not measured and no counter is tested (n/a); \
             the largest changes are shown."
        )?;
    } else {
        writeln!(
            out,
            "{what}each counter is tested with Welch's t-test on the repetitions, marked with Holm over the \
             {family} tested counters of the report (95%)."
        )?;
    }
    if hidden > 0 {
        writeln!(
            out,
            "{hidden} more counter{} did not change beyond the noise or were not counted; --all-counters lists them.",
            if hidden == 1 { "" } else { "s" }
        )?;
    }
    Ok(())
}

/// The first benchmark row's change in % (direction as printed: a rate that fell is
/// negative) and its verdict word, as the digests (text and page) print them; None
/// when a side has no value or run 1's is 0.
pub fn bench_digest(bench: &[BenchRow]) -> Option<(String, &'static str)> {
    let b = bench.first()?;
    let (x, y) = (b.run1?, b.run2?);
    if x == 0.0 {
        return None;
    }
    let unit = if b.lower_is_better { "time" } else { "ops/s" };
    let verdict = b.noise.as_ref().map_or("n/a", |n| n.verdict.word());
    Some((format!("{:+.1}% {unit}", 100.0 * (y - x) / x), verdict))
}

fn bench_change(bench: &[BenchRow]) -> Option<String> {
    bench_digest(bench).map(|(change, verdict)| format!("{change} ({verdict})"))
}

/// The change of CPU time in %, as the digests print it; None when run 1 has none.
pub fn cpu_digest(p: &ProfileComparison) -> Option<String> {
    match fmt_ratio(crate::compare::ratio(p.run1.cpu, p.run2.cpu)).as_str() {
        "-" => None,
        _ => Some(format!("{:+.1}%", 100.0 * (p.run2.cpu - p.run1.cpu) / p.run1.cpu)),
    }
}

/// The CPU time's change in %, with its verdict.
fn cpu_change(p: &ProfileComparison) -> String {
    match cpu_digest(p) {
        Some(change) => format!("CPU {change} ({})", p.cpu_noise.verdict.word()),
        None => "CPU -".into(),
    }
}

/// The function that moved most among the rows marked (standing out after their
/// family's adjustment): a noisy row is never the digest's "top".
fn top_function(p: &ProfileComparison) -> Option<String> {
    let f = p
        .rows
        .iter()
        .filter(|r| r.above_cutoff && r.delta != 0.0 && r.noise.stands_out())
        .max_by(|a, b| a.delta.abs().total_cmp(&b.delta.abs()))?;
    Some(format!(
        "top: {} {}",
        Shown(&f.function),
        fmt_delta(f.delta, &p.measure)
    ))
}

fn fmt_delta(d: f64, m: &Measure) -> String {
    format!("{:+.2} {}", d / m.scale, m.unit)
}

/// The counters of a digest line: the two listed ones that moved most, standing out
/// first.
fn top_counters(rows: &[CounterRow]) -> Vec<String> {
    let mut picked: Vec<&CounterRow> = rows.iter().filter(|r| r.listed && r.noise.stands_out()).collect();
    if picked.is_empty() {
        picked = rows
            .iter()
            .filter(|r| r.listed && r.verdict == Mark::NotTested && r.change.is_some())
            .collect();
    }
    picked
        .iter()
        .take(2)
        .map(|r| format!("{} {}", counter_label(r), fmt_change(r.change)))
        .collect()
}

/// What a refusal of the speed ratio is about, for the digests: `benchmarks` when the
/// commands differ, else the item (`copies`).
pub(crate) fn refused_what(u: &crate::compare::runs::Unlike) -> &str {
    match u.item.as_str() {
        "command" => "benchmarks",
        item => item,
    }
}

/// The digest: one line per compared test, with its benchmark change, its CPU time
/// change, the counters and the function that moved most.
pub fn render_digest(r: &RunComparison, out: &mut dyn Write) -> io::Result<()> {
    let lines: Vec<(String, String)> = digest_lines(r)
        .into_iter()
        .map(|(name, parts)| (name, parts.join("  ")))
        .collect();
    if lines.is_empty() {
        return Ok(());
    }
    writeln!(out, "Digest")?;
    let width = lines.iter().map(|(n, _)| n.len()).max().unwrap_or(0);
    for (name, line) in lines {
        writeln!(out, "  {name:<width$}  {line}")?;
    }
    writeln!(out)
}

/// The digest's parts per compared test: its benchmark change, its CPU time change, the
/// counters and the function that moved most.
pub fn digest_lines(r: &RunComparison) -> Vec<(String, Vec<String>)> {
    r.tests
        .iter()
        .filter_map(|t| match &t.outcome {
            TestOutcome::Compared {
                bench,
                profile,
                counters,
                unlike,
                ..
            } => {
                let mut parts = Vec::new();
                // As the page's digest: sides not comparable get no change.
                match unlike.iter().find(|u| u.no_speed_ratio) {
                    Some(u) => parts.push(format!("{} differ: no ratio", refused_what(u))),
                    None => parts.extend(bench_change(bench)),
                }
                parts.push(cpu_change(profile));
                parts.extend(top_counters(counters));
                parts.extend(top_function(profile));
                Some((escaped(&t.name).into_owned(), parts))
            }
            TestOutcome::OnlyIn { .. } => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    // Issue 28: the digest's "top" is the largest change among the marked rows, never a
    // larger one that is noise; the CPU change carries its verdict.
    #[test]
    fn digest_top_is_marked_and_cpu_has_its_verdict() {
        use crate::compare::{compare_profiles, CompareOptions, Mark};
        use crate::store::prfout::parse;
        let profile = |rows: &[(&str, u64)]| {
            let mut text = format!(
                "upcmp-prfout 1\ntest t\nevent cpu-clock\nperiod-sec 0.001\ncpus 1\nwall-sec 100\nidle-set idle\n\
                 cpu 0 samples {} lost 0 throttled 0\nfunctions {}\n",
                rows.iter().map(|r| r.1).sum::<u64>(),
                rows.len()
            );
            for (n, c) in rows {
                text += &format!("{c} [kernel] {n}\n");
            }
            parse(&(text + "end\n"), "t").unwrap()
        };
        let mut c = compare_profiles(
            &profile(&[("big", 20_000), ("small", 100), ("idle", 79_900)]),
            &profile(&[("big", 20_100), ("small", 200), ("idle", 79_700)]),
            &CompareOptions::default(),
        );
        assert_eq!(c.rows[0].function, "big");
        assert_eq!(c.rows[0].noise.verdict, Mark::Noise);
        assert!(c.rows[1].noise.stands_out());
        assert_eq!(top_function(&c).unwrap(), "top: small +0.10 sec");
        assert!(cpu_change(&c).starts_with("CPU +1.0% ("), "{}", cpu_change(&c));
        assert!(cpu_change(&c).ends_with(&format!("({})", c.cpu_noise.verdict.word())));
        c.rows[1].noise.verdict = Mark::Noise;
        assert_eq!(top_function(&c), None);
    }

    #[test]
    fn counts_with_three_digits() {
        assert_eq!(fmt_count(0.0), "0");
        assert_eq!(fmt_count(1.23456), "1.23");
        assert_eq!(fmt_count(12345.6), "12346");
        assert_eq!(fmt_count(-0.012345), "-0.0123");
        assert_eq!(fmt_count(2.5e10), "2.500e10");
        assert_eq!(fmt_change(Some(12.04)), "+12.0%");
        assert_eq!(fmt_change(None), "-");
    }
}
