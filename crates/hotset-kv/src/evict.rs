//! Which keys go when the server is over `maxmemory`: Redis' eviction policies, over every
//! keyspace of a registry.
//!
//! Owns: [`EvictionPolicy`] (the eight policies by Redis' names), [`Evictor`] (the
//! candidates kept between rounds, as Redis keeps its pool of 16) and the one-key step
//! [`Keyspaces::evict_one`]. Never: decide whether memory is short (the server reads the
//! allocator and calls this while it is), touch documents (namespaces are not evictable:
//! their writes are refused instead), or hold one shard's lock while sampling another.
//!
//! How a key is chosen, as Redis does it: the ranked policies (LRU, LFU, TTL) sample
//! `samples` keys of each keyspace (all keys, or those with a TTL for `volatile-*`), rank
//! each (idle time; 255 minus the access counter; how soon it expires) and keep the best
//! 16 of everything sampled so far. The best candidate still present is evicted; one that
//! another client deleted meanwhile is dropped, and an empty pool is filled again. The
//! random policies take a random key of each keyspace in turn. A key already past its
//! deadline that eviction meets is deleted as expired (its memory is freed all the same).
//! Each eviction is a logged delete, like DEL, so a restart does not bring the key back.

use std::sync::Arc;

use crate::access::{KvResult, ShardAccess};
use crate::keyspace::Keyspace;
use crate::ops::KvOps;
use crate::recency::{eviction_rank, random_below};
use crate::registry::Keyspaces;
use hotset_base::journal::Durability;

/// How many candidates the pool keeps (Redis' `EVPOOL_SIZE`).
const POOL_SIZE: usize = 16;
/// Rounds of sampling one eviction may take before it gives up: each round either evicts
/// or found only keys deleted meanwhile, which a busy server can repeat but not forever.
const MAX_ROUNDS: usize = 16;

/// `maxmemory-policy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EvictionPolicy {
    /// Evict nothing: writes that need memory are refused.
    #[default]
    NoEviction,
    /// The least recently used of all keys.
    AllKeysLru,
    /// The least frequently used of all keys.
    AllKeysLfu,
    /// Any key.
    AllKeysRandom,
    /// The least recently used of the keys with a TTL.
    VolatileLru,
    /// The least frequently used of the keys with a TTL.
    VolatileLfu,
    /// Any key with a TTL.
    VolatileRandom,
    /// The key with a TTL that expires soonest.
    VolatileTtl,
}

impl EvictionPolicy {
    /// Every policy, in the order of [`NAMES`](Self::NAMES).
    pub const ALL: [EvictionPolicy; 8] = [
        EvictionPolicy::VolatileLru,
        EvictionPolicy::VolatileLfu,
        EvictionPolicy::VolatileRandom,
        EvictionPolicy::VolatileTtl,
        EvictionPolicy::AllKeysLru,
        EvictionPolicy::AllKeysLfu,
        EvictionPolicy::AllKeysRandom,
        EvictionPolicy::NoEviction,
    ];

    /// Redis' names of the policies, in the order Redis lists them.
    pub const NAMES: [&'static str; 8] = [
        "volatile-lru",
        "volatile-lfu",
        "volatile-random",
        "volatile-ttl",
        "allkeys-lru",
        "allkeys-lfu",
        "allkeys-random",
        "noeviction",
    ];

    /// The policy called `name` (Redis' spelling, any letter case).
    pub fn parse(name: &str) -> Option<EvictionPolicy> {
        let at = Self::NAMES.iter().position(|known| known.eq_ignore_ascii_case(name))?;
        Some(Self::ALL[at])
    }

    /// Whether access stamps are LFU counters under this policy (see `recency`).
    pub fn is_lfu(self) -> bool {
        matches!(self, EvictionPolicy::AllKeysLfu | EvictionPolicy::VolatileLfu)
    }

    /// Whether only keys with a TTL may go.
    fn volatile(self) -> bool {
        matches!(
            self,
            EvictionPolicy::VolatileLru
                | EvictionPolicy::VolatileLfu
                | EvictionPolicy::VolatileRandom
                | EvictionPolicy::VolatileTtl
        )
    }
}

/// A sampled key and how good a candidate it is (higher goes first).
#[derive(Debug)]
struct Candidate {
    rank: u64,
    keyspace: Arc<Keyspace>,
    key: Vec<u8>,
}

/// The state eviction keeps between calls: the best candidates sampled so far (ranked
/// policies) and the keyspace whose turn is next (random ones). One per server, behind a
/// lock, so two threads short of memory do not both evict for the same shortfall.
#[derive(Debug, Default)]
pub struct Evictor {
    /// Ascending by rank: the best candidate is last.
    pool: Vec<Candidate>,
    next_keyspace: usize,
}

impl Evictor {
    /// Offers a sampled key to the pool, which keeps the best `POOL_SIZE`.
    fn offer(&mut self, rank: u64, keyspace: &Arc<Keyspace>, key: &[u8]) {
        if self.pool.len() == POOL_SIZE && self.pool[0].rank >= rank {
            return;
        }
        if self.pool.iter().any(|c| c.key == key && Arc::ptr_eq(&c.keyspace, keyspace)) {
            return;
        }
        let at = self.pool.partition_point(|c| c.rank < rank);
        self.pool.insert(at, Candidate { rank, keyspace: Arc::clone(keyspace), key: key.to_vec() });
        if self.pool.len() > POOL_SIZE {
            self.pool.remove(0);
        }
    }
}

/// What one eviction step removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Evicted {
    /// The bytes the keyspace counted for the key (its slot is reused by the next key
    /// stored, so this is what the next writes can take without growing the process).
    pub bytes: usize,
    /// The key was past its deadline: deleted as expired, not counted as evicted.
    pub expired: bool,
}

impl Keyspaces {
    /// Removes one key by `policy`, sampling `samples` keys per keyspace per round, its
    /// delete settled by `durability`. `None` when no key may go (none at all, or no
    /// volatile one under a `volatile-*` policy, or `noeviction`).
    pub fn evict_one(
        &self,
        policy: EvictionPolicy,
        samples: usize,
        evictor: &mut Evictor,
        durability: Durability<'_>,
    ) -> KvResult<Option<Evicted>> {
        if policy == EvictionPolicy::NoEviction {
            return Ok(None);
        }
        let spaces = self.all();
        let volatile = policy.volatile();
        let count = |space: &Keyspace| if volatile { space.volatile_len() } else { space.len() };
        for _ in 0..MAX_ROUNDS {
            if matches!(policy, EvictionPolicy::AllKeysRandom | EvictionPolicy::VolatileRandom) {
                let Some(space) = (0..spaces.len())
                    .map(|i| &spaces[(evictor.next_keyspace + i) % spaces.len()])
                    .find(|space| count(space) > 0)
                else {
                    return Ok(None);
                };
                evictor.next_keyspace = evictor.next_keyspace.wrapping_add(1);
                let mut picked = None;
                space.sample(volatile, 1, false, |key, _| picked = Some(key.to_vec()));
                if let Some(key) = picked
                    && let Some(evicted) = space.writes(durability).evict_key(&key, volatile)?
                {
                    return Ok(Some(evicted));
                }
                continue;
            }
            let mut any = false;
            for space in spaces.iter().filter(|space| count(space) > 0) {
                any = true;
                let by_deadline = policy == EvictionPolicy::VolatileTtl;
                space.sample(volatile, samples, by_deadline, |key, rank| evictor.offer(rank, space, key));
            }
            if !any {
                return Ok(None);
            }
            while let Some(best) = evictor.pool.pop() {
                if let Some(evicted) = best.keyspace.writes(durability).evict_key(&best.key, volatile)? {
                    return Ok(Some(evicted));
                }
            }
        }
        Ok(None)
    }
}

impl Keyspace {
    /// Samples up to `count` keys of one random shard (the next shards when it has none),
    /// visiting each with its eviction rank: by how soon it expires when `by_deadline`,
    /// else by its access stamp under the current policy's meaning.
    fn sample(&self, volatile: bool, count: usize, by_deadline: bool, mut visit: impl FnMut(&[u8], u64)) {
        let shards = self.shard_count();
        let start = random_below(shards);
        for i in 0..shards {
            let mut found = false;
            let _ = self.read_shard((start + i) % shards, |shard, ctx| {
                shard.sample(volatile, count, random_below, |key, entry| {
                    found = true;
                    let rank = match entry.expire_at() {
                        Some(at) if by_deadline => u64::MAX - at.get(),
                        _ => eviction_rank(entry.stamp(), ctx.now),
                    };
                    visit(key, rank);
                });
                Ok(())
            });
            if found {
                return;
            }
        }
    }
}
