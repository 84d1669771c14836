//! Redis-compatible number parsing and formatting.
//!
//! Owns: the byte-level rules deciding whether a value is an integer or a
//! float, how INCRBYFLOAT results are printed, and how a sorted set's scores are
//! printed (C's `%.17g`, which Redis 7.0 answers scores with, and its `d2string`).
//!
//! Must never: accept anything Redis rejects for counters (leading `+`,
//! leading zeros, spaces, `-0`), since a value that is "an integer" here is
//! stored as `Int` and GET must then reproduce the exact original bytes.
//!
//! Invariants: `parse_i64(b)` succeeds iff `b` is exactly `format_i64(v)` for
//! some `v`, so the integer representation round-trips byte for byte.
//!
//! Known divergence: Redis does INCRBYFLOAT arithmetic in `long double`
//! (80-bit on x86); this module uses `f64`, so results needing more than
//! ~15-17 significant digits (e.g. integers beyond 2^53) can differ from
//! Redis in the last digits, and hexadecimal float input is not accepted.

/// Longest text Redis' `string2ld` accepts (`MAX_LONG_DOUBLE_CHARS`).
const MAX_FLOAT_TEXT: usize = 5 * 1024;

/// Parses a canonical decimal `i64` with Redis' `string2ll` rules: optional
/// `-`, no `+`, no leading zeros (except `"0"` itself), no whitespace.
pub fn parse_i64(bytes: &[u8]) -> Option<i64> {
    let (negative, digits) = match bytes.split_first()? {
        (b'-', rest) => (true, rest),
        _ => (false, bytes),
    };
    match digits {
        [] => return None,
        [b'0'] => return (!negative).then_some(0),
        [b'1'..=b'9', ..] if digits.len() <= 19 => {}
        _ => return None,
    }
    let mut magnitude: u64 = 0;
    for &d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        magnitude = magnitude.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
    }
    if negative { 0i64.checked_sub_unsigned(magnitude) } else { i64::try_from(magnitude).ok() }
}

/// Decimal text of `v`; the inverse of [`parse_i64`].
pub fn format_i64(v: i64) -> Vec<u8> {
    v.to_string().into_bytes()
}

/// Decimal text of `v` in a stack buffer: `(buffer, start)`, the text being
/// `buffer[start..]`. For replies that must not allocate (GET of an integer).
pub fn format_i64_inline(v: i64) -> ([u8; 20], usize) {
    let mut buffer = [0u8; 20];
    let mut at = buffer.len();
    let mut magnitude = v.unsigned_abs();
    loop {
        at -= 1;
        // `magnitude % 10` is a digit, so the cast cannot truncate.
        buffer[at] = b'0' + (magnitude % 10) as u8;
        magnitude /= 10;
        if magnitude == 0 {
            break;
        }
    }
    if v < 0 {
        at -= 1;
        buffer[at] = b'-';
    }
    (buffer, at)
}

/// Number of bytes `format_i64(v)` would produce, without allocating.
pub fn i64_text_len(v: i64) -> usize {
    let digits = v.unsigned_abs().checked_ilog10().map_or(1, |l| l as usize + 1);
    digits + usize::from(v < 0)
}

/// Parses a float like Redis' `string2ld` (strtold): decimal or exponent
/// notation, optional sign, `inf`/`infinity`; rejects NaN, whitespace, empty
/// input, and text that overflows to infinity or underflows to zero.
/// (strtold's hexadecimal floats are not supported.)
pub fn parse_f64(bytes: &[u8]) -> Option<f64> {
    if bytes.is_empty() || bytes.len() >= MAX_FLOAT_TEXT {
        return None;
    }
    let text = std::str::from_utf8(bytes).ok()?;
    let value: f64 = text.parse().ok()?;
    if value.is_nan() {
        return None;
    }
    // Rust saturates out-of-range literals; strtold reports ERANGE instead,
    // which Redis turns into "not a valid float".
    if value.is_infinite() && !is_infinity_literal(text) {
        return None;
    }
    if value == 0.0 && mantissa_has_nonzero_digit(text) {
        return None;
    }
    Some(value)
}

fn is_infinity_literal(text: &str) -> bool {
    let unsigned = text.trim_start_matches(['+', '-']);
    unsigned.eq_ignore_ascii_case("inf") || unsigned.eq_ignore_ascii_case("infinity")
}

fn mantissa_has_nonzero_digit(text: &str) -> bool {
    text.bytes().take_while(|b| !matches!(b, b'e' | b'E')).any(|b| matches!(b, b'1'..=b'9'))
}

/// Formats an INCRBYFLOAT result: the shortest decimal text that round-trips,
/// never in exponent notation, without trailing zeros or a trailing dot
/// (`10.5`, `3`, `5000`), which is the shape Redis' human format produces.
pub fn format_f64(v: f64) -> Vec<u8> {
    // Rust's `Display` for f64 is exactly "shortest round-trip, no exponent".
    v.to_string().into_bytes()
}

/// Appends `v` as C's `printf("%.17g")` prints it: 17 significant digits, trailing zeros
/// dropped, exponent notation below 1e-4 and from 1e17 (`1.1000000000000001`, `0.5`,
/// `1e+20`), and `inf`, `-inf`, `-0` as Redis spells them. Allocates nothing.
pub fn write_g17(v: f64, out: &mut Vec<u8>) {
    use std::io::Write;
    if v.is_nan() {
        return out.extend_from_slice(b"nan");
    }
    if v.is_sign_negative() {
        out.push(b'-');
    }
    if v.is_infinite() {
        return out.extend_from_slice(b"inf");
    }
    if v == 0.0 {
        return out.push(b'0');
    }
    // `{:.16e}` rounds to 17 significant digits as printf does (round half to even on
    // the exact binary value): `d.dddddddddddddddde<exp>`.
    let mut text = [0u8; 32];
    let mut cursor = std::io::Cursor::new(&mut text[..]);
    write!(cursor, "{:.16e}", v.abs()).expect("32 bytes hold any f64 in this form");
    let written = cursor.position() as usize;
    let text = &text[..written];
    let e_at = text.iter().position(|&b| b == b'e').expect("exponent form");
    let mut digits = [0u8; 17];
    digits[0] = text[0];
    digits[1..].copy_from_slice(&text[2..e_at]);
    let exponent: i32 = std::str::from_utf8(&text[e_at + 1..]).expect("ascii").parse().expect("an exponent");
    // Significant digits left once trailing zeros go.
    let kept = 17 - digits.iter().rev().take_while(|&&d| d == b'0').count();
    if (-4..17).contains(&exponent) {
        if exponent < 0 {
            out.extend_from_slice(b"0.");
            out.extend(std::iter::repeat_n(b'0', (-exponent - 1) as usize));
            out.extend_from_slice(&digits[..kept]);
        } else {
            let whole = exponent as usize + 1;
            out.extend_from_slice(&digits[..whole]);
            if kept > whole {
                out.push(b'.');
                out.extend_from_slice(&digits[whole..kept]);
            }
        }
        return;
    }
    out.push(digits[0]);
    if kept > 1 {
        out.push(b'.');
        out.extend_from_slice(&digits[1..kept]);
    }
    out.push(b'e');
    out.push(if exponent < 0 { b'-' } else { b'+' });
    let magnitude = exponent.unsigned_abs();
    if magnitude < 10 {
        out.push(b'0');
    }
    out.extend_from_slice(magnitude.to_string().as_bytes());
}

/// Appends `v` as Redis' `d2string` prints it (ZSCAN's scores, SORT's keys): a whole
/// number that fits an `i64` as an integer, anything else as [`write_g17`].
pub fn write_d2string(v: f64, out: &mut Vec<u8>) {
    // The i64 range, excluding its ends (as Redis' double2ll), and an exact whole number.
    if v != 0.0 && v > -9.223_372_036_854_775e18 && v < 9.223_372_036_854_775e18 && v.fract() == 0.0 {
        let (buffer, start) = format_i64_inline(v as i64);
        return out.extend_from_slice(&buffer[start..]);
    }
    write_g17(v, out);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g17(v: f64) -> String {
        let mut out = Vec::new();
        write_g17(v, &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn scores_print_as_printf_g17() {
        for (v, text) in [
            (1.1, "1.1000000000000001"),
            (0.5, "0.5"),
            (3.0, "3"),
            (-2.5, "-2.5"),
            (1e20, "1e+20"),
            (1e16, "10000000000000000"),
            (1e17, "1e+17"),
            (123456789012345678.0, "1.2345678901234568e+17"),
            (1e-5, "1.0000000000000001e-05"),
            (0.0001, "0.0001"),
            (0.00012, "0.00012"),
            (-0.0, "-0"),
            (0.0, "0"),
            (f64::INFINITY, "inf"),
            (f64::NEG_INFINITY, "-inf"),
            (1e300, "1.0000000000000001e+300"),
            (5e-324, "4.9406564584124654e-324"),
            (f64::MAX, "1.7976931348623157e+308"),
        ] {
            assert_eq!(g17(v), text, "{v:e}");
        }
        let mut out = Vec::new();
        write_d2string(1e18, &mut out);
        assert_eq!(out, b"1000000000000000000", "d2string prints whole numbers as integers");
        out.clear();
        write_d2string(1.5, &mut out);
        assert_eq!(out, b"1.5");
    }

    #[test]
    fn inline_formatting_matches_the_allocating_one() {
        for v in [0, 1, -1, 9, 10, -10, 99, 100, 12_345, i64::from(i32::MAX), i64::MAX, i64::MIN, i64::MIN + 1] {
            let (buffer, start) = format_i64_inline(v);
            assert_eq!(&buffer[start..], &format_i64(v)[..], "{v}");
        }
    }

    #[test]
    fn integers_follow_string2ll() {
        for ok in ["0", "1", "-1", "42", "9223372036854775807", "-9223372036854775808"] {
            let v = parse_i64(ok.as_bytes()).unwrap();
            assert_eq!(format_i64(v), ok.as_bytes());
            assert_eq!(i64_text_len(v), ok.len());
        }
        for bad in [
            "",
            "-",
            "+1",
            "01",
            "-0",
            "00",
            " 1",
            "1 ",
            "1a",
            "9223372036854775808",
            "-9223372036854775809",
            "99999999999999999999",
            "1.0",
            "0x10",
        ] {
            assert_eq!(parse_i64(bad.as_bytes()), None, "{bad:?}");
        }
    }

    #[test]
    fn floats_follow_string2ld() {
        assert_eq!(parse_f64(b"10.5"), Some(10.5));
        assert_eq!(parse_f64(b"5.0e3"), Some(5000.0));
        assert_eq!(parse_f64(b".5"), Some(0.5));
        assert_eq!(parse_f64(b"+1"), Some(1.0));
        assert_eq!(parse_f64(b"-inf"), Some(f64::NEG_INFINITY));
        assert_eq!(parse_f64(b"0.0"), Some(0.0));
        for bad in ["", "nan", "NaN", " 1", "1 ", "abc", "1e999", "1e-999", "1,5"] {
            assert_eq!(parse_f64(bad.as_bytes()), None, "{bad:?}");
        }
    }

    #[test]
    fn float_formatting_is_shortest_without_exponent() {
        assert_eq!(format_f64(10.5), b"10.5");
        assert_eq!(format_f64(3.0), b"3");
        assert_eq!(format_f64(5000.0), b"5000");
        assert_eq!(format_f64(5200.0), b"5200");
        assert_eq!(format_f64(-0.25), b"-0.25");
        assert_eq!(format_f64(1e21), b"1000000000000000000000");
        assert_eq!(format_f64(1e-7), b"0.0000001");
    }
}
