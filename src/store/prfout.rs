//! `TEST/prfout`: a profile written as text, and read back through the parser of
//! `upcmp-parsers` (docs/format.md).

use super::{io_err, read_text, StoreError};
use crate::model::{CpuTotals, FunctionSamples, Profile};
use std::io::Write;
use std::path::Path;
use upcmp_parsers::prfout::{parse_prfout, Prfout, FORMAT_VERSION, MAGIC};
use upcmp_parsers::ParseError;

/// The file's name in a test directory.
pub const PRFOUT_FILE: &str = "prfout";

/// The profile a prfout file describes.
fn profile_of(f: Prfout) -> Profile {
    Profile {
        test: f.test,
        command: f.command,
        event: f.event,
        period_sec: f.period_sec,
        wall_sec: f.wall_sec,
        idle_set: f.idle_set,
        cpus: f
            .cpus
            .into_iter()
            .map(|c| CpuTotals {
                cpu: c.cpu,
                samples: c.samples,
                lost: c.lost,
                throttled: c.throttled,
                procstat_busy_sec: c.procstat_busy_sec,
            })
            .collect(),
        warnings: f.warnings,
        functions: f
            .functions
            .into_iter()
            .map(|r| FunctionSamples {
                module: r.module,
                name: r.name,
                per_cpu: r.per_cpu,
            })
            .collect(),
    }
}

/// Parses a prfout text; `file` names it in errors.
pub fn parse(text: &str, file: &str) -> Result<Profile, ParseError> {
    parse_prfout(text, file).map(profile_of)
}

/// Reads and parses a prfout file.
pub fn read(path: &Path) -> Result<Profile, StoreError> {
    let text = read_text(path)?;
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
    writeln!(out, "period-sec {}", p.period_sec)?;
    writeln!(out, "cpus {}", p.cpus.len())?;
    writeln!(out, "wall-sec {:.6}", p.wall_sec)?;
    writeln!(out, "idle-set {}", p.idle_set.join(" "))?;
    for c in &p.cpus {
        write!(
            out,
            "cpu {} samples {} lost {} throttled {}",
            c.cpu, c.samples, c.lost, c.throttled
        )?;
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
    writeln!(out, " module function")?;
    for f in &p.functions {
        for n in &f.per_cpu {
            write!(out, "  {n:>9}")?;
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

    #[test]
    fn write_then_parse_is_identity() {
        let p = Profile {
            test: "t.2".into(),
            command: Some("sh -c 'x'".into()),
            event: "cpu-clock".into(),
            period_sec: 0.001,
            wall_sec: 1.25,
            idle_set: vec!["do_idle".into(), "default_idle".into()],
            cpus: vec![
                CpuTotals {
                    cpu: 0,
                    samples: 5,
                    lost: 1,
                    throttled: 0,
                    procstat_busy_sec: Some(0.5),
                },
                CpuTotals {
                    cpu: 3,
                    samples: 2,
                    lost: 0,
                    throttled: 1,
                    procstat_busy_sec: None,
                },
            ],
            warnings: vec!["cpu 3: x".into()],
            functions: vec![
                FunctionSamples {
                    module: "kernel".into(),
                    name: "a".into(),
                    per_cpu: vec![4, 0],
                },
                FunctionSamples {
                    module: "user".into(),
                    name: "user:my prog".into(),
                    per_cpu: vec![1, 2],
                },
            ],
        };
        let mut buf = Vec::new();
        write(&p, &mut buf).unwrap();
        let back = parse(std::str::from_utf8(&buf).unwrap(), "x").unwrap();
        assert_eq!(back, p);
    }
}
