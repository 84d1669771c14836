//! One error, one code, on every interface, black box: each failure below is caused over
//! RESP (`DOC.*` in the TEXT form every connection starts with, and in the JSON form) and
//! over HTTP, and must carry the same stable code on each: the RESP prefix word and the
//! HTTP body's `"code"`. Nothing here reads an error's words, so a reworded message
//! cannot pass or fail it; a code that drifts apart on one interface fails it.
//! (`timeout`, `storage` and `bad_change` need a slow query, a failing disk or a damaged
//! log: `disk_full.rs`, the storage crate's tests and the engine's own cover those;
//! `read_only` needs a live-sync source: `sync_pg.rs` checks it over HTTP and RESP,
//! `openapi.rs` on every HTTP write route.)

mod common;

use common::{Server, curl_as, exchange};
use serde_json::Value;
use std::net::TcpStream;

const PK: &str = r#"[{"field": "id", "type": "int", "index": "hash", "pk": true}]"#;

fn resp_line(stream: &mut TcpStream, args: &[&str]) -> String {
    let mut request = format!("*{}\r\n", args.len());
    for arg in args {
        request.push_str(&format!("${}\r\n{arg}\r\n", arg.len()));
    }
    let reply = String::from_utf8(exchange(stream, request.as_bytes(), b"\r\n")).unwrap();
    reply.split_once("\r\n").expect("a whole line").0.to_string()
}

/// The code word of an error line (`-NOT_FOUND ...` gives `not_found`).
fn word(line: &str) -> String {
    let word = line.strip_prefix('-').unwrap_or_else(|| panic!("an error line: {line}"));
    word.split(' ').next().unwrap().to_ascii_lowercase()
}

/// One HTTP request (with the password, when given); the status and the body's `code`.
fn http_code(server: &Server, password: Option<&str>, method: &str, path: &str, body: &str) -> (u16, String) {
    let (status, body) = curl_as(server, password, method, path, Some(body.as_bytes()));
    let json: Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{method} {path}: {body}: {e}"));
    let code = json["code"].as_str().unwrap_or_else(|| panic!("{method} {path}: no code in {body}"));
    (status, code.to_string())
}

#[test]
fn every_interface_gives_an_error_the_same_code() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &["--password", "pw", "--max-document-bytes", "200"]);
    let mut text = server.raw();
    let mut json = server.raw();
    for stream in [&mut text, &mut json] {
        assert_eq!(resp_line(stream, &["AUTH", "pw"]), "+OK");
    }
    assert_eq!(resp_line(&mut json, &["DOC.ERRORS", "JSON"]), "+OK");
    assert_eq!(resp_line(&mut text, &["DOC.NSCREATE", "books", PK]), "+OK");
    let big = format!(r#"{{"id": 7, "text": "{}"}}"#, "x".repeat(300));
    // (code, RESP command, HTTP method, path, body)
    let cases: Vec<(&str, Vec<&str>, &str, &str, String)> = vec![
        ("not_found", vec!["DOC.GET", "nope", "1"], "GET", "/api/v1/namespaces/nope/items/1", String::new()),
        (
            "not_found",
            vec!["DOC.INDEXDROP", "books", "nope"],
            "DELETE",
            "/api/v1/namespaces/books/indexes/nope",
            String::new(),
        ),
        (
            "already_exists",
            vec!["DOC.NSCREATE", "books", PK],
            "POST",
            "/api/v1/namespaces",
            format!(r#"{{"name": "books", "indexes": {PK}}}"#),
        ),
        (
            "already_exists",
            vec!["DOC.INSERT", "books", r#"{"id": 1}"#, r#"{"id": 1}"#],
            "POST",
            "/api/v1/namespaces/books/items?mode=insert",
            r#"[{"id": 2}, {"id": 2}]"#.into(),
        ),
        (
            "bad_document",
            vec!["DOC.UPSERT", "books", r#"{"id": "x"}"#],
            "POST",
            "/api/v1/namespaces/books/items",
            r#"{"id": "x"}"#.into(),
        ),
        ("bad_document", vec!["DOC.UPSERT", "books", "[1]"], "POST", "/api/v1/namespaces/books/items", "[1]".into()),
        (
            "bad_query",
            vec!["DOC.SQL", "SELECT * FROM books WHERE id = = 1"],
            "POST",
            "/api/v1/sql",
            "SELECT * FROM books WHERE id = = 1".into(),
        ),
        (
            "bad_query",
            vec!["DOC.QUERY", "books", r#"{"filter": {"field": "id", "op": "nope", "value": 1}}"#],
            "POST",
            "/api/v1/namespaces/books/query",
            r#"{"filter": {"field": "id", "op": "nope", "value": 1}}"#.into(),
        ),
        (
            "schema",
            vec!["DOC.NSCREATE", "bad name!", PK],
            "POST",
            "/api/v1/namespaces",
            format!(r#"{{"name": "bad name!", "indexes": {PK}}}"#),
        ),
        ("limit", vec!["DOC.UPSERT", "books", &big], "POST", "/api/v1/namespaces/books/items", big.clone()),
        ("bad_query", vec!["DOC.QUERY", "books", "{oops"], "POST", "/api/v1/namespaces/books/query", "{oops".into()),
        (
            "bad_request",
            vec!["DOC.TXN", "books", "MERGE", r#"{"id": 3}"#],
            "POST",
            "/api/v1/namespaces/books/items?mode=merge",
            r#"{"id": 3}"#.into(),
        ),
    ];
    for (code, command, method, path, body) in &cases {
        let text_line = resp_line(&mut text, command);
        assert_eq!(word(&text_line), *code, "TEXT {command:?}: {text_line}");
        let json_line = resp_line(&mut json, command);
        assert_eq!(word(&json_line), *code, "JSON {command:?}: {json_line}");
        let (_, rest) = json_line.split_once(' ').unwrap();
        let json_body: Value = serde_json::from_str(rest).unwrap();
        assert_eq!(json_body["code"], *code, "{json_line}");
        let (status, http) = http_code(&server, Some("pw"), method, path, body);
        assert_eq!(http, *code, "HTTP {method} {path} ({status})");
        assert!(status >= 400, "{method} {path}: {status}");
    }
    // Routes and requests the router refuses before any handler runs.
    assert_eq!(http_code(&server, Some("pw"), "GET", "/api/v1/nowhere", ""), (404, "not_found".into()));
    assert_eq!(http_code(&server, Some("pw"), "PUT", "/api/v1/sql", "x"), (405, "bad_request".into()));
    // Without the password: HTTP says `auth`; RESP answers Redis' own NOAUTH line.
    assert_eq!(http_code(&server, None, "GET", "/api/v1/namespaces", ""), (401, "auth".into()));
    let mut stranger = server.raw();
    assert!(resp_line(&mut stranger, &["DOC.NSLIST"]).starts_with("-NOAUTH "));
    server.stop();
}
