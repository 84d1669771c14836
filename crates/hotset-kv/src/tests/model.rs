//! Model-based property test.
//!
//! Owns: random command sequences (strings, counters, hashes, DEL/EXISTS,
//! RENAME, expiry with a manual clock, active expiry, KEYS/SCAN) run against
//! a `Keyspace` and a deliberately naive reference model — a `BTreeMap` that
//! purges expired keys before every command — comparing every reply.
//!
//! Must never: reuse engine code in the model (parsing and expiry rules are
//! restated independently), or the comparison would prove nothing.
//!
//! Invariants: the model and the engine see the same clock readings.

use std::collections::BTreeMap;
use std::sync::Arc;

use proptest::prelude::*;

use super::T0;
use crate::{Keyspace, KeyspaceConfig, KvError, KvOps, SetCondition, SetExpiry, SetOptions, SetOutcome};
use hotset_base::clock::ManualClock;

/// Keys of every stored form: short ones, the empty key, exactly `SmallBytes::INLINE`
/// bytes and one more (the first kept out of line), and two long keys that differ only
/// in their last byte.
const KEYS: [&[u8]; 8] = [
    b"a",
    b"b",
    b"c",
    b"",
    b"0123456789abcdefghijkl",
    b"0123456789abcdefghijklm",
    b"kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkx",
    b"kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkky",
];
/// Hash fields: short ones and one past the inline size.
const FIELDS: [&[u8]; 4] = [b"f", b"g", b"h", b"a-field-name-longer-than-inline"];
const VALUES: [&[u8]; 11] = [
    b"0",
    b"1",
    b"-5",
    b"abc",
    b"01",
    b"9223372036854775807",
    b"-9223372036854775808",
    b"",
    b"x y",
    b"42",
    b"a value longer than the inline size of keys, kept out of line",
];

#[test]
fn keys_and_fields_span_the_inline_size() {
    use crate::store::small_bytes::SmallBytes;
    let lengths: Vec<usize> = KEYS.iter().chain(&FIELDS).map(|k| k.len()).collect();
    for wanted in [0, SmallBytes::INLINE, SmallBytes::INLINE + 1] {
        assert!(lengths.contains(&wanted), "a key or field of {wanted} bytes");
    }
    assert!(lengths.iter().any(|&len| len > 100));
}

#[derive(Debug, Clone)]
enum Op {
    Set { key: usize, val: usize, ex: Option<u64>, cond: u8, keep_ttl: bool, get: bool },
    Get(usize),
    Del(Vec<usize>),
    Exists(Vec<usize>),
    Incr(usize, i64),
    Append(usize, usize),
    Strlen(usize),
    GetDel(usize),
    MSet(Vec<(usize, usize)>),
    MGet(Vec<usize>),
    HSet(usize, Vec<(usize, usize)>),
    HGet(usize, usize),
    HDel(usize, Vec<usize>),
    HIncr(usize, usize, i64),
    HGetAll(usize),
    Expire(usize, i64),
    Persist(usize),
    Ttl(usize),
    Type(usize),
    Rename(usize, usize),
    Advance(u64),
    ActiveExpire,
    Keys,
}

/// Every reply shape, so model and engine replies compare with `==`.
#[derive(Debug, Clone, PartialEq)]
enum Out {
    Unit,
    Bool(bool),
    Int(i64),
    Count(usize),
    Bytes(Option<Vec<u8>>),
    List(Vec<Option<Vec<u8>>>),
    Pairs(Vec<(Vec<u8>, Vec<u8>)>),
    Keys(Vec<Vec<u8>>),
    Set(SetOutcome),
    Type(&'static str),
}

fn op_strategy() -> impl Strategy<Value = Op> {
    let key = 0..KEYS.len();
    let val = 0..VALUES.len();
    let field = 0..FIELDS.len();
    let keys = prop::collection::vec(0..KEYS.len(), 0..4);
    let incr = prop_oneof![-3i64..=3, Just(i64::MAX), Just(i64::MIN)];
    prop_oneof![
        (key.clone(), val.clone(), prop::option::of(1u64..50), 0u8..3, any::<bool>(), any::<bool>())
            .prop_map(|(key, val, ex, cond, keep_ttl, get)| Op::Set { key, val, ex, cond, keep_ttl, get }),
        key.clone().prop_map(Op::Get),
        keys.clone().prop_map(Op::Del),
        keys.clone().prop_map(Op::Exists),
        (key.clone(), incr.clone()).prop_map(|(k, by)| Op::Incr(k, by)),
        (key.clone(), val.clone()).prop_map(|(k, v)| Op::Append(k, v)),
        key.clone().prop_map(Op::Strlen),
        key.clone().prop_map(Op::GetDel),
        prop::collection::vec((key.clone(), val.clone()), 1..4).prop_map(Op::MSet),
        keys.prop_map(Op::MGet),
        (key.clone(), prop::collection::vec((field.clone(), val.clone()), 1..4)).prop_map(|(k, p)| Op::HSet(k, p)),
        (key.clone(), field.clone()).prop_map(|(k, f)| Op::HGet(k, f)),
        (key.clone(), prop::collection::vec(field.clone(), 1..3)).prop_map(|(k, f)| Op::HDel(k, f)),
        (key.clone(), field, incr).prop_map(|(k, f, by)| Op::HIncr(k, f, by)),
        key.clone().prop_map(Op::HGetAll),
        (key.clone(), -10i64..60).prop_map(|(k, ms)| Op::Expire(k, ms)),
        key.clone().prop_map(Op::Persist),
        key.clone().prop_map(Op::Ttl),
        key.clone().prop_map(Op::Type),
        (key.clone(), key).prop_map(|(s, d)| Op::Rename(s, d)),
        (0u64..40).prop_map(Op::Advance),
        Just(Op::ActiveExpire),
        Just(Op::Keys),
    ]
}

// ----- the reference model ---------------------------------------------

/// A model hash.
type Fields = BTreeMap<Vec<u8>, Vec<u8>>;

#[derive(Debug, Clone, PartialEq)]
enum MVal {
    Str(Vec<u8>),
    Hash(Fields),
}

#[derive(Debug, Default)]
struct Model {
    now: u64,
    map: BTreeMap<Vec<u8>, (MVal, Option<u64>)>,
}

/// An independent statement of Redis' integer rule: parses, and printing it
/// back gives the same bytes.
fn model_int(bytes: &[u8]) -> Option<i64> {
    let v: i64 = std::str::from_utf8(bytes).ok()?.parse().ok()?;
    (v.to_string().as_bytes() == bytes).then_some(v)
}

impl Model {
    fn purge(&mut self) {
        let now = self.now;
        self.map.retain(|_, (_, at)| at.is_none_or(|at| now <= at));
    }

    fn str_of(&self, k: &[u8]) -> Result<Option<Vec<u8>>, KvError> {
        match self.map.get(k) {
            None => Ok(None),
            Some((MVal::Str(s), _)) => Ok(Some(s.clone())),
            Some((MVal::Hash(_), _)) => Err(KvError::WrongType),
        }
    }

    fn set(&mut self, k: &[u8], v: &[u8], ex: Option<u64>, cond: u8, keep: bool, get: bool) -> Result<Out, KvError> {
        if ex.is_some() && keep {
            return Err(KvError::Syntax);
        }
        let old = if get { self.str_of(k)? } else { None };
        let exists = self.map.contains_key(k);
        if (cond == 1 && exists) || (cond == 2 && !exists) {
            return Ok(Out::Set(SetOutcome { applied: false, old }));
        }
        let ttl = match ex {
            Some(ms) => Some(self.now + ms),
            None if keep => self.map.get(k).and_then(|(_, t)| *t),
            None => None,
        };
        self.map.insert(k.to_vec(), (MVal::Str(v.to_vec()), ttl));
        Ok(Out::Set(SetOutcome { applied: true, old }))
    }

    fn incr(&mut self, k: &[u8], by: i64) -> Result<Out, KvError> {
        let current = match self.str_of(k)? {
            None => 0,
            Some(s) => model_int(&s).ok_or(KvError::NotInteger)?,
        };
        let next = current.checked_add(by).ok_or(KvError::Overflow)?;
        let ttl = self.map.get(k).and_then(|(_, t)| *t);
        self.map.insert(k.to_vec(), (MVal::Str(next.to_string().into_bytes()), ttl));
        Ok(Out::Int(next))
    }

    fn hash_mut(&mut self, k: &[u8]) -> Result<&mut Fields, KvError> {
        let slot = self.map.entry(k.to_vec()).or_insert_with(|| (MVal::Hash(BTreeMap::new()), None));
        match &mut slot.0 {
            MVal::Hash(h) => Ok(h),
            MVal::Str(_) => Err(KvError::WrongType),
        }
    }

    fn hash(&self, k: &[u8]) -> Result<Option<&Fields>, KvError> {
        match self.map.get(k) {
            None => Ok(None),
            Some((MVal::Hash(h), _)) => Ok(Some(h)),
            Some((MVal::Str(_), _)) => Err(KvError::WrongType),
        }
    }

    fn drop_if_empty_hash(&mut self, k: &[u8]) {
        if matches!(self.map.get(k), Some((MVal::Hash(h), _)) if h.is_empty()) {
            self.map.remove(k);
        }
    }

    fn hincr(&mut self, k: &[u8], f: &[u8], by: i64) -> Result<Out, KvError> {
        let result = (|| {
            let h = self.hash_mut(k)?;
            let current = match h.get(f) {
                None => 0,
                Some(v) => model_int(v).ok_or(KvError::HashNotInteger)?,
            };
            let next = current.checked_add(by).ok_or(KvError::Overflow)?;
            h.insert(f.to_vec(), next.to_string().into_bytes());
            Ok(Out::Int(next))
        })();
        self.drop_if_empty_hash(k);
        result
    }

    fn apply(&mut self, op: &Op) -> Result<Out, KvError> {
        self.purge();
        let k = |i: &usize| KEYS[*i];
        match op {
            Op::Set { key, val, ex, cond, keep_ttl, get } => {
                self.set(k(key), VALUES[*val], *ex, *cond, *keep_ttl, *get)
            }
            Op::Get(key) => self.str_of(k(key)).map(Out::Bytes),
            Op::Del(keys) => Ok(Out::Count(keys.iter().filter(|i| self.map.remove(k(i)).is_some()).count())),
            Op::Exists(keys) => Ok(Out::Count(keys.iter().filter(|i| self.map.contains_key(k(i))).count())),
            Op::Incr(key, by) => self.incr(k(key), *by),
            Op::Append(key, val) => {
                let mut s = self.str_of(k(key))?.unwrap_or_default();
                s.extend_from_slice(VALUES[*val]);
                let len = s.len();
                let ttl = self.map.get(k(key)).and_then(|(_, t)| *t);
                self.map.insert(k(key).to_vec(), (MVal::Str(s), ttl));
                Ok(Out::Count(len))
            }
            Op::Strlen(key) => Ok(Out::Count(self.str_of(k(key))?.map_or(0, |s| s.len()))),
            Op::GetDel(key) => {
                let v = self.str_of(k(key))?;
                self.map.remove(k(key));
                Ok(Out::Bytes(v))
            }
            Op::MSet(pairs) => {
                for (key, val) in pairs {
                    self.map.insert(k(key).to_vec(), (MVal::Str(VALUES[*val].to_vec()), None));
                }
                Ok(Out::Unit)
            }
            Op::MGet(keys) => Ok(Out::List(keys.iter().map(|i| self.str_of(k(i)).ok().flatten()).collect())),
            _ => self.apply_rest(op),
        }
    }

    fn apply_rest(&mut self, op: &Op) -> Result<Out, KvError> {
        let k = |i: &usize| KEYS[*i];
        match op {
            Op::HSet(key, pairs) => {
                let h = self.hash_mut(k(key))?;
                let added =
                    pairs.iter().filter(|(f, v)| h.insert(FIELDS[*f].to_vec(), VALUES[*v].to_vec()).is_none()).count();
                Ok(Out::Count(added))
            }
            Op::HGet(key, f) => Ok(Out::Bytes(self.hash(k(key))?.and_then(|h| h.get(FIELDS[*f]).cloned()))),
            Op::HDel(key, fields) => {
                let Some(MVal::Hash(h)) = self.map.get_mut(k(key)).map(|(v, _)| v) else {
                    return self.hash(k(key)).map(|_| Out::Count(0));
                };
                let removed = fields.iter().filter(|f| h.remove(FIELDS[**f]).is_some()).count();
                self.drop_if_empty_hash(k(key));
                Ok(Out::Count(removed))
            }
            Op::HIncr(key, f, by) => self.hincr(k(key), FIELDS[*f], *by),
            Op::HGetAll(key) => Ok(Out::Pairs(
                self.hash(k(key))?.map(|h| h.iter().map(|(f, v)| (f.clone(), v.clone())).collect()).unwrap_or_default(),
            )),
            _ => Ok(self.apply_keyspace_op(op)),
        }
    }

    fn apply_keyspace_op(&mut self, op: &Op) -> Out {
        let k = |i: &usize| KEYS[*i];
        let now = self.now;
        match op {
            Op::Expire(key, ms) => Out::Bool(match self.map.get_mut(k(key)) {
                None => false,
                Some(_) if *ms <= 0 => self.map.remove(k(key)).is_some(),
                Some((_, t)) => {
                    *t = Some(now + *ms as u64);
                    true
                }
            }),
            Op::Persist(key) => Out::Bool(self.map.get_mut(k(key)).is_some_and(|(_, t)| t.take().is_some())),
            Op::Ttl(key) => Out::Int(match self.map.get(k(key)) {
                None => -2,
                Some((_, None)) => -1,
                Some((_, Some(at))) => (at - now) as i64,
            }),
            Op::Type(key) => Out::Type(match self.map.get(k(key)) {
                None => "none",
                Some((MVal::Str(_), _)) => "string",
                Some((MVal::Hash(_), _)) => "hash",
            }),
            Op::Advance(ms) => {
                self.now += ms;
                Out::Unit
            }
            Op::ActiveExpire => Out::Count(self.map.len()),
            Op::Keys => Out::Keys(self.map.keys().cloned().collect()),
            _ => unreachable!("handled earlier: {op:?}"),
        }
    }

    fn rename(&mut self, src: &[u8], dst: &[u8]) -> Result<Out, KvError> {
        self.purge();
        let entry = self.map.remove(src).ok_or(KvError::NoSuchKey)?;
        self.map.insert(dst.to_vec(), entry);
        Ok(Out::Unit)
    }
}

// ----- the engine under test -------------------------------------------

fn run_engine(ks: &Keyspace, clock: &ManualClock, op: &Op) -> Result<Out, KvError> {
    let k = |i: &usize| KEYS[*i];
    let ks_keys = |v: &[usize]| v.iter().map(|i| KEYS[*i]).collect::<Vec<_>>();
    Ok(match op {
        Op::Set { key, val, ex, cond, keep_ttl, get } => {
            let opts = SetOptions {
                expiry: ex.map(SetExpiry::Ex),
                keep_ttl: *keep_ttl,
                condition: [None, Some(SetCondition::Nx), Some(SetCondition::Xx)][*cond as usize],
                get_old: *get,
            };
            Out::Set(ks.set(k(key), VALUES[*val], opts)?)
        }
        Op::Get(key) => Out::Bytes(ks.get(k(key))?),
        Op::Del(keys) => Out::Count(ks.del(&ks_keys(keys))?),
        Op::Exists(keys) => Out::Count(ks.exists(&ks_keys(keys))?),
        Op::Incr(key, by) => Out::Int(ks.incr_by(k(key), *by)?),
        Op::Append(key, val) => Out::Count(ks.append(k(key), VALUES[*val])?),
        Op::Strlen(key) => Out::Count(ks.strlen(k(key))?),
        Op::GetDel(key) => Out::Bytes(ks.getdel(k(key))?),
        Op::MSet(pairs) => {
            let pairs: Vec<(&[u8], &[u8])> = pairs.iter().map(|(a, b)| (KEYS[*a], VALUES[*b])).collect();
            ks.mset(&pairs)?;
            Out::Unit
        }
        Op::MGet(keys) => Out::List(ks.mget(&ks_keys(keys))?),
        _ => return run_engine_rest(ks, clock, op),
    })
}

fn run_engine_rest(ks: &Keyspace, clock: &ManualClock, op: &Op) -> Result<Out, KvError> {
    let k = |i: &usize| KEYS[*i];
    Ok(match op {
        Op::HSet(key, pairs) => {
            let pairs: Vec<(&[u8], &[u8])> = pairs.iter().map(|(f, v)| (FIELDS[*f], VALUES[*v])).collect();
            Out::Count(ks.hset(k(key), &pairs)?)
        }
        Op::HGet(key, f) => Out::Bytes(ks.hget(k(key), FIELDS[*f])?),
        Op::HDel(key, fields) => {
            let fields: Vec<&[u8]> = fields.iter().map(|f| FIELDS[*f]).collect();
            Out::Count(ks.hdel(k(key), &fields)?)
        }
        Op::HIncr(key, f, by) => Out::Int(ks.hincr_by(k(key), FIELDS[*f], *by)?),
        Op::HGetAll(key) => {
            let mut pairs = ks.hgetall(k(key))?;
            pairs.sort();
            Out::Pairs(pairs)
        }
        Op::Expire(key, ms) => Out::Bool(ks.expire_in_ms(k(key), *ms)?),
        Op::Persist(key) => Out::Bool(ks.persist(k(key))?),
        Op::Ttl(key) => Out::Int(ks.ttl_ms(k(key))?),
        Op::Type(key) => Out::Type(ks.key_type(k(key))?),
        Op::Rename(src, dst) => {
            ks.rename(k(src), k(dst))?;
            Out::Unit
        }
        Op::Advance(ms) => {
            clock.advance(*ms);
            Out::Unit
        }
        Op::ActiveExpire => {
            // A cycle that removes nothing has examined every volatile key.
            while ks.active_expire_cycle(usize::MAX) > 0 {}
            Out::Count(ks.len())
        }
        Op::Keys => Out::Keys(all_keys(ks)?),
        _ => unreachable!("handled by run_engine: {op:?}"),
    })
}

/// KEYS *, cross-checked against a full SCAN (no churn: exactly equal).
fn all_keys(ks: &Keyspace) -> Result<Vec<Vec<u8>>, KvError> {
    let mut keys = ks.keys(b"*")?;
    keys.sort();
    let mut scanned = Vec::new();
    let mut cursor = 0;
    loop {
        let (next, batch) = ks.scan(cursor, None, 2)?;
        scanned.extend(batch);
        if next == 0 {
            break;
        }
        cursor = next;
    }
    scanned.sort();
    assert_eq!(keys, scanned, "SCAN without churn returns exactly KEYS");
    Ok(keys)
}

fn apply_model(model: &mut Model, op: &Op) -> Result<Out, KvError> {
    match op {
        Op::Rename(src, dst) if src == dst => {
            model.purge();
            if model.map.contains_key(KEYS[*src]) { Ok(Out::Unit) } else { Err(KvError::NoSuchKey) }
        }
        Op::Rename(src, dst) => model.rename(KEYS[*src], KEYS[*dst]),
        _ => model.apply(op),
    }
}

/// Runs `ops` against both implementations, comparing every reply, then
/// deletes everything and checks the bookkeeping returned to zero.
fn check_sequence(ops: &[Op], shards: usize) -> Result<(), TestCaseError> {
    let clock = Arc::new(ManualClock::new(T0));
    let config = KeyspaceConfig { shards, ..KeyspaceConfig::default() };
    let ks = Keyspace::with_config(clock.clone(), config);
    let mut model = Model { now: T0, ..Model::default() };
    for (step, op) in ops.iter().enumerate() {
        let expected = apply_model(&mut model, op);
        let actual = run_engine(&ks, &clock, op);
        prop_assert_eq!(&actual, &expected, "step {} op {:?}", step, op);
    }
    // Incremental memory accounting must return to exactly zero once every
    // key is deleted one by one (DEL also purges expired keys).
    model.purge();
    prop_assert_eq!(ks.del(&KEYS).unwrap(), model.map.len());
    prop_assert_eq!(ks.len(), 0);
    prop_assert_eq!(ks.memory_bytes(), 0);
    prop_assert_eq!(ks.volatile_len(), 0);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn engine_matches_reference_model(
        ops in prop::collection::vec(op_strategy(), 1..80),
        shards in prop::sample::select(vec![1usize, 2, 16]),
    ) {
        check_sequence(&ops, shards)?;
    }
}
