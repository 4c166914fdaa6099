//! The command line, in the original's single-dash style: `unixperf -forkwait -loop 1000`.

use std::fmt;
use std::path::PathBuf;

use crate::bench::sched::HackbenchConfig;
use crate::suite::{self, TestDef};

/// The most copies `-mp` and `-scaling` start.
pub const MAX_COPIES: u32 = 1024;

/// Everything the command line says.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Config {
    /// Tests to run, in order, each once.
    pub tests: Vec<&'static TestDef>,
    /// `-list`: print the tests and exit.
    pub list: bool,
    /// `-help`.
    pub help: bool,
    /// `-loop N`: operations per pass; `None` calibrates to `seconds`.
    pub count: Option<u64>,
    /// `-repeat R`: passes per test.
    pub repeat: u32,
    /// `-time S`: seconds a calibrated pass should take.
    pub seconds: f64,
    /// `-mp N`: copies running at once.
    pub copies: u32,
    /// `-pin`: pin copy k to the k-th usable CPU.
    pub pin: bool,
    /// `-scaling 1,2,4`: print a table of nanoseconds per operation at these copy counts.
    pub scaling: Option<Vec<u32>>,
    /// `-tmpdir DIR`: where the scratch directory is made.
    pub tmpdir: PathBuf,
    /// `-groups`, `-fds`, `-msgs`, `-datasize`, `-threads`, `-pipe`.
    pub hackbench: HackbenchConfig,
    /// `-generate WHAT`: print completions or the man page (the unixperf program does).
    pub generate: Option<Generate>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            tests: Vec::new(),
            list: false,
            help: false,
            count: None,
            repeat: 5,
            seconds: 5.0,
            copies: 1,
            pin: false,
            scaling: None,
            tmpdir: std::env::var_os("TMPDIR")
                .map(PathBuf::from)
                .unwrap_or_else(|| PathBuf::from("/tmp")),
            hackbench: HackbenchConfig::default(),
            generate: None,
        }
    }
}

/// A command line unixperf cannot run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageError(pub String);

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (unixperf -help shows the options, -list the tests)", self.0)
    }
}

impl std::error::Error for UsageError {}

/// `-generate`: what the unixperf program prints instead of running tests. It prints it from
/// a clap description of this command line, built from [`OPTIONS`] and the suite's tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Generate {
    /// Bash completions.
    Bash,
    /// Zsh completions.
    Zsh,
    /// Fish completions.
    Fish,
    /// A man page (roff).
    Man,
}

impl Generate {
    /// Every value `-generate` takes, as spelled on the command line.
    pub const NAMES: &'static [&'static str] = &["bash", "zsh", "fish", "man"];

    /// The value spelled `name`.
    pub fn from_name(name: &str) -> Option<Generate> {
        match name {
            "bash" => Some(Generate::Bash),
            "zsh" => Some(Generate::Zsh),
            "fish" => Some(Generate::Fish),
            "man" => Some(Generate::Man),
            _ => None,
        }
    }
}

/// Where the usage (and the man page) lists an option.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OptionGroup {
    /// Options of every test.
    General,
    /// Options of the hackbench test.
    Hackbench,
}

/// One option of the command line. [`parse`] accepts exactly these names (and the tests and
/// aliases of [`suite`]); the usage, the completions and the man page are made from them.
#[derive(Debug)]
pub struct OptionDef {
    /// The name after the dash: `loop` for `-loop`.
    pub name: &'static str,
    /// A one-letter spelling, such as `-h`.
    pub short: Option<char>,
    /// What follows the option, as the usage names it (`N`); `None` for a flag.
    pub value: Option<&'static str>,
    /// The values the option takes, when they are a fixed set.
    pub choices: &'static [&'static str],
    /// One line saying what it does.
    pub help: &'static str,
    /// Where it is listed.
    pub group: OptionGroup,
}

const fn flag(name: &'static str, help: &'static str, group: OptionGroup) -> OptionDef {
    OptionDef {
        name,
        short: None,
        value: None,
        choices: &[],
        help,
        group,
    }
}

const fn valued(name: &'static str, value: &'static str, help: &'static str, group: OptionGroup) -> OptionDef {
    OptionDef {
        value: Some(value),
        ..flag(name, help, group)
    }
}

/// Every option, in the order of the usage.
pub static OPTIONS: &[OptionDef] = &[
    flag(
        "all",
        "run the standard tests (those -list shows without *)",
        OptionGroup::General,
    ),
    flag("list", "list the tests and their descriptions", OptionGroup::General),
    valued(
        "loop",
        "N",
        "operations per pass (default: calibrate)",
        OptionGroup::General,
    ),
    valued("repeat", "R", "passes per test (default 5)", OptionGroup::General),
    valued(
        "time",
        "S",
        "seconds per calibrated pass (default 5)",
        OptionGroup::General,
    ),
    valued(
        "mp",
        "N",
        "run N copies at once, each printing its lines, plus an aggregate line",
        OptionGroup::General,
    ),
    flag("pin", "pin copy k to the k-th usable CPU", OptionGroup::General),
    valued(
        "scaling",
        "1,2,4",
        "table of nanoseconds per operation at these numbers of copies",
        OptionGroup::General,
    ),
    valued(
        "tmpdir",
        "DIR",
        "where to make the scratch directory (default $TMPDIR or /tmp)",
        OptionGroup::General,
    ),
    OptionDef {
        choices: Generate::NAMES,
        ..valued(
            "generate",
            "WHAT",
            "print bash, zsh or fish completions, or the man page (man), and exit",
            OptionGroup::General,
        )
    },
    OptionDef {
        short: Some('h'),
        ..flag("help", "print this usage (also -h)", OptionGroup::General)
    },
    valued(
        "groups",
        "G",
        "groups of senders and receivers (default 10)",
        OptionGroup::Hackbench,
    ),
    valued(
        "fds",
        "F",
        "senders, and receivers, per group (default 20)",
        OptionGroup::Hackbench,
    ),
    valued(
        "msgs",
        "M",
        "messages per sender to each receiver (default 100)",
        OptionGroup::Hackbench,
    ),
    valued(
        "datasize",
        "D",
        "bytes per message (default 100)",
        OptionGroup::Hackbench,
    ),
    flag("threads", "threads instead of processes", OptionGroup::Hackbench),
    flag("pipe", "pipes instead of socketpairs", OptionGroup::Hackbench),
];

/// The option spelled `name` (without its dash).
pub fn find_option(name: &str) -> Option<&'static OptionDef> {
    OPTIONS
        .iter()
        .find(|o| o.name == name || o.short.is_some_and(|c| name.chars().eq([c])))
}

/// Command lines to copy, for `-help` and the man page, one a line.
pub const EXAMPLES: &str = "\
unixperf -forkwait -loop 200000 -repeat 2   # uprun's defaults
unixperf -all -time 1 > host.upout          # every standard test, 1 s passes
unixperf -pipeping1 -mp 2 -pin              # 2 copies, one per CPU, plus the aggregate
unixperf -hackbench -groups 4 -threads -loop 10
unixperf -getpid -select -scaling 1,2,4 -loop 1000000
";

/// The synopsis lines of the usage.
pub const SYNOPSIS: &[&str] = &[
    "unixperf -TEST... [options]",
    "unixperf -all [options]",
    "unixperf -list",
    "unixperf -generate bash|zsh|fish|man",
];

/// What the command does, under the synopsis.
pub const ABOUT: &str = "\
Runs each test: -repeat passes of -loop operations, one result line per pass and a
total (trep) line, x11perf style. Without -loop, the operations per pass are calibrated
so that a pass takes -time seconds. Options take one dash, as in the original; the
two-dash spelling (--loop) is accepted too.
";

/// The usage text of `-help`, made from [`OPTIONS`].
pub fn usage() -> String {
    let mut out = String::new();
    for (i, line) in SYNOPSIS.iter().enumerate() {
        out += if i == 0 { "usage: " } else { "       " };
        out += line;
        out += "\n";
    }
    out += "\n";
    out += ABOUT;
    for (group, heading) in [
        (OptionGroup::General, "options:"),
        (OptionGroup::Hackbench, "hackbench:"),
    ] {
        out += if group == OptionGroup::General { "\n" } else { "" };
        out += heading;
        out += "\n";
        for o in OPTIONS.iter().filter(|o| o.group == group) {
            let spelling = match o.value {
                Some(v) => format!("-{} {v}", o.name),
                None => format!("-{}", o.name),
            };
            out += &format!("  {spelling:<18}{}\n", o.help);
        }
    }
    out += "\nexamples:\n";
    for line in EXAMPLES.lines() {
        out += &format!("  {line}\n");
    }
    out
}

/// Parses the arguments (without the program name).
pub fn parse<S: AsRef<str>>(args: &[S]) -> Result<Config, UsageError> {
    let mut cfg = Config::default();
    let mut it = args.iter().map(AsRef::as_ref);
    while let Some(arg) = it.next() {
        let Some(name) = arg.strip_prefix('-') else {
            let hint = suite::resolve(arg).is_some() || find_option(arg).is_some();
            return Err(UsageError(format!(
                "unexpected argument {arg:?}: tests and options start with -{}",
                if hint {
                    format!("; did you mean -{arg}?")
                } else {
                    String::new()
                }
            )));
        };
        // Also take GNU-style --loop.
        let name = name.strip_prefix('-').unwrap_or(name);
        let Some(opt) = find_option(name) else {
            match suite::resolve(name) {
                Some(tests) => cfg.tests.extend(tests),
                None => return Err(unknown(arg, name)),
            }
            continue;
        };
        let name = opt.name;
        let mut value = |what: &str| {
            it.next()
                .ok_or_else(|| UsageError(format!("-{name} expects {what} after it")))
        };
        match name {
            "all" => cfg.tests.extend(suite::standard()),
            "list" => cfg.list = true,
            "help" => cfg.help = true,
            "pin" => cfg.pin = true,
            "threads" => cfg.hackbench.threads = true,
            "pipe" => cfg.hackbench.pipes = true,
            "loop" => cfg.count = Some(positive(name, value("a number of operations")?, u64::MAX)?),
            "repeat" => cfg.repeat = positive(name, value("a number of passes")?, 1_000_000)? as u32,
            "mp" => cfg.copies = positive(name, value("a number of copies")?, MAX_COPIES as u64)? as u32,
            "groups" => cfg.hackbench.groups = positive(name, value("a number of groups")?, 10_000)? as u32,
            "fds" => cfg.hackbench.fds = positive(name, value("a number of senders")?, 1_000)? as u32,
            "msgs" => cfg.hackbench.messages = positive(name, value("a number of messages")?, u32::MAX as u64)? as u32,
            "datasize" => cfg.hackbench.datasize = positive(name, value("a number of bytes")?, 1 << 30)? as usize,
            "time" => {
                let v = value("a number of seconds")?;
                cfg.seconds = match v.parse::<f64>() {
                    Ok(s) if s.is_finite() && s > 0.0 && s <= 86_400.0 => s,
                    _ => {
                        return Err(UsageError(format!(
                            "-time expects seconds between 0 and 86400, got {v:?}"
                        )))
                    }
                };
            }
            "tmpdir" => cfg.tmpdir = PathBuf::from(value("a directory")?),
            "scaling" => {
                let v = value("copy counts such as 1,2,4")?;
                let counts = v
                    .split(',')
                    .map(|c| positive(name, c, MAX_COPIES as u64).map(|n| n as u32))
                    .collect::<Result<Vec<_>, _>>()?;
                cfg.scaling = Some(counts);
            }
            "generate" => {
                let v = value("bash, zsh, fish or man")?;
                let what = Generate::from_name(v).ok_or_else(|| {
                    UsageError(format!(
                        "-generate expects one of {}, got {v:?}",
                        Generate::NAMES.join(", ")
                    ))
                })?;
                cfg.generate = Some(what);
            }
            other => unreachable!("-{other} is in OPTIONS but has no case in parse"),
        }
    }
    // Each test once: upcmp reads a repeated description as another copy.
    let mut seen = std::collections::HashSet::new();
    cfg.tests.retain(|t| seen.insert(t.name));
    if cfg.scaling.is_some() && cfg.copies > 1 {
        return Err(UsageError(
            "-mp and -scaling exclude each other: -scaling chooses the copies".into(),
        ));
    }
    if cfg.tests.is_empty() && !cfg.list && !cfg.help && cfg.generate.is_none() {
        return Err(UsageError(
            "no test given: name tests such as -forkwait, or -all".into(),
        ));
    }
    Ok(cfg)
}

/// The error for an unknown `-name`, naming the closest test, alias or option when one is
/// a typing slip away (`-forkwiat`: did you mean -forkwait?).
fn unknown(arg: &str, name: &str) -> UsageError {
    let names = OPTIONS
        .iter()
        .map(|o| o.name)
        .chain(suite::TESTS.iter().map(|t| t.name))
        .chain(suite::ALIASES.iter().map(|(alias, _)| *alias));
    let limit = if name.chars().count() >= 6 { 2 } else { 1 };
    let closest = names
        .map(|n| (edit_distance(name, n), n))
        .filter(|&(d, _)| d <= limit)
        .min_by_key(|&(d, _)| d);
    match closest {
        Some((_, near)) => UsageError(format!("unknown test or option {arg}; did you mean -{near}?")),
        None => UsageError(format!("unknown test or option {arg}")),
    }
}

/// The Levenshtein distance: single-character insertions, deletions and substitutions.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (diagonal + usize::from(ca != cb)).min(above + 1).min(row[j] + 1);
            diagonal = above;
        }
    }
    row[b.len()]
}

/// A whole number in 1..=max for option `-name`.
fn positive(name: &str, v: &str, max: u64) -> Result<u64, UsageError> {
    match v.parse::<u64>() {
        Ok(n) if n >= 1 && n <= max => Ok(n),
        _ if max == u64::MAX => Err(UsageError(format!(
            "-{name} expects a whole number of at least 1, got {v:?}"
        ))),
        _ => Err(UsageError(format!(
            "-{name} expects a whole number from 1 to {max}, got {v:?}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(cfg: &Config) -> Vec<&str> {
        cfg.tests.iter().map(|t| t.name).collect()
    }

    #[test]
    fn original_style_command_lines() {
        let cfg = parse(&["-forkwait", "-loop", "200000", "-repeat", "2"]).unwrap();
        assert_eq!(names(&cfg), ["forkwait"]);
        assert_eq!((cfg.count, cfg.repeat, cfg.copies), (Some(200_000), 2, 1));
        let cfg = parse(&["-select", "-mp", "2", "-pin", "--time", "0.5"]).unwrap();
        assert_eq!(names(&cfg).len(), 6);
        assert_eq!((cfg.copies, cfg.pin, cfg.seconds), (2, true, 0.5));
        let cfg = parse(&[
            "-hackbench",
            "-groups",
            "2",
            "-fds",
            "4",
            "-msgs",
            "10",
            "-threads",
            "-pipe",
        ])
        .unwrap();
        assert_eq!(
            cfg.hackbench,
            HackbenchConfig {
                groups: 2,
                fds: 4,
                messages: 10,
                datasize: 100,
                threads: true,
                pipes: true
            }
        );
        let cfg = parse(&["-getpid", "-scaling", "1,2,4"]).unwrap();
        assert_eq!(cfg.scaling, Some(vec![1, 2, 4]));
        assert!(parse(&["-list"]).unwrap().list);
        assert!(parse(&["-all"]).unwrap().tests.len() > 40);
    }

    #[test]
    fn duplicates_run_once() {
        assert_eq!(
            names(&parse(&["-getpid", "-getpid", "-forkwait"]).unwrap()),
            ["getpid", "forkwait"]
        );
    }

    #[test]
    fn errors_name_the_option_and_what_it_expects() {
        let e = |args: &[&str]| parse(args).unwrap_err().0;
        assert_eq!(e(&["-nosuch"]), "unknown test or option -nosuch");
        assert_eq!(
            e(&["-getpid", "-loop"]),
            "-loop expects a number of operations after it"
        );
        assert_eq!(
            e(&["-getpid", "-loop", "0"]),
            "-loop expects a whole number of at least 1, got \"0\""
        );
        assert_eq!(
            e(&["-getpid", "-repeat", "x"]),
            "-repeat expects a whole number from 1 to 1000000, got \"x\""
        );
        assert_eq!(
            e(&["-getpid", "-time", "-1"]),
            "-time expects seconds between 0 and 86400, got \"-1\""
        );
        assert_eq!(
            e(&["-getpid", "-scaling", "1,,4"]),
            "-scaling expects a whole number from 1 to 1024, got \"\""
        );
        assert_eq!(
            e(&["getpid"]),
            "unexpected argument \"getpid\": tests and options start with -; did you mean -getpid?"
        );
        assert_eq!(
            e(&["1000"]),
            "unexpected argument \"1000\": tests and options start with -"
        );
        assert_eq!(
            e(&["-getpid", "-generate", "csh"]),
            "-generate expects one of bash, zsh, fish, man, got \"csh\""
        );
        assert_eq!(e(&[]), "no test given: name tests such as -forkwait, or -all");
        assert!(e(&["-getpid", "-mp", "2", "-scaling", "1"]).contains("exclude"));
    }

    #[test]
    fn unknown_names_suggest_the_nearest_test_or_option() {
        let e = |arg: &str| parse(&[arg]).unwrap_err().0;
        assert_eq!(
            e("-forkwiat"),
            "unknown test or option -forkwiat; did you mean -forkwait?"
        );
        assert_eq!(e("--getpd"), "unknown test or option --getpd; did you mean -getpid?");
        assert_eq!(e("-lop"), "unknown test or option -lop; did you mean -loop?");
        // Short names are only corrected by one letter, so -x suggests nothing.
        assert_eq!(e("-x"), "unknown test or option -x");
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("pipe", "pipe"), 0);
    }

    #[test]
    fn generate_needs_no_test() {
        for (name, what) in Generate::NAMES
            .iter()
            .zip([Generate::Bash, Generate::Zsh, Generate::Fish, Generate::Man])
        {
            assert_eq!(Generate::from_name(name), Some(what));
            assert_eq!(parse(&["-generate", name]).unwrap().generate, Some(what));
            assert_eq!(parse(&["--generate", name]).unwrap().generate, Some(what));
        }
        assert_eq!(Generate::from_name("csh"), None);
        assert_eq!(
            parse(&["-generate"]).unwrap_err().0,
            "-generate expects bash, zsh, fish or man after it"
        );
    }

    /// A value each option accepts, by the name the usage gives it.
    fn sample_value(o: &OptionDef) -> Option<&'static str> {
        Some(match o.value? {
            "S" => "0.5",
            "DIR" => "/tmp",
            _ if !o.choices.is_empty() => o.choices[0],
            _ => "2",
        })
    }

    #[test]
    fn every_option_parses_in_both_spellings_and_is_in_the_usage() {
        let usage = usage();
        for o in OPTIONS {
            for dashes in ["-", "--"] {
                let mut args = vec!["-getpid".to_string(), format!("{dashes}{}", o.name)];
                args.extend(sample_value(o).map(String::from));
                parse(&args).unwrap_or_else(|e| panic!("{args:?}: {e}"));
            }
            if let Some(c) = o.short {
                assert!(parse(&[format!("-{c}")]).is_ok(), "-{c}");
            }
            let spelling = match o.value {
                Some(v) => format!("\n  -{} {v} ", o.name),
                None => format!("\n  -{} ", o.name),
            };
            assert!(usage.contains(&spelling), "the usage lacks {spelling:?}");
            assert!(usage.contains(o.help), "the usage lacks the help of -{}", o.name);
        }
    }

    #[test]
    fn no_test_or_alias_is_named_like_an_option() {
        let tests = suite::TESTS.iter().map(|t| t.name);
        for name in tests.chain(suite::ALIASES.iter().map(|(a, _)| *a)) {
            assert!(find_option(name).is_none(), "-{name} is a test and an option");
        }
    }

    #[test]
    fn usage_keeps_its_layout() {
        let usage = usage();
        assert!(usage.starts_with("usage: unixperf -TEST... [options]\n       unixperf -all [options]\n"));
        assert!(
            usage.contains("\noptions:\n  -all              run the standard tests (those -list shows without *)\n")
        );
        assert!(usage.contains("  -tmpdir DIR       where to make the scratch directory (default $TMPDIR or /tmp)\n"));
        assert!(usage.contains("\nhackbench:\n  -groups G         groups of senders and receivers (default 10)\n"));
        assert!(usage.contains("\nexamples:\n  unixperf -forkwait -loop 200000 -repeat 2"));
    }
}
