//! A query's time limit, checked from the executor's row loops.
//!
//! Owns: `Deadline`, which says whether a query has run past its `Query::timeout`, reading
//! the database's clock (`Clock::monotonic`, so wall-clock changes neither cut a query
//! short nor let it run on) only once per `CHECK_EVERY` questions, so a row loop pays a
//! counter increment, not a clock read, per row. Never: stop a query by itself; the loops
//! that ask end early, and `exec::run` turns a passed deadline into `Error::Timeout` so a
//! partial result is never returned.

use crate::clock::Clock;
use std::cell::Cell;
use std::time::Duration;

/// Questions between two clock reads.
const CHECK_EVERY: u32 = 1024;

/// The time limit of one query run (one thread).
pub(crate) struct Deadline<'a> {
    /// The clock and the monotonic reading at which the limit passes; `None`: no limit.
    at: Option<(&'a dyn Clock, Duration)>,
    limit: Duration,
    /// Questions until the next clock read.
    countdown: Cell<u32>,
    passed: Cell<bool>,
}

impl std::fmt::Debug for Deadline<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Deadline")
            .field("at", &self.at.map(|(_, at)| at))
            .field("limit", &self.limit)
            .field("passed", &self.passed.get())
            .finish()
    }
}

impl<'a> Deadline<'a> {
    /// A deadline `limit` from now on `clock`; `None` never passes (and never reads the
    /// clock).
    pub(crate) fn after(limit: Option<Duration>, clock: &'a dyn Clock) -> Deadline<'a> {
        Deadline {
            at: limit.map(|limit| (clock, clock.monotonic().saturating_add(limit))),
            limit: limit.unwrap_or_default(),
            // The first question reads the clock, so a zero limit passes at once.
            countdown: Cell::new(0),
            passed: Cell::new(false),
        }
    }

    /// Whether the limit has passed (once it has, it stays passed).
    #[inline]
    pub(crate) fn passed(&self) -> bool {
        let Some((clock, at)) = self.at else { return false };
        if self.passed.get() {
            return true;
        }
        match self.countdown.get() {
            0 => {
                self.countdown.set(CHECK_EVERY);
                let passed = clock.monotonic() >= at;
                self.passed.set(passed);
                passed
            }
            n => {
                self.countdown.set(n - 1);
                false
            }
        }
    }

    /// `Error::Timeout` when the limit has passed (reading the clock now).
    pub(crate) fn check(&self) -> crate::error::Result<()> {
        self.countdown.set(0);
        if self.passed() {
            return Err(crate::error::Error::Timeout { limit_ms: self.limit.as_millis() as u64 });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;

    #[test]
    fn no_limit_never_passes_and_a_zero_limit_passes_at_the_first_question() {
        let clock = ManualClock::new(1_000);
        let never = Deadline::after(None, &clock);
        clock.advance(u64::MAX);
        assert!((0..5_000).all(|_| !never.passed()));
        assert!(never.check().is_ok());
        let zero = Deadline::after(Some(Duration::ZERO), &clock);
        assert!(zero.passed(), "the clock stands still, and a zero limit has passed all the same");
        assert!(zero.passed(), "stays passed");
        assert!(matches!(zero.check(), Err(crate::error::Error::Timeout { limit_ms: 0 })));
    }

    #[test]
    fn a_standing_clock_never_passes_a_limit_and_reads_happen_once_per_batch() {
        let clock = ManualClock::new(1_000);
        let deadline = Deadline::after(Some(Duration::from_millis(5)), &clock);
        assert!(!deadline.passed());
        assert_eq!(deadline.countdown.get(), CHECK_EVERY, "the first question read the clock");
        assert!(!deadline.passed());
        assert_eq!(deadline.countdown.get(), CHECK_EVERY - 1, "the next ones only count");
        assert!((0..100_000).all(|_| !deadline.passed()), "time stands still");
        assert!(deadline.check().is_ok());
    }

    #[test]
    fn a_passed_limit_is_seen_at_the_next_clock_read_and_stays_passed() {
        let clock = ManualClock::new(1_000);
        let deadline = Deadline::after(Some(Duration::from_millis(5)), &clock);
        assert!(!deadline.passed(), "reads the clock: 1,000 ms");
        clock.advance(4);
        assert!(deadline.check().is_ok(), "1 ms left");
        clock.advance(1);
        // The next CHECK_EVERY questions only count; the one after them reads the clock.
        assert!((0..CHECK_EVERY).all(|_| !deadline.passed()));
        assert!(deadline.passed(), "exactly at the limit is past it");
        clock.set(0);
        assert!(deadline.passed(), "stays passed");
        assert!(matches!(deadline.check(), Err(crate::error::Error::Timeout { limit_ms: 5 })));
    }
}
