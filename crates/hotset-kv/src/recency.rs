//! How recently and how often a key was used: the 20-bit access stamp every entry carries
//! beside its deadline (`value::Entry`), which OBJECT IDLETIME and OBJECT FREQ report and
//! the LRU and LFU eviction policies rank keys by.
//!
//! Owns: the stamp's two meanings and the process-wide settings that choose and tune them
//! ([`set_lfu_mode`], [`set_lfu_log_factor`], [`set_lfu_decay_time`], which the server
//! calls when `maxmemory-policy`, `lfu-log-factor` or `lfu-decay-time` change), as Redis
//! gives its 24-bit `lru` field two meanings:
//! - LRU (every policy but the LFU ones): the second of the last access, modulo 2^20. Idle
//!   time is now minus it, wrapping once, so it is right up to 12.1 days of idleness
//!   (Redis' 24 bits reach 194 days); older keys read younger than they are, which only
//!   makes eviction less exact for keys nobody has touched in weeks.
//! - LFU: an 8-bit logarithmic counter (5 for a new key; an access increments it with
//!   probability 1 / ((counter - 5) * lfu-log-factor + 1)) under 12 bits of the minute it
//!   was last decayed, modulo 4096 (68 hours; Redis keeps 16 bits). Reading it first takes
//!   one off per `lfu-decay-time` minutes gone by.
//!
//! Must never: read the clock (callers pass their operation's `now`), or be exact at the
//! cost of the read path: a read refreshes its key's stamp with one relaxed load, and a
//! store only when the stamp changes (once a second under LRU), never a lock. Switching
//! between LRU and LFU leaves the other meaning in stamps already written, as Redis does;
//! they settle as keys are used.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

/// Bits of the stamp.
pub(crate) const BITS: u32 = 20;
const MASK: u32 = (1 << BITS) - 1;
/// LFU: bits of the counter, and of the minute under it.
const COUNTER_BITS: u32 = 8;
const MINUTE_MASK: u32 = (1 << (BITS - COUNTER_BITS)) - 1;
/// LFU: a new key's counter, so it is not evicted before it had a chance to be used.
const LFU_INIT: u32 = 5;

static LFU: AtomicBool = AtomicBool::new(false);
static LOG_FACTOR: AtomicU32 = AtomicU32::new(10);
static DECAY_MINUTES: AtomicU32 = AtomicU32::new(1);

/// Selects what stamps mean from now on: LFU counters when `lfu` (an LFU eviction policy),
/// else LRU clocks.
pub fn set_lfu_mode(lfu: bool) {
    LFU.store(lfu, Ordering::Relaxed);
}

/// Redis' `lfu-log-factor`: how slowly LFU counters grow.
pub fn set_lfu_log_factor(factor: u32) {
    LOG_FACTOR.store(factor, Ordering::Relaxed);
}

/// Redis' `lfu-decay-time`: the minutes per unit an idle LFU counter loses (0: never).
pub fn set_lfu_decay_time(minutes: u32) {
    DECAY_MINUTES.store(minutes, Ordering::Relaxed);
}

/// Whether stamps are LFU counters.
pub fn lfu_mode() -> bool {
    LFU.load(Ordering::Relaxed)
}

fn lru_clock(now: u64) -> u32 {
    (now / 1000) as u32 & MASK
}

fn minute(now: u64) -> u32 {
    (now / 60_000) as u32 & MINUTE_MASK
}

fn lfu_stamp(minute: u32, counter: u32) -> u32 {
    (minute << COUNTER_BITS) | counter
}

/// The stamp of a key created (or restored) at `now`.
pub(crate) fn fresh(now: u64) -> u32 {
    if lfu_mode() { lfu_stamp(minute(now), LFU_INIT) } else { lru_clock(now) }
}

/// The stamp after an access at `now`.
pub(crate) fn touched(stamp: u32, now: u64) -> u32 {
    if lfu_mode() {
        let counter = log_increment(decayed(stamp, now));
        lfu_stamp(minute(now), counter)
    } else {
        lru_clock(now)
    }
}

/// LRU: milliseconds since the stamp's access, at one-second resolution.
pub(crate) fn idle_ms(stamp: u32, now: u64) -> u64 {
    let elapsed = lru_clock(now).wrapping_sub(stamp) & MASK;
    u64::from(elapsed) * 1000
}

/// The LRU stamp of a key last used `idle_secs` seconds before `now` (RESTORE IDLETIME).
pub(crate) fn idle_for(idle_secs: u64, now: u64) -> u32 {
    lru_clock(now).wrapping_sub((idle_secs & u64::from(MASK)) as u32) & MASK
}

/// LFU: the counter, decayed for the minutes gone by since it was last decayed.
pub(crate) fn decayed(stamp: u32, now: u64) -> u32 {
    let counter = stamp & ((1 << COUNTER_BITS) - 1);
    let last = stamp >> COUNTER_BITS;
    let elapsed = minute(now).wrapping_sub(last) & MINUTE_MASK;
    let decay = DECAY_MINUTES.load(Ordering::Relaxed);
    let periods = elapsed.checked_div(decay).unwrap_or(0);
    counter.saturating_sub(periods)
}

/// The LFU stamp of a key with access counter `freq` at `now` (RESTORE FREQ).
pub(crate) fn with_frequency(freq: u8, now: u64) -> u32 {
    lfu_stamp(minute(now), u32::from(freq))
}

/// How good a candidate for eviction the stamp makes under the current meaning: higher
/// goes first (LRU: idle milliseconds; LFU: 255 minus the decayed counter).
pub(crate) fn eviction_rank(stamp: u32, now: u64) -> u64 {
    if lfu_mode() { 255 - u64::from(decayed(stamp, now)) } else { idle_ms(stamp, now) }
}

/// Redis' logarithmic increment: likelier the smaller the counter.
fn log_increment(counter: u32) -> u32 {
    if counter >= 255 {
        return 255;
    }
    let base = counter.saturating_sub(LFU_INIT);
    let odds = f64::from(base) * f64::from(LOG_FACTOR.load(Ordering::Relaxed)) + 1.0;
    if uniform() < 1.0 / odds { counter + 1 } else { counter }
}

thread_local! {
    /// A xorshift generator per thread: LFU's coin needs no quality, only no lock.
    static RANDOM: Cell<u64> = const { Cell::new(0) };
}

/// The next number of this thread's generator.
fn next_random() -> u64 {
    RANDOM.with(|state| {
        let mut x = state.get();
        if x == 0 {
            // Seeded from the cell's address (differs per thread), mixed by splitmix64's
            // finaliser so nearby addresses give unrelated streams; never zero.
            let mut z = (state as *const Cell<u64> as u64).wrapping_add(0x9e37_79b9_7f4a_7c15);
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            x = (z ^ (z >> 31)) | 1;
        }
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        state.set(x);
        x
    })
}

/// A number in [0, 1).
fn uniform() -> f64 {
    (next_random() >> 11) as f64 / (1u64 << 53) as f64
}

/// A number below `n` (eviction's sampling; `n` > 0).
pub(crate) fn random_below(n: usize) -> usize {
    // Multiply-shift: no division, and no bias worth the name for n far below 2^64.
    ((u128::from(next_random()) * n as u128) >> 64) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINUTE: u64 = 60_000;

    #[test]
    fn lru_idle_time_counts_seconds_and_wraps_once() {
        let now = 1_800_000_000_000;
        let stamp = lru_clock(now);
        assert_eq!(idle_ms(stamp, now + 999), 0);
        assert_eq!(idle_ms(stamp, now + 5_000), 5_000);
        // Past the stamp's range the idle time wraps to the remainder.
        let range = u64::from(MASK + 1) * 1000;
        assert_eq!(idle_ms(stamp, now + range + 3_000), 3_000);
        assert_eq!(idle_ms(idle_for(1000, now), now), 1_000_000);
    }

    #[test]
    fn lfu_counter_grows_logarithmically_and_decays_by_the_minute() {
        // Under the default factor (10), a million accesses bring a counter to about 255
        // and a hundred to about 10 (Redis' table in redis.conf).
        let now = 1_800_000_000_000;
        let mut counter = LFU_INIT;
        for _ in 0..100 {
            counter = log_increment(counter);
        }
        // About 9 expected; outside 7..=14 is odds of one in ten thousand, or a broken coin.
        assert!((7..=14).contains(&counter), "100 accesses made {counter}");
        for _ in 0..1_000_000 {
            counter = log_increment(counter);
        }
        assert!(counter >= 200, "a million accesses made {counter}");
        let stamp = with_frequency(100, now);
        assert_eq!(decayed(stamp, now), 100);
        assert_eq!(decayed(stamp, now + 30 * MINUTE), 70);
        assert_eq!(decayed(stamp, now + 200 * MINUTE), 0);
    }
}
