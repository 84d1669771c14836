//! The script gate: how a Lua script is atomic for every other connection, on every I/O
//! thread.
//!
//! Connections run each batch of requests as *readers* of the gate; a script (EVAL, FCALL
//! and kin, or an EXEC whose queue holds one) runs with the gate *closed*: no batch is
//! inside but the one running it, so nobody sees a state between two of its commands,
//! and one script runs at a time server-wide, as in Redis. The batch that closed the gate
//! keeps it closed to its end (a pipeline of scripts pays one closing), and only the
//! holder of the *turn* closes it: connections whose script found the gate taken queue
//! for the turn, first come first served, each woken once, rather than all racing at
//! every opening.
//!
//! Entering costs one thread-local read and an increment of a counter only this thread
//! writes (each thread has a cache-line of its own, picked once per thread), then a read
//! of the shared `closed` flag, which nobody writes between scripts: no shared cache line
//! changes hands on the hot path. Closing is one compare-and-swap on `closed` (so one
//! closer at a time), then a wait until the counters sum to one, the closer's own batch:
//! a reader that entered before the flag was set finishes its batch; one that enters after
//! sees the flag and backs out (both sides use sequentially consistent operations, so one
//! of them always sees the other).
//!
//! Owns: [`Gate`], [`Reader`], [`Closed`], the [`Turn`], when a closed gate counts as busy
//! (the holder's current script has run past `busy-reply-threshold`) and waking the
//! connections that wait for it. Never: block a reader (entering succeeds at once or
//! reports the gate closed; the connection then awaits [`Gate::wait`] or its turn without
//! holding a thread), or close the gate from anywhere but inside a batch that entered it
//! (the closer counts itself as the one reader left).

use std::cell::Cell;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Counters, one per thread (threads past this many share, which costs only contention).
const SLOTS: usize = 64;

/// A counter alone on its cache line (two lines: adjacent-line prefetching pairs them).
#[repr(align(128))]
#[derive(Default)]
struct Slot(AtomicUsize);

thread_local! {
    /// This thread's counter, picked on its first batch.
    static SLOT: Cell<usize> = const { Cell::new(usize::MAX) };
}

/// The next counter to hand to a thread.
static NEXT_SLOT: AtomicUsize = AtomicUsize::new(0);

fn my_slot() -> usize {
    SLOT.with(|slot| {
        if slot.get() == usize::MAX {
            slot.set(NEXT_SLOT.fetch_add(1, Ordering::Relaxed) % SLOTS);
        }
        slot.get()
    })
}

/// "Not held": `Gate::held_since` while the gate is open.
const NOT_HELD: u64 = u64::MAX;

/// The gate every connection's batch passes.
pub struct Gate {
    slots: Box<[Slot]>,
    closed: AtomicBool,
    /// One permit: the right to close the gate (a script's connection holds it for its
    /// batch).
    turn: Arc<tokio::sync::Semaphore>,
    /// Microseconds since `epoch` when the holder closed the gate or began its latest
    /// script, or `NOT_HELD`.
    held_since: AtomicU64,
    epoch: Instant,
    /// Signalled when the gate opens: waiting connections look again.
    changed: tokio::sync::Notify,
}

impl Default for Gate {
    fn default() -> Gate {
        Gate {
            slots: (0..SLOTS).map(|_| Slot::default()).collect(),
            closed: AtomicBool::new(false),
            turn: Arc::new(tokio::sync::Semaphore::new(1)),
            held_since: AtomicU64::new(NOT_HELD),
            epoch: Instant::now(),
            changed: tokio::sync::Notify::new(),
        }
    }
}

/// A batch inside the gate: while it lives, no script starts on another batch.
#[must_use]
pub struct Reader<'g> {
    gate: &'g Gate,
    slot: usize,
}

impl Drop for Reader<'_> {
    fn drop(&mut self) {
        self.gate.slots[self.slot].0.fetch_sub(1, Ordering::Release);
    }
}

/// The gate held closed: while it lives, every other batch waits (or is answered `-BUSY`).
#[must_use]
pub struct Closed {
    gate: Arc<Gate>,
}

/// The right to close the gate, held by one connection at a time.
pub type Turn = tokio::sync::OwnedSemaphorePermit;

/// What a connection whose request could not run waits for before it sends it again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    /// The gate to open (or its holder to turn busy: the batch then answers -BUSY).
    Open,
    /// The turn to close the gate (or the holder to turn busy).
    Turn,
}

impl Drop for Closed {
    fn drop(&mut self) {
        self.gate.held_since.store(NOT_HELD, Ordering::SeqCst);
        self.gate.closed.store(false, Ordering::SeqCst);
        self.gate.changed.notify_waiters();
    }
}

impl Gate {
    /// Enters for one batch; `None` while the gate is closed (nothing was taken).
    pub fn enter(&self) -> Option<Reader<'_>> {
        let slot = my_slot();
        let counter = &self.slots[slot].0;
        counter.fetch_add(1, Ordering::SeqCst);
        if self.closed.load(Ordering::SeqCst) {
            counter.fetch_sub(1, Ordering::SeqCst);
            return None;
        }
        Some(Reader { gate: self, slot })
    }

    /// The turn to close the gate, if nobody has it (or waits for it).
    pub fn take_turn(&self) -> Option<Turn> {
        Arc::clone(&self.turn).try_acquire_owned().ok()
    }

    /// Waits for the turn to close the gate, after the connections that asked before.
    pub async fn wait_turn(&self) -> Turn {
        Arc::clone(&self.turn).acquire_owned().await.expect("the turn's semaphore is never closed")
    }

    /// Closes the gate from inside a batch (the caller's batch entered it on this thread)
    /// with the turn (`_turn`): waits until every other batch has left. `None` when it is
    /// closed already (an EXEC's script inside the batch that closed it).
    pub fn try_close(self: &Arc<Self>, _turn: &Turn) -> Option<Closed> {
        debug_assert!(self.slots[my_slot()].0.load(Ordering::SeqCst) > 0, "closed from inside a batch");
        // Timed from before the gate closes, so a connection that finds it closed always
        // finds a clock to time its -BUSY by, without being woken when the holder begins
        // (each script restarts the clock). Only the turn's holder writes it.
        self.restart_clock();
        if self.closed.compare_exchange(false, true, Ordering::SeqCst, Ordering::SeqCst).is_err() {
            // Closed already, by this batch: its clock runs on from the script that began.
            return None;
        }
        let closed = Closed { gate: Arc::clone(self) };
        // Batches are short: spin a little, then hand this thread's other connections to
        // another thread while a long one (DEBUG SLEEP, a large document request) ends.
        for round in 0..256 {
            if self.readers() <= 1 {
                return Some(closed);
            }
            if round < 64 { std::hint::spin_loop() } else { std::thread::yield_now() }
        }
        blocking_section(|| {
            while self.readers() > 1 {
                std::thread::sleep(Duration::from_micros(50));
            }
        });
        Some(closed)
    }

    /// Closes the gate from inside a batch at once, without the turn and without waiting
    /// for the other batches: a keyed script (`commands::scripts`) that wrote and runs long
    /// keeps the server busy from now as a gated one would, while the batches inside go on
    /// (none reaches its keys' shards but by waiting for them). `None` when another holder
    /// has it closed (its batches wait already).
    pub fn close_now(self: &Arc<Self>) -> Option<Closed> {
        debug_assert!(self.slots[my_slot()].0.load(Ordering::SeqCst) > 0, "closed from inside a batch");
        if self.is_closed() {
            return None;
        }
        // Timed before the flag is set, as `try_close` does, so a waiter always finds a
        // clock; a closer that won the race in between gets its own clock back.
        let held = self.held_since.load(Ordering::SeqCst);
        let mine = self.restart_clock();
        if self.closed.compare_exchange(false, true, Ordering::SeqCst, Ordering::SeqCst).is_err() {
            let _ = self.held_since.compare_exchange(mine, held, Ordering::SeqCst, Ordering::SeqCst);
            return None;
        }
        Some(Closed { gate: Arc::clone(self) })
    }

    /// A new script starts under the closed gate: `-BUSY` is timed from now. (Waiters
    /// timed from before wake, find the holder not busy yet, and wait again.)
    pub fn restart_clock(&self) -> u64 {
        let since = u64::try_from(self.epoch.elapsed().as_micros()).unwrap_or(NOT_HELD - 1);
        self.held_since.store(since, Ordering::SeqCst);
        since
    }

    /// Batches inside, the closer's included.
    fn readers(&self) -> usize {
        self.slots.iter().map(|slot| slot.0.load(Ordering::SeqCst)).sum()
    }

    /// Whether a holder has the gate closed.
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }

    /// Whether the gate is closed and its holder has run for `threshold` or more: other
    /// connections are then answered `-BUSY` rather than kept waiting.
    pub fn is_busy(&self, threshold: Duration) -> bool {
        self.closed.load(Ordering::SeqCst) && self.busy_at(threshold).is_some_and(|at| Instant::now() >= at)
    }

    /// When the holder becomes busy; `None` before it has begun.
    fn busy_at(&self, threshold: Duration) -> Option<Instant> {
        match self.held_since.load(Ordering::SeqCst) {
            NOT_HELD => None,
            since => Some(self.epoch + Duration::from_micros(since) + threshold),
        }
    }

    /// Waits without holding a thread until the gate opens or its holder becomes busy
    /// (both may have happened when this returns; the caller looks again).
    pub async fn wait(&self, threshold: Duration) {
        self.wait_until(Some(threshold)).await;
    }

    /// Waits without holding a thread until the gate opens, however long its holder runs
    /// (an HTTP request has no `-BUSY` to answer instead).
    pub async fn wait_open(&self) {
        self.wait_until(None).await;
    }

    /// `wait` with a threshold, `wait_open` without.
    async fn wait_until(&self, threshold: Option<Duration>) {
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            // Registered before the look, so an opening between the two is not missed.
            changed.as_mut().enable();
            if !self.closed.load(Ordering::SeqCst) {
                return;
            }
            match threshold.and_then(|threshold| self.busy_at(threshold).map(|at| (threshold, at))) {
                Some((_, at)) if Instant::now() >= at => return,
                Some((threshold, at)) => {
                    tokio::select! {
                        () = changed => {}
                        () = tokio::time::sleep_until(at.into()) => {
                            // The clock may have restarted for the holder's next script.
                            if self.is_busy(threshold) {
                                return;
                            }
                        }
                    }
                }
                None => changed.await,
            }
        }
    }

    /// Waits without holding a thread until a holder of the gate is busy. It looks when
    /// the holder it saw would turn busy (or a threshold from now, with the gate open),
    /// rather than being woken at every opening: the connections queued for the turn are
    /// not all woken by each script that ends.
    pub async fn wait_busy(&self, threshold: Duration) {
        loop {
            // With the gate open, a threshold of 0 would make this a spin: look again a
            // millisecond later at the soonest.
            let at =
                self.busy_at(threshold).unwrap_or_else(|| Instant::now() + threshold.max(Duration::from_millis(1)));
            tokio::time::sleep_until(at.into()).await;
            if self.is_busy(threshold) {
                return;
            }
        }
    }
}

/// Runs `f`, which may block for a while, handing this runtime thread's other tasks to
/// another thread first when on tokio's multi-threaded runtime (elsewhere it just runs).
pub fn blocking_section<R>(f: impl FnOnce() -> R) -> R {
    match tokio::runtime::Handle::try_current() {
        Ok(handle) if handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(f)
        }
        _ => f(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_closed_gate_lets_no_reader_in_and_opens_again() {
        let gate = Arc::new(Gate::default());
        let reader = gate.enter().expect("open");
        let turn = gate.take_turn().expect("nobody has the turn");
        assert!(gate.take_turn().is_none(), "one turn");
        let closed = gate.try_close(&turn).expect("nobody holds it");
        assert!(gate.enter().is_none(), "closed");
        assert!(gate.try_close(&turn).is_none(), "one holder at a time");
        assert!(gate.is_busy(Duration::ZERO) && !gate.is_busy(Duration::from_secs(60)));
        drop(closed);
        assert!(!gate.is_busy(Duration::ZERO));
        let second = gate.enter().expect("open again");
        drop((second, reader));
        assert_eq!(gate.readers(), 0);
    }

    /// The closer waits for a batch that entered on another thread before it closed, and
    /// no batch enters while it holds the gate.
    #[test]
    fn closing_waits_for_the_other_threads_batches() {
        let gate = Arc::new(Gate::default());
        let inside = Arc::new(AtomicBool::new(false));
        let (entered_tx, entered_rx) = std::sync::mpsc::channel();
        let other = {
            let (gate, inside) = (Arc::clone(&gate), Arc::clone(&inside));
            std::thread::spawn(move || {
                let reader = gate.enter().expect("open");
                inside.store(true, Ordering::SeqCst);
                entered_tx.send(()).unwrap();
                std::thread::sleep(Duration::from_millis(50));
                inside.store(false, Ordering::SeqCst);
                drop(reader);
            })
        };
        entered_rx.recv().unwrap();
        let reader = gate.enter().expect("open");
        let turn = gate.take_turn().unwrap();
        let closed = gate.try_close(&turn).expect("nobody holds it");
        assert!(!inside.load(Ordering::SeqCst), "the other batch had left");
        let blocked = {
            let gate = Arc::clone(&gate);
            std::thread::spawn(move || gate.enter().is_none())
        };
        assert!(blocked.join().unwrap(), "no batch enters a closed gate");
        drop(closed);
        drop(reader);
        other.join().unwrap();
    }

    #[tokio::test]
    async fn waiters_wake_when_the_gate_opens_or_its_holder_is_busy() {
        let gate = Arc::new(Gate::default());
        let reader = gate.enter().unwrap();
        let turn = gate.take_turn().unwrap();
        let closed = gate.try_close(&turn).unwrap();
        // Busy at once: the waits return while the gate is still closed.
        gate.wait(Duration::ZERO).await;
        gate.wait_busy(Duration::ZERO).await;
        let waiter = {
            let gate = Arc::clone(&gate);
            tokio::spawn(async move { gate.wait(Duration::from_secs(3600)).await })
        };
        let next = {
            let gate = Arc::clone(&gate);
            tokio::spawn(async move { gate.wait_turn().await })
        };
        tokio::task::yield_now().await;
        drop(closed);
        tokio::time::timeout(Duration::from_secs(5), waiter).await.expect("woken by the opening").unwrap();
        // `wait_open` waits past busy, and returns once the gate opens.
        let closed = gate.try_close(&turn).unwrap();
        let opener = {
            let gate = Arc::clone(&gate);
            tokio::spawn(async move { gate.wait_open().await })
        };
        gate.wait_busy(Duration::ZERO).await;
        tokio::task::yield_now().await;
        assert!(!opener.is_finished(), "busy is not open");
        drop(closed);
        tokio::time::timeout(Duration::from_secs(5), opener).await.expect("woken by the opening").unwrap();
        drop(turn);
        let turn = tokio::time::timeout(Duration::from_secs(5), next).await.expect("the turn passes").unwrap();
        drop((turn, reader));
    }
}
