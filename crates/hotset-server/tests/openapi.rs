//! The OpenAPI document against the real server: every route the router has is
//! documented, every documented operation is called, and each real answer's status must
//! be documented for that operation and its JSON body must match the documented schema.
//!
//! The schema check is written here for the parts of JSON Schema the document uses
//! (`$ref`, `type` (one or a list), `properties`, `required`, `additionalProperties:
//! false`, `items`, `enum`, `oneOf`, `minimum`), so a keyword it does not know fails the
//! test instead of being ignored.

mod common;

use common::{Server, curl as call};
use serde_json::{Value, json};
use std::collections::BTreeSet;

const DOCUMENT: &str = include_str!("../openapi.json");
const ROUTER: &str = include_str!("../src/http.rs");

/// Checks `value` against `schema`; returns what does not match, with its JSON path.
fn check(root: &Value, schema: &Value, value: &Value, path: &str) -> Result<(), String> {
    let schema = schema.as_object().ok_or_else(|| format!("{path}: schema is not an object"))?;
    const KNOWN: [&str; 10] = [
        "$ref",
        "type",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "enum",
        "oneOf",
        "minimum",
        "description",
    ];
    if let Some(unknown) = schema.keys().find(|k| !KNOWN.contains(&k.as_str())) {
        return Err(format!("{path}: the checker does not know schema keyword {unknown}"));
    }
    if let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
        let name = reference.strip_prefix("#/components/schemas/").ok_or(format!("{path}: bad $ref {reference}"))?;
        let target = &root["components"]["schemas"][name];
        if target.is_null() {
            return Err(format!("{path}: $ref {reference} does not resolve"));
        }
        return check(root, target, value, path);
    }
    if let Some(choices) = schema.get("oneOf").and_then(Value::as_array) {
        let fits = choices.iter().filter(|choice| check(root, choice, value, path).is_ok()).count();
        if fits != 1 {
            return Err(format!("{path}: {value} fits {fits} of the oneOf choices, not exactly one"));
        }
    }
    if let Some(types) = schema.get("type") {
        let types: Vec<&str> = match types {
            Value::String(one) => vec![one.as_str()],
            Value::Array(many) => many.iter().filter_map(Value::as_str).collect(),
            _ => return Err(format!("{path}: bad type keyword")),
        };
        let kind = match value {
            Value::Null => "null",
            Value::Bool(_) => "boolean",
            Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
            Value::Number(_) => "number",
            Value::String(_) => "string",
            Value::Array(_) => "array",
            Value::Object(_) => "object",
        };
        if !types.iter().any(|t| *t == kind || (*t == "number" && kind == "integer")) {
            return Err(format!("{path}: {value} is {kind}, expected {types:?}"));
        }
    }
    if let Some(allowed) = schema.get("enum").and_then(Value::as_array)
        && !allowed.contains(value)
    {
        return Err(format!("{path}: {value} is not one of {allowed:?}"));
    }
    if let (Some(minimum), Some(n)) = (schema.get("minimum").and_then(Value::as_f64), value.as_f64())
        && n < minimum
    {
        return Err(format!("{path}: {n} is below {minimum}"));
    }
    if let (Some(items), Some(array)) = (schema.get("items"), value.as_array()) {
        for (i, item) in array.iter().enumerate() {
            check(root, items, item, &format!("{path}[{i}]"))?;
        }
    }
    if let Some(object) = value.as_object() {
        let properties = schema.get("properties").and_then(Value::as_object);
        for name in schema.get("required").and_then(Value::as_array).into_iter().flatten() {
            let name = name.as_str().unwrap_or_default();
            if !object.contains_key(name) {
                return Err(format!("{path}: required key {name} is missing from {value}"));
            }
        }
        for (key, field) in object {
            match properties.and_then(|p| p.get(key)) {
                Some(schema) => check(root, schema, field, &format!("{path}.{key}"))?,
                None if schema.get("additionalProperties") == Some(&Value::Bool(false)) => {
                    return Err(format!("{path}: key {key} is not documented"));
                }
                None => {}
            }
        }
    }
    Ok(())
}

/// Checks one real answer against the operation `method` on documented `route`.
fn conforms(root: &Value, route: &str, method: &str, status: u16, body: &str) -> Result<(), String> {
    let operation = &root["paths"][route][method];
    if operation.is_null() {
        return Err(format!("{method} {route} is not documented"));
    }
    let response = &operation["responses"][status.to_string()];
    if response.is_null() {
        return Err(format!("{method} {route} answered {status}, which is not documented: {body}"));
    }
    let content = response["content"].as_object().ok_or(format!("{method} {route} {status}: no content"))?;
    if let Some(json) = content.get("application/json") {
        let value: Value =
            serde_json::from_str(body).map_err(|e| format!("{method} {route} {status}: not JSON ({e}): {body}"))?;
        check(root, &json["schema"], &value, "$").map_err(|e| format!("{method} {route} {status}: {e}"))?;
    }
    Ok(())
}

#[test]
fn the_document_matches_the_router_and_the_real_answers() {
    let root: Value = serde_json::from_str(DOCUMENT).expect("openapi.json is JSON");
    assert_eq!(root["openapi"], "3.1.0");
    // Every route of the router is documented, and nothing else is.
    let routed: BTreeSet<String> = ROUTER
        .lines()
        .filter_map(|line| line.trim().strip_prefix(".route(\""))
        .map(|rest| rest.split('"').next().unwrap().to_string())
        .collect();
    let documented: BTreeSet<String> = root["paths"].as_object().unwrap().keys().cloned().collect();
    assert_eq!(routed, documented, "routes in http.rs against paths in openapi.json");

    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let (status, served) = call(&server, "GET", "/api/v1/openapi.json", None);
    assert_eq!(status, 200);
    assert_eq!(serde_json::from_str::<Value>(&served).unwrap(), root, "the server serves the committed document");

    let items = json!({"name": "items", "indexes": [
        {"field": "id", "type": "int", "index": "hash", "pk": true},
        {"field": "year", "type": "int", "index": "tree"},
        {"field": ["first", "last"], "type": "string", "index": "tree", "collate": "utf8_ci"},
    ]})
    .to_string();
    let ndjson =
        (0..30).map(|i| format!("{{\"id\":{i},\"year\":{},\"first\":\"f{i}\"}}\n", 2000 + i)).collect::<String>();
    let query = r#"{"namespace":"items","filter":{"field":"year","op":">","value":2010},"sort":"-year","limit":3,"total":true,"aggregations":[{"type":"count"}],"explain":true}"#;
    // (route as documented, method, path called, body, the status expected)
    let calls: Vec<(&str, &str, String, Option<String>, u16)> = vec![
        ("/health", "get", "/health".into(), None, 200),
        ("/metrics", "get", "/metrics".into(), None, 200),
        ("/api/v1/namespaces", "post", "/api/v1/namespaces".into(), Some(items.clone()), 201),
        ("/api/v1/namespaces", "post", "/api/v1/namespaces".into(), Some(items), 409),
        ("/api/v1/namespaces", "post", "/api/v1/namespaces".into(), Some("{oops".into()), 400),
        ("/api/v1/namespaces", "get", "/api/v1/namespaces".into(), None, 200),
        ("/api/v1/namespaces/{ns}", "get", "/api/v1/namespaces/items".into(), None, 200),
        ("/api/v1/namespaces/{ns}", "get", "/api/v1/namespaces/nope".into(), None, 404),
        ("/api/v1/namespaces/{ns}/items", "post", "/api/v1/namespaces/items/items".into(), Some(ndjson), 200),
        (
            "/api/v1/namespaces/{ns}/items",
            "post",
            "/api/v1/namespaces/items/items".into(),
            Some(r#"[{"id": 40}, {"id": 41, "year": "x"}]"#.into()),
            400,
        ),
        (
            "/api/v1/namespaces/{ns}/items",
            "post",
            "/api/v1/namespaces/items/items?mode=insert".into(),
            Some(r#"{"id": 1}"#.into()),
            409,
        ),
        (
            "/api/v1/namespaces/{ns}/items",
            "post",
            "/api/v1/namespaces/items/items?mode=update".into(),
            Some(r#"{"id": 99}"#.into()),
            404,
        ),
        ("/api/v1/namespaces/{ns}/items/{key}", "get", "/api/v1/namespaces/items/items/3".into(), None, 200),
        ("/api/v1/namespaces/{ns}/items/{key}", "get", "/api/v1/namespaces/items/items/999".into(), None, 404),
        ("/api/v1/namespaces/{ns}/items/{key}", "get", "/api/v1/namespaces/items/items/abc".into(), None, 400),
        ("/api/v1/namespaces/{ns}/items/{key}", "delete", "/api/v1/namespaces/items/items/4".into(), None, 200),
        ("/api/v1/query", "post", "/api/v1/query".into(), Some(query.into()), 200),
        (
            "/api/v1/query",
            "post",
            "/api/v1/query".into(),
            Some(r#"{"namespace":"items","filter":{"field":"year","op":"~~","value":1}}"#.into()),
            400,
        ),
        ("/api/v1/query", "post", "/api/v1/query".into(), Some(r#"{"namespace":"nope"}"#.into()), 404),
        (
            "/api/v1/query",
            "post",
            "/api/v1/query".into(),
            Some(r#"{"namespace":"items","filter":{"field":"first","op":"like","value":"%1%"},"timeout_ms":0}"#.into()),
            503,
        ),
        (
            "/api/v1/namespaces/{ns}/query",
            "post",
            "/api/v1/namespaces/items/query".into(),
            Some(r#"{"sort":"year","limit":2}"#.into()),
            200,
        ),
        ("/api/v1/namespaces/{ns}/query", "post", "/api/v1/namespaces/nope/query".into(), Some("{}".into()), 404),
        (
            "/api/v1/sql",
            "post",
            "/api/v1/sql".into(),
            Some("SELECT COUNT(*), * FROM items WHERE year > 2020 LIMIT 2".into()),
            200,
        ),
        (
            "/api/v1/sql",
            "post",
            "/api/v1/sql".into(),
            Some("SELECT year, COUNT(*) AS n FROM items GROUP BY year LIMIT 3".into()),
            200,
        ),
        (
            "/api/v1/sql",
            "post",
            "/api/v1/sql".into(),
            Some("UPDATE items SET year = year + 1 WHERE id = 5".into()),
            200,
        ),
        ("/api/v1/sql", "post", "/api/v1/sql".into(), Some("SELECT * FROM items\n  WHERE year >".into()), 400),
        ("/api/v1/sql", "post", "/api/v1/sql".into(), Some("SELECT * FROM nope".into()), 404),
        ("/api/v1/sql", "post", "/api/v1/sql".into(), Some("CREATE TABLE items (id INT PRIMARY KEY)".into()), 409),
        (
            "/api/v1/namespaces/{ns}/indexes",
            "post",
            "/api/v1/namespaces/items/indexes".into(),
            Some(r#"{"field": "first", "type": "string", "index": "hash", "name": "by_first"}"#.into()),
            201,
        ),
        (
            "/api/v1/namespaces/{ns}/indexes",
            "post",
            "/api/v1/namespaces/items/indexes".into(),
            Some(r#"{"field": "first", "type": "string", "index": "hash", "name": "by_first"}"#.into()),
            409,
        ),
        (
            "/api/v1/namespaces/{ns}/indexes",
            "post",
            "/api/v1/namespaces/items/indexes".into(),
            Some(r#"{"field": "x", "type": "nope"}"#.into()),
            400,
        ),
        (
            "/api/v1/namespaces/{ns}/indexes",
            "post",
            "/api/v1/namespaces/nope/indexes".into(),
            Some(r#"{"field": "x", "type": "int"}"#.into()),
            404,
        ),
        (
            "/api/v1/namespaces/{ns}/indexes/{index}",
            "delete",
            "/api/v1/namespaces/items/indexes/by_first".into(),
            None,
            200,
        ),
        (
            "/api/v1/namespaces/{ns}/indexes/{index}",
            "delete",
            "/api/v1/namespaces/items/indexes/by_first".into(),
            None,
            404,
        ),
        ("/api/v1/namespaces/{ns}/indexes/{index}", "delete", "/api/v1/namespaces/items/indexes/id".into(), None, 400),
        ("/api/v1/namespaces/{ns}/truncate", "post", "/api/v1/namespaces/items/truncate".into(), None, 200),
        ("/api/v1/namespaces/{ns}/truncate", "post", "/api/v1/namespaces/nope/truncate".into(), None, 404),
        ("/api/v1/namespaces/{ns}", "delete", "/api/v1/namespaces/items".into(), None, 200),
        ("/api/v1/namespaces/{ns}", "delete", "/api/v1/namespaces/items".into(), None, 404),
        ("/api/v1/openapi.json", "get", "/api/v1/openapi.json".into(), None, 200),
    ];
    let mut called = BTreeSet::new();
    for (route, method, path, body, expected) in &calls {
        let (status, text) = call(&server, &method.to_uppercase(), path, body.as_deref().map(str::as_bytes));
        assert_eq!(status, *expected, "{method} {path}: {text}");
        if let Err(problem) = conforms(&root, route, method, status, &text) {
            panic!("{problem}");
        }
        called.insert((route.to_string(), method.to_string()));
    }
    // Every documented operation was called at least once.
    for (route, operations) in root["paths"].as_object().unwrap() {
        for method in operations.as_object().unwrap().keys().filter(|k| *k != "parameters") {
            assert!(called.contains(&(route.clone(), method.clone())), "{method} {route} is documented but not called");
        }
    }
    server.stop();
}

#[test]
fn the_checker_refuses_what_does_not_match() {
    let root: Value = serde_json::from_str(DOCUMENT).unwrap();
    let count = "/api/v1/namespaces/{ns}/items";
    assert!(conforms(&root, count, "post", 200, r#"{"count": 3}"#).is_ok());
    assert!(conforms(&root, count, "post", 200, r#"{"count": "3"}"#).unwrap_err().contains("expected [\"integer\"]"));
    assert!(conforms(&root, count, "post", 200, r#"{"count": 3, "extra": 1}"#).unwrap_err().contains("not documented"));
    assert!(conforms(&root, count, "post", 200, r#"{}"#).unwrap_err().contains("required key count"));
    assert!(conforms(&root, count, "post", 418, r#"{"count": 3}"#).unwrap_err().contains("418"));
    assert!(conforms(&root, count, "put", 200, "{}").unwrap_err().contains("not documented"));
    assert!(
        conforms(&root, "/api/v1/sql", "post", 400, r#"{"error": "x", "line": -1}"#).unwrap_err().contains("below")
    );
}
