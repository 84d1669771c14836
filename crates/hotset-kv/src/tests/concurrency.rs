//! Multi-threaded tests of the locking design.
//!
//! Owns: checks that counters never lose increments, that MSET/MGET pairs
//! are never observed half-written, and that atomic blocks conserve totals.
//!
//! Must never: sleep or rely on timing for correctness; thread counts and
//! iterations are fixed, so the asserted totals are exact.
//!
//! Invariants: every spawned thread is joined before the final assertions.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::{self, JoinHandle};

use super::T0;
use crate::{Keyspace, KvOps};
use hotset_base::clock::ManualClock;

const THREADS: usize = 4;
const ITERS: usize = 2_000;

fn shared_keyspace() -> Arc<Keyspace> {
    Arc::new(Keyspace::new(Arc::new(ManualClock::new(T0))))
}

fn parse(bytes: Option<Vec<u8>>) -> i64 {
    std::str::from_utf8(&bytes.expect("value present")).unwrap().parse().unwrap()
}

fn spawn_incrementers(ks: &Arc<Keyspace>, counters: &[Vec<u8>]) -> Vec<JoinHandle<()>> {
    (0..THREADS)
        .map(|t| {
            let (ks, counters) = (Arc::clone(ks), counters.to_vec());
            thread::spawn(move || {
                for i in 0..ITERS {
                    ks.incr_by(&counters[(t + i) % counters.len()], 1).unwrap();
                }
            })
        })
        .collect()
}

fn spawn_pair_writers(ks: &Arc<Keyspace>, pairs: &[(Vec<u8>, Vec<u8>)]) -> Vec<JoinHandle<()>> {
    (0..2)
        .map(|w| {
            let (ks, pairs) = (Arc::clone(ks), pairs.to_vec());
            thread::spawn(move || {
                for i in 0..ITERS {
                    let (l, r) = &pairs[i % pairs.len()];
                    let v = format!("{w}-{i}").into_bytes();
                    ks.mset(&[(l, &v), (r, &v)]).unwrap();
                }
            })
        })
        .collect()
}

/// Readers run until `stop` and at least 1 000 checks.
fn spawn_pair_readers(ks: &Arc<Keyspace>, pairs: &[(Vec<u8>, Vec<u8>)], stop: &Arc<AtomicBool>) -> Vec<JoinHandle<()>> {
    (0..2)
        .map(|_| {
            let (ks, pairs, stop) = (Arc::clone(ks), pairs.to_vec(), Arc::clone(stop));
            thread::spawn(move || {
                let mut checks = 0usize;
                while !stop.load(Ordering::Relaxed) || checks < 1_000 {
                    let (l, r) = &pairs[checks % pairs.len()];
                    let got = ks.mget(&[l, r]).unwrap();
                    assert_eq!(got[0], got[1], "MGET saw a torn MSET");
                    checks += 1;
                }
            })
        })
        .collect()
}

#[test]
fn concurrent_incr_loses_nothing_and_pairs_stay_consistent() {
    let ks = shared_keyspace();
    let counters: Vec<Vec<u8>> = (0..3).map(|i| format!("counter:{i}").into_bytes()).collect();
    let pairs: Vec<(Vec<u8>, Vec<u8>)> =
        (0..8).map(|i| (format!("left:{i}").into_bytes(), format!("right:{i}").into_bytes())).collect();
    let stop = Arc::new(AtomicBool::new(false));
    let mut writers = spawn_incrementers(&ks, &counters);
    writers.extend(spawn_pair_writers(&ks, &pairs));
    let readers = spawn_pair_readers(&ks, &pairs, &stop);
    for h in writers {
        h.join().unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    // A reader that saw a torn pair panicked; joining surfaces it. (Each ran at least
    // 1,000 checks by its loop condition, so there is nothing to assert about the count.)
    for r in readers {
        r.join().unwrap();
    }
    let mut expected = vec![0i64; counters.len()];
    for t in 0..THREADS {
        for i in 0..ITERS {
            expected[(t + i) % counters.len()] += 1;
        }
    }
    for (c, want) in counters.iter().zip(&expected) {
        assert_eq!(parse(ks.get(c).unwrap()), *want);
    }
}

#[test]
fn concurrent_atomic_transfers_conserve_the_total() {
    let ks = shared_keyspace();
    let accounts: Vec<Vec<u8>> = (0..6).map(|i| format!("acct:{i}").into_bytes()).collect();
    for a in &accounts {
        ks.incr_by(a, 1_000).unwrap();
    }
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let (ks, accounts) = (Arc::clone(&ks), accounts.clone());
            thread::spawn(move || {
                let keys: Vec<&[u8]> = accounts.iter().map(Vec::as_slice).collect();
                for i in 0..ITERS {
                    let from = keys[(t + i) % keys.len()];
                    let to = keys[(t * 3 + i * 7 + 1) % keys.len()];
                    ks.atomic(&[from, to], |txn| {
                        txn.incr_by(from, -1).unwrap();
                        txn.incr_by(to, 1).unwrap();
                    })
                    .unwrap();
                    // MGET of every account must always see the same total.
                    let sum: i64 = ks.mget(&keys).unwrap().into_iter().map(parse).sum();
                    assert_eq!(sum, 6_000);
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
}
