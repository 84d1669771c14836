//! The log and snapshot contract, checked without files: a database that logs every
//! write to a memory journal must be rebuilt exactly by (a) replaying the whole log, and
//! (b) loading a snapshot and replaying the log from the snapshot's start lsn, also when
//! the snapshot was taken while another thread kept writing (a fuzzy snapshot).
//! Histories mix document writes (including failing ones, writes by query, index
//! changes), namespace drops and re-creations, and key-value writes with deadlines.

use hotset_core::change::Format;
use hotset_core::clock::ManualClock;
use hotset_core::kv::{
    Combine, End, Keyspace, KvOps, ScoreBound, SetAlgebra, SetExpiry, SetOptions, StreamId, Trim, TrimArgs, XAdd,
    XAddId, XClaimOptions, XGroupFrom, XReadGroup, ZAddOptions, ZAlgebra, ZRange, ZRangeBy,
};
use hotset_core::query::SetField;
use hotset_core::{Database, IndexDef, Limits, Query, Replay};
use hotset_testkit::durable::{MemJournal, dump};
use hotset_testkit::generate::{self, NAMESPACE, TransactionWrite, Write};
use proptest::prelude::*;
use proptest::test_runner::Config;
use serde_json::Value;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

#[derive(Debug, Clone)]
enum Op {
    Doc(Write),
    Set {
        key: u8,
        value: u16,
        px: Option<u64>,
    },
    Incr {
        key: u8,
    },
    HSet {
        key: u8,
        field: u8,
        value: u16,
    },
    /// Removes two fields (a hash emptied this way is deleted).
    HDel {
        key: u8,
        field: u8,
    },
    HIncr {
        key: u8,
        field: u8,
    },
    Del {
        key: u8,
    },
    Expire {
        key: u8,
        ms: u64,
    },
    Atomic {
        a: u8,
        b: u8,
    },
    /// LPUSH or RPUSH of one to three values.
    Push {
        key: u8,
        left: bool,
        values: Vec<u16>,
    },
    /// LPOP or RPOP of up to `count`.
    Pop {
        key: u8,
        left: bool,
        count: u8,
    },
    /// One of the list writes that do not push or pop: LSET, LTRIM, LINSERT, LREM.
    ListEdit {
        key: u8,
        which: u8,
        at: i8,
        value: u16,
    },
    /// LMOVE between two keys (maybe the same).
    Move {
        from: u8,
        to: u8,
        left: bool,
    },
    /// SADD, SREM or SPOP on a set of small members (so they meet).
    SetWrite {
        key: u8,
        which: u8,
        member: u8,
    },
    /// ZADD (with a condition), ZINCRBY, ZREM, ZPOPMIN/MAX or ZREMRANGEBYSCORE on a
    /// sorted set of small members.
    ZWrite {
        key: u8,
        which: u8,
        member: u8,
        score: i8,
    },
    /// A stream write: XADD (maybe trimming), XDEL, XTRIM, XGROUP CREATE/DESTROY/
    /// DELCONSUMER/SETID, XREADGROUP, XACK, XCLAIM, XAUTOCLAIM or XSETID, on few keys,
    /// groups and consumers, so they meet.
    XWrite {
        key: u8,
        which: u8,
        arg: u8,
    },
    /// ZUNIONSTORE or ZRANGESTORE from two keys into a third.
    ZStore {
        a: u8,
        b: u8,
        range: bool,
    },
    /// SMOVE, or SUNIONSTORE of two sets into a third key.
    SetPair {
        a: u8,
        b: u8,
        store: bool,
    },
    Flush,
    Advance(u64),
    Truncate,
    Recreate,
    OtherNamespace(i64),
}

fn op() -> impl Strategy<Value = Op> {
    let key = 0u8..12;
    prop_oneof![
        12 => generate::write(20).prop_map(Op::Doc),
        3 => (key.clone(), any::<u16>(), proptest::option::of(1u64..50)).prop_map(|(key, value, px)| Op::Set { key, value, px }),
        2 => key.clone().prop_map(|key| Op::Incr { key }),
        2 => (key.clone(), 0u8..4, any::<u16>()).prop_map(|(key, field, value)| Op::HSet { key, field, value }),
        1 => (key.clone(), 0u8..4).prop_map(|(key, field)| Op::HDel { key, field }),
        1 => (key.clone(), 0u8..4).prop_map(|(key, field)| Op::HIncr { key, field }),
        1 => key.clone().prop_map(|key| Op::Del { key }),
        1 => (key.clone(), 1u64..50).prop_map(|(key, ms)| Op::Expire { key, ms }),
        1 => (key.clone(), key.clone()).prop_map(|(a, b)| Op::Atomic { a, b }),
        2 => (key.clone(), any::<bool>(), proptest::collection::vec(any::<u16>(), 1..4))
            .prop_map(|(key, left, values)| Op::Push { key, left, values }),
        1 => (key.clone(), any::<bool>(), 0u8..3).prop_map(|(key, left, count)| Op::Pop { key, left, count }),
        1 => (key.clone(), 0u8..4, -4i8..4, any::<u16>()).prop_map(|(key, which, at, value)| Op::ListEdit { key, which, at, value }),
        1 => (key.clone(), key.clone(), any::<bool>()).prop_map(|(from, to, left)| Op::Move { from, to, left }),
        2 => (key.clone(), 0u8..3, 0u8..6).prop_map(|(key, which, member)| Op::SetWrite { key, which, member }),
        1 => (key.clone(), key.clone(), any::<bool>()).prop_map(|(a, b, store)| Op::SetPair { a, b, store }),
        // Few keys and members, so writes meet the sorted sets earlier ones made.
        3 => (0u8..3, 0u8..6, 0u8..4, any::<i8>()).prop_map(|(key, which, member, score)| Op::ZWrite { key, which, member, score }),
        1 => (key.clone(), key, any::<bool>()).prop_map(|(a, b, range)| Op::ZStore { a, b, range }),
        6 => (0u8..2, 0u8..16, any::<u8>()).prop_map(|(key, which, arg)| Op::XWrite { key, which, arg }),
        1 => (1u64..30).prop_map(Op::Advance),
        1 => (0i64..5).prop_map(Op::OtherNamespace),
        // Rare, because they wipe what came before.
        1 => prop_oneof![6 => Just(Op::Advance(1)), 1 => Just(Op::Flush), 1 => Just(Op::Truncate), 1 => Just(Op::Recreate)],
    ]
}

/// Key `k`: short, one byte past the inline size of keys (22), or long, so records and
/// snapshot blocks carry keys of every stored form.
fn key(k: u8) -> Vec<u8> {
    match k % 3 {
        0 => format!("k{k}"),
        1 => format!("{k:0>23}"),
        _ => format!("key-{k}-{}", "long".repeat(40)),
    }
    .into_bytes()
}

/// Hash field `f`: the last of the four is longer than the inline size.
fn field_name(f: u8) -> String {
    if f == 3 { format!("field-{f}-longer-than-inline") } else { format!("f{f}") }
}

fn end(left: bool) -> End {
    if left { End::Left } else { End::Right }
}

/// Applies one operation; failures are part of the history (they must log nothing).
fn run(db: &Database, clock: &ManualClock, schema: &[IndexDef], op: &Op) {
    let kv = db.keyspaces().get_or_create("0");
    match op {
        Op::Doc(write) => {
            let _ = match write {
                Write::Insert(doc) => db.insert(NAMESPACE, doc),
                Write::Upsert(doc) => db.upsert(NAMESPACE, doc),
                Write::Update(doc) => db.update(NAMESPACE, doc),
                Write::Delete(id) => db.delete(NAMESPACE, &Value::from(*id)).map(drop),
                Write::UpdateQuery(cond, sets) => {
                    let query = Query { namespace: NAMESPACE.into(), filter: cond.clone(), ..Query::default() };
                    db.update_query(&query, sets).map(drop)
                }
                Write::DeleteQuery(cond) => db.delete_query(&Query::new(NAMESPACE).filter(cond.clone())).map(drop),
                Write::AddIndex(def) => db.add_index(NAMESPACE, def.clone()),
                Write::DropIndex(name) => db.drop_index(NAMESPACE, name),
                Write::Transaction(operations) => transaction(db, operations),
            };
        }
        Op::Set { key: k, value, px } => {
            let opts = SetOptions { expiry: px.map(SetExpiry::Ex), ..SetOptions::default() };
            let _ = kv.set(&key(*k), value.to_string().as_bytes(), opts);
        }
        Op::Incr { key: k } => drop(kv.incr_by(&key(*k), 1)),
        Op::HSet { key: k, field, value } => {
            drop(kv.hset(&key(*k), &[(field_name(*field).as_bytes(), value.to_string().as_bytes())]))
        }
        Op::HDel { key: k, field } => {
            let (one, next) = (field_name(*field), field_name((field + 1) % 4));
            drop(kv.hdel(&key(*k), &[one.as_bytes(), next.as_bytes()]))
        }
        Op::HIncr { key: k, field } => drop(kv.hincr_by(&key(*k), field_name(*field).as_bytes(), 3)),
        Op::Del { key: k } => drop(kv.del(&[&key(*k)])),
        Op::Expire { key: k, ms } => drop(kv.expire_in_ms(&key(*k), *ms as i64)),
        Op::Atomic { a, b } => {
            let (a, b) = (key(*a), key(*b));
            let _ = kv.atomic(&[&a, &b], |txn| {
                let _ = txn.incr_by(&a, 5);
                let _ = txn.set(&b, b"moved", SetOptions::default());
            });
        }
        Op::Push { key: k, left, values } => {
            let values: Vec<String> = values.iter().map(u16::to_string).collect();
            let items: Vec<&[u8]> = values.iter().map(String::as_bytes).collect();
            drop(kv.push(&key(*k), end(*left), &items, false))
        }
        Op::Pop { key: k, left, count } => drop(kv.pop(&key(*k), end(*left), usize::from(*count))),
        Op::ListEdit { key: k, which, at, value } => {
            let (k, at, value) = (key(*k), i64::from(*at), value.to_string());
            match which {
                0 => drop(kv.lset(&k, at, value.as_bytes())),
                1 => drop(kv.ltrim(&k, at, at + 2)),
                2 => drop(kv.linsert(&k, at % 2 == 0, value.as_bytes(), b"inserted")),
                _ => drop(kv.lrem(&k, at, value.as_bytes())),
            }
        }
        Op::Move { from, to, left } => drop(kv.lmove(&key(*from), &key(*to), end(*left), end(!left))),
        Op::SetWrite { key: k, which, member } => {
            let (count, member) = (usize::from(*member % 3), [b'm', b'0' + member]);
            match which {
                0 => drop(kv.sadd(&key(*k), &[&member, b"m9"])),
                1 => drop(kv.srem(&key(*k), &[&member])),
                _ => drop(kv.spop(&key(*k), count)),
            }
        }
        Op::SetPair { a, b, store } => {
            let (a, b) = (key(*a), key(*b));
            match store {
                true => drop(kv.set_algebra_store(SetAlgebra::Union, &key(11), &[&a, &b])),
                false => drop(kv.smove(&a, &b, b"m1")),
            }
        }
        Op::ZWrite { key: k, which, member, score } => {
            let (k, member, score) = (key(*k), [b'z', b'0' + member], f64::from(*score) / 4.0);
            match which {
                0 => drop(kv.zadd(&k, ZAddOptions::default(), &[(score, &member), (-score, b"z9")])),
                1 => {
                    drop(kv.zadd(&k, ZAddOptions { gt: true, ch: true, ..ZAddOptions::default() }, &[(score, &member)]))
                }
                2 => drop(kv.zadd(&k, ZAddOptions { incr: true, ..ZAddOptions::default() }, &[(score, &member)])),
                3 => drop(kv.zrem(&k, &[&member])),
                4 => drop(kv.zpop(&k, score > 0.0, usize::from(member[1] % 3))),
                _ => {
                    let bound = |value| ScoreBound { value, exclusive: false };
                    drop(kv.zremrange(&k, &ZRangeBy::Score(bound(score), bound(score + 4.0))))
                }
            }
        }
        Op::ZStore { a, b, range } => {
            let (a, b) = (key(*a), key(*b));
            match range {
                true => {
                    drop(kv.zrangestore(&key(10), &a, &ZRange { by: ZRangeBy::Rank(1, -2), rev: true, limit: None }))
                }
                false => drop(kv.zalgebra_store(ZAlgebra::Union, &key(10), &[&a, &b], &Combine::default())),
            }
        }
        // Keys of their own: on the others' keys most stream writes would meet another type.
        Op::XWrite { key: k, which, arg } => stream_write(&kv, &key(12 + *k), *which, *arg),
        Op::Flush => drop(kv.flush()),
        Op::Advance(ms) => drop(clock.advance(*ms)),
        Op::Truncate => drop(db.truncate(NAMESPACE)),
        Op::Recreate => {
            let _ = db.drop_namespace(NAMESPACE);
            db.create_namespace(NAMESPACE, schema.to_vec()).expect("the schema is valid");
        }
        Op::OtherNamespace(id) => {
            db.open_namespace("other", vec![IndexDef::hash("id", hotset_core::FieldType::Int).pk()]).unwrap();
            let mut txn = db.transaction("other").unwrap();
            txn.upsert(serde_json::json!({"id": id, "v": id * 2})).unwrap();
            txn.delete(serde_json::json!((id + 2) % 5)).unwrap();
            txn.commit().unwrap();
        }
    }
}

/// One stream write of `Op::XWrite` (refusals, such as a missing group, are part of the
/// history).
fn stream_write(kv: &Keyspace, k: &[u8], which: u8, arg: u8) {
    let group: &[u8] = if arg.is_multiple_of(2) { b"g0" } else { b"g1" };
    let consumer: &[u8] = if arg.is_multiple_of(3) { b"c0" } else { b"c1" };
    // An entry of the stream (so deletes, acks and claims meet one), or an id none has.
    let existing = kv.xrange(k, StreamId::MIN, StreamId::MAX, 0, false).unwrap_or_default();
    let id = match existing.len() {
        0 => StreamId::new(u64::from(arg % 16), 0),
        n => existing[usize::from(arg) % n].0,
    };
    let read =
        XReadGroup { group: group.to_vec(), consumer: consumer.to_vec(), noack: arg.is_multiple_of(5), serving: false };
    let keys = [k.to_vec()];
    // Half of them add: group reads need entries to deliver.
    let which = which.saturating_sub(4);
    if which >= 7 {
        // Group reads, acks and claims need a group: most cases would have none yet.
        let _ = kv.xgroup_create(k, group, Some(StreamId::MIN), false, -1);
    }
    match which {
        0..=2 => {
            let trim = arg.is_multiple_of(4).then_some(TrimArgs {
                rule: Trim::MaxLen(u64::from(arg % 7)),
                approx: false,
                limit: None,
            });
            let value = arg.to_string();
            let args = XAdd { id: XAddId::Auto, nomkstream: false, trim, pairs: vec![(b"f", value.as_bytes())] };
            drop(kv.xadd(k, &args));
        }
        3 => drop(kv.xdel(k, &[id, StreamId::new(u64::from(arg % 16), 1)])),
        4 => drop(kv.xtrim(k, TrimArgs { rule: Trim::MinId(id), approx: arg.is_multiple_of(3), limit: None })),
        5 => drop(kv.xgroup_create(k, group, (!arg.is_multiple_of(3)).then_some(StreamId::MIN), true, -1)),
        6 => match arg % 3 {
            0 => drop(kv.xgroup_destroy(k, group)),
            1 => drop(kv.xgroup_delconsumer(k, group, consumer)),
            _ => drop(kv.xgroup_setid(k, group, Some(id), -1)),
        },
        7 | 8 => {
            let from = if arg.is_multiple_of(4) { XGroupFrom::History(StreamId::MIN) } else { XGroupFrom::New };
            drop(kv.xreadgroup(&keys, &[from], &read, usize::from(arg % 3)))
        }
        9 => drop(kv.xack(k, group, &[id, StreamId::MAX])),
        10 => {
            let options = XClaimOptions {
                force: arg.is_multiple_of(2),
                justid: arg.is_multiple_of(3),
                ..XClaimOptions::default()
            };
            drop(kv.xclaim(k, group, consumer, 0, &[id], options))
        }
        _ => match arg % 2 {
            0 => drop(kv.xautoclaim(k, group, consumer, 0, StreamId::MIN, 2, arg.is_multiple_of(3))),
            _ => drop(kv.xsetid(k, StreamId::new(u64::MAX / 2, u64::from(arg)), None, None)),
        },
    }
}

/// Commits `operations` as one transaction (a refused one logs nothing).
fn transaction(db: &Database, operations: &[TransactionWrite]) -> hotset_core::Result<()> {
    let mut transaction = db.transaction(NAMESPACE)?;
    for operation in operations {
        match operation {
            TransactionWrite::Insert(doc) => transaction.insert(doc.clone())?,
            TransactionWrite::Upsert(doc) => transaction.upsert(doc.clone())?,
            TransactionWrite::Update(doc) => transaction.update(doc.clone())?,
            TransactionWrite::Delete(id) => transaction.delete(Value::from(*id))?,
        }
    }
    transaction.commit().map(drop)
}

fn logged_database(clock: &Arc<ManualClock>) -> (Database, Arc<MemJournal>) {
    let db = Database::with_clock(clock.clone(), Limits::default());
    let journal = Arc::new(MemJournal::default());
    assert!(db.attach_journal(journal.clone()));
    (db, journal)
}

/// Loads snapshot blocks, then records: fuzzy below `exact_from`, exact from there on.
fn rebuild(clock: &Arc<ManualClock>, blocks: &[Vec<u8>], records: &[(u64, Vec<u8>)], exact_from: u64) -> Database {
    let db = Database::with_clock(clock.clone(), Limits::default());
    // As recovery does: ordered indexes are built once, at the end.
    db.begin_bulk_load();
    for block in blocks {
        db.apply_change(block, Format::CURRENT, Replay::Exact).expect("a snapshot block applies");
    }
    for (lsn, payload) in records {
        let mode = if *lsn < exact_from { Replay::Fuzzy } else { Replay::Exact };
        if let Err(error) = db.apply_change(payload, Format::CURRENT, mode) {
            panic!("record {lsn} does not apply: {error}");
        }
    }
    db.finish_bulk_load();
    db.verify_indexes().expect("indexes agree with the documents after a bulk load");
    db
}

fn snapshot(db: &Database) -> Vec<Vec<u8>> {
    let mut blocks = Vec::new();
    db.write_snapshot(&mut |block: &[u8]| {
        blocks.push(block.to_vec());
        Ok::<(), ()>(())
    })
    .unwrap();
    blocks
}

/// `PROPTEST_CASES` scales the run, capped at 150 (each case replays whole histories);
/// `HOTSET_REPLAY_CASES` sets it without the cap, for longer runs.
fn cases() -> u32 {
    let read = |name: &str| std::env::var(name).ok().and_then(|v| v.parse::<u32>().ok());
    read("HOTSET_REPLAY_CASES").unwrap_or_else(|| read("PROPTEST_CASES").unwrap_or(150).min(150))
}

proptest! {
    #![proptest_config(Config { cases: cases(), ..Config::default() })]

    #[test]
    fn log_and_snapshot_rebuild_the_database(
        schema in generate::schema(),
        ops in proptest::collection::vec(op(), 0..80),
        cut in any::<prop::sample::Index>(),
    ) {
        let clock = Arc::new(ManualClock::new(1_000_000));
        let (db, journal) = logged_database(&clock);
        db.create_namespace(NAMESPACE, schema.clone()).unwrap();
        let cut = cut.index(ops.len() + 1);
        for op in &ops[..cut] {
            run(&db, &clock, &schema, op);
        }
        let start = journal.next_lsn();
        let blocks = snapshot(&db);
        for op in &ops[cut..] {
            run(&db, &clock, &schema, op);
        }
        db.verify_indexes().expect("indexes agree with the documents");
        let expected = dump(&db);
        let whole_log = rebuild(&clock, &[], &journal.records_from(1), 1);
        prop_assert_eq!(&dump(&whole_log), &expected, "replaying the whole log");
        let from_snapshot = rebuild(&clock, &blocks, &journal.records_from(start), start);
        prop_assert_eq!(&dump(&from_snapshot), &expected, "snapshot at op {} + log from lsn {}", cut, start);
    }
}

proptest! {
    #![proptest_config(Config { cases: cases() / 20 + 5, ..Config::default() })]

    /// The snapshot runs while a writer thread repeats a history; records logged while it
    /// ran replay in fuzzy mode, later ones exactly.
    #[test]
    fn fuzzy_snapshot_plus_log_rebuilds_the_database(
        schema in generate::schema(),
        ops in proptest::collection::vec(op(), 1..60),
    ) {
        let clock = Arc::new(ManualClock::new(1_000_000));
        let (db, journal) = logged_database(&clock);
        db.create_namespace(NAMESPACE, schema.clone()).unwrap();
        // Enough documents that the copy takes many chunks.
        for id in 100..2_100 {
            let _ = db.upsert(NAMESPACE, &serde_json::json!({"id": id, "a": id % 7, "b": format!("x{id}"), "s": "y"}));
        }
        let db = Arc::new(db);
        let snapshot_done = AtomicBool::new(false);
        let (start, end, blocks) = std::thread::scope(|scope| {
            let writer = scope.spawn(|| {
                let mut rounds = 0;
                // Keep writing until the snapshot is done, then one more round.
                while rounds < 2 || !snapshot_done.load(Ordering::Acquire) {
                    for op in &ops {
                        run(&db, &clock, &schema, op);
                    }
                    rounds += 1;
                    if snapshot_done.load(Ordering::Acquire) {
                        break;
                    }
                }
            });
            let start = journal.next_lsn();
            let blocks = snapshot(&db);
            let end = journal.next_lsn();
            snapshot_done.store(true, Ordering::Release);
            writer.join().unwrap();
            (start, end, blocks)
        });
        let expected = dump(&db);
        let rebuilt = rebuild(&clock, &blocks, &journal.records_from(start), end);
        prop_assert_eq!(&dump(&rebuilt), &expected, "snapshot over lsn {}..{}", start, end);
    }
}

#[test]
fn writes_to_a_dropped_namespace_are_refused_not_logged() {
    let clock = Arc::new(ManualClock::new(1));
    let (db, journal) = logged_database(&clock);
    db.create_namespace("n", vec![IndexDef::hash("id", hotset_core::FieldType::Int).pk()]).unwrap();
    let txn = {
        let mut txn = db.transaction("n").unwrap();
        txn.upsert(serde_json::json!({"id": 1})).unwrap();
        txn
    };
    db.drop_namespace("n").unwrap();
    let before = journal.next_lsn();
    assert!(txn.commit().is_err());
    assert_eq!(journal.next_lsn(), before, "nothing logged");
    let sets = [SetField::Set("x".into(), hotset_core::query::Expr::value(1))];
    assert!(db.update_query(&Query::new("n"), &sets).is_err());
}

/// A schema change while a namespace is being copied restarts its copy: without that,
/// a document written after an index was dropped could land in the snapshot under the
/// old schema, where it does not load.
#[test]
fn schema_change_during_snapshot_restarts_the_namespace() {
    use hotset_core::FieldType;
    let clock = Arc::new(ManualClock::new(1));
    let (db, journal) = logged_database(&clock);
    db.create_namespace("n", vec![IndexDef::hash("id", FieldType::Int).pk(), IndexDef::tree("a", FieldType::Int)])
        .unwrap();
    for id in 0..5_000 {
        db.upsert("n", &serde_json::json!({"id": id, "a": id})).unwrap();
    }
    let start = journal.next_lsn();
    let mut blocks: Vec<Vec<u8>> = Vec::new();
    let mut changed = false;
    db.write_snapshot(&mut |block: &[u8]| {
        blocks.push(block.to_vec());
        // After the first chunk of documents, while the copy is under way.
        if blocks.len() == 2 && !changed {
            changed = true;
            db.drop_index("n", "a").unwrap();
            db.upsert("n", &serde_json::json!({"id": 4_999, "a": "no longer an int"})).unwrap();
        }
        Ok::<(), ()>(())
    })
    .unwrap();
    assert!(changed);
    let headers = blocks.iter().filter(|b| b[0] == 1).count();
    assert_eq!(headers, 2, "the namespace was started over once");
    let rebuilt = rebuild(&clock, &blocks, &journal.records_from(start), journal.next_lsn());
    assert_eq!(dump(&rebuilt), dump(&db));
}

/// A load large enough for recovery's parallel paths (snapshot blocks prepared on two
/// threads, ordered indexes sorted in two runs and merged) builds the same indexes as
/// writing the documents one by one: same documents, and every ordered index gives the
/// same order, ranges and counts. Keys share first parts (few first names), contain 0
/// bytes and non-ASCII text, and some are missing, so prefix ties and sparse rows occur.
#[test]
fn large_bulk_load_orders_like_row_by_row_writes() {
    use hotset_core::query::Op as Cmp;
    use hotset_core::{Collation, FieldType, IndexKind};
    let clock = Arc::new(ManualClock::new(1));
    let (db, _journal) = logged_database(&clock);
    db.create_namespace(
        "people",
        vec![
            IndexDef::hash("id", FieldType::Int).pk(),
            IndexDef::composite(&["first", "last"], IndexKind::Tree, FieldType::String).collate(Collation::Utf8Ci),
            IndexDef::tree("tags", FieldType::Int).array(),
            IndexDef::tree("score", FieldType::Double),
            IndexDef::tree("nick", FieldType::String).sparse(),
        ],
    )
    .unwrap();
    let firsts = ["Anna", "anna", "Ann", "Annabel", "Ёлка", "ёлка", "Zed", "a\u{0}b", "a", ""];
    let mut state = 7u64;
    let mut next = move |n: u64| {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (state >> 33) % n
    };
    for id in 0..60_000u64 {
        let mut doc = serde_json::json!({
            "id": id,
            "first": firsts[next(firsts.len() as u64) as usize],
            "last": format!("L{}\u{0}{}", next(50), next(7)),
            "tags": (0..next(4)).map(|_| next(20)).collect::<Vec<_>>(),
            "score": (next(2_000) as f64 - 1_000.0) / 8.0,
        });
        if next(3) == 0 {
            doc["nick"] = serde_json::json!(format!("n{}", next(500)));
        }
        db.upsert("people", &doc).unwrap();
    }
    let blocks = snapshot(&db);
    assert!(blocks.len() > 50, "the load arrives in many blocks");
    let rebuilt = rebuild(&clock, &blocks, &[], 0);
    assert_eq!(dump(&rebuilt), dump(&db));
    let ids = |db: &Database, query: Query| -> (Vec<Value>, Option<usize>) {
        let result = db.query(&query.with_total()).unwrap();
        let total = result.total;
        (result.values().iter().map(|doc| doc["id"].clone()).collect(), total)
    };
    let queries = [
        Query::new("people").sort("first", false).sort("last", true).limit(5_000),
        Query::new("people").sort("first", true).sort("last", false).offset(30_000).limit(500),
        Query::new("people").where_("first", Cmp::Ge, "ann").where_("first", Cmp::Lt, "anna").sort("last", false),
        Query::new("people").sort("tags", false).limit(3_000),
        Query::new("people").where_("tags", Cmp::Gt, 15).sort("score", true).limit(1_000),
        Query::new("people").where_("score", Cmp::Lt, -100.0).sort("score", false).limit(2_000),
        Query::new("people").where_("nick", Cmp::Ge, "n4").sort("nick", false).limit(2_000),
    ];
    for query in queries {
        let expected = ids(&db, query.clone());
        assert!(!expected.0.is_empty(), "{query:?} finds rows");
        assert_eq!(ids(&rebuilt, query.clone()), expected, "{query:?}");
    }
}

/// A snapshot hands over namespaces and keyspaces interleaved (so recovery's lanes, one
/// per namespace or keyspace, are all busy from the start of the file), and loading it
/// gives the database back.
#[test]
fn snapshots_interleave_namespaces_and_keyspaces() {
    use hotset_core::FieldType;
    use hotset_core::change::{Change, Target};
    let clock = Arc::new(ManualClock::new(1));
    let (db, _journal) = logged_database(&clock);
    for name in ["a", "b"] {
        db.create_namespace(name, vec![IndexDef::hash("id", FieldType::Int).pk()]).unwrap();
    }
    let kv = db.keyspaces().get_or_create("0");
    for id in 0..6_000 {
        db.upsert(if id % 3 == 0 { "a" } else { "b" }, &serde_json::json!({"id": id, "pad": "x".repeat(100)})).unwrap();
        kv.set(format!("key:{id:07}").as_bytes(), &[b'v'; 100], SetOptions::default()).unwrap();
    }
    let blocks = snapshot(&db);
    let targets: Vec<String> = blocks
        .iter()
        .map(|block| match Change::target(block).unwrap() {
            Target::Namespace(name) => name.to_string(),
            Target::Keyspace(name) => format!("keyspace {name}"),
            other => panic!("a snapshot of no metadata holds {other:?}"),
        })
        .collect();
    // Each target's first and last block: every stretch overlaps every other.
    let span = |target: &str| {
        let first = targets.iter().position(|t| t == target).unwrap();
        let last = targets.iter().rposition(|t| t == target).unwrap();
        (first, last)
    };
    let spans = [span("a"), span("b"), span("keyspace 0")];
    for (first, _) in spans {
        for (_, last) in spans {
            assert!(first < last, "{spans:?} in {} blocks", targets.len());
        }
    }
    let rebuilt = rebuild(&clock, &blocks, &[], 0);
    assert_eq!(dump(&rebuilt), dump(&db));
}

/// A write to a few fields of a big hash logs those fields, not the hash, and replaying
/// the field records (set, removed, an emptied hash, a deadline) rebuilds it exactly.
#[test]
fn hash_writes_log_the_fields_they_change() {
    let clock = Arc::new(ManualClock::new(1_000_000));
    let (db, journal) = logged_database(&clock);
    let kv = db.keyspaces().get_or_create("0");
    let fields: Vec<(Vec<u8>, Vec<u8>)> =
        (0..1_000).map(|i| (format!("field-{i}").into_bytes(), format!("value-{i}").into_bytes())).collect();
    let pairs: Vec<(&[u8], &[u8])> = fields.iter().map(|(f, v)| (f.as_slice(), v.as_slice())).collect();
    kv.hset(b"big", &pairs).unwrap();
    assert!(kv.expire_in_ms(b"big", 60_000).unwrap());
    let whole = journal.records_from(1).last().unwrap().1.len();
    assert!(whole > 10_000, "the creating write logs the whole hash ({whole} bytes)");
    let before = journal.next_lsn();
    kv.hset(b"big", &[(b"field-7", b"changed"), (b"new", b"1")]).unwrap();
    kv.hdel(b"big", &[b"field-8", b"absent"]).unwrap();
    kv.hincr_by(b"big", b"counter", 5).unwrap();
    kv.hset(b"small", &[(b"only", b"x")]).unwrap();
    kv.hdel(b"small", &[b"only"]).unwrap();
    let records = journal.records_from(before);
    assert_eq!(records.len(), 5);
    // A hash write refused for the key's type logs nothing.
    kv.set(b"text", b"x", Default::default()).unwrap();
    let next = journal.next_lsn();
    assert!(kv.hset(b"text", &[(b"f", b"v")]).is_err());
    assert!(kv.hincr_by(b"text", b"f", 1).is_err());
    assert_eq!(journal.next_lsn(), next, "refused hash writes log no record");
    for (lsn, record) in &records[..3] {
        assert!(record.len() < 100, "record {lsn} holds the changed fields only ({} bytes)", record.len());
    }
    let rebuilt = rebuild(&clock, &[], &journal.records_from(1), 1);
    assert_eq!(dump(&rebuilt), dump(&db));
    let big = rebuilt.keyspaces().get("0").unwrap();
    assert_eq!(big.hget(b"big", b"field-7").unwrap().as_deref(), Some(&b"changed"[..]));
    assert_eq!(big.hget(b"big", b"field-8").unwrap(), None);
    assert_eq!(big.hlen(b"big").unwrap(), 1_001);
    assert!(big.expire_time_ms(b"big").unwrap() > 0, "the deadline survives field records");
    assert_eq!(big.key_type(b"small").unwrap(), "none");
}

/// Pushes, pops, LSET and LTRIM on a big list log its window and the elements they wrote,
/// not the list; LINSERT and LREM, which shift elements, log it whole; and replaying the
/// records, from the start and twice over (as a fuzzy snapshot's overlap does), rebuilds it
/// exactly.
#[test]
fn list_writes_log_their_window_and_replay_idempotently() {
    let clock = Arc::new(ManualClock::new(1_000_000));
    let (db, journal) = logged_database(&clock);
    let kv = db.keyspaces().get_or_create("0");
    let values: Vec<String> = (0..1_000).map(|i| format!("value-{i}")).collect();
    let items: Vec<&[u8]> = values.iter().map(String::as_bytes).collect();
    kv.push(b"big", End::Right, &items, false).unwrap();
    let before = journal.next_lsn();
    kv.linsert(b"big", false, b"value-500", b"inserted").unwrap();
    kv.lrem(b"big", -1, b"value-900").unwrap();
    let sizes: Vec<usize> = journal.records_from(before).iter().map(|(_, record)| record.len()).collect();
    assert!(
        sizes.len() == 2 && sizes.iter().all(|&size| size > 5_000),
        "shifting writes log the list whole: {sizes:?}"
    );
    let before = journal.next_lsn();
    kv.push(b"big", End::Left, &[b"head-1", b"head-2"], false).unwrap();
    kv.push(b"big", End::Right, &[b"tail"], false).unwrap();
    let popped = kv.pop(b"big", End::Left, 3).unwrap().unwrap();
    assert_eq!(popped, vec![b"head-2".to_vec(), b"head-1".to_vec(), b"value-0".to_vec()]);
    assert_eq!(kv.pop(b"big", End::Right, 1).unwrap().unwrap(), vec![b"tail".to_vec()]);
    kv.lset(b"big", 5, b"changed").unwrap();
    kv.ltrim(b"big", 1, -2).unwrap();
    assert!(kv.lmove(b"big", b"big", End::Left, End::Right).unwrap().is_some());
    let small = journal.records_from(before);
    assert_eq!(small.len(), 7);
    for (lsn, record) in &small {
        assert!(record.len() < 100, "record {lsn} holds the window and written elements only ({} bytes)", record.len());
    }
    kv.push(b"gone", End::Left, &[b"x"], false).unwrap();
    kv.pop(b"gone", End::Left, 1).unwrap();
    let records = journal.records_from(1);
    let rebuilt = rebuild(&clock, &[], &records, 1);
    assert_eq!(dump(&rebuilt), dump(&db));
    // Every record again, on the state the first pass left: the same state.
    for (lsn, payload) in &records {
        rebuilt.apply_change(payload, Format::CURRENT, Replay::Fuzzy).unwrap_or_else(|e| panic!("record {lsn}: {e}"));
    }
    assert_eq!(dump(&rebuilt), dump(&db));
    let list = rebuilt.keyspaces().get("0").unwrap().lrange(b"big", 0, -1).unwrap();
    assert_eq!(list.len(), 997);
    assert_eq!((list[0].as_slice(), list[3].as_slice()), (&b"value-3"[..], &b"changed"[..]));
    assert_eq!(list[996], b"value-2");
}

/// ZADD, ZINCRBY, ZREM, pops and range removals on a big sorted set log the members they
/// changed (with their scores now), not the set; replaying the records, from the start and
/// twice over, rebuilds it exactly, scores to the bit.
#[test]
fn sorted_set_writes_log_the_members_they_change() {
    let clock = Arc::new(ManualClock::new(1_000_000));
    let (db, journal) = logged_database(&clock);
    let kv = db.keyspaces().get_or_create("0");
    let members: Vec<String> = (0..1_000).map(|i| format!("member-{i}")).collect();
    let pairs: Vec<(f64, &[u8])> = members.iter().enumerate().map(|(i, m)| (i as f64 / 3.0, m.as_bytes())).collect();
    kv.zadd(b"board", ZAddOptions::default(), &pairs).unwrap();
    assert!(journal.records_from(1).last().unwrap().1.len() > 10_000, "the creating write logs the whole set");
    let before = journal.next_lsn();
    kv.zadd(b"board", ZAddOptions::default(), &[(-0.0, b"member-7"), (f64::INFINITY, b"new")]).unwrap();
    kv.zadd(b"board", ZAddOptions { incr: true, ..ZAddOptions::default() }, &[(0.1, b"member-8")]).unwrap();
    kv.zrem(b"board", &[b"member-9", b"absent"]).unwrap();
    assert_eq!(kv.zpop(b"board", true, 2).unwrap().unwrap()[0].0, b"new");
    let bound = |value| ScoreBound { value, exclusive: false };
    assert_eq!(kv.zremrange(b"board", &ZRangeBy::Score(bound(10.0), bound(11.0))).unwrap(), 4);
    let small = journal.records_from(before);
    assert_eq!(small.len(), 5);
    for (lsn, record) in &small {
        assert!(record.len() < 200, "record {lsn} holds the changed members only ({} bytes)", record.len());
    }
    let records = journal.records_from(1);
    let rebuilt = rebuild(&clock, &[], &records, 1);
    assert_eq!(dump(&rebuilt), dump(&db));
    for (lsn, payload) in &records {
        rebuilt.apply_change(payload, Format::CURRENT, Replay::Fuzzy).unwrap_or_else(|e| panic!("record {lsn}: {e}"));
    }
    assert_eq!(dump(&rebuilt), dump(&db));
    let board = rebuilt.keyspaces().get("0").unwrap();
    assert_eq!(board.zcard(b"board").unwrap(), 994);
    let scores = board.zmscore(b"board", &[b"member-7", b"member-8", b"member-9"]).unwrap();
    assert!(scores[0].is_some_and(|s| s == 0.0 && s.is_sign_negative()), "-0 kept: {scores:?}");
    assert_eq!(scores[1..], [Some(8.0 / 3.0 + 0.1), None]);
}

#[test]
fn stream_writes_log_the_parts_they_change() {
    let clock = Arc::new(ManualClock::new(1_000_000));
    let (db, journal) = logged_database(&clock);
    let kv = db.keyspaces().get_or_create("0");
    let add = |value: &str| {
        let args = XAdd { id: XAddId::Auto, nomkstream: false, trim: None, pairs: vec![(b"f", value.as_bytes())] };
        kv.xadd(b"log", &args).unwrap().unwrap()
    };
    let ids: Vec<StreamId> = (0..1_000).map(|i| add(&format!("value-{i}"))).collect();
    kv.xgroup_create(b"log", b"g", Some(StreamId::MIN), false, 0).unwrap();
    let before = journal.next_lsn();
    let read = |consumer: &[u8], count| {
        let read = XReadGroup { group: b"g".to_vec(), consumer: consumer.to_vec(), noack: false, serving: false };
        kv.xreadgroup(&[b"log".to_vec()], &[XGroupFrom::New], &read, count).unwrap()
    };
    assert_eq!(read(b"alice", 3)[0].1.len(), 3);
    assert_eq!(read(b"bob", 2)[0].1.len(), 2);
    assert_eq!(kv.xack(b"log", b"g", &[ids[0], ids[3]]).unwrap(), 2);
    clock.advance(5);
    let claimed = kv.xclaim(b"log", b"g", b"carol", 0, &[ids[1]], XClaimOptions::default()).unwrap();
    assert_eq!(claimed.len(), 1);
    assert_eq!(kv.xdel(b"log", &[ids[2], ids[500]]).unwrap(), 2);
    add("after");
    assert_eq!(kv.xtrim(b"log", TrimArgs { rule: Trim::MinId(ids[10]), approx: false, limit: None }).unwrap(), 9);
    let small = journal.records_from(before);
    assert_eq!(small.len(), 7);
    for (lsn, record) in &small {
        assert!(record.len() < 300, "record {lsn} holds the changed parts only ({} bytes)", record.len());
    }
    let records = journal.records_from(1);
    let rebuilt = rebuild(&clock, &[], &records, 1);
    assert_eq!(dump(&rebuilt), dump(&db));
    for (lsn, payload) in &records {
        rebuilt.apply_change(payload, Format::CURRENT, Replay::Fuzzy).unwrap_or_else(|e| panic!("record {lsn}: {e}"));
    }
    assert_eq!(dump(&rebuilt), dump(&db), "replaying every record again changes nothing");
    let log = rebuilt.keyspaces().get("0").unwrap();
    assert_eq!(log.xlen(b"log").unwrap(), 990);
    let pending = log.xpending_summary(b"log", b"g").unwrap();
    // A deleted entry stays pending (alice's), as in Redis.
    assert_eq!(pending.count, 3, "{pending:?}");
    let expected = [(&b"alice"[..], 1), (b"bob", 1), (b"carol", 1)].map(|(name, n)| (name.to_vec(), n));
    assert_eq!(pending.consumers, expected);
}
