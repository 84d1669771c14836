//! Type-agnostic per-key commands, as operations on one locked shard.
//!
//! Owns: EXPIRE-family (with NX/XX/GT/LT), PTTL, PEXPIRETIME, PERSIST, TYPE
//! and EXISTS for a single key. DEL/EXISTS over many keys, RENAME, KEYS,
//! DBSIZE and FLUSH are in `multi.rs`.
//!
//! Must never: store a deadline that is already due — Redis deletes the key
//! instead, and so do we.
//!
//! Invariants: "missing" (-2) and "no expiry" (-1) are distinguished exactly
//! as in Redis; a remaining TTL is never negative.
//!
//! Events: the EXPIRE family notes `expire`, or `del` when a deadline already due
//! deleted the key; PERSIST notes `persist` when it removed a TTL.

use crate::notify::class;
use crate::options::{ExpireCondition, KeyAccess};
use crate::store::expiry::{condition_allows, live_deadline};
use crate::store::router::KeyRef;
use crate::store::shard::Shard;

/// PTTL/PEXPIRETIME reply for a missing key.
pub const TTL_MISSING: i64 = -2;
/// PTTL/PEXPIRETIME reply for a key without expiry.
pub const TTL_NONE: i64 = -1;

impl Shard {
    /// Whether `key` exists (and is not expired).
    pub fn contains(&self, key: KeyRef<'_>, now: u64) -> bool {
        self.peek(key, now).is_some()
    }

    /// PTTL: remaining ms, or -2 (missing) / -1 (no expiry).
    pub fn ttl_ms(&self, key: KeyRef<'_>, now: u64) -> i64 {
        match self.peek(key, now) {
            None => TTL_MISSING,
            Some(e) => {
                e.expire_at().map_or(TTL_NONE, |at| i64::try_from(at.get().saturating_sub(now)).unwrap_or(i64::MAX))
            }
        }
    }

    /// PEXPIRETIME: absolute deadline, or -2 (missing) / -1 (no expiry).
    pub fn expire_time_ms(&self, key: KeyRef<'_>, now: u64) -> i64 {
        match self.peek(key, now) {
            None => TTL_MISSING,
            Some(e) => e.expire_at().map_or(TTL_NONE, |at| i64::try_from(at.get()).unwrap_or(i64::MAX)),
        }
    }

    /// PEXPIREAT with an optional condition: false if the key is missing or
    /// the condition fails; a deadline `<= now` deletes the key.
    pub fn expire_at(&mut self, key: KeyRef<'_>, now: u64, when: i64, condition: Option<ExpireCondition>) -> bool {
        let Some(mut live) = self.get_mut(key, now) else {
            return false;
        };
        if !condition_allows(condition, live.expire_at(), when) {
            return false;
        }
        let event = match live_deadline(when, now) {
            Some(at) => {
                live.set_expire_at(Some(at));
                "expire"
            }
            None => {
                live.remove();
                "del"
            }
        };
        self.event(class::GENERIC, event, key.bytes);
        true
    }

    /// PERSIST: returns whether a TTL was removed.
    pub fn persist(&mut self, key: KeyRef<'_>, now: u64) -> bool {
        match self.get_mut(key, now) {
            Some(mut live) if live.expire_at().is_some() => {
                live.set_expire_at(None);
                self.event(class::GENERIC, "persist", key.bytes);
                true
            }
            _ => false,
        }
    }

    /// TYPE: "string", "hash" or "none".
    pub fn key_type(&self, key: KeyRef<'_>, now: u64) -> &'static str {
        self.peek(key, now).map_or("none", |e| e.value.type_name())
    }

    /// OBJECT IDLETIME/FREQ of `key`, without counting as an access.
    pub fn access(&self, key: KeyRef<'_>, now: u64) -> Option<KeyAccess> {
        let stamp = self.peek(key, now)?.stamp();
        Some(KeyAccess {
            idle_secs: crate::recency::idle_ms(stamp, now) / 1000,
            freq: crate::recency::decayed(stamp, now) as u8,
        })
    }
}
