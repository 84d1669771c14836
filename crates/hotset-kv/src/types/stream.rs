//! The log behind a Redis stream value, and its consumer groups.
//!
//! Owns: [`StreamId`], [`Stream`] (entries in id order, the stream's counters, its
//! groups) and [`Group`] (a consumer group: its last delivered id, read counter, pending
//! entries and consumers).
//!
//! Entries live in nodes, as Redis keeps them in listpacks under a radix tree: a node
//! takes appended entries until it holds `stream-node-max-entries` of them (deleted ones
//! included) or its bytes reach `stream-node-max-bytes`, then a new node starts. The node
//! is what approximate trimming (`MAXLEN ~`, `MINID ~`) removes whole, so modelling it is
//! what makes `~` trim where Redis trims. A node packs its entries' fields into one
//! buffer: each entry costs a 24-byte slot plus its bytes, not an allocation.
//!
//! ```text
//!   nodes: 1-0 -> [1-0 1-1 (1-2 deleted) 2-0 ...]   keyed by the first id they took
//!          9-0 -> [9-0 9-1 ...]
//! ```
//!
//! Must never: hold a node without a live entry (removing its last live entry removes the
//! node), let `length` disagree with the live entries, or append an id not above
//! `last_id` (checked before every append). A group's pending entry and its consumer's
//! list of pending ids always agree (checked in debug builds).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};

/// `stream-node-max-entries` (0: no limit) and `stream-node-max-bytes`, as CONFIG SET
/// leaves them: server-wide, as in Redis, and read on every append.
static NODE_MAX_ENTRIES: AtomicUsize = AtomicUsize::new(100);
static NODE_MAX_BYTES: AtomicUsize = AtomicUsize::new(4096);

/// Sets the node limits (CONFIG SET stream-node-max-entries / -bytes).
pub fn set_node_limits(entries: Option<usize>, bytes: Option<usize>) {
    if let Some(entries) = entries {
        NODE_MAX_ENTRIES.store(entries, Ordering::Relaxed);
    }
    if let Some(bytes) = bytes {
        NODE_MAX_BYTES.store(bytes, Ordering::Relaxed);
    }
}

/// The node limits now: (entries, 0 for none; bytes).
pub fn node_limits() -> (usize, usize) {
    (NODE_MAX_ENTRIES.load(Ordering::Relaxed), NODE_MAX_BYTES.load(Ordering::Relaxed))
}

/// Redis' ceiling on a node's listpack, which also bounds one entry.
pub const NODE_BYTES_CEILING: usize = u32::MAX as usize;

/// A stream entry id: milliseconds, then a sequence number.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StreamId {
    /// Milliseconds.
    pub ms: u64,
    /// Sequence within the millisecond.
    pub seq: u64,
}

impl StreamId {
    /// 0-0, below every entry.
    pub const MIN: StreamId = StreamId { ms: 0, seq: 0 };
    /// The greatest id.
    pub const MAX: StreamId = StreamId { ms: u64::MAX, seq: u64::MAX };

    /// The id `ms`-`seq`.
    pub const fn new(ms: u64, seq: u64) -> Self {
        Self { ms, seq }
    }

    /// The next id, or `None` after [`StreamId::MAX`].
    pub fn next(self) -> Option<StreamId> {
        match (self.ms, self.seq) {
            (u64::MAX, u64::MAX) => None,
            (ms, u64::MAX) => Some(StreamId::new(ms + 1, 0)),
            (ms, seq) => Some(StreamId::new(ms, seq + 1)),
        }
    }

    /// The previous id, or `None` before 0-0.
    pub fn prev(self) -> Option<StreamId> {
        match (self.ms, self.seq) {
            (0, 0) => None,
            (ms, 0) => Some(StreamId::new(ms - 1, u64::MAX)),
            (ms, seq) => Some(StreamId::new(ms, seq - 1)),
        }
    }

    /// Big-endian bytes, which sort as the ids do.
    pub fn to_bytes(self) -> [u8; 16] {
        let mut out = [0; 16];
        out[..8].copy_from_slice(&self.ms.to_be_bytes());
        out[8..].copy_from_slice(&self.seq.to_be_bytes());
        out
    }

    /// The id of [`to_bytes`](Self::to_bytes)' bytes.
    pub fn from_bytes(bytes: &[u8]) -> Option<StreamId> {
        let bytes: &[u8; 16] = bytes.try_into().ok()?;
        let (ms, seq) = bytes.split_at(8);
        Some(StreamId::new(u64::from_be_bytes(ms.try_into().ok()?), u64::from_be_bytes(seq.try_into().ok()?)))
    }
}

impl fmt::Display for StreamId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.ms, self.seq)
    }
}

/// Entries' field-value pairs as a node packs them: a count, then length-prefixed
/// fields and values (LEB128 lengths).
fn pack(out: &mut Vec<u8>, pairs: &[(&[u8], &[u8])]) {
    put_len(out, pairs.len());
    for (field, value) in pairs {
        put_len(out, field.len());
        out.extend_from_slice(field);
        put_len(out, value.len());
        out.extend_from_slice(value);
    }
}

fn put_len(out: &mut Vec<u8>, mut n: usize) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

fn take_len(bytes: &[u8], at: &mut usize) -> usize {
    let (mut n, mut shift) = (0usize, 0);
    loop {
        let byte = bytes[*at];
        *at += 1;
        n |= ((byte & 0x7f) as usize) << shift;
        if byte < 0x80 {
            return n;
        }
        shift += 7;
    }
}

/// One entry's fields, as stored: iterate for the (field, value) pairs.
#[derive(Debug, Clone, Copy)]
pub struct Fields<'a> {
    bytes: &'a [u8],
}

impl<'a> Fields<'a> {
    /// How many (field, value) pairs.
    pub fn len(&self) -> usize {
        take_len(self.bytes, &mut 0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The pairs, in the order XADD gave them.
    pub fn pairs(&self) -> impl Iterator<Item = (&'a [u8], &'a [u8])> + 'a {
        let bytes = self.bytes;
        let mut at = 0;
        let count = take_len(bytes, &mut at);
        (0..count).map(move |_| {
            let field_len = take_len(bytes, &mut at);
            let field = &bytes[at..at + field_len];
            at += field_len;
            let value_len = take_len(bytes, &mut at);
            let value = &bytes[at..at + value_len];
            at += value_len;
            (field, value)
        })
    }

    /// The pairs, copied.
    pub fn to_vec(self) -> Vec<(Vec<u8>, Vec<u8>)> {
        self.pairs().map(|(f, v)| (f.to_vec(), v.to_vec())).collect()
    }
}

/// One entry's place in its node.
#[derive(Debug, Clone)]
struct Slot {
    id: StreamId,
    start: u32,
    /// Bytes of its packed fields; [`Slot::DELETED`] once deleted.
    len: u32,
}

impl Slot {
    const DELETED: u32 = u32::MAX;

    fn live(&self) -> bool {
        self.len != Self::DELETED
    }
}

/// A run of entries, as a Redis radix-tree node holds them.
#[derive(Debug, Clone, Default)]
struct Node {
    /// In id order, deleted ones included until the node goes.
    slots: Vec<Slot>,
    data: Vec<u8>,
    /// Slots not deleted.
    live: usize,
    /// Bytes of the data of deleted slots (reclaimed by `compact`).
    dead_bytes: usize,
}

impl Node {
    fn fields(&self, slot: &Slot) -> Fields<'_> {
        Fields { bytes: &self.data[slot.start as usize..slot.start as usize + slot.len as usize] }
    }

    fn heap_bytes(&self) -> usize {
        self.slots.capacity() * std::mem::size_of::<Slot>() + self.data.capacity()
    }

    /// Drops the data of deleted entries once they are most of the buffer.
    fn compact(&mut self) {
        if self.dead_bytes * 2 <= self.data.len() {
            return;
        }
        let mut data = Vec::with_capacity(self.data.len() - self.dead_bytes);
        for slot in &mut self.slots {
            if slot.live() {
                let start = data.len();
                data.extend_from_slice(&self.data[slot.start as usize..slot.start as usize + slot.len as usize]);
                slot.start = start as u32;
            }
        }
        self.data = data;
        self.dead_bytes = 0;
    }

    /// Marks the slot at `index` deleted; false when it already was.
    fn delete(&mut self, index: usize) -> bool {
        let slot = &mut self.slots[index];
        if !slot.live() {
            return false;
        }
        self.dead_bytes += slot.len as usize;
        slot.len = Slot::DELETED;
        self.live -= 1;
        self.compact();
        true
    }

    /// Redis' estimate of the node's listpack size, for `stream-node-max-bytes`: the
    /// packed bytes plus a few bytes of header per entry.
    fn listpack_bytes(&self) -> usize {
        self.data.len() + self.slots.len() * 4
    }
}

/// A pending entry of a consumer group: delivered, not yet acknowledged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pending {
    /// The consumer it was last delivered to.
    pub consumer: Box<[u8]>,
    /// When it was last delivered (ms since the epoch).
    pub delivery_time: u64,
    /// How many times it was delivered.
    pub delivery_count: u64,
}

/// A consumer of a group.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Consumer {
    /// When it was last seen (ms since the epoch).
    pub seen_time: u64,
    /// The ids pending for it.
    pub pending: BTreeSet<StreamId>,
}

/// A consumer group.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Group {
    /// The last id delivered to the group.
    pub last_id: StreamId,
    /// Entries read by the group, [`Group::UNKNOWN_READ`] when it cannot be known.
    pub entries_read: i64,
    /// Pending entries by id.
    pending: BTreeMap<StreamId, Pending>,
    /// Consumers by name.
    consumers: BTreeMap<Box<[u8]>, Consumer>,
}

impl Group {
    /// Redis' "invalid" read counter (XINFO shows null).
    pub const UNKNOWN_READ: i64 = -1;

    pub fn new(last_id: StreamId, entries_read: i64) -> Self {
        Self { last_id, entries_read, ..Self::default() }
    }

    /// The pending entries, in id order.
    pub fn pending(&self) -> &BTreeMap<StreamId, Pending> {
        &self.pending
    }

    /// The consumers, by name.
    pub fn consumers(&self) -> &BTreeMap<Box<[u8]>, Consumer> {
        &self.consumers
    }

    pub fn consumer(&self, name: &[u8]) -> Option<&Consumer> {
        self.consumers.get(name)
    }

    /// The consumer `name`, created (seen now) when missing; true when it was created.
    pub fn ensure_consumer(&mut self, name: &[u8], now: u64) -> bool {
        if self.consumers.contains_key(name) {
            return false;
        }
        self.consumers.insert(name.into(), Consumer { seen_time: now, pending: BTreeSet::new() });
        true
    }

    /// Notes that consumer `name` was seen at `now`.
    pub fn see(&mut self, name: &[u8], now: u64) {
        if let Some(consumer) = self.consumers.get_mut(name) {
            consumer.seen_time = now;
        }
    }

    /// Sets a consumer as recovery restores it (its pending ids come with the entries).
    pub fn restore_consumer(&mut self, name: &[u8], seen_time: u64) {
        self.consumers.entry(name.into()).or_default().seen_time = seen_time;
    }

    /// Removes consumer `name` and its pending entries; how many it had, or `None`.
    pub fn remove_consumer(&mut self, name: &[u8]) -> Option<usize> {
        let consumer = self.consumers.remove(name)?;
        for id in &consumer.pending {
            self.pending.remove(id);
        }
        Some(consumer.pending.len())
    }

    /// Makes `id` pending for `consumer` (which must exist) with these delivery details,
    /// moving it from another consumer if it was theirs.
    pub fn set_pending(&mut self, id: StreamId, consumer: &[u8], delivery_time: u64, delivery_count: u64) {
        if let Some(old) = self.pending.get(&id)
            && *old.consumer != *consumer
            && let Some(owner) = self.consumers.get_mut(&old.consumer)
        {
            owner.pending.remove(&id);
        }
        self.consumers.entry(consumer.into()).or_default().pending.insert(id);
        self.pending.insert(id, Pending { consumer: consumer.into(), delivery_time, delivery_count });
        self.check();
    }

    /// Acknowledges `id`: true when it was pending.
    pub fn ack(&mut self, id: StreamId) -> bool {
        let Some(pending) = self.pending.remove(&id) else { return false };
        if let Some(owner) = self.consumers.get_mut(&pending.consumer) {
            owner.pending.remove(&id);
        }
        true
    }

    /// The pending entry of `id`, to change its delivery details.
    pub fn pending_mut(&mut self, id: StreamId) -> Option<&mut Pending> {
        self.pending.get_mut(&id)
    }

    fn heap_bytes(&self) -> usize {
        // Rough: a B-tree entry and the consumer's copy of the name for each pending id.
        let pending: usize = self.pending.values().map(|p| 48 + p.consumer.len()).sum::<usize>() / 2;
        let consumers: usize = self.consumers.keys().map(|name| 64 + name.len()).sum();
        128 + self.pending.len() * 40 + pending.min(self.pending.len() * 64) + consumers
    }

    #[cfg(debug_assertions)]
    fn check(&self) {
        for (id, pending) in &self.pending {
            let owner = self.consumers.get(&pending.consumer).expect("a pending entry's consumer exists");
            assert!(owner.pending.contains(id), "the consumer lists its pending id {id}");
        }
        let listed: usize = self.consumers.values().map(|c| c.pending.len()).sum();
        assert_eq!(listed, self.pending.len(), "every consumer's pending id is the group's");
    }

    #[cfg(not(debug_assertions))]
    fn check(&self) {}
}

/// A Redis stream.
#[derive(Debug, Clone, Default)]
pub struct Stream {
    /// Nodes by the id of their first slot.
    nodes: BTreeMap<StreamId, Node>,
    /// Live entries.
    length: u64,
    /// The greatest id ever added (or set by XSETID).
    pub last_id: StreamId,
    /// The first live entry's id as Redis records it (0-0 when empty).
    pub first_id: StreamId,
    /// The greatest id ever deleted by XDEL (or set by XSETID).
    pub max_deleted: StreamId,
    /// Entries ever added.
    pub entries_added: u64,
    groups: BTreeMap<Box<[u8]>, Group>,
    /// Heap bytes of the nodes.
    node_bytes: usize,
}

impl Stream {
    /// Live entries.
    pub fn len(&self) -> u64 {
        self.length
    }

    pub fn is_empty(&self) -> bool {
        self.length == 0
    }

    /// How many nodes hold the entries (XINFO's radix-tree-keys).
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// Heap bytes, roughly: the nodes' exactly, the groups' estimated.
    pub fn heap_bytes(&self) -> usize {
        self.node_bytes + self.nodes.len() * 48 + self.groups.values().map(Group::heap_bytes).sum::<usize>()
    }

    /// The id XADD `*` takes at `now`: `now`-0, or the last id's successor when the clock
    /// is not ahead of it; `None` once the last id is the greatest.
    pub fn next_id(&self, now: u64) -> Option<StreamId> {
        if now > self.last_id.ms { Some(StreamId::new(now, 0)) } else { self.last_id.next() }
    }

    /// Appends an entry; `id` must be above `last_id`.
    pub fn append(&mut self, id: StreamId, pairs: &[(&[u8], &[u8])]) {
        assert!(id > self.last_id, "an appended id is above the last one");
        let (max_entries, max_bytes) = node_limits();
        let max_bytes = if max_bytes == 0 { NODE_BYTES_CEILING } else { max_bytes };
        let entry_bytes: usize = pairs.iter().map(|(f, v)| f.len() + v.len()).sum();
        let full = self.nodes.last_key_value().is_none_or(|(_, node)| {
            node.listpack_bytes() + entry_bytes >= max_bytes || (max_entries > 0 && node.slots.len() >= max_entries)
        });
        if full {
            self.nodes.insert(id, Node::default());
        }
        let mut last = self.nodes.last_entry().expect("a node to append to");
        let node = last.get_mut();
        let before = node.heap_bytes();
        let start = node.data.len();
        pack(&mut node.data, pairs);
        node.slots.push(Slot { id, start: start as u32, len: (node.data.len() - start) as u32 });
        node.live += 1;
        self.node_bytes = self.node_bytes + node.heap_bytes() - before;
        self.length += 1;
        self.entries_added += 1;
        self.last_id = id;
        if self.length == 1 {
            self.first_id = id;
        }
    }

    /// The node holding `id`, if any: the last node starting at or before it.
    fn node_of(&self, id: StreamId) -> Option<(StreamId, usize)> {
        let (&key, node) = self.nodes.range(..=id).next_back()?;
        let index = node.slots.binary_search_by_key(&id, |slot| slot.id).ok()?;
        Some((key, index))
    }

    /// The fields of live entry `id`.
    pub fn get(&self, id: StreamId) -> Option<Fields<'_>> {
        let (key, index) = self.node_of(id)?;
        let node = &self.nodes[&key];
        let slot = &node.slots[index];
        slot.live().then(|| node.fields(slot))
    }

    /// Live entries with ids in `start..=end`, in id order (`rev`: from the end).
    pub fn range(
        &self,
        start: StreamId,
        end: StreamId,
        rev: bool,
    ) -> Box<dyn Iterator<Item = (StreamId, Fields<'_>)> + '_> {
        if start > end {
            return Box::new(std::iter::empty());
        }
        // The node holding `start` may begin before it.
        let first = self.nodes.range(..=start).next_back().map_or(start, |(&key, _)| key);
        let nodes = self.nodes.range(first..=end);
        fn entries(node: &Node) -> impl DoubleEndedIterator<Item = (StreamId, Fields<'_>)> {
            node.slots.iter().filter(|slot| slot.live()).map(move |slot| (slot.id, node.fields(slot)))
        }
        let within = move |(id, _): &(StreamId, Fields<'_>)| *id >= start && *id <= end;
        if rev {
            Box::new(nodes.rev().flat_map(|(_, node)| entries(node).rev()).filter(within))
        } else {
            Box::new(nodes.flat_map(|(_, node)| entries(node)).filter(within))
        }
    }

    /// The last live entry's id.
    pub fn last_live_id(&self) -> Option<StreamId> {
        self.range(StreamId::MIN, StreamId::MAX, true).next().map(|(id, _)| id)
    }

    /// The first live entry's id.
    pub fn first_live_id(&self) -> Option<StreamId> {
        self.range(StreamId::MIN, StreamId::MAX, false).next().map(|(id, _)| id)
    }

    /// Deletes live entry `id` (the node goes with its last live entry); false when there
    /// was none. The counters XDEL keeps are the caller's.
    pub fn delete(&mut self, id: StreamId) -> bool {
        let Some((key, index)) = self.node_of(id) else { return false };
        let node = self.nodes.get_mut(&key).expect("the node was just found");
        let before = node.heap_bytes();
        if !node.delete(index) {
            return false;
        }
        self.length -= 1;
        if node.live == 0 {
            self.nodes.remove(&key);
            self.node_bytes -= before;
        } else {
            let after = node.heap_bytes();
            self.node_bytes = self.node_bytes + after - before;
        }
        true
    }

    /// Removes the first node whole.
    fn remove_first_node(&mut self) {
        let (_, node) = self.nodes.pop_first().expect("a node to remove");
        self.length -= node.live as u64;
        self.node_bytes -= node.heap_bytes();
    }

    /// Removes every entry below `floor` (recovery's way of replaying a trim).
    pub fn remove_below(&mut self, floor: StreamId) {
        while let Some((_, node)) = self.nodes.first_key_value() {
            let Some(last) = node.slots.last() else { break };
            if last.id < floor {
                self.remove_first_node();
                continue;
            }
            let doomed: Vec<StreamId> =
                node.slots.iter().filter(|slot| slot.live() && slot.id < floor).map(|slot| slot.id).collect();
            for id in doomed {
                self.delete(id);
            }
            break;
        }
        self.refresh_first_id();
    }

    /// Sets the recorded first id from the live entries (after trimming or deleting).
    pub fn refresh_first_id(&mut self) {
        self.first_id = self.first_live_id().unwrap_or(StreamId::MIN);
    }

    /// XTRIM and XADD's trimming, as Redis' `streamTrim` does it: whole nodes from the
    /// head while the rule allows; with `approx`, nothing inside a node; `limit` (0: none)
    /// caps the entries removed. Returns how many were removed.
    pub fn trim(&mut self, rule: Trim, approx: bool, limit: u64) -> u64 {
        let mut deleted = 0;
        while let Some((&key, node)) = self.nodes.first_key_value() {
            if let Trim::MaxLen(max) = rule
                && self.length <= max
            {
                break;
            }
            let entries = node.live as u64;
            if limit > 0 && deleted + entries > limit {
                break;
            }
            let whole = match rule {
                Trim::MaxLen(max) => self.length - entries >= max,
                Trim::MinId(min) => node.slots.last().is_some_and(|slot| slot.id < min),
            };
            if whole {
                self.remove_first_node();
                deleted += entries;
                continue;
            }
            if approx {
                break;
            }
            let ids: Vec<StreamId> = node.slots.iter().filter(|slot| slot.live()).map(|slot| slot.id).collect();
            for id in ids {
                let stop = match rule {
                    Trim::MaxLen(max) => self.length <= max,
                    Trim::MinId(min) => id >= min,
                };
                if stop {
                    break;
                }
                self.delete(id);
                deleted += 1;
            }
            // Only the first node can be partly trimmed: a later one is not reached.
            let _ = key;
            break;
        }
        if deleted > 0 {
            self.refresh_first_id();
        }
        deleted
    }

    /// Whether `start..` holds a deleted id (Redis' `streamRangeHasTombstones`).
    pub fn range_has_tombstones(&self, start: StreamId) -> bool {
        if self.length == 0 || self.max_deleted == StreamId::MIN || self.first_id > self.max_deleted {
            return false;
        }
        start <= self.max_deleted
    }

    /// How many entries were added up to `id`, when that can be known (Redis'
    /// `streamEstimateDistanceFromFirstEverEntry`); `None` otherwise.
    pub fn entries_read_at(&self, id: StreamId) -> Option<u64> {
        if self.entries_added == 0 {
            return Some(0);
        }
        if self.length == 0 && id <= self.last_id {
            return Some(self.entries_added);
        }
        match id.cmp(&self.last_id) {
            std::cmp::Ordering::Equal => return Some(self.entries_added),
            std::cmp::Ordering::Greater => return None,
            std::cmp::Ordering::Less => {}
        }
        if self.max_deleted == StreamId::MIN || self.max_deleted < self.first_id {
            match id.cmp(&self.first_id) {
                std::cmp::Ordering::Less => return Some(self.entries_added - self.length),
                std::cmp::Ordering::Equal => return Some(self.entries_added - self.length + 1),
                std::cmp::Ordering::Greater => {}
            }
        }
        None
    }

    /// A group's lag (entries not yet delivered to it), when it can be known.
    pub fn lag(&self, group: &Group) -> Option<i64> {
        if self.entries_added == 0 {
            return Some(0);
        }
        let added = self.entries_added as i64;
        if group.entries_read != Group::UNKNOWN_READ && !self.range_has_tombstones(group.last_id) {
            return Some(added - group.entries_read);
        }
        self.entries_read_at(group.last_id).map(|read| added - read as i64)
    }

    /// The groups, by name.
    pub fn groups(&self) -> &BTreeMap<Box<[u8]>, Group> {
        &self.groups
    }

    pub fn group(&self, name: &[u8]) -> Option<&Group> {
        self.groups.get(name)
    }

    pub fn group_mut(&mut self, name: &[u8]) -> Option<&mut Group> {
        self.groups.get_mut(name)
    }

    /// Adds group `name`; false when one has that name.
    pub fn create_group(&mut self, name: &[u8], group: Group) -> bool {
        if self.groups.contains_key(name) {
            return false;
        }
        self.groups.insert(name.into(), group);
        true
    }

    /// Sets group `name` as recovery restores it: created when missing.
    pub fn group_or_default(&mut self, name: &[u8]) -> &mut Group {
        self.groups.entry(name.into()).or_default()
    }

    /// Removes group `name`; false when there was none.
    pub fn destroy_group(&mut self, name: &[u8]) -> bool {
        self.groups.remove(name).is_some()
    }

    /// Marks a group's delivery of entry `id` (XREADGROUP): moves its last id and read
    /// counter on as Redis does.
    pub fn advance_group(&mut self, name: &[u8], id: StreamId) {
        let tombstones = self.range_has_tombstones(id);
        let estimate = self.entries_read_at(id);
        let entries_added = self.entries_added;
        let group = self.groups.get_mut(name).expect("the group was checked");
        if id > group.last_id {
            if group.entries_read != Group::UNKNOWN_READ && !tombstones {
                group.entries_read += 1;
            } else if entries_added > 0 {
                group.entries_read = estimate.map_or(Group::UNKNOWN_READ, |read| read as i64);
            }
            group.last_id = id;
        }
    }

    /// Inserts an entry anywhere (recovery, where records may arrive over a later state);
    /// replaces one with the same id. Counters are the caller's.
    pub fn restore_entry(&mut self, id: StreamId, pairs: &[(&[u8], &[u8])]) {
        if self.get(id).is_some() {
            self.delete(id);
        }
        let after_all = self.nodes.last_key_value().is_none_or(|(_, node)| node.slots.last().is_none_or(|s| s.id < id));
        if after_all {
            let (last_id, added, first) = (self.last_id, self.entries_added, self.first_id);
            self.last_id = StreamId::MIN;
            self.entries_added = 0;
            self.append(id, pairs);
            (self.last_id, self.entries_added) = (last_id.max(id), added);
            self.first_id = if self.length == 1 { id } else { first };
            return;
        }
        let key = self
            .nodes
            .range(..=id)
            .next_back()
            .map_or_else(|| *self.nodes.first_key_value().expect("some node holds a later entry").0, |(&key, _)| key);
        let mut node = self.nodes.remove(&key).expect("the node was just found");
        let before = node.heap_bytes();
        let start = node.data.len();
        pack(&mut node.data, pairs);
        let at = node.slots.partition_point(|slot| slot.id < id);
        node.slots.insert(at, Slot { id, start: start as u32, len: (node.data.len() - start) as u32 });
        node.live += 1;
        self.node_bytes = self.node_bytes + node.heap_bytes() - before;
        self.length += 1;
        // A node is keyed by its first slot's id.
        self.nodes.insert(node.slots[0].id.min(key), node);
    }

    /// Checks the invariants (tests and debug builds).
    pub fn check(&self) {
        let live: usize = self.nodes.values().map(|node| node.live).sum();
        assert_eq!(live as u64, self.length, "length counts the live entries");
        for (key, node) in &self.nodes {
            assert!(node.live > 0, "no node without a live entry");
            assert_eq!(node.slots.iter().filter(|s| s.live()).count(), node.live);
            assert!(node.slots.windows(2).all(|w| w[0].id < w[1].id), "slots in id order");
            assert!(node.slots[0].id >= *key, "a node's key is at or below its first slot");
        }
    }
}

/// How XTRIM (or XADD) trims.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trim {
    /// Keep at most this many entries.
    MaxLen(u64),
    /// Keep no entry below this id.
    MinId(StreamId),
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(ms: u64) -> StreamId {
        StreamId::new(ms, 0)
    }

    fn filled(n: u64) -> Stream {
        let mut s = Stream::default();
        for ms in 1..=n {
            s.append(id(ms), &[(b"f", b"v")]);
        }
        s
    }

    #[test]
    fn ids_step_and_sort_as_their_bytes() {
        assert_eq!(StreamId::new(1, u64::MAX).next(), Some(StreamId::new(2, 0)));
        assert_eq!(StreamId::MAX.next(), None);
        assert_eq!(StreamId::new(2, 0).prev(), Some(StreamId::new(1, u64::MAX)));
        assert_eq!(StreamId::MIN.prev(), None);
        let (a, b) = (StreamId::new(1, 9), StreamId::new(2, 0));
        assert!(a.to_bytes() < b.to_bytes());
        assert_eq!(StreamId::from_bytes(&b.to_bytes()), Some(b));
        assert_eq!(StreamId::new(5, 7).to_string(), "5-7");
    }

    #[test]
    fn nodes_fill_to_the_entry_limit_and_ranges_cross_them() {
        let s = filled(250);
        s.check();
        assert_eq!((s.len(), s.node_count()), (250, 3), "100 entries a node by default");
        let got: Vec<u64> = s.range(id(95), id(205), false).map(|(i, _)| i.ms).collect();
        assert_eq!(got, (95..=205).collect::<Vec<_>>());
        let back: Vec<u64> = s.range(id(95), id(205), true).map(|(i, _)| i.ms).collect();
        assert_eq!(back, (95..=205).rev().collect::<Vec<_>>());
        assert_eq!(s.get(id(7)).unwrap().to_vec(), vec![(b"f".to_vec(), b"v".to_vec())]);
    }

    #[test]
    fn deleting_a_nodes_last_live_entry_removes_the_node() {
        let mut s = filled(150);
        for ms in 101..=150 {
            assert!(s.delete(id(ms)));
        }
        assert!(!s.delete(id(150)), "already gone");
        s.check();
        assert_eq!((s.len(), s.node_count()), (100, 1));
        assert_eq!(s.last_live_id(), Some(id(100)));
    }

    #[test]
    fn trimming_follows_redis_nodes() {
        // Redis' own case: 1,000 entries, MAXLEN ~ 555 keeps 600 (whole nodes of 100).
        let mut s = filled(1000);
        assert_eq!(s.trim(Trim::MaxLen(555), true, 10_000), 400);
        assert_eq!(s.len(), 600);
        assert_eq!(s.trim(Trim::MaxLen(555), false, 0), 45);
        assert_eq!(s.len(), 555);
        assert_eq!(s.first_id, id(446));
        let mut s = filled(10);
        assert_eq!(s.trim(Trim::MinId(id(4)), false, 0), 3);
        assert_eq!(s.first_live_id(), Some(id(4)));
        s.check();
    }

    #[test]
    fn recovery_inserts_anywhere_and_removes_below_a_floor() {
        let mut s = Stream::default();
        for ms in [5, 1, 3, 9, 7] {
            s.restore_entry(id(ms), &[(b"f", b"v")]);
        }
        s.check();
        let got: Vec<u64> = s.range(StreamId::MIN, StreamId::MAX, false).map(|(i, _)| i.ms).collect();
        assert_eq!(got, vec![1, 3, 5, 7, 9]);
        s.remove_below(id(5));
        assert_eq!(s.first_live_id(), Some(id(5)));
        assert_eq!(s.len(), 3);
        s.check();
    }

    #[test]
    fn a_pending_entry_moves_between_consumers() {
        let mut g = Group::new(StreamId::MIN, 0);
        g.ensure_consumer(b"a", 1);
        g.set_pending(id(1), b"a", 1, 1);
        g.set_pending(id(1), b"b", 2, 2);
        assert!(g.consumer(b"a").unwrap().pending.is_empty());
        assert_eq!(g.consumer(b"b").unwrap().pending.len(), 1);
        assert!(g.ack(id(1)));
        assert!(!g.ack(id(1)));
        g.set_pending(id(2), b"a", 3, 1);
        assert_eq!(g.remove_consumer(b"a"), Some(1));
        assert!(g.pending().is_empty());
    }
}
