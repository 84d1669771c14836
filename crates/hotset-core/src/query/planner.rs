//! The planner: which indexes answer which conditions, in what order, and how to sort.
//!
//! Owns: turning a filter into an id-set plan (index scans combined with AND / OR / NOT)
//! plus residual predicates checked per row; ordering ANDed scans by their estimated
//! size so the smallest drives and much larger ones become cheap column checks; matching
//! composite indexes (skip scans over two of their fields, IN lists merged in sort
//! order); and choosing between walking a tree index in sort order and sorting the
//! matches. Never: read rows or documents, or change a condition's meaning:
//! every plan yields exactly the rows its predicates would.

use super::ast::{Cond, Op, Query};
use super::fulltext::{RANK, Ranks, TextPred};
use super::pred::{Access, FieldPred, Pred};
use super::scan::{IndexScan, KeyRange, MergeRange, ScanKind, SkipRange};
use crate::collate::prefix_successor;
use crate::error::{Error, Result};
use crate::index::{Index, Key, bound_for_type, key_for_type};
use crate::namespace::NamespaceData;
use crate::value::Scalar;
use std::ops::{Bound, Range};
use std::sync::Arc;

/// A key lookup that is bigger than the driving scan by more than this factor is not
/// intersected; its condition is checked on the columns of the driver's rows instead (as
/// every range's is: see `choose_sets`).
pub const INTERSECT_RATIO_MAX: usize = 8;

/// Whether the planner uses one of its tools: by estimated cost, or forced either way
/// (tests force each in turn, so every plan is checked against the same answers).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Choice {
    /// By estimated cost (the default).
    #[default]
    Cost,
    /// Whenever it applies.
    Always,
    /// Never.
    Never,
}

/// When to page by walking a tree index in sort order instead of sorting the matches.
pub type WalkChoice = Choice;

/// How the planner chooses among its tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PlanChoice {
    /// Paging by walking a tree index in sort order instead of sorting the matches.
    pub walk: Choice,
    /// Skip scans of composite tree indexes for ranges on two of their fields.
    pub skip: Choice,
}

/// What one seek into a tree index costs, in rows put into an id set (about 70 ns each):
/// a search over the blocks (galloping from the last position in a skip scan) and within
/// one, comparing keys' order prefixes and, on ties, the keys. Measured on the 1M
/// profiles with `hotset-bench profile` and `EXPLAIN`: about 0.2 µs a seek.
const SEEK_COST: usize = 3;
/// What checking a condition on one row's column costs, in the same rows: about 0.25 µs,
/// mostly the load of the row's value (a string lives behind a pointer).
const CHECK_COST: usize = 3;

/// An id-set plan: index scans combined by set operations.
#[derive(Debug, Clone)]
pub(crate) enum SetPlan {
    Scan(IndexScan),
    /// The rows a full-text match found.
    Text(Arc<TextPred>),
    And(Vec<SetPlan>),
    Or(Vec<SetPlan>),
    Not(Box<SetPlan>),
}

impl SetPlan {
    pub fn estimate(&self, rows_total: usize) -> usize {
        match self {
            SetPlan::Scan(scan) => scan.estimate,
            SetPlan::Text(text) => text.hits.rows.len() as usize,
            SetPlan::And(items) => items.iter().map(|p| p.estimate(rows_total)).min().unwrap_or(rows_total),
            SetPlan::Or(items) => items.iter().map(|p| p.estimate(rows_total)).sum::<usize>().min(rows_total),
            SetPlan::Not(inner) => rows_total.saturating_sub(inner.estimate(rows_total)),
        }
    }
}

/// A sort key resolved against the namespace.
#[derive(Debug, Clone)]
pub(crate) struct SortSpec {
    pub field: String,
    pub access: Access,
    pub desc: bool,
}

/// Walking a tree index in key order to produce sorted results without a sort.
#[derive(Debug, Clone)]
pub(crate) struct Walk {
    pub scan: IndexScan,
    pub desc: bool,
    /// Sort keys the index order gives; rows whose key components in `group` are equal
    /// form a group sorted by `Plan::sort[covered..]`.
    pub covered: usize,
    /// The key components that give the `covered` sort keys.
    pub group: Range<usize>,
}

/// The plan of one query over one namespace.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    /// Rows to consider (`None`: every row).
    pub set: Option<SetPlan>,
    /// Checked on every considered row.
    pub residual: Vec<Pred>,
    pub sort: Vec<SortSpec>,
    pub walk: Option<Walk>,
    /// Ranks from the query's full-text matches (empty without one).
    pub ranks: Ranks,
}

/// A condition of an AND, with what an index can do for it.
struct Conjunct {
    pred: Pred,
    /// An index plan and whether it is exact (else the predicate is checked too).
    access: Option<(SetPlan, bool)>,
}

pub(crate) fn plan(data: &NamespaceData, query: &Query, choice: PlanChoice) -> Result<Plan> {
    let rows_total = data.len();
    let items: Vec<&Cond> = match &query.filter {
        None => Vec::new(),
        Some(cond) => flatten_and(cond),
    };
    let mut conjuncts = items
        .into_iter()
        .map(|cond| {
            let pred = Pred::compile(data, cond)?;
            let access = set_plan(data, &pred);
            Ok(Conjunct { pred, access })
        })
        .collect::<Result<Vec<_>>>()?;
    use_composites(data, &mut conjuncts);
    use_skip_scans(data, query, &mut conjuncts, choice.skip);
    let mut texts = Vec::new();
    conjuncts.iter().for_each(|c| c.pred.texts(&mut texts));
    let ranks = Ranks(texts);
    let sort = sort_specs(data, query, &ranks)?;
    let walk = match choose_walk(data, query, &sort, &mut conjuncts) {
        Some((walk, _)) if choice.walk == Choice::Always => Some(walk),
        Some((walk, _)) if choice.walk == Choice::Cost && walk_pays(query, rows_total, &conjuncts, &walk) => Some(walk),
        Some((_, own)) => {
            // Sorting the few candidates is cheaper than walking for them: the walk's
            // own condition goes back among the others.
            conjuncts.extend(own);
            None
        }
        None => None,
    };
    let (set, residual) = choose_sets(conjuncts, rows_total);
    Ok(Plan { set, residual, sort, walk, ranks })
}

/// The query's sort keys resolved; `rank()` sorts by full-text rank, which is also the
/// order of an unsorted query with a match (best first).
fn sort_specs(data: &NamespaceData, query: &Query, ranks: &Ranks) -> Result<Vec<SortSpec>> {
    if query.sort.is_empty() && !ranks.is_empty() {
        return Ok(vec![SortSpec { field: RANK.to_string(), access: Access::Rank(ranks.clone()), desc: true }]);
    }
    query
        .sort
        .iter()
        .map(|key| {
            let access = if key.field == RANK {
                if ranks.is_empty() {
                    return Err(Error::InvalidQuery {
                        reason: "sorting by rank() needs a full-text MATCH condition in the filter".to_string(),
                    });
                }
                Access::Rank(ranks.clone())
            } else {
                Access::for_field(data, &key.field)
            };
            Ok(SortSpec { field: key.field.clone(), access, desc: key.desc })
        })
        .collect()
}

/// Whether walking the sort index beats sorting the candidates. The walk reads rows of
/// its range in order until the window is full; if the other conditions keep a fraction
/// `c / n` of all rows, that is about `window * n / c` rows (at most the range), and the
/// whole range when an exact total must count what passes other conditions. Sorting
/// instead costs about the candidates' count (at most the range).
fn walk_pays(query: &Query, rows_total: usize, conjuncts: &[Conjunct], walk: &Walk) -> bool {
    let window = query.offset.saturating_add(query.limit.unwrap_or(usize::MAX));
    let range_rows = walk.scan.estimate.max(1);
    let others = conjuncts.iter().filter_map(|c| c.access.as_ref().map(|(plan, _)| plan.estimate(rows_total))).min();
    let checked = !conjuncts.is_empty();
    let expected_walk = match others {
        // An exact total (or aggregations) with other conditions to check: the walk must
        // visit its whole range to count the rows that pass them.
        _ if checked && (query.total || !query.aggregations.is_empty()) => range_rows,
        None => window,
        Some(others) => window.saturating_mul(rows_total.max(1)) / others.max(1),
    }
    .min(range_rows);
    let sort_cost = others.unwrap_or(range_rows).min(range_rows);
    expected_walk <= sort_cost.saturating_mul(2)
}

fn flatten_and(cond: &Cond) -> Vec<&Cond> {
    match cond {
        Cond::And(items) => items.iter().flat_map(flatten_and).collect(),
        other => vec![other],
    }
}

/// The id-set plan for a predicate and whether it is exact, or `None` when no index
/// helps (the predicate is then checked per row).
fn set_plan(data: &NamespaceData, pred: &Pred) -> Option<(SetPlan, bool)> {
    match pred {
        Pred::Field(field) => field_plan(data, field),
        Pred::Text(text) => Some((SetPlan::Text(text.clone()), true)),
        Pred::And(items) => {
            let plans: Option<Vec<_>> = items.iter().map(|p| exact_plan(data, p)).collect();
            Some((SetPlan::And(plans?), true))
        }
        Pred::Or(items) => {
            let plans: Option<Vec<_>> = items.iter().map(|p| exact_plan(data, p)).collect();
            Some((SetPlan::Or(plans?), true))
        }
        Pred::Not(inner) => Some((SetPlan::Not(Box::new(exact_plan(data, inner)?)), true)),
    }
}

fn exact_plan(data: &NamespaceData, pred: &Pred) -> Option<SetPlan> {
    match set_plan(data, pred) {
        Some((plan, true)) => Some(plan),
        _ => None,
    }
}

/// Indexes that answer conditions on the field read through `column`: single-field
/// indexes on that column, and tree composites whose first field it is.
fn indexes_on(data: &NamespaceData, column: usize, needs_order: bool) -> impl Iterator<Item = (usize, &Index)> {
    // A composite helps a condition on its first field only when no index of that field
    // alone can answer it: the single-field index is never worse and cheaper to estimate.
    let has_single =
        data.indexes.iter().any(|i| i.has_lookup() && i.columns == [column] && (i.is_ordered() || !needs_order));
    data.indexes.iter().enumerate().filter(move |(_, index)| {
        index.has_lookup()
            && index.columns[0] == column
            && (index.columns.len() == 1 || (!has_single && index.is_ordered()))
    })
}

fn field_plan(data: &NamespaceData, field: &FieldPred) -> Option<(SetPlan, bool)> {
    let Access::Column(column) = field.access else {
        return None;
    };
    if field.op == Op::Ne {
        // `!=` is `NOT =`: plan the equality once and take its complement.
        return field_plan_eq(data, field).map(|p| (SetPlan::Not(Box::new(p)), true));
    }
    let rows_total = data.len();
    let field_type = data.column(column).spec.field_type;
    let mut best: Option<(SetPlan, bool)> = None;
    let needs_order = matches!(field.op, Op::Lt | Op::Le | Op::Gt | Op::Ge | Op::Range | Op::Like);
    for (id, index) in indexes_on(data, column, needs_order) {
        let single = index.columns.len() == 1;
        let keys = |values: &[Scalar]| -> Vec<Key> {
            values.iter().filter_map(|v| key_for_type(v, field_type)).map(|v| one_key(v, single)).collect()
        };
        let range = |low: Bound<&Scalar>, high: Bound<&Scalar>| -> IndexScan {
            match (bound_for_type(low, field_type, true), bound_for_type(high, field_type, false)) {
                (Ok(low), Ok(high)) => IndexScan::range(index, id, KeyRange::between(low, high)),
                _ => IndexScan::keys(index, id, Vec::new()),
            }
        };
        let candidate = match field.op {
            Op::Eq | Op::In if single => Some((SetPlan::Scan(IndexScan::keys(index, id, keys(&field.values))), true)),
            Op::Eq | Op::In => Some((
                SetPlan::Or(
                    field.values.iter().map(|v| SetPlan::Scan(range(Bound::Included(v), Bound::Included(v)))).collect(),
                ),
                true,
            )),
            Op::AllSet if single && !field.values.is_empty() => Some((
                SetPlan::And(
                    field
                        .values
                        .iter()
                        .map(|v| SetPlan::Scan(IndexScan::keys(index, id, keys(std::slice::from_ref(v)))))
                        .collect(),
                ),
                true,
            )),
            Op::Empty if single && !index.def.sparse => {
                Some((SetPlan::Scan(IndexScan::keys(index, id, vec![Key::One(Scalar::Null)])), true))
            }
            Op::Any if single && !index.def.sparse => Some((
                SetPlan::Not(Box::new(SetPlan::Scan(IndexScan::keys(index, id, vec![Key::One(Scalar::Null)])))),
                true,
            )),
            _ if !index.is_ordered() => None,
            Op::Lt => Some((SetPlan::Scan(range(Bound::Unbounded, Bound::Excluded(&field.values[0]))), true)),
            Op::Le => Some((SetPlan::Scan(range(Bound::Unbounded, Bound::Included(&field.values[0]))), true)),
            Op::Gt => Some((SetPlan::Scan(range(Bound::Excluded(&field.values[0]), Bound::Unbounded)), true)),
            Op::Ge => Some((SetPlan::Scan(range(Bound::Included(&field.values[0]), Bound::Unbounded)), true)),
            Op::Range => {
                Some((SetPlan::Scan(range(Bound::Included(&field.values[0]), Bound::Included(&field.values[1]))), true))
            }
            Op::Like => like_plan(index, id, field),
            _ => None,
        };
        if let Some(candidate) = candidate {
            let better = best.as_ref().is_none_or(|(b, _)| candidate.0.estimate(rows_total) < b.estimate(rows_total));
            if better {
                best = Some(candidate);
            }
        }
    }
    best
}

fn field_plan_eq(data: &NamespaceData, field: &FieldPred) -> Option<SetPlan> {
    let eq = FieldPred { op: Op::Eq, ..field.clone() };
    match field_plan(data, &eq) {
        Some((plan, true)) => Some(plan),
        _ => None,
    }
}

fn one_key(value: Scalar, single: bool) -> Key {
    if single { Key::One(value) } else { Key::Many(Box::new([value])) }
}

/// A LIKE with a literal prefix reads the prefix's key range; it is exact when the
/// pattern is just `prefix%`.
fn like_plan(index: &Index, id: usize, field: &FieldPred) -> Option<(SetPlan, bool)> {
    let (low, high, exact) = like_bounds(field)?;
    let scan = IndexScan::range(index, id, KeyRange::between(low, high));
    Some((SetPlan::Scan(scan), exact))
}

/// The key range of a LIKE's literal prefix and whether the range is exactly the
/// pattern's matches (`prefix%`).
fn like_bounds(field: &FieldPred) -> Option<(Bound<Scalar>, Bound<Scalar>, bool)> {
    let pattern = field.like.as_ref()?;
    let prefix = pattern.prefix();
    let exact = pattern.is_prefix_only();
    if prefix.is_empty() && !exact {
        return None;
    }
    let low = Bound::Included(Scalar::str(prefix.as_bytes()));
    let high = prefix_successor(prefix.as_bytes()).map_or(Bound::Unbounded, |s| Bound::Excluded(Scalar::str(&s)));
    Some((low, high, exact))
}

/// The key range a condition on an indexed column reads in a tree index, as index
/// key bounds, and whether it is exact (no row in it fails the condition): `=` (one
/// value), `<`, `<=`, `>`, `>=`, `BETWEEN` and a LIKE with a literal prefix.
fn key_bounds(data: &NamespaceData, field: &FieldPred) -> Option<(Bound<Scalar>, Bound<Scalar>, bool)> {
    let column = field.access_column()?;
    let field_type = data.column(column).spec.field_type;
    let (low, high) = match field.op {
        Op::Like => return like_bounds(field),
        Op::Eq | Op::In if field.values.len() == 1 => {
            (Bound::Included(&field.values[0]), Bound::Included(&field.values[0]))
        }
        Op::Lt | Op::Le | Op::Gt | Op::Ge | Op::Range => field_bounds(field),
        _ => return None,
    };
    match (bound_for_type(low, field_type, true), bound_for_type(high, field_type, false)) {
        (Ok(low), Ok(high)) => Some((low, high, true)),
        // A bound of another type than the field's: nothing in the index can match.
        _ => None,
    }
}

/// Replaces equality conditions on the leading fields of a composite index (and a range
/// on the next one) by one scan of that index when it is smaller than what they had.
fn use_composites(data: &NamespaceData, conjuncts: &mut Vec<Conjunct>) {
    let rows_total = data.len();
    for (id, index) in data.indexes.iter().enumerate() {
        if index.columns.len() < 2 || !index.has_lookup() {
            continue;
        }
        let mut prefix = Vec::new();
        let mut used = Vec::new();
        for &column in &index.columns {
            let field_type = data.column(column).spec.field_type;
            let found = conjuncts.iter().position(|c| {
                matches!(&c.pred, Pred::Field(f) if matches!(f.access, Access::Column(col) if col == column) && f.op == Op::Eq)
            });
            let Some(at) = found else { break };
            let Pred::Field(f) = &conjuncts[at].pred else { unreachable!() };
            let Some(value) = key_for_type(&f.values[0], field_type) else { break };
            prefix.push(value);
            used.push(at);
        }
        if used.len() < 2 || (!index.is_ordered() && used.len() < index.columns.len()) {
            continue;
        }
        let scan = if used.len() == index.columns.len() {
            IndexScan::keys(index, id, vec![Key::Many(prefix.into_boxed_slice())])
        } else {
            let range = KeyRange { prefix, low: Bound::Unbounded, high: Bound::Unbounded, full: false };
            IndexScan::range(index, id, range)
        };
        let current =
            used.iter().filter_map(|&at| conjuncts[at].access.as_ref()).map(|(p, _)| p.estimate(rows_total)).min();
        if current.is_some_and(|c| c <= scan.estimate) {
            continue;
        }
        used.sort_unstable();
        let preds: Vec<Pred> = used.iter().rev().map(|&at| conjuncts.remove(at).pred).collect();
        conjuncts.push(Conjunct { pred: Pred::And(preds), access: Some((SetPlan::Scan(scan), true)) });
    }
}

/// Replaces range conditions on two consecutive fields of a composite tree index (after
/// equalities on the fields before them) by one skip scan of that index, when its cost
/// beats what those conditions cost apart (or always / never, as `choice` says).
///
/// Costs, in rows read: the skip scan pays three seeks per distinct leading value it visits
/// (its inner range's start and end, and the next value)
/// plus the rows it yields, and a page without a total stops after the leading values
/// that fill the window; apart, the conditions build the id set of the smaller range and
/// check or intersect the other (what `choose_sets` does), whatever the window.
fn use_skip_scans(data: &NamespaceData, query: &Query, conjuncts: &mut Vec<Conjunct>, choice: Choice) {
    if choice == Choice::Never {
        return;
    }
    let rows_total = data.len().max(1);
    for (id, index) in data.indexes.iter().enumerate() {
        if index.columns.len() < 2 || !index.is_ordered() || index.def.array {
            continue;
        }
        let (mut taken, prefix) = equality_prefix(data, index, conjuncts);
        let fixed = prefix.len();
        let Some(&outer_column) = index.columns.get(fixed) else { continue };
        let Some(&inner_column) = index.columns.get(fixed + 1) else { continue };
        let range_on = |column: usize, eq_ok: bool| {
            conjuncts.iter().enumerate().find_map(|(at, c)| match &c.pred {
                Pred::Field(f)
                    if f.access_column() == Some(column) && (eq_ok || f.op != Op::Eq) && !taken.contains(&at) =>
                {
                    key_bounds(data, f).map(|bounds| (at, bounds))
                }
                _ => None,
            })
        };
        let Some((outer_at, (outer_low, outer_high, outer_exact))) = range_on(outer_column, false) else { continue };
        let Some((inner_at, (inner_low, inner_high, inner_exact))) = range_on(inner_column, true) else { continue };
        let outer = KeyRange { prefix, low: outer_low, high: outer_high, full: false };
        let outer_rows = IndexScan::range(index, id, outer.clone()).estimate;
        let estimate_of = |at: usize| conjuncts[at].access.as_ref().map(|(plan, _)| plan.estimate(rows_total));
        let inner_rows = estimate_of(inner_at).unwrap_or(rows_total);
        let rows_out = (outer_rows as u128 * inner_rows as u128 / rows_total as u128) as usize;
        let leads = distinct_in(data, outer_column, outer_rows);
        let window = query.offset.saturating_add(query.limit.unwrap_or(usize::MAX));
        // Without a total the scan stops once the window is full: after about
        // `window / (rows_out / leads)` leading values.
        let leads_visited = if query.total || !query.aggregations.is_empty() || rows_out == 0 {
            leads
        } else {
            leads.min((window.saturating_mul(leads) / rows_out.max(1)).saturating_add(1))
        };
        let skip_cost = leads_visited.saturating_mul(3 * SEEK_COST).saturating_add(rows_out.min(window));
        // Apart, the executor builds the id set of the smaller range whatever the window,
        // and checks the other condition on each of its rows (`choose_sets`).
        let apart_cost = [Some(outer_rows), estimate_of(inner_at)]
            .into_iter()
            .flatten()
            .min()
            .unwrap_or(rows_total)
            .saturating_mul(1 + CHECK_COST);
        if choice == Choice::Cost && skip_cost >= apart_cost {
            continue;
        }
        let skip = SkipRange { outer, inner_low, inner_high };
        let scan = IndexScan::skip(id, skip, rows_out.max(1));
        taken.push(outer_at);
        taken.push(inner_at);
        taken.sort_unstable();
        let preds: Vec<Pred> = taken.iter().rev().map(|&at| conjuncts.remove(at).pred).collect();
        let exact = outer_exact && inner_exact;
        conjuncts.push(Conjunct { pred: Pred::And(preds), access: Some((SetPlan::Scan(scan), exact)) });
    }
}

/// About how many distinct values of `column` lie in a range holding `rows` rows: from
/// the rows per distinct key of a single-field tree index on it, else (unknown) `rows`.
fn distinct_in(data: &NamespaceData, column: usize, rows: usize) -> usize {
    let per_key =
        data.indexes.iter().filter(|index| index.columns == [column] && index.is_ordered()).find_map(|index| {
            index.tree().map(|map| map.len()).filter(|&keys| keys > 0).map(|keys| data.len() as f64 / keys as f64)
        });
    match per_key {
        Some(per_key) => ((rows as f64 / per_key.max(1.0)).ceil() as usize).min(rows),
        None => rows,
    }
}

/// Picks the conjuncts whose id sets are worth building: the smallest drives; key lookups
/// at most `INTERSECT_RATIO_MAX` times bigger are intersected with it (their posting
/// lists are ready to AND); ranges and the rest become residual checks on the driver's
/// rows, which costs the driver's size where building a range's set costs the range's.
fn choose_sets(conjuncts: Vec<Conjunct>, rows_total: usize) -> (Option<SetPlan>, Vec<Pred>) {
    let mut residual = Vec::new();
    let mut scans: Vec<(usize, SetPlan, Pred, bool)> = Vec::new();
    for conjunct in conjuncts {
        match conjunct.access {
            Some((plan, exact)) => scans.push((plan.estimate(rows_total), plan, conjunct.pred, exact)),
            None => residual.push(conjunct.pred),
        }
    }
    scans.sort_by_key(|(estimate, ..)| *estimate);
    let mut chosen = Vec::new();
    let driver = scans.first().map_or(0, |(estimate, ..)| *estimate);
    for (estimate, plan, pred, exact) in scans {
        let walks_a_range = matches!(&plan, SetPlan::Scan(scan) if !matches!(scan.kind, ScanKind::Keys(_)));
        if chosen.is_empty() || (!walks_a_range && estimate <= driver.saturating_mul(INTERSECT_RATIO_MAX)) {
            chosen.push(plan);
            if !exact {
                residual.push(pred);
            }
        } else {
            residual.push(pred);
        }
    }
    let set = match chosen.len() {
        0 => None,
        1 => chosen.pop(),
        _ => Some(SetPlan::And(chosen)),
    };
    (set, residual)
}

/// Finds a tree index whose key order is the query's sort order, possibly after leading
/// components that equality conditions fix (`name = X ... ORDER BY year` on `name+year`),
/// and the conditions the walk answers by itself (those equalities and a range on the
/// first sorted component), which are taken out of `conjuncts`.
fn choose_walk(
    data: &NamespaceData,
    query: &Query,
    sort: &[SortSpec],
    conjuncts: &mut Vec<Conjunct>,
) -> Option<(Walk, Vec<Conjunct>)> {
    query.limit?;
    let first = sort.first()?;
    let Access::Column(first_column) = first.access else {
        return None;
    };
    if let Some(found) = skip_walk(data, sort, first_column, conjuncts) {
        return Some(found);
    }
    if let Some(found) = merge_walk(data, sort, first_column, conjuncts) {
        return Some(found);
    }
    let mut best: Option<WalkCandidate> = None;
    for (id, index) in data.indexes.iter().enumerate() {
        if !index.is_ordered() || index.def.sparse || index.def.array {
            continue;
        }
        let (fixed_at, values) = equality_prefix(data, index, conjuncts);
        let fixed = values.len();
        if index.columns.get(fixed) != Some(&first_column) || best.as_ref().is_some_and(|b| b.fixed >= fixed) {
            continue;
        }
        let covered = sort
            .iter()
            .zip(&index.columns[fixed..])
            .take_while(|(spec, column)| {
                spec.desc == first.desc && matches!(spec.access, Access::Column(c) if c == **column)
            })
            .count();
        best = Some(WalkCandidate { index: id, fixed, covered, taken: fixed_at, prefix: values });
    }
    let WalkCandidate { index: id, fixed, covered, mut taken, prefix } = best?;
    let index = &data.indexes[id];
    let range_at = conjuncts.iter().position(|c| match (&c.pred, &c.access) {
        (Pred::Field(f), Some((SetPlan::Scan(scan), true))) if fixed == 0 => {
            scan.index == id && f.access_column() == Some(first_column)
        }
        (Pred::Field(f), _) if fixed > 0 => {
            f.access_column() == Some(first_column) && matches!(f.op, Op::Lt | Op::Le | Op::Gt | Op::Ge | Op::Range)
        }
        _ => false,
    });
    let scan = match range_at {
        Some(at) if fixed == 0 => match &conjuncts[at].access {
            Some((SetPlan::Scan(scan), _)) => scan.clone(),
            _ => unreachable!("matched a scan above"),
        },
        Some(at) => {
            let Pred::Field(f) = &conjuncts[at].pred else { unreachable!("matched a field above") };
            let field_type = data.column(first_column).spec.field_type;
            let (low, high) = field_bounds(f);
            match (bound_for_type(low, field_type, true), bound_for_type(high, field_type, false)) {
                (Ok(low), Ok(high)) => IndexScan::range(index, id, KeyRange { prefix, low, high, full: false }),
                _ => IndexScan::keys(index, id, Vec::new()),
            }
        }
        None => {
            let range = KeyRange { prefix, low: Bound::Unbounded, high: Bound::Unbounded, full: true };
            IndexScan::range(index, id, range)
        }
    };
    taken.extend(range_at);
    taken.sort_unstable();
    taken.dedup();
    let own: Vec<Conjunct> = taken.iter().rev().map(|&at| conjuncts.remove(at)).collect();
    Some((Walk { scan, desc: first.desc, covered, group: fixed..fixed + covered }, own))
}

/// An exact skip scan whose index order is the sort order from its leading range on
/// (`first_name LIKE 'a%' AND last_name LIKE 'n%' ORDER BY first_name, last_name` on
/// `first_name+last_name`): walking it pages the query without a sort.
fn skip_walk(
    data: &NamespaceData,
    sort: &[SortSpec],
    first_column: usize,
    conjuncts: &mut Vec<Conjunct>,
) -> Option<(Walk, Vec<Conjunct>)> {
    let first = sort.first()?;
    let (at, scan, fixed) = conjuncts.iter().enumerate().find_map(|(at, c)| match &c.access {
        Some((SetPlan::Scan(scan), true)) => match &scan.kind {
            ScanKind::Skip(skip) => {
                let fixed = skip.outer.prefix.len();
                (data.indexes[scan.index].columns[fixed] == first_column).then(|| (at, scan.clone(), fixed))
            }
            _ => None,
        },
        _ => None,
    })?;
    let covered = sort
        .iter()
        .zip(&data.indexes[scan.index].columns[fixed..])
        .take_while(|(spec, column)| {
            spec.desc == first.desc && matches!(spec.access, Access::Column(c) if c == **column)
        })
        .count();
    let own = vec![conjuncts.remove(at)];
    Some((Walk { scan, desc: first.desc, covered, group: fixed..fixed + covered }, own))
}

/// An IN list on a component of a composite tree index (after equalities on the ones
/// before it), with the sort on that component or the next: `name IN (a, b) AND year >
/// 2010 ORDER BY year` on `name+year` walks `(a, >2010)` and `(b, >2010)` merged by year,
/// so the page comes off the index without sorting the matches. An exact condition on the
/// next component bounds each walk. Takes out the conditions the merge answers.
fn merge_walk(
    data: &NamespaceData,
    sort: &[SortSpec],
    first_column: usize,
    conjuncts: &mut Vec<Conjunct>,
) -> Option<(Walk, Vec<Conjunct>)> {
    let first = sort.first()?;
    for (id, index) in data.indexes.iter().enumerate() {
        if index.columns.len() < 2 || !index.is_ordered() || index.def.sparse || index.def.array {
            continue;
        }
        let (mut taken, prefix) = equality_prefix(data, index, conjuncts);
        let fixed = prefix.len();
        let Some(&in_column) = index.columns.get(fixed) else { continue };
        let from = if in_column == first_column {
            fixed
        } else if index.columns.get(fixed + 1) == Some(&first_column) {
            fixed + 1
        } else {
            continue;
        };
        let in_type = data.column(in_column).spec.field_type;
        let found = conjuncts.iter().enumerate().find_map(|(at, c)| match &c.pred {
            Pred::Field(f) if f.op == Op::In && f.access_column() == Some(in_column) => Some((at, f)),
            _ => None,
        });
        let Some((in_at, in_field)) = found else { continue };
        // Values of another type than the field's match no key.
        let mut values: Vec<Scalar> = in_field.values.iter().filter_map(|v| key_for_type(v, in_type)).collect();
        values.sort();
        values.dedup();
        let next = index.columns.get(fixed + 1).and_then(|&column| {
            conjuncts.iter().enumerate().find_map(|(at, c)| match &c.pred {
                Pred::Field(f) if f.access_column() == Some(column) && !taken.contains(&at) && at != in_at => {
                    key_bounds(data, f).filter(|(.., exact)| *exact).map(|(low, high, _)| (at, low, high))
                }
                _ => None,
            })
        });
        let (low, high, full) = match &next {
            Some((_, low, high)) => (low.clone(), high.clone(), false),
            None => (Bound::Unbounded, Bound::Unbounded, true),
        };
        let ranges = values
            .into_iter()
            .map(|value| {
                let mut parts = prefix.clone();
                parts.push(value);
                KeyRange { prefix: parts, low: low.clone(), high: high.clone(), full }
            })
            .collect();
        let scan = IndexScan::merge(index, id, MergeRange { ranges, from });
        let covered = sort
            .iter()
            .zip(&index.columns[from..])
            .take_while(|(spec, column)| {
                spec.desc == first.desc && matches!(spec.access, Access::Column(c) if c == **column)
            })
            .count();
        taken.push(in_at);
        taken.extend(next.map(|(at, ..)| at));
        taken.sort_unstable();
        let own: Vec<Conjunct> = taken.iter().rev().map(|&at| conjuncts.remove(at)).collect();
        return Some((Walk { scan, desc: first.desc, covered, group: from..from + covered }, own));
    }
    None
}

/// A tree index that can give the sort order: `fixed` leading components set by the
/// equality conjuncts at `taken` (values `prefix`), then `covered` sort keys.
struct WalkCandidate {
    index: usize,
    fixed: usize,
    covered: usize,
    taken: Vec<usize>,
    prefix: Vec<Scalar>,
}

/// The leading components of `index` that exact equality conditions fix: the positions
/// of those conditions and the key values.
fn equality_prefix(data: &NamespaceData, index: &Index, conjuncts: &[Conjunct]) -> (Vec<usize>, Vec<Scalar>) {
    let (mut at, mut values) = (Vec::new(), Vec::new());
    for &column in &index.columns {
        let found = conjuncts
            .iter()
            .position(|c| matches!(&c.pred, Pred::Field(f) if f.op == Op::Eq && f.access_column() == Some(column)));
        let Some(position) = found else { break };
        let Pred::Field(f) = &conjuncts[position].pred else { unreachable!("matched a field above") };
        let Some(value) = key_for_type(&f.values[0], data.column(column).spec.field_type) else { break };
        at.push(position);
        values.push(value);
    }
    (at, values)
}

/// The bounds a comparison condition sets on its field.
fn field_bounds(field: &FieldPred) -> (Bound<&Scalar>, Bound<&Scalar>) {
    let value = &field.values[0];
    match field.op {
        Op::Lt => (Bound::Unbounded, Bound::Excluded(value)),
        Op::Le => (Bound::Unbounded, Bound::Included(value)),
        Op::Gt => (Bound::Excluded(value), Bound::Unbounded),
        Op::Ge => (Bound::Included(value), Bound::Unbounded),
        Op::Range => (Bound::Included(value), Bound::Included(&field.values[1])),
        _ => (Bound::Unbounded, Bound::Unbounded),
    }
}
