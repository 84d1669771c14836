//! The requests: one value per document operation, namespace or index change, read,
//! and administrative operation of a database.
//!
//! Owns: `Request` and its parts, and `Request::blocks` (where an interface should run
//! it). Never: I/O, or a check the engine makes anyway.

/// How a write treats a document whose primary key is stored already (or missing): the
/// engine's own, which `Group::write` takes as it is.
pub use hotset_core::WriteMode;
use hotset_core::{IndexDef, Query, Search};
use serde_json::Value;

/// A document as a request carries it.
#[derive(Debug, Clone, PartialEq)]
pub enum Doc {
    /// Parsed already (a JSON array body, a Python dict converted).
    Value(Value),
    /// JSON text the engine parses once, straight into the stored form (NDJSON lines,
    /// `DOC.*` arguments, Python documents written as text).
    Json(Vec<u8>),
}

/// One operation of a write.
#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    /// Writes a document in a mode.
    Write(WriteMode, Doc),
    /// Deletes by primary key (a JSON scalar, or an array for a composite key); a key
    /// that is not stored is no error.
    Delete(Value),
}

/// A document operation, as every interface hands it to [`crate::Engine::apply`].
#[derive(Debug, Clone, PartialEq)]
pub enum Request {
    /// Creates a namespace with its index definitions (exactly one primary key).
    CreateNamespace {
        /// The new namespace's name.
        name: String,
        /// Its indexes.
        indexes: Vec<IndexDef>,
    },
    /// Drops a namespace with its documents.
    DropNamespace {
        /// The namespace.
        name: String,
    },
    /// Removes every document of a namespace, keeping its indexes.
    Truncate {
        /// The namespace.
        name: String,
    },
    /// The names of every namespace, sorted.
    Namespaces,
    /// A namespace's indexes, document count and memory.
    Describe {
        /// The namespace.
        name: String,
    },
    /// Adds an index to a namespace and builds it.
    AddIndex {
        /// The namespace.
        namespace: String,
        /// The index.
        index: IndexDef,
    },
    /// Drops an index of a namespace.
    DropIndex {
        /// The namespace.
        namespace: String,
        /// The index's name.
        index: String,
    },
    /// Operations on one namespace, applied all together or not at all; answers how many
    /// were applied. A refused operation is named by its place (`Refusal::at`).
    Write {
        /// The namespace.
        namespace: String,
        /// The operations, in order.
        ops: Vec<Op>,
    },
    /// Operations on several namespaces, each naming its own, applied together or not at
    /// all: one log record (the engine's `Group`), which readers of those namespaces see
    /// whole or not at all. Answers how many were applied; a refused operation is named by
    /// its place among them (`Refusal::at`).
    Transaction {
        /// (namespace, operation), in order.
        ops: Vec<(String, Op)>,
    },
    /// A document by primary key.
    Get {
        /// The namespace.
        namespace: String,
        /// The key (a JSON scalar, or an array for a composite key).
        key: Value,
    },
    /// Deletes a document by primary key; answers whether one was deleted.
    Delete {
        /// The namespace.
        namespace: String,
        /// The key.
        key: Value,
    },
    /// A query (with `explain` set, its plan and timings too).
    Query(Query),
    /// Full-text search across namespaces, merged by rank.
    Search(Search),
    /// One SQL statement (`hotset_sql`).
    Sql(String),
    /// Walks a namespace's documents `count` at a time, like Redis SCAN.
    Scan {
        /// The namespace.
        namespace: String,
        /// 0 to start; the answer's cursor to go on.
        cursor: u64,
        /// Documents per step (at most [`crate::decode::SCAN_COUNT_MAX`]).
        count: usize,
    },
    /// Writes a snapshot now and waits for it (Redis' SAVE).
    Save,
    /// Asks the background work for a snapshot now and returns at once (BGSAVE).
    Snapshot,
}

impl Request {
    /// The request for a transaction as the interfaces read one: operations on
    /// `namespace`, unless one names another (`DOC.TXN`'s `NS`, HTTP's `"namespace"`,
    /// Python's `namespace=`). All on `namespace` (none naming another: no allocation per
    /// operation), the single-namespace `Write`, cheaper than a group; else `Transaction`.
    pub fn transaction(namespace: String, ops: Vec<(Option<String>, Op)>) -> Request {
        if ops.iter().all(|(named, _)| named.as_ref().is_none_or(|named| *named == namespace)) {
            Request::Write { namespace, ops: ops.into_iter().map(|(_, op)| op).collect() }
        } else {
            let ops = ops.into_iter().map(|(named, op)| (named.unwrap_or_else(|| namespace.clone()), op)).collect();
            Request::Transaction { ops }
        }
    }

    /// Whether the request may take long or waits for the log: an interface runs it where
    /// waiting stalls no other client (a server's blocking pool), not on an I/O thread.
    /// Reads answer here and now: handing them over costs two thread switches, more than
    /// most queries take; a long one is bounded by the query time limit.
    pub fn blocks(&self) -> bool {
        match self {
            Request::Namespaces
            | Request::Describe { .. }
            | Request::Get { .. }
            | Request::Query(_)
            | Request::Scan { .. }
            | Request::Snapshot => false,
            Request::Sql(text) => !hotset_sql::reads_only(text),
            _ => true,
        }
    }

    /// Whether it may change documents a script could have read (writes, deletes, drops,
    /// truncation, SQL other than a SELECT): a server runs such a request where no Lua
    /// procedure is between its reads and the commit of its writes. Index changes and
    /// snapshots change no document and are left out, so a long index build never holds
    /// up a script.
    pub fn changes_documents(&self) -> bool {
        match self {
            Request::AddIndex { .. } | Request::DropIndex { .. } | Request::Save => false,
            other => other.blocks(),
        }
    }

    /// Whether it may add data, so a server over its `maxmemory` refuses it (as Redis
    /// refuses its `denyoom` commands): creating namespaces and indexes, writing
    /// documents. Deletes, drops and reads go on (SQL is judged once parsed).
    pub fn adds_data(&self) -> bool {
        match self {
            Request::CreateNamespace { .. } | Request::AddIndex { .. } => true,
            Request::Write { ops, .. } => ops.iter().any(|op| matches!(op, Op::Write(..))),
            Request::Transaction { ops } => ops.iter().any(|(_, op)| matches!(op, Op::Write(..))),
            _ => false,
        }
    }
}
