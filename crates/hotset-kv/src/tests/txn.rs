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

/// A key whose shard is not `a`'s.
fn on_another_shard(ks: &crate::Keyspace, a: &[u8]) -> Vec<u8> {
    (0..1_000)
        .map(|i| format!("b{i}").into_bytes())
        .find(|b| ks.atomic(&[a], |t| t.get(b)) == Ok(Err(KvError::KeyNotLocked)))
        .expect("some key lives on another shard")
}

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
    let b = on_another_shard(&ks, &a);
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
fn a_block_takes_more_shards_only_when_they_are_free() {
    let (_, ks) = keyspace();
    let a = b"a".to_vec();
    let b = on_another_shard(&ks, &a);
    let ks = std::sync::Arc::new(ks);
    let (held_tx, held_rx) = std::sync::mpsc::channel();
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let holder = {
        let (ks, b) = (std::sync::Arc::clone(&ks), b.clone());
        std::thread::spawn(move || {
            ks.atomic(&[&b], |_| {
                held_tx.send(()).unwrap();
                done_rx.recv().unwrap();
            })
            .unwrap();
        })
    };
    held_rx.recv().unwrap();
    ks.atomic(&[&a], |txn| {
        txn.set(&a, b"1", SetOptions::default()).unwrap();
        assert!(!txn.try_lock_more(Some(&[&b])), "another block holds b's shard: not waited for");
        assert_eq!(txn.set(&b, b"2", SetOptions::default()), Err(KvError::KeyNotLocked));
        assert!(!txn.try_lock_more(None), "nor every shard");
    })
    .unwrap();
    done_tx.send(()).unwrap();
    holder.join().unwrap();
    ks.atomic(&[&a], |txn| {
        assert!(txn.try_lock_more(Some(&[&b])), "free now");
        txn.set(&b, b"2", SetOptions::default()).unwrap();
        assert!(txn.try_lock_more(None));
        assert_eq!(txn.dbsize(), Ok(2), "every shard held");
    })
    .unwrap();
    assert_eq!(ks.mget(&[&a, &b]).unwrap(), vec![some(b"1"), some(b"2")]);
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
