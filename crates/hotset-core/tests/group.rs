//! Writes across namespaces committed as one (`Database::group`): all or nothing for
//! readers, for a failure half way, and for replay of its one log record; metadata entries
//! ride in the same record.

use hotset_core::WriteMode;
use hotset_core::change::{Change, Format};
use hotset_core::query::{JoinKind, Op, Query};
use hotset_core::{Database, Error, FieldType, IndexDef, Replay};
use hotset_testkit::durable::{MemJournal, dump};
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

fn shop() -> (Database, Arc<MemJournal>) {
    let db = Database::new();
    let journal = Arc::new(MemJournal::default());
    db.attach_journal(journal.clone());
    db.create_namespace("orders", vec![IndexDef::hash("id", FieldType::Int).pk()]).unwrap();
    db.create_namespace(
        "lines",
        vec![IndexDef::hash("id", FieldType::Int).pk(), IndexDef::tree("order", FieldType::Int)],
    )
    .unwrap();
    (db, journal)
}

fn count(db: &Database, namespace: &str) -> usize {
    db.describe(namespace).unwrap().documents
}

#[test]
fn a_group_commits_every_namespace_and_its_metadata_in_one_record() {
    let (db, journal) = shop();
    let before = journal.next_lsn();
    let mut group = db.group();
    group.write("orders", json!({"id": 1, "total": 30}), WriteMode::Insert).unwrap();
    group.write("lines", json!({"id": 10, "order": 1}), WriteMode::Insert).unwrap();
    group.write("lines", json!({"id": 11, "order": 1}), WriteMode::Upsert).unwrap();
    group.set_meta("source:app", Some(b"0/10".to_vec()));
    assert_eq!(group.commit().unwrap(), 3);
    assert_eq!((count(&db, "orders"), count(&db, "lines")), (1, 2));
    assert_eq!(db.meta("source:app").as_deref(), Some(&b"0/10"[..]));

    let records = journal.records_from(before);
    assert_eq!(records.len(), 1, "one record for the whole group");
    let Change::Group { parts } = Change::decode(&records[0].1, Format::CURRENT).unwrap() else {
        panic!("a group record")
    };
    assert_eq!(parts.len(), 3, "orders, lines, the metadata entry: {parts:?}");

    // Replayed into an empty database, the record gives the same state.
    let replica = Database::new();
    for (_, payload) in journal.records_from(0) {
        replica.apply_change(&payload, Format::CURRENT, Replay::Exact).unwrap();
    }
    assert_eq!(dump(&replica), dump(&db));
    assert_eq!(replica.meta("source:app").as_deref(), Some(&b"0/10"[..]));

    // Removing an entry and deleting every document of a namespace, in one group.
    let mut group = db.group();
    group.delete_all("lines").unwrap();
    group.delete("orders", json!(1)).unwrap();
    group.set_meta("source:app", None);
    group.commit().unwrap();
    assert_eq!((count(&db, "orders"), count(&db, "lines")), (0, 0));
    assert_eq!(db.meta("source:app"), None);
    for (_, payload) in journal.records_from(records[0].0 + 1) {
        replica.apply_change(&payload, Format::CURRENT, Replay::Exact).unwrap();
    }
    assert_eq!(dump(&replica), dump(&db));
    assert_eq!(replica.meta("source:app"), None);
}

#[test]
fn a_failure_in_any_namespace_leaves_nothing_applied_and_nothing_logged() {
    let (db, journal) = shop();
    db.insert("lines", &json!({"id": 5, "order": 0})).unwrap();
    let mut group = db.group();
    group.set_meta("source:app", Some(b"0/1".to_vec()));
    group.commit().unwrap();
    let before = journal.next_lsn();
    let state = dump(&db);

    let mut group = db.group();
    group.write("orders", json!({"id": 2}), WriteMode::Insert).unwrap();
    group.delete_all("lines").unwrap();
    group.write("lines", json!({"id": 6, "order": 2}), WriteMode::Insert).unwrap();
    group.write("orders", json!({"id": 4}), WriteMode::Insert).unwrap();
    group.write("lines", json!({"id": 6, "order": 2}), WriteMode::Insert).unwrap();
    group.set_meta("source:app", Some(b"0/2".to_vec()));
    let failure = group.commit().unwrap_err();
    assert!(matches!(failure.error, Error::DuplicateKey { .. }), "{}", failure.error);
    assert_eq!(failure.at, Some(("lines".to_string(), 2)), "the second insert of 6, third operation on lines");
    assert_eq!(failure.operation, Some(4), "and the fifth of the group, counted across namespaces");
    assert_eq!(dump(&db), state, "orders' insert and the delete of every line are rolled back");
    assert_eq!(db.meta("source:app").as_deref(), Some(&b"0/1"[..]), "the entry as it was");
    assert_eq!(journal.next_lsn(), before, "nothing logged");

    let mut group = db.group();
    group.write("orders", json!({"id": 3}), WriteMode::Insert).unwrap();
    group.write("nowhere", json!({"id": 3}), WriteMode::Insert).unwrap();
    let failure = group.commit().unwrap_err();
    assert!(matches!(failure.error, Error::UnknownNamespace { .. }), "{}", failure.error);
    assert_eq!((failure.at, failure.operation), (None, None), "no operation failed: the whole was refused");
    assert_eq!(dump(&db), state);
}

/// A writer commits orders with their lines as groups, and deletes them again the same
/// way; a reader joining orders to lines (the join holds both namespaces' read locks)
/// must never see an order without its lines, or lines without their order.
#[test]
fn readers_never_see_an_order_without_its_lines() {
    let (db, _) = shop();
    let db = Arc::new(db);
    let done = Arc::new(AtomicBool::new(false));
    let writer = {
        let (db, done) = (db.clone(), done.clone());
        std::thread::spawn(move || {
            for id in 0..1500i64 {
                let mut group = db.group();
                group.write("orders", json!({"id": id}), WriteMode::Insert).unwrap();
                for line in 0..3 {
                    group.write("lines", json!({"id": id * 10 + line, "order": id}), WriteMode::Insert).unwrap();
                }
                group.commit().unwrap();
                if id % 3 == 0 {
                    let mut group = db.group();
                    for line in 0..3 {
                        group.delete("lines", json!(id * 10 + line)).unwrap();
                    }
                    group.delete("orders", json!(id)).unwrap();
                    group.commit().unwrap();
                }
            }
            done.store(true, Ordering::Release);
        })
    };
    let mut reads = 0;
    while !done.load(Ordering::Acquire) || reads == 0 {
        let orders = Query::new("orders").limit(10_000).join(
            JoinKind::Left,
            Query::new("lines").limit(10_000),
            &[("id", Op::Eq, "order")],
            "lines",
        );
        for item in db.query(&orders).unwrap().values() {
            let lines = item["lines"].as_array().map_or(0, Vec::len);
            assert_eq!(lines, 3, "an order with {lines} lines: {item}");
        }
        let lines = Query::new("lines").limit(10_000).join(
            JoinKind::Left,
            Query::new("orders").limit(10_000),
            &[("order", Op::Eq, "id")],
            "orders",
        );
        for item in db.query(&lines).unwrap().values() {
            let orders = item["orders"].as_array().map_or(0, Vec::len);
            assert_eq!(orders, 1, "a line with {orders} orders: {item}");
        }
        reads += 1;
    }
    writer.join().unwrap();
    assert_eq!(count(&db, "orders"), 1000);
    assert_eq!(count(&db, "lines"), 3000);
}

/// A namespace a live-sync source owns takes writes from that source only; any writer
/// may still add and drop its indexes.
#[test]
fn an_owned_namespace_is_read_only_to_every_other_writer() {
    let (db, _) = shop();
    db.insert("orders", &json!({"id": 1})).unwrap();
    db.set_owner("orders", Some("app"));
    let refused = |result: hotset_core::Result<()>| match result {
        Err(Error::ReadOnly { namespace, owner }) => {
            assert_eq!((namespace.as_str(), owner.as_str()), ("orders", "app"))
        }
        other => panic!("{other:?}"),
    };
    refused(db.insert("orders", &json!({"id": 2})));
    refused(db.delete("orders", &json!(1)).map(drop));
    refused(db.truncate("orders"));
    refused(db.drop_namespace("orders"));
    refused(db.update_query(&Query::new("orders"), &[]).map(drop));
    let mut group = db.group();
    group.write("lines", json!({"id": 1, "order": 1}), WriteMode::Insert).unwrap();
    group.write("orders", json!({"id": 2}), WriteMode::Insert).unwrap();
    refused(group.commit().map(drop).map_err(|failure| failure.error));
    assert_eq!(count(&db, "lines"), 0, "nothing of the refused group");
    let other = hotset_core::Acks::default();
    refused(db.writes(hotset_core::Durability::Collect(&other)).as_owner("other").insert("orders", &json!({"id": 2})));

    db.add_index("orders", IndexDef::tree("total", FieldType::Int)).unwrap();
    db.drop_index("orders", "total").unwrap();
    let owner = db.writes(hotset_core::Durability::Wait).as_owner("app");
    owner.insert("orders", &json!({"id": 2})).unwrap();
    let mut group = owner.group();
    group.write("orders", json!({"id": 3}), WriteMode::Insert).unwrap();
    group.commit().unwrap();
    assert_eq!(count(&db, "orders"), 3);
    db.set_owner("orders", None);
    db.insert("orders", &json!({"id": 4})).unwrap();
}

#[test]
fn stored_documents_are_kept_as_given_checked_and_logged_like_any_write() {
    let db = Database::with_limits(hotset_core::Limits { document_bytes_max: 64, ..Default::default() });
    let journal = Arc::new(MemJournal::default());
    db.attach_journal(journal.clone());
    db.create_namespace(
        "lines",
        vec![IndexDef::hash("id", FieldType::Int).pk(), IndexDef::tree("order", FieldType::Int)],
    )
    .unwrap();
    let stored = |text: &str| -> Arc<[u8]> { Arc::from(text.as_bytes()) };

    let mut group = db.group();
    group.upsert_stored("lines", stored(r#"{"id":10,"order":1,"note":"a\"b"}"#)).unwrap();
    group.upsert_stored("lines", stored(r#"{"id":11,"order":2}"#)).unwrap();
    // An upsert: the same key again replaces the document.
    group.upsert_stored("lines", stored(r#"{"id":11,"order":1}"#)).unwrap();
    assert_eq!(group.commit().unwrap(), 3);
    assert_eq!(count(&db, "lines"), 2);
    let doc = db.get("lines", &json!(10)).unwrap().expect("stored");
    assert_eq!(&doc[..], br#"{"id":10,"order":1,"note":"a\"b"}"#, "kept byte for byte");
    let order_one = Query::new("lines").where_("order", Op::Eq, json!(1));
    assert_eq!(db.query(&order_one).unwrap().items.len(), 2, "indexed like any write");

    // Each refusal names its cause and leaves nothing of its group applied.
    let refused = |text: &str| {
        let mut group = db.group();
        group.upsert_stored("lines", stored(r#"{"id":12,"order":3}"#)).unwrap();
        group.upsert_stored("lines", stored(text)).unwrap();
        let failure = group.commit().expect_err(text);
        assert_eq!(failure.at, Some(("lines".to_string(), 1)), "{text}");
        assert!(db.get("lines", &json!(12)).unwrap().is_none(), "{text}: rolled back");
        failure.error
    };
    assert!(matches!(refused(r#"{"id":13,"order":"#), Error::InvalidJson { .. }));
    assert!(matches!(refused("[1,2]"), Error::NotAnObject { .. }));
    assert!(matches!(refused(r#"{"id":13,"order":"three"}"#), Error::WrongType { .. }));
    let large = format!(r#"{{"id":13,"order":3,"note":"{}"}}"#, "x".repeat(64));
    assert!(matches!(refused(&large), Error::LimitExceeded { what: "document_bytes_max", .. }));

    // Logged like any write: replayed, the log gives the same namespace.
    let replica = Database::new();
    for (_, payload) in journal.records_from(0) {
        replica.apply_change(&payload, Format::CURRENT, Replay::Exact).unwrap();
    }
    assert_eq!(dump(&replica), dump(&db));
}

#[test]
fn a_large_group_of_stored_documents_prepared_beside_its_apply_fails_at_the_right_one() {
    // Enough documents that part of them is parsed on a helper thread while the
    // committing thread applies (`prepare::apply_prepared`): the result must not depend on
    // which thread prepared what.
    let (db, journal) = shop();
    let doc = |id: usize| -> Arc<[u8]> { Arc::from(format!(r#"{{"id":{id},"order":{}}}"#, id % 7).as_bytes()) };
    let mut group = db.group();
    for id in 0..2000 {
        group.upsert_stored("lines", doc(id)).unwrap();
    }
    assert_eq!(group.commit().unwrap(), 2000);
    assert_eq!(count(&db, "lines"), 2000);
    let order_three = Query::new("lines").where_("order", Op::Eq, json!(3)).limit(10_000);
    assert_eq!(db.query(&order_three).unwrap().items.len(), (0..2000).filter(|id| id % 7 == 3).count());

    // A bad document late in a large group (in the helper's share): the failure names it,
    // and nothing of the group stays.
    for bad_at in [3, 1500, 2999] {
        let mut group = db.group();
        for id in 0..3000 {
            let stored = if id == bad_at { Arc::from(&br#"{"id":1,"order":"x"}"#[..]) } else { doc(10_000 + id) };
            group.upsert_stored("lines", stored).unwrap();
        }
        let failure = group.commit().expect_err("a document does not fit");
        assert_eq!(failure.at, Some(("lines".to_string(), bad_at)));
        assert!(matches!(failure.error, Error::WrongType { .. }), "{:?}", failure.error);
        assert_eq!(count(&db, "lines"), 2000, "bad at {bad_at}: rolled back");
    }
    let replica = Database::new();
    for (_, payload) in journal.records_from(0) {
        replica.apply_change(&payload, Format::CURRENT, Replay::Exact).unwrap();
    }
    assert_eq!(dump(&replica), dump(&db));
}
