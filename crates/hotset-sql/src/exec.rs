//! Running a statement on a database and writing its answer as JSON.
//!
//! Owns: the answer's shape, the same for every protocol: `{"items": [...]}` plus
//! `"total"` when asked (`COUNT(*)` beside rows), `"aggregations"` when any, `"explain"`
//! for EXPLAIN, and `"affected"` for writes. Whole documents are copied from their stored
//! bytes; projected fields are picked from the parsed document. Never: change what the
//! engine answered, only its shape.

use crate::{Projection, Select, Statement};
use hotset_core::query::{AggregationResult, QueryResult, dsl};
use hotset_core::{Database, Error, IndexDef, Result};
use serde_json::{Map, Value, json};

/// Runs `statement` and returns its JSON answer.
pub fn execute(db: &Database, statement: &Statement) -> Result<Vec<u8>> {
    match statement {
        Statement::Select(select) => run_select(db, select),
        Statement::Insert { namespace, docs } => {
            let mut txn = db.transaction(namespace)?;
            for doc in docs {
                txn.upsert(doc.clone())?;
            }
            affected(txn.commit()?)
        }
        Statement::Update { query, sets } => affected(db.update_query(query, sets)?),
        Statement::Delete { query } => affected(db.delete_query(query)?),
        Statement::CreateNamespace { name, indexes, if_not_exists } => {
            match db.create_namespace(name, indexes.clone()) {
                Err(Error::NamespaceExists { .. }) if *if_not_exists => affected(0),
                created => affected(created.map(|()| 1)?),
            }
        }
        Statement::CreateIndex { namespace, definition, if_not_exists } => {
            let def = IndexDef::from_json(&typed_definition(db, namespace, definition)?)?;
            match db.add_index(namespace, def) {
                Err(Error::IndexExists { .. }) if *if_not_exists => affected(0),
                added => affected(added.map(|()| 1)?),
            }
        }
        Statement::DropNamespaces { names, if_exists } => {
            let mut dropped = 0;
            for name in names {
                match db.drop_namespace(name) {
                    Err(Error::UnknownNamespace { .. }) if *if_exists => {}
                    result => dropped += result.map(|()| 1)?,
                }
            }
            affected(dropped)
        }
        Statement::DropIndex { namespace, index, if_exists } => match db.drop_index(namespace, index) {
            Err(Error::UnknownIndex { .. } | Error::UnknownNamespace { .. }) if *if_exists => affected(0),
            dropped => affected(dropped.map(|()| 1)?),
        },
        Statement::Truncate { namespaces } => {
            namespaces.iter().try_for_each(|name| db.truncate(name))?;
            affected(namespaces.len())
        }
    }
}

/// A CREATE INDEX definition with its field types: as WITH gave them, or each field's
/// type in an index the namespace already has on it (a typed column from CREATE TABLE).
fn typed_definition(db: &Database, namespace: &str, definition: &Map<String, Value>) -> Result<Value> {
    let mut definition = definition.clone();
    if !definition.contains_key("type") {
        let existing = db.describe(namespace)?.indexes;
        let fields: Vec<String> = definition["fields"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|f| f.as_str().map(String::from))
            .collect();
        let types = fields
            .iter()
            .map(|field| {
                existing
                    .iter()
                    .find_map(|def| def.fields.iter().position(|f| f == field).map(|at| def.type_of(at).name()))
                    .ok_or_else(|| Error::InvalidIndex {
                        index: fields.join("+"),
                        reason: format!(
                            "the type of field '{field}' is not known: declare it in CREATE TABLE or give WITH (type = '...')"
                        ),
                    })
            })
            .collect::<Result<Vec<_>>>()?;
        // One field takes one type; several take the list (a composite index).
        let types = match &types[..] {
            [one] => json!(one),
            many => json!(many),
        };
        definition.insert("type".into(), types);
    }
    Ok(Value::Object(definition))
}

fn affected(count: usize) -> Result<Vec<u8>> {
    Ok(json!({"items": [], "affected": count}).to_string().into_bytes())
}

fn run_select(db: &Database, select: &Select) -> Result<Vec<u8>> {
    let result = db.query(&select.query)?;
    let mut out = Vec::with_capacity(256 + result.items.len() * 128);
    let items: Vec<Value> = match &select.projection {
        Projection::All => {
            dsl::write_result_json(&result, &mut out);
            return Ok(out);
        }
        Projection::Fields(fields) => result.items.iter().map(|item| project(&item.value(), fields)).collect(),
        Projection::Aggregates(names) => vec![aggregate_row(&result, names)],
        Projection::Groups { fields, count_as } => group_rows(&result, fields, count_as.as_deref()),
    };
    // The same shape as `write_result_json`, with rows built here.
    let mut answer = Map::new();
    answer.insert("items".into(), Value::Array(items));
    if let Some(total) = result.total {
        answer.insert("total".into(), json!(total));
    }
    if !result.aggregations.is_empty() {
        answer.insert("aggregations".into(), result.aggregations.iter().map(dsl::aggregation_json).collect());
    }
    if let Some(explain) = &result.explain {
        let mut text = Vec::new();
        dsl::write_result_json(&QueryResult { explain: Some(explain.clone()), ..QueryResult::default() }, &mut text);
        let shaped: Value = serde_json::from_slice(&text).expect("the DSL writes valid JSON");
        answer.insert("explain".into(), shaped["explain"].clone());
    }
    serde_json::to_writer(&mut out, &Value::Object(answer)).expect("writing JSON to memory");
    Ok(out)
}

/// The selected fields of a document, under their names (`null` when absent).
fn project(doc: &Value, fields: &[(String, String)]) -> Value {
    let mut row = Map::new();
    for (path, name) in fields {
        let value = path.split('.').try_fold(doc, |at, part| at.get(part)).cloned().unwrap_or(Value::Null);
        row.insert(name.clone(), value);
    }
    Value::Object(row)
}

/// `SELECT COUNT(*), SUM(x) ...` without rows: one row of the named values.
fn aggregate_row(result: &QueryResult, names: &[(String, Option<usize>)]) -> Value {
    let mut row = Map::new();
    for (name, position) in names {
        let value = match position.map(|i| &result.aggregations[i]) {
            None => json!(result.total.unwrap_or(0)),
            Some(AggregationResult::Count(n)) => json!(n),
            Some(AggregationResult::Value { value, .. }) => value.clone(),
            // COUNT(DISTINCT f): how many distinct values there are.
            Some(AggregationResult::Distinct { values, .. }) => json!(values.len()),
            Some(AggregationResult::Facet { groups_total, .. }) => json!(groups_total),
        };
        row.insert(name.clone(), value);
    }
    Value::Object(row)
}

/// GROUP BY rows: the grouped fields' values and the group's count.
fn group_rows(result: &QueryResult, fields: &[String], count_as: Option<&str>) -> Vec<Value> {
    let Some(AggregationResult::Facet { groups, .. }) = result.aggregations.last() else { return Vec::new() };
    groups
        .iter()
        .map(|group| {
            let mut row = Map::new();
            for (field, value) in fields.iter().zip(&group.values) {
                row.insert(field.clone(), value.clone());
            }
            if let Some(name) = count_as {
                row.insert(name.to_string(), json!(group.count));
            }
            Value::Object(row)
        })
        .collect()
}
