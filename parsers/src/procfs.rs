//! The /proc files whose counters uprun records around each test: `/proc/vmstat`,
//! `/proc/interrupts`, `/proc/softirqs`, `/proc/schedstat`, `/proc/meminfo` (and the
//! totals of `/proc/stat`, in [`crate::procstat`]).
//!
//! Each parser returns the counters in file order, named as the file names them; a line
//! that does not have the expected shape is an error naming the file, line and column
//! (the kernel writes these files, so a strange line means a format this build does not
//! know, which must not be read as zeros).

use crate::{numbered_lines, LineRef, NomError, ParseError};
use nom::bytes::complete::{tag, take_while1};
use nom::character::complete::{space0, space1, u32 as dec_u32, u64 as dec_u64};
use nom::combinator::opt;
use nom::multi::many1;
use nom::sequence::{preceded, terminated};
use nom::Parser;

fn line_ref<'a>(file: &'a str, number: usize, text: &'a str) -> LineRef<'a> {
    LineRef { file, number, text }
}

fn name(i: &str) -> nom::IResult<&str, &str, NomError<'_>> {
    take_while1(|c: char| !c.is_whitespace() && c != ':').parse(i)
}

// pgfault 1832741
fn name_value(i: &str) -> nom::IResult<&str, (&str, u64), NomError<'_>> {
    (terminated(name, space1), dec_u64).parse(i)
}

/// Parses `/proc/vmstat`: `name value` lines.
pub fn parse_vmstat<'a>(text: &'a str, file: &'a str) -> Result<Vec<(&'a str, u64)>, ParseError> {
    let mut out = Vec::new();
    for (n, line) in numbered_lines(text) {
        if line.trim().is_empty() {
            continue;
        }
        out.push(line_ref(file, n, line).parse_all(line, name_value, "'name value'")?);
    }
    if out.is_empty() {
        return Err(ParseError::whole(file, "'name value' lines"));
    }
    Ok(out)
}

// MemFree:          221468 kB
// HugePages_Total:       0
fn meminfo_line(i: &str) -> nom::IResult<&str, (&str, u64), NomError<'_>> {
    (
        terminated(name, (tag(":"), space1)),
        terminated(dec_u64, opt((space1, tag("kB")))),
    )
        .parse(i)
}

/// Parses `/proc/meminfo`: `Name: value [kB]` lines (values in kB where the unit is given).
pub fn parse_meminfo<'a>(text: &'a str, file: &'a str) -> Result<Vec<(&'a str, u64)>, ParseError> {
    let mut out = Vec::new();
    for (n, line) in numbered_lines(text) {
        if line.trim().is_empty() {
            continue;
        }
        out.push(line_ref(file, n, line).parse_all(line, meminfo_line, "'Name: value [kB]'")?);
    }
    if out.is_empty() {
        return Err(ParseError::whole(file, "'Name: value kB' lines"));
    }
    Ok(out)
}

/// A per-CPU table (`/proc/interrupts`, `/proc/softirqs`): one row per source, one count
/// per CPU column.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CpuTable<'a> {
    /// The CPUs of the header, in column order.
    pub cpus: Vec<u32>,
    /// Each source: its name and its count on each CPU (fewer counts than CPUs for a
    /// source the kernel counts once, such as `ERR`).
    pub rows: Vec<CpuTableRow<'a>>,
}

/// One source of a [`CpuTable`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuTableRow<'a> {
    /// The label before the colon: an IRQ number or a name (`LOC`, `TIMER`).
    pub label: &'a str,
    /// One count per CPU column (the first ones when the kernel prints fewer).
    pub counts: Vec<u64>,
    /// What follows the counts (chip, hardware IRQ, devices, or a description), trimmed.
    pub description: &'a str,
}

impl CpuTableRow<'_> {
    /// The counts summed over the CPUs.
    pub fn total(&self) -> u64 {
        self.counts.iter().sum()
    }
}

//            CPU0       CPU1
fn cpu_header(i: &str) -> nom::IResult<&str, Vec<u32>, NomError<'_>> {
    many1(preceded(space0, preceded(tag("CPU"), dec_u32))).parse(i)
}

//  31:          0       2461 PCI-MSIX-0000:00:01.0   3-edge      virtio0-stats
// ERR:          0
//       TIMER:     324940     429691
fn table_row<'a>(l: &LineRef<'a>, line: &'a str, cpus: usize) -> Result<CpuTableRow<'a>, ParseError> {
    let (mut rest, label) = l.parse_prefix(line, preceded(space0, terminated(name, tag(":"))), "'LABEL:'")?;
    let mut counts = Vec::new();
    while counts.len() < cpus {
        match preceded(space1::<&str, NomError>, dec_u64).parse(rest) {
            Ok((r, c)) if r.is_empty() || r.starts_with(char::is_whitespace) => {
                counts.push(c);
                rest = r;
            }
            _ => break,
        }
    }
    if counts.is_empty() {
        return Err(l.error(rest, "a count for each CPU"));
    }
    Ok(CpuTableRow {
        label,
        counts,
        description: rest.trim(),
    })
}

fn parse_table<'a>(text: &'a str, file: &'a str) -> Result<CpuTable<'a>, ParseError> {
    let mut lines = numbered_lines(text).filter(|(_, l)| !l.trim().is_empty());
    let Some((n, header)) = lines.next() else {
        return Err(ParseError::whole(file, "a header of CPU columns ('CPU0 CPU1 …')"));
    };
    let cpus = line_ref(file, n, header).parse_all(header, cpu_header, "'CPU0 CPU1 …'")?;
    let mut rows = Vec::new();
    for (n, line) in lines {
        rows.push(table_row(&line_ref(file, n, line), line, cpus.len())?);
    }
    Ok(CpuTable { cpus, rows })
}

/// Parses `/proc/interrupts`.
pub fn parse_interrupts<'a>(text: &'a str, file: &'a str) -> Result<CpuTable<'a>, ParseError> {
    parse_table(text, file)
}

/// Parses `/proc/softirqs`.
pub fn parse_softirqs<'a>(text: &'a str, file: &'a str) -> Result<CpuTable<'a>, ParseError> {
    parse_table(text, file)
}

/// One CPU's line of `/proc/schedstat` (version 15 and later): the fields that are times.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SchedCpu {
    /// The CPU.
    pub cpu: u32,
    /// Time tasks ran on it, ns (field 7).
    pub run_ns: u64,
    /// Time tasks waited to run on it, ns (field 8).
    pub run_delay_ns: u64,
    /// Time slices run on it (field 9).
    pub timeslices: u64,
}

// cpu0 0 0 0 0 0 0 2120133290 83224891 2035
fn schedstat_cpu(i: &str) -> nom::IResult<&str, (u32, Vec<u64>), NomError<'_>> {
    (preceded(tag("cpu"), dec_u32), many1(preceded(space1, dec_u64))).parse(i)
}

/// Parses the `cpuN` lines of `/proc/schedstat` (`version` must be 15 or later; the
/// `domain` lines and the rest are skipped).
pub fn parse_schedstat(text: &str, file: &str) -> Result<Vec<SchedCpu>, ParseError> {
    let mut out = Vec::new();
    let mut version = None;
    for (n, line) in numbered_lines(text) {
        let l = line_ref(file, n, line);
        if let Some(v) = line.strip_prefix("version ") {
            let v: u32 = l.parse_all(v, dec_u32, "a version number")?;
            if v < 15 {
                return Err(l.error(line, "schedstat version 15 or later"));
            }
            version = Some(v);
        } else if line.starts_with("cpu") {
            let (cpu, fields) = l.parse_all(line, schedstat_cpu, "'cpuN' followed by counts")?;
            if fields.len() < 9 {
                return Err(l.error("", "9 counts after 'cpuN'"));
            }
            out.push(SchedCpu {
                cpu,
                run_ns: fields[6],
                run_delay_ns: fields[7],
                timeslices: fields[8],
            });
        }
    }
    if version.is_none() {
        return Err(ParseError::whole(file, "a 'version N' line"));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vmstat_lines() {
        let v = parse_vmstat("nr_free_pages 55380\npgfault 1832741\n", "vmstat").unwrap();
        assert_eq!(v, vec![("nr_free_pages", 55380), ("pgfault", 1832741)]);
        let e = parse_vmstat("pgfault 12\npgmajfault x\n", "vmstat").unwrap_err();
        assert_eq!((e.line, e.column), (2, 12));
        assert!(parse_vmstat("", "vmstat").is_err());
    }

    #[test]
    fn meminfo_lines() {
        let m = parse_meminfo("MemTotal:       24683584 kB\nHugePages_Total:       0\n", "meminfo").unwrap();
        assert_eq!(m, vec![("MemTotal", 24683584), ("HugePages_Total", 0)]);
        let e = parse_meminfo("MemTotal: 1 kB\nMemFree 2 kB\n", "meminfo").unwrap_err();
        assert_eq!(e.line, 2);
    }

    #[test]
    fn interrupts_table() {
        let text = "           CPU0       CPU1       \n \
                    24:          1          0  IO-APIC   5-edge      ACPI:Ged\n \
                    31:          0       2461 PCI-MSIX-0000:00:01.0   3-edge      virtio0-stats\n\
                    NMI:          0          0   Non-maskable interrupts\n\
                    ERR:          0\n";
        let t = parse_interrupts(text, "interrupts").unwrap();
        assert_eq!(t.cpus, vec![0, 1]);
        assert_eq!(t.rows.len(), 4);
        assert_eq!(t.rows[0].label, "24");
        assert_eq!(t.rows[0].description, "IO-APIC   5-edge      ACPI:Ged");
        assert_eq!(t.rows[1].total(), 2461);
        assert_eq!(t.rows[2].description, "Non-maskable interrupts");
        assert_eq!(t.rows[3].counts, vec![0]);
        // A device name that starts with digits is not a count once every CPU has one.
        let t = parse_interrupts("CPU0\n 5: 7 3com\n", "i").unwrap();
        assert_eq!((t.rows[0].counts.clone(), t.rows[0].description), (vec![7], "3com"));
        let e = parse_interrupts("CPU0 CPU1\nLOC: x\n", "interrupts").unwrap_err();
        assert_eq!((e.line, e.column), (2, 5));
        assert!(parse_interrupts("no header\n", "interrupts").is_err());
    }

    #[test]
    fn softirqs_table() {
        let text = "                    CPU0       CPU1       \n          HI:          0          0\n       TIMER:     324940     429691\n";
        let t = parse_softirqs(text, "softirqs").unwrap();
        assert_eq!(t.rows[1].label, "TIMER");
        assert_eq!(t.rows[1].total(), 324940 + 429691);
    }

    #[test]
    fn schedstat_cpus() {
        let text = "version 15\ntimestamp 4295\ncpu0 0 0 5 1 2 1 2120133290 83224891 2035\n\
                    domain0 03 1 2 3\ncpu1 0 0 5 1 2 1 10 20 30\n";
        let s = parse_schedstat(text, "schedstat").unwrap();
        assert_eq!(s.len(), 2);
        assert_eq!(
            s[0],
            SchedCpu {
                cpu: 0,
                run_ns: 2120133290,
                run_delay_ns: 83224891,
                timeslices: 2035
            }
        );
        assert!(parse_schedstat("version 14\ncpu0 1 2 3 4 5 6 7 8 9\n", "s").is_err());
        assert!(parse_schedstat("cpu0 1 2 3 4 5 6 7 8 9\n", "s").is_err());
        let e = parse_schedstat("version 15\ncpu0 1 2 3\n", "s").unwrap_err();
        assert_eq!(e.line, 2);
    }

    #[test]
    fn this_machines_files_parse() {
        let read = |p: &str| std::fs::read_to_string(p).ok();
        if let Some(t) = read("/proc/vmstat") {
            assert!(parse_vmstat(&t, "/proc/vmstat")
                .unwrap()
                .iter()
                .any(|(n, _)| *n == "pgfault"));
        }
        if let Some(t) = read("/proc/meminfo") {
            assert!(!parse_meminfo(&t, "/proc/meminfo").unwrap().is_empty());
        }
        if let Some(t) = read("/proc/interrupts") {
            assert!(!parse_interrupts(&t, "/proc/interrupts").unwrap().rows.is_empty());
        }
        if let Some(t) = read("/proc/softirqs") {
            assert!(!parse_softirqs(&t, "/proc/softirqs").unwrap().rows.is_empty());
        }
        if let Some(t) = read("/proc/schedstat") {
            parse_schedstat(&t, "/proc/schedstat").unwrap();
        }
    }
}
