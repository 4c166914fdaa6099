//! Hostile and broken input (docs/security.md): no crash, no hang, no leak, nothing lost.
//! Each test is a case a review reproduced on a release build before it was fixed.

use crate::util::{stderr, tempdir, testdata};
use std::fs;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const PRFCMP: &str = env!("CARGO_BIN_EXE_prfcmp");

/// What a child did: its output and its peak memory (from wait4).
struct Ran {
    out: Output,
    max_rss_mb: f64,
}

/// Runs `bin` in `cwd`, killing it after `timeout` (then the test fails), with at most
/// `max_memory_gb` of address space (an allocation past it fails, and aborts the child)
/// when given.
fn run_limited(cwd: &Path, bin: &str, args: &[&str], timeout: Duration, max_memory_gb: Option<u64>) -> Ran {
    let mut cmd = Command::new(bin);
    cmd.args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
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
    loop {
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
    }
}

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
