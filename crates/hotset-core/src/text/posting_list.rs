//! One word's postings: (row, field, tf) hits sorted by (row, field), in blocks.
//!
//! Owns: `PostingList`, a list of sorted blocks of at most `BLOCK_MAX` hits, so that adding
//! or removing one hit shifts one block (at most a few KB), never the whole list: a word in
//! most rows of a million-row namespace would otherwise move megabytes on every update.
//! Appending in row order (a load) fills blocks to the end. Never: know what a hit means.

/// One row's occurrences of a word in one field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hit {
    /// The row id in the namespace.
    pub row: u32,
    /// The field's position among the text index's fields.
    pub field: u8,
    /// Occurrences, saturating at 255.
    pub tf: u8,
}

impl Hit {
    fn key(&self) -> (u32, u8) {
        (self.row, self.field)
    }
}

/// Most hits in a block; a fuller block is split in two.
const BLOCK_MAX: usize = 256;

/// Every hit of one word, sorted by (row, field).
#[derive(Debug, Clone, Default)]
pub struct PostingList {
    /// Non-empty blocks, each sorted, all in order.
    blocks: Vec<Vec<Hit>>,
    len: usize,
}

impl PostingList {
    /// The list of a word no row uses.
    pub const EMPTY: PostingList = PostingList { blocks: Vec::new(), len: 0 };

    /// Hits in the list.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the list has no hit.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The hits in (row, field) order.
    pub fn iter(&self) -> impl Iterator<Item = &Hit> {
        self.blocks.iter().flatten()
    }

    /// The block a hit with `key` belongs in: the last whose first hit is not above it.
    fn block_of(&self, key: (u32, u8)) -> usize {
        self.blocks.partition_point(|b| b[0].key() <= key).saturating_sub(1)
    }

    /// Adds a hit; its (row, field) must not be present.
    pub fn insert(&mut self, hit: Hit) {
        self.len += 1;
        let Some(last) = self.blocks.last_mut() else {
            self.blocks.push(vec![hit]);
            return;
        };
        if last.last().is_some_and(|h| h.key() < hit.key()) {
            if last.len() < BLOCK_MAX {
                last.push(hit);
            } else {
                self.blocks.push(vec![hit]);
            }
            return;
        }
        let at = self.block_of(hit.key());
        let block = &mut self.blocks[at];
        let position = block.partition_point(|h| h.key() < hit.key());
        debug_assert!(block.get(position).is_none_or(|h| h.key() != hit.key()), "a hit posted twice");
        block.insert(position, hit);
        if block.len() > BLOCK_MAX {
            let upper = block.split_off(block.len() / 2);
            self.blocks.insert(at + 1, upper);
        }
    }

    /// Adds hits, none of them present. Sorted hits past the last one (a load) fill the
    /// last block and then whole new blocks, each allocated once; others go one by one.
    pub fn extend(&mut self, hits: &[Hit]) {
        let after_last = match self.blocks.last().and_then(|b| b.last()) {
            Some(last) => hits.first().is_some_and(|h| last.key() < h.key()),
            None => true,
        };
        if !after_last || !hits.windows(2).all(|w| w[0].key() < w[1].key()) {
            hits.iter().for_each(|&hit| self.insert(hit));
            return;
        }
        self.len += hits.len();
        let mut rest = hits;
        if let Some(last) = self.blocks.last_mut() {
            let room = BLOCK_MAX.saturating_sub(last.len()).min(rest.len());
            last.extend_from_slice(&rest[..room]);
            rest = &rest[room..];
        }
        for chunk in rest.chunks(BLOCK_MAX) {
            self.blocks.push(chunk.to_vec());
        }
    }

    /// Removes the hit of (row, field); false when there is none.
    pub fn remove(&mut self, row: u32, field: u8) -> bool {
        if self.blocks.is_empty() {
            return false;
        }
        let at = self.block_of((row, field));
        let block = &mut self.blocks[at];
        let position = block.partition_point(|h| h.key() < (row, field));
        if block.get(position).is_none_or(|h| h.key() != (row, field)) {
            return false;
        }
        block.remove(position);
        if block.is_empty() {
            self.blocks.remove(at);
        }
        self.len -= 1;
        if self.len == 0 {
            self.blocks = Vec::new();
        }
        true
    }

    /// Gives back spare capacity of every block (after a load).
    pub fn shrink_to_fit(&mut self) {
        self.blocks.iter_mut().for_each(Vec::shrink_to_fit);
        self.blocks.shrink_to_fit();
    }

    /// Approximate heap bytes the blocks take.
    pub fn heap_bytes(&self) -> usize {
        self.blocks.iter().map(|b| b.capacity() * std::mem::size_of::<Hit>() + 24).sum::<usize>()
    }
}

impl<'a> IntoIterator for &'a PostingList {
    type Item = &'a Hit;
    type IntoIter = std::iter::Flatten<std::slice::Iter<'a, Vec<Hit>>>;

    fn into_iter(self) -> Self::IntoIter {
        self.blocks.iter().flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn behaves_like_a_sorted_set(ops in proptest::collection::vec((any::<bool>(), 0u32..2000, 0u8..3), 0..3000)) {
            let mut list = PostingList::default();
            let mut model = std::collections::BTreeSet::new();
            for (add, row, field) in ops {
                if add && row % 7 == 0 {
                    // A run of hits through `extend`: in order past the end, or not.
                    let run: Vec<Hit> = (row..row + 40).map(|r| Hit { row: r, field, tf: 1 })
                        .filter(|h| !model.contains(&(h.row, h.field))).collect();
                    list.extend(&run);
                    model.extend(run.iter().map(|h| (h.row, h.field)));
                } else if add {
                    if model.insert((row, field)) {
                        list.insert(Hit { row, field, tf: 1 });
                    }
                } else {
                    prop_assert_eq!(list.remove(row, field), model.remove(&(row, field)));
                }
            }
            let got: Vec<(u32, u8)> = list.iter().map(|h| (h.row, h.field)).collect();
            let want: Vec<(u32, u8)> = model.into_iter().collect();
            prop_assert_eq!(list.len(), want.len());
            prop_assert_eq!(got, want);
            prop_assert!(list.blocks.iter().all(|b| !b.is_empty() && b.len() <= BLOCK_MAX));
        }
    }
}
