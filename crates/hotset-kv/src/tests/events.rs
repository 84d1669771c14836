//! Keyspace events: what each write tells the listener, by Redis 7.0's names and classes.
//!
//! Owns: `Keyspaces::set_notify` seen from a listener: the exact events, in order, of a
//! representative command of every family; none for a write that changed nothing or was
//! refused; none at all while no class is enabled.
//!
//! Must never: sleep; time only moves through the `ManualClock`.
//!
//! Invariants: the keyspaces have one shard unless a test is about shards, because the
//! events of keys on different shards arrive grouped by shard, not in command order.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use super::T0;
use crate::store::router::{Router, hash_bytes};
use crate::{
    BitOp, Combine, End, ExpireCondition, KeyEvents, Keyspace, KeyspaceConfig, Keyspaces, KvError, KvOps, LexBound,
    ScoreBound, SetAlgebra, SetCondition, SetExpiry, SetOptions, SortOptions, ZAddOptions, ZAddOutcome, ZAlgebra,
    ZRange, ZRangeBy, event_class as class,
};
use hotset_base::clock::ManualClock;
use parking_lot::Mutex;

/// One event as heard: (class, name, key).
type Event = (u32, String, Vec<u8>);

/// Every class the listener can ask for.
const ALL: u32 = class::GENERIC
    | class::STRING
    | class::LIST
    | class::SET
    | class::HASH
    | class::ZSET
    | class::EXPIRED
    | class::EVICTED
    | class::STREAM
    | class::KEY_MISS
    | class::NEW;

/// Notes every event.
#[derive(Default)]
struct Recorder(Mutex<Vec<Event>>);

impl KeyEvents for Recorder {
    fn events(&self, _keyspace: &str, events: &mut dyn Iterator<Item = (u32, &'static str, &[u8])>) {
        self.0.lock().extend(events.map(|(class, name, key)| (class, name.to_string(), key.to_vec())));
    }
}

/// A keyspace of a registry whose listener hears every class.
struct Heard {
    clock: Arc<ManualClock>,
    kv: Arc<Keyspace>,
    recorder: Arc<Recorder>,
    classes: Arc<AtomicU32>,
}

impl Heard {
    fn with_shards(shards: usize) -> Self {
        let clock = Arc::new(ManualClock::new(T0));
        let config = KeyspaceConfig { shards, ..KeyspaceConfig::default() };
        let spaces = Keyspaces::with_config(clock.clone(), config);
        let recorder = Arc::new(Recorder::default());
        let classes = Arc::new(AtomicU32::new(ALL));
        assert!(spaces.set_notify(recorder.clone(), classes.clone()));
        let kv = spaces.get_or_create("0");
        Heard { clock, kv, recorder, classes }
    }

    fn new() -> Self {
        Self::with_shards(1)
    }

    /// The events heard since the last call.
    fn take(&self) -> Vec<Event> {
        std::mem::take(&mut *self.recorder.0.lock())
    }
}

/// The expected events, written as (class, name, key).
fn events(list: &[(u32, &str, &str)]) -> Vec<Event> {
    list.iter().map(|(class, name, key)| (*class, name.to_string(), key.as_bytes().to_vec())).collect()
}

const G: u32 = class::GENERIC;
const S: u32 = class::STRING;
const L: u32 = class::LIST;
const SET: u32 = class::SET;
const H: u32 = class::HASH;
const Z: u32 = class::ZSET;
const NEW: u32 = class::NEW;
const X: u32 = class::EXPIRED;

fn opts() -> SetOptions {
    SetOptions::default()
}

#[test]
fn set_notes_new_before_set_and_nothing_when_blocked() {
    let h = Heard::new();
    h.kv.set(b"k", b"1", opts()).unwrap();
    assert_eq!(h.take(), events(&[(NEW, "new", "k"), (S, "set", "k")]));
    h.kv.set(b"k", b"2", opts()).unwrap();
    assert_eq!(h.take(), events(&[(S, "set", "k")]), "an overwrite is no new key");
    assert!(!h.kv.setnx(b"k", b"3").unwrap());
    let xx = SetOptions { condition: Some(SetCondition::Xx), ..opts() };
    assert!(!h.kv.set(b"missing", b"1", xx).unwrap().applied);
    assert_eq!(h.take(), events(&[]), "NX and XX that blocked the write");
    h.kv.set(b"k", b"4", SetOptions { expiry: Some(SetExpiry::Ex(10_000)), ..opts() }).unwrap();
    assert_eq!(h.take(), events(&[(S, "set", "k"), (G, "expire", "k")]));
    assert_eq!(h.kv.getset(b"k", b"5").unwrap().as_deref(), Some(&b"4"[..]));
    h.kv.mset(&[(b"a", b"1"), (b"k", b"6")]).unwrap();
    assert!(!h.kv.msetnx(&[(b"b", b"1"), (b"k", b"7")]).unwrap());
    assert_eq!(h.take(), events(&[(S, "set", "k"), (NEW, "new", "a"), (S, "set", "a"), (S, "set", "k")]));
    h.kv.hset(b"h", &[(b"f", b"v")]).unwrap();
    h.take();
    let get = SetOptions { get_old: true, ..opts() };
    assert_eq!(h.kv.set(b"h", b"1", get), Err(KvError::WrongType));
    assert_eq!(h.take(), events(&[]), "a refused SET");
}

#[test]
fn set_with_a_deadline_already_past_notes_the_key_gone() {
    let h = Heard::new();
    let past = SetOptions { expiry: Some(SetExpiry::At(T0 - 1)), ..opts() };
    h.kv.set(b"k", b"1", past).unwrap();
    // Redis stores the key and reclaims it later (`expired`); here it is gone at once.
    assert_eq!(h.take(), events(&[(NEW, "new", "k"), (S, "set", "k"), (G, "expire", "k"), (X, "expired", "k")]));
    assert_eq!(h.kv.get(b"k").unwrap(), None);
}

#[test]
fn string_updates_note_their_command() {
    let h = Heard::new();
    h.kv.append(b"s", b"ab").unwrap();
    h.kv.append(b"s", b"cd").unwrap();
    assert_eq!(h.take(), events(&[(NEW, "new", "s"), (S, "append", "s"), (S, "append", "s")]));
    h.kv.incr_by(b"n", 1).unwrap();
    h.kv.decr_by(b"n", 5).unwrap();
    h.kv.incr_by_float(b"n", 0.5).unwrap();
    assert_eq!(
        h.take(),
        events(&[(NEW, "new", "n"), (S, "incrby", "n"), (S, "incrby", "n"), (S, "incrbyfloat", "n")]),
        "INCR and DECRBY both note incrby"
    );
    assert_eq!(h.kv.incr_by(b"s", 1), Err(KvError::NotInteger));
    assert_eq!(h.kv.setrange(b"s", 1, b"").unwrap(), 4);
    assert_eq!(h.kv.setrange(b"none", 1, b"").unwrap(), 0);
    assert_eq!(h.take(), events(&[]), "a refused INCR, SETRANGE of nothing");
    h.kv.setrange(b"s", 1, b"Z").unwrap();
    assert_eq!(h.take(), events(&[(S, "setrange", "s")]));
    assert_eq!(h.kv.getdel(b"s").unwrap().as_deref(), Some(&b"aZcd"[..]));
    assert_eq!(h.kv.getdel(b"s").unwrap(), None);
    assert_eq!(h.take(), events(&[(G, "del", "s")]));
}

#[test]
fn setbit_notes_only_a_change() {
    let h = Heard::new();
    assert_eq!(h.kv.setbit(b"b", 3, false).unwrap(), 0);
    assert_eq!(h.take(), events(&[(NEW, "new", "b"), (S, "setbit", "b")]), "created, though the bit stays 0");
    h.kv.setbit(b"b", 3, false).unwrap();
    assert_eq!(h.take(), events(&[]), "the same bit again");
    h.kv.setbit(b"b", 3, true).unwrap();
    h.kv.setbit(b"b", 20, false).unwrap();
    assert_eq!(h.take(), events(&[(S, "setbit", "b"), (S, "setbit", "b")]), "flipped, then grown");
}

#[test]
fn getex_notes_expire_persist_or_del() {
    let h = Heard::new();
    h.kv.set(b"k", b"v", opts()).unwrap();
    h.take();
    h.kv.getex(b"k", None).unwrap();
    h.kv.getex(b"k", Some(None)).unwrap();
    assert_eq!(h.take(), events(&[]), "a plain GETEX, and PERSIST of a key without a TTL");
    h.kv.getex(b"k", Some(Some(SetExpiry::Ex(5_000)))).unwrap();
    h.kv.getex(b"k", Some(None)).unwrap();
    h.kv.getex(b"k", Some(Some(SetExpiry::At(T0 - 1)))).unwrap();
    assert_eq!(h.take(), events(&[(G, "expire", "k"), (G, "persist", "k"), (G, "del", "k")]));
}

#[test]
fn generic_commands_note_del_expire_and_persist() {
    let h = Heard::new();
    h.kv.mset(&[(b"a", b"1"), (b"b", b"2"), (b"c", b"3")]).unwrap();
    h.take();
    assert_eq!(h.kv.del(&[b"a", b"missing", b"b", b"a"]).unwrap(), 2);
    assert_eq!(h.take(), events(&[(G, "del", "a"), (G, "del", "b")]), "one del per key deleted");
    assert!(h.kv.expire_in_ms(b"c", 10_000).unwrap());
    assert!(!h.kv.expire_in_ms_if(b"c", 20_000, Some(ExpireCondition::Nx)).unwrap());
    assert!(!h.kv.expire_in_ms(b"missing", 10_000).unwrap());
    assert!(h.kv.persist(b"c").unwrap());
    assert!(!h.kv.persist(b"c").unwrap());
    assert_eq!(h.take(), events(&[(G, "expire", "c"), (G, "persist", "c")]));
    assert!(h.kv.expire_at_ms(b"c", (T0 - 1) as i64).unwrap());
    assert_eq!(h.take(), events(&[(G, "del", "c")]), "a deadline already past deletes the key");
    h.kv.set(b"d", b"1", opts()).unwrap();
    h.take();
    h.kv.flush().unwrap();
    assert_eq!(h.take(), events(&[]), "FLUSHDB notes nothing per key");
}

#[test]
fn a_write_meeting_an_expired_key_notes_expired_first() {
    let h = Heard::new();
    h.kv.set(b"k", b"1", SetOptions { expiry: Some(SetExpiry::Ex(100)), ..opts() }).unwrap();
    h.take();
    h.clock.advance(101);
    h.kv.incr_by(b"k", 1).unwrap();
    assert_eq!(h.take(), events(&[(X, "expired", "k"), (NEW, "new", "k"), (S, "incrby", "k")]));
}

#[test]
fn rename_and_copy_note_new_and_their_pair() {
    let h = Heard::new();
    h.kv.mset(&[(b"a", b"1"), (b"b", b"2")]).unwrap();
    h.take();
    h.kv.rename(b"a", b"b").unwrap();
    // Redis deletes the destination and adds it again, so `new` even though b existed.
    assert_eq!(h.take(), events(&[(NEW, "new", "b"), (G, "rename_from", "a"), (G, "rename_to", "b")]));
    assert!(!h.kv.rename_nx(b"b", b"b").unwrap());
    h.kv.set(b"c", b"3", opts()).unwrap();
    h.take();
    assert!(!h.kv.rename_nx(b"b", b"c").unwrap());
    assert!(!h.kv.copy(b"b", b"c", false).unwrap());
    assert_eq!(h.take(), events(&[]), "RENAMENX and COPY onto an existing key");
    assert!(h.kv.copy(b"b", b"c", true).unwrap());
    assert_eq!(h.take(), events(&[(NEW, "new", "c"), (G, "copy_to", "c")]));
    assert_eq!(h.kv.get(b"c").unwrap().as_deref(), Some(&b"1"[..]));
}

#[test]
fn list_writes_note_their_command_and_del_when_emptied() {
    let h = Heard::new();
    h.kv.push(b"l", End::Left, &[b"a", b"b"], false).unwrap();
    h.kv.push(b"l", End::Right, &[b"c"], true).unwrap();
    assert_eq!(h.kv.push(b"none", End::Left, &[b"a"], true).unwrap(), 0);
    assert_eq!(h.take(), events(&[(NEW, "new", "l"), (L, "lpush", "l"), (L, "rpush", "l")]), "one lpush for two");
    assert_eq!(h.kv.linsert(b"l", true, b"zz", b"x").unwrap(), -1);
    assert_eq!(h.kv.lrem(b"l", 0, b"zz").unwrap(), 0);
    assert_eq!(h.kv.lset(b"l", 9, b"x"), Err(KvError::IndexOutOfRange));
    assert_eq!(h.take(), events(&[]), "no pivot, nothing to remove, out of range");
    h.kv.linsert(b"l", false, b"a", b"x").unwrap();
    h.kv.lset(b"l", 0, b"y").unwrap();
    h.kv.lrem(b"l", 1, b"y").unwrap();
    h.kv.ltrim(b"l", 0, -1).unwrap();
    assert_eq!(
        h.take(),
        events(&[(L, "linsert", "l"), (L, "lset", "l"), (L, "lrem", "l"), (L, "ltrim", "l")]),
        "LTRIM keeping everything still notes ltrim"
    );
    assert_eq!(h.kv.pop(b"l", End::Left, 0).unwrap(), Some(vec![]));
    h.kv.pop(b"l", End::Left, 1).unwrap();
    h.kv.pop(b"l", End::Right, 5).unwrap();
    assert_eq!(h.take(), events(&[(L, "lpop", "l"), (L, "rpop", "l"), (G, "del", "l")]));
    h.kv.push(b"t", End::Right, &[b"a"], false).unwrap();
    h.kv.ltrim(b"t", 5, 10).unwrap();
    assert_eq!(h.take(), events(&[(NEW, "new", "t"), (L, "rpush", "t"), (L, "ltrim", "t"), (G, "del", "t")]));
    h.kv.push(b"m", End::Right, &[b"a"], false).unwrap();
    h.take();
    h.kv.lmpop(&[b"none", b"m"], End::Right, 3).unwrap();
    assert_eq!(h.take(), events(&[(L, "rpop", "m"), (G, "del", "m")]));
}

#[test]
fn lmove_notes_the_push_before_the_pop() {
    let h = Heard::new();
    h.kv.push(b"src", End::Right, &[b"a"], false).unwrap();
    h.take();
    h.kv.lmove(b"src", b"dst", End::Right, End::Left).unwrap();
    assert_eq!(
        h.take(),
        events(&[(NEW, "new", "dst"), (L, "lpush", "dst"), (L, "rpop", "src"), (G, "del", "src")]),
        "Redis' order: the destination's events, then the source's"
    );
    // RPOPLPUSH of a one-element list onto itself: the list never empties.
    assert_eq!(h.kv.lmove(b"dst", b"dst", End::Right, End::Left).unwrap().as_deref(), Some(&b"a"[..]));
    assert_eq!(h.take(), events(&[(L, "lpush", "dst"), (L, "rpop", "dst")]));
    assert_eq!(h.kv.lrange(b"dst", 0, -1).unwrap(), vec![b"a".to_vec()]);
    assert_eq!(h.kv.lmove(b"none", b"dst", End::Left, End::Left).unwrap(), None);
    assert_eq!(h.take(), events(&[]));
}

#[test]
fn moves_keep_redis_order_across_shards() {
    let h = Heard::with_shards(16);
    let router = Router::new(16);
    let shard = |key: &str| router.shard_of(hash_bytes(key.as_bytes()));
    // A source on a later shard than its destination: grouped by shard, the source's
    // events would come first.
    let names: Vec<String> = (0..64).map(|i| format!("k{i}")).collect();
    let (src, dst) = names
        .iter()
        .flat_map(|a| names.iter().map(move |b| (a, b)))
        .find(|(a, b)| shard(a) > shard(b))
        .expect("two keys on different shards");
    let (s, d) = (src.as_str(), dst.as_str());
    h.kv.push(src.as_bytes(), End::Right, &[b"a"], false).unwrap();
    h.take();
    h.kv.lmove(src.as_bytes(), dst.as_bytes(), End::Left, End::Right).unwrap();
    assert_eq!(h.take(), events(&[(NEW, "new", d), (L, "rpush", d), (L, "lpop", s), (G, "del", s)]));
    h.kv.rename(dst.as_bytes(), src.as_bytes()).unwrap();
    assert_eq!(h.take(), events(&[(NEW, "new", s), (G, "rename_from", d), (G, "rename_to", s)]));
    h.kv.del(&[src.as_bytes()]).unwrap();
    h.kv.sadd(src.as_bytes(), &[b"m"]).unwrap();
    h.take();
    assert!(h.kv.smove(src.as_bytes(), dst.as_bytes(), b"m").unwrap());
    assert_eq!(h.take(), events(&[(SET, "srem", s), (G, "del", s), (NEW, "new", d), (SET, "sadd", d)]));
}

#[test]
fn set_writes_note_only_changes() {
    let h = Heard::new();
    assert_eq!(h.kv.sadd(b"s", &[b"a", b"b", b"c"]).unwrap(), 3);
    assert_eq!(h.kv.sadd(b"s", &[b"a", b"b"]).unwrap(), 0);
    assert_eq!(h.kv.srem(b"s", &[b"zz"]).unwrap(), 0);
    assert_eq!(h.kv.srem(b"none", &[b"a"]).unwrap(), 0);
    assert_eq!(h.kv.spop(b"s", 0).unwrap(), Some(vec![]));
    assert_eq!(h.take(), events(&[(NEW, "new", "s"), (SET, "sadd", "s")]), "members present, absent, SPOP 0");
    h.kv.srem(b"s", &[b"a", b"zz"]).unwrap();
    h.kv.spop(b"s", 1).unwrap();
    h.kv.sadd(b"t", &[b"x"]).unwrap();
    h.take();
    let left = h.kv.smembers(b"s").unwrap().pop().unwrap();
    assert!(h.kv.smove(b"s", b"t", &left).unwrap());
    assert_eq!(h.take(), events(&[(SET, "srem", "s"), (G, "del", "s"), (SET, "sadd", "t")]));
    h.kv.sadd(b"u", &[b"x", b"y"]).unwrap();
    h.take();
    assert!(h.kv.smove(b"u", b"t", b"x").unwrap());
    assert_eq!(h.take(), events(&[(SET, "srem", "u")]), "the member was in the destination already");
    assert!(!h.kv.smove(b"u", b"t", b"zz").unwrap());
    assert_eq!(h.take(), events(&[]));
    h.kv.spop(b"u", 5).unwrap();
    assert_eq!(h.take(), events(&[(SET, "spop", "u"), (G, "del", "u")]));
}

#[test]
fn set_stores_note_their_command_or_del() {
    let h = Heard::new();
    h.kv.sadd(b"a", &[b"1", b"2"]).unwrap();
    h.kv.sadd(b"b", &[b"2"]).unwrap();
    h.take();
    h.kv.set_algebra_store(SetAlgebra::Inter, b"d", &[b"a", b"b"]).unwrap();
    h.kv.set_algebra_store(SetAlgebra::Union, b"d", &[b"a", b"b"]).unwrap();
    h.kv.set_algebra_store(SetAlgebra::Diff, b"d", &[b"a", b"b"]).unwrap();
    assert_eq!(
        h.take(),
        events(&[(NEW, "new", "d"), (SET, "sinterstore", "d"), (SET, "sunionstore", "d"), (SET, "sdiffstore", "d")])
    );
    h.kv.set_algebra_store(SetAlgebra::Inter, b"d", &[b"a", b"none"]).unwrap();
    h.kv.set_algebra_store(SetAlgebra::Inter, b"d", &[b"a", b"none"]).unwrap();
    assert_eq!(h.take(), events(&[(G, "del", "d")]), "an empty result deletes once");
}

#[test]
fn hash_writes_note_their_command_and_del_when_emptied() {
    let h = Heard::new();
    h.kv.hset(b"h", &[(b"f", b"1"), (b"g", b"2")]).unwrap();
    h.kv.hset(b"h", &[(b"f", b"1")]).unwrap();
    assert_eq!(h.take(), events(&[(NEW, "new", "h"), (H, "hset", "h"), (H, "hset", "h")]), "HSET notes even a rewrite");
    assert!(!h.kv.hsetnx(b"h", b"f", b"9").unwrap());
    assert_eq!(h.kv.hdel(b"h", &[b"zz"]).unwrap(), 0);
    assert_eq!(h.kv.hincr_by(b"h", b"g", i64::MAX), Err(KvError::Overflow));
    assert_eq!(h.take(), events(&[]), "HSETNX of a field present, HDEL of one absent, a refused HINCRBY");
    h.kv.hsetnx(b"h", b"n", b"1").unwrap();
    h.kv.hincr_by(b"h", b"n", 2).unwrap();
    h.kv.hincr_by_float(b"h", b"n", 0.5).unwrap();
    h.kv.hdel(b"h", &[b"f", b"g", b"n", b"zz"]).unwrap();
    assert_eq!(
        h.take(),
        events(&[(H, "hset", "h"), (H, "hincrby", "h"), (H, "hincrbyfloat", "h"), (H, "hdel", "h"), (G, "del", "h")])
    );
}

#[test]
fn zset_writes_note_once_and_only_changes() {
    let h = Heard::new();
    let add = ZAddOptions::default();
    h.kv.zadd(b"z", add, &[(1.0, b"a"), (2.0, b"b"), (3.0, b"c")]).unwrap();
    assert_eq!(h.take(), events(&[(NEW, "new", "z"), (Z, "zadd", "z")]), "one zadd for three members");
    h.kv.zadd(b"z", add, &[(1.0, b"a"), (2.0, b"b")]).unwrap();
    h.kv.zadd(b"z", ZAddOptions { xx: true, gt: true, ..add }, &[(0.0, b"c"), (9.0, b"new")]).unwrap();
    h.kv.zadd(b"none", ZAddOptions { xx: true, ..add }, &[(1.0, b"a")]).unwrap();
    assert_eq!(h.kv.zrem(b"z", &[b"zz"]).unwrap(), 0);
    assert_eq!(h.kv.zremrange(b"z", &ZRangeBy::Rank(5, 9)).unwrap(), 0);
    assert_eq!(h.kv.zpop(b"z", false, 0).unwrap(), Some(vec![]));
    assert_eq!(h.take(), events(&[]), "same scores, conditions, absent members, empty ranges, a pop of 0");
    let incr = ZAddOptions { incr: true, ..add };
    assert_eq!(h.kv.zadd(b"z", incr, &[(1.0, b"a")]).unwrap(), ZAddOutcome::Score(Some(2.0)));
    h.kv.zrem(b"z", &[b"a", b"zz"]).unwrap();
    let bound = |value| ScoreBound { value, exclusive: false };
    h.kv.zremrange(b"z", &ZRangeBy::Score(bound(2.0), bound(2.0))).unwrap();
    h.kv.zadd(b"z", add, &[(5.0, b"d"), (6.0, b"e")]).unwrap();
    h.kv.zpop(b"z", true, 1).unwrap();
    h.kv.zmpop(&[b"none", b"z"], false, 1).unwrap();
    assert_eq!(
        h.take(),
        events(&[
            (Z, "zincr", "z"),
            (Z, "zrem", "z"),
            (Z, "zremrangebyscore", "z"),
            (Z, "zadd", "z"),
            (Z, "zpopmax", "z"),
            (Z, "zpopmin", "z")
        ])
    );
    h.kv.zremrange(b"z", &ZRangeBy::Lex(LexBound::Min, LexBound::Max)).unwrap();
    assert_eq!(h.take(), events(&[(Z, "zremrangebylex", "z"), (G, "del", "z")]));
}

#[test]
fn stores_note_their_command_on_the_destination() {
    let h = Heard::new();
    h.kv.zadd(b"z", ZAddOptions::default(), &[(1.0, b"a"), (2.0, b"b")]).unwrap();
    h.kv.set(b"s1", b"\x0f", opts()).unwrap();
    h.kv.push(b"l", End::Right, &[b"3", b"1", b"2"], false).unwrap();
    h.take();
    let combine = Combine::default();
    h.kv.zalgebra_store(ZAlgebra::Union, b"d", &[b"z"], &combine).unwrap();
    h.kv.zalgebra_store(ZAlgebra::Inter, b"d", &[b"z"], &combine).unwrap();
    let all = ZRange { by: ZRangeBy::Rank(0, -1), rev: false, limit: None };
    h.kv.zrangestore(b"d", b"z", &all).unwrap();
    h.kv.zalgebra_store(ZAlgebra::Diff, b"d", &[b"z", b"z"], &combine).unwrap();
    assert_eq!(
        h.take(),
        events(&[
            (NEW, "new", "d"),
            (Z, "zunionstore", "d"),
            (Z, "zinterstore", "d"),
            (Z, "zrangestore", "d"),
            (G, "del", "d")
        ])
    );
    h.kv.bitop(BitOp::Not, b"b", &[b"s1"]).unwrap();
    h.kv.bitop(BitOp::And, b"b", &[b"none"]).unwrap();
    h.kv.sort_store(b"l", b"sorted", &SortOptions::default()).unwrap();
    h.kv.sort_store(b"none", b"sorted", &SortOptions::default()).unwrap();
    assert_eq!(
        h.take(),
        events(&[
            (NEW, "new", "b"),
            (S, "set", "b"),
            (G, "del", "b"),
            (NEW, "new", "sorted"),
            (L, "sortstore", "sorted"),
            (G, "del", "sorted")
        ])
    );
}

#[test]
fn refused_writes_note_nothing() {
    let h = Heard::new();
    h.kv.set(b"str", b"x", opts()).unwrap();
    h.kv.push(b"list", End::Left, &[b"x"], false).unwrap();
    h.take();
    assert_eq!(h.kv.push(b"str", End::Left, &[b"a"], false), Err(KvError::WrongType));
    assert_eq!(h.kv.sadd(b"str", &[b"a"]), Err(KvError::WrongType));
    assert_eq!(h.kv.hset(b"list", &[(b"f", b"v")]), Err(KvError::WrongType));
    assert_eq!(h.kv.zadd(b"list", ZAddOptions::default(), &[(1.0, b"a")]), Err(KvError::WrongType));
    assert_eq!(h.kv.append(b"list", b"a"), Err(KvError::WrongType));
    assert_eq!(h.kv.lmove(b"list", b"str", End::Left, End::Left), Err(KvError::WrongType));
    assert_eq!(h.kv.smove(b"str", b"list", b"a"), Err(KvError::WrongType));
    assert_eq!(h.take(), events(&[]));
}

#[test]
fn no_class_enabled_means_no_events() {
    let h = Heard::new();
    h.classes.store(0, Ordering::SeqCst);
    h.kv.set(b"k", b"1", opts()).unwrap();
    h.kv.push(b"l", End::Left, &[b"a"], false).unwrap();
    h.kv.pop(b"l", End::Left, 1).unwrap();
    h.kv.del(&[b"k"]).unwrap();
    assert_eq!(h.take(), events(&[]));
    h.classes.store(class::GENERIC, Ordering::SeqCst);
    h.kv.set(b"k", b"2", opts()).unwrap();
    // The keyspace notes every event while any class is on; filtering is the listener's.
    assert_eq!(h.take(), events(&[(NEW, "new", "k"), (S, "set", "k")]));
}
