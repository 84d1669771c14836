//! A character trie of the vocabulary, for the lookups that walk words by their start:
//! prefixes, and edit distance where the table of deletion variants (`deletions`) does
//! not answer (2 edits on words under 8 letters, words over 20 letters, 3 edits).
//!
//! Owns: the trie's nodes (children by character, the term id ending at a node) and the
//! two walks over it. The edit-distance walk carries one row of the distance table per
//! depth and goes down a branch only while some word below it can still come within the
//! limit, so it touches a small part of the trie instead of every word. Never: know what
//! a term id stands for beyond the characters that lead to it.

use super::vocab::TermId;

const NONE: u32 = u32::MAX;

/// A node: the character leading to it, the term ending at it, and its children as a
/// list (first child, next sibling): 16 bytes, where a vector of children costs twice.
#[derive(Debug, Clone, Copy)]
struct Node {
    c: char,
    term: u32,
    first_child: u32,
    next_sibling: u32,
}

/// The trie; node 0 is the root (the empty prefix).
#[derive(Debug, Clone)]
pub struct Trie {
    nodes: Vec<Node>,
    /// Nodes added since the nodes were last laid out breadth first.
    scattered: usize,
}

impl Default for Trie {
    fn default() -> Trie {
        Trie { nodes: vec![Node { c: '\0', term: NONE, first_child: NONE, next_sibling: NONE }], scattered: 0 }
    }
}

impl Trie {
    fn children(&self, node: usize) -> impl Iterator<Item = (char, usize)> + '_ {
        let mut at = self.nodes[node].first_child;
        std::iter::from_fn(move || {
            let child = (at != NONE).then_some(at as usize)?;
            at = self.nodes[child].next_sibling;
            Some((self.nodes[child].c, child))
        })
    }

    fn child(&self, node: usize, c: char) -> Option<usize> {
        self.children(node).find(|(k, _)| *k == c).map(|(_, child)| child)
    }

    /// Adds `word` ending in term `id` (a word inserted again takes the new id).
    pub fn insert(&mut self, word: &str, id: TermId) {
        let mut at = 0usize;
        for c in word.chars() {
            at = match self.child(at, c) {
                Some(child) => child,
                None => {
                    let child = u32::try_from(self.nodes.len()).expect("fewer than 2^32 trie nodes");
                    let next_sibling = self.nodes[at].first_child;
                    self.nodes.push(Node { c, term: NONE, first_child: NONE, next_sibling });
                    self.nodes[at].first_child = child;
                    self.scattered += 1;
                    child as usize
                }
            };
        }
        self.nodes[at].term = id;
        if self.scattered > 1024 && self.scattered * 8 > self.nodes.len() {
            self.lay_out();
        }
    }

    /// Lays the nodes out breadth first, so every node's children sit next to each other:
    /// the typo walk reads all children of each node it visits, and with siblings spread
    /// over memory each of them was a cache miss. Done when an eighth of the nodes were
    /// added since the last time, so its cost (linear) is amortised over those inserts.
    fn lay_out(&mut self) {
        let mut order: Vec<u32> = Vec::with_capacity(self.nodes.len());
        let mut place = vec![NONE; self.nodes.len()];
        order.push(0);
        place[0] = 0;
        let mut next = 0;
        while next < order.len() {
            let mut child = self.nodes[order[next] as usize].first_child;
            while child != NONE {
                place[child as usize] = order.len() as u32;
                order.push(child);
                child = self.nodes[child as usize].next_sibling;
            }
            next += 1;
        }
        let moved = |old: u32| if old == NONE { NONE } else { place[old as usize] };
        self.nodes = order
            .iter()
            .map(|&old| {
                let node = self.nodes[old as usize];
                Node { first_child: moved(node.first_child), next_sibling: moved(node.next_sibling), ..node }
            })
            .collect();
        self.scattered = 0;
    }

    /// Calls `f` with every word starting with `prefix`.
    pub fn with_prefix(&self, prefix: &str, mut f: impl FnMut(TermId)) {
        let mut at = 0usize;
        for c in prefix.chars() {
            match self.child(at, c) {
                Some(child) => at = child,
                None => return,
            }
        }
        let mut stack = vec![at];
        while let Some(node) = stack.pop() {
            if self.nodes[node].term != NONE {
                f(self.nodes[node].term);
            }
            stack.extend(self.children(node).map(|(_, child)| child));
        }
    }

    /// Calls `f(id, edits)` with every word within `max` edits (optimal string alignment:
    /// a swap of neighbours is one edit) of `query` whose first letter is the query's,
    /// and every word within `max - 1` edits whose first letter differs: a typo in the
    /// first letter counts as two. People rarely mistype the first letter, and the rule
    /// spares the walk most of the trie (every branch but one under the root gets a
    /// smaller budget).
    pub fn within_edits(&self, query: &[char], max: u8, f: &mut dyn FnMut(TermId, u8)) {
        let width = query.len() + 1;
        let mut walk =
            Walk { query, max, width, rows: (0..width).map(|j| j.min(255) as u8).collect(), path: Vec::new() };
        // The empty word differs in its first letter unless the query is empty too.
        if self.nodes[0].term != NONE && query.len() + usize::from(!query.is_empty()) <= max as usize {
            f(self.nodes[0].term, query.len() as u8);
        }
        for (c, child) in self.children(0) {
            let budget = if query.first() == Some(&c) { max } else { max.saturating_sub(1) };
            if budget == 0 && query.first() != Some(&c) {
                continue;
            }
            walk.max = budget;
            self.step(c, child, &mut walk, f);
        }
    }

    /// Visits `child` (reached by `c`) and, while within reach, its subtree.
    fn step(&self, c: char, child: usize, walk: &mut Walk<'_>, f: &mut dyn FnMut(TermId, u8)) {
        let low = walk.push(c);
        let depth = walk.path.len();
        let term = self.nodes[child].term;
        let last = walk.rows[depth * walk.width + walk.width - 1];
        if term != NONE && last <= walk.max {
            f(term, last);
        }
        // A swap reaches back two rows: go on while either of the last two rows still
        // has a cell within reach.
        let previous_low = walk.row_min(depth - 1);
        if low <= walk.max || previous_low < walk.max {
            self.descend(child, walk, f);
        }
        walk.pop();
    }

    fn descend(&self, node: usize, walk: &mut Walk<'_>, f: &mut dyn FnMut(TermId, u8)) {
        for (c, child) in self.children(node) {
            self.step(c, child, walk, f);
        }
    }

    /// Approximate bytes held.
    pub fn memory_bytes(&self) -> usize {
        self.nodes.capacity() * std::mem::size_of::<Node>()
    }

    /// Lays the nodes out now (the end of a bulk load).
    pub fn settle(&mut self) {
        if self.scattered > 0 {
            self.lay_out();
        }
    }
}

/// The distance rows of the path walked so far.
struct Walk<'q> {
    query: &'q [char],
    max: u8,
    width: usize,
    /// Row `d` holds the distances for the path's first `d` characters.
    rows: Vec<u8>,
    path: Vec<char>,
}

impl Walk<'_> {
    fn row_min(&self, depth: usize) -> u8 {
        self.rows[depth * self.width..(depth + 1) * self.width].iter().copied().min().unwrap_or(u8::MAX)
    }

    /// Steps down by `c`; returns the new row's minimum. Only the band of cells within
    /// `max` of the diagonal can come within the limit (a cell `|i - j|` off it costs at
    /// least that many edits), so the others are written as `max + 1` without work.
    fn push(&mut self, c: char) -> u8 {
        self.path.push(c);
        let (width, depth) = (self.width, self.path.len());
        let base = (depth - 1) * width;
        let over = self.max.saturating_add(1);
        let band = depth.saturating_sub(self.max as usize)..=(depth + self.max as usize).min(width - 1);
        let mut low = u8::MAX;
        for j in 0..width {
            let value = if !band.contains(&j) {
                over
            } else if j == 0 {
                depth.min(255) as u8
            } else {
                let substitute = self.rows[base + j - 1].saturating_add(u8::from(self.query[j - 1] != c));
                let delete = self.rows[base + j].saturating_add(1);
                let insert = self.rows[base + width + j - 1].saturating_add(1);
                let mut best = substitute.min(delete).min(insert);
                if depth > 1 && j > 1 && c == self.query[j - 2] && self.path[depth - 2] == self.query[j - 1] {
                    best = best.min(self.rows[base - width + j - 2].saturating_add(1));
                }
                best.min(over)
            };
            self.rows.push(value);
            low = low.min(value);
        }
        low
    }

    fn pop(&mut self) {
        self.path.pop();
        self.rows.truncate((self.path.len() + 1) * self.width);
    }
}
