//! The field map behind a Redis hash value.
//!
//! Owns: [`FieldMap`], field → value storage with a cached byte count and
//! HSCAN-stable positions.
//!
//! Must never: be left empty inside a keyspace (the shard deletes a key
//! whose hash becomes empty, as Redis does), or let `bytes` drift from the
//! contents — every mutation goes through methods that update it.
//!
//! Invariants: `bytes` = Σ (field len + value capacity + per-field overhead)
//! over all fields; positions follow [`SlabMap`]'s stability rules.

use crate::store::router::hash_bytes;
use crate::store::slab_map::{ScanBudget, SlabCursor, SlabMap};

/// Field → value map of one hash.
#[derive(Debug, Clone, Default)]
pub struct FieldMap {
    map: SlabMap<Vec<u8>>,
    bytes: usize,
}

fn field_cost(field: &[u8], value: &[u8]) -> usize {
    field.len() + value.len() + SlabMap::<Vec<u8>>::ENTRY_OVERHEAD
}

impl FieldMap {
    /// Number of fields.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether the hash has no fields.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Approximate heap bytes, O(1).
    pub fn heap_bytes(&self) -> usize {
        self.bytes
    }

    /// Value of `field`.
    pub fn get(&self, field: &[u8]) -> Option<&[u8]> {
        let slot = self.map.find(hash_bytes(field), field)?;
        self.map.get(slot).map(|s| s.value.as_slice())
    }

    /// Sets `field`; returns true when the field is new.
    pub fn insert(&mut self, field: &[u8], value: Vec<u8>) -> bool {
        let hash = hash_bytes(field);
        if let Some(slot) = self.map.find(hash, field)
            && let Some(existing) = self.map.get_mut(slot)
        {
            self.bytes -= field_cost(field, &existing.value);
            self.bytes += field_cost(field, &value);
            existing.value = value;
            return false;
        }
        self.bytes += field_cost(field, &value);
        self.map.insert_new(hash, field.into(), value);
        true
    }

    /// Removes `field`; returns true when it existed.
    pub fn remove(&mut self, field: &[u8]) -> bool {
        let hash = hash_bytes(field);
        let Some(removed) = self.map.find(hash, field).and_then(|slot| self.map.remove(hash, slot)) else {
            return false;
        };
        self.bytes -= field_cost(&removed.key, &removed.value);
        self.map.compact_if_sparse();
        true
    }

    /// A uniformly random (field, value) pair (see [`SlabMap::random`]).
    pub fn random(&self, pick: impl FnMut(usize) -> usize) -> Option<(&[u8], &[u8])> {
        self.map.random(pick).map(|s| (&*s.key, s.value.as_slice()))
    }

    /// All (field, value) pairs, in storage order.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        self.map.iter().map(|(_, s)| (&*s.key, s.value.as_slice()))
    }

    /// One HSCAN step (see [`SlabMap::scan`]).
    pub fn scan(
        &self,
        cursor: SlabCursor,
        budget: &mut ScanBudget,
        visit: impl FnMut(&[u8], &[u8]),
    ) -> Option<SlabCursor> {
        let mut visit = visit;
        self.map.scan(cursor, budget, |slot| visit(&slot.key, &slot.value))
    }
}
