//! `maxmemory`: what the server holds against its limit, and making room under it.
//!
//! Owns: [`Memory`] (the eviction state shared by every connection, and its counters), the
//! reading of used memory ([`used`], the allocator's count: `used_memory`) and of what
//! eviction judges ([`Memory::over_limit`]), and [`Memory::make_room`], which evicts keys by
//! `maxmemory-policy` until the server is back under its limit. Never: choose keys
//! (`hotset_kv::evict` does), refuse a command itself (the dispatcher and the operation
//! layer decide from `make_room`'s answer: RESP's `-OOM`, the documents' `oom` refusal), or
//! read the allocator per command (once per batch of requests: the sum reads a counter
//! per thread).
//!
//! What eviction judges is the allocator's count less the key slots held empty
//! (`Keyspaces::reusable_bytes`): a deleted key's slot goes back to its shard for the next
//! key rather than to the allocator, so counting it as used would make eviction delete
//! key after key without the count moving. Redis likewise leaves out of its judgement what
//! it does not count for eviction (`mem_not_counted_for_evict`, which INFO shows here too).

use parking_lot::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::state::ServerState;
use hotset_core::Durability;
use hotset_core::kv::{EvictionPolicy, Evictor};

/// Redis' answer to a write that needs memory the server cannot free.
pub const OOM: &str = "OOM command not allowed when used memory > 'maxmemory'.";

/// Eviction's state and counters.
#[derive(Default)]
pub struct Memory {
    /// Held while evicting: two connections short of memory at once must not both evict
    /// for the one shortfall (the second finds the room made when it gets the lock).
    evictor: Mutex<Evictor>,
    /// Keys evicted (INFO `evicted_keys`; one eviction met past its deadline is counted as
    /// expired by its keyspace instead).
    pub evicted_keys: AtomicU64,
    /// The most the allocator held, as seen by INFO and the per-batch checks.
    pub peak: AtomicU64,
    /// Microseconds spent in eviction rounds that ended over the limit.
    pub exceeded_micros: AtomicU64,
}

/// Bytes the process holds by its allocator's count (Redis' `used_memory`); in a process
/// whose allocator does not count, the engines' own estimate.
pub fn used(state: &ServerState) -> usize {
    let used = hotset_alloc::allocated().unwrap_or_else(|| estimate(state));
    // A plain load first: the shared line is written only when a new peak is reached.
    if used as u64 > state.memory.peak.load(Ordering::Relaxed) {
        state.memory.peak.fetch_max(used as u64, Ordering::Relaxed);
    }
    used
}

/// The engines' count of what keys and documents take.
fn estimate(state: &ServerState) -> usize {
    let db = state.db();
    let namespaces: usize =
        db.namespace_names().iter().filter_map(|n| db.describe(n).ok()).map(|i| i.memory_bytes).sum();
    db.keyspaces().memory_bytes() + namespaces
}

impl Memory {
    /// Bytes eviction leaves out of its judgement (empty key slots).
    pub fn not_counted(state: &ServerState) -> usize {
        if hotset_alloc::allocated().is_some() { state.db().keyspaces().reusable_bytes() } else { 0 }
    }

    /// What eviction judges: used memory less the empty key slots.
    fn judged(state: &ServerState) -> usize {
        used(state).saturating_sub(Self::not_counted(state))
    }

    /// Whether `maxmemory` is set and the server is over it (one read of the allocator's
    /// count while under it; the keyspaces' empty slots are counted only when over).
    pub fn over_limit(state: &ServerState) -> bool {
        let limit = state.params.maxmemory.load(Ordering::Relaxed) as usize;
        if limit == 0 {
            return false;
        }
        let used = used(state);
        used > limit && used.saturating_sub(Self::not_counted(state)) > limit
    }

    /// Evicts keys by `maxmemory-policy` until the server is under `maxmemory`, each
    /// eviction a logged delete settled by `durability`. True when the server is under its
    /// limit, or eviction ran out of its time budget while still finding keys (Redis'
    /// `EVICT_RUNNING`: the command goes on, the next batch evicts more); false when it is
    /// over and no key may go (`noeviction`, or nothing left that the policy allows).
    pub fn make_room(state: &ServerState, durability: Durability<'_>) -> bool {
        let limit = state.params.maxmemory.load(Ordering::Relaxed) as usize;
        if limit == 0 {
            return true;
        }
        let mut evictor = state.memory.evictor.lock();
        let judged = Self::judged(state);
        if judged <= limit {
            return true;
        }
        let policy = state.params.eviction_policy();
        if policy == EvictionPolicy::NoEviction {
            return false;
        }
        // Redis takes any count; past a few thousand a sample only costs time.
        let samples = state.params.eviction_samples.load(Ordering::Relaxed).clamp(1, 4096) as usize;
        let budget = time_budget(state.params.value("maxmemory-eviction-tenacity").and_then(|t| t.parse().ok()));
        let started = Instant::now();
        let (to_free, mut freed, mut steps) = (judged - limit, 0, 0u32);
        let keyspaces = state.db().keyspaces();
        while freed < to_free {
            match keyspaces.evict_one(policy, samples, &mut evictor, durability) {
                Ok(Some(evicted)) => {
                    freed += evicted.bytes;
                    if !evicted.expired {
                        state.memory.evicted_keys.fetch_add(1, Ordering::Relaxed);
                    }
                }
                // Nothing the policy allows is left, or the log refuses the deletes.
                Ok(None) | Err(_) => {
                    state.memory.exceeded_micros.fetch_add(started.elapsed().as_micros() as u64, Ordering::Relaxed);
                    return false;
                }
            }
            steps += 1;
            if steps.is_multiple_of(16) && budget.is_some_and(|budget| started.elapsed() > budget) {
                state.memory.exceeded_micros.fetch_add(started.elapsed().as_micros() as u64, Ordering::Relaxed);
                return true;
            }
        }
        true
    }
}

/// The operation layer's gate (`hotset_ops::MemoryGate`): a document write over
/// `maxmemory` first makes room by evicting keys, and is refused when none can be made.
pub struct DocumentGate(pub std::sync::Weak<ServerState>);

impl hotset_ops::MemoryGate for DocumentGate {
    fn admit(&self, durability: Durability<'_>) -> bool {
        let Some(state) = self.0.upgrade() else { return true };
        !Memory::over_limit(&state) || Memory::make_room(&state, durability)
    }
}

/// How long one command may spend evicting, by `maxmemory-eviction-tenacity` as Redis
/// reads it: 50 µs per unit up to 10 (the default: 500 µs), then 15% more per unit, and no
/// limit at 100.
fn time_budget(tenacity: Option<u32>) -> Option<Duration> {
    let tenacity = tenacity.unwrap_or(10);
    match tenacity {
        0..=10 => Some(Duration::from_micros(50 * u64::from(tenacity.max(1)))),
        11..=99 => Some(Duration::from_micros((500.0 * 1.15f64.powi(tenacity as i32 - 10)) as u64)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tenacity_budgets_grow_as_redis_reads_them() {
        assert_eq!(time_budget(None), Some(Duration::from_micros(500)));
        assert_eq!(time_budget(Some(1)), Some(Duration::from_micros(50)));
        assert!(time_budget(Some(50)).unwrap() > Duration::from_millis(100));
        assert_eq!(time_budget(Some(100)), None);
    }
}
