//! A dataset file is checked before polars sees it. polars trusts a Parquet file's numbers: a
//! row count of 2^61 is an allocation that aborts the process, a thrift field of another
//! type or a row group unlike its schema is a panic, and 10^7 run-length-encoded rows in
//! 335 KB decode to gigabytes. So each file is read here first, from its bytes (positioned
//! reads of the open file, which leave its offset as it was): the magic at both ends, the
//! footer (at most [`MAX_FOOTER_BYTES`]) by a bounded reader of our own
//! ([`super::thrift`]), the schema and the key-value metadata (exactly those polars writes
//! for some or all of the columns of one of the exporter's tables, of the exporter's types), every row group, column chunk and page header against the
//! others and against the file's length, and what the file would decode to against
//! [`decoded_cap`]. A file that passes is one polars reads in bounded memory; one that does
//! not is an error naming it, the byte and what was expected.
//!
//! What polars still does wrong on a file that passes is caught: [`contained`] turns a
//! panic while reading into an error naming the files.

use super::thrift::{self, Value, FILE_META_DATA, PAGE_HEADER};
use super::DatasetError;
use polars::prelude::*;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::OnceLock;

/// The largest dataset file read. `upcmp export` writes a run's rows of one test and
/// table to a file: a few KB to a few MB (2,000 functions a repetition take about 40 KB).
pub const MAX_FILE_BYTES: u64 = 1 << 30;

/// The largest footer read (upcmp export's are 2 to 30 KB: one row group a 262,144 rows).
pub const MAX_FOOTER_BYTES: u64 = 1 << 20;

/// The largest page header read (a data page's header holds its statistics: two values of
/// at most a few KiB).
const MAX_PAGE_HEADER_BYTES: u64 = 1 << 20;

/// The largest page, decompressed (polars writes pages of 1 MiB; a dictionary page holds
/// the distinct values of a row group).
pub const MAX_PAGE_BYTES: i64 = 256 << 20;

/// What a file may decode to in memory: 16 MiB, or 64 times its size if more. Rows cost
/// their columns' widths (8 bytes a number, 16 a string's view, a byte a boolean, a bit of
/// validity each) and strings their bytes; an export's files decode to less than 20 times their
/// size (less than 20 times: a test holds it), a file of 10^7 run-length-encoded rows in
/// 335 KB to over 3,000 times.
pub fn decoded_cap(file_bytes: u64) -> u64 {
    (16 << 20u64).max(file_bytes.saturating_mul(64))
}

/// A column's type as the exporter writes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Str,
    Int,
    Float,
    Bool,
}

impl Kind {
    fn dtype(self) -> DataType {
        match self {
            Kind::Str => DataType::String,
            Kind::Int => DataType::Int64,
            Kind::Float => DataType::Float64,
            Kind::Bool => DataType::Boolean,
        }
    }

    /// Bytes a row of the column decodes to, besides a string's own bytes.
    fn width(self) -> u64 {
        match self {
            Kind::Str => 16,
            Kind::Int | Kind::Float => 8,
            Kind::Bool => 1,
        }
    }

    /// Parquet's physical type.
    fn physical(self) -> i64 {
        match self {
            Kind::Bool => 0,
            Kind::Int => 2,
            Kind::Float => 5,
            Kind::Str => 6,
        }
    }
}

use Kind::{Bool as B, Float as F, Int as I, Str as S};

/// The columns of each table, as `export.rs` writes them (a test compares them with an
/// export's files).
const TABLES: &[(&str, &[(&str, Kind)])] = &[
    (
        "runs",
        &[
            ("run_id", S),
            ("schema_version", I),
            ("repetition", I),
            ("test_name", S),
            ("host_name", S),
            ("kernel_release", S),
            ("kernel_build_id", S),
            ("started", S),
            ("ended", S),
            ("tool_version", S),
            ("command", S),
            ("event", S),
            ("unit", S),
            ("period", F),
            ("wall_sec", F),
            ("cpus", I),
            ("cpu_seconds", F),
            ("cpu_weight", F),
            ("operations", I),
        ],
    ),
    (
        "labels",
        &[("run_id", S), ("schema_version", I), ("key", S), ("value", S)],
    ),
    (
        "system",
        &[("run_id", S), ("schema_version", I), ("key", S), ("value", S)],
    ),
    (
        "benchmarks",
        &[
            ("run_id", S),
            ("schema_version", I),
            ("repetition", I),
            ("benchmark", S),
            ("copy", I),
            ("value", F),
            ("unit", S),
            ("higher_is_better", B),
        ],
    ),
    (
        "functions",
        &[
            ("run_id", S),
            ("schema_version", I),
            ("repetition", I),
            ("function", S),
            ("module", S),
            ("samples", I),
            ("weight", F),
            ("seconds", F),
            ("clones", S),
        ],
    ),
    (
        "counters",
        &[
            ("run_id", S),
            ("schema_version", I),
            ("repetition", I),
            ("counter", S),
            ("delta", I),
            ("level_start", I),
            ("level_end", I),
            ("window_sec", F),
        ],
    ),
];

/// What the footer of a table's file must hold as polars writes it: the schema, the
/// key-value metadata (the Arrow schema polars reads back) and the column orders.
struct Reference {
    table: &'static str,
    columns: Vec<(&'static str, Kind)>,
    schema: Value,
    key_values: Option<Value>,
    column_orders: Option<Value>,
}

/// The reference of `columns` of `table`, made by writing them with no rows, as the
/// exporter does with rows (the same writer and types). Kept for the next file (a few
/// column lists a dataset: each table's, and those of files written with fewer columns).
fn reference_for(table: &'static str, columns: Vec<(&'static str, Kind)>) -> Result<Arc<Reference>, String> {
    type Cache = std::sync::Mutex<Vec<Arc<Reference>>>;
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    if let Some(r) = cache
        .lock()
        .ok()
        .and_then(|c| c.iter().find(|r| r.table == table && r.columns == columns).cloned())
    {
        return Ok(r);
    }
    let cols: Vec<Column> = columns
        .iter()
        .map(|(n, k)| Column::new_empty((*n).into(), &k.dtype()))
        .collect();
    let fail = |e: String| format!("upcmp could not describe its own table {table}: {e}");
    let mut df = DataFrame::new(0, cols).map_err(|e| fail(e.to_string()))?;
    let mut bytes = Vec::new();
    polars_io::parquet::write::ParquetWriter::new(&mut bytes)
        .finish(&mut df)
        .map_err(|e| fail(e.to_string()))?;
    let n = bytes.len();
    let len = bytes
        .get(n.saturating_sub(8)..n.saturating_sub(4))
        .and_then(|b| <[u8; 4]>::try_from(b).ok())
        .map_or(0, |b| u32::from_le_bytes(b) as usize);
    let footer = bytes
        .get(n.saturating_sub(8 + len)..n.saturating_sub(8))
        .unwrap_or_default();
    let (meta, _) = thrift::read(footer, &FILE_META_DATA).map_err(|e| fail(e.reason))?;
    let r = Arc::new(Reference {
        table,
        columns,
        schema: meta.field(2).cloned().unwrap_or(Value::List(vec![])),
        key_values: meta.field(5).cloned(),
        column_orders: meta.field(7).cloned(),
    });
    if let Ok(mut c) = cache.lock() {
        if c.len() < 64 {
            c.push(r.clone());
        }
    }
    Ok(r)
}

/// Checks that `file` (at `path`) is a Parquet file of a dataset table as `upcmp export`
/// writes it and that polars reads it in bounded memory; see the module's documentation.
pub(super) fn check_file(file: &File, path: &Path) -> Result<(), DatasetError> {
    Check { file, path }.run()
}

struct Check<'a> {
    file: &'a File,
    path: &'a Path,
}

/// A failure, with the byte of the file it is about.
type Fail = (u64, String);

fn fail<T>(at: u64, reason: impl Into<String>) -> Result<T, Fail> {
    Err((at, reason.into()))
}

impl Check<'_> {
    fn run(&self) -> Result<(), DatasetError> {
        self.file_checks().map_err(|(at, reason)| DatasetError::BadFile {
            path: self.path.to_path_buf(),
            reason: format!("not a dataset file as upcmp export writes them: {reason} (at byte {at})"),
        })
    }

    fn read_at(&self, at: u64, len: u64) -> Result<Vec<u8>, Fail> {
        let mut buf = vec![0u8; len as usize];
        self.file
            .read_exact_at(&mut buf, at)
            .map_err(|e| (at, format!("reading {len} bytes: {e}")))?;
        Ok(buf)
    }

    fn file_checks(&self) -> Result<(), Fail> {
        let len = self.file.metadata().map_err(|e| (0, e.to_string()))?.len();
        if len > MAX_FILE_BYTES {
            return fail(
                0,
                format!("{len} bytes, more than the {MAX_FILE_BYTES} a dataset file may have"),
            );
        }
        if len < 12 {
            return fail(0, format!("{len} bytes, too few for Parquet (12 at least)"));
        }
        if self.read_at(0, 4)? != b"PAR1" {
            return fail(0, "no Parquet magic PAR1 at its start");
        }
        let tail = self.read_at(len - 8, 8)?;
        if &tail[4..] != b"PAR1" {
            return fail(len - 4, "no Parquet magic PAR1 at its end");
        }
        let footer_len = u64::from(u32::from_le_bytes([tail[0], tail[1], tail[2], tail[3]]));
        if footer_len > len - 12 || footer_len > MAX_FOOTER_BYTES {
            return fail(
                len - 8,
                format!("a footer of {footer_len} bytes, in a file of {len} (at most {MAX_FOOTER_BYTES})"),
            );
        }
        let footer_at = len - 8 - footer_len;
        let footer = self.read_at(footer_at, footer_len)?;
        let (meta, used) = thrift::read(&footer, &FILE_META_DATA)
            .map_err(|e| (footer_at + e.offset as u64, format!("its footer: {}", e.reason)))?;
        if used as u64 != footer_len {
            return fail(
                footer_at + used as u64,
                format!("its footer ends {} bytes before its end", footer_len - used as u64),
            );
        }
        let reference = self.reference(&meta, footer_at)?;
        self.row_groups(&meta, &reference, footer_at)
    }

    /// The table whose columns the file has (all or some, each once, of the types the
    /// exporter gives them), and the reference its footer must equal.
    fn reference(&self, meta: &Value, at: u64) -> Result<Arc<Reference>, Fail> {
        let elements = meta.list(2);
        let leaves: Vec<(&[u8], Option<i64>)> = elements
            .iter()
            .skip(1)
            .map(|e| (e.bytes(4).unwrap_or_default(), e.int(1)))
            .collect();
        let fits = |columns: &'static [(&'static str, Kind)]| -> Option<Vec<(&'static str, Kind)>> {
            let mut out: Vec<(&'static str, Kind)> = Vec::new();
            for (name, ty) in &leaves {
                let c = columns
                    .iter()
                    .find(|c| c.0.as_bytes() == *name && Some(c.1.physical()) == *ty)?;
                if out.iter().any(|o| o.0 == c.0) {
                    return None;
                }
                out.push(*c);
            }
            (!out.is_empty()).then_some(out)
        };
        let Some((table, columns)) = TABLES.iter().find_map(|(t, cols)| Some((*t, fits(cols)?))) else {
            let names: Vec<String> = leaves
                .iter()
                .map(|(n, _)| crate::model::escaped(&String::from_utf8_lossy(n)).into_owned())
                .collect();
            return fail(
                at,
                format!(
                    "its columns ({}) are not those of a table ({})",
                    names.join(", "),
                    super::TABLES.join(", ")
                ),
            );
        };
        let r = reference_for(table, columns).map_err(|e| (0, e))?;
        if meta.field(2) != Some(&r.schema) {
            return fail(
                at,
                format!("its schema is not the one polars writes for its columns of table {table}"),
            );
        }
        if meta.field(5) != r.key_values.as_ref() {
            return fail(
                at,
                format!("its key-value metadata is not the Arrow schema of table {}", r.table),
            );
        }
        if meta.field(7) != r.column_orders.as_ref() {
            return fail(at, "its column orders are not those polars writes");
        }
        match meta.int(1) {
            Some(1 | 2) => {}
            v => return fail(at, format!("format version {v:?}, not 1 or 2")),
        }
        Ok(r)
    }

    /// Checks the row groups, their column chunks and pages.
    fn row_groups(&self, meta: &Value, r: &Reference, footer_at: u64) -> Result<(), Fail> {
        let len = self.file.metadata().map_err(|e| (0, e.to_string()))?.len();
        let Some(rows) = meta.int(3).filter(|n| *n >= 0) else {
            return fail(footer_at, format!("a row count of {:?}", meta.int(3)));
        };
        let mut sum: i64 = 0;
        let mut decoded: u64 = 0;
        let mut chunks = Vec::new();
        for (g, rg) in meta.list(4).iter().enumerate() {
            let n = match rg.int(3) {
                Some(n) if (0..=rows).contains(&n) => n,
                v => return fail(footer_at, format!("row group {g}: {v:?} rows, in a file of {rows}")),
            };
            sum = sum.saturating_add(n);
            let cols = rg.list(1);
            if cols.len() != r.columns.len() {
                return fail(
                    footer_at,
                    format!(
                        "row group {g}: {} columns, table {} has {}",
                        cols.len(),
                        r.table,
                        r.columns.len()
                    ),
                );
            }
            for (c, (chunk, (name, kind))) in cols.iter().zip(&r.columns).enumerate() {
                let what = format!("row group {g}, column {c} ({name})");
                let m = self.column_chunk(chunk, *kind, name, n, footer_at, &what)?;
                decoded = decoded
                    .saturating_add((n as u64).saturating_mul(kind.width() * 8 + 1) / 8)
                    .saturating_add(if *kind == Kind::Str { m.uncompressed } else { 0 });
                chunks.push((m, *kind, n, what));
            }
        }
        if sum != rows {
            return fail(
                footer_at,
                format!("row groups of {sum} rows in all, in a file of {rows}"),
            );
        }
        let cap = decoded_cap(len);
        if decoded > cap {
            return fail(
                footer_at,
                format!(
                    "{rows} rows that decode to about {decoded} bytes, more than the {cap} a file of {len} bytes may \
                     (docs/security.md)"
                ),
            );
        }
        for (m, kind, n, what) in &chunks {
            self.pages(m, *kind, *n, what)?;
        }
        Ok(())
    }

    fn column_chunk(
        &self,
        chunk: &Value,
        kind: Kind,
        name: &str,
        rows: i64,
        footer_at: u64,
        what: &str,
    ) -> Result<Chunk, Fail> {
        let bad = |reason: String| fail(footer_at, format!("{what}: {reason}"));
        if chunk.field(1).is_some() {
            return bad("its data in another file".into());
        }
        let Some(m) = chunk.field(3) else {
            return bad("no column metadata".into());
        };
        if m.int(1) != Some(kind.physical()) {
            return bad(format!("physical type {:?}, not {}", m.int(1), kind.physical()));
        }
        if m.list(3) != [Value::Binary(name.as_bytes().to_vec())].as_slice() {
            return bad("a path other than its column's name".into());
        }
        let codec = m.int(4).unwrap_or(-1);
        // Uncompressed or zstd: what polars writes (its default).
        if !matches!(codec, 0 | 6) {
            return bad(format!("compression codec {codec}, not zstd (6) or none (0)"));
        }
        if m.list(2).iter().any(|e| !matches!(e, Value::Int(0..=9))) {
            return bad("an unknown encoding".into());
        }
        if m.int(5) != Some(rows) {
            return bad(format!("{:?} values in a row group of {rows} rows", m.int(5)));
        }
        let data_end = self.file.metadata().map_err(|e| (0, e.to_string()))?.len() - 8;
        let data_page = m.int(9).unwrap_or(-1);
        let start = match m.int(11) {
            Some(d) if d > 0 && d < data_page => d,
            Some(d) if d > 0 => return bad(format!("its dictionary page at {d}, after its first data page")),
            _ => data_page,
        };
        let compressed = m.int(7).unwrap_or(-1);
        let uncompressed = m.int(6).unwrap_or(-1);
        if start < 4 || compressed < 0 || start.saturating_add(compressed) as u64 > data_end {
            return bad(format!(
                "{compressed} bytes at byte {start}, not inside the file's {data_end} bytes of data"
            ));
        }
        if !(0..=MAX_PAGE_BYTES.saturating_mul(1024)).contains(&uncompressed) {
            return bad(format!("{uncompressed} bytes uncompressed"));
        }
        if let Some(s) = m.field(12) {
            self.statistics(s, kind, rows)
                .map_err(|r| (footer_at, format!("{what}: statistics: {r}")))?;
        }
        for (off, len) in [(10, None), (14, Some(15))] {
            if let Some(o) = m.int(off) {
                let l = len.and_then(|l| m.int(l)).unwrap_or(0);
                if o < 4 || l < 0 || o.saturating_add(l) as u64 > data_end {
                    return bad(format!("field {off}: {l} bytes at byte {o}, outside the file"));
                }
            }
        }
        for (off, len) in [(4, 5), (6, 7)] {
            if let Some(o) = chunk.int(off) {
                let l = chunk.int(len).unwrap_or(0);
                if o < 4 || l < 0 || o.saturating_add(l) as u64 > data_end {
                    return bad(format!("an index of {l} bytes at byte {o}, outside the file"));
                }
            }
        }
        if let Some(s) = m.field(16) {
            if s.int(1).is_some_and(|v| v < 0) || s.list(2).len() > 2 || s.list(3).len() > 2 {
                return bad("size statistics of a nested or negative column".into());
            }
        }
        Ok(Chunk {
            start: start as u64,
            end: (start + compressed) as u64,
            uncompressed: uncompressed as u64,
            values: rows,
            codec,
            dictionary: m.int(11).is_some_and(|d| d > 0),
        })
    }

    /// Statistics hold values of the column's width and counts within its rows.
    fn statistics(&self, s: &Value, kind: Kind, rows: i64) -> Result<(), String> {
        let width = match kind {
            Kind::Int | Kind::Float => Some(8),
            Kind::Bool => Some(1),
            Kind::Str => None,
        };
        for id in [1, 2, 5, 6] {
            if let (Some(w), Some(v)) = (width, s.bytes(id)) {
                if v.len() != w {
                    return Err(format!("a value of {} bytes for a column of {w}", v.len()));
                }
            }
        }
        for id in [3, 4] {
            if let Some(n) = s.int(id) {
                if !(0..=rows).contains(&n) {
                    return Err(format!("a count of {n} in {rows} rows"));
                }
            }
        }
        Ok(())
    }

    /// Walks the pages of a column chunk: each header read and checked, each page inside the
    /// chunk, the values adding up to the chunk's.
    fn pages(&self, c: &Chunk, kind: Kind, rows: i64, what: &str) -> Result<(), Fail> {
        let mut at = c.start;
        let mut values: i64 = 0;
        let mut uncompressed: u64 = 0;
        let mut dictionary = false;
        let mut first = true;
        while at < c.end {
            let (h, hlen) = self.page_header(at, c.end)?;
            let bad = |reason: String| fail(at, format!("{what}: the page header at byte {at}: {reason}"));
            let (ty, size, csize) = (h.int(1), h.int(2).unwrap_or(-1), h.int(3).unwrap_or(-1));
            if !(0..=MAX_PAGE_BYTES).contains(&size) || csize < 0 {
                return bad(format!(
                    "a page of {csize} bytes, {size} uncompressed (at most {MAX_PAGE_BYTES})"
                ));
            }
            let next = at + hlen + csize as u64;
            if next > c.end {
                return bad(format!(
                    "a page of {csize} bytes past the end of its column chunk at byte {}",
                    c.end
                ));
            }
            if c.codec == 0 && csize != size {
                return bad(format!("{csize} bytes uncompressed as {size}"));
            }
            let left = rows - values;
            match ty {
                Some(2) => {
                    let d = h.field(7);
                    let n = d.and_then(|d| d.int(1)).unwrap_or(-1);
                    if !first || !c.dictionary || kind == Kind::Bool {
                        return bad("a dictionary page where none can be".into());
                    }
                    if !(0..=rows).contains(&n) || n > size {
                        return bad(format!("a dictionary of {n} values in {size} bytes, for {rows} rows"));
                    }
                    if !matches!(d.and_then(|d| d.int(2)), Some(0 | 2)) {
                        return bad("a dictionary not plainly encoded".into());
                    }
                    dictionary = true;
                }
                Some(0) => {
                    let d = h.field(5);
                    let n = d.and_then(|d| d.int(1)).unwrap_or(-1);
                    if !(1..=left).contains(&n) {
                        return bad(format!("{n} values, where {left} of the {rows} rows are left"));
                    }
                    let enc = d.and_then(|d| d.int(2)).unwrap_or(-1);
                    self.encoding(enc, dictionary)
                        .map_err(|r| (at, format!("{what}: {r}")))?;
                    for id in [3, 4] {
                        if !matches!(d.and_then(|d| d.int(id)), Some(3 | 4)) {
                            return bad("levels neither RLE nor bit-packed".into());
                        }
                    }
                    values += n;
                }
                Some(3) => {
                    let d = h.field(8);
                    let get = |id| d.and_then(|d| d.int(id)).unwrap_or(-1);
                    let (n, nulls, nrows) = (get(1), get(2), get(3));
                    if !(1..=left).contains(&n) || !(0..=n).contains(&nulls) || nrows != n {
                        return bad(format!(
                            "{n} values, {nulls} nulls and {nrows} rows, where {left} of the {rows} rows are left"
                        ));
                    }
                    let (def, rep) = (get(5), get(6));
                    if rep != 0 || def < 0 || def > csize || def > size {
                        return bad(format!("levels of {def} and {rep} bytes in a page of {csize}"));
                    }
                    self.encoding(get(4), dictionary)
                        .map_err(|r| (at, format!("{what}: {r}")))?;
                    values += n;
                }
                _ => return bad(format!("a page of type {ty:?}, not a data or dictionary page")),
            }
            if let Some(s) = h
                .field(5)
                .and_then(|d| d.field(5))
                .or_else(|| h.field(8).and_then(|d| d.field(8)))
            {
                self.statistics(s, kind, rows)
                    .map_err(|r| (at, format!("{what}: page statistics: {r}")))?;
            }
            uncompressed += hlen + size as u64;
            first = false;
            at = next;
        }
        if values != c.values {
            return fail(
                c.start,
                format!("{what}: pages of {values} values, in a column chunk of {}", c.values),
            );
        }
        if uncompressed != c.uncompressed {
            return fail(
                c.start,
                format!(
                    "{what}: pages of {uncompressed} bytes uncompressed, in a column chunk of {}",
                    c.uncompressed
                ),
            );
        }
        Ok(())
    }

    fn encoding(&self, enc: i64, dictionary: bool) -> Result<(), String> {
        match enc {
            2 | 8 if dictionary => Ok(()),
            2 | 8 => Err("a dictionary-encoded page without a dictionary".into()),
            0 | 3 | 5 | 6 | 7 | 9 => Ok(()),
            e => Err(format!("a page of encoding {e}")),
        }
    }

    /// The page header at `at` and its length, read from at most
    /// [`MAX_PAGE_HEADER_BYTES`] before `end`.
    fn page_header(&self, at: u64, end: u64) -> Result<(Value, u64), Fail> {
        let mut want = 4096;
        loop {
            let n = want.min(end - at);
            let buf = self.read_at(at, n)?;
            match thrift::read(&buf, &PAGE_HEADER) {
                Ok((v, used)) => return Ok((v, used as u64)),
                Err(e) if e.truncated && n < end - at && want < MAX_PAGE_HEADER_BYTES => want *= 16,
                Err(e) => return fail(at + e.offset as u64, format!("a page header: {}", e.reason)),
            }
        }
    }
}

/// A column chunk's place and sizes, from its metadata.
struct Chunk {
    start: u64,
    end: u64,
    uncompressed: u64,
    values: i64,
    codec: i64,
    dictionary: bool,
}

/// Runs `read` (a polars collect of `files`); a panic in it becomes an error naming them
/// rather than ending upcmp. The panic's message is kept for the error, not printed.
pub(super) fn contained<T, P: AsRef<Path>>(
    files: &[P],
    read: impl FnOnce() -> Result<T, DatasetError>,
) -> Result<T, DatasetError> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;
    static READING: AtomicUsize = AtomicUsize::new(0);
    static MESSAGE: Mutex<Option<String>> = Mutex::new(None);
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            // polars panics on its own threads: while a read is contained, any panic is its.
            if READING.load(Ordering::SeqCst) == 0 {
                return previous(info);
            }
            let msg = info
                .payload()
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| info.payload().downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "no message".into());
            if let Ok(mut m) = MESSAGE.lock() {
                m.get_or_insert(msg);
            }
        }));
    });
    READING.fetch_add(1, Ordering::SeqCst);
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(read));
    READING.fetch_sub(1, Ordering::SeqCst);
    result.unwrap_or_else(|_| {
        let msg = MESSAGE.lock().ok().and_then(|mut m| m.take()).unwrap_or_default();
        let first = files.first().map(|f| f.as_ref().to_path_buf()).unwrap_or_default();
        Err(DatasetError::BadFile {
            path: first,
            reason: format!(
                "polars failed reading it{} ({}): the file is damaged or was not written by upcmp export",
                match files.len() {
                    0 | 1 => String::new(),
                    n => format!(" or one of the {} files read with it", n - 1),
                },
                crate::model::escaped(&msg)
            ),
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    /// The files of demo/run1 and demo/run2 exported into `dir/ds`.
    fn exported(dir: &Path) -> Vec<PathBuf> {
        let ds = dir.join("ds");
        for run in ["run1", "run2"] {
            let r = crate::store::run::load_run(&Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/demo").join(run))
                .unwrap();
            super::super::export_run(&r, &ds, &Default::default()).unwrap();
        }
        let mut out = Vec::new();
        let mut stack = vec![ds];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    stack.push(p);
                } else {
                    out.push(p);
                }
            }
        }
        out
    }

    fn check_bytes(dir: &Path, data: &[u8]) -> Result<(), String> {
        let p = dir.join("x.parquet");
        crate::fsio::write_atomic(&p, data, 0o644).unwrap();
        let f = File::open(&p).unwrap();
        check_file(&f, &p).map_err(|e| e.to_string())
    }

    #[test]
    fn every_file_of_an_export_passes_and_its_cuts_do_not() {
        let tmp = tempfile::tempdir().unwrap();
        let files = exported(tmp.path());
        assert_eq!(files.len(), 108);
        let mut most = 0.0f64;
        for p in &files {
            let f = File::open(p).unwrap();
            check_file(&f, p).unwrap_or_else(|e| panic!("{e}"));
            // What the file decodes to, as the check counts it, against its size.
            let df = polars_io::SerReader::finish(polars_io::parquet::read::ParquetReader::new(File::open(p).unwrap()))
                .unwrap();
            let len = f.metadata().unwrap().len() as f64;
            most = most.max(df.estimated_size() as f64 / len);
        }
        assert!(most < 20.0, "an export's file decodes to {most:.1} times its size");
        let data = std::fs::read(
            files
                .iter()
                .find(|p| p.to_string_lossy().contains("/functions/"))
                .unwrap(),
        )
        .unwrap();
        for n in [0, 4, 11, 12, data.len() / 2, data.len() - 9, data.len() - 1] {
            let e = check_bytes(tmp.path(), &data[..n]).unwrap_err();
            assert!(
                e.contains("x.parquet: not a dataset file as upcmp export writes them"),
                "{n}: {e}"
            );
        }
        // The footer's length past the file's.
        let mut long = data.clone();
        let n = long.len();
        long[n - 8..n - 4].copy_from_slice(&(n as u32).to_le_bytes());
        assert!(check_bytes(tmp.path(), &long).unwrap_err().contains("a footer of"));
    }

    #[test]
    fn the_tables_are_those_of_the_dataset() {
        let names: Vec<&str> = TABLES.iter().map(|t| t.0).collect();
        assert_eq!(names, super::super::TABLES);
        for (table, columns) in TABLES {
            let r = reference_for(table, columns.to_vec()).unwrap();
            assert!(matches!(&r.schema, Value::List(l) if l.len() == columns.len() + 1));
        }
    }
}
