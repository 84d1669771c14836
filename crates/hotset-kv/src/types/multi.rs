//! Commands spanning several keys (and therefore possibly several shards).
//!
//! Owns: MGET, EXISTS, DEL, MSET, MSETNX, RENAME/RENAMENX, KEYS, DBSIZE and
//! FLUSH, written against a [`ShardGroup`] whose shards are all locked for
//! the whole command — which is what makes them atomic.
//!
//! Must never: lock (the group arrives locked in ascending shard order), or
//! start mutating before every check that can fail has passed, so a failing
//! multi-key command changes nothing.
//!
//! Invariants: duplicates behave like Redis: EXISTS counts each occurrence,
//! DEL counts each key once, MSET/MSETNX let the last occurrence win.
//!
//! Events, as Redis 7.0 notes them: DEL `del` per key deleted; MSET/MSETNX `set` per
//! pair; RENAME `new` for the destination (Redis deletes and re-adds it), `rename_from`
//! and `rename_to`; COPY `new` and `copy_to` on the destination; FLUSH none per key. A
//! RENAME's or COPY's events are all noted on the destination's shard, so they arrive
//! in Redis' order whichever shards the two keys live on.

use std::ops::{Deref, DerefMut};

use crate::access::{Ctx, KvResult, ShardGroup};
use crate::error::KvError;
use crate::notify::class;
use crate::store::glob::Glob;
use crate::store::shard::Shard;
use crate::value::{StrValue, Value};
use rand::RngExt;

impl<S: Deref<Target = Shard>> ShardGroup<S> {
    /// MGET: a non-string or missing key yields `None`.
    pub fn mget(&self, keys: &[&[u8]], now: u64) -> KvResult<Vec<Option<Vec<u8>>>> {
        keys.iter()
            .map(|k| {
                let (shard, key) = self.shard(k)?;
                Ok(shard.get(key, now).and_then(|e| match &e.value {
                    Value::Str(s) => Some(s.to_bytes()),
                    _ => None,
                }))
            })
            .collect()
    }

    /// EXISTS: how many of `keys` exist, counting repeats.
    pub fn exists(&self, keys: &[&[u8]], now: u64) -> KvResult<usize> {
        let mut count = 0;
        for k in keys {
            let (shard, key) = self.shard(k)?;
            count += usize::from(shard.contains(key, now));
        }
        Ok(count)
    }

    /// KEYS: every live key matching `glob`.
    pub fn keys(&self, glob: &Glob, now: u64) -> Vec<Vec<u8>> {
        self.iter()
            .flat_map(|shard| shard.iter_live(now))
            .filter(|(k, _)| glob.matches(k))
            .map(|(k, _)| k.to_vec())
            .collect()
    }

    /// RANDOMKEY: a uniformly random live key (a shard chosen by its size, then a slot of
    /// it), `None` when there is none. Expired keys found on the way are passed over, and
    /// a keyspace of mostly expired keys falls back to walking the live ones.
    pub fn random_key(&self, now: u64) -> Option<Vec<u8>> {
        let total: usize = self.iter().map(Shard::len).sum();
        let mut rng = rand::rng();
        for _ in 0..total.min(64) {
            let mut pick = rng.random_range(0..total);
            let shard = self.iter().find(|shard| {
                let here = pick < shard.len();
                pick = pick.saturating_sub(shard.len());
                here
            })?;
            if let Some(key) = shard.random_live(now, |n| rng.random_range(0..n)) {
                return Some(key.to_vec());
            }
        }
        let live: Vec<&[u8]> = self.iter().flat_map(|shard| shard.iter_live(now)).map(|(key, _)| key).collect();
        (!live.is_empty()).then(|| live[rng.random_range(0..live.len())].to_vec())
    }

    /// DBSIZE: stored keys, including expired ones not yet reclaimed (as
    /// Redis counts them).
    pub fn dbsize(&self) -> usize {
        self.iter().map(Shard::len).sum()
    }
}

impl<S: DerefMut<Target = Shard>> ShardGroup<S> {
    /// DEL: how many keys were removed.
    pub fn del(&mut self, keys: &[&[u8]], now: u64) -> KvResult<usize> {
        let mut removed = 0;
        for k in keys {
            let (shard, key) = self.shard_mut(k)?;
            if shard.remove(key, now).is_some() {
                shard.event(class::GENERIC, "del", key.bytes);
                removed += 1;
            }
        }
        Ok(removed)
    }

    /// MSET: sets every pair, clearing TTLs.
    pub fn mset(&mut self, pairs: &[(&[u8], &[u8])], ctx: &Ctx) -> KvResult<()> {
        for (_, value) in pairs {
            ctx.check_value_len(value.len())?;
        }
        for (k, value) in pairs {
            let (shard, key) = self.shard_mut(k)?;
            shard.put(key, ctx.now, Value::Str(StrValue::from_bytes(value)), None);
            shard.event(class::STRING, "set", key.bytes);
        }
        Ok(())
    }

    /// MSETNX: sets every pair only if none of the keys exists.
    pub fn msetnx(&mut self, pairs: &[(&[u8], &[u8])], ctx: &Ctx) -> KvResult<bool> {
        for (k, _) in pairs {
            let (shard, key) = self.shard(k)?;
            if shard.contains(key, ctx.now) {
                return Ok(false);
            }
        }
        self.mset(pairs, ctx)?;
        Ok(true)
    }

    /// RENAME (`nx == false`) / RENAMENX (`nx == true`): moves value and TTL.
    /// Returns whether the rename happened; a missing `src` is `NoSuchKey`.
    pub fn rename(&mut self, src: &[u8], dst: &[u8], now: u64, nx: bool) -> KvResult<bool> {
        let (shard, src_key) = self.shard(src)?;
        if !shard.contains(src_key, now) {
            return Err(KvError::NoSuchKey);
        }
        // Redis: renaming a key onto itself is a no-op (RENAMENX says 0).
        if src == dst {
            return Ok(!nx);
        }
        let (dst_shard, dst_key) = self.shard(dst)?;
        if nx && dst_shard.contains(dst_key, now) {
            return Ok(false);
        }
        let (shard, src_key) = self.shard_mut(src)?;
        let Some(entry) = shard.remove(src_key, now) else {
            return Err(KvError::NoSuchKey);
        };
        let (dst_shard, dst_key) = self.shard_mut(dst)?;
        // Removed and inserted rather than overwritten: Redis notes `new` for the
        // destination even when it existed.
        dst_shard.remove(dst_key, now);
        dst_shard.insert(dst_key, entry);
        dst_shard.event(class::GENERIC, "rename_from", src);
        dst_shard.event(class::GENERIC, "rename_to", dst);
        Ok(true)
    }

    /// COPY: `dst` gets a copy of `src`'s value and deadline; false when `src` is missing,
    /// or `dst` exists and `replace` is not set. The caller refuses `src` == `dst`.
    pub fn copy(&mut self, src: &[u8], dst: &[u8], now: u64, replace: bool) -> KvResult<bool> {
        let (shard, src_key) = self.shard(src)?;
        let Some(entry) = shard.get(src_key, now).cloned() else { return Ok(false) };
        let (dst_shard, dst_key) = self.shard_mut(dst)?;
        if !replace && dst_shard.contains(dst_key, now) {
            return Ok(false);
        }
        // As RENAME: the destination is deleted and added again, so it notes `new`.
        dst_shard.remove(dst_key, now);
        dst_shard.insert(dst_key, entry);
        dst_shard.event(class::GENERIC, "copy_to", dst);
        Ok(true)
    }

    /// FLUSHDB: removes every key of every shard in the group.
    pub fn flush(&mut self) {
        self.iter_mut().for_each(Shard::clear);
    }
}
