//! BITFIELD and BITFIELD_RO: integers of 1 to 64 bits at any bit offset of a string.
//!
//! Owns: reading and writing a field (most significant bit first, as Redis lays them
//! out), and INCRBY's and SET's overflow rules (WRAP, SAT, FAIL) for signed fields of up
//! to 64 bits and unsigned ones of up to 63. Must never: create or grow the string for a
//! command of GETs alone, or write a field whose FAIL overflow answered null.

use crate::access::{Ctx, KvResult};
use crate::notify::class;
use crate::store::router::KeyRef;
use crate::store::shard::Shard;

/// A field's type: `i1`..`i64` or `u1`..`u63`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FieldType {
    /// Two's complement.
    pub signed: bool,
    /// Width in bits.
    pub bits: u32,
}

impl FieldType {
    /// The type a BITFIELD argument names (`i8`, `u16`), if valid.
    pub fn parse(arg: &[u8]) -> Option<FieldType> {
        let (signed, digits) = match arg.split_first()? {
            (b'i' | b'I', digits) => (true, digits),
            (b'u' | b'U', digits) => (false, digits),
            _ => return None,
        };
        let bits: u32 = std::str::from_utf8(digits).ok()?.parse().ok()?;
        let max = if signed { 64 } else { 63 };
        (1..=max).contains(&bits).then_some(FieldType { signed, bits })
    }

    fn min(self) -> i128 {
        if self.signed { -(1i128 << (self.bits - 1)) } else { 0 }
    }

    fn max(self) -> i128 {
        if self.signed { (1i128 << (self.bits - 1)) - 1 } else { (1i128 << self.bits) - 1 }
    }

    /// `value` brought into range by `overflow`; `None` when FAIL refuses it.
    fn fit(self, value: i128, overflow: Overflow) -> Option<i64> {
        let (min, max) = (self.min(), self.max());
        let fitted = match overflow {
            _ if (min..=max).contains(&value) => value,
            Overflow::Wrap => (value - min).rem_euclid(1i128 << self.bits) + min,
            Overflow::Sat => value.clamp(min, max),
            Overflow::Fail => return None,
        };
        Some(fitted as i64)
    }
}

/// What happens when SET or INCRBY leaves a field's range.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Overflow {
    /// Modulo the field's range (the default).
    #[default]
    Wrap,
    /// Clamped to the range's ends.
    Sat,
    /// Nothing written; the answer is null.
    Fail,
}

/// One BITFIELD operation on a field at a bit offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldOp {
    /// The field's value.
    Get,
    /// Writes the value; answers the old one.
    Set(i64),
    /// Adds the increment; answers the new value.
    IncrBy(i64),
}

/// A BITFIELD operation with its field and the overflow rule in force for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FieldCommand {
    /// What is done to the field.
    pub op: FieldOp,
    /// The field's type.
    pub ty: FieldType,
    /// Bit offset of the field's most significant bit.
    pub offset: u64,
    /// The OVERFLOW rule given before it (WRAP by default).
    pub overflow: Overflow,
}

/// The field of `ty` at `offset` (bits past the end read as zeros).
fn read_field(bytes: &[u8], ty: FieldType, offset: u64) -> i64 {
    let mut raw: u64 = 0;
    for at in offset..offset + u64::from(ty.bits) {
        let bit = bytes.get((at / 8) as usize).map_or(0, |byte| (byte >> (7 - at % 8)) & 1);
        raw = (raw << 1) | u64::from(bit);
    }
    if ty.signed && ty.bits < 64 && raw >> (ty.bits - 1) & 1 == 1 {
        // Sign-extend.
        raw |= u64::MAX << ty.bits;
    }
    raw as i64
}

/// Writes `value`'s low `ty.bits` bits at `offset` (`bytes` is long enough).
fn write_field(bytes: &mut [u8], ty: FieldType, offset: u64, value: i64) {
    let raw = value as u64;
    for i in 0..u64::from(ty.bits) {
        let at = offset + i;
        let bit = (raw >> (u64::from(ty.bits) - 1 - i)) & 1;
        let mask = 1u8 << (7 - at % 8);
        let byte = &mut bytes[(at / 8) as usize];
        *byte = if bit == 1 { *byte | mask } else { *byte & !mask };
    }
}

/// Runs `commands` over `bytes` in order: each one's answer (`None` for a refused FAIL).
fn run(bytes: &mut [u8], commands: &[FieldCommand]) -> Vec<Option<i64>> {
    commands
        .iter()
        .map(|command| {
            let FieldCommand { op, ty, offset, overflow } = *command;
            let old = read_field(bytes, ty, offset);
            let (new, answer) = match op {
                FieldOp::Get => return Some(old),
                FieldOp::Set(value) => {
                    let new = ty.fit(i128::from(value), overflow)?;
                    (new, old)
                }
                FieldOp::IncrBy(by) => {
                    let new = ty.fit(i128::from(old) + i128::from(by), overflow)?;
                    (new, new)
                }
            };
            write_field(bytes, ty, offset, new);
            Some(answer)
        })
        .collect()
}

impl Shard {
    /// BITFIELD_RO, and BITFIELD of GETs alone: reads without creating the key.
    pub fn bitfield_read(&self, key: KeyRef<'_>, now: u64, commands: &[FieldCommand]) -> KvResult<Vec<Option<i64>>> {
        self.with_string_bytes(key, now, |bytes| {
            commands.iter().map(|command| Some(read_field(bytes, command.ty, command.offset))).collect()
        })
    }

    /// BITFIELD with SET or INCRBY: runs every operation in order on the string (created,
    /// or zero-padded to the furthest field a write reaches).
    pub fn bitfield(&mut self, key: KeyRef<'_>, ctx: &Ctx, commands: &[FieldCommand]) -> KvResult<Vec<Option<i64>>> {
        let needed = commands
            .iter()
            .filter(|command| command.op != FieldOp::Get)
            .map(|command| (command.offset + u64::from(command.ty.bits)).div_ceil(8) as usize)
            .max()
            .unwrap_or(0);
        let mut before = Vec::new();
        let ((answers, after), grew) = self.write_string_bytes(key, ctx, needed, |bytes| {
            before.extend_from_slice(bytes);
            (run(bytes, commands), bytes.to_vec())
        })?;
        if grew || before != after {
            self.event(class::STRING, "setbit", key.bytes);
        }
        Ok(answers)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn command(op: FieldOp, ty: &[u8], offset: u64, overflow: Overflow) -> FieldCommand {
        FieldCommand { op, ty: FieldType::parse(ty).unwrap(), offset, overflow }
    }

    #[test]
    fn fields_read_and_write_msb_first_with_overflow_rules() {
        let mut bytes = vec![0u8; 2];
        let set = command(FieldOp::Set(-1), b"i5", 3, Overflow::Wrap);
        assert_eq!(run(&mut bytes, &[set]), vec![Some(0)]);
        assert_eq!(bytes, [0b0001_1111, 0]);
        assert_eq!(read_field(&bytes, FieldType::parse(b"u8").unwrap(), 0), 31);
        let incr = |by, overflow| command(FieldOp::IncrBy(by), b"u2", 0, overflow);
        assert_eq!(run(&mut bytes, &[incr(5, Overflow::Wrap)]), vec![Some(1)], "0 + 5 wraps to 1 in two bits");
        assert_eq!(run(&mut bytes, &[incr(5, Overflow::Sat)]), vec![Some(3)]);
        assert_eq!(run(&mut bytes, &[incr(1, Overflow::Fail)]), vec![None]);
        assert_eq!(read_field(&bytes, FieldType::parse(b"u2").unwrap(), 0), 3, "a FAIL writes nothing");
        let i64_field = FieldType::parse(b"i64").unwrap();
        assert_eq!(i64_field.fit(i128::from(i64::MAX) + 1, Overflow::Wrap), Some(i64::MIN));
        assert_eq!(FieldType::parse(b"i8").unwrap().fit(-200, Overflow::Sat), Some(-128));
        assert!(
            FieldType::parse(b"u64").is_none()
                && FieldType::parse(b"i0").is_none()
                && FieldType::parse(b"x8").is_none()
        );
    }
}
