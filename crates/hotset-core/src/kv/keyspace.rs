//! One Redis database: a set of shards plus the clock and limits they use.
//!
//! Owns: [`Keyspace`] — shard storage and locks, the direct (lock-per-call)
//! implementation of the command seam, atomic blocks, active expiry and
//! size/memory reporting.
//!
//! Must never: lock two shards except in ascending index order (the global
//! lock order shared with `KeyspaceTxn`), call back into itself while a
//! shard lock is held, or read the clock before the lock it applies to is
//! held (so "now" is never older than the state it judges).
//!
//! Invariants: the shard count is a power of two fixed at construction; a
//! key lives in shard `router.shard_of(hash(key))` for the keyspace's life.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use parking_lot::RwLock;

use super::access::{Ctx, KvResult, ShardAccess, ShardGroup};
use super::config::{KeyspaceConfig, KvLimits};
use super::ops::KvOps;
use super::router::Router;
use super::shard::Shard;
use super::txn::KeyspaceTxn;
use crate::clock::Clock;
use crate::journal::JournalSlot;

/// A sharded, thread-safe Redis-style database. Commands come from
/// [`KvOps`]; see the [module docs](super) for an overview.
pub struct Keyspace {
    pub(super) router: Router,
    pub(super) shards: Box<[RwLock<Shard>]>,
    clock: Arc<dyn Clock>,
    limits: KvLimits,
    /// Shard where the next active-expiry cycle starts, so small budgets are
    /// spread over all shards across calls.
    expire_start: AtomicUsize,
    /// The name the keyspace's log records carry.
    pub(super) name: Arc<str>,
    /// Where writes are logged once a journal is attached (`persist.rs`).
    pub(super) journal: JournalSlot,
}

impl fmt::Debug for Keyspace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Keyspace")
            .field("shards", &self.shards.len())
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl Keyspace {
    /// A keyspace with the default configuration (16 shards, Redis limits).
    pub fn new(clock: Arc<dyn Clock>) -> Self {
        Self::with_config(clock, KeyspaceConfig::default())
    }

    /// A keyspace with `config.shards` shards (rounded up to a power of two,
    /// clamped to 1..=65536) and `config.limits`.
    pub fn with_config(clock: Arc<dyn Clock>, config: KeyspaceConfig) -> Self {
        Self::named("", clock, config, JournalSlot::default())
    }

    /// A keyspace of a registry: its records carry `name` and go to `journal`.
    pub(super) fn named(name: &str, clock: Arc<dyn Clock>, config: KeyspaceConfig, journal: JournalSlot) -> Self {
        let router = Router::new(config.shards);
        let shards = (0..router.shard_count()).map(|_| RwLock::new(Shard::default())).collect();
        Self {
            router,
            shards,
            clock,
            limits: config.limits,
            expire_start: AtomicUsize::new(0),
            name: name.into(),
            journal,
        }
    }

    /// Number of shards.
    pub fn shard_count(&self) -> usize {
        self.shards.len()
    }

    /// The limits in force.
    pub fn limits(&self) -> KvLimits {
        self.limits
    }

    /// The keyspace clock's current time (ms since the epoch), e.g. for the
    /// server to turn EXPIRE seconds into an absolute time.
    pub fn now_ms(&self) -> u64 {
        self.clock.now_ms()
    }

    fn ctx(&self) -> Ctx {
        Ctx { now: self.clock.now_ms(), limits: self.limits }
    }

    /// Runs `f` with every shard owning one of `keys` write-locked (in
    /// ascending order), so everything `f` does through the
    /// [`KeyspaceTxn`] is atomic with respect to all other operations. This
    /// is the hook behind MULTI/EXEC. Inside `f`, touching a key outside
    /// `keys`' shards fails with `KeyNotLocked`; calling methods on this
    /// `Keyspace` itself (instead of the txn) would deadlock. With a journal
    /// attached, the whole block is one log record, and the result comes back
    /// once that record is acknowledged (`Err(Storage)` when the log refuses
    /// writes: then `f` does not run).
    pub fn atomic<R>(&self, keys: &[&[u8]], f: impl FnOnce(&mut KeyspaceTxn<'_>) -> R) -> KvResult<R> {
        let idxs = self.router.shards_for(keys.iter().copied());
        self.run_atomic(&idxs, f)
    }

    /// Like [`atomic`](Self::atomic) but locks every shard, for blocks whose
    /// keys are not known up front or that use KEYS/SCAN/DBSIZE/FLUSH.
    pub fn atomic_all<R>(&self, f: impl FnOnce(&mut KeyspaceTxn<'_>) -> R) -> KvResult<R> {
        self.run_atomic(&self.router.all_shards(), f)
    }

    fn run_atomic<R>(&self, idxs: &[usize], f: impl FnOnce(&mut KeyspaceTxn<'_>) -> R) -> KvResult<R> {
        self.writable()?;
        let ctx = self.ctx();
        let mut guards: Vec<_> = idxs.iter().map(|&i| (i, self.shards[i].write())).collect();
        self.track(guards.iter_mut().map(|(_, g)| &mut **g));
        let (result, mut guards) = {
            let mut txn = KeyspaceTxn::new(self.router, guards, ctx);
            let result = f(&mut txn);
            (result, txn.into_guards())
        };
        let lsn = self.log_touched(guards.iter_mut().map(|(_, g)| &mut **g), ctx.now);
        drop(guards);
        self.wait_logged(lsn)?;
        Ok(result)
    }

    /// Active expiry: examines up to `budget` keys that carry a TTL and
    /// deletes the expired ones; returns how many were deleted. The server
    /// calls this periodically; lazy expiry on access covers whatever it has
    /// not reached yet. Each shard is offered an equal share of what is left
    /// and charged only for keys it actually examined, so shards without
    /// volatile keys cost nothing; the starting shard rotates across calls.
    pub fn active_expire_cycle(&self, budget: usize) -> usize {
        let n = self.shards.len();
        let start = self.expire_start.fetch_add(1, Ordering::Relaxed) % n;
        let mut remaining = budget;
        let mut removed = 0;
        for i in 0..n {
            if remaining == 0 {
                break;
            }
            let share = remaining.div_ceil(n - i);
            let mut shard = self.shards[(start + i) % n].write();
            let (examined, deleted) = shard.expire_cycle(self.clock.now_ms(), share);
            remaining -= examined;
            removed += deleted;
        }
        removed
    }

    /// Approximate bytes used by keys and values, maintained incrementally
    /// (this only sums one counter per shard).
    pub fn memory_bytes(&self) -> usize {
        self.shards.iter().map(|s| s.read().memory_bytes()).sum()
    }

    /// Number of keys (expired-but-unreclaimed ones included, like DBSIZE).
    pub fn len(&self) -> usize {
        self.shards.iter().map(|s| s.read().len()).sum()
    }

    /// Whether the keyspace holds no keys.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Number of keys that carry a TTL (Redis' `expires` count in INFO).
    pub fn volatile_len(&self) -> usize {
        self.shards.iter().map(|s| s.read().volatile_len()).sum()
    }
}

impl ShardAccess for Keyspace {
    fn router(&self) -> Router {
        self.router
    }

    fn read_shard<R>(&self, idx: usize, f: impl FnOnce(&Shard, &Ctx) -> KvResult<R>) -> KvResult<R> {
        let guard = self.shards[idx].read();
        f(&guard, &self.ctx())
    }

    fn write_shard<R>(&self, idx: usize, f: impl FnOnce(&mut Shard, &Ctx) -> KvResult<R>) -> KvResult<R> {
        self.writable()?;
        let (result, lsn) = {
            let mut guard = self.shards[idx].write();
            let ctx = self.ctx();
            self.track(std::iter::once(&mut *guard));
            let result = f(&mut guard, &ctx);
            (result, self.log_touched(std::iter::once(&mut *guard), ctx.now))
        };
        let value = result?;
        self.wait_logged(lsn)?;
        Ok(value)
    }

    fn read_group<R>(&self, idxs: &[usize], f: impl FnOnce(&ShardGroup<&Shard>, &Ctx) -> KvResult<R>) -> KvResult<R> {
        let guards: Vec<_> = idxs.iter().map(|&i| (i, self.shards[i].read())).collect();
        let group = ShardGroup::new(self.router, guards.iter().map(|(i, g)| (*i, &**g)).collect());
        f(&group, &self.ctx())
    }

    fn write_group<R>(
        &self,
        idxs: &[usize],
        f: impl FnOnce(&mut ShardGroup<&mut Shard>, &Ctx) -> KvResult<R>,
    ) -> KvResult<R> {
        self.writable()?;
        let (result, lsn) = {
            let mut guards: Vec<_> = idxs.iter().map(|&i| (i, self.shards[i].write())).collect();
            let ctx = self.ctx();
            self.track(guards.iter_mut().map(|(_, g)| &mut **g));
            let shards = guards.iter_mut().map(|(i, g)| (*i, &mut **g)).collect();
            let mut group = ShardGroup::new(self.router, shards);
            let result = f(&mut group, &ctx);
            (result, self.log_touched(guards.iter_mut().map(|(_, g)| &mut **g), ctx.now))
        };
        let value = result?;
        self.wait_logged(lsn)?;
        Ok(value)
    }
}

impl KvOps for Keyspace {}
