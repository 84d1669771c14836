//! `struct`: Roberto Ierusalimschy's binary packing library as Redis embeds it (`pack`,
//! `unpack`, `size`).
//!
//! Owns the format language: `<` `>` endianness (native is little), `!n` alignment, `b B h H l L
//! T i[n] I[n]` integers (char 1, short 2, long and size_t 8, int 4 or n bytes up to 32), `f d`
//! floats, `c[n]` fixed strings (`c0` takes its size from the value before), `s` zero-ended
//! strings, `x` padding, spaces ignored. Errors are the library's texts. This module must never
//! read past its input.

use mlua::{Lua, MultiValue, Table, Value as LuaValue};

use crate::redis_api::{to_bytes, to_number};
use crate::sandbox::{raise_message, type_name};

const MAX_INT_SIZE: usize = 32;
const MAX_ALIGN: usize = 8;

#[derive(Clone, Copy)]
struct Header {
    little: bool,
    align: usize,
}

impl Default for Header {
    fn default() -> Header {
        Header { little: true, align: 1 }
    }
}

struct Format<'a> {
    text: &'a [u8],
    at: usize,
}

impl Format<'_> {
    fn next(&mut self) -> Option<u8> {
        let byte = self.text.get(self.at).copied()?;
        // The format is a C string: a zero byte ends it.
        if byte == 0 {
            return None;
        }
        self.at += 1;
        Some(byte)
    }

    fn number(&mut self, default: usize) -> Result<usize, String> {
        if !self.text.get(self.at).is_some_and(u8::is_ascii_digit) {
            return Ok(default);
        }
        let mut value: usize = 0;
        while let Some(digit) = self.text.get(self.at).filter(|byte| byte.is_ascii_digit()) {
            value = value
                .checked_mul(10)
                .and_then(|value| value.checked_add(usize::from(digit - b'0')))
                .filter(|&value| value <= i32::MAX as usize)
                .ok_or("integral size overflow")?;
            self.at += 1;
        }
        Ok(value)
    }

    /// The size of option `option`, reading its count if it takes one.
    fn size(&mut self, option: u8) -> Result<usize, String> {
        Ok(match option {
            b'B' | b'b' | b'x' => 1,
            b'H' | b'h' => 2,
            b'L' | b'l' | b'T' | b'd' => 8,
            b'f' => 4,
            b'c' => self.number(1)?,
            b'i' | b'I' => {
                let size = self.number(4)?;
                if size > MAX_INT_SIZE {
                    return Err(format!("integral size {size} is larger than limit of {MAX_INT_SIZE}"));
                }
                size
            }
            _ => 0,
        })
    }

    /// Applies a control option (endianness, alignment, space) or reports an invalid one.
    fn control(&mut self, option: u8, header: &mut Header) -> Result<(), String> {
        match option {
            b' ' => Ok(()),
            b'>' => {
                header.little = false;
                Ok(())
            }
            b'<' => {
                header.little = true;
                Ok(())
            }
            b'!' => {
                let align = self.number(MAX_ALIGN)?;
                if !align.is_power_of_two() {
                    return Err(format!("alignment {align} is not a power of 2"));
                }
                header.align = align;
                Ok(())
            }
            other => Err(format!("bad argument #1 to '{{}}' (invalid format option '{}')", other as char)),
        }
    }
}

fn padding(position: usize, header: &Header, option: u8, size: usize) -> usize {
    if size == 0 || option == b'c' {
        return 0;
    }
    let size = size.min(header.align);
    (size - (position & (size - 1))) & (size - 1)
}

fn fail(lua: &Lua, function: &str, message: String) -> mlua::Error {
    raise_message(lua, message.replace("'{}'", &format!("'{function}'")))
}

fn format_argument(lua: &Lua, arguments: &MultiValue, function: &str) -> mlua::Result<Vec<u8>> {
    let value = arguments.front().cloned().unwrap_or(LuaValue::Nil);
    to_bytes(&value).ok_or_else(|| {
        let got = if arguments.is_empty() { "no value" } else { type_name(&value) };
        raise_message(lua, format!("bad argument #1 to '{function}' (string expected, got {got})"))
    })
}

fn number_argument(lua: &Lua, arguments: &MultiValue, index: usize) -> mlua::Result<f64> {
    let value = arguments.get(index).cloned().unwrap_or(LuaValue::Nil);
    to_number(lua, &value).ok_or_else(|| {
        let got = if index < arguments.len() { type_name(&value) } else { "no value" };
        raise_message(lua, format!("bad argument #{} to 'pack' (number expected, got {got})", index + 1))
    })
}

fn put_integer(out: &mut Vec<u8>, number: f64, little: bool, size: usize) {
    let mut value = if number < 0.0 { number as i64 as u64 } else { number as u64 };
    let mut bytes = vec![0u8; size];
    for index in 0..size {
        let slot = if little { index } else { size - 1 - index };
        bytes[slot] = (value & 0xff) as u8;
        value = value.checked_shr(8).unwrap_or(0);
    }
    out.extend_from_slice(&bytes);
}

fn pack(lua: &Lua, arguments: MultiValue) -> mlua::Result<mlua::LuaString> {
    let text = format_argument(lua, &arguments, "pack")?;
    let mut format = Format { text: &text, at: 0 };
    let mut header = Header::default();
    let mut out = Vec::new();
    let mut argument = 1;
    while let Some(option) = format.next() {
        let mut size = format.size(option).map_err(|message| fail(lua, "pack", message))?;
        let align = padding(out.len(), &header, option, size);
        out.resize(out.len() + align, 0);
        match option {
            b'b' | b'B' | b'h' | b'H' | b'l' | b'L' | b'T' | b'i' | b'I' => {
                put_integer(&mut out, number_argument(lua, &arguments, argument)?, header.little, size);
                argument += 1;
            }
            b'x' => out.push(0),
            b'f' => {
                let bytes = (number_argument(lua, &arguments, argument)? as f32).to_bits();
                out.extend_from_slice(&if header.little { bytes.to_le_bytes() } else { bytes.to_be_bytes() });
                argument += 1;
            }
            b'd' => {
                let bytes = number_argument(lua, &arguments, argument)?.to_bits();
                out.extend_from_slice(&if header.little { bytes.to_le_bytes() } else { bytes.to_be_bytes() });
                argument += 1;
            }
            b'c' | b's' => {
                let value = arguments.get(argument).cloned().unwrap_or(LuaValue::Nil);
                let Some(bytes) = to_bytes(&value) else {
                    let got = if argument < arguments.len() { type_name(&value) } else { "no value" };
                    return Err(raise_message(
                        lua,
                        format!("bad argument #{} to 'pack' (string expected, got {got})", argument + 1),
                    ));
                };
                argument += 1;
                if size == 0 {
                    size = bytes.len();
                }
                if bytes.len() < size {
                    return Err(raise_message(
                        lua,
                        format!("bad argument #{} to 'pack' (string too short)", argument + 1),
                    ));
                }
                out.extend_from_slice(&bytes[..size]);
                if option == b's' {
                    out.push(0);
                }
            }
            other => format.control(other, &mut header).map_err(|message| fail(lua, "pack", message))?,
        }
    }
    lua.create_string(out)
}

fn get_integer(bytes: &[u8], little: bool, signed: bool) -> f64 {
    let mut value: u64 = 0;
    let ordered: Box<dyn Iterator<Item = &u8>> =
        if little { Box::new(bytes.iter().rev()) } else { Box::new(bytes.iter()) };
    for &byte in ordered {
        value = (value << 8) | u64::from(byte);
    }
    if !signed {
        return value as f64;
    }
    let bits = bytes.len() * 8;
    if bits < 64 && bits > 0 && value & (1 << (bits - 1)) != 0 {
        value |= u64::MAX << (bits - 1);
    }
    value as i64 as f64
}

fn unpack(lua: &Lua, arguments: MultiValue) -> mlua::Result<MultiValue> {
    let text = format_argument(lua, &arguments, "unpack")?;
    let data_value = arguments.get(1).cloned().unwrap_or(LuaValue::Nil);
    let Some(data) = to_bytes(&data_value) else {
        let got = if arguments.len() > 1 { type_name(&data_value) } else { "no value" };
        return Err(raise_message(lua, format!("bad argument #2 to 'unpack' (string expected, got {got})")));
    };
    let start = match arguments.get(2) {
        None | Some(LuaValue::Nil) => 1.0,
        Some(value) => to_number(lua, value).ok_or_else(|| {
            raise_message(lua, format!("bad argument #3 to 'unpack' (number expected, got {})", type_name(value)))
        })?,
    };
    if start < 1.0 {
        return Err(raise_message(lua, "bad argument #3 to 'unpack' (offset must be 1 or greater)"));
    }
    let mut position = start as usize - 1;
    let mut format = Format { text: &text, at: 0 };
    let mut header = Header::default();
    let mut results: Vec<LuaValue> = Vec::new();
    let too_short = || raise_message(lua, "bad argument #2 to 'unpack' (data string too short)");
    while let Some(option) = format.next() {
        let mut size = format.size(option).map_err(|message| fail(lua, "unpack", message))?;
        position += padding(position, &header, option, size);
        if size > data.len() || position > data.len() - size {
            return Err(too_short());
        }
        match option {
            b'b' | b'B' | b'h' | b'H' | b'l' | b'L' | b'T' | b'i' | b'I' => {
                let value = get_integer(&data[position..position + size], header.little, option.is_ascii_lowercase());
                results.push(LuaValue::Number(value));
            }
            b'x' => {}
            b'f' => {
                let bytes: [u8; 4] = data[position..position + 4].try_into().expect("size checked");
                let bits = if header.little { u32::from_le_bytes(bytes) } else { u32::from_be_bytes(bytes) };
                results.push(LuaValue::Number(f64::from(f32::from_bits(bits))));
            }
            b'd' => {
                let bytes: [u8; 8] = data[position..position + 8].try_into().expect("size checked");
                let bits = if header.little { u64::from_le_bytes(bytes) } else { u64::from_be_bytes(bytes) };
                results.push(LuaValue::Number(f64::from_bits(bits)));
            }
            b'c' => {
                if size == 0 {
                    let previous = results.pop().and_then(|value| to_number(lua, &value));
                    let Some(previous) = previous else {
                        return Err(raise_message(lua, "format 'c0' needs a previous size"));
                    };
                    size = previous as usize;
                    if size > data.len() || position > data.len() - size {
                        return Err(too_short());
                    }
                }
                results.push(LuaValue::String(lua.create_string(&data[position..position + size])?));
            }
            b's' => {
                let Some(end) = data[position..].iter().position(|&byte| byte == 0) else {
                    return Err(raise_message(lua, "unfinished string in data"));
                };
                results.push(LuaValue::String(lua.create_string(&data[position..position + end])?));
                size = end + 1;
            }
            other => format.control(other, &mut header).map_err(|message| fail(lua, "unpack", message))?,
        }
        position += size;
    }
    results.push(LuaValue::Number((position + 1) as f64));
    Ok(MultiValue::from_iter(results))
}

fn size(lua: &Lua, arguments: MultiValue) -> mlua::Result<f64> {
    let text = format_argument(lua, &arguments, "size")?;
    let mut format = Format { text: &text, at: 0 };
    let mut header = Header::default();
    let mut position = 0;
    while let Some(option) = format.next() {
        let size = format.size(option).map_err(|message| fail(lua, "size", message))?;
        position += padding(position, &header, option, size);
        if option == b's' {
            return Err(raise_message(lua, "bad argument #1 to 'size' (option 's' has no fixed size)"));
        }
        if option == b'c' && size == 0 {
            return Err(raise_message(lua, "bad argument #1 to 'size' (option 'c0' has no fixed size)"));
        }
        if !option.is_ascii_alphanumeric() {
            format.control(option, &mut header).map_err(|message| fail(lua, "size", message))?;
        }
        position += size;
    }
    Ok(position as f64)
}

/// The `struct` table's functions.
pub(crate) fn parts(lua: &Lua) -> mlua::Result<Table> {
    let parts = lua.create_table()?;
    parts.raw_set("pack", lua.create_function(pack)?)?;
    parts.raw_set("unpack", lua.create_function(unpack)?)?;
    parts.raw_set("size", lua.create_function(size)?)?;
    Ok(parts)
}
