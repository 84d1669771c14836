//! The hook through which whoever watches keys (the server's WATCH) hears of every change.
//!
//! Owns: [`KeyWatch`] (what a watcher implements) and `WatchSlot` (where a registry's
//! keyspaces find the one watcher, set once, and the count of watched keys that says
//! whether it listens now).
//!
//! Must never: cost a write anything while nothing is watched (one atomic load), or call
//! the watcher after the write released its shards: it hears of a change while the
//! changed keys are still locked, so a reader that takes those locks afterwards (EXEC's
//! block) never misses a change that happened before it.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

/// Hears which keys every write changed.
pub trait KeyWatch: Send + Sync {
    /// `keys` of keyspace `keyspace` may have changed (with repeats); `flushed`: the
    /// keyspace was emptied first (FLUSHDB, FLUSHALL). Called with those keys' shards
    /// still write-locked: it must not lock a shard.
    fn touched(&self, keyspace: &str, keys: &mut dyn Iterator<Item = &[u8]>, flushed: bool);

    /// Active expiry deleted `keys` of `keyspace` (no write did: nothing is logged). WATCH
    /// ignores this (it judges expiry by existence at EXEC, as Redis does for keys already
    /// expired when watched); client-side caching must invalidate them. Called with their
    /// shard write-locked, like `touched`.
    fn expired(&self, keyspace: &str, keys: &mut dyn Iterator<Item = &[u8]>) {
        let _ = (keyspace, keys);
    }
}

/// The watcher, and the count of watched keys that says whether it listens.
type Watcher = (Arc<dyn KeyWatch>, Arc<AtomicUsize>);

/// The watcher and the number of watched keys, shared by a registry and its keyspaces.
#[derive(Clone, Default)]
pub(crate) struct WatchSlot(Arc<OnceLock<Watcher>>);

impl std::fmt::Debug for WatchSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WatchSlot").field("set", &self.0.get().is_some()).finish()
    }
}

impl WatchSlot {
    /// Sets the watcher, which listens while `count` is above zero; a slot takes one.
    pub fn set(&self, watcher: Arc<dyn KeyWatch>, count: Arc<AtomicUsize>) -> bool {
        self.0.set((watcher, count)).is_ok()
    }

    /// The watcher, when one is set and something is watched.
    pub fn listening(&self) -> Option<&Arc<dyn KeyWatch>> {
        let (watcher, count) = self.0.get()?;
        (count.load(Ordering::SeqCst) > 0).then_some(watcher)
    }
}
