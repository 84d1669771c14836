//! The vocabulary of a text index: every distinct folded word, its stem, and the three
//! ways to find words that are not the one asked for.
//!
//! Owns: term ids (dense, never reused), the word ↔ id maps, stem groups, and lookups by
//! prefix, by suffix and by edit distance. The ordered views those lookups need are kept
//! as id lists sorted by word (and by reversed word); new words wait in a short unsorted
//! list that is merged in once it grows past about √n, so adding a word costs amortised
//! O(√n) and a lookup scans at most √n unsorted words. Never: know about rows or scores.
//!
//! Edit distance is the optimal string alignment distance over characters (a swap of two
//! neighbours is one edit). The search walks the sorted words as a trie: rows of the
//! distance table are shared by words with a common prefix, and a prefix whose row is
//! already past the limit skips every word under it with one binary search.

use super::lang::{Language, stem};
use std::cmp::Ordering;

pub type TermId = u32;

type Map<K, V> = hashbrown::HashMap<K, V, ahash::RandomState>;

/// Distinct words with their stems and ordered views.
#[derive(Debug, Default)]
pub struct Vocab {
    words: Vec<Box<str>>,
    ids: Map<Box<str>, TermId>,
    stem_of: Vec<u32>,
    stems: Map<Box<str>, u32>,
    stem_terms: Vec<Vec<TermId>>,
    sorted: Vec<TermId>,
    reversed: Vec<TermId>,
    /// Added since the last merge, in no order (both views).
    pending: Vec<TermId>,
}

impl Vocab {
    pub fn len(&self) -> usize {
        self.words.len()
    }

    pub fn is_empty(&self) -> bool {
        self.words.is_empty()
    }

    pub fn word(&self, id: TermId) -> &str {
        &self.words[id as usize]
    }

    pub fn get(&self, word: &str) -> Option<TermId> {
        self.ids.get(word).copied()
    }

    /// The id of `word`, added (and stemmed under `languages`) when new.
    pub fn intern(&mut self, word: &str, languages: &[Language]) -> TermId {
        if let Some(&id) = self.ids.get(word) {
            return id;
        }
        let id = TermId::try_from(self.words.len()).expect("fewer than 2^32 distinct words");
        let stemmed = stem(word, languages);
        let stem_id = match self.stems.get(stemmed.as_str()) {
            Some(&s) => s,
            None => {
                let s = u32::try_from(self.stem_terms.len()).expect("fewer than 2^32 stems");
                self.stems.insert(stemmed.into_boxed_str(), s);
                self.stem_terms.push(Vec::new());
                s
            }
        };
        self.stem_terms[stem_id as usize].push(id);
        self.stem_of.push(stem_id);
        self.words.push(word.into());
        self.ids.insert(word.into(), id);
        self.pending.push(id);
        if self.pending.len() * self.pending.len() > self.sorted.len().max(1024) {
            self.merge_pending();
        }
        id
    }

    /// Sorts the pending words into both ordered views.
    pub fn merge_pending(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        let mut pending = std::mem::take(&mut self.pending);
        let words = &self.words;
        pending.sort_unstable_by(|a, b| words[*a as usize].cmp(&words[*b as usize]));
        self.sorted = merge(&self.sorted, &pending, |a, b| words[*a as usize].cmp(&words[*b as usize]));
        pending.sort_unstable_by(|a, b| reverse_cmp(&words[*a as usize], &words[*b as usize]));
        self.reversed = merge(&self.reversed, &pending, |a, b| reverse_cmp(&words[*a as usize], &words[*b as usize]));
    }

    /// Every word with the same stem as `word` under `languages` (`word` included when
    /// it is in the vocabulary).
    pub fn same_stem(&self, word: &str, languages: &[Language]) -> &[TermId] {
        match self.stems.get(stem(word, languages).as_str()) {
            Some(&s) => &self.stem_terms[s as usize],
            None => &[],
        }
    }

    /// The words of the same stem group as a known term.
    pub fn stem_group(&self, id: TermId) -> &[TermId] {
        &self.stem_terms[self.stem_of[id as usize] as usize]
    }

    /// Calls `f` with every word starting with `prefix`.
    pub fn with_prefix(&self, prefix: &str, mut f: impl FnMut(TermId)) {
        let start = self.sorted.partition_point(|&t| self.word(t) < prefix);
        for &id in &self.sorted[start..] {
            if !self.word(id).starts_with(prefix) {
                break;
            }
            f(id);
        }
        self.pending.iter().filter(|&&id| self.word(id).starts_with(prefix)).for_each(|&id| f(id));
    }

    /// Calls `f` with every word ending with `suffix`.
    pub fn with_suffix(&self, suffix: &str, mut f: impl FnMut(TermId)) {
        let start = self.reversed.partition_point(|&t| reverse_prefix_cmp(self.word(t), suffix) == Ordering::Less);
        for &id in &self.reversed[start..] {
            if !self.word(id).ends_with(suffix) {
                break;
            }
            f(id);
        }
        self.pending.iter().filter(|&&id| self.word(id).ends_with(suffix)).for_each(|&id| f(id));
    }

    /// Calls `f(id, edits)` with every word within `max_edits` (at most 3) of `word`,
    /// the word itself included (with 0 edits).
    pub fn within_edits(&self, word: &str, max_edits: u8, mut f: impl FnMut(TermId, u8)) {
        let query: Vec<char> = word.chars().collect();
        let mut table = EditTable::new(&query, max_edits);
        let mut chars: Vec<char> = Vec::new();
        let mut i = 0;
        while i < self.sorted.len() {
            let id = self.sorted[i];
            let text = self.word(id);
            chars.clear();
            chars.extend(text.chars());
            match table.walk(&chars) {
                Ok(Some(edits)) => {
                    f(id, edits);
                    i += 1;
                }
                Ok(None) => i += 1,
                Err(depth) => {
                    // No word under this prefix can come back within the limit.
                    let prefix: String = chars[..depth].iter().collect();
                    i += self.sorted[i..].partition_point(|&t| {
                        let w = self.word(t);
                        w.starts_with(prefix.as_str()) || w < prefix.as_str()
                    });
                }
            }
        }
        for &id in &self.pending {
            chars.clear();
            chars.extend(self.word(id).chars());
            if chars.len().abs_diff(query.len()) <= max_edits as usize
                && let Some(edits) = table.distance(&chars)
            {
                f(id, edits);
            }
        }
    }

    pub fn memory_bytes(&self) -> usize {
        let words: usize = self.words.iter().map(|w| 2 * (w.len() + 16)).sum();
        let stems: usize = self.stems.keys().map(|s| s.len() + 16 + 4).sum::<usize>()
            + self.stem_terms.iter().map(|t| t.capacity() * 4 + 24).sum::<usize>();
        words
            + self.ids.capacity() * 5
            + stems
            + (self.stem_of.capacity() + self.sorted.capacity() + self.reversed.capacity() + self.pending.capacity())
                * 4
    }
}

fn merge(a: &[TermId], b: &[TermId], order: impl Fn(&TermId, &TermId) -> Ordering) -> Vec<TermId> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        if order(&a[i], &b[j]) == Ordering::Greater {
            out.push(b[j]);
            j += 1;
        } else {
            out.push(a[i]);
            i += 1;
        }
    }
    out.extend_from_slice(&a[i..]);
    out.extend_from_slice(&b[j..]);
    out
}

/// Compares two words by their characters read from the end.
fn reverse_cmp(a: &str, b: &str) -> Ordering {
    a.chars().rev().cmp(b.chars().rev())
}

/// Compares a word read backwards with a reversed suffix as a prefix key: words ending
/// with `suffix` compare equal.
fn reverse_prefix_cmp(word: &str, suffix: &str) -> Ordering {
    let mut w = word.chars().rev();
    for s in suffix.chars().rev() {
        match w.next() {
            None => return Ordering::Less,
            Some(c) if c != s => return c.cmp(&s),
            Some(_) => {}
        }
    }
    Ordering::Equal
}

/// Rows of the optimal string alignment distance between the query and successive
/// words, kept per depth so a word reuses the rows of the prefix it shares with the last.
struct EditTable<'q> {
    query: &'q [char],
    max: u8,
    /// Row `d` (length `query.len() + 1`) for the first `d` characters of `word`.
    rows: Vec<u8>,
    word: Vec<char>,
}

impl<'q> EditTable<'q> {
    fn new(query: &'q [char], max: u8) -> EditTable<'q> {
        let width = query.len() + 1;
        let rows = (0..width).map(|j| j.min(255) as u8).collect();
        EditTable { query, max, rows, word: Vec::new() }
    }

    fn width(&self) -> usize {
        self.query.len() + 1
    }

    /// Distance of `word` when within the limit (`Ok(Some)`), `Ok(None)` when over it, or
    /// `Err(depth)` when its first `depth` characters already rule out every word that
    /// starts with them.
    fn walk(&mut self, word: &[char]) -> Result<Option<u8>, usize> {
        let shared = self.word.iter().zip(word).take_while(|(a, b)| a == b).count();
        let width = self.width();
        self.rows.truncate((shared + 1) * width);
        self.word.truncate(shared);
        for (depth, &c) in word.iter().enumerate().skip(shared) {
            self.word.push(c);
            let low = self.push_row();
            // A swap reaches back two rows, so both must be past the limit to prune.
            let previous_low = self.row_min(depth);
            if low > self.max && previous_low >= self.max {
                self.rows.truncate((depth + 1) * width);
                self.word.truncate(depth);
                return Err(depth + 1);
            }
        }
        let last = self.rows[self.rows.len() - 1];
        Ok((last <= self.max).then_some(last))
    }

    /// Full distance of one word, leaving the shared rows as they were for the walk.
    fn distance(&mut self, word: &[char]) -> Option<u8> {
        let mut scratch = EditTable::new(self.query, self.max);
        for &c in word {
            scratch.word.push(c);
            scratch.push_row();
        }
        let last = scratch.rows[scratch.rows.len() - 1];
        (last <= self.max).then_some(last)
    }

    fn row_min(&self, depth: usize) -> u8 {
        let width = self.width();
        self.rows[depth * width..(depth + 1) * width].iter().copied().min().unwrap_or(u8::MAX)
    }

    /// Appends the row for the last character of `self.word`; returns its minimum.
    fn push_row(&mut self) -> u8 {
        let width = self.width();
        let depth = self.word.len();
        let c = self.word[depth - 1];
        let base = (depth - 1) * width;
        let mut low = u8::MAX;
        for j in 0..width {
            let value = if j == 0 {
                depth.min(255) as u8
            } else {
                let substitute = self.rows[base + j - 1].saturating_add(u8::from(self.query[j - 1] != c));
                let delete = self.rows[base + j].saturating_add(1);
                let insert = self.rows[base + width + j - 1].saturating_add(1);
                let mut best = substitute.min(delete).min(insert);
                if depth > 1 && j > 1 && c == self.query[j - 2] && self.word[depth - 2] == self.query[j - 1] {
                    best = best.min(self.rows[base - width + j - 2].saturating_add(1));
                }
                best
            };
            self.rows.push(value);
            low = low.min(value);
        }
        low
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const LANGS: &[Language] = &[Language::English, Language::Russian];

    fn vocab(words: &[&str]) -> Vocab {
        let mut v = Vocab::default();
        for w in words {
            v.intern(w, LANGS);
        }
        v
    }

    fn found(v: &Vocab, run: impl Fn(&Vocab, &mut dyn FnMut(TermId))) -> Vec<String> {
        let mut out = Vec::new();
        run(v, &mut |id| out.push(v.word(id).to_string()));
        out.sort();
        out
    }

    /// Plain dynamic programming, the reference for the trie walk.
    fn osa(a: &str, b: &str) -> usize {
        let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
        let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
        for (i, row) in d.iter_mut().enumerate() {
            row[0] = i;
        }
        d[0] = (0..=b.len()).collect();
        for i in 1..=a.len() {
            for j in 1..=b.len() {
                let cost = usize::from(a[i - 1] != b[j - 1]);
                d[i][j] = (d[i - 1][j] + 1).min(d[i][j - 1] + 1).min(d[i - 1][j - 1] + cost);
                if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                    d[i][j] = d[i][j].min(d[i - 2][j - 2] + 1);
                }
            }
        }
        d[a.len()][b.len()]
    }

    #[test]
    fn finds_by_prefix_suffix_and_stem() {
        let mut v = vocab(&["head", "headphones", "headphone", "header", "phone", "smartphone", "книга", "книги"]);
        for merged in [false, true] {
            if merged {
                v.merge_pending();
            }
            assert_eq!(found(&v, |v, f| v.with_prefix("headph", f)), ["headphone", "headphones"]);
            assert_eq!(found(&v, |v, f| v.with_suffix("phone", f)), ["headphone", "phone", "smartphone"]);
            let stems: Vec<&str> = v.same_stem("книгу", LANGS).iter().map(|&t| v.word(t)).collect();
            assert_eq!(stems, ["книга", "книги"]);
        }
    }

    #[test]
    fn finds_typos_including_swaps() {
        let mut v = vocab(&["headphones", "headphone", "wireless", "wires", "кофеварка", "hedge"]);
        v.merge_pending();
        let mut hits = Vec::new();
        v.within_edits("hedphones", 1, |id, e| hits.push((v.word(id).to_string(), e)));
        assert_eq!(hits, [("headphones".to_string(), 1)]);
        hits.clear();
        v.within_edits("wirelses", 1, |id, e| hits.push((v.word(id).to_string(), e)));
        assert_eq!(hits, [("wireless".to_string(), 1)]);
        hits.clear();
        v.within_edits("кофеварко", 2, |id, e| hits.push((v.word(id).to_string(), e)));
        assert_eq!(hits, [("кофеварка".to_string(), 1)]);
    }

    proptest! {
        #[test]
        fn edit_search_agrees_with_plain_dynamic_programming(
            words in proptest::collection::btree_set("[abc]{0,6}", 0..40),
            query in "[abc]{0,6}",
            max in 0u8..3,
            merge_at in 0usize..40,
        ) {
            let mut v = Vocab::default();
            for (i, w) in words.iter().enumerate() {
                if i == merge_at {
                    v.merge_pending();
                }
                v.intern(w, &[]);
            }
            let mut got = Vec::new();
            v.within_edits(&query, max, |id, e| got.push((v.word(id).to_string(), e as usize)));
            got.sort();
            let expected: Vec<(String, usize)> = words
                .iter()
                .map(|w| (w.clone(), osa(w, &query)))
                .filter(|(_, d)| *d <= max as usize)
                .collect();
            prop_assert_eq!(got, expected);
        }
    }
}
