//! Names of address ranges: PLT entries and a JIT's `/tmp/perf-PID.map`.

use crate::fsio::{self, Links};
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
    let name = path.display().to_string();
    let map = upcmp_parsers::perf_map::read(&text, &name);
    Some(RangeNames::new(
        map.entries
            .into_iter()
            .map(|e| (e.start, e.start.saturating_add(e.size), e.name.to_string()))
            .collect(),
    ))
}
