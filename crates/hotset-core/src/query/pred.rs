//! Predicates: conditions compiled against one namespace and checked row by row.
//!
//! Owns: resolving each field of a condition to its column (or to the document for
//! fields without one), converting query values with the field's collation, and the
//! exact meaning of every operator (shared by index plans, which must agree with it).
//! Never: use an index; this is the path that works for every condition.
//!
//! Meaning, for a field with values V (see `doc` for paths; empty = no values):
//! `=` some v equals; `!=` is `NOT =`; `< <= > >=` some v compares so; `RANGE a b` some
//! v in [a, b]; `IN` some v equals some value; `ALLSET` every value equals some v;
//! `EMPTY` no values; `ANY` some value; `LIKE` some string v matches. Values of another
//! kind (a string against a number) never compare, so they never match.

use super::ast::{Cond, Op};
use super::fulltext::{Ranks, TextPred};
use super::like::LikePattern;
use crate::collate::Collation;
use crate::doc::{self, FieldPath};
use crate::error::{Error, Result};
use crate::limits::CONDITION_DEPTH_MAX;
use crate::namespace::NamespaceData;
use crate::value::{Scalar, ScalarRef, compare, scalar_natural};
use serde_json::Value;
use std::cell::OnceCell;
use std::cmp::Ordering;
use std::sync::Arc;

/// Where a field's values are read from.
#[derive(Debug, Clone)]
pub(crate) enum Access {
    Column(usize),
    Doc(FieldPath, Collation),
    /// `rank()`: the row's full-text rank (sorting only).
    Rank(Ranks),
}

impl Access {
    /// The access for comparisons and sorting on `field`: its canonical column when it
    /// has one, else the document.
    pub(crate) fn for_field(data: &NamespaceData, field: &str) -> Access {
        match data.field_columns.get(field) {
            Some(&column) => Access::Column(column),
            None => Access::Doc(FieldPath::new(field), Collation::None),
        }
    }

    pub(crate) fn collation(&self, data: &NamespaceData) -> Collation {
        match self {
            Access::Column(c) => data.column(*c).spec.collation,
            Access::Doc(_, collation) => *collation,
            Access::Rank(_) => Collation::None,
        }
    }
}

/// A row being checked: the namespace data, the row id, and its document parsed at
/// most once, on first need.
pub(crate) struct RowView<'a> {
    pub data: &'a NamespaceData,
    pub row: u32,
    doc: OnceCell<Value>,
}

impl<'a> RowView<'a> {
    pub fn new(data: &'a NamespaceData, row: u32) -> RowView<'a> {
        RowView { data, row, doc: OnceCell::new() }
    }

    pub fn doc(&self) -> &Value {
        self.doc.get_or_init(|| doc::decode(self.data.doc(self.row).expect("views are of live rows")))
    }

    /// Calls `f` on each value of the field until it returns true.
    pub fn any(&self, access: &Access, mut f: impl FnMut(ScalarRef<'_>) -> bool) -> bool {
        match access {
            Access::Column(c) => self.data.column(*c).any(self.row, f),
            Access::Doc(path, collation) => {
                let (values, _) = doc::field_values(self.doc(), path);
                values.iter().any(|v| with_natural(v, *collation, &mut f))
            }
            Access::Rank(ranks) => f(ScalarRef::Double(f64::from(ranks.rank(self.row)))),
        }
    }

    pub fn is_empty(&self, access: &Access) -> bool {
        match access {
            Access::Column(c) => self.data.column(*c).is_empty_at(self.row),
            Access::Doc(path, _) => doc::field_values(self.doc(), path).0.is_empty(),
            Access::Rank(_) => false,
        }
    }

    /// The sort value: the field's first value.
    pub fn first(&self, access: &Access) -> Option<Scalar> {
        match access {
            Access::Column(c) => self.data.column(*c).first(self.row).map(ScalarRef::to_owned),
            Access::Doc(path, collation) => {
                let (values, _) = doc::field_values(self.doc(), path);
                values.iter().find_map(|v| scalar_natural(v, *collation))
            }
            Access::Rank(ranks) => Some(Scalar::Double(crate::value::OrdF64::new(f64::from(ranks.rank(self.row))))),
        }
    }
}

/// Hands a JSON scalar to `f` as a `ScalarRef`, without allocating for exact strings.
fn with_natural(value: &Value, collation: Collation, f: &mut impl FnMut(ScalarRef<'_>) -> bool) -> bool {
    match (value, collation) {
        (Value::String(s), Collation::None) => f(ScalarRef::Str(s.as_bytes())),
        _ => scalar_natural(value, collation).is_some_and(|s| s.as_ref().is_some_and(&mut *f)),
    }
}

/// The order of sort values: empty first, then bools, numbers, strings; like kinds by
/// `compare`. A total order, so sorting never panics on mixed data.
pub(crate) fn sort_order(left: Option<&Scalar>, right: Option<&Scalar>) -> Ordering {
    fn rank(value: Option<&Scalar>) -> u8 {
        match value {
            None | Some(Scalar::Null) => 0,
            Some(Scalar::Bool(_)) => 1,
            Some(Scalar::Int(_) | Scalar::Double(_)) => 2,
            Some(Scalar::Str(_)) => 3,
        }
    }
    rank(left).cmp(&rank(right)).then_with(|| match (left.and_then(Scalar::as_ref), right.and_then(Scalar::as_ref)) {
        (Some(a), Some(b)) => compare(a, b).unwrap_or(Ordering::Equal),
        _ => Ordering::Equal,
    })
}

/// A compiled field condition.
#[derive(Debug, Clone)]
pub(crate) struct FieldPred {
    pub field: String,
    pub access: Access,
    pub op: Op,
    pub values: Vec<Scalar>,
    pub like: Option<LikePattern>,
}

/// A compiled condition tree.
#[derive(Debug, Clone)]
pub(crate) enum Pred {
    Field(FieldPred),
    /// A full-text match, already run: its rows and ranks.
    Text(Arc<TextPred>),
    And(Vec<Pred>),
    Or(Vec<Pred>),
    Not(Box<Pred>),
}

impl Pred {
    /// Compiles a condition tree; one nested deeper than [`CONDITION_DEPTH_MAX`] is refused
    /// before anything recurses further (every walk of a `Pred` recurses per level).
    pub fn compile(data: &NamespaceData, cond: &Cond) -> Result<Pred> {
        Pred::compile_at(data, cond, 1)
    }

    fn compile_at(data: &NamespaceData, cond: &Cond, depth: usize) -> Result<Pred> {
        if depth > CONDITION_DEPTH_MAX {
            return Err(Error::InvalidQuery {
                reason: format!("conditions nest deeper than condition_depth_max ({CONDITION_DEPTH_MAX} levels)"),
            });
        }
        let all = |items: &[Cond]| items.iter().map(|c| Pred::compile_at(data, c, depth + 1)).collect::<Result<_>>();
        Ok(match cond {
            Cond::Field { field, op: Op::Match, values } => {
                Pred::Text(Arc::new(TextPred::compile(data, field, values)?))
            }
            Cond::Field { field, op, values } => Pred::Field(FieldPred::compile(data, field, *op, values)?),
            Cond::And(items) => Pred::And(all(items)?),
            Cond::Or(items) => Pred::Or(all(items)?),
            Cond::Not(inner) => Pred::Not(Box::new(Pred::compile_at(data, inner, depth + 1)?)),
        })
    }

    /// The full-text matches in this condition, in order.
    pub fn texts(&self, out: &mut Vec<Arc<TextPred>>) {
        match self {
            Pred::Field(_) => {}
            Pred::Text(text) => out.push(text.clone()),
            Pred::And(items) | Pred::Or(items) => items.iter().for_each(|p| p.texts(out)),
            Pred::Not(inner) => inner.texts(out),
        }
    }

    /// A short text of the condition, for explain.
    pub fn describe(&self) -> String {
        let join = |items: &[Pred], word: &str| items.iter().map(Pred::describe).collect::<Vec<_>>().join(word);
        match self {
            Pred::Field(f) => {
                let how = if matches!(f.access, Access::Column(_)) { "column" } else { "document" };
                format!("{} {} ({how})", f.field, f.op.name())
            }
            Pred::Text(text) => format!("MATCH({}) ({} hit(s))", text.field, text.hits.rows.len()),
            Pred::And(items) => format!("({})", join(items, " AND ")),
            Pred::Or(items) => format!("({})", join(items, " OR ")),
            Pred::Not(inner) => format!("NOT {}", inner.describe()),
        }
    }

    pub fn matches(&self, view: &RowView<'_>) -> bool {
        match self {
            Pred::Field(field) => field.matches(view),
            Pred::Text(text) => text.hits.rows.contains(view.row),
            Pred::And(items) => items.iter().all(|p| p.matches(view)),
            Pred::Or(items) => items.iter().any(|p| p.matches(view)),
            Pred::Not(inner) => !inner.matches(view),
        }
    }
}

impl FieldPred {
    /// The column the predicate reads, if it reads one.
    pub fn access_column(&self) -> Option<usize> {
        match self.access {
            Access::Column(column) => Some(column),
            Access::Doc(..) | Access::Rank(_) => None,
        }
    }

    pub fn compile(data: &NamespaceData, field: &str, op: Op, values: &[Value]) -> Result<FieldPred> {
        let invalid = |reason: String| Error::InvalidQuery { reason };
        if field.is_empty() || field.split('.').any(str::is_empty) {
            return Err(invalid(format!("invalid field name '{field}'")));
        }
        let expected = match op {
            Op::Empty | Op::Any => Some(0),
            Op::Range => Some(2),
            Op::In | Op::AllSet => None,
            _ => Some(1),
        };
        if expected.is_some_and(|n| n > 0 && n != values.len()) {
            return Err(invalid(format!(
                "{} on '{field}' takes {} value(s), got {}",
                op.name(),
                expected.unwrap_or(0),
                values.len()
            )));
        }
        let mut access = Access::for_field(data, field);
        let collation = access.collation(data);
        if op == Op::Like && !collation.keys_are_text() {
            // Numeric collation keys are not text: match LIKE against the original string.
            access = Access::Doc(FieldPath::new(field), Collation::None);
        }
        let like = match op {
            Op::Like => Some(compile_like(field, &values[0], collation)?),
            _ => None,
        };
        let scalars = match op {
            Op::Empty | Op::Any | Op::Like => Vec::new(),
            _ => values
                .iter()
                .map(|v| {
                    scalar_natural(v, collation).ok_or_else(|| {
                        invalid(format!(
                            "{} on '{field}' needs scalar values, got {} (use EMPTY / ANY to test for null)",
                            op.name(),
                            crate::error::json_kind(v)
                        ))
                    })
                })
                .collect::<Result<_>>()?,
        };
        Ok(FieldPred { field: field.to_string(), access, op, values: scalars, like })
    }

    /// Keeps the rows of `rows` that match, in one tight pass over an int column (loads
    /// of many rows then overlap instead of waiting one by one). Returns false, changing
    /// nothing, when the predicate has no such form (another type, operator or value).
    pub fn retain_int(&self, data: &NamespaceData, rows: &mut Vec<u32>) -> bool {
        let Access::Column(column) = self.access else { return false };
        let Some((values, present)) = data.column(column).int_parts() else { return false };
        let int = |at: usize| match self.values.get(at) {
            Some(Scalar::Int(v)) => Some(*v),
            _ => None,
        };
        let value = |row: u32| {
            let (at, word, bit) = (row as usize, row as usize / 64, row % 64);
            let here = at < values.len() && present.get(word).is_some_and(|w| w & (1 << bit) != 0);
            here.then(|| values[at])
        };
        let (low, high) = match (self.op, int(0), int(1)) {
            (Op::Eq | Op::Ne, Some(q), _) => (q, q),
            (Op::Lt, Some(q), _) => match q.checked_sub(1) {
                Some(q) => (i64::MIN, q),
                None => (1, 0),
            },
            (Op::Le, Some(q), _) => (i64::MIN, q),
            (Op::Gt, Some(q), _) => match q.checked_add(1) {
                Some(q) => (q, i64::MAX),
                None => (1, 0),
            },
            (Op::Ge, Some(q), _) => (q, i64::MAX),
            (Op::Range, Some(l), Some(h)) => (l, h),
            _ => return false,
        };
        let inside = |row: u32| value(row).is_some_and(|v| low <= v && v <= high);
        if self.op == Op::Ne {
            rows.retain(|&row| !inside(row));
        } else {
            rows.retain(|&row| inside(row));
        }
        true
    }

    pub fn matches(&self, view: &RowView<'_>) -> bool {
        fn equal_to(q: &Scalar) -> impl Fn(ScalarRef<'_>) -> bool + '_ {
            let q = q.as_ref();
            move |v| q.is_some_and(|q| compare(v, q) == Some(Ordering::Equal))
        }
        let ordered = |want: fn(Ordering) -> bool| {
            let q = self.values[0].as_ref();
            move |v: ScalarRef<'_>| q.and_then(|q| compare(v, q)).is_some_and(want)
        };
        match self.op {
            Op::Eq => view.any(&self.access, equal_to(&self.values[0])),
            Op::Ne => !view.any(&self.access, equal_to(&self.values[0])),
            Op::Lt => view.any(&self.access, ordered(Ordering::is_lt)),
            Op::Le => view.any(&self.access, ordered(Ordering::is_le)),
            Op::Gt => view.any(&self.access, ordered(Ordering::is_gt)),
            Op::Ge => view.any(&self.access, ordered(Ordering::is_ge)),
            Op::Range => {
                let (low, high) = (self.values[0].as_ref(), self.values[1].as_ref());
                view.any(&self.access, |v| {
                    let above = low.and_then(|l| compare(v, l)).is_some_and(Ordering::is_ge);
                    above && high.and_then(|h| compare(v, h)).is_some_and(Ordering::is_le)
                })
            }
            Op::In => view.any(&self.access, |v| self.values.iter().any(|q| equal_to(q)(v))),
            Op::AllSet => self.values.iter().all(|q| view.any(&self.access, equal_to(q))),
            Op::Empty => view.is_empty(&self.access),
            Op::Any => !view.is_empty(&self.access),
            Op::Match => unreachable!("full-text matches compile to Pred::Text"),
            Op::Like => {
                let pattern = self.like.as_ref().expect("LIKE predicates carry a pattern");
                view.any(&self.access, |v| match v {
                    ScalarRef::Str(bytes) => pattern.matches_bytes(bytes),
                    _ => false,
                })
            }
        }
    }
}

fn compile_like(field: &str, value: &Value, collation: Collation) -> Result<LikePattern> {
    match value {
        Value::String(pattern) => LikePattern::parse(&collation.fold_text(pattern)),
        other => Err(Error::InvalidQuery {
            reason: format!("LIKE on '{field}' needs a string pattern, got {}", crate::error::json_kind(other)),
        }),
    }
}
