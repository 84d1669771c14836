//! The member set behind a Redis set value.
//!
//! Owns: [`MemberSet`], members with a cached byte count and SSCAN-stable positions.
//!
//! Must never: be left empty inside a keyspace (the shard deletes a key whose set
//! becomes empty, as Redis does), or let `bytes` drift from the contents.
//!
//! Invariants: `bytes` = Σ (member len + per-member overhead); positions follow
//! [`SlabMap`]'s stability rules.

use crate::store::router::hash_bytes;
use crate::store::slab_map::{ScanBudget, SlabCursor, SlabMap};
use crate::types::number::parse_i64;

/// Members of one set.
#[derive(Debug, Clone, Default)]
pub struct MemberSet {
    map: SlabMap<()>,
    bytes: usize,
}

fn member_cost(member: &[u8]) -> usize {
    member.len() + SlabMap::<()>::ENTRY_OVERHEAD
}

impl MemberSet {
    /// Number of members.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether the set has no members.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Approximate heap bytes, O(1).
    pub fn heap_bytes(&self) -> usize {
        self.bytes
    }

    /// Whether `member` is in the set.
    pub fn contains(&self, member: &[u8]) -> bool {
        self.map.find(hash_bytes(member), member).is_some()
    }

    /// Adds `member`; true when it is new.
    pub fn insert(&mut self, member: &[u8]) -> bool {
        let hash = hash_bytes(member);
        if self.map.find(hash, member).is_some() {
            return false;
        }
        self.bytes += member_cost(member);
        self.map.insert_new(hash, member.into(), ());
        true
    }

    /// Removes `member`; true when it was there.
    pub fn remove(&mut self, member: &[u8]) -> bool {
        let hash = hash_bytes(member);
        let Some(removed) = self.map.find(hash, member).and_then(|slot| self.map.remove(hash, slot)) else {
            return false;
        };
        self.bytes -= member_cost(&removed.key);
        self.map.compact_if_sparse();
        true
    }

    /// A uniformly random member (see [`SlabMap::random`]).
    pub fn random(&self, pick: impl FnMut(usize) -> usize) -> Option<&[u8]> {
        self.map.random(pick).map(|slot| &*slot.key)
    }

    /// Every member, in storage order.
    pub fn iter(&self) -> impl Iterator<Item = &[u8]> {
        self.map.iter().map(|(_, slot)| &*slot.key)
    }

    /// Whether every member is an integer Redis would keep in an intset (OBJECT
    /// ENCODING's answer).
    pub fn all_integers(&self) -> bool {
        self.iter().all(|member| parse_i64(member).is_some())
    }

    /// One SSCAN step (see [`SlabMap::scan`]).
    pub fn scan(
        &self,
        cursor: SlabCursor,
        budget: &mut ScanBudget,
        mut visit: impl FnMut(&[u8]),
    ) -> Option<SlabCursor> {
        self.map.scan(cursor, budget, |slot| visit(&slot.key))
    }
}

impl FromIterator<Vec<u8>> for MemberSet {
    fn from_iter<I: IntoIterator<Item = Vec<u8>>>(members: I) -> Self {
        let mut set = MemberSet::default();
        for member in members {
            set.insert(&member);
        }
        set
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_are_counted_once_and_bytes_follow_them() {
        let mut set = MemberSet::default();
        assert!(set.insert(b"a") && !set.insert(b"a") && set.insert(b"12"));
        assert_eq!(set.len(), 2);
        assert_eq!(set.heap_bytes(), member_cost(b"a") + member_cost(b"12"));
        assert!(!set.all_integers());
        assert!(set.remove(b"a") && !set.remove(b"a"));
        assert!(set.all_integers() && set.contains(b"12"));
        assert_eq!(set.heap_bytes(), member_cost(b"12"));
    }
}
