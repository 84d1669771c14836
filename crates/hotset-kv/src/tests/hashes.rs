//! Hash command tests.
//!
//! Owns: HSET/HGET/HMGET/HGETALL/HDEL/HINCRBY*/HKEYS/HVALS semantics, removal
//! of emptied hashes, WRONGTYPE on strings, large hashes across compaction.
//!
//! Must never: depend on field order (storage order is unspecified).
//!
//! Invariants: each test builds its own keyspace.

use super::{keyspace, some};
use crate::{KvError, KvOps, SetOptions};

fn sorted<T: Ord>(mut v: Vec<T>) -> Vec<T> {
    v.sort();
    v
}

#[test]
fn hset_hget_hmget_hgetall() {
    let (_, ks) = keyspace();
    assert_eq!(ks.hset(b"h", &[(b"a", b"1"), (b"b", b"2")]).unwrap(), 2);
    assert_eq!(ks.hset(b"h", &[(b"a", b"9"), (b"c", b"3"), (b"c", b"4")]).unwrap(), 1);
    assert_eq!(ks.hget(b"h", b"a").unwrap(), some(b"9"));
    assert_eq!(ks.hget(b"h", b"zz").unwrap(), None);
    assert_eq!(ks.hget(b"missing", b"a").unwrap(), None);
    assert_eq!(ks.hmget(b"h", &[b"c", b"nope", b"b"]).unwrap(), vec![some(b"4"), None, some(b"2")]);
    assert_eq!(ks.hmget(b"missing", &[b"a"]).unwrap(), vec![None]);
    assert_eq!(
        sorted(ks.hgetall(b"h").unwrap()),
        vec![(b"a".to_vec(), b"9".to_vec()), (b"b".to_vec(), b"2".to_vec()), (b"c".to_vec(), b"4".to_vec())]
    );
    assert_eq!(sorted(ks.hkeys(b"h").unwrap()), vec![b"a".to_vec(), b"b".to_vec(), b"c".to_vec()]);
    assert_eq!(sorted(ks.hvals(b"h").unwrap()), vec![b"2".to_vec(), b"4".to_vec(), b"9".to_vec()]);
    assert_eq!(ks.hlen(b"h").unwrap(), 3);
    assert_eq!(ks.hstrlen(b"h", b"a").unwrap(), 1);
    assert_eq!(ks.hstrlen(b"h", b"zz").unwrap(), 0);
    assert!(ks.hexists(b"h", b"a").unwrap());
    assert!(!ks.hexists(b"h", b"zz").unwrap());
    assert!(ks.hgetall(b"missing").unwrap().is_empty());
}

#[test]
fn hsetnx_only_sets_missing_fields() {
    let (_, ks) = keyspace();
    assert!(ks.hsetnx(b"h", b"f", b"1").unwrap());
    assert!(!ks.hsetnx(b"h", b"f", b"2").unwrap());
    assert_eq!(ks.hget(b"h", b"f").unwrap(), some(b"1"));
}

#[test]
fn hdel_removes_empty_hash() {
    let (_, ks) = keyspace();
    ks.hset(b"h", &[(b"a", b"1"), (b"b", b"2")]).unwrap();
    ks.expire_in_ms(b"h", 1_000).unwrap();
    assert_eq!(ks.hdel(b"h", &[b"a", b"a", b"zz"]).unwrap(), 1);
    assert_eq!(ks.key_type(b"h").unwrap(), "hash");
    assert_eq!(ks.hdel(b"h", &[b"b"]).unwrap(), 1);
    assert_eq!(ks.key_type(b"h").unwrap(), "none");
    assert_eq!(ks.exists(&[b"h"]).unwrap(), 0);
    assert_eq!(ks.dbsize().unwrap(), 0);
    assert_eq!(ks.volatile_len(), 0, "its TTL went with it");
    assert_eq!(ks.memory_bytes(), 0);
    assert_eq!(ks.hdel(b"h", &[b"b"]).unwrap(), 0);
    // HSET with no pairs creates nothing.
    assert_eq!(ks.hset(b"e", &[]).unwrap(), 0);
    assert_eq!(ks.exists(&[b"e"]).unwrap(), 0);
}

#[test]
fn hincr_by_and_float() {
    let (_, ks) = keyspace();
    assert_eq!(ks.hincr_by(b"h", b"n", 5).unwrap(), 5);
    assert_eq!(ks.hincr_by(b"h", b"n", -7).unwrap(), -2);
    assert_eq!(ks.hget(b"h", b"n").unwrap(), some(b"-2"));
    ks.hset(b"h", &[(b"s", b"abc"), (b"big", b"9223372036854775807"), (b"z", b"01")]).unwrap();
    assert_eq!(ks.hincr_by(b"h", b"s", 1), Err(KvError::HashNotInteger));
    assert_eq!(ks.hincr_by(b"h", b"z", 1), Err(KvError::HashNotInteger));
    assert_eq!(ks.hincr_by(b"h", b"big", 1), Err(KvError::Overflow));
    assert_eq!(ks.hincr_by_float(b"h", b"f", 10.5).unwrap(), b"10.5");
    assert_eq!(ks.hincr_by_float(b"h", b"f", 0.5).unwrap(), b"11");
    assert_eq!(ks.hincr_by_float(b"h", b"s", 1.0), Err(KvError::HashNotFloat));
    assert_eq!(ks.hincr_by_float(b"h", b"f", f64::INFINITY), Err(KvError::NanOrInfinity));
    assert_eq!(ks.hget(b"h", b"f").unwrap(), some(b"11"));
    // A failed HINCRBY on a missing key must not create an empty hash.
    assert_eq!(ks.hincr_by_float(b"new", b"f", f64::NAN), Err(KvError::NanOrInfinity));
    assert_eq!(ks.exists(&[b"new"]).unwrap(), 0);
}

#[test]
fn hash_commands_on_strings_are_wrongtype() {
    let (_, ks) = keyspace();
    ks.set(b"s", b"v", SetOptions::default()).unwrap();
    let wrong = Err(KvError::WrongType);
    assert_eq!(ks.hset(b"s", &[(b"f", b"v")]), wrong);
    assert_eq!(ks.hsetnx(b"s", b"f", b"v").map(|_| 0), wrong);
    assert_eq!(ks.hget(b"s", b"f").map(|_| 0), wrong);
    assert_eq!(ks.hmget(b"s", &[b"f"]).map(|_| 0), wrong);
    assert_eq!(ks.hgetall(b"s").map(|_| 0), wrong);
    assert_eq!(ks.hdel(b"s", &[b"f"]), wrong);
    assert_eq!(ks.hexists(b"s", b"f").map(|_| 0), wrong);
    assert_eq!(ks.hlen(b"s"), wrong);
    assert_eq!(ks.hincr_by(b"s", b"f", 1).map(|_| 0), wrong);
    assert_eq!(ks.hincr_by_float(b"s", b"f", 1.0).map(|_| 0), wrong);
    assert_eq!(ks.hkeys(b"s").map(|_| 0), wrong);
    assert_eq!(ks.hscan(b"s", 0, None, 10).map(|_| 0), wrong);
    assert_eq!(ks.get(b"s").unwrap(), some(b"v"));
}

#[test]
fn many_fields_survive_deletes_and_compaction() {
    let (_, ks) = keyspace();
    let fields: Vec<Vec<u8>> = (0..2_000).map(|i| format!("f{i}").into_bytes()).collect();
    for f in &fields {
        ks.hset(b"h", &[(f.as_slice(), f.as_slice())]).unwrap();
    }
    let doomed: Vec<&[u8]> = fields.iter().skip(1).step_by(2).map(Vec::as_slice).collect();
    assert_eq!(ks.hdel(b"h", &doomed).unwrap(), 1_000);
    let doomed: Vec<&[u8]> = fields.iter().step_by(4).map(Vec::as_slice).collect();
    assert_eq!(ks.hdel(b"h", &doomed).unwrap(), 500);
    assert_eq!(ks.hlen(b"h").unwrap(), 500);
    for (i, f) in fields.iter().enumerate() {
        let expected = (i % 4 == 2).then(|| f.clone());
        assert_eq!(ks.hget(b"h", f).unwrap(), expected);
    }
}
