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

use super::{test_name, ImportError, ImportOptions, Imported, SampleTimes, StackCollector};
use crate::host::running_kernel_build_id;
use crate::model::mode::{context_mode, Mode, PERF_CONTEXT_MAX};
use crate::model::profile::{module, GUEST_FUNCTION, HYPERVISOR_FUNCTION, UNKNOWN_FUNCTION, UNKNOWN_MODE_FUNCTION};
use crate::model::ProfileBuilder;
use crate::symbols::{buildid_dir, demangle, hex, load_user_symbols, KernelSymbols, UserSymbols, UserSymbolsMissing};
use linux_perf_data::linux_perf_event_reader::{
    CpuMode, EventRecord, Mmap2FileId, RawDataU64, SampleRecord, SamplingPolicy,
};
use linux_perf_data::{DsoKey, PerfFileReader, PerfFileRecord};
use std::collections::HashMap;
use std::path::Path;

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

/// Whether a mapping is anonymous memory, where a JIT puts its code (perf's
/// `is_anon_memory`).
fn is_anon(path: &[u8]) -> bool {
    path.starts_with(b"//anon") || path.starts_with(b"/dev/zero") || path.starts_with(b"/anon_hugepage")
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
            None => UNKNOWN_FUNCTION,
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

/// What the recording's header says: the event profiled and where it ran.
struct Header {
    /// The index of the first sampling event (perf adds `dummy` events for side-band
    /// records), and its name.
    event_index: usize,
    event: String,
    /// The fixed period its attribute declares, in the event's unit.
    declared_period: Option<f64>,
    other_events: bool,
    kernel_build_id: Option<Vec<u8>>,
    release: Option<String>,
    cmdline: Option<String>,
    online_cpus: Option<u32>,
}

fn read_header(path: &Path, perf_file: &linux_perf_data::PerfFile) -> Result<Header, ImportError> {
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
    // A fixed period is what every sample weighs; a frequency says nothing of that.
    let declared_period = match attrs[event_index].attributes().sampling_policy {
        SamplingPolicy::Period(n) => Some(n.get() as f64),
        _ => None,
    };
    let build_ids = perf_file.build_ids().map_err(perf_err(path))?;
    Ok(Header {
        event_index,
        event,
        declared_period,
        other_events: attrs.len() > 1,
        kernel_build_id: build_ids.get(&DsoKey::Kernel).map(|d| d.build_id.clone()),
        release: perf_file.os_release().map_err(perf_err(path))?.map(str::to_string),
        cmdline: perf_file.cmdline().map_err(perf_err(path))?.map(|c| c.join(" ")),
        online_cpus: perf_file.nr_cpus().map_err(perf_err(path))?.map(|n| n.nr_cpus_online),
    })
}

/// What reading the records builds.
struct Reader<'s> {
    event_index: usize,
    symbols: &'s KernelSymbols,
    maps: Maps,
    profile: ProfileBuilder,
    stacks: StackCollector,
    /// Thread id → command, for the stacks' root frame.
    comms: HashMap<i32, String>,
    chain_names: Names,
    times: SampleTimes,
    user_unmapped: u64,
    skipped: u64,
}

impl Reader<'_> {
    fn record(&mut self, attr_index: usize, record: EventRecord<'_>, cpu_of_record: impl FnOnce() -> Option<u32>) {
        match record {
            EventRecord::Sample(s) if attr_index == self.event_index => self.sample(&s),
            EventRecord::Sample(_) => self.skipped += 1,
            EventRecord::Comm(c) => {
                self.comms
                    .insert(c.tid, String::from_utf8_lossy(&c.name.as_slice()).into_owned());
            }
            EventRecord::Fork(f) => {
                self.maps.fork(f.ppid, f.pid);
                // A new thread or process has its parent's command until it sets its own.
                if let Some(c) = self.comms.get(&f.ptid).cloned() {
                    self.comms.entry(f.tid).or_insert(c);
                }
            }
            EventRecord::Mmap(m) if m.is_executable => {
                self.maps
                    .add(m.pid, m.address, m.length, m.page_offset, &m.path.as_slice(), None)
            }
            EventRecord::Mmap2(m) if m.protection & PROT_EXEC != 0 => {
                let id = match &m.file_id {
                    Mmap2FileId::BuildId(id) => Some(id.clone()),
                    Mmap2FileId::InodeAndVersion(_) => None,
                };
                self.maps
                    .add(m.pid, m.address, m.length, m.page_offset, &m.path.as_slice(), id)
            }
            EventRecord::Lost(l) => self.profile.lost(cpu_of_record().unwrap_or(0), l.count),
            _ => {}
        }
    }

    fn sample(&mut self, s: &SampleRecord<'_>) {
        let cpu = s.cpu.unwrap_or(0);
        self.times.sample(s.timestamp, s.period);
        // Without its own period a sample weighs one here; the basis reweighs them all.
        let period = s.period.unwrap_or(1);
        let (ip, pid, mode) = (s.ip.unwrap_or(0), s.pid.unwrap_or(-1), mode_of(s.cpu_mode));
        if let (true, Some(chain)) = (self.stacks.wanted(), &s.callchain) {
            self.chain(chain, mode, pid, s.tid.unwrap_or(-1), period);
        }
        let user = match mode {
            Mode::User => match self.maps.resolve(pid, ip) {
                Some(named) => named,
                None => {
                    self.user_unmapped += 1;
                    (module::UNKNOWN, UNKNOWN_FUNCTION)
                }
            },
            _ => (module::USER, UNKNOWN_FUNCTION),
        };
        self.profile.add_sample(cpu, (mode, ip, period), self.symbols, user);
    }

    fn chain(&mut self, chain: &RawDataU64<'_>, mut mode: Mode, pid: i32, tid: i32, period: u64) {
        self.chain_names.clear();
        for addr in (0..chain.len()).filter_map(|k| chain.get(k)) {
            if addr >= PERF_CONTEXT_MAX {
                mode = context_mode(addr, mode);
                continue;
            }
            self.chain_names.push(match mode {
                Mode::Kernel => self.symbols.resolve(addr).map_or(UNKNOWN_FUNCTION, |(n, _)| n),
                Mode::User => self.maps.resolve(pid, addr).map_or(UNKNOWN_FUNCTION, |(_, n)| n),
                Mode::Hypervisor => HYPERVISOR_FUNCTION,
                Mode::GuestKernel | Mode::GuestUser => GUEST_FUNCTION,
                Mode::Unknown => UNKNOWN_MODE_FUNCTION,
            });
        }
        let comm = self.comms.get(&tid).map(String::as_str).unwrap_or(UNKNOWN_FUNCTION);
        self.stacks.add(Some(comm), self.chain_names.rev(), 1, period);
    }

    /// The warnings the reading leaves: symbols not found, samples left out.
    fn warnings(&self, event: &str, other_events: bool) -> Vec<String> {
        let mut warnings = Vec::new();
        let other_build = self.maps.missing(UserSymbolsMissing::OtherBuild);
        if !other_build.is_empty() {
            warnings.push(format!(
                "user functions of {} are [unknown]: the file there is another build than the one recorded, \
                 and perf's build-id cache has no copy (record without --no-buildid-cache, or run perf buildid-cache --add)",
                other_build.join(", ")
            ));
        }
        if self.user_unmapped > 0 {
            warnings.push(format!(
                "{} user samples fell outside every recorded mapping: counted as [unknown] [unknown]",
                self.user_unmapped
            ));
        }
        if other_events && self.skipped > 0 {
            warnings.push(format!(
                "{} samples of events other than {event} are left out",
                self.skipped
            ));
        }
        warnings
    }
}

/// `PROT_EXEC`: an executable mapping.
const PROT_EXEC: u32 = 4;

/// Reads a perf.data file.
pub fn read(path: &Path, opts: &ImportOptions) -> Result<Imported, ImportError> {
    let file = super::perf_header::open_checked(path)?;
    super::perf_header::contained(path, || read_checked(path, file, opts))
}

fn read_checked(path: &Path, file: std::fs::File, opts: &ImportOptions) -> Result<Imported, ImportError> {
    let reader = std::io::BufReader::with_capacity(1 << 16, file);
    let PerfFileReader {
        mut perf_file,
        mut record_iter,
    } = PerfFileReader::parse_file(reader).map_err(perf_err(path))?;
    let h = read_header(path, &perf_file)?;
    let (symbols, symbols_note) = kernel_symbols(path, opts, h.kernel_build_id.as_deref(), h.release.as_deref())?;
    let mut r = Reader {
        event_index: h.event_index,
        symbols: &symbols,
        maps: Maps::default(),
        profile: ProfileBuilder::new(),
        stacks: StackCollector::new(opts.stacks),
        comms: HashMap::new(),
        chain_names: Names::default(),
        times: SampleTimes::default(),
        user_unmapped: 0,
        skipped: 0,
    };
    for c in 0..h.online_cpus.unwrap_or(0) {
        r.profile.ensure_cpu(c);
    }
    for (key, info) in &perf_file.build_ids().map_err(perf_err(path))? {
        match key {
            DsoKey::User { full_path, .. } => {
                r.maps.header_ids.insert(full_path.clone(), info.build_id.clone());
            }
            DsoKey::Vdso32 | DsoKey::VdsoX32 | DsoKey::Vdso64 => {
                r.maps
                    .header_ids
                    .insert(key.name().as_bytes().to_vec(), info.build_id.clone());
            }
            _ => {}
        }
    }
    while let Some(record) = record_iter.next_record(&mut perf_file).map_err(perf_err(path))? {
        let PerfFileRecord::EventRecord { attr_index, record } = record else {
            continue;
        };
        let parsed = record.parse().map_err(|e| perf_err(path)(e.into()))?;
        r.record(attr_index, parsed, || record.common_data().ok().and_then(|c| c.cpu));
    }
    let samples = r.profile.samples();
    if samples == 0 {
        return Err(ImportError::NoSamples {
            path: path.to_path_buf(),
            hint: " (the recording has no samples of its first event)",
        });
    }
    let mut warnings: Vec<String> = symbols_note.into_iter().collect();
    warnings.extend(r.warnings(&h.event, h.other_events));
    let basis = r.times.basis(
        &h.event,
        opts.period_sec,
        h.declared_period,
        r.profile.cpu_count(),
        &mut warnings,
    );
    Ok(Imported {
        profile: basis.finish(r.profile, test_name(path), h.cmdline, h.event, warnings),
        stacks: r.stacks.finish(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
