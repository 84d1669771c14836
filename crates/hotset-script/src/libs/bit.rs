//! `bit`: LuaBitOp 1.0's operations on 32-bit integers, as Redis embeds them.
//!
//! Owns `tobit tohex bnot band bor bxor lshift rshift arshift rol ror bswap`. Numbers become
//! 32-bit integers the way LuaBitOp does it (add 2^52 + 2^51, keep the low 32 bits: rounding
//! to nearest, wrapping modulo 2^32) and results are signed. This module must never read
//! anything but its arguments.

use mlua::{Lua, MultiValue, Table, Value as LuaValue};

use crate::redis_api::to_number;
use crate::sandbox::{raise_message, type_name};

/// LuaBitOp's conversion of a Lua number to a 32-bit integer.
pub fn to_bit(number: f64) -> i32 {
    (number + 6_755_399_441_055_744.0).to_bits() as u32 as i32
}

fn argument(lua: &Lua, arguments: &MultiValue, index: usize, function: &str) -> mlua::Result<i32> {
    let value = arguments.get(index).cloned().unwrap_or(LuaValue::Nil);
    match to_number(lua, &value) {
        Some(number) => Ok(to_bit(number)),
        None => {
            let got = if index < arguments.len() { type_name(&value) } else { "no value" };
            Err(raise_message(lua, format!("bad argument #{} to '{function}' (number expected, got {got})", index + 1)))
        }
    }
}

fn result(value: i32) -> mlua::Result<f64> {
    Ok(f64::from(value))
}

type Binary = fn(i32, i32) -> i32;

/// The `bit` table's functions.
pub(crate) fn parts(lua: &Lua) -> mlua::Result<Table> {
    let parts = lua.create_table()?;
    parts.raw_set(
        "tobit",
        lua.create_function(|lua, arguments: MultiValue| result(argument(lua, &arguments, 0, "tobit")?))?,
    )?;
    parts.raw_set(
        "bnot",
        lua.create_function(|lua, arguments: MultiValue| result(!argument(lua, &arguments, 0, "bnot")?))?,
    )?;
    parts.raw_set(
        "bswap",
        lua.create_function(|lua, arguments: MultiValue| result(argument(lua, &arguments, 0, "bswap")?.swap_bytes()))?,
    )?;
    parts.raw_set(
        "tohex",
        lua.create_function(|lua, arguments: MultiValue| {
            let value = argument(lua, &arguments, 0, "tohex")? as u32;
            let digits = if arguments.len() > 1 && !matches!(arguments[1], LuaValue::Nil) {
                argument(lua, &arguments, 1, "tohex")?
            } else {
                8
            };
            let uppercase = digits < 0;
            let count = digits.unsigned_abs().min(8) as usize;
            let text = if uppercase { format!("{value:08X}") } else { format!("{value:08x}") };
            Ok(text[8 - count..].to_string())
        })?,
    )?;
    let folds: [(&str, Binary); 3] = [("band", |a, b| a & b), ("bor", |a, b| a | b), ("bxor", |a, b| a ^ b)];
    for (name, fold) in folds {
        parts.raw_set(
            name,
            lua.create_function(move |lua, arguments: MultiValue| {
                let mut value = argument(lua, &arguments, 0, name)?;
                for index in 1..arguments.len() {
                    value = fold(value, argument(lua, &arguments, index, name)?);
                }
                result(value)
            })?,
        )?;
    }
    let shifts: [(&str, Binary); 5] = [
        ("lshift", |a, n| ((a as u32) << (n & 31)) as i32),
        ("rshift", |a, n| ((a as u32) >> (n & 31)) as i32),
        ("arshift", |a, n| a >> (n & 31)),
        ("rol", |a, n| (a as u32).rotate_left((n & 31) as u32) as i32),
        ("ror", |a, n| (a as u32).rotate_right((n & 31) as u32) as i32),
    ];
    for (name, shift) in shifts {
        parts.raw_set(
            name,
            lua.create_function(move |lua, arguments: MultiValue| {
                let value = argument(lua, &arguments, 0, name)?;
                let count = argument(lua, &arguments, 1, name)?;
                result(shift(value, count))
            })?,
        )?;
    }
    Ok(parts)
}

#[cfg(test)]
mod tests {
    use super::to_bit;

    #[test]
    fn numbers_wrap_and_round_like_luabitop() {
        assert_eq!(to_bit(1.0), 1);
        assert_eq!(to_bit(4294967295.0), -1);
        assert_eq!(to_bit(2147483648.0), i32::MIN);
        assert_eq!(to_bit(-1.0), -1);
        assert_eq!(to_bit(1.5), 2);
        assert_eq!(to_bit(2.5), 2);
        assert_eq!(to_bit(4294967296.0 + 5.0), 5);
    }
}
