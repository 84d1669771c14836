//! Posting lists: the set of row ids stored under one index key.
//!
//! Owns: a compact, sorted id set that stays small for the common cases (one id for a
//! unique key, a few ids for a selective key) and becomes a roaring bitmap when large.
//! Never: hold duplicates or unsorted ids; never be empty (an empty list is removed from
//! its index by the caller when `remove` says so).

use roaring::RoaringBitmap;

/// Ids held inline as a sorted boxed slice up to this many, then as a bitmap.
pub const FEW_IDS_MAX: usize = 32;

/// A non-empty sorted set of row ids.
#[derive(Debug, Clone)]
pub enum Postings {
    /// A single id.
    One(u32),
    /// Two to `FEW_IDS_MAX` ids, sorted.
    Few(Box<[u32]>),
    /// A roaring bitmap, once the set grew past `FEW_IDS_MAX` ids (it stays one as ids
    /// are removed).
    Bitmap(Box<RoaringBitmap>),
}

impl Postings {
    /// The set of the one id `id`.
    pub fn new(id: u32) -> Postings {
        Postings::One(id)
    }

    /// Ids in the set (at least one).
    pub fn len(&self) -> usize {
        match self {
            Postings::One(_) => 1,
            Postings::Few(ids) => ids.len(),
            Postings::Bitmap(bitmap) => bitmap.len() as usize,
        }
    }

    /// Always false: a posting list is never empty (its index drops it when `remove`
    /// empties it).
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Whether `id` is in the set.
    pub fn contains(&self, id: u32) -> bool {
        match self {
            Postings::One(one) => *one == id,
            Postings::Few(ids) => ids.binary_search(&id).is_ok(),
            Postings::Bitmap(bitmap) => bitmap.contains(id),
        }
    }

    /// Adds `id`; adding an id already present is a caller bug.
    pub fn insert(&mut self, id: u32) {
        match self {
            Postings::One(one) => {
                assert_ne!(*one, id, "row id inserted twice under one key");
                let pair = if *one < id { [*one, id] } else { [id, *one] };
                *self = Postings::Few(Box::new(pair));
            }
            Postings::Few(ids) => {
                let at = ids.binary_search(&id).expect_err("row id inserted twice under one key");
                if ids.len() < FEW_IDS_MAX {
                    let mut grown = Vec::with_capacity(ids.len() + 1);
                    grown.extend_from_slice(&ids[..at]);
                    grown.push(id);
                    grown.extend_from_slice(&ids[at..]);
                    *ids = grown.into_boxed_slice();
                } else {
                    let mut bitmap: RoaringBitmap = ids.iter().copied().collect();
                    bitmap.insert(id);
                    *self = Postings::Bitmap(Box::new(bitmap));
                }
            }
            Postings::Bitmap(bitmap) => {
                let added = bitmap.insert(id);
                assert!(added, "row id inserted twice under one key");
            }
        }
    }

    /// Removes `id` (which must be present); returns true when the set is now empty.
    pub fn remove(&mut self, id: u32) -> bool {
        match self {
            Postings::One(one) => {
                assert_eq!(*one, id, "removing a row id that is not indexed");
                true
            }
            Postings::Few(ids) => {
                let at = ids.binary_search(&id).expect("removing a row id that is not indexed");
                let mut shrunk: Vec<u32> = Vec::with_capacity(ids.len() - 1);
                shrunk.extend_from_slice(&ids[..at]);
                shrunk.extend_from_slice(&ids[at + 1..]);
                *self =
                    if shrunk.len() == 1 { Postings::One(shrunk[0]) } else { Postings::Few(shrunk.into_boxed_slice()) };
                false
            }
            Postings::Bitmap(bitmap) => {
                let removed = bitmap.remove(id);
                assert!(removed, "removing a row id that is not indexed");
                bitmap.is_empty()
            }
        }
    }

    /// Calls `f` for each id in ascending order until it returns false.
    pub fn for_each(&self, mut f: impl FnMut(u32) -> bool) -> bool {
        match self {
            Postings::One(one) => f(*one),
            Postings::Few(ids) => ids.iter().all(|&id| f(id)),
            Postings::Bitmap(bitmap) => bitmap.iter().all(f),
        }
    }

    /// Same as `for_each` but in descending order.
    pub fn for_each_rev(&self, mut f: impl FnMut(u32) -> bool) -> bool {
        match self {
            Postings::One(one) => f(*one),
            Postings::Few(ids) => ids.iter().rev().all(|&id| f(id)),
            Postings::Bitmap(bitmap) => bitmap.iter().rev().all(f),
        }
    }

    /// Approximate heap bytes, for memory accounting.
    pub fn heap_bytes(&self) -> usize {
        match self {
            Postings::One(_) => 0,
            Postings::Few(ids) => ids.len() * 4,
            Postings::Bitmap(bitmap) => bitmap.serialized_size(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grows_and_shrinks_through_every_form() {
        let mut p = Postings::new(50);
        for id in (0..100).rev().filter(|&i| i != 50) {
            p.insert(id);
        }
        assert!(matches!(p, Postings::Bitmap(_)));
        assert_eq!(p.len(), 100);
        let mut seen = Vec::new();
        p.for_each(|id| {
            seen.push(id);
            true
        });
        assert_eq!(seen, (0..100).collect::<Vec<_>>());
        for id in 0..99 {
            assert!(!p.remove(id));
        }
        assert!(p.contains(99) && !p.contains(0));
        assert!(p.remove(99));

        let mut few = Postings::new(3);
        few.insert(1);
        few.insert(2);
        assert!(matches!(few, Postings::Few(_)));
        assert!(!few.remove(1));
        assert!(!few.remove(3));
        assert!(matches!(few, Postings::One(2)));
    }
}
