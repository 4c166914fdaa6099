//! `perf.data` → [`Profile`], read with the `linux-perf-data` crate.
//!
//! Kernel PCs are named with [`KernelSymbols`], as in a live run. The symbols are, in
//! order: `--vmlinux`/`--kallsyms` when given; the kallsyms perf saved in its build-id
//! cache (`~/.debug/[kernel.kallsyms]/BUILD_ID/kallsyms`, or under `$PERF_BUILDID_DIR`);
//! this machine's `/proc/kallsyms` when the file's kernel build-id is the running
//! kernel's (or, without a build-id, its release is). User PCs are named from the ELF file
//! behind their mapping (perf's build-id cache, a separate debug file, or the file itself
//! when it is the recorded build), under the DSO's file name as module; `[unknown]` when
//! no file or symbol is found.

use super::{
    is_kernel_address, is_time_event, test_name, Counts, ImportError, ImportOptions, Imported, StackCollector,
};
use crate::collect::profile::ProfileMeta;
use crate::collect::stacks::{context_mode, PERF_CONTEXT_MAX};
use crate::collect::symbols::{running_kernel_build_id, ElfSymbols, KernelSymbols, RangeNames};
use linux_perf_data::linux_perf_event_reader::{CpuMode, EventRecord, Mmap2FileId, SamplingPolicy};
use linux_perf_data::{DsoKey, PerfFileReader, PerfFileRecord};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use upcmp_parsers::samples::Mode;

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// perf's build-id cache directory.
fn buildid_dir() -> Option<PathBuf> {
    std::env::var_os("PERF_BUILDID_DIR")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".debug")))
}

fn kernel_symbols(
    path: &Path,
    opts: &ImportOptions,
    build_id: Option<&[u8]>,
    release: Option<&str>,
) -> Result<(KernelSymbols, Option<String>), ImportError> {
    let kallsyms = |p: &Path| KernelSymbols::from_kallsyms_file(p);
    let with_vmlinux = |k: KernelSymbols| -> Result<KernelSymbols, ImportError> {
        match &opts.vmlinux {
            // The recording's build-id, not the running kernel's, is what the ELF must match.
            Some(v) => Ok(KernelSymbols::from_vmlinux(v, &k, build_id, false)?),
            None => Ok(k),
        }
    };
    if let Some(k) = &opts.kallsyms {
        return Ok((with_vmlinux(kallsyms(k)?)?, None));
    }
    if let (Some(id), Some(dir)) = (build_id, buildid_dir()) {
        let cached = dir.join("[kernel.kallsyms]").join(hex(id)).join("kallsyms");
        if cached.is_file() {
            return Ok((with_vmlinux(kallsyms(&cached)?)?, None));
        }
    }
    let running = running_kernel_build_id();
    let this_release = std::fs::read_to_string("/proc/sys/kernel/osrelease").ok();
    let proc = Path::new("/proc/kallsyms");
    match (build_id, running.as_deref()) {
        (Some(id), Some(r)) if id == r => Ok((with_vmlinux(kallsyms(proc)?)?, None)),
        (Some(id), _) => Err(ImportError::NoKernelSymbols {
            path: path.to_path_buf(),
            why: format!(
                "recorded on another kernel (build-id {}{}), whose kallsyms is not in perf's build-id cache",
                hex(id),
                release.map(|r| format!(", release {r}")).unwrap_or_default()
            ),
        }),
        (None, _) if release.is_some() && release.map(str::trim) == this_release.as_deref().map(str::trim) => Ok((
            with_vmlinux(kallsyms(proc)?)?,
            Some(
                "the recording names no kernel build-id; /proc/kallsyms of this machine (same release) is used".into(),
            ),
        )),
        (None, _) => Err(ImportError::NoKernelSymbols {
            path: path.to_path_buf(),
            why: "the recording names neither a kernel build-id nor this machine's kernel release".into(),
        }),
    }
}

/// The sampling mode in the collector's terms, so both read call chains alike.
fn mode_of(m: CpuMode) -> Mode {
    match m {
        CpuMode::Kernel => Mode::Kernel,
        CpuMode::User => Mode::User,
        CpuMode::Hypervisor => Mode::Hypervisor,
        CpuMode::GuestKernel => Mode::GuestKernel,
        CpuMode::GuestUser => Mode::GuestUser,
        _ => Mode::Unknown,
    }
}

/// A call chain's frame names in one reused buffer: no allocation per frame.
#[derive(Default)]
struct Names {
    text: String,
    ends: Vec<usize>,
}

impl Names {
    fn clear(&mut self) {
        self.text.clear();
        self.ends.clear();
    }

    fn push(&mut self, name: &str) {
        self.text.push_str(name);
        self.ends.push(self.text.len());
    }

    /// The names, last pushed first.
    fn rev(&self) -> impl Iterator<Item = &str> {
        (0..self.ends.len()).rev().map(|k| {
            let start = if k == 0 { 0 } else { self.ends[k - 1] };
            &self.text[start..self.ends[k]]
        })
    }
}

/// One mapped file: its name as a module, and its symbols once a sample needs them.
struct Dso {
    path: Vec<u8>,
    module: String,
    build_id: Option<Vec<u8>>,
    /// `None` until loaded; then the symbols, or why there are none.
    symbols: Option<Result<UserSymbols, UserSymbolsMissing>>,
}

/// Where a DSO's function names come from.
enum UserSymbols {
    /// An ELF file, looked up by file offset.
    Elf(Box<ElfSymbols>),
    /// A JIT's `/tmp/perf-PID.map`, looked up by address.
    PerfMap(RangeNames),
}

/// Whether a mapping is anonymous memory, where a JIT puts its code (perf's
/// `is_anon_memory`).
fn is_anon(path: &[u8]) -> bool {
    path.starts_with(b"//anon") || path.starts_with(b"/dev/zero") || path.starts_with(b"/anon_hugepage")
}

/// A JIT's symbol map (`/tmp/perf-PID.map`): every line that parses; `None` without one.
fn load_perf_map(path: &Path) -> Option<RangeNames> {
    let text = std::fs::read_to_string(path).ok()?;
    let name = path.display().to_string();
    let map = upcmp_parsers::perf_map::read(&text, &name);
    Some(RangeNames::new(
        map.entries
            .into_iter()
            .map(|e| (e.start, e.start.saturating_add(e.size), e.name.to_string()))
            .collect(),
    ))
}

/// Why a DSO's user samples stay `[unknown]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum UserSymbolsMissing {
    /// No file: neither in perf's build-id cache nor at its path.
    NoFile,
    /// The file at its path is another build than the one recorded.
    OtherBuild,
}

/// The processes' executable mappings and the files behind them.
#[derive(Default)]
struct Maps {
    /// pid → start → (end, page offset, DSO index).
    by_pid: HashMap<i32, std::collections::BTreeMap<u64, (u64, u64, usize)>>,
    dsos: Vec<Dso>,
    dso_index: HashMap<(Vec<u8>, Option<Vec<u8>>), usize>,
    /// Build-ids from the file's header, by path.
    header_ids: HashMap<Vec<u8>, Vec<u8>>,
    /// Symbol name → as perf prints it.
    demangled: HashMap<String, String>,
}

impl Maps {
    fn add(&mut self, pid: i32, start: u64, len: u64, pgoff: u64, path: &[u8], build_id: Option<Vec<u8>>) {
        // JIT code in anonymous memory is named by the process's perf map, as perf does.
        let jit_map;
        let path = if is_anon(path) {
            jit_map = format!("/tmp/perf-{pid}.map").into_bytes();
            &jit_map[..]
        } else {
            path
        };
        let build_id = build_id.or_else(|| self.header_ids.get(path).cloned());
        let key = (path.to_vec(), build_id);
        let i = match self.dso_index.get(&key) {
            Some(&i) => i,
            None => {
                let name = String::from_utf8_lossy(path);
                self.dsos.push(Dso {
                    path: key.0.clone(),
                    module: super::module_of_dso(Some(&name), start).to_string(),
                    build_id: key.1.clone(),
                    symbols: None,
                });
                self.dso_index.insert(key, self.dsos.len() - 1);
                self.dsos.len() - 1
            }
        };
        // As perf: a new mapping replaces whatever part of older ones it covers (after an
        // exec, or a re-mmap), so no address resolves through a stale mapping.
        let end = start.saturating_add(len);
        let maps = self.by_pid.entry(pid).or_default();
        let overlapping: Vec<u64> = maps
            .range(..end)
            .rev()
            .take_while(|(_, &(e, _, _))| e > start)
            .map(|(&s, _)| s)
            .collect();
        for s in overlapping {
            let (e, pg, d) = maps.remove(&s).expect("listed above");
            if s < start {
                maps.insert(s, (start, pg, d));
            }
            if e > end {
                maps.insert(end, (e, pg + (end - s), d));
            }
        }
        maps.insert(start, (end, pgoff, i));
    }

    /// A forked process starts with its parent's mappings.
    fn fork(&mut self, parent: i32, child: i32) {
        if parent != child && !self.by_pid.contains_key(&child) {
            if let Some(m) = self.by_pid.get(&parent).cloned() {
                self.by_pid.insert(child, m);
            }
        }
    }

    /// The module and function of a user address of `pid`: `[unknown]` when no symbol
    /// covers it; `None` when no mapping does.
    fn resolve(&mut self, pid: i32, ip: u64) -> Option<(&str, &str)> {
        let (&start, &(end, pgoff, i)) = self.by_pid.get(&pid)?.range(..=ip).next_back()?;
        if ip >= end {
            return None;
        }
        let dso = &mut self.dsos[i];
        let symbols = dso
            .symbols
            .get_or_insert_with(|| load_user_symbols(&dso.path, dso.build_id.as_deref()));
        let found = match symbols {
            Ok(UserSymbols::Elf(syms)) => syms.resolve_offset(ip - start + pgoff),
            Ok(UserSymbols::PerfMap(names)) => names.lookup(ip),
            Err(_) => None,
        };
        let name = match found {
            Some(raw) => {
                if !self.demangled.contains_key(raw) {
                    let d = demangle(raw).unwrap_or_else(|| raw.to_string());
                    self.demangled.insert(raw.to_string(), d);
                }
                self.demangled[raw].as_str()
            }
            None => "[unknown]",
        };
        Some((dso.module.as_str(), name))
    }

    /// DSOs that had samples but no symbols, by reason.
    fn missing(&self, why: UserSymbolsMissing) -> Vec<String> {
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

/// A user DSO's symbols: a JIT's perf map, or an ELF file's.
fn load_user_symbols(path: &[u8], build_id: Option<&[u8]>) -> Result<UserSymbols, UserSymbolsMissing> {
    use std::os::unix::ffi::OsStrExt;
    let local = Path::new(std::ffi::OsStr::from_bytes(path));
    if path.starts_with(b"/tmp/perf-") && path.ends_with(b".map") {
        return load_perf_map(local)
            .map(UserSymbols::PerfMap)
            .ok_or(UserSymbolsMissing::NoFile);
    }
    load_elf_symbols(local, build_id).map(|s| UserSymbols::Elf(Box::new(s)))
}

/// An ELF DSO's symbols, from the first of these files that has a `.symtab` (else the
/// first with a `.dynsym`), as perf chooses: the separate debug file
/// (`/usr/lib/debug/.build-id/ab/cdef….debug`), perf's build-id cache
/// (`~/.debug/.build-id/ab/cdef…/elf`), the file at its path. A file whose build-id is not
/// the recorded one is never used.
fn load_elf_symbols(local: &Path, build_id: Option<&[u8]>) -> Result<ElfSymbols, UserSymbolsMissing> {
    let build_id = build_id.filter(|id| !id.is_empty());
    let mut candidates = Vec::new();
    if let Some(id) = build_id {
        let h = hex(id);
        candidates.push(PathBuf::from(format!(
            "/usr/lib/debug/.build-id/{}/{}.debug",
            &h[..2],
            &h[2..]
        )));
        if let Some(d) = buildid_dir() {
            candidates.push(d.join(".build-id").join(&h[..2]).join(&h[2..]).join("elf"));
        }
    }
    if local.is_absolute() {
        candidates.push(local.to_path_buf());
    }
    let mut why = UserSymbolsMissing::NoFile;
    let mut found: Vec<ElfSymbols> = Vec::new();
    let full = |s: &ElfSymbols| s.from_symtab() && !s.is_empty();
    for p in candidates {
        let Ok(syms) = ElfSymbols::from_file(&p) else {
            continue;
        };
        match (build_id, syms.build_id()) {
            (Some(want), Some(have)) if want != have => why = UserSymbolsMissing::OtherBuild,
            _ => found.push(syms),
        }
        // Enough once there is a .symtab and a file that holds the code.
        if found.iter().any(full) && found.iter().any(ElfSymbols::maps_code) {
            break;
        }
    }
    let best = found
        .iter()
        .position(full)
        .or_else(|| found.iter().position(|s| !s.is_empty()))
        .ok_or(why)?;
    let mut syms = found.swap_remove(best);
    if !syms.maps_code() {
        let code = found.iter().find(|s| s.maps_code()).ok_or(why)?;
        syms.use_segments_of(code);
    }
    Ok(syms)
}

/// A symbol name as perf prints it: C++ and Rust names demangled, without parameters and
/// without Rust's hash.
fn demangle(name: &str) -> Option<String> {
    // LLVM's `.llvm.NNNN` suffix on local copies is not part of the mangled name.
    let base = name.find(".llvm.").map_or(name, |at| &name[..at]);
    if base.starts_with("_R") || (base.starts_with("_ZN") && is_legacy_rust(base)) {
        let d = rustc_demangle::try_demangle(base).ok()?;
        return Some(format!("{d:#}"));
    }
    if base.starts_with("_Z") {
        let sym = cpp_demangle::Symbol::new(base).ok()?;
        let opts = cpp_demangle::DemangleOptions::new().no_params().no_return_type();
        // An empty template parameter pack prints as `, >`; perf prints `>`.
        return sym.demangle(&opts).ok().map(|d| d.replace(", >", ">"));
    }
    None
}

/// A legacy Rust name ends in a 16-digit hash component: `…17h0123456789abcdefE`.
fn is_legacy_rust(name: &str) -> bool {
    name.strip_suffix('E')
        .and_then(|n| n.get(n.len().saturating_sub(19)..))
        .and_then(|h| h.strip_prefix("17h"))
        .is_some_and(|h| h.bytes().all(|b| b.is_ascii_hexdigit()))
}

fn perf_err(path: &Path) -> impl Fn(linux_perf_data::Error) -> ImportError + '_ {
    move |e| {
        let cut_short =
            matches!(&e, linux_perf_data::Error::IoError(io) if io.kind() == std::io::ErrorKind::UnexpectedEof);
        let reason = match std::fs::metadata(path) {
            Ok(m) if cut_short => format!(
                "it stops at byte {} in the middle of a header or record (truncated? perf record still running?)",
                m.len()
            ),
            _ => e.to_string(),
        };
        ImportError::PerfData {
            path: path.to_path_buf(),
            reason,
        }
    }
}

/// Reads a perf.data file.
pub fn read(path: &Path, opts: &ImportOptions) -> Result<Imported, ImportError> {
    let file = std::fs::File::open(path).map_err(ImportError::io(path))?;
    let reader = std::io::BufReader::with_capacity(1 << 16, file);
    let PerfFileReader {
        mut perf_file,
        mut record_iter,
    } = PerfFileReader::parse_file(reader).map_err(perf_err(path))?;

    // One event per profile: the first that samples (perf adds `dummy` events for
    // side-band records).
    let attrs = perf_file.event_attributes();
    let Some(event_index) = attrs.iter().position(|a| {
        !matches!(a.attributes().sampling_policy, SamplingPolicy::NoSampling)
            && a.name() != Some("dummy:u")
            && a.name() != Some("dummy")
    }) else {
        return Err(ImportError::NoSamples {
            path: path.to_path_buf(),
            hint: " (the recording has no sampling event)",
        });
    };
    let event = attrs[event_index]
        .name()
        .map(|n| n.split(':').next().unwrap_or(n).to_string())
        .unwrap_or_else(|| "cpu-clock".into());
    let policy = attrs[event_index].attributes().sampling_policy;
    let other_events = attrs.len() > 1;

    let build_ids = perf_file.build_ids().map_err(perf_err(path))?;
    let kernel_id = build_ids.get(&DsoKey::Kernel).map(|d| d.build_id.clone());
    let release = perf_file.os_release().map_err(perf_err(path))?.map(str::to_string);
    let cmdline = perf_file.cmdline().map_err(perf_err(path))?.map(|c| c.join(" "));
    let online = perf_file.nr_cpus().map_err(perf_err(path))?.map(|n| n.nr_cpus_online);
    let (symbols, symbols_note) = kernel_symbols(path, opts, kernel_id.as_deref(), release.as_deref())?;

    let mut counts = Counts::default();
    for c in 0..online.unwrap_or(0) {
        counts.ensure_cpu(c);
    }
    let mut maps = Maps::default();
    for (key, info) in &build_ids {
        match key {
            DsoKey::User { full_path, .. } => {
                maps.header_ids.insert(full_path.clone(), info.build_id.clone());
            }
            DsoKey::Vdso32 | DsoKey::VdsoX32 | DsoKey::Vdso64 => {
                maps.header_ids
                    .insert(key.name().as_bytes().to_vec(), info.build_id.clone());
            }
            _ => {}
        }
    }
    let mut user_unmapped = 0u64;
    let mut stacks = StackCollector::new(opts.stacks);
    // Thread id → command, for the stacks' root frame.
    let mut comms: HashMap<i32, String> = HashMap::new();
    let mut chain_names = Names::default();
    let (mut first, mut last) = (u64::MAX, 0u64);
    let (mut period_sum, mut with_period, mut skipped) = (0u128, 0u64, 0u64);
    while let Some(record) = record_iter.next_record(&mut perf_file).map_err(perf_err(path))? {
        let PerfFileRecord::EventRecord { attr_index, record } = record else {
            continue;
        };
        let parsed = record.parse().map_err(|e| perf_err(path)(e.into()))?;
        match parsed {
            EventRecord::Sample(s) if attr_index == event_index => {
                let cpu = s.cpu.unwrap_or(0);
                if let Some(t) = s.timestamp {
                    first = first.min(t);
                    last = last.max(t);
                }
                if let Some(p) = s.period {
                    period_sum += u128::from(p);
                    with_period += 1;
                }
                let (ip, pid, mode) = (s.ip.unwrap_or(0), s.pid.unwrap_or(-1), mode_of(s.cpu_mode));
                if let (true, Some(chain)) = (stacks.wanted(), &s.callchain) {
                    chain_names.clear();
                    let mut mode = mode;
                    for addr in (0..chain.len()).filter_map(|k| chain.get(k)) {
                        if addr >= PERF_CONTEXT_MAX {
                            mode = context_mode(addr, mode);
                            continue;
                        }
                        chain_names.push(match mode {
                            Mode::Kernel => symbols.resolve(addr).map_or("[unknown]", |(n, _)| n),
                            Mode::User => maps.resolve(pid, addr).map_or("[unknown]", |(_, n)| n),
                            Mode::Hypervisor => "hypervisor",
                            Mode::GuestKernel | Mode::GuestUser => "guest",
                            Mode::Unknown => "[unknown mode]",
                        });
                    }
                    let comm = comms
                        .get(&s.tid.unwrap_or(-1))
                        .map(String::as_str)
                        .unwrap_or("[unknown]");
                    stacks.add(Some(comm), chain_names.rev(), 1);
                }
                match mode {
                    Mode::Kernel => match symbols.resolve(ip) {
                        Some((name, module)) => counts.add(cpu, module.unwrap_or("kernel"), name, 1),
                        None => counts.add(cpu, "kernel", "[unknown]", 1),
                    },
                    Mode::User => match maps.resolve(pid, ip) {
                        Some((module, name)) => counts.add(cpu, module, name, 1),
                        None => {
                            user_unmapped += 1;
                            counts.add(cpu, "unknown", "[unknown]", 1);
                        }
                    },
                    Mode::Hypervisor => counts.add(cpu, "hypervisor", "hypervisor", 1),
                    Mode::GuestKernel | Mode::GuestUser => counts.add(cpu, "guest", "guest", 1),
                    Mode::Unknown if is_kernel_address(ip) => counts.add(cpu, "kernel", "[unknown mode]", 1),
                    Mode::Unknown => counts.add(cpu, "user", "[unknown mode]", 1),
                }
            }
            EventRecord::Sample(_) => skipped += 1,
            EventRecord::Comm(c) => {
                comms.insert(c.tid, String::from_utf8_lossy(&c.name.as_slice()).into_owned());
            }
            EventRecord::Fork(f) => {
                maps.fork(f.ppid, f.pid);
                // A new thread or process has its parent's command until it sets its own.
                if let Some(c) = comms.get(&f.ptid).cloned() {
                    comms.entry(f.tid).or_insert(c);
                }
            }
            EventRecord::Mmap(m) if m.is_executable => {
                maps.add(m.pid, m.address, m.length, m.page_offset, &m.path.as_slice(), None)
            }
            EventRecord::Mmap2(m) if m.protection & 4 != 0 => {
                let id = match &m.file_id {
                    Mmap2FileId::BuildId(id) => Some(id.clone()),
                    Mmap2FileId::InodeAndVersion(_) => None,
                };
                maps.add(m.pid, m.address, m.length, m.page_offset, &m.path.as_slice(), id)
            }
            EventRecord::Lost(l) => {
                let cpu = record.common_data().ok().and_then(|c| c.cpu).unwrap_or(0);
                counts.lost(cpu, l.count);
            }
            _ => {}
        }
    }
    let samples = counts.samples();
    if samples == 0 {
        return Err(ImportError::NoSamples {
            path: path.to_path_buf(),
            hint: " (the recording has no samples of its first event)",
        });
    }
    let mut warnings = Vec::new();
    warnings.extend(symbols_note);
    let other_build = maps.missing(UserSymbolsMissing::OtherBuild);
    if !other_build.is_empty() {
        warnings.push(format!(
            "user functions of {} are [unknown]: the file there is another build than the one recorded, \
             and perf's build-id cache has no copy (record without --no-buildid-cache, or run perf buildid-cache --add)",
            other_build.join(", ")
        ));
    }
    if user_unmapped > 0 {
        warnings.push(format!(
            "{user_unmapped} user samples fell outside every recorded mapping: counted as [unknown] [unknown]"
        ));
    }
    if other_events && skipped > 0 {
        warnings.push(format!("{skipped} samples of events other than {event} are left out"));
    }
    let cpus = counts.cpu_count() as f64;
    let range_sec = if first <= last {
        (last - first) as f64 * 1e-9
    } else {
        0.0
    };
    let period_sec = match (opts.period_sec, policy) {
        (Some(p), _) => p,
        _ if with_period > 0 && is_time_event(&event) => period_sum as f64 / with_period as f64 * 1e-9,
        (None, SamplingPolicy::Period(n)) if is_time_event(&event) => n.get() as f64 * 1e-9,
        (None, SamplingPolicy::Frequency(f)) if is_time_event(&event) && f > 0 => 1.0 / f as f64,
        _ => {
            warnings.push(format!(
                "{event} is not a time event: one sample is taken as the time range x CPUs / samples"
            ));
            range_sec * cpus / samples as f64
        }
    };
    let wall_sec = range_sec + period_sec;
    let profile = counts.finish(
        ProfileMeta {
            test: test_name(path),
            command: cmdline,
            event,
            period_sec,
            wall_sec,
        },
        warnings,
    );
    Ok(Imported {
        profile,
        stacks: stacks.finish(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_demangled_as_perf_prints_them() {
        // C++: no parameters, no return type; an empty parameter pack prints nothing.
        assert_eq!(
            demangle("_ZN4llvm15InstCombinePass3runERNS_8FunctionE").as_deref(),
            Some("llvm::InstCombinePass::run")
        );
        assert_eq!(demangle("_ZN3foo3barIiJEEEvv").as_deref(), Some("foo::bar<int>"));
        // Rust, legacy with its hash and v0, without the hash; an LLVM clone suffix dropped.
        assert_eq!(
            demangle("_ZN4core3fmt5write17h0123456789abcdefE.llvm.123").as_deref(),
            Some("core::fmt::write")
        );
        assert_eq!(demangle("_RNvCs1234_7mycrate3foo").as_deref(), Some("mycrate::foo"));
        // C and anything else stay as they are.
        assert_eq!(demangle("__GI___libc_write"), None);
        assert_eq!(demangle("_Zgarbage"), None);
    }

    #[test]
    fn a_new_mapping_replaces_what_it_covers_and_children_inherit() {
        let mut m = Maps::default();
        m.add(1, 0x1000, 0x3000, 0, b"/old", None);
        // Covers the middle of the old mapping: the old one keeps both ends.
        m.add(1, 0x2000, 0x1000, 0, b"/new", None);
        let at = |m: &Maps, pid: i32, ip: u64| {
            let (_, &(end, pgoff, i)) = m.by_pid.get(&pid)?.range(..=ip).next_back()?;
            (ip < end).then(|| (String::from_utf8_lossy(&m.dsos[i].path).into_owned(), pgoff))
        };
        assert_eq!(at(&m, 1, 0x1800), Some(("/old".into(), 0)));
        assert_eq!(at(&m, 1, 0x2800), Some(("/new".into(), 0)));
        // The right part keeps its file offset.
        assert_eq!(at(&m, 1, 0x3800), Some(("/old".into(), 0x2000)));
        assert_eq!(at(&m, 1, 0x4000), None);
        m.fork(1, 2);
        assert_eq!(at(&m, 2, 0x2800), Some(("/new".into(), 0)));
        // A thread (same pid) or a child that already has maps is left alone.
        m.add(3, 0x1000, 0x1000, 0, b"/three", None);
        m.fork(1, 3);
        assert_eq!(at(&m, 3, 0x1800), Some(("/three".into(), 0)));
    }

    #[test]
    fn legacy_rust_needs_its_hash() {
        assert!(is_legacy_rust("_ZN4core3fmt5write17h0123456789abcdefE"));
        assert!(!is_legacy_rust("_ZN4llvm15InstCombinePass3runERNS_8FunctionE"));
        assert!(!is_legacy_rust("_ZN4core3fmt5write17h0123456789abcdxyE"));
    }
}
