//! Full-text search across several namespaces, merged by rank.
//!
//! Owns: `Search` (query text, the namespaces and the text index of each, paging,
//! markup, and each namespace's own filter), its JSON form, and running it: one ranked
//! query per namespace, the pages merged best rank first, totals summed. Never: compare
//! ranks in any other way than as numbers; each namespace ranks by its own statistics.
//!
//! ```json
//! {"query": "wireless headphones", "namespaces": ["products", {"name": "articles",
//!   "field": "body", "filter": {"field": "published", "op": "=", "value": true}}],
//!  "offset": 0, "limit": 10, "highlight": true, "snippet": {"around": 8}}
//! ```

use super::Database;
use crate::error::{Error, Result};
use crate::query::{Cond, Highlight, Item, Query, Snippet, dsl};
use serde_json::{Map, Value, json};

/// One namespace of a search.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchTarget {
    /// The namespace searched.
    pub namespace: String,
    /// The text index (or one of its fields) to search; `None`: the namespace's only
    /// text index.
    pub field: Option<String>,
    /// Further conditions for this namespace.
    pub filter: Option<Cond>,
}

/// A search over several namespaces.
#[derive(Debug, Clone, PartialEq)]
pub struct Search {
    /// The query text, in the full-text query language (`text::parse`).
    pub text: String,
    /// The namespaces searched (at least one); rank ties keep this order.
    pub targets: Vec<SearchTarget>,
    /// Merged hits skipped before the first one returned.
    pub offset: usize,
    /// Most hits returned (10 in the JSON form when not given).
    pub limit: usize,
    /// Mark matched words in whole fields of each hit.
    pub highlight: Option<Highlight>,
    /// Cut the text around matched words of each hit.
    pub snippet: Option<Snippet>,
    /// Most time each namespace's query may run (`Query::timeout`).
    pub timeout: Option<std::time::Duration>,
}

/// The merged page: each item with the namespace it came from, and the total of hits.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchResult {
    /// The page of hits, best rank first, each with its namespace's name.
    pub items: Vec<(String, Item)>,
    /// Hits in all the namespaces together, before paging.
    pub total: usize,
}

impl SearchResult {
    /// `{"items": [{...document, "_namespace": "ns", "_rank": r}], "total": n}`.
    pub fn to_json(&self) -> Value {
        let items: Vec<Value> = self
            .items
            .iter()
            .map(|(namespace, item)| {
                let mut value = item.value();
                if let Some(object) = value.as_object_mut() {
                    object.insert("_namespace".into(), json!(namespace));
                }
                value
            })
            .collect();
        json!({"items": items, "total": self.total})
    }
}

impl Database {
    /// Runs a search: every namespace's best `offset + limit` hits, merged by rank.
    pub fn search(&self, search: &Search) -> Result<SearchResult> {
        if search.targets.is_empty() {
            return Err(Error::InvalidQuery { reason: "a search names at least one namespace".to_string() });
        }
        let window = search.offset.saturating_add(search.limit);
        let mut merged: Vec<(f32, usize, usize, String, Item)> = Vec::new();
        let mut total = 0;
        for (order, target) in search.targets.iter().enumerate() {
            let field = match &target.field {
                Some(field) => field.clone(),
                None => self.only_text_index(&target.namespace)?,
            };
            let mut query = Query::new(&target.namespace).matching(&field, &search.text).limit(window).with_total();
            if let Some(filter) = &target.filter {
                query = query.filter(filter.clone());
            }
            query.timeout = search.timeout;
            query.highlight = search.highlight.clone();
            query.snippet = search.snippet.clone();
            let result = self.query(&query)?;
            total += result.total.unwrap_or(0);
            for (position, item) in result.items.into_iter().enumerate() {
                let rank = item.text.as_ref().map_or(0.0, |t| t.rank);
                merged.push((rank, order, position, target.namespace.clone(), item));
            }
        }
        // Best rank first; ties keep the namespaces' order, then each one's own order.
        merged.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
        let items = merged.into_iter().skip(search.offset).take(search.limit).map(|(_, _, _, ns, item)| (ns, item));
        Ok(SearchResult { items: items.collect(), total })
    }

    /// The name of a namespace's text index when it has exactly one.
    fn only_text_index(&self, namespace: &str) -> Result<String> {
        let info = self.describe(namespace)?;
        let texts: Vec<&str> = info.text.iter().map(|(name, _)| name.as_str()).collect();
        match texts.as_slice() {
            [only] => Ok(only.to_string()),
            [] => Err(Error::InvalidQuery { reason: format!("namespace '{namespace}' has no text index to search") }),
            several => Err(Error::InvalidQuery {
                reason: format!("namespace '{namespace}' has several text indexes ({}); name one", several.join(", ")),
            }),
        }
    }
}

impl Search {
    /// Reads the JSON form (see the module's doc); errors name the offending key.
    pub fn from_json(value: &Value) -> Result<Search> {
        let invalid = |path: &str, reason: &str| Error::InvalidQuery { reason: format!("{path}: {reason}") };
        let object = value.as_object().ok_or_else(|| invalid("search", "must be a JSON object"))?;
        const KNOWN: [&str; 6] = ["query", "namespaces", "offset", "limit", "highlight", "snippet"];
        if let Some(unknown) = object.keys().find(|k| !KNOWN.contains(&k.as_str())) {
            return Err(invalid(unknown, "unknown key"));
        }
        let text = object.get("query").and_then(Value::as_str).ok_or_else(|| invalid("query", "must be a string"))?;
        let list = object.get("namespaces").and_then(Value::as_array).ok_or_else(|| {
            invalid("namespaces", "must be a list of names or {\"name\", \"field\", \"filter\"} objects")
        })?;
        let targets = list
            .iter()
            .enumerate()
            .map(|(i, entry)| {
                let path = format!("namespaces[{i}]");
                match entry {
                    Value::String(name) => Ok(SearchTarget { namespace: name.clone(), field: None, filter: None }),
                    Value::Object(target) => target_from_json(target, &path),
                    _ => Err(invalid(&path, "must be a name or an object")),
                }
            })
            .collect::<Result<Vec<_>>>()?;
        let count = |key: &str, default: usize| -> Result<usize> {
            match object.get(key) {
                None => Ok(default),
                Some(v) => {
                    v.as_u64().map(|n| n as usize).ok_or_else(|| invalid(key, "must be a whole number, 0 or more"))
                }
            }
        };
        // The markup options read exactly as a query's do.
        let mut markup = Map::new();
        markup.insert("namespace".into(), json!("-"));
        for key in ["highlight", "snippet"] {
            if let Some(value) = object.get(key) {
                markup.insert(key.into(), value.clone());
            }
        }
        let shaped = dsl::query_from_json(&Value::Object(markup), None)?;
        Ok(Search {
            text: text.to_string(),
            targets,
            offset: count("offset", 0)?,
            limit: count("limit", 10)?,
            highlight: shaped.highlight,
            snippet: shaped.snippet,
            timeout: None,
        })
    }
}

fn target_from_json(target: &Map<String, Value>, path: &str) -> Result<SearchTarget> {
    let invalid = |key: &str, reason: &str| Error::InvalidQuery { reason: format!("{path}.{key}: {reason}") };
    if let Some(unknown) = target.keys().find(|k| !["name", "field", "filter"].contains(&k.as_str())) {
        return Err(invalid(unknown, "unknown key"));
    }
    let namespace = target.get("name").and_then(Value::as_str).ok_or_else(|| invalid("name", "must be a string"))?;
    let field = match target.get("field") {
        None => None,
        Some(Value::String(field)) => Some(field.clone()),
        Some(_) => return Err(invalid("field", "must be a string")),
    };
    let filter = match target.get("filter") {
        None => None,
        Some(filter) => {
            let shaped = dsl::query_from_json(&json!({"namespace": namespace, "filter": filter}), None)?;
            shaped.filter
        }
    };
    Ok(SearchTarget { namespace: namespace.to_string(), field, filter })
}
