//! INSERT, UPDATE and DELETE into documents, updates and queries.
//!
//! Owns: building the documents of `INSERT ... VALUES` (columns to fields; dotted column
//! names make nested objects; a single JSON string is a whole document) and what an
//! insert does on a duplicate key (`Conflict`), and the query and SET list of UPDATE and
//! DELETE. Never: accept RETURNING, INSERT ... SELECT, a conditional upsert or joined
//! updates, which it could not honour; never turn a plain INSERT into an upsert.

use crate::cond::{Inserted, Scope, Side, computed, computed_upsert, conjuncts, literal};
use crate::{Conflict, SqlError, Statement, error_at, start};
use hotset_core::Query;
use hotset_core::error::ErrorCode;
use hotset_core::query::SetField;
use serde_json::{Map, Value};
use sqlparser::ast::{
    Assignment, AssignmentTarget, ConflictTarget, Delete, DoUpdate, Expr, FromTable, Insert, OnConflict,
    OnConflictAction, OnInsert, SetExpr, Spanned, SqliteOnConflict, TableFactor, TableObject, TableWithJoins,
};
use sqlparser::tokenizer::Span;

pub(crate) fn insert(insert: &Insert) -> Result<Statement, SqlError> {
    let span = insert.table.span();
    if insert.returning.is_some() {
        return Err(error_at(span, "INSERT ... RETURNING is not supported"));
    }
    let TableObject::TableName(name) = &insert.table else {
        return Err(error_at(span, "expected a namespace name"));
    };
    let namespace = single_name(&name.to_string(), span)?;
    let Some(source) = &insert.source else {
        return Err(error_at(span, "INSERT needs VALUES"));
    };
    let SetExpr::Values(values) = &*source.body else {
        return Err(error_at(span, "only INSERT ... VALUES is supported"));
    };
    let columns: Vec<String> = insert.columns.iter().map(|c| c.value.clone()).collect();
    let docs = values.rows.iter().map(|row| document(&columns, row, span)).collect::<Result<Vec<_>, _>>()?;
    let conflict = conflict(insert, &namespace, &docs, span)?;
    Ok(Statement::Insert { namespace, docs, conflict })
}

/// What the statement does with a document whose key is stored: PostgreSQL's and
/// SQLite's `ON CONFLICT`, MySQL's `IGNORE`, `ON DUPLICATE KEY UPDATE` and `REPLACE`,
/// SQLite's `INSERT OR ...`; what it cannot honour is refused by name.
fn conflict(insert: &Insert, namespace: &str, docs: &[Value], span: Span) -> Result<Conflict, SqlError> {
    let or = match insert.or {
        None | Some(SqliteOnConflict::Abort) => None,
        Some(SqliteOnConflict::Replace) => Some(Conflict::Replace),
        Some(SqliteOnConflict::Ignore) => Some(Conflict::Ignore { target: None }),
        Some(other) => {
            return Err(error_at(
                span,
                format!("INSERT OR {other} is not supported (a failed INSERT changes nothing, as OR ABORT)"),
            ));
        }
    };
    let plain = match (or, insert.replace_into, insert.ignore) {
        (None, false, false) => None,
        (Some(conflict), false, false) => Some(conflict),
        (None, true, false) => Some(Conflict::Replace),
        (None, false, true) => Some(Conflict::Ignore { target: None }),
        _ => return Err(error_at(span, "REPLACE, IGNORE and INSERT OR ... cannot be combined")),
    };
    let Some(on) = &insert.on else {
        return Ok(plain.unwrap_or(Conflict::Refuse));
    };
    if plain.is_some() {
        return Err(error_at(
            span,
            "REPLACE, IGNORE and INSERT OR ... cannot be combined with ON CONFLICT or ON DUPLICATE KEY",
        ));
    }
    let scope = Scope { main: vec![namespace.to_string()], joins: Vec::new() };
    match on {
        OnInsert::OnConflict(OnConflict { conflict_target, action }) => {
            let target = match conflict_target {
                None => None,
                Some(ConflictTarget::Columns(columns)) => Some(columns.iter().map(|c| c.value.clone()).collect()),
                Some(ConflictTarget::OnConstraint(name)) => {
                    return Err(error_at(
                        span,
                        format!("ON CONFLICT ON CONSTRAINT {name} is not supported: name the primary key's columns"),
                    ));
                }
            };
            match action {
                OnConflictAction::DoNothing => Ok(Conflict::Ignore { target }),
                OnConflictAction::DoUpdate(DoUpdate { selection: Some(selection), .. }) => {
                    Err(error_at(start(selection), "ON CONFLICT ... DO UPDATE ... WHERE is not supported"))
                }
                OnConflictAction::DoUpdate(DoUpdate { assignments, selection: None }) => {
                    let qualifiers = ["excluded".to_string()];
                    Ok(Conflict::Update { target, sets: upsert_sets(assignments, &scope, &qualifiers, docs)? })
                }
            }
        }
        OnInsert::DuplicateKeyUpdate(assignments) => {
            // `VALUES (...) AS new ON DUPLICATE KEY UPDATE a = new.a`: the row alias names
            // the inserted row (renamed columns are not supported).
            let qualifiers: Vec<String> = match &insert.insert_alias {
                None => Vec::new(),
                Some(alias) if alias.col_aliases.as_ref().is_some_and(|columns| !columns.is_empty()) => {
                    return Err(error_at(span, "column aliases of the inserted row (AS new(a, b)) are not supported"));
                }
                Some(alias) => vec![alias.row_alias.to_string()],
            };
            Ok(Conflict::Update { target: None, sets: upsert_sets(assignments, &scope, &qualifiers, docs)? })
        }
        other => Err(error_at(span, format!("INSERT ... {other} is not supported"))),
    }
}

/// An upsert's assignments, once for each inserted document (which they may read).
fn upsert_sets(
    assignments: &[Assignment],
    scope: &Scope,
    qualifiers: &[String],
    docs: &[Value],
) -> Result<Vec<Vec<SetField>>, SqlError> {
    docs.iter()
        .map(|doc| {
            let inserted = Inserted { qualifiers, doc };
            assignments
                .iter()
                .map(|assignment| {
                    let path = assigned_path(assignment, scope)?;
                    Ok(SetField::Set(path, computed_upsert(&assignment.value, scope, &inserted)?))
                })
                .collect()
        })
        .collect()
}

/// The field an assignment sets (a leading namespace name or alias is dropped).
fn assigned_path(assignment: &Assignment, scope: &Scope) -> Result<String, SqlError> {
    match &assignment.target {
        AssignmentTarget::ColumnName(name) => {
            // The identifiers' values, not their SQL text: `"meta.tag"` is the path
            // meta.tag, as in a condition or an INSERT's column list, not `"meta` and `tag"`.
            let path = name
                .0
                .iter()
                .map(|part| part.as_ident().map(|ident| ident.value.clone()).unwrap_or_else(|| part.to_string()))
                .collect::<Vec<_>>();
            Ok(if path.len() > 1 && scope.main.contains(&path[0]) { path[1..].join(".") } else { path.join(".") })
        }
        AssignmentTarget::Tuple(_) => Err(error_at(start(&assignment.value), "SET (a, b) = ... is not supported")),
    }
}

/// One row of VALUES as a document.
fn document(columns: &[String], row: &[Expr], span: Span) -> Result<Value, SqlError> {
    if columns.is_empty() {
        // `VALUES ('{"id": 1, ...}')`: the document as JSON text.
        return match row {
            [only] => match literal(only)? {
                Value::String(text) => match serde_json::from_str::<Value>(&text) {
                    Ok(doc @ Value::Object(_)) => Ok(doc),
                    Ok(_) => Err(SqlError::with_code(
                        start(only),
                        ErrorCode::BadDocument,
                        "the JSON value must be an object",
                    )),
                    Err(e) => Err(SqlError::with_code(
                        start(only),
                        ErrorCode::BadDocument,
                        format!("invalid JSON document: {e}"),
                    )),
                },
                _ => Err(error_at(start(only), "without a column list, give each document as one JSON string")),
            },
            _ => Err(error_at(span, "without a column list, give each document as one JSON string")),
        };
    }
    if row.len() != columns.len() {
        return Err(error_at(
            row.first().map_or(span, Spanned::span),
            format!("{} values for {} columns", row.len(), columns.len()),
        ));
    }
    let mut doc = Map::new();
    for (column, value) in columns.iter().zip(row) {
        let value = literal(value)?;
        let mut parts = column.split('.').peekable();
        let mut object = &mut doc;
        while let Some(part) = parts.next() {
            if parts.peek().is_none() {
                object.insert(part.to_string(), value);
                break;
            }
            let child = object.entry(part.to_string()).or_insert_with(|| Value::Object(Map::new()));
            object = child
                .as_object_mut()
                .ok_or_else(|| error_at(span, format!("column {column} conflicts with another")))?;
        }
    }
    Ok(Value::Object(doc))
}

pub(crate) fn update(
    table: &TableWithJoins,
    assignments: &[Assignment],
    has_from: bool,
    selection: Option<&Expr>,
    has_returning: bool,
    limit: Option<&Expr>,
) -> Result<Statement, SqlError> {
    let span = table.relation.span();
    if has_from || has_returning || limit.is_some() || !table.joins.is_empty() {
        return Err(error_at(span, "UPDATE ... FROM, joins, RETURNING and LIMIT are not supported"));
    }
    let (query, scope) = filtered(&table.relation, selection)?;
    let sets = assignments
        .iter()
        .map(|assignment| Ok(SetField::Set(assigned_path(assignment, &scope)?, computed(&assignment.value, &scope)?)))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Statement::Update { query, sets })
}

pub(crate) fn delete(delete: &Delete) -> Result<Statement, SqlError> {
    let tables = match &delete.from {
        FromTable::WithFromKeyword(tables) | FromTable::WithoutKeyword(tables) => tables,
    };
    let [table] = tables.as_slice() else {
        return Err(SqlError::whole("DELETE needs exactly one namespace"));
    };
    let span = table.relation.span();
    if delete.using.is_some() || delete.returning.is_some() || !delete.order_by.is_empty() || delete.limit.is_some() {
        return Err(error_at(span, "DELETE ... USING, RETURNING, ORDER BY and LIMIT are not supported"));
    }
    if !table.joins.is_empty() || !delete.tables.is_empty() {
        return Err(error_at(span, "DELETE from joined namespaces is not supported"));
    }
    let (query, _) = filtered(&table.relation, delete.selection.as_ref())?;
    Ok(Statement::Delete { query })
}

/// The query of UPDATE and DELETE: the namespace and its WHERE.
fn filtered(relation: &TableFactor, selection: Option<&Expr>) -> Result<(Query, Scope), SqlError> {
    let TableFactor::Table { name, alias, .. } = relation else {
        return Err(error_at(relation.span(), "expected a namespace name"));
    };
    let namespace = single_name(&name.to_string(), relation.span())?;
    let mut scope = Scope { main: vec![namespace.clone()], joins: Vec::new() };
    scope.main.extend(alias.as_ref().map(|a| a.name.value.clone()));
    let mut query = Query::new(&namespace);
    if let Some(selection) = selection {
        let mut parts = Vec::new();
        conjuncts(selection, &scope, &mut parts)?;
        for (side, cond) in parts {
            debug_assert_eq!(side, Side::Main, "no joins in scope");
            query = query.filter(cond);
        }
    }
    Ok((query, scope))
}

pub(crate) fn single_name(name: &str, span: Span) -> Result<String, SqlError> {
    if name.contains('.') {
        return Err(error_at(span, format!("expected a namespace name, found {name}")));
    }
    Ok(name.trim_matches('"').to_string())
}
