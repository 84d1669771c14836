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

use super::config::KeyspaceConfig;
use super::error::KvError;
use super::keyspace::Keyspace;
use crate::clock::Clock;

/// Registry of named keyspaces.
pub struct Keyspaces {
    clock: Arc<dyn Clock>,
    config: KeyspaceConfig,
    spaces: RwLock<BTreeMap<String, Arc<Keyspace>>>,
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
        Self { clock, config, spaces: RwLock::new(BTreeMap::new()) }
    }

    fn build(&self) -> Arc<Keyspace> {
        Arc::new(Keyspace::with_config(Arc::clone(&self.clock), self.config))
    }

    /// Creates keyspace `name`; `KeyspaceExists` if the name is taken.
    pub fn create(&self, name: &str) -> Result<Arc<Keyspace>, KvError> {
        let mut spaces = self.spaces.write();
        if spaces.contains_key(name) {
            return Err(KvError::KeyspaceExists(name.to_owned()));
        }
        let space = self.build();
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
        Arc::clone(spaces.entry(name.to_owned()).or_insert_with(|| self.build()))
    }

    /// All names, sorted.
    pub fn list(&self) -> Vec<String> {
        self.spaces.read().keys().cloned().collect()
    }

    /// Unregisters `name`; returns whether it existed.
    pub fn drop(&self, name: &str) -> bool {
        self.spaces.write().remove(name).is_some()
    }

    /// Runs [`Keyspace::active_expire_cycle`] on every keyspace with the
    /// same budget each; returns the total number of keys deleted.
    pub fn active_expire_cycle(&self, budget_per_keyspace: usize) -> usize {
        let spaces: Vec<Arc<Keyspace>> = self.spaces.read().values().cloned().collect();
        spaces.iter().map(|s| s.active_expire_cycle(budget_per_keyspace)).sum()
    }
}
