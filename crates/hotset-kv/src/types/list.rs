//! The sequence behind a Redis list value.
//!
//! Owns: [`List`], a double-ended sequence of byte strings whose elements have absolute
//! positions (`first` is the position of the head; LPUSH lowers it, RPUSH extends the
//! tail), packed into nodes as Redis packs a quicklist into listpacks; and [`Iter`], its
//! double-ended walk.
//!
//! Must never: be left empty inside a keyspace (the shard deletes a key whose list
//! becomes empty, as Redis does); hold an empty node; let a node pass [`NODE_BYTES`]
//! unless it holds one element; let `len` or `buffers` drift from the nodes (checked by
//! the tests after every step).
//!
//! Why absolute positions: the log records what a write did to a big list as the window
//! it leaves (`first`, length) and the elements it wrote at their positions, which
//! replays to the same state however often it is applied; an index counted from the
//! head would shift under every LPUSH and LPOP.
//!
//! Why nodes: a boxed element costs its allocation and a deque slot (about 32 bytes for
//! a 13-byte member); packed, it costs its bytes and one more, about what a Redis
//! listpack entry costs. A node is one buffer of at most [`NODE_BYTES`] (Redis' default
//! `list-max-listpack-size -2`), elements and *links* alternating:
//!
//! ```text
//!   link0 e0 link1 e1 link2 ... e(n-1) link(n)     link(i) = len(e(i-1)) XOR len(e(i))
//!   e.g. "ab", "", "xyz":  [2] a b [2] [3] x y z [3]   (the first and last link hold a
//!                                                       length alone: the XOR with 0)
//! ```
//!
//! A link is one byte when the value is below 128 (so for any element under 128 bytes),
//! else `0x80|k`, k little-endian bytes, `0x80|k` again: readable from either side. As
//! in an XOR-linked list, walking from either end with the length just passed gives
//! the next length, so both ends push and pop in O(1) and a walk goes either way, for
//! one byte per element where a listpack spends two (its entry header and back-length).
//!
//! The live bytes sit at `buf[start..]`: popping the head only moves `start`, and
//! pushing the head writes into the room before it (a node built by LPUSH grows
//! towards its front). Capacity grows by doubling up to [`NODE_BYTES`], so a small list
//! stays small; then a push at a full end starts a new node, and a node that pops left
//! mostly empty gives half its buffer back. The live bytes move within their buffer only
//! when the free room is at least their size, and then half of that room is left at
//! each end, so the pushes that use it up pay for the move (a node pushed at both ends
//! does not shuttle its bytes from side to side). Finding element `i` walks the nodes from the
//! nearer end of the list and the node from its nearer end, as Redis does; edits in the
//! middle (LSET, LINSERT) rewrite their node, splitting it when it would overflow, and
//! LREM repacks the nodes it removed from.

use std::collections::{VecDeque, vec_deque};
use std::fmt;
use std::iter::FusedIterator;
use std::ops::Range;

/// One end of a list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// The head (LPUSH, LPOP, LEFT).
    Left,
    /// The tail (RPUSH, RPOP, RIGHT).
    Right,
}

/// Most bytes a node holds (unless it holds one bigger element): Redis' 8 KiB
/// listpacks, which bound what a middle edit moves and what a lookup walks.
pub const NODE_BYTES: usize = 8 * 1024;

/// A node's first buffer: enough for a few short elements.
const MIN_CAPACITY: usize = 16;

// ----- links ---------------------------------------------------------------

/// Bytes the link holding `value` takes.
fn link_len(value: usize) -> usize {
    if value < 0x80 { 1 } else { 2 + payload_len(value) }
}

/// Little-endian bytes needed for `value` (which is not 0).
fn payload_len(value: usize) -> usize {
    (usize::BITS - value.leading_zeros()).div_ceil(8) as usize
}

/// Appends the link holding `value`.
fn put_link(out: &mut Vec<u8>, value: usize) {
    if value < 0x80 {
        out.push(value as u8);
        return;
    }
    let n = payload_len(value);
    let tag = 0x80 | n as u8;
    out.push(tag);
    out.extend_from_slice(&value.to_le_bytes()[..n]);
    out.push(tag);
}

/// Writes the link holding `value` over `out`, which is `link_len(value)` bytes.
fn write_link(out: &mut [u8], value: usize) {
    if value < 0x80 {
        out[0] = value as u8;
        return;
    }
    let n = out.len() - 2;
    out[0] = 0x80 | n as u8;
    out[1..=n].copy_from_slice(&value.to_le_bytes()[..n]);
    out[n + 1] = out[0];
}

/// Reads a link's payload.
fn payload(bytes: &[u8]) -> usize {
    let mut word = [0; std::mem::size_of::<usize>()];
    word[..bytes.len()].copy_from_slice(bytes);
    usize::from_le_bytes(word)
}

/// The link starting at `at`: its value and its length.
fn link_at(buf: &[u8], at: usize) -> (usize, usize) {
    let tag = buf[at];
    if tag < 0x80 {
        return (usize::from(tag), 1);
    }
    let n = usize::from(tag & 0x7f);
    (payload(&buf[at + 1..at + 1 + n]), n + 2)
}

/// The link ending at `end`: its value and its length.
fn link_before(buf: &[u8], end: usize) -> (usize, usize) {
    let tag = buf[end - 1];
    if tag < 0x80 {
        return (usize::from(tag), 1);
    }
    let n = usize::from(tag & 0x7f);
    (payload(&buf[end - 1 - n..end - 1]), n + 2)
}

/// The bytes that replace a stretch of a node: a link, an element, a link.
fn encoded(before: usize, item: &[u8], after: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(link_len(before) + item.len() + link_len(after));
    put_link(&mut out, before);
    out.extend_from_slice(item);
    put_link(&mut out, after);
    out
}

// ----- nodes ---------------------------------------------------------------

/// A link seen from its front: where it starts, and the length of the element before
/// it (0 before the first).
#[derive(Debug, Clone, Copy)]
struct Fwd {
    at: usize,
    prev: usize,
}

/// A link seen from its back: where it ends, and the length of the element after it
/// (0 after the last).
#[derive(Debug, Clone, Copy)]
struct Bwd {
    end: usize,
    next: usize,
}

/// One packed run of elements (module docs); never empty inside a list.
#[derive(Debug, Default)]
struct Node {
    /// Free room, then the live bytes from `start`.
    buf: Vec<u8>,
    start: usize,
    count: usize,
}

impl Clone for Node {
    /// The live bytes alone: a copy has no room to spare.
    fn clone(&self) -> Node {
        Node { buf: self.buf[self.start..].to_vec(), start: 0, count: self.count }
    }
}

impl Node {
    /// A node holding `item` alone, its buffer no bigger than a small list needs.
    fn of(item: &[u8]) -> Node {
        let bytes = 2 * link_len(item.len()) + item.len();
        let mut buf = Vec::with_capacity(bytes.max(MIN_CAPACITY));
        put_link(&mut buf, item.len());
        buf.extend_from_slice(item);
        put_link(&mut buf, item.len());
        Node { buf, start: 0, count: 1 }
    }

    /// Live bytes.
    fn live(&self) -> usize {
        self.buf.len() - self.start
    }

    /// The first link.
    fn head(&self) -> Fwd {
        Fwd { at: self.start, prev: 0 }
    }

    /// The last link.
    fn tail(&self) -> Bwd {
        Bwd { end: self.buf.len(), next: 0 }
    }

    /// The element after link `link`, and the next link.
    fn step(&self, link: Fwd) -> (Range<usize>, Fwd) {
        let (value, size) = link_at(&self.buf, link.at);
        let len = value ^ link.prev;
        let data = link.at + size..link.at + size + len;
        let next = Fwd { at: data.end, prev: len };
        (data, next)
    }

    /// The element before link `link`, and the link before it.
    fn step_back(&self, link: Bwd) -> (Range<usize>, Bwd) {
        let (value, size) = link_before(&self.buf, link.end);
        let len = value ^ link.next;
        let data = link.end - size - len..link.end - size;
        let prev = Bwd { end: data.start, next: len };
        (data, prev)
    }

    /// Link `j` (`0..=count`), walked to from the nearer end.
    fn fwd(&self, j: usize) -> Fwd {
        if j <= self.count / 2 {
            (0..j).fold(self.head(), |link, _| self.step(link).1)
        } else {
            let link = (j..self.count).fold(self.tail(), |link, _| self.step_back(link).1);
            let (value, size) = link_before(&self.buf, link.end);
            Fwd { at: link.end - size, prev: value ^ link.next }
        }
    }

    /// Link `j` (`0..=count`) seen from its back, walked to from the nearer end.
    fn bwd(&self, j: usize) -> Bwd {
        if j >= self.count / 2 {
            (j..self.count).fold(self.tail(), |link, _| self.step_back(link).1)
        } else {
            let link = (0..j).fold(self.head(), |link, _| self.step(link).1);
            let (value, size) = link_at(&self.buf, link.at);
            Bwd { end: link.at + size, next: value ^ link.prev }
        }
    }

    /// Element `j`.
    fn get(&self, j: usize) -> &[u8] {
        &self.buf[self.step(self.fwd(j)).0]
    }

    /// Makes room for `more` bytes beside the live ones at `end`; false when the node
    /// is full (it would pass [`NODE_BYTES`], or room needs a move pushes cannot pay for).
    fn room(&mut self, end: End, more: usize) -> bool {
        let live = self.live();
        if live + more > NODE_BYTES {
            return false;
        }
        let capacity = self.buf.capacity();
        let has = match end {
            End::Left => self.start,
            End::Right => capacity - self.buf.len(),
        };
        if more <= has {
            return true;
        }
        let free = capacity - live;
        if free >= live + more {
            // Move the live bytes, leaving half of what is left free at each end: the
            // pushes that fill a half pay for the move, whichever ends they push at.
            let rest = free - more;
            self.place(if end == End::Left { more + rest / 2 } else { rest / 2 });
            return true;
        }
        if capacity >= NODE_BYTES {
            return false;
        }
        // Double the buffer (up to a node's bytes); the new room goes where the push is.
        let capacity = (live + more).max((2 * capacity).min(NODE_BYTES));
        let start = if end == End::Left { capacity - live } else { 0 };
        let mut buf = Vec::with_capacity(capacity);
        buf.resize(start, 0);
        buf.extend_from_slice(&self.buf[self.start..]);
        self.buf = buf;
        self.start = start;
        true
    }

    /// Moves the live bytes to start at `start`, within the capacity.
    fn place(&mut self, start: usize) {
        let live = self.live();
        #[cfg(test)]
        tests::MOVED.with(|moved| moved.set(moved.get() + live));
        if start > self.start {
            self.buf.resize(start + live, 0);
        }
        self.buf.copy_within(self.start..self.start + live, start);
        self.buf.truncate(start + live);
        self.start = start;
    }

    /// Gives back most of a buffer that pops left mostly empty (at most half of it
    /// goes, so a push right after does not grow it again at once); an emptied node is
    /// about to go whole.
    fn shrink(&mut self) {
        let capacity = self.buf.capacity();
        if self.count > 0 && capacity > 4 * MIN_CAPACITY && self.live() * 4 <= capacity {
            let mut buf = Vec::with_capacity(capacity / 2);
            buf.extend_from_slice(&self.buf[self.start..]);
            self.buf = buf;
            self.start = 0;
        }
    }

    /// Adds `item` at the back; false (nothing changed) when the node is full.
    fn push_back(&mut self, item: &[u8]) -> bool {
        let (last, size) = link_before(&self.buf, self.buf.len());
        let len = item.len();
        let added = link_len(last ^ len) + len + link_len(len);
        // The old last link is replaced; the new bytes are always longer than it.
        if !self.room(End::Right, added - size) {
            return false;
        }
        self.buf.truncate(self.buf.len() - size);
        put_link(&mut self.buf, last ^ len);
        self.buf.extend_from_slice(item);
        put_link(&mut self.buf, len);
        self.count += 1;
        true
    }

    /// Adds `item` at the front; false (nothing changed) when the node is full.
    fn push_front(&mut self, item: &[u8]) -> bool {
        let (first, size) = link_at(&self.buf, self.start);
        let len = item.len();
        let (head, join) = (link_len(len), link_len(len ^ first));
        // The old first link is replaced; the new bytes are always longer than it.
        if !self.room(End::Left, head + len + join - size) {
            return false;
        }
        let at = self.start + size - (head + len + join);
        write_link(&mut self.buf[at..at + head], len);
        self.buf[at + head..at + head + len].copy_from_slice(item);
        write_link(&mut self.buf[at + head + len..self.start + size], len ^ first);
        self.start = at;
        self.count += 1;
        true
    }

    /// Removes the first element, handing it to `take` first.
    fn pop_front<R>(&mut self, take: impl FnOnce(&[u8]) -> R) -> R {
        let (data, link) = self.step(self.head());
        let taken = take(&self.buf[data]);
        // The second link becomes the first: it holds the next length alone, which
        // fits in the bytes of the link, element and link it replaces.
        let (value, size) = link_at(&self.buf, link.at);
        let next = value ^ link.prev;
        let end = link.at + size;
        let at = end - link_len(next);
        write_link(&mut self.buf[at..end], next);
        self.start = at;
        self.count -= 1;
        self.shrink();
        taken
    }

    /// Removes the last element, handing it to `take` first.
    fn pop_back<R>(&mut self, take: impl FnOnce(&[u8]) -> R) -> R {
        let (data, link) = self.step_back(self.tail());
        let taken = take(&self.buf[data]);
        let (value, size) = link_before(&self.buf, link.end);
        let prev = value ^ link.next;
        self.buf.truncate(link.end - size);
        put_link(&mut self.buf, prev);
        self.count -= 1;
        self.shrink();
        taken
    }

    /// Replaces `range` of the buffer with `bytes`, growing the buffer as pushes do.
    fn splice(&mut self, range: Range<usize>, bytes: &[u8]) {
        let len = self.buf.len() - range.len() + bytes.len();
        if len > self.buf.capacity() {
            let live = len - self.start;
            let mut buf = Vec::with_capacity(live.max((2 * self.buf.capacity()).min(NODE_BYTES)));
            buf.extend_from_slice(&self.buf[self.start..range.start]);
            buf.extend_from_slice(bytes);
            buf.extend_from_slice(&self.buf[range.end..]);
            self.buf = buf;
            self.start = 0;
        } else {
            let shorter = bytes.len() < range.len();
            self.buf.splice(range, bytes.iter().copied());
            if shorter {
                self.shrink();
            }
        }
    }

    /// Replaces element `j`; false (nothing changed) when that would overflow the node.
    fn replace(&mut self, j: usize, item: &[u8]) -> bool {
        let link = self.fwd(j);
        let (_, next) = self.step(link);
        let (value, size) = link_at(&self.buf, next.at);
        let after = value ^ next.prev;
        let bytes = encoded(link.prev ^ item.len(), item, item.len() ^ after);
        let replaced = link.at..next.at + size;
        if self.count > 1 && self.live() - replaced.len() + bytes.len() > NODE_BYTES {
            return false;
        }
        self.splice(replaced, &bytes);
        true
    }

    /// Inserts `item` before element `j` (`0..=count`); false (nothing changed) when
    /// that would overflow the node.
    fn insert(&mut self, j: usize, item: &[u8]) -> bool {
        let link = self.fwd(j);
        let (value, size) = link_at(&self.buf, link.at);
        let after = value ^ link.prev;
        let bytes = encoded(link.prev ^ item.len(), item, item.len() ^ after);
        if self.live() - size + bytes.len() > NODE_BYTES {
            return false;
        }
        self.splice(link.at..link.at + size, &bytes);
        self.count += 1;
        true
    }

    /// Removes element `j`.
    fn remove(&mut self, j: usize) {
        let link = self.fwd(j);
        let (_, next) = self.step(link);
        let (value, size) = link_at(&self.buf, next.at);
        let after = value ^ next.prev;
        let mut joined = Vec::with_capacity(link_len(link.prev ^ after));
        put_link(&mut joined, link.prev ^ after);
        self.splice(link.at..next.at + size, &joined);
        self.count -= 1;
    }

    /// Splits off the elements from `j` (`1..count`) on into a new node.
    fn split_off(&mut self, j: usize) -> Node {
        let link = self.fwd(j);
        let (value, size) = link_at(&self.buf, link.at);
        let len = value ^ link.prev;
        let mut right = Vec::with_capacity(link_len(len) + self.buf.len() - link.at - size);
        put_link(&mut right, len);
        right.extend_from_slice(&self.buf[link.at + size..]);
        self.buf.truncate(link.at);
        put_link(&mut self.buf, link.prev);
        let moved = self.count - j;
        self.count = j;
        Node { buf: right, start: 0, count: moved }
    }

    /// Walks elements `a..b` (`a <= b <= count`).
    fn walk(&self, a: usize, b: usize) -> NodeIter<'_> {
        let front = if a == 0 { Place::At(self.head()) } else { Place::Index(a) };
        let back = if b == self.count { Place::At(self.tail()) } else { Place::Index(b) };
        NodeIter { node: self, front, back, left: b - a }
    }
}

/// Where a walk of a node stands at one end: at a link, or still at the index of the
/// link to start from (found when that end is first walked: LRANGE walks forwards only
/// and never pays to find its back end).
#[derive(Debug, Clone, Copy)]
enum Place<L> {
    At(L),
    Index(usize),
}

/// A walk over some elements of one node, from either side.
#[derive(Debug, Clone)]
struct NodeIter<'a> {
    node: &'a Node,
    front: Place<Fwd>,
    back: Place<Bwd>,
    left: usize,
}

impl<'a> Iterator for NodeIter<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let link = match self.front {
            Place::At(link) => link,
            Place::Index(j) => self.node.fwd(j),
        };
        let (data, link) = self.node.step(link);
        self.front = Place::At(link);
        Some(&self.node.buf[data])
    }
}

impl<'a> DoubleEndedIterator for NodeIter<'a> {
    fn next_back(&mut self) -> Option<&'a [u8]> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let link = match self.back {
            Place::At(link) => link,
            Place::Index(j) => self.node.bwd(j),
        };
        let (data, link) = self.node.step_back(link);
        self.back = Place::At(link);
        Some(&self.node.buf[data])
    }
}

// ----- the list ------------------------------------------------------------

/// A list of byte strings with absolute positions (see the module docs).
#[derive(Default)]
pub struct List {
    nodes: VecDeque<Node>,
    len: usize,
    first: i64,
    /// Σ the nodes' buffer capacities.
    buffers: usize,
}

impl Clone for List {
    fn clone(&self) -> List {
        let nodes: VecDeque<Node> = self.nodes.iter().cloned().collect();
        let buffers = nodes.iter().map(|node| node.buf.capacity()).sum();
        List { nodes, len: self.len, first: self.first, buffers }
    }
}

impl fmt::Debug for List {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("List")
            .field("first", &self.first)
            .field("items", &self.iter().map(String::from_utf8_lossy).collect::<Vec<_>>())
            .finish()
    }
}

impl List {
    /// An empty list whose head will be at `first`.
    pub fn starting_at(first: i64) -> List {
        List { first, ..List::default() }
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the list has no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The absolute position of the head.
    pub fn first(&self) -> i64 {
        self.first
    }

    /// Heap bytes, O(1): the nodes' buffers and the deque that holds the nodes.
    pub fn heap_bytes(&self) -> usize {
        self.buffers + self.nodes.capacity() * std::mem::size_of::<Node>()
    }

    /// The node holding the element at `index` (< len), and the element's index in it;
    /// walked from the nearer end.
    fn find(&self, index: usize) -> (usize, usize) {
        debug_assert!(index < self.len);
        if index < self.len / 2 {
            let mut index = index;
            for (k, node) in self.nodes.iter().enumerate() {
                if index < node.count {
                    return (k, index);
                }
                index -= node.count;
            }
        } else {
            let mut behind = self.len - index;
            for (k, node) in self.nodes.iter().enumerate().rev() {
                if behind <= node.count {
                    return (k, node.count - behind);
                }
                behind -= node.count;
            }
        }
        unreachable!("the nodes hold len elements")
    }

    /// The element at `index` from the head.
    pub fn get(&self, index: usize) -> Option<&[u8]> {
        if index >= self.len {
            return None;
        }
        let (k, j) = self.find(index);
        Some(self.nodes[k].get(j))
    }

    /// Elements from the head.
    pub fn iter(&self) -> Iter<'_> {
        Iter { front: None, nodes: self.nodes.iter(), back: None, left: self.len }
    }

    /// Elements `start..end` from the head (clamped to the list).
    pub fn range(&self, start: usize, end: usize) -> Iter<'_> {
        let end = end.min(self.len);
        let start = start.min(end);
        if start == end {
            return Iter { front: None, nodes: self.nodes.range(0..0), back: None, left: 0 };
        }
        let (first, a) = self.find(start);
        let (last, b) = self.find(end - 1);
        if first == last {
            let front = Some(self.nodes[first].walk(a, b + 1));
            return Iter { front, nodes: self.nodes.range(0..0), back: None, left: end - start };
        }
        let front = Some(self.nodes[first].walk(a, self.nodes[first].count));
        let back = Some(self.nodes[last].walk(0, b + 1));
        Iter { front, nodes: self.nodes.range(first + 1..last), back, left: end - start }
    }

    /// Runs `edit` on node `k`, keeping `buffers` in step with its capacity.
    fn edit<R>(&mut self, k: usize, edit: impl FnOnce(&mut Node) -> R) -> R {
        let node = &mut self.nodes[k];
        let before = node.buf.capacity();
        let out = edit(node);
        self.buffers = self.buffers - before + node.buf.capacity();
        out
    }

    /// Adds node `node` at `k` of the deque.
    fn add_node(&mut self, k: usize, node: Node) {
        if self.nodes.capacity() == 0 {
            // A one-node list keeps a one-node deque.
            self.nodes.reserve_exact(1);
        }
        self.buffers += node.buf.capacity();
        self.nodes.insert(k, node);
    }

    /// Removes node `k` of the deque.
    fn drop_node(&mut self, k: usize) {
        let node = self.nodes.remove(k).expect("a node in the list");
        self.buffers -= node.buf.capacity();
    }

    /// Adds `item` at `end`, leaving `len` and `first` to the caller.
    fn push_raw(&mut self, end: End, item: &[u8]) {
        let pushed = match end {
            End::Left if !self.nodes.is_empty() => self.edit(0, |node| node.push_front(item)),
            End::Right if !self.nodes.is_empty() => self.edit(self.nodes.len() - 1, |node| node.push_back(item)),
            _ => false,
        };
        if !pushed {
            let at = if end == End::Left { 0 } else { self.nodes.len() };
            self.add_node(at, Node::of(item));
        }
    }

    /// Adds `item` at `end`.
    pub fn push(&mut self, end: End, item: &[u8]) {
        self.push_raw(end, item);
        self.len += 1;
        if end == End::Left {
            self.first -= 1;
        }
    }

    /// Takes the element at `end`, handing it to `take`.
    fn pop_with<R>(&mut self, end: End, take: impl FnOnce(&[u8]) -> R) -> Option<R> {
        if self.nodes.is_empty() {
            return None;
        }
        let k = if end == End::Left { 0 } else { self.nodes.len() - 1 };
        let taken = self.edit(k, |node| match end {
            End::Left => node.pop_front(take),
            End::Right => node.pop_back(take),
        });
        if self.nodes[k].count == 0 {
            self.drop_node(k);
        }
        self.len -= 1;
        if end == End::Left {
            self.first += 1;
        }
        Some(taken)
    }

    /// Takes the element at `end`.
    pub fn pop(&mut self, end: End) -> Option<Vec<u8>> {
        self.pop_with(end, <[u8]>::to_vec)
    }

    /// Replaces the element at `index` from the head; false when there is none.
    pub fn set(&mut self, index: usize, item: &[u8]) -> bool {
        if index >= self.len {
            return false;
        }
        let (k, j) = self.find(index);
        if !self.edit(k, |node| node.replace(j, item)) {
            // Too big for its node beside the others: out, and in as an insert is.
            self.edit(k, |node| node.remove(j));
            self.insert_at(k, j, item);
        }
        true
    }

    /// Inserts `item` before the element at `index` from the head (at the tail when
    /// `index` is the length). Positions after it shift: callers log the list whole.
    pub fn insert(&mut self, index: usize, item: &[u8]) {
        if index >= self.len {
            self.push_raw(End::Right, item);
        } else if index == 0 {
            self.push_raw(End::Left, item);
        } else {
            let (k, j) = self.find(index);
            self.insert_at(k, j, item);
        }
        self.len += 1;
    }

    /// Inserts `item` before element `j` of node `k` (`j < count`, or `j == count`
    /// when the node is the last element's), leaving `len` to the caller.
    fn insert_at(&mut self, k: usize, j: usize, item: &[u8]) {
        if self.edit(k, |node| node.insert(j, item)) {
            return;
        }
        // The node is full: split it at `j` and put the item between the halves, at
        // the end of one that has room, or in a node of its own.
        let mut gap = k;
        if j > 0 {
            let right = self.edit(k, |node| node.split_off(j));
            gap = k + 1;
            if right.count > 0 {
                self.add_node(gap, right);
            }
        }
        if gap > 0 && self.edit(gap - 1, |node| node.push_back(item)) {
            return;
        }
        if gap < self.nodes.len() && self.edit(gap, |node| node.push_front(item)) {
            return;
        }
        self.add_node(gap, Node::of(item));
    }

    /// Removes the elements for which `remove` says so, walking from `end`, at most
    /// `limit` of them (0: every one); returns how many went. Positions after the first
    /// removed shift: callers log the list whole.
    pub fn remove_matching(&mut self, end: End, limit: usize, mut remove: impl FnMut(&[u8]) -> bool) -> usize {
        let len = self.len;
        let mut doomed = Vec::new();
        let mut visit = |index: usize, item: &[u8]| {
            if remove(item) {
                doomed.push(index);
            }
            limit == 0 || doomed.len() < limit
        };
        match end {
            End::Left => {
                for (index, item) in self.iter().enumerate() {
                    if !visit(index, item) {
                        break;
                    }
                }
            }
            End::Right => {
                for (back, item) in self.iter().rev().enumerate() {
                    if !visit(len - 1 - back, item) {
                        break;
                    }
                }
                doomed.reverse();
            }
        }
        if doomed.is_empty() {
            return 0;
        }
        // Nodes without a removal move over whole; the survivors of the others are
        // pushed behind what precedes them, which packs them into as few nodes.
        let old = std::mem::replace(self, List::starting_at(self.first));
        let mut doomed_left = doomed.iter().copied().peekable();
        let mut base = 0;
        for node in old.nodes {
            let end = base + node.count;
            if doomed_left.peek().is_some_and(|&index| index < end) {
                for (j, item) in node.walk(0, node.count).enumerate() {
                    if doomed_left.next_if_eq(&(base + j)).is_none() {
                        self.push(End::Right, item);
                    }
                }
            } else {
                self.len += node.count;
                self.add_node(self.nodes.len(), node);
            }
            base = end;
        }
        doomed.len()
    }

    /// Drops `n` (≤ len) elements from the head.
    fn drop_front(&mut self, n: usize) {
        self.len -= n;
        self.first += n as i64;
        let mut n = n;
        while n > 0 {
            let count = self.nodes[0].count;
            if count <= n {
                self.drop_node(0);
                n -= count;
            } else {
                self.edit(0, |node| (0..n).for_each(|_| node.pop_front(|_| ())));
                n = 0;
            }
        }
    }

    /// Drops `n` (≤ len) elements from the tail.
    fn drop_back(&mut self, n: usize) {
        self.len -= n;
        let mut n = n;
        while n > 0 {
            let k = self.nodes.len() - 1;
            let count = self.nodes[k].count;
            if count <= n {
                self.drop_node(k);
                n -= count;
            } else {
                self.edit(k, |node| (0..n).for_each(|_| node.pop_back(|_| ())));
                n = 0;
            }
        }
    }

    /// Keeps only the elements `start..end` from the head (clamped), as LTRIM does.
    pub fn keep(&mut self, start: usize, end: usize) {
        let end = end.min(self.len);
        let start = start.min(end);
        self.drop_back(self.len - end);
        self.drop_front(start);
    }

    /// Recovery: makes the list cover exactly the positions `first..first + len`,
    /// dropping elements outside and adding empty ones where it did not reach (the
    /// records that follow fill or drop those: a window only grows over positions that
    /// held elements when the record was written).
    pub fn restore_window(&mut self, first: i64, len: u64) {
        let end = first.saturating_add(len as i64);
        let held = |list: &List| list.len as i128;
        let before = (i128::from(first) - i128::from(self.first)).clamp(0, held(self));
        self.drop_front(before as usize);
        let past = (i128::from(self.first) + held(self) - i128::from(end)).clamp(0, held(self));
        self.drop_back(past as usize);
        if self.is_empty() {
            self.first = first;
        }
        while self.first > first {
            self.push(End::Left, b"");
        }
        while self.first + (self.len as i64) < end {
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

/// The elements of a [`List`] (or of a range of it), from either end; the default is
/// the walk of no elements (LRANGE of a missing key).
#[derive(Debug, Clone, Default)]
pub struct Iter<'a> {
    /// The node being walked from the front, and the one from the back: each is
    /// walked only by its own end (until the nodes between run out).
    front: Option<NodeIter<'a>>,
    nodes: vec_deque::Iter<'a, Node>,
    back: Option<NodeIter<'a>>,
    left: usize,
}

impl<'a> Iterator for Iter<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        loop {
            if let Some(item) = self.front.as_mut().and_then(Iterator::next) {
                return Some(item);
            }
            match self.nodes.next() {
                Some(node) => self.front = Some(node.walk(0, node.count)),
                None => return self.back.as_mut().and_then(Iterator::next),
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl<'a> DoubleEndedIterator for Iter<'a> {
    fn next_back(&mut self) -> Option<&'a [u8]> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        loop {
            if let Some(item) = self.back.as_mut().and_then(DoubleEndedIterator::next_back) {
                return Some(item);
            }
            match self.nodes.next_back() {
                Some(node) => self.back = Some(node.walk(0, node.count)),
                None => return self.front.as_mut().and_then(DoubleEndedIterator::next_back),
            }
        }
    }
}

impl ExactSizeIterator for Iter<'_> {}

impl FusedIterator for Iter<'_> {}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    thread_local! {
        /// Live bytes moved within their buffers on this thread (`Node::place`).
        pub(super) static MOVED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    }

    fn items(list: &List) -> Vec<&[u8]> {
        list.iter().collect()
    }

    impl List {
        /// Every invariant of the module docs, and both walks of every node.
        fn check(&self) {
            assert_eq!(self.nodes.iter().map(|node| node.count).sum::<usize>(), self.len, "len");
            assert_eq!(self.nodes.iter().map(|node| node.buf.capacity()).sum::<usize>(), self.buffers, "buffers");
            for node in &self.nodes {
                assert!(node.count > 0, "an empty node");
                assert!(node.count == 1 || node.live() <= NODE_BYTES, "an overflowing node");
                let forward: Vec<_> = node.walk(0, node.count).collect();
                let mut backward: Vec<_> = node.walk(0, node.count).rev().collect();
                backward.reverse();
                assert_eq!(forward, backward, "the walks disagree");
                let mut link = node.head();
                for _ in 0..node.count {
                    link = node.step(link).1;
                }
                assert_eq!(link.at + link_len(link.prev), node.buf.len(), "the last link ends the buffer");
                assert_eq!(link_at(&node.buf, link.at).0, link.prev, "the last link holds the last length");
            }
        }
    }

    /// `n` bytes that differ from element to element.
    fn element(n: usize, seed: u8) -> Vec<u8> {
        (0..n).map(|i| seed.wrapping_add(i as u8)).collect()
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
        list.check();
        list.pop(End::Left);
        assert!(list.is_empty() && list.pop(End::Right).is_none() && list.pop(End::Left).is_none());
        assert_eq!(list.buffers, 0, "the emptied node went");
    }

    #[test]
    fn a_small_list_stays_small() {
        let mut list = List::default();
        for item in [b"a", b"b", b"c"] {
            list.push(End::Right, item);
        }
        assert_eq!(list.nodes.len(), 1);
        assert_eq!(list.heap_bytes(), MIN_CAPACITY + std::mem::size_of::<Node>());
        list.check();
    }

    #[test]
    fn a_node_pushed_at_both_ends_keeps_a_tight_buffer() {
        let mut list = List::default();
        let mut live = 2;
        for i in 0..300u16 {
            let item = element(usize::from(i % 7), i as u8);
            list.push(if i % 2 == 0 { End::Left } else { End::Right }, &item);
            live += item.len() + 1;
        }
        list.check();
        assert_eq!(list.nodes.len(), 1);
        assert!(list.buffers < 2 * live + MIN_CAPACITY, "{} bytes held for {live}", list.buffers);
        // A queue through one node, in at one end, out at the other, then both ways at
        // once: its bytes move a few times per byte pushed, not once per push.
        MOVED.with(|moved| moved.set(0));
        let mut pushed = 0;
        for i in 0..5_000u16 {
            let item = element(usize::from(i % 7), i as u8);
            let end = if i < 2_500 {
                End::Right
            } else if i % 2 == 0 {
                End::Left
            } else {
                End::Right
            };
            list.push(end, &item);
            list.pop(if end == End::Left { End::Right } else { End::Left });
            pushed += item.len() + 1;
        }
        assert_eq!(list.nodes.len(), 1);
        let moved = MOVED.with(std::cell::Cell::get);
        assert!(moved <= 4 * pushed, "{moved} bytes moved for {pushed} pushed");
        // Popping most of it gives most of the buffer back.
        for _ in 0..290 {
            list.pop(End::Right);
        }
        list.check();
        let live: usize = 1 + list.iter().map(|item| item.len() + 1).sum::<usize>();
        assert!(list.buffers < 4 * live, "{} bytes held for {live}", list.buffers);
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
        assert_eq!(list.remove_matching(End::Left, 0, |item| item == b"nothing"), 0);
        list.insert(1, b"z");
        list.insert(0, b"w");
        assert_eq!(items(&list), vec![&b"w"[..], b"x", b"z"]);
        assert_eq!(list.first(), 0, "an insert at the head takes the head's position");
        list.keep(1, 2);
        assert_eq!(items(&list), vec![&b"x"[..]]);
        assert_eq!(list.first(), 1);
        list.check();
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
        list.restore_at(0, b"ignored");
        assert_eq!((list.first(), items(&list)), (1, vec![&b"b"[..], b"c", b"d", b"e"]));
        // Applying it again leaves the same state.
        list.restore_window(1, 4);
        list.restore_at(3, b"d");
        list.restore_at(4, b"e");
        assert_eq!((list.first(), items(&list)), (1, vec![&b"b"[..], b"c", b"d", b"e"]));
        // A window before everything the list holds: all of it replaced.
        list.restore_window(-2, 1);
        assert_eq!((list.first(), items(&list)), (-2, vec![&b""[..]]));
        // One that reaches before the head pads it there.
        list.restore_window(-4, 3);
        assert_eq!((list.first(), items(&list)), (-4, vec![&b""[..], b"", b""]));
        list.check();
    }

    #[test]
    fn links_read_the_same_from_both_sides() {
        for value in [0, 1, 127, 128, 255, 256, 65_535, 65_536, usize::MAX] {
            let mut buf = vec![9];
            put_link(&mut buf, value);
            assert_eq!(buf.len(), 1 + link_len(value));
            assert_eq!(link_at(&buf, 1), (value, link_len(value)));
            assert_eq!(link_before(&buf, buf.len()), (value, link_len(value)));
            let mut written = vec![9; buf.len()];
            write_link(&mut written[1..], value);
            assert_eq!(written, buf);
        }
    }

    #[test]
    fn pushes_and_pops_cross_node_edges_at_both_ends() {
        let mut list = List::default();
        let n = 3_000;
        for i in 0..n {
            list.push(End::Right, format!("right:{i}").as_bytes());
            list.push(End::Left, format!("left:{i}").as_bytes());
        }
        list.check();
        assert!(list.nodes.len() > 4, "several nodes: {}", list.nodes.len());
        assert_eq!((list.len(), list.first()), (2 * n, -(n as i64)));
        assert_eq!(list.get(0), Some(format!("left:{}", n - 1).as_bytes()));
        assert_eq!(list.get(2 * n - 1), Some(format!("right:{}", n - 1).as_bytes()));
        assert_eq!(list.get(n), Some(&b"right:0"[..]));
        assert_eq!(list.get(2 * n), None);
        // Full nodes: about a node's worth of bytes each.
        let bytes: usize = list.iter().map(|item| item.len() + 1).sum();
        assert!(list.heap_bytes() < bytes + bytes / 8 + 2 * NODE_BYTES, "{} for {bytes}", list.heap_bytes());
        // Pop each end past its nodes and the other's: a queue both ways.
        for i in (0..n).rev() {
            assert_eq!(list.pop(End::Left), Some(format!("left:{i}").into_bytes()));
        }
        list.check();
        for i in 0..n / 2 {
            assert_eq!(list.pop(End::Left), Some(format!("right:{i}").into_bytes()));
            list.push(End::Right, format!("again:{i}").as_bytes());
        }
        for i in (0..n / 2).rev() {
            assert_eq!(list.pop(End::Right), Some(format!("again:{i}").into_bytes()));
        }
        for i in (n / 2..n).rev() {
            assert_eq!(list.pop(End::Right), Some(format!("right:{i}").into_bytes()));
        }
        assert!(list.is_empty());
        assert_eq!((list.first(), list.buffers), (n as i64 / 2, 0));
    }

    #[test]
    fn middle_edits_in_a_list_of_many_nodes() {
        let mut list = List::default();
        let mut model: Vec<Vec<u8>> = Vec::new();
        for i in 0..4_000 {
            let item = format!("item:{i}").into_bytes();
            list.push(End::Right, &item);
            model.push(item);
        }
        let nodes = list.nodes.len();
        // Sets that grow an element overflow their (full) node: it splits.
        for index in [0, 1, 700, 2_000, 3_999] {
            let item = element(300, index as u8);
            assert!(list.set(index, &item));
            model[index] = item;
            list.check();
        }
        assert!(list.nodes.len() > nodes);
        assert!(!list.set(4_000, b"past the end"));
        for index in [0, 5, 1_234, 2_500, 4_005] {
            let item = format!("new:{index}").into_bytes();
            list.insert(index, &item);
            model.insert(index.min(model.len()), item);
            list.check();
        }
        assert_eq!(list.first(), 0);
        assert_eq!(items(&list), model.iter().map(Vec::as_slice).collect::<Vec<_>>());
        let removed = list.remove_matching(End::Left, 0, |item| item.ends_with(b"7"));
        model.retain(|item| !item.ends_with(b"7"));
        assert_eq!(removed, 4_005 - model.len());
        list.check();
        assert_eq!(items(&list), model.iter().map(Vec::as_slice).collect::<Vec<_>>());
        for index in (0..model.len()).step_by(97) {
            assert_eq!(list.get(index), Some(&model[index][..]));
        }
        let (start, end) = (1_000, 2_500);
        assert_eq!(
            list.range(start, end).collect::<Vec<_>>(),
            model[start..end].iter().map(Vec::as_slice).collect::<Vec<_>>()
        );
        assert_eq!(list.range(start, end).rev().count(), end - start);
        list.keep(10, 3_000);
        model = model[10..3_000].to_vec();
        assert_eq!(list.first(), 10);
        assert_eq!(items(&list), model.iter().map(Vec::as_slice).collect::<Vec<_>>());
        list.check();
    }

    #[test]
    fn big_and_empty_elements() {
        let big = element(3 * NODE_BYTES, 1);
        let mut list = List::default();
        list.push(End::Right, b"");
        list.push(End::Right, &big);
        list.push(End::Left, &big);
        list.push(End::Right, b"");
        list.push(End::Left, b"");
        list.check();
        assert_eq!(items(&list), vec![&b""[..], &big, b"", &big, b""]);
        assert!(list.nodes.iter().all(|node| node.count == 1 || node.live() <= NODE_BYTES));
        // A big element set or inserted in a small node gets a node of its own.
        assert!(list.set(2, &big));
        list.insert(1, &big);
        list.check();
        assert_eq!(items(&list), vec![&b""[..], &big, &big, &big, &big, b""]);
        assert!(list.set(1, b""));
        assert_eq!(list.get(1), Some(&b""[..]));
        assert_eq!(list.pop(End::Right).as_deref(), Some(&b""[..]));
        assert_eq!(list.pop(End::Right), Some(big.clone()));
        assert_eq!(list.pop(End::Left).as_deref(), Some(&b""[..]));
        assert_eq!(list.remove_matching(End::Right, 1, |item| item.len() == big.len()), 1);
        list.check();
        assert_eq!(items(&list), vec![&b""[..], &big]);
        // Only empty elements: a link byte each.
        let mut empty = List::default();
        for _ in 0..20_000 {
            empty.push(End::Left, b"");
        }
        empty.check();
        assert_eq!(empty.iter().filter(|item| item.is_empty()).count(), 20_000);
        assert!(empty.nodes.len() <= 4);
        empty.keep(5_000, 5_003);
        assert_eq!((empty.len(), empty.first()), (3, -15_000));
        empty.check();
    }

    #[test]
    fn a_clone_holds_the_same_and_counts_its_own_buffers() {
        let mut list = List::default();
        for i in 0..2_000 {
            list.push(if i % 3 == 0 { End::Left } else { End::Right }, &element(i % 40, i as u8));
        }
        list.pop(End::Left);
        let copy = list.clone();
        copy.check();
        assert_eq!((items(&copy), copy.first()), (items(&list), list.first()));
        assert!(copy.heap_bytes() <= list.heap_bytes());
    }

    /// One step of the property test.
    #[derive(Debug, Clone)]
    enum Op {
        Push(bool, usize, u8),
        /// Many short elements at once, so that nodes fill.
        PushMany(bool, usize, u8),
        Pop(bool),
        Set(usize, usize, u8),
        Insert(usize, usize, u8),
        Remove(bool, usize, u8),
        Keep(usize, usize),
        Range(usize, usize),
    }

    fn size() -> impl Strategy<Value = usize> {
        prop_oneof![6 => 0usize..16, 3 => 16usize..400, 1 => 400usize..(2 * NODE_BYTES)]
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            6 => (any::<bool>(), size(), any::<u8>()).prop_map(|(left, n, seed)| Op::Push(left, n, seed)),
            2 => (any::<bool>(), 1usize..800, any::<u8>()).prop_map(|(left, n, seed)| Op::PushMany(left, n, seed)),
            4 => any::<bool>().prop_map(Op::Pop),
            2 => (any::<usize>(), size(), any::<u8>()).prop_map(|(at, n, seed)| Op::Set(at, n, seed)),
            2 => (any::<usize>(), size(), any::<u8>()).prop_map(|(at, n, seed)| Op::Insert(at, n, seed)),
            1 => (any::<bool>(), 0usize..4, any::<u8>()).prop_map(|(left, limit, seed)| Op::Remove(left, limit, seed)),
            1 => (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Op::Keep(a, b)),
            2 => (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Op::Range(a, b)),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]
        #[test]
        fn the_list_matches_a_deque(ops in prop::collection::vec(op(), 1..120)) {
            use std::collections::VecDeque;
            let mut list = List::starting_at(7);
            let mut model: VecDeque<Vec<u8>> = VecDeque::new();
            let mut first = 7i64;
            for op in ops {
                let len = model.len();
                match op {
                    Op::Push(left, n, seed) => {
                        let item = element(n, seed);
                        if left {
                            list.push(End::Left, &item);
                            model.push_front(item);
                            first -= 1;
                        } else {
                            list.push(End::Right, &item);
                            model.push_back(item);
                        }
                    }
                    Op::PushMany(left, n, seed) => {
                        for i in 0..n {
                            let item = element(i % 9, seed.wrapping_add(i as u8));
                            if left {
                                list.push(End::Left, &item);
                                model.push_front(item);
                                first -= 1;
                            } else {
                                list.push(End::Right, &item);
                                model.push_back(item);
                            }
                        }
                    }
                    Op::Pop(left) => {
                        if left {
                            let want = model.pop_front();
                            if want.is_some() {
                                first += 1;
                            }
                            prop_assert_eq!(list.pop(End::Left), want);
                        } else {
                            prop_assert_eq!(list.pop(End::Right), model.pop_back());
                        }
                    }
                    Op::Set(at, n, seed) => {
                        let item = element(n, seed);
                        let index = if len == 0 { at % 2 } else { at % (len + 1) };
                        prop_assert_eq!(list.set(index, &item), index < len);
                        if index < len {
                            model[index] = item;
                        }
                    }
                    Op::Insert(at, n, seed) => {
                        let item = element(n, seed);
                        let index = at % (len + 1);
                        list.insert(index, &item);
                        model.insert(index, item);
                    }
                    Op::Remove(left, limit, seed) => {
                        // Elements whose first byte is the seed's low bits.
                        let doomed = |item: &[u8]| item.first().is_some_and(|b| b % 4 == seed % 4);
                        let removed = list.remove_matching(if left { End::Left } else { End::Right }, limit, doomed);
                        let mut order: Vec<usize> = (0..len).collect();
                        if !left {
                            order.reverse();
                        }
                        let mut gone: Vec<usize> = order.into_iter().filter(|&i| doomed(&model[i])).collect();
                        if limit != 0 {
                            gone.truncate(limit);
                        }
                        prop_assert_eq!(removed, gone.len());
                        let mut kept = vec![true; len];
                        gone.iter().for_each(|&i| kept[i] = false);
                        let mut index = 0;
                        model.retain(|_| {
                            index += 1;
                            kept[index - 1]
                        });
                    }
                    Op::Keep(a, b) => {
                        let end = if len == 0 { 0 } else { b % (len + 2) };
                        let start = if len == 0 { 0 } else { a % (len + 2) };
                        list.keep(start, end);
                        let end = end.min(len);
                        let start = start.min(end);
                        model.truncate(end);
                        model.drain(..start);
                        first += start as i64;
                    }
                    Op::Range(a, b) => {
                        let (start, end) = (a % (len + 2), b % (len + 2));
                        let got: Vec<&[u8]> = list.range(start, end).collect();
                        let (s, e) = (start.min(end.min(len)), end.min(len));
                        let want: Vec<&[u8]> = model.range(s..e).map(Vec::as_slice).collect();
                        prop_assert_eq!(&got, &want);
                        let mut back: Vec<&[u8]> = list.range(start, end).rev().collect();
                        back.reverse();
                        prop_assert_eq!(back, want);
                        prop_assert_eq!(list.range(start, end).len(), e - s);
                    }
                }
                list.check();
                prop_assert_eq!(list.len(), model.len());
                prop_assert_eq!(list.first(), first);
            }
            let want: Vec<&[u8]> = model.iter().map(Vec::as_slice).collect();
            prop_assert_eq!(list.iter().collect::<Vec<_>>(), want.clone());
            let mut back: Vec<&[u8]> = list.iter().rev().collect();
            back.reverse();
            prop_assert_eq!(back, want.clone());
            // Both ends at once: the walks meet in the middle.
            let mut iter = list.iter();
            let (mut head, mut tail) = (Vec::new(), Vec::new());
            loop {
                prop_assert_eq!(iter.len(), want.len() - head.len() - tail.len());
                match iter.next() {
                    Some(item) => head.push(item),
                    None => break,
                }
                match iter.next_back() {
                    Some(item) => tail.push(item),
                    None => break,
                }
            }
            tail.reverse();
            head.extend(tail);
            prop_assert_eq!(head, want.clone());
            for (index, item) in want.iter().enumerate() {
                prop_assert_eq!(list.get(index), Some(*item));
            }
        }
    }
}
