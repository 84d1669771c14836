//! String commands, as operations on one locked shard.
//!
//! Owns: the semantics of GET, SET (all flag combinations), APPEND, STRLEN,
//! GETDEL, INCRBY and INCRBYFLOAT. Multi-key string commands (MGET, MSET,
//! MSETNX) are in `multi.rs` and reuse these primitives.
//!
//! Must never: lock, read the clock, or write anything before every
//! argument check that can fail has passed (a failed command leaves the key
//! untouched, as in Redis).
//!
//! Invariants: TTL handling mirrors Redis: SET/GETSET clear the TTL unless
//! KEEPTTL; APPEND/INCR*/INCRBYFLOAT keep it; a new key has none.
//!
//! Events: each write that changed the key notes Redis 7.0's event for it (`set`,
//! `append`, `incrby` for all of INCR/DECR/INCRBY/DECRBY, `incrbyfloat`; GETDEL `del`;
//! GETEX `expire`, `persist` or `del`), after the `new` that `Shard::insert` notes.

use std::num::NonZeroU64;

use crate::access::{Ctx, KvResult};
use crate::error::KvError;
use crate::notify::class;
use crate::options::{SetCondition, SetExpiry, SetOptions, SetOutcome};
use crate::store::expiry::live_deadline;
use crate::store::router::KeyRef;
use crate::store::shard::{LiveEntry, Shard};
use crate::types::number::format_f64;
use crate::value::{Entry, StrValue, Value};

/// The string inside `value`, or WRONGTYPE.
pub fn as_str(value: &Value) -> KvResult<&StrValue> {
    match value {
        Value::Str(s) => Ok(s),
        _ => Err(KvError::WrongType),
    }
}

/// What SET does to the TTL, decided before touching the key.
enum SetTtl {
    Clear,
    Keep,
    At(NonZeroU64),
    /// EXAT/PXAT in the past: the write happens, then the key is gone.
    AlreadyDue,
}

fn set_ttl(opts: &SetOptions, now: u64) -> KvResult<SetTtl> {
    const INVALID: KvError = KvError::InvalidExpireTime { command: "set" };
    if opts.keep_ttl && opts.expiry.is_some() {
        return Err(KvError::Syntax);
    }
    let when = match opts.expiry {
        None if opts.keep_ttl => return Ok(SetTtl::Keep),
        None => return Ok(SetTtl::Clear),
        Some(SetExpiry::Ex(0) | SetExpiry::At(0)) => return Err(INVALID),
        Some(SetExpiry::Ex(ms)) => {
            i64::try_from(ms).ok().and_then(|ms| i64::try_from(now).ok()?.checked_add(ms)).ok_or(INVALID)?
        }
        Some(SetExpiry::At(at)) => i64::try_from(at).map_err(|_| INVALID)?,
    };
    Ok(live_deadline(when, now).map_or(SetTtl::AlreadyDue, SetTtl::At))
}

fn new_string(value: StrValue) -> Entry {
    Entry::new(Value::Str(value), None)
}

impl Shard {
    /// GET.
    pub fn get_string(&self, key: KeyRef<'_>, now: u64) -> KvResult<Option<Vec<u8>>> {
        self.get(key, now).map(|e| as_str(&e.value).map(StrValue::to_bytes)).transpose()
    }

    /// GET without copying: `f` sees the string's bytes, or `None` for a missing key.
    pub fn read_string<R>(&self, key: KeyRef<'_>, now: u64, f: impl FnOnce(Option<&[u8]>) -> R) -> KvResult<R> {
        match self.get(key, now) {
            Some(entry) => Ok(as_str(&entry.value)?.with_bytes(|bytes| f(Some(bytes)))),
            None => Ok(f(None)),
        }
    }

    /// STRLEN (0 for a missing key).
    pub fn strlen(&self, key: KeyRef<'_>, now: u64) -> KvResult<usize> {
        self.get(key, now).map_or(Ok(0), |e| as_str(&e.value).map(StrValue::len))
    }

    /// SET with every flag combination (see [`SetOptions`]).
    pub fn set(&mut self, key: KeyRef<'_>, ctx: &Ctx, value: &[u8], opts: &SetOptions) -> KvResult<SetOutcome> {
        ctx.check_value_len(value.len())?;
        let ttl = set_ttl(opts, ctx.now)?;
        let live = self.get_mut(key, ctx.now);
        let old = match &live {
            Some(e) if opts.get_old => Some(as_str(e.value())?.to_bytes()),
            _ => None,
        };
        let blocked = match opts.condition {
            Some(SetCondition::Nx) => live.is_some(),
            Some(SetCondition::Xx) => live.is_none(),
            None => false,
        };
        if blocked {
            return Ok(SetOutcome { applied: false, old });
        }
        let value = Value::Str(StrValue::from_bytes(value));
        let expires = matches!(ttl, SetTtl::At(_) | SetTtl::AlreadyDue);
        let due = matches!(ttl, SetTtl::AlreadyDue);
        match (live, ttl) {
            (Some(e), SetTtl::AlreadyDue) => drop(e.remove()),
            // Redis stores the key (`new`) and lets it expire later; it is gone at once here.
            (None, SetTtl::AlreadyDue) => self.event(class::NEW, "new", key.bytes),
            (Some(e), ttl) => overwrite(e, value, ttl),
            (None, ttl) => {
                let expire_at = match ttl {
                    SetTtl::At(at) => Some(at),
                    _ => None,
                };
                self.insert(key, Entry::new(value, expire_at));
            }
        }
        self.event(class::STRING, "set", key.bytes);
        if expires {
            self.event(class::GENERIC, "expire", key.bytes);
        }
        if due {
            // The key is already gone: its `expired` comes now rather than at Redis' next look.
            self.event(class::EXPIRED, "expired", key.bytes);
        }
        Ok(SetOutcome { applied: true, old })
    }

    /// GETDEL: returns the string and deletes it (WRONGTYPE keeps the key).
    pub fn getdel(&mut self, key: KeyRef<'_>, now: u64) -> KvResult<Option<Vec<u8>>> {
        let Some(live) = self.get_mut(key, now) else {
            return Ok(None);
        };
        let bytes = as_str(live.value())?.to_bytes();
        live.remove();
        self.event(class::GENERIC, "del", key.bytes);
        Ok(Some(bytes))
    }

    /// APPEND: returns the new length.
    pub fn append(&mut self, key: KeyRef<'_>, ctx: &Ctx, tail: &[u8]) -> KvResult<usize> {
        let Some(mut live) = self.get_mut(key, ctx.now) else {
            ctx.check_value_len(tail.len())?;
            self.insert(key, new_string(StrValue::from_bytes(tail)));
            self.event(class::STRING, "append", key.bytes);
            return Ok(tail.len());
        };
        let new_len = as_str(live.value())?.len() + tail.len();
        ctx.check_value_len(new_len)?;
        live.update(|v| {
            if let Value::Str(s) = v {
                s.append(tail);
            }
        });
        self.event(class::STRING, "append", key.bytes);
        Ok(new_len)
    }

    /// GETEX with a TTL change: the string, and its TTL changed (`None`: PERSIST;
    /// `Some(expiry)`: EX/PX/EXAT/PXAT, a deadline already passed deleting the key).
    pub fn getex(&mut self, key: KeyRef<'_>, now: u64, change: Option<SetExpiry>) -> KvResult<Option<Vec<u8>>> {
        let deadline = match change {
            None => None,
            Some(expiry) => {
                let options = SetOptions { expiry: Some(expiry), ..SetOptions::default() };
                match set_ttl(&options, now).map_err(|_| KvError::InvalidExpireTime { command: "getex" })? {
                    SetTtl::At(at) => Some(Some(at)),
                    _ => Some(None),
                }
            }
        };
        let Some(mut live) = self.get_mut_untouched(key, now) else { return Ok(None) };
        let bytes = as_str(live.value())?.to_bytes();
        let event = match deadline {
            // PERSIST: only a key with a TTL changes.
            None if live.expire_at().is_none() => return Ok(Some(bytes)),
            None => {
                live.set_expire_at(None);
                "persist"
            }
            Some(Some(at)) => {
                live.set_expire_at(Some(at));
                "expire"
            }
            Some(None) => {
                live.remove();
                "del"
            }
        };
        self.touch(key.bytes);
        self.event(class::GENERIC, event, key.bytes);
        Ok(Some(bytes))
    }

    /// INCRBY (DECRBY is INCRBY of the negation): returns the new value. All four of
    /// INCR, DECR, INCRBY and DECRBY note `incrby`, as in Redis.
    pub fn incr_by(&mut self, key: KeyRef<'_>, now: u64, by: i64) -> KvResult<i64> {
        let Some(mut live) = self.get_mut(key, now) else {
            self.insert(key, new_string(StrValue::Int(by)));
            self.event(class::STRING, "incrby", key.bytes);
            return Ok(by);
        };
        let current = as_str(live.value())?.as_i64().ok_or(KvError::NotInteger)?;
        let next = current.checked_add(by).ok_or(KvError::Overflow)?;
        live.update(|v| *v = Value::Str(StrValue::Int(next)));
        self.event(class::STRING, "incrby", key.bytes);
        Ok(next)
    }

    /// INCRBYFLOAT: returns the new value's text (exactly what GET returns).
    pub fn incr_by_float(&mut self, key: KeyRef<'_>, now: u64, by: f64) -> KvResult<Vec<u8>> {
        let live = self.get_mut(key, now);
        let current = match &live {
            Some(e) => as_str(e.value())?.as_f64().ok_or(KvError::NotFloat)?,
            None => 0.0,
        };
        let next = current + by;
        if !next.is_finite() {
            return Err(KvError::NanOrInfinity);
        }
        let text = format_f64(next);
        let value = Value::Str(StrValue::from_bytes(&text));
        match live {
            Some(mut e) => drop(e.replace(value)),
            None => self.insert(key, Entry::new(value, None)),
        }
        self.event(class::STRING, "incrbyfloat", key.bytes);
        Ok(text)
    }
}

/// SET onto an existing key: new value, TTL per `ttl`.
fn overwrite(mut live: LiveEntry<'_>, value: Value, ttl: SetTtl) {
    live.replace(value);
    match ttl {
        SetTtl::Keep | SetTtl::AlreadyDue => {}
        SetTtl::Clear => live.set_expire_at(None),
        SetTtl::At(at) => live.set_expire_at(Some(at)),
    }
}
