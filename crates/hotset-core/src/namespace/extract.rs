//! Extraction: a document's indexed values, converted and checked before anything changes.
//!
//! Owns: turning a parsed document into one `Vec<Scalar>` per column, with every type
//! and arity rule of the index definitions checked, so a write either fits all indexes
//! or fails before touching the store. Never: modify the namespace.

use crate::doc::{FieldPath, field_values};
use crate::error::{Error, Result};
use crate::index::column::Column;
use crate::value::{Scalar, scalar_for_type};
use serde_json::Value;

/// The converted values of one document, one entry per column slot (`None` for a
/// dropped column slot).
pub type Extracted = Vec<Option<Vec<Scalar>>>;

/// Converts the values of `doc` for every live column. `index_of_column` names the index
/// reported in a type error.
pub fn extract(
    doc: &Value,
    columns: &[Option<Column>],
    index_of_column: &dyn Fn(usize) -> String,
) -> Result<Extracted> {
    columns
        .iter()
        .enumerate()
        .map(|(id, column)| match column {
            None => Ok(None),
            Some(column) => column_values(doc, column).map(Some).map_err(|found| Error::WrongType {
                index: index_of_column(id),
                field: column.spec.path.as_str().to_string(),
                expected: expected_text(column),
                found,
            }),
        })
        .collect()
}

fn expected_text(column: &Column) -> String {
    let name = column.spec.field_type.name();
    if column.spec.array { format!("{name} or an array of {name}") } else { name.to_string() }
}

/// The values of one column's field in `doc`, or the kind found when they do not fit.
pub fn column_values(doc: &Value, column: &Column) -> std::result::Result<Vec<Scalar>, String> {
    let spec = &column.spec;
    let (values, saw_array) = field_values(doc, &spec.path);
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
