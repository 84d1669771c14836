//! The sequence behind a Redis list value.
//!
//! Owns: [`List`], a double-ended sequence of byte strings whose elements have absolute
//! positions (`first` is the position of the head; LPUSH lowers it, RPUSH extends the
//! tail), with a cached byte count.
//!
//! Must never: be left empty inside a keyspace (the shard deletes a key whose list
//! becomes empty, as Redis does), or let `bytes` drift from the contents.
//!
//! Why absolute positions: the log records what a write did to a big list as the window
//! it leaves (`first`, length) and the elements it wrote at their positions, which
//! replays to the same state however often it is applied; an index counted from the
//! head would shift under every LPUSH and LPOP.
//!
//! Invariants: `bytes` = Σ (element len + per-element overhead); `first + len` never
//! overflows (positions move by one per element pushed).

use std::collections::VecDeque;

/// One end of a list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// The head (LPUSH, LPOP, LEFT).
    Left,
    /// The tail (RPUSH, RPOP, RIGHT).
    Right,
}

/// What an element costs besides its bytes: its box and its place in the deque.
const ELEMENT_OVERHEAD: usize = 2 * std::mem::size_of::<usize>();

/// A list of byte strings with absolute positions (see the module docs).
#[derive(Debug, Clone, Default)]
pub struct List {
    items: VecDeque<Box<[u8]>>,
    first: i64,
    bytes: usize,
}

impl List {
    /// An empty list whose head will be at `first`.
    pub fn starting_at(first: i64) -> List {
        List { items: VecDeque::new(), first, bytes: 0 }
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether the list has no elements.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// The absolute position of the head.
    pub fn first(&self) -> i64 {
        self.first
    }

    /// Approximate heap bytes, O(1).
    pub fn heap_bytes(&self) -> usize {
        self.bytes
    }

    /// The element at `index` from the head.
    pub fn get(&self, index: usize) -> Option<&[u8]> {
        self.items.get(index).map(|item| &**item)
    }

    /// Elements from the head.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &[u8]> + ExactSizeIterator {
        self.items.iter().map(|item| &**item)
    }

    /// Elements `start..end` from the head (clamped to the list).
    pub fn range(&self, start: usize, end: usize) -> impl DoubleEndedIterator<Item = &[u8]> {
        let end = end.min(self.items.len());
        self.items.range(start.min(end)..end).map(|item| &**item)
    }

    /// Adds `item` at `end`.
    pub fn push(&mut self, end: End, item: &[u8]) {
        self.bytes += item.len() + ELEMENT_OVERHEAD;
        match end {
            End::Left => {
                self.items.push_front(item.into());
                self.first -= 1;
            }
            End::Right => self.items.push_back(item.into()),
        }
    }

    /// Takes the element at `end`.
    pub fn pop(&mut self, end: End) -> Option<Box<[u8]>> {
        let item = match end {
            End::Left => {
                let item = self.items.pop_front()?;
                self.first += 1;
                item
            }
            End::Right => self.items.pop_back()?,
        };
        self.bytes -= item.len() + ELEMENT_OVERHEAD;
        Some(item)
    }

    /// Replaces the element at `index` from the head; false when there is none.
    pub fn set(&mut self, index: usize, item: &[u8]) -> bool {
        let Some(slot) = self.items.get_mut(index) else { return false };
        self.bytes = self.bytes - slot.len() + item.len();
        *slot = item.into();
        true
    }

    /// Inserts `item` before the element at `index` from the head (at the tail when
    /// `index` is the length). Positions after it shift: callers log the list whole.
    pub fn insert(&mut self, index: usize, item: &[u8]) {
        self.bytes += item.len() + ELEMENT_OVERHEAD;
        self.items.insert(index, item.into());
    }

    /// Removes the elements for which `remove` says so, walking from `end`, at most
    /// `limit` of them (0: every one); returns how many went. Positions after the first
    /// removed shift: callers log the list whole.
    pub fn remove_matching(&mut self, end: End, limit: usize, mut remove: impl FnMut(&[u8]) -> bool) -> usize {
        let len = self.items.len();
        let mut doomed = vec![false; len];
        let mut count = 0;
        let order: Box<dyn Iterator<Item = usize>> = match end {
            End::Left => Box::new(0..len),
            End::Right => Box::new((0..len).rev()),
        };
        for index in order {
            if limit != 0 && count == limit {
                break;
            }
            if remove(&self.items[index]) {
                doomed[index] = true;
                count += 1;
            }
        }
        if count > 0 {
            let mut index = 0;
            let mut freed = 0;
            self.items.retain(|item| {
                let keep = !doomed[index];
                index += 1;
                if !keep {
                    freed += item.len() + ELEMENT_OVERHEAD;
                }
                keep
            });
            self.bytes -= freed;
        }
        count
    }

    /// Keeps only the elements `start..end` from the head (clamped), as LTRIM does.
    pub fn keep(&mut self, start: usize, end: usize) {
        let end = end.min(self.items.len());
        let start = start.min(end);
        for _ in end..self.items.len() {
            self.pop(End::Right);
        }
        for _ in 0..start {
            self.pop(End::Left);
        }
    }

    /// Recovery: makes the list cover exactly the positions `first..first + len`,
    /// dropping elements outside and adding empty ones where it did not reach (the
    /// records that follow fill or drop those: a window only grows over positions that
    /// held elements when the record was written).
    pub fn restore_window(&mut self, first: i64, len: u64) {
        let end = first.saturating_add(len as i64);
        while !self.items.is_empty() && self.first < first {
            self.pop(End::Left);
        }
        while !self.items.is_empty() && self.first + self.items.len() as i64 > end {
            self.pop(End::Right);
        }
        if self.items.is_empty() {
            self.first = first;
        }
        while self.first > first {
            self.push(End::Left, b"");
        }
        while self.first + (self.items.len() as i64) < end {
            self.push(End::Right, b"");
        }
    }

    /// Recovery: sets the element at absolute `position`; ignored outside the window.
    pub fn restore_at(&mut self, position: i64, item: &[u8]) {
        if let Some(index) = position.checked_sub(self.first).and_then(|i| usize::try_from(i).ok()) {
            self.set(index, item);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn items(list: &List) -> Vec<&[u8]> {
        list.iter().collect()
    }

    #[test]
    fn positions_follow_pushes_and_pops_at_both_ends() {
        let mut list = List::default();
        list.push(End::Right, b"b");
        list.push(End::Left, b"a");
        list.push(End::Right, b"c");
        assert_eq!((list.first(), items(&list)), (-1, vec![&b"a"[..], b"b", b"c"]));
        assert_eq!(list.pop(End::Left).as_deref(), Some(&b"a"[..]));
        assert_eq!(list.first(), 0);
        assert_eq!(list.pop(End::Right).as_deref(), Some(&b"c"[..]));
        assert_eq!(list.heap_bytes(), 1 + ELEMENT_OVERHEAD);
        list.pop(End::Left);
        assert!(list.is_empty() && list.heap_bytes() == 0);
    }

    #[test]
    fn removal_walks_from_either_end_up_to_a_limit() {
        let mut list = List::default();
        for item in [b"x", b"y", b"x", b"x"] {
            list.push(End::Right, item);
        }
        assert_eq!(list.remove_matching(End::Right, 2, |item| item == b"x"), 2);
        assert_eq!(items(&list), vec![&b"x"[..], b"y"]);
        assert_eq!(list.remove_matching(End::Left, 0, |item| item == b"y"), 1);
        assert_eq!(list.heap_bytes(), 1 + ELEMENT_OVERHEAD);
        list.insert(1, b"z");
        list.insert(0, b"w");
        assert_eq!(items(&list), vec![&b"w"[..], b"x", b"z"]);
        list.keep(1, 2);
        assert_eq!(items(&list), vec![&b"x"[..]]);
    }

    #[test]
    fn a_restored_window_drops_and_pads_and_puts_land_by_position() {
        let mut list = List::default();
        for item in [b"a", b"b", b"c"] {
            list.push(End::Right, item);
        }
        // Positions 0..3; the record says 1..5 with 3 and 4 written.
        list.restore_window(1, 4);
        list.restore_at(3, b"d");
        list.restore_at(4, b"e");
        list.restore_at(9, b"ignored");
        assert_eq!((list.first(), items(&list)), (1, vec![&b"b"[..], b"c", b"d", b"e"]));
        // Applying it again leaves the same state.
        list.restore_window(1, 4);
        list.restore_at(3, b"d");
        list.restore_at(4, b"e");
        assert_eq!((list.first(), items(&list)), (1, vec![&b"b"[..], b"c", b"d", b"e"]));
        // A window before everything the list holds: all of it replaced.
        list.restore_window(-2, 1);
        assert_eq!((list.first(), items(&list)), (-2, vec![&b""[..]]));
        let bytes: usize = list.iter().map(|item| item.len() + ELEMENT_OVERHEAD).sum();
        assert_eq!(list.heap_bytes(), bytes);
    }
}
