//! The test list: where it comes from, and each line made ready to run, all checked before
//! anything runs.

use crate::fsio::{self, Links};
use crate::store::outdir::{test_dir_names, RUN_FILES};
use crate::store::unquoted;
use std::path::{Path, PathBuf};
use upcmp_parsers::test_list::{parse_test_list, TestLine, TestSpec};
use upcmp_parsers::ParseError;

/// The most a test list may hold.
pub const TEST_LIST_CAP: u64 = 1 << 20;

/// The options a unixperf line gets when it has none, as the original.
pub const DEFAULT_UNIXPERF_ARGS: &[&str] = &["-loop", "200000", "-repeat", "2"];

/// The list used when there is no `./test_list` and none is given: about a minute on a
/// 2-CPU machine.
pub const DEFAULT_TEST_LIST: &str = "\
# uprun's built-in test list (used when ./test_list does not exist)
getpid -loop 12000000 -repeat 2
ezsyscalls -loop 1800000 -repeat 2
forkwait -loop 12000 -repeat 2
pipeping1 -loop 80000 -repeat 2
select16r -loop 1800000 -repeat 2
openclose -loop 1000000 -repeat 2
createunlink -loop 30000 -repeat 2
devzerowalk -loop 5000 -repeat 2
hackbench -groups 4 -msgs 100 -loop 10 -repeat 2
";

/// Why a test list cannot run.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// The list could not be read.
    #[error("reading the test list {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// A line is malformed or names an unknown test.
    #[error(transparent)]
    Parse(#[from] ParseError),
    /// A unixperf test, but no unixperf program.
    #[error(
        "{list}:{line}: '{test}' is a unixperf test, but no unixperf program was found next to uprun \
         or on PATH; build it with 'cargo build --release --workspace' or name the program to use"
    )]
    NoUnixperf {
        /// The list's name.
        list: String,
        /// The line.
        line: usize,
        /// The test.
        test: String,
    },
}

/// A test list's text and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestList {
    /// Its text.
    pub text: String,
    /// Its name in messages: the file, or `(built-in test list)`.
    pub name: String,
    /// Whether it is uprun's built-in list.
    pub builtin: bool,
    /// Whether its file was reached through a symbolic link (errors then quote nothing).
    pub through_link: bool,
}

impl TestList {
    /// The given file, `./test_list`, or the built-in list.
    pub fn load(given: Option<&Path>) -> Result<Self, PlanError> {
        let path = match given {
            Some(p) => p.to_path_buf(),
            None if Path::new("test_list").symlink_metadata().is_ok() => PathBuf::from("test_list"),
            None => {
                return Ok(TestList {
                    text: DEFAULT_TEST_LIST.to_string(),
                    name: "(built-in test list)".to_string(),
                    builtin: true,
                    through_link: false,
                })
            }
        };
        // A regular file only (a FIFO would block, /dev/zero never end), of a sane size.
        let text = fsio::read_text(&path, Links::Follow, TEST_LIST_CAP).map_err(|source| PlanError::Io {
            path: path.clone(),
            source,
        })?;
        Ok(TestList {
            text,
            name: path.display().to_string(),
            builtin: false,
            through_link: fsio::is_symlink(&path),
        })
    }
}

/// Finds the unixperf program: next to this executable, else in an absolute directory of
/// PATH. An empty or relative PATH entry names the current directory (or one under it),
/// which anyone may have written: uprun runs as root, so the suite's own program is never
/// looked up there.
pub fn find_unixperf() -> Option<PathBuf> {
    let beside = std::env::current_exe().ok()?.parent()?.join("unixperf");
    if beside.is_file() {
        return Some(beside);
    }
    absolute_path_dirs()
        .into_iter()
        .map(|d| d.join("unixperf"))
        .find(|p| p.is_file())
}

/// The directories of PATH that are absolute, in order: empty and relative entries are
/// left out.
pub fn absolute_path_dirs() -> Vec<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path).filter(|d| d.is_absolute()).collect()
}

/// A test of the list, ready to run.
#[derive(Debug, Clone)]
pub struct PlannedTest {
    /// Its directory name.
    pub dir: String,
    /// The line it came from.
    pub line: TestLine,
    /// The program and arguments of one copy.
    pub argv: Vec<String>,
    /// What the progress line shows in parentheses.
    pub shown_args: String,
}

/// Parses and validates the whole list before anything runs: every unixperf test must
/// exist (an unknown one is an error naming its line).
pub fn plan(list: &TestList, unixperf: Option<&Path>) -> Result<Vec<PlannedTest>, PlanError> {
    plan_lines(list, unixperf).map_err(|e| match e {
        PlanError::Parse(p) => PlanError::Parse(unquoted(p, list.through_link)),
        e => e,
    })
}

fn plan_lines(list: &TestList, unixperf: Option<&Path>) -> Result<Vec<PlannedTest>, PlanError> {
    let name = list.name.as_str();
    let lines = parse_test_list(&list.text, name)?;
    let dirs = test_dir_names(&lines);
    // A test named like a file of the run would collide with it half-way through the run.
    if let Some((line, dir)) = lines.iter().zip(&dirs).find(|(_, d)| RUN_FILES.contains(&d.as_str())) {
        return Err(ParseError {
            file: name.to_string(),
            line: line.line,
            column: 1,
            expected: format!(
                "a test name other than the files of a run ({}); name the command 'NAME: command'",
                RUN_FILES.join(", ")
            ),
            found: dir.clone(),
        }
        .into());
    }
    let mut out = Vec::new();
    for (line, dir) in lines.into_iter().zip(dirs) {
        let (argv, shown_args) = match &line.spec {
            TestSpec::Unixperf { test, args } => {
                check_unixperf_line(&list.text, name, line.line, usize::from(line.key.is_some()), test, args)?;
                let exe = unixperf.ok_or_else(|| PlanError::NoUnixperf {
                    list: name.to_string(),
                    line: line.line,
                    test: test.clone(),
                })?;
                let args: Vec<String> = if args.is_empty() {
                    DEFAULT_UNIXPERF_ARGS.iter().map(|s| s.to_string()).collect()
                } else {
                    args.clone()
                };
                let mut argv = vec![exe.display().to_string(), format!("-{test}")];
                argv.extend(args.iter().cloned());
                (argv, args.join(" "))
            }
            TestSpec::External { command, .. } => {
                check_external_command(&list.text, name, line.line, command)?;
                (vec!["/bin/sh".into(), "-c".into(), command.clone()], command.clone())
            }
        };
        out.push(PlannedTest {
            dir,
            line,
            argv,
            shown_args,
        });
    }
    Ok(out)
}

/// The 1-based column of each white-space-separated word of `line`.
fn word_columns(line: &str) -> Vec<usize> {
    let mut cols = Vec::new();
    let mut prev_blank = true;
    for (k, c) in line.chars().enumerate() {
        let blank = c.is_whitespace();
        if !blank && prev_blank {
            cols.push(k + 1);
        }
        prev_blank = blank;
    }
    cols
}

/// Checks a unixperf line with unixperf's own parser: an unknown test, an unknown or
/// misspelt option, a missing or malformed value are errors naming the line and column,
/// with the nearest valid spelling.
/// `first` is the test's word on the line: 1 after a `key=KEY`, else 0.
fn check_unixperf_line(
    text: &str,
    file: &str,
    line_no: usize,
    first: usize,
    test: &str,
    args: &[String],
) -> Result<(), ParseError> {
    let Err(problem) = unixperf::options::check_test_args(test, args) else {
        return Ok(());
    };
    let columns = text.lines().nth(line_no - 1).map(word_columns).unwrap_or_default();
    // Word `first` is the test, word first + k + 1 the k-th argument.
    let word = first + problem.arg.map_or(0, |k| k + 1);
    let column = columns.get(word).or(columns.last()).copied().unwrap_or(1);
    let hint = problem
        .suggestion
        .as_ref()
        .map(|s| format!(" (did you mean {s}?)"))
        .unwrap_or_default();
    let expected = match problem.arg {
        None => format!("a unixperf test name (see 'unixperf -list') or 'NAME: command'{hint}"),
        Some(_) => format!("{}{hint}", problem.expected),
    };
    Err(ParseError {
        file: file.to_string(),
        line: line_no,
        column,
        expected,
        found: problem.found,
    })
}

/// Words that make a command line more than a program and its arguments: what follows
/// them is the shell's business, so the line is not checked.
const SHELL_WORDS: &[&str] = &[
    "cd", "exec", "eval", "export", "set", "source", ".", "if", "for", "while", "until", "case", "{", "(", "!", "time",
    "command", "builtin", "true", "false", ":", "test", "[", "echo", "printf", "read", "ulimit", "umask", "trap",
    "wait", "sleep",
];

/// Whether `program` (a command's first word, without `/`) is an executable file in a
/// directory of PATH.
fn on_path(program: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|p| std::env::split_paths(&p).any(|d| is_executable(&d.join(program))))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    p.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Checks that an external line's program exists (on PATH, or at the path given) before
/// anything runs: a typo would otherwise fail only when its turn comes. Lines that begin
/// with a shell keyword, a builtin or an assignment (`X=1 cmd`) are left to the shell.
fn check_external_command(text: &str, file: &str, line_no: usize, command: &str) -> Result<(), ParseError> {
    let Some(program) = command.split_whitespace().next() else {
        return Ok(());
    };
    let shell_syntax = |c: char| {
        matches!(
            c,
            '$' | '`' | '(' | ')' | ';' | '&' | '|' | '<' | '>' | '=' | '*' | '?' | '~' | '"' | '\'' | '\\'
        )
    };
    if SHELL_WORDS.contains(&program) || program.contains(shell_syntax) {
        return Ok(());
    }
    let found = if program.contains('/') {
        is_executable(Path::new(program))
    } else {
        on_path(program)
    };
    if found {
        return Ok(());
    }
    let raw = text.lines().nth(line_no - 1).unwrap_or_default();
    // The command follows the line's first ':'.
    let after = raw.find(':').map_or(0, |k| k + 1);
    let column = raw[after..]
        .find(program)
        .map_or(1, |k| raw[..after + k].chars().count() + 1);
    let expected = if program.contains('/') {
        "an executable file at that path (relative paths are from the directory uprun runs in)".to_string()
    } else {
        "a program on PATH (or its path), as the shell that runs the line would find it".to_string()
    };
    Err(ParseError {
        file: file.to_string(),
        line: line_no,
        column,
        expected,
        found: program.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(text: &str) -> TestList {
        TestList {
            text: text.into(),
            name: "tl".into(),
            builtin: false,
            through_link: false,
        }
    }

    #[test]
    fn plan_validates_the_whole_list_first() {
        let exe = Path::new("/usr/bin/unixperf");
        let t = plan(&list("forkwait\nhb: echo hi\npipeping1 -loop 10\n"), Some(exe)).unwrap();
        assert_eq!(
            t[0].argv,
            ["/usr/bin/unixperf", "-forkwait", "-loop", "200000", "-repeat", "2"]
        );
        assert_eq!(t[0].shown_args, "-loop 200000 -repeat 2");
        assert_eq!(t[1].argv, ["/bin/sh", "-c", "echo hi"]);
        assert_eq!(t[2].argv[2..], ["-loop", "10"]);
        let e = plan(&list("forkwait\nforkwiat\n"), Some(exe)).unwrap_err().to_string();
        assert!(e.starts_with("tl:2:1: expected a unixperf test name"), "{e}");
        assert!(e.contains("(did you mean forkwait?)"), "{e}");
        let e = plan(&list("forkwait\n"), None).unwrap_err().to_string();
        assert!(e.contains("no unixperf program was found"), "{e}");
        assert!(
            plan(&list("x: true\n"), None).is_ok(),
            "external commands need no unixperf"
        );
    }

    #[test]
    fn options_are_checked_by_unixperf_itself() {
        let exe = Some(Path::new("/usr/bin/unixperf"));
        let e = plan(&list("getpid\n  pipeping1 -lop 1000\n"), exe)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("tl:2:13: expected "), "{e}");
        assert!(
            e.contains("(did you mean -loop?)") && e.contains("found \"-lop\""),
            "{e}"
        );
        let e = plan(&list("forkwait -loop x\n"), exe).unwrap_err().to_string();
        assert!(e.starts_with("tl:1:16: expected "), "{e}");
        let e = plan(&list("forkwait -loop\n"), exe).unwrap_err().to_string();
        assert!(e.starts_with("tl:1:"), "{e}");
        assert!(plan(&list("forkwait -loop 10 -repeat 2\nhackbench -groups 2\n"), exe).is_ok());
        // After a key the columns still point at the word at fault.
        let e = plan(&list("key=fw forkwait -loop x\n"), exe).unwrap_err().to_string();
        assert!(e.starts_with("tl:1:23: expected "), "{e}");
        let e = plan(&list("key=fw forkwiat\n"), exe).unwrap_err().to_string();
        assert!(e.starts_with("tl:1:8: expected a unixperf test name"), "{e}");
        let t = plan(&list("key=fw forkwait -loop 10\n"), exe).unwrap();
        assert_eq!(t[0].argv[1..], ["-forkwait", "-loop", "10"]);
    }

    #[test]
    fn external_commands_must_exist() {
        let e = plan(&list("x: true\nfooo:  nonexistent_cmd -a 1\n"), None)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("tl:2:8: expected a program on PATH"), "{e}");
        assert!(e.contains("found \"nonexistent_cmd\""), "{e}");
        let e = plan(&list("y: ./no/such/bench\n"), None).unwrap_err().to_string();
        assert!(e.starts_with("tl:1:4: expected an executable file at that path"), "{e}");
        // What the shell resolves itself is left to it.
        assert!(plan(&list("a: sh -c 'exit 0'\nb: X=1 env\nc: cd /tmp && ls\n"), None).is_ok());
    }

    #[test]
    fn tests_named_like_the_files_of_a_run_are_refused() {
        for reserved in RUN_FILES {
            let e = plan(&list(&format!("x: true\n{reserved}: true\n")), None)
                .unwrap_err()
                .to_string();
            assert!(
                e.starts_with("tl:2:1: expected a test name other than the files of a run"),
                "{e}"
            );
            assert!(e.contains(&format!("found \"{reserved}\"")), "{e}");
        }
    }

    #[test]
    fn the_built_in_list_is_valid() {
        let t = plan(&list(DEFAULT_TEST_LIST), Some(Path::new("unixperf"))).unwrap();
        assert!(t.len() >= 5);
    }
}
