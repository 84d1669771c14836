//! Running a parsed full-text query against a text index: matching and ranking.
//!
//! Owns: expanding each query word into the index words it stands for, each with the
//! factor its kind of match scores with (exact 1; same stem, prefix, suffix, typo,
//! synonym, transliteration, keyboard layout below 1, see `Ranking`); phrase checks on
//! the forward index; required and excluded elements; and the rank of each hit:
//! BM25 per field, times field weights and boosts, summed over the query's elements,
//! times a proximity factor for rows where the query's words stand close together.
//! Never: read documents, or decide the page (the executor sorts and pages by rank).

use super::index::{GAP, STOP, TextIndex};
use super::lang::{swap_layout, transliterate};
use super::parse::{Element, Presence, QueryWord, TextQuery, automatic_typos};
use super::vocab::TermId;
use roaring::RoaringBitmap;

type Map<K, V> = hashbrown::HashMap<K, V, ahash::RandomState>;

/// Most index words one prefix or suffix word stands for (the shortest first).
pub const EXPANSIONS_MAX: usize = 256;

/// The rows a full-text condition matched, each with its rank, and the index words that
/// matched (for highlighting).
#[derive(Debug, Clone, Default)]
pub struct TextHits {
    /// The matched rows.
    pub rows: RoaringBitmap,
    /// Each matched row's rank (higher is better).
    pub ranks: Map<u32, f32>,
    /// The index words that matched, every form the query expanded to.
    pub terms: hashbrown::HashSet<TermId, ahash::RandomState>,
}

/// Index words a query word stands for, with the factor of each (the best kept).
type Expansion = Map<TermId, f32>;

struct Searcher<'a> {
    index: &'a TextIndex,
    /// Fields searched unless an element names its own.
    default_fields: u64,
}

/// Runs `query` on `index`, over the fields in `fields` (a bit per field of the index).
/// Fails when an element names a field the index does not cover.
pub fn search(index: &TextIndex, query: &TextQuery, fields: u64) -> Result<TextHits, String> {
    let searcher = Searcher { index, default_fields: fields };
    let mut total: Map<u32, (f32, u64)> = Map::default();
    let mut required = 0u64;
    let mut excluded = RoaringBitmap::new();
    let mut hits = TextHits::default();
    let mut positives: Vec<(usize, Vec<Expansion>)> = Vec::new();
    // The common query of one word: its scores are the ranks, no merging needed.
    let single = query.elements.len() == 1 && query.elements[0].presence != Presence::Excluded;
    for (number, element) in query.elements.iter().enumerate().take(super::parse::ELEMENTS_MAX) {
        if !element.phrase && index.is_stop_word(&element.words[0].text) {
            continue;
        }
        let boosts = searcher.boosts(element)?;
        let expansions: Vec<Expansion> =
            element.words.iter().map(|w| searcher.expand(w, element.presence != Presence::Excluded)).collect();
        let scores = if element.phrase {
            searcher.phrase(element, &expansions, &boosts)
        } else {
            searcher.term(&expansions[0], &boosts)
        };
        match element.presence {
            Presence::Excluded => excluded.extend(scores.keys().copied()),
            _ if single => {
                hits.terms.extend(expansions.iter().flat_map(|e| e.keys().copied()));
                let mut rows: Vec<u32> = scores.keys().copied().collect();
                rows.sort_unstable();
                hits.rows = RoaringBitmap::from_sorted_iter(rows).expect("sorted above");
                hits.ranks = scores;
                if element.boost != 1.0 {
                    hits.ranks.values_mut().for_each(|rank| *rank *= element.boost);
                }
                return Ok(hits);
            }
            presence => {
                if presence == Presence::Required {
                    required |= 1 << number;
                }
                total.reserve(scores.len());
                for (row, score) in scores {
                    let entry = total.entry(row).or_insert((0.0, 0));
                    entry.0 += score * element.boost;
                    entry.1 |= 1 << number;
                }
                hits.terms.extend(expansions.iter().flat_map(|e| e.keys().copied()));
                positives.push((number, expansions));
            }
        }
    }
    let proximity = index.config.ranking.proximity;
    let mut rows: Vec<u32> = Vec::with_capacity(total.len());
    for (row, (score, matched)) in total {
        if matched & required != required || excluded.contains(row) {
            continue;
        }
        let close = if proximity > 0.0 && matched.count_ones() > 1 {
            searcher.closeness(row, matched, &positives)
        } else {
            0.0
        };
        hits.ranks.insert(row, score * (1.0 + proximity * close));
        rows.push(row);
    }
    rows.sort_unstable();
    hits.rows = RoaringBitmap::from_sorted_iter(rows).expect("sorted above");
    Ok(hits)
}

impl Searcher<'_> {
    /// Per-field boosts of an element (0 for a field it does not search).
    fn boosts(&self, element: &Element) -> Result<Vec<f32>, String> {
        let fields = &self.index.fields;
        if element.fields.is_empty() {
            return Ok((0..fields.len())
                .map(|f| if self.default_fields & (1 << f) != 0 { 1.0 } else { 0.0 })
                .collect());
        }
        let mut boosts = vec![0.0; fields.len()];
        for (name, boost) in &element.fields {
            let position = fields
                .iter()
                .position(|f| f == name)
                .ok_or_else(|| format!("'@{name}': the text index covers {}", fields.join(", ")))?;
            boosts[position] = *boost;
        }
        Ok(boosts)
    }

    /// The index words a query word stands for. `loose` adds synonyms, typos,
    /// transliteration and layout; excluded words take exact forms and stems only.
    fn expand(&self, word: &QueryWord, loose: bool) -> Expansion {
        let index = self.index;
        let vocab = &index.vocab;
        let ranking = &index.config.ranking;
        let languages = &index.config.languages;
        let mut out = Expansion::default();
        if index.is_stop_word(&word.text) {
            // Only phrases ask for stop words: they hold a place there.
            out.insert(STOP, 1.0);
            return out;
        }
        let mut add = |out: &mut Expansion, id: TermId, factor: f32| {
            let best = out.entry(id).or_insert(0.0);
            *best = best.max(factor);
        };
        if word.prefix || word.suffix {
            let mut found: Vec<TermId> = Vec::new();
            match (word.prefix, word.suffix) {
                (true, true) => {
                    found.extend((0..vocab.len() as TermId).filter(|&id| vocab.word(id).contains(word.text.as_str())))
                }
                (true, false) => vocab.with_prefix(&word.text, |id| found.push(id)),
                _ => vocab.with_suffix(&word.text, |id| found.push(id)),
            }
            found.retain(|&id| !index.postings(id).is_empty());
            found.sort_by_key(|&id| (vocab.word(id).len(), std::cmp::Reverse(index.postings(id).len())));
            found.truncate(EXPANSIONS_MAX);
            let kind = if word.prefix { ranking.prefix } else { ranking.suffix };
            let asked = word.text.chars().count() as f32;
            for id in found {
                let length = vocab.word(id).chars().count() as f32;
                let factor = if length <= asked { 1.0 } else { kind * (0.5 + 0.5 * asked / length) };
                add(&mut out, id, factor);
            }
            return out;
        }
        let exact_and_stems =
            |out: &mut Expansion, text: &str, factor: f32, add: &mut dyn FnMut(&mut Expansion, TermId, f32)| {
                if let Some(id) = vocab.get(text) {
                    add(out, id, factor);
                }
                for &id in vocab.same_stem(text, languages) {
                    add(out, id, factor * ranking.stem);
                }
            };
        exact_and_stems(&mut out, &word.text, 1.0, &mut add);
        if !loose {
            return out;
        }
        for group in index.config.synonyms.iter().filter(|g| g.contains(&word.text)) {
            for synonym in group.iter().filter(|s| **s != word.text) {
                exact_and_stems(&mut out, synonym, ranking.synonym, &mut add);
            }
        }
        let mut alternates: Vec<(String, f32)> = Vec::new();
        if let Some(other) = transliterate(&word.text) {
            alternates.push((other, ranking.translit));
        }
        if let Some(swapped) = swap_layout(&word.raw) {
            let swapped = super::fold::fold(&swapped);
            if !alternates.iter().any(|(a, _)| *a == swapped) {
                alternates.push((swapped, ranking.layout));
            }
        }
        for (alternate, factor) in &alternates {
            exact_and_stems(&mut out, alternate, *factor, &mut add);
        }
        let known = out.keys().any(|&id| !index.postings(id).is_empty());
        let limit = match word.typos {
            Some(limit) => limit,
            None if index.config.typos && !known => automatic_typos(&word.text),
            None => 0,
        };
        if limit > 0 {
            self.typos(&mut out, &word.text, limit, 1.0, &mut add);
        }
        if limit > 0 || (word.typos.is_none() && index.config.typos && !known) {
            // Transliteration is ambiguous (`y`: ы or й; `e`: е or э): allow one slip.
            for (alternate, factor) in &alternates {
                if alternate.chars().count() >= 5 {
                    self.typos(&mut out, alternate, 1, *factor, &mut add);
                }
            }
        }
        out
    }

    /// Adds the words within `limit` edits of `text` (and their stem groups).
    fn typos(
        &self,
        out: &mut Expansion,
        text: &str,
        limit: u8,
        factor: f32,
        add: &mut dyn FnMut(&mut Expansion, TermId, f32),
    ) {
        let vocab = &self.index.vocab;
        let ranking = &self.index.config.ranking;
        let mut found: Vec<(TermId, u8)> = Vec::new();
        vocab.within_edits(text, limit, |id, edits| {
            if edits > 0 {
                found.push((id, edits));
            }
        });
        for (id, edits) in found {
            let typo = factor * ranking.typo.powi(i32::from(edits));
            add(out, id, typo);
            for &other in vocab.stem_group(id) {
                add(out, other, typo * ranking.stem);
            }
        }
    }

    /// The inverse document frequency of a word found in `documents` rows.
    fn idf(&self, documents: usize) -> f32 {
        let n = self.index.rows() as f32;
        let df = documents as f32;
        (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
    }

    /// BM25 of one hit, given its word's idf.
    fn bm25(&self, tf: u8, row: u32, field: usize, idf: f32) -> f32 {
        let ranking = &self.index.config.ranking;
        let len = self.index.field_len(row, field) as f32;
        let norm = 1.0 - ranking.b + ranking.b * len / self.index.average_len(field);
        let tf = f32::from(tf);
        idf * tf * (ranking.k1 + 1.0) / (tf + ranking.k1 * norm)
    }

    /// Scores of the rows matching one word: per field, its best expansion there; the
    /// fields summed. Every expansion is scored with one idf, that of the most common
    /// among them: a rare misspelling or word form must not outweigh the word asked for
    /// by being rare (its factor already says how good a match it is).
    fn term(&self, expansion: &Expansion, boosts: &[f32]) -> Map<u32, f32> {
        let weights = &self.index.config.weights;
        let idf = self.idf(expansion.keys().map(|&id| self.index.postings(id).len()).max().unwrap_or(0));
        let hits: usize = expansion.keys().map(|&id| self.index.postings(id).len()).sum();
        if let [weight] = weights[..] {
            // One field: a row's best expansion is its score, no per-field step.
            let mut scores: Map<u32, f32> = Map::with_capacity_and_hasher(hits, Default::default());
            if boosts[0] == 0.0 {
                return scores;
            }
            for (&id, &factor) in expansion {
                let scale = factor * boosts[0] * weight;
                for hit in self.index.postings(id) {
                    let score = scale * self.bm25(hit.tf, hit.row, 0, idf);
                    let best = scores.entry(hit.row).or_insert(0.0);
                    *best = best.max(score);
                }
            }
            return scores;
        }
        let mut per_field: Map<u64, f32> = Map::with_capacity_and_hasher(hits, Default::default());
        for (&id, &factor) in expansion {
            for hit in self.index.postings(id) {
                let field = hit.field as usize;
                let boost = boosts[field];
                if boost == 0.0 {
                    continue;
                }
                let score = factor * boost * weights[field] * self.bm25(hit.tf, hit.row, field, idf);
                let best = per_field.entry(u64::from(hit.row) << 8 | u64::from(hit.field)).or_insert(0.0);
                *best = best.max(score);
            }
        }
        let mut scores: Map<u32, f32> = Map::with_capacity_and_hasher(per_field.len(), Default::default());
        for (key, score) in per_field {
            *scores.entry((key >> 8) as u32).or_insert(0.0) += score;
        }
        scores
    }

    /// Scores of the rows where the phrase's words stand in order (with at most `slop`
    /// other words between neighbours) in one searched field.
    fn phrase(&self, element: &Element, expansions: &[Expansion], boosts: &[f32]) -> Map<u32, f32> {
        let mut scores: Map<u32, f32> = Map::default();
        let Some(candidates) = expansions
            .iter()
            .filter(|e| !e.contains_key(&STOP))
            .map(|e| {
                let mut rows = RoaringBitmap::new();
                for &id in e.keys() {
                    rows.extend(self.index.postings(id).iter().map(|h| h.row));
                }
                rows
            })
            .reduce(|a, b| a & b)
        else {
            return scores;
        };
        let weights = &self.index.config.weights;
        let idf = self.idf(candidates.len() as usize);
        for row in candidates {
            let Some(fields) = self.index.row_fields(row) else { continue };
            let mut sum = 0.0f32;
            for (field, tokens) in fields.enumerate() {
                if boosts[field] == 0.0 {
                    continue;
                }
                let (count, factor) = occurrences(tokens, expansions, element.slop);
                if count > 0 {
                    let score = factor
                        * boosts[field]
                        * weights[field]
                        * expansions.len() as f32
                        * self.bm25(count.min(255) as u8, row, field, idf);
                    sum += score;
                }
            }
            if sum > 0.0 {
                scores.insert(row, sum);
            }
        }
        scores
    }

    /// How close together the matched elements' words stand in a row: the mean, over
    /// neighbouring elements (in query order) that both matched, of 1 / the smallest
    /// distance between their words in one field. 1 when every neighbour is adjacent.
    fn closeness(&self, row: u32, matched: u64, positives: &[(usize, Vec<Expansion>)]) -> f32 {
        let present: Vec<&(usize, Vec<Expansion>)> =
            positives.iter().filter(|(number, _)| matched & (1 << number) != 0).collect();
        if present.len() < 2 {
            return 0.0;
        }
        let Some(fields) = self.index.row_fields(row) else { return 0.0 };
        let mut nearest = vec![u32::MAX; present.len() - 1];
        let mut last = vec![None::<u32>; present.len()];
        for tokens in fields {
            last.iter_mut().for_each(|l| *l = None);
            for (position, &token) in tokens.iter().enumerate() {
                if token >= STOP {
                    continue;
                }
                let position = position as u32;
                for (slot, (_, expansions)) in present.iter().enumerate() {
                    if !expansions.iter().any(|e| e.contains_key(&token)) {
                        continue;
                    }
                    for neighbour in [slot.wrapping_sub(1), slot + 1] {
                        if let Some(Some(seen)) = last.get(neighbour) {
                            let pair = slot.min(neighbour);
                            nearest[pair] = nearest[pair].min(position - seen);
                        }
                    }
                    last[slot] = Some(position);
                }
            }
        }
        nearest.iter().map(|&d| if d == u32::MAX { 0.0 } else { 1.0 / d.max(1) as f32 }).sum::<f32>()
            / nearest.len() as f32
    }
}

/// Occurrences of a phrase in one field's tokens, and the best factor among them: the
/// product of each word's expansion factor, divided by one plus the number of other
/// words standing between the phrase's words (an exact phrase beats a loose one).
fn occurrences(tokens: &[u32], expansions: &[Expansion], slop: u32) -> (u32, f32) {
    let (mut count, mut best) = (0u32, 0.0f32);
    let factor = |token: u32, i: usize| expansions[i].get(&token).copied();
    for start in 0..tokens.len() {
        let Some(first) = factor(tokens[start], 0) else { continue };
        let mut product = first;
        let mut at = start;
        let mut complete = true;
        for i in 1..expansions.len() {
            let window = (at + 1)..(at + 2 + slop as usize).min(tokens.len());
            match window.clone().find_map(|p| {
                if tokens[p] == GAP {
                    return Some(None);
                }
                factor(tokens[p], i).map(|f| Some((p, f)))
            }) {
                Some(Some((p, f))) => {
                    product *= f;
                    at = p;
                }
                _ => {
                    complete = false;
                    break;
                }
            }
        }
        if complete {
            count += 1;
            let between = (at - start + 1 - expansions.len()) as f32;
            best = best.max(product / (1.0 + between));
        }
    }
    (count, best)
}
