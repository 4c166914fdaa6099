//! Where time moved between functions, from the call stacks of two runs: a function
//! that run 2 no longer has (inlined into its callers, most often), and "cost shifts",
//! time moved between a function and its callers by a refactoring (docs/formulas.md,
//! "Where did inlined time go" and "Cost shifts").
//!
//! Shares are of each run's CPU samples (idle stacks left out), the mean over the
//! repetitions, as the rest of the stack comparison.

use crate::model::CallGraph;
use serde::Serialize;
use std::collections::{BTreeSet, HashMap};

/// A function whose inclusive share is at least this (% of CPU samples) in run 1 is
/// looked for in run 2; a caller arc or a self change below it is not named.
pub const MIN_PCT: f64 = 1.0;

/// How many callers a note names, and how many cost shifts a test lists.
pub const TOP: usize = 5;

/// A caller of a vanished function, and what became of its own time in run 2.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InlinedCaller {
    /// The caller.
    pub caller: String,
    /// The function's inclusive share under this caller in run 1 (%).
    pub under_pct: f64,
    /// Of it, the function's self share under this caller in run 1 (%).
    pub self_under_pct: f64,
    /// How the caller's self share changed from run 1 to run 2 (points).
    pub self_growth_pct: f64,
}

/// A function of run 1 that run 2 lacks, or has at less than half its inclusive share.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Inlined {
    /// The function.
    pub function: String,
    /// Its inclusive share in run 1 (%).
    pub run1_pct: f64,
    /// Its inclusive share in run 2 (%; 0 when absent).
    pub run2_pct: f64,
    /// Absent from every stack of run 2.
    pub absent: bool,
    /// Its callers in run 1, largest share under them first.
    pub callers: Vec<InlinedCaller>,
}

impl Inlined {
    /// The caller that most likely took its time: the one whose self share grew most,
    /// when it grew by at least [`MIN_PCT`].
    pub fn likely_caller(&self) -> Option<&InlinedCaller> {
        self.callers
            .iter()
            .filter(|c| c.self_growth_pct >= MIN_PCT)
            .max_by(|a, b| a.self_growth_pct.total_cmp(&b.self_growth_pct))
    }
}

/// A function whose self share changed, against the self share of it and its callers.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CostShift {
    /// The function.
    pub function: String,
    /// Its self share, run 1 and run 2 (%).
    pub self_pct: [f64; 2],
    /// Its direct callers in either run.
    pub callers: Vec<String>,
    /// The summed self share of it and its callers, run 1 and run 2 (%).
    pub group_pct: [f64; 2],
}

impl CostShift {
    /// Whether the group kept its time: its change is less than half the function's.
    pub fn within_group(&self) -> bool {
        let own = (self.self_pct[1] - self.self_pct[0]).abs();
        (self.group_pct[1] - self.group_pct[0]).abs() < 0.5 * own
    }
}

/// Call graphs with their functions' ids by name, each graph's found by a hash rather
/// than a scan of its names ([`CallGraph::id`]): every name of a busy machine's recording
/// (10^4 and more) is looked up in each graph.
struct Graphs<'g> {
    graphs: &'g [CallGraph],
    ids: Vec<HashMap<&'g str, u32, foldhash::fast::RandomState>>,
}

impl<'g> Graphs<'g> {
    fn new(graphs: &'g [CallGraph]) -> Self {
        let ids = graphs
            .iter()
            .map(|g| {
                let mut ids = HashMap::with_capacity_and_hasher(g.names.len(), Default::default());
                for (i, n) in g.names.iter().enumerate() {
                    // The first of a name, as `CallGraph::id` finds it.
                    ids.entry(n.as_str()).or_insert(i as u32);
                }
                ids
            })
            .collect();
        Graphs { graphs, ids }
    }

    /// Each graph with the id of `name` in it.
    fn with_id<'a>(&'a self, name: &'a str) -> impl Iterator<Item = (&'g CallGraph, Option<u32>)> + 'a {
        self.graphs
            .iter()
            .zip(&self.ids)
            .map(move |(g, ids)| (g, ids.get(name).copied()))
    }
}

/// The mean over `graphs` of `weight(graph, id of name)` as % of the graph's weight.
fn mean_pct(graphs: &Graphs<'_>, name: &str, weight: impl Fn(&CallGraph, u32) -> u64) -> f64 {
    let pcts = graphs.with_id(name).map(|(g, id)| match id {
        Some(i) => g.pct(weight(g, i)),
        None => 0.0,
    });
    pcts.sum::<f64>() / graphs.graphs.len().max(1) as f64
}

fn self_pct(graphs: &Graphs<'_>, name: &str) -> f64 {
    mean_pct(graphs, name, |g, i| g.self_weight[i as usize])
}

fn total_pct(graphs: &Graphs<'_>, name: &str) -> f64 {
    mean_pct(graphs, name, |g, i| g.total_weight[i as usize])
}

/// The names of `graphs`' functions, each once, in order.
fn names(graphs: &[CallGraph]) -> BTreeSet<&str> {
    graphs.iter().flat_map(|g| g.names.iter().map(String::as_str)).collect()
}

/// The direct callers of `name` in `graphs` with their mean arc shares (inclusive and
/// self, %), by caller name.
fn callers_of<'g>(graphs: &Graphs<'g>, name: &str) -> Vec<(&'g str, f64, f64)> {
    let mut out: Vec<(&str, f64, f64)> = Vec::new();
    let reps = graphs.graphs.len().max(1) as f64;
    for (g, id) in graphs.with_id(name) {
        let Some(f) = id else {
            continue;
        };
        if g.weight == 0 {
            continue;
        }
        for (c, arc) in g.callers(f).filter(|(c, _)| *c != f) {
            let caller = g.names[c as usize].as_str();
            let (x, y) = (g.pct(arc.weight), g.pct(arc.leaf_weight));
            match out.iter_mut().find(|o| o.0 == caller) {
                Some(o) => {
                    o.1 += x / reps;
                    o.2 += y / reps;
                }
                None => out.push((caller, x / reps, y / reps)),
            }
        }
    }
    out.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(b.0)));
    out
}

/// The functions of run 1 (at least [`MIN_PCT`] inclusive) that run 2 lacks or has at
/// less than half their share, with their callers and how each caller's self time
/// changed: time a function had under a caller that reappears as the caller's own is
/// what inlining it there looks like.
pub fn inlined(before: &[CallGraph], after: &[CallGraph]) -> Vec<Inlined> {
    let present2 = names(after);
    let before_graphs = before;
    let (before, after) = (&Graphs::new(before), &Graphs::new(after));
    let mut out: Vec<Inlined> = names(before_graphs)
        .into_iter()
        .filter_map(|f| {
            let run1_pct = total_pct(before, f);
            if run1_pct < MIN_PCT {
                return None;
            }
            let run2_pct = total_pct(after, f);
            if run2_pct >= 0.5 * run1_pct {
                return None;
            }
            let mut callers: Vec<InlinedCaller> = callers_of(before, f)
                .into_iter()
                .filter(|c| c.1 >= MIN_PCT)
                .map(|(caller, under_pct, self_under_pct)| InlinedCaller {
                    caller: caller.to_string(),
                    under_pct,
                    self_under_pct,
                    self_growth_pct: self_pct(after, caller) - self_pct(before, caller),
                })
                .collect();
            callers.truncate(TOP);
            Some(Inlined {
                function: f.to_string(),
                run1_pct,
                run2_pct,
                absent: !present2.contains(f),
                callers,
            })
        })
        .collect();
    out.sort_by(|a, b| {
        b.run1_pct
            .total_cmp(&a.run1_pct)
            .then_with(|| a.function.cmp(&b.function))
    });
    out
}

/// The cost-shift view: the [`TOP`] functions whose self share changed most (by at least
/// [`MIN_PCT`] points), each against the summed self share of it and its direct callers,
/// so that time moved between a function and its callers shows as no change of the group.
pub fn cost_shifts(before: &[CallGraph], after: &[CallGraph]) -> Vec<CostShift> {
    let all: BTreeSet<&str> = names(before).into_iter().chain(names(after)).collect();
    let (before, after) = (&Graphs::new(before), &Graphs::new(after));
    let mut changed: Vec<(&str, [f64; 2])> = all
        .into_iter()
        .map(|f| (f, [self_pct(before, f), self_pct(after, f)]))
        .filter(|(_, s)| (s[1] - s[0]).abs() >= MIN_PCT)
        .collect();
    changed.sort_by(|a, b| {
        (b.1[1] - b.1[0])
            .abs()
            .total_cmp(&(a.1[1] - a.1[0]).abs())
            .then_with(|| a.0.cmp(b.0))
    });
    changed.truncate(TOP);
    changed
        .into_iter()
        .map(|(f, self_pct_both)| {
            let callers: BTreeSet<&str> = callers_of(before, f)
                .into_iter()
                .chain(callers_of(after, f))
                .map(|c| c.0)
                .collect();
            let group =
                |graphs: &Graphs<'_>| self_pct(graphs, f) + callers.iter().map(|c| self_pct(graphs, c)).sum::<f64>();
            CostShift {
                function: f.to_string(),
                self_pct: self_pct_both,
                callers: callers.iter().map(|c| c.to_string()).collect(),
                group_pct: [group(before), group(after)],
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::StackProfile;

    fn graph(stacks: &[(&str, u64)]) -> CallGraph {
        let text: String = stacks.iter().map(|(s, n)| format!("{s} {n}\n")).collect();
        CallGraph::of(&StackProfile::from_folded(&text, "t").unwrap())
    }

    // Run 1: main calls work (60 self) and calc (30 under work, all self), run 2 has
    // calc inlined into work: work's self grows by 30 points, as calc had under it.
    #[test]
    fn inlined_function_names_the_caller_that_took_its_time() {
        let before = [graph(&[("main;work", 60), ("main;work;calc", 30), ("main", 10)])];
        let after = [graph(&[("main;work", 90), ("main", 10)])];
        let found = inlined(&before, &after);
        assert_eq!(found.len(), 1, "{found:?}");
        let f = &found[0];
        assert_eq!((f.function.as_str(), f.absent), ("calc", true));
        assert!((f.run1_pct - 30.0).abs() < 1e-9);
        let c = f.likely_caller().unwrap();
        assert_eq!(c.caller, "work");
        assert!((c.under_pct - 30.0).abs() < 1e-9 && (c.self_growth_pct - 30.0).abs() < 1e-9);
        // The same move as a cost shift: calc's group (calc and its caller work) kept
        // its time; work's (work and main) took calc's.
        let shifts = cost_shifts(&before, &after);
        let calc = shifts.iter().find(|s| s.function == "calc").unwrap();
        assert_eq!(calc.callers, ["work"]);
        assert!(calc.within_group() && (calc.group_pct[1] - calc.group_pct[0]).abs() < 1e-9);
        let work = shifts.iter().find(|s| s.function == "work").unwrap();
        assert_eq!(work.callers, ["main"]);
        assert!(!work.within_group(), "{work:?}");
    }

    #[test]
    fn a_function_that_kept_its_time_is_no_note() {
        let g = [graph(&[("main;work", 60), ("main;work;calc", 30)])];
        assert!(inlined(&g, &g).is_empty());
        assert!(cost_shifts(&g, &g).is_empty());
    }
}
