//! Command-line pieces shared by upcmp and prfcmp: output formats and import options.
//! Built once, in the library, for every command that has them.

use crate::compare::DEFAULT_CUTOFF_PCT;
use crate::import::{ImportOptions, InputFormat};
use crate::report::format::OutputFormat;
use clap::{Args, ValueEnum};
use std::io::IsTerminal;
use std::path::PathBuf;

/// `--format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FormatArg {
    /// The seed's text layout.
    Text,
    /// One row per number, every column.
    Csv,
    /// Everything, as JSON.
    Json,
    /// Markdown tables, for pull requests.
    Markdown,
    /// Plain text of at most 80 columns, to paste into a mailing-list reply.
    Mail,
}

impl From<FormatArg> for OutputFormat {
    fn from(f: FormatArg) -> Self {
        match f {
            FormatArg::Text => OutputFormat::Text,
            FormatArg::Csv => OutputFormat::Csv,
            FormatArg::Json => OutputFormat::Json,
            FormatArg::Markdown => OutputFormat::Markdown,
            FormatArg::Mail => OutputFormat::Mail,
        }
    }
}

/// `--input-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum InputFormatArg {
    /// A uprun prfout file or test directory.
    Prfout,
    /// A `perf record` file.
    PerfData,
    /// `perf script` output.
    PerfScript,
    /// Folded stacks (`a;b;c 123`).
    Folded,
}

impl From<InputFormatArg> for InputFormat {
    fn from(f: InputFormatArg) -> Self {
        match f {
            InputFormatArg::Prfout => InputFormat::Prfout,
            InputFormatArg::PerfData => InputFormat::PerfData,
            InputFormatArg::PerfScript => InputFormat::PerfScript,
            InputFormatArg::Folded => InputFormat::Folded,
        }
    }
}

/// How profiles from other tools are read.
#[derive(Debug, Clone, Args)]
pub struct ImportArgs {
    /// The inputs' format; guessed from their first bytes when not given
    /// (e.g. --input-format perf-script for text that starts oddly).
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub input_format: Option<InputFormatArg>,
    /// Kernel symbols for perf.data recorded on another machine or kernel: a copy of
    /// its /proc/kallsyms (e.g. --kallsyms kallsyms-6.1.gz).
    #[arg(long, value_name = "FILE")]
    pub kallsyms: Option<PathBuf>,
    /// An ELF vmlinux for perf.data's core-kernel symbols (and `--annotate`'s code and
    /// lines); its build-id must be the recording's (e.g. --vmlinux
    /// /usr/lib/debug/boot/vmlinux-6.1.0-28-amd64).
    #[arg(long, value_name = "FILE")]
    pub vmlinux: Option<PathBuf>,
    /// Time one sample stands for, in seconds, for inputs that do not say (folded
    /// stacks: 0.001 by default), e.g. --period-sec 0.00025.
    #[arg(long, value_name = "SEC", value_parser = period_seconds)]
    pub period_sec: Option<f64>,
    /// The event to compare when a recording has several (perf record -e
    /// cpu-clock,page-faults); the first one by default, as perf report shows first. E.g.
    /// --event page-faults.
    #[arg(long, value_name = "NAME")]
    pub event: Option<String>,
}

impl ImportArgs {
    /// The library's options.
    pub fn options(&self) -> ImportOptions {
        ImportOptions::new(
            self.input_format.map(Into::into),
            self.kallsyms.clone(),
            self.vmlinux.clone(),
            self.period_sec,
        )
        .with_event(self.event.clone())
    }
}

/// Which samples count, as perf report filters them (uprun profiles are rebuilt from their
/// raw samples; perf.data and perf script text are filtered as they are read; folded
/// stacks cannot be).
#[derive(Debug, Clone, Args)]
pub struct FilterArgs {
    /// Count only the samples of these commands (thread names, comma-separated), e.g.
    /// --comm unixperf.
    #[arg(long, value_name = "COMMS", value_delimiter = ',')]
    pub comm: Vec<String>,
    /// Count only the samples of these processes (comma-separated), e.g. --pid 4242
    /// (perf script text must print them: perf script -F +pid).
    #[arg(long, value_name = "PIDS", value_delimiter = ',')]
    pub pid: Vec<u32>,
    /// Count only the samples of these threads (comma-separated), e.g. --tid 4243.
    #[arg(long, value_name = "TIDS", value_delimiter = ',')]
    pub tid: Vec<u32>,
    /// Count only the samples taken on these CPUs: a list with ranges, e.g. --cpu 0-1,3.
    #[arg(long, value_name = "CPUS", value_parser = cpu_list)]
    pub cpu: Option<CpuList>,
    /// Count only kernel-mode samples.
    #[arg(long, conflicts_with = "user_only")]
    pub kernel_only: bool,
    /// Count only user-mode samples.
    #[arg(long)]
    pub user_only: bool,
}

/// CPUs given on the command line (a newtype, so that clap takes the list as one value).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuList(pub Vec<u32>);

/// A CPU list as perf and sysfs write it: `0-2,5`.
pub fn cpu_list(s: &str) -> Result<CpuList, String> {
    let mut cpus = Vec::new();
    for part in s.split(',') {
        let num = |x: &str| {
            x.trim()
                .parse::<u32>()
                .map_err(|_| format!("'{x}' is not a CPU number; give a list such as 0-2,5"))
        };
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (num(a)?, num(b)?);
                if a > b || b - a > 65_535 {
                    return Err(format!("'{part}' is not a range of CPUs; give a list such as 0-2,5"));
                }
                cpus.extend(a..=b);
            }
            None => cpus.push(num(part)?),
        }
    }
    Ok(CpuList(cpus))
}

impl FilterArgs {
    /// The library's filter.
    pub fn filter(&self) -> crate::model::SampleFilter {
        crate::model::SampleFilter {
            comms: self.comm.clone(),
            pids: self.pid.clone(),
            tids: self.tid.clone(),
            cpus: self.cpu.clone().map(|c| c.0).unwrap_or_default(),
            mode: match (self.kernel_only, self.user_only) {
                (true, _) => Some(crate::model::ModeFilter::Kernel),
                (_, true) => Some(crate::model::ModeFilter::User),
                _ => None,
            },
            only_test: false,
        }
    }
}

/// Whether colour may be used on standard output: a terminal, and `NO_COLOR` unset or
/// empty (<https://no-color.org>).
pub fn color_enabled() -> bool {
    std::env::var_os("NO_COLOR").map_or(true, |v| v.is_empty()) && std::io::stdout().is_terminal()
}

/// Colours the sign of each delta in the text report: red where run 2 spends more time,
/// green where it spends less. Only the CPU Time Analysis rows (after its title) are
/// touched; nothing else changes, so the uncoloured text is the same report.
pub fn colorize_text(report: &str) -> String {
    let mut out = String::with_capacity(report.len() + 1024);
    let mut in_functions = false;
    for line in report.split_inclusive('\n') {
        if line.starts_with("CPU Time Analysis") {
            in_functions = true;
        } else if line.starts_with("Notes:") || line.starts_with('(') || line.trim().is_empty() {
            in_functions = false;
        }
        let last = line.split_whitespace().last().and_then(|w| w.parse::<f64>().ok());
        match (in_functions, last) {
            (true, Some(x)) if x > 0.0 => out.push_str(&format!("\x1b[31m{}\x1b[0m\n", line.trim_end_matches('\n'))),
            (true, Some(x)) if x < 0.0 => out.push_str(&format!("\x1b[32m{}\x1b[0m\n", line.trim_end_matches('\n'))),
            _ => out.push_str(line),
        }
    }
    out
}

/// A percentage as the synopsis writes it, with or without its sign: `1`, `1%`, `0.5%`.
pub fn percent(s: &str) -> Result<f64, String> {
    s.strip_suffix('%')
        .unwrap_or(s)
        .parse::<f64>()
        .map_err(|_| format!("'{s}' is not a percentage (e.g. 1 or 1%)"))
}

/// A sample's period for `--period-sec`: a finite number of seconds from 1 ns to 1 hour.
/// `nan`, `inf`, 0 or 1e308 would make every time of the report NaN, 0 or infinite.
pub fn period_seconds(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(x) if (1e-9..=3600.0).contains(&x) => Ok(x),
        _ => Err(format!(
            "'{s}' is not a sample period in seconds from 1e-9 (1 ns) to 3600 (e.g. 0.001 for 1000 Hz)"
        )),
    }
}

/// A limit in percent for `--fail-if-worse`: a finite number, 0 or more.
pub fn limit_percent(s: &str) -> Result<f64, String> {
    match percent(s) {
        Ok(x) if x.is_finite() && x >= 0.0 => Ok(x),
        _ => Err(format!("'{s}' is not a limit in percent (0 or more, e.g. 5 or 5%)")),
    }
}

/// The cutoff from the original's positional `cutoff%` or `--cutoff` (they must agree
/// when both are given); the default when neither is.
pub fn resolve_cutoff(positional: Option<f64>, option: Option<f64>) -> anyhow::Result<f64> {
    let c = match (positional, option) {
        (Some(a), Some(b)) if a != b => {
            anyhow::bail!("the cutoff is given twice ({a} and --cutoff {b}); give it once")
        }
        (a, b) => a.or(b).unwrap_or(DEFAULT_CUTOFF_PCT),
    };
    if !(0.0..=100.0).contains(&c) {
        anyhow::bail!("cutoff {c} is not a percentage between 0 and 100 (e.g. --cutoff 1)");
    }
    Ok(c)
}

/// The hint of the options that answer an import's error, after its message (the
/// library's messages do not know the command line).
pub fn with_import_hint(e: anyhow::Error) -> anyhow::Error {
    let needs_symbols = e.chain().any(|c| {
        matches!(
            c.downcast_ref::<crate::import::ImportError>(),
            Some(crate::import::ImportError::NoKernelSymbols { .. })
        )
    });
    if needs_symbols {
        anyhow::anyhow!("{e:#}: pass --kallsyms FILE (a copy of that machine's /proc/kallsyms) or --vmlinux FILE")
    } else {
        e
    }
}

#[cfg(test)]
mod cli_tests {
    use super::*;

    #[test]
    fn cutoffs() {
        let ok = |a, b| resolve_cutoff(a, b).ok();
        assert_eq!(ok(Some(1.0), None), Some(1.0));
        assert_eq!(ok(None, Some(2.0)), Some(2.0));
        assert_eq!(ok(Some(2.0), Some(2.0)), Some(2.0));
        assert_eq!(ok(Some(1.0), Some(2.0)), None);
        assert_eq!(ok(Some(101.0), None), None);
        assert_eq!(ok(Some(-1.0), None), None);
        assert_eq!(ok(None, None), Some(0.5));
        assert_eq!(percent("1%"), Ok(1.0));
        assert_eq!(percent("0.5"), Ok(0.5));
        assert!(percent("1%%").is_err() && percent("x").is_err());
        assert_eq!(period_seconds("0.00025"), Ok(0.00025));
        for bad in [
            "nan", "NaN", "inf", "-inf", "0", "-0.001", "1e308", "1e-12", "3601", "x",
        ] {
            assert!(period_seconds(bad).is_err(), "{bad}");
        }
    }
}

/// Which functions are annotated line by line, and where their sources are.
#[derive(Debug, Clone, Args)]
pub struct AnnotateArgs {
    /// Below the function table, annotate FUNC line by line and instruction by
    /// instruction, each line with its noise test (repeatable), e.g. --annotate
    /// copy_page_range (docs/annotate.md).
    #[arg(long = "annotate", value_name = "FUNC")]
    pub functions: Vec<String>,
    /// Where to look for source files not at the path the debug information names
    /// (repeatable), e.g. --source-dir ~/src/linux.
    #[arg(long = "source-dir", value_name = "DIR")]
    pub source_dirs: Vec<PathBuf>,
}

impl AnnotateArgs {
    /// The library's options.
    pub fn options(&self) -> crate::compare::annotate::AnnotateOptions {
        crate::compare::annotate::AnnotateOptions {
            functions: self.functions.clone(),
            source_dirs: self.source_dirs.clone(),
            ..Default::default()
        }
    }
}

/// The annotations after the report in `format`: as text after the table in the text
/// formats; CSV and JSON on standard output stay one document each (upcmp writes
/// `results.annotate.csv` and `results.annotate.json`), so a note goes to standard error.
pub fn append_annotations(
    format: OutputFormat,
    annotations: &[crate::compare::annotate::Annotation],
    out: &mut Vec<u8>,
) -> std::io::Result<()> {
    match format {
        _ if annotations.is_empty() => Ok(()),
        OutputFormat::Csv | OutputFormat::Json => {
            eprintln!("note: --annotate is printed with --format text, markdown or mail");
            Ok(())
        }
        _ => crate::report::annotate::write_text(annotations, out),
    }
}
