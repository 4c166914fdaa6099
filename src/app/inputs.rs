//! The checks of a command's arguments before anything is read: an input of the wrong
//! kind gets a message that says what was given, what was expected, and the command
//! line that would do it.

use crate::store::outdir::RUN_MARKER;
use crate::store::prfout::PRFOUT_FILE;
use std::path::Path;

/// What a path on the command line is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Missing,
    /// A regular file (or anything not a directory).
    File,
    /// A directory uprun wrote (it has the run marker).
    Run,
    /// A test directory of a run (a `prfout`, or repetitions `r1/`...).
    Test,
    /// Another directory.
    Dir,
}

fn kind(p: &Path) -> Kind {
    match p.metadata() {
        Err(_) => Kind::Missing,
        Ok(m) if !m.is_dir() => Kind::File,
        Ok(_) if p.join(RUN_MARKER).exists() => Kind::Run,
        Ok(_) if p.join(PRFOUT_FILE).exists() || p.join("r1").join(PRFOUT_FILE).exists() => Kind::Test,
        Ok(_) => Kind::Dir,
    }
}

/// The tests of the run in `dir` that have a profile, by name.
fn tests_of(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| kind(&e.path()) == Kind::Test)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn shown(p: &Path) -> String {
    p.display().to_string()
}

/// upcmp compares two runs: a file given for a run is most likely a perf recording
/// (`--perf`), and a test directory a profile (prfcmp).
pub fn check_upcmp_runs(dir1: &Path, dir2: &Path, results_dir: &Path) -> Result<(), String> {
    let (k1, k2) = (kind(dir1), kind(dir2));
    let (a, b, r) = (shown(dir1), shown(dir2), shown(results_dir));
    for (p, k, which) in [(&a, k1, "OUTDIR1"), (&b, k2, "OUTDIR2")] {
        match k {
            Kind::File => {
                return Err(format!(
                    "{p} ({which}) is a file, not a directory written by uprun; to compare two perf recordings \
                     (perf.data, perf script output or folded stacks) add --perf: upcmp --perf {a} {b} {r}"
                ))
            }
            Kind::Test => {
                let (pa, pb) = (profile_path(dir1), profile_path(dir2));
                return Err(format!(
                    "{p} ({which}) is the directory of one test, not a whole run; give the run's directory, or \
                     compare the two tests' profiles with prfcmp {pa} {pb}"
                ));
            }
            Kind::Missing => {
                return Err(format!(
                    "{p}: no such directory ({which}); give a directory written by uprun"
                ))
            }
            Kind::Run | Kind::Dir => {}
        }
    }
    Ok(())
}

/// The runs pooled into the base (`--baseline`) must be other runs than the two compared
/// and than each other: a run counted twice passes its repetitions for independent ones
/// (the noise shrinks) and pulls the base toward the change. The same directory by any
/// spelling (`run`, `./run/`, a link to it) is found by its device and inode.
pub fn check_baselines(dir1: &Path, dir2: &Path, baselines: &[impl AsRef<Path>]) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    let id = |p: &Path| p.metadata().ok().map(|m| (m.dev(), m.ino()));
    let mut seen: Vec<(String, Option<(u64, u64)>)> = vec![
        (format!("{} (OUTDIR1)", shown(dir1)), id(dir1)),
        (format!("{} (OUTDIR2)", shown(dir2)), id(dir2)),
    ];
    for b in baselines {
        let b = b.as_ref();
        let this = id(b);
        if let Some((other, _)) = seen.iter().find(|(_, i)| i.is_some() && *i == this) {
            return Err(format!(
                "--baseline {} is the same directory as {other}: a run pooled twice counts its repetitions \
                 twice; give each run once, and as a baseline only other runs of the base",
                shown(b)
            ));
        }
        seen.push((format!("--baseline {}", shown(b)), this));
    }
    Ok(())
}

/// What prfcmp reads of a test directory: the directory itself, or its first
/// repetition (`getpid/r1`) when the test was repeated.
fn profile_path(test: &Path) -> String {
    if !test.join(PRFOUT_FILE).exists() && test.join("r1").join(PRFOUT_FILE).exists() {
        shown(&test.join("r1"))
    } else {
        shown(test)
    }
}

/// The warning of a comparison of a run with itself: every difference is zero.
pub fn same_run(dir1: &Path, dir2: &Path) -> Option<String> {
    let (a, b) = (std::fs::canonicalize(dir1).ok()?, std::fs::canonicalize(dir2).ok()?);
    (a == b).then(|| {
        format!(
            "run 1 ({}) and run 2 ({}) are the same run: every change below is zero; give two runs",
            shown(dir1),
            shown(dir2)
        )
    })
}

/// RESULTS_DIR is a directory upcmp writes: an existing file there is a mistake to name.
pub fn check_results_dir(results_dir: &Path) -> Result<(), String> {
    // A link is left to the claim, which never follows one.
    match results_dir.symlink_metadata() {
        Ok(m) if m.is_file() => Err(format!(
            "{} (RESULTS_DIR) is an existing file, not a directory: upcmp writes a directory of results \
             (results, results.html, results.csv, results.json); give the name of a new directory",
            shown(results_dir)
        )),
        _ => Ok(()),
    }
}

/// prfcmp compares two profiles: a whole run is not one, but each of its tests is.
pub fn check_prfcmp_profile(path: &Path, other: &Path) -> Result<(), String> {
    if kind(path) != Kind::Run {
        return Ok(());
    }
    let tests = tests_of(path);
    let p = shown(path);
    let example = match tests.first() {
        Some(t) => format!(
            ", e.g. prfcmp {} {}",
            path.join(t).display(),
            if kind(other) == Kind::Run {
                other.join(t).display().to_string()
            } else {
                shown(other)
            }
        ),
        None => String::new(),
    };
    let list = if tests.is_empty() {
        "it has no test with a profile".to_string()
    } else {
        format!("its tests: {}", tests.join(", "))
    };
    Err(format!(
        "{p} is a whole run written by uprun, not a profile; give one of its test directories ({list}){example}; \
         or compare the whole runs with upcmp"
    ))
}

/// uprun's first argument is the kernel image and its second the run's directory: a
/// directory given as the first is most likely the two swapped.
pub fn check_uprun_arguments(tool: &str, vmlinux: Option<&Path>, outdir: &Path) -> Result<(), String> {
    // `uprun rX auto` with no rX yet: 'auto' is a VMLINUX, never an OUTDIR (a directory
    // given as VMLINUX is said below).
    if let Some(v) = vmlinux.filter(|v| outdir.as_os_str() == "auto" && !v.exists()) {
        return Err(format!(
            "the arguments look swapped: {tool} takes VMLINUX first (the running kernel's ELF image, or 'auto') \
             and OUTDIR second (the directory the run is written to); 'auto' was given as OUTDIR and {} as \
             VMLINUX: {tool} auto {}",
            shown(v),
            shown(v)
        ));
    }
    let Some(v) = vmlinux.filter(|v| v.is_dir()) else {
        return Ok(());
    };
    let swapped = if outdir.as_os_str() == "auto" || outdir.is_file() {
        format!("; the arguments look swapped: {tool} {} {}", shown(outdir), shown(v))
    } else {
        String::new()
    };
    Err(format!(
        "{} is a directory, but the first argument is VMLINUX: the running kernel's ELF image, or 'auto'; \
         the second, OUTDIR ({}), is the directory the run is written to{swapped}",
        shown(v),
        shown(outdir)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn swapped_uprun_arguments_are_named() {
        let d = tempfile::tempdir().unwrap();
        let e = check_uprun_arguments("uprun", Some(d.path()), Path::new("auto")).unwrap_err();
        assert!(e.contains("the first argument is VMLINUX"), "{e}");
        assert!(
            e.ends_with(&format!("look swapped: uprun auto {}", d.path().display())),
            "{e}"
        );
        assert!(check_uprun_arguments("uprun", None, d.path()).is_ok());
        let e = check_uprun_arguments("upsrun", Some(&d.path().join("rX")), Path::new("auto")).unwrap_err();
        assert!(
            e.starts_with("the arguments look swapped: upsrun takes VMLINUX first"),
            "{e}"
        );
    }

    #[test]
    fn a_run_given_to_prfcmp_lists_its_tests() {
        let d = tempfile::tempdir().unwrap();
        crate::fsio::write_atomic(&d.path().join(RUN_MARKER), b"", 0o644).unwrap();
        for t in ["getpid", "forkwait"] {
            std::fs::create_dir(d.path().join(t)).unwrap();
            crate::fsio::write_atomic(&d.path().join(t).join(PRFOUT_FILE), b"", 0o644).unwrap();
        }
        let e = check_prfcmp_profile(d.path(), Path::new("x.data")).unwrap_err();
        assert!(e.contains("its tests: forkwait, getpid"), "{e}");
        assert!(
            e.contains(&format!("e.g. prfcmp {}/forkwait x.data", d.path().display())),
            "{e}"
        );
    }
}
