//! The write-ahead log: records framed and checksummed, appended to segment files by one
//! writer thread with group commit, and replayed after a restart.
//!
//! Owns: [`Wal`] (appending, waiting for durability, rotation, removal of covered segments,
//! the failed state), [`replay`] and the options and reports of both. The byte formats are
//! in [`crate::frame`] and [`segment`].
//!
//! Never: decides what a record means (payloads are opaque bytes), does I/O on a caller's
//! thread while appending, or goes on writing after a failed fsync.
//!
//! Invariants:
//! - Lsns start at 1 and are consecutive across the whole log: the records of segment
//!   `<first_lsn>.wal` are `first_lsn, first_lsn + 1, ...`, and the next segment starts one
//!   past its last record.
//! - Records reach the file in lsn order, each once: a failed write is cut off the file and
//!   written again later, never skipped.
//! - `durable_lsn <= written_lsn < next_lsn`, and each only grows.
//!
//! Coalescing: under `Never` queued records wait up to the coalescing window
//! ([`COALESCE_WINDOW`], 1 ms, by default) before the writer writes them (see
//! [`FsyncPolicy`]), so a crash of the process can lose that window; under `Always` and
//! `Periodic` writers wait for their records, so nothing is held back, and [`Wal::sync`],
//! [`Wal::rotate`] and [`Wal::close`] never are.
//!
//! The failed state: when a write fails (a full disk), the log stops taking writes
//! ([`Wal::writable`] errs) and the writer retries every `retry_interval`; once the write
//! goes through the log is writable again. When an fsync fails the log stays failed until the
//! process restarts and replays it: after a failed fsync the kernel may have dropped the
//! dirty pages, so what the page cache shows cannot be trusted to be on the device.

mod error;
mod replay;
pub mod segment;
mod writer;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::thread::JoinHandle;
use std::time::Duration;

use parking_lot::Mutex;

pub use self::error::WalError;
pub use self::replay::{ApplyRecord, RecoveryMode, ReplayReport, TornTail, locate, replay};
use self::writer::{Reach, Shared, Writer};
use crate::disk::{Disk, OsDisk};

/// When the writer fsyncs.
///
/// What [`Wal::wait`] promises about a record once it returns `Ok`:
///
/// | policy | the record is | a crash of the process loses | a crash of the machine loses |
/// |---|---|---|---|
/// | `Always` | written and fsynced | nothing acknowledged | nothing acknowledged |
/// | `Periodic` | written (`write(2)` returned) | nothing acknowledged | up to the interval |
/// | `Never` | queued | the coalescing window | whatever the OS had not flushed |
///
/// `Periodic` is Redis' `appendfsync everysec`: the record is in the file before the write
/// is answered, so only the machine going down can lose it. Under `Never` an append is
/// acknowledged at once, so the writer coalesces: it holds queued records back until the
/// oldest has waited the coalescing window ([`COALESCE_WINDOW`] or what
/// [`Wal::set_coalesce_window`] set) or [`COALESCE_BYTES`] are queued, and writes them with
/// one `write`. [`Wal::sync`], [`Wal::rotate`] and [`Wal::close`] are never held back by it,
/// nor is a due periodic fsync. Under `Always` and `Periodic` the writer takes whatever is
/// queued as soon as it is free, so concurrent writers share one `write` (group commit);
/// under `Periodic` a waiter writes the queue itself when the writer is free (combining).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FsyncPolicy {
    /// After every batch, before any of its records is acknowledged. No coalescing: the
    /// writer takes whatever is queued as soon as it is free.
    Always,
    /// At least once per interval while anything was written since the last fsync; every
    /// record is written to the file before it is acknowledged.
    Periodic(Duration),
    /// Only when asked ([`Wal::sync`], [`Wal::rotate`], [`Wal::close`]) and when a segment
    /// is full.
    Never,
}

/// Under `Never`, how long the writer lets records gather after the first
/// one is queued before it writes them, by default ([`Wal::set_coalesce_window`] changes
/// it): about one wakeup and one `write` per window under load, instead of one per record
/// or two.
pub const COALESCE_WINDOW: Duration = Duration::from_millis(1);
/// Under `Never`, a queue this big is written without waiting out the
/// coalescing window.
pub const COALESCE_BYTES: usize = 256 << 10;

impl Default for FsyncPolicy {
    fn default() -> Self {
        FsyncPolicy::Periodic(Duration::from_secs(1))
    }
}

/// Where and how the log is written.
#[derive(Debug, Clone)]
pub struct WalOptions {
    pub dir: PathBuf,
    pub policy: FsyncPolicy,
    /// A new segment is started after a batch leaves the current one bigger than this.
    pub segment_bytes: u64,
    /// How long the writer waits between attempts to leave the failed state.
    pub retry_interval: Duration,
    /// The most bytes of records queued and not yet taken by the writer: past it a write
    /// waits in [`Wal::writable`] for the writer to take the queue (back-pressure from a
    /// slow or stalled disk) instead of memory growing.
    pub queue_bytes_max: u64,
    /// How long such a write waits for room before it is refused with
    /// [`WalError::Unwritable`].
    pub queue_wait: Duration,
    pub disk: Arc<dyn Disk>,
}

/// The default size at which segments are rotated.
pub const SEGMENT_BYTES_DEFAULT: u64 = 64 << 20;
/// The default limit of the queue: a quarter of a segment, far above what a healthy disk
/// lets gather (the writer takes the queue whole at every turn), so only a disk that stops
/// keeping up meets it.
pub const QUEUE_BYTES_DEFAULT: u64 = 16 << 20;
/// The default wait for room in a full queue before a write is refused.
pub const QUEUE_WAIT_DEFAULT: Duration = Duration::from_secs(30);
/// The longest `retry_interval` allowed: a log that stays failed longer than this after the
/// disk is fixed would look dead.
pub const RETRY_INTERVAL_MAX: Duration = Duration::from_secs(3600);

impl WalOptions {
    /// Defaults: fsync every second, 64 MiB segments, retry every second, the real disk.
    pub fn new(dir: impl Into<PathBuf>) -> WalOptions {
        WalOptions {
            dir: dir.into(),
            policy: FsyncPolicy::default(),
            segment_bytes: SEGMENT_BYTES_DEFAULT,
            retry_interval: Duration::from_secs(1),
            queue_bytes_max: QUEUE_BYTES_DEFAULT,
            queue_wait: QUEUE_WAIT_DEFAULT,
            disk: Arc::new(OsDisk),
        }
    }
}

/// A snapshot of the log's counters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WalStats {
    /// The lsn the next appended record gets.
    pub next_lsn: u64,
    /// The last record written to the file (maybe not yet fsynced).
    pub written_lsn: u64,
    /// The last record fsynced.
    pub durable_lsn: u64,
    /// Bytes appended to segment files (headers and records) since start.
    pub bytes_written: u64,
    /// Batches of records written since start.
    pub batches: u64,
    /// Successful fsyncs of segment files since start.
    pub fsyncs: u64,
    /// Segment files in the directory, the one being written included.
    pub segments: usize,
    /// Bytes of records appended and not yet taken by the writer.
    pub queued_bytes: u64,
    /// Why the log is in its failed state, if it is.
    pub failed: Option<String>,
}

/// The write-ahead log: callers append records, one writer thread writes them.
///
/// Shared in an `Arc`; every method takes `&self`.
pub struct Wal {
    shared: Arc<Shared>,
    /// The writer's state, locked by the writer thread for a turn and by a waiter that
    /// writes the queue itself (`Periodic`).
    core: Arc<Mutex<Writer>>,
    policy: FsyncPolicy,
    disk: Arc<dyn Disk>,
    dir: PathBuf,
    /// Serialises `remove_covered` calls, so two never race to delete the same file.
    removing: Mutex<()>,
    thread: Mutex<Option<JoinHandle<Result<(), WalError>>>>,
}

impl Wal {
    /// Starts the writer thread ("hotset-wal"); records go to a new segment whose first lsn
    /// is `next_lsn` (the `next_lsn` that [`replay`] returned).
    ///
    /// Panics if `retry_interval` is zero (the writer would spin) or over [`RETRY_INTERVAL_MAX`].
    pub fn start(opts: WalOptions, next_lsn: u64) -> Result<Wal, WalError> {
        assert!(next_lsn >= 1, "lsns start at 1");
        assert!(
            !opts.retry_interval.is_zero() && opts.retry_interval <= RETRY_INTERVAL_MAX,
            "retry_interval {:?} is outside (0, {RETRY_INTERVAL_MAX:?}]",
            opts.retry_interval
        );
        let (writer, shared) = Writer::open(&opts, next_lsn)?;
        let core = Arc::new(Mutex::new(writer));
        let thread_core = Arc::clone(&core);
        let thread_shared = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("hotset-wal".to_owned())
            .spawn(move || Writer::run(thread_core, thread_shared))
            .map_err(|e| WalError::io("start writer thread", &opts.dir, e))?;
        tracing::info!(dir = %opts.dir.display(), next_lsn, policy = ?opts.policy, "WAL started");
        Ok(Wal {
            shared,
            core,
            policy: opts.policy,
            disk: opts.disk,
            dir: opts.dir,
            removing: Mutex::new(()),
            thread: Mutex::new(Some(thread)),
        })
    }

    /// Queues one record: frames what `encode` appends to the (empty) buffer it is given and
    /// returns the record's lsn. Never does I/O and never fails; check [`writable`](Wal::writable)
    /// first. Records get lsns in the order of these calls.
    ///
    /// Panics if the record is over [`FRAME_PAYLOAD_BYTES_MAX`](crate::frame::FRAME_PAYLOAD_BYTES_MAX).
    pub fn append(&self, encode: &mut dyn FnMut(&mut Vec<u8>)) -> u64 {
        self.shared.append(encode)
    }

    /// `Err(WalError::Unwritable)` while the log is in its failed state: callers check this
    /// before changing anything (and before taking locks that readers need). While the
    /// queue is over [`WalOptions::queue_bytes_max`] it waits, up to
    /// [`WalOptions::queue_wait`], for the writer to take it: the back-pressure that keeps
    /// a stalled disk from growing memory without bound. The queue can go past its limit by
    /// at most the records of writers already admitted (one each).
    pub fn writable(&self) -> Result<(), WalError> {
        if self.shared.failed.load(Ordering::Acquire) {
            self.shared.ack.lock().writable()?;
        }
        self.shared.admit()
    }

    /// Blocks until record `lsn` is as safe as the policy promises before a write is
    /// answered (see [`FsyncPolicy`]): fsynced under `Always`, written to the file under
    /// `Periodic`, and at once under `Never` (`Err` then only if that record's batch already
    /// failed). `Err` when its batch failed, the log failed for good or was closed.
    ///
    /// `lsn` must be one that [`append`](Wal::append) returned.
    ///
    /// An `Err` means "not known to be kept": the record stays queued and, if the log
    /// recovers, it is written after all (in order, as if nothing happened).
    pub fn wait(&self, lsn: u64) -> Result<(), WalError> {
        debug_assert!(lsn < self.next_lsn(), "wait for record {lsn}, which was never appended");
        match self.reach() {
            Some(reach) => self.shared.wait_for(lsn, reach, &self.core),
            None => self.queued_outcome(lsn),
        }
    }

    /// How far a record must get before [`wait`](Self::wait) returns; `None`: nowhere.
    fn reach(&self) -> Option<Reach> {
        match self.policy {
            FsyncPolicy::Always => Some(Reach::Durable),
            FsyncPolicy::Periodic(_) => Some(Reach::Written),
            FsyncPolicy::Never => None,
        }
    }

    /// Under `Never`: `Err` only if record `lsn`'s batch already failed.
    fn queued_outcome(&self, lsn: u64) -> Result<(), WalError> {
        // Unless the log is failed (or stopped), no batch failed: no lock needed.
        if !self.shared.failed.load(Ordering::Acquire) || self.shared.is_durable(lsn) {
            return Ok(());
        }
        self.shared.ack.lock().outcome(lsn, Reach::Durable).unwrap_or(Ok(()))
    }

    /// [`wait`](Self::wait) as a future, for async servers: it completes when `wait` would
    /// return, and no thread is held meanwhile (the writer wakes the task).
    pub fn wait_async(self: &Arc<Self>, lsn: u64) -> impl std::future::Future<Output = Result<(), WalError>> + use<> {
        let wal = Arc::clone(self);
        std::future::poll_fn(move |cx| match wal.reach() {
            Some(reach) => wal.shared.poll_for(lsn, reach, &wal.core, cx),
            None => std::task::Poll::Ready(wal.queued_outcome(lsn)),
        })
    }

    /// The last record appended before the call, when it has not yet got as far as
    /// [`wait`](Self::wait) waits for (`None`: every record has, or the policy waits for
    /// nothing). A reader that saw the effect of a write and answers only once this record
    /// is that safe never shows a client what a killed process then takes back: the record
    /// of everything it read was appended before (under the lock the read took after it).
    /// Lock-free: two atomic loads when nothing is pending.
    pub fn unsettled(&self) -> Option<u64> {
        let lsn = self.shared.appended_lsn();
        let reach = self.reach()?;
        (!self.shared.has_reached(lsn, reach)).then_some(lsn)
    }

    /// Writes and fsyncs every record appended before the call, whatever the policy; returns
    /// the durable lsn. Never held back by coalescing: the request wakes the writer.
    pub fn sync(&self) -> Result<u64, WalError> {
        let target = self.shared.request_sync();
        self.shared.wait_for(target, Reach::Durable, &self.core)?;
        Ok(self.shared.durable_lsn())
    }

    /// Sets how long, under `Never`, the writer lets queued records gather
    /// before it writes them ([`COALESCE_WINDOW`] until this is called): what a crash of
    /// the process can lose on top of what the policy leaves unfsynced. Zero turns
    /// coalescing off (every record is written as soon as the writer is free). No effect
    /// under `Always`, which never holds records back.
    pub fn set_coalesce_window(&self, window: Duration) {
        self.shared.set_coalesce_window(window);
    }

    /// The lsn the next appended record gets.
    pub fn next_lsn(&self) -> u64 {
        self.shared.queue.lock().next_lsn
    }

    /// Makes the next record go to a new segment and returns that segment's first lsn.
    /// Every record appended before is written and fsynced first. When the current segment
    /// holds no record yet it already is that new segment.
    pub fn rotate(&self) -> Result<u64, WalError> {
        let request = self.shared.request_rotation();
        let mut ack = self.shared.ack.lock();
        loop {
            if ack.rotations_done >= request {
                return Ok(ack.rotated_to_lsn);
            }
            ack.writable()?;
            self.shared.ack_changed.wait(&mut ack);
        }
    }

    /// Deletes the segment files whose every record has an lsn below `lsn` (a segment qualifies
    /// when the next segment starts at or before `lsn`), never the one being written. Returns
    /// how many were deleted.
    pub fn remove_covered(&self, lsn: u64) -> Result<usize, WalError> {
        let _one_at_a_time = self.removing.lock();
        // Read before listing: a segment created by a rotation in between is newer than this
        // one, and a segment with a successor in the listing is finished (rotation fsyncs a
        // segment before it creates the next).
        let current = self.shared.current_first_lsn.load(Ordering::Acquire);
        let segments = segment::list_segments(&*self.disk, &self.dir)?;
        let mut removed = 0;
        for pair in segments.windows(2) {
            let (covered, next) = (&pair[0], &pair[1]);
            if next.first_lsn > lsn {
                break;
            }
            if covered.first_lsn == current {
                continue;
            }
            self.disk.remove(&covered.path).map_err(|e| WalError::io("remove covered segment", &covered.path, e))?;
            self.shared.segments.fetch_sub(1, Ordering::AcqRel);
            removed += 1;
        }
        if removed > 0 {
            self.disk.sync_dir(&self.dir).map_err(|e| WalError::io("sync directory", &self.dir, e))?;
            tracing::info!(dir = %self.dir.display(), below_lsn = lsn, removed, "WAL segments removed");
        }
        Ok(removed)
    }

    /// The log's counters and state.
    pub fn stats(&self) -> WalStats {
        let (next_lsn, queued_bytes) = {
            let queue = self.shared.queue.lock();
            (queue.next_lsn, queue.buffer.len() as u64)
        };
        let ack = self.shared.ack.lock();
        WalStats {
            next_lsn,
            written_lsn: ack.written_lsn,
            durable_lsn: ack.durable_lsn,
            bytes_written: ack.bytes_written,
            batches: ack.batches,
            fsyncs: ack.fsyncs,
            segments: self.shared.segments.load(Ordering::Acquire),
            queued_bytes,
            failed: ack.failure.as_ref().map(|failure| failure.reason.clone()),
        }
    }

    /// Writes and fsyncs everything queued, stops the writer thread and waits for it.
    /// `Err` when that last write or fsync failed or the log was already failed. Callers
    /// sharing the log must stop appending first: nothing appended after this is written.
    pub fn close(&self) -> Result<(), WalError> {
        self.shut_down()
    }

    fn shut_down(&self) -> Result<(), WalError> {
        let Some(thread) = self.thread.lock().take() else { return Ok(()) };
        self.shared.request_close();
        match thread.join() {
            Ok(result) => result,
            Err(_) => Err(WalError::Unwritable { reason: "the WAL writer thread panicked".to_owned() }),
        }
    }
}

impl std::fmt::Debug for Wal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Wal").field("dir", &self.dir).field("policy", &self.policy).finish_non_exhaustive()
    }
}

impl Drop for Wal {
    /// Does what [`Wal::close`] does, logging instead of returning a failure.
    fn drop(&mut self) {
        if let Err(error) = self.shut_down() {
            tracing::error!(dir = %self.dir.display(), %error, "WAL closed with records not durable");
        }
    }
}
