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
use crate::text::{TextConfig, TextIndex};
use crate::value::{FieldType, OrdF64, Scalar, ScalarRef};
use column::Column;
use ordered::{OrderedMap, Prefix, SortedLayout, order_prefix, order_prefix_of_parts};
use postings::Postings;
use smallvec::SmallVec;
use std::ops::Bound;

/// An index key: one value, or a tuple for composite indexes (ordered lexicographically,
/// a shorter prefix first, which makes prefix ranges over tuples work).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Key {
    /// The key of a single-field index.
    One(Scalar),
    /// The key of a composite index: one value per field, in the definition's order.
    Many(Box<[Scalar]>),
}

impl Key {
    /// The key's values: one for `One`, each field's for `Many`.
    pub fn parts(&self) -> &[Scalar] {
        match self {
            Key::One(one) => std::slice::from_ref(one),
            Key::Many(many) => many,
        }
    }
}

/// The hash map of the engine's indexes: hashbrown with ahash.
pub type HashMap<K, V> = hashbrown::HashMap<K, V, ahash::RandomState>;

/// The lookup structure of an index.
#[derive(Debug)]
pub enum Lookup {
    /// A store-only index: its column, no lookup.
    Store,
    /// A hash index: the rows under each key.
    Hash(HashMap<Key, Postings>),
    /// A hash primary key: one row per key, so no posting list (half the bytes).
    Unique(HashMap<Key, u32>),
    /// A hash primary key over one int field: the key is stored as a bare `i64`.
    UniqueInt(HashMap<i64, u32>),
    /// A tree index: keys in order, for ranges and sorted walks.
    Tree(OrderedMap),
    /// A text index: fed whole rows (`TextIndex::insert`), not keys.
    Text(Box<TextIndex>),
}

/// The rows under one key: borrowed postings, or the single row of a unique index.
#[derive(Debug)]
pub enum Rows<'a> {
    /// The index's own posting list for the key.
    Borrowed(&'a Postings),
    /// A unique index's one row, made into a posting list.
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
    /// The definition the index was created with.
    pub def: IndexDef,
    /// Column ids (in the namespace's column table), one per field of the definition.
    pub columns: Vec<usize>,
    /// The map from keys to rows; its variant follows the definition's kind.
    pub lookup: Lookup,
    key_bytes: usize,
    /// False while a tree index waits to be built in bulk by a load that readers can see
    /// (`NamespaceData::begin_tree_load`): it is then empty, and `has_lookup` says no, so
    /// the planner answers its conditions from columns instead.
    built: bool,
}

impl Index {
    /// An empty index. A hash primary key gets a unique map (keyed by `i64` when it is
    /// one int field). Panics unless `columns` has one column per field of `def`.
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
            IndexKind::Text => {
                let config = def.text.as_deref().cloned().unwrap_or_else(|| TextConfig::new(def.fields.len()));
                Lookup::Text(Box::new(TextIndex::new(def.fields.clone(), config)))
            }
        };
        Index { def, columns, lookup, key_bytes: 0, built: true }
    }

    /// The keys `row` is indexed under, read from its columns (none for a text index,
    /// which is not keyed).
    pub fn row_keys(&self, columns: &[Option<Column>], row: u32) -> SmallVec<[Key; 1]> {
        let mut keys = SmallVec::new();
        if matches!(self.lookup, Lookup::Text(_)) {
            return keys;
        }
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
        let parts: Box<[Scalar]> =
            self.columns.iter().map(|&c| live(columns, c).first_owned(row).unwrap_or(Scalar::Null)).collect();
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

    /// Replaces the contents of a tree index with the keys of `rows` (ascending), read
    /// from `columns`: sorted once, then laid out in order. Sorting compares the order
    /// prefix of each key first (`order_prefix`, 32 bytes), so most comparisons never follow a
    /// key's pointers, and moves small (prefix, row) entries rather than keys. Where every
    /// row has one key (no array column) and the prefix holds all of it, the key is not
    /// built per row, only once where its run of equal rows starts (an index on a name:
    /// a million rows, a few thousand keys).
    ///
    /// Many rows are split between this thread and one more by key range, not by rows:
    /// a pivot prefix taken from a sample divides the keys into those below it and the
    /// rest, each side is sorted on its own thread, and the two sorted sides are simply
    /// laid out one after the other. Equal keys have equal prefixes, so they always land
    /// on one side. (Splitting by rows would leave a merge of the two runs, which is as
    /// long as a side's sort and runs on one thread.)
    pub fn rebuild_tree(&mut self, columns: &[Option<Column>], rows: &[u32]) {
        assert!(matches!(self.lookup, Lookup::Tree(_)), "only tree indexes are rebuilt in bulk");
        let this = &*self;
        let (layouts, key_bytes) = if rows.len() >= PARALLEL_REBUILD_ROWS_MIN && crate::several_cores() {
            let pivot = this.pivot_prefix(columns, rows);
            let (first, second) = rows.split_at(rows.len() / 2);
            std::thread::scope(|scope| {
                let helper = scope.spawn(move || this.keys_split_at(columns, second, Some(pivot)));
                let [below, above] = this.keys_split_at(columns, first, Some(pivot));
                let [their_below, their_above] = helper.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic));
                // Rows of the first half come first on each side, so row order holds.
                let helper = scope.spawn(move || this.laid_out_in_order(columns, [above, their_above]));
                let (low, low_bytes) = this.laid_out_in_order(columns, [below, their_below]);
                let (high, high_bytes) = helper.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic));
                (vec![low, high], low_bytes + high_bytes)
            })
        } else {
            let sides = this.keys_split_at(columns, rows, None);
            debug_assert!(sides[1].entries.is_empty());
            let (layout, key_bytes) = this.laid_out_in_order(columns, sides);
            (vec![layout], key_bytes)
        };
        self.lookup = Lookup::Tree(OrderedMap::from_layouts(layouts));
        self.key_bytes = key_bytes;
        self.built = true;
    }

    /// Adds the keys of `rows` (ascending; none of them in the index yet) to a tree
    /// index: sorted, then merged with its keys in one pass (`OrderedMap::merge_sorted`).
    pub fn merge_rows(&mut self, columns: &[Option<Column>], rows: &[u32]) {
        let mut keyed: Vec<(ordered::Prefix, Key, u32)> = Vec::with_capacity(rows.len());
        for &row in rows {
            keyed.extend(self.row_keys(columns, row).into_iter().map(|key| (ordered::order_prefix(&key), key, row)));
        }
        // Whole keys compared only on a prefix tie; rows ascend within a key.
        keyed.sort_unstable_by(|a, b| a.0.then_keys(b.0, &a.1, &b.1).then(a.2.cmp(&b.2)));
        let Lookup::Tree(map) = &mut self.lookup else { unreachable!("only tree indexes merge rows") };
        let mut added = 0;
        map.merge_sorted(keyed, |key| added += key_heap_bytes(key));
        self.key_bytes += added;
    }

    /// The median order prefix of an evenly spaced sample of `rows`' keys.
    fn pivot_prefix(&self, columns: &[Option<Column>], rows: &[u32]) -> Prefix {
        const SAMPLE: usize = 1024;
        let step = rows.len().div_ceil(SAMPLE).max(1);
        let mut sample: Vec<Prefix> = rows
            .iter()
            .step_by(step)
            .flat_map(|&row| self.row_keys(columns, row))
            .map(|key| order_prefix(&key))
            .collect();
        sample.sort_unstable();
        sample.get(sample.len() / 2).copied().unwrap_or_default()
    }

    /// Whether no column of this index holds arrays, so each row has at most one key.
    fn single_keyed(&self, columns: &[Option<Column>]) -> bool {
        self.columns.iter().all(|&c| !live(columns, c).holds_arrays())
    }

    /// The parts of `row`'s key in a single-keyed index, borrowed from the columns
    /// (`None` for null; doubles as `OrdF64::new` keeps them in keys), or `None` when a
    /// sparse index leaves the row out.
    fn borrowed_parts<'c>(
        &self,
        columns: &'c [Option<Column>],
        row: u32,
    ) -> Option<SmallVec<[Option<ScalarRef<'c>>; 4]>> {
        let part = |c: usize| match live(columns, c).first(row) {
            Some(ScalarRef::Double(d)) => Some(ScalarRef::Double(OrdF64::new(d).0)),
            other => other,
        };
        let parts: SmallVec<[Option<ScalarRef<'c>>; 4]> = self.columns.iter().map(|&c| part(c)).collect();
        (!(self.def.sparse && parts.iter().all(Option::is_none))).then_some(parts)
    }

    /// The key of `row` in a single-keyed index (what `row_keys` returns for it).
    fn single_key(&self, columns: &[Option<Column>], row: u32) -> Key {
        let owned = |c: usize| live(columns, c).first_owned(row).unwrap_or(Scalar::Null);
        match self.columns[..] {
            [only] => Key::One(owned(only)),
            _ => Key::Many(self.columns.iter().map(|&c| owned(c)).collect()),
        }
    }

    /// The keys of `rows` (ascending) by prefix and row, split into those whose prefix is
    /// below `pivot` (all of them without one) and the rest. Keys whose prefix is exact
    /// are not held (`slot` is `NOT_HELD`) where each row has one key: a key is built
    /// from the columns where its run of equal keys starts. Others are held.
    fn keys_split_at(&self, columns: &[Option<Column>], rows: &[u32], pivot: Option<Prefix>) -> [RowKeys; 2] {
        let expected = if pivot.is_some() { rows.len() / 2 } else { rows.len() };
        let mut sides = [RowKeys::with_capacity(expected), RowKeys::with_capacity(rows.len() - expected)];
        let side = |prefix: Prefix| usize::from(pivot.is_some_and(|pivot| prefix >= pivot));
        if self.single_keyed(columns) {
            let many = self.columns.len() > 1;
            for &row in rows {
                let Some(parts) = self.borrowed_parts(columns, row) else { continue };
                let (prefix, exact) = order_prefix_of_parts(many, parts);
                let side = &mut sides[side(prefix)];
                // A composite key is mostly one of its own (two names): built now, in row
                // order, where its strings lie in the order they were stored (in key
                // order each would be a cache miss). So is a key whose prefix does not
                // hold it, as the sort compares it.
                if exact && !many {
                    side.entries.push(Entry { prefix, row, exact, slot: NOT_HELD });
                } else {
                    let slot = u32::try_from(side.keys.len()).expect("row keys fit in u32");
                    side.entries.push(Entry { prefix, row, exact, slot });
                    side.keys.push(self.single_key(columns, row));
                }
            }
        } else {
            for &row in rows {
                for key in self.row_keys(columns, row) {
                    let (prefix, exact) = ordered::order_prefix_exact(&key);
                    let side = &mut sides[side(prefix)];
                    let slot = u32::try_from(side.keys.len()).expect("row keys fit in u32");
                    side.entries.push(Entry { prefix, row, exact, slot });
                    side.keys.push(key);
                }
            }
        }
        sides
    }

    /// Sorts the keys of two parts (the first part's rows below the second's) by (key,
    /// row) and lays them out, equal keys grouped into one entry; also returns the heap
    /// bytes of the distinct keys.
    fn laid_out_in_order(&self, columns: &[Option<Column>], parts: [RowKeys; 2]) -> (SortedLayout, usize) {
        let [mut all, second] = parts;
        let offset = u32::try_from(all.keys.len()).expect("row keys fit in u32");
        let moved = |slot: u32| if slot == NOT_HELD { slot } else { slot + offset };
        all.entries.extend(second.entries.into_iter().map(|e| Entry { slot: moved(e.slot), ..e }));
        all.keys.extend(second.keys);
        let RowKeys { mut entries, keys } = all;
        let mut keys: Vec<Option<Key>> = keys.into_iter().map(Some).collect();
        // Equal prefixes are both exact or both not (an exact one equals the other key),
        // and keys whose prefix is not exact are held.
        fn held<'k>(keys: &'k [Option<Key>], entry: &Entry) -> &'k Key {
            keys[entry.slot as usize].as_ref().expect("a held key")
        }
        // Rows break ties, so each key's rows come ascending. Keys whose prefix holds all
        // of them (short strings, ints) are never compared: most rows of an index on a
        // name share their key with many others, and comparing those in full was most of
        // the sort.
        entries.sort_unstable_by(|a, b| {
            a.prefix
                .cmp(&b.prefix)
                .then_with(|| if a.exact { std::cmp::Ordering::Equal } else { held(&keys, a).cmp(held(&keys, b)) })
                .then(a.row.cmp(&b.row))
        });
        let mut layout = SortedLayout::default();
        let mut key_bytes = 0;
        let mut last: Option<&Entry> = None;
        for entry in &entries {
            // Keys with different prefixes differ: only equal prefixes that are not exact
            // need the keys compared.
            let same = last.is_some_and(|last| {
                last.prefix == entry.prefix && (entry.exact || layout.last_key() == Some(held(&keys, entry)))
            });
            last = Some(entry);
            // Each held key is taken once (and dropped unless it starts a run of equal keys).
            let held = match entry.slot {
                NOT_HELD => None,
                slot => keys[slot as usize].take(),
            };
            let key = || held.unwrap_or_else(|| self.single_key(columns, entry.row));
            if let Some(new) = layout.push_row(key, entry.row, entry.prefix, same) {
                key_bytes += key_heap_bytes(new);
            }
        }
        (layout, key_bytes)
    }

    /// Adds `row` under `key` (nothing for store-only and text indexes). Panics when a
    /// unique index already has the key: callers check for duplicates first.
    pub fn insert(&mut self, key: Key, row: u32) {
        let key_bytes = key_heap_bytes(&key);
        let added = match &mut self.lookup {
            Lookup::Store | Lookup::Text(_) => return,
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

    /// Removes `row` from under `key`, dropping the key when no row is left. Panics when
    /// the key is not indexed (a broken invariant).
    pub fn remove(&mut self, key: &Key, row: u32) {
        let emptied = match &mut self.lookup {
            Lookup::Store | Lookup::Text(_) => return,
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

    /// The rows under `key`; `None` when there are none or the index has no lookup.
    pub fn get(&self, key: &Key) -> Option<Rows<'_>> {
        match &self.lookup {
            Lookup::Store | Lookup::Text(_) => None,
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

    /// The ordered map of a tree index (`None` for other kinds).
    pub fn tree(&self) -> Option<&OrderedMap> {
        match &self.lookup {
            Lookup::Tree(map) => Some(map),
            _ => None,
        }
    }

    /// Whether the index keeps keys in order (a tree index, built), so it serves ranges
    /// and sorts.
    pub fn is_ordered(&self) -> bool {
        self.built && matches!(self.lookup, Lookup::Tree(_))
    }

    /// Whether the index maps keys to rows (store-only and text indexes do not, nor a tree
    /// index waiting for its bulk build).
    pub fn has_lookup(&self) -> bool {
        self.built && !matches!(self.lookup, Lookup::Store | Lookup::Text(_))
    }

    /// Empties a deferrable index until `rebuild_tree` builds it: meanwhile it answers
    /// nothing (`has_lookup` is false), so no reader is given its missing rows.
    pub fn set_unbuilt(&mut self) {
        assert!(self.deferrable(), "only deferrable indexes wait for a bulk build");
        self.lookup = Lookup::Tree(OrderedMap::new());
        self.key_bytes = 0;
        self.built = false;
    }

    /// The text index, for a text index.
    pub fn text(&self) -> Option<&TextIndex> {
        match &self.lookup {
            Lookup::Text(text) => Some(text),
            _ => None,
        }
    }

    /// The text index, mutable, for a text index.
    pub fn text_mut(&mut self) -> Option<&mut TextIndex> {
        match &mut self.lookup {
            Lookup::Text(text) => Some(text),
            _ => None,
        }
    }

    /// Approximate bytes used by the lookup map (columns are counted separately).
    pub fn memory_bytes(&self) -> usize {
        let entry = std::mem::size_of::<Key>() + std::mem::size_of::<Postings>();
        let postings: usize = match &self.lookup {
            Lookup::Store => 0,
            Lookup::Text(text) => text.memory_bytes(),
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

/// Rows from which `Index::rebuild_tree` splits its work between two threads.
const PARALLEL_REBUILD_ROWS_MIN: usize = 50_000;

/// A row's key, by its order prefix (the first 32 bytes of its order encoding, what the
/// map's blocks keep) and whether that holds the whole key (then equal ones mean equal
/// keys: see `order_prefix_exact`), and the slot of the key itself when it is held
/// (`NOT_HELD`: built from the columns when needed).
#[derive(Clone, Copy)]
struct Entry {
    prefix: Prefix,
    row: u32,
    exact: bool,
    slot: u32,
}

/// `Entry::slot` of a key read from the columns.
const NOT_HELD: u32 = u32::MAX;

/// Row keys of one side of a bulk build: entries in row order, and the keys they hold.
struct RowKeys {
    entries: Vec<Entry>,
    keys: Vec<Key>,
}

impl RowKeys {
    fn with_capacity(entries: usize) -> RowKeys {
        RowKeys { entries: Vec::with_capacity(entries), keys: Vec::new() }
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

/// 2^63 as f64 (exact): every i64 is below it and at or above -2^63.
const TWO_63: f64 = 9_223_372_036_854_775_808.0;

/// The double equal to `int`, if there is one (above 2^53 not every int has one).
fn double_equal_to(int: i64) -> Option<f64> {
    let rounded = int as f64;
    (i128::from(int) == rounded as i128).then_some(rounded)
}

/// The int equal to `double`, if there is one (every integral double in [-2^63, 2^63)).
fn int_equal_to(double: f64) -> Option<i64> {
    (double.fract() == 0.0 && (-TWO_63..TWO_63).contains(&double)).then_some(double as i64)
}

/// Converts a query value to the key type of an indexed field, or `None` when no key of
/// that type can equal it (e.g. `2.5` on an int field, a string on an int field, 2^53 + 1
/// on a double field). Queries compare numbers exactly, so a conversion that rounds would
/// find keys the condition does not match (a double index answered `c = 2^53 + 1` with
/// the rows holding 2^53).
pub fn key_for_type(value: &Scalar, field_type: FieldType) -> Option<Scalar> {
    match (field_type, value) {
        (FieldType::Int, Scalar::Int(_))
        | (FieldType::Double, Scalar::Double(_))
        | (FieldType::String, Scalar::Str(_))
        | (FieldType::Bool, Scalar::Bool(_)) => Some(value.clone()),
        (FieldType::Double, Scalar::Int(i)) => double_equal_to(*i).map(|d| Scalar::Double(OrdF64::new(d))),
        (FieldType::Int, Scalar::Double(d)) => int_equal_to(d.0).map(Scalar::Int),
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
    // No key equals the bound: it becomes the nearest key inside the range, inclusive.
    match (field_type, value) {
        (FieldType::Int, Scalar::Double(d)) => {
            let d = d.0;
            if d.is_nan() {
                return Err(());
            }
            if d >= TWO_63 {
                return if is_lower { Err(()) } else { Ok(Bound::Unbounded) };
            }
            if d < -TWO_63 {
                return if is_lower { Ok(Bound::Unbounded) } else { Err(()) };
            }
            // A fraction: its ceiling or floor is an integral double in range.
            let edge = if is_lower { d.ceil() } else { d.floor() };
            Ok(Bound::Included(Scalar::Int(edge as i64)))
        }
        (FieldType::Double, Scalar::Int(i)) => {
            // `i` rounded lies on one side of it; the edge is the double on the inner side.
            let rounded = *i as f64;
            let rounded_above = rounded as i128 > i128::from(*i);
            let edge = match (is_lower, rounded_above) {
                (true, false) => rounded.next_up(),
                (false, true) => rounded.next_down(),
                _ => rounded,
            };
            Ok(Bound::Included(Scalar::Double(OrdF64::new(edge))))
        }
        _ => Err(()),
    }
}

#[cfg(test)]
mod prefix_tests {
    use super::ordered::order_prefix_exact;
    use super::*;
    use proptest::prelude::*;
    use std::sync::Arc;

    fn scalar() -> impl Strategy<Value = Scalar> {
        prop_oneof![
            Just(Scalar::Null),
            any::<bool>().prop_map(Scalar::Bool),
            prop_oneof![any::<i64>(), -3i64..3].prop_map(Scalar::Int),
            prop_oneof![any::<f64>(), Just(-0.0), Just(0.0), -2.0f64..2.0].prop_map(|d| Scalar::Double(OrdF64::new(d))),
            // Short strings over a tiny alphabet with 0 bytes, so prefixes and ties are common.
            proptest::collection::vec(prop_oneof![Just(0u8), Just(1u8), Just(b'a'), Just(0xFF)], 0..12)
                .prop_map(|bytes| Scalar::Str(Arc::from(bytes))),
        ]
    }

    fn key() -> impl Strategy<Value = Key> {
        prop_oneof![
            scalar().prop_map(Key::One),
            proptest::collection::vec(scalar(), 1..4).prop_map(|parts| Key::Many(parts.into_boxed_slice())),
        ]
    }

    proptest! {
        #[test]
        fn prefix_never_contradicts_key_order(keys in proptest::collection::vec(key(), 2..40)) {
            for a in &keys {
                for b in &keys {
                    if a < b {
                        prop_assert!(order_prefix(a) <= order_prefix(b), "{a:?} < {b:?}");
                    } else if a == b {
                        prop_assert_eq!(order_prefix(a), order_prefix(b));
                    }
                }
            }
        }
    }

    proptest! {
        /// What the bulk sort relies on to skip comparing keys: an exact prefix equal to
        /// another key's prefix means the keys are equal.
        #[test]
        fn an_exact_prefix_decides_equality(keys in proptest::collection::vec(key(), 2..40)) {
            for a in &keys {
                let (prefix, exact) = order_prefix_exact(a);
                prop_assert_eq!(exact, prefix.is_whole(), "{:?}", a);
                for b in keys.iter().filter(|b| exact && order_prefix(b) == prefix) {
                    prop_assert_eq!(a, b);
                }
            }
        }
    }

    #[test]
    fn exact_prefixes_are_the_keys_that_fit() {
        let one = |text: &str| Key::One(Scalar::Str(Arc::from(text.as_bytes())));
        // Variant, tag, 28 bytes, end: 32 bytes, full, so not known to be whole.
        let text = |n: usize| "abcdefghijklmnopqrstuvwxyzABCDEF"[..n].to_string();
        assert!(order_prefix_exact(&one(&text(27))).1, "31 bytes fit with room to spare");
        assert!(!order_prefix_exact(&one(&text(28))).1, "32 bytes fill the prefix");
        assert!(!order_prefix_exact(&one(&text(29))).1);
        assert!(order_prefix_exact(&Key::One(Scalar::Int(-5))).1);
        let ints = |n: i64| Key::Many((0..n).map(Scalar::Int).collect());
        assert!(order_prefix_exact(&ints(3)).1, "three ints take 28 bytes");
        assert!(!order_prefix_exact(&ints(4)).1, "four take 37");
    }

    #[test]
    fn prefix_tells_composite_keys_apart_after_the_first_part() {
        let key = |first: &str, last: &str| {
            Key::Many(vec![Scalar::Str(Arc::from(first.as_bytes())), Scalar::Str(Arc::from(last.as_bytes()))].into())
        };
        assert!(order_prefix(&key("anna", "bell")) < order_prefix(&key("anna", "cole")));
        assert!(order_prefix(&key("ann", "zed")) < order_prefix(&key("anna", "a")));
        assert!(order_prefix(&key("a", "\0")) < order_prefix(&key("a\0", "")));
    }
}
