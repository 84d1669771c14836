//! Query results: documents (with joined documents), totals, aggregations, explain.
//!
//! Owns: the shapes a query answers with and their JSON rendering. Documents are shared
//! stored bytes (`Arc`), so building a result copies no document.
//! Never: hold a lock or a reference into a namespace.

use serde_json::Value;
use std::sync::Arc;

/// The documents one join attached to a result document, under the join's alias.
pub type Joined = (Arc<str>, Vec<Arc<[u8]>>);

/// What a full-text query adds to a result document.
#[derive(Debug, Clone, PartialEq)]
pub struct TextExtras {
    /// The document's full-text score (BM25 with the index's ranking factors); higher
    /// is a better match.
    pub rank: f32,
    /// (field, text with matched words marked).
    pub highlight: Vec<(String, String)>,
    /// (field, fragments around matched words).
    pub snippet: Vec<(String, String)>,
}

/// One result document, the documents joined to it by join alias, and for a full-text
/// query its rank and marked text (written as `_rank`, `_highlight`, `_snippet`).
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    /// The stored document: minified JSON object text, shared with the namespace.
    pub doc: Arc<[u8]>,
    /// One entry per join of the query, in the query's order.
    pub joined: Vec<Joined>,
    /// Set only when the query has a full-text `MATCH`.
    pub text: Option<Box<TextExtras>>,
}

impl Item {
    /// The document as JSON text, joined documents nested as arrays under their alias.
    pub fn to_json(&self) -> String {
        let mut out = Vec::with_capacity(self.doc.len() + 2);
        self.write_json(&mut out);
        String::from_utf8(out).expect("stored documents are UTF-8 JSON")
    }

    /// Appends the JSON text to `out` (no parse: stored bytes are spliced).
    pub fn write_json(&self, out: &mut Vec<u8>) {
        if self.joined.is_empty() && self.text.is_none() {
            out.extend_from_slice(&self.doc);
            return;
        }
        // Stored documents are minified objects: drop the closing brace, add fields.
        let body = &self.doc[..self.doc.len() - 1];
        out.extend_from_slice(body);
        let mut first = body.len() == 1;
        for (alias, docs) in &self.joined {
            if !first {
                out.push(b',');
            }
            first = false;
            out.extend_from_slice(serde_json::to_string(alias.as_ref()).expect("a string serialises").as_bytes());
            out.extend_from_slice(b":[");
            for (i, doc) in docs.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                out.extend_from_slice(doc);
            }
            out.push(b']');
        }
        if let Some(text) = &self.text {
            let mut field = |out: &mut Vec<u8>, key: &str, value: Value| {
                if !std::mem::replace(&mut first, false) {
                    out.push(b',');
                }
                out.extend_from_slice(format!("\"{key}\":").as_bytes());
                out.extend_from_slice(value.to_string().as_bytes());
            };
            // Ranks are f32: written through f64 they would show float noise digits.
            let rank = format!("{}", text.rank).parse::<f64>().unwrap_or(0.0);
            field(out, "_rank", Value::from(rank));
            for (key, marked) in [("_highlight", &text.highlight), ("_snippet", &text.snippet)] {
                if !marked.is_empty() {
                    let object = marked.iter().map(|(f, t)| (f.clone(), Value::from(t.as_str()))).collect();
                    field(out, key, Value::Object(object));
                }
            }
        }
        out.push(b'}');
    }

    /// The document as a JSON value, as `to_json` writes it.
    pub fn value(&self) -> Value {
        serde_json::from_str(&self.to_json()).expect("results are valid JSON")
    }
}

/// One facet group: the values of the faceted fields and how many documents have them.
#[derive(Debug, Clone, PartialEq)]
pub struct FacetGroup {
    /// One value per faceted field, in the facet's field order (`null` when a document
    /// has none).
    pub values: Vec<Value>,
    /// Matching documents in the group.
    pub count: u64,
}

/// The result of one aggregation, in the order the query asked for them.
#[derive(Debug, Clone, PartialEq)]
pub enum AggregationResult {
    /// The number of matching documents.
    Count(u64),
    /// `sum`, `avg`, `min` or `max` of a field; `null` when no value was seen.
    Value {
        /// `"sum"`, `"avg"`, `"min"` or `"max"`.
        kind: &'static str,
        /// The aggregated field.
        field: String,
        /// The number, or `null`.
        value: Value,
    },
    /// A facet's groups, sorted and paged as the facet asked.
    Facet {
        /// The faceted fields.
        fields: Vec<String>,
        /// The groups of the requested page.
        groups: Vec<FacetGroup>,
        /// Groups there are in all, before the facet's offset and limit.
        groups_total: usize,
    },
    /// The distinct values of a field among the matches, in sort order.
    Distinct {
        /// The field.
        field: String,
        /// Each distinct value once (strings as the first spelling met, under the field's
        /// collation).
        values: Vec<Value>,
    },
}

/// One step of an executed plan, for `explain`.
#[derive(Debug, Clone, PartialEq)]
pub struct ExplainStep {
    /// The step's name: `plan`, `scan`, `filter`, `aggregate` or `fetch`.
    pub step: &'static str,
    /// What the step did, in words (the index used, the conditions checked, ...).
    pub detail: String,
    /// Rows the step produced, when it counts rows.
    pub rows: Option<usize>,
    /// Nanoseconds since the previous step ended (or the query began).
    pub time_ns: u64,
}

/// The plan a query ran with and what each step cost.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Explain {
    /// The steps in the order they ran.
    pub steps: Vec<ExplainStep>,
    /// Nanoseconds the whole query took.
    pub total_ns: u64,
}

impl Explain {
    /// One line per step (name, detail, rows, microseconds) and a closing total line.
    pub fn to_text(&self) -> String {
        let mut text = String::new();
        for step in &self.steps {
            let rows = step.rows.map_or(String::new(), |r| format!(" rows={r}"));
            text.push_str(&format!("{:<10} {}{} ({} µs)\n", step.step, step.detail, rows, step.time_ns / 1000));
        }
        text.push_str(&format!("total {} µs\n", self.total_ns / 1000));
        text
    }
}

/// What a query answers.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct QueryResult {
    /// The page of matching documents, in the query's sort order.
    pub items: Vec<Item>,
    /// Exact number of matches when the query asked for it.
    pub total: Option<usize>,
    /// One result per aggregation of the query, in its order.
    pub aggregations: Vec<AggregationResult>,
    /// The plan and timings, when the query asked for `explain`.
    pub explain: Option<Explain>,
}

impl QueryResult {
    /// The documents as JSON values (joined documents nested).
    pub fn values(&self) -> Vec<Value> {
        self.items.iter().map(Item::value).collect()
    }
}
