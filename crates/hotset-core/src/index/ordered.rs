//! The ordered map behind tree indexes: keys in order, each with its postings, plus the
//! number of rows between any two keys in logarithmic time.
//!
//! Owns: `OrderedMap`, a two-level sorted structure. Keys live in blocks of at most
//! `BLOCK_KEYS_MAX` sorted keys; blocks are in key order; a Fenwick tree over the blocks'
//! row counts answers "how many rows between these bounds" with two partial block sums
//! and one tree query, so an exact total over a range never walks the range.
//! Never: hold an empty block or an empty posting list; let a block's `rows` differ from
//! the sum of its postings' lengths (checked in debug builds).
//!
//! ```text
//!   blocks:  [k0 k1 .. k255] [k256 .. ] [ .. ]       binary search on each block's last key
//!   rows:         1200          800       950         Fenwick tree over these
//! ```

use super::Key;
use super::postings::Postings;
use std::ops::Bound;

/// Most keys in one block: small enough that inserting into a block (a memmove) is cheap,
/// large enough that the block list stays short.
pub const BLOCK_KEYS_MAX: usize = 256;

#[derive(Debug, Default)]
struct Block {
    keys: Vec<Key>,
    postings: Vec<Postings>,
    rows: usize,
}

/// A position: block index and index within it. `(blocks.len(), 0)` is the end.
type Position = (usize, usize);

/// Ordered `Key -> Postings` with counted ranges.
#[derive(Debug, Default)]
pub struct OrderedMap {
    blocks: Vec<Block>,
    /// Fenwick (binary indexed) tree over `blocks[i].rows`, 1-based.
    fenwick: Vec<usize>,
    keys: usize,
}

/// Blocks laid out from keys given in strictly ascending order, in one pass: no searching,
/// no block splits. Blocks are filled to three quarters so the first inserts after a bulk
/// load do not split every block at once. Several threads may each lay out one key range
/// (`OrderedMap::from_layouts` joins them).
#[derive(Debug, Default)]
pub struct SortedLayout {
    blocks: Vec<Block>,
    /// The block being filled.
    open: Block,
    keys: usize,
}

impl SortedLayout {
    const FILL: usize = BLOCK_KEYS_MAX * 3 / 4;

    /// Adds a key above every key added so far, with its postings.
    pub fn push(&mut self, key: Key, postings: Postings) {
        debug_assert!(self.open.keys.last().is_none_or(|last| *last < key), "keys ascend");
        if self.open.keys.len() == Self::FILL {
            self.seal();
        }
        self.open.rows += postings.len();
        self.open.keys.push(key);
        self.open.postings.push(postings);
        self.keys += 1;
    }

    /// Adds `row` under `key`, which is the last key added or above it, with rows of one
    /// key given in ascending order. `maybe_last` false says the caller knows `key` differs
    /// from the last one (the comparison is skipped). Returns the key when it is new.
    pub fn push_row(&mut self, key: Key, row: u32, maybe_last: bool) -> Option<&Key> {
        if maybe_last && self.open.keys.last() == Some(&key) {
            self.open.postings.last_mut().expect("one posting list per key").insert(row);
            self.open.rows += 1;
            return None;
        }
        self.push(key, Postings::new(row));
        self.open.keys.last()
    }

    /// Moves the open block, if it holds any key, to the finished ones.
    fn seal(&mut self) {
        if !self.open.keys.is_empty() {
            self.blocks.push(std::mem::take(&mut self.open));
        }
    }
}

impl OrderedMap {
    pub fn new() -> OrderedMap {
        OrderedMap::default()
    }

    /// Builds the map from entries already in strictly ascending key order, in one pass
    /// (see `SortedLayout`).
    pub fn from_sorted(entries: impl IntoIterator<Item = (Key, Postings)>) -> OrderedMap {
        let mut layout = SortedLayout::default();
        for (key, postings) in entries {
            layout.push(key, postings);
        }
        OrderedMap::from_layouts(vec![layout])
    }

    /// Joins layouts of consecutive key ranges (each one's keys all below the next one's)
    /// into one map.
    pub fn from_layouts(layouts: Vec<SortedLayout>) -> OrderedMap {
        let mut map = OrderedMap::default();
        for mut layout in layouts {
            layout.seal();
            if let (Some(last), Some(first)) = (map.blocks.last(), layout.blocks.first()) {
                debug_assert!(last.keys.last() < first.keys.first(), "layouts in key order");
            }
            map.keys += layout.keys;
            map.blocks.append(&mut layout.blocks);
        }
        map.rebuild_fenwick();
        map
    }

    /// Number of distinct keys.
    pub fn len(&self) -> usize {
        self.keys
    }

    pub fn is_empty(&self) -> bool {
        self.keys == 0
    }

    fn end(&self) -> Position {
        (self.blocks.len(), 0)
    }

    /// The first position whose key is `>= key` (or `> key` when `strict`).
    fn seek(&self, key: &Key, strict: bool) -> Position {
        let before = |k: &Key| if strict { k <= key } else { k < key };
        let block = self.blocks.partition_point(|b| before(b.keys.last().expect("blocks are never empty")));
        match self.blocks.get(block) {
            None => self.end(),
            Some(b) => (block, b.keys.partition_point(|k| before(k))),
        }
    }

    fn start_of(&self, bound: Bound<&Key>) -> Position {
        match bound {
            Bound::Unbounded => (0, 0),
            Bound::Included(key) => self.seek(key, false),
            Bound::Excluded(key) => self.seek(key, true),
        }
    }

    fn end_of(&self, bound: Bound<&Key>) -> Position {
        match bound {
            Bound::Unbounded => self.end(),
            Bound::Included(key) => self.seek(key, true),
            Bound::Excluded(key) => self.seek(key, false),
        }
    }

    pub fn get(&self, key: &Key) -> Option<&Postings> {
        let (block, at) = self.seek(key, false);
        let b = self.blocks.get(block)?;
        (b.keys.get(at) == Some(key)).then(|| &b.postings[at])
    }

    /// Adds `row` under `key`; returns true when the key is new.
    pub fn insert(&mut self, key: Key, row: u32) -> bool {
        if self.blocks.is_empty() {
            self.blocks.push(Block { keys: vec![key], postings: vec![Postings::new(row)], rows: 1 });
            self.keys = 1;
            self.rebuild_fenwick();
            return true;
        }
        let (mut block, mut at) = self.seek(&key, false);
        if block == self.blocks.len() {
            // Past every key: append to the last block.
            block -= 1;
            at = self.blocks[block].keys.len();
        }
        let b = &mut self.blocks[block];
        b.rows += 1;
        let new_key = b.keys.get(at) != Some(&key);
        if new_key {
            b.keys.insert(at, key);
            b.postings.insert(at, Postings::new(row));
            self.keys += 1;
        } else {
            b.postings[at].insert(row);
        }
        if b.keys.len() > BLOCK_KEYS_MAX {
            self.split(block);
        } else {
            self.fenwick_add(block, 1);
        }
        new_key
    }

    /// Removes `row` from under `key` (both must be present); returns true when the key
    /// had no other row and is gone.
    pub fn remove(&mut self, key: &Key, row: u32) -> bool {
        let (block, at) = self.seek(key, false);
        let b = &mut self.blocks[block];
        assert_eq!(b.keys.get(at), Some(key), "removing an unindexed key");
        b.rows -= 1;
        let emptied = b.postings[at].remove(row);
        if emptied {
            b.keys.remove(at);
            b.postings.remove(at);
            self.keys -= 1;
        }
        if b.keys.is_empty() {
            self.blocks.remove(block);
            self.rebuild_fenwick();
        } else {
            self.fenwick_sub(block, 1);
        }
        emptied
    }

    fn split(&mut self, block: usize) {
        let b = &mut self.blocks[block];
        let half = b.keys.len() / 2;
        let keys = b.keys.split_off(half);
        let postings = b.postings.split_off(half);
        let rows: usize = postings.iter().map(Postings::len).sum();
        b.rows -= rows;
        self.blocks.insert(block + 1, Block { keys, postings, rows });
        self.rebuild_fenwick();
    }

    fn rebuild_fenwick(&mut self) {
        let n = self.blocks.len();
        self.fenwick = vec![0; n + 1];
        for i in 1..=n {
            self.fenwick[i] += self.blocks[i - 1].rows;
            let parent = i + (i & i.wrapping_neg());
            if parent <= n {
                self.fenwick[parent] += self.fenwick[i];
            }
        }
        debug_assert!(self.blocks.iter().all(|b| b.rows == b.postings.iter().map(Postings::len).sum::<usize>()));
    }

    fn fenwick_add(&mut self, block: usize, delta: usize) {
        let mut i = block + 1;
        while i < self.fenwick.len() {
            self.fenwick[i] += delta;
            i += i & i.wrapping_neg();
        }
    }

    fn fenwick_sub(&mut self, block: usize, delta: usize) {
        let mut i = block + 1;
        while i < self.fenwick.len() {
            self.fenwick[i] -= delta;
            i += i & i.wrapping_neg();
        }
    }

    /// Rows in blocks `[0, block)`.
    fn rows_before(&self, block: usize) -> usize {
        let (mut i, mut sum) = (block, 0);
        while i > 0 {
            sum += self.fenwick[i];
            i -= i & i.wrapping_neg();
        }
        sum
    }

    /// Rows under every key between the bounds.
    pub fn count_rows(&self, lower: Bound<&Key>, upper: Bound<&Key>) -> usize {
        let (start, end) = (self.start_of(lower), self.end_of(upper));
        if start >= end {
            return 0;
        }
        let partial = |block: usize, from: usize, to: usize| -> usize {
            self.blocks[block].postings[from..to].iter().map(Postings::len).sum()
        };
        if start.0 == end.0 {
            return partial(start.0, start.1, end.1);
        }
        let head = partial(start.0, start.1, self.blocks[start.0].keys.len());
        let middle = self.rows_before(end.0) - self.rows_before(start.0 + 1);
        let tail = if end.0 < self.blocks.len() { partial(end.0, 0, end.1) } else { 0 };
        head + middle + tail
    }

    /// Calls `f` on each entry between the bounds, in key order (descending when
    /// `desc`), until it returns false. Returns true when the walk completed.
    pub fn walk(
        &self,
        lower: Bound<&Key>,
        upper: Bound<&Key>,
        desc: bool,
        mut f: impl FnMut(&Key, &Postings) -> bool,
    ) -> bool {
        let (start, end) = (self.start_of(lower), self.end_of(upper));
        if start >= end {
            return true;
        }
        let last_block = if end.1 == 0 { end.0 - 1 } else { end.0 };
        let range_in = |block: usize| {
            let b = &self.blocks[block];
            let from = if block == start.0 { start.1 } else { 0 };
            let to = if block == end.0 { end.1 } else { b.keys.len() };
            (from, to)
        };
        if desc {
            for block in (start.0..=last_block).rev() {
                let (from, to) = range_in(block);
                let b = &self.blocks[block];
                if !(from..to).rev().all(|i| f(&b.keys[i], &b.postings[i])) {
                    return false;
                }
            }
        } else {
            for block in start.0..=last_block {
                let (from, to) = range_in(block);
                let b = &self.blocks[block];
                if !(from..to).all(|i| f(&b.keys[i], &b.postings[i])) {
                    return false;
                }
            }
        }
        true
    }

    /// Every entry, for memory accounting.
    pub fn postings(&self) -> impl Iterator<Item = &Postings> {
        self.blocks.iter().flat_map(|b| b.postings.iter())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::Scalar;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    fn key(i: i64) -> Key {
        Key::One(Scalar::Int(i))
    }

    fn bound(kind: u8, value: i64) -> Bound<Key> {
        match kind % 3 {
            0 => Bound::Unbounded,
            1 => Bound::Included(key(value)),
            _ => Bound::Excluded(key(value)),
        }
    }

    proptest! {
        /// Against a BTreeMap of row sets: same entries, walks and range counts after any
        /// mix of inserts and removes (enough of them to split and drop blocks).
        #[test]
        fn agrees_with_a_btree(ops in proptest::collection::vec((0i64..600, 0u32..4, any::<bool>()), 1..3000),
                               ranges in proptest::collection::vec((0u8..3, -5i64..605, 0u8..3, -5i64..605, any::<bool>()), 1..20)) {
            let mut map = OrderedMap::new();
            let mut model: BTreeMap<i64, std::collections::BTreeSet<u32>> = BTreeMap::new();
            for (k, row, add) in ops {
                let present = model.get(&k).is_some_and(|s| s.contains(&row));
                if add && !present {
                    let new = !model.contains_key(&k);
                    model.entry(k).or_default().insert(row);
                    prop_assert_eq!(map.insert(key(k), row), new);
                } else if !add && present {
                    let set = model.get_mut(&k).unwrap();
                    set.remove(&row);
                    let gone = set.is_empty();
                    if gone { model.remove(&k); }
                    prop_assert_eq!(map.remove(&key(k), row), gone);
                }
            }
            prop_assert_eq!(map.len(), model.len());
            for (lk, lv, uk, uv, desc) in ranges {
                let (lower, upper) = (bound(lk, lv), bound(uk, uv));
                let to_i = |b: &Bound<Key>| match b {
                    Bound::Included(Key::One(Scalar::Int(i))) => Bound::Included(*i),
                    Bound::Excluded(Key::One(Scalar::Int(i))) => Bound::Excluded(*i),
                    _ => Bound::Unbounded,
                };
                let (li, ui) = (to_i(&lower), to_i(&upper));
                let valid = match (li, ui) {
                    (Bound::Included(a) | Bound::Excluded(a), Bound::Included(b) | Bound::Excluded(b)) => a < b,
                    _ => true,
                };
                let want: Vec<(i64, usize)> = if valid { model.range((li, ui)).map(|(k, s)| (*k, s.len())).collect() } else { Vec::new() };
                let mut got = Vec::new();
                map.walk(lower.as_ref(), upper.as_ref(), desc, |k, p| {
                    if let Key::One(Scalar::Int(i)) = k { got.push((*i, p.len())); }
                    true
                });
                if desc { got.reverse(); }
                if valid {
                    prop_assert_eq!(&got, &want);
                    prop_assert_eq!(map.count_rows(lower.as_ref(), upper.as_ref()), want.iter().map(|(_, n)| n).sum::<usize>());
                }
            }
        }
    }
}
