//! Shell integration: every command's --help, its completions for bash, zsh and fish, its man
//! page, its usage errors, and scripts/install-shell, run on the built binaries.

use crate::util::{repo, run_in, stderr, stdout, tempdir};
use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Every command of the suite, built: the package's, and unixperf beside them (the workspace
/// build puts it there).
fn commands() -> Vec<(&'static str, PathBuf)> {
    let unixperf = Path::new(env!("CARGO_BIN_EXE_uprun")).with_file_name("unixperf");
    assert!(
        unixperf.is_file(),
        "{} missing: build the workspace (cargo test --release --workspace)",
        unixperf.display()
    );
    vec![
        ("uprun", env!("CARGO_BIN_EXE_uprun").into()),
        ("upcmp", env!("CARGO_BIN_EXE_upcmp").into()),
        ("prfcmp", env!("CARGO_BIN_EXE_prfcmp").into()),
        ("upsrun", env!("CARGO_BIN_EXE_upsrun").into()),
        ("runmany", env!("CARGO_BIN_EXE_runmany").into()),
        ("hackdiff", env!("CARGO_BIN_EXE_hackdiff").into()),
        ("feat", env!("CARGO_BIN_EXE_feat").into()),
        ("unixperf", unixperf),
    ]
}

fn run(exe: &Path, args: &[&str]) -> std::process::Output {
    run_in(&std::env::temp_dir(), exe.to_str().unwrap(), args)
}

/// `CMD --generate WHAT`, which must succeed.
fn generated(name: &str, exe: &Path, what: &str) -> String {
    let o = run(exe, &["--generate", what]);
    assert!(o.status.success(), "{name} --generate {what}: {}", stderr(&o));
    assert!(o.stderr.is_empty(), "{name} --generate {what}: {}", stderr(&o));
    stdout(&o)
}

/// The long options `--help` lists, spelled `--name` (unixperf's one-dash `-name` too).
fn help_options(name: &str, exe: &Path) -> BTreeSet<String> {
    let help = stdout(&run(exe, &[if name == "unixperf" { "-help" } else { "--help" }]));
    let mut options = BTreeSet::new();
    for line in help.lines() {
        let line = line.trim_start();
        // "-h, --help", "--freq <HZ>", or unixperf's "-loop N".
        let line = match line.as_bytes() {
            [b'-', _, b',', b' ', ..] => &line[4..],
            _ => line,
        };
        let first = line.split([' ', '<', '=']).next().unwrap_or("");
        let long = match first.strip_prefix("--") {
            Some(l) => l,
            None if name == "unixperf" && line.starts_with('-') => &first[1..],
            None => continue,
        };
        if long.len() > 1 && long.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
            options.insert(format!("--{long}"));
        }
    }
    assert!(
        options.contains("--generate"),
        "{name} --help lists no --generate:\n{help}"
    );
    options
}

/// Whether `shell` can be run here; says so when it cannot.
fn have(shell: &str) -> bool {
    let found = Command::new(shell)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        eprintln!("skipped: the {shell} syntax check ({shell} is not installed)");
    }
    found
}

/// `shell -n FILE` accepts the script.
fn syntax_ok(shell: &str, script: &str, dir: &Path, name: &str) {
    let file = dir.join(format!("{name}.{shell}"));
    fs::write(&file, script).unwrap();
    let o = Command::new(shell).arg("-n").arg(&file).output().unwrap();
    assert!(
        o.status.success(),
        "{shell} -n rejects {name}'s completions: {}",
        stderr(&o)
    );
}

/// Whether zsh's `_arguments` specs name option `o`: `'--perf[...]'`, `'--freq=[...]:HZ:...'`,
/// `'*--feat=[...]'` (repeatable) or `'(--vmlinux)--analyse=[...]'` (excluding others).
fn zsh_offers(script: &str, o: &str) -> bool {
    script.lines().filter_map(|l| l.strip_prefix('\'')).any(|spec| {
        let spec = match spec.strip_prefix('(') {
            Some(rest) => rest.split_once(')').map_or("", |(_, s)| s),
            None => spec,
        };
        let spec = spec.strip_prefix('*').unwrap_or(spec);
        spec.strip_prefix(o)
            .is_some_and(|rest| rest.starts_with('[') || rest.starts_with("=["))
    })
}

/// What bash offers for `CMD WORDS...` with the cursor after the last word.
fn bash_complete(script: &Path, name: &str, words: &[&str]) -> Vec<String> {
    let mut line = vec![name];
    line.extend_from_slice(words);
    let o = Command::new("bash")
        .arg("-c")
        .arg(
            r#"source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); prev=${COMP_WORDS[COMP_CWORD-1]}
               "_$1" "$1" "${COMP_WORDS[COMP_CWORD]}" "$prev"; printf '%s\n' "${COMPREPLY[@]}""#,
        )
        .arg("complete")
        .arg(script)
        .args(&line)
        .output()
        .unwrap();
    assert!(o.status.success(), "completing {line:?}: {}", stderr(&o));
    stdout(&o).lines().filter(|l| !l.is_empty()).map(String::from).collect()
}

#[test]
fn every_command_completes_in_bash_zsh_and_fish() {
    let d = tempdir();
    let (zsh, fish) = (have("zsh"), have("fish"));
    for (name, exe) in commands() {
        let options = help_options(name, &exe);

        let bash = generated(name, &exe, "bash");
        assert!(
            bash.starts_with(&format!("_{name}() {{\n")),
            "{name}: no _{name} function:\n{bash}"
        );
        assert!(bash.contains(&format!("complete -F _{name} ")), "{name}:\n{bash}");
        let words: BTreeSet<&str> = bash.split(|c: char| c.is_whitespace() || "\"()".contains(c)).collect();
        for o in &options {
            assert!(words.contains(o.as_str()), "{name}: bash does not offer {o}");
        }
        syntax_ok("bash", &bash, d.path(), name);
        // And bash really completes with it: an option, and the values of --generate.
        let script = d.path().join(format!("{name}.bash"));
        assert!(
            bash_complete(&script, name, &["--gen"]).contains(&"--generate".to_string()),
            "{name}"
        );
        assert_eq!(
            bash_complete(&script, name, &["--generate", ""]),
            ["bash", "zsh", "fish", "man"],
            "{name}"
        );

        let z = generated(name, &exe, "zsh");
        assert!(z.starts_with(&format!("#compdef {name}\n")), "{name}:\n{z}");
        assert!(z.contains(&format!("\n_{name}() {{\n")), "{name}:\n{z}");
        for o in &options {
            assert!(zsh_offers(&z, o), "{name}: zsh lacks {o}");
        }
        if zsh {
            syntax_ok("zsh", &z, d.path(), name);
        }

        let f = generated(name, &exe, "fish");
        let prefix = format!("complete -c {name} ");
        assert!(f.lines().any(|l| l.starts_with(&prefix)), "{name}:\n{f}");
        for o in &options {
            let long = format!(" -l {} ", &o[2..]);
            assert!(
                f.lines().any(|l| l.starts_with(&prefix) && l.contains(&long)),
                "{name}: fish lacks {o}"
            );
        }
        if fish {
            syntax_ok("fish", &f, d.path(), name);
        }
    }
}

#[test]
fn every_command_has_a_man_page() {
    let d = tempdir();
    let groff = Command::new("groff")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !groff {
        eprintln!("skipped: rendering the man pages (groff is not installed)");
    }
    for (name, exe) in commands() {
        let man = generated(name, &exe, "man");
        assert!(man.contains(&format!("\n.TH {name} 1 ")), "{name}:\n{man}");
        for section in [
            ".SH NAME\n",
            ".SH SYNOPSIS\n",
            ".SH DESCRIPTION\n",
            ".SH OPTIONS\n",
            ".SH EXAMPLES\n.nf\n",
        ] {
            assert!(man.contains(section), "{name}: no {section:?}:\n{man}");
        }
        // The examples are the command's own, line for line.
        let examples = &man[man.find(".SH EXAMPLES").unwrap()..];
        let own = format!("{name} ");
        assert!(
            examples.lines().any(|l| l.trim_start().starts_with(&own)),
            "{name}: {examples}"
        );
        let options = help_options(name, &exe);
        for o in &options {
            let roff = format!("\\fB{}\\fR", o.replace('-', "\\-"));
            assert!(man.contains(&roff), "{name}: the man page lacks {o}");
        }
        if groff {
            let file = d.path().join(format!("{name}.1"));
            fs::write(&file, &man).unwrap();
            // Plain text: no overstriking, no escape sequences.
            let o = Command::new("groff")
                .args(["-man", "-Tascii", "-ww", "-P-bcou"])
                .arg(&file)
                .output()
                .unwrap();
            assert!(o.status.success(), "groff {name}.1: {}", stderr(&o));
            assert!(!stderr(&o).contains("warning"), "groff {name}.1: {}", stderr(&o));
            let text = String::from_utf8_lossy(&o.stdout);
            assert!(
                text.contains("EXAMPLES") && text.contains("--generate"),
                "{name}: {text}"
            );
        }
    }
}

#[test]
fn help_explains_every_command_with_examples() {
    for (name, exe) in commands() {
        let flag = if name == "unixperf" { "-help" } else { "--help" };
        let o = run(&exe, &[flag]);
        assert!(o.status.success(), "{name} {flag}: {}", stderr(&o));
        let help = stdout(&o);
        let mut examples = help.lines().skip_while(|l| !l.eq_ignore_ascii_case("examples:"));
        assert!(examples.next().is_some(), "{name}: no Examples:\n{help}");
        // At least one example, a command line of this command.
        let first = examples.next().unwrap_or("").trim_start();
        assert!(
            first.starts_with(&format!("{name} ")),
            "{name}: first example {first:?}"
        );
        assert!(help.contains("--generate") || help.contains("-generate"), "{name}");
    }
}

#[test]
fn usage_errors_say_what_to_do() {
    let cases: &[(&str, &[&str], &str)] = &[
        ("uprun", &[], "Usage: uprun <VMLINUX> <OUTDIR> [PARALLELISM]"),
        ("upcmp", &["before"], "<OUTDIR2>"),
        (
            "prfcmp",
            &["a", "b", "--format", "xml"],
            "[possible values: text, csv, json, markdown, mail]",
        ),
        ("upsrun", &["auto", "out", "--freq", "0"], "0 is not in 1..=100000"),
        ("runmany", &[], "usage: runmany num command args ..."),
        ("runmany", &["five", "true"], "give a whole number from 1 up"),
        ("hackdiff", &["a", "b"], "Usage: hackdiff [OPTIONS] [FILE]"),
        ("feat", &["--debugfs"], "a value is required for '--debugfs <DIR>'"),
        ("unixperf", &["-forkwiat"], "did you mean -forkwait?"),
        (
            "unixperf",
            &["-getpid", "-loop"],
            "-loop expects a number of operations after it",
        ),
    ];
    let all = commands();
    let exe = |name: &str| all.iter().find(|(n, _)| *n == name).unwrap().1.clone();
    for (name, args, hint) in cases {
        let o = run(&exe(name), args);
        assert!(!o.status.success(), "{name} {args:?} succeeded");
        assert!(stderr(&o).contains(hint), "{name} {args:?}: {}", stderr(&o));
        assert!(o.stdout.is_empty(), "{name} {args:?}: {}", stdout(&o));
    }
    // --generate names what it takes, for every command.
    for (name, exe) in &all {
        let o = run(exe, &["--generate", "csh"]);
        assert_eq!(o.status.code(), Some(2), "{name}");
        let err = stderr(&o);
        assert!(
            err.contains("[possible values: bash, zsh, fish, man]") || err.contains("one of bash, zsh, fish, man"),
            "{name}: {err}"
        );
    }
}

/// A command's own --generate (and --help) after runmany's command is the command's.
#[test]
fn runmany_passes_generate_to_its_command() {
    let d = tempdir();
    let bench = d.path().join("bench.sh");
    fs::write(&bench, "echo \"$*\" >> \"$(dirname \"$0\")/args\"; echo 'Time: 1.5'\n").unwrap();
    let o = run_in(
        d.path(),
        env!("CARGO_BIN_EXE_runmany"),
        &["2", "sh", bench.to_str().unwrap(), "--generate", "bash", "--help"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), " 1.500  1.500     Average 1.500   stdev 0.0%\n");
    assert_eq!(
        fs::read_to_string(d.path().join("args")).unwrap(),
        "--generate bash --help\n".repeat(2)
    );
}

#[test]
fn install_shell_writes_every_completion_and_man_page() {
    let d = tempdir();
    let bin = d.path().join("bin");
    fs::create_dir(&bin).unwrap();
    for (name, exe) in commands() {
        std::os::unix::fs::symlink(exe, bin.join(name)).unwrap();
    }
    let prefix = d.path().join("prefix");
    let script = repo().join("scripts/install-shell");
    let args = ["--bin-dir", bin.to_str().unwrap(), "--prefix", prefix.to_str().unwrap()];
    let o = run_in(d.path(), script.to_str().unwrap(), &args);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("of 8 commands written"), "{}", stdout(&o));
    let share = prefix.join("share");
    for (name, exe) in commands() {
        for (file, what) in [
            (format!("bash-completion/completions/{name}"), "bash"),
            (format!("zsh/site-functions/_{name}"), "zsh"),
            (format!("fish/vendor_completions.d/{name}.fish"), "fish"),
            (format!("man/man1/{name}.1"), "man"),
        ] {
            let written = fs::read_to_string(share.join(&file)).unwrap_or_else(|e| panic!("{file}: {e}"));
            assert_eq!(written, generated(name, &exe, what), "{file}");
        }
    }
    let mut files: Vec<_> = walk(&share);
    files.sort();
    assert_eq!(files.len(), 32, "{files:?}");
    assert!(files.iter().all(|f| !f.ends_with(".tmp")), "{files:?}");

    // A command that is not installed is named, with the fix.
    fs::remove_file(bin.join("unixperf")).unwrap();
    let o = run_in(d.path(), script.to_str().unwrap(), &args);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains(": unixperf\n"), "{}", stderr(&o));
    assert!(stderr(&o).contains("cargo install --path unixperf"), "{}", stderr(&o));
}

fn walk(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for e in fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p.display().to_string());
        }
    }
    out
}
