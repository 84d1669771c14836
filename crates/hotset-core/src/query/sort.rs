//! Sorting matched rows by one or more fields, only as far as the page needs.
//!
//! Owns: reading each row's sort values once, and ordering rows so the requested window
//! (`offset..offset+limit`) holds the right rows in the right order, with a partial
//! selection when the window is small. Never: promise an order between rows whose sort
//! values are all equal (add the primary key to the sort for a total order).

use super::fulltext::Ranks;
use super::planner::SortSpec;
use super::pred::{Access, RowView, sort_order};
use crate::index::column::Column;
use crate::namespace::NamespaceData;
use crate::value::{FieldType, Scalar, ScalarRef};
use std::cmp::Ordering;
use std::ops::Range;

/// Orders `rows` so that the returned window of it is the page; returns the window.
pub(crate) fn sort_rows(
    data: &NamespaceData,
    rows: &mut Vec<u32>,
    specs: &[SortSpec],
    offset: usize,
    limit: Option<usize>,
) -> Range<usize> {
    let start = offset.min(rows.len());
    let end = limit.map_or(rows.len(), |l| start.saturating_add(l).min(rows.len()));
    if specs.is_empty() || start == end {
        return start..end;
    }
    if let [spec] = specs
        && let Some(keys) = int_keys(data, rows, spec)
    {
        return sort_by_int_keys(rows, keys, spec.desc, start, end);
    }
    if let Some(columns) = int_columns::<2>(data, specs) {
        return sort_by_int_tuples(rows, columns, start, end);
    }
    if let Some(columns) = int_columns::<3>(data, specs) {
        return sort_by_int_tuples(rows, columns, start, end);
    }
    if let [SortSpec { access: Access::Rank(ranks), desc, .. }] = specs {
        return sort_by_rank(rows, ranks, *desc, start, end);
    }
    // Sort values of all rows in one flat buffer (row i's at `i * width`), ordered
    // through a permutation: one allocation however many keys there are.
    let width = specs.len();
    let mut values: Vec<Option<Scalar>> = Vec::with_capacity(rows.len() * width);
    for &row in rows.iter() {
        let view = RowView::new(data, row);
        values.extend(specs.iter().map(|s| view.first(&s.access)));
    }
    let mut order: Vec<u32> = (0..rows.len() as u32).collect();
    let by_values = |a: &u32, b: &u32| {
        let (a, b) = (*a as usize * width, *b as usize * width);
        compare_keys(&values[a..a + width], &values[b..b + width], specs)
    };
    select_window(&mut order, end, by_values);
    let sorted: Vec<u32> = order.iter().map(|&i| rows[i as usize]).collect();
    *rows = sorted;
    start..end
}

/// Puts the first `end` elements in order (selecting them first when fewer than all).
fn select_window<T>(items: &mut Vec<T>, end: usize, order: impl Fn(&T, &T) -> Ordering + Copy) {
    if end < items.len() {
        items.select_nth_unstable_by(end, order);
        items.truncate(end);
    }
    items.sort_unstable_by(order);
}

/// The common case of one sort key on an int column: sort plain integers. Empty rows
/// sort first (as `sort_order` says), which `(false, _) < (true, _)` gives.
fn int_keys(data: &NamespaceData, rows: &[u32], spec: &SortSpec) -> Option<Vec<(bool, i64, u32)>> {
    let Access::Column(column) = spec.access else { return None };
    let column = data.column(column);
    if column.spec.field_type != FieldType::Int || column.spec.array {
        return None;
    }
    Some(
        rows.iter()
            .map(|&row| match column.first(row) {
                Some(ScalarRef::Int(v)) => (true, v, row),
                _ => (false, 0, row),
            })
            .collect(),
    )
}

fn sort_by_int_keys(
    rows: &mut Vec<u32>,
    mut keys: Vec<(bool, i64, u32)>,
    desc: bool,
    start: usize,
    end: usize,
) -> Range<usize> {
    let order = move |a: &(bool, i64, u32), b: &(bool, i64, u32)| {
        let order = (a.0, a.1).cmp(&(b.0, b.1));
        if desc { order.reverse() } else { order }
    };
    select_window(&mut keys, end, order);
    rows.clear();
    rows.extend(keys.into_iter().map(|(_, _, row)| row));
    start..end
}

/// The int columns of `K` sort keys (each scalar, not an array) and their directions.
fn int_columns<'a, const K: usize>(data: &'a NamespaceData, specs: &[SortSpec]) -> Option<[(&'a Column, bool); K]> {
    if specs.len() != K {
        return None;
    }
    let mut columns = Vec::with_capacity(K);
    for spec in specs {
        let Access::Column(column) = spec.access else { return None };
        let column = data.column(column);
        if column.spec.field_type != FieldType::Int || column.spec.array {
            return None;
        }
        columns.push((column, spec.desc));
    }
    columns.try_into().ok()
}

/// Several int sort keys, as fixed arrays of order-preserving words compared as plain
/// integers (no `Scalar`s, no per-row allocation). Each key is `0` when empty (empty sorts
/// first, as `sort_order` says) and `1 << 64 | (value with its sign bit flipped)`
/// otherwise; a descending key is inverted bit for bit, which reverses its order.
fn sort_by_int_tuples<const K: usize>(
    rows: &mut Vec<u32>,
    columns: [(&Column, bool); K],
    start: usize,
    end: usize,
) -> Range<usize> {
    let word = |(column, desc): (&Column, bool), row: u32| {
        let key = match column.first(row) {
            Some(ScalarRef::Int(v)) => 1u128 << 64 | u128::from((v as u64) ^ (1 << 63)),
            _ => 0,
        };
        if desc { !key } else { key }
    };
    let mut keys: Vec<([u128; K], u32)> =
        rows.iter().map(|&row| (std::array::from_fn(|i| word(columns[i], row)), row)).collect();
    select_window(&mut keys, end, |a, b| a.0.cmp(&b.0));
    rows.clear();
    rows.extend(keys.into_iter().map(|(_, row)| row));
    start..end
}

/// One sort key, `rank()`: plain floats, ties in row order (so equal ranks page stably).
fn sort_by_rank(rows: &mut Vec<u32>, ranks: &Ranks, desc: bool, start: usize, end: usize) -> Range<usize> {
    let mut keys: Vec<(f32, u32)> = rows.iter().map(|&row| (ranks.rank(row), row)).collect();
    let order = move |a: &(f32, u32), b: &(f32, u32)| {
        let by_rank = a.0.total_cmp(&b.0);
        (if desc { by_rank.reverse() } else { by_rank }).then(a.1.cmp(&b.1))
    };
    select_window(&mut keys, end, order);
    rows.clear();
    rows.extend(keys.into_iter().map(|(_, row)| row));
    start..end
}

/// Compares two rows' sort values under the specs (descending ones reversed).
fn compare_keys(left: &[Option<Scalar>], right: &[Option<Scalar>], specs: &[SortSpec]) -> Ordering {
    for ((l, r), spec) in left.iter().zip(right).zip(specs) {
        let order = sort_order(l.as_ref(), r.as_ref());
        let order = if spec.desc { order.reverse() } else { order };
        if order != Ordering::Equal {
            return order;
        }
    }
    Ordering::Equal
}
