//! The mappings of a recording: which file (a DSO, by build-id or path) covers a user
//! address of a process, as its MMAP records and forks said, and the symbols of each
//! file, loaded once a sample needs them.

use super::unwind::MappedFile;
use crate::model::profile::UNKNOWN_FUNCTION;
use crate::symbols::{demangle, load_user_symbols, FunctionAt, SymbolCache, UserSymbols, UserSymbolsMissing};
use std::collections::HashMap;
use std::sync::Arc;

/// One mapped file: its name as a module, and its symbols once a sample needs them.
#[derive(Clone)]
pub(super) struct Dso {
    pub(super) path: Vec<u8>,
    pub(super) module: String,
    pub(super) build_id: Option<Vec<u8>>,
    /// `None` until loaded; then the symbols, or why there are none.
    pub(super) symbols: Option<Result<Arc<UserSymbols>, UserSymbolsMissing>>,
}

/// Whether a mapping is anonymous memory, where a JIT puts its code (perf's
/// `is_anon_memory`).
pub(super) fn is_anon(path: &[u8]) -> bool {
    path.starts_with(b"//anon") || path.starts_with(b"/dev/zero") || path.starts_with(b"/anon_hugepage")
}

/// A place in a DSO: its index and the offset (or address) its symbols are looked up by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) struct Place {
    pub(super) dso: usize,
    pub(super) at: u64,
}

/// What names a user place ([`Maps::name_key`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum NameKey {
    /// An ELF file's function symbol: (DSO, symbol index).
    Symbol(usize, u32),
    /// Any other place.
    Place(Place),
}

/// A map with a fast hasher, for the per-sample caches (no untrusted keys to defend
/// against).
pub(super) type FastMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

/// An executable mapping of a process: `[start, end)`, its file offset and DSO.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Mapping {
    pub(super) start: u64,
    pub(super) end: u64,
    pub(super) pgoff: u64,
    pub(super) dso: usize,
}

/// A mapping found for an address, with how its places are named: what [`Maps::locate`]
/// gives for any address inside it, without looking it up again.
#[derive(Debug, Clone, Copy)]
pub(super) struct Located {
    pub(super) mapping: Mapping,
    /// A JIT's perf map names addresses; an ELF file, file offsets.
    pub(super) by_address: bool,
}

impl Located {
    /// The place of `ip`, when this mapping covers it.
    pub(super) fn place(&self, ip: u64) -> Option<Place> {
        let m = &self.mapping;
        (m.start <= ip && ip < m.end).then(|| Place {
            dso: m.dso,
            at: if self.by_address { ip } else { ip - m.start + m.pgoff },
        })
    }
}

/// A file's build-id (if known) and its index in [`Maps::dsos`].
pub(super) type BuildIdDso = (Option<Vec<u8>>, usize);

/// What is known of a path: the build-id the file's header gives it, and the files
/// mapped from it.
#[derive(Clone, Default)]
pub(super) struct PathDsos {
    pub(super) header_id: Option<Vec<u8>>,
    pub(super) dsos: Vec<BuildIdDso>,
}

/// The processes' executable mappings and the files behind them.
#[derive(Default)]
pub(super) struct Maps {
    /// pid → its mappings, sorted by start, none overlapping: a binary search finds an
    /// address's (a process maps tens to hundreds of files; a fork copies them whole).
    pub(super) by_pid: FastMap<i32, Vec<Mapping>>,
    pub(super) dsos: Vec<Dso>,
    /// path → its build-id from the file's header, and (build-id, index in `dsos`) of
    /// each file mapped from it: looked up once, by a borrowed path, so a mapping of a
    /// known file allocates nothing (a fork load maps some 4,600 files a second).
    pub(super) dso_index: FastMap<Vec<u8>, PathDsos>,
    /// Symbol name → as perf prints it.
    pub(super) demangled: FastMap<String, String>,
    /// (DSO, ELF symbol index) → its name as perf prints it (`None`: unreadable).
    pub(super) symbol_names: FastMap<(usize, u32), Option<String>>,
    /// Symbol tables shared with the imports beside this one.
    pub(super) shared: Option<SymbolCache>,
}

impl Maps {
    pub(super) fn add(&mut self, pid: i32, start: u64, len: u64, pgoff: u64, path: &[u8], build_id: Option<&[u8]>) {
        // JIT code in anonymous memory is named by the process's perf map, as perf does.
        let jit_map;
        let path = if is_anon(path) {
            jit_map = format!("/tmp/perf-{pid}.map").into_bytes();
            &jit_map[..]
        } else {
            path
        };
        let entry = self.dso_index.get(path);
        let id: Option<&[u8]> = build_id.or_else(|| entry?.header_id.as_deref());
        let known = entry
            .and_then(|e| e.dsos.iter().find(|(b, _)| b.as_deref() == id))
            .map(|&(_, i)| i);
        let i = match known {
            Some(i) => i,
            None => {
                let id = id.map(<[u8]>::to_vec);
                let name = String::from_utf8_lossy(path);
                self.dsos.push(Dso {
                    path: path.to_vec(),
                    module: super::module_of_dso(Some(&name), start).to_string(),
                    build_id: id.clone(),
                    symbols: None,
                });
                let i = self.dsos.len() - 1;
                self.dso_index.entry(path.to_vec()).or_default().dsos.push((id, i));
                i
            }
        };
        // As perf: a new mapping replaces whatever part of older ones it covers (after an
        // exec, or a re-mmap), so no address resolves through a stale mapping.
        let end = start.saturating_add(len);
        let maps = self.by_pid.entry(pid).or_default();
        // The mappings that overlap [start, end) are maps[first..last]. One of no length
        // (a damaged record) does as one keyed by its start would: it replaces a mapping
        // that starts there and cuts one that covers its start.
        let last = match end > start {
            true => maps.partition_point(|m| m.start < end),
            false => maps.partition_point(|m| m.start <= start),
        };
        let first = maps[..last].partition_point(|m| m.end <= start);
        // The mappings do not overlap: only the first of those can begin before `start`
        // and only the last can end after `end`; their parts outside stay.
        let head = maps[first..last]
            .first()
            .filter(|m| m.start < start)
            .map(|m| Mapping { end: start, ..*m });
        let tail = maps[first..last]
            .last()
            .filter(|m| m.end > end && end > start)
            .map(|m| Mapping {
                start: end,
                pgoff: m.pgoff + (end - m.start),
                ..*m
            });
        let new = Mapping {
            start,
            end,
            pgoff,
            dso: i,
        };
        match (head, tail, last - first) {
            // A new mapping, or one in place of another: no splice (a fork load maps four
            // files per process).
            (None, None, 0) => maps.insert(first, new),
            (None, None, 1) => maps[first] = new,
            _ => {
                maps.splice(first..last, head.into_iter().chain(std::iter::once(new)).chain(tail));
            }
        }
    }

    /// The executable mappings of `pid` and their files, for unwinding its stacks.
    pub(super) fn mapped_files(&self, pid: i32) -> Vec<MappedFile<'_>> {
        let Some(maps) = self.by_pid.get(&pid) else {
            return Vec::new();
        };
        maps.iter()
            .map(|m| {
                let d = &self.dsos[m.dso];
                MappedFile {
                    start: m.start,
                    end: m.end,
                    pgoff: m.pgoff,
                    dso: m.dso,
                    path: &d.path,
                    build_id: d.build_id.as_deref(),
                }
            })
            .collect()
    }

    /// A process exited: its mappings go.
    pub(super) fn exit(&mut self, pid: i32) {
        self.by_pid.remove(&pid);
    }

    /// A forked process starts with its parent's mappings.
    pub(super) fn fork(&mut self, parent: i32, child: i32) {
        if parent != child && !self.by_pid.contains_key(&child) {
            if let Some(m) = self.by_pid.get(&parent).cloned() {
                self.by_pid.insert(child, m);
            }
        }
    }

    /// The mapping of `pid` that covers `ip`, its DSO's symbols loaded the first time:
    /// what gives every address in it a place (see [`Located::place`]).
    pub(super) fn mapping(&mut self, pid: i32, ip: u64) -> Option<Located> {
        let mapping = self.covering(pid, ip)?;
        let dso = &mut self.dsos[mapping.dso];
        let symbols = dso.symbols.get_or_insert_with(|| match &self.shared {
            Some(cache) => cache.user(&dso.path, dso.build_id.as_deref()),
            None => load_user_symbols(&dso.path, dso.build_id.as_deref()).map(Arc::new),
        });
        let by_address = matches!(symbols.as_deref(), Ok(UserSymbols::PerfMap(_)));
        Some(Located { mapping, by_address })
    }

    /// The mapping of `pid` that covers `ip`, as mapped (no symbols loaded).
    pub(super) fn covering(&self, pid: i32, ip: u64) -> Option<Mapping> {
        let maps = self.by_pid.get(&pid)?;
        let m = *maps[..maps.partition_point(|m| m.start <= ip)].last()?;
        (ip < m.end).then_some(m)
    }

    /// What names `place`: its ELF function symbol, else the place itself. Places with
    /// one key have one name.
    pub(super) fn name_key(&self, place: Place) -> NameKey {
        match self.dsos[place.dso].symbols.as_ref().and_then(|s| s.as_deref().ok()) {
            Some(UserSymbols::Elf(syms)) => match syms.function_at(place.at) {
                Some(FunctionAt::Symbol(i)) => NameKey::Symbol(place.dso, i),
                _ => NameKey::Place(place),
            },
            _ => NameKey::Place(place),
        }
    }

    /// The module and function of a place named by `key` (from [`name_key`]):
    /// `[unknown]` when no symbol covers it. A function's name is read from its file
    /// once, however many places in it are sampled.
    ///
    /// [`name_key`]: Self::name_key
    pub(super) fn name(&mut self, key: NameKey) -> (&str, &str) {
        let place = match key {
            NameKey::Symbol(dso, i) => {
                let d = &self.dsos[dso];
                let name = self.symbol_names.entry((dso, i)).or_insert_with(|| {
                    let raw = match d.symbols.as_ref().and_then(|s| s.as_deref().ok()) {
                        Some(UserSymbols::Elf(syms)) => syms.symbol_name(i),
                        _ => None,
                    };
                    raw.as_deref().map(|r| demangle(r).unwrap_or_else(|| r.to_string()))
                });
                return (d.module.as_str(), name.as_deref().unwrap_or(UNKNOWN_FUNCTION));
            }
            NameKey::Place(place) => place,
        };
        let dso = &self.dsos[place.dso];
        // Not a function symbol: a PLT entry, a JIT's perf map entry, or nothing.
        let found = match dso.symbols.as_ref().and_then(|s| s.as_deref().ok()) {
            Some(UserSymbols::Elf(syms)) => match syms.function_at(place.at) {
                Some(FunctionAt::Plt(name)) => Some(name),
                _ => None,
            },
            Some(UserSymbols::PerfMap(names)) => names.lookup(place.at),
            None => None,
        };
        let name = match found {
            Some(raw) => {
                if !self.demangled.contains_key(raw) {
                    let d = demangle(raw).unwrap_or_else(|| raw.to_string());
                    self.demangled.insert(raw.to_string(), d);
                }
                self.demangled[raw].as_str()
            }
            None => UNKNOWN_FUNCTION,
        };
        (dso.module.as_str(), name)
    }

    /// The mappings, files and names as they are, for a second reader of the rest of the
    /// file.
    pub(super) fn for_second_reader(&self) -> Maps {
        Maps {
            by_pid: self.by_pid.clone(),
            dsos: self.dsos.clone(),
            dso_index: self.dso_index.clone(),
            demangled: self.demangled.clone(),
            symbol_names: self.symbol_names.clone(),
            shared: self.shared.clone(),
        }
    }

    /// The files and symbols of a second reader ([`for_second_reader`]): it met every
    /// mapping this one met, in the same order, so its files are this one's and more;
    /// each keeps the symbols either loaded.
    ///
    /// [`for_second_reader`]: Self::for_second_reader
    pub(super) fn absorb(&mut self, other: Maps) {
        let mine = std::mem::replace(&mut self.dsos, other.dsos);
        for (d, m) in self.dsos.iter_mut().zip(mine) {
            if d.symbols.is_none() {
                d.symbols = m.symbols;
            }
        }
    }

    /// DSOs that had samples but no symbols, by reason.
    pub(super) fn missing(&self, why: UserSymbolsMissing) -> Vec<String> {
        let mut v: Vec<String> = self
            .dsos
            .iter()
            .filter(|d| matches!(d.symbols, Some(Err(w)) if w == why))
            .map(|d| String::from_utf8_lossy(&d.path).into_owned())
            .collect();
        v.sort();
        v.dedup();
        v
    }
}
