//! `DOC.ERRORS`, black box: the real binary's `DOC.*` error lines in the JSON form a
//! client opts into (`-CODE {json}`, the engine error's JSON form, the refused operation's
//! place as a field), and the TEXT form every connection starts with, unchanged.

mod common;

use common::{Server, exchange};
use hotset_core::Error;
use serde_json::{Value, json};
use std::net::TcpStream;

/// Sends one command and returns its reply line (without CRLF); every reply these tests
/// read is one line (`+`, `-` or `:`).
fn line(stream: &mut TcpStream, args: &[&str]) -> String {
    let mut request = format!("*{}\r\n", args.len());
    for arg in args {
        request.push_str(&format!("${}\r\n{arg}\r\n", arg.len()));
    }
    let reply = String::from_utf8(exchange(stream, request.as_bytes(), b"\r\n")).unwrap();
    let (line, rest) = reply.split_once("\r\n").expect("a whole line");
    assert!(rest.is_empty(), "one reply, one line: {reply:?}");
    line.to_string()
}

/// A JSON-form error line split into its code word and its JSON.
fn json_error(line: &str) -> (String, Value) {
    let (word, json) = line.strip_prefix('-').and_then(|l| l.split_once(' ')).expect("-CODE {json}");
    let json: Value = serde_json::from_str(json).unwrap_or_else(|e| panic!("{line}: {e}"));
    assert_eq!(json["code"].as_str().map(str::to_ascii_uppercase).as_deref(), Some(word), "{line}");
    (word.to_string(), json)
}

/// The line for `error` in the JSON form, with `place` (`("document", 2)`) when a
/// multi-operation write names one; and the line, read back, rebuilds `error`.
fn assert_engine_error(line: &str, error: &Error, place: Option<(&str, u64)>) {
    let (word, json) = json_error(line);
    assert_eq!(word, error.code().as_str().to_ascii_uppercase());
    let mut expected = error.to_json();
    if let Some((what, n)) = place {
        expected.as_object_mut().unwrap().insert(what.into(), n.into());
    }
    assert_eq!(json, expected, "{line}");
    assert_eq!(Error::from_json(&json).as_ref(), Some(error), "{line}");
}

const PK: &str = r#"[{"field": "id", "type": "int", "index": "hash", "pk": true}]"#;

#[test]
fn json_errors_carry_code_kind_context_and_place() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let mut c = server.raw();
    assert_eq!(line(&mut c, &["DOC.ERRORS"]), "+TEXT", "every connection starts with TEXT");
    assert_eq!(line(&mut c, &["DOC.ERRORS", "json"]), "+OK");
    assert_eq!(line(&mut c, &["DOC.ERRORS"]), "+JSON");

    // The whole line, byte for byte: the form is a contract.
    assert_eq!(
        line(&mut c, &["DOC.GET", "nope", "1"]),
        r#"-NOT_FOUND {"code":"not_found","error":"namespace 'nope' does not exist","kind":"UnknownNamespace","namespace":"nope"}"#
    );
    assert_eq!(line(&mut c, &["DOC.NSCREATE", "books", PK]), "+OK");
    let exists = Error::NamespaceExists { namespace: "books".into() };
    assert_engine_error(&line(&mut c, &["DOC.NSCREATE", "books", PK]), &exists, None);
    assert_eq!(line(&mut c, &["DOC.UPSERT", "books", r#"{"id": 1}"#, r#"{"id": 2}"#]), ":2");

    // Writes: the refused document's place is a field, never a prefix of the message.
    let duplicate = Error::DuplicateKey { namespace: "books".into(), key: "1".into() };
    let many = line(&mut c, &["DOC.INSERT", "books", r#"{"id": 4}"#, r#"{"id": 1}"#]);
    assert_engine_error(&many, &duplicate, Some(("document", 2)));
    let one = line(&mut c, &["DOC.INSERT", "books", r#"{"id": 1}"#]);
    assert_engine_error(&one, &duplicate, Some(("document", 1)));
    assert!(one.contains(r#""error":"duplicate primary key 1 in namespace 'books'""#), "{one}");
    let missing = Error::NotFound { namespace: "books".into(), key: "77".into() };
    let txn = line(&mut c, &["DOC.TXN", "books", "UPSERT", r#"{"id": 5}"#, "DELETE", "1", "UPDATE", r#"{"id": 77}"#]);
    assert_engine_error(&txn, &missing, Some(("operation", 3)));
    let wrong_type = line(&mut c, &["DOC.UPSERT", "books", r#"{"id": "x"}"#]);
    let (word, json) = json_error(&wrong_type);
    assert_eq!((word.as_str(), &json["kind"], &json["field"]), ("BAD_DOCUMENT", &json!("WrongType"), &json!("id")));
    assert_eq!(json["document"], 1);
    let no_key = Error::MissingKey { namespace: "books".into(), field: "id".into() };
    assert_engine_error(&line(&mut c, &["DOC.UPSERT", "books", r#"{"name": "x"}"#]), &no_key, Some(("document", 1)));

    // Indexes, queries, limits.
    let no_index = Error::UnknownIndex { namespace: "books".into(), index: "nope".into() };
    assert_engine_error(&line(&mut c, &["DOC.INDEXDROP", "books", "nope"]), &no_index, None);
    let (word, json) = json_error(&line(&mut c, &["DOC.INDEXADD", "books", r#"{"field": "x", "type": "intt"}"#]));
    assert_eq!((word.as_str(), &json["kind"]), ("SCHEMA", &json!("InvalidIndex")), "{json}");
    let (word, json) = json_error(&line(&mut c, &["DOC.QUERY", r#"{"namespace": "books", "limit": "x"}"#]));
    assert_eq!((word.as_str(), &json["kind"]), ("BAD_QUERY", &json!("InvalidQuery")), "{json}");
    let many_indexes: Vec<Value> =
        (0..65).map(|i| json!({"field": format!("f{i}"), "type": "int", "index": "hash", "pk": i == 0})).collect();
    let too_many = line(&mut c, &["DOC.NSCREATE", "wide", &Value::Array(many_indexes).to_string()]);
    let limit = Error::LimitExceeded { what: "indexes_max", limit: 64, actual: 65 };
    assert_engine_error(&too_many, &limit, None);
    assert!(too_many.contains(r#""what":"indexes_max","limit":64,"actual":65"#), "{too_many}");

    // SQL that does not parse: its line and column as fields, code bad_query.
    let sql = "SELECT *\nFROM books WHERE id = = 1";
    let parsed = hotset_sql::parse(sql).expect_err("the text does not parse");
    assert!(parsed.line == 2 && parsed.column > 0, "{parsed:?}");
    let (word, json) = json_error(&line(&mut c, &["DOC.SQL", sql]));
    let expected = json!({"code": "bad_query", "error": parsed.to_string(), "kind": "Sql",
                          "message": parsed.message, "line": parsed.line, "column": parsed.column});
    assert_eq!((word.as_str(), json), ("BAD_QUERY", expected));
    // SQL that parses and fails in the engine: the engine's error.
    let gone = Error::UnknownNamespace { namespace: "nowhere".into() };
    assert_engine_error(&line(&mut c, &["DOC.SQL", "SELECT * FROM nowhere"]), &gone, None);

    // Arguments the command cannot read: a code of the server's, no kind.
    let unknown_op = line(&mut c, &["DOC.TXN", "books", "MERGE", "{}"]);
    assert_eq!(unknown_op, r#"-BAD_REQUEST {"code":"bad_request","error":"unknown operation 'MERGE'","operation":1}"#);
    let (word, json) = json_error(&line(&mut c, &["DOC.UPSERT", "books", "{oops"]));
    assert_eq!(word, "BAD_DOCUMENT");
    assert!(json["error"].as_str().unwrap().starts_with("a document is not valid JSON: "), "{json}");
    assert_eq!(json["document"], 1, "the refused document's place: {json}");
    assert_eq!(Error::from_json(&json), None, "not an engine error");
    let (word, _) = json_error(&line(&mut c, &["DOC.QUERY", "{oops"]));
    assert_eq!(word, "BAD_QUERY");
    let (word, _) = json_error(&line(&mut c, &["DOC.ERRORS", "XML"]));
    assert_eq!(word, "BAD_REQUEST");

    // Errors before a command runs stay Redis lines in either form.
    assert_eq!(line(&mut c, &["DOC.GET", "books"]), "-ERR wrong number of arguments for 'doc.get' command");
    // The form belongs to the connection: another one still has TEXT.
    let mut other = server.raw();
    assert_eq!(line(&mut other, &["DOC.GET", "nope", "1"]), "-NOT_FOUND namespace 'nope' does not exist");
    server.stop();
}

#[test]
fn text_errors_lead_with_their_code_and_the_form_switches_back() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let mut c = server.raw();
    assert_eq!(line(&mut c, &["DOC.ERRORS", "JSON"]), "+OK");
    assert_eq!(line(&mut c, &["DOC.ERRORS", "text"]), "+OK");
    assert_eq!(line(&mut c, &["DOC.ERRORS"]), "+TEXT");
    assert_eq!(line(&mut c, &["DOC.GET", "nope", "1"]), "-NOT_FOUND namespace 'nope' does not exist");
    assert_eq!(line(&mut c, &["DOC.NSCREATE", "books", PK]), "+OK");
    assert_eq!(line(&mut c, &["DOC.NSCREATE", "books", PK]), "-ALREADY_EXISTS namespace 'books' already exists");
    assert_eq!(line(&mut c, &["DOC.UPSERT", "books", r#"{"id": 1}"#]), ":1");
    assert_eq!(
        line(&mut c, &["DOC.INSERT", "books", r#"{"id": 4}"#, r#"{"id": 1}"#]),
        "-ALREADY_EXISTS document 2: duplicate primary key 1 in namespace 'books'"
    );
    assert_eq!(
        line(&mut c, &["DOC.INSERT", "books", r#"{"id": 1}"#]),
        "-ALREADY_EXISTS document 1: duplicate primary key 1 in namespace 'books'"
    );
    assert_eq!(
        line(&mut c, &["DOC.TXN", "books", "DELETE", "1", "UPDATE", r#"{"id": 77}"#]),
        "-NOT_FOUND operation 2: no document with primary key 77 in namespace 'books'"
    );
    assert_eq!(
        line(&mut c, &["DOC.TXN", "books", "MERGE", "{}"]),
        "-BAD_REQUEST operation 1: unknown operation 'MERGE'"
    );
    assert_eq!(
        line(&mut c, &["DOC.TXN", "books", "UPSERT", "{}", "DELETE"]),
        "-BAD_REQUEST DOC.TXN takes pairs of an operation and its argument"
    );
    assert!(
        line(&mut c, &["DOC.UPSERT", "books", "{oops"])
            .starts_with("-BAD_DOCUMENT document 1: a document is not valid JSON: ")
    );
    let sql = line(&mut c, &["DOC.SQL", "SELECT *\nFROM books WHERE id = = 1"]);
    let parsed = hotset_sql::parse("SELECT *\nFROM books WHERE id = = 1").unwrap_err();
    assert_eq!(sql, format!("-BAD_QUERY {parsed}"));
    assert_eq!(line(&mut c, &["DOC.SCAN", "books", "x"]), "-BAD_REQUEST invalid cursor");
    assert_eq!(line(&mut c, &["DOC.ERRORS", "XML"]), "-BAD_REQUEST DOC.ERRORS takes JSON or TEXT");
    // RESET gives the connection back as a new one: TEXT again.
    assert_eq!(line(&mut c, &["DOC.ERRORS", "JSON"]), "+OK");
    assert_eq!(line(&mut c, &["RESET"]), "+RESET");
    assert_eq!(line(&mut c, &["DOC.ERRORS"]), "+TEXT");
    assert_eq!(line(&mut c, &["DOC.GET", "nope", "1"]), "-NOT_FOUND namespace 'nope' does not exist");
    server.stop();
}
