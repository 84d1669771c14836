//! Key hashing and shard selection.
//!
//! Owns: the one fixed-seed hash function used for keys and hash fields, the
//! mapping from a key's hash to its shard, and [`KeyRef`] (a key together with
//! its precomputed hash, so a single-key operation hashes its key once).
//!
//! Must never: use a random seed. Shard placement (and therefore SCAN cursor
//! layout and lock order) must be identical across runs of the same build.
//!
//! Invariants: the shard index is taken from hash bits 40..56. hashbrown
//! picks buckets from the low bits and its 7-bit control tag from bits 57..64,
//! so choosing shards from the middle leaves both fully random inside a shard
//! (taking the top or bottom bits would make every key in a shard share bucket
//! or tag bits and degrade probing). This caps the shard count at 2^16.

/// Most shards a keyspace may have (16 bits of hash, 16 bits of SCAN cursor).
pub const MAX_SHARDS: usize = 1 << 16;

/// First hash bit used for the shard index (see module docs).
const SHARD_SHIFT: u32 = 40;

/// Fixed seeds: deterministic placement. The trade-off is that an attacker
/// who knows the seeds can craft colliding keys; the server is expected to sit
/// behind authentication, as Redis does.
static HASHER: ahash::RandomState = ahash::RandomState::with_seeds(
    0x243f_6a88_85a3_08d3,
    0x1319_8a2e_0370_7344,
    0xa409_3822_299f_31d0,
    0x082e_fa98_ec4e_6c89,
);

/// Hash of a key or hash field.
pub fn hash_bytes(bytes: &[u8]) -> u64 {
    HASHER.hash_one(bytes)
}

/// A key plus its hash, computed once by the router and reused by the shard.
#[derive(Debug, Clone, Copy)]
pub struct KeyRef<'k> {
    /// The key bytes.
    pub bytes: &'k [u8],
    /// `hash_bytes(bytes)`.
    pub hash: u64,
}

impl<'k> KeyRef<'k> {
    /// Hashes `bytes`.
    pub fn new(bytes: &'k [u8]) -> Self {
        Self { bytes, hash: hash_bytes(bytes) }
    }
}

/// Maps keys to shard indices for a fixed, power-of-two shard count.
#[derive(Debug, Clone, Copy)]
pub struct Router {
    mask: u64,
}

impl Router {
    /// A router for `shards` shards, rounded up to a power of two and clamped
    /// to `1..=MAX_SHARDS` so any requested count yields a valid layout.
    pub fn new(shards: usize) -> Self {
        let count = shards.clamp(1, MAX_SHARDS).next_power_of_two();
        Self { mask: count as u64 - 1 }
    }

    /// Number of shards.
    pub fn shard_count(&self) -> usize {
        (self.mask + 1) as usize
    }

    /// Shard owning a key with this hash.
    pub fn shard_of(&self, hash: u64) -> usize {
        ((hash >> SHARD_SHIFT) & self.mask) as usize
    }

    /// Sorted, de-duplicated shard indices owning `keys`: the order in which
    /// multi-shard operations must lock, which is what rules out deadlock.
    pub fn shards_for<'k>(&self, keys: impl IntoIterator<Item = &'k [u8]>) -> Vec<usize> {
        let mut shards: Vec<usize> = keys.into_iter().map(|k| self.shard_of(hash_bytes(k))).collect();
        shards.sort_unstable();
        shards.dedup();
        shards
    }

    /// Every shard index, ascending.
    pub fn all_shards(&self) -> Vec<usize> {
        (0..self.shard_count()).collect()
    }
}
