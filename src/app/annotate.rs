//! `--annotate FUNC` on perf recordings: each side's sampled addresses of the function
//! (collected by the import), its code and lines from the ELF file that ran, and the
//! comparison line by line (`docs/annotate.md`).

use crate::compare::annotate::{annotate, AnnotateOptions, Annotation, SideSamples};
use crate::import::AnnotatedSamples;
use crate::model::Profile;
use crate::symbols::lines::{answers_to, debug_file_for, function_code, USER_DEBUG_PACKAGES};
use crate::symbols::elf_build_id;

/// One side of `function`: its samples placed on the code of the file that holds most of
/// them, with what could not be found.
fn side_of(function: &str, annotated: &[AnnotatedSamples], profile: &Profile) -> SideSamples {
    let period = profile.period_sec().unwrap_or(profile.period);
    let run_samples: u64 = profile.cpus.iter().map(|c| c.samples).sum();
    let mut side = SideSamples {
        runs: 1,
        totals: vec![(run_samples, run_samples as f64 * period)],
        ..SideSamples::default()
    };
    let mut found: Vec<&AnnotatedSamples> = annotated.iter().filter(|a| answers_to(&a.function, function)).collect();
    found.sort_by_key(|a| std::cmp::Reverse(a.samples.values().sum::<u64>()));
    let Some(a) = found.first() else {
        side.code.missing.push(format!(
            "no user-space samples of {function} in an ELF file (kernel functions of perf recordings are not \
             annotated; uprun runs are)"
        ));
        return side;
    };
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
    let debug = debug_file_for(&a.file);
    let code = match function_code(&a.file, debug.as_deref(), &a.function, &[], USER_DEBUG_PACKAGES) {
        Ok(c) => c,
        Err(e) => {
            side.code.missing.push(format!("{e}; {USER_DEBUG_PACKAGES}"));
            return side;
        }
    };
    let (start, size) = (code.start, code.size);
    let inside = |addr: u64| addr >= start && addr - start < size.max(1);
    let offsets: Vec<u64> = a.samples.keys().filter(|&&x| inside(x)).map(|x| x - start).collect();
    // Without instructions, places are looked up at the sampled offsets themselves.
    let code = if code.instructions.is_empty() && !offsets.is_empty() {
        function_code(&a.file, debug.as_deref(), &a.function, &offsets, USER_DEBUG_PACKAGES).unwrap_or(code)
    } else {
        code
    };
    let outside: u64 = a.samples.iter().filter(|(x, _)| !inside(**x)).map(|(_, n)| n).sum();
    if outside > 0 {
        side.code.missing.push(format!(
            "{outside} samples of {} lie outside its symbol {} in {} (another part of it: a .cold clone?)",
            a.function,
            code.symbol,
            a.file.display()
        ));
    }
    for (&addr, &n) in &a.samples {
        if inside(addr) {
            side.by_offset.insert(addr - start, vec![(n, n as f64 * period)]);
        }
    }
    side.code = code;
    side
}

/// The annotation of each function `opts` names, from two imports' sampled addresses.
pub fn annotate_recordings(
    one: (&[AnnotatedSamples], &Profile),
    two: (&[AnnotatedSamples], &Profile),
    opts: &AnnotateOptions,
) -> Vec<Annotation> {
    opts.functions
        .iter()
        .map(|f| {
            let s1 = side_of(f, one.0, one.1);
            let s2 = side_of(f, two.0, two.1);
            annotate(f, &s1, &s2, opts)
        })
        .collect()
}
