//! What Hotset's engines share beneath them: the document engine (`hotset-core`) and the
//! key-value engine (`hotset-kv`) both read time through [`clock`], log their writes
//! through [`journal`], and state them in the one change-record format, [`record`] (built
//! from the byte helpers of [`wire`]).
//!
//! Owns: the seams every engine is built on, and the bytes of the log and snapshots
//! (every kind's number, the key-value and document operations). Never: depend on
//! another crate of the workspace (it sits at the bottom of the dependency graph:
//! base <- kv <- core <- the rest), perform I/O, spawn threads, or know how a namespace
//! or a keyspace is kept in memory.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod clock;
pub mod journal;
pub mod record;
pub mod wire;

pub use journal::JournalError;
pub use wire::RecordError;
