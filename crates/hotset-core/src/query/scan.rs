//! Index scans: reading the row ids for a key list or a key range of one index.
//!
//! Owns: `IndexScan` (which index, which keys or range, how many rows it yields), the
//! exact map bounds of a range over one component of a (composite) key, counting the
//! rows between them, and walking those entries in either direction.
//! Never: check conditions on rows; a scan only yields the rows its keys hold.

use crate::index::postings::Postings;
use crate::index::{Index, Key};
use crate::value::{OrdF64, Scalar};
use std::cmp::Ordering;
use std::ops::Bound;

/// A range over one component of an index key, after `prefix` (equal leading components
/// of a composite key). `full` leaves that component unconstrained: every key with the
/// prefix, the empty (`Null`) ones included.
#[derive(Debug, Clone)]
pub(crate) struct KeyRange {
    pub prefix: Vec<Scalar>,
    pub low: Bound<Scalar>,
    pub high: Bound<Scalar>,
    pub full: bool,
}

/// Where a key lies relative to a range, in ascending key order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Place {
    Below,
    Inside,
    Above,
}

impl KeyRange {
    pub fn between(low: Bound<Scalar>, high: Bound<Scalar>) -> KeyRange {
        KeyRange { prefix: Vec::new(), low, high, full: false }
    }

    pub fn place(&self, key: &Key) -> Place {
        let parts = key.parts();
        for (part, want) in parts.iter().zip(&self.prefix) {
            match part.cmp(want) {
                Ordering::Less => return Place::Below,
                Ordering::Greater => return Place::Above,
                Ordering::Equal => {}
            }
        }
        if self.full {
            return Place::Inside;
        }
        let Some(part) = parts.get(self.prefix.len()) else {
            return Place::Below;
        };
        if *part == Scalar::Null {
            return Place::Below;
        }
        let below = match &self.low {
            Bound::Unbounded => false,
            Bound::Included(low) => part < low,
            Bound::Excluded(low) => part <= low,
        };
        let above = match &self.high {
            Bound::Unbounded => false,
            Bound::Included(high) => part > high,
            Bound::Excluded(high) => part >= high,
        };
        match (below, above) {
            (true, _) => Place::Below,
            (_, true) => Place::Above,
            _ => Place::Inside,
        }
    }

    /// The map bounds holding exactly the keys inside the range, so that counting rows
    /// between them is the range's row count.
    fn map_bounds(&self, composite: bool) -> (Bound<Key>, Bound<Key>) {
        if !composite {
            if self.full {
                return (Bound::Unbounded, Bound::Unbounded);
            }
            let one = |v: &Scalar| Key::One(v.clone());
            let lower = match &self.low {
                // Empty rows sit under the `Null` key, first in order; a range skips them.
                Bound::Unbounded => Bound::Excluded(Key::One(Scalar::Null)),
                Bound::Included(v) => Bound::Included(one(v)),
                Bound::Excluded(v) => Bound::Excluded(one(v)),
            };
            return (lower, self.high.as_ref().map(one));
        }
        let tuple = |last: Option<Scalar>| {
            let mut parts = self.prefix.clone();
            parts.extend(last);
            Key::Many(parts.into_boxed_slice())
        };
        let lower = match (&self.low, self.full) {
            (_, true) => tuple(None),
            // `false` is the smallest non-null scalar: this skips empty components.
            (Bound::Unbounded, false) => tuple(Some(Scalar::Bool(false))),
            (Bound::Included(v), false) => tuple(Some(v.clone())),
            (Bound::Excluded(v), false) => match successor(v) {
                Some(next) => tuple(Some(next)),
                None => return (Bound::Included(tuple(None)), Bound::Excluded(tuple(None))),
            },
        };
        // Every key starting with prefix + [v] is below prefix + [successor(v)].
        let upper = match (&self.high, self.full) {
            (Bound::Included(v), false) => {
                successor(v).map_or_else(|| self.prefix_end(), |s| Bound::Excluded(tuple(Some(s))))
            }
            (Bound::Excluded(v), false) => Bound::Excluded(tuple(Some(v.clone()))),
            _ => self.prefix_end(),
        };
        (Bound::Included(lower), upper)
    }

    /// The bound just past every key that starts with the prefix.
    fn prefix_end(&self) -> Bound<Key> {
        for cut in (0..self.prefix.len()).rev() {
            if let Some(next) = successor(&self.prefix[cut]) {
                let mut parts = self.prefix[..cut].to_vec();
                parts.push(next);
                return Bound::Excluded(Key::Many(parts.into_boxed_slice()));
            }
        }
        Bound::Unbounded
    }
}

/// The smallest scalar of the same kind greater than `value`, if any.
fn successor(value: &Scalar) -> Option<Scalar> {
    match value {
        Scalar::Null => Some(Scalar::Bool(false)),
        Scalar::Bool(false) => Some(Scalar::Bool(true)),
        Scalar::Bool(true) => None,
        Scalar::Int(i) => i.checked_add(1).map(Scalar::Int),
        Scalar::Double(d) => Some(Scalar::Double(OrdF64(d.0.next_up()))),
        Scalar::Str(s) => {
            let mut next = s.to_vec();
            next.push(0);
            Some(Scalar::str(&next))
        }
    }
}

/// What an index scan reads.
#[derive(Debug, Clone)]
pub(crate) enum ScanKind {
    /// These exact keys (equality and IN); sorted, without duplicates.
    Keys(Vec<Key>),
    /// A key range (tree indexes).
    Range(KeyRange),
}

/// One read of one index.
#[derive(Debug, Clone)]
pub(crate) struct IndexScan {
    pub index: usize,
    pub kind: ScanKind,
    /// Rows it yields, counted exactly (a row of an array index under several of the
    /// scanned keys counts once per key).
    pub estimate: usize,
}

impl IndexScan {
    pub fn keys(index: &Index, index_id: usize, mut keys: Vec<Key>) -> IndexScan {
        keys.sort();
        keys.dedup();
        let estimate = keys.iter().filter_map(|k| index.get(k)).map(|rows| rows.len()).sum();
        IndexScan { index: index_id, kind: ScanKind::Keys(keys), estimate }
    }

    /// A range scan; its estimate is the exact row count (a tree index counts ranges in
    /// logarithmic time).
    pub fn range(index: &Index, index_id: usize, range: KeyRange) -> IndexScan {
        let mut scan = IndexScan { index: index_id, kind: ScanKind::Range(range), estimate: 0 };
        scan.estimate = scan.count(index);
        scan
    }

    /// The exact number of rows the scan yields, without walking a range.
    pub fn count(&self, index: &Index) -> usize {
        match &self.kind {
            ScanKind::Keys(keys) => keys.iter().filter_map(|k| index.get(k)).map(|rows| rows.len()).sum(),
            ScanKind::Range(range) => {
                let (lower, upper) = range.map_bounds(index.def.is_composite());
                index.count_rows(lower.as_ref(), upper.as_ref()).unwrap_or(0)
            }
        }
    }

    /// Walks the scanned entries in key order (descending when `desc`), calling `f`
    /// until it returns false. Returns true when the walk completed.
    pub fn walk(&self, index: &Index, desc: bool, mut f: impl FnMut(&Key, &Postings) -> bool) -> bool {
        match &self.kind {
            ScanKind::Range(range) => walk(index, range, desc, f),
            ScanKind::Keys(keys) => {
                let mut visit = |key: &Key| index.get(key).is_none_or(|rows| f(key, &rows));
                if desc { keys.iter().rev().all(&mut visit) } else { keys.iter().all(&mut visit) }
            }
        }
    }
}

fn walk(index: &Index, range: &KeyRange, desc: bool, mut f: impl FnMut(&Key, &Postings) -> bool) -> bool {
    let (lower, upper) = range.map_bounds(index.def.is_composite());
    index.walk(lower.as_ref(), upper.as_ref(), desc, |key, postings| {
        debug_assert_eq!(range.place(key), Place::Inside, "map bounds hold exactly the range");
        f(key, postings)
    })
}
