//! Documents (`hotset_core::doc`) from arbitrary bytes: parsing, the stored form, the
//! partial parse recovery uses, and writing the document into the fixture's `items`
//! namespace (whose indexes cover every type and option).
//!
//! Checks: Ok or Err, never a panic; the partial parse (`parse_fields`) accepts exactly
//! what the full parse accepts and resolves every path the same way; parse → stored bytes
//! → parse gives the same document and the same bytes; a write is Ok or a clean Err, a
//! document written reads back as its stored bytes, and the database afterwards keeps its
//! indexes consistent and survives a snapshot.

use crate::{ITEMS, check_database, fixture};
use hotset_core::doc::{self, FieldPath, Fields};
use serde_json::{Value, json};

/// One input of the target.
pub fn run(data: &[u8]) {
    check_partial_parse(data);
    let Ok(value) = doc::parse_object(data) else { return };
    let stored = doc::encode(&value);
    let again = doc::parse_object(&stored).expect("stored bytes parse as a document");
    assert_eq!(again, value, "a document changes through its stored bytes");
    assert_eq!(doc::encode(&again), stored, "a document has two stored forms");
    assert_eq!(doc::decode(&stored), value);
    check_partial_parse(&stored);
    check_writes(&value);
}

/// `parse_fields` agrees with the full parser: it accepts the same objects (recovery trusts
/// bytes it accepted to parse fully later), and every path under a kept field resolves
/// to the same values.
fn check_partial_parse(bytes: &[u8]) {
    let full = serde_json::from_slice::<Value>(bytes);
    let skip_all = doc::parse_fields(bytes, &|_| false);
    match &full {
        Ok(value) => assert_eq!(value.is_object(), skip_all.is_some(), "parse_fields and the full parse disagree"),
        Err(error) => assert!(skip_all.is_none(), "parse_fields accepts bytes the full parse refuses: {error}"),
    }
    let Ok(Value::Object(map)) = &full else { return };
    let whole = Value::Object(map.clone());
    let keep_all = doc::parse_fields(bytes, &|_| true).expect("parse_fields keeps every field of an object");
    for path in paths(&whole) {
        let path = FieldPath::new(&path);
        assert_eq!(keep_all.values_at(&path), whole.values_at(&path), "path {}", path.as_str());
    }
}

/// Paths of the document's fields down to two levels (arrays walked), plus one missing.
fn paths(doc: &Value) -> Vec<String> {
    let mut out = vec!["missing".to_string()];
    let Value::Object(map) = doc else { return out };
    for (name, value) in map.iter().take(16) {
        out.push(name.clone());
        let children = match value {
            Value::Object(inner) => inner.keys().take(8).cloned().collect::<Vec<_>>(),
            Value::Array(items) => {
                items.iter().filter_map(Value::as_object).flat_map(|o| o.keys().take(4)).cloned().collect()
            }
            _ => Vec::new(),
        };
        out.extend(children.into_iter().map(|child| format!("{name}.{child}")));
    }
    out
}

/// Writes the document as given, then with an id the schema takes; whatever is written
/// reads back as its stored bytes, and the database stays consistent.
fn check_writes(value: &Value) {
    let db = fixture();
    let given = db.upsert(ITEMS, value);
    let mut with_id = value.clone();
    with_id["id"] = json!(1_000);
    let forced = db.insert(ITEMS, &with_id);
    if forced.is_ok() {
        let stored = db.get(ITEMS, &json!(1_000)).expect("get by id").expect("the inserted document");
        assert_eq!(&*stored, &*doc::encode(&with_id), "a document reads back other than stored");
    }
    check_database(&db, &format!("after writing a document (as given: {given:?}, with an id: {forced:?})"));
    if forced.is_ok() {
        assert_eq!(db.delete(ITEMS, &json!(1_000)).ok(), Some(true), "deleting the inserted document");
        check_database(&db, "after deleting the document");
    }
}
