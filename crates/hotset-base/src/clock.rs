//! The time a database reads: the wall clock for key expiry, a monotonic one for query
//! time limits.
//!
//! Owns: the [`Clock`] trait plus a real ([`SystemClock`]) and a test
//! ([`ManualClock`]) implementation.
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

impl Clock for SystemClock {
    fn now_ms(&self) -> u64 {
        // A clock set before 1970 reads as 0 rather than panicking: expiry then
        // simply behaves as if time had not started yet.
        SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
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
