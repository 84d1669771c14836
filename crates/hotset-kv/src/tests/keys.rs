//! Generic key command tests.
//!
//! Owns: DEL/EXISTS counting, EXPIRE family incl. past deadlines and
//! NX/XX/GT/LT, PTTL -2/-1, TYPE, RENAME keeping the TTL, DBSIZE/FLUSH, KEYS,
//! lazy and active expiry, memory accounting and the `Keyspaces` registry.
//!
//! Must never: sleep; time only moves through the `ManualClock`.
//!
//! Invariants: each test builds its own keyspace.

use std::sync::Arc;

use super::{T0, keyspace, keyspace_with, some};
use crate::{ExpireCondition, KeyspaceConfig, Keyspaces, KvError, KvOps, SetExpiry, SetOptions};
use hotset_base::clock::ManualClock;

#[test]
fn del_and_exists_count_like_redis() {
    let (_, ks) = keyspace();
    ks.mset(&[(b"a", b"1"), (b"b", b"2")]).unwrap();
    ks.hset(b"h", &[(b"f", b"v")]).unwrap();
    assert_eq!(ks.exists(&[b"a", b"a", b"b", b"h", b"zz"]).unwrap(), 4);
    assert_eq!(ks.del(&[b"a", b"a", b"zz", b"h"]).unwrap(), 2);
    assert_eq!(ks.exists(&[b"a", b"h"]).unwrap(), 0);
    assert_eq!(ks.dbsize().unwrap(), 1);
    assert_eq!(ks.del(&[]).unwrap(), 0);
    assert_eq!(ks.exists(&[]).unwrap(), 0);
}

#[test]
fn ttl_values_and_persist() {
    let (clock, ks) = keyspace();
    assert_eq!(ks.ttl_ms(b"k").unwrap(), -2);
    assert_eq!(ks.expire_time_ms(b"k").unwrap(), -2);
    assert!(!ks.expire_in_ms(b"k", 100).unwrap(), "missing key");
    assert!(!ks.persist(b"k").unwrap());
    ks.set(b"k", b"v", SetOptions::default()).unwrap();
    assert_eq!(ks.ttl_ms(b"k").unwrap(), -1);
    assert_eq!(ks.expire_time_ms(b"k").unwrap(), -1);
    assert!(!ks.persist(b"k").unwrap());
    assert!(ks.expire_in_ms(b"k", 1_500).unwrap());
    assert_eq!(ks.ttl_ms(b"k").unwrap(), 1_500);
    assert_eq!(ks.expire_time_ms(b"k").unwrap(), (T0 + 1_500) as i64);
    clock.advance(1_500);
    // Redis keeps the key at the exact deadline (PTTL 0) and drops it after.
    assert_eq!(ks.ttl_ms(b"k").unwrap(), 0);
    assert_eq!(ks.get(b"k").unwrap(), some(b"v"));
    clock.advance(1);
    assert_eq!(ks.ttl_ms(b"k").unwrap(), -2);
    assert_eq!(ks.get(b"k").unwrap(), None);
    ks.set(b"p", b"v", SetOptions::default()).unwrap();
    ks.expire_at_ms(b"p", (T0 + 10_000) as i64).unwrap();
    assert!(ks.persist(b"p").unwrap());
    assert_eq!(ks.ttl_ms(b"p").unwrap(), -1);
    // "k" expired but was only read (read locks cannot delete): it still
    // counts as volatile until active expiry reclaims it.
    assert_eq!(ks.volatile_len(), 1);
    assert_eq!(ks.expired_keys(), 0, "a read skips an expired key without deleting it");
    assert_eq!(ks.active_expire_cycle(100), 1);
    assert_eq!(ks.volatile_len(), 0);
    assert_eq!(ks.expired_keys(), 1);
    // A write that meets an expired key deletes it, and counts it too.
    ks.set(b"w", b"v", SetOptions { expiry: Some(SetExpiry::Ex(10)), ..SetOptions::default() }).unwrap();
    clock.advance(11);
    ks.append(b"w", b"x").unwrap();
    assert_eq!(ks.expired_keys(), 2);
}

#[test]
fn expire_in_past_or_zero_deletes() {
    let (_, ks) = keyspace();
    for ms in [-1_000, -1, 0] {
        ks.set(b"k", b"v", SetOptions::default()).unwrap();
        assert!(ks.expire_in_ms(b"k", ms).unwrap());
        assert_eq!(ks.exists(&[b"k"]).unwrap(), 0, "ms = {ms}");
        assert_eq!(ks.dbsize().unwrap(), 0, "deleted, not just hidden");
    }
    ks.set(b"k", b"v", SetOptions::default()).unwrap();
    assert!(ks.expire_at_ms(b"k", -5).unwrap());
    assert_eq!(ks.ttl_ms(b"k").unwrap(), -2);
    ks.set(b"k", b"v", SetOptions::default()).unwrap();
    assert!(ks.expire_at_ms(b"k", T0 as i64).unwrap());
    assert_eq!(ks.ttl_ms(b"k").unwrap(), -2);
    assert_eq!(ks.expire_in_ms(b"k", i64::MAX), Err(KvError::InvalidExpireTime { command: "expire" }));
}

#[test]
fn expire_conditions() {
    let (_, ks) = keyspace();
    ks.set(b"k", b"v", SetOptions::default()).unwrap();
    let at = |ms: u64| (T0 + ms) as i64;
    assert!(!ks.expire_at_ms_if(b"k", at(100), Some(ExpireCondition::Xx)).unwrap());
    assert!(!ks.expire_at_ms_if(b"k", at(100), Some(ExpireCondition::Gt)).unwrap());
    assert!(ks.expire_at_ms_if(b"k", at(100), Some(ExpireCondition::Nx)).unwrap());
    assert!(!ks.expire_at_ms_if(b"k", at(200), Some(ExpireCondition::Nx)).unwrap());
    assert!(!ks.expire_at_ms_if(b"k", at(50), Some(ExpireCondition::Gt)).unwrap());
    assert!(ks.expire_at_ms_if(b"k", at(200), Some(ExpireCondition::Gt)).unwrap());
    assert!(!ks.expire_at_ms_if(b"k", at(300), Some(ExpireCondition::Lt)).unwrap());
    assert!(ks.expire_in_ms_if(b"k", 150, Some(ExpireCondition::Lt)).unwrap());
    assert_eq!(ks.ttl_ms(b"k").unwrap(), 150);
    assert!(ks.expire_in_ms_if(b"k", 500, Some(ExpireCondition::Xx)).unwrap());
    assert_eq!(ks.ttl_ms(b"k").unwrap(), 500);
    // LT with a past time passes the condition and deletes the key.
    assert!(ks.expire_in_ms_if(b"k", -1, Some(ExpireCondition::Lt)).unwrap());
    assert_eq!(ks.exists(&[b"k"]).unwrap(), 0);
}

#[test]
fn key_type_reports_kind() {
    let (_, ks) = keyspace();
    ks.set(b"s", b"v", SetOptions::default()).unwrap();
    ks.incr_by(b"i", 3).unwrap();
    ks.hset(b"h", &[(b"f", b"v")]).unwrap();
    assert_eq!(ks.key_type(b"s").unwrap(), "string");
    assert_eq!(ks.key_type(b"i").unwrap(), "string");
    assert_eq!(ks.key_type(b"h").unwrap(), "hash");
    assert_eq!(ks.key_type(b"none").unwrap(), "none");
}

#[test]
fn rename_moves_value_and_ttl() {
    let (clock, ks) = keyspace();
    assert_eq!(ks.rename(b"src", b"dst"), Err(KvError::NoSuchKey));
    assert_eq!(ks.rename_nx(b"src", b"dst"), Err(KvError::NoSuchKey));
    let ex = SetOptions { expiry: Some(SetExpiry::Ex(1_000)), ..SetOptions::default() };
    ks.set(b"src", b"v", ex).unwrap();
    ks.hset(b"dst", &[(b"f", b"v")]).unwrap();
    clock.advance(100);
    ks.rename(b"src", b"dst").unwrap();
    assert_eq!(ks.get(b"src").unwrap(), None);
    assert_eq!(ks.get(b"dst").unwrap(), some(b"v"), "hash destination overwritten");
    assert_eq!(ks.ttl_ms(b"dst").unwrap(), 900, "TTL travels with the value");
    assert_eq!(ks.volatile_len(), 1);
    // Renaming onto itself is a no-op; RENAMENX onto itself says 0.
    ks.rename(b"dst", b"dst").unwrap();
    assert!(!ks.rename_nx(b"dst", b"dst").unwrap());
    assert_eq!(ks.get(b"dst").unwrap(), some(b"v"));
    ks.set(b"other", b"o", SetOptions::default()).unwrap();
    assert!(!ks.rename_nx(b"dst", b"other").unwrap());
    assert!(ks.rename_nx(b"dst", b"third").unwrap());
    assert_eq!(ks.get(b"third").unwrap(), some(b"v"));
    // An expired source is "no such key".
    clock.advance(1_000);
    assert_eq!(ks.rename(b"third", b"x"), Err(KvError::NoSuchKey));
}

#[test]
fn flush_and_dbsize() {
    let (_, ks) = keyspace();
    for i in 0..100 {
        ks.set(format!("k{i}").as_bytes(), b"v", SetOptions::default()).unwrap();
    }
    assert_eq!(ks.dbsize().unwrap(), 100);
    assert_eq!(ks.len(), 100);
    ks.flush().unwrap();
    assert_eq!(ks.dbsize().unwrap(), 0);
    assert!(ks.is_empty());
    assert_eq!(ks.memory_bytes(), 0);
}

#[test]
fn keys_pattern_filters_and_skips_expired() {
    let (clock, ks) = keyspace();
    for k in ["user:1", "user:2", "user:10", "order:1", ""] {
        ks.set(k.as_bytes(), b"v", SetOptions::default()).unwrap();
    }
    ks.expire_in_ms(b"user:10", 10).unwrap();
    let sorted = |mut v: Vec<Vec<u8>>| {
        v.sort();
        v
    };
    assert_eq!(ks.keys(b"*").unwrap().len(), 5, "`*` includes the empty key");
    assert_eq!(sorted(ks.keys(b"user:?").unwrap()), vec![b"user:1".to_vec(), b"user:2".to_vec()]);
    clock.advance(11);
    assert_eq!(sorted(ks.keys(b"user:*").unwrap()).len(), 2);
    assert_eq!(ks.keys(b"*:1").unwrap().len(), 2);
}

#[test]
fn lazy_expiry_never_returns_expired_keys() {
    let (clock, ks) = keyspace();
    let ex = SetOptions { expiry: Some(SetExpiry::Ex(10)), ..SetOptions::default() };
    ks.set(b"s", b"v", ex).unwrap();
    ks.hset(b"h", &[(b"f", b"1")]).unwrap();
    ks.expire_in_ms(b"h", 10).unwrap();
    clock.advance(11);
    assert_eq!(ks.get(b"s").unwrap(), None);
    assert_eq!(ks.mget(&[b"s"]).unwrap(), vec![None]);
    assert_eq!(ks.strlen(b"s").unwrap(), 0);
    assert_eq!(ks.exists(&[b"s", b"h"]).unwrap(), 0);
    assert_eq!(ks.hget(b"h", b"f").unwrap(), None);
    assert_eq!(ks.hlen(b"h").unwrap(), 0);
    assert_eq!(ks.key_type(b"h").unwrap(), "none");
    assert!(ks.keys(b"*").unwrap().is_empty());
    assert!(ks.scan(0, None, 100).unwrap().1.is_empty());
    // Writes see a fresh key: INCR starts from 0, SET NX succeeds, HINCRBY
    // starts a new hash without the old TTL.
    assert_eq!(ks.incr_by(b"s", 5).unwrap(), 5);
    assert_eq!(ks.ttl_ms(b"s").unwrap(), -1);
    assert_eq!(ks.hincr_by(b"h", b"f", 2).unwrap(), 2);
    assert_eq!(ks.ttl_ms(b"h").unwrap(), -1);
}

#[test]
fn active_expiry_reclaims_untouched_keys() {
    let (clock, ks) = keyspace();
    for i in 0..1_000u32 {
        let key = format!("k{i}");
        ks.set(key.as_bytes(), b"v", SetOptions::default()).unwrap();
        if i % 2 == 0 {
            ks.expire_in_ms(key.as_bytes(), 100 + u64::from(i % 4) as i64).unwrap();
        }
    }
    assert_eq!(ks.volatile_len(), 500);
    assert_eq!(ks.active_expire_cycle(10_000), 0, "nothing due yet");
    clock.advance(102);
    // Keys with i % 4 == 0 (deadline +100) are due; those with +102 are not.
    let mut removed = 0;
    for _ in 0..100 {
        removed += ks.active_expire_cycle(64);
    }
    assert_eq!(removed, 250);
    assert_eq!(ks.len(), 750);
    assert_eq!(ks.volatile_len(), 250);
    clock.advance(1);
    assert_eq!(ks.active_expire_cycle(usize::MAX / 2), 250);
    assert_eq!(ks.len(), 500);
    assert_eq!(ks.volatile_len(), 0);
    assert_eq!(ks.active_expire_cycle(100), 0);
}

#[test]
fn memory_accounting_is_incremental_and_returns_to_zero() {
    let (clock, ks) = keyspace();
    assert_eq!(ks.memory_bytes(), 0);
    ks.set(b"a", b"hello", SetOptions::default()).unwrap();
    let one = ks.memory_bytes();
    assert!(one >= 6, "key + value counted: {one}");
    ks.set(b"a", &[b'x'; 1_000], SetOptions::default()).unwrap();
    assert!(ks.memory_bytes() >= one + 995);
    ks.append(b"a", &[b'y'; 1_000]).unwrap();
    assert!(ks.memory_bytes() >= 2_000);
    ks.hset(b"h", &[(b"f1", &[b'z'; 500]), (b"f2", b"v")]).unwrap();
    let with_hash = ks.memory_bytes();
    ks.hdel(b"h", &[b"f1"]).unwrap();
    assert!(ks.memory_bytes() + 500 <= with_hash);
    ks.incr_by(b"n", 1).unwrap();
    ks.expire_in_ms(b"n", 5).unwrap();
    ks.rename(b"a", b"b").unwrap();
    ks.del(&[b"b", b"h"]).unwrap();
    clock.advance(10);
    ks.active_expire_cycle(100);
    assert_eq!(ks.memory_bytes(), 0);
    assert!(ks.is_empty());
}

#[test]
fn shard_count_is_normalised() {
    for (asked, got) in [(0, 1), (1, 1), (3, 4), (16, 16), (100, 128), (1 << 20, 1 << 16)] {
        let config = KeyspaceConfig { shards: asked, ..KeyspaceConfig::default() };
        let (_, ks) = keyspace_with(config);
        assert_eq!(ks.shard_count(), got);
        ks.set(b"k", b"v", SetOptions::default()).unwrap();
        assert_eq!(ks.get(b"k").unwrap(), some(b"v"));
    }
}

#[test]
fn registry_manages_named_keyspaces() {
    let clock = Arc::new(ManualClock::new(T0));
    let dbs = Keyspaces::new(clock.clone());
    assert!(dbs.get("0").is_none());
    let zero = dbs.create("0").unwrap();
    assert_eq!(dbs.create("0").unwrap_err(), KvError::KeyspaceExists("0".into()));
    let again = dbs.get_or_create("0");
    assert!(Arc::ptr_eq(&zero, &again));
    dbs.get_or_create("15");
    dbs.create("analytics").unwrap();
    assert_eq!(dbs.list(), vec!["0", "15", "analytics"]);
    zero.set(b"k", b"v", SetOptions::default()).unwrap();
    assert_eq!(dbs.get("15").unwrap().get(b"k").unwrap(), None, "databases are separate");
    zero.expire_in_ms(b"k", 5).unwrap();
    clock.advance(6);
    assert_eq!(dbs.active_expire_cycle(10), 1);
    assert!(dbs.drop("15").unwrap());
    assert!(!dbs.drop("15").unwrap());
    assert_eq!(dbs.list(), vec!["0", "analytics"]);
}
