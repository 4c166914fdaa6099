//! `/proc/stat` per-CPU lines, for the busy-time cross-check of sampled CPU time.
//!
//! Bounds: CPU numbers are below [`MAX_CPUS`], and the eight tick counts a line keeps add
//! up to less than 2^64, so [`CpuStat::busy`] cannot overflow.

use crate::{numbered_lines, LineRef, NomError, ParseError, EXPECT_CPU, MAX_CPUS};
use nom::bytes::complete::tag;
use nom::character::complete::{space1, u32 as dec_u32, u64 as dec_u64};
use nom::multi::many1;
use nom::sequence::preceded;
use nom::Parser;

/// One `cpuN` line of /proc/stat, in USER_HZ ticks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CpuStat {
    /// The CPU's number.
    pub cpu: u32,
    /// user, nice, system, idle, iowait, irq, softirq, steal (missing fields are 0).
    pub ticks: [u64; 8],
}

impl CpuStat {
    /// Ticks spent running something: user + nice + system + irq + softirq.
    /// Steal is left out: a stolen CPU runs nothing of ours and takes no samples.
    pub fn busy(&self) -> u64 {
        let t = &self.ticks;
        t[0] + t[1] + t[2] + t[5] + t[6]
    }
}

// cpu0 10132153 290696 3084719 46828483 16683 0 25195 0 175628 0
fn cpu_line(i: &str) -> nom::IResult<&str, (u32, Vec<u64>), NomError<'_>> {
    (preceded(tag("cpu"), dec_u32), many1(preceded(space1, dec_u64))).parse(i)
}

/// Parses the per-CPU lines of a /proc/stat text (the aggregate `cpu` line and the
/// other lines are skipped, as they are not per CPU).
pub fn parse_proc_stat(text: &str, file: &str) -> Result<Vec<CpuStat>, ParseError> {
    let mut out = Vec::new();
    for (n, line) in numbered_lines(text) {
        let is_per_cpu = line.starts_with("cpu") && line.as_bytes().get(3).is_some_and(u8::is_ascii_digit);
        if !is_per_cpu {
            continue;
        }
        let l = LineRef {
            file,
            number: n,
            text: line,
        };
        let (cpu, fields) = l.parse_all(line, cpu_line, "'cpuN' followed by tick counts")?;
        if cpu >= MAX_CPUS {
            return Err(l.error(&line[3..], EXPECT_CPU));
        }
        let mut ticks = [0; 8];
        for (t, f) in ticks.iter_mut().zip(fields) {
            *t = f;
        }
        if ticks.iter().try_fold(0u64, |sum, &t| sum.checked_add(t)).is_none() {
            return Err(l.error(
                line,
                format!("tick counts that add up to at most {} (user to steal)", u64::MAX),
            ));
        }
        out.push(CpuStat { cpu, ticks });
    }
    if out.is_empty() {
        return Err(ParseError::whole(file, "per-CPU 'cpuN' lines"));
    }
    Ok(out)
}

/// The system-wide counters of a /proc/stat text, in file order: `ctxt`, `processes`,
/// `procs_running`, `procs_blocked`, and the totals (first numbers) of `intr` and `softirq`.
pub fn parse_proc_stat_totals<'a>(text: &'a str, file: &'a str) -> Result<Vec<(&'a str, u64)>, ParseError> {
    const KEYS: [&str; 6] = ["ctxt", "processes", "procs_running", "procs_blocked", "intr", "softirq"];
    let mut out = Vec::new();
    for (n, line) in numbered_lines(text) {
        let Some(key) = KEYS
            .iter()
            .find(|k| line.strip_prefix(**k).is_some_and(|r| r.starts_with(' ')))
        else {
            continue;
        };
        let l = LineRef {
            file,
            number: n,
            text: line,
        };
        // intr 1291542 24 0 ...: the first number is the total.
        let (_, v) = l.parse_prefix(&line[key.len()..], preceded(space1, dec_u64), "a count")?;
        out.push((*key, v));
    }
    if !out.iter().any(|(k, _)| *k == "ctxt") {
        return Err(ParseError::whole(file, "a 'ctxt N' line"));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_per_cpu_lines_only() {
        let text = "cpu  20 0 10 100 0 0 0 0 0 0\ncpu0 10 1 5 50 3 2 1 7 0 0\ncpu1 10 0 5 50\nintr 5 6\n";
        let s = parse_proc_stat(text, "/proc/stat").unwrap();
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].busy(), 10 + 1 + 5 + 2 + 1);
        assert_eq!(s[1].cpu, 1);
        assert_eq!(s[1].busy(), 15);
    }

    #[test]
    fn malformed_line_is_located() {
        let e = parse_proc_stat("cpu  1 2\ncpu0 1 x\n", "stat").unwrap_err();
        assert_eq!((e.line, e.column), (2, 7));
    }

    #[test]
    fn totals() {
        let text = "cpu0 1 2\nintr 1291542 24 0\nctxt 23245926\nbtime 17\nprocesses 530111\nprocs_running 10\nprocs_blocked 0\nsoftirq 99 1 2\n";
        let t = parse_proc_stat_totals(text, "stat").unwrap();
        assert_eq!(
            t,
            vec![
                ("intr", 1291542),
                ("ctxt", 23245926),
                ("processes", 530111),
                ("procs_running", 10),
                ("procs_blocked", 0),
                ("softirq", 99)
            ]
        );
        let e = parse_proc_stat_totals("ctxt x\n", "stat").unwrap_err();
        assert_eq!((e.line, e.column), (1, 6));
        assert!(parse_proc_stat_totals("cpu0 1\n", "stat").is_err());
        let real = std::fs::read_to_string("/proc/stat").unwrap();
        assert!(parse_proc_stat_totals(&real, "/proc/stat").unwrap().len() >= 4);
    }

    #[test]
    fn impossible_values_are_refused() {
        let e = parse_proc_stat("cpu8192 1 2 3 4\n", "stat").unwrap_err();
        assert_eq!((e.line, e.column), (1, 4));
        assert!(e.expected.contains("below 8192"), "{e}");
        let max = u64::MAX;
        let e = parse_proc_stat(&format!("cpu0 {max} 0 1 0\n"), "stat").unwrap_err();
        assert!(e.expected.contains("add up to at most"), "{e}");
        // Fields after the eighth are not kept, so they are not added.
        let s = parse_proc_stat(&format!("cpu0 1 0 1 0 0 0 0 0 {max} {max}\n"), "stat").unwrap();
        assert_eq!(s[0].busy(), 2);
    }

    #[test]
    fn the_real_file_parses() {
        let text = std::fs::read_to_string("/proc/stat").unwrap();
        let s = parse_proc_stat(&text, "/proc/stat").unwrap();
        assert!(!s.is_empty());
    }
}
