//! JSON documents: parsing, the compact stored form, and field paths.
//!
//! Owns: turning client JSON into a validated object, its stored bytes (minified JSON,
//! key order kept), and resolving a dotted field path to the values it names.
//! Never: keep a parsed tree alive in the store (documents live as compact bytes), or
//! change a document's content (numbers, Unicode, key order are returned as given).
//!
//! Path semantics (shared by indexes, filters, sorts and the reference model): `a.b`
//! walks objects; an array met on the way is walked element by element; an array at
//! the end yields its elements (nested arrays flattened). `null` yields nothing, so a
//! field that is absent, null or an empty array is *empty*.

use crate::error::{Error, Result};
use serde_json::Value;
use smallvec::SmallVec;
use std::sync::Arc;

/// A dotted field path split into its parts once.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FieldPath {
    text: Box<str>,
    parts: Box<[Box<str>]>,
}

impl FieldPath {
    /// The path written `text`, split at each `.` (`meta.tag` is `meta`, then `tag`).
    pub fn new(text: &str) -> FieldPath {
        FieldPath { text: text.into(), parts: text.split('.').map(Box::from).collect() }
    }

    /// The path as written, dots included.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The field names from the top level down.
    pub fn parts(&self) -> &[Box<str>] {
        &self.parts
    }
}

/// The values a path names in a document (see the module doc), in document order.
pub type FieldValues<'a> = SmallVec<[&'a Value; 2]>;

/// Collects the values at `path`; `saw_array` tells whether any array was walked, which
/// a non-array index must refuse.
pub fn field_values<'a>(doc: &'a Value, path: &FieldPath) -> (FieldValues<'a>, bool) {
    let mut out = FieldValues::new();
    let mut saw_array = false;
    collect(doc, path.parts(), &mut out, &mut saw_array);
    (out, saw_array)
}

fn collect<'a>(value: &'a Value, path: &[Box<str>], out: &mut FieldValues<'a>, saw_array: &mut bool) {
    match (value, path.split_first()) {
        (Value::Array(items), _) => {
            *saw_array = true;
            for item in items {
                collect(item, path, out, saw_array);
            }
        }
        (Value::Null, None) => {}
        (_, None) => out.push(value),
        (Value::Object(map), Some((head, rest))) => {
            if let Some(child) = map.get(head.as_ref()) {
                collect(child, rest, out, saw_array);
            }
        }
        _ => {}
    }
}

/// Parses client JSON text into a document object.
pub fn parse_object(text: &[u8]) -> Result<Value> {
    let value: Value = serde_json::from_slice(text).map_err(|e| Error::InvalidJson { reason: e.to_string() })?;
    ensure_object(&value)?;
    Ok(value)
}

/// Deepest nesting of arrays and objects a document may have: the same bound the JSON
/// parser applies to text, so a document built in code cannot be deeper than one parsed
/// (serialising, comparing and dropping are recursive, and a deeper tree could exhaust
/// the stack).
pub const DOCUMENT_DEPTH_MAX: usize = 128;

/// Checks that a value is an object no deeper than `DOCUMENT_DEPTH_MAX`.
pub fn ensure_object(value: &Value) -> Result<()> {
    if !value.is_object() {
        return Err(Error::NotAnObject { found: crate::error::json_kind(value) });
    }
    // Iterative, so checking a hostile document cannot itself overflow the stack.
    let mut pending: Vec<(&Value, usize)> = vec![(value, 1)];
    while let Some((node, depth)) = pending.pop() {
        let children: Box<dyn Iterator<Item = &Value>> = match node {
            Value::Object(map) => Box::new(map.values()),
            Value::Array(items) => Box::new(items.iter()),
            _ => continue,
        };
        if depth > DOCUMENT_DEPTH_MAX {
            return Err(Error::InvalidJson { reason: format!("nested deeper than {DOCUMENT_DEPTH_MAX} levels") });
        }
        pending.extend(children.filter(|c| c.is_object() || c.is_array()).map(|c| (c, depth + 1)));
    }
    Ok(())
}

/// The stored form: minified JSON text.
pub fn encode(value: &Value) -> Arc<[u8]> {
    // Serialising a `Value` to a Vec cannot fail: its keys are strings and it holds no
    // non-finite floats.
    let bytes = serde_json::to_vec(value).expect("serialising a JSON value");
    Arc::from(bytes)
}

/// Something field paths resolve in: a whole parsed document, or only the top-level
/// fields of one (`TopFields`).
pub trait Fields {
    /// The values `path` names (see `field_values`) and whether an array was walked.
    fn values_at(&self, path: &FieldPath) -> (FieldValues<'_>, bool);
}

impl Fields for Value {
    fn values_at(&self, path: &FieldPath) -> (FieldValues<'_>, bool) {
        field_values(self, path)
    }
}

/// The top-level fields of a stored document that something reads, parsed; every other
/// field was checked as JSON and skipped. Names borrow from the stored bytes when they
/// hold no escapes. A repeated name keeps its last value, as the full parse does.
#[derive(Debug, Default)]
pub struct TopFields<'a> {
    fields: SmallVec<[(std::borrow::Cow<'a, str>, Value); 4]>,
}

impl TopFields<'_> {
    /// Fields parsed (a repeated name counts once).
    pub fn len(&self) -> usize {
        self.fields.len()
    }

    /// Whether no field that something reads was found.
    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }
}

impl Fields for TopFields<'_> {
    fn values_at(&self, path: &FieldPath) -> (FieldValues<'_>, bool) {
        let mut out = FieldValues::new();
        let mut saw_array = false;
        if let Some((head, rest)) = path.parts().split_first()
            && let Some((_, value)) = self.fields.iter().find(|(name, _)| name == head.as_ref())
        {
            collect(value, rest, &mut out, &mut saw_array);
        }
        (out, saw_array)
    }
}

/// Parses stored bytes (one JSON object) into the top-level fields `wanted` accepts;
/// the other fields are checked as strictly as the full parse checks them and skipped
/// without being built. Resolving any path under a kept field gives what it gives on the
/// whole document. `None` when the bytes are not one JSON object (the caller parses them
/// fully for the exact error), so bytes accepted here always parse fully later.
///
/// Why: recovery reads every stored document only to index it, and building the whole
/// tree (a map per object, a string per field) was most of the time it took; a short
/// list of the few indexed fields costs less than even a map of them (no hashing).
pub fn parse_fields<'a>(bytes: &'a [u8], wanted: &dyn Fn(&str) -> bool) -> Option<TopFields<'a>> {
    use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
    use std::borrow::Cow;
    use std::fmt;

    struct Wanted<'w>(&'w dyn Fn(&str) -> bool);
    struct FieldName;

    impl<'de> DeserializeSeed<'de> for FieldName {
        type Value = Cow<'de, str>;
        fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> std::result::Result<Self::Value, D::Error> {
            deserializer.deserialize_str(self)
        }
    }

    impl<'de> Visitor<'de> for FieldName {
        type Value = Cow<'de, str>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a field name")
        }
        fn visit_borrowed_str<E>(self, v: &'de str) -> std::result::Result<Self::Value, E> {
            Ok(Cow::Borrowed(v))
        }
        fn visit_str<E>(self, v: &str) -> std::result::Result<Self::Value, E> {
            Ok(Cow::Owned(v.to_string()))
        }
    }

    /// A field read only to check it, as strictly as the full parse does (UTF-8, surrogate
    /// escapes in pairs, numbers in range), and not built. serde's `IgnoredAny` is not
    /// enough: serde_json skips its strings and numbers without checking them, and bytes
    /// accepted here are stored as they are and parsed in full later.
    struct Checked;

    impl<'de> DeserializeSeed<'de> for Checked {
        type Value = ();
        fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> std::result::Result<(), D::Error> {
            deserializer.deserialize_any(self)
        }
    }

    impl<'de> Visitor<'de> for Checked {
        type Value = ();
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a JSON value")
        }
        fn visit_bool<E>(self, _: bool) -> std::result::Result<(), E> {
            Ok(())
        }
        fn visit_i64<E>(self, _: i64) -> std::result::Result<(), E> {
            Ok(())
        }
        fn visit_u64<E>(self, _: u64) -> std::result::Result<(), E> {
            Ok(())
        }
        fn visit_f64<E>(self, _: f64) -> std::result::Result<(), E> {
            Ok(())
        }
        fn visit_str<E>(self, _: &str) -> std::result::Result<(), E> {
            Ok(())
        }
        fn visit_unit<E>(self) -> std::result::Result<(), E> {
            Ok(())
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut items: A) -> std::result::Result<(), A::Error> {
            while items.next_element_seed(Checked)?.is_some() {}
            Ok(())
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<(), A::Error> {
            while map.next_key_seed(Checked)?.is_some() {
                map.next_value_seed(Checked)?;
            }
            Ok(())
        }
    }

    impl<'de> DeserializeSeed<'de> for Wanted<'_> {
        type Value = TopFields<'de>;
        fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> std::result::Result<Self::Value, D::Error> {
            deserializer.deserialize_map(self)
        }
    }

    impl<'de> Visitor<'de> for Wanted<'_> {
        type Value = TopFields<'de>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a JSON object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<Self::Value, A::Error> {
            let mut kept = TopFields::default();
            while let Some(name) = map.next_key_seed(FieldName)? {
                if !(self.0)(&name) {
                    map.next_value_seed(Checked)?;
                    continue;
                }
                let value = map.next_value()?;
                match kept.fields.iter_mut().find(|(seen, _)| *seen == name) {
                    Some(slot) => slot.1 = value,
                    None => kept.fields.push((name, value)),
                }
            }
            Ok(kept)
        }
    }

    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let fields = Wanted(wanted).deserialize(&mut deserializer).ok()?;
    deserializer.end().ok()?;
    Some(fields)
}

/// Parses a stored document back (stored bytes are always valid JSON objects).
pub fn decode(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes).expect("stored documents are valid JSON")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn paths_walk_objects_and_arrays() {
        let doc = json!({"a": {"b": [1, [2, 3], null]}, "c": [{"d": 4}, {"d": 5}, {"e": 6}], "n": null});
        let (v, arr) = field_values(&doc, &FieldPath::new("a.b"));
        assert_eq!(v.len(), 3);
        assert!(arr);
        let (v, _) = field_values(&doc, &FieldPath::new("c.d"));
        assert_eq!(v.to_vec(), vec![&json!(4), &json!(5)]);
        let (v, arr) = field_values(&doc, &FieldPath::new("n"));
        assert!(v.is_empty() && !arr);
        let (v, _) = field_values(&doc, &FieldPath::new("missing.x"));
        assert!(v.is_empty());
    }

    #[test]
    fn depth_is_bounded_without_recursion() {
        let mut deep = json!(1);
        for _ in 0..DOCUMENT_DEPTH_MAX {
            deep = json!([deep]);
        }
        assert!(ensure_object(&json!({ "a": deep.clone() })).is_err());
        let mut shallow = json!(1);
        for _ in 0..DOCUMENT_DEPTH_MAX - 2 {
            shallow = json!([shallow]);
        }
        assert!(ensure_object(&json!({ "a": shallow })).is_ok());
        // Dropping a value this deep is itself recursive, so the test stays at the bound.
        drop(deep);
    }

    #[test]
    fn parse_fields_keeps_wanted_fields_as_the_full_parse_does() {
        let text = br#"{"a":{"b":[1,{"c":2}]},"skip":{"deep":[[["x"]]]},"k":"v\u00e9","a":{"b":3},"z":null}"#;
        let full: Value = serde_json::from_slice(text).unwrap();
        let wanted = |name: &str| name == "a" || name == "k" || name == "z";
        let part = parse_fields(text, &wanted).unwrap();
        for path in ["a", "a.b", "a.b.c", "k", "z", "skip"] {
            let path = FieldPath::new(path);
            let expected = if path.as_str() == "skip" { Default::default() } else { field_values(&full, &path) };
            assert_eq!(part.values_at(&path), expected, "{}", path.as_str());
        }
        assert_eq!(part.len(), 3);
        // Not one object, or trailing or broken text: no value, so the caller reports.
        for bad in [&b"[1]"[..], b"{\"a\":1} 2", b"{\"a\":", b"{\"skip\":[1,}", b"\"a\""] {
            assert!(parse_fields(bad, &wanted).is_none(), "{}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn parse_fields_checks_skipped_fields_as_the_full_parse_does() {
        // What broke (found by the `document` fuzz target): skipped fields went through
        // serde's `IgnoredAny`, for which serde_json checks neither UTF-8, nor surrogate
        // escapes, nor the range of numbers. A log or snapshot record holding such a field
        // replayed without an error, its bytes were stored, and reading the document back
        // later panicked in `decode` ("stored documents are valid JSON").
        let nothing = |_: &str| false;
        let bad: [&[u8]; 6] = [
            b"{\"it\":\"\xd0\x81\xd0\xc0\",\"country\":\"RU\"}",
            br#"{"a":"\ud800"}"#,
            br#"{"a":["x\udc00"]}"#,
            br#"{"a":1e400}"#,
            b"{\"a\":{\"\xff\":1}}",
            br#"{"a":{"b":[{"c":-1e999}]}}"#,
        ];
        for bytes in bad {
            assert!(serde_json::from_slice::<Value>(bytes).is_err(), "{}", String::from_utf8_lossy(bytes));
            assert!(parse_fields(bytes, &nothing).is_none(), "{}", String::from_utf8_lossy(bytes));
        }
        let good = br#"{"a":"\ud83e\udd94 \u00e9","b":[1.5e300,-0,18446744073709551616,{"c":null,"d":true}]}"#;
        assert!(parse_fields(good, &nothing).is_some_and(|fields| fields.is_empty()));
    }

    #[test]
    fn parse_rejects_non_objects_and_bad_json() {
        assert!(matches!(parse_object(b"[1]"), Err(Error::NotAnObject { found: "array" })));
        assert!(matches!(parse_object(b"{\"a\":"), Err(Error::InvalidJson { .. })));
        let doc = parse_object("{\"b\":1.0,\"a\":\"Ёж 🦔\"}".as_bytes()).unwrap();
        assert_eq!(&*encode(&doc), "{\"b\":1.0,\"a\":\"Ёж 🦔\"}".as_bytes());
    }
}
