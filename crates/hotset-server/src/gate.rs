//! The script gate: how a Lua script is atomic for every other connection, on every I/O
//! thread.
//!
//! Connections run each batch of requests as *readers* of the gate; a script (EVAL, FCALL
//! and kin, or an EXEC whose queue holds one) runs with the gate *closed*: no batch is
//! inside but the one running it, so nobody sees a state between two of its commands,
//! and one script runs at a time server-wide, as in Redis.
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
//! Owns: [`Gate`], [`Reader`], [`Closed`], when a closed gate counts as busy (the holder
//! has run past `busy-reply-threshold`) and waking the connections that wait for it.
//! Never: block a reader (entering succeeds at once or reports the gate closed; the
//! connection then awaits [`Gate::wait`] without holding a thread), or close the gate from
//! anywhere but inside a batch that entered it (the closer counts itself as the one reader
//! left).

use std::cell::Cell;
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

/// "Not held": [`Gate::held_since`] before the holder has drained the readers.
const NOT_HELD: u64 = u64::MAX;

/// The gate every connection's batch passes.
pub struct Gate {
    slots: Box<[Slot]>,
    closed: AtomicBool,
    /// Microseconds since `epoch` when the holder began (the readers drained), or
    /// `NOT_HELD`.
    held_since: AtomicU64,
    epoch: Instant,
    /// Signalled when the gate opens and when its holder begins: waiting connections
    /// look again.
    changed: tokio::sync::Notify,
}

impl Default for Gate {
    fn default() -> Gate {
        Gate {
            slots: (0..SLOTS).map(|_| Slot::default()).collect(),
            closed: AtomicBool::new(false),
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
pub struct Closed<'g> {
    gate: &'g Gate,
}

impl Drop for Closed<'_> {
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

    /// Closes the gate from inside a batch (the caller's batch entered it on this thread):
    /// waits until every other batch has left. `None` when another holder has it closed.
    pub fn try_close(&self) -> Option<Closed<'_>> {
        debug_assert!(self.slots[my_slot()].0.load(Ordering::SeqCst) > 0, "closed from inside a batch");
        self.closed.compare_exchange(false, true, Ordering::SeqCst, Ordering::SeqCst).ok()?;
        let closed = Closed { gate: self };
        // Batches are short: spin a little, then hand this thread's other connections to
        // another thread while a long one (DEBUG SLEEP, a large document request) ends.
        for round in 0..256 {
            if self.readers() <= 1 {
                return Some(self.held(closed));
            }
            if round < 64 { std::hint::spin_loop() } else { std::thread::yield_now() }
        }
        blocking_section(|| {
            while self.readers() > 1 {
                std::thread::sleep(Duration::from_micros(50));
            }
        });
        Some(self.held(closed))
    }

    fn held<'g>(&self, closed: Closed<'g>) -> Closed<'g> {
        let since = u64::try_from(self.epoch.elapsed().as_micros()).unwrap_or(NOT_HELD - 1);
        self.held_since.store(since, Ordering::SeqCst);
        // Connections waiting for the gate time their `-BUSY` from now.
        self.changed.notify_waiters();
        closed
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
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            // Registered before the look, so an opening between the two is not missed.
            changed.as_mut().enable();
            if !self.closed.load(Ordering::SeqCst) {
                return;
            }
            match self.busy_at(threshold) {
                Some(at) if Instant::now() >= at => return,
                Some(at) => {
                    tokio::select! {
                        () = changed => {}
                        () = tokio::time::sleep_until(at.into()) => return,
                    }
                }
                None => changed.await,
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
    use std::sync::Arc;

    #[test]
    fn a_closed_gate_lets_no_reader_in_and_opens_again() {
        let gate = Gate::default();
        let reader = gate.enter().expect("open");
        let closed = gate.try_close().expect("nobody holds it");
        assert!(gate.enter().is_none(), "closed");
        assert!(gate.try_close().is_none(), "one holder at a time");
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
        let closed = gate.try_close().expect("nobody holds it");
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
        let closed = gate.try_close().unwrap();
        // Busy at once: the wait returns while the gate is still closed.
        gate.wait(Duration::ZERO).await;
        let waiter = {
            let gate = Arc::clone(&gate);
            tokio::spawn(async move { gate.wait(Duration::from_secs(3600)).await })
        };
        tokio::task::yield_now().await;
        drop(closed);
        tokio::time::timeout(Duration::from_secs(5), waiter).await.expect("woken by the opening").unwrap();
        drop(reader);
    }
}
