//! The seam between the engine and its write-ahead log.
//!
//! Owns: the `Journal` trait that a storage layer implements, and `JournalSlot`, where a
//! database (and each of its keyspaces) finds the journal once one is attached. Never: do
//! I/O itself, or decide durability policy; that is the implementor's business.
//!
//! The protocol every write path follows, and why:
//! 1. `writable()` before changing anything, so a log that cannot take writes (full disk)
//!    refuses them up front instead of leaving changes nobody can make durable;
//! 2. apply the change in memory and `append` its physical record *while still holding the
//!    lock that ordered the change*, so the log order of two writes to one key is the
//!    order they were applied in (the property replay and fuzzy snapshots rely on);
//! 3. release the lock, then `wait(lsn)`: the acknowledgement to the caller, by policy.

use crate::error::Result;
use std::sync::{Arc, OnceLock};

/// A write-ahead log as the engine sees it.
pub trait Journal: Send + Sync {
    /// Whether the log takes writes now; `Err(Error::Storage)` when it does not.
    fn writable(&self) -> Result<()>;
    /// Queues one record, whose payload `encode` appends to the buffer it is given;
    /// returns the record's log sequence number. Never blocks on I/O and never fails.
    fn append(&self, encode: &mut dyn FnMut(&mut Vec<u8>)) -> u64;
    /// Returns once record `lsn` is acknowledged under the log's policy, or
    /// `Err(Error::Storage)` when it could not be written.
    fn wait(&self, lsn: u64) -> Result<()>;
}

/// Where a database's journal lives once attached (shared with its keyspaces).
#[derive(Clone, Default)]
pub struct JournalSlot(Arc<OnceLock<Arc<dyn Journal>>>);

impl std::fmt::Debug for JournalSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JournalSlot").field("attached", &self.0.get().is_some()).finish()
    }
}

impl JournalSlot {
    pub fn get(&self) -> Option<&Arc<dyn Journal>> {
        self.0.get()
    }

    /// Attaches `journal`; a slot takes one journal for its life.
    pub fn attach(&self, journal: Arc<dyn Journal>) -> bool {
        self.0.set(journal).is_ok()
    }

    /// Checks `writable()` when a journal is attached.
    pub fn writable(&self) -> Result<()> {
        self.get().map_or(Ok(()), |journal| journal.writable())
    }

    /// Waits for `lsn` when there was a record to wait for.
    pub fn wait(&self, lsn: Option<u64>) -> Result<()> {
        match (self.get(), lsn) {
            (Some(journal), Some(lsn)) => journal.wait(lsn),
            _ => Ok(()),
        }
    }
}
