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

/// The usage text of `-help`.
pub const USAGE: &str = "\
usage: unixperf -TEST... [options]
       unixperf -all [options]
       unixperf -list

Runs each test: -repeat passes of -loop operations, one result line per pass and a
total (trep) line, x11perf style. Without -loop, the operations per pass are calibrated
so that a pass takes -time seconds.

options:
  -all              run the standard tests (those -list shows without *)
  -list             list the tests and their descriptions
  -loop N           operations per pass (default: calibrate)
  -repeat R         passes per test (default 5)
  -time S           seconds per calibrated pass (default 5)
  -mp N             run N copies at once, each printing its lines, plus an aggregate line
  -pin              pin copy k to the k-th usable CPU
  -scaling 1,2,4    table of nanoseconds per operation at these numbers of copies
  -tmpdir DIR       where to make the scratch directory (default $TMPDIR or /tmp)
hackbench:
  -groups G         groups of senders and receivers (default 10)
  -fds F            senders, and receivers, per group (default 20)
  -msgs M           messages per sender to each receiver (default 100)
  -datasize D       bytes per message (default 100)
  -threads          threads instead of processes
  -pipe             pipes instead of socketpairs
";

/// Parses the arguments (without the program name).
pub fn parse<S: AsRef<str>>(args: &[S]) -> Result<Config, UsageError> {
    let mut cfg = Config::default();
    let mut it = args.iter().map(AsRef::as_ref);
    while let Some(arg) = it.next() {
        let Some(name) = arg.strip_prefix('-') else {
            return Err(UsageError(format!(
                "unexpected argument {arg:?}: tests and options start with -"
            )));
        };
        // Also take GNU-style --loop.
        let name = name.strip_prefix('-').unwrap_or(name);
        let mut value = |what: &str| {
            it.next()
                .ok_or_else(|| UsageError(format!("-{name} expects {what} after it")))
        };
        match name {
            "all" => cfg.tests.extend(suite::standard()),
            "list" => cfg.list = true,
            "help" | "h" => cfg.help = true,
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
            _ => match suite::resolve(name) {
                Some(tests) => cfg.tests.extend(tests),
                None => return Err(UsageError(format!("unknown test or option {arg}"))),
            },
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
    if cfg.tests.is_empty() && !cfg.list && !cfg.help {
        return Err(UsageError(
            "no test given: name tests such as -forkwait, or -all".into(),
        ));
    }
    Ok(cfg)
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
            "unexpected argument \"getpid\": tests and options start with -"
        );
        assert_eq!(e(&[]), "no test given: name tests such as -forkwait, or -all");
        assert!(e(&["-getpid", "-mp", "2", "-scaling", "1"]).contains("exclude"));
    }
}
