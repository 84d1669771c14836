//! The sorted set behind a Redis zset value.
//!
//! Owns: [`SortedSet`] (member → score, plus the members in score order with their
//! ranks) and [`ScoreOrder`], the counted ordered sequence of (score, member) it keeps:
//! sorted blocks of at most [`BLOCK_MAX`] entries with a Fenwick tree over the blocks'
//! lengths, so a member's rank, the entry at a rank and the rank of a score or lex bound
//! are each O(log n), and a range is walked in order from there.
//!
//! ```text
//!   blocks:   [(1,a) (1,b) .. (4,k)] [(4,m) .. (9,x)] [ .. ]   binary search on last entries
//!   lengths:          128                  97            ..    Fenwick tree over these
//! ```
//!
//! Must never: hold an empty block, a NaN score, or an entry whose score disagrees with
//! the member map (checked in debug builds after each change); be left empty inside a
//! keyspace (the shard deletes a key whose sorted set becomes empty, as Redis does).
//!
//! Order: by score, then by member bytes, as Redis orders a skip list; -0 and 0 are
//! equal scores (so they tie on the member), which is also Redis' comparison.

use std::cmp::Ordering;
use std::collections::VecDeque;

use crate::store::router::hash_bytes;
use crate::store::slab_map::{ScanBudget, SlabCursor, SlabMap};
use crate::store::small_bytes::SmallBytes;

/// Most entries in one block: a block insert moves at most this many 32-byte entries,
/// and a million members make about 6,000 blocks.
pub const BLOCK_MAX: usize = 256;

/// One member in score order.
#[derive(Debug, Clone)]
struct Item {
    score: f64,
    member: SmallBytes,
}

/// (score, member) order; scores are never NaN, so `partial_cmp` always answers.
fn order(score: f64, member: &[u8], item: &Item) -> Ordering {
    score.partial_cmp(&item.score).expect("scores are never NaN").then_with(|| member.cmp(&item.member))
}

/// A bound of a score range (ZRANGEBYSCORE's `1`, `(1`, `-inf`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ScoreBound {
    /// The score.
    pub value: f64,
    /// Whether the score itself is outside the range (`(`).
    pub exclusive: bool,
}

/// A bound of a lex range (ZRANGEBYLEX's `-`, `+`, `[a`, `(a`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LexBound {
    /// Before every member.
    Min,
    /// After every member.
    Max,
    /// This member and on (as a lower bound) or up to it (as an upper one).
    Inclusive(Vec<u8>),
    /// Past this member.
    Exclusive(Vec<u8>),
}

/// The members of a sorted set in (score, member) order, with ranks (module docs).
#[derive(Debug, Clone, Default)]
pub struct ScoreOrder {
    /// Deques, so popping either end of the set (ZPOPMIN, ZPOPMAX) moves nothing.
    blocks: Vec<VecDeque<Item>>,
    /// 1-based Fenwick tree over `blocks[i].len()`.
    fenwick: Vec<usize>,
    len: usize,
}

impl ScoreOrder {
    /// Entries in order.
    pub fn len(&self) -> usize {
        self.len
    }

    /// The block and the offset in it of the first entry for which `before` is false
    /// (`before` must be true for a prefix of the order and false after it); the block
    /// is `blocks.len()` when there is none.
    fn partition(&self, before: impl Fn(&Item) -> bool) -> (usize, usize) {
        let block = self.blocks.partition_point(|block| before(block.back().expect("blocks are never empty")));
        match self.blocks.get(block) {
            Some(items) => (block, items.partition_point(&before)),
            None => (block, 0),
        }
    }

    /// The rank of the first entry for which `before` is false (the count of those for
    /// which it is true).
    fn rank_where(&self, before: impl Fn(&Item) -> bool) -> usize {
        let (block, offset) = self.partition(before);
        self.entries_before(block) + offset
    }

    /// Entries in blocks before `block`: a Fenwick prefix sum.
    fn entries_before(&self, block: usize) -> usize {
        let (mut sum, mut i) = (0, block);
        while i > 0 {
            sum += self.fenwick[i];
            i &= i - 1;
        }
        sum
    }

    /// The block holding rank `rank` (< len) and the offset in it: a Fenwick descent.
    fn seek(&self, rank: usize) -> (usize, usize) {
        debug_assert!(rank < self.len);
        let (mut block, mut left) = (0, rank);
        let mut step = self.fenwick.len().next_power_of_two();
        while step > 0 {
            let next = block + step;
            if next < self.fenwick.len() && self.fenwick[next] <= left {
                block = next;
                left -= self.fenwick[next];
            }
            step /= 2;
        }
        (block, left)
    }

    fn fenwick_add(&mut self, block: usize, delta: isize) {
        let mut i = block + 1;
        while i < self.fenwick.len() {
            self.fenwick[i] = self.fenwick[i].wrapping_add_signed(delta);
            i += i & i.wrapping_neg();
        }
    }

    /// Rebuilds the Fenwick tree after blocks were added or removed: O(blocks), once per
    /// split or merge, which happen once per `BLOCK_MAX / 2` inserts or removals at most.
    fn rebuild_fenwick(&mut self) {
        self.fenwick.clear();
        self.fenwick.push(0);
        self.fenwick.extend(self.blocks.iter().map(VecDeque::len));
        for i in 1..self.fenwick.len() {
            let parent = i + (i & i.wrapping_neg());
            if parent < self.fenwick.len() {
                self.fenwick[parent] += self.fenwick[i];
            }
        }
    }

    /// Adds (score, member), which must not be present.
    fn insert(&mut self, score: f64, member: SmallBytes) {
        debug_assert!(!score.is_nan());
        self.len += 1;
        if self.blocks.is_empty() {
            self.blocks.push(VecDeque::from([Item { score, member }]));
            return self.rebuild_fenwick();
        }
        let (mut block, mut offset) = self.partition(|item| order(score, &member, item) == Ordering::Greater);
        if block == self.blocks.len() {
            block -= 1;
            offset = self.blocks[block].len();
        }
        let appended = block + 1 == self.blocks.len() && offset == self.blocks[block].len();
        let prepended = block == 0 && offset == 0;
        self.blocks[block].insert(offset, Item { score, member });
        self.fenwick_add(block, 1);
        if self.blocks[block].len() > BLOCK_MAX {
            // Appending in order (a leaderboard of timestamps) leaves full blocks behind
            // instead of half-empty ones; so does prepending.
            let at = match (appended, prepended) {
                (true, _) => BLOCK_MAX,
                (_, true) => 1,
                _ => BLOCK_MAX / 2,
            };
            let tail = self.blocks[block].split_off(at);
            self.blocks.insert(block + 1, tail);
            self.rebuild_fenwick();
        }
    }

    /// Removes (score, member); false when it is not there.
    fn remove(&mut self, score: f64, member: &[u8]) -> bool {
        let (block, offset) = self.partition(|item| order(score, member, item) == Ordering::Greater);
        let found = self.blocks.get(block).and_then(|items| items.get(offset));
        if found.is_none_or(|item| order(score, member, item) != Ordering::Equal) {
            return false;
        }
        self.remove_at(block, offset);
        true
    }

    fn remove_at(&mut self, block: usize, offset: usize) -> Item {
        let item = self.blocks[block].remove(offset).expect("an entry at the offset");
        self.len -= 1;
        self.fenwick_add(block, -1);
        let len = self.blocks[block].len();
        if len == 0 {
            self.blocks.remove(block);
            self.rebuild_fenwick();
        } else if len < BLOCK_MAX / 4 {
            // Keep blocks dense: merge a small block into a neighbour with room.
            let neighbour = [block.checked_sub(1), Some(block + 1)]
                .into_iter()
                .flatten()
                .find(|&other| self.blocks.get(other).is_some_and(|items| items.len() + len <= BLOCK_MAX * 3 / 4));
            if let Some(other) = neighbour {
                let (left, right) = (block.min(other), block.max(other));
                let moved = self.blocks.remove(right);
                self.blocks[left].extend(moved);
                self.rebuild_fenwick();
            }
        }
        item
    }

    /// Entries at ranks `start..end` in order (`end` ≤ len).
    fn range(&self, start: usize, end: usize) -> impl Iterator<Item = &Item> {
        let (block, offset) = if start < end { self.seek(start) } else { (self.blocks.len(), 0) };
        self.blocks[block.min(self.blocks.len())..].iter().flatten().skip(offset).take(end.saturating_sub(start))
    }

    /// Entries at ranks `start..end`, last first.
    fn range_rev(&self, start: usize, end: usize) -> impl Iterator<Item = &Item> {
        let (block, offset, taken) = match start < end {
            true => {
                let (block, offset) = self.seek(end - 1);
                (block + 1, self.blocks[block].len() - 1 - offset, end - start)
            }
            false => (0, 0, 0),
        };
        self.blocks[..block].iter().rev().flat_map(|items| items.iter().rev()).skip(offset).take(taken)
    }

    /// Checks the structure against its counts (debug builds).
    fn check(&self) {
        if cfg!(debug_assertions) {
            assert!(self.blocks.iter().all(|items| !items.is_empty() && items.len() <= BLOCK_MAX));
            assert_eq!(self.blocks.iter().map(VecDeque::len).sum::<usize>(), self.len);
            for (i, items) in self.blocks.iter().enumerate() {
                assert_eq!(self.entries_before(i + 1) - self.entries_before(i), items.len(), "fenwick of block {i}");
            }
        }
    }
}

/// A Redis sorted set: each member's score, and the members in score order.
#[derive(Debug, Clone, Default)]
pub struct SortedSet {
    scores: SlabMap<f64>,
    order: ScoreOrder,
    bytes: usize,
}

/// Heap bytes a member costs: its map slot and order entry, and its bytes twice when
/// too long to sit inline.
fn member_cost(member: &[u8]) -> usize {
    let outside = if member.len() > SmallBytes::INLINE { member.len() } else { 0 };
    SlabMap::<f64>::ENTRY_OVERHEAD + std::mem::size_of::<Item>() + 2 * outside
}

impl SortedSet {
    /// Number of members.
    pub fn len(&self) -> usize {
        self.scores.len()
    }

    /// Whether there are no members.
    pub fn is_empty(&self) -> bool {
        self.scores.is_empty()
    }

    /// Approximate heap bytes, O(1).
    pub fn heap_bytes(&self) -> usize {
        self.bytes
    }

    /// The score of `member`.
    pub fn score(&self, member: &[u8]) -> Option<f64> {
        let slot = self.scores.find(hash_bytes(member), member)?;
        self.scores.get(slot).map(|slot| slot.value)
    }

    /// Sets `member`'s score; the score it had, `None` when it is new.
    pub fn insert(&mut self, member: &[u8], score: f64) -> Option<f64> {
        assert!(!score.is_nan(), "a NaN score never reaches the set");
        let hash = hash_bytes(member);
        let old = match self.scores.find(hash, member) {
            Some(slot) => {
                let entry = self.scores.get_mut(slot).expect("found just now");
                let old = entry.value;
                if old == score {
                    // Redis keeps the stored score when the new one compares equal
                    // (so 0 stays 0 after a ZADD of -0).
                    return Some(old);
                }
                entry.value = score;
                let removed = self.order.remove(old, member);
                debug_assert!(removed, "the order holds every member");
                Some(old)
            }
            None => {
                self.scores.insert_new(hash, member.into(), score);
                self.bytes += member_cost(member);
                None
            }
        };
        self.order.insert(score, member.into());
        self.check();
        old
    }

    /// Removes `member`; its score when it was there.
    pub fn remove(&mut self, member: &[u8]) -> Option<f64> {
        let hash = hash_bytes(member);
        let slot = self.scores.find(hash, member)?;
        let score = self.scores.remove(hash, slot).expect("found just now").value;
        self.scores.compact_if_sparse();
        let removed = self.order.remove(score, member);
        debug_assert!(removed, "the order holds every member");
        self.bytes -= member_cost(member);
        self.check();
        Some(score)
    }

    /// Removes up to `count` members from the lowest end (or the highest, `max`); them, in
    /// the order they were taken. Each is taken off the end of its block (a deque) without
    /// searching the order again.
    pub fn pop(&mut self, max: bool, count: usize) -> Vec<(Vec<u8>, f64)> {
        let mut popped = Vec::with_capacity(count.min(self.len()));
        for _ in 0..count {
            let Some(block) = (if max {
                self.order.blocks.len().checked_sub(1)
            } else {
                (!self.order.blocks.is_empty()).then_some(0)
            }) else {
                break;
            };
            let offset = if max { self.order.blocks[block].len() - 1 } else { 0 };
            let item = self.order.remove_at(block, offset);
            let hash = hash_bytes(&item.member);
            let slot = self.scores.find(hash, &item.member).expect("the map holds every member of the order");
            self.scores.remove(hash, slot);
            self.bytes -= member_cost(&item.member);
            popped.push((item.member.to_vec(), item.score));
        }
        self.scores.compact_if_sparse();
        self.check();
        popped
    }

    /// Removes the members at ranks `start..end`; them, in order.
    pub fn remove_ranks(&mut self, start: usize, end: usize) -> Vec<(Vec<u8>, f64)> {
        let members: Vec<(Vec<u8>, f64)> = self.range(start, end).map(|(m, s)| (m.to_vec(), s)).collect();
        for (member, _) in &members {
            self.remove(member);
        }
        members
    }

    /// The rank of `member` from the lowest score.
    pub fn rank(&self, member: &[u8]) -> Option<usize> {
        let score = self.score(member)?;
        Some(self.order.rank_where(|item| order(score, member, item) == Ordering::Greater))
    }

    /// Members and scores at ranks `start..end` (clamped), lowest first.
    pub fn range(&self, start: usize, end: usize) -> impl Iterator<Item = (&[u8], f64)> {
        let end = end.min(self.len());
        self.order.range(start, end).map(|item| (&*item.member, item.score))
    }

    /// Members and scores at ranks `start..end` (clamped), highest first.
    pub fn range_rev(&self, start: usize, end: usize) -> impl Iterator<Item = (&[u8], f64)> {
        let end = end.min(self.len());
        self.order.range_rev(start, end).map(|item| (&*item.member, item.score))
    }

    /// Every member in order.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], f64)> {
        self.range(0, self.len())
    }

    /// The ranks `start..end` of the members whose scores lie between `min` and `max`.
    pub fn score_span(&self, min: ScoreBound, max: ScoreBound) -> (usize, usize) {
        let start = self.order.rank_where(|item| match min.exclusive {
            true => item.score <= min.value,
            false => item.score < min.value,
        });
        let end = self.order.rank_where(|item| match max.exclusive {
            true => item.score < max.value,
            false => item.score <= max.value,
        });
        (start, end.max(start))
    }

    /// The ranks `start..end` of the members between `min` and `max` by their bytes (as
    /// Redis, this assumes every score is equal; otherwise the answer is some run of
    /// members that Redis' walk would also give).
    pub fn lex_span(&self, min: &LexBound, max: &LexBound) -> (usize, usize) {
        let start = match min {
            LexBound::Min => 0,
            LexBound::Max => self.len(),
            LexBound::Inclusive(bytes) => self.order.rank_where(|item| *item.member < **bytes),
            LexBound::Exclusive(bytes) => self.order.rank_where(|item| *item.member <= **bytes),
        };
        let end = match max {
            LexBound::Min => 0,
            LexBound::Max => self.len(),
            LexBound::Inclusive(bytes) => self.order.rank_where(|item| *item.member <= **bytes),
            LexBound::Exclusive(bytes) => self.order.rank_where(|item| *item.member < **bytes),
        };
        (start, end.max(start))
    }

    /// A uniformly random member with its score (see [`SlabMap::random`]).
    pub fn random(&self, pick: impl FnMut(usize) -> usize) -> Option<(&[u8], f64)> {
        self.scores.random(pick).map(|slot| (&*slot.key, slot.value))
    }

    /// Every member with its score, in storage order (cheaper than `iter`).
    pub fn members(&self) -> impl Iterator<Item = (&[u8], f64)> {
        self.scores.iter().map(|(_, slot)| (&*slot.key, slot.value))
    }

    /// One ZSCAN step (see [`SlabMap::scan`]).
    pub fn scan(
        &self,
        cursor: SlabCursor,
        budget: &mut ScanBudget,
        mut visit: impl FnMut(&[u8], f64),
    ) -> Option<SlabCursor> {
        self.scores.scan(cursor, budget, |slot| visit(&slot.key, slot.value))
    }

    /// Whether every member is short enough for Redis' listpack encoding at its default
    /// thresholds (OBJECT ENCODING's answer).
    pub fn is_small(&self) -> bool {
        self.len() <= 128 && self.members().all(|(member, _)| member.len() <= 64)
    }

    fn check(&self) {
        if cfg!(debug_assertions) && self.len() <= 4 * BLOCK_MAX {
            self.order.check();
            assert_eq!(self.order.len(), self.scores.len());
            for (member, score) in self.iter() {
                assert_eq!(self.score(member), Some(score), "the map and the order agree");
            }
        }
    }
}

impl<'a> FromIterator<(&'a [u8], f64)> for SortedSet {
    fn from_iter<I: IntoIterator<Item = (&'a [u8], f64)>>(members: I) -> Self {
        let mut set = SortedSet::default();
        for (member, score) in members {
            set.insert(member, score);
        }
        set
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    fn model_order(model: &BTreeMap<Vec<u8>, i32>) -> Vec<(Vec<u8>, f64)> {
        let mut all: Vec<(Vec<u8>, f64)> = model.iter().map(|(m, &s)| (m.clone(), f64::from(s))).collect();
        all.sort_by(|a, b| a.1.partial_cmp(&b.1).unwrap().then_with(|| a.0.cmp(&b.0)));
        all
    }

    fn listed<'a>(items: impl Iterator<Item = (&'a [u8], f64)>) -> Vec<(Vec<u8>, f64)> {
        items.map(|(m, s)| (m.to_vec(), s)).collect()
    }

    #[test]
    fn ranks_and_ranges_follow_score_then_member() {
        let mut set = SortedSet::default();
        assert_eq!(set.insert(b"b", 1.0), None);
        assert_eq!(set.insert(b"a", 1.0), None);
        assert_eq!(set.insert(b"c", 0.5), None);
        assert_eq!(set.insert(b"c", 2.0), Some(0.5));
        assert_eq!(listed(set.iter()), vec![(b"a".to_vec(), 1.0), (b"b".to_vec(), 1.0), (b"c".to_vec(), 2.0)]);
        assert_eq!((set.rank(b"a"), set.rank(b"c"), set.rank(b"x")), (Some(0), Some(2), None));
        assert_eq!(listed(set.range_rev(0, 2)), vec![(b"b".to_vec(), 1.0), (b"a".to_vec(), 1.0)]);
        let at = |value, exclusive| ScoreBound { value, exclusive };
        assert_eq!(set.score_span(at(1.0, false), at(1.0, false)), (0, 2));
        assert_eq!(set.score_span(at(1.0, true), at(f64::INFINITY, false)), (2, 3));
        assert_eq!(set.score_span(at(3.0, false), at(1.0, false)), (3, 3), "an inverted range is empty");
        let lex = |b: &[u8]| LexBound::Inclusive(b.to_vec());
        assert_eq!(set.lex_span(&lex(b"b"), &LexBound::Max), (1, 3));
        assert_eq!(set.lex_span(&LexBound::Exclusive(b"a".to_vec()), &LexBound::Exclusive(b"c".to_vec())), (1, 2));
        assert_eq!(set.remove(b"a"), Some(1.0));
        assert_eq!(set.remove(b"a"), None);
        assert_eq!(set.len(), 2);
    }

    #[test]
    fn appending_in_order_keeps_blocks_full() {
        let mut set = SortedSet::default();
        let n = BLOCK_MAX * 10;
        for i in 0..n {
            set.insert(format!("m{i:06}").as_bytes(), i as f64);
        }
        assert_eq!(set.order.blocks.len(), 10, "each split left a full block behind");
        assert_eq!(set.rank(b"m001000"), Some(1000));
        assert_eq!(set.range(1000, 1001).next().map(|(m, _)| m.to_vec()), Some(b"m001000".to_vec()));
        set.order.check();
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]
        #[test]
        fn the_set_matches_a_sorted_model(ops in prop::collection::vec((0u16..600, -20i32..20, 0u8..4), 1..1500)) {
            let mut set = SortedSet::default();
            let mut model = BTreeMap::new();
            for (member, score, op) in ops {
                let member = format!("{member}").into_bytes();
                if op == 0 {
                    prop_assert_eq!(set.remove(&member), model.remove(&member).map(f64::from));
                } else if op == 1 && score % 5 == 0 {
                    // Pops from either end, two at a time.
                    let max = score > 0;
                    let mut ordered = model_order(&model);
                    if max {
                        ordered.reverse();
                    }
                    ordered.truncate(2);
                    for (member, _) in &ordered {
                        model.remove(member);
                    }
                    prop_assert_eq!(set.pop(max, 2), ordered);
                } else {
                    prop_assert_eq!(set.insert(&member, f64::from(score)), model.insert(member, score).map(f64::from));
                }
            }
            set.order.check();
            let expected = model_order(&model);
            prop_assert_eq!(listed(set.iter()), expected.clone());
            let n = expected.len();
            for (rank, (member, _)) in expected.iter().enumerate().step_by(7) {
                prop_assert_eq!(set.rank(member), Some(rank));
                prop_assert_eq!(listed(set.range(rank, rank + 5)), expected[rank..(rank + 5).min(n)].to_vec());
                let mut back: Vec<_> = expected[rank..(rank + 5).min(n)].to_vec();
                back.reverse();
                prop_assert_eq!(listed(set.range_rev(rank, rank + 5)), back);
            }
            for bound in -21..21 {
                let (start, end) = set.score_span(
                    ScoreBound { value: f64::from(bound), exclusive: true },
                    ScoreBound { value: f64::from(bound + 3), exclusive: false },
                );
                let wanted: Vec<_> = expected.iter().filter(|(_, s)| *s > f64::from(bound) && *s <= f64::from(bound + 3)).cloned().collect();
                prop_assert_eq!(listed(set.range(start, end)), wanted);
            }
        }
    }
}
