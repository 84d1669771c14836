//! RESP2 and RESP3 frames: reading one into a [`Value`], writing a `Value` as exact bytes.
//!
//! Owns the wire form of replies and the C `%.<p>g` number formatting Redis uses for doubles
//! (`%.17g`) and Lua uses for numbers (`%.14g`). Writing follows Redis 7.0's `addReply*`
//! functions, including how RESP3-only types are written to a RESP2 client. This module must
//! never allocate without a bound taken from the input it has already checked, and never know
//! about Lua.

use crate::value::{Protocol, Value};

/// The deepest nesting [`parse_resp`] accepts: deeper input is refused rather than recursed
/// into, so a hostile frame cannot overflow the stack.
pub const RESP_DEPTH_MAX: usize = 128;

/// The longest bulk string [`parse_resp`] accepts, Redis' `proto-max-bulk-len` default.
pub const BULK_BYTES_MAX: usize = 512 * 1024 * 1024;

/// Why bytes are not one whole frame.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RespError {
    /// The bytes end before the frame does; more bytes may complete it.
    #[error("incomplete RESP frame")]
    Incomplete,
    /// The bytes are not RESP.
    #[error("invalid RESP frame at byte {offset}: {reason}")]
    Invalid {
        /// Where the fault is, from the start of the input.
        offset: usize,
        /// What is wrong there.
        reason: &'static str,
    },
}

/// Reads one RESP2 or RESP3 frame from the start of `bytes`: the value and how many bytes it
/// took. Attributes (`|`) are read and dropped, as Redis does before handing a reply to Lua.
pub fn parse_resp(bytes: &[u8]) -> Result<(Value, usize), RespError> {
    let mut reader = Reader { bytes, offset: 0 };
    let value = reader.value(0)?;
    Ok((value, reader.offset))
}

struct Reader<'a> {
    bytes: &'a [u8],
    offset: usize,
}

impl Reader<'_> {
    fn invalid(&self, reason: &'static str) -> RespError {
        RespError::Invalid { offset: self.offset, reason }
    }

    /// The line from the cursor to the next CRLF (excluded); the cursor moves past the CRLF.
    fn line(&mut self) -> Result<&[u8], RespError> {
        let rest = &self.bytes[self.offset..];
        let Some(end) = rest.windows(2).position(|pair| pair == b"\r\n") else {
            return Err(RespError::Incomplete);
        };
        let start = self.offset;
        self.offset += end + 2;
        Ok(&self.bytes[start..start + end])
    }

    fn integer(&mut self) -> Result<i64, RespError> {
        let line = self.line()?;
        parse_i64(line).ok_or(RespError::Invalid { offset: self.offset, reason: "bad integer" })
    }

    /// A length prefix: -1 for null, otherwise within `max`.
    fn length(&mut self, max: usize) -> Result<Option<usize>, RespError> {
        let length = self.integer()?;
        if length == -1 {
            return Ok(None);
        }
        match usize::try_from(length) {
            Ok(length) if length <= max => Ok(Some(length)),
            _ => Err(self.invalid("bad length")),
        }
    }

    /// Exactly `length` bytes followed by CRLF.
    fn payload(&mut self, length: usize) -> Result<Vec<u8>, RespError> {
        let end = self.offset.checked_add(length).ok_or(self.invalid("bad length"))?;
        if self.bytes.len() < end + 2 {
            return Err(RespError::Incomplete);
        }
        if &self.bytes[end..end + 2] != b"\r\n" {
            return Err(RespError::Invalid { offset: end, reason: "payload not followed by CRLF" });
        }
        let payload = self.bytes[self.offset..end].to_vec();
        self.offset = end + 2;
        Ok(payload)
    }

    /// How many elements an aggregate may claim: each takes at least three bytes, so a count
    /// beyond what the remaining input could hold is refused before anything is allocated.
    fn element_count_max(&self) -> usize {
        (self.bytes.len() - self.offset) / 3 + 1
    }

    fn elements(&mut self, count: usize, depth: usize) -> Result<Vec<Value>, RespError> {
        let mut values = Vec::with_capacity(count.min(self.element_count_max()));
        for _ in 0..count {
            values.push(self.value(depth + 1)?);
        }
        Ok(values)
    }

    fn value(&mut self, depth: usize) -> Result<Value, RespError> {
        if depth > RESP_DEPTH_MAX {
            return Err(self.invalid("nested too deeply"));
        }
        let Some(&kind) = self.bytes.get(self.offset) else {
            return Err(RespError::Incomplete);
        };
        self.offset += 1;
        match kind {
            b'+' => Ok(Value::Simple(self.line()?.to_vec())),
            b'-' => Ok(Value::Error(self.line()?.to_vec())),
            b':' => Ok(Value::Int(self.integer()?)),
            b'(' => Ok(Value::BigNumber(self.line()?.to_vec())),
            b'_' => {
                if !self.line()?.is_empty() {
                    return Err(self.invalid("text after null"));
                }
                Ok(Value::Null)
            }
            b'#' => match self.line()? {
                b"t" => Ok(Value::Bool(true)),
                b"f" => Ok(Value::Bool(false)),
                _ => Err(self.invalid("bad boolean")),
            },
            b',' => {
                let line = self.line()?;
                parse_double(line).map(Value::Double).ok_or(self.invalid("bad double"))
            }
            b'$' => match self.length(BULK_BYTES_MAX)? {
                None => Ok(Value::Null),
                Some(length) => Ok(Value::Bulk(self.payload(length)?)),
            },
            b'=' => self.verbatim(),
            b'*' => match self.length(usize::MAX)? {
                None => Ok(Value::NullArray),
                Some(count) => Ok(Value::Array(self.elements(count, depth)?)),
            },
            b'~' => {
                let count = self.length(usize::MAX)?.ok_or(self.invalid("null set"))?;
                Ok(Value::Set(self.elements(count, depth)?))
            }
            b'%' => {
                let count = self.length(usize::MAX / 2)?.ok_or(self.invalid("null map"))?;
                let flat = self.elements(count * 2, depth)?;
                let mut pairs = Vec::with_capacity(count);
                let mut flat = flat.into_iter();
                while let (Some(key), Some(value)) = (flat.next(), flat.next()) {
                    pairs.push((key, value));
                }
                Ok(Value::Map(pairs))
            }
            b'|' => {
                let count = self.length(usize::MAX / 2)?.ok_or(self.invalid("null attribute"))?;
                self.elements(count * 2, depth)?;
                self.value(depth + 1)
            }
            _ => {
                self.offset -= 1;
                Err(self.invalid("unknown type byte"))
            }
        }
    }

    fn verbatim(&mut self) -> Result<Value, RespError> {
        let length = self.length(BULK_BYTES_MAX)?.ok_or(self.invalid("null verbatim string"))?;
        let payload = self.payload(length)?;
        if payload.len() < 4 || payload[3] != b':' {
            return Err(self.invalid("verbatim string without a format"));
        }
        let format = [payload[0], payload[1], payload[2]];
        Ok(Value::Verbatim { format, text: payload[4..].to_vec() })
    }
}

fn parse_i64(text: &[u8]) -> Option<i64> {
    std::str::from_utf8(text).ok()?.parse().ok()
}

fn parse_double(text: &[u8]) -> Option<f64> {
    match text {
        b"inf" | b"+inf" => Some(f64::INFINITY),
        b"-inf" => Some(f64::NEG_INFINITY),
        b"nan" | b"-nan" => Some(f64::NAN),
        _ => std::str::from_utf8(text).ok()?.parse().ok(),
    }
}

impl Value {
    /// Appends this value to `out` as `protocol` bytes, writing RESP3-only types to a RESP2
    /// client the way Redis 7.0 does: a map as a flat array, a set as an array, a double, big
    /// number or verbatim string as a bulk string, a boolean as `:1`/`:0`.
    pub fn write(&self, protocol: Protocol, out: &mut Vec<u8>) {
        let resp3 = protocol == Protocol::Resp3;
        match self {
            Value::Simple(text) => line(out, b'+', text),
            Value::Error(text) => line(out, b'-', text),
            Value::Int(number) => line(out, b':', number.to_string().as_bytes()),
            Value::Bulk(bytes) => bulk(out, b'$', bytes),
            Value::Null if resp3 => out.extend_from_slice(b"_\r\n"),
            Value::Null => out.extend_from_slice(b"$-1\r\n"),
            Value::NullArray if resp3 => out.extend_from_slice(b"_\r\n"),
            Value::NullArray => out.extend_from_slice(b"*-1\r\n"),
            Value::Array(values) => aggregate(out, b'*', values.len(), values, protocol),
            Value::Set(values) => aggregate(out, if resp3 { b'~' } else { b'*' }, values.len(), values, protocol),
            Value::Map(pairs) => {
                let (kind, count) = if resp3 { (b'%', pairs.len()) } else { (b'*', pairs.len() * 2) };
                line(out, kind, count.to_string().as_bytes());
                for (key, value) in pairs {
                    key.write(protocol, out);
                    value.write(protocol, out);
                }
            }
            Value::Double(number) => write_double(*number, resp3, out),
            Value::Bool(truth) if resp3 => out.extend_from_slice(if *truth { b"#t\r\n" } else { b"#f\r\n" }),
            Value::Bool(truth) => out.extend_from_slice(if *truth { b":1\r\n" } else { b":0\r\n" }),
            Value::BigNumber(digits) if resp3 => line(out, b'(', digits),
            Value::BigNumber(digits) => bulk(out, b'$', digits),
            Value::Verbatim { format, text } if resp3 => {
                let mut payload = Vec::with_capacity(text.len() + 4);
                payload.extend_from_slice(format);
                payload.push(b':');
                payload.extend_from_slice(text);
                bulk(out, b'=', &payload);
            }
            Value::Verbatim { text, .. } => bulk(out, b'$', text),
        }
    }

    /// This value as `protocol` bytes.
    pub fn to_bytes(&self, protocol: Protocol) -> Vec<u8> {
        let mut out = Vec::new();
        self.write(protocol, &mut out);
        out
    }
}

fn line(out: &mut Vec<u8>, kind: u8, text: &[u8]) {
    out.push(kind);
    out.extend_from_slice(text);
    out.extend_from_slice(b"\r\n");
}

fn bulk(out: &mut Vec<u8>, kind: u8, bytes: &[u8]) {
    line(out, kind, bytes.len().to_string().as_bytes());
    out.extend_from_slice(bytes);
    out.extend_from_slice(b"\r\n");
}

fn aggregate(out: &mut Vec<u8>, kind: u8, count: usize, values: &[Value], protocol: Protocol) {
    line(out, kind, count.to_string().as_bytes());
    for value in values {
        value.write(protocol, out);
    }
}

/// Redis writes infinities by name (libc differs on them) and every other double with `%.17g`.
fn write_double(number: f64, resp3: bool, out: &mut Vec<u8>) {
    let text = if number.is_infinite() {
        if number > 0.0 { "inf".to_string() } else { "-inf".to_string() }
    } else {
        format_g(number, 17)
    };
    if resp3 { line(out, b',', text.as_bytes()) } else { bulk(out, b'$', text.as_bytes()) }
}

/// `number` formatted as C's `printf("%.<precision>g")` does with glibc: `%.17g` is how Redis
/// writes doubles and the numbers a script passes to `redis.call`, `%.14g` how Lua 5.1 turns a
/// number into a string.
pub fn format_g(number: f64, precision: usize) -> String {
    assert!((1..=40).contains(&precision), "precision {precision} out of range");
    if number.is_nan() {
        return if number.is_sign_negative() { "-nan".to_string() } else { "nan".to_string() };
    }
    if number.is_infinite() {
        return if number > 0.0 { "inf".to_string() } else { "-inf".to_string() };
    }
    if number == 0.0 {
        return if number.is_sign_negative() { "-0".to_string() } else { "0".to_string() };
    }
    // Rust rounds the decimal expansion exactly, as glibc does: the digits agree.
    let scientific = format!("{:.*e}", precision - 1, number);
    let (mantissa, exponent) = scientific.split_once('e').expect("`{:e}` output has an exponent");
    let exponent: i32 = exponent.parse().expect("`{:e}` exponent is an integer");
    let negative = mantissa.starts_with('-');
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    debug_assert_eq!(digits.len(), precision);
    let mut text = String::with_capacity(precision + 8);
    if negative {
        text.push('-');
    }
    if exponent < -4 || exponent >= precision as i32 {
        text.push_str(&digits[..1]);
        let fraction = digits[1..].trim_end_matches('0');
        if !fraction.is_empty() {
            text.push('.');
            text.push_str(fraction);
        }
        text.push('e');
        text.push(if exponent < 0 { '-' } else { '+' });
        text.push_str(&format!("{:02}", exponent.unsigned_abs()));
    } else if exponent < 0 {
        text.push_str("0.");
        for _ in 0..(-exponent - 1) {
            text.push('0');
        }
        text.push_str(digits.trim_end_matches('0'));
    } else {
        let point = exponent as usize + 1;
        text.push_str(&digits[..point]);
        let fraction = digits[point..].trim_end_matches('0');
        if !fraction.is_empty() {
            text.push('.');
            text.push_str(fraction);
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(bytes: &[u8]) -> Value {
        let (value, used) = parse_resp(bytes).expect("parses");
        assert_eq!(used, bytes.len());
        value
    }

    #[test]
    fn reads_every_resp2_and_resp3_type() {
        assert_eq!(round_trip(b"+OK\r\n"), Value::ok());
        assert_eq!(round_trip(b"-ERR no\r\n"), Value::Error(b"ERR no".to_vec()));
        assert_eq!(round_trip(b":-42\r\n"), Value::Int(-42));
        assert_eq!(round_trip(b"$3\r\na\r\n\r\n"), Value::Bulk(b"a\r\n".to_vec()));
        assert_eq!(round_trip(b"$-1\r\n"), Value::Null);
        assert_eq!(round_trip(b"*-1\r\n"), Value::NullArray);
        assert_eq!(round_trip(b"_\r\n"), Value::Null);
        assert_eq!(round_trip(b"#t\r\n"), Value::Bool(true));
        assert_eq!(round_trip(b",3.5\r\n"), Value::Double(3.5));
        assert_eq!(round_trip(b",-inf\r\n"), Value::Double(f64::NEG_INFINITY));
        assert_eq!(
            round_trip(b"(123456789012345678901234567890\r\n"),
            Value::BigNumber(b"123456789012345678901234567890".to_vec())
        );
        assert_eq!(round_trip(b"=9\r\ntxt:hello\r\n"), Value::Verbatim { format: *b"txt", text: b"hello".to_vec() });
        assert_eq!(
            round_trip(b"%1\r\n$1\r\na\r\n~2\r\n:1\r\n:2\r\n"),
            Value::Map(vec![(Value::bulk("a"), Value::Set(vec![Value::Int(1), Value::Int(2)]))])
        );
        assert_eq!(round_trip(b"|1\r\n+key\r\n+value\r\n:7\r\n"), Value::Int(7));
    }

    #[test]
    fn incomplete_and_invalid_frames_are_told_apart() {
        for partial in [&b""[..], b"$5\r\nab", b"*2\r\n:1\r\n", b"+OK", b"%1\r\n+a\r\n"] {
            assert_eq!(parse_resp(partial), Err(RespError::Incomplete), "{partial:?}");
        }
        for bad in [&b"?\r\n"[..], b":x\r\n", b"$-2\r\n", b"$1\r\nab\r\n", b"#x\r\n", b"=3\r\nabc\r\n"] {
            assert!(matches!(parse_resp(bad), Err(RespError::Invalid { .. })), "{bad:?}");
        }
    }

    #[test]
    fn refuses_nesting_beyond_the_limit_and_huge_counts_without_allocating() {
        let deep = b"*1\r\n".repeat(RESP_DEPTH_MAX + 2);
        assert!(matches!(parse_resp(&deep), Err(RespError::Invalid { .. })));
        assert_eq!(parse_resp(b"*9223372036854775807\r\n"), Err(RespError::Incomplete));
    }

    #[test]
    fn writes_resp3_types_down_converted_for_resp2_as_redis_does() {
        let cases: Vec<(Value, &[u8], &[u8])> = vec![
            (Value::Null, b"$-1\r\n", b"_\r\n"),
            (Value::NullArray, b"*-1\r\n", b"_\r\n"),
            (Value::Bool(true), b":1\r\n", b"#t\r\n"),
            (Value::Bool(false), b":0\r\n", b"#f\r\n"),
            (Value::Double(3.5), b"$3\r\n3.5\r\n", b",3.5\r\n"),
            (Value::Double(0.1), b"$19\r\n0.10000000000000001\r\n", b",0.10000000000000001\r\n"),
            (Value::Double(f64::INFINITY), b"$3\r\ninf\r\n", b",inf\r\n"),
            (Value::Double(f64::NEG_INFINITY), b"$4\r\n-inf\r\n", b",-inf\r\n"),
            (
                Value::BigNumber(b"12345678901234567890".to_vec()),
                b"$20\r\n12345678901234567890\r\n",
                b"(12345678901234567890\r\n",
            ),
            (Value::Verbatim { format: *b"txt", text: b"hello".to_vec() }, b"$5\r\nhello\r\n", b"=9\r\ntxt:hello\r\n"),
            (
                Value::Map(vec![(Value::bulk("a"), Value::Int(1))]),
                b"*2\r\n$1\r\na\r\n:1\r\n",
                b"%1\r\n$1\r\na\r\n:1\r\n",
            ),
            (Value::Set(vec![Value::bulk("x")]), b"*1\r\n$1\r\nx\r\n", b"~1\r\n$1\r\nx\r\n"),
        ];
        for (value, resp2, resp3) in cases {
            assert_eq!(value.to_bytes(Protocol::Resp2), resp2, "{value:?} in RESP2");
            assert_eq!(value.to_bytes(Protocol::Resp3), resp3, "{value:?} in RESP3");
        }
    }

    #[test]
    fn written_values_read_back_the_same_in_resp3() {
        let value = Value::Array(vec![
            Value::ok(),
            Value::Error(b"ERR x".to_vec()),
            Value::Int(i64::MIN),
            Value::bulk(b"\x00\xff"),
            Value::Map(vec![(Value::Int(1), Value::Null)]),
            Value::Set(vec![Value::Bool(false)]),
            Value::Double(-2.25),
        ]);
        assert_eq!(round_trip(&value.to_bytes(Protocol::Resp3)), value);
    }

    #[test]
    fn format_g_matches_c_printf() {
        let cases: &[(f64, usize, &str)] = &[
            (0.1, 17, "0.10000000000000001"),
            (1.5, 17, "1.5"),
            (3.0, 17, "3"),
            (1e20, 17, "1e+20"),
            (1e16, 17, "10000000000000000"),
            (1e17, 17, "1e+17"),
            (123456789.0, 17, "123456789"),
            (0.0001, 17, "0.0001"),
            (0.00001, 17, "1.0000000000000001e-05"),
            (-0.0, 17, "-0"),
            (2f64.powi(60), 17, "1.152921504606847e+18"),
            (1.0 / 3.0, 14, "0.33333333333333"),
            (2f64.powi(53), 14, "9.007199254741e+15"),
            (2f64.powi(63), 14, "9.2233720368548e+18"),
            (1e15, 14, "1e+15"),
            (100.0, 14, "100"),
            (-3.7, 14, "-3.7"),
            (1e-5, 14, "1e-05"),
            (123.456, 14, "123.456"),
        ];
        for &(number, precision, expected) in cases {
            assert_eq!(format_g(number, precision), expected, "{number} with %.{precision}g");
        }
    }
}
