//! Update and delete by query: changing every matching document in one atomic step.
//!
//! Owns: evaluating `SET` expressions against each matching document's old values,
//! building the new documents, and refusing the whole update (changing nothing) when any
//! one of them fails: a type error, a non-number in arithmetic, a division by zero, an
//! overflow, or a change to the primary key. Never: leave some matches updated and
//! others not.

use super::ast::{ArithOp, Expr, Query, SetField};
use super::exec;
use crate::clock::Clock;
use crate::doc::{self, FieldPath};
use crate::error::{Error, Result};
use crate::limits::EXPRESSION_DEPTH_MAX;
use crate::namespace::{Extracted, NamespaceData};
use serde_json::{Map, Value};
use std::sync::Arc;

/// The rows a query matches, in its sort order and window (joins and aggregations are
/// refused: they have no meaning for a write); its time limit is measured on `clock`.
pub(crate) fn matching_rows(data: &NamespaceData, query: &Query, clock: &dyn Clock) -> Result<Vec<u32>> {
    if !query.joins.is_empty() || !query.aggregations.is_empty() {
        return Err(Error::InvalidQuery {
            reason: "update and delete by query take a filter, not joins or aggregations".to_string(),
        });
    }
    exec::page_rows(data, query, clock)
}

/// A checked new document for one row: its stored bytes and indexed values.
pub(crate) type Update = (u32, Arc<[u8]>, Extracted);

/// New documents for `rows` under `sets`, all checked (types, size); nothing is applied.
pub(crate) fn updated_documents(data: &NamespaceData, rows: &[u32], sets: &[SetField]) -> Result<Vec<Update>> {
    let pk_fields = data.index_defs().into_iter().find(|d| d.pk).map(|d| d.fields).unwrap_or_default();
    for set in sets {
        let field = match set {
            SetField::Set(field, _) | SetField::Drop(field) => field,
        };
        let touches = pk_fields
            .iter()
            .any(|pk| pk == field || pk.starts_with(&format!("{field}.")) || field.starts_with(&format!("{pk}.")));
        if touches {
            return Err(Error::PrimaryKeyUpdate { namespace: data.name().to_string(), field: field.clone() });
        }
        if field.is_empty() || field.split('.').any(str::is_empty) {
            return Err(Error::InvalidQuery { reason: format!("invalid field name '{field}'") });
        }
        if let SetField::Set(_, expr) = set
            && expr_depth(expr) > EXPRESSION_DEPTH_MAX
        {
            return Err(Error::InvalidQuery {
                reason: format!(
                    "the expression for '{field}' nests deeper than expression_depth_max ({EXPRESSION_DEPTH_MAX} levels)"
                ),
            });
        }
    }
    rows.iter()
        .map(|&row| {
            let old = doc::decode(data.doc(row).expect("matched rows are live"));
            let mut new = old.clone();
            for set in sets {
                match set {
                    SetField::Set(field, expr) => set_path(&mut new, field, evaluate(expr, &old)?)?,
                    SetField::Drop(field) => drop_path(&mut new, field),
                }
            }
            doc::ensure_object(&new)?;
            let bytes = data.encode_checked(&new)?;
            Ok((row, bytes, data.extract(&new)?))
        })
        .collect()
}

/// Applies checked new documents.
pub(crate) fn apply(data: &mut NamespaceData, updates: Vec<Update>) {
    for (row, bytes, values) in updates {
        data.replace_row(row, bytes, values);
    }
}

/// How deeply an expression nests, counted without recursion (so a tree built in code,
/// not parsed, cannot exhaust the stack here either; `evaluate` recurses only once this
/// has bounded it).
fn expr_depth(expr: &Expr) -> usize {
    let mut deepest = 0;
    let mut pending = vec![(expr, 1)];
    while let Some((expr, depth)) = pending.pop() {
        deepest = deepest.max(depth);
        if let Expr::Binary(left, _, right) = expr {
            pending.push((left, depth + 1));
            pending.push((right, depth + 1));
        }
    }
    deepest
}

fn evaluate(expr: &Expr, doc: &Value) -> Result<Value> {
    match expr {
        Expr::Value(value) => Ok(value.clone()),
        Expr::Field(field) => {
            Ok(doc::field_values(doc, &FieldPath::new(field)).0.first().map_or(Value::Null, |v| (*v).clone()))
        }
        Expr::Binary(left, op, right) => arithmetic(evaluate(left, doc)?, *op, evaluate(right, doc)?),
    }
}

/// Integer arithmetic stays exact (overflow is an error); anything with a double is a
/// double; `null` in, `null` out, as SQL does.
fn arithmetic(left: Value, op: ArithOp, right: Value) -> Result<Value> {
    let fail = |reason: String| Err(Error::InvalidQuery { reason });
    if left.is_null() || right.is_null() {
        return Ok(Value::Null);
    }
    let (Some(l), Some(r)) = (left.as_f64(), right.as_f64()) else {
        return fail(format!("arithmetic needs numbers, got {left} and {right}"));
    };
    if op == ArithOp::Div && r == 0.0 {
        return fail("division by zero".to_string());
    }
    if let (Some(a), Some(b)) = (left.as_i64(), right.as_i64()) {
        let exact = match op {
            ArithOp::Add => a.checked_add(b),
            ArithOp::Sub => a.checked_sub(b),
            ArithOp::Mul => a.checked_mul(b),
            // `checked_rem`: i64::MIN % -1 overflows (and panicked here); the division
            // then reports the overflow.
            ArithOp::Div if a.checked_rem(b).is_none_or(|r| r == 0) => a.checked_div(b),
            ArithOp::Div => return Ok(float(a as f64 / b as f64)),
        };
        return exact.map(Value::from).map_or_else(|| fail(format!("integer overflow in {a} and {b}")), Ok);
    }
    Ok(float(match op {
        ArithOp::Add => l + r,
        ArithOp::Sub => l - r,
        ArithOp::Mul => l * r,
        ArithOp::Div => l / r,
    }))
}

fn float(value: f64) -> Value {
    serde_json::Number::from_f64(value).map_or(Value::Null, Value::Number)
}

fn set_path(doc: &mut Value, field: &str, value: Value) -> Result<()> {
    let parts: Vec<&str> = field.split('.').collect();
    let mut node = doc;
    for (i, part) in parts.iter().enumerate() {
        let Value::Object(map) = node else {
            return Err(Error::InvalidQuery {
                reason: format!("cannot set '{field}': '{}' is not an object", parts[..i].join(".")),
            });
        };
        if i + 1 == parts.len() {
            map.insert(part.to_string(), value);
            return Ok(());
        }
        node = map.entry(part.to_string()).or_insert_with(|| Value::Object(Map::new()));
    }
    Ok(())
}

fn drop_path(doc: &mut Value, field: &str) {
    let parts: Vec<&str> = field.split('.').collect();
    let mut node = doc;
    for (i, part) in parts.iter().enumerate() {
        let Value::Object(map) = node else { return };
        if i + 1 == parts.len() {
            map.shift_remove(*part);
            return;
        }
        match map.get_mut(*part) {
            Some(child) => node = child,
            None => return,
        }
    }
}
