//! Durability of keyspaces: logging writes, restoring them (`restore`), and snapshot
//! chunks (`snapshot`).
//!
//! Owns: turning the keys a write touched into one physical log record (each key's
//! resulting value and deadline, or its deletion), and the mapping of a stored value to
//! its record (`data_of`, `encode_entry`) that the log and snapshots share. Its
//! submodules own what recovery applies (`restore`: a logged change whole,
//! `Keyspaces::restore`, through the `restore_*` operations of a keyspace) and copying a
//! keyspace into snapshot chunks a shard slice at a time (`snapshot`).
//!
//! Must never: log an operation instead of its result (INCR is logged as the new
//! number), or log keys that active expiry reclaims (their deadline is in every record and
//! snapshot already, so they come back expired and stay gone).

use std::num::NonZeroU64;

use crate::access::KvResult;
use crate::error::KvError;
use crate::keyspace::Keyspace;
use crate::store::router::KeyRef;
use crate::store::shard::{Shard, Touched};
use crate::store::small_bytes::SmallBytes;
use crate::value::{Entry, StrValue, Value};
use hotset_base::journal::{Ack, Durability};
use hotset_base::record::{KvChange, KvData, encode_group, encode_kv_head};
use smallvec::SmallVec;

mod restore;
mod snapshot;
mod stream;

pub(crate) use restore::{value_is_empty, value_of};
pub(crate) use stream::{stream_data, stream_of};

pub use snapshot::SnapshotCopy;

/// Largest touched-key list a shard keeps for reuse after logging a write.
const TOUCHED_KEEP: usize = 64;

/// A stored value as the log and snapshots (and DUMP) encode it.
pub(crate) fn data_of(value: &Value) -> KvData<'_> {
    match value {
        Value::Str(StrValue::Int(number)) => KvData::Int(*number),
        Value::Str(text) => KvData::Str(text.text().unwrap_or_default()),
        Value::Hash(map) => KvData::Hash(map.iter().collect()),
        Value::List(list) => KvData::List { first: list.first(), items: list.iter().collect() },
        Value::Set(set) => KvData::Set(set.iter().collect()),
        // In order: restoring appends, which packs the order's blocks full.
        Value::ZSet(set) => KvData::ZSet(set.iter().collect()),
        Value::Stream(stream) => KvData::Stream(stream_data(stream)),
    }
}

fn encode_entry(out: &mut Vec<u8>, key: &[u8], entry: &Entry) {
    let expire_at_ms = entry.expire_at().map(NonZeroU64::get);
    KvChange::Put { key, value: data_of(&entry.value), expire_at_ms }.encode(out);
}

/// The record of a hash, set or sorted-set write that changed only `fields` (members) of `key`: their
/// values now and the ones now gone; the whole key when it is neither any more (or is
/// gone).
fn encode_fields<'f>(out: &mut Vec<u8>, key: &[u8], entry: Option<&Entry>, fields: impl Iterator<Item = &'f [u8]>) {
    let Some(entry) = entry else { return KvChange::Delete { key }.encode(out) };
    let expire_at_ms = entry.expire_at().map(NonZeroU64::get);
    match &entry.value {
        Value::Hash(map) => {
            let (mut set, mut removed) = (Vec::new(), Vec::new());
            for field in fields {
                match map.get(field) {
                    Some(value) => set.push((field, value)),
                    None => removed.push(field),
                }
            }
            KvChange::HashFields { key, set, removed, expire_at_ms }.encode(out);
        }
        Value::Set(members) => {
            let (added, removed) = fields.partition(|member| members.contains(member));
            KvChange::SetMembers { key, added, removed, expire_at_ms }.encode(out);
        }
        Value::ZSet(set) => {
            let (mut added, mut removed) = (Vec::new(), Vec::new());
            for member in fields {
                match set.score(member) {
                    Some(score) => added.push((member, score)),
                    None => removed.push(member),
                }
            }
            KvChange::ZSetMembers { key, added, removed, expire_at_ms }.encode(out);
        }
        Value::Stream(_) => stream::encode_parts(out, key, entry, fields),
        _ => encode_entry(out, key, entry),
    }
}

/// The record of list writes that did not shift `key`'s elements: its window now and the
/// elements now at the positions in `spans` (merged; those outside the window are gone
/// again); the whole key when it is no longer a list (or is gone).
fn encode_spans(out: &mut Vec<u8>, key: &[u8], entry: Option<&Entry>, spans: &[(SmallBytes, i64, i64)]) {
    let Some(entry) = entry else { return KvChange::Delete { key }.encode(out) };
    let Value::List(list) = &entry.value else { return encode_entry(out, key, entry) };
    let (first, end) = (list.first(), list.first() + list.len() as i64);
    let mut puts = Vec::new();
    // Spans arrive sorted by start: a position is put once however many spans hold it.
    // Each span is one walk of the list, not a lookup per position.
    let mut next = first;
    for &(_, start, stop) in spans {
        let (from, to) = (start.max(next), stop.min(end));
        if from < to {
            let items = list.range((from - first) as usize, (to - first) as usize);
            puts.extend((from..to).zip(items));
        }
        next = next.max(stop);
    }
    let expire_at_ms = entry.expire_at().map(NonZeroU64::get);
    KvChange::ListEdit { key, first, len: list.len() as u64, puts, expire_at_ms }.encode(out);
}

/// The shards a write noted anything on, each with what it noted (most writes touch one
/// shard: no allocation for the list).
type Work<'s> = SmallVec<[(&'s mut Shard, Touched); 1]>;

/// Takes the touched-key lists of the shards a write noted anything on, sorted and
/// without repeats (a key logged whole needs no field or span record).
fn take_touched<'s>(shards: impl Iterator<Item = &'s mut Shard>) -> Work<'s> {
    // Most writes touch one shard: no allocation for the list of shards.
    let mut work: SmallVec<[(&mut Shard, Touched); 1]> = SmallVec::new();
    for shard in shards {
        let noted = shard.touched.as_mut().filter(|t| {
            t.flushed || !t.keys.is_empty() || !t.fields.is_empty() || !t.spans.is_empty() || !t.events.is_empty()
        });
        if let Some(touched) = noted.map(std::mem::take) {
            work.push((shard, touched));
        }
    }
    for (_, touched) in &mut work {
        touched.keys.sort_unstable();
        touched.keys.dedup();
        touched.fields.sort_unstable();
        touched.fields.dedup();
        touched.spans.sort_unstable();
        let whole = &touched.keys;
        touched.fields.retain(|(key, _)| whole.binary_search(key).is_err());
        touched.spans.retain(|(key, _, _)| whole.binary_search(key).is_err());
    }
    work
}

/// The emptied lists go back to their shards, so the next write reuses their capacity
/// instead of allocating; a list a huge write grew is dropped.
fn give_back(work: Work<'_>) {
    for (shard, mut touched) in work {
        let capacities =
            [touched.keys.capacity(), touched.fields.capacity(), touched.spans.capacity(), touched.events.capacity()];
        if capacities.iter().all(|&capacity| capacity <= TOUCHED_KEEP) {
            touched.keys.clear();
            touched.fields.clear();
            touched.spans.clear();
            touched.events.clear();
            touched.flushed = false;
            shard.touched = Some(touched);
        }
    }
}

impl Keyspace {
    /// `Err(Storage)` while the log refuses writes; checked before a write changes anything.
    pub(super) fn writable(&self) -> KvResult<()> {
        self.journal.writable().map_err(|e| KvError::Storage(e.to_string()))
    }

    /// Starts noting touched keys on these (write-locked) shards, if writes are logged or
    /// keys are watched, and their events if notifications are on.
    pub(super) fn track<'s>(&self, shards: impl Iterator<Item = &'s mut Shard>) {
        let notify = self.notify.listening().is_some();
        if self.journal.get().is_some() || self.watch.listening().is_some() || notify {
            for shard in shards {
                shard.touched.get_or_insert_with(Touched::default).notify = notify;
            }
        }
    }

    /// Logs the resulting state of every key the write touched on these (still
    /// write-locked) shards as one record, and tells the watcher (`watch.rs`) which keys
    /// they were; returns the record's position, which is none if nothing was touched or
    /// nothing is logged.
    pub(super) fn log_touched<'s>(&self, shards: impl Iterator<Item = &'s mut Shard>, now: u64) -> Ack<'_> {
        if !self.listens() {
            return Ack::none();
        }
        let work = take_touched(shards);
        if work.is_empty() {
            return Ack::none();
        }
        self.report(&work);
        let lsn = self.journal.get().map(|journal| journal.append(&mut |out| self.encode_touched(out, &work, now)));
        give_back(work);
        self.journal.ack(lsn)
    }

    /// A write over several keyspaces (MOVE, COPY ... DB, SWAPDB, a transaction holding
    /// one of them): logs what it touched on each keyspace's shards as one group record,
    /// which recovery applies whole, and reports each to the watcher and listener. `self`
    /// is one of them (they share one journal).
    pub(crate) fn log_across<'s>(&self, parts: Vec<(&'s Keyspace, Vec<&'s mut Shard>)>, now: u64) -> Ack<'_> {
        if !self.listens() {
            return Ack::none();
        }
        let noted: Vec<(&Keyspace, Work<'_>)> =
            parts.into_iter().map(|(space, shards)| (space, take_touched(shards.into_iter()))).collect();
        for (space, work) in &noted {
            space.report(work);
        }
        let changed: Vec<&(&Keyspace, Work<'_>)> = noted.iter().filter(|(_, work)| !work.is_empty()).collect();
        let lsn = self.journal.get().filter(|_| !changed.is_empty()).map(|journal| {
            journal.append(&mut |out| {
                if let [(space, work)] = changed[..] {
                    space.encode_touched(out, work, now);
                    return;
                }
                let encoded: Vec<Vec<u8>> = changed
                    .iter()
                    .map(|(space, work)| {
                        let mut part = Vec::new();
                        space.encode_touched(&mut part, work, now);
                        part
                    })
                    .collect();
                encode_group(out, encoded.iter().map(Vec::as_slice));
            })
        });
        for (_, work) in noted {
            give_back(work);
        }
        self.journal.ack(lsn)
    }

    /// Whether a write's touched keys go anywhere (the log, a watcher, a listener).
    fn listens(&self) -> bool {
        self.journal.get().is_some() || self.watch.listening().is_some() || self.notify.listening().is_some()
    }

    /// Tells the watcher which keys changed and the listener their events.
    fn report(&self, work: &[(&mut Shard, Touched)]) {
        let flush = work.iter().any(|(_, touched)| touched.flushed);
        if let Some(watcher) = self.watch.listening() {
            let mut keys = work.iter().flat_map(|(_, touched)| {
                let fields = touched.fields.iter().map(|(key, _)| &**key);
                touched.keys.iter().map(|key| &**key).chain(fields).chain(touched.spans.iter().map(|(key, ..)| &**key))
            });
            watcher.touched(&self.name, &mut keys, flush);
        }
        if let Some(listener) = self.notify.listening() {
            let mut events = work.iter().flat_map(|(_, touched)| touched.events.iter().map(|(c, n, k)| (*c, *n, &**k)));
            listener.events(&self.name, &mut events);
        }
    }

    /// This keyspace's record of what `work` touched: each key's resulting state.
    fn encode_touched(&self, out: &mut Vec<u8>, work: &[(&mut Shard, Touched)], now: u64) {
        let flush = work.iter().any(|(_, touched)| touched.flushed);
        encode_kv_head(out, &self.name, flush);
        for (shard, touched) in work {
            for key in &touched.keys {
                match shard.peek(KeyRef::new(key), now) {
                    Some(entry) => encode_entry(out, key, entry),
                    None => KvChange::Delete { key }.encode(out),
                }
            }
            for fields in touched.fields.chunk_by(|a, b| a.0 == b.0) {
                let key = &*fields[0].0;
                let names = fields.iter().map(|(_, field)| &**field);
                encode_fields(out, key, shard.peek(KeyRef::new(key), now), names);
            }
            for spans in touched.spans.chunk_by(|a, b| a.0 == b.0) {
                let key = &*spans[0].0;
                encode_spans(out, key, shard.peek(KeyRef::new(key), now), spans);
            }
        }
    }

    /// Settles the record of a write (after its locks are released) by `durability`.
    pub(super) fn settle(&self, ack: Ack<'_>, durability: Durability<'_>) -> KvResult<()> {
        durability.settle(ack).map_err(|e| KvError::Storage(e.to_string()))
    }
}
