//! Document commands over RESP: the `DOC.` family, for namespaces, items and queries.
//!
//! Owns: the argument shapes and replies of `DOC.*` commands. Documents, index
//! definitions, queries and results travel as JSON text (bulk strings), in the same shapes
//! as the HTTP API. Never: semantics of their own (the engine's), or long work on the
//! caller's thread beyond one query (a query runs where the connection runs, like any
//! Redis command).
//!
//! | command | reply |
//! |---|---|
//! | `DOC.NSCREATE ns [indexes-json]` | `+OK` |
//! | `DOC.NSDROP ns` / `DOC.NSTRUNCATE ns` | `+OK` |
//! | `DOC.NSLIST` | array of names |
//! | `DOC.NSINFO ns` | JSON: indexes, documents, memory |
//! | `DOC.INDEXADD ns index-json` / `DOC.INDEXDROP ns index` | `+OK` |
//! | `DOC.UPSERT ns json [json ...]` (also `DOC.INSERT`, `DOC.UPDATE`) | count written, all or nothing |
//! | `DOC.TXN ns op arg [op arg ...]` (`op`: UPSERT, INSERT, UPDATE doc-json; DELETE key) | operations applied, all or nothing |
//! | `DOC.GET ns key` | the document, or null (`key` is JSON text when it parses) |
//! | `DOC.DEL ns key` | 1 or 0 |
//! | `DOC.SCAN ns cursor [COUNT n]` | `[next-cursor, [documents]]`, like SCAN (`Database::scan`; COUNT defaults to 100) |
//! | `DOC.QUERY query-json` / `DOC.QUERY ns query-json` | JSON result: items, total, aggregations |
//! | `DOC.EXPLAIN query-json` | the same, with `explain` |
//! | `DOC.SQL text` | the statement's JSON answer (`hotset_sql`) |
//! | `DOC.SEARCH search-json` | full-text search across namespaces (`hotset_core::Search`): items with `_namespace` and `_rank`, total |
//! | `DOC.ERRORS [JSON\|TEXT]` | `+OK`; without an argument, the connection's error form |
//!
//! Errors come in one of two forms, chosen per connection by `DOC.ERRORS` (TEXT until a
//! client asks, and again after `RESET`): TEXT is a plain Redis line, `-<CODE> message`
//! (`-MISCONF reason` when the log cannot write), with a refused operation of a
//! multi-document write named in front (`-ALREADY_EXISTS document 2: ...`); JSON is
//! `-<CODE> <json>`. CODE is the upper-cased `hotset_core::error::ErrorCode` in both
//! forms, and json the engine error's JSON form
//! (`Error::to_json`), the refused operation's place as a field of its own
//! (`"document": 2`, `"operation": 3`), a SQL text that does not parse as
//! `{"code": "bad_query", "error", "kind": "Sql", "message", "line", "column"}`, and an
//! argument the command cannot read as `{"code", "error"}` without a `kind`. Errors
//! before a command runs (arity, NOAUTH, unknown command) and MISCONF for a batch whose log
//! write failed stay Redis lines in either form.

use super::Session;
use super::args::{CmdError, CmdResult};
use crate::resp::reply::Reply;
use crate::state::ServerState;
use hotset_core::error::ErrorCode;
use hotset_core::query::dsl;
use hotset_core::{Database, Error, IndexDef};
use serde_json::Value;
use std::sync::Arc;

/// Runs the `DOC.*` command `a[0]`: the table's handler for every `DOC.*` entry until
/// each has its own. A refusal is written in the error form the connection chose
/// (`DOC.ERRORS`).
pub fn run(state: &Arc<ServerState>, session: &mut Session, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    let name = super::table::lookup(a[0]).expect("the table dispatched this request").name;
    let done = match name {
        "DOC.ERRORS" => errors_form(session, a, r),
        _ => command(state, name, a, r),
    };
    let handled =
        done.map_err(|refusal| CmdError(if session.errors_json { refusal.json_line() } else { refusal.text_line() }))?;
    assert!(handled, "every document command in the table has a handler: {name}");
    Ok(())
}

/// `DOC.ERRORS [JSON|TEXT]`: sets the connection's error form, or answers it.
fn errors_form(session: &mut Session, a: &[&[u8]], r: &mut Reply<'_>) -> Result<bool, Refusal> {
    match a {
        [_] => r.simple(if session.errors_json { "JSON" } else { "TEXT" }),
        [_, form] if form.eq_ignore_ascii_case(b"JSON") => {
            session.errors_json = true;
            r.ok();
        }
        [_, form] if form.eq_ignore_ascii_case(b"TEXT") => {
            session.errors_json = false;
            r.ok();
        }
        _ => return Err(Refusal::request("DOC.ERRORS takes JSON or TEXT")),
    }
    Ok(true)
}

fn command(state: &ServerState, name: &str, a: &[&[u8]], r: &mut Reply<'_>) -> Result<bool, Refusal> {
    let db: &Database = &state.db;
    match name {
        "DOC.NSCREATE" => {
            let indexes = match a.get(2) {
                None => Vec::new(),
                Some(defs) => match parse_json(defs, "the index definitions", ErrorCode::Schema)? {
                    Value::Array(defs) => defs.iter().map(IndexDef::from_json).collect::<Result<Vec<_>, _>>()?,
                    _ => {
                        return Err(Refusal::Request {
                            code: ErrorCode::Schema,
                            message: "the index definitions must be a JSON list".into(),
                            at: None,
                        });
                    }
                },
            };
            db.create_namespace(&text(a[1])?, indexes)?;
            r.ok();
        }
        "DOC.NSDROP" => {
            db.drop_namespace(&text(a[1])?)?;
            r.ok();
        }
        "DOC.NSTRUNCATE" => {
            db.truncate(&text(a[1])?)?;
            r.ok();
        }
        "DOC.NSLIST" => {
            let names = db.namespace_names();
            r.array(names.len());
            names.iter().for_each(|n| r.bulk(n.as_bytes()));
        }
        "DOC.NSINFO" => {
            let info = db.describe(&text(a[1])?)?;
            r.bulk(info.to_json().to_string().as_bytes());
        }
        "DOC.INDEXADD" => {
            let def = IndexDef::from_json(&parse_json(a[2], "the index definition", ErrorCode::Schema)?)?;
            db.add_index(&text(a[1])?, def)?;
            r.ok();
        }
        "DOC.INDEXDROP" => {
            db.drop_index(&text(a[1])?, &text(a[2])?)?;
            r.ok();
        }
        "DOC.UPSERT" | "DOC.INSERT" | "DOC.UPDATE" => r.int(write(db, name, a)? as i64),
        "DOC.TXN" => r.int(transaction(db, a)? as i64),
        "DOC.GET" => {
            let doc = db.get(&text(a[1])?, &key(a[2]))?;
            r.bulk_or_null(doc.as_deref());
        }
        "DOC.DEL" => r.int(i64::from(db.delete(&text(a[1])?, &key(a[2]))?)),
        "DOC.QUERY" | "DOC.EXPLAIN" => query(state, name, a, r)?,
        "DOC.SEARCH" => {
            let search = parse_json(a[1], "the search", ErrorCode::BadQuery)?;
            let mut search = hotset_core::Search::from_json(&search)?;
            state.limit_search(&mut search);
            r.bulk(db.search(&search)?.to_json().to_string().as_bytes());
        }
        "DOC.SCAN" => scan(db, a, r)?,
        "DOC.SQL" => {
            let mut statement = hotset_sql::parse(&text(a[1])?).map_err(Refusal::Sql)?;
            state.limit_sql(&mut statement);
            r.bulk(&hotset_sql::execute(db, &statement)?);
        }
        _ => return Ok(false),
    }
    Ok(true)
}

/// `DOC.UPSERT|INSERT|UPDATE ns doc...`: every document or none; how many were written.
fn write(db: &Database, name: &str, a: &[&[u8]]) -> Result<usize, Refusal> {
    let mut txn = db.transaction(&text(a[1])?)?;
    for (i, doc) in a[2..].iter().enumerate() {
        let doc = parse_json(doc, "a document", ErrorCode::BadDocument)?;
        let written = match name {
            "DOC.INSERT" => txn.insert(doc),
            "DOC.UPDATE" => txn.update(doc),
            _ => txn.upsert(doc),
        };
        written.map_err(|error| Refusal::Engine { error, at: Some(("document", i + 1)) })?;
    }
    commit(txn, "document")
}

/// `DOC.TXN ns op arg [op arg ...]`: mixed operations, all or none; how many applied.
fn transaction(db: &Database, a: &[&[u8]]) -> Result<usize, Refusal> {
    let operations = &a[2..];
    if !operations.len().is_multiple_of(2) {
        return Err(Refusal::request("DOC.TXN takes pairs of an operation and its argument"));
    }
    let mut txn = db.transaction(&text(a[1])?)?;
    for (i, pair) in operations.chunks(2).enumerate() {
        let at = Some(("operation", i + 1));
        let done = match pair[0].to_ascii_uppercase().as_slice() {
            b"DELETE" => txn.delete(key(pair[1])),
            b"UPSERT" => txn.upsert(parse_json(pair[1], "a document", ErrorCode::BadDocument)?),
            b"INSERT" => txn.insert(parse_json(pair[1], "a document", ErrorCode::BadDocument)?),
            b"UPDATE" => txn.update(parse_json(pair[1], "a document", ErrorCode::BadDocument)?),
            _ => {
                let op = String::from_utf8_lossy(pair[0]);
                let message = format!("unknown operation '{op}'");
                return Err(Refusal::Request { code: ErrorCode::BadRequest, message, at });
            }
        };
        done.map_err(|error| Refusal::Engine { error, at })?;
    }
    commit(txn, "operation")
}

/// `DOC.QUERY|EXPLAIN [ns] query-json`.
fn query(state: &ServerState, name: &str, a: &[&[u8]], r: &mut Reply<'_>) -> Result<(), Refusal> {
    let (namespace, body) = match a {
        [_, body] => (None, body),
        [_, namespace, body] => (Some(text(namespace)?), body),
        _ => {
            return Err(Refusal::request(format!(
                "wrong number of arguments for '{}' command",
                name.to_ascii_lowercase()
            )));
        }
    };
    let body = parse_json(body, "the query", ErrorCode::BadQuery)?;
    let mut query = dsl::query_from_json(&body, namespace.as_deref())?;
    query.explain |= name == "DOC.EXPLAIN";
    state.limit_query(&mut query);
    let result = state.db.query(&query)?;
    let mut out = Vec::with_capacity(256 + result.items.len() * 128);
    dsl::write_result_json(&result, &mut out);
    r.bulk(&out);
    Ok(())
}

/// `DOC.SCAN ns cursor [COUNT n]`.
fn scan(db: &Database, a: &[&[u8]], r: &mut Reply<'_>) -> Result<(), Refusal> {
    let cursor: u64 = std::str::from_utf8(a[2])
        .ok()
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| Refusal::request("invalid cursor"))?;
    let count = match &a[3..] {
        [] => SCAN_COUNT_DEFAULT,
        [option, n] if option.eq_ignore_ascii_case(b"COUNT") => std::str::from_utf8(n)
            .ok()
            .and_then(|n| n.parse::<usize>().ok())
            .filter(|&n| n > 0)
            .ok_or_else(|| Refusal::request("value is not an integer or out of range"))?,
        _ => return Err(Refusal::request("syntax error")),
    };
    let (next, docs) = db.scan(&text(a[1])?, cursor, count.min(SCAN_COUNT_MAX))?;
    r.array(2);
    r.bulk(next.to_string().as_bytes());
    r.array(docs.len());
    docs.iter().for_each(|doc| r.bulk(doc));
    Ok(())
}

/// Why a `DOC.*` command failed, before it is written in the connection's error form.
enum Refusal {
    /// An engine error; `at`: the refused operation of a multi-operation write (`document`
    /// or `operation`, counting from 1).
    Engine { error: Error, at: Option<(&'static str, usize)> },
    /// SQL text that does not parse, or says what the engine would refuse (its own code).
    Sql(hotset_sql::SqlError),
    /// Arguments the command cannot read (not JSON where JSON is due, an unknown
    /// operation...): an error of the server's, not the engine's.
    Request { code: ErrorCode, message: String, at: Option<(&'static str, usize)> },
}

impl From<Error> for Refusal {
    fn from(error: Error) -> Refusal {
        Refusal::Engine { error, at: None }
    }
}

impl Refusal {
    fn request(message: impl Into<String>) -> Refusal {
        Refusal::Request { code: ErrorCode::BadRequest, message: message.into(), at: None }
    }

    /// The TEXT form: the error's code as the prefix word, then `[document 2: ]message`
    /// (`NOT_FOUND namespace 'x' does not exist`), so a Redis client branches on the word
    /// as it does on `WRONGTYPE`; `MISCONF reason` for a log that cannot write, which
    /// Redis clients know.
    fn text_line(&self) -> String {
        let place = |at: &Option<(&str, usize)>| at.map(|(what, n)| format!("{what} {n}: ")).unwrap_or_default();
        let word = |code: ErrorCode| code.as_str().to_ascii_uppercase();
        match self {
            Refusal::Engine { error: Error::Storage { reason }, at: None } => format!("MISCONF {reason}"),
            Refusal::Engine { error, at } => format!("{} {}{error}", word(error.code()), place(at)),
            Refusal::Sql(error) => format!("{} {error}", word(error.code)),
            Refusal::Request { code, message, at } => format!("{} {}{message}", word(*code), place(at)),
        }
    }

    /// The JSON form: `CODE {json}`, the place of a refused operation as a field.
    fn json_line(&self) -> String {
        let (code, mut json, at) = match self {
            Refusal::Engine { error, at } => (error.code(), error.to_json(), at),
            Refusal::Sql(error) => {
                let json = serde_json::json!({
                    "code": error.code.as_str(),
                    "error": error.to_string(),
                    "kind": "Sql",
                    "message": error.message,
                    "line": error.line,
                    "column": error.column,
                });
                (error.code, json, &None)
            }
            Refusal::Request { code, message, at } => {
                (*code, serde_json::json!({"code": code.as_str(), "error": message}), at)
            }
        };
        if let (Some((what, n)), Value::Object(object)) = (at, &mut json) {
            object.insert((*what).to_string(), Value::from(*n));
        }
        // serde_json escapes control characters, so the line holds no CR or LF.
        format!("{} {json}", code.as_str().to_ascii_uppercase())
    }
}

/// Documents a `DOC.SCAN` returns when COUNT is not given, and the most it returns.
const SCAN_COUNT_DEFAULT: usize = 100;
const SCAN_COUNT_MAX: usize = 100_000;

/// Commits a transaction; a refused operation is named by its place (`document 2`,
/// counting from 1).
fn commit(txn: hotset_core::Transaction<'_>, what: &'static str) -> Result<usize, Refusal> {
    txn.commit_naming_failure()
        .map_err(|(position, error)| Refusal::Engine { error, at: position.map(|position| (what, position + 1)) })
}

/// `arg` as JSON; `code` says what JSON that does not parse is (a bad document, query...).
fn parse_json(arg: &[u8], what: &str, code: ErrorCode) -> Result<Value, Refusal> {
    serde_json::from_slice(arg).map_err(|e| Refusal::Request {
        code,
        message: format!("{what} is not valid JSON: {e}"),
        at: None,
    })
}

fn text(arg: &[u8]) -> Result<String, Refusal> {
    String::from_utf8(arg.to_vec()).map_err(|_| Refusal::request("names must be UTF-8"))
}

/// A key argument: JSON text when it parses (numbers, arrays for composite keys, quoted
/// strings), the bytes as a string otherwise.
fn key(arg: &[u8]) -> Value {
    serde_json::from_slice(arg).unwrap_or_else(|_| Value::String(String::from_utf8_lossy(arg).into_owned()))
}
