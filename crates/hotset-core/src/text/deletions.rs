//! The vocabulary's deletion variants, for typo lookups without walking the trie
//! (the symmetric-delete method).
//!
//! Owns: a multimap from the hash of each *deletion variant* of each word (the word with
//! some of its characters deleted) to the word's term id, and the lookup that turns a
//! query's own variants into verified matches. Never: decide what counts as a match by the
//! table alone; every candidate is checked with the real edit distance (`distance`).
//!
//! Why it finds everything: two words within `k` edits (optimal string alignment:
//! insertions, deletions, substitutions, swaps of neighbours) become the same string once
//! at most `k` characters are deleted from each. A substitution or a swap costs one
//! deletion on each side, an insertion or deletion one on the side holding the extra
//! character. So every word within `k` edits of a query shares with it a variant of at most
//! `k` deletions each, and looking up the query's variants of up to `k` deletions finds it,
//! provided the table holds the word's variants of up to `k` deletions. The converse does
//! not hold (`abc` and `bca` share `bc` but are 2 edits apart) and hashes collide, so
//! the table only proposes.
//!
//! What it holds, and so which lookups it can answer (`covers`):
//!
//! ```text
//!   word length (chars)     variants stored               answers
//!   1 ..= WORD_CHARS_MAX    itself, every 1 deletion      max 0 when query <= WORD_CHARS_MAX,
//!                                                         max 1 when query + 1 <= WORD_CHARS_MAX
//!   LONG_CHARS ..=          and every 2 deletions but     max 2 when query >= LONG_CHARS
//!                           of the first letter
//!   > WORD_CHARS_MAX        nothing (rare, long tokens)   (its lookups go to the trie)
//! ```
//!
//! Why 2-deletion variants of long words suffice: of the edits between a word and a query,
//! substitutions and swaps cost a deletion on both sides, characters only the word has on
//! the word's side, characters only the query has on the query's. A word needing 2
//! deletions within 2 edits therefore has no character only the query has, so it is at
//! least as long as the query. From `LONG_CHARS` (8) letters on, where the automatic limit
//! turns to 2, every word that needs them has them; shorter words asked for with `~2`, and
//! anything beyond `WORD_CHARS_MAX`, take the trie walk instead.
//!
//! The table only grows: term ids are never reused, so a word once added stays.

use super::vocab::TermId;

/// Words of this many letters or more also store their 2-deletion variants, and queries
/// of this many letters or more can ask for 2 edits.
pub const LONG_CHARS: usize = 8;
/// Longer words store no variants (a word of `n` letters has `n (n - 1) / 2` of them).
pub const WORD_CHARS_MAX: usize = 20;
/// Most edits the table answers for.
pub const EDITS_MAX: u8 = 2;

/// Fewest recent entries that make a merge into the sorted ones (below, they stay in the
/// small hash table: a merge rewrites the sorted entries). Small in unit tests, so their
/// small vocabularies are merged many times over.
const RECENT_MIN: usize = if cfg!(test) { 64 } else { 4096 };

/// Variant hashes to term ids. An entry is one `u64`: the upper 32 bits of the variant's
/// hash (its tag) above the term id. Most entries sit in `sorted` (8 bytes each, plus a
/// directory of about 2 bytes an entry); entries added since the last merge sit in
/// `recent`, a hash table (about twice the bytes an entry), and are merged in once they are
/// an eighth of the sorted ones, so a merge's linear cost is spread over the inserts that
/// led to it, and at the end of a bulk load (`settle`).
#[derive(Debug, Default)]
pub struct Deletions {
    /// Merged entries in ascending order (so by tag).
    sorted: Vec<u64>,
    /// `directory[b]`: the first entry of `sorted` whose tag's top `bits` bits are `b` or
    /// more (`2^bits + 1` of them); empty while `sorted` is.
    directory: Vec<u32>,
    bits: u32,
    recent: hashbrown::HashTable<u64>,
    hasher: ahash::RandomState,
}

/// `recent`'s hash of an entry's tag: the tag is already uniform, but hashbrown reads the
/// top 7 bits and the low bits, so it is spread over all 64.
fn slot_hash(tag: u32) -> u64 {
    u64::from(tag).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ u64::from(tag)
}

fn tag_of(entry: u64) -> u32 {
    (entry >> 32) as u32
}

impl Deletions {
    /// Whether `within_edits` can answer a query of `chars` letters with `max` edits.
    pub fn covers(chars: usize, max: u8) -> bool {
        match max {
            0 => chars <= WORD_CHARS_MAX,
            1 => chars < WORD_CHARS_MAX,
            2 => chars >= LONG_CHARS && chars + 2 <= WORD_CHARS_MAX,
            _ => false,
        }
    }

    /// Adds the variants of a new word.
    pub fn insert(&mut self, word: &str, id: TermId) {
        let chars = word.chars().count();
        if chars > WORD_CHARS_MAX {
            return;
        }
        let deletions = if chars >= LONG_CHARS { 2 } else { 1 };
        let mut tags = self.variant_tags(word, deletions);
        tags.sort_unstable();
        tags.dedup();
        self.recent.reserve(tags.len(), |&e| slot_hash(tag_of(e)));
        for tag in tags {
            let entry = u64::from(tag) << 32 | u64::from(id);
            self.recent.insert_unique(slot_hash(tag), entry, |&e| slot_hash(tag_of(e)));
        }
        if self.recent.len() >= RECENT_MIN.max(self.sorted.len() / 8) {
            self.merge();
        }
    }

    /// Merges the recent entries into the sorted ones (the end of a bulk load).
    pub fn settle(&mut self) {
        if !self.recent.is_empty() {
            self.merge();
        }
    }

    fn merge(&mut self) {
        let mut recent: Vec<u64> = std::mem::take(&mut self.recent).into_iter().collect();
        recent.sort_unstable();
        let mut merged: Vec<u64> = Vec::with_capacity(self.sorted.len() + recent.len());
        let (mut old, mut new) = (self.sorted.iter().peekable(), recent.iter().peekable());
        while let (Some(&&a), Some(&&b)) = (old.peek(), new.peek()) {
            if a <= b {
                merged.push(a);
                old.next();
            } else {
                merged.push(b);
                new.next();
            }
        }
        merged.extend(old);
        merged.extend(new);
        debug_assert!(merged.is_sorted());
        self.sorted = merged;
        // About two entries a directory slot.
        self.bits = (self.sorted.len() / 2).max(1).ilog2().clamp(1, 28);
        let shift = 32 - self.bits;
        let slots = 1usize << self.bits;
        let mut directory: Vec<u32> = Vec::with_capacity(slots + 1);
        let mut at = 0usize;
        for slot in 0..slots {
            while at < self.sorted.len() && ((tag_of(self.sorted[at]) >> shift) as usize) < slot {
                at += 1;
            }
            directory.push(u32::try_from(at).expect("fewer than 2^32 variants"));
        }
        directory.push(u32::try_from(self.sorted.len()).expect("fewer than 2^32 variants"));
        self.directory = directory;
    }

    /// Calls `f` with the term id of every entry tagged `tag`.
    fn each_with_tag(&self, tag: u32, f: &mut impl FnMut(TermId)) {
        if !self.directory.is_empty() {
            let slot = (tag >> (32 - self.bits)) as usize;
            let range = self.directory[slot] as usize..self.directory[slot + 1] as usize;
            for &entry in self.sorted[range].iter().skip_while(|&&e| tag_of(e) < tag) {
                if tag_of(entry) != tag {
                    break;
                }
                f(entry as u32);
            }
        }
        for &entry in self.recent.iter_hash(slot_hash(tag)).filter(|&&e| tag_of(e) == tag) {
            f(entry as u32);
        }
    }

    /// The tags of `word` and of its variants with up to `deletions` (at most 2)
    /// characters deleted, duplicates included. Two deletions never take the first
    /// letter: a word whose first letter differs from the query's is one edit away at
    /// most (the first-letter rule), which one deletion on each side covers; and two
    /// words with the same first letter are as far apart as they are without it, so
    /// their shared variant keeps it.
    fn variant_tags(&self, word: &str, deletions: u8) -> Vec<u32> {
        assert!(deletions <= EDITS_MAX, "{deletions} deletions");
        let bytes = word.as_bytes();
        // Where each character starts, and the end: deleting character `i` cuts out
        // `starts[i]..starts[i + 1]`.
        let starts: Vec<usize> = word.char_indices().map(|(at, _)| at).chain(std::iter::once(word.len())).collect();
        let n = starts.len() - 1;
        let mut tags = Vec::with_capacity(1 + n + if deletions == 2 { n * n.saturating_sub(1) / 2 } else { 0 });
        let mut buffer: Vec<u8> = Vec::with_capacity(bytes.len());
        let mut tag = |pieces: &[&[u8]], tags: &mut Vec<u32>| {
            buffer.clear();
            pieces.iter().for_each(|piece| buffer.extend_from_slice(piece));
            tags.push((self.hasher.hash_one(buffer.as_slice()) >> 32) as u32);
        };
        tag(&[bytes], &mut tags);
        for a in (0..n).take_while(|_| deletions > 0) {
            let (before, after) = (&bytes[..starts[a]], &bytes[starts[a + 1]..]);
            tag(&[before, after], &mut tags);
            if deletions == 2 && a > 0 {
                for b in a + 1..n {
                    tag(&[before, &bytes[starts[a + 1]..starts[b]], &bytes[starts[b + 1]..]], &mut tags);
                }
            }
        }
        tags
    }

    /// Calls `f(id, edits)` with every word within `max` edits of `query` under the same
    /// rule as `Trie::within_edits` (a first letter other than the query's costs one edit
    /// more; `edits` is the plain distance), given the words by id. The caller checks
    /// `covers` first.
    pub fn within_edits<'w>(
        &self,
        query: &[char],
        max: u8,
        word: impl Fn(TermId) -> &'w str,
        f: &mut dyn FnMut(TermId, u8),
    ) {
        assert!(Self::covers(query.len(), max), "a lookup the table cannot answer");
        let text: String = query.iter().collect();
        let mut tags = self.variant_tags(&text, max);
        tags.sort_unstable();
        tags.dedup();
        let mut candidates: Vec<TermId> = Vec::new();
        for tag in tags {
            self.each_with_tag(tag, &mut |id| candidates.push(id));
        }
        candidates.sort_unstable();
        candidates.dedup();
        let mut letters: Vec<char> = Vec::with_capacity(WORD_CHARS_MAX);
        for id in candidates {
            letters.clear();
            letters.extend(word(id).chars());
            let Some(edits) = distance(query, &letters, max) else { continue };
            let first_differs = letters.first() != query.first();
            if edits + u8::from(first_differs) <= max {
                f(id, edits);
            }
        }
    }

    /// Approximate bytes held.
    pub fn memory_bytes(&self) -> usize {
        self.sorted.capacity() * 8 + self.directory.capacity() * 4 + self.recent.allocation_size()
    }

    /// Entries held (variants of all words, after removing each word's duplicates).
    pub fn len(&self) -> usize {
        self.sorted.len() + self.recent.len()
    }

    /// Whether no entry is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The optimal-string-alignment distance of `a` and `b` when it is at most `max`, else
/// `None`; both at most `WORD_CHARS_MAX` letters. Three rows of the table (a swap reaches
/// back two); stops as soon as a whole row exceeds `max`, which is safe for swaps too: a
/// swap's cell is at most one more than the cell it reaches back to, and the row between
/// holds a cell no larger than that one plus one.
pub fn distance(a: &[char], b: &[char], max: u8) -> Option<u8> {
    assert!(a.len() <= WORD_CHARS_MAX && b.len() <= WORD_CHARS_MAX, "words of at most {WORD_CHARS_MAX} letters");
    if a.len().abs_diff(b.len()) > usize::from(max) {
        return None;
    }
    const WIDTH: usize = WORD_CHARS_MAX + 1;
    let width = b.len() + 1;
    let mut before = [0u8; WIDTH];
    let mut previous = [0u8; WIDTH];
    let mut current = [0u8; WIDTH];
    for (j, cell) in previous.iter_mut().enumerate().take(width) {
        *cell = j as u8;
    }
    for i in 1..=a.len() {
        current[0] = i as u8;
        let mut low = current[0];
        for j in 1..width {
            let cost = u8::from(a[i - 1] != b[j - 1]);
            let mut best = (previous[j] + 1).min(current[j - 1] + 1).min(previous[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(before[j - 2] + 1);
            }
            current[j] = best;
            low = low.min(best);
        }
        if low > max {
            return None;
        }
        before = previous;
        previous = current;
    }
    let d = previous[width - 1];
    (d <= max).then_some(d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Every word within `max` of `query` by the definition (a first letter other than
    /// the query's costs one more), with its distance, sorted.
    fn brute_force(words: &[String], query: &[char], max: u8) -> Vec<(String, u8)> {
        let mut out: Vec<(String, u8)> = words
            .iter()
            .filter_map(|w| {
                let letters: Vec<char> = w.chars().collect();
                let d = crate::text::osa_distance(query, &letters);
                let first_differs = letters.first() != query.first();
                (d + usize::from(first_differs) <= usize::from(max)).then(|| (w.clone(), d as u8))
            })
            .collect();
        out.sort();
        out
    }

    fn table_lookup(words: &[String], query: &[char], max: u8) -> Vec<(String, u8)> {
        let mut table = Deletions::default();
        for (id, w) in words.iter().enumerate() {
            table.insert(w, id as TermId);
        }
        let mut out = Vec::new();
        table.within_edits(query, max, |id| words[id as usize].as_str(), &mut |id, e| {
            out.push((words[id as usize].clone(), e))
        });
        out.sort();
        out
    }

    /// `word` with `edits` random edits (substitute, insert, delete, swap) from `seed`.
    fn misspell(word: &str, edits: usize, mut seed: u64) -> String {
        let mut next = move |n: usize| {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((seed >> 33) as usize) % n.max(1)
        };
        let mut letters: Vec<char> = word.chars().collect();
        for _ in 0..edits {
            let c = ['a', 'b', 'c', 'd'][next(4)];
            let at = next(letters.len() + 1);
            match next(4) {
                0 if at < letters.len() => letters[at] = c,
                1 => letters.insert(at, c),
                2 if at < letters.len() => {
                    letters.remove(at);
                }
                _ if at + 1 < letters.len() => letters.swap(at, at + 1),
                _ => letters.insert(at, c),
            }
        }
        letters.into_iter().collect()
    }

    #[test]
    fn distance_stops_beyond_the_limit_and_counts_swaps_as_one() {
        let chars = |s: &str| s.chars().collect::<Vec<char>>();
        assert_eq!(distance(&chars("wireless"), &chars("wirelses"), 2), Some(1));
        assert_eq!(distance(&chars("abc"), &chars("bca"), 2), Some(2));
        assert_eq!(distance(&chars("abc"), &chars("bca"), 1), None);
        assert_eq!(distance(&chars(""), &chars("ab"), 2), Some(2));
        assert_eq!(distance(&chars("abcdef"), &chars("a"), 2), None);
    }

    #[test]
    fn covers_what_the_stored_variants_allow() {
        assert!(Deletions::covers(1, 1) && Deletions::covers(WORD_CHARS_MAX - 1, 1));
        assert!(!Deletions::covers(WORD_CHARS_MAX, 1));
        assert!(Deletions::covers(WORD_CHARS_MAX, 0) && !Deletions::covers(WORD_CHARS_MAX + 1, 0));
        assert!(!Deletions::covers(LONG_CHARS - 1, 2) && Deletions::covers(LONG_CHARS, 2));
        assert!(!Deletions::covers(WORD_CHARS_MAX - 1, 2) && !Deletions::covers(5, 3));
    }

    #[test]
    fn finds_typos_among_near_neighbours_and_counts_its_memory() {
        let words: Vec<String> =
            ["headphones", "headphone", "wireless", "wires", "кофеварка", "hedge", "xeadphones", "abc", "bca"]
                .map(String::from)
                .to_vec();
        let q = |s: &str| s.chars().collect::<Vec<char>>();
        assert_eq!(table_lookup(&words, &q("hedphones"), 1), [("headphones".to_string(), 1)]);
        // The first letter's typo counts as two: within 2, not within 1.
        assert_eq!(table_lookup(&words, &q("xeadphone"), 1), [("xeadphones".to_string(), 1)]);
        assert_eq!(
            table_lookup(&words, &q("xeadphone"), 2),
            [("headphone".to_string(), 1), ("xeadphones".to_string(), 1)]
        );
        assert_eq!(
            table_lookup(&words, &q("headphone"), 2),
            [("headphone".to_string(), 0), ("headphones".to_string(), 1)]
        );
        assert_eq!(table_lookup(&words, &q("кофеварко"), 2), [("кофеварка".to_string(), 1)]);
        // `bca` shares the variant `bc` with `abc` but is two edits away.
        assert_eq!(table_lookup(&words, &q("abc"), 1), [("abc".to_string(), 0)]);
        let mut table = Deletions::default();
        table.insert("headphones", 0);
        // Itself, 10 with one letter deleted, 36 with two (never the first): 47.
        assert_eq!(table.len(), 47);
        assert!(table.memory_bytes() >= 47 * 8);
        table.settle();
        assert_eq!(table.len(), 47);
        assert!(table.recent.is_empty() && table.sorted.len() == 47);
    }

    proptest! {
        /// The table with its verification finds exactly the words the definition names,
        /// over small alphabets (many near neighbours, repeated letters; characters of one,
        /// two and four bytes) and both limits.
        #[test]
        fn table_lookups_agree_with_brute_force(
            words in proptest::collection::btree_set("[abcdé𝄞]{1,12}", 1..80),
            pick in any::<proptest::sample::Index>(),
            edits in 0usize..4,
            seed in any::<u64>(),
            random_query in "[abcdé𝄞]{0,12}",
            use_random in any::<bool>(),
            max in 0u8..=2,
        ) {
            let words: Vec<String> = words.into_iter().collect();
            let query = if use_random { random_query } else { misspell(&words[pick.index(words.len())], edits, seed) };
            let query: Vec<char> = query.chars().collect();
            // Two edits are answered from 8 letters on: below, ask for one.
            let max = if Deletions::covers(query.len(), max) { max } else { 1 };
            prop_assert_eq!(table_lookup(&words, &query, max), brute_force(&words, &query, max));
        }

        /// Two substitutions in a word of 8+ letters: found only through the word's own
        /// 2-deletion variants (the case the long words' extra variants are for).
        #[test]
        fn two_substitutions_in_long_words_are_found(
            words in proptest::collection::btree_set("[abcd]{8,10}", 1..40),
            pick in any::<proptest::sample::Index>(),
            first in any::<proptest::sample::Index>(),
            second in any::<proptest::sample::Index>(),
            letters in proptest::array::uniform2(proptest::char::range('a', 'e')),
        ) {
            let words: Vec<String> = words.into_iter().collect();
            let mut query: Vec<char> = words[pick.index(words.len())].chars().collect();
            let length = query.len();
            query[first.index(length)] = letters[0];
            query[second.index(length)] = letters[1];
            prop_assert_eq!(table_lookup(&words, &query, 2), brute_force(&words, &query, 2));
        }
    }
}
