//! Typed scalar values: what indexes and columns store, and how they compare.
//!
//! Owns: `FieldType`, `Scalar` (an owned indexed value), `ScalarRef` (a borrowed one, for
//! zero-allocation comparisons on hot paths), numeric comparison across int and double,
//! and the conversion of JSON values into scalars for a typed field.
//! Never: parse JSON text (see `doc`), or know about indexes or queries.
//!
//! Strings are stored as collation keys (see `collate`), so equality and order on
//! `Scalar::Str` are byte equality and byte order.

use crate::collate::Collation;
use serde_json::Value;
use std::cmp::Ordering;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

/// The declared type of an indexed field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FieldType {
    /// A 64-bit signed integer; a double (even `2.0`) does not fit.
    Int,
    /// A 64-bit float; ints widen to it.
    Double,
    /// A UTF-8 string, indexed by its collation key.
    String,
    /// `true` or `false`.
    Bool,
}

impl FieldType {
    /// Parses the names used in index definitions, in any case (`int`, `INT`, `Integer`),
    /// as SQL spells types.
    pub fn parse(name: &str) -> Option<FieldType> {
        match name.to_ascii_lowercase().as_str() {
            "int" | "int64" | "integer" | "bigint" => Some(FieldType::Int),
            "double" | "float" | "number" => Some(FieldType::Double),
            "string" | "str" | "text" => Some(FieldType::String),
            "bool" | "boolean" => Some(FieldType::Bool),
            _ => None,
        }
    }

    /// The type's canonical name (`int`, `double`, `string`, `bool`), as messages and
    /// index definitions write it.
    pub fn name(self) -> &'static str {
        match self {
            FieldType::Int => "int",
            FieldType::Double => "double",
            FieldType::String => "string",
            FieldType::Bool => "bool",
        }
    }
}

/// A double with a total order and hashing, so it can key a tree or hash index.
/// `-0.0` is stored as `0.0` so that the two compare equal as JSON numbers do.
#[derive(Debug, Clone, Copy)]
pub struct OrdF64(pub f64);

impl OrdF64 {
    /// Wraps `value`, turning `-0.0` into `0.0`.
    pub fn new(value: f64) -> OrdF64 {
        OrdF64(if value == 0.0 { 0.0 } else { value })
    }
}

impl PartialEq for OrdF64 {
    fn eq(&self, other: &Self) -> bool {
        self.0.total_cmp(&other.0) == Ordering::Equal
    }
}
impl Eq for OrdF64 {}
impl PartialOrd for OrdF64 {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for OrdF64 {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.total_cmp(&other.0)
    }
}
impl Hash for OrdF64 {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.0.to_bits().hash(state);
    }
}

/// An owned indexed value. Within one index every non-null key has the index's type, so
/// the derived order (variant first) only ever compares like with like, with `Null` first.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Scalar {
    /// JSON `null`, or no value.
    Null,
    /// A boolean.
    Bool(bool),
    /// An integer.
    Int(i64),
    /// A double (never `-0.0`).
    Double(OrdF64),
    /// A string's collation key (its own UTF-8 bytes under `Collation::None`).
    Str(Arc<[u8]>),
}

/// A borrowed scalar, read from a column or a parsed document without allocating.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ScalarRef<'a> {
    /// A boolean.
    Bool(bool),
    /// An integer.
    Int(i64),
    /// A double.
    Double(f64),
    /// A string's collation key, as in `Scalar::Str`.
    Str(&'a [u8]),
}

impl Scalar {
    /// The borrowed form; `None` for `Null`, which has none.
    pub fn as_ref(&self) -> Option<ScalarRef<'_>> {
        match self {
            Scalar::Null => None,
            Scalar::Bool(b) => Some(ScalarRef::Bool(*b)),
            Scalar::Int(i) => Some(ScalarRef::Int(*i)),
            Scalar::Double(d) => Some(ScalarRef::Double(d.0)),
            Scalar::Str(s) => Some(ScalarRef::Str(s)),
        }
    }

    /// A `Str` of the given bytes, which must already be a collation key.
    pub fn str(bytes: &[u8]) -> Scalar {
        Scalar::Str(Arc::from(bytes))
    }
}

impl ScalarRef<'_> {
    /// The owned form (a double's `-0.0` becomes `0.0`).
    pub fn to_owned(self) -> Scalar {
        match self {
            ScalarRef::Bool(b) => Scalar::Bool(b),
            ScalarRef::Int(i) => Scalar::Int(i),
            ScalarRef::Double(d) => Scalar::Double(OrdF64::new(d)),
            ScalarRef::Str(s) => Scalar::str(s),
        }
    }

    /// The number as a double (ints converted, possibly rounding); `None` for a bool or
    /// a string.
    pub fn as_f64(self) -> Option<f64> {
        match self {
            ScalarRef::Int(i) => Some(i as f64),
            ScalarRef::Double(d) => Some(d),
            _ => None,
        }
    }
}

/// Compares two scalars the way queries do: numbers by value (int and double mixed
/// exactly), strings by bytes (collation keys), bools with `false < true`; values of
/// different kinds are incomparable (`None`), so such a condition never matches.
pub fn compare(left: ScalarRef<'_>, right: ScalarRef<'_>) -> Option<Ordering> {
    match (left, right) {
        (ScalarRef::Int(a), ScalarRef::Int(b)) => Some(a.cmp(&b)),
        (ScalarRef::Double(a), ScalarRef::Double(b)) => a.partial_cmp(&b),
        (ScalarRef::Int(a), ScalarRef::Double(b)) => compare_int_double(a, b),
        (ScalarRef::Double(a), ScalarRef::Int(b)) => compare_int_double(b, a).map(Ordering::reverse),
        (ScalarRef::Str(a), ScalarRef::Str(b)) => Some(a.cmp(b)),
        (ScalarRef::Bool(a), ScalarRef::Bool(b)) => Some(a.cmp(&b)),
        _ => None,
    }
}

/// 2^63 as f64 (exact): every i64 is below it and at or above -2^63.
const TWO_63: f64 = 9_223_372_036_854_775_808.0;

/// Exact comparison of an i64 with an f64 (no rounding of large integers).
fn compare_int_double(int: i64, double: f64) -> Option<Ordering> {
    if double.is_nan() {
        return None;
    }
    if double >= TWO_63 {
        return Some(Ordering::Less);
    }
    if double < -TWO_63 {
        return Some(Ordering::Greater);
    }
    let whole = double.trunc();
    // In range, so the cast is exact.
    let whole_int = whole as i64;
    match int.cmp(&whole_int) {
        Ordering::Equal => 0.0f64.partial_cmp(&(double - whole)),
        other => Some(other),
    }
}

/// The form of a scalar used to group or hash values that compare equal: an integral
/// double becomes the int it equals, so `3` and `3.0` fall in one group. Every integral
/// double in [-2^63, 2^63) equals an i64 (a bound of |d| < 9.2e18 left -2^63 and
/// 2^63 - 1024 apart from `i64::MIN` and `i64::MAX - 1023`, which they equal).
pub fn group_key(value: Scalar) -> Scalar {
    match value {
        Scalar::Double(d) if d.0.fract() == 0.0 && (-TWO_63..TWO_63).contains(&d.0) => Scalar::Int(d.0 as i64),
        other => other,
    }
}

/// Converts one JSON scalar to the `Scalar` of a field with the given type and collation.
/// `Err(found_kind)` when the value does not fit the type. Ints widen to doubles; nothing
/// else converts, so a wrong type is an error rather than a silent guess.
pub fn scalar_for_type(value: &Value, field_type: FieldType, collation: Collation) -> Result<Scalar, &'static str> {
    match (field_type, value) {
        (_, Value::Null) => Ok(Scalar::Null),
        (FieldType::Int, Value::Number(n)) => {
            n.as_i64().map(Scalar::Int).ok_or(if n.is_f64() { "double" } else { "int out of the int64 range" })
        }
        (FieldType::Double, Value::Number(n)) => n.as_f64().map(|d| Scalar::Double(OrdF64::new(d))).ok_or("number"),
        (FieldType::String, Value::String(s)) => Ok(Scalar::Str(Arc::from(collation.key(s)))),
        (FieldType::Bool, Value::Bool(b)) => Ok(Scalar::Bool(*b)),
        (_, other) => Err(crate::error::json_kind(other)),
    }
}

/// Converts a JSON scalar to a `Scalar` by its own kind (for fields without an index).
/// Arrays and objects have no scalar form.
pub fn scalar_natural(value: &Value, collation: Collation) -> Option<Scalar> {
    match value {
        Value::Null | Value::Array(_) | Value::Object(_) => None,
        Value::Bool(b) => Some(Scalar::Bool(*b)),
        Value::Number(n) => match n.as_i64() {
            Some(i) => Some(Scalar::Int(i)),
            None => n.as_f64().map(|d| Scalar::Double(OrdF64::new(d))),
        },
        Value::String(s) => Some(Scalar::Str(Arc::from(collation.key(s)))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn int_double_compare_is_exact() {
        assert_eq!(compare(ScalarRef::Int(3), ScalarRef::Double(2.5)), Some(Ordering::Greater));
        assert_eq!(compare(ScalarRef::Int(2), ScalarRef::Double(2.0)), Some(Ordering::Equal));
        assert_eq!(compare(ScalarRef::Int(-3), ScalarRef::Double(-2.5)), Some(Ordering::Less));
        let big = (1i64 << 53) + 1;
        assert_eq!(compare(ScalarRef::Int(big), ScalarRef::Double((1i64 << 53) as f64)), Some(Ordering::Greater));
        assert_eq!(compare(ScalarRef::Int(i64::MAX), ScalarRef::Double(1e19)), Some(Ordering::Less));
        assert_eq!(compare(ScalarRef::Str(b"a"), ScalarRef::Int(1)), None);
    }

    /// Regression (found by `tests/prop_reference.rs`): integral doubles at or beyond
    /// 9.2e18 in magnitude stayed doubles, so a facet or distinct split them from the ints
    /// they equal.
    #[test]
    fn group_key_makes_every_integral_double_of_the_i64_range_an_int() {
        let double = |d: f64| group_key(Scalar::Double(OrdF64::new(d)));
        assert_eq!(double(-TWO_63), Scalar::Int(i64::MIN));
        assert_eq!(double(9_223_372_036_854_774_784.0), Scalar::Int(i64::MAX - 1023));
        assert_eq!(double(3.0), Scalar::Int(3));
        assert_eq!(double(TWO_63), Scalar::Double(OrdF64(TWO_63)), "above every i64");
        assert_eq!(double(2.5), Scalar::Double(OrdF64(2.5)));
    }

    #[test]
    fn conversion_rejects_wrong_types() {
        let c = Collation::None;
        assert_eq!(scalar_for_type(&serde_json::json!("x"), FieldType::Int, c), Err("string"));
        assert_eq!(scalar_for_type(&serde_json::json!(1.5), FieldType::Int, c), Err("double"));
        assert_eq!(scalar_for_type(&serde_json::json!(2), FieldType::Double, c), Ok(Scalar::Double(OrdF64(2.0))));
        assert_eq!(scalar_for_type(&serde_json::json!(null), FieldType::Bool, c), Ok(Scalar::Null));
    }
}
