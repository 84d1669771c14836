//! Eviction: which keys each policy takes, what it leaves, and the access stamps it reads.
//!
//! The stamps' meaning (LRU or LFU) is process-wide, as in Redis, so these tests take
//! turns through `MODE`.

use std::sync::{Arc, Mutex};

use super::T0;
use crate::recency::set_lfu_mode;
use crate::{EvictionPolicy, Evictor, Keyspaces, KvOps, RestoreOptions, SetExpiry, SetOptions};
use hotset_base::clock::ManualClock;
use hotset_base::journal::Durability;

static MODE: Mutex<()> = Mutex::new(());

fn registry() -> (Arc<ManualClock>, Keyspaces) {
    let clock = Arc::new(ManualClock::new(T0));
    (clock.clone(), Keyspaces::new(clock))
}

fn with_ttl(ms: u64) -> SetOptions {
    SetOptions { expiry: Some(SetExpiry::Ex(ms)), ..SetOptions::default() }
}

/// Evicts `count` keys by `policy` (sampling `samples`), returning how many went.
fn evict(spaces: &Keyspaces, policy: EvictionPolicy, samples: usize, count: usize) -> usize {
    let mut evictor = Evictor::default();
    (0..count)
        .map_while(|_| spaces.evict_one(policy, samples, &mut evictor, Durability::Wait).unwrap())
        .inspect(|evicted| assert!(evicted.bytes > 0 && !evicted.expired))
        .count()
}

#[test]
fn volatile_policies_take_only_keys_with_a_deadline_and_then_stop() {
    let _turn = MODE.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    set_lfu_mode(false);
    for policy in [
        EvictionPolicy::VolatileLru,
        EvictionPolicy::VolatileLfu,
        EvictionPolicy::VolatileRandom,
        EvictionPolicy::VolatileTtl,
    ] {
        let (_, spaces) = registry();
        let db = spaces.get_or_create("0");
        for i in 0..200 {
            db.set(format!("keep:{i}").as_bytes(), b"v", SetOptions::default()).unwrap();
            db.set(format!("ttl:{i}").as_bytes(), b"v", with_ttl(60_000)).unwrap();
        }
        // A second keyspace: eviction reaches every one.
        let other = spaces.get_or_create("1");
        other.set(b"ttl:other", b"v", with_ttl(60_000)).unwrap();
        assert_eq!(evict(&spaces, policy, 5, 1000), 201, "{policy:?} evicts every volatile key, then nothing");
        assert_eq!(db.volatile_len() + other.volatile_len(), 0, "{policy:?}");
        assert_eq!(db.len(), 200, "{policy:?} kept every key without a deadline");
    }
}

#[test]
fn volatile_ttl_takes_the_soonest_deadlines_first() {
    let _turn = MODE.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let (_, spaces) = registry();
    let db = spaces.get_or_create("0");
    for i in 0..1000u64 {
        db.set(format!("k{i}").as_bytes(), b"v", with_ttl(1_000 + i * 1_000)).unwrap();
    }
    assert_eq!(evict(&spaces, EvictionPolicy::VolatileTtl, 64, 500), 500);
    // Sampled, as in Redis: not exactly the first 500, but the survivors lean late.
    let early_left = (0..250u64).filter(|i| db.exists(&[format!("k{i}").as_bytes()]).unwrap() == 1).count();
    let late_left = (750..1000u64).filter(|i| db.exists(&[format!("k{i}").as_bytes()]).unwrap() == 1).count();
    assert!(
        early_left < 25 && late_left > 225,
        "{early_left} of the soonest 250 and {late_left} of the latest 250 stayed"
    );
}

#[test]
fn allkeys_lru_takes_keys_idle_longest_and_lfu_those_used_least() {
    let _turn = MODE.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    for (policy, lfu) in [(EvictionPolicy::AllKeysLru, false), (EvictionPolicy::AllKeysLfu, true)] {
        set_lfu_mode(lfu);
        let (clock, spaces) = registry();
        let db = spaces.get_or_create("0");
        for i in 0..1000 {
            db.set(format!("k{i}").as_bytes(), b"v", SetOptions::default()).unwrap();
        }
        // Minutes later the even keys are read (many times: LFU counts them up).
        clock.advance(300_000);
        for _ in 0..20 {
            for i in (0..1000).step_by(2) {
                db.get(format!("k{i}").as_bytes()).unwrap();
            }
        }
        assert_eq!(evict(&spaces, policy, 10, 500), 500);
        let used_left = (0..1000).step_by(2).filter(|i| db.exists(&[format!("k{i}").as_bytes()]).unwrap() == 1).count();
        assert!(used_left > 400, "{policy:?}: {used_left} of the 500 keys in use stayed");
    }
    set_lfu_mode(false);
}

#[test]
fn no_eviction_and_an_empty_server_evict_nothing() {
    let _turn = MODE.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let (_, spaces) = registry();
    assert_eq!(evict(&spaces, EvictionPolicy::AllKeysRandom, 5, 10), 0);
    spaces.get_or_create("0").set(b"k", b"v", SetOptions::default()).unwrap();
    assert_eq!(evict(&spaces, EvictionPolicy::NoEviction, 5, 10), 0);
    assert_eq!(evict(&spaces, EvictionPolicy::AllKeysRandom, 5, 10), 1);
}

#[test]
fn idle_time_counts_from_the_last_access_and_reads_of_metadata_are_none() {
    let _turn = MODE.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    set_lfu_mode(false);
    let (clock, spaces) = registry();
    let db = spaces.get_or_create("0");
    db.set(b"k", b"v", SetOptions::default()).unwrap();
    clock.advance(42_500);
    // TYPE, EXISTS, TTL and OBJECT itself are no access (Redis' LOOKUP_NOTOUCH).
    db.key_type(b"k").unwrap();
    db.exists(&[b"k"]).unwrap();
    db.ttl_ms(b"k").unwrap();
    assert_eq!(db.object_access(b"k").unwrap().unwrap().idle_secs, 42);
    db.get(b"k").unwrap();
    assert_eq!(db.object_access(b"k").unwrap().unwrap().idle_secs, 0);
    assert_eq!(db.object_access(b"missing").unwrap(), None);
    // RESTORE IDLETIME under LRU; FREQ is ignored then.
    let payload = db.dump(b"k").unwrap().unwrap();
    let options = RestoreOptions { idle_secs: Some(1000), freq: Some(100), ..RestoreOptions::default() };
    db.restore(b"r", 0, &payload, options).unwrap();
    assert_eq!(db.object_access(b"r").unwrap().unwrap().idle_secs, 1000);
}

#[test]
fn frequency_starts_at_five_grows_with_use_and_restore_sets_it() {
    let _turn = MODE.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    set_lfu_mode(true);
    let (clock, spaces) = registry();
    let db = spaces.get_or_create("0");
    db.set(b"k", b"v", SetOptions::default()).unwrap();
    assert_eq!(db.object_access(b"k").unwrap().unwrap().freq, 5);
    for _ in 0..200 {
        db.get(b"k").unwrap();
    }
    let used = db.object_access(b"k").unwrap().unwrap().freq;
    assert!(used > 5, "200 reads left the counter at {used}");
    // One unit lost per idle minute (lfu-decay-time 1).
    clock.advance(3 * 60_000);
    assert_eq!(db.object_access(b"k").unwrap().unwrap().freq, used - 3);
    let payload = db.dump(b"k").unwrap().unwrap();
    let options = RestoreOptions { freq: Some(100), idle_secs: Some(7), ..RestoreOptions::default() };
    db.restore(b"r", 0, &payload, options).unwrap();
    assert_eq!(db.object_access(b"r").unwrap().unwrap().freq, 100);
    set_lfu_mode(false);
}
