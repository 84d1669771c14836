//! The writer thread: group commit, coalescing, rotation and the failed state.
//!
//! ```text
//! appenders ─copy─▶ Queue.buffer ─swap─▶ Writer.taken ─seal─▶ Writer.pending ─write_all─▶ segment
//!                   (under the lock)     (checksums, no lock)                  └─fsync─▶ Ack.durable_lsn
//! waiters   ◀──── unpark, only those whose record is now written / durable, as each asked ──┘
//! ```
//!
//! Owns: [`Shared`] (the queue appenders fill and the acknowledgement state waiters read)
//! and [`Writer`], the only code that writes segment files (run by the writer thread, or
//! by a waiter that combines, always under the writer's lock).
//!
//! Never: holds the queue lock during I/O (appenders only ever wait for a memcpy), holds the
//! queue and ack locks at once (so there is no lock order to get wrong), retries after a
//! failed fsync, or panics on an I/O error.
//!
//! Invariants: the writer takes *everything* queued at once, writes it with one `write_all`
//! and (under `Always`) makes it durable with one fsync, which is what makes batches grow
//! with load. Queued frames have no checksum yet: the writer seals them after taking them,
//! outside the lock, checking their lsns on the way. Sealed bytes stay in `pending` until a
//! write of them succeeds; a failed write is cut off the file first, so the file always ends
//! after a whole record.
//!
//! Waking: a waiter ([`Shared::wait_for`]) registers its lsn, how far the record must go
//! ([`Reach`]: written under `Periodic`, durable under `Always` and for syncs) and its
//! thread in [`Ack`] and parks; after a write or an fsync the writer unparks exactly the
//! waiters whose records got as far as they asked, so the ones waiting for the next batch sleep on and nobody
//! queues up on the ack lock to find out. A failure, a recovery or the writer's exit wakes
//! every waiter, and each looks at the outcome again (and registers again if it has none).
//!
//! Combining (`Periodic` only, where a waiter waits for the write alone): an append does not
//! wake an idle writer thread. Its waiter locks the writer's state ([`Wal`](super::Wal)
//! holds it in a mutex) and, when nothing but a write is due, takes the queue, seals and
//! writes it and wakes its waiters on its own thread, as the writer thread would: a single
//! thread's write costs one `write(2)`, not a wakeup of the writer and a park. Waiters that
//! queue up behind the lock find their records written by its holder, or write what the
//! holder did not take (group commit without the hand-off). An async waiter only tries
//! the lock; when it is held it wakes the writer thread, as does anyone finding something
//! else due (an fsync, a rotation, a failure, a request), which only the writer thread
//! does. The writer thread holds the lock for a turn, never while asleep, and looks at
//! the queue at least once a second on its own, for records nobody waits for.
//!
//! Coalescing (`Never` only, where appends are acknowledged at once): the
//! writer does not write as soon as a record is queued but lets records gather until the
//! first of them has waited the window ([`COALESCE_WINDOW`](super::COALESCE_WINDOW) unless
//! [`set_coalesce_window`](super::Wal::set_coalesce_window) changed it) or
//! [`COALESCE_BYTES`](super::COALESCE_BYTES) are queued, so it wakes and writes about once
//! per window instead of once per record or two. A sync, rotation or close request, a due
//! periodic fsync, and a retry are never held back by it.

use std::mem;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::thread::Thread;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex, MutexGuard};

use super::segment::{self, SEGMENT_HEADER_BYTES};
use super::{COALESCE_BYTES, COALESCE_WINDOW, FsyncPolicy, WalError, WalOptions};
use crate::disk::{Disk, DiskFile};
use crate::frame::{self, FrameRead};

/// A batch buffer bigger than this is given back to the allocator after use, so one burst
/// does not pin its memory for the life of the process.
const BATCH_BUFFER_RETAINED_BYTES_MAX: usize = 64 << 20;
/// The same for each appending thread's encoding buffer.
const SCRATCH_RETAINED_BYTES_MAX: usize = 1 << 20;
/// Where waiters combine, the longest the writer thread sleeps without looking at the queue.
const COMBINED_LOOK_INTERVAL: Duration = Duration::from_secs(1);

thread_local! {
    /// Where `append` encodes a payload before taking the queue lock.
    static SCRATCH: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
    /// What this thread parks on while it waits for durability.
    static WAIT_SLOT: Arc<WaitSlot> = Arc::new(WaitSlot::for_current_thread());
}

/// A thread waiting for durability: the writer sets `woken`, then unparks `thread`.
#[derive(Debug)]
pub(super) struct WaitSlot {
    thread: Thread,
    woken: AtomicBool,
}

impl WaitSlot {
    fn for_current_thread() -> WaitSlot {
        WaitSlot { thread: std::thread::current(), woken: AtomicBool::new(false) }
    }

    fn wake(&self) {
        self.woken.store(true, Ordering::Release);
        self.thread.unpark();
    }
}

/// How far a record must have gone before its waiter is answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Reach {
    /// In the segment file (`write(2)` returned): safe from a crash of the process, like
    /// Redis' `appendfsync everysec`, which writes before it replies.
    Written,
    /// In the segment file and fsynced: safe from a crash of the machine.
    Durable,
}

/// A registered waiter: it is woken once record `lsn` has reached `reach` (or on any
/// failure).
#[derive(Debug)]
pub(super) struct Waiter {
    lsn: u64,
    reach: Reach,
    wake: Wake,
}

/// Who to wake: a parked thread, or an async task (a server connection awaiting its
/// batch's acknowledgement without holding a thread).
#[derive(Debug)]
enum Wake {
    Thread(Arc<WaitSlot>),
    Task(std::task::Waker),
}

/// What the writer thread is doing, as far as appenders need to know.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum WriterState {
    /// Taking, writing or fsyncing: it looks at the queue again when done, so nobody
    /// needs to wake it.
    Busy,
    /// Asleep until something is queued or requested (or its deadline).
    Idle,
    /// Asleep while records gather; only a request, or a queue grown to
    /// [`COALESCE_BYTES`], cuts that short.
    Coalescing,
}

/// Records appended and not yet taken by the writer, and requests to it.
#[derive(Debug)]
pub(super) struct Queue {
    /// Unsealed frames (no checksum yet) with lsns `taken + 1 ..= next_lsn - 1`.
    pub buffer: Vec<u8>,
    pub next_lsn: u64,
    /// When the oldest record in `buffer` was appended (kept only where the writer
    /// coalesces): the writer holds records back at most the coalescing window from then.
    first_queued_at: Option<Instant>,
    /// The writer sleeps on `work_ready` unless it is busy; appenders notify only then.
    writer: WriterState,
    /// `sync` wants every record up to here fsynced.
    sync_through: u64,
    /// Rotation requests so far (a counter, so each caller can tell when its turn came).
    rotate_requests: u64,
    closing: bool,
}

/// Why the log is failed.
#[derive(Debug, Clone)]
pub(super) struct Failure {
    pub reason: String,
    /// Only a restart recovers (a failed fsync, a failed cut of a partial write).
    fatal: bool,
    /// The last record of the batches that failed: waiters up to here get `Err`.
    through_lsn: u64,
}

/// What waiters wait for; changes are announced on `ack_changed`.
#[derive(Debug)]
pub(super) struct Ack {
    pub written_lsn: u64,
    pub durable_lsn: u64,
    pub failure: Option<Failure>,
    /// The writer thread has exited.
    stopped: bool,
    pub rotations_done: u64,
    /// The first lsn of the segment the latest rotation request produced.
    pub rotated_to_lsn: u64,
    pub bytes_written: u64,
    pub batches: u64,
    pub fsyncs: u64,
    /// Threads parked in [`Shared::wait_durable`].
    waiters: Vec<Waiter>,
}

impl Ack {
    /// How waiting for record `lsn` to reach `reach` ends, or `None` if it has not ended yet.
    pub fn outcome(&self, lsn: u64, reach: Reach) -> Option<Result<(), WalError>> {
        let reached = match reach {
            Reach::Written => self.written_lsn,
            Reach::Durable => self.durable_lsn,
        };
        if lsn <= reached {
            return Some(Ok(()));
        }
        if let Some(failure) = &self.failure
            && (failure.fatal || lsn <= failure.through_lsn)
        {
            return Some(Err(WalError::Unwritable { reason: failure.reason.clone() }));
        }
        if self.stopped {
            return Some(Err(WalError::Closed));
        }
        None
    }

    pub fn writable(&self) -> Result<(), WalError> {
        match &self.failure {
            Some(failure) => Err(WalError::Unwritable { reason: failure.reason.clone() }),
            None if self.stopped => Err(WalError::Closed),
            None => Ok(()),
        }
    }
}

/// State shared by the `Wal` handle (appenders, waiters) and the writer thread.
pub(super) struct Shared {
    pub queue: Mutex<Queue>,
    work_ready: Condvar,
    pub ack: Mutex<Ack>,
    /// Announces rotations (the only thing waited for on a condvar; durability waiters park).
    pub ack_changed: Condvar,
    /// Set while `ack.failure` is set or the writer stopped: `writable` checks it without a lock.
    pub failed: AtomicBool,
    /// A copy of `ack.durable_lsn`, so a waiter whose record is durable already needs no lock.
    durable_lsn: AtomicU64,
    /// A copy of `ack.written_lsn`, for the same reason.
    written_lsn: AtomicU64,
    /// The last lsn handed out (set under `queue`'s lock), for readers that must not answer
    /// with what a crash could still take back (`Wal::unsettled`) without taking the lock.
    appended_lsn: AtomicU64,
    /// The writer coalesces records (`Never`): appenders note when a batch began.
    coalesce: bool,
    /// Waiters write the queue themselves when the writer is free (`Periodic`): appenders
    /// leave an idle writer asleep (see the module's "Combining").
    combine: bool,
    /// How long it may hold them back, in nanoseconds (0: not at all).
    coalesce_window_nanos: AtomicU64,
    /// The first lsn of the segment being written.
    pub current_first_lsn: AtomicU64,
    pub segments: AtomicUsize,
    /// Past this many queued bytes, `admit` makes writers wait.
    queue_bytes_max: u64,
    /// How long `admit` waits for room.
    queue_wait: Duration,
    /// Set by `push` when the queue reached `queue_bytes_max`, cleared when it is taken:
    /// `admit`'s check without a lock.
    queue_full: AtomicBool,
    /// Writers waiting in `admit` (on `queue`'s lock): woken when the queue is taken, the
    /// log fails or the writer stops.
    room: Condvar,
}

impl Shared {
    /// Encodes the payload into this thread's scratch buffer outside the lock, so the
    /// critical section is an lsn increment and a copy (the writer computes the checksum).
    pub fn append(&self, encode: &mut dyn FnMut(&mut Vec<u8>)) -> u64 {
        SCRATCH.with(|cell| {
            // Taken out of the cell, so a (strange) encoder that appends a record itself gets
            // a fresh buffer instead of a double borrow.
            let mut payload = cell.take();
            payload.clear();
            encode(&mut payload);
            let lsn = self.push(&payload);
            if payload.capacity() <= SCRATCH_RETAINED_BYTES_MAX {
                cell.set(payload);
            }
            lsn
        })
    }

    fn push(&self, payload: &[u8]) -> u64 {
        let mut queue = self.queue.lock();
        let lsn = queue.next_lsn;
        // Cannot overflow: a u64 of records is beyond any disk.
        queue.next_lsn = lsn.checked_add(1).expect("lsn space exhausted");
        self.appended_lsn.store(lsn, Ordering::Release);
        if self.coalesce && queue.buffer.is_empty() {
            queue.first_queued_at = Some(Instant::now());
        }
        frame::append_unsealed_frame(&mut queue.buffer, lsn, payload);
        if queue.buffer.len() as u64 >= self.queue_bytes_max {
            self.queue_full.store(true, Ordering::Release);
        }
        // A coalescing writer is woken early only by a queue that is big enough to write;
        // where waiters combine, an idle writer too (the waiter writes a smaller one).
        let urgent = queue.buffer.len() >= COALESCE_BYTES;
        self.wake_writer(queue, urgent);
        lsn
    }

    /// Notifies the writer if it sleeps (and, if it is coalescing or waiters combine, only
    /// when `urgent`); a busy writer takes the queue on its next turn, so appenders under
    /// load do not pay for a notify each.
    fn wake_writer(&self, mut queue: MutexGuard<'_, Queue>, urgent: bool) {
        let wake = match queue.writer {
            WriterState::Busy => false,
            // Where waiters combine, the waiter of a record writes it (or wakes the writer
            // when it cannot), so an append alone wakes nobody.
            WriterState::Idle => urgent || !self.combine,
            WriterState::Coalescing => urgent,
        };
        if wake {
            queue.writer = WriterState::Busy;
        }
        drop(queue);
        if wake {
            self.work_ready.notify_one();
        }
    }

    /// Returns once the queue is under its byte limit (at once, without a lock, while it
    /// is), or `Err` when the log failed or stopped meanwhile, or no room came within
    /// `queue_wait`.
    pub fn admit(&self) -> Result<(), WalError> {
        if !self.queue_full.load(Ordering::Acquire) {
            return Ok(());
        }
        let deadline = Instant::now() + self.queue_wait;
        let mut queue = self.queue.lock();
        while queue.buffer.len() as u64 >= self.queue_bytes_max {
            if self.failed.load(Ordering::Acquire) {
                drop(queue);
                return self.ack.lock().writable();
            }
            if self.room.wait_until(&mut queue, deadline).timed_out()
                && queue.buffer.len() as u64 >= self.queue_bytes_max
            {
                return Err(WalError::Unwritable {
                    reason: format!(
                        "the log's queue holds {} bytes, over its limit of {}, and the disk took none of it for {:?}",
                        queue.buffer.len(),
                        self.queue_bytes_max,
                        self.queue_wait
                    ),
                });
            }
        }
        Ok(())
    }

    /// Wakes the writers waiting in `admit` to look again. The queue's lock is taken first,
    /// so a writer between its check and its wait cannot miss this.
    fn announce_room(&self) {
        drop(self.queue.lock());
        self.room.notify_all();
    }

    /// Asks for everything appended so far to be fsynced; returns the last such lsn.
    pub fn request_sync(&self) -> u64 {
        let mut queue = self.queue.lock();
        let target = queue.next_lsn - 1;
        queue.sync_through = queue.sync_through.max(target);
        self.wake_writer(queue, true);
        target
    }

    /// Asks for a rotation; returns the request's number.
    pub fn request_rotation(&self) -> u64 {
        let mut queue = self.queue.lock();
        queue.rotate_requests += 1;
        let request = queue.rotate_requests;
        self.wake_writer(queue, true);
        request
    }

    pub fn request_close(&self) {
        let mut queue = self.queue.lock();
        queue.closing = true;
        self.wake_writer(queue, true);
    }

    /// The last record fsynced, without a lock.
    pub fn durable_lsn(&self) -> u64 {
        self.durable_lsn.load(Ordering::Acquire)
    }

    /// Sets how long the writer may hold queued records back (see [`Wal::set_coalesce_window`](super::Wal::set_coalesce_window)).
    pub fn set_coalesce_window(&self, window: Duration) {
        self.coalesce_window_nanos.store(duration_nanos(window), Ordering::Release);
        // A writer sleeping out the old window looks again.
        self.wake_writer(self.queue.lock(), true);
    }

    /// Whether record `lsn` is known durable, without a lock.
    pub fn is_durable(&self, lsn: u64) -> bool {
        lsn <= self.durable_lsn()
    }

    /// The last record appended, without a lock.
    pub fn appended_lsn(&self) -> u64 {
        self.appended_lsn.load(Ordering::Acquire)
    }

    /// Whether record `lsn` is known to have reached `reach`, without a lock.
    pub fn has_reached(&self, lsn: u64, reach: Reach) -> bool {
        let reached = match reach {
            Reach::Written => &self.written_lsn,
            Reach::Durable => &self.durable_lsn,
        };
        lsn <= reached.load(Ordering::Acquire)
    }

    /// Blocks until waiting for record `lsn` to reach `reach` has an outcome: it has
    /// (`Ok`), its batch failed, the log failed for good or the writer stopped (`Err`).
    /// Where waiters combine, this thread first writes the queue itself (waiting for the
    /// writer's lock if another thread holds it); otherwise it parks, and the writer unparks
    /// it when that record gets there or something failed.
    pub fn wait_for(&self, lsn: u64, reach: Reach, core: &Mutex<Writer>) -> Result<(), WalError> {
        if self.has_reached(lsn, reach) {
            return Ok(());
        }
        if self.combines(reach) {
            self.combine(core.lock());
            if self.has_reached(lsn, reach) {
                return Ok(());
            }
        }
        // A thread-local slot, so a wait allocates nothing; a wait from a thread-local's
        // destructor (when the slot may be gone) gets a fresh one.
        let slot = WAIT_SLOT.try_with(Arc::clone).unwrap_or_else(|_| Arc::new(WaitSlot::for_current_thread()));
        loop {
            let mut ack = self.ack.lock();
            if let Some(outcome) = ack.outcome(lsn, reach) {
                return outcome;
            }
            slot.woken.store(false, Ordering::Relaxed);
            ack.waiters.push(Waiter { lsn, reach, wake: Wake::Thread(Arc::clone(&slot)) });
            drop(ack);
            // `park` may return without an `unpark` meant for it: only `woken` counts.
            while !slot.woken.load(Ordering::Acquire) {
                std::thread::park();
            }
            if self.has_reached(lsn, reach) {
                return Ok(());
            }
        }
    }

    /// The non-blocking form of [`wait_for`](Self::wait_for): `Ready` with the outcome, or
    /// `Pending` with the task's waker registered, woken by the writer exactly when
    /// `wait_for` would return. It combines only when the writer's lock is free: an async
    /// caller's thread serves other tasks, so it never waits for another thread's `write`.
    pub fn poll_for(
        &self,
        lsn: u64,
        reach: Reach,
        core: &Mutex<Writer>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), WalError>> {
        if self.has_reached(lsn, reach) {
            return std::task::Poll::Ready(Ok(()));
        }
        if self.combines(reach) {
            match core.try_lock() {
                Some(writer) => {
                    self.combine(writer);
                    if self.has_reached(lsn, reach) {
                        return std::task::Poll::Ready(Ok(()));
                    }
                }
                // Whoever holds the lock may have taken the queue before this record was
                // appended, and an append does not wake the writer: make sure it looks.
                None => self.wake_writer(self.queue.lock(), true),
            }
        }
        let mut ack = self.ack.lock();
        if let Some(outcome) = ack.outcome(lsn, reach) {
            return std::task::Poll::Ready(outcome);
        }
        // A task polled again before it was woken would leave a stale waker behind; the
        // writer wakes both, and a spurious wake of a future is harmless.
        ack.waiters.push(Waiter { lsn, reach, wake: Wake::Task(cx.waker().clone()) });
        std::task::Poll::Pending
    }

    /// Whether a waiter for `reach` writes the queue itself: only where waiters wait for
    /// the write alone (an fsync on a caller's thread would hold it for milliseconds, and the
    /// writer thread batches those better).
    fn combines(&self, reach: Reach) -> bool {
        self.combine && reach == Reach::Written
    }

    /// One combining turn on the caller's thread, holding the writer's lock: takes what is
    /// queued, seals and writes it, and wakes its waiters, as the writer thread would. Does
    /// only that plain case; when anything else is due (a failure, a request, a periodic
    /// fsync, a full segment) it wakes the writer thread instead, which does it all.
    fn combine(&self, mut writer: MutexGuard<'_, Writer>) {
        let mut queue = self.queue.lock();
        let now = Instant::now();
        if !writer.can_combine(&queue, now) {
            drop(writer);
            self.wake_writer(queue, true);
            return;
        }
        if queue.buffer.is_empty() {
            // Taken by the last holder of the lock, and (as nothing failed) written.
            return;
        }
        let taken = writer.take(&mut queue, now);
        drop(queue);
        assert!(taken.is_ok(), "a queue with records and nothing else due is always taken");
        writer.seal_taken();
        let was_unsynced = writer.unsynced;
        let outcome = writer.write_pending();
        // The writer thread sleeps with a deadline it chose before this write: a failure
        // (retries), a first unsynced write (the periodic fsync) or a full segment
        // (rotation) needs it to choose again.
        let writer_needed = outcome.is_err() || !was_unsynced || writer.segment.len > writer.segment_bytes;
        writer.settle(outcome);
        drop(writer);
        if writer_needed {
            self.wake_writer(self.queue.lock(), true);
        }
    }

    /// Wakes the waiters `pick` selects and unregisters them; called with the ack lock held,
    /// so they are unparked (by `wake_all`) after it is released.
    fn take_waiters(ack: &mut Ack, woken: &mut Vec<Waiter>, mut pick: impl FnMut(&Waiter) -> bool) {
        let mut index = 0;
        while index < ack.waiters.len() {
            if pick(&ack.waiters[index]) {
                woken.push(ack.waiters.swap_remove(index));
            } else {
                index += 1;
            }
        }
    }
}

/// Unparks the waiters taken by [`Shared::take_waiters`].
fn wake_all(woken: &mut Vec<Waiter>) {
    for waiter in woken.drain(..) {
        match waiter.wake {
            Wake::Thread(slot) => slot.wake(),
            Wake::Task(waker) => waker.wake(),
        }
    }
}

/// What the writer does when the queue gives it nothing to do yet.
struct Sleep {
    /// When it must look again even if nobody wakes it.
    until: Option<Instant>,
    /// It holds queued records back to let more gather.
    coalescing: bool,
}

/// What the writer took from the queue for one turn.
struct Job {
    sync_through: u64,
    rotate_requests: u64,
    closing: bool,
}

/// A failure seen by the writer, before it is published.
struct Fault {
    reason: String,
    fatal: bool,
}

impl Fault {
    fn retryable(reason: String) -> Fault {
        Fault { reason, fatal: false }
    }

    fn fatal(reason: String) -> Fault {
        Fault { reason: format!("{reason}; the log takes no more writes: restart to recover"), fatal: true }
    }
}

/// The segment being written.
#[derive(Debug)]
struct OpenSegment {
    file: Box<dyn DiskFile>,
    path: PathBuf,
    first_lsn: u64,
    /// Bytes known good: the header and whole records.
    len: u64,
}

/// Creates a segment file and writes its header. On failure a half-made file is removed
/// (best effort: a later `create` truncates it anyway, and replay removes a torn header).
fn create_segment(disk: &dyn Disk, dir: &Path, first_lsn: u64) -> Result<OpenSegment, WalError> {
    let path = segment::segment_path(dir, first_lsn);
    let mut file = disk.create(&path).map_err(|e| WalError::io("create segment", &path, e))?;
    if let Err(error) = file.write_all(&segment::encode_header(first_lsn)) {
        let _ = disk.remove(&path);
        return Err(WalError::io("write segment header", &path, error));
    }
    Ok(OpenSegment { file, path, first_lsn, len: SEGMENT_HEADER_BYTES as u64 })
}

/// Refuses to start where a segment on disk already holds records at or after `next_lsn`.
fn check_start(disk: &dyn Disk, dir: &Path, next_lsn: u64) -> Result<usize, WalError> {
    let existing = segment::list_segments(disk, dir)?;
    for segment in &existing {
        let conflict = match segment.first_lsn.cmp(&next_lsn) {
            std::cmp::Ordering::Less => false,
            std::cmp::Ordering::Greater => true,
            std::cmp::Ordering::Equal => {
                let len = disk.file_len(&segment.path).map_err(|e| WalError::io("stat", &segment.path, e))?;
                len > SEGMENT_HEADER_BYTES as u64
            }
        };
        if conflict {
            return Err(WalError::StartConflict { next_lsn, file: segment.path.clone() });
        }
    }
    // The new segment replaces an empty one of the same name, if there is one.
    Ok(existing.iter().filter(|segment| segment.first_lsn < next_lsn).count() + 1)
}

/// The writer thread's state.
pub(super) struct Writer {
    shared: Arc<Shared>,
    disk: Arc<dyn Disk>,
    dir: PathBuf,
    policy: FsyncPolicy,
    segment_bytes: u64,
    retry_interval: Duration,
    segment: OpenSegment,
    /// Frames just taken from the queue, not yet sealed: `sealed_lsn + 1 ..= taken_lsn`.
    taken: Vec<u8>,
    taken_lsn: u64,
    /// Sealed frames not yet written: `written_lsn + 1 ..= sealed_lsn`.
    pending: Vec<u8>,
    sealed_lsn: u64,
    written_lsn: u64,
    durable_lsn: u64,
    /// Something was written to the segment since its last fsync.
    unsynced: bool,
    last_sync: Instant,
    failure: Option<Fault>,
    retry_at: Instant,
    rotations_done: u64,
    /// Waiters taken from `Ack::waiters`, to unpark once the ack lock is released.
    woken: Vec<Waiter>,
}

impl Writer {
    /// Creates the first segment (durably: header fsynced, directory fsynced) and the shared
    /// state, before any thread starts.
    pub fn open(opts: &WalOptions, next_lsn: u64) -> Result<(Writer, Arc<Shared>), WalError> {
        let disk = &*opts.disk;
        disk.create_dir_all(&opts.dir).map_err(|e| WalError::io("create directory", &opts.dir, e))?;
        let segments = check_start(disk, &opts.dir, next_lsn)?;
        let mut segment = create_segment(disk, &opts.dir, next_lsn)?;
        segment.file.sync_data().map_err(|e| WalError::io("fsync segment", &segment.path, e))?;
        disk.sync_dir(&opts.dir).map_err(|e| WalError::io("sync directory", &opts.dir, e))?;
        let shared = Arc::new(Shared {
            queue: Mutex::new(Queue {
                buffer: Vec::new(),
                next_lsn,
                first_queued_at: None,
                writer: WriterState::Busy,
                sync_through: 0,
                rotate_requests: 0,
                closing: false,
            }),
            work_ready: Condvar::new(),
            ack: Mutex::new(Ack {
                written_lsn: next_lsn - 1,
                durable_lsn: next_lsn - 1,
                failure: None,
                stopped: false,
                rotations_done: 0,
                rotated_to_lsn: next_lsn,
                bytes_written: SEGMENT_HEADER_BYTES as u64,
                batches: 0,
                fsyncs: 1,
                waiters: Vec::new(),
            }),
            ack_changed: Condvar::new(),
            failed: AtomicBool::new(false),
            durable_lsn: AtomicU64::new(next_lsn - 1),
            written_lsn: AtomicU64::new(next_lsn - 1),
            appended_lsn: AtomicU64::new(next_lsn - 1),
            // Only where nobody waits for a record to be written: under `Periodic` every
            // write's answer waits for its `write(2)`, so holding records back would only
            // add the window to every write's latency.
            coalesce: opts.policy == FsyncPolicy::Never,
            combine: matches!(opts.policy, FsyncPolicy::Periodic(_)),
            coalesce_window_nanos: AtomicU64::new(duration_nanos(COALESCE_WINDOW)),
            current_first_lsn: AtomicU64::new(next_lsn),
            segments: AtomicUsize::new(segments),
            queue_bytes_max: opts.queue_bytes_max.max(1),
            queue_wait: opts.queue_wait,
            queue_full: AtomicBool::new(false),
            room: Condvar::new(),
        });
        let now = Instant::now();
        let writer = Writer {
            shared: Arc::clone(&shared),
            disk: Arc::clone(&opts.disk),
            dir: opts.dir.clone(),
            policy: opts.policy,
            segment_bytes: opts.segment_bytes,
            retry_interval: opts.retry_interval,
            segment,
            taken: Vec::new(),
            taken_lsn: next_lsn - 1,
            pending: Vec::new(),
            sealed_lsn: next_lsn - 1,
            written_lsn: next_lsn - 1,
            durable_lsn: next_lsn - 1,
            unsynced: false,
            last_sync: now,
            failure: None,
            retry_at: now,
            rotations_done: 0,
            woken: Vec::new(),
        };
        Ok((writer, shared))
    }

    /// The thread's body: one turn per batch until asked to close. It holds the writer's
    /// lock for a turn and never while it sleeps, so waiters can combine meanwhile.
    pub fn run(core: Arc<Mutex<Writer>>, shared: Arc<Shared>) -> Result<(), WalError> {
        let _stopped = StopOnExit(Arc::clone(&shared));
        loop {
            let (mut writer, job) = Writer::next_job(&core, &shared);
            writer.seal_taken();
            if writer.failure.as_ref().is_some_and(|failure| failure.fatal) {
                // `next_job` hands a fatal writer nothing but the request to close.
                return Err(writer.unwritable());
            }
            let outcome = writer.turn(&job);
            writer.settle(outcome);
            if job.closing {
                return match writer.failure {
                    None => Ok(()),
                    Some(_) => Err(writer.unwritable()),
                };
            }
        }
    }

    fn unwritable(&self) -> WalError {
        let reason = self.failure.as_ref().map_or_else(String::new, |failure| failure.reason.clone());
        WalError::Unwritable { reason }
    }

    /// Sleeps until there is something to do, then takes everything queued and returns with
    /// the writer's lock held.
    fn next_job<'a>(core: &'a Mutex<Writer>, shared: &Shared) -> (MutexGuard<'a, Writer>, Job) {
        loop {
            let mut writer = core.lock();
            let mut queue = shared.queue.lock();
            let now = Instant::now();
            let sleep = match writer.take(&mut queue, now) {
                Ok(job) => return (writer, job),
                Err(sleep) => sleep,
            };
            drop(writer);
            // Where waiters combine, an append nobody waits for wakes nobody: look at least
            // this often, so such a record is written within the interval all the same.
            let until = match shared.combine {
                true => Some(
                    sleep.until.map_or(now + COMBINED_LOOK_INTERVAL, |until| until.min(now + COMBINED_LOOK_INTERVAL)),
                ),
                false => sleep.until,
            };
            queue.writer = if sleep.coalescing { WriterState::Coalescing } else { WriterState::Idle };
            match until {
                Some(deadline) => {
                    shared.work_ready.wait_until(&mut queue, deadline);
                }
                None => shared.work_ready.wait(&mut queue),
            }
            queue.writer = WriterState::Busy;
        }
    }

    /// Whether a waiter may write the queue on its own thread now: nothing but a write is
    /// due (no failure, request, periodic fsync or rotation), and the writer is running.
    fn can_combine(&self, queue: &Queue, now: Instant) -> bool {
        self.failure.is_none()
            && !self.shared.failed.load(Ordering::Acquire)
            && !queue.closing
            && queue.sync_through <= self.durable_lsn
            && queue.rotate_requests <= self.rotations_done
            && self.segment.len <= self.segment_bytes
            && !self.periodic_sync_due(now)
    }

    /// Takes the queue's records and requests if this turn has anything to do (and, when
    /// coalescing, nothing makes it urgent); otherwise says how long to sleep.
    fn take(&mut self, queue: &mut Queue, now: Instant) -> Result<Job, Sleep> {
        let idle = Sleep { until: self.deadline(), coalescing: false };
        let retry_due = match &self.failure {
            None => false,
            Some(failure) if failure.fatal => {
                // These records will never be written (their waiters get Err): dropping
                // them keeps a failed log from growing without bound.
                queue.buffer.clear();
                self.shared.queue_full.store(false, Ordering::Release);
                self.shared.room.notify_all();
                return if queue.closing { Ok(self.job(queue)) } else { Err(idle) };
            }
            Some(_) if now < self.retry_at && !queue.closing => return Err(idle),
            Some(_) => true,
        };
        let urgent = queue.sync_through > self.durable_lsn
            || queue.rotate_requests > self.rotations_done
            || queue.closing
            || retry_due
            || self.periodic_sync_due(now);
        if !urgent {
            if queue.buffer.is_empty() {
                return Err(idle);
            }
            if let Some(until) = self.coalesce_until(queue)
                && now < until
            {
                let until = idle.until.map_or(until, |deadline| deadline.min(until));
                return Err(Sleep { until: Some(until), coalescing: true });
            }
        }
        // Swapped, not copied: the queue gets back an empty allocation of the same size.
        debug_assert!(self.taken.is_empty());
        mem::swap(&mut self.taken, &mut queue.buffer);
        queue.first_queued_at = None;
        // The queue's lock is held: a writer in `admit` is either before its check (and
        // sees the room) or waiting (and is woken).
        self.shared.queue_full.store(false, Ordering::Release);
        self.shared.room.notify_all();
        self.taken_lsn = queue.next_lsn - 1;
        Ok(self.job(queue))
    }

    /// Until when the queued records may be held back for more to gather: never under
    /// `Always` (waiters wait for them), nor once [`COALESCE_BYTES`] are queued, nor while
    /// the log is failed (the retry schedule rules then).
    fn coalesce_until(&self, queue: &Queue) -> Option<Instant> {
        if !self.shared.coalesce || self.failure.is_some() || queue.buffer.len() >= COALESCE_BYTES {
            return None;
        }
        let window = self.shared.coalesce_window_nanos.load(Ordering::Acquire);
        if window == 0 {
            return None;
        }
        queue.first_queued_at?.checked_add(Duration::from_nanos(window))
    }

    /// Computes the checksums of the frames just taken (the queue lock is free meanwhile)
    /// and moves them to `pending`.
    fn seal_taken(&mut self) {
        let count = frame::seal_frames(&mut self.taken, self.sealed_lsn + 1);
        assert_eq!(self.sealed_lsn + count, self.taken_lsn, "the queue held exactly the lsns it handed out");
        self.sealed_lsn = self.taken_lsn;
        if self.pending.is_empty() {
            mem::swap(&mut self.pending, &mut self.taken);
        } else {
            // After a failed write: the new frames go after the ones waiting for a retry.
            self.pending.extend_from_slice(&self.taken);
            self.taken.clear();
        }
        release_if_big(&mut self.taken);
    }

    fn job(&self, queue: &Queue) -> Job {
        Job { sync_through: queue.sync_through, rotate_requests: queue.rotate_requests, closing: queue.closing }
    }

    /// When the writer must wake up even if nobody calls: a periodic fsync or a retry.
    fn deadline(&self) -> Option<Instant> {
        match &self.failure {
            // While failed only a retry is due (a periodic fsync that is overdue must not
            // make the writer spin until then).
            Some(failure) if failure.fatal => None,
            Some(_) => Some(self.retry_at),
            None => self.periodic_sync_at(),
        }
    }

    /// When the next periodic fsync is due, if one is (`None` also for an interval too long
    /// to add to the clock: never).
    fn periodic_sync_at(&self) -> Option<Instant> {
        match self.policy {
            FsyncPolicy::Periodic(interval) if self.unsynced => self.last_sync.checked_add(interval),
            _ => None,
        }
    }

    fn periodic_sync_due(&self, now: Instant) -> bool {
        self.periodic_sync_at().is_some_and(|at| now >= at)
    }

    /// One batch: write it, fsync if wanted, rotate if due.
    fn turn(&mut self, job: &Job) -> Result<(), Fault> {
        self.write_pending()?;
        let rotation_requested = job.rotate_requests > self.rotations_done;
        let rotation_due = rotation_requested || self.segment.len > self.segment_bytes;
        let sync_wanted = self.policy == FsyncPolicy::Always
            || job.sync_through > self.durable_lsn
            || job.closing
            || rotation_due
            || self.periodic_sync_due(Instant::now());
        if sync_wanted && self.unsynced {
            self.sync()?;
        }
        if rotation_due {
            self.rotate()?;
        }
        if rotation_requested {
            self.rotations_done = job.rotate_requests;
            let mut ack = self.shared.ack.lock();
            ack.rotations_done = job.rotate_requests;
            ack.rotated_to_lsn = self.segment.first_lsn;
            drop(ack);
            self.shared.ack_changed.notify_all();
        }
        Ok(())
    }

    fn write_pending(&mut self) -> Result<(), Fault> {
        if self.pending.is_empty() {
            return Ok(());
        }
        debug_assert!(batch_is_consistent(&self.pending, self.written_lsn + 1, self.sealed_lsn));
        let good_len = self.segment.len;
        if let Err(error) = self.segment.file.write_all(&self.pending) {
            let reason =
                format!("writing {} bytes to {} failed: {error}", self.pending.len(), self.segment.path.display());
            // Cut off whatever part of the batch reached the file, so the retry appends right
            // after the last whole record and no record is written twice.
            if let Err(cut_error) = self.segment.file.set_len(good_len) {
                return Err(Fault::fatal(format!("{reason}; cutting the partial write off failed: {cut_error}")));
            }
            return Err(Fault::retryable(reason));
        }
        let bytes = self.pending.len() as u64;
        self.segment.len += bytes;
        self.written_lsn = self.sealed_lsn;
        self.unsynced = true;
        self.pending.clear();
        release_if_big(&mut self.pending);
        let written_lsn = self.written_lsn;
        let mut ack = self.shared.ack.lock();
        ack.written_lsn = written_lsn;
        ack.bytes_written += bytes;
        ack.batches += 1;
        self.shared.written_lsn.store(written_lsn, Ordering::Release);
        Shared::take_waiters(&mut ack, &mut self.woken, |waiter| {
            waiter.reach == Reach::Written && waiter.lsn <= written_lsn
        });
        drop(ack);
        wake_all(&mut self.woken);
        Ok(())
    }

    fn sync(&mut self) -> Result<(), Fault> {
        if let Err(error) = self.segment.file.sync_data() {
            // Never retried: the kernel may have dropped the pages it failed to write and
            // marked them clean, so a second fsync could "succeed" without the data.
            return Err(Fault::fatal(format!("fsync of {} failed: {error}", self.segment.path.display())));
        }
        self.unsynced = false;
        self.last_sync = Instant::now();
        self.durable_lsn = self.written_lsn;
        let durable_lsn = self.durable_lsn;
        let mut ack = self.shared.ack.lock();
        ack.durable_lsn = durable_lsn;
        ack.fsyncs += 1;
        self.shared.durable_lsn.store(durable_lsn, Ordering::Release);
        // Durable implies written: waiters of either kind up to here are answered.
        Shared::take_waiters(&mut ack, &mut self.woken, |waiter| waiter.lsn <= durable_lsn);
        drop(ack);
        wake_all(&mut self.woken);
        Ok(())
    }

    /// Starts the next segment. The current one was fsynced by the caller; a segment with no
    /// record yet already is the next segment (and a new one would have its name).
    fn rotate(&mut self) -> Result<(), Fault> {
        let first_lsn = self.written_lsn + 1;
        if first_lsn == self.segment.first_lsn {
            return Ok(());
        }
        assert!(!self.unsynced && self.pending.is_empty(), "rotation only after a written, fsynced batch");
        let segment =
            create_segment(&*self.disk, &self.dir, first_lsn).map_err(|error| Fault::retryable(error.to_string()))?;
        // The old segment was fsynced before the new one existed, so a crash cannot leave a
        // durable new segment after an incomplete old one. Now make the new name durable.
        self.disk
            .sync_dir(&self.dir)
            .map_err(|error| Fault::fatal(format!("syncing directory {}: {error}", self.dir.display())))?;
        tracing::info!(segment = %segment.path.display(), previous_bytes = self.segment.len, "WAL segment started");
        self.segment = segment;
        // The header is written, not yet fsynced: it becomes durable with the segment's first batch.
        self.unsynced = true;
        self.shared.current_first_lsn.store(first_lsn, Ordering::Release);
        self.shared.segments.fetch_add(1, Ordering::AcqRel);
        self.shared.ack.lock().bytes_written += SEGMENT_HEADER_BYTES as u64;
        Ok(())
    }

    /// Publishes the outcome of a turn: enters, updates or leaves the failed state.
    fn settle(&mut self, outcome: Result<(), Fault>) {
        match outcome {
            Ok(()) => {
                if self.failure.take().is_some() {
                    tracing::info!(dir = %self.dir.display(), written_lsn = self.written_lsn, "WAL writable again");
                    self.publish_failure(None);
                }
            }
            Err(fault) => {
                if self.failure.is_none() || fault.fatal {
                    tracing::error!(dir = %self.dir.display(), reason = %fault.reason, fatal = fault.fatal, "WAL failed");
                } else {
                    tracing::debug!(dir = %self.dir.display(), reason = %fault.reason, "WAL retry failed");
                }
                // `Wal::start` checked that the interval is at most an hour.
                self.retry_at = Instant::now() + self.retry_interval;
                let failure = Failure { reason: fault.reason.clone(), fatal: fault.fatal, through_lsn: self.taken_lsn };
                self.failure = Some(fault);
                self.publish_failure(Some(failure));
            }
        }
    }

    /// Sets or clears the failure and wakes every waiter (and `rotate` callers) to look
    /// at their outcome again.
    fn publish_failure(&mut self, failure: Option<Failure>) {
        let mut ack = self.shared.ack.lock();
        self.shared.failed.store(failure.is_some(), Ordering::Release);
        ack.failure = failure;
        Shared::take_waiters(&mut ack, &mut self.woken, |_| true);
        drop(ack);
        wake_all(&mut self.woken);
        self.shared.ack_changed.notify_all();
        self.shared.announce_room();
    }
}

/// A duration in nanoseconds, saturating (`u64` nanoseconds are 584 years).
fn duration_nanos(duration: Duration) -> u64 {
    u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX)
}

/// Gives an emptied batch buffer's memory back when one burst made it big.
fn release_if_big(buffer: &mut Vec<u8>) {
    debug_assert!(buffer.is_empty());
    if buffer.capacity() > BATCH_BUFFER_RETAINED_BYTES_MAX {
        *buffer = Vec::new();
    }
}

/// Marks the writer stopped however its thread ends (a panic included), so no waiter waits
/// for it forever.
struct StopOnExit(Arc<Shared>);

impl Drop for StopOnExit {
    fn drop(&mut self) {
        let mut ack = self.0.ack.lock();
        ack.stopped = true;
        self.0.failed.store(true, Ordering::Release);
        let mut woken = Vec::new();
        Shared::take_waiters(&mut ack, &mut woken, |_| true);
        drop(ack);
        wake_all(&mut woken);
        self.0.ack_changed.notify_all();
        self.0.announce_room();
    }
}

/// Whether `bytes` holds exactly the frames `first_lsn..=last_lsn`, each checking out: the
/// writer's check of a batch before it goes to disk (O(n), debug builds only).
fn batch_is_consistent(bytes: &[u8], first_lsn: u64, last_lsn: u64) -> bool {
    let mut offset = 0;
    let mut expected = first_lsn;
    while offset < bytes.len() {
        match frame::read_frame(bytes, offset) {
            FrameRead::Frame { lsn, next, .. } if lsn == expected => {
                offset = next;
                expected += 1;
            }
            _ => return false,
        }
    }
    expected == last_lsn + 1
}
