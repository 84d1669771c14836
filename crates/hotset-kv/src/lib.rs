//! Redis-compatible key-value keyspaces: the engine behind Hotset's string,
//! hash, list, set and generic key commands. `hotset-core` holds a [`Keyspaces`] in every
//! `Database` and re-exports this crate as `hotset_core::kv`.
//!
//! Owns: the public API of the crate — [`Keyspaces`] (named databases),
//! [`Keyspace`] (one database), [`KvOps`] (every command, callable on a
//! `Keyspace`, on a [`KeyspaceWrites`] view of one whose writes collect their
//! log acknowledgements instead of waiting, or inside an atomic block on a
//! [`KeyspaceTxn`]), [`KvError`] and the option types. Submodules own one
//! concern each (see their docs).
//!
//! Must never: perform I/O, spawn threads, sleep, use `unsafe`, or depend on
//! anything but std, parking_lot, hashbrown, ahash, smallvec, thiserror and
//! `hotset-base` (the clock, the journal and the change record), least of all on
//! `hotset-core`, which sits above it. Protocol parsing and reply encoding belong
//! to the server.
//!
//! # Model
//! - Keys and values are byte strings. A key holds a string (integers are
//!   strings that parse as `i64`, stored natively so INCR is cheap, but read
//!   back byte-exact), a hash (field → value), a list or a set.
//! - A keyspace is split into N shards (power of two, default 16) by a
//!   fixed-seed ahash of the key; each shard is a `parking_lot::RwLock`.
//!   Single-key commands lock one shard; multi-key commands (MGET, MSET,
//!   MSETNX, DEL, EXISTS, RENAME, KEYS, FLUSH) lock all their shards at once
//!   in ascending index order, which makes them atomic and deadlock-free.
//! - [`Keyspace::atomic`] runs a closure over a [`KeyspaceTxn`] with the
//!   given keys' shards locked: the MULTI/EXEC hook. It exposes the same
//!   [`KvOps`] commands, implemented once for both paths.
//! - The server maps Redis `SELECT n` to the keyspace named `n` ("0".."15")
//!   in [`Keyspaces`]; names are otherwise arbitrary.
//!
//! # Expiry
//! Deadlines are absolute ms from the keyspace's [`Clock`](hotset_base::clock::Clock).
//! An expired key is never returned: readers treat it as missing, writers
//! delete it on sight (lazy expiry), and [`Keyspace::active_expire_cycle`]
//! reclaims keys nobody touches by walking a per-shard index of keys that
//! carry a TTL (the analogue of Redis' `expires` dict).
//!
//! # Eviction
//! Every entry carries an access stamp beside its deadline (`recency`: an LRU clock or an
//! LFU counter, by the policy), refreshed by reads and writes. [`Keyspaces::evict_one`]
//! removes one key by one of Redis' eight policies ([`EvictionPolicy`]), as a logged
//! delete; the server decides when, from its allocator's count and `maxmemory`, and
//! counts as free the key slots held empty ([`Keyspaces::reusable_bytes`]).
//!
//! # SCAN
//! Keys never move inside a shard while present (slab storage with a free
//! list), so the cursor `shard | epoch | slot` walks a stable order and every
//! key present for a whole iteration is returned at least once; see the
//! `scan` module docs for the full argument.
//!
//! # Example
//! ```
//! use std::sync::Arc;
//! use hotset_base::clock::ManualClock;
//! use hotset_kv::{Keyspaces, KvOps, SetExpiry, SetOptions};
//!
//! let clock = Arc::new(ManualClock::new(1_000));
//! let dbs = Keyspaces::new(clock.clone());
//! let db = dbs.get_or_create("0");
//! let opts = SetOptions { expiry: Some(SetExpiry::Ex(500)), ..SetOptions::default() };
//! db.set(b"greeting", b"hello", opts).unwrap();
//! assert_eq!(db.incr_by(b"hits", 5).unwrap(), 5);
//! assert_eq!(db.ttl_ms(b"greeting").unwrap(), 500);
//! clock.advance(501);
//! assert_eq!(db.get(b"greeting").unwrap(), None);
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod access;
mod across;
mod config;
mod error;
mod evict;
pub use evict::{Evicted, EvictionPolicy, Evictor};
mod keyspace;
mod notify;
mod ops;
mod options;
mod persist;
mod recency;
pub use persist::SnapshotCopy;
pub use recency::{lfu_mode, set_lfu_decay_time, set_lfu_log_factor, set_lfu_mode};
mod registry;
mod store;
mod txn;
mod types;
mod value;
mod watch;

#[cfg(test)]
mod tests;

pub use access::KvResult;
pub use config::{KeyspaceConfig, KvLimits};
pub use error::KvError;
pub use keyspace::{Keyspace, KeyspaceWrites};
pub use notify::{KeyEvents, class as event_class};
pub use ops::KvOps;
pub use options::{ExpireCondition, KeyAccess, RestoreOptions, SetCondition, SetExpiry, SetOptions, SetOutcome};
pub use registry::Keyspaces;
pub use store::glob::{Glob, glob_match};
pub use store::router::MAX_SHARDS;
pub use store::scan::FieldPairs;
pub use txn::KeyspaceTxn;
pub use types::bitfield::{FieldCommand, FieldOp, FieldType, Overflow};
pub use types::bits::{BitOp, BitRange, RangeUnit};
pub use types::geo::{Center, Found, GeoSearch, Shape, distance as geo_distance, geohash_text, point_of, score_of};
pub use types::hll::self_test as hll_self_test;
pub use types::keys::{TTL_MISSING, TTL_NONE};
pub use types::lcs::{LcsAnswer, LcsMatch};
pub use types::list::{End, Iter as ListIter};
pub use types::lists::{Popped, PosOptions};
pub use types::number::{format_i64_inline, parse_f64, write_d2string, write_g17};
pub use types::pf::{PfDebug, PfDebugAnswer};
pub use types::sets::SetAlgebra;
pub use types::sort::SortOptions;
pub use types::stream::{StreamId, Trim, set_node_limits};
pub use types::streams::{
    ClaimDelivery, Claimed, ConsumerFull, ConsumerInfo, GroupFull, GroupInfo, MaybeEntry, PendingInfo, PendingSummary,
    StreamEntry, StreamFull, StreamHead, StreamInfo, TrimArgs, XAdd, XAddId, XClaimOptions, XFrom, XGroupFrom,
    XReadGroup,
};
pub use types::zset::{LexBound, ScoreBound};
pub use types::zsets::{Aggregate, Combine, Scored, ZAddOptions, ZAddOutcome, ZAlgebra, ZRange, ZRangeBy};
pub use watch::KeyWatch;

// Both handles are shared across server threads; fail the build, not a
// deployment, if a field ever breaks that.
const _: () = {
    const fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Keyspace>();
    assert_send_sync::<Keyspaces>();
    assert_send_sync::<KeyspaceWrites<'static>>();
};
