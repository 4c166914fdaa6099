//! `TEST/prfout`: a profile written as text, and read back through the parser of
//! `upcmp-parsers` (docs/format.md).

use super::{io_err, read_text_with, StoreError, PROFILE_CAP};
use crate::fsio::Links;
use crate::model::Profile;
use std::io::Write;
use std::path::Path;
use upcmp_parsers::prfout::{parse_prfout, FORMAT_VERSION, MAGIC};
use upcmp_parsers::ParseError;

/// The file's name in a test directory.
pub const PRFOUT_FILE: &str = "prfout";

/// The longest function or module name kept: the parser cuts longer names, merges the
/// rows whose cut names are one, and says so in a warning. A 100 MB name would otherwise
/// cost gigabytes in the tables and reports made from it.
pub use upcmp_parsers::MAX_NAME_BYTES;

/// Parses a prfout text; `file` names it in errors. Names longer than
/// [`MAX_NAME_BYTES`] are cut, with a warning.
pub fn parse(text: &str, file: &str) -> Result<Profile, ParseError> {
    parse_prfout(text, file).map(Profile::from_prfout)
}

/// Reads and parses a prfout file named by the user (a symbolic link is followed).
pub fn read(path: &Path) -> Result<Profile, StoreError> {
    read_with(path, Links::Follow)
}

/// Reads and parses a prfout file; inside a run directory `links` is [`Links::Refuse`].
pub fn read_with(path: &Path, links: Links) -> Result<Profile, StoreError> {
    let text = read_text_with(path, links, PROFILE_CAP)?;
    Ok(parse(&text, &path.display().to_string())?)
}

/// Writes `p` in prfout format (functions in the given order).
pub fn write(p: &Profile, mut out: impl Write) -> std::io::Result<()> {
    writeln!(out, "{MAGIC} {FORMAT_VERSION}")?;
    writeln!(out, "test {}", p.test)?;
    if let Some(c) = &p.command {
        writeln!(out, "command {}", one_line(c))?;
    }
    writeln!(out, "event {}", p.event)?;
    writeln!(out, "unit {}", p.unit.as_str())?;
    match p.period_sec() {
        Some(s) => writeln!(out, "period-sec {s}")?,
        None => writeln!(out, "period {}", p.period)?,
    }
    writeln!(out, "cpus {}", p.cpus.len())?;
    writeln!(out, "wall-sec {:.6}", p.wall_sec)?;
    writeln!(out, "idle-set {}", p.idle_set.join(" "))?;
    // Weights are written where they are not the counts times the period.
    let weighted = !p.fixed_period();
    for c in &p.cpus {
        write!(out, "cpu {} samples {}", c.cpu, c.samples)?;
        if weighted {
            write!(out, " weight {}", c.weight)?;
        }
        write!(out, " lost {} throttled {}", c.lost, c.throttled)?;
        if let Some(b) = c.procstat_busy_sec {
            write!(out, " procstat-busy-sec {b:.2}")?;
        }
        writeln!(out)?;
    }
    for w in &p.warnings {
        writeln!(out, "warning {}", one_line(w))?;
    }
    writeln!(out, "functions {}", p.functions.len())?;
    write!(out, "#")?;
    for c in &p.cpus {
        write!(out, " {:>9}", format!("cpu{}", c.cpu))?;
    }
    if weighted {
        write!(out, " | weights | sum of squares")?;
    }
    writeln!(out, " module function")?;
    for f in &p.functions {
        for n in &f.per_cpu {
            write!(out, "  {n:>9}")?;
        }
        if weighted {
            write!(out, " |")?;
            for w in &f.weight_per_cpu {
                write!(out, " {w}")?;
            }
            write!(out, " | {:e}", f.weight_sq)?;
        }
        writeln!(out, " [{}] {}", f.module, one_line(&f.name))?;
    }
    writeln!(out, "end")
}

/// Writes `p` to `path` atomically.
pub fn write_file(p: &Profile, path: &Path) -> Result<(), StoreError> {
    let mut buf = Vec::new();
    write(p, &mut buf).map_err(io_err(path))?;
    super::write_atomic(path, &buf)
}

fn one_line(s: &str) -> String {
    s.replace(['\n', '\r'], " ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::profile::Unit;
    use crate::model::{CpuTotals, FunctionSamples};

    fn profile(unit: Unit, period: f64, weights: [Vec<u64>; 2], squares: [f64; 2]) -> Profile {
        let cpu = |cpu, samples, weight, lost, throttled, busy| CpuTotals {
            cpu,
            samples,
            weight,
            lost,
            throttled,
            procstat_busy_sec: busy,
        };
        let [w0, w1] = weights;
        Profile {
            test: "t.2".into(),
            command: Some("sh -c 'x'".into()),
            event: "cpu-clock".into(),
            unit,
            period,
            wall_sec: 1.25,
            idle_set: vec!["do_idle".into(), "default_idle".into()],
            cpus: vec![
                cpu(0, 5, w0[0] + w1[0], 1, 0, Some(0.5)),
                cpu(3, 2, w0[1] + w1[1], 0, 1, None),
            ],
            warnings: vec!["cpu 3: x".into()],
            functions: vec![
                FunctionSamples {
                    module: "kernel".into(),
                    name: "a".into(),
                    per_cpu: vec![4, 0],
                    weight_per_cpu: w0,
                    weight_sq: squares[0],
                },
                FunctionSamples {
                    module: "user".into(),
                    name: "user:my prog".into(),
                    per_cpu: vec![1, 2],
                    weight_per_cpu: w1,
                    weight_sq: squares[1],
                },
            ],
        }
    }

    fn round_trip(p: &Profile) -> String {
        let mut buf = Vec::new();
        write(p, &mut buf).unwrap();
        let text = String::from_utf8(buf).unwrap();
        assert_eq!(&parse(&text, "x").unwrap(), p, "{text}");
        text
    }

    #[test]
    fn long_names_are_cut_and_merged() {
        let mut p = profile(
            Unit::Nanoseconds,
            1e6,
            [vec![4_000_000, 0], vec![1_000_000, 2_000_000]],
            [4e12, 3e12],
        );
        p.functions[0].name = "é".repeat(MAX_NAME_BYTES) + "a";
        p.functions[1].module = "kernel".into();
        p.functions[1].name = "é".repeat(MAX_NAME_BYTES) + "b";
        let mut buf = Vec::new();
        write(&p, &mut buf).unwrap();
        let back = parse(&String::from_utf8(buf).unwrap(), "x").unwrap();
        assert_eq!(back.functions.len(), 1, "the two cut names are one row");
        let f = &back.functions[0];
        assert_eq!(f.name.len(), MAX_NAME_BYTES, "cut at a character boundary");
        assert_eq!(f.per_cpu, [5, 2]);
        assert!(back
            .warnings
            .last()
            .unwrap()
            .starts_with("2 names longer than 4096 bytes were cut"));
    }

    #[test]
    fn write_then_parse_is_identity() {
        // A fixed period: the weights are the counts times the period, and not written.
        let fixed = profile(
            Unit::Nanoseconds,
            1e6,
            [vec![4_000_000, 0], vec![1_000_000, 2_000_000]],
            [4e12, 3e12],
        );
        let text = round_trip(&fixed);
        assert!(
            text.contains("period-sec 0.001\n") && !text.contains(" weight "),
            "{text}"
        );
        // Varying periods of another event: every weight and square is kept.
        let mut varying = profile(Unit::Events, 1234.5, [vec![5000, 0], vec![700, 1969]], [6.5e6, 2.4e6]);
        varying.event = "cycles".into();
        let text = round_trip(&varying);
        assert!(text.contains("unit events\nperiod 1234.5\n"), "{text}");
        assert!(text.contains("cpu 0 samples 5 weight 5700 lost 1"), "{text}");
    }
}
