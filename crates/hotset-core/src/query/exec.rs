//! The executor: runs a plan over a read-locked namespace and builds the result.
//!
//! Owns: building id sets from index scans, checking residual predicates and inner
//! joins per candidate row, producing the page by walking a sort index or by sorting
//! the matches, counting the exact total, feeding aggregations, attaching joined
//! documents, and recording per-step timings for `explain`. Never: write, take locks,
//! or materialise more documents than the page holds.

use super::aggregate::aggregate;
use super::ast::{JoinKind, Query};
use super::deadline::Deadline;
use super::join::JoinPlan;
use super::planner::{Plan, PlanChoice, SetPlan, Walk, plan};
use super::pred::{Pred, RowView};
use super::result::{Explain, ExplainStep, Item, QueryResult};
use super::scan::{IndexScan, ScanKind};
use super::sort::sort_rows;
use crate::clock::Clock;
use crate::error::{Error, Result};
use crate::index::postings::Postings;
use crate::namespace::NamespaceData;
use crate::value::Scalar;
use roaring::RoaringBitmap;
use std::ops::Bound;
use std::time::Instant;

/// Records explain steps when asked to, at no cost otherwise.
struct Recorder {
    on: bool,
    start: Instant,
    last: Instant,
    steps: Vec<ExplainStep>,
}

impl Recorder {
    fn new(on: bool) -> Recorder {
        let now = Instant::now();
        Recorder { on, start: now, last: now, steps: Vec::new() }
    }

    fn step(&mut self, step: &'static str, detail: impl FnOnce() -> String, rows: Option<usize>) {
        if !self.on {
            return;
        }
        let now = Instant::now();
        let time_ns = u64::try_from(now.duration_since(self.last).as_nanos()).unwrap_or(u64::MAX);
        self.steps.push(ExplainStep { step, detail: detail(), rows, time_ns });
        self.last = now;
    }

    fn finish(self) -> Option<Explain> {
        self.on.then(|| Explain {
            total_ns: u64::try_from(self.start.elapsed().as_nanos()).unwrap_or(u64::MAX),
            steps: self.steps,
        })
    }
}

/// Runs `query` on `data`; `others` holds the read-locked namespaces joins refer to. The
/// query's time limit is measured on `clock`.
pub(crate) fn run(
    data: &NamespaceData,
    query: &Query,
    others: &[(&str, &NamespaceData)],
    choice: PlanChoice,
    clock: &dyn Clock,
) -> Result<QueryResult> {
    let mut recorder = Recorder::new(query.explain);
    let plan = plan(data, query, choice)?;
    let joins = query
        .joins
        .iter()
        .map(|join| {
            let right = others
                .iter()
                .find(|(name, _)| *name == join.query.namespace)
                .map(|(_, data)| *data)
                .ok_or_else(|| Error::UnknownNamespace { namespace: join.query.namespace.clone() })?;
            JoinPlan::compile(data, right, join)
        })
        .collect::<Result<Vec<_>>>()?;
    recorder.step("plan", || describe_plan(data, &plan), None);
    let deadline = Deadline::after(query.timeout, clock);
    let direct = direct_scan(data, &plan, query, &joins);
    let set = if direct.is_some() { None } else { plan.set.as_ref().map(|s| materialize(data, s)) };
    if let Some(set) = &set {
        recorder.step("scan", || describe_set(data, plan.set.as_ref().expect("set present")), Some(set.len() as usize));
    }
    let run = Run { data, plan: &plan, direct, set: set.as_ref(), joins: &joins, query, deadline: &deadline };
    let mut outcome = run.outcome();
    // Loops that saw the deadline pass ended early: what they made is not the answer.
    deadline.check()?;
    recorder.step("filter", || run.describe_filter(), outcome.total);
    let aggregations = match outcome.all.take() {
        Some(all) => {
            let results = aggregate(data, &all, &query.aggregations)?;
            recorder.step("aggregate", || format!("{} aggregation(s)", query.aggregations.len()), Some(all.len()));
            results
        }
        None => Vec::new(),
    };
    deadline.check()?;
    let items = run.items(&outcome.page);
    recorder.step("fetch", || format!("{} document(s), {} join(s)", items.len(), joins.len()), Some(items.len()));
    Ok(QueryResult {
        items,
        total: query.total.then_some(outcome.total.unwrap_or(0)),
        aggregations,
        explain: recorder.finish(),
    })
}

/// The page's row ids of a query without joins (update and delete by query), its time
/// limit measured on `clock`.
pub(crate) fn page_rows(data: &NamespaceData, query: &Query, clock: &dyn Clock) -> Result<Vec<u32>> {
    let plan = plan(data, query, PlanChoice::default())?;
    let direct = direct_scan(data, &plan, query, &[]);
    let set = if direct.is_some() { None } else { plan.set.as_ref().map(|s| materialize(data, s)) };
    let deadline = Deadline::after(query.timeout, clock);
    let run = Run { data, plan: &plan, direct, set: set.as_ref(), joins: &[], query, deadline: &deadline };
    let page = run.outcome().page;
    deadline.check()?;
    Ok(page)
}

/// The rows of one query: the page, the total, and every match when aggregations
/// need them.
struct Outcome {
    page: Vec<u32>,
    total: Option<usize>,
    all: Option<Vec<u32>>,
}

struct Run<'a> {
    data: &'a NamespaceData,
    plan: &'a Plan,
    /// A single exact scan that yields the page by itself (no set is built).
    direct: Option<&'a IndexScan>,
    set: Option<&'a RoaringBitmap>,
    joins: &'a [JoinPlan<'a>],
    query: &'a Query,
    /// Row loops stop once it passes (`run` then fails with `Error::Timeout`).
    deadline: &'a Deadline<'a>,
}

impl Run<'_> {
    fn outcome(&self) -> Outcome {
        let need_all = !self.query.aggregations.is_empty();
        if let Some(scan) = self.direct {
            return self.scan_page(scan);
        }
        match &self.plan.walk {
            Some(walk) => self.walk(walk, self.query.total || need_all, need_all),
            None if !self.plan.sort.is_empty() => self.sorted(),
            None => self.unsorted(self.query.total, need_all),
        }
    }

    /// Residual predicates and inner joins: what a candidate row must pass.
    fn accepts(&self, row: u32) -> bool {
        if self.deadline.passed() {
            return false;
        }
        let view = RowView::new(self.data, row);
        self.plan.residual.iter().all(|p| p.matches(&view))
            && self.joins.iter().filter(|j| j.kind == JoinKind::Inner).all(|j| j.exists(&view))
    }

    /// Every candidate that passes the residual checks and inner joins, in row order.
    /// Simple int comparisons run first as tight column passes; the rest per row.
    fn matching(&self) -> Vec<u32> {
        let mut rows: Vec<u32> = self.candidates().iter().collect();
        let mut rest: Vec<&Pred> = Vec::new();
        for pred in &self.plan.residual {
            let done = matches!(pred, Pred::Field(field) if field.retain_int(self.data, &mut rows));
            if !done {
                rest.push(pred);
            }
        }
        let inner: Vec<&JoinPlan<'_>> = self.joins.iter().filter(|j| j.kind == JoinKind::Inner).collect();
        if !rest.is_empty() || !inner.is_empty() {
            rows.retain(|&row| {
                if self.deadline.passed() {
                    return false;
                }
                let view = RowView::new(self.data, row);
                rest.iter().all(|p| p.matches(&view)) && inner.iter().all(|j| j.exists(&view))
            });
        }
        rows
    }

    fn checks_rows(&self) -> bool {
        !self.plan.residual.is_empty() || self.joins.iter().any(|j| j.kind == JoinKind::Inner)
    }

    fn candidates(&self) -> &RoaringBitmap {
        self.set.unwrap_or(&self.data.live)
    }

    fn window_end(&self) -> usize {
        self.query.offset.saturating_add(self.query.limit.unwrap_or(usize::MAX))
    }

    /// Pages straight off one exact index scan, in index order (an unsorted query has no
    /// order to keep), and counts the total from the index.
    fn scan_page(&self, scan: &IndexScan) -> Outcome {
        let index = &self.data.indexes[scan.index];
        let (offset, end) = (self.query.offset, self.window_end());
        let (mut page, mut seen) = (Vec::new(), 0usize);
        if end > offset {
            scan.walk(index, false, |_, postings| {
                postings.for_each(|row| {
                    if seen >= offset {
                        page.push(row);
                    }
                    seen += 1;
                    seen < end
                })
            });
        }
        Outcome { page, total: self.query.total.then(|| scan.count(index)), all: None }
    }

    fn unsorted(&self, total: bool, need_all: bool) -> Outcome {
        let end = self.window_end();
        if !self.checks_rows() && !need_all {
            let candidates = self.candidates();
            let page = candidates.iter().skip(self.query.offset).take(end - self.query.offset.min(end)).collect();
            return Outcome { page, total: Some(candidates.len() as usize), all: None };
        }
        if total || need_all {
            // Every match is needed anyway: filter them all in column passes.
            let rows = self.matching();
            let page = rows.iter().skip(self.query.offset).take(end - self.query.offset.min(end)).copied().collect();
            return Outcome { page, total: Some(rows.len()), all: need_all.then_some(rows) };
        }
        let mut page = Vec::new();
        let mut all = need_all.then(Vec::new);
        let mut count = 0usize;
        for row in self.candidates().iter() {
            if !self.accepts(row) {
                if self.deadline.passed() {
                    break;
                }
                continue;
            }
            if count >= self.query.offset && count < end {
                page.push(row);
            }
            count += 1;
            if let Some(all) = &mut all {
                all.push(row);
            } else if !total && count >= end {
                break;
            }
        }
        Outcome { page, total: Some(count), all }
    }

    fn sorted(&self) -> Outcome {
        let mut rows = self.matching();
        if self.deadline.passed() {
            return Outcome { page: Vec::new(), total: None, all: None };
        }
        let total = rows.len();
        let all = (!self.query.aggregations.is_empty()).then(|| rows.clone());
        let window = sort_rows(self.data, &mut rows, &self.plan.sort, self.query.offset, self.query.limit);
        rows.truncate(window.end);
        rows.drain(..window.start);
        Outcome { page: rows, total: Some(total), all }
    }

    /// Walks the sort index in order. Rows with equal leading keys form a group sorted
    /// by the remaining sort keys before it is paged.
    fn walk(&self, walk: &Walk, count_all: bool, need_all: bool) -> Outcome {
        let index = &self.data.indexes[walk.scan.index];
        // With nothing checked per row the total is the walked range's row count, which
        // the index answers without walking it; the walk then stops at the page's end.
        let counted = count_all && !need_all && !self.checks_rows() && self.set.is_none();
        let count_all = count_all && !counted;
        let rest = &self.plan.sort[walk.covered..];
        let end = self.window_end();
        let (mut page, mut group, mut all) = (Vec::new(), Vec::new(), need_all.then(Vec::new));
        let mut seen = 0usize;
        let mut group_key: Option<Vec<Scalar>> = None;
        let flush = |group: &mut Vec<u32>, page: &mut Vec<u32>, seen: &mut usize| {
            if !rest.is_empty() && group.len() > 1 && *seen < end && *seen + group.len() > self.query.offset {
                sort_group(self.data, group, rest);
            }
            for &row in group.iter() {
                if *seen >= self.query.offset && *seen < end {
                    page.push(row);
                }
                *seen += 1;
            }
            group.clear();
        };
        // Without further sort keys a row's place is final as soon as it is seen, so
        // no groups are formed and the walk can stop inside a key's postings.
        let streaming = rest.is_empty();
        walk.scan.walk(index, walk.desc, |key, postings| {
            if !streaming {
                let parts = key.parts();
                let prefix = &parts[walk.group.start.min(parts.len())..walk.group.end.min(parts.len())];
                if group_key.as_deref() != Some(prefix) {
                    flush(&mut group, &mut page, &mut seen);
                    group_key = Some(prefix.to_vec());
                }
            }
            if (seen >= end && !count_all) || self.deadline.passed() {
                return false;
            }
            let mut visit = |row: u32| {
                if !(self.set.is_none_or(|s| s.contains(row)) && self.accepts(row)) {
                    return true;
                }
                if let Some(all) = &mut all {
                    all.push(row);
                }
                if !streaming {
                    group.push(row);
                    return true;
                }
                if seen >= self.query.offset && seen < end {
                    page.push(row);
                }
                seen += 1;
                seen < end || count_all
            };
            if walk.desc { postings.for_each_rev(&mut visit) } else { postings.for_each(&mut visit) }
        });
        flush(&mut group, &mut page, &mut seen);
        let total = if counted { Some(walk.scan.count(index)) } else { count_all.then_some(seen) };
        Outcome { page, total, all }
    }

    fn items(&self, rows: &[u32]) -> Vec<Item> {
        rows.iter()
            .map(|&row| {
                let doc = self.data.doc(row).expect("result rows are live").clone();
                let view = RowView::new(self.data, row);
                let joined =
                    self.joins.iter().map(|join| (join.alias.clone(), join.documents(&join.rows(&view)))).collect();
                let text = (!self.plan.ranks.is_empty())
                    .then(|| Box::new(super::fulltext::extras(self.data, &self.plan.ranks, self.query, row, &doc)));
                Item { doc, joined, text }
            })
            .collect()
    }

    fn describe_filter(&self) -> String {
        let mut parts = Vec::new();
        if !self.plan.residual.is_empty() {
            parts.push(format!(
                "checked per row: {}",
                self.plan.residual.iter().map(Pred::describe).collect::<Vec<_>>().join(", ")
            ));
        }
        let inner = self.joins.iter().filter(|j| j.kind == JoinKind::Inner).count();
        if inner > 0 {
            parts.push(format!("{inner} inner join(s) checked per row"));
        }
        let order = match &self.plan.walk {
            Some(walk) => format!(
                "sorted by walking index '{}' {}",
                self.data.indexes[walk.scan.index].def.name,
                if walk.desc { "backwards" } else { "forwards" }
            ),
            None if self.plan.sort.is_empty() => "unsorted (row order)".to_string(),
            None => format!(
                "sorted by {} (partial sort of the window)",
                self.plan
                    .sort
                    .iter()
                    .map(|s| format!("{}{}", s.field, if s.desc { " desc" } else { "" }))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        parts.push(order);
        parts.join("; ")
    }
}

fn sort_group(data: &NamespaceData, group: &mut Vec<u32>, specs: &[super::planner::SortSpec]) {
    sort_rows(data, group, specs, 0, None);
}

/// The plan's one exact scan when it can page the query by itself: unsorted, nothing
/// checked per row, no aggregation, and an index where each row has one key (so no row
/// comes twice).
fn direct_scan<'a>(
    data: &NamespaceData,
    plan: &'a Plan,
    query: &Query,
    joins: &[JoinPlan<'_>],
) -> Option<&'a IndexScan> {
    let simple = plan.sort.is_empty()
        && plan.walk.is_none()
        && plan.residual.is_empty()
        && query.aggregations.is_empty()
        && joins.iter().all(|j| j.kind != JoinKind::Inner);
    match &plan.set {
        Some(SetPlan::Scan(scan)) if simple && !data.indexes[scan.index].def.array => Some(scan),
        _ => None,
    }
}

/// Builds the id set of a set plan.
pub(crate) fn materialize(data: &NamespaceData, plan: &SetPlan) -> RoaringBitmap {
    match plan {
        SetPlan::Scan(scan) => scan_set(data, scan),
        SetPlan::Text(text) => text.hits.rows.clone(),
        SetPlan::And(items) => {
            let mut ordered: Vec<&SetPlan> = items.iter().collect();
            let total = data.len();
            ordered.sort_by_key(|p| p.estimate(total));
            let mut iter = ordered.into_iter();
            let mut set = iter.next().map_or_else(|| data.live.clone(), |p| materialize(data, p));
            for item in iter {
                if set.is_empty() {
                    break;
                }
                set &= materialize(data, item);
            }
            set
        }
        SetPlan::Or(items) => items.iter().fold(RoaringBitmap::new(), |mut set, p| {
            set |= materialize(data, p);
            set
        }),
        SetPlan::Not(inner) => &data.live - &materialize(data, inner),
    }
}

fn scan_set(data: &NamespaceData, scan: &IndexScan) -> RoaringBitmap {
    // Small posting lists are gathered and sorted first: building a bitmap from sorted
    // ids is much cheaper than inserting them in key order, which is random row order.
    let mut set = RoaringBitmap::new();
    let mut loose: Vec<u32> = Vec::new();
    scan.walk(&data.indexes[scan.index], false, |_, postings| {
        match postings {
            Postings::Bitmap(bitmap) => set |= bitmap.as_ref(),
            small => {
                small.for_each(|row| {
                    loose.push(row);
                    true
                });
            }
        }
        true
    });
    loose.sort_unstable();
    // An array row sits under several keys of one range.
    loose.dedup();
    set |= RoaringBitmap::from_sorted_iter(loose).expect("sorted above");
    set
}

fn describe_plan(data: &NamespaceData, plan: &Plan) -> String {
    let set = plan.set.as_ref().map_or("all rows".to_string(), |s| describe_set(data, s));
    let walk = plan.walk.as_ref().map_or(String::new(), |w| format!("; walk {}", describe_scan(data, &w.scan)));
    format!("candidates: {set}{walk}; residual: {}", plan.residual.len())
}

fn describe_set(data: &NamespaceData, plan: &SetPlan) -> String {
    match plan {
        SetPlan::Scan(scan) => describe_scan(data, scan),
        SetPlan::Text(text) => text.describe(data),
        SetPlan::And(items) => {
            format!("AND({})", items.iter().map(|p| describe_set(data, p)).collect::<Vec<_>>().join(", "))
        }
        SetPlan::Or(items) => {
            format!("OR({})", items.iter().map(|p| describe_set(data, p)).collect::<Vec<_>>().join(", "))
        }
        SetPlan::Not(inner) => format!("NOT({})", describe_set(data, inner)),
    }
}

fn describe_scan(data: &NamespaceData, scan: &IndexScan) -> String {
    let index = &data.indexes[scan.index];
    let what = match &scan.kind {
        ScanKind::Keys(keys) => format!("{} key(s)", keys.len()),
        ScanKind::Range(range) if range.full => "full order".to_string(),
        ScanKind::Skip(skip) => {
            format!(
                "skip scan {}, then {}",
                describe_range(&skip.outer),
                describe_bounds(&skip.inner_low, &skip.inner_high)
            )
        }
        ScanKind::Range(range) => describe_range(range),
        ScanKind::Merge(merge) => {
            let first =
                merge.ranges.first().map_or_else(String::new, |range| format!(", first {}", describe_range(range)));
            format!("merge of {} range(s) by key part {}{first}", merge.ranges.len(), merge.from + 1)
        }
    };
    format!("index '{}' ({}) {what}, ~{} rows", index.def.name, index.def.kind.name(), scan.estimate)
}

/// A range as `after P, Q [low, high)`.
fn describe_range(range: &super::scan::KeyRange) -> String {
    let prefix = if range.prefix.is_empty() {
        String::new()
    } else {
        format!("after {} ", range.prefix.iter().map(scalar_text).collect::<Vec<_>>().join(", "))
    };
    format!("range {prefix}{}", describe_bounds(&range.low, &range.high))
}

fn describe_bounds(low: &Bound<Scalar>, high: &Bound<Scalar>) -> String {
    let low = match low {
        Bound::Included(v) => format!("[{}", scalar_text(v)),
        Bound::Excluded(v) => format!("({}", scalar_text(v)),
        Bound::Unbounded => "(-inf".to_string(),
    };
    let high = match high {
        Bound::Included(v) => format!("{}]", scalar_text(v)),
        Bound::Excluded(v) => format!("{})", scalar_text(v)),
        Bound::Unbounded => "+inf)".to_string(),
    };
    format!("{low}, {high}")
}

fn scalar_text(value: &Scalar) -> String {
    match value {
        Scalar::Null => "null".to_string(),
        Scalar::Bool(b) => b.to_string(),
        Scalar::Int(i) => i.to_string(),
        Scalar::Double(d) => d.0.to_string(),
        Scalar::Str(s) => format!("{:?}", String::from_utf8_lossy(s)),
    }
}
