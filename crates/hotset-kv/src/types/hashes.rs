//! Hash commands, as operations on one locked shard.
//!
//! Owns: the semantics of HSET, HSETNX, HGET, HMGET, HGETALL, HDEL, HEXISTS,
//! HLEN, HSTRLEN, HINCRBY, HINCRBYFLOAT, HKEYS and HVALS (HSCAN is in
//! `store/scan.rs` with the other cursors).
//!
//! Must never: leave an empty hash stored (HDEL of the last field deletes the
//! key; a write that would create an empty hash creates nothing), or modify a
//! hash before every fallible check passed.
//!
//! Invariants: hash writes never touch the key's TTL; a hash is created
//! without one.
//!
//! Events, as Redis 7.0 notes them: HSET (and HMSET) `hset`, HSETNX `hset` when it set
//! the field, HDEL `hdel` when it removed a field (then `del` when the hash emptied),
//! `hincrby`, `hincrbyfloat`.

use crate::access::{Ctx, KvResult};
use crate::error::KvError;
use crate::notify::class;
use crate::store::router::KeyRef;
use crate::store::scan::FieldPairs;
use crate::store::shard::Shard;
use crate::types::field_map::FieldMap;
use crate::types::number::{format_f64, format_i64, parse_f64, parse_i64};
use crate::types::sample::sample;
use crate::value::{Entry, Value};
use rand::RngExt;

/// The hash inside `value`, or WRONGTYPE.
fn as_hash(value: &Value) -> KvResult<&FieldMap> {
    match value {
        Value::Hash(h) => Ok(h),
        _ => Err(KvError::WrongType),
    }
}

impl Shard {
    /// The hash stored at `key` (None if missing), or WRONGTYPE.
    pub fn read_hash(&self, key: KeyRef<'_>, now: u64) -> KvResult<Option<&FieldMap>> {
        self.get(key, now).map(|e| as_hash(&e.value)).transpose()
    }

    /// Runs `f` on the hash at `key`, creating it if missing. `f` must do all
    /// its fallible work before mutating. A new hash is stored only if `f`
    /// succeeded and left it non-empty.
    ///
    /// `fields` are the fields `f` may change: on an existing hash only they are noted for
    /// the log (`LiveEntry::touch_fields`), so a write to a big hash logs what it wrote, not
    /// the hash.
    fn upsert_hash<'f, R>(
        &mut self,
        key: KeyRef<'_>,
        now: u64,
        fields: impl Iterator<Item = &'f [u8]>,
        f: impl FnOnce(&mut FieldMap) -> KvResult<R>,
    ) -> KvResult<R> {
        if let Some(mut live) = self.get_mut_untouched(key, now) {
            // A write refused for the key's type changes nothing, so it notes nothing.
            as_hash(live.value())?;
            live.touch_fields(fields);
            return live.update(|v| match v {
                Value::Hash(h) => f(h),
                _ => Err(KvError::WrongType),
            });
        }
        let mut map = FieldMap::default();
        let result = f(&mut map)?;
        if !map.is_empty() {
            let value = Value::Hash(Box::new(map));
            self.insert(key, Entry::new(value, None));
        }
        Ok(result)
    }

    /// HSET: returns how many fields were added (not updated).
    pub fn hset(&mut self, key: KeyRef<'_>, ctx: &Ctx, pairs: &[(&[u8], &[u8])]) -> KvResult<usize> {
        for (_, value) in pairs {
            ctx.check_value_len(value.len())?;
        }
        let fields = pairs.iter().map(|(field, _)| *field);
        let added = self
            .upsert_hash(key, ctx.now, fields, |h| Ok(pairs.iter().filter(|(f, v)| h.insert(f, v.to_vec())).count()))?;
        // Redis notes every HSET, even one that rewrote the values already there.
        if !pairs.is_empty() {
            self.event(class::HASH, "hset", key.bytes);
        }
        Ok(added)
    }

    /// HSETNX: sets `field` only if absent; returns whether it did.
    pub fn hsetnx(&mut self, key: KeyRef<'_>, ctx: &Ctx, field: &[u8], value: &[u8]) -> KvResult<bool> {
        ctx.check_value_len(value.len())?;
        let set = self.upsert_hash(key, ctx.now, std::iter::once(field), |h| {
            Ok(h.get(field).is_none() && h.insert(field, value.to_vec()))
        })?;
        if set {
            self.event(class::HASH, "hset", key.bytes);
        }
        Ok(set)
    }

    /// HDEL: returns how many fields were removed; deletes an emptied hash.
    pub fn hdel(&mut self, key: KeyRef<'_>, now: u64, fields: &[&[u8]]) -> KvResult<usize> {
        let Some(mut live) = self.get_mut_untouched(key, now) else {
            return Ok(0);
        };
        as_hash(live.value())?;
        live.touch_fields(fields.iter().copied());
        let (removed, empty) = live.update(|v| match v {
            Value::Hash(h) => (fields.iter().filter(|f| h.remove(f)).count(), h.is_empty()),
            _ => (0, false),
        });
        if empty {
            live.remove();
            // An emptied hash is deleted: logged whole, as a deletion.
            self.touch(key.bytes);
        }
        if removed > 0 {
            self.event(class::HASH, "hdel", key.bytes);
        }
        if empty {
            self.event(class::GENERIC, "del", key.bytes);
        }
        Ok(removed)
    }

    /// HINCRBY: returns the field's new value.
    pub fn hincr_by(&mut self, key: KeyRef<'_>, now: u64, field: &[u8], by: i64) -> KvResult<i64> {
        let next = self.upsert_hash(key, now, std::iter::once(field), |h| {
            let current = match h.get(field) {
                Some(bytes) => parse_i64(bytes).ok_or(KvError::HashNotInteger)?,
                None => 0,
            };
            let next = current.checked_add(by).ok_or(KvError::Overflow)?;
            h.insert(field, format_i64(next));
            Ok(next)
        })?;
        self.event(class::HASH, "hincrby", key.bytes);
        Ok(next)
    }

    /// HINCRBYFLOAT: returns the field's new text.
    pub fn hincr_by_float(&mut self, key: KeyRef<'_>, now: u64, field: &[u8], by: f64) -> KvResult<Vec<u8>> {
        let text = self.upsert_hash(key, now, std::iter::once(field), |h| {
            let current = match h.get(field) {
                Some(bytes) => parse_f64(bytes).ok_or(KvError::HashNotFloat)?,
                None => 0.0,
            };
            let next = current + by;
            if !next.is_finite() {
                return Err(KvError::NanOrInfinity);
            }
            let text = format_f64(next);
            h.insert(field, text.clone());
            Ok(text)
        })?;
        self.event(class::HASH, "hincrbyfloat", key.bytes);
        Ok(text)
    }

    /// HRANDFIELD: `count` random fields (with their values when `with_values`); a
    /// positive count gives distinct fields (all of them when it is at least the hash's
    /// size), a negative one `-count` fields that may repeat. Missing key: none.
    pub fn hrandfield(&self, key: KeyRef<'_>, now: u64, count: i64, with_values: bool) -> KvResult<FieldPairs> {
        let Some(hash) = self.read_hash(key, now)? else { return Ok(Vec::new()) };
        let owned = |(f, v): (&[u8], &[u8])| (f.to_vec(), if with_values { v.to_vec() } else { Vec::new() });
        let mut rng = rand::rng();
        let random = || hash.random(|n| rng.random_range(0..n));
        Ok(sample(count, hash.len(), random, || hash.iter().collect()).into_iter().map(owned).collect())
    }
}
