//! Hotset's document engine: namespaces of JSON documents, typed columns and indexes, the
//! query planner and executor, and the `Database` that holds them with the key-value
//! keyspaces of `hotset-kv` (re-exported as [`kv`]). A library with no I/O and no async:
//! everything above it (storage, server, bindings) is an adapter.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod change;
pub mod collate;
pub mod database;
pub mod doc;
pub mod error;
pub mod index;
pub mod limits;
pub mod maintenance;
pub mod namespace;
pub mod query;
pub mod schema;
pub mod text;
pub mod value;

/// The time a database reads: defined in `hotset-base`, which the key-value engine shares.
pub use hotset_base::clock;
/// The seam to the write-ahead log: defined in `hotset-base`, which the key-value engine
/// shares.
pub use hotset_base::journal;
pub(crate) use hotset_base::wire;
/// Key-value keyspaces (Redis strings, counters, hashes): the `hotset-kv` engine, which a
/// `Database` holds, logs, snapshots and replays with its namespaces.
pub use hotset_kv as kv;

pub use collate::Collation;
pub use database::{
    Database, Document, Group, GroupFailure, Replay, Search, SearchResult, SearchTarget, SnapshotCounts, Transaction,
    Writes,
};
pub use error::{Error, Result};
pub use journal::{Ack, Acks, Durability, Journal};
pub use limits::Limits;
pub use maintenance::Maintenance;
pub use namespace::write::WriteMode;
pub use query::{Aggregation, Cond, Op, Query, QueryResult};
pub use schema::{IndexDef, IndexKind};
pub use value::FieldType;

/// Whether this process may run on more than one core, asked once: the answer comes
/// from the scheduler and cgroup files, far too slow to ask per call.
pub(crate) fn several_cores() -> bool {
    static SEVERAL: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *SEVERAL.get_or_init(|| std::thread::available_parallelism().is_ok_and(|n| n.get() > 1))
}
