//! Writes that span two keyspaces: MOVE, COPY with DB, and SWAPDB.
//!
//! Owns: locking the one shard each of the two keys lives on (every shard of both, for
//! SWAPDB), in one order for the whole engine (by keyspace name, then shard), running the
//! move, copy or swap on them, and logging both keyspaces' changes as one group record,
//! which recovery applies whole. SWAPDB logs each keyspace as emptied and then holding
//! every key it has now: a record as large as the two keyspaces (the swap itself moves
//! no data).
//!
//! Must never: lock out of that order (a MOVE from `a` to `b` and one from `b` to `a` at
//! once would deadlock), or run inside an atomic block of either keyspace (EXEC holds all
//! of one keyspace's shards; the server refuses these commands inside MULTI).

use crate::access::KvResult;
use crate::error::KvError;
use crate::keyspace::{Keyspace, settled};
use crate::notify::class;
use crate::store::router::KeyRef;
use crate::store::shard::Shard;
use hotset_base::journal::Durability;

impl Keyspace {
    /// MOVE: `key` leaves this keyspace for `dest`, with its deadline; false when it is
    /// not here, or `dest` has it already. The caller refuses `dest` being this keyspace.
    pub fn move_key(&self, key: &[u8], dest: &Keyspace, durability: Durability<'_>) -> KvResult<bool> {
        self.across(key, dest, key, durability, |from, to, now| {
            let (src, dst) = (KeyRef::new(key), KeyRef::new(key));
            if from.peek(src, now).is_none() || to.peek(dst, now).is_some() {
                return Ok(false);
            }
            let entry = from.remove(src, now).expect("present under the lock");
            from.event(class::GENERIC, "move_from", key);
            to.insert(dst, entry);
            to.event(class::GENERIC, "move_to", key);
            Ok(true)
        })
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
            let Some(entry) = from.get(KeyRef::new(key), now).cloned() else { return Ok(false) };
            let dst = KeyRef::new(dest_key);
            if !replace && to.peek(dst, now).is_some() {
                return Ok(false);
            }
            // As COPY within a keyspace: the destination is deleted and added again.
            to.remove(dst, now);
            to.insert(dst, entry);
            to.event(class::GENERIC, "copy_to", dest_key);
            Ok(true)
        })
    }

    /// SWAPDB: this keyspace and `other` exchange their contents, at once for every
    /// reader (sessions keep their keyspace; what it holds changes).
    pub fn swap_with(&self, other: &Keyspace, durability: Durability<'_>) -> KvResult<()> {
        assert!(self.name != other.name, "a swap needs two keyspaces");
        if self.shards.len() != other.shards.len() {
            return Err(KvError::Unsupported("SWAPDB needs keyspaces of the same shard count"));
        }
        self.writable()?;
        fn lock(space: &Keyspace) -> Vec<parking_lot::RwLockWriteGuard<'_, Shard>> {
            space.shards.iter().map(|shard| shard.write()).collect()
        }
        let (mut mine, mut theirs) = if self.name < other.name {
            let mine = lock(self);
            (mine, lock(other))
        } else {
            let theirs = lock(other);
            (lock(self), theirs)
        };
        let now = self.ctx().now;
        self.track(mine.iter_mut().map(|guard| &mut **guard));
        other.track(theirs.iter_mut().map(|guard| &mut **guard));
        for (a, b) in mine.iter_mut().zip(theirs.iter_mut()) {
            a.swap_contents(b, now);
        }
        let ack = self.log_touched_with(
            mine.iter_mut().map(|guard| &mut **guard),
            other,
            theirs.iter_mut().map(|guard| &mut **guard),
            now,
        );
        drop((mine, theirs));
        self.settle(ack, durability)
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
        let ack = self.log_touched_with(std::iter::once(&mut *from), dest, std::iter::once(&mut *to), now);
        drop((from, to));
        settled(result, self.settle(ack, durability))
    }
}
