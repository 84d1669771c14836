//! The engine's error type: every operating error a caller can cause, with its context.
//!
//! Owns: `Error` and `Result`. Never: panics for bad input, strings without context, or
//! errors that hide which namespace, index, field or value was at fault. Programmer errors
//! (broken invariants) panic instead of appearing here.

/// An operating error of the document engine. Every variant names what was at fault.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    #[error("invalid JSON: {reason}")]
    InvalidJson { reason: String },
    #[error("a document must be a JSON object, got {found}")]
    NotAnObject { found: &'static str },
    #[error("namespace '{namespace}' does not exist")]
    UnknownNamespace { namespace: String },
    #[error("namespace '{namespace}' already exists")]
    NamespaceExists { namespace: String },
    #[error("invalid namespace name '{name}': {reason}")]
    InvalidName { name: String, reason: &'static str },
    #[error("index '{index}' does not exist in namespace '{namespace}'")]
    UnknownIndex { namespace: String, index: String },
    #[error("index '{index}' already exists in namespace '{namespace}'")]
    IndexExists { namespace: String, index: String },
    #[error("invalid index definition '{index}': {reason}")]
    InvalidIndex { index: String, reason: String },
    #[error("namespace '{namespace}' has no primary key index")]
    NoPrimaryKey { namespace: String },
    #[error("document in '{namespace}' has no primary key field '{field}'")]
    MissingKey { namespace: String, field: String },
    #[error("duplicate primary key {key} in namespace '{namespace}'")]
    DuplicateKey { namespace: String, key: String },
    #[error("no document with primary key {key} in namespace '{namespace}'")]
    NotFound { namespace: String, key: String },
    #[error("field '{field}' of index '{index}' expects {expected}, got {found}")]
    WrongType { index: String, field: String, expected: String, found: String },
    #[error("invalid query: {reason}")]
    InvalidQuery { reason: String },
    #[error("invalid LIKE pattern '{pattern}': {reason}")]
    InvalidPattern { pattern: String, reason: &'static str },
    #[error("{what} is {actual}, over the limit of {limit}")]
    LimitExceeded { what: &'static str, limit: u64, actual: u64 },
    /// A query ran past its `Query::timeout`; nothing of it is returned.
    #[error("query timed out after {limit_ms} ms (its time limit)")]
    Timeout { limit_ms: u64 },
    #[error("cannot update primary key field '{field}' by query in namespace '{namespace}'")]
    PrimaryKeyUpdate { namespace: String, field: String },
    /// The write-ahead log could not take or make durable a write: the write was not
    /// acknowledged (reads go on working).
    #[error("write not durable: {reason}")]
    Storage { reason: String },
    /// A logged change or snapshot block that checked out by checksum but does not
    /// decode or apply: a bug or a format mismatch, never silently skipped.
    #[error("bad change record: {reason}")]
    BadChange { reason: String },
}

/// Result of an engine operation.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Names a JSON value's kind for error messages.
pub(crate) fn json_kind(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "bool",
        serde_json::Value::Number(n) if n.is_f64() => "double",
        serde_json::Value::Number(_) => "int",
        serde_json::Value::String(_) => "string",
        serde_json::Value::Array(_) => "array",
        serde_json::Value::Object(_) => "object",
    }
}
