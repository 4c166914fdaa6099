//! gprof's call graph from exact stacks: self, total and per-arc samples, each with the
//! samples' exact summed weight (periods). Shares are of weight, as perf report weighs
//! samples; counts are what the sampling error of a share is counted in.

use super::stacks::StackProfile;
use std::collections::{BTreeMap, HashMap};

/// One caller → callee arc of the call graph.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Arc {
    /// Samples whose stack holds this arc (once per sample, however often it recurs).
    pub samples: u64,
    /// Of those, the samples whose stack ends in it (the callee's self time via this caller).
    pub leaf: u64,
    /// The summed weight of `samples`.
    pub weight: u64,
    /// The summed weight of `leaf`.
    pub leaf_weight: u64,
}

impl Arc {
    /// The samples spent below the callee when reached through this arc.
    pub fn children(&self) -> u64 {
        self.samples - self.leaf
    }

    /// The weight spent below the callee when reached through this arc.
    pub fn children_weight(&self) -> u64 {
        self.weight - self.leaf_weight
    }
}

/// gprof's numbers, from exact stacks instead of call counts and arc guesses.
#[derive(Debug, Clone, Default)]
pub struct CallGraph {
    /// Function names, by id (the profile's frame ids).
    pub names: Vec<String>,
    /// Samples in which the function is the leaf.
    pub self_samples: Vec<u64>,
    /// Samples in which the function is anywhere on the stack (once per sample).
    pub total_samples: Vec<u64>,
    /// Samples in which the function is the outermost frame (gprof's `<spontaneous>`).
    pub root_samples: Vec<u64>,
    /// For stacks rooted at their command ([`CallGraph::of_command_rooted`]): samples by
    /// (outermost function, command); they sum to `root_samples` per function.
    pub commands: BTreeMap<(u32, u32), u64>,
    /// The summed weight of `self_samples`, by function.
    pub self_weight: Vec<u64>,
    /// The summed weight of `total_samples`, by function.
    pub total_weight: Vec<u64>,
    /// Arcs (caller, callee).
    pub arcs: BTreeMap<(u32, u32), Arc>,
    /// All samples.
    pub samples: u64,
    /// Their summed weight: the denominator of every share.
    pub weight: u64,
}

impl CallGraph {
    /// The call graph of `p`.
    pub fn of(p: &StackProfile) -> Self {
        Self::build(p, false)
    }

    /// The call graph of `p`, whose stacks are rooted at their command (upsrun's since
    /// format 3): a command is not a function, so it is left out of the graph and
    /// kept in [`commands`](Self::commands), as the place its outermost functions are
    /// spontaneous in. Self times are those of [`CallGraph::of`].
    pub fn of_command_rooted(p: &StackProfile) -> Self {
        Self::build(p, true)
    }

    fn build(p: &StackProfile, rooted: bool) -> Self {
        let n = p.names().len();
        let mut g = CallGraph {
            names: p.names().to_vec(),
            self_samples: vec![0; n],
            total_samples: vec![0; n],
            root_samples: vec![0; n],
            commands: BTreeMap::new(),
            self_weight: vec![0; n],
            total_weight: vec![0; n],
            arcs: BTreeMap::new(),
            samples: p.samples,
            weight: p.weight(),
        };
        let mut seen: Vec<u32> = Vec::new();
        let mut seen_arcs: Vec<(u32, u32)> = Vec::new();
        // Summed in a hash map, then sorted into the tree once: one tree insertion per
        // arc and stack is most of the time of a profile of many stacks.
        let mut arcs: HashMap<(u32, u32), Arc, foldhash::fast::RandomState> = HashMap::default();
        for (s, t) in p.tallies() {
            let (c, w) = (t.count, t.weight);
            // A stack that is its command alone has no function: it stays one (as written).
            let s = match s {
                [command, rest @ ..] if rooted && !rest.is_empty() => {
                    *g.commands.entry((rest[0], *command)).or_default() += c;
                    rest
                }
                _ => s,
            };
            let leaf = *s.last().expect("not empty") as usize;
            g.self_samples[leaf] += c;
            g.self_weight[leaf] += w;
            g.root_samples[s[0] as usize] += c;
            seen.clear();
            seen.extend_from_slice(s);
            seen.sort_unstable();
            seen.dedup();
            for &f in &seen {
                g.total_samples[f as usize] += c;
                g.total_weight[f as usize] += w;
            }
            seen_arcs.clear();
            seen_arcs.extend(s.windows(2).map(|w| (w[0], w[1])));
            seen_arcs.sort_unstable();
            seen_arcs.dedup();
            for a in &seen_arcs {
                let arc = arcs.entry(*a).or_default();
                arc.samples += c;
                arc.weight += w;
            }
            if let [.., caller, callee] = s {
                let arc = arcs.entry((*caller, *callee)).or_default();
                arc.leaf += c;
                arc.leaf_weight += w;
            }
        }
        g.arcs = arcs.into_iter().collect();
        g
    }

    /// `weight` as a percent of all the graph's weight.
    pub fn pct(&self, weight: u64) -> f64 {
        if self.weight == 0 {
            0.0
        } else {
            100.0 * weight as f64 / self.weight as f64
        }
    }

    /// `weight` in samples of the graph's mean period (exactly samples when the period is
    /// fixed).
    pub fn equivalents(&self, weight: u64) -> f64 {
        if self.weight == 0 {
            0.0
        } else {
            weight as f64 * self.samples as f64 / self.weight as f64
        }
    }

    /// The commands in which `f` is the outermost function, with their samples.
    pub fn commands_of(&self, f: u32) -> impl Iterator<Item = (u32, u64)> + '_ {
        self.commands.range((f, 0)..=(f, u32::MAX)).map(|((_, c), n)| (*c, *n))
    }

    /// Ids of the functions seen, by total samples (largest first), then name.
    pub fn by_total(&self) -> Vec<u32> {
        let mut ids: Vec<u32> = (0..self.names.len() as u32)
            .filter(|&i| self.total_samples[i as usize] > 0)
            .collect();
        ids.sort_by(|&a, &b| {
            self.total_samples[b as usize]
                .cmp(&self.total_samples[a as usize])
                .then_with(|| self.names[a as usize].cmp(&self.names[b as usize]))
        });
        ids
    }

    /// The id of the function called `name`.
    pub fn id(&self, name: &str) -> Option<u32> {
        self.names.iter().position(|n| n == name).map(|i| i as u32)
    }

    /// The callers of `f` with their arcs.
    pub fn callers(&self, f: u32) -> impl Iterator<Item = (u32, &Arc)> {
        self.arcs
            .iter()
            .filter(move |((_, c), _)| *c == f)
            .map(|((p, _), a)| (*p, a))
    }

    /// The callees of `f` with their arcs.
    pub fn callees(&self, f: u32) -> impl Iterator<Item = (u32, &Arc)> {
        self.arcs.range((f, 0)..=(f, u32::MAX)).map(|((_, c), a)| (*c, a))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn call_graph_counts_recursion_once_per_sample() {
        let p = StackProfile::from_folded("main;f;f;g 2\nmain;f 1\nmain;h;g 3\n", "x").unwrap();
        let g = CallGraph::of(&p);
        let id = |n| g.id(n).unwrap();
        assert_eq!(g.total_samples[id("f") as usize], 3);
        assert_eq!(g.self_samples[id("f") as usize], 1);
        assert_eq!(g.total_samples[id("g") as usize], 5);
        assert_eq!(g.root_samples[id("main") as usize], 6);
        let arc = |samples, leaf| Arc {
            samples,
            leaf,
            weight: samples,
            leaf_weight: leaf,
        };
        assert_eq!(g.arcs[&(id("f"), id("f"))], arc(2, 0));
        assert_eq!(g.arcs[&(id("f"), id("g"))], arc(2, 2));
        assert_eq!(g.arcs[&(id("main"), id("f"))], arc(3, 1));
        let callers_of_g: Vec<_> = g
            .callers(id("g"))
            .map(|(c, a)| (g.names[c as usize].clone(), a.samples))
            .collect();
        assert_eq!(callers_of_g, [("f".to_string(), 2), ("h".to_string(), 3)]);
        assert_eq!(g.by_total()[0], id("main"));
    }

    #[test]
    fn shares_are_of_exact_weights_not_of_rounded_stacks() {
        // Two samples of periods 5 and 3 into one function, one under each caller: the
        // mean period is 4, so each stack is one sample, and its share is 5/8 or 3/8.
        let mut p = StackProfile::default();
        let [a, b, f] = ["a", "b", "f"].map(|n| p.intern(n));
        p.add_weighted(&[a, f], 1, 5);
        p.add_weighted(&[b, f], 1, 3);
        let g = CallGraph::of(&p);
        let arc = |caller| g.arcs[&(caller, f)];
        assert_eq!((arc(a).samples, arc(b).samples), (1, 1));
        assert!((g.pct(arc(a).weight) - 62.5).abs() < 1e-9);
        assert!((g.pct(arc(b).weight) - 37.5).abs() < 1e-9);
        assert_eq!(g.total_weight[f as usize], 8);
        assert!((g.equivalents(arc(a).weight) - 1.25).abs() < 1e-9);
    }

    #[test]
    fn command_roots_are_where_functions_start_not_functions() {
        let text = "app;user;sys 2\napp;user 3\nsh;user 1\nswapper;idle 4\n";
        let p = StackProfile::from_folded(text, "x").unwrap();
        let (plain, g) = (CallGraph::of(&p), CallGraph::of_command_rooted(&p));
        let id = |n| g.id(n).unwrap();
        assert_eq!(g.self_samples, plain.self_samples, "self times do not move");
        for c in ["app", "sh", "swapper"] {
            assert_eq!(g.total_samples[id(c) as usize], 0, "{c} is not a function");
        }
        assert_eq!(g.root_samples[id("user") as usize], 6);
        assert_eq!(
            g.commands_of(id("user")).collect::<Vec<_>>(),
            [(id("app"), 5), (id("sh"), 1)]
        );
        assert_eq!(g.commands_of(id("idle")).collect::<Vec<_>>(), [(id("swapper"), 4)]);
        assert!(g.callers(id("user")).next().is_none());
        assert_eq!(g.by_total(), [id("user"), id("idle"), id("sys")]);
    }
}
