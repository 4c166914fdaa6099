//! Issue 32, the kernel path: `upcmp OUTDIR1 OUTDIR2 R --annotate FUNC` on two uprun
//! runs of known samples at the addresses of an ELF linked where the kernel is
//! (0xffffffff81000000), with a kallsyms-style symbol file made from it by `nm`; and the
//! annotated row of results.html opened in headless chromium.

use crate::util::{copy_tree, run_in, stderr, tempdir, testdata};
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use upcmp::model::profile::Unit;
use upcmp::model::{IdleSet, ProfileMeta, RecordProfiler, UserBy};
use upcmp::store::samples::SamplesWriter;
use upcmp::symbols::KernelSymbols;
use upcmp_parsers::samples::{Mode, Record, Sample};

const UPCMP: &str = env!("CARGO_BIN_EXE_upcmp");

// `work`'s loop body is two lines with work of their own: line 7 and line 8.
const PROGRAM: &str = "#include <stdint.h>
volatile uint64_t sink;
__attribute__((noinline)) uint64_t work(uint64_t n)
{
\tuint64_t s = 1, t = 3;
\tfor (uint64_t k = 0; k < n; k++) {
\t\ts = s * 2654435761u + (k ^ (s >> 13));
\t\tt = (t << 5) ^ (t >> 3) ^ (s * 40503u);
\t}
\treturn s ^ t;
}
int main(int argc, char **argv)
{
\t(void)argv;
\tsink = work(1000u * (uint64_t)argc);
\treturn 0;
}
";

/// The sampling period of the runs, ns (the forkwait fixture's 0.1 ms).
const PERIOD_NS: u64 = 100_000;

/// A "vmlinux": the program built static with `-g`, linked at 0xffffffff81000000; and
/// its kallsyms-style symbol list, from `nm`.
fn kernel_like_elf(dir: &Path) -> (PathBuf, String) {
    fs::write(dir.join("prog.c"), PROGRAM).unwrap();
    let o = run_in(
        dir,
        "gcc",
        &[
            "-O2",
            "-g",
            "-static",
            "-nostartfiles",
            "-Wl,-e,main",
            "-Wl,-Ttext=0xffffffff81000000",
            "-no-pie",
            "-o",
            "vmlinux",
            "prog.c",
        ],
    );
    assert!(o.status.success(), "gcc: {}", stderr(&o));
    let o = run_in(dir, "nm", &["-n", "vmlinux"]);
    assert!(o.status.success(), "nm: {}", stderr(&o));
    let mut kallsyms = String::new();
    for l in String::from_utf8(o.stdout).unwrap().lines() {
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.len() == 3 && matches!(f[1], "T" | "t" | "W") && f[0].starts_with("ffffffff81") {
            if kallsyms.is_empty() {
                kallsyms.push_str(&format!("{} T _text\n", f[0]));
            }
            kallsyms.push_str(&format!("{} {} {}\n", f[0], f[1], f[2]));
        }
    }
    (dir.join("vmlinux"), kallsyms)
}

/// The instruction addresses of `work` on each of its lines of prog.c, as
/// `objdump -d -l` prints them (the oracle: not this crate's line reader).
fn lines_of_work(dir: &Path) -> BTreeMap<u32, Vec<u64>> {
    let o = run_in(dir, "objdump", &["-d", "-l", "--no-show-raw-insn", "vmlinux"]);
    assert!(o.status.success(), "objdump: {}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    let (mut line, mut in_work) = (0u32, false);
    let mut out: BTreeMap<u32, Vec<u64>> = BTreeMap::new();
    for l in text.lines() {
        if l.ends_with(">:") {
            in_work = l.ends_with("<work>:");
            continue;
        }
        if !in_work {
            continue;
        }
        if let Some(n) = l
            .rsplit_once("prog.c:")
            .and_then(|(_, n)| n.split(' ').next()?.parse().ok())
        {
            line = n;
            continue;
        }
        let Some((addr, _)) = l.trim().split_once(':') else { continue };
        if let Ok(a) = u64::from_str_radix(addr, 16) {
            out.entry(line).or_default().push(a);
        }
    }
    out
}

/// One kernel sample at `pc` (or user, at a user address) on CPU `k % 2`.
fn sample(k: u64, pc: u64) -> Record {
    Record::Sample(Sample {
        time_ns: 1_000_000 + k * PERIOD_NS,
        cpu: (k % 2) as u32,
        pid: 4242,
        tid: 4242,
        mode: if pc >> 63 == 1 { Mode::Kernel } else { Mode::User },
        period: Some(PERIOD_NS),
        pc,
        callchain: Vec::new(),
    })
}

/// A uprun run in `run` (the forkwait fixture's marker, system and test list, with
/// `command` as the marker's command line and `system_extra` added to `system`), its test
/// `forkwait` holding `samples` (PC, count) and the profile uprun makes of them.
fn write_run(run: &Path, kallsyms: &str, command: &str, system_extra: &str, samples: &[(u64, u64)]) {
    copy_tree(&testdata("forkwait/outdir1"), run);
    let marker = fs::read_to_string(run.join("upcmp-run")).unwrap();
    let marker: String = marker
        .lines()
        .map(|l| match l.starts_with("command:") {
            true => format!("command: {command}\n"),
            false => format!("{l}\n"),
        })
        .collect();
    fs::write(run.join("upcmp-run"), marker).unwrap();
    let system = fs::read_to_string(run.join("system")).unwrap();
    fs::write(run.join("system"), format!("{system}{system_extra}")).unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut gz, kallsyms.as_bytes()).unwrap();
    fs::write(run.join("kallsyms.gz"), gz.finish().unwrap()).unwrap();

    let symbols = KernelSymbols::from_kallsyms_text(kallsyms, "kallsyms").unwrap();
    let test = run.join("forkwait");
    let mut w = SamplesWriter::create(&test.join("samples.gz")).unwrap();
    let mut p = RecordProfiler::new(&symbols, &[0, 1], UserBy::Single, PERIOD_NS);
    let mut k = 0;
    for &(pc, n) in samples {
        for _ in 0..n {
            let r = sample(k, pc);
            w.write(&r).unwrap();
            p.add(&r);
            k += 1;
        }
    }
    w.finish().unwrap();
    let meta = ProfileMeta {
        test: "forkwait".into(),
        command: Some("unixperf -forkwait".into()),
        event: "cpu-clock".into(),
        unit: Unit::Nanoseconds,
        period: Some(PERIOD_NS as f64),
        wall_sec: (k * PERIOD_NS) as f64 * 1e-9,
    };
    let profile = p.finish(meta, &IdleSet::linux_default(), Vec::new());
    fs::remove_file(test.join("prfout")).unwrap();
    upcmp::store::prfout::write_file(&profile, &test.join("prfout")).unwrap();
}

/// Samples spread evenly over `addrs`, `n` in all.
fn spread(addrs: &[u64], n: u64) -> Vec<(u64, u64)> {
    let k = addrs.len() as u64;
    addrs
        .iter()
        .enumerate()
        .map(|(i, &a)| (a, n / k + u64::from((i as u64) < n % k)))
        .collect()
}

/// Two runs of the kernel-like ELF: line 7 of `work` 300 samples in both, line 8 200
/// in run 1 and 1200 in run 2; user time fills both runs to the same total. Returns the
/// directory holding `a`, `b`, and the addresses per line.
struct Fixture {
    dir: tempfile::TempDir,
    lines: BTreeMap<u32, Vec<u64>>,
}

/// (line, samples in run 1, samples in run 2) of `work`.
const KNOWN: [(u32, u64, u64); 2] = [(7, 300, 300), (8, 200, 1200)];
const TOTAL: u64 = 20_000;

fn fixture() -> Fixture {
    let dir = tempdir();
    let (elf, kallsyms) = kernel_like_elf(dir.path());
    let lines = lines_of_work(dir.path());
    for (line, _, _) in KNOWN {
        assert!(lines.contains_key(&line), "objdump gives no instruction of line {line}: {lines:?}");
    }
    for (side, run) in ["a", "b"].iter().enumerate() {
        let mut samples = Vec::new();
        let mut in_work = 0;
        for &(line, n1, n2) in &KNOWN {
            let n = [n1, n2][side];
            samples.extend(spread(&lines[&line], n));
            in_work += n;
        }
        samples.push((0x401000, TOTAL - in_work));
        // Run 1 finds its vmlinux on the marker's command line (a run written before
        // uprun recorded it), run 2 in `system`.
        let (command, extra) = match side {
            0 => (format!("uprun {} a", elf.display()), String::new()),
            _ => ("uprun auto b".to_string(), format!("vmlinux: {}\n", elf.display())),
        };
        write_run(&dir.path().join(run), &kallsyms, &command, &extra, &samples);
    }
    Fixture { dir, lines }
}
