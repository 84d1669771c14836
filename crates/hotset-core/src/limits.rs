//! Named limits of the engine. Every bound a client can hit has a name here, and going
//! over it is an `Error::LimitExceeded` naming the limit, never a crash.

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
