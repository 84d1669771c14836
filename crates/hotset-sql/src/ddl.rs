//! CREATE TABLE, DROP and TRUNCATE: namespaces from SQL.
//!
//! Owns: turning `CREATE TABLE`, `DROP TABLE`, `DROP INDEX` and `TRUNCATE` into typed
//! statements (namespace names and the namespace's index definitions), the SQL column
//! type mapping, and the name helpers `index.rs` shares. Never: touch a database
//! (`exec.rs` runs the statements), or accept what Hotset would not honour (DEFAULT,
//! UNIQUE, foreign keys, CHECK, table options, CASCADE, partitions): each is refused with
//! its position.
//!
//! Mapping: a table is a namespace. Its primary key (a column's `PRIMARY KEY` or one
//! `PRIMARY KEY (a, b)` constraint) becomes the hash primary-key index; every other
//! declared column becomes a typed store-only index (`IndexKind::Store`, `"-"`), so the
//! engine checks that field's type and later indexes on it know it. A column's `COLLATE`
//! sets how the field compares. Documents stay schemaless: fields not declared are stored
//! as they come. `NOT NULL` is accepted; the engine enforces it for the primary key only
//! (every document needs its key), other fields may be absent.

use crate::{SqlError, Statement, error_at, shown, start};
use hotset_core::error::ErrorCode;
use hotset_core::{Collation, FieldType, IndexDef, IndexKind};
use sqlparser::ast::helpers::stmt_create_table::CreateTableBuilder;
use sqlparser::ast::{
    ArrayElemTypeDef, CascadeOption, ColumnDef, ColumnOption, CreateTable, DataType, Expr, HiveFormat, IndexColumn,
    ObjectName, ObjectType, Spanned, TableConstraint,
};
use sqlparser::tokenizer::Span;

/// A declared column: its field, type and how it compares.
struct Column {
    field: String,
    field_type: FieldType,
    array: bool,
    collate: Collation,
    span: Span,
}

/// `CREATE TABLE [IF NOT EXISTS] ns (columns [, PRIMARY KEY (a, b)])`.
pub(crate) fn create_table(table: &CreateTable) -> Result<Statement, SqlError> {
    let span = table.name.span();
    refuse_table_options(table)?;
    let name = namespace_name(&table.name)?;
    let mut pk = constraint_key(&table.constraints)?;
    let mut columns: Vec<Column> = Vec::new();
    for column in &table.columns {
        if columns.iter().any(|c| c.field == column.name.value) {
            return Err(error_at(column.name.span, format!("column '{}' is declared twice", column.name.value)));
        }
        let (declared, is_key) = declared_column(column)?;
        if is_key {
            if pk.is_some() {
                return Err(error_at(
                    column.name.span,
                    format!("a table has one PRIMARY KEY; column '{}' declares another", column.name.value),
                ));
            }
            pk = Some((vec![declared.field.clone()], column.name.span));
        }
        columns.push(declared);
    }
    let Some((pk, pk_span)) = pk else {
        return Err(error_at(span, "a table needs a PRIMARY KEY (a namespace finds its documents by it)"));
    };
    let mut indexes = vec![primary_key(&pk, &columns, pk_span)?];
    for column in columns.iter().filter(|c| !pk.contains(&c.field)) {
        let mut def = IndexDef::store(&column.field, column.field_type).collate(column.collate);
        def.array = column.array;
        def.validate().map_err(|e| error_at(column.span, e.to_string()))?;
        indexes.push(def);
    }
    assert_eq!(indexes.iter().filter(|def| def.pk).count(), 1, "a namespace has exactly one primary key");
    Ok(Statement::CreateNamespace { name, indexes, if_not_exists: table.if_not_exists })
}

/// Refuses every part of CREATE TABLE beyond its name, columns, constraints and IF NOT
/// EXISTS (OR REPLACE, TEMPORARY, AS SELECT, LIKE, WITH, ENGINE, PARTITION BY, ...): the
/// statement must equal the plain table built from those parts alone.
fn refuse_table_options(table: &CreateTable) -> Result<(), SqlError> {
    let plain = |hive_formats: Option<HiveFormat>| {
        CreateTableBuilder::new(table.name.clone())
            .if_not_exists(table.if_not_exists)
            .columns(table.columns.clone())
            .constraints(table.constraints.clone())
            .hive_formats(hive_formats)
            .build()
    };
    let statement = sqlparser::ast::Statement::CreateTable(table.clone());
    // The parser records an empty Hive format for every plain CREATE TABLE.
    if statement == plain(Some(HiveFormat::default())) || statement == plain(None) {
        return Ok(());
    }
    let what = if table.query.is_some() { "CREATE TABLE ... AS SELECT is not supported" } else { "not supported" };
    Err(error_at(
        table.name.span(),
        format!(
            "{what}: only CREATE TABLE [IF NOT EXISTS] name (columns) (no OR REPLACE, TEMPORARY, LIKE, \
             AS SELECT or table options)"
        ),
    ))
}

/// The primary key of a `PRIMARY KEY (a, b)` constraint, if any, and where it is.
fn constraint_key(constraints: &[TableConstraint]) -> Result<Option<(Vec<String>, Span)>, SqlError> {
    let mut key = None;
    for constraint in constraints {
        let span = constraint.span();
        let TableConstraint::PrimaryKey { index_name, index_type, columns, index_options, characteristics, .. } =
            constraint
        else {
            let what = match constraint {
                TableConstraint::Unique { .. } => {
                    "UNIQUE constraints are not supported (only the primary key is unique)"
                }
                TableConstraint::ForeignKey { .. } => "FOREIGN KEY constraints are not supported",
                TableConstraint::Check { .. } => "CHECK constraints are not supported",
                _ => "only a PRIMARY KEY (...) constraint is supported; create other indexes with CREATE INDEX",
            };
            return Err(error_at(span, what));
        };
        if key.is_some() {
            return Err(error_at(span, "a table has one PRIMARY KEY"));
        }
        if index_name.is_some() || index_type.is_some() || !index_options.is_empty() || characteristics.is_some() {
            return Err(error_at(span, "PRIMARY KEY takes only its columns (the key is a hash index)"));
        }
        let fields = columns.iter().map(field_path).collect::<Result<Vec<_>, _>>()?;
        key = Some((fields, span));
    }
    Ok(key)
}

/// A column's field, type and collation, and whether it is declared `PRIMARY KEY`.
fn declared_column(column: &ColumnDef) -> Result<(Column, bool), SqlError> {
    let (field_type, array) = field_type(&column.data_type, column.name.span)?;
    let mut declared = Column {
        field: column.name.value.clone(),
        field_type,
        array,
        collate: Collation::None,
        span: column.name.span,
    };
    let mut is_key = false;
    for option in &column.options {
        // Options' own spans are uneven (DEFAULT's is its value, UNIQUE has none): point at
        // the column, and name the option.
        let span = column.name.span;
        let refuse = |what: &str| Err(error_at(span, format!("{what} is not supported (column '{}')", declared.field)));
        match &option.option {
            ColumnOption::Unique { is_primary: true, characteristics: None } => is_key = true,
            ColumnOption::NotNull | ColumnOption::Null => {}
            ColumnOption::Collation(name) => declared.collate = collation(&name.to_string(), span)?,
            ColumnOption::Unique { is_primary: false, .. } => return refuse("UNIQUE (only the primary key is unique)"),
            ColumnOption::Default(_) => return refuse("DEFAULT (documents are stored as they come)"),
            ColumnOption::ForeignKey { .. } => return refuse("REFERENCES (there are no foreign keys)"),
            ColumnOption::Check(_) => return refuse("CHECK"),
            other => {
                return refuse(&format!("column option '{other}' (only PRIMARY KEY, NOT NULL, NULL and COLLATE are)"));
            }
        }
    }
    Ok((declared, is_key))
}

/// The primary-key index over the key columns, which must be declared and not arrays.
fn primary_key(pk: &[String], columns: &[Column], span: Span) -> Result<IndexDef, SqlError> {
    let mut typed = Vec::new();
    let mut collate = Collation::None;
    for field in pk {
        let Some(column) = columns.iter().find(|c| &c.field == field) else {
            return Err(error_at(span, format!("primary key column '{field}' is not declared")));
        };
        if column.array {
            return Err(error_at(column.span, format!("primary key column '{field}' cannot be an array")));
        }
        if column.collate != Collation::None {
            if collate != Collation::None && collate != column.collate {
                return Err(error_at(column.span, "the primary key's string columns need one collation"));
            }
            collate = column.collate;
        }
        typed.push((field.as_str(), column.field_type));
    }
    let def = match typed[..] {
        [(field, field_type)] => IndexDef::hash(field, field_type),
        _ => IndexDef::composite_typed(&typed, IndexKind::Hash),
    };
    let def = def.pk().collate(collate);
    def.validate().map_err(|e| error_at(span, e.to_string()))?;
    Ok(def)
}

/// An SQL column type as a Hotset field type, and whether it is an array (`INT[]`,
/// `ARRAY<INT>`; the size of `INT[3]` is not checked, as in PostgreSQL).
fn field_type(data_type: &DataType, span: Span) -> Result<(FieldType, bool), SqlError> {
    if let DataType::Array(
        ArrayElemTypeDef::SquareBracket(inner, _)
        | ArrayElemTypeDef::AngleBracket(inner)
        | ArrayElemTypeDef::Parenthesis(inner),
    ) = data_type
    {
        return match field_type(inner, span)? {
            (_, true) => Err(SqlError::with_code(
                span,
                ErrorCode::Schema,
                format!("column type {data_type} is not supported (arrays of arrays)"),
            )),
            (element, false) => Ok((element, true)),
        };
    }
    let text = data_type.to_string().to_ascii_uppercase();
    // `DOUBLE PRECISION`, `VARCHAR(40)`, `INT UNSIGNED`: the first word names the type.
    let base = text.split(['(', ' ']).next().unwrap_or("");
    let mapped = match base {
        "INT" | "INTEGER" | "BIGINT" | "SMALLINT" | "TINYINT" | "INT2" | "INT4" | "INT8" | "INT64" => FieldType::Int,
        "REAL" | "DOUBLE" | "FLOAT" | "FLOAT4" | "FLOAT8" | "FLOAT64" | "NUMERIC" | "DECIMAL" => FieldType::Double,
        "TEXT" | "VARCHAR" | "CHAR" | "CHARACTER" | "STRING" | "NVARCHAR" => FieldType::String,
        "BOOL" | "BOOLEAN" => FieldType::Bool,
        _ => {
            return Err(SqlError::with_code(
                span,
                ErrorCode::Schema,
                format!(
                    "column type {text} is not supported (INT, BIGINT, SMALLINT, DOUBLE, REAL, NUMERIC, TEXT, \
                     VARCHAR, BOOLEAN, or an array of one)"
                ),
            ));
        }
    };
    Ok((mapped, false))
}

/// A collation by name (`utf8_ci`, `ascii_ci`, `numeric`, `none`).
pub(crate) fn collation(name: &str, span: Span) -> Result<Collation, SqlError> {
    let text = name.trim_matches(|c| c == '"' || c == '\'').to_ascii_lowercase();
    Collation::parse(&text)
        .ok_or_else(|| error_at(span, format!("unknown collation '{text}' (none, ascii_ci, utf8_ci, numeric)")))
}

/// The field an index or key column names: `a`, a nested `a.b`, or a quoted `"a.b"`.
/// Expressions, ASC/DESC, NULLS FIRST/LAST and operator classes are refused.
pub(crate) fn field_path(column: &IndexColumn) -> Result<String, SqlError> {
    let span = start(&column.column.expr);
    let order = &column.column;
    if order.options.asc.is_some() || order.options.nulls_first.is_some() || order.with_fill.is_some() {
        return Err(error_at(
            span,
            "ASC, DESC and NULLS are not supported on index fields (a tree serves both orders)",
        ));
    }
    if let Some(class) = &column.operator_class {
        return Err(error_at(class.span, format!("operator class {class} is not supported")));
    }
    match &order.expr {
        Expr::Identifier(ident) => Ok(ident.value.clone()),
        Expr::CompoundIdentifier(parts) => Ok(parts.iter().map(|p| p.value.as_str()).collect::<Vec<_>>().join(".")),
        other => {
            Err(error_at(span, format!("an index on the expression {} is not supported: name a field", shown(other))))
        }
    }
}

/// A namespace name: one identifier, its quotes removed.
pub(crate) fn namespace_name(name: &ObjectName) -> Result<String, SqlError> {
    match name.0.as_slice() {
        [part] => part.as_ident().map(|ident| ident.value.clone()),
        _ => None,
    }
    .ok_or_else(|| error_at(name.span(), format!("expected a namespace name, found {name}")))
}

/// Where a statement is, for errors: sqlparser gives DROP and TRUNCATE no span of their
/// own, so those point at their first name.
pub(crate) fn statement_span(statement: &sqlparser::ast::Statement) -> Span {
    match statement {
        sqlparser::ast::Statement::Drop { names, .. } => names.first().map_or(Span::empty(), Spanned::span),
        sqlparser::ast::Statement::Truncate { table_names, .. } => {
            table_names.first().map_or(Span::empty(), |t| t.name.span())
        }
        sqlparser::ast::Statement::CreateTable(table) => table.name.span(),
        sqlparser::ast::Statement::AlterTable { name, .. } => name.span(),
        // The first token of whatever else it is (`Spanned::span` of a whole statement
        // recurses through every expression in it).
        _ => Span::empty(),
    }
}

/// `DROP TABLE [IF EXISTS] a, b`, `DROP INDEX [IF EXISTS] ns.index` and
/// `DROP INDEX [IF EXISTS] index ON ns`.
pub(crate) fn drop(statement: &sqlparser::ast::Statement) -> Result<Statement, SqlError> {
    let sqlparser::ast::Statement::Drop { object_type, if_exists, names, cascade, purge, temporary, table, .. } =
        statement
    else {
        unreachable!("translate() passes DROP statements only");
    };
    let if_exists = *if_exists;
    let span = names.first().map_or(Span::empty(), Spanned::span);
    if *cascade || *purge || *temporary {
        return Err(error_at(span, "CASCADE, PURGE and TEMPORARY are not supported"));
    }
    match (object_type, table) {
        (ObjectType::Table, Some(table)) => Err(error_at(table.span(), "DROP TABLE takes no ON")),
        (ObjectType::Table, None) => {
            let mut dropped: Vec<String> = Vec::new();
            for name in names {
                let namespace = namespace_name(name)?;
                if dropped.contains(&namespace) {
                    return Err(error_at(name.span(), format!("'{namespace}' is named twice")));
                }
                dropped.push(namespace);
            }
            Ok(Statement::DropNamespaces { names: dropped, if_exists })
        }
        (ObjectType::Index, _) => {
            let [name] = names.as_slice() else { return Err(error_at(span, "drop one index at a time")) };
            let parts: Vec<String> = name.0.iter().filter_map(|p| p.as_ident()).map(|i| i.value.clone()).collect();
            let (namespace, index) = match (&parts[..], table) {
                ([index], Some(table)) => (namespace_name(table)?, index.clone()),
                ([namespace, index], None) => (namespace.clone(), index.clone()),
                _ => {
                    return Err(error_at(
                        span,
                        "name the index with its namespace: DROP INDEX namespace.index or DROP INDEX index ON namespace",
                    ));
                }
            };
            Ok(Statement::DropIndex { namespace, index, if_exists })
        }
        (other, _) => Err(error_at(span, format!("DROP {other} is not supported (DROP TABLE, DROP INDEX)"))),
    }
}

/// `TRUNCATE [TABLE] [ONLY] a, b [CONTINUE IDENTITY] [RESTRICT]`.
pub(crate) fn truncate(statement: &sqlparser::ast::Statement) -> Result<Statement, SqlError> {
    let sqlparser::ast::Statement::Truncate { table_names, partitions, identity, cascade, on_cluster, .. } = statement
    else {
        unreachable!("translate() passes TRUNCATE statements only");
    };
    let span = table_names.first().map_or(Span::empty(), |t| t.name.span());
    let restart = matches!(identity, Some(sqlparser::ast::TruncateIdentityOption::Restart));
    if partitions.is_some() || restart || matches!(cascade, Some(CascadeOption::Cascade)) || on_cluster.is_some() {
        return Err(error_at(span, "PARTITION, RESTART IDENTITY, CASCADE and ON CLUSTER are not supported"));
    }
    let namespaces = table_names.iter().map(|t| namespace_name(&t.name)).collect::<Result<_, _>>()?;
    Ok(Statement::Truncate { namespaces })
}
