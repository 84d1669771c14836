//! The vocabulary of a text index: every distinct folded word, its stem, and the three
//! ways to find words that are not the one asked for.
//!
//! Owns: term ids (dense, never reused), the word ↔ id maps, stem groups, and lookups by
//! prefix (through a character trie, `trie`), by edit distance (through a table of
//! deletion variants, `deletions`, and the trie for what that table does not cover) and
//! by suffix (through an ordered map of the words spelled backwards: a suffix is a prefix
//! of the reversed word). Never: know about rows or scores.

use super::deletions::Deletions;
use super::lang::{Language, stem};
use super::trie::Trie;
use std::collections::BTreeMap;
use std::ops::Bound;

/// A word's id in a vocabulary: dense from 0, never reused.
pub type TermId = u32;

type Map<K, V> = hashbrown::HashMap<K, V, ahash::RandomState>;

/// Distinct words with their stems and ordered views.
#[derive(Debug, Default)]
pub struct Vocab {
    /// Every word's bytes, one after another: word `i` ends at `ends[i]` and starts where
    /// word `i - 1` ends. One block instead of an allocation per word.
    text: String,
    ends: Vec<u32>,
    /// Term ids by the hash of their word. Four bytes a slot: the table of a 100k-word
    /// vocabulary stays in the core's cache, where one holding the words themselves (32
    /// bytes a slot) did not, and indexing looks a word up for every word of every row.
    ids: hashbrown::HashTable<TermId>,
    hasher: ahash::RandomState,
    stem_of: Vec<u32>,
    stems: Map<Box<str>, u32>,
    stem_terms: Vec<Vec<TermId>>,
    trie: Trie,
    /// Deletion variants of every word, for typo lookups (`within_edits`).
    deletions: Deletions,
    reversed: BTreeMap<Box<str>, TermId>,
}

impl Vocab {
    /// Distinct words ever added.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Whether no word was ever added.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// The folded word with id `id`; panics for an id the vocabulary did not give.
    pub fn word(&self, id: TermId) -> &str {
        word_in(&self.text, &self.ends, id)
    }

    /// The id of a folded word, if the vocabulary has it.
    pub fn get(&self, word: &str) -> Option<TermId> {
        let hash = self.hasher.hash_one(word.as_bytes());
        self.ids.find(hash, |&id| self.word(id) == word).copied()
    }

    /// The id of `word`, added (and stemmed under `languages`) when new.
    pub fn intern(&mut self, word: &str, languages: &[Language]) -> TermId {
        let hash = self.hasher.hash_one(word.as_bytes());
        if let Some(&id) = self.ids.find(hash, |&id| self.word(id) == word) {
            return id;
        }
        let id = TermId::try_from(self.ends.len()).expect("fewer than 2^32 distinct words");
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
        self.text.push_str(word);
        self.ends.push(u32::try_from(self.text.len()).expect("under 4 GiB of distinct words"));
        let (text, ends, hasher) = (&self.text, &self.ends, &self.hasher);
        self.ids.insert_unique(hash, id, |&id| hasher.hash_one(word_in(text, ends, id).as_bytes()));
        self.trie.insert(word, id);
        self.deletions.insert(word, id);
        self.reversed.insert(word.chars().rev().collect::<String>().into_boxed_str(), id);
        id
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
    pub fn with_prefix(&self, prefix: &str, f: impl FnMut(TermId)) {
        self.trie.with_prefix(prefix, f);
    }

    /// Calls `f` with every word ending with `suffix`.
    pub fn with_suffix(&self, suffix: &str, f: impl FnMut(TermId)) {
        let reversed: String = suffix.chars().rev().collect();
        starting_with(&self.reversed, &reversed).for_each(f);
    }

    /// Calls `f(id, edits)` with every word within `max_edits` (at most 3) of `word`, the
    /// word itself included (with 0 edits); a typo in the first letter counts as two
    /// (`Trie::within_edits`). The deletion table answers what it covers (1 edit, or 2
    /// from 8 letters: the limits queries ask for); the trie walk the rest.
    pub fn within_edits(&self, word: &str, max_edits: u8, mut f: impl FnMut(TermId, u8)) {
        let query: Vec<char> = word.chars().collect();
        if Deletions::covers(query.len(), max_edits) {
            let (text, ends) = (&self.text, &self.ends);
            self.deletions.within_edits(&query, max_edits, |id| word_in(text, ends, id), &mut f);
        } else {
            self.trie.within_edits(&query, max_edits, &mut f);
        }
    }

    /// The trie walk alone, for tests comparing it with the deletion table.
    #[cfg(test)]
    pub fn within_edits_by_trie(&self, word: &str, max_edits: u8, mut f: impl FnMut(TermId, u8)) {
        let query: Vec<char> = word.chars().collect();
        self.trie.within_edits(&query, max_edits, &mut f);
    }

    /// Bytes held by the deletion table (part of `memory_bytes`).
    pub fn deletions_bytes(&self) -> usize {
        self.deletions.memory_bytes()
    }

    /// Lays the trie out for fast walks and merges the deletion table (the end of a bulk
    /// load).
    pub fn settle(&mut self) {
        self.trie.settle();
        self.deletions.settle();
    }

    /// Approximate heap bytes held: the words, the trie, the deletion table and the
    /// maps.
    pub fn memory_bytes(&self) -> usize {
        // Each word is held twice (by id, reversed), in the trie, and as variants in the
        // deletion table.
        let words: usize = self.text.capacity()
            + self.deletions.memory_bytes()
            + self.ends.capacity() * 4
            + self.reversed.keys().map(|w| w.len() + 16 + 8).sum::<usize>()
            + self.trie.memory_bytes();
        let stems: usize = self.stems.keys().map(|s| s.len() + 16 + 4).sum::<usize>()
            + self.stem_terms.iter().map(|t| t.capacity() * 4 + 24).sum::<usize>();
        words + self.ids.capacity() * (std::mem::size_of::<TermId>() + 1) + stems + self.stem_of.capacity() * 4
    }
}

/// Word `id` of the packed words.
fn word_in<'a>(text: &'a str, ends: &[u32], id: TermId) -> &'a str {
    let end = ends[id as usize] as usize;
    let start = if id == 0 { 0 } else { ends[id as usize - 1] as usize };
    &text[start..end]
}

/// The ids of the keys of `map` starting with `prefix`.
fn starting_with<'a>(map: &'a BTreeMap<Box<str>, TermId>, prefix: &'a str) -> impl Iterator<Item = TermId> + 'a {
    map.range::<str, _>((Bound::Included(prefix), Bound::Unbounded))
        .take_while(move |(word, _)| word.starts_with(prefix))
        .map(|(_, &id)| id)
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

    /// The reference for the trie walk.
    fn osa(a: &str, b: &str) -> usize {
        let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
        crate::text::osa_distance(&a, &b)
    }

    #[test]
    fn finds_by_prefix_suffix_and_stem() {
        let v = vocab(&["head", "headphones", "headphone", "header", "phone", "smartphone", "книга", "книги"]);
        {
            assert_eq!(found(&v, |v, f| v.with_prefix("headph", f)), ["headphone", "headphones"]);
            assert_eq!(found(&v, |v, f| v.with_suffix("phone", f)), ["headphone", "phone", "smartphone"]);
            let stems: Vec<&str> = v.same_stem("книгу", LANGS).iter().map(|&t| v.word(t)).collect();
            assert_eq!(stems, ["книга", "книги"]);
        }
    }

    #[test]
    fn finds_typos_including_swaps() {
        let v = vocab(&["headphones", "headphone", "wireless", "wires", "кофеварка", "hedge"]);
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

    /// A word added after lookups is found by the next one (the deletion table grows with
    /// the vocabulary), through either limit.
    #[test]
    fn typo_lookups_see_words_added_later() {
        let mut v = vocab(&["wireless", "keyboard"]);
        let typos = |v: &Vocab, word: &str, max: u8| {
            let mut hits = Vec::new();
            v.within_edits(word, max, |id, e| hits.push((v.word(id).to_string(), e)));
            hits.sort();
            hits
        };
        assert_eq!(typos(&v, "headphnes", 2), []);
        v.intern("headphones", LANGS);
        v.intern("headphone", LANGS);
        assert_eq!(typos(&v, "headphnes", 2), [("headphone".to_string(), 2), ("headphones".to_string(), 1)]);
        assert_eq!(typos(&v, "keybord", 1), [("keyboard".to_string(), 1)]);
        v.intern("keybored", LANGS);
        assert_eq!(typos(&v, "keybord", 1), [("keyboard".to_string(), 1), ("keybored".to_string(), 1)]);
        assert!(v.deletions_bytes() > 0 && v.memory_bytes() > v.deletions_bytes());
        // Words too long for the table are found by the trie, typos and all.
        let long = "a".repeat(super::super::deletions::WORD_CHARS_MAX + 1);
        v.intern(&long, LANGS);
        assert_eq!(typos(&v, &long, 0), [(long.clone(), 0)]);
        assert_eq!(typos(&v, &long[1..], 1), [(long.clone(), 1)]);
    }

    /// Enough words that the trie is laid out again several times while they go in.
    #[test]
    fn lookups_agree_with_brute_force_after_the_trie_is_laid_out() {
        let mut state = 7u64;
        let mut next = move || {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (state >> 33) as usize
        };
        let letters: Vec<char> = "abcdeklmnoprstu".chars().collect();
        let words: std::collections::BTreeSet<String> =
            (0..4000).map(|_| (0..3 + next() % 6).map(|_| letters[next() % letters.len()]).collect()).collect();
        let mut v = Vocab::default();
        for (i, w) in words.iter().enumerate() {
            v.intern(w, &[]);
            if i == 2000 {
                v.settle();
            }
        }
        let queries: Vec<&String> = words.iter().step_by(97).collect();
        for query in queries {
            for max in 0..3u8 {
                let mut got = Vec::new();
                v.within_edits(query, max, |id, e| got.push((v.word(id).to_string(), e as usize)));
                got.sort();
                let first = query.chars().next();
                let expected: Vec<(String, usize)> = words
                    .iter()
                    .map(|w| (w.clone(), osa(w, query)))
                    .filter(|(w, d)| *d + usize::from(w.chars().next() != first) <= max as usize)
                    .collect();
                assert_eq!(got, expected, "{query} within {max}");
            }
            let prefix: String = query.chars().take(2).collect();
            let mut got: Vec<String> = Vec::new();
            v.with_prefix(&prefix, |id| got.push(v.word(id).to_string()));
            got.sort();
            let expected: Vec<String> = words.iter().filter(|w| w.starts_with(&prefix)).cloned().collect();
            assert_eq!(got, expected, "prefix {prefix}");
        }
    }

    proptest! {
        #[test]
        fn edit_search_agrees_with_plain_dynamic_programming(
            words in proptest::collection::btree_set("[abc]{0,6}", 0..40),
            query in "[abc]{0,6}",
            max in 0u8..3,
        ) {
            let mut v = Vocab::default();
            for w in &words {
                v.intern(w, &[]);
            }
            let mut got = Vec::new();
            v.within_edits(&query, max, |id, e| got.push((v.word(id).to_string(), e as usize)));
            got.sort();
            // A typo in the first letter counts as two.
            let first_differs = |w: &str| w.chars().next() != query.chars().next();
            let expected: Vec<(String, usize)> = words
                .iter()
                .map(|w| (w.clone(), osa(w, &query)))
                .filter(|(w, d)| *d + usize::from(first_differs(w)) <= max as usize)
                .collect();
            prop_assert_eq!(got, expected);
        }
    }
}
