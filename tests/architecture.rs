//! The house (docs/architecture.md): every module uses only the layers under its own, and
//! the model does no I/O. Read from the source, as the imports say it.

use crate::util::repo;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Modules that stand beside the house and may use only these of it (the helpers' noise
/// verdicts are compare's statistics; an error message is escaped as every text for
/// people is, by the model's one escape).
const BESIDE: &[(&str, &[&str])] = &[("helpers", &["host", "compare"]), ("exit", &["model"])];

/// The crates of the workspace, lowest first: a crate may depend only on crates of lower
/// floors (`cargo metadata` says which it does). The parsers, the statistics and the safe
/// files know nothing of each other; the model reads what the parsers parse; perf's
/// files and the symbols are read into the model; the app crate holds the rest; the
/// benchmark suite is a crate of its own that upcmp uses for its test names.
const CRATES: &[&[&str]] = &[
    &["upcmp-parsers", "upcmp-stats", "upcmp-fsio", "unixperf"],
    &["upcmp-model"],
    &["upcmp-perf"],
    &["upcmp"],
];

/// The crates below this one, re-exported under the names the house's files use.
const CRATES_BELOW: &[&str] = &["model", "fsio", "import", "symbols"];

fn rust_files(p: &Path) -> Vec<PathBuf> {
    if p.is_file() {
        return vec![p.to_path_buf()];
    }
    let mut out = Vec::new();
    for e in std::fs::read_dir(p).unwrap().flatten() {
        out.extend(
            rust_files(&e.path())
                .into_iter()
                .filter(|f| f.extension().is_some_and(|x| x == "rs")),
        );
    }
    out.sort();
    out
}

/// A file's text without its unit tests, which may reach anywhere.
fn without_tests(text: &str) -> &str {
    text.find("#[cfg(test)]").map_or(text, |at| &text[..at])
}

/// The top-level modules each file of `module` names as `crate::X`.
fn uses(module: &str, files: &[PathBuf]) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for f in files {
        let text = std::fs::read_to_string(f).unwrap();
        for (at, _) in without_tests(&text).match_indices("crate::") {
            let rest = &text[at + "crate::".len()..];
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                .collect();
            if !name.is_empty() && name != module {
                let file = f.strip_prefix(repo()).unwrap_or(f).display().to_string();
                out.entry(name).or_default().push(file);
            }
        }
    }
    out
}

fn top_level_modules() -> Vec<(String, PathBuf)> {
    let src = repo().join("src");
    let mut mods: Vec<(String, PathBuf)> = std::fs::read_dir(&src)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter_map(|p| {
            let name = p.file_stem()?.to_str()?.to_string();
            (!matches!(name.as_str(), "lib" | "main" | "bin")).then_some((name, p))
        })
        .collect();
    mods.sort();
    mods
}

#[test]
fn the_house_has_one_way_layers() {
    let rank: BTreeMap<&str, usize> = upcmp::LAYERS
        .iter()
        .enumerate()
        .flat_map(|(i, layer)| layer.iter().map(move |m| (*m, i)))
        .collect();
    let mut wrong = Vec::new();
    for (module, path) in top_level_modules() {
        let files = rust_files(&path);
        let allowed = |dep: &str| -> bool {
            // The exit statuses are numbers any layer may choose (app answers
            // --fail-if-worse's verdict with one).
            if dep == "exit" {
                return rank.contains_key(module.as_str());
            }
            if let Some((_, may)) = BESIDE.iter().find(|(m, _)| *m == module) {
                return may.contains(&dep);
            }
            if CRATES_BELOW.contains(&dep) {
                return true;
            }
            match (rank.get(module.as_str()), rank.get(dep)) {
                (Some(a), Some(b)) => b < a,
                _ => false,
            }
        };
        assert!(
            rank.contains_key(module.as_str()) || BESIDE.iter().any(|(m, _)| *m == module),
            "src/{module} is in no layer: place it in upcmp::LAYERS and docs/architecture.md"
        );
        for (dep, at) in uses(&module, &files) {
            if !allowed(&dep) {
                wrong.push(format!("{module} -> {dep} ({})", at.join(", ")));
            }
        }
    }
    assert!(wrong.is_empty(), "uses against the layers:\n{}", wrong.join("\n"));
}

#[test]
fn every_layer_names_a_module_that_exists() {
    let mods: Vec<String> = top_level_modules().into_iter().map(|(m, _)| m).collect();
    for m in upcmp::LAYERS.iter().flat_map(|l| l.iter()) {
        assert!(mods.iter().any(|x| x == m), "{m} is in upcmp::LAYERS but not in src/");
    }
}

#[test]
fn the_model_does_no_io() {
    for f in rust_files(&repo().join("model/src")) {
        let text = std::fs::read_to_string(&f).unwrap();
        for io in ["std::fs", "File::", "std::net", "std::process", "std::env"] {
            assert!(
                !without_tests(&text).contains(io),
                "{} uses {io}: the model is plain data",
                f.display()
            );
        }
    }
}

#[test]
fn the_architecture_page_describes_every_module() {
    let page = std::fs::read_to_string(repo().join("docs/architecture.md")).unwrap();
    for (m, _) in top_level_modules() {
        assert!(
            page.contains(&format!("### `{m}`")),
            "docs/architecture.md has no section for src/{m}"
        );
    }
}

/// The workspace's crates and the crates of the workspace each depends on (normal and
/// build dependencies; tests may reach anywhere), from `cargo metadata`.
fn workspace_dependencies() -> BTreeMap<String, Vec<String>> {
    let out = std::process::Command::new(env!("CARGO"))
        .args(["metadata", "--format-version", "1", "--no-deps", "--offline"])
        .current_dir(repo())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "cargo metadata: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let packages = meta["packages"].as_array().unwrap();
    let names: Vec<&str> = packages.iter().map(|p| p["name"].as_str().unwrap()).collect();
    packages
        .iter()
        .map(|p| {
            let deps = p["dependencies"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|d| d["kind"].as_str() != Some("dev"))
                .map(|d| d["name"].as_str().unwrap())
                .filter(|d| names.contains(d))
                .map(str::to_string)
                .collect();
            (p["name"].as_str().unwrap().to_string(), deps)
        })
        .collect()
}

/// The edges of `graph` that do not go down the floors of [`CRATES`], and the crates on
/// none.
fn against_the_floors(graph: &BTreeMap<String, Vec<String>>) -> Vec<String> {
    let floor = |c: &str| CRATES.iter().position(|f| f.contains(&c));
    let mut wrong = Vec::new();
    for (krate, deps) in graph {
        let Some(at) = floor(krate) else {
            wrong.push(format!(
                "{krate} is on no floor: place it in CRATES and docs/architecture.md"
            ));
            continue;
        };
        for d in deps {
            if !matches!(floor(d), Some(f) if f < at) {
                wrong.push(format!("{krate} -> {d}"));
            }
        }
    }
    wrong
}

#[test]
fn the_crates_depend_only_downward() {
    let graph = workspace_dependencies();
    let wrong = against_the_floors(&graph);
    assert!(wrong.is_empty(), "crates against the floors:\n{}", wrong.join("\n"));
    for c in CRATES.iter().flat_map(|f| f.iter()) {
        assert!(graph.contains_key(*c), "{c} is in CRATES but not in the workspace");
    }
    // What the compiler now holds: the model and the statistics never reach the app.
    assert_eq!(graph["upcmp-model"], ["upcmp-parsers"]);
    assert_eq!(graph["upcmp-perf"], ["upcmp-fsio", "upcmp-model", "upcmp-parsers"]);
    assert!(graph["upcmp-stats"].is_empty() && graph["upcmp-fsio"].is_empty());
}

#[test]
fn a_crate_that_depends_on_its_own_floor_or_above_is_named() {
    let graph: BTreeMap<String, Vec<String>> = [
        ("upcmp-stats", vec!["upcmp-model"]),
        ("upcmp-fsio", vec!["upcmp-parsers"]),
        ("upcmp-model", vec!["upcmp-parsers"]),
        ("upcmp-vm", vec![]),
    ]
    .into_iter()
    .map(|(k, d)| (k.to_string(), d.into_iter().map(str::to_string).collect()))
    .collect();
    assert_eq!(
        against_the_floors(&graph),
        [
            "upcmp-fsio -> upcmp-parsers",
            "upcmp-stats -> upcmp-model",
            "upcmp-vm is on no floor: place it in CRATES and docs/architecture.md"
        ]
    );
}

/// The source directories of the workspace's crates.
const CRATE_SOURCES: &[&str] = &[
    "src",
    "parsers/src",
    "stats/src",
    "model/src",
    "fsio/src",
    "perf/src",
    "unixperf/src",
];

#[test]
fn a_file_over_1000_lines_says_why_in_its_header() {
    let mut silent = Vec::new();
    for dir in CRATE_SOURCES {
        for f in rust_files(&repo().join(dir)) {
            let text = std::fs::read_to_string(&f).unwrap();
            let header: String = text
                .lines()
                .take_while(|l| l.starts_with("//!"))
                .map(|l| l.trim_start_matches("//!").trim())
                .collect::<Vec<_>>()
                .join(" ")
                .to_lowercase();
            let lines = text.lines().count();
            if lines > 1000 && !header.contains("over 1,000 lines") {
                silent.push(format!("{} ({lines} lines)", f.display()));
            }
        }
    }
    assert!(
        silent.is_empty(),
        "files over 1,000 lines whose header does not say why (\"Over 1,000 lines: ...\"):\n{}",
        silent.join("\n")
    );
}
