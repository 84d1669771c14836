//! The ordered map behind tree indexes: keys in order, each with its postings, plus the
//! number of rows between any two keys in logarithmic time.
//!
//! Owns: `OrderedMap`, a two-level sorted structure. Keys live in blocks of at most
//! `BLOCK_KEYS_MAX` sorted keys; blocks are in key order; a Fenwick tree over the blocks'
//! row counts and each block's running counts answer "how many rows between these
//! bounds" with two subtractions and one tree query, so an exact total over a range never
//! walks the range. Each key's order prefix sits beside it, so a search compares 32-byte
//! numbers and touches a key itself only on a tie. Positions (`Position`) let a caller
//! seek on from where it is (`seek_forward`, galloping), as skip scans do.
//! Never: hold an empty block or an empty posting list; let a block's `rows`, running
//! counts or order prefixes disagree with its postings and keys (checked in debug builds).
//!
//! ```text
//!   blocks:  [k0 k1 .. k255] [k256 .. ] [ .. ]       binary search on each block's last key
//!   rows:         1200          800       950         Fenwick tree over these
//! ```

use super::Key;
use super::postings::Postings;
use crate::value::{Scalar, ScalarRef};
use std::ops::Bound;

/// Most keys in one block: small enough that inserting into a block (a memmove) is cheap,
/// large enough that the block list stays short.
pub const BLOCK_KEYS_MAX: usize = 256;

/// Bytes a block keeps per key beside the key and its postings: the order prefix and the
/// running row count.
pub const ENTRY_EXTRA_BYTES: usize = std::mem::size_of::<Prefix>() + std::mem::size_of::<u32>();

#[derive(Debug, Default)]
struct Block {
    keys: Vec<Key>,
    /// `order_prefix` of each key, beside the keys: searches compare these first, in one
    /// dense array, and follow a key's pointers (a composite's parts, a string's bytes)
    /// only on a tie.
    prefixes: Vec<Prefix>,
    postings: Vec<Postings>,
    /// Rows under `keys[..=i]`, so the rows of any run of keys in the block are one
    /// subtraction (a range count reads no posting list).
    upto: Vec<u32>,
    rows: usize,
}

impl Block {
    /// Rows under `keys[from..to]`.
    fn rows_in(&self, from: usize, to: usize) -> usize {
        let before = |i: usize| if i == 0 { 0 } else { self.upto[i - 1] as usize };
        before(to) - before(from)
    }

    /// Adds `delta` (+1 or -1) rows under key `at` and every count after it.
    fn shift_upto(&mut self, at: usize, delta: i32) {
        for count in &mut self.upto[at..] {
            *count = count.wrapping_add_signed(delta);
        }
    }

    /// The position of the first key not before `probe` (keys are sorted).
    fn lower(&self, probe: &Probe<'_>) -> usize {
        self.lower_in(0, self.keys.len(), probe)
    }

    /// `lower` galloping from `from` (1, 2, 4, ... keys on): a skip scan's next position
    /// is often a few keys on (the end of a short inner range), found in a few
    /// comparisons on nearby cache lines instead of a search of the whole block.
    fn lower_near(&self, from: usize, probe: &Probe<'_>) -> usize {
        let (mut low, mut step) = (from, 1);
        while low + step < self.keys.len() && probe.after(self.prefixes[low + step - 1], &self.keys[low + step - 1]) {
            low += step;
            step *= 2;
        }
        self.lower_in(low, (low + step).min(self.keys.len()), probe)
    }

    fn lower_in(&self, from: usize, to: usize, probe: &Probe<'_>) -> usize {
        let (mut low, mut high) = (from, to);
        while low < high {
            let mid = low + (high - low) / 2;
            if probe.after(self.prefixes[mid], &self.keys[mid]) {
                low = mid + 1;
            } else {
                high = mid;
            }
        }
        low
    }

    fn last_before(&self, probe: &Probe<'_>) -> bool {
        let last = self.keys.len() - 1;
        probe.after(self.prefixes[last], &self.keys[last])
    }
}

/// What a search looks for.
#[derive(Debug, Clone, Copy)]
enum Target<'a> {
    /// A whole key.
    Key(&'a Key),
    /// The keys of a composite index that start with these parts: the target sits just
    /// before the first of them, or just after the last when `past`. Built from borrowed
    /// parts, so a skip scan seeks without cloning keys (no allocation, and no reference
    /// count of a shared string touched by every thread that reads it).
    Parts { parts: &'a [&'a Scalar], past: bool },
}

/// A search target with its order prefix: which keys come before it.
#[derive(Debug, Clone, Copy)]
pub struct Probe<'a> {
    target: Target<'a>,
    prefix: Prefix,
    /// Keys equal to the target come before it too (a search for the first key `> key`).
    strict: bool,
}

impl<'a> Probe<'a> {
    /// The first key `>= key`, or `> key` when `strict`.
    pub fn key(key: &'a Key, strict: bool) -> Probe<'a> {
        Probe { target: Target::Key(key), prefix: order_prefix(key), strict }
    }

    /// The first key of a composite index that starts with `parts` or comes after them,
    /// or (`past`) the first key after every key that starts with them. (Skip scans
    /// derive theirs from encodings they keep: `Probe::encoded`.)
    #[cfg(test)]
    pub fn parts(parts: &'a [&'a Scalar], past: bool) -> Probe<'a> {
        let mut encoded = PartsEncoder::composite();
        parts.iter().for_each(|part| encoded.push(part));
        Probe::encoded(parts, past, encoded)
    }

    /// `Probe::parts` with `parts` already encoded (`encoded` holds exactly them).
    pub fn encoded(parts: &'a [&'a Scalar], past: bool, mut encoded: PartsEncoder) -> Probe<'a> {
        // Past the keys with these parts: the order prefix continues with bytes above
        // any tag (0xff), so every key starting with them has a prefix below or tied.
        if past {
            encoded.bytes[encoded.at..].fill(0xff);
        }
        debug_assert!({
            let mut fresh = PartsEncoder::composite();
            parts.iter().for_each(|part| fresh.push(part));
            fresh.bytes[..fresh.at] == encoded.bytes[..encoded.at] && fresh.at == encoded.at
        });
        Probe { target: Target::Parts { parts, past }, prefix: prefix_of(encoded.bytes), strict: false }
    }

    /// Whether a key (with its prefix) comes before the target: settled by the prefixes
    /// unless they tie.
    #[inline]
    fn after(&self, prefix: Prefix, key: &Key) -> bool {
        match prefix.cmp(&self.prefix) {
            std::cmp::Ordering::Less => true,
            std::cmp::Ordering::Greater => false,
            std::cmp::Ordering::Equal => match self.target {
                Target::Key(target) => {
                    let order = if self.prefix.is_whole() { std::cmp::Ordering::Equal } else { key.cmp(target) };
                    if self.strict { order.is_le() } else { order.is_lt() }
                }
                Target::Parts { parts, past } => before_parts(key, parts, past),
            },
        }
    }
}

/// Whether a composite key comes before the target `Target::Parts { parts, past }` in
/// `Key`'s order (its parts compared in turn; a key that is a prefix of another first).
fn before_parts(key: &Key, parts: &[&Scalar], past: bool) -> bool {
    debug_assert!(matches!(key, Key::Many(_)), "parts probes search composite indexes");
    let have = key.parts();
    for (at, want) in parts.iter().enumerate() {
        match have.get(at).map(|part| part.cmp(want)) {
            // Shorter, and equal so far: a prefix of the target's keys comes first.
            None | Some(std::cmp::Ordering::Less) => return true,
            Some(std::cmp::Ordering::Greater) => return false,
            Some(std::cmp::Ordering::Equal) => {}
        }
    }
    past
}

/// The first 32 bytes of an order-preserving byte encoding of a key, as two big-endian
/// numbers compared in turn: `prefix(a) < prefix(b)` implies `a < b`, and `a <= b`
/// implies `prefix(a) <= prefix(b)` (ties say nothing). 32 bytes rather than 16 because
/// composite keys of names spend the first 16 on the first name: keys that share it would
/// tie, and every tie follows the key's pointers to its parts and their bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Prefix(u128, u128);

impl Prefix {
    /// Whether the prefix holds its key's whole encoding, so keys with equal prefixes are
    /// equal without comparing them: the parts end before the last byte, where the 0 fill
    /// begins (0 is no part's tag).
    pub fn is_whole(self) -> bool {
        let bytes = self.to_bytes();
        let mut at = 1;
        while at < bytes.len() {
            at += match bytes[at] {
                0 => return true,
                1 => 1,
                2 => 2,
                3 | 4 => 9,
                5 => {
                    // A string: its bytes up to 00 00 (00 FF is an escaped 0).
                    let mut i = at + 1;
                    loop {
                        match (bytes.get(i), bytes.get(i + 1)) {
                            (Some(0), Some(0)) => break i + 2 - at,
                            (Some(0), Some(_)) => i += 2,
                            (Some(_), _) => i += 1,
                            (None, _) => return false,
                        }
                    }
                }
                _ => return false,
            };
        }
        false
    }

    /// How two keys compare, given their prefixes: by the prefixes, and only on a tie
    /// that the prefix cannot settle by the keys.
    #[inline]
    pub fn then_keys(self, other: Prefix, key: &Key, other_key: &Key) -> std::cmp::Ordering {
        self.cmp(&other).then_with(|| if self.is_whole() { std::cmp::Ordering::Equal } else { key.cmp(other_key) })
    }

    fn to_bytes(self) -> [u8; 32] {
        let mut bytes = [0; 32];
        bytes[..16].copy_from_slice(&self.0.to_be_bytes());
        bytes[16..].copy_from_slice(&self.1.to_be_bytes());
        bytes
    }
}

/// `Prefix` of a key.
pub(crate) fn order_prefix(key: &Key) -> Prefix {
    order_prefix_exact(key).0
}

/// `order_prefix`, and whether it holds the whole encoding of `key` with room to spare
/// (`Prefix::is_whole`): then an equal prefix means an equal key.
pub(crate) fn order_prefix_exact(key: &Key) -> (Prefix, bool) {
    order_prefix_of_parts(matches!(key, Key::Many(_)), key.parts().iter().map(Scalar::as_ref))
}

/// `order_prefix_exact` of the key whose parts (`None` for null) are `parts`, borrowed
/// from columns: a `Key::Many` when `many`, else a `Key::One` of the single part.
pub(crate) fn order_prefix_of_parts<'a>(
    many: bool,
    parts: impl IntoIterator<Item = Option<ScalarRef<'a>>>,
) -> (Prefix, bool) {
    let out = encoded_parts::<32>(many, parts);
    (prefix_of(out.bytes), out.whole())
}

fn encoded_parts<'a, const N: usize>(many: bool, parts: impl IntoIterator<Item = Option<ScalarRef<'a>>>) -> Encoder<N> {
    let mut out = Encoder::new(if many { 2 } else { 1 });
    parts.into_iter().for_each(|part| out.push_ref(part));
    out
}

fn prefix_of(bytes: [u8; 32]) -> Prefix {
    let (high, low) = bytes.split_at(16);
    Prefix(
        u128::from_be_bytes(high.try_into().expect("16 bytes")),
        u128::from_be_bytes(low.try_into().expect("16 bytes")),
    )
}

/// The first `N` bytes of an order-preserving encoding of a key, written part by part.
/// The encoding follows `Key`'s derived order: the variant (1 for `One`, 2 for `Many`),
/// then each part as its `Scalar` variant's tag and an order-preserving form of its value
/// (integers with the sign bit flipped, doubles in `total_cmp` order, strings with 0x00
/// escaped as 0x00 0xFF and ended by 0x00 0x00, so a string's encoding is never a prefix
/// of a longer string's). Bytes past the end of the encoding are 0. Stops quietly once
/// full (the rest cannot change the prefix).
#[derive(Debug, Clone, Copy)]
pub struct Encoder<const N: usize> {
    bytes: [u8; N],
    at: usize,
    /// Some part did not fit whole.
    cut: bool,
}

/// A composite key's order prefix being written part by part: a skip scan encodes its
/// fixed parts and each leading value once, and derives from that the probes of the
/// value's inner range (`Probe::encoded`).
pub type PartsEncoder = Encoder<32>;

impl<const N: usize> Encoder<N> {
    fn new(tag: u8) -> Self {
        let mut bytes = [0; N];
        bytes[0] = tag;
        Encoder { bytes, at: 1, cut: false }
    }

    /// Appends one part.
    #[inline]
    pub fn push(&mut self, part: &Scalar) {
        self.push_ref(part.as_ref());
    }

    /// Appends one part borrowed from a column (`None` for null).
    #[inline]
    fn push_ref(&mut self, part: Option<ScalarRef<'_>>) {
        if self.at == N {
            self.cut = true;
            return;
        }
        match part {
            None => self.put(&[1]),
            Some(ScalarRef::Bool(b)) => self.put(&[2, u8::from(b)]),
            Some(ScalarRef::Int(i)) => {
                self.put(&[3]);
                self.put(&((i as u64) ^ (1 << 63)).to_be_bytes());
            }
            Some(ScalarRef::Double(d)) => {
                let bits = d.to_bits();
                let ordered = if bits >> 63 == 1 { !bits } else { bits ^ (1 << 63) };
                self.put(&[4]);
                self.put(&ordered.to_be_bytes());
            }
            Some(ScalarRef::Str(text)) => {
                self.put(&[5]);
                self.put_str(text);
            }
        }
    }

    /// Appends what fits.
    #[inline]
    fn put(&mut self, more: &[u8]) {
        let n = more.len().min(N - self.at);
        self.bytes[self.at..self.at + n].copy_from_slice(&more[..n]);
        self.at += n;
        self.cut |= n < more.len();
    }

    /// Whether the bytes hold every part pushed, with room to spare (a 0 after them).
    fn whole(&self) -> bool {
        !self.cut && self.at < N
    }

    /// A string escaped and ended: one copy when the part that fits holds no 0 byte
    /// (nearly always), byte by byte otherwise.
    fn put_str(&mut self, text: &[u8]) {
        let head = &text[..text.len().min(N - self.at)];
        if !head.contains(&0) {
            self.put(head);
        } else {
            for &byte in head {
                if byte == 0 {
                    self.put(&[0, 0xff]);
                } else {
                    self.put(&[byte]);
                }
            }
        }
        if head.len() == text.len() {
            self.put(&[0, 0]);
        } else {
            self.cut = true;
        }
    }
}

impl PartsEncoder {
    /// An empty composite key.
    pub fn composite() -> PartsEncoder {
        Encoder::new(2)
    }

    /// These parts and the next part of the key whose order prefix is `prefix` (a key
    /// that starts with these parts), read from the prefix's bytes, so the key itself is
    /// never touched; `None` when that part's encoding does not end within the prefix.
    pub fn with_next_of(&self, prefix: Prefix) -> Option<PartsEncoder> {
        let bytes = prefix.to_bytes();
        debug_assert_eq!(bytes[..self.at], self.bytes[..self.at], "the key starts with these parts");
        let tag = *bytes.get(self.at)?;
        let end = match tag {
            1 => self.at + 1,
            2 => self.at + 2,
            3 | 4 => self.at + 9,
            5 => {
                // A string ends at the first 00 00; 00 FF is an escaped 0 byte.
                let mut i = self.at + 1;
                loop {
                    match (bytes.get(i)?, bytes.get(i + 1)?) {
                        (0, 0) => break i + 2,
                        (0, _) => i += 2,
                        _ => i += 1,
                    }
                }
            }
            _ => return None,
        };
        (end <= bytes.len()).then(|| {
            let mut next = *self;
            next.bytes[self.at..end].copy_from_slice(&bytes[self.at..end]);
            next.at = end;
            next
        })
    }

    /// Whether the key whose order prefix is `prefix` starts with exactly these parts
    /// (`self` holding whole parts only).
    pub fn starts(&self, prefix: Prefix) -> bool {
        prefix.to_bytes()[..self.at] == self.bytes[..self.at]
    }
}

/// A position: block index and index within it. `(blocks.len(), 0)` is the end.
pub type Position = (usize, usize);

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
        let prefix = order_prefix(&key);
        self.push_prefixed(key, prefix, postings);
    }

    /// Adds `row` under the key the caller knows to be the last one added (`same`), or
    /// else under `key()` (whose `order_prefix` is `prefix`), which is above every key
    /// added so far; rows of one key come in ascending order. Returns the key when new.
    pub fn push_row(&mut self, key: impl FnOnce() -> Key, row: u32, prefix: Prefix, same: bool) -> Option<&Key> {
        if same {
            debug_assert!(self.open.keys.last() == Some(&key()), "an equal key follows its twin");
            self.open.postings.last_mut().expect("one posting list per key").insert(row);
            self.open.rows += 1;
            *self.open.upto.last_mut().expect("one count per key") += 1;
            return None;
        }
        let key = key();
        debug_assert_eq!(prefix, order_prefix(&key));
        self.push_prefixed(key, prefix, Postings::new(row));
        self.open.keys.last()
    }

    /// The last key added.
    pub fn last_key(&self) -> Option<&Key> {
        self.open.keys.last()
    }

    /// `push` of a key whose order prefix is known.
    fn push_prefixed(&mut self, key: Key, prefix: Prefix, postings: Postings) {
        debug_assert!(self.open.keys.last().is_none_or(|last| *last < key), "keys ascend");
        if self.open.keys.len() == Self::FILL {
            self.seal();
        }
        self.open.rows += postings.len();
        let before = self.open.upto.last().copied().unwrap_or(0);
        self.open.upto.push(before + u32::try_from(postings.len()).expect("under 2^32 rows"));
        self.open.prefixes.push(prefix);
        self.open.keys.push(key);
        self.open.postings.push(postings);
        self.keys += 1;
    }

    /// Moves the open block, if it holds any key, to the finished ones.
    fn seal(&mut self) {
        if !self.open.keys.is_empty() {
            self.blocks.push(std::mem::take(&mut self.open));
        }
    }
}

impl OrderedMap {
    /// An empty map.
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

    /// Adds `(prefix, key, row)` entries (`prefix` the key's `order_prefix`) given in
    /// ascending order of key, then row (rows not under their key yet): one pass that
    /// lays out the old entries and the new in key order, instead of a search and a
    /// shift in a block per entry. Keys are compared by their prefixes, in full only on a
    /// tie. Calls `new_key` with each key that was not in the map.
    pub fn merge_sorted(
        &mut self,
        entries: impl IntoIterator<Item = (Prefix, Key, u32)>,
        mut new_key: impl FnMut(&Key),
    ) {
        let mut old = std::mem::take(&mut self.blocks)
            .into_iter()
            .flat_map(|block| block.prefixes.into_iter().zip(block.keys).zip(block.postings));
        let mut layout = SortedLayout::default();
        let mut next_old = old.next();
        for (prefix, key, row) in entries {
            debug_assert_eq!(prefix, order_prefix(&key));
            let order = |(old_prefix, old_key): &(Prefix, Key)| old_prefix.then_keys(prefix, old_key, &key);
            // Old keys below this one go first.
            while let Some((old_key, postings)) = next_old.take_if(|(old_key, _)| order(old_key).is_lt()) {
                layout.push_prefixed(old_key.1, old_key.0, postings);
                next_old = old.next();
            }
            match &mut next_old {
                Some((old_key, postings)) if order(old_key).is_eq() => {
                    debug_assert!(!postings.contains(row), "a merged row is new under its key");
                    postings.insert(row);
                }
                _ => {
                    // The last key laid out is compared only when the prefixes tie.
                    let last = layout.open.prefixes.last().zip(layout.open.keys.last());
                    let same = last
                        .is_some_and(|(last_prefix, last_key)| last_prefix.then_keys(prefix, last_key, &key).is_eq());
                    if let Some(key) = layout.push_row(|| key, row, prefix, same) {
                        new_key(key);
                    }
                }
            }
        }
        next_old
            .into_iter()
            .chain(old)
            .for_each(|((prefix, key), postings)| layout.push_prefixed(key, prefix, postings));
        *self = OrderedMap::from_layouts(vec![layout]);
    }

    /// Number of distinct keys.
    pub fn len(&self) -> usize {
        self.keys
    }

    /// Whether the map has no key.
    pub fn is_empty(&self) -> bool {
        self.keys == 0
    }

    fn end(&self) -> Position {
        (self.blocks.len(), 0)
    }

    /// The first position whose key is `>= key` (or `> key` when `strict`).
    fn seek(&self, key: &Key, strict: bool) -> Position {
        let probe = Probe::key(key, strict);
        let block = self.blocks.partition_point(|b| b.last_before(&probe));
        match self.blocks.get(block) {
            None => self.end(),
            Some(b) => (block, b.lower(&probe)),
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

    /// The rows under `key`, if it is in the map.
    pub fn get(&self, key: &Key) -> Option<&Postings> {
        let (block, at) = self.seek(key, false);
        let b = self.blocks.get(block)?;
        (b.keys.get(at) == Some(key)).then(|| &b.postings[at])
    }

    /// Adds `row` under `key`; returns true when the key is new.
    pub fn insert(&mut self, key: Key, row: u32) -> bool {
        if self.blocks.is_empty() {
            let prefixes = vec![order_prefix(&key)];
            let postings = vec![Postings::new(row)];
            self.blocks.push(Block { keys: vec![key], prefixes, postings, upto: vec![1], rows: 1 });
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
            b.prefixes.insert(at, order_prefix(&key));
            b.keys.insert(at, key);
            b.postings.insert(at, Postings::new(row));
            let before = if at == 0 { 0 } else { b.upto[at - 1] };
            b.upto.insert(at, before);
            self.keys += 1;
        } else {
            b.postings[at].insert(row);
        }
        b.shift_upto(at, 1);
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
        b.shift_upto(at, -1);
        if emptied {
            b.keys.remove(at);
            b.prefixes.remove(at);
            b.postings.remove(at);
            b.upto.remove(at);
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
        let prefixes = b.prefixes.split_off(half);
        let postings = b.postings.split_off(half);
        let mut upto = b.upto.split_off(half);
        let left = b.upto[half - 1];
        upto.iter_mut().for_each(|count| *count -= left);
        let rows: usize = postings.iter().map(Postings::len).sum();
        b.rows -= rows;
        self.blocks.insert(block + 1, Block { keys, prefixes, postings, upto, rows });
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
        debug_assert!(self.blocks.iter().all(|b| b.keys.iter().map(order_prefix).eq(b.prefixes.iter().copied())));
        debug_assert!(self.blocks.iter().all(|b| {
            b.postings
                .iter()
                .scan(0, |sum, p| {
                    *sum += p.len() as u32;
                    Some(*sum)
                })
                .eq(b.upto.iter().copied())
        }));
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
        self.rows_between(self.start_of(lower), self.end_of(upper))
    }

    /// Rows under the keys from `start` up to (not including) `end`: two partial block
    /// sums and one Fenwick query.
    pub fn rows_between(&self, start: Position, end: Position) -> usize {
        if start >= end {
            return 0;
        }
        let partial = |block: usize, from: usize, to: usize| self.blocks[block].rows_in(from, to);
        if start.0 == end.0 {
            return partial(start.0, start.1, end.1);
        }
        let head = partial(start.0, start.1, self.blocks[start.0].keys.len());
        let middle = self.rows_before(end.0) - self.rows_before(start.0 + 1);
        let tail = if end.0 < self.blocks.len() { partial(end.0, 0, end.1) } else { 0 };
        head + middle + tail
    }

    /// The positions of the first key inside the bounds and of the first one past them.
    pub fn span(&self, lower: Bound<&Key>, upper: Bound<&Key>) -> (Position, Position) {
        (self.start_of(lower), self.end_of(upper))
    }

    /// The order prefix of the key at a position before the end.
    pub fn prefix_at(&self, at: Position) -> Option<Prefix> {
        self.blocks.get(at.0).and_then(|block| block.prefixes.get(at.1)).copied()
    }

    /// The key at a position before the end.
    pub fn key_at(&self, at: Position) -> Option<&Key> {
        self.blocks.get(at.0).and_then(|block| block.keys.get(at.1))
    }

    /// The first position in `from..to` whose key is not before `probe`, or `to`. It
    /// gallops forward from `from` (1, 2, 4, ... blocks), so a key a few blocks
    /// on costs a few comparisons in blocks likely in cache, not a search from the top:
    /// what a skip scan's many short hops need.
    pub fn seek_forward(&self, from: Position, to: Position, probe: &Probe<'_>) -> Position {
        if from >= to {
            return to;
        }
        // Blocks that may hold the answer: `from.0 ..= to.0` (the end block only if it exists).
        let limit = (to.0 + 1).min(self.blocks.len());
        let mut block = from.0;
        if self.blocks[block].last_before(probe) {
            // Gallop: find a block whose last key is not before `key`, then search the
            // stretch since the previous probe.
            let mut passed = block;
            let mut step = 1;
            let found = loop {
                let next = block + step;
                if next >= limit {
                    break limit;
                }
                if !self.blocks[next].last_before(probe) {
                    break next;
                }
                passed = next;
                step *= 2;
            };
            block = passed + 1 + self.blocks[passed + 1..found].partition_point(|b| b.last_before(probe));
            if block >= limit {
                return to;
            }
        }
        let at = if block == from.0 {
            (block, self.blocks[block].lower_near(from.1, probe))
        } else {
            (block, self.blocks[block].lower(probe))
        };
        // Past the block's keys only when `key` is above them all, which the gallop ruled out.
        debug_assert!(at.1 < self.blocks[block].keys.len());
        at.min(to)
    }

    /// `seek_forward` for a lower bound: the first position in `from..to` inside it.
    pub fn seek_lower(&self, from: Position, to: Position, bound: Bound<&Key>) -> Position {
        match bound {
            Bound::Unbounded => from,
            Bound::Included(key) => self.seek_forward(from, to, &Probe::key(key, false)),
            Bound::Excluded(key) => self.seek_forward(from, to, &Probe::key(key, true)),
        }
    }

    /// `seek_forward` for an upper bound: the first position in `from..to` past it.
    pub fn seek_upper(&self, from: Position, to: Position, bound: Bound<&Key>) -> Position {
        match bound {
            Bound::Unbounded => to,
            Bound::Included(key) => self.seek_forward(from, to, &Probe::key(key, true)),
            Bound::Excluded(key) => self.seek_forward(from, to, &Probe::key(key, false)),
        }
    }

    /// Calls `f` on each entry between the bounds, in key order (descending when
    /// `desc`), until it returns false. Returns true when the walk completed.
    pub fn walk(
        &self,
        lower: Bound<&Key>,
        upper: Bound<&Key>,
        desc: bool,
        f: impl FnMut(&Key, &Postings) -> bool,
    ) -> bool {
        let (start, end) = (self.start_of(lower), self.end_of(upper));
        self.walk_span(start, end, desc, f)
    }

    /// `walk` between two positions (`start` included, `end` not).
    pub fn walk_span(
        &self,
        start: Position,
        end: Position,
        desc: bool,
        mut f: impl FnMut(&Key, &Postings) -> bool,
    ) -> bool {
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

    /// The entry at a position before the end.
    pub fn entry_at(&self, at: Position) -> Option<(&Key, &Postings)> {
        let block = self.blocks.get(at.0)?;
        Some((block.keys.get(at.1)?, &block.postings[at.1]))
    }

    /// The position after `at` (a position before the end). Positions stay canonical:
    /// within a block, or the end.
    pub fn step_forward(&self, at: Position) -> Position {
        debug_assert!(at.1 < self.blocks[at.0].keys.len(), "a position before the end");
        if at.1 + 1 < self.blocks[at.0].keys.len() { (at.0, at.1 + 1) } else { (at.0 + 1, 0) }
    }

    /// The position before `at` (which must not be the first).
    pub fn step_back(&self, at: Position) -> Position {
        if at.1 > 0 {
            return (at.0, at.1 - 1);
        }
        debug_assert!(at.0 > 0, "a position after the first");
        (at.0 - 1, self.blocks[at.0 - 1].keys.len() - 1)
    }

    /// Every entry, for memory accounting.
    pub fn postings(&self) -> impl Iterator<Item = &Postings> {
        self.blocks.iter().flat_map(|b| b.postings.iter())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    fn scalar() -> impl Strategy<Value = Scalar> {
        prop_oneof![
            Just(Scalar::Null),
            any::<bool>().prop_map(Scalar::Bool),
            prop_oneof![any::<i64>(), -3i64..3].prop_map(Scalar::Int),
            prop_oneof![any::<f64>(), Just(0.0), Just(-0.0)].prop_map(|d| Scalar::Double(crate::value::OrdF64(d))),
            proptest::collection::vec(prop_oneof![Just(0u8), Just(0xff), Just(b'a'), Just(b'b'), any::<u8>()], 0..24)
                .prop_map(|bytes| Scalar::str(&bytes)),
        ]
    }

    /// How many of `parts` an encoder built from them holds (whole parts only).
    fn read_parts(parts: &[Scalar], encoded: &PartsEncoder) -> usize {
        let mut fresh = PartsEncoder::composite();
        parts
            .iter()
            // A part that adds nothing (the encoder is full) is not held.
            .take_while(|part| {
                let before = fresh.at;
                fresh.push(part);
                fresh.at > before && fresh.at <= encoded.at
            })
            .count()
    }

    fn any_key() -> impl Strategy<Value = Key> {
        prop_oneof![
            scalar().prop_map(Key::One),
            proptest::collection::vec(scalar(), 1..4).prop_map(|parts| Key::Many(parts.into_boxed_slice())),
        ]
    }

    proptest! {
        /// Order prefixes never contradict the key order: a smaller prefix means a smaller
        /// key, and a smaller key never has a bigger prefix.
        #[test]
        fn order_prefixes_follow_the_key_order(a in any_key(), b in any_key()) {
            let (pa, pb) = (order_prefix(&a), order_prefix(&b));
            if pa < pb {
                prop_assert!(a < b, "{:?} < {:?} by prefix only", a, b);
            }
            if a <= b {
                prop_assert!(pa <= pb, "{:?} <= {:?} but the prefixes say otherwise", a, b);
            }
            // A whole prefix settles equality, and short keys have one.
            if pa == pb && pa.is_whole() {
                prop_assert_eq!(&a, &b);
            }
            let short = a.parts().iter().all(|part| matches!(part, Scalar::Null | Scalar::Bool(_))) && a.parts().len() < 4;
            prop_assert!(!short || pa.is_whole(), "{:?} fits its prefix", a);
            prop_assert_eq!(pa.then_keys(pb, &a, &b), a.cmp(&b));
        }

        /// Keys that share their first 20 to 40 bytes (prefixes tie, whole or cut):
        /// comparing by prefix, then by key only where the prefix cannot settle it, is
        /// the keys' order.
        #[test]
        fn prefix_ties_are_settled_like_the_keys(
            common in proptest::collection::vec(prop_oneof![Just(0u8), Just(b'a'), any::<u8>()], 20..40),
            tails in proptest::collection::vec((proptest::collection::vec(prop_oneof![Just(0u8), Just(b'z')], 0..4), 0i64..3, any::<bool>()), 2..6),
        ) {
            let keys: Vec<Key> = tails.into_iter().map(|(tail, n, composite)| {
                let text = Scalar::str(&[common.as_slice(), tail.as_slice()].concat());
                if composite { Key::Many(vec![Scalar::Int(n), text].into_boxed_slice()) } else { Key::One(text) }
            }).collect();
            for a in &keys {
                for b in &keys {
                    prop_assert_eq!(order_prefix(a).then_keys(order_prefix(b), a, b), a.cmp(b), "{:?} vs {:?}", a, b);
                }
            }
        }

        /// Searches within a block land where a linear scan says, for every stretch of a
        /// block and targets before, between, on and after its keys.
        #[test]
        fn block_searches_agree_with_a_linear_scan(n in 1usize..=BLOCK_KEYS_MAX, from in 0usize..BLOCK_KEYS_MAX, len in 0usize..=BLOCK_KEYS_MAX, target in -2i64..520, strict in any::<bool>()) {
            let keys: Vec<Key> = (0..n as i64).map(|i| key(2 * i)).collect();
            let block = Block {
                prefixes: keys.iter().map(order_prefix).collect(),
                postings: (0..n as u32).map(Postings::new).collect(),
                upto: (1..=n as u32).collect(),
                rows: n,
                keys,
            };
            let from = from.min(n);
            let to = (from + len).min(n);
            let probe_key = key(target);
            let probe = Probe::key(&probe_key, strict);
            let before = |k: &&Key| if strict { **k <= probe_key } else { **k < probe_key };
            prop_assert_eq!(block.lower_in(from, to, &probe), from + block.keys[from..to].iter().filter(before).count());
            if from < n {
                prop_assert_eq!(block.lower_near(from, &probe), from + block.keys[from..].iter().filter(before).count());
            }
        }

        /// Seeks over string keys (where the prefixes decide most comparisons, and the
        /// full keys the ties) land where a sorted list says.
        #[test]
        fn seeks_over_string_keys_agree_with_a_sorted_list(
            keys in proptest::collection::btree_set(any_key(), 1..1500),
            targets in proptest::collection::vec((any_key(), any::<bool>()), 1..40),
        ) {
            let sorted: Vec<Key> = keys.into_iter().collect();
            let map = OrderedMap::from_sorted(sorted.iter().enumerate().map(|(i, k)| (k.clone(), Postings::new(i as u32))));
            for (target, strict) in targets {
                let want = sorted.partition_point(|k| if strict { *k <= target } else { *k < target });
                let (block, at) = map.seek(&target, strict);
                let got = map.blocks[..block].iter().map(|b| b.keys.len()).sum::<usize>() + at;
                prop_assert_eq!(got, want, "target {:?} strict {}", target, strict);
            }
        }

        /// Probes of borrowed parts (a skip scan's) land where a sorted list of composite
        /// keys says: before the first key starting with the parts, or after the last.
        #[test]
        fn parts_probes_agree_with_a_sorted_list(
            keys in proptest::collection::btree_set(proptest::collection::vec(scalar(), 1..4), 1..1500),
            targets in proptest::collection::vec((proptest::collection::vec(scalar(), 1..4), any::<bool>()), 1..40),
        ) {
            let sorted: Vec<Key> = keys.into_iter().map(|parts| Key::Many(parts.into_boxed_slice())).collect();
            let map = OrderedMap::from_sorted(sorted.iter().enumerate().map(|(i, k)| (k.clone(), Postings::new(i as u32))));
            for (target, past) in targets {
                let starts_with = |k: &Key| k.parts().len() >= target.len() && k.parts()[..target.len()] == target[..];
                let want = sorted.partition_point(|k| {
                    let head = &k.parts()[..k.parts().len().min(target.len())];
                    head < &target[..] || (past && starts_with(k))
                });
                let parts: Vec<&Scalar> = target.iter().collect();
                let at = map.seek_forward((0, 0), map.end(), &Probe::parts(&parts, past));
                let got = map.blocks[..at.0].iter().map(|b| b.keys.len()).sum::<usize>() + at.1;
                prop_assert_eq!(got, want, "target {:?} past {}", target, past);
            }
        }

        /// A part read back from a key's order prefix is the part's own encoding, or
        /// nothing when it does not end within the prefix; `starts` tells the keys that
        /// begin with the parts read so far from those that do not.
        #[test]
        fn parts_read_from_a_prefix_are_the_parts_encodings(
            parts in proptest::collection::vec(scalar(), 2..4),
            tail in proptest::collection::vec(scalar(), 1..3),
            share in 0usize..4,
        ) {
            // Another key sharing the first `share` parts (when there are that many).
            let other: Vec<Scalar> = parts[..share.min(parts.len())].iter().cloned().chain(tail).collect();
            let key = Key::Many(parts.clone().into_boxed_slice());
            let prefix = order_prefix(&key);
            let mut encoded = PartsEncoder::composite();
            for part in &parts {
                let Some(read) = encoded.with_next_of(prefix) else { break };
                encoded.push(part);
                prop_assert_eq!(read.bytes, encoded.bytes);
                prop_assert_eq!(read.at, encoded.at);
                prop_assert!(read.starts(prefix));
                let other_key = Key::Many(other.clone().into_boxed_slice());
                let held = read_parts(&parts, &read);
                let same_start = other.len() >= held && other[..held] == parts[..held];
                prop_assert_eq!(read.starts(order_prefix(&other_key)), same_start, "{:?} vs {:?}", parts, other);
            }
        }

        /// Galloping seeks from any position land where a search from the top lands
        /// (clamped to the end position given), and rows between positions are the range's.
        #[test]
        fn seeks_from_a_position_agree_with_seeks_from_the_top(
            keys in proptest::collection::btree_set(0i64..5000, 1..2000),
            probes in proptest::collection::vec((-5i64..5005, -5i64..5005, -5i64..5005, any::<bool>()), 1..40),
        ) {
            let map = OrderedMap::from_sorted(keys.iter().map(|&k| (key(k), Postings::new(k as u32))));
            for (from_key, to_key, target, strict) in probes {
                let from = map.seek(&key(from_key), false);
                let to = map.seek(&key(to_key), false);
                let top = map.seek(&key(target), strict);
                let want = if top < from { from } else { top.min(to) };
                let got = map.seek_forward(from, to, &Probe::key(&key(target), strict));
                prop_assert_eq!(got, if from >= to { to } else { want }, "from {:?} to {:?} target {} strict {}", from, to, target, strict);
                let rows = map.rows_between(from, to);
                prop_assert_eq!(rows, keys.range(from_key..).filter(|&&k| k < to_key).count().min(if from >= to { 0 } else { usize::MAX }));
            }
        }

        /// Merging sorted new (key, row) entries gives the map a BTreeMap of row sets has
        /// after the same inserts, and reports exactly the keys that were new.
        #[test]
        fn merging_sorted_entries_agrees_with_a_btree(
            old in proptest::collection::btree_set((0i64..3000, 0u32..3), 0..2000),
            new in proptest::collection::btree_set((0i64..3000, 3u32..6), 0..2000),
        ) {
            let mut map = OrderedMap::new();
            let mut model: BTreeMap<i64, std::collections::BTreeSet<u32>> = BTreeMap::new();
            for &(k, row) in &old {
                map.insert(key(k), row);
                model.entry(k).or_default().insert(row);
            }
            let mut reported = Vec::new();
            map.merge_sorted(new.iter().map(|&(k, row)| (order_prefix(&key(k)), key(k), row)), |k| reported.push(k.clone()));
            let mut expected_new = Vec::new();
            for &(k, row) in &new {
                if !model.contains_key(&k) && expected_new.last() != Some(&key(k)) {
                    expected_new.push(key(k));
                }
                model.entry(k).or_default().insert(row);
            }
            prop_assert_eq!(reported, expected_new);
            prop_assert_eq!(map.len(), model.len());
            let mut walked = Vec::new();
            map.walk(Bound::Unbounded, Bound::Unbounded, false, |k, postings| {
                let mut rows = Vec::new();
                postings.for_each(|row| { rows.push(row); true });
                walked.push((k.clone(), rows));
                true
            });
            let want: Vec<(Key, Vec<u32>)> = model.iter().map(|(k, rows)| (key(*k), rows.iter().copied().collect())).collect();
            prop_assert_eq!(walked, want);
            prop_assert_eq!(map.count_rows(Bound::Unbounded, Bound::Unbounded), old.len() + new.len());
        }

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
