//! Writes that span keyspaces: MOVE, COPY with DB, SWAPDB, and atomic blocks over several
//! keyspaces (a transaction holding one of those).
//!
//! Owns: locking what such a write needs (one shard of each keyspace for MOVE and COPY,
//! every shard of each for SWAPDB and blocks) in one order for the whole engine (by
//! keyspace name, then shard), the move, copy and swap on locked shards, and logging
//! every keyspace's changes as one group record, which recovery applies whole. SWAPDB
//! logs each keyspace as emptied and then holding every key it has now: a record as large
//! as the two keyspaces (the swap itself moves no data).
//!
//! Must never: lock out of that order (a MOVE from `a` to `b` and one from `b` to `a` at
//! once would deadlock), or be called from inside an atomic block of one of the keyspaces
//! (a block over several keyspaces is one call, locking them all up front).

use crate::access::KvResult;
use crate::error::KvError;
use crate::keyspace::{Keyspace, settled};
use crate::notify::class;
use crate::store::router::KeyRef;
use crate::store::shard::Shard;
use crate::txn::KeyspaceTxn;
use hotset_base::journal::Durability;
use parking_lot::RwLockWriteGuard;

/// MOVE on locked shards: `key` leaves `from` for `to`, with its deadline; false when it
/// is not in `from`, or `to` has it already.
fn move_between(from: &mut Shard, to: &mut Shard, key: &[u8], now: u64) -> bool {
    let here = KeyRef::new(key);
    if from.peek(here, now).is_none() || to.peek(here, now).is_some() {
        return false;
    }
    let entry = from.remove(here, now).expect("present under the lock");
    from.event(class::GENERIC, "move_from", key);
    to.insert(here, entry);
    to.event(class::GENERIC, "move_to", key);
    true
}

/// COPY with DB on locked shards: `dest_key` in `to` gets a copy of `key`'s value and
/// deadline; false when `key` is not in `from`, or `dest_key` exists and `replace` is not
/// set.
fn copy_between(from: &Shard, to: &mut Shard, key: &[u8], dest_key: &[u8], replace: bool, now: u64) -> bool {
    let Some(entry) = from.get(KeyRef::new(key), now).cloned() else { return false };
    let dst = KeyRef::new(dest_key);
    if !replace && to.peek(dst, now).is_some() {
        return false;
    }
    // As COPY within a keyspace: the destination is deleted and added again.
    to.remove(dst, now);
    to.insert(dst, entry);
    to.event(class::GENERIC, "copy_to", dest_key);
    true
}

/// A keyspace's shards, each with its index, write-locked.
type Locked<'a> = Vec<(usize, RwLockWriteGuard<'a, Shard>)>;

/// Every shard of `space`, write-locked in ascending order.
fn lock_all(space: &Keyspace) -> Locked<'_> {
    space.shards.iter().enumerate().map(|(i, shard)| (i, shard.write())).collect()
}

impl Keyspace {
    /// MOVE: `key` leaves this keyspace for `dest`, with its deadline; false when it is
    /// not here, or `dest` has it already. The caller refuses `dest` being this keyspace.
    pub fn move_key(&self, key: &[u8], dest: &Keyspace, durability: Durability<'_>) -> KvResult<bool> {
        self.across(key, dest, key, durability, |from, to, now| Ok(move_between(from, to, key, now)))
    }

    /// COPY with DB: `dest_key` in `dest` gets a copy of `key`'s value and deadline; false
    /// when `key` is not here, or `dest_key` exists and `replace` is not set.
    pub fn copy_key_to(
        &self,
        key: &[u8],
        dest: &Keyspace,
        dest_key: &[u8],
        replace: bool,
        durability: Durability<'_>,
    ) -> KvResult<bool> {
        self.across(key, dest, dest_key, durability, |from, to, now| {
            Ok(copy_between(from, to, key, dest_key, replace, now))
        })
    }

    /// SWAPDB: this keyspace and `other` exchange their contents, at once for every
    /// reader (sessions keep their keyspace; what it holds changes).
    pub fn swap_with(&self, other: &Keyspace, durability: Durability<'_>) -> KvResult<()> {
        self.atomic_all_across(&[other], durability, |mine, theirs| mine.swap_with(&theirs[0]))?
    }

    /// An atomic block over this keyspace and `others` (distinct, none of them this one):
    /// every shard of each locked in the engine-wide order for the whole of `f`, which
    /// gets this keyspace's block and the others' in the order given; everything it does
    /// is one log record.
    pub fn atomic_all_across<R>(
        &self,
        others: &[&Keyspace],
        durability: Durability<'_>,
        f: impl for<'t> FnOnce(&KeyspaceTxn<'t>, &[KeyspaceTxn<'t>]) -> R,
    ) -> KvResult<R> {
        let mut spaces: Vec<&Keyspace> = std::iter::once(self).chain(others.iter().copied()).collect();
        spaces.sort_by(|a, b| a.name.cmp(&b.name));
        assert!(spaces.windows(2).all(|w| w[0].name != w[1].name), "a block names each keyspace once");
        self.writable()?;
        let ctx = self.ctx();
        // Locked in name order; then handed out in the caller's order.
        let mut locked: Vec<(&Keyspace, Locked<'_>)> = spaces.iter().map(|space| (*space, lock_all(space))).collect();
        for (space, guards) in &mut locked {
            space.track(guards.iter_mut().map(|(_, guard)| &mut **guard));
        }
        let mut take = |wanted: &Keyspace| {
            let at = locked.iter().position(|(space, _)| std::ptr::eq(*space, wanted)).expect("locked above");
            let (space, guards) = locked.swap_remove(at);
            (space, KeyspaceTxn::new(space, guards, ctx))
        };
        let (_, mine) = take(self);
        let theirs: Vec<(&Keyspace, KeyspaceTxn<'_>)> = others.iter().map(|other| take(other)).collect();
        let blocks: Vec<KeyspaceTxn<'_>> = theirs.into_iter().map(|(_, txn)| txn).collect();
        let result = f(&mine, &blocks);
        let mut guards: Vec<(&Keyspace, _)> = std::iter::once((self, mine.into_guards()))
            .chain(others.iter().copied().zip(blocks.into_iter().map(KeyspaceTxn::into_guards)))
            .collect();
        let parts = guards
            .iter_mut()
            .map(|(space, guards)| (*space, guards.iter_mut().map(|(_, guard)| &mut **guard).collect()))
            .collect();
        let ack = self.log_across(parts, ctx.now);
        drop(guards);
        self.settle(ack, durability)?;
        Ok(result)
    }

    /// Runs `f` on `key`'s shard here and `dest_key`'s shard in `dest`, both write-locked
    /// in the engine-wide order, and logs what it did as one record.
    fn across<R>(
        &self,
        key: &[u8],
        dest: &Keyspace,
        dest_key: &[u8],
        durability: Durability<'_>,
        f: impl FnOnce(&mut Shard, &mut Shard, u64) -> KvResult<R>,
    ) -> KvResult<R> {
        assert!(self.name != dest.name, "a write across keyspaces needs two of them");
        self.writable()?;
        let here = self.router.shard_of(KeyRef::new(key).hash);
        let there = dest.router.shard_of(KeyRef::new(dest_key).hash);
        let (mut from, mut to) = if self.name < dest.name {
            let from = self.shards[here].write();
            (from, dest.shards[there].write())
        } else {
            let to = dest.shards[there].write();
            (self.shards[here].write(), to)
        };
        let now = self.ctx().now;
        self.track(std::iter::once(&mut *from));
        dest.track(std::iter::once(&mut *to));
        let result = f(&mut from, &mut to, now);
        let ack = self.log_across(vec![(self, vec![&mut *from]), (dest, vec![&mut *to])], now);
        drop((from, to));
        settled(result, self.settle(ack, durability))
    }
}

impl KeyspaceTxn<'_> {
    /// MOVE inside a block over several keyspaces (`Keyspace::move_key`).
    pub fn move_key_to(&self, key: &[u8], dest: &KeyspaceTxn<'_>) -> KvResult<bool> {
        let now = self.now_ms();
        self.with_shard(key, |from| dest.with_shard(key, |to| Ok(move_between(from, to, key, now))))
    }

    /// COPY with DB inside a block over several keyspaces (`Keyspace::copy_key_to`).
    pub fn copy_key_to(&self, key: &[u8], dest: &KeyspaceTxn<'_>, dest_key: &[u8], replace: bool) -> KvResult<bool> {
        let now = self.now_ms();
        self.with_shard(key, |from| {
            dest.with_shard(dest_key, |to| Ok(copy_between(from, to, key, dest_key, replace, now)))
        })
    }

    /// SWAPDB inside a block holding every shard of both keyspaces.
    pub fn swap_with(&self, other: &KeyspaceTxn<'_>) -> KvResult<()> {
        let now = self.now_ms();
        self.with_all_shards(|mine| {
            other.with_all_shards(|theirs| {
                if mine.len() != theirs.len() {
                    return Err(KvError::Unsupported("SWAPDB needs keyspaces of the same shard count"));
                }
                for (a, b) in mine.iter_mut().zip(theirs.iter_mut()) {
                    a.swap_contents(b, now);
                }
                Ok(())
            })
        })
    }
}
