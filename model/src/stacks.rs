//! Call stacks from samples: symbolized frames and folded stacks (see `docs/upsrun.md`).
//!
//! A [`StackProfile`] counts samples per distinct stack (root first), so its memory
//! grows with the number of distinct stacks, not with the number of samples. It is built
//! from sample records ([`StackBuilder`]) or read back from folded stacks
//! ([`StackProfile::from_folded`]); both feed the same call graph and flame graphs.

use super::idle::IdleSet;
use super::mode::{context_mode, Mode, Record, ThreadNames, PERF_CONTEXT_MAX};
use super::profile::{user_function_of, UserBy, UNKNOWN_FUNCTION, UNKNOWN_MODE_FUNCTION, USER_FUNCTION};
use super::profile::{GUEST_FUNCTION, HYPERVISOR_FUNCTION};
use super::resolver::KernelResolver;
use std::collections::HashMap;
use std::io::{self, Write};
use upcmp_parsers::folded::{escape_frame, unescape_frame};
use upcmp_parsers::samples::Sample;

/// The root frame put under a stack that reached the kernel's depth limit: its outermost
/// frames are missing, so it must not pass for a call from the top.
pub const TRUNCATED_FRAME: &str = "[truncated]";

/// The root frame of the idle task's stacks (pid 0), as perf names that task.
pub const IDLE_COMMAND: &str = "swapper";

/// The kernel's default `kernel.perf_event_max_stack`.
pub const DEFAULT_MAX_STACK: usize = 127;

/// What a frame is, for colouring: decided by its name alone, so a folded file carries it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameKind {
    /// A kernel function (`name` or `name [module]`).
    Kernel,
    /// User space, one node: `user` or `user:COMM`.
    User,
    /// `[truncated]`, `hypervisor`, `guest`.
    Other,
}

impl FrameKind {
    /// The kind of the frame called `name`.
    pub fn of(name: &str) -> Self {
        if name == USER_FUNCTION || name.strip_prefix(USER_FUNCTION).is_some_and(|c| c.starts_with(':')) {
            FrameKind::User
        } else if name == TRUNCATED_FRAME || name == HYPERVISOR_FUNCTION || name == GUEST_FUNCTION {
            FrameKind::Other
        } else {
            FrameKind::Kernel
        }
    }
}

/// Samples and weight per distinct stack, frames interned.
///
/// Every sample weighs its period. A stack keeps both its samples (what the sampling
/// error of a share is counted in) and their exact summed weight (what its share is, as
/// perf report weighs it: [`tallies`](Self::tallies), and the call graph's shares). Its
/// value in a folded line is its weight in samples of the profile's mean period ("sample
/// equivalents") rounded to a whole number: exactly its samples when the period is fixed.
#[derive(Debug, Clone, Default)]
pub struct StackProfile {
    names: Vec<String>,
    // Looked up per frame and per sample: foldhash, not SipHash (no untrusted keys).
    ids: HashMap<String, u32, foldhash::fast::RandomState>,
    stacks: HashMap<Box<[u32]>, Tally, foldhash::fast::RandomState>,
    /// The stacks' summed weight.
    weight: u64,
    /// Samples per unit of weight, when fixed by the profile this one was taken from.
    scale: Option<f64>,
    /// Samples counted.
    pub samples: u64,
    /// Samples whose call chain reached the depth limit (rooted at [`TRUNCATED_FRAME`]).
    pub truncated: u64,
    /// Samples the kernel reported lost.
    pub lost: u64,
}

/// The samples of one stack and their summed weight (the sampled event's unit).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Tally {
    /// Samples.
    pub count: u64,
    /// Their summed periods.
    pub weight: u64,
}

impl Tally {
    /// `count` samples weighing `weight` in all.
    pub fn new(count: u64, weight: u64) -> Self {
        Tally { count, weight }
    }

    /// Adds `other` to this one.
    pub fn add(&mut self, other: Tally) {
        self.count = self.count.saturating_add(other.count);
        self.weight = self.weight.saturating_add(other.weight);
    }
}

/// Adds `t` to the stack `frames` of `stacks`.
fn add_to(stacks: &mut HashMap<Box<[u32]>, Tally, foldhash::fast::RandomState>, frames: &[u32], t: Tally) {
    match stacks.get_mut(frames) {
        Some(x) => x.add(t),
        None => {
            stacks.insert(frames.into(), t);
        }
    }
}

/// Whether a stack (root first) reached the depth limit: `[truncated]` is its root, or
/// the frame right under its command.
fn is_truncated(names: &[String], stack: &[u32]) -> bool {
    stack.iter().take(2).any(|&f| names[f as usize] == TRUNCATED_FRAME)
}

/// Which stacks a profile without idle ones keeps, by frame id: see
/// [`StackProfile::busy_stacks`].
struct BusyStacks {
    /// Samples per unit of weight of the whole profile.
    scale: f64,
    /// Whether each frame is an idle function.
    idle: Vec<bool>,
    /// Whether each frame is [`TRUNCATED_FRAME`].
    truncated: Vec<bool>,
}

impl BusyStacks {
    /// Whether the stack `s` is kept (its leaf is not idle), and whether it was truncated
    /// (as [`is_truncated`]).
    fn kept(&self, s: &[u32]) -> Option<bool> {
        let leaf = *s.last().expect("stacks are not empty");
        if self.idle[leaf as usize] {
            return None;
        }
        Some(s.iter().take(2).any(|&f| self.truncated[f as usize]))
    }
}

impl StackProfile {
    /// The id of frame `name`, interning it.
    pub fn intern(&mut self, name: &str) -> u32 {
        if let Some(&id) = self.ids.get(name) {
            return id;
        }
        let id = self.names.len() as u32;
        self.names.push(name.to_string());
        self.ids.insert(name.to_string(), id);
        id
    }

    /// The same frame names and ids, no stack.
    pub fn names_only(&self) -> StackProfile {
        StackProfile {
            names: self.names.clone(),
            ids: self.ids.clone(),
            ..Default::default()
        }
    }

    /// Every frame name, by id.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// The name of frame `id`.
    pub fn name(&self, id: u32) -> &str {
        &self.names[id as usize]
    }

    /// Adds `count` samples of the stack `frames` (root first), each weighing one.
    pub fn add_stack(&mut self, frames: &[u32], count: u64) {
        self.add_weighted(frames, count, count);
    }

    /// Adds `count` samples of the stack `frames` (root first) weighing `weight` in all.
    pub fn add_weighted(&mut self, frames: &[u32], count: u64, weight: u64) {
        if frames.is_empty() || count == 0 {
            return;
        }
        self.samples = self.samples.saturating_add(count);
        self.weight = self.weight.saturating_add(weight);
        add_to(&mut self.stacks, frames, Tally::new(count, weight));
    }

    /// Adds every stack of `other` (a piece of the same input read apart).
    pub fn merge(&mut self, other: &StackProfile) {
        // Each of its names interned once, not once per frame of every stack.
        let ids: Vec<u32> = other.names.iter().map(|n| self.intern(n)).collect();
        let mut frames = Vec::new();
        for (stack, t) in other.tallies() {
            frames.clear();
            frames.extend(stack.iter().map(|&f| ids[f as usize]));
            add_to(&mut self.stacks, &frames, t);
        }
        self.samples = self.samples.saturating_add(other.samples);
        self.weight = self.weight.saturating_add(other.weight);
        self.truncated += other.truncated;
        self.lost += other.lost;
    }

    /// Samples per unit of weight.
    fn per_weight(&self) -> f64 {
        self.scale.unwrap_or(if self.weight == 0 {
            1.0
        } else {
            self.samples as f64 / self.weight as f64
        })
    }

    /// The distinct stacks and their values (sample equivalents), in no particular order.
    pub fn stacks(&self) -> impl Iterator<Item = (&[u32], u64)> {
        // Where every sample weighs one, weights are values: no rounding at all.
        self.tallies_and_values().map(|(s, _, v)| (s, v))
    }

    /// The distinct stacks, each with its samples and exact weight, and its value as
    /// [`stacks`](Self::stacks) gives it.
    pub fn tallies_and_values(&self) -> impl Iterator<Item = (&[u32], Tally, u64)> {
        let scale = self.per_weight();
        let exact = scale == 1.0;
        self.stacks.iter().map(move |(s, &t)| {
            let value = if exact {
                t.weight
            } else {
                (t.weight as f64 * scale).round() as u64
            };
            (&s[..], t, value)
        })
    }

    /// Samples of the mean period per unit of weight: what a stack's weight is in
    /// sample equivalents (its value in folded lines, before rounding).
    pub fn samples_per_weight(&self) -> f64 {
        self.per_weight()
    }

    /// Whether the samples' periods vary from stack to stack: then a stack's share is its
    /// weight's, which its whole number of sample equivalents only approaches, and a flame
    /// graph is drawn from the weights ([`flame_stacks`](Self::flame_stacks)). False where
    /// every stack weighs its samples times one period (a fixed period, or no periods).
    pub fn periods_vary(&self) -> bool {
        let mut first = None;
        self.stacks.values().any(|t| {
            let &mut (count, weight) = first.get_or_insert((t.count, t.weight));
            u128::from(t.weight) * u128::from(count) != u128::from(weight) * u128::from(t.count)
        })
    }

    /// The distinct stacks with their flame graph widths, and whether the widths are
    /// weights: values (whole samples) where the periods are fixed, else the exact summed
    /// periods, so that every frame's share of the graph is its share of the weight.
    pub fn flame_stacks(&self) -> (Vec<(&[u32], u64)>, bool) {
        match self.periods_vary() {
            true => (self.weighted_stacks().collect(), true),
            false => (self.stacks().collect(), false),
        }
    }

    /// The distinct stacks and their raw weights (the sampled event's unit).
    pub fn weighted_stacks(&self) -> impl Iterator<Item = (&[u32], u64)> {
        self.stacks.iter().map(|(s, t)| (&s[..], t.weight))
    }

    /// The distinct stacks, each with its samples and their exact weight.
    pub fn tallies(&self) -> impl Iterator<Item = (&[u32], Tally)> {
        self.stacks.iter().map(|(s, &t)| (&s[..], t))
    }

    /// The summed weight of all stacks.
    pub fn weight(&self) -> u64 {
        self.weight
    }

    /// The folded line of a stack without its count: `root;...;leaf`.
    pub fn folded_stack(&self, frames: &[u32]) -> String {
        let mut s = String::new();
        for (i, &f) in frames.iter().enumerate() {
            if i > 0 {
                s.push(';');
            }
            s.push_str(self.name(f));
        }
        s
    }

    /// Folded lines `root;...;leaf COUNT`, sorted (the order inferno and flamegraph.pl
    /// merge in).
    pub fn folded_lines(&self) -> Vec<String> {
        self.sorted_lines(self.stacks())
    }

    /// `stacks` as folded lines, sorted.
    fn sorted_lines<'s>(&self, stacks: impl Iterator<Item = (&'s [u32], u64)>) -> Vec<String> {
        let mut lines: Vec<String> = stacks.map(|(s, c)| format!("{} {c}", self.folded_stack(s))).collect();
        lines.sort_unstable();
        lines
    }

    /// Writes `stacks.folded`, sorted frame by frame, one line at a time (a profile with
    /// many distinct stacks is not copied into strings whole). Each frame name is escaped
    /// (`upcmp_parsers::folded::escape_frame`) so that [`from_suite_folded`](Self::from_suite_folded)
    /// reads back every name exactly, whatever a process is named.
    pub fn write_folded(&self, mut w: impl Write) -> io::Result<()> {
        let mut stacks: Vec<(&[u32], u64)> = self.stacks().collect();
        stacks.sort_unstable_by(|a, b| {
            let names = |s: &'_ [u32]| s.iter().map(|&f| self.name(f)).collect::<Vec<_>>();
            names(a.0).cmp(&names(b.0))
        });
        for (s, c) in stacks {
            for (i, &f) in s.iter().enumerate() {
                if i > 0 {
                    w.write_all(b";")?;
                }
                w.write_all(escape_frame(self.name(f)).as_bytes())?;
            }
            writeln!(w, " {c}")?;
        }
        Ok(())
    }

    /// Folded lines as [`folded_lines`](Self::folded_lines), but a frame with fewer than
    /// `min_samples` inclusive samples is cut off with everything above it, its samples
    /// left to its parent. A flame graph does not draw such frames anyway; this bounds
    /// the lines it must hold by depth x total / `min_samples`.
    pub fn folded_lines_pruned(&self, min_samples: u64) -> Vec<String> {
        self.lines_pruned(self.stacks().collect(), min_samples)
    }

    /// A flame graph's folded lines ([`flame_stacks`](Self::flame_stacks)'s widths), each
    /// frame under `min_pct` percent of the whole cut as
    /// [`folded_lines_pruned`](Self::folded_lines_pruned) cuts it; and whether the
    /// counts are weights.
    pub fn flame_lines(&self, min_pct: f64) -> (Vec<String>, bool) {
        let (stacks, by_weight) = self.flame_stacks();
        let total = if by_weight { self.weight } else { self.samples };
        (
            self.lines_pruned(stacks, (total as f64 * min_pct / 100.0) as u64),
            by_weight,
        )
    }

    /// `stacks` as sorted folded lines, cut at `min_samples` (see
    /// [`folded_lines_pruned`](Self::folded_lines_pruned)).
    fn lines_pruned(&self, mut stacks: Vec<(&[u32], u64)>, min_samples: u64) -> Vec<String> {
        fn walk<'s>(st: &[(&'s [u32], u64)], depth: usize, min: u64, out: &mut HashMap<&'s [u32], u64>) {
            let mut i = 0;
            while i < st.len() {
                if st[i].0.len() == depth {
                    *out.entry(st[i].0).or_default() += st[i].1;
                    i += 1;
                    continue;
                }
                let f = st[i].0[depth];
                let j = i + st[i..]
                    .iter()
                    .take_while(|(s, _)| s.len() > depth && s[depth] == f)
                    .count();
                let total: u64 = st[i..j].iter().map(|x| x.1).sum();
                if total < min && depth > 0 {
                    *out.entry(&st[i].0[..depth]).or_default() += total;
                } else {
                    walk(&st[i..j], depth + 1, min, out);
                }
                i = j;
            }
        }
        // Id order groups stacks of a common prefix together, a shorter one first.
        stacks.sort_unstable();
        let mut kept = HashMap::new();
        walk(&stacks, 0, min_samples, &mut kept);
        drop(stacks);
        self.sorted_lines(kept.into_iter())
    }

    /// Reads folded stacks (`frame;frame COUNT` per line). `file` names the input in
    /// errors; a `[truncated]` frame as the root or right under it counts the stack as
    /// truncated.
    pub fn from_folded(text: &str, file: &str) -> Result<Self, upcmp_parsers::ParseError> {
        Self::read_folded(text, file, false)
    }

    /// [`from_folded`](Self::from_folded) of a file the suite wrote
    /// ([`write_folded`](Self::write_folded)): its frame names are unescaped.
    pub fn from_suite_folded(text: &str, file: &str) -> Result<Self, upcmp_parsers::ParseError> {
        Self::read_folded(text, file, true)
    }

    fn read_folded(text: &str, file: &str, escaped: bool) -> Result<Self, upcmp_parsers::ParseError> {
        let mut p = StackProfile::default();
        let mut frames = Vec::new();
        upcmp_parsers::folded::for_each_stack(text.as_bytes(), file, |s| {
            frames.clear();
            match escaped {
                true => frames.extend(s.frames().map(|f| p.intern(&unescape_frame(f)))),
                false => frames.extend(s.frames().map(|f| p.intern(f))),
            }
            if is_truncated(&p.names, &frames) {
                p.truncated += s.count;
            }
            p.add_stack(&frames, s.count);
        })?;
        Ok(p)
    }

    /// The same profile without the stacks whose leaf is an idle function: what is left
    /// is CPU time, as upcmp counts it.
    pub fn without_idle(&self, idle: &IdleSet) -> StackProfile {
        let busy = self.busy_stacks(idle);
        let mut p = StackProfile {
            names: self.names.clone(),
            ids: self.ids.clone(),
            truncated: 0,
            lost: self.lost,
            scale: Some(busy.scale),
            ..Default::default()
        };
        for (s, t) in self.tallies() {
            if let Some(truncated) = busy.kept(s) {
                p.add_weighted(s, t.count, t.weight);
                p.truncated += t.count * u64::from(truncated);
            }
        }
        p
    }

    /// [`without_idle`](Self::without_idle) of a profile given up: its stacks are
    /// filtered where they are, not copied into a new table (a comparison's side is made
    /// from the profile just read, which nothing else needs).
    pub fn into_without_idle(mut self, idle: &IdleSet) -> StackProfile {
        let busy = self.busy_stacks(idle);
        let (mut samples, mut weight, mut truncated) = (0u64, 0u64, 0u64);
        self.stacks.retain(|s, t| match busy.kept(s) {
            Some(cut) if t.count > 0 => {
                samples = samples.saturating_add(t.count);
                weight = weight.saturating_add(t.weight);
                truncated += t.count * u64::from(cut);
                true
            }
            _ => false,
        });
        self.stacks.shrink_to_fit();
        StackProfile {
            samples,
            weight,
            truncated,
            scale: Some(busy.scale),
            ..self
        }
    }

    /// The same profile with each frame named `rename(name)`: frames given one name
    /// become one (a function's clones folded into it, `super::naming`), and stacks that
    /// become one add up. Unchanged when no name changes.
    pub fn renamed(self, rename: impl Fn(&str) -> std::borrow::Cow<'_, str>) -> StackProfile {
        let new: Vec<std::borrow::Cow<'_, str>> = self.names.iter().map(|n| rename(n)).collect();
        if new.iter().zip(&self.names).all(|(a, b)| a.len() == b.len()) {
            return self;
        }
        let mut p = StackProfile {
            scale: Some(self.per_weight()),
            samples: self.samples,
            weight: self.weight,
            truncated: self.truncated,
            lost: self.lost,
            ..Default::default()
        };
        let ids: Vec<u32> = new.iter().map(|n| p.intern(n)).collect();
        let mut frames = Vec::new();
        for (stack, t) in self.tallies() {
            frames.clear();
            frames.extend(stack.iter().map(|&f| ids[f as usize]));
            add_to(&mut p.stacks, &frames, t);
        }
        p
    }

    /// What decides which stacks [`without_idle`](Self::without_idle) keeps, each
    /// frame's name asked about once rather than once per stack.
    fn busy_stacks(&self, idle: &IdleSet) -> BusyStacks {
        BusyStacks {
            scale: self.per_weight(),
            idle: self.names.iter().map(|n| idle.contains(n)).collect(),
            truncated: self.names.iter().map(|n| n == TRUNCATED_FRAME).collect(),
        }
    }

    /// The same profile without each stack's root frame, the command upsrun roots its
    /// stacks at since format 3: the shape of the stacks of an older run. A stack that is
    /// its root alone keeps it.
    pub fn without_roots(&self) -> StackProfile {
        let mut p = StackProfile {
            lost: self.lost,
            scale: self.scale,
            ..Default::default()
        };
        let mut frames = Vec::new();
        for (s, t) in self.tallies() {
            let rest = if s.len() > 1 { &s[1..] } else { s };
            frames.clear();
            frames.extend(rest.iter().map(|&f| p.intern(self.name(f))));
            p.weight = p.weight.saturating_add(t.weight);
            add_to(&mut p.stacks, &frames, t);
        }
        // Stripping a root neither adds nor removes a sample.
        p.samples = self.samples;
        p.truncated = self.truncated;
        p
    }
}

/// Options of stack building.
#[derive(Debug, Clone, Copy)]
pub struct StackOptions {
    /// The kernel's call-chain depth limit: a chain with this many frames was cut.
    pub max_stack: usize,
    /// How the user-space node is named, as uprun's `--user-by`.
    pub user_by: UserBy,
    /// The weight of a sample that does not carry its period (a version 1 stream).
    pub default_period: u64,
    /// Root each stack at its thread's command, as perf roots an imported recording's
    /// (output-directory format 3); off to redo the analysis of an older run as written.
    pub command_roots: bool,
}

impl Default for StackOptions {
    fn default() -> Self {
        StackOptions {
            max_stack: DEFAULT_MAX_STACK,
            user_by: UserBy::Single,
            default_period: 1,
            command_roots: true,
        }
    }
}

/// Builds a [`StackProfile`] from sample records.
pub struct StackBuilder<'a, K: ?Sized> {
    symbols: &'a K,
    /// BPF programs and other code the kernel loaded while the records were taken.
    code: super::code::LoadedCode,
    opts: StackOptions,
    threads: ThreadNames,
    kernel_frames: super::code::AddressCache<u32>,
    /// The root frame of each thread seen, until it changes its command.
    command_frames: HashMap<u32, u32>,
    profile: StackProfile,
    scratch: Vec<u32>,
}

impl<'a, K: KernelResolver + ?Sized> StackBuilder<'a, K> {
    /// A builder resolving kernel frames with `symbols`.
    pub fn new(symbols: &'a K, opts: StackOptions) -> Self {
        StackBuilder {
            symbols,
            code: Default::default(),
            opts,
            threads: ThreadNames::default(),
            kernel_frames: Default::default(),
            command_frames: HashMap::new(),
            profile: StackProfile::default(),
            scratch: Vec::new(),
        }
    }

    fn kernel_frame(&mut self, addr: u64) -> u32 {
        if let Some(&id) = self.kernel_frames.get(addr) {
            return id;
        }
        let kernel = super::code::WithLoadedCode {
            code: &self.code,
            kernel: self.symbols,
        };
        let name = match kernel.resolve_kernel(addr) {
            Some((name, None)) => name.to_string(),
            Some((name, Some(module))) => format!("{name} [{module}]"),
            None => UNKNOWN_FUNCTION.to_string(),
        };
        let id = self.profile.intern(&name);
        // Distinct kernel addresses are bounded by the kernel's text, so is this cache.
        self.kernel_frames.insert(addr, id);
        id
    }

    fn user_frame(&mut self, tid: u32) -> u32 {
        match self.opts.user_by {
            UserBy::Single => self.profile.intern(USER_FUNCTION),
            UserBy::Comm => {
                let comm = self.threads.get(tid).unwrap_or(UNKNOWN_FUNCTION);
                // ';' separates frames in a folded line and a space ends one.
                let name = user_function_of(&comm.replace([';', '\n', '\r'], "_"));
                self.profile.intern(&name)
            }
        }
    }

    /// The root frame of thread `tid`: its command, `swapper` for the idle task (perf's
    /// name for pid 0, which no record names), `[unknown]` for a thread no record named.
    fn command_frame(&mut self, tid: u32) -> u32 {
        if let Some(&id) = self.command_frames.get(&tid) {
            return id;
        }
        let comm = match tid {
            0 => IDLE_COMMAND,
            _ => self.threads.get(tid).unwrap_or(UNKNOWN_FUNCTION),
        };
        // ';' separates frames in a folded line and a line ends at a newline.
        let id = self.profile.intern(&comm.replace([';', '\n', '\r'], "_"));
        // Bounded by the threads of the records, as the names they carry.
        self.command_frames.insert(tid, id);
        id
    }

    /// Adds one record.
    pub fn add(&mut self, r: &Record) {
        match r {
            Record::Sample(s) => self.add_sample(s),
            Record::Lost { count, .. } => self.profile.lost += count,
            Record::Comm { tid, .. } | Record::Fork { tid, .. } => {
                self.threads.observe(r);
                self.command_frames.remove(tid);
            }
            Record::Throttle { .. } | Record::BpfEvent { .. } => {}
            Record::Ksymbol(_) => {
                // Names by address change over the range: the cache forgets it.
                if let Some(range) = self.code.observe(r) {
                    self.kernel_frames.forget(range);
                }
            }
        }
    }

    fn add_sample(&mut self, s: &Sample) {
        let mut frames = std::mem::take(&mut self.scratch);
        frames.clear();
        let mut mode = s.mode;
        let mut addresses = 0usize;
        let mut last_kind = None;
        // Innermost first: the leaf is pushed first and the list reversed at the end.
        for &addr in &s.callchain {
            if addr >= PERF_CONTEXT_MAX {
                mode = context_mode(addr, mode);
                continue;
            }
            let leaf = addresses == 0;
            addresses += 1;
            self.push_frame(&mut frames, &mut last_kind, mode, addr, leaf, s.tid);
        }
        if addresses == 0 {
            // No call chain (stacks not taken): the sampled PC alone.
            self.push_frame(&mut frames, &mut last_kind, s.mode, s.pc, true, s.tid);
        }
        // A chain cut inside user space loses nothing here (user space is one node), so
        // only a cut that leaves a kernel frame outermost is a truncated stack.
        let root_is_kernel = frames
            .last()
            .is_some_and(|&f| FrameKind::of(self.profile.name(f)) == FrameKind::Kernel);
        if addresses >= self.opts.max_stack && root_is_kernel {
            frames.push(self.profile.intern(TRUNCATED_FRAME));
            self.profile.truncated += 1;
        }
        if self.opts.command_roots {
            frames.push(self.command_frame(s.tid));
        }
        frames.reverse();
        let period = s.period.unwrap_or(self.opts.default_period);
        self.profile.add_weighted(&frames, 1, period);
        self.scratch = frames;
    }

    fn push_frame(
        &mut self,
        frames: &mut Vec<u32>,
        last_kind: &mut Option<Mode>,
        mode: Mode,
        addr: u64,
        leaf: bool,
        tid: u32,
    ) {
        let collapsed = !matches!(mode, Mode::Kernel);
        // User, hypervisor and guest frames are one node each, however deep.
        if collapsed && *last_kind == Some(mode) {
            return;
        }
        let id = match mode {
            // A caller's address is a return address: the call is the byte before it
            // (which matters when the call is a function's last instruction).
            Mode::Kernel => self.kernel_frame(if leaf { addr } else { addr.wrapping_sub(1) }),
            Mode::User => self.user_frame(tid),
            Mode::Hypervisor => self.profile.intern(HYPERVISOR_FUNCTION),
            Mode::GuestKernel | Mode::GuestUser => self.profile.intern(GUEST_FUNCTION),
            Mode::Unknown => self.profile.intern(UNKNOWN_MODE_FUNCTION),
        };
        frames.push(id);
        *last_kind = Some(mode);
    }

    /// The profile.
    pub fn finish(self) -> StackProfile {
        self.profile
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mode::{PERF_CONTEXT_KERNEL, PERF_CONTEXT_USER};
    use crate::CallGraph;

    /// The kernel of a kallsyms of `entry`, `sys_x` and `helper` (0x100 bytes each from
    /// 0xffffffff81000000) and ext4's `modfn` at 0xffffffffc0000000.
    struct Syms;

    impl KernelResolver for Syms {
        fn resolve_kernel(&self, pc: u64) -> Option<(&str, Option<&str>)> {
            match pc {
                0xffffffff81000000..=0xffffffff810000ff => Some(("entry", None)),
                0xffffffff81000100..=0xffffffff810001ff => Some(("sys_x", None)),
                0xffffffff81000200..=0xffffffff810002ff => Some(("helper", None)),
                0xffffffffc0000000..=0xffffffffc0000fff => Some(("modfn", Some("ext4"))),
                _ => None,
            }
        }
    }

    fn syms() -> Syms {
        Syms
    }

    fn sample(mode: Mode, pc: u64, callchain: Vec<u64>) -> Record {
        Record::Sample(Sample {
            time_ns: 0,
            cpu: 0,
            pid: 7,
            tid: 7,
            mode,
            period: None,
            pc,
            callchain,
            owner: None,
        })
    }

    #[test]
    fn call_chains_become_root_first_stacks_without_markers() {
        let s = syms();
        let mut b = StackBuilder::new(
            &s,
            StackOptions {
                max_stack: 6,
                user_by: UserBy::Comm,
                default_period: 1,
                command_roots: true,
            },
        );
        b.add(&Record::Comm {
            pid: 7,
            tid: 7,
            comm: "a;b".into(),
        });
        // helper <- sys_x <- entry <- two user frames.
        b.add(&sample(
            Mode::Kernel,
            0xffffffff81000210,
            vec![
                PERF_CONTEXT_KERNEL,
                0xffffffff81000210,
                0xffffffff81000105,
                0xffffffff81000010,
                PERF_CONTEXT_USER,
                0x401000,
                0x402000,
            ],
        ));
        // A return address just past the end of sys_x belongs to sys_x (the call).
        b.add(&sample(
            Mode::Kernel,
            0xffffffff81000210,
            vec![PERF_CONTEXT_KERNEL, 0xffffffff81000210, 0xffffffff81000200],
        ));
        // No call chain: the PC alone; a module function is named with its module.
        b.add(&sample(Mode::Kernel, 0xffffffffc0000004, vec![]));
        // Six kernel addresses reach the limit of 6: truncated.
        b.add(&sample(
            Mode::Kernel,
            0xffffffff81000210,
            vec![
                PERF_CONTEXT_KERNEL,
                0xffffffff81000210,
                0xffffffff81000210,
                0xffffffff81000105,
                0xffffffff81000010,
                0xffffffff81000010,
                0xffffffff81000010,
            ],
        ));
        // Cut inside user space (and a junk value past a marker): not truncated here.
        b.add(&sample(
            Mode::User,
            0x401000,
            vec![PERF_CONTEXT_USER, 0x401000, u64::MAX, 0x3, 0x4, 0x5, 0x6],
        ));
        let p = b.finish();
        assert_eq!(
            p.folded_lines(),
            [
                "a_b;[truncated];entry;entry;entry;sys_x;helper;helper 1",
                "a_b;modfn [ext4] 1",
                "a_b;sys_x;helper 1",
                "a_b;user:a_b 1",
                "a_b;user:a_b;entry;sys_x;helper 1",
            ]
        );
        assert_eq!((p.samples, p.truncated), (5, 1));
        let mut written = Vec::new();
        p.write_folded(&mut written).unwrap();
        let back = StackProfile::from_folded(std::str::from_utf8(&written).unwrap(), "x").unwrap();
        assert_eq!(back.folded_lines(), p.folded_lines());
        assert_eq!(back.truncated, 1);
    }

    fn sample_of(tid: u32, mode: Mode, pc: u64, callchain: Vec<u64>) -> Record {
        match sample(mode, pc, callchain) {
            Record::Sample(s) => Record::Sample(Sample { pid: tid, tid, ..s }),
            r => r,
        }
    }

    #[test]
    fn stacks_are_rooted_at_the_command_that_comm_and_fork_records_name() {
        let s = syms();
        let mut b = StackBuilder::new(&s, StackOptions::default());
        let syscall = |tid| {
            sample_of(
                tid,
                Mode::Kernel,
                0xffffffff81000105,
                vec![PERF_CONTEXT_KERNEL, 0xffffffff81000105, PERF_CONTEXT_USER, 0x401000],
            )
        };
        b.add(&Record::Comm {
            pid: 10,
            tid: 10,
            comm: "sh".into(),
        });
        b.add(&syscall(10));
        // A child has its parent's command until it execs and names itself.
        b.add(&Record::Fork {
            pid: 11,
            ppid: 10,
            tid: 11,
            ptid: 10,
        });
        b.add(&syscall(11));
        b.add(&Record::Comm {
            pid: 11,
            tid: 11,
            comm: "ls".into(),
        });
        b.add(&syscall(11));
        b.add(&syscall(11));
        // The idle task (pid 0) is perf's swapper; a thread no record named is [unknown].
        b.add(&sample_of(0, Mode::Kernel, 0xffffffff81000210, vec![]));
        b.add(&sample_of(99, Mode::User, 0x401000, vec![PERF_CONTEXT_USER, 0x401000]));
        let p = b.finish();
        assert_eq!(
            p.folded_lines(),
            [
                "[unknown];user 1",
                "ls;user;sys_x 2",
                "sh;user;sys_x 2",
                "swapper;helper 1",
            ]
        );
        // The roots' samples add up to all samples.
        assert_eq!(p.samples, 6);
        // Without the roots: the shape of a stack written before format 3.
        assert_eq!(p.without_roots().folded_lines(), ["helper 1", "user 1", "user;sys_x 4"]);
        assert_eq!(p.without_roots().samples, 6);
        // Rooted stacks leave the call graph's self times as they were without roots.
        let rooted = CallGraph::of_command_rooted(&p);
        let plain = CallGraph::of(&p.without_roots());
        let selfs = |g: &CallGraph| {
            let mut v: Vec<(String, u64)> = g
                .names
                .iter()
                .cloned()
                .zip(g.self_samples.iter().copied())
                .filter(|x| x.1 > 0)
                .collect();
            v.sort();
            v
        };
        assert_eq!(selfs(&rooted), selfs(&plain));
    }

    #[test]
    fn a_truncated_stack_under_its_command_counts_as_truncated() {
        let p = StackProfile::from_folded("app;[truncated];f;g 2\napp;f 1\n[truncated];f 1\n", "x").unwrap();
        assert_eq!(p.truncated, 3);
        assert_eq!(p.without_roots().truncated, 3);
    }

    #[test]
    fn flame_lines_weigh_periods_where_they_vary() {
        let mut p = StackProfile::default();
        let (a, f, g) = (p.intern("a"), p.intern("f"), p.intern("g"));
        // One sample each, of periods 5, 3 and 2: whole mean-period samples would give
        // f 2 of 3 (66.7%) where its periods give 50%.
        p.add_weighted(&[a, f], 1, 5);
        p.add_weighted(&[a, g], 1, 3);
        p.add_weighted(&[a, f, g], 1, 2);
        assert!(p.periods_vary());
        assert_eq!(
            p.flame_lines(0.0),
            (vec!["a;f 5".to_string(), "a;f;g 2".into(), "a;g 3".into()], true)
        );
        // Under 30% of the weight (3 of 10): g above f (2) is cut, left to f.
        assert_eq!(p.flame_lines(30.0).0, ["a;f 7", "a;g 3"]);
        // A fixed period: whole samples, as the folded lines.
        let mut q = StackProfile::default();
        let (a, f) = (q.intern("a"), q.intern("f"));
        q.add_weighted(&[a, f], 2, 8);
        q.add_weighted(&[a], 3, 12);
        assert!(!q.periods_vary());
        assert_eq!(q.flame_lines(0.0), (q.folded_lines(), false));
        assert_eq!(q.flame_lines(0.0).0, ["a 3", "a;f 2"]);
    }

    #[test]
    fn pruning_leaves_narrow_frames_to_their_parents() {
        let p = StackProfile::from_folded("a;b;c 1\na;b;d 1\na;e 10\na 2\nz 1\n", "x").unwrap();
        // b (2 samples) is below 3: cut, its samples stay with a; z is a root and stays.
        assert_eq!(p.folded_lines_pruned(3), ["a 4", "a;e 10", "z 1"]);
        assert_eq!(p.folded_lines_pruned(1), p.folded_lines());
    }

    #[test]
    fn a_profile_given_up_loses_its_idle_stacks_as_a_copy_does() {
        let mut p = StackProfile::default();
        let [cmd, work, idle, trunc, rare] = ["cmd", "work", "idle", TRUNCATED_FRAME, "rare"].map(|n| p.intern(n));
        // Weights are not samples: 5 samples over 3100 units. A stack keeps its samples
        // and weight whatever it would round to (one of no samples is not added at all).
        p.add_weighted(&[cmd, work], 2, 2000);
        p.add_weighted(&[cmd, idle], 1, 500);
        p.add_weighted(&[cmd, trunc, work], 1, 500);
        p.add_weighted(&[cmd, rare], 0, 100);
        p.add_weighted(&[rare], 1, 100);
        p.lost = 3;
        let idle_set = IdleSet::new(vec!["idle".into()]);
        let copy = p.without_idle(&idle_set);
        let given_up = p.into_without_idle(&idle_set);
        let sorted = |p: &StackProfile| {
            let mut v: Vec<(Vec<u32>, u64)> = p.weighted_stacks().map(|(s, w)| (s.to_vec(), w)).collect();
            v.sort();
            v
        };
        assert_eq!(sorted(&given_up), sorted(&copy));
        assert_eq!(
            sorted(&given_up),
            [
                (vec![cmd, work], 2000),
                (vec![cmd, trunc, work], 500),
                (vec![rare], 100)
            ]
        );
        assert_eq!(given_up.folded_lines(), copy.folded_lines());
        assert_eq!(
            (given_up.samples, given_up.weight, given_up.truncated, given_up.lost),
            (copy.samples, copy.weight, copy.truncated, copy.lost)
        );
        assert_eq!((copy.samples, copy.truncated, copy.lost), (4, 1, 3));
        assert_eq!(given_up.scale, copy.scale);
        assert_eq!(given_up.names(), copy.names());
    }
}
