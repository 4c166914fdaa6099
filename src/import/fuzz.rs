//! The importers run on raw bytes, checking what must hold whatever the input: the
//! counterpart, for perf.data and `perf script` text, of `upcmp_parsers::harness`.
//!
//! The fuzz targets `import_perf_data` and `import_perf_script` (`fuzz/`) and the stable
//! corpus and mutation tests (`tests/fuzz.rs`) call these functions, so an input fails the
//! same way under each (`docs/fuzzing.md`). A check panics when a property does not hold,
//! and lets a panic of the importer through; a panic inside the perf.data crate is the
//! hardened reader's to catch ([`contained`](super::perf_header::contained)), and comes
//! back as an error.
//!
//! The properties: the import returns, `Ok` or an error that says what is wrong; a profile
//! it returns has 1 to 8192 CPUs, each once and numbered below 8192, a count and a weight
//! per CPU in every row, columns that add up to each CPU's samples without passing 2^64,
//! finite times and names of at most 4 KiB.

use super::{perf_data, script, ImportOptions, Imported};
use crate::model::Profile;
use std::io::{Seek, Write};
use std::os::fd::{AsRawFd, FromRawFd};
use std::path::{Path, PathBuf};
use upcmp_parsers::{MAX_CPUS, MAX_NAME_BYTES};

/// The options every check imports with: kernel symbols from `kallsyms` (a fixed file,
/// so that no check reads this machine's), call stacks collected.
fn options(kallsyms: &Path, event: Option<&str>) -> ImportOptions {
    ImportOptions {
        kallsyms: Some(kallsyms.to_path_buf()),
        stacks: true,
        event: event.map(str::to_string),
        ..ImportOptions::default()
    }
}

/// Imports `data` as a perf.data file (from its path, as prfcmp reads a file) and as a
/// stream (as prfcmp reads standard input), kernel symbols from `kallsyms`, and checks
/// what each import returns; panics when a property does not hold. Returns whether the
/// file imported.
pub fn check_perf_data(data: &[u8], kallsyms: &Path) -> bool {
    let file = in_memory_file(data);
    let path = PathBuf::from(format!("/proc/self/fd/{}", file.as_raw_fd()));
    let opts = options(kallsyms, None);
    let read = perf_data::read(&path, &opts);
    check_result(&read);
    // The import's own record reader and the crate's: the same profile, or the same error.
    assert_same_import(&read, &perf_data::read_with_crate(&path, &opts));
    let streamed = super::perf_header::contained(&path, || perf_data::read_pipe(data, &path, &opts));
    check_result(&streamed);
    read.is_ok()
}

/// Imports `data` as `perf script` text, the first event and then each other event it
/// names, kernel symbols from `kallsyms`; panics when a property does not hold. Returns
/// whether it imported.
pub fn check_perf_script(data: &[u8], kallsyms: &Path) -> bool {
    let path = Path::new("fuzz-input.perf-script");
    let read = script::read(data, "fuzz-input", path, &options(kallsyms, None));
    check_result(&read);
    if let Ok(imported) = &read {
        // `--event NAME` of an event the warning lists, or of one not recorded.
        for name in other_events(&imported.profile).chain(["no-such-event".to_string()]) {
            let other = script::read(data, "fuzz-input", path, &options(kallsyms, Some(&name)));
            check_result(&other);
        }
    }
    read.is_ok()
}

/// The events a profile's warning lists besides the one it holds (at most three):
/// "... the input also has A (3 samples), B (5 samples): --event NAME reads another".
fn other_events(p: &Profile) -> impl Iterator<Item = String> + '_ {
    p.warnings
        .iter()
        .filter_map(|w| {
            w.split_once(" the input also has ")?
                .1
                .rsplit_once(": --event NAME")?
                .0
                .into()
        })
        .flat_map(|list: &str| list.split(" samples), "))
        .filter_map(|item| Some(item.rsplit_once(" (")?.0.to_string()))
        .take(3)
}

/// Panics unless two imports of one input came out the same: equal profiles and equal
/// stacks (frame names in the order they were first seen, each stack's weight, the
/// counts of samples, truncated and lost), or errors of the same message.
pub fn assert_same_import<E: std::fmt::Display>(a: &Result<Imported, E>, b: &Result<Imported, E>) {
    match (a, b) {
        (Ok(a), Ok(b)) => {
            assert_eq!(a.profile, b.profile);
            assert_eq!(stacks_of(a), stacks_of(b));
        }
        (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string()),
        (a, b) => panic!(
            "one import failed: {:?} against {:?}",
            a.as_ref().map(|_| "a profile").map_err(|e| e.to_string()),
            b.as_ref().map(|_| "a profile").map_err(|e| e.to_string())
        ),
    }
}

/// An import's stacks in a form that compares: names by id, stacks sorted, counts.
#[allow(clippy::type_complexity)]
fn stacks_of(i: &Imported) -> Option<(Vec<String>, Vec<(Vec<u32>, u64)>, [u64; 3])> {
    i.stacks.as_ref().map(|s| {
        let mut stacks: Vec<(Vec<u32>, u64)> = s.weighted_stacks().map(|(f, w)| (f.to_vec(), w)).collect();
        stacks.sort_unstable();
        (s.names().to_vec(), stacks, [s.samples, s.truncated, s.lost])
    })
}

/// An anonymous regular file holding `data`, read through `/proc/self/fd/N` as a path.
fn in_memory_file(data: &[u8]) -> std::fs::File {
    // SAFETY: the name is a NUL-terminated string; the descriptor returned is new and
    // owned by the File alone.
    let fd = unsafe { libc::memfd_create(c"upcmp-fuzz-input".as_ptr(), libc::MFD_CLOEXEC) };
    assert!(fd >= 0, "memfd_create: {}", std::io::Error::last_os_error());
    let mut file = unsafe { std::fs::File::from_raw_fd(fd) };
    file.write_all(data).expect("writing an in-memory file");
    file.rewind().expect("rewinding an in-memory file");
    file
}

fn check_result<E: std::fmt::Display>(result: &Result<Imported, E>) {
    match result {
        Ok(imported) => check_profile(&imported.profile),
        Err(e) => assert!(!e.to_string().is_empty()),
    }
}

fn assert_name(name: &str) {
    assert!(name.len() <= MAX_NAME_BYTES, "a name of {} bytes", name.len());
}

/// What every imported profile keeps, whatever its input.
pub fn check_profile(p: &Profile) {
    assert!((1..=MAX_CPUS as usize).contains(&p.cpus.len()), "{} CPUs", p.cpus.len());
    let mut numbers: Vec<u32> = p.cpus.iter().map(|c| c.cpu).collect();
    numbers.sort_unstable();
    numbers.dedup();
    assert_eq!(numbers.len(), p.cpus.len(), "CPU numbers are distinct");
    assert!(numbers.iter().all(|&c| c < MAX_CPUS), "{numbers:?}");
    assert!(p.period.is_finite() && p.period > 0.0, "period {}", p.period);
    assert!(p.wall_sec.is_finite() && p.wall_sec >= 0.0, "wall-sec {}", p.wall_sec);
    let total = p.cpus.iter().try_fold(0u64, |sum, c| sum.checked_add(c.samples));
    assert!(total.is_some(), "the samples of all CPUs add up past 2^64");
    for f in &p.functions {
        assert_eq!(f.per_cpu.len(), p.cpus.len(), "{f:?}");
        assert_eq!(f.weight_per_cpu.len(), p.cpus.len(), "{f:?}");
        assert!(f.weight_sq.is_finite() && f.weight_sq >= 0.0, "{f:?}");
        assert_name(&f.name);
        assert_name(&f.module);
    }
    for (k, c) in p.cpus.iter().enumerate() {
        let column = p
            .functions
            .iter()
            .try_fold(0u64, |sum, f| sum.checked_add(f.per_cpu[k]));
        assert_eq!(column, Some(c.samples), "cpu {}'s column", c.cpu);
    }
    assert_name(&p.test);
    assert_name(&p.event);
}
