//! Bad input of every kind gets a typed error naming what was wrong, never a panic, and
//! leaves everything already stored exactly as it was.

use hotset_core::query::{Aggregation, Cond, Expr, Facet, JoinKind, Op, Query, SetField, SortKey};
use hotset_core::{Database, Error, FieldType, IndexDef, IndexKind, Limits};
use serde_json::{Value, json};

/// On a clock that stands still: a query's time limit passes only when it is zero.
fn db() -> Database {
    let clock = std::sync::Arc::new(hotset_core::clock::ManualClock::new(1_700_000_000_000));
    let db = Database::with_clock(clock, Limits { document_bytes_max: 1024, ..Limits::default() });
    db.create_namespace(
        "items",
        vec![
            IndexDef::hash("id", FieldType::Int).pk(),
            IndexDef::tree("year", FieldType::Int),
            IndexDef::hash("name", FieldType::String),
            IndexDef::tree("tags", FieldType::Int).array(),
            IndexDef::hash("ok", FieldType::Bool),
        ],
    )
    .unwrap();
    for id in 0..5 {
        db.insert("items", &json!({"id": id, "year": 2000 + id, "name": format!("n{id}"), "tags": [id], "ok": true}))
            .unwrap();
    }
    db
}

fn snapshot(db: &Database) -> Vec<Value> {
    let mut docs = db.query(&Query::new("items").sort("id", false)).unwrap().values();
    docs.push(json!(db.describe("items").unwrap().indexes.len()));
    docs
}

/// Runs `f`, checks its error with `check`, and checks nothing changed.
fn refused(db: &Database, f: impl FnOnce(&Database) -> Result<(), Error>, check: impl FnOnce(&Error) -> bool) {
    let before = snapshot(db);
    let error = f(db).expect_err("bad input must be refused");
    assert!(check(&error), "unexpected error: {error:?}");
    assert!(!error.to_string().is_empty());
    assert_eq!(snapshot(db), before, "a refused call changed data ({error})");
}

#[test]
fn invalid_json_and_non_objects() {
    let db = db();
    for text in
        [&b"{\"id\": 9,"[..], b"", b"nul", b"{\"id\": 1e999}", b"\xff\xfe", b"[1,2]", b"\"text\"", b"{\"id\": 9}}"]
    {
        refused(
            &db,
            |db| db.upsert_json("items", text),
            |e| matches!(e, Error::InvalidJson { .. } | Error::NotAnObject { .. }),
        );
    }
    refused(&db, |db| db.upsert("items", &json!([1])), |e| matches!(e, Error::NotAnObject { found: "array" }));
    // Nesting deeper than the parser allows is refused for documents built in code too,
    // and for values set by update-by-query.
    let mut deep = json!(1);
    for _ in 0..200 {
        deep = json!([deep]);
    }
    refused(
        &db,
        |db| db.upsert("items", &json!({"id": 9, "deep": deep.clone()})),
        |e| matches!(e, Error::InvalidJson { .. }),
    );
    let sets = [hotset_core::query::SetField::Set("deep".into(), hotset_core::query::Expr::Value(deep))];
    refused(
        &db,
        |db| db.update_query(&Query::new("items"), &sets).map(|_| ()),
        |e| matches!(e, Error::InvalidJson { .. }),
    );
    let text = format!("{{\"id\": 9, \"deep\": {}1{}}}", "[".repeat(300), "]".repeat(300));
    refused(&db, |db| db.upsert_json("items", text.as_bytes()), |e| matches!(e, Error::InvalidJson { .. }));
}

#[test]
fn keys_missing_duplicate_or_wrong() {
    let db = db();
    refused(
        &db,
        |db| db.insert("items", &json!({"year": 2001})),
        |e| matches!(e, Error::MissingKey { field, .. } if field == "id"),
    );
    refused(&db, |db| db.insert("items", &json!({"id": null})), |e| matches!(e, Error::MissingKey { .. }));
    refused(
        &db,
        |db| db.insert("items", &json!({"id": 3})),
        |e| matches!(e, Error::DuplicateKey { key, .. } if key == "3"),
    );
    refused(&db, |db| db.update("items", &json!({"id": 77})), |e| matches!(e, Error::NotFound { .. }));
    refused(
        &db,
        |db| db.insert("items", &json!({"id": "7"})),
        |e| matches!(e, Error::WrongType { field, .. } if field == "id"),
    );
    refused(&db, |db| db.get("items", &json!("x")).map(|_| ()), |e| matches!(e, Error::WrongType { .. }));
    refused(&db, |db| db.delete("items", &json!([1, 2])).map(|_| ()), |e| matches!(e, Error::WrongType { .. }));
    assert!(!db.delete("items", &json!(99)).unwrap());
}

#[test]
fn wrong_types_for_typed_indexes() {
    let db = db();
    let cases = [
        json!({"id": 10, "year": "2001"}),
        json!({"id": 10, "year": 2001.5}),
        json!({"id": 10, "year": 18446744073709551615u64}),
        json!({"id": 10, "year": [2001]}),
        json!({"id": 10, "name": 5}),
        json!({"id": 10, "tags": ["a"]}),
        json!({"id": 10, "tags": [{"x": 1}]}),
        json!({"id": 10, "ok": "yes"}),
        json!({"id": 10, "year": {"a": 1}}),
    ];
    for doc in cases {
        refused(&db, |db| db.upsert("items", &doc), |e| matches!(e, Error::WrongType { .. }));
    }
    // A scalar is accepted by an array index as a one-element array; null is empty.
    db.upsert("items", &json!({"id": 10, "tags": 4, "year": null})).unwrap();
    assert_eq!(db.query(&Query::new("items").where_("tags", Op::Eq, 4).with_total()).unwrap().total, Some(2));
}

#[test]
fn unknown_namespaces_and_indexes() {
    let db = db();
    let unknown = |e: &Error| matches!(e, Error::UnknownNamespace { namespace } if namespace == "nope");
    refused(&db, |db| db.upsert("nope", &json!({"id": 1})), unknown);
    refused(&db, |db| db.query(&Query::new("nope")).map(|_| ()), unknown);
    refused(&db, |db| db.describe("nope").map(|_| ()), unknown);
    refused(&db, |db| db.drop_namespace("nope"), unknown);
    refused(&db, |db| db.transaction("nope").map(|_| ()), unknown);
    let join = Query::new("items").join(JoinKind::Inner, Query::new("nope"), &[("id", Op::Eq, "id")], "x");
    refused(&db, |db| db.query(&join).map(|_| ()), unknown);
    refused(
        &db,
        |db| db.drop_index("items", "nope"),
        |e| matches!(e, Error::UnknownIndex { index, .. } if index == "nope"),
    );
    refused(&db, |db| db.drop_index("items", "id"), |e| matches!(e, Error::InvalidIndex { .. }));
    refused(
        &db,
        |db| db.add_index("items", IndexDef::tree("year", FieldType::Int)),
        |e| matches!(e, Error::IndexExists { .. }),
    );
    // Building an index over documents that do not fit it is refused as a whole.
    refused(
        &db,
        |db| db.add_index("items", IndexDef::tree("name", FieldType::Int).named("name_int")),
        |e| matches!(e, Error::WrongType { .. }),
    );
    refused(
        &db,
        |db| db.create_namespace("items", vec![IndexDef::hash("id", FieldType::Int).pk()]),
        |e| matches!(e, Error::NamespaceExists { .. }),
    );
    refused(
        &db,
        |db| db.create_namespace("x", vec![IndexDef::hash("id", FieldType::Int)]),
        |e| matches!(e, Error::NoPrimaryKey { .. }),
    );
    refused(
        &db,
        |db| db.create_namespace("bad name!", vec![IndexDef::hash("id", FieldType::Int).pk()]),
        |e| matches!(e, Error::InvalidName { .. }),
    );
    let bad_defs = [
        IndexDef::hash("id", FieldType::Int).pk().array(),
        IndexDef::new("id", IndexKind::Store, FieldType::Int).pk(),
        IndexDef::hash("a..b", FieldType::Int).pk(),
        IndexDef::hash("id", FieldType::Int).pk().collate(hotset_core::Collation::Utf8Ci),
    ];
    for def in bad_defs {
        refused(&db, |db| db.create_namespace("x", vec![def]), |e| matches!(e, Error::InvalidIndex { .. }));
    }
    assert_eq!(db.namespace_names(), vec!["items".to_string()]);
}

#[test]
fn malformed_queries_and_patterns() {
    let db = db();
    let run = |q: Query| move |db: &Database| db.query(&q).map(|_| ());
    refused(&db, run(Query::new("items").where_("name", Op::Like, "ab\\")), |e| {
        matches!(e, Error::InvalidPattern { .. })
    });
    refused(&db, run(Query::new("items").where_("name", Op::Like, 5)), |e| matches!(e, Error::InvalidQuery { .. }));
    refused(&db, run(Query::new("items").where_("year", Op::Eq, Value::Null)), |e| {
        matches!(e, Error::InvalidQuery { .. })
    });
    refused(&db, run(Query::new("items").where_("year", Op::Eq, json!({"a": 1}))), |e| {
        matches!(e, Error::InvalidQuery { .. })
    });
    refused(
        &db,
        run(Query::new("items").filter(Cond::Field { field: "year".into(), op: Op::Range, values: vec![json!(1)] })),
        |e| matches!(e, Error::InvalidQuery { .. }),
    );
    refused(&db, run(Query::new("items").where_("", Op::Eq, 1)), |e| matches!(e, Error::InvalidQuery { .. }));
    let facet = Facet {
        fields: vec!["year".into()],
        sort: vec![SortKey { field: "nope".into(), desc: false }],
        offset: 0,
        limit: None,
    };
    refused(&db, run(Query::new("items").aggregate(Aggregation::Facet(facet))), |e| {
        matches!(e, Error::InvalidQuery { .. })
    });
    let long_pattern = "%".repeat(5000);
    refused(&db, run(Query::new("items").where_("name", Op::Like, long_pattern)), |e| {
        matches!(e, Error::InvalidPattern { .. })
    });
    // Fields no document has are valid in a schema-less namespace: they match nothing.
    assert_eq!(db.query(&Query::new("items").where_("nope", Op::Eq, 1).with_total()).unwrap().total, Some(0));
    assert_eq!(
        db.query(&Query::new("items").where_("nope", Op::Empty, Value::Null).with_total()).unwrap().total,
        Some(5)
    );
}

#[test]
fn oversize_documents_and_failed_transactions() {
    let db = db();
    let big = json!({"id": 50, "blob": "x".repeat(2000)});
    refused(
        &db,
        |db| db.upsert("items", &big),
        |e| matches!(e, Error::LimitExceeded { what: "document_bytes_max", .. }),
    );
    refused(
        &db,
        |db| db.upsert_json("items", big.to_string().as_bytes()),
        |e| matches!(e, Error::LimitExceeded { .. }),
    );
    // A transaction failing half-way leaves nothing of its earlier operations.
    refused(
        &db,
        |db| {
            let mut tx = db.transaction("items")?;
            tx.insert(json!({"id": 20}))?;
            tx.upsert(json!({"id": 1, "year": 1999}))?;
            tx.delete(json!(2))?;
            tx.insert(json!({"id": 3}))?;
            tx.commit().map(|_| ())
        },
        |e| matches!(e, Error::DuplicateKey { .. }),
    );
    // Documents given as JSON text: bad text or an oversize one fails the whole commit.
    for bad in [b"{oops".to_vec(), b"[1, 2]".to_vec(), big.to_string().into_bytes()] {
        refused(
            &db,
            |db| {
                let mut tx = db.transaction("items")?;
                tx.upsert_json(br#"{"id": 21, "year": 2021}"#.to_vec())?;
                tx.insert_json(bad)?;
                tx.commit().map(|_| ())
            },
            |e| matches!(e, Error::InvalidJson { .. } | Error::NotAnObject { .. } | Error::LimitExceeded { .. }),
        );
    }
    let mut tx = db.transaction("items").unwrap();
    tx.insert_json(br#"{"id": 22, "year": 2022, "name": "json"}"#.to_vec()).unwrap();
    tx.update_json(br#"{"id": 22, "year": 2023, "name": "json"}"#.to_vec()).unwrap();
    tx.upsert_json(br#"{"id": 23, "year": 2022}"#.to_vec()).unwrap();
    assert_eq!(tx.commit().unwrap(), 3);
    assert_eq!(db.query(&Query::new("items").where_("name", Op::Eq, "json")).unwrap().values()[0]["year"], 2023);
    db.delete("items", &json!(22)).unwrap();
    db.delete("items", &json!(23)).unwrap();
    // An update by query that fails for one document changes none.
    use hotset_core::query::{ArithOp, Expr, SetField};
    db.upsert("items", &json!({"id": 4, "year": 2004, "name": "n4", "score": "high"})).unwrap();
    let sets = [SetField::Set("score".into(), Expr::field("score").binary(ArithOp::Add, Expr::value(1)))];
    refused(
        &db,
        |db| db.update_query(&Query::new("items"), &sets).map(|_| ()),
        |e| matches!(e, Error::InvalidQuery { .. }),
    );
    let sets = [SetField::Set("id".into(), Expr::value(100))];
    refused(
        &db,
        |db| db.update_query(&Query::new("items"), &sets).map(|_| ()),
        |e| matches!(e, Error::PrimaryKeyUpdate { .. }),
    );
    let sets = [SetField::Set("year".into(), Expr::field("year").binary(ArithOp::Div, Expr::value(0)))];
    refused(
        &db,
        |db| db.update_query(&Query::new("items"), &sets).map(|_| ()),
        |e| matches!(e, Error::InvalidQuery { .. }),
    );
}

#[test]
fn named_limits_are_enforced() {
    let limits = Limits {
        namespaces_max: 2,
        indexes_max: 2,
        transaction_operations_max: 3,
        name_bytes_max: 8,
        ..Limits::default()
    };
    let db = Database::with_limits(limits);
    let pk = || IndexDef::hash("id", FieldType::Int).pk();
    db.create_namespace("a", vec![pk()]).unwrap();
    db.create_namespace("b", vec![pk(), IndexDef::tree("x", FieldType::Int)]).unwrap();
    let over = |what: &'static str| move |e: &Error| matches!(e, Error::LimitExceeded { what: w, .. } if *w == what);
    let err = db.create_namespace("c", vec![pk()]).unwrap_err();
    assert!(over("namespaces_max")(&err), "{err:?}");
    let err = db.add_index("b", IndexDef::tree("y", FieldType::Int)).unwrap_err();
    assert!(over("indexes_max")(&err), "{err:?}");
    let err =
        db.create_namespace("c", vec![pk(), IndexDef::tree("y", FieldType::Int), IndexDef::tree("z", FieldType::Int)]);
    assert!(matches!(err, Err(Error::LimitExceeded { what: "indexes_max", .. })), "{err:?}");
    let err = db.add_index("a", IndexDef::tree("name_far_too_long", FieldType::Int)).unwrap_err();
    assert!(matches!(err, Error::InvalidName { .. }), "{err:?}");
    let mut tx = db.transaction("a").unwrap();
    for id in 0..3 {
        tx.insert(json!({"id": id})).unwrap();
    }
    let err = tx.insert(json!({"id": 3})).unwrap_err();
    assert!(over("transaction_operations_max")(&err), "{err:?}");
    assert_eq!(tx.commit().unwrap(), 3, "operations within the limit still commit");
    assert_eq!(db.describe("a").unwrap().documents, 3);
    assert_eq!(db.describe("b").unwrap().indexes.len(), 2);
}

#[test]
fn malformed_joins_and_writes_by_query() {
    let db = db();
    db.create_namespace("other", vec![IndexDef::hash("id", FieldType::Int).pk()]).unwrap();
    let run = |q: Query| move |db: &Database| db.query(&q).map(|_| ());
    let invalid = |e: &Error| matches!(e, Error::InvalidQuery { .. });
    refused(&db, run(Query::new("items").join(JoinKind::Inner, Query::new("other"), &[], "o")), invalid);
    refused(
        &db,
        run(Query::new("items").join(JoinKind::Left, Query::new("other"), &[("name", Op::Like, "id")], "o")),
        invalid,
    );
    let nested = Query::new("other").join(JoinKind::Left, Query::new("items"), &[("id", Op::Eq, "id")], "deep");
    refused(&db, run(Query::new("items").join(JoinKind::Left, nested, &[("id", Op::Eq, "id")], "o")), invalid);
    let with_join = Query::new("items").join(JoinKind::Inner, Query::new("other"), &[("id", Op::Eq, "id")], "o");
    let (for_update, for_delete) = (with_join.clone(), with_join);
    refused(&db, move |db| db.delete_query(&for_delete).map(|_| ()), invalid);
    let sets = [hotset_core::query::SetField::Drop("name".into())];
    refused(&db, move |db| db.update_query(&for_update, &sets).map(|_| ()), invalid);
    let sets = [hotset_core::query::SetField::Set("a..b".into(), hotset_core::query::Expr::value(1))];
    refused(&db, |db| db.update_query(&Query::new("items"), &sets).map(|_| ()), invalid);
    let sets = [hotset_core::query::SetField::Set("name.x".into(), hotset_core::query::Expr::value(1))];
    refused(&db, |db| db.update_query(&Query::new("items"), &sets).map(|_| ()), invalid);
}

#[test]
fn queries_past_their_time_limit_fail_whole_in_every_kind_of_run() {
    use std::time::Duration;
    let db = db();
    let limited = |query: Query| Query { timeout: Some(Duration::ZERO), ..query };
    // Every way rows are visited: a residual filter, a walk of the sort index, a sort of
    // the matches, a count of every match, and an update by query (which must change
    // nothing when it times out).
    let queries = [
        Query::new("items").filter(Cond::new("name", Op::Like, "n%")),
        Query::new("items").filter(Cond::new("ok", Op::Eq, true)).sort("year", true).limit(2),
        Query::new("items").filter(Cond::new("name", Op::Like, "n%")).sort("name", false),
        Query::new("items").filter(Cond::new("name", Op::Like, "n%")).with_total().limit(1),
    ];
    for query in queries {
        assert!(db.query(&query).is_ok(), "{query:?} runs without a limit");
        refused(&db, |db| db.query(&limited(query.clone())).map(drop), |e| *e == Error::Timeout { limit_ms: 0 });
    }
    let update = limited(Query::new("items").filter(Cond::new("name", Op::Like, "n%")));
    refused(
        &db,
        |db| db.update_query(&update, &[SetField::Set("year".into(), Expr::Value(json!(1)))]).map(drop),
        |e| *e == Error::Timeout { limit_ms: 0 },
    );
    // A limit that does not pass (the clock stands still) changes nothing about the answer.
    let query = Query::new("items").filter(Cond::new("name", Op::Like, "n%")).sort("year", true).with_total();
    let roomy = Query { timeout: Some(Duration::from_millis(1)), ..query.clone() };
    assert_eq!(db.query(&roomy).unwrap().values(), db.query(&query).unwrap().values());
}
