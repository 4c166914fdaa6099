//! Rows of structs as one JSON table: each row an array of its leaves, under dotted keys
//! (`noise.p_value`), written straight from serde without building JSON values (10^5
//! rows of 40 leaves each would otherwise allocate a map per struct per row).
//!
//! Struct fields are flattened; every other value (numbers, strings, booleans, unit
//! enum variants, `None`, sequences) is a leaf written as serde_json writes it. Keys come
//! from the rows themselves, in the order first seen, so a field added to a row type
//! reaches the table without a change here; a key first seen in a later row is appended,
//! and the rows before it are shorter (a reader takes a missing cell as null).

use serde::ser::{self, Impossible, Serialize};
use std::collections::HashMap;
use std::fmt::Display;
use std::io::{self, Write};
use std::ops::Range;

/// Writes `rows` as `{"rows": [[...], ...], "keys": [...]}`, blocks of rows on whichever
/// core is free, as one pass over the rows would have written them. Each block of a
/// round starts from the columns found before the round; the blocks are written in order
/// up to the first that found a column, which is right (the blocks before it found
/// none), and the next round starts after it, with its columns. A table's columns are
/// found in its first rows: the first block is a round of its own, and later rounds
/// seldom stop early.
pub fn write_table<T: Serialize + Sync>(rows: &[T], mut w: impl Write) -> io::Result<()> {
    use super::{in_blocks, BLOCK, BLOCKS_AT_ONCE};
    let mut t = Table::default();
    w.write_all(b"{\"rows\":[")?;
    let mut at = 0;
    while at < rows.len() {
        let round = if at == 0 { BLOCK } else { BLOCK * BLOCKS_AT_ONCE };
        let known = t.keys.len();
        let blocks = in_blocks(&rows[at..(at + round).min(rows.len())], at, |first, block| {
            let (mut t, mut text) = (t.clone(), Vec::new());
            for (k, r) in block.iter().enumerate() {
                t.row(r)?;
                if first + k > 0 {
                    text.push(b',');
                }
                t.line(&mut text);
            }
            Ok::<_, io::Error>((text, t, block.len()))
        });
        for block in blocks {
            let (text, after, written) = block?;
            w.write_all(&text)?;
            at += written;
            if after.keys.len() != known {
                t = after;
                break;
            }
        }
    }
    w.write_all(b"],\"keys\":")?;
    serde_json::to_writer(&mut w, &t.keys).map_err(io::Error::other)?;
    w.write_all(b"}")
}

/// The parent of the top-level fields.
const ROOT: u32 = u32::MAX;

#[derive(Default, Clone)]
struct Table {
    /// Column names, in the order first seen.
    keys: Vec<String>,
    /// (parent node, field) → node. A node is a struct field at some depth; it has a
    /// column once it held a leaf.
    nodes: HashMap<(u32, &'static str), u32, foldhash::fast::RandomState>,
    /// Per node: its dotted key and its column.
    node_info: Vec<(String, Option<u32>)>,
    /// This row's cells: ranges of `bytes`, by column.
    cells: Vec<Option<Range<usize>>>,
    bytes: Vec<u8>,
    /// The fields in the order the last row visited them, with their nodes, and how
    /// many this row has visited: rows of one type visit their fields in the same order,
    /// so a field is found without hashing its name (a lookup per field of 10^5 rows was
    /// a sixth of the table).
    trail: Vec<(u32, &'static str, u32)>,
    visit: usize,
}

impl Table {
    /// Serializes one row into `cells`.
    fn row<T: Serialize>(&mut self, r: &T) -> io::Result<()> {
        self.cells.clear();
        self.bytes.clear();
        self.visit = 0;
        r.serialize(Node { t: self, node: ROOT })
            .map_err(|e| io::Error::other(e.0))
    }

    /// Appends the row in `cells` as a JSON array.
    fn line(&self, text: &mut Vec<u8>) {
        text.push(b'[');
        for (c, cell) in self.cells.iter().enumerate() {
            if c > 0 {
                text.push(b',');
            }
            match cell {
                Some(r) => text.extend_from_slice(&self.bytes[r.clone()]),
                None => text.extend_from_slice(b"null"),
            }
        }
        text.push(b']');
    }

    fn child(&mut self, parent: u32, field: &'static str) -> u32 {
        let at = self.visit;
        self.visit += 1;
        if let Some(&(p, f, n)) = self.trail.get(at) {
            // The same literal is the same pointer; another pointer is looked up by name.
            if p == parent && std::ptr::eq(f, field) {
                return n;
            }
        }
        let n = self.node(parent, field);
        self.trail.truncate(at);
        self.trail.push((parent, field, n));
        n
    }

    fn node(&mut self, parent: u32, field: &'static str) -> u32 {
        if let Some(&n) = self.nodes.get(&(parent, field)) {
            return n;
        }
        let key = match self.node_info.get(parent as usize) {
            Some((k, _)) => format!("{k}.{field}"),
            None => field.to_string(),
        };
        let n = self.node_info.len() as u32;
        self.node_info.push((key, None));
        self.nodes.insert((parent, field), n);
        n
    }

    /// Writes one leaf of `node` with `write` (JSON text into `bytes`).
    fn leaf(&mut self, node: u32, write: impl FnOnce(&mut Vec<u8>) -> Result<(), Error>) -> Result<(), Error> {
        let Some((key, column)) = self.node_info.get_mut(node as usize) else {
            return Err(Error("a table row must be a struct".into()));
        };
        let column = *column.get_or_insert_with(|| {
            self.keys.push(key.clone());
            (self.keys.len() - 1) as u32
        }) as usize;
        let start = self.bytes.len();
        write(&mut self.bytes)?;
        if self.cells.len() <= column {
            self.cells.resize(column + 1, None);
        }
        self.cells[column] = Some(start..self.bytes.len());
        Ok(())
    }

    fn json_leaf<V: Serialize + ?Sized>(&mut self, node: u32, v: &V) -> Result<(), Error> {
        self.leaf(node, |b| serde_json::to_writer(b, v).map_err(Error::from))
    }
}

#[derive(Debug)]
struct Error(String);

impl Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

impl ser::Error for Error {
    fn custom<T: Display>(msg: T) -> Self {
        Error(msg.to_string())
    }
}

impl From<serde_json::Error> for Error {
    fn from(e: serde_json::Error) -> Self {
        Error(e.to_string())
    }
}

/// Serializes the value at `node`.
struct Node<'a> {
    t: &'a mut Table,
    node: u32,
}

/// A sequence leaf, written as a JSON array as its elements come.
struct Seq<'a> {
    t: &'a mut Table,
    node: u32,
    items: Vec<u8>,
}

impl Seq<'_> {
    fn push<V: Serialize + ?Sized>(&mut self, v: &V) -> Result<(), Error> {
        self.items.push(if self.items.is_empty() { b'[' } else { b',' });
        serde_json::to_writer(&mut self.items, v)?;
        Ok(())
    }

    fn finish(mut self) -> Result<(), Error> {
        if self.items.is_empty() {
            self.items.push(b'[');
        }
        self.items.push(b']');
        let items = self.items;
        self.t.leaf(self.node, |b| {
            b.extend_from_slice(&items);
            Ok(())
        })
    }
}

macro_rules! leaf {
    ($($f:ident: $ty:ty),*) => {
        $(fn $f(self, v: $ty) -> Result<(), Error> {
            self.t.json_leaf(self.node, &v)
        })*
    };
}

impl<'a> ser::Serializer for Node<'a> {
    type Ok = ();
    type Error = Error;
    type SerializeSeq = Seq<'a>;
    type SerializeTuple = Seq<'a>;
    type SerializeTupleStruct = Seq<'a>;
    type SerializeTupleVariant = Impossible<(), Error>;
    type SerializeMap = Impossible<(), Error>;
    type SerializeStruct = Node<'a>;
    type SerializeStructVariant = Impossible<(), Error>;

    leaf!(serialize_bool: bool, serialize_i8: i8, serialize_i16: i16, serialize_i32: i32, serialize_i64: i64,
        serialize_u8: u8, serialize_u16: u16, serialize_u32: u32, serialize_u64: u64, serialize_f32: f32,
        serialize_f64: f64, serialize_char: char, serialize_str: &str);

    fn serialize_bytes(self, v: &[u8]) -> Result<(), Error> {
        self.t.json_leaf(self.node, v)
    }
    fn serialize_none(self) -> Result<(), Error> {
        self.t.json_leaf(self.node, &())
    }
    fn serialize_some<T: Serialize + ?Sized>(self, v: &T) -> Result<(), Error> {
        v.serialize(self)
    }
    fn serialize_unit(self) -> Result<(), Error> {
        self.t.json_leaf(self.node, &())
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<(), Error> {
        self.t.json_leaf(self.node, &())
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, variant: &'static str) -> Result<(), Error> {
        self.t.json_leaf(self.node, variant)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _: &'static str, v: &T) -> Result<(), Error> {
        v.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        v: &T,
    ) -> Result<(), Error> {
        // As serde_json writes it: {"variant": value}.
        let mut one = serde_json::Map::new();
        one.insert(variant.to_string(), serde_json::to_value(v)?);
        self.t.json_leaf(self.node, &one)
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Seq<'a>, Error> {
        Ok(Seq {
            t: self.t,
            node: self.node,
            items: Vec::new(),
        })
    }
    fn serialize_tuple(self, len: usize) -> Result<Seq<'a>, Error> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_struct(self, _: &'static str, len: usize) -> Result<Seq<'a>, Error> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_variant(
        self,
        name: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, Error> {
        Err(Error(format!("{name}: tuple variants have no place in a table row")))
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, Error> {
        Err(Error("maps have no place in a table row".into()))
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Node<'a>, Error> {
        Ok(self)
    }
    fn serialize_struct_variant(
        self,
        name: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, Error> {
        Err(Error(format!("{name}: struct variants have no place in a table row")))
    }
}

impl ser::SerializeStruct for Node<'_> {
    type Ok = ();
    type Error = Error;

    fn serialize_field<T: Serialize + ?Sized>(&mut self, key: &'static str, v: &T) -> Result<(), Error> {
        let node = self.t.child(self.node, key);
        v.serialize(Node { t: self.t, node })
    }
    fn end(self) -> Result<(), Error> {
        Ok(())
    }
}

macro_rules! seq {
    ($($tr:ident :: $f:ident),*) => {
        $(impl ser::$tr for Seq<'_> {
            type Ok = ();
            type Error = Error;
            fn $f<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), Error> {
                self.push(v)
            }
            fn end(self) -> Result<(), Error> {
                self.finish()
            }
        })*
    };
}

seq!(
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field
);

/// The table [`write_table`] writes for `rows`, read back: its keys and its rows.
#[cfg(test)]
pub(crate) fn read_back<T: Serialize + Sync>(rows: &[T]) -> (Vec<String>, Vec<serde_json::Value>) {
    let mut json = Vec::new();
    write_table(rows, &mut json).unwrap();
    let t: serde_json::Value = serde_json::from_slice(&json).unwrap();
    let keys = t["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k.as_str().unwrap().to_string())
        .collect();
    (keys, t["rows"].as_array().unwrap().clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Serialize;

    #[derive(Serialize)]
    struct Inner {
        p: Option<f64>,
        word: &'static str,
    }

    #[derive(Serialize)]
    #[serde(rename_all = "snake_case")]
    enum Kind {
        SampledTime,
    }

    #[derive(Serialize)]
    struct Row {
        name: String,
        x: Option<f64>,
        inner: Inner,
        maybe: Option<Inner>,
        kind: Kind,
        values: Vec<f64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        late: Option<u32>,
    }

    #[test]
    fn leaves_sit_under_their_dotted_keys_as_serde_json_writes_them() {
        let rows = [
            Row {
                name: "a\"<b>".into(),
                x: Some(1.5),
                inner: Inner { p: None, word: "w" },
                maybe: None,
                kind: Kind::SampledTime,
                values: vec![1.0, 2.5],
                late: None,
            },
            Row {
                name: "c".into(),
                x: Some(f64::NAN),
                inner: Inner {
                    p: Some(0.25),
                    word: "v",
                },
                maybe: Some(Inner {
                    p: Some(1.0),
                    word: "m",
                }),
                kind: Kind::SampledTime,
                values: vec![],
                late: Some(7),
            },
        ];
        let (keys, r) = read_back(&rows);
        assert_eq!(
            keys,
            [
                "name",
                "x",
                "inner.p",
                "inner.word",
                "maybe",
                "kind",
                "values",
                "maybe.p",
                "maybe.word",
                "late"
            ]
        );
        assert_eq!(
            r[0],
            serde_json::json!(["a\"<b>", 1.5, null, "w", null, "sampled_time", [1.0, 2.5]])
        );
        assert_eq!(
            r[1],
            serde_json::json!(["c", null, 0.25, "v", null, "sampled_time", [], 1.0, "m", 7]),
            "NaN is null as serde_json writes it; a None in one row and a struct in another share no cell"
        );
    }

    // Blocks of rows are written apart, each with the columns of the whole table: a key
    // first seen in a later block is still the last column, and only rows that have
    // it reach it.
    #[test]
    fn blocks_share_the_columns_of_the_whole_table() {
        let n = crate::report::BLOCK * crate::report::BLOCKS_AT_ONCE + 700;
        let late = n - 300;
        let rows: Vec<Row> = (0..n)
            .map(|k| Row {
                name: format!("f{k}"),
                x: Some(k as f64),
                inner: Inner { p: None, word: "w" },
                maybe: None,
                kind: Kind::SampledTime,
                values: vec![],
                late: (k == late).then_some(k as u32),
            })
            .collect();
        let (keys, r) = read_back(&rows);
        assert_eq!(keys.last().map(String::as_str), Some("late"));
        assert_eq!(r.len(), n);
        for (k, row) in r.iter().enumerate() {
            let row = row.as_array().unwrap();
            assert_eq!(row[0], serde_json::json!(format!("f{k}")), "row {k}");
            assert_eq!(
                row.len(),
                if k == late { keys.len() } else { keys.len() - 1 },
                "row {k}"
            );
        }
        assert_eq!(r[late].as_array().unwrap().last(), Some(&serde_json::json!(late)));
    }

    #[test]
    fn a_row_that_is_not_a_struct_is_refused() {
        let mut json = Vec::new();
        let e = write_table(&[1.0], &mut json).unwrap_err();
        assert!(e.to_string().contains("struct"), "{e}");
    }
}
