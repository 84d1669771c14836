//! String commands: GET, SET and its options, counters, MGET/MSET and friends.
//!
//! Owns: turning RESP arguments into `KvOps` calls for the `string` group and shaping
//! their replies, one function per command (or per pair of Redis forms sharing a body),
//! each generic over `KvOps` so the table can hold it for a keyspace and for EXEC's
//! locked block. Never: hold semantics of its own (expiry, NX/XX, integer rules live in
//! `hotset_core::kv`), write a reply before the call has succeeded, or decide anything by
//! a command's name (the table chose this function).

use super::args::{self, CmdError, CmdResult, syntax};
use crate::resp::reply::Reply;
use hotset_core::kv::{
    BitOp, BitRange, FieldCommand, FieldOp, FieldType, KvOps, Overflow, RangeUnit, SetCondition, SetExpiry, SetOptions,
};

pub fn get<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    kv.get_with(a[1], |value| r.bulk_or_null(value))?;
    Ok(())
}

pub fn setnx<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    r.int(i64::from(kv.setnx(a[1], a[2])?));
    Ok(())
}

pub fn getset<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    r.bulk_or_null(kv.getset(a[1], a[2])?.as_deref());
    Ok(())
}

pub fn getdel<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    r.bulk_or_null(kv.getdel(a[1])?.as_deref());
    Ok(())
}

pub fn append<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    r.int(kv.append(a[1], a[2])? as i64);
    Ok(())
}

pub fn strlen<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    r.int(kv.strlen(a[1])? as i64);
    Ok(())
}

pub fn incr<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    r.int(kv.incr_by(a[1], 1)?);
    Ok(())
}

pub fn decr<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    r.int(kv.decr_by(a[1], 1)?);
    Ok(())
}

pub fn incrby<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    r.int(kv.incr_by(a[1], args::int(a[2])?)?);
    Ok(())
}

pub fn decrby<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    r.int(kv.decr_by(a[1], args::int(a[2])?)?);
    Ok(())
}

pub fn incrbyfloat<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    r.bulk(&kv.incr_by_float(a[1], args::float_increment(a[2])?)?);
    Ok(())
}

pub fn mget<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    let values = kv.mget(&a[1..])?;
    r.array(values.len());
    values.iter().for_each(|v| r.bulk_or_null(v.as_deref()));
    Ok(())
}

pub fn mset<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    kv.mset(&args::pairs("MSET", &a[1..])?)?;
    r.ok();
    Ok(())
}

pub fn msetnx<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    r.int(i64::from(kv.msetnx(&args::pairs("MSETNX", &a[1..])?)?));
    Ok(())
}

/// SET key value [NX|XX] [GET] [EX s|PX ms|EXAT s|PXAT ms|KEEPTTL]
pub fn set<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    let mut options = SetOptions::default();
    let mut at = 3;
    while at < a.len() {
        let word = a[at];
        let expiry_arg = |scale: u64, absolute: bool| -> Result<SetExpiry, CmdError> {
            let value = a.get(at + 1).ok_or_else(syntax)?;
            let value = args::int(value)?;
            if value <= 0 {
                return Err(CmdError("ERR invalid expire time in 'set' command".into()));
            }
            let ms = (value as u64)
                .checked_mul(scale)
                .ok_or_else(|| CmdError("ERR invalid expire time in 'set' command".into()))?;
            Ok(if absolute { SetExpiry::At(ms) } else { SetExpiry::Ex(ms) })
        };
        let expiry = if args::is(word, "EX") {
            Some(expiry_arg(1000, false)?)
        } else if args::is(word, "PX") {
            Some(expiry_arg(1, false)?)
        } else if args::is(word, "EXAT") {
            Some(expiry_arg(1000, true)?)
        } else if args::is(word, "PXAT") {
            Some(expiry_arg(1, true)?)
        } else {
            None
        };
        if let Some(expiry) = expiry {
            if options.expiry.is_some() || options.keep_ttl {
                return Err(syntax());
            }
            options.expiry = Some(expiry);
            at += 2;
            continue;
        }
        if args::is(word, "NX") || args::is(word, "XX") {
            if options.condition.is_some() {
                return Err(syntax());
            }
            options.condition = Some(if args::is(word, "NX") { SetCondition::Nx } else { SetCondition::Xx });
        } else if args::is(word, "GET") {
            options.get_old = true;
        } else if args::is(word, "KEEPTTL") {
            if options.expiry.is_some() {
                return Err(syntax());
            }
            options.keep_ttl = true;
        } else {
            return Err(syntax());
        }
        at += 1;
    }
    let outcome = kv.set(a[1], a[2], options)?;
    if options.get_old {
        r.bulk_or_null(outcome.old.as_deref());
    } else if outcome.applied {
        r.ok();
    } else {
        r.null();
    }
    Ok(())
}

/// SETEX key seconds value
pub fn setex<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    set_with_ttl(kv, a, r, "setex", 1000)
}

/// PSETEX key ms value
pub fn psetex<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    set_with_ttl(kv, a, r, "psetex", 1)
}

/// SETEX and PSETEX: `a[2]` is the time to live in units of `unit_ms`; `command` names
/// the command in the error text.
fn set_with_ttl<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>, command: &str, unit_ms: u64) -> CmdResult {
    let ttl = args::int(a[2])?;
    let invalid = || CmdError(format!("ERR invalid expire time in '{command}' command"));
    if ttl <= 0 {
        return Err(invalid());
    }
    let ms = (ttl as u64).checked_mul(unit_ms).ok_or_else(invalid)?;
    let options = SetOptions { expiry: Some(SetExpiry::Ex(ms)), ..SetOptions::default() };
    kv.set(a[1], a[3], options)?;
    r.ok();
    Ok(())
}

/// GETEX key [EX s | PX ms | EXAT t | PXAT t | PERSIST]
pub fn getex<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    let invalid = || CmdError("ERR invalid expire time in 'getex' command".into());
    let change = match a {
        [_, _] => None,
        [_, _, word] if args::is(word, "PERSIST") => Some(None),
        [_, _, word, value] => {
            let (scale, absolute) = if args::is(word, "EX") {
                (1000, false)
            } else if args::is(word, "PX") {
                (1, false)
            } else if args::is(word, "EXAT") {
                (1000, true)
            } else if args::is(word, "PXAT") {
                (1, true)
            } else {
                return Err(syntax());
            };
            let value = args::int(value)?;
            if value <= 0 {
                return Err(invalid());
            }
            let ms = (value as u64).checked_mul(scale).filter(|ms| *ms <= i64::MAX as u64).ok_or_else(invalid)?;
            Some(Some(if absolute { SetExpiry::At(ms) } else { SetExpiry::Ex(ms) }))
        }
        _ => return Err(syntax()),
    };
    r.bulk_or_null(kv.getex(a[1], change)?.as_deref());
    Ok(())
}

/// GETRANGE key start end (and SUBSTR, its old name).
pub fn getrange<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    r.bulk(&kv.getrange(a[1], args::int(a[2])?, args::int(a[3])?)?);
    Ok(())
}

/// SETRANGE key offset value
pub fn setrange<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    let offset = usize::try_from(args::int(a[2])?).map_err(|_| CmdError("ERR offset is out of range".into()))?;
    r.int(kv.setrange(a[1], offset, a[3])? as i64);
    Ok(())
}

/// A bit offset: below 2^32, as Redis allows (512 MB of bits).
fn bit_offset(arg: &[u8]) -> Result<u64, CmdError> {
    let error = || CmdError("ERR bit offset is not an integer or out of range".into());
    let offset = args::int(arg).map_err(|_| error())?;
    u64::try_from(offset).ok().filter(|o| *o < 1 << 32).ok_or_else(error)
}

/// GETBIT key offset
pub fn getbit<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    r.int(i64::from(kv.getbit(a[1], bit_offset(a[2])?)?));
    Ok(())
}

/// SETBIT key offset 0|1
pub fn setbit<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    let offset = bit_offset(a[2])?;
    let on = match a[3] {
        b"1" => true,
        b"0" => false,
        _ => return Err(CmdError("ERR bit is not an integer or out of range".into())),
    };
    r.int(i64::from(kv.setbit(a[1], offset, on)?));
    Ok(())
}

/// `start end [BYTE|BIT]` of BITCOUNT and BITPOS, from `at`.
fn bit_range(a: &[&[u8]], at: usize) -> Result<Option<BitRange>, CmdError> {
    let Some(start) = a.get(at) else { return Ok(None) };
    let start = args::int(start)?;
    let end = match a.get(at + 1) {
        Some(end) => args::int(end)?,
        None => i64::MAX,
    };
    let unit = match a.get(at + 2) {
        None => RangeUnit::Byte,
        Some(word) if args::is(word, "BYTE") => RangeUnit::Byte,
        Some(word) if args::is(word, "BIT") => RangeUnit::Bit,
        Some(_) => return Err(syntax()),
    };
    if a.len() > at + 3 {
        return Err(syntax());
    }
    Ok(Some(BitRange { start, end, unit }))
}

/// BITCOUNT key [start end [BYTE|BIT]]
/// BITOP AND|OR|XOR|NOT destkey key [key ...]: the length of the string stored.
pub fn bitop<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    let op = if args::is(a[1], "AND") {
        BitOp::And
    } else if args::is(a[1], "OR") {
        BitOp::Or
    } else if args::is(a[1], "XOR") {
        BitOp::Xor
    } else if args::is(a[1], "NOT") {
        BitOp::Not
    } else {
        return Err(args::syntax());
    };
    if op == BitOp::Not && a.len() != 4 {
        return Err(CmdError("ERR BITOP NOT must be called with a single source key.".into()));
    }
    r.int(kv.bitop(op, a[2], &a[3..])? as i64);
    Ok(())
}

pub fn bitcount<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    if a.len() == 3 {
        return Err(syntax());
    }
    r.int(kv.bitcount(a[1], bit_range(a, 2)?)? as i64);
    Ok(())
}

/// BITPOS key 0|1 [start [end [BYTE|BIT]]]
pub fn bitpos<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    let wanted = match a[2] {
        b"1" => 1,
        b"0" => 0,
        _ => return Err(CmdError("ERR The bit argument must be 1 or 0.".into())),
    };
    let range = bit_range(a, 3)?;
    r.int(kv.bitpos(a[1], wanted, range, a.len() > 4)?);
    Ok(())
}

/// LCS key1 key2 [LEN] [IDX] [MINMATCHLEN len] [WITHMATCHLEN].
pub fn lcs<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    let (mut len, mut idx, mut with_len, mut min_len) = (false, false, false, 0usize);
    let mut at = 3;
    while at < a.len() {
        let word = a[at];
        if args::is(word, "IDX") {
            idx = true;
        } else if args::is(word, "LEN") {
            len = true;
        } else if args::is(word, "WITHMATCHLEN") {
            with_len = true;
        } else if args::is(word, "MINMATCHLEN") && at + 1 < a.len() {
            // Redis reads a negative minimum as 0.
            min_len = usize::try_from(args::int(a[at + 1])?).unwrap_or(0);
            at += 1;
        } else {
            return Err(syntax());
        }
        at += 1;
    }
    if len && idx {
        return Err(CmdError("ERR If you want both the length and indexes, please just use IDX.".into()));
    }
    let answer = kv.lcs(a[1], a[2], idx || !len, min_len)?;
    if idx {
        r.map(2);
        r.bulk(b"matches");
        r.array(answer.matches.len());
        for ((a_start, a_end), (b_start, b_end), run) in &answer.matches {
            r.array(if with_len { 3 } else { 2 });
            for (start, end) in [(a_start, a_end), (b_start, b_end)] {
                r.array(2);
                r.int(*start as i64);
                r.int(*end as i64);
            }
            if with_len {
                r.int(*run as i64);
            }
        }
        r.bulk(b"len");
        r.int(answer.len as i64);
    } else if len {
        r.int(answer.len as i64);
    } else {
        r.bulk(&answer.text);
    }
    Ok(())
}

/// BITFIELD's and BITFIELD_RO's operations, in order, with the OVERFLOW rule in force for
/// each; `readonly` refuses SET and INCRBY.
fn field_commands(a: &[&[u8]], readonly: bool) -> Result<Vec<FieldCommand>, CmdError> {
    let mut commands = Vec::new();
    let mut overflow = Overflow::default();
    let mut at = 2;
    while at < a.len() {
        let (word, left) = (a[at], a.len() - at - 1);
        let (op, takes) = if args::is(word, "GET") && left >= 2 {
            (FieldOp::Get, 2)
        } else if args::is(word, "SET") && left >= 3 {
            (FieldOp::Set(0), 3)
        } else if args::is(word, "INCRBY") && left >= 3 {
            (FieldOp::IncrBy(0), 3)
        } else if args::is(word, "OVERFLOW") && left >= 1 {
            overflow = match a[at + 1].to_ascii_uppercase().as_slice() {
                b"WRAP" => Overflow::Wrap,
                b"SAT" => Overflow::Sat,
                b"FAIL" => Overflow::Fail,
                _ => return Err(CmdError("ERR Invalid OVERFLOW type specified".into())),
            };
            at += 2;
            continue;
        } else {
            return Err(syntax());
        };
        let ty = FieldType::parse(a[at + 1]).ok_or_else(|| {
            CmdError(
                "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is."
                    .into(),
            )
        })?;
        let offset = field_offset(a[at + 2], ty)?;
        let op = match op {
            FieldOp::Get => FieldOp::Get,
            FieldOp::Set(_) => FieldOp::Set(args::int(a[at + 3])?),
            FieldOp::IncrBy(_) => FieldOp::IncrBy(args::int(a[at + 3])?),
        };
        if readonly && op != FieldOp::Get {
            return Err(CmdError("ERR BITFIELD_RO only supports the GET subcommand".into()));
        }
        commands.push(FieldCommand { op, ty, offset, overflow });
        at += takes + 1;
    }
    Ok(commands)
}

/// A field's bit offset: `N`, or `#N` for the N-th field of its width.
fn field_offset(arg: &[u8], ty: FieldType) -> Result<u64, CmdError> {
    let error = || CmdError("ERR bit offset is not an integer or out of range".into());
    let (index, scale) = match arg.strip_prefix(b"#") {
        Some(index) => (index, u64::from(ty.bits)),
        None => (arg, 1),
    };
    let index = u64::try_from(args::int(index).map_err(|_| error())?).map_err(|_| error())?;
    index.checked_mul(scale).filter(|offset| *offset < 1 << 32).ok_or_else(error)
}

fn bitfield_command<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>, readonly: bool) -> CmdResult {
    let answers = kv.bitfield(a[1], &field_commands(a, readonly)?)?;
    r.array(answers.len());
    for answer in answers {
        match answer {
            Some(value) => r.int(value),
            None => r.null(),
        }
    }
    Ok(())
}

/// BITFIELD key [GET type offset] [SET type offset value] [INCRBY type offset increment]
/// [OVERFLOW WRAP|SAT|FAIL] ...
pub fn bitfield<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    bitfield_command(kv, a, r, false)
}

/// BITFIELD_RO key [GET type offset] ...
pub fn bitfield_ro<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    bitfield_command(kv, a, r, true)
}
