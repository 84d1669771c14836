//! Byte strings that keep short contents inline.
//!
//! Owns: [`InlineBytes`] (up to N bytes in place, no heap) and [`SmallBytes`], the key
//! (and hash field name) storage of a [`SlabMap`] slot and of the keys a write notes for
//! the log. Keys of up to [`SmallBytes::INLINE`] bytes — most real keys, and every key
//! redis-benchmark sends — live inside the slot itself, so a lookup compares them in the
//! cache line it already loaded for the slot instead of following a pointer to the heap
//! (a second cache miss per command on a large keyspace, measured as ~8% of a SET). Short
//! string values use [`InlineBytes`] too (`StrValue::Short`).
//!
//! Must never: use `unsafe`, or let the two representations of equal bytes compare or
//! hash differently (everything goes through [`SmallBytes::as_bytes`]).
//!
//! [`SlabMap`]: crate::store::slab_map::SlabMap

use std::fmt;
use std::ops::Deref;

/// Up to `N` (at most 255) bytes held in place: `N + 1` bytes, alignment 1, so an enum
/// can put it beside its tag.
#[derive(Clone, Copy)]
pub struct InlineBytes<const N: usize> {
    len: u8,
    bytes: [u8; N],
}

impl<const N: usize> InlineBytes<N> {
    /// `source` held in place, or `None` when it is longer than `N`.
    pub fn new(source: &[u8]) -> Option<Self> {
        let len = u8::try_from(source.len()).ok().filter(|_| source.len() <= N)?;
        let mut bytes = [0; N];
        bytes[..source.len()].copy_from_slice(source);
        Some(Self { len, bytes })
    }

    /// The contents.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }
}

/// Bytes stored inline when short, on the heap otherwise. 24 bytes, like a `Vec`.
#[derive(Clone)]
pub enum SmallBytes {
    /// Up to [`SmallBytes::INLINE`] bytes.
    Inline(InlineBytes<{ SmallBytes::INLINE }>),
    /// Anything longer.
    Heap(Box<[u8]>),
}

impl SmallBytes {
    /// The longest contents kept inline.
    pub const INLINE: usize = 22;

    /// The contents.
    pub fn as_bytes(&self) -> &[u8] {
        match self {
            Self::Inline(inline) => inline.as_bytes(),
            Self::Heap(bytes) => bytes,
        }
    }
}

impl From<&[u8]> for SmallBytes {
    fn from(source: &[u8]) -> Self {
        InlineBytes::new(source).map_or_else(|| Self::Heap(source.into()), Self::Inline)
    }
}

impl Deref for SmallBytes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl PartialEq for SmallBytes {
    fn eq(&self, other: &Self) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl Eq for SmallBytes {}

/// Hashes as the bytes do, so a map keyed by `SmallBytes` is searched with `&[u8]`.
impl std::hash::Hash for SmallBytes {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.as_bytes().hash(state);
    }
}

impl std::borrow::Borrow<[u8]> for SmallBytes {
    fn borrow(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl PartialOrd for SmallBytes {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for SmallBytes {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.as_bytes().cmp(other.as_bytes())
    }
}

/// Printed as the escaped text, whichever way the bytes are held.
fn debug_bytes(bytes: &[u8], f: &mut fmt::Formatter<'_>) -> fmt::Result {
    write!(f, "{:?}", bytes.escape_ascii().to_string())
}

impl fmt::Debug for SmallBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        debug_bytes(self.as_bytes(), f)
    }
}

impl<const N: usize> fmt::Debug for InlineBytes<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        debug_bytes(self.as_bytes(), f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_contents_stay_inline_and_long_ones_go_to_the_heap() {
        for len in [0, 1, 16, SmallBytes::INLINE, SmallBytes::INLINE + 1, 300] {
            let source: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
            let small = SmallBytes::from(&source[..]);
            assert_eq!(small.as_bytes(), &source[..], "len {len}");
            assert_eq!(matches!(small, SmallBytes::Inline(_)), len <= SmallBytes::INLINE, "len {len}");
        }
    }

    #[test]
    fn equality_is_by_contents_only() {
        let inline = SmallBytes::from(&b"key:1"[..]);
        let heap = SmallBytes::Heap(b"key:1"[..].into());
        assert_eq!(inline, heap);
        assert_ne!(inline, SmallBytes::from(&b"key:2"[..]));
        // Ordered by contents whichever way each side is stored.
        let long = SmallBytes::from(&[b'a'; 40][..]);
        assert!(long < SmallBytes::from(&b"k"[..]) && SmallBytes::from(&b"k"[..]) < inline);
        assert!(inline < SmallBytes::from(&b"key:2"[..]) && SmallBytes::from(&[b'z'; 40][..]) > inline);
        assert_eq!(std::mem::size_of::<SmallBytes>(), 24);
    }

    #[test]
    fn inline_bytes_take_up_to_their_capacity() {
        assert_eq!(InlineBytes::<4>::new(b"abcd").map(|b| b.as_bytes().to_vec()), Some(b"abcd".to_vec()));
        assert_eq!(InlineBytes::<4>::new(b"").map(|b| b.as_bytes().len()), Some(0));
        assert!(InlineBytes::<4>::new(b"abcde").is_none());
        assert!(InlineBytes::<255>::new(&[1; 255]).is_some() && InlineBytes::<255>::new(&[1; 256]).is_none());
    }
}
