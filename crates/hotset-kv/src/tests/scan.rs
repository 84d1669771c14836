//! SCAN/HSCAN tests.
//!
//! Owns: the completeness guarantee (every key present for the whole scan is
//! returned) under inserts, deletes, slot reuse and compaction; cursor
//! termination, COUNT bounds and MATCH filtering.
//!
//! Must never: assert on order or on the absence of duplicates while the
//! keyspace changes — Redis promises neither.
//!
//! Invariants: churn happens between SCAN calls, exactly as concurrent
//! clients would interleave with a server-side cursor.

use std::collections::BTreeSet;

use super::{keyspace, keyspace_with};
use crate::{KeyspaceConfig, KvOps, SetOptions};

fn key(i: usize) -> Vec<u8> {
    format!("key:{i}").into_bytes()
}

fn set(ks: &impl KvOps, k: &[u8]) {
    ks.set(k, b"v", SetOptions::default()).unwrap();
}

/// Runs a full SCAN, calling `between` after every step; returns all keys
/// seen and the number of calls.
fn full_scan(
    ks: &impl KvOps,
    pattern: Option<&[u8]>,
    count: usize,
    mut between: impl FnMut(usize),
) -> (Vec<Vec<u8>>, usize) {
    let (mut cursor, mut seen, mut calls) = (0, Vec::new(), 0);
    loop {
        let (next, keys) = ks.scan(cursor, pattern, count).unwrap();
        seen.extend(keys);
        calls += 1;
        assert!(calls < 100_000, "scan must terminate");
        if next == 0 {
            return (seen, calls);
        }
        between(calls);
        cursor = next;
    }
}

#[test]
fn scan_empty_and_small() {
    let (_, ks) = keyspace();
    assert_eq!(ks.scan(0, None, 10).unwrap(), (0, vec![]));
    for i in 0..10 {
        set(&ks, &key(i));
    }
    let (seen, _) = full_scan(&ks, None, 1_000, |_| {});
    assert_eq!(seen.len(), 10);
    let (seen, _) = full_scan(&ks, Some(b"key:1*"), 3, |_| {});
    assert_eq!(seen, vec![key(1)]);
    // COUNT 0 behaves as 1 and still terminates.
    let (seen, _) = full_scan(&ks, None, 0, |_| {});
    assert_eq!(seen.len(), 10);
}

#[test]
fn scan_returns_every_stable_key_despite_churn() {
    let (_, ks) = keyspace_with(KeyspaceConfig { shards: 8, ..KeyspaceConfig::default() });
    // Stable keys: present for the whole scan. Churn keys: constantly
    // deleted and re-created, plus a stream of brand-new keys, so slots are
    // freed, reused and appended while the cursor moves.
    let stable: BTreeSet<Vec<u8>> = (0..3_000).map(key).collect();
    for k in &stable {
        set(&ks, k);
    }
    let churn = |i: usize| format!("churn:{i}").into_bytes();
    for i in 0..3_000 {
        set(&ks, &churn(i));
    }
    let mut next_new = 3_000;
    let (seen, calls) = full_scan(&ks, None, 7, |step| {
        for j in 0..20 {
            let victim = churn((step * 37 + j * 101) % next_new);
            ks.del(&[&victim]).unwrap();
            set(&ks, &churn(next_new));
            next_new += 1;
            if j % 3 == 0 {
                set(&ks, &victim);
            }
        }
    });
    let seen: BTreeSet<Vec<u8>> = seen.into_iter().collect();
    let missing: Vec<_> = stable.difference(&seen).collect();
    assert!(missing.is_empty(), "{} stable keys missed", missing.len());
    assert!(calls > 100, "the scan really was interleaved with churn");
}

#[test]
fn scan_survives_compaction_mid_iteration() {
    let (_, ks) = keyspace_with(KeyspaceConfig { shards: 2, ..KeyspaceConfig::default() });
    let stable: BTreeSet<Vec<u8>> = (0..500).map(key).collect();
    for k in &stable {
        set(&ks, k);
    }
    let doomed: Vec<Vec<u8>> = (0..5_000).map(|i| format!("tmp:{i}").into_bytes()).collect();
    for k in &doomed {
        set(&ks, k);
    }
    // Mid-scan, delete nearly everything else: the slabs become sparse and
    // compact, moving the stable keys; stale cursors must restart, not skip.
    let (seen, _) = full_scan(&ks, Some(b"key:*"), 50, |step| {
        if step == 20 {
            let refs: Vec<&[u8]> = doomed.iter().map(Vec::as_slice).collect();
            assert_eq!(ks.del(&refs).unwrap(), doomed.len());
        }
    });
    let seen: BTreeSet<Vec<u8>> = seen.into_iter().collect();
    assert_eq!(seen, stable);
}

#[test]
fn scan_cursor_is_bounded_by_count() {
    let (_, ks) = keyspace();
    for i in 0..1_000 {
        set(&ks, &key(i));
    }
    let (_, first) = ks.scan(0, None, 10).unwrap();
    assert!(first.len() <= 10);
    let (seen, calls) = full_scan(&ks, None, 10, |_| {});
    assert_eq!(seen.len(), 1_000, "no churn: exactly once each");
    assert!(calls >= 100);
    let huge_cursor = u64::MAX;
    assert_eq!(ks.scan(huge_cursor, None, 10).unwrap(), (0, vec![]));
}

#[test]
fn hscan_returns_every_stable_field_despite_churn() {
    let (_, ks) = keyspace();
    let stable: BTreeSet<Vec<u8>> = (0..1_000).map(|i| format!("s{i}").into_bytes()).collect();
    for f in &stable {
        ks.hset(b"h", &[(f.as_slice(), b"v")]).unwrap();
    }
    let (mut cursor, mut seen, mut step) = (0, BTreeSet::new(), 0);
    loop {
        let (next, pairs) = ks.hscan(b"h", cursor, None, 5).unwrap();
        seen.extend(pairs.into_iter().map(|(f, _)| f));
        if next == 0 {
            break;
        }
        step += 1;
        let tmp = format!("t{step}").into_bytes();
        ks.hset(b"h", &[(tmp.as_slice(), b"x")]).unwrap();
        if step % 2 == 0 {
            let old = format!("t{}", step - 1).into_bytes();
            ks.hdel(b"h", &[old.as_slice()]).unwrap();
        }
        cursor = next;
    }
    assert!(stable.is_subset(&seen));
    let (next, pairs) = ks.hscan(b"h", 0, Some(b"s1?"), 10_000).unwrap();
    assert_eq!(next, 0);
    assert_eq!(pairs.len(), 10);
    assert_eq!(ks.hscan(b"missing", 0, None, 10).unwrap(), (0, vec![]));
}
