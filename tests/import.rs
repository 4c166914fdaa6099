//! Importing perf.data, perf script output and folded stacks (issue 7): agreement with
//! `perf report` and `perf diff` on real recordings, every output format, malformed input,
//! bounded memory and quiet broken pipes (completions and man pages: tests/shell.rs).

use crate::util::{assert_golden, perf_lock, perf_usable, run_in, stderr, stdout, tempdir, testdata};
use std::collections::HashMap;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

const UPCMP: &str = env!("CARGO_BIN_EXE_upcmp");
const PRFCMP: &str = env!("CARGO_BIN_EXE_prfcmp");

/// `perf record -q -N -e cpu-clock ARGS` in `dir` (`-N`: a test must not grow the
/// machine's build-id cache); its output, once it has succeeded.
fn perf_record(dir: &Path, args: &[&str]) -> std::process::Output {
    let mut all = vec!["record", "-q", "-N", "-e", "cpu-clock"];
    all.extend_from_slice(args);
    let o = run_in(dir, "perf", &all);
    assert!(o.status.success(), "perf {all:?}: {}", stderr(&o));
    o
}

/// `perf record OPTS` of `dd` copying `count` blocks of `bs` bytes, into `out`.
fn record_dd(dir: &Path, out: &str, opts: &[&str], bs: &str, count: &str) {
    let (bs, count) = (format!("bs={bs}"), format!("count={count}"));
    let mut args = opts.to_vec();
    args.extend(["-o", out, "--", "dd", "if=/dev/zero", "of=/dev/null", &bs, &count]);
    perf_record(dir, &args);
}

/// `perf record -a` of `dd`: the whole machine, as uprun samples it.
fn record(dir: &Path, out: &str, bs: &str, count: &str) {
    record_dd(dir, out, &["-a"], bs, count);
}

/// `perf report --stdio --sort sym`: (`k` or `.`, symbol) → percent; at least 6 of them.
fn perf_report(dir: &Path, data: &str) -> HashMap<(String, String), f64> {
    let out = perf_report_entries(dir, data);
    assert!(out.len() > 5, "perf report printed too little: {out:?}");
    out
}

/// `perf report --stdio --sort sym`: (`k` or `.`, symbol) → percent.
fn perf_report_entries(dir: &Path, data: &str) -> HashMap<(String, String), f64> {
    let o = run_in(dir, "perf", &["report", "--stdio", "--sort", "sym", "-i", data]);
    assert!(o.status.success(), "perf report: {}", stderr(&o));
    let mut out = HashMap::new();
    for l in stdout(&o).lines().filter(|l| !l.starts_with('#')) {
        // `     6.80%  [k] do_syscall_64`
        let Some((pct, rest)) = l.trim().split_once("%  [") else {
            continue;
        };
        let Some((kind, sym)) = rest.split_once("] ") else {
            continue;
        };
        *out.entry((kind.to_string(), sym.trim().to_string())).or_insert(0.0) += pct.parse::<f64>().unwrap();
    }
    out
}

/// prfcmp's options for every row, one per symbol (perf names symbols one by one), in JSON.
pub(crate) const EVERY_ROW_JSON: [&str; 7] = [
    "--keep-clones",
    "--idle-symbols",
    "",
    "--cutoff",
    "0",
    "--format",
    "json",
];

/// Each function's share of all samples in prfcmp's JSON (`--idle-symbols ''` counts every
/// function, so run 1's share of CPU is its share of samples), by bare name.
fn our_shares(dir: &Path, input: &str) -> HashMap<String, f64> {
    let o = run_in(dir, PRFCMP, &[&[input, input][..], &EVERY_ROW_JSON[..]].concat());
    assert!(o.status.success(), "prfcmp: {}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("prfcmp --format json");
    let mut out = HashMap::new();
    for r in v["rows"].as_array().unwrap() {
        let name = r["function"].as_str().unwrap();
        // `name [module]` for modules: perf report prints the bare name.
        let bare = name.rsplit_once(" [").map_or(name, |(n, _)| n);
        *out.entry(bare.to_string()).or_insert(0.0) += r["run1_pct_of_cpu"].as_f64().unwrap();
    }
    out
}

/// Compares `ours` with perf report's named functions of `kinds` at or above 0.5 %;
/// returns how many were compared.
fn assert_shares_agree(
    perf: &HashMap<(String, String), f64>,
    ours: &HashMap<String, f64>,
    kinds: &[&str],
    what: &str,
) -> usize {
    let mut compared = 0;
    for ((kind, sym), &pct) in perf {
        if pct < 0.5 || !kinds.contains(&kind.as_str()) || sym.starts_with("0x") {
            continue;
        }
        // Another process's C++ templates or parameter lists may be spelled otherwise
        // by the two demanglers; the recorded workload is C.
        if kind == "." && (sym.contains('<') || sym.contains('(')) {
            continue;
        }
        let mine = ours.get(sym).copied().unwrap_or(0.0);
        // perf prints two decimals; a symbol perf shows once per DSO is summed on both sides.
        assert!(
            (mine - pct).abs() <= 0.011,
            "{what}: {sym} is {mine:.4}% here, {pct:.2}% in perf report"
        );
        compared += 1;
    }
    compared
}

#[test]
fn perf_data_and_perf_script_shares_match_perf_report() {
    if !perf_usable(true) {
        return;
    }
    let _perf = perf_lock();
    let d = tempdir();
    record(d.path(), "a.data", "512", "400000");
    // The whole machine: many processes, records of every CPU ordered round by round.
    assert!(own_and_crate_readers_agree(&d.path().join("a.data")));
    let perf = perf_report(d.path(), "a.data");
    let ours = our_shares(d.path(), "a.data");
    let n = assert_shares_agree(&perf, &ours, &["k"], "perf.data");
    assert!(n >= 5, "only {n} kernel functions above 0.5 %: {perf:?}");
    // dd's user time is in libc (write, read, memcpy...), named from its ELF file.
    let n = assert_shares_agree(&perf, &ours, &["."], "perf.data user functions");
    assert!(n >= 1, "no user function above 0.5 %: {perf:?}");

    // The default fields and the -F variants users commonly ask for.
    for fields in [
        None,
        Some("+pid"),
        Some("comm,tid,time,event,ip,sym,dso"),
        Some("comm,pid,tid,cpu,time,period,event,ip,sym,dso"),
    ] {
        let mut args = vec!["script", "-i", "a.data"];
        args.extend(fields.iter().flat_map(|f| ["-F", f]));
        let o = run_in(d.path(), "perf", &args);
        assert!(o.status.success(), "perf {args:?}: {}", stderr(&o));
        std::fs::write(d.path().join("a.txt"), &o.stdout).unwrap();
        let what = format!("perf script -F {}", fields.unwrap_or("(default)"));
        let n = assert_shares_agree(&perf, &our_shares(d.path(), "a.txt"), &["k", "."], &what);
        assert!(n >= 5, "{what}: only {n} functions compared");
    }

    // The same recording cut short, as a copy made while perf record still ran would be.
    let data = std::fs::read(d.path().join("a.data")).unwrap();
    let cut = data.len() * 6 / 10;
    std::fs::write(d.path().join("cut.data"), &data[..cut]).unwrap();
    let o = run_in(d.path(), PRFCMP, &["a.data", "cut.data"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&format!(
            "cut.data: not a readable perf.data file: it stops at byte {cut}"
        )),
        "{}",
        stderr(&o)
    );
    assert!(stdout(&o).is_empty(), "no half report");
}

const SPIN_PROGRAM: &str = r#"
#include <stdlib.h>
volatile unsigned long sink;
__attribute__((noinline)) void spin_two_thirds(unsigned long n) { for (unsigned long i = 0; i < n; i++) sink += i; }
__attribute__((noinline)) void spin_one_third(unsigned long n) { for (unsigned long i = 0; i < n; i++) sink ^= i; }
int main(int argc, char **argv) {
    unsigned long n = argc > 1 ? strtoul(argv[1], 0, 10) : 1000;
    for (int r = 0; r < 20; r++) { spin_two_thirds(2 * n); spin_one_third(n); }
    return 0;
}
"#;

/// Builds `SPIN_PROGRAM` (plus `extra` source) as `dir/spin`.
pub(crate) fn build_spin(dir: &Path, extra: &str) {
    std::fs::write(dir.join("spin.c"), format!("{SPIN_PROGRAM}{extra}")).unwrap();
    let o = run_in(dir, "gcc", &["-O1", "-Wl,--build-id=sha1", "-o", "spin", "spin.c"]);
    assert!(o.status.success(), "gcc: {}", stderr(&o));
}

/// prfcmp's shares (as in `our_shares`) and its standard error, with `home` as HOME (perf's
/// build-id cache is `home/.debug`).
pub(crate) fn our_shares_with_home(dir: &Path, input: &str, home: &Path) -> (HashMap<String, f64>, String) {
    let o = Command::new(PRFCMP)
        .args([input, input])
        .args(EVERY_ROW_JSON)
        .current_dir(dir)
        .env("HOME", home)
        .env_remove("PERF_BUILDID_DIR")
        .output()
        .unwrap();
    assert!(o.status.success(), "prfcmp: {}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("prfcmp --format json");
    let mut out = HashMap::new();
    for r in v["rows"].as_array().unwrap() {
        *out.entry(r["function"].as_str().unwrap().to_string()).or_insert(0.0) +=
            r["run1_pct_of_cpu"].as_f64().unwrap();
    }
    (out, stderr(&o))
}

#[test]
fn perf_data_user_functions_come_from_the_recorded_build() {
    if !perf_usable(true) {
        return;
    }
    let _perf = perf_lock();
    let d = tempdir();
    // perf record caches the binaries it saw under $HOME/.debug.
    let home = d.path().join("home");
    std::fs::create_dir(&home).unwrap();
    build_spin(d.path(), "");
    let o = Command::new("perf")
        .args([
            "record",
            "-q",
            "-e",
            "cpu-clock",
            "-o",
            "s.data",
            "--",
            "./spin",
            "10000000",
        ])
        .current_dir(d.path())
        .env("HOME", &home)
        .env_remove("PERF_BUILDID_DIR")
        .output()
        .unwrap();
    assert!(o.status.success(), "perf record: {}", stderr(&o));
    let o = Command::new("perf")
        .args(["report", "--stdio", "--sort", "dso,sym", "-i", "s.data"])
        .current_dir(d.path())
        .env("HOME", &home)
        .env_remove("PERF_BUILDID_DIR")
        .output()
        .unwrap();
    assert!(o.status.success(), "perf report: {}", stderr(&o));
    // `    66.10%  spin  [.] spin_two_thirds`
    let perf: HashMap<String, f64> = stdout(&o)
        .lines()
        .filter_map(|l| {
            let (pct, rest) = l.trim().split_once("%  spin ")?;
            let sym = rest.trim().strip_prefix("[.] ")?;
            Some((format!("{sym} [spin]"), pct.parse().ok()?))
        })
        .collect();
    let (two, one) = ("spin_two_thirds [spin]", "spin_one_third [spin]");
    assert!(perf.get(two).is_some_and(|&p| p > 30.0), "{perf:?}");
    assert!(perf.get(one).is_some_and(|&p| p > 15.0), "{perf:?}");

    // The binary as recorded.
    let (ours, _) = our_shares_with_home(d.path(), "s.data", &home);
    for f in [two, one] {
        assert!(
            (ours[f] - perf[f]).abs() <= 0.011,
            "{f}: {:.4} here, {:.2} in perf report",
            ours[f],
            perf[f]
        );
    }
    // Rebuilt since: perf's build-id cache still has the recorded binary.
    build_spin(d.path(), "int another_function(void) { return 1; }\n");
    let (again, _) = our_shares_with_home(d.path(), "s.data", &home);
    assert_eq!(again.get(two), ours.get(two), "names from the build-id cache");
    // Without the cache: no names from the wrong build, and a warning that says why.
    std::fs::remove_dir_all(home.join(".debug")).unwrap();
    let (blind, err) = our_shares_with_home(d.path(), "s.data", &home);
    assert!(!blind.contains_key(two) && !blind.contains_key(one), "{blind:?}");
    assert!(blind["[unknown] [spin]"] > 45.0, "{blind:?}");
    assert!(err.contains("another build"), "{err}");
}

#[test]
fn perf_data_deltas_match_perf_diff() {
    if !perf_usable(true) {
        return;
    }
    let _perf = perf_lock();
    let d = tempdir();
    record(d.path(), "a.data", "512", "400000");
    record(d.path(), "b.data", "65536", "40000");
    let o = run_in(
        d.path(),
        UPCMP,
        &[
            "--perf",
            "a.data",
            "b.data",
            "r",
            "--keep-clones",
            "--idle-symbols",
            "",
            "--cutoff",
            "0",
            "-q",
        ],
    );
    assert!(o.status.success(), "upcmp --perf: {}", stderr(&o));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.path().join("r/results.json")).unwrap()).unwrap();
    let rows = v["tests"][0]["outcome"]["profile"]["rows"].as_array().unwrap();
    let ours: HashMap<&str, f64> = rows
        .iter()
        .map(|r| {
            let d = r["run2_pct_of_cpu"].as_f64().unwrap() - r["run1_pct_of_cpu"].as_f64().unwrap();
            (r["function"].as_str().unwrap(), d)
        })
        .collect();

    let o = run_in(d.path(), "perf", &["diff", "a.data", "b.data"]);
    assert!(o.status.success(), "perf diff: {}", stderr(&o));
    let mut compared = 0;
    for l in stdout(&o).lines().filter(|l| !l.starts_with('#')) {
        // `     6.80%     -5.15%  [kernel.kallsyms]  [k] do_syscall_64`: both columns are
        // only printed for a function in both files.
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.len() < 5 || f[2] != "[kernel.kallsyms]" || f[3] != "[k]" || !f[0].ends_with('%') {
            continue;
        }
        let delta: f64 = f[1].trim_end_matches('%').parse().unwrap();
        let sym = f[4..].join(" ");
        if delta.abs() < 0.5 {
            continue;
        }
        let mine = ours.get(sym.as_str()).copied().unwrap_or(f64::NAN);
        assert!(
            (mine - delta).abs() <= 0.011,
            "{sym}: delta {mine:.4} here, {delta:.2} in perf diff"
        );
        compared += 1;
    }
    assert!(
        compared >= 3,
        "only {compared} kernel functions compared:\n{}",
        stdout(&o)
    );
}

#[test]
fn folded_inputs_in_every_format() {
    let d = tempdir();
    let (a, b) = (testdata("import/a.folded"), testdata("import/b.folded"));
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
    let text = run_in(d.path(), PRFCMP, &[a, b]);
    assert!(text.status.success(), "{}", stderr(&text));
    // a: 1000 samples of 1 ms, 100 idle (default_idle); b: 400 idle.
    let t = stdout(&text);
    let words = |l: &str| l.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(t.lines().any(|l| words(l) == "CPU time 0.900 0.600 0.67"), "{t}");
    assert!(t.lines().any(|l| words(l) == "Idle time 0.100 0.400 4.00"), "{t}");
    assert!(t.contains("read_zero"), "{t}");

    let csv = stdout(&run_in(d.path(), PRFCMP, &[a, b, "--format", "csv"]));
    let mut lines = csv.lines();
    assert_eq!(lines.next(), Some(upcmp::report::export::CSV_HEADER));
    let read_zero = csv.lines().find(|l| l.contains(",function,read_zero,")).expect(&csv);
    assert!(
        read_zero.starts_with("a.folded,function,read_zero,0.5,0.2,-0.3"),
        "{read_zero}"
    );

    let json: serde_json::Value =
        serde_json::from_str(&stdout(&run_in(d.path(), PRFCMP, &[a, b, "--format", "json"]))).unwrap();
    assert_eq!(json["run1"]["cpus"], 1);
    assert_eq!(json["rows"].as_array().unwrap().len(), 3);

    let md = stdout(&run_in(d.path(), PRFCMP, &[a, b, "--format", "markdown"]));
    assert!(md.contains("| read\\_zero | 0.500 | 0.200 | -0.300 | -33.33 |"), "{md}");

    // Not a terminal: no colour codes even when forced in the environment's absence.
    assert!(!t.contains('\x1b'));
}

#[test]
fn perf_script_fixtures_compare() {
    let d = tempdir();
    let a = testdata("import/a.perf-script");
    let g = testdata("import/g.perf-script");
    let o = run_in(
        d.path(),
        PRFCMP,
        &[
            a.to_str().unwrap(),
            g.to_str().unwrap(),
            "--format",
            "json",
            "--cutoff",
            "0",
            "--idle-symbols",
            "",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["run1"]["event"], "cpu-clock");
    assert_eq!(v["measure"]["unit"], "sec");
    assert!((v["run1"]["period"].as_f64().unwrap() - 250000.0).abs() < 1e-6, "ns");
    // 12 samples of 0.25 ms, one of them in libc's `read`.
    assert!((v["run1"]["cpu"].as_f64().unwrap() - 0.003).abs() < 1e-9);
    let rows = v["rows"].as_array().unwrap();
    assert!(rows.iter().any(|r| r["function"] == "read [libc.so.6]"), "{rows:?}");
}

#[test]
fn malformed_and_truncated_input_exit_2_with_location() {
    let d = tempdir();
    let good = testdata("import/a.folded");
    let good = good.to_str().unwrap();
    for (name, content, expect) in [
        (
            "bad.folded",
            "a;b 1\na;b;c\n",
            "bad.folded:2:6: expected a space and a sample count",
        ),
        (
            "bad.script",
            "perf 1 [000] 1.0: 1 cpu-clock:\n\tffff x ([kernel.kallsyms])\nzzz\n",
            "bad.script:3:",
        ),
        (
            "cut.script",
            "perf 1 [000] 1.0: 1 cpu-clock:\n\tffff x ([kernel.kallsyms])\n\tfff",
            "cut.script:3:5: expected a newline: the input stops in the middle of this line",
        ),
        (
            "cut.data",
            "PERFILE2\x68\0\0\0",
            "cut.data: not a readable perf.data file: it stops at byte 12",
        ),
    ] {
        std::fs::write(d.path().join(name), content).unwrap();
        let o = run_in(d.path(), PRFCMP, &[good, name]);
        assert_eq!(o.status.code(), Some(2), "{name}: {}", stderr(&o));
        assert!(stderr(&o).contains(expect), "{name}: {}", stderr(&o));
        assert!(stderr(&o).contains("reading profile 2"), "{}", stderr(&o));
    }
}

#[test]
fn large_perf_script_stream_in_bounded_memory() {
    let d = tempdir();
    let folded = testdata("import/a.folded");
    let mut child = Command::new(PRFCMP)
        .args(["-", folded.to_str().unwrap(), "--format", "csv"])
        .current_dir(d.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut stdin = child.stdin.take().unwrap();
    let functions = ["do_syscall_64", "read_zero", "vfs_read", "write_null", "rw_verify_area"];
    let mut written = 0usize;
    let n = 1_500_000u64;
    let mut buf = String::new();
    for i in 0..n {
        let f = functions[(i % 5) as usize];
        buf += &format!(
            "              dd 4242 [{:03}] {}.{:06}:     250000 cpu-clock: \n\tffffffff8110a2b0 {f}+0x10 ([kernel.kallsyms])\n\tffffffff81000130 entry_SYSCALL_64_after_hwframe+0x76 ([kernel.kallsyms])\n\n",
            i % 2,
            1000 + i / 8000,
            (i % 8000) * 125
        );
        if buf.len() > 1 << 20 {
            stdin.write_all(buf.as_bytes()).unwrap();
            written += buf.len();
            buf.clear();
        }
    }
    stdin.write_all(buf.as_bytes()).unwrap();
    written += buf.len();
    // Nearly everything has been read; the peak memory so far is the import's.
    std::thread::sleep(std::time::Duration::from_millis(300));
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let hwm_kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap();
    drop(stdin);
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(written > 200 << 20, "the stream is only {written} bytes");
    assert!(hwm_kb < 64 << 10, "peak memory {hwm_kb} kB for a {written}-byte stream");
    let csv = stdout(&o);
    let row = csv.lines().find(|l| l.contains(",function,read_zero,")).unwrap();
    // 300000 samples of 0.25 ms.
    let run1: f64 = row.split(',').nth(3).unwrap().parse().unwrap();
    assert!((run1 - 75.0).abs() < 1e-6, "{row}");
}

#[test]
fn broken_pipe_exits_quietly() {
    let d = tempdir();
    let a = testdata("import/a.folded");
    let mut child = Command::new(PRFCMP)
        .args([a.to_str().unwrap(), a.to_str().unwrap(), "--format", "json"])
        .current_dir(d.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "status {:?}: {}", o.status, stderr(&o));
    // Only the import's own warnings: no error about the closed pipe.
    let err = stderr(&o);
    assert!(err.lines().all(|l| l.starts_with("prfcmp: warning: ")), "{err}");
}

/// `perf record -g` of `dd` alone, so that the other tests running meanwhile are not in
/// the recording.
fn record_stacks(dir: &Path, out: &str, bs: &str, count: &str) {
    record_dd(dir, out, &["-g"], bs, count);
}

#[test]
fn call_chains_give_the_stack_comparison_from_perf_data_and_perf_script_alike() {
    if !perf_usable(true) {
        return;
    }
    let _perf = perf_lock();
    let d = tempdir();
    record_stacks(d.path(), "a.data", "512", "300000");
    record_stacks(d.path(), "b.data", "65536", "30000");
    for data in ["a.data", "b.data"] {
        assert!(own_and_crate_readers_agree(&d.path().join(data)), "{data}");
    }
    for (data, txt) in [("a.data", "a.txt"), ("b.data", "b.txt")] {
        let o = run_in(d.path(), "perf", &["script", "-i", data]);
        assert!(o.status.success(), "perf script: {}", stderr(&o));
        std::fs::write(d.path().join(txt), &o.stdout).unwrap();
    }
    let mut tables = Vec::new();
    for (a, b, r) in [("a.data", "b.data", "r1"), ("a.txt", "b.txt", "r2")] {
        let o = run_in(d.path(), UPCMP, &["--perf", a, b, r, "-q"]);
        assert!(o.status.success(), "upcmp --perf {a} {b}: {}", stderr(&o));
        let stem = format!("{a}_vs_{b}");
        let svg = std::fs::read_to_string(d.path().join(r).join(format!("{stem}.flamediff.svg"))).unwrap();
        // The copies of dd, through the write system call into the kernel.
        assert!(
            svg.contains(">dd") && svg.contains("ksys_write"),
            "flame graph lacks dd's stacks"
        );
        let results = std::fs::read_to_string(d.path().join(r).join("results")).unwrap();
        assert!(results.contains(&format!("{stem}.callers")), "{results}");
        let table = std::fs::read_to_string(d.path().join(r).join(format!("{stem}.callers"))).unwrap();
        // The larger blocks move time into the copy itself: some function changed beyond noise.
        assert!(table.lines().any(|l| l.contains(" *")), "{table}");
        tables.push(table.lines().skip(1).collect::<Vec<_>>().join("\n"));
    }
    // Two parsers, one recording: the same stacks. A PLT frame may be `[unknown]` to a
    // perf before 6.3 (docs/symbols.md); with none sampled, the tables are the same too.
    for (data, txt) in [("a.data", "a.txt"), ("b.data", "b.txt")] {
        assert_eq!(
            folded_plt_as_unknown(d.path(), data),
            folded_plt_as_unknown(d.path(), txt)
        );
    }
    if !tables.iter().any(|t| t.contains("@plt") || t.contains(".plt ")) {
        assert_eq!(tables[0], tables[1]);
    }
}

/// The folded stacks of `input` (in `dir`), each PLT frame and each unknown one named
/// `[unknown]`, without its DSO: perf before 6.3 names the PLT's first entry `[unknown]`
/// in the DSO, or after `_init` stretched over it, where the import names it `.plt`
/// (docs/symbols.md), and a stack frame named by a symbol carries no DSO.
fn folded_plt_as_unknown(dir: &Path, input: &str) -> std::collections::BTreeMap<String, u64> {
    let opts = upcmp::import::ImportOptions::new(None, None, None, None).with_stacks(true);
    let imported = upcmp::import::import(&dir.join(input), &opts).unwrap();
    let mut out = std::collections::BTreeMap::new();
    for line in imported.stacks.expect("call chains").folded_lines() {
        let (stack, count) = line.rsplit_once(' ').unwrap();
        let stack: Vec<String> = stack
            .split(';')
            .map(|f| {
                let name = f.rsplit_once(" [").map_or(f, |(name, _)| name);
                match name.ends_with("@plt") || [".plt", "_init", "[unknown]"].contains(&name) {
                    true => "[unknown]".to_string(),
                    false => f.to_string(),
                }
            })
            .collect();
        *out.entry(stack.join(";")).or_insert(0) += count.parse::<u64>().unwrap();
    }
    out
}

/// Imports `data` (in `dir`) with the import's own record reader and with the crate's,
/// flat and with stacks, and checks that they agree; returns whether the own reader read it.
pub(crate) fn own_and_crate_readers_agree(data: &Path) -> bool {
    use upcmp::import::perf_data::{read, read_by_own_reader, read_with_crate};
    let kallsyms = testdata("upsrun/callgraph/kallsyms");
    for stacks in [false, true] {
        for event in [None, Some("page-faults")] {
            let opts = upcmp::import::ImportOptions::new(None, Some(kallsyms.clone()), None, None)
                .with_stacks(stacks)
                .with_event(event.map(str::to_string));
            let (ours, theirs) = (read(data, &opts), read_with_crate(data, &opts));
            upcmp::import::fuzz::assert_same_import(&ours, &theirs);
        }
    }
    read_by_own_reader(data).unwrap_or(false)
}

#[test]
fn the_own_record_reader_imports_every_perf_data_fixture_as_the_crate_does() {
    let mut files: Vec<_> = [
        "import/filter.data",
        "hostile/small.data",
        "fuzz/seeds/two-events.data",
        "fuzz/seeds/small-pipe.data",
        "import/stacks.data",
    ]
    .iter()
    .map(|f| testdata(f))
    .collect();
    // The damaged inputs that once broke the import: the same errors.
    let corpus = testdata("fuzz/import_perf_data");
    files.extend(std::fs::read_dir(&corpus).unwrap().map(|e| e.unwrap().path()));
    let own: Vec<bool> = files.iter().map(|f| own_and_crate_readers_agree(f)).collect();
    // The files written as files are the own reader's; pipe mode is the crate's.
    assert_eq!(&own[..5], &[true, true, true, false, true], "{files:?}");
}

#[test]
fn the_own_record_reader_leaves_files_it_does_not_read_plainly_to_the_crate() {
    use upcmp::import::perf_data::read_by_own_reader;
    let d = tempdir();
    let good = std::fs::read(testdata("hostile/small.data")).unwrap();
    // The last record 8 bytes longer: it ends past the data section (offset and size at
    // bytes 40 and 48), in the feature table, which the crate reads as its end.
    let mut long = good.clone();
    let word = |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap()) as usize;
    let (start, end) = (word(&long, 40), word(&long, 40) + word(&long, 48));
    let mut last = start;
    let mut at = start;
    while at < end {
        last = at;
        at += usize::from(u16::from_le_bytes([long[at + 6], long[at + 7]]));
    }
    let size = u16::from_le_bytes([long[last + 6], long[last + 7]]) + 8;
    long[last + 6..last + 8].copy_from_slice(&size.to_le_bytes());
    let p = d.path().join("long.data");
    std::fs::write(&p, &long).unwrap();
    assert!(!read_by_own_reader(&p).unwrap());
    assert!(!own_and_crate_readers_agree(&p));
    // The last record an AUXTRACE one (its data outside its size): read as the checked
    // file is, by the crate, with the crate's error.
    let mut aux = good.clone();
    aux[last..last + 4].copy_from_slice(&71u32.to_le_bytes());
    let p = d.path().join("aux.data");
    std::fs::write(&p, &aux).unwrap();
    assert!(!own_and_crate_readers_agree(&p));
    // A big-endian magic: the crate's, whatever comes of it.
    let mut be = good;
    be[..8].copy_from_slice(b"2ELIFREP");
    let p = d.path().join("be.data");
    std::fs::write(&p, &be).unwrap();
    assert!(!read_by_own_reader(&p).unwrap_or(false));
}

#[test]
fn folded_stacks_give_the_stack_comparison() {
    let d = tempdir();
    let (a, b) = (testdata("import/a.folded"), testdata("import/b.folded"));
    let o = run_in(
        d.path(),
        UPCMP,
        &["--perf", a.to_str().unwrap(), b.to_str().unwrap(), "r", "-q"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let r = d.path().join("r");
    assert!(r.join("a.folded_vs_b.folded.flamediff.svg").is_file());
    let table = std::fs::read_to_string(r.join("a.folded_vs_b.folded.callers")).unwrap();
    // Idle stacks left out: 900 CPU samples in a, 600 in b. read_zero: 500 of 900 (55.56%)
    // then 200 of 600 (33.33%); vfs_write: 300 of 900 then 300 of 600.
    let words = |l: &str| l.split_whitespace().take(5).collect::<Vec<_>>().join(" ");
    let block = |f: &str| {
        let at = table
            .lines()
            .position(|l| l == f)
            .unwrap_or_else(|| panic!("{f} missing:\n{table}"));
        table.lines().skip(at).map(words).collect::<Vec<_>>()
    };
    assert_eq!(block("read_zero")[2], "inclusive 55.56 33.33 -22.22 ±");
    assert_eq!(block("vfs_write")[2], "inclusive 33.33 50.00 +16.67 ±");
    assert!(!table.contains("default_idle"), "idle stacks are left out:\n{table}");
}

/// Copies a compiled loop into anonymous memory, runs it there and names it in
/// `/tmp/perf-PID.map`, as a JIT does; prints its pid first.
const JIT_PROGRAM: &str = r#"
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
__attribute__((noinline)) unsigned long spin(unsigned long n) {
    unsigned long s = 0;
    for (unsigned long i = 0; i < n; i++) { s += i ^ (s >> 3); __asm__ volatile("" : "+r"(s)); }
    return s;
}
int main(int argc, char **argv) {
    unsigned long n = argc > 1 ? strtoul(argv[1], 0, 10) : 1000;
    unsigned char *page = mmap(0, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    memcpy(page, (void *)spin, 256);
    mprotect(page, 4096, PROT_READ | PROT_EXEC);
    char path[64];
    snprintf(path, sizeof path, "/tmp/perf-%d.map", getpid());
    FILE *f = fopen(path, "w");
    fprintf(f, "%lx 100 jitted_spin\n", (unsigned long)page);
    fclose(f);
    printf("%d\n", getpid());
    fflush(stdout);
    unsigned long (*jitted)(unsigned long) = (void *)page;
    printf("%lu\n", jitted(2 * n) + spin(n));
    return 0;
}
"#;

#[test]
fn jit_code_is_named_from_the_perf_map() {
    if !perf_usable(true) {
        return;
    }
    let _perf = perf_lock();
    let d = tempdir();
    std::fs::write(d.path().join("jit.c"), JIT_PROGRAM).unwrap();
    let o = run_in(d.path(), "gcc", &["-O1", "-o", "jit", "jit.c"]);
    assert!(o.status.success(), "gcc: {}", stderr(&o));
    let o = perf_record(d.path(), &["-o", "j.data", "--", "./jit", "100000000"]);
    let pid = stdout(&o).lines().next().unwrap_or_default().trim().to_string();
    let map = std::path::PathBuf::from(format!("/tmp/perf-{pid}.map"));
    // The map is the test's to remove, whatever happens below.
    struct Remove(std::path::PathBuf);
    impl Drop for Remove {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }
    let _cleanup = Remove(map.clone());
    assert!(map.is_file(), "perf record: {} {}", stdout(&o), stderr(&o));
    let perf = perf_report_entries(d.path(), "j.data");
    let ours = our_shares(d.path(), "j.data");
    let jit = perf[&(".".to_string(), "jitted_spin".to_string())];
    assert!(jit > 40.0, "{perf:?}");
    assert!((ours["jitted_spin"] - jit).abs() <= 0.011, "{ours:?} vs {perf:?}");
    let spin = perf[&(".".to_string(), "spin".to_string())];
    assert!((ours["spin"] - spin).abs() <= 0.011, "{ours:?} vs {perf:?}");
}

/// An event's name without perf's modifiers (`cpu-clock:u` → `cpu-clock`).
fn bare_event(name: &str) -> &str {
    match name.rsplit_once(':') {
        Some((bare, mods)) if mods.bytes().all(|b| b"ukhGHpPSDIeW".contains(&b)) => bare,
        _ => name,
    }
}

/// perf report's share of each function of `event` in `data`, in per cent of the event's
/// total period, from the exact periods `perf report -F period` prints (not its
/// percentages, rounded to two decimals). Functions are named as prfcmp names its rows:
/// the bare symbol for the kernel, `sym [dso]` for kernel modules and user files, and
/// `[unknown] [dso]` for the addresses perf prints unresolved (summed: prfcmp counts them
/// as one function).
pub(crate) fn perf_report_shares(dir: &Path, data: &str, event: &str, extra: &[&str]) -> HashMap<String, f64> {
    let mut args = vec![
        "report",
        "--stdio",
        "--sort",
        "dso,sym",
        "-F",
        "period,dso,sym",
        "-i",
        data,
    ];
    args.extend_from_slice(extra);
    let o = run_in(dir, "perf", &args);
    assert!(o.status.success(), "perf {args:?}: {}", stderr(&o));
    let mut periods: HashMap<String, u64> = HashMap::new();
    let mut current: Option<String> = None;
    for l in stdout(&o).lines() {
        // `# Samples: 174  of event 'cpu-clock'`
        if let Some(rest) = l.strip_prefix("# Samples: ") {
            current = rest
                .split_once("of event '")
                .map(|(_, e)| e.trim_end_matches('\'').to_string());
            continue;
        }
        if l.starts_with('#') || l.trim().is_empty() || current.as_deref().map(bare_event) != Some(event) {
            continue;
        }
        let Some((name, period)) = perf_report_row(l) else {
            continue;
        };
        *periods.entry(name).or_default() += period;
    }
    let total: u64 = periods.values().sum();
    assert!(total > 0, "perf report has no samples of {event}:\n{}", stdout(&o));
    periods
        .into_iter()
        .map(|(n, p)| (n, p as f64 * 100.0 / total as f64))
        .collect()
}

/// prfcmp's share of every function of `input` (`--idle-symbols ''` counts every function,
/// so a function's share of CPU is its share of the event), by its row's name.
pub(crate) fn prfcmp_shares(dir: &Path, input: &str, extra: &[&str]) -> HashMap<String, f64> {
    let mut args = vec![input, input];
    args.extend_from_slice(&EVERY_ROW_JSON);
    args.extend_from_slice(extra);
    let o = run_in(dir, PRFCMP, &args);
    assert!(o.status.success(), "prfcmp {args:?}: {}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("prfcmp --format json");
    let mut out = HashMap::new();
    for r in v["rows"].as_array().unwrap() {
        *out.entry(r["function"].as_str().unwrap().to_string()).or_insert(0.0) +=
            r["run1_pct_of_cpu"].as_f64().unwrap();
    }
    out
}

/// Every function's share agrees within 0.01 percentage points, whichever side has it;
/// returns how many functions were compared.
pub(crate) fn assert_every_share_agrees(perf: &HashMap<String, f64>, ours: &HashMap<String, f64>, what: &str) -> usize {
    // A PLT entry is named as objdump names it here (`__tunable_get_val@plt`,
    // symbols::plt_entries_are_named_like_objdump_names_them); perf report names some of
    // libc's only `@plt`. Each side's PLT entries of a file are compared as one.
    let plt = |m: &HashMap<String, f64>| -> HashMap<String, f64> {
        let mut out = HashMap::new();
        for (n, v) in m {
            let key = match n.split_once("@plt ") {
                Some((_, dso)) => format!("@plt {dso}"),
                None => n.clone(),
            };
            *out.entry(key).or_insert(0.0) += v;
        }
        out
    };
    let (perf, ours) = (&plt(perf), &plt(ours));
    let mut names: Vec<&String> = perf.keys().chain(ours.keys()).collect();
    names.sort();
    names.dedup();
    let differ: Vec<String> = names
        .iter()
        .map(|n| {
            (
                n,
                perf.get(*n).copied().unwrap_or(0.0),
                ours.get(*n).copied().unwrap_or(0.0),
            )
        })
        .filter(|(_, p, o)| (p - o).abs() > 0.01)
        .map(|(n, p, o)| format!("{n}: {o:.4}% here, {p:.4}% in perf report"))
        .collect();
    assert!(differ.is_empty(), "{what}:\n{}", differ.join("\n"));
    names.len()
}

/// Compares `data` (of `event`, read with `extra` prfcmp options) with perf report, and
/// with its own `perf script` text (`perf script --header`, so the text lists the
/// recording's events in perf report's order): the two imports must name and weigh every
/// function alike. Returns the shares.
fn assert_agrees_with_perf(dir: &Path, data: &str, event: &str, extra: &[&str]) -> HashMap<String, f64> {
    assert_agrees_with_perf_on(dir, data, event, extra, 3)
}

/// [`assert_agrees_with_perf`] of a recording of at least `min_functions` functions.
fn assert_agrees_with_perf_on(
    dir: &Path,
    data: &str,
    event: &str,
    extra: &[&str],
    min_functions: usize,
) -> HashMap<String, f64> {
    let perf = perf_report_shares(dir, data, event, &[]);
    let ours = prfcmp_shares(dir, data, extra);
    let n = assert_every_share_agrees(&perf, &ours, &format!("{data} ({event})"));
    assert!(n >= min_functions, "{data}: only {n} functions: {perf:?}");
    let o = run_in(dir, "perf", &["script", "--header", "-i", data]);
    assert!(o.status.success(), "perf script: {}", stderr(&o));
    let txt = format!("{data}.txt");
    std::fs::write(dir.join(&txt), &o.stdout).unwrap();
    assert_no_function_changed(dir, data, &txt, extra);
    ours
}

/// The DSO of a function named `NAME@plt [DSO]`, `.plt [DSO]`, `[unknown] [DSO]` or
/// `_init [DSO]` (which perf before 6.3 stretches over the PLT's first entry, `.plt` to
/// the import).
fn plt_or_unknown_dso(function: &str) -> Option<String> {
    let (name, dso) = function.rsplit_once(" [")?;
    (name.ends_with("@plt") || [".plt", "_init", "[unknown]"].contains(&name))
        .then(|| dso.trim_end_matches(']').to_string())
}

/// prfcmp of `a` and `b` lists no function as changed: every function is on both sides
/// with the same value.
pub(crate) fn assert_no_function_changed(dir: &Path, a: &str, b: &str, extra: &[&str]) {
    let mut args = vec![a, b];
    args.extend_from_slice(&EVERY_ROW_JSON);
    args.extend_from_slice(extra);
    let o = run_in(dir, PRFCMP, &args);
    assert!(o.status.success(), "prfcmp {args:?}: {}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let rows = v["rows"].as_array().unwrap();
    // perf before 6.3 names fewer PLT entries, and in another order, than the import,
    // which names them as later perf does (docs/symbols.md): a sample in a PLT may be
    // `[unknown]` to one and `NAME@plt` to the other. So each DSO's PLT and unknown
    // samples are compared as one.
    let plt_or_unknown = |r: &&serde_json::Value| r["function"].as_str().and_then(plt_or_unknown_dso);
    let mut lumped: HashMap<String, [f64; 2]> = HashMap::new();
    for r in rows {
        if let Some(dso) = plt_or_unknown(&r) {
            let e = lumped.entry(dso).or_default();
            e[0] += r["run1"].as_f64().unwrap_or(0.0);
            e[1] += r["run2"].as_f64().unwrap_or(0.0);
        }
    }
    for (dso, [t1, t2]) in &lumped {
        assert!(
            (t1 - t2).abs() < 1e-9,
            "{a} vs {b}: PLT and unknown time of {dso}: {t1} vs {t2}"
        );
    }
    let changed: Vec<String> = rows
        .iter()
        .filter(|r| plt_or_unknown(r).is_none())
        .filter(|r| r["run1"].is_null() || r["run1"] != r["run2"] || r["delta"].as_f64() != Some(0.0))
        .map(|r| format!("{} {} {}", r["function"], r["run1"], r["run2"]))
        .collect();
    assert!(
        changed.is_empty(),
        "{a} vs {b}: changed functions:\n{}",
        changed.join("\n")
    );
    assert!(!rows.is_empty(), "{a} vs {b}: no function");
}

/// Page faults in two functions (two thirds and one third of them) and context switches
/// between two processes: workloads for the software events.
const EVENTS_PROGRAM: &str = r#"
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
/* Every page of a fresh mapping faults once (small pages: no transparent huge pages). */
__attribute__((noinline)) void fault_two_thirds(size_t pages) {
    char *p = mmap(0, pages * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    madvise(p, pages * 4096, MADV_NOHUGEPAGE);
    for (size_t i = 0; i < pages; i++) p[i * 4096] = 1;
    munmap(p, pages * 4096);
}
__attribute__((noinline)) void fault_one_third(size_t pages) {
    char *p = mmap(0, pages * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    madvise(p, pages * 4096, MADV_NOHUGEPAGE);
    for (size_t i = 0; i < pages; i++) p[i * 4096] = 2;
    munmap(p, pages * 4096);
}
/* A byte handed back and forth: each hand-over switches context. */
__attribute__((noinline)) void ping_pong(long rounds) {
    int a[2], b[2];
    char c = 0;
    if (pipe(a) || pipe(b)) exit(1);
    if (fork() == 0) {
        for (long i = 0; i < rounds; i++) if (read(a[0], &c, 1) != 1 || write(b[1], &c, 1) != 1) _exit(1);
        _exit(0);
    }
    for (long i = 0; i < rounds; i++) if (write(a[1], &c, 1) != 1 || read(b[0], &c, 1) != 1) exit(1);
    wait(0);
}
int main(int argc, char **argv) {
    long n = argc > 2 ? atol(argv[2]) : 1000;
    if (argc > 1 && argv[1][0] == 'f') {
        for (int r = 0; r < 20; r++) { fault_two_thirds(2 * n); fault_one_third(n); }
    } else {
        ping_pong(n);
    }
    return 0;
}
"#;

/// Builds `EVENTS_PROGRAM` as `dir/events`.
fn build_events(dir: &Path) {
    std::fs::write(dir.join("events.c"), EVENTS_PROGRAM).unwrap();
    let o = run_in(dir, "gcc", &["-O1", "-o", "events", "events.c"]);
    assert!(o.status.success(), "gcc: {}", stderr(&o));
}

/// `perf record -q -N ARGS` in `dir` (the event is in `args`), once it has succeeded.
pub(crate) fn perf_record_any(dir: &Path, args: &[&str]) {
    let mut all = vec!["record", "-q", "-N"];
    all.extend_from_slice(args);
    let o = run_in(dir, "perf", &all);
    assert!(o.status.success(), "perf {all:?}: {}", stderr(&o));
}

#[test]
fn varying_periods_and_several_events_agree_with_perf_report() {
    if !perf_usable(true) {
        return;
    }
    let _perf = perf_lock();
    let d = tempdir();
    build_events(d.path());
    let dd = ["--", "dd", "if=/dev/zero", "of=/dev/null", "bs=512", "count=400000"];
    // cpu-clock at a frequency: the kernel adjusts the period sample by sample.
    let mut args = vec!["-e", "cpu-clock", "-F", "4000", "-o", "freq.data"];
    args.extend(dd);
    perf_record_any(d.path(), &args);
    let ours = assert_agrees_with_perf(d.path(), "freq.data", "cpu-clock", &[]);
    assert!(ours.get("read_zero").is_some_and(|&s| s > 1.0), "{ours:?}");

    // Software events other than time, sampled at varying periods (perf's default -F 4000).
    perf_record_any(
        d.path(),
        &["-e", "page-faults", "-o", "pf.data", "--", "./events", "f", "5000"],
    );
    let ours = assert_agrees_with_perf(d.path(), "pf.data", "page-faults", &[]);
    let (two, one) = (ours["fault_two_thirds [events]"], ours["fault_one_third [events]"]);
    assert!(two > 40.0 && one > 20.0, "{ours:?}");
    // A task switches in the scheduler: perhaps one function has every sample.
    perf_record_any(
        d.path(),
        &[
            "-e",
            "context-switches",
            "-o",
            "cs.data",
            "--",
            "./events",
            "s",
            "20000",
        ],
    );
    let ours = assert_agrees_with_perf_on(d.path(), "cs.data", "context-switches", &[], 1);
    assert!(ours.keys().any(|f| f.contains("schedule")), "{ours:?}");

    // Two events in one recording: the first by default, the other by --event, and a
    // note that names the one left out.
    perf_record_any(
        d.path(),
        &[
            "-e",
            "cpu-clock,page-faults",
            "-o",
            "two.data",
            "--",
            "./events",
            "f",
            "5000",
        ],
    );
    assert_agrees_with_perf(d.path(), "two.data", "cpu-clock", &[]);
    let ours = assert_agrees_with_perf(d.path(), "two.data", "page-faults", &["--event", "page-faults"]);
    assert!(ours["fault_two_thirds [events]"] > 40.0, "{ours:?}");
    let o = run_in(d.path(), PRFCMP, &["two.data", "two.data"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("cpu-clock samples are read; the input also has page-faults ("),
        "{}",
        stderr(&o)
    );
    let o = run_in(d.path(), PRFCMP, &["two.data", "two.data", "--event", "cycles"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("two.data: no event cycles; the input has cpu-clock, page-faults"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn pipe_mode_recordings_are_read_plain_and_compressed_from_files_and_pipes() {
    if !perf_usable(true) {
        return;
    }
    let _perf = perf_lock();
    let d = tempdir();
    let dd = ["--", "dd", "if=/dev/zero", "of=/dev/null", "bs=512", "count=400000"];
    for (file, z) in [("pipe.data", None), ("zpipe.data", Some("-z"))] {
        let mut args = vec!["record", "-q", "-N", "-e", "cpu-clock", "-o", "-"];
        args.extend(z);
        args.extend(dd);
        let o = run_in(d.path(), "perf", &args);
        assert!(o.status.success(), "perf {args:?}: {}", stderr(&o));
        assert!(o.stdout.len() > 1000, "perf record -o - wrote {} bytes", o.stdout.len());
        std::fs::write(d.path().join(file), &o.stdout).unwrap();
        assert_agrees_with_perf(d.path(), file, "cpu-clock", &[]);
        // The same stream on standard input.
        let mut child = Command::new(PRFCMP)
            .args(["-", file])
            .args(EVERY_ROW_JSON)
            .current_dir(d.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(&o.stdout).unwrap();
        drop(stdin);
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
        let rows = v["rows"].as_array().unwrap();
        assert!(
            rows.len() >= 3 && rows.iter().all(|r| r["delta"].as_f64() == Some(0.0)),
            "{rows:?}"
        );
        // Cut inside a record, as a copy of a stream still being written would be.
        let cut = o.stdout.len() - 3;
        std::fs::write(d.path().join("cut.data"), &o.stdout[..cut]).unwrap();
        let e = run_in(d.path(), PRFCMP, &["cut.data", file]);
        assert_eq!(e.status.code(), Some(2), "{}", stderr(&e));
        assert!(
            stderr(&e).contains(&format!(
                "cut.data: not a readable perf.data file: it stops at byte {cut}"
            )),
            "{}",
            stderr(&e)
        );
    }
    // A file written as a file is read from its path, not from a pipe: said so.
    let mut args = vec!["-e", "cpu-clock", "-o", "file.data"];
    args.extend(dd);
    perf_record_any(d.path(), &args);
    let o = Command::new(PRFCMP)
        .args(["-", "file.data"])
        .current_dir(d.path())
        .stdin(std::fs::File::open(d.path().join("file.data")).unwrap())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("it is written as a file"), "{}", stderr(&o));
}

/// `data` as if recorded on another machine: its kernel release and the running kernel's
/// build-id (in its header) replaced by others of the same length.
fn as_if_from_another_machine(data: &[u8]) -> Vec<u8> {
    fn replace_all(v: &mut [u8], from: &[u8], to: &[u8]) {
        let mut at = 0;
        while let Some(k) = v[at..].windows(from.len()).position(|w| w == from) {
            v[at + k..at + k + from.len()].copy_from_slice(to);
            at += k + from.len();
        }
    }
    let mut out = data.to_vec();
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    let release = release.trim().as_bytes();
    // Every digit one up: another release of the same length.
    let other: Vec<u8> = release
        .iter()
        .map(|&b| {
            if b.is_ascii_digit() {
                b'0' + (b - b'0' + 1) % 10
            } else {
                b
            }
        })
        .collect();
    replace_all(&mut out, release, &other);
    if let Some(id) = upcmp::host::running_kernel_build_id() {
        let flipped: Vec<u8> = id.iter().map(|b| !b).collect();
        replace_all(&mut out, &id, &flipped);
    }
    out
}

#[test]
fn user_only_recordings_need_no_kernel_symbols() {
    if !perf_usable(true) {
        return;
    }
    let _perf = perf_lock();
    let d = tempdir();
    build_spin(d.path(), "");
    perf_record_any(
        d.path(),
        &["-e", "cpu-clock:u", "-o", "u.data", "--", "./spin", "10000000"],
    );
    let ours = assert_agrees_with_perf(d.path(), "u.data", "cpu-clock", &[]);
    assert!(ours["spin_two_thirds [spin]"] > 40.0, "{ours:?}");
    assert!(
        !ours.keys().any(|f| !f.contains(" [")),
        "kernel functions in a user-only recording: {ours:?}"
    );

    // From another machine, with no build-id cache: the user-only recording needs nothing
    // of its kernel; one with kernel samples asks for that kernel's symbols.
    // dd spends its time in read(2) and write(2): kernel samples for certain, where a short
    // spin may take none.
    perf_record_any(
        d.path(),
        &[
            "-e",
            "cpu-clock",
            "-o",
            "k.data",
            "--",
            "dd",
            "if=/dev/zero",
            "of=/dev/null",
            "bs=64",
            "count=3000000",
        ],
    );
    let home = d.path().join("home");
    std::fs::create_dir(&home).unwrap();
    for f in ["u.data", "k.data"] {
        let data = std::fs::read(d.path().join(f)).unwrap();
        std::fs::write(d.path().join(format!("other-{f}")), as_if_from_another_machine(&data)).unwrap();
    }
    let prfcmp = |args: &[&str]| {
        Command::new(PRFCMP)
            .args(args)
            .current_dir(d.path())
            .env("HOME", &home)
            .env_remove("PERF_BUILDID_DIR")
            .output()
            .unwrap()
    };
    let o = prfcmp(&["other-u.data", "u.data", "--cutoff", "0"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!stderr(&o).contains("kernel"), "{}", stderr(&o));
    let o = prfcmp(&["other-k.data", "k.data"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("recorded on another kernel") && stderr(&o).contains("pass --kallsyms FILE"),
        "{}",
        stderr(&o)
    );
    let o = prfcmp(&["other-k.data", "k.data", "--kallsyms", "/proc/kallsyms"]);
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn kallsyms_of_another_boot_is_moved_to_where_the_recording_found_the_kernel() {
    if !perf_usable(true) {
        return;
    }
    let _perf = perf_lock();
    let d = tempdir();
    let mut args = vec!["-e", "cpu-clock", "-o", "a.data"];
    args.extend(["--", "dd", "if=/dev/zero", "of=/dev/null", "bs=512", "count=400000"]);
    perf_record_any(d.path(), &args);
    // This kernel's symbols as another boot lists them: KASLR put it 64 MiB higher.
    let kallsyms = std::fs::read_to_string("/proc/kallsyms").unwrap();
    let moved: String = kallsyms
        .lines()
        .map(|l| {
            let (addr, rest) = l.split_once(' ').unwrap();
            let a = u64::from_str_radix(addr, 16).unwrap();
            let a = if a == 0 { 0 } else { a.wrapping_add(0x400_0000) };
            format!("{a:016x} {rest}\n")
        })
        .collect();
    std::fs::write(d.path().join("boot2.kallsyms"), moved).unwrap();
    let perf = perf_report_shares(d.path(), "a.data", "cpu-clock", &["--kallsyms", "boot2.kallsyms"]);
    let ours = prfcmp_shares(d.path(), "a.data", &["--kallsyms", "boot2.kallsyms"]);
    assert_every_share_agrees(&perf, &ours, "kallsyms of another boot");
    assert!(ours.get("read_zero").is_some_and(|&s| s > 1.0), "{ours:?}");
    let o = run_in(d.path(), PRFCMP, &["a.data", "a.data", "--kallsyms", "boot2.kallsyms"]);
    assert!(
        stderr(&o).contains("the recording found the kernel -0x4000000 bytes from where boot2.kallsyms lists it"),
        "{}",
        stderr(&o)
    );
    // Symbols of another build, where no sample falls in a function: said so.
    std::fs::write(
        d.path().join("other.kallsyms"),
        "ffffffff81000000 T _text\nffffffff81000010 T nothing_here\nffffffff81000020 T _etext\n",
    )
    .unwrap();
    let o = run_in(d.path(), PRFCMP, &["a.data", "a.data", "--kallsyms", "other.kallsyms"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("kernel samples falls in a function of other.kallsyms"),
        "{}",
        stderr(&o)
    );
}

/// A C++ program: a function template and an overload set, whose names `perf script -v`
/// prints with their parameters.
const CPP_PROGRAM: &str = r#"
#include <cstdlib>
#include <vector>
volatile unsigned long sink;
namespace ns {
template <typename T> struct Box {
    T v;
    __attribute__((noinline)) T spin(unsigned long n, int k) const {
        T s = v;
        for (unsigned long i = 0; i < n; i++) { s += i ^ k; sink = s; }
        return s;
    }
};
__attribute__((noinline)) unsigned long work(std::vector<int> const& v, unsigned long n) {
    unsigned long s = 0;
    for (unsigned long i = 0; i < n; i++) { s += v[i % v.size()]; sink = s; }
    return s;
}
}
int main(int argc, char** argv) {
    unsigned long n = argc > 1 ? strtoul(argv[1], 0, 10) : 1000;
    std::vector<int> v(100, 3);
    ns::Box<unsigned long> b{1};
    for (int r = 0; r < 10; r++) { sink += b.spin(2 * n, r); sink += ns::work(v, n); }
}
"#;

#[test]
fn perf_data_and_its_perf_script_text_name_every_function_alike() {
    if !perf_usable(true) {
        return;
    }
    if !Command::new("g++")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
    {
        eprintln!("skipped: this test needs g++");
        return;
    }
    let _perf = perf_lock();
    let d = tempdir();
    std::fs::write(d.path().join("cpp.cc"), CPP_PROGRAM).unwrap();
    let o = run_in(d.path(), "g++", &["-O1", "-o", "cpp", "cpp.cc"]);
    assert!(o.status.success(), "g++: {}", stderr(&o));
    perf_record_any(
        d.path(),
        &["-e", "cpu-clock", "-g", "-o", "c.data", "--", "./cpp", "20000000"],
    );
    // -v: C++ names with their parameters, as some perf builds print them always.
    let o = run_in(d.path(), "perf", &["script", "-v", "-i", "c.data"]);
    assert!(o.status.success(), "perf script: {}", stderr(&o));
    assert!(stdout(&o).contains("ns::work(std::vector<int"), "no parameters printed");
    std::fs::write(d.path().join("c.txt"), &o.stdout).unwrap();
    assert_no_function_changed(d.path(), "c.data", "c.txt", &[]);
    let ours = prfcmp_shares(d.path(), "c.txt", &[]);
    assert!(ours.contains_key("ns::Box<unsigned long>::spin [cpp]"), "{ours:?}");
    // The stacks too: the same frames, named alike, from both; a PLT frame may be
    // `[unknown]` or `@plt` to a perf before 6.3 (docs/symbols.md).
    let (from_data, from_text) = (
        folded_plt_as_unknown(d.path(), "c.data"),
        folded_plt_as_unknown(d.path(), "c.txt"),
    );
    assert!(from_data.keys().any(|l| l.ends_with(";ns::work")), "{from_data:?}");
    assert_eq!(from_data, from_text);
}

#[test]
fn a_folded_file_with_a_long_first_line_is_read_as_folded() {
    let d = tempdir();
    // 2000 frames: a first line of about 20 kB, longer than any look-ahead.
    let deep: Vec<String> = (0..2000).map(|i| format!("frame_{i}")).collect();
    let text = format!("{} 7\na;b 3\n", deep.join(";"));
    std::fs::write(d.path().join("deep.folded"), &text).unwrap();
    for input in ["deep.folded", "-"] {
        let mut child = Command::new(PRFCMP)
            .args([input, "deep.folded", "--cutoff", "0", "--format", "json"])
            .current_dir(d.path())
            .stdin(if input == "-" { Stdio::piped() } else { Stdio::null() })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        if let Some(mut stdin) = child.stdin.take() {
            stdin.write_all(text.as_bytes()).unwrap();
        }
        let o = child.wait_with_output().unwrap();
        assert!(o.status.success(), "{input}: {}", stderr(&o));
        let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
        assert_eq!(v["run1"]["event"], "folded", "{input}");
        let rows: Vec<(&str, f64)> = v["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| (r["function"].as_str().unwrap(), r["run1"].as_f64().unwrap()))
            .collect();
        // 7 and 3 samples of 1 ms.
        let sec = |f: &str| rows.iter().find(|r| r.0 == f).map(|r| r.1);
        assert_eq!(rows.len(), 2, "{input}: {rows:?}");
        assert!((sec("frame_1999").unwrap() - 0.007).abs() < 1e-12, "{input}: {rows:?}");
        assert!((sec("b").unwrap() - 0.003).abs() < 1e-12, "{input}: {rows:?}");
    }
}

#[test]
fn event_units_in_every_format_match_their_golden_files() {
    let import = testdata("import");
    for (format, ext) in [("text", "txt"), ("csv", "csv"), ("json", "json"), ("markdown", "md")] {
        let out = run_in(
            &import,
            PRFCMP,
            &["pf-a.perf-script", "pf-b.perf-script", "--format", format],
        );
        assert!(out.status.success(), "{}", stderr(&out));
        assert_golden(&stdout(&out), &format!("import/expected_events.{ext}"));
    }
}

#[test]
fn a_low_limit_of_open_files_does_not_leave_user_functions_unnamed() {
    if !perf_usable(false) {
        return;
    }
    let _perf = perf_lock();
    let d = tempdir();
    // A user-space recording of a few programs: several ELF files, each table holding
    // its file open for its names.
    perf_record(
        d.path(),
        &[
            "-o",
            "a.data",
            "--",
            "sh",
            "-c",
            "for i in 1 2 3 4 5 6 7 8; do ls -R /usr/lib >/dev/null; done",
        ],
    );
    let run = |limit: &str| {
        let cmd = format!("ulimit -Sn {limit} && exec {PRFCMP} a.data a.data");
        let o = run_in(d.path(), "sh", &["-c", &cmd]);
        assert!(o.status.success(), "{limit}: {}", stderr(&o));
        stdout(&o)
    };
    let (wide, narrow) = (run("1024"), run("7"));
    assert!(wide.contains("libc.so"), "{wide}");
    // Seven descriptors: the standard three and the recording twice leave two for the
    // tables' files (ls, libc, ld.so, sh) and kallsyms: the soft limit must be raised.
    assert_eq!(wide, narrow);
}

/// A perf.data file split between two readers (the rest handed to a second one at a
/// round's end, which walks the records before its part for their mappings and
/// commands) reads as one reader reads it: the same profile, stacks and warnings.
#[test]
fn a_recording_split_between_two_readers_reads_as_one() {
    use upcmp::import::{import, ImportOptions, Imported, Split};
    let d = tempdir();
    let mut files = vec![
        testdata("import/filter.data"),
        testdata("import/stacks.data"),
        testdata("hostile/small.data"),
    ];
    if perf_usable(true) {
        let _lock = perf_lock();
        // The whole machine with call chains while processes come and go: many rounds,
        // and mappings, forks and exits on both sides of the split. dd starts after the
        // first reader's part has begun and runs past the second's start: the second
        // reader must know its command and mappings from the records before its part.
        perf_record(
            d.path(),
            &[
                // Small buffers, written out often: a round every few samples.
                "-a",
                "-g",
                "-F",
                "4000",
                "-m",
                "8",
                "-o",
                "many.data",
                "--",
                "sh",
                "-c",
                "for i in $(seq 100); do cat /proc/self/stat > /dev/null; done; \
                 dd if=/dev/zero of=/dev/null bs=4k count=600000 2>/dev/null & \
                 for i in $(seq 200); do cat /proc/self/stat > /dev/null; done; wait",
            ],
        );
        let stats = Command::new("perf")
            .args(["report", "--stats", "-i"])
            .arg(d.path().join("many.data"))
            .output()
            .unwrap();
        let rounds: u64 = String::from_utf8_lossy(&stats.stdout)
            .lines()
            .find_map(|l| l.trim().strip_prefix("FINISHED_ROUND events:"))
            .and_then(|n| n.split_whitespace().next()?.parse().ok())
            .unwrap_or(0);
        assert!(rounds >= 8, "a split needs rounds on both of its sides: {rounds}");
        files.push(d.path().join("many.data"));
    }
    let folded = |i: &Imported| i.stacks.as_ref().map(|s| s.folded_lines());
    for f in &files {
        for stacks in [false, true] {
            let opts = |split| {
                ImportOptions::new(None, None, None, None)
                    .with_stacks(stacks)
                    .with_split(split)
            };
            match (import(f, &opts(Split::Never)), import(f, &opts(Split::AtOnce))) {
                (Ok(one), Ok(two)) => {
                    assert_eq!(two.profile, one.profile, "{}", f.display());
                    assert_eq!(folded(&two), folded(&one), "{}", f.display());
                }
                (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "{}", f.display()),
                (a, b) => panic!(
                    "{}: one reader {:?}, two {:?}",
                    f.display(),
                    a.map(|_| ()).map_err(|e| e.to_string()),
                    b.map(|_| ()).map_err(|e| e.to_string())
                ),
            }
        }
    }
}

/// A row of `perf report --stdio` sorted by period, dso and symbol (`      13250000
/// [kernel.kallsyms]  [k] do_syscall_64`): the function as upcmp names it, and its period.
pub(crate) fn perf_report_row(l: &str) -> Option<(String, u64)> {
    let mut w = l.split_whitespace();
    let (Some(period), Some(dso), Some(_kind)) = (w.next(), w.next(), w.next()) else {
        return None;
    };
    let sym = w.collect::<Vec<_>>().join(" ");
    let unresolved = sym.starts_with("0x");
    let name = match dso {
        "[kernel.kallsyms]" if unresolved => "[unknown]".to_string(),
        "[kernel.kallsyms]" => sym,
        d => {
            let module = d.trim_start_matches('[').trim_end_matches(']');
            format!("{} [{module}]", if unresolved { "[unknown]" } else { &sym })
        }
    };
    Some((name, period.parse().unwrap()))
}

/// Each function's self share in the stacks of `stacks` (idle ones left out): from the
/// call graph (the gprof report's and the `.callers` tables' numbers) and from the frame
/// tree (the flame graphs' tooltips: a node's inclusive share less its children's), by
/// function name.
fn stack_self_shares(stacks: &upcmp::model::StackProfile) -> [HashMap<String, f64>; 2] {
    use upcmp::compare::stacks::StackDiff;
    let busy = stacks.without_idle(&upcmp::model::IdleSet::new(vec![]));
    let g = upcmp::model::CallGraph::of_command_rooted(&busy);
    let mut graph = HashMap::new();
    for (f, &w) in g.self_weight.iter().enumerate() {
        if w > 0 {
            *graph.entry(g.names[f].clone()).or_insert(0.0) += g.pct(w);
        }
    }
    let d = StackDiff::new(std::slice::from_ref(&busy), std::slice::from_ref(&busy));
    let mut own: Vec<f64> = (0..d.nodes.len()).map(|n| d.change(n).pct1).collect();
    for n in 1..d.nodes.len() {
        own[d.nodes[n].parent] -= d.change(n).pct1;
    }
    let mut tree = HashMap::new();
    for (n, &share) in own.iter().enumerate().skip(1) {
        if share.abs() > 1e-9 {
            *tree.entry(d.node_name(n).to_string()).or_insert(0.0) += share;
        }
    }
    [graph, tree]
}

/// The flat profile's share of each function (of all its weight), by function name.
pub(crate) fn flat_shares(p: &upcmp::model::Profile) -> HashMap<String, f64> {
    let total: u64 = p.functions.iter().map(|f| f.weight()).sum();
    let mut out = HashMap::new();
    for f in &p.functions {
        *out.entry(f.name.clone()).or_insert(0.0) += 100.0 * f.weight() as f64 / total as f64;
    }
    out
}

#[test]
fn stacks_carry_exact_period_weights_as_the_flat_profile_does() {
    let d = tempdir();
    // Two stacks into f, of periods 5 and 3, and one into g of period 2: the mean period
    // is 10/3, so stacks rounded to whole mean-period samples would give f 75% (2 + 1 of
    // 4) and its callers 50/25, where the periods give 80% and 50/30.
    let sample = |period: u64, frames: &[&str]| {
        let mut s = format!("prog 100 [000] 1.{period:06}: {period:10} page-faults: \n");
        for (i, f) in frames.iter().enumerate() {
            s.push_str(&format!("\t{:16x} {f} (/usr/bin/prog)\n", 0x1000 * (i + 1)));
        }
        s + "\n"
    };
    let text = [
        sample(5, &["f", "a", "main"]),
        sample(3, &["f", "b", "main"]),
        sample(2, &["g", "main"]),
    ]
    .concat();
    let path = d.path().join("periods.perf-script");
    std::fs::write(&path, text).unwrap();
    let opts = upcmp::import::ImportOptions::new(None, None, None, None).with_stacks(true);
    let imported = upcmp::import::import(&path, &opts).unwrap();
    let stacks = imported.stacks.expect("call chains");
    let busy = stacks.without_idle(&upcmp::model::IdleSet::new(vec![]));
    let g = upcmp::model::CallGraph::of_command_rooted(&busy);
    let id = |n: &str| g.id(n).unwrap_or_else(|| panic!("{n} in {:?}", g.names));
    let caller = |c: &str| g.pct(g.arcs[&(id(c), id("f"))].weight);
    assert!((caller("a") - 50.0).abs() < 0.01, "a: {}", caller("a"));
    assert!((caller("b") - 30.0).abs() < 0.01, "b: {}", caller("b"));
    // Of f's own time, the callers' shares are 62.5 and 37.5.
    let f_total = g.total_weight[id("f") as usize];
    let of_f = |c: &str| 100.0 * g.arcs[&(id(c), id("f"))].weight as f64 / f_total as f64;
    assert!((of_f("a") - 62.5).abs() < 0.01 && (of_f("b") - 37.5).abs() < 0.01);
    // One sample each: the sampling error is counted in samples.
    assert_eq!(g.arcs[&(id("a"), id("f"))].samples, 1);
    let flat = flat_shares(&imported.profile);
    assert!((flat["f"] - 80.0).abs() < 0.01, "{flat:?}");
    for shares in stack_self_shares(&stacks) {
        assert!((shares["f"] - flat["f"]).abs() < 0.01, "{shares:?} against {flat:?}");
        assert!((shares["g"] - flat["g"]).abs() < 0.01, "{shares:?} against {flat:?}");
    }
    // The stack comparison's `.callers` numbers: f's callers in run 1 as shares of CPU.
    let diff = upcmp::compare::stacks::StackDiff::new(std::slice::from_ref(&busy), std::slice::from_ref(&busy));
    let node = diff.find("prog;main;a").expect("prog;main;a");
    assert!((diff.change(node).pct1 - 50.0).abs() < 0.01);
}

#[test]
fn flamegraph_java_faults_stack_shares_equal_the_flat_profile() {
    // Page faults of a JVM, sampled at varying periods (1 to 72 faults a sample).
    let opts = upcmp::import::ImportOptions::new(None, None, None, None).with_stacks(true);
    let imported = upcmp::import::import(&testdata("import/java-faults.perf-script"), &opts).unwrap();
    let stacks = imported.stacks.expect("call chains");
    let flat = flat_shares(&imported.profile);
    assert!(flat.len() >= 10, "{flat:?}");
    for (what, shares) in ["call graph", "frame tree"].iter().zip(stack_self_shares(&stacks)) {
        let mut names: Vec<&String> = flat.keys().chain(shares.keys()).collect();
        names.sort();
        names.dedup();
        for n in names {
            let (a, b) = (
                flat.get(n).copied().unwrap_or(0.0),
                shares.get(n).copied().unwrap_or(0.0),
            );
            assert!((a - b).abs() < 0.01, "{what}: {n}: flat {a:.4}%, stacks {b:.4}%");
        }
    }
}

// ---------------------------------------------------------------------------------------
// KSYMBOL records (kernel code loaded while recording) in numbers and lengths no kernel
// writes

/// 300,000 KSYMBOL records (a 30 MB file) took minutes: each record scanned every live
/// symbol and every cached address. The bound is not a timing: linear work takes well
/// under a second here, quadratic work takes minutes, a busy machine neither.
#[test]
fn three_hundred_thousand_ksymbol_records_import_in_linear_time_issue_46() {
    use upcmp::import::fuzz::{ksymbol_body, with_records};
    let base = std::fs::read(testdata("import/stacks.data")).unwrap();
    // Registered from the top address down (each one first in address order), and every
    // fourth one unregistered again.
    let mut records = Vec::new();
    for i in 0u64.. {
        if records.len() >= 300_000 {
            break;
        }
        let addr = 0xffff_ffff_a000_0000 - 0x40 * i;
        let name = format!("bpf_prog_{i:016x}_f");
        records.push((0, 17, ksymbol_body(addr, 0x40, 1, false, name.as_bytes())));
        if i % 4 == 3 {
            records.push((0, 17, ksymbol_body(addr, 0x40, 1, true, name.as_bytes())));
        }
    }
    let file = with_records(&base, &records).unwrap();
    let tmp = tempdir();
    let path = tmp.path().join("ksymbols.data");
    std::fs::write(&path, &file).unwrap();
    let opts = upcmp::import::ImportOptions::new(None, Some(testdata("upsrun/callgraph/kallsyms")), None, None)
        .with_stacks(true);
    let started = std::time::Instant::now();
    let imported = upcmp::import::import(&path, &opts).unwrap();
    let took = started.elapsed();
    assert!(
        took < std::time::Duration::from_secs(20),
        "{} MB of KSYMBOL records took {took:?}",
        file.len() >> 20
    );
    assert!(imported.profile.cpus.iter().map(|c| c.samples).sum::<u64>() > 0);
}

/// A KSYMBOL record naming all kernel addresses with 5000 bytes: the name reached the
/// profile whole, and the fuzz check's bound on names panicked.
#[test]
fn a_ksymbol_name_of_5000_bytes_is_cut_to_4_kib_issue_46() {
    use upcmp::import::fuzz::{check_perf_data, ksymbol_body, with_records};
    let base = std::fs::read(testdata("import/stacks.data")).unwrap();
    let name = format!("bpf_prog_0123456789abcdef_{}", "n".repeat(5000 - 26));
    let body = ksymbol_body(0xffff_ffff_0000_0000, u32::MAX, 1, false, name.as_bytes());
    let file = with_records(&base, &[(0, 17, body)]).unwrap();
    let kallsyms = testdata("upsrun/callgraph/kallsyms");
    assert!(check_perf_data(&file, &kallsyms), "the file imports");
    let tmp = tempdir();
    let path = tmp.path().join("long-ksymbol.data");
    std::fs::write(&path, &file).unwrap();
    let opts = upcmp::import::ImportOptions::new(None, Some(kallsyms), None, None).with_stacks(true);
    let imported = upcmp::import::import(&path, &opts).unwrap();
    let p = &imported.profile;
    let named: Vec<&upcmp::model::profile::FunctionSamples> = p
        .functions
        .iter()
        .filter(|f| f.name.starts_with("bpf_prog_0123456789abcdef_"))
        .collect();
    assert_eq!(named.len(), 1, "the kernel samples are the program's");
    assert_eq!(named[0].name.len(), upcmp_parsers::MAX_NAME_BYTES);
    assert_eq!(named[0].module, "bpf");
    assert!(
        p.warnings.iter().any(|w| w.starts_with(
            "1 names longer than 4096 bytes were cut to that length (kernel code named by KSYMBOL records"
        )),
        "{:?}",
        p.warnings
    );
    let stacks = imported.stacks.expect("call chains");
    assert!(stacks
        .names()
        .iter()
        .all(|n| n.len() <= upcmp_parsers::MAX_NAME_BYTES + 16));
    assert!(stacks
        .names()
        .iter()
        .any(|n| n.starts_with("bpf_prog_0123456789abcdef_")));
}

/// The loaded code kept in address order names every address as the sorted vector it
/// replaced did (a register replaces what it overlaps, an unregister removes it), over
/// records that overlap, nest, repeat and unload in every way.
#[test]
fn loaded_code_names_addresses_as_before_issue_46() {
    use upcmp::model::code::LoadedCode;
    use upcmp::model::mode::Record;
    use upcmp_parsers::samples::Ksymbol;
    // The former implementation: (start, end, name), sorted by start.
    let mut reference: Vec<(u64, u64, String)> = Vec::new();
    let mut code = LoadedCode::default();
    let mut x = 46u64;
    let mut next = |n: u64| {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (x >> 33) % n
    };
    for i in 0..4000 {
        let (addr, len, unregister) = (0x1000 + next(0x400), next(0x60) as u32, next(4) == 0);
        let name = format!("f{i}");
        let (start, end) = (addr, addr + u64::from(len).max(1));
        reference.retain(|r| r.1 <= start || r.0 >= end);
        if !unregister {
            let at = reference.partition_point(|r| r.0 < start);
            reference.insert(at, (start, end, name.clone()));
        }
        let range = code.observe(&Record::Ksymbol(Ksymbol {
            addr,
            len,
            kind: 1,
            unregister,
            name,
        }));
        assert_eq!(range, Some(start..end));
        assert_eq!(code.len(), reference.len(), "after record {i}");
        for pc in (0x1000 + next(8)..0x1480).step_by(7) {
            let expected = reference
                .iter()
                .find(|r| (r.0..r.1).contains(&pc))
                .map(|r| r.2.as_str());
            assert_eq!(code.resolve(pc).map(|r| r.0), expected, "{pc:#x} after record {i}");
        }
    }
}
