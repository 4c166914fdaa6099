//! Below the function: a function's samples placed on its source lines and its
//! instructions, both runs side by side, each line tested as the function rows are
//! (`docs/annotate.md`).

use super::stats::{self, Correction, SampledTime};
use super::Significance;
use crate::symbols::lines::{FunctionCode, SourcePlace};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// One side's samples in the function: per offset from the function's start, one entry
/// per repetition (a single run has one), samples and seconds.
#[derive(Debug, Clone, Default)]
pub struct SideSamples {
    /// The function's code and lines in this side's build.
    pub code: FunctionCode,
    /// Per offset from the function's start: (samples, seconds) in each repetition.
    pub by_offset: BTreeMap<u64, Vec<(u64, f64)>>,
    /// Repetitions of this side.
    pub runs: usize,
    /// Per repetition, the run's total samples and seconds: what one sample stands for
    /// (their ratio); empty: the function's own samples' ratio.
    pub totals: Vec<(u64, f64)>,
}

/// How the lines are annotated.
#[derive(Debug, Clone, Default)]
pub struct AnnotateOptions {
    /// The functions to annotate (`--annotate FUNC`, repeatable); a compiler clone
    /// (`FUNC.isra.0`) answers to its function's name.
    pub functions: Vec<String>,
    /// Where source files are looked for when not at the path DWARF names
    /// (`--source-dir`, repeatable).
    pub source_dirs: Vec<PathBuf>,
    /// The owners of the runs or recordings (when neither root nor this user): a source
    /// file is read only when each of them could read it (docs/security.md).
    pub source_readers: Vec<u32>,
}

/// One source line of the function, both runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LineRow {
    /// The source file (run 1's name when both have it).
    pub file: String,
    /// The line in run 1's and in run 2's build (None: no such line on that side).
    pub lines: [Option<u32>; 2],
    /// The line's text, where the source was found.
    pub text: Option<String>,
    /// The function the line belongs to (an inlined helper's own name).
    pub function: String,
    /// The function it was inlined into, when inlined.
    pub inlined_into: Option<String>,
    /// Samples in run 1 and run 2 (summed over repetitions).
    pub samples: [u64; 2],
    /// Seconds in run 1 and run 2 (mean over repetitions).
    pub seconds: [f64; 2],
    /// Run 2's seconds minus run 1's.
    pub delta: f64,
    /// This line's share of the function's delta (None when the function's delta is 0).
    pub share_of_delta: Option<f64>,
    /// The noise test, adjusted with the function's other lines (one BH family).
    pub verdict: Significance,
    /// The adjusted p-value (BH q-value), when tested.
    pub q_value: Option<f64>,
}

/// One instruction, on one side or (same build) both.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InstructionRow {
    /// 0: run 1's build, 1: run 2's; in the same build both sides are on side 0's row.
    pub side: usize,
    /// Offset from the function's start.
    pub offset: u64,
    /// The disassembly (AT&T).
    pub text: String,
    /// Its source file and line.
    pub line: Option<(String, u32)>,
    /// Samples in run 1 and run 2 (the other side's 0 when shown per side).
    pub samples: [u64; 2],
    /// Seconds in run 1 and run 2 (mean over repetitions).
    pub seconds: [f64; 2],
    /// Run 2's seconds minus run 1's: same build only.
    pub delta: Option<f64>,
}

/// A function annotated for both runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Annotation {
    /// The function's name.
    pub function: String,
    /// Both runs ran identical code bytes: instructions matched by offset.
    pub same_build: bool,
    /// Its source lines, largest |delta| first.
    pub lines: Vec<LineRow>,
    /// Its instructions, in order (per side when the builds differ).
    pub instructions: Vec<InstructionRow>,
    /// What the reader should know (lines that may have moved, samples with no line).
    pub notes: Vec<String>,
    /// What is missing to annotate fully, and which package provides it.
    pub missing: Vec<String>,
}

/// The name the lines without line information are shown under.
pub const NO_LINE: &str = "(no line information)";

/// A line's samples on one side: who it belongs to and (samples, seconds) per repetition.
#[derive(Debug, Clone)]
struct SideLine {
    function: String,
    inlined_into: Option<String>,
    per_run: Vec<(u64, f64)>,
}

/// Side `s`'s samples by (file, line): line 0 of [`NO_LINE`] holds the samples the
/// debug information places nowhere.
fn side_lines(s: &SideSamples) -> BTreeMap<(String, u32), SideLine> {
    let runs = s.runs.max(1);
    let mut out: BTreeMap<(String, u32), SideLine> = BTreeMap::new();
    for (&offset, reps) in &s.by_offset {
        let place = s.code.place_at(offset);
        let key = match place {
            Some(p) => (p.file.clone(), p.line),
            None => (NO_LINE.to_string(), 0),
        };
        let e = out.entry(key).or_insert_with(|| SideLine {
            function: place.map_or_else(String::new, |p| p.function.clone()),
            inlined_into: place.and_then(|p| p.inlined_into.clone()),
            per_run: vec![(0, 0.0); runs],
        });
        for (acc, &(n, sec)) in e.per_run.iter_mut().zip(reps) {
            acc.0 += n;
            acc.1 += sec;
        }
    }
    out
}

/// The last path component of a source file's name.
fn base_name(file: &str) -> &str {
    file.rsplit('/').next().unwrap_or(file)
}

/// How run 2's lines of a file are placed on run 1's.
enum LineMap {
    /// The same lines (one build, the same source, or no source to compare).
    Same,
    /// Run 2's line → run 1's, from a diff of the two versions.
    Diff(std::collections::HashMap<u32, u32>),
}

impl LineMap {
    fn to_one(&self, line2: u32) -> Option<u32> {
        match self {
            LineMap::Same => Some(line2),
            LineMap::Diff(m) => m.get(&line2).copied(),
        }
    }
}

/// Matched lines of two versions of a file, 1-based (line in `a`, line in `b`): a
/// longest common subsequence of the lines after their common head and tail; between
/// two matched lines, a changed block of as many lines on each side is paired line by
/// line (a line edited in place keeps its place). `None` when the changed middle is too
/// large to diff (over 2^23 pairs of lines).
pub fn align_lines(a: &[String], b: &[String]) -> Option<Vec<(u32, u32)>> {
    let head = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let tail = a[head..]
        .iter()
        .rev()
        .zip(b[head..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let (ma, mb) = (&a[head..a.len() - tail], &b[head..b.len() - tail]);
    let (n, m) = (ma.len(), mb.len());
    if n.saturating_mul(m) > 1 << 23 {
        return None;
    }
    // lcs[i][j]: the LCS of ma[i..] and mb[j..].
    let w = m + 1;
    let mut lcs = vec![0u32; (n + 1) * w];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[i * w + j] = if ma[i] == mb[j] {
                lcs[(i + 1) * w + j + 1] + 1
            } else {
                lcs[(i + 1) * w + j].max(lcs[i * w + j + 1])
            };
        }
    }
    let mut pairs: Vec<(usize, usize)> = (0..head).map(|k| (k, k)).collect();
    let (mut i, mut j) = (0, 0);
    let (mut gap_i, mut gap_j) = (0, 0);
    let close_gap = |pairs: &mut Vec<(usize, usize)>, gi: usize, i: usize, gj: usize, j: usize| {
        if i - gi == j - gj {
            pairs.extend((0..i - gi).map(|k| (head + gi + k, head + gj + k)));
        }
    };
    while i < n && j < m {
        if ma[i] == mb[j] {
            close_gap(&mut pairs, gap_i, i, gap_j, j);
            pairs.push((head + i, head + j));
            i += 1;
            j += 1;
            (gap_i, gap_j) = (i, j);
        } else if lcs[(i + 1) * w + j] >= lcs[i * w + j + 1] {
            i += 1;
        } else {
            j += 1;
        }
    }
    close_gap(&mut pairs, gap_i, n, gap_j, m);
    pairs.extend((0..tail).map(|k| (a.len() - tail + k, b.len() - tail + k)));
    Some(pairs.into_iter().map(|(x, y)| (x as u32 + 1, y as u32 + 1)).collect())
}

/// A side's samples of a line as the tests take them: one [`SampledTime`] per
/// repetition, its samples Poisson counts. The lines of a function share no fixed total
/// (a recording of a process lasts as long as it runs, and a function's time moves
/// between runs), so none is conditioned on: the run's total is taken as unbounded, at
/// the repetition's seconds per sample (`totals`), which makes the multinomial variance
/// the Poisson one and the exact test's exposure samples per second.
fn sampled(per_run: &[(u64, f64)], totals: &[(u64, f64)]) -> Vec<SampledTime> {
    const UNBOUNDED: u64 = 1 << 52;
    per_run
        .iter()
        .enumerate()
        .map(|(r, &(n, sec))| {
            let per_sample = match totals.get(r) {
                Some(&(m, w)) if m > 0 && w > 0.0 => w / m as f64,
                _ if n > 0 => sec / n as f64,
                _ => 1.0,
            };
            SampledTime {
                samples: n,
                weight: sec,
                weight_sq: n as f64 * per_sample * per_sample,
                run_samples: UNBOUNDED,
                run_weight: UNBOUNDED as f64 * per_sample,
                scale: 1.0,
            }
        })
        .collect()
}

/// A side's totals: the given ones, else the function's own samples per repetition.
fn totals_of(s: &SideSamples) -> Vec<(u64, f64)> {
    if !s.totals.is_empty() {
        return s.totals.clone();
    }
    let mut t = vec![(0u64, 0.0f64); s.runs.max(1)];
    for reps in s.by_offset.values() {
        for (acc, &(n, sec)) in t.iter_mut().zip(reps) {
            acc.0 += n;
            acc.1 += sec;
        }
    }
    t
}

/// Annotates `function` from the samples of each side: per source line and per
/// instruction, run 1 against run 2 (`docs/annotate.md`).
///
/// Lines are tested as function rows are (the sampling test with one run a side, the
/// repetitions' tests with more, under the model fitted over the function's lines) and
/// adjusted together as one Benjamini–Hochberg family.
pub fn annotate(function: &str, one: &SideSamples, two: &SideSamples, opts: &AnnotateOptions) -> Annotation {
    let same_build = !one.code.bytes.is_empty() && one.code.bytes == two.code.bytes;
    let mut notes = Vec::new();
    let mut missing = Vec::new();
    for (k, s) in [(1, one), (2, two)] {
        for m in &s.code.missing {
            let m = format!("run {k}: {m}");
            if !missing.contains(&m) {
                missing.push(m);
            }
        }
    }
    let (l1, l2) = (side_lines(one), side_lines(two));
    // Sources, read once a file.
    let mut sources: BTreeMap<String, Option<Vec<String>>> = BTreeMap::new();
    let mut source = |file: &str| -> Option<Vec<String>> {
        sources
            .entry(file.to_string())
            .or_insert_with(|| crate::symbols::lines::read_source(file, &opts.source_dirs, &opts.source_readers))
            .clone()
    };
    // Run 2's files matched to run 1's: the same name, else the same base name when
    // one file of run 1 has it.
    let files1: Vec<&String> = {
        let mut f: Vec<&String> = l1.keys().map(|(f, _)| f).collect();
        f.dedup();
        f
    };
    let mut file_of_two: BTreeMap<String, (String, LineMap)> = BTreeMap::new();
    for (f2, _) in l2.keys() {
        if file_of_two.contains_key(f2) {
            continue;
        }
        let f1 = if files1.contains(&f2) || f2 == NO_LINE {
            f2.clone()
        } else {
            let same: Vec<&&String> = files1.iter().filter(|f| base_name(f) == base_name(f2)).collect();
            match same[..] {
                [f] => f.to_string(),
                _ => f2.clone(),
            }
        };
        let map = if same_build || f2 == NO_LINE {
            LineMap::Same
        } else {
            match (source(&f1), source(f2)) {
                (Some(a), Some(b)) if a == b => LineMap::Same,
                (Some(a), Some(b)) => match align_lines(&a, &b) {
                    Some(pairs) => {
                        notes.push(format!(
                            "{}: the two builds' versions differ; lines matched by a diff of the two",
                            f1
                        ));
                        LineMap::Diff(pairs.into_iter().map(|(x, y)| (y, x)).collect())
                    }
                    None => {
                        notes.push(format!(
                            "{}: the two versions differ too much to diff; lines matched by number and may have moved",
                            f1
                        ));
                        LineMap::Same
                    }
                },
                _ => {
                    notes.push(format!(
                        "{}: two builds and the source not found for both (--source-dir DIR): lines matched by number, \
                         and may have moved",
                        f1
                    ));
                    LineMap::Same
                }
            }
        };
        file_of_two.insert(f2.clone(), (f1, map));
    }
    // The rows: run 1's lines, run 2's placed on them, then run 2's alone.
    struct Joined {
        file: String,
        lines: [Option<u32>; 2],
        function: String,
        inlined_into: Option<String>,
        per_run: [Option<Vec<(u64, f64)>>; 2],
    }
    let mut rows: Vec<Joined> = Vec::new();
    let mut index: BTreeMap<(String, u32), usize> = BTreeMap::new();
    for ((file, line), s) in &l1 {
        index.insert((file.clone(), *line), rows.len());
        rows.push(Joined {
            file: file.clone(),
            lines: [(file != NO_LINE).then_some(*line), None],
            function: s.function.clone(),
            inlined_into: s.inlined_into.clone(),
            per_run: [Some(s.per_run.clone()), None],
        });
    }
    for ((file, line), s) in &l2 {
        let (f1, map) = &file_of_two[file];
        let at = map.to_one(*line).and_then(|l1| index.get(&(f1.clone(), l1)).copied());
        match at {
            Some(k) if rows[k].per_run[1].is_none() => {
                rows[k].lines[1] = (file != NO_LINE).then_some(*line);
                rows[k].per_run[1] = Some(s.per_run.clone());
            }
            _ => rows.push(Joined {
                file: f1.clone(),
                lines: [
                    map.to_one(*line).filter(|_| file != NO_LINE),
                    (file != NO_LINE).then_some(*line),
                ],
                function: s.function.clone(),
                inlined_into: s.inlined_into.clone(),
                per_run: [None, Some(s.per_run.clone())],
            }),
        }
    }
    // The tests: each line's times, the model fitted over the function's lines.
    let (t1, t2) = (totals_of(one), totals_of(two));
    let zero = |runs: usize| vec![(0u64, 0.0f64); runs.max(1)];
    let times: Vec<[Vec<SampledTime>; 2]> = rows
        .iter()
        .map(|r| {
            [
                sampled(r.per_run[0].as_deref().unwrap_or(&zero(one.runs)), &t1),
                sampled(r.per_run[1].as_deref().unwrap_or(&zero(two.runs)), &t2),
            ]
        })
        .collect();
    let spreads: Vec<_> = times
        .iter()
        .map(|[a, b]| stats::RowSpread::of_times(a, b))
        .filter(stats::RowSpread::eligible)
        .collect();
    let prior = stats::Prior::fit(&spreads);
    let repeated = one.runs > 1 || two.runs > 1;
    let mean_sec = |t: &[SampledTime]| stats::mean(&t.iter().map(SampledTime::value).collect::<Vec<_>>());
    let mut out: Vec<LineRow> = rows
        .into_iter()
        .zip(&times)
        .map(|(r, [a, b])| {
            let seconds = [mean_sec(a), mean_sec(b)];
            let delta = seconds[1] - seconds[0];
            let text = match (r.lines, r.file.as_str()) {
                (_, NO_LINE) => None,
                ([Some(l), _], f) | ([None, Some(l)], f) => {
                    source(f).and_then(|s| s.get(l.checked_sub(1)? as usize).map(|t| t.trim_end().to_string()))
                }
                _ => None,
            };
            LineRow {
                file: r.file,
                lines: r.lines,
                text,
                function: r.function,
                inlined_into: r.inlined_into,
                samples: [a.iter().map(|t| t.samples).sum(), b.iter().map(|t| t.samples).sum()],
                seconds,
                delta,
                share_of_delta: None,
                verdict: Significance::unadjusted(stats::time_test_with(a, b, &prior), delta, repeated),
                q_value: None,
            }
        })
        .collect();
    {
        let mut family: Vec<&mut Significance> = out.iter_mut().map(|r| &mut r.verdict).collect();
        stats::adjust_family(Correction::BenjaminiHochberg, &mut family);
    }
    let total: f64 = out.iter().map(|r| r.delta).sum();
    for r in &mut out {
        r.q_value = r.verdict.q_value;
        r.share_of_delta = (total != 0.0).then(|| r.delta / total);
    }
    // Source order: file, then line (run 1's, else run 2's), the unplaced last.
    out.sort_by(|a, b| {
        (a.file == NO_LINE, &a.file, a.lines[0].or(a.lines[1])).cmp(&(
            b.file == NO_LINE,
            &b.file,
            b.lines[0].or(b.lines[1]),
        ))
    });
    let instructions = instruction_rows(one, two, same_build);
    if !same_build {
        notes.push("run 1 and run 2 ran different code: instructions are shown per run, not subtracted".into());
    }
    Annotation {
        function: function.to_string(),
        same_build,
        lines: out,
        instructions,
        notes,
        missing,
    }
}

/// The instructions: matched by offset in one build, each side's own otherwise. Sampled
/// offsets no instruction holds (no code bytes) are rows of their own.
fn instruction_rows(one: &SideSamples, two: &SideSamples, same_build: bool) -> Vec<InstructionRow> {
    let runs = |s: &SideSamples| s.runs.max(1) as f64;
    let line = |code: &FunctionCode, o: u64| code.place_at(o).map(|p: &SourcePlace| (p.file.clone(), p.line));
    // Per side: instruction start (or the sampled offset) → samples, seconds.
    let by_insn = |s: &SideSamples| {
        let mut m: BTreeMap<u64, (u64, f64)> = BTreeMap::new();
        for (&o, reps) in &s.by_offset {
            let at = s.code.instruction_at(o).map_or(o, |c| c.offset);
            let e = m.entry(at).or_default();
            for &(n, sec) in reps {
                e.0 += n;
                e.1 += sec / runs(s);
            }
        }
        m
    };
    let rows_of =
        |s: &SideSamples, side: usize, own: &BTreeMap<u64, (u64, f64)>, other: Option<&BTreeMap<u64, (u64, f64)>>| {
            let mut offsets: Vec<u64> = s.code.instructions.iter().map(|c| c.offset).collect();
            offsets.extend(own.keys().copied());
            if let Some(o) = other {
                offsets.extend(o.keys().copied());
            }
            offsets.sort_unstable();
            offsets.dedup();
            offsets
                .into_iter()
                .map(|o| {
                    let mine = own.get(&o).copied().unwrap_or_default();
                    let theirs = other.and_then(|m| m.get(&o).copied()).unwrap_or_default();
                    let (samples, seconds) = match side {
                        0 => ([mine.0, theirs.0], [mine.1, theirs.1]),
                        _ => ([theirs.0, mine.0], [theirs.1, mine.1]),
                    };
                    InstructionRow {
                        side,
                        offset: o,
                        text: s.code.instruction_at(o).map(|c| c.text.clone()).unwrap_or_default(),
                        line: line(&s.code, o),
                        samples,
                        seconds,
                        delta: other.map(|_| seconds[1] - seconds[0]),
                    }
                })
                .collect::<Vec<_>>()
        };
    let (m1, m2) = (by_insn(one), by_insn(two));
    if same_build {
        return rows_of(one, 0, &m1, Some(&m2));
    }
    let mut out = rows_of(one, 0, &m1, None);
    out.extend(rows_of(two, 1, &m2, None));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(s: &str) -> Vec<String> {
        s.split(' ').map(str::to_string).collect()
    }

    #[test]
    fn moved_and_edited_lines_are_aligned() {
        // b: two lines added on top, "x" edited in place into "X".
        let a = lines("p q r x s t");
        let b = lines("n o p q r X s t");
        let pairs = align_lines(&a, &b).unwrap();
        assert_eq!(pairs, [(1, 3), (2, 4), (3, 5), (4, 6), (5, 7), (6, 8)]);
        // A block replaced by one of another size is left unmatched.
        let b = lines("p q r x1 x2 s t");
        let pairs = align_lines(&a, &b).unwrap();
        assert!(!pairs.iter().any(|&(x, _)| x == 4), "{pairs:?}");
        assert!(pairs.contains(&(5, 6)));
    }

    fn place(line: u32) -> Option<SourcePlace> {
        Some(SourcePlace {
            file: "/src/f.c".into(),
            line,
            function: "f".into(),
            inlined_into: None,
        })
    }

    fn side(samples: &[(u64, u64)], line_of: &[(u64, u32)], bytes: &[u8]) -> SideSamples {
        let mut code = FunctionCode {
            symbol: "f".into(),
            size: 64,
            bytes: bytes.to_vec(),
            ..FunctionCode::default()
        };
        for &(o, l) in line_of {
            code.places.insert(o, place(l));
        }
        SideSamples {
            code,
            by_offset: samples.iter().map(|&(o, n)| (o, vec![(n, n as f64 * 1e-3)])).collect(),
            runs: 1,
            totals: vec![(100_000, 100.0)],
        }
    }

    // One build: the line whose samples grew carries the delta and is the only one
    // marked; instructions are matched by offset.
    #[test]
    fn the_line_that_grew_is_the_one_marked() {
        let places: Vec<(u64, u32)> = (0..12).map(|k| (4 * k, 10 + k as u32)).collect();
        let before: Vec<(u64, u64)> = (0..12).map(|k| (4 * k, 2000)).collect();
        let mut after = before.clone();
        after[5].1 = 4000;
        let a = annotate(
            "f",
            &side(&before, &places, &[1]),
            &side(&after, &places, &[1]),
            &AnnotateOptions::default(),
        );
        assert!(a.same_build);
        let marked: Vec<_> = a.lines.iter().filter(|l| l.verdict.verdict.stands_out()).collect();
        assert_eq!(marked.len(), 1, "{:?}", a.lines);
        assert_eq!(marked[0].lines, [Some(15), Some(15)]);
        assert!((marked[0].share_of_delta.unwrap() - 1.0).abs() < 1e-9);
        let i = a.instructions.iter().find(|i| i.offset == 20).unwrap();
        assert_eq!(i.samples, [2000, 4000]);
        assert!((i.delta.unwrap() - 2.0).abs() < 1e-9);
        // A/A: nothing marked.
        let a = annotate(
            "f",
            &side(&before, &places, &[1]),
            &side(&before, &places, &[1]),
            &AnnotateOptions::default(),
        );
        assert!(a.lines.iter().all(|l| !l.verdict.verdict.stands_out()));
    }
}
