//! A write's acknowledgement is explicit: `Database`'s and `Keyspace`'s own write methods
//! return once the log has acknowledged their record; the same writes through
//! `writes(Durability::Collect(&acks))` return before it has, note their records into
//! `acks`, and one wait on `acks` waits for the highest of them.
//!
//! The journal is a `GateJournal`: it acknowledges nothing until the test releases it,
//! and fails (rather than hangs) a wait it never releases, so a collected write that
//! waited would fail here, and a waiting write that did not wait would be seen not to.

use hotset_core::kv::{KvOps, SetOptions};
use hotset_core::query::{Op, Query};
use hotset_core::{Acks, Database, Durability, FieldType, IndexDef, IndexKind};
use hotset_testkit::durable::GateJournal;
use serde_json::json;
use std::sync::Arc;

/// A database with namespace `items` (pk `id`) and the gate attached as its journal.
fn gated() -> (Database, Arc<GateJournal>) {
    let db = Database::new();
    db.create_namespace("items", vec![IndexDef::new("id", IndexKind::Hash, FieldType::Int).pk()]).unwrap();
    let gate = Arc::new(GateJournal::default());
    assert!(db.attach_journal(gate.clone()));
    (db, gate)
}

#[test]
fn collected_writes_return_before_the_log_acknowledges_them() {
    let (db, gate) = gated();
    // Creating a keyspace logs it, and never waits (its first write's wait covers it).
    let space = db.keyspaces().get_or_create("0");
    assert_eq!(gate.appended(), 1);
    let acks = Acks::new();
    let collect = Durability::Collect(&acks);
    db.writes(collect).upsert("items", &json!({"id": 1})).unwrap();
    assert_eq!(acks.last_lsn(), Some(2), "a document write notes its record");
    space.writes(collect).set(b"k", b"v", SetOptions::default()).unwrap();
    assert_eq!(acks.last_lsn(), Some(3), "a key-value write notes its record");
    let counted = space.writes(collect).atomic_all(|txn| txn.incr_by(b"n", 5)).unwrap().unwrap();
    assert_eq!((counted, acks.last_lsn()), (5, Some(4)), "an atomic block is one record");
    let mut txn = db.writes(collect).transaction("items").unwrap();
    txn.upsert(json!({"id": 2})).unwrap();
    txn.delete(json!(1)).unwrap();
    assert_eq!(txn.commit().unwrap(), 2);
    assert_eq!(acks.last_lsn(), Some(5), "a transaction is one record");
    let updated = db.writes(collect).update_query(&Query::new("items").where_("id", Op::Eq, 2), &[]).unwrap();
    assert_eq!((updated, acks.last_lsn()), (1, Some(6)));
    assert!(!db.writes(collect).delete("items", &json!(9)).unwrap());
    assert_eq!(acks.last_lsn(), Some(6), "a write that changed nothing logged nothing");
    db.writes(collect)
        .create_namespace("more", vec![IndexDef::new("id", IndexKind::Hash, FieldType::Int).pk()])
        .unwrap();
    space.writes(collect).flush().unwrap();
    assert_eq!(acks.last_lsn(), Some(8));

    assert_eq!(gate.waits(), Vec::<u64>::new(), "no collected write waited");
    assert_eq!(gate.appended(), 8);
    // What the writes did is visible at once, as later requests of a pipeline see it.
    assert!(db.get("items", &json!(2)).unwrap().is_some() && db.get("items", &json!(1)).unwrap().is_none());
    assert_eq!(space.get(b"k").unwrap(), None, "flushed");
    assert!(db.namespace_names().contains(&"more".to_string()));

    // One wait on the collector waits for the highest record, which settles every one.
    std::thread::scope(|scope| {
        let waiter = scope.spawn(|| acks.wait());
        assert_eq!(gate.waiters(1), [8], "one wait, for the highest record");
        gate.release(8);
        waiter.join().expect("no panic").expect("acknowledged");
    });
    assert_eq!(gate.waits(), [8]);
}

#[test]
fn the_public_write_methods_wait_for_their_own_record() {
    let (db, gate) = gated();
    let space = db.keyspaces().get_or_create("0");
    std::thread::scope(|scope| {
        let upsert = scope.spawn(|| db.upsert("items", &json!({"id": 1})));
        assert_eq!(gate.waiters(1), [2]);
        gate.release(2);
        upsert.join().expect("no panic").expect("acknowledged");
        let set = scope.spawn(|| space.set(b"k", b"v", SetOptions::default()));
        assert_eq!(gate.waiters(2), [2, 3]);
        gate.release(3);
        set.join().expect("no panic").expect("acknowledged");
        let block = scope.spawn(|| space.atomic_all(|txn| txn.incr_by(b"n", 1)));
        let commit = scope.spawn(|| {
            let mut txn = db.transaction("items")?;
            txn.upsert(json!({"id": 2}))?;
            txn.commit()
        });
        let mut waited = gate.waiters(4);
        waited.sort_unstable();
        assert_eq!(waited, [2, 3, 4, 5], "each waits for its own record");
        gate.release(5);
        assert_eq!(block.join().expect("no panic").expect("acknowledged").expect("a number"), 1);
        assert_eq!(commit.join().expect("no panic").expect("acknowledged"), 1);
    });
}
