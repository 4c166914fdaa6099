//! A kernel function of a uprun run, below the function: its samples per offset from the
//! function's start in each repetition (from `TEST/samples.gz`, placed by the run's
//! `kallsyms.gz`), and its code and lines from where the run's symbols came from: the
//! VMLINUX given to uprun (its DWARF, or its debug file by build-id), a module's `.ko`
//! under `/lib/modules/RELEASE` or `/usr/lib/debug` (`docs/annotate.md`).

use super::annotate::SideSamples;
use crate::model::profile::Unit;
use crate::model::Profile;
use crate::store::prfout::{self, PRFOUT_FILE};
use crate::store::samples::for_each_record;
use crate::store::system::VMLINUX_KEY;
use crate::store::StoreError;
use crate::symbols::lines::{debug_file_for, functions_code, FunctionCode, KERNEL_DEBUG_PACKAGES};
use crate::symbols::KernelSymbols;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use upcmp_parsers::keyvalue::KeyValues;
use upcmp_parsers::samples::{Mode, Record};

/// Where a run's kernel code may be found.
#[derive(Debug, Clone)]
pub struct KernelCode {
    /// The kernel image given to uprun (or found for `auto`), when there was one.
    pub vmlinux: Option<PathBuf>,
    /// The kernel release the run was made on (`kernel-release` in `system`).
    pub release: Option<String>,
    /// The root the module directories are looked for under (`/`; a test tree).
    pub root: PathBuf,
    /// The run's owner when neither root nor this user: only files that user could read
    /// are read for the run, each opened as that user could (`fsio::foreign::open_as`,
    /// docs/security.md).
    pub owner: Option<u32>,
}

impl KernelCode {
    /// Where the run described by `system` (its `system` file) and `command` (its
    /// marker's command line) kept its kernel image: the `vmlinux` key uprun writes, else
    /// the VMLINUX operand of the command line (runs written before the key), else, for
    /// `auto`, the usual places of the run's kernel release.
    pub fn of_run(system: &KeyValues, command: &str) -> Self {
        let release = system.get("kernel-release").map(str::to_string);
        let from_command = || {
            // `uprun VMLINUX OUTDIR …`: the first word after the program that is not an
            // option; kept only when it is a file (not `auto`, not an option's value).
            let word = command.split_whitespace().skip(1).find(|w| !w.starts_with('-'))?;
            let p = PathBuf::from(word);
            (word != "auto" && p.is_file()).then_some(p)
        };
        let vmlinux = system
            .get(VMLINUX_KEY)
            .map(PathBuf::from)
            .or_else(from_command)
            .or_else(|| crate::symbols::find_vmlinux(release.as_deref()?));
        KernelCode {
            vmlinux,
            release,
            root: PathBuf::from("/"),
            owner: None,
        }
    }

    /// The ELF holding the code of a function of `module` (`None`: the core kernel) and
    /// the file with its lines, both readable by the run's owner; or what is missing.
    /// A check for messages: the files are read later, through `fsio::foreign::open_as`
    /// with [`KernelCode::readers`] again.
    fn files(&self, module: Option<&str>) -> Result<(PathBuf, Option<PathBuf>), String> {
        let (code, debug) = self.find_files(module)?;
        if let Err(uid) = crate::fsio::foreign::may_read(&code, self.readers()) {
            return Err(format!(
                "{} is not readable by the run's owner (uid {uid}): not read for the run (docs/security.md)",
                code.display()
            ));
        }
        Ok((code, debug))
    }

    /// The users the run's files are read for: its owner, when neither root nor this user.
    fn readers(&self) -> &[u32] {
        self.owner.as_slice()
    }

    /// The ELF holding the code of a function of `module` (`None`: the core kernel) and
    /// the file with its lines; or what is missing.
    fn find_files(&self, module: Option<&str>) -> Result<(PathBuf, Option<PathBuf>), String> {
        let Some(module) = module else {
            let Some(v) = &self.vmlinux else {
                return Err(format!(
                    "the run names no vmlinux (uprun was given `auto` and none was found for {}): no code or lines \
                     of the core kernel; {KERNEL_DEBUG_PACKAGES}",
                    self.release.as_deref().unwrap_or("its kernel release")
                ));
            };
            return Ok((v.clone(), debug_file_for(v, self.readers())));
        };
        let Some(release) = &self.release else {
            return Err(format!(
                "the run does not say its kernel release: no .ko of module {module} looked for"
            ));
        };
        let dirs = [
            self.root.join("lib/modules").join(release),
            self.root.join("usr/lib/debug/lib/modules").join(release),
        ];
        let mut found: Vec<PathBuf> = Vec::new();
        for d in &dirs {
            find_module(d, module, 0, &mut found);
        }
        let plain = |p: &&PathBuf| p.extension().is_some_and(|e| e == "ko" || e == "debug");
        let Some(code) = found.iter().find(plain).cloned() else {
            let compressed = found.first().map_or(String::new(), |p| {
                format!(" ({} is compressed: decompress it to read it)", p.display())
            });
            return Err(format!(
                "no {module}.ko under {} or {}{compressed}: no code or lines of module {module}; \
                 {KERNEL_DEBUG_PACKAGES}",
                dirs[0].display(),
                dirs[1].display()
            ));
        };
        // The module's own file first; the debug tree's copy for the lines.
        let debug = debug_file_for(&code, self.readers()).or_else(|| {
            found
                .iter()
                .filter(plain)
                .filter(|p| p.starts_with(&dirs[1]))
                .find_map(|p| debug_file_for(p, self.readers()))
        });
        Ok((code, debug))
    }
}

/// The `.ko` files of `module` under `dir` (`-` and `_` alike, as the kernel names
/// them), compressed ones too, without following links; at most 8 levels down.
fn find_module(dir: &Path, module: &str, depth: usize, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let want = module.replace('-', "_");
    for e in entries.flatten() {
        let Ok(t) = e.file_type() else { continue };
        let path = e.path();
        if t.is_dir() && depth < 8 {
            find_module(&path, module, depth + 1, out);
        } else if t.is_file() {
            let name = e.file_name().to_string_lossy().replace('-', "_");
            let stem = ["ko", "ko.debug", "ko.xz", "ko.zst", "ko.gz"]
                .iter()
                .find_map(|ext| name.strip_suffix(&format!(".{ext}")));
            if stem == Some(want.as_str()) {
                out.push(path);
            }
        }
    }
    out.sort();
}

/// One repetition of a test: its directory (`RUN/TEST` or `RUN/TEST/rK`) and the kernel
/// symbols of its run (`RUN/kallsyms.gz`), which place its samples.
pub type Repetition<'a> = (&'a Path, &'a KernelSymbols);

/// The samples of each kernel function of `functions` in the repetitions `reps` of one
/// side (read in one pass over each `samples.gz`), each placed with its repetition's
/// symbols, and its code found by `code`. A function the symbols do not have, or whose
/// code is not found, gets its samples (none, for the former) and a `missing` text
/// saying what is missing.
pub fn run_side_samples(
    reps: &[Repetition<'_>],
    functions: &[&str],
    code: &KernelCode,
) -> Result<Vec<SideSamples>, StoreError> {
    let runs = reps.len();
    // Counted in hash maps (one probe a sample, not a tree walk), sorted once at the end.
    type Counts = std::collections::HashMap<u64, Vec<(u64, f64)>, foldhash::fast::RandomState>;
    let mut by_offset: Vec<Counts> = vec![Counts::default(); functions.len()];
    let mut totals = Vec::with_capacity(runs);
    for (k, &(dir, symbols)) in reps.iter().enumerate() {
        let profile = prfout::read(&dir.join(PRFOUT_FILE))?;
        totals.push(profile_totals(&profile));
        // The functions' ranges in this repetition's kernel, by start.
        let mut ranges: Vec<(u64, u64, usize)> = functions
            .iter()
            .enumerate()
            .filter_map(|(f, name)| symbols.range_of(name).map(|r| (r.start, r.end, f)))
            .collect();
        if ranges.is_empty() {
            continue;
        }
        ranges.sort_unstable();
        let default_sec = profile.period_sec().unwrap_or(0.0);
        let ns = profile.unit == Unit::Nanoseconds;
        for_each_record(&dir.join("samples.gz"), |r| {
            let Record::Sample(s) = r else { return };
            if !matches!(s.mode, Mode::Kernel | Mode::Unknown) {
                return;
            }
            let Some(&(start, end, f)) = ranges
                .partition_point(|r| r.0 <= s.pc)
                .checked_sub(1)
                .map(|i| &ranges[i])
            else {
                return;
            };
            if s.pc >= end {
                return;
            }
            let sec = match (s.period, ns) {
                (Some(p), true) => p as f64 * 1e-9,
                _ => default_sec,
            };
            let slot = by_offset[f].entry(s.pc - start).or_insert_with(|| vec![(0, 0.0); runs]);
            slot[k].0 += 1;
            slot[k].1 += sec;
        })?;
    }
    let first = reps.first().map(|r| r.1);
    let by_offset: Vec<BTreeMap<u64, Vec<(u64, f64)>>> =
        by_offset.into_iter().map(|m| m.into_iter().collect()).collect();
    // Each function's code, the functions of one file read together (its symbols
    // scanned and its DWARF indexed once).
    let mut codes: Vec<Option<FunctionCode>> = vec![None; functions.len()];
    // (code file, debug file) -> (function's index, its size)
    type ByFile = BTreeMap<(PathBuf, Option<PathBuf>), Vec<(usize, u64)>>;
    let mut by_file = ByFile::new();
    for (k, f) in functions.iter().enumerate() {
        let Some((range, symbols)) = first.and_then(|s| s.range_of(f).map(|r| (r, s))) else {
            codes[k] = Some(FunctionCode {
                symbol: f.to_string(),
                missing: vec![format!(
                    "{f} is not a kernel function of the run (its kallsyms.gz): nothing sampled in it"
                )],
                ..FunctionCode::default()
            });
            continue;
        };
        let module = symbols.resolve(range.start).and_then(|(_, m)| m);
        let size = range.end - range.start;
        match code.files(module) {
            Ok(files) => by_file.entry(files).or_default().push((k, size)),
            Err(why) => codes[k] = Some(missing_code(f, size, why)),
        }
    }
    for ((elf, debug), ks) in by_file {
        let offsets: Vec<Vec<u64>> = ks
            .iter()
            .map(|&(k, _)| by_offset[k].keys().copied().collect())
            .collect();
        let wanted: Vec<(&str, &[u64])> = ks
            .iter()
            .zip(&offsets)
            .map(|(&(k, _), o)| (functions[k], o.as_slice()))
            .collect();
        match functions_code(&elf, debug.as_deref(), &wanted, KERNEL_DEBUG_PACKAGES, code.readers()) {
            Ok(all) => {
                for (&(k, size), c) in ks.iter().zip(all) {
                    codes[k] = Some(c.unwrap_or_else(|e| missing_code(functions[k], size, e.to_string())));
                }
            }
            Err(e) => {
                for &(k, size) in &ks {
                    codes[k] = Some(missing_code(functions[k], size, e.to_string()));
                }
            }
        }
    }
    Ok(codes
        .into_iter()
        .zip(by_offset)
        .map(|(code, by_offset)| SideSamples {
            code: code.unwrap_or_default(),
            by_offset,
            runs,
            totals: totals.clone(),
        })
        .collect())
}

/// A function whose code was not found: its name and size, and why.
fn missing_code(function: &str, size: u64, why: String) -> FunctionCode {
    FunctionCode {
        symbol: function.to_string(),
        size,
        missing: vec![why],
        ..FunctionCode::default()
    }
}

/// A repetition's samples and seconds, idle included.
fn profile_totals(p: &Profile) -> (u64, f64) {
    let samples: u64 = p.cpus.iter().map(|c| c.samples).sum();
    let seconds = match p.unit {
        Unit::Nanoseconds => p.cpus.iter().map(|c| c.weight as f64).sum::<f64>() * 1e-9,
        _ => samples as f64 * p.period_sec().unwrap_or(0.0),
    };
    (samples, seconds)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn system(text: &str) -> KeyValues {
        upcmp_parsers::keyvalue::parse_key_values(text, "system").unwrap()
    }

    #[test]
    fn the_vmlinux_comes_from_system_else_the_command_line() {
        let dir = tempfile::tempdir().unwrap();
        let elf = dir.path().join("vmlinux-x");
        crate::fsio::write_new(&elf, b"x", 0o600).unwrap();
        let k = KernelCode::of_run(
            &system(&format!("kernel-release: 9.9\nvmlinux: {}\n", elf.display())),
            "uprun auto out",
        );
        assert_eq!(k.vmlinux.as_deref(), Some(elf.as_path()));
        assert_eq!(k.release.as_deref(), Some("9.9"));
        let k = KernelCode::of_run(
            &system("kernel-release: 9.9\n"),
            &format!("uprun {} out", elf.display()),
        );
        assert_eq!(k.vmlinux.as_deref(), Some(elf.as_path()));
        let k = KernelCode::of_run(&system("kernel-release: 0.0-none\n"), "uprun auto out --runs 3");
        assert_eq!(k.vmlinux, None);
        assert!(k.files(None).unwrap_err().contains("linux-image"));
    }

    #[test]
    fn a_modules_ko_is_found_under_its_release_dash_or_underscore() {
        let root = tempfile::tempdir().unwrap();
        let d = root.path().join("lib/modules/9.9/kernel/drivers/net");
        std::fs::create_dir_all(&d).unwrap();
        crate::fsio::write_new(&d.join("e1000-e.ko.zst"), b"x", 0o600).unwrap();
        let k = KernelCode {
            vmlinux: None,
            release: Some("9.9".into()),
            root: root.path().to_path_buf(),
            owner: None,
        };
        let why = k.files(Some("e1000_e")).unwrap_err();
        assert!(why.contains("compressed") && why.contains("e1000-e.ko.zst"), "{why}");
        let why = k.files(Some("nosuch")).unwrap_err();
        assert!(
            why.contains("no nosuch.ko") && why.contains("kernel-debuginfo"),
            "{why}"
        );
        crate::fsio::write_new(&d.join("e1000-e.ko"), b"x", 0o600).unwrap();
        assert_eq!(k.files(Some("e1000_e")).unwrap().0, d.join("e1000-e.ko"));
    }
}
