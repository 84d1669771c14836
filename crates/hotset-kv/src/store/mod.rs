//! The storage under a keyspace, below any command: shards and the maps inside them.
//!
//! Owns: [`shard::Shard`] (one lock-protected partition: keys to entries, the TTL index,
//! memory accounting), the slab map whose live entries never move (`slab_map`), inline
//! byte strings (`small_bytes`), key hashing and shard selection (`router`), the TTL index
//! and deadline arithmetic (`expiry`), SCAN/HSCAN cursors (`scan`) and glob patterns
//! (`glob`).
//!
//! Must never: implement a command (the command families are further `impl Shard` blocks
//! in `types/`), take a lock (the caller holds the shard's), read the clock
//! (callers pass one "now"), or touch the log (that is `persist`).

pub(crate) mod expiry;
pub(crate) mod glob;
pub(crate) mod router;
pub(crate) mod scan;
pub(crate) mod shard;
pub(crate) mod slab_map;
pub(crate) mod small_bytes;
