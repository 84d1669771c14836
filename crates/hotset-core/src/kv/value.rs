//! What a key holds.
//!
//! Owns: [`Value`] (string or hash), [`StrValue`] (the two encodings of a
//! string) and [`Entry`] (value + optional absolute expiry).
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

use super::field_map::FieldMap;
use super::number::{format_i64, i64_text_len, parse_f64, parse_i64};

/// A string value in its cheapest faithful encoding.
#[derive(Debug, Clone, PartialEq)]
pub enum StrValue {
    /// A canonical decimal integer (stored without its text).
    Int(i64),
    /// Any other bytes. A `Vec` rather than a boxed slice so APPEND grows in
    /// amortised O(1) instead of copying the whole value every time.
    Raw(Vec<u8>),
}

impl StrValue {
    /// Picks the encoding for `bytes`.
    pub fn from_bytes(bytes: &[u8]) -> Self {
        match parse_i64(bytes) {
            Some(i) => Self::Int(i),
            None => Self::Raw(bytes.to_vec()),
        }
    }

    /// Like [`from_bytes`](Self::from_bytes) but reuses an owned buffer.
    pub fn from_vec(bytes: Vec<u8>) -> Self {
        match parse_i64(&bytes) {
            Some(i) => Self::Int(i),
            None => Self::Raw(bytes),
        }
    }

    /// APPEND: extends the string in place, re-deriving the encoding so a
    /// result that is a canonical integer becomes cheap to INCR.
    pub fn append(&mut self, tail: &[u8]) {
        match self {
            Self::Int(i) => {
                let mut bytes = format_i64(*i);
                bytes.extend_from_slice(tail);
                *self = Self::from_vec(bytes);
            }
            Self::Raw(bytes) => {
                bytes.extend_from_slice(tail);
                if let Some(i) = parse_i64(bytes) {
                    *self = Self::Int(i);
                }
            }
        }
    }

    /// The exact bytes of the string.
    pub fn to_bytes(&self) -> Vec<u8> {
        match self {
            Self::Int(i) => format_i64(*i),
            Self::Raw(bytes) => bytes.clone(),
        }
    }

    /// Length in bytes (STRLEN).
    pub fn len(&self) -> usize {
        match self {
            Self::Int(i) => i64_text_len(*i),
            Self::Raw(bytes) => bytes.len(),
        }
    }

    /// The value as an integer, if it is one (INCR rules).
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Self::Int(i) => Some(*i),
            Self::Raw(bytes) => parse_i64(bytes),
        }
    }

    /// The value as a float, if it is one (INCRBYFLOAT rules).
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Self::Int(i) => Some(*i as f64),
            Self::Raw(bytes) => parse_f64(bytes),
        }
    }

    /// Heap bytes owned by the value.
    pub fn heap_bytes(&self) -> usize {
        match self {
            Self::Int(_) => 0,
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
}

impl Value {
    /// Redis' TYPE name.
    pub fn type_name(&self) -> &'static str {
        match self {
            Self::Str(_) => "string",
            Self::Hash(_) => "hash",
        }
    }

    /// Heap bytes owned by the value, in O(1).
    pub fn heap_bytes(&self) -> usize {
        match self {
            Self::Str(s) => s.heap_bytes(),
            Self::Hash(h) => std::mem::size_of::<FieldMap>() + h.heap_bytes(),
        }
    }
}

/// A stored key's payload.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The value.
    pub value: Value,
    /// Absolute expiry in ms since the epoch. Never zero: a deadline at or
    /// before "now" deletes the key instead of being stored.
    pub expire_at: Option<NonZeroU64>,
}

impl Entry {
    /// Whether the entry is logically gone at `now`. Redis treats a key as
    /// expired only once `now > expire_at`, so PTTL can read 0.
    pub fn is_expired(&self, now: u64) -> bool {
        self.expire_at.is_some_and(|at| now > at.get())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_stay_compact() {
        // Per-key overhead matters at millions of keys: a string value is one
        // Vec-sized enum and the deadline uses `NonZeroU64`'s niche.
        assert_eq!(std::mem::size_of::<StrValue>(), 24);
        assert_eq!(std::mem::size_of::<Value>(), 24);
        assert_eq!(std::mem::size_of::<Entry>(), 32);
    }

    #[test]
    fn string_encodings_round_trip() {
        assert_eq!(StrValue::from_bytes(b"-12"), StrValue::Int(-12));
        assert_eq!(StrValue::from_bytes(b"012"), StrValue::Raw(b"012".to_vec()));
        let mut s = StrValue::from_bytes(b"");
        s.append(b"1");
        assert_eq!(s, StrValue::Int(1));
        s.append(b"x");
        assert_eq!(s.to_bytes(), b"1x");
        assert_eq!(s.len(), 2);
        assert_eq!(StrValue::Int(i64::MIN).len(), 20);
    }
}
