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
    /// The attached journal; `None` before one is attached (a database in memory only).
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

    /// Waits for `lsn` when there was a record to wait for; inside `defer_acks`, notes it
    /// instead and returns at once.
    pub fn wait(&self, lsn: Option<u64>) -> Result<()> {
        let (Some(journal), Some(lsn)) = (self.get(), lsn) else { return Ok(()) };
        let deferred = DEFERRED.with_borrow_mut(|deferred| match deferred {
            Some(acks) => {
                acks.note(journal, lsn);
                true
            }
            None => false,
        });
        if deferred { Ok(()) } else { journal.wait(lsn) }
    }
}

thread_local! {
    /// The acknowledgements `defer_acks` is collecting on this thread.
    static DEFERRED: std::cell::RefCell<Option<DeferredAcks>> = const { std::cell::RefCell::new(None) };
}

/// Runs `f` with every write's acknowledgement deferred: its records are appended as
/// usual, but the writes return without waiting for them; the caller waits once for all
/// of them (`DeferredAcks::wait`) before it tells anyone they happened.
///
/// Why: a server executes a whole batch of pipelined requests and answers them with one
/// write. Waiting per request would cost one fsync round per request under `always`;
/// waiting once lets the batch share one group commit, the way Redis answers a pipeline
/// after one fsync. Reads inside the batch see the earlier writes, as in Redis.
pub fn defer_acks<R>(f: impl FnOnce() -> R) -> (R, DeferredAcks) {
    let outer = DEFERRED.replace(Some(DeferredAcks::default()));
    let result = f();
    let acks = DEFERRED.replace(outer).unwrap_or_default();
    (result, acks)
}

/// The highest lsn the innermost `defer_acks` on this thread has noted so far (`None`
/// outside one, or before its first write). A caller running several requests in one
/// deferral reads it around each to learn which requests wrote, and to which record.
pub fn deferred_last_lsn() -> Option<u64> {
    DEFERRED.with_borrow(|deferred| deferred.as_ref().and_then(|acks| acks.last))
}

/// Acknowledgements collected by `defer_acks`.
#[derive(Default)]
pub struct DeferredAcks {
    journal: Option<Arc<dyn Journal>>,
    /// The highest lsn noted.
    last: Option<u64>,
}

impl std::fmt::Debug for DeferredAcks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeferredAcks").field("last", &self.last).finish()
    }
}

impl DeferredAcks {
    fn note(&mut self, journal: &Arc<dyn Journal>, lsn: u64) {
        if self.journal.is_none() {
            self.journal = Some(Arc::clone(journal));
        }
        self.last = Some(self.last.map_or(lsn, |last| last.max(lsn)));
    }

    /// The highest lsn noted, if any write happened.
    pub fn last_lsn(&self) -> Option<u64> {
        self.last
    }

    /// Waits for every noted record. The log acknowledges records in lsn order and a
    /// failure covers everything up to the failed record, so waiting for the highest one
    /// settles all of them.
    pub fn wait(&self) -> Result<()> {
        match self.last {
            Some(lsn) => self.wait_for(lsn),
            None => Ok(()),
        }
    }

    /// Waits for the records up to `lsn`, one this deferral noted (see `deferred_last_lsn`).
    pub fn wait_for(&self, lsn: u64) -> Result<()> {
        match &self.journal {
            Some(journal) => journal.wait(lsn),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};

    /// Counts waits; every append gets the next lsn.
    #[derive(Default)]
    struct Counting {
        next: AtomicU64,
        waits: AtomicU64,
    }

    impl Journal for Counting {
        fn writable(&self) -> Result<()> {
            Ok(())
        }
        fn append(&self, _encode: &mut dyn FnMut(&mut Vec<u8>)) -> u64 {
            self.next.fetch_add(1, Ordering::SeqCst) + 1
        }
        fn wait(&self, _lsn: u64) -> Result<()> {
            self.waits.fetch_add(1, Ordering::SeqCst);
            Ok(())
        }
    }

    #[test]
    fn deferred_acks_wait_once_for_the_highest_record() {
        let journal = Arc::new(Counting::default());
        let slot = JournalSlot::default();
        assert!(slot.attach(journal.clone()));
        slot.wait(Some(1)).unwrap();
        assert_eq!(journal.waits.load(Ordering::SeqCst), 1, "outside defer_acks, each write waits");
        assert_eq!(deferred_last_lsn(), None);
        let ((), acks) = defer_acks(|| {
            assert_eq!(deferred_last_lsn(), None, "no write yet");
            slot.wait(Some(3)).unwrap();
            assert_eq!(deferred_last_lsn(), Some(3));
            slot.wait(Some(2)).unwrap();
            slot.wait(None).unwrap();
            assert_eq!(deferred_last_lsn(), Some(3), "the highest stays");
        });
        assert_eq!(deferred_last_lsn(), None, "the deferral ended");
        assert_eq!(journal.waits.load(Ordering::SeqCst), 1, "inside, nothing waited");
        assert_eq!(acks.last_lsn(), Some(3));
        acks.wait().unwrap();
        assert_eq!(journal.waits.load(Ordering::SeqCst), 2);
        acks.wait_for(2).unwrap();
        assert_eq!(journal.waits.load(Ordering::SeqCst), 3);
        let ((), none) = defer_acks(|| ());
        assert_eq!(none.last_lsn(), None);
        slot.wait(Some(4)).unwrap();
        assert_eq!(journal.waits.load(Ordering::SeqCst), 4, "deferral ends with its scope");
    }
}
