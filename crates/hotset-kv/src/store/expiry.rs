//! Expiry bookkeeping: deadlines, EXPIRE conditions and the per-shard index of
//! keys that carry a TTL.
//!
//! Owns: [`TtlIndex`] (the analogue of Redis' `expires` dict, used by active
//! expiry so it only ever looks at keys that can expire) and the arithmetic
//! turning relative/absolute times into stored deadlines.
//!
//! Must never: read the clock itself (callers pass one "now" per operation,
//! so a transaction sees a single instant) or decide deletion on its own.
//!
//! Invariants:
//! - `TtlIndex` holds exactly the slot indices of entries whose `expire_at`
//!   is set; `position[slot]` is that slot's index in `members` or `ABSENT`.
//! - A deadline `when <= now` is "already expired" and is never stored; a
//!   stored deadline is expired once `now > when` (Redis' two comparisons).

use std::num::NonZeroU64;

use crate::error::KvError;
use crate::options::ExpireCondition;

const ABSENT: u32 = u32::MAX;

/// Slot indices of entries that have an expiry, with O(1) insert/remove and a
/// round-robin cursor for active expiry.
#[derive(Debug, Clone, Default)]
pub struct TtlIndex {
    members: Vec<u32>,
    position: Vec<u32>,
    cursor: usize,
}

impl TtlIndex {
    /// Number of tracked slots.
    pub fn len(&self) -> usize {
        self.members.len()
    }

    /// Starts tracking `slot` (idempotent).
    pub fn insert(&mut self, slot: u32) {
        let idx = slot as usize;
        if self.position.len() <= idx {
            self.position.resize(idx + 1, ABSENT);
        }
        if self.position[idx] == ABSENT {
            self.position[idx] = self.members.len() as u32;
            self.members.push(slot);
        }
    }

    /// Stops tracking `slot` (idempotent). The last member moves into the
    /// hole, so a cursor resting on the hole examines it next.
    pub fn remove(&mut self, slot: u32) {
        let Some(pos) = self.position.get_mut(slot as usize) else {
            return;
        };
        let pos = std::mem::replace(pos, ABSENT);
        if pos == ABSENT {
            return;
        }
        self.members.swap_remove(pos as usize);
        if let Some(&moved) = self.members.get(pos as usize) {
            self.position[moved as usize] = pos;
        }
    }

    /// Forgets everything.
    pub fn clear(&mut self) {
        *self = Self::default();
    }

    /// A uniformly random member (`None` when empty); `pick(n)` returns a number below `n`.
    pub fn random(&self, pick: impl FnOnce(usize) -> usize) -> Option<u32> {
        (!self.members.is_empty()).then(|| self.members[pick(self.members.len())])
    }

    /// The slot active expiry should examine next.
    pub fn candidate(&self) -> Option<u32> {
        let len = self.members.len();
        (len > 0).then(|| self.members[self.cursor % len])
    }

    /// Moves past the current candidate (it was examined and kept).
    pub fn advance(&mut self) {
        let len = self.members.len().max(1);
        self.cursor = self.cursor % len + 1;
    }
}

/// `now + delta_ms` as Redis computes it for EXPIRE/PEXPIRE: in signed 64-bit,
/// failing with "invalid expire time" on overflow.
pub fn deadline_after(now: u64, delta_ms: i64, command: &'static str) -> Result<i64, KvError> {
    i64::try_from(now).ok().and_then(|now| now.checked_add(delta_ms)).ok_or(KvError::InvalidExpireTime { command })
}

/// The deadline to store for `when`, or `None` if it is already due (Redis
/// deletes instead of storing a deadline `<= now`).
pub fn live_deadline(when: i64, now: u64) -> Option<NonZeroU64> {
    u64::try_from(when).ok().filter(|&when| when > now).and_then(NonZeroU64::new)
}

/// Whether an EXPIRE with `condition` may replace `current` with `when`.
pub fn condition_allows(condition: Option<ExpireCondition>, current: Option<NonZeroU64>, when: i64) -> bool {
    let current = current.map(|c| i128::from(c.get()));
    let when = i128::from(when);
    match condition {
        None => true,
        Some(ExpireCondition::Nx) => current.is_none(),
        Some(ExpireCondition::Xx) => current.is_some(),
        Some(ExpireCondition::Gt) => current.is_some_and(|c| when > c),
        Some(ExpireCondition::Lt) => current.is_none_or(|c| when < c),
        Some(ExpireCondition::XxLt) => current.is_some_and(|c| when < c),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ttl_index_tracks_membership_through_swaps() {
        let mut idx = TtlIndex::default();
        for slot in [5, 1, 9, 3] {
            idx.insert(slot);
        }
        idx.insert(9);
        assert_eq!(idx.len(), 4);
        idx.remove(5);
        idx.remove(5);
        assert_eq!(idx.len(), 3);
        let mut seen = Vec::new();
        for _ in 0..3 {
            seen.push(idx.candidate().unwrap());
            idx.advance();
        }
        seen.sort_unstable();
        assert_eq!(seen, vec![1, 3, 9]);
        for slot in [1, 3, 9] {
            idx.remove(slot);
        }
        assert_eq!(idx.len(), 0);
        assert_eq!(idx.candidate(), None);
    }

    #[test]
    fn deadlines_and_conditions() {
        assert_eq!(deadline_after(1_000, -5_000, "expire"), Ok(-4_000));
        assert!(deadline_after(10, i64::MAX, "expire").is_err());
        assert_eq!(live_deadline(1_000, 1_000), None);
        assert_eq!(live_deadline(-1, 1_000), None);
        assert_eq!(live_deadline(1_001, 1_000), NonZeroU64::new(1_001));
        let some = NonZeroU64::new(100);
        assert!(condition_allows(Some(ExpireCondition::Nx), None, 5));
        assert!(!condition_allows(Some(ExpireCondition::Nx), some, 5));
        assert!(condition_allows(Some(ExpireCondition::Xx), some, 5));
        assert!(!condition_allows(Some(ExpireCondition::Gt), None, 5));
        assert!(condition_allows(Some(ExpireCondition::Gt), some, 101));
        assert!(!condition_allows(Some(ExpireCondition::Gt), some, 100));
        assert!(condition_allows(Some(ExpireCondition::Lt), None, 5));
        assert!(condition_allows(Some(ExpireCondition::Lt), some, 99));
        assert!(!condition_allows(Some(ExpireCondition::Lt), some, 100));
    }
}
