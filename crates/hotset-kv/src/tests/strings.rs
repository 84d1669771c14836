//! String command tests.
//!
//! Owns: GET/SET flag combinations (NX/XX/KEEPTTL/GET/EX/PXAT), counters and
//! their overflow/format errors, INCRBYFLOAT formatting, APPEND, MSET/MSETNX,
//! the size limit, BITOP and the exact Redis error texts.
//!
//! Must never: sleep; time only moves through the `ManualClock`.
//!
//! Invariants: each test builds its own keyspace.

use super::{keyspace, keyspace_with, some};
use crate::{BitOp, KeyspaceConfig, KvError, KvLimits, KvOps, SetCondition, SetExpiry, SetOptions, SetOutcome};
use hotset_base::clock::Clock;

fn opts() -> SetOptions {
    SetOptions::default()
}

#[test]
fn get_set_roundtrip_preserves_exact_bytes() {
    let (_, ks) = keyspace();
    assert_eq!(ks.get(b"k").unwrap(), None);
    for value in [&b"hello"[..], b"", b"42", b"-7", b"007", b"+5", b"-0", b"1.50", b"9223372036854775808", b"\x00\xff"]
    {
        ks.set(b"k", value, opts()).unwrap();
        assert_eq!(ks.get(b"k").unwrap(), some(value), "{value:?}");
        assert_eq!(ks.strlen(b"k").unwrap(), value.len());
    }
    assert_eq!(ks.strlen(b"missing").unwrap(), 0);
}

#[test]
fn set_nx_xx() {
    let (_, ks) = keyspace();
    let nx = SetOptions { condition: Some(SetCondition::Nx), ..opts() };
    let xx = SetOptions { condition: Some(SetCondition::Xx), ..opts() };
    assert!(!ks.set(b"k", b"1", xx).unwrap().applied);
    assert_eq!(ks.get(b"k").unwrap(), None);
    assert!(ks.set(b"k", b"1", nx).unwrap().applied);
    assert!(!ks.set(b"k", b"2", nx).unwrap().applied);
    assert_eq!(ks.get(b"k").unwrap(), some(b"1"));
    assert!(ks.set(b"k", b"3", xx).unwrap().applied);
    assert_eq!(ks.get(b"k").unwrap(), some(b"3"));
    assert!(ks.setnx(b"n", b"a").unwrap());
    assert!(!ks.setnx(b"n", b"b").unwrap());
    assert_eq!(ks.get(b"n").unwrap(), some(b"a"));
}

#[test]
fn set_get_option_combinations() {
    let (_, ks) = keyspace();
    let get = SetOptions { get_old: true, ..opts() };
    assert_eq!(ks.set(b"k", b"1", get).unwrap(), SetOutcome { applied: true, old: None });
    assert_eq!(ks.set(b"k", b"2", get).unwrap(), SetOutcome { applied: true, old: some(b"1") });
    // NX + GET on an existing key: not written, old value still returned.
    let nx_get = SetOptions { condition: Some(SetCondition::Nx), ..get };
    assert_eq!(ks.set(b"k", b"3", nx_get).unwrap(), SetOutcome { applied: false, old: some(b"2") });
    // XX + GET on a missing key.
    let xx_get = SetOptions { condition: Some(SetCondition::Xx), ..get };
    assert_eq!(ks.set(b"none", b"3", xx_get).unwrap(), SetOutcome { applied: false, old: None });
    // GET against a hash is WRONGTYPE and writes nothing; plain SET overwrites.
    ks.hset(b"h", &[(b"f", b"v")]).unwrap();
    assert_eq!(ks.set(b"h", b"x", get), Err(KvError::WrongType));
    assert_eq!(ks.key_type(b"h").unwrap(), "hash");
    assert!(ks.set(b"h", b"x", opts()).unwrap().applied);
    assert_eq!(ks.get(b"h").unwrap(), some(b"x"));
    assert_eq!(ks.getset(b"h", b"y").unwrap(), some(b"x"));
    assert_eq!(ks.getset(b"fresh", b"y").unwrap(), None);
}

#[test]
fn set_expiry_and_keepttl() {
    let (clock, ks) = keyspace();
    let ex = SetOptions { expiry: Some(SetExpiry::Ex(1_000)), ..opts() };
    ks.set(b"k", b"v", ex).unwrap();
    assert_eq!(ks.ttl_ms(b"k").unwrap(), 1_000);
    clock.advance(400);
    let keep = SetOptions { keep_ttl: true, ..opts() };
    ks.set(b"k", b"v2", keep).unwrap();
    assert_eq!(ks.ttl_ms(b"k").unwrap(), 600);
    // A plain SET clears the TTL.
    ks.set(b"k", b"v3", opts()).unwrap();
    assert_eq!(ks.ttl_ms(b"k").unwrap(), -1);
    // KEEPTTL on a new key means no TTL.
    ks.set(b"new", b"v", keep).unwrap();
    assert_eq!(ks.ttl_ms(b"new").unwrap(), -1);
    // Absolute expiry.
    let at = SetOptions { expiry: Some(SetExpiry::At(clock.now_ms() + 50)), ..opts() };
    ks.set(b"k", b"v", at).unwrap();
    assert_eq!(ks.ttl_ms(b"k").unwrap(), 50);
    // XX + KEEPTTL + GET together.
    let combo = SetOptions { condition: Some(SetCondition::Xx), keep_ttl: true, get_old: true, ..opts() };
    assert_eq!(ks.set(b"k", b"w", combo).unwrap().old, some(b"v"));
    assert_eq!(ks.ttl_ms(b"k").unwrap(), 50);
    clock.advance(51);
    assert_eq!(ks.get(b"k").unwrap(), None);
}

#[test]
fn set_expiry_validation() {
    let (clock, ks) = keyspace();
    let invalid = Err(KvError::InvalidExpireTime { command: "set" });
    for expiry in [SetExpiry::Ex(0), SetExpiry::At(0), SetExpiry::Ex(u64::MAX)] {
        let o = SetOptions { expiry: Some(expiry), ..opts() };
        assert_eq!(ks.set(b"k", b"v", o), invalid);
    }
    let both = SetOptions { expiry: Some(SetExpiry::Ex(5)), keep_ttl: true, ..opts() };
    assert_eq!(ks.set(b"k", b"v", both), Err(KvError::Syntax));
    assert_eq!(ks.get(b"k").unwrap(), None);
    // PXAT in the past: the write "happens" but the key ends up gone.
    ks.set(b"k", b"old", opts()).unwrap();
    let past = SetOptions { expiry: Some(SetExpiry::At(clock.now_ms())), get_old: true, ..opts() };
    assert_eq!(ks.set(b"k", b"new", past).unwrap(), SetOutcome { applied: true, old: some(b"old") });
    assert_eq!(ks.get(b"k").unwrap(), None);
    assert_eq!(ks.dbsize().unwrap(), 0);
}

#[test]
fn getdel_and_append() {
    let (clock, ks) = keyspace();
    assert_eq!(ks.getdel(b"k").unwrap(), None);
    assert_eq!(ks.append(b"k", b"12").unwrap(), 2);
    assert_eq!(ks.append(b"k", b"34").unwrap(), 4);
    assert_eq!(ks.incr_by(b"k", 1).unwrap(), 1235);
    assert_eq!(ks.append(b"k", b"x").unwrap(), 5);
    assert_eq!(ks.get(b"k").unwrap(), some(b"1235x"));
    ks.expire_in_ms(b"k", 100).unwrap();
    ks.append(b"k", b"y").unwrap();
    assert_eq!(ks.ttl_ms(b"k").unwrap(), 100, "APPEND keeps the TTL");
    assert_eq!(ks.getdel(b"k").unwrap(), some(b"1235xy"));
    assert_eq!(ks.exists(&[b"k"]).unwrap(), 0);
    ks.hset(b"h", &[(b"f", b"v")]).unwrap();
    assert_eq!(ks.getdel(b"h"), Err(KvError::WrongType));
    assert_eq!(ks.append(b"h", b"x"), Err(KvError::WrongType));
    assert_eq!(ks.strlen(b"h"), Err(KvError::WrongType));
    assert_eq!(ks.get(b"h"), Err(KvError::WrongType));
    clock.advance(1);
    assert_eq!(ks.hlen(b"h").unwrap(), 1);
}

#[test]
fn incr_decr_semantics() {
    let (clock, ks) = keyspace();
    assert_eq!(ks.incr_by(b"c", 1).unwrap(), 1);
    assert_eq!(ks.incr_by(b"c", 41).unwrap(), 42);
    assert_eq!(ks.decr_by(b"c", 50).unwrap(), -8);
    assert_eq!(ks.get(b"c").unwrap(), some(b"-8"));
    ks.set(b"c", b"9223372036854775806", opts()).unwrap();
    assert_eq!(ks.incr_by(b"c", 1).unwrap(), i64::MAX);
    assert_eq!(ks.incr_by(b"c", 1), Err(KvError::Overflow));
    assert_eq!(ks.get(b"c").unwrap(), some(b"9223372036854775807"));
    ks.set(b"m", b"-9223372036854775808", opts()).unwrap();
    assert_eq!(ks.decr_by(b"m", 1), Err(KvError::Overflow));
    assert_eq!(ks.decr_by(b"x", i64::MIN), Err(KvError::DecrementOverflow));
    for bad in [&b"abc"[..], b"01", b" 1", b"1.5", b"", b"+1", b"99999999999999999999"] {
        ks.set(b"bad", bad, opts()).unwrap();
        assert_eq!(ks.incr_by(b"bad", 1), Err(KvError::NotInteger), "{bad:?}");
        assert_eq!(ks.get(b"bad").unwrap(), some(bad));
    }
    ks.hset(b"h", &[(b"f", b"1")]).unwrap();
    assert_eq!(ks.incr_by(b"h", 1), Err(KvError::WrongType));
    // INCR keeps the TTL.
    ks.set(b"t", b"5", opts()).unwrap();
    ks.expire_in_ms(b"t", 1_000).unwrap();
    clock.advance(10);
    assert_eq!(ks.incr_by(b"t", 1).unwrap(), 6);
    assert_eq!(ks.ttl_ms(b"t").unwrap(), 990);
}

#[test]
fn incr_by_float_formatting_and_errors() {
    let (_, ks) = keyspace();
    ks.set(b"f", b"10.50", opts()).unwrap();
    assert_eq!(ks.incr_by_float(b"f", 0.1).unwrap(), b"10.6");
    assert_eq!(ks.incr_by_float(b"f", -5.0).unwrap(), b"5.6");
    assert_eq!(ks.get(b"f").unwrap(), some(b"5.6"));
    ks.set(b"e", b"5.0e3", opts()).unwrap();
    assert_eq!(ks.incr_by_float(b"e", 200.0).unwrap(), b"5200");
    ks.set(b"e", b"5.0e3", opts()).unwrap();
    assert_eq!(ks.incr_by_float(b"e", 0.0).unwrap(), b"5000");
    assert_eq!(ks.incr_by_float(b"n", 10.5).unwrap(), b"10.5");
    assert_eq!(ks.incr_by_float(b"n", -7.5).unwrap(), b"3");
    // The result "3" is a canonical integer, so INCR works on it.
    assert_eq!(ks.incr_by(b"n", 1).unwrap(), 4);
    assert_eq!(ks.incr_by_float(b"n", 0.25).unwrap(), b"4.25");
    ks.set(b"bad", b"abc", opts()).unwrap();
    assert_eq!(ks.incr_by_float(b"bad", 1.0), Err(KvError::NotFloat));
    ks.set(b"big", b"1e308", opts()).unwrap();
    assert_eq!(ks.incr_by_float(b"big", 1e308), Err(KvError::NanOrInfinity));
    assert_eq!(ks.incr_by_float(b"x", f64::INFINITY), Err(KvError::NanOrInfinity));
    assert_eq!(ks.incr_by_float(b"x", f64::NAN), Err(KvError::NanOrInfinity));
    assert_eq!(ks.get(b"x").unwrap(), None);
    ks.hset(b"h", &[(b"f", b"1")]).unwrap();
    assert_eq!(ks.incr_by_float(b"h", 1.0), Err(KvError::WrongType));
}

#[test]
fn mget_mset_msetnx() {
    let (_, ks) = keyspace();
    ks.mset(&[(b"a", b"1"), (b"b", b"2"), (b"a", b"3")]).unwrap();
    ks.hset(b"h", &[(b"f", b"v")]).unwrap();
    assert_eq!(
        ks.mget(&[b"a", b"b", b"h", b"zz", b"a"]).unwrap(),
        vec![some(b"3"), some(b"2"), None, None, some(b"3")]
    );
    assert!(!ks.msetnx(&[(b"new", b"1"), (b"a", b"9")]).unwrap());
    assert_eq!(ks.get(b"new").unwrap(), None);
    assert_eq!(ks.get(b"a").unwrap(), some(b"3"));
    assert!(ks.msetnx(&[(b"n1", b"1"), (b"n2", b"2")]).unwrap());
    assert_eq!(ks.mget(&[b"n1", b"n2"]).unwrap(), vec![some(b"1"), some(b"2")]);
    // MSET overwrites a hash and clears TTLs.
    ks.expire_in_ms(b"a", 1_000).unwrap();
    ks.mset(&[(b"h", b"s"), (b"a", b"4")]).unwrap();
    assert_eq!(ks.get(b"h").unwrap(), some(b"s"));
    assert_eq!(ks.ttl_ms(b"a").unwrap(), -1);
}

#[test]
fn value_size_limit() {
    let config = KeyspaceConfig { limits: KvLimits { value_bytes_max: 8 }, ..KeyspaceConfig::default() };
    let (_, ks) = keyspace_with(config);
    fn too_large<T>(actual: usize) -> Result<T, KvError> {
        Err(KvError::ValueTooLarge { limit: 8, actual })
    }
    assert_eq!(ks.set(b"k", b"123456789", opts()).map(|o| o.applied), too_large(9));
    ks.set(b"k", b"12345678", opts()).unwrap();
    assert_eq!(ks.append(b"k", b"9"), too_large(9));
    assert_eq!(ks.get(b"k").unwrap(), some(b"12345678"));
    assert_eq!(ks.mset(&[(b"a", b"1"), (b"b", b"123456789")]), too_large(9));
    assert_eq!(ks.get(b"a").unwrap(), None, "MSET is all-or-nothing");
    assert_eq!(ks.hset(b"h", &[(b"f", b"123456789")]), too_large(9));
    assert_eq!(
        KvError::ValueTooLarge { limit: 8, actual: 9 }.to_string(),
        "ERR string exceeds maximum allowed size (proto-max-bulk-len)"
    );
}

#[test]
fn error_texts_match_redis() {
    let cases = [
        (KvError::WrongType, "WRONGTYPE Operation against a key holding the wrong kind of value"),
        (KvError::NotInteger, "ERR value is not an integer or out of range"),
        (KvError::Overflow, "ERR increment or decrement would overflow"),
        (KvError::DecrementOverflow, "ERR decrement would overflow"),
        (KvError::NotFloat, "ERR value is not a valid float"),
        (KvError::NanOrInfinity, "ERR increment would produce NaN or Infinity"),
        (KvError::NoSuchKey, "ERR no such key"),
        (KvError::HashNotInteger, "ERR hash value is not an integer"),
        (KvError::HashNotFloat, "ERR hash value is not a float"),
        (KvError::Syntax, "ERR syntax error"),
        (KvError::InvalidExpireTime { command: "set" }, "ERR invalid expire time in 'set' command"),
    ];
    for (err, text) in cases {
        assert_eq!(err.to_string(), text);
    }
}

#[test]
fn bitop_pads_reads_missing_keys_as_zeros_and_deletes_an_empty_result() {
    let (_, ks) = keyspace();
    ks.set(b"a", b"\x01\x02\xff\xff", opts()).unwrap();
    ks.set(b"b", b"\x01\x02\xff", opts()).unwrap();
    assert_eq!(ks.bitop(BitOp::And, b"r", &[b"a", b"b"]).unwrap(), 4);
    assert_eq!(ks.get(b"r").unwrap(), some(b"\x01\x02\xff\x00"));
    assert_eq!(ks.bitop(BitOp::Xor, b"r", &[b"a", b"b"]).unwrap(), 4);
    assert_eq!(ks.get(b"r").unwrap(), some(b"\x00\x00\x00\xff"));
    assert_eq!(ks.bitop(BitOp::Or, b"r", &[b"missing", b"b"]).unwrap(), 3);
    assert_eq!(ks.get(b"r").unwrap(), some(b"\x01\x02\xff"));
    assert_eq!(ks.bitop(BitOp::And, b"r", &[b"missing", b"b"]).unwrap(), 3);
    assert_eq!(ks.get(b"r").unwrap(), some(b"\x00\x00\x00"), "a missing key is zeros");
    // NOT onto its own source.
    assert_eq!(ks.bitop(BitOp::Not, b"a", &[b"a"]).unwrap(), 4);
    assert_eq!(ks.get(b"a").unwrap(), some(b"\xfe\xfd\x00\x00"));
    // An empty result deletes the destination, whatever it held.
    ks.set(b"e", b"", opts()).unwrap();
    assert_eq!(ks.bitop(BitOp::Not, b"r", &[b"e"]).unwrap(), 0);
    assert_eq!(ks.get(b"r").unwrap(), None);
    // A source of another type refuses the whole command.
    ks.set(b"r", b"kept", opts()).unwrap();
    ks.hset(b"h", &[(b"f", b"v")]).unwrap();
    assert_eq!(ks.bitop(BitOp::Or, b"r", &[b"b", b"h"]), Err(KvError::WrongType));
    assert_eq!(ks.get(b"r").unwrap(), some(b"kept"));
}
