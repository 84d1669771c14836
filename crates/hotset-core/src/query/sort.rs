//! Sorting matched rows by one or more fields, only as far as the page needs.
//!
//! Owns: reading each row's sort values once, and ordering rows so the requested window
//! (`offset..offset+limit`) holds the right rows in the right order, with a partial
//! selection when the window is small. Never: promise an order between rows whose sort
//! values are all equal (add the primary key to the sort for a total order).

use super::planner::SortSpec;
use super::pred::{sort_order, RowView};
use crate::namespace::NamespaceData;
use crate::value::Scalar;
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
    let mut keyed: Vec<(Vec<Option<Scalar>>, u32)> = rows
        .iter()
        .map(|&row| {
            let view = RowView::new(data, row);
            (specs.iter().map(|s| view.first(&s.access)).collect(), row)
        })
        .collect();
    let order = |a: &(Vec<Option<Scalar>>, u32), b: &(Vec<Option<Scalar>>, u32)| compare_keys(&a.0, &b.0, specs);
    if end < keyed.len() {
        // Only the first `end` rows matter: select them, then sort just those.
        keyed.select_nth_unstable_by(end, order);
        keyed.truncate(end);
    }
    keyed.sort_unstable_by(order);
    rows.clear();
    rows.extend(keyed.into_iter().map(|(_, row)| row));
    start..end
}

/// Compares two rows' sort values under the specs (descending ones reversed).
pub(crate) fn compare_keys(left: &[Option<Scalar>], right: &[Option<Scalar>], specs: &[SortSpec]) -> Ordering {
    for ((l, r), spec) in left.iter().zip(right).zip(specs) {
        let order = sort_order(l.as_ref(), r.as_ref());
        let order = if spec.desc { order.reverse() } else { order };
        if order != Ordering::Equal {
            return order;
        }
    }
    Ordering::Equal
}
