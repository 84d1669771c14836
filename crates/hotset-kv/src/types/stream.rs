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
//! what makes `~` trim where Redis trims. A node packs its entries into one buffer, as a
//! listpack does: an id as deltas from the node's key, and the values alone when the
//! field names are the node's first entry's (`Node`), so an entry costs about its
//! values' bytes, not an allocation; finding an id walks its node (at most
//! `stream-node-max-entries` entries).
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

fn put_len(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

fn take_len(bytes: &[u8], at: &mut usize) -> u64 {
    let (mut n, mut shift) = (0u64, 0);
    loop {
        let byte = bytes[*at];
        *at += 1;
        n |= u64::from(byte & 0x7f) << shift;
        if byte < 0x80 {
            return n;
        }
        shift += 7;
    }
}

/// Skips one length-prefixed string.
fn skip_bytes(bytes: &[u8], at: &mut usize) {
    let len = take_len(bytes, at) as usize;
    *at += len;
}

fn take_bytes<'a>(bytes: &'a [u8], at: &mut usize) -> &'a [u8] {
    let len = take_len(bytes, at) as usize;
    let taken = &bytes[*at..*at + len];
    *at += len;
    taken
}

/// One entry's fields, as stored: iterate for the (field, value) pairs. An entry whose
/// field names are its node's first entry's stores its values only (as Redis' listpack
/// entries flagged SAMEFIELDS do), and takes the names from `master`.
#[derive(Debug, Clone, Copy)]
pub struct Fields<'a> {
    /// The node's field names, when this entry has the same.
    master: Option<&'a [Box<[u8]>]>,
    /// Values only (with `master`), or a count then the names and values interleaved.
    bytes: &'a [u8],
}

impl<'a> Fields<'a> {
    /// How many (field, value) pairs.
    pub fn len(&self) -> usize {
        match self.master {
            Some(names) => names.len(),
            None => take_len(self.bytes, &mut 0) as usize,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The pairs, in the order XADD gave them.
    pub fn pairs(self) -> impl Iterator<Item = (&'a [u8], &'a [u8])> + 'a {
        let bytes = self.bytes;
        let mut at = 0;
        let count = match self.master {
            Some(names) => names.len(),
            None => take_len(bytes, &mut at) as usize,
        };
        let master = self.master;
        (0..count).map(move |i| {
            let field = match master {
                Some(names) => &names[i][..],
                None => take_bytes(bytes, &mut at),
            };
            (field, take_bytes(bytes, &mut at))
        })
    }

    /// The pairs, copied.
    pub fn to_vec(self) -> Vec<(Vec<u8>, Vec<u8>)> {
        self.pairs().map(|(f, v)| (f.to_vec(), v.to_vec())).collect()
    }
}

/// An entry's flag bits in its node.
const DELETED: u8 = 1;
const SAME_FIELDS: u8 = 2;

/// One decoded entry of a node: its id, flags, where its fields start and where it ends.
#[derive(Debug, Clone, Copy)]
struct Found {
    id: StreamId,
    flags: u8,
    /// Offset of the entry (its flags byte).
    at: usize,
    fields: usize,
    end: usize,
}

impl Found {
    fn live(&self) -> bool {
        self.flags & DELETED == 0
    }
}

/// A run of entries, as a Redis radix-tree node holds them, packed into one buffer:
///
/// ```text
///   entry = flags:u8  ms-delta:varint (from the node's key)  seq:varint
///           SAME_FIELDS: value*                     (names: the node's `master`)
///           otherwise:   count (field value)*
/// ```
#[derive(Debug, Clone, Default)]
struct Node {
    /// The node's key (its first id when it was made).
    key: StreamId,
    /// The field names of the node's first entry.
    master: Box<[Box<[u8]>]>,
    data: Vec<u8>,
    /// Entries held, deleted ones included (what fills a node, as in Redis).
    count: usize,
    /// Entries not deleted.
    live: usize,
    /// Bytes of deleted entries still in `data` (reclaimed by `compact`).
    dead_bytes: usize,
    /// The id of the last entry held (deleted or not).
    last: StreamId,
    /// Where that entry starts, so the entry XADD just added is found without a walk;
    /// `usize::MAX` once compaction dropped it.
    last_at: usize,
}

impl Node {
    fn new(key: StreamId, pairs: &[(&[u8], &[u8])]) -> Self {
        let master = pairs.iter().map(|(field, _)| Box::from(*field)).collect();
        Node { key, master, last: key, last_at: usize::MAX, ..Node::default() }
    }

    fn heap_bytes(&self) -> usize {
        self.data.capacity() + self.master.iter().map(|name| name.len() + 16).sum::<usize>()
    }

    /// Redis' estimate of the node's listpack size, for `stream-node-max-bytes`.
    fn listpack_bytes(&self) -> usize {
        self.data.len() + self.master.iter().map(|name| name.len() + 1).sum::<usize>()
    }

    /// The entry at `at`.
    fn decode(&self, at: usize) -> Found {
        let data = &self.data;
        let flags = data[at];
        let mut cursor = at + 1;
        let ms = self.key.ms + take_len(data, &mut cursor);
        let seq = take_len(data, &mut cursor);
        let fields = cursor;
        let pairs = if flags & SAME_FIELDS != 0 { self.master.len() } else { take_len(data, &mut cursor) as usize };
        let strings = if flags & SAME_FIELDS != 0 { pairs } else { pairs * 2 };
        for _ in 0..strings {
            skip_bytes(data, &mut cursor);
        }
        Found { id: StreamId::new(ms, seq), flags, at, fields, end: cursor }
    }

    /// Every entry held, deleted ones included, in id order.
    fn scan(&self) -> impl Iterator<Item = Found> + '_ {
        let mut at = 0;
        std::iter::from_fn(move || {
            (at < self.data.len()).then(|| {
                let found = self.decode(at);
                at = found.end;
                found
            })
        })
    }

    fn fields(&self, found: &Found) -> Fields<'_> {
        let master = (found.flags & SAME_FIELDS != 0).then_some(&self.master[..]);
        Fields { master, bytes: &self.data[found.fields..found.end] }
    }

    /// An entry's bytes.
    fn encode(&self, id: StreamId, pairs: &[(&[u8], &[u8])]) -> Vec<u8> {
        let same =
            pairs.len() == self.master.len() && pairs.iter().zip(&self.master[..]).all(|((f, _), m)| *f == &m[..]);
        let mut out = Vec::with_capacity(8 + pairs.iter().map(|(f, v)| f.len() + v.len() + 2).sum::<usize>());
        out.push(if same { SAME_FIELDS } else { 0 });
        put_len(&mut out, id.ms - self.key.ms);
        put_len(&mut out, id.seq);
        if !same {
            put_len(&mut out, pairs.len() as u64);
        }
        for (field, value) in pairs {
            if !same {
                put_len(&mut out, field.len() as u64);
                out.extend_from_slice(field);
            }
            put_len(&mut out, value.len() as u64);
            out.extend_from_slice(value);
        }
        out
    }

    /// Adds an entry after every one held.
    fn push(&mut self, id: StreamId, pairs: &[(&[u8], &[u8])]) {
        debug_assert!(self.count == 0 || id > self.last);
        let bytes = self.encode(id, pairs);
        self.last_at = self.data.len();
        self.data.extend_from_slice(&bytes);
        self.count += 1;
        self.live += 1;
        self.last = id;
    }

    /// Adds an entry in id order (recovery); `id` is at or above the key.
    fn insert(&mut self, id: StreamId, pairs: &[(&[u8], &[u8])]) {
        let at = self.scan().find(|found| found.id > id).map_or(self.data.len(), |found| found.at);
        let bytes = self.encode(id, pairs);
        let len = bytes.len();
        self.data.splice(at..at, bytes);
        if id > self.last || self.count == 0 {
            self.last_at = at;
        } else if self.last_at != usize::MAX && at <= self.last_at {
            self.last_at += len;
        }
        self.count += 1;
        self.live += 1;
        self.last = self.last.max(id);
    }

    /// The entry with id `id`: the live one if any (recovery may put one beside a deleted
    /// one of the same id), else a deleted one.
    fn find(&self, id: StreamId) -> Option<Found> {
        if id == self.last && self.last_at != usize::MAX {
            let found = self.decode(self.last_at);
            debug_assert_eq!(found.id, id, "last_at names the last entry");
            if found.live() {
                return Some(found);
            }
        }
        let mut result = None;
        for found in self.scan().take_while(|found| found.id <= id).filter(|found| found.id == id) {
            result = Some(found);
            if found.live() {
                break;
            }
        }
        result
    }

    /// Marks an entry deleted; false when it already was.
    fn delete(&mut self, found: &Found) -> bool {
        if !found.live() {
            return false;
        }
        self.data[found.at] |= DELETED;
        self.live -= 1;
        self.dead_bytes += found.end - found.at;
        self.compact();
        true
    }

    /// Drops deleted entries' bytes once they are most of the buffer (`count` keeps
    /// them: they still fill the node, as in Redis).
    fn compact(&mut self) {
        if self.dead_bytes * 2 <= self.data.len() {
            return;
        }
        let mut data = Vec::with_capacity(self.data.len() - self.dead_bytes);
        let mut last_at = usize::MAX;
        for found in self.scan().filter(Found::live) {
            if found.id == self.last {
                last_at = data.len();
            }
            data.extend_from_slice(&self.data[found.at..found.end]);
        }
        self.data = data;
        self.last_at = last_at;
        self.dead_bytes = 0;
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
            node.listpack_bytes() + entry_bytes >= max_bytes || (max_entries > 0 && node.count >= max_entries)
        });
        if full {
            // A full node takes no more entries: give back what its buffer over-reserved
            // (Redis shrinks its listpack likewise).
            if let Some(mut last) = self.nodes.last_entry() {
                let node = last.get_mut();
                let before = node.heap_bytes();
                node.data.shrink_to_fit();
                self.node_bytes = self.node_bytes + node.heap_bytes() - before;
            }
            let node = Node::new(id, pairs);
            self.node_bytes += node.heap_bytes();
            self.nodes.insert(id, node);
        }
        let mut last = self.nodes.last_entry().expect("a node to append to");
        let node = last.get_mut();
        let before = node.heap_bytes();
        node.push(id, pairs);
        self.node_bytes = self.node_bytes + node.heap_bytes() - before;
        self.length += 1;
        self.entries_added += 1;
        self.last_id = id;
        if self.length == 1 {
            self.first_id = id;
        }
    }

    /// The node holding `id` (the last one keyed at or before it) and the entry, deleted
    /// or not.
    fn node_of(&self, id: StreamId) -> Option<(StreamId, Found)> {
        let (&key, node) = self.nodes.range(..=id).next_back()?;
        Some((key, node.find(id)?))
    }

    /// The fields of live entry `id`.
    pub fn get(&self, id: StreamId) -> Option<Fields<'_>> {
        let (key, found) = self.node_of(id)?;
        found.live().then(|| self.nodes[&key].fields(&found))
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
        fn entries(node: &Node) -> impl Iterator<Item = (StreamId, Fields<'_>)> {
            node.scan().filter(Found::live).map(move |found| (found.id, node.fields(&found)))
        }
        if rev {
            // A node decodes forwards only: at most a node's entries are held to turn them.
            Box::new(nodes.rev().flat_map(move |(_, node)| {
                let held: Vec<_> = entries(node).filter(|(id, _)| *id >= start && *id <= end).collect();
                held.into_iter().rev()
            }))
        } else {
            Box::new(
                nodes
                    .flat_map(|(_, node)| entries(node))
                    .skip_while(move |(id, _)| *id < start)
                    .take_while(move |(id, _)| *id <= end),
            )
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
        let Some((key, found)) = self.node_of(id) else { return false };
        let node = self.nodes.get_mut(&key).expect("the node was just found");
        let before = node.heap_bytes();
        if !node.delete(&found) {
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
            if node.last < floor {
                self.remove_first_node();
                continue;
            }
            let doomed: Vec<StreamId> =
                node.scan().filter(|found| found.live() && found.id < floor).map(|found| found.id).collect();
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
        while let Some((_, node)) = self.nodes.first_key_value() {
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
                Trim::MinId(min) => node.last < min,
            };
            if whole {
                self.remove_first_node();
                deleted += entries;
                continue;
            }
            if approx {
                break;
            }
            let ids: Vec<StreamId> = node.scan().filter(Found::live).map(|found| found.id).collect();
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
        let after_all = self.nodes.last_key_value().is_none_or(|(_, node)| node.last < id);
        if after_all {
            let (last_id, added, first) = (self.last_id, self.entries_added, self.first_id);
            self.last_id = StreamId::MIN;
            self.entries_added = 0;
            self.append(id, pairs);
            (self.last_id, self.entries_added) = (last_id.max(id), added);
            self.first_id = if self.length == 1 { id } else { first };
            return;
        }
        self.length += 1;
        match self.nodes.range_mut(..=id).next_back() {
            Some((_, node)) => {
                let before = node.heap_bytes();
                node.insert(id, pairs);
                self.node_bytes = self.node_bytes + node.heap_bytes() - before;
            }
            // Below every node: a node of its own (ids in a node are kept from its key up).
            None => {
                let mut node = Node::new(id, pairs);
                node.push(id, pairs);
                self.node_bytes += node.heap_bytes();
                self.nodes.insert(id, node);
            }
        }
    }

    /// Checks the invariants (tests and debug builds).
    pub fn check(&self) {
        let live: usize = self.nodes.values().map(|node| node.live).sum();
        assert_eq!(live as u64, self.length, "length counts the live entries");
        for (key, node) in &self.nodes {
            assert!(node.live > 0, "no node without a live entry");
            let held: Vec<Found> = node.scan().collect();
            assert_eq!(held.iter().filter(|found| found.live()).count(), node.live);
            assert!(held.windows(2).all(|w| w[0].id <= w[1].id), "entries in id order");
            assert!(
                held.iter().all(|found| found.id >= *key && found.id <= node.last),
                "ids within the node's key and last"
            );
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
    fn entries_with_the_nodes_field_names_keep_values_only_and_read_back_whole() {
        let mut s = Stream::default();
        s.append(id(1), &[(b"name", b"ann"), (b"age", b"7")]);
        s.append(id(2), &[(b"name", b"bob"), (b"age", b"9")]);
        s.append(id(3), &[(b"other", b"x")]);
        s.append(id(4), &[(b"age", b"1"), (b"name", b"cy")]);
        let node = s.nodes.values().next().unwrap();
        let flags: Vec<u8> = node.scan().map(|found| found.flags).collect();
        assert_eq!(flags, vec![SAME_FIELDS, SAME_FIELDS, 0, 0], "the same names in the same order only");
        let read = |ms| s.get(id(ms)).unwrap().to_vec();
        let pair = |f: &str, v: &str| (f.as_bytes().to_vec(), v.as_bytes().to_vec());
        assert_eq!(read(2), vec![pair("name", "bob"), pair("age", "9")]);
        assert_eq!(read(3), vec![pair("other", "x")]);
        assert_eq!(read(4), vec![pair("age", "1"), pair("name", "cy")]);
        assert_eq!(s.get(id(2)).unwrap().len(), 2);
    }

    #[test]
    fn deleted_entries_are_compacted_away_but_still_fill_their_node() {
        let mut s = filled(100);
        for ms in 1..=80 {
            assert!(s.delete(id(ms)));
        }
        s.check();
        let node = s.nodes.values().next().unwrap();
        assert!(node.data.len() < 20 * 8, "deleted entries' bytes reclaimed ({} bytes)", node.data.len());
        assert_eq!((node.count, node.live), (100, 20));
        s.append(id(101), &[(b"f", b"v")]);
        assert_eq!(s.node_count(), 2, "a node full of deleted entries takes no more, as in Redis");
        // Recovery may bring back an id beside its deleted copy: the live one is found.
        s.restore_entry(id(5), &[(b"f", b"back")]);
        assert_eq!(s.get(id(5)).unwrap().to_vec(), vec![(b"f".to_vec(), b"back".to_vec())]);
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
