//! The seam between the engine and its write-ahead log, and the acknowledgement of a write.
//!
//! Owns: the `Journal` trait that a storage layer implements; `JournalSlot`, where a
//! database (and each of its keyspaces) finds the journal once one is attached; `Ack`, the
//! log position a write produces; `Durability`, what a write does with it (wait, or note
//! it into an `Acks` its caller owns and waits on later); `JournalError`, a log's refusal
//! or failure. Never: do I/O itself, decide
//! durability policy (that is the implementor's business), or keep a write's
//! acknowledgement anywhere its caller cannot see: whether a write waited is decided by the
//! `Durability` it was given, never by hidden state.
//!
//! The protocol every write path follows, and why:
//! 1. `writable()` before changing anything, so a log that cannot take writes (full disk)
//!    refuses them up front instead of leaving changes nobody can make durable;
//! 2. apply the change in memory and `append` its physical record *while still holding the
//!    lock that ordered the change*, so the log order of two writes to one key is the
//!    order they were applied in (the property replay and fuzzy snapshots rely on);
//! 3. release the lock, then settle the record's `Ack` by the caller's `Durability`:
//!    `Wait` returns once the log acknowledges it under its policy (every public write
//!    method of the engine does this); `Collect(&acks)` notes it and returns at once, and
//!    the caller waits once for everything it collected before telling anyone the writes
//!    happened.
//!
//! Why collect: a server executes a whole batch of pipelined requests and answers them
//! with one write. Waiting per request would cost one fsync round per request under
//! `always`; waiting once lets the batch share one group commit, the way Redis answers a
//! pipeline after one fsync. Reads inside the batch see the earlier writes, as in Redis.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

/// The log could not take a write, or could not make it durable: the write was not
/// acknowledged (reads go on working). Its text is the document engine's `Error::Storage`,
/// which it becomes there, and the key-value engine's `KvError::Storage` carries it to a
/// RESP client as `MISCONF write not durable: ...`: the words are wire-visible.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("write not durable: {reason}")]
pub struct JournalError {
    /// The log's own error, in words.
    pub reason: String,
}

/// What the journal's fallible calls return.
type Result<T> = std::result::Result<T, JournalError>;

/// A write-ahead log as the engine sees it.
pub trait Journal: Send + Sync {
    /// Whether the log takes writes now; `Err(JournalError)` when it does not.
    fn writable(&self) -> Result<()>;
    /// Queues one record, whose payload `encode` appends to the buffer it is given;
    /// returns the record's log sequence number. Never blocks on I/O and never fails.
    fn append(&self, encode: &mut dyn FnMut(&mut Vec<u8>)) -> u64;
    /// Returns once record `lsn` is acknowledged under the log's policy, or
    /// `Err(JournalError)` when it could not be written. The log acknowledges records in
    /// lsn order, and a failure covers every record after the last one it kept.
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

    /// The position of a write whose record the attached journal's `append` numbered `lsn`;
    /// `None` for a write that logged nothing (it changed nothing, or no journal is
    /// attached).
    pub fn ack(&self, lsn: Option<u64>) -> Ack<'_> {
        match (self.get(), lsn) {
            (Some(journal), Some(lsn)) => Ack { logged: Some((journal, lsn)) },
            (None, Some(lsn)) => unreachable!("record {lsn} was appended with no journal attached"),
            (_, None) => Ack::none(),
        }
    }
}

/// Where a write's record sits in the log: the acknowledgement to wait on, or to collect
/// with others into an [`Acks`]. It borrows the journal rather than holding an `Arc` of it:
/// every write makes one, and a shared reference count bumped by every write on every
/// thread would be a contended cache line.
#[must_use = "a write is not acknowledged until its Ack is waited on or collected"]
pub struct Ack<'j> {
    /// The journal and the record's lsn; `None` when the write logged nothing.
    logged: Option<(&'j Arc<dyn Journal>, u64)>,
}

impl std::fmt::Debug for Ack<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ack").field("lsn", &self.lsn()).finish()
    }
}

impl Ack<'_> {
    /// The position of a write that logged nothing: there is nothing to wait for.
    pub fn none() -> Ack<'static> {
        Ack { logged: None }
    }

    /// The record's lsn; `None` when the write logged nothing.
    pub fn lsn(&self) -> Option<u64> {
        self.logged.map(|(_, lsn)| lsn)
    }

    /// Returns once the record is acknowledged under the log's policy (at once when the
    /// write logged nothing); `Err(JournalError)` when the log could not keep it.
    pub fn wait(self) -> Result<()> {
        match self.logged {
            Some((journal, lsn)) => journal.wait(lsn),
            None => Ok(()),
        }
    }
}

/// What a write does with its record's acknowledgement once its locks are released.
#[derive(Debug, Clone, Copy, Default)]
pub enum Durability<'a> {
    /// Wait for it: the write returns once the log has acknowledged it (or failed it).
    #[default]
    Wait,
    /// Note it into the caller's collector and return at once; the caller waits on the
    /// collector before telling anyone the write happened.
    Collect(&'a Acks),
}

impl Durability<'_> {
    /// Settles `ack` as this durability says: waits for it, or notes it and returns `Ok`.
    pub fn settle(self, ack: Ack<'_>) -> Result<()> {
        match self {
            Durability::Wait => ack.wait(),
            Durability::Collect(acks) => {
                acks.note(ack);
                Ok(())
            }
        }
    }
}

/// The acknowledgements of several writes, collected to be waited on once: a value its
/// caller owns and passes by reference to each write (`Durability::Collect`). It keeps the
/// highest lsn noted, which is all a wait needs: the log acknowledges records in order.
///
/// `Sync`, so a caller may hold a reference across an `.await` or share it with the
/// threads its writes run on; noting is one atomic maximum.
#[derive(Default)]
pub struct Acks {
    /// The journal of every noted record (one database has one journal).
    journal: OnceLock<Arc<dyn Journal>>,
    /// 0 before the first note; then the highest lsn noted, plus one (so that lsn 0, which
    /// the `Journal` contract does not rule out, is not mistaken for "nothing noted").
    last_plus_one: AtomicU64,
}

impl std::fmt::Debug for Acks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Acks").field("last", &self.last_lsn()).finish()
    }
}

impl Acks {
    /// An empty collector.
    pub fn new() -> Acks {
        Acks::default()
    }

    /// Notes a write's position; one that logged nothing changes nothing.
    pub fn note(&self, ack: Ack<'_>) {
        let Some((journal, lsn)) = ack.logged else { return };
        let noted = self.journal.get_or_init(|| Arc::clone(journal));
        // Positions of two logs cannot be compared, and waiting on one would settle
        // nothing of the other.
        assert!(
            std::ptr::addr_eq(Arc::as_ptr(noted), Arc::as_ptr(journal)),
            "one collector notes the records of one journal"
        );
        let plus_one = lsn.checked_add(1).expect("an lsn below u64::MAX");
        self.last_plus_one.fetch_max(plus_one, Ordering::AcqRel);
    }

    /// The highest lsn noted; `None` before any write that logged something. A caller
    /// running several requests against one collector reads it around each to learn which
    /// requests wrote, and to which record.
    pub fn last_lsn(&self) -> Option<u64> {
        self.last_plus_one.load(Ordering::Acquire).checked_sub(1)
    }

    /// Waits for every noted record: waiting for the highest one settles all of them,
    /// since the log acknowledges in lsn order and a failure covers every record after the
    /// last one it kept. Returns at once when nothing was noted.
    pub fn wait(&self) -> Result<()> {
        match self.last_lsn() {
            Some(lsn) => self.wait_for(lsn),
            None => Ok(()),
        }
    }

    /// Waits for the records up to `lsn`, which must be one this collector has covered
    /// (at most `last_lsn()`): after a failed wait, this tells the records the log kept
    /// from the ones it lost.
    pub fn wait_for(&self, lsn: u64) -> Result<()> {
        assert!(self.last_lsn().is_some_and(|last| lsn <= last), "waiting for record {lsn}, which was never noted");
        let journal = self.journal.get().expect("a journal is kept with the first note");
        journal.wait(lsn)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// Every append gets the next lsn; every wait is recorded, and fails for a record after
    /// `kept` (a log that lost its tail).
    struct Recording {
        next: AtomicU64,
        waits: Mutex<Vec<u64>>,
        kept: u64,
    }

    impl Recording {
        fn keeping(kept: u64) -> Arc<Recording> {
            Arc::new(Recording { next: AtomicU64::new(0), waits: Mutex::new(Vec::new()), kept })
        }

        fn waits(&self) -> Vec<u64> {
            self.waits.lock().unwrap().clone()
        }
    }

    impl Journal for Recording {
        fn writable(&self) -> Result<()> {
            Ok(())
        }
        fn append(&self, _encode: &mut dyn FnMut(&mut Vec<u8>)) -> u64 {
            self.next.fetch_add(1, Ordering::SeqCst) + 1
        }
        fn wait(&self, lsn: u64) -> Result<()> {
            self.waits.lock().unwrap().push(lsn);
            match lsn <= self.kept {
                true => Ok(()),
                false => Err(JournalError { reason: "disk full".into() }),
            }
        }
    }

    /// A slot with `journal` attached, and `count` records appended to it.
    fn slot_with(journal: &Arc<Recording>, count: usize) -> (JournalSlot, Vec<u64>) {
        let slot = JournalSlot::default();
        assert!(slot.attach(journal.clone()));
        let lsns = (0..count).map(|_| slot.get().unwrap().append(&mut |_| {})).collect();
        (slot, lsns)
    }

    #[test]
    fn waiting_durability_waits_for_its_own_record() {
        let journal = Recording::keeping(u64::MAX);
        let (slot, lsns) = slot_with(&journal, 2);
        assert_eq!(slot.ack(Some(lsns[0])).lsn(), Some(1));
        Durability::Wait.settle(slot.ack(Some(lsns[1]))).unwrap();
        Durability::Wait.settle(slot.ack(None)).unwrap();
        assert_eq!(journal.waits(), [2], "a write that logged nothing waits for nothing");
        slot.ack(Some(lsns[0])).wait().unwrap();
        assert_eq!(journal.waits(), [2, 1]);
        assert_eq!(JournalSlot::default().ack(None).lsn(), None, "no journal, nothing logged");
    }

    #[test]
    fn collected_acks_wait_once_for_the_highest_record() {
        let journal = Recording::keeping(u64::MAX);
        let (slot, lsns) = slot_with(&journal, 3);
        let acks = Acks::new();
        assert_eq!(acks.last_lsn(), None, "nothing noted yet");
        acks.wait().unwrap();
        assert_eq!(journal.waits(), [] as [u64; 0], "an empty collector waits for nothing");
        let collect = Durability::Collect(&acks);
        collect.settle(slot.ack(Some(lsns[2]))).unwrap();
        assert_eq!(acks.last_lsn(), Some(3));
        collect.settle(slot.ack(Some(lsns[1]))).unwrap();
        collect.settle(slot.ack(None)).unwrap();
        assert_eq!(acks.last_lsn(), Some(3), "the highest stays");
        assert_eq!(journal.waits(), [] as [u64; 0], "collecting never waits");
        acks.wait().unwrap();
        assert_eq!(journal.waits(), [3], "one wait, for the highest record");
        acks.wait_for(2).unwrap();
        assert_eq!(journal.waits(), [3, 2]);
        // Another collector is another batch: it starts empty.
        let next = Acks::new();
        next.note(slot.ack(Some(lsns[0])));
        assert_eq!((next.last_lsn(), acks.last_lsn()), (Some(1), Some(3)));
    }

    #[test]
    fn a_failed_wait_tells_kept_records_from_lost_ones() {
        let journal = Recording::keeping(1);
        let (slot, lsns) = slot_with(&journal, 2);
        let acks = Acks::new();
        lsns.iter().for_each(|&lsn| acks.note(slot.ack(Some(lsn))));
        assert!(acks.wait().is_err(), "the log lost record 2");
        assert!(acks.wait_for(1).is_ok() && acks.wait_for(2).is_err());
    }

    #[test]
    #[should_panic(expected = "never noted")]
    fn waiting_for_a_record_never_noted_is_a_bug() {
        let journal = Recording::keeping(u64::MAX);
        let (slot, lsns) = slot_with(&journal, 2);
        let acks = Acks::new();
        acks.note(slot.ack(Some(lsns[0])));
        let _ = acks.wait_for(lsns[1]);
    }

    #[test]
    #[should_panic(expected = "one journal")]
    fn one_collector_takes_one_journal() {
        let (first, second) = (Recording::keeping(u64::MAX), Recording::keeping(u64::MAX));
        let ((one, lsns_one), (two, lsns_two)) = (slot_with(&first, 1), slot_with(&second, 1));
        let acks = Acks::new();
        acks.note(one.ack(Some(lsns_one[0])));
        acks.note(two.ack(Some(lsns_two[0])));
    }

    #[test]
    fn acks_can_be_shared_across_threads_and_awaits() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<Acks>();
    }
}
