//! `hotset.Query`: the query builder, one method per part of the engine's query.
//!
//! Owns: building a `hotset_core::Query` from Python calls (each returns the builder, so
//! calls chain), checking what Python passed (operator names, how many values an
//! operator takes) with errors that say what is wrong, and running it (without the GIL).
//! Never: plan or run anything itself: the embedded engine, or the server through the
//! JSON DSL (`dsl::query_to_json`), does.

use crate::backend::Backend;
use crate::convert::{to_value, value_to_py};
use crate::errors::failure;
use crate::result::QueryResult;
use hotset_core::error::ErrorCode;
use hotset_core::query::{Aggregation, Facet, Highlight, JoinKind, Snippet, SortKey, dsl};
use hotset_core::text::Markers;
use hotset_core::{Cond, Op};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};
use serde_json::{Value, json};
use std::sync::Arc;

/// A query on one namespace, built by chaining calls and run by `execute()`.
///
/// ```python
/// db.query("items").where("year", ">", 2010).where("name", "=", "x") \
///   .sort("year").limit(10).offset(0).total().execute()
/// ```
#[pyclass(module = "hotset")]
pub struct Query {
    backend: Arc<Backend>,
    pub query: hotset_core::Query,
    /// Live-sync positions to wait for before the query runs (`after`): source, position.
    after: Vec<(String, String)>,
}

impl Query {
    pub fn new(backend: Arc<Backend>, namespace: &str) -> Query {
        Query { backend, query: hotset_core::Query::new(namespace), after: Vec::new() }
    }
}

/// A query the builder refuses itself: the class and code the engine gives a bad query.
fn invalid(reason: impl Into<String>) -> PyErr {
    crate::errors::of_code(ErrorCode::BadQuery, reason.into())
}

/// `field op value` as a condition, with the value shaped as the operator takes it.
fn condition(field: &str, op: &str, value: Option<&Bound<'_, PyAny>>) -> PyResult<Cond> {
    let op = Op::parse(op).ok_or_else(|| {
        invalid(format!(
            "unknown operator '{op}' (expected =, !=, <, <=, >, >=, in, allset, range, like, match, empty, any)"
        ))
    })?;
    let value = value.filter(|v| !v.is_none()).map(to_value).transpose()?;
    let values = match (op, value) {
        (Op::Empty | Op::Any, None) => Vec::new(),
        (Op::Empty | Op::Any, Some(_)) => return Err(invalid(format!("{} takes no value", op.name()))),
        (Op::In | Op::AllSet, Some(Value::Array(items))) => items,
        (Op::In | Op::AllSet, Some(one)) => vec![one],
        (Op::Range, Some(Value::Array(bounds))) if bounds.len() == 2 => bounds,
        (Op::Range, _) => return Err(invalid("RANGE takes two values (low, high)")),
        (_, Some(Value::Array(_))) => {
            return Err(invalid(format!("{} takes one value, not a list (use 'in' for any of several)", op.name())));
        }
        (_, Some(one)) => vec![one],
        (_, None) => return Err(invalid(format!("{} takes a value", op.name()))),
    };
    if field.is_empty() {
        return Err(invalid("a condition needs a field name"));
    }
    Ok(Cond::Field { field: field.to_string(), op, values })
}

/// A condition given as a tuple `(field, op[, value])` or a JSON DSL dict
/// (`{"or": [...]}`, `{"not": {...}}`, `{"field": .., "op": .., "value": ..}`).
fn any_condition(namespace: &str, item: &Bound<'_, PyAny>) -> PyResult<Cond> {
    if let Ok(tuple) = item.cast::<PyTuple>() {
        let field: String = tuple.get_item(0)?.extract()?;
        let op: String = tuple.get_item(1)?.extract()?;
        return match tuple.len() {
            2 => condition(&field, &op, None),
            3 => condition(&field, &op, Some(&tuple.get_item(2)?)),
            n => Err(invalid(format!("a condition tuple is (field, op) or (field, op, value), got {n} items"))),
        };
    }
    if item.cast::<PyDict>().is_ok() {
        let wrapped = json!({"namespace": namespace, "filter": to_value(item)?});
        return dsl::query_from_json(&wrapped, None)
            .map_err(crate::errors::engine)?
            .filter
            .ok_or_else(|| invalid("an empty condition"));
    }
    Err(invalid("a condition is a (field, op, value) tuple or a dict in the JSON query form"))
}

fn markers(pre: Option<String>, post: Option<String>) -> Markers {
    let default = Markers::default();
    Markers { pre: pre.unwrap_or(default.pre), post: post.unwrap_or(default.post) }
}

fn sort_key(text: &str) -> SortKey {
    match text.strip_prefix('-') {
        Some(field) => SortKey { field: field.to_string(), desc: true },
        None => SortKey { field: text.to_string(), desc: false },
    }
}

#[pymethods]
impl Query {
    /// Adds `field op value`, ANDed with the conditions so far. `op` is the SQL operator:
    /// `=`, `!=`, `<`, `<=`, `>`, `>=`, `in` and `allset` (a list), `range` (low, high),
    /// `like` (a pattern with `%` and `_`), `match` (full-text), `empty` and `any` (no
    /// value).
    #[pyo3(name = "where", signature = (field, op, value = None))]
    fn where_<'py>(
        slf: Bound<'py, Self>,
        field: &str,
        op: &str,
        value: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, Self>> {
        let cond = condition(field, op, value.as_ref())?;
        and_filter(&slf, cond);
        Ok(slf)
    }

    /// Adds NOT (`field op value`).
    #[pyo3(signature = (field, op, value = None))]
    fn where_not<'py>(
        slf: Bound<'py, Self>,
        field: &str,
        op: &str,
        value: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, Self>> {
        let cond = condition(field, op, value.as_ref())?.not();
        and_filter(&slf, cond);
        Ok(slf)
    }

    /// Adds an OR of conditions: each a `(field, op, value)` tuple or a JSON DSL dict.
    #[pyo3(signature = (*conditions))]
    fn where_any<'py>(slf: Bound<'py, Self>, conditions: Bound<'py, PyTuple>) -> PyResult<Bound<'py, Self>> {
        let namespace = slf.borrow().query.namespace.clone();
        let conds = conditions.iter().map(|c| any_condition(&namespace, &c)).collect::<PyResult<Vec<_>>>()?;
        if conds.is_empty() {
            return Err(invalid("where_any needs at least one condition"));
        }
        and_filter(&slf, Cond::Or(conds));
        Ok(slf)
    }

    /// Adds a condition written in the JSON query form, e.g.
    /// `{"or": [{"field": "a", "op": "=", "value": 1}, {"not": {...}}]}`.
    fn filter<'py>(slf: Bound<'py, Self>, condition: Bound<'py, PyAny>) -> PyResult<Bound<'py, Self>> {
        let namespace = slf.borrow().query.namespace.clone();
        let cond = any_condition(&namespace, &condition)?;
        and_filter(&slf, cond);
        Ok(slf)
    }

    /// Full-text match of `text` on the text index named `field` (or covering it). The
    /// text may use `word*` (prefix), `word~` (typos), `"a phrase"`, `+must -not`,
    /// `field:word`, `word^2` (boost). Results sort by rank unless sorted otherwise.
    #[pyo3(name = "match")]
    fn match_<'py>(slf: Bound<'py, Self>, field: &str, text: &str) -> PyResult<Bound<'py, Self>> {
        let cond = Cond::new(field, Op::Match, text);
        and_filter(&slf, cond);
        Ok(slf)
    }

    /// Marks matched words in whole fields (`_highlight` of each item).
    #[pyo3(signature = (fields = None, pre = None, post = None))]
    fn highlight<'py>(
        slf: Bound<'py, Self>,
        fields: Option<Vec<String>>,
        pre: Option<String>,
        post: Option<String>,
    ) -> Bound<'py, Self> {
        slf.borrow_mut().query.highlight =
            Some(Highlight { fields: fields.unwrap_or_default(), markers: markers(pre, post) });
        slf
    }

    /// Cuts the text around matched words (`_snippet` of each item).
    #[pyo3(signature = (fields = None, pre = None, post = None, around = None, fragments = None, separator = None))]
    #[allow(clippy::too_many_arguments)]
    fn snippet<'py>(
        slf: Bound<'py, Self>,
        fields: Option<Vec<String>>,
        pre: Option<String>,
        post: Option<String>,
        around: Option<usize>,
        fragments: Option<usize>,
        separator: Option<String>,
    ) -> PyResult<Bound<'py, Self>> {
        let default = Snippet::default();
        let (around, fragments) = (around.unwrap_or(default.around), fragments.unwrap_or(default.fragments));
        if around > 100 || fragments > 100 {
            return Err(invalid("snippet: around and fragments must be at most 100"));
        }
        slf.borrow_mut().query.snippet = Some(Snippet {
            fields: fields.unwrap_or_default(),
            markers: markers(pre, post),
            around,
            fragments,
            separator: separator.unwrap_or(default.separator),
        });
        Ok(slf)
    }

    /// Sorts by `field` (ascending unless `desc`); later calls sort ties. `"rank()"` is
    /// the full-text rank.
    #[pyo3(signature = (field, desc = false))]
    fn sort<'py>(slf: Bound<'py, Self>, field: &str, desc: bool) -> Bound<'py, Self> {
        slf.borrow_mut().query.sort.push(SortKey { field: field.to_string(), desc });
        slf
    }

    fn limit<'py>(slf: Bound<'py, Self>, limit: usize) -> Bound<'py, Self> {
        slf.borrow_mut().query.limit = Some(limit);
        slf
    }

    fn offset<'py>(slf: Bound<'py, Self>, offset: usize) -> Bound<'py, Self> {
        slf.borrow_mut().query.offset = offset;
        slf
    }

    /// Asks for the exact number of matches (`Result.total`), whatever the limit.
    fn total<'py>(slf: Bound<'py, Self>) -> Bound<'py, Self> {
        slf.borrow_mut().query.total = true;
        slf
    }

    /// Most milliseconds the query may run; past it `execute` raises `QueryTimeoutError`.
    fn timeout<'py>(slf: Bound<'py, Self>, ms: u64) -> Bound<'py, Self> {
        // 0: no limit of its own, as `"timeout_ms": 0` in the JSON DSL (which the client
        // mode sends) and `query_timeout_ms = 0` for a server.
        slf.borrow_mut().query.timeout = (ms > 0).then(|| std::time::Duration::from_millis(ms));
        slf
    }

    /// Counts every match (an aggregation: `{"type": "count", "value": n}`).
    fn aggregate_count<'py>(slf: Bound<'py, Self>) -> Bound<'py, Self> {
        aggregate(slf, Aggregation::Count)
    }

    fn aggregate_sum<'py>(slf: Bound<'py, Self>, field: &str) -> Bound<'py, Self> {
        aggregate(slf, Aggregation::Sum(field.to_string()))
    }

    fn aggregate_avg<'py>(slf: Bound<'py, Self>, field: &str) -> Bound<'py, Self> {
        aggregate(slf, Aggregation::Avg(field.to_string()))
    }

    fn aggregate_min<'py>(slf: Bound<'py, Self>, field: &str) -> Bound<'py, Self> {
        aggregate(slf, Aggregation::Min(field.to_string()))
    }

    fn aggregate_max<'py>(slf: Bound<'py, Self>, field: &str) -> Bound<'py, Self> {
        aggregate(slf, Aggregation::Max(field.to_string()))
    }

    /// The distinct values of `field` among the matches.
    fn distinct<'py>(slf: Bound<'py, Self>, field: &str) -> Bound<'py, Self> {
        aggregate(slf, Aggregation::Distinct(field.to_string()))
    }

    /// Counts per distinct combination of `fields`' values; `sort` names `"count"` or a
    /// field, `"-count"` for descending (the default).
    #[pyo3(signature = (fields, sort = None, offset = 0, limit = None))]
    fn facet<'py>(
        slf: Bound<'py, Self>,
        fields: Vec<String>,
        sort: Option<Vec<String>>,
        offset: usize,
        limit: Option<usize>,
    ) -> PyResult<Bound<'py, Self>> {
        if fields.is_empty() {
            return Err(invalid("a facet needs at least one field"));
        }
        let sort = sort.unwrap_or_default().iter().map(|s| sort_key(s)).collect();
        slf.borrow_mut().query.aggregations.push(Aggregation::Facet(Facet { fields, sort, offset, limit }));
        Ok(slf)
    }

    /// Joins another namespace's query: each result gets the matching documents of
    /// `other` under `alias` (default: its namespace). `on` is a list of
    /// `(left_field, right_field)` or `(left_field, op, right_field)`; `kind` is
    /// `"left"` (keep every document) or `"inner"` (only those with a match).
    #[pyo3(signature = (other, on, alias = None, kind = "left"))]
    fn join<'py>(
        slf: Bound<'py, Self>,
        other: PyRef<'py, Query>,
        on: Vec<Bound<'py, PyTuple>>,
        alias: Option<String>,
        kind: &str,
    ) -> PyResult<Bound<'py, Self>> {
        let kind = match kind.to_ascii_lowercase().as_str() {
            "left" => JoinKind::Left,
            "inner" => JoinKind::Inner,
            other => return Err(invalid(format!("join kind '{other}' is not 'left' or 'inner'"))),
        };
        let mut pairs = Vec::with_capacity(on.len());
        for tuple in &on {
            let (left, op, right): (String, String, String) = match tuple.len() {
                2 => (tuple.get_item(0)?.extract()?, "=".into(), tuple.get_item(1)?.extract()?),
                3 => (tuple.get_item(0)?.extract()?, tuple.get_item(1)?.extract()?, tuple.get_item(2)?.extract()?),
                n => return Err(invalid(format!("a join condition has 2 or 3 items, got {n}"))),
            };
            let op = Op::parse(&op).ok_or_else(|| invalid(format!("unknown join operator '{op}'")))?;
            pairs.push((left, op, right));
        }
        if pairs.is_empty() {
            return Err(invalid("a join needs at least one ON condition"));
        }
        let joined = other.query.clone();
        let alias = alias.unwrap_or_else(|| joined.namespace.clone());
        let on: Vec<(&str, Op, &str)> = pairs.iter().map(|(l, op, r)| (l.as_str(), *op, r.as_str())).collect();
        let query = std::mem::take(&mut slf.borrow_mut().query);
        slf.borrow_mut().query = query.join(kind, joined, &on, &alias);
        Ok(slf)
    }

    /// Inner join (see `join`).
    #[pyo3(signature = (other, on, alias = None))]
    fn inner_join<'py>(
        slf: Bound<'py, Self>,
        other: PyRef<'py, Query>,
        on: Vec<Bound<'py, PyTuple>>,
        alias: Option<String>,
    ) -> PyResult<Bound<'py, Self>> {
        Query::join(slf, other, on, alias, "inner")
    }

    /// Waits, before the query runs, until live-sync source `source` has applied its
    /// stream up to `position` (`0/16B6C50` for PostgreSQL, a GTID list for MariaDB): read
    /// your writes after a commit to the source database. A server only (an embedded
    /// database follows no source); past the query's time limit it raises
    /// `QueryTimeoutError`.
    fn after<'py>(mut slf: PyRefMut<'py, Self>, source: String, position: String) -> PyRefMut<'py, Self> {
        slf.after.push((source, position));
        slf
    }

    /// Runs the query (without holding the GIL) and returns its `Result`.
    fn execute(&self, py: Python<'_>) -> PyResult<QueryResult> {
        let backend = &self.backend;
        let (query, after) = (&self.query, &self.after);
        let answer = py.detach(|| backend.query(query, after)).map_err(failure)?;
        QueryResult::from_answer(py, answer)
    }

    /// Runs the query recording its plan and each step's time (`Result.explain`).
    fn explain(&self, py: Python<'_>) -> PyResult<QueryResult> {
        let mut query = self.query.clone();
        query.explain = true;
        let backend = &self.backend;
        let after = &self.after;
        let answer = py.detach(|| backend.query(&query, after)).map_err(failure)?;
        QueryResult::from_answer(py, answer)
    }

    /// The query in the JSON DSL form (what the HTTP API and `DOC.QUERY` take).
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        value_to_py(py, &dsl::query_to_json(&self.query))
    }

    fn __repr__(&self) -> String {
        format!("Query({})", dsl::query_to_json(&self.query))
    }
}

/// Adds an aggregation and returns the builder.
fn aggregate(slf: Bound<'_, Query>, aggregation: Aggregation) -> Bound<'_, Query> {
    slf.borrow_mut().query.aggregations.push(aggregation);
    slf
}

/// ANDs `cond` with the builder's filter so far.
fn and_filter(slf: &Bound<'_, Query>, cond: Cond) {
    let mut this = slf.borrow_mut();
    this.query.filter = Some(match this.query.filter.take() {
        None => cond,
        Some(existing) => existing.and(cond),
    });
}
