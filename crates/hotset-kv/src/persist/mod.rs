//! Durability of keyspaces: logging writes, restoring them, and snapshot chunks.
//!
//! Owns: turning the keys a write touched into one physical log record (each key's
//! resulting value and deadline, or its deletion), what recovery applies (a logged change
//! whole, `Keyspaces::restore`, through the `restore_*` operations of a keyspace), and
//! copying a keyspace into snapshot chunks a shard slice at a time.
//!
//! Must never: log an operation instead of its result (INCR is logged as the new
//! number), log keys that active expiry reclaims (their deadline is in every record and
//! snapshot already, so they come back expired and stay gone), or hold a shard lock while
//! the caller writes a snapshot chunk out.

use std::num::NonZeroU64;

use super::access::KvResult;
use super::error::KvError;
use super::field_map::FieldMap;
use super::keyspace::Keyspace;
use super::registry::Keyspaces;
use super::value::{Entry, StrValue, Value};
use crate::store::router::KeyRef;
use crate::store::shard::{Shard, Touched};
use crate::store::slab_map::{ScanBudget, SlabCursor};
use hotset_base::journal::{Ack, Durability};
use hotset_base::record::{KvChange, KvData, encode_kv_head};

/// Largest touched-key list a shard keeps for reuse after logging a write.
const TOUCHED_KEEP: usize = 64;

/// Entries per snapshot chunk (one shard read lock each).
const SNAPSHOT_CHUNK_KEYS: usize = 1024;

fn data_of(value: &Value) -> KvData<'_> {
    match value {
        Value::Str(StrValue::Int(number)) => KvData::Int(*number),
        Value::Str(text) => KvData::Str(text.text().unwrap_or_default()),
        Value::Hash(map) => KvData::Hash(map.iter().collect()),
    }
}

fn encode_entry(out: &mut Vec<u8>, key: &[u8], entry: &Entry) {
    let expire_at_ms = entry.expire_at.map(NonZeroU64::get);
    KvChange::Put { key, value: data_of(&entry.value), expire_at_ms }.encode(out);
}

/// The record of a hash write that changed only `fields` of `key`: their values now and
/// the ones now gone; the whole key when it is no longer a hash (or is gone).
fn encode_fields<'f>(out: &mut Vec<u8>, key: &[u8], entry: Option<&Entry>, fields: impl Iterator<Item = &'f [u8]>) {
    let Some(entry) = entry else { return KvChange::Delete { key }.encode(out) };
    let Value::Hash(map) = &entry.value else { return encode_entry(out, key, entry) };
    let (mut set, mut removed) = (Vec::new(), Vec::new());
    for field in fields {
        match map.get(field) {
            Some(value) => set.push((field, value)),
            None => removed.push(field),
        }
    }
    let expire_at_ms = entry.expire_at.map(NonZeroU64::get);
    KvChange::HashFields { key, set, removed, expire_at_ms }.encode(out);
}

impl Keyspace {
    /// `Err(Storage)` while the log refuses writes; checked before a write changes anything.
    pub(super) fn writable(&self) -> KvResult<()> {
        self.journal.writable().map_err(|e| KvError::Storage(e.to_string()))
    }

    /// Starts noting touched keys on these (write-locked) shards, if writes are logged.
    pub(super) fn track<'s>(&self, shards: impl Iterator<Item = &'s mut Shard>) {
        if self.journal.get().is_some() {
            for shard in shards {
                shard.touched.get_or_insert_with(Touched::default);
            }
        }
    }

    /// Logs the resulting state of every key the write touched on these (still
    /// write-locked) shards as one record; returns its position, which is none if
    /// nothing was touched or nothing is logged.
    pub(super) fn log_touched<'s>(&self, shards: impl Iterator<Item = &'s mut Shard>, now: u64) -> Ack<'_> {
        let Some(journal) = self.journal.get() else { return Ack::none() };
        // Most writes touch one shard: no allocation for the list of shards.
        let mut work: smallvec::SmallVec<[(&mut Shard, Touched); 1]> = smallvec::SmallVec::new();
        for shard in shards {
            let noted = shard.touched.as_mut().filter(|t| t.flushed || !t.keys.is_empty() || !t.fields.is_empty());
            if let Some(touched) = noted.map(std::mem::take) {
                work.push((shard, touched));
            }
        }
        if work.is_empty() {
            return Ack::none();
        }
        for (_, touched) in &mut work {
            touched.keys.sort_unstable();
            touched.keys.dedup();
            touched.fields.sort_unstable();
            touched.fields.dedup();
            // A key logged whole needs no field record.
            let whole = &touched.keys;
            touched.fields.retain(|(key, _)| whole.binary_search(key).is_err());
        }
        let flush = work.iter().any(|(_, touched)| touched.flushed);
        let lsn = journal.append(&mut |out| {
            encode_kv_head(out, &self.name, flush);
            for (shard, touched) in &work {
                for key in &touched.keys {
                    match shard.get(KeyRef::new(key), now) {
                        Some(entry) => encode_entry(out, key, entry),
                        None => KvChange::Delete { key }.encode(out),
                    }
                }
                for fields in touched.fields.chunk_by(|a, b| a.0 == b.0) {
                    let key = &*fields[0].0;
                    let names = fields.iter().map(|(_, field)| &**field);
                    encode_fields(out, key, shard.get(KeyRef::new(key), now), names);
                }
            }
        });
        // The emptied lists go back to their shards, so the next write reuses their
        // capacity instead of allocating; a list a huge write grew is dropped.
        for (shard, mut touched) in work {
            if touched.keys.capacity() <= TOUCHED_KEEP && touched.fields.capacity() <= TOUCHED_KEEP {
                touched.keys.clear();
                touched.fields.clear();
                touched.flushed = false;
                shard.touched = Some(touched);
            }
        }
        self.journal.ack(Some(lsn))
    }

    /// Settles the record of a write (after its locks are released) by `durability`.
    pub(super) fn settle(&self, ack: Ack<'_>, durability: Durability<'_>) -> KvResult<()> {
        durability.settle(ack).map_err(|e| KvError::Storage(e.to_string()))
    }

    /// Recovery: the write-locked shard of `key`, the key, now and its deadline; `None`
    /// (after deleting the key) when the deadline has already passed.
    fn restore_target<'k>(
        &self,
        key: &'k [u8],
        expire_at_ms: Option<u64>,
    ) -> Option<(parking_lot::RwLockWriteGuard<'_, Shard>, KeyRef<'k>, u64, Option<NonZeroU64>)> {
        let now = self.now_ms();
        let key = KeyRef::new(key);
        let mut shard = self.shards[self.router.shard_of(key.hash)].write();
        let expire_at = expire_at_ms.and_then(NonZeroU64::new);
        if expire_at.is_some_and(|at| now > at.get()) {
            shard.remove(key, now);
            return None;
        }
        Some((shard, key, now, expire_at))
    }

    /// Recovery: sets a key's value and deadline; a deadline already past deletes it.
    pub fn restore_put(&self, key: &[u8], data: &KvData<'_>, expire_at_ms: Option<u64>) {
        let Some((mut shard, key, now, expire_at)) = self.restore_target(key, expire_at_ms) else { return };
        let value = match data {
            KvData::Str(bytes) => Value::Str(StrValue::from_bytes(bytes)),
            KvData::Int(number) => Value::Str(StrValue::Int(*number)),
            KvData::Hash(pairs) => {
                let mut map = FieldMap::default();
                for (field, value) in pairs {
                    map.insert(field, value.to_vec());
                }
                Value::Hash(Box::new(map))
            }
        };
        shard.put(key, now, value, expire_at);
    }

    /// Recovery: sets and removes some fields of a hash, and sets its deadline. A missing
    /// key (or one holding another type, which only the newer state of a fuzzy snapshot
    /// can show; later records set the key's final state) becomes a hash of the set fields.
    /// An emptied hash is deleted, as is a key whose deadline has passed.
    pub fn restore_hash_fields(
        &self,
        key: &[u8],
        set: &[(&[u8], &[u8])],
        removed: &[&[u8]],
        expire_at_ms: Option<u64>,
    ) {
        let Some((mut shard, key, now, expire_at)) = self.restore_target(key, expire_at_ms) else { return };
        if !shard.get(key, now).is_some_and(|entry| matches!(entry.value, Value::Hash(_))) {
            let mut map = FieldMap::default();
            for (field, value) in set {
                map.insert(field, value.to_vec());
            }
            match map.is_empty() {
                true => drop(shard.remove(key, now)),
                false => shard.put(key, now, Value::Hash(Box::new(map)), expire_at),
            }
            return;
        }
        let mut live = shard.get_mut(key, now).expect("a live hash, checked above");
        let empty = live.update(|value| match value {
            Value::Hash(map) => {
                for (field, value) in set {
                    map.insert(field, value.to_vec());
                }
                for field in removed {
                    map.remove(field);
                }
                map.is_empty()
            }
            Value::Str(_) => unreachable!("a hash, checked above"),
        });
        if empty {
            live.remove();
        } else {
            live.set_expire_at(expire_at);
        }
    }

    /// Recovery: deletes a key.
    pub fn restore_delete(&self, key: &[u8]) {
        let now = self.now_ms();
        let key = KeyRef::new(key);
        self.shards[self.router.shard_of(key.hash)].write().remove(key, now);
    }

    /// Recovery: empties the keyspace.
    pub fn restore_flush(&self) {
        for shard in self.shards.iter() {
            shard.write().clear();
        }
    }

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

impl Keyspaces {
    /// Recovery: applies one logged key-value change to keyspace `name`, created without
    /// logging if missing: empties it first when `flush`, then sets each key's state as
    /// the operations say, in order. Idempotent, as replay needs: every operation states a
    /// result.
    pub fn restore(&self, name: &str, flush: bool, ops: Vec<KvChange<'_>>) {
        let keyspace = self.get_or_create_quiet(name);
        if flush {
            keyspace.restore_flush();
        }
        for op in ops {
            match op {
                KvChange::Put { key, value, expire_at_ms } => keyspace.restore_put(key, &value, expire_at_ms),
                KvChange::Delete { key } => keyspace.restore_delete(key),
                KvChange::HashFields { key, set, removed, expire_at_ms } => {
                    keyspace.restore_hash_fields(key, &set, &removed, expire_at_ms)
                }
            }
        }
    }
}

/// Where a keyspace's snapshot copy stands (`Keyspace::snapshot_step`).
#[derive(Debug, Default)]
pub struct SnapshotCopy {
    started: bool,
    shard: usize,
    cursor: SlabCursor,
}
