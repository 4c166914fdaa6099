//! What people see (issue 27): the labels of flame graph frames as a browser renders them,
//! standalone and inside results.html, and the page's digest against the text report's.

use crate::html::{assert_no_errors, browser, headless_args, open, repeated_fixture, strings, upcmp, upsrun_fixture};
use crate::util::{assert_golden, copy_tree, run_in, stderr, stdout, tempdir, testdata};
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

/// The DOM of a standalone SVG after its script ran in the browser, and where its frames
/// start.
fn rendered_dom(browser: &str, svg: &Path) -> (String, usize) {
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
    (dom, at)
}

/// The frames of a standalone SVG after its script ran in the browser: (title, label).
fn rendered_frames(browser: &str, svg: &Path) -> Vec<(String, String)> {
    let (dom, at) = rendered_dom(browser, svg);
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

/// The text report's digest: (test, its parts) per line.
fn text_digest(report: &str, tests: &[String]) -> Vec<(String, Vec<String>)> {
    let at = report.find("\nDigest\n").expect("a digest in the text report") + 8;
    report[at..]
        .lines()
        .take_while(|l| !l.is_empty())
        .map(|l| {
            let l = l.trim_start();
            let name = tests
                .iter()
                .filter(|t| l.starts_with(t.as_str()))
                .max_by_key(|t| t.len())
                .unwrap_or_else(|| panic!("no test for {l:?}"));
            let parts = l[name.len()..].split("  ").map(str::trim).filter(|p| !p.is_empty());
            (name.clone(), parts.map(str::to_string).collect())
        })
        .collect()
}

/// The rows of the text report's CPU Time Analysis of `test` whose verdict is `word`.
fn text_rows_with(report: &str, test: &str, word: &str) -> usize {
    let head = format!(" {test} ");
    let at = report
        .lines()
        .position(|l| l.starts_with("****") && l.contains(&head))
        .unwrap_or_else(|| panic!("no section {test}"));
    report
        .lines()
        .skip(at + 1)
        .take_while(|l| !l.starts_with("****"))
        .skip_while(|l| !l.starts_with("CPU Time Analysis"))
        .filter(|l| l.trim_end().ends_with(word))
        .count()
}

/// The text of each cell of the page's digest, as the browser shows it (the page opened
/// as a reader opens it, without its self-test: a large page's self-test is slow).
fn digest_rows(browser: &str, page: &Path) -> Vec<Vec<String>> {
    let profile = tempdir();
    let url = format!("file://{}", page.canonicalize().unwrap().display());
    let out = Command::new(browser)
        .args(headless_args(profile.path()))
        .args(["--virtual-time-budget=5000", "--dump-dom", &url])
        .stderr(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("running {browser}: {e}"));
    let dom = String::from_utf8_lossy(&out.stdout).into_owned();
    let at = dom
        .find("<table class=\"digest\">")
        .unwrap_or_else(|| panic!("no digest in {dom}"));
    let table = &dom[at..at + dom[at..].find("</table>").unwrap()];
    let body = &table[table.find("<tbody>").unwrap()..];
    // The text of some HTML: its tags dropped, its entities read.
    let text = |html: &str| -> String {
        let mut out = String::new();
        let mut in_tag = false;
        for c in html.chars() {
            match c {
                '<' => in_tag = true,
                '>' => in_tag = false,
                c if !in_tag => out.push(c),
                _ => {}
            }
        }
        out.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
    };
    body.split("<tr>")
        .skip(1)
        .map(|tr| {
            tr.split("<td")
                .skip(1)
                .map(|td| text(&format!("<td{td}")).trim().to_string())
                .collect()
        })
        .collect()
}

/// The page's digest gives each test the change and verdict of the text digest, and
/// counts significant rows apart from sampling-only ones.
fn assert_digests_agree(dir: &Path, results: &str, want_tests: usize) {
    let page = dir.join(results).join("results.html");
    let report = fs::read_to_string(dir.join(results).join("results")).unwrap();
    let Some(b) = browser() else { return };
    let rows = digest_rows(b, &page);
    assert_eq!(rows.len(), want_tests, "{rows:?}");
    let names: Vec<String> = rows.iter().map(|r| r[0].clone()).collect();
    let text = text_digest(&report, &names);
    assert_eq!(text.len(), rows.len(), "{text:?}");
    for (row, (name, parts)) in rows.iter().zip(&text) {
        assert_eq!(&row[0], name);
        // -38.6% ops/s (significant): the page's change cell and its verdict.
        let bench = parts.iter().find(|p| p.contains(" ops/s (") || p.contains(" time ("));
        match bench {
            Some(p) => {
                let (change, verdict) = p.split_once(" (").unwrap();
                assert_eq!(row[1], change, "{name}: {row:?} against {p}");
                assert!(
                    row[3].starts_with(verdict.trim_end_matches(')')),
                    "{name}: {row:?} against {p}"
                );
                if verdict == "n/a)" {
                    assert!(row[3].contains("one run a side"), "said why: {row:?}");
                }
            }
            None => assert!(!row[1].contains('%'), "{name}: {row:?} against {parts:?}"),
        }
        let cpu = parts.iter().find_map(|p| p.strip_prefix("CPU ")).unwrap();
        match cpu {
            "-" => assert!(row[4].starts_with("no change"), "{name}: {row:?}"),
            // +173.2% (noise): the page's CPU change cell and its verdict column.
            c => {
                let (change, verdict) = c.split_once(" (").unwrap_or((c, ""));
                assert_eq!(row[4], change, "{name}: {row:?}");
                assert!(
                    row[6].starts_with(verdict.trim_end_matches(')')),
                    "{name}: {row:?} against {c}"
                );
            }
        }
        assert!(!row.iter().any(|c| c.contains("-×")), "{row:?}");
        let (significant, sampling): (usize, usize) = (row[7].parse().unwrap(), row[8].parse().unwrap());
        assert_eq!(significant, text_rows_with(&report, name, "  significant"), "{name}");
        assert_eq!(sampling, text_rows_with(&report, name, "  sampling only"), "{name}");
    }
}

#[test]
fn the_page_digest_agrees_with_the_text_digest_issue_27() {
    // The demo: nine tests, one run a side (nothing to test the benchmarks against).
    let tmp = tempdir();
    for run in ["run1", "run2"] {
        copy_tree(&testdata(&format!("demo/{run}")), &tmp.path().join(run));
    }
    upcmp(tmp.path(), &["run1", "run2", "-q", "1vs2"]);
    assert_digests_agree(tmp.path(), "1vs2", 9);
    // Three repetitions a side: the benchmark and the functions are tested.
    let tmp = tempdir();
    repeated_fixture(tmp.path());
    upcmp(tmp.path(), &["outdir1", "outdir2", "-q", "r"]);
    assert_digests_agree(tmp.path(), "r", 1);
}

/// The CPU Time Analysis rows of a mail: (name, the rest of its row).
fn mail_rows(mail: &str) -> Vec<(String, String)> {
    let mut rows = Vec::new();
    let mut lines = mail.lines().skip_while(|l| !l.starts_with("CPU Time Analysis")).skip(3);
    while let Some(l) = lines.next() {
        if l.is_empty() || l.starts_with("95% test") || l.starts_with('(') {
            break;
        }
        let (name, rest) = match !l.contains("  ") {
            // A name too long for its row, alone on its line.
            true => (l.to_string(), lines.next().unwrap()[40..].to_string()),
            false => (l[..40].trim_end().to_string(), l[40..].to_string()),
        };
        rows.push((name, rest));
    }
    rows
}

#[test]
fn mail_keeps_names_of_40_characters_on_their_row_issue_27() {
    let tmp = tempdir();
    write(tmp.path(), "a.folded", &getpid_folded(400));
    write(tmp.path(), "b.folded", &getpid_folded(2000));
    let out = run_in(
        tmp.path(),
        env!("CARGO_BIN_EXE_upcmp"),
        &["--perf", "a.folded", "b.folded", "r", "--format", "mail"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let mail = stdout(&out);
    assert!(mail.lines().all(|l| l.chars().count() <= 80), "{mail}");
    // The digest first.
    assert!(
        mail.starts_with("Digest\n  a.folded vs b.folded: CPU +26.6% (n/a); top:"),
        "{mail}"
    );
    let rows = mail_rows(&mail);
    assert_eq!(rows.len(), 8, "{rows:?}");
    for (name, rest) in &rows {
        let own_line = mail.lines().any(|l| l == name);
        assert_eq!(own_line, name.chars().count() > 40, "{name}:\n{mail}");
        // Every number under its unit: the cells end where the header's columns end.
        let head = mail.lines().find(|l| l.starts_with("CPU Time Analysis")).unwrap();
        let units = mail.lines().find(|l| l.starts_with("cutoff=")).unwrap();
        let ends = |l: &str| -> Vec<usize> {
            l.char_indices()
                .filter(|&(i, c)| c != ' ' && l[i + c.len_utf8()..].starts_with(' ') || i + c.len_utf8() == l.len())
                .map(|(i, _)| i)
                .collect()
        };
        let row = format!("{:<40}{rest}", "");
        let (h, u, r) = (ends(head), ends(units), ends(&row));
        assert_eq!(u[1..4], h[3..6], "units under the headers:\n{head}\n{units}");
        assert_eq!(r[..4], h[3..7], "{name}: cells under the headers:\n{head}\n{row}");
    }
    assert_golden(&mail, "mail/long_names.mail");
}

#[test]
fn unknown_rows_say_what_they_may_be_issue_27() {
    let tmp = tempdir();
    let folded = |jit: u64| {
        format!("java;[unknown] [libjvm.so] {jit}\njava;do_syscall_64_[k];[unknown]_[k] 400\njava;main 2000\n")
    };
    write(tmp.path(), "a.folded", &folded(300));
    write(tmp.path(), "b.folded", &folded(900));
    let page = upcmp(tmp.path(), &["--perf", "a.folded", "b.folded", "-q", "r"]);
    let report = fs::read_to_string(tmp.path().join("r/results")).unwrap();
    for (name, hint) in [
        (
            "[unknown] [libjvm.so]",
            "addresses in libjvm.so that its symbols do not cover",
        ),
        ("[unknown]", "JIT or BPF code without symbols"),
    ] {
        let note = report
            .lines()
            .find(|l| l.starts_with(&format!("{name}: ")))
            .unwrap_or_else(|| panic!("no note for {name}:\n{report}"));
        assert!(note.contains(hint), "{note}");
    }
    let Some(b) = browser() else { return };
    let r = open(b, &page);
    assert_no_errors(&r);
    let titles = strings(&r.selftest["tables"][0]["name_titles"]);
    assert!(
        titles
            .iter()
            .any(|t| t.starts_with("[unknown] [libjvm.so]\n") && t.contains("in libjvm.so")),
        "{titles:?}"
    );
    assert!(titles.iter().any(|t| t == "main"), "{titles:?}");
    let unknown = titles
        .iter()
        .find(|t| t.starts_with("[unknown]\n"))
        .expect("the kernel's [unknown] row");
    assert!(unknown.contains("bpf_jit_kallsyms"), "{unknown}");
}

#[test]
fn the_function_table_keeps_its_name_and_verdict_in_view_issue_27() {
    // Three repetitions a side (two sd% columns) in headless chromium's 800-pixel window:
    // the table is wider than its box.
    let tmp = tempdir();
    repeated_fixture(tmp.path());
    let page = upcmp(tmp.path(), &["outdir1", "outdir2", "-q", "r"]);
    let Some(b) = browser() else { return };
    let r = open(b, &page);
    assert_no_errors(&r);
    let t = &r.selftest["tables"][0];
    assert_eq!(t["overflows"], true, "{}", t["columns"]);
    assert_eq!(t["verdict_in_view"], true, "scrolled to the left");
    assert_eq!(t["name_in_view"], true, "scrolled to the right");
}

/// The label a frame named `name` reads as, if some frame of `frames` is so named.
fn label_of<'f>(frames: &'f [(String, String)], name: &str) -> Option<&'f str> {
    frames
        .iter()
        .find(|(t, _)| name_of(t) == name)
        .map(|(_, l)| l.trim_end())
}

/// The (title, label) pairs of one flame graph of the page's self-test report.
fn page_frames(flame: &serde_json::Value) -> Vec<(String, String)> {
    flame["labels"]
        .as_array()
        .unwrap_or_else(|| panic!("no labels in {flame}"))
        .iter()
        .map(|pair| {
            let s = strings(pair);
            (s[0].clone(), s[1].clone())
        })
        .collect()
}

#[test]
fn frames_only_in_run_1_are_drawn_in_run_1s_shape_issue_27() {
    let tmp = tempdir();
    // Run 2 no longer calls the audit path at all: its frames are in run 1 only.
    let gone = "audit_filter_rules";
    let run1 = format!("{}bench;{};do_syscall_64;{gone} 4000\n", getpid_folded(400), LONG[0]);
    write(tmp.path(), "a.folded", &run1);
    write(tmp.path(), "b.folded", &getpid_folded(400));
    let page = upcmp(tmp.path(), &["--perf", "a.folded", "b.folded", "-q", "perf"]);
    let stem = "perf/a.folded_vs_b.folded";
    assert!(tmp.path().join(format!("{stem}.flamediff-run1.svg")).is_file());
    let index = fs::read_to_string(tmp.path().join("perf/results")).unwrap();
    assert!(index.contains("a.folded_vs_b.folded.flamediff-run1.svg"), "{index}");
    // The upsrun pair: run 2's forkwait lost its write path.
    upsrun_fixture(tmp.path());
    let second = tmp.path().join("outdir2/forkwait/stacks.folded");
    let kept: String = fs::read_to_string(&second)
        .unwrap()
        .lines()
        .filter(|l| !l.contains("__x64_sys_write"))
        .map(|l| format!("{l}\n"))
        .collect();
    fs::write(&second, kept).unwrap();
    let upsrun_page = upcmp(tmp.path(), &["outdir1", "outdir2", "-q", "ups"]);
    let Some(b) = browser() else { return };

    // Standalone: the name is read in run 1's graph, and run 2's has no such frame.
    let run1 = rendered_frames(b, &tmp.path().join(format!("{stem}.flamediff-run1.svg")));
    let run2 = rendered_frames(b, &tmp.path().join(format!("{stem}.flamediff.svg")));
    assert_labels_are_names(&run1, true, "run 1's shape");
    assert_eq!(label_of(&run1, gone), Some(gone), "{run1:?}");
    assert_eq!(label_of(&run2, gone), None, "{run2:?}");
    let title = &run1.iter().find(|(t, _)| name_of(t) == gone).unwrap().0;
    assert!(title.contains("→ 0.00%"), "{title}");
    for t in ["forkwait", "second"] {
        let frames = rendered_frames(b, &tmp.path().join(format!("ups/{t}.flamediff-run1.svg")));
        assert_labels_are_names(&frames, false, t);
    }

    // On the page: run 2's shape first, then the button draws run 1's.
    for (page, name, graphs) in [(&page, gone, 1), (&upsrun_page, "vfs_write", 2)] {
        let r = open(b, page);
        assert_no_errors(&r);
        let before = r.selftest["flames"].as_array().unwrap();
        let after = r.selftest["flames_run1"].as_array().unwrap();
        assert_eq!((before.len(), after.len()), (graphs, graphs));
        let (run2, run1) = (page_frames(&before[0]), page_frames(&after[0]));
        assert_eq!(label_of(&run2, name), None, "{run2:?}");
        assert_eq!(label_of(&run1, name), Some(name), "{run1:?}");
        assert_labels_are_names(&run1, false, &format!("run 1's shape in {}", page.display()));
        assert_eq!(after[0]["side"], "1");
        assert_eq!(after[0]["pressed"], "Run 1's shape");
        assert_eq!(after[0]["loaded"], true);
    }
}

#[test]
fn a_run_2_without_cpu_stacks_shows_run_1s_shape_issue_27() {
    let tmp = tempdir();
    write(tmp.path(), "a.folded", &getpid_folded(400));
    // Run 2 only idled: no CPU stack, so run 2's shape has nothing to draw.
    write(tmp.path(), "b.folded", "swapper;default_idle 100\n");
    let page = upcmp(tmp.path(), &["--perf", "a.folded", "b.folded", "-q", "r"]);
    assert!(!tmp.path().join("r/a.folded_vs_b.folded.flamediff.svg").exists());
    assert!(tmp.path().join("r/a.folded_vs_b.folded.flamediff-run1.svg").is_file());
    let Some(b) = browser() else { return };
    let r = open(b, &page);
    assert_no_errors(&r);
    let flames = r.selftest["flames"].as_array().unwrap();
    assert_eq!(flames.len(), 1);
    let frames = page_frames(&flames[0]);
    assert_eq!(label_of(&frames, "user_loop"), Some("user_loop"), "{frames:?}");
    assert!(r.selftest["flames_run1"].as_array().unwrap().is_empty());
}

/// A frame box of a standalone SVG after its script ran in the browser: its title, its
/// depth (0 for `all`) and its left edge and width in percent of the graph.
struct FrameBox {
    title: String,
    depth: usize,
    x: f64,
    width: f64,
}

/// Every frame box of `svg` as the browser rendered it.
fn rendered_boxes(browser: &str, svg: &Path) -> Vec<FrameBox> {
    let (dom, at) = rendered_dom(browser, svg);
    let attr = |tag: &str, name: &str| -> f64 {
        let from = tag
            .find(&format!(" {name}=\""))
            .unwrap_or_else(|| panic!("{name} in {tag}"))
            + name.len()
            + 3;
        tag[from..from + tag[from..].find('"').unwrap()]
            .trim_end_matches('%')
            .parse()
            .unwrap()
    };
    let mut boxes: Vec<(String, f64, f64, f64)> = dom[at..]
        .split("<g>")
        .skip(1)
        .filter_map(|g| {
            let title = &g[g.find("<title>")? + 7..g.find("</title>")?];
            let rect = &g[g.find("<rect ")?..];
            let rect = &rect[..rect.find('>').unwrap()];
            Some((
                title.replace("&amp;", "&"),
                attr(rect, "y"),
                attr(rect, "x"),
                attr(rect, "width"),
            ))
        })
        .collect();
    // Straight graphs draw depth 0 lowest (largest y).
    let mut ys: Vec<f64> = boxes.iter().map(|b| b.1).collect();
    ys.sort_by(|a, b| b.total_cmp(a));
    ys.dedup();
    boxes
        .drain(..)
        .map(|(title, y, x, width)| FrameBox {
            title,
            depth: ys.iter().position(|&v| v == y).unwrap(),
            x,
            width,
        })
        .collect()
}

/// Each function's self share as the boxes draw it: a box's width less its children's,
/// summed by name (`all` left out).
fn drawn_self_shares(boxes: &[FrameBox], name: impl Fn(&str) -> &str) -> std::collections::HashMap<String, f64> {
    let mut own: Vec<f64> = boxes.iter().map(|b| b.width).collect();
    for (i, b) in boxes.iter().enumerate().filter(|(_, b)| b.depth > 0) {
        let parent = boxes
            .iter()
            // By the child's middle: the edges are rounded to 4 decimals apart.
            .position(|p| p.depth + 1 == b.depth && (p.x..p.x + p.width).contains(&(b.x + b.width / 2.0)))
            .unwrap_or_else(|| panic!("no parent for {}", b.title));
        own[parent] -= boxes[i].width;
    }
    let mut out = std::collections::HashMap::new();
    for (b, share) in boxes.iter().zip(own).filter(|(b, _)| b.depth > 0) {
        *out.entry(name(&b.title).to_string()).or_insert(0.0) += share;
    }
    out
}

/// The percentage a title gives a frame: `(N samples, P%)` in a plain graph, `(inclusive
/// A% → B%, ...)` in a differential one (`run2`: B, else A).
fn title_pct(title: &str, run2: bool) -> f64 {
    let pct = match title.rfind(" (inclusive ") {
        Some(at) => {
            let (a, b) = title[at + 12..].split_once(" → ").unwrap();
            if run2 {
                b.split('%').next().unwrap()
            } else {
                a.trim_end_matches('%')
            }
        }
        None => title.rsplit(", ").next().unwrap().trim_end_matches("%)"),
    };
    pct.parse().unwrap_or_else(|e| panic!("{title}: {e}"))
}

/// `drawn` (shares of each function drawn) against `flat` (the flat profile's), within
/// 0.01 points, every function of either.
fn assert_shares_equal(
    drawn: &std::collections::HashMap<String, f64>,
    flat: &std::collections::HashMap<String, f64>,
    what: &str,
) {
    let mut names: Vec<&String> = drawn.keys().chain(flat.keys()).collect();
    names.sort();
    names.dedup();
    for n in names {
        let (d, f) = (
            drawn.get(n).copied().unwrap_or(0.0),
            flat.get(n).copied().unwrap_or(0.0),
        );
        assert!((d - f).abs() < 0.01, "{what}: {n}: drawn {d:.4}%, flat profile {f:.4}%");
    }
}

#[test]
fn flame_graph_shares_equal_the_flat_profile_where_periods_vary_issue_30() {
    // Page faults of a JVM and of perf, at periods of 1 to 72 faults a sample: whole
    // samples of the mean period put frames up to a point and more off their share.
    let tmp = tempdir();
    let text = fs::read_to_string(testdata("import/java-faults.perf-script")).unwrap();
    // Run 1 lacks the 33-fault sample of perf's cmd_record, so the runs differ.
    let run1: String = text
        .split("\n\n")
        .filter(|s| !s.contains("51499.088718:"))
        .map(|s| format!("{s}\n\n"))
        .collect();
    assert!(run1.len() < text.len());
    write(tmp.path(), "a.perf-script", &run1);
    write(tmp.path(), "b.perf-script", &text);
    let opts = upcmp::import::ImportOptions::new(None, None, None, None).with_stacks(true);
    let import = |f: &str| upcmp::import::import(&tmp.path().join(f), &opts).unwrap();
    let (a, b) = (import("a.perf-script"), import("b.perf-script"));
    let (flat_a, flat_b) = (
        crate::import::flat_shares(&a.profile),
        crate::import::flat_shares(&b.profile),
    );
    let stacks = b.stacks.expect("call chains");
    assert!(stacks.periods_vary());
    let mut svg = Vec::new();
    upcmp::report::flame::render(&stacks, "t", None, false, &mut svg).unwrap();
    fs::write(tmp.path().join("flame.svg"), &svg).unwrap();
    upcmp(tmp.path(), &["--perf", "a.perf-script", "b.perf-script", "-q", "r"]);
    let Some(browser) = browser() else { return };

    let plain = rendered_boxes(browser, &tmp.path().join("flame.svg"));
    assert!(plain.len() > 10, "{} boxes", plain.len());
    assert!(plain.iter().any(|b| b.depth == 0 && b.title.starts_with("all (")));
    for b in &plain {
        assert!(
            (title_pct(&b.title, true) - b.width).abs() < 0.006,
            "{}: width {}%",
            b.title,
            b.width
        );
        assert!(b.title.contains(" samples, "), "{}", b.title);
    }
    assert_shares_equal(&drawn_self_shares(&plain, name_of), &flat_b, "flame.svg");

    let stem = "r/a.perf-script_vs_b.perf-script";
    for (file, flat, run2) in [("flamediff.svg", &flat_b, true), ("flamediff-run1.svg", &flat_a, false)] {
        let boxes = rendered_boxes(browser, &tmp.path().join(format!("{stem}.{file}")));
        assert!(boxes.len() > 10, "{file}: {} boxes", boxes.len());
        for b in boxes.iter().filter(|b| b.depth > 0) {
            let pct = title_pct(&b.title, run2);
            assert!((pct - b.width).abs() < 0.006, "{file}: {}: width {}%", b.title, b.width);
        }
        assert_shares_equal(&drawn_self_shares(&boxes, name_of), flat, file);
    }
}
