//! Joins: finding the documents of another namespace that go with a result row.
//!
//! Owns: compiling a `Join` against both namespaces (how each side's field is read,
//! which side's collation compares them, how right rows are found: through an index,
//! a hash table built once per query, or a scan) and producing the joined rows, with
//! the joined query's own filter, sort and paging. Never: take locks (the caller holds
//! both namespaces' read locks) or write.
//!
//! An `ON left op right` condition holds when some value of the left field and some
//! value of the right field compare so; strings compare with the right field's collation.

use super::ast::{Join, JoinKind, Op};
use super::planner::SortSpec;
use super::pred::{Access, Pred, RowView};
use super::sort::sort_rows;
use crate::doc::FieldPath;
use crate::error::{Error, Result};
use crate::index::{HashMap, Key, key_for_type};
use crate::namespace::NamespaceData;
use crate::value::{Scalar, ScalarRef, compare, group_key};
use std::cmp::Ordering;
use std::sync::Arc;

struct OnPlan {
    left: Access,
    op: Op,
    right: Access,
}

/// How right rows are found for a left value of the first equality condition.
enum Finder {
    Index(usize),
    Table(HashMap<Scalar, Vec<u32>>),
    Scan,
}

/// A join compiled for one query.
pub(crate) struct JoinPlan<'a> {
    pub kind: JoinKind,
    pub alias: Arc<str>,
    right: &'a NamespaceData,
    on: Vec<OnPlan>,
    /// The `ON` condition the finder answers (an equality), if any.
    keyed: Option<usize>,
    finder: Finder,
    filter: Option<Pred>,
    sort: Vec<SortSpec>,
    offset: usize,
    limit: Option<usize>,
}

impl<'a> JoinPlan<'a> {
    pub fn compile(left: &NamespaceData, right: &'a NamespaceData, join: &Join) -> Result<JoinPlan<'a>> {
        let invalid = |reason: String| Error::InvalidQuery { reason };
        if !join.query.joins.is_empty() || !join.query.aggregations.is_empty() {
            return Err(invalid(format!("the join '{}' cannot have joins or aggregations of its own", join.alias)));
        }
        if join.on.is_empty() {
            return Err(invalid(format!("the join '{}' needs at least one ON condition", join.alias)));
        }
        let mut on = Vec::new();
        for cond in &join.on {
            if !matches!(cond.op, Op::Eq | Op::Ne | Op::Lt | Op::Le | Op::Gt | Op::Ge) {
                return Err(invalid(format!("join conditions compare with = != < <= > >=, not {}", cond.op.name())));
            }
            let right_access = Access::for_field(right, &cond.right_field);
            let collation = right_access.collation(right);
            let left_access = match Access::for_field(left, &cond.left_field) {
                Access::Column(c) if left.column(c).spec.collation == collation => Access::Column(c),
                _ => Access::Doc(FieldPath::new(&cond.left_field), collation),
            };
            on.push(OnPlan { left: left_access, op: cond.op, right: right_access });
        }
        let keyed = on.iter().position(|c| c.op == Op::Eq);
        let finder = match keyed {
            None => Finder::Scan,
            Some(at) => finder_for(right, &on[at].right),
        };
        let filter = join.query.filter.as_ref().map(|f| Pred::compile(right, f)).transpose()?;
        let sort = join
            .query
            .sort
            .iter()
            .map(|k| SortSpec { field: k.field.clone(), access: Access::for_field(right, &k.field), desc: k.desc })
            .collect();
        Ok(JoinPlan {
            kind: join.kind,
            alias: Arc::from(join.alias.as_str()),
            right,
            on,
            keyed,
            finder,
            filter,
            sort,
            offset: join.query.offset,
            limit: join.query.limit,
        })
    }

    /// The right rows joined to `left`, filtered, sorted and paged.
    pub fn rows(&self, left: &RowView<'_>) -> Vec<u32> {
        let mut rows = self.candidates(left);
        rows.retain(|&row| self.accepts(left, row));
        let window = sort_rows(self.right, &mut rows, &self.sort, self.offset, self.limit);
        rows.drain(..window.start);
        rows.truncate(window.len());
        rows
    }

    /// Whether `left` has at least one joined row (what an inner join filters on).
    pub fn exists(&self, left: &RowView<'_>) -> bool {
        if self.limit == Some(0) {
            return false;
        }
        if self.offset > 0 {
            return !self.rows(left).is_empty();
        }
        self.candidates(left).into_iter().any(|row| self.accepts(left, row))
    }

    pub fn documents(&self, rows: &[u32]) -> Vec<Arc<[u8]>> {
        rows.iter().map(|&r| self.right.doc(r).expect("joined rows are live").clone()).collect()
    }

    fn candidates(&self, left: &RowView<'_>) -> Vec<u32> {
        let Some(keyed) = self.keyed else {
            return self.right.live.iter().collect();
        };
        let mut values = Vec::new();
        left.any(&self.on[keyed].left, |v| {
            values.push(normalize(v));
            false
        });
        let mut rows = Vec::new();
        for value in &values {
            match &self.finder {
                Finder::Index(id) => {
                    let index = &self.right.indexes[*id];
                    let field_type = self.right.column(index.columns[0]).spec.field_type;
                    if let Some(postings) = key_for_type(value, field_type).and_then(|k| index.get(&Key::One(k))) {
                        postings.for_each(|r| {
                            rows.push(r);
                            true
                        });
                    }
                }
                Finder::Table(table) => rows.extend(table.get(value).into_iter().flatten()),
                Finder::Scan => rows.extend(self.right.live.iter()),
            }
        }
        rows.sort_unstable();
        rows.dedup();
        rows
    }

    fn accepts(&self, left: &RowView<'_>, row: u32) -> bool {
        let right = RowView::new(self.right, row);
        let on = self.on.iter().enumerate().all(|(i, cond)| {
            Some(i) == self.keyed && !matches!(self.finder, Finder::Scan) || holds(left, &right, cond)
        });
        on && self.filter.as_ref().is_none_or(|f| f.matches(&right))
    }
}

fn holds(left: &RowView<'_>, right: &RowView<'_>, cond: &OnPlan) -> bool {
    let mut right_values = Vec::new();
    right.any(&cond.right, |v| {
        right_values.push(v.to_owned());
        false
    });
    left.any(&cond.left, |l| {
        right_values.iter().filter_map(Scalar::as_ref).any(|r| {
            compare(l, r).is_some_and(|o| match cond.op {
                Op::Eq => o == Ordering::Equal,
                Op::Ne => o != Ordering::Equal,
                Op::Lt => o == Ordering::Less,
                Op::Le => o != Ordering::Greater,
                Op::Gt => o == Ordering::Greater,
                Op::Ge => o != Ordering::Less,
                _ => false,
            })
        })
    })
}

/// Numbers that are equal must hash equal.
fn normalize(value: ScalarRef<'_>) -> Scalar {
    group_key(value.to_owned())
}

fn finder_for(right: &NamespaceData, access: &Access) -> Finder {
    if let Access::Column(column) = access {
        let index =
            right.indexes.iter().position(|i| i.has_lookup() && i.columns.len() == 1 && i.columns[0] == *column);
        if let Some(id) = index {
            return Finder::Index(id);
        }
    }
    let mut table: HashMap<Scalar, Vec<u32>> = HashMap::default();
    for row in right.live.iter() {
        let view = RowView::new(right, row);
        view.any(access, |v| {
            let rows = table.entry(normalize(v)).or_default();
            if rows.last() != Some(&row) {
                rows.push(row);
            }
            false
        });
    }
    Finder::Table(table)
}
