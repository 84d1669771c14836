//! Cursor-based iteration: SCAN over a keyspace, HSCAN over a hash, SSCAN over a set and
//! ZSCAN over a sorted set.
//!
//! Owns: the cursor encodings and the loop that spends a SCAN budget across
//! shards.
//!
//! Must never: hold more than one shard lock at a time while scanning (a
//! full SCAN must not stall the keyspace), or return an expired key.
//!
//! Invariants — how SCAN's guarantee works:
//! - The keyspace is one fixed sequence of positions: shard 0 slots 0, 1, …,
//!   then shard 1, and so on. A key's shard is fixed by its hash and its slot
//!   never changes while it is present (`slab_map.rs`), so every key present
//!   for the whole scan has one fixed position in this sequence.
//! - A SCAN cursor is `shard (16 bits) | epoch (16 bits) | slot (32 bits)`.
//!   Each call examines a contiguous run of positions starting exactly at
//!   the cursor and returns the first position it did not examine, so the
//!   calls together examine every position, each one at a moment when that
//!   shard was read-locked. A key present throughout is therefore returned
//!   at least once. Keys added or removed during the scan may or may not be
//!   returned, and no key is skipped by concurrent inserts or deletes.
//! - The one event that moves present keys, slab compaction, bumps the
//!   shard's epoch; a cursor carrying another epoch restarts that shard at
//!   slot 0. That can return duplicates (allowed) but never skips.
//! - Cursor 0 starts a scan and a returned 0 ends it; an intermediate cursor
//!   is never 0 because every call advances by at least one position.
//! - HSCAN and SSCAN use the same scheme on a hash's field slab (a set's member slab) with cursor
//!   `epoch (16 bits) | slot (32 bits)`.

use crate::access::{KvResult, ShardAccess};
use crate::store::glob::Glob;
use crate::store::router::KeyRef;
use crate::store::shard::Shard;
use crate::store::slab_map::{ScanBudget, SlabCursor};
use crate::types::zsets::Scored;

const SLOT_BITS: u32 = 32;
const EPOCH_BITS: u32 = 16;
const SHARD_SHIFT: u32 = SLOT_BITS + EPOCH_BITS;

pub(crate) fn encode_slab(c: SlabCursor) -> u64 {
    (u64::from(c.epoch) << SLOT_BITS) | u64::from(c.slot)
}

pub(crate) fn decode_slab(cursor: u64) -> SlabCursor {
    SlabCursor { epoch: (cursor >> SLOT_BITS) as u16, slot: cursor as u32 }
}

fn encode_key_cursor(shard: usize, c: SlabCursor) -> u64 {
    ((shard as u64) << SHARD_SHIFT) | encode_slab(c)
}

fn decode_key_cursor(cursor: u64) -> (usize, SlabCursor) {
    ((cursor >> SHARD_SHIFT) as usize, decode_slab(cursor))
}

/// SCAN: returns the next cursor (0 when done) and the matching keys seen.
/// `count` is Redis' COUNT hint: roughly how many keys to examine.
pub fn scan_keys<A: ShardAccess + ?Sized>(
    access: &A,
    cursor: u64,
    pattern: Option<&[u8]>,
    count: usize,
) -> KvResult<(u64, Vec<Vec<u8>>)> {
    let glob = Glob::optional(pattern);
    let shard_count = access.router().shard_count();
    let mut budget = ScanBudget::for_count(count);
    let mut keys = Vec::new();
    let (mut shard, mut pos) = decode_key_cursor(cursor);
    while shard < shard_count {
        let resume = access.read_shard(shard, |s, ctx| {
            Ok(s.scan(pos, &mut budget, ctx.now, |key, _| {
                if glob.matches(key) {
                    keys.push(key.to_vec());
                }
            }))
        })?;
        if let Some(resume) = resume {
            return Ok((encode_key_cursor(shard, resume), keys));
        }
        shard += 1;
        pos = SlabCursor::default();
        if budget.exhausted() {
            break;
        }
    }
    let next = if shard < shard_count { encode_key_cursor(shard, pos) } else { 0 };
    Ok((next, keys))
}

/// (field, value) pairs returned by HSCAN.
pub type FieldPairs = Vec<(Vec<u8>, Vec<u8>)>;

/// One HSCAN or SSCAN step over a collection's slab: `walk` goes on from `cursor` with
/// COUNT's budget, handing `found` what matches `pattern`; the next cursor and what it found.
fn collection_step<T>(
    cursor: u64,
    pattern: Option<&[u8]>,
    count: usize,
    walk: impl FnOnce(SlabCursor, &mut ScanBudget, &Glob, &mut Vec<T>) -> Option<SlabCursor>,
) -> (u64, Vec<T>) {
    let glob = Glob::optional(pattern);
    let mut budget = ScanBudget::for_count(count);
    let mut found = Vec::new();
    let resume = walk(decode_slab(cursor), &mut budget, &glob, &mut found);
    (resume.map_or(0, encode_slab), found)
}

impl Shard {
    /// HSCAN of the hash at `key` (a missing key is an empty, finished scan).
    pub fn hscan(
        &self,
        key: KeyRef<'_>,
        now: u64,
        cursor: u64,
        pattern: Option<&[u8]>,
        count: usize,
    ) -> KvResult<(u64, FieldPairs)> {
        let Some(hash) = self.read_hash(key, now)? else { return Ok((0, Vec::new())) };
        Ok(collection_step(cursor, pattern, count, |at, budget, glob, pairs| {
            hash.scan(at, budget, |field, value| {
                if glob.matches(field) {
                    pairs.push((field.to_vec(), value.to_vec()));
                }
            })
        }))
    }

    /// SSCAN of the set at `key` (a missing key is an empty, finished scan).
    pub fn sscan(
        &self,
        key: KeyRef<'_>,
        now: u64,
        cursor: u64,
        pattern: Option<&[u8]>,
        count: usize,
    ) -> KvResult<(u64, Vec<Vec<u8>>)> {
        let Some(set) = self.read_set(key, now)? else { return Ok((0, Vec::new())) };
        Ok(collection_step(cursor, pattern, count, |at, budget, glob, members| {
            set.scan(at, budget, |member| {
                if glob.matches(member) {
                    members.push(member.to_vec());
                }
            })
        }))
    }

    /// ZSCAN of the sorted set at `key` (a missing key is an empty, finished scan).
    pub fn zscan(
        &self,
        key: KeyRef<'_>,
        now: u64,
        cursor: u64,
        pattern: Option<&[u8]>,
        count: usize,
    ) -> KvResult<(u64, Scored)> {
        let Some(set) = self.read_zset(key, now)? else { return Ok((0, Vec::new())) };
        Ok(collection_step(cursor, pattern, count, |at, budget, glob, members| {
            set.scan(at, budget, |member, score| {
                if glob.matches(member) {
                    members.push((member.to_vec(), score));
                }
            })
        }))
    }
}
