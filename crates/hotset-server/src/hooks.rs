//! What the key-value engine's one watcher slot calls: WATCH's registry and client-side
//! caching both hear every change through it.
//!
//! Owns: `KeyHooks`, which hands the engine's reports to whichever of the two listens now.
//! Never: do work of its own, or lock a shard (it is called with the changed keys' shards
//! locked).

use crate::tracking::Tracking;
use crate::watch::Watches;
use hotset_core::kv::KeyWatch;
use std::sync::Arc;

pub struct KeyHooks {
    pub watches: Arc<Watches>,
    pub tracking: Arc<Tracking>,
}

impl KeyWatch for KeyHooks {
    fn touched(&self, keyspace: &str, keys: &mut dyn Iterator<Item = &[u8]>, flushed: bool) {
        match (self.watches.active(), self.tracking.active()) {
            (true, true) => {
                // The report can be walked once: both listeners read a copy of the keys.
                let keys: Vec<&[u8]> = keys.collect();
                self.watches.touched(keyspace, &mut keys.iter().copied(), flushed);
                self.tracking.changed(&mut keys.iter().copied(), flushed);
            }
            (true, false) => self.watches.touched(keyspace, keys, flushed),
            (false, true) => self.tracking.changed(keys, flushed),
            (false, false) => {}
        }
    }

    fn expired(&self, _: &str, keys: &mut dyn Iterator<Item = &[u8]>) {
        if self.tracking.active() {
            self.tracking.expired(keys);
        }
    }
}
