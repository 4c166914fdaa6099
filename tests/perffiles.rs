//! Every perf file read right (issue 30): tracepoint lines in perf script text, pipe mode
//! with tracing data, hybrid CPUs' empty first event, user-only recordings with kernel
//! skid, `--call-graph dwarf` stacks, inlined frames, unresolved frames named alike by
//! both importers, a space-named folded frame, and perf.data of version 1.

use crate::import::{
    assert_every_share_agrees, assert_no_function_changed, build_spin, own_and_crate_readers_agree, perf_record_any,
    perf_report_shares, prfcmp_shares,
};
use crate::util::{perf_lock, perf_usable, run_in, stderr, stdout, tempdir, testdata};
use std::collections::HashMap;
use std::path::Path;
use std::process::{Command, Stdio};

const PRFCMP: &str = env!("CARGO_BIN_EXE_prfcmp");

/// prfcmp of `input` against itself with `args`, HOME an empty directory (no build-id
/// cache to find kernel symbols in): its output, once it has succeeded.
fn prfcmp_alone(dir: &Path, input: &Path, args: &[&str]) -> std::process::Output {
    let home = dir.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let o = Command::new(PRFCMP)
        .arg(input)
        .arg(input)
        .args(args)
        .current_dir(dir)
        .env("HOME", &home)
        .env_remove("PERF_BUILDID_DIR")
        .output()
        .unwrap();
    assert!(o.status.success(), "prfcmp {input:?} {args:?}: {}", stderr(&o));
    o
}

/// The functions of prfcmp's JSON report and their shares of the event.
fn json_shares(o: &std::process::Output) -> HashMap<String, f64> {
    let v: serde_json::Value = serde_json::from_str(&stdout(o)).expect("prfcmp --format json");
    let mut out = HashMap::new();
    for r in v["rows"].as_array().unwrap() {
        *out.entry(r["function"].as_str().unwrap().to_string()).or_insert(0.0) +=
            r["run1_pct_of_cpu"].as_f64().unwrap();
    }
    out
}

/// Shares with each DSO's PLT entries and unknown addresses as one (`[plt/unknown] [DSO]`):
/// perf 6.1 names fewer PLT entries than the import, which names them as later perf does
/// (docs/symbols.md, "Known differences from perf").
fn lump_plt(shares: HashMap<String, f64>) -> HashMap<String, f64> {
    let mut out = HashMap::new();
    for (name, v) in shares {
        let key = match name.rsplit_once(" [") {
            Some((n, dso)) if n.ends_with("@plt") || [".plt", "_init", "[unknown]"].contains(&n) => {
                format!("[plt/unknown] [{dso}")
            }
            _ => name,
        };
        *out.entry(key).or_insert(0.0) += v;
    }
    out
}

/// perf report's share of each function of the group leader `cpu-clock` (`--no-group`
/// prints `of events 'cpu-clock'` first), named as [`perf_report_shares`] names them.
fn leader_shares(dir: &Path, data: &str, extra: &[&str]) -> HashMap<String, f64> {
    let mut args = vec![
        "report",
        "--stdio",
        "--no-group",
        "-g",
        "none",
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
    let mut blocks = 0;
    for l in stdout(&o).lines() {
        if l.starts_with("# Samples: ") {
            blocks += 1;
            assert!(blocks > 1 || l.ends_with("'cpu-clock'"), "{l}");
            continue;
        }
        if blocks != 1 || l.starts_with('#') || l.trim().is_empty() {
            continue;
        }
        let Some((name, period)) = crate::import::perf_report_row(l) else {
            continue;
        };
        *periods.entry(name).or_default() += period;
    }
    let total: u64 = periods.values().sum();
    assert!(total > 0, "{}", stdout(&o));
    periods
        .into_iter()
        .map(|(n, p)| (n, p as f64 * 100.0 / total as f64))
        .collect()
}

const ALL_ROWS: [&str; 6] = ["--idle-symbols", "", "--cutoff", "0", "--format", "json"];

#[test]
fn perf_script_text_with_tracepoint_samples_reads_the_chosen_event_issue_30() {
    if !perf_usable(true) {
        return;
    }
    let _perf = perf_lock();
    let d = tempdir();
    // The sleeps switch out for certain: dd alone was switched out 2 to 6 times a run on
    // an idle machine, and a recording with none has no sched_switch sample to warn of.
    let dd = [
        "--",
        "sh",
        "-c",
        "dd if=/dev/zero of=/dev/null bs=512 count=200000; sleep 0.01; sleep 0.01",
    ];
    let events = ["-e", "cpu-clock", "-e", "sched:sched_switch"];
    perf_record_any(d.path(), &[&events[..], &["-o", "tp.data"], &dd[..]].concat());
    // cpu-clock, the first event: the text (with sched_switch lines among its samples)
    // and the recording agree with perf report and with each other.
    let perf = lump_plt(perf_report_shares(d.path(), "tp.data", "cpu-clock", &[]));
    let ours = lump_plt(prfcmp_shares(d.path(), "tp.data", &[]));
    assert!(assert_every_share_agrees(&perf, &ours, "tp.data") >= 3, "{ours:?}");
    let o = run_in(d.path(), "perf", &["script", "--header", "-i", "tp.data"]);
    assert!(o.status.success(), "perf script: {}", stderr(&o));
    std::fs::write(d.path().join("tp.data.txt"), &o.stdout).unwrap();
    assert_no_function_changed(d.path(), "tp.data", "tp.data.txt", &[]);
    let o = prfcmp_alone(d.path(), &d.path().join("tp.data.txt"), &ALL_ROWS);
    assert!(
        stderr(&o).contains("the input also has sched:sched_switch ("),
        "{}",
        stderr(&o)
    );
    // The tracepoint itself, read from its call chains.
    perf_record_any(d.path(), &[&events[..], &["-g", "-o", "tpg.data"], &dd[..]].concat());
    let o = run_in(d.path(), "perf", &["script", "--header", "-i", "tpg.data"]);
    assert!(o.status.success(), "perf script: {}", stderr(&o));
    std::fs::write(d.path().join("tpg.txt"), &o.stdout).unwrap();
    let tp = ["--event", "sched:sched_switch"];
    assert_no_function_changed(d.path(), "tpg.data", "tpg.txt", &tp);
    let perf = lump_plt(perf_report_shares(
        d.path(),
        "tpg.data",
        "sched:sched_switch",
        &["-g", "none"],
    ));
    let ours = lump_plt(prfcmp_shares(d.path(), "tpg.txt", &tp));
    assert_every_share_agrees(&perf, &ours, "sched:sched_switch from perf script");
}

#[test]
fn pipe_mode_with_tracing_data_is_read_issue_30() {
    // KDAB perfparser's probe.data.stream: a uprobe recorded in pipe mode, its
    // HEADER_TRACING_DATA record followed by the tracepoint formats.
    let data = testdata("import/probe-stream.data");
    let d = tempdir();
    let ours = json_shares(&prfcmp_alone(d.path(), &data, &ALL_ROWS));
    assert_eq!(ours.get("[unknown] [untitled1]"), Some(&100.0), "{ours:?}");
    // From standard input too.
    let o = Command::new(PRFCMP)
        .args(["-", data.to_str().unwrap()])
        .args(ALL_ROWS)
        .stdin(std::fs::File::open(&data).unwrap())
        .stdout(Stdio::piped())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    // Pipe mode is the crate's reader's; the checked reading agrees with it.
    assert!(!own_and_crate_readers_agree(&data));
    if perf_usable(false) {
        let perf = perf_report_shares(d.path(), data.to_str().unwrap(), "probe_untitled1:main", &[]);
        assert_every_share_agrees(&perf, &ours, "probe-stream.data");
    }
}

#[test]
fn a_hybrid_recording_reads_its_first_event_with_samples_issue_30() {
    // perfparser's cpp-inlining.perf.data: cpu_atom/cycles:Pu/ first, with no sample,
    // then cpu_core/cycles:Pu/ (the perf here cannot read the file, so no oracle).
    let data = testdata("import/cpp-inlining.data");
    let d = tempdir();
    let o = prfcmp_alone(d.path(), &data, &ALL_ROWS);
    let err = stderr(&o);
    assert!(
        err.contains("cpu_core/cycles:Pu/ samples are read; the input also has cpu_atom/cycles:Pu/ (0 samples)"),
        "{err}"
    );
    let ours = json_shares(&o);
    let total: f64 = ours.values().sum();
    assert!((total - 100.0).abs() < 1e-6, "{ours:?}");
    // Both readers, and an event asked for by name, agree.
    own_and_crate_readers_agree(&data);
    let named = prfcmp_alone(
        d.path(),
        &data,
        &[&ALL_ROWS[..], &["--event", "cpu_core/cycles:Pu/"]].concat(),
    );
    assert_eq!(json_shares(&named), ours);
    // The empty event, asked for, has no samples to read.
    let o = Command::new(PRFCMP)
        .arg(&data)
        .arg(&data)
        .args(["--event", "cpu_atom/cycles:Pu/"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

#[test]
fn user_only_recordings_with_kernel_skid_need_no_kernel_symbols_issue_30() {
    // linux-perf-data's sleep.data (`cycles:Pu` of sleep, on another machine's kernel) has
    // 5 samples at kernel addresses; perfparser's cpp-inlining 10.
    let d = tempdir();
    for (file, skid, share) in [
        ("import/sleep-user-only.data", 5, 1.6427),
        ("import/cpp-inlining.data", 10, f64::NAN),
    ] {
        let o = prfcmp_alone(d.path(), &testdata(file), &ALL_ROWS);
        let err = stderr(&o);
        assert!(
            err.contains(&format!("{skid} samples of ")) && err.contains("an event of user space only"),
            "{file}: {err}"
        );
        assert!(!err.contains("--kallsyms"), "{file}: {err}");
        let ours = json_shares(&o);
        let unknown = ours.get("[unknown]").copied().unwrap_or(0.0);
        assert!(unknown > 0.0, "{file}: {ours:?}");
        if !share.is_nan() {
            assert!((unknown - share).abs() < 0.01, "{file}: {unknown}");
        }
    }
}

#[test]
fn dwarf_stacks_end_at_the_sampled_address_issue_30() {
    if !perf_usable(true) {
        return;
    }
    let _perf = perf_lock();
    let d = tempdir();
    build_spin(d.path(), "");
    perf_record_any(
        d.path(),
        &[
            "-e",
            "cpu-clock:u",
            "--call-graph",
            "dwarf,4096",
            "-o",
            "dwarf.data",
            "--",
            "./spin",
            "3000000",
        ],
    );
    let opts = upcmp::import::ImportOptions::new(None, None, None, None).with_stacks(true);
    let imported = upcmp::import::import(&d.path().join("dwarf.data"), &opts).unwrap();
    let lines = imported.stacks.expect("call chains").folded_lines();
    let count = |l: &String| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap();
    let total: u64 = lines.iter().map(count).sum();
    let in_spin: u64 = lines
        .iter()
        .filter(|l| l.contains(";main;spin_two_thirds ") || l.contains(";main;spin_one_third "))
        .map(count)
        .sum();
    // Every stack has its sampled function as its leaf, not the command alone, and its
    // callers unwound from the stack dump (tests/dwarf.rs compares them with perf's).
    assert!(lines.iter().all(|l| l.contains(';')), "{lines:?}");
    assert!(in_spin * 10 > total * 8, "{in_spin} of {total}: {lines:?}");
}

#[test]
fn inlined_frames_count_for_the_function_they_ran_in_issue_30() {
    let text = testdata("import/inlined.perf-script");
    let d = tempdir();
    let ours = json_shares(&prfcmp_alone(d.path(), &text, &ALL_ROWS));
    assert!(!ours.keys().any(|f| f.starts_with("inner")), "{ours:?}");
    assert!((ours["outer [inl]"] - 80.0).abs() < 1e-6, "{ours:?}");
    let opts = upcmp::import::ImportOptions::new(None, None, None, None).with_stacks(true);
    let imported = upcmp::import::import(&text, &opts).unwrap();
    let lines = imported.stacks.expect("call chains").folded_lines();
    assert!(lines.iter().all(|l| !l.contains("inner")), "{lines:?}");
    assert!(lines.contains(&"inl;outer 4".to_string()), "{lines:?}");
}

#[test]
fn unresolved_kernel_frames_are_named_by_one_rule_issue_30() {
    // perf prints a kernel address it has no map for with the DSO `[unknown]`; the
    // perf.data import names such an address the kernel's `[unknown]`.
    let d = tempdir();
    let text =
        "a 1 [000] 1.0: 1000 cpu-clock: \n\tffffffffc0123456 [unknown] ([unknown])\n\t401000 main+0x1 (/bin/a)\n\n\
                a 1 [000] 1.1: 1000 cpu-clock: \n\t401000 main+0x1 (/bin/a)\n\n\
                a 1 [000] 1.2: 1000 cpu-clock: \n\t7f0000001000 [unknown] ([unknown])\n\n";
    let p = d.path().join("u.txt");
    std::fs::write(&p, text).unwrap();
    let ours = json_shares(&prfcmp_alone(d.path(), &p, &ALL_ROWS));
    let mut names: Vec<&String> = ours.keys().collect();
    names.sort();
    assert_eq!(names, ["[unknown]", "[unknown] [unknown]", "main [a]"], "{ours:?}");
    let opts = upcmp::import::ImportOptions::new(None, None, None, None).with_stacks(true);
    let lines = upcmp::import::import(&p, &opts).unwrap().stacks.unwrap().folded_lines();
    assert!(lines.contains(&"a;main;[unknown] 1".to_string()), "{lines:?}");
}

#[test]
fn a_folded_frame_named_by_a_space_stays_one_issue_30() {
    // FlameGraph's perf-vertx-stacks-01-collapsed-kernel.txt: stacks ending `;  3`.
    let input = testdata("import/vertx-space.folded");
    let opts = upcmp::import::ImportOptions::new(None, None, None, None).with_stacks(true);
    let imported = upcmp::import::import(&input, &opts).unwrap();
    let stacks = imported.stacks.unwrap();
    assert!(stacks.names().iter().any(|n| n == " "), "{:?}", stacks.names());
    assert!(!stacks.names().iter().any(String::is_empty), "{:?}", stacks.names());
    assert!(imported.profile.functions.iter().any(|f| f.name == " "));
}

#[test]
fn perf_data_of_version_1_is_named_so_issue_30() {
    let d = tempdir();
    let mut data = std::fs::read(testdata("import/sleep-user-only.data")).unwrap();
    data[..8].copy_from_slice(b"PERFFILE");
    std::fs::write(d.path().join("v1.data"), &data).unwrap();
    let o = run_in(d.path(), PRFCMP, &["v1.data", "v1.data"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("perf.data of the old format, version 1") && err.contains("perf inject -i v1.data"),
        "{err}"
    );
    assert!(!err.contains("UTF-8"), "{err}");
    assert!(stdout(&o).is_empty());
}

#[test]
fn group_recordings_with_read_values_are_read_issue_30() {
    if !perf_usable(true) {
        return;
    }
    let _perf = perf_lock();
    let d = tempdir();
    // Leader sampling: each sample carries the group's values (read_format
    // ID|GROUP|LOST), then its call chain.
    perf_record_any(
        d.path(),
        &[
            "-e",
            "{cpu-clock,task-clock}:S",
            "-g",
            "-o",
            "group.data",
            "--",
            "dd",
            "if=/dev/zero",
            "of=/dev/null",
            "bs=512",
            "count=200000",
        ],
    );
    // What perf report shows most of is here too (exact agreement:
    // group_leader_samples_weigh_their_read_values_as_perf_report_does_issue_30).
    let perf = lump_plt(leader_shares(d.path(), "group.data", &[]));
    let ours = lump_plt(prfcmp_shares(d.path(), "group.data", &[]));
    for (n, p) in perf.iter().filter(|(_, &p)| p > 5.0) {
        let o = ours.get(n).copied().unwrap_or(0.0);
        assert!(
            (p - o).abs() < p / 4.0,
            "{n}: {o:.4}% here, {p:.4}% in perf report\n{ours:?}"
        );
    }
    assert!(ours.len() >= 3, "{ours:?}");
    // Read by the own reader of files (the crate refuses it), stacks and all.
    let opts = upcmp::import::ImportOptions::new(None, None, None, None).with_stacks(true);
    let imported = upcmp::import::import(&d.path().join("group.data"), &opts).unwrap();
    assert!(imported.stacks.is_some());
}

/// A loop whose frame pointer leads to two made-up frames: a return address in the
/// kernel's text (argument 2), then one in its direct map, as frame-pointer unwinding
/// reads from the caller of a function that keeps no frame pointer (libc's `write`).
const FAKE_FRAMES_PROGRAM: &str = r#"#include <stdlib.h>
static unsigned long outer[2] = {0, 0xffff888812345678UL};
static unsigned long inner[2];
int main(int argc, char **argv) {
    long n = atol(argv[1]);
    inner[0] = (unsigned long)outer;
    inner[1] = strtoul(argv[2], 0, 16);
    __asm__ volatile("push %%rbp\n\tmov %1, %%rbp\n1:\tdec %0\n\tjnz 1b\n\tpop %%rbp"
                     : "+r"(n) : "r"(inner) : "memory");
    return 0;
}
"#;

/// The folded stacks of `input` (in `dir`) that hold `frame`.
fn folded_with(dir: &Path, input: &str, frame: &str) -> std::collections::BTreeMap<String, u64> {
    let opts = upcmp::import::ImportOptions::new(None, None, None, None).with_stacks(true);
    let imported = upcmp::import::import(&dir.join(input), &opts).unwrap();
    imported
        .stacks
        .expect("call chains")
        .folded_lines()
        .into_iter()
        .filter(|l| l.contains(frame))
        .map(|l| {
            let (stack, n) = l.rsplit_once(' ').unwrap();
            (stack.to_string(), n.parse().unwrap())
        })
        .collect()
}

#[test]
fn user_frames_at_kernel_addresses_are_named_alike_by_both_importers_issue_30() {
    if !perf_usable(true) {
        return;
    }
    let _perf = perf_lock();
    let d = tempdir();
    std::fs::write(d.path().join("fp.c"), FAKE_FRAMES_PROGRAM).unwrap();
    let o = run_in(d.path(), "gcc", &["-O1", "-o", "fp", "fp.c"]);
    assert!(o.status.success(), "gcc: {}", stderr(&o));
    // A return address inside a kernel function (the text import cannot tell its mode).
    let kallsyms = std::fs::read_to_string("/proc/kallsyms").unwrap();
    let ksys_write = kallsyms
        .lines()
        .find(|l| l.ends_with(" T ksys_write"))
        .and_then(|l| u64::from_str_radix(l.split(' ').next()?, 16).ok())
        .filter(|&a| a != 0)
        .map_or("ffffffff81000010".to_string(), |a| format!("{:x}", a + 8));
    perf_record_any(
        d.path(),
        &[
            "-e",
            "cpu-clock",
            "-g",
            "-o",
            "fp.data",
            "--",
            "./fp",
            "300000000",
            &ksys_write,
        ],
    );
    let o = run_in(d.path(), "perf", &["script", "-i", "fp.data"]);
    assert!(o.status.success(), "perf script: {}", stderr(&o));
    std::fs::write(d.path().join("fp.txt"), &o.stdout).unwrap();
    // perf script prints both made-up frames `[unknown] ([unknown])`; both importers name
    // them the kernel's `[unknown]`.
    let (data, text) = (
        folded_with(d.path(), "fp.data", ";main"),
        folded_with(d.path(), "fp.txt", ";main"),
    );
    assert_eq!(data, text);
    let through = data.get("fp;[unknown];[unknown];main").copied().unwrap_or(0);
    assert!(through * 2 > data.values().sum::<u64>(), "{data:?}");
}

/// A loop of `clock_gettime`, which glibc answers in the vDSO.
const CLOCK_PROGRAM: &str = "#include <stdlib.h>\n#include <time.h>\n\
int main(int argc, char **argv) {\n\
    long n = atol(argv[1]), s = 0;\n    struct timespec ts;\n\
    for (long i = 0; i < n; i++) {\n        clock_gettime(CLOCK_MONOTONIC, &ts);\n        s += ts.tv_nsec & 1;\n    }\n\
    return s == -1;\n}\n";

/// The share of every function of the DSO `[dso]` in `shares`, and of its `[unknown]`.
fn dso_shares(shares: &HashMap<String, f64>, dso: &str) -> (f64, f64) {
    let suffix = format!(" [{dso}]");
    let of = |unknown: bool| -> f64 {
        shares
            .iter()
            .filter(|(n, _)| n.ends_with(&suffix) && n.starts_with("[unknown] ") == unknown)
            .map(|(_, v)| v)
            .sum()
    };
    (of(false), of(true))
}

#[test]
fn vdso_functions_are_named_from_perf_data_as_perf_names_them_issue_30() {
    if !perf_usable(true) {
        return;
    }
    let _perf = perf_lock();
    let d = tempdir();
    std::fs::write(d.path().join("clock.c"), CLOCK_PROGRAM).unwrap();
    let o = run_in(d.path(), "gcc", &["-O1", "-o", "clock", "clock.c"]);
    assert!(o.status.success(), "gcc: {}", stderr(&o));
    // perf keeps the vDSO image in the build-id cache of a HOME of the test's own.
    let (home, empty) = (d.path().join("home"), d.path().join("empty"));
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&empty).unwrap();
    let args = [
        "record",
        "-q",
        "-e",
        "cpu-clock:u",
        "-o",
        "vdso.data",
        "--",
        "./clock",
        "5000000",
    ];
    let o = Command::new("perf")
        .args(args)
        .current_dir(d.path())
        .env("HOME", &home)
        .env_remove("PERF_BUILDID_DIR")
        .output()
        .unwrap();
    assert!(o.status.success(), "perf {args:?}: {}", stderr(&o));
    let report = Command::new("perf")
        .args([
            "report",
            "--stdio",
            "--sort",
            "dso,sym",
            "-F",
            "period,dso,sym",
            "-i",
            "vdso.data",
        ])
        .current_dir(d.path())
        .env("HOME", &home)
        .output()
        .unwrap();
    assert!(report.status.success(), "perf report: {}", stderr(&report));
    let perf: HashMap<String, f64> = {
        let rows: Vec<(String, u64)> = stdout(&report)
            .lines()
            .filter(|l| !l.starts_with('#'))
            .filter_map(crate::import::perf_report_row)
            .collect();
        let total: u64 = rows.iter().map(|r| r.1).sum();
        let mut m = HashMap::new();
        for (n, p) in rows {
            *m.entry(n).or_insert(0.0) += p as f64 * 100.0 / total as f64;
        }
        m
    };
    let vdso_perf = perf.get("__vdso_clock_gettime [vdso]").copied().unwrap_or(0.0);
    assert!(vdso_perf > 10.0, "{perf:?}");
    // From perf's build-id cache, and from this process's own vDSO (same kernel): named
    // as perf report names them, with its shares.
    for h in [&home, &empty] {
        let (ours, _) = crate::import::our_shares_with_home(d.path(), "vdso.data", h);
        let here = ours.get("__vdso_clock_gettime [vdso]").copied().unwrap_or(0.0);
        assert!(
            (here - vdso_perf).abs() < 0.01,
            "{h:?}: {here} here, {vdso_perf} in perf report\n{ours:?}"
        );
        let (named, unknown) = dso_shares(&ours, "vdso");
        assert!(
            unknown == 0.0 && (named - dso_shares(&perf, "vdso").0).abs() < 0.01,
            "{h:?}: {ours:?}"
        );
    }
    // Another build's vDSO (its build-id changed in the file) is never used: `[unknown]`.
    let mut data = std::fs::read(d.path().join("vdso.data")).unwrap();
    let cached = std::fs::read_dir(home.join(".debug/[vdso]"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap();
    let id: Vec<u8> = (0..cached.file_name().len() / 2)
        .map(|k| u8::from_str_radix(&cached.file_name().to_str().unwrap()[2 * k..2 * k + 2], 16).unwrap())
        .collect();
    let at = data
        .windows(id.len())
        .rposition(|w| w == id)
        .expect("the vDSO's build-id in the header");
    data[at] ^= 0xff;
    std::fs::write(d.path().join("other.data"), &data).unwrap();
    let (ours, _) = crate::import::our_shares_with_home(d.path(), "other.data", &home);
    let (named, unknown) = dso_shares(&ours, "vdso");
    assert!(named == 0.0 && (unknown - vdso_perf).abs() < 0.01, "{ours:?}");
}

#[test]
fn unresolved_module_addresses_are_named_by_the_module_maps_issue_30() {
    // A pipe-mode recording whose kernel samples fall in kvm before its first symbol, as
    // perf record writes it on a machine running kvm: the module's MMAP record (pid -1,
    // `[kvm]`) says whose code they are. perf report: `[kvm] [k] 0x1000`, 6 of 9 samples.
    let data = testdata("import/module-maps.data");
    let kallsyms = testdata("import/module-maps.kallsyms");
    let d = tempdir();
    let args = [&ALL_ROWS[..], &["--kallsyms", kallsyms.to_str().unwrap()]].concat();
    let ours = json_shares(&prfcmp_alone(d.path(), &data, &args));
    assert!((ours["[unknown] [kvm]"] - 200.0 / 3.0).abs() < 1e-9, "{ours:?}");
    assert!((ours["do_work"] - 100.0 / 3.0).abs() < 1e-9, "{ours:?}");
    assert!(!ours.contains_key("[jit]"), "{ours:?}");
    let opts = upcmp::import::ImportOptions::new(None, Some(kallsyms.clone()), None, None).with_stacks(true);
    let folded = |input: &Path| {
        let mut lines = upcmp::import::import(input, &opts)
            .unwrap()
            .stacks
            .unwrap()
            .folded_lines();
        lines.sort();
        lines
    };
    let from_data = folded(&data);
    assert_eq!(
        from_data,
        [
            "mod;[unknown] [unknown];do_syscall_64;[unknown] [kvm] 6",
            "mod;[unknown] [unknown];do_syscall_64;do_work 3"
        ]
    );
    if !perf_usable(false) {
        return;
    }
    // perf report's shares, and its perf script text read to the same names.
    let k = format!("--kallsyms={}", kallsyms.display());
    let perf = perf_report_shares(d.path(), data.to_str().unwrap(), "cpu-clock", &["-g", "none", &k]);
    assert_every_share_agrees(&perf, &ours, "module-maps.data");
    let o = run_in(d.path(), "perf", &["script", "-i", data.to_str().unwrap(), &k]);
    assert!(o.status.success(), "perf script: {}", stderr(&o));
    assert!(stdout(&o).contains("[unknown] ([kvm])"), "{}", stdout(&o));
    std::fs::write(d.path().join("mm.txt"), &o.stdout).unwrap();
    assert_eq!(folded(&d.path().join("mm.txt")), from_data);
    assert_eq!(
        json_shares(&prfcmp_alone(d.path(), &d.path().join("mm.txt"), &ALL_ROWS)),
        ours
    );
}

#[test]
fn user_only_kernel_skid_is_the_kernels_unknown_from_text_as_from_perf_data_issue_30() {
    // perf script prints a user-only event's skid at a kernel address with the kernel's
    // DSO, or `[unknown]` when it has no kernel map; perf.data gives the kernel's
    // `[unknown]` (user_only_recordings_with_kernel_skid_need_no_kernel_symbols_issue_30).
    let d = tempdir();
    let text = "sleep 7 [000] 1.0: 1000 cycles:Pu: \n\tffffffff81e00ab0 [unknown] ([kernel.kallsyms])\n\n\
                sleep 7 [000] 1.1: 1000 cycles:Pu: \n\tffffffff81e00ab4 [unknown] ([unknown])\n\n\
                sleep 7 [000] 1.2: 1000 cycles:Pu: \n\t401000 main+0x1 (/bin/sleep)\n\n";
    let p = d.path().join("skid.txt");
    std::fs::write(&p, text).unwrap();
    let ours = json_shares(&prfcmp_alone(d.path(), &p, &ALL_ROWS));
    let data = json_shares(&prfcmp_alone(
        d.path(),
        &testdata("import/sleep-user-only.data"),
        &ALL_ROWS,
    ));
    assert!(data.contains_key("[unknown]") && !data.keys().any(|k| k.starts_with("[unknown] [k")));
    assert!((ours["[unknown]"] - 200.0 / 3.0).abs() < 1e-9, "{ours:?}");
    assert_eq!(ours.len(), 2, "{ours:?}");
}

#[test]
fn group_leader_samples_weigh_their_read_values_as_perf_report_does_issue_30() {
    // perf report weighs a sample carrying read values by the change of its event's
    // value since the previous sample of the same id, not by its period.
    let d = tempdir();
    let data = testdata("import/group-read.data");
    // The recording kernel's symbols, kept with the fixture: it reads alike on any kernel.
    let ksyms = testdata("import/group-read.kallsyms");
    let ksyms = ["--kallsyms", ksyms.to_str().unwrap()];
    let ours = lump_plt(prfcmp_shares(d.path(), data.to_str().unwrap(), &ksyms));
    // The recorded values' deltas (perf report 6.1 --no-group, read once from the fixture).
    let do_syscall_64 = 18_066_074.0 * 100.0 / ours_total_period(d.path(), &data, &ksyms);
    assert!((ours["do_syscall_64"] - do_syscall_64).abs() < 1e-6, "{ours:?}");
    if perf_usable(false) {
        let perf = lump_plt(leader_shares(d.path(), data.to_str().unwrap(), &ksyms));
        assert!(assert_every_share_agrees(&perf, &ours, "group-read.data") >= 10);
    }
    // Live, with call chains: the same agreement, the stacks read too.
    if !perf_usable(true) {
        return;
    }
    let _perf = perf_lock();
    let dd = ["--", "dd", "if=/dev/zero", "of=/dev/null", "bs=512", "count=200000"];
    let events = ["-e", "{cpu-clock,task-clock}:S", "-g", "-o", "g.data"];
    perf_record_any(d.path(), &[&events[..], &dd[..]].concat());
    let perf = lump_plt(leader_shares(d.path(), "g.data", &[]));
    let ours = lump_plt(prfcmp_shares(d.path(), "g.data", &[]));
    assert!(assert_every_share_agrees(&perf, &ours, "g.data") >= 5);
}

/// The sum of the periods prfcmp counts for `data` (its JSON `run1`, in seconds), in ns.
fn ours_total_period(dir: &Path, data: &Path, extra: &[&str]) -> f64 {
    let o = prfcmp_alone(dir, data, &[&crate::import::EVERY_ROW_JSON[..], extra].concat());
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let rows = v["rows"].as_array().unwrap();
    rows.iter().map(|r| r["run1"].as_f64().unwrap()).sum::<f64>() * 1e9
}

/// The event prfcmp's JSON report says it read.
fn json_event(o: &std::process::Output) -> String {
    let v: serde_json::Value = serde_json::from_str(&stdout(o)).expect("prfcmp --format json");
    v["run1"]["event"].as_str().unwrap().to_string()
}

#[test]
fn pipe_mode_tracepoints_are_named_from_the_tracing_data_issue_30() {
    // Streams that name their tracepoint only in the tracing data's formats: one made
    // here (sched:sched_switch, its EVENT_DESC and name updates taken out) and KDAB
    // perfparser's uprobe stream.
    let d = tempdir();
    let ksyms = testdata("import/tracepoint-pipe.kallsyms");
    let ksyms = ksyms.to_str().unwrap();
    for (file, event, extra) in [
        (
            "import/tracepoint-pipe.data",
            "sched:sched_switch",
            &["--kallsyms", ksyms][..],
        ),
        ("import/probe-stream.data", "probe_untitled1:main", &[][..]),
    ] {
        let data = testdata(file);
        let all_rows = [&ALL_ROWS[..], extra].concat();
        let o = prfcmp_alone(d.path(), &data, &all_rows);
        assert_eq!(json_event(&o), event, "{file}");
        // Asked for by name, from standard input too.
        let named = prfcmp_alone(d.path(), &data, &[&all_rows[..], &["--event", event]].concat());
        assert_eq!(json_shares(&named), json_shares(&o), "{file}");
        let o = Command::new(PRFCMP)
            .args(["-", data.to_str().unwrap()])
            .args(&all_rows)
            .args(["--event", event])
            .stdin(std::fs::File::open(&data).unwrap())
            .output()
            .unwrap();
        assert!(o.status.success(), "{file}: {}", stderr(&o));
        if perf_usable(false) {
            let perf = perf_report_shares(d.path(), data.to_str().unwrap(), event, extra);
            assert_every_share_agrees(&perf, &json_shares(&named), file);
        }
    }
}
