//! Names of address ranges: PLT entries and a JIT's `/tmp/perf-PID.map`.

use crate::fsio::{self, Links};
use crate::model::code::{UserCode, JIT_MODULE};
use std::path::Path;

/// Names of address ranges that no symbol table holds (PLT entries, a JIT's code):
/// (start, end, name), sorted by start.
#[derive(Debug, Clone, Default)]
pub struct RangeNames(Vec<(u64, u64, String)>);

impl RangeNames {
    /// The ranges, in any order.
    pub fn new(mut ranges: Vec<(u64, u64, String)>) -> Self {
        ranges.sort_by_key(|r| r.0);
        RangeNames(ranges)
    }

    /// The name of the range holding `addr`.
    pub fn lookup(&self, addr: u64) -> Option<&str> {
        let i = self.0.partition_point(|r| r.0 <= addr).checked_sub(1)?;
        let (_, end, name) = &self.0[i];
        (addr < *end).then_some(name.as_str())
    }

    /// How many ranges.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// The most a perf map may hold.
pub const PERF_MAP_CAP: u64 = 256 << 20;

/// A JIT's symbol map (`/tmp/perf-PID.map`): every line that parses; `None` without one.
/// As perf, only a regular file owned by root or by this user is read (anyone may place a
/// file under that name in /tmp), of at most [`PERF_MAP_CAP`] bytes; unlike perf, never
/// through a symbolic link (one in /tmp may point at any file root can read).
pub fn load_perf_map(path: &Path) -> Option<RangeNames> {
    use std::os::unix::fs::MetadataExt;
    let file = fsio::open_regular(path, Links::Refuse).ok()?;
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    let owner = file.metadata().ok()?.uid();
    if owner != 0 && owner != me {
        return None;
    }
    let text = String::from_utf8(fsio::read_capped(file, PERF_MAP_CAP).ok()?).ok()?;
    Some(perf_map_names(&text, &path.display().to_string()))
}

/// The perf maps of a run's processes, by pid: their JIT code is named by them, under
/// module [`JIT_MODULE`].
#[derive(Debug, Clone, Default)]
pub struct PerfMaps(pub std::collections::HashMap<u32, RangeNames>);

impl UserCode for PerfMaps {
    fn resolve_user(&self, pid: u32, pc: u64) -> Option<(&str, &str)> {
        Some((JIT_MODULE, self.0.get(&pid)?.lookup(pc)?))
    }
}

/// The name of a process's perf map, as a JIT writes it in /tmp and a test directory
/// keeps it.
pub fn perf_map_name(pid: u32) -> String {
    format!("perf-{pid}.map")
}

/// The bytes of `/tmp/perf-PID.map` of process `pid`, which ran as `uid`: a regular file
/// (never through a link), owned by that user or root, of at most [`PERF_MAP_CAP`]
/// bytes; `None` without one.
pub fn read_process_perf_map(pid: u32, uid: u32) -> Option<Vec<u8>> {
    use std::os::unix::fs::MetadataExt;
    let path = Path::new("/tmp").join(perf_map_name(pid));
    let file = fsio::open_regular(&path, Links::Refuse).ok()?;
    let owner = file.metadata().ok()?.uid();
    if owner != 0 && owner != uid {
        return None;
    }
    fsio::read_capped(file, PERF_MAP_CAP).ok()
}

/// The names of a perf map's text (`path` names it in warnings): every line that parses.
pub fn perf_map_names(text: &str, path: &str) -> RangeNames {
    let map = upcmp_parsers::perf_map::read(text, path);
    RangeNames::new(
        map.entries
            .into_iter()
            .map(|e| (e.start, e.start.saturating_add(e.size), e.name.to_string()))
            .collect(),
    )
}

/// The perf maps a test directory keeps (`perf-PID.map`, written by uprun), by pid.
pub fn load_kept_perf_maps(test_dir: &Path) -> PerfMaps {
    let mut maps = PerfMaps::default();
    let Ok(entries) = std::fs::read_dir(test_dir) else {
        return maps;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("perf-")?.strip_suffix(".map")?.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(file) = fsio::open_regular(&e.path(), Links::Refuse) else {
            continue;
        };
        let Ok(bytes) = fsio::read_capped(file, PERF_MAP_CAP) else {
            continue;
        };
        let text = String::from_utf8_lossy(&bytes);
        maps.0
            .insert(pid, perf_map_names(&text, &e.path().display().to_string()));
    }
    maps
}
