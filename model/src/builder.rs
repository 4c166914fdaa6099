//! The one way samples become a [`Profile`]: live runs, rebuilt runs and imported
//! recordings all count through [`ProfileBuilder`], and name a sampled PC by the one rule
//! of [`ProfileBuilder::add_sample`].

use super::code::{LoadedCode, UserCode, WithLoadedCode};
use super::filter::SampleFilter;
use super::idle::IdleSet;
use super::mode::{is_kernel_address, Mode, Record, ThreadNames};
use super::profile::{
    module, user_function_of, CpuTotals, FunctionSamples, Profile, ProfileMeta, UserBy, GUEST_FUNCTION,
    HYPERVISOR_FUNCTION, JIT_FUNCTION, JIT_NOTE, UNKNOWN_FUNCTION, UNKNOWN_MODE_FUNCTION, USER_FUNCTION,
};
use super::resolver::KernelResolver;
use std::collections::HashMap;

/// Per-function, per-CPU sample counts and weights, and the per-CPU totals. A sample
/// weighs its period (in the profile's unit); sums saturate at 2^64 rather than wrap.
///
/// The CPUs are either fixed up front ([`ProfileBuilder::with_cpus`]: a live run samples
/// the CPUs online at its start, and a sample from another CPU is left out and counted)
/// or found as samples name them ([`ProfileBuilder::new`]: recordings).
#[derive(Debug, Default)]
pub struct ProfileBuilder {
    // Looked up once per sample: foldhash, not SipHash (no untrusted keys to defend against).
    index: HashMap<String, usize, foldhash::fast::RandomState>,
    keys: Vec<(String, String)>,
    // counts[function][slot] and weights[function][slot], slots in order of first
    // appearance of their CPU; squares[function]: the sum of the squared weights.
    counts: Vec<Vec<u64>>,
    weights: Vec<Vec<u64>>,
    squares: Vec<f64>,
    // exact_squares[function]: the squares of integer periods ([`add_period`]), summed
    // exactly, so that their total does not depend on the order they came in.
    exact_squares: Vec<u128>,
    // Looked up per sample: foldhash, not SipHash (CPU numbers are checked, not secret).
    slot_of_cpu: HashMap<u32, usize, foldhash::fast::RandomState>,
    cpus: Vec<CpuTotals>,
    fixed_cpus: bool,
    foreign_cpu_samples: u64,
    key: String,
    samples: u64,
    /// The lowest and highest address of each `[unknown]` function's samples, by index.
    unknown_spans: HashMap<usize, (u64, u64), foldhash::fast::RandomState>,
}

impl ProfileBuilder {
    /// A builder whose CPUs are those its samples name.
    pub fn new() -> Self {
        Self::default()
    }

    /// A builder for exactly the CPUs `cpus`, in this column order.
    pub fn with_cpus(cpus: &[u32]) -> Self {
        let mut b = Self::default();
        for &c in cpus {
            b.slot(c);
        }
        b.fixed_cpus = true;
        b
    }

    fn slot(&mut self, cpu: u32) -> usize {
        if let Some(&s) = self.slot_of_cpu.get(&cpu) {
            return s;
        }
        let s = self.cpus.len();
        self.slot_of_cpu.insert(cpu, s);
        self.cpus.push(CpuTotals::empty(cpu));
        s
    }

    /// The column of `cpu`, or None for a CPU outside a fixed set.
    fn column(&mut self, cpu: u32) -> Option<usize> {
        match self.slot_of_cpu.get(&cpu) {
            Some(&s) => Some(s),
            None if self.fixed_cpus => None,
            None => Some(self.slot(cpu)),
        }
    }

    /// Makes sure `cpu` has a column even without samples.
    pub fn ensure_cpu(&mut self, cpu: u32) {
        self.column(cpu);
    }

    /// Adds `n` samples of `module`'s `name` on `cpu`, weighing `weight` in all, whose
    /// squares sum to `weight_sq`.
    pub fn add(&mut self, cpu: u32, module: &str, name: &str, n: u64, weight: u64, weight_sq: f64) {
        let Some(slot) = self.column(cpu) else {
            self.foreign_cpu_samples += n;
            return;
        };
        let f = self.function(module, name);
        self.add_at(slot, f, n, weight, weight_sq);
    }

    /// The index of `module`'s `name`, adding the function (with no samples) when new. An
    /// importer that names each distinct address once keeps these, and counts each
    /// sample with [`add_period`](Self::add_period) without naming or hashing it again.
    pub fn function(&mut self, module: &str, name: &str) -> usize {
        self.key.clear();
        self.key.push_str(module);
        self.key.push('\0');
        self.key.push_str(name);
        match self.index.get(self.key.as_str()) {
            Some(&f) => f,
            None => {
                let f = self.keys.len();
                self.index.insert(self.key.clone(), f);
                self.keys.push((module.to_string(), name.to_string()));
                self.counts.push(Vec::new());
                self.weights.push(Vec::new());
                self.squares.push(0.0);
                self.exact_squares.push(0);
                f
            }
        }
    }

    /// One sample of period `period` of the function of index `f` (from
    /// [`function`](Self::function)), its square summed exactly: pieces of one input read
    /// apart and merged give the total that reading it whole gives, bit for bit.
    pub fn add_period(&mut self, cpu: u32, f: usize, period: u64) {
        match self.column(cpu) {
            Some(slot) => {
                self.count_at(slot, f, 1, period);
                self.exact_squares[f] += u128::from(period) * u128::from(period);
            }
            None => self.foreign_cpu_samples += 1,
        }
    }

    fn add_at(&mut self, slot: usize, f: usize, n: u64, weight: u64, weight_sq: f64) {
        self.count_at(slot, f, n, weight);
        self.squares[f] += weight_sq;
    }

    /// [`add_at`](Self::add_at) but for the squares.
    fn count_at(&mut self, slot: usize, f: usize, n: u64, weight: u64) {
        let (row, wrow) = (&mut self.counts[f], &mut self.weights[f]);
        if row.len() <= slot {
            row.resize(slot + 1, 0);
            wrow.resize(slot + 1, 0);
        }
        row[slot] = row[slot].saturating_add(n);
        wrow[slot] = wrow[slot].saturating_add(weight);
        let c = &mut self.cpus[slot];
        c.samples = c.samples.saturating_add(n);
        c.weight = c.weight.saturating_add(weight);
        self.samples = self.samples.saturating_add(n);
    }

    /// Adds one sample of `module`'s `name` on `cpu`, of period `period`.
    pub fn add_one(&mut self, cpu: u32, module: &str, name: &str, period: u64) {
        let p = period as f64;
        self.add(cpu, module, name, 1, period, p * p);
    }

    /// Counts one sample of a PC, of period `period`, by the rule every source shares: a
    /// kernel PC is named by `kernel` (`[unknown]` where no symbol covers it), a user PC
    /// is `user` (module, function) as the caller names it, hypervisor and guest time are
    /// one function each, and a sample of unknown mode is placed by its address.
    pub fn add_sample<K: KernelResolver + ?Sized>(
        &mut self,
        cpu: u32,
        (mode, pc, period): (Mode, u64, u64),
        kernel: &K,
        user: (&str, &str),
    ) {
        let (m, name) = sample_function(mode, pc, kernel, user);
        if name == UNKNOWN_FUNCTION {
            let f = self.function(m, name);
            self.note_address(f, pc);
        }
        self.add_one(cpu, m, name, period);
    }

    /// Makes every sample weigh `period` (its own period was not known).
    pub fn weigh_by_count(&mut self, period: f64) {
        let weigh = |n: u64| (n as f64 * period).round() as u64;
        for (f, row) in self.counts.iter().enumerate() {
            self.weights[f] = row.iter().map(|&n| weigh(n)).collect();
            self.squares[f] = row.iter().sum::<u64>() as f64 * period * period;
            self.exact_squares[f] = 0;
        }
        for (slot, c) in self.cpus.iter_mut().enumerate() {
            // Saturating: a weight past 2^64 is refused by the profile's checks, not a panic.
            c.weight = self
                .weights
                .iter()
                .filter_map(|w| w.get(slot))
                .fold(0u64, |a, &w| a.saturating_add(w));
        }
    }

    /// A builder of the same functions and CPUs, nothing counted: a second reader of the
    /// same input counts into it by the indices this one gave, then is merged.
    pub fn names_only(&self) -> Self {
        let n = self.keys.len();
        ProfileBuilder {
            index: self.index.clone(),
            keys: self.keys.clone(),
            counts: vec![Vec::new(); n],
            weights: vec![Vec::new(); n],
            squares: vec![0.0; n],
            exact_squares: vec![0; n],
            slot_of_cpu: self.slot_of_cpu.clone(),
            cpus: self.cpus.iter().map(|c| CpuTotals::empty(c.cpu)).collect(),
            fixed_cpus: self.fixed_cpus,
            foreign_cpu_samples: 0,
            key: String::new(),
            samples: 0,
            unknown_spans: HashMap::default(),
        }
    }

    /// Notes that a sample of the function of index `f` was taken at `addr`: an
    /// `[unknown]` function keeps the span of its addresses, said in the profile's notes
    /// when it holds 0.1% of the samples or more (what code it is may be read from
    /// there). Other functions are not noted.
    pub fn note_address(&mut self, f: usize, addr: u64) {
        if self.keys[f].1 != UNKNOWN_FUNCTION {
            return;
        }
        let span = self.unknown_spans.entry(f).or_insert((addr, addr));
        *span = (span.0.min(addr), span.1.max(addr));
    }

    /// Adds everything `other` counted (a piece of the same input read apart).
    pub fn merge(&mut self, other: ProfileBuilder) {
        for (f, (module, name)) in other.keys.iter().enumerate() {
            let (row, wrow) = (&other.counts[f], &other.weights[f]);
            // The squares are the function's, not a CPU's: they go with its first column.
            let mut sq = other.squares[f];
            for (slot, &n) in row.iter().enumerate().filter(|(_, &n)| n > 0) {
                self.add(
                    other.cpus[slot].cpu,
                    module,
                    name,
                    n,
                    wrow[slot],
                    std::mem::take(&mut sq),
                );
            }
            if other.exact_squares[f] > 0 {
                let g = self.function(module, name);
                self.exact_squares[g] += other.exact_squares[f];
            }
            if let Some(&(lo, hi)) = other.unknown_spans.get(&f) {
                let g = self.function(module, name);
                self.note_address(g, lo);
                self.note_address(g, hi);
            }
        }
        for c in &other.cpus {
            if let Some(s) = self.column(c.cpu) {
                self.cpus[s].lost += c.lost;
                self.cpus[s].throttled += c.throttled;
            }
        }
        self.foreign_cpu_samples += other.foreign_cpu_samples;
    }

    /// Adds samples the kernel reported lost on `cpu`.
    pub fn lost(&mut self, cpu: u32, n: u64) {
        if let Some(s) = self.column(cpu) {
            self.cpus[s].lost += n;
        }
    }

    /// Adds a throttle event on `cpu`.
    pub fn throttled(&mut self, cpu: u32) {
        if let Some(s) = self.column(cpu) {
            self.cpus[s].throttled += 1;
        }
    }

    /// Samples counted (on the profile's CPUs).
    pub fn samples(&self) -> u64 {
        self.samples
    }

    /// Their summed weight.
    pub fn weight(&self) -> u64 {
        self.cpus.iter().fold(0u64, |s, c| s.saturating_add(c.weight))
    }

    /// CPUs with a column.
    pub fn cpu_count(&self) -> usize {
        self.cpus.len()
    }

    /// The profile: CPUs in column order when fixed, else in numeric order; functions by
    /// total samples (largest first), then by name. Samples of CPUs outside a fixed set
    /// are reported in a warning.
    pub fn finish(self, meta: ProfileMeta, idle: &IdleSet, mut warnings: Vec<String>) -> Profile {
        let mut order: Vec<usize> = (0..self.cpus.len()).collect();
        if !self.fixed_cpus {
            order.sort_by_key(|&s| self.cpus[s].cpu);
        }
        let mut spans: Vec<(&usize, &(u64, u64))> = self.unknown_spans.iter().collect();
        spans.sort_unstable_by_key(|(&f, _)| f);
        for (&f, &(lo, hi)) in spans {
            let n: u64 = self.counts[f].iter().sum();
            let note = unknown_note(&self.keys[f].0, n, lo, hi);
            // A rebuilt profile starts from the stored one's warnings. A row under 0.1% of
            // the samples is not worth a line.
            if n > 0 && n.saturating_mul(1000) >= self.samples && !warnings.contains(&note) {
                warnings.push(note);
            }
        }
        let jit = self
            .keys
            .iter()
            .position(|(m, n)| m == module::KERNEL && n == JIT_FUNCTION);
        if jit.is_some_and(|f| self.counts[f].iter().any(|&n| n > 0)) && !warnings.iter().any(|w| w == JIT_NOTE) {
            warnings.push(JIT_NOTE.to_string());
        }
        let column = |row: &[u64]| -> Vec<u64> { order.iter().map(|&s| row.get(s).copied().unwrap_or(0)).collect() };
        let functions = self
            .keys
            .into_iter()
            .enumerate()
            .map(|(f, (module, name))| FunctionSamples {
                module,
                name,
                per_cpu: column(&self.counts[f]),
                weight_per_cpu: column(&self.weights[f]),
                weight_sq: self.squares[f] + self.exact_squares[f] as f64,
            })
            .collect();
        if self.foreign_cpu_samples > 0 {
            warnings.push(format!(
                "{} samples came from CPUs that were not online at the start and are left out",
                self.foreign_cpu_samples
            ));
        }
        let cpus = order.iter().map(|&s| self.cpus[s].clone()).collect();
        meta.into_profile(idle, cpus, functions, warnings)
    }
}

/// The note on an `[unknown]` function of `module`: its `n` samples fell between `lo` and
/// `hi` (kernel addresses, or a user DSO's), which no symbol covers.
pub fn unknown_note(module: &str, n: u64, lo: u64, hi: u64) -> String {
    let at = if lo == hi {
        format!("at {lo:#x}")
    } else {
        format!("at {lo:#x} to {hi:#x}")
    };
    format!(
        "[unknown] [{module}]: {n} sample{} {at}, where no symbol is",
        if n == 1 { "" } else { "s" }
    )
}

/// The (module, function) of a sampled PC, by the rule of [`ProfileBuilder::add_sample`]:
/// it depends on the mode and the PC alone (and on `user`, which the caller names), so an
/// importer may name each distinct address once.
pub fn sample_function<'a, K: KernelResolver + ?Sized>(
    mode: Mode,
    pc: u64,
    kernel: &'a K,
    user: (&'a str, &'a str),
) -> (&'a str, &'a str) {
    match mode {
        Mode::Kernel => match kernel.resolve_kernel(pc) {
            Some((name, m)) => (m.unwrap_or(module::KERNEL), name),
            None => (module::KERNEL, UNKNOWN_FUNCTION),
        },
        Mode::User => user,
        Mode::Hypervisor => (module::HYPERVISOR, HYPERVISOR_FUNCTION),
        Mode::GuestKernel | Mode::GuestUser => (module::GUEST, GUEST_FUNCTION),
        Mode::Unknown if is_kernel_address(pc) => (module::KERNEL, UNKNOWN_MODE_FUNCTION),
        Mode::Unknown => (module::USER, UNKNOWN_MODE_FUNCTION),
    }
}

/// Builds a profile from a record stream (a live run's, or a stored `samples.gz`): kernel
/// PCs named by the kernel's symbols, user time as `user` or `user:COMM`.
pub struct RecordProfiler<'a, K: ?Sized> {
    kernel: &'a K,
    /// The period of a sample that does not carry its own (a version 1 stream).
    default_period: u64,
    user_by: UserBy,
    threads: ThreadNames,
    profile: ProfileBuilder,
    user_name: String,
    filter: SampleFilter,
    /// BPF programs and other code the kernel loaded while the records were taken.
    code: LoadedCode,
    /// JIT code of user processes (their perf maps).
    user_code: Option<&'a dyn UserCode>,
}

impl<'a, K: KernelResolver + ?Sized> RecordProfiler<'a, K> {
    /// The same profiler, naming the user PCs that `user_code` names (JIT code) by it.
    pub fn with_user_code(mut self, user_code: &'a dyn UserCode) -> Self {
        self.user_code = Some(user_code);
        self
    }

    /// The same profiler, keeping only the samples `filter` keeps.
    pub fn with_filter(mut self, filter: SampleFilter) -> Self {
        self.filter = filter;
        self
    }

    /// A profiler of the CPUs `cpus` (column order), resolving kernel PCs with `kernel`;
    /// a sample without its own period weighs `default_period`.
    pub fn new(kernel: &'a K, cpus: &[u32], user_by: UserBy, default_period: u64) -> Self {
        RecordProfiler {
            kernel,
            default_period,
            user_by,
            threads: ThreadNames::default(),
            profile: ProfileBuilder::with_cpus(cpus),
            user_name: String::new(),
            filter: SampleFilter::default(),
            code: LoadedCode::default(),
            user_code: None,
        }
    }

    /// Adds one record.
    pub fn add(&mut self, r: &Record) {
        match r {
            Record::Sample(s) => {
                // Asked only with a filter: the thread's name is looked up per sample.
                if !self.filter.is_empty() {
                    let kept = self.filter.keeps(s.cpu, s.pid, s.tid, s.mode, self.threads.get(s.tid))
                        && self.filter.keeps_owner(s.owner);
                    if !kept {
                        return;
                    }
                }
                if s.mode == Mode::User && self.user_by == UserBy::Comm {
                    self.user_name = user_function_of(self.threads.get(s.tid).unwrap_or(UNKNOWN_FUNCTION));
                } else {
                    self.user_name.clear();
                    self.user_name.push_str(USER_FUNCTION);
                }
                let jit = self
                    .user_code
                    .filter(|_| s.mode == Mode::User)
                    .and_then(|c| c.resolve_user(s.pid, s.pc));
                let user = jit.unwrap_or((module::USER, self.user_name.as_str()));
                let period = s.period.unwrap_or(self.default_period);
                let kernel = WithLoadedCode {
                    code: &self.code,
                    kernel: self.kernel,
                };
                self.profile.add_sample(s.cpu, (s.mode, s.pc, period), &kernel, user);
            }
            Record::Lost { cpu, count } => self.profile.lost(*cpu, *count),
            Record::Throttle { cpu } => self.profile.throttled(*cpu),
            Record::Comm { .. } | Record::Fork { .. } => self.threads.observe(r),
            Record::Ksymbol(_) => {
                self.code.observe(r);
            }
            Record::BpfEvent { .. } => {}
        }
    }

    /// The profile (see [`ProfileBuilder::finish`]).
    pub fn finish(self, meta: ProfileMeta, idle: &IdleSet, warnings: Vec<String>) -> Profile {
        self.profile.finish(meta, idle, warnings)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use upcmp_parsers::samples::Sample;

    /// Two kernel functions and a module's, as a symbol table would name them.
    struct Table;

    impl KernelResolver for Table {
        fn resolve_kernel(&self, pc: u64) -> Option<(&str, Option<&str>)> {
            match pc {
                0xffffffff81000000..=0xffffffff810000ff => Some(("alpha", None)),
                0xffffffff81000100..=0xffffffff810001ff => Some(("beta", None)),
                0xffffffffc0000000..=0xffffffffc00000ff => Some(("gamma", Some("ext4"))),
                _ => None,
            }
        }
    }

    fn meta() -> ProfileMeta {
        ProfileMeta {
            test: "t".into(),
            command: None,
            event: "cpu-clock".into(),
            unit: crate::profile::Unit::Nanoseconds,
            period: Some(1e6),
            wall_sec: 1.0,
        }
    }

    fn sample(cpu: u32, tid: u32, mode: Mode, pc: u64) -> Record {
        Record::Sample(Sample {
            time_ns: 0,
            cpu,
            pid: tid,
            tid,
            mode,
            period: None,
            pc,
            callchain: vec![],
            owner: None,
        })
    }

    #[test]
    fn records_count_per_function_and_cpu() {
        let mut b = RecordProfiler::new(&Table, &[0, 2], UserBy::Comm, 1_000_000);
        for r in [
            Record::Comm {
                pid: 10,
                tid: 10,
                comm: "bash".into(),
            },
            sample(0, 1, Mode::Kernel, 0xffffffff81000010),
            sample(2, 1, Mode::Kernel, 0xffffffff81000010),
            sample(2, 1, Mode::Kernel, 0xffffffff81000180),
            sample(0, 10, Mode::User, 0x400000),
            Record::Fork {
                pid: 11,
                ppid: 10,
                tid: 11,
                ptid: 10,
            },
            sample(2, 11, Mode::User, 0x400000),
            Record::Comm {
                pid: 11,
                tid: 11,
                comm: "ls".into(),
            },
            sample(2, 11, Mode::User, 0x400000),
            sample(0, 1, Mode::Kernel, 0xffffffffc0000004),
            sample(7, 1, Mode::Kernel, 0xffffffff81000010),
            Record::Lost { cpu: 2, count: 5 },
            Record::Throttle { cpu: 0 },
        ] {
            b.add(&r);
        }
        let p = b.finish(meta(), &IdleSet::new(vec![]), vec![]);
        let get = |n: &str| {
            p.functions
                .iter()
                .find(|f| f.name == n)
                .unwrap_or_else(|| panic!("{n}"))
        };
        assert_eq!(get("alpha").per_cpu, [1, 1]);
        assert_eq!(get("beta").per_cpu, [0, 1]);
        assert_eq!(
            get("user:bash").per_cpu,
            [1, 1],
            "the forked child is bash until it execs"
        );
        assert_eq!(get("user:ls").per_cpu, [0, 1]);
        assert_eq!(get("gamma").module, "ext4");
        assert_eq!(p.functions[0].name, "alpha", "largest first, then by name");
        assert_eq!(p.cpus[0].samples, 3);
        assert_eq!(p.cpus[1].samples, 4);
        assert_eq!(p.cpus[1].lost, 5);
        assert_eq!(p.cpus[0].throttled, 1);
        assert!(p.warnings[0].starts_with("1 samples came from CPUs"));
    }

    #[test]
    fn found_cpus_come_in_numeric_order() {
        let mut c = ProfileBuilder::new();
        c.add(3, "kernel", "a", 2, 20, 200.0);
        c.add(1, "kernel", "b", 5, 50, 500.0);
        c.add(3, "kernel", "b", 1, 10, 100.0);
        c.ensure_cpu(0);
        c.lost(1, 4);
        let p = c.finish(meta(), &IdleSet::linux_default(), vec![]);
        assert_eq!(p.cpus.iter().map(|c| c.cpu).collect::<Vec<_>>(), [0, 1, 3]);
        assert_eq!(p.cpus[1].lost, 4);
        assert_eq!(p.functions[0].name, "b");
        assert_eq!(p.functions[0].per_cpu, [0, 5, 1]);
        assert_eq!(p.functions[0].weight_per_cpu, [0, 50, 10]);
        assert_eq!(p.functions[0].weight_sq, 600.0);
        assert_eq!(p.functions[1].per_cpu, [0, 0, 2]);
        assert_eq!(p.cpus[2].samples, 3);
    }

    #[test]
    fn one_naming_rule_for_every_mode() {
        let mut b = ProfileBuilder::new();
        let user = ("libc.so.6", "memcpy");
        b.add_sample(0, (Mode::Kernel, 0xffffffff81000001, 1), &Table, user);
        b.add_sample(0, (Mode::Kernel, 0xffffffff8f000000, 1), &Table, user);
        b.add_sample(0, (Mode::User, 0x1000, 1), &Table, user);
        b.add_sample(0, (Mode::Hypervisor, 0, 1), &Table, user);
        b.add_sample(0, (Mode::GuestUser, 0, 1), &Table, user);
        b.add_sample(0, (Mode::Unknown, 0xffffffff81000001, 1), &Table, user);
        b.add_sample(0, (Mode::Unknown, 0x1000, 1), &Table, user);
        let p = b.finish(meta(), &IdleSet::new(vec![]), vec![]);
        let mut rows: Vec<(&str, &str)> = p
            .functions
            .iter()
            .map(|f| (f.module.as_str(), f.name.as_str()))
            .collect();
        rows.sort();
        assert_eq!(
            rows,
            [
                ("guest", "guest"),
                ("hypervisor", "hypervisor"),
                ("kernel", "[unknown mode]"),
                ("kernel", "[unknown]"),
                ("kernel", "alpha"),
                ("libc.so.6", "memcpy"),
                ("user", "[unknown mode]"),
            ]
        );
    }

    #[test]
    fn issue_30_unknown_rows_say_where_their_samples_fell() {
        let (mut a, mut b) = (ProfileBuilder::new(), ProfileBuilder::new());
        b.add_sample(0, (Mode::Kernel, 0xffffffff8f000040, 1), &Table, ("user", "user"));
        b.add_sample(0, (Mode::Kernel, 0xffffffff81000001, 1), &Table, ("user", "user"));
        let f = a.function("libjvm.so", "[unknown]");
        for addr in [0x7f0000002000, 0x7f0000001000] {
            a.add_period(1, f, 1);
            a.note_address(f, addr);
        }
        let g = a.function("kernel", "[unknown]");
        a.add_period(1, g, 1);
        a.note_address(g, 0xffffffff8f000000);
        b.merge(a);
        let p = b.finish(meta(), &IdleSet::new(vec![]), vec![]);
        assert_eq!(
            p.warnings,
            [
                "[unknown] [kernel]: 2 samples at 0xffffffff8f000000 to 0xffffffff8f000040, where no symbol is",
                "[unknown] [libjvm.so]: 2 samples at 0x7f0000001000 to 0x7f0000002000, where no symbol is",
            ]
        );
    }

    #[test]
    fn merged_pieces_add_up() {
        let (mut a, mut b) = (ProfileBuilder::new(), ProfileBuilder::new());
        a.add(0, "kernel", "x", 2, 2, 2.0);
        b.add(1, "kernel", "x", 3, 6, 12.0);
        b.lost(1, 7);
        a.merge(b);
        let p = a.finish(meta(), &IdleSet::new(vec![]), vec![]);
        assert_eq!(p.functions[0].per_cpu, [2, 3]);
        assert_eq!(p.functions[0].weight_per_cpu, [2, 6]);
        assert_eq!(p.functions[0].weight_sq, 14.0);
        assert_eq!(p.cpus[1].lost, 7);
    }

    #[test]
    fn squared_periods_sum_the_same_in_pieces_in_any_order() {
        // Squares past 2^53: summed as floating point, the total would depend on the order.
        let periods = [3_000_000_001u64, 1, 123_456_789, 3_000_000_019, 7, 1];
        let exact: u128 = periods.iter().map(|&p| u128::from(p) * u128::from(p)).sum();
        let mut whole = ProfileBuilder::new();
        let f = whole.function("kernel", "x");
        for &p in &periods {
            whole.add_period(0, f, p);
        }
        let (mut a, mut b) = (ProfileBuilder::new(), ProfileBuilder::new());
        let (fa, fb) = (a.function("kernel", "x"), b.function("kernel", "x"));
        for &p in periods[..2].iter().rev() {
            a.add_period(1, fa, p);
        }
        for &p in periods[2..].iter().rev() {
            b.add_period(0, fb, p);
        }
        b.merge(a);
        let idle = IdleSet::new(vec![]);
        let (w, m) = (whole.finish(meta(), &idle, vec![]), b.finish(meta(), &idle, vec![]));
        assert_eq!(w.functions[0].weight_sq, exact as f64);
        assert_eq!(m.functions[0].weight_sq.to_bits(), w.functions[0].weight_sq.to_bits());
        assert_eq!(m.functions[0].total(), 6);
    }
}
