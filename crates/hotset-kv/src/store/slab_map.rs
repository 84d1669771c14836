//! A byte-keyed map whose entries never move while they are present.
//!
//! Owns: [`SlabMap`], the storage behind both a shard's keys and a hash
//! value's fields, and its resumable [`SlabCursor`] scan.
//!
//! Must never: relocate a live entry except in [`SlabMap::compact_if_sparse`],
//! and that must bump the epoch. SCAN/HSCAN completeness rests on this.
//!
//! Invariants:
//! - Entries live in `slots` (a slab); a hashbrown `HashTable<u32>` maps a
//!   key's hash to its slot index, and every index in it names an occupied
//!   slot. Freed slots go on a free list and are reused by later inserts.
//! - Hence an entry's slot index is fixed from insertion to removal, and a
//!   scan that walks slot indices upward visits every entry that stays present
//!   for the whole walk. Entries inserted mid-walk may land behind the cursor
//!   and be missed, which Redis allows.
//! - Compaction (only when over half the slots are free) moves entries and so
//!   increments `epoch`; a cursor carrying a stale epoch restarts from slot 0,
//!   trading duplicates (allowed) for never skipping (not allowed).
//! - Compaction needs at least `slots/2` removals since the last one, so its
//!   O(n) cost is amortised O(1) per removal.

use hashbrown::HashTable;

use crate::store::router::hash_bytes;
use crate::store::small_bytes::SmallBytes;

/// Below this many slots the waste of free slots is not worth a rebuild.
const COMPACT_MIN_SLOTS: usize = 64;
/// Slots per chunk past the first (see [`Slots`]): 1024 slots of a keyspace's shard are
/// 64 KiB.
const CHUNK_BITS: u32 = 10;
const CHUNK: usize = 1 << CHUNK_BITS;

/// The slab's storage: a first chunk that grows as a `Vec` does, up to [`CHUNK`] slots,
/// then further chunks of exactly [`CHUNK`] slots.
///
/// Why not one `Vec`: a `Vec` doubles, so a big map holds up to as much empty capacity as
/// it uses, allocated in one step. Under `maxmemory` that step overshoots the limit by half
/// the keyspace's slot memory, and eviction cannot take it back (freed slots stay in the
/// slab for the next keys). In chunks, a map holds at most one chunk it has not filled, the
/// growth step is one chunk, and no slot is ever copied to grow.
#[derive(Debug, Clone)]
struct Slots<V> {
    chunks: Vec<Vec<Option<Slot<V>>>>,
    len: usize,
}

impl<V> Default for Slots<V> {
    fn default() -> Self {
        Self { chunks: Vec::new(), len: 0 }
    }
}

impl<V> Slots<V> {
    fn len(&self) -> usize {
        self.len
    }

    fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Slots allocated (filled or not), in O(1): every chunk but the first holds exactly
    /// `CHUNK`.
    fn capacity(&self) -> usize {
        self.chunks.first().map_or(0, |first| first.capacity() + (self.chunks.len() - 1) * CHUNK)
    }

    fn get(&self, at: usize) -> Option<&Option<Slot<V>>> {
        self.chunks.get(at >> CHUNK_BITS)?.get(at & (CHUNK - 1))
    }

    fn get_mut(&mut self, at: usize) -> Option<&mut Option<Slot<V>>> {
        self.chunks.get_mut(at >> CHUNK_BITS)?.get_mut(at & (CHUNK - 1))
    }

    fn push(&mut self, slot: Option<Slot<V>>) {
        if self.chunks.last().is_none_or(|chunk| chunk.len() == CHUNK) {
            // The first chunk starts empty and grows; the others are allocated whole.
            let capacity = if self.chunks.is_empty() { 0 } else { CHUNK };
            self.chunks.push(Vec::with_capacity(capacity));
        }
        self.chunks.last_mut().expect("a chunk with room was just ensured").push(slot);
        self.len += 1;
    }

    fn iter(&self) -> impl Iterator<Item = &Option<Slot<V>>> {
        self.chunks.iter().flatten()
    }
}

/// One occupied slab position.
#[derive(Debug, Clone)]
pub struct Slot<V> {
    /// The entry's key (or field) bytes, inline when short (see `small_bytes`).
    pub key: SmallBytes,
    /// The entry's payload.
    pub value: V,
}

/// A position in a [`SlabMap`] scan: slot index plus the epoch it refers to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SlabCursor {
    /// Compaction epoch the slot index belongs to.
    pub epoch: u16,
    /// Next slot index to examine.
    pub slot: u32,
}

/// Work limits for one scan call, shared across maps so a keyspace scan can
/// spend one budget over several shards.
#[derive(Debug, Clone, Copy)]
pub struct ScanBudget {
    /// Occupied slots still to visit (Redis' COUNT).
    pub live: usize,
    /// Slot positions (occupied or free) still to examine; bounds the time
    /// spent on a sparse slab, like Redis' `maxiterations = count * 10`.
    pub positions: usize,
}

impl ScanBudget {
    /// Budget for a SCAN-family call with the given COUNT hint (0 acts as 1).
    pub fn for_count(count: usize) -> Self {
        let live = count.max(1);
        Self { live, positions: live.saturating_mul(10) }
    }

    /// Whether the call must stop.
    pub fn exhausted(&self) -> bool {
        self.live == 0 || self.positions == 0
    }
}

/// Byte-keyed map with stable entry positions (see module docs).
#[derive(Debug, Clone)]
pub struct SlabMap<V> {
    slots: Slots<V>,
    free: Vec<u32>,
    index: HashTable<u32>,
    epoch: u16,
}

impl<V> Default for SlabMap<V> {
    fn default() -> Self {
        Self { slots: Slots::default(), free: Vec::new(), index: HashTable::new(), epoch: 0 }
    }
}

/// Hash of the key stored at `slot`, used when the table rehashes. A missing
/// slot cannot be referenced by the table (invariant), so 0 is never used.
fn slot_hash<V>(slots: &Slots<V>, slot: u32) -> u64 {
    slots.get(slot as usize).and_then(Option::as_ref).map_or(0, |s| hash_bytes(&s.key))
}

impl<V> SlabMap<V> {
    /// Approximate bytes of bookkeeping per entry (slab slot, table bucket and
    /// control byte), for memory accounting.
    pub const ENTRY_OVERHEAD: usize = std::mem::size_of::<Option<Slot<V>>>() + std::mem::size_of::<u32>() + 1;

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.index.len()
    }

    /// Whether there are no entries.
    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }

    /// Slot index of `key`, if present.
    pub fn find(&self, hash: u64, key: &[u8]) -> Option<u32> {
        let slots = &self.slots;
        self.index
            .find(hash, |&i| slots.get(i as usize).and_then(Option::as_ref).is_some_and(|s| *s.key == *key))
            .copied()
    }

    /// The entry at `slot`, if occupied.
    pub fn get(&self, slot: u32) -> Option<&Slot<V>> {
        self.slots.get(slot as usize).and_then(Option::as_ref)
    }

    /// The entry at `slot`, if occupied, mutably. The key must not be changed.
    pub fn get_mut(&mut self, slot: u32) -> Option<&mut Slot<V>> {
        self.slots.get_mut(slot as usize).and_then(Option::as_mut)
    }

    /// Inserts an entry whose key the caller has checked is absent; returns
    /// its slot index, which stays valid until it is removed.
    pub fn insert_new(&mut self, hash: u64, key: SmallBytes, value: V) -> u32 {
        let entry = Some(Slot { key, value });
        let slot = match self.free.pop() {
            Some(slot) => {
                *self.slots.get_mut(slot as usize).expect("a freed slot stays allocated") = entry;
                slot
            }
            None => {
                let slot = u32::try_from(self.slots.len()).expect("a slab map holds fewer than 2^32 entries");
                self.slots.push(entry);
                slot
            }
        };
        let slots = &self.slots;
        self.index.insert_unique(hash, slot, |&i| slot_hash(slots, i));
        slot
    }

    /// Removes the entry at `slot` (whose key hashes to `hash`).
    pub fn remove(&mut self, hash: u64, slot: u32) -> Option<Slot<V>> {
        let Ok(found) = self.index.find_entry(hash, |&i| i == slot) else {
            return None;
        };
        found.remove();
        let taken = self.slots.get_mut(slot as usize).and_then(Option::take);
        self.free.push(slot);
        taken
    }

    /// Removes everything. Bumps the epoch so stale cursors restart.
    pub fn clear(&mut self) {
        *self = Self { epoch: self.epoch.wrapping_add(1), ..Self::default() };
    }

    /// Rebuilds the slab without holes when more than half of it is free.
    /// Returns whether entries moved (callers holding slot indices elsewhere
    /// must then rebuild them).
    pub fn compact_if_sparse(&mut self) -> bool {
        if self.is_empty() && !self.slots.is_empty() {
            self.clear();
            return true;
        }
        if self.slots.len() < COMPACT_MIN_SLOTS || self.free.len() * 2 <= self.slots.len() {
            return false;
        }
        let mut live = Slots::default();
        for chunk in std::mem::take(&mut self.slots).chunks {
            chunk.into_iter().filter(Option::is_some).for_each(|slot| live.push(slot));
        }
        self.slots = live;
        self.free = Vec::new();
        self.index = HashTable::with_capacity(self.slots.len());
        let slots = &self.slots;
        for (i, slot) in slots.iter().enumerate() {
            let hash = slot.as_ref().map_or(0, |s| hash_bytes(&s.key));
            self.index.insert_unique(hash, i as u32, |&j| slot_hash(slots, j));
        }
        self.epoch = self.epoch.wrapping_add(1);
        true
    }

    /// Bytes held but empty (freed slots, slots and table buckets allocated and not used
    /// yet): what the next inserts fill without allocating.
    pub fn spare_bytes(&self) -> usize {
        let slots =
            (self.slots.capacity() - self.slots.len() + self.free.len()) * std::mem::size_of::<Option<Slot<V>>>();
        let buckets = (self.index.capacity() - self.index.len()) * (std::mem::size_of::<u32>() + 1);
        slots + buckets
    }

    /// A uniformly random entry (`None` when empty); `pick(n)` must return a uniform
    /// number below `n`. Probes random slots (the slab is kept at least half full, so
    /// about two probes), then falls back to walking to a random entry.
    pub fn random(&self, mut pick: impl FnMut(usize) -> usize) -> Option<&Slot<V>> {
        if self.is_empty() {
            return None;
        }
        for _ in 0..32 {
            if let Some(slot) = self.get(pick(self.slots.len()) as u32) {
                return Some(slot);
            }
        }
        self.iter().nth(pick(self.len())).map(|(_, slot)| slot)
    }

    /// Occupied slots in slot order.
    pub fn iter(&self) -> impl Iterator<Item = (u32, &Slot<V>)> {
        self.slots.iter().enumerate().filter_map(|(i, s)| s.as_ref().map(|s| (i as u32, s)))
    }

    /// Continues a scan at `cursor`, calling `visit` for occupied slots until
    /// the budget runs out. Returns where to resume, or `None` once the end
    /// of the slab was reached. A cursor from another epoch restarts at 0.
    pub fn scan(
        &self,
        cursor: SlabCursor,
        budget: &mut ScanBudget,
        mut visit: impl FnMut(&Slot<V>),
    ) -> Option<SlabCursor> {
        let mut pos = if cursor.epoch == self.epoch { cursor.slot as usize } else { 0 };
        while pos < self.slots.len() && !budget.exhausted() {
            budget.positions -= 1;
            if let Some(slot) = self.slots.get(pos).and_then(Option::as_ref) {
                budget.live -= 1;
                visit(slot);
            }
            pos += 1;
        }
        (pos < self.slots.len()).then_some(SlabCursor { epoch: self.epoch, slot: pos as u32 })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn insert(map: &mut SlabMap<u32>, key: &str, v: u32) -> u32 {
        map.insert_new(hash_bytes(key.as_bytes()), key.as_bytes().into(), v)
    }

    fn remove(map: &mut SlabMap<u32>, key: &str) -> Option<u32> {
        let hash = hash_bytes(key.as_bytes());
        let slot = map.find(hash, key.as_bytes())?;
        map.remove(hash, slot).map(|s| s.value)
    }

    #[test]
    fn slots_are_stable_and_reused() {
        let mut map = SlabMap::default();
        let a = insert(&mut map, "a", 1);
        let b = insert(&mut map, "b", 2);
        assert_eq!(map.find(hash_bytes(b"a"), b"a"), Some(a));
        assert_eq!(remove(&mut map, "a"), Some(1));
        assert_eq!(map.find(hash_bytes(b"a"), b"a"), None);
        assert_eq!(map.find(hash_bytes(b"b"), b"b"), Some(b), "b did not move");
        assert_eq!(insert(&mut map, "c", 3), a, "freed slot reused");
        assert_eq!(map.len(), 2);
        assert_eq!(remove(&mut map, "zz"), None);
    }

    #[test]
    fn the_slab_grows_by_chunks_and_holds_at_most_one_unfilled() {
        let mut map = SlabMap::default();
        let slot = std::mem::size_of::<Option<Slot<u32>>>();
        for i in 0..5 * CHUNK as u32 + 7 {
            insert(&mut map, &i.to_string(), i);
            let unfilled = map.slots.capacity() - map.slots.len();
            assert!(unfilled < CHUNK, "{unfilled} slots unfilled at {i}");
        }
        for i in (0..5 * CHUNK as u32 + 7).step_by(97) {
            let key = i.to_string();
            let at = map.find(hash_bytes(key.as_bytes()), key.as_bytes()).unwrap();
            assert_eq!(map.get(at).unwrap().value, i, "slot {at} in chunk {}", at as usize >> CHUNK_BITS);
        }
        // A freed slot and its table bucket count as spare until reused.
        let spare = map.spare_bytes();
        remove(&mut map, "3");
        assert_eq!(map.spare_bytes(), spare + slot + std::mem::size_of::<u32>() + 1);
        insert(&mut map, "again", 1);
        assert_eq!(map.spare_bytes(), spare);
    }

    #[test]
    fn compaction_bumps_epoch_and_restarts_stale_cursors() {
        let mut map = SlabMap::default();
        for i in 0..200 {
            insert(&mut map, &i.to_string(), i);
        }
        let mut budget = ScanBudget::for_count(10);
        let cursor = map.scan(SlabCursor::default(), &mut budget, |_| {}).unwrap();
        assert_eq!(cursor.slot, 10);
        for i in 0..150 {
            assert_eq!(remove(&mut map, &i.to_string()), Some(i));
            map.compact_if_sparse();
        }
        assert_ne!(map.epoch, cursor.epoch, "compaction happened");
        // The stale cursor restarts at 0, so every survivor is still seen.
        let mut seen = Vec::new();
        let mut budget = ScanBudget::for_count(1_000);
        assert!(map.scan(cursor, &mut budget, |s| seen.push(s.value)).is_none());
        seen.sort_unstable();
        assert_eq!(seen, (150..200).collect::<Vec<_>>());
        for i in 150..200 {
            assert!(map.find(hash_bytes(i.to_string().as_bytes()), i.to_string().as_bytes()).is_some());
        }
    }

    #[test]
    fn scan_budget_bounds_empty_positions() {
        let mut map = SlabMap::default();
        for i in 0..40 {
            insert(&mut map, &i.to_string(), i);
        }
        for i in 0..19 {
            remove(&mut map, &i.to_string());
        }
        assert!(!map.compact_if_sparse(), "below the sparsity threshold");
        let mut budget = ScanBudget::for_count(1);
        let mut visited = 0;
        let next = map.scan(SlabCursor::default(), &mut budget, |_| visited += 1);
        assert_eq!(visited, 0, "10 free positions examined, no entry reached");
        assert_eq!(next.map(|c| c.slot), Some(10));
    }
}
