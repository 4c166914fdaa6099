//! Comparing two stack profiles: every frame (a path from the root) by its *inclusive*
//! share of CPU time, with a Poisson noise test, and the callers and callees that carry
//! the change of the functions that changed most. Formulas: `docs/upsrun.md`.

use crate::model::{CallGraph, IdleSet, StackProfile};
use crate::store::outdir::RunKind;
use crate::store::run::StoredRun;
use serde::Serialize;
use std::collections::HashMap;

/// A change is drawn and listed as real when it exceeds this many standard errors.
/// Stricter than the tables' two-sided 5% ([`super::stats::Z_CRIT`]) on purpose: a flame
/// graph tests every one of its frames (hundreds) at once, and 3 standard errors keep
/// the frames coloured by chance to about one in 370 per frame.
pub const NOISE_Z: f64 = 3.0;

/// One frame of the merged tree: a path from the root, in both runs.
#[derive(Debug, Clone, PartialEq)]
pub struct FrameChange {
    /// Frame name id (see [`StackDiff::name`]); the root node has none.
    pub frame: u32,
    /// Parent node (the root is its own parent).
    pub parent: usize,
    /// Depth: 0 for the root (inferno's `all`), 1 for outermost frames.
    pub depth: usize,
    /// Samples with this path on the stack, run 1 and run 2.
    pub inclusive: [u64; 2],
    /// Samples whose whole stack is this path, run 1 and run 2.
    pub leaf: [u64; 2],
}

/// A number's change between the runs as shares of each run's CPU samples.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ShareChange {
    /// Percent of run 1's CPU samples.
    pub pct1: f64,
    /// Percent of run 2's CPU samples.
    pub pct2: f64,
    /// pct2 - pct1.
    pub delta_pct: f64,
    /// The standard error of `delta_pct` when both counts are Poisson.
    pub error_pct: f64,
}

impl ShareChange {
    /// Counts `a1` of `n1` and `a2` of `n2` as shares and their difference.
    pub fn of(a1: u64, n1: u64, a2: u64, n2: u64) -> Self {
        let share = |a: u64, n: u64| if n == 0 { 0.0 } else { a as f64 / n as f64 };
        let var = |a: u64, n: u64| if n == 0 { 0.0 } else { a as f64 / (n as f64 * n as f64) };
        let (p1, p2) = (share(a1, n1), share(a2, n2));
        ShareChange {
            pct1: 100.0 * p1,
            pct2: 100.0 * p2,
            delta_pct: 100.0 * (p2 - p1),
            error_pct: 100.0 * (var(a1, n1) + var(a2, n2)).sqrt(),
        }
    }

    /// Whether the change exceeds [`NOISE_Z`] standard errors.
    pub fn significant(&self) -> bool {
        self.delta_pct.abs() > NOISE_Z * self.error_pct
    }
}

/// Two stack profiles merged into one tree of paths.
#[derive(Debug, Clone)]
pub struct StackDiff {
    names: Vec<String>,
    ids: HashMap<String, u32>,
    /// Nodes; `nodes[0]` is the root.
    pub nodes: Vec<FrameChange>,
    children: HashMap<(usize, u32), usize>,
    /// CPU samples of run 1 and run 2 (the denominators).
    pub samples: [u64; 2],
}

impl StackDiff {
    /// Merges `before` and `after` (normally without idle stacks: see
    /// [`StackProfile::without_idle`]).
    pub fn new(before: &StackProfile, after: &StackProfile) -> Self {
        let mut d = StackDiff {
            names: Vec::new(),
            ids: HashMap::new(),
            nodes: vec![FrameChange {
                frame: u32::MAX,
                parent: 0,
                depth: 0,
                inclusive: [0; 2],
                leaf: [0; 2],
            }],
            children: HashMap::new(),
            samples: [before.samples, after.samples],
        };
        for (run, p) in [before, after].into_iter().enumerate() {
            // Each name is interned once, not once per frame of every stack.
            let ids: Vec<u32> = p.names().iter().map(|n| d.intern(n)).collect();
            for (s, c) in p.stacks() {
                let mut node = 0;
                d.nodes[0].inclusive[run] += c;
                for &f in s {
                    node = d.child(node, ids[f as usize]);
                    d.nodes[node].inclusive[run] += c;
                }
                d.nodes[node].leaf[run] += c;
            }
        }
        d
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

    /// Node `n`'s inclusive change.
    pub fn change(&self, n: usize) -> ShareChange {
        let x = &self.nodes[n];
        ShareChange::of(x.inclusive[0], self.samples[0], x.inclusive[1], self.samples[1])
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
    pub fn differential_lines(&self) -> Vec<(String, usize)> {
        let scale = if self.samples[0] == 0 {
            0.0
        } else {
            self.samples[1] as f64 / self.samples[0] as f64
        };
        let mut lines: Vec<(String, usize)> = (1..self.nodes.len())
            .filter(|&n| self.nodes[n].leaf != [0, 0])
            .map(|n| {
                let l = self.nodes[n].leaf;
                (
                    format!("{} {} {}", self.path(n), (l[0] as f64 * scale).round() as u64, l[1]),
                    n,
                )
            })
            .collect();
        lines.sort_unstable();
        lines
    }

    /// Where each frame lands in the flame graph of [`differential_lines`]: the node
    /// drawn at (depth, start sample). This repeats inferno's merge (sorted lines, a frame
    /// opens where its path first appears), so frames can be recoloured after drawing.
    ///
    /// [`differential_lines`]: Self::differential_lines
    pub fn layout(&self, lines: &[(String, usize)]) -> HashMap<(usize, u64), usize> {
        let mut at = HashMap::new();
        let mut time = 0u64;
        let mut previous: Vec<usize> = Vec::new();
        for (_, leaf) in lines {
            let mut chain = Vec::new();
            let mut n = *leaf;
            while n != 0 {
                chain.push(n);
                n = self.nodes[n].parent;
            }
            chain.reverse();
            let shared = chain.iter().zip(&previous).take_while(|(a, b)| a == b).count();
            for &n in &chain[shared..] {
                at.insert((self.nodes[n].depth, time), n);
            }
            time += self.nodes[*leaf].leaf[1];
            previous = chain;
        }
        at
    }
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

/// The `top` functions whose inclusive share changed most (significant changes only),
/// with their callers and callees.
pub fn changed_functions(before: &CallGraph, after: &CallGraph, top: usize) -> Vec<FunctionChange> {
    let n = [before.samples, after.samples];
    let (i1, i2) = (GraphIndex::of(before), GraphIndex::of(after));
    let mut names: Vec<&str> = before.names.iter().chain(&after.names).map(String::as_str).collect();
    names.sort_unstable();
    names.dedup();
    let count = |g: &CallGraph, i: &GraphIndex, f: &str, v: &dyn Fn(&CallGraph, usize) -> u64| {
        i.id(f).map_or(0, |i| v(g, i as usize))
    };
    let mut out: Vec<FunctionChange> = names
        .into_iter()
        .filter_map(|f| {
            let total = |g: &CallGraph, i: usize| g.total_samples[i];
            let selfs = |g: &CallGraph, i: usize| g.self_samples[i];
            let inclusive = ShareChange::of(count(before, &i1, f, &total), n[0], count(after, &i2, f, &total), n[1]);
            inclusive.significant().then(|| FunctionChange {
                function: f.to_string(),
                inclusive,
                self_time: ShareChange::of(count(before, &i1, f, &selfs), n[0], count(after, &i2, f, &selfs), n[1]),
                callers: arc_changes([(before, &i1), (after, &i2)], f, true),
                callees: arc_changes([(before, &i1), (after, &i2)], f, false),
            })
        })
        .collect();
    out.sort_by(|a, b| {
        b.inclusive
            .delta_pct
            .abs()
            .total_cmp(&a.inclusive.delta_pct.abs())
            .then_with(|| a.function.cmp(&b.function))
    });
    out.truncate(top);
    out
}

/// A call graph's ids by name and arcs by callee, built once: looking either up in the
/// graph itself scans all its names or arcs, once per changed function.
struct GraphIndex<'g> {
    ids: HashMap<&'g str, u32, foldhash::fast::RandomState>,
    /// (callee, caller, samples), sorted.
    by_callee: Vec<(u32, u32, u64)>,
}

impl<'g> GraphIndex<'g> {
    fn of(g: &'g CallGraph) -> Self {
        let mut ids = HashMap::with_capacity_and_hasher(g.names.len(), Default::default());
        // The first of equal names, as CallGraph::id finds it.
        for (i, n) in g.names.iter().enumerate().rev() {
            ids.insert(n.as_str(), i as u32);
        }
        let mut by_callee: Vec<(u32, u32, u64)> = g.arcs.iter().map(|(&(p, c), a)| (c, p, a.samples)).collect();
        by_callee.sort_unstable();
        GraphIndex { ids, by_callee }
    }

    fn id(&self, name: &str) -> Option<u32> {
        self.ids.get(name).copied()
    }

    /// The callers of `f` and their arcs' samples, as [`CallGraph::callers`] lists them.
    fn callers(&self, f: u32) -> impl Iterator<Item = (u32, u64)> + '_ {
        let from = self.by_callee.partition_point(|&(c, _, _)| c < f);
        self.by_callee[from..]
            .iter()
            .take_while(move |&&(c, _, _)| c == f)
            .map(|&(_, p, s)| (p, s))
    }
}

fn arc_changes(graphs: [(&CallGraph, &GraphIndex<'_>); 2], f: &str, callers: bool) -> Vec<ArcChange> {
    let mut arcs: HashMap<String, [u64; 2]> = HashMap::new();
    for (run, (g, index)) in graphs.into_iter().enumerate() {
        let Some(id) = index.id(f) else { continue };
        let list: Vec<(u32, u64)> = if callers {
            index.callers(id).collect()
        } else {
            g.callees(id).map(|(o, a)| (o, a.samples)).collect()
        };
        for (other, samples) in list {
            arcs.entry(g.names[other as usize].clone()).or_default()[run] += samples;
        }
    }
    let (before, after) = (graphs[0].0, graphs[1].0);
    let mut out: Vec<ArcChange> = arcs
        .into_iter()
        .map(|(function, [a1, a2])| ArcChange {
            function,
            change: ShareChange::of(a1, before.samples, a2, after.samples),
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

/// Compares the stacks of one test, idle stacks (leaf in `idle`) left out.
pub fn compare_stacks(test: &str, before: &StackProfile, after: &StackProfile, idle: &IdleSet) -> TestStacks {
    let (p1, p2) = (before.without_idle(idle), after.without_idle(idle));
    TestStacks {
        test: test.to_string(),
        diff: StackDiff::new(&p1, &p2),
        functions: changed_functions(&CallGraph::of(&p1), &CallGraph::of(&p2), TOP_FUNCTIONS),
    }
}

/// Compares the stacks of two runs when both were written by upsrun; `None` otherwise.
/// Idle stacks (leaf in the test's idle set, or in `idle_override`) are left out, so the
/// shares are of CPU time as in the rest of the report.
pub fn compare_run_stacks(run1: &StoredRun, run2: &StoredRun, idle_override: Option<&IdleSet>) -> Option<RunStacks> {
    if run1.marker.kind != RunKind::Upsrun || run2.marker.kind != RunKind::Upsrun {
        return None;
    }
    let mut tests = Vec::new();
    for t1 in &run1.tests {
        let Some(t2) = run2.test(&t1.name) else {
            continue;
        };
        let (Some(s1), Some(s2)) = (&t1.stacks, &t2.stacks) else {
            continue;
        };
        let idle = match idle_override {
            Some(i) => i.clone(),
            None => IdleSet::new(t1.repetitions[0].profile.idle_set.clone()),
        };
        tests.push(compare_stacks(&t1.name, s1, s2, &idle));
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

    #[test]
    fn shares_and_poisson_errors() {
        // 100 of 1000 vs 300 of 2000: 10% vs 15%; var = 100/1e6 + 300/4e6.
        let c = ShareChange::of(100, 1000, 300, 2000);
        assert!((c.delta_pct - 5.0).abs() < 1e-12);
        assert!((c.error_pct - 100.0 * (1.75e-4f64).sqrt()).abs() < 1e-12);
        assert!(c.significant(), "5 points against an error of 1.32");
        assert!(!ShareChange::of(10, 100, 11, 100).significant());
        assert!(!ShareChange::of(7, 70, 7, 70).significant());
    }

    #[test]
    fn a_parent_whose_child_grew_grew() {
        // b's own line is unchanged, but its child c doubled: b's inclusive share grew.
        let d = StackDiff::new(
            &folded("a;b 500\na;b;c 500\nz 1000\n"),
            &folded("a;b 500\na;b;c 1000\nz 500\n"),
        );
        let b = d.find("a;b").unwrap();
        assert_eq!(d.nodes[b].inclusive, [1000, 1500]);
        assert!(d.change(b).delta_pct > 0.0 && d.change(b).significant());
        assert!(d.change(d.find("z").unwrap()).delta_pct < 0.0);
        // Against itself nothing changes.
        let same = StackDiff::new(&folded("a;b 5\nz 3\n"), &folded("a;b 5\nz 3\n"));
        assert!((1..same.nodes.len()).all(|n| !same.change(n).significant()));
    }

    #[test]
    fn layout_matches_the_merge_order() {
        let d = StackDiff::new(&folded("a;b 2\na 1\nc 4\n"), &folded("a;b 3\na 1\nc;d 4\n"));
        let lines = d.differential_lines();
        let text: Vec<&str> = lines.iter().map(|(l, _)| l.as_str()).collect();
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
        let top = changed_functions(&g1, &g2, 3);
        let f = top.iter().find(|c| c.function == "f").unwrap();
        assert!((f.inclusive.delta_pct - 30.0).abs() < 1e-9);
        assert_eq!(f.callers[0].function, "q", "q carries the change");
        assert!((f.callers[0].change.delta_pct - 30.0).abs() < 1e-9);
        assert_eq!(f.callers[1].change.delta_pct, 0.0);
        assert!(top.iter().all(|c| c.function != "main"), "main is 100% in both");
    }
}
