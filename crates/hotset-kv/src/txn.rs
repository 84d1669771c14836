//! Atomic blocks: the MULTI/EXEC hook.
//!
//! Owns: [`KeyspaceTxn`], a view of a keyspace whose relevant shards are
//! write-locked for the life of the block, exposing the full [`KvOps`]
//! command set on them.
//!
//! Must never: wait for a lock. All locks are taken up front by
//! `Keyspace::atomic*` in ascending order; waiting for one later could invert
//! the order and deadlock, so a key on an unlocked shard is `KeyNotLocked`,
//! unless the caller *tries* to take its shard first
//! ([`KeyspaceTxn::try_lock_more`]: without waiting, so no cycle can form).
//!
//! Invariants: one clock reading ("now") for the whole block, so expiry
//! decisions inside it are mutually consistent; group commands check that
//! all their shards are locked before doing anything, so they stay
//! all-or-nothing inside a block too.

use std::cell::RefCell;
use std::fmt;

use parking_lot::RwLockWriteGuard;

use super::access::{Ctx, KvResult, ShardAccess, ShardGroup};
use super::error::KvError;
use super::keyspace::Keyspace;
use super::ops::KvOps;
use crate::store::router::Router;
use crate::store::shard::Shard;

pub(super) type Guards<'a> = Vec<(usize, RwLockWriteGuard<'a, Shard>)>;

/// Commands against a set of write-locked shards; see
/// [`Keyspace::atomic`](super::Keyspace::atomic). Use it through [`KvOps`].
pub struct KeyspaceTxn<'a> {
    router: Router,
    // RefCell because `KvOps` methods take `&self` (so one trait serves both
    // the keyspace and the txn) while writes need `&mut Shard`. No borrow
    // outlives a single command, so the cell can never be contended.
    guards: RefCell<Guards<'a>>,
    ctx: Ctx,
    /// The keyspace, whose shards the block may try to take later.
    space: &'a Keyspace,
}

impl fmt::Debug for KeyspaceTxn<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let locked: Vec<usize> = self.guards.borrow().iter().map(|(i, _)| *i).collect();
        f.debug_struct("KeyspaceTxn").field("locked_shards", &locked).field("now_ms", &self.ctx.now).finish()
    }
}

fn find(guards: &[(usize, RwLockWriteGuard<'_, Shard>)], idx: usize) -> KvResult<usize> {
    guards.binary_search_by_key(&idx, |(i, _)| *i).map_err(|_| KvError::KeyNotLocked)
}

fn check_locked(guards: &Guards<'_>, idxs: &[usize]) -> KvResult<()> {
    idxs.iter().try_for_each(|&i| find(guards, i).map(drop))
}

impl<'a> KeyspaceTxn<'a> {
    /// Wraps guards of `space`'s shards already acquired in ascending shard order.
    pub(super) fn new(space: &'a Keyspace, guards: Guards<'a>, ctx: Ctx) -> Self {
        debug_assert!(guards.windows(2).all(|w| w[0].0 < w[1].0));
        Self { router: space.router, guards: RefCell::new(guards), ctx, space }
    }

    /// Takes, without waiting, the shards of `keys` the block does not hold yet (every
    /// shard with `None`), all or none; whether the block holds them all now. A block that
    /// met `KeyNotLocked` after it wrote (a script reaching a key it did not declare) goes
    /// on this way: what it holds it keeps to its end, so it stays atomic, and since it never
    /// waits no cycle of waits can form. False when another holds one of them.
    pub fn try_lock_more(&self, keys: Option<&[&[u8]]>) -> bool {
        let wanted = match keys {
            Some(keys) => self.router.shards_for(keys.iter().copied()),
            None => self.router.all_shards(),
        };
        let mut guards = self.guards.borrow_mut();
        let mut taken = Vec::new();
        for idx in wanted {
            if find(&guards, idx).is_ok() {
                continue;
            }
            match self.space.shards[idx].try_write() {
                Some(guard) => taken.push((idx, guard)),
                // Those taken are released as `taken` drops: all or none.
                None => return false,
            }
        }
        if taken.is_empty() {
            return true;
        }
        self.space.track(taken.iter_mut().map(|(_, guard)| &mut **guard));
        guards.extend(taken);
        guards.sort_unstable_by_key(|(idx, _)| *idx);
        true
    }

    /// Ends the block, handing the locks back (still held) so the keyspace can log
    /// what the block did before releasing them.
    pub(super) fn into_guards(self) -> Guards<'a> {
        self.guards.into_inner()
    }

    /// The locked shard of `key`, for a write spanning blocks of several keyspaces
    /// (`across.rs`).
    pub(crate) fn with_shard<R>(&self, key: &[u8], f: impl FnOnce(&mut Shard) -> KvResult<R>) -> KvResult<R> {
        let idx = self.router.shard_of(crate::store::router::KeyRef::new(key).hash);
        self.write_shard(idx, |shard, _| f(shard))
    }

    /// Every shard, in order, when the block holds them all (`KeyNotLocked` otherwise).
    pub(crate) fn with_all_shards<R>(&self, f: impl FnOnce(&mut [&mut Shard]) -> KvResult<R>) -> KvResult<R> {
        let mut guards = self.guards.borrow_mut();
        if guards.len() != self.router.shard_count() {
            return Err(KvError::KeyNotLocked);
        }
        let mut shards: Vec<&mut Shard> = guards.iter_mut().map(|(_, guard)| &mut **guard).collect();
        f(&mut shards)
    }

    /// The instant (ms since the epoch) the whole block operates at.
    pub fn now_ms(&self) -> u64 {
        self.ctx.now
    }
}

impl ShardAccess for KeyspaceTxn<'_> {
    fn router(&self) -> Router {
        self.router
    }

    fn read_shard<R>(&self, idx: usize, f: impl FnOnce(&Shard, &Ctx) -> KvResult<R>) -> KvResult<R> {
        let guards = self.guards.borrow();
        let pos = find(&guards, idx)?;
        f(&guards[pos].1, &self.ctx)
    }

    fn write_shard<R>(&self, idx: usize, f: impl FnOnce(&mut Shard, &Ctx) -> KvResult<R>) -> KvResult<R> {
        let mut guards = self.guards.borrow_mut();
        let pos = find(&guards, idx)?;
        f(&mut guards[pos].1, &self.ctx)
    }

    fn read_group<R>(&self, idxs: &[usize], f: impl FnOnce(&ShardGroup<&Shard>, &Ctx) -> KvResult<R>) -> KvResult<R> {
        let guards = self.guards.borrow();
        check_locked(&guards, idxs)?;
        let shards = guards.iter().map(|(i, g)| (*i, &**g)).collect();
        f(&ShardGroup::new(self.router, shards), &self.ctx)
    }

    fn write_group<R>(
        &self,
        idxs: &[usize],
        f: impl FnOnce(&mut ShardGroup<&mut Shard>, &Ctx) -> KvResult<R>,
    ) -> KvResult<R> {
        let mut guards = self.guards.borrow_mut();
        check_locked(&guards, idxs)?;
        let shards = guards.iter_mut().map(|(i, g)| (*i, &mut **g)).collect();
        f(&mut ShardGroup::new(self.router, shards), &self.ctx)
    }
}

impl KvOps for KeyspaceTxn<'_> {}
