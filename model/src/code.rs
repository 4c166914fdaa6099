//! Kernel code that comes and goes while a profile is taken (BPF programs' JIT images,
//! BPF trampolines): the kernel announces each with a `PERF_RECORD_KSYMBOL`, and a
//! sample between a program's load and its unload is named as perf names it
//! (`bpf_prog_<tag>_<name>`, module `bpf` as kallsyms lists BPF programs).

use super::mode::Record;
use super::resolver::KernelResolver;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::hash::BuildHasher;
use upcmp_parsers::samples::{Ksymbol, KSYMBOL_TYPE_BPF};

/// The module of a BPF program, as `/proc/kallsyms` lists it (`[bpf]`).
pub const BPF_MODULE: &str = "bpf";

/// The kernel code symbols live at this point of a record stream, by start and not
/// overlapping: a register replaces what it overlaps, an unregister removes its symbol.
/// A record costs a search and what it removes: a file of N records is read in
/// O(N log N), whatever their order (a sorted vector's insert and a scan of every live
/// symbol per record made 300,000 of them take minutes).
#[derive(Debug, Clone, Default)]
pub struct LoadedCode {
    /// Start → (end, name, whether a BPF program).
    ranges: BTreeMap<u64, (u64, String, bool)>,
}

impl LoadedCode {
    /// Takes a `Ksymbol` record; other records are ignored. Returns the address range it
    /// changed, for the caller's caches of names by address.
    pub fn observe(&mut self, r: &Record) -> Option<std::ops::Range<u64>> {
        let Record::Ksymbol(k) = r else { return None };
        Some(self.apply(k))
    }

    fn apply(&mut self, k: &Ksymbol) -> std::ops::Range<u64> {
        let (start, end) = (k.addr, k.addr.saturating_add(u64::from(k.len).max(1)));
        // Whatever the new range overlaps is gone (code freed and its memory reused
        // without its unregister seen, or the symbol itself on unregister): the symbol
        // starting before it if it reaches into it (the ranges do not overlap, so no
        // other one can), and those starting inside it.
        if let Some((&s, _)) = self.ranges.range(..start).next_back().filter(|(_, r)| r.0 > start) {
            self.ranges.remove(&s);
        }
        while let Some((&s, _)) = self.ranges.range(start..end).next() {
            self.ranges.remove(&s);
        }
        // An empty range (at the top of the address space) names nothing.
        if !k.unregister && start < end {
            self.ranges
                .insert(start, (end, k.name.clone(), k.kind == KSYMBOL_TYPE_BPF));
        }
        start..end
    }

    /// How many symbols are live.
    pub fn len(&self) -> usize {
        self.ranges.len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// The symbol holding `pc` and its module (`bpf` for a BPF program, `None` for other
    /// kernel code).
    pub fn resolve(&self, pc: u64) -> Option<(&str, Option<&str>)> {
        let (_, (end, name, bpf)) = self.ranges.range(..=pc).next_back()?;
        (pc < *end).then_some((name.as_str(), bpf.then_some(BPF_MODULE)))
    }
}

/// What each address seen is named as, cached, and forgotten over a range when a
/// KSYMBOL record renames it: a hash map for the lookups beside the addresses in order,
/// so that forgetting costs what it removes, not a scan of the cache per record.
#[derive(Debug, Clone)]
pub struct AddressCache<V, S = std::collections::hash_map::RandomState> {
    map: HashMap<u64, V, S>,
    order: BTreeSet<u64>,
}

impl<V, S: Default> Default for AddressCache<V, S> {
    fn default() -> Self {
        AddressCache {
            map: HashMap::default(),
            order: BTreeSet::new(),
        }
    }
}

impl<V, S: BuildHasher> AddressCache<V, S> {
    /// What `addr` was cached as.
    pub fn get(&self, addr: u64) -> Option<&V> {
        self.map.get(&addr)
    }

    /// Caches `v` for `addr`.
    pub fn insert(&mut self, addr: u64, v: V) {
        if self.map.insert(addr, v).is_none() {
            self.order.insert(addr);
        }
    }

    /// Forgets the addresses of `range`.
    pub fn forget(&mut self, range: std::ops::Range<u64>) {
        while let Some(&a) = self.order.range(range.clone()).next() {
            self.order.remove(&a);
            self.map.remove(&a);
        }
    }

    /// How many addresses are cached.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

/// A kernel resolver that looks first at the code loaded while the profile was taken:
/// it is the newer knowledge (an address reused after a program's unload, code placed
/// where a table of the start named nothing).
pub struct WithLoadedCode<'a, K: ?Sized> {
    /// The code loaded so far.
    pub code: &'a LoadedCode,
    /// The kernel's symbols.
    pub kernel: &'a K,
}

impl<K: KernelResolver + ?Sized> KernelResolver for WithLoadedCode<'_, K> {
    fn resolve_kernel(&self, pc: u64) -> Option<(&str, Option<&str>)> {
        self.code.resolve(pc).or_else(|| self.kernel.resolve_kernel(pc))
    }
}

/// The module of user JIT code named by a perf map: one name whatever the process, so
/// that the runs of a comparison, whose processes have other pids, share their rows.
pub const JIT_MODULE: &str = "jit";

/// Names user PCs in JIT code (the perf maps of a run's processes).
pub trait UserCode {
    /// The module and function of `pc` in process `pid`; `None` where nothing names it.
    fn resolve_user(&self, pid: u32, pc: u64) -> Option<(&str, &str)>;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ksym(addr: u64, len: u32, unregister: bool, name: &str) -> Record {
        Record::Ksymbol(Ksymbol {
            addr,
            len,
            kind: KSYMBOL_TYPE_BPF,
            unregister,
            name: name.into(),
        })
    }

    #[test]
    fn a_program_is_named_between_its_load_and_its_unload() {
        let mut c = LoadedCode::default();
        assert_eq!(c.resolve(0xffffffffc0001010), None);
        c.observe(&ksym(0xffffffffc0001000, 0x40, false, "bpf_prog_0123456789abcdef_f"));
        assert_eq!(
            c.resolve(0xffffffffc0001010),
            Some(("bpf_prog_0123456789abcdef_f", Some("bpf")))
        );
        assert_eq!(c.resolve(0xffffffffc0001040), None);
        // Another program reuses part of the memory: the new one names it.
        c.observe(&ksym(0xffffffffc0001020, 0x40, false, "bpf_prog_fedcba9876543210_g"));
        assert_eq!(c.resolve(0xffffffffc0001010), None);
        assert_eq!(c.resolve(0xffffffffc0001030).unwrap().0, "bpf_prog_fedcba9876543210_g");
        let range = c.observe(&ksym(0xffffffffc0001020, 0x40, true, "bpf_prog_fedcba9876543210_g"));
        assert_eq!(range, Some(0xffffffffc0001020..0xffffffffc0001060));
        assert!(c.is_empty());
        assert_eq!(c.observe(&Record::Throttle { cpu: 0 }), None);
    }
}
