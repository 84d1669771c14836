//! Writes across two keyspaces (MOVE, COPY with DB, SWAPDB): one record for both, and
//! no deadlock however they interleave.
//!
//! Owns: `Keyspace::{move_key, copy_key_to, swap_with}` seen through a recording journal
//! and from racing threads.

use std::sync::Arc;

use super::T0;
use crate::{KeyspaceConfig, Keyspaces, KvOps, SetOptions};
use hotset_base::clock::ManualClock;
use hotset_base::journal::{Durability, Journal, JournalError, JournalSlot};
use hotset_base::record::{Target, parts, target};
use parking_lot::Mutex;

/// Keeps every record's payload.
#[derive(Default)]
struct Recording(Mutex<Vec<Vec<u8>>>);

impl Journal for Recording {
    fn writable(&self) -> Result<(), JournalError> {
        Ok(())
    }
    fn append(&self, encode: &mut dyn FnMut(&mut Vec<u8>)) -> u64 {
        let mut payload = Vec::new();
        encode(&mut payload);
        let mut records = self.0.lock();
        records.push(payload);
        records.len() as u64
    }
    fn wait(&self, _: u64) -> Result<(), JournalError> {
        Ok(())
    }
}

fn logged() -> (Keyspaces, Arc<Recording>) {
    let slot = JournalSlot::default();
    let journal = Arc::new(Recording::default());
    assert!(slot.attach(journal.clone()));
    (Keyspaces::with_journal(Arc::new(ManualClock::new(T0)), KeyspaceConfig::default(), slot), journal)
}

/// The keyspaces a record's parts name, in order.
fn targets(record: &[u8]) -> Vec<String> {
    let named = |bytes: &[u8]| match target(bytes).unwrap() {
        Target::Keyspace(name) => name.to_string(),
        other => panic!("not a keyspace change: {other:?}"),
    };
    match target(record).unwrap() {
        Target::Group => parts(record).unwrap().into_iter().map(named).collect(),
        _ => vec![named(record)],
    }
}

#[test]
fn a_move_a_copy_and_a_swap_are_each_one_record_naming_both_keyspaces() {
    let (spaces, journal) = logged();
    let (a, b) = (spaces.get_or_create("a"), spaces.get_or_create("b"));
    a.set(b"k", b"v", SetOptions::default()).unwrap();
    a.set(b"c", b"w", SetOptions::default()).unwrap();
    journal.0.lock().clear();
    assert!(a.move_key(b"k", &b, Durability::Wait).unwrap());
    assert!(!a.move_key(b"k", &b, Durability::Wait).unwrap(), "gone from a");
    assert!(a.copy_key_to(b"c", &b, b"c2", false, Durability::Wait).unwrap());
    b.swap_with(&a, Durability::Wait).unwrap();
    let records = journal.0.lock().clone();
    let names: Vec<Vec<String>> = records.iter().map(|record| targets(record)).collect();
    assert_eq!(
        names,
        [&["a", "b"][..], &["b"], &["b", "a"]].map(|names| names.iter().map(|n| n.to_string()).collect::<Vec<_>>()),
        "the move, the copy (only b changed) and the swap; the failed move logs nothing"
    );
    assert_eq!(a.get(b"k").unwrap().as_deref(), Some(&b"v"[..]), "swapped back into a");
    assert_eq!(a.get(b"c2").unwrap().as_deref(), Some(&b"w"[..]));
    assert_eq!(b.get(b"c").unwrap().as_deref(), Some(&b"w"[..]));
    assert_eq!((a.dbsize().unwrap(), b.dbsize().unwrap()), (2, 1));
}

#[test]
fn moves_in_both_directions_and_swaps_at_once_never_deadlock_or_lose_a_key() {
    let spaces = Keyspaces::new(Arc::new(ManualClock::new(T0)));
    let (a, b) = (spaces.get_or_create("a"), spaces.get_or_create("b"));
    let keys: Vec<Vec<u8>> = (0..64).map(|i| format!("k{i}").into_bytes()).collect();
    for key in &keys {
        a.set(key, b"x", SetOptions::default()).unwrap();
    }
    std::thread::scope(|scope| {
        for (from, to) in [(&a, &b), (&b, &a)] {
            let keys = &keys;
            scope.spawn(move || {
                for round in 0..2000 {
                    from.move_key(&keys[round % keys.len()], to, Durability::Wait).unwrap();
                }
            });
        }
        scope.spawn(|| {
            for _ in 0..200 {
                a.swap_with(&b, Durability::Wait).unwrap();
            }
        });
    });
    let total = a.dbsize().unwrap() + b.dbsize().unwrap();
    assert_eq!(total, keys.len(), "every key is in exactly one keyspace");
}
