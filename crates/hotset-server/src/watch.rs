//! WATCH: optimistic locking for MULTI/EXEC.
//!
//! Owns: `Watches`, the registry of watched keys (which clients watch each (keyspace,
//! key), and per client whether a watched key was touched since), fed by the key-value
//! engine's `KeyWatch` hook, which every write calls with the keys it changed while it
//! still holds their shards; and the check EXEC makes under its locks.
//!
//! Never: take a shard lock while holding the registry lock (writes call in with their
//! shards locked, so the order is shards, then registry), or leave a client's watches
//! behind after its EXEC, DISCARD, UNWATCH or disconnection.
//!
//! Why a key that existed when watched and is gone at EXEC counts as touched: expiry
//! removes keys without a write (active expiry logs nothing and calls no hook), and Redis
//! fails EXEC for a watched key that expired meanwhile; a key already expired when
//! watched is not live then either, so its removal changes nothing. The same record
//! decides FLUSHDB and FLUSHALL: they touch a watched key only if it existed when watched
//! (had it been created or deleted since, that write touched it already).

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use hotset_core::kv::{KeyWatch, KvOps};
use parking_lot::Mutex;

/// One watched key of a client.
struct Watched {
    keyspace: String,
    key: Vec<u8>,
    /// Whether it existed (live) when watched.
    existed: bool,
}

#[derive(Default)]
struct ClientWatches {
    keys: Vec<Watched>,
    /// A watched key was touched since it was watched: the client's EXEC fails.
    dirty: bool,
}

#[derive(Default)]
struct Registry {
    /// Watchers of each (keyspace, key).
    /// By keyspace, then key: nested so a write's report looks its keys up by borrowed
    /// name and bytes, allocating nothing.
    by_key: HashMap<String, HashMap<Vec<u8>, Vec<u64>>>,
    clients: HashMap<u64, ClientWatches>,
}

/// Every watched key of the server.
pub struct Watches {
    /// How many (client, key) watches exist.
    count: AtomicUsize,
    /// The count the engine reads to know whether anyone listens (`Keyspaces::set_watch`),
    /// shared with client-side caching: each watch adds one.
    listeners: Arc<AtomicUsize>,
    inner: Mutex<Registry>,
}

impl Watches {
    pub fn new(listeners: Arc<AtomicUsize>) -> Watches {
        Watches { count: AtomicUsize::new(0), listeners, inner: Mutex::new(Registry::default()) }
    }

    /// Whether any key is watched.
    pub fn active(&self) -> bool {
        self.count.load(Ordering::SeqCst) > 0
    }

    /// WATCH: client `id` watches `keys` of `keyspace`, whose current existence `kv`
    /// tells (read after registering, so a write that finishes before the read is ordered
    /// before the WATCH and one that starts after it sees the watch).
    pub fn watch<K: KvOps>(&self, id: u64, keyspace: &str, kv: &K, keys: &[&[u8]]) {
        {
            let mut registry = self.inner.lock();
            let registry = &mut *registry;
            let client = registry.clients.entry(id).or_default();
            for key in keys {
                if client.keys.iter().any(|w| w.keyspace == keyspace && w.key == *key) {
                    continue;
                }
                client.keys.push(Watched { keyspace: keyspace.to_string(), key: key.to_vec(), existed: false });
                registry.by_key.entry(keyspace.to_string()).or_default().entry(key.to_vec()).or_default().push(id);
                self.count.fetch_add(1, Ordering::SeqCst);
                self.listeners.fetch_add(1, Ordering::SeqCst);
            }
        }
        // Existence, read with the registry released (the engine calls in with shards
        // locked: never the other order).
        let existed: Vec<bool> = keys.iter().map(|key| kv.exists(&[key]).is_ok_and(|n| n > 0)).collect();
        let mut registry = self.inner.lock();
        if let Some(client) = registry.clients.get_mut(&id) {
            for (key, existed) in keys.iter().zip(existed) {
                if let Some(watched) = client.keys.iter_mut().find(|w| w.keyspace == keyspace && w.key == *key) {
                    watched.existed = existed;
                }
            }
        }
    }

    /// EXEC's check, with every shard of the keyspace locked (`kv` is the locked block):
    /// false when a watched key was touched or, having existed, is gone. The watches end
    /// either way.
    pub fn still_clean<K: KvOps>(&self, id: u64, kv: &K, keyspace: &str) -> bool {
        let Some(client) = self.take(id) else { return true };
        if client.dirty {
            return false;
        }
        // Keys of other keyspaces are not locked by this block: their changes were
        // touches, and their expiry is checked as well as it can be without their locks.
        client
            .keys
            .iter()
            .filter(|w| w.keyspace == keyspace && w.existed)
            .all(|w| kv.exists(&[&w.key]).is_ok_and(|n| n > 0))
    }

    /// UNWATCH, DISCARD, a disconnection: client `id` watches nothing any more.
    pub fn unwatch(&self, id: u64) {
        self.take(id);
    }

    fn take(&self, id: u64) -> Option<ClientWatches> {
        if self.count.load(Ordering::SeqCst) == 0 {
            return None;
        }
        let mut registry = self.inner.lock();
        let client = registry.clients.remove(&id)?;
        for watched in &client.keys {
            let Some(keys) = registry.by_key.get_mut(&watched.keyspace) else { continue };
            if let Some(watchers) = keys.get_mut(&watched.key) {
                watchers.retain(|&watcher| watcher != id);
                if watchers.is_empty() {
                    keys.remove(&watched.key);
                }
            }
            if keys.is_empty() {
                registry.by_key.remove(&watched.keyspace);
            }
        }
        self.count.fetch_sub(client.keys.len(), Ordering::SeqCst);
        self.listeners.fetch_sub(client.keys.len(), Ordering::SeqCst);
        Some(client)
    }
}

impl KeyWatch for Watches {
    fn touched(&self, keyspace: &str, keys: &mut dyn Iterator<Item = &[u8]>, flushed: bool) {
        let mut registry = self.inner.lock();
        let registry = &mut *registry;
        if flushed {
            for client in registry.clients.values_mut() {
                if client.keys.iter().any(|w| w.keyspace == keyspace && w.existed) {
                    client.dirty = true;
                }
            }
        }
        let Some(watched) = registry.by_key.get(keyspace) else { return };
        for key in keys {
            if let Some(watchers) = watched.get(key) {
                for id in watchers {
                    if let Some(client) = registry.clients.get_mut(id) {
                        client.dirty = true;
                    }
                }
            }
        }
    }
}
