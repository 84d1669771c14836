//! Full-text conditions inside queries: `MATCH(field, 'text')`, `rank()`, highlights.
//!
//! Owns: resolving a match condition to a text index (by the index's name, or by one of
//! its fields, which then limits the search to that field), running it once while the
//! query is compiled (`TextPred`), the ranks a query's matches give each row (`Ranks`),
//! and the `_rank`, `_highlight` and `_snippet` extras of result items. Never: touch the
//! text index's data or decide the plan; to the planner a match is a ready set of rows.

use super::ast::{Highlight, Query, Snippet};
use super::result::TextExtras;
use crate::doc::{self, FieldPath};
use crate::error::{Error, Result};
use crate::namespace::NamespaceData;
use crate::text::{self, TextHits, TextIndex};
use serde_json::Value;
use std::sync::Arc;

/// The field name that sorts (and selects) by rank.
pub const RANK: &str = "rank()";

/// A compiled match condition: the index it ran on and what it found.
#[derive(Debug)]
pub(crate) struct TextPred {
    pub field: String,
    pub index: usize,
    pub hits: TextHits,
}

impl TextPred {
    /// Resolves `field` to a text index and runs the query text in `values`.
    pub fn compile(data: &NamespaceData, field: &str, values: &[Value]) -> Result<TextPred> {
        let invalid = |reason: String| Error::InvalidQuery { reason };
        let query_text = match values {
            [Value::String(text)] => text,
            _ => return Err(invalid(format!("MATCH on '{field}' takes one string: the query text"))),
        };
        let (index, mask) = resolve(data, field)?;
        let parsed = text::parse(query_text).map_err(|e| invalid(format!("full-text query for '{field}': {e}")))?;
        let text = data.indexes[index].text().expect("resolved to a text index");
        let hits =
            text::search(text, &parsed, mask).map_err(|e| invalid(format!("full-text query for '{field}': {e}")))?;
        Ok(TextPred { field: field.to_string(), index, hits })
    }

    pub fn describe(&self, data: &NamespaceData) -> String {
        format!(
            "MATCH({}) (text index '{}', {} hit(s))",
            self.field,
            data.indexes[self.index].def.name,
            self.hits.rows.len()
        )
    }
}

/// The text index a match names and the fields it searches (a bit per field): the
/// index of that name (all its fields), else the text index covering that field.
fn resolve(data: &NamespaceData, field: &str) -> Result<(usize, u64)> {
    let texts = || data.indexes.iter().enumerate().filter(|(_, i)| i.text().is_some());
    if let Some((id, _)) = texts().find(|(_, i)| i.def.name == field) {
        return Ok((id, u64::MAX));
    }
    if let Some((id, index)) = texts().find(|(_, i)| i.def.fields.iter().any(|f| f == field)) {
        let position = index.def.fields.iter().position(|f| f == field).expect("found above");
        return Ok((id, 1 << position));
    }
    let known: Vec<String> = texts().map(|(_, i)| format!("'{}' ({})", i.def.name, i.def.fields.join(", "))).collect();
    Err(Error::InvalidQuery {
        reason: if known.is_empty() {
            format!("MATCH on '{field}' needs a text index, and '{}' has none", data.name)
        } else {
            format!("no text index is named '{field}' or covers it; text indexes: {}", known.join(", "))
        },
    })
}

/// The ranks a query's match conditions give rows: the sum over the matches a row is in.
#[derive(Debug, Clone, Default)]
pub(crate) struct Ranks(pub Vec<Arc<TextPred>>);

impl Ranks {
    pub fn rank(&self, row: u32) -> f32 {
        self.0.iter().filter_map(|p| p.hits.ranks.get(&row)).fold(0.0, |sum, rank| sum + rank)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// The extras of one result row: its rank, and the highlights and snippets asked for.
pub(crate) fn extras(data: &NamespaceData, ranks: &Ranks, query: &Query, row: u32, stored: &[u8]) -> TextExtras {
    let mut extras = TextExtras { rank: ranks.rank(row), highlight: Vec::new(), snippet: Vec::new() };
    if query.highlight.is_none() && query.snippet.is_none() {
        return extras;
    }
    let document = doc::decode(stored);
    if let Some(Highlight { fields, markers }) = &query.highlight {
        for (field, index, pred) in marked_fields(data, ranks, fields) {
            if let Some(text) = field_text(&document, field) {
                extras
                    .highlight
                    .push((field.to_string(), text::markup::highlight(&text, index, &pred.hits.terms, markers)));
            }
        }
    }
    if let Some(Snippet { fields, markers, around, fragments, separator }) = &query.snippet {
        for (field, index, pred) in marked_fields(data, ranks, fields) {
            if let Some(text) = field_text(&document, field) {
                let cut =
                    text::markup::snippet(&text, index, &pred.hits.terms, markers, *around, *fragments, separator);
                extras.snippet.push((field.to_string(), cut));
            }
        }
    }
    extras
}

/// The fields to mark with the match whose index covers each: the named ones, or every
/// field of the matched indexes.
fn marked_fields<'a>(
    data: &'a NamespaceData,
    ranks: &'a Ranks,
    fields: &'a [String],
) -> Vec<(&'a str, &'a TextIndex, &'a TextPred)> {
    let mut out = Vec::new();
    for pred in &ranks.0 {
        let index = &data.indexes[pred.index];
        let text = index.text().expect("matches run on text indexes");
        for field in &index.def.fields {
            let wanted = fields.is_empty() || fields.contains(field);
            if wanted && !out.iter().any(|(f, _, _)| *f == field.as_str()) {
                out.push((field.as_str(), text, pred.as_ref()));
            }
        }
    }
    out
}

/// A field's text: a string, or the strings of an array joined by spaces.
fn field_text(document: &Value, field: &str) -> Option<String> {
    let (values, _) = doc::field_values(document, &FieldPath::new(field));
    let strings: Vec<&str> = values.iter().filter_map(|v| v.as_str()).collect();
    (!strings.is_empty()).then(|| strings.join(" "))
}
