//! upsrun: golden call graphs from a hand-made fixture, then real stacks and their
//! comparison by upcmp.

use crate::util::{assert_golden, perf_usable, run_in, stderr, tempdir, testdata};
use std::collections::HashMap;
use std::fs;
use std::path::Path;
use upcmp::analyse::stacks::{read_stacks, write_analysis, AnalyseOptions};
use upcmp::model::stacks::StackOptions;
use upcmp::model::UserBy;
use upcmp::model::{CallGraph, StackProfile};
use upcmp::store::outdir::{RunKind, RunMarker};
use upcmp::symbols::KernelSymbols;

const UPSRUN: &str = env!("CARGO_BIN_EXE_upsrun");
const UPCMP: &str = env!("CARGO_BIN_EXE_upcmp");

#[test]
fn the_fixture_call_graph_is_golden() {
    let dir = testdata("upsrun/callgraph");
    let syms = KernelSymbols::from_kallsyms_file(&dir.join("kallsyms")).unwrap();
    let opts = StackOptions {
        max_stack: 127,
        user_by: UserBy::Comm,
        // The fixture's samples.gz (version 1) carries no periods: its prfout's 1 ms.
        default_period: 1_000_000,
        command_roots: true,
    };
    let p = read_stacks(&dir, &syms, opts).unwrap();
    let tmp = tempdir();
    let o = AnalyseOptions {
        test: "fixture".into(),
        run: "testdata/upsrun".into(),
        event: "cpu-clock".into(),
        period_sec: 0.001,
        stacks: opts,
    };
    assert!(write_analysis(tmp.path(), &p, &o).unwrap().is_empty());
    let folded = fs::read_to_string(tmp.path().join("stacks.folded")).unwrap();
    assert_golden(&folded, "upsrun/callgraph/expected.stacks.folded");
    assert_golden(
        &fs::read_to_string(tmp.path().join("prof.out")).unwrap(),
        "upsrun/callgraph/expected.prof.out",
    );
    let svg = fs::read_to_string(tmp.path().join("flame.svg")).unwrap();
    assert!(
        svg.contains("testdata/upsrun: test fixture"),
        "the title names the run and test"
    );

    // What the golden files say, checked by hand-worked numbers: 13 samples.
    // Rooted at their command: app, and [unknown] for the kernel thread no record named.
    let g = CallGraph::of_command_rooted(&p);
    let id = |n: &str| g.id(n).unwrap_or_else(|| panic!("{n}")) as usize;
    assert_eq!(
        g.commands_of(id("user:app") as u32).collect::<Vec<_>>(),
        [(id("app") as u32, 12)]
    );
    assert_eq!(
        g.commands_of(id("walk") as u32).collect::<Vec<_>>(),
        [(id("[unknown]") as u32, 1)]
    );
    // The flat profile's self times are those of the stacks without their roots.
    let plain = CallGraph::of(&p.without_roots());
    for (k, name) in g.names.iter().enumerate() {
        let j = plain.id(name).map_or(0, |j| plain.self_samples[j as usize]);
        assert_eq!(g.self_samples[k], j, "{name}");
    }
    assert_eq!(g.samples, 13);
    assert_eq!(
        g.self_samples.iter().sum::<u64>(),
        13,
        "self times add up to the samples"
    );
    // copy_page is reached by two callers: 4 samples via vfs_read, 2 via vfs_write.
    assert_eq!(g.total_samples[id("copy_page")], 6);
    let callers: HashMap<String, u64> = g
        .callers(id("copy_page") as u32)
        .map(|(c, a)| (g.names[c as usize].clone(), a.samples))
        .collect();
    assert_eq!(
        callers,
        HashMap::from([("vfs_read".into(), 4), ("vfs_write".into(), 2)])
    );
    // walk recurses three deep in 3 samples; each sample counts once.
    assert_eq!(g.total_samples[id("walk")], 3);
    assert_eq!(
        g.root_samples[id("walk")],
        1,
        "the kernel thread's stack starts in walk"
    );
    // Every function: self + children = total, and the callers' arcs plus the samples it
    // is the root of cover its total (no recursion into it from another function here).
    for f in ["do_syscall_64", "vfs_read", "copy_page", "user:app"] {
        let i = id(f);
        let from_callers: u64 = g.callers(i as u32).map(|(_, a)| a.samples).sum();
        assert_eq!(from_callers + g.root_samples[i], g.total_samples[i], "{f}");
        let to_callees: u64 = g.callees(i as u32).map(|(_, a)| a.samples).sum();
        assert_eq!(to_callees + g.self_samples[i], g.total_samples[i], "{f}");
    }
    // The folded file reads back to the same stacks, and inferno's format: root first.
    let back = StackProfile::from_folded(&folded, "stacks.folded").unwrap();
    assert_eq!(back.folded_lines(), p.folded_lines());
    assert!(folded.contains("app;user:app;entry_SYSCALL_64;do_syscall_64;__x64_sys_read;vfs_read;copy_page 4\n"));
}

/// Runs upsrun in `dir` with `list` as ./test_list.
fn upsrun(dir: &Path, list: &str, outdir: &str, extra: &[&str]) -> std::process::Output {
    fs::write(dir.join("test_list"), list).unwrap();
    let mut args = vec!["auto", outdir];
    args.extend_from_slice(extra);
    run_in(dir, UPSRUN, &args)
}

fn unixperf_built() -> bool {
    let p = Path::new(UPSRUN).with_file_name("unixperf");
    assert!(p.is_file(), "{} missing: build the workspace", p.display());
    true
}

#[test]
fn a_syscall_test_shows_the_entry_path_above_the_handler() {
    if !perf_usable(true) || !unixperf_built() {
        return;
    }
    let _perf = crate::util::perf_lock();
    let tmp = tempdir();
    let out = upsrun(tmp.path(), "getpid -loop 3000000 -repeat 1\n", "run", &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let run = tmp.path().join("run");
    assert_eq!(RunMarker::read(&run).unwrap().kind, RunKind::Upsrun);
    let test = run.join("getpid");
    let folded = fs::read_to_string(test.join("stacks.folded")).unwrap();
    let prof = fs::read_to_string(test.join("prof.out")).unwrap();
    assert!(fs::read_to_string(test.join("flame.svg"))
        .unwrap()
        .contains("test getpid"));

    // In the folded stacks, the syscall entry comes before (above) the handler.
    let handler = folded
        .lines()
        .find(|l| l.contains("__x64_sys_getpid") || l.contains("__do_sys_getpid"))
        .unwrap_or_else(|| panic!("no getpid handler in:\n{folded}"));
    let frames: Vec<&str> = handler.rsplit_once(' ').unwrap().0.split(';').collect();
    let pos = |f: &str| frames.iter().position(|x| x.starts_with(f));
    let entry = pos("entry_SYSCALL_64").expect("the entry path");
    let handler_at = pos("__x64_sys_getpid").or(pos("__do_sys_getpid")).unwrap();
    assert!(entry < handler_at, "{handler}");
    assert_eq!(
        (frames[0], frames[1]),
        ("unixperf", "user"),
        "the test's command, then user space where the syscall came from: {handler}"
    );

    // In prof.out, the handler's entry lists do_syscall_64 among its callers (above it).
    let entry_block = prof
        .split("-----------------------------------------------")
        .find(|b| {
            b.lines()
                .any(|l| l.starts_with('[') && l.contains(" __x64_sys_getpid ["))
        })
        .unwrap_or_else(|| panic!("no call graph entry for __x64_sys_getpid:\n{prof}"));
    let lines: Vec<&str> = entry_block.lines().filter(|l| !l.trim().is_empty()).collect();
    let primary = lines.iter().position(|l| l.starts_with('[')).unwrap();
    assert!(
        lines[..primary].iter().any(|l| l.contains("do_syscall_64 [")),
        "{entry_block}"
    );

    // The totals: the call graph's self times and the folded counts equal the samples.
    let p = StackProfile::from_folded(&folded, "stacks.folded").unwrap();
    let samples = upcmp::store::prfout::read(&test.join("prfout"))
        .unwrap()
        .cpus
        .iter()
        .map(|c| c.samples)
        .sum::<u64>();
    assert_eq!(p.samples, samples, "every sample is one stack");
    let g = CallGraph::of(&p);
    assert_eq!(g.self_samples.iter().sum::<u64>(), samples);
    let header = prof.lines().nth(1).unwrap();
    assert!(header.contains(&format!("; {samples} samples,")), "{header}");

    // samples.gz (version 3) holds every sample with its chain, each chain written once:
    // a loop of one syscall has few, and even a busy machine's other programs leave far
    // fewer chains than samples.
    let mut text = String::new();
    std::io::Read::read_to_string(
        &mut flate2::read::GzDecoder::new(fs::File::open(test.join("samples.gz")).unwrap()),
        &mut text,
    )
    .unwrap();
    assert_eq!(text.lines().next(), Some(upcmp_parsers::samples::HEADER));
    let count = |kind: &str| text.lines().filter(|l| l.starts_with(kind)).count() as u64;
    assert_eq!(count("s "), samples);
    assert!(count("k ") > 0 && count("k ") < samples / 2, "{} chains", count("k "));
    let mut stored = 0;
    upcmp::store::samples::for_each_record(&test.join("samples.gz"), |r| {
        if let upcmp_parsers::samples::Record::Sample(s) = r {
            assert!(!s.callchain.is_empty(), "{s:?}");
            stored += 1;
        }
    })
    .unwrap();
    assert_eq!(stored, samples);
}

fn fills_by_name(svg: &str) -> Vec<(String, String)> {
    let frames = &svg[svg.find("<svg id=\"frames\"").expect("frames")..];
    frames
        .split("<g><title>")
        .skip(1)
        .map(|b| {
            let name = b.split(" (").next().unwrap().to_string();
            let fill = b
                .split("fill=\"")
                .nth(1)
                .unwrap()
                .split('"')
                .next()
                .unwrap()
                .to_string();
            (name, fill)
        })
        .collect()
}

#[test]
fn differential_graphs_colour_only_real_changes() {
    if !perf_usable(true) || !unixperf_built() {
        return;
    }
    let _perf = crate::util::perf_lock();
    let tmp = tempdir();
    let spin = "work: ./upcmpspin -c 'i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done'";
    fs::copy("/bin/sh", tmp.path().join("upcmpspin")).unwrap();
    // The load reads /dev/zero in a program of its own name, so its stack is its own.
    fs::copy("/bin/dd", tmp.path().join("upcmpload")).unwrap();
    let load = format!("{spin} & ./upcmpload if=/dev/zero of=/dev/null bs=1M count=30000 2>/dev/null; wait\n");
    for (run, list) in [("base", format!("{spin}\n")), ("loaded", load)] {
        let out = upsrun(tmp.path(), &list, run, &["--user-by", "comm"]);
        assert!(out.status.success(), "{}", stderr(&out));
    }
    // A run against itself: nothing coloured.
    let out = run_in(tmp.path(), UPCMP, &["base", "base", "same", "-q"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let results = fs::read_to_string(tmp.path().join("same/results")).unwrap();
    assert!(
        results.contains("same/work.flamediff.svg") && results.contains("same/work.callers"),
        "{results}"
    );
    let svg = fs::read_to_string(tmp.path().join("same/work.flamediff.svg")).unwrap();
    let fills = fills_by_name(&svg);
    assert!(fills.len() > 3);
    assert!(
        fills.iter().all(|(_, f)| f == "rgb(250,250,250)"),
        "a run against itself has no coloured frame: {fills:?}"
    );
    let callers = fs::read_to_string(tmp.path().join("same/work.callers")).unwrap();
    assert!(callers.contains("No function's inclusive time changed"), "{callers}");

    // Against the loaded run: the load's stack is the one that grew the most.
    let out = run_in(tmp.path(), UPCMP, &["base", "loaded", "diff", "-q"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let svg = fs::read_to_string(tmp.path().join("diff/work.flamediff.svg")).unwrap();
    let fills = fills_by_name(&svg);
    let red = |f: &str| f.starts_with("rgb(255,") && f != "rgb(255,255,255)";
    let load_root = fills
        .iter()
        .find(|(n, _)| n == "user:upcmpload")
        .expect("the load's frame");
    assert!(red(&load_root.1), "the load grew: {load_root:?}");
    assert!(
        !fills.iter().any(|(n, f)| n.starts_with("user:upcmpspin") && red(f)),
        "the base load did not grow: {fills:?}"
    );
    // The load's own path is red down to where it spends its time.
    let read_zero = fills
        .iter()
        .find(|(n, _)| n == "read_zero")
        .expect("the load reads /dev/zero");
    assert!(red(&read_zero.1), "{read_zero:?}");
    // The table names the load as a real (starred) growth.
    let callers = fs::read_to_string(tmp.path().join("diff/work.callers")).unwrap();
    let at = callers
        .find("\nuser:upcmpload\n")
        .unwrap_or_else(|| panic!("{callers}"));
    let inclusive = callers[at..]
        .lines()
        .find(|l| l.trim_start().starts_with("inclusive"))
        .unwrap();
    assert!(inclusive.contains(" +") && inclusive.ends_with(" *"), "{inclusive}");
}

/// The root frames of folded stacks with their samples.
fn roots(folded: &str) -> HashMap<String, u64> {
    let mut roots = HashMap::new();
    for line in folded.lines() {
        let (stack, count) = line.rsplit_once(' ').unwrap();
        let root = stack.split(';').next().unwrap().to_string();
        *roots.entry(root).or_default() += count.parse::<u64>().unwrap();
    }
    roots
}

#[test]
fn stacks_are_rooted_per_command() {
    if !perf_usable(true) || !unixperf_built() {
        return;
    }
    let _perf = crate::util::perf_lock();
    let tmp = tempdir();
    fs::copy("/bin/sh", tmp.path().join("upcmpspin")).unwrap();
    fs::copy("/bin/dd", tmp.path().join("upcmpload")).unwrap();
    let list = "work: ./upcmpspin -c 'i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done' & \
                ./upcmpload if=/dev/zero of=/dev/null bs=1M count=20000 2>/dev/null; wait\n";
    let out = upsrun(tmp.path(), list, "new", &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let test = tmp.path().join("new/work");
    let folded = fs::read_to_string(test.join("stacks.folded")).unwrap();
    let roots = roots(&folded);
    for command in ["upcmpspin", "upcmpload"] {
        assert!(roots.get(command).is_some_and(|&n| n > 0), "{command} in {roots:?}");
    }
    // Each command's stacks are its own: the load's reads of /dev/zero are under it.
    assert!(folded
        .lines()
        .any(|l| l.starts_with("upcmpload;") && l.contains(";read_zero")));
    assert!(!folded
        .lines()
        .any(|l| l.starts_with("upcmpspin;") && l.contains(";read_zero")));
    // Every sample has one root, and the roots' samples are the test's samples.
    let samples: u64 = upcmp::store::prfout::read(&test.join("prfout"))
        .unwrap()
        .cpus
        .iter()
        .map(|c| c.samples)
        .sum();
    assert_eq!(roots.values().sum::<u64>(), samples, "{roots:?}");
    // prof.out names the commands only after <spontaneous>: they are not functions.
    let prof = fs::read_to_string(test.join("prof.out")).unwrap();
    assert!(prof.contains("<spontaneous> upcmpload\n"), "{prof}");
    assert!(
        !prof.lines().any(|l| l.ends_with("  upcmpload")),
        "no flat profile line"
    );

    // Against a run written before stacks had their command as root: compared without
    // the roots, with one warning naming both runs.
    crate::util::copy_tree(&testdata("upsrun/format2-run"), &tmp.path().join("old"));
    let out = run_in(tmp.path(), UPCMP, &["old", "new", "cmp", "-q"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let results = fs::read_to_string(tmp.path().join("cmp/results")).unwrap();
    let note = "were written before upsrun rooted each stack at its command";
    assert_eq!(results.matches(note).count(), 1, "{results}");
    let line = results.lines().find(|l| l.contains(note)).unwrap();
    assert!(
        line.contains("stacks of old ") && line.contains(" those of new "),
        "{line}"
    );
    let svg = fs::read_to_string(tmp.path().join("cmp/work.flamediff.svg")).unwrap();
    let names: Vec<String> = fills_by_name(&svg).into_iter().map(|(n, _)| n).collect();
    assert!(names.iter().any(|n| n == "user"), "{names:?}");
    assert!(
        !names
            .iter()
            .any(|n| ["upcmpload", "upcmpspin", "swapper", "sh"].contains(&n.as_str())),
        "no command roots in the comparison: {names:?}"
    );
}

#[test]
fn an_older_run_compares_with_a_rooted_one_without_the_roots() {
    // The stored run, written before format 3, and the same stacks as format 3 writes
    // them (each under a command): against each other, nothing changed.
    let tmp = tempdir();
    let (old, new) = (tmp.path().join("old"), tmp.path().join("new"));
    crate::util::copy_tree(&testdata("upsrun/format2-run"), &old);
    crate::util::copy_tree(&testdata("upsrun/format2-run"), &new);
    let marker = fs::read_to_string(new.join("upcmp-run")).unwrap();
    fs::write(new.join("upcmp-run"), marker.replace("format: 2", "format: 3")).unwrap();
    let folded = fs::read_to_string(old.join("work/stacks.folded")).unwrap();
    let rooted: String = folded
        .lines()
        .enumerate()
        .map(|(k, l)| format!("{};{l}\n", ["upcmpload", "sh", "swapper"][k % 3]))
        .collect();
    fs::write(new.join("work/stacks.folded"), rooted).unwrap();
    let out = run_in(tmp.path(), UPCMP, &["old", "new", "cmp", "-q"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let results = fs::read_to_string(tmp.path().join("cmp/results")).unwrap();
    assert!(
        results.contains("the stacks of old were written before upsrun rooted each stack at its command"),
        "{results}"
    );
    let svg = fs::read_to_string(tmp.path().join("cmp/work.flamediff.svg")).unwrap();
    let fills = fills_by_name(&svg);
    assert!(fills.len() > 3);
    assert!(
        fills.iter().all(|(n, f)| f == "rgb(250,250,250)" && n != "upcmpload"),
        "the same stacks: no coloured frame, no root: {fills:?}"
    );
    let callers = fs::read_to_string(tmp.path().join("cmp/work.callers")).unwrap();
    assert!(callers.contains("No function's inclusive time changed"), "{callers}");

    // Both sides rooted: the roots are compared, without a note.
    fs::write(old.join("upcmp-run"), marker.replace("format: 2", "format: 3")).unwrap();
    let out = run_in(tmp.path(), UPCMP, &["old", "new", "cmp2", "-q"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let results = fs::read_to_string(tmp.path().join("cmp2/results")).unwrap();
    assert!(!results.contains("rooted each stack"), "{results}");
}
