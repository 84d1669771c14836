//! PostgreSQL values in their text form (what `COPY ... TO STDOUT` and pgoutput send) to
//! JSON, by the column's type OID and the source's `Options`.
//!
//! Owns: the type table (which OIDs are integers, decimals, JSON, arrays of what), the
//! mapping of each, the array literal reader and COPY's text-format unescaping. Never: round
//! a number it was asked to keep exact, or guess at a type it does not know (an unknown type
//! stays its text).
//!
//! The sessions that produce the text are set to `DateStyle=ISO`, `TimeZone=UTC`,
//! `extra_float_digits=3` and `bytea_output=hex`, which is what this reads.

use crate::civil::days_from_civil;
use crate::source::{NumericMode, Options, TimeMode};
use serde_json::{Number, Value};
use std::borrow::Cow;

/// What a type's text is read as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    Bool,
    Int,
    Float,
    Numeric,
    Json,
    Bytea,
    Date,
    Timestamp,
    TimestampTz,
    /// Text kept as it is (text, varchar, uuid, enums, time, intervals, unknown types).
    Text,
    /// An array whose elements have the given shape (never an array: arrays do not nest
    /// types, a 2-D int4 array is `_int4` too).
    Array(&'static Shape),
}

/// The shape of a built-in type by OID (`pg_type.oid`); anything else is text.
pub fn shape(oid: u32) -> Shape {
    use Shape as E;
    match oid {
        16 => Shape::Bool,
        20 | 21 | 23 | 26 => Shape::Int,
        700 | 701 => Shape::Float,
        1700 => Shape::Numeric,
        114 | 3802 => Shape::Json,
        17 => Shape::Bytea,
        1082 => Shape::Date,
        1114 => Shape::Timestamp,
        1184 => Shape::TimestampTz,
        1000 => Shape::Array(&E::Bool),
        1005 | 1007 | 1016 | 1028 => Shape::Array(&E::Int),
        1021 | 1022 => Shape::Array(&E::Float),
        1231 => Shape::Array(&E::Numeric),
        199 | 3807 => Shape::Array(&E::Json),
        1001 => Shape::Array(&E::Bytea),
        1182 => Shape::Array(&E::Date),
        1115 => Shape::Array(&E::Timestamp),
        1185 => Shape::Array(&E::TimestampTz),
        // text, varchar, bpchar, name, uuid, time, timetz, interval... arrays
        1009 | 1015 | 1014 | 1003 | 2951 | 1183 | 1270 | 1187 => Shape::Array(&E::Text),
        _ => Shape::Text,
    }
}

/// Whether a key column of this type is an integer in documents (else its text or a
/// double: the primary key index's type follows).
pub fn key_type(oid: u32) -> hotset_core::FieldType {
    match shape(oid) {
        Shape::Int => hotset_core::FieldType::Int,
        Shape::Float => hotset_core::FieldType::Double,
        Shape::Bool => hotset_core::FieldType::Bool,
        _ => hotset_core::FieldType::String,
    }
}

/// Maps one value's text. `key`: a primary key column (numeric keys stay text whatever the
/// mode, so the key's type never depends on the value).
pub fn to_json(text: &str, shape: Shape, options: &Options, key: bool) -> Value {
    match shape {
        Shape::Bool => Value::Bool(text == "t" || text == "true"),
        Shape::Int => text.parse::<i64>().map(Value::from).unwrap_or_else(|_| Value::String(text.to_string())),
        Shape::Float => float(text),
        Shape::Numeric if key => Value::String(text.to_string()),
        Shape::Numeric => numeric(text, options.numeric),
        Shape::Json => serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_string())),
        Shape::Bytea => Value::String(bytea(text).map(|bytes| base64(&bytes)).unwrap_or_else(|| text.to_string())),
        Shape::Date => date(text, options.time),
        Shape::Timestamp | Shape::TimestampTz => timestamp(text, options.time),
        Shape::Text => Value::String(text.to_string()),
        Shape::Array(element) => match parse_array(text) {
            Some(items) => array_json(items, *element, options),
            None => Value::String(text.to_string()),
        },
    }
}

fn float(text: &str) -> Value {
    match text.parse::<f64>() {
        Ok(value) if value.is_finite() => Number::from_f64(value).map(Value::Number).unwrap_or(Value::Null),
        // NaN and the infinities have no JSON number: their text.
        _ => Value::String(text.to_string()),
    }
}

/// A decimal by the mode: `Exact` gives a number only when it reads back as the same value.
pub fn numeric(text: &str, mode: NumericMode) -> Value {
    match mode {
        NumericMode::String => Value::String(text.to_string()),
        NumericMode::Double => float(text),
        NumericMode::Exact => {
            if let Ok(int) = text.parse::<i64>() {
                return Value::from(int);
            }
            if let Ok(value) = text.parse::<f64>()
                && value.is_finite()
                && same_decimal(text, &value.to_string())
            {
                return Number::from_f64(value).map(Value::Number).unwrap_or(Value::Null);
            }
            Value::String(text.to_string())
        }
    }
}

/// Whether two decimal texts name the same number (`1.50` and `1.5`, `-0.0` and `0`).
fn same_decimal(a: &str, b: &str) -> bool {
    fn normal(text: &str) -> (bool, String, String) {
        let (negative, digits) = match text.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, text),
        };
        let (int, frac) = digits.split_once('.').unwrap_or((digits, ""));
        let int = int.trim_start_matches('0').to_string();
        let frac = frac.trim_end_matches('0').to_string();
        let zero = int.is_empty() && frac.is_empty();
        (negative && !zero, int, frac)
    }
    !a.contains(['e', 'E']) && !b.contains(['e', 'E']) && normal(a) == normal(b)
}

fn parse_date(text: &str) -> Option<(i64, i64, i64)> {
    let mut parts = text.splitn(3, '-');
    let year = parts.next()?.parse().ok()?;
    let month = parts.next()?.parse().ok()?;
    let day = parts.next()?.parse().ok()?;
    Some((year, month, day))
}

fn date(text: &str, mode: TimeMode) -> Value {
    match (mode, parse_date(text)) {
        (TimeMode::Epoch, Some((y, m, d))) => Value::from(days_from_civil(y, m, d) * 86_400),
        _ => Value::String(text.to_string()),
    }
}

/// `2024-05-01 12:30:00.25+00` (timestamptz in UTC) or `2024-05-01 12:30:00.25`
/// (timestamp, taken as UTC) to `2024-05-01T12:30:00.25Z`, or epoch seconds.
fn timestamp(text: &str, mode: TimeMode) -> Value {
    let Some((day, time)) = text.split_once(' ') else { return Value::String(text.to_string()) };
    // Only UTC offsets are expected (the session's TimeZone); anything else stays text.
    let time = time.strip_suffix("+00").unwrap_or(time);
    let Some((y, m, d)) = parse_date(day) else { return Value::String(text.to_string()) };
    let mut clock = time.splitn(3, ':');
    let (Some(h), Some(min), Some(sec)) = (clock.next(), clock.next(), clock.next()) else {
        return Value::String(text.to_string());
    };
    let (Ok(h), Ok(min), Ok(sec)) = (h.parse::<i64>(), min.parse::<i64>(), sec.parse::<f64>()) else {
        return Value::String(text.to_string());
    };
    match mode {
        TimeMode::Rfc3339 => Value::String(format!("{day}T{time}Z")),
        TimeMode::Epoch => {
            let whole = days_from_civil(y, m, d) * 86_400 + h * 3_600 + min * 60;
            if sec.fract() == 0.0 { Value::from(whole + sec as i64) } else { float(&format!("{}", whole as f64 + sec)) }
        }
    }
}

/// bytea's hex output (`\x0a1b`) as bytes.
fn bytea(text: &str) -> Option<Vec<u8>> {
    let hex = text.strip_prefix("\\x")?;
    if hex.len() % 2 != 0 {
        return None;
    }
    (0..hex.len()).step_by(2).map(|i| u8::from_str_radix(&hex[i..i + 2], 16).ok()).collect()
}

/// Standard base64 with padding.
pub fn base64(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// One item of an array literal: a value, NULL, or a nested array.
#[derive(Debug, PartialEq)]
pub enum Item {
    Value(String),
    Null,
    Nested(Vec<Item>),
}

/// Reads an array literal (`{1,2}`, `{"a b",NULL,"q\"x"}`, `{{1,2},{3,4}}`), with an
/// optional dimension prefix (`[0:1]={...}`).
pub fn parse_array(text: &str) -> Option<Vec<Item>> {
    let text = match text.find("={") {
        Some(at) if text.starts_with('[') => &text[at + 1..],
        _ => text,
    };
    let mut chars = text.chars().peekable();
    let items = parse_items(&mut chars)?;
    chars.next().is_none().then_some(items)
}

fn parse_items(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) -> Option<Vec<Item>> {
    if chars.next()? != '{' {
        return None;
    }
    let mut items = Vec::new();
    if chars.peek() == Some(&'}') {
        chars.next();
        return Some(items);
    }
    loop {
        match chars.peek()? {
            '{' => items.push(Item::Nested(parse_items(chars)?)),
            '"' => {
                chars.next();
                let mut value = String::new();
                loop {
                    match chars.next()? {
                        '\\' => value.push(chars.next()?),
                        '"' => break,
                        c => value.push(c),
                    }
                }
                items.push(Item::Value(value));
            }
            _ => {
                let mut value = String::new();
                while let Some(&c) = chars.peek() {
                    if c == ',' || c == '}' {
                        break;
                    }
                    value.push(c);
                    chars.next();
                }
                let value = value.trim().to_string();
                items.push(if value.eq_ignore_ascii_case("NULL") { Item::Null } else { Item::Value(value) });
            }
        }
        match chars.next()? {
            ',' => continue,
            '}' => return Some(items),
            _ => return None,
        }
    }
}

fn array_json(items: Vec<Item>, shape: Shape, options: &Options) -> Value {
    Value::Array(
        items
            .into_iter()
            .map(|item| match item {
                Item::Value(text) => to_json(&text, shape, options, false),
                Item::Null => Value::Null,
                Item::Nested(items) => array_json(items, shape, options),
            })
            .collect(),
    )
}

/// Splits one line of COPY's text format into its fields, unescaped; `None` is NULL (`\N`).
/// A field without escapes is borrowed from the line.
pub fn copy_fields(line: &[u8]) -> impl Iterator<Item = Option<Cow<'_, str>>> {
    line.split(|&b| b == b'\t').map(|raw| match raw {
        b"\\N" => None,
        raw if !raw.contains(&b'\\') => Some(String::from_utf8_lossy(raw)),
        raw => Some(Cow::Owned(String::from_utf8_lossy(&unescape(raw)).into_owned())),
    })
}

/// One field of COPY's text format without its backslash escapes.
fn unescape(raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        let b = raw[i];
        i += 1;
        if b != b'\\' || i == raw.len() {
            out.push(b);
            continue;
        }
        let c = raw[i];
        i += 1;
        match c {
            b'b' => out.push(8),
            b'f' => out.push(12),
            b'n' => out.push(b'\n'),
            b'r' => out.push(b'\r'),
            b't' => out.push(b'\t'),
            b'v' => out.push(11),
            b'0'..=b'7' => {
                let mut value = (c - b'0') as u32;
                for _ in 0..2 {
                    match raw.get(i) {
                        Some(&d @ b'0'..=b'7') => {
                            value = value * 8 + (d - b'0') as u32;
                            i += 1;
                        }
                        _ => break,
                    }
                }
                out.push(value as u8);
            }
            b'x' => {
                let mut value = 0u32;
                let mut digits = 0;
                while digits < 2
                    && let Some(d) = raw.get(i).and_then(|d| (*d as char).to_digit(16))
                {
                    value = value * 16 + d;
                    i += 1;
                    digits += 1;
                }
                if digits == 0 {
                    out.push(b'x');
                } else {
                    out.push(value as u8);
                }
            }
            other => out.push(other),
        }
    }
    out
}

/// Writes one value's text as `to_json` maps it, straight into JSON text (a copied row's
/// document): booleans, integers and text without building a `Value`, the rest through
/// `to_json`, so both give the same JSON.
pub fn write_json(out: &mut Vec<u8>, text: &str, shape: Shape, options: &Options, key: bool) {
    let written = match shape {
        Shape::Bool => {
            out.extend_from_slice(if text == "t" || text == "true" { b"true" } else { b"false" });
            Ok(())
        }
        Shape::Int => match text.parse::<i64>() {
            Ok(int) => serde_json::to_writer(&mut *out, &int),
            Err(_) => serde_json::to_writer(&mut *out, text),
        },
        Shape::Text => serde_json::to_writer(&mut *out, text),
        _ => serde_json::to_writer(&mut *out, &to_json(text, shape, options, key)),
    };
    written.expect("writing JSON to memory");
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn map(text: &str, oid: u32) -> Value {
        to_json(text, shape(oid), &Options::default(), false)
    }

    #[test]
    fn scalars() {
        assert_eq!(map("t", 16), json!(true));
        assert_eq!(map("-9223372036854775808", 20), json!(i64::MIN));
        assert_eq!(map("1.5", 701), json!(1.5));
        assert_eq!(map("NaN", 701), json!("NaN"));
        assert_eq!(map("12.50", 1700), json!(12.5));
        assert_eq!(map("42", 1700), json!(42));
        assert_eq!(map("0.1000000000000000000001", 1700), json!("0.1000000000000000000001"));
        assert_eq!(map("123456789012345678901234567890", 1700), json!("123456789012345678901234567890"));
        assert_eq!(to_json("12.5", Shape::Numeric, &Options::default(), true), json!("12.5"));
        let double = Options { numeric: NumericMode::Double, ..Options::default() };
        assert_eq!(to_json("0.1000000000000000000001", Shape::Numeric, &double, false), json!(0.1));
        let string = Options { numeric: NumericMode::String, ..Options::default() };
        assert_eq!(to_json("42", Shape::Numeric, &string, false), json!("42"));
        assert_eq!(map(r#"{"a": [1, null]}"#, 3802), json!({"a": [1, null]}));
        assert_eq!(map("\\x00ff10", 17), json!("AP8Q"));
        assert_eq!(map("2024-02-29", 1082), json!("2024-02-29"));
        assert_eq!(map("2024-02-29 23:59:01.5+00", 1184), json!("2024-02-29T23:59:01.5Z"));
        assert_eq!(map("2024-02-29 23:59:01", 1114), json!("2024-02-29T23:59:01Z"));
        let epoch = Options { time: TimeMode::Epoch, ..Options::default() };
        assert_eq!(to_json("1970-01-02", Shape::Date, &epoch, false), json!(86_400));
        assert_eq!(to_json("2001-09-09 01:46:40+00", Shape::TimestampTz, &epoch, false), json!(1_000_000_000));
        assert_eq!(to_json("1969-12-31 23:59:59.5+00", Shape::TimestampTz, &epoch, false), json!(-0.5));
        assert_eq!(map("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", 2950), json!("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"));
    }

    #[test]
    fn arrays() {
        assert_eq!(map("{1,2,NULL}", 1007), json!([1, 2, null]));
        assert_eq!(map(r#"{"a b",NULL,"q\"x\\",plain}"#, 1009), json!(["a b", null, "q\"x\\", "plain"]));
        assert_eq!(map("{{1,2},{3,4}}", 1007), json!([[1, 2], [3, 4]]));
        assert_eq!(map("{}", 1009), json!([]));
        assert_eq!(map("[0:1]={7,8}", 1007), json!([7, 8]));
        assert_eq!(map(r#"{"{\"a\": 1}"}"#, 3807), json!([{"a": 1}]));
        assert_eq!(map("{1,2", 1007), json!("{1,2"), "a broken literal stays text");
    }

    #[test]
    fn base64_pads() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        assert_eq!(base64(b"foobar"), "Zm9vYmFy");
    }

    #[test]
    fn copy_text_format() {
        let fields = |line: &'static [u8]| copy_fields(line).map(|f| f.map(Cow::into_owned)).collect::<Vec<_>>();
        assert_eq!(fields(b"1\t\\N\tx"), vec![Some("1".into()), None, Some("x".into())]);
        assert_eq!(fields(b"a\\tb\\nc\\\\d"), vec![Some("a\tb\nc\\d".into())]);
        assert_eq!(fields(b"\\101\\x42\\x4"), vec![Some("AB\x04".into())]);
        assert_eq!(fields(b""), vec![Some(String::new())]);
    }
}
