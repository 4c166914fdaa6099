//! The dataset readers run on a Parquet file's raw bytes: the counterpart, for a dataset's
//! files, of `upcmp::import::fuzz`. The fuzz target `dataset_parquet` (`fuzz/`) and the
//! stable corpus and mutation tests (`tests/fuzz.rs`) call [`check_parquet`], so an input
//! fails the same way under each (docs/fuzzing.md).
//!
//! The input takes the place of one run's file of a table in a small dataset ([`FuzzDataset`]:
//! two runs of one test, labelled `side=a` and `side=b`), and the readers of `upcmp history`
//! (runs, benchmarks, top functions, function series) and of a group comparison (`--side
//! side=a --side side=b`) read it. The properties: each returns, `Ok` or an error (no
//! panic, no abort); a file the check refuses is refused by every reader with an error
//! naming it; memory stays bounded (the callers bound it).

use super::check::check_file;
use super::scan::{each_function_seconds, scan_benchmarks, scan_runs, top_functions, Selection};
use super::thrift::{self, Value, FILE_META_DATA, PAGE_HEADER};
use super::{DatasetError, TABLES};
use std::path::{Path, PathBuf};

/// The test of the fuzz dataset.
const TEST: &str = "getpid";

/// A dataset of two runs of one test, one of whose files an input replaces.
#[derive(Debug)]
pub struct FuzzDataset {
    /// Its directory.
    pub dir: PathBuf,
    /// The first run's file of each table, with its bytes as exported.
    pub files: Vec<(&'static str, PathBuf, Vec<u8>)>,
}

/// Exports test `getpid` of the runs `run1` (labelled `side=a`) and `run2` (`side=b`) into
/// `dir` (created).
pub fn fuzz_dataset(run1: &Path, run2: &Path, dir: &Path) -> Result<FuzzDataset, DatasetError> {
    let mut id1 = String::new();
    for (run, side) in [(run1, "a"), (run2, "b")] {
        let mut r = crate::store::run::load_run(run)?;
        r.tests.retain(|t| t.name == TEST);
        let opts = super::ExportOptions {
            labels: vec![("side".into(), side.into())],
            ..Default::default()
        };
        let sum = super::export_run(&r, dir, &opts)?;
        if side == "a" {
            id1 = sum.run_id;
        }
    }
    let mut files = Vec::new();
    for table in TABLES {
        let mut stack = vec![dir.join(table)];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).map_err(super::io_err(&d))? {
                let p = e.map_err(super::io_err(&d))?.path();
                if p.is_dir() {
                    stack.push(p);
                } else if p.file_name().is_some_and(|n| *n == *format!("{id1}.parquet")) {
                    let bytes =
                        crate::fsio::read_file(&p, crate::fsio::Links::Refuse, 1 << 30).map_err(super::io_err(&p))?;
                    files.push((*table, p, bytes));
                }
            }
        }
    }
    Ok(FuzzDataset {
        dir: dir.to_path_buf(),
        files,
    })
}

/// Puts `data` in place of each table's file of the first run in turn and runs the readers
/// on the dataset; panics when a property does not hold. Returns whether the check took
/// the input as a file of some table.
pub fn check_parquet(data: &[u8], ds: &FuzzDataset) -> bool {
    let mut accepted = false;
    for (table, path, original) in &ds.files {
        crate::fsio::write_atomic(path, data, 0o644).expect("writing the input into the dataset");
        let file = crate::fsio::open_regular(path, crate::fsio::Links::Refuse).expect("opening the input");
        let ok = check_file(&file, path).is_ok();
        // A file refused is refused by the readers too, naming it: tried in one table (the
        // readers are the same for all), every table when it is accepted.
        if ok || (!accepted && *table == "functions") {
            let named = |e: &DatasetError| e.to_string().contains(&path.display().to_string());
            let history = history_readers(&ds.dir);
            let groups = super::group::load_groups(
                &ds.dir,
                [
                    &vec![("side".to_string(), "a".to_string())],
                    &vec![("side".to_string(), "b".to_string())],
                ],
            );
            if !ok {
                for (what, r) in [("history", history.err()), ("group comparison", groups.err())] {
                    let e = r.unwrap_or_else(|| panic!("{table}: the {what} read a file the check refuses"));
                    assert!(named(&e), "{table}: the {what}'s error does not name the file: {e}");
                }
            }
        }
        accepted |= ok;
        crate::fsio::write_atomic(path, original, 0o644).expect("restoring the dataset");
    }
    accepted
}

/// What `upcmp history --test getpid` reads.
fn history_readers(dataset: &Path) -> Result<(), DatasetError> {
    let runs = scan_runs(dataset, &Selection::new(Some(TEST.into()), vec![]))?;
    scan_benchmarks(dataset, &runs)?;
    let top = top_functions(dataset, &runs, 10, &[])?;
    let mut n = 0usize;
    each_function_seconds(dataset, &runs, Some(&top), |_| n += 1)?;
    Ok(())
}

/// Numbers that readers get wrong (thrift's integers are at most 64 bits).
const NUMBERS: &[i64] = &[0, -1, 1, 1 << 31, (1 << 31) - 1, 1 << 32, 1 << 61, i64::MAX, i64::MIN];

/// Every integer of the footer of Parquet `data` and of the first page header of each of
/// its column chunks, one of which is set to one of [`NUMBERS`] by [`set_number`].
fn integer_places(v: &Value, out: &mut Vec<Vec<usize>>, at: &mut Vec<usize>) {
    match v {
        Value::Int(_) => out.push(at.clone()),
        Value::Struct(f) => {
            for (k, (_, x)) in f.iter().enumerate() {
                at.push(k);
                integer_places(x, out, at);
                at.pop();
            }
        }
        Value::List(l) => {
            for (k, x) in l.iter().enumerate() {
                at.push(k);
                integer_places(x, out, at);
                at.pop();
            }
        }
        _ => {}
    }
}

fn place_mut<'a>(v: &'a mut Value, at: &[usize]) -> Option<&'a mut Value> {
    let Some((&k, rest)) = at.split_first() else {
        return Some(v);
    };
    match v {
        Value::Struct(f) => place_mut(&mut f.get_mut(k)?.1, rest),
        Value::List(l) => place_mut(l.get_mut(k)?, rest),
        _ => None,
    }
}

/// `data`, a Parquet file, with one integer of its footer or of a page header set to one of
/// [`NUMBERS`]: the `pick`th of all such changes (modulo their number). The footer or page
/// header is written back whole (its length may change: a page header's change then moves
/// the pages after it). None when `data` has no footer this reader reads.
pub fn set_number(data: &[u8], pick: u64) -> Option<Vec<u8>> {
    let n = data.len();
    if n < 12 || &data[n - 4..] != b"PAR1" {
        return None;
    }
    let len = u32::from_le_bytes(data[n - 8..n - 4].try_into().ok()?) as usize;
    let footer_at = n.checked_sub(8 + len).filter(|a| *a >= 4)?;
    let (meta, _) = thrift::read(&data[footer_at..n - 8], &FILE_META_DATA).ok()?;
    // The first page header of each column chunk.
    let mut headers: Vec<(usize, Value, usize)> = Vec::new();
    for rg in meta.list(4) {
        for c in rg.list(1) {
            let Some(m) = c.field(3) else { continue };
            let start = m.int(11).filter(|d| *d > 0).or(m.int(9)).unwrap_or(0);
            if let Some(buf) = usize::try_from(start).ok().and_then(|s| data.get(s..footer_at)) {
                if let Ok((h, used)) = thrift::read(buf, &PAGE_HEADER) {
                    headers.push((start as usize, h, used));
                }
            }
        }
    }
    let mut places = Vec::new();
    integer_places(&meta, &mut places, &mut Vec::new());
    let footer_places = places.len();
    let mut header_places = Vec::new();
    for (k, (_, h, _)) in headers.iter().enumerate() {
        let mut p = Vec::new();
        integer_places(h, &mut p, &mut Vec::new());
        header_places.extend(p.into_iter().map(|p| (k, p)));
    }
    let total = (footer_places + header_places.len()) * NUMBERS.len();
    if total == 0 {
        return None;
    }
    let pick = (pick % total as u64) as usize;
    let (place, number) = (pick / NUMBERS.len(), NUMBERS[pick % NUMBERS.len()]);
    if place < footer_places {
        let mut meta = meta;
        *place_mut(&mut meta, &places[place])? = Value::Int(number);
        let mut footer = Vec::new();
        thrift::write(&meta, &FILE_META_DATA, &mut footer);
        let mut out = data[..footer_at].to_vec();
        out.extend_from_slice(&footer);
        out.extend_from_slice(&(footer.len() as u32).to_le_bytes());
        out.extend_from_slice(b"PAR1");
        Some(out)
    } else {
        let (k, at) = &header_places[place - footer_places];
        let (start, mut h, used) = headers[*k].clone();
        *place_mut(&mut h, at)? = Value::Int(number);
        let mut header = Vec::new();
        thrift::write(&h, &PAGE_HEADER, &mut header);
        let mut out = data[..start].to_vec();
        out.extend_from_slice(&header);
        out.extend_from_slice(&data[start + used..]);
        Some(out)
    }
}
