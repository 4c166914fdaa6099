//! `prof.out`: a gprof-style flat profile and call graph of one test's stacks.
//!
//! The layout follows gprof's; the numbers come from whole sampled stacks, so an arc's
//! time is what was measured under it, not gprof's estimate from call counts. "calls"
//! are samples: a function's calls are the samples with it on the stack, an arc's the
//! samples holding that arc.

use crate::model::callgraph::{Arc, CallGraph};
use crate::model::shown::{escaped, Shown};
use std::io::{self, Write};

/// What the header of `prof.out` says about the samples.
#[derive(Debug, Clone)]
pub struct GprofHeader<'a> {
    /// The test.
    pub test: &'a str,
    /// The sampled event.
    pub event: &'a str,
    /// Seconds per sample.
    pub period_sec: f64,
    /// Samples whose stack reached the depth limit.
    pub truncated: u64,
    /// The depth limit.
    pub max_stack: usize,
    /// Samples the kernel lost.
    pub lost: u64,
}

/// Writes the flat profile and the call graph of `g`.
pub fn render(g: &CallGraph, h: &GprofHeader<'_>, mut w: impl Write) -> io::Result<()> {
    let order = g.by_total();
    let mut index = vec![0usize; g.names.len()];
    for (i, &f) in order.iter().enumerate() {
        index[f as usize] = i + 1;
    }
    let r = Report { g, h, index };
    r.header(&mut w)?;
    r.flat(&mut w)?;
    r.call_graph(&order, &mut w)?;
    r.name_index(&order, &mut w)
}

/// The report's numbers: a call graph, its header, and each function's index in the call
/// graph (by total samples).
struct Report<'a> {
    g: &'a CallGraph,
    h: &'a GprofHeader<'a>,
    index: Vec<usize>,
}

impl Report<'_> {
    /// Seconds of `weight`: its exact share of the samples, each `period_sec` (the mean).
    fn sec(&self, weight: u64) -> f64 {
        self.g.equivalents(weight) * self.h.period_sec
    }

    /// `weight` as a percent of all samples' weight.
    fn pct(&self, weight: u64) -> f64 {
        self.g.pct(weight)
    }

    fn label(&self, f: u32) -> String {
        format!("{} [{}]", Shown(&self.g.names[f as usize]), self.index[f as usize])
    }

    fn header(&self, w: &mut dyn Write) -> io::Result<()> {
        let (g, h) = (self.g, self.h);
        writeln!(w, "Stack profile of test {} (upsrun)", Shown(h.test))?;
        writeln!(
            w,
            "Each sample counts as {:.6} seconds ({}); {} samples, {} lost, {} truncated at the depth limit of {} frames.",
            h.period_sec, h.event, g.samples, h.lost, h.truncated, h.max_stack
        )?;
        writeln!(
            w,
            "Kernel functions are named from the kernel's symbols; user space is one node ('user' or 'user:COMM')."
        )?;
        if !g.commands.is_empty() {
            writeln!(
                w,
                "Stacks are rooted at their command: it follows <spontaneous> on the lines of the functions it starts in."
            )?;
        }
        writeln!(w)
    }

    fn flat(&self, w: &mut dyn Write) -> io::Result<()> {
        let g = self.g;
        writeln!(w, "Flat profile:")?;
        writeln!(w)?;
        writeln!(w, "  %   cumulative   self              total")?;
        writeln!(w, " time   seconds   seconds    calls  seconds  name")?;
        let mut flat: Vec<u32> = (0..g.names.len() as u32)
            .filter(|&f| g.total_samples[f as usize] > 0)
            .collect();
        flat.sort_by(|&a, &b| {
            g.self_weight[b as usize]
                .cmp(&g.self_weight[a as usize])
                .then_with(|| g.total_weight[b as usize].cmp(&g.total_weight[a as usize]))
                .then_with(|| g.names[a as usize].cmp(&g.names[b as usize]))
        });
        let mut cumulative = 0;
        for &f in &flat {
            let (s, t) = (g.self_weight[f as usize], g.total_weight[f as usize]);
            cumulative += s;
            writeln!(
                w,
                "{:6.2} {:9.3} {:9.3} {:8} {:8.3}  {}",
                self.pct(s),
                self.sec(cumulative),
                self.sec(s),
                g.total_samples[f as usize],
                self.sec(t),
                Shown(&g.names[f as usize])
            )?;
        }
        writeln!(w)?;
        writeln!(
            w,
            " %         the share of all samples in which the function is the leaf."
        )?;
        writeln!(w, " cumulative a running sum of self seconds.")?;
        writeln!(w, " self      seconds in the function itself (it is the leaf).")?;
        writeln!(
            w,
            " calls     samples with the function on the stack (once per sample, however deep it recurses)."
        )?;
        writeln!(
            w,
            " total     those samples as seconds: the function and what it calls."
        )?;
        writeln!(w)
    }

    /// One caller or callee line: the arc's self and children seconds, its samples out of
    /// `of`, and the function at the other end.
    fn arc_line(&self, w: &mut dyn Write, arc: &Arc, of: u64, other: u32) -> io::Result<()> {
        writeln!(
            w,
            "{:13}{:10.3}{:10.3}{:>12}       {}",
            "",
            self.sec(arc.leaf_weight),
            self.sec(arc.children_weight()),
            format!("{}/{of}", arc.samples),
            self.label(other)
        )
    }

    fn call_graph(&self, order: &[u32], w: &mut dyn Write) -> io::Result<()> {
        writeln!(w, "Call graph:")?;
        writeln!(w)?;
        writeln!(
            w,
            "Each entry: its callers, the function's own line [index], its callees. On a caller line, self and"
        )?;
        writeln!(
            w,
            "children are the function's seconds reached through that caller; on a callee line, the callee's"
        )?;
        writeln!(
            w,
            "seconds reached from the function. called: samples holding the arc / samples with the function."
        )?;
        writeln!(w)?;
        writeln!(
            w,
            "{:<6}{:>7}{:>10}{:>10}{:>12}   name",
            "index", "% time", "self", "children", "called"
        )?;
        for &f in order {
            self.entry(f, w)?;
        }
        writeln!(w)
    }

    /// A function's entry: its callers (fewest samples first), its own line, its callees
    /// (most samples first).
    fn entry(&self, f: u32, w: &mut dyn Write) -> io::Result<()> {
        let (g, index) = (self.g, &self.index);
        let fi = f as usize;
        let total = g.total_samples[fi];
        // Rooted stacks: one line per command the function is outermost in, the command
        // after the word (a command is not a function, so it has no entry of its own).
        let spontaneous: Vec<(u64, std::borrow::Cow<str>)> = if g.commands.is_empty() {
            vec![(g.root_samples[fi], "".into())]
        } else {
            g.commands_of(f)
                .map(|(c, n)| (n, escaped(&g.names[c as usize])))
                .collect()
        };
        for (n, command) in spontaneous.into_iter().filter(|x| x.0 > 0) {
            let line = format!(
                "{:13}{:10}{:10}{:>12}       <spontaneous> {command}",
                "",
                "",
                "",
                format!("{n}/{total}")
            );
            writeln!(w, "{}", line.trim_end())?;
        }
        let mut callers: Vec<_> = g.callers(f).collect();
        callers.sort_by(|a, b| {
            a.1.samples
                .cmp(&b.1.samples)
                .then_with(|| index[a.0 as usize].cmp(&index[b.0 as usize]))
        });
        for (p, a) in callers {
            self.arc_line(w, a, total, p)?;
        }
        writeln!(
            w,
            "{:<6}{:7.1}{:10.3}{:10.3}{:>12}   {}",
            format!("[{}]", index[fi]),
            self.pct(g.total_weight[fi]),
            self.sec(g.self_weight[fi]),
            self.sec(g.total_weight[fi] - g.self_weight[fi]),
            total,
            self.label(f)
        )?;
        let mut callees: Vec<_> = g.callees(f).collect();
        callees.sort_by(|a, b| {
            b.1.samples
                .cmp(&a.1.samples)
                .then_with(|| index[a.0 as usize].cmp(&index[b.0 as usize]))
        });
        for (c, a) in callees {
            self.arc_line(w, a, g.total_samples[c as usize], c)?;
        }
        writeln!(w, "-----------------------------------------------")
    }

    fn name_index(&self, order: &[u32], w: &mut dyn Write) -> io::Result<()> {
        let g = self.g;
        writeln!(w, "Index by function name")?;
        writeln!(w)?;
        let mut by_name: Vec<u32> = order.to_vec();
        by_name.sort_by(|&a, &b| g.names[a as usize].cmp(&g.names[b as usize]));
        for f in by_name {
            writeln!(
                w,
                "{:>7} {}",
                format!("[{}]", self.index[f as usize]),
                Shown(&g.names[f as usize])
            )?;
        }
        Ok(())
    }
}
