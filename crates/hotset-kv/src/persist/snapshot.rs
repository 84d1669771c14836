//! Snapshots of keyspaces: copying a keyspace into change chunks while writes go on.
//!
//! Owns: `Keyspace::write_snapshot` and its step, `Keyspace::snapshot_step` (so a
//! database can interleave keyspaces with namespaces), and `SnapshotCopy`, where a copy
//! stands between steps.
//!
//! Must never: hold a shard lock while the caller writes a snapshot chunk out, or hold
//! more than one shard lock at a time (each chunk is copied under one shard read lock).

use super::encode_entry;
use crate::keyspace::Keyspace;
use crate::store::slab_map::{ScanBudget, SlabCursor};
use hotset_base::record::encode_kv_head;

/// Entries per snapshot chunk (one shard read lock each).
const SNAPSHOT_CHUNK_KEYS: usize = 1024;

impl Keyspace {
    /// Writes the keyspace as snapshot chunks: first an empty flushing record (so loading
    /// replaces whatever the keyspace held), then the live keys, `SNAPSHOT_CHUNK_KEYS` per
    /// chunk, each copied under one shard read lock. Returns how many keys were written.
    /// SCAN's guarantee (every key present for the whole walk is seen) is what makes the
    /// copy complete for keys not written meanwhile; see `scan.rs`.
    pub fn write_snapshot<E>(
        &self,
        name: &str,
        buffer: &mut Vec<u8>,
        emit: &mut dyn FnMut(&mut Vec<u8>) -> Result<(), E>,
    ) -> Result<u64, E> {
        let mut copy = SnapshotCopy::default();
        let mut keys = 0;
        while let Some(chunk_keys) = self.snapshot_step(name, &mut copy, buffer, emit)? {
            keys += chunk_keys;
        }
        Ok(keys)
    }

    /// One step of `write_snapshot`: the flushing record first, then one chunk of keys
    /// (how many it held is returned), `None` once the copy is complete. Steps of several
    /// keyspaces and namespaces may be interleaved (see `Database::write_snapshot`).
    pub fn snapshot_step<E>(
        &self,
        name: &str,
        copy: &mut SnapshotCopy,
        buffer: &mut Vec<u8>,
        emit: &mut dyn FnMut(&mut Vec<u8>) -> Result<(), E>,
    ) -> Result<Option<u64>, E> {
        if !copy.started {
            copy.started = true;
            encode_kv_head(buffer, name, true);
            emit(buffer)?;
            return Ok(Some(0));
        }
        while let Some(shard) = self.shards.get(copy.shard) {
            let mut budget = ScanBudget { live: SNAPSHOT_CHUNK_KEYS, positions: SNAPSHOT_CHUNK_KEYS * 16 };
            let mut chunk_keys = 0;
            encode_kv_head(buffer, name, false);
            let next = shard.read().scan(copy.cursor, &mut budget, self.now_ms(), |key, entry| {
                encode_entry(buffer, key, entry);
                chunk_keys += 1;
            });
            match next {
                Some(cursor) => copy.cursor = cursor,
                None => (copy.shard, copy.cursor) = (copy.shard + 1, SlabCursor::default()),
            }
            if chunk_keys > 0 {
                emit(buffer)?;
                buffer.clear();
                return Ok(Some(chunk_keys));
            }
            buffer.clear();
        }
        Ok(None)
    }
}

/// Where a keyspace's snapshot copy stands (`Keyspace::snapshot_step`).
#[derive(Debug, Default)]
pub struct SnapshotCopy {
    started: bool,
    shard: usize,
    cursor: SlabCursor,
}
