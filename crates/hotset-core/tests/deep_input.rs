//! Queries nested past the engine's bounds (built in code, as any caller could) are
//! refused by name before anything recurses past them; within the bounds they run.

use hotset_core::limits::{CONDITION_DEPTH_MAX, EXPRESSION_DEPTH_MAX};
use hotset_core::query::{ArithOp, Expr, SetField};
use hotset_core::{Cond, Database, Error, FieldType, IndexDef, IndexKind, Op, Query};
use serde_json::json;

fn database() -> Database {
    let db = Database::new();
    db.create_namespace("t", vec![IndexDef::new("id", IndexKind::Hash, FieldType::Int).pk()]).unwrap();
    for id in 0..5 {
        db.upsert("t", &json!({"id": id, "x": 1})).unwrap();
    }
    db
}

/// `NOT NOT ... id = 0` with `levels` levels in all.
fn nots(levels: usize) -> Cond {
    (1..levels).fold(Cond::new("id", Op::Eq, 0), |cond, _| Cond::Not(Box::new(cond)))
}

fn invalid_query(error: Error, limit: &str) {
    match error {
        Error::InvalidQuery { reason } => assert!(reason.contains(limit), "{reason}"),
        other => panic!("expected InvalidQuery naming {limit}, got {other:?}"),
    }
}

#[test]
fn conditions_nest_up_to_the_bound_and_no_further() {
    let db = database();
    // An even number of NOTs keeps the meaning of `id = 0`.
    let at_bound = db.query(&Query::new("t").filter(nots(CONDITION_DEPTH_MAX))).unwrap();
    assert_eq!(at_bound.items.len(), if CONDITION_DEPTH_MAX % 2 == 1 { 1 } else { 4 });
    invalid_query(db.query(&Query::new("t").filter(nots(CONDITION_DEPTH_MAX + 1))).unwrap_err(), "condition_depth_max");
    // A long flat OR is one level.
    let wide = Cond::Or((0..100_000).map(|i| Cond::new("id", Op::Eq, i)).collect());
    let mut query = Query::new("t").filter(wide);
    query.total = true;
    assert_eq!(db.query(&query).unwrap().total, Some(5));
}

#[test]
fn set_expressions_nest_up_to_the_bound_and_no_further() {
    let db = database();
    let sum = |levels: usize| (1..levels).fold(Expr::field("x"), |expr, _| expr.binary(ArithOp::Add, Expr::value(1)));
    let set = |expr| vec![SetField::Set("x".to_string(), expr)];
    let changed = db.update_query(&Query::new("t"), &set(sum(EXPRESSION_DEPTH_MAX))).unwrap();
    assert_eq!(changed, 5);
    assert_eq!(
        db.get("t", &json!(0)).unwrap().map(|d| serde_json::from_slice::<serde_json::Value>(&d).unwrap()["x"].clone()),
        Some(json!(EXPRESSION_DEPTH_MAX))
    );
    invalid_query(
        db.update_query(&Query::new("t"), &set(sum(EXPRESSION_DEPTH_MAX + 1))).unwrap_err(),
        "expression_depth_max",
    );
}
