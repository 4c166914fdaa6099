//! The house (docs/architecture.md): every module uses only the layers under its own, and
//! the model does no I/O. Read from the source, as the imports say it.

use crate::util::repo;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Modules that stand beside the house and may use only these of it (the helpers' noise
/// verdicts are compare's statistics; an error message is escaped as every text for
/// people is, by the model's one escape).
const BESIDE: &[(&str, &[&str])] = &[("helpers", &["host", "compare"]), ("exit", &["model"])];

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
            // The exit statuses are numbers any layer above the model may choose (app
            // answers --fail-if-worse's verdict with one).
            if dep == "exit" {
                return rank.get(module.as_str()) > rank.get("model");
            }
            if let Some((_, may)) = BESIDE.iter().find(|(m, _)| *m == module) {
                return may.contains(&dep);
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
    for f in rust_files(&repo().join("src/model")) {
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
