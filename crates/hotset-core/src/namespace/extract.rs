//! Extraction: a document's indexed values, converted and checked before anything changes.
//!
//! Owns: turning a parsed document into one `Vec<Scalar>` per column, with every type
//! and arity rule of the index definitions checked, so a write either fits all indexes
//! or fails before touching the store. Never: modify the namespace.

use crate::doc::{FieldPath, Fields, field_values};
use crate::error::{Error, Result};
use crate::index::column::{Column, ColumnSpec};
use crate::value::{Scalar, scalar_for_type};
use serde_json::Value;

/// The converted values of one document, one entry per column slot (`None` for a
/// dropped column slot).
pub type Extracted = Vec<Option<Vec<Scalar>>>;

/// A column slot as extraction sees it: the spec of a live column, or nothing for a
/// dropped slot. Implemented by the namespace's columns and by the owned copies an
/// `Extractor` keeps.
pub trait SpecSlot {
    fn spec(&self) -> Option<&ColumnSpec>;
}

impl SpecSlot for Option<Column> {
    fn spec(&self) -> Option<&ColumnSpec> {
        self.as_ref().map(|column| &column.spec)
    }
}

impl SpecSlot for Option<ColumnSpec> {
    fn spec(&self) -> Option<&ColumnSpec> {
        self.as_ref()
    }
}

/// Converts the values of `doc` for every live column. `index_of_column` names the index
/// reported in a type error.
pub fn extract<S: SpecSlot, D: Fields + ?Sized>(
    doc: &D,
    columns: &[S],
    index_of_column: &dyn Fn(usize) -> String,
) -> Result<Extracted> {
    columns
        .iter()
        .enumerate()
        .map(|(id, column)| match column.spec() {
            None => Ok(None),
            Some(spec) => column_values(doc, spec).map(Some).map_err(|found| Error::WrongType {
                index: index_of_column(id),
                field: spec.path.as_str().to_string(),
                expected: expected_text(spec),
                found,
            }),
        })
        .collect()
}

fn expected_text(spec: &ColumnSpec) -> String {
    let name = spec.field_type.name();
    if spec.array { format!("{name} or an array of {name}") } else { name.to_string() }
}

/// The values of one column's field in `doc`, or the kind found when they do not fit.
pub fn column_values<D: Fields + ?Sized>(doc: &D, spec: &ColumnSpec) -> std::result::Result<Vec<Scalar>, String> {
    let (values, saw_array) = doc.values_at(&spec.path);
    if saw_array && !spec.array {
        return Err("an array (declare the index with the array option)".to_string());
    }
    let mut out = Vec::with_capacity(values.len());
    for value in values {
        match scalar_for_type(value, spec.field_type, spec.collation) {
            Ok(Scalar::Null) => {}
            Ok(scalar) => out.push(scalar),
            Err(found) => return Err(found.to_string()),
        }
    }
    Ok(out)
}

/// The primary key value of `doc` as JSON (a tuple for composite keys), for messages.
pub fn key_json(doc: &Value, paths: &[FieldPath]) -> Value {
    let one = |path: &FieldPath| field_values(doc, path).0.first().map_or(Value::Null, |v| (*v).clone());
    match paths {
        [only] => one(only),
        many => Value::Array(many.iter().map(one).collect()),
    }
}
