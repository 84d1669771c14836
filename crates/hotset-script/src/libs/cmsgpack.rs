//! `cmsgpack`: MessagePack as lua-cmsgpack 0.4 (the version Redis embeds) writes and reads it.
//!
//! Owns `pack(...)` (every argument, concatenated), `unpack`, `unpack_one` and `unpack_limit`.
//! Numbers that are whole 64-bit integers take the smallest integer encoding, others a float32
//! when that is exact, else a float64; strings use fixstr/str8/str16/str32; a table whose keys
//! are exactly 1..n is an array, any other a map; tables nest at most 16 deep (deeper ones,
//! like cycles, are written as nil); functions and userdata are nil. This module must never
//! read past its input or trust a length it reads.

use mlua::{Lua, MultiValue, Table, Value as LuaValue};

use crate::redis_api::{to_bytes, to_number};
use crate::sandbox::{raise_message, type_name};

/// How deep tables are written before they become nil, as lua-cmsgpack's limit.
pub const NESTING_MAX: usize = 16;

fn encode(value: &LuaValue, level: usize, out: &mut Vec<u8>) -> mlua::Result<()> {
    match value {
        LuaValue::String(text) => encode_bytes(&text.as_bytes(), out),
        LuaValue::Boolean(truth) => out.push(if *truth { 0xc3 } else { 0xc2 }),
        LuaValue::Integer(number) => encode_number(*number as f64, out),
        LuaValue::Number(number) => encode_number(*number, out),
        LuaValue::Table(table) if level < NESTING_MAX => encode_table(table, level, out)?,
        _ => out.push(0xc0),
    }
    Ok(())
}

fn encode_bytes(bytes: &[u8], out: &mut Vec<u8>) {
    let length = bytes.len();
    if length < 32 {
        out.push(0xa0 | length as u8);
    } else if length <= 0xff {
        out.extend_from_slice(&[0xd9, length as u8]);
    } else if length <= 0xffff {
        out.push(0xda);
        out.extend_from_slice(&(length as u16).to_be_bytes());
    } else {
        out.push(0xdb);
        out.extend_from_slice(&(length as u32).to_be_bytes());
    }
    out.extend_from_slice(bytes);
}

fn encode_number(number: f64, out: &mut Vec<u8>) {
    // A whole number that fits an int64 (C's check: the cast back compares equal).
    let integer = number as i64;
    if number.is_finite() && integer as f64 == number {
        return encode_integer(integer, out);
    }
    let single = number as f32;
    if f64::from(single) == number {
        out.push(0xca);
        out.extend_from_slice(&single.to_bits().to_be_bytes());
    } else {
        out.push(0xcb);
        out.extend_from_slice(&number.to_bits().to_be_bytes());
    }
}

fn encode_integer(number: i64, out: &mut Vec<u8>) {
    match number {
        0..=127 => out.push(number as u8),
        128..=0xff => out.extend_from_slice(&[0xcc, number as u8]),
        0x100..=0xffff => {
            out.push(0xcd);
            out.extend_from_slice(&(number as u16).to_be_bytes());
        }
        0x1_0000..=0xffff_ffff => {
            out.push(0xce);
            out.extend_from_slice(&(number as u32).to_be_bytes());
        }
        n if n > 0 => {
            out.push(0xcf);
            out.extend_from_slice(&(number as u64).to_be_bytes());
        }
        -32..=-1 => out.push(number as i8 as u8),
        -128..=-33 => out.extend_from_slice(&[0xd0, number as i8 as u8]),
        -32768..=-129 => {
            out.push(0xd1);
            out.extend_from_slice(&(number as i16).to_be_bytes());
        }
        -2_147_483_648..=-32769 => {
            out.push(0xd2);
            out.extend_from_slice(&(number as i32).to_be_bytes());
        }
        _ => {
            out.push(0xd3);
            out.extend_from_slice(&number.to_be_bytes());
        }
    }
}

fn aggregate_header(out: &mut Vec<u8>, length: usize, fix: u8, sixteen: u8, thirty_two: u8) {
    if length < 16 {
        out.push(fix | length as u8);
    } else if length <= 0xffff {
        out.push(sixteen);
        out.extend_from_slice(&(length as u16).to_be_bytes());
    } else {
        out.push(thirty_two);
        out.extend_from_slice(&(length as u32).to_be_bytes());
    }
}

/// Keys exactly 1..n (n = the count): an array.
fn is_array(table: &Table) -> bool {
    let (mut count, mut max) = (0usize, 0f64);
    for pair in table.pairs::<LuaValue, LuaValue>() {
        let Ok((key, _)) = pair else { return false };
        let number = match key {
            LuaValue::Integer(number) => number as f64,
            LuaValue::Number(number) => number,
            _ => return false,
        };
        if number <= 0.0 || number.fract() != 0.0 {
            return false;
        }
        max = max.max(number);
        count += 1;
    }
    max == count as f64
}

fn encode_table(table: &Table, level: usize, out: &mut Vec<u8>) -> mlua::Result<()> {
    if is_array(table) {
        let length = table.raw_len();
        aggregate_header(out, length, 0x90, 0xdc, 0xdd);
        for index in 1..=length {
            encode(&table.get::<LuaValue>(index)?, level + 1, out)?;
        }
    } else {
        // Two walks, as lua-cmsgpack does: holding every pair would take a reference slot
        // each, and mlua has a few thousand.
        let count = table.pairs::<LuaValue, LuaValue>().count();
        aggregate_header(out, count, 0x80, 0xde, 0xdf);
        for pair in table.pairs::<LuaValue, LuaValue>() {
            let (key, value) = pair?;
            encode(&key, level + 1, out)?;
            encode(&value, level + 1, out)?;
        }
    }
    Ok(())
}

fn pack(lua: &Lua, arguments: MultiValue) -> mlua::Result<mlua::LuaString> {
    if arguments.is_empty() {
        return Err(raise_message(lua, "bad argument #0 to 'pack' (MessagePack pack needs input.)"));
    }
    let mut out = Vec::new();
    for argument in &arguments {
        encode(argument, 0, &mut out)?;
    }
    lua.create_string(out)
}

#[derive(Debug, PartialEq, Eq)]
enum DecodeError {
    Missing,
    BadFormat,
}

struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Cursor<'_> {
    fn take(&mut self, count: usize) -> Result<&[u8], DecodeError> {
        let end = self.at.checked_add(count).filter(|&end| end <= self.bytes.len()).ok_or(DecodeError::Missing)?;
        let taken = &self.bytes[self.at..end];
        self.at = end;
        Ok(taken)
    }

    fn unsigned(&mut self, count: usize) -> Result<u64, DecodeError> {
        Ok(self.take(count)?.iter().fold(0u64, |value, &byte| (value << 8) | u64::from(byte)))
    }
}

fn decode(lua: &Lua, cursor: &mut Cursor<'_>, depth: usize) -> Result<mlua::Result<LuaValue>, DecodeError> {
    // A bound on nesting the input can ask for, so a hostile payload cannot exhaust the stack.
    if depth > crate::limits::DECODE_DEPTH_MAX {
        return Err(DecodeError::BadFormat);
    }
    let kind = cursor.take(1)?[0];
    let number = |value: f64| Ok(Ok(LuaValue::Number(value)));
    match kind {
        0x00..=0x7f => number(f64::from(kind)),
        0xe0..=0xff => number(f64::from(kind as i8)),
        0xcc => number(cursor.unsigned(1)? as f64),
        0xcd => number(cursor.unsigned(2)? as f64),
        0xce => number(cursor.unsigned(4)? as f64),
        0xcf => number(cursor.unsigned(8)? as f64),
        0xd0 => number(f64::from(cursor.unsigned(1)? as u8 as i8)),
        0xd1 => number(f64::from(cursor.unsigned(2)? as u16 as i16)),
        0xd2 => number(f64::from(cursor.unsigned(4)? as u32 as i32)),
        0xd3 => number(cursor.unsigned(8)? as i64 as f64),
        0xc0 => Ok(Ok(LuaValue::Nil)),
        0xc2 => Ok(Ok(LuaValue::Boolean(false))),
        0xc3 => Ok(Ok(LuaValue::Boolean(true))),
        0xca => number(f64::from(f32::from_bits(cursor.unsigned(4)? as u32))),
        0xcb => number(f64::from_bits(cursor.unsigned(8)?)),
        0xa0..=0xbf => string(lua, cursor, usize::from(kind & 0x1f)),
        0xd9 => {
            let length = cursor.unsigned(1)? as usize;
            string(lua, cursor, length)
        }
        0xda => {
            let length = cursor.unsigned(2)? as usize;
            string(lua, cursor, length)
        }
        0xdb => {
            let length = cursor.unsigned(4)? as usize;
            string(lua, cursor, length)
        }
        0x90..=0x9f => array(lua, cursor, usize::from(kind & 0x0f), depth),
        0xdc => {
            let length = cursor.unsigned(2)? as usize;
            array(lua, cursor, length, depth)
        }
        0xdd => {
            let length = cursor.unsigned(4)? as usize;
            array(lua, cursor, length, depth)
        }
        0x80..=0x8f => map(lua, cursor, usize::from(kind & 0x0f), depth),
        0xde => {
            let length = cursor.unsigned(2)? as usize;
            map(lua, cursor, length, depth)
        }
        0xdf => {
            let length = cursor.unsigned(4)? as usize;
            map(lua, cursor, length, depth)
        }
        _ => Err(DecodeError::BadFormat),
    }
}

fn string(lua: &Lua, cursor: &mut Cursor<'_>, length: usize) -> Result<mlua::Result<LuaValue>, DecodeError> {
    let bytes = cursor.take(length)?;
    Ok(lua.create_string(bytes).map(LuaValue::String))
}

fn array(
    lua: &Lua,
    cursor: &mut Cursor<'_>,
    length: usize,
    depth: usize,
) -> Result<mlua::Result<LuaValue>, DecodeError> {
    let table = match lua.create_table() {
        Ok(table) => table,
        Err(error) => return Ok(Err(error)),
    };
    for index in 1..=length {
        let value = match decode(lua, cursor, depth + 1)? {
            Ok(value) => value,
            Err(error) => return Ok(Err(error)),
        };
        if let Err(error) = table.raw_set(index, value) {
            return Ok(Err(error));
        }
    }
    Ok(Ok(LuaValue::Table(table)))
}

fn map(lua: &Lua, cursor: &mut Cursor<'_>, length: usize, depth: usize) -> Result<mlua::Result<LuaValue>, DecodeError> {
    let table = match lua.create_table() {
        Ok(table) => table,
        Err(error) => return Ok(Err(error)),
    };
    for _ in 0..length {
        let key = match decode(lua, cursor, depth + 1)? {
            Ok(key) => key,
            Err(error) => return Ok(Err(error)),
        };
        let value = match decode(lua, cursor, depth + 1)? {
            Ok(value) => value,
            Err(error) => return Ok(Err(error)),
        };
        if let Err(error) = table.raw_set(key, value) {
            return Ok(Err(error));
        }
    }
    Ok(Ok(LuaValue::Table(table)))
}

/// Decodes up to `limit` values from `offset` (both 0: everything); with a limit or offset the
/// next offset comes first (-1 once the input is used up).
fn unpack_full(lua: &Lua, input: &LuaValue, limit: i64, offset: i64, given: usize) -> mlua::Result<MultiValue> {
    let Some(bytes) = to_bytes(input) else {
        let got = if given > 0 { type_name(input) } else { "no value" };
        return Err(raise_message(lua, format!("bad argument #1 to 'unpack' (string expected, got {got})")));
    };
    if offset < 0 || limit < 0 {
        // lua-cmsgpack prints the input length where it means the limit.
        return Err(raise_message(
            lua,
            format!("Invalid request to unpack with offset of {offset} and limit of {}.", bytes.len()),
        ));
    }
    if offset as usize > bytes.len() {
        return Err(raise_message(lua, format!("Start offset {offset} greater than input length {}.", bytes.len())));
    }
    let decode_all = limit == 0 && offset == 0;
    let limit = if decode_all { i64::from(i32::MAX) } else { limit };
    let mut cursor = Cursor { bytes: &bytes, at: offset as usize };
    let mut values = Vec::new();
    while cursor.at < bytes.len() && (values.len() as i64) < limit {
        match decode(lua, &mut cursor, 0) {
            Ok(value) => values.push(value?),
            Err(DecodeError::Missing) => return Err(raise_message(lua, "Missing bytes in input.")),
            Err(DecodeError::BadFormat) => return Err(raise_message(lua, "Bad data format in input.")),
        }
    }
    if !decode_all {
        let next = if cursor.at == bytes.len() { -1.0 } else { cursor.at as f64 };
        values.insert(0, LuaValue::Number(next));
    }
    Ok(MultiValue::from_iter(values))
}

fn integer_argument(
    lua: &Lua,
    arguments: &MultiValue,
    index: usize,
    function: &str,
    default: Option<i64>,
) -> mlua::Result<i64> {
    match (arguments.get(index), default) {
        (None | Some(LuaValue::Nil), Some(default)) => Ok(default),
        (value, _) => {
            let value = value.cloned().unwrap_or(LuaValue::Nil);
            to_number(lua, &value).map(|number| number as i64).ok_or_else(|| {
                let got = if index < arguments.len() { type_name(&value) } else { "no value" };
                raise_message(lua, format!("bad argument #{} to '{function}' (number expected, got {got})", index + 1))
            })
        }
    }
}

/// The `cmsgpack` table's functions and constants.
pub(crate) fn parts(lua: &Lua) -> mlua::Result<Table> {
    let parts = lua.create_table()?;
    parts.raw_set("pack", lua.create_function(pack)?)?;
    parts.raw_set(
        "unpack",
        lua.create_function(|lua, arguments: MultiValue| {
            let input = arguments.front().cloned().unwrap_or(LuaValue::Nil);
            unpack_full(lua, &input, 0, 0, arguments.len())
        })?,
    )?;
    parts.raw_set(
        "unpack_one",
        lua.create_function(|lua, arguments: MultiValue| {
            let offset = integer_argument(lua, &arguments, 1, "unpack_one", Some(0))?;
            let input = arguments.front().cloned().unwrap_or(LuaValue::Nil);
            unpack_full(lua, &input, 1, offset, arguments.len())
        })?,
    )?;
    parts.raw_set(
        "unpack_limit",
        lua.create_function(|lua, arguments: MultiValue| {
            let limit = integer_argument(lua, &arguments, 1, "unpack_limit", None)?;
            let offset = integer_argument(lua, &arguments, 2, "unpack_limit", Some(0))?;
            let input = arguments.front().cloned().unwrap_or(LuaValue::Nil);
            unpack_full(lua, &input, limit, offset, arguments.len())
        })?,
    )?;
    parts.raw_set("_NAME", "cmsgpack")?;
    parts.raw_set("_VERSION", "lua-cmsgpack 0.4.0")?;
    parts.raw_set("_COPYRIGHT", "Copyright (C) 2012, Salvatore Sanfilippo")?;
    parts.raw_set("_DESCRIPTION", "MessagePack C implementation for Lua")?;
    Ok(parts)
}
