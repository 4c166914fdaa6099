//! The run directory: its marker, rotation to `.old`, test directories and their status.

use super::prfout::PRFOUT_FILE;
use super::{io_err, read_text, write_atomic, StoreError};
use crate::fsio;
use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use upcmp_parsers::keyvalue::{parse_key_values, KeyValues};
use upcmp_parsers::test_list::{parse_test_list, TestLine};

/// The file that marks a directory as a uprun output directory.
pub const RUN_MARKER: &str = "upcmp-run";
/// The file that marks a directory as upcmp's results directory.
pub const RESULTS_MARKER: &str = "upcmp-results";
/// The output-directory format this build writes. Version 2 added repetitions
/// (`TEST/r1/`, `TEST/r2/`, … with `--runs N`), version 3 upsrun's stacks rooted at their
/// command; older directories are still read.
pub const FORMAT_VERSION: u32 = 3;
/// The first format whose upsrun stacks (`stacks.folded`) are rooted at their command.
pub const COMMAND_ROOTS_FORMAT: u32 = 3;
/// The oldest format this build reads.
pub const OLDEST_FORMAT: u32 = 1;

/// How a run or a test ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Still running (or the collector died without a word).
    Running,
    /// Finished.
    Completed,
    /// Stopped by a signal (Ctrl-C, SIGTERM).
    Interrupted,
    /// A test that exited non-zero (its output is kept).
    Failed,
}

impl Status {
    /// The word written to disk.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Running => "running",
            Status::Completed => "completed",
            Status::Interrupted => "interrupted",
            Status::Failed => "failed",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "running" => Status::Running,
            "completed" => Status::Completed,
            "interrupted" => Status::Interrupted,
            "failed" => Status::Failed,
            _ => return None,
        })
    }
}

/// Which collector wrote a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RunKind {
    /// uprun: program-counter profiles (a marker without a `kind` line is one).
    #[default]
    Uprun,
    /// upsrun: also call stacks and their analysis per test.
    Upsrun,
}

impl RunKind {
    /// The word written to disk.
    pub fn as_str(self) -> &'static str {
        match self {
            RunKind::Uprun => "uprun",
            RunKind::Upsrun => "upsrun",
        }
    }
}

/// The contents of the run marker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunMarker {
    /// Output-directory format version.
    pub format: u32,
    /// Version of the tool that wrote it.
    pub tool_version: String,
    /// The command line.
    pub command: String,
    /// Start time (UTC, ISO 8601).
    pub started: String,
    /// End time, once ended.
    pub ended: Option<String>,
    /// How the run ended so far.
    pub status: Status,
    /// Repetitions of each test (1 in format 1).
    pub runs: u32,
    /// Which collector wrote it.
    pub kind: RunKind,
    /// Why the run failed (`status: failed`): the error that stopped it.
    pub reason: Option<String>,
    /// The process writing the run, so a reader can tell a run still going from one whose
    /// writer died without a word (`kill -9`, a crash, a reboot).
    pub writer: Option<Writer>,
}

/// A process, told apart from any later one with the same pid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Writer {
    /// Its pid.
    pub pid: u32,
    /// When it started, in clock ticks after boot (`/proc/PID/stat`, field 22).
    pub start_ticks: u64,
    /// The boot it ran in (`/proc/sys/kernel/random/boot_id`).
    pub boot_id: String,
}

impl Writer {
    /// This process, when /proc tells.
    pub fn current() -> Option<Self> {
        let pid = std::process::id();
        Some(Writer {
            pid,
            start_ticks: start_ticks(pid)?,
            boot_id: boot_id()?,
        })
    }

    /// Whether the process still runs: same boot, and its pid names a process that
    /// started at the same tick.
    pub fn is_running(&self) -> bool {
        boot_id().as_deref() == Some(self.boot_id.as_str()) && start_ticks(self.pid) == Some(self.start_ticks)
    }

    fn parse(s: &str) -> Option<Self> {
        let mut w = s.split_whitespace();
        let (pid, start, boot) = (w.next()?, w.next()?, w.next()?);
        Some(Writer {
            pid: pid.parse().ok()?,
            start_ticks: start.parse().ok()?,
            boot_id: boot.to_string(),
        })
    }
}

fn boot_id() -> Option<String> {
    let text = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    Some(text.trim().to_string())
}

/// Field 22 of `/proc/PID/stat`, counted after the command name, which may hold spaces.
fn start_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    rest.split_whitespace().nth(19)?.parse().ok()
}

impl RunMarker {
    /// A marker for a run starting now.
    pub fn start(command: String) -> Self {
        RunMarker {
            format: FORMAT_VERSION,
            tool_version: crate::TOOL_VERSION.to_string(),
            command,
            started: super::now_utc(),
            ended: None,
            status: Status::Running,
            runs: 1,
            kind: RunKind::Uprun,
            reason: None,
            writer: Writer::current(),
        }
    }

    /// The marker of a run that stopped on `error`: `status: failed`, with the reason.
    pub fn fail(&mut self, error: &str) {
        self.status = Status::Failed;
        self.ended = Some(super::now_utc());
        self.reason = Some(error.replace(['\n', '\r'], " "));
    }

    /// Whether the run is marked running but its writer no longer runs.
    pub fn writer_died(&self) -> bool {
        self.status == Status::Running && self.writer.as_ref().is_some_and(|w| !w.is_running())
    }

    /// Writes the marker into `dir` (atomically).
    pub fn write(&self, dir: &Path) -> Result<(), StoreError> {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "# This directory was written by uprun; upcmp reads it. See docs/format.md."
        );
        let _ = writeln!(s, "format: {}", self.format);
        let _ = writeln!(s, "tool-version: {}", self.tool_version);
        let _ = writeln!(s, "command: {}", self.command.replace('\n', " "));
        let _ = writeln!(s, "started: {}", self.started);
        if let Some(e) = &self.ended {
            let _ = writeln!(s, "ended: {e}");
        }
        let _ = writeln!(s, "status: {}", self.status.as_str());
        if let Some(r) = &self.reason {
            let _ = writeln!(s, "reason: {r}");
        }
        let _ = writeln!(s, "runs: {}", self.runs);
        if self.kind != RunKind::Uprun {
            let _ = writeln!(s, "kind: {}", self.kind.as_str());
        }
        if let Some(w) = &self.writer {
            let _ = writeln!(s, "writer: {} {} {}", w.pid, w.start_ticks, w.boot_id);
        }
        let path = dir.join(RUN_MARKER);
        write_atomic(&path, s.as_bytes()).or_else(|e| {
            // A full disk has no room for the temporary file: the marker is then rewritten
            // in place, so a run is never left marked running for want of a few bytes.
            fsio::overwrite_in_place(&path, s.as_bytes()).map_err(|_| e)
        })
    }

    /// Reads and checks the marker of `dir`.
    pub fn read(dir: &Path) -> Result<Self, StoreError> {
        let path = dir.join(RUN_MARKER);
        if path.symlink_metadata().is_err() {
            return Err(StoreError::NotARun {
                path: dir.to_path_buf(),
                marker: RUN_MARKER,
            });
        }
        let kv = parse_key_values(&read_text(&path)?, &path.display().to_string())?;
        let format: u32 = kv.require_parsed("format", "a format version number")?;
        if !(OLDEST_FORMAT..=FORMAT_VERSION).contains(&format) {
            return Err(StoreError::Version {
                path,
                found: format,
                supported: FORMAT_VERSION,
            });
        }
        let status = kv.require("status")?;
        Ok(RunMarker {
            format,
            tool_version: kv.require("tool-version")?.to_string(),
            command: kv.require("command")?.to_string(),
            started: kv.require("started")?.to_string(),
            ended: kv.get("ended").map(str::to_string),
            status: Status::parse(status).ok_or_else(|| {
                upcmp_parsers::ParseError::whole(
                    &path.display().to_string(),
                    "status: running, completed, interrupted or failed",
                )
            })?,
            runs: match kv.get("runs") {
                Some(_) => kv.require_parsed("runs", "a number of repetitions")?,
                None => 1,
            },
            kind: match kv.get("kind") {
                None | Some("uprun") => RunKind::Uprun,
                Some("upsrun") => RunKind::Upsrun,
                Some(_) => {
                    return Err(
                        upcmp_parsers::ParseError::whole(&path.display().to_string(), "kind: uprun or upsrun").into(),
                    )
                }
            },
            reason: kv.get("reason").map(str::to_string),
            writer: match kv.get("writer") {
                None => None,
                Some(w) => Some(Writer::parse(w).ok_or_else(|| {
                    upcmp_parsers::ParseError::whole(&path.display().to_string(), "writer: PID START-TICKS BOOT-ID")
                })?),
            },
        })
    }
}

/// One directory moved aside by a rotation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Moved {
    /// Where it was.
    pub from: PathBuf,
    /// Where it is now.
    pub to: PathBuf,
}

/// A directory claimed for writing: its cleaned path (no trailing slash) and the lock
/// held while it is written.
#[derive(Debug)]
pub struct Claim {
    /// The directory, cleaned of trailing slashes and `.` components.
    pub path: PathBuf,
    /// The lock beside it (`PATH.lock`), released when dropped.
    pub lock: fsio::DirLock,
}

/// Claims the directory `path` for writing by `tool`: refuses a path that names no
/// directory of its own, a parent directory every user may write that has no sticky bit
/// (unless `allow_shared_parent`), and a directory another process is writing (the lock
/// beside it).
pub fn claim_dir(path: &Path, tool: &'static str, allow_shared_parent: bool) -> Result<Claim, StoreError> {
    let path = fsio::clean(path);
    if !matches!(path.components().next_back(), Some(std::path::Component::Normal(_))) {
        return Err(StoreError::NoName { path });
    }
    if let (Some(parent), false) = (fsio::shared_parent(&path), allow_shared_parent) {
        return Err(StoreError::SharedParent { path, parent });
    }
    check_links(&path)?;
    match fsio::DirLock::try_lock(&path) {
        Ok(Some(lock)) => Ok(Claim { path, lock }),
        Ok(None) => Err(StoreError::Locked { path, tool }),
        Err(source) => {
            let mut lock = path.into_os_string();
            lock.push(".lock");
            Err(StoreError::Io {
                path: lock.into(),
                source,
            })
        }
    }
}

/// Refuses an output path that goes through a symbolic link in a sticky directory every
/// user may write, owned by neither root, the user, nor the directory's owner (see
/// [`fsio::check_links`]): `/tmp/evil -> /victim` must not make `/tmp/evil/res` land in
/// `/victim`.
pub fn check_links(path: &Path) -> Result<(), StoreError> {
    match fsio::check_links(path).map_err(io_err(path))? {
        Ok(()) => Ok(()),
        Err(l) => Err(StoreError::UntrustedLink {
            path: path.to_path_buf(),
            link: l.link,
            owner: l.owner,
        }),
    }
}

/// Refuses to write into, or move, the directory `path` or one of its older generations
/// (`path.old`, ...) when another user (neither root nor this one) owns it, unless
/// `allow_foreign`: its owner may have placed links in it where the writer's files go.
pub fn check_not_foreign(path: &Path, allow_foreign: bool) -> Result<(), StoreError> {
    if allow_foreign || path.symlink_metadata().is_err() {
        return Ok(());
    }
    for dir in std::iter::once(path.to_path_buf()).chain(old_generations(path)) {
        if let Some(owner) = fsio::foreign_owner(&dir) {
            return Err(StoreError::ForeignRun { path: dir, owner });
        }
    }
    Ok(())
}

/// Makes `path` a fresh, empty directory with `mode` (exactly, whatever the umask) for a
/// new run, as the original tools did: an existing `path` becomes `path.old`, and earlier
/// generations move one further (`path.old` to `path.old.2`, ...). Nothing is ever
/// deleted, and only directories that carry `marker` are moved. Returns what moved where.
pub fn rotate_and_create(path: &Path, marker: &'static str, mode: u32) -> Result<Vec<Moved>, StoreError> {
    let moved = rotate_away(path, marker)?;
    let parent = fsio::parent_of(path);
    std::fs::create_dir_all(&parent).map_err(io_err(&parent))?;
    // Never through a link, never into a directory someone else made in between.
    fsio::create_dir(path, mode).map_err(io_err(path))?;
    Ok(moved)
}

/// Moves an existing `path` (ours: it carries `marker`) to `path.old`, after moving each
/// earlier generation (`path.old`, `path.old.2`, ..., as far as they follow each other
/// without a gap; all ours) one further. Nothing is deleted, so a baseline run survives
/// any number of new runs under its name. Nothing happens when `path` does not exist.
pub fn rotate_away(path: &Path, marker: &'static str) -> Result<Vec<Moved>, StoreError> {
    check_rotatable(path, marker)?;
    let mut moved = Vec::new();
    if path.symlink_metadata().is_err() {
        return Ok(moved);
    }
    let generations = old_generations(path);
    for k in (1..=generations.len()).rev() {
        let (from, to) = (old_path_n(path, k), old_path_n(path, k + 1));
        fsio::rename_noreplace(&from, &to).map_err(io_err(&from))?;
        moved.push(Moved { from, to });
    }
    let to = old_path(path);
    fsio::rename_noreplace(path, &to).map_err(io_err(path))?;
    moved.push(Moved {
        from: path.to_path_buf(),
        to,
    });
    moved.reverse();
    Ok(moved)
}

/// The existing generations of `path`: `path.old`, `path.old.2`, ... up to the first
/// that does not exist.
fn old_generations(path: &Path) -> Vec<PathBuf> {
    (1..)
        .map(|k| old_path_n(path, k))
        .take_while(|p| p.symlink_metadata().is_ok())
        .collect()
}

/// Publishes a directory whole: writes `files` (name, contents) and the `marker` into
/// a new temporary sibling (an unpredictable name, created exclusively with mode 0700, so
/// nobody can have prepared it or a link under its name), then moves an existing `path`
/// aside (see [`rotate_away`]) and renames the sibling to `path`, never onto anything that
/// appeared there meanwhile. A failure part-way leaves no half-written `path`. The
/// directory ends with the mode a new directory gets under the umask. Returns what the
/// rotation moved.
pub fn publish_dir<N: AsRef<str>>(
    path: &Path,
    marker: &'static str,
    files: &[(N, Vec<u8>)],
) -> Result<Vec<Moved>, StoreError> {
    publish_dir_with(path, marker, |dir| {
        for (name, bytes) in files {
            dir.write(name.as_ref(), |w| w.write_all(bytes))?;
        }
        Ok(())
    })
}

/// The files of a directory that [`publish_dir_with`] is filling, each written straight
/// to disk as it is rendered.
pub struct NewFiles {
    dir: PathBuf,
}

impl NewFiles {
    /// Creates the file `name` (one plain path component) and lets `render` write it
    /// through a buffer: a large file is never held in memory whole.
    pub fn write(
        &self,
        name: &str,
        render: impl FnOnce(&mut std::io::BufWriter<std::fs::File>) -> std::io::Result<()>,
    ) -> Result<(), StoreError> {
        let p = self.dir.join(name);
        // A name is one plain component: nothing is written outside the directory.
        if !matches!(
            Path::new(name).components().collect::<Vec<_>>()[..],
            [std::path::Component::Normal(_)]
        ) {
            return Err(StoreError::NoName { path: p });
        }
        let f = fsio::create_new(&p, 0o666).map_err(io_err(&p))?;
        let mut w = std::io::BufWriter::with_capacity(1 << 16, f);
        render(&mut w).and_then(|()| w.flush()).map_err(io_err(&p))
    }
}

/// [`publish_dir`] with the files written by `fill`, one by one, through [`NewFiles::write`].
pub fn publish_dir_with(
    path: &Path,
    marker: &'static str,
    fill: impl FnOnce(&mut NewFiles) -> Result<(), StoreError>,
) -> Result<Vec<Moved>, StoreError> {
    check_rotatable(path, marker)?;
    let tmp = fsio::create_temp_dir_beside(path).map_err(io_err(path))?;
    let result = (|| {
        let mark = format!(
            "# Written by upcmp {}; upcmp may move this directory aside (never deletes it).\n",
            crate::TOOL_VERSION
        );
        let mut files = NewFiles { dir: tmp.clone() };
        files.write(marker, |w| w.write_all(mark.as_bytes()))?;
        fill(&mut files)?;
        let mode = 0o777 & !fsio::current_umask();
        std::fs::set_permissions(&tmp, std::os::unix::fs::PermissionsExt::from_mode(mode)).map_err(io_err(&tmp))?;
        let moved = rotate_away(path, marker)?;
        fsio::rename_noreplace(&tmp, path).map_err(io_err(path))?;
        Ok(moved)
    })();
    if result.is_err() {
        let _ = std::fs::remove_dir_all(&tmp);
    }
    result
}

/// Checks, without changing anything, that [`rotate_and_create`] would succeed as far
/// as ownership goes, so a run can refuse before it starts any work: `path` and every
/// generation that would move must carry `marker`.
pub fn check_rotatable(path: &Path, marker: &'static str) -> Result<(), StoreError> {
    if path.symlink_metadata().is_err() {
        return Ok(());
    }
    for dir in std::iter::once(path.to_path_buf()).chain(old_generations(path)) {
        if !is_ours(&dir, marker) {
            return Err(StoreError::NotOurs { path: dir, marker });
        }
    }
    Ok(())
}

fn owned_by_us(path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    path.symlink_metadata()
        .is_ok_and(|m| m.uid() == me && m.file_type().is_file())
}

/// Whether `dir` is a directory carrying `marker`, neither of them a symbolic link: a link
/// (to a directory, or as the marker) would let anyone make a foreign directory look
/// like ours.
fn is_ours(dir: &Path, marker: &str) -> bool {
    fsio::is_real_dir(dir) && fsio::is_real_file(&dir.join(marker))
}

/// `path` with `.old` appended to its last component: where [`rotate_away`] moves it.
pub fn old_path(path: &Path) -> PathBuf {
    old_path_n(path, 1)
}

/// Generation `k` of `path`: `path.old` for 1, `path.old.K` after.
pub fn old_path_n(path: &Path, k: usize) -> PathBuf {
    let mut s = path.as_os_str().to_os_string();
    s.push(".old");
    if k > 1 {
        s.push(format!(".{k}"));
    }
    PathBuf::from(s)
}

/// The files uprun writes at the top of a run directory, which no test may be named.
pub const RUN_FILES: &[&str] = &[RUN_MARKER, "system", TEST_LIST_FILE, "kallsyms.gz", "settings"];

/// Directory names for the tests of a list, unique by construction: the test's name for
/// its first line; for a later line of the same name, `NAME.K` with the smallest K from 2
/// that no line names itself and no earlier line got (so `a`, `a`, `a.2` give `a`, `a.3`,
/// `a.2`).
pub fn test_dir_names(tests: &[TestLine]) -> Vec<String> {
    let mut taken: HashSet<String> = tests.iter().map(|t| t.spec.name().to_string()).collect();
    let mut seen: HashSet<&str> = HashSet::new();
    let mut next: HashMap<&str, usize> = HashMap::new();
    tests
        .iter()
        .map(|t| {
            let name = t.spec.name();
            if seen.insert(name) {
                return name.to_string();
            }
            let k = next.entry(name).or_insert(1);
            loop {
                *k += 1;
                let candidate = format!("{name}.{k}");
                if taken.insert(candidate.clone()) {
                    return candidate;
                }
            }
        })
        .collect()
}

/// The directories holding one test's repetitions: the test directory itself when it
/// has a `prfout` (one run, and every format-1 directory), else `r1`, `r2`, … in order,
/// as far as they have a `prfout`; none when the test directory does not exist. A
/// directory of the run that is a symbolic link is an error: it is not followed.
pub fn repetition_dirs(test_dir: &Path) -> Result<Vec<PathBuf>, StoreError> {
    let exists = |p: &Path| p.symlink_metadata().is_ok();
    let real_dir = |d: &Path| -> Result<bool, StoreError> {
        match d.symlink_metadata() {
            Err(_) => Ok(false),
            Ok(m) if m.file_type().is_dir() => Ok(true),
            Ok(_) => Err(StoreError::Io {
                path: d.to_path_buf(),
                source: std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    "not a directory (a symbolic link is not followed inside a run; docs/security.md)",
                ),
            }),
        }
    };
    if !real_dir(test_dir)? {
        return Ok(Vec::new());
    }
    if exists(&test_dir.join(PRFOUT_FILE)) {
        return Ok(vec![test_dir.to_path_buf()]);
    }
    let mut reps = Vec::new();
    for k in 1.. {
        let d = test_dir.join(repetition_name(k));
        if !real_dir(&d)? || !exists(&d.join(PRFOUT_FILE)) {
            break;
        }
        reps.push(d);
    }
    Ok(reps)
}

/// The directory name of repetition `k` (1-based).
pub fn repetition_name(k: usize) -> String {
    format!("r{k}")
}

/// The status file of one test.
#[derive(Debug, Clone, PartialEq)]
pub struct TestStatus {
    /// Its directory name.
    pub test: String,
    /// The command that ran (one copy).
    pub command: String,
    /// How many copies ran at once.
    pub copies: u32,
    /// How it ended.
    pub status: Status,
    /// Exit codes of the copies (-signal for a copy killed by a signal).
    pub exit_codes: Vec<i32>,
    /// Start (UTC).
    pub started: String,
    /// End (UTC).
    pub ended: String,
    /// Wall time of the sampled interval.
    pub wall_sec: f64,
}

/// File name of a test's status.
pub const STATUS_FILE: &str = "status";

impl TestStatus {
    /// Writes `dir/status`.
    pub fn write(&self, dir: &Path) -> Result<(), StoreError> {
        let codes: Vec<String> = self.exit_codes.iter().map(i32::to_string).collect();
        let s = format!(
            "test: {}\ncommand: {}\ncopies: {}\nstatus: {}\nexit-codes: {}\nstarted: {}\nended: {}\nwall-sec: {:.6}\n",
            self.test,
            self.command.replace('\n', " "),
            self.copies,
            self.status.as_str(),
            codes.join(" "),
            self.started,
            self.ended,
            self.wall_sec
        );
        write_atomic(&dir.join(STATUS_FILE), s.as_bytes())
    }

    /// Reads `dir/status`.
    pub fn read(dir: &Path) -> Result<Self, StoreError> {
        let path = dir.join(STATUS_FILE);
        let name = path.display().to_string();
        let kv: KeyValues = parse_key_values(&read_text(&path)?, &name)?;
        let status = kv.require("status")?;
        let exit_codes = kv
            .require("exit-codes")?
            .split_whitespace()
            .map(|c| c.parse())
            .collect::<Result<Vec<i32>, _>>()
            .map_err(|_| upcmp_parsers::ParseError::whole(&name, "exit-codes: whole numbers"))?;
        Ok(TestStatus {
            test: kv.require("test")?.to_string(),
            command: kv.require("command")?.to_string(),
            copies: kv.require_parsed("copies", "a number of copies")?,
            status: Status::parse(status)
                .ok_or_else(|| upcmp_parsers::ParseError::whole(&name, "status: completed, failed or interrupted"))?,
            exit_codes,
            started: kv.require("started")?.to_string(),
            ended: kv.require("ended")?.to_string(),
            wall_sec: kv.require_parsed("wall-sec", "a number of seconds")?,
        })
    }
}

/// A uprun output directory opened for reading.
#[derive(Debug, Clone)]
pub struct Run {
    /// Its path.
    pub dir: PathBuf,
    /// Its marker.
    pub marker: RunMarker,
    /// The test list it ran.
    pub tests: Vec<TestLine>,
    /// Directory name of each test, parallel to `tests`.
    pub test_dirs: Vec<String>,
}

/// File name of the copy of the test list in a run.
pub const TEST_LIST_FILE: &str = "test_list";

impl Run {
    /// Opens `dir`: checks the marker and its format version, reads the test list.
    pub fn open(dir: &Path) -> Result<Self, StoreError> {
        if !dir.is_dir() {
            return Err(StoreError::Io {
                path: dir.to_path_buf(),
                source: std::io::Error::new(std::io::ErrorKind::NotFound, "no such directory"),
            });
        }
        let mut marker = RunMarker::read(dir)?;
        if marker.writer_died() {
            let pid = marker.writer.as_ref().map_or(0, |w| w.pid);
            marker.fail(&format!(
                "uprun (pid {pid}) ended without finishing the run (killed, or the machine restarted)"
            ));
            // Said once for every later reader, when the marker is ours to rewrite: a
            // reader never writes into another user's run.
            if owned_by_us(&dir.join(RUN_MARKER)) {
                let _ = marker.write(dir);
            }
        }
        let list = dir.join(TEST_LIST_FILE);
        let tests = parse_test_list(&read_text(&list)?, &list.display().to_string())?;
        let test_dirs = test_dir_names(&tests);
        Ok(Run {
            dir: dir.to_path_buf(),
            marker,
            tests,
            test_dirs,
        })
    }

    /// The directory of test `name`, if the run has it.
    pub fn test_dir(&self, name: &str) -> Option<PathBuf> {
        self.test_dirs.iter().any(|d| d == name).then(|| self.dir.join(name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rotation_keeps_every_generation_and_moves_only_ours() {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("out");
        assert!(rotate_and_create(&out, RUN_MARKER, 0o700).unwrap().is_empty());
        assert!(out.is_dir());
        // Ours (marked): each new run pushes the earlier ones one generation further.
        for k in 1..=3 {
            crate::fsio::write_atomic(&out.join(RUN_MARKER), b"x", 0o644).unwrap();
            crate::fsio::write_atomic(&out.join("run"), k.to_string().as_bytes(), 0o644).unwrap();
            let moved = rotate_and_create(&out, RUN_MARKER, 0o700).unwrap();
            assert_eq!(moved.len(), k, "{moved:?}");
            assert_eq!(
                (moved[0].from.clone(), moved[0].to.clone()),
                (out.clone(), old_path(&out))
            );
        }
        let run_in = |p: PathBuf| std::fs::read_to_string(p.join("run")).unwrap();
        assert_eq!(run_in(old_path(&out)), "3");
        assert_eq!(run_in(old_path_n(&out, 2)), "2");
        assert_eq!(run_in(old_path_n(&out, 3)), "1", "the first run, a baseline, is kept");
        assert!(!old_path_n(&out, 4).exists());
        // Not ours: refused, untouched.
        let mine = tmp.path().join("home");
        std::fs::create_dir(&mine).unwrap();
        crate::fsio::write_atomic(&mine.join("thesis.tex"), b"data", 0o644).unwrap();
        let e = rotate_and_create(&mine, RUN_MARKER, 0o700).unwrap_err();
        assert!(e.to_string().contains("will not move or delete it"), "{e}");
        assert!(check_rotatable(&mine, RUN_MARKER).is_err());
        assert_eq!(std::fs::read_to_string(mine.join("thesis.tex")).unwrap(), "data");
        // Ours, but a generation that would move is not: refused before anything moves.
        crate::fsio::write_atomic(&out.join(RUN_MARKER), b"x", 0o644).unwrap();
        std::fs::remove_file(old_path_n(&out, 2).join(RUN_MARKER)).unwrap();
        let e = rotate_and_create(&out, RUN_MARKER, 0o700).unwrap_err();
        assert!(e.to_string().contains("out.old.2: exists but has no upcmp-run"), "{e}");
        assert!(out.join(RUN_MARKER).is_file() && old_path_n(&out, 3).is_dir());
    }

    #[test]
    fn duplicate_tests_get_numbered_dirs() {
        let t = parse_test_list("forkwait\nx: true\nforkwait -loop 5\nforkwait\n", "t").unwrap();
        assert_eq!(test_dir_names(&t), ["forkwait", "x", "forkwait.2", "forkwait.3"]);
        // A line naming itself like a later copy keeps its name; the copy moves on.
        let t = parse_test_list("a: true\na: true\na.2: true\n", "t").unwrap();
        assert_eq!(test_dir_names(&t), ["a", "a.3", "a.2"]);
        let t = parse_test_list("a.2: true\na: true\na.2: true\na: true\na.3: true\n", "t").unwrap();
        let names = test_dir_names(&t);
        assert_eq!(names, ["a.2", "a", "a.2.2", "a.4", "a.3"]);
        assert_eq!(names.iter().collect::<HashSet<_>>().len(), names.len());
    }

    #[test]
    fn marker_and_status_round_trip() {
        let tmp = tempfile::tempdir().unwrap();
        let mut m = RunMarker::start("uprun auto out".into());
        m.write(tmp.path()).unwrap();
        assert_eq!(RunMarker::read(tmp.path()).unwrap(), m);
        m.status = Status::Interrupted;
        m.ended = Some("2026-01-01T00:00:00Z".into());
        m.write(tmp.path()).unwrap();
        assert_eq!(RunMarker::read(tmp.path()).unwrap(), m);
        m.kind = RunKind::Upsrun;
        m.write(tmp.path()).unwrap();
        assert!(read_text(&tmp.path().join(RUN_MARKER))
            .unwrap()
            .contains("\nkind: upsrun\n"));
        assert_eq!(RunMarker::read(tmp.path()).unwrap(), m);
        let s = TestStatus {
            test: "a".into(),
            command: "true".into(),
            copies: 2,
            status: Status::Failed,
            exit_codes: vec![0, -9],
            started: "s".into(),
            ended: "e".into(),
            wall_sec: 1.5,
        };
        s.write(tmp.path()).unwrap();
        assert_eq!(TestStatus::read(tmp.path()).unwrap(), s);
    }

    #[test]
    fn wrong_version_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        crate::fsio::write_atomic(
            &tmp.path().join(RUN_MARKER),
            "format: 9\nstatus: completed\n".as_bytes(),
            0o644,
        )
        .unwrap();
        let e = RunMarker::read(tmp.path()).unwrap_err();
        assert!(
            e.to_string().contains("format 9, but this upcmp reads formats 1 to 3"),
            "{e}"
        );
    }
}
