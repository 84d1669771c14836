//! What a request answered, still in the engine's types: each interface shapes it for its
//! wire (a RESP reply, an HTTP body, Python objects).
//!
//! Owns: `Answer`. Never: a wire form.

use hotset_core::namespace::NamespaceInfo;
use hotset_core::query::QueryResult;
use hotset_core::{Document, SearchResult};

/// The answer of [`crate::Engine::apply`]; which variant depends only on the request.
#[derive(Debug)]
pub enum Answer {
    /// Namespace and index changes, SAVE, BGSAVE.
    Done,
    /// A write: the operations applied.
    Count(usize),
    /// A delete by key: whether a document was deleted.
    Deleted(bool),
    /// Namespace names, sorted.
    Names(Vec<String>),
    /// A namespace described.
    Namespace(NamespaceInfo),
    /// A document by key, if stored.
    Document(Option<Document>),
    /// A query's result, and a SQL `SELECT *`'s (whole documents, as a query answers).
    Query(QueryResult),
    /// A full-text search's result.
    Search(SearchResult),
    /// Any other SQL statement's answer, as JSON text in the shape `hotset_sql::execute`
    /// writes (`items`, `total`, `aggregations`, `explain`, `affected`).
    Json(Vec<u8>),
    /// One step of a scan: the cursor to go on with (0 at the end) and the documents.
    Scan {
        /// The next cursor.
        next: u64,
        /// The documents of this step.
        documents: Vec<Document>,
    },
}
