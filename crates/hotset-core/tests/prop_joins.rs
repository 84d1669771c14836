//! Joins against a naive nested-loop reference: random documents on both sides (missing
//! fields, arrays, mixed int/double), random ON conditions, joined-query filters, sorts
//! and limits, with the right field indexed by hash, by tree, or not at all (which
//! exercises the index lookup, the per-query hash table and the scan).

use hotset_core::query::{Cond, JoinKind, Op, Query};
use hotset_core::{Database, FieldType, IndexDef, IndexKind};
use hotset_testkit::reference::{field_values, to_scalar};
use proptest::prelude::*;
use serde_json::{Value, json};
use std::cmp::Ordering;

fn value() -> impl Strategy<Value = Option<Value>> {
    prop_oneof![
        1 => Just(None),
        4 => (0i64..5).prop_map(|i| Some(json!(i))),
        1 => Just(Some(json!(2.0))),
        1 => proptest::collection::vec(0i64..5, 0..3).prop_map(|v| Some(json!(v))),
    ]
}

fn document(key: &'static str, id: i64, k: Option<Value>, extra: i64) -> Value {
    let mut doc = json!({ key: id, "n": extra });
    if let Some(k) = k {
        doc["k"] = k;
    }
    doc
}

fn holds(left: &Value, right: &Value, left_field: &str, op: Op, right_field: &str) -> bool {
    let (ls, rs) = (field_values(left, left_field), field_values(right, right_field));
    let collation = hotset_core::Collation::None;
    ls.iter().filter_map(|l| to_scalar(l, collation)).any(|l| {
        rs.iter().filter_map(|r| to_scalar(r, collation)).any(|r| {
            l.compare(&r).is_some_and(|o| match op {
                Op::Eq => o == Ordering::Equal,
                Op::Ne => o != Ordering::Equal,
                Op::Lt => o == Ordering::Less,
                Op::Gt => o == Ordering::Greater,
                _ => unreachable!("generated ops only"),
            })
        })
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn joins_agree_with_nested_loops(
        lefts in proptest::collection::vec((value(), 0i64..4), 0..25),
        rights in proptest::collection::vec((value(), 0i64..4), 0..25),
        right_index in 0u8..3,
        inner in any::<bool>(),
        ops in proptest::collection::vec(proptest::sample::select(&[Op::Eq, Op::Ne, Op::Lt, Op::Gt][..]), 1..3),
        min_n in proptest::option::of(0i64..4),
        desc in any::<bool>(),
        limit in proptest::option::of(0usize..3),
    ) {
        let db = Database::new();
        db.create_namespace("l", vec![IndexDef::hash("id", FieldType::Int).pk()]).unwrap();
        let mut right_defs = vec![IndexDef::hash("rid", FieldType::Int).pk()];
        match right_index {
            0 => right_defs.push(IndexDef::new("k", IndexKind::Hash, FieldType::Double).array()),
            1 => right_defs.push(IndexDef::new("k", IndexKind::Tree, FieldType::Double).array()),
            _ => {}
        }
        db.create_namespace("r", right_defs).unwrap();
        let lefts: Vec<Value> = lefts.into_iter().enumerate().map(|(i, (k, n))| document("id", i as i64, k, n)).collect();
        let rights: Vec<Value> = rights.into_iter().enumerate().map(|(i, (k, n))| document("rid", i as i64, k, n)).collect();
        for doc in &lefts { db.insert("l", doc).unwrap(); }
        for doc in &rights { db.insert("r", doc).unwrap(); }

        // ON: the first condition on k, a second (if any) between the left's n and right's n.
        let on: Vec<(&str, Op, &str)> = ops.iter().enumerate().map(|(i, op)| if i == 0 { ("k", *op, "k") } else { ("n", *op, "n") }).collect();
        let mut joined = Query::new("r").sort("n", desc).sort("rid", false);
        if let Some(min) = min_n { joined = joined.filter(Cond::new("n", Op::Ge, min)); }
        if let Some(limit) = limit { joined = joined.limit(limit); }
        let kind = if inner { JoinKind::Inner } else { JoinKind::Left };
        let query = Query::new("l").sort("id", false).join(kind, joined, &on, "j").with_total();
        let result = db.query(&query).unwrap();

        let mut expected = Vec::new();
        for left in &lefts {
            let mut matched: Vec<&Value> = rights.iter()
                .filter(|r| on.iter().all(|(lf, op, rf)| holds(left, r, lf, *op, rf)))
                .filter(|r| min_n.is_none_or(|m| r["n"].as_i64().unwrap() >= m))
                .collect();
            matched.sort_by(|a, b| {
                let by_n = a["n"].as_i64().cmp(&b["n"].as_i64());
                (if desc { by_n.reverse() } else { by_n }).then(a["rid"].as_i64().cmp(&b["rid"].as_i64()))
            });
            matched.truncate(limit.unwrap_or(usize::MAX));
            if inner && matched.is_empty() { continue; }
            let ids: Vec<i64> = matched.iter().map(|r| r["rid"].as_i64().unwrap()).collect();
            expected.push((left["id"].as_i64().unwrap(), ids));
        }
        let got: Vec<(i64, Vec<i64>)> = result.values().iter().map(|doc| {
            let ids = doc["j"].as_array().unwrap().iter().map(|r| r["rid"].as_i64().unwrap()).collect();
            (doc["id"].as_i64().unwrap(), ids)
        }).collect();
        prop_assert_eq!(result.total, Some(expected.len()));
        prop_assert_eq!(got, expected);
    }
}
