//! The command surface shared by [`Keyspace`](super::Keyspace) and
//! [`KeyspaceTxn`](super::KeyspaceTxn).
//!
//! Owns: [`KvOps`], one provided method per Redis command. Each method only
//! routes: it picks the shard(s) through the sealed `ShardAccess` seam and
//! calls the single implementation in `strings.rs`/`hashes.rs`/`keys.rs`/
//! `multi.rs`/`scan.rs`. Because both the direct path and the atomic-block
//! path implement `ShardAccess`, no command logic exists twice.
//!
//! Must never: hold a lock across calls, or add semantics here (they belong
//! with the shard-level implementation so both paths get them).
//!
//! Invariants: single-key reads take a shard read lock, single-key writes a
//! write lock; multi-key commands lock all their shards at once in ascending
//! order (read for MGET/EXISTS/KEYS/DBSIZE, write otherwise).

use super::access::{KvResult, ShardAccess};
use super::error::KvError;
use super::options::{ExpireCondition, KeyAccess, RestoreOptions, SetCondition, SetExpiry, SetOptions, SetOutcome};
use crate::evict::Evicted;
use crate::store::expiry::deadline_after;
use crate::store::glob::Glob;
use crate::store::scan::{FieldPairs, scan_keys};
use crate::types::bitfield::{FieldCommand, FieldOp};
use crate::types::bits::{BitOp, BitRange};
use crate::types::dump::value_of_payload;
use crate::types::geo::{Found, GeoSearch};
use crate::types::lcs::{LcsAnswer, lcs};
use crate::types::list::{End, Iter as ListIter};
use crate::types::lists::{Popped, PosOptions};
use crate::types::pf::{PfDebug, PfDebugAnswer};
use crate::types::sets::SetAlgebra;
use crate::types::sort::SortOptions;
use crate::types::stream::StreamId;
use crate::types::streams::{
    Claimed, ConsumerInfo, GroupInfo, MaybeEntry, PendingInfo, PendingSummary, StreamEntry, StreamFull, StreamInfo,
    TrimArgs, XAdd, XClaimOptions, XFrom, XGroupFrom, XReadGroup,
};
use crate::types::zsets::{Combine, Scored, ZAddOptions, ZAddOutcome, ZAlgebra, ZRange, ZRangeBy};
use std::num::NonZeroU64;

fn firsts<'a>(pairs: &'a [(&'a [u8], &'a [u8])]) -> impl Iterator<Item = &'a [u8]> + 'a {
    pairs.iter().map(|(k, _)| *k)
}

/// Redis string, hash, list, set and generic key commands. Bring this trait into scope
/// (`use hotset_kv::KvOps;`, or `hotset_core::kv::KvOps`) to call them on a
/// `Keyspace` or `KeyspaceTxn`.
///
/// All times are milliseconds; "now" is the keyspace clock, read once per
/// call (or once per atomic block). An expired key is never observed.
pub trait KvOps: ShardAccess {
    // ----- strings -------------------------------------------------------

    /// GET: the string value, `None` if missing. WRONGTYPE on a hash.
    fn get(&self, key: &[u8]) -> KvResult<Option<Vec<u8>>> {
        self.read_key(key, |s, k, ctx| s.get_string(k, ctx.now))
    }

    /// GET without copying the value: `f` sees its bytes (or `None` for a missing key)
    /// while the key's shard is read-locked, so it must be quick (e.g. encode a reply).
    fn get_with<R>(&self, key: &[u8], f: impl FnOnce(Option<&[u8]>) -> R) -> KvResult<R> {
        self.read_key(key, |s, k, ctx| s.read_string(k, ctx.now, f))
    }

    /// SET with EX/PX/EXAT/PXAT, KEEPTTL, NX/XX and GET (see [`SetOptions`]).
    fn set(&self, key: &[u8], value: &[u8], opts: SetOptions) -> KvResult<SetOutcome> {
        self.write_key(key, |s, k, ctx| s.set(k, ctx, value, &opts))
    }

    /// SETNX: sets only if missing; returns whether it did.
    fn setnx(&self, key: &[u8], value: &[u8]) -> KvResult<bool> {
        let opts = SetOptions { condition: Some(SetCondition::Nx), ..SetOptions::default() };
        Ok(self.set(key, value, opts)?.applied)
    }

    /// GETSET: sets the value (clearing any TTL), returns the old string.
    fn getset(&self, key: &[u8], value: &[u8]) -> KvResult<Option<Vec<u8>>> {
        let opts = SetOptions { get_old: true, ..SetOptions::default() };
        Ok(self.set(key, value, opts)?.old)
    }

    /// GETDEL: returns the string and deletes the key.
    fn getdel(&self, key: &[u8]) -> KvResult<Option<Vec<u8>>> {
        self.write_key(key, |s, k, ctx| s.getdel(k, ctx.now))
    }

    /// APPEND: returns the new length. Keeps the TTL.
    fn append(&self, key: &[u8], tail: &[u8]) -> KvResult<usize> {
        self.write_key(key, |s, k, ctx| s.append(k, ctx, tail))
    }

    /// GETEX: the string, with its TTL changed (see `Shard::getex`).
    fn getex(&self, key: &[u8], change: Option<Option<SetExpiry>>) -> KvResult<Option<Vec<u8>>> {
        match change {
            None => self.get(key),
            Some(change) => self.write_key(key, |s, k, ctx| s.getex(k, ctx.now, change)),
        }
    }

    /// GETRANGE (SUBSTR): bytes `start..=end`, negatives from the end, clamped.
    fn getrange(&self, key: &[u8], start: i64, end: i64) -> KvResult<Vec<u8>> {
        self.read_key(key, |s, k, ctx| s.getrange(k, ctx.now, start, end))
    }

    /// SETRANGE: writes `value` at `offset` (zero padding); the new length.
    fn setrange(&self, key: &[u8], offset: usize, value: &[u8]) -> KvResult<usize> {
        self.write_key(key, |s, k, ctx| s.setrange(k, ctx, offset, value))
    }

    /// GETBIT.
    fn getbit(&self, key: &[u8], offset: u64) -> KvResult<u8> {
        self.read_key(key, |s, k, ctx| s.getbit(k, ctx.now, offset))
    }

    /// SETBIT: the bit's previous value.
    fn setbit(&self, key: &[u8], offset: u64, on: bool) -> KvResult<u8> {
        self.write_key(key, |s, k, ctx| s.setbit(k, ctx, offset, on))
    }

    /// BITCOUNT over the string or a range of it.
    fn bitcount(&self, key: &[u8], range: Option<BitRange>) -> KvResult<u64> {
        self.read_key(key, |s, k, ctx| s.bitcount(k, ctx.now, range))
    }

    /// BITPOS: the first bit equal to `wanted`, or -1 (see `Shard::bitpos`).
    fn bitpos(&self, key: &[u8], wanted: u8, range: Option<BitRange>, end_given: bool) -> KvResult<i64> {
        self.read_key(key, |s, k, ctx| s.bitpos(k, ctx.now, wanted, range, end_given))
    }

    /// LCS of the strings at `a` and `b` (a missing key is empty), computed after both
    /// are copied out of their shards; `walk` and `min_len` as `lcs::lcs` takes them.
    fn lcs(&self, a: &[u8], b: &[u8], walk: bool, min_len: usize) -> KvResult<LcsAnswer> {
        let (first, second, limit) = self.read_keys([a, b], |g, ctx| {
            let string = |key: &[u8]| -> KvResult<Vec<u8>> {
                let (shard, key) = g.shard(key)?;
                shard.get_string(key, ctx.now).map(Option::unwrap_or_default).map_err(|_| KvError::LcsNotString)
            };
            Ok((string(a)?, string(b)?, ctx.limits.value_bytes_max))
        })?;
        lcs(&first, &second, walk, min_len, limit)
    }

    /// BITFIELD and BITFIELD_RO: each operation's answer in order (`None` where a FAIL
    /// overflow refused it). GETs alone read without creating the key.
    fn bitfield(&self, key: &[u8], commands: &[FieldCommand]) -> KvResult<Vec<Option<i64>>> {
        if commands.iter().all(|command| command.op == FieldOp::Get) {
            return self.read_key(key, |s, k, ctx| s.bitfield_read(k, ctx.now, commands));
        }
        self.write_key(key, |s, k, ctx| s.bitfield(k, ctx, commands))
    }

    /// BITOP: stores `op` over the strings at `keys` in `dst`; the result's length.
    fn bitop(&self, op: BitOp, dst: &[u8], keys: &[&[u8]]) -> KvResult<usize> {
        let all = std::iter::once(dst).chain(keys.iter().copied());
        self.write_keys(all, |g, ctx| g.bitop(op, dst, keys, ctx.now))
    }

    /// STRLEN: length in bytes, 0 if missing.
    fn strlen(&self, key: &[u8]) -> KvResult<usize> {
        self.read_key(key, |s, k, ctx| s.strlen(k, ctx.now))
    }

    /// MGET: one entry per key; missing or non-string keys give `None`.
    /// Atomic: all shards involved are read-locked together.
    fn mget(&self, keys: &[&[u8]]) -> KvResult<Vec<Option<Vec<u8>>>> {
        self.read_keys(keys.iter().copied(), |g, ctx| g.mget(keys, ctx.now))
    }

    /// MSET: sets all pairs atomically (clearing TTLs); later pairs win.
    fn mset(&self, pairs: &[(&[u8], &[u8])]) -> KvResult<()> {
        self.write_keys(firsts(pairs), |g, ctx| g.mset(pairs, ctx))
    }

    /// MSETNX: sets all pairs atomically iff none of the keys exists.
    fn msetnx(&self, pairs: &[(&[u8], &[u8])]) -> KvResult<bool> {
        self.write_keys(firsts(pairs), |g, ctx| g.msetnx(pairs, ctx))
    }

    /// INCRBY: adds `by` to an integer value (missing = 0); keeps the TTL.
    fn incr_by(&self, key: &[u8], by: i64) -> KvResult<i64> {
        self.write_key(key, |s, k, ctx| s.incr_by(k, ctx.now, by))
    }

    /// DECRBY: subtracts `by`; `i64::MIN` is `DecrementOverflow` like Redis.
    fn decr_by(&self, key: &[u8], by: i64) -> KvResult<i64> {
        let negated = by.checked_neg().ok_or(super::KvError::DecrementOverflow)?;
        self.incr_by(key, negated)
    }

    /// INCRBYFLOAT: returns the new value's text, e.g. `10.5`, `3`, `5000`.
    fn incr_by_float(&self, key: &[u8], by: f64) -> KvResult<Vec<u8>> {
        self.write_key(key, |s, k, ctx| s.incr_by_float(k, ctx.now, by))
    }

    // ----- generic keys --------------------------------------------------

    /// DEL: how many keys were removed (a repeated key counts once).
    fn del(&self, keys: &[&[u8]]) -> KvResult<usize> {
        self.write_keys(keys.iter().copied(), |g, ctx| g.del(keys, ctx.now))
    }

    /// EXISTS: how many of `keys` exist, counting repeats.
    fn exists(&self, keys: &[&[u8]]) -> KvResult<usize> {
        self.read_keys(keys.iter().copied(), |g, ctx| g.exists(keys, ctx.now))
    }

    /// PEXPIREAT: expire at absolute `at_ms`; a time `<= now` deletes the
    /// key. Returns false if the key does not exist.
    fn expire_at_ms(&self, key: &[u8], at_ms: i64) -> KvResult<bool> {
        self.expire_at_ms_if(key, at_ms, None)
    }

    /// PEXPIREAT with NX/XX/GT/LT.
    fn expire_at_ms_if(&self, key: &[u8], at_ms: i64, condition: Option<ExpireCondition>) -> KvResult<bool> {
        self.write_key(key, |s, k, ctx| Ok(s.expire_at(k, ctx.now, at_ms, condition)))
    }

    /// PEXPIRE: expire `ms` from now; `ms <= 0` deletes the key. Overflow is
    /// `InvalidExpireTime`.
    fn expire_in_ms(&self, key: &[u8], ms: i64) -> KvResult<bool> {
        self.expire_in_ms_if(key, ms, None)
    }

    /// PEXPIRE with NX/XX/GT/LT.
    fn expire_in_ms_if(&self, key: &[u8], ms: i64, condition: Option<ExpireCondition>) -> KvResult<bool> {
        self.write_key(key, |s, k, ctx| {
            let when = deadline_after(ctx.now, ms, "expire")?;
            Ok(s.expire_at(k, ctx.now, when, condition))
        })
    }

    /// PTTL: remaining ms; -2 if missing, -1 if no expiry.
    fn ttl_ms(&self, key: &[u8]) -> KvResult<i64> {
        self.read_key(key, |s, k, ctx| Ok(s.ttl_ms(k, ctx.now)))
    }

    /// PEXPIRETIME: absolute deadline; -2 if missing, -1 if no expiry.
    fn expire_time_ms(&self, key: &[u8]) -> KvResult<i64> {
        self.read_key(key, |s, k, ctx| Ok(s.expire_time_ms(k, ctx.now)))
    }

    /// PERSIST: removes the TTL; returns whether there was one.
    fn persist(&self, key: &[u8]) -> KvResult<bool> {
        self.write_key(key, |s, k, ctx| Ok(s.persist(k, ctx.now)))
    }

    /// TYPE: `"string"`, `"hash"` or `"none"`.
    fn key_type(&self, key: &[u8]) -> KvResult<&'static str> {
        self.read_key(key, |s, k, ctx| Ok(s.key_type(k, ctx.now)))
    }

    /// DUMP: the key's value as a payload RESTORE takes back (`types/dump.rs`).
    fn dump(&self, key: &[u8]) -> KvResult<Option<Vec<u8>>> {
        self.read_key(key, |s, k, ctx| Ok(s.dump(k, ctx.now)))
    }

    /// RESTORE: stores the payload's value at `key`; `ttl_ms` 0 for none, else relative
    /// milliseconds or, with `options.absolute`, a Unix time in milliseconds.
    fn restore(&self, key: &[u8], ttl_ms: i64, payload: &[u8], options: RestoreOptions) -> KvResult<()> {
        if ttl_ms < 0 {
            return Err(KvError::InvalidTtl);
        }
        let value = value_of_payload(payload)?;
        self.write_key(key, |s, k, ctx| {
            let at = match (ttl_ms, options.absolute) {
                (0, _) => None,
                (at, true) => NonZeroU64::new(at as u64),
                (ttl, false) => NonZeroU64::new(ctx.now.saturating_add(ttl as u64)),
            };
            s.restore(k, ctx.now, value, at, options)
        })
    }

    /// OBJECT ENCODING: what Redis would call the key's encoding (`Value::redis_encoding`),
    /// `None` when missing.
    fn object_encoding(&self, key: &[u8]) -> KvResult<Option<&'static str>> {
        self.read_key(key, |s, k, ctx| Ok(s.peek(k, ctx.now).map(|entry| entry.value.redis_encoding())))
    }

    /// OBJECT IDLETIME and OBJECT FREQ: how recently and how often the key was used,
    /// `None` when missing. Reading them is no access.
    fn object_access(&self, key: &[u8]) -> KvResult<Option<KeyAccess>> {
        self.read_key(key, |s, k, ctx| Ok(s.access(k, ctx.now)))
    }

    /// Eviction's delete of `key` (when `volatile`, only if it has a TTL): logged like DEL,
    /// heard as `evicted` (or `expired`, for a key past its deadline). `None` when it was
    /// not there or not volatile.
    fn evict_key(&self, key: &[u8], volatile: bool) -> KvResult<Option<Evicted>> {
        self.write_key(key, |s, k, ctx| {
            Ok(s.evict(k, ctx.now, volatile).map(|(bytes, expired)| Evicted { bytes, expired }))
        })
    }

    /// MEMORY USAGE: the bytes the key costs in its shard's count, `None` when missing.
    fn memory_usage(&self, key: &[u8]) -> KvResult<Option<usize>> {
        self.read_key(key, |s, k, ctx| Ok(s.usage(k, ctx.now)))
    }

    /// KEYS: all keys matching a Redis glob, as one atomic snapshot.
    fn keys(&self, pattern: &[u8]) -> KvResult<Vec<Vec<u8>>> {
        let glob = Glob::new(pattern);
        let all = self.router().all_shards();
        self.read_group(&all, |g, ctx| Ok(g.keys(&glob, ctx.now)))
    }

    /// SCAN: `(next_cursor, keys)`; start with 0, stop when 0 comes back.
    /// Every key present for the whole iteration is returned at least once
    /// (see the `scan` module docs for why). `count` is the COUNT hint.
    fn scan(&self, cursor: u64, pattern: Option<&[u8]>, count: usize) -> KvResult<(u64, Vec<Vec<u8>>)> {
        scan_keys(self, cursor, pattern, count)
    }

    /// RENAME: moves the value and its TTL, overwriting `dst`.
    /// `NoSuchKey` if `src` is missing.
    fn rename(&self, src: &[u8], dst: &[u8]) -> KvResult<()> {
        self.write_keys([src, dst], |g, ctx| g.rename(src, dst, ctx.now, false).map(drop))
    }

    /// RENAMENX: like RENAME but only if `dst` does not exist.
    fn rename_nx(&self, src: &[u8], dst: &[u8]) -> KvResult<bool> {
        self.write_keys([src, dst], |g, ctx| g.rename(src, dst, ctx.now, true))
    }

    /// COPY: copies `src`'s value and deadline to `dst` (over it only with `replace`);
    /// whether it copied.
    fn copy(&self, src: &[u8], dst: &[u8], replace: bool) -> KvResult<bool> {
        self.write_keys([src, dst], |g, ctx| g.copy(src, dst, ctx.now, replace))
    }

    /// RANDOMKEY: a random live key, `None` in an empty keyspace.
    fn random_key(&self) -> KvResult<Option<Vec<u8>>> {
        let all = self.router().all_shards();
        self.read_group(&all, |g, ctx| Ok(g.random_key(ctx.now)))
    }

    /// DBSIZE: number of keys (expired-but-unreclaimed keys included, as in
    /// Redis).
    fn dbsize(&self) -> KvResult<usize> {
        let all = self.router().all_shards();
        self.read_group(&all, |g, _| Ok(g.dbsize()))
    }

    /// FLUSHDB: removes every key, atomically.
    fn flush(&self) -> KvResult<()> {
        let all = self.router().all_shards();
        self.write_group(&all, |g, _| {
            g.flush();
            Ok(())
        })
    }

    // ----- hashes --------------------------------------------------------

    /// HSET: sets fields; returns how many were new. An empty `pairs`
    /// creates nothing.
    fn hset(&self, key: &[u8], pairs: &[(&[u8], &[u8])]) -> KvResult<usize> {
        self.write_key(key, |s, k, ctx| s.hset(k, ctx, pairs))
    }

    /// HSETNX: sets `field` only if absent; returns whether it did.
    fn hsetnx(&self, key: &[u8], field: &[u8], value: &[u8]) -> KvResult<bool> {
        self.write_key(key, |s, k, ctx| s.hsetnx(k, ctx, field, value))
    }

    /// HGET.
    fn hget(&self, key: &[u8], field: &[u8]) -> KvResult<Option<Vec<u8>>> {
        self.read_key(key, |s, k, ctx| Ok(s.read_hash(k, ctx.now)?.and_then(|h| h.get(field)).map(<[u8]>::to_vec)))
    }

    /// HMGET: one entry per field.
    fn hmget(&self, key: &[u8], fields: &[&[u8]]) -> KvResult<Vec<Option<Vec<u8>>>> {
        self.read_key(key, |s, k, ctx| {
            let hash = s.read_hash(k, ctx.now)?;
            Ok(fields.iter().map(|f| hash.and_then(|h| h.get(f)).map(<[u8]>::to_vec)).collect())
        })
    }

    /// HGETALL: every (field, value) pair.
    fn hgetall(&self, key: &[u8]) -> KvResult<FieldPairs> {
        self.read_key(key, |s, k, ctx| {
            Ok(s.read_hash(k, ctx.now)?
                .map(|h| h.iter().map(|(f, v)| (f.to_vec(), v.to_vec())).collect())
                .unwrap_or_default())
        })
    }

    /// HDEL: how many fields were removed; an emptied hash is deleted.
    fn hdel(&self, key: &[u8], fields: &[&[u8]]) -> KvResult<usize> {
        self.write_key(key, |s, k, ctx| s.hdel(k, ctx.now, fields))
    }

    /// HEXISTS.
    fn hexists(&self, key: &[u8], field: &[u8]) -> KvResult<bool> {
        self.read_key(key, |s, k, ctx| Ok(s.read_hash(k, ctx.now)?.is_some_and(|h| h.get(field).is_some())))
    }

    /// HLEN.
    fn hlen(&self, key: &[u8]) -> KvResult<usize> {
        self.read_key(key, |s, k, ctx| Ok(s.read_hash(k, ctx.now)?.map_or(0, |h| h.len())))
    }

    /// HSTRLEN.
    fn hstrlen(&self, key: &[u8], field: &[u8]) -> KvResult<usize> {
        self.read_key(key, |s, k, ctx| Ok(s.read_hash(k, ctx.now)?.and_then(|h| h.get(field)).map_or(0, <[u8]>::len)))
    }

    /// HINCRBY: returns the new value ("hash value is not an integer" /
    /// overflow errors as in Redis).
    fn hincr_by(&self, key: &[u8], field: &[u8], by: i64) -> KvResult<i64> {
        self.write_key(key, |s, k, ctx| s.hincr_by(k, ctx.now, field, by))
    }

    /// HINCRBYFLOAT: returns the new text.
    fn hincr_by_float(&self, key: &[u8], field: &[u8], by: f64) -> KvResult<Vec<u8>> {
        self.write_key(key, |s, k, ctx| s.hincr_by_float(k, ctx.now, field, by))
    }

    /// HKEYS.
    fn hkeys(&self, key: &[u8]) -> KvResult<Vec<Vec<u8>>> {
        self.read_key(key, |s, k, ctx| {
            Ok(s.read_hash(k, ctx.now)?.map(|h| h.iter().map(|(f, _)| f.to_vec()).collect()).unwrap_or_default())
        })
    }

    /// HRANDFIELD key count \[WITHVALUES\] (see `Shard::hrandfield`); values are empty
    /// without `with_values`.
    fn hrandfield(&self, key: &[u8], count: i64, with_values: bool) -> KvResult<FieldPairs> {
        self.read_key(key, |s, k, ctx| s.hrandfield(k, ctx.now, count, with_values))
    }

    /// HVALS.
    fn hvals(&self, key: &[u8]) -> KvResult<Vec<Vec<u8>>> {
        self.read_key(key, |s, k, ctx| {
            Ok(s.read_hash(k, ctx.now)?.map(|h| h.iter().map(|(_, v)| v.to_vec()).collect()).unwrap_or_default())
        })
    }

    /// HSCAN: `(next_cursor, pairs)`, same guarantee as [`scan`](Self::scan)
    /// for fields present throughout.
    fn hscan(&self, key: &[u8], cursor: u64, pattern: Option<&[u8]>, count: usize) -> KvResult<(u64, FieldPairs)> {
        self.read_key(key, |s, k, ctx| s.hscan(k, ctx.now, cursor, pattern, count))
    }

    // ----- lists ---------------------------------------------------------

    /// LPUSH/RPUSH (`only_existing`: LPUSHX/RPUSHX): the list's new length.
    fn push(&self, key: &[u8], end: End, items: &[&[u8]], only_existing: bool) -> KvResult<usize> {
        self.write_key(key, |s, k, ctx| s.push(k, ctx, end, items, only_existing))
    }

    /// LPOP/RPOP: up to `count` elements; `None` when the key is missing.
    fn pop(&self, key: &[u8], end: End, count: usize) -> KvResult<Option<Vec<Vec<u8>>>> {
        self.write_key(key, |s, k, ctx| s.pop(k, ctx.now, end, count))
    }

    /// LLEN.
    fn llen(&self, key: &[u8]) -> KvResult<usize> {
        self.read_key(key, |s, k, ctx| s.llen(k, ctx.now))
    }

    /// LINDEX.
    fn lindex(&self, key: &[u8], index: i64) -> KvResult<Option<Vec<u8>>> {
        self.read_key(key, |s, k, ctx| s.lindex(k, ctx.now, index))
    }

    /// LRANGE.
    fn lrange(&self, key: &[u8], start: i64, stop: i64) -> KvResult<Vec<Vec<u8>>> {
        self.read_key(key, |s, k, ctx| s.lrange(k, ctx.now, start, stop))
    }

    /// LRANGE without copying the elements: `f` walks them (none for a missing key)
    /// while the key's shard is read-locked, so it must be quick (e.g. encode a reply).
    fn lrange_with<R>(&self, key: &[u8], start: i64, stop: i64, f: impl FnOnce(ListIter<'_>) -> R) -> KvResult<R> {
        self.read_key(key, |s, k, ctx| s.lrange_with(k, ctx.now, start, stop, f))
    }

    /// LSET.
    fn lset(&self, key: &[u8], index: i64, item: &[u8]) -> KvResult<()> {
        self.write_key(key, |s, k, ctx| s.lset(k, ctx, index, item))
    }

    /// LINSERT: the new length, -1 without the pivot, 0 without the key.
    fn linsert(&self, key: &[u8], after: bool, pivot: &[u8], item: &[u8]) -> KvResult<i64> {
        self.write_key(key, |s, k, ctx| s.linsert(k, ctx, after, pivot, item))
    }

    /// LREM: how many elements equal to `item` were removed.
    fn lrem(&self, key: &[u8], count: i64, item: &[u8]) -> KvResult<usize> {
        self.write_key(key, |s, k, ctx| s.lrem(k, ctx.now, count, item))
    }

    /// LTRIM.
    fn ltrim(&self, key: &[u8], start: i64, stop: i64) -> KvResult<()> {
        self.write_key(key, |s, k, ctx| s.ltrim(k, ctx.now, start, stop))
    }

    /// LPOS: indexes of elements equal to `item`.
    fn lpos(&self, key: &[u8], item: &[u8], options: PosOptions) -> KvResult<Vec<usize>> {
        self.read_key(key, |s, k, ctx| s.lpos(k, ctx.now, item, options))
    }

    /// LMOVE (RPOPLPUSH): the element moved, `None` when `src` is missing.
    fn lmove(&self, src: &[u8], dst: &[u8], from: End, to: End) -> KvResult<Option<Vec<u8>>> {
        self.write_keys([src, dst], |g, ctx| g.lmove(src, dst, ctx, from, to))
    }

    /// LMPOP: the first of `keys` holding a list, with up to `count` elements popped.
    fn lmpop(&self, keys: &[&[u8]], end: End, count: usize) -> KvResult<Option<Popped>> {
        self.write_keys(keys.iter().copied(), |g, ctx| g.lmpop(keys, ctx.now, end, count))
    }

    // ----- sets ----------------------------------------------------------

    /// SADD: how many members were new.
    fn sadd(&self, key: &[u8], members: &[&[u8]]) -> KvResult<usize> {
        self.write_key(key, |s, k, ctx| s.sadd(k, ctx.now, members))
    }

    /// SREM: how many members were removed.
    fn srem(&self, key: &[u8], members: &[&[u8]]) -> KvResult<usize> {
        self.write_key(key, |s, k, ctx| s.srem(k, ctx.now, members))
    }

    /// SISMEMBER and SMISMEMBER: whether each of `members` is in the set.
    fn smismember(&self, key: &[u8], members: &[&[u8]]) -> KvResult<Vec<bool>> {
        self.read_key(key, |s, k, ctx| {
            let set = s.read_set(k, ctx.now)?;
            Ok(members.iter().map(|member| set.is_some_and(|set| set.contains(member))).collect())
        })
    }

    /// SCARD.
    fn scard(&self, key: &[u8]) -> KvResult<usize> {
        self.read_key(key, |s, k, ctx| Ok(s.read_set(k, ctx.now)?.map_or(0, |set| set.len())))
    }

    /// SMEMBERS.
    fn smembers(&self, key: &[u8]) -> KvResult<Vec<Vec<u8>>> {
        self.read_key(key, |s, k, ctx| {
            Ok(s.read_set(k, ctx.now)?.map(|set| set.iter().map(<[u8]>::to_vec).collect()).unwrap_or_default())
        })
    }

    /// SPOP: up to `count` random members, removed; `None` when the key is missing.
    fn spop(&self, key: &[u8], count: usize) -> KvResult<Option<Vec<Vec<u8>>>> {
        self.write_key(key, |s, k, ctx| s.spop(k, ctx.now, count))
    }

    /// SRANDMEMBER key count (see `Shard::srandmember`).
    fn srandmember(&self, key: &[u8], count: i64) -> KvResult<Vec<Vec<u8>>> {
        self.read_key(key, |s, k, ctx| s.srandmember(k, ctx.now, count))
    }

    /// SMOVE: whether `member` moved (or was already in `dst` == `src`).
    fn smove(&self, src: &[u8], dst: &[u8], member: &[u8]) -> KvResult<bool> {
        self.write_keys([src, dst], |g, ctx| g.smove(src, dst, ctx.now, member))
    }

    /// SINTER, SUNION, SDIFF.
    fn set_algebra(&self, algebra: SetAlgebra, keys: &[&[u8]]) -> KvResult<Vec<Vec<u8>>> {
        self.read_keys(keys.iter().copied(), |g, ctx| g.set_algebra(algebra, keys, ctx.now))
    }

    /// SINTERSTORE, SUNIONSTORE, SDIFFSTORE: the stored result's size.
    fn set_algebra_store(&self, algebra: SetAlgebra, dst: &[u8], keys: &[&[u8]]) -> KvResult<usize> {
        let all = std::iter::once(dst).chain(keys.iter().copied());
        self.write_keys(all, |g, ctx| g.set_algebra_store(algebra, dst, keys, ctx.now))
    }

    /// SINTERCARD: the intersection's size, counting stops at `limit` (0: none).
    fn sintercard(&self, keys: &[&[u8]], limit: usize) -> KvResult<usize> {
        self.read_keys(keys.iter().copied(), |g, ctx| g.sintercard(keys, ctx.now, limit))
    }

    /// SSCAN: `(next_cursor, members)`, as HSCAN.
    fn sscan(&self, key: &[u8], cursor: u64, pattern: Option<&[u8]>, count: usize) -> KvResult<(u64, Vec<Vec<u8>>)> {
        self.read_key(key, |s, k, ctx| s.sscan(k, ctx.now, cursor, pattern, count))
    }

    // ----- SORT ----------------------------------------------------------

    /// SORT and SORT_RO: the answer's items (see `ShardGroup::sort`). With BY or GET
    /// patterns every shard is read-locked, as the patterns may name any key.
    fn sort(&self, key: &[u8], options: &SortOptions) -> KvResult<Vec<Option<Vec<u8>>>> {
        let idxs =
            if options.reads_other_keys() { self.router().all_shards() } else { self.router().shards_for([key]) };
        self.read_group(&idxs, |g, ctx| g.sort(key, options, ctx.now, false))
    }

    /// SORT ... STORE: the stored list's length.
    fn sort_store(&self, key: &[u8], dst: &[u8], options: &SortOptions) -> KvResult<usize> {
        let idxs = match options.reads_other_keys() {
            true => self.router().all_shards(),
            false => self.router().shards_for([key, dst]),
        };
        self.write_group(&idxs, |g, ctx| g.sort_store(key, dst, options, ctx.now))
    }

    // ----- HyperLogLog -----------------------------------------------------

    /// PFADD: whether the HyperLogLog changed.
    fn pfadd(&self, key: &[u8], elements: &[&[u8]]) -> KvResult<bool> {
        self.write_key(key, |s, k, ctx| s.pfadd(k, ctx.now, elements))
    }

    /// PFCOUNT: one key's estimate (refreshing its cache), or the union's of several.
    fn pfcount(&self, keys: &[&[u8]]) -> KvResult<u64> {
        match keys {
            [key] => self.write_key(key, |s, k, ctx| s.pfcount(k, ctx.now)),
            _ => self.read_keys(keys.iter().copied(), |g, ctx| g.pfcount_union(keys, ctx.now)),
        }
    }

    /// PFMERGE.
    fn pfmerge(&self, dst: &[u8], sources: &[&[u8]]) -> KvResult<()> {
        let all = std::iter::once(dst).chain(sources.iter().copied());
        self.write_keys(all, |g, ctx| g.pfmerge(dst, sources, ctx.now))
    }

    /// PFDEBUG.
    fn pfdebug(&self, key: &[u8], what: PfDebug) -> KvResult<PfDebugAnswer> {
        self.write_key(key, |s, k, ctx| s.pfdebug(k, ctx.now, what))
    }

    // ----- geo -------------------------------------------------------------

    /// GEOSEARCH, GEORADIUS, GEORADIUSBYMEMBER: the points found, `None` for a missing key.
    fn geo_search(&self, key: &[u8], search: &GeoSearch) -> KvResult<Option<Vec<Found>>> {
        self.read_keys([key], |g, ctx| g.geo_search(key, search, ctx.now))
    }

    /// GEOSEARCHSTORE and GEORADIUS ... STORE, as one write: `pick` turns the points found
    /// into the (member, score) pairs to store (sorted, cut, scored as asked); the stored
    /// count. A missing source stores nothing (and deletes `dst`).
    fn geo_search_store(
        &self,
        dst: &[u8],
        src: &[u8],
        search: &GeoSearch,
        event: &'static str,
        pick: impl FnOnce(Vec<Found>) -> Vec<(Vec<u8>, f64)>,
    ) -> KvResult<usize> {
        self.write_keys([dst, src], |g, ctx| {
            let found = g.geo_search(src, search, ctx.now)?.unwrap_or_default();
            g.geo_store(dst, &pick(found), ctx.now, event)
        })
    }

    // ----- sorted sets ---------------------------------------------------

    /// ZADD (and ZINCRBY, with `options.incr`).
    fn zadd(&self, key: &[u8], options: ZAddOptions, pairs: &[(f64, &[u8])]) -> KvResult<ZAddOutcome> {
        self.write_key(key, |s, k, ctx| s.zadd(k, ctx.now, options, pairs))
    }

    /// ZREM: how many members were removed.
    fn zrem(&self, key: &[u8], members: &[&[u8]]) -> KvResult<usize> {
        self.write_key(key, |s, k, ctx| s.zrem(k, ctx.now, members))
    }

    /// ZCARD.
    fn zcard(&self, key: &[u8]) -> KvResult<usize> {
        self.read_key(key, |s, k, ctx| Ok(s.read_zset(k, ctx.now)?.map_or(0, |set| set.len())))
    }

    /// ZSCORE and ZMSCORE: each member's score.
    fn zmscore(&self, key: &[u8], members: &[&[u8]]) -> KvResult<Vec<Option<f64>>> {
        self.read_key(key, |s, k, ctx| {
            let set = s.read_zset(k, ctx.now)?;
            Ok(members.iter().map(|member| set.and_then(|set| set.score(member))).collect())
        })
    }

    /// ZRANK and ZREVRANK (`rev`).
    fn zrank(&self, key: &[u8], member: &[u8], rev: bool) -> KvResult<Option<usize>> {
        self.read_key(key, |s, k, ctx| {
            let Some(set) = s.read_zset(k, ctx.now)? else { return Ok(None) };
            Ok(set.rank(member).map(|rank| if rev { set.len() - 1 - rank } else { rank }))
        })
    }

    /// ZCOUNT and ZLEXCOUNT.
    fn zcount(&self, key: &[u8], by: &ZRangeBy) -> KvResult<usize> {
        self.read_key(key, |s, k, ctx| s.zcount(k, ctx.now, by))
    }

    /// ZRANGE in every form.
    fn zrange(&self, key: &[u8], range: &ZRange) -> KvResult<Scored> {
        self.read_key(key, |s, k, ctx| s.zrange(k, ctx.now, range))
    }

    /// ZRANGESTORE: the stored result's size.
    fn zrangestore(&self, dst: &[u8], src: &[u8], range: &ZRange) -> KvResult<usize> {
        self.write_keys([dst, src], |g, ctx| g.zrangestore(dst, src, range, ctx.now))
    }

    /// ZREMRANGEBYRANK, ZREMRANGEBYSCORE, ZREMRANGEBYLEX.
    fn zremrange(&self, key: &[u8], by: &ZRangeBy) -> KvResult<usize> {
        self.write_key(key, |s, k, ctx| s.zremrange(k, ctx.now, by))
    }

    /// ZPOPMIN and ZPOPMAX (`max`); `None` when the key is missing.
    fn zpop(&self, key: &[u8], max: bool, count: usize) -> KvResult<Option<Scored>> {
        self.write_key(key, |s, k, ctx| s.zpop(k, ctx.now, max, count))
    }

    /// ZMPOP: the first of `keys` holding a sorted set, with what was popped from it.
    fn zmpop(&self, keys: &[&[u8]], max: bool, count: usize) -> KvResult<Option<(Vec<u8>, Scored)>> {
        self.write_keys(keys.iter().copied(), |g, ctx| g.zmpop(keys, ctx.now, max, count))
    }

    /// ZRANDMEMBER key count (see `Shard::zrandmember`).
    fn zrandmember(&self, key: &[u8], count: i64) -> KvResult<Scored> {
        self.read_key(key, |s, k, ctx| s.zrandmember(k, ctx.now, count))
    }

    /// ZUNION, ZINTER, ZDIFF.
    fn zalgebra(&self, algebra: ZAlgebra, keys: &[&[u8]], combine: &Combine) -> KvResult<Scored> {
        self.read_keys(keys.iter().copied(), |g, ctx| g.zalgebra(algebra, keys, combine, ctx.now))
    }

    /// ZUNIONSTORE, ZINTERSTORE, ZDIFFSTORE: the stored result's size.
    fn zalgebra_store(&self, algebra: ZAlgebra, dst: &[u8], keys: &[&[u8]], combine: &Combine) -> KvResult<usize> {
        let all = std::iter::once(dst).chain(keys.iter().copied());
        self.write_keys(all, |g, ctx| g.zalgebra_store(algebra, dst, keys, combine, ctx.now))
    }

    /// ZINTERCARD: the intersection's size, counting stops at `limit` (0: none).
    fn zintercard(&self, keys: &[&[u8]], limit: usize) -> KvResult<usize> {
        self.read_keys(keys.iter().copied(), |g, ctx| g.zintercard(keys, ctx.now, limit))
    }

    /// ZSCAN: `(next_cursor, members with scores)`.
    fn zscan(&self, key: &[u8], cursor: u64, pattern: Option<&[u8]>, count: usize) -> KvResult<(u64, Scored)> {
        self.read_key(key, |s, k, ctx| s.zscan(k, ctx.now, cursor, pattern, count))
    }

    // ----- streams -------------------------------------------------------

    /// XADD: the id added; `None` with NOMKSTREAM on a missing key.
    fn xadd(&self, key: &[u8], args: &XAdd<'_>) -> KvResult<Option<StreamId>> {
        self.write_key(key, |s, k, ctx| s.xadd(k, ctx.now, args))
    }

    /// XRANGE and XREVRANGE (`rev`); `count` 0: all.
    fn xrange(
        &self,
        key: &[u8],
        start: StreamId,
        end: StreamId,
        count: usize,
        rev: bool,
    ) -> KvResult<Vec<StreamEntry>> {
        self.read_key(key, |s, k, ctx| s.xrange(k, ctx.now, start, end, count, rev))
    }

    /// XLEN.
    fn xlen(&self, key: &[u8]) -> KvResult<u64> {
        self.read_key(key, |s, k, ctx| Ok(s.read_stream(k, ctx.now)?.map_or(0, |stream| stream.len())))
    }

    /// XDEL: how many entries were deleted.
    fn xdel(&self, key: &[u8], ids: &[StreamId]) -> KvResult<usize> {
        self.write_key(key, |s, k, ctx| s.xdel(k, ctx.now, ids))
    }

    /// XTRIM: how many entries were removed.
    fn xtrim(&self, key: &[u8], trim: TrimArgs) -> KvResult<u64> {
        self.write_key(key, |s, k, ctx| s.xtrim(k, ctx.now, trim))
    }

    /// XSETID.
    fn xsetid(
        &self,
        key: &[u8],
        id: StreamId,
        entries_added: Option<u64>,
        max_deleted: Option<StreamId>,
    ) -> KvResult<()> {
        self.write_key(key, |s, k, ctx| s.xsetid(k, ctx.now, id, entries_added, max_deleted))
    }

    /// XREAD, not blocking: see `ShardGroup::xread` (resolves `$` in `from`).
    fn xread(&self, keys: &[Vec<u8>], from: &mut [XFrom], count: usize) -> KvResult<Vec<(Vec<u8>, Vec<StreamEntry>)>> {
        self.read_keys(keys.iter().map(Vec::as_slice), |g, ctx| g.xread(keys, from, count, ctx.now))
    }

    /// XREADGROUP, not blocking: see `ShardGroup::xreadgroup`.
    fn xreadgroup(
        &self,
        keys: &[Vec<u8>],
        from: &[XGroupFrom],
        read: &XReadGroup,
        count: usize,
    ) -> KvResult<Vec<(Vec<u8>, Vec<MaybeEntry>)>> {
        self.write_keys(keys.iter().map(Vec::as_slice), |g, ctx| g.xreadgroup(keys, from, read, count, ctx.now))
    }

    /// XGROUP CREATE (`from` `None`: `$`).
    fn xgroup_create(
        &self,
        key: &[u8],
        group: &[u8],
        from: Option<StreamId>,
        mkstream: bool,
        entries_read: i64,
    ) -> KvResult<()> {
        self.write_key(key, |s, k, ctx| s.xgroup_create(k, ctx.now, group, from, mkstream, entries_read))
    }

    /// XGROUP SETID (`from` `None`: `$`).
    fn xgroup_setid(&self, key: &[u8], group: &[u8], from: Option<StreamId>, entries_read: i64) -> KvResult<()> {
        self.write_key(key, |s, k, ctx| s.xgroup_setid(k, ctx.now, group, from, entries_read))
    }

    /// XGROUP DESTROY.
    fn xgroup_destroy(&self, key: &[u8], group: &[u8]) -> KvResult<bool> {
        self.write_key(key, |s, k, ctx| s.xgroup_destroy(k, ctx.now, group))
    }

    /// XGROUP CREATECONSUMER.
    fn xgroup_createconsumer(&self, key: &[u8], group: &[u8], consumer: &[u8]) -> KvResult<bool> {
        self.write_key(key, |s, k, ctx| s.xgroup_createconsumer(k, ctx.now, group, consumer))
    }

    /// XGROUP DELCONSUMER.
    fn xgroup_delconsumer(&self, key: &[u8], group: &[u8], consumer: &[u8]) -> KvResult<usize> {
        self.write_key(key, |s, k, ctx| s.xgroup_delconsumer(k, ctx.now, group, consumer))
    }

    /// XACK.
    fn xack(&self, key: &[u8], group: &[u8], ids: &[StreamId]) -> KvResult<usize> {
        self.write_key(key, |s, k, ctx| s.xack(k, ctx.now, group, ids))
    }

    /// XPENDING key group.
    fn xpending_summary(&self, key: &[u8], group: &[u8]) -> KvResult<PendingSummary> {
        self.read_key(key, |s, k, ctx| s.xpending_summary(k, ctx.now, group))
    }

    /// XPENDING's extended form; idle times are measured against the returned "now".
    #[allow(clippy::too_many_arguments)]
    fn xpending_range(
        &self,
        key: &[u8],
        group: &[u8],
        min_idle: i64,
        start: StreamId,
        end: StreamId,
        count: usize,
        consumer: Option<&[u8]>,
    ) -> KvResult<(u64, Vec<PendingInfo>)> {
        self.read_key(key, |s, k, ctx| {
            Ok((ctx.now, s.xpending_range(k, ctx.now, group, min_idle, start, end, count, consumer)?))
        })
    }

    /// XCLAIM.
    fn xclaim(
        &self,
        key: &[u8],
        group: &[u8],
        consumer: &[u8],
        min_idle: i64,
        ids: &[StreamId],
        options: XClaimOptions,
    ) -> KvResult<Vec<Claimed>> {
        self.write_key(key, |s, k, ctx| s.xclaim(k, ctx.now, group, consumer, min_idle, ids, options))
    }

    /// XAUTOCLAIM.
    #[allow(clippy::too_many_arguments)]
    fn xautoclaim(
        &self,
        key: &[u8],
        group: &[u8],
        consumer: &[u8],
        min_idle: i64,
        start: StreamId,
        count: usize,
        justid: bool,
    ) -> KvResult<(StreamId, Vec<Claimed>, Vec<StreamId>)> {
        self.write_key(key, |s, k, ctx| s.xautoclaim(k, ctx.now, group, consumer, min_idle, start, count, justid))
    }

    /// XINFO STREAM.
    fn xinfo_stream(&self, key: &[u8]) -> KvResult<StreamInfo> {
        self.read_key(key, |s, k, ctx| s.xinfo_stream(k, ctx.now))
    }

    /// XINFO STREAM FULL (`count` 0: everything).
    fn xinfo_stream_full(&self, key: &[u8], count: usize) -> KvResult<StreamFull> {
        self.read_key(key, |s, k, ctx| s.xinfo_stream_full(k, ctx.now, count))
    }

    /// XINFO GROUPS.
    fn xinfo_groups(&self, key: &[u8]) -> KvResult<Vec<GroupInfo>> {
        self.read_key(key, |s, k, ctx| s.xinfo_groups(k, ctx.now))
    }

    /// XINFO CONSUMERS.
    fn xinfo_consumers(&self, key: &[u8], group: &[u8]) -> KvResult<Vec<ConsumerInfo>> {
        self.read_key(key, |s, k, ctx| s.xinfo_consumers(k, ctx.now, group))
    }
}
