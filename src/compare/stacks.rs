//! Comparing two stack profiles (each side one or more repetitions): every frame (a path
//! from the root) by its *inclusive* share of CPU samples, and the callers and callees
//! that carry the change of the functions that changed most. Each share is tested with
//! [`stats::share_test`] (the binomial sampling error with one run a side, the repetitions'
//! spread with more), and the tests of a graph or a table are adjusted together as one
//! Benjamini–Hochberg family. Formulas: `docs/upsrun.md`, `docs/formulas.md`.
//!
//! Over 1,000 lines with its unit tests; the code alone is under 1,000.

use super::stats::{self, adjust_family, Correction, Prior, Significance};
use crate::model::{CallGraph, IdleSet, StackProfile};
use crate::store::outdir::RunKind;
use crate::store::run::{StoredRun, StoredTest};
use rayon::prelude::*;
use serde::Serialize;
use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt::Write as _;

pub use super::stats::ShareCount;

/// Frames (and functions, and arcs) below this share of CPU samples in both runs are
/// not tested: they stay out of the family, whose size would otherwise grow with every
/// rare path and cost the visible frames their power. Fixed before testing, like the
/// table's cutoff.
pub const FRAME_CUTOFF_PCT: f64 = 0.1;

/// One frame of the merged tree: a path from the root, in both runs.
#[derive(Debug, Clone, PartialEq)]
pub struct FrameChange {
    /// Frame name id (see [`StackDiff::name`]); the root node has none.
    pub frame: u32,
    /// Parent node (the root is its own parent).
    pub parent: usize,
    /// Depth: 0 for the root (inferno's `all`), 1 for outermost frames.
    pub depth: usize,
    /// Samples with this path on the stack, run 1 and run 2 (summed over repetitions).
    pub inclusive: [u64; 2],
    /// Samples whose whole stack is this path, run 1 and run 2 (summed over repetitions).
    pub leaf: [u64; 2],
}

/// A number's change between the runs as shares of each run's CPU samples.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ShareChange {
    /// Percent of run 1's CPU samples (the mean over its repetitions).
    pub pct1: f64,
    /// Percent of run 2's CPU samples (the mean over its repetitions).
    pub pct2: f64,
    /// pct2 - pct1.
    pub delta_pct: f64,
    /// The standard error of `delta_pct`: binomial with one run a side, the repetitions'
    /// spread (floored by the binomial) with more; 0 when not tested.
    pub error_pct: f64,
    /// The test of the share ([`stats::share_test`]) in percentage points, adjusted in its
    /// family.
    pub noise: Significance,
}

impl ShareChange {
    /// The shares `run1` and `run2` (one per repetition) and their change, tested but not
    /// yet adjusted: it stands out only once its family is ([`adjust`]).
    pub fn test(run1: &[ShareCount], run2: &[ShareCount]) -> Self {
        Self::test_with(run1, run2, &Prior::Unfitted)
    }

    /// [`test`](Self::test) under the variance model `prior` shared by the frames of a
    /// graph (see [`StackTree::finish`]).
    pub fn test_with(run1: &[ShareCount], run2: &[ShareCount], prior: &Prior) -> Self {
        let (pct1, pct2) = (mean_share_pct(run1), mean_share_pct(run2));
        let v = stats::share_test_with(run1, run2, prior);
        ShareChange {
            pct1,
            pct2,
            delta_pct: pct2 - pct1,
            error_pct: 100.0 * v.tested().map_or(0.0, |t| t.se),
            noise: Significance::unadjusted(v, (pct2 - pct1) / 100.0, run1.len() > 1 || run2.len() > 1).scaled(100.0),
        }
    }

    /// Counts `a1` of `n1` and `a2` of `n2` (one run a side), as [`test`](Self::test).
    pub fn of(a1: u64, n1: u64, a2: u64, n2: u64) -> Self {
        Self::test(&[ShareCount::of(a1, n1)], &[ShareCount::of(a2, n2)])
    }

    /// At or above [`FRAME_CUTOFF_PCT`] in either run: tested in a family.
    pub fn above_cutoff(&self) -> bool {
        above_cutoff(self.pct1, self.pct2)
    }

    /// Whether the change stands above the noise after its family's adjustment
    /// (significant, or beyond the sampling error with one run a side).
    pub fn stands_out(&self) -> bool {
        self.noise.stands_out()
    }
}

/// The mean of the repetitions' shares, in percent.
fn mean_share_pct(s: &[ShareCount]) -> f64 {
    let shares: Vec<f64> = s.iter().map(ShareCount::share).collect();
    100.0 * stats::mean(&shares)
}

fn above_cutoff(pct1: f64, pct2: f64) -> bool {
    pct1.max(pct2) >= FRAME_CUTOFF_PCT
}

/// Adjusts `changes` as one Benjamini–Hochberg family: those at or above
/// [`FRAME_CUTOFF_PCT`] in either run are its members; the others stay untested.
pub fn adjust<'a>(changes: impl IntoIterator<Item = &'a mut ShareChange>) {
    let mut members: Vec<&mut Significance> = changes
        .into_iter()
        .filter(|c| c.above_cutoff())
        .map(|c| &mut c.noise)
        .collect();
    adjust_family(Correction::BenjaminiHochberg, &mut members);
}

/// Two stack profiles merged into one tree of paths.
#[derive(Debug, Clone)]
pub struct StackDiff {
    names: Vec<String>,
    ids: HashMap<String, u32, foldhash::fast::RandomState>,
    /// Nodes; `nodes[0]` is the root.
    pub nodes: Vec<FrameChange>,
    children: HashMap<(usize, u32), usize, foldhash::fast::RandomState>,
    /// CPU samples of run 1 and run 2, summed over repetitions (the flame graph's
    /// denominators).
    pub samples: [u64; 2],
    /// Each repetition's CPU samples, run 1's and run 2's.
    repetition_samples: [Vec<u64>; 2],
    /// Each repetition's CPU samples' summed weight, run 1's and run 2's.
    repetition_weight: [Vec<u64>; 2],
    /// Each node's inclusive samples per repetition: node n's are
    /// `per_repetition[n * k ..][..k]`, run 1's repetitions first (k of them in all).
    per_repetition: Vec<u64>,
    /// Their summed weight, laid out as `per_repetition`: the shares shown.
    per_repetition_weight: Vec<u64>,
    /// The change of each node in the tested family, adjusted as one.
    changes: HashMap<usize, ShareChange, foldhash::fast::RandomState>,
    /// With repetitions, the variance model of the family's frames (docs/formulas.md,
    /// "The variance model"); unfitted with one run a side.
    pub prior: Prior,
    /// Whether the periods of some profile's samples vary: the flame graph's widths are
    /// then summed periods ([`StackProfile::periods_vary`]).
    by_weight: bool,
}

/// A [`StackDiff`] being built, one run at a time: the run read first can be merged
/// while the other is still being read. Nodes are numbered as first met; nothing drawn
/// or tested depends on their numbers (the stacks of a profile come in no order).
pub struct StackTree(StackDiff);

impl StackTree {
    /// An empty tree of `repetitions` profiles of run 1 and of run 2.
    pub fn new(repetitions: [usize; 2]) -> Self {
        StackTree(StackDiff {
            names: Vec::new(),
            ids: HashMap::default(),
            nodes: vec![FrameChange {
                frame: u32::MAX,
                parent: 0,
                depth: 0,
                inclusive: [0; 2],
                leaf: [0; 2],
            }],
            children: HashMap::default(),
            samples: [0; 2],
            repetition_samples: [vec![0; repetitions[0]], vec![0; repetitions[1]]],
            repetition_weight: [vec![0; repetitions[0]], vec![0; repetitions[1]]],
            per_repetition: vec![0; repetitions[0] + repetitions[1]],
            per_repetition_weight: vec![0; repetitions[0] + repetitions[1]],
            changes: HashMap::default(),
            prior: Prior::Unfitted,
            by_weight: false,
        })
    }

    /// Merges the profiles of run `run` (0: run 1, 1: run 2), one per repetition.
    pub fn add(&mut self, run: usize, profiles: &[StackProfile]) {
        let d = &mut self.0;
        assert_eq!(
            profiles.len(),
            d.repetition_samples[run].len(),
            "one profile per repetition"
        );
        let k1 = d.repetition_samples[0].len();
        let k = k1 + d.repetition_samples[1].len();
        d.samples[run] = profiles.iter().map(|p| p.samples).sum();
        d.repetition_samples[run] = profiles.iter().map(|p| p.samples).collect();
        d.repetition_weight[run] = profiles.iter().map(StackProfile::weight).collect();
        d.by_weight |= profiles.iter().any(StackProfile::periods_vary);
        for (i, p) in profiles.iter().enumerate() {
            let column = if run == 0 { i } else { k1 + i };
            // Each name is interned once, not once per frame of every stack.
            let ids: Vec<u32> = p.names().iter().map(|n| d.intern(n)).collect();
            // In order, a stack shares its first frames with the one before it: only the
            // rest are looked up, and the nodes of one subtree are made side by side.
            // Widths are values (sample equivalents); shares are of counts and weights.
            let mut stacks: Vec<_> = p.tallies_and_values().collect();
            stacks.sort_unstable_by(|a, b| a.0.cmp(b.0));
            // The nodes of the previous stack's frames, root first.
            let mut path: Vec<usize> = Vec::new();
            let mut previous: &[u32] = &[];
            for (s, t, c) in stacks {
                let common = s.iter().zip(previous).take_while(|(a, b)| a == b).count();
                path.truncate(common);
                for &f in &s[common..] {
                    let node = d.child(path.last().copied().unwrap_or(0), ids[f as usize]);
                    path.push(node);
                }
                previous = s;
                // Only where the stack ends: `finish` sums each node's subtree once.
                let leaf = path.last().copied().unwrap_or(0);
                d.nodes[leaf].leaf[run] += c;
                d.per_repetition[leaf * k + column] += t.count;
                d.per_repetition_weight[leaf * k + column] += t.weight;
            }
        }
    }

    /// The tree with its frames tested: only the family's members are tested here and
    /// kept (a few thousand of 10^5 nodes); the change of any other is its unadjusted
    /// test, made when asked for. The root is every sample of both runs: nothing to test.
    pub fn finish(self) -> StackDiff {
        let mut d = self.0;
        // Until now each node held the samples of the stacks ending there; a parent
        // is made before its children, so in reverse every subtree is summed before
        // its root is added to its parent.
        let k = d.repetition_samples[0].len() + d.repetition_samples[1].len();
        for n in 0..d.nodes.len() {
            d.nodes[n].inclusive = d.nodes[n].leaf;
        }
        for n in (1..d.nodes.len()).rev() {
            let (parent, inclusive) = (d.nodes[n].parent, d.nodes[n].inclusive);
            for (sum, add) in d.nodes[parent].inclusive.iter_mut().zip(inclusive) {
                *sum += add;
            }
            for c in 0..k {
                d.per_repetition[parent * k + c] += d.per_repetition[n * k + c];
                d.per_repetition_weight[parent * k + c] += d.per_repetition_weight[n * k + c];
            }
        }
        let members: Vec<usize> = (1..d.nodes.len()).filter(|&n| d.in_family(n)).collect();
        // With repetitions the frames share their variance model, fitted over the family.
        let spreads: Vec<stats::RowSpread> = members
            .iter()
            .map(|&n| {
                let [run1, run2] = d.counts(n);
                stats::RowSpread::of_shares(&run1, &run2)
            })
            .collect();
        d.prior = match Prior::fit(&spreads) {
            p @ Prior::Moderated { .. } => p,
            _ => Prior::Unfitted,
        };
        let mut changes: Vec<ShareChange> = members.iter().map(|&n| d.test(n)).collect();
        adjust(changes.iter_mut());
        d.changes = members.into_iter().zip(changes).collect();
        d
    }
}

impl StackDiff {
    /// Merges `before` and `after`, one profile per repetition (normally without idle
    /// stacks: see [`StackProfile::without_idle`]), and tests every frame.
    pub fn new(before: &[StackProfile], after: &[StackProfile]) -> Self {
        let mut t = StackTree::new([before.len(), after.len()]);
        t.add(0, before);
        t.add(1, after);
        t.finish()
    }

    /// Repetitions of run 1 and run 2.
    pub fn repetitions(&self) -> [usize; 2] {
        [self.repetition_samples[0].len(), self.repetition_samples[1].len()]
    }

    /// Node `n`'s counts per repetition, run 1's and run 2's.
    fn counts(&self, n: usize) -> [Vec<ShareCount>; 2] {
        let k1 = self.repetition_samples[0].len();
        let k = k1 + self.repetition_samples[1].len();
        let counts = &self.per_repetition[n * k..(n + 1) * k];
        let weights = &self.per_repetition_weight[n * k..(n + 1) * k];
        let side = |run: usize, from: usize, to: usize| {
            (from..to)
                .zip(self.repetition_samples[run].iter().zip(&self.repetition_weight[run]))
                .map(|(c, (&total, &total_weight))| ShareCount::weighted(counts[c], total, weights[c], total_weight))
                .collect::<Vec<_>>()
        };
        [side(0, 0, k1), side(1, k1, k)]
    }

    /// Node `n`'s share test, unadjusted.
    fn test(&self, n: usize) -> ShareChange {
        let [run1, run2] = self.counts(n);
        ShareChange::test_with(&run1, &run2, &self.prior)
    }

    /// Whether node `n` is in the tested family (as [`ShareChange::above_cutoff`],
    /// without testing it).
    fn in_family(&self, n: usize) -> bool {
        let [run1, run2] = self.counts(n);
        above_cutoff(mean_share_pct(&run1), mean_share_pct(&run2))
    }

    fn intern(&mut self, name: &str) -> u32 {
        if let Some(&i) = self.ids.get(name) {
            return i;
        }
        self.names.push(name.to_string());
        self.ids.insert(name.to_string(), self.names.len() as u32 - 1);
        self.names.len() as u32 - 1
    }

    fn child(&mut self, parent: usize, frame: u32) -> usize {
        if let Some(&n) = self.children.get(&(parent, frame)) {
            return n;
        }
        self.nodes.push(FrameChange {
            frame,
            parent,
            depth: self.nodes[parent].depth + 1,
            inclusive: [0; 2],
            leaf: [0; 2],
        });
        let k = self.repetition_samples[0].len() + self.repetition_samples[1].len();
        self.per_repetition.resize(self.per_repetition.len() + k, 0);
        self.per_repetition_weight
            .resize(self.per_repetition_weight.len() + k, 0);
        let n = self.nodes.len() - 1;
        self.children.insert((parent, frame), n);
        n
    }

    /// The name of frame id `f`.
    pub fn name(&self, f: u32) -> &str {
        &self.names[f as usize]
    }

    /// The frame name of node `n` (`all` for the root).
    pub fn node_name(&self, n: usize) -> &str {
        if n == 0 {
            "all"
        } else {
            self.name(self.nodes[n].frame)
        }
    }

    /// The folded path of node `n` (root first).
    pub fn path(&self, mut n: usize) -> String {
        let mut parts = Vec::new();
        while n != 0 {
            parts.push(self.name(self.nodes[n].frame));
            n = self.nodes[n].parent;
        }
        parts.reverse();
        parts.join(";")
    }

    /// Node `n`'s inclusive change, tested and adjusted with the graph's other frames.
    pub fn change(&self, n: usize) -> ShareChange {
        self.changes.get(&n).copied().unwrap_or_else(|| self.test(n))
    }

    /// The changes of the tested family's members (the only ones that can stand out).
    pub fn family_changes(&self) -> impl Iterator<Item = &ShareChange> {
        self.changes.values()
    }

    /// The node of the folded path `path`, if either run has it.
    pub fn find(&self, path: &str) -> Option<usize> {
        let mut n = 0;
        for f in path.split(';') {
            n = *self.children.get(&(n, *self.ids.get(f)?))?;
        }
        Some(n)
    }

    /// inferno's differential input, sorted as inferno sorts it: `path BEFORE AFTER` for
    /// every leaf path, BEFORE scaled to run 2's CPU samples so that a frame of unchanged
    /// share has equal columns. Widths are run 2's samples.
    ///
    /// inferno leaves out every frame narrower than its `min_width` (a percent of the
    /// graph), and with it the frames above it. So a node under `cut_below_pct` percent
    /// (the renderer gives half of inferno's; 0 cuts nothing) ends the paths through it:
    /// its whole subtree is one line, which keeps the node's width and its place among its
    /// siblings (its own samples' line when it has some, as that line sorts first; else a
    /// line through a stand-in child, as its callees' lines sort). The graph drawn is the
    /// same; on a recording of 10^6 samples the lines are a few thousand instead of one per
    /// distinct stack.
    pub fn differential_lines(&self, cut_below_pct: f64) -> Vec<DiffLine> {
        self.differential_lines_named(cut_below_pct, Cow::Borrowed)
    }

    /// [`differential_lines`] with each frame named as `name` gives it (a renderer's
    /// stand-in for a character its input format reserves), sorted as so named.
    ///
    /// [`differential_lines`]: Self::differential_lines
    pub fn differential_lines_named<'d>(
        &'d self,
        cut_below_pct: f64,
        name: impl Fn(&'d str) -> Cow<'d, str>,
    ) -> Vec<DiffLine> {
        self.shape_lines(Shape::Run2, cut_below_pct, name)
    }

    /// [`differential_lines_named`] drawn in `shape`: with [`Shape::Run1`], the widths
    /// are run 1's samples and the other column is run 2's scaled to them (FlameGraph's
    /// `difffolded.pl` with its inputs swapped), so frames that run 2 lacks are drawn.
    ///
    /// [`differential_lines_named`]: Self::differential_lines_named
    pub fn shape_lines<'d>(
        &'d self,
        shape: Shape,
        cut_below_pct: f64,
        name: impl Fn(&'d str) -> Cow<'d, str>,
    ) -> Vec<DiffLine> {
        // The run whose samples are the widths, and the other.
        let (w, o) = match shape {
            Shape::Run2 => (1, 0),
            Shape::Run1 => (0, 1),
        };
        // Where periods vary, each node's [inclusive, leaf] weights per run.
        let weights = self.by_weight.then(|| self.node_weights());
        let totals = match weights {
            Some(_) => self.repetition_weight.each_ref().map(|r| r.iter().sum::<u64>()),
            None => self.samples,
        };
        let scale = if totals[o] == 0 {
            0.0
        } else {
            totals[w] as f64 / totals[o] as f64
        };
        let weights = weights.as_deref();
        let inclusive = |n: usize| weights.map_or(self.nodes[n].inclusive, |x| x[n][0]);
        let leaf = |n: usize| weights.map_or(self.nodes[n].leaf, |x| x[n][1]);
        let total = inclusive(0)[w];
        // Parents come before their children, so one pass finds each node's cut.
        let mut cut = vec![usize::MAX; self.nodes.len()];
        let mut sums = vec![[0u64; 2]; self.nodes.len()];
        for n in 1..self.nodes.len() {
            let node = &self.nodes[n];
            cut[n] = match cut[node.parent] {
                usize::MAX if (inclusive(n)[w] as f64) * 100.0 < total as f64 * cut_below_pct => n,
                c => c,
            };
            let to = if cut[n] == usize::MAX { n } else { cut[n] };
            // [other run, this shape's run]: the columns of a line.
            let leaf = leaf(n);
            sums[to][0] += leaf[o];
            sums[to][1] += leaf[w];
        }
        // Each name as given once, not once per frame of every line.
        let names: Vec<Cow<'d, str>> = self.names.iter().map(|n| name(n)).collect();
        // Tens of thousands of lines on a busy machine's recording: written and sorted on
        // every core.
        let mut lines: Vec<DiffLine> = (1..self.nodes.len())
            .into_par_iter()
            .filter(|&n| sums[n] != [0, 0])
            .map_init(Vec::new, |chain, n| {
                let [before, after] = sums[n];
                let through = if cut[n] == n && self.nodes[n].leaf == [0, 0] {
                    ";…"
                } else {
                    ""
                };
                // The path, root first, written straight into the line.
                chain.clear();
                let mut k = n;
                while k != 0 {
                    chain.push(k);
                    k = self.nodes[k].parent;
                }
                let frame = |k: usize| &*names[self.nodes[k].frame as usize];
                let len: usize = chain.iter().map(|&k| frame(k).len() + 1).sum();
                let mut text = String::with_capacity(len + through.len() + 42);
                for (i, &k) in chain.iter().rev().enumerate() {
                    if i > 0 {
                        text.push(';');
                    }
                    text.push_str(frame(k));
                }
                let _ = write!(text, "{through} {} {after}", (before as f64 * scale).round() as u64);
                DiffLine {
                    text,
                    node: n,
                    width: after,
                }
            })
            .collect();
        lines.par_sort_unstable_by(|a, b| a.text.cmp(&b.text));
        if cut_below_pct <= 0.0 {
            return lines;
        }
        // Neighbouring lines of sibling subtrees cut whole: one line (the first's path,
        // their counts summed) carries them while together they stay under the cut, as
        // out of the drawing as each was and as wide (tens of thousands of lines on a
        // busy machine's recording, most of them such).
        let under = |after: u64| (after as f64) * 100.0 < total as f64 * cut_below_pct;
        let whole = |n: usize| cut[n] == n;
        let mut joined: Vec<DiffLine> = Vec::with_capacity(lines.len());
        let mut before_sum = 0u64;
        for line in lines {
            let n = line.node;
            match joined.last_mut() {
                Some(last)
                    if whole(n)
                        && whole(last.node)
                        && self.nodes[last.node].parent == self.nodes[n].parent
                        && under(last.width + line.width) =>
                {
                    before_sum += sums[n][0];
                    last.width += line.width;
                    // The counts are the last two words; the path may hold blanks.
                    let path_end = last.text.rsplitn(3, ' ').nth(2).map_or(0, str::len);
                    last.text.truncate(path_end);
                    let _ = write!(
                        last.text,
                        " {} {}",
                        (before_sum as f64 * scale).round() as u64,
                        last.width
                    );
                }
                _ => {
                    before_sum = sums[n][0];
                    joined.push(line);
                }
            }
        }
        joined
    }

    /// Whether the flame graph's widths are summed periods (some profile's periods vary),
    /// and then the samples of the mean period per unit of weight of the shape's run.
    pub fn samples_per_weight(&self, shape: Shape) -> Option<f64> {
        let run = match shape {
            Shape::Run2 => 1,
            Shape::Run1 => 0,
        };
        let weight: u64 = self.repetition_weight[run].iter().sum();
        self.by_weight.then(|| {
            if weight == 0 {
                1.0
            } else {
                self.samples[run] as f64 / weight as f64
            }
        })
    }

    /// Each node's summed periods, [inclusive, leaf], run 1's and run 2's (summed over
    /// repetitions), from its inclusive weight per repetition.
    fn node_weights(&self) -> Vec<[[u64; 2]; 2]> {
        let k1 = self.repetition_samples[0].len();
        let k = k1 + self.repetition_samples[1].len();
        let mut x: Vec<[[u64; 2]; 2]> = (0..self.nodes.len())
            .map(|n| {
                let row = &self.per_repetition_weight[n * k..(n + 1) * k];
                let runs = [row[..k1].iter().sum::<u64>(), row[k1..].iter().sum::<u64>()];
                [runs, runs]
            })
            .collect();
        // A node's own weight: its inclusive less its children's.
        for n in 1..self.nodes.len() {
            let (parent, child) = (self.nodes[n].parent, x[n][0]);
            for r in 0..2 {
                x[parent][1][r] -= child[r];
            }
        }
        x
    }

    /// Where each frame lands in the flame graph of [`differential_lines`]: the node
    /// drawn at (depth, start sample). This repeats inferno's merge (sorted lines, a frame
    /// opens where its path first appears), so frames can be recoloured after drawing.
    ///
    /// [`differential_lines`]: Self::differential_lines
    pub fn layout(&self, lines: &[DiffLine]) -> HashMap<(usize, u64), usize, foldhash::fast::RandomState> {
        let mut at = HashMap::default();
        let mut time = 0u64;
        let mut previous: Vec<usize> = Vec::new();
        for line in lines {
            let mut chain = Vec::new();
            let mut n = line.node;
            while n != 0 {
                chain.push(n);
                n = self.nodes[n].parent;
            }
            chain.reverse();
            let shared = chain.iter().zip(&previous).take_while(|(a, b)| a == b).count();
            for &n in &chain[shared..] {
                at.insert((self.nodes[n].depth, time), n);
            }
            time += line.width;
            previous = chain;
        }
        at
    }
}

/// Which run's samples a differential flame graph's widths are: run 2's shows frames
/// run 1 lacked, run 1's the frames that vanished in run 2. Colours are the same change
/// in both (red grew in run 2), as FlameGraph's `--negate` keeps them for swapped inputs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// Widths are run 2's samples (the default graph).
    Run2,
    /// Widths are run 1's samples.
    Run1,
}

/// A line of inferno's differential input: the text, the node its path ends at, and its
/// width (the shape's run's samples).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiffLine {
    /// `path BEFORE AFTER`.
    pub text: String,
    /// The node the path ends at.
    pub node: usize,
    /// The shape's run's samples of the line (run 2's unless drawn in [`Shape::Run1`]).
    pub width: u64,
}

/// One caller or callee arc of a changed function, in both runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ArcChange {
    /// The other function.
    pub function: String,
    /// Samples holding the arc, as shares of CPU samples.
    pub change: ShareChange,
}

/// A function whose inclusive time changed, and the arcs that carry the change.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FunctionChange {
    /// The function.
    pub function: String,
    /// Its inclusive share (it or its callees).
    pub inclusive: ShareChange,
    /// Its self share (it is the leaf).
    pub self_time: ShareChange,
    /// Its callers, largest change first.
    pub callers: Vec<ArcChange>,
    /// Its callees, largest change first.
    pub callees: Vec<ArcChange>,
}

/// The `top_n` functions whose inclusive share changed most (those that stand out in the
/// family of every function at or above [`FRAME_CUTOFF_PCT`]), with their callers and
/// callees; each side is one call graph per repetition. The self and arc changes shown
/// are a second family.
pub fn changed_functions(before: &[CallGraph], after: &[CallGraph], top_n: usize) -> Vec<FunctionChange> {
    let (ids1, ids2): (Vec<_>, Vec<_>) = (
        before.iter().map(GraphIndex::of).collect(),
        after.iter().map(GraphIndex::of).collect(),
    );
    let mut names: Vec<&str> = before
        .iter()
        .chain(after)
        .flat_map(|g| g.names.iter().map(String::as_str))
        .collect();
    names.sort_unstable();
    names.dedup();
    let side = |graphs: &[CallGraph], ids: &[GraphIndex<'_>], f: &str, v: fn(&CallGraph, usize) -> (u64, u64)| {
        graphs
            .iter()
            .zip(ids)
            .map(|(g, ids)| {
                let (count, weight) = ids.id(f).map_or((0, 0), |i| v(g, i as usize));
                ShareCount::weighted(count, g.samples, weight, g.weight)
            })
            .collect::<Vec<_>>()
    };
    let total = |g: &CallGraph, i: usize| (g.total_samples[i], g.total_weight[i]);
    let selfs = |g: &CallGraph, i: usize| (g.self_samples[i], g.self_weight[i]);
    let mut inclusive: Vec<(&str, ShareChange)> = names
        .par_iter()
        .map(|&f| {
            let c = ShareChange::test(&side(before, &ids1, f, total), &side(after, &ids2, f, total));
            (f, c)
        })
        .collect();
    adjust(inclusive.iter_mut().map(|(_, c)| c));
    let mut top: Vec<(&str, ShareChange)> = inclusive.into_iter().filter(|(_, c)| c.stands_out()).collect();
    top.sort_by(|a, b| {
        b.1.delta_pct
            .abs()
            .total_cmp(&a.1.delta_pct.abs())
            .then_with(|| a.0.cmp(b.0))
    });
    top.truncate(top_n);
    // Self times and arcs only of the functions shown: each costs a table of its arcs.
    let mut out: Vec<FunctionChange> = top
        .into_iter()
        .map(|(f, inclusive)| FunctionChange {
            function: f.to_string(),
            inclusive,
            self_time: ShareChange::test(&side(before, &ids1, f, selfs), &side(after, &ids2, f, selfs)),
            callers: arc_changes((before, &ids1), (after, &ids2), f, true),
            callees: arc_changes((before, &ids1), (after, &ids2), f, false),
        })
        .collect();
    adjust(out.iter_mut().flat_map(|f| {
        std::iter::once(&mut f.self_time)
            .chain(f.callers.iter_mut().map(|a| &mut a.change))
            .chain(f.callees.iter_mut().map(|a| &mut a.change))
    }));
    out
}

/// A call graph's ids by name and arcs by callee, built once: looking either up in the
/// graph itself scans all its names or arcs, once per changed function.
struct GraphIndex<'g> {
    ids: HashMap<&'g str, u32, foldhash::fast::RandomState>,
    /// (callee, caller, samples, weight), sorted.
    by_callee: Vec<(u32, u32, u64, u64)>,
}

impl<'g> GraphIndex<'g> {
    fn of(g: &'g CallGraph) -> Self {
        let mut ids = HashMap::with_capacity_and_hasher(g.names.len(), Default::default());
        // The first of equal names, as CallGraph::id finds it.
        for (i, n) in g.names.iter().enumerate().rev() {
            ids.insert(n.as_str(), i as u32);
        }
        let mut by_callee: Vec<(u32, u32, u64, u64)> =
            g.arcs.iter().map(|(&(p, c), a)| (c, p, a.samples, a.weight)).collect();
        by_callee.sort_unstable();
        GraphIndex { ids, by_callee }
    }

    fn id(&self, name: &str) -> Option<u32> {
        self.ids.get(name).copied()
    }

    /// The callers of `f` and their arcs' samples and weights, as [`CallGraph::callers`]
    /// lists them.
    fn callers(&self, f: u32) -> impl Iterator<Item = (u32, [u64; 2])> + '_ {
        let from = self.by_callee.partition_point(|&(c, _, _, _)| c < f);
        self.by_callee[from..]
            .iter()
            .take_while(move |&&(c, _, _, _)| c == f)
            .map(|&(_, p, s, w)| (p, [s, w]))
    }
}

/// The arcs of `f` (its callers, or its callees) in every repetition, tested.
fn arc_changes(
    (before, ids1): (&[CallGraph], &[GraphIndex<'_>]),
    (after, ids2): (&[CallGraph], &[GraphIndex<'_>]),
    f: &str,
    callers: bool,
) -> Vec<ArcChange> {
    let k1 = before.len();
    // Per function at the other end: samples and weight per repetition.
    let mut arcs: HashMap<String, Vec<[u64; 2]>, foldhash::fast::RandomState> = HashMap::default();
    for (column, (g, index)) in before.iter().zip(ids1).chain(after.iter().zip(ids2)).enumerate() {
        let Some(id) = index.id(f) else { continue };
        let list: Vec<(u32, [u64; 2])> = if callers {
            index.callers(id).collect()
        } else {
            g.callees(id).map(|(o, a)| (o, [a.samples, a.weight])).collect()
        };
        for (other, [samples, weight]) in list {
            let cell = &mut arcs
                .entry(g.names[other as usize].clone())
                .or_insert_with(|| vec![[0, 0]; k1 + after.len()])[column];
            cell[0] += samples;
            cell[1] += weight;
        }
    }
    let mut out: Vec<ArcChange> = arcs
        .into_iter()
        .map(|(function, counts)| {
            let side = |graphs: &[CallGraph], counts: &[[u64; 2]]| {
                graphs
                    .iter()
                    .zip(counts)
                    .map(|(g, &[count, weight])| ShareCount::weighted(count, g.samples, weight, g.weight))
                    .collect::<Vec<_>>()
            };
            ArcChange {
                function,
                change: ShareChange::test(&side(before, &counts[..k1]), &side(after, &counts[k1..])),
            }
        })
        .collect();
    out.sort_by(|a, b| {
        b.change
            .delta_pct
            .abs()
            .total_cmp(&a.change.delta_pct.abs())
            .then_with(|| a.function.cmp(&b.function))
    });
    out
}

/// How many changed functions the caller/callee table shows per test.
pub const TOP_FUNCTIONS: usize = 10;

/// The stack comparison of one test present in both runs.
#[derive(Debug, Clone)]
pub struct TestStacks {
    /// The test's directory name.
    pub test: String,
    /// The merged tree of both runs' CPU stacks (idle stacks left out).
    pub diff: StackDiff,
    /// The functions that changed most, with their callers and callees.
    pub functions: Vec<FunctionChange>,
    /// The functions of run 1 that run 2 lacks (or has at less than half), with where
    /// their callers' time went.
    pub inlined: Vec<super::moves::Inlined>,
    /// The functions whose self time changed most, against their callers' (cost shifts).
    pub shifts: Vec<super::moves::CostShift>,
}

/// Stack comparisons of two upsrun runs, test by test (tests with `stacks.folded` in both).
#[derive(Debug, Clone)]
pub struct RunStacks {
    /// Run 1's directory.
    pub dir1: std::path::PathBuf,
    /// Run 2's directory.
    pub dir2: std::path::PathBuf,
    /// The tests.
    pub tests: Vec<TestStacks>,
}

/// Compares the stacks of one test, each side one profile per repetition, idle stacks
/// (leaf in `idle`) left out.
pub fn compare_stacks(test: &str, before: &[StackProfile], after: &[StackProfile], idle: &IdleSet) -> TestStacks {
    compare_stacks_with(test, before, after, idle, false)
}

/// [`compare_stacks`], each function's clones folded into it (`model::naming`) unless
/// `keep_clones`.
pub fn compare_stacks_with(
    test: &str,
    before: &[StackProfile],
    after: &[StackProfile],
    idle: &IdleSet,
    keep_clones: bool,
) -> TestStacks {
    let side = |s: &[StackProfile]| {
        PreparedStacks::busy(s.iter().map(|p| p.without_idle(idle)).collect()).with_clones(keep_clones)
    };
    let (p1, p2) = rayon::join(|| side(before), || side(after));
    compare_prepared(test, p1, p2)
}

/// One side of a stack comparison made ready: its profiles (one per repetition) without
/// idle stacks, and, when made, their call graphs and the frame tree with this side in
/// it. Each side is made on its own, so one can be made while the other is still being
/// read.
pub struct PreparedStacks {
    busy: Vec<StackProfile>,
    graphs: Option<Vec<CallGraph>>,
    tree: Option<StackTree>,
}

impl PreparedStacks {
    /// The side of the profiles given up, idle stacks (leaf in `idle`) left out: each
    /// profile is dropped once its stacks without idle ones are made. The comparison
    /// builds the rest beside its frame tree.
    pub fn new(profiles: Vec<StackProfile>, idle: &IdleSet) -> Self {
        Self::busy(profiles.into_iter().map(|p| p.into_without_idle(idle)).collect())
    }

    /// This side with each function's clones folded into it (`model::naming`), unless
    /// `keep` or its graphs are made already.
    pub fn with_clones(mut self, keep: bool) -> Self {
        if !keep && self.graphs.is_none() {
            self.busy = std::mem::take(&mut self.busy)
                .into_iter()
                .map(|p| p.renamed(crate::model::naming::fold_display_name))
                .collect();
        }
        self
    }

    /// The side of profiles without idle stacks, nothing else made yet.
    fn busy(busy: Vec<StackProfile>) -> Self {
        PreparedStacks {
            busy,
            graphs: None,
            tree: None,
        }
    }

    /// This side with its call graphs built, and the frame tree begun with it as run
    /// `run` (0: run 1) of sides of `repetitions` profiles.
    pub fn with_graphs_and_tree(mut self, run: usize, repetitions: [usize; 2]) -> Self {
        self.graphs = Some(self.busy.iter().map(CallGraph::of).collect());
        let mut tree = StackTree::new(repetitions);
        tree.add(run, &self.busy);
        self.tree = Some(tree);
        self
    }
}

/// [`compare_stacks`] of two sides made ready apart, both with the same idle set.
pub fn compare_prepared(test: &str, before: PreparedStacks, after: PreparedStacks) -> TestStacks {
    fn graphs(side: &PreparedStacks) -> std::borrow::Cow<'_, [CallGraph]> {
        match &side.graphs {
            Some(g) => std::borrow::Cow::Borrowed(&g[..]),
            None => std::borrow::Cow::Owned(side.busy.iter().map(CallGraph::of).collect()),
        }
    }
    let (mut before, mut after) = (before, after);
    let begun = [before.tree.take(), after.tree.take()];
    let (diff, functions) = rayon::join(
        || {
            let repetitions = [before.busy.len(), after.busy.len()];
            let tree = match begun {
                [Some(mut t), _] => {
                    t.add(1, &after.busy);
                    t
                }
                [None, Some(mut t)] => {
                    t.add(0, &before.busy);
                    t
                }
                [None, None] => {
                    let mut t = StackTree::new(repetitions);
                    t.add(0, &before.busy);
                    t.add(1, &after.busy);
                    t
                }
            };
            tree.finish()
        },
        || {
            let (g1, g2) = rayon::join(|| graphs(&before), || graphs(&after));
            (
                changed_functions(&g1, &g2, TOP_FUNCTIONS),
                super::moves::inlined(&g1, &g2),
                super::moves::cost_shifts(&g1, &g2),
            )
        },
    );
    let (functions, inlined, shifts) = functions;
    crate::model::drop_aside((before, after));
    TestStacks {
        test: test.to_string(),
        diff,
        functions,
        inlined,
        shifts,
    }
}

/// Compares the stacks of two runs when both were written by upsrun; `None` otherwise.
/// Idle stacks (leaf in the test's idle set, or in `idle_override`) are left out, so the
/// shares are of CPU time as in the rest of the report.
pub fn compare_run_stacks(run1: &StoredRun, run2: &StoredRun, idle_override: Option<&IdleSet>) -> Option<RunStacks> {
    compare_run_stacks_with(run1, run2, idle_override, false)
}

/// [`compare_run_stacks`], each function's clones folded into it unless `keep_clones`.
pub fn compare_run_stacks_with(
    run1: &StoredRun,
    run2: &StoredRun,
    idle_override: Option<&IdleSet>,
    keep_clones: bool,
) -> Option<RunStacks> {
    if run1.marker.kind != RunKind::Upsrun || run2.marker.kind != RunKind::Upsrun {
        return None;
    }
    let mut tests = Vec::new();
    let by_name: HashMap<&str, &StoredTest> = run2.tests.iter().map(|t| (t.name.as_str(), t)).collect();
    for t1 in &run1.tests {
        let Some(&t2) = by_name.get(t1.name.as_str()) else {
            continue;
        };
        let (Some(s1), Some(s2)) = (&t1.stacks, &t2.stacks) else {
            continue;
        };
        let idle = match idle_override {
            Some(i) => i.clone(),
            None => IdleSet::new(t1.repetitions[0].profile.idle_set.clone()),
        };
        tests.push(compare_stacks_with(&t1.name, s1, s2, &idle, keep_clones));
    }
    Some(RunStacks {
        dir1: run1.dir.clone(),
        dir2: run2.dir.clone(),
        tests,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn folded(s: &str) -> StackProfile {
        StackProfile::from_folded(s, "x").unwrap()
    }

    fn one(s: &str) -> Vec<StackProfile> {
        vec![folded(s)]
    }

    // 100 of 1000 vs 300 of 2000: 10% vs 15%, binomial se = sqrt(100·900/1000³ +
    // 300·1700/2000³). 400 samples: the exact test with exposures 1000 and 2000, 2 P(X >=
    // 300) for X ~ Binomial(400, 2/3) (scipy 1.17.1: 2*binom.sf(299, 400, 2/3)). It
    // stands out once its family (here itself) is adjusted, against the sampling error
    // only.
    #[test]
    fn shares_and_binomial_errors() {
        let mut c = ShareChange::of(100, 1000, 300, 2000);
        assert!((c.delta_pct - 5.0).abs() < 1e-12);
        assert!((c.error_pct - 100.0 * (9e-5f64 + 6.375e-5).sqrt()).abs() < 1e-12);
        let p = c.noise.p_value.unwrap();
        assert!((p - 0.0003690609026860735).abs() < 1e-6 * p, "{p}");
        assert!(!c.stands_out(), "no family, no mark");
        adjust([&mut c]);
        assert!(c.stands_out() && c.noise.sampling_only);
        // The flame-graph errors: a frame at 100% has none (it showed ±1.35
        // points); 99% -> 98% and its mirror 1% -> 2% of 10,000 both have ±0.17.
        let whole = ShareChange::of(10_000, 10_000, 12_000, 12_000);
        assert_eq!((whole.error_pct, whole.noise.p_value), (0.0, Some(1.0)));
        let down = ShareChange::of(9900, 10_000, 9800, 10_000);
        let up = ShareChange::of(100, 10_000, 200, 10_000);
        assert!((down.error_pct - up.error_pct).abs() < 1e-12);
        assert!((down.error_pct - 0.17).abs() < 0.005, "{}", down.error_pct);
        let mut same = [ShareChange::of(10, 100, 11, 100), ShareChange::of(7, 70, 7, 70)];
        adjust(same.iter_mut());
        assert!(same.iter().all(|c| !c.stands_out()));
    }

    // A frame's change is tested in the family of the graph's frames: x's 20% -> 23% of
    // 2,500 -> 2,600 samples (p = 0.0075) stands out beside one sibling; beside twenty
    // unchanged ones (4% -> 3.8% each) BH's q for it is 22 p (the family: a, x and the
    // siblings).
    #[test]
    fn sides_made_apart_compare_as_together() {
        let idle = IdleSet::linux_default();
        let before = "sh;main;work 500\nsh;main;poll 300\nswapper;do_idle;default_idle 900\nsh;main;f;g 120\n";
        let after = "sh;main;work 700\nsh;main;f;g 40\nswapper;do_idle;default_idle 100\nsh;other 60\n";
        let together = compare_stacks("t", &one(before), &one(after), &idle);
        let apart = compare_prepared(
            "t",
            PreparedStacks::new(one(before), &idle),
            PreparedStacks::new(one(after), &idle),
        );
        // Either side may begin the tree, read first.
        let after_first = compare_prepared(
            "t",
            PreparedStacks::new(one(before), &idle),
            PreparedStacks::new(one(after), &idle).with_graphs_and_tree(1, [1, 1]),
        );
        let before_first = compare_prepared(
            "t",
            PreparedStacks::new(one(before), &idle).with_graphs_and_tree(0, [1, 1]),
            PreparedStacks::new(one(after), &idle),
        );
        assert_eq!(together.test, apart.test);
        assert_eq!(together.functions, apart.functions);
        assert_eq!(together.diff.samples, apart.diff.samples);
        // Node numbers follow the order the stacks are met in, which is no order.
        let lines = |d: &StackDiff| {
            let lines = d.differential_lines(0.0);
            lines.into_iter().map(|l| (l.text, l.width)).collect::<Vec<_>>()
        };
        assert_eq!(lines(&together.diff), lines(&apart.diff));
        for other in [&after_first, &before_first] {
            assert_eq!(together.functions, other.functions);
            assert_eq!(together.diff.samples, other.diff.samples);
            assert_eq!(lines(&together.diff), lines(&other.diff));
            let work = |d: &StackDiff| d.change(d.find("sh;main;work").unwrap());
            assert_eq!(work(&together.diff), work(&other.diff));
        }
        // Idle stacks are left out of both: the busy samples of run 1 and run 2.
        assert_eq!(apart.diff.samples, [920, 800]);
        assert!(apart.functions.iter().any(|f| f.function == "work"));
    }

    #[test]
    fn frames_are_one_family() {
        let d = StackDiff::new(&one("a;x 500\na;y 2000\n"), &one("a;x 600\na;y 2000\n"));
        let x = d.change(d.find("a;x").unwrap());
        assert!(x.stands_out(), "{x:?}");
        let siblings: String = (0..20).map(|i| format!("a;y{i} 100\n")).collect();
        let d = StackDiff::new(
            &one(&format!("a;x 500\n{siblings}")),
            &one(&format!("a;x 600\n{siblings}")),
        );
        let x = d.change(d.find("a;x").unwrap());
        assert!(!x.stands_out(), "{x:?}");
        assert!((x.noise.q_value.unwrap() - (22.0 * x.noise.p_value.unwrap()).min(1.0)).abs() < 1e-12);
    }

    // With repetitions a frame is tested on their spread, as the table's rows are: a
    // share of 10%, 20%, 30% against 25% three times is noise, although the summed
    // counts (600 against 750 of 3,000) are far beyond their sampling error.
    #[test]
    fn repetitions_use_their_spread() {
        let rep = |x: u32| folded(&format!("a;x {x}\na;y {}\n", 1000 - x));
        let d = StackDiff::new(&[rep(100), rep(200), rep(300)], &[rep(250), rep(250), rep(250)]);
        assert_eq!(d.repetitions(), [3, 3]);
        assert_eq!(d.samples, [3000, 3000]);
        let x = d.change(d.find("a;x").unwrap());
        assert_eq!(x.noise.test, Some(stats::NoiseTest::Welch));
        assert!((x.pct1 - 20.0).abs() < 1e-9 && (x.pct2 - 25.0).abs() < 1e-9);
        assert!(!x.stands_out(), "{x:?}");
        let pooled = ShareChange::of(600, 3000, 750, 3000);
        assert!(pooled.noise.p_value.unwrap() < 1e-4);
    }

    #[test]
    fn a_parent_whose_child_grew_grew() {
        // b's own line is unchanged, but its child c doubled: b's inclusive share grew.
        let d = StackDiff::new(
            &one("a;b 500\na;b;c 500\nz 1000\n"),
            &one("a;b 500\na;b;c 1000\nz 500\n"),
        );
        let b = d.find("a;b").unwrap();
        assert_eq!(d.nodes[b].inclusive, [1000, 1500]);
        assert!(d.change(b).delta_pct > 0.0 && d.change(b).stands_out());
        assert!(d.change(d.find("z").unwrap()).delta_pct < 0.0);
        // Against itself nothing changes.
        let same = StackDiff::new(&one("a;b 5\nz 3\n"), &one("a;b 5\nz 3\n"));
        assert!((1..same.nodes.len()).all(|n| !same.change(n).stands_out()));
    }

    #[test]
    fn a_frame_below_the_cutoff_keeps_its_unadjusted_test() {
        let d = StackDiff::new(&one("a 100000\nb 5\n"), &one("a 100000\nb 50\n"));
        let b = d.find("b").unwrap();
        assert!(!d.change(b).above_cutoff());
        assert_eq!(d.change(b), ShareChange::of(5, 100_005, 50, 100_050));
        assert!(d.change(d.find("a").unwrap()).above_cutoff());
    }

    #[test]
    fn layout_matches_the_merge_order() {
        let d = StackDiff::new(&one("a;b 2\na 1\nc 4\n"), &one("a;b 3\na 1\nc;d 4\n"));
        let lines = d.differential_lines(0.0);
        let text: Vec<&str> = lines.iter().map(|l| l.text.as_str()).collect();
        // Run 1 has 7 samples, run 2 has 8: before counts are scaled by 8/7.
        assert_eq!(text, ["a 1 1", "a;b 2 3", "c 5 0", "c;d 0 4"]);
        let at = d.layout(&lines);
        assert_eq!(at[&(1, 0)], d.find("a").unwrap());
        assert_eq!(at[&(2, 1)], d.find("a;b").unwrap());
        assert_eq!(at[&(1, 4)], d.find("c").unwrap());
        assert_eq!(at[&(2, 4)], d.find("c;d").unwrap());
    }

    #[test]
    fn callers_that_carry_the_change() {
        let g1 = CallGraph::of(&folded("main;p;f 100\nmain;q;f 100\nmain;r 800\n"));
        let g2 = CallGraph::of(&folded("main;p;f 100\nmain;q;f 400\nmain;r 500\n"));
        let top = changed_functions(&[g1], &[g2], 3);
        let f = top.iter().find(|c| c.function == "f").unwrap();
        assert!((f.inclusive.delta_pct - 30.0).abs() < 1e-9);
        assert_eq!(f.callers[0].function, "q", "q carries the change");
        assert!((f.callers[0].change.delta_pct - 30.0).abs() < 1e-9);
        assert_eq!(f.callers[1].change.delta_pct, 0.0);
        assert!(top.iter().all(|c| c.function != "main"), "main is 100% in both");
    }
}
