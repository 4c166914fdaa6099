//! A test's profile rebuilt from its `samples.gz`, with another symbol table, idle set or
//! user naming, keeping the header (CPUs, wall time, period, /proc/stat) of its `prfout`:
//! no rerun needed (docs/format.md, `TEST/samples.gz`).

use crate::model::{IdleSet, Profile, ProfileMeta, RecordProfiler, SampleFilter, UserBy};
use crate::store::samples::for_each_record;
use crate::store::{prfout, StoreError};
use crate::symbols::{load_kept_perf_maps, KernelSymbols};
use std::path::Path;

/// Rebuilds the profile of the test directory `test_dir`.
pub fn rebuild(
    test_dir: &Path,
    symbols: &KernelSymbols,
    idle: &IdleSet,
    user_by: UserBy,
) -> Result<Profile, StoreError> {
    rebuild_filtered(test_dir, symbols, idle, user_by, &SampleFilter::default())
}

/// [`rebuild`] keeping only the samples `filter` keeps; with CPUs named, the profile
/// has only those CPUs (the others' time is not the filtered profile's idle time).
pub fn rebuild_filtered(
    test_dir: &Path,
    symbols: &KernelSymbols,
    idle: &IdleSet,
    user_by: UserBy,
    filter: &SampleFilter,
) -> Result<Profile, StoreError> {
    let mut old = prfout::read(&test_dir.join(prfout::PRFOUT_FILE))?;
    if !filter.cpus.is_empty() {
        old.cpus.retain(|c| filter.cpus.contains(&c.cpu));
    }
    let cpus: Vec<u32> = old.cpus.iter().map(|c| c.cpu).collect();
    // A version 1 stream's samples carry no period: each weighs the profile's.
    let maps = load_kept_perf_maps(test_dir);
    let mut b = RecordProfiler::new(symbols, &cpus, user_by, old.period.round() as u64)
        .with_filter(filter.clone())
        .with_user_code(&maps);
    for_each_record(&test_dir.join("samples.gz"), |r| b.add(&r))?;
    let period = old.fixed_period().then_some(old.period);
    let meta = ProfileMeta {
        test: old.test,
        command: old.command,
        event: old.event,
        unit: old.unit,
        period,
        wall_sec: old.wall_sec,
    };
    let mut p = b.finish(meta, idle, old.warnings);
    // /proc/stat's busy time is every process's: it does not stand for a filtered one.
    if filter.is_empty() {
        for (new, old) in p.cpus.iter_mut().zip(&old.cpus) {
            new.procstat_busy_sec = old.procstat_busy_sec;
        }
    }
    Ok(p)
}
