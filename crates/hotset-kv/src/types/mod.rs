//! The command families of the key-value engine, one file per data type (and one for
//! commands on any type), as further `impl Shard` blocks over a locked shard.
//!
//! Owns: the semantics of each family: `strings` (with `number`, Redis's integer and
//! float text), `hashes` (with `field_map`, a hash's storage), `keys` (expiry, TYPE,
//! EXISTS on one key), `lists` (with `list`, a list's positioned sequence), `sets`
//! (with `set`, a set's members), `zsets` (with `zset`, a sorted set's scores and
//! order), `sort` (SORT over lists, sets and sorted sets), `pf` (with `hll`, HyperLogLogs laid out as Redis lays them out), `geo` (points in a sorted set by geohash, and GEOSEARCH), `dump` (DUMP and RESTORE payloads), `bits` (with `bitfield`, BITFIELD's integer fields) (bitmaps over strings), `sample` (random picks
//! by Redis' count rules) and `multi` (commands over several keys and shards).
//!
//! Must never: lock, read the clock or touch the log (the caller holds the shards'
//! locks and passes one "now"; `persist` logs what a write touched), or change a key
//! before every check that can fail has passed.

pub(crate) mod bitfield;
pub(crate) mod bits;
pub(crate) mod dump;
pub(crate) mod field_map;
pub(crate) mod geo;
pub(crate) mod hashes;
pub(crate) mod hll;
pub(crate) mod keys;
pub(crate) mod lcs;
pub(crate) mod list;
pub(crate) mod lists;
pub(crate) mod multi;
pub(crate) mod number;
pub(crate) mod pf;
pub(crate) mod sample;
pub(crate) mod set;
pub(crate) mod sets;
pub(crate) mod sort;
pub(crate) mod stream;
pub(crate) mod streams;
pub(crate) mod strings;
pub(crate) mod zset;
pub(crate) mod zsets;
