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
