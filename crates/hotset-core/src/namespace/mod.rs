//! Namespaces: a set of documents with a primary key, their columns and indexes.
//!
//! Owns: `Namespace` (the lock that makes readers parallel and writers exclusive) and
//! `NamespaceData` (documents by row id, columns, indexes) with every write path: insert,
//! update, upsert, delete, replace, index add/drop, truncate, and the undo records that
//! make a batch atomic. Never: plan or run queries (see `query`), do I/O, or leave an
//! index out of step with the documents after a call returns (even a failed one).
//!
//! Invariants: `live` holds exactly the row ids with a document; every live row is in
//! every non-sparse index; the pk index maps each key to exactly one row.

mod extract;
pub(crate) mod prepare;
mod store;
mod text_batch;
pub(crate) mod write;

pub use extract::{Extracted, column_values, key_json};
pub(crate) use prepare::Prepared;
pub use store::NamespaceData;
pub use write::{OnConflict, Undo};

use parking_lot::RwLock;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// A namespace shared between threads: many readers at once, one writer at a time.
#[derive(Debug)]
pub struct Namespace {
    /// The namespace's name, as the database's registry keys it.
    pub name: String,
    /// The documents, columns and indexes, behind the readers-writer lock.
    pub data: RwLock<NamespaceData>,
    /// Bumped (under the write lock) by every change of the schema or wholesale change of
    /// the rows: index add/drop, truncate. A snapshot copying the rows a chunk at a time
    /// starts the namespace over when it sees the number move.
    schema_version: AtomicU64,
    /// Set (under the write lock) when the namespace leaves the registry, so a writer that
    /// looked it up just before cannot write, and log, into a namespace that is gone.
    dropped: AtomicBool,
}

impl Namespace {
    /// Wraps `data` under the lock, at schema version 0 and not dropped.
    pub fn new(name: &str, data: NamespaceData) -> Namespace {
        Namespace {
            name: name.to_string(),
            data: RwLock::new(data),
            schema_version: AtomicU64::new(0),
            dropped: AtomicBool::new(false),
        }
    }

    /// The number of schema (or wholesale row) changes so far.
    pub fn schema_version(&self) -> u64 {
        self.schema_version.load(Ordering::Acquire)
    }

    /// Call with the write lock held.
    pub(crate) fn bump_schema_version(&self) {
        self.schema_version.fetch_add(1, Ordering::AcqRel);
    }

    /// Whether the namespace was dropped from its database; nothing may write to it then.
    pub fn is_dropped(&self) -> bool {
        self.dropped.load(Ordering::Acquire)
    }

    /// Call with the write lock held.
    pub(crate) fn mark_dropped(&self) {
        self.dropped.store(true, Ordering::Release);
    }
}

/// What `describe` reports about a namespace.
#[derive(Debug, Clone, PartialEq)]
pub struct NamespaceInfo {
    /// The namespace's name.
    pub name: String,
    /// Its index definitions, in the order they were added.
    pub indexes: Vec<crate::schema::IndexDef>,
    /// Documents stored.
    pub documents: usize,
    /// Approximate bytes held: documents, columns and index maps.
    pub memory_bytes: usize,
    /// Bytes of the stored documents alone (minified JSON).
    pub document_bytes: usize,
    /// Approximate bytes of each index's lookup structure (columns not included).
    pub index_memory: Vec<(String, usize)>,
    /// What each text index holds.
    pub text: Vec<(String, crate::text::TextStats)>,
}

impl NamespaceInfo {
    /// The JSON form describe answers with (HTTP and RESP alike).
    pub fn to_json(&self) -> serde_json::Value {
        let index_memory: serde_json::Map<String, serde_json::Value> =
            self.index_memory.iter().map(|(name, bytes)| (name.clone(), serde_json::json!(bytes))).collect();
        let text: serde_json::Map<String, serde_json::Value> = self
            .text
            .iter()
            .map(|(name, stats)| {
                let stats = serde_json::json!({"rows": stats.rows, "words": stats.words, "hits": stats.hits,
                                               "memory_bytes": stats.memory_bytes,
                                               "typo_table_bytes": stats.typo_table_bytes});
                (name.clone(), stats)
            })
            .collect();
        serde_json::json!({
            "name": self.name,
            "indexes": self.indexes.iter().map(crate::schema::IndexDef::to_json).collect::<Vec<_>>(),
            "documents": self.documents,
            "memory_bytes": self.memory_bytes,
            "document_bytes": self.document_bytes,
            "index_memory_bytes": index_memory,
            "text_indexes": text,
        })
    }
}
