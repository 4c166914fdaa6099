//! `--annotate FUNC` on perf recordings: each side's sampled addresses of the function
//! (collected by the import), its code and lines from the ELF file that ran, and the
//! comparison line by line (`docs/annotate.md`).

use crate::compare::annotate::{annotate, AnnotateOptions, Annotation, SideSamples};
use crate::import::{AnnotatedSamples, KERNEL_MAPPING};
use crate::model::Profile;
use crate::symbols::elf_build_id;
use crate::symbols::lines::{
    answers_to, debug_file_for, function_code, functions_code, FunctionCode, KERNEL_DEBUG_PACKAGES, USER_DEBUG_PACKAGES,
};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

/// One recording (one repetition) of a side: the sampled addresses its import collected,
/// and its profile.
pub type Recording<'a> = (&'a [AnnotatedSamples], &'a Profile);

/// One side of `function`, one or more repetitions of one build: its samples placed on
/// the code of the file that holds most of them in the first, with what could not be
/// found. An ELF file the recording names is read only when each user of `readers` (the
/// recordings' owners, when neither root nor this user) could read it.
pub fn side_of(function: &str, reps: &[Recording<'_>], readers: &[u32]) -> SideSamples {
    side_with(function, reps, readers, &Prefetched::new())
}

/// The code of functions read before [`side_of`] needs it, each file's functions
/// together ([`functions_code`]): (file, symbol name) → the code, or why not.
type Prefetched = HashMap<(PathBuf, String), Result<FunctionCode, String>>;

/// The samples of `function` an annotation reads: those of each file that holds some,
/// the file with most first.
fn chosen<'a>(function: &str, annotated: &'a [AnnotatedSamples]) -> Vec<&'a AnnotatedSamples> {
    let mut found: Vec<&AnnotatedSamples> = annotated.iter().filter(|a| answers_to(&a.function, function)).collect();
    found.sort_by_key(|a| std::cmp::Reverse(a.samples.values().sum::<u64>()));
    found
}

/// Whether each user of `readers` could read the file of `a` (a kernel function's is
/// the vmlinux the user named).
fn readable(a: &AnnotatedSamples, readers: &[u32]) -> Result<(), u32> {
    crate::fsio::foreign::may_read(&a.file, file_readers(a, readers))
}

/// The users `a`'s files are read for: none for a kernel function (its vmlinux is the one
/// the user named), else `readers`. Every read of them goes through
/// `fsio::foreign::open_as` with these, so a file swapped after [`readable`] is not read.
fn file_readers<'r>(a: &AnnotatedSamples, readers: &'r [u32]) -> &'r [u32] {
    if a.kernel {
        &[]
    } else {
        readers
    }
}

/// The code each side's annotation of `functions` will read, read a file at a time: a
/// library's symbols scanned and its debug file's DWARF indexed (and decompressed) once
/// for all its functions, not once per function and side.
fn prefetch(functions: &[String], sides: [&[AnnotatedSamples]; 2], readers: &[u32]) -> Prefetched {
    let mut by_file: BTreeMap<(&Path, bool), Vec<&str>> = BTreeMap::new();
    let no_readers: &[u32] = &[];
    for side in sides {
        for f in functions {
            let Some(a) = chosen(f, side).first().copied() else {
                continue;
            };
            if a.file.as_os_str() == KERNEL_MAPPING || readable(a, readers).is_err() {
                continue;
            }
            let names = by_file.entry((a.file.as_path(), a.kernel)).or_default();
            if !names.contains(&a.function.as_str()) {
                names.push(&a.function);
            }
        }
    }
    let mut out = Prefetched::new();
    for ((file, kernel), names) in by_file {
        let packages = if kernel {
            KERNEL_DEBUG_PACKAGES
        } else {
            USER_DEBUG_PACKAGES
        };
        let wanted: Vec<(&str, &[u64])> = names.iter().map(|&n| (n, &[][..])).collect();
        let readers = if kernel { no_readers } else { readers };
        let codes = functions_code(
            file,
            debug_file_for(file, readers).as_deref(),
            &wanted,
            packages,
            readers,
        );
        for (k, name) in names.iter().enumerate() {
            let code = match &codes {
                Ok(all) => all[k].as_ref().map(Clone::clone).map_err(ToString::to_string),
                Err(e) => Err(e.to_string()),
            };
            out.insert((file.to_path_buf(), name.to_string()), code);
        }
    }
    out
}

/// [`side_of`], with the code of the functions in `prefetched` already read.
fn side_with(function: &str, reps: &[Recording<'_>], readers: &[u32], prefetched: &Prefetched) -> SideSamples {
    let runs = reps.len().max(1);
    let period_of = |p: &Profile| p.period_sec().unwrap_or(p.period);
    let mut side = SideSamples {
        runs,
        totals: reps
            .iter()
            .map(|(_, p)| {
                let n: u64 = p.cpus.iter().map(|c| c.samples).sum();
                (n, n as f64 * period_of(p))
            })
            .collect(),
        ..SideSamples::default()
    };
    let Some(&(annotated, _)) = reps.first() else {
        return side;
    };
    let found = chosen(function, annotated);
    let Some(a) = found.first() else {
        side.code.missing.push(format!(
            "no samples of {function} in an ELF file or in the kernel's core (functions of kernel modules \
             are annotated in uprun runs)"
        ));
        return side;
    };
    let packages = if a.kernel {
        KERNEL_DEBUG_PACKAGES
    } else {
        USER_DEBUG_PACKAGES
    };
    if a.file.as_os_str() == KERNEL_MAPPING {
        side.code.missing.push(format!(
            "{function} is a kernel function: its code and lines come from the recording's vmlinux, given \
             with --vmlinux FILE; {KERNEL_DEBUG_PACKAGES}"
        ));
        return side;
    }
    if let Err(uid) = readable(a, readers) {
        side.code.missing.push(format!(
            "{} is not readable by the recording's owner (uid {uid}): not read for it (docs/security.md)",
            a.file.display()
        ));
        return side;
    }
    for other in &found[1..] {
        side.code.missing.push(format!(
            "{} samples of {} in {} are left out (the function is annotated in {})",
            other.samples.values().sum::<u64>(),
            other.function,
            other.file.display(),
            a.file.display()
        ));
    }
    if let (Some(want), Ok(Some(have))) = (&a.build_id, elf_build_id(&a.file)) {
        if *want != have {
            side.code.missing.push(format!(
                "{} is another build than the one recorded: its code and lines are not used",
                a.file.display()
            ));
            return side;
        }
    }
    if a.by_offset && a.build_id.is_none() {
        side.code.missing.push(format!(
            "perf script text names no build-id: {} is taken to be the build that ran (a perf.data \
             recording is checked)",
            a.file.display()
        ));
    }
    let code = match prefetched.get(&(a.file.clone(), a.function.clone())) {
        Some(code) => code.clone(),
        None => function_code(
            &a.file,
            debug_file_for(&a.file, file_readers(a, readers)).as_deref(),
            &a.function,
            &[],
            packages,
            file_readers(a, readers),
        )
        .map_err(|e| e.to_string()),
    };
    let code = match code {
        Ok(c) => c,
        Err(e) => {
            side.code.missing.push(format!("{e}; {packages}"));
            return side;
        }
    };
    let (start, size) = (code.start, code.size);
    let inside = |addr: u64| addr >= start && addr - start < size.max(1);
    // Each repetition's samples in the same file (by path and build-id).
    let same_file =
        |b: &&AnnotatedSamples| b.file == a.file && b.build_id == a.build_id && answers_to(&b.function, function);
    let samples: Vec<std::collections::BTreeMap<u64, u64>> = reps
        .iter()
        .map(|(ann, _)| {
            let mut m = std::collections::BTreeMap::new();
            for b in ann.iter().filter(same_file) {
                for (&x, &n) in &b.samples {
                    let x = if b.by_offset { start.wrapping_add(x) } else { x };
                    *m.entry(x).or_insert(0u64) += n;
                }
            }
            m
        })
        .collect();
    let mut offsets: Vec<u64> = samples
        .iter()
        .flat_map(|m| m.keys())
        .filter(|&&x| inside(x))
        .map(|x| x - start)
        .collect();
    offsets.sort_unstable();
    offsets.dedup();
    // Without instructions, places are looked up at the sampled offsets themselves.
    let code = if code.instructions.is_empty() && !offsets.is_empty() {
        function_code(
            &a.file,
            debug_file_for(&a.file, file_readers(a, readers)).as_deref(),
            &a.function,
            &offsets,
            packages,
            file_readers(a, readers),
        )
        .unwrap_or(code)
    } else {
        code
    };
    let outside: u64 = samples
        .iter()
        .flatten()
        .filter(|(x, _)| !inside(**x))
        .map(|(_, n)| n)
        .sum();
    if outside > 0 {
        side.code.missing.push(format!(
            "{outside} samples of {} lie outside its symbol {} in {} (another part of it: a .cold clone?)",
            a.function,
            code.symbol,
            a.file.display()
        ));
    }
    for (r, m) in samples.iter().enumerate() {
        let period = period_of(reps[r].1);
        for (&addr, &n) in m.iter().filter(|(x, _)| inside(**x)) {
            side.by_offset
                .entry(addr - start)
                .or_insert_with(|| vec![(0, 0.0); runs])[r] = (n, n as f64 * period);
        }
    }
    // What was found missing on the way stays, before what the code's reader found.
    let mut code = code;
    let found_on_the_way = std::mem::take(&mut side.code.missing);
    code.missing.splice(0..0, found_on_the_way);
    side.code = code;
    side
}

/// The annotation of each function `opts` names, from two imports' sampled addresses,
/// those of the recordings `paths`: the files they name are read only where their owners
/// could read them.
pub fn annotate_recordings(
    one: Recording<'_>,
    two: Recording<'_>,
    paths: [&std::path::Path; 2],
    opts: &AnnotateOptions,
) -> Vec<Annotation> {
    let opts = with_readers(opts, paths.iter().filter_map(|p| crate::fsio::foreign_owner(p)));
    let readers = &opts.source_readers;
    let prefetched = prefetch(&opts.functions, [one.0, two.0], readers);
    opts.functions
        .iter()
        .map(|f| {
            let s1 = side_with(f, &[one], readers, &prefetched);
            let s2 = side_with(f, &[two], readers, &prefetched);
            annotate(f, &s1, &s2, &opts)
        })
        .collect()
}

/// `opts` with the users `owners` added to those each source file must be readable by.
pub(crate) fn with_readers(opts: &AnnotateOptions, owners: impl Iterator<Item = u32>) -> AnnotateOptions {
    let mut opts = opts.clone();
    for uid in owners {
        if !opts.source_readers.contains(&uid) {
            opts.source_readers.push(uid);
        }
    }
    opts
}
