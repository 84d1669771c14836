//! Document commands over RESP: the `DOC.` family, for namespaces, items and queries.
//!
//! Owns: the argument shapes and replies of `DOC.*` commands: each decodes its arguments
//! into a `hotset_ops::Request` and encodes the `Answer`. Documents, index definitions,
//! queries and results travel as JSON text (bulk strings), in the same shapes as the HTTP
//! API. Never: semantics of their own (`hotset_ops` and the engine hold them), or a
//! request that blocks (`Request::blocks`: writes, index builds, searches, SAVE) run as if
//! it did not: those leave the I/O thread's other connections to another thread
//! (`tokio::task::block_in_place`) while they run; reads run where the connection runs,
//! like any Redis command.
//!
//! | command | reply |
//! |---|---|
//! | `DOC.NSCREATE ns [indexes-json]` | `+OK` |
//! | `DOC.NSDROP ns` / `DOC.NSTRUNCATE ns` | `+OK` |
//! | `DOC.NSLIST` | array of names |
//! | `DOC.NSINFO ns` | JSON: indexes, documents, memory |
//! | `DOC.INDEXADD ns index-json` / `DOC.INDEXDROP ns index` | `+OK` |
//! | `DOC.UPSERT ns json [json ...]` (also `DOC.INSERT`, `DOC.UPDATE`) | count written, all or nothing |
//! | `DOC.TXN ns op arg [op arg ...]` (`op`: UPSERT, INSERT, UPDATE doc-json; DELETE key; NS name: the namespace of the operations after it, not counted as one) | operations applied, all or nothing, in every namespace named |
//! | `DOC.GET ns key [AFTER source:position ...]` | the document, or null (`key` is JSON text when it parses) |
//! | `DOC.DEL ns key` | 1 or 0 |
//! | `DOC.SCAN ns cursor [COUNT n]` | `[next-cursor, [documents]]`, like SCAN (`Database::scan`; COUNT defaults to 100) |
//! | `DOC.QUERY query-json` / `DOC.QUERY ns query-json` | JSON result: items, total, aggregations (and `positions`, below) |
//! | `DOC.EXPLAIN query-json` | the same, with `explain` |
//! | `DOC.SQL text [AFTER source:position ...]` | the statement's JSON answer (`hotset_sql`) |
//! | `DOC.SEARCH search-json` (`"after"` in it as in a query) | full-text search across namespaces (`hotset_core::Search`): items with `_namespace` and `_rank`, total |
//! | `DOC.ERRORS [JSON\|TEXT]` | `+OK`; without an argument, the connection's error form |
//!
//! With live-sync sources, the JSON answers of DOC.QUERY, DOC.EXPLAIN, DOC.SQL and
//! DOC.SEARCH end with `"positions": {"app": "0/16B6C50"}`: each source's applied position
//! (of the namespaces read; every source for SQL), read before the answer is computed.
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
use hotset_core::{Acks, Error};
use hotset_ops::decode::{self, SCAN_COUNT_DEFAULT};
use hotset_ops::{Answer, Cause, Doc, Op, Refusal, Request, WriteMode};
use serde_json::Value;
use std::sync::Arc;

/// The table's handlers, one per command: each runs its body and writes a refusal in the
/// error form the connection chose (`DOC.ERRORS`).
macro_rules! handlers {
    ($($(#[$doc:meta])* $name:ident => $body:ident;)*) => {
        $(
            $(#[$doc])*
            pub fn $name(state: &Arc<ServerState>, session: &mut Session, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
                let done = $body(&Ctx { state, acks: &session.acks }, a, r);
                refused_in_form(session, done)
            }
        )*
    };
}

handlers! {
    /// `DOC.NSCREATE ns [indexes-json]`.
    nscreate => ns_create;
    /// `DOC.NSDROP ns`.
    nsdrop => ns_drop;
    /// `DOC.NSTRUNCATE ns`.
    nstruncate => ns_truncate;
    /// `DOC.NSLIST`.
    nslist => ns_list;
    /// `DOC.NSINFO ns`.
    nsinfo => ns_info;
    /// `DOC.INDEXADD ns index-json`.
    indexadd => index_add;
    /// `DOC.INDEXDROP ns index`.
    indexdrop => index_drop;
    /// `DOC.UPSERT ns doc...`.
    upsert_docs => upsert;
    /// `DOC.INSERT ns doc...`.
    insert_docs => insert;
    /// `DOC.UPDATE ns doc...`.
    update_docs => update;
    /// `DOC.TXN ns op arg...`.
    txn => transaction;
    /// `DOC.GET ns key`.
    get_doc => get;
    /// `DOC.DEL ns key`.
    del_doc => del;
    /// `DOC.QUERY [ns] query-json`.
    query_docs => query;
    /// `DOC.EXPLAIN [ns] query-json`.
    explain_query => explain;
    /// `DOC.SEARCH search-json`.
    search_docs => search;
    /// `DOC.SCAN ns cursor [COUNT n]`.
    scan_docs => scan;
    /// `DOC.SQL text`.
    sql_text => sql;
}

/// `DOC.ERRORS [JSON|TEXT]`.
pub fn errors(_: &Arc<ServerState>, session: &mut Session, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    let done = errors_form(session, a, r);
    refused_in_form(session, done)
}

/// A body's refusal as the connection's error line.
fn refused_in_form(session: &Session, done: Result<(), Refused>) -> CmdResult {
    done.map_err(|refused| CmdError(if session.errors_json { refused.json_line() } else { refused.text_line() }))
}

/// `DOC.ERRORS [JSON|TEXT]`: sets the connection's error form, or answers it.
fn errors_form(session: &mut Session, a: &[&[u8]], r: &mut Reply<'_>) -> Result<(), Refused> {
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
        _ => return Err(Refusal::bad_request("DOC.ERRORS takes JSON or TEXT").into()),
    }
    Ok(())
}

/// Applies a request that answers `Done` with `+OK`.
fn done(cx: &Ctx<'_>, request: Request, r: &mut Reply<'_>) -> Result<(), Refused> {
    cx.apply(request)?;
    r.ok();
    Ok(())
}

/// `DOC.NSCREATE ns [indexes-json]`.
fn ns_create(cx: &Ctx<'_>, a: &[&[u8]], r: &mut Reply<'_>) -> Result<(), Refused> {
    let indexes = match a.get(2) {
        None => Vec::new(),
        Some(defs) => decode::index_defs(&decode::json(defs, "the index definitions", ErrorCode::Schema)?)?,
    };
    done(cx, Request::CreateNamespace { name: decode::name(a[1])?, indexes }, r)
}

fn ns_drop(cx: &Ctx<'_>, a: &[&[u8]], r: &mut Reply<'_>) -> Result<(), Refused> {
    done(cx, Request::DropNamespace { name: decode::name(a[1])? }, r)
}

fn ns_truncate(cx: &Ctx<'_>, a: &[&[u8]], r: &mut Reply<'_>) -> Result<(), Refused> {
    done(cx, Request::Truncate { name: decode::name(a[1])? }, r)
}

fn ns_list(cx: &Ctx<'_>, _: &[&[u8]], r: &mut Reply<'_>) -> Result<(), Refused> {
    let Answer::Names(names) = cx.apply(Request::Namespaces)? else { unreachable!("names answer names") };
    r.array(names.len());
    names.iter().for_each(|n| r.bulk(n.as_bytes()));
    Ok(())
}

fn ns_info(cx: &Ctx<'_>, a: &[&[u8]], r: &mut Reply<'_>) -> Result<(), Refused> {
    let Answer::Namespace(info) = cx.apply(Request::Describe { name: decode::name(a[1])? })? else {
        unreachable!("describe answers a namespace")
    };
    r.bulk(info.to_json().to_string().as_bytes());
    Ok(())
}

fn index_add(cx: &Ctx<'_>, a: &[&[u8]], r: &mut Reply<'_>) -> Result<(), Refused> {
    let index = decode::index_def(a[2])?;
    done(cx, Request::AddIndex { namespace: decode::name(a[1])?, index }, r)
}

fn index_drop(cx: &Ctx<'_>, a: &[&[u8]], r: &mut Reply<'_>) -> Result<(), Refused> {
    done(cx, Request::DropIndex { namespace: decode::name(a[1])?, index: decode::name(a[2])? }, r)
}

fn upsert(cx: &Ctx<'_>, a: &[&[u8]], r: &mut Reply<'_>) -> Result<(), Refused> {
    write(cx, WriteMode::Upsert, a, r)
}

fn insert(cx: &Ctx<'_>, a: &[&[u8]], r: &mut Reply<'_>) -> Result<(), Refused> {
    write(cx, WriteMode::Insert, a, r)
}

fn update(cx: &Ctx<'_>, a: &[&[u8]], r: &mut Reply<'_>) -> Result<(), Refused> {
    write(cx, WriteMode::Update, a, r)
}

/// `DOC.UPSERT|INSERT|UPDATE ns doc...`: every document or none; how many were written.
fn write(cx: &Ctx<'_>, mode: WriteMode, a: &[&[u8]], r: &mut Reply<'_>) -> Result<(), Refused> {
    let ops = a[2..]
        .iter()
        .enumerate()
        .map(|(i, doc)| Ok(Op::Write(mode, Doc::Value(document(doc).map_err(|e| e.placed(i, "document"))?))))
        .collect::<Result<Vec<_>, Refused>>()?;
    count(cx, Request::Write { namespace: decode::name(a[1])?, ops }, "document", r)
}

/// `DOC.TXN ns op arg [op arg ...]`: mixed operations, all or none; how many applied.
/// `NS name` among the pairs turns to another namespace for the operations after it: one
/// transaction over several namespaces, logged as one record and seen whole by readers.
/// Operations are numbered from 1 in the order written, `NS` pairs not counted (as HTTP and
/// the Python package number them).
fn transaction(cx: &Ctx<'_>, a: &[&[u8]], r: &mut Reply<'_>) -> Result<(), Refused> {
    let operations = &a[2..];
    if !operations.len().is_multiple_of(2) {
        return Err(Refusal::bad_request("DOC.TXN takes pairs of an operation and its argument").into());
    }
    // Each operation with the namespace an `NS` pair before it named (none: the first).
    let mut named: Option<String> = None;
    let mut ops: Vec<(Option<String>, Op)> = Vec::with_capacity(operations.len() / 2);
    for pair in operations.chunks(2) {
        let i = ops.len();
        let mode = match pair[0].to_ascii_uppercase().as_slice() {
            b"NS" => {
                named = Some(decode::name(pair[1])?);
                continue;
            }
            b"DELETE" => None,
            b"UPSERT" => Some(WriteMode::Upsert),
            b"INSERT" => Some(WriteMode::Insert),
            b"UPDATE" => Some(WriteMode::Update),
            _ => {
                let op = String::from_utf8_lossy(pair[0]);
                let refusal = Refusal::bad_request(format!("unknown operation '{op}'"));
                return Err(Refused::from(refusal).placed(i, "operation"));
            }
        };
        let op = match mode {
            None => Op::Delete(decode::key(pair[1])),
            Some(mode) => Op::Write(mode, Doc::Value(document(pair[1]).map_err(|e| e.placed(i, "operation"))?)),
        };
        ops.push((named.clone(), op));
    }
    count(cx, Request::transaction(decode::name(a[1])?, ops), "operation", r)
}

/// Trailing `AFTER source:position [source:position ...]` arguments of a read: waits until
/// each source has applied its position (a `timeout` refusal past the server's query
/// limit, else ten seconds). Nothing else may follow a read's own arguments.
fn wait_after(cx: &Ctx<'_>, rest: &[&[u8]]) -> Result<(), Refused> {
    let Some((word, pairs)) = rest.split_first() else { return Ok(()) };
    if !word.eq_ignore_ascii_case(b"AFTER") || pairs.is_empty() {
        return Err(
            Refusal::bad_request("expected AFTER source:position [source:position ...] after the arguments").into()
        );
    }
    let wanted = pairs
        .iter()
        .map(|pair| crate::freshness::source_position(&decode::name(pair)?))
        .collect::<Result<Vec<_>, Refusal>>()?;
    Ok(crate::freshness::wait_blocking(cx.state, &wanted, None)?)
}

/// A document argument, parsed here so a bad one is named by the command's words.
fn document(arg: &[u8]) -> Result<Value, Refused> {
    Ok(decode::json(arg, "a document", ErrorCode::BadDocument)?)
}

/// Applies a write; answers how many operations it applied, or names the refused one as
/// `what` (`document`, `operation`).
fn count(cx: &Ctx<'_>, request: Request, what: &'static str, r: &mut Reply<'_>) -> Result<(), Refused> {
    match cx.apply(request) {
        Ok(Answer::Count(n)) => r.int(n as i64),
        Ok(other) => unreachable!("a write answers a count, not {other:?}"),
        Err(refusal) => return Err(Refused { refusal, what }),
    }
    Ok(())
}

/// `DOC.GET ns key [AFTER source:position ...]`.
fn get(cx: &Ctx<'_>, a: &[&[u8]], r: &mut Reply<'_>) -> Result<(), Refused> {
    wait_after(cx, &a[3..])?;
    let Answer::Document(doc) = cx.apply(Request::Get { namespace: decode::name(a[1])?, key: decode::key(a[2]) })?
    else {
        unreachable!("get answers a document")
    };
    r.bulk_or_null(doc.as_deref());
    Ok(())
}

fn del(cx: &Ctx<'_>, a: &[&[u8]], r: &mut Reply<'_>) -> Result<(), Refused> {
    let request = Request::Delete { namespace: decode::name(a[1])?, key: decode::key(a[2]) };
    let Answer::Deleted(deleted) = cx.apply(request)? else { unreachable!("delete answers deleted") };
    r.int(i64::from(deleted));
    Ok(())
}

fn query(cx: &Ctx<'_>, a: &[&[u8]], r: &mut Reply<'_>) -> Result<(), Refused> {
    run_query(cx, "DOC.QUERY", a, false, r)
}

fn explain(cx: &Ctx<'_>, a: &[&[u8]], r: &mut Reply<'_>) -> Result<(), Refused> {
    run_query(cx, "DOC.EXPLAIN", a, true, r)
}

/// `DOC.QUERY|EXPLAIN [ns] query-json`.
fn run_query(cx: &Ctx<'_>, name: &str, a: &[&[u8]], explain: bool, r: &mut Reply<'_>) -> Result<(), Refused> {
    let (namespace, body) = match a {
        [_, body] => (None, body),
        [_, namespace, body] => (Some(decode::name(namespace)?), body),
        _ => {
            let message = format!("wrong number of arguments for '{}' command", name.to_ascii_lowercase());
            return Err(Refusal::bad_request(message).into());
        }
    };
    let mut body = decode::json(body, "the query", ErrorCode::BadQuery)?;
    let after = crate::freshness::take_after(&mut body)?;
    let mut query = dsl::query_from_json(&body, namespace.as_deref()).map_err(Refusal::from)?;
    query.explain |= explain;
    crate::freshness::wait_blocking(cx.state, &after, query.timeout)?;
    let mut namespaces = vec![query.namespace.as_str()];
    namespaces.extend(query.joins.iter().map(|join| join.query.namespace.as_str()));
    let positions = crate::freshness::positions(cx.state, Some(&namespaces));
    json_answer(cx.apply(Request::Query(query))?, &positions, r);
    Ok(())
}

/// `DOC.SEARCH search-json`; `"after"` in it waits for source positions, as in a query.
fn search(cx: &Ctx<'_>, a: &[&[u8]], r: &mut Reply<'_>) -> Result<(), Refused> {
    let mut search = decode::json(a[1], "the search", ErrorCode::BadQuery)?;
    let after = crate::freshness::take_after(&mut search)?;
    let search = hotset_core::Search::from_json(&search).map_err(Refusal::from)?;
    crate::freshness::wait_blocking(cx.state, &after, None)?;
    let namespaces: Vec<&str> = search.targets.iter().map(|target| target.namespace.as_str()).collect();
    let positions = crate::freshness::positions(cx.state, Some(&namespaces));
    json_answer(cx.apply(Request::Search(search))?, &positions, r);
    Ok(())
}

/// `DOC.SQL text [AFTER source:position ...]`.
fn sql(cx: &Ctx<'_>, a: &[&[u8]], r: &mut Reply<'_>) -> Result<(), Refused> {
    let text = decode::name(a[1])?;
    wait_after(cx, &a[2..])?;
    let positions = crate::freshness::positions(cx.state, None);
    json_answer(cx.apply(Request::Sql(text))?, &positions, r);
    Ok(())
}

/// A query's, search's or SQL statement's answer as one bulk string of JSON; with the
/// live-sync `positions` it reflects (when there are any) as its last field,
/// `"positions": {"app": "0/16B6C50"}`.
fn json_answer(answer: Answer, positions: &[(String, String)], r: &mut Reply<'_>) {
    let mut out = match answer {
        Answer::Query(result) => {
            let mut out = Vec::with_capacity(256 + result.items.len() * 128);
            dsl::write_result_json(&result, &mut out);
            out
        }
        Answer::Search(result) => result.to_json().to_string().into_bytes(),
        Answer::Json(out) => out,
        other => unreachable!("a query, search or statement does not answer {other:?}"),
    };
    if !positions.is_empty() && out.last() == Some(&b'}') {
        let positions: serde_json::Map<String, serde_json::Value> =
            positions.iter().map(|(source, position)| (source.clone(), position.as_str().into())).collect();
        out.pop();
        if out.last() != Some(&b'{') {
            out.push(b',');
        }
        out.extend_from_slice(b"\"positions\":");
        out.extend_from_slice(serde_json::Value::Object(positions).to_string().as_bytes());
        out.push(b'}');
    }
    r.bulk(&out);
}

/// `DOC.SCAN ns cursor [COUNT n]`.
fn scan(cx: &Ctx<'_>, a: &[&[u8]], r: &mut Reply<'_>) -> Result<(), Refused> {
    let cursor: u64 = std::str::from_utf8(a[2])
        .ok()
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| Refusal::bad_request("invalid cursor"))?;
    let count = match &a[3..] {
        [] => SCAN_COUNT_DEFAULT,
        [option, n] if option.eq_ignore_ascii_case(b"COUNT") => std::str::from_utf8(n)
            .ok()
            .and_then(|n| n.parse::<usize>().ok())
            .filter(|&n| n > 0)
            .ok_or_else(|| Refusal::bad_request("value is not an integer or out of range"))?,
        _ => return Err(Refusal::bad_request("syntax error").into()),
    };
    let Answer::Scan { next, documents } = cx.apply(Request::Scan { namespace: decode::name(a[1])?, cursor, count })?
    else {
        unreachable!("a scan answers a step")
    };
    r.array(2);
    r.bulk(next.to_string().as_bytes());
    r.array(documents.len());
    documents.iter().for_each(|doc| r.bulk(doc));
    Ok(())
}

/// What a command's body applies its request through: the server, and the batch's
/// collector its writes note their log records into (`Session::acks`).
struct Ctx<'a> {
    state: &'a ServerState,
    acks: &'a Acks,
}

impl Ctx<'_> {
    fn apply(&self, request: Request) -> Result<Answer, Refusal> {
        super::apply(self.state, self.acks, request)
    }
}

/// A refusal, with what a place in it names (`document`, `operation`).
struct Refused {
    refusal: Refusal,
    what: &'static str,
}

impl From<Refusal> for Refused {
    fn from(refusal: Refusal) -> Refused {
        Refused { refusal, what: "document" }
    }
}

impl From<Error> for Refused {
    fn from(error: Error) -> Refused {
        Refused::from(Refusal::from(error))
    }
}

impl Refused {
    /// The refusal of the operation at `at` (from 0), named as `what`.
    fn placed(mut self, at: usize, what: &'static str) -> Refused {
        self.refusal.at = Some(at);
        self.what = what;
        self
    }

    /// `document 2: `, or nothing.
    fn place(&self) -> String {
        self.refusal.at.map(|at| format!("{} {}: ", self.what, at + 1)).unwrap_or_default()
    }

    /// The TEXT form: the error's code as the prefix word, then `[document 2: ]message`
    /// (`NOT_FOUND namespace 'x' does not exist`), so a Redis client branches on the word
    /// as it does on `WRONGTYPE`; `MISCONF reason` for a log that cannot write, which
    /// Redis clients know.
    fn text_line(&self) -> String {
        match (&*self.refusal.cause, self.refusal.at) {
            (Cause::Engine(Error::Storage { reason }), None) => format!("MISCONF {reason}"),
            _ => format!("{} {}{}", self.refusal.code().as_str().to_ascii_uppercase(), self.place(), self.refusal),
        }
    }

    /// The JSON form: `CODE {json}`, the place of a refused operation as a field.
    fn json_line(&self) -> String {
        let mut json = self.refusal.to_json();
        if let (Some(at), Value::Object(object)) = (self.refusal.at, &mut json) {
            object.insert(self.what.to_string(), Value::from(at + 1));
        }
        // serde_json escapes control characters, so the line holds no CR or LF.
        format!("{} {json}", self.refusal.code().as_str().to_ascii_uppercase())
    }
}
