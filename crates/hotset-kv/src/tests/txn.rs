//! Atomic block (MULTI/EXEC hook) tests.
//!
//! Owns: commands inside `Keyspace::atomic`/`atomic_all`, `KeyNotLocked`
//! for undeclared keys (with no partial effects), and the block's single
//! instant.
//!
//! Must never: call the keyspace directly inside a block (that deadlocks by
//! design).
//!
//! Invariants: each test builds its own keyspace.

use super::{keyspace, some};
use crate::{KvError, KvOps, SetOptions};

#[test]
fn atomic_block_exposes_all_commands() {
    let (_, ks) = keyspace();
    ks.set(b"from", b"100", SetOptions::default()).unwrap();
    let moved = ks.atomic(&[b"from", b"to"], |txn| {
        let balance = txn.incr_by(b"from", -30)?;
        txn.incr_by(b"to", 30)?;
        txn.hset(b"to:meta", &[(b"last", b"30")]).ok();
        Ok::<_, KvError>(balance)
    });
    assert_eq!(moved, Ok(Ok(70)));
    assert_eq!(ks.mget(&[b"from", b"to"]).unwrap(), vec![some(b"70"), some(b"30")]);
}

#[test]
fn undeclared_keys_fail_without_side_effects() {
    let (_, ks) = keyspace();
    // Find two keys on different shards.
    let a = b"a".to_vec();
    let b = (0..1_000)
        .map(|i| format!("b{i}").into_bytes())
        .find(|b| ks.atomic(&[&a], |t| t.get(b)) == Ok(Err(KvError::KeyNotLocked)))
        .expect("some key lives on another shard");
    ks.atomic(&[&a], |txn| {
        assert_eq!(txn.set(&b, b"x", SetOptions::default()), Err(KvError::KeyNotLocked));
        assert_eq!(txn.mset(&[(&a, b"1"), (&b, b"2")]), Err(KvError::KeyNotLocked));
        assert_eq!(txn.dbsize(), Err(KvError::KeyNotLocked));
        assert_eq!(txn.get(&a), Ok(None), "MSET was all-or-nothing");
    })
    .unwrap();
    ks.atomic_all(|txn| {
        txn.mset(&[(&a, b"1"), (&b, b"2")]).unwrap();
        assert_eq!(txn.dbsize(), Ok(2));
        assert_eq!(txn.keys(b"*").unwrap().len(), 2);
        txn.flush().unwrap();
    })
    .unwrap();
    assert_eq!(ks.dbsize().unwrap(), 0);
}

#[test]
fn atomic_block_sees_one_instant() {
    let (clock, ks) = keyspace();
    ks.set(b"k", b"v", SetOptions::default()).unwrap();
    ks.expire_in_ms(b"k", 10).unwrap();
    ks.atomic(&[b"k"], |txn| {
        let start = txn.now_ms();
        clock.advance(1_000);
        assert_eq!(txn.now_ms(), start);
        assert_eq!(txn.get(b"k").unwrap(), some(b"v"), "still the block's instant");
        assert_eq!(txn.ttl_ms(b"k").unwrap(), 10);
    })
    .unwrap();
    assert_eq!(ks.get(b"k").unwrap(), None);
}
