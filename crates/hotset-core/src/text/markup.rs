//! Highlights and snippets: a field's text with the words a query matched marked.
//!
//! Owns: finding the matched words in a text again (by folding each word and looking it
//! up, so every form the query expanded to is marked, typos and stems included), wrapping
//! them in markers, and cutting snippets: the text around the matches, a few words each
//! side, joined by a separator. Never: search, or escape text (the caller's format decides
//! what escaping means; markers are inserted as given).

use super::fold::words;
use super::index::TextIndex;
use super::vocab::TermId;

type Terms = hashbrown::HashSet<TermId, ahash::RandomState>;

/// What to wrap matched words in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Markers {
    /// Inserted before each matched word, as given (not escaped).
    pub pre: String,
    /// Inserted after each matched word.
    pub post: String,
}

impl Default for Markers {
    fn default() -> Markers {
        Markers { pre: "<b>".to_string(), post: "</b>".to_string() }
    }
}

/// Byte ranges of the words of `text` that are among `terms`, and the ranges of all words.
fn matched(text: &str, index: &TextIndex, terms: &Terms) -> (Vec<(usize, usize)>, Vec<bool>) {
    let mut spans = Vec::new();
    let mut hit = Vec::new();
    for word in words(text) {
        spans.push((word.start, word.end));
        hit.push(index.vocab.get(&word.text).is_some_and(|id| terms.contains(&id)));
    }
    (spans, hit)
}

/// Appends `text[from..to]` with the matched words inside it wrapped in markers.
fn marked(
    out: &mut String,
    text: &str,
    range: (usize, usize),
    spans: &[(usize, usize)],
    hit: &[bool],
    markers: &Markers,
) {
    let mut at = range.0;
    for (&(start, end), _) in
        spans.iter().zip(hit).filter(|(span, hit)| **hit && span.0 >= range.0 && span.1 <= range.1)
    {
        out.push_str(&text[at..start]);
        out.push_str(&markers.pre);
        out.push_str(&text[start..end]);
        out.push_str(&markers.post);
        at = end;
    }
    out.push_str(&text[at..range.1]);
}

/// The whole text with matched words marked.
pub fn highlight(text: &str, index: &TextIndex, terms: &Terms, markers: &Markers) -> String {
    let (spans, hit) = matched(text, index, terms);
    let mut out = String::with_capacity(text.len() + 16);
    marked(&mut out, text, (0, text.len()), &spans, &hit, markers);
    out
}

/// Fragments of the text around matched words (`around` words each side, overlapping
/// fragments merged, at most `fragments` of them), marked and joined by `separator`.
/// A text without a match gives its first `2 * around + 1` words.
pub fn snippet(
    text: &str,
    index: &TextIndex,
    terms: &Terms,
    markers: &Markers,
    around: usize,
    fragments: usize,
    separator: &str,
) -> String {
    let (spans, hit) = matched(text, index, terms);
    if spans.is_empty() {
        return String::new();
    }
    let mut windows: Vec<(usize, usize)> = Vec::new();
    for (i, _) in hit.iter().enumerate().filter(|(_, h)| **h) {
        let (first, last) = (i.saturating_sub(around), (i + around).min(spans.len() - 1));
        match windows.last_mut() {
            Some(window) if first <= window.1 + 1 => window.1 = last,
            _ => windows.push((first, last)),
        }
    }
    if windows.is_empty() {
        windows.push((0, (2 * around).min(spans.len() - 1)));
    }
    windows.truncate(fragments.max(1));
    let mut out = String::new();
    for (n, (first, last)) in windows.into_iter().enumerate() {
        if n > 0 {
            out.push_str(separator);
        }
        marked(&mut out, text, (spans[first].0, spans[last].1), &spans, &hit, markers);
    }
    out
}
