//! Named limits of the engine. Every bound a client can hit has a name here, and going
//! over it is an `Error::LimitExceeded` naming the limit, never a crash.

/// Deepest nesting of a query's conditions (`AND`/`OR`/`NOT` inside one another; a long
/// flat chain of `OR`s is one level). Compiling and running a condition recurses once per
/// level, so this bound is what keeps any query within a thread's stack. The JSON DSL's own
/// nesting limit (serde_json refuses more than 128 levels) stays under it.
pub const CONDITION_DEPTH_MAX: usize = 128;

/// Deepest nesting of an update's `SET` arithmetic (`a + (b * (c - ...))`), for the same
/// reason.
pub const EXPRESSION_DEPTH_MAX: usize = 128;

/// Limits of a `Database`; `Limits::default()` suits a server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest stored document (minified JSON bytes).
    pub document_bytes_max: usize,
    /// Longest namespace or index name.
    pub name_bytes_max: usize,
    /// Most namespaces in one database.
    pub namespaces_max: usize,
    /// Most indexes in one namespace.
    pub indexes_max: usize,
    /// Most operations in one transaction.
    pub transaction_operations_max: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            document_bytes_max: 16 << 20,
            name_bytes_max: 128,
            namespaces_max: 10_000,
            indexes_max: 64,
            transaction_operations_max: 1_000_000,
        }
    }
}
