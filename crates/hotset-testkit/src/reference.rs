//! The reference model: what a query must answer, computed the slowest, plainest way.
//!
//! Owns: documents as `serde_json::Value`s in a map, and an independent evaluation of
//! filters, sorts, paging, totals and aggregations straight from the documented
//! semantics (see `hotset_core::query` and `hotset_core::doc`), and of every write:
//! which error kind refuses it and how many documents it affects. Only collation keys
//! (`Collation::key`, checked against naive comparators in `collate.rs`) are shared with
//! the engine.
//! Never: use indexes, columns or the engine's planner, executor or predicates.
//!
//! Numbers compare by exact value, ints and doubles mixed (`2^53 + 1` is above the
//! double `2^53`). A field whose canonical index (the first covering it) is of type
//! double holds its values as doubles, so an int stored there compares rounded.

use hotset_core::query::{Aggregation, Cond, Op, Query};
use hotset_core::{Collation, FieldType, IndexDef, IndexKind};
use serde_json::Value;
use std::cmp::Ordering;
use std::collections::BTreeMap;

/// A value as the reference compares it.
#[derive(Debug, Clone, PartialEq)]
pub enum RefScalar {
    Bool(bool),
    Int(i64),
    Double(f64),
    Text(Vec<u8>),
}

impl RefScalar {
    fn rank(&self) -> u8 {
        match self {
            RefScalar::Bool(_) => 1,
            RefScalar::Int(_) | RefScalar::Double(_) => 2,
            RefScalar::Text(_) => 3,
        }
    }

    /// `None` for values of different kinds (and for NaN).
    pub fn compare(&self, other: &RefScalar) -> Option<Ordering> {
        match (self, other) {
            (RefScalar::Bool(a), RefScalar::Bool(b)) => Some(a.cmp(b)),
            (RefScalar::Int(a), RefScalar::Int(b)) => Some(a.cmp(b)),
            (RefScalar::Double(a), RefScalar::Double(b)) => a.partial_cmp(b),
            (RefScalar::Int(a), RefScalar::Double(b)) => int_vs_double(*a, *b),
            (RefScalar::Double(a), RefScalar::Int(b)) => int_vs_double(*b, *a).map(Ordering::reverse),
            (RefScalar::Text(a), RefScalar::Text(b)) => Some(a.cmp(b)),
            _ => None,
        }
    }

    /// The number as a double (rounded for big ints), for sums and averages.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            RefScalar::Int(i) => Some(*i as f64),
            RefScalar::Double(d) => Some(*d),
            _ => None,
        }
    }
}

/// An int against a double, exactly: the double's floor as an i128 (saturating, which
/// keeps the order for doubles far outside i64), then its fraction.
fn int_vs_double(int: i64, double: f64) -> Option<Ordering> {
    if double.is_nan() {
        return None;
    }
    let floor = double.floor();
    match i128::from(int).cmp(&(floor as i128)) {
        Ordering::Equal if double > floor => Some(Ordering::Less),
        order => Some(order),
    }
}

/// Sort order: empty first, then bools, numbers, strings.
pub fn sort_order(a: &Option<RefScalar>, b: &Option<RefScalar>) -> Ordering {
    match (a, b) {
        (None, None) => Ordering::Equal,
        (None, Some(_)) => Ordering::Less,
        (Some(_), None) => Ordering::Greater,
        (Some(x), Some(y)) => x.rank().cmp(&y.rank()).then(x.compare(y).unwrap_or(Ordering::Equal)),
    }
}

/// Full-text matching reduced to what the generated data needs (see
/// `generate::TEXT_WORDS`): words are runs of letters and digits, compared in lower case;
/// an element is `word` or `prefix*`, maybe marked `+` (required) or `-` (excluded). A
/// document matches when some element that is not excluded matches, every required one
/// does, and no excluded one does.
pub fn text_matches(values: &[Value], query: &str) -> bool {
    let words: Vec<String> = values
        .iter()
        .filter_map(Value::as_str)
        .flat_map(|s| {
            s.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_lowercase).collect::<Vec<_>>()
        })
        .collect();
    let mut any = false;
    for element in query.split_whitespace() {
        let (presence, rest) = match element.as_bytes()[0] {
            b'+' => ('+', &element[1..]),
            b'-' => ('-', &element[1..]),
            _ => (' ', element),
        };
        let rest = rest.to_lowercase();
        let found = match rest.strip_suffix('*') {
            Some(prefix) => words.iter().any(|w| w.starts_with(prefix)),
            None => words.contains(&rest),
        };
        match presence {
            '-' if found => return false,
            '-' => {}
            '+' if !found => return false,
            _ => any |= found,
        }
    }
    any
}

/// The non-null values a dotted path names (arrays walked and flattened).
pub fn field_values(doc: &Value, field: &str) -> Vec<Value> {
    fn walk(value: &Value, parts: &[&str], out: &mut Vec<Value>) {
        if let Value::Array(items) = value {
            for item in items {
                walk(item, parts, out);
            }
            return;
        }
        match parts.split_first() {
            None => {
                if !value.is_null() {
                    out.push(value.clone());
                }
            }
            Some((head, rest)) => {
                if let Some(child) = value.as_object().and_then(|m| m.get(*head)) {
                    walk(child, rest, out);
                }
            }
        }
    }
    let parts: Vec<&str> = field.split('.').collect();
    let mut out = Vec::new();
    walk(doc, &parts, &mut out);
    out
}

/// A JSON scalar by its own kind (an int stays exact; a number past i64 is a double).
pub fn to_scalar(value: &Value, collation: Collation) -> Option<RefScalar> {
    match value {
        Value::Bool(b) => Some(RefScalar::Bool(*b)),
        Value::Number(n) => match n.as_i64() {
            Some(i) => Some(RefScalar::Int(i)),
            None => n.as_f64().map(RefScalar::Double),
        },
        Value::String(s) => Some(RefScalar::Text(collation.key(s))),
        _ => None,
    }
}

/// One namespace of the reference model.
#[derive(Debug, Clone, Default)]
pub struct RefNamespace {
    pub defs: Vec<IndexDef>,
    /// Documents by primary key (JSON text of the `id` field).
    pub docs: BTreeMap<String, Value>,
}

/// What the reference answers: every match in sort order (ties in any order).
#[derive(Debug, Clone)]
pub struct RefResult {
    pub matches: Vec<Value>,
    pub aggregations: Vec<RefAggregation>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum RefAggregation {
    Count(u64),
    /// Sum, avg, min or max; `None` when no value was numeric.
    Number(Option<RefNumber>),
    /// Groups as (collation keys of the values, count), in the facet's order.
    Facet(Vec<(Vec<Option<RefScalar>>, u64)>),
    Distinct(Vec<RefScalar>),
}

/// The result of a numeric aggregation.
#[derive(Debug, Clone, PartialEq)]
pub enum RefNumber {
    /// Exactly this value (min, max, a sum of ints).
    Exact(RefScalar),
    /// A sum or average with doubles in it, known up to the rounding that the order of
    /// additions may change.
    Approx { value: f64, tolerance: f64 },
}

impl RefNumber {
    /// Whether a JSON number the engine answered is this one.
    pub fn accepts(&self, engine: &Value) -> bool {
        let Some(got) = to_scalar(engine, Collation::None) else { return false };
        match self {
            RefNumber::Exact(want) => got.compare(want) == Some(Ordering::Equal),
            RefNumber::Approx { value, tolerance } => got.as_f64().is_some_and(|g| (g - value).abs() <= *tolerance),
        }
    }
}

impl RefNamespace {
    pub fn collation(&self, field: &str) -> Collation {
        self.defs
            .iter()
            .find_map(|d| d.fields.iter().position(|f| f == field).map(|at| d.collation_of(at)))
            .unwrap_or(Collation::None)
    }

    /// The declared type of a field's canonical index (the first that covers it and
    /// keeps a column: text indexes do not).
    pub fn field_type(&self, field: &str) -> Option<FieldType> {
        self.defs
            .iter()
            .filter(|d| d.kind != IndexKind::Text)
            .find_map(|d| d.fields.iter().position(|f| f == field).map(|at| d.type_of(at)))
    }

    /// A stored value of `field` as it compares: by its own kind, except that a double
    /// field holds every number as a double.
    pub fn scalar(&self, field: &str, value: &Value) -> Option<RefScalar> {
        let scalar = to_scalar(value, self.collation(field))?;
        match (self.field_type(field), scalar) {
            (Some(FieldType::Double), RefScalar::Int(i)) => Some(RefScalar::Double(i as f64)),
            (_, scalar) => Some(scalar),
        }
    }

    fn values(&self, doc: &Value, field: &str) -> Vec<RefScalar> {
        field_values(doc, field).iter().filter_map(|v| self.scalar(field, v)).collect()
    }

    pub fn first(&self, doc: &Value, field: &str) -> Option<RefScalar> {
        self.values(doc, field).into_iter().next()
    }

    pub fn matches(&self, doc: &Value, cond: &Cond) -> bool {
        match cond {
            Cond::And(items) => items.iter().all(|c| self.matches(doc, c)),
            Cond::Or(items) => items.iter().any(|c| self.matches(doc, c)),
            Cond::Not(inner) => !self.matches(doc, inner),
            Cond::Field { field, op, values } => self.field_matches(doc, field, *op, values),
        }
    }

    fn field_matches(&self, doc: &Value, field: &str, op: Op, query: &[Value]) -> bool {
        let collation = self.collation(field);
        let have = self.values(doc, field);
        let q: Vec<RefScalar> = query.iter().filter_map(|v| to_scalar(v, collation)).collect();
        let eq = |want: &RefScalar| have.iter().any(|v| v.compare(want) == Some(Ordering::Equal));
        let any_cmp = |f: fn(Ordering) -> bool| have.iter().any(|v| v.compare(&q[0]).is_some_and(f));
        match op {
            Op::Eq => eq(&q[0]),
            Op::Ne => !eq(&q[0]),
            Op::Lt => any_cmp(Ordering::is_lt),
            Op::Le => any_cmp(Ordering::is_le),
            Op::Gt => any_cmp(Ordering::is_gt),
            Op::Ge => any_cmp(Ordering::is_ge),
            Op::Range => have.iter().any(|v| {
                v.compare(&q[0]).is_some_and(Ordering::is_ge) && v.compare(&q[1]).is_some_and(Ordering::is_le)
            }),
            Op::In => q.iter().any(eq),
            Op::AllSet => q.iter().all(eq),
            Op::Empty => field_values(doc, field).is_empty(),
            Op::Any => !field_values(doc, field).is_empty(),
            Op::Like => self.like(doc, field, query[0].as_str().unwrap_or_default(), collation),
            Op::Match => text_matches(&field_values(doc, field), query[0].as_str().unwrap_or_default()),
        }
    }

    fn like(&self, doc: &Value, field: &str, pattern: &str, collation: Collation) -> bool {
        let fold = |s: &str| match collation {
            Collation::Numeric => s.to_string(),
            other => String::from_utf8(other.key(s)).expect("text collation keys are UTF-8"),
        };
        let pattern: Vec<char> = fold(pattern).chars().collect();
        field_values(doc, field)
            .iter()
            .filter_map(Value::as_str)
            .any(|s| like_match(&pattern, &fold(s).chars().collect::<Vec<_>>()))
    }

    /// Runs a query's filter, sort, aggregations (paging is the caller's).
    pub fn query(&self, query: &Query) -> RefResult {
        let mut matches: Vec<Value> =
            self.docs.values().filter(|d| query.filter.as_ref().is_none_or(|c| self.matches(d, c))).cloned().collect();
        matches.sort_by(|a, b| self.compare_docs(a, b, query));
        let aggregations = query.aggregations.iter().map(|a| self.aggregate(&matches, a)).collect();
        RefResult { matches, aggregations }
    }

    pub fn sort_key(&self, doc: &Value, query: &Query) -> Vec<Option<RefScalar>> {
        query.sort.iter().map(|k| self.first(doc, &k.field)).collect()
    }

    pub fn compare_docs(&self, a: &Value, b: &Value, query: &Query) -> Ordering {
        let (ka, kb) = (self.sort_key(a, query), self.sort_key(b, query));
        for ((x, y), key) in ka.iter().zip(&kb).zip(&query.sort) {
            let order = sort_order(x, y);
            let order = if key.desc { order.reverse() } else { order };
            if order != Ordering::Equal {
                return order;
            }
        }
        Ordering::Equal
    }

    fn aggregate(&self, matches: &[Value], aggregation: &Aggregation) -> RefAggregation {
        let numbers = |field: &str| -> Vec<RefScalar> {
            matches.iter().flat_map(|d| self.values(d, field)).filter(|v| v.as_f64().is_some()).collect()
        };
        let extreme = |field: &str, want: Ordering| {
            numbers(field).into_iter().reduce(|best, v| if v.compare(&best) == Some(want) { v } else { best })
        };
        match aggregation {
            Aggregation::Count => RefAggregation::Count(matches.len() as u64),
            Aggregation::Sum(f) => RefAggregation::Number(sum(&numbers(f), false)),
            Aggregation::Avg(f) => RefAggregation::Number(sum(&numbers(f), true)),
            Aggregation::Min(f) => RefAggregation::Number(extreme(f, Ordering::Less).map(RefNumber::Exact)),
            Aggregation::Max(f) => RefAggregation::Number(extreme(f, Ordering::Greater).map(RefNumber::Exact)),
            Aggregation::Distinct(f) => {
                let mut all: Vec<RefScalar> = matches.iter().flat_map(|d| self.values(d, f)).collect();
                all.sort_by(|a, b| sort_order(&Some(a.clone()), &Some(b.clone())));
                all.dedup_by(|a, b| a.compare(b) == Some(Ordering::Equal));
                RefAggregation::Distinct(all)
            }
            Aggregation::Facet(facet) => self.facet(matches, facet),
        }
    }

    fn facet(&self, matches: &[Value], facet: &hotset_core::query::Facet) -> RefAggregation {
        let mut groups: Vec<(Vec<Option<RefScalar>>, u64)> = Vec::new();
        let mut bump = |key: Vec<Option<RefScalar>>| match groups.iter_mut().find(|(k, _)| keys_equal(k, &key)) {
            Some(group) => group.1 += 1,
            None => groups.push((key, 1)),
        };
        for doc in matches {
            if facet.fields.len() == 1 {
                let mut distinct: Vec<RefScalar> = Vec::new();
                for v in self.values(doc, &facet.fields[0]) {
                    if !distinct.iter().any(|d| d.compare(&v) == Some(Ordering::Equal)) {
                        distinct.push(v);
                    }
                }
                for v in distinct {
                    bump(vec![Some(v)]);
                }
            } else {
                bump(facet.fields.iter().map(|f| self.first(doc, f)).collect());
            }
        }
        let value_order = |a: &Vec<Option<RefScalar>>, b: &Vec<Option<RefScalar>>| {
            a.iter().zip(b).map(|(x, y)| sort_order(x, y)).find(|o| o.is_ne()).unwrap_or(Ordering::Equal)
        };
        groups.sort_by(|a, b| {
            let sort: Vec<(Option<usize>, bool)> = if facet.sort.is_empty() {
                vec![(None, true)]
            } else {
                facet.sort.iter().map(|k| (facet.fields.iter().position(|f| *f == k.field), k.desc)).collect()
            };
            for (field, desc) in sort {
                let order = match field {
                    None => a.1.cmp(&b.1),
                    Some(i) => sort_order(&a.0[i], &b.0[i]),
                };
                let order = if desc { order.reverse() } else { order };
                if order.is_ne() {
                    return order;
                }
            }
            value_order(&a.0, &b.0)
        });
        let groups = groups.into_iter().skip(facet.offset).take(facet.limit.unwrap_or(usize::MAX)).collect();
        RefAggregation::Facet(groups)
    }
}

/// A sum (or, with `average`, the mean) of numbers: ints add exactly (in i128) and, when
/// every value is an int whose sum fits i64, that is the answer; otherwise the ints' sum
/// as a double plus the doubles, up to the rounding of the doubles' additions.
fn sum(numbers: &[RefScalar], average: bool) -> Option<RefNumber> {
    if numbers.is_empty() {
        return None;
    }
    let (mut ints, mut doubles, mut magnitude, mut all_ints) = (0i128, 0f64, 0f64, true);
    for number in numbers {
        match number {
            RefScalar::Int(i) => ints += i128::from(*i),
            other => {
                let d = other.as_f64().expect("numbers only");
                doubles += d;
                magnitude += d.abs();
                all_ints = false;
            }
        }
    }
    let count = numbers.len() as f64;
    if !average && all_ints {
        return Some(RefNumber::Exact(match i64::try_from(ints) {
            Ok(exact) => RefScalar::Int(exact),
            Err(_) => RefScalar::Double(ints as f64),
        }));
    }
    let value = ints as f64 + doubles;
    let tolerance = 1e-9 * (magnitude + (ints as f64).abs()) + f64::MIN_POSITIVE;
    Some(if average {
        RefNumber::Approx { value: value / count, tolerance: tolerance / count }
    } else {
        RefNumber::Approx { value, tolerance }
    })
}

pub fn keys_equal(a: &[Option<RefScalar>], b: &[Option<RefScalar>]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| sort_order(x, y) == Ordering::Equal)
}

/// LIKE by plain recursion over characters (`\` escapes, `%` any run, `_` one char).
pub fn like_match(pattern: &[char], text: &[char]) -> bool {
    match pattern.split_first() {
        None => text.is_empty(),
        Some(('%', rest)) => (0..=text.len()).any(|skip| like_match(rest, &text[skip..])),
        Some(('_', rest)) => !text.is_empty() && like_match(rest, &text[1..]),
        Some(('\\', rest)) => match rest.split_first() {
            Some((c, rest)) => text.first() == Some(c) && like_match(rest, &text[1..]),
            None => false,
        },
        Some((c, rest)) => text.first() == Some(c) && like_match(rest, &text[1..]),
    }
}

/// The kind of error that refuses a write: the engine's `Error` variant it must answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    UnknownNamespace,
    DuplicateKey,
    NotFound,
    WrongType,
    MissingKey,
    IndexExists,
    UnknownIndex,
    InvalidIndex,
    /// A bad update by query: arithmetic on a non-number, division by zero, overflow, a
    /// field set through a non-object.
    InvalidQuery,
}

impl Refusal {
    /// The refusal an engine error stands for, if the reference knows that kind.
    pub fn of(error: &hotset_core::Error) -> Option<Refusal> {
        use hotset_core::Error;
        Some(match error {
            Error::UnknownNamespace { .. } => Refusal::UnknownNamespace,
            Error::DuplicateKey { .. } => Refusal::DuplicateKey,
            Error::NotFound { .. } => Refusal::NotFound,
            Error::WrongType { .. } => Refusal::WrongType,
            Error::MissingKey { .. } => Refusal::MissingKey,
            Error::IndexExists { .. } => Refusal::IndexExists,
            Error::UnknownIndex { .. } => Refusal::UnknownIndex,
            Error::InvalidIndex { .. } => Refusal::InvalidIndex,
            Error::InvalidQuery { .. } => Refusal::InvalidQuery,
            _ => return None,
        })
    }
}

/// Why the reference refused a write (the engine must refuse it with the same kind).
#[derive(Debug, Clone, PartialEq)]
pub struct Refused {
    pub kind: Refusal,
    pub reason: String,
    /// Other kinds that are right too: an update by query that fails for several
    /// documents may report any of them (the order it visits them in is its own).
    pub alternatives: Vec<Refusal>,
}

impl Refused {
    /// Whether the engine's error is one this refusal allows.
    pub fn allows(&self, error: &hotset_core::Error) -> bool {
        Refusal::of(error).is_some_and(|kind| kind == self.kind || self.alternatives.contains(&kind))
    }
}

fn refused<T>(kind: Refusal, reason: impl Into<String>) -> Result<T, Refused> {
    Err(Refused { kind, reason: reason.into(), alternatives: Vec::new() })
}

fn type_fits(value: &Value, field_type: hotset_core::FieldType) -> bool {
    use hotset_core::FieldType;
    match field_type {
        FieldType::Int => value.as_i64().is_some(),
        FieldType::Double => value.is_number(),
        FieldType::String => value.is_string(),
        FieldType::Bool => value.is_boolean(),
    }
}

/// Whether walking `field` in `doc` meets an array anywhere (a non-array index refuses).
fn meets_array(doc: &Value, field: &str) -> bool {
    let mut node = doc;
    for part in field.split('.') {
        match node {
            Value::Array(_) => return true,
            Value::Object(map) => match map.get(part) {
                Some(child) => node = child,
                None => return false,
            },
            _ => return false,
        }
    }
    node.is_array()
}

impl RefNamespace {
    /// Checks a document against one index definition.
    pub fn fits(doc: &Value, def: &IndexDef) -> Result<(), Refused> {
        for (position, field) in def.fields.iter().enumerate() {
            if !def.array && meets_array(doc, field) {
                return refused(Refusal::WrongType, format!("{field} is an array"));
            }
            let values = field_values(doc, field);
            if let Some(bad) = values.iter().find(|v| !type_fits(v, def.type_of(position))) {
                return refused(
                    Refusal::WrongType,
                    format!("{field} = {bad} does not fit {:?}", def.type_of(position)),
                );
            }
            if def.pk && values.is_empty() {
                return refused(Refusal::MissingKey, format!("{field} (primary key) is missing"));
            }
        }
        Ok(())
    }

    fn valid(&self, doc: &Value) -> Result<String, Refused> {
        assert!(doc.is_object(), "the generators make objects only");
        for def in &self.defs {
            RefNamespace::fits(doc, def)?;
        }
        Ok(doc["id"].to_string())
    }

    /// Applies one write as the documented semantics say and returns how many documents
    /// it affected (what the engine's call returns: 1 for a stored document, whether a
    /// delete found its key, the matches of a write by query, the operations of a
    /// transaction, 0 for an index change); `Err` means nothing changed.
    pub fn apply(&mut self, write: &crate::generate::Write) -> Result<usize, Refused> {
        use crate::generate::Write;
        match write {
            Write::Insert(doc) => self.store(doc, Mode::Insert),
            Write::Upsert(doc) => self.store(doc, Mode::Upsert),
            Write::Update(doc) => self.store(doc, Mode::Update),
            Write::Delete(id) => Ok(usize::from(self.docs.remove(&id.to_string()).is_some())),
            Write::DeleteQuery(cond) => {
                let keys: Vec<String> =
                    self.docs.iter().filter(|(_, d)| self.matches(d, cond)).map(|(k, _)| k.clone()).collect();
                for key in &keys {
                    self.docs.remove(key);
                }
                Ok(keys.len())
            }
            Write::UpdateQuery(cond, sets) => self.update_query(cond.as_ref(), sets),
            Write::AddIndex(def) => {
                if self.defs.iter().any(|d| d.name == def.name) {
                    return refused(Refusal::IndexExists, "index exists");
                }
                for doc in self.docs.values() {
                    RefNamespace::fits(doc, def)?;
                }
                self.defs.push(def.clone());
                Ok(0)
            }
            Write::DropIndex(name) => match self.defs.iter().position(|d| d.name == *name) {
                Some(at) if self.defs[at].pk => refused(Refusal::InvalidIndex, "the primary key index"),
                Some(at) => {
                    self.defs.remove(at);
                    Ok(0)
                }
                None => refused(Refusal::UnknownIndex, "no such index"),
            },
            Write::Transaction(operations) => self.transaction(operations),
        }
    }

    fn store(&mut self, doc: &Value, mode: Mode) -> Result<usize, Refused> {
        let key = self.valid(doc)?;
        let exists = self.docs.contains_key(&key);
        match mode {
            Mode::Insert if exists => return refused(Refusal::DuplicateKey, format!("duplicate key {key}")),
            Mode::Update if !exists => return refused(Refusal::NotFound, format!("no document {key}")),
            _ => {}
        }
        self.docs.insert(key, doc.clone());
        Ok(1)
    }

    /// Every operation on a copy; the copy replaces the documents only if all succeed.
    fn transaction(&mut self, operations: &[crate::generate::TransactionWrite]) -> Result<usize, Refused> {
        use crate::generate::TransactionWrite;
        let mut scratch = self.clone();
        for operation in operations {
            match operation {
                TransactionWrite::Insert(doc) => scratch.store(doc, Mode::Insert)?,
                TransactionWrite::Upsert(doc) => scratch.store(doc, Mode::Upsert)?,
                TransactionWrite::Update(doc) => scratch.store(doc, Mode::Update)?,
                TransactionWrite::Delete(id) => usize::from(scratch.docs.remove(&id.to_string()).is_some()),
            };
        }
        self.docs = scratch.docs;
        Ok(operations.len())
    }

    fn update_query(&mut self, cond: Option<&Cond>, sets: &[hotset_core::query::SetField]) -> Result<usize, Refused> {
        use hotset_core::query::SetField;
        let mut updated = Vec::new();
        let mut failures: Vec<Refused> = Vec::new();
        for (key, doc) in &self.docs {
            if !cond.is_none_or(|c| self.matches(doc, c)) {
                continue;
            }
            let new = (|| {
                let mut new = doc.clone();
                for set in sets {
                    match set {
                        SetField::Set(field, expr) => set_path(&mut new, field, evaluate(expr, doc)?)?,
                        SetField::Drop(field) => drop_path(&mut new, field),
                    }
                }
                self.valid(&new)?;
                Ok::<Value, Refused>(new)
            })();
            match new {
                Ok(new) => updated.push((key.clone(), new)),
                Err(failure) => failures.push(failure),
            }
        }
        if let Some(mut first) = failures.first().cloned() {
            first.alternatives = failures.iter().map(|f| f.kind).filter(|k| *k != first.kind).collect();
            return Err(first);
        }
        let count = updated.len();
        self.docs.extend(updated);
        Ok(count)
    }
}

/// How a document write treats an existing key.
#[derive(Debug, Clone, Copy)]
enum Mode {
    Insert,
    Upsert,
    Update,
}

fn evaluate(expr: &hotset_core::query::Expr, doc: &Value) -> Result<Value, Refused> {
    use hotset_core::query::{ArithOp, Expr};
    match expr {
        Expr::Value(v) => Ok(v.clone()),
        Expr::Field(f) => Ok(field_values(doc, f).into_iter().next().unwrap_or(Value::Null)),
        Expr::Binary(l, op, r) => {
            let (l, r) = (evaluate(l, doc)?, evaluate(r, doc)?);
            if l.is_null() || r.is_null() {
                return Ok(Value::Null);
            }
            let (Some(x), Some(y)) = (l.as_f64(), r.as_f64()) else {
                return refused(Refusal::InvalidQuery, "arithmetic on a non-number");
            };
            if *op == ArithOp::Div && y == 0.0 {
                return refused(Refusal::InvalidQuery, "division by zero");
            }
            if let (Some(a), Some(b)) = (l.as_i64(), r.as_i64()) {
                // i128 holds every result of two i64s, so overflow is a range check.
                let (a, b) = (i128::from(a), i128::from(b));
                let exact = match op {
                    ArithOp::Add => a + b,
                    ArithOp::Sub => a - b,
                    ArithOp::Mul => a * b,
                    ArithOp::Div if a % b == 0 => a / b,
                    ArithOp::Div => return Ok(serde_json::json!(a as f64 / b as f64)),
                };
                return match i64::try_from(exact) {
                    Ok(exact) => Ok(Value::from(exact)),
                    Err(_) => refused(Refusal::InvalidQuery, "overflow"),
                };
            }
            Ok(serde_json::json!(match op {
                ArithOp::Add => x + y,
                ArithOp::Sub => x - y,
                ArithOp::Mul => x * y,
                ArithOp::Div => x / y,
            }))
        }
    }
}

fn set_path(doc: &mut Value, field: &str, value: Value) -> Result<(), Refused> {
    let parts: Vec<&str> = field.split('.').collect();
    let mut node = doc;
    for (i, part) in parts.iter().enumerate() {
        let Some(map) = node.as_object_mut() else {
            return refused(Refusal::InvalidQuery, format!("cannot set {field}"));
        };
        if i + 1 == parts.len() {
            map.insert(part.to_string(), value);
            return Ok(());
        }
        node = map.entry(part.to_string()).or_insert_with(|| Value::Object(Default::default()));
    }
    Ok(())
}

fn drop_path(doc: &mut Value, field: &str) {
    let parts: Vec<&str> = field.split('.').collect();
    let (last, head) = parts.split_last().expect("a field has a name");
    let mut node = doc;
    for part in head {
        match node.get_mut(*part) {
            Some(child) if child.is_object() => node = child,
            _ => return,
        }
    }
    if let Some(map) = node.as_object_mut() {
        map.shift_remove(*last);
    }
}
