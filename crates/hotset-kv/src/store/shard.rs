//! One lock-protected partition of a keyspace.
//!
//! Owns: [`Shard`] (keys → entries, the TTL index, the memory counter, the counts of
//! changes and expired keys) and [`LiveEntry`], the write handle through which commands
//! mutate an entry; eviction's primitives (`sample`, `evict`, `reusable_bytes`). Command
//! logic lives in `types/` (`strings.rs`, `hashes.rs`, `keys.rs`) as further `impl
//! Shard` blocks; this file only provides storage primitives.
//!
//! Must never: lock anything (the caller holds this shard's lock), read the
//! clock (callers pass `now`), or hand out an expired entry: the read path
//! (`get`) treats expired entries as missing, the write path (`get_mut`)
//! deletes them on sight (lazy expiry). Every lookup but `peek` notes an access in the
//! entry's stamp (`recency`); metadata reads and logging use `peek`.
//!
//! Invariants:
//! - `ttl` contains a slot iff that slot's entry has `expire_at` set.
//! - `mem` = Σ `entry_cost` over all entries (expired-but-unreclaimed ones
//!   included); every mutation of a value or its expiry goes through
//!   `LiveEntry`/`insert`/`remove_slot`, which adjust it by delta.
//! - No stored hash, list or set is empty (their commands delete such keys).

use std::num::NonZeroU64;

use crate::notify::class;
use crate::store::expiry::TtlIndex;
use crate::store::router::KeyRef;
use crate::store::slab_map::{ScanBudget, SlabCursor, SlabMap, Slot};
use crate::store::small_bytes::SmallBytes;
use crate::value::{Entry, Value};

/// Bookkeeping bytes per key (slab slot, table bucket, control byte).
const KEY_OVERHEAD: usize = SlabMap::<Entry>::ENTRY_OVERHEAD;
/// Extra bytes per key with a TTL (index member + position).
const TTL_OVERHEAD: usize = 2 * std::mem::size_of::<u32>();
/// Message for the one internal invariant `LiveEntry` relies on.
const LIVE_SLOT: &str = "a LiveEntry always points at an occupied slot";

fn entry_cost(key_len: usize, entry: &Entry) -> usize {
    let ttl = if entry.expire_at().is_some() { TTL_OVERHEAD } else { 0 };
    KEY_OVERHEAD + key_len + entry.value.heap_bytes() + ttl
}

/// One partition of a keyspace.
#[derive(Debug, Default)]
pub struct Shard {
    map: SlabMap<Entry>,
    ttl: TtlIndex,
    mem: usize,
    /// The `now` of the last write-path lookup (`get_mut_untouched`), which every insert
    /// follows in the same write: a new entry's access stamp is taken from it, so `insert`
    /// needs no clock reading of its own.
    now: u64,
    /// Changes made so far (events noted, creations aside: Redis' `dirty`, which INFO
    /// reports since the last snapshot).
    changes: u64,
    /// Keys deleted because their deadline passed (Redis' `expired_keys`).
    expired: u64,
    /// Keys the current write touched, while a journal is attached (`None` otherwise):
    /// the keyspace logs their resulting state when the write is done (`persist.rs`).
    pub(crate) touched: Option<Touched>,
}

/// A (key, field) pair of a hash.
pub(crate) type KeyField = (SmallBytes, SmallBytes);

/// What a write did to a shard, as far as the log needs to know.
#[derive(Debug, Default)]
pub(crate) struct Touched {
    /// Keys that may have changed (with repeats); their state is read back when logging.
    pub keys: Vec<SmallBytes>,
    /// (key, field) pairs of hashes that existed and may have changed only in these
    /// fields (with repeats); a key also in `keys` is logged whole instead.
    pub fields: Vec<KeyField>,
    /// Positions `start..end` of lists that existed and whose elements did not shift
    /// (with repeats, possibly empty: a pop writes none but moves the window); a key also
    /// in `keys` is logged whole instead.
    pub spans: Vec<(SmallBytes, i64, i64)>,
    /// The shard was emptied (before the changes to `keys`).
    pub flushed: bool,
    /// Whether the write notes its events (keyspace notifications are on).
    pub notify: bool,
    /// The write's events in order: (class, Redis' event name, key); see `notify.rs`.
    pub events: Vec<(u32, &'static str, SmallBytes)>,
}

/// Mutable access to one live entry of a shard, keeping the shard's
/// bookkeeping (memory, TTL index) in step with every change.
#[derive(Debug)]
pub struct LiveEntry<'a> {
    shard: &'a mut Shard,
    slot: u32,
    hash: u64,
}

impl Shard {
    /// Number of stored keys (including expired ones not yet reclaimed, like
    /// Redis' DBSIZE).
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Approximate bytes used by keys and values.
    pub fn memory_bytes(&self) -> usize {
        self.mem
    }

    /// Bytes the process holds for this shard that no key uses: empty slots the next
    /// keys fill without allocating. Eviction counts them as free (see `evict.rs`).
    pub fn reusable_bytes(&self) -> usize {
        self.map.spare_bytes()
    }

    /// MEMORY USAGE: the bytes `key` costs (its key, value, bookkeeping and TTL entry, as
    /// the shard counts them), `None` when missing.
    pub fn usage(&self, key: KeyRef<'_>, now: u64) -> Option<usize> {
        self.peek(key, now).map(|entry| entry_cost(key.bytes.len(), entry))
    }

    /// Keys of this shard deleted because their deadline passed, since it was created.
    pub fn expired_keys(&self) -> u64 {
        self.expired
    }

    /// Changes made to this shard since it was created (see `changes`).
    pub fn changes(&self) -> u64 {
        self.changes
    }

    /// Number of keys carrying a TTL.
    pub fn volatile_len(&self) -> usize {
        self.ttl.len()
    }

    /// Read path: the live entry for `key`; an expired one reads as missing. A live one's
    /// access stamp notes the read (LRU/LFU, OBJECT IDLETIME).
    pub fn get(&self, key: KeyRef<'_>, now: u64) -> Option<&Entry> {
        let entry = self.peek(key, now)?;
        entry.touch(now);
        Some(entry)
    }

    /// `get` without noting an access: what Redis' `LOOKUP_NOTOUCH` readers see (EXISTS,
    /// TYPE, TTL, OBJECT, eviction's own sampling).
    pub fn peek(&self, key: KeyRef<'_>, now: u64) -> Option<&Entry> {
        let slot = self.map.find(key.hash, key.bytes)?;
        let entry = &self.map.get(slot)?.value;
        (!entry.is_expired(now)).then_some(entry)
    }

    /// Write path: the live entry for `key`, deleting it first if expired.
    pub fn get_mut(&mut self, key: KeyRef<'_>, now: u64) -> Option<LiveEntry<'_>> {
        self.touch(key.bytes);
        self.get_mut_untouched(key, now)
    }

    /// `get_mut` for a write that notes what it changes itself (`LiveEntry::touch_fields`,
    /// or `touch` on a key it deletes or replaces); an expired entry it deletes is noted.
    pub fn get_mut_untouched(&mut self, key: KeyRef<'_>, now: u64) -> Option<LiveEntry<'_>> {
        self.now = now;
        let slot = self.map.find(key.hash, key.bytes)?;
        let entry = &self.map.get(slot)?.value;
        if entry.is_expired(now) {
            self.touch(key.bytes);
            self.event(class::EXPIRED, "expired", key.bytes);
            self.remove_slot(key.hash, slot);
            self.expired += 1;
            return None;
        }
        entry.touch(now);
        Some(LiveEntry { shard: self, slot, hash: key.hash })
    }

    /// Stores a new key. The caller must have established (via `get_mut`)
    /// that `key` is absent.
    pub fn insert(&mut self, key: KeyRef<'_>, entry: Entry) {
        self.touch(key.bytes);
        self.event(class::NEW, "new", key.bytes);
        self.mem += entry_cost(key.bytes.len(), &entry);
        if entry.stamp() == 0 {
            entry.set_stamp(crate::recency::fresh(self.now));
        }
        let has_ttl = entry.expire_at().is_some();
        let slot = self.map.insert_new(key.hash, key.bytes.into(), entry);
        if has_ttl {
            self.ttl.insert(slot);
        }
    }

    /// SET semantics: stores `value` under `key`, replacing whatever is there.
    pub fn put(&mut self, key: KeyRef<'_>, now: u64, value: Value, expire_at: Option<NonZeroU64>) {
        match self.get_mut(key, now) {
            Some(mut live) => {
                live.replace(value);
                live.set_expire_at(expire_at);
            }
            None => self.insert(key, Entry::new(value, expire_at)),
        }
    }

    /// Deletes `key`, returning its entry if it was live.
    pub fn remove(&mut self, key: KeyRef<'_>, now: u64) -> Option<Entry> {
        self.get_mut(key, now).map(LiveEntry::remove)
    }

    /// Removes everything.
    pub fn clear(&mut self) {
        if let Some(touched) = &mut self.touched {
            touched.keys.clear();
            touched.fields.clear();
            touched.spans.clear();
            touched.flushed = true;
        }
        self.map.clear();
        self.ttl.clear();
        self.mem = 0;
    }

    /// SWAPDB: this shard and `other` (the same shard of another keyspace) exchange their
    /// keys; each logs as emptied and then holding every live key it has now. The change
    /// and expiry counters stay: they count what happened in their keyspace.
    pub(crate) fn swap_contents(&mut self, other: &mut Shard, now: u64) {
        std::mem::swap(&mut self.map, &mut other.map);
        std::mem::swap(&mut self.ttl, &mut other.ttl);
        std::mem::swap(&mut self.mem, &mut other.mem);
        for shard in [self, other] {
            shard.changes += 1;
            let Shard { map, touched, .. } = shard;
            if let Some(touched) = touched {
                touched.keys.clear();
                touched.fields.clear();
                touched.spans.clear();
                touched.flushed = true;
                let live = map.iter().filter(|(_, slot)| !slot.value.is_expired(now));
                touched.keys.extend(live.map(|(_, slot)| SmallBytes::from(&*slot.key)));
            }
        }
    }

    /// Notes an event of the current write (a no-op unless notifications are on).
    pub(crate) fn event(&mut self, class: u32, name: &'static str, key: &[u8]) {
        // Every change notes an event (a write that changes nothing notes none); a key's
        // creation comes with the event of the write that created it.
        self.changes += u64::from(class != class::NEW);
        if let Some(touched) = &mut self.touched
            && touched.notify
        {
            touched.events.push((class, name, key.into()));
        }
    }

    /// Notes a key the current write may change (every change goes through `get_mut` or
    /// `insert`, so this sees them all).
    pub(crate) fn touch(&mut self, key: &[u8]) {
        if let Some(touched) = &mut self.touched {
            touched.keys.push(key.into());
        }
    }

    /// A uniformly random key of the shard if the one drawn is live (`None` when the shard
    /// is empty or the key drawn has expired); `pick(n)` returns a number below `n`.
    pub fn random_live(&self, now: u64, pick: impl FnMut(usize) -> usize) -> Option<&[u8]> {
        let slot = self.map.random(pick)?;
        (!slot.value.is_expired(now)).then_some(&*slot.key)
    }

    /// Eviction's sample: up to `count` random keys (only those with a TTL when
    /// `volatile`), each with its entry, seen without counting as an access; `pick(n)`
    /// returns a number below `n`. A key may come twice.
    pub fn sample(
        &self,
        volatile: bool,
        count: usize,
        mut pick: impl FnMut(usize) -> usize,
        mut visit: impl FnMut(&[u8], &Entry),
    ) {
        for _ in 0..count {
            let found = if volatile {
                self.ttl.random(&mut pick).and_then(|slot| self.map.get(slot))
            } else {
                self.map.random(&mut pick)
            };
            let Some(found) = found else { return };
            visit(&found.key, &found.value);
        }
    }

    /// Eviction's delete: removes `key` (when `volatile`, only if it carries a TTL) and
    /// notes an `evicted` event, or `expired` for a key already past its deadline, which
    /// goes the same way. The bytes the shard counted for it, `None` when it was not
    /// there (another client deleted it since it was sampled) or not volatile.
    pub fn evict(&mut self, key: KeyRef<'_>, now: u64, volatile: bool) -> Option<(usize, bool)> {
        let slot = self.map.find(key.hash, key.bytes)?;
        let entry = &self.map.get(slot)?.value;
        if volatile && entry.expire_at().is_none() {
            return None;
        }
        let cost = entry_cost(key.bytes.len(), entry);
        let expired = entry.is_expired(now);
        self.touch(key.bytes);
        if expired {
            self.event(class::EXPIRED, "expired", key.bytes);
            self.expired += 1;
        } else {
            self.event(class::EVICTED, "evicted", key.bytes);
        }
        self.remove_slot(key.hash, slot);
        Some((cost, expired))
    }

    /// Live (key, entry) pairs in storage order.
    pub fn iter_live(&self, now: u64) -> impl Iterator<Item = (&[u8], &Entry)> {
        self.map.iter().filter(move |(_, s)| !s.value.is_expired(now)).map(|(_, s)| (&*s.key, &s.value))
    }

    /// One SCAN step over this shard; expired entries are skipped.
    pub fn scan(
        &self,
        cursor: SlabCursor,
        budget: &mut ScanBudget,
        now: u64,
        mut visit: impl FnMut(&[u8], &Entry),
    ) -> Option<SlabCursor> {
        self.map.scan(cursor, budget, |slot| {
            if !slot.value.is_expired(now) {
                visit(&slot.key, &slot.value);
            }
        })
    }

    /// Active expiry: examines up to `budget` keys that carry a TTL, in
    /// round-robin order, deleting the expired ones. Returns (examined,
    /// deleted). Round-robin (rather than Redis' random sampling) sweeps the
    /// index in laps, and each lap examines every key that kept its TTL for
    /// the whole lap, so no volatile key is starved.
    /// The expired keys are added to `expired` when given (for their `expired` events).
    pub fn expire_cycle(
        &mut self,
        now: u64,
        budget: usize,
        mut expired: Option<&mut Vec<SmallBytes>>,
    ) -> (usize, usize) {
        // Each examination removes a member or advances past one, so capping
        // at the index size bounds the work even for a huge budget.
        let examined = budget.min(self.ttl.len());
        let mut removed = 0;
        for _ in 0..examined {
            let Some(slot) = self.ttl.candidate() else {
                break;
            };
            match self.map.get(slot) {
                Some(s) if s.value.is_expired(now) => {
                    let hash = crate::store::router::hash_bytes(&s.key);
                    if let Some(expired) = expired.as_deref_mut() {
                        expired.push(s.key.clone());
                    }
                    // Removal swaps another member into the cursor position,
                    // so the cursor stays put.
                    self.remove_slot(hash, slot);
                    self.expired += 1;
                    removed += 1;
                }
                _ => self.ttl.advance(),
            }
        }
        (examined, removed)
    }

    /// Removes the entry at `slot`, keeping the TTL index and memory counter
    /// exact, and compacts the slab when it became sparse.
    fn remove_slot(&mut self, hash: u64, slot: u32) -> Option<Entry> {
        let Slot { key, value } = self.map.remove(hash, slot)?;
        self.ttl.remove(slot);
        self.mem -= entry_cost(key.len(), &value);
        if self.map.compact_if_sparse() {
            self.rebuild_ttl_index();
        }
        Some(value)
    }

    /// Compaction renumbered the slots, so rebuild the TTL index from them.
    fn rebuild_ttl_index(&mut self) {
        self.ttl.clear();
        for (slot, s) in self.map.iter() {
            if s.value.expire_at().is_some() {
                self.ttl.insert(slot);
            }
        }
    }
}

impl LiveEntry<'_> {
    fn slot(&self) -> &Slot<Entry> {
        self.shard.map.get(self.slot).expect(LIVE_SLOT)
    }

    /// Notes fields of this entry's hash that the current write may change (see
    /// `Shard::get_mut_untouched`).
    pub fn touch_fields<'f>(&mut self, fields: impl Iterator<Item = &'f [u8]>) {
        let Shard { map, touched, .. } = &mut *self.shard;
        if let Some(touched) = touched {
            let key = &map.get(self.slot).expect(LIVE_SLOT).key;
            touched.fields.extend(fields.map(|field| (key.clone(), SmallBytes::from(field))));
        }
    }

    /// Notes positions `span` of this entry's list as written by the current write (an
    /// empty span for one that only moves the list's ends), see `Touched::spans`.
    pub fn touch_span(&mut self, span: std::ops::Range<i64>) {
        let Shard { map, touched, .. } = &mut *self.shard;
        if let Some(touched) = touched {
            let key = &map.get(self.slot).expect(LIVE_SLOT).key;
            touched.spans.push((key.clone(), span.start, span.end));
        }
    }

    /// The stored value.
    pub fn value(&self) -> &Value {
        &self.slot().value.value
    }

    /// The stored deadline.
    pub fn expire_at(&self) -> Option<NonZeroU64> {
        self.slot().value.expire_at()
    }

    /// Mutates the value in place, re-accounting its size. Callers must not
    /// leave a hash empty (use [`remove`](Self::remove) instead).
    pub fn update<R>(&mut self, f: impl FnOnce(&mut Value) -> R) -> R {
        let slot = self.shard.map.get_mut(self.slot).expect(LIVE_SLOT);
        let before = slot.value.value.heap_bytes();
        let result = f(&mut slot.value.value);
        let after = slot.value.value.heap_bytes();
        self.shard.mem = self.shard.mem - before + after;
        result
    }

    /// Replaces the value, returning the old one. The TTL is untouched.
    pub fn replace(&mut self, value: Value) -> Value {
        self.update(|v| std::mem::replace(v, value))
    }

    /// Sets or clears the deadline, keeping the TTL index in step.
    pub fn set_expire_at(&mut self, expire_at: Option<NonZeroU64>) {
        let slot = self.shard.map.get_mut(self.slot).expect(LIVE_SLOT);
        let had = slot.value.expire_at().is_some();
        slot.value.set_expire_at(expire_at);
        match (had, expire_at.is_some()) {
            (false, true) => {
                self.shard.ttl.insert(self.slot);
                self.shard.mem += TTL_OVERHEAD;
            }
            (true, false) => {
                self.shard.ttl.remove(self.slot);
                self.shard.mem -= TTL_OVERHEAD;
            }
            _ => {}
        }
    }

    /// Deletes the key, returning its entry.
    pub fn remove(self) -> Entry {
        self.shard.remove_slot(self.hash, self.slot).expect(LIVE_SLOT)
    }
}
