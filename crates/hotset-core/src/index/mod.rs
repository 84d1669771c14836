//! Indexes: lookup structures from field values to row ids, kept beside typed columns.
//!
//! Owns: `Key` (one value, or a tuple for composite indexes), `Index` (its definition, the
//! columns it reads and its hash or ordered map), and keeping both in step with rows.
//! Never: decide which index serves a query (the planner does), or read documents.
//!
//! Invariants: every row is under each of its keys exactly once; a non-sparse index holds
//! every row (empty fields under the `Null` key), a sparse one only rows with a value; a
//! unique (pk) index has at most one row per key.

pub mod column;
pub mod ordered;
pub mod postings;

use crate::schema::{IndexDef, IndexKind};
use crate::value::{FieldType, OrdF64, Scalar};
use column::Column;
use ordered::OrderedMap;
use postings::Postings;
use smallvec::SmallVec;
use std::ops::Bound;

/// An index key: one value, or a tuple for composite indexes (ordered lexicographically,
/// a shorter prefix first, which makes prefix ranges over tuples work).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Key {
    One(Scalar),
    Many(Box<[Scalar]>),
}

impl Key {
    pub fn parts(&self) -> &[Scalar] {
        match self {
            Key::One(one) => std::slice::from_ref(one),
            Key::Many(many) => many,
        }
    }
}

pub type HashMap<K, V> = hashbrown::HashMap<K, V, ahash::RandomState>;

/// The lookup structure of an index.
#[derive(Debug)]
pub enum Lookup {
    Store,
    Hash(HashMap<Key, Postings>),
    /// A hash primary key: one row per key, so no posting list (half the bytes).
    Unique(HashMap<Key, u32>),
    /// A hash primary key over one int field: the key is stored as a bare `i64`.
    UniqueInt(HashMap<i64, u32>),
    Tree(OrderedMap),
}

/// The rows under one key: borrowed postings, or the single row of a unique index.
#[derive(Debug)]
pub enum Rows<'a> {
    Borrowed(&'a Postings),
    One(Postings),
}

impl std::ops::Deref for Rows<'_> {
    type Target = Postings;
    fn deref(&self) -> &Postings {
        match self {
            Rows::Borrowed(postings) => postings,
            Rows::One(postings) => postings,
        }
    }
}

/// One index: definition, the columns of its fields, and its lookup map.
#[derive(Debug)]
pub struct Index {
    pub def: IndexDef,
    /// Column ids (in the namespace's column table), one per field of the definition.
    pub columns: Vec<usize>,
    pub lookup: Lookup,
    key_bytes: usize,
}

impl Index {
    pub fn new(def: IndexDef, columns: Vec<usize>) -> Index {
        assert_eq!(def.fields.len(), columns.len(), "one column per indexed field");
        let lookup = match def.kind {
            IndexKind::Store => Lookup::Store,
            IndexKind::Hash if def.pk && !def.is_composite() && def.field_type == FieldType::Int => {
                Lookup::UniqueInt(HashMap::default())
            }
            IndexKind::Hash if def.pk => Lookup::Unique(HashMap::default()),
            IndexKind::Hash => Lookup::Hash(HashMap::default()),
            IndexKind::Tree => Lookup::Tree(OrderedMap::new()),
        };
        Index { def, columns, lookup, key_bytes: 0 }
    }

    /// The keys `row` is indexed under, read from its columns.
    pub fn row_keys(&self, columns: &[Option<Column>], row: u32) -> SmallVec<[Key; 1]> {
        let mut keys = SmallVec::new();
        if let [only] = self.columns[..] {
            let values = live(columns, only).values(row);
            if values.is_empty() {
                if !self.def.sparse {
                    keys.push(Key::One(Scalar::Null));
                }
            } else {
                let mut values = values;
                // An array may repeat a value; the row is under each key once.
                values.sort();
                values.dedup();
                keys.extend(values.into_iter().map(Key::One));
            }
            return keys;
        }
        let parts: Box<[Scalar]> = self
            .columns
            .iter()
            .map(|&c| live(columns, c).values(row).into_iter().next().unwrap_or(Scalar::Null))
            .collect();
        if !(self.def.sparse && parts.iter().all(|p| *p == Scalar::Null)) {
            keys.push(Key::Many(parts));
        }
        keys
    }

    /// Whether this index is built in bulk after a load (`NamespaceData::finish_bulk_load`)
    /// rather than row by row: ordered indexes other than the primary key, the ones whose
    /// row-by-row inserts cost a search each.
    pub fn deferrable(&self) -> bool {
        matches!(self.lookup, Lookup::Tree(_)) && !self.def.pk
    }

    /// Replaces the contents of a tree index with `pairs` (each row under each of its
    /// keys): sorted once, then laid out in order. Sorting compares a fixed-size prefix of
    /// each key first, so most comparisons never follow a key's pointers.
    pub fn rebuild_tree(&mut self, mut pairs: Vec<(Key, u32)>) {
        assert!(matches!(self.lookup, Lookup::Tree(_)), "only tree indexes are rebuilt in bulk");
        let mut keyed: Vec<(u128, Key, u32)> =
            pairs.drain(..).map(|(key, row)| (order_prefix(&key), key, row)).collect();
        keyed.sort_unstable_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
        let mut entries: Vec<(Key, Postings)> = Vec::with_capacity(keyed.len());
        let mut key_bytes = 0;
        for (_, key, row) in keyed {
            match entries.last_mut() {
                Some((last, postings)) if *last == key => postings.insert(row),
                _ => {
                    key_bytes += key_heap_bytes(&key);
                    entries.push((key, Postings::new(row)));
                }
            }
        }
        self.lookup = Lookup::Tree(OrderedMap::from_sorted(entries));
        self.key_bytes = key_bytes;
    }

    pub fn insert(&mut self, key: Key, row: u32) {
        let key_bytes = key_heap_bytes(&key);
        let added = match &mut self.lookup {
            Lookup::Store => return,
            Lookup::Hash(map) => insert_posting(map.entry(key), row),
            Lookup::Unique(map) => {
                let previous = map.insert(key, row);
                assert!(previous.is_none(), "a unique key inserted twice");
                true
            }
            Lookup::UniqueInt(map) => {
                let previous = map.insert(int_key(&key), row);
                assert!(previous.is_none(), "a unique key inserted twice");
                true
            }
            Lookup::Tree(map) => map.insert(key, row),
        };
        if added {
            self.key_bytes += key_bytes;
        }
    }

    pub fn remove(&mut self, key: &Key, row: u32) {
        let emptied = match &mut self.lookup {
            Lookup::Store => return,
            Lookup::Hash(map) => {
                let postings = map.get_mut(key).expect("removing an unindexed key");
                postings.remove(row) && map.remove(key).is_some()
            }
            Lookup::Unique(map) => {
                assert_eq!(map.remove(key), Some(row), "removing an unindexed key");
                true
            }
            Lookup::UniqueInt(map) => {
                assert_eq!(map.remove(&int_key(key)), Some(row), "removing an unindexed key");
                true
            }
            Lookup::Tree(map) => map.remove(key, row),
        };
        if emptied {
            self.key_bytes -= key_heap_bytes(key);
        }
    }

    pub fn get(&self, key: &Key) -> Option<Rows<'_>> {
        match &self.lookup {
            Lookup::Store => None,
            Lookup::Hash(map) => map.get(key).map(Rows::Borrowed),
            Lookup::Unique(map) => map.get(key).map(|&row| Rows::One(Postings::new(row))),
            Lookup::UniqueInt(map) => match key {
                Key::One(Scalar::Int(value)) => map.get(value).map(|&row| Rows::One(Postings::new(row))),
                _ => None,
            },
            Lookup::Tree(map) => map.get(key).map(Rows::Borrowed),
        }
    }

    /// Walks the entries between two bounds in key order (descending when `desc`) until
    /// `f` returns false (tree indexes only; others have no order and walk nothing).
    /// Returns true when the walk completed.
    pub fn walk(
        &self,
        lower: Bound<&Key>,
        upper: Bound<&Key>,
        desc: bool,
        f: impl FnMut(&Key, &Postings) -> bool,
    ) -> bool {
        match &self.lookup {
            Lookup::Tree(map) => map.walk(lower, upper, desc, f),
            _ => true,
        }
    }

    /// Rows under the keys between two bounds (tree indexes only), in logarithmic time.
    pub fn count_rows(&self, lower: Bound<&Key>, upper: Bound<&Key>) -> Option<usize> {
        match &self.lookup {
            Lookup::Tree(map) => Some(map.count_rows(lower, upper)),
            _ => None,
        }
    }

    pub fn is_ordered(&self) -> bool {
        matches!(self.lookup, Lookup::Tree(_))
    }

    pub fn has_lookup(&self) -> bool {
        !matches!(self.lookup, Lookup::Store)
    }

    /// Approximate bytes used by the lookup map (columns are counted separately).
    pub fn memory_bytes(&self) -> usize {
        let entry = std::mem::size_of::<Key>() + std::mem::size_of::<Postings>();
        let postings: usize = match &self.lookup {
            Lookup::Store => 0,
            Lookup::Hash(map) => map.values().map(Postings::heap_bytes).sum::<usize>() + map.capacity() * (entry + 1),
            Lookup::Unique(map) => map.capacity() * (std::mem::size_of::<(Key, u32)>() + 1),
            Lookup::UniqueInt(map) => map.capacity() * (std::mem::size_of::<(i64, u32)>() + 1),
            Lookup::Tree(map) => map.postings().map(Postings::heap_bytes).sum::<usize>() + map.len() * entry,
        };
        postings + self.key_bytes
    }
}

/// The bare integer of a key of an int primary key (extraction guarantees the type).
fn int_key(key: &Key) -> i64 {
    match key {
        Key::One(Scalar::Int(value)) => *value,
        other => unreachable!("an int primary key holds ints, not {other:?}"),
    }
}

fn live(columns: &[Option<Column>], id: usize) -> &Column {
    columns[id].as_ref().expect("an index names only live columns")
}

fn insert_posting(entry: hashbrown::hash_map::Entry<'_, Key, Postings, ahash::RandomState>, row: u32) -> bool {
    match entry {
        hashbrown::hash_map::Entry::Occupied(mut e) => {
            e.get_mut().insert(row);
            false
        }
        hashbrown::hash_map::Entry::Vacant(e) => {
            e.insert(Postings::new(row));
            true
        }
    }
}

/// A number whose order agrees with the keys' order wherever it differs: the first
/// part's variant, then its value (an int's bits with the sign flipped, a string's first
/// eight bytes). Equal prefixes say nothing; the keys are compared in full then.
fn order_prefix(key: &Key) -> u128 {
    let (tag, value) = match key.parts().first() {
        None | Some(Scalar::Null) => (0u128, 0u64),
        Some(Scalar::Bool(b)) => (1, u64::from(*b)),
        Some(Scalar::Int(i)) => (2, (*i as u64) ^ (1 << 63)),
        Some(Scalar::Double(_)) => (3, 0),
        Some(Scalar::Str(bytes)) => {
            let mut head = [0u8; 8];
            let n = bytes.len().min(8);
            head[..n].copy_from_slice(&bytes[..n]);
            (4, u64::from_be_bytes(head))
        }
    };
    (tag << 64) | u128::from(value)
}

fn key_heap_bytes(key: &Key) -> usize {
    let strings: usize = key
        .parts()
        .iter()
        .map(|p| match p {
            Scalar::Str(s) => s.len() + 16,
            _ => 0,
        })
        .sum();
    match key {
        Key::One(_) => strings,
        Key::Many(parts) => strings + parts.len() * std::mem::size_of::<Scalar>(),
    }
}

/// Converts a query value to the key type of an indexed field, or `None` when no key of
/// that type can equal it (e.g. `2.5` on an int field, a string on an int field).
pub fn key_for_type(value: &Scalar, field_type: FieldType) -> Option<Scalar> {
    match (field_type, value) {
        (FieldType::Int, Scalar::Int(_))
        | (FieldType::Double, Scalar::Double(_))
        | (FieldType::String, Scalar::Str(_))
        | (FieldType::Bool, Scalar::Bool(_)) => Some(value.clone()),
        (FieldType::Double, Scalar::Int(i)) => Some(Scalar::Double(OrdF64::new(*i as f64))),
        (FieldType::Int, Scalar::Double(d)) if d.0.fract() == 0.0 && d.0.abs() < 9.2e18 => {
            Some(Scalar::Int(d.0 as i64))
        }
        _ => None,
    }
}

/// Converts a range bound to the key type of an indexed field. `Err(())` when the bound
/// excludes every key of that type (e.g. `> 1e30` on an int field, or a type mismatch).
#[allow(clippy::result_unit_err)]
pub fn bound_for_type(bound: Bound<&Scalar>, field_type: FieldType, is_lower: bool) -> Result<Bound<Scalar>, ()> {
    let (value, inclusive) = match bound {
        Bound::Unbounded => return Ok(Bound::Unbounded),
        Bound::Included(v) => (v, true),
        Bound::Excluded(v) => (v, false),
    };
    let wrap = |v: Scalar, inclusive: bool| if inclusive { Bound::Included(v) } else { Bound::Excluded(v) };
    if let Some(exact) = key_for_type(value, field_type) {
        return Ok(wrap(exact, inclusive));
    }
    match (field_type, value) {
        (FieldType::Int, Scalar::Double(d)) => {
            let d = d.0;
            if d >= 9.2e18 {
                return if is_lower { Err(()) } else { Ok(Bound::Unbounded) };
            }
            if d <= -9.2e18 {
                return if is_lower { Ok(Bound::Unbounded) } else { Err(()) };
            }
            // A fractional bound becomes the nearest integer inside the range, inclusive.
            let edge = if is_lower { d.ceil() } else { d.floor() };
            Ok(Bound::Included(Scalar::Int(edge as i64)))
        }
        _ => Err(()),
    }
}
