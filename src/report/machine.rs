//! Machine-readable results: CSV (one row per number) and JSON (everything).

use crate::compare::runs::{RunComparison, TestOutcome};
use crate::compare::{ratio, Method, ProfileComparison};
use std::io::{self, Write};

/// The CSV header.
pub const CSV_HEADER: &str =
    "test,kind,name,run1,run2,delta,ratio,delta_pct_of_run1_cpu,run1_pct_of_cpu,run2_pct_of_cpu,run1_sd_pct,run2_sd_pct,noise_method,ci95,p_value,significant,listed";

fn field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn num(x: Option<f64>) -> String {
    x.map(|x| format!("{x}")).unwrap_or_default()
}

fn method(m: Method) -> &'static str {
    match m {
        Method::Welch => "welch",
        Method::SamplingError => "sampling_error",
    }
}

/// Writes every benchmark value, summary line and function of every test as CSV rows
/// (`kind` is `bench`, `summary` or `function`; seconds for times).
pub fn write_csv(r: &RunComparison, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "{CSV_HEADER}")?;
    for t in &r.tests {
        let TestOutcome::Compared { bench, profile, .. } = &t.outcome else {
            continue;
        };
        let name = field(&t.name);
        for b in bench {
            let n = b.noise;
            writeln!(
                out,
                "{name},bench,{},{},{},,{},,,,{},{},{},{},{},{},",
                field(&b.description),
                num(b.run1),
                num(b.run2),
                num(b.speed_ratio),
                b.run1_sd_pct,
                b.run2_sd_pct,
                if n.is_some() { "welch" } else { "" },
                num(n.map(|n| n.ci95)),
                num(n.map(|n| n.p_value)),
                n.map(|n| n.significant.to_string()).unwrap_or_default(),
            )?;
        }
        write_profile_rows(&name, profile, out)?;
    }
    Ok(())
}

/// Writes the whole comparison as JSON.
pub fn write_json(r: &RunComparison, out: &mut dyn Write) -> io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, r).map_err(io::Error::other)?;
    writeln!(out)
}

/// Writes one profile comparison (prfcmp) as CSV: the header, then its summary and
/// function rows with `test` set to `test`.
pub fn write_profile_csv(test: &str, profile: &ProfileComparison, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "{CSV_HEADER}")?;
    write_profile_rows(&field(test), profile, out)
}

fn write_profile_rows(name: &str, profile: &ProfileComparison, out: &mut dyn Write) -> io::Result<()> {
    let (a, c) = (&profile.run1, &profile.run2);
    let summary = [
        ("cpus", f64::from(a.cpus), f64::from(c.cpus)),
        ("repetitions", a.repetitions as f64, c.repetitions as f64),
        ("elapsed", a.elapsed_sec, c.elapsed_sec),
        ("idle", a.idle_sec, c.idle_sec),
        ("cpu", a.cpu_sec, c.cpu_sec),
        ("lost", a.lost_sec, c.lost_sec),
    ];
    for (k, x, y) in summary {
        if k == "cpu" {
            let n = profile.cpu_noise;
            writeln!(
                out,
                "{name},summary,cpu,{x},{y},{},{},,,,{},{},{},{},{},{},",
                y - x,
                num(ratio(x, y)),
                a.cpu_sd_pct,
                c.cpu_sd_pct,
                method(n.method),
                n.ci95,
                n.p_value,
                n.significant
            )?;
        } else {
            writeln!(
                out,
                "{name},summary,{k},{x},{y},{},{},,,,,,,,,,",
                y - x,
                num(ratio(x, y))
            )?;
        }
    }
    for f in &profile.rows {
        writeln!(
            out,
            "{name},function,{},{},{},{},,{},{},{},{},{},{},{},{},{},{}",
            field(&f.function),
            num(f.run1_sec),
            num(f.run2_sec),
            f.delta_sec,
            f.delta_pct_of_run1_cpu,
            f.run1_pct_of_cpu,
            f.run2_pct_of_cpu,
            f.run1_sd_pct,
            f.run2_sd_pct,
            method(f.noise.method),
            f.noise.ci95,
            f.noise.p_value,
            f.noise.significant,
            f.listed
        )?;
    }
    Ok(())
}

/// Writes one profile comparison (prfcmp) as JSON.
pub fn write_profile_json(profile: &ProfileComparison, out: &mut dyn Write) -> io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, profile).map_err(io::Error::other)?;
    writeln!(out)
}
