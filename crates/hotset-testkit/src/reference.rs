//! The reference model: what a query must answer, computed the slowest, plainest way.
//!
//! Owns: documents as `serde_json::Value`s in a map, and an independent evaluation of
//! filters, sorts, paging, totals and aggregations straight from the documented
//! semantics (see `hotset_core::query` and `hotset_core::doc`). Only collation keys
//! (`Collation::key`, unit-tested on its own) are shared with the engine.
//! Never: use indexes, columns or the engine's planner, executor or predicates.

use hotset_core::query::{Aggregation, Cond, Op, Query};
use hotset_core::{Collation, IndexDef};
use serde_json::Value;
use std::cmp::Ordering;
use std::collections::BTreeMap;

/// A value as the reference compares it.
#[derive(Debug, Clone, PartialEq)]
pub enum RefScalar {
    Bool(bool),
    Number(f64),
    Text(Vec<u8>),
}

impl RefScalar {
    fn rank(&self) -> u8 {
        match self {
            RefScalar::Bool(_) => 1,
            RefScalar::Number(_) => 2,
            RefScalar::Text(_) => 3,
        }
    }

    /// `None` for values of different kinds.
    pub fn compare(&self, other: &RefScalar) -> Option<Ordering> {
        match (self, other) {
            (RefScalar::Bool(a), RefScalar::Bool(b)) => Some(a.cmp(b)),
            (RefScalar::Number(a), RefScalar::Number(b)) => a.partial_cmp(b),
            (RefScalar::Text(a), RefScalar::Text(b)) => Some(a.cmp(b)),
            _ => None,
        }
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

pub fn to_scalar(value: &Value, collation: Collation) -> Option<RefScalar> {
    match value {
        Value::Bool(b) => Some(RefScalar::Bool(*b)),
        Value::Number(n) => n.as_f64().map(RefScalar::Number),
        Value::String(s) => Some(RefScalar::Text(collation.key(s))),
        _ => None,
    }
}

/// Namespaces of the reference model.
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
    Number(Option<f64>),
    /// Groups as (collation keys of the values, count), in the facet's order.
    Facet(Vec<(Vec<Option<RefScalar>>, u64)>),
    Distinct(Vec<RefScalar>),
}

impl RefNamespace {
    pub fn collation(&self, field: &str) -> Collation {
        self.defs
            .iter()
            .find_map(|d| d.fields.iter().position(|f| f == field).map(|at| d.collation_of(at)))
            .unwrap_or(Collation::None)
    }

    fn values(&self, doc: &Value, field: &str) -> Vec<RefScalar> {
        let collation = self.collation(field);
        field_values(doc, field).iter().filter_map(|v| to_scalar(v, collation)).collect()
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
        let numbers = |field: &str| -> Vec<f64> {
            matches.iter().flat_map(|d| field_values(d, field)).filter_map(|v| v.as_f64()).collect()
        };
        match aggregation {
            Aggregation::Count => RefAggregation::Count(matches.len() as u64),
            Aggregation::Sum(f) => {
                let n = numbers(f);
                RefAggregation::Number((!n.is_empty()).then(|| n.iter().sum()))
            }
            Aggregation::Avg(f) => {
                let n = numbers(f);
                RefAggregation::Number((!n.is_empty()).then(|| n.iter().sum::<f64>() / n.len() as f64))
            }
            Aggregation::Min(f) => RefAggregation::Number(numbers(f).into_iter().reduce(f64::min)),
            Aggregation::Max(f) => RefAggregation::Number(numbers(f).into_iter().reduce(f64::max)),
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

fn keys_equal(a: &[Option<RefScalar>], b: &[Option<RefScalar>]) -> bool {
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

/// Why the reference refused a write (the engine must refuse it too).
#[derive(Debug, Clone, PartialEq)]
pub struct Refused(pub String);

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
                return Err(Refused(format!("{field} is an array")));
            }
            let values = field_values(doc, field);
            if let Some(bad) = values.iter().find(|v| !type_fits(v, def.type_of(position))) {
                return Err(Refused(format!("{field} = {bad} does not fit {:?}", def.type_of(position))));
            }
            if def.pk && values.is_empty() {
                return Err(Refused(format!("{field} (primary key) is missing")));
            }
        }
        Ok(())
    }

    fn valid(&self, doc: &Value) -> Result<String, Refused> {
        if !doc.is_object() {
            return Err(Refused("not an object".into()));
        }
        for def in &self.defs {
            RefNamespace::fits(doc, def)?;
        }
        Ok(doc["id"].to_string())
    }

    /// Applies one write as the documented semantics say; `Err` means nothing changed.
    pub fn apply(&mut self, write: &crate::generate::Write) -> Result<(), Refused> {
        use crate::generate::Write;
        match write {
            Write::Insert(doc) | Write::Upsert(doc) | Write::Update(doc) => {
                let key = self.valid(doc)?;
                let exists = self.docs.contains_key(&key);
                match write {
                    Write::Insert(_) if exists => return Err(Refused("duplicate key".into())),
                    Write::Update(_) if !exists => return Err(Refused("not found".into())),
                    _ => {}
                }
                self.docs.insert(key, doc.clone());
                Ok(())
            }
            Write::Delete(id) => {
                self.docs.remove(&id.to_string());
                Ok(())
            }
            Write::DeleteQuery(cond) => {
                let keys: Vec<String> =
                    self.docs.iter().filter(|(_, d)| self.matches(d, cond)).map(|(k, _)| k.clone()).collect();
                for key in keys {
                    self.docs.remove(&key);
                }
                Ok(())
            }
            Write::UpdateQuery(cond, sets) => self.update_query(cond.as_ref(), sets),
            Write::AddIndex(def) => {
                if self.defs.iter().any(|d| d.name == def.name) {
                    return Err(Refused("index exists".into()));
                }
                for doc in self.docs.values() {
                    RefNamespace::fits(doc, def)?;
                }
                self.defs.push(def.clone());
                Ok(())
            }
            Write::DropIndex(name) => match self.defs.iter().position(|d| d.name == *name) {
                Some(at) if !self.defs[at].pk => {
                    self.defs.remove(at);
                    Ok(())
                }
                _ => Err(Refused("no such index".into())),
            },
        }
    }

    fn update_query(&mut self, cond: Option<&Cond>, sets: &[hotset_core::query::SetField]) -> Result<(), Refused> {
        use hotset_core::query::SetField;
        let mut updated = Vec::new();
        for (key, doc) in &self.docs {
            if !cond.is_none_or(|c| self.matches(doc, c)) {
                continue;
            }
            let mut new = doc.clone();
            for set in sets {
                match set {
                    SetField::Set(field, expr) => set_path(&mut new, field, evaluate(expr, doc)?)?,
                    SetField::Drop(field) => drop_path(&mut new, field),
                }
            }
            self.valid(&new)?;
            updated.push((key.clone(), new));
        }
        self.docs.extend(updated);
        Ok(())
    }
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
                return Err(Refused("arithmetic on a non-number".into()));
            };
            if *op == ArithOp::Div && y == 0.0 {
                return Err(Refused("division by zero".into()));
            }
            if let (Some(a), Some(b)) = (l.as_i64(), r.as_i64()) {
                let exact = match op {
                    ArithOp::Add => a.checked_add(b),
                    ArithOp::Sub => a.checked_sub(b),
                    ArithOp::Mul => a.checked_mul(b),
                    ArithOp::Div if a % b == 0 => Some(a / b),
                    ArithOp::Div => return Ok(serde_json::json!(a as f64 / b as f64)),
                };
                return exact.map(Value::from).ok_or(Refused("overflow".into()));
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
            return Err(Refused(format!("cannot set {field}")));
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
