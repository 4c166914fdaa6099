//! Issue 30: code without symbols. Live uprun runs of small C programs built here: a
//! getpid loop under a seccomp filter (classic BPF compiled by the kernel's JIT, which no
//! symbol names) and an eBPF socket filter loaded with bpf(2), run by packets and
//! unloaded inside the test (named from the KSYMBOL records uprun keeps).

use crate::util::{perf_usable, run_in, stderr, tempdir, testdata};
use std::path::{Path, PathBuf};
use std::process::Command;
use upcmp::model::code::{BPF_MODULE, JIT_MODULE};
use upcmp::model::mode::Record;
use upcmp::model::profile::{module, JIT_FUNCTION, JIT_NOTE, UNKNOWN_FUNCTION};
use upcmp::model::{IdleSet, Profile};
use upcmp::store::{prfout, samples};

const UPRUN: &str = env!("CARGO_BIN_EXE_uprun");

/// `gcc -O1` of `testdata/bpf/NAME.c` into `dir/NAME`.
fn build(dir: &Path, name: &str) -> PathBuf {
    let out = dir.join(name);
    let o = Command::new("gcc")
        .arg("-O1")
        .arg("-o")
        .arg(&out)
        .arg(testdata(&format!("bpf/{name}.c")))
        .output()
        .expect("gcc");
    assert!(o.status.success(), "gcc {name}: {}", String::from_utf8_lossy(&o.stderr));
    out
}

/// uprun of the one test `label: command` into `dir/run`; its profile.
fn uprun_one(dir: &Path, label: &str, command: &str) -> Profile {
    std::fs::write(dir.join("test_list"), format!("{label}: {command}\n")).unwrap();
    let o = run_in(dir, UPRUN, &["auto", "run"]);
    assert!(o.status.success(), "uprun: {}", stderr(&o));
    prfout::read(&dir.join("run").join(label).join("prfout")).unwrap()
}

/// The samples of `module`'s functions whose name `matches`, and their weight.
fn samples_of(p: &Profile, module: &str, matches: impl Fn(&str) -> bool) -> (u64, u64) {
    p.functions
        .iter()
        .filter(|f| f.module == module && matches(&f.name))
        .fold((0, 0), |(n, w), f| {
            (
                n + f.per_cpu.iter().sum::<u64>(),
                w + f.weight_per_cpu.iter().sum::<u64>(),
            )
        })
}

/// The weight of the profile's functions outside the idle set (its CPU time).
fn busy_weight(p: &Profile) -> u64 {
    let idle = IdleSet::new(p.idle_set.clone());
    p.functions
        .iter()
        .filter(|f| !idle.contains(&f.name))
        .map(|f| f.weight_per_cpu.iter().sum::<u64>())
        .sum()
}

#[test]
fn issue_30_a_seccomp_filters_jit_code_is_named_and_unknown_stays_small() {
    if !perf_usable(true) {
        return;
    }
    let _perf = crate::util::perf_lock();
    let tmp = tempdir();
    let prog = build(tmp.path(), "seccomp_loop");
    let p = uprun_one(tmp.path(), "seccomp", &format!("{} 2", prog.display()));
    let (filter, _) = samples_of(&p, module::KERNEL, |n| n == "__seccomp_filter");
    let (jit, _) = samples_of(&p, module::KERNEL, |n| n == JIT_FUNCTION);
    let (_, unknown) = samples_of(&p, module::KERNEL, |n| n == UNKNOWN_FUNCTION);
    // 2 s of getpid at 1000 Hz: about 2000 samples of the loop; the filter's 64
    // comparisons take a tenth or more of them (perf shows them as `[unknown]`).
    assert!(filter >= 5, "__seccomp_filter has {filter} samples");
    assert!(jit >= 10, "[jit] has {jit} samples");
    let share = unknown as f64 / busy_weight(&p) as f64;
    assert!(share < 0.005, "[unknown] holds {:.3}% of the CPU time", 100.0 * share);
    assert!(p.warnings.iter().any(|w| w == JIT_NOTE), "{:?}", p.warnings);
}

#[test]
fn issue_30_an_ebpf_program_loaded_and_unloaded_in_the_test_is_named() {
    if !perf_usable(true) {
        return;
    }
    let _perf = crate::util::perf_lock();
    let tmp = tempdir();
    let prog = build(tmp.path(), "bpf_filter");
    let p = uprun_one(tmp.path(), "bpf", &format!("{} 2 2000", prog.display()));
    // bpf_prog_<tag>_<name>: the tag is the program's hash, 16 hex digits.
    let is_ours = |n: &str| {
        n.strip_prefix("bpf_prog_")
            .and_then(|r| r.strip_suffix("_upcmp_spin"))
            .is_some_and(|tag| tag.len() == 16 && tag.bytes().all(|b| b.is_ascii_hexdigit()))
    };
    let (named, _) = samples_of(&p, BPF_MODULE, is_ours);
    assert!(
        named >= 5,
        "bpf_prog_<tag>_upcmp_spin has {named} samples; kernel functions: {:?}",
        p.functions
            .iter()
            .filter(|f| f.module != module::USER)
            .map(|f| (&f.module, &f.name))
            .take(30)
            .collect::<Vec<_>>()
    );
    // The program was loaded and unloaded inside the test: its records are in the run,
    // and the kernel lists it no more.
    let (mut loads, mut unloads, mut events) = (0, 0, 0);
    samples::for_each_record(&tmp.path().join("run/bpf/samples.gz"), |r| match r {
        Record::Ksymbol(k) if is_ours(&k.name) => {
            if k.unregister {
                unloads += 1
            } else {
                loads += 1
            }
        }
        Record::BpfEvent { .. } => events += 1,
        _ => {}
    })
    .unwrap();
    assert_eq!((loads, unloads), (1, 1), "KSYMBOL records of the program");
    assert!(events >= 2, "{events} BPF_EVENT records");
    let kallsyms = std::fs::read_to_string("/proc/kallsyms").unwrap();
    assert!(!kallsyms.contains("_upcmp_spin"), "the program is still loaded");
}

#[test]
fn issue_30_perf_data_import_names_a_bpf_program_from_its_ksymbol_records() {
    if !perf_usable(true) {
        return;
    }
    let _perf = crate::util::perf_lock();
    let tmp = tempdir();
    let prog = build(tmp.path(), "bpf_filter");
    let data = tmp.path().join("bpf.data");
    let o = Command::new("perf")
        .args(["record", "-q", "-e", "cpu-clock", "-c", "1000000", "-o"])
        .arg(&data)
        .arg("--")
        .arg(&prog)
        .args(["1", "2000"])
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "perf record: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    // `    39.10%  [k] bpf_prog_72fb4424c5a40051_upcmp_spin`
    let o = Command::new("perf")
        .args(["report", "--stdio", "-q", "--sort", "sym", "-i"])
        .arg(&data)
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&o.stdout).into_owned();
    let (perf_pct, name) = report
        .lines()
        .find_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() == 3 && f[2].ends_with("_upcmp_spin"))
                .then(|| (f[0].trim_end_matches('%').parse::<f64>().unwrap(), f[2]))
        })
        .unwrap_or_else(|| panic!("perf report names no upcmp_spin program:\n{report}"));
    // The program is gone: /proc/kallsyms cannot name it, the KSYMBOL records must.
    let opts = upcmp::import::ImportOptions::new(None, Some(PathBuf::from("/proc/kallsyms")), None, None);
    let p = upcmp::import::import(&data, &opts).unwrap().profile;
    let (_, ours) = samples_of(&p, BPF_MODULE, |n| n == name);
    let total: u64 = p.functions.iter().map(|f| f.weight_per_cpu.iter().sum::<u64>()).sum();
    let pct = 100.0 * ours as f64 / total as f64;
    // perf prints two decimals.
    assert!(
        (pct - perf_pct).abs() <= 0.0051,
        "{name}: {pct:.4}% here, {perf_pct}% in perf report"
    );
}

#[test]
fn issue_30_a_perf_map_is_never_read_through_a_link() {
    use upcmp::symbols::load_perf_map;
    let tmp = tempdir();
    let real = tmp.path().join("real.map");
    std::fs::write(&real, "1000 10 jitted\n").unwrap();
    assert_eq!(
        load_perf_map(&real).map(|m| m.lookup(0x1008).map(str::to_string)),
        Some(Some("jitted".into()))
    );
    // Anyone may place a link under a map's name in /tmp: even one to a good map is refused.
    let link = tmp.path().join("perf-1.map");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    assert!(load_perf_map(&link).is_none());
}

#[test]
fn issue_30_uprun_keeps_a_jits_perf_map_and_names_its_code() {
    if !perf_usable(true) {
        return;
    }
    let _perf = crate::util::perf_lock();
    let tmp = tempdir();
    let prog = build(tmp.path(), "perf_map_jit");
    let p = uprun_one(tmp.path(), "jit", &format!("{} 400000000", prog.display()));
    let upout = std::fs::read_to_string(tmp.path().join("run/jit/upout")).unwrap();
    let pid: u32 = upout.split_whitespace().next().unwrap().parse().unwrap();
    // The map is the test's to remove, whatever happens below.
    struct Remove(PathBuf);
    impl Drop for Remove {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }
    let tmp_map = Remove(PathBuf::from(format!("/tmp/perf-{pid}.map")));
    let (jit, _) = samples_of(&p, JIT_MODULE, |n| n == "jitted_spin");
    assert!(jit >= 50, "jitted_spin has {jit} samples");
    let kept = tmp.path().join(format!("run/jit/perf-{pid}.map"));
    assert_eq!(std::fs::read(&kept).unwrap(), std::fs::read(&tmp_map.0).unwrap());
    // Gone from /tmp, the kept copy still names the code when the profile is rebuilt.
    drop(tmp_map);
    let symbols = upcmp::symbols::KernelSymbols::from_kallsyms_file(Path::new("/proc/kallsyms")).unwrap();
    let idle = IdleSet::new(p.idle_set.clone());
    let again =
        upcmp::analyse::profile::rebuild(&tmp.path().join("run/jit"), &symbols, &idle, Default::default()).unwrap();
    assert_eq!(samples_of(&again, JIT_MODULE, |n| n == "jitted_spin").0, jit);
}
