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
mod store;
pub(crate) mod write;

pub use extract::{Extracted, column_values, key_json};
pub use store::NamespaceData;
pub use write::Undo;

use parking_lot::RwLock;

/// A namespace shared between threads: many readers at once, one writer at a time.
#[derive(Debug)]
pub struct Namespace {
    pub name: String,
    pub data: RwLock<NamespaceData>,
}

/// What `describe` reports about a namespace.
#[derive(Debug, Clone, PartialEq)]
pub struct NamespaceInfo {
    pub name: String,
    pub indexes: Vec<crate::schema::IndexDef>,
    pub documents: usize,
    /// Approximate bytes held: documents, columns and index maps.
    pub memory_bytes: usize,
    /// Bytes of the stored documents alone (minified JSON).
    pub document_bytes: usize,
}
