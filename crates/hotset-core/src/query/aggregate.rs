//! Aggregations over every matching row: count, sum, avg, min, max, facet, distinct.
//!
//! Owns: computing each aggregation from the matched row ids. Numbers aggregate every
//! numeric value of the field (all elements of an array); a facet over one field counts
//! each distinct value a document has, a facet over several fields groups documents by
//! the tuple of each field's first value (`null` when empty). Strings group by their
//! collation (`utf8_ci` groups `Ёлка` with `ёлка`) and show the first spelling met.
//! Never: change rows, or fail on documents whose values are of mixed kinds.

use super::ast::{Aggregation, Facet};
use super::pred::{Access, RowView, sort_order};
use super::result::{AggregationResult, FacetGroup};
use crate::doc::{self, FieldPath};
use crate::error::{Error, Result};
use crate::namespace::NamespaceData;
use crate::value::{FieldType, Scalar, ScalarRef, group_key, scalar_for_type, scalar_natural};
use serde_json::Value;
use std::cmp::Ordering;
use std::collections::HashMap;

pub(crate) fn aggregate(
    data: &NamespaceData,
    rows: &[u32],
    aggregations: &[Aggregation],
) -> Result<Vec<AggregationResult>> {
    aggregations
        .iter()
        .map(|aggregation| {
            Ok(match aggregation {
                Aggregation::Count => AggregationResult::Count(rows.len() as u64),
                Aggregation::Sum(field) => numeric(data, rows, field, "sum"),
                Aggregation::Avg(field) => numeric(data, rows, field, "avg"),
                Aggregation::Min(field) => numeric(data, rows, field, "min"),
                Aggregation::Max(field) => numeric(data, rows, field, "max"),
                Aggregation::Facet(facet) => facet_result(data, rows, facet)?,
                Aggregation::Distinct(field) => distinct(data, rows, field),
            })
        })
        .collect()
}

fn numeric(data: &NamespaceData, rows: &[u32], field: &str, kind: &'static str) -> AggregationResult {
    let access = Access::for_field(data, field);
    let (mut int_sum, mut float_sum, mut all_ints, mut count) = (0i128, 0f64, true, 0u64);
    let (mut low, mut high): (Option<Scalar>, Option<Scalar>) = (None, None);
    for &row in rows {
        let view = RowView::new(data, row);
        view.any(&access, |v| {
            let Some(number) = v.as_f64() else { return false };
            count += 1;
            match v {
                ScalarRef::Int(i) => int_sum += i128::from(i),
                _ => {
                    all_ints = false;
                    float_sum += number;
                }
            }
            let beyond = |current: &Option<Scalar>, want: Ordering| {
                current.as_ref().and_then(Scalar::as_ref).is_none_or(|c| crate::value::compare(v, c) == Some(want))
            };
            if beyond(&low, Ordering::Less) {
                low = Some(v.to_owned());
            }
            if beyond(&high, Ordering::Greater) {
                high = Some(v.to_owned());
            }
            false
        });
    }
    let sum = || {
        if all_ints && let Ok(exact) = i64::try_from(int_sum) {
            return Value::from(exact);
        }
        number_value(int_sum as f64 + float_sum)
    };
    let value = match (kind, count) {
        (_, 0) => Value::Null,
        ("sum", _) => sum(),
        ("avg", _) => number_value((int_sum as f64 + float_sum) / count as f64),
        ("min", _) => low.map_or(Value::Null, |s| scalar_json(&s)),
        _ => high.map_or(Value::Null, |s| scalar_json(&s)),
    };
    AggregationResult::Value { kind, field: field.to_string(), value }
}

fn number_value(value: f64) -> Value {
    serde_json::Number::from_f64(value).map_or(Value::Null, Value::Number)
}

fn scalar_json(value: &Scalar) -> Value {
    match value {
        Scalar::Null => Value::Null,
        Scalar::Bool(b) => Value::Bool(*b),
        Scalar::Int(i) => Value::from(*i),
        Scalar::Double(d) => number_value(d.0),
        Scalar::Str(s) => Value::String(String::from_utf8_lossy(s).into_owned()),
    }
}

/// Reads a field's values for grouping: the key (with the field's collation, equal
/// numbers made one) and, only when asked, the value to show (the document's own
/// spelling, so documents are parsed once per new group rather than once per row).
struct GroupReader {
    access: Access,
    path: FieldPath,
    collation: crate::collate::Collation,
    /// The type of the field's column, when the keys come from one.
    column_type: Option<FieldType>,
}

impl GroupReader {
    fn new(data: &NamespaceData, field: &str) -> GroupReader {
        let access = Access::for_field(data, field);
        let column_type = match access {
            Access::Column(column) => Some(data.column(column).spec.field_type),
            _ => None,
        };
        GroupReader { access, path: FieldPath::new(field), collation: data.field_collation(field), column_type }
    }

    fn keys(&self, view: &RowView<'_>) -> Vec<Scalar> {
        let mut keys = Vec::new();
        match &self.access {
            Access::Column(_) | Access::Rank(_) => {
                view.any(&self.access, |v| {
                    keys.push(group_key(v.to_owned()));
                    false
                });
            }
            Access::Doc(..) => {
                let (values, _) = doc::field_values(view.doc(), &self.path);
                keys.extend(values.iter().filter_map(|v| scalar_natural(v, self.collation)).map(group_key));
            }
        }
        keys
    }

    /// The document's value whose key is `key`.
    fn shown(&self, view: &RowView<'_>, key: &Scalar) -> Value {
        let (values, _) = doc::field_values(view.doc(), &self.path);
        values.iter().find(|v| self.key_of(v).as_ref() == Some(key)).map_or(Value::Null, |v| (*v).clone())
    }

    /// A document value's key, converted as its column converts it. (Converted by its own
    /// kind instead, an int in a double column, 2^53 + 1 say, missed the key read from the
    /// column, 2^53, and the group showed `null`.)
    fn key_of(&self, value: &Value) -> Option<Scalar> {
        let scalar = match self.column_type {
            Some(field_type) => scalar_for_type(value, field_type, self.collation).ok().filter(|s| *s != Scalar::Null),
            None => scalar_natural(value, self.collation),
        };
        scalar.map(group_key)
    }
}

fn facet_result(data: &NamespaceData, rows: &[u32], facet: &Facet) -> Result<AggregationResult> {
    if facet.fields.is_empty() {
        return Err(Error::InvalidQuery { reason: "a facet needs at least one field".to_string() });
    }
    let readers: Vec<GroupReader> = facet.fields.iter().map(|f| GroupReader::new(data, f)).collect();
    let mut groups: HashMap<Vec<Scalar>, (Vec<Value>, u64)> = HashMap::new();
    let mut count = |view: &RowView<'_>, key: Vec<Scalar>| {
        let shown = || {
            key.iter()
                .zip(&readers)
                .map(|(k, r)| if *k == Scalar::Null { Value::Null } else { r.shown(view, k) })
                .collect()
        };
        match groups.get_mut(&key) {
            Some(group) => group.1 += 1,
            None => {
                let values = shown();
                groups.insert(key, (values, 1));
            }
        }
    };
    for &row in rows {
        let view = RowView::new(data, row);
        if let [reader] = &readers[..] {
            let mut keys = reader.keys(&view);
            keys.sort();
            keys.dedup();
            for key in keys {
                count(&view, vec![key]);
            }
        } else {
            let key = readers.iter().map(|r| r.keys(&view).into_iter().next().unwrap_or(Scalar::Null)).collect();
            count(&view, key);
        }
    }
    let mut list: Vec<(Vec<Scalar>, Vec<Value>, u64)> = groups.into_iter().map(|(k, (v, c))| (k, v, c)).collect();
    let sort = facet_sort(facet)?;
    list.sort_by(|a, b| {
        for (field, desc) in &sort {
            let order = match field {
                None => a.2.cmp(&b.2),
                Some(i) => sort_order(Some(&a.0[*i]), Some(&b.0[*i])),
            };
            let order = if *desc { order.reverse() } else { order };
            if order != Ordering::Equal {
                return order;
            }
        }
        a.0.iter().zip(&b.0).map(|(x, y)| sort_order(Some(x), Some(y))).find(|o| o.is_ne()).unwrap_or(Ordering::Equal)
    });
    let groups_total = list.len();
    let groups = list
        .into_iter()
        .skip(facet.offset)
        .take(facet.limit.unwrap_or(usize::MAX))
        .map(|(_, values, count)| FacetGroup { values, count })
        .collect();
    Ok(AggregationResult::Facet { fields: facet.fields.clone(), groups, groups_total })
}

/// The facet's sort as (field position or `None` for the count, descending).
fn facet_sort(facet: &Facet) -> Result<Vec<(Option<usize>, bool)>> {
    if facet.sort.is_empty() {
        return Ok(vec![(None, true)]);
    }
    facet
        .sort
        .iter()
        .map(|key| {
            if key.field == "count" {
                return Ok((None, key.desc));
            }
            match facet.fields.iter().position(|f| *f == key.field) {
                Some(at) => Ok((Some(at), key.desc)),
                None => Err(Error::InvalidQuery {
                    reason: format!("a facet sorts by 'count' or one of its fields, not '{}'", key.field),
                }),
            }
        })
        .collect()
}

fn distinct(data: &NamespaceData, rows: &[u32], field: &str) -> AggregationResult {
    let reader = GroupReader::new(data, field);
    let mut seen: HashMap<Scalar, Value> = HashMap::new();
    for &row in rows {
        let view = RowView::new(data, row);
        for key in reader.keys(&view) {
            if let std::collections::hash_map::Entry::Vacant(slot) = seen.entry(key) {
                let shown = reader.shown(&view, slot.key());
                slot.insert(shown);
            }
        }
    }
    let mut values: Vec<(Scalar, Value)> = seen.into_iter().collect();
    values.sort_by(|a, b| sort_order(Some(&a.0), Some(&b.0)));
    AggregationResult::Distinct { field: field.to_string(), values: values.into_iter().map(|(_, v)| v).collect() }
}
