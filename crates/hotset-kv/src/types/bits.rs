//! Byte ranges and bits of strings, as operations on one locked shard.
//!
//! Owns: GETRANGE (SUBSTR), SETRANGE, GETBIT, SETBIT, BITCOUNT, BITPOS and BITOP: Redis' index
//! rules (negative indexes count from the end, ranges clamp to the string), bit order
//! (bit 0 is the most significant bit of byte 0), and the growth of a string by zero
//! bytes when a write reaches past its end.
//!
//! Must never: create a key for a write that changes nothing (SETRANGE of an empty
//! value), grow a string past the value limit, or change a key's TTL.
//!
//! Events, as Redis 7.0 notes them: SETRANGE `setrange`; SETBIT `setbit` only when the
//! string was created, grew or the bit flipped; BITOP `set` on the destination, or `del`
//! when an empty result deleted it.

use std::ops::DerefMut;

use crate::access::{Ctx, KvResult, ShardGroup};
use crate::notify::class;
use crate::store::router::KeyRef;
use crate::store::shard::Shard;
use crate::types::strings::as_str;
use crate::value::{Entry, StrValue, Value};

/// BITOP's operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BitOp {
    /// Bitwise AND of every source.
    And,
    /// Bitwise OR of every source.
    Or,
    /// Bitwise XOR of every source.
    Xor,
    /// Bitwise NOT of the one source.
    Not,
}

impl<S: DerefMut<Target = Shard>> ShardGroup<S> {
    /// BITOP: `dst` becomes `op` over the strings at `keys` (a missing key is a string of
    /// zero bytes; shorter strings are padded with zero bytes to the longest), without a
    /// deadline; an empty result deletes `dst`. The result's length. WRONGTYPE on a source
    /// of another type, before anything is written.
    pub fn bitop(&mut self, op: BitOp, dst: &[u8], keys: &[&[u8]], now: u64) -> KvResult<usize> {
        let mut sources = Vec::with_capacity(keys.len());
        for key in keys {
            let (shard, key) = self.shard(key)?;
            sources.push(shard.get_string(key, now)?.unwrap_or_default());
        }
        let len = sources.iter().map(Vec::len).max().unwrap_or(0);
        let result: Vec<u8> = (0..len)
            .map(|i| {
                let mut bytes = sources.iter().map(|source| source.get(i).copied().unwrap_or(0));
                let first = bytes.next().unwrap_or(0);
                match op {
                    BitOp::And => bytes.fold(first, |all, byte| all & byte),
                    BitOp::Or => bytes.fold(first, |all, byte| all | byte),
                    BitOp::Xor => bytes.fold(first, |all, byte| all ^ byte),
                    BitOp::Not => !first,
                }
            })
            .collect();
        let (shard, dst) = self.shard_mut(dst)?;
        if result.is_empty() {
            if shard.remove(dst, now).is_some() {
                shard.event(class::GENERIC, "del", dst.bytes);
            }
        } else {
            shard.put(dst, now, Value::Str(StrValue::from_vec(result)), None);
            shard.event(class::STRING, "set", dst.bytes);
        }
        Ok(len)
    }
}

/// The unit of BITCOUNT's and BITPOS' range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RangeUnit {
    /// Indexes count bytes (the default).
    Byte,
    /// Indexes count bits.
    Bit,
}

/// A range as given (`start end`, inclusive, negative from the end) and its unit.
#[derive(Debug, Clone, Copy)]
pub struct BitRange {
    /// First index (negative: from the end).
    pub start: i64,
    /// Last index, included (negative: from the end).
    pub end: i64,
    /// What the indexes count.
    pub unit: RangeUnit,
}

/// The inclusive positions `[start, end]` of a range over `len` items, Redis' way
/// (negatives from the end, clamped); `None` when empty.
fn clamp(start: i64, end: i64, len: usize) -> Option<(usize, usize)> {
    let len = len as i64;
    if len == 0 || (start < 0 && end < 0 && start > end) {
        return None;
    }
    let start = if start < 0 { (len + start).max(0) } else { start };
    let end = if end < 0 { (len + end).max(0) } else { end.min(len - 1) };
    (start <= end).then_some((start as usize, end as usize))
}

fn bit(bytes: &[u8], offset: u64) -> u8 {
    let byte = bytes.get((offset / 8) as usize).copied().unwrap_or(0);
    (byte >> (7 - (offset % 8))) & 1
}

/// Ones among bits `[first, last]` of `bytes` (inclusive).
fn count_ones(bytes: &[u8], first: u64, last: u64) -> u64 {
    let (first_byte, last_byte) = ((first / 8) as usize, (last / 8) as usize);
    if first_byte == last_byte {
        return (first..=last).map(|b| u64::from(bit(bytes, b))).sum();
    }
    let head = (first..(first_byte as u64 + 1) * 8).map(|b| u64::from(bit(bytes, b))).sum::<u64>();
    let tail = (last_byte as u64 * 8..=last).map(|b| u64::from(bit(bytes, b))).sum::<u64>();
    let middle: u64 = bytes[first_byte + 1..last_byte].iter().map(|b| u64::from(b.count_ones())).sum();
    head + middle + tail
}

impl Shard {
    /// Calls `f` with the string's bytes (empty for a missing key), WRONGTYPE otherwise.
    pub(crate) fn with_string_bytes<R>(&self, key: KeyRef<'_>, now: u64, f: impl FnOnce(&[u8]) -> R) -> KvResult<R> {
        match self.get(key, now) {
            None => Ok(f(&[])),
            Some(entry) => Ok(as_str(&entry.value)?.with_bytes(f)),
        }
    }

    /// GETRANGE: the bytes `[start, end]` (inclusive; negatives from the end).
    pub fn getrange(&self, key: KeyRef<'_>, now: u64, start: i64, end: i64) -> KvResult<Vec<u8>> {
        self.with_string_bytes(key, now, |bytes| {
            clamp(start, end, bytes.len()).map_or_else(Vec::new, |(s, e)| bytes[s..=e].to_vec())
        })
    }

    /// GETBIT: the bit at `offset` (0 past the end or for a missing key).
    pub fn getbit(&self, key: KeyRef<'_>, now: u64, offset: u64) -> KvResult<u8> {
        self.with_string_bytes(key, now, |bytes| bit(bytes, offset))
    }

    /// BITCOUNT: ones in the string, or in a range of it.
    pub fn bitcount(&self, key: KeyRef<'_>, now: u64, range: Option<BitRange>) -> KvResult<u64> {
        self.with_string_bytes(key, now, |bytes| {
            let bits = bytes.len() as u64 * 8;
            let (first, last) = match range {
                None if bytes.is_empty() => return 0,
                None => (0, bits - 1),
                Some(BitRange { start, end, unit: RangeUnit::Byte }) => match clamp(start, end, bytes.len()) {
                    Some((s, e)) => (s as u64 * 8, e as u64 * 8 + 7),
                    None => return 0,
                },
                Some(BitRange { start, end, unit: RangeUnit::Bit }) => match clamp(start, end, bits as usize) {
                    Some((s, e)) => (s as u64, e as u64),
                    None => return 0,
                },
            };
            count_ones(bytes, first, last)
        })
    }

    /// BITPOS: the first bit equal to `wanted` in the string or a range of it, or -1. Looking
    /// for a 0 without an end, the string counts as followed by zeros (Redis' rule), so
    /// an all-ones string answers its length in bits.
    pub fn bitpos(
        &self,
        key: KeyRef<'_>,
        now: u64,
        wanted: u8,
        range: Option<BitRange>,
        end_given: bool,
    ) -> KvResult<i64> {
        let Some(entry) = self.get(key, now) else {
            return Ok(if wanted == 1 { -1 } else { 0 });
        };
        Ok(as_str(&entry.value)?.with_bytes(|bytes| {
            let bits = bytes.len() as u64 * 8;
            let span = match range {
                None => (bits > 0).then(|| (0, bits - 1)),
                Some(BitRange { start, end, unit: RangeUnit::Byte }) => {
                    clamp(start, end, bytes.len()).map(|(s, e)| (s as u64 * 8, e as u64 * 8 + 7))
                }
                Some(BitRange { start, end, unit: RangeUnit::Bit }) => {
                    clamp(start, end, bits as usize).map(|(s, e)| (s as u64, e as u64))
                }
            };
            let Some((first, last)) = span else { return -1 };
            let mut at = first;
            while at <= last {
                // Whole bytes that cannot hold the bit are skipped at once.
                if at % 8 == 0 && at + 7 <= last {
                    let byte = bytes[(at / 8) as usize];
                    if (wanted == 1 && byte == 0) || (wanted == 0 && byte == 0xff) {
                        at += 8;
                        continue;
                    }
                }
                if bit(bytes, at) == wanted {
                    return at as i64;
                }
                at += 1;
            }
            if wanted == 0 && !end_given { (last + 1) as i64 } else { -1 }
        }))
    }

    /// Runs `write` on the string at `key` grown with zero bytes to at least `len` bytes
    /// (a missing key starts empty); `len` is checked against the value limit first.
    /// Keeps the TTL. Returns what `write` returns, and whether the string was created or
    /// grew (SETBIT's events depend on it).
    pub(crate) fn write_string_bytes<R>(
        &mut self,
        key: KeyRef<'_>,
        ctx: &Ctx,
        len: usize,
        write: impl FnOnce(&mut Vec<u8>) -> R,
    ) -> KvResult<(R, bool)> {
        let Some(mut live) = self.get_mut(key, ctx.now) else {
            ctx.check_value_len(len)?;
            let mut bytes = vec![0; len];
            let result = write(&mut bytes);
            self.insert(key, Entry::new(Value::Str(StrValue::from_vec(bytes)), None));
            return Ok((result, true));
        };
        let current = as_str(live.value())?.len();
        ctx.check_value_len(len.max(current))?;
        let result = live.update(|value| {
            let Value::Str(string) = value else { unreachable!("checked a string above") };
            let mut bytes = std::mem::replace(string, StrValue::Int(0)).into_vec();
            if bytes.len() < len {
                bytes.resize(len, 0);
            }
            let result = write(&mut bytes);
            *string = StrValue::from_vec(bytes);
            result
        });
        Ok((result, current < len))
    }

    /// SETRANGE: writes `value` at byte `offset`, padding with zero bytes; returns the
    /// new length. An empty value changes nothing and creates no key.
    pub fn setrange(&mut self, key: KeyRef<'_>, ctx: &Ctx, offset: usize, value: &[u8]) -> KvResult<usize> {
        if value.is_empty() {
            return self.with_string_bytes(key, ctx.now, <[u8]>::len);
        }
        // Saturating: an offset near usize::MAX fails the value limit like any other.
        let end = offset.saturating_add(value.len());
        let (len, _) = self.write_string_bytes(key, ctx, end, |bytes| {
            bytes[offset..end].copy_from_slice(value);
            bytes.len()
        })?;
        self.event(class::STRING, "setrange", key.bytes);
        Ok(len)
    }

    /// SETBIT: sets the bit at `offset` to `on`; returns the bit's previous value.
    pub fn setbit(&mut self, key: KeyRef<'_>, ctx: &Ctx, offset: u64, on: bool) -> KvResult<u8> {
        let byte = (offset / 8) as usize;
        let (old, grew) = self.write_string_bytes(key, ctx, byte + 1, |bytes| {
            let mask = 1u8 << (7 - (offset % 8));
            let old = u8::from(bytes[byte] & mask != 0);
            if on {
                bytes[byte] |= mask;
            } else {
                bytes[byte] &= !mask;
            }
            old
        })?;
        // Redis notes a SETBIT that left the string as it was as no change.
        if grew || old != u8::from(on) {
            self.event(class::STRING, "setbit", key.bytes);
        }
        Ok(old)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_follow_redis_index_rules() {
        assert_eq!(clamp(0, -1, 5), Some((0, 4)));
        assert_eq!(clamp(-3, -1, 5), Some((2, 4)));
        assert_eq!(clamp(-100, 100, 5), Some((0, 4)));
        assert_eq!(clamp(3, 1, 5), None);
        assert_eq!(clamp(-1, -3, 5), None);
        assert_eq!(clamp(0, 0, 0), None);
        assert_eq!(clamp(i64::MIN, i64::MAX, 3), Some((0, 2)));
    }

    #[test]
    fn ones_are_counted_across_partial_bytes() {
        let bytes = [0b1010_1010, 0xff, 0b0000_0001];
        assert_eq!(count_ones(&bytes, 0, 23), 13);
        assert_eq!(count_ones(&bytes, 1, 1), 0);
        assert_eq!(count_ones(&bytes, 0, 0), 1);
        assert_eq!(count_ones(&bytes, 6, 17), 9);
        for first in 0..24 {
            for last in first..24 {
                let slow: u64 = (first..=last).map(|b| u64::from(bit(&bytes, b))).sum();
                assert_eq!(count_ones(&bytes, first, last), slow, "{first}..={last}");
            }
        }
    }
}
