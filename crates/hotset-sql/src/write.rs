//! INSERT, UPDATE and DELETE into documents, updates and queries.
//!
//! Owns: building the documents of `INSERT ... VALUES` (columns to fields; dotted column
//! names make nested objects; a single JSON string is a whole document) and the query
//! and SET list of UPDATE and DELETE. Never: accept RETURNING, ON CONFLICT, INSERT ...
//! SELECT or joined updates, which it could not honour.

use crate::cond::{Scope, Side, computed, conjuncts, literal};
use crate::{SqlError, Statement, error_at, start};
use hotset_core::Query;
use hotset_core::query::SetField;
use serde_json::{Map, Value};
use sqlparser::ast::{
    Assignment, AssignmentTarget, Delete, Expr, FromTable, Insert, SetExpr, Spanned, TableFactor, TableObject,
    TableWithJoins,
};
use sqlparser::tokenizer::Span;

pub(crate) fn insert(insert: &Insert) -> Result<Statement, SqlError> {
    let span = insert.table.span();
    if insert.returning.is_some() || insert.on.is_some() || insert.or.is_some() {
        return Err(error_at(span, "RETURNING, ON CONFLICT and INSERT OR ... are not supported (inserts upsert)"));
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
    Ok(Statement::Insert { namespace, docs })
}

/// One row of VALUES as a document.
fn document(columns: &[String], row: &[Expr], span: Span) -> Result<Value, SqlError> {
    if columns.is_empty() {
        // `VALUES ('{"id": 1, ...}')`: the document as JSON text.
        return match row {
            [only] => match literal(only)? {
                Value::String(text) => match serde_json::from_str::<Value>(&text) {
                    Ok(doc @ Value::Object(_)) => Ok(doc),
                    Ok(_) => Err(error_at(start(only), "the JSON value must be an object")),
                    Err(e) => Err(error_at(start(only), format!("invalid JSON document: {e}"))),
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
        .map(|assignment| match &assignment.target {
            AssignmentTarget::ColumnName(name) => {
                let path = name.0.iter().map(|p| p.to_string()).collect::<Vec<_>>();
                let path =
                    if path.len() > 1 && scope.main.contains(&path[0]) { path[1..].join(".") } else { path.join(".") };
                Ok(SetField::Set(path, computed(&assignment.value, &scope)?))
            }
            AssignmentTarget::Tuple(_) => Err(error_at(start(&assignment.value), "SET (a, b) = ... is not supported")),
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Statement::Update { query, sets })
}

pub(crate) fn delete(delete: &Delete) -> Result<Statement, SqlError> {
    let tables = match &delete.from {
        FromTable::WithFromKeyword(tables) | FromTable::WithoutKeyword(tables) => tables,
    };
    let [table] = tables.as_slice() else {
        return Err(SqlError { message: "DELETE needs exactly one namespace".into(), line: 0, column: 0 });
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
