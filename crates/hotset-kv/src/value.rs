//! What a key holds.
//!
//! Owns: [`Value`] (string, hash, list, set, sorted set or stream), [`StrValue`] (the two encodings of a
//! string) and [`Entry`] (value, optional absolute expiry and access stamp).
//!
//! Must never: expose an encoding difference to callers. `Int(i)` is only an
//! optimisation so INCR does not re-parse; reading it back must yield exactly
//! the bytes a client stored or Redis would reply.
//!
//! Invariants:
//! - `StrValue::Int` is used only for byte strings that `parse_i64` accepts,
//!   which round-trip exactly, so `to_bytes` is byte-for-byte faithful.
//! - `heap_bytes` is O(1) (hashes cache their size), which is what lets the
//!   shard keep memory accounting incremental.

use std::num::NonZeroU64;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::store::small_bytes::InlineBytes;
use crate::types::field_map::FieldMap;
use crate::types::list::List;
use crate::types::number::{format_i64_inline, i64_text_len, parse_f64, parse_i64};
use crate::types::set::MemberSet;
use crate::types::stream::Stream;
use crate::types::zset::SortedSet;

/// A string value in its cheapest faithful encoding.
#[derive(Debug, Clone)]
pub enum StrValue {
    /// A canonical decimal integer (stored without its text).
    Int(i64),
    /// Other bytes, up to [`StrValue::SHORT`] of them, kept inside the value: a SET of a
    /// short value allocates nothing and a GET follows no pointer.
    Short(InlineBytes<{ StrValue::SHORT }>),
    /// Any longer bytes. A `Vec` rather than a boxed slice so APPEND grows in
    /// amortised O(1) instead of copying the whole value every time.
    Raw(Vec<u8>),
}

impl PartialEq for StrValue {
    /// Equal when the strings are: the encoding is not part of the value.
    fn eq(&self, other: &Self) -> bool {
        self.with_bytes(|mine| other.with_bytes(|theirs| mine == theirs))
    }
}

impl StrValue {
    /// The longest string kept in [`StrValue::Short`] (the variant is as large as `Raw`).
    pub const SHORT: usize = 30;

    /// Picks the encoding for `bytes`.
    pub fn from_bytes(bytes: &[u8]) -> Self {
        match parse_i64(bytes) {
            Some(i) => Self::Int(i),
            None => InlineBytes::new(bytes).map_or_else(|| Self::Raw(bytes.to_vec()), Self::Short),
        }
    }

    /// Like [`from_bytes`](Self::from_bytes) but reuses an owned buffer.
    pub fn from_vec(bytes: Vec<u8>) -> Self {
        match parse_i64(&bytes) {
            Some(i) => Self::Int(i),
            None => InlineBytes::new(&bytes).map_or(Self::Raw(bytes), Self::Short),
        }
    }

    /// The bytes of a string not stored as an integer.
    pub fn text(&self) -> Option<&[u8]> {
        match self {
            Self::Int(_) => None,
            Self::Short(inline) => Some(inline.as_bytes()),
            Self::Raw(bytes) => Some(bytes),
        }
    }

    /// APPEND: extends the string in place, re-deriving the encoding so a
    /// result that is a canonical integer becomes cheap to INCR.
    pub fn append(&mut self, tail: &[u8]) {
        match self {
            Self::Raw(bytes) => {
                bytes.extend_from_slice(tail);
                if let Some(i) = parse_i64(bytes) {
                    *self = Self::Int(i);
                }
            }
            _ => {
                let mut bytes = self.to_bytes();
                bytes.extend_from_slice(tail);
                *self = Self::from_vec(bytes);
            }
        }
    }

    /// The exact bytes of the string.
    pub fn to_bytes(&self) -> Vec<u8> {
        self.with_bytes(<[u8]>::to_vec)
    }

    /// Calls `f` with the exact bytes of the string, without allocating.
    pub fn with_bytes<R>(&self, f: impl FnOnce(&[u8]) -> R) -> R {
        match self {
            Self::Int(i) => {
                let (buffer, start) = format_i64_inline(*i);
                f(&buffer[start..])
            }
            _ => f(self.text().unwrap_or_default()),
        }
    }

    /// The bytes, owned: a long string's buffer moves out without a copy.
    pub fn into_vec(self) -> Vec<u8> {
        match self {
            Self::Raw(bytes) => bytes,
            other => other.to_bytes(),
        }
    }

    /// Length in bytes (STRLEN).
    pub fn len(&self) -> usize {
        match self {
            Self::Int(i) => i64_text_len(*i),
            _ => self.text().map_or(0, <[u8]>::len),
        }
    }

    /// The value as an integer, if it is one (INCR rules).
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Self::Int(i) => Some(*i),
            _ => self.text().and_then(parse_i64),
        }
    }

    /// The value as a float, if it is one (INCRBYFLOAT rules).
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Self::Int(i) => Some(*i as f64),
            _ => self.text().and_then(parse_f64),
        }
    }

    /// Heap bytes owned by the value.
    pub fn heap_bytes(&self) -> usize {
        match self {
            Self::Int(_) | Self::Short(_) => 0,
            Self::Raw(bytes) => bytes.capacity(),
        }
    }
}

/// The value stored under a key.
#[derive(Debug, Clone)]
pub enum Value {
    /// A Redis string.
    Str(StrValue),
    /// A Redis hash. Boxed so string keys do not pay for the map's size.
    Hash(Box<FieldMap>),
    /// A Redis list, boxed likewise.
    List(Box<List>),
    /// A Redis set, boxed likewise.
    Set(Box<MemberSet>),
    /// A Redis sorted set, boxed likewise.
    ZSet(Box<SortedSet>),
    /// A Redis stream, boxed likewise.
    Stream(Box<Stream>),
}

impl Value {
    /// Redis' TYPE name.
    pub fn type_name(&self) -> &'static str {
        match self {
            Self::Str(_) => "string",
            Self::Hash(_) => "hash",
            Self::List(_) => "list",
            Self::Set(_) => "set",
            Self::ZSet(_) => "zset",
            Self::Stream(_) => "stream",
        }
    }

    /// The encoding Redis 7.0 would report for this value (OBJECT ENCODING) at its
    /// default thresholds: Hotset's encodings are its own, so this names what a Redis
    /// holding the same contents would use (lists are always `quicklist` in 7.0).
    pub fn redis_encoding(&self) -> &'static str {
        // Redis' listpack limits for hashes and sorted sets, and its intset limit.
        const SMALL_ENTRIES: usize = 128;
        const SMALL_BYTES: usize = 64;
        const INTSET_ENTRIES: usize = 512;
        match self {
            Self::Str(StrValue::Int(_)) => "int",
            Self::Str(text) if text.len() <= 44 => "embstr",
            Self::Str(_) => "raw",
            Self::List(_) => "quicklist",
            Self::Set(set) if set.len() <= INTSET_ENTRIES && set.all_integers() => "intset",
            Self::Set(_) => "hashtable",
            Self::Hash(map)
                if map.len() <= SMALL_ENTRIES
                    && map.iter().all(|(field, value)| field.len() <= SMALL_BYTES && value.len() <= SMALL_BYTES) =>
            {
                "listpack"
            }
            Self::Hash(_) => "hashtable",
            Self::ZSet(set) if set.is_small() => "listpack",
            Self::ZSet(_) => "skiplist",
            Self::Stream(_) => "stream",
        }
    }

    /// Heap bytes owned by the value, in O(1).
    pub fn heap_bytes(&self) -> usize {
        match self {
            Self::Str(s) => s.heap_bytes(),
            Self::Hash(h) => std::mem::size_of::<FieldMap>() + h.heap_bytes(),
            Self::List(l) => std::mem::size_of::<List>() + l.heap_bytes(),
            Self::Set(s) => std::mem::size_of::<MemberSet>() + s.heap_bytes(),
            Self::ZSet(z) => std::mem::size_of::<SortedSet>() + z.heap_bytes(),
            Self::Stream(s) => std::mem::size_of::<Stream>() + s.heap_bytes(),
        }
    }
}

/// Bits of an entry's word that hold its deadline; the access stamp (`recency`) is above.
const DEADLINE_BITS: u32 = 44;
const DEADLINE_MASK: u64 = (1 << DEADLINE_BITS) - 1;

/// A stored key's payload: the value, and one word holding its deadline (the low 44 bits,
/// 0 for none) and its access stamp (the high 20 bits, see `recency`).
///
/// 44 bits of milliseconds reach the year 2527; a later deadline is kept as the last
/// millisecond of that range (PTTL then reads less than was asked, the key still outlives
/// anyone who could notice). Sharing the word keeps an entry at 40 bytes: the stamp costs
/// a million keys nothing, where a field of its own would cost 8 MB. The word is atomic
/// because a read refreshes the stamp under the shard's shared lock; the deadline only
/// changes under its exclusive lock.
#[derive(Debug)]
pub struct Entry {
    /// The value.
    pub value: Value,
    word: AtomicU64,
}

impl Clone for Entry {
    fn clone(&self) -> Self {
        Entry { value: self.value.clone(), word: AtomicU64::new(self.word.load(Ordering::Relaxed)) }
    }
}

impl Entry {
    /// An entry with `value` and deadline `expire_at` (absolute ms since the epoch; never
    /// zero: a deadline at or before "now" deletes the key instead of being stored), its
    /// access stamp zero until the shard stores it.
    pub fn new(value: Value, expire_at: Option<NonZeroU64>) -> Self {
        Entry { value, word: AtomicU64::new(Self::deadline_bits(expire_at)) }
    }

    fn deadline_bits(expire_at: Option<NonZeroU64>) -> u64 {
        expire_at.map_or(0, |at| at.get().min(DEADLINE_MASK))
    }

    /// The deadline, if any.
    pub fn expire_at(&self) -> Option<NonZeroU64> {
        NonZeroU64::new(self.word.load(Ordering::Relaxed) & DEADLINE_MASK)
    }

    /// Sets or clears the deadline (the shard keeps its TTL index in step).
    pub(crate) fn set_expire_at(&mut self, expire_at: Option<NonZeroU64>) {
        let word = self.word.get_mut();
        *word = (*word & !DEADLINE_MASK) | Self::deadline_bits(expire_at);
    }

    /// The access stamp (see `recency`).
    pub(crate) fn stamp(&self) -> u32 {
        (self.word.load(Ordering::Relaxed) >> DEADLINE_BITS) as u32
    }

    /// Replaces the access stamp; callable under a shared lock (see the type's docs).
    pub(crate) fn set_stamp(&self, stamp: u32) {
        debug_assert!(stamp >> crate::recency::BITS == 0, "a stamp has 20 bits");
        let word = self.word.load(Ordering::Relaxed);
        let stamped = (word & DEADLINE_MASK) | (u64::from(stamp) << DEADLINE_BITS);
        if stamped != word {
            self.word.store(stamped, Ordering::Relaxed);
        }
    }

    /// Notes an access at `now` in the stamp.
    pub(crate) fn touch(&self, now: u64) {
        self.set_stamp(crate::recency::touched(self.stamp(), now));
    }

    /// Whether the entry is logically gone at `now`. Redis treats a key as
    /// expired only once `now > expire_at`, so PTTL can read 0.
    pub fn is_expired(&self, now: u64) -> bool {
        self.expire_at().is_some_and(|at| now > at.get())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_stay_compact() {
        // Per-key overhead matters at millions of keys: a string value is a Vec plus
        // a tag (which buys the inline `Short` variant: a short value has no heap block,
        // which would cost more than the 8 bytes), and the deadline uses `NonZeroU64`'s
        // niche.
        assert_eq!(std::mem::size_of::<StrValue>(), 32);
        assert_eq!(std::mem::size_of::<Value>(), 32);
        assert_eq!(std::mem::size_of::<Entry>(), 40);
    }

    #[test]
    fn string_encodings_round_trip() {
        assert_eq!(StrValue::from_bytes(b"-12"), StrValue::Int(-12));
        assert!(matches!(StrValue::from_bytes(b"012"), StrValue::Short(ref b) if b.as_bytes() == b"012"));
        assert_eq!(StrValue::from_bytes(b"012"), StrValue::Raw(b"012".to_vec()), "equal whatever the encoding");
        let mut s = StrValue::from_bytes(b"");
        s.append(b"1");
        assert_eq!(s, StrValue::Int(1));
        s.append(b"x");
        assert_eq!(s.to_bytes(), b"1x");
        assert_eq!(s.len(), 2);
        assert_eq!(StrValue::Int(i64::MIN).len(), 20);
    }

    #[test]
    fn short_strings_live_inside_the_value_and_grow_out_of_it() {
        let limit = vec![b'x'; StrValue::SHORT];
        let mut s = StrValue::from_bytes(&limit);
        assert!(matches!(s, StrValue::Short(_)));
        assert_eq!((s.to_bytes(), s.len(), s.heap_bytes()), (limit.clone(), StrValue::SHORT, 0));
        s.append(b"y");
        assert!(matches!(s, StrValue::Raw(_)), "one byte over the limit goes to the heap");
        assert_eq!(s.to_bytes(), [&limit[..], b"y"].concat());
        assert!(matches!(StrValue::from_vec(b"abc".to_vec()), StrValue::Short(ref b) if b.as_bytes() == b"abc"));
        assert!(matches!(StrValue::from_vec(vec![b'z'; 100]), StrValue::Raw(ref v) if v.len() == 100));
        assert_eq!(StrValue::from_bytes(b"1.5").as_f64(), Some(1.5));
        for text in [&b"-42"[..], b"abc", &limit, b"x".repeat(40).as_slice()] {
            assert_eq!(StrValue::from_bytes(text).with_bytes(<[u8]>::to_vec), text, "with_bytes reads what was stored");
        }
    }
}
