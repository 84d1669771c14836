//! A query's time limit, checked from the executor's row loops.
//!
//! Owns: `Deadline`, which says whether a query has run past its `Query::timeout`, reading
//! the clock only once per `CHECK_EVERY` questions so a row loop pays a counter
//! increment, not a clock read, per row. Never: stop a query by itself; the loops that ask
//! end early, and `exec::run` turns a passed deadline into `Error::Timeout` so a partial
//! result is never returned.

use std::cell::Cell;
use std::time::{Duration, Instant};

/// Questions between two clock reads.
const CHECK_EVERY: u32 = 1024;

/// The time limit of one query run (one thread).
#[derive(Debug)]
pub(crate) struct Deadline {
    at: Option<Instant>,
    limit: Duration,
    /// Questions until the next clock read.
    countdown: Cell<u32>,
    passed: Cell<bool>,
}

impl Deadline {
    /// A deadline `limit` from now; `None` never passes.
    pub(crate) fn after(limit: Option<Duration>) -> Deadline {
        Deadline {
            at: limit.map(|limit| Instant::now() + limit),
            limit: limit.unwrap_or_default(),
            // The first question reads the clock, so a zero limit passes at once.
            countdown: Cell::new(0),
            passed: Cell::new(false),
        }
    }

    /// Whether the limit has passed (once it has, it stays passed).
    #[inline]
    pub(crate) fn passed(&self) -> bool {
        let Some(at) = self.at else { return false };
        if self.passed.get() {
            return true;
        }
        match self.countdown.get() {
            0 => {
                self.countdown.set(CHECK_EVERY);
                let passed = Instant::now() >= at;
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

    #[test]
    fn no_limit_never_passes_and_a_zero_limit_passes_at_the_first_question() {
        let never = Deadline::after(None);
        assert!((0..5_000).all(|_| !never.passed()));
        assert!(never.check().is_ok());
        let zero = Deadline::after(Some(Duration::ZERO));
        assert!(zero.passed());
        assert!(zero.passed(), "stays passed");
        assert!(matches!(zero.check(), Err(crate::error::Error::Timeout { limit_ms: 0 })));
    }

    #[test]
    fn a_long_limit_is_not_passed_and_reads_the_clock_once_per_batch() {
        let deadline = Deadline::after(Some(Duration::from_secs(3_600)));
        assert!(!deadline.passed());
        assert_eq!(deadline.countdown.get(), CHECK_EVERY, "the first question read the clock");
        assert!(!deadline.passed());
        assert_eq!(deadline.countdown.get(), CHECK_EVERY - 1, "the next ones only count");
        assert!(deadline.check().is_ok());
    }
}
