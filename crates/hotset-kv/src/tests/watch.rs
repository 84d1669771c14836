//! The WATCH hook: which keys a write reports, and only while something is watched.
//!
//! Owns: `Keyspaces::set_watch` seen from a watcher, with no journal attached (the hook
//! must not depend on logging).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::T0;
use crate::{End, KeyWatch, Keyspaces, KvOps, SetOptions};
use hotset_base::clock::ManualClock;
use parking_lot::Mutex;

/// One report: the keyspace, its keys (sorted, once each), whether it was flushed.
type Report = (String, Vec<Vec<u8>>, bool);

/// Notes every report.
#[derive(Default)]
struct Recorder(Mutex<Vec<Report>>);

impl KeyWatch for Recorder {
    fn touched(&self, keyspace: &str, keys: &mut dyn Iterator<Item = &[u8]>, flushed: bool) {
        let mut keys: Vec<Vec<u8>> = keys.map(<[u8]>::to_vec).collect();
        keys.sort();
        keys.dedup();
        self.0.lock().push((keyspace.to_string(), keys, flushed));
    }
}

#[test]
fn writes_report_the_keys_they_changed_while_anything_is_watched() {
    let spaces = Keyspaces::new(Arc::new(ManualClock::new(T0)));
    let recorder = Arc::new(Recorder::default());
    let count = Arc::new(AtomicUsize::new(0));
    assert!(spaces.set_watch(recorder.clone(), count.clone()));
    assert!(!spaces.set_watch(recorder.clone(), count.clone()), "one watcher per registry");
    let kv = spaces.get_or_create("0");
    kv.set(b"unwatched", b"1", SetOptions::default()).unwrap();
    assert!(recorder.0.lock().is_empty(), "nothing is watched: no report");
    count.store(1, Ordering::SeqCst);
    kv.mset(&[(b"a", b"1"), (b"b", b"2")]).unwrap();
    kv.hset(b"h", &[(b"f", b"v")]).unwrap();
    kv.hset(b"h", &[(b"g", b"v")]).unwrap();
    kv.push(b"l", End::Left, &[b"x"], false).unwrap();
    kv.push(b"l", End::Left, &[b"y"], false).unwrap();
    kv.sadd(b"s", &[b"m"]).unwrap();
    kv.sadd(b"s", &[b"n"]).unwrap();
    assert_eq!(kv.get(b"a").unwrap().as_deref(), Some(&b"1"[..]), "a read reports nothing");
    let other = spaces.get_or_create("1");
    other.flush().unwrap();
    let reports = std::mem::take(&mut *recorder.0.lock());
    let keys = |key: &[u8]| (String::from("0"), vec![key.to_vec()], false);
    assert_eq!(
        reports,
        vec![
            ("0".into(), vec![b"a".to_vec(), b"b".to_vec()], false),
            keys(b"h"),
            keys(b"h"),
            keys(b"l"),
            keys(b"l"),
            keys(b"s"),
            keys(b"s"),
            ("1".into(), vec![], true),
        ]
    );
}
