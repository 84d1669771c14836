//! `cjson`: JSON as lua-cjson 2.1.0 (the version Redis embeds) writes and reads it.
//!
//! Owns `encode`, `decode`, `null` and the settings (`encode_sparse_array`,
//! `encode_max_depth`, `decode_max_depth`, `encode_number_precision`, `encode_keep_buffer`,
//! `encode_invalid_numbers`, `decode_invalid_numbers`), kept per Lua state as lua-cjson keeps
//! them per module. Encoding: numbers with `%.14g` (the precision setting), `/` escaped,
//! control bytes as `\u00XX`, tables whose keys are all positive integers as arrays (holes as
//! null, excessively sparse ones refused), others as objects. Decoding: strtod-like numbers
//! (hex, `+`, leading zeros, inf and nan accepted, as Redis' build does), `\u` escapes with
//! surrogate pairs to UTF-8, a zero byte ends the input as in C. Errors are lua-cjson's texts.
//! This module must never recurse deeper than the depth settings allow.

use mlua::{LightUserData, Lua, MultiValue, Table, Value as LuaValue};

use crate::redis_api::{to_bytes, to_number};
use crate::resp::format_g;
use crate::sandbox::{raise_message, type_name};

/// lua-cjson's settings, one set per Lua state.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    sparse_convert: bool,
    sparse_ratio: i64,
    sparse_safe: i64,
    encode_max_depth: i64,
    decode_max_depth: i64,
    /// 0: refuse, 1: write inf/nan, 2: write null.
    encode_invalid_numbers: u8,
    decode_invalid_numbers: bool,
    keep_buffer: bool,
    precision: usize,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            sparse_convert: false,
            sparse_ratio: 2,
            sparse_safe: 10,
            encode_max_depth: 1000,
            decode_max_depth: 1000,
            encode_invalid_numbers: 0,
            decode_invalid_numbers: true,
            keep_buffer: true,
            precision: 14,
        }
    }
}

fn settings(lua: &Lua) -> Settings {
    lua.app_data_ref::<Settings>().map(|settings| settings.clone()).unwrap_or_default()
}

fn update(lua: &Lua, change: impl FnOnce(&mut Settings)) {
    if lua.app_data_ref::<Settings>().is_none() {
        lua.set_app_data(Settings::default());
    }
    if let Some(mut settings) = lua.app_data_mut::<Settings>() {
        change(&mut settings);
    }
}

/// `cjson.null`: a light userdata holding NULL, as lua-cjson's.
pub fn null() -> LuaValue {
    LuaValue::LightUserData(LightUserData(std::ptr::null_mut()))
}

fn is_null(value: &LuaValue) -> bool {
    matches!(value, LuaValue::LightUserData(data) if data.0.is_null())
}

/// A table being written while encoding.
enum EncodeFrame {
    Array {
        table: Table,
        length: i64,
        next: i64,
    },
    /// Pairs are walked with Lua's `next` from the last key: holding them all would take a
    /// reference slot each, and mlua has a few thousand.
    Object {
        table: Table,
        last_key: LuaValue,
        first: bool,
    },
}

struct Encoder<'a> {
    lua: &'a Lua,
    settings: Settings,
    out: Vec<u8>,
}

impl Encoder<'_> {
    fn error(&self, value: &LuaValue, reason: &str) -> mlua::Error {
        raise_message(self.lua, format!("Cannot serialise {}: {reason}", type_name(value)))
    }

    /// Writes `root`. Nested tables are kept on an explicit stack, not the call stack, so the
    /// depth setting alone bounds them.
    fn encode(&mut self, root: &LuaValue) -> mlua::Result<()> {
        let mut stack: Vec<EncodeFrame> = Vec::new();
        let mut pending = Some(root.clone());
        loop {
            if let Some(value) = pending.take() {
                self.open(value, &mut stack)?;
            }
            let Some(frame) = stack.last_mut() else { return Ok(()) };
            match frame {
                EncodeFrame::Array { table, length, next } => {
                    if *next > *length {
                        self.out.push(b']');
                        stack.pop();
                        continue;
                    }
                    if *next > 1 {
                        self.out.push(b',');
                    }
                    pending = Some(table.raw_get::<LuaValue>(*next)?);
                    *next += 1;
                }
                EncodeFrame::Object { table, last_key, first } => {
                    let (key, value) = crate::sandbox::raw_next(self.lua, table, last_key.clone())?;
                    if key == LuaValue::Nil {
                        self.out.push(b'}');
                        stack.pop();
                        continue;
                    }
                    if !*first {
                        self.out.push(b',');
                    }
                    *first = false;
                    *last_key = key.clone();
                    self.key(&key)?;
                    pending = Some(value);
                }
            }
        }
    }

    /// Writes a scalar, or opens a table (pushing its frame).
    fn open(&mut self, value: LuaValue, stack: &mut Vec<EncodeFrame>) -> mlua::Result<()> {
        match &value {
            LuaValue::String(text) => self.string(&text.as_bytes()),
            LuaValue::Integer(number) => self.number(&value, *number as f64)?,
            LuaValue::Number(number) => self.number(&value, *number)?,
            LuaValue::Boolean(truth) => self.out.extend_from_slice(if *truth { b"true" } else { b"false" }),
            LuaValue::Nil => self.out.extend_from_slice(b"null"),
            other if is_null(other) => self.out.extend_from_slice(b"null"),
            LuaValue::Table(table) => {
                let depth = stack.len() as i64 + 1;
                if depth > self.settings.encode_max_depth {
                    return Err(raise_message(self.lua, format!("Cannot serialise, excessive nesting ({depth})")));
                }
                match self.array_length(table, &value)? {
                    Some(length) if length > 0 => {
                        self.out.push(b'[');
                        stack.push(EncodeFrame::Array { table: table.clone(), length, next: 1 });
                    }
                    _ => {
                        self.out.push(b'{');
                        stack.push(EncodeFrame::Object { table: table.clone(), last_key: LuaValue::Nil, first: true });
                    }
                }
            }
            other => return Err(self.error(other, "type not supported")),
        }
        Ok(())
    }

    fn key(&mut self, key: &LuaValue) -> mlua::Result<()> {
        match key {
            LuaValue::Integer(number) => self.quoted_number(key, *number as f64)?,
            LuaValue::Number(number) => self.quoted_number(key, *number)?,
            LuaValue::String(text) => self.string(&text.as_bytes()),
            other => return Err(self.error(other, "table key must be a number or string")),
        }
        self.out.push(b':');
        Ok(())
    }

    fn string(&mut self, bytes: &[u8]) {
        self.out.push(b'"');
        for &byte in bytes {
            match byte {
                b'"' => self.out.extend_from_slice(b"\\\""),
                b'\\' => self.out.extend_from_slice(b"\\\\"),
                b'/' => self.out.extend_from_slice(b"\\/"),
                b'\x08' => self.out.extend_from_slice(b"\\b"),
                b'\t' => self.out.extend_from_slice(b"\\t"),
                b'\n' => self.out.extend_from_slice(b"\\n"),
                b'\x0c' => self.out.extend_from_slice(b"\\f"),
                b'\r' => self.out.extend_from_slice(b"\\r"),
                0..=0x1f | 0x7f => self.out.extend_from_slice(format!("\\u{byte:04x}").as_bytes()),
                other => self.out.push(other),
            }
        }
        self.out.push(b'"');
    }

    fn number(&mut self, value: &LuaValue, number: f64) -> mlua::Result<()> {
        if !number.is_finite() {
            match self.settings.encode_invalid_numbers {
                0 => return Err(self.error(value, "must not be NaN or Inf")),
                1 if number.is_nan() => {
                    self.out.extend_from_slice(b"nan");
                    return Ok(());
                }
                1 => {}
                _ => {
                    self.out.extend_from_slice(b"null");
                    return Ok(());
                }
            }
        }
        self.out.extend_from_slice(format_g(number, self.settings.precision).as_bytes());
        Ok(())
    }

    /// `Some(max key)` if every key is a positive whole number; refuses excessively sparse
    /// arrays unless they are to become objects.
    fn array_length(&self, table: &Table, value: &LuaValue) -> mlua::Result<Option<i64>> {
        let (mut max, mut items) = (0i64, 0i64);
        for pair in table.pairs::<LuaValue, LuaValue>() {
            let (key, _) = pair?;
            let key = match key {
                LuaValue::Integer(number) => number as f64,
                LuaValue::Number(number) => number,
                _ => return Ok(None),
            };
            if key.floor() != key || key < 1.0 {
                return Ok(None);
            }
            max = max.max(key as i64);
            items += 1;
        }
        let settings = &self.settings;
        if settings.sparse_ratio > 0 && max > items * settings.sparse_ratio && max > settings.sparse_safe {
            if !settings.sparse_convert {
                return Err(self.error(value, "excessively sparse array"));
            }
            return Ok(None);
        }
        Ok(Some(max))
    }

    fn quoted_number(&mut self, key: &LuaValue, number: f64) -> mlua::Result<()> {
        self.out.push(b'"');
        self.number(key, number)?;
        self.out.push(b'"');
        Ok(())
    }
}

fn encode(lua: &Lua, arguments: MultiValue) -> mlua::Result<mlua::LuaString> {
    if arguments.len() != 1 {
        return Err(raise_message(lua, "bad argument #1 to 'encode' (expected 1 argument)"));
    }
    let mut encoder = Encoder { lua, settings: settings(lua), out: Vec::new() };
    encoder.encode(&arguments[0])?;
    lua.create_string(encoder.out)
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    ObjectBegin,
    ObjectEnd,
    ArrayBegin,
    ArrayEnd,
    String(Vec<u8>),
    Number(f64),
    Boolean(bool),
    Null,
    Colon,
    Comma,
    End,
    Error(&'static str),
}

impl Token {
    fn name(&self) -> &'static str {
        match self {
            Token::ObjectBegin => "T_OBJ_BEGIN",
            Token::ObjectEnd => "T_OBJ_END",
            Token::ArrayBegin => "T_ARR_BEGIN",
            Token::ArrayEnd => "T_ARR_END",
            Token::String(_) => "T_STRING",
            Token::Number(_) => "T_NUMBER",
            Token::Boolean(_) => "T_BOOLEAN",
            Token::Null => "T_NULL",
            Token::Colon => "T_COLON",
            Token::Comma => "T_COMMA",
            Token::End => "T_END",
            Token::Error(reason) => reason,
        }
    }
}

struct Decoder<'a> {
    lua: &'a Lua,
    input: &'a [u8],
    at: usize,
    depth: i64,
    settings: Settings,
}

impl Decoder<'_> {
    /// The byte at `index`, with the C string's end (and any zero byte) read as 0.
    fn byte(&self, index: usize) -> u8 {
        self.input.get(index).copied().unwrap_or(0)
    }

    /// The next token and where it starts.
    fn token(&mut self) -> (Token, usize) {
        while matches!(self.byte(self.at), b' ' | b'\t' | b'\n' | b'\r') {
            self.at += 1;
        }
        let start = self.at;
        let single = match self.byte(start) {
            b'{' => Some(Token::ObjectBegin),
            b'}' => Some(Token::ObjectEnd),
            b'[' => Some(Token::ArrayBegin),
            b']' => Some(Token::ArrayEnd),
            b',' => Some(Token::Comma),
            b':' => Some(Token::Colon),
            0 => return (Token::End, start),
            _ => None,
        };
        if let Some(token) = single {
            self.at += 1;
            return (token, start);
        }
        let rest = &self.input[start..];
        let token = match self.byte(start) {
            b'"' => {
                let (token, error_index) = self.string();
                return match token {
                    Token::Error(_) => (token, error_index),
                    token => (token, start),
                };
            }
            b'-' | b'0'..=b'9' => self.number(),
            _ if rest.starts_with(b"true") => {
                self.at += 4;
                Token::Boolean(true)
            }
            _ if rest.starts_with(b"false") => {
                self.at += 5;
                Token::Boolean(false)
            }
            _ if rest.starts_with(b"null") => {
                self.at += 4;
                Token::Null
            }
            b'+' | b'i' | b'I' | b'n' | b'N' if self.settings.decode_invalid_numbers => self.number(),
            _ => Token::Error("invalid token"),
        };
        match token {
            Token::Error(_) => (token, self.at),
            token => (token, start),
        }
    }

    fn number(&mut self) -> Token {
        match strtod(&self.input[self.at..]) {
            Some((number, length)) => {
                self.at += length;
                Token::Number(number)
            }
            None => Token::Error("invalid number"),
        }
    }

    fn string(&mut self) -> (Token, usize) {
        self.at += 1;
        let mut text = Vec::new();
        loop {
            match self.byte(self.at) {
                0 => return (Token::Error("unexpected end of string"), self.at),
                b'"' => break,
                b'\\' => {
                    let escaped = match self.byte(self.at + 1) {
                        b'"' => b'"',
                        b'\\' => b'\\',
                        b'/' => b'/',
                        b'b' => 8,
                        b't' => b'\t',
                        b'n' => b'\n',
                        b'f' => 12,
                        b'r' => b'\r',
                        b'u' => match self.unicode_escape(&mut text) {
                            true => continue,
                            false => return (Token::Error("invalid unicode escape code"), self.at),
                        },
                        _ => return (Token::Error("invalid escape code"), self.at),
                    };
                    text.push(escaped);
                    self.at += 2;
                }
                other => {
                    text.push(other);
                    self.at += 1;
                }
            }
        }
        self.at += 1;
        (Token::String(text), 0)
    }

    fn hex4(&self, at: usize) -> Option<u32> {
        let digits = self.input.get(at..at + 4)?;
        let text = std::str::from_utf8(digits).ok()?;
        if !text.bytes().all(|byte| byte.is_ascii_hexdigit()) {
            return None;
        }
        u32::from_str_radix(text, 16).ok()
    }

    /// Appends the UTF-8 of a `\uXXXX` escape (a surrogate pair takes two) at the cursor.
    fn unicode_escape(&mut self, text: &mut Vec<u8>) -> bool {
        let Some(mut code) = self.hex4(self.at + 2) else { return false };
        let mut length = 6;
        if (0xdc00..=0xdfff).contains(&code) {
            return false;
        }
        if (0xd800..=0xdbff).contains(&code) {
            if self.byte(self.at + 6) != b'\\' || self.byte(self.at + 7) != b'u' {
                return false;
            }
            let Some(low) = self.hex4(self.at + 8).filter(|low| (0xdc00..=0xdfff).contains(low)) else { return false };
            code = (((code & 0x3ff) << 10) | (low & 0x3ff)) + 0x10000;
            length = 12;
        }
        let Some(character) = char::from_u32(code) else { return false };
        let mut buffer = [0u8; 4];
        text.extend_from_slice(character.encode_utf8(&mut buffer).as_bytes());
        self.at += length;
        true
    }

    fn fail(&self, expected: &str, token: &Token, index: usize) -> mlua::Error {
        raise_message(self.lua, format!("Expected {expected} but found {} at character {}", token.name(), index + 1))
    }

    fn descend(&mut self) -> mlua::Result<()> {
        self.depth += 1;
        if self.depth > self.settings.decode_max_depth {
            return Err(raise_message(
                self.lua,
                format!("Found too many nested data structures ({}) at character {}", self.depth, self.at),
            ));
        }
        Ok(())
    }

    /// A scalar value, or the "Expected value" error for a token that starts none.
    fn scalar(&self, token: Token, index: usize) -> mlua::Result<LuaValue> {
        Ok(match token {
            Token::String(text) => LuaValue::String(self.lua.create_string(text)?),
            Token::Number(number) => LuaValue::Number(number),
            Token::Boolean(truth) => LuaValue::Boolean(truth),
            Token::Null => null(),
            other => return Err(self.fail("value", &other, index)),
        })
    }

    /// An object key and the colon after it.
    fn object_key(&mut self, token: Token, index: usize) -> mlua::Result<LuaValue> {
        let Token::String(key) = token else {
            return Err(self.fail("object key string", &token, index));
        };
        let (colon, colon_index) = self.token();
        if colon != Token::Colon {
            return Err(self.fail("colon", &colon, colon_index));
        }
        Ok(LuaValue::String(self.lua.create_string(key)?))
    }

    /// Parses one value starting with `token`. Nested arrays and objects are kept on an
    /// explicit stack, not the call stack: depth is bounded by the setting alone.
    fn parse(&mut self, mut token: Token, mut index: usize) -> mlua::Result<LuaValue> {
        let mut stack: Vec<Frame> = Vec::new();
        loop {
            let mut completed = match token {
                Token::ArrayBegin | Token::ObjectBegin => {
                    let is_array = token == Token::ArrayBegin;
                    self.descend()?;
                    let table = self.lua.create_table()?;
                    let (next, next_index) = self.token();
                    if next == (if is_array { Token::ArrayEnd } else { Token::ObjectEnd }) {
                        self.depth -= 1;
                        LuaValue::Table(table)
                    } else if is_array {
                        stack.push(Frame::Array { table, position: 1 });
                        (token, index) = (next, next_index);
                        continue;
                    } else {
                        let key = self.object_key(next, next_index)?;
                        stack.push(Frame::Object { table, key });
                        (token, index) = self.token();
                        continue;
                    }
                }
                other => self.scalar(other, index)?,
            };
            // Hand the finished value to its container; close containers that end here.
            loop {
                let Some(frame) = stack.last_mut() else { return Ok(completed) };
                let (next, next_index) = match frame {
                    Frame::Array { table, position } => {
                        table.raw_set(*position, completed)?;
                        *position += 1;
                        self.token()
                    }
                    Frame::Object { table, key } => {
                        table.raw_set(key.clone(), completed)?;
                        self.token()
                    }
                };
                let is_array = matches!(frame, Frame::Array { .. });
                match next {
                    Token::ArrayEnd if is_array => {}
                    Token::ObjectEnd if !is_array => {}
                    Token::Comma if is_array => {
                        (token, index) = self.token();
                        break;
                    }
                    Token::Comma => {
                        let (key_token, key_index) = self.token();
                        let key = self.object_key(key_token, key_index)?;
                        if let Some(Frame::Object { key: slot, .. }) = stack.last_mut() {
                            *slot = key;
                        }
                        (token, index) = self.token();
                        break;
                    }
                    other => {
                        let expected = if is_array { "comma or array end" } else { "comma or object end" };
                        return Err(self.fail(expected, &other, next_index));
                    }
                }
                let finished = stack.pop().expect("a frame was just looked at");
                self.depth -= 1;
                completed = match finished {
                    Frame::Array { table, .. } | Frame::Object { table, .. } => LuaValue::Table(table),
                };
            }
        }
    }
}

/// An array or object being filled while decoding.
enum Frame {
    Array { table: Table, position: i64 },
    Object { table: Table, key: LuaValue },
}

/// C's `strtod` on the start of `input`: the number and how many bytes it took.
fn strtod(input: &[u8]) -> Option<(f64, usize)> {
    let mut at = 0;
    let negative = match input.first() {
        Some(b'-') => {
            at += 1;
            true
        }
        Some(b'+') => {
            at += 1;
            false
        }
        _ => false,
    };
    let rest = &input[at..];
    let lower: Vec<u8> = rest.iter().take(8).map(u8::to_ascii_lowercase).collect();
    let signed = |value: f64| if negative { -value } else { value };
    if lower.starts_with(b"infinity") {
        return Some((signed(f64::INFINITY), at + 8));
    }
    if lower.starts_with(b"inf") {
        return Some((signed(f64::INFINITY), at + 3));
    }
    if lower.starts_with(b"nan") {
        return Some((signed(f64::NAN), at + 3));
    }
    if lower.starts_with(b"0x") && rest.get(2).is_some_and(u8::is_ascii_hexdigit) {
        let digits = rest[2..].iter().take_while(|byte| byte.is_ascii_hexdigit()).count();
        let value = rest[2..2 + digits]
            .iter()
            .fold(0f64, |value, &digit| value * 16.0 + f64::from((digit as char).to_digit(16).unwrap_or(0)));
        return Some((signed(value), at + 2 + digits));
    }
    let mut end = at;
    let digits = |from: usize| input[from..].iter().take_while(|byte| byte.is_ascii_digit()).count();
    let whole = digits(end);
    end += whole;
    let mut fraction = 0;
    if input.get(end) == Some(&b'.') {
        fraction = digits(end + 1);
        if whole + fraction > 0 {
            end += 1 + fraction;
        }
    }
    if whole + fraction == 0 {
        return None;
    }
    if matches!(input.get(end), Some(b'e' | b'E')) {
        let sign = usize::from(matches!(input.get(end + 1), Some(b'+' | b'-')));
        let exponent = digits(end + 1 + sign);
        if exponent > 0 {
            end += 1 + sign + exponent;
        }
    }
    let text = std::str::from_utf8(&input[..end]).ok()?;
    let text = text.strip_prefix('+').unwrap_or(text);
    Some((text.parse().ok()?, end))
}

fn decode(lua: &Lua, arguments: MultiValue) -> mlua::Result<LuaValue> {
    if arguments.len() != 1 {
        return Err(raise_message(lua, "bad argument #1 to 'decode' (expected 1 argument)"));
    }
    let Some(input) = to_bytes(&arguments[0]) else {
        return Err(raise_message(
            lua,
            format!("bad argument #1 to 'decode' (string expected, got {})", type_name(&arguments[0])),
        ));
    };
    if input.len() >= 2 && (input[0] == 0 || input[1] == 0) {
        return Err(raise_message(lua, "JSON parser does not support UTF-16 or UTF-32"));
    }
    let mut decoder = Decoder { lua, input: &input, at: 0, depth: 0, settings: settings(lua) };
    let (token, index) = decoder.token();
    let value = decoder.parse(token, index)?;
    let (end, end_index) = decoder.token();
    if end != Token::End {
        return Err(decoder.fail("the end", &end, end_index));
    }
    Ok(value)
}

/// A setting's boolean-ish argument: true/false, or the option names lua-cjson accepts.
fn option(lua: &Lua, function: &str, value: &LuaValue, names: &[&str]) -> mlua::Result<usize> {
    match value {
        LuaValue::Boolean(truth) => Ok(usize::from(*truth)),
        other => {
            let text = to_bytes(other).unwrap_or_default();
            names.iter().position(|name| name.as_bytes() == text.as_slice()).ok_or_else(|| {
                raise_message(
                    lua,
                    format!("bad argument #1 to '{function}' (invalid option '{}')", String::from_utf8_lossy(&text)),
                )
            })
        }
    }
}

fn integer(lua: &Lua, function: &str, value: &LuaValue, index: usize, min: i64, max: i64) -> mlua::Result<i64> {
    match to_number(lua, value) {
        Some(number) if (min as f64..=max as f64).contains(&number) => Ok(number as i64),
        _ => Err(raise_message(
            lua,
            format!("bad argument #{index} to '{function}' (expected integer between {min} and {max})"),
        )),
    }
}

fn given(arguments: &MultiValue, index: usize) -> Option<&LuaValue> {
    arguments.get(index).filter(|value| !matches!(value, LuaValue::Nil))
}

fn add_settings(lua: &Lua, parts: &Table) -> mlua::Result<()> {
    const INT_MAX: i64 = i32::MAX as i64;
    parts.raw_set(
        "encode_sparse_array",
        lua.create_function(|lua, arguments: MultiValue| {
            if let Some(value) = given(&arguments, 0) {
                let convert = option(lua, "encode_sparse_array", value, &["off", "on"])? == 1;
                update(lua, |settings| settings.sparse_convert = convert);
            }
            if let Some(value) = given(&arguments, 1) {
                let ratio = integer(lua, "encode_sparse_array", value, 2, 0, INT_MAX)?;
                update(lua, |settings| settings.sparse_ratio = ratio);
            }
            if let Some(value) = given(&arguments, 2) {
                let safe = integer(lua, "encode_sparse_array", value, 3, 0, INT_MAX)?;
                update(lua, |settings| settings.sparse_safe = safe);
            }
            let settings = settings(lua);
            Ok((settings.sparse_convert, settings.sparse_ratio, settings.sparse_safe))
        })?,
    )?;
    type Field = fn(&mut Settings) -> &mut i64;
    let depths: [(&str, Field); 2] = [
        ("encode_max_depth", |settings| &mut settings.encode_max_depth),
        ("decode_max_depth", |settings| &mut settings.decode_max_depth),
    ];
    for (name, field) in depths {
        parts.raw_set(
            name,
            lua.create_function(move |lua, arguments: MultiValue| {
                if let Some(value) = given(&arguments, 0) {
                    let depth = integer(lua, name, value, 1, 1, INT_MAX)?;
                    update(lua, |settings| *field(settings) = depth);
                }
                Ok(*field(&mut settings(lua)))
            })?,
        )?;
    }
    parts.raw_set(
        "encode_number_precision",
        lua.create_function(|lua, arguments: MultiValue| {
            if let Some(value) = given(&arguments, 0) {
                let precision = integer(lua, "encode_number_precision", value, 1, 1, 14)?;
                update(lua, |settings| settings.precision = precision as usize);
            }
            Ok(settings(lua).precision as i64)
        })?,
    )?;
    parts.raw_set(
        "encode_keep_buffer",
        lua.create_function(|lua, arguments: MultiValue| {
            if let Some(value) = given(&arguments, 0) {
                let keep = option(lua, "encode_keep_buffer", value, &["off", "on"])? == 1;
                update(lua, |settings| settings.keep_buffer = keep);
            }
            Ok(settings(lua).keep_buffer)
        })?,
    )?;
    parts.raw_set(
        "encode_invalid_numbers",
        lua.create_function(|lua, arguments: MultiValue| {
            if let Some(value) = given(&arguments, 0) {
                let mode = option(lua, "encode_invalid_numbers", value, &["off", "on", "null"])? as u8;
                update(lua, |settings| settings.encode_invalid_numbers = mode);
            }
            Ok(match settings(lua).encode_invalid_numbers {
                0 => LuaValue::Boolean(false),
                1 => LuaValue::Boolean(true),
                _ => LuaValue::String(lua.create_string("null")?),
            })
        })?,
    )?;
    parts.raw_set(
        "decode_invalid_numbers",
        lua.create_function(|lua, arguments: MultiValue| {
            if let Some(value) = given(&arguments, 0) {
                let allow = option(lua, "decode_invalid_numbers", value, &["off", "on"])? == 1;
                update(lua, |settings| settings.decode_invalid_numbers = allow);
            }
            Ok(settings(lua).decode_invalid_numbers)
        })?,
    )?;
    Ok(())
}

/// The `cjson` table's functions and constants.
pub(crate) fn parts(lua: &Lua) -> mlua::Result<Table> {
    lua.set_app_data(Settings::default());
    let parts = lua.create_table()?;
    parts.raw_set("encode", lua.create_function(encode)?)?;
    parts.raw_set("decode", lua.create_function(decode)?)?;
    add_settings(lua, &parts)?;
    // lua-cjson's `new` makes an independent module; here every module shares the state's
    // settings, which is all scripts can observe of it in practice.
    let shared = parts.clone();
    parts.raw_set("new", lua.create_function(move |_, _: MultiValue| Ok(shared.clone()))?)?;
    parts.raw_set("null", null())?;
    parts.raw_set("_NAME", "cjson")?;
    parts.raw_set("_VERSION", "2.1.0")?;
    Ok(parts)
}

#[cfg(test)]
mod tests {
    use super::strtod;

    #[test]
    fn strtod_reads_what_c_reads() {
        assert_eq!(strtod(b"12abc"), Some((12.0, 2)));
        assert_eq!(strtod(b"-5e3,"), Some((-5000.0, 4)));
        assert_eq!(strtod(b"1e"), Some((1.0, 1)));
        assert_eq!(strtod(b"1."), Some((1.0, 2)));
        assert_eq!(strtod(b"0x10"), Some((16.0, 4)));
        assert_eq!(strtod(b"+1"), Some((1.0, 2)));
        assert_eq!(strtod(b"-"), None);
        assert_eq!(strtod(b"Infinity"), Some((f64::INFINITY, 8)));
        assert!(strtod(b"nan").is_some_and(|(number, _)| number.is_nan()));
    }
}
