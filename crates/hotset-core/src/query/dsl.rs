//! The JSON query DSL: a query as a JSON object (HTTP bodies, RESP document commands),
//! and a query result as JSON.
//!
//! Owns: turning that JSON into the same `Query` the Rust builder and SQL produce, with
//! errors that name the path of the offending part (`filter.and[1].op: ...`), and writing
//! a `QueryResult` as `{"items": [...], "total": N, "aggregations": [...], "explain": ...}`
//! with documents copied from their stored bytes. Never: look at data or schemas (an
//! unknown field is the planner's business, not the parser's).
//!
//! ```json
//! {"namespace": "items",
//!  "filter": {"and": [{"field": "year", "op": ">", "value": 2010},
//!                     {"or": [{"field": "name", "op": "=", "value": "x"},
//!                             {"not": {"field": "tags", "op": "in", "values": [1, 2]}}]}]},
//!  "sort": [{"field": "year", "desc": true}, "name"],
//!  "offset": 0, "limit": 10, "total": true,
//!  "aggregations": [{"type": "count"}, {"type": "sum", "field": "price"},
//!                   {"type": "facet", "fields": ["year"], "sort": [{"field": "count", "desc": true}], "limit": 5},
//!                   {"type": "distinct", "field": "name"}],
//!  "joins": [{"type": "left", "namespace": "authors", "as": "author",
//!             "on": [{"left": "author_id", "op": "=", "right": "id"}], "limit": 1}],
//!  "explain": false, "timeout_ms": 500}
//! ```
//! Full-text: a condition `{"field": "description", "op": "match", "value": "query text"}`
//! (the field, or the text index's name); sort key `"rank()"` (`"-rank()"` best first,
//! the default with a match); `"highlight": true | {"fields": [..], "pre": "<b>", "post":
//! "</b>"}` and `"snippet": true | {.., "around": 5, "fragments": 3, "separator": " … "}`.
//! Items then carry `_rank`, and `_highlight` / `_snippet` objects by field.
//! `filter` may also be a list (conditions ANDed). A condition takes `value` (one) or
//! `values` (a list, for `in`, `allset`, `range`); `empty` and `any` take neither. A sort
//! key may be a string: `"year"`, or `"-year"` for descending. `timeout_ms` sets
//! `Query::timeout` (a server may lower it to its own limit; 0 sets none of its own).

use super::ast::{Aggregation, Cond, Facet, Highlight, Join, JoinKind, JoinOn, Op, Query, Snippet, SortKey};
use super::result::{AggregationResult, Explain, QueryResult};
use crate::error::{Error, Result};
use crate::text::Markers;
use serde_json::{Map, Value, json};

/// Keys a query object may have; anything else is refused (a typo must not be ignored).
const QUERY_KEYS: &[&str] = &[
    "namespace",
    "filter",
    "sort",
    "offset",
    "limit",
    "total",
    "aggregations",
    "joins",
    "explain",
    "timeout_ms",
    "highlight",
    "snippet",
];

/// Parses a query object. `namespace` may be omitted when the caller supplies it (an
/// HTTP route that names the namespace).
pub fn query_from_json(value: &Value, namespace: Option<&str>) -> Result<Query> {
    let object = object(value, "query")?;
    known_keys(object, QUERY_KEYS, "query")?;
    let namespace = match (object.get("namespace"), namespace) {
        (Some(Value::String(name)), None) => name.clone(),
        (Some(Value::String(name)), Some(given)) if name == given => name.clone(),
        (Some(Value::String(name)), Some(given)) => {
            return Err(invalid("namespace", format!("'{name}' differs from '{given}' named by the request")));
        }
        (Some(_), _) => return Err(invalid("namespace", "must be a string")),
        (None, Some(given)) => given.to_string(),
        (None, None) => return Err(invalid("namespace", "is required")),
    };
    let mut query = Query::new(&namespace);
    query_parts(object, &mut query, "")?;
    if let Some(aggregations) = object.get("aggregations") {
        query.aggregations = list(aggregations, "aggregations")?
            .iter()
            .enumerate()
            .map(|(i, a)| aggregation(a, &format!("aggregations[{i}]")))
            .collect::<Result<_>>()?;
    }
    if let Some(joins) = object.get("joins") {
        query.joins = list(joins, "joins")?
            .iter()
            .enumerate()
            .map(|(i, j)| join(j, &format!("joins[{i}]")))
            .collect::<Result<_>>()?;
    }
    query.total = flag(object, "total", "")?;
    query.explain = flag(object, "explain", "")?;
    if let Some(value) = object.get("highlight") {
        query.highlight = markup(value, "highlight", &[])?.map(|(fields, markers, _)| Highlight { fields, markers });
    }
    if let Some(value) = object.get("snippet") {
        query.snippet = markup(value, "snippet", &["around", "fragments", "separator"])?.map(|(fields, markers, o)| {
            let mut snippet = Snippet { fields, markers, ..Snippet::default() };
            if let Some(around) = o.get("around").and_then(Value::as_u64) {
                snippet.around = around as usize;
            }
            if let Some(fragments) = o.get("fragments").and_then(Value::as_u64) {
                snippet.fragments = fragments as usize;
            }
            if let Some(separator) = o.get("separator").and_then(Value::as_str) {
                snippet.separator = separator.to_string();
            }
            snippet
        });
    }
    if let Some(timeout) = object.get("timeout_ms") {
        // 0 asks for no limit of the query's own, as `query_timeout_ms = 0` does for a
        // server (which still applies its own limit).
        query.timeout = match count(timeout, "timeout_ms")? {
            0 => None,
            ms => Some(std::time::Duration::from_millis(ms as u64)),
        };
    }
    Ok(query)
}

/// Filter, sort, offset and limit: what a query and a joined query share.
fn query_parts(object: &Map<String, Value>, query: &mut Query, prefix: &str) -> Result<()> {
    if let Some(filter) = object.get("filter") {
        query.filter = Some(condition_or_list(filter, &format!("{prefix}filter"))?);
    }
    if let Some(sort) = object.get("sort") {
        query.sort = sort_keys(sort, &format!("{prefix}sort"))?;
    }
    if let Some(offset) = object.get("offset") {
        query.offset = count(offset, &format!("{prefix}offset"))?;
    }
    if let Some(limit) = object.get("limit") {
        query.limit = match limit {
            Value::Null => None,
            other => Some(count(other, &format!("{prefix}limit"))?),
        };
    }
    Ok(())
}

fn condition_or_list(value: &Value, path: &str) -> Result<Cond> {
    match value {
        // An empty list would read as an empty AND (every document) that the DSL then
        // writes as `{"and": []}`, which it refuses: refused here the same way.
        Value::Array(items) if items.is_empty() => Err(invalid(path, "needs at least one condition")),
        Value::Array(items) => {
            let conds = items
                .iter()
                .enumerate()
                .map(|(i, c)| condition(c, &format!("{path}[{i}]")))
                .collect::<Result<Vec<_>>>()?;
            Ok(Cond::And(conds))
        }
        other => condition(other, path),
    }
}

fn condition(value: &Value, path: &str) -> Result<Cond> {
    let object = object(value, path)?;
    for (word, make) in [("and", Cond::And as fn(Vec<Cond>) -> Cond), ("or", Cond::Or)] {
        if let Some(items) = object.get(word) {
            known_keys(object, &[word], path)?;
            let path = format!("{path}.{word}");
            let conds = list(items, &path)?
                .iter()
                .enumerate()
                .map(|(i, c)| condition(c, &format!("{path}[{i}]")))
                .collect::<Result<Vec<_>>>()?;
            if conds.is_empty() {
                return Err(invalid(&path, "needs at least one condition"));
            }
            return Ok(make(conds));
        }
    }
    if let Some(inner) = object.get("not") {
        known_keys(object, &["not"], path)?;
        return Ok(Cond::Not(Box::new(condition(inner, &format!("{path}.not"))?)));
    }
    known_keys(object, &["field", "op", "value", "values"], path)?;
    let field = match object.get("field") {
        Some(Value::String(field)) if !field.is_empty() => field.clone(),
        _ => return Err(invalid(&format!("{path}.field"), "must be a non-empty string")),
    };
    let op = match object.get("op") {
        Some(Value::String(op)) => {
            Op::parse(op).ok_or_else(|| invalid(&format!("{path}.op"), format!("unknown operator '{op}'")))?
        }
        None => Op::Eq,
        Some(_) => return Err(invalid(&format!("{path}.op"), "must be a string")),
    };
    let values = match (object.get("value"), object.get("values")) {
        (Some(_), Some(_)) => return Err(invalid(path, "give either value or values, not both")),
        (Some(value), None) => vec![value.clone()],
        (None, Some(Value::Array(values))) => values.clone(),
        (None, Some(_)) => return Err(invalid(&format!("{path}.values"), "must be a list")),
        (None, None) => Vec::new(),
    };
    let arity_ok = match op {
        Op::Empty | Op::Any => values.is_empty(),
        Op::Range => values.len() == 2,
        Op::In | Op::AllSet => true,
        _ => values.len() == 1,
    };
    if !arity_ok {
        let wanted = match op {
            Op::Empty | Op::Any => "no value",
            Op::Range => "two values (low and high)",
            _ => "one value",
        };
        return Err(invalid(path, format!("{} takes {wanted}, got {}", op.name(), values.len())));
    }
    Ok(Cond::Field { field, op, values })
}

/// `true`, `false` or `{"fields": [...], "pre": "<b>", "post": "</b>", ...extra}`: the
/// fields, markers and the object (for the extra keys, whose types are checked here).
/// A markup option read: fields, markers and the option's object.
type MarkupParts = (Vec<String>, Markers, Map<String, Value>);

fn markup(value: &Value, path: &str, extra: &[&str]) -> Result<Option<MarkupParts>> {
    let object = match value {
        Value::Bool(false) => return Ok(None),
        Value::Bool(true) => Map::new(),
        Value::Object(object) => object.clone(),
        _ => return Err(invalid(path, "must be true, false or an object")),
    };
    let mut known = vec!["fields", "pre", "post"];
    known.extend_from_slice(extra);
    known_keys(&object, &known, path)?;
    let fields = match object.get("fields") {
        None => Vec::new(),
        Some(list) => list
            .as_array()
            .and_then(|l| l.iter().map(|f| f.as_str().map(str::to_string)).collect::<Option<Vec<_>>>())
            .ok_or_else(|| invalid(&format!("{path}.fields"), "must be a list of field names"))?,
    };
    let mut markers = Markers::default();
    for (key, slot) in [("pre", &mut markers.pre), ("post", &mut markers.post), ("separator", &mut String::new())] {
        match object.get(key) {
            None => {}
            Some(Value::String(text)) => *slot = text.clone(),
            Some(_) => return Err(invalid(&format!("{path}.{key}"), "must be a string")),
        }
    }
    for key in ["around", "fragments"] {
        if let Some(value) = object.get(key) {
            let n = count(value, &format!("{path}.{key}"))?;
            if n > 100 {
                return Err(invalid(&format!("{path}.{key}"), "must be at most 100"));
            }
        }
    }
    Ok(Some((fields, markers, object)))
}

fn sort_keys(value: &Value, path: &str) -> Result<Vec<SortKey>> {
    let one = |value: &Value, path: &str| -> Result<SortKey> {
        match value {
            Value::String(text) => match text.strip_prefix('-') {
                Some(field) => Ok(SortKey { field: field.to_string(), desc: true }),
                None => Ok(SortKey { field: text.clone(), desc: false }),
            },
            Value::Object(object) => {
                known_keys(object, &["field", "desc"], path)?;
                let field = object
                    .get("field")
                    .and_then(Value::as_str)
                    .ok_or_else(|| invalid(&format!("{path}.field"), "must be a string"))?;
                Ok(SortKey { field: field.to_string(), desc: flag(object, "desc", &format!("{path}."))? })
            }
            _ => Err(invalid(path, "must be a field name or {\"field\", \"desc\"}")),
        }
    };
    match value {
        Value::Array(keys) => keys.iter().enumerate().map(|(i, k)| one(k, &format!("{path}[{i}]"))).collect(),
        other => Ok(vec![one(other, path)?]),
    }
}

fn aggregation(value: &Value, path: &str) -> Result<Aggregation> {
    let object = object(value, path)?;
    let kind =
        object.get("type").and_then(Value::as_str).ok_or_else(|| invalid(&format!("{path}.type"), "is required"))?;
    let field = || -> Result<String> {
        object
            .get("field")
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| invalid(&format!("{path}.field"), format!("{kind} needs a field")))
    };
    Ok(match kind.to_ascii_lowercase().as_str() {
        "count" => {
            known_keys(object, &["type"], path)?;
            Aggregation::Count
        }
        "sum" | "avg" | "min" | "max" | "distinct" => {
            known_keys(object, &["type", "field"], path)?;
            let field = field()?;
            match kind.to_ascii_lowercase().as_str() {
                "sum" => Aggregation::Sum(field),
                "avg" => Aggregation::Avg(field),
                "min" => Aggregation::Min(field),
                "max" => Aggregation::Max(field),
                _ => Aggregation::Distinct(field),
            }
        }
        "facet" => {
            known_keys(object, &["type", "fields", "sort", "offset", "limit"], path)?;
            let fields: Vec<String> = list(object.get("fields").unwrap_or(&Value::Null), &format!("{path}.fields"))?
                .iter()
                .map(|f| {
                    f.as_str().map(str::to_string).ok_or_else(|| invalid(&format!("{path}.fields"), "must be strings"))
                })
                .collect::<Result<_>>()?;
            if fields.is_empty() {
                return Err(invalid(&format!("{path}.fields"), "needs at least one field"));
            }
            let sort = match object.get("sort") {
                Some(sort) => sort_keys(sort, &format!("{path}.sort"))?,
                None => Vec::new(),
            };
            let offset = object.get("offset").map(|v| count(v, &format!("{path}.offset"))).transpose()?.unwrap_or(0);
            let limit = object.get("limit").map(|v| count(v, &format!("{path}.limit"))).transpose()?;
            Aggregation::Facet(Facet { fields, sort, offset, limit })
        }
        other => return Err(invalid(&format!("{path}.type"), format!("unknown aggregation '{other}'"))),
    })
}

fn join(value: &Value, path: &str) -> Result<Join> {
    let object = object(value, path)?;
    known_keys(object, &["type", "namespace", "as", "on", "filter", "sort", "offset", "limit"], path)?;
    let kind = match object.get("type").and_then(Value::as_str).map(str::to_ascii_lowercase).as_deref() {
        Some("inner") => JoinKind::Inner,
        Some("left") | None => JoinKind::Left,
        Some(other) => return Err(invalid(&format!("{path}.type"), format!("'{other}' is not inner or left"))),
    };
    let text = |key: &str| -> Result<String> {
        object
            .get(key)
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| invalid(&format!("{path}.{key}"), "must be a string"))
    };
    let namespace = text("namespace")?;
    let alias = object.get("as").map_or(Ok(namespace.clone()), |_| text("as"))?;
    let on = list(object.get("on").unwrap_or(&Value::Null), &format!("{path}.on"))?
        .iter()
        .enumerate()
        .map(|(i, on)| {
            let path = format!("{path}.on[{i}]");
            let object = self::object(on, &path)?;
            known_keys(object, &["left", "op", "right"], &path)?;
            let side = |key: &str| {
                object
                    .get(key)
                    .and_then(Value::as_str)
                    .map(str::to_string)
                    .ok_or_else(|| invalid(&format!("{path}.{key}"), "must be a string"))
            };
            let op = match object.get("op").and_then(Value::as_str) {
                None => Op::Eq,
                Some(op) => {
                    Op::parse(op).ok_or_else(|| invalid(&format!("{path}.op"), format!("unknown operator '{op}'")))?
                }
            };
            Ok(JoinOn { left_field: side("left")?, op, right_field: side("right")? })
        })
        .collect::<Result<Vec<_>>>()?;
    if on.is_empty() {
        return Err(invalid(&format!("{path}.on"), "needs at least one condition"));
    }
    let mut query = Query::new(&namespace);
    query_parts(object, &mut query, &format!("{path}."))?;
    Ok(Join { kind, on, alias, query })
}

fn object<'a>(value: &'a Value, path: &str) -> Result<&'a Map<String, Value>> {
    value.as_object().ok_or_else(|| invalid(path, "must be an object"))
}

fn list<'a>(value: &'a Value, path: &str) -> Result<&'a Vec<Value>> {
    value.as_array().ok_or_else(|| invalid(path, "must be a list"))
}

fn count(value: &Value, path: &str) -> Result<usize> {
    value
        .as_u64()
        .and_then(|n| usize::try_from(n).ok())
        .ok_or_else(|| invalid(path, "must be a whole number, 0 or more"))
}

fn flag(object: &Map<String, Value>, key: &str, prefix: &str) -> Result<bool> {
    match object.get(key) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err(invalid(&format!("{prefix}{key}"), "must be true or false")),
    }
}

fn known_keys(object: &Map<String, Value>, known: &[&str], path: &str) -> Result<()> {
    match object.keys().find(|key| !known.contains(&key.as_str())) {
        Some(key) => Err(invalid(path, format!("unknown key '{key}' (expected one of: {})", known.join(", ")))),
        None => Ok(()),
    }
}

fn invalid(path: &str, reason: impl std::fmt::Display) -> Error {
    Error::InvalidQuery { reason: format!("{path}: {reason}") }
}

/// Writes a query as the JSON DSL: the inverse of `query_from_json`, so a query built in
/// one process (a client library's builder) runs the same in another.
pub fn query_to_json(query: &Query) -> Value {
    let mut object = Map::new();
    object.insert("namespace".into(), Value::from(query.namespace.as_str()));
    parts_to_json(query, &mut object);
    if !query.aggregations.is_empty() {
        object.insert("aggregations".into(), query.aggregations.iter().map(aggregation_to_json).collect());
    }
    if !query.joins.is_empty() {
        let joins = query.joins.iter().map(|join| {
            let mut object = Map::new();
            let kind = match join.kind {
                JoinKind::Inner => "inner",
                JoinKind::Left => "left",
            };
            object.insert("type".into(), Value::from(kind));
            object.insert("namespace".into(), Value::from(join.query.namespace.as_str()));
            object.insert("as".into(), Value::from(join.alias.as_str()));
            let on = join
                .on
                .iter()
                .map(|on| json!({"left": on.left_field, "op": on.op.name(), "right": on.right_field}))
                .collect();
            object.insert("on".into(), Value::Array(on));
            parts_to_json(&join.query, &mut object);
            Value::Object(object)
        });
        object.insert("joins".into(), joins.collect());
    }
    if query.total {
        object.insert("total".into(), Value::Bool(true));
    }
    if query.explain {
        object.insert("explain".into(), Value::Bool(true));
    }
    if let Some(highlight) = &query.highlight {
        let markup = markup_to_json(&highlight.fields, &highlight.markers);
        object.insert("highlight".into(), Value::Object(markup));
    }
    if let Some(snippet) = &query.snippet {
        let mut markup = markup_to_json(&snippet.fields, &snippet.markers);
        markup.insert("around".into(), Value::from(snippet.around));
        markup.insert("fragments".into(), Value::from(snippet.fragments));
        markup.insert("separator".into(), Value::from(snippet.separator.as_str()));
        object.insert("snippet".into(), Value::Object(markup));
    }
    if let Some(timeout) = query.timeout {
        object.insert("timeout_ms".into(), Value::from(u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX)));
    }
    Value::Object(object)
}

fn parts_to_json(query: &Query, object: &mut Map<String, Value>) {
    if let Some(filter) = &query.filter {
        object.insert("filter".into(), cond_to_json(filter));
    }
    if !query.sort.is_empty() {
        object.insert("sort".into(), sort_to_json(&query.sort));
    }
    if query.offset > 0 {
        object.insert("offset".into(), Value::from(query.offset));
    }
    if let Some(limit) = query.limit {
        object.insert("limit".into(), Value::from(limit));
    }
}

fn cond_to_json(cond: &Cond) -> Value {
    match cond {
        Cond::Field { field, op, values } => json!({"field": field, "op": op.name(), "values": values}),
        Cond::And(items) => json!({"and": items.iter().map(cond_to_json).collect::<Vec<_>>()}),
        Cond::Or(items) => json!({"or": items.iter().map(cond_to_json).collect::<Vec<_>>()}),
        Cond::Not(inner) => json!({"not": cond_to_json(inner)}),
    }
}

fn sort_to_json(keys: &[SortKey]) -> Value {
    keys.iter().map(|key| json!({"field": key.field, "desc": key.desc})).collect()
}

fn markup_to_json(fields: &[String], markers: &Markers) -> Map<String, Value> {
    let mut object = Map::new();
    object.insert("fields".into(), fields.iter().map(|f| Value::from(f.as_str())).collect());
    object.insert("pre".into(), Value::from(markers.pre.as_str()));
    object.insert("post".into(), Value::from(markers.post.as_str()));
    object
}

fn aggregation_to_json(aggregation: &Aggregation) -> Value {
    match aggregation {
        Aggregation::Count => json!({"type": "count"}),
        Aggregation::Sum(field) => json!({"type": "sum", "field": field}),
        Aggregation::Avg(field) => json!({"type": "avg", "field": field}),
        Aggregation::Min(field) => json!({"type": "min", "field": field}),
        Aggregation::Max(field) => json!({"type": "max", "field": field}),
        Aggregation::Distinct(field) => json!({"type": "distinct", "field": field}),
        Aggregation::Facet(facet) => {
            let mut object = json!({"type": "facet", "fields": facet.fields, "sort": sort_to_json(&facet.sort)});
            if facet.offset > 0 {
                object["offset"] = Value::from(facet.offset);
            }
            if let Some(limit) = facet.limit {
                object["limit"] = Value::from(limit);
            }
            object
        }
    }
}

/// Writes a query result as JSON: `items` (documents as stored, joined ones nested),
/// `total` when asked, `aggregations` when any, `explain` when asked.
pub fn write_result_json(result: &QueryResult, out: &mut Vec<u8>) {
    out.extend_from_slice(b"{\"items\":[");
    for (i, item) in result.items.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        item.write_json(out);
    }
    out.push(b']');
    if let Some(total) = result.total {
        out.extend_from_slice(format!(",\"total\":{total}").as_bytes());
    }
    if !result.aggregations.is_empty() {
        let aggregations: Vec<Value> = result.aggregations.iter().map(aggregation_json).collect();
        out.extend_from_slice(b",\"aggregations\":");
        out.extend_from_slice(Value::Array(aggregations).to_string().as_bytes());
    }
    if let Some(explain) = &result.explain {
        out.extend_from_slice(b",\"explain\":");
        out.extend_from_slice(explain_json(explain).to_string().as_bytes());
    }
    out.push(b'}');
}

/// A query's plan and timings as the `explain` member shows them.
pub fn explain_json(explain: &Explain) -> Value {
    let steps: Vec<Value> = explain
        .steps
        .iter()
        .map(|s| json!({"step": s.step, "detail": s.detail, "rows": s.rows, "time_ns": s.time_ns}))
        .collect();
    json!({"steps": steps, "total_ns": explain.total_ns})
}

/// One aggregation result as the `aggregations` list shows it.
pub fn aggregation_json(result: &AggregationResult) -> Value {
    match result {
        AggregationResult::Count(n) => json!({"type": "count", "value": n}),
        AggregationResult::Value { kind, field, value } => json!({"type": kind, "field": field, "value": value}),
        AggregationResult::Facet { fields, groups, groups_total } => json!({
            "type": "facet",
            "fields": fields,
            "groups": groups.iter().map(|g| json!({"values": g.values, "count": g.count})).collect::<Vec<_>>(),
            "groups_total": groups_total,
        }),
        AggregationResult::Distinct { field, values } => json!({"type": "distinct", "field": field, "values": values}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_query_parses_into_the_builder_form() {
        let parsed = query_from_json(
            &json!({
                "namespace": "items",
                "filter": [{"field": "name", "value": "x"}, {"field": "year", "op": ">", "value": 2010}],
                "sort": ["-year", {"field": "name"}],
                "limit": 10, "offset": 5, "total": true,
                "aggregations": [{"type": "count"}, {"type": "facet", "fields": ["year"], "limit": 3}],
                "joins": [{"type": "inner", "namespace": "a", "as": "author", "on": [{"left": "aid", "right": "id"}], "limit": 1}],
            }),
            None,
        )
        .unwrap();
        let expected = Query::new("items")
            .filter(Cond::And(vec![Cond::new("name", Op::Eq, "x"), Cond::new("year", Op::Gt, 2010)]))
            .sort("year", true)
            .sort("name", false)
            .limit(10)
            .offset(5)
            .with_total()
            .aggregate(Aggregation::Count)
            .aggregate(Aggregation::Facet(Facet {
                fields: vec!["year".into()],
                sort: vec![],
                offset: 0,
                limit: Some(3),
            }))
            .join(JoinKind::Inner, Query::new("a").limit(1), &[("aid", Op::Eq, "id")], "author");
        assert_eq!(parsed, expected);
    }

    #[test]
    fn a_query_written_as_json_parses_back_to_itself() {
        let join = Query::new("authors").where_("active", Op::Eq, true).sort("name", false).limit(2);
        let mut query = Query::new("items")
            .filter(
                Cond::new("year", Op::Range, json!([2000, 2010]))
                    .or(Cond::new("tags", Op::AllSet, json!(["a", "b"])).not())
                    .and(Cond::new("gone", Op::Empty, Value::Null)),
            )
            .matching("description", "red bike~")
            .sort("rank()", true)
            .sort("year", false)
            .offset(3)
            .limit(7)
            .with_total()
            .explain()
            .aggregate(Aggregation::Count)
            .aggregate(Aggregation::Avg("price".into()))
            .aggregate(Aggregation::Distinct("name".into()))
            .aggregate(Aggregation::Facet(Facet {
                fields: vec!["year".into(), "name".into()],
                sort: vec![SortKey { field: "count".into(), desc: true }],
                offset: 1,
                limit: Some(4),
            }))
            .join(JoinKind::Inner, join, &[("author_id", Op::Eq, "id")], "author");
        query.highlight = Some(Highlight { fields: vec!["description".into()], markers: Markers::default() });
        query.snippet = Some(Snippet { around: 2, fragments: 1, separator: " | ".into(), ..Snippet::default() });
        query.timeout = Some(std::time::Duration::from_millis(250));
        let written = query_to_json(&query);
        assert_eq!(query_from_json(&written, None).unwrap(), query, "{written}");
        let plain = Query::new("n");
        assert_eq!(query_from_json(&query_to_json(&plain), None).unwrap(), plain);
    }

    #[test]
    fn nested_and_or_not_and_the_namespace_from_the_route() {
        let parsed = query_from_json(
            &json!({"filter": {"or": [{"field": "a", "op": "in", "values": [1, 2]}, {"not": {"field": "b", "op": "empty"}}]}}),
            Some("ns"),
        )
        .unwrap();
        assert_eq!(parsed.namespace, "ns");
        assert_eq!(
            parsed.filter,
            Some(Cond::Or(vec![
                Cond::Field { field: "a".into(), op: Op::In, values: vec![json!(1), json!(2)] },
                Cond::Not(Box::new(Cond::Field { field: "b".into(), op: Op::Empty, values: vec![] })),
            ]))
        );
    }

    #[test]
    fn errors_name_the_path() {
        let cases = [
            (
                json!({"namespace": "n", "filter": {"and": [{"field": "a", "value": 1}, {"field": "b", "op": "~~"}]}}),
                "filter.and[1].op: unknown operator '~~'",
            ),
            (json!({"namespace": "n", "limt": 3}), "query: unknown key 'limt'"),
            (json!({"namespace": "n", "filter": {"field": "a"}}), "filter: = takes one value, got 0"),
            (json!({"namespace": "n", "limit": -1}), "limit: must be a whole number"),
            (
                json!({"namespace": "n", "filter": {"field": "a", "op": "range", "value": 1}}),
                "filter: RANGE takes two values",
            ),
            (
                json!({"namespace": "n", "aggregations": [{"type": "median", "field": "x"}]}),
                "aggregations[0].type: unknown aggregation 'median'",
            ),
            (
                json!({"namespace": "n", "joins": [{"namespace": "m", "on": []}]}),
                "joins[0].on: needs at least one condition",
            ),
            (json!({"filter": []}), "namespace: is required"),
            (json!({"namespace": "items", "filter": []}), "filter: needs at least one condition"),
            (json!([1]), "query: must be an object"),
            (json!({"namespace": "n", "sort": [3]}), "sort[0]: must be a field name"),
        ];
        for (query, expected) in cases {
            let error = query_from_json(&query, None).unwrap_err().to_string();
            assert!(error.contains(expected), "{query}: {error}");
        }
        let mismatch = query_from_json(&json!({"namespace": "a"}), Some("b")).unwrap_err().to_string();
        assert!(mismatch.contains("'a' differs from 'b'"), "{mismatch}");
    }

    /// Regression: `"timeout_ms": 0` always failed with "timed out after 0 ms"; 0 means no
    /// limit of the query's own, as it does in the server's configuration.
    #[test]
    fn a_zero_timeout_sets_no_limit() {
        let query = query_from_json(&json!({"timeout_ms": 0}), Some("t")).unwrap();
        assert_eq!(query.timeout, None);
        let query = query_from_json(&json!({"timeout_ms": 5}), Some("t")).unwrap();
        assert_eq!(query.timeout, Some(std::time::Duration::from_millis(5)));
        assert!(query_from_json(&json!({"timeout_ms": -1}), Some("t")).is_err());
    }
}
