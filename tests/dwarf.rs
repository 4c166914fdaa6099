//! `--call-graph dwarf` recordings (issue 30): the user stack dumps unwound with the
//! call frame information of the mapped files give the stacks perf gives, for a program
//! built without frame pointers; without the file, the sampled address stays the leaf.

use crate::import::perf_record_any;
use crate::util::{perf_lock, perf_usable, run_in, stderr, stdout, tempdir};
use std::collections::BTreeMap;
use std::path::Path;

/// Two callers of one leaf and a second leaf, none inlined, the calls' arguments varying
/// so that none is hoisted out of the loop.
const PROGRAM: &str = r#"
#include <stdlib.h>
static volatile unsigned long sink;
__attribute__((noinline)) unsigned long leaf_a(unsigned long n) {
    unsigned long s = 0;
    for (unsigned long i = 0; i < n; i++) s += i * i ^ (s >> 3);
    return s;
}
__attribute__((noinline)) unsigned long leaf_b(unsigned long n) {
    unsigned long s = 1;
    for (unsigned long i = 0; i < n; i++) s = s * 31 + i;
    return s;
}
__attribute__((noinline)) unsigned long mid_one(unsigned long n) { return leaf_a(n) + leaf_b(n / 2); }
__attribute__((noinline)) unsigned long mid_two(unsigned long n) { return leaf_a(n / 3) * 3 + 1; }
int main(int argc, char **argv) {
    unsigned long rounds = argc > 1 ? strtoul(argv[1], 0, 10) : 100;
    for (unsigned long r = 0; r < rounds; r++) {
        sink += mid_one(1000000 + (r & 1));
        sink += mid_two(3000000 + (r & 1));
    }
    return 0;
}
"#;

/// The program's own functions: the frames compared.
const OWN: [&str; 5] = ["leaf_a", "leaf_b", "mid_one", "mid_two", "main"];

/// Builds the program as `dw` (optimised, with debug information, no frame pointers: only
/// call frame information unwinds it) and records it with user stack dumps.
fn record_program(dir: &Path) {
    std::fs::write(dir.join("dw.c"), PROGRAM).unwrap();
    let o = run_in(
        dir,
        "gcc",
        &[
            "-O2",
            "-g",
            "-fomit-frame-pointer",
            "-Wl,--build-id=sha1",
            "-o",
            "dw",
            "dw.c",
        ],
    );
    assert!(o.status.success(), "gcc: {}", stderr(&o));
    let args = [
        "-e",
        "cpu-clock:u",
        "-F",
        "999",
        "--call-graph",
        "dwarf",
        "-o",
        "dw.data",
        "--",
        "./dw",
        "200",
    ];
    perf_record_any(dir, &args);
}

/// Each stack of the program's functions, root first and joined by `;`, and its share of
/// the stacks counted, from `(frames leaf first, count)`.
fn own_shares<'a>(stacks: impl Iterator<Item = (Vec<&'a str>, u64)>) -> BTreeMap<String, f64> {
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    let mut total = 0;
    for (frames, n) in stacks {
        total += n;
        let own: Vec<&str> = frames.into_iter().rev().filter(|f| OWN.contains(f)).collect();
        *counts.entry(own.join(";")).or_default() += n;
    }
    counts
        .into_iter()
        .map(|(k, n)| (k, 100.0 * n as f64 / total.max(1) as f64))
        .collect()
}

/// The stacks perf script gives (perf unwinds the dumps with libdw or libunwind).
fn perf_script_shares(dir: &Path) -> BTreeMap<String, f64> {
    let o = run_in(dir, "perf", &["script", "-i", "dw.data", "-F", "ip,sym", "--no-inline"]);
    assert!(o.status.success(), "perf script: {}", stderr(&o));
    let text = stdout(&o);
    let samples = text.split("\n\n").filter(|s| !s.trim().is_empty()).map(|s| {
        // `\t    5601c0a011a9 leaf_a`: the symbol after the address.
        let frames: Vec<&str> = s
            .lines()
            .filter_map(|l| l.split_whitespace().nth(1))
            .map(|f| f.split('+').next().unwrap_or(f))
            .collect();
        (frames, 1)
    });
    own_shares(samples)
}

/// The import's stacks, as [`own_shares`] counts them (a user frame's name is its
/// function's, before any ` [module]`).
fn our_shares(lines: &[String]) -> BTreeMap<String, f64> {
    own_shares(lines.iter().map(|l| {
        let (stack, n) = l.rsplit_once(' ').unwrap();
        let mut frames: Vec<&str> = stack
            .split(';')
            .skip(1)
            .map(|f| f.split(" [").next().unwrap_or(f))
            .collect();
        frames.reverse();
        (frames, n.parse::<u64>().unwrap())
    }))
}

fn import_stacks(path: &Path) -> upcmp::import::Imported {
    let opts = upcmp::import::ImportOptions::new(None, None, None, None).with_stacks(true);
    upcmp::import::import(path, &opts).unwrap()
}

#[test]
fn dwarf_stacks_are_unwound_as_perf_unwinds_them_issue_30() {
    if !perf_usable(true) {
        return;
    }
    let _perf = perf_lock();
    let d = tempdir();
    record_program(d.path());
    let imported = import_stacks(&d.path().join("dw.data"));
    let lines = imported.stacks.expect("call chains").folded_lines();
    let ours = our_shares(&lines);
    let perfs = perf_script_shares(d.path());
    eprintln!("ours {ours:?}\nperf script {perfs:?}");
    // Without unwinding, a leaf has no caller: these stacks are the unwinder's.
    let through_callers: f64 = ours
        .iter()
        .filter(|(k, _)| k.starts_with("main;mid_"))
        .map(|(_, v)| v)
        .sum();
    assert!(through_callers > 80.0, "{ours:?}\n{lines:?}");
    for key in ours.keys().chain(perfs.keys()) {
        let (a, b) = (
            ours.get(key).copied().unwrap_or(0.0),
            perfs.get(key).copied().unwrap_or(0.0),
        );
        assert!(
            (a - b).abs() <= 0.5,
            "{key}: ours {a:.2}%, perf script {b:.2}%\nours {ours:?}\nperf {perfs:?}"
        );
    }
    assert!(
        !imported
            .profile
            .warnings
            .iter()
            .any(|w| w.contains("--call-graph dwarf")),
        "{:?}",
        imported.profile.warnings
    );
}

#[test]
fn dwarf_stacks_without_the_file_end_at_the_sampled_address_issue_30() {
    if !perf_usable(true) {
        return;
    }
    let _perf = perf_lock();
    let d = tempdir();
    record_program(d.path());
    // The recorded file gone (perf record -N keeps no copy): nothing to unwind with.
    std::fs::rename(d.path().join("dw"), d.path().join("dw.moved")).unwrap();
    let imported = import_stacks(&d.path().join("dw.data"));
    let lines = imported.stacks.expect("call chains").folded_lines();
    let count = |l: &String| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap();
    let total: u64 = lines.iter().map(count).sum();
    // The program's samples: the command, then its leaf alone.
    let leaf_only: u64 = lines
        .iter()
        .filter(|l| l.starts_with("dw;") && l.matches(';').count() == 1)
        .map(count)
        .sum();
    assert!(leaf_only * 10 > total * 9, "{leaf_only} of {total}: {lines:?}");
    let note = imported
        .profile
        .warnings
        .iter()
        .find(|w| w.contains("--call-graph dwarf"));
    let note = note.unwrap_or_else(|| panic!("no note: {:?}", imported.profile.warnings));
    assert!(note.contains("dw") && note.contains("sampled address"), "{note}");
}
