//! The inverted index of a text index, kept in step with rows one row at a time.
//!
//! Owns: per-term postings (row, field, term frequency; `posting_list`), sorted by row; the forward index
//! (each row's term ids in text order, per field), which gives field lengths for BM25,
//! positions for phrases and proximity, and exactly the postings to take out when a row
//! changes; and the collection statistics. Never: parse queries or score (see `search`).
//!
//! Rows are added and removed as their documents are written, so every write is
//! searchable as soon as the write returns; nothing is rebuilt wholesale. A word that no
//! row uses any more keeps its term id (ids are never reused) but has no postings.

use super::config::{StopWords, TextConfig};
use super::fold::each_word;
use super::lang::is_builtin_stop_word;
pub use super::posting_list::Hit;
use super::posting_list::PostingList;
use super::vocab::{TermId, Vocab};

/// The place of a stop word in the forward index: not a term, but it keeps positions
/// (and so phrases) true to the text.
pub const STOP: u32 = u32::MAX - 1;
/// Between two values of an array field: no phrase runs across it.
pub const GAP: u32 = u32::MAX;

/// Most hits a batch holds before posting them (12 MB): a long batch reuses one warm
/// buffer rather than filling hundreds of MB of fresh memory, and each flush still
/// brings a word's hits from some thousands of rows to its list together.
const PENDING_MAX: usize = 1 << 20;

/// Most fields one text index covers (a field's number is kept in a byte, and query
/// field masks in a `u64`).
pub const FIELDS_MAX: usize = 64;

/// A text index's data.
#[derive(Debug)]
pub struct TextIndex {
    /// The index's options.
    pub config: TextConfig,
    /// The indexed fields' paths; a hit's field number is a position in this list.
    pub fields: Vec<String>,
    /// Every word the index has seen, with its id.
    pub vocab: Vocab,
    postings: Vec<PostingList>,
    /// Per row: the end offset of each field's tokens, then the tokens.
    forward: Vec<Option<Box<[u32]>>>,
    /// Words per (row, field), row-major, saturating: BM25 reads one per hit, and this
    /// dense table stays in cache where the forward index (a pointer per row) does not.
    lengths: Vec<u16>,
    rows: u32,
    field_tokens: Vec<u64>,
    hits: usize,
    stop: hashbrown::HashSet<String, ahash::RandomState>,
    /// Per row: a hash of the indexed text (0: not indexed), so a write that leaves the
    /// text as it was keeps the row's postings (`holds`). Keyed at random per index, so
    /// text cannot be crafted to collide.
    content: Vec<u64>,
    hasher: ahash::RandomState,
    /// While `batching`: the hits of rows inserted since `begin_batch`, posted together
    /// by `end_batch` (sorted by word first: each list then grows once, in order, instead
    /// of every row reaching into fifty lists scattered over memory).
    pending: Vec<(TermId, Hit)>,
    batching: bool,
}

impl TextIndex {
    /// An empty index over `fields` (at most `FIELDS_MAX`).
    pub fn new(fields: Vec<String>, config: TextConfig) -> TextIndex {
        let stop = match &config.stop_words {
            StopWords::List(words) => words.iter().cloned().collect(),
            _ => Default::default(),
        };
        TextIndex {
            field_tokens: vec![0; fields.len()],
            fields,
            config,
            vocab: Vocab::default(),
            postings: Vec::new(),
            forward: Vec::new(),
            lengths: Vec::new(),
            rows: 0,
            hits: 0,
            stop,
            content: Vec::new(),
            hasher: ahash::RandomState::new(),
            pending: Vec::new(),
            batching: false,
        }
    }

    /// Starts a batch of inserts (a large transaction, a load): their hits are posted
    /// together at `end_batch`. The caller holds the namespace's write lock for the whole
    /// batch, so no search sees the postings in between.
    pub fn begin_batch(&mut self, rows_hint: usize) {
        self.batching = true;
        // Room for the batch's hits up front, at the index's words per row so far (or a
        // generous guess for a new index): growing a vector of millions of hits by
        // doubling copies it and touches twice the memory.
        let per_row = if self.rows > 0 { (self.hits / self.rows as usize) * 5 / 4 + 1 } else { 64 };
        self.pending.reserve(rows_hint.saturating_mul(per_row).min(PENDING_MAX));
    }

    /// Posts the batch's hits and ends the batch.
    pub fn end_batch(&mut self) {
        self.batching = false;
        self.flush();
        self.pending = Vec::new();
    }

    /// Posts pending hits: a counting sort by word keeps each word's hits in the order
    /// they were added (rows ascending in a load), so most lists just grow at the end.
    fn flush(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        let mut starts = vec![0u32; self.postings.len() + 1];
        for (term, _) in &self.pending {
            starts[*term as usize + 1] += 1;
        }
        for i in 1..starts.len() {
            starts[i] += starts[i - 1];
        }
        let mut next = starts.clone();
        let mut sorted = vec![Hit { row: 0, field: 0, tf: 0 }; self.pending.len()];
        for &(term, hit) in &self.pending {
            let at = &mut next[term as usize];
            sorted[*at as usize] = hit;
            *at += 1;
        }
        // Emptied, not freed: a long batch fills the same (warm) buffer again.
        self.pending.clear();
        for (term, list) in self.postings.iter_mut().enumerate() {
            let hits = &sorted[starts[term] as usize..starts[term + 1] as usize];
            if !hits.is_empty() {
                list.extend(hits);
            }
        }
    }

    /// A hash of a row's indexed text: the string values of each field, in order.
    pub fn content_hash<'a>(&self, fields: impl Iterator<Item = &'a [crate::value::Scalar]>) -> u64 {
        use std::hash::{BuildHasher, Hasher};
        let mut hasher = self.hasher.build_hasher();
        for values in fields {
            hasher.write_usize(values.len());
            for value in values {
                match value {
                    crate::value::Scalar::Str(bytes) => {
                        hasher.write_usize(bytes.len());
                        hasher.write(bytes);
                    }
                    _ => hasher.write_usize(usize::MAX),
                }
            }
        }
        hasher.finish() | 1
    }

    /// Whether row `row` is indexed with text whose `content_hash` is `hash`: writing
    /// the same text again would change nothing.
    pub fn holds(&self, row: u32, hash: u64) -> bool {
        self.content.get(row as usize) == Some(&hash)
    }

    /// Whether a folded word is left out of the index and of queries.
    pub fn is_stop_word(&self, word: &str) -> bool {
        match self.config.stop_words {
            StopWords::None => false,
            StopWords::Builtin => is_builtin_stop_word(word, &self.config.languages),
            StopWords::List(_) => self.stop.contains(word),
        }
    }

    /// Indexes a row from the string values of each field (in the definition's order).
    /// The row must not be indexed already.
    pub fn insert<'a>(&mut self, row: u32, fields: impl Iterator<Item = &'a [crate::value::Scalar]>) {
        let fields: smallvec::SmallVec<[&[crate::value::Scalar]; 4]> = fields.collect();
        let hash = self.content_hash(fields.iter().copied());
        let mut ends: Vec<u32> = Vec::with_capacity(self.fields.len());
        let mut tokens: Vec<u32> = Vec::new();
        for values in fields {
            for (i, value) in values.iter().enumerate() {
                let crate::value::Scalar::Str(bytes) = value else { continue };
                let Ok(text) = std::str::from_utf8(bytes) else { continue };
                if i > 0 {
                    tokens.push(GAP);
                }
                each_word(text, |word, _, _| {
                    let token =
                        if self.is_stop_word(word) { STOP } else { self.vocab.intern(word, &self.config.languages) };
                    tokens.push(token);
                });
            }
            ends.push(u32::try_from(tokens.len()).expect("a row's words fit in u32"));
        }
        if tokens.iter().all(|&t| t >= STOP) {
            return;
        }
        let at = row as usize;
        if self.forward.len() <= at {
            self.forward.resize(at + 1, None);
        }
        assert!(self.forward[at].is_none(), "a row indexed twice");
        let mut entry = ends.clone();
        entry.extend_from_slice(&tokens);
        self.forward[at] = Some(entry.into_boxed_slice());
        if self.content.len() <= at {
            self.content.resize(at + 1, 0);
        }
        self.content[at] = hash;
        self.rows += 1;
        let width = self.fields.len();
        if self.lengths.len() < (at + 1) * width {
            self.lengths.resize((at + 1) * width, 0);
        }
        let mut start = 0;
        for (field, &end) in ends.iter().enumerate() {
            self.field_tokens[field] += u64::from(end - start);
            self.lengths[at * width + field] = u16::try_from(end - start).unwrap_or(u16::MAX);
            start = end;
        }
        self.postings.resize_with(self.vocab.len(), PostingList::default);
        for (term, field, tf) in Self::counts(&ends, &tokens) {
            let hit = Hit { row, field, tf };
            if self.batching {
                self.pending.push((term, hit));
                if self.pending.len() >= PENDING_MAX {
                    self.flush();
                }
            } else {
                self.postings[term as usize].insert(hit);
            }
            self.hits += 1;
        }
    }

    /// Removes a row (no-op for a row with no words).
    pub fn remove(&mut self, row: u32) {
        // A row taken out in a batch (an update, a rollback) may have pending hits.
        self.flush();
        let Some(entry) = self.forward.get_mut(row as usize).and_then(Option::take) else { return };
        self.content[row as usize] = 0;
        let (ends, tokens) = entry.split_at(self.fields.len());
        self.rows -= 1;
        let mut start = 0;
        for (field, &end) in ends.iter().enumerate() {
            self.field_tokens[field] -= u64::from(end - start);
            self.lengths[row as usize * self.fields.len() + field] = 0;
            start = end;
        }
        for (term, field, _) in Self::counts(ends, tokens) {
            let removed = self.postings[term as usize].remove(row, field);
            assert!(removed, "removing an unindexed hit");
            self.hits -= 1;
        }
    }

    /// Distinct (term, field) pairs of a row with their counts, sorted.
    fn counts(ends: &[u32], tokens: &[u32]) -> Vec<(TermId, u8, u8)> {
        let mut pairs: Vec<(TermId, u8)> = Vec::with_capacity(tokens.len());
        let mut start = 0usize;
        for (field, &end) in ends.iter().enumerate() {
            let field = u8::try_from(field).expect("fields fit in a byte");
            pairs.extend(tokens[start..end as usize].iter().filter(|&&t| t < STOP).map(|&t| (t, field)));
            start = end as usize;
        }
        pairs.sort_unstable();
        let mut out: Vec<(TermId, u8, u8)> = Vec::with_capacity(pairs.len());
        for (term, field) in pairs {
            match out.last_mut() {
                Some(last) if last.0 == term && last.1 == field => last.2 = last.2.saturating_add(1),
                _ => out.push((term, field, 1)),
            }
        }
        out
    }

    /// Ends a bulk load: the trie is laid out for fast walks and spare capacity of the
    /// postings is given back.
    pub fn finish_load(&mut self) {
        self.vocab.settle();
        self.postings.iter_mut().for_each(PostingList::shrink_to_fit);
    }

    /// The hits of a word; an empty list for an id without any. Not read during a batch,
    /// whose hits are not posted yet.
    pub fn postings(&self, term: TermId) -> &PostingList {
        debug_assert!(self.pending.is_empty(), "postings read during a batch");
        static EMPTY: PostingList = PostingList::EMPTY;
        self.postings.get(term as usize).unwrap_or(&EMPTY)
    }

    /// Rows with at least one word.
    pub fn rows(&self) -> u32 {
        self.rows
    }

    /// Average words per row in a field (at least 1, so an empty field cannot divide by 0).
    pub fn average_len(&self, field: usize) -> f32 {
        (self.field_tokens[field] as f32 / self.rows.max(1) as f32).max(1.0)
    }

    /// A row's tokens per field (`STOP` and `GAP` included), or `None` for a row without
    /// words.
    pub fn row_fields(&self, row: u32) -> Option<impl Iterator<Item = &[u32]>> {
        let entry = self.forward.get(row as usize)?.as_ref()?;
        let (ends, tokens) = entry.split_at(self.fields.len());
        let mut start = 0usize;
        Some(ends.iter().map(move |&end| {
            let slice = &tokens[start..end as usize];
            start = end as usize;
            slice
        }))
    }

    /// Words in one field of a row (at most 65535: a longer field counts as that long).
    pub fn field_len(&self, row: u32, field: usize) -> u32 {
        self.lengths.get(row as usize * self.fields.len() + field).map_or(0, |&n| u32::from(n))
    }

    /// Approximate bytes held: vocabulary, postings and forward index.
    pub fn memory_bytes(&self) -> usize {
        let postings: usize =
            self.postings.iter().map(|p| p.heap_bytes() + std::mem::size_of::<PostingList>()).sum::<usize>();
        let forward: usize = self.forward.iter().flatten().map(|e| e.len() * 4 + 16).sum::<usize>()
            + self.forward.capacity() * std::mem::size_of::<Option<Box<[u32]>>>()
            + self.lengths.capacity() * 2
            + self.content.capacity() * 8;
        self.vocab.memory_bytes() + postings + forward
    }

    /// Checks that the postings hold exactly what the forward index says: each row's
    /// (word, field) pairs with their counts, and nothing else. O(size): for tests.
    pub fn verify(&self) -> Result<(), String> {
        let mut expected = 0usize;
        for (row, entry) in self.forward.iter().enumerate() {
            let Some(entry) = entry else { continue };
            let (ends, tokens) = entry.split_at(self.fields.len());
            for (term, field, tf) in Self::counts(ends, tokens) {
                expected += 1;
                let found = self.postings(term).iter().find(|h| h.row == row as u32 && h.field == field);
                if found.is_none_or(|h| h.tf != tf) {
                    return Err(format!(
                        "row {row}: word {:?} in field {field} is not posted {tf} time(s)",
                        self.vocab.word(term)
                    ));
                }
            }
        }
        let posted: usize = self.postings.iter().map(PostingList::len).sum();
        if posted != expected || posted != self.hits {
            return Err(format!("{posted} hits posted, {expected} expected, {} counted", self.hits));
        }
        Ok(())
    }

    /// Numbers for describe and metrics.
    pub fn stats(&self) -> TextStats {
        TextStats {
            rows: self.rows,
            words: self.vocab.len(),
            hits: self.hits,
            memory_bytes: self.memory_bytes(),
            typo_table_bytes: self.vocab.deletions_bytes(),
        }
    }
}

/// What a text index holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TextStats {
    /// Rows with at least one indexed word.
    pub rows: u32,
    /// Distinct words ever seen.
    pub words: usize,
    /// (row, field, word) entries in the postings.
    pub hits: usize,
    /// Approximate heap bytes the index holds.
    pub memory_bytes: usize,
    /// The part of `memory_bytes` that the vocabulary's deletion table (typos) holds.
    pub typo_table_bytes: usize,
}
