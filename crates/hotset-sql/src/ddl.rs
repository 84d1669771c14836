//! CREATE, DROP and TRUNCATE: namespaces and indexes from SQL.
//!
//! Owns: turning `CREATE TABLE`, `CREATE INDEX`, `DROP TABLE`, `DROP INDEX` and `TRUNCATE`
//! into index definitions (the same JSON definitions the HTTP API takes, checked by
//! `IndexDef::from_json`) and namespace names. Never: accept what Hotset would not honour
//! (UNIQUE secondary indexes, defaults, foreign keys, checks, partial indexes, CASCADE):
//! each is refused with its position.
//!
//! Mapping: a table is a namespace. Its primary key (a column's `PRIMARY KEY` or a
//! `PRIMARY KEY (a, b)` constraint) becomes the hash primary-key index; every other
//! declared column becomes a typed store-only index (`"index": "-"`), so the engine checks
//! that field's type and later indexes on it know it. Documents stay schemaless: fields
//! not declared are stored as they come. `CREATE INDEX` is a tree (PostgreSQL's btree)
//! unless `USING HASH`; a field's type comes from the namespace's declaration, or from
//! `WITH (type = 'int')`.

use crate::write::single_name;
use crate::{SqlError, Statement, error_at};
use hotset_core::IndexDef;
use serde_json::{Map, Value, json};
use sqlparser::ast::{
    ArrayElemTypeDef, ColumnOption, CreateIndex, CreateTable, DataType, Expr, IndexType, ObjectName, ObjectType,
    Spanned, TableConstraint, TruncateTableTarget,
};
use sqlparser::tokenizer::Span;

/// `CREATE TABLE`: a namespace with its primary key and typed columns.
pub(crate) fn create_table(table: &CreateTable) -> Result<Statement, SqlError> {
    let span = table.name.span();
    if table.or_replace || table.temporary || table.query.is_some() || table.like.is_some() || table.clone.is_some() {
        return Err(error_at(span, "only CREATE TABLE [IF NOT EXISTS] name (columns) is supported"));
    }
    let name = single_name(&table.name.to_string(), span)?;
    let mut pk: Vec<String> = Vec::new();
    for constraint in &table.constraints {
        match constraint {
            TableConstraint::PrimaryKey { columns, .. } if pk.is_empty() => {
                pk = columns.iter().map(|c| c.column.expr.to_string().trim_matches('"').to_string()).collect();
            }
            other => return Err(error_at(other.span(), "only one PRIMARY KEY (...) constraint is supported")),
        }
    }
    let mut typed: Vec<(String, &'static str, bool)> = Vec::new();
    for column in &table.columns {
        for option in &column.options {
            match &option.option {
                ColumnOption::Unique { is_primary: true, .. } if pk.is_empty() || pk == [column.name.value.clone()] => {
                    pk = vec![column.name.value.clone()];
                }
                ColumnOption::NotNull | ColumnOption::Null => {}
                _ => {
                    return Err(error_at(
                        column.name.span,
                        format!(
                            "column option '{}' is not supported (only PRIMARY KEY, NULL, NOT NULL)",
                            option.option
                        ),
                    ));
                }
            }
        }
        let (field_type, array) = field_type(&column.data_type, column.name.span)?;
        typed.push((column.name.value.clone(), field_type, array));
    }
    if pk.is_empty() {
        return Err(error_at(span, "a table needs a PRIMARY KEY (a namespace finds its documents by it)"));
    }
    let type_of = |field: &String| typed.iter().find(|(name, _, _)| name == field).map(|(_, t, _)| *t);
    let pk_types = pk
        .iter()
        .map(|f| type_of(f).ok_or_else(|| error_at(span, format!("primary key column '{f}' is not declared"))))
        .collect::<Result<Vec<_>, _>>()?;
    let mut defs = vec![match (&pk[..], &pk_types[..]) {
        ([field], [field_type]) => json!({"field": field, "type": field_type, "index": "hash", "pk": true}),
        _ => json!({"fields": pk, "type": pk_types, "index": "hash", "pk": true}),
    }];
    for (field, field_type, array) in typed.iter().filter(|(field, _, _)| !pk.contains(field)) {
        defs.push(json!({"field": field, "type": field_type, "index": "-", "array": array}));
    }
    let indexes = defs
        .iter()
        .map(|def| IndexDef::from_json(def).map_err(|e| error_at(span, e.to_string())))
        .collect::<Result<_, _>>()?;
    Ok(Statement::CreateNamespace { name, indexes, if_not_exists: table.if_not_exists })
}

/// An SQL column type as a Hotset field type, and whether it is an array.
fn field_type(data_type: &DataType, span: Span) -> Result<(&'static str, bool), SqlError> {
    if let DataType::Array(
        ArrayElemTypeDef::SquareBracket(inner, _)
        | ArrayElemTypeDef::AngleBracket(inner)
        | ArrayElemTypeDef::Parenthesis(inner),
    ) = data_type
    {
        return Ok((field_type(inner, span)?.0, true));
    }
    let text = data_type.to_string().to_ascii_uppercase();
    let base = text.split(['(', ' ']).next().unwrap_or("");
    let mapped = match base {
        "INT" | "INTEGER" | "BIGINT" | "SMALLINT" | "TINYINT" | "INT2" | "INT4" | "INT8" => "int",
        "REAL" | "DOUBLE" | "FLOAT" | "FLOAT4" | "FLOAT8" | "NUMERIC" | "DECIMAL" => "double",
        "TEXT" | "VARCHAR" | "CHAR" | "CHARACTER" | "STRING" | "NVARCHAR" => "string",
        "BOOL" | "BOOLEAN" => "bool",
        _ => {
            return Err(error_at(
                span,
                format!(
                    "column type {text} is not supported (INT, BIGINT, DOUBLE, REAL, NUMERIC, TEXT, VARCHAR, BOOLEAN, or an array of one)"
                ),
            ));
        }
    };
    Ok((mapped, false))
}

/// `CREATE INDEX [IF NOT EXISTS] name ON ns [USING HASH|BTREE] (fields) [WITH (...)]`.
pub(crate) fn create_index(index: &CreateIndex) -> Result<Statement, SqlError> {
    let span = index.table_name.span();
    if index.unique {
        return Err(error_at(span, "UNIQUE indexes are not supported (only the primary key is unique)"));
    }
    if index.predicate.is_some() || !index.include.is_empty() || index.concurrently {
        return Err(error_at(span, "partial, INCLUDE and CONCURRENTLY indexes are not supported"));
    }
    let namespace = single_name(&index.table_name.to_string(), span)?;
    let kind = match &index.using {
        None | Some(IndexType::BTree) => "tree",
        Some(IndexType::Hash) => "hash",
        Some(other) => return Err(error_at(span, format!("index type {other} is not supported (BTREE or HASH)"))),
    };
    let fields: Vec<String> =
        index.columns.iter().map(|c| c.column.expr.to_string().trim_matches('"').to_string()).collect();
    let mut definition = Map::new();
    if let Some(name) = &index.name {
        definition.insert("name".into(), json!(single_name(&name.to_string(), name.span())?));
    }
    definition.insert("fields".into(), json!(fields));
    definition.insert("index".into(), json!(kind));
    for option in &index.with {
        let (key, value) = with_option(option)?;
        definition.insert(key, value);
    }
    Ok(Statement::CreateIndex { namespace, definition, if_not_exists: index.if_not_exists })
}

/// One `WITH (key = value)` option of CREATE INDEX.
fn with_option(option: &Expr) -> Result<(String, Value), SqlError> {
    let refuse =
        || error_at(option.span(), "expected WITH (type = '...', collate = '...', array = true, sparse = true)");
    let Expr::BinaryOp { left, op: sqlparser::ast::BinaryOperator::Eq, right } = option else { return Err(refuse()) };
    let Expr::Identifier(key) = &**left else { return Err(refuse()) };
    let key = key.value.to_ascii_lowercase();
    let value = crate::cond::literal(right)?;
    match (key.as_str(), &value) {
        ("type" | "collate", Value::String(_)) | ("array" | "sparse", Value::Bool(_)) => Ok((key, value)),
        _ => Err(refuse()),
    }
}

/// `DROP TABLE [IF EXISTS] a, b` and `DROP INDEX [IF EXISTS] ns.index`.
pub(crate) fn drop(
    object_type: &ObjectType,
    if_exists: bool,
    names: &[ObjectName],
    cascade: bool,
) -> Result<Statement, SqlError> {
    let span = names.first().map_or(Span::empty(), Spanned::span);
    if cascade {
        return Err(error_at(span, "CASCADE is not supported"));
    }
    match object_type {
        ObjectType::Table => {
            let names = names.iter().map(|n| single_name(&n.to_string(), n.span())).collect::<Result<_, _>>()?;
            Ok(Statement::DropNamespaces { names, if_exists })
        }
        ObjectType::Index => {
            let [name] = names else { return Err(error_at(span, "drop one index at a time")) };
            let parts: Vec<String> = name.0.iter().filter_map(|p| p.as_ident()).map(|i| i.value.clone()).collect();
            let [namespace, index] = &parts[..] else {
                return Err(error_at(span, "name the index with its namespace: DROP INDEX namespace.index"));
            };
            Ok(Statement::DropIndex { namespace: namespace.clone(), index: index.clone(), if_exists })
        }
        other => Err(error_at(span, format!("DROP {other} is not supported (DROP TABLE, DROP INDEX)"))),
    }
}

/// `TRUNCATE [TABLE] a, b`.
pub(crate) fn truncate(targets: &[TruncateTableTarget]) -> Result<Statement, SqlError> {
    let names = targets.iter().map(|t| single_name(&t.name.to_string(), t.name.span())).collect::<Result<_, _>>()?;
    Ok(Statement::Truncate { namespaces: names })
}
