//! The set of named keyspaces of one server.
//!
//! Owns: [`Keyspaces`], a thread-safe name → `Arc<Keyspace>` registry.
//!
//! Must never: hold its own lock while running keyspace operations (it only
//! hands out `Arc`s), so a slow command never blocks SELECT of another
//! database.
//!
//! Invariants: names are arbitrary strings; the server maps Redis
//! `SELECT n` to the name `n` ("0".."15"). Every keyspace created here
//! shares the registry's clock and configuration. Dropping a keyspace only
//! unregisters it; holders of its `Arc` keep a working (detached) keyspace.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use parking_lot::RwLock;

use super::access::KvResult;
use super::config::KeyspaceConfig;
use super::error::KvError;
use super::keyspace::Keyspace;
use super::notify::{KeyEvents, NotifySlot};
use super::watch::{KeyWatch, WatchSlot};
use hotset_base::clock::Clock;
use hotset_base::journal::{Ack, JournalSlot};
use hotset_base::record::{encode_drop_keyspace, encode_kv_head};

/// Registry of named keyspaces.
pub struct Keyspaces {
    clock: Arc<dyn Clock>,
    config: KeyspaceConfig,
    spaces: RwLock<BTreeMap<String, Arc<Keyspace>>>,
    journal: JournalSlot,
    watch: WatchSlot,
    notify: NotifySlot,
}

impl fmt::Debug for Keyspaces {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Keyspaces").field("names", &self.list()).field("config", &self.config).finish_non_exhaustive()
    }
}

impl Keyspaces {
    /// An empty registry whose keyspaces use the default configuration.
    pub fn new(clock: Arc<dyn Clock>) -> Self {
        Self::with_config(clock, KeyspaceConfig::default())
    }

    /// An empty registry whose keyspaces use `config`.
    pub fn with_config(clock: Arc<dyn Clock>, config: KeyspaceConfig) -> Self {
        Self::with_journal(clock, config, JournalSlot::default())
    }

    /// A registry whose keyspaces log their writes to `journal` once one is attached.
    pub fn with_journal(clock: Arc<dyn Clock>, config: KeyspaceConfig, journal: JournalSlot) -> Self {
        let (watch, notify) = (WatchSlot::default(), NotifySlot::default());
        Self { clock, config, spaces: RwLock::new(BTreeMap::new()), journal, watch, notify }
    }

    /// A new keyspace, its creation logged (as an empty record naming it, so it exists
    /// after a restart). Called with the registry's write lock held, which orders this
    /// record before any of the keyspace's own.
    ///
    /// Nobody waits for that record, by design: the log acknowledges records in order, so
    /// the first write to the keyspace, once acknowledged, has made its creation durable
    /// too; until then the keyspace holds nothing a crash could lose. Waiting here would
    /// make `get_or_create` (a connection's first keyspace, SELECT) block on the log.
    fn build(&self, name: &str) -> Arc<Keyspace> {
        let lsn = self.journal.get().map(|journal| journal.append(&mut |out| encode_kv_head(out, name, false)));
        let _covered_by_the_first_write: Ack<'_> = self.journal.ack(lsn);
        self.unlogged(name)
    }

    /// A keyspace of this registry called `name`, its creation not logged.
    fn unlogged(&self, name: &str) -> Arc<Keyspace> {
        let (journal, watch, notify) = (self.journal.clone(), self.watch.clone(), self.notify.clone());
        Arc::new(Keyspace::named(name, Arc::clone(&self.clock), self.config, journal, watch, notify))
    }

    /// Creates keyspace `name`; `KeyspaceExists` if the name is taken.
    pub fn create(&self, name: &str) -> Result<Arc<Keyspace>, KvError> {
        let mut spaces = self.spaces.write();
        if spaces.contains_key(name) {
            return Err(KvError::KeyspaceExists(name.to_owned()));
        }
        let space = self.build(name);
        spaces.insert(name.to_owned(), Arc::clone(&space));
        Ok(space)
    }

    /// The keyspace called `name`, if any.
    pub fn get(&self, name: &str) -> Option<Arc<Keyspace>> {
        self.spaces.read().get(name).cloned()
    }

    /// The keyspace called `name`, created on first use.
    pub fn get_or_create(&self, name: &str) -> Arc<Keyspace> {
        if let Some(space) = self.get(name) {
            return space;
        }
        let mut spaces = self.spaces.write();
        // Re-check under the write lock: another thread may have won.
        Arc::clone(spaces.entry(name.to_owned()).or_insert_with(|| self.build(name)))
    }

    /// Recovery: the keyspace called `name`, created without logging.
    pub fn get_or_create_quiet(&self, name: &str) -> Arc<Keyspace> {
        let mut spaces = self.spaces.write();
        Arc::clone(spaces.entry(name.to_owned()).or_insert_with(|| self.unlogged(name)))
    }

    /// Recovery: unregisters `name` without logging.
    pub fn drop_quiet(&self, name: &str) -> bool {
        self.spaces.write().remove(name).is_some()
    }

    /// All names, sorted.
    pub fn list(&self) -> Vec<String> {
        self.spaces.read().keys().cloned().collect()
    }

    /// Sets the one watcher of every keyspace of the registry, present and future: while
    /// `count` is above zero, every write tells it which keys it changed (the server's
    /// WATCH). False when one was set already.
    pub fn set_watch(&self, watcher: Arc<dyn KeyWatch>, count: Arc<std::sync::atomic::AtomicUsize>) -> bool {
        self.watch.set(watcher, count)
    }

    /// Sets the one listener of every keyspace's events, present and future: while
    /// `classes` is not zero, every write tells it what it did by Redis' event names (the
    /// server's keyspace notifications). False when one was set already.
    pub fn set_notify(&self, listener: Arc<dyn KeyEvents>, classes: Arc<std::sync::atomic::AtomicU32>) -> bool {
        self.notify.set(listener, classes)
    }

    /// Unregisters `name`; returns whether it existed. With a journal attached, the
    /// drop is logged and acknowledged before this returns.
    pub fn drop(&self, name: &str) -> KvResult<bool> {
        self.journal.writable().map_err(|e| KvError::Storage(e.to_string()))?;
        let lsn = {
            let mut spaces = self.spaces.write();
            if spaces.remove(name).is_none() {
                return Ok(false);
            }
            self.journal.get().map(|journal| journal.append(&mut |out| encode_drop_keyspace(out, name)))
        };
        self.journal.ack(lsn).wait().map_err(|e| KvError::Storage(e.to_string()))?;
        Ok(true)
    }

    /// Bytes held for empty key slots in every keyspace: memory new keys take without the
    /// process growing, which eviction counts as free.
    pub fn reusable_bytes(&self) -> usize {
        self.all().iter().map(|space| space.reusable_bytes()).sum()
    }

    /// Keys deleted because their deadline passed, in every keyspace (INFO `expired_keys`).
    pub fn expired_keys(&self) -> u64 {
        self.all().iter().map(|space| space.expired_keys()).sum()
    }

    /// Changes made to keys in every keyspace since start (INFO's
    /// `rdb_changes_since_last_save` counts from a snapshot).
    pub fn changes(&self) -> u64 {
        self.all().iter().map(|space| space.changes()).sum()
    }

    /// Bytes of keys and values by the keyspaces' own count (an estimate of what they
    /// hold, for a process whose allocator does not count).
    pub fn memory_bytes(&self) -> usize {
        self.all().iter().map(|space| space.memory_bytes()).sum()
    }

    /// Every keyspace (a moment's list: one created after it is not in it).
    pub(crate) fn all(&self) -> Vec<Arc<Keyspace>> {
        self.spaces.read().values().cloned().collect()
    }

    /// Runs [`Keyspace::active_expire_cycle`] on every keyspace with the
    /// same budget each; returns the total number of keys deleted.
    pub fn active_expire_cycle(&self, budget_per_keyspace: usize) -> usize {
        self.all().iter().map(|s| s.active_expire_cycle(budget_per_keyspace)).sum()
    }
}
