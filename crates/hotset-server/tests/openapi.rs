//! The OpenAPI document (`openapi.json`) against the router's source and the real server.
//!
//! Owns: the checks that keep the document true. The routes and methods in `router()` are
//! exactly the documented operations; the server serves the committed file byte for byte;
//! every documented operation is called, and each real answer's status, content type and
//! body must be documented for that operation; every documented status and content type is
//! seen in a real answer or listed in `NOT_TRIGGERED` with the reason; request bodies the
//! server takes fit the documented request schema, and the shapes it refuses do not. The
//! `Hotset-Source-Position` header, when an answer has it, is documented for that answer
//! and fits its schema, and every answer documented with it is seen with it.
//! Never: change the document or the server (it reads one and calls the other over HTTP).
//!
//! The live-sync calls (the sources API, `after`, the freshness header, writes refused as
//! `read_only`) run against a second server that follows a throwaway PostgreSQL
//! (hotset-testkit's `Postgres`); they wait for the source by polling its status under a
//! deadline (`common::sync`), never by sleeping.
//!
//! The schema checker is written here for the JSON Schema 2020-12 keywords the document
//! uses; a keyword it does not know fails the test instead of being ignored, so the
//! document cannot grow a rule that nothing checks.

mod common;

use common::Server;
use common::sync::{self, SOURCE, Source};
use hotset_testkit::postgres::Postgres;
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::io::Write;
use std::process::{Command, Stdio};

const DOCUMENT: &str = include_str!("../openapi.json");
const ROUTER: &str = include_str!("../src/http.rs");
const METHODS: [&str; 7] = ["get", "post", "put", "patch", "delete", "head", "options"];
/// The body limit of the test server: small, so a body over it is cheap to send.
const BODY_BYTES_MAX: usize = 65_536;

/// Documented (operation, status, media type) that no call triggers, with the reason.
const NOT_TRIGGERED: &[(&str, &str, &str, &str, &str)] = &[
    ("/api/v1/namespaces", "post", "404", "application/json", "only a drop racing the creation gives it"),
    (
        "/api/v1/sql",
        "post",
        "503",
        "application/json",
        "SQL has no timeout_ms: only a statement slower than the server's limit (1 ms at least) gives it, by timing",
    ),
    (
        "/api/v1/search",
        "post",
        "503",
        "application/json",
        "a search has no timeout_ms: only one slower than the server's limit (1 ms at least) gives it, by timing",
    ),
];
/// Statuses no call triggers on any operation: a failed task is a bug, and a log that
/// cannot write needs a full disk.
const NEVER_TRIGGERED: &[&str] = &["500"];
/// Answers of the function routes only a server over `maxmemory`, a log that cannot write
/// or a procedure's query slower than the time limit gives.
const FUNCTION_ANSWERS_NOT_TRIGGERED: &[(&str, &str, &str)] = &[
    ("/api/v1/functions", "post", "507"),
    ("/api/v1/functions/{name}", "post", "503"),
    ("/api/v1/functions/{name}", "post", "507"),
];
/// Write operations whose 503 only a log that cannot write gives.
const LOG_ONLY_503: &[&str] = &[
    "post /api/v1/namespaces",
    "delete /api/v1/namespaces/{ns}",
    "post /api/v1/namespaces/{ns}/truncate",
    "post /api/v1/namespaces/{ns}/indexes",
    "delete /api/v1/namespaces/{ns}/indexes/{index}",
    "post /api/v1/namespaces/{ns}/items",
    "delete /api/v1/namespaces/{ns}/items/{key}",
    "post /api/v1/namespaces/{ns}/transaction",
    "post /api/v1/functions",
    "post /api/v1/sources",
    "put /api/v1/sources/{name}",
    "delete /api/v1/sources/{name}",
];
/// The one response header the document describes: how fresh an answer from synced
/// namespaces is.
const POSITION_HEADER: &str = "Hotset-Source-Position";

/// Resolves a local `$ref` (`#/components/...`).
fn resolve<'a>(root: &'a Value, reference: &str) -> Result<&'a Value, String> {
    let pointer = reference.strip_prefix('#').ok_or(format!("$ref {reference} is not local"))?;
    root.pointer(pointer).ok_or(format!("$ref {reference} does not resolve"))
}

/// A response or other object that may be a `$ref`, followed.
fn followed<'a>(root: &'a Value, object: &'a Value) -> Result<&'a Value, String> {
    match object.get("$ref").and_then(Value::as_str) {
        Some(reference) => resolve(root, reference),
        None => Ok(object),
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0) => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

const KEYWORDS: [&str; 24] = [
    "$ref",
    "type",
    "const",
    "enum",
    "minimum",
    "maximum",
    "minLength",
    "minItems",
    "maxItems",
    "items",
    "properties",
    "required",
    "additionalProperties",
    "allOf",
    "anyOf",
    "oneOf",
    "not",
    // Annotations: they describe and never refuse.
    "description",
    "title",
    "default",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
];

/// Checks `value` against `schema`; returns what does not match, with its JSON path.
fn check(root: &Value, schema: &Value, value: &Value, path: &str) -> Result<(), String> {
    let schema = match schema {
        Value::Bool(true) => return Ok(()),
        Value::Bool(false) => return Err(format!("{path}: nothing is allowed here")),
        Value::Object(schema) => schema,
        _ => return Err(format!("{path}: the schema is not an object")),
    };
    if let Some(unknown) = schema.keys().find(|k| !KEYWORDS.contains(&k.as_str())) {
        return Err(format!("{path}: the checker does not know schema keyword {unknown}"));
    }
    if let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
        check(root, resolve(root, reference)?, value, path)?;
    }
    check_scalar(schema, value, path)?;
    check_combinations(root, schema, value, path)?;
    if let Some(array) = value.as_array() {
        check_array(root, schema, array, path)?;
    }
    if let Some(object) = value.as_object() {
        check_object(root, schema, object, path)?;
    }
    Ok(())
}

fn check_scalar(schema: &serde_json::Map<String, Value>, value: &Value, path: &str) -> Result<(), String> {
    if let Some(types) = schema.get("type") {
        let types: Vec<&str> = match types {
            Value::String(one) => vec![one.as_str()],
            Value::Array(many) => many.iter().filter_map(Value::as_str).collect(),
            _ => return Err(format!("{path}: bad type keyword")),
        };
        let kind = kind(value);
        if !types.iter().any(|t| *t == kind || (*t == "number" && kind == "integer")) {
            return Err(format!("{path}: {value} is {kind}, expected {types:?}"));
        }
    }
    if let Some(constant) = schema.get("const")
        && constant != value
    {
        return Err(format!("{path}: {value} is not {constant}"));
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
    if let (Some(maximum), Some(n)) = (schema.get("maximum").and_then(Value::as_f64), value.as_f64())
        && n > maximum
    {
        return Err(format!("{path}: {n} is above {maximum}"));
    }
    if let (Some(least), Some(text)) = (schema.get("minLength").and_then(Value::as_u64), value.as_str())
        && (text.chars().count() as u64) < least
    {
        return Err(format!("{path}: {value} is shorter than {least}"));
    }
    Ok(())
}

fn check_combinations(
    root: &Value,
    schema: &serde_json::Map<String, Value>,
    value: &Value,
    path: &str,
) -> Result<(), String> {
    let fits = |key: &str| -> Vec<Result<(), String>> {
        let choices = schema.get(key).and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
        choices.iter().map(|choice| check(root, choice, value, path)).collect()
    };
    if let Some(problem) = fits("allOf").into_iter().find_map(Result::err) {
        return Err(problem);
    }
    let any = fits("anyOf");
    if !any.is_empty() && !any.iter().any(Result::is_ok) {
        return Err(format!("{path}: {value} fits none of the anyOf choices: {any:?}"));
    }
    let one = fits("oneOf");
    let fitting = one.iter().filter(|fit| fit.is_ok()).count();
    if !one.is_empty() && fitting != 1 {
        return Err(format!("{path}: {value} fits {fitting} of the oneOf choices, not exactly one: {one:?}"));
    }
    if let Some(refused) = schema.get("not")
        && check(root, refused, value, path).is_ok()
    {
        return Err(format!("{path}: {value} fits what `not` refuses: {refused}"));
    }
    Ok(())
}

fn check_array(
    root: &Value,
    schema: &serde_json::Map<String, Value>,
    array: &[Value],
    path: &str,
) -> Result<(), String> {
    let length = array.len() as u64;
    if schema.get("minItems").and_then(Value::as_u64).is_some_and(|least| length < least) {
        return Err(format!("{path}: {length} items are too few"));
    }
    if schema.get("maxItems").and_then(Value::as_u64).is_some_and(|most| length > most) {
        return Err(format!("{path}: {length} items are too many"));
    }
    if let Some(items) = schema.get("items") {
        for (i, item) in array.iter().enumerate() {
            check(root, items, item, &format!("{path}[{i}]"))?;
        }
    }
    Ok(())
}

fn check_object(
    root: &Value,
    schema: &serde_json::Map<String, Value>,
    object: &serde_json::Map<String, Value>,
    path: &str,
) -> Result<(), String> {
    for name in schema.get("required").and_then(Value::as_array).into_iter().flatten() {
        let name = name.as_str().ok_or(format!("{path}: a required name is not a string"))?;
        if !object.contains_key(name) {
            return Err(format!("{path}: required key {name} is missing from {}", Value::Object(object.clone())));
        }
    }
    let properties = schema.get("properties").and_then(Value::as_object);
    for (key, field) in object {
        match (properties.and_then(|p| p.get(key)), schema.get("additionalProperties")) {
            (Some(property), _) => check(root, property, field, &format!("{path}.{key}"))?,
            (None, Some(Value::Bool(false))) => return Err(format!("{path}: key {key} is not documented")),
            (None, Some(additional)) => check(root, additional, field, &format!("{path}.{key}"))?,
            (None, None) => {}
        }
    }
    Ok(())
}

/// The media type without its parameters, lower case: `text/plain; charset=utf-8` is
/// `text/plain`.
fn essence(media_type: &str) -> String {
    media_type.split(';').next().unwrap_or_default().trim().to_ascii_lowercase()
}

/// The documented media type of `content` that `media_type` is, and its schema.
fn media<'a>(content: &'a Value, media_type: &str) -> Option<(&'a String, &'a Value)> {
    let content = content.as_object()?;
    content.iter().find(|(documented, _)| essence(documented) == essence(media_type)).map(|(k, v)| (k, &v["schema"]))
}

/// Checks a body of `media_type` against a media type's schema: JSON is parsed, text is a
/// string.
fn check_body(root: &Value, schema: &Value, media_type: &str, body: &[u8]) -> Result<(), String> {
    let value = if essence(media_type) == "application/json" {
        serde_json::from_slice(body).map_err(|e| format!("not JSON ({e}): {}", String::from_utf8_lossy(body)))?
    } else {
        Value::String(String::from_utf8(body.to_vec()).map_err(|_| "text that is not UTF-8".to_string())?)
    };
    check(root, schema, &value, "$")
}

/// One real answer.
struct Answer {
    status: u16,
    content_type: String,
    /// The `Hotset-Source-Position` header ("" when the answer has none).
    position: String,
    body: Vec<u8>,
}

/// Checks one real answer against the operation `method` on documented `route`; returns the
/// documented media type it matched ("" for an empty body).
fn conforms(root: &Value, route: &str, method: &str, answer: &Answer) -> Result<String, String> {
    let operation = &root["paths"][route][method];
    let text = String::from_utf8_lossy(&answer.body);
    let status = answer.status;
    let response = operation["responses"]
        .get(status.to_string())
        .ok_or(format!("{method} {route} answered {status}, which is not documented for it: {text}"))?;
    let response = followed(root, response)?;
    if !answer.position.is_empty() {
        let header = documented_header(root, response, POSITION_HEADER)
            .ok_or(format!("{method} {route} {status}: header {POSITION_HEADER} is not documented"))?;
        check(root, &followed(root, header)?["schema"], &Value::String(answer.position.clone()), POSITION_HEADER)
            .map_err(|e| format!("{method} {route} {status}: {e}"))?;
    }
    if answer.body.is_empty() && answer.content_type.is_empty() && response.get("content").is_none() {
        return Ok(String::new());
    }
    let (documented, schema) = media(&response["content"], &answer.content_type).ok_or(format!(
        "{method} {route} {status}: content type '{}' is not documented: {text}",
        answer.content_type
    ))?;
    check_body(root, schema, &answer.content_type, &answer.body)
        .map_err(|e| format!("{method} {route} {status} {documented}: {e}"))?;
    Ok(documented.clone())
}

/// The header `name` of a response (header names are case-insensitive).
fn documented_header<'a>(root: &'a Value, response: &'a Value, name: &str) -> Option<&'a Value> {
    let headers = followed(root, response).ok()?["headers"].as_object()?;
    headers.iter().find(|(documented, _)| documented.eq_ignore_ascii_case(name)).map(|(_, header)| header)
}

/// Checks a request body of `media_type` against the operation's documented request body.
fn request_conforms(root: &Value, route: &str, method: &str, media_type: &str, body: &[u8]) -> Result<(), String> {
    let request = followed(root, &root["paths"][route][method]["requestBody"])?;
    let (_, schema) = media(&request["content"], media_type)
        .ok_or(format!("{method} {route}: request content type {media_type} is not documented"))?;
    check_body(root, schema, media_type, body).map_err(|e| format!("{method} {route} request: {e}"))
}

/// Sends one request with curl; the answer with its content type and position header.
fn send(server: &Server, method: &str, path: &str, body: Option<(&str, &[u8])>) -> Answer {
    let mut command = Command::new("curl");
    let written = format!("\n%header{{{POSITION_HEADER}}}\n%{{content_type}}\n%{{http_code}}");
    command.args(["-s", "-S", "-X", method, "-w", &written]);
    if let Some((media_type, _)) = body {
        command.args(["-H", &format!("content-type: {media_type}"), "--data-binary", "@-"]);
    }
    let mut curl = command
        .arg(format!("http://{}{path}", server.http))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("running curl");
    if let Some((_, bytes)) = body {
        curl.stdin.take().unwrap().write_all(bytes).unwrap();
    }
    let output = curl.wait_with_output().unwrap();
    assert!(output.status.success(), "curl {method} {path} failed");
    let mut out = output.stdout;
    let status_at = out.iter().rposition(|b| *b == b'\n').unwrap();
    let status = std::str::from_utf8(&out[status_at + 1..]).unwrap().parse().unwrap();
    out.truncate(status_at);
    let type_at = out.iter().rposition(|b| *b == b'\n').unwrap();
    let content_type = String::from_utf8(out[type_at + 1..].to_vec()).unwrap();
    out.truncate(type_at);
    let position_at = out.iter().rposition(|b| *b == b'\n').unwrap();
    let position = String::from_utf8(out[position_at + 1..].to_vec()).unwrap();
    out.truncate(position_at);
    Answer { status, content_type, position, body: out }
}

/// What the documented request schema must say of a call's body.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Shape {
    /// The schema takes it (the server did, or refused it for its data, not its shape).
    Fits,
    /// The schema refuses it, as the server did.
    Refused,
    /// Not checked: not JSON, over the body limit, or a rule the schema cannot state.
    Unchecked,
}

/// One call: the documented route and method, the path called, the body with its media
/// type, the status expected, and what the request schema must say of the body.
struct Call {
    route: &'static str,
    method: &'static str,
    path: String,
    body: Option<(&'static str, Vec<u8>)>,
    status: u16,
    shape: Shape,
    /// The error code the answer's body must have, when the status alone does not tell.
    code: Option<&'static str>,
}

impl Call {
    /// This call, whose answer's body must carry error code `code`.
    fn coded(self, code: &'static str) -> Call {
        Call { code: Some(code), ..self }
    }
}

fn no_body(method: &'static str, route: &'static str, path: &str, status: u16) -> Call {
    Call { route, method, path: path.to_string(), body: None, status, shape: Shape::Unchecked, code: None }
}

fn json_call(route: &'static str, path: &str, body: impl ToString, status: u16, shape: Shape) -> Call {
    json_call_as("post", route, path, body, status, shape)
}

fn json_call_as(
    method: &'static str,
    route: &'static str,
    path: &str,
    body: impl ToString,
    status: u16,
    shape: Shape,
) -> Call {
    let body = Some(("application/json", body.to_string().into_bytes()));
    Call { route, method, path: path.to_string(), body, status, shape, code: None }
}

fn sql(text: &str, status: u16) -> Call {
    sql_at("/api/v1/sql", text, status)
}

/// SQL `text` sent to `path` (the SQL route with a query string).
fn sql_at(path: &str, text: &str, status: u16) -> Call {
    let body = Some(("text/plain", text.as_bytes().to_vec()));
    Call { route: "/api/v1/sql", method: "post", path: path.into(), body, status, shape: Shape::Fits, code: None }
}

/// A body over the test server's limit, sent to `route` at `path`.
fn too_large(route: &'static str, path: &str) -> Call {
    too_large_as("post", route, path)
}

fn too_large_as(method: &'static str, route: &'static str, path: &str) -> Call {
    let body = format!("{{\"pad\": \"{}\"}}", "x".repeat(BODY_BYTES_MAX));
    json_call_as(method, route, path, body, 413, Shape::Unchecked)
}

/// `count` index definitions: a primary key and typed store-only columns.
fn index_definitions(count: usize) -> Value {
    let mut definitions = vec![json!({"field": "id", "type": "int", "index": "hash", "pk": true})];
    definitions.extend((1..count).map(|i| json!({"field": format!("c{i}"), "type": "int", "index": "-"})));
    Value::Array(definitions)
}

const NAMESPACES: &str = "/api/v1/namespaces";
const NAMESPACE: &str = "/api/v1/namespaces/{ns}";
const TRUNCATE: &str = "/api/v1/namespaces/{ns}/truncate";
const INDEXES: &str = "/api/v1/namespaces/{ns}/indexes";
const INDEX: &str = "/api/v1/namespaces/{ns}/indexes/{index}";
const ITEMS: &str = "/api/v1/namespaces/{ns}/items";
const ITEM: &str = "/api/v1/namespaces/{ns}/items/{key}";
const TRANSACTION: &str = "/api/v1/namespaces/{ns}/transaction";
const QUERY: &str = "/api/v1/query";
const NAMESPACE_QUERY: &str = "/api/v1/namespaces/{ns}/query";
/// The items of the namespace the calls create.
const ITEMS_AT: &str = "/api/v1/namespaces/items/items";

/// Namespaces and indexes: created, described, refused.
fn namespace_calls() -> Vec<Call> {
    use Shape::*;
    let items = json!({"name": "items", "indexes": [
        {"field": "id", "type": "int", "index": "hash", "pk": true},
        {"field": "year", "type": "integer", "index": "tree"},
        {"fields": ["first", "last"], "type": "string", "index": "tree", "collate": "utf8_ci", "name": "by_name"},
        {"field": ["city", "year"], "type": ["str", "int"], "index": "hash"},
        {"field": "tags", "type": "string", "index": "hash", "array": true, "sparse": true},
        {"field": "price", "type": "double", "index": "column"},
        {"field": "seen", "type": "int", "index": "ttl", "expire_after": 86400, "sparse": true},
    ]});
    let create = |body: Value, status, shape| json_call(NAMESPACES, NAMESPACES, body, status, shape);
    // A namespace "x" with one index definition the server refuses.
    let refused = |definition: Value| create(json!({"name": "x", "indexes": [definition]}), 400, Refused);
    let add = |ns: &str, body: Value, status, shape| {
        json_call(INDEXES, &format!("/api/v1/namespaces/{ns}/indexes"), body, status, shape)
    };
    vec![
        create(items.clone(), 201, Fits),
        create(items, 409, Fits),
        json_call(NAMESPACES, NAMESPACES, "{oops", 400, Unchecked),
        create(json!({"name": "x", "indexs": []}), 400, Refused),
        create(json!({"name": ""}), 400, Refused),
        refused(json!({"field": "id", "type": "long"})),
        refused(json!({"type": "int"})),
        refused(json!({"field": "a", "expire_after": 5})),
        refused(json!({"field": "a", "pk": "yes"})),
        refused(json!({"field": "a", "collate": "fr"})),
        refused(json!({"field": "a", "pk": true, "array": true})),
        refused(json!({"field": "a", "type": "int", "pk": true, "index": "-"})),
        refused(json!({"field": "a", "type": "int", "index": "ttl"})),
        refused(json!({"field": "a", "type": "string", "index": "ttl", "expire_after": 5})),
        refused(json!({"field": "a", "type": "int", "index": "tree", "expire_after": 5})),
        refused(json!({"field": "a", "type": "int", "index": "ttl", "expire_after": -5})),
        refused(json!({"field": "a", "fields": ["b"], "type": "int"})),
        create(json!({"name": "wide", "indexes": index_definitions(65)}), 413, Fits),
        create(json!({"name": "wide", "indexes": index_definitions(64)}), 201, Fits),
        too_large(NAMESPACES, NAMESPACES),
        no_body("get", NAMESPACES, NAMESPACES, 200),
        no_body("get", NAMESPACE, "/api/v1/namespaces/items", 200),
        no_body("get", NAMESPACE, "/api/v1/namespaces/nope", 404),
        no_body("get", NAMESPACE, "/api/v1/namespaces/%ff", 400),
        add("items", json!({"field": "first", "type": "string", "name": "by_first"}), 201, Fits),
        add("items", json!({"field": "first", "type": "string", "name": "by_first"}), 409, Fits),
        add("items", json!({"field": "x", "type": "nope"}), 400, Refused),
        add("items", json!({"field": "x", "type": "int", "sparse": true, "pk": true}), 400, Refused),
        add("nope", json!({"field": "x", "type": "int"}), 404, Fits),
        add("%ff", json!({"field": "x", "type": "int"}), 400, Fits),
        add("wide", json!({"field": "x", "type": "int"}), 413, Fits),
        too_large(INDEXES, "/api/v1/namespaces/items/indexes"),
    ]
}

/// Documents: written in every body form and mode, read, deleted, refused.
fn document_calls() -> Vec<Call> {
    use Shape::*;
    let ndjson: String = (0..30)
        .map(|i| format!("{{\"id\":{i},\"year\":{},\"first\":\"f{i}\",\"city\":\"c{}\"}}\n\n", 2000 + i, i % 3))
        .collect();
    let array = json!([{"id": 30, "year": 2030, "tags": ["a", "b"], "price": 1.5}, {"id": 31, "nested": {"n": 1}}]);
    let write =
        |query: &str, body: Value, status, shape| json_call(ITEMS, &format!("{ITEMS_AT}{query}"), body, status, shape);
    let txn = |body: Value, status, shape| {
        json_call(TRANSACTION, "/api/v1/namespaces/items/transaction", body, status, shape)
    };
    vec![
        Call {
            route: ITEMS,
            method: "post",
            path: ITEMS_AT.into(),
            body: Some(("application/x-ndjson", ndjson.into_bytes())),
            status: 200,
            shape: Fits,
            code: None,
        },
        write("", array, 200, Fits),
        write("?mode=update", json!({"id": 31, "year": 2031}), 200, Fits),
        write("?mode=insert", json!({"id": 32}), 200, Fits),
        write("?mode=insert", json!({"id": 1}), 409, Fits),
        write("?mode=update", json!({"id": 99}), 404, Fits),
        write("?mode=upsert", json!([{"id": 40}, {"id": 41, "year": "x"}]), 400, Fits),
        write("?mode=replace", json!({"id": 42}), 400, Fits),
        write("?mode=insert&mode=update", json!({"id": 42}), 400, Fits),
        json_call(ITEMS, "/api/v1/namespaces/items/items", "{\"id\": 43,", 400, Unchecked),
        json_call(ITEMS, "/api/v1/namespaces/nope/items", json!({"id": 1}), 404, Fits),
        json_call(ITEMS, "/api/v1/namespaces/%ff/items", json!({"id": 1}), 400, Fits),
        too_large(ITEMS, ITEMS_AT),
        no_body("get", ITEM, "/api/v1/namespaces/items/items/3", 200),
        no_body("get", ITEM, "/api/v1/namespaces/items/items/999", 404),
        no_body("get", ITEM, "/api/v1/namespaces/nope/items/1", 404),
        no_body("get", ITEM, "/api/v1/namespaces/items/items/abc", 400),
        no_body("get", ITEM, "/api/v1/namespaces/items/items/%ff", 400),
        no_body("delete", ITEM, "/api/v1/namespaces/items/items/4", 200),
        no_body("delete", ITEM, "/api/v1/namespaces/items/items/4", 200),
        no_body("delete", ITEM, "/api/v1/namespaces/items/items/%5B4%5D", 400),
        no_body("delete", ITEM, "/api/v1/namespaces/nope/items/4", 404),
        no_body("delete", ITEM, "/api/v1/namespaces/%ff/items/4", 400),
        txn(
            json!([{"op": "insert", "doc": {"id": 150}}, {"op": "update", "doc": {"id": 150, "year": 2050}}, {"op": "delete", "key": 3}]),
            200,
            Fits,
        ),
        txn(json!([{"op": "upsert", "doc": {"id": 151}}, {"op": "insert", "doc": {"id": 1}}]), 409, Fits),
        txn(json!([{"op": "update", "doc": {"id": 999}}]), 404, Fits),
        txn(json!([{"op": "upsert", "doc": {"id": 152, "year": "x"}}]), 400, Fits),
        txn(json!([{"op": "merge", "doc": {"id": 153}}]), 400, Refused),
        txn(json!([{"op": "delete"}]), 400, Refused),
        txn(json!([{"op": "upsert", "doc": {"id": 154}, "key": 154}]), 400, Refused),
        txn(json!({"op": "upsert", "doc": {"id": 155}}), 400, Refused),
        txn(json!([{"op": "upsert", "doc": {"id": 156}, "namespace": "items"}]), 200, Fits),
        txn(json!([{"op": "upsert", "doc": {"id": 157}}, {"op": "delete", "key": 1, "namespace": "nope"}]), 404, Fits),
        txn(json!([{"op": "upsert", "doc": {"id": 158}, "namespace": 5}]), 400, Refused),
        json_call(TRANSACTION, "/api/v1/namespaces/items/transaction", "[{\"op\":", 400, Unchecked),
        json_call(TRANSACTION, "/api/v1/namespaces/nope/transaction", json!([]), 404, Fits),
        json_call(TRANSACTION, "/api/v1/namespaces/%ff/transaction", json!([]), 400, Fits),
        too_large(TRANSACTION, "/api/v1/namespaces/items/transaction"),
    ]
}

/// JSON DSL queries: every part of the DSL and every answer shape, and the refusals.
fn query_calls() -> Vec<Call> {
    use Shape::*;
    let full = json!({
        "namespace": "items",
        "filter": {"and": [
            {"field": "year", "op": ">", "value": 2010},
            {"or": [{"field": "city", "op": "in", "values": ["c0", "c1"]}, {"not": {"field": "tags", "op": "empty"}}]},
            {"field": "year", "op": "between", "values": [2000, 2100]},
        ]},
        "sort": [{"field": "year", "desc": true}, "first"],
        "offset": 1, "limit": 3, "total": true, "explain": true, "timeout_ms": 60_000,
        "aggregations": [
            {"type": "count"}, {"type": "sum", "field": "year"}, {"type": "avg", "field": "year"},
            {"type": "min", "field": "nothing"}, {"type": "max", "field": "price"},
            {"type": "facet", "fields": ["city"], "sort": "-count", "limit": 2}, {"type": "distinct", "field": "city"},
        ],
        "joins": [{"type": "left", "namespace": "items", "as": "same_city",
                   "on": [{"left": "city", "op": "=", "right": "city"}], "sort": "id", "limit": 2}],
    });
    let query = |body: Value, status, shape| json_call(QUERY, QUERY, body, status, shape);
    // A query on "items" with `parts` beside the namespace.
    let on_items = |parts: Value, status, shape| {
        let mut body = json!({"namespace": "items"});
        body.as_object_mut().unwrap().extend(parts.as_object().unwrap().clone());
        query(body, status, shape)
    };
    let at = |ns: &str, body: Value, status, shape| {
        json_call(NAMESPACE_QUERY, &format!("/api/v1/namespaces/{ns}/query"), body, status, shape)
    };
    // A query's own limit of 1 ms for an inner join whose ON condition never holds (every id
    // is 0 or more, every `below` is -1), so each of the 100,000 rows of "big" is compared
    // with all 200 of "few", read from their documents: seconds of work on any machine,
    // thousands of times the limit. (`0` asks for no limit of its own, so it no longer
    // serves as an always-expired one.)
    let joins = json!([{"type": "inner", "namespace": "few", "on": [{"left": "id", "op": "<", "right": "below"}]}]);
    let slow = json!({"joins": joins, "limit": 5, "timeout_ms": 1});
    let mut calls = big_namespace_calls();
    calls.extend(vec![
        query(full, 200, Fits),
        on_items(json!({"filter": [{"field": "id", "value": 3}], "limit": null}), 200, Fits),
        on_items(json!({"filter": {"field": "year", "op": "~~", "value": 1}}), 400, Refused),
        on_items(json!({"filter": {"field": "year", "op": "range", "value": 1}}), 400, Refused),
        on_items(json!({"filter": {"field": "year", "value": 1, "values": [1]}}), 400, Refused),
        on_items(json!({"filter": {"and": []}}), 400, Refused),
        on_items(json!({"limt": 3}), 400, Refused),
        on_items(json!({"aggregations": [{"type": "median", "field": "x"}]}), 400, Refused),
        on_items(json!({"joins": [{"namespace": "items", "on": []}]}), 400, Refused),
        query(json!({"filter": []}), 400, Refused),
        json_call(QUERY, QUERY, "[1", 400, Unchecked),
        query(json!({"namespace": "nope"}), 404, Fits),
        query(json!({"namespace": "big", "joins": slow["joins"], "limit": 5, "timeout_ms": 1}), 503, Fits),
        too_large(QUERY, QUERY),
        at("items", json!({"sort": "-year", "limit": 2, "total": null}), 200, Fits),
        at("items", json!({"namespace": "other"}), 400, Unchecked),
        at("items", json!({"offset": -1}), 400, Refused),
        at("%ff", json!({}), 400, Fits),
        at("nope", json!({}), 404, Fits),
        at("big", slow, 503, Fits),
        too_large(NAMESPACE_QUERY, "/api/v1/namespaces/items/query"),
    ]);
    calls
}

/// A namespace of 100,000 small documents (in bodies under the test server's limit) and one
/// of 200, for queries that cannot finish within a millisecond.
fn big_namespace_calls() -> Vec<Call> {
    let create = json!({"name": "big", "indexes": [{"field": "id", "type": "int", "index": "hash", "pk": true}]});
    let mut calls = vec![json_call(NAMESPACES, NAMESPACES, create, 201, Shape::Fits)];
    let create = json!({"name": "few", "indexes": [{"field": "id", "type": "int", "index": "hash", "pk": true}]});
    calls.push(json_call(NAMESPACES, NAMESPACES, create, 201, Shape::Fits));
    let ndjson: String = (0..200).map(|i| format!("{{\"id\":{i},\"below\":-1}}\n")).collect();
    let body = Some(("application/x-ndjson", ndjson.into_bytes()));
    let path = "/api/v1/namespaces/few/items".to_string();
    calls.push(Call { route: ITEMS, method: "post", path, body, status: 200, shape: Shape::Fits, code: None });
    for batch in 0..100 {
        let ndjson: String =
            (batch * 1000..(batch + 1) * 1000).map(|i| format!("{{\"id\":{i},\"first\":\"f{i}\"}}\n")).collect();
        let body = Some(("application/x-ndjson", ndjson.into_bytes()));
        let path = "/api/v1/namespaces/big/items".to_string();
        calls.push(Call { route: ITEMS, method: "post", path, body, status: 200, shape: Shape::Fits, code: None });
    }
    calls
}

const SEARCH: &str = "/api/v1/search";

/// Full-text: a text index with every option, match queries with markup, searches.
fn text_calls() -> Vec<Call> {
    use Shape::*;
    let add = |body: Value, status, shape| json_call(INDEXES, "/api/v1/namespaces/items/indexes", body, status, shape);
    let search = |body: Value, status, shape| json_call(SEARCH, SEARCH, body, status, shape);
    let text = json!({"name": "search", "field": ["first", "city"], "index": "text", "text": {
        "weights": {"first": 2}, "languages": ["en", "ru"], "stop_words": ["the"], "synonyms": [["f1", "first"]],
        "typos": true, "ranking": {"k1": 1.5, "b": 0.7, "proximity": 1, "stem": 0.9, "prefix": 0.5, "suffix": 0.4,
                                   "typo": 0.5, "translit": 0.6, "layout": 0.6, "synonym": 0.7}}});
    let matching = json!({"namespace": "items", "filter": {"field": "search", "op": "match", "value": "f1 c0*"},
        "sort": "-rank()", "limit": 3, "total": true, "highlight": {"fields": ["first"], "pre": "<em>", "post": "</em>"},
        "snippet": {"around": 2, "fragments": 1, "separator": "..."}});
    vec![
        add(text, 201, Fits),
        add(json!({"field": "first", "index": "text", "text": {"colour": 1}}), 400, Refused),
        add(json!({"field": "first", "index": "text", "text": {"ranking": {"typo": 5}}}), 400, Refused),
        json_call(QUERY, QUERY, matching, 200, Fits),
        json_call(QUERY, QUERY, json!({"namespace": "items", "highlight": 3}), 400, Refused),
        search(
            json!({"query": "f1", "namespaces": ["items", {"name": "items", "field": "first",
            "filter": {"field": "year", "op": ">", "value": 2000}}], "offset": 0, "limit": 5, "highlight": true,
            "snippet": true}),
            200,
            Fits,
        ),
        search(json!({"query": "f1"}), 400, Refused),
        search(json!({"query": "f1", "namespaces": ["items"], "limt": 1}), 400, Refused),
        search(json!({"query": "\"open", "namespaces": ["items"]}), 400, Fits),
        search(json!({"query": "f1", "namespaces": ["nope"]}), 404, Fits),
        too_large(SEARCH, SEARCH),
    ]
}

/// SQL: every answer shape and the refusals.
fn sql_calls() -> Vec<Call> {
    let wide_table = format!(
        "CREATE TABLE wider (id INT PRIMARY KEY, {})",
        (1..65).map(|i| format!("c{i} INT")).collect::<Vec<_>>().join(", ")
    );
    let mut calls = vec![
        sql("SELECT COUNT(*), * FROM items WHERE year > 2020 LIMIT 2", 200),
        sql("SELECT id, first AS name FROM items WHERE id IN (1, 2)", 200),
        sql("SELECT SUM(year) AS s, COUNT(*), COUNT(DISTINCT city) FROM items", 200),
        sql("SELECT city, COUNT(*) AS n FROM items GROUP BY city ORDER BY COUNT(*) DESC LIMIT 3", 200),
        sql("EXPLAIN SELECT * FROM items WHERE year = 2001", 200),
        sql("INSERT INTO items (id, year) VALUES (50, 2050), (51, 2051)", 200),
        sql("UPDATE items SET year = year + 1 WHERE id = 5", 200),
        sql("DELETE FROM items WHERE id = 51", 200),
        sql("CREATE TABLE IF NOT EXISTS t (id INT PRIMARY KEY, year INT)", 200),
        sql("CREATE INDEX by_year ON t (year)", 200),
        sql("DROP INDEX IF EXISTS t.nope", 200),
        sql("TRUNCATE TABLE t", 200),
        sql("DROP TABLE t", 200),
        sql("SELECT * FROM items\n  WHERE year >", 400),
        sql("INSERT INTO items (id, year) VALUES (52, 'soon')", 400),
        sql("SELECT * FROM nope", 404),
        sql("DROP INDEX items.nope", 404),
        sql("CREATE TABLE items (id INT PRIMARY KEY)", 409),
        sql(&wide_table, 413),
        too_large("/api/v1/sql", "/api/v1/sql"),
    ];
    let mut not_utf8 = sql("S", 400);
    not_utf8.body = Some(("text/plain", vec![b'S', 0xff]));
    not_utf8.shape = Shape::Unchecked;
    calls.push(not_utf8);
    calls
}

const FUNCTIONS: &str = "/api/v1/functions";
const FUNCTION: &str = "/api/v1/functions/{name}";

/// Procedures: a library loaded (again only with replace), listed, and its functions
/// called with JSON arguments over the items namespace; every refusal.
fn function_calls() -> Vec<Call> {
    use Shape::*;
    let library = "#!lua name=openapi\n\
        redis.register_function{function_name = 'item', description = 'an item by id', flags = {'no-writes'},\n\
          callback = function(keys, args) return {item = hotset.get('items', tonumber(args[1])), args = args} end}\n\
        redis.register_function('add', function(keys, args)\n\
          hotset.insert('items', {id = tonumber(args[1])})\n\
          if args[2] then error(args[2]) end\n\
          return {added = true}\n\
        end)\n\
        redis.register_function('scan', function(keys, args) return hotset.get('nope', 1) end)\n";
    let load = |path: &str, code: &str, status| Call {
        route: FUNCTIONS,
        method: "post",
        path: path.into(),
        body: Some(("text/plain", code.as_bytes().to_vec())),
        status,
        shape: if status == 201 { Fits } else { Unchecked },
        code: None,
    };
    let call = |name: &str, body: Value, status, shape| {
        json_call(FUNCTION, &format!("{FUNCTIONS}/{name}"), body, status, shape)
    };
    vec![
        load(FUNCTIONS, library, 201),
        load(FUNCTIONS, library, 400),
        load("/api/v1/functions?replace=true", library, 201),
        load("/api/v1/functions?replace=maybe", library, 400),
        load(FUNCTIONS, "return 1", 400),
        too_large(FUNCTIONS, FUNCTIONS),
        no_body("get", FUNCTIONS, FUNCTIONS, 200),
        call("item", json!([1, "x", true, null, {"a": [1]}]), 200, Fits),
        call("item", json!([999]), 200, Fits),
        call("add", json!([9000]), 200, Fits),
        call("add", json!([9000]), 409, Fits).coded("already_exists"),
        call("add", json!([9001, "refused"]), 400, Fits),
        call("item", json!({"id": 1}), 400, Refused),
        json_call(FUNCTION, "/api/v1/functions/item", "[oops", 400, Unchecked),
        call("nope", json!([]), 404, Fits),
        call("scan", json!([]), 404, Fits),
        too_large(FUNCTION, "/api/v1/functions/item"),
    ]
}

/// Dropping comes last: the calls before need the namespaces.
fn final_calls() -> Vec<Call> {
    vec![
        no_body("get", "/health", "/health", 200),
        no_body("get", "/metrics", "/metrics", 200),
        no_body("get", "/api/v1/openapi.json", "/api/v1/openapi.json", 200),
        no_body("delete", INDEX, "/api/v1/namespaces/items/indexes/by_first", 200),
        no_body("delete", INDEX, "/api/v1/namespaces/items/indexes/by_first", 404),
        no_body("delete", INDEX, "/api/v1/namespaces/items/indexes/id", 400),
        no_body("delete", INDEX, "/api/v1/namespaces/items/indexes/%ff", 400),
        no_body("post", TRUNCATE, "/api/v1/namespaces/items/truncate", 200),
        no_body("post", TRUNCATE, "/api/v1/namespaces/nope/truncate", 404),
        no_body("post", TRUNCATE, "/api/v1/namespaces/%ff/truncate", 400),
        no_body("delete", NAMESPACE, "/api/v1/namespaces/items", 200),
        no_body("delete", NAMESPACE, "/api/v1/namespaces/items", 404),
        no_body("delete", NAMESPACE, "/api/v1/namespaces/%ff", 400),
    ]
}

const SOURCES: &str = "/api/v1/sources";
const SOURCE_ROUTE: &str = "/api/v1/sources/{name}";
const RESYNC: &str = "/api/v1/sources/{name}/resync";
/// A position no source reaches while the test runs: waiting for it times out.
const NEVER: &str = "FFFFFFFF/0";

/// The live-sync calls, against a second server following a throwaway PostgreSQL (with a
/// query time limit of a second, so a read waiting for a position never reached ends
/// soon): the sources API, reads that wait for a position and say how fresh they are,
/// writes refused as read-only, and last the removals (the second one with the source
/// stopped, so it cannot be cleaned).
fn sync_calls(root: &Value, config: &std::path::Path, seen: &mut Seen) {
    let mut pg = Postgres::start();
    pg.app(
        "CREATE TABLE people (id int PRIMARY KEY, name text, city text);
         INSERT INTO people VALUES (1, 'ann', 'Oslo'), (2, 'bo', 'Lima');
         CREATE TABLE extra (id int PRIMARY KEY, v text); INSERT INTO extra VALUES (1, 'x');
         CREATE TABLE spare (id int PRIMARY KEY); CREATE TABLE loose (v text);",
    );
    let dir = tempfile::tempdir().unwrap();
    let config = config.to_str().unwrap();
    let server = Server::start(&dir.path().join("data"), &["--config", config, "--query-timeout-ms", "1000"]);
    run(root, &server, &declare_calls(&pg.url()), seen);
    sync::wait_streaming(&server);
    run(root, &server, &redeclare_calls(&pg.url()), seen);
    sync::wait_streaming(&server);
    pg.app("INSERT INTO people VALUES (3, 'cy', 'Oslo')");
    let position = pg.position();
    sync::wait_applied(&server, "people", &position);
    run(root, &server, &synced_read_calls(&position), seen);
    run(root, &server, &read_only_calls(), seen);
    let resync = [
        no_body("post", RESYNC, "/api/v1/sources/app/resync", 202),
        no_body("post", RESYNC, "/api/v1/sources/nope/resync", 404).coded("not_found"),
        no_body("post", RESYNC, "/api/v1/sources/%ff/resync", 400),
    ];
    run(root, &server, &resync, seen);
    sync::wait_streaming(&server);
    let removals = [
        no_body("delete", SOURCE_ROUTE, "/api/v1/sources/app", 204),
        no_body("delete", SOURCE_ROUTE, "/api/v1/sources/app", 404).coded("not_found"),
        no_body("delete", SOURCE_ROUTE, "/api/v1/sources/%ff", 400),
    ];
    run(root, &server, &removals, seen);
    pg.stop();
    run(root, &server, &[no_body("delete", SOURCE_ROUTE, "/api/v1/sources/spare", 200)], seen);
    server.stop();
}

/// Table `people` as the calls declare it: some columns, an index of the client's.
fn people_table() -> Value {
    json!({"table": "public.people", "namespace": "people", "columns": ["id", "name", "city"],
           "indexes": [{"field": "city", "type": "string", "index": "tree", "collate": "utf8_ci"}]})
}

/// Sources declared, refused, listed and described.
fn declare_calls(url: &str) -> Vec<Call> {
    use Shape::*;
    let declare = |body: Value, status, shape| json_call(SOURCES, SOURCES, body, status, shape);
    let app = json!({"name": SOURCE, "url": url, "tables": [people_table()],
                     "options": {"numeric": "exact", "time": "rfc3339", "slot": null, "publication": null}});
    let spare = json!({"name": "spare", "url": url, "tables": [{"table": "spare", "full_row_identity": false}]});
    let other = |tables: Value| json!({"name": "other", "url": url, "tables": tables});
    let extra = json!([{"table": "public.extra"}]);
    vec![
        json_call(NAMESPACES, NAMESPACES, json!({"name": "own", "indexes": index_definitions(1)}), 201, Fits),
        declare(app.clone(), 201, Fits),
        declare(app, 409, Fits).coded("already_exists"),
        declare(spare, 201, Fits),
        declare(other(json!([{"table": "public.extra", "namespace": "people"}])), 409, Fits).coded("already_exists"),
        declare(other(json!([{"table": "public.extra", "namespace": "own"}])), 409, Fits).coded("already_exists"),
        declare(other(json!([{"table": "public.missing"}])), 400, Fits).coded("bad_request"),
        declare(other(json!([{"table": "public.loose"}])), 400, Fits).coded("bad_request"),
        declare(json!({"name": "bad name", "url": url, "tables": extra}), 400, Fits),
        declare(json!({"name": "other", "url": "http://127.0.0.1/appdb", "tables": extra}), 400, Fits),
        declare(other(json!([])), 400, Refused),
        declare(json!({"name": "other", "tables": extra}), 400, Refused),
        declare(other(json!([{"table": "public.extra", "colums": ["id"]}])), 400, Refused),
        declare(json!({"name": "other", "url": url, "tables": extra, "options": {"numeric": "float"}}), 400, Refused),
        json_call(SOURCES, SOURCES, "{oops", 400, Unchecked),
        too_large(SOURCES, SOURCES),
        no_body("get", SOURCES, SOURCES, 200),
        no_body("get", SOURCE_ROUTE, "/api/v1/sources/app", 200),
        no_body("get", SOURCE_ROUTE, "/api/v1/sources/nope", 404),
        no_body("get", SOURCE_ROUTE, "/api/v1/sources/%ff", 400),
    ]
}

/// A source's declaration replaced (a table added), and the replacements refused.
fn redeclare_calls(url: &str) -> Vec<Call> {
    use Shape::*;
    let put = |path: &str, body: Value, status, shape| json_call_as("put", SOURCE_ROUTE, path, body, status, shape);
    let both = |namespace: &str| json!({"name": SOURCE, "url": url, "tables": [people_table(), {"table": "public.extra", "namespace": namespace}]});
    let at = "/api/v1/sources/app";
    vec![
        put(at, both("extra"), 200, Fits),
        put(at, both("own"), 409, Fits).coded("already_exists"),
        put(at, json!({"name": "other", "url": url, "tables": [people_table()]}), 400, Fits),
        put(at, json!({"name": SOURCE, "url": url, "tables": []}), 400, Refused),
        put("/api/v1/sources/nope", json!({"name": "nope", "url": url, "tables": [people_table()]}), 404, Fits),
        put("/api/v1/sources/%ff", both("extra"), 400, Fits),
        json_call_as("put", SOURCE_ROUTE, at, "{oops", 400, Unchecked),
        too_large_as("put", SOURCE_ROUTE, at),
    ]
}

/// Reads of the synced namespace (gets, queries, SQL, and searches through a text index the
/// client adds): fresh (with the header), after `position` (in the URL, repeated and
/// joined, and in the DSL), past the time limit, after an unknown source, after something
/// that is no position.
fn synced_read_calls(position: &str) -> Vec<Call> {
    use Shape::*;
    let after = format!("after={SOURCE}:{position}");
    let never = format!("after={SOURCE}:{NEVER}");
    let item = |query: &str, status| no_body("get", ITEM, &format!("/api/v1/namespaces/people/items/3{query}"), status);
    let at = |query: &str, body: Value, status, shape| {
        json_call(NAMESPACE_QUERY, &format!("/api/v1/namespaces/people/query{query}"), body, status, shape)
    };
    let query =
        |query: &str, body: Value, status, shape| json_call(QUERY, &format!("{QUERY}{query}"), body, status, shape);
    let select =
        |query: &str, status| sql_at(&format!("/api/v1/sql{query}"), "SELECT * FROM people WHERE id = 3", status);
    let words = json!({"name": "words", "field": ["name", "city"], "index": "text"});
    let search = |query: &str, status| {
        json_call(SEARCH, &format!("{SEARCH}{query}"), json!({"query": "oslo", "namespaces": ["people"]}), status, Fits)
    };
    vec![
        item("", 200),
        item(&format!("?{after}"), 200),
        item(&format!("?{after};{SOURCE}:{position}"), 200),
        item(&format!("?{never}"), 504).coded("timeout"),
        item("?after=nope:0/0", 404).coded("not_found"),
        item("?after=app", 400).coded("bad_request"),
        at(&format!("?{after}&{after}"), json!({"filter": [{"field": "id", "value": 3}]}), 200, Fits),
        at("", json!({"after": {SOURCE: position}, "sort": "id"}), 200, Fits),
        at("", json!({"timeout_ms": 200, "after": {SOURCE: NEVER}}), 504, Fits).coded("timeout"),
        at("?after=nope:0/0", json!({}), 404, Fits).coded("not_found"),
        at("?after=app:zz", json!({}), 400, Fits).coded("bad_request"),
        at("", json!({"after": {SOURCE: 16}}), 400, Refused),
        query("", json!({"namespace": "people", "after": {SOURCE: position}, "total": true}), 200, Fits),
        query(&format!("?{never}"), json!({"namespace": "people", "timeout_ms": 200}), 504, Fits).coded("timeout"),
        query("", json!({"namespace": "people", "after": {"nope": "0/0"}}), 404, Fits).coded("not_found"),
        query("", json!({"namespace": "people", "after": "app:0/0"}), 400, Refused),
        query("", json!({"namespace": "people", "after": {SOURCE: "zz"}}), 400, Fits),
        select("", 200),
        select(&format!("?{after}"), 200),
        select(&format!("?{never}"), 504).coded("timeout"),
        select("?after=nope:0/0", 404).coded("not_found"),
        select("?after=app:zz", 400).coded("bad_request"),
        // A text index of the client's own on the synced namespace, then searches.
        json_call(INDEXES, "/api/v1/namespaces/people/indexes", words, 201, Fits),
        search("", 200),
        search(&format!("?{after}"), 200),
        search(&format!("?{never}"), 504).coded("timeout"),
        search("?after=nope:0/0", 404).coded("not_found"),
        search("?after=app:zz", 400).coded("bad_request"),
    ]
}

/// A write to the synced namespace on every route that writes documents or drops them:
/// 409 `read_only`. Its indexes stay the client's.
fn read_only_calls() -> Vec<Call> {
    use Shape::*;
    let create = json!({"name": "people", "indexes": index_definitions(1)});
    let transaction = json!([{"op": "delete", "key": 1}]);
    let by_name = json!({"field": "name", "type": "string", "name": "by_name"});
    vec![
        json_call(NAMESPACES, NAMESPACES, create, 409, Fits).coded("read_only"),
        no_body("delete", NAMESPACE, "/api/v1/namespaces/people", 409).coded("read_only"),
        no_body("post", TRUNCATE, "/api/v1/namespaces/people/truncate", 409).coded("read_only"),
        json_call(ITEMS, "/api/v1/namespaces/people/items", json!({"id": 9}), 409, Fits).coded("read_only"),
        no_body("delete", ITEM, "/api/v1/namespaces/people/items/1", 409).coded("read_only"),
        json_call(TRANSACTION, "/api/v1/namespaces/people/transaction", transaction, 409, Fits).coded("read_only"),
        sql("INSERT INTO people (id, name) VALUES (9, 'own')", 409).coded("read_only"),
        sql("DELETE FROM people WHERE id = 1", 409).coded("read_only"),
        sql("DROP TABLE people", 409).coded("read_only"),
        json_call(INDEXES, "/api/v1/namespaces/people/indexes", by_name, 201, Fits),
        no_body("delete", INDEX, "/api/v1/namespaces/people/indexes/by_name", 200),
    ]
}

/// The (path, method) pairs of a router's source: every `.route("path",
/// method(handler).method(handler))`, however rustfmt wraps it.
fn routed_operations(source: &str) -> BTreeSet<(String, String)> {
    for unread in [".nest(", ".merge(", ".route_service(", ".nest_service("] {
        assert!(!source.contains(unread), "the router uses {unread}, which this test does not read");
    }
    let mut operations = BTreeSet::new();
    for (at, _) in source.match_indices(".route(") {
        let rest = &source[at + ".route(".len()..];
        let path = rest.split('"').nth(1).expect("a route's path is a string literal");
        // The method router runs to the parenthesis that closes `.route(`.
        let mut depth = 1;
        let end = rest
            .char_indices()
            .find(|(_, c)| {
                depth += match c {
                    '(' => 1,
                    ')' => -1,
                    _ => 0,
                };
                depth == 0
            })
            .map(|(i, _)| i)
            .expect("a route's parentheses close");
        let methods = &rest[..end];
        for method in METHODS {
            let called = methods
                .match_indices(&format!("{method}("))
                .any(|(i, _)| !methods[..i].ends_with(|c: char| c.is_alphanumeric() || c == '_'));
            if called {
                operations.insert((path.to_string(), method.to_string()));
            }
        }
    }
    assert!(!operations.is_empty(), "no routes found in the router's source");
    operations
}

fn documented_operations(root: &Value) -> BTreeSet<(String, String)> {
    let mut operations = BTreeSet::new();
    for (path, item) in root["paths"].as_object().expect("paths") {
        for method in item.as_object().expect("a path item").keys().filter(|k| METHODS.contains(&k.as_str())) {
            operations.insert((path.clone(), method.clone()));
        }
    }
    operations
}

/// Every `$ref` anywhere in the document resolves.
fn check_references(root: &Value, value: &Value, at: &str) {
    match value {
        Value::Object(object) => {
            if let Some(reference) = object.get("$ref").and_then(Value::as_str) {
                resolve(root, reference).unwrap_or_else(|e| panic!("{at}: {e}"));
            }
            for (key, inner) in object {
                check_references(root, inner, &format!("{at}/{key}"));
            }
        }
        Value::Array(items) => {
            items.iter().enumerate().for_each(|(i, v)| check_references(root, v, &format!("{at}/{i}")))
        }
        _ => {}
    }
}

/// Every operation declares each of its path's parameters and describes each response.
fn check_operations(root: &Value) {
    for (path, item) in root["paths"].as_object().unwrap() {
        let declared = |operation: &Value| -> BTreeSet<String> {
            let lists = [&item["parameters"], &operation["parameters"]];
            let parameters = lists.into_iter().filter_map(Value::as_array).flatten();
            parameters
                .map(|p| followed(root, p).unwrap())
                .filter(|p| p["in"] == "path")
                .map(|p| p["name"].as_str().unwrap().to_string())
                .collect()
        };
        let in_path: BTreeSet<String> =
            path.split('/').filter_map(|part| part.strip_prefix('{')?.strip_suffix('}')).map(String::from).collect();
        for method in METHODS {
            let Some(operation) = item.get(method) else { continue };
            assert_eq!(declared(operation), in_path, "{method} {path}: path parameters");
            let responses = operation["responses"].as_object().unwrap_or_else(|| panic!("{method} {path}: responses"));
            assert!(responses.keys().any(|status| status.starts_with('2')), "{method} {path}: no success documented");
            for (status, response) in responses {
                let response = followed(root, response).unwrap();
                assert!(response["description"].is_string(), "{method} {path} {status}: no description");
            }
        }
    }
}

/// The (route, method, status, media type) pairs the document promises.
fn documented_answers(root: &Value) -> BTreeSet<(String, String, String, String)> {
    let mut answers = BTreeSet::new();
    for (route, method) in documented_operations(root) {
        for (status, response) in root["paths"][&route][&method]["responses"].as_object().unwrap() {
            let content = followed(root, response).unwrap()["content"].as_object().cloned().unwrap_or_default();
            for media_type in content.keys() {
                answers.insert((route.clone(), method.clone(), status.clone(), media_type.clone()));
            }
        }
    }
    answers
}

/// The (route, method, status, header) of every answer documented with a header.
fn documented_headers(root: &Value) -> BTreeSet<(String, String, String, String)> {
    let mut headers = BTreeSet::new();
    for (route, method) in documented_operations(root) {
        for (status, response) in root["paths"][&route][&method]["responses"].as_object().unwrap() {
            let response = followed(root, response).unwrap();
            for name in response["headers"].as_object().into_iter().flat_map(|headers| headers.keys()) {
                headers.insert((route.clone(), method.clone(), status.clone(), name.clone()));
            }
        }
    }
    headers
}

/// What the calls have seen: documented (route, method, status, media type) answers, and
/// (route, method, status, header) for the documented headers.
#[derive(Default)]
struct Seen {
    answers: BTreeSet<(String, String, String, String)>,
    headers: BTreeSet<(String, String, String, String)>,
}

/// Whether a documented answer is one no call is expected to trigger.
fn not_triggered(route: &str, method: &str, status: &str, media_type: &str) -> bool {
    NEVER_TRIGGERED.contains(&status)
        || (status == "503" && LOG_ONLY_503.contains(&format!("{method} {route}").as_str()))
        || NOT_TRIGGERED.iter().any(|(r, m, s, t, _)| (*r, *m, *s, *t) == (route, method, status, media_type))
        || FUNCTION_ANSWERS_NOT_TRIGGERED.iter().any(|(r, m, s)| (*r, *m, *s) == (route, method, status))
}

/// Runs `calls` against the server: each answer's status must be the one expected and
/// documented, its content type, body and position header as documented, its error code
/// the one expected, and its request body as `shape` says. Adds what it saw to `seen`.
fn run(root: &Value, server: &Server, calls: &[Call], seen: &mut Seen) {
    for call in calls {
        let (route, method, path) = (call.route, call.method, &call.path);
        let body = call.body.as_ref().map(|(media_type, bytes)| (*media_type, bytes.as_slice()));
        let answer = send(server, &method.to_uppercase(), path, body);
        let text = String::from_utf8_lossy(&answer.body);
        assert_eq!(answer.status, call.status, "{method} {path}: {text}");
        let media_type = conforms(root, route, method, &answer).unwrap_or_else(|problem| panic!("{path}: {problem}"));
        let status = answer.status.to_string();
        seen.answers.insert((route.to_string(), method.to_string(), status.clone(), media_type));
        if !answer.position.is_empty() {
            assert_positions(&answer.position);
            seen.headers.insert((route.to_string(), method.to_string(), status, POSITION_HEADER.to_string()));
        }
        if let Some(code) = call.code {
            let error: Value = serde_json::from_slice(&answer.body).unwrap();
            assert_eq!(error["code"], code, "{method} {path}: {text}");
        }
        if let Some((media_type, bytes)) = body {
            let taken = (200..300).contains(&answer.status);
            assert!(!taken || call.shape == Shape::Fits, "{method} {path}: a request the server takes must be checked");
            let fits = request_conforms(root, route, method, media_type, bytes);
            match call.shape {
                Shape::Fits => fits
                    .unwrap_or_else(|problem| panic!("{path}: the server answered {}, but {problem}", answer.status)),
                Shape::Refused => {
                    assert!(fits.is_err(), "{method} {path}: the server refused it ({text}), the schema takes it")
                }
                Shape::Unchecked => {}
            }
        }
    }
}

/// A `Hotset-Source-Position` value: `source=position` pairs joined by `; `.
fn assert_positions(header: &str) {
    for pair in header.split("; ") {
        let (source, position) = pair.split_once('=').unwrap_or_else(|| panic!("{POSITION_HEADER}: {header}"));
        assert!(!source.is_empty() && !position.is_empty(), "{POSITION_HEADER}: {header}");
    }
}

#[test]
fn the_document_matches_the_router_and_the_real_answers() {
    let root: Value = serde_json::from_str(DOCUMENT).expect("openapi.json is JSON");
    assert_eq!(root["openapi"], "3.1.0");
    check_references(&root, &root, "#");
    check_operations(&root);
    let (routed, documented) = (routed_operations(ROUTER), documented_operations(&root));
    let undocumented: Vec<_> = routed.difference(&documented).collect();
    let unrouted: Vec<_> = documented.difference(&routed).collect();
    assert!(undocumented.is_empty(), "routed in http.rs, not documented in openapi.json: {undocumented:?}");
    assert!(unrouted.is_empty(), "documented in openapi.json, not routed in http.rs: {unrouted:?}");

    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("hotset.toml");
    std::fs::write(&config, format!("[limits]\nmax_body_bytes = {BODY_BYTES_MAX}\n")).unwrap();
    let server = Server::start(&dir.path().join("data"), &["--config", config.to_str().unwrap()]);
    let served = send(&server, "GET", "/api/v1/openapi.json", None);
    assert_eq!((served.status, served.content_type.as_str()), (200, "application/json"));
    assert!(served.body == DOCUMENT.as_bytes(), "the server serves openapi.json byte for byte");

    let calls: Vec<Call> = [
        namespace_calls(),
        document_calls(),
        query_calls(),
        text_calls(),
        sql_calls(),
        function_calls(),
        final_calls(),
    ]
    .into_iter()
    .flatten()
    .collect();
    let mut seen = Seen::default();
    run(&root, &server, &calls, &mut seen);
    // What no operation documents: an unknown route, and a known path's missing method.
    let unknown = send(&server, "GET", "/api/v1/nothing-here", None);
    assert_eq!((unknown.status, unknown.content_type.as_str()), (404, "application/json"));
    check_body(&root, &json!({"$ref": "#/components/schemas/Error"}), "application/json", &unknown.body).unwrap();
    let missing_method = send(&server, "PUT", "/api/v1/namespaces", None);
    assert_eq!((missing_method.status, missing_method.content_type.as_str()), (405, "application/json"));
    check_body(&root, &json!({"$ref": "#/components/schemas/Error"}), "application/json", &missing_method.body)
        .unwrap();
    server.stop();

    sync_calls(&root, &config, &mut seen);
    let documented = documented_answers(&root);
    for documented_answer in &documented {
        let (route, method, status, media_type) = documented_answer;
        let listed = not_triggered(route, method, status, media_type);
        let triggered = seen.answers.contains(documented_answer);
        let answer = format!("{method} {route} {status} {media_type}");
        assert!(
            triggered || listed,
            "{answer} is documented, but no call gives it: add one, or list it in NOT_TRIGGERED"
        );
        assert!(!(triggered && listed), "{answer} is listed in NOT_TRIGGERED, but a call gives it");
    }
    for (route, method, status, media_type, _) in NOT_TRIGGERED {
        let answer = (route.to_string(), method.to_string(), status.to_string(), media_type.to_string());
        assert!(documented.contains(&answer), "NOT_TRIGGERED lists {answer:?}, which is not documented");
    }
    for (route, method, status, header) in documented_headers(&root) {
        let answer = (route.clone(), method.clone(), status.clone(), header.clone());
        assert!(seen.headers.contains(&answer), "{method} {route} {status} documents header {header}, never seen");
    }
}

#[test]
fn the_route_reader_finds_every_method_however_the_route_is_wrapped() {
    let source = r#"
        Router::new()
            .route("/a", get(get_a).post(post_a))
            .route(
                "/a/{id}",
                delete(delete_a)
                    .put(put_a),
            )
            .route("/b", post(forget_a))
            .fallback(not_found)
    "#;
    let pairs = |list: &[(&str, &str)]| list.iter().map(|(p, m)| (p.to_string(), m.to_string())).collect();
    let expected: BTreeSet<(String, String)> =
        pairs(&[("/a", "get"), ("/a", "post"), ("/a/{id}", "delete"), ("/a/{id}", "put"), ("/b", "post")]);
    assert_eq!(routed_operations(source), expected);
}

#[test]
fn every_index_the_server_describes_is_a_definition_it_takes() {
    let root: Value = serde_json::from_str(DOCUMENT).unwrap();
    let index = json!({"$ref": "#/components/schemas/Index"});
    let definition = json!({"$ref": "#/components/schemas/IndexDefinition"});
    let canonical = [
        json!({"name": "id", "field": "id", "type": "int", "index": "hash", "pk": true}),
        json!({"name": "a+b", "field": ["a", "b"], "type": ["string", "int"], "index": "tree", "collate": "utf8_ci"}),
        json!({"name": "t", "field": "t", "type": "string", "index": "-", "array": true, "sparse": true}),
    ];
    for value in &canonical {
        check(&root, &index, value, "$").unwrap();
        check(&root, &definition, value, "$").unwrap();
    }
    assert!(check(&root, &index, &json!({"name": "x", "field": "x", "type": "int", "index": "column"}), "$").is_err());
    assert!(
        check(&root, &index, &json!({"name": "x", "field": "x", "type": "int", "index": "hash", "pk": false}), "$")
            .is_err()
    );
}

#[test]
fn the_checker_refuses_what_does_not_match() {
    let root: Value = serde_json::from_str(DOCUMENT).unwrap();
    let answer = |status: u16, content_type: &str, body: &str| Answer {
        status,
        content_type: content_type.to_string(),
        position: String::new(),
        body: body.as_bytes().to_vec(),
    };
    let json_answer = |status, body: &str| answer(status, "application/json", body);
    assert!(conforms(&root, ITEMS, "post", &json_answer(200, r#"{"count": 3}"#)).is_ok());
    let refused = [
        (ITEMS, "post", json_answer(200, r#"{"count": "3"}"#), "expected [\"integer\"]"),
        (ITEMS, "post", json_answer(200, r#"{"count": 3, "extra": 1}"#), "not documented"),
        (ITEMS, "post", json_answer(200, r#"{}"#), "required key count"),
        (ITEMS, "post", json_answer(200, r#"{"count": -1}"#), "below"),
        (ITEMS, "post", json_answer(418, r#"{"count": 3}"#), "418"),
        (ITEMS, "post", answer(200, "text/plain", "3"), "content type"),
        (ITEMS, "post", answer(200, "application/json", "{"), "not JSON"),
        ("/api/v1/sql", "post", json_answer(400, r#"{"error": "x", "line": 1}"#), "oneOf"),
        ("/api/v1/sql", "post", json_answer(200, r#"{"items": [], "affected": 1, "total": 1}"#), "oneOf"),
        (
            QUERY,
            "post",
            json_answer(200, r#"{"items": [], "aggregations": [{"type": "count", "value": 1.5}]}"#),
            "oneOf",
        ),
        (NAMESPACE, "delete", json_answer(200, r#"{"dropped": false}"#), "is not true"),
        ("/health", "get", json_answer(200, r#"{"status": "ok "}"#), "is not \"ok\""),
    ];
    for (route, method, answer, expected) in refused {
        let problem = conforms(&root, route, method, &answer).unwrap_err();
        assert!(problem.contains(expected), "{problem} should say {expected}");
    }
    // The position header only where it is documented.
    let fresh = |route: &str, method: &str, position: &str, body: &str| {
        let answer = Answer { position: position.to_string(), ..json_answer(200, body) };
        conforms(&root, route, method, &answer)
    };
    assert!(fresh(QUERY, "post", "app=0/16B6C50", r#"{"items": []}"#).is_ok());
    let undocumented = fresh(NAMESPACES, "get", "app=0/16B6C50", r#"{"items": []}"#).unwrap_err();
    assert!(undocumented.contains("header Hotset-Source-Position is not documented"), "{undocumented}");
    let unknown = check(&root, &json!({"type": "string", "pattern": "^a"}), &json!("a"), "$").unwrap_err();
    assert!(unknown.contains("does not know schema keyword pattern"), "{unknown}");
    let dangling = check(&root, &json!({"$ref": "#/components/schemas/Nope"}), &json!(1), "$").unwrap_err();
    assert!(dangling.contains("does not resolve"), "{dangling}");
}
