//! Construction-time settings of a keyspace.
//!
//! Owns: [`KeyspaceConfig`] (shard count + limits) and [`KvLimits`].
//!
//! Must never: change after a keyspace is built; shards are sized once and
//! limits are copied into every operation context.
//!
//! Invariants: defaults mirror Redis (`proto-max-bulk-len` = 512 MiB) and the
//! 16-shard layout the server expects; `KvLimits` is `Copy` so per-operation
//! contexts can carry it without reference counting.

/// Size limits enforced by the engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KvLimits {
    /// Largest string value (or hash field value) in bytes, like Redis'
    /// `proto-max-bulk-len`. Exceeding it yields
    /// [`KvError::ValueTooLarge`](super::KvError::ValueTooLarge). Keys and
    /// field names are not checked here: the protocol layer already bounds
    /// every bulk argument by the same limit.
    pub value_bytes_max: usize,
}

impl KvLimits {
    /// Redis' default `proto-max-bulk-len`: 512 MiB.
    pub const DEFAULT_VALUE_BYTES_MAX: usize = 512 * 1024 * 1024;
}

impl Default for KvLimits {
    fn default() -> Self {
        Self { value_bytes_max: Self::DEFAULT_VALUE_BYTES_MAX }
    }
}

/// How a [`Keyspace`](super::Keyspace) is built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyspaceConfig {
    /// Number of independently locked shards. Rounded up to a power of two
    /// and clamped to `1..=65536` (the SCAN cursor reserves 16 bits for it).
    pub shards: usize,
    /// Size limits.
    pub limits: KvLimits,
}

impl KeyspaceConfig {
    /// Default shard count.
    pub const DEFAULT_SHARDS: usize = 16;
}

impl Default for KeyspaceConfig {
    fn default() -> Self {
        Self { shards: Self::DEFAULT_SHARDS, limits: KvLimits::default() }
    }
}
