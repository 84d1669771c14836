//! `Engine::apply` on every request: what it answers, what it refuses with which code,
//! and the place of a refused operation; `Engine::apply_into`, which collects a write's
//! acknowledgement where `apply` waits for it.

use crate::{Answer, Doc, Engine, Op, Refusal, Request, Settings, WriteMode};
use hotset_core::error::ErrorCode;
use hotset_core::{Database, IndexDef};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

fn engine() -> Engine {
    let engine = Engine::in_memory(Arc::new(Database::new()), Settings::default()).expect("starts");
    let pk = IndexDef::from_json(&json!({"field": "id", "type": "int", "index": "hash", "pk": true})).unwrap();
    engine.apply(Request::CreateNamespace { name: "t".into(), indexes: vec![pk] }).unwrap();
    engine
}

fn write(mode: WriteMode, doc: Value) -> Op {
    Op::Write(mode, Doc::Value(doc))
}

fn refused(engine: &Engine, request: Request) -> Refusal {
    engine.apply(request).expect_err("refused")
}

#[test]
fn writes_apply_all_or_nothing_and_name_the_refused_operation() {
    let e = engine();
    let ops = vec![
        write(WriteMode::Insert, json!({"id": 1})),
        Op::Write(WriteMode::Upsert, Doc::Json(br#"{"id": 2}"#.to_vec())),
        Op::Delete(json!(9)),
    ];
    assert!(matches!(e.apply(Request::Write { namespace: "t".into(), ops }).unwrap(), Answer::Count(_)));
    let ops = vec![write(WriteMode::Upsert, json!({"id": 3})), write(WriteMode::Insert, json!({"id": 1}))];
    let refusal = refused(&e, Request::Write { namespace: "t".into(), ops });
    assert_eq!((refusal.code(), refusal.at), (ErrorCode::AlreadyExists, Some(1)));
    let get = |id| match e.apply(Request::Get { namespace: "t".into(), key: json!(id) }).unwrap() {
        Answer::Document(doc) => doc.is_some(),
        other => panic!("{other:?}"),
    };
    assert!(get(1) && get(2) && !get(3), "the refused write left nothing");
    // One document takes the engine's single write; its refusal is still placed.
    let refusal =
        refused(&e, Request::Write { namespace: "t".into(), ops: vec![write(WriteMode::Update, json!({"id": 7}))] });
    assert_eq!((refusal.code(), refusal.at), (ErrorCode::NotFound, Some(0)));
    let refusal = refused(&e, Request::Write { namespace: "nope".into(), ops: vec![] });
    assert_eq!((refusal.code(), refusal.at), (ErrorCode::NotFound, None));
    assert!(matches!(
        e.apply(Request::Delete { namespace: "t".into(), key: json!(2) }).unwrap(),
        Answer::Deleted(true)
    ));
    assert!(matches!(
        e.apply(Request::Delete { namespace: "t".into(), key: json!(2) }).unwrap(),
        Answer::Deleted(false)
    ));
}

#[test]
fn namespaces_indexes_and_reads() {
    let e = engine();
    assert!(matches!(e.apply(Request::Namespaces).unwrap(), Answer::Names(names) if names == ["t"]));
    let index = IndexDef::from_json(&json!({"field": "year", "type": "int", "index": "tree"})).unwrap();
    e.apply(Request::AddIndex { namespace: "t".into(), index: index.clone() }).unwrap();
    let refusal = refused(&e, Request::AddIndex { namespace: "t".into(), index });
    assert_eq!(refusal.code(), ErrorCode::AlreadyExists);
    let ops = (0..5).map(|i| write(WriteMode::Upsert, json!({"id": i, "year": 2000 + i}))).collect();
    e.apply(Request::Write { namespace: "t".into(), ops }).unwrap();
    match e.apply(Request::Describe { name: "t".into() }).unwrap() {
        Answer::Namespace(info) => assert_eq!((info.documents, info.indexes.len()), (5, 2)),
        other => panic!("{other:?}"),
    }
    let query = hotset_core::query::dsl::query_from_json(
        &json!({"namespace": "t", "filter": [{"field": "year", "op": ">=", "value": 2003}]}),
        None,
    )
    .unwrap();
    match e.apply(Request::Query(query)).unwrap() {
        Answer::Query(result) => assert_eq!(result.items.len(), 2),
        other => panic!("{other:?}"),
    }
    match e.apply(Request::Scan { namespace: "t".into(), cursor: 0, count: 3 }).unwrap() {
        Answer::Scan { next, documents } => assert!(next > 0 && documents.len() == 3),
        other => panic!("{other:?}"),
    }
    e.apply(Request::DropIndex { namespace: "t".into(), index: "year".into() }).unwrap();
    e.apply(Request::Truncate { name: "t".into() }).unwrap();
    e.apply(Request::DropNamespace { name: "t".into() }).unwrap();
    assert_eq!(refused(&e, Request::Describe { name: "t".into() }).code(), ErrorCode::NotFound);
}

#[test]
fn sql_answers_a_whole_document_select_as_a_query_and_the_rest_as_json() {
    let e = engine();
    let inserted = e.apply(Request::Sql("INSERT INTO t (id, name) VALUES (1, 'a'), (2, 'b')".into())).unwrap();
    assert!(matches!(inserted, Answer::Json(text) if serde_json::from_slice::<Value>(&text).unwrap()["affected"] == 2));
    assert!(matches!(e.apply(Request::Sql("SELECT * FROM t".into())).unwrap(), Answer::Query(r) if r.items.len() == 2));
    assert!(matches!(e.apply(Request::Sql("SELECT name FROM t WHERE id = 2".into())).unwrap(), Answer::Json(_)));
    let duplicate = refused(&e, Request::Sql("INSERT INTO t (id) VALUES (1)".into()));
    assert_eq!(duplicate.code(), ErrorCode::AlreadyExists);
    let bad = refused(&e, Request::Sql("SELEKT".into()));
    assert_eq!(bad.code(), ErrorCode::BadQuery);
    assert_eq!(bad.to_json()["kind"], "Sql");
}

#[test]
fn the_server_time_limit_caps_a_query_that_asks_for_more() {
    let db = Arc::new(Database::new());
    let e = Engine::in_memory(db, Settings { query_timeout: Some(Duration::from_millis(5)) }).unwrap();
    let mut query = hotset_core::Query::new("t");
    e.limit_query(&mut query);
    assert_eq!(query.timeout, Some(Duration::from_millis(5)));
    query.timeout = Some(Duration::from_millis(2));
    e.limit_query(&mut query);
    assert_eq!(query.timeout, Some(Duration::from_millis(2)), "a shorter limit of its own stays");
    query.timeout = Some(Duration::from_millis(500));
    e.limit_query(&mut query);
    assert_eq!(query.timeout, Some(Duration::from_millis(5)), "a longer one is cut to the server's");
    let unlimited = Engine::in_memory(Arc::new(Database::new()), Settings::default()).unwrap();
    query.timeout = Some(Duration::from_millis(7));
    unlimited.limit_query(&mut query);
    assert_eq!(query.timeout, Some(Duration::from_millis(7)), "without a server limit, its own");
    query.timeout = None;
    unlimited.limit_query(&mut query);
    assert_eq!(query.timeout, None);
}

#[test]
fn snapshots_need_a_folder() {
    let e = engine();
    assert_eq!(refused(&e, Request::Save).code(), ErrorCode::Storage);
    assert_eq!(refused(&e, Request::Snapshot).code(), ErrorCode::Storage);
    let dir = tempfile::tempdir().unwrap();
    let store = hotset_storage::Store::open(hotset_storage::StoreOptions::new(dir.path())).unwrap();
    let e = Engine::on_store(store, Settings::default());
    assert!(matches!(e.apply(Request::Save).unwrap(), Answer::Done));
    assert!(std::fs::read_dir(dir.path()).unwrap().any(|f| f.unwrap().file_name().to_string_lossy().contains("snap")));
    e.close().unwrap();
    assert_eq!(refused(&e, Request::Save).code(), ErrorCode::Storage, "closed");
}

#[test]
fn where_requests_run() {
    assert!(!Request::Query(hotset_core::Query::new("t")).blocks());
    assert!(!Request::Sql("SELECT * FROM t".into()).blocks());
    assert!(Request::Sql("DELETE FROM t".into()).blocks());
    assert!(Request::Write { namespace: "t".into(), ops: vec![] }.blocks());
    assert!(Request::Save.blocks() && !Request::Snapshot.blocks());
}

#[test]
fn apply_waits_for_a_write_and_apply_into_collects_it() {
    let db = Arc::new(Database::new());
    let gate = Arc::new(hotset_testkit::durable::GateJournal::default());
    assert!(db.attach_journal(gate.clone()));
    let e = Engine::in_memory(db, Settings::default()).expect("starts");
    let pk = IndexDef::from_json(&json!({"field": "id", "type": "int", "index": "hash", "pk": true})).unwrap();
    let acks = hotset_core::Acks::new();
    // Nothing is released: a write that waited would fail with the gate's error.
    e.apply_into(Request::CreateNamespace { name: "t".into(), indexes: vec![pk] }, &acks).unwrap();
    let ops = vec![write(WriteMode::Upsert, json!({"id": 1})), write(WriteMode::Upsert, json!({"id": 2}))];
    e.apply_into(Request::Write { namespace: "t".into(), ops }, &acks).unwrap();
    e.apply_into(
        Request::Write { namespace: "t".into(), ops: vec![write(WriteMode::Insert, json!({"id": 3}))] },
        &acks,
    )
    .unwrap();
    e.apply_into(Request::Sql("UPDATE t SET a = 1 WHERE id = 1".into()), &acks).unwrap();
    e.apply_into(Request::Delete { namespace: "t".into(), key: json!(2) }, &acks).unwrap();
    e.apply_into(Request::Get { namespace: "t".into(), key: json!(1) }, &acks).unwrap();
    assert_eq!(gate.waits(), Vec::<u64>::new(), "collected writes do not wait");
    assert_eq!((gate.appended(), acks.last_lsn()), (5, Some(5)), "every write noted its record");
    // `apply` waits for its own record (released beforehand, so it returns at once).
    gate.release(u64::MAX);
    e.apply(Request::Delete { namespace: "t".into(), key: json!(3) }).unwrap();
    e.apply(Request::Sql("DELETE FROM t WHERE id = 1".into())).unwrap();
    assert_eq!(gate.waits(), [6, 7]);
    acks.wait().unwrap();
    assert_eq!(gate.waits(), [6, 7, 5]);
}
