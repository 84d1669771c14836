//! Keyspace events: the hook through which the server's keyspace notifications hear what
//! every write did, by Redis' event names (`set`, `lpush`, `expired`, `new`...).
//!
//! Owns: [`KeyEvents`] (what a listener implements), the event [`class`]es (Redis'
//! `notify-keyspace-events` letters) and `NotifySlot` (where a registry's keyspaces find
//! the one listener, set once, with the classes it wants now).
//!
//! Must never: cost a write anything while no class is enabled (one atomic load), or call
//! the listener after the write released its shards: it hears a write's events while the
//! keys are still locked, so the events of one key arrive in the order of its writes.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, OnceLock};

/// Event classes, one bit per `notify-keyspace-events` letter.
pub mod class {
    /// `g`: commands on any type (DEL, EXPIRE, RENAME...).
    pub const GENERIC: u32 = 1 << 2;
    /// `$`: string commands.
    pub const STRING: u32 = 1 << 3;
    /// `l`: list commands.
    pub const LIST: u32 = 1 << 4;
    /// `s`: set commands.
    pub const SET: u32 = 1 << 5;
    /// `h`: hash commands.
    pub const HASH: u32 = 1 << 6;
    /// `z`: sorted set commands.
    pub const ZSET: u32 = 1 << 7;
    /// `x`: a key expired.
    pub const EXPIRED: u32 = 1 << 8;
    /// `e`: a key was evicted.
    pub const EVICTED: u32 = 1 << 9;
    /// `t`: stream commands.
    pub const STREAM: u32 = 1 << 10;
    /// `m`: a key was read and missed.
    pub const KEY_MISS: u32 = 1 << 11;
    /// `n`: a key was created.
    pub const NEW: u32 = 1 << 13;
}

/// Hears the events of every write.
pub trait KeyEvents: Send + Sync {
    /// `events` of keyspace `keyspace`, in order: (class, Redis' event name, key). Called
    /// with the keys' shards still write-locked: it must not lock a shard.
    fn events(&self, keyspace: &str, events: &mut dyn Iterator<Item = (u32, &'static str, &[u8])>);
}

/// The listener, and the classes it wants now (0: none, and writes note no events).
type Listener = (Arc<dyn KeyEvents>, Arc<AtomicU32>);

/// The listener and its classes, shared by a registry and its keyspaces.
#[derive(Clone, Default)]
pub(crate) struct NotifySlot(Arc<OnceLock<Listener>>);

impl std::fmt::Debug for NotifySlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NotifySlot").field("set", &self.0.get().is_some()).finish()
    }
}

impl NotifySlot {
    /// Sets the listener, which hears events while `classes` is not zero; a slot takes one.
    pub fn set(&self, listener: Arc<dyn KeyEvents>, classes: Arc<AtomicU32>) -> bool {
        self.0.set((listener, classes)).is_ok()
    }

    /// The listener, when one is set and some class is enabled.
    pub fn listening(&self) -> Option<&Arc<dyn KeyEvents>> {
        let (listener, classes) = self.0.get()?;
        (classes.load(Ordering::Relaxed) != 0).then_some(listener)
    }
}
