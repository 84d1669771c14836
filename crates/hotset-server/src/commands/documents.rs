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

use super::args::CmdError;
use crate::resp::reply::Reply;
use crate::state::ServerState;
use hotset_core::query::dsl;
use hotset_core::{Database, Error, IndexDef};
use serde_json::Value;

/// Runs `DOC.*` command `name` (upper case); `Ok(false)` when it is not one.
pub fn run(state: &ServerState, name: &str, a: &[&[u8]], r: &mut Reply<'_>) -> Result<bool, CmdError> {
    let db: &Database = &state.db;
    match name {
        "DOC.NSCREATE" => {
            let indexes = match a.get(2) {
                None => Vec::new(),
                Some(defs) => match parse_json(defs, "the index definitions")? {
                    Value::Array(defs) => {
                        defs.iter().map(IndexDef::from_json).collect::<Result<Vec<_>, _>>().map_err(engine)?
                    }
                    _ => return Err(CmdError("ERR the index definitions must be a JSON list".into())),
                },
            };
            db.create_namespace(&text(a[1])?, indexes).map_err(engine)?;
            r.ok();
        }
        "DOC.NSDROP" => {
            db.drop_namespace(&text(a[1])?).map_err(engine)?;
            r.ok();
        }
        "DOC.NSTRUNCATE" => {
            db.truncate(&text(a[1])?).map_err(engine)?;
            r.ok();
        }
        "DOC.NSLIST" => {
            let names = db.namespace_names();
            r.array(names.len());
            names.iter().for_each(|n| r.bulk(n.as_bytes()));
        }
        "DOC.NSINFO" => {
            let info = db.describe(&text(a[1])?).map_err(engine)?;
            r.bulk(info.to_json().to_string().as_bytes());
        }
        "DOC.INDEXADD" => {
            let def = IndexDef::from_json(&parse_json(a[2], "the index definition")?).map_err(engine)?;
            db.add_index(&text(a[1])?, def).map_err(engine)?;
            r.ok();
        }
        "DOC.INDEXDROP" => {
            db.drop_index(&text(a[1])?, &text(a[2])?).map_err(engine)?;
            r.ok();
        }
        "DOC.UPSERT" | "DOC.INSERT" | "DOC.UPDATE" => {
            let mut txn = db.transaction(&text(a[1])?).map_err(engine)?;
            for (i, doc) in a[2..].iter().enumerate() {
                let doc = parse_json(doc, "a document")?;
                let written = match name {
                    "DOC.INSERT" => txn.insert(doc),
                    "DOC.UPDATE" => txn.update(doc),
                    _ => txn.upsert(doc),
                };
                written.map_err(|e| CmdError(format!("ERR document {}: {e}", i + 1)))?;
            }
            r.int(commit(txn, "document")? as i64);
        }
        "DOC.TXN" => {
            let operations = &a[2..];
            if !operations.len().is_multiple_of(2) {
                return Err(CmdError("ERR DOC.TXN takes pairs of an operation and its argument".into()));
            }
            let mut txn = db.transaction(&text(a[1])?).map_err(engine)?;
            for (i, pair) in operations.chunks(2).enumerate() {
                let done = match pair[0].to_ascii_uppercase().as_slice() {
                    b"DELETE" => txn.delete(key(pair[1])),
                    b"UPSERT" => txn.upsert(parse_json(pair[1], "a document")?),
                    b"INSERT" => txn.insert(parse_json(pair[1], "a document")?),
                    b"UPDATE" => txn.update(parse_json(pair[1], "a document")?),
                    _ => {
                        let op = String::from_utf8_lossy(pair[0]);
                        return Err(CmdError(format!("ERR operation {}: unknown operation '{op}'", i + 1)));
                    }
                };
                done.map_err(|e| CmdError(format!("ERR operation {}: {e}", i + 1)))?;
            }
            r.int(commit(txn, "operation")? as i64);
        }
        "DOC.GET" => {
            let doc = db.get(&text(a[1])?, &key(a[2])).map_err(engine)?;
            r.bulk_or_null(doc.as_deref());
        }
        "DOC.DEL" => r.int(i64::from(db.delete(&text(a[1])?, &key(a[2])).map_err(engine)?)),
        "DOC.QUERY" | "DOC.EXPLAIN" => {
            let (namespace, body) = match a {
                [_, body] => (None, body),
                [_, namespace, body] => (Some(text(namespace)?), body),
                _ => {
                    return Err(CmdError(format!(
                        "ERR wrong number of arguments for '{}' command",
                        name.to_ascii_lowercase()
                    )));
                }
            };
            let mut query =
                dsl::query_from_json(&parse_json(body, "the query")?, namespace.as_deref()).map_err(engine)?;
            query.explain |= name == "DOC.EXPLAIN";
            state.limit_query(&mut query);
            let result = db.query(&query).map_err(engine)?;
            let mut out = Vec::with_capacity(256 + result.items.len() * 128);
            dsl::write_result_json(&result, &mut out);
            r.bulk(&out);
        }
        "DOC.SEARCH" => {
            let mut search = hotset_core::Search::from_json(&parse_json(a[1], "the search")?).map_err(engine)?;
            state.limit_search(&mut search);
            r.bulk(db.search(&search).map_err(engine)?.to_json().to_string().as_bytes());
        }
        "DOC.SCAN" => {
            let cursor: u64 = std::str::from_utf8(a[2])
                .ok()
                .and_then(|c| c.parse().ok())
                .ok_or_else(|| CmdError("ERR invalid cursor".into()))?;
            let count = match &a[3..] {
                [] => SCAN_COUNT_DEFAULT,
                [option, n] if option.eq_ignore_ascii_case(b"COUNT") => std::str::from_utf8(n)
                    .ok()
                    .and_then(|n| n.parse::<usize>().ok())
                    .filter(|&n| n > 0)
                    .ok_or_else(|| CmdError("ERR value is not an integer or out of range".into()))?,
                _ => return Err(CmdError("ERR syntax error".into())),
            };
            let (next, docs) = db.scan(&text(a[1])?, cursor, count.min(SCAN_COUNT_MAX)).map_err(engine)?;
            r.array(2);
            r.bulk(next.to_string().as_bytes());
            r.array(docs.len());
            docs.iter().for_each(|doc| r.bulk(doc));
        }
        "DOC.SQL" => {
            let mut statement = hotset_sql::parse(&text(a[1])?).map_err(|e| CmdError(format!("ERR {e}")))?;
            state.limit_sql(&mut statement);
            r.bulk(&hotset_sql::execute(db, &statement).map_err(engine)?);
        }
        _ => return Ok(false),
    }
    Ok(true)
}

/// Documents a `DOC.SCAN` returns when COUNT is not given, and the most it returns.
const SCAN_COUNT_DEFAULT: usize = 100;
const SCAN_COUNT_MAX: usize = 100_000;

/// Commits a transaction; a refused operation is named by its place (`ERR document 2:
/// ...`, counting from 1).
fn commit(txn: hotset_core::Transaction<'_>, what: &str) -> Result<usize, CmdError> {
    txn.commit_naming_failure().map_err(|(position, error)| match position {
        Some(position) => CmdError(format!("ERR {what} {}: {error}", position + 1)),
        None => engine(error),
    })
}

/// An engine error as a Redis error line: `ERR` and the engine's message, except a log
/// that cannot write, which Redis clients know as `MISCONF`.
fn engine(error: Error) -> CmdError {
    match error {
        Error::Storage { reason } => CmdError(format!("MISCONF {reason}")),
        other => CmdError(format!("ERR {other}")),
    }
}

fn parse_json(arg: &[u8], what: &str) -> Result<Value, CmdError> {
    serde_json::from_slice(arg).map_err(|e| CmdError(format!("ERR {what} is not valid JSON: {e}")))
}

fn text(arg: &[u8]) -> Result<String, CmdError> {
    String::from_utf8(arg.to_vec()).map_err(|_| CmdError("ERR names must be UTF-8".into()))
}

/// A key argument: JSON text when it parses (numbers, arrays for composite keys, quoted
/// strings), the bytes as a string otherwise.
fn key(arg: &[u8]) -> Value {
    serde_json::from_slice(arg).unwrap_or_else(|_| Value::String(String::from_utf8_lossy(arg).into_owned()))
}
