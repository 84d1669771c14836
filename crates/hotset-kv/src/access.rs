//! How commands reach shards: the one seam between "direct" calls on a
//! [`Keyspace`](super::Keyspace) and calls inside an atomic block
//! ([`KeyspaceTxn`](super::KeyspaceTxn)).
//!
//! Owns: [`Ctx`] (the per-operation instant and limits), the sealed
//! [`ShardAccess`] trait and [`ShardGroup`] (several locked shards viewed as
//! one).
//!
//! Must never: contain command semantics. Every command is written once, in
//! `KvOps` and the `impl Shard`/`impl ShardGroup` blocks, against this trait;
//! the two implementors differ only in where the shard reference comes from
//! (a fresh lock vs. a lock the transaction already holds).
//!
//! Invariants:
//! - Group operations receive shard indices sorted ascending and
//!   de-duplicated; implementors lock (or check) them in that order, the
//!   global lock order that makes multi-shard locking deadlock-free.
//! - Before `f` runs, every shard a group operation needs is available, so a
//!   multi-key command either fully applies or returns an error untouched.

use std::ops::{Deref, DerefMut};

use super::config::KvLimits;
use super::error::KvError;
use crate::store::router::{KeyRef, Router};
use crate::store::shard::Shard;

/// Result alias used throughout the module.
pub type KvResult<T> = Result<T, KvError>;

/// Per-operation context: one clock reading and the limits.
#[derive(Debug, Clone, Copy)]
pub struct Ctx {
    /// "Now" in ms since the epoch, read once per operation (or per atomic
    /// block) so all checks in it agree.
    pub now: u64,
    /// Size limits.
    pub limits: KvLimits,
}

impl Ctx {
    /// Fails with `ValueTooLarge` if a string of `len` bytes is not allowed.
    pub fn check_value_len(&self, len: usize) -> KvResult<()> {
        let limit = self.limits.value_bytes_max;
        if len > limit {
            return Err(KvError::ValueTooLarge { limit, actual: len });
        }
        Ok(())
    }
}

/// Several shards, each already locked, addressed by key.
#[derive(Debug)]
pub struct ShardGroup<S> {
    router: Router,
    shards: Vec<(usize, S)>,
}

impl<S: Deref<Target = Shard>> ShardGroup<S> {
    /// Wraps `shards`, which must be sorted by index.
    pub fn new(router: Router, shards: Vec<(usize, S)>) -> Self {
        debug_assert!(shards.windows(2).all(|w| w[0].0 < w[1].0));
        Self { router, shards }
    }

    fn position(&self, key: &KeyRef<'_>) -> KvResult<usize> {
        let idx = self.router.shard_of(key.hash);
        self.shards.binary_search_by_key(&idx, |(i, _)| *i).map_err(|_| KvError::KeyNotLocked)
    }

    /// The shard holding `key`, with the hashed key.
    pub fn shard<'k>(&self, key: &'k [u8]) -> KvResult<(&Shard, KeyRef<'k>)> {
        let key = KeyRef::new(key);
        let pos = self.position(&key)?;
        Ok((&*self.shards[pos].1, key))
    }

    /// Every shard in the group.
    pub fn iter(&self) -> impl Iterator<Item = &Shard> {
        self.shards.iter().map(|(_, s)| &**s)
    }
}

impl<S: DerefMut<Target = Shard>> ShardGroup<S> {
    /// The shard holding `key`, mutably, with the hashed key.
    pub fn shard_mut<'k>(&mut self, key: &'k [u8]) -> KvResult<(&mut Shard, KeyRef<'k>)> {
        let key = KeyRef::new(key);
        let pos = self.position(&key)?;
        Ok((&mut *self.shards[pos].1, key))
    }

    /// Every shard in the group, mutably.
    pub fn iter_mut(&mut self) -> impl Iterator<Item = &mut Shard> {
        self.shards.iter_mut().map(|(_, s)| &mut **s)
    }
}

/// Where shard references come from. Sealed: it lives in a private module,
/// so only this crate can implement or call it.
pub trait ShardAccess {
    /// Key → shard mapping.
    fn router(&self) -> Router;

    /// Runs `f` with shared access to shard `idx`.
    fn read_shard<R>(&self, idx: usize, f: impl FnOnce(&Shard, &Ctx) -> KvResult<R>) -> KvResult<R>;

    /// Runs `f` with exclusive access to shard `idx`.
    fn write_shard<R>(&self, idx: usize, f: impl FnOnce(&mut Shard, &Ctx) -> KvResult<R>) -> KvResult<R>;

    /// Runs `f` with shared access to all of `idxs` at once (sorted, unique).
    fn read_group<R>(&self, idxs: &[usize], f: impl FnOnce(&ShardGroup<&Shard>, &Ctx) -> KvResult<R>) -> KvResult<R>;

    /// Runs `f` with exclusive access to all of `idxs` at once (sorted,
    /// unique).
    fn write_group<R>(
        &self,
        idxs: &[usize],
        f: impl FnOnce(&mut ShardGroup<&mut Shard>, &Ctx) -> KvResult<R>,
    ) -> KvResult<R>;

    /// Shared access to the shard owning `key`.
    fn read_key<R>(&self, key: &[u8], f: impl FnOnce(&Shard, KeyRef<'_>, &Ctx) -> KvResult<R>) -> KvResult<R> {
        let key = KeyRef::new(key);
        let idx = self.router().shard_of(key.hash);
        self.read_shard(idx, |shard, ctx| f(shard, key, ctx))
    }

    /// Exclusive access to the shard owning `key`.
    fn write_key<R>(&self, key: &[u8], f: impl FnOnce(&mut Shard, KeyRef<'_>, &Ctx) -> KvResult<R>) -> KvResult<R> {
        let key = KeyRef::new(key);
        let idx = self.router().shard_of(key.hash);
        self.write_shard(idx, |shard, ctx| f(shard, key, ctx))
    }

    /// Shared access to every shard owning one of `keys`, all at once.
    fn read_keys<'k, R>(
        &self,
        keys: impl IntoIterator<Item = &'k [u8]>,
        f: impl FnOnce(&ShardGroup<&Shard>, &Ctx) -> KvResult<R>,
    ) -> KvResult<R> {
        let idxs = self.router().shards_for(keys);
        self.read_group(&idxs, f)
    }

    /// Exclusive access to every shard owning one of `keys`, all at once.
    fn write_keys<'k, R>(
        &self,
        keys: impl IntoIterator<Item = &'k [u8]>,
        f: impl FnOnce(&mut ShardGroup<&mut Shard>, &Ctx) -> KvResult<R>,
    ) -> KvResult<R> {
        let idxs = self.router().shards_for(keys);
        self.write_group(&idxs, f)
    }
}
