//! Hostile and broken input (docs/security.md): no crash, no hang, no leak, nothing lost.
//! Each test is a case a review reproduced on a release build before it was fixed.

use crate::util::{copy_tree, perf_usable, run_in, stderr, stdout, tempdir, testdata};
use std::fs;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const UPCMP: &str = env!("CARGO_BIN_EXE_upcmp");
const PRFCMP: &str = env!("CARGO_BIN_EXE_prfcmp");
const UPRUN: &str = env!("CARGO_BIN_EXE_uprun");

/// What a child did: its output and its peak memory.
struct Ran {
    out: Output,
    /// From wait4: an upper bound, as it counts the test process's own pages the child
    /// held between fork and exec.
    max_rss_mb: f64,
    /// The child's own peak (VmHWM after exec), read every 5 ms while it ran: all but its
    /// last few milliseconds; 0 when it ended before the first read.
    hwm_mb: f64,
}

/// The VmHWM of `pid` in MB, if it is still there to be read.
fn vm_hwm_mb(pid: libc::pid_t) -> Option<f64> {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kb = status.lines().find_map(|l| l.strip_prefix("VmHWM:"))?;
    Some(kb.trim().trim_end_matches("kB").trim().parse::<f64>().ok()? / 1024.0)
}

/// Runs `bin` in `cwd`, killing it after `timeout` (then the test fails), with at most
/// `max_memory_gb` of address space (an allocation past it fails, and aborts the child)
/// when given.
fn run_limited(cwd: &Path, bin: &str, args: &[&str], timeout: Duration, max_memory_gb: Option<u64>) -> Ran {
    run_limited_with_input(cwd, bin, args, Stdio::null(), timeout, max_memory_gb)
}

/// [`run_limited`] with `stdin` as the standard input.
fn run_limited_with_input(
    cwd: &Path,
    bin: &str,
    args: &[&str],
    stdin: Stdio,
    timeout: Duration,
    max_memory_gb: Option<u64>,
) -> Ran {
    let mut cmd = Command::new(bin);
    cmd.args(args)
        .current_dir(cwd)
        .stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(gb) = max_memory_gb {
        // SAFETY: setrlimit is async-signal-safe and touches only the child.
        unsafe {
            cmd.pre_exec(move || {
                let lim = libc::rlimit {
                    rlim_cur: gb << 30,
                    rlim_max: gb << 30,
                };
                libc::setrlimit(libc::RLIMIT_AS, &lim);
                Ok(())
            });
        }
    }
    let t0 = Instant::now();
    let mut child = cmd.spawn().unwrap_or_else(|e| panic!("running {bin}: {e}"));
    let (mut o, mut e) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let out_reader = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = o.read_to_end(&mut v);
        v
    });
    let err_reader = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = e.read_to_end(&mut v);
        v
    });
    let pid = child.id() as libc::pid_t;
    let (mut status, mut usage) = (0, unsafe { std::mem::zeroed::<libc::rusage>() });
    let mut hwm_mb: f64 = 0.0;
    loop {
        if let Some(mb) = vm_hwm_mb(pid) {
            hwm_mb = hwm_mb.max(mb);
        }
        // SAFETY: wait4 on our own child, into locals.
        let r = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
        if r == pid {
            break;
        }
        if t0.elapsed() > timeout {
            let _ = child.kill();
            unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
            panic!("{bin} {args:?} ran for more than {timeout:?}");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    std::mem::forget(child); // reaped above
    let status = std::os::unix::process::ExitStatusExt::from_raw(status);
    Ran {
        out: Output {
            status,
            stdout: out_reader.join().unwrap(),
            stderr: err_reader.join().unwrap(),
        },
        max_rss_mb: usage.ru_maxrss as f64 / 1024.0,
        hwm_mb,
    }
}

/// The two fixture runs in `dir`.
fn fixture_runs(dir: &Path) {
    for run in ["outdir1", "outdir2"] {
        copy_tree(&testdata(&format!("forkwait/{run}")), &dir.join(run));
    }
}

fn mode(p: &Path) -> u32 {
    fs::symlink_metadata(p).unwrap().permissions().mode() & 0o7777
}

/// A file holding a line no error message may ever show.
fn secret(dir: &Path) -> PathBuf {
    let s = dir.join("shadow");
    fs::write(&s, "root:$6$SECRETHASH$x:19000:0:99999:7:::\n").unwrap();
    s
}

// ---------------------------------------------------------------------------------------
// Rotation and the results directory

#[test]
fn rotation_never_deletes_earlier_results() {
    let tmp = tempdir();
    fixture_runs(tmp.path());
    for _ in 0..3 {
        let out = run_in(tmp.path(), UPCMP, &["outdir1", "outdir2", "res", "-q"]);
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let out = run_in(tmp.path(), UPCMP, &["outdir1", "outdir2", "res", "-q"]);
    let err = stderr(&out);
    assert!(
        err.contains("upcmp: kept the earlier results: moved res to res.old\n"),
        "{err}"
    );
    assert!(err.contains("moved res.old.2 to res.old.3\n"), "{err}");
    for d in ["res", "res.old", "res.old.2", "res.old.3"] {
        assert!(tmp.path().join(d).join("results").is_file(), "{d}");
    }
}

#[test]
fn results_never_go_through_a_link_planted_at_the_temporary_name() {
    // The temporary sibling used to be RESULTS_DIR.tmp-PID: another user could place a
    // link there and receive root's results (then the link was renamed into place).
    let tmp = tempdir();
    let victim = tmp.path().join("victim");
    fs::create_dir(&victim).unwrap();
    let res = tmp.path().join("res");
    let planted = tmp.path().join(format!("res.tmp-{}", std::process::id()));
    std::os::unix::fs::symlink(&victim, &planted).unwrap();
    let files = [("results", b"report".to_vec())];
    upcmp::store::outdir::publish_dir(&res, upcmp::store::outdir::RESULTS_MARKER, &files).unwrap();
    assert_eq!(
        fs::read_dir(&victim).unwrap().count(),
        0,
        "nothing lands in the link's target"
    );
    assert!(!fs::symlink_metadata(&res).unwrap().file_type().is_symlink());
    assert_eq!(fs::read(res.join("results")).unwrap(), b"report");
    assert!(
        fs::symlink_metadata(&planted).unwrap().file_type().is_symlink(),
        "left alone"
    );
}

#[test]
fn a_link_as_the_directory_or_its_marker_is_never_ours() {
    let tmp = tempdir();
    fixture_runs(tmp.path());
    // A foreign directory with a marker of its own, reached through a link named RESULTS_DIR.
    let victim = tmp.path().join("victim");
    fs::create_dir(&victim).unwrap();
    fs::write(victim.join("upcmp-results"), "").unwrap();
    fs::write(victim.join("data"), "keep").unwrap();
    std::os::unix::fs::symlink(&victim, tmp.path().join("res")).unwrap();
    // A directory whose marker is a link to a file elsewhere.
    let fake = tmp.path().join("fake");
    fs::create_dir(&fake).unwrap();
    fs::write(fake.join("data"), "keep").unwrap();
    std::os::unix::fs::symlink(victim.join("upcmp-results"), fake.join("upcmp-results")).unwrap();
    for target in ["res", "fake"] {
        let out = run_in(tmp.path(), UPCMP, &["outdir1", "outdir2", target, "-q"]);
        assert_eq!(out.status.code(), Some(2), "{target}: {}", stderr(&out));
        assert!(stderr(&out).contains("will not move or delete it"), "{}", stderr(&out));
        assert!(
            !tmp.path().join(format!("{target}.old")).exists(),
            "{target} was rotated"
        );
    }
    assert_eq!(fs::read_to_string(victim.join("data")).unwrap(), "keep");
    assert_eq!(fs::read_to_string(fake.join("data")).unwrap(), "keep");
    // The same for an earlier generation that would move.
    assert!(run_in(tmp.path(), UPCMP, &["outdir1", "outdir2", "ok", "-q"])
        .status
        .success());
    std::os::unix::fs::symlink(&victim, tmp.path().join("ok.old")).unwrap();
    let out = run_in(tmp.path(), UPCMP, &["outdir1", "outdir2", "ok", "-q"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("ok.old: exists but has no upcmp-results"),
        "{}",
        stderr(&out)
    );
    assert_eq!(fs::read_dir(&victim).unwrap().count(), 2);
}

#[test]
fn a_parent_every_user_may_write_is_refused_unless_insisted() {
    let tmp = tempdir();
    fixture_runs(tmp.path());
    let shared = tmp.path().join("shared");
    fs::create_dir(&shared).unwrap();
    fs::set_permissions(&shared, fs::Permissions::from_mode(0o777)).unwrap();
    let out = run_in(tmp.path(), UPCMP, &["outdir1", "outdir2", "shared/res", "-q"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("shared/res: its directory shared may be written by every user"),
        "{err}"
    );
    assert!(err.contains("--allow-world-writable-parent"), "{err}");
    assert!(!shared.join("res").exists());
    let out = run_in(
        tmp.path(),
        UPCMP,
        &[
            "outdir1",
            "outdir2",
            "shared/res",
            "-q",
            "--allow-world-writable-parent",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    // With the sticky bit (as /tmp), nobody may replace another's entries: allowed.
    fs::set_permissions(&shared, fs::Permissions::from_mode(0o1777)).unwrap();
    let out = run_in(tmp.path(), UPCMP, &["outdir1", "outdir2", "shared/res2", "-q"]);
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn a_trailing_slash_changes_nothing() {
    let tmp = tempdir();
    fixture_runs(tmp.path());
    let out = run_in(tmp.path(), UPCMP, &["outdir1/", "outdir2/", "newres/", "-q"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("results written to newres/results,"),
        "{}",
        stderr(&out)
    );
    assert!(tmp.path().join("newres/results").is_file());
    let names: Vec<String> = fs::read_dir(tmp.path().join("newres"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(names.iter().all(|n| !n.contains("tmp")), "{names:?}");
    // The same command without the slash finds its own results and keeps them.
    let out = run_in(tmp.path(), UPCMP, &["outdir1", "outdir2", "newres", "-q"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(tmp.path().join("newres.old/results").is_file());
}

#[test]
fn two_upcmp_on_one_results_dir_never_mix() {
    let tmp = tempdir();
    fixture_runs(tmp.path());
    // Held by someone else: said at once, nothing touched.
    let lock = upcmp::fsio::DirLock::try_lock(&tmp.path().join("res"))
        .unwrap()
        .unwrap();
    let out = run_in(tmp.path(), UPCMP, &["outdir1", "outdir2", "res", "-q"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("another upcmp is writing res (it holds res.lock)"),
        "{}",
        stderr(&out)
    );
    assert!(!tmp.path().join("res").exists());
    drop(lock);
    // Eight at once: each writes whole results or says why not.
    let children: Vec<_> = (0..8)
        .map(|_| {
            Command::new(UPCMP)
                .args(["outdir1", "outdir2", "res", "-q"])
                .current_dir(tmp.path())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut ok = 0;
    for c in children {
        let out = c.wait_with_output().unwrap();
        if out.status.success() {
            ok += 1;
        } else {
            assert!(
                stderr(&out).contains("another upcmp is writing res"),
                "{}",
                stderr(&out)
            );
        }
    }
    assert!(ok >= 1);
    for e in fs::read_dir(tmp.path()).unwrap() {
        let name = e.unwrap().file_name().to_string_lossy().into_owned();
        if name.starts_with("res") {
            assert!(!name.contains("tmp") && !name.ends_with(".lock"), "left behind: {name}");
            assert!(tmp.path().join(&name).join("results.json").is_file(), "{name} is whole");
        }
    }
}

// ---------------------------------------------------------------------------------------
// Links, FIFOs and devices

#[test]
fn files_of_a_run_reached_through_links_are_neither_read_nor_quoted() {
    for (file, expect) in [
        ("test_list", "outdir1/test_list: a symbolic link, which is not followed"),
        ("system", "outdir1/system: a symbolic link"),
        ("forkwait/prfout", "outdir1/forkwait/prfout: a symbolic link"),
        ("forkwait/upout", "outdir1/forkwait/upout: a symbolic link"),
        ("upcmp-run", "outdir1/upcmp-run: a symbolic link"),
    ] {
        let tmp = tempdir();
        fixture_runs(tmp.path());
        let target = tmp.path().join("outdir1").join(file);
        fs::remove_file(&target).unwrap();
        std::os::unix::fs::symlink(secret(tmp.path()), &target).unwrap();
        let out = run_in(tmp.path(), UPCMP, &["outdir1", "outdir2", "res"]);
        assert_eq!(out.status.code(), Some(2), "{file}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(!err.contains("SECRET") && !err.contains("root:"), "{file}: {err}");
        assert!(err.contains(expect), "{file}: {err}");
    }
    // A test directory that is a link.
    let tmp = tempdir();
    fixture_runs(tmp.path());
    let test = tmp.path().join("outdir1/forkwait");
    fs::rename(&test, tmp.path().join("elsewhere")).unwrap();
    std::os::unix::fs::symlink(tmp.path().join("elsewhere"), &test).unwrap();
    let out = run_in(tmp.path(), UPCMP, &["outdir1", "outdir2", "res"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("outdir1/forkwait: not a directory (a symbolic link"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn an_input_named_through_a_link_is_read_but_never_quoted() {
    let tmp = tempdir();
    std::os::unix::fs::symlink(secret(tmp.path()), tmp.path().join("in.txt")).unwrap();
    let a = testdata("import/a.folded");
    let out = run_in(
        tmp.path(),
        PRFCMP,
        &["in.txt", a.to_str().unwrap(), "--input-format", "prfout"],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("in.txt:1:"), "the place is said: {err}");
    assert!(
        err.contains("(not quoted: the file is reached through a symbolic link)"),
        "{err}"
    );
    assert!(!err.contains("SECRET"), "{err}");
}

/// A FIFO with no writer at `p`.
fn fifo(p: &Path) {
    let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

#[test]
fn fifos_and_devices_where_files_belong_are_refused_at_once() {
    let tmp = tempdir();
    fixture_runs(tmp.path());
    let t = Duration::from_secs(20);
    // A run's file as a FIFO used to hang upcmp forever.
    let system = tmp.path().join("outdir1/system");
    fs::remove_file(&system).unwrap();
    fifo(&system);
    let r = run_limited(tmp.path(), UPCMP, &["outdir1", "outdir2", "res"], t, None);
    assert_eq!(r.out.status.code(), Some(2));
    assert!(
        stderr(&r.out).contains("outdir1/system: a FIFO, not a regular file"),
        "{}",
        stderr(&r.out)
    );
    // Recordings and profiles named on the command line.
    fifo(&tmp.path().join("pipe"));
    let a = testdata("import/a.folded");
    let a = a.to_str().unwrap();
    for (input, kind) in [("pipe", "a FIFO"), ("/dev/zero", "a character device")] {
        for format in [
            None,
            Some("perf-script"),
            Some("folded"),
            Some("perf-data"),
            Some("prfout"),
        ] {
            let mut args = vec![input, a];
            if let Some(f) = format {
                args.extend(["--input-format", f]);
            }
            let r = run_limited(tmp.path(), PRFCMP, &args, t, Some(2));
            assert_eq!(r.out.status.code(), Some(2), "{args:?}: {}", stderr(&r.out));
            assert!(stderr(&r.out).contains(kind), "{args:?}: {}", stderr(&r.out));
        }
    }
    // A test list, checked before anything runs (no perf needed to get there).
    for list in ["pipe", "/dev/zero"] {
        let r = run_limited(tmp.path(), UPRUN, &["auto", "out", "--test-list", list], t, Some(2));
        assert_eq!(r.out.status.code(), Some(2), "{list}: {}", stderr(&r.out));
        assert!(stderr(&r.out).contains("not a regular file"), "{}", stderr(&r.out));
        assert!(!tmp.path().join("out").exists());
    }
}

#[test]
fn a_mapping_or_perf_map_naming_a_device_reads_nothing() {
    use upcmp::symbols::{load_perf_map, load_user_symbols};
    let t0 = Instant::now();
    for path in [&b"/dev/random"[..], b"/dev/zero", b"/proc/self/fd/0"] {
        assert!(
            load_user_symbols(path, None).is_err(),
            "{}",
            String::from_utf8_lossy(path)
        );
    }
    // A JIT map linked to /dev/zero, and one a foreign user owns.
    let tmp = tempdir();
    let map = tmp.path().join("perf-1.map");
    std::os::unix::fs::symlink("/dev/zero", &map).unwrap();
    assert!(load_perf_map(&map).is_none());
    let foreign = tmp.path().join("perf-2.map");
    fs::write(&foreign, "1000 10 jitted\n").unwrap();
    assert!(load_perf_map(&foreign).is_some(), "our own map is read");
    if crate::util::is_root() {
        std::os::unix::fs::chown(&foreign, Some(65534), None).unwrap();
        assert!(
            load_perf_map(&foreign).is_none(),
            "as perf: another user's map is ignored"
        );
    }
    assert!(t0.elapsed() < Duration::from_secs(10));
}

#[test]
fn a_samples_stream_without_newlines_stops_at_one_line() {
    use flate2::write::GzEncoder;
    use std::io::Write;
    let tmp = tempdir();
    let p = tmp.path().join("samples.gz");
    // 4 MiB of compressed zeros expand to 4 GiB; this one to 64 MiB, without a newline.
    let mut e = GzEncoder::new(fs::File::create(&p).unwrap(), flate2::Compression::fast());
    writeln!(e, "upcmp-samples 1").unwrap();
    let zeros = vec![b'0'; 1 << 20];
    for _ in 0..64 {
        e.write_all(&zeros).unwrap();
    }
    e.finish().unwrap();
    let t0 = Instant::now();
    let err = upcmp::store::samples::for_each_record(&p, |_| {})
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("samples.gz:2: expected a line of at most 4194304 bytes"),
        "{err}"
    );
    assert!(t0.elapsed() < Duration::from_secs(10));
}

// ---------------------------------------------------------------------------------------
// Resources: memory in proportion to the input

#[test]
fn a_huge_cpu_number_costs_nothing() {
    // One 115-byte line made prfcmp allocate 7.7 GB and abort after 47 s.
    let tmp = tempdir();
    fs::write(
        tmp.path().join("cpu.txt"),
        "dd 7 [100000000] 10.000000: 250000 cpu-clock: \n\tffffffff81000000 do_syscall_64+0x1 ([kernel.kallsyms])\n\n",
    )
    .unwrap();
    let a = testdata("import/a.folded");
    let r = run_limited(
        tmp.path(),
        PRFCMP,
        &["cpu.txt", a.to_str().unwrap(), "--input-format", "perf-script"],
        Duration::from_secs(30),
        Some(2),
    );
    let code = r.out.status.code();
    assert!(code == Some(0) || code == Some(2), "{code:?}: {}", stderr(&r.out));
    assert!(r.max_rss_mb < 300.0, "{} MB", r.max_rss_mb);
}

#[test]
fn a_very_long_name_costs_memory_in_proportion() {
    // A 100 MB name made upcmp abort on a 4.7 GB allocation; 1 MB cost 113 MB.
    let tmp = tempdir();
    fixture_runs(tmp.path());
    let p = tmp.path().join("outdir1/forkwait/prfout");
    let long = "x".repeat(20 << 20);
    let text = fs::read_to_string(&p)
        .unwrap()
        .replace("[kernel] bcopy\n", &format!("[kernel] {long}\n"));
    fs::write(&p, text).unwrap();
    let r = run_limited(
        tmp.path(),
        UPCMP,
        &["outdir1", "outdir2", "res", "-q"],
        Duration::from_secs(60),
        Some(4),
    );
    assert!(r.out.status.success(), "{}", stderr(&r.out));
    // The input is read (20 MB) and parsed (a copy): not 47 copies.
    assert!(r.max_rss_mb < 250.0, "{} MB", r.max_rss_mb);
    let report = fs::read_to_string(tmp.path().join("res/results")).unwrap();
    assert!(
        report.contains("1 names longer than 4096 bytes were cut to that length"),
        "the cut is said"
    );
    assert!(report.len() < 1 << 20, "{} bytes of report", report.len());
}

/// `copies` copies of a perf.data file's records in one file: the same processes,
/// mappings and stacks, `copies` times the samples. The header's data size and the
/// feature sections' offsets (behind the data) move with the data.
fn perf_data_repeated(base: &[u8], copies: usize) -> Vec<u8> {
    let u64_at = |at: usize| u64::from_le_bytes(base[at..at + 8].try_into().unwrap());
    let (data_at, data_len) = (u64_at(40) as usize, u64_at(48) as usize);
    let features: u32 = base[72..104].iter().map(|b| b.count_ones()).sum();
    let table = data_at + data_len;
    let shift = ((copies - 1) * data_len) as u64;
    let mut out = base[..data_at].to_vec();
    out[48..56].copy_from_slice(&((data_len * copies) as u64).to_le_bytes());
    for _ in 0..copies {
        out.extend_from_slice(&base[data_at..table]);
    }
    for i in 0..features as usize {
        let at = table + 16 * i;
        out.extend_from_slice(&(u64_at(at) + shift).to_le_bytes());
        out.extend_from_slice(&base[at + 8..at + 16]);
    }
    out.extend_from_slice(&base[table + 16 * features as usize..]);
    out
}

/// The number in `text` right after `prefix`.
fn count_after(text: &str, prefix: &str) -> u64 {
    let at = text.find(prefix).unwrap_or_else(|| panic!("no {prefix:?} in {text}")) + prefix.len();
    text[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .unwrap()
}

// A 2.1 GB perf.data needed 5.3 GB and a 2 GB folded file 6.7 GB: an import's memory must
// follow the distinct functions and stacks, not the records. The same distinct content 8
// times as often may cost at most a quarter more, plus 16 MiB (the second reader of a large
// perf.data, buffers); a buffer per record would cost hundreds of MB. benches/import_memory.sh
// measures real recordings against perf report.
#[test]
fn issue26_import_memory_follows_distinct_stacks_not_records() {
    let tmp = tempdir();
    let d = tmp.path();
    fs::write(d.join("tiny.folded"), "tiny;stack 1\n").unwrap();
    let kallsyms = testdata("upsrun/callgraph/kallsyms");
    let kallsyms = kallsyms.to_str().unwrap();
    let peak = |args: &[&str]| {
        let r = run_limited(d, args[0], &args[1..], Duration::from_secs(300), None);
        assert!(r.out.status.success(), "{args:?}: {}", stderr(&r.out));
        assert!(r.hwm_mb > 0.0, "{args:?} was measured while it ran");
        (r.hwm_mb, stderr(&r.out))
    };
    let within = |what: &str, one: f64, eight: f64| {
        assert!(
            eight <= one * 1.25 + 16.0,
            "{what}: {one:.1} MB for the records once, {eight:.1} MB for 8 times as many"
        );
    };

    // perf.data with call chains (75 samples a copy): 1,300 and 10,400 copies, 10 and 77 MB.
    let base = fs::read(testdata("import/stacks.data")).unwrap();
    let mut rss = Vec::new();
    for copies in [1300, 10400] {
        let f = format!("x{copies}.data");
        fs::write(d.join(&f), perf_data_repeated(&base, copies)).unwrap();
        let (flat, err) = peak(&[PRFCMP, &f, "tiny.folded", "--kallsyms", kallsyms]);
        let dash = count_after(&err, "[unknown] [dash]: ");
        let out = format!("out{copies}");
        let (stacks, _) = peak(&[UPCMP, "--perf", &f, &f, &out, "-q", "--kallsyms", kallsyms]);
        assert!(
            d.join(out).join(format!("{f}.flamediff.svg")).exists(),
            "stacks compared"
        );
        fs::remove_file(d.join(&f)).unwrap();
        rss.push((flat, stacks, dash));
    }
    assert_eq!(rss[1].2, 8 * rss[0].2, "every record is read");
    eprintln!("perf.data (flat, stacks): {:.1?} and {:.1?} MB", rss[0], rss[1]);
    within("prfcmp perf.data", rss[0].0, rss[1].0);
    within("upcmp --perf perf.data, stacks", rss[0].1, rss[1].1);

    // perf script text, 11 and 90 MB.
    let text = fs::read_to_string(testdata("import/filter.perf-script")).unwrap();
    let mut rss = Vec::new();
    for copies in [200, 1600] {
        let f = format!("x{copies}.perf-script");
        fs::write(d.join(&f), text.repeat(copies)).unwrap();
        rss.push(peak(&[PRFCMP, &f, "tiny.folded", "--kallsyms", kallsyms]).0);
        fs::remove_file(d.join(&f)).unwrap();
    }
    eprintln!("perf script: {:.1} and {:.1} MB", rss[0], rss[1]);
    within("prfcmp perf script", rss[0], rss[1]);

    // Folded stacks: 20,000 distinct stacks over 2,000 names, the block 4 and 32 times
    // (6 and 50 MB).
    let block: String = (0..20_000)
        .map(|i| {
            let f: Vec<String> = (0..5)
                .map(|k| format!("function_{:04}", (i * 7 + k * 331) % 2000))
                .collect();
            format!("{} {}\n", f.join(";"), 1 + i % 5)
        })
        .collect();
    let mut rss = Vec::new();
    for copies in [4, 32] {
        let f = format!("x{copies}.folded");
        fs::write(d.join(&f), block.repeat(copies)).unwrap();
        let out = format!("out{copies}");
        rss.push(peak(&[UPCMP, "--perf", &f, "tiny.folded", &out, "-q"]).0);
        fs::remove_file(d.join(&f)).unwrap();
    }
    within("upcmp --perf folded", rss[0], rss[1]);

    // The measure sees memory: 8 times the distinct names (of 200 bytes) do cost more.
    let distinct: String = (0..160_000)
        .map(|i| format!("{}_{i:08} 1\n", "n".repeat(200)))
        .collect();
    fs::write(d.join("distinct.folded"), distinct).unwrap();
    let grown = peak(&[UPCMP, "--perf", "distinct.folded", "tiny.folded", "outd", "-q"]).0;
    eprintln!(
        "folded: {:.1} and {:.1} MB; 8 times the distinct names: {grown:.1} MB",
        rss[0], rss[1]
    );
    assert!(grown > rss[1] * 1.25 + 16.0, "{grown:.1} MB for 8 times the names");
}

// ---------------------------------------------------------------------------------------
// perf.data headers that lie

/// Mutants of a perf.data file, made by a fixed recipe: every header field, every feature
/// section's offset and size, the counts inside the sections, record sizes, and random
/// bytes, set to the values that break readers (0, past the end, 2^32 - 1, 2^63, ...).
fn perf_data_mutants(base: &[u8]) -> Vec<(String, Vec<u8>)> {
    let len = base.len() as u64;
    let u64_at = |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
    let wide = [
        0,
        1,
        8,
        16,
        63,
        64,
        len - 1,
        len,
        len + 1,
        1 << 31,
        u64::from(u32::MAX),
        1 << 40,
        1 << 63,
        u64::MAX,
    ];
    let narrow = [0u32, 1, 0xff, 0xffff, 0x7fff_ffff, u32::MAX];
    let mut out = Vec::new();
    let put64 = |name: String, at: usize, v: u64, out: &mut Vec<(String, Vec<u8>)>| {
        let mut m = base.to_vec();
        m[at..at + 8].copy_from_slice(&v.to_le_bytes());
        out.push((name, m));
    };
    for field in (8..104).step_by(8) {
        for &v in &wide {
            put64(format!("header+{field}={v}"), field, v, &mut out);
        }
    }
    // The feature table after the data section, and what each entry points to.
    let table = (u64_at(base, 40) + u64_at(base, 48)) as usize;
    let features: u32 = (0..4).map(|k| u64_at(base, 72 + 8 * k).count_ones()).sum();
    for k in 0..features as usize {
        let at = table + 16 * k;
        for &v in &[0, len, len + 1, 1 << 40, u64::MAX] {
            put64(format!("feature{k}.offset={v}"), at, v, &mut out);
            put64(format!("feature{k}.size={v}"), at + 8, v, &mut out);
        }
        let (offset, size) = (u64_at(base, at) as usize, u64_at(base, at + 8) as usize);
        for word in 0..(size / 4).min(4) {
            for &v in &narrow {
                let mut m = base.to_vec();
                m[offset + 4 * word..offset + 4 * word + 4].copy_from_slice(&v.to_le_bytes());
                out.push((format!("feature{k}.word{word}={v}"), m));
            }
        }
    }
    // The first records: their size, and their type made AUXTRACE with a huge trace.
    let mut at = u64_at(base, 40) as usize;
    for r in 0..8 {
        let size = u16::from_le_bytes([base[at + 6], base[at + 7]]) as usize;
        for v in [0u16, 1, 7, u16::MAX] {
            let mut m = base.to_vec();
            m[at + 6..at + 8].copy_from_slice(&v.to_le_bytes());
            out.push((format!("record{r}.size={v}"), m));
        }
        let mut m = base.to_vec();
        m[at..at + 4].copy_from_slice(&71u32.to_le_bytes());
        if size >= 16 {
            m[at + 8..at + 16].copy_from_slice(&(1u64 << 40).to_le_bytes());
        }
        out.push((format!("record{r}.auxtrace"), m));
        at += size.max(8);
    }
    // Random bytes (a fixed xorshift seed): 1 to 8 of them, anywhere.
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    while out.len() < 450 {
        let mut m = base.to_vec();
        let n = 1 + next() % 8;
        for _ in 0..n {
            let i = (next() % len) as usize;
            m[i] = next() as u8;
        }
        out.push((format!("random{}", out.len()), m));
    }
    out
}

#[test]
fn perf_data_headers_that_lie_give_errors_not_crashes() {
    // 200 of 450 mutated files panicked ("capacity overflow") or aborted on a 1 TiB
    // allocation inside the perf.data reader.
    let tmp = tempdir();
    let base = fs::read(testdata("hostile/small.data")).unwrap();
    let mutants = perf_data_mutants(&base);
    assert!(mutants.len() >= 450);
    let folded = testdata("import/a.folded");
    let folded = folded.to_str().unwrap().to_string();
    let failures = std::sync::Mutex::new(Vec::new());
    let next = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| loop {
                let k = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some((name, bytes)) = mutants.get(k) else { break };
                let file = tmp.path().join(format!("m{k}.data"));
                fs::write(&file, bytes).unwrap();
                let args = [file.to_str().unwrap(), folded.as_str()];
                // 2 GiB of address space: an allocation a header asks for fails (and aborts).
                let r = run_limited(tmp.path(), PRFCMP, &args, Duration::from_secs(60), Some(2));
                let err = stderr(&r.out);
                let code = r.out.status.code();
                // Success, or an error about this file; nothing else.
                let fine = code == Some(0) || (code == Some(2) && err.contains(&format!("m{k}.data")));
                if !fine || err.contains("panicked") {
                    failures
                        .lock()
                        .unwrap()
                        .push(format!("{name}: {code:?} {}", err.lines().next().unwrap_or("")));
                }
                let _ = fs::remove_file(&file);
            });
        }
    });
    let failures = failures.into_inner().unwrap();
    assert!(
        failures.is_empty(),
        "{} of {}:\n{}",
        failures.len(),
        mutants.len(),
        failures.join("\n")
    );
}

#[test]
fn a_pipe_mode_stream_that_lies_gives_an_error_not_a_crash() {
    // perf record -o - | prfcmp - ...: no length to check against, so each record is
    // checked as it passes. An EVENT_DESC feature record announcing 2^32 - 1 events made
    // the reader ask for hundreds of GB.
    let le16 = |v: u16| v.to_le_bytes().to_vec();
    let record = |kind: u32, body: &[u8]| {
        let mut r = kind.to_le_bytes().to_vec();
        r.extend(le16(0));
        r.extend(le16(8 + body.len() as u16));
        r.extend_from_slice(body);
        r
    };
    let mut stream = b"PERFILE2".to_vec();
    stream.extend_from_slice(&16u64.to_le_bytes());
    // PERF_RECORD_HEADER_ATTR: a 64-byte perf_event_attr (type 1, size 64), one id.
    let mut attr = vec![0u8; 64];
    attr[..4].copy_from_slice(&1u32.to_le_bytes());
    attr[4..8].copy_from_slice(&64u32.to_le_bytes());
    attr.extend_from_slice(&7u64.to_le_bytes());
    stream.extend(record(64, &attr));
    // PERF_RECORD_HEADER_FEATURE 12 (EVENT_DESC): 2^32 - 1 events of 136 bytes, in 8 bytes.
    let mut desc = 12u64.to_le_bytes().to_vec();
    desc.extend_from_slice(&u32::MAX.to_le_bytes());
    desc.extend_from_slice(&136u32.to_le_bytes());
    stream.extend(record(80, &desc));
    let tmp = tempdir();
    let input = tmp.path().join("stream");
    fs::write(&input, &stream).unwrap();
    let a = testdata("import/a.folded");
    let r = run_limited_with_input(
        tmp.path(),
        PRFCMP,
        &["-", a.to_str().unwrap()],
        Stdio::from(fs::File::open(&input).unwrap()),
        Duration::from_secs(30),
        Some(2),
    );
    assert_eq!(r.out.status.code(), Some(2), "{}", stderr(&r.out));
    assert!(
        stderr(&r.out).contains("4294967295 events do not fit in 0 bytes (feature record at byte 96)"),
        "{}",
        stderr(&r.out)
    );
}

// ---------------------------------------------------------------------------------------
// Runs: what a died or broken run says

#[test]
fn a_run_whose_writer_died_is_marked_so_and_missing_tests_are_named() {
    let tmp = tempdir();
    fixture_runs(tmp.path());
    // A process that ran and is gone.
    let mut gone = Command::new("true").spawn().unwrap();
    let pid = gone.id();
    gone.wait().unwrap();
    let boot = fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap();
    let marker = tmp.path().join("outdir1/upcmp-run");
    let text = fs::read_to_string(&marker)
        .unwrap()
        .replace("status: completed", "status: running")
        + &format!("writer: {pid} 12345 {}\n", boot.trim());
    fs::write(&marker, text).unwrap();
    // A test of its list that never ran.
    let list = tmp.path().join("outdir1/test_list");
    let list_text = fs::read_to_string(&list).unwrap() + "later: true\n";
    fs::write(&list, list_text).unwrap();
    let out = run_in(tmp.path(), UPCMP, &["outdir1", "outdir2", "res"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report = stdout(&out);
    assert!(
        report.contains(&format!(
            "run 1 (outdir1) failed: uprun (pid {pid}) ended without finishing the run"
        )),
        "{report}"
    );
    assert!(report.contains("run 1 (outdir1) has no profile of later"), "{report}");
    // Said once for every later reader: the marker is rewritten.
    let m = upcmp::store::outdir::RunMarker::read(&tmp.path().join("outdir1")).unwrap();
    assert_eq!(m.status, upcmp::store::outdir::Status::Failed);
    assert!(m.reason.unwrap().contains("ended without finishing"));
}

#[test]
fn repetitions_that_sampled_other_cpus_are_refused() {
    let tmp = tempdir();
    fixture_runs(tmp.path());
    let test = tmp.path().join("outdir1/forkwait");
    let p = upcmp::store::prfout::read(&test.join("prfout")).unwrap();
    // A second repetition of the same test on one CPU only.
    let mut one = p.clone();
    one.cpus.truncate(1);
    for f in &mut one.functions {
        f.per_cpu.truncate(1);
        f.weight_per_cpu.truncate(1);
    }
    one.functions.retain(|f| f.per_cpu[0] > 0);
    for (rep, prof) in [("r1", &p), ("r2", &one)] {
        fs::create_dir(test.join(rep)).unwrap();
        upcmp::store::prfout::write_file(prof, &test.join(rep).join("prfout")).unwrap();
        fs::copy(test.join("upout"), test.join(rep).join("upout")).unwrap();
    }
    fs::remove_file(test.join("prfout")).unwrap();
    let out = run_in(tmp.path(), UPCMP, &["outdir1", "outdir2", "res"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("outdir1/forkwait/r2/prfout: expected the CPUs of the other repetitions"),
        "{err}"
    );
    assert!(err.contains("found \"0\""), "{err}");
}

#[test]
fn tests_named_like_the_files_of_a_run_are_refused_before_anything_runs() {
    let tmp = tempdir();
    for name in ["system", "upcmp-run", "test_list", "kallsyms.gz"] {
        fs::write(tmp.path().join("list"), format!("ok: true\n{name}: true\n")).unwrap();
        let out = run_in(tmp.path(), UPRUN, &["auto", "out", "--test-list", "list"]);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert!(
            stderr(&out).contains("list:2:1: expected a test name other than the files of a run"),
            "{}",
            stderr(&out)
        );
        assert!(!tmp.path().join("out").exists());
    }
}

// ---------------------------------------------------------------------------------------
// Runs for real (perf_event, root)

fn uprun_in(dir: &Path, list: &str, outdir: &str, extra: &[&str]) -> Output {
    fs::write(dir.join("test_list"), list).unwrap();
    let mut args = vec!["auto", outdir];
    args.extend_from_slice(extra);
    run_in(dir, UPRUN, &args)
}

#[test]
fn duplicate_test_names_never_overwrite_each_other() {
    if !perf_usable(true) {
        return;
    }
    let _perf = crate::util::perf_lock();
    let tmp = tempdir();
    let out = uprun_in(tmp.path(), "a: echo one\na: echo two\na.2: echo three\n", "run", &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let upout = |d: &str| fs::read_to_string(tmp.path().join("run").join(d).join("upout")).unwrap();
    assert_eq!(
        (upout("a"), upout("a.3"), upout("a.2")),
        ("one\n".into(), "two\n".into(), "three\n".into())
    );
    let out = run_in(tmp.path(), UPCMP, &["run", "run", "res"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report = stdout(&out);
    for t in ["a", "a.2", "a.3"] {
        let title = format!(" {t} results ");
        assert_eq!(report.matches(&title).count(), 1, "{t}: {report}");
    }
}

#[test]
fn a_run_is_private_unless_shared() {
    if !perf_usable(true) {
        return;
    }
    let _perf = crate::util::perf_lock();
    let tmp = tempdir();
    // Under the usual umask 022, a run used to be readable by all (kernel addresses in
    // samples.gz and kallsyms.gz).
    let old = unsafe { libc::umask(0o022) };
    let private = uprun_in(tmp.path(), "t: true\n", "run", &[]);
    let shared = uprun_in(tmp.path(), "t: true\n", "pub", &["--share"]);
    unsafe { libc::umask(old) };
    assert!(
        private.status.success() && shared.status.success(),
        "{}",
        stderr(&private)
    );
    for (run, dir_mode, file_mode) in [("run", 0o700, 0o600), ("pub", 0o755, 0o644)] {
        let root = tmp.path().join(run);
        assert_eq!(mode(&root), dir_mode, "{run}");
        assert_eq!(mode(&root.join("t")), dir_mode, "{run}/t");
        for f in [
            "kallsyms.gz",
            "upcmp-run",
            "system",
            "test_list",
            "t/samples.gz",
            "t/prfout",
            "t/upout",
            "t/status",
        ] {
            assert_eq!(mode(&root.join(f)), file_mode, "{run}/{f}");
        }
    }
}

/// Processes whose command line contains `tag`.
fn running(tag: &str) -> Vec<String> {
    let out = Command::new("pgrep").args(["-a", "-f", tag]).output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.contains("pgrep"))
        .map(str::to_string)
        .collect()
}

#[test]
fn every_process_a_test_starts_ends_with_it() {
    if !perf_usable(true) {
        return;
    }
    let _perf = crate::util::perf_lock();
    let tmp = tempdir();
    let tag = |k: u32| format!("sleep 1000.{}{k}", std::process::id());
    // A daemon (its own session) and a plain background child, left behind by a test
    // that ends at once.
    let list = format!("d: setsid {} & {} & exit 0\n", tag(1), tag(2));
    let out = uprun_in(tmp.path(), &list, "run", &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        running(&tag(1)).is_empty() && running(&tag(2)).is_empty(),
        "{:?}",
        running(&tag(1))
    );
    let warn = stdout(&out);
    assert!(
        warn.contains("uprun: warning: d: 2 processes of the test still ran when it ended, and were killed"),
        "{warn}"
    );
    let prfout = fs::read_to_string(tmp.path().join("run/d/prfout")).unwrap();
    assert!(prfout.contains("warning 2 processes of the test still ran"), "{prfout}");

    // SIGINT while the test runs: the daemon goes too.
    fs::write(
        tmp.path().join("test_list"),
        format!("long: setsid {} & exec sleep 60\n", tag(3)),
    )
    .unwrap();
    let started = |run: &str| {
        let t0 = Instant::now();
        while running(&tag(3)).is_empty() || !tmp.path().join(run).join("long/upout").exists() {
            assert!(t0.elapsed() < Duration::from_secs(30), "the test never started");
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    let child = Command::new(UPRUN)
        .args(["auto", "int"])
        .current_dir(tmp.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    started("int");
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    assert!(running(&tag(3)).is_empty(), "{:?}", running(&tag(3)));

    // kill -9 of uprun: its direct children die with it; the daemon is ended by the next
    // uprun, which says so; and upcmp says the run died.
    let mut child = Command::new(UPRUN)
        .args(["auto", "killed"])
        .current_dir(tmp.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    started("killed");
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    child.wait().unwrap();
    assert!(!running(&tag(3)).is_empty(), "the daemon outlives a killed uprun");
    let out = uprun_in(tmp.path(), "t: true\n", "next", &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let said = stdout(&out);
    assert!(
        said.contains("uprun: ended ") && said.contains(&format!("that uprun (pid {}), since killed", child.id())),
        "{said}"
    );
    assert!(said.contains("(sleep)"), "{said}");
    assert!(running(&tag(3)).is_empty(), "{:?}", running(&tag(3)));
    let m = upcmp::store::outdir::Run::open(&tmp.path().join("killed"))
        .unwrap()
        .marker;
    assert_eq!(m.status, upcmp::store::outdir::Status::Failed);
    assert!(m.reason.unwrap().contains("ended without finishing the run"));
}

/// A tmpfs of `kib` KiB at a new directory; unmounted when dropped.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(at: PathBuf, kib: u64) -> Option<Tmpfs> {
        fs::create_dir_all(&at).unwrap();
        let ok = Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={kib}k"),
                "tmpfs",
                at.to_str().unwrap(),
            ])
            .status()
            .is_ok_and(|s| s.success());
        ok.then_some(Tmpfs(at))
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn a_full_disk_marks_the_run_failed_with_the_reason() {
    if !perf_usable(true) {
        return;
    }
    let _perf = crate::util::perf_lock();
    let tmp = tempdir();
    // Room for the run's start (its kallsyms.gz is the largest part) but not for a test
    // that samples for long.
    let kallsyms = fs::read("/proc/kallsyms").unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut gz, &kallsyms).unwrap();
    let need = gz.finish().unwrap().len() as u64 / 1024 + 256;
    let Some(disk) = Tmpfs::mount(tmp.path().join("disk"), need) else {
        panic!("cannot mount a tmpfs (root is needed)");
    };
    fs::write(
        tmp.path().join("test_list"),
        "spin: i=0; while [ $i -lt 3000000 ]; do i=$((i+1)); done\n",
    )
    .unwrap();
    let run = disk.0.join("run");
    let out = run_in(tmp.path(), UPRUN, &["auto", run.to_str().unwrap(), "--freq", "20000"]);
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
    assert!(stderr(&out).contains("No space left on device"), "{}", stderr(&out));
    let m = upcmp::store::outdir::RunMarker::read(&run).unwrap();
    assert_eq!(
        m.status,
        upcmp::store::outdir::Status::Failed,
        "not left marked running"
    );
    assert!(m.reason.unwrap().contains("No space left on device"));
    assert!(m.ended.is_some());
}

// Issue 26: writes that never go where someone else pointed, and runs not lost.

const UPSRUN: &str = env!("CARGO_BIN_EXE_upsrun");
/// The user id of `nobody`, who owns what a hostile local user would.
pub(crate) const NOBODY: u32 = 65534;

/// A run of upsrun's that `upsrun --analyse RUN/work` can analyse: its marker, kernel
/// symbols and one test with a profile and samples (the fixtures of tests/upsrun.rs).
fn analysable_run(at: &Path) -> PathBuf {
    let run = at.join("run");
    let work = run.join("work");
    fs::create_dir_all(&work).unwrap();
    let src = testdata("upsrun/format2-run");
    fs::copy(src.join("upcmp-run"), run.join("upcmp-run")).unwrap();
    fs::copy(src.join("test_list"), run.join("test_list")).unwrap();
    fs::copy(src.join("work/prfout"), work.join("prfout")).unwrap();
    fs::copy(testdata("upsrun/callgraph/samples.gz"), work.join("samples.gz")).unwrap();
    let kallsyms = fs::read(testdata("upsrun/callgraph/kallsyms")).unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut gz, &kallsyms).unwrap();
    fs::write(run.join("kallsyms.gz"), gz.finish().unwrap()).unwrap();
    run
}

/// Gives `path` and everything under it (links themselves, not their targets) to `uid`.
pub(crate) fn chown_tree(path: &Path, uid: u32) {
    std::os::unix::fs::lchown(path, Some(uid), Some(uid)).unwrap();
    if path.symlink_metadata().unwrap().is_dir() {
        for e in fs::read_dir(path).unwrap() {
            chown_tree(&e.unwrap().path(), uid);
        }
    }
}

#[test]
fn issue26_analyse_never_writes_through_a_planted_link() {
    if !crate::util::is_root() {
        return;
    }
    let tmp = tempdir();
    let run = analysable_run(tmp.path());
    let work = run.join("work");
    // Root's files outside the run, and a name that must not come to exist.
    let outside = tmp.path().join("outside");
    fs::create_dir(&outside).unwrap();
    let victim = outside.join("cron");
    fs::write(&victim, "precious\n").unwrap();
    let created = outside.join("created");
    std::os::unix::fs::symlink(&victim, work.join("stacks.folded")).unwrap();
    std::os::unix::fs::symlink(&created, work.join("prof.out")).unwrap();
    std::os::unix::fs::symlink(&victim, work.join("flame.svg")).unwrap();
    // The run belongs to a local user who placed the links.
    chown_tree(&run, NOBODY);
    let arg = work.to_str().unwrap();
    let out = run_in(tmp.path(), UPSRUN, &["--analyse", arg]);
    assert_ne!(out.status.code(), Some(0), "a foreign run is refused: {}", stderr(&out));
    assert!(
        stderr(&out).contains("owned by user 65534") && stderr(&out).contains("--allow-foreign-run"),
        "{}",
        stderr(&out)
    );
    assert_eq!(fs::read_to_string(&victim).unwrap(), "precious\n");
    // Insisting writes the analysis, still never through the links.
    let out = run_in(tmp.path(), UPSRUN, &["--analyse", arg, "--allow-foreign-run"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        fs::read_to_string(&victim).unwrap(),
        "precious\n",
        "the link's target is untouched"
    );
    assert!(created.symlink_metadata().is_err(), "a dangling link creates nothing");
    for f in ["stacks.folded", "prof.out", "flame.svg"] {
        let m = work.join(f).symlink_metadata().unwrap();
        assert!(m.file_type().is_file(), "{f} is a new regular file");
    }
    assert!(fs::read_to_string(work.join("stacks.folded")).unwrap().contains("walk"));
    let names: Vec<_> = fs::read_dir(&work).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names.len(), 5, "no temporary file left: {names:?}");
}

#[test]
fn issue26_a_test_directory_that_is_a_link_is_not_analysed() {
    let tmp = tempdir();
    let run = analysable_run(tmp.path());
    // The run's test directory swapped for a link to a directory elsewhere.
    let elsewhere = tmp.path().join("elsewhere");
    fs::rename(run.join("work"), &elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, run.join("work")).unwrap();
    let out = run_in(tmp.path(), UPSRUN, &["--analyse", "run/work"]);
    assert_ne!(out.status.code(), Some(0));
    assert!(
        stderr(&out).contains("a symbolic link, not a directory of the run"),
        "{}",
        stderr(&out)
    );
    assert!(!elsewhere.join("stacks.folded").exists());
}

#[test]
fn issue26_a_run_of_another_user_is_not_moved_aside() {
    if !crate::util::is_root() {
        return;
    }
    let tmp = tempdir();
    let run = tmp.path().join("out");
    fs::create_dir(&run).unwrap();
    fs::write(run.join("upcmp-run"), "x").unwrap();
    chown_tree(&run, NOBODY);
    fs::write(tmp.path().join("test_list"), "t: true\n").unwrap();
    let out = run_in(tmp.path(), UPRUN, &["auto", "out"]);
    assert_ne!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(stderr(&out).contains("owned by user 65534"), "{}", stderr(&out));
    assert!(run.join("upcmp-run").is_file() && !tmp.path().join("out.old").exists());
    // upcmp's results directory as well.
    let res = tmp.path().join("res");
    fs::create_dir(&res).unwrap();
    fs::write(res.join("upcmp-results"), "x").unwrap();
    chown_tree(&res, NOBODY);
    let (r1, r2) = (testdata("demo/run1"), testdata("demo/run2"));
    let out = run_in(tmp.path(), UPCMP, &[r1.to_str().unwrap(), r2.to_str().unwrap(), "res"]);
    assert_ne!(out.status.code(), Some(0));
    assert!(stderr(&out).contains("owned by user 65534"), "{}", stderr(&out));
    assert!(!tmp.path().join("res.old").exists());
    let out = run_in(
        tmp.path(),
        UPCMP,
        &[r1.to_str().unwrap(), r2.to_str().unwrap(), "res", "--allow-foreign-run"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(tmp.path().join("res.old/upcmp-results").is_file());
}

#[test]
fn issue26_a_link_in_a_sticky_shared_directory_is_not_followed() {
    if !crate::util::is_root() {
        return;
    }
    let tmp = tempdir();
    // A /tmp of the test's own: sticky, every user may write.
    let shared = tmp.path().join("shared");
    fs::create_dir(&shared).unwrap();
    fs::set_permissions(&shared, fs::Permissions::from_mode(0o1777)).unwrap();
    let victim = tmp.path().join("victim");
    fs::create_dir(&victim).unwrap();
    let evil = shared.join("evil");
    std::os::unix::fs::symlink(&victim, &evil).unwrap();
    std::os::unix::fs::lchown(&evil, Some(NOBODY), Some(NOBODY)).unwrap();
    let (r1, r2) = (testdata("demo/run1"), testdata("demo/run2"));
    let res = evil.join("res");
    let out = run_in(
        tmp.path(),
        UPCMP,
        &[r1.to_str().unwrap(), r2.to_str().unwrap(), res.to_str().unwrap()],
    );
    assert_ne!(out.status.code(), Some(0));
    assert!(
        stderr(&out).contains(&format!("goes through the symbolic link {}", evil.display())),
        "{}",
        stderr(&out)
    );
    fs::write(tmp.path().join("test_list"), "t: true\n").unwrap();
    let outdir = evil.join("out");
    let out = run_in(tmp.path(), UPRUN, &["auto", outdir.to_str().unwrap()]);
    assert_ne!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(
        stderr(&out).contains("goes through the symbolic link"),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        fs::read_dir(&victim).unwrap().count(),
        0,
        "nothing lands in the link's target"
    );
    // The same link owned by root (or by the user) is followed, as the kernel would.
    std::os::unix::fs::lchown(&evil, Some(0), Some(0)).unwrap();
    let out = run_in(
        tmp.path(),
        UPCMP,
        &[r1.to_str().unwrap(), r2.to_str().unwrap(), res.to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(victim.join("res/results").is_file());
}

#[test]
fn issue26_analyse_holds_the_run_lock_and_replaces_files_whole() {
    let tmp = tempdir();
    let run = analysable_run(tmp.path());
    let folded = run.join("work/stacks.folded");
    fs::write(&folded, "old;stack 1\n").unwrap();
    // While another writer holds the run, nothing is rewritten.
    let lock = upcmp::fsio::DirLock::try_lock(&run).unwrap().expect("free");
    let out = run_in(tmp.path(), UPSRUN, &["--analyse", "run/work"]);
    assert_ne!(out.status.code(), Some(0));
    assert!(stderr(&out).contains("is writing"), "{}", stderr(&out));
    assert_eq!(fs::read_to_string(&folded).unwrap(), "old;stack 1\n");
    drop(lock);
    // A reader that opened the old file reads it whole: the new one replaces it by a
    // rename, never by rewriting it in place.
    let mut reader = fs::File::open(&folded).unwrap();
    let out = run_in(tmp.path(), UPSRUN, &["--analyse", "run/work"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let mut old = String::new();
    reader.read_to_string(&mut old).unwrap();
    assert_eq!(old, "old;stack 1\n");
    assert!(fs::read_to_string(&folded).unwrap().contains("walk"));
    assert!(!tmp.path().join("run.lock").exists(), "the lock is released");
}

#[test]
fn issue26_a_run_that_cannot_start_on_a_full_disk_leaves_nothing() {
    if !perf_usable(true) {
        return;
    }
    let _perf = crate::util::perf_lock();
    let tmp = tempdir();
    let Some(disk) = Tmpfs::mount(tmp.path().join("disk"), 64) else {
        panic!("cannot mount a tmpfs (root is needed)");
    };
    // An earlier run under the name, then a full disk.
    let run = disk.0.join("run");
    fs::create_dir(&run).unwrap();
    fs::write(run.join("upcmp-run"), "earlier\n").unwrap();
    let fill = fs::File::create(disk.0.join("fill")).unwrap();
    let mut w = std::io::BufWriter::new(fill);
    while std::io::Write::write_all(&mut w, &[0u8; 4096]).is_ok() {}
    drop(w);
    fs::write(tmp.path().join("test_list"), "t: true\n").unwrap();
    let out = run_in(tmp.path(), UPRUN, &["auto", run.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
    assert!(stderr(&out).contains("No space left on device"), "{}", stderr(&out));
    // The earlier run is back under its name; nothing else is left to block it.
    assert_eq!(fs::read_to_string(run.join("upcmp-run")).unwrap(), "earlier\n");
    let mut names: Vec<_> = fs::read_dir(&disk.0)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["fill", "run"]);
    assert_eq!(fs::read_dir(&run).unwrap().count(), 1);
}

#[test]
fn issue26_a_test_that_prints_a_lot_keeps_its_head_and_tail() {
    if !perf_usable(true) {
        return;
    }
    let _perf = crate::util::perf_lock();
    let tmp = tempdir();
    // 6 MB of chatter between a first line and the benchmark's result line, against a
    // limit of 1 MiB (500 MB against the default 64 MiB behaves the same).
    let result = "7054200 trep @   0.0035 msec (282000.0/sec): chatter";
    fs::write(
        tmp.path().join("test_list"),
        format!("loud: echo first; yes 0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLM | head -c 6000000; echo '{result}'\n"),
    )
    .unwrap();
    for r in ["r1", "r2"] {
        let out = run_in(tmp.path(), UPRUN, &["auto", r, "--max-output-mib", "1"]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        assert!(
            stdout(&out).contains("uprun: warning: loud: it printed 5.7 MiB of output"),
            "warned at uprun time: {}",
            stdout(&out)
        );
    }
    let upout = fs::read_to_string(tmp.path().join("r1/loud/upout")).unwrap();
    assert!(upout.len() <= 1 << 20, "{} bytes kept", upout.len());
    assert!(upout.starts_with("first\n"));
    assert!(upout.ends_with(&format!("{result}\n")));
    let printed = "first\n".len() + 6_000_000 + result.len() + 1;
    assert!(
        upout.contains(&format!(
            "bytes of the test's output cut here; it printed {printed} bytes"
        )),
        "{}",
        &upout[upout.len() / 2 - 200..upout.len() / 2 + 200]
    );
    let prfout = fs::read_to_string(tmp.path().join("r1/loud/prfout")).unwrap();
    assert!(
        prfout.contains("it printed 5.7 MiB of output"),
        "the warning stays with the run"
    );
    let out = run_in(tmp.path(), UPCMP, &["r1", "r2", "res"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let results = fs::read_to_string(tmp.path().join("res/results")).unwrap();
    assert!(
        results.contains("chatter"),
        "the benchmark's rate is compared: {results}"
    );
}

#[test]
fn issue26_a_run_with_an_enormous_upout_is_still_compared() {
    // A run written before uprun bounded its tests' output: 300 MiB of upout (sparse, so
    // the test is fast), its header first and its result lines last.
    let tmp = tempdir();
    let r1 = tmp.path().join("r1");
    copy_tree(&testdata("demo/run1"), &r1);
    let upout = r1.join("getpid/upout");
    let text = fs::read_to_string(&upout).unwrap();
    let lines: Vec<&str> = text.trim_end().lines().collect();
    let (head, tail) = lines.split_at(lines.len() - 3);
    assert!(tail[2].contains("trep"), "{tail:?}");
    fs::write(&upout, format!("{}\n", head.join("\n"))).unwrap();
    let f = fs::OpenOptions::new().append(true).open(&upout).unwrap();
    f.set_len(300 << 20).unwrap();
    std::io::Write::write_all(&mut &f, format!("\n{}\n", tail.join("\n")).as_bytes()).unwrap();
    drop(f);
    let r2 = testdata("demo/run2");
    let out = run_in(tmp.path(), UPCMP, &["r1", r2.to_str().unwrap(), "res"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let results = fs::read_to_string(tmp.path().join("res/results")).unwrap();
    let ours = fs::read_to_string(testdata("demo/run1/getpid/upout")).unwrap();
    assert!(ours.contains("(4710000.0/sec): getpid system call"));
    assert!(
        results.contains("4710000"),
        "the rate of the tail is compared: {results}"
    );
    assert!(
        results.contains("300.0 MiB of output, more than upcmp reads whole"),
        "said: {results}"
    );
}

#[test]
fn issue26_a_reader_never_sees_a_half_written_analysis() {
    let tmp = tempdir();
    let run = analysable_run(tmp.path());
    let analyse = || {
        let out = run_in(tmp.path(), UPSRUN, &["--analyse", "run/work"]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    };
    analyse();
    let folded = run.join("work/stacks.folded");
    let whole = fs::read(&folded).unwrap();
    assert!(!whole.is_empty());
    // A reader reading as fast as it can while the analysis is rewritten again and again
    // (a truncate-and-rewrite shows it an empty or partial file within a few rounds).
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let reader = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut reads = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                assert_eq!(fs::read(&folded).unwrap(), whole, "read {reads}: a half-written file");
                reads += 1;
            }
            reads
        })
    };
    for _ in 0..20 {
        analyse();
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    assert!(reader.join().unwrap() > 0);
}
