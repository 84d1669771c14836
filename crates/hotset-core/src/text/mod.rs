//! Full-text search: the `text` index and its query language.
//!
//! Owns: everything between text and ranked rows: words (`fold`), languages (`lang`),
//! the options of an index (`config`), the vocabulary (`vocab`, with its `trie` and its
//! table of `deletions` for typos), the inverted and forward indexes kept in step with
//! rows (`index`), the query language (`parse`), matching and
//! ranking (`search`) and highlighting (`markup`). Never: know about namespaces, locks or
//! documents; the namespace feeds rows in and the executor asks for hits.

pub mod config;
pub mod deletions;
pub mod fold;
pub mod index;
pub mod lang;
pub mod markup;
pub mod parse;
pub mod posting_list;
pub mod search;
pub mod trie;
pub mod vocab;

pub use config::{Ranking, StopWords, TextConfig};
pub use index::{TextIndex, TextStats};
pub use lang::Language;
pub use markup::Markers;
pub use parse::{TextQuery, parse};
pub use search::{TextHits, search};

#[cfg(test)]
mod tests;

/// The definition typo lookups are checked against in tests: optimal string alignment
/// distance (insertions, deletions, substitutions, adjacent swaps) by plain dynamic
/// programming over the whole table.
#[cfg(test)]
pub(crate) fn osa_distance(a: &[char], b: &[char]) -> usize {
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
