//! Running a statement on a database and writing its answer as JSON.
//!
//! Owns: the answer's shape, the same for every protocol: `{"items": [...]}` plus
//! `"total"` when asked (`COUNT(*)` beside rows), `"aggregations"` when any, `"explain"`
//! for EXPLAIN, and `"affected"` for writes and DDL (the documents written, or the
//! namespaces and indexes created, dropped or truncated). Whole documents are copied from
//! their stored bytes; projected fields are picked from the parsed document. Never: change
//! what the engine answered, only its shape, or decide when a write is acknowledged: its
//! caller's `Durability` does (wait for the log, or collect the record for one wait later).

use crate::{Conflict, IndexSpec, Projection, Select, Statement};
use hotset_core::namespace::OnConflict;
use hotset_core::query::{AggregationResult, QueryResult, dsl};
use hotset_core::{Database, Durability, Error, Result, Writes};
use serde_json::{Map, Value, json};

/// Runs `statement` and returns its JSON answer. A statement that writes settles its log
/// records by `durability`: `Durability::Wait` returns once the log has acknowledged them.
pub fn execute(db: &Database, statement: &Statement, durability: Durability<'_>) -> Result<Vec<u8>> {
    let writes = db.writes(durability);
    match statement {
        Statement::Select(select) => run_select(db, select),
        Statement::Insert { namespace, docs, conflict } => insert(writes, namespace, docs, conflict),
        Statement::Update { query, sets } => affected(writes.update_query(query, sets)?),
        Statement::Delete { query } => affected(writes.delete_query(query)?),
        Statement::CreateNamespace { name, indexes, if_not_exists } => {
            match writes.create_namespace(name, indexes.clone()) {
                Err(Error::NamespaceExists { .. }) if *if_not_exists => affected(0),
                created => affected(created.map(|()| 1)?),
            }
        }
        Statement::CreateIndex { namespace, index, if_not_exists } => {
            create_index(writes, namespace, index, *if_not_exists)
        }
        Statement::DropNamespaces { names, if_exists } => {
            if !if_exists {
                all_exist(db, names)?;
            }
            let mut dropped = 0;
            for name in names {
                match writes.drop_namespace(name) {
                    Err(Error::UnknownNamespace { .. }) if *if_exists => {}
                    result => dropped += result.map(|()| 1)?,
                }
            }
            affected(dropped)
        }
        Statement::DropIndex { namespace, index, if_exists } => match writes.drop_index(namespace, index) {
            Err(Error::UnknownIndex { .. } | Error::UnknownNamespace { .. }) if *if_exists => affected(0),
            dropped => affected(dropped.map(|()| 1)?),
        },
        Statement::Truncate { namespaces } => {
            all_exist(db, namespaces)?;
            namespaces.iter().try_for_each(|name| writes.truncate(name))?;
            affected(namespaces.len())
        }
    }
}

/// INSERT as one transaction: every document written, or none. A plain INSERT of a key
/// already stored fails with the duplicate key error; an upsert says what to do instead.
fn insert(writes: Writes<'_>, namespace: &str, docs: &[Value], conflict: &Conflict) -> Result<Vec<u8>> {
    if let Conflict::Ignore { target: Some(target) } | Conflict::Update { target: Some(target), .. } = conflict {
        check_conflict_target(writes.database(), namespace, target)?;
    }
    let mut txn = writes.transaction(namespace)?;
    for (at, doc) in docs.iter().enumerate() {
        match conflict {
            Conflict::Refuse => txn.insert(doc.clone())?,
            Conflict::Replace => txn.upsert(doc.clone())?,
            Conflict::Ignore { .. } => txn.insert_or(doc.clone(), OnConflict::Ignore)?,
            Conflict::Update { sets, .. } => txn.insert_or(doc.clone(), OnConflict::Update(sets[at].clone()))?,
        }
    }
    affected(txn.commit()?)
}

/// `ON CONFLICT (columns)` must name the primary key's fields: the only key a namespace
/// keeps unique.
fn check_conflict_target(db: &Database, namespace: &str, target: &[String]) -> Result<()> {
    let indexes = db.describe(namespace)?.indexes;
    let pk = indexes.iter().find(|def| def.pk).map(|def| def.fields.clone()).unwrap_or_default();
    let mut named = target.to_vec();
    named.sort();
    let mut unique = pk.clone();
    unique.sort();
    if named == unique {
        return Ok(());
    }
    Err(Error::InvalidQuery {
        reason: format!(
            "ON CONFLICT ({}) names no unique key of namespace '{namespace}': its primary key is ({})",
            target.join(", "),
            pk.join(", ")
        ),
    })
}

/// CREATE INDEX: the index completed from the namespace's declared fields, then added.
/// With IF NOT EXISTS an index of that name already there is success, whatever it holds.
fn create_index(writes: Writes<'_>, namespace: &str, index: &IndexSpec, if_not_exists: bool) -> Result<Vec<u8>> {
    let existing = writes.database().describe(namespace)?.indexes;
    if if_not_exists && existing.iter().any(|def| def.name == index.name) {
        return affected(0);
    }
    match writes.add_index(namespace, index.resolve(&existing)?) {
        Err(Error::IndexExists { .. }) if if_not_exists => affected(0),
        added => affected(added.map(|()| 1)?),
    }
}

/// Checks that every namespace named exists before a statement changes any of them, so
/// `DROP TABLE a, missing` drops nothing.
fn all_exist(db: &Database, names: &[String]) -> Result<()> {
    let existing = db.namespace_names();
    match names.iter().find(|name| !existing.contains(name)) {
        Some(missing) => Err(Error::UnknownNamespace { namespace: missing.clone() }),
        None => Ok(()),
    }
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
