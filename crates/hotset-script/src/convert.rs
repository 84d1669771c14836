//! Conversions between Lua values and replies, both ways, by Redis 7.0's rules.
//!
//! Owns how a script's return value becomes a [`Value`] (`luaReplyToRedisReply`: numbers
//! truncate to integers, `{ok=}`/`{err=}` tables become status and error replies, the array part
//! stops at the first nil, RESP3 tables `{map=}`, `{set=}`, `{double=}`, `{big_number=}`,
//! `{verbatim_string=}`), how a reply from the host becomes a Lua value for `redis.call`, and
//! how `redis.call` arguments become command bytes. This module must never call the host or
//! run Lua code: it only reads and builds values (raw access, no metamethods, as Redis does).

use mlua::{Lua, Table, Value as LuaValue};

use crate::errors::with_error_code;
use crate::resp::format_g;
use crate::value::{Protocol, Value, one_line};

/// How deep a returned table may nest before the reply gets Redis' stack-limit error in its
/// place: a self-referencing table must not recurse forever.
pub const REPLY_DEPTH_MAX: usize = 256;

/// The text Redis writes in place of a table nested beyond what its Lua stack allows.
const STACK_LIMIT_ERROR: &[u8] = b"ERR reached lua stack limit";

/// A script's return value as a reply. `script_protocol` is the script's `redis.setresp`
/// choice: with RESP2 booleans are `:1` / null, with RESP3 they are booleans.
pub fn lua_to_reply(value: &LuaValue, script_protocol: Protocol) -> Value {
    to_reply(value, script_protocol, 0)
}

fn to_reply(value: &LuaValue, protocol: Protocol, depth: usize) -> Value {
    match value {
        LuaValue::String(text) => Value::Bulk(text.as_bytes().to_vec()),
        LuaValue::Boolean(truth) => match protocol {
            Protocol::Resp2 if *truth => Value::Int(1),
            Protocol::Resp2 => Value::Null,
            Protocol::Resp3 => Value::Bool(*truth),
        },
        LuaValue::Integer(number) => Value::Int(*number),
        LuaValue::Number(number) => Value::Int(number_to_integer(*number)),
        LuaValue::Table(table) if depth >= REPLY_DEPTH_MAX => {
            let _ = table;
            Value::Error(STACK_LIMIT_ERROR.to_vec())
        }
        LuaValue::Table(table) => table_to_reply(table, protocol, depth),
        _ => Value::Null,
    }
}

/// C's `(long long)` cast of a double on x86-64: truncation, and the "integer indefinite"
/// value (`i64::MIN`) for NaN and anything out of range — what Redis replies for `return 2^63`.
pub fn number_to_integer(number: f64) -> i64 {
    const LIMIT: f64 = 9_223_372_036_854_775_808.0; // 2^63
    if number.is_nan() || !(-LIMIT..LIMIT).contains(&number) { i64::MIN } else { number as i64 }
}

fn string_field(table: &Table, name: &str) -> Option<Vec<u8>> {
    match table.raw_get::<LuaValue>(name) {
        Ok(LuaValue::String(text)) => Some(text.as_bytes().to_vec()),
        _ => None,
    }
}

fn table_to_reply(table: &Table, protocol: Protocol, depth: usize) -> Value {
    if let Some(message) = string_field(table, "err") {
        return Value::Error(one_line(&message));
    }
    if let Some(status) = string_field(table, "ok") {
        return Value::Simple(one_line(&status));
    }
    if let Ok(LuaValue::Number(number)) = table.raw_get::<LuaValue>("double") {
        return Value::Double(number);
    }
    if let Ok(LuaValue::Integer(number)) = table.raw_get::<LuaValue>("double") {
        return Value::Double(number as f64);
    }
    if let Some(digits) = string_field(table, "big_number") {
        return Value::BigNumber(one_line(&digits));
    }
    if let Ok(LuaValue::Table(verbatim)) = table.raw_get::<LuaValue>("verbatim_string")
        && let (Some(format), Some(text)) = (string_field(&verbatim, "format"), string_field(&verbatim, "string"))
    {
        return Value::Verbatim { format: verbatim_format(&format), text };
    }
    if let Ok(LuaValue::Table(map)) = table.raw_get::<LuaValue>("map") {
        let mut pairs = Vec::new();
        for (key, value) in map.pairs::<LuaValue, LuaValue>().flatten() {
            pairs.push((to_reply(&key, protocol, depth + 1), to_reply(&value, protocol, depth + 1)));
        }
        return Value::Map(pairs);
    }
    if let Ok(LuaValue::Table(set)) = table.raw_get::<LuaValue>("set") {
        let members = set.pairs::<LuaValue, LuaValue>().flatten().map(|(key, _)| to_reply(&key, protocol, depth + 1));
        return Value::Set(members.collect());
    }
    let mut elements = Vec::new();
    for index in 1.. {
        match table.raw_get::<LuaValue>(index) {
            Ok(LuaValue::Nil) | Err(_) => break,
            Ok(element) => elements.push(to_reply(&element, protocol, depth + 1)),
        }
    }
    Value::Array(elements)
}

/// Redis copies the first three bytes of the format, padding a shorter one with spaces.
fn verbatim_format(format: &[u8]) -> [u8; 3] {
    let mut padded = [b' '; 3];
    for (slot, &byte) in padded.iter_mut().zip(format) {
        *slot = byte;
    }
    padded
}

/// A host's reply as the Lua value `redis.call` returns. `protocol` is the one the script
/// asked for: a null is `false` in RESP2 (Redis' `$-1` and `*-1`) and `nil` in RESP3 (`_`).
pub fn reply_to_lua(lua: &Lua, reply: &Value, protocol: Protocol) -> mlua::Result<LuaValue> {
    Ok(match reply {
        Value::Simple(text) => single_field(lua, "ok", LuaValue::String(lua.create_string(text)?))?,
        Value::Error(text) => error_table(lua, &[b"-", text.as_slice()].concat(), true)?,
        Value::Int(number) => LuaValue::Number(*number as f64),
        Value::Bulk(bytes) => LuaValue::String(lua.create_string(bytes)?),
        Value::Null | Value::NullArray => match protocol {
            Protocol::Resp2 => LuaValue::Boolean(false),
            Protocol::Resp3 => LuaValue::Nil,
        },
        Value::Array(elements) => {
            let table = lua.create_table()?;
            for (index, element) in elements.iter().enumerate() {
                table.raw_set(index + 1, reply_to_lua(lua, element, protocol)?)?;
            }
            LuaValue::Table(table)
        }
        Value::Map(pairs) => {
            // Built as Redis builds it (no preallocation, keys in reply order) so Lua lays
            // the keys out, and `pairs` visits them, in the same order.
            let map = lua.create_table()?;
            for (key, value) in pairs {
                map.raw_set(reply_to_lua(lua, key, protocol)?, reply_to_lua(lua, value, protocol)?)?;
            }
            single_field(lua, "map", LuaValue::Table(map))?
        }
        Value::Set(members) => {
            let set = lua.create_table()?;
            for member in members {
                set.raw_set(reply_to_lua(lua, member, protocol)?, true)?;
            }
            single_field(lua, "set", LuaValue::Table(set))?
        }
        Value::Double(number) => single_field(lua, "double", LuaValue::Number(*number))?,
        Value::Bool(truth) => LuaValue::Boolean(*truth),
        Value::BigNumber(digits) => single_field(lua, "big_number", LuaValue::String(lua.create_string(digits)?))?,
        Value::Verbatim { format, text } => {
            let verbatim = lua.create_table_with_capacity(0, 2)?;
            verbatim.raw_set("string", lua.create_string(text)?)?;
            verbatim.raw_set("format", lua.create_string(format)?)?;
            single_field(lua, "verbatim_string", LuaValue::Table(verbatim))?
        }
    })
}

fn single_field(lua: &Lua, name: &str, value: LuaValue) -> mlua::Result<LuaValue> {
    let table = lua.create_table_with_capacity(0, 1)?;
    table.raw_set(name, value)?;
    Ok(LuaValue::Table(table))
}

/// Redis' error table: `{err="CODE message"}`, the code taken from a leading `-CODE` or `ERR`
/// added. Errors that came back from a command are marked so Redis does not count them twice
/// in its error statistics; scripts can see the mark, so it is kept.
pub fn error_table(lua: &Lua, message: &[u8], from_command: bool) -> mlua::Result<LuaValue> {
    let table = lua.create_table_with_capacity(0, 2)?;
    table.raw_set("err", lua.create_string(with_error_code(message))?)?;
    if from_command {
        table.raw_set("ignore_error_stats_update", true)?;
    }
    Ok(LuaValue::Table(table))
}

/// Why `redis.call` arguments could not become a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArgumentsError {
    /// No argument at all.
    Empty,
    /// An argument that is neither a string nor a number.
    NotStringOrNumber,
}

impl ArgumentsError {
    /// Redis' text for the error (code added by [`with_error_code`]).
    pub fn message(self) -> &'static [u8] {
        match self {
            ArgumentsError::Empty => b"Please specify at least one argument for this redis lib call",
            ArgumentsError::NotStringOrNumber => b"Lua redis lib command arguments must be strings or integers",
        }
    }
}

/// `redis.call` arguments as command bytes: strings as they are, numbers written with
/// `%.17g` (Lua's own `%.14g` would lose precision), anything else refused.
pub fn command_arguments(arguments: &[LuaValue]) -> Result<Vec<Vec<u8>>, ArgumentsError> {
    if arguments.is_empty() {
        return Err(ArgumentsError::Empty);
    }
    arguments
        .iter()
        .map(|argument| match argument {
            LuaValue::String(text) => Ok(text.as_bytes().to_vec()),
            LuaValue::Number(number) => Ok(format_g(*number, 17).into_bytes()),
            LuaValue::Integer(number) => Ok(format_g(*number as f64, 17).into_bytes()),
            _ => Err(ArgumentsError::NotStringOrNumber),
        })
        .collect()
}
