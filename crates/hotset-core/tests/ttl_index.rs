//! TTL indexes: documents whose time field is old enough are deleted by
//! `Database::expire_documents`, in bounded steps; the definition's JSON form round-trips
//! and its mistakes are refused by name.

use hotset_core::query::{Op, Query};
use hotset_core::{Database, FieldType, IndexDef};
use serde_json::json;

fn ids(db: &Database) -> Vec<i64> {
    let query = Query::new("sessions").where_("id", Op::Gt, 0);
    let mut ids: Vec<i64> = db.query(&query).unwrap().values().iter().map(|v| v["id"].as_i64().unwrap()).collect();
    ids.sort_unstable();
    ids
}

fn sessions(created: &[(i64, Option<i64>)]) -> Database {
    let db = Database::new();
    let ttl = IndexDef::tree("created", FieldType::Int).expire_after(100).sparse();
    db.create_namespace("sessions", vec![IndexDef::hash("id", FieldType::Int).pk(), ttl]).unwrap();
    for (id, at) in created {
        let doc = match at {
            Some(at) => json!({"id": id, "created": at}),
            None => json!({"id": id}),
        };
        db.insert("sessions", &doc).unwrap();
    }
    db
}

#[test]
fn documents_go_once_their_time_plus_expire_after_has_passed() {
    let db = sessions(&[(1, Some(1_000)), (2, Some(1_050)), (3, Some(2_000)), (4, None)]);
    assert_eq!(db.expire_documents(1_099, 100).unwrap(), 0, "1000 + 100 is not yet due at 1099");
    assert_eq!(ids(&db), [1, 2, 3, 4]);
    assert_eq!(db.expire_documents(1_100, 100).unwrap(), 1);
    assert_eq!(ids(&db), [2, 3, 4]);
    assert_eq!(db.expire_documents(1_500, 100).unwrap(), 1);
    assert_eq!(ids(&db), [3, 4], "a document without the field never expires");
    assert_eq!(db.expire_documents(u64::MAX, 100).unwrap(), 1);
    assert_eq!(ids(&db), [4]);
}

#[test]
fn each_call_deletes_at_most_its_limit() {
    let due: Vec<(i64, Option<i64>)> = (1..=5).map(|id| (id, Some(10))).chain([(6, Some(10_000))]).collect();
    let db = sessions(&due);
    assert_eq!(db.expire_documents(1_000, 2).unwrap(), 2);
    assert_eq!(db.expire_documents(1_000, 2).unwrap(), 2);
    assert_eq!(db.expire_documents(1_000, 2).unwrap(), 1);
    assert_eq!(db.expire_documents(1_000, 2).unwrap(), 0);
    assert_eq!(ids(&db), [6]);
}

#[test]
fn the_json_form_round_trips_and_mistakes_are_named() {
    let def =
        IndexDef::from_json(&json!({"field": "created", "type": "int", "index": "ttl", "expire_after": 60})).unwrap();
    assert_eq!(def.expire_after, Some(60));
    assert_eq!(def.to_json()["index"], "ttl");
    assert_eq!(def.to_json()["expire_after"], 60);
    assert_eq!(IndexDef::from_json(&def.to_json()).unwrap(), def);
    for (bad, says) in [
        (json!({"field": "created", "type": "int", "index": "ttl"}), "needs \"expire_after\""),
        (json!({"field": "created", "type": "int", "index": "tree", "expire_after": 5}), "ttl index only"),
        (json!({"field": "created", "type": "int", "index": "ttl", "expire_after": -1}), "whole number"),
        (json!({"field": "created", "type": "int", "index": "ttl", "expire_after": "5"}), "whole number"),
        (json!({"field": "created", "type": "string", "index": "ttl", "expire_after": 5}), "one int field"),
        (json!({"field": ["a", "b"], "type": "int", "index": "ttl", "expire_after": 5}), "one int field"),
        (json!({"field": "a", "fields": "b", "type": "int"}), "not both"),
    ] {
        let error = IndexDef::from_json(&bad).unwrap_err().to_string();
        assert!(error.contains(says), "{bad}: {error}");
    }
}

#[test]
fn a_ttl_index_answers_range_queries_like_a_tree() {
    let db = sessions(&[(1, Some(5)), (2, Some(50)), (3, Some(500))]);
    let query = Query::new("sessions").where_("created", Op::Ge, 50);
    assert_eq!(db.query(&query).unwrap().values().len(), 2);
}
