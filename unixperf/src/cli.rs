//! The unixperf command: parse, supervise the copies, clean up, exit.

use std::path::{Path, PathBuf};

use crate::options::{self, Config, Generate};
use crate::report::{self, aggregate_line, time_line};
use crate::suite::{self, ALIASES, TESTS};
use crate::sys;
use crate::sysinfo;
use crate::team::{self, complain, Stop, Team};
use crate::workload::Ctx;

/// Runs unixperf with `args` (without the program name); returns the exit code.
/// `generate` answers `-generate`: the unixperf program passes its printer of completions and
/// man pages, which renders [`options::OPTIONS`] and the suite's tables with clap (clap stays
/// there).
pub fn main(args: &[String], generate: fn(Generate) -> i32) -> i32 {
    let cfg = match options::parse(args) {
        Ok(cfg) => cfg,
        Err(e) => {
            complain(&e.to_string());
            return 2;
        }
    };
    if let Some(what) = cfg.generate {
        return generate(what);
    }
    if cfg.help {
        print!("{}", options::usage());
        return 0;
    }
    if cfg.list {
        print!("{}", list(&cfg));
        return 0;
    }
    if let Err(e) = team::become_supervisor() {
        complain(e.message());
        return 1;
    }
    let scratch = match make_scratch(&cfg.tmpdir) {
        Ok(p) => p,
        Err(e) => {
            complain(e.message());
            return 1;
        }
    };
    let result = if cfg.scaling.is_some() {
        scaling(&cfg, &scratch)
    } else {
        suite_run(&cfg, &scratch)
    };
    // Whatever happened: no process and no file stays behind.
    team::kill_and_reap_everything();
    remove_scratch(&scratch);
    match result {
        Ok(()) | Err(Stop::BrokenPipe) => 0,
        Err(Stop::Signal(sig)) => team::die_of(sig),
        Err(Stop::Failed(msg)) => {
            if !msg.is_empty() {
                complain(&msg);
            }
            1
        }
    }
}

/// `-list`: every test and alias; tests outside `-all` are marked `*`.
pub fn list(cfg: &Config) -> String {
    let ctx = Ctx {
        dir: PathBuf::new(),
        hackbench: cfg.hackbench.clone(),
    };
    let mut out = String::from("tests (* = not part of -all):\n");
    for t in TESTS {
        let mark = if t.standard { ' ' } else { '*' };
        let desc = if t.name == "hackbench" {
            format!("{} [{}]", t.description, t.describe(&ctx))
        } else {
            t.description.to_string()
        };
        out += &format!("  -{:<16}{mark} {desc}\n", t.name);
    }
    out += "aliases:\n";
    for (alias, names) in ALIASES {
        let tests: Vec<String> = names.iter().map(|n| format!("-{n}")).collect();
        out += &format!("  -{alias:<16}  {}\n", tests.join(" "));
    }
    out
}

/// Makes `tmpdir/unixperf.XXXXXX`.
fn make_scratch(tmpdir: &Path) -> sys::Result<PathBuf> {
    let template = sys::cpath(&tmpdir.join("unixperf.XXXXXX"))?;
    let mut bytes = template.into_bytes_with_nul();
    if unsafe { libc::mkdtemp(bytes.as_mut_ptr().cast()) }.is_null() {
        return Err(sys::os_error(&format!(
            "making a scratch directory in {}",
            tmpdir.display()
        )));
    }
    bytes.pop();
    use std::os::unix::ffi::OsStringExt;
    Ok(PathBuf::from(std::ffi::OsString::from_vec(bytes)))
}

/// Removes the scratch directory; retried, as a killed process may still be finishing a
/// file operation when we get here.
fn remove_scratch(scratch: &Path) {
    for _ in 0..50 {
        match std::fs::remove_dir_all(scratch) {
            Ok(()) => return,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return,
            Err(_) => std::thread::sleep(std::time::Duration::from_millis(20)),
        }
    }
    complain(&format!("could not remove {}", scratch.display()));
}

fn emit(line: &str) -> Result<(), Stop> {
    report::emit(line).map_err(|e| match e.kind() {
        std::io::ErrorKind::BrokenPipe => Stop::BrokenPipe,
        _ => Stop::Failed(e.to_string()),
    })
}

/// The CPUs copies are pinned to with `-pin`.
fn pin_cpus(cfg: &Config) -> Option<Vec<usize>> {
    cfg.pin.then(sys::allowed_cpus)
}

fn test_index(name: &str) -> usize {
    TESTS.iter().position(|t| t.name == name).expect("a test of the suite")
}

/// The normal run: every test in every copy at once, x11perf lines, aggregates for `-mp`.
fn suite_run(cfg: &Config, scratch: &Path) -> Result<(), Stop> {
    let cpus = pin_cpus(cfg);
    let pinned: Option<Vec<usize>> = cpus
        .as_ref()
        .map(|c| (0..cfg.copies as usize).map(|k| c[k % c.len()]).collect());
    for line in sysinfo::header(scratch, cfg.copies, pinned.as_deref()) {
        emit(&line)?;
    }
    let team = Team::spawn(cfg, cfg.copies, cpus.as_deref(), scratch)?;
    let ctx = Ctx {
        dir: scratch.to_path_buf(),
        hackbench: cfg.hackbench.clone(),
    };
    for t in &cfg.tests {
        team.init(test_index(t.name))?;
        let reports = team.run(cfg.count.unwrap_or(0))?;
        if cfg.copies > 1 {
            let ops = reports.iter().map(|r| r.ops).sum();
            let rate = reports.iter().map(|r| r.rate()).sum();
            emit(&aggregate_line(ops, rate, &t.describe(&ctx), cfg.copies))?;
            let times: Vec<f64> = reports.iter().filter_map(|r| r.own_seconds).collect();
            if !times.is_empty() {
                emit(&time_line(times.iter().copied().fold(0.0, f64::max), Some(cfg.copies)))?;
            }
        }
        emit("\n")?;
    }
    team.quit()
}

/// `-scaling`: nanoseconds per operation at each number of copies, the empty loop first as
/// the reference, in one table.
fn scaling(cfg: &Config, scratch: &Path) -> Result<(), Stop> {
    let counts = cfg.scaling.as_deref().unwrap_or(&[1]);
    let cpus = pin_cpus(cfg);
    for line in sysinfo::header(scratch, 1, None) {
        emit(&line)?;
    }
    let ctx = Ctx {
        dir: scratch.to_path_buf(),
        hackbench: cfg.hackbench.clone(),
    };
    let reference = suite::find("emptyloop").expect("emptyloop is a test");
    let empty = scaling_row(cfg, counts, cpus.as_deref(), scratch, reference)?;
    let rule = "-".repeat(64) + "\n";
    emit(&rule)?;
    emit(&format!(
        "For comparison, an empty loop iteration costs {} nsecs.\n",
        format_ns(empty[0])
    ))?;
    emit("Times below are nanoseconds per operation: the wall time of N copies running\n")?;
    emit("at once, divided by the operations of all copies.\n")?;
    emit(&rule)?;
    let mut head = format!("{:<16}", "TEST");
    for n in counts {
        head += &format!("{n:>10}");
    }
    emit(&(head + "  DESCRIPTION\n"))?;
    emit(&row(reference.name, &empty, &reference.describe(&ctx)))?;
    for t in cfg.tests.iter().filter(|t| t.name != reference.name) {
        let cells = scaling_row(cfg, counts, cpus.as_deref(), scratch, t)?;
        emit(&row(t.name, &cells, &t.describe(&ctx)))?;
    }
    Ok(())
}

/// Nanoseconds per operation of `test` at each number of copies. The count per copy is
/// `-loop`, or what the first column's copies calibrated to, kept for the other columns.
fn scaling_row(
    cfg: &Config,
    counts: &[u32],
    cpus: Option<&[usize]>,
    scratch: &Path,
    test: &suite::TestDef,
) -> Result<Vec<f64>, Stop> {
    let mut count = cfg.count.unwrap_or(0);
    let mut cells = Vec::new();
    for &copies in counts {
        let team = Team::spawn(cfg, copies, cpus, scratch)?;
        team.init(test_index(test.name))?;
        let reports = team.run_quiet(count)?;
        team.quit()?;
        if count == 0 {
            count = reports[0].count;
        }
        let start = reports.iter().map(|r| r.start).min().unwrap_or(0);
        let end = reports.iter().map(|r| r.end).max().unwrap_or(0);
        let ops: u64 = reports.iter().map(|r| r.ops).sum();
        cells.push((end - start) as f64 / ops.max(1) as f64);
    }
    Ok(cells)
}

fn format_ns(ns: f64) -> String {
    if ns < 10.0 {
        format!("{ns:.2}")
    } else {
        format!("{ns:.1}")
    }
}

fn row(name: &str, cells: &[f64], description: &str) -> String {
    let mut line = format!("{name:<16}");
    for &c in cells {
        line += &format!("{:>10}", format_ns(c));
    }
    line + "  " + description + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_shows_every_test_and_marks_the_nonstandard() {
        let cfg = options::parse(&["-list"]).unwrap();
        let text = list(&cfg);
        for t in TESTS {
            assert!(text.contains(&format!("  -{:<16}", t.name)), "{}", t.name);
        }
        assert!(text.contains("  -sleep1          * sleep for one second (validates test time)\n"));
        assert!(text.contains("  -forkwait          fork, child immediately exits, parent waits\n"));
        assert!(text.contains("-bcopy256 -bcopy16k"));
    }

    #[test]
    fn scaling_rows_line_up() {
        assert_eq!(
            row("getpid", &[45.25, 23.0, 2.5], "getpid system call"),
            format!(
                "{:<16}{:>10}{:>10}{:>10}  getpid system call\n",
                "getpid", "45.2", "23.0", "2.50"
            )
        );
    }

    #[test]
    fn scratch_directories_are_fresh() {
        let a = make_scratch(&std::env::temp_dir()).unwrap();
        let b = make_scratch(&std::env::temp_dir()).unwrap();
        assert_ne!(a, b);
        assert!(a.file_name().unwrap().to_str().unwrap().starts_with("unixperf."));
        remove_scratch(&a);
        remove_scratch(&b);
        assert!(!a.exists() && !b.exists());
    }
}
