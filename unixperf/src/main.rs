//! unixperf: see `unixperf -help` and docs/unixperf.md.
//!
//! The library's tables describe the command line once: its options (`options::OPTIONS`, each
//! with what it takes), tests and aliases (`suite::TESTS`, `suite::ALIASES`). The library's
//! parser, usage and `-list` read them; this file renders them as a clap `Command` for
//! `-generate` only: completions and the man page. clap parses nothing here.

use clap::builder::PossibleValuesParser;
use clap::{Arg, ArgAction, Command, ValueHint};
use std::io::{self, Write};
use unixperf::options::{self, Generate, Takes, OPTIONS};
use unixperf::suite::{ALIASES, TESTS};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    std::process::exit(unixperf::cli::main(&args, generate));
}

/// Prints `what` to standard output; returns the exit code.
fn generate(what: Generate) -> i32 {
    let mut out = Vec::new();
    // Rendered whole first: clap's generators panic on a failed write, a closed pipe included.
    let written = render(what, &mut out).and_then(|()| io::stdout().lock().write_all(&out));
    match written {
        Ok(()) => 0,
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => 0,
        Err(e) => {
            unixperf::team::complain(&format!("writing the {what:?} output: {e}"));
            1
        }
    }
}

/// The command line as clap renders it: every option, then every test and alias as a flag.
/// clap spells them `--loop`, which unixperf accepts as well as `-loop`.
fn command() -> Command {
    let examples: String = options::EXAMPLES.lines().map(|l| format!("\n  {l}")).collect();
    let mut cmd = Command::new("unixperf")
        .version(env!("CARGO_PKG_VERSION"))
        .about("x11perf-style micro-benchmarks of the Unix operations a kernel change can move")
        .long_about(options::ABOUT)
        .override_usage(options::SYNOPSIS.join("\n       "))
        .after_help(format!("Examples:{examples}"))
        .disable_help_flag(true)
        .disable_version_flag(true);
    for o in OPTIONS {
        let mut arg = Arg::new(o.name).long(o.name).help(o.help);
        if let Some(c) = o.short {
            arg = arg.short(c);
        }
        arg = match o.takes.value_name() {
            None => arg.action(ArgAction::SetTrue),
            Some(value) => arg.value_name(value).action(ArgAction::Set),
        };
        arg = match o.takes {
            Takes::Nothing(_) => arg,
            Takes::OneOf { choices, .. } => arg.value_parser(PossibleValuesParser::new(choices)),
            Takes::Dir { .. } => arg.value_hint(ValueHint::DirPath),
            _ => arg.value_hint(ValueHint::Other),
        };
        if let Some(test) = o.for_test {
            arg = arg.help_heading(format!("{}{} options", test[..1].to_uppercase(), &test[1..]));
        }
        cmd = cmd.arg(arg);
    }
    for t in TESTS {
        let help = if t.standard {
            t.description.to_string()
        } else {
            format!("{} (not part of -all)", t.description)
        };
        cmd = cmd.arg(flag(t.name, help, "Tests"));
    }
    for (alias, names) in ALIASES {
        let tests: Vec<String> = names.iter().map(|n| format!("-{n}")).collect();
        cmd = cmd.arg(flag(alias, format!("the tests {}", tests.join(" ")), "Aliases"));
    }
    cmd
}

fn flag(name: &'static str, help: String, heading: &'static str) -> Arg {
    Arg::new(name)
        .long(name)
        .help(help)
        .action(ArgAction::SetTrue)
        .help_heading(heading)
}

/// Completions for a shell, or the man page.
fn render(what: Generate, out: &mut Vec<u8>) -> io::Result<()> {
    let mut cmd = command();
    let shell = match what {
        Generate::Bash => clap_complete::Shell::Bash,
        Generate::Zsh => clap_complete::Shell::Zsh,
        Generate::Fish => clap_complete::Shell::Fish,
        Generate::Man => return man_page(cmd, out),
    };
    clap_complete::generate(shell, &mut cmd, "unixperf", out);
    Ok(())
}

/// clap's man page with the synopsis and examples in the original's one-dash spelling (clap's
/// own synopsis would list every test).
fn man_page(cmd: Command, out: &mut Vec<u8>) -> io::Result<()> {
    let man = clap_mangen::Man::new(cmd);
    man.render_title(out)?;
    man.render_name_section(out)?;
    out.write_all(b".SH SYNOPSIS\n")?;
    for line in options::SYNOPSIS {
        let (name, rest) = line.split_once(' ').unwrap_or((line, ""));
        writeln!(out, "\\fB{}\\fR {}\n.br", roff(name), roff(rest))?;
    }
    man.render_description_section(out)?;
    man.render_options_section(out)?;
    out.write_all(b".SH EXAMPLES\n.nf\n")?;
    for line in options::EXAMPLES.lines() {
        writeln!(out, "{}", roff(line))?;
    }
    out.write_all(b".fi\n.SH SEE ALSO\nuprun(1), upcmp(1); docs/unixperf.md in the source.\n")?;
    man.render_version_section(out)
}

/// `text` as roff running text: backslashes and dashes escaped.
fn roff(text: &str) -> String {
    text.replace('\\', "\\e").replace('-', "\\-")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn command_is_well_formed() {
        command().debug_assert();
    }

    /// The options table of docs/unixperf.md names the same options.
    #[test]
    fn docs_list_every_option() {
        let docs = include_str!("../../docs/unixperf.md");
        let documented: BTreeSet<&str> = docs
            .lines()
            .filter_map(|l| l.strip_prefix("| `-"))
            .map(|l| l.split([' ', '`']).next().unwrap())
            .filter(|name| *name != "TEST")
            .collect();
        let options: BTreeSet<&str> = OPTIONS.iter().map(|o| o.name).collect();
        assert_eq!(documented, options);
    }

    fn rendered(what: Generate) -> String {
        let mut out = Vec::new();
        render(what, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn completions_offer_every_name() {
        let bash = rendered(Generate::Bash);
        assert!(bash.contains("complete -F _unixperf"), "{bash}");
        let offered: BTreeSet<&str> = bash
            .lines()
            .filter_map(|l| l.trim().strip_prefix("opts=\""))
            .find(|opts| !opts.starts_with('"'))
            .expect("an opts=\"...\" line")
            .trim_end_matches('"')
            .split_whitespace()
            .collect();
        let fish = rendered(Generate::Fish);
        let names = OPTIONS
            .iter()
            .map(|o| o.name)
            .chain(TESTS.iter().map(|t| t.name))
            .chain(ALIASES.iter().map(|(a, _)| *a));
        for name in names {
            assert!(offered.contains(format!("--{name}").as_str()), "bash lacks --{name}");
            let fish_long = format!(" -l {name} ");
            assert!(
                fish.lines()
                    .any(|l| l.starts_with("complete -c unixperf ") && l.contains(&fish_long)),
                "fish lacks --{name}"
            );
        }
        assert!(fish.contains("-l generate") && fish.contains("-a \"bash"), "{fish}");
        assert!(rendered(Generate::Zsh).starts_with("#compdef unixperf\n"));
    }

    #[test]
    fn man_page_has_the_one_dash_synopsis_tests_and_examples() {
        let man = rendered(Generate::Man);
        assert!(man.contains("\n.TH unixperf 1 "), "{man}");
        assert!(
            man.contains(".SH SYNOPSIS\n\\fBunixperf\\fR \\-TEST... [options]\n.br\n"),
            "{man}"
        );
        assert!(
            man.contains("\n.SH TESTS\n") && man.contains("\n.SH ALIASES\n"),
            "{man}"
        );
        assert!(man.contains("\n.SH \"HACKBENCH OPTIONS\"\n"), "{man}");
        assert!(man.contains("fork, child immediately exits, parent waits"), "{man}");
        assert!(
            man.contains("sleep for one second (validates test time) (not part of \\-all)"),
            "{man}"
        );
        assert!(
            man.contains(".SH EXAMPLES\n.nf\nunixperf \\-forkwait \\-loop 200000"),
            "{man}"
        );
        // Only the synopsis of the original, not every flag.
        let synopsis = &man[man.find(".SH SYNOPSIS").unwrap()..man.find(".SH DESCRIPTION").unwrap()];
        assert!(!synopsis.contains("forkwait"), "{synopsis}");
    }
}
