//! The command line, in the original's single-dash style: `unixperf -forkwait -loop 1000`.
//!
//! One description: [`OPTIONS`] (each option's spelling, what it takes, how that is checked and
//! where it goes in [`Config`]) with the suite's tests and aliases ([`suite::TESTS`],
//! [`suite::ALIASES`]). [`parse`] walks these tables and nothing else, so it accepts exactly
//! them; [`usage`] prints them for `-help`, `-list` lists the tests, and the unixperf program
//! renders the same tables with clap for completions and the man page.
//!
//! Over 1,000 lines with its unit tests; the code alone is under 1,000.

use std::fmt;
use std::path::PathBuf;

use crate::suite::{self, TestDef};
use crate::workload::HackbenchConfig;

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

/// A command line unixperf cannot run: the message, and the argument at fault.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageError {
    /// The index of the argument at fault; `None` when the line as a whole is wrong (no test).
    pub index: Option<usize>,
    /// What was expected there, e.g. `a whole number from 1 to 1000000 after -repeat`.
    pub expected: String,
    /// The argument found there; empty when the arguments ended before it.
    pub found: String,
    /// The nearest valid spelling, for a misspelt name: `-loop` for `-lop`.
    pub suggestion: Option<String>,
    /// What unixperf prints (after `unixperf: `).
    pub message: String,
}

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} (unixperf -help shows the options, -list the tests)",
            self.message
        )
    }
}

impl std::error::Error for UsageError {}

impl UsageError {
    fn new(index: Option<usize>, expected: String, found: &str, message: String) -> UsageError {
        UsageError {
            index,
            expected,
            found: found.to_string(),
            suggestion: None,
            message,
        }
    }

    /// `arg` (at `index`) lacks its dash: `getpid`.
    fn no_dash(index: usize, arg: &str) -> UsageError {
        let known = suite::resolve(arg).is_some() || find_option(arg).is_some();
        let suggestion = known.then(|| format!("-{arg}"));
        let hint = did_you_mean(&suggestion);
        UsageError {
            suggestion,
            ..UsageError::new(
                Some(index),
                "a test or option, starting with -".into(),
                arg,
                format!("unexpected argument {arg:?}: tests and options start with -{hint}"),
            )
        }
    }

    /// `-name` (at `index`) is no test, alias or option; the closest one when it is a typing
    /// slip away (`-forkwiat`: did you mean -forkwait?).
    fn unknown(index: usize, arg: &str, name: &str) -> UsageError {
        let names = OPTIONS
            .iter()
            .map(|o| o.name)
            .chain(suite::TESTS.iter().map(|t| t.name))
            .chain(suite::ALIASES.iter().map(|(alias, _)| *alias));
        let suggestion = nearest(name, names).map(|n| format!("-{n}"));
        let hint = did_you_mean(&suggestion);
        UsageError {
            suggestion,
            ..UsageError::new(
                Some(index),
                "a unixperf test or option".into(),
                arg,
                format!("unknown test or option {arg}{hint}"),
            )
        }
    }

    /// Option `opt` (at `index`) ended the line without its value.
    fn no_value(index: usize, opt: &OptionDef) -> UsageError {
        let what = opt.takes.what();
        UsageError::new(
            Some(index),
            format!("{what} after -{}", opt.name),
            "",
            format!("-{} expects {what} after it", opt.name),
        )
    }

    /// `value` (at `index`) is not a value option `opt` takes.
    fn bad_value(index: usize, opt: &OptionDef, value: &str, bad: BadValue) -> UsageError {
        // For a list, the message names the bad item, and `expected` the whole value.
        let expected = if bad.item == value {
            format!("{} after -{}", bad.expected, opt.name)
        } else {
            format!("{}, each {}, after -{}", opt.takes.what(), bad.expected, opt.name)
        };
        UsageError::new(
            Some(index),
            expected,
            value,
            format!("-{} expects {}, got {:?}", opt.name, bad.expected, bad.item),
        )
    }
}

/// `; did you mean -loop?` for a suggestion, or nothing.
fn did_you_mean(suggestion: &Option<String>) -> String {
    suggestion
        .as_ref()
        .map(|s| format!("; did you mean {s}?"))
        .unwrap_or_default()
}

/// What is wrong with an option's value: what was expected, and the item that is not it.
struct BadValue {
    expected: String,
    item: String,
}

/// `-generate`: what the unixperf program prints instead of running tests. It prints it from
/// a clap rendering of [`OPTIONS`] and the suite's tables.
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
    /// Every value, in the order of [`NAMES`](Generate::NAMES).
    pub const ALL: [Generate; 4] = [Generate::Bash, Generate::Zsh, Generate::Fish, Generate::Man];

    /// The value spelled `name`.
    pub fn from_name(name: &str) -> Option<Generate> {
        let i = Self::NAMES.iter().position(|n| *n == name)?;
        Some(Self::ALL[i])
    }
}

/// What an option takes after it, how that is checked, and where it goes in [`Config`].
/// [`parse`] does nothing per option but what this says.
#[derive(Debug)]
pub enum Takes {
    /// Nothing: a flag.
    Nothing(fn(&mut Config)),
    /// A whole number from 1 to `max`.
    Number {
        /// Its name in the usage: `N`.
        value: &'static str,
        /// What is missing when it is: `a number of operations`.
        what: &'static str,
        /// The largest accepted.
        max: u64,
        /// Stores it.
        set: fn(&mut Config, u64),
    },
    /// A number of seconds, more than 0 and at most `max`.
    Seconds {
        /// Its name in the usage.
        value: &'static str,
        /// The largest accepted.
        max: u32,
        /// Stores it.
        set: fn(&mut Config, f64),
    },
    /// A directory.
    Dir {
        /// Its name in the usage.
        value: &'static str,
        /// Stores it.
        set: fn(&mut Config, PathBuf),
    },
    /// Whole numbers from 1 to `max`, separated by commas.
    Numbers {
        /// Its name in the usage: `1,2,4`.
        value: &'static str,
        /// What is missing when it is.
        what: &'static str,
        /// The largest accepted.
        max: u64,
        /// Stores them.
        set: fn(&mut Config, Vec<u64>),
    },
    /// One word of `choices`.
    OneOf {
        /// Its name in the usage.
        value: &'static str,
        /// The words it takes.
        choices: &'static [&'static str],
        /// Stores the index of the word in `choices`.
        set: fn(&mut Config, usize),
    },
}

impl Takes {
    /// The name of the value in the usage (`N`); `None` for a flag.
    pub fn value_name(&self) -> Option<&'static str> {
        match *self {
            Takes::Nothing(_) => None,
            Takes::Number { value, .. }
            | Takes::Seconds { value, .. }
            | Takes::Dir { value, .. }
            | Takes::Numbers { value, .. }
            | Takes::OneOf { value, .. } => Some(value),
        }
    }

    /// The words the value must be one of; empty when it is not a fixed set.
    pub fn choices(&self) -> &'static [&'static str] {
        match *self {
            Takes::OneOf { choices, .. } => choices,
            _ => &[],
        }
    }

    /// What follows the option, as an error says it is missing.
    fn what(&self) -> String {
        match *self {
            Takes::Nothing(_) => "nothing".into(),
            Takes::Number { what, .. } | Takes::Numbers { what, .. } => what.into(),
            Takes::Seconds { .. } => "a number of seconds".into(),
            Takes::Dir { .. } => "a directory".into(),
            Takes::OneOf { choices, .. } => match choices.split_last() {
                Some((last, [])) => last.to_string(),
                Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
                None => "nothing".into(),
            },
        }
    }

    /// Checks `v` and stores it in `cfg`.
    fn apply(&self, cfg: &mut Config, v: &str) -> Result<(), BadValue> {
        match *self {
            Takes::Nothing(set) => set(cfg),
            Takes::Number { max, set, .. } => set(cfg, whole_number(v, max)?),
            Takes::Seconds { max, set, .. } => match v.parse::<f64>() {
                Ok(s) if s.is_finite() && s > 0.0 && s <= f64::from(max) => set(cfg, s),
                _ => {
                    return Err(BadValue {
                        expected: format!("seconds between 0 and {max}"),
                        item: v.into(),
                    })
                }
            },
            Takes::Dir { set, .. } => set(cfg, PathBuf::from(v)),
            Takes::Numbers { max, set, .. } => {
                let numbers = v.split(',').map(|n| whole_number(n, max));
                set(cfg, numbers.collect::<Result<_, _>>()?);
            }
            Takes::OneOf { choices, set, .. } => match choices.iter().position(|c| *c == v) {
                Some(i) => set(cfg, i),
                None => {
                    return Err(BadValue {
                        expected: format!("one of {}", choices.join(", ")),
                        item: v.into(),
                    })
                }
            },
        }
        Ok(())
    }
}

/// A whole number in 1..=max.
fn whole_number(v: &str, max: u64) -> Result<u64, BadValue> {
    match v.parse::<u64>() {
        Ok(n) if n >= 1 && n <= max => Ok(n),
        _ => Err(BadValue {
            expected: if max == u64::MAX {
                "a whole number of at least 1".into()
            } else {
                format!("a whole number from 1 to {max}")
            },
            item: v.into(),
        }),
    }
}

/// One option of the command line. [`parse`] accepts exactly these names (and the tests and
/// aliases of [`suite`]) and does what [`Takes`] says; the usage, the completions and the man
/// page are made from them.
#[derive(Debug)]
pub struct OptionDef {
    /// The name after the dash: `loop` for `-loop`.
    pub name: &'static str,
    /// A one-letter spelling, such as `-h`.
    pub short: Option<char>,
    /// What follows it and where it goes.
    pub takes: Takes,
    /// One line saying what it does.
    pub help: &'static str,
    /// The one test it applies to (`hackbench`); `None` for an option of every test. When
    /// tests are named, that test must be among them.
    pub for_test: Option<&'static str>,
}

const fn option(name: &'static str, takes: Takes, help: &'static str) -> OptionDef {
    OptionDef {
        name,
        short: None,
        takes,
        help,
        for_test: None,
    }
}

const fn flag(name: &'static str, help: &'static str, set: fn(&mut Config)) -> OptionDef {
    option(name, Takes::Nothing(set), help)
}

const fn number(
    name: &'static str,
    value: &'static str,
    what: &'static str,
    max: u64,
    help: &'static str,
    set: fn(&mut Config, u64),
) -> OptionDef {
    option(name, Takes::Number { value, what, max, set }, help)
}

const fn hackbench(def: OptionDef) -> OptionDef {
    OptionDef {
        for_test: Some("hackbench"),
        ..def
    }
}

/// Every option, in the order of the usage: the single description of unixperf's options.
/// The `as u32` casts are lossless: each `max` fits.
pub static OPTIONS: &[OptionDef] = &[
    flag("all", "run the standard tests (those -list shows without *)", |c| {
        c.tests.extend(suite::standard())
    }),
    flag("list", "list the tests and their descriptions", |c| c.list = true),
    number(
        "loop",
        "N",
        "a number of operations",
        u64::MAX,
        "operations per pass (default: calibrate)",
        |c, n| c.count = Some(n),
    ),
    number(
        "repeat",
        "R",
        "a number of passes",
        1_000_000,
        "passes per test (default 5)",
        |c, n| c.repeat = n as u32,
    ),
    option(
        "time",
        Takes::Seconds {
            value: "S",
            max: 86_400,
            set: |c, s| c.seconds = s,
        },
        "seconds per calibrated pass (default 5)",
    ),
    number(
        "mp",
        "N",
        "a number of copies",
        MAX_COPIES as u64,
        "run N copies at once, each printing its lines, plus an aggregate line",
        |c, n| c.copies = n as u32,
    ),
    flag("pin", "pin copy k to the k-th usable CPU", |c| c.pin = true),
    option(
        "scaling",
        Takes::Numbers {
            value: "1,2,4",
            what: "copy counts such as 1,2,4",
            max: MAX_COPIES as u64,
            set: |c, counts| c.scaling = Some(counts.into_iter().map(|n| n as u32).collect()),
        },
        "table of nanoseconds per operation at these numbers of copies",
    ),
    option(
        "tmpdir",
        Takes::Dir {
            value: "DIR",
            set: |c, dir| c.tmpdir = dir,
        },
        "where to make the scratch directory (default $TMPDIR or /tmp)",
    ),
    option(
        "generate",
        Takes::OneOf {
            value: "WHAT",
            choices: Generate::NAMES,
            set: |c, i| c.generate = Some(Generate::ALL[i]),
        },
        "print bash, zsh or fish completions, or the man page (man), and exit",
    ),
    OptionDef {
        short: Some('h'),
        ..flag("help", "print this usage (also -h)", |c| c.help = true)
    },
    hackbench(number(
        "groups",
        "G",
        "a number of groups",
        10_000,
        "groups of senders and receivers (default 10)",
        |c, n| c.hackbench.groups = n as u32,
    )),
    hackbench(number(
        "fds",
        "F",
        "a number of senders",
        1_000,
        "senders, and receivers, per group (default 20)",
        |c, n| c.hackbench.fds = n as u32,
    )),
    hackbench(number(
        "msgs",
        "M",
        "a number of messages",
        u32::MAX as u64,
        "messages per sender to each receiver (default 100)",
        |c, n| c.hackbench.messages = n as u32,
    )),
    hackbench(number(
        "datasize",
        "D",
        "a number of bytes",
        1 << 30,
        "bytes per message (default 100)",
        |c, n| c.hackbench.datasize = n as usize,
    )),
    hackbench(flag("threads", "threads instead of processes", |c| {
        c.hackbench.threads = true
    })),
    hackbench(flag("pipe", "pipes instead of socketpairs", |c| {
        c.hackbench.pipes = true
    })),
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

/// The tests options apply to, in the order of [`OPTIONS`]: `None` (every test) first.
pub fn option_groups() -> Vec<Option<&'static str>> {
    let mut groups = vec![None];
    for o in OPTIONS {
        if !groups.contains(&o.for_test) {
            groups.push(o.for_test);
        }
    }
    groups
}

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
    for group in option_groups() {
        match group {
            None => out += "\noptions:\n",
            Some(test) => out += &format!("{test}:\n"),
        }
        for o in OPTIONS.iter().filter(|o| o.for_test == group) {
            let spelling = match o.takes.value_name() {
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

/// Parses the arguments (without the program name): each is a test or alias of [`suite`], or
/// an option of [`OPTIONS`] followed by its value, with one dash or two.
pub fn parse<S: AsRef<str>>(args: &[S]) -> Result<Config, UsageError> {
    let mut cfg = Config::default();
    // The options given, with their index, for the checks of the whole line.
    let mut given: Vec<(&OptionDef, usize)> = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let arg = args[i].as_ref();
        let Some(name) = arg.strip_prefix('-') else {
            return Err(UsageError::no_dash(i, arg));
        };
        // Also take GNU-style --loop.
        let name = name.strip_prefix('-').unwrap_or(name);
        match find_option(name) {
            None => match suite::resolve(name) {
                Some(tests) => cfg.tests.extend(tests),
                None => return Err(UsageError::unknown(i, arg, name)),
            },
            Some(opt) => {
                given.push((opt, i));
                match opt.takes {
                    Takes::Nothing(set) => set(&mut cfg),
                    ref takes => {
                        let value = args.get(i + 1).ok_or_else(|| UsageError::no_value(i, opt))?;
                        i += 1;
                        let value = value.as_ref();
                        takes
                            .apply(&mut cfg, value)
                            .map_err(|bad| UsageError::bad_value(i, opt, value, bad))?;
                    }
                }
            }
        }
        i += 1;
    }
    // Each test once: upcmp reads a repeated description as another copy.
    let mut seen = std::collections::HashSet::new();
    cfg.tests.retain(|t| seen.insert(t.name));
    if cfg.scaling.is_some() && cfg.copies > 1 {
        let last = given
            .iter()
            .filter(|(o, _)| ["mp", "scaling"].contains(&o.name))
            .max_by_key(|(_, at)| *at);
        let (opt, at) = last.expect("-mp and -scaling were given");
        return Err(UsageError::new(
            Some(*at),
            format!("-mp or -scaling, not both (-{} is the second)", opt.name),
            args[*at].as_ref(),
            "-mp and -scaling exclude each other: -scaling chooses the copies".into(),
        ));
    }
    // An option of one test does nothing for the others: given with other tests only, it is
    // a mistake. (With no test named, -list shows what it sets in the test's description.)
    if !cfg.tests.is_empty() {
        let named = |test: &str| cfg.tests.iter().any(|t| t.name == test);
        let misplaced = given.iter().find(|(o, _)| o.for_test.is_some_and(|test| !named(test)));
        if let Some(&(opt, at)) = misplaced {
            let test = opt.for_test.unwrap_or_default();
            return Err(UsageError::new(
                Some(at),
                format!("an option of the tests given (-{} is one of -{test})", opt.name),
                args[at].as_ref(),
                format!("-{} is an option of -{test}, which is not among the tests", opt.name),
            ));
        }
    }
    if cfg.tests.is_empty() && !cfg.list && !cfg.help && cfg.generate.is_none() {
        return Err(UsageError::new(
            None,
            "a test such as -forkwait, or -all".into(),
            "",
            "no test given: name tests such as -forkwait, or -all".into(),
        ));
    }
    Ok(cfg)
}

/// What is wrong with the arguments of a line of uprun's test list (see [`check_test_args`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgProblem {
    /// The argument at fault: `Some(i)` for `args[i]`, `None` for the test name.
    pub arg: Option<usize>,
    /// What was expected there, e.g. `a number of operations after -loop`.
    pub expected: String,
    /// What was found there: the argument as written; empty when the arguments ended.
    pub found: String,
    /// The nearest valid spelling, for a misspelt name: `-loop` for `-lop`, `forkwait` for the
    /// test `forkwiat`.
    pub suggestion: Option<String>,
    /// The whole message, as unixperf prints it for the same arguments.
    pub message: String,
}

impl fmt::Display for ArgProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ArgProblem {}

/// Checks a line of uprun's test list, `test args...`, before anything runs: `Ok` exactly when
/// `test` is a test or alias without its dash (`forkwait`, `select`; not an option such as
/// `all`) and `unixperf -test args...` would run, since this is [`parse`] on that command line.
///
/// ```
/// use unixperf::options::check_test_args;
///
/// assert!(check_test_args("pipeping1", &["-loop", "1000", "-repeat", "2"]).is_ok());
/// let e = check_test_args("pipeping1", &["-lop", "1000"]).unwrap_err();
/// assert_eq!((e.arg, e.suggestion.as_deref()), (Some(0), Some("-loop")));
/// assert_eq!(e.to_string(), "unknown test or option -lop; did you mean -loop?");
/// let e = check_test_args("forkwiat", &[] as &[&str]).unwrap_err();
/// assert_eq!((e.arg, e.suggestion.as_deref()), (None, Some("forkwait")));
/// ```
pub fn check_test_args<S: AsRef<str>>(test: &str, args: &[S]) -> Result<(), ArgProblem> {
    // An option's name is no test, though parse would take `-loop` as one.
    if suite::resolve(test).is_none() {
        let names = suite::TESTS
            .iter()
            .map(|t| t.name)
            .chain(suite::ALIASES.iter().map(|(alias, _)| *alias));
        let suggestion = nearest(test, names).map(String::from);
        return Err(ArgProblem {
            arg: None,
            expected: "a unixperf test name (see unixperf -list)".into(),
            found: test.into(),
            message: format!("unknown test {test}{}", did_you_mean(&suggestion)),
            suggestion,
        });
    }
    let dashed = format!("-{test}");
    let line: Vec<&str> = [dashed.as_str()]
        .into_iter()
        .chain(args.iter().map(AsRef::as_ref))
        .collect();
    match parse(&line) {
        Ok(_) => Ok(()),
        Err(e) => Err(ArgProblem {
            // Index 0 is the test, which resolved; a problem of the line as a whole is the
            // test's line.
            arg: e.index.and_then(|i| i.checked_sub(1)),
            expected: e.expected,
            found: e.found,
            suggestion: e.suggestion,
            message: e.message,
        }),
    }
}

/// The name of `names` closest to `name`, when it is a typing slip away: one letter for names
/// under 6 letters, two for longer ones.
fn nearest<'a>(name: &str, names: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    let limit = if name.chars().count() >= 6 { 2 } else { 1 };
    names
        .map(|n| (edit_distance(name, n), n))
        .filter(|&(d, _)| d <= limit)
        .min_by_key(|&(d, _)| d)
        .map(|(_, n)| n)
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
        let e = |args: &[&str]| parse(args).unwrap_err().message;
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
        let e = |arg: &str| parse(&[arg]).unwrap_err().message;
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
            parse(&["-generate"]).unwrap_err().message,
            "-generate expects bash, zsh, fish or man after it"
        );
    }

    /// A value each option accepts, by the name the usage gives it.
    fn sample_value(o: &OptionDef) -> Option<&'static str> {
        Some(match o.takes {
            Takes::Nothing(_) => return None,
            Takes::Seconds { .. } => "0.5",
            Takes::Dir { .. } => "/var/tmp/unixperf-sample",
            Takes::OneOf { choices, .. } => choices[0],
            Takes::Number { .. } | Takes::Numbers { .. } => "2",
        })
    }

    #[test]
    fn every_option_parses_in_both_spellings_and_is_in_the_usage() {
        let usage = usage();
        for o in OPTIONS {
            for dashes in ["-", "--"] {
                let test = format!("-{}", o.for_test.unwrap_or("getpid"));
                let mut args = vec![test, format!("{dashes}{}", o.name)];
                args.extend(sample_value(o).map(String::from));
                parse(&args).unwrap_or_else(|e| panic!("{args:?}: {e}"));
            }
            if let Some(c) = o.short {
                assert!(parse(&[format!("-{c}")]).is_ok(), "-{c}");
            }
            let spelling = match o.takes.value_name() {
                Some(v) => format!("\n  -{} {v} ", o.name),
                None => format!("\n  -{} ", o.name),
            };
            assert!(usage.contains(&spelling), "the usage lacks {spelling:?}");
            assert!(usage.contains(o.help), "the usage lacks the help of -{}", o.name);
        }
    }

    /// Each option changes what the command line says: none is parsed and then dropped.
    #[test]
    fn every_option_reaches_the_config() {
        for o in OPTIONS {
            let test = format!("-{}", o.for_test.unwrap_or("getpid"));
            let plain = format!("{:?}", parse(&[&test]).unwrap());
            let mut args = vec![test, format!("-{}", o.name)];
            args.extend(sample_value(o).map(String::from));
            let cfg = parse(&args).unwrap_or_else(|e| panic!("{args:?}: {e}"));
            assert_ne!(format!("{cfg:?}"), plain, "{args:?} changed nothing");
        }
    }

    #[test]
    fn errors_point_at_the_argument_at_fault() {
        let e = |args: &[&str]| {
            let e = parse(args).unwrap_err();
            (e.index, e.expected, e.found, e.suggestion)
        };
        let s = |v: &str| v.to_string();
        assert_eq!(
            e(&["-getpid", "-lop", "5"]),
            (Some(1), s("a unixperf test or option"), s("-lop"), Some(s("-loop")))
        );
        assert_eq!(
            e(&["-getpid", "getpid"]),
            (
                Some(1),
                s("a test or option, starting with -"),
                s("getpid"),
                Some(s("-getpid"))
            )
        );
        assert_eq!(
            e(&["-getpid", "-repeat", "2", "-loop"]),
            (Some(3), s("a number of operations after -loop"), s(""), None)
        );
        // A bad value: the value is at fault, not the option.
        assert_eq!(
            e(&["-getpid", "-loop", "x"]),
            (Some(2), s("a whole number of at least 1 after -loop"), s("x"), None)
        );
        assert_eq!(
            e(&["-getpid", "-generate", "csh"]),
            (
                Some(2),
                s("one of bash, zsh, fish, man after -generate"),
                s("csh"),
                None
            )
        );
        // A list names the whole value, the message the bad item.
        let scaling = parse(&["-getpid", "-scaling", "1,,4"]).unwrap_err();
        assert_eq!(
            (scaling.index, scaling.expected.as_str(), scaling.found.as_str()),
            (
                Some(2),
                "copy counts such as 1,2,4, each a whole number from 1 to 1024, after -scaling",
                "1,,4"
            )
        );
        // Two options in conflict: the later one.
        assert_eq!(e(&["-getpid", "-scaling", "1", "-mp", "2", "-pin"]).0, Some(3));
        assert_eq!(e(&["-mp", "2", "-getpid", "-scaling", "1"]).0, Some(3));
        // No test: the line as a whole.
        assert_eq!(e(&["-loop", "5"]).0, None);
    }

    #[test]
    fn an_option_of_one_test_needs_that_test() {
        let hackbench_options: Vec<&OptionDef> = OPTIONS.iter().filter(|o| o.for_test.is_some()).collect();
        assert!(!hackbench_options.is_empty());
        for o in hackbench_options {
            let test = o.for_test.unwrap();
            assert!(suite::find(test).is_some(), "-{}: no test {test}", o.name);
            let mut option = vec![format!("--{}", o.name)];
            option.extend(sample_value(o).map(String::from));
            let line = |tests: &[&str]| [tests.iter().map(|t| t.to_string()).collect(), option.clone()].concat();
            // With its test, with -all (which runs it), and with no test (-list shows it).
            for ok in [&["-getpid", "-hackbench"][..], &["-all"], &["-list"]] {
                let args = line(ok);
                assert!(parse(&args).is_ok(), "{args:?}");
            }
            let e = parse(&line(&["-getpid", "-select"])).unwrap_err();
            assert_eq!(
                e.message,
                format!("-{} is an option of -hackbench, which is not among the tests", o.name)
            );
            assert_eq!((e.index, e.found), (Some(2), format!("--{}", o.name)));
        }
    }

    #[test]
    fn test_lines_unixperf_runs_pass_the_check() {
        let names = suite::TESTS
            .iter()
            .map(|t| t.name)
            .chain(suite::ALIASES.iter().map(|(a, _)| *a));
        for name in names {
            check_test_args::<&str>(name, &[]).unwrap_or_else(|e| panic!("{name}: {e}"));
            check_test_args(name, &["-loop", "200000", "-repeat", "2"]).unwrap_or_else(|e| panic!("{name}: {e}"));
        }
        for o in OPTIONS {
            for dashes in ["-", "--"] {
                let mut args = vec![format!("{dashes}{}", o.name)];
                args.extend(sample_value(o).map(String::from));
                let test = o.for_test.unwrap_or("getpid");
                check_test_args(test, &args).unwrap_or_else(|e| panic!("{test} {args:?}: {e}"));
            }
        }
        let lines: &[(&str, &[&str])] = &[
            (
                "hackbench",
                &["-groups", "4", "-msgs", "100", "-loop", "10", "-repeat", "2"],
            ),
            ("pipeping1", &["-mp", "2", "-pin", "-loop", "1000"]),
            ("getpid", &["-select", "-scaling", "1,2,4", "-loop", "1000000"]),
            ("forkwait", &["-time", "0.5", "-tmpdir", "/var/tmp"]),
        ];
        for (test, args) in lines {
            check_test_args(test, args).unwrap_or_else(|e| panic!("{test} {args:?}: {e}"));
        }
    }

    /// The check is unixperf's parser: over every short line made of these words, it accepts
    /// what `unixperf -TEST ARGS...` accepts, with the same message at the same argument.
    #[test]
    fn the_check_agrees_with_the_command_line() {
        let words = [
            "-loop",
            "5",
            "x",
            "-lop",
            "-groups",
            "-mp",
            "2",
            "-scaling",
            "1,2",
            "getpid",
            "-select",
            "--repeat",
            "-threads",
            "-time",
            "0",
            "-generate",
            "man",
            "",
        ];
        // Every line of up to 3 of the words.
        let (mut lines, mut longest): (Vec<Vec<&str>>, Vec<Vec<&str>>) = (vec![vec![]], vec![vec![]]);
        for _ in 0..3 {
            longest = longest
                .iter()
                .flat_map(|l| words.iter().map(move |w| [l.clone(), vec![*w]].concat()))
                .collect();
            lines.extend(longest.iter().cloned());
        }
        assert!(lines.len() > 5000, "{}", lines.len());
        let (mut passed, mut refused) = (0, 0);
        for test in ["getpid", "hackbench", "select"] {
            for args in &lines {
                let dashed = format!("-{test}");
                let line = [vec![dashed.as_str()], args.clone()].concat();
                match (check_test_args(test, args), parse(&line)) {
                    (Ok(()), Ok(_)) => passed += 1,
                    (Err(problem), Err(usage)) => {
                        assert_eq!(problem.message, usage.message, "{line:?}");
                        assert_eq!(problem.arg.map(|i| i + 1), usage.index, "{line:?}");
                        assert_eq!(problem.found, usage.found, "{line:?}");
                        refused += 1;
                    }
                    (check, parsed) => panic!("{line:?}: the check says {check:?}, unixperf {:?}", parsed.err()),
                }
            }
        }
        assert!(passed > 100 && refused > 100, "{passed} passed, {refused} refused");
    }

    #[test]
    fn each_kind_of_bad_test_line_is_refused_at_its_argument() {
        let e = |test: &str, args: &[&str]| check_test_args(test, args).unwrap_err();
        let at = |p: &ArgProblem| (p.arg, p.found.clone(), p.suggestion.clone());
        let s = |v: &str| v.to_string();

        // An unknown test: the nearest test or alias, never an option.
        let p = e("forkwiat", &["-loop", "5"]);
        assert_eq!(at(&p), (None, s("forkwiat"), Some(s("forkwait"))));
        assert_eq!(p.message, "unknown test forkwiat; did you mean forkwait?");
        assert_eq!(p.expected, "a unixperf test name (see unixperf -list)");
        assert_eq!(at(&e("selct", &[])), (None, s("selct"), Some(s("select"))));
        assert_eq!(at(&e("loop", &[])), (None, s("loop"), None));
        assert_eq!(e("nosuchtest", &[]).message, "unknown test nosuchtest");

        // A misspelt option.
        let p = e("pipeping1", &["-lop", "1000"]);
        assert_eq!(at(&p), (Some(0), s("-lop"), Some(s("-loop"))));
        assert_eq!(p.to_string(), "unknown test or option -lop; did you mean -loop?");
        // A word without its dash.
        assert_eq!(at(&e("getpid", &["1000"])), (Some(0), s("1000"), None));
        assert_eq!(
            at(&e("getpid", &["-loop", "5", "repeat", "2"])),
            (Some(2), s("repeat"), Some(s("-repeat")))
        );
        // A value missing at the end of the line: the option.
        let p = e("getpid", &["-repeat", "2", "-loop"]);
        assert_eq!(at(&p), (Some(2), s(""), None));
        assert_eq!(p.expected, "a number of operations after -loop");
        // A value that is not a number, or out of range: the value.
        let p = e("getpid", &["-loop", "x"]);
        assert_eq!(at(&p), (Some(1), s("x"), None));
        assert_eq!(p.message, "-loop expects a whole number of at least 1, got \"x\"");
        assert_eq!(
            at(&e("getpid", &["-loop", "5", "-mp", "2000"])),
            (Some(3), s("2000"), None)
        );
        assert_eq!(at(&e("getpid", &["-time", "0"])), (Some(1), s("0"), None));
        assert_eq!(at(&e("getpid", &["-scaling", "1,,2"])), (Some(1), s("1,,2"), None));
        assert_eq!(at(&e("getpid", &["-generate", "csh"])), (Some(1), s("csh"), None));
        // An option of another test.
        let p = e("getpid", &["-loop", "5", "-threads"]);
        assert_eq!(at(&p), (Some(2), s("-threads"), None));
        assert_eq!(
            p.message,
            "-threads is an option of -hackbench, which is not among the tests"
        );
        // Options that exclude each other: the later one.
        assert_eq!(
            at(&e("getpid", &["-mp", "2", "--scaling", "1"])),
            (Some(2), s("--scaling"), None)
        );
        // An option is no test, though unixperf -all runs.
        assert_eq!(at(&e("all", &[])), (None, s("all"), None));
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
