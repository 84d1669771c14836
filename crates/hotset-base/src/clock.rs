//! The time a database reads: the wall clock for key expiry, a monotonic one for query
//! time limits.
//!
//! Owns: the [`Clock`] trait plus a real ([`SystemClock`]) and a test
//! ([`ManualClock`]) implementation, and pinning the real one's reading on a thread for
//! a batch of work ([`pin_now`]).
//!
//! Must never: sleep, block, or perform I/O beyond reading the system time.
//!
//! Invariants: `now_ms` is milliseconds since the Unix epoch; `SystemClock`
//! saturates instead of panicking when the system time is before the epoch or
//! absurdly far in the future. `monotonic` is time since an arbitrary origin for
//! measuring durations; `SystemClock` reads it from `Instant`, so setting the wall
//! clock (NTP steps, an operator) never cuts a query short or lets it run on.
//! `ManualClock` only moves when told to (both readings together), which is what
//! lets expiry and time-limit tests run without sleeping.

use std::cell::Cell;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// A source of "now": wall-clock time for expiry, monotonic time for durations.
pub trait Clock: Send + Sync + 'static {
    /// Current time in milliseconds since the Unix epoch.
    fn now_ms(&self) -> u64;

    /// Time since an arbitrary origin fixed for the clock's life, for measuring how
    /// long something takes (a query's time limit). Wall-clock changes do not move it.
    fn monotonic(&self) -> Duration;
}

/// The real wall clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

thread_local! {
    /// The reading [`SystemClock::now_ms`] gives on this thread while a [`Pinned`] lives.
    static PINNED: Cell<Option<u64>> = const { Cell::new(None) };
}

/// The wall clock now, in ms since the epoch. A clock set before 1970 reads as 0 rather
/// than panicking: expiry then simply behaves as if time had not started yet.
fn wall_now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// While it lives, [`SystemClock::now_ms`] on this thread gives the reading taken when it
/// was made (see [`pin_now`]); dropping it gives back what was in force before.
#[must_use = "the reading holds only while the guard lives"]
pub struct Pinned {
    previous: Option<u64>,
}

/// Holds this thread's wall-clock reading for a short stretch of work: a server pins it
/// for one batch of requests, so a pipelined batch reads the clock once rather than once
/// per command (reading it was 5% of the CPU of a pipelined GET load), and every command
/// in the batch judges expiry at the same instant, as Redis 7 does inside a transaction or
/// a script. Anything that waits inside the stretch calls [`Pinned::refresh`] after.
pub fn pin_now() -> Pinned {
    Pinned { previous: PINNED.replace(Some(wall_now_ms())) }
}

impl Pinned {
    /// Takes a new reading (after a wait inside the pinned stretch, such as DEBUG SLEEP).
    pub fn refresh() {
        if PINNED.get().is_some() {
            PINNED.set(Some(wall_now_ms()));
        }
    }
}

impl Drop for Pinned {
    fn drop(&mut self) {
        PINNED.set(self.previous);
    }
}

impl Clock for SystemClock {
    fn now_ms(&self) -> u64 {
        PINNED.get().unwrap_or_else(wall_now_ms)
    }

    fn monotonic(&self) -> Duration {
        // One origin for the process, taken before any reading, so no reading is
        // before it.
        static ORIGIN: OnceLock<Instant> = OnceLock::new();
        ORIGIN.get_or_init(Instant::now).elapsed()
    }
}

/// A clock that only moves when told to; shared between a test and the
/// database through an `Arc`. Its monotonic reading is its wall-clock reading
/// (milliseconds since its zero), so `advance` moves both.
#[derive(Debug, Default)]
pub struct ManualClock {
    now_ms: AtomicU64,
}

impl ManualClock {
    /// A clock reading `start_ms`.
    pub fn new(start_ms: u64) -> Self {
        Self { now_ms: AtomicU64::new(start_ms) }
    }

    /// Sets the current time.
    pub fn set(&self, now_ms: u64) {
        self.now_ms.store(now_ms, Ordering::SeqCst);
    }

    /// Moves time forward by `delta_ms` (saturating) and returns the new time.
    pub fn advance(&self, delta_ms: u64) -> u64 {
        let previous = self
            .now_ms
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |t| Some(t.saturating_add(delta_ms)))
            .unwrap_or_else(|t| t);
        previous.saturating_add(delta_ms)
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> u64 {
        self.now_ms.load(Ordering::SeqCst)
    }

    fn monotonic(&self) -> Duration {
        Duration::from_millis(self.now_ms())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Spins until the wall clock has moved past `ms` (a millisecond at most).
    fn wall_passes(ms: u64) {
        let deadline = Instant::now() + Duration::from_secs(5);
        while wall_now_ms() <= ms {
            assert!(Instant::now() < deadline, "the wall clock stood still");
            std::hint::spin_loop();
        }
    }

    #[test]
    fn a_pinned_reading_holds_until_refreshed_or_dropped() {
        let clock = SystemClock;
        let outer = pin_now();
        let pinned = clock.now_ms();
        wall_passes(pinned);
        assert_eq!(clock.now_ms(), pinned, "held while pinned");
        Pinned::refresh();
        let refreshed = clock.now_ms();
        assert!(refreshed > pinned, "refresh takes a new reading");
        wall_passes(refreshed);
        {
            let _inner = pin_now();
            assert!(clock.now_ms() > refreshed, "a nested pin reads anew");
        }
        assert_eq!(clock.now_ms(), refreshed, "dropping the inner pin gives the outer one back");
        drop(outer);
        wall_passes(refreshed);
        assert!(clock.now_ms() > refreshed, "unpinned, the clock follows the wall");
        let other = std::thread::spawn(move || {
            let _pin = pin_now();
            SystemClock.now_ms()
        });
        assert!(other.join().expect("the thread ends") > pinned, "a pin is the thread's own");
    }

    #[test]
    fn manual_clock_moves_only_when_told() {
        let clock = ManualClock::new(1_000);
        assert_eq!(clock.now_ms(), 1_000);
        assert_eq!(clock.advance(250), 1_250);
        assert_eq!(clock.now_ms(), 1_250);
        assert_eq!(clock.monotonic(), Duration::from_millis(1_250), "read as often as you like");
        assert_eq!(clock.monotonic(), Duration::from_millis(1_250));
        clock.set(5);
        assert_eq!(clock.now_ms(), 5);
        assert_eq!(clock.monotonic(), Duration::from_millis(5));
        clock.set(u64::MAX - 1);
        assert_eq!(clock.advance(10), u64::MAX);
    }

    #[test]
    fn system_clock_is_after_2020() {
        assert!(SystemClock.now_ms() > 1_577_836_800_000);
    }

    #[test]
    fn system_monotonic_readings_never_go_backward() {
        let mut last = SystemClock.monotonic();
        for _ in 0..1_000 {
            let now = SystemClock.monotonic();
            assert!(now >= last, "{now:?} after {last:?}");
            last = now;
        }
    }
}
