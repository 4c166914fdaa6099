//! `perf.data` → [`Profile`](crate::Profile), read with the `linux-perf-data` crate: files
//! `perf record` wrote to a file or, in pipe mode (`perf record -o -`), to a stream, with
//! or without compression (`-z`).
//!
//! Kernel PCs are named with [`KernelSymbols`], as in a live run, loaded when the first
//! kernel address needs them (a recording of user space alone needs none). The symbols
//! are, in order: `--vmlinux`/`--kallsyms` when given; the kallsyms perf saved in its
//! build-id cache (`~/.debug/[kernel.kallsyms]/BUILD_ID/kallsyms`, or under
//! `$PERF_BUILDID_DIR`); this machine's `/proc/kallsyms` when the file's kernel build-id
//! is the running kernel's (or, without a build-id, its release is). A kallsyms of
//! another boot is moved to where the recording's `[kernel.kallsyms]_text` mapping put
//! the kernel, as perf does. User PCs are named from the ELF file behind their mapping
//! (perf's build-id cache, a separate debug file, or the file itself when it is the
//! recorded build), under the DSO's file name as module; `[unknown]` when no file or
//! symbol is found.
//!
//! The kernel of a recording is `import::kernel`, its mappings `import::maps`, pipe
//! mode's framing `import::pipe`; the header is checked in `import::perf_header` and a
//! file's records read in `import::perf_records`. What stays here is over 1,000 lines
//! because of one piece: `Reader`, the state of a recording as its records go by (threads,
//! mappings, loaded code, events, weights) and the naming of each sample's PC and call
//! chain from it, which every record passes through in turn.

use super::kernel::{kernel_symbols, KernelSource, ModuleMaps, NoKernel, WithModuleMaps};
use super::maps::{FastMap, Located, Maps, NameKey, Place};
use super::perf_header::Records;
use super::perf_records::{self, Chain, Part, Sample, StateRecord, Step};
use super::pipe::{tracepoint_names, Framed, Framing, WithoutTracingData, PIPE_HEADER_SIZE};
use super::unwind::DwarfUnwinder;
use super::{
    bare_event_name, choose_event, other_events_note, push_frame_name, test_name, ImportError, ImportOptions, Imported,
    SampleTimes, Split, StackCollector, SPLIT_MIN_BYTES,
};
use crate::model::builder::sample_function;
use crate::model::code::{AddressCache, LoadedCode, WithLoadedCode};
use crate::model::mode::Record as ModelRecord;
use crate::model::mode::{context_mode, is_kernel_address, Mode, PERF_CONTEXT_KERNEL, PERF_CONTEXT_MAX};
use crate::model::profile::{module, GUEST_FUNCTION, HYPERVISOR_FUNCTION, UNKNOWN_FUNCTION, UNKNOWN_MODE_FUNCTION};
use crate::model::stacks::IDLE_COMMAND;
use crate::model::KernelResolver;
use crate::model::ProfileBuilder;
use crate::symbols::{KernelSymbols, UserSymbols, UserSymbolsMissing};
use linux_perf_data::linux_perf_event_reader::{
    AttrFlags, EventRecord, HardwareEventId, Mmap2FileId, PerfEventType, RawEventRecord, RecordType, Regs,
    SampleFormat, SamplingPolicy, SoftwareCounterType,
};
use linux_perf_data::{AttributeDescription, DsoKey, PerfFile, PerfFileReader, PerfFileRecord, PerfRecordIter};
use std::cell::Cell;
use std::collections::HashMap;
use std::io::{BufRead, Cursor, Read};
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::Arc;
use upcmp_parsers::samples::Ksymbol;
use upcmp_parsers::{MAX_CPUS, MAX_NAME_BYTES};

/// The error of the perf.data reader; `stops_at` says where the input ends, for one cut
/// short.
fn perf_err<'p>(
    path: &'p Path,
    stops_at: impl Fn() -> Option<u64> + 'p,
) -> impl Fn(linux_perf_data::Error) -> ImportError + 'p {
    move |e| {
        let cut_short =
            matches!(&e, linux_perf_data::Error::IoError(io) if io.kind() == std::io::ErrorKind::UnexpectedEof);
        let reason = match stops_at() {
            Some(at) if cut_short => format!(
                "it stops at byte {at} in the middle of a header or record (truncated? perf record still running?)"
            ),
            _ => e.to_string(),
        };
        ImportError::PerfData {
            path: path.to_path_buf(),
            reason,
        }
    }
}

/// The error for a record whose contents end before the fields its type and its event's
/// sample format declare. Its bytes were read whole, so the file does not stop there (as
/// the parser's end-of-input error would have it said): the record is damaged.
fn record_err(path: &Path, record: &RawEventRecord<'_>) -> ImportError {
    let size = record.data.len() + 8;
    let fields = match record.record_type {
        RecordType::SAMPLE => format!("its event's sample format ({:?})", record.parse_info.sample_format),
        _ => "its type".to_string(),
    };
    ImportError::PerfData {
        path: path.to_path_buf(),
        reason: format!(
            "a {:?} record of {size} bytes ends before the fields {fields} declares: the file is damaged",
            record.record_type
        ),
    }
}

/// One sampling event of a recording.
struct Event {
    /// Its index among the file's attributes.
    index: usize,
    /// As perf names it, modifiers included (`cpu-clock:u`).
    name: String,
    /// The fixed period its attribute declares, in the event's unit.
    declared_period: Option<f64>,
    /// Whether it excludes the kernel (`:u`, `exclude_kernel`).
    user_only: bool,
}

/// What the recording's header says: the events profiled and where they ran.
struct Header {
    /// The sampling events, in the file's order (perf's `dummy` side-band events left out).
    events: Vec<Event>,
    /// The one read (into `events`).
    chosen: usize,
    kernel_build_id: Option<Vec<u8>>,
    release: Option<String>,
    cmdline: Option<String>,
    online_cpus: Option<u32>,
}

/// An event's name as perf prints it; for a file that names none, a tracepoint's name
/// from the tracing data's formats (`tracepoints`, by id), else the name of its type.
fn event_name(a: &AttributeDescription, tracepoints: &HashMap<u64, String>) -> String {
    if let Some(n) = a.name() {
        return n.to_string();
    }
    if let PerfEventType::Tracepoint(id) = a.attributes().type_ {
        if let Some(n) = tracepoints.get(&id) {
            return n.clone();
        }
    }
    use HardwareEventId as H;
    use SoftwareCounterType as S;
    let known = match a.attributes().type_ {
        PerfEventType::Hardware(id, _) => match id {
            H::CpuCycles => "cycles",
            H::Instructions => "instructions",
            H::CacheReferences => "cache-references",
            H::CacheMisses => "cache-misses",
            H::BranchInstructions => "branches",
            H::BranchMisses => "branch-misses",
            H::BusCycles => "bus-cycles",
            H::StalledCyclesFrontend => "stalled-cycles-frontend",
            H::StalledCyclesBackend => "stalled-cycles-backend",
            H::RefCpuCycles => "ref-cycles",
            _ => "unnamed-event",
        },
        PerfEventType::Software(t) => match t {
            S::CpuClock => "cpu-clock",
            S::TaskClock => "task-clock",
            S::PageFaults => "page-faults",
            S::ContextSwitches => "context-switches",
            S::CpuMigrations => "cpu-migrations",
            S::PageFaultsMin => "minor-faults",
            S::PageFaultsMaj => "major-faults",
            S::AlignmentFaults => "alignment-faults",
            S::EmulationFaults => "emulation-faults",
            S::Dummy => "dummy",
            S::BpfOutput => "bpf-output",
            S::CgroupSwitches => "cgroup-switches",
            _ => "unnamed-event",
        },
        _ => "unnamed-event",
    };
    known.to_string()
}

fn read_header(
    path: &Path,
    perf_file: &linux_perf_data::PerfFile,
    opts: &ImportOptions,
    tracepoints: &HashMap<u64, String>,
) -> Result<Header, ImportError> {
    let err = perf_err(path, || None);
    let events: Vec<Event> = perf_file
        .event_attributes()
        .iter()
        .enumerate()
        .map(|(index, a)| (index, a, event_name(a, tracepoints)))
        .filter(|(_, a, name)| {
            !matches!(a.attributes().sampling_policy, SamplingPolicy::NoSampling) && bare_event_name(name) != "dummy"
        })
        .map(|(index, a, name)| Event {
            index,
            name,
            // A fixed period is what every sample weighs; a frequency says nothing of that.
            declared_period: match a.attributes().sampling_policy {
                SamplingPolicy::Period(n) => Some(n.get() as f64),
                _ => None,
            },
            user_only: a.attributes().flags.contains(AttrFlags::EXCLUDE_KERNEL),
        })
        .collect();
    if events.is_empty() {
        return Err(ImportError::NoSamples {
            path: path.to_path_buf(),
            hint: " (the recording has no sampling event)",
        });
    }
    let names: Vec<&str> = events.iter().map(|e| e.name.as_str()).collect();
    let chosen = choose_event(&names, opts.event.as_deref(), path)?;
    let build_ids = perf_file.build_ids().map_err(&err)?;
    Ok(Header {
        events,
        chosen,
        kernel_build_id: build_ids.get(&DsoKey::Kernel).map(|d| d.build_id.clone()),
        release: perf_file.os_release().map_err(&err)?.map(str::to_string),
        cmdline: perf_file.cmdline().map_err(&err)?.map(|c| c.join(" ")),
        online_cpus: perf_file.nr_cpus().map_err(&err)?.map(|n| n.nr_cpus_online),
    })
}

/// A stack frame whose name does not depend on its address.
#[derive(Debug, Clone, Copy)]
enum FixedFrame {
    /// A user address outside every mapping.
    Unmapped,
    /// A user-context address in the kernel's half outside every mapping: a return
    /// address that frame-pointer unwinding read from a frame without one (libc's
    /// `write`). perf script prints it `[unknown] ([unknown])`, which the text import
    /// takes for the kernel's by its address; so does this one.
    KernelHalf,
    Hypervisor,
    /// An address of an unknown mode.
    UnknownMode,
    /// A guest's kernel or user address.
    Guest,
}

/// What reading the records builds.
struct Reader<'o> {
    event_index: usize,
    kernel_source: KernelSource<'o>,
    /// Loaded when the first kernel address needs them.
    kernel: Option<Arc<KernelSymbols>>,
    kernel_notes: Vec<String>,
    /// perf's `[kernel.kallsyms]_text` mapping: the symbol it names and where the kernel
    /// had it.
    kernel_text: Option<(String, u64)>,
    /// Kernel-mode samples, and those a kernel symbol covers.
    kernel_samples: u64,
    kernel_named: u64,
    maps: Maps,
    profile: ProfileBuilder,
    stacks: StackCollector,
    /// Thread id → command, for the stacks' root frame.
    comms: FastMap<i32, String>,
    /// The function of each kernel address seen, and whether a symbol named it.
    kernel_functions: AddressCache<(usize, bool), foldhash::fast::RandomState>,
    /// The function of each user place seen.
    user_functions: FastMap<Place, usize>,
    /// The same by what names the place (the places of one function share it).
    functions_by_name: FastMap<NameKey, usize>,
    frames_by_name: FastMap<NameKey, u32>,
    /// The stack frame of each kernel address, user place and thread seen.
    kernel_frames: AddressCache<u32, foldhash::fast::RandomState>,
    user_frames: FastMap<Place, u32>,
    comm_frames: FastMap<i32, u32>,
    /// The frames named alike wherever they are ([`FixedFrame`]), once interned.
    fixed_frames: [Option<u32>; 5],
    /// A call chain's frames, leaf first, and a frame's name being made.
    frame_ids: Vec<u32>,
    frame_name: String,
    times: SampleTimes,
    user_unmapped: u64,
    /// Samples per attribute index.
    samples_by_attr: Vec<u64>,
    /// Each attribute's `read_format` as the file has it, for this import's reader of
    /// files (`perf_records`); empty for the crate's.
    read_formats: Vec<u64>,
    /// The mappings of the current sample's user places.
    recent: Recent,
    /// BPF programs and other kernel code loaded as recorded (KSYMBOL records).
    code: LoadedCode,
    /// The addresses of KSYMBOL records whose name was cut: a set, as the two readers
    /// of a split file both see the records where they meet.
    ksymbol_names_cut: std::collections::BTreeSet<u64>,
    /// Kernel modules as mapped (MMAP records of pid -1).
    kernel_modules: ModuleMaps,
    /// How the event's samples weigh when they carry read values (`PERF_SAMPLE_READ`).
    read_weights: Option<ReadWeights>,
    /// The unwinder of `--call-graph dwarf` stack dumps, and the addresses it gives.
    dwarf: DwarfUnwinder,
    unwound: Vec<u64>,
    /// The functions whose sampled places are kept (`ImportOptions::annotate`), by index,
    /// with their names; and those places' samples.
    annotated_functions: FastMap<usize, String>,
    annotated: FastMap<(usize, Place), u64>,
    /// The annotated core-kernel functions' samples, by function and address as recorded.
    kernel_annotated: FastMap<(usize, u64), u64>,
}

/// Samples weighed as perf report weighs a sample that carries read values (`perf record
/// -e '{cpu-clock,task-clock}:S'`, `--sample-read`): by the change of the event's value
/// since the previous sample of the same id (one per CPU or thread), not by its period
/// (perf's `deliver_sample_value`); a sample whose value did not change is left out.
#[derive(Clone)]
struct ReadWeights {
    read_format: u64,
    /// The read event's ids (the file's attribute section).
    ids: Vec<u64>,
    /// The last value of each id (of the one value, 0, without ids).
    last: FastMap<u64, u64>,
}

impl ReadWeights {
    /// The weight of a sample with the read values `bytes`; `None` when they hold no
    /// value of the event.
    fn weight(&mut self, bytes: &[u8]) -> Option<u64> {
        let ids = &self.ids;
        let (id, value) = perf_records::read_values(self.read_format, bytes)
            .find(|(id, _)| id.map_or(true, |id| ids.contains(&id)))?;
        let last = self.last.insert(id.unwrap_or(0), value).unwrap_or(0);
        Some(value.wrapping_sub(last))
    }
}

/// The mappings of a sample's user places so far, latest first: its user frames are in
/// a few files (a program, libc, the loader), and a process's mappings do not change
/// within a sample, so a place is looked for in these before the process's mappings.
#[derive(Default)]
struct Recent([Option<Located>; 4]);

impl Recent {
    /// The place of the user address `addr` of `pid`: its DSO and what names it there
    /// (the offset in the file for an ELF file, the address itself for a JIT's perf
    /// map); `None` when no mapping covers it. Equal places have equal names, so an
    /// importer names each place once.
    fn place(&mut self, maps: &mut Maps, pid: i32, addr: u64) -> Option<Place> {
        if let Some(place) = self.0.iter().flatten().find_map(|l| l.place(addr)) {
            return Some(place);
        }
        let located = maps.mapping(pid, addr)?;
        self.0.rotate_right(1);
        self.0[0] = Some(located);
        located.place(addr)
    }
}

impl Reader<'_> {
    fn record(
        &mut self,
        attr_index: usize,
        record: EventRecord<'_>,
        cpu_of_record: impl FnOnce() -> Option<u32>,
    ) -> Result<(), ImportError> {
        match record {
            EventRecord::Sample(s) => self.sample_of(attr_index, &Sample::of(&s))?,
            EventRecord::Comm(c) => self.state(StateRecord::Comm {
                tid: c.tid,
                name: &c.name.as_slice(),
            }),
            EventRecord::Fork(f) => self.state(StateRecord::Fork {
                ppid: f.ppid,
                pid: f.pid,
                ptid: f.ptid,
                tid: f.tid,
            }),
            EventRecord::Exit(e) => self.state(StateRecord::Exit { pid: e.pid, tid: e.tid }),
            // `[kernel.kallsyms]_text`, at the address `_text` had: where the kernel was.
            EventRecord::Mmap(m) if m.page_offset != 0 && m.path.as_slice().starts_with(b"[kernel.kallsyms]") => {
                let path = m.path.as_slice();
                let name = String::from_utf8_lossy(&path["[kernel.kallsyms]".len()..]).into_owned();
                if !name.is_empty() {
                    self.kernel_text = Some((name, m.page_offset));
                }
            }
            EventRecord::Mmap(m) if m.pid == -1 && is_kernel_address(m.address) => {
                self.kernel_modules.add(m.address, m.length, &m.path.as_slice())
            }
            EventRecord::Mmap(m) if m.is_executable => {
                self.maps
                    .add(m.pid, m.address, m.length, m.page_offset, &m.path.as_slice(), None)
            }
            EventRecord::Mmap2(m) => self.state(StateRecord::Mmap2 {
                pid: m.pid,
                address: m.address,
                length: m.length,
                page_offset: m.page_offset,
                build_id: match &m.file_id {
                    Mmap2FileId::BuildId(id) => Some(id.as_slice()),
                    Mmap2FileId::InodeAndVersion(_) => None,
                },
                protection: m.protection,
                path: &m.path.as_slice(),
            }),
            EventRecord::Lost(l) => {
                let cpu = self.checked_cpu(cpu_of_record(), "a lost-samples record")?;
                self.profile.lost(cpu, l.count)
            }
            _ => {}
        }
        Ok(())
    }

    /// A command, fork, exit or mapping: as the crate's record or read in place
    /// ([`perf_records::state_record`]).
    fn state(&mut self, st: StateRecord<'_>) {
        match st {
            StateRecord::Comm { tid, name } => {
                // The command's string is reused: a fork load renames every child.
                let name = String::from_utf8_lossy(name);
                match self.comms.entry(tid) {
                    std::collections::hash_map::Entry::Occupied(mut o) => {
                        let c = o.get_mut();
                        c.clear();
                        c.push_str(&name);
                    }
                    std::collections::hash_map::Entry::Vacant(v) => {
                        v.insert(name.into_owned());
                    }
                }
                self.comm_frames.remove(&tid);
            }
            StateRecord::Fork { ppid, pid, ptid, tid } => {
                self.maps.fork(ppid, pid);
                self.comm_frames.remove(&tid);
                // A new thread or process has its parent's command until it sets its own.
                if !self.comms.contains_key(&tid) {
                    if let Some(c) = self.comms.get(&ptid).cloned() {
                        self.comms.insert(tid, c);
                    }
                }
            }
            // A process that exited has no mappings: its pid may be given to another one,
            // which starts with its own parent's (as perf replaces the thread).
            StateRecord::Exit { pid, tid } if pid == tid => self.maps.exit(pid),
            StateRecord::Exit { .. } => {}
            StateRecord::Mmap2 {
                pid,
                address,
                length,
                path,
                ..
            } if pid == -1 && is_kernel_address(address) => self.kernel_modules.add(address, length, path),
            StateRecord::Mmap2 {
                pid,
                address,
                length,
                page_offset,
                build_id,
                protection,
                path,
            } if protection & PROT_EXEC != 0 => self.maps.add(pid, address, length, page_offset, path, build_id),
            StateRecord::Mmap2 { .. } => {}
        }
    }

    /// Kernel code registered or unregistered: the names of its addresses change from here.
    /// `cut`: its name was longer than the names kept, and was cut.
    fn ksymbol(&mut self, (k, cut): (Ksymbol, bool)) {
        if cut {
            self.ksymbol_names_cut.insert(k.addr);
        }
        if let Some(range) = self.code.observe(&ModelRecord::Ksymbol(k)) {
            self.kernel_functions.forget(range.clone());
            self.kernel_frames.forget(range);
        }
    }

    /// A sample of the attribute `attr_index`: counted, and read when of the event read.
    fn sample_of(&mut self, attr_index: usize, s: &Sample<'_>) -> Result<(), ImportError> {
        if let Some(n) = self.samples_by_attr.get_mut(attr_index) {
            *n += 1;
        }
        if attr_index == self.event_index {
            self.sample(s)?;
        }
        Ok(())
    }

    /// A record as this import's reader hands it out ([`Step::Record`]): a sample of a
    /// plain format or a state record read in place, the rest as the crate parses them.
    fn raw_record(&mut self, attr: usize, record: RawEventRecord<'_>, path: &Path) -> Result<(), ImportError> {
        if let Some(k) = perf_records::ksymbol_of(&record) {
            self.ksymbol(k);
            return Ok(());
        }
        if record.record_type == RecordType::SAMPLE {
            if let Some(s) = Sample::parse_plain(&record, self.read_formats.get(attr).copied()) {
                return self.sample_of(attr, &s);
            }
        }
        if let Some(st) = perf_records::state_record(&record) {
            self.state(st);
            return Ok(());
        }
        let parsed = record.parse().map_err(|_| record_err(path, &record))?;
        self.record(attr, parsed, || record.common_data().ok().and_then(|c| c.cpu))
    }

    /// A reader for the rest of the file from here ([`Part::From`]): this one's
    /// mappings, commands and symbols, and the functions, frames and names it found (by
    /// the same indices), nothing counted yet.
    fn second_reader(&self) -> Self {
        Reader {
            event_index: self.event_index,
            kernel_source: self.kernel_source.clone(),
            kernel: self.kernel.clone(),
            kernel_notes: Vec::new(),
            kernel_text: self.kernel_text.clone(),
            kernel_samples: 0,
            kernel_named: 0,
            maps: self.maps.for_second_reader(),
            profile: self.profile.names_only(),
            stacks: self.stacks.for_second_reader(),
            comms: self.comms.clone(),
            kernel_functions: self.kernel_functions.clone(),
            user_functions: self.user_functions.clone(),
            functions_by_name: self.functions_by_name.clone(),
            frames_by_name: self.frames_by_name.clone(),
            kernel_frames: self.kernel_frames.clone(),
            user_frames: self.user_frames.clone(),
            comm_frames: self.comm_frames.clone(),
            fixed_frames: self.fixed_frames,
            frame_ids: Vec::new(),
            frame_name: String::new(),
            times: SampleTimes::default(),
            user_unmapped: 0,
            samples_by_attr: vec![0; self.samples_by_attr.len()],
            read_formats: self.read_formats.clone(),
            recent: Recent::default(),
            code: self.code.clone(),
            ksymbol_names_cut: Default::default(),
            kernel_modules: self.kernel_modules.clone(),
            read_weights: self.read_weights.clone(),
            dwarf: self.dwarf.for_second_reader(),
            unwound: Vec::new(),
            annotated_functions: self.annotated_functions.clone(),
            annotated: FastMap::default(),
            kernel_annotated: FastMap::default(),
        }
    }

    /// Adds what the second reader counted ([`second_reader`](Self::second_reader)).
    fn absorb(&mut self, other: Reader<'_>) {
        self.profile.merge(other.profile);
        self.stacks.merge(other.stacks);
        self.times.merge(&other.times);
        self.kernel_samples += other.kernel_samples;
        self.kernel_named += other.kernel_named;
        self.user_unmapped += other.user_unmapped;
        for (n, o) in self.samples_by_attr.iter_mut().zip(&other.samples_by_attr) {
            *n += o;
        }
        if self.kernel.is_none() {
            self.kernel = other.kernel;
            self.kernel_notes = other.kernel_notes;
        }
        self.maps.absorb(other.maps);
        self.dwarf.absorb(other.dwarf);
        self.ksymbol_names_cut.extend(other.ksymbol_names_cut);
        self.annotated_functions.extend(other.annotated_functions);
        for (k, n) in other.annotated {
            *self.annotated.entry(k).or_default() += n;
        }
        for (k, n) in other.kernel_annotated {
            *self.kernel_annotated.entry(k).or_default() += n;
        }
    }

    /// The annotated functions' samples by address, one entry per function and file.
    fn annotated_samples(&self) -> Vec<super::AnnotatedSamples> {
        use std::os::unix::ffi::OsStrExt;
        // By (name, file): a function's clones in one file are one entry. Names are
        // borrowed until the end (every function's places are here with `annotate_all`).
        let mut by: std::collections::BTreeMap<(&str, usize), std::collections::BTreeMap<u64, u64>> =
            std::collections::BTreeMap::new();
        for (&(f, place), &n) in &self.annotated {
            let dso = &self.maps.dsos[place.dso];
            let addr = match dso.symbols.as_ref().and_then(|s| s.as_deref().ok()) {
                Some(UserSymbols::Elf(syms)) => syms.address_of_offset(place.at),
                _ => None,
            };
            let (Some(addr), Some(name)) = (addr, self.annotated_functions.get(&f)) else {
                continue;
            };
            *by.entry((name.as_str(), place.dso))
                .or_default()
                .entry(addr)
                .or_default() += n;
        }
        let mut out: Vec<super::AnnotatedSamples> = by
            .into_iter()
            .map(|((function, dso), samples)| {
                let d = &self.maps.dsos[dso];
                super::AnnotatedSamples {
                    function: function.to_string(),
                    file: PathBuf::from(std::ffi::OsStr::from_bytes(&d.path)),
                    build_id: d.build_id.clone(),
                    samples,
                    kernel: false,
                    by_offset: false,
                }
            })
            .collect();
        // Core-kernel functions: in the vmlinux the symbols came from (`--vmlinux`), at
        // their address there (as recorded, less the KASLR offset); without one, as recorded
        // under perf's name of the kernel, which has no code to read.
        let image = self.kernel.as_ref().and_then(|k| Some((k.image()?, k.kaslr_offset()?)));
        let mut kernel: std::collections::BTreeMap<&str, std::collections::BTreeMap<u64, u64>> =
            std::collections::BTreeMap::new();
        for (&(f, ip), &n) in &self.kernel_annotated {
            let Some(name) = self.annotated_functions.get(&f) else {
                continue;
            };
            let addr = image.map_or(ip, |(_, shift)| ip.wrapping_sub(shift));
            *kernel.entry(name).or_default().entry(addr).or_default() += n;
        }
        out.extend(kernel.into_iter().map(|(function, samples)| super::AnnotatedSamples {
            function: function.to_string(),
            file: PathBuf::from(image.map_or(super::KERNEL_MAPPING, |(path, _)| path)),
            build_id: self.kernel_source.build_id.clone(),
            samples,
            kernel: true,
            by_offset: false,
        }));
        out
    }

    /// Loads the kernel's symbols, once.
    fn load_kernel(&mut self) -> Result<(), ImportError> {
        if self.kernel.is_none() && !self.kernel_source.user_only {
            let text = self.kernel_text.as_ref().map(|(n, a)| (n.as_str(), *a));
            let (k, notes) = kernel_symbols(&self.kernel_source, text)?;
            self.kernel = Some(k);
            self.kernel_notes = notes;
        }
        Ok(())
    }

    /// A record's CPU (0 when it names none), refused past Linux's most: the profile
    /// has a column per CPU, and perf script text of the same recording is refused too.
    fn checked_cpu(&self, cpu: Option<u32>, what: &str) -> Result<u32, ImportError> {
        match cpu {
            Some(c) if c >= MAX_CPUS => Err(ImportError::PerfData {
                path: self.kernel_source.path.clone(),
                reason: format!("{what} names CPU {c}, but Linux has fewer than {MAX_CPUS} (is the file damaged?)"),
            }),
            c => Ok(c.unwrap_or(0)),
        }
    }

    /// Whether the options' filter keeps the sample (its wall time counts either way).
    fn kept(&self, s: &Sample<'_>, cpu: u32, pid: i32, mode: Mode) -> bool {
        let f = &self.kernel_source.opts.filter;
        let tid = s.tid.unwrap_or(-1);
        f.is_empty()
            || f.keeps(
                cpu,
                pid as u32,
                tid as u32,
                mode,
                self.comms.get(&tid).map(String::as_str),
            )
    }

    fn sample(&mut self, s: &Sample<'_>) -> Result<(), ImportError> {
        let cpu = self.checked_cpu(s.cpu, "a sample")?;
        self.recent = Recent::default();
        self.times.sample(s.timestamp, s.period);
        // Without its own period a sample weighs one here; the basis reweighs them all.
        let period = match (&mut self.read_weights, s.read) {
            (Some(w), Some(bytes)) => match w.weight(bytes) {
                Some(0) => return Ok(()),
                Some(d) => d,
                None => s.period.unwrap_or(1),
            },
            _ => s.period.unwrap_or(1),
        };
        let (ip, pid, mode) = (s.ip.unwrap_or(0), s.pid.unwrap_or(-1), s.mode);
        if !self.kept(s, cpu, pid, mode) {
            return Ok(());
        }
        let chain = s.callchain.as_ref().filter(|_| self.stacks.wanted());
        let kernel_frames = chain.is_some_and(|c| c.iter().any(|a| a == PERF_CONTEXT_KERNEL));
        if mode == Mode::Kernel || kernel_frames {
            self.load_kernel()?;
        }
        if let Some(chain) = chain {
            let stack = s.user_stack.as_ref().map(|d| d.as_slice());
            let dump = s.user_regs.as_ref().zip(stack.as_deref());
            self.chain(chain, (mode, ip), dump, (pid, s.tid.unwrap_or(-1)), period);
        }
        // Each distinct kernel address and user place is named once (by the rule of
        // ProfileBuilder::add_sample), then counted by its function's index.
        let f = match mode {
            Mode::Kernel => {
                self.kernel_samples += 1;
                let (f, named) = match self.kernel_functions.get(ip) {
                    Some(&hit) => hit,
                    None => {
                        let symbols: &dyn KernelResolver = match &self.kernel {
                            Some(k) => &**k,
                            None => &NoKernel,
                        };
                        let kernel = &WithLoadedCode {
                            code: &self.code,
                            kernel: symbols,
                        };
                        let named = kernel.resolve_kernel(ip).is_some();
                        let kernel = &WithModuleMaps {
                            kernel,
                            modules: &self.kernel_modules,
                        };
                        let (m, name) = sample_function(mode, ip, kernel, (module::USER, UNKNOWN_FUNCTION));
                        let f = self.profile.function(m, name);
                        let opts = self.kernel_source.opts;
                        let wanted = &opts.annotate;
                        // The core kernel's functions: their code is the vmlinux's.
                        if named
                            && m == module::KERNEL
                            && ((opts.annotate_all && opts.vmlinux.is_some())
                                || wanted.iter().any(|w| crate::symbols::lines::answers_to(name, w)))
                        {
                            self.annotated_functions.insert(f, name.to_string());
                        }
                        self.profile.note_address(f, ip);
                        self.kernel_functions.insert(ip, (f, named));
                        (f, named)
                    }
                };
                self.kernel_named += u64::from(named);
                if !self.annotated_functions.is_empty() && self.annotated_functions.contains_key(&f) {
                    *self.kernel_annotated.entry((f, ip)).or_default() += 1;
                }
                f
            }
            Mode::User => match self.recent.place(&mut self.maps, pid, ip) {
                Some(place) => {
                    let f = match self.user_functions.get(&place) {
                        Some(&f) => f,
                        None => {
                            let key = self.maps.name_key(place);
                            let f = match self.functions_by_name.get(&key) {
                                Some(&f) => f,
                                None => {
                                    let (m, name) = self.maps.name(key);
                                    let f = self.profile.function(m, name);
                                    let opts = self.kernel_source.opts;
                                    let wanted = &opts.annotate;
                                    if (opts.annotate_all && matches!(key, NameKey::Symbol(..)))
                                        || wanted.iter().any(|w| crate::symbols::lines::answers_to(name, w))
                                    {
                                        self.annotated_functions.insert(f, name.to_string());
                                    }
                                    self.functions_by_name.insert(key, f);
                                    f
                                }
                            };
                            self.user_functions.insert(place, f);
                            f
                        }
                    };
                    // Every sample's address, not the first of its place: processes map
                    // one place at different addresses, and a split read meets them in
                    // another order.
                    self.profile.note_address(f, ip);
                    if !self.annotated_functions.is_empty() && self.annotated_functions.contains_key(&f) {
                        *self.annotated.entry((f, place)).or_default() += 1;
                    }
                    f
                }
                None => {
                    self.user_unmapped += 1;
                    let f = self.profile.function(module::UNKNOWN, UNKNOWN_FUNCTION);
                    self.profile.note_address(f, ip);
                    f
                }
            },
            _ => {
                let (m, name) = sample_function(mode, ip, &NoKernel, (module::USER, UNKNOWN_FUNCTION));
                self.profile.function(m, name)
            }
        };
        self.profile.add_period(cpu, f, period);
        Ok(())
    }

    /// Counts the call chain of a sample taken at `sampled` (its mode and address) in
    /// thread `tid` of process `pid`, each distinct address (user place) named once. A
    /// sample whose chain holds no user frame (`--call-graph dwarf`: the kernel leaves
    /// the user stack to be unwound from `dump`, its user registers and stack) has the
    /// unwound user frames after its kernel ones; a user-mode one that cannot be unwound,
    /// its sampled address as the leaf.
    fn chain(
        &mut self,
        chain: &Chain<'_>,
        sampled: (Mode, u64),
        dump: Option<(&Regs<'_>, &[u8])>,
        (pid, tid): (i32, i32),
        period: u64,
    ) {
        self.frame_ids.clear();
        let mut mode = sampled.0;
        let mut user_frames = false;
        for addr in chain.iter() {
            if addr >= PERF_CONTEXT_MAX {
                mode = context_mode(addr, mode);
                continue;
            }
            let name = &mut self.frame_name;
            let id = match mode {
                Mode::Kernel => match self.kernel_frames.get(addr) {
                    Some(&id) => id,
                    None => {
                        name.clear();
                        let loaded = self.code.resolve(addr);
                        let found = loaded.or_else(|| self.kernel.as_ref().and_then(|k| k.resolve(addr)));
                        match self.kernel_modules.or_module(found, addr) {
                            Some((n, Some(m))) => push_frame_name(name, m, n, true),
                            Some((n, None)) => push_frame_name(name, module::KERNEL, n, false),
                            None => push_frame_name(name, module::KERNEL, UNKNOWN_FUNCTION, false),
                        }
                        let id = self.stacks.intern(name);
                        self.kernel_frames.insert(addr, id);
                        id
                    }
                },
                Mode::User => {
                    user_frames = true;
                    self.user_frame(pid, addr)
                }
                Mode::Hypervisor => self.fixed_frame(FixedFrame::Hypervisor),
                Mode::Unknown => self.fixed_frame(FixedFrame::UnknownMode),
                Mode::GuestKernel | Mode::GuestUser => self.fixed_frame(FixedFrame::Guest),
            };
            self.frame_ids.push(id);
        }
        if let Some((regs, stack)) = dump.filter(|_| !user_frames) {
            let mut addrs = std::mem::take(&mut self.unwound);
            addrs.clear();
            let mapped = self.maps.mapped_files(pid);
            self.dwarf.unwind(pid, &mapped, regs, stack, &mut addrs);
            for &a in &addrs {
                let id = self.user_frame(pid, a);
                self.frame_ids.push(id);
            }
            user_frames = !addrs.is_empty();
            if user_frames {
                self.stacks.note_chains();
            }
            self.unwound = addrs;
        }
        if sampled.0 == Mode::User && !user_frames {
            let id = self.user_frame(pid, sampled.1);
            self.frame_ids.insert(0, id);
            self.stacks.note_chains();
        }
        let root = match self.comm_frames.get(&tid) {
            Some(&id) => id,
            None => {
                // perf names pid 0, which no record names, after the idle task.
                let comm = match self.comms.get(&tid) {
                    Some(c) => c.as_str(),
                    None if tid == 0 => IDLE_COMMAND,
                    None => UNKNOWN_FUNCTION,
                };
                let id = self.stacks.intern(comm);
                self.comm_frames.insert(tid, id);
                id
            }
        };
        self.stacks.add_ids(root, &self.frame_ids, 1, period);
    }

    /// The stack frame of the user address `addr` of process `pid`.
    fn user_frame(&mut self, pid: i32, addr: u64) -> u32 {
        let Some(place) = self.recent.place(&mut self.maps, pid, addr) else {
            return self.fixed_frame(match is_kernel_address(addr) {
                true => FixedFrame::KernelHalf,
                false => FixedFrame::Unmapped,
            });
        };
        if let Some(&id) = self.user_frames.get(&place) {
            return id;
        }
        let key = self.maps.name_key(place);
        let id = match self.frames_by_name.get(&key) {
            Some(&id) => id,
            None => {
                let name = &mut self.frame_name;
                name.clear();
                let (m, n) = self.maps.name(key);
                push_frame_name(name, m, n, false);
                let id = self.stacks.intern(name);
                self.frames_by_name.insert(key, id);
                id
            }
        };
        self.user_frames.insert(place, id);
        id
    }

    /// The id of a frame whose name is the same wherever it is (a user address outside
    /// every mapping is one in ten of a busy machine's frames), interned once.
    fn fixed_frame(&mut self, frame: FixedFrame) -> u32 {
        if let Some(id) = self.fixed_frames[frame as usize] {
            return id;
        }
        let (m, n) = match frame {
            FixedFrame::Unmapped => (module::UNKNOWN, UNKNOWN_FUNCTION),
            FixedFrame::KernelHalf => (module::KERNEL, UNKNOWN_FUNCTION),
            FixedFrame::Hypervisor => (module::HYPERVISOR, HYPERVISOR_FUNCTION),
            FixedFrame::UnknownMode => (module::USER, UNKNOWN_MODE_FUNCTION),
            FixedFrame::Guest => (module::GUEST, GUEST_FUNCTION),
        };
        let name = &mut self.frame_name;
        name.clear();
        push_frame_name(name, m, n, false);
        let id = self.stacks.intern(name);
        self.fixed_frames[frame as usize] = Some(id);
        id
    }

    /// The warnings the reading leaves: symbols not found, samples left out.
    fn warnings(&self, h: &Header) -> Vec<String> {
        let mut warnings = self.kernel_notes.clone();
        if let (Some(k), true) = (&self.kernel, self.kernel_samples > 0 && self.kernel_named == 0) {
            warnings.push(format!(
                "none of the {} kernel samples falls in a function of {}: these are not the recorded kernel's \
                 symbols (pass that kernel's kallsyms with --kallsyms)",
                self.kernel_samples,
                k.describe()
            ));
        }
        if self.kernel_source.user_only && self.kernel_samples > 0 {
            warnings.push(format!(
                "{} samples of {}, an event of user space only, are at kernel addresses (skid as the CPU \
                 entered the kernel): counted as the kernel's [unknown], as perf report shows them; no kernel \
                 symbols are needed",
                self.kernel_samples, h.events[h.chosen].name
            ));
        }
        let other_build = self.maps.missing(UserSymbolsMissing::OtherBuild);
        if !other_build.is_empty() {
            warnings.push(format!(
                "user functions of {} are [unknown]: the file there is another build than the one recorded, \
                 and perf's build-id cache has no copy (record without --no-buildid-cache, or run perf buildid-cache --add)",
                other_build.join(", ")
            ));
        }
        if self.dwarf.leaf_only > 0 {
            let files: Vec<&str> = self.dwarf.files_without_cfi.iter().map(|f| f.as_str()).collect();
            warnings.push(format!(
                "{} of {} samples with a user stack dump (--call-graph dwarf) keep only their sampled address as \
                 their user stack: no call frame information for the code they ran in ({}; not there, another \
                 build than the one recorded, JIT code or the vDSO)",
                self.dwarf.leaf_only,
                self.dwarf.leaf_only + self.dwarf.unwound,
                if files.is_empty() {
                    "outside every mapping".to_string()
                } else {
                    files.join(", ")
                }
            ));
        }
        if !self.ksymbol_names_cut.is_empty() {
            warnings.push(format!(
                "{} names longer than {MAX_NAME_BYTES} bytes were cut to that length (kernel code named by \
                 KSYMBOL records, the lowest at {:#x})",
                self.ksymbol_names_cut.len(),
                self.ksymbol_names_cut.first().copied().unwrap_or(0)
            ));
        }
        if self.user_unmapped > 0 {
            warnings.push(format!(
                "{} user samples fell outside every recorded mapping: counted as [unknown] [unknown]",
                self.user_unmapped
            ));
        }
        let events: Vec<(&str, u64)> = h
            .events
            .iter()
            .map(|e| (e.name.as_str(), self.samples_by_attr.get(e.index).copied().unwrap_or(0)))
            .collect();
        warnings.extend(other_events_note(&events, h.chosen));
        warnings
    }
}

/// `PROT_EXEC`: an executable mapping.
const PROT_EXEC: u32 = 4;

/// The header size a perf.data magic is followed by, in the magic's byte order.
fn header_size(head: &[u8]) -> Option<u64> {
    let size: [u8; 8] = head.get(8..16)?.try_into().ok()?;
    match head.get(..8)? {
        b"PERFILE2" => Some(u64::from_le_bytes(size)),
        b"2ELIFREP" => Some(u64::from_be_bytes(size)),
        _ => None,
    }
}

/// Whether `head` starts with the magic of perf.data version 1 (`PERFFILE`, in either byte
/// order), the format perf wrote before `PERFILE2`.
pub(crate) fn is_version_1(head: &[u8]) -> bool {
    head.starts_with(b"PERFFILE") || head.starts_with(b"ELIFFREP")
}

/// The error for a perf.data file of version 1: perf still reads it (guessing the size of
/// its attributes), the crate and this import do not; `perf inject` rewrites it as
/// version 2.
fn version_1_error(path: &Path) -> ImportError {
    ImportError::PerfData {
        path: path.to_path_buf(),
        reason: format!(
            "it is perf.data of the old format, version 1 (magic PERFFILE), which is not read here, only version 2 \
             (PERFILE2, what perf has written since 2011); `perf inject -i {} -o NEW.data` rewrites it as version 2",
            path.display()
        ),
    }
}

/// The error for an input starting `head` when it is perf.data of version 1.
fn refuse_version_1(head: &[u8], path: &Path) -> Result<(), ImportError> {
    if is_version_1(head) {
        return Err(version_1_error(path));
    }
    Ok(())
}

/// Reads a perf.data file, written to a file or in pipe mode.
pub fn read(path: &Path, opts: &ImportOptions) -> Result<Imported, ImportError> {
    read_first_event_with_samples(path, opts, true)
}

/// [`read_file`] of a file of version 2, read again for the first event with samples when
/// the first event has none and no event is asked for: a file can be, for the event perf
/// report shows.
fn read_first_event_with_samples(
    path: &Path,
    opts: &ImportOptions,
    own_records: bool,
) -> Result<Imported, ImportError> {
    let mut head = Vec::with_capacity(8);
    let f = super::open_input(path).map_err(ImportError::io(path))?;
    f.take(8).read_to_end(&mut head).map_err(ImportError::io(path))?;
    refuse_version_1(&head, path)?;
    match read_file(path, opts, own_records) {
        Err(ImportError::FirstEventEmpty { with_samples, .. }) => {
            read_file(path, &opts.clone().with_event(Some(with_samples)), own_records)
        }
        r => r,
    }
}

/// [`read`] with every record read by the `linux-perf-data` crate, as files this import's
/// own record reader does not read are (`perf_records`): what that reader is checked
/// against.
#[doc(hidden)]
pub fn read_with_crate(path: &Path, opts: &ImportOptions) -> Result<Imported, ImportError> {
    read_first_event_with_samples(path, opts, false)
}

/// Whether [`read`] reads the records of the perf.data file `path` with the import's own
/// reader rather than the crate's (both give the same import; a check that a test
/// exercises the one it means to).
#[doc(hidden)]
pub fn read_by_own_reader(path: &Path) -> Result<bool, ImportError> {
    let (file, records) = super::perf_header::open_checked(path)?;
    super::perf_header::contained(path, || {
        Ok(match open_perf_file(path, &file)? {
            Opened::Stream(_) => false,
            Opened::File(reader) => perf_records::eligible(&reader.perf_file, &records),
        })
    })
}

fn read_file(path: &Path, opts: &ImportOptions, own_records: bool) -> Result<Imported, ImportError> {
    // The common file first: read by this import's reader, which checks the records as
    // it reads them, saving the check's own pass over the file (a sixth of an import).
    // Any other file, and any that reader gives up on, is read as below.
    if own_records {
        if let Some(Ok(imported)) = read_unwalked(path, opts) {
            return Ok(imported);
        }
    }
    // A regular file, its sizes and counts checked against its length (pipe mode too),
    // then read with any panic of the reader made an error.
    let (file, records) = super::perf_header::open_checked(path)?;
    super::perf_header::contained(path, || read_checked(path, file, records, opts, own_records))
}

/// A perf.data input opened: a stream (pipe mode), or a file whose header the crate read.
enum Opened<'f> {
    Stream(std::io::BufReader<&'f std::fs::File>),
    /// Boxed: the crate's reader is large.
    File(Box<PerfFileReader<std::io::BufReader<&'f std::fs::File>>>),
}

/// Opens `file` (checked, read from its start) for reading.
fn open_perf_file<'f>(path: &Path, file: &'f std::fs::File) -> Result<Opened<'f>, ImportError> {
    let len = file.metadata().map(|m| m.len()).ok();
    let mut input = std::io::BufReader::with_capacity(1 << 16, file);
    if header_size(input.fill_buf().map_err(ImportError::io(path))?) == Some(PIPE_HEADER_SIZE) {
        return Ok(Opened::Stream(input));
    }
    PerfFileReader::parse_file(input)
        .map(|r| Opened::File(Box::new(r)))
        .map_err(perf_err(path, || len))
}

/// A file whose header is checked but whose records are not walked first, read by this
/// import's reader; `None` when it is not that reader's (a stream, another byte order,
/// compressed...). An error may come from what the walk would have refused: the caller
/// reads the file again, checked, for the error the checked reading gives.
fn read_unwalked(path: &Path, opts: &ImportOptions) -> Option<Result<Imported, ImportError>> {
    let (file, records) = super::perf_header::open_header_checked(path).ok()?;
    let len = file.metadata().map(|m| m.len()).ok();
    let read = super::perf_header::contained(path, || match open_perf_file(path, &file)? {
        Opened::File(reader) if perf_records::eligible(&reader.perf_file, &records) => {
            let own: Source<'_, std::io::BufReader<&std::fs::File>> = Source::Own(&file, records);
            read_records(reader.perf_file, own, path, opts, || len, None, &HashMap::new()).map(Some)
        }
        _ => Ok(None),
    });
    read.transpose()
}

fn read_checked(
    path: &Path,
    file: std::fs::File,
    records: Records,
    opts: &ImportOptions,
    own_records: bool,
) -> Result<Imported, ImportError> {
    let len = file.metadata().map(|m| m.len()).ok();
    let PerfFileReader { perf_file, record_iter } = match open_perf_file(path, &file)? {
        Opened::Stream(input) => return read_pipe(input, path, opts),
        Opened::File(reader) => *reader,
    };
    // Decided before any record is read: a file is read by one reader or the other.
    let source = if own_records && perf_records::eligible(&perf_file, &records) {
        drop(record_iter);
        Source::Own(&file, records)
    } else {
        Source::Crate(Box::new(record_iter))
    };
    read_records(perf_file, source, path, opts, || len, None, &HashMap::new())
}

/// Where the records of a recording come from.
enum Source<'f, R: Read> {
    /// The crate's reader, which copies and parses each one (boxed: it is large).
    Crate(Box<PerfRecordIter<R>>),
    /// This import's reader of files (`perf_records`), from the file checked as the
    /// `Records` say.
    Own(&'f std::fs::File, Records),
}

/// Reads a perf.data stream in pipe mode (`perf record -o -`) from `input`, front to back.
pub fn read_pipe(mut input: impl Read, path: &Path, opts: &ImportOptions) -> Result<Imported, ImportError> {
    let mut head = Vec::with_capacity(PIPE_HEADER_SIZE as usize);
    (&mut input)
        .take(PIPE_HEADER_SIZE)
        .read_to_end(&mut head)
        .map_err(ImportError::io(path))?;
    refuse_version_1(&head, path)?;
    match header_size(&head) {
        Some(PIPE_HEADER_SIZE) => {}
        Some(_) => {
            return Err(ImportError::PerfData {
                path: path.to_path_buf(),
                reason: "it is written as a file (perf record -o FILE), which is read from its path, not from a \
                         stream; perf record -o - writes a stream"
                    .into(),
            })
        }
        None => {
            return Err(ImportError::PerfData {
                path: path.to_path_buf(),
                reason: format!(
                    "it stops at byte {} in the middle of its header (truncated?)",
                    head.len()
                ),
            })
        }
    }
    let big_endian = head.starts_with(b"2ELIFREP");
    let state = Rc::new(Cell::new(Framing::new(PIPE_HEADER_SIZE, big_endian)));
    let tracing = Rc::new(std::cell::RefCell::new(Vec::new()));
    let framed = Framed {
        inner: WithoutTracingData::new(Cursor::new(head).chain(input), big_endian, Rc::clone(&tracing)),
        state: Rc::clone(&state),
        check: super::perf_header::StreamCheck::new(big_endian),
    };
    let at = || Some(state.get().pos);
    let PerfFileReader { perf_file, record_iter } = PerfFileReader::parse_pipe(framed).map_err(perf_err(path, at))?;
    // perf writes the tracing data after the attributes and features, so it has passed.
    let tracepoints = tracepoint_names(&tracing.borrow());
    read_records(
        perf_file,
        Source::Crate(Box::new(record_iter)),
        path,
        opts,
        at,
        Some(&*state),
        &tracepoints,
    )
}

/// Reads the records of the recording whose header is `perf_file` from `source`.
fn read_records<R: Read>(
    mut perf_file: PerfFile,
    source: Source<'_, R>,
    path: &Path,
    opts: &ImportOptions,
    stops_at: impl Fn() -> Option<u64> + Copy,
    framing: Option<&Cell<Framing>>,
    tracepoints: &HashMap<u64, String>,
) -> Result<Imported, ImportError> {
    let h = read_header(path, &perf_file, opts, tracepoints)?;
    let event = &h.events[h.chosen];
    let mut r = Reader {
        event_index: event.index,
        kernel_source: KernelSource {
            path: path.to_path_buf(),
            opts,
            build_id: h.kernel_build_id.clone(),
            release: h.release.clone(),
            user_only: event.user_only,
        },
        kernel: None,
        kernel_notes: Vec::new(),
        kernel_text: None,
        kernel_samples: 0,
        kernel_named: 0,
        maps: Maps {
            shared: opts.symbols.clone(),
            ..Maps::default()
        },
        profile: ProfileBuilder::new(),
        stacks: StackCollector::counted_apart(opts.stacks),
        comms: FastMap::default(),
        kernel_functions: AddressCache::default(),
        user_functions: FastMap::default(),
        functions_by_name: FastMap::default(),
        frames_by_name: FastMap::default(),
        kernel_frames: AddressCache::default(),
        user_frames: FastMap::default(),
        comm_frames: FastMap::default(),
        fixed_frames: [None; 5],
        frame_ids: Vec::new(),
        frame_name: String::new(),
        times: SampleTimes::default(),
        user_unmapped: 0,
        samples_by_attr: vec![0; perf_file.event_attributes().len()],
        read_formats: Vec::new(),
        recent: Recent::default(),
        dwarf: DwarfUnwinder::default(),
        unwound: Vec::new(),
        annotated_functions: FastMap::default(),
        annotated: FastMap::default(),
        kernel_annotated: FastMap::default(),
        code: LoadedCode::default(),
        ksymbol_names_cut: Default::default(),
        kernel_modules: ModuleMaps::default(),
        read_weights: None,
    };
    for c in 0..h.online_cpus.unwrap_or(0) {
        r.profile.ensure_cpu(c);
    }
    for (key, info) in &perf_file.build_ids().map_err(perf_err(path, stops_at))? {
        match key {
            DsoKey::User { full_path, .. } => {
                r.maps.dso_index.entry(full_path.clone()).or_default().header_id = Some(info.build_id.clone());
            }
            DsoKey::Vdso32 | DsoKey::VdsoX32 | DsoKey::Vdso64 => {
                r.maps
                    .dso_index
                    .entry(key.name().as_bytes().to_vec())
                    .or_default()
                    .header_id = Some(info.build_id.clone());
            }
            _ => {}
        }
    }
    match source {
        Source::Crate(mut record_iter) => {
            while let Some(record) = record_iter
                .next_record(&mut perf_file)
                .map_err(perf_err(path, stops_at))?
            {
                let PerfFileRecord::EventRecord { attr_index, record } = record else {
                    continue;
                };
                if let Some(k) = perf_records::ksymbol_of(&record) {
                    r.ksymbol(k);
                    continue;
                }
                let parsed = record.parse().map_err(|_| record_err(path, &record))?;
                r.record(attr_index, parsed, || record.common_data().ok().and_then(|c| c.cpu))?;
            }
        }
        Source::Own(file, records) => {
            r.read_formats = perf_records::read_formats(file)
                .filter(|f| f.len() == perf_file.event_attributes().len())
                .unwrap_or_default();
            let attr = &perf_file.event_attributes()[r.event_index];
            if let Some(&read_format) = r.read_formats.get(r.event_index) {
                if attr.attributes().sample_format.contains(SampleFormat::READ) {
                    r.read_weights = Some(ReadWeights {
                        read_format,
                        ids: attr.ids().to_vec(),
                        last: FastMap::default(),
                    });
                }
            }
            // A file's end, which does not move while it is read.
            let len = stops_at();
            read_own(&mut r, file, &records, &perf_file, path, move || len)?
        }
    }
    if let Some(at) = framing.and_then(|f| f.get().cut_at()) {
        return Err(ImportError::PerfData {
            path: path.to_path_buf(),
            reason: format!("it stops at byte {at} in the middle of a record (truncated? perf record still running?)"),
        });
    }
    if r.profile.samples() == 0 && opts.event.is_none() && opts.filter.is_empty() {
        // As perf report: the first event with samples is shown first.
        let with_samples = h
            .events
            .iter()
            .find(|e| r.samples_by_attr.get(e.index).is_some_and(|&n| n > 0));
        if let Some(e) = with_samples {
            return Err(ImportError::FirstEventEmpty {
                path: path.to_path_buf(),
                first: event.name.clone(),
                with_samples: e.name.clone(),
            });
        }
    }
    if r.profile.samples() == 0 {
        return Err(ImportError::NoSamples {
            path: path.to_path_buf(),
            hint: if !opts.filter.is_empty() {
                " that the filter keeps (--comm, --pid, --tid, --cpu, --kernel-only, --user-only)"
            } else if h.events.len() > 1 {
                " of the event read (--event NAME picks another)"
            } else {
                " (the recording has no samples of its event)"
            },
        });
    }
    let mut warnings = r.warnings(&h);
    let event_name = bare_event_name(&event.name).to_string();
    let basis = r.times.basis(
        &event_name,
        opts.period_sec,
        event.declared_period,
        r.profile.cpu_count(),
        &mut warnings,
    );
    let annotated = r.annotated_samples();
    Ok(Imported {
        profile: basis.finish(r.profile, test_name(path), h.cmdline.clone(), event_name, warnings),
        stacks: r.stacks.finish(),
        annotated,
    })
}

/// Reads the records of `file` with this import's reader (`perf_records`), on two cores
/// when the options' [`Split`] says so: at a round's end the rest goes to a second
/// reader, which starts from a copy of `r`'s mappings, commands, caches and names, and
/// whose profile and stacks are merged into `r`'s at the end.
fn read_own(
    r: &mut Reader<'_>,
    file: &std::fs::File,
    records: &Records,
    perf_file: &PerfFile,
    path: &Path,
    stops_at: impl Fn() -> Option<u64> + Copy + Send + Sync,
) -> Result<(), ImportError> {
    let opts = r.kernel_source.opts;
    let end = records.data.0 + records.data.1;
    // Read values weigh a sample by the one before it of its id: one reader reads them all.
    let split = match r.read_weights {
        Some(_) => Split::Never,
        None => opts.split,
    };
    // Where the two walks of a split file meet, once it is split.
    let boundary = std::sync::OnceLock::new();
    std::thread::scope(|scope| {
        let mut second = None;
        perf_records::walk(
            file,
            records,
            perf_file,
            Part::Whole,
            |step| match step {
                Step::Record { attr, record } => r.raw_record(attr, record, path).map(|_| None),
                Step::Round { at } => {
                    let left = end.saturating_sub(at.pos());
                    let split_at = match split {
                        Split::Never => None,
                        Split::AtOnce => Some(at.pos() + left / 2),
                        // Not before SPLIT_MIN_BYTES are read, when the imports started
                        // beside this one have all begun, and while two thirds or more
                        // are left: the second reader walks the records before its part
                        // for their state (mappings, forks, exits), which costs a half
                        // (many samples) to four fifths (a fork load) of reading them,
                        // and its profile is merged; with less left, that costs what the
                        // second core saves. Its part is planned to start at 13/20 of
                        // what is left, and moved as the two go
                        // ([`perf_records::Boundary`]).
                        Split::WhenCoreIdle => {
                            let read = at.pos() - records.data.0;
                            (read >= SPLIT_MIN_BYTES && left >= 2 * read && opts.readers.core_idle())
                                .then(|| at.pos() + left / 20 * 13)
                        }
                    };
                    let Some(split_at) = split_at else {
                        return Ok(None);
                    };
                    let boundary: &perf_records::Boundary =
                        boundary.get_or_init(|| perf_records::Boundary::new(at.pos(), split_at, end));
                    let mut other = r.second_reader();
                    let part = Part::From {
                        boundary,
                        resume: at.resume(),
                    };
                    let reading = opts.readers.enter();
                    second = Some(scope.spawn(move || {
                        let _reading = reading;
                        perf_records::walk(
                            file,
                            records,
                            perf_file,
                            part,
                            |step| match step {
                                Step::Record { attr, record } => other.raw_record(attr, record, path).map(|_| None),
                                Step::Round { .. } => Ok(None),
                            },
                            perf_err(path, stops_at),
                        )
                        .map(|()| other)
                    }));
                    Ok(Some(boundary))
                }
            },
            perf_err(path, stops_at),
        )?;
        if let Some(second) = second {
            let other = second.join().unwrap_or_else(|p| std::panic::resume_unwind(p))?;
            // A second reader the first read past reached no round of its own.
            if !boundary.get().is_some_and(perf_records::Boundary::second_reads_nothing) {
                r.absorb(other);
            }
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::import::maps::Mapping;

    #[test]
    fn a_new_mapping_replaces_what_it_covers_and_children_inherit() {
        let mut m = Maps::default();
        m.add(1, 0x1000, 0x3000, 0, b"/old", None);
        // Covers the middle of the old mapping: the old one keeps both ends.
        m.add(1, 0x2000, 0x1000, 0, b"/new", None);
        let at = |m: &Maps, pid: i32, ip: u64| {
            let Mapping { pgoff, dso, .. } = m.covering(pid, ip)?;
            Some((String::from_utf8_lossy(&m.dsos[dso].path).into_owned(), pgoff))
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
        // A pid given again after its process exited: the new process has its own
        // parent's mappings, not the dead one's (perf replaces the thread).
        m.exit(3);
        assert_eq!(at(&m, 3, 0x1800), None);
        m.fork(1, 3);
        assert_eq!(at(&m, 3, 0x1800), Some(("/old".into(), 0)));
        // One spanning several: their outer ends stay, what lies between goes.
        m.add(4, 0x1000, 0x1000, 0, b"/a", None);
        m.add(4, 0x3000, 0x1000, 0, b"/b", None);
        m.add(4, 0x5000, 0x1000, 0x7000, b"/c", None);
        m.add(4, 0x1800, 0x4000, 0, b"/span", None);
        assert_eq!(at(&m, 4, 0x17ff), Some(("/a".into(), 0)));
        assert_eq!(at(&m, 4, 0x3000), Some(("/span".into(), 0)));
        assert_eq!(at(&m, 4, 0x5800), Some(("/c".into(), 0x7800)));
        assert_eq!(at(&m, 4, 0x6000), None);
        // A damaged record of no length does what one keyed by its start did: it drops
        // the mapping that starts there, and cuts the one that covers its start.
        m.add(4, 0x5800, 0, 0, b"/empty", None);
        assert_eq!(at(&m, 4, 0x5900), None);
        assert_eq!(at(&m, 4, 0x57ff), Some(("/span".into(), 0)));
        m.add(4, 0x1000, 0, 0, b"/empty", None);
        assert_eq!(at(&m, 4, 0x1400), None);
    }

    #[test]
    fn a_located_mapping_places_what_it_covers_as_a_new_lookup_does() {
        let mut m = Maps::default();
        m.add(1, 0x1000, 0x2000, 0x400, b"/nonexistent/lib.so", None);
        m.add(1, 0x3000, 0x1000, 0, b"/nonexistent/other.so", None);
        let l = m.mapping(1, 0x1800).expect("mapped");
        // A lookup with nothing found before it, and one after every other address's.
        let fresh = |m: &mut Maps, pid: i32, ip: u64| Recent::default().place(m, pid, ip);
        let mut recent = Recent::default();
        for ip in (0x800..0x4800).step_by(0x100) {
            let covered = (0x1000..0x3000).contains(&ip);
            assert_eq!(l.place(ip).is_some(), covered, "{ip:#x}");
            if covered {
                assert_eq!(l.place(ip), fresh(&mut m, 1, ip), "{ip:#x}");
                assert_eq!(l.place(ip).map(|p| p.at), Some(ip - 0x1000 + 0x400));
            }
            assert_eq!(recent.place(&mut m, 1, ip), fresh(&mut m, 1, ip), "{ip:#x}");
        }
        assert_eq!(fresh(&mut m, 1, 0x4000), None);
        assert_eq!(fresh(&mut m, 2, 0x1800), None);
    }
}
