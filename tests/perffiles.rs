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
fn leader_shares(dir: &Path, data: &str) -> HashMap<String, f64> {
    let args = [
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
    let dd = ["--", "dd", "if=/dev/zero", "of=/dev/null", "bs=512", "count=200000"];
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
    // perf report weighs a leader's sample by the change of its read value since the
    // last one, the import by the sample's period (docs/import.md): shares differ by up to
    // a point. What perf report shows most of is here too.
    let perf = lump_plt(leader_shares(d.path(), "group.data"));
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
