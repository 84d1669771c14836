//! Index scans: reading the row ids for a key list or a key range of one index.
//!
//! Owns: `IndexScan` (which index, which keys, range or skip scan, how many rows it
//! yields), the exact map bounds of a range over one component of a (composite) key,
//! counting the rows between them, and walking those entries in either direction.
//! Never: check conditions on rows; a scan only yields the rows its keys hold.

use crate::index::ordered::{OrderedMap, PartsEncoder, Position, Probe};
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

/// The smallest scalar above `Null`: where a range without a lower bound starts.
static SMALLEST_VALUE: Scalar = Scalar::Bool(false);

/// A skip scan of a composite tree index: for each distinct value of the component after
/// `outer.prefix` that lies in `outer`'s range (the leading range), the keys whose next
/// component lies in `inner` (`low`..`high`; its prefix and `full` are unused). In key
/// order, so it pages a sort on those components without sorting.
///
/// ```text
///   (ada, kim) (ada, nash) (ada, nye) (ada, orr) (aja, lee) (aja, nil) (amy, ...)
///   └ seek (ada, n..o) ┘ ──────────────────────▶ └ seek (aja, n..o) ┘ ──▶ ...
/// ```
/// Each distinct leading value costs three seeks (its inner range's start and end, then the
/// next value), so it pays when the leading range has few distinct values for its rows.
#[derive(Debug, Clone)]
pub(crate) struct SkipRange {
    pub outer: KeyRange,
    pub inner_low: Bound<Scalar>,
    pub inner_high: Bound<Scalar>,
}

impl SkipRange {
    /// Calls `f` with the span (start, end positions) of each leading value's inner range,
    /// in ascending order, until it returns false; returns true when all were visited.
    /// Every hop is a galloping seek forward from the last position, so leading values
    /// close together cost a few comparisons each.
    fn spans(&self, map: &OrderedMap, mut f: impl FnMut(Position, Position) -> bool) -> bool {
        let at = self.outer.prefix.len();
        let (lower, upper) = self.outer.map_bounds(true);
        let (mut cursor, end) = map.span(lower.as_ref(), upper.as_ref());
        // The inner bounds as probes of parts `prefix, lead, value`: past the keys with that
        // value when it is excluded below or included above. Without a lower bound the
        // inner range starts at `false`, the smallest scalar above `Null` (an empty
        // component is outside every range).
        let (low, low_past) = match &self.inner_low {
            Bound::Unbounded => (&SMALLEST_VALUE, false),
            Bound::Included(value) => (value, false),
            Bound::Excluded(value) => (value, true),
        };
        let (high, high_past) = match &self.inner_high {
            Bound::Unbounded => (None, true),
            Bound::Included(value) => (Some(value), true),
            Bound::Excluded(value) => (Some(value), false),
        };
        let mut parts: Vec<&Scalar> = self.outer.prefix.iter().collect();
        // The fixed parts are encoded once, and each leading value once for its three
        // probes: read from the order prefix stored beside its first key (no load of the
        // key's parts or bytes, a cache miss each) unless it does not fit there.
        let mut fixed = PartsEncoder::composite();
        parts.iter().for_each(|part| fixed.push(part));
        while cursor < end {
            let lead = &map.key_at(cursor).expect("a position before the end").parts()[at];
            let from_prefix = fixed.with_next_of(map.prefix_at(cursor).expect("a position before the end"));
            let with_lead = from_prefix.unwrap_or_else(|| {
                let mut encoded = fixed;
                encoded.push(lead);
                encoded
            });
            let mut encoded = with_lead;
            encoded.push(low);
            parts.truncate(at);
            parts.extend([lead, low]);
            let start = map.seek_forward(cursor, end, &Probe::encoded(&parts, low_past, encoded));
            parts.truncate(at + 1);
            let mut encoded = with_lead;
            if let Some(high) = high {
                encoded.push(high);
                parts.push(high);
            }
            let stop = map.seek_forward(start, end, &Probe::encoded(&parts, high_past, encoded));
            if start < stop && !f(start, stop) {
                return false;
            }
            parts.truncate(at + 1);
            // The key at `stop` often has the next leading value already (no key of this
            // one above the inner range): then it is the next cursor without a seek.
            let same_lead = stop < end
                && match (from_prefix, map.prefix_at(stop)) {
                    (Some(encoded), Some(prefix)) => encoded.starts(prefix),
                    _ => map.key_at(stop).map(|key| &key.parts()[at]) == Some(lead),
                };
            cursor =
                if same_lead { map.seek_forward(stop, end, &Probe::encoded(&parts, true, with_lead)) } else { stop };
        }
        true
    }
}

/// Several ranges of one composite tree index that differ in one component (an IN list
/// on it: `name IN (a, b) AND year > 2010` on `name+year` reads `(a, >2010)` and
/// `(b, >2010)`), walked together in the order of the key components from `from` on:
/// a k-way merge of k walks. With `from` past the IN component, that is the order of the
/// components after it (`ORDER BY year`), which no single walk of the index gives.
#[derive(Debug, Clone)]
pub(crate) struct MergeRange {
    /// One range per IN value, in ascending order of that value.
    pub ranges: Vec<KeyRange>,
    /// The first key component the merge orders by.
    pub from: usize,
}

/// One walk of a merge: the next entry it yields and where its span ends.
struct Head<'a> {
    key: &'a Key,
    postings: &'a Postings,
    /// The position of `key`, and the far end of the walk's span (its start when
    /// walking backwards).
    at: Position,
    stop: Position,
    /// Which range, to break ties so equal merge keys come in a fixed order.
    range: usize,
    from: usize,
    desc: bool,
}

impl Head<'_> {
    fn merge_order(&self, other: &Self) -> Ordering {
        let by_key = self.key.parts()[self.from..].cmp(&other.key.parts()[other.from..]);
        // `BinaryHeap` pops its greatest: ascending walks pop the smallest key first.
        let by_key = if self.desc { by_key } else { by_key.reverse() };
        by_key.then(other.range.cmp(&self.range))
    }
}

impl PartialEq for Head<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.merge_order(other) == Ordering::Equal
    }
}

impl Eq for Head<'_> {}

impl PartialOrd for Head<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Head<'_> {
    fn cmp(&self, other: &Self) -> Ordering {
        self.merge_order(other)
    }
}

impl MergeRange {
    /// Walks the entries of every range merged in the order of their components from
    /// `from` on (descending when `desc`), calling `f` until it returns false; returns
    /// true when all were visited. Each step costs one heap operation over the k walks.
    fn walk(&self, map: &OrderedMap, desc: bool, mut f: impl FnMut(&Key, &Postings) -> bool) -> bool {
        let mut heap = std::collections::BinaryHeap::with_capacity(self.ranges.len());
        let head = |at: Position, stop: Position, range: usize| {
            let (key, postings) = map.entry_at(at).expect("a position inside a span");
            Head { key, postings, at, stop, range, from: self.from, desc }
        };
        for (range_id, range) in self.ranges.iter().enumerate() {
            let (lower, upper) = range.map_bounds(true);
            let (start, end) = map.span(lower.as_ref(), upper.as_ref());
            if start < end {
                heap.push(if desc { head(map.step_back(end), start, range_id) } else { head(start, end, range_id) });
            }
        }
        while let Some(mut top) = heap.peek_mut() {
            debug_assert_eq!(self.ranges[top.range].place(top.key), Place::Inside);
            if !f(top.key, top.postings) {
                return false;
            }
            let next = if desc {
                (top.at > top.stop).then(|| map.step_back(top.at))
            } else {
                Some(map.step_forward(top.at)).filter(|&next| next < top.stop)
            };
            match next {
                Some(at) => {
                    let (key, postings) = map.entry_at(at).expect("a position inside a span");
                    (top.key, top.postings, top.at) = (key, postings, at);
                }
                None => {
                    std::collections::binary_heap::PeekMut::pop(top);
                }
            }
        }
        true
    }
}

/// What an index scan reads.
#[derive(Debug, Clone)]
pub(crate) enum ScanKind {
    /// These exact keys (equality and IN); sorted, without duplicates.
    Keys(Vec<Key>),
    /// A key range (tree indexes).
    Range(KeyRange),
    /// Ranges on two components of a composite tree index, by a skip scan.
    Skip(SkipRange),
    /// Ranges of a composite tree index for each value of an IN list, merged in order.
    Merge(MergeRange),
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

    /// A merge of ranges; its estimate is their exact row count.
    pub fn merge(index: &Index, index_id: usize, merge: MergeRange) -> IndexScan {
        let mut scan = IndexScan { index: index_id, kind: ScanKind::Merge(merge), estimate: 0 };
        scan.estimate = scan.count(index);
        scan
    }

    /// A skip scan, with an estimate of the rows it yields (counting them exactly takes
    /// three seeks per distinct leading value: [`count`](Self::count) does that).
    pub fn skip(index_id: usize, skip: SkipRange, estimate: usize) -> IndexScan {
        IndexScan { index: index_id, kind: ScanKind::Skip(skip), estimate }
    }

    /// The exact number of rows the scan yields, without walking a range (a skip scan
    /// counts each leading value's inner range).
    pub fn count(&self, index: &Index) -> usize {
        match &self.kind {
            ScanKind::Keys(keys) => keys.iter().filter_map(|k| index.get(k)).map(|rows| rows.len()).sum(),
            ScanKind::Range(range) => count_range(index, range),
            ScanKind::Skip(skip) => {
                let map = index.tree().expect("skip scans are planned on tree indexes only");
                let mut rows = 0;
                skip.spans(map, |start, stop| {
                    rows += map.rows_between(start, stop);
                    true
                });
                rows
            }
            ScanKind::Merge(merge) => merge.ranges.iter().map(|range| count_range(index, range)).sum(),
        }
    }

    /// Walks the scanned entries in key order (descending when `desc`; a merge in the
    /// order of its components from `from` on), calling `f`
    /// until it returns false. Returns true when the walk completed.
    pub fn walk(&self, index: &Index, desc: bool, mut f: impl FnMut(&Key, &Postings) -> bool) -> bool {
        match &self.kind {
            ScanKind::Range(range) => walk(index, range, desc, f),
            ScanKind::Skip(skip) => {
                let map = index.tree().expect("skip scans are planned on tree indexes only");
                if !desc {
                    return skip.spans(map, |start, stop| map.walk_span(start, stop, false, &mut f));
                }
                // Backwards: the spans are found going forwards (a few positions each),
                // then walked from the last.
                let mut spans = Vec::new();
                skip.spans(map, |start, stop| {
                    spans.push((start, stop));
                    true
                });
                spans.iter().rev().all(|&(start, stop)| map.walk_span(start, stop, true, &mut f))
            }
            ScanKind::Merge(merge) => {
                merge.walk(index.tree().expect("merges are planned on tree indexes only"), desc, f)
            }
            ScanKind::Keys(keys) => {
                let mut visit = |key: &Key| index.get(key).is_none_or(|rows| f(key, &rows));
                if desc { keys.iter().rev().all(&mut visit) } else { keys.iter().all(&mut visit) }
            }
        }
    }
}

fn count_range(index: &Index, range: &KeyRange) -> usize {
    let (lower, upper) = range.map_bounds(index.def.is_composite());
    index.count_rows(lower.as_ref(), upper.as_ref()).unwrap_or(0)
}

fn walk(index: &Index, range: &KeyRange, desc: bool, mut f: impl FnMut(&Key, &Postings) -> bool) -> bool {
    let (lower, upper) = range.map_bounds(index.def.is_composite());
    index.walk(lower.as_ref(), upper.as_ref(), desc, |key, postings| {
        debug_assert_eq!(range.place(key), Place::Inside, "map bounds hold exactly the range");
        f(key, postings)
    })
}
