//! What people see (issue 27): the labels of flame graph frames as a browser renders them,
//! standalone and inside results.html, and the page's digest against the text report's.

use crate::html::{assert_no_errors, browser, headless_args, open, strings, upcmp, upsrun_fixture};
use crate::util::{tempdir, testdata};
use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};
use upcmp::model::stacks::StackProfile;

/// Kernel-like names of up to 40 characters: most boxes are too narrow for them.
const LONG: [&str; 6] = [
    "entry_SYSCALL_64_after_hwframe",
    "do_syscall_64",
    "syscall_trace_enter_with_audit_and_seccomp",
    "__seccomp_filter",
    "bpf_prog_run_pin_on_cpu_and_account_time",
    "__x64_sys_getpid",
];

/// Folded stacks of a getpid loop under a seccomp filter: `filter` samples in the filter.
fn getpid_folded(filter: u64) -> String {
    let [entry, sys, trace, seccomp, bpf, getpid] = LONG;
    format!(
        "bench;{entry};{sys};{trace};{seccomp};{bpf} {filter}\n\
         bench;{entry};{sys};{trace};{seccomp} {}\n\
         bench;{entry};{sys};{getpid} 3000\n\
         bench;{entry};{sys} 900\n\
         bench;user_loop 2500\n\
         bench;{entry};{sys};{trace} 40\n\
         bench;{entry};{sys};ktime_get_coarse_real_ts64_and_update 300\n\
         bench;{entry};{sys};{trace};{seccomp};{bpf};bpf_prog_4a5b_seccomp_filter_for_getpid {}\n",
        filter / 10,
        filter / 10
    )
}

/// The frame name a title gives: the title before its statistics, `(N samples, x%)` in a
/// plain graph, `(inclusive ...)` in a differential one.
fn name_of(title: &str) -> &str {
    if let Some(at) = title.rfind(" (inclusive ") {
        return &title[..at];
    }
    match title.rfind(" (") {
        Some(at) if title[at..].contains(" samples, ") => &title[..at],
        _ => panic!("a title without statistics: {title:?}"),
    }
}

/// Every frame's label is its name, a prefix of it ending in `..`, or empty (a box too
/// narrow); some are whole names and, with `cut`, some are cut.
fn assert_labels_are_names(frames: &[(String, String)], cut: bool, what: &str) {
    assert!(frames.len() > 3, "{what}: {frames:?}");
    let (mut whole, mut shortened) = (0, 0);
    for (title, label) in frames {
        let name = name_of(title);
        let label = label.trim_end();
        if label == name {
            whole += 1;
        } else if let Some(prefix) = label.strip_suffix("..") {
            assert!(
                !prefix.is_empty() && name.starts_with(prefix),
                "{what}: {name:?} labelled {label:?}"
            );
            shortened += 1;
        } else {
            assert!(label.is_empty(), "{what}: {name:?} labelled {label:?}");
        }
    }
    assert!(whole >= 3, "{what}: {whole} whole names in {frames:?}");
    if cut {
        assert!(shortened >= 1, "{what}: no name was shortened in {frames:?}");
    }
}

/// The frames of a standalone SVG after its script ran in the browser: (title, label).
fn rendered_frames(browser: &str, svg: &Path) -> Vec<(String, String)> {
    let profile = tempdir();
    let url = format!("file://{}", svg.canonicalize().unwrap().display());
    let out = Command::new(browser)
        .args(headless_args(profile.path()))
        .args([
            "--virtual-time-budget=10000",
            "--window-size=1400,900",
            "--dump-dom",
            &url,
        ])
        .stderr(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("running {browser}: {e}"));
    let dom = String::from_utf8_lossy(&out.stdout).into_owned();
    let at = dom
        .find("id=\"frames\"")
        .unwrap_or_else(|| panic!("no frames in the DOM of {url}:\n{dom}"));
    let unescape = |s: &str| {
        s.replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&quot;", "\"")
            .replace("&amp;", "&")
    };
    let inner = |block: &str, tag: &str| -> String {
        let Some(open) = block.find(&format!("<{tag}")) else {
            return String::new();
        };
        let from = open + block[open..].find('>').unwrap() + 1;
        if block[open..from].ends_with("/>") {
            return String::new();
        }
        unescape(&block[from..from + block[from..].find(&format!("</{tag}>")).unwrap()])
    };
    dom[at..]
        .split("<g>")
        .skip(1)
        .map(|g| {
            let g = &g[..g.find("</g>").unwrap_or(g.len())];
            (inner(g, "title"), inner(g, "text"))
        })
        .filter(|(t, _)| !t.is_empty())
        .collect()
}

fn write(dir: &Path, name: &str, text: &str) {
    fs::write(dir.join(name), text).unwrap();
}

#[test]
fn flame_graph_labels_are_frame_names_issue_27() {
    let tmp = tempdir();
    // A plain graph, as upsrun draws each test's.
    let p = StackProfile::from_folded(&getpid_folded(2000), "b.folded").unwrap();
    let mut svg = Vec::new();
    upcmp::report::flame::render(&p, "plain", None, true, &mut svg).unwrap();
    fs::write(tmp.path().join("flame.svg"), svg).unwrap();
    // A differential pair with long names whose filter grew (`upcmp --perf`).
    write(tmp.path(), "a.folded", &getpid_folded(400));
    write(tmp.path(), "b.folded", &getpid_folded(2000));
    let page = upcmp(tmp.path(), &["--perf", "a.folded", "b.folded", "-q", "perf"]);
    // The upsrun pair of tests/html.rs: one path of each test grew tenfold.
    upsrun_fixture(tmp.path());
    let upsrun_page = upcmp(tmp.path(), &["outdir1", "outdir2", "-q", "ups"]);
    let Some(b) = browser() else { return };

    assert_labels_are_names(&rendered_frames(b, &tmp.path().join("flame.svg")), true, "plain");
    let diff = rendered_frames(b, &tmp.path().join("perf/a.folded_vs_b.folded.flamediff.svg"));
    assert_labels_are_names(&diff, true, "--perf differential");
    // The frame that grew reads as its name: its box is wide.
    let seccomp = diff.iter().find(|(t, _)| name_of(t) == "__seccomp_filter").unwrap();
    assert_eq!(seccomp.1.trim_end(), "__seccomp_filter", "{seccomp:?}");
    assert!(seccomp.0.contains("beyond the sampling error"), "{seccomp:?}");
    for t in ["forkwait", "second"] {
        let frames = rendered_frames(b, &tmp.path().join(format!("ups/{t}.flamediff.svg")));
        assert_labels_are_names(&frames, false, t);
    }

    // The same graphs inside results.html.
    for (page, graphs) in [(&page, 1), (&upsrun_page, 2)] {
        let r = open(b, page);
        assert_no_errors(&r);
        let flames = r.selftest["flames"].as_array().unwrap();
        assert_eq!(flames.len(), graphs);
        for f in flames {
            let frames: Vec<(String, String)> = f["labels"]
                .as_array()
                .unwrap_or_else(|| panic!("no labels in {f}"))
                .iter()
                .map(|pair| {
                    let s = strings(pair);
                    (s[0].clone(), s[1].clone())
                })
                .collect();
            assert_labels_are_names(&frames, graphs == 1, &format!("{} in results.html", page.display()));
        }
    }
}

#[test]
fn a_differential_subtitle_fits_its_graph_issue_27() {
    let tmp = tempdir();
    let (a, b) = (testdata("import/a.folded"), testdata("import/b.folded"));
    upcmp(
        tmp.path(),
        &["--perf", a.to_str().unwrap(), b.to_str().unwrap(), "-q", "r"],
    );
    let svg = fs::read_to_string(tmp.path().join("r/a.folded_vs_b.folded.flamediff.svg")).unwrap();
    let at = svg.find("<text id=\"subtitle\"").expect("a subtitle");
    let element = &svg[at..at + svg[at..].find("</text>").unwrap()];
    let tip = &element[element.find("<title>").expect("the subtitle's tooltip") + 7..element.find("</title>").unwrap()];
    assert!(tip.contains("false-discovery rate"), "{tip}");
    let line = &element[element.find("</title>").unwrap() + 8..];
    // inferno's font is 12 px Verdana, at most 7 px a character; the graph is 1200 px wide.
    assert!(line.chars().count() * 7 < 1200 - 20, "{line}");
}
