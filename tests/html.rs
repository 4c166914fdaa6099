//! results.html in a real browser: headless chromium opens the page from disk as
//! `results.html#selftest` (the page then sorts, toggles, filters and zooms as a reader
//! would and writes what its DOM showed into `#upcmp-selftest`), and these tests check
//! that against results.csv, with no error in the page or on the browser's console.

use crate::util::{copy_tree, csv_fields, run_in, stderr, tempdir, testdata};
use serde_json::Value;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const UPCMP: &str = env!("CARGO_BIN_EXE_upcmp");

/// The headless browser; None (saying why) when none is installed, a failure under
/// `UPCMP_REQUIRE_BROWSER=1` (as in CI, which installs Debian's chromium).
pub(crate) fn browser() -> Option<&'static str> {
    let found = ["chromium", "chromium-browser", "google-chrome"].into_iter().find(|b| {
        Command::new(b)
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    });
    if found.is_none() {
        let why = "needs a headless browser (apt-get install chromium)";
        if std::env::var("UPCMP_REQUIRE_BROWSER").as_deref() == Ok("1") {
            panic!("UPCMP_REQUIRE_BROWSER=1 but this test {why}");
        }
        eprintln!("skipped: this test {why} (set UPCMP_REQUIRE_BROWSER=1 to make this a failure)");
    }
    found
}

/// What the browser made of a page.
pub(crate) struct Rendered {
    /// The DOM after the scripts ran (`--dump-dom`).
    pub(crate) dom: String,
    /// The page's self-test report.
    pub(crate) selftest: Value,
    /// The browser's console messages (any message is a failure: the page writes none).
    console: Vec<String>,
}

/// The flags of every headless run: no sandbox (root), no network services, a fresh
/// profile.
pub(crate) fn headless_args(profile: &Path) -> Vec<String> {
    [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain([format!("--user-data-dir={}", profile.display())])
    .collect()
}

/// Opens `page#selftest` headless and waits for its scripts (virtual time runs the
/// timers at once; the browser is killed after two minutes of real time). A browser that
/// exits having printed no DOM at all (seen once in CI, with the whole suite running and
/// nothing on the browser's log) is run again, twice at most: a page that breaks the renderer fails
/// every time, and a page whose DOM lacks the report fails at once.
pub(crate) fn open(browser: &str, page: &Path) -> Rendered {
    let url = format!("file://{}#selftest", page.canonicalize().unwrap().display());
    let mut tries = Vec::new();
    let (dom, log) = loop {
        let (status, dom, log) = dump_dom(browser, &url);
        if !dom.trim().is_empty() || tries.len() == 2 {
            break (dom, log);
        }
        eprintln!("{browser} printed no DOM for {url} ({status}); running it again");
        tries.push(format!("{status}\n{log}"));
    };
    let console: Vec<String> = log
        .lines()
        .filter(|l| l.contains(":CONSOLE"))
        .map(str::to_string)
        .collect();
    let at = dom.find("<pre id=\"upcmp-selftest\" hidden=\"\">").unwrap_or_else(|| {
        panic!("no self-test report in the DOM; browser log:\n{log}\nDOM:\n{dom}\nearlier tries: {tries:#?}")
    });
    let text = &dom[at..];
    let text = &text[text.find('>').unwrap() + 1..text.find("</pre>").unwrap()];
    let json = text
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&nbsp;", "\u{a0}")
        .replace("&amp;", "&");
    let selftest = serde_json::from_str(&json).unwrap_or_else(|e| panic!("self-test report: {e}: {json}"));
    Rendered { dom, selftest, console }
}

/// One headless run with `--dump-dom`: its exit status, the DOM it printed and its log.
fn dump_dom(browser: &str, url: &str) -> (std::process::ExitStatus, String, String) {
    let profile = tempdir();
    let mut child = Command::new(browser)
        .args(headless_args(profile.path()))
        .args([
            "--enable-logging=stderr",
            "--v=0",
            "--virtual-time-budget=30000",
            "--dump-dom",
            url,
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("running {browser}: {e}"));
    // Read both pipes while waiting, so a large DOM cannot block the browser.
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let out_reader = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut out, &mut s).map(|_| s)
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut err, &mut s).map(|_| s)
    });
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > Duration::from_secs(120) {
            child.kill().unwrap();
            panic!("{browser} did not finish {url} in two minutes");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    (
        status,
        out_reader.join().unwrap().unwrap(),
        err_reader.join().unwrap().unwrap(),
    )
}

pub(crate) fn assert_no_errors(r: &Rendered) {
    assert!(r.console.is_empty(), "console messages: {:#?}", r.console);
    assert_eq!(r.selftest["errors"], serde_json::json!([]), "errors in the page");
    assert!(
        r.dom
            .contains("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none';"),
        "the page forbids network requests"
    );
}

/// One function row of results.csv.
#[derive(Debug, Clone)]
struct CsvFunction {
    name: String,
    run1: Option<f64>,
    run2: Option<f64>,
    delta: f64,
    run1_pct: f64,
    run2_pct: f64,
    /// The 95% test's verdict, as the CSV writes it.
    verdict: String,
}

impl CsvFunction {
    /// Beyond the noise the test knew of, as the page's noise toggle and --hide-noise see it.
    fn stands_out(&self) -> bool {
        self.verdict == "significant" || self.verdict == "sampling only"
    }
}

/// The function rows of `test` in results.csv, in the file's order.
fn csv_functions(csv: &str, test: &str) -> Vec<CsvFunction> {
    let header = csv_fields(csv.lines().next().unwrap());
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    let num = |s: &str| (!s.is_empty()).then(|| s.parse::<f64>().unwrap());
    csv.lines()
        .skip(1)
        .map(csv_fields)
        .filter(|f| f[col("test")] == test && f[col("kind")] == "function")
        .map(|f| CsvFunction {
            name: f[col("name")].clone(),
            run1: num(&f[col("run1")]),
            run2: num(&f[col("run2")]),
            delta: num(&f[col("delta")]).unwrap(),
            run1_pct: num(&f[col("run1_pct_of_cpu")]).unwrap(),
            run2_pct: num(&f[col("run2_pct_of_cpu")]).unwrap(),
            verdict: f[col("verdict")].clone(),
        })
        .collect()
}

pub(crate) fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap_or_else(|| panic!("not an array: {v}"))
        .iter()
        .map(|c| c.as_str().unwrap_or_else(|| panic!("not a string: {c}")).to_string())
        .collect()
}

/// The rows a table showed in one view (every row must have been read).
fn view(table: &Value, name: &str) -> Vec<Vec<String>> {
    table[name]
        .as_array()
        .unwrap_or_else(|| panic!("no view {name}"))
        .iter()
        .map(strings)
        .collect()
}

/// Asserts that `shown` is `want` in order: the name whole, the seconds within their
/// three printed decimals, the verdict in words.
fn assert_rows(columns: &[String], shown: &[Vec<String>], want: &[&CsvFunction], what: &str) {
    let col = |label: &str| {
        columns
            .iter()
            .position(|c| c == label)
            .unwrap_or_else(|| panic!("no column {label} in {columns:?}"))
    };
    let (name, run1, run2, delta, verdict) = (
        col("Function"),
        col("Run1 (sec)"),
        col("Run2 (sec)"),
        col("R2-R1 (sec)"),
        col("95% test"),
    );
    let names = |rows: &[Vec<String>]| rows.iter().map(|r| r[name].clone()).collect::<Vec<_>>();
    assert_eq!(
        names(shown),
        want.iter().map(|f| f.name.clone()).collect::<Vec<_>>(),
        "{what}: the rows and their order"
    );
    let close = |cell: &str, x: Option<f64>| match x {
        None => cell.is_empty(),
        Some(x) => cell.parse::<f64>().is_ok_and(|c| (c - x).abs() <= 0.000_501),
    };
    for (row, f) in shown.iter().zip(want) {
        assert!(
            close(&row[run1], f.run1) && close(&row[run2], f.run2) && close(&row[delta], Some(f.delta)),
            "{what}: {row:?} against {f:?}"
        );
        assert_eq!(row[verdict], f.verdict, "{what}: {f:?}");
    }
}

/// Checks every view of one function table against the CSV rows of its test.
fn assert_table_matches_csv(table: &Value, csv: &[CsvFunction], cutoff_pct: f64) {
    let columns = strings(&table["columns"]);
    assert_eq!(
        table["total"],
        csv.len(),
        "every function of results.csv is in the page"
    );
    let above: Vec<&CsvFunction> = csv
        .iter()
        .filter(|f| f.run1_pct.max(f.run2_pct) >= cutoff_pct)
        .collect();
    assert_rows(
        &columns,
        &view(table, "shown"),
        &above,
        "at first (the text report's rows)",
    );
    let all: Vec<&CsvFunction> = csv.iter().collect();
    assert_rows(
        &columns,
        &view(table, "with_below"),
        &all,
        "with the rows below the cutoff",
    );
    let significant: Vec<&CsvFunction> = csv.iter().filter(|f| f.stands_out()).collect();
    assert_rows(
        &columns,
        &view(table, "noise_toggled"),
        &significant,
        "without the noise",
    );
    assert!(significant.len() < csv.len(), "the fixture has noise rows to hide");

    // Sorting by run 1 (the second column): largest first, then smallest first; the
    // functions absent from run 1 last both times.
    assert_eq!(table["sorted_column"], "Run1 (sec)");
    let run1 = columns.iter().position(|c| c == "Run1 (sec)").unwrap();
    for (view_name, descending) in [("sorted", true), ("sorted_again", false)] {
        let rows = view(table, view_name);
        assert_eq!(rows.len(), csv.len(), "{view_name}");
        let values: Vec<Option<f64>> = rows.iter().map(|r| r[run1].parse().ok()).collect();
        let present = values.iter().take_while(|v| v.is_some()).count();
        assert!(
            values[present..].iter().all(Option::is_none),
            "{view_name}: empty cells last"
        );
        let v: Vec<f64> = values[..present].iter().map(|v| v.unwrap()).collect();
        assert!(
            v.windows(2)
                .all(|w| if descending { w[0] >= w[1] } else { w[0] <= w[1] }),
            "{view_name}: {v:?}"
        );
        let mut want: Vec<&CsvFunction> = csv.iter().collect();
        want.sort_by(|a, b| match (a.run1, b.run1) {
            (Some(x), Some(y)) if descending => y.total_cmp(&x),
            (Some(x), Some(y)) => x.total_cmp(&y),
            (x, y) => y.is_some().cmp(&x.is_some()),
        });
        let mut got_names: Vec<&String> = rows.iter().map(|r| &r[0]).collect();
        got_names.sort();
        let mut want_names: Vec<&String> = want.iter().map(|f| &f.name).collect();
        want_names.sort();
        assert_eq!(got_names, want_names, "{view_name}: the same rows");
    }
    assert_ne!(
        view(table, "sorted"),
        view(table, "with_below"),
        "sorting changed the order"
    );

    let query = table["filter"].as_str().unwrap().to_lowercase();
    let filtered = view(table, "filtered");
    let want: Vec<&CsvFunction> = csv.iter().filter(|f| f.name.to_lowercase().contains(&query)).collect();
    assert!(!want.is_empty() && want.len() < csv.len(), "{query}");
    let mut got: Vec<&String> = filtered.iter().map(|r| &r[0]).collect();
    got.sort();
    let mut want_names: Vec<&String> = want.iter().map(|f| &f.name).collect();
    want_names.sort();
    assert_eq!(got, want_names, "filtered by {query:?}");
}

/// upcmp `args` in `dir`, which must succeed; returns RESULTS_DIR/results.html.
pub(crate) fn upcmp(dir: &Path, args: &[&str]) -> PathBuf {
    let out = run_in(dir, UPCMP, args);
    assert!(out.status.success(), "upcmp {args:?}: {}", stderr(&out));
    let page = dir.join(args[args.len() - 1]).join("results.html");
    assert!(page.is_file(), "{} missing", page.display());
    page
}

#[test]
fn forkwait_page_holds_every_row_of_results_csv() {
    let tmp = tempdir();
    for run in ["outdir1", "outdir2"] {
        copy_tree(&testdata(&format!("forkwait/{run}")), &tmp.path().join(run));
    }
    let page = upcmp(tmp.path(), &["outdir1", "outdir2", "-q", "r"]);
    let html = fs::read_to_string(&page).unwrap();
    assert!(html.len() < 200_000, "{} bytes", html.len());
    let Some(b) = browser() else { return };
    let r = open(b, &page);
    assert_no_errors(&r);
    assert_eq!(
        r.selftest["digest_links"],
        serde_json::json!([["forkwait", "#t0", true]])
    );
    let csv = fs::read_to_string(tmp.path().join("r/results.csv")).unwrap();
    let rows = csv_functions(&csv, "forkwait");
    assert_eq!(rows.len(), 156);
    assert_table_matches_csv(&r.selftest["tables"][0], &rows, 0.5);
    assert_eq!(r.selftest["tables"][0]["shown"].as_array().unwrap().len(), 41);
    // The text report's summary, in the page as the server wrote it.
    for text in [
        "1745.514",
        "1825.126",
        "876.987",
        "915.842",
        "Lost samples",
        "fork, child immediately exits",
    ] {
        assert!(r.dom.contains(text), "{text}");
    }
}

#[test]
fn hide_noise_and_no_html() {
    let tmp = tempdir();
    for run in ["outdir1", "outdir2"] {
        copy_tree(&testdata(&format!("forkwait/{run}")), &tmp.path().join(run));
    }
    let out = run_in(tmp.path(), UPCMP, &["outdir1", "outdir2", "-q", "--no-html", "plain"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!tmp.path().join("plain/results.html").exists());
    assert!(tmp.path().join("plain/results").is_file());
    // Without a display --open only says where the page is.
    let out = Command::new(UPCMP)
        .args(["outdir1", "outdir2", "-q", "--open", "opened"])
        .current_dir(tmp.path())
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("no display"), "{}", stderr(&out));
    assert!(tmp.path().join("opened/results.html").is_file());
    let page = upcmp(tmp.path(), &["outdir1", "outdir2", "-q", "--hide-noise", "r"]);
    let Some(b) = browser() else { return };
    let r = open(b, &page);
    assert_no_errors(&r);
    let csv = fs::read_to_string(tmp.path().join("r/results.csv")).unwrap();
    let rows = csv_functions(&csv, "forkwait");
    let table = &r.selftest["tables"][0];
    // Noise rows start hidden; the toggle brings them back.
    let shown = view(table, "shown");
    assert_eq!(
        shown.len(),
        rows.iter()
            .filter(|f| f.stands_out() && f.run1_pct.max(f.run2_pct) >= 0.5)
            .count()
    );
    assert_eq!(view(table, "noise_toggled").len(), rows.len());
}

/// The forkwait runs as three repetitions a side (format 2), each repetition moving
/// bcopy's samples and the benchmark's rate a little.
pub(crate) fn repeated_fixture(dir: &Path) {
    for (run, base) in [("outdir1", 0u64), ("outdir2", 30_000)] {
        let src = testdata(&format!("forkwait/{run}"));
        let to = dir.join(run);
        fs::create_dir_all(&to).unwrap();
        fs::copy(src.join("system"), to.join("system")).unwrap();
        fs::copy(src.join("test_list"), to.join("test_list")).unwrap();
        let marker = fs::read_to_string(src.join("upcmp-run")).unwrap();
        fs::write(to.join("upcmp-run"), marker.replace("format: 1", "format: 2\nruns: 3")).unwrap();
        let prfout = fs::read_to_string(src.join("forkwait/prfout")).unwrap();
        let upout = fs::read_to_string(src.join("forkwait/upout")).unwrap();
        for k in 1..=3u64 {
            let extra = base + k * 1000;
            let rep = to.join(format!("forkwait/r{k}"));
            fs::create_dir_all(&rep).unwrap();
            fs::copy(src.join("forkwait/status"), rep.join("status")).unwrap();
            let moved: String = prfout
                .lines()
                .map(|l| {
                    let w: Vec<&str> = l.split_whitespace().collect();
                    if w.len() == 4 && w[3] == "bcopy" {
                        format!("{} {} [kernel] bcopy", w[0].parse::<u64>().unwrap() + extra, w[1])
                    } else if w.len() >= 4 && w[0] == "cpu" && w[1] == "0" {
                        let n: u64 = w[3].parse().unwrap();
                        l.replacen(&format!("samples {n}"), &format!("samples {}", n + extra), 1)
                    } else {
                        l.to_string()
                    }
                })
                .map(|l| l + "\n")
                .collect();
            fs::write(rep.join("prfout"), moved).unwrap();
            let rate = 420.0 + (base / 10_000 + k) as f64;
            fs::write(
                rep.join("upout"),
                upout.replace("(  425.0/sec)", &format!("({rate:7.1}/sec)")),
            )
            .unwrap();
        }
    }
}

#[test]
fn repetitions_show_their_spread() {
    let tmp = tempdir();
    repeated_fixture(tmp.path());
    let page = upcmp(tmp.path(), &["outdir1", "outdir2", "-q", "r"]);
    let report = fs::read_to_string(tmp.path().join("r/results")).unwrap();
    assert!(report.contains("Noise: 3 and 3 repetitions"), "{report}");
    let html = fs::read_to_string(&page).unwrap();
    // Each repetition as a dot: its CPU time, and its value of the benchmark's one operation.
    assert_eq!(html.matches("<circle class=\"run1\"").count(), 3 + 3, "{html}");
    assert_eq!(html.matches("<circle class=\"run2\"").count(), 3 + 3);
    let json: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(tmp.path().join("r/results.json")).unwrap()).unwrap();
    let bench = &json["tests"][0]["outcome"]["bench"][0];
    for (side, k) in [("run1_values", "run1"), ("run2_values", "run2")] {
        let values: Vec<f64> = bench[side]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect();
        assert_eq!(values.len(), 3, "{bench}");
        let mean = values.iter().sum::<f64>() / 3.0;
        assert!((mean - bench[k].as_f64().unwrap()).abs() < 1e-9, "{bench}");
        for v in values {
            assert!(html.contains(&format!("<title>{v:.4} /sec</title>")), "a dot for {v}");
        }
    }
    assert!(html.contains("Repetitions (means below)"));
    let Some(b) = browser() else { return };
    let r = open(b, &page);
    assert_no_errors(&r);
    let table = &r.selftest["tables"][0];
    let columns = strings(&table["columns"]);
    assert_eq!(columns.iter().filter(|c| *c == "sd%").count(), 2, "{columns:?}");
    let csv = fs::read_to_string(tmp.path().join("r/results.csv")).unwrap();
    assert_table_matches_csv(table, &csv_functions(&csv, "forkwait"), 0.5);
}

#[test]
fn flame_graph_zooms_and_searches_inside_the_page() {
    let tmp = tempdir();
    let (a, b) = (testdata("import/a.folded"), testdata("import/b.folded"));
    let page = upcmp(
        tmp.path(),
        &["--perf", a.to_str().unwrap(), b.to_str().unwrap(), "-q", "r"],
    );
    let Some(browser) = browser() else { return };
    let r = open(browser, &page);
    assert_no_errors(&r);
    let csv = fs::read_to_string(tmp.path().join("r/results.csv")).unwrap();
    let test = "a.folded vs b.folded";
    let rows = csv_functions(&csv, test);
    let table = &r.selftest["tables"][0];
    assert_eq!(table["total"], rows.len());
    let all: Vec<&CsvFunction> = rows.iter().collect();
    assert_rows(
        &strings(&table["columns"]),
        &view(table, "with_below"),
        &all,
        "all rows",
    );

    let flame = &r.selftest["flames"][0];
    assert_eq!(flame["loaded"], true, "{flame}");
    let titles = strings(&flame["titles"]);
    for frame in ["all (", "dd (", "read_zero (", "vfs_write (", "__libc_read ("] {
        assert!(titles.iter().any(|t| t.starts_with(frame)), "{frame} in {titles:?}");
    }
    assert!(flame["height"].as_f64().unwrap() > 100.0, "{flame}");
    assert_eq!(flame["search_matched"], "Matched: 100%");
    assert_eq!(flame["zoomed"], true);
    assert!(flame["hidden_after_zoom"].as_u64().unwrap() > 0, "{flame}");
    assert_eq!(flame["unzoomed"], true);
    // The caller/callee table, as in RESULTS_DIR/TEST.callers.
    let callers = &r.dom[r.dom.find("<table class=\"callers\">").expect("callers table")..];
    let callers = &callers[..callers.find("</table>").unwrap()];
    assert!(
        callers.contains("read_zero") && callers.contains("do_syscall_64"),
        "{callers}"
    );
}

/// Two upsrun runs of two tests each, made of the forkwait profiles and the call graph
/// fixture's stacks; in run 2 one path of each test grows tenfold.
pub(crate) fn upsrun_fixture(dir: &Path) {
    let stacks = fs::read_to_string(testdata("upsrun/callgraph/expected.stacks.folded")).unwrap();
    let grown = |path: &str| -> String {
        stacks
            .lines()
            .map(|l| match l.rsplit_once(' ') {
                Some((p, n)) if p.ends_with(path) => format!("{p} {}\n", n.parse::<u64>().unwrap() * 10),
                _ => format!("{l}\n"),
            })
            .collect()
    };
    for (run, k) in [("outdir1", 1), ("outdir2", 2)] {
        let to = dir.join(run);
        copy_tree(&testdata(&format!("forkwait/{run}")), &to);
        copy_tree(&to.join("forkwait"), &to.join("second"));
        let marker = fs::read_to_string(to.join("upcmp-run")).unwrap();
        fs::write(to.join("upcmp-run"), format!("{marker}kind: upsrun\n")).unwrap();
        fs::write(to.join("test_list"), "forkwait\nsecond: true\n").unwrap();
        let (a, b) = if k == 1 {
            (stacks.clone(), stacks.clone())
        } else {
            (grown(";walk;walk;walk"), grown(";vfs_read;copy_page"))
        };
        fs::write(to.join("forkwait/stacks.folded"), a).unwrap();
        fs::write(to.join("second/stacks.folded"), b).unwrap();
    }
}

#[test]
fn upsrun_runs_get_a_flame_graph_per_test_that_zoom_apart() {
    let tmp = tempdir();
    upsrun_fixture(tmp.path());
    let page = upcmp(tmp.path(), &["outdir1", "outdir2", "-q", "r"]);
    for t in ["forkwait", "second"] {
        assert!(tmp.path().join(format!("r/{t}.flamediff.svg")).is_file());
    }
    let Some(b) = browser() else { return };
    let r = open(b, &page);
    assert_no_errors(&r);
    let flames = r.selftest["flames"].as_array().unwrap();
    assert_eq!(flames.len(), 2);
    for (f, grew) in flames.iter().zip(["walk (", "copy_page ("]) {
        assert_eq!(f["loaded"], true, "{f}");
        assert!(
            strings(&f["titles"]).iter().any(|t| t.starts_with(grew)),
            "{grew} in {f}"
        );
        assert_eq!(f["search_matched"], "Matched: 100%");
        assert_eq!(f["zoomed"], true);
        assert_eq!(f["others_zoomed"], 0, "zooming one graph zoomed another: {f}");
        assert_eq!(f["unzoomed"], true);
    }
    assert_ne!(flames[0]["titles"], flames[1]["titles"]);
    let csv = fs::read_to_string(tmp.path().join("r/results.csv")).unwrap();
    for (i, t) in ["forkwait", "second"].iter().enumerate() {
        assert_table_matches_csv(&r.selftest["tables"][i], &csv_functions(&csv, t), 0.5);
    }
}

#[test]
fn hostile_function_names_are_text() {
    let tmp = tempdir();
    let long = "A".repeat(10 * 1024);
    let names = [
        "<script>window.upcmpError('injected script')</script>",
        "<img src=x onerror=\"upcmpError('injected img')\">",
        "\"double\" 'single' & ampersand, comma </script><!-- <script>",
        long.as_str(),
    ];
    let folded = |counts: [u32; 4]| -> String {
        names
            .iter()
            .zip(counts)
            .map(|(n, c)| format!("app;{n} {c}\n"))
            .collect()
    };
    // The file names become the test's name: they are hostile too.
    fs::write(tmp.path().join("h\"<b>1.folded"), folded([300, 200, 100, 50])).unwrap();
    fs::write(tmp.path().join("h\"<b>2.folded"), folded([100, 250, 150, 60])).unwrap();
    let page = upcmp(tmp.path(), &["--perf", "h\"<b>1.folded", "h\"<b>2.folded", "-q", "r"]);
    let html = fs::read_to_string(&page).unwrap();
    // Every `<script` is the page's own: the error hook, the data, the flame graph, the
    // code, and the flame graph frame's head inside that code.
    let own = [
        "<script>// ",
        "<script id=\"upcmp-data\" type=\"application/json\">",
        "<script class=\"flame-svg\" id=\"flame-0\" type=\"application/json\">",
        "<script class=\"flame-svg\" id=\"flame-1\" type=\"application/json\">",
        "<script>window.addEventListener('error',function(e){try{parent.upcmpError('flame graph: '",
    ];
    let scripts: Vec<&str> = html.match_indices("<script").map(|(i, _)| &html[i..]).collect();
    // The graph in run 2's shape and in run 1's.
    assert_eq!(scripts.len(), 6);
    for s in scripts {
        assert!(own.iter().any(|o| s.starts_with(o)), "{}", &s[..80]);
    }
    assert!(!html.contains("<img"));
    let Some(b) = browser() else { return };
    let r = open(b, &page);
    assert_no_errors(&r);
    let test = "h\"<b>1.folded vs h\"<b>2.folded";
    assert_eq!(r.selftest["digest_links"], serde_json::json!([[test, "#t0", true]]));
    let csv = fs::read_to_string(tmp.path().join("r/results.csv")).unwrap();
    let rows = csv_functions(&csv, test);
    let mut csv_names: Vec<&str> = rows.iter().map(|f| f.name.as_str()).collect();
    csv_names.sort();
    // Names are read cut to 4 KiB (docs/format.md).
    let read_as: Vec<&str> = names
        .iter()
        .map(|n| &n[..n.len().min(upcmp::store::prfout::MAX_NAME_BYTES)])
        .collect();
    let mut want = read_as.clone();
    want.sort();
    assert_eq!(csv_names, want);
    let table = &r.selftest["tables"][0];
    let all: Vec<&CsvFunction> = rows.iter().collect();
    assert_rows(
        &strings(&table["columns"]),
        &view(table, "with_below"),
        &all,
        "hostile rows",
    );
    let titles = strings(&r.selftest["flames"][0]["titles"]);
    for n in read_as {
        assert!(
            titles.iter().any(|t| t.starts_with(&format!("{n} ("))),
            "{n} in the flame graph"
        );
    }
    assert!(!r.dom.contains("<img"), "no element was injected");
}

#[test]
fn counters_are_drawn_from_whatever_fields_they_have() {
    // No comparison carries counters yet: this page gets a list by hand, as a test will
    // once they exist, and the page draws it without knowing the fields beforehand.
    let tmp = tempdir();
    for run in ["outdir1", "outdir2"] {
        copy_tree(&testdata(&format!("forkwait/{run}")), &tmp.path().join(run));
    }
    let page = upcmp(tmp.path(), &["outdir1", "outdir2", "-q", "r"]);
    let html = fs::read_to_string(&page).unwrap();
    let at = "\"outcome\":\"compared\"";
    assert_eq!(html.matches(at).count(), 1);
    let counters = r#","counters":[{"name":"cache-misses","run1":1000,"run2":1250.4,"change":25.04,"verdict":"significant","unit":"events"},{"name":"\u003cb>x","run1":null,"run2":7,"change":null,"verdict":"noise"}]"#;
    fs::write(&page, html.replace(at, &format!("{at}{counters}"))).unwrap();
    let Some(b) = browser() else { return };
    let r = open(b, &page);
    assert_no_errors(&r);
    // Laid out as the text report's System Activity; the other fields in the tooltip.
    assert_eq!(
        r.selftest["counters"],
        serde_json::json!([[
            ["counter", "Run1", "Run2", "change", "Run1/s", "Run2/s", "95% test"],
            [
                "cache-misses",
                "1000",
                "1250",
                "+25.0%",
                "absent",
                "absent",
                "significant"
            ],
            ["<b>x", "absent", "7.00", "-", "absent", "absent", "noise"]
        ]])
    );
    assert_eq!(r.selftest["counter_tips"], serde_json::json!([["unit: events", ""]]));
}

#[test]
fn system_activity_is_drawn_from_the_comparison() {
    // The counters of testdata/verdict/: the page shows the rows the text report lists,
    // with their plain fields (the nested statistics stay in results.json).
    let tmp = tempdir();
    for run in ["base", "worse"] {
        copy_tree(&testdata(&format!("verdict/{run}")), &tmp.path().join(run));
    }
    let page = upcmp(tmp.path(), &["base", "worse", "-q", "r"]);
    let Some(b) = browser() else { return };
    let r = open(b, &page);
    assert_no_errors(&r);
    let tables = r.selftest["counters"].as_array().unwrap();
    let rows = tables[0].as_array().unwrap();
    let columns = strings(&rows[0]);
    assert_eq!(
        columns,
        ["counter", "Run1", "Run2", "change", "Run1/s", "Run2/s", "95% test"],
        "the text report's columns, not the CSV's fields"
    );
    let names: Vec<String> = rows[1..].iter().map(|row| strings(row)[0].clone()).collect();
    let report = fs::read_to_string(tmp.path().join("r/results")).unwrap();
    // Each row reads as the text report's line of the same counter.
    for row in &rows[1..] {
        let cells = strings(row);
        let line = report
            .lines()
            .find(|l| l.split_whitespace().next() == Some(cells[0].as_str()))
            .unwrap_or_else(|| panic!("{} not in System Activity:\n{report}", cells[0]));
        let words: Vec<&str> = line.split_whitespace().collect();
        let mut want: Vec<&str> = cells.iter().map(String::as_str).collect();
        let verdict = want.pop().unwrap();
        want.retain(|c| !c.is_empty());
        assert_eq!(words[..6], want[..], "{line}");
        assert_eq!(words[6..].join(" "), verdict, "{line}");
    }
    assert!(names.len() >= 4, "{names:?}");
    assert!(
        r.selftest["counter_tips"][0][0].as_str().unwrap().contains("total1: "),
        "{}",
        r.selftest["counter_tips"]
    );
}
