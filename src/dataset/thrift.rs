//! Thrift's compact protocol as Parquet writes its footer and page headers: a reader typed by
//! the structures of `parquet.thrift` that `upcmp export` writes, bounded in depth, in values
//! and in sizes (a list or a string never longer than the bytes left), so that no number in
//! the input sizes an allocation; and the writer of the same, with which the tests and the
//! fuzz harness change a number of a real footer and write it back.
//!
//! Field ids must rise within a structure (writers emit them so), every field must be one
//! of its structure's and carry the wire type of its declaration: polars' own reader trusts
//! the declaration and was made to panic by a boolean where another type was declared.

/// A field's declared type.
#[derive(Debug)]
pub enum Ty {
    /// `bool`.
    Bool,
    /// `i8` (`byte`).
    I8,
    /// `i16`.
    I16,
    /// `i32` (also the enums).
    I32,
    /// `i64`.
    I64,
    /// `double`.
    Double,
    /// `binary` / `string`.
    Binary,
    /// A structure (or a union: a structure of one field).
    Struct(&'static Def),
    /// `list<T>`.
    List(&'static Ty),
}

/// A structure of `parquet.thrift`: its fields by id.
#[derive(Debug)]
pub struct Def {
    /// Its name, for messages.
    pub name: &'static str,
    /// `(id, name, type)`, ids rising.
    pub fields: &'static [(i16, &'static str, Ty)],
}

/// A value read.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// A boolean.
    Bool(bool),
    /// Any integer.
    Int(i64),
    /// A double, as its bits (so that values compare exactly).
    Double(u64),
    /// Bytes.
    Binary(Vec<u8>),
    /// A structure's fields present, ids rising.
    Struct(Vec<(i16, Value)>),
    /// A list's elements.
    List(Vec<Value>),
}

impl Value {
    /// Field `id` of a structure.
    pub fn field(&self, id: i16) -> Option<&Value> {
        match self {
            Value::Struct(f) => f.iter().find(|(i, _)| *i == id).map(|(_, v)| v),
            _ => None,
        }
    }

    /// Field `id` of a structure, as an integer.
    pub fn int(&self, id: i16) -> Option<i64> {
        match self.field(id) {
            Some(Value::Int(v)) => Some(*v),
            _ => None,
        }
    }

    /// Field `id` of a structure, as a list.
    pub fn list(&self, id: i16) -> &[Value] {
        match self.field(id) {
            Some(Value::List(v)) => v,
            _ => &[],
        }
    }

    /// Field `id` of a structure, as bytes.
    pub fn bytes(&self, id: i16) -> Option<&[u8]> {
        match self.field(id) {
            Some(Value::Binary(v)) => Some(v),
            _ => None,
        }
    }
}

/// Why bytes are not the structure expected, and at which byte of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThriftError {
    /// Offset in the bytes read.
    pub offset: usize,
    /// What was wrong.
    pub reason: String,
    /// Whether the bytes ended inside the structure (more bytes may complete it).
    pub truncated: bool,
}

/// Nested structures and lists at most (a footer nests 6 deep).
const MAX_DEPTH: usize = 16;

/// Values at most in one structure read (a footer of upcmp export has a few thousand).
pub const MAX_VALUES: usize = 1 << 20;

struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    values: usize,
}

const EMPTY: Def = Def {
    name: "empty structure",
    fields: &[],
};

/// Reads one structure `def` from the start of `buf`: the value and the bytes it took.
pub fn read(buf: &[u8], def: &'static Def) -> Result<(Value, usize), ThriftError> {
    let mut r = Reader { buf, pos: 0, values: 0 };
    let v = r.structure(def, 0)?;
    Ok((v, r.pos))
}

impl Reader<'_> {
    fn fail<T>(&self, reason: impl Into<String>) -> Result<T, ThriftError> {
        Err(ThriftError {
            offset: self.pos,
            reason: reason.into(),
            truncated: false,
        })
    }

    fn byte(&mut self) -> Result<u8, ThriftError> {
        match self.buf.get(self.pos) {
            Some(&b) => {
                self.pos += 1;
                Ok(b)
            }
            None => Err(ThriftError {
                offset: self.pos,
                reason: "the bytes end inside a structure".into(),
                truncated: true,
            }),
        }
    }

    fn varint(&mut self) -> Result<u64, ThriftError> {
        let mut v: u64 = 0;
        for i in 0..10 {
            let b = self.byte()?;
            if i == 9 && b > 1 {
                return self.fail("a varint past 64 bits");
            }
            v |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        self.fail("a varint past 10 bytes")
    }

    fn zigzag(&mut self, bits: u32) -> Result<i64, ThriftError> {
        let u = self.varint()?;
        let v = ((u >> 1) as i64) ^ -((u & 1) as i64);
        if bits < 64 && (v < -(1i64 << (bits - 1)) || v >= 1i64 << (bits - 1)) {
            return self.fail(format!("{v} does not fit the field's {bits} bits"));
        }
        Ok(v)
    }

    fn count(&mut self) -> Result<(), ThriftError> {
        self.values += 1;
        if self.values > MAX_VALUES {
            return self.fail(format!("more than {MAX_VALUES} values"));
        }
        Ok(())
    }

    fn structure(&mut self, def: &'static Def, depth: usize) -> Result<Value, ThriftError> {
        if depth > MAX_DEPTH {
            return self.fail(format!("structures nested more than {MAX_DEPTH} deep"));
        }
        self.count()?;
        let mut fields: Vec<(i16, Value)> = Vec::new();
        let mut last: i16 = 0;
        loop {
            let at = self.pos;
            let b = self.byte()?;
            if b == 0 {
                return Ok(Value::Struct(fields));
            }
            let (delta, wire) = (b >> 4, b & 0x0f);
            let id = if delta != 0 {
                i64::from(last) + i64::from(delta)
            } else {
                self.zigzag(16)?
            };
            if id <= i64::from(last) {
                self.pos = at;
                return self.fail(format!("{}: field {id} after field {last}", def.name));
            }
            let id = id as i16;
            let Some((_, name, ty)) = def.fields.iter().find(|f| f.0 == id) else {
                self.pos = at;
                return self.fail(format!("{}: field {id} is none of its fields", def.name));
            };
            let v = match (ty, wire) {
                (Ty::Bool, 1 | 2) => {
                    self.count()?;
                    Value::Bool(wire == 1)
                }
                (_, _) if wire_type(ty) == wire => self.value(ty, depth)?,
                _ => {
                    self.pos = at;
                    return self.fail(format!(
                        "{}.{name}: wire type {wire}, not that of its declared type ({})",
                        def.name,
                        wire_type(ty)
                    ));
                }
            };
            fields.push((id, v));
            last = id;
        }
    }

    /// A value of `ty` (not a boolean field's, which its header holds).
    fn value(&mut self, ty: &'static Ty, depth: usize) -> Result<Value, ThriftError> {
        match ty {
            Ty::Struct(def) => return self.structure(def, depth + 1),
            Ty::List(elem) => return self.list(elem, depth + 1),
            _ => {}
        }
        self.count()?;
        Ok(match ty {
            Ty::Bool => match self.byte()? {
                1 => Value::Bool(true),
                2 => Value::Bool(false),
                b => {
                    self.pos -= 1;
                    return self.fail(format!("a boolean of {b}, not 1 or 2"));
                }
            },
            Ty::I8 => Value::Int(i64::from(self.byte()? as i8)),
            Ty::I16 => Value::Int(self.zigzag(16)?),
            Ty::I32 => Value::Int(self.zigzag(32)?),
            Ty::I64 => Value::Int(self.zigzag(64)?),
            Ty::Double => {
                let mut b = [0u8; 8];
                for x in &mut b {
                    *x = self.byte()?;
                }
                Value::Double(u64::from_le_bytes(b))
            }
            Ty::Binary => {
                let len = self.varint()?;
                let left = (self.buf.len() - self.pos) as u64;
                if len > left {
                    return Err(ThriftError {
                        offset: self.pos,
                        reason: format!("a string of {len} bytes, {left} left"),
                        truncated: true,
                    });
                }
                let v = self.buf[self.pos..self.pos + len as usize].to_vec();
                self.pos += len as usize;
                Value::Binary(v)
            }
            Ty::Struct(_) | Ty::List(_) => unreachable!("handled above"),
        })
    }

    fn list(&mut self, elem: &'static Ty, depth: usize) -> Result<Value, ThriftError> {
        if depth > MAX_DEPTH {
            return self.fail(format!("lists nested more than {MAX_DEPTH} deep"));
        }
        self.count()?;
        let at = self.pos;
        let b = self.byte()?;
        let (size, wire) = (b >> 4, b & 0x0f);
        let size = if size == 15 { self.varint()? } else { u64::from(size) };
        let wire_ok = match elem {
            Ty::Bool => wire == 1 || wire == 2,
            _ => wire == wire_type(elem),
        };
        if !wire_ok {
            self.pos = at;
            return self.fail(format!(
                "a list of wire type {wire}, not that of its declared type ({})",
                wire_type(elem)
            ));
        }
        // Every element takes a byte at least: a longer list cannot be in the bytes left.
        let left = (self.buf.len() - self.pos) as u64;
        if size > left {
            return Err(ThriftError {
                offset: at,
                reason: format!("a list of {size} elements, {left} bytes left"),
                truncated: true,
            });
        }
        let mut out = Vec::new();
        for _ in 0..size {
            out.push(self.value(elem, depth)?);
        }
        Ok(Value::List(out))
    }
}

/// The compact protocol's wire type of a declared type.
fn wire_type(ty: &Ty) -> u8 {
    match ty {
        Ty::Bool => 1,
        Ty::I8 => 3,
        Ty::I16 => 4,
        Ty::I32 => 5,
        Ty::I64 => 6,
        Ty::Double => 7,
        Ty::Binary => 8,
        Ty::List(_) => 9,
        Ty::Struct(_) => 12,
    }
}

/// Writes `v`, a structure `def`, in the compact protocol. A value not of its declared
/// type is written as its declared type's zero.
pub fn write(v: &Value, def: &'static Def, out: &mut Vec<u8>) {
    write_struct(v, def, out);
}

fn varint(mut u: u64, out: &mut Vec<u8>) {
    while u >= 0x80 {
        out.push((u as u8) | 0x80);
        u >>= 7;
    }
    out.push(u as u8);
}

fn zigzag(v: i64, out: &mut Vec<u8>) {
    varint(((v << 1) ^ (v >> 63)) as u64, out);
}

fn write_struct(v: &Value, def: &'static Def, out: &mut Vec<u8>) {
    let fields: &[(i16, Value)] = match v {
        Value::Struct(f) => f,
        _ => &[],
    };
    let mut last: i16 = 0;
    for (id, fv) in fields {
        let Some((_, _, ty)) = def.fields.iter().find(|f| f.0 == *id) else {
            continue;
        };
        let wire = match (ty, fv) {
            (Ty::Bool, Value::Bool(false)) => 2,
            _ => wire_type(ty),
        };
        let delta = i32::from(*id) - i32::from(last);
        if (1..=15).contains(&delta) {
            out.push(((delta as u8) << 4) | wire);
        } else {
            out.push(wire);
            zigzag(i64::from(*id), out);
        }
        if !matches!(ty, Ty::Bool) {
            write_value(fv, ty, out);
        }
        last = *id;
    }
    out.push(0);
}

fn write_value(v: &Value, ty: &'static Ty, out: &mut Vec<u8>) {
    let int = match v {
        Value::Int(i) => *i,
        _ => 0,
    };
    match ty {
        Ty::Bool => out.push(if matches!(v, Value::Bool(true)) { 1 } else { 2 }),
        Ty::I8 => out.push(int as u8),
        Ty::I16 | Ty::I32 | Ty::I64 => zigzag(int, out),
        Ty::Double => out.extend_from_slice(&match v {
            Value::Double(b) => b.to_le_bytes(),
            _ => [0; 8],
        }),
        Ty::Binary => {
            let b: &[u8] = match v {
                Value::Binary(b) => b,
                _ => &[],
            };
            varint(b.len() as u64, out);
            out.extend_from_slice(b);
        }
        Ty::Struct(def) => write_struct(v, def, out),
        Ty::List(elem) => {
            let items: &[Value] = match v {
                Value::List(l) => l,
                _ => &[],
            };
            let wire = wire_type(elem);
            if items.len() < 15 {
                out.push(((items.len() as u8) << 4) | wire);
            } else {
                out.push(0xf0 | wire);
                varint(items.len() as u64, out);
            }
            for i in items {
                write_value(i, elem, out);
            }
        }
    }
}

// The structures of parquet.thrift that a Parquet file of upcmp export holds.

const KEY_VALUE: Def = Def {
    name: "KeyValue",
    fields: &[(1, "key", Ty::Binary), (2, "value", Ty::Binary)],
};

const DECIMAL_TYPE: Def = Def {
    name: "DecimalType",
    fields: &[(1, "scale", Ty::I32), (2, "precision", Ty::I32)],
};

const TIME_UNIT: Def = Def {
    name: "TimeUnit",
    fields: &[
        (1, "MILLIS", Ty::Struct(&EMPTY)),
        (2, "MICROS", Ty::Struct(&EMPTY)),
        (3, "NANOS", Ty::Struct(&EMPTY)),
    ],
};

const TIME_TYPE: Def = Def {
    name: "TimeType",
    fields: &[(1, "isAdjustedToUTC", Ty::Bool), (2, "unit", Ty::Struct(&TIME_UNIT))],
};

const INT_TYPE: Def = Def {
    name: "IntType",
    fields: &[(1, "bitWidth", Ty::I8), (2, "isSigned", Ty::Bool)],
};

const LOGICAL_TYPE: Def = Def {
    name: "LogicalType",
    fields: &[
        (1, "STRING", Ty::Struct(&EMPTY)),
        (2, "MAP", Ty::Struct(&EMPTY)),
        (3, "LIST", Ty::Struct(&EMPTY)),
        (4, "ENUM", Ty::Struct(&EMPTY)),
        (5, "DECIMAL", Ty::Struct(&DECIMAL_TYPE)),
        (6, "DATE", Ty::Struct(&EMPTY)),
        (7, "TIME", Ty::Struct(&TIME_TYPE)),
        (8, "TIMESTAMP", Ty::Struct(&TIME_TYPE)),
        (10, "INTEGER", Ty::Struct(&INT_TYPE)),
        (11, "UNKNOWN", Ty::Struct(&EMPTY)),
        (12, "JSON", Ty::Struct(&EMPTY)),
        (13, "BSON", Ty::Struct(&EMPTY)),
        (14, "UUID", Ty::Struct(&EMPTY)),
        (15, "FLOAT16", Ty::Struct(&EMPTY)),
    ],
};

const SCHEMA_ELEMENT: Def = Def {
    name: "SchemaElement",
    fields: &[
        (1, "type", Ty::I32),
        (2, "type_length", Ty::I32),
        (3, "repetition_type", Ty::I32),
        (4, "name", Ty::Binary),
        (5, "num_children", Ty::I32),
        (6, "converted_type", Ty::I32),
        (7, "scale", Ty::I32),
        (8, "precision", Ty::I32),
        (9, "field_id", Ty::I32),
        (10, "logicalType", Ty::Struct(&LOGICAL_TYPE)),
    ],
};

/// `Statistics` (of a column chunk or a page).
pub const STATISTICS: Def = Def {
    name: "Statistics",
    fields: &[
        (1, "max", Ty::Binary),
        (2, "min", Ty::Binary),
        (3, "null_count", Ty::I64),
        (4, "distinct_count", Ty::I64),
        (5, "max_value", Ty::Binary),
        (6, "min_value", Ty::Binary),
        (7, "is_max_value_exact", Ty::Bool),
        (8, "is_min_value_exact", Ty::Bool),
    ],
};

const PAGE_ENCODING_STATS: Def = Def {
    name: "PageEncodingStats",
    fields: &[
        (1, "page_type", Ty::I32),
        (2, "encoding", Ty::I32),
        (3, "count", Ty::I32),
    ],
};

const SIZE_STATISTICS: Def = Def {
    name: "SizeStatistics",
    fields: &[
        (1, "unencoded_byte_array_data_bytes", Ty::I64),
        (2, "repetition_level_histogram", Ty::List(&Ty::I64)),
        (3, "definition_level_histogram", Ty::List(&Ty::I64)),
    ],
};

const COLUMN_META_DATA: Def = Def {
    name: "ColumnMetaData",
    fields: &[
        (1, "type", Ty::I32),
        (2, "encodings", Ty::List(&Ty::I32)),
        (3, "path_in_schema", Ty::List(&Ty::Binary)),
        (4, "codec", Ty::I32),
        (5, "num_values", Ty::I64),
        (6, "total_uncompressed_size", Ty::I64),
        (7, "total_compressed_size", Ty::I64),
        (8, "key_value_metadata", Ty::List(&Ty::Struct(&KEY_VALUE))),
        (9, "data_page_offset", Ty::I64),
        (10, "index_page_offset", Ty::I64),
        (11, "dictionary_page_offset", Ty::I64),
        (12, "statistics", Ty::Struct(&STATISTICS)),
        (13, "encoding_stats", Ty::List(&Ty::Struct(&PAGE_ENCODING_STATS))),
        (14, "bloom_filter_offset", Ty::I64),
        (15, "bloom_filter_length", Ty::I32),
        (16, "size_statistics", Ty::Struct(&SIZE_STATISTICS)),
    ],
};

const COLUMN_CHUNK: Def = Def {
    name: "ColumnChunk",
    fields: &[
        (1, "file_path", Ty::Binary),
        (2, "file_offset", Ty::I64),
        (3, "meta_data", Ty::Struct(&COLUMN_META_DATA)),
        (4, "offset_index_offset", Ty::I64),
        (5, "offset_index_length", Ty::I32),
        (6, "column_index_offset", Ty::I64),
        (7, "column_index_length", Ty::I32),
    ],
};

const SORTING_COLUMN: Def = Def {
    name: "SortingColumn",
    fields: &[
        (1, "column_idx", Ty::I32),
        (2, "descending", Ty::Bool),
        (3, "nulls_first", Ty::Bool),
    ],
};

const ROW_GROUP: Def = Def {
    name: "RowGroup",
    fields: &[
        (1, "columns", Ty::List(&Ty::Struct(&COLUMN_CHUNK))),
        (2, "total_byte_size", Ty::I64),
        (3, "num_rows", Ty::I64),
        (4, "sorting_columns", Ty::List(&Ty::Struct(&SORTING_COLUMN))),
        (5, "file_offset", Ty::I64),
        (6, "total_compressed_size", Ty::I64),
        (7, "ordinal", Ty::I16),
    ],
};

const COLUMN_ORDER: Def = Def {
    name: "ColumnOrder",
    fields: &[(1, "TYPE_ORDER", Ty::Struct(&EMPTY))],
};

/// `FileMetaData`, the footer (no encryption: upcmp export writes none).
pub const FILE_META_DATA: Def = Def {
    name: "FileMetaData",
    fields: &[
        (1, "version", Ty::I32),
        (2, "schema", Ty::List(&Ty::Struct(&SCHEMA_ELEMENT))),
        (3, "num_rows", Ty::I64),
        (4, "row_groups", Ty::List(&Ty::Struct(&ROW_GROUP))),
        (5, "key_value_metadata", Ty::List(&Ty::Struct(&KEY_VALUE))),
        (6, "created_by", Ty::Binary),
        (7, "column_orders", Ty::List(&Ty::Struct(&COLUMN_ORDER))),
    ],
};

const DATA_PAGE_HEADER: Def = Def {
    name: "DataPageHeader",
    fields: &[
        (1, "num_values", Ty::I32),
        (2, "encoding", Ty::I32),
        (3, "definition_level_encoding", Ty::I32),
        (4, "repetition_level_encoding", Ty::I32),
        (5, "statistics", Ty::Struct(&STATISTICS)),
    ],
};

const DICTIONARY_PAGE_HEADER: Def = Def {
    name: "DictionaryPageHeader",
    fields: &[
        (1, "num_values", Ty::I32),
        (2, "encoding", Ty::I32),
        (3, "is_sorted", Ty::Bool),
    ],
};

const DATA_PAGE_HEADER_V2: Def = Def {
    name: "DataPageHeaderV2",
    fields: &[
        (1, "num_values", Ty::I32),
        (2, "num_nulls", Ty::I32),
        (3, "num_rows", Ty::I32),
        (4, "encoding", Ty::I32),
        (5, "definition_levels_byte_length", Ty::I32),
        (6, "repetition_levels_byte_length", Ty::I32),
        (7, "is_compressed", Ty::Bool),
        (8, "statistics", Ty::Struct(&STATISTICS)),
    ],
};

/// `PageHeader`, before each page of a column chunk.
pub const PAGE_HEADER: Def = Def {
    name: "PageHeader",
    fields: &[
        (1, "type", Ty::I32),
        (2, "uncompressed_page_size", Ty::I32),
        (3, "compressed_page_size", Ty::I32),
        (4, "crc", Ty::I32),
        (5, "data_page_header", Ty::Struct(&DATA_PAGE_HEADER)),
        (6, "index_page_header", Ty::Struct(&EMPTY)),
        (7, "dictionary_page_header", Ty::Struct(&DICTIONARY_PAGE_HEADER)),
        (8, "data_page_header_v2", Ty::Struct(&DATA_PAGE_HEADER_V2)),
    ],
};

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Value {
        Value::Struct(vec![
            (1, Value::Int(2)),
            (
                2,
                Value::List(vec![Value::Struct(vec![
                    (4, Value::Binary(b"root".to_vec())),
                    (5, Value::Int(3)),
                ])]),
            ),
            (3, Value::Int(-(1 << 40))),
            (6, Value::Binary(vec![b'x'; 300])),
        ])
    }

    #[test]
    fn what_is_written_reads_back() {
        let mut out = Vec::new();
        write(&sample(), &FILE_META_DATA, &mut out);
        let (v, used) = read(&out, &FILE_META_DATA).unwrap();
        assert_eq!(v, sample());
        assert_eq!(used, out.len());
        // Every cut is an error, never a panic.
        for n in 0..out.len() {
            assert!(read(&out[..n], &FILE_META_DATA).unwrap_err().truncated, "{n}");
        }
    }

    #[test]
    fn a_boolean_where_a_number_is_declared_is_refused() {
        // FileMetaData.version (i32) sent as a boolean true.
        let e = read(&[0x11, 0x00], &FILE_META_DATA).unwrap_err();
        assert!(e.reason.contains("FileMetaData.version: wire type 1"), "{}", e.reason);
        // A list claiming 2^32 elements in 3 bytes; a field id going back.
        assert!(read(&[0x29, 0xfc, 0xff, 0xff, 0xff, 0x0f], &FILE_META_DATA)
            .unwrap_err()
            .reason
            .contains("elements"));
        assert!(read(&[0x36, 0x02, 0x06, 0x06, 0x02, 0x00], &FILE_META_DATA)
            .unwrap_err()
            .reason
            .contains("field 3 after field 3"));
    }
}
