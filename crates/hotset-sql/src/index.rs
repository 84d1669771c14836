//! CREATE INDEX: what the statement asks for, and the index it makes on a namespace.
//!
//! Owns: translating `CREATE INDEX` into an [`IndexSpec`] (fields, kind, `WITH` options,
//! each checked with its position) and `IndexSpec::resolve`, which completes it against
//! the namespace's existing indexes. Never: touch a database (`exec.rs` reads the
//! namespace's indexes and adds the result), or accept UNIQUE, partial, expression or
//! INCLUDE indexes.
//!
//! A field's declaration is the first index on it (a typed column from CREATE TABLE, or
//! any earlier index): its type, collation and array flag are how the engine stores and
//! compares that field. An index that disagreed with them would never be chosen by the
//! planner, so `resolve` takes them from the declaration and refuses a `WITH` option that
//! contradicts it; `WITH (type = ...)` types only the fields nothing declares yet.

use crate::ddl::{collation, field_path, namespace_name};
use crate::{SqlError, Statement, error_at};
use hotset_core::error::ErrorCode;
use hotset_core::{Collation, Error, FieldType, IndexDef, IndexKind};
use serde_json::Value;
use sqlparser::ast::{BinaryOperator, CreateIndex, Expr, IndexOption, IndexType, ObjectName, Spanned};

/// What a `CREATE INDEX` statement asks for; the options left out are taken from the
/// fields' declarations when it runs ([`IndexSpec::resolve`]).
#[derive(Debug, Clone, PartialEq)]
pub struct IndexSpec {
    /// The index name; without one, `<namespace>_<field>_..._idx` (as PostgreSQL names it).
    pub name: String,
    pub fields: Vec<String>,
    /// A tree unless `USING HASH`.
    pub kind: IndexKind,
    /// `WITH (type = ...)`: the type of the fields no index declares yet (when every
    /// field is declared, it must agree with them).
    pub field_type: Option<FieldType>,
    /// `WITH (collate = ...)`.
    pub collate: Option<Collation>,
    /// `WITH (array = ...)`.
    pub array: Option<bool>,
    /// `WITH (sparse = true)`: documents without the field are left out of the index.
    pub sparse: bool,
}

/// Where a field is declared: the first index on it.
struct Declaration<'a> {
    index: &'a str,
    field_type: FieldType,
    collate: Collation,
    array: bool,
}

/// `CREATE INDEX [IF NOT EXISTS] [name] ON ns [USING BTREE|HASH|TEXT] (fields) [USING ...]
/// [WITH (type = 'int', collate = 'utf8_ci', array = true, sparse = true)]`.
pub(crate) fn create_index(index: &CreateIndex) -> Result<Statement, SqlError> {
    let span = index.table_name.span();
    if index.unique {
        return Err(error_at(span, "UNIQUE indexes are not supported (only the primary key is unique)"));
    }
    if index.predicate.is_some() || !index.include.is_empty() || index.concurrently || index.nulls_distinct.is_some() {
        return Err(error_at(span, "partial, INCLUDE, CONCURRENTLY and NULLS DISTINCT indexes are not supported"));
    }
    if !index.alter_options.is_empty() {
        return Err(error_at(span, "ALGORITHM and LOCK are not supported"));
    }
    let namespace = namespace_name(&index.table_name)?;
    let kind = index_kind(index)?;
    let mut fields: Vec<String> = Vec::new();
    for column in &index.columns {
        let field = field_path(column)?;
        if fields.contains(&field) {
            return Err(error_at(column.span(), format!("field '{field}' is listed twice")));
        }
        fields.push(field);
    }
    let name = match &index.name {
        Some(name) => namespace_name(name).map_err(|_| unqualified(name))?,
        None => format!("{namespace}_{}_idx", fields.join("_")),
    };
    let mut spec = IndexSpec { name, fields, kind, field_type: None, collate: None, array: None, sparse: false };
    let mut given: Vec<String> = Vec::new();
    for option in &index.with {
        let key = with_option(option, &mut spec)?;
        if given.contains(&key) {
            return Err(error_at(option.span(), format!("WITH gives {key} twice")));
        }
        given.push(key);
    }
    Ok(Statement::CreateIndex { namespace, index: spec, if_not_exists: index.if_not_exists })
}

fn unqualified(name: &ObjectName) -> SqlError {
    error_at(name.span(), format!("an index name is one identifier (its namespace follows ON), found {name}"))
}

/// `USING` before or after the fields: BTREE (the default), HASH, or TEXT (also FULLTEXT
/// and GIN) for a full-text index over the fields.
fn index_kind(index: &CreateIndex) -> Result<IndexKind, SqlError> {
    let span = index.table_name.span();
    let mut using: Vec<&IndexType> = index.using.iter().collect();
    for option in &index.index_options {
        match option {
            IndexOption::Using(kind) => using.push(kind),
            IndexOption::Comment(_) => return Err(error_at(span, "COMMENT is not supported")),
        }
    }
    let kind_of = |kind: &IndexType| match kind {
        IndexType::BTree => Ok(IndexKind::Tree),
        IndexType::Hash => Ok(IndexKind::Hash),
        // GIN is what PostgreSQL users write for full-text search.
        IndexType::GIN => Ok(IndexKind::Text),
        IndexType::Custom(name) if ["text", "fulltext"].contains(&name.value.to_ascii_lowercase().as_str()) => {
            Ok(IndexKind::Text)
        }
        other => Err(SqlError::with_code(
            span,
            ErrorCode::Schema,
            format!("index type {other} is not supported (BTREE, HASH or TEXT)"),
        )),
    };
    match using.as_slice() {
        [] => Ok(IndexKind::Tree),
        [kind] => kind_of(kind),
        _ => Err(error_at(span, "give USING once")),
    }
}

/// One `WITH (key = value)` option of CREATE INDEX (a value may be quoted or not); the
/// key, lowercase.
fn with_option(option: &Expr, spec: &mut IndexSpec) -> Result<String, SqlError> {
    let expected = "expected WITH (type = 'int', collate = 'utf8_ci', array = true, sparse = true)";
    let span = option.span();
    let Expr::BinaryOp { left, op: BinaryOperator::Eq, right } = option else {
        return Err(error_at(span, expected));
    };
    let Expr::Identifier(key) = &**left else { return Err(error_at(span, expected)) };
    let key = key.value.to_ascii_lowercase();
    let value = match &**right {
        Expr::Identifier(word) => Value::String(word.value.clone()),
        other => crate::cond::literal(other)?,
    };
    match (key.as_str(), value) {
        ("type", Value::String(text)) => {
            let parsed = FieldType::parse(&text.to_ascii_lowercase()).ok_or_else(|| {
                error_at(right.span(), format!("unknown field type '{text}' (int, double, string, bool)"))
            })?;
            spec.field_type = Some(parsed);
        }
        ("collate", Value::String(text)) => spec.collate = Some(collation(&text, right.span())?),
        ("array", Value::Bool(on)) => spec.array = Some(on),
        ("sparse", Value::Bool(on)) => spec.sparse = on,
        _ => return Err(error_at(span, expected)),
    }
    Ok(key)
}

impl IndexSpec {
    /// The index definition, its options completed from `existing` (the namespace's
    /// indexes, in order): each field's type, collation and array flag are its
    /// declaration's; `WITH` may repeat them but not contradict them.
    pub fn resolve(&self, existing: &[IndexDef]) -> hotset_core::Result<IndexDef> {
        if self.kind == IndexKind::Text {
            // A text index reads strings, whatever other indexes say of the fields.
            let fields: Vec<&str> = self.fields.iter().map(String::as_str).collect();
            let def = IndexDef::text(&fields).named(&self.name);
            def.validate()?;
            return Ok(def);
        }
        let refuse = |reason: String| Error::InvalidIndex { index: self.name.clone(), reason };
        let declarations: Vec<Option<Declaration>> = self.fields.iter().map(|f| declaration(existing, f)).collect();
        // `WITH (type = ...)` types the fields nothing declares; when there are none, it
        // must agree with the declarations.
        let some_undeclared = declarations.iter().any(Option::is_none);
        let mut typed = Vec::with_capacity(self.fields.len());
        for (field, declared) in self.fields.iter().zip(&declarations) {
            let field_type = match (declared, self.field_type) {
                (Some(declared), Some(given)) if declared.field_type != given && !some_undeclared => {
                    return Err(refuse(format!(
                        "field '{field}' is {} (index '{}'); WITH (type = '{}') contradicts it",
                        declared.field_type.name(),
                        declared.index,
                        given.name()
                    )));
                }
                (Some(declared), _) => declared.field_type,
                (None, Some(given)) => given,
                (None, None) => {
                    return Err(refuse(format!(
                        "the type of field '{field}' is not known: declare it in CREATE TABLE or give WITH (type = '...')"
                    )));
                }
            };
            typed.push((field.as_str(), field_type));
        }
        debug_assert_eq!(typed.len(), self.fields.len(), "every field typed, in order");
        let array = self.array(&declarations, &refuse)?;
        let collate = self.collation(&declarations, &typed, &refuse)?;
        let mut def = match typed[..] {
            [(field, field_type)] => IndexDef::new(field, self.kind, field_type),
            _ => IndexDef::composite_typed(&typed, self.kind),
        }
        .named(&self.name)
        .collate(collate);
        def.array = array;
        def.sparse = self.sparse;
        def.validate()?;
        Ok(def)
    }

    /// Whether the index is an array index: as declared, and one field only.
    fn array(
        &self,
        declarations: &[Option<Declaration>],
        refuse: &dyn Fn(String) -> Error,
    ) -> hotset_core::Result<bool> {
        let declared = declarations.iter().flatten().find(|d| d.array);
        match (declared, self.array) {
            (Some(d), _) if self.fields.len() > 1 => Err(refuse(format!(
                "a composite index cannot include an array field (index '{}' declares one)",
                d.index
            ))),
            (Some(d), Some(false)) => {
                Err(refuse(format!("the field is an array (index '{}'); WITH (array = false) contradicts it", d.index)))
            }
            (Some(_), _) => Ok(true),
            (None, given) if declarations.iter().any(Option::is_some) && given == Some(true) => {
                Err(refuse("the field is declared without array; WITH (array = true) contradicts it".to_string()))
            }
            (None, given) => Ok(given.unwrap_or(false)),
        }
    }

    /// The index's collation: the one its declared string fields compare with (they must
    /// agree), or `WITH (collate = ...)` when none is declared.
    fn collation(
        &self,
        declarations: &[Option<Declaration>],
        typed: &[(&str, FieldType)],
        refuse: &dyn Fn(String) -> Error,
    ) -> hotset_core::Result<Collation> {
        let mut collate = self.collate;
        for ((field, field_type), declared) in typed.iter().zip(declarations) {
            let Some(declared) = declared.as_ref().filter(|_| *field_type == FieldType::String) else { continue };
            match collate {
                Some(wanted) if wanted != declared.collate => {
                    return Err(refuse(format!(
                        "field '{field}' compares with collation {} (index '{}'), so an index with {} would never \
                         be used: set the collation where the field is declared (CREATE TABLE ... {field} TEXT \
                         COLLATE {})",
                        declared.collate.name(),
                        declared.index,
                        wanted.name(),
                        wanted.name()
                    )));
                }
                _ => collate = Some(declared.collate),
            }
        }
        Ok(collate.unwrap_or(Collation::None))
    }
}

/// The first index on `field`, and the field's type, collation and array flag there.
fn declaration<'a>(existing: &'a [IndexDef], field: &str) -> Option<Declaration<'a>> {
    existing.iter().find_map(|def| {
        let at = def.fields.iter().position(|f| f == field)?;
        Some(Declaration {
            index: &def.name,
            field_type: def.type_of(at),
            collate: def.collation_of(at),
            array: def.array,
        })
    })
}
