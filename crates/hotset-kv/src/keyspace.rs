//! One Redis database: a set of shards plus the clock and limits they use.
//!
//! Owns: [`Keyspace`] — shard storage and locks, the direct (lock-per-call)
//! implementation of the command seam, atomic blocks, active expiry and
//! size/memory reporting — and [`KeyspaceWrites`], the same keyspace whose
//! writes settle their log acknowledgement by a chosen [`Durability`]: a
//! `Keyspace`'s own writes wait for theirs; a view made with
//! `writes(Durability::Collect(&acks))` notes them into the caller's `Acks`
//! and returns at once (a server batching a pipeline's acknowledgements).
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
use super::notify::{NotifySlot, class};
use super::ops::KvOps;
use super::txn::KeyspaceTxn;
use super::watch::WatchSlot;
use crate::store::router::Router;
use crate::store::shard::Shard;
use hotset_base::clock::Clock;
use hotset_base::journal::{Durability, JournalSlot};

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
    /// Who hears of changed keys while any key is watched (`watch.rs`).
    pub(super) watch: WatchSlot,
    /// Who hears each write's events while notifications are on (`notify.rs`).
    pub(super) notify: NotifySlot,
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
        Self::named("", clock, config, JournalSlot::default(), WatchSlot::default(), NotifySlot::default())
    }

    /// A keyspace of a registry: its records carry `name` and go to `journal`; its changed
    /// keys go to the registry's watcher, its events to the registry's listener.
    pub(super) fn named(
        name: &str,
        clock: Arc<dyn Clock>,
        config: KeyspaceConfig,
        journal: JournalSlot,
        watch: WatchSlot,
        notify: NotifySlot,
    ) -> Self {
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
            watch,
            notify,
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

    pub(crate) fn ctx(&self) -> Ctx {
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
        self.writes(Durability::Wait).atomic(keys, f)
    }

    /// Like [`atomic`](Self::atomic) but locks every shard, for blocks whose
    /// keys are not known up front or that use KEYS/SCAN/DBSIZE/FLUSH.
    pub fn atomic_all<R>(&self, f: impl FnOnce(&mut KeyspaceTxn<'_>) -> R) -> KvResult<R> {
        self.writes(Durability::Wait).atomic_all(f)
    }

    /// This keyspace, its writes (every [`KvOps`] command, and atomic blocks)
    /// settling their log acknowledgement by `durability`: `Wait` is what the
    /// keyspace's own methods do; `Collect(&acks)` notes each write's record
    /// into `acks` and returns before the log has acknowledged it, for a
    /// caller that waits once for many writes (`Acks::wait`) before answering
    /// any of them.
    pub fn writes<'a>(&'a self, durability: Durability<'a>) -> KeyspaceWrites<'a> {
        KeyspaceWrites { space: self, durability }
    }

    fn run_atomic<R>(
        &self,
        idxs: &[usize],
        durability: Durability<'_>,
        f: impl FnOnce(&mut KeyspaceTxn<'_>) -> R,
    ) -> KvResult<R> {
        self.writable()?;
        let ctx = self.ctx();
        let mut guards: Vec<_> = idxs.iter().map(|&i| (i, self.shards[i].write())).collect();
        self.track(guards.iter_mut().map(|(_, g)| &mut **g));
        let (result, mut guards) = {
            let mut txn = KeyspaceTxn::new(self, guards, ctx);
            let result = f(&mut txn);
            (result, txn.into_guards())
        };
        let ack = self.log_touched(guards.iter_mut().map(|(_, g)| &mut **g), ctx.now);
        drop(guards);
        self.settle(ack, durability)?;
        Ok(result)
    }

    /// A write on shard `idx`: `f` under its write lock, the keys it touched
    /// logged before the lock is released, then the record settled by
    /// `durability` (also when `f` failed: whatever it logged happened).
    fn write_shard_settled<R>(
        &self,
        idx: usize,
        durability: Durability<'_>,
        f: impl FnOnce(&mut Shard, &Ctx) -> KvResult<R>,
    ) -> KvResult<R> {
        self.writable()?;
        let (result, ack) = {
            let mut guard = self.shards[idx].write();
            let ctx = self.ctx();
            self.track(std::iter::once(&mut *guard));
            let result = f(&mut guard, &ctx);
            (result, self.log_touched(std::iter::once(&mut *guard), ctx.now))
        };
        settled(result, self.settle(ack, durability))
    }

    /// `write_shard_settled` over several shards, locked in ascending order.
    fn write_group_settled<R>(
        &self,
        idxs: &[usize],
        durability: Durability<'_>,
        f: impl FnOnce(&mut ShardGroup<&mut Shard>, &Ctx) -> KvResult<R>,
    ) -> KvResult<R> {
        self.writable()?;
        let (result, ack) = {
            let mut guards: Vec<_> = idxs.iter().map(|&i| (i, self.shards[i].write())).collect();
            let ctx = self.ctx();
            self.track(guards.iter_mut().map(|(_, g)| &mut **g));
            let shards = guards.iter_mut().map(|(i, g)| (*i, &mut **g)).collect();
            let mut group = ShardGroup::new(self.router, shards);
            let result = f(&mut group, &ctx);
            (result, self.log_touched(guards.iter_mut().map(|(_, g)| &mut **g), ctx.now))
        };
        settled(result, self.settle(ack, durability))
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
            let listener = self.notify.listening();
            let watcher = self.watch.listening();
            let mut expired = Vec::new();
            let wanted = (listener.is_some() || watcher.is_some()).then_some(&mut expired);
            let (examined, deleted) = shard.expire_cycle(self.clock.now_ms(), share, wanted);
            if let Some(listener) = listener.filter(|_| !expired.is_empty()) {
                let mut events = expired.iter().map(|key| (class::EXPIRED, "expired", &**key));
                listener.events(&self.name, &mut events);
            }
            if let Some(watcher) = watcher.filter(|_| !expired.is_empty()) {
                watcher.expired(&self.name, &mut expired.iter().map(|key| &**key));
            }
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

    /// Keys deleted because their deadline passed (by a write that met them or by active
    /// expiry; a read skips them without deleting), since the keyspace was created.
    pub fn expired_keys(&self) -> u64 {
        self.shards.iter().map(|s| s.read().expired_keys()).sum()
    }

    /// Changes made to this keyspace's keys since it was created (Redis' `dirty`).
    pub fn changes(&self) -> u64 {
        self.shards.iter().map(|s| s.read().changes()).sum()
    }

    /// Bytes held for empty key slots (`Shard::reusable_bytes`).
    pub fn reusable_bytes(&self) -> usize {
        self.shards.iter().map(|s| s.read().reusable_bytes()).sum()
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

/// A write's outcome once its record is settled: the write's own error first (a
/// command that failed says why), then the log's.
pub(crate) fn settled<R>(result: KvResult<R>, settled: KvResult<()>) -> KvResult<R> {
    let value = result?;
    settled?;
    Ok(value)
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
        self.write_shard_settled(idx, Durability::Wait, f)
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
        self.write_group_settled(idxs, Durability::Wait, f)
    }
}

impl KvOps for Keyspace {}

/// A keyspace whose writes settle their log acknowledgement by a chosen
/// [`Durability`] (see [`Keyspace::writes`]). It runs every [`KvOps`]
/// command exactly as the keyspace does (the same shard-level code, through
/// the same seam); only what a write does with its record once its locks are
/// released differs.
#[derive(Debug, Clone, Copy)]
pub struct KeyspaceWrites<'a> {
    space: &'a Keyspace,
    durability: Durability<'a>,
}

impl<'a> KeyspaceWrites<'a> {
    /// The keyspace written to.
    pub fn keyspace(&self) -> &'a Keyspace {
        self.space
    }

    /// [`Keyspace::atomic`], the block's one record settled by this view's
    /// durability.
    pub fn atomic<R>(&self, keys: &[&[u8]], f: impl FnOnce(&mut KeyspaceTxn<'_>) -> R) -> KvResult<R> {
        let idxs = self.space.router.shards_for(keys.iter().copied());
        self.space.run_atomic(&idxs, self.durability, f)
    }

    /// [`Keyspace::atomic_all`], the block's one record settled by this
    /// view's durability.
    pub fn atomic_all<R>(&self, f: impl FnOnce(&mut KeyspaceTxn<'_>) -> R) -> KvResult<R> {
        self.space.run_atomic(&self.space.router.all_shards(), self.durability, f)
    }
}

impl ShardAccess for KeyspaceWrites<'_> {
    fn router(&self) -> Router {
        self.space.router
    }

    fn read_shard<R>(&self, idx: usize, f: impl FnOnce(&Shard, &Ctx) -> KvResult<R>) -> KvResult<R> {
        self.space.read_shard(idx, f)
    }

    fn write_shard<R>(&self, idx: usize, f: impl FnOnce(&mut Shard, &Ctx) -> KvResult<R>) -> KvResult<R> {
        self.space.write_shard_settled(idx, self.durability, f)
    }

    fn read_group<R>(&self, idxs: &[usize], f: impl FnOnce(&ShardGroup<&Shard>, &Ctx) -> KvResult<R>) -> KvResult<R> {
        self.space.read_group(idxs, f)
    }

    fn write_group<R>(
        &self,
        idxs: &[usize],
        f: impl FnOnce(&mut ShardGroup<&mut Shard>, &Ctx) -> KvResult<R>,
    ) -> KvResult<R> {
        self.space.write_group_settled(idxs, self.durability, f)
    }
}

impl KvOps for KeyspaceWrites<'_> {}
