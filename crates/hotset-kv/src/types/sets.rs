//! Set commands, as operations on locked shards.
//!
//! Owns: the semantics of SADD, SREM, SISMEMBER, SMISMEMBER, SCARD, SMEMBERS, SPOP,
//! SRANDMEMBER and SSCAN on one shard, and of SMOVE and the set algebra (SINTER,
//! SINTERCARD, SUNION, SDIFF and their STORE forms) on a group of shards.
//!
//! Must never: leave an empty set stored (SREM, SPOP and SMOVE delete an emptied set; a
//! STORE of an empty result deletes the destination), or change a set before every
//! fallible check passed.
//!
//! Logging: a write to an existing set notes the members it may change
//! (`LiveEntry::touch_fields`), so the record holds those members only; a new or
//! replaced set is logged whole.
//!
//! Events, as Redis 7.0 notes them, only for a write that changed the set: `sadd`,
//! `srem`, `spop` (then `del` when the set emptied); SMOVE `srem` on the source (and its
//! `del`) then `sadd` on the destination; the STORE forms `sinterstore`, `sunionstore` or
//! `sdiffstore` on the destination, or `del` when an empty result deleted it.

use std::ops::{Deref, DerefMut};

use crate::access::{KvResult, ShardGroup};
use crate::error::KvError;
use crate::notify::class;
use crate::store::router::KeyRef;
use crate::store::shard::Shard;
use crate::types::sample::sample;
use crate::types::set::MemberSet;
use crate::value::{Entry, Value};
use rand::RngExt;

/// The set inside `value`, or WRONGTYPE.
fn as_set(value: &Value) -> KvResult<&MemberSet> {
    match value {
        Value::Set(set) => Ok(set),
        _ => Err(KvError::WrongType),
    }
}

/// The set inside `value`, mutably; the caller checked the type.
fn set_mut(value: &mut Value) -> &mut MemberSet {
    match value {
        Value::Set(set) => set,
        _ => unreachable!("the caller checked that the key holds a set"),
    }
}

/// Which algebra a multi-key set command computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetAlgebra {
    /// Members in every set (a missing key is an empty set).
    Inter,
    /// Members in any set.
    Union,
    /// Members of the first set in none of the others.
    Diff,
}

impl Shard {
    /// The set stored at `key` (None if missing), or WRONGTYPE.
    pub fn read_set(&self, key: KeyRef<'_>, now: u64) -> KvResult<Option<&MemberSet>> {
        self.get(key, now).map(|entry| as_set(&entry.value)).transpose()
    }

    /// SADD: how many members were new.
    pub fn sadd(&mut self, key: KeyRef<'_>, now: u64, members: &[&[u8]]) -> KvResult<usize> {
        let added = match self.get_mut_untouched(key, now) {
            Some(mut live) => {
                as_set(live.value())?;
                live.touch_fields(members.iter().copied());
                live.update(|value| {
                    let set = set_mut(value);
                    members.iter().filter(|member| set.insert(member)).count()
                })
            }
            None => {
                let mut set = MemberSet::default();
                let added = members.iter().filter(|member| set.insert(member)).count();
                if added > 0 {
                    self.insert(key, Entry::new(Value::Set(Box::new(set)), None));
                }
                added
            }
        };
        if added > 0 {
            self.event(class::SET, "sadd", key.bytes);
        }
        Ok(added)
    }

    /// SREM: how many members were removed; deletes an emptied set.
    pub fn srem(&mut self, key: KeyRef<'_>, now: u64, members: &[&[u8]]) -> KvResult<usize> {
        let (removed, emptied) = self.remove_members(key, now, members)?;
        if removed > 0 {
            self.event(class::SET, "srem", key.bytes);
        }
        if emptied {
            self.event(class::GENERIC, "del", key.bytes);
        }
        Ok(removed)
    }

    /// `srem` without its events (SMOVE notes them on the destination's shard): how many
    /// members went, and whether the set was emptied and deleted.
    fn remove_members(&mut self, key: KeyRef<'_>, now: u64, members: &[&[u8]]) -> KvResult<(usize, bool)> {
        let Some(mut live) = self.get_mut_untouched(key, now) else { return Ok((0, false)) };
        as_set(live.value())?;
        live.touch_fields(members.iter().copied());
        let (removed, empty) = live.update(|value| {
            let set = set_mut(value);
            (members.iter().filter(|member| set.remove(member)).count(), set.is_empty())
        });
        if empty {
            live.remove();
            self.touch(key.bytes);
        }
        Ok((removed, empty))
    }

    /// SPOP: up to `count` random distinct members, removed; `None` when the key is
    /// missing. Deletes an emptied set.
    pub fn spop(&mut self, key: KeyRef<'_>, now: u64, count: usize) -> KvResult<Option<Vec<Vec<u8>>>> {
        let Some(mut live) = self.get_mut_untouched(key, now) else { return Ok(None) };
        let set = as_set(live.value())?;
        if count >= set.len() {
            let all = set.iter().map(<[u8]>::to_vec).collect();
            live.remove();
            self.touch(key.bytes);
            self.event(class::SET, "spop", key.bytes);
            self.event(class::GENERIC, "del", key.bytes);
            return Ok(Some(all));
        }
        let chosen = random_members(set, count as i64);
        live.touch_fields(chosen.iter().map(Vec::as_slice));
        live.update(|value| {
            let set = set_mut(value);
            chosen.iter().for_each(|member| {
                let _ = set.remove(member);
            });
        });
        // SPOP with a count of 0 pops nothing, and Redis notes nothing.
        if !chosen.is_empty() {
            self.event(class::SET, "spop", key.bytes);
        }
        Ok(Some(chosen))
    }

    /// SRANDMEMBER key count (see `sample`); a missing key has none.
    pub fn srandmember(&self, key: KeyRef<'_>, now: u64, count: i64) -> KvResult<Vec<Vec<u8>>> {
        Ok(self.read_set(key, now)?.map(|set| random_members(set, count)).unwrap_or_default())
    }
}

/// `count` random members of `set` by Redis' count rules.
fn random_members(set: &MemberSet, count: i64) -> Vec<Vec<u8>> {
    let mut rng = rand::rng();
    let picked = sample(count, set.len(), || set.random(|n| rng.random_range(0..n)), || set.iter().collect());
    picked.into_iter().map(<[u8]>::to_vec).collect()
}

impl<S: Deref<Target = Shard>> ShardGroup<S> {
    /// The sets at `keys`, in order (`None` for a missing key); WRONGTYPE on any other type.
    fn sets<'s>(&'s self, keys: &[&[u8]], now: u64) -> KvResult<Vec<Option<&'s MemberSet>>> {
        keys.iter()
            .map(|key| {
                let (shard, key) = self.shard(key)?;
                shard.read_set(key, now)
            })
            .collect()
    }

    /// SINTER, SUNION, SDIFF: the resulting members. Every key is checked for its type
    /// first (WRONGTYPE whatever else is missing, as Redis 7 does).
    pub fn set_algebra(&self, algebra: SetAlgebra, keys: &[&[u8]], now: u64) -> KvResult<Vec<Vec<u8>>> {
        let sets = self.sets(keys, now)?;
        if algebra == SetAlgebra::Inter {
            let Some(sets) = sets.into_iter().collect::<Option<Vec<_>>>() else { return Ok(Vec::new()) };
            return Ok(intersection(&sets, usize::MAX));
        }
        let present = || sets.iter().flatten();
        Ok(match algebra {
            SetAlgebra::Union => {
                let mut union = MemberSet::default();
                present().flat_map(|set| set.iter()).for_each(|member| {
                    let _ = union.insert(member);
                });
                union.iter().map(<[u8]>::to_vec).collect()
            }
            _ => {
                let Some(Some(first)) = sets.first() else { return Ok(Vec::new()) };
                let rest = &sets[1..];
                first
                    .iter()
                    .filter(|member| !rest.iter().flatten().any(|other| other.contains(member)))
                    .map(<[u8]>::to_vec)
                    .collect()
            }
        })
    }

    /// SINTERCARD: the size of the intersection, counting stops at `limit` (0: none).
    pub fn sintercard(&self, keys: &[&[u8]], now: u64, limit: usize) -> KvResult<usize> {
        let Some(sets) = self.sets(keys, now)?.into_iter().collect::<Option<Vec<_>>>() else { return Ok(0) };
        Ok(intersection(&sets, if limit == 0 { usize::MAX } else { limit }).len())
    }
}

/// Members in all of `sets` (walking the smallest), at most `limit` of them.
fn intersection(sets: &[&MemberSet], limit: usize) -> Vec<Vec<u8>> {
    let Some(smallest) = sets.iter().min_by_key(|set| set.len()) else { return Vec::new() };
    smallest
        .iter()
        .filter(|member| sets.iter().all(|set| set.contains(member)))
        .take(limit)
        .map(<[u8]>::to_vec)
        .collect()
}

impl<S: DerefMut<Target = Shard>> ShardGroup<S> {
    /// SINTERSTORE, SUNIONSTORE, SDIFFSTORE: stores the result at `dst` (replacing it,
    /// without a TTL; an empty result deletes it); the result's size.
    pub fn set_algebra_store(&mut self, algebra: SetAlgebra, dst: &[u8], keys: &[&[u8]], now: u64) -> KvResult<usize> {
        let members = self.set_algebra(algebra, keys, now)?;
        let len = members.len();
        let (shard, dst) = self.shard_mut(dst)?;
        if len == 0 {
            if shard.remove(dst, now).is_some() {
                shard.event(class::GENERIC, "del", dst.bytes);
            }
            return Ok(0);
        }
        shard.put(dst, now, Value::Set(Box::new(members.into_iter().collect())), None);
        let event = match algebra {
            SetAlgebra::Inter => "sinterstore",
            SetAlgebra::Union => "sunionstore",
            SetAlgebra::Diff => "sdiffstore",
        };
        shard.event(class::SET, event, dst.bytes);
        Ok(len)
    }

    /// SMOVE: moves `member` from `src` to `dst`; false when `src` does not hold it.
    /// WRONGTYPE when either key holds another type, checked before anything moves.
    /// Its events are all noted on `dst`'s shard, so they keep Redis' order across shards.
    pub fn smove(&mut self, src: &[u8], dst: &[u8], now: u64, member: &[u8]) -> KvResult<bool> {
        let (shard, src_key) = self.shard(src)?;
        let Some(set) = shard.read_set(src_key, now)? else { return Ok(false) };
        let found = set.contains(member);
        let (dst_shard, dst_key) = self.shard(dst)?;
        let already = dst_shard.read_set(dst_key, now)?.is_some_and(|set| set.contains(member));
        if !found {
            return Ok(false);
        }
        if src == dst {
            return Ok(true);
        }
        let (shard, src_key) = self.shard_mut(src)?;
        let (_, emptied) = shard.remove_members(src_key, now, &[member])?;
        let (dst_shard, dst_key) = self.shard_mut(dst)?;
        dst_shard.event(class::SET, "srem", src);
        if emptied {
            dst_shard.event(class::GENERIC, "del", src);
        }
        // A destination that holds the member already is not written (nor touched, so a
        // client watching it sees no change), as in Redis.
        if !already {
            dst_shard.sadd(dst_key, now, &[member])?;
        }
        Ok(true)
    }
}
