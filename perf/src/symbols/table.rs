//! The symbol table being built, read from an ELF file or from kallsyms: candidates,
//! their ends and perf's choice among aliases at one address. Both readers fill it
//! (`elf`, `kernel`), so it stands below both.

use std::collections::HashMap;

/// Module index of core-kernel entries.
pub(super) const CORE: u32 = u32::MAX;

/// The name starting at `at` in `data`, NUL-terminated before `end`; `None` if it is not
/// (or is not UTF-8).
pub(super) fn name_at(data: &[u8], at: usize, end: usize) -> Option<&str> {
    let bytes = data.get(at..end.min(data.len()))?;
    std::str::from_utf8(&bytes[..memchr::memchr(0, bytes)?]).ok()
}

/// How an ELF or kallsyms symbol is bound, for choosing among aliases.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Binding {
    Local,
    Global,
    Weak,
}

/// A symbol as read, before its end is known and aliases are dropped.
#[derive(Debug, Clone, Copy)]
pub(super) struct Candidate {
    pub(super) start: u64,
    /// Equal to `start` while unknown, as in perf.
    pub(super) end: u64,
    pub(super) binding: Binding,
    /// In the builder's names, or in its data.
    pub(super) name: u64,
    pub(super) name_len: u32,
    pub(super) module: u32,
    pub(super) text: bool,
}

/// Collects candidates and applies perf's fix-ups.
#[derive(Default)]
pub(super) struct Builder<'d> {
    pub(super) names: String,
    /// Where the names are when they are not copied into `names`: an ELF file's bytes
    /// (see [`Builder::over`]); candidates then hold offsets into it.
    pub(super) data: Option<&'d [u8]>,
    pub(super) modules: Vec<String>,
    pub(super) module_ids: HashMap<String, u32>,
    pub(super) candidates: Vec<Candidate>,
}

/// A kept ELF symbol: where it ends, and where its NUL-terminated name starts in the
/// file.
#[derive(Debug, Clone, Copy)]
pub(super) struct Span {
    pub end: u64,
    pub name: u64,
}

impl<'d> Builder<'d> {
    /// A builder whose names stay in `data` (added with [`push_in_data`]), not copied.
    ///
    /// [`push_in_data`]: Self::push_in_data
    pub(super) fn over(data: &'d [u8]) -> Self {
        Builder {
            data: Some(data),
            ..Builder::default()
        }
    }

    /// [`push`](Self::push) of a core symbol whose name is a part of the builder's data,
    /// starting at `name_at` (NUL-terminated, read only if an alias asks for it).
    pub(super) fn push_in_data(&mut self, start: u64, end: u64, binding: Binding, name_at: usize) {
        self.candidates.push(Candidate {
            start,
            end,
            binding,
            name: name_at as u64,
            name_len: 0,
            module: CORE,
            text: true,
        });
    }

    /// The starts and spans of the kept candidates of a builder [`over`](Self::over) data.
    pub(super) fn into_spans(self) -> (Vec<u64>, Vec<Span>) {
        let starts = self.candidates.iter().map(|c| c.start).collect();
        let spans = self
            .candidates
            .iter()
            .map(|c| Span {
                end: c.end,
                name: c.name,
            })
            .collect();
        (starts, spans)
    }

    fn module_id(&mut self, module: Option<&str>) -> u32 {
        let Some(module) = module else { return CORE };
        if let Some(&id) = self.module_ids.get(module) {
            return id;
        }
        let id = self.modules.len() as u32;
        self.modules.push(module.to_string());
        self.module_ids.insert(module.to_string(), id);
        id
    }

    pub(super) fn push(
        &mut self,
        start: u64,
        end: u64,
        binding: Binding,
        name: &str,
        module: Option<&str>,
        text: bool,
    ) {
        let module = self.module_id(module);
        let offset = self.names.len() as u64;
        self.names.push_str(name);
        self.candidates.push(Candidate {
            start,
            end,
            binding,
            name: offset,
            name_len: name.len() as u32,
            module,
            text,
        });
    }

    pub(super) fn name(&self, c: &Candidate) -> &str {
        let (at, len) = (c.name as usize, c.name_len as usize);
        match self.data {
            // A name that is not one (no NUL, not UTF-8) is as good as none among aliases.
            Some(data) => name_at(data, at, data.len()).unwrap_or(""),
            None => &self.names[at..at + len],
        }
    }

    /// Sorts, gives zero-sized symbols an end, and keeps one symbol per address, in that
    /// order as perf does (so an alias's length takes part in choosing among aliases).
    pub(super) fn fix_up(&mut self, is_kallsyms: bool) {
        // Stable: among equal addresses perf's tree keeps insertion (file) order.
        sort_by_start(&mut self.candidates);
        fixup_end(&mut self.candidates, is_kallsyms);
        let mut kept: Vec<Candidate> = Vec::with_capacity(self.candidates.len());
        for c in &self.candidates {
            match kept.last_mut() {
                Some(best) if best.start == c.start => {
                    if choose_best(self, best, c) == Choice::B {
                        *best = *c;
                    }
                }
                _ => kept.push(*c),
            }
        }
        self.candidates = kept;
    }
}

/// Sorts candidates by start, those of one start in the order they came (a stable sort):
/// by (start, place) pairs, a sixth of a candidate's size, then gathered (a library's
/// hundreds of thousands of symbols are sorted in half the time).
pub(super) fn sort_by_start(c: &mut Vec<Candidate>) {
    if c.windows(2).all(|w| w[0].start <= w[1].start) {
        return;
    }
    let mut order: Vec<(u64, u32)> = c.iter().enumerate().map(|(i, c)| (c.start, i as u32)).collect();
    order.sort_unstable();
    *c = order.into_iter().map(|(_, i)| c[i as usize]).collect();
}

/// perf's `symbols__fixup_end`: a symbol without size ends where the next one starts; in
/// kallsyms, the last symbol before a switch between core kernel and module ends at the
/// next page boundary past one page, and the very last symbol one page past its page.
fn fixup_end(c: &mut [Candidate], is_kallsyms: bool) {
    for i in 1..c.len() {
        let (prev, curr) = (c[i - 1], c[i]);
        if prev.end == prev.start {
            c[i - 1].end = if is_kallsyms && ((prev.module == CORE) != (curr.module == CORE)) {
                roundup_page(prev.end.saturating_add(4096))
            } else {
                curr.start
            };
        }
    }
    if let Some(last) = c.last_mut() {
        if last.end == last.start {
            last.end = roundup_page(last.start).saturating_add(4096);
        }
    }
}

fn roundup_page(x: u64) -> u64 {
    x.div_ceil(4096).saturating_mul(4096)
}

#[derive(Debug, PartialEq, Eq)]
enum Choice {
    A,
    B,
}

/// perf's `choose_best_symbol` for two symbols at one address: prefer non-zero length,
/// then non-weak, then global, then fewer leading underscores, then the longer name, then
/// anything but a `SyS` syscall alias, then the first.
fn choose_best(b: &Builder<'_>, a_sym: &Candidate, b_sym: &Candidate) -> Choice {
    let (la, lb) = (a_sym.end - a_sym.start, b_sym.end - b_sym.start);
    if lb == 0 && la > 0 {
        return Choice::A;
    }
    if la == 0 && lb > 0 {
        return Choice::B;
    }
    let (wa, wb) = (a_sym.binding == Binding::Weak, b_sym.binding == Binding::Weak);
    if wb && !wa {
        return Choice::A;
    }
    if wa && !wb {
        return Choice::B;
    }
    let (ga, gb) = (a_sym.binding == Binding::Global, b_sym.binding == Binding::Global);
    if ga && !gb {
        return Choice::A;
    }
    if gb && !ga {
        return Choice::B;
    }
    let (na, nb) = (b.name(a_sym), b.name(b_sym));
    let underscores = |s: &str| s.bytes().take_while(|&c| c == b'_').count();
    match underscores(na).cmp(&underscores(nb)) {
        std::cmp::Ordering::Less => return Choice::A,
        std::cmp::Ordering::Greater => return Choice::B,
        std::cmp::Ordering::Equal => {}
    }
    match na.len().cmp(&nb.len()) {
        std::cmp::Ordering::Greater => return Choice::A,
        std::cmp::Ordering::Less => return Choice::B,
        std::cmp::Ordering::Equal => {}
    }
    if na.starts_with("SyS") || na.starts_with("compat_SyS") {
        return Choice::B;
    }
    Choice::A
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn choose_best_rules_between_zero_length_aliases_and_sized_symbols() {
        let mut b = Builder::default();
        let mk = |b: &mut Builder<'_>, name: &str, binding, len: u64| {
            b.push(0x1000, 0x1000 + len, binding, name, None, true);
            *b.candidates.last().unwrap()
        };
        let weak = mk(&mut b, "w", Binding::Weak, 0);
        let global = mk(&mut b, "g", Binding::Global, 0);
        let local = mk(&mut b, "l", Binding::Local, 0);
        let sized_local = mk(&mut b, "l", Binding::Local, 16);
        let under = mk(&mut b, "__g", Binding::Global, 0);
        let longer = mk(&mut b, "gg", Binding::Global, 0);
        let sys = mk(&mut b, "SyS_x", Binding::Global, 0);
        let sys2 = mk(&mut b, "sys_x", Binding::Global, 0);
        assert_eq!(choose_best(&b, &global, &sized_local), Choice::B);
        assert_eq!(choose_best(&b, &weak, &local), Choice::B);
        assert_eq!(choose_best(&b, &local, &global), Choice::B);
        assert_eq!(choose_best(&b, &under, &global), Choice::B);
        assert_eq!(choose_best(&b, &longer, &global), Choice::A);
        assert_eq!(choose_best(&b, &sys, &sys2), Choice::B);
        assert_eq!(choose_best(&b, &sys2, &sys), Choice::A);
    }
}
