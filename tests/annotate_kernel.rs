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

/// The instruction addresses of `work` on each of its lines of prog.c in the ELF file
/// `elf` of `dir`, as `objdump -d -l` prints them (the oracle: not this crate's line reader).
pub(crate) fn lines_of_work(dir: &Path, elf: &str) -> BTreeMap<u32, Vec<u64>> {
    let o = run_in(dir, "objdump", &["-d", "-l", "--no-show-raw-insn", elf]);
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
        let Some((addr, _)) = l.trim().split_once(':') else {
            continue;
        };
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
        owner: None,
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
    let lines = lines_of_work(dir.path(), "vmlinux");
    for (line, _, _) in KNOWN {
        assert!(
            lines.contains_key(&line),
            "objdump gives no instruction of line {line}: {lines:?}"
        );
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

/// `upcmp a b r --annotate work` in the fixture; the annotations it wrote.
fn annotate(f: &Fixture, extra: &[&str]) -> (PathBuf, serde_json::Value) {
    let mut args = vec!["a", "b", "r", "-q", "--annotate", "work"];
    args.extend_from_slice(extra);
    let o = run_in(f.dir.path(), UPCMP, &args);
    assert!(o.status.success(), "upcmp: {}", stderr(&o));
    let r = f.dir.path().join("r");
    let json = fs::read_to_string(r.join("results.annotate.json")).unwrap();
    (r, serde_json::from_str(&json).unwrap())
}

/// The line rows of `work` in test `forkwait`: (line in run 1, samples, verdict).
fn line_rows(v: &serde_json::Value) -> Vec<(u32, [u64; 2], String)> {
    let all = v["annotate"].as_array().expect("an array of annotations");
    let a = all
        .iter()
        .find(|a| a["test"] == "forkwait" && a["function"] == "work")
        .unwrap_or_else(|| panic!("no annotation of work in forkwait: {v}"));
    assert_eq!(a["missing"], serde_json::json!([]), "{a}");
    a["lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            assert!(l["file"].as_str().unwrap().ends_with("prog.c"), "{l}");
            (
                l["lines"][0].as_u64().expect("the line in run 1's build") as u32,
                [l["samples"][0].as_u64().unwrap(), l["samples"][1].as_u64().unwrap()],
                l["verdict"]["verdict"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn a_kernel_functions_line_table_is_exact_issue_32() {
    let f = fixture();
    let (r, json) = annotate(&f, &[]);
    let rows = line_rows(&json);
    // Every known line with exactly its samples; every other line of work with none.
    for (line, n1, n2) in KNOWN {
        let row = rows
            .iter()
            .find(|r| r.0 == line)
            .unwrap_or_else(|| panic!("no line {line} in {rows:?}"));
        assert_eq!(row.1, [n1, n2], "line {line}: {rows:?}");
    }
    for row in rows.iter().filter(|r| !KNOWN.iter().any(|k| k.0 == r.0)) {
        assert_eq!(row.1, [0, 0], "line {} has samples nobody put there: {rows:?}", row.0);
        assert!(
            f.lines.contains_key(&row.0),
            "line {} is no line of work: {:?}",
            row.0,
            f.lines
        );
    }
    // The changed line is marked (one run a side: against the sampling error), the
    // unchanged one not.
    let verdict = |line: u32| &rows.iter().find(|r| r.0 == line).unwrap().2;
    assert_eq!(verdict(8), "sampling only", "{rows:?}");
    assert!(matches!(verdict(7).as_str(), "noise" | "n/a"), "{rows:?}");
    // The text report and the CSV name the function and the line.
    let text = fs::read_to_string(r.join("results.annotate")).unwrap();
    assert!(text.contains("work") && text.contains("prog.c"), "{text}");
    let csv = fs::read_to_string(r.join("results.annotate.csv")).unwrap();
    assert!(csv.lines().any(|l| l.contains("prog.c") && l.contains(",8,")), "{csv}");
}

#[test]
fn a_kernel_function_without_its_vmlinux_says_which_package_issue_32() {
    let f = fixture();
    // Run 2 without its vmlinux: recorded in `system`, but gone.
    let elf = f.dir.path().join("vmlinux");
    fs::rename(&elf, f.dir.path().join("vmlinux.moved")).unwrap();
    let (_, json) = annotate(&f, &[]);
    let a = &json["annotate"][0];
    let missing = a["missing"].to_string();
    assert!(
        missing.contains("linux-image") && missing.contains("kernel-debuginfo"),
        "{a}"
    );
}

#[test]
fn the_page_opens_an_annotated_function_issue_32() {
    let f = fixture();
    let (r, json) = annotate(&f, &[]);
    let rows = line_rows(&json);
    let Some(browser) = crate::html::browser() else { return };
    let page = crate::html::open(browser, &r.join("results.html"));
    crate::html::assert_no_errors(&page);
    let ann = &page.selftest["annotations"];
    assert_eq!(ann.as_array().map(Vec::len), Some(1), "{ann}");
    let a = &ann[0];
    assert_eq!(a["function"], "work");
    // Closed at first: only its summary is rendered; opened by a click.
    assert_eq!(a["open_at_first"], false);
    assert_eq!(a["open"], true);
    let closed = a["text_closed"].as_str().unwrap();
    assert!(
        closed.contains("work") && closed.contains("hottest changed line prog.c:8"),
        "{closed}"
    );
    assert!(!closed.contains("samples 1"), "the table shows while closed: {closed}");
    let text = a["text"].as_str().unwrap();
    assert!(text.contains("samples 1") && text.contains("Instructions ("), "{text}");
    // The rendered line table holds the same lines and samples as results.annotate.json,
    // and only the changed line is highlighted.
    assert_rendered_lines(a, &rows);
    let hot: Vec<Vec<String>> = serde_json::from_value(a["hot"].clone()).unwrap();
    assert_eq!(hot.len(), 1, "{hot:?}");
    assert_eq!(hot[0][0], "prog.c:8");
    assert!(a["lines_height"].as_u64().unwrap() > 40, "{a}");
    screenshot(browser, &r.join("results.html"), f.dir.path());
}

/// The line table the page's self-test read from an opened row (`a`) holds the lines
/// and samples of `rows` (from results.annotate.json), in order.
fn assert_rendered_lines(a: &serde_json::Value, rows: &[(u32, [u64; 2], String)]) {
    let shown: Vec<Vec<String>> = serde_json::from_value(a["lines"].clone()).unwrap();
    assert_eq!(shown.len(), rows.len(), "{shown:?}");
    for (cells, row) in shown.iter().zip(rows) {
        assert_eq!(cells[0], format!("prog.c:{}", row.0), "{cells:?}");
        assert_eq!(cells[5..7], [row.1[0].to_string(), row.1[1].to_string()], "{cells:?}");
    }
}

/// A picture of the page with every annotated row open, to look at
/// (`UPCMP_SCREENSHOT=FILE.png` keeps it).
fn screenshot(browser: &str, page: &Path, dir: &Path) {
    let Some(keep) = std::env::var_os("UPCMP_SCREENSHOT") else {
        return;
    };
    let html = fs::read_to_string(page).unwrap();
    let opened = dir.join("opened.html");
    // Each annotated row open, the page scrolled to the first.
    let html = html
        .replace("<details class=\"annotate\"", "<details open class=\"annotate\"")
        .replace(
            "<details class=\"annotate on-demand\"",
            "<details open class=\"annotate on-demand\"",
        )
        .replace(
            "<details class=\"annotate-insns\"",
            "<details open class=\"annotate-insns\"",
        );
    fs::write(&opened, html).unwrap();
    let profile = crate::util::tempdir();
    let png = dir.join("annotate.png");
    let o = std::process::Command::new(browser)
        .args(crate::html::headless_args(profile.path()))
        .args([
            "--window-size=1300,1600",
            &format!("--screenshot={}", png.display()),
            &format!("file://{}#upcmp-annotate-0", opened.display()),
        ])
        .output()
        .unwrap();
    assert!(png.is_file(), "no screenshot: {}", String::from_utf8_lossy(&o.stderr));
    fs::copy(&png, keep).unwrap();
}

/// The core-kernel text symbols of /proc/kallsyms by address: (address, name, size to the
/// next symbol), and `_text`'s address.
fn running_kernel_text() -> (Vec<(u64, String, u64)>, u64) {
    let text = fs::read_to_string("/proc/kallsyms").unwrap();
    let mut syms: Vec<(u64, String)> = Vec::new();
    let mut start = 0;
    for l in text.lines() {
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.len() != 3 {
            continue; // a module's symbol ([module] in a fourth field)
        }
        let addr = u64::from_str_radix(f[0], 16).unwrap_or(0);
        if f[2] == "_text" {
            start = addr;
        }
        if matches!(f[1], "T" | "t") && addr != 0 {
            syms.push((addr, f[2].to_string()));
        }
    }
    syms.sort();
    let sized = syms
        .windows(2)
        .map(|w| (w[0].0, w[0].1.clone(), w[1].0 - w[0].0))
        .collect();
    (sized, start)
}

/// Issue 32, a kernel function of a perf recording: `upcmp --perf A B R --vmlinux VMLINUX
/// --annotate FUNC` puts each of FUNC's samples at its offset in the vmlinux, exactly as
/// `perf script` places it (`symoff`, with the running kernel's symbols). A `perf record
/// --no-buildid` of dd reading /dev/zero; FUNC is its hottest core-kernel function whose
/// name is listed once and whose samples lie at 3 offsets or more; the "vmlinux" is an ELF built by the test that
/// holds, at FUNC's place relative to `_text`, a function of FUNC's name and size (8 lines
/// of nops, so each sample also gets a line), its `_text` 16 MiB from the running
/// kernel's, so that the KASLR offset is taken off. The recording carries no build-id, so the
/// ELF is taken unchecked (a recording with one refuses an ELF of another build). Without
/// --vmlinux the annotation names the option and the kernel's debug package.
#[test]
fn a_perf_recordings_kernel_function_is_annotated_from_the_vmlinux_issue_32() {
    if !crate::util::perf_usable(true) {
        return;
    }
    let _perf = crate::util::perf_lock();
    let tmp = tempdir();
    let d = tmp.path();
    crate::import::perf_record_any(
        d,
        &[
            "--no-buildid",
            "-e",
            "cpu-clock",
            "-F",
            "4000",
            "-o",
            "k.data",
            "--",
            "dd",
            "if=/dev/zero",
            "of=/dev/null",
            "bs=64",
            "count=2000000",
        ],
    );
    // The oracle: perf script's symbol and offset of every sample.
    let o = run_in(d, "perf", &["script", "-i", "k.data", "-F", "ip,sym,symoff"]);
    assert!(o.status.success(), "perf script: {}", stderr(&o));
    let mut by_function: BTreeMap<String, BTreeMap<u64, u64>> = BTreeMap::new();
    for l in String::from_utf8_lossy(&o.stdout).lines() {
        let Some((_, place)) = l.trim().split_once(' ') else {
            continue;
        };
        let Some((name, off)) = place.trim().rsplit_once("+0x") else {
            continue;
        };
        if let Ok(off) = u64::from_str_radix(off, 16) {
            *by_function.entry(name.to_string()).or_default().entry(off).or_insert(0) += 1;
        }
    }
    let (kallsyms, text) = running_kernel_text();
    let listed_once = |n: &str| kallsyms.iter().filter(|s| s.1 == n).count() == 1;
    let (name, oracle) = by_function
        .iter()
        .filter(|(n, m)| n.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') && listed_once(n) && m.len() >= 3)
        .max_by_key(|(_, m)| m.values().sum::<u64>())
        .expect("a sampled core-kernel function");
    let total: u64 = oracle.values().sum();
    assert!(total >= 50, "{name}: {total} samples");
    let (addr, _, size) = kallsyms.iter().find(|s| &s.1 == name).unwrap().clone();
    // The ELF: FUNC at its distance from _text, in 8 lines of nops summing to its size.
    // Its _text is not the running kernel's (0xffffffff81000000 on this VM), so the
    // samples are placed in it less that offset, as on a boot that KASLR moved.
    let elf_text: u64 = 0xffff_ffff_8200_0000;
    let at = elf_text + (addr - text);
    let chunk = size / 8;
    let mut src = format!("__attribute__((naked, used, section(\"fsec\"))) void {name}(void)\n{{\n");
    for k in 0..8 {
        let n = if k == 7 { size - 7 * chunk } else { chunk };
        src += &format!("\t__asm__ volatile(\".skip {n}, 0x90\");\n");
    }
    src += "}\n";
    fs::write(d.join("fake.c"), &src).unwrap();
    let o = run_in(
        d,
        "gcc",
        &[
            "-O2",
            "-g",
            "-static",
            "-nostdlib",
            "-fno-pic",
            "-no-pie",
            &format!("-Wl,-e,{name}"),
            &format!("-Wl,-Ttext={elf_text:#x}"),
            &format!("-Wl,--defsym=_text={elf_text:#x}"),
            &format!("-Wl,--section-start=fsec={at:#x}"),
            "-o",
            "vmlinux",
            "fake.c",
        ],
    );
    assert!(o.status.success(), "gcc: {}\n{src}", stderr(&o));

    let o = run_in(
        d,
        UPCMP,
        &[
            "--perf",
            "k.data",
            "k.data",
            "r",
            "--vmlinux",
            "vmlinux",
            "--annotate",
            name,
            "-q",
            "--no-html",
        ],
    );
    assert!(o.status.success(), "upcmp: {}", stderr(&o));
    let json: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(d.join("r/results.annotate.json")).unwrap()).unwrap();
    let a = &json["annotate"][0];
    assert_eq!(a["function"], name.as_str(), "{a:#}");
    assert_eq!(a["missing"].as_array().map_or(0, Vec::len), 0, "{a:#}");
    let mut got: BTreeMap<u64, u64> = BTreeMap::new();
    for i in a["instructions"].as_array().unwrap() {
        let n = i["samples"][0].as_u64().unwrap();
        assert_eq!(n, i["samples"][1].as_u64().unwrap(), "the same recording on both sides");
        if n > 0 {
            got.insert(i["offset"].as_u64().unwrap(), n);
        }
    }
    eprintln!(
        "{name}: {total} samples at {} offsets of {size} bytes, as perf script places them",
        got.len()
    );
    assert_eq!(&got, oracle, "{name}: samples by offset, upcmp against perf script");
    // Every sample on a line of fake.c (its nop lines are 3 to 10).
    let on_lines: u64 = a["lines"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| l["file"].as_str().is_some_and(|f| f.ends_with("fake.c")))
        .map(|l| l["samples"][0].as_u64().unwrap())
        .sum();
    assert_eq!(on_lines, total, "{a:#}");

    // Without the vmlinux: what is missing, and where it comes from.
    let o = run_in(
        d,
        UPCMP,
        &[
            "--perf",
            "k.data",
            "k.data",
            "r2",
            "--annotate",
            name,
            "-q",
            "--no-html",
        ],
    );
    assert!(o.status.success(), "upcmp: {}", stderr(&o));
    let text = fs::read_to_string(d.join("r2/results.annotate")).unwrap();
    assert!(
        text.contains("--vmlinux FILE") && text.contains("linux-image-"),
        "{text}"
    );
}

/// Without `--annotate`, the page still holds every listed function whose code is
/// found, rendered when opened: clicking `work` in the function table opens its lines,
/// the same as `--annotate work` gives; the text outputs stay as they were.
#[test]
fn the_page_opens_every_listed_function_on_demand_issue_32() {
    let f = fixture();
    let (_, asked) = annotate(&f, &[]);
    let rows = line_rows(&asked);
    let o = run_in(f.dir.path(), UPCMP, &["a", "b", "plain", "-q"]);
    assert!(o.status.success(), "upcmp: {}", stderr(&o));
    let r = f.dir.path().join("plain");
    assert!(
        !r.join("results.annotate").exists(),
        "nothing asked, no results.annotate"
    );
    let html = fs::read_to_string(r.join("results.html")).unwrap();
    assert!(html.contains("<details class=\"annotate on-demand\" data-function=\"work\">"));
    let Some(browser) = crate::html::browser() else { return };
    let page = crate::html::open(browser, &r.join("results.html"));
    crate::html::assert_no_errors(&page);
    let links = &page.selftest["annotation_links"][0];
    assert!(
        links["names"].as_array().unwrap().iter().any(|n| n == "work"),
        "{links}"
    );
    let work = page.selftest["annotations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["function"] == "work")
        .unwrap_or_else(|| panic!("no row of work: {}", page.selftest["annotations"]));
    // Closed, and its table not in the page, until opened.
    assert_eq!(work["open_at_first"], false);
    assert!(!work["text_closed"].as_str().unwrap().contains("samples 1"), "{work}");
    assert!(
        work["text_closed"]
            .as_str()
            .unwrap()
            .contains("hottest changed line prog.c:8"),
        "{work}"
    );
    assert_eq!(work["open"], true);
    assert_rendered_lines(work, &rows);
    // The first linked name opened its own row, showing its line table.
    let first = links["names"][0].as_str().unwrap();
    assert_eq!(
        links["opened"],
        serde_json::json!([first.split(" [").next().unwrap()]),
        "{links}"
    );
    assert!(links["opened_text"].as_str().unwrap().contains("samples 1"), "{links}");
    screenshot(browser, &r.join("results.html"), f.dir.path());
}

/// A run another user wrote gets only what that user could read: a source file its
/// DWARF names that only root may read shows no text (the same file readable by all
/// does), and a vmlinux only root may read is not read (docs/security.md).
#[test]
fn a_foreign_run_shows_nothing_its_owner_could_not_read_issue_32() {
    use std::os::unix::fs::PermissionsExt;
    if !crate::util::is_root() {
        eprintln!("skipped: giving the runs to another user needs root");
        return;
    }
    let f = fixture();
    let dir = f.dir.path();
    fs::set_permissions(dir, fs::Permissions::from_mode(0o755)).unwrap();
    for run in ["a", "b"] {
        crate::hostile::chown_tree(&dir.join(run), crate::hostile::NOBODY);
    }
    let mode = |file: &str, m: u32| fs::set_permissions(dir.join(file), fs::Permissions::from_mode(m)).unwrap();
    let texts = |extra: &[&str]| -> (Vec<serde_json::Value>, serde_json::Value) {
        let (_, json) = annotate(&f, extra);
        let a = json["annotate"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["function"] == "work")
            .unwrap()
            .clone();
        let texts = a["lines"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l["text"].clone())
            .collect();
        (texts, a["missing"].clone())
    };
    mode("prog.c", 0o644);
    let (shown, missing) = texts(&[]);
    assert!(
        !shown.is_empty() && shown.iter().all(|t| t.is_string()),
        "{shown:?} {missing}"
    );
    mode("prog.c", 0o600);
    let (hidden, _) = texts(&["--annotate-page", "0"]);
    assert_eq!(hidden.len(), shown.len());
    assert!(
        hidden.iter().all(|t| t.is_null()),
        "root's source shown for nobody's run: {hidden:?}"
    );
    mode("vmlinux", 0o600);
    let (_, missing) = texts(&[]);
    let missing = missing.to_string();
    assert!(
        missing.contains("is not readable by the run's owner (uid 65534)"),
        "{missing}"
    );
}
