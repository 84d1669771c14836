//! MariaDB/MySQL values to JSON, one mapping for the copy (binary protocol values) and the
//! binlog (row image values), so the same value becomes the same JSON either way.
//!
//! Owns: `ValueKind` (what a column's values mean, read from its `COLUMN_TYPE` or from a
//! table map), `to_json` (a protocol value) and `binlog_to_json` (a row image value,
//! normalised to the protocol's form first). Never: round a DECIMAL unless the user chose
//! doubles, or guess a time zone (TIMESTAMP is UTC; DATETIME is taken as UTC).
//!
//! The mapping:
//!
//! | source | JSON |
//! |---|---|
//! | TINYINT..BIGINT (BOOL is TINYINT(1): stays an integer), UNSIGNED too, BIT, YEAR | number |
//! | DECIMAL | `NumericMode`: exact (a number when the value reads back exactly, else its text), text, double |
//! | FLOAT, DOUBLE | number (a FLOAT as its shortest decimal) |
//! | CHAR, VARCHAR, TEXT, ENUM, SET, INET | text (a SET as `a,c`) |
//! | BINARY, VARBINARY, BLOB, GEOMETRY | base64 text (standard alphabet, padded) |
//! | JSON (MySQL), LONGTEXT with a `json_valid` check (MariaDB) | nested JSON |
//! | UUID (MariaDB 10.7+) | its text |
//! | DATE | `YYYY-MM-DD` (epoch: seconds of its midnight UTC) |
//! | TIME | `[-]HH:MM:SS[.ffffff]` (hours may pass 24) |
//! | DATETIME, TIMESTAMP | `YYYY-MM-DDTHH:MM:SS[.ffffff]Z` (epoch: seconds, a double with fractions) |
//! | zero dates (`0000-00-00`), NULL | null |

use crate::civil::{civil_from_days, days_from_civil};
use crate::source::{NumericMode, Options, TimeMode};
use base64::Engine as _;
use mysql_async::Value;
use mysql_async::binlog::value::BinlogValue;
use serde_json::{Number, Value as Json};

/// What a column's values mean.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ValueKind {
    /// An integer, signed or not (TINYINT..BIGINT, BOOL).
    Integer,
    /// A signed MEDIUMINT in a row image: mysql_common 0.37.3 reads its 3 bytes without
    /// extending the sign (-1 arrives as 16777215), so it is extended here.
    SignedMediumInt,
    /// DECIMAL/NUMERIC.
    Decimal,
    /// FLOAT (single precision).
    Float,
    /// DOUBLE.
    Double,
    /// YEAR.
    Year,
    /// BIT(n), as an unsigned integer.
    Bit,
    /// Characters (CHAR, VARCHAR, TEXT, INET4/6, anything unknown); `latin1`: the binlog
    /// holds them in latin1 rather than UTF-8.
    Text {
        /// The binlog's bytes are latin1.
        latin1: bool,
    },
    /// Bytes; `fixed_bytes`: BINARY(n), whose trailing zero bytes the binlog leaves out.
    Binary {
        /// n of BINARY(n) when the row image strips its padding.
        fixed_bytes: Option<usize>,
    },
    /// JSON text (MySQL's JSON, MariaDB's LONGTEXT with `json_valid`).
    Json,
    /// MariaDB's UUID.
    Uuid,
    /// ENUM with its values in order (the binlog sends the 1-based number).
    Enum(Vec<String>),
    /// SET with its values in order (the binlog sends a bit mask).
    Set(Vec<String>),
    /// DATE.
    Date,
    /// TIME.
    Time,
    /// DATETIME.
    DateTime,
    /// TIMESTAMP.
    Timestamp,
}

impl ValueKind {
    /// The kind of a column from its `information_schema.COLUMNS.COLUMN_TYPE`
    /// (`int(10) unsigned`, `varchar(20)`, `enum('a','b')`), or `json`.
    pub(crate) fn from_column_type(column_type: &str) -> ValueKind {
        let lower = column_type.to_ascii_lowercase();
        let base = lower.split(['(', ' ']).next().unwrap_or_default();
        match base {
            "tinyint" | "smallint" | "mediumint" | "int" | "integer" | "bigint" | "bool" | "boolean" => {
                ValueKind::Integer
            }
            "decimal" | "numeric" | "dec" | "fixed" => ValueKind::Decimal,
            "float" => ValueKind::Float,
            "double" | "real" => ValueKind::Double,
            "year" => ValueKind::Year,
            "bit" => ValueKind::Bit,
            "binary" | "varbinary" | "tinyblob" | "blob" | "mediumblob" | "longblob" | "geometry" | "point"
            | "linestring" | "polygon" | "multipoint" | "multilinestring" | "multipolygon" | "geometrycollection" => {
                ValueKind::Binary { fixed_bytes: None }
            }
            "json" => ValueKind::Json,
            "uuid" => ValueKind::Uuid,
            "enum" => ValueKind::Enum(list_values(column_type)),
            "set" => ValueKind::Set(list_values(column_type)),
            "date" => ValueKind::Date,
            "time" => ValueKind::Time,
            "datetime" => ValueKind::DateTime,
            "timestamp" => ValueKind::Timestamp,
            _ => ValueKind::Text { latin1: false },
        }
    }
}

/// The quoted values of `enum('a','b''c')`.
fn list_values(column_type: &str) -> Vec<String> {
    let inner = column_type.split_once('(').map(|(_, rest)| rest).unwrap_or_default();
    let mut values = Vec::new();
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\'' {
            continue;
        }
        let mut value = String::new();
        loop {
            match chars.next() {
                Some('\'') if chars.peek() == Some(&'\'') => {
                    chars.next();
                    value.push('\'');
                }
                Some('\'') | None => break,
                Some('\\') => value.extend(chars.next()),
                Some(c) => value.push(c),
            }
        }
        values.push(value);
    }
    values
}

/// A row image value to JSON: the binlog's own forms (an ENUM's number, a SET's mask, a
/// TIMESTAMP's epoch, BINARY(n) without its padding, a UUID's 16 bytes, latin1 text)
/// are brought to what the protocol sends first.
pub(crate) fn binlog_to_json(value: BinlogValue<'_>, kind: &ValueKind, options: &Options) -> Result<Json, String> {
    let value = match value {
        BinlogValue::Value(value) => value,
        BinlogValue::Jsonb(jsonb) => {
            return Json::try_from(jsonb).map_err(|error| format!("a JSON value did not decode: {error}"));
        }
        BinlogValue::JsonDiff(_) => {
            return Err("partial JSON updates are not supported: set binlog_row_value_options=''".into());
        }
    };
    let value = match (kind, value) {
        (ValueKind::Enum(values), Value::Int(number)) => Value::Bytes(enum_text(values, number).into_bytes()),
        (ValueKind::Set(values), Value::Bytes(mask)) => Value::Bytes(set_text(values, &mask).into_bytes()),
        (ValueKind::SignedMediumInt, Value::Int(number)) if number >= 1 << 23 => Value::Int(number - (1 << 24)),
        (ValueKind::Timestamp, Value::Bytes(epoch)) => return timestamp_from_epoch_text(&epoch, options),
        (ValueKind::Timestamp, Value::Int(seconds)) => return Ok(timestamp_json(seconds, 0, options)),
        (ValueKind::Year, Value::Bytes(text)) => {
            // mysql_common prints the stored byte y as 1900 + y; YEAR's range is 1901..2155
            // and 0 (0000), so 1900 can only be the zero year.
            let year: i64 = parse_text(&text)?;
            Value::Int(if year == 1900 { 0 } else { year })
        }
        (ValueKind::Binary { fixed_bytes: Some(length) }, Value::Bytes(mut bytes)) => {
            if bytes.len() < *length {
                bytes.resize(*length, 0);
            }
            Value::Bytes(bytes)
        }
        (ValueKind::Uuid, Value::Bytes(bytes)) if bytes.len() <= 16 => Value::Bytes(uuid_text(&bytes).into_bytes()),
        (ValueKind::Text { latin1: true }, Value::Bytes(bytes)) => {
            Value::Bytes(bytes.iter().map(|b| char::from(*b)).collect::<String>().into_bytes())
        }
        (_, value) => value,
    };
    to_json(value, kind, options)
}

/// A protocol value (the binary protocol's, or a normalised row image's) to JSON.
pub(crate) fn to_json(value: Value, kind: &ValueKind, options: &Options) -> Result<Json, String> {
    Ok(match value {
        Value::NULL => Json::Null,
        Value::Int(number) => Json::from(number),
        Value::UInt(number) => Json::from(number),
        Value::Float(number) => float_json(number)?,
        Value::Double(number) => double_json(number)?,
        Value::Date(year, month, day, hour, minute, second, micros) => date_json(
            kind,
            [year as i64, month as i64, day as i64, hour as i64, minute as i64, second as i64],
            micros,
            options,
        ),
        Value::Time(negative, days, hours, minutes, seconds, micros) => {
            let hours = days as u64 * 24 + hours as u64;
            let sign = if negative { "-" } else { "" };
            Json::String(format!("{sign}{hours:02}:{minutes:02}:{seconds:02}{}", fraction(micros)))
        }
        Value::Bytes(bytes) => bytes_json(bytes, kind, options)?,
    })
}

fn bytes_json(bytes: Vec<u8>, kind: &ValueKind, options: &Options) -> Result<Json, String> {
    Ok(match kind {
        ValueKind::Decimal => decimal_json(&text(bytes)?, options.numeric)?,
        ValueKind::Integer | ValueKind::SignedMediumInt | ValueKind::Year => integer_json(&text(bytes)?)?,
        ValueKind::Float | ValueKind::Double => double_json(parse_text(&bytes)?)?,
        ValueKind::Bit => {
            if bytes.len() > 8 {
                return Err(format!("a BIT value of {} bytes does not fit 64 bits", bytes.len()));
            }
            Json::from(bytes.iter().fold(0u64, |acc, b| acc << 8 | *b as u64))
        }
        ValueKind::Binary { .. } => Json::String(base64::engine::general_purpose::STANDARD.encode(&bytes)),
        ValueKind::Json => {
            let text = text(bytes)?;
            // A json_valid check makes invalid text impossible; should a column lose its
            // check, its text is still worth keeping rather than failing the row.
            serde_json::from_str(&text).unwrap_or(Json::String(text))
        }
        _ => Json::String(text(bytes)?),
    })
}

fn text(bytes: Vec<u8>) -> Result<String, String> {
    String::from_utf8(bytes).map_err(|error| format!("a text value is not UTF-8: {error}"))
}

fn parse_text<T: std::str::FromStr>(bytes: &[u8]) -> Result<T, String> {
    std::str::from_utf8(bytes)
        .ok()
        .and_then(|text| text.trim().parse().ok())
        .ok_or_else(|| format!("{:?} is not a number", String::from_utf8_lossy(bytes)))
}

fn integer_json(text: &str) -> Result<Json, String> {
    if let Ok(number) = text.parse::<i64>() {
        return Ok(Json::from(number));
    }
    text.parse::<u64>().map(Json::from).map_err(|_| format!("{text:?} is not an integer"))
}

/// A FLOAT is single precision: its shortest decimal text read as a double, so `1.1`
/// stays 1.1 and not 1.100000023841858.
fn float_json(number: f32) -> Result<Json, String> {
    let shortest: f64 = number.to_string().parse().map_err(|_| format!("{number} is not a number"))?;
    double_json(shortest)
}

fn double_json(number: f64) -> Result<Json, String> {
    Number::from_f64(number).map(Json::Number).ok_or_else(|| format!("{number} has no JSON form"))
}

/// A DECIMAL's text with the integer part's leading zeros dropped (`-0` as `0`).
fn canonical_decimal(text: &str) -> Result<String, String> {
    let text = text.trim();
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    let (integer, fraction) = digits.split_once('.').unwrap_or((digits, ""));
    let well_formed = !(integer.is_empty() && fraction.is_empty())
        && integer.bytes().all(|b| b.is_ascii_digit())
        && fraction.bytes().all(|b| b.is_ascii_digit());
    if !well_formed {
        return Err(format!("{text:?} is not a decimal"));
    }
    let integer = integer.trim_start_matches('0');
    let integer = if integer.is_empty() { "0" } else { integer };
    let zero = integer == "0" && fraction.bytes().all(|b| b == b'0');
    let sign = if negative && !zero { "-" } else { "" };
    Ok(if fraction.is_empty() { format!("{sign}{integer}") } else { format!("{sign}{integer}.{fraction}") })
}

fn decimal_json(text: &str, mode: NumericMode) -> Result<Json, String> {
    let canonical = canonical_decimal(text)?;
    match mode {
        NumericMode::String => Ok(Json::String(canonical)),
        NumericMode::Double => double_json(canonical.parse().map_err(|_| format!("{text:?} is not a number"))?),
        NumericMode::Exact => {
            // The value without trailing fraction zeros (12.50 is 12.5): a number when an
            // i64 or a double prints back exactly that, else the text, never rounded.
            let value = match canonical.split_once('.') {
                Some((integer, fraction)) => {
                    let fraction = fraction.trim_end_matches('0');
                    if fraction.is_empty() { integer.to_string() } else { format!("{integer}.{fraction}") }
                }
                None => canonical.clone(),
            };
            if let Ok(integer) = value.parse::<i64>() {
                return Ok(Json::from(integer));
            }
            if value.contains('.')
                && let Ok(double) = value.parse::<f64>()
                && double.to_string() == value
            {
                return double_json(double);
            }
            Ok(Json::String(canonical))
        }
    }
}

fn fraction(micros: u32) -> String {
    if micros == 0 { String::new() } else { format!(".{micros:06}") }
}

/// A DATE, DATETIME or TIMESTAMP from its fields; the zero date is null.
fn date_json(kind: &ValueKind, fields: [i64; 6], micros: u32, options: &Options) -> Json {
    let [year, month, day, hour, minute, second] = fields;
    if year == 0 && month == 0 && day == 0 {
        return Json::Null;
    }
    let epoch = || days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second;
    match (kind, options.time) {
        (ValueKind::Date, TimeMode::Rfc3339) => Json::String(format!("{year:04}-{month:02}-{day:02}")),
        (ValueKind::Date, TimeMode::Epoch) => Json::from(epoch()),
        (_, TimeMode::Epoch) => epoch_json(epoch(), micros),
        (_, TimeMode::Rfc3339) => Json::String(format!(
            "{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}{}Z",
            fraction(micros)
        )),
    }
}

fn epoch_json(seconds: i64, micros: u32) -> Json {
    if micros == 0 {
        Json::from(seconds)
    } else {
        Number::from_f64(seconds as f64 + micros as f64 / 1e6).map(Json::Number).unwrap_or(Json::Null)
    }
}

/// The binlog's TIMESTAMP2: epoch seconds as text, `sec` or `sec.micros`; 0 is the zero date.
fn timestamp_from_epoch_text(text: &[u8], options: &Options) -> Result<Json, String> {
    let text = std::str::from_utf8(text).map_err(|_| "a TIMESTAMP is not text".to_string())?;
    let (seconds, micros) = text.split_once('.').unwrap_or((text, "0"));
    let seconds: i64 = seconds.parse().map_err(|_| format!("{text:?} is not a TIMESTAMP"))?;
    let micros: u32 = micros.parse().map_err(|_| format!("{text:?} is not a TIMESTAMP"))?;
    Ok(timestamp_json(seconds, micros, options))
}

fn timestamp_json(seconds: i64, micros: u32, options: &Options) -> Json {
    if seconds == 0 && micros == 0 {
        return Json::Null;
    }
    if options.time == TimeMode::Epoch {
        return epoch_json(seconds, micros);
    }
    let (year, month, day) = civil_from_days(seconds.div_euclid(86_400));
    let in_day = seconds.rem_euclid(86_400);
    date_json(&ValueKind::Timestamp, [year, month, day, in_day / 3600, in_day / 60 % 60, in_day % 60], micros, options)
}

fn enum_text(values: &[String], number: i64) -> String {
    // 0 is the empty string MariaDB stores for a value it refused in non-strict mode.
    usize::try_from(number).ok().and_then(|n| n.checked_sub(1)).and_then(|i| values.get(i)).cloned().unwrap_or_default()
}

fn set_text(values: &[String], mask: &[u8]) -> String {
    let mut members = Vec::new();
    for (i, value) in values.iter().enumerate() {
        let byte = mask.get(i / 8).copied().unwrap_or(0);
        if byte >> (i % 8) & 1 == 1 {
            members.push(value.as_str());
        }
    }
    members.join(",")
}

/// MariaDB's UUID as the row image holds it: its 16 bytes in text order (checked on
/// 10.11 for version 1, 4 and 7 UUIDs), trailing zero bytes left out like BINARY(16)'s.
fn uuid_text(bytes: &[u8]) -> String {
    let mut full = [0u8; 16];
    full[..bytes.len()].copy_from_slice(bytes);
    let hex: String = full.iter().map(|b| format!("{b:02x}")).collect();
    format!("{}-{}-{}-{}-{}", &hex[0..8], &hex[8..12], &hex[12..16], &hex[16..20], &hex[20..32])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(numeric: NumericMode, time: TimeMode) -> Options {
        Options { numeric, time, ..Options::default() }
    }

    #[test]
    fn kinds_from_column_types() {
        assert_eq!(ValueKind::from_column_type("int(10) unsigned"), ValueKind::Integer);
        assert_eq!(ValueKind::from_column_type("tinyint(1)"), ValueKind::Integer);
        assert_eq!(ValueKind::from_column_type("decimal(10,2)"), ValueKind::Decimal);
        assert_eq!(ValueKind::from_column_type("varbinary(8)"), ValueKind::Binary { fixed_bytes: None });
        assert_eq!(
            ValueKind::from_column_type("enum('a','b''c','d\\\\e')"),
            ValueKind::Enum(vec!["a".into(), "b'c".into(), "d\\e".into()])
        );
        assert_eq!(ValueKind::from_column_type("timestamp(6)"), ValueKind::Timestamp);
        assert_eq!(ValueKind::from_column_type("json"), ValueKind::Json);
        assert_eq!(ValueKind::from_column_type("mediumtext"), ValueKind::Text { latin1: false });
    }

    #[test]
    fn decimals_by_mode() {
        let exact = |t: &str| decimal_json(t, NumericMode::Exact).unwrap();
        assert_eq!(exact("12.50"), serde_json::json!(12.5));
        assert_eq!(exact("0000000012.00"), serde_json::json!(12));
        assert_eq!(exact("-0.00"), serde_json::json!(0));
        assert_eq!(exact("0.1"), serde_json::json!(0.1));
        assert_eq!(exact("12345678901234567890.12"), serde_json::json!("12345678901234567890.12"));
        assert_eq!(exact("99999999999999999999"), serde_json::json!("99999999999999999999"));
        assert_eq!(exact("0.30000000000000001"), serde_json::json!("0.30000000000000001"));
        assert_eq!(decimal_json("0012.50", NumericMode::String).unwrap(), serde_json::json!("12.50"));
        assert_eq!(decimal_json("-1.25", NumericMode::Double).unwrap(), serde_json::json!(-1.25));
        assert!(decimal_json("1e5", NumericMode::Exact).is_err());
    }

    #[test]
    fn dates_and_times() {
        let rfc = options(NumericMode::Exact, TimeMode::Rfc3339);
        let epoch = options(NumericMode::Exact, TimeMode::Epoch);
        let datetime = Value::Date(2024, 5, 1, 12, 30, 5, 250_000);
        assert_eq!(to_json(datetime.clone(), &ValueKind::DateTime, &rfc).unwrap(), "2024-05-01T12:30:05.250000Z");
        assert_eq!(to_json(datetime, &ValueKind::Timestamp, &epoch).unwrap(), serde_json::json!(1714566605.25));
        assert_eq!(to_json(Value::Date(2024, 5, 1, 0, 0, 0, 0), &ValueKind::Date, &rfc).unwrap(), "2024-05-01");
        assert_eq!(
            to_json(Value::Date(2024, 5, 1, 0, 0, 0, 0), &ValueKind::Date, &epoch).unwrap(),
            serde_json::json!(1714521600)
        );
        assert_eq!(to_json(Value::Date(0, 0, 0, 0, 0, 0, 0), &ValueKind::DateTime, &rfc).unwrap(), Json::Null);
        assert_eq!(to_json(Value::Time(true, 1, 2, 3, 4, 5), &ValueKind::Time, &rfc).unwrap(), "-26:03:04.000005");
        // The binlog's TIMESTAMP2 is epoch text; the same instant as the protocol's fields.
        let binlog = binlog_to_json(
            BinlogValue::Value(Value::Bytes(b"1714566605.250000".to_vec())),
            &ValueKind::Timestamp,
            &rfc,
        );
        assert_eq!(binlog.unwrap(), "2024-05-01T12:30:05.250000Z");
    }

    #[test]
    fn binlog_forms_match_protocol_forms() {
        let o = Options::default();
        let e = ValueKind::Enum(vec!["x".into(), "y".into()]);
        assert_eq!(binlog_to_json(BinlogValue::Value(Value::Int(2)), &e, &o).unwrap(), "y");
        let s = ValueKind::Set(vec!["a".into(), "b".into(), "c".into()]);
        assert_eq!(binlog_to_json(BinlogValue::Value(Value::Bytes(vec![0b101])), &s, &o).unwrap(), "a,c");
        let b = ValueKind::Binary { fixed_bytes: Some(4) };
        assert_eq!(binlog_to_json(BinlogValue::Value(Value::Bytes(b"ab".to_vec())), &b, &o).unwrap(), "YWIAAA==");
        let uuid: Vec<u8> = (0u8..15).collect();
        assert_eq!(
            binlog_to_json(BinlogValue::Value(Value::Bytes(uuid)), &ValueKind::Uuid, &o).unwrap(),
            "00010203-0405-0607-0809-0a0b0c0d0e00"
        );
        assert_eq!(
            binlog_to_json(BinlogValue::Value(Value::Bytes(b"1900".to_vec())), &ValueKind::Year, &o).unwrap(),
            0
        );
        let latin1 = ValueKind::Text { latin1: true };
        assert_eq!(binlog_to_json(BinlogValue::Value(Value::Bytes(vec![0x63, 0xe9])), &latin1, &o).unwrap(), "cé");
        assert_eq!(to_json(Value::Float(1.1), &ValueKind::Float, &o).unwrap(), serde_json::json!(1.1));
        assert_eq!(to_json(Value::UInt(u64::MAX), &ValueKind::Integer, &o).unwrap(), serde_json::json!(u64::MAX));
        assert_eq!(to_json(Value::Bytes(vec![1, 0]), &ValueKind::Bit, &o).unwrap(), 256);
        assert_eq!(
            to_json(Value::Bytes(br#"{"a":[1]}"#.to_vec()), &ValueKind::Json, &o).unwrap(),
            serde_json::json!({"a": [1]})
        );
    }
}
