//! Index scans: reading the row ids for a key list or a key range of one index.
//!
//! Owns: `IndexScan` (which index, which keys or range, how many rows it is expected to
//! yield), the bounds that turn a range over one field of a composite key into a
//! `BTreeMap` range, and walking those entries in either direction.
//! Never: check conditions on rows; a scan only yields the rows its keys hold.

use crate::index::postings::Postings;
use crate::index::{Index, Key};
use crate::value::{OrdF64, Scalar};
use std::cmp::Ordering;
use std::ops::Bound;

/// Walking a range stops estimating after this many distinct keys (and assumes the
/// worst), so planning stays cheap on high-cardinality indexes.
pub const ESTIMATE_KEYS_MAX: usize = 32;

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

    /// `BTreeMap` bounds that contain every key inside the range (maybe more; `place`
    /// decides per key).
    fn map_bounds(&self, composite: bool) -> (Bound<Key>, Bound<Key>) {
        if self.full && self.prefix.is_empty() {
            return (Bound::Unbounded, Bound::Unbounded);
        }
        if !composite {
            let lower = match &self.low {
                Bound::Unbounded => Bound::Excluded(Key::One(Scalar::Null)),
                Bound::Included(v) => Bound::Included(Key::One(v.clone())),
                Bound::Excluded(v) => Bound::Excluded(Key::One(v.clone())),
            };
            let upper = match &self.high {
                Bound::Unbounded => Bound::Unbounded,
                Bound::Included(v) => Bound::Included(Key::One(v.clone())),
                Bound::Excluded(v) => Bound::Excluded(Key::One(v.clone())),
            };
            return (lower, upper);
        }
        let tuple = |last: Option<Scalar>| {
            let mut parts = self.prefix.clone();
            parts.extend(last);
            Key::Many(parts.into_boxed_slice())
        };
        let lower = match &self.low {
            Bound::Included(v) | Bound::Excluded(v) if !self.full => Bound::Included(tuple(Some(v.clone()))),
            _ => Bound::Included(tuple(None)),
        };
        // Every key starting with prefix + [v] is below prefix + [successor(v)].
        let high = if self.full { &Bound::Unbounded } else { &self.high };
        let upper = match high {
            Bound::Included(v) => successor(v).map_or(Bound::Unbounded, |s| Bound::Excluded(tuple(Some(s)))),
            Bound::Excluded(v) => Bound::Excluded(tuple(Some(v.clone()))),
            Bound::Unbounded => match self.prefix.split_last() {
                Some((last, head)) => successor(last).map_or(Bound::Unbounded, |s| {
                    let mut parts = head.to_vec();
                    parts.push(s);
                    Bound::Excluded(Key::Many(parts.into_boxed_slice()))
                }),
                None => Bound::Unbounded,
            },
        };
        (lower, upper)
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
    /// Rows it is expected to yield (exact for keys and small ranges).
    pub estimate: usize,
}

impl IndexScan {
    pub fn keys(index: &Index, index_id: usize, mut keys: Vec<Key>) -> IndexScan {
        keys.sort();
        keys.dedup();
        let estimate = keys.iter().filter_map(|k| index.get(k)).map(Postings::len).sum();
        IndexScan { index: index_id, kind: ScanKind::Keys(keys), estimate }
    }

    pub fn range(index: &Index, index_id: usize, range: KeyRange, rows_total: usize) -> IndexScan {
        let mut estimate = 0;
        let mut visited = 0;
        let complete = walk(index, &range, false, |_, postings| {
            visited += 1;
            estimate += postings.len();
            visited < ESTIMATE_KEYS_MAX
        });
        IndexScan {
            index: index_id,
            kind: ScanKind::Range(range),
            estimate: if complete { estimate } else { rows_total.max(estimate) },
        }
    }

    /// Walks the scanned entries in key order (descending when `desc`), calling `f`
    /// until it returns false. Returns true when the walk completed.
    pub fn walk(&self, index: &Index, desc: bool, mut f: impl FnMut(&Key, &Postings) -> bool) -> bool {
        match &self.kind {
            ScanKind::Range(range) => walk(index, range, desc, f),
            ScanKind::Keys(keys) => {
                let mut visit = |key: &Key| index.get(key).is_none_or(|postings| f(key, postings));
                if desc { keys.iter().rev().all(&mut visit) } else { keys.iter().all(&mut visit) }
            }
        }
    }
}

fn walk(index: &Index, range: &KeyRange, desc: bool, mut f: impl FnMut(&Key, &Postings) -> bool) -> bool {
    let (lower, upper) = range.map_bounds(index.def.is_composite());
    let Some(entries) = index.range(lower.as_ref(), upper.as_ref()) else {
        return true;
    };
    let mut visit = |(key, postings): (&Key, &Postings)| match range.place(key) {
        Place::Inside => Some(f(key, postings)),
        Place::Below if desc => None,
        Place::Above if !desc => None,
        _ => Some(true),
    };
    if desc {
        for entry in entries.rev() {
            match visit(entry) {
                Some(true) => {}
                Some(false) => return false,
                None => return true,
            }
        }
    } else {
        for entry in entries {
            match visit(entry) {
                Some(true) => {}
                Some(false) => return false,
                None => return true,
            }
        }
    }
    true
}
