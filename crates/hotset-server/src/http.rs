//! The HTTP/JSON listener (axum).
//!
//! Owns: routes, status codes and JSON shapes of the HTTP API, and the mapping of engine
//! errors to statuses. Never: command semantics that the engine already holds; handlers
//! translate, nothing more. Engine calls that may take long (queries, bulk writes, index
//! builds) run on the blocking pool so they never stall the runtime's threads; those that
//! change documents run inside the script gate, so none lands in the middle of a procedure.
//!
//! Routes (all JSON; errors are `{"error": "..."}` with a 4xx or 5xx status):
//! When the server has a password every route but `/health` (and `/metrics` with
//! `metrics_public`) answers `401` without it (`crate::auth`).
//!
//! - `GET /health`
//! - `GET /api/v1/namespaces`, `POST /api/v1/namespaces` `{"name", "indexes": [...]}`
//! - `GET|DELETE /api/v1/namespaces/{ns}`, `POST /api/v1/namespaces/{ns}/truncate`
//! - `POST /api/v1/namespaces/{ns}/indexes` (one index definition),
//!   `DELETE /api/v1/namespaces/{ns}/indexes/{index}`
//! - `POST /api/v1/namespaces/{ns}/items`: NDJSON (one document a line), a JSON array or
//!   one object; `?mode=upsert|insert|update`; all or nothing; answers `{"count": N}`
//! - `GET|DELETE /api/v1/namespaces/{ns}/items/{key}` (`key` as JSON text when it parses,
//!   a string otherwise; a composite key as a JSON array)
//! - `POST /api/v1/namespaces/{ns}/transaction`: a JSON array of operations
//!   (`{"op": "upsert"|"insert"|"update", "doc": {...}}`, `{"op": "delete", "key": k}`),
//!   all or nothing, as `DOC.TXN`; answers `{"count": N}`
//! - `POST /api/v1/query` (namespace in the body), `POST /api/v1/namespaces/{ns}/query`
//!   (the JSON DSL, `hotset_core::query::dsl`)
//! - `POST /api/v1/sql` (the SQL text as the body; `hotset_sql`)
//! - `POST /api/v1/sources` (a live-sync declaration), `GET /api/v1/sources`,
//!   `GET|PUT|DELETE /api/v1/sources/{name}` (PUT: a new declaration of it, tables added
//!   are copied), `POST /api/v1/sources/{name}/resync`; reads of
//!   synced namespaces answer with `Hotset-Source-Position` and take `?after=source:pos`
//!   (`http/sources.rs`)
//! - `GET /api/v1/functions` (the function libraries), `POST /api/v1/functions` (a Lua
//!   library as the body, `?replace=true`; FUNCTION LOAD), `POST /api/v1/functions/{name}`
//!   (a JSON array of arguments; the function's return value as JSON, as `DOC.CALL`;
//!   `http/functions.rs`)
//! - `GET /metrics` (Prometheus text)
//! - `GET /api/v1/openapi.json`: the OpenAPI 3.1 document of all of the above
//!   (`openapi.json` beside this crate's Cargo.toml; `tests/openapi.rs` checks real
//!   responses against it)

mod functions;
mod sources;

use crate::metrics;
use crate::state::ServerState;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Path, Query as UrlQuery, RawQuery, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use axum::{Json, Router};
use hotset_core::Error;
use hotset_core::error::ErrorCode;
use hotset_core::query::dsl;
use hotset_ops::{Answer, Cause, Doc, Op, Refusal, Request, WriteMode, decode};
use serde_json::{Map, Value, json};
use std::sync::Arc;

type AppState = State<Arc<ServerState>>;

/// Every route of the HTTP API.
pub fn router(state: Arc<ServerState>) -> Router {
    let body_limit = state.config.limits.max_body_bytes;
    Router::new()
        .route("/health", get(health))
        .route("/metrics", get(metrics_text))
        .route("/api/v1/openapi.json", get(openapi))
        .route("/api/v1/namespaces", get(list_namespaces).post(create_namespace))
        .route("/api/v1/namespaces/{ns}", get(describe_namespace).delete(drop_namespace))
        .route("/api/v1/namespaces/{ns}/truncate", post(truncate))
        .route("/api/v1/namespaces/{ns}/indexes", post(add_index))
        .route("/api/v1/namespaces/{ns}/indexes/{index}", delete(drop_index))
        .route("/api/v1/namespaces/{ns}/items", post(write_items))
        .route("/api/v1/namespaces/{ns}/items/{key}", get(get_item).delete(delete_item))
        .route("/api/v1/namespaces/{ns}/transaction", post(transaction))
        .route("/api/v1/namespaces/{ns}/query", post(query_namespace))
        .route("/api/v1/query", post(query))
        .route("/api/v1/sql", post(sql))
        .route("/api/v1/search", post(search))
        .route("/api/v1/functions", get(functions::list).post(functions::load))
        .route("/api/v1/functions/{name}", post(functions::call))
        .route("/api/v1/sources", get(sources::list).post(sources::declare))
        .route("/api/v1/sources/{name}", get(sources::status).put(sources::redeclare).delete(sources::remove))
        .route("/api/v1/sources/{name}/resync", post(sources::resync))
        .fallback(not_found)
        .layer(DefaultBodyLimit::max(body_limit))
        .layer(axum::middleware::map_response(errors_as_json))
        .layer(axum::middleware::from_fn_with_state(Arc::clone(&state), crate::auth::require_password))
        .layer(axum::middleware::from_fn_with_state(Arc::clone(&state), timed))
        .with_state(state)
}

/// Counts and times every request for /metrics.
async fn timed(State(state): AppState, request: axum::extract::Request, next: axum::middleware::Next) -> Response {
    let started = std::time::Instant::now();
    let response = next.run(request).await;
    state.stats.http_requests.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    state.stats.http_latency.record(started.elapsed());
    response
}

/// Every error answer is `{"error": ..., "code": ...}`, the ones axum writes itself too (a body over
/// the limit, a path that is not UTF-8, a query string it cannot read, a method a route
/// does not have): clients parse one shape. Their text becomes the message.
async fn errors_as_json(response: Response) -> Response {
    let status = response.status();
    let is_json =
        response.headers().get(header::CONTENT_TYPE).is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    if !(status.is_client_error() || status.is_server_error()) || is_json {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    // These rejections are a line of text; anything longer is cut, not buffered whole.
    let text = axum::body::to_bytes(body, 4096).await.unwrap_or_default();
    let text = String::from_utf8_lossy(&text);
    let message = match text.trim() {
        "" => status.canonical_reason().unwrap_or("error").to_ascii_lowercase(),
        text => text.to_string(),
    };
    let code = match status {
        StatusCode::NOT_FOUND => ErrorCode::NotFound,
        StatusCode::PAYLOAD_TOO_LARGE => ErrorCode::Limit,
        status if status.is_server_error() => ErrorCode::Internal,
        _ => ErrorCode::BadRequest,
    };
    parts.headers.remove(header::CONTENT_LENGTH);
    parts.headers.insert(header::CONTENT_TYPE, header::HeaderValue::from_static("application/json"));
    Response::from_parts(parts, axum::body::Body::from(error_body(code, &message, Map::new()).to_string()))
}

/// An error answer: status, stable code, message, and any context fields (a SQL error's
/// `line` and `column`). The body is `{"error": message, "code": code, ...}`: clients
/// branch on `code` (a closed set, `ErrorCode`), never on the words of `error`.
pub struct ApiError {
    status: StatusCode,
    code: ErrorCode,
    message: String,
    context: Map<String, Value>,
}

impl ApiError {
    fn new(status: StatusCode, code: ErrorCode, message: impl Into<String>) -> ApiError {
        ApiError { status, code, message: message.into(), context: Map::new() }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status, Json(error_body(self.code, &self.message, self.context))).into_response()
    }
}

/// The body of every error answer.
fn error_body(code: ErrorCode, message: &str, context: Map<String, Value>) -> Value {
    let mut body = Map::new();
    body.insert("error".into(), Value::String(message.to_string()));
    body.insert("code".into(), Value::String(code.as_str().to_string()));
    body.extend(context);
    Value::Object(body)
}

/// The status of a refusal, chosen by its code alone.
fn status_of(code: ErrorCode) -> StatusCode {
    match code {
        ErrorCode::NotFound => StatusCode::NOT_FOUND,
        // A synced namespace refuses writes from clients as its state stands: 409.
        ErrorCode::AlreadyExists | ErrorCode::ReadOnly => StatusCode::CONFLICT,
        ErrorCode::Limit => StatusCode::PAYLOAD_TOO_LARGE,
        // The server gave up on the query, not the client on sending it: 503 says "not
        // now" as for the other server-side refusals (408 would blame the client).
        ErrorCode::Timeout | ErrorCode::Storage => StatusCode::SERVICE_UNAVAILABLE,
        ErrorCode::Auth => StatusCode::UNAUTHORIZED,
        ErrorCode::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        // Over maxmemory: the server cannot store more (WebDAV's "insufficient storage").
        ErrorCode::Oom => StatusCode::INSUFFICIENT_STORAGE,
        ErrorCode::BadDocument
        | ErrorCode::BadQuery
        | ErrorCode::Schema
        | ErrorCode::BadChange
        | ErrorCode::BadRequest => StatusCode::BAD_REQUEST,
        _ => StatusCode::BAD_REQUEST,
    }
}

impl From<Refusal> for ApiError {
    fn from(refusal: Refusal) -> Self {
        let code = refusal.code();
        let mut refused = ApiError::new(status_of(code), code, refusal.to_string());
        if let Cause::Sql(error) = &*refusal.cause {
            refused.context.insert("line".into(), json!(error.line));
            refused.context.insert("column".into(), json!(error.column));
        }
        refused
    }
}

impl From<Error> for ApiError {
    fn from(error: Error) -> Self {
        ApiError::from(Refusal::from(error))
    }
}

fn bad_request(message: impl Into<String>) -> ApiError {
    ApiError::new(StatusCode::BAD_REQUEST, ErrorCode::BadRequest, message)
}

type ApiResult<T = Json<Value>> = Result<T, ApiError>;

/// Applies a request where it belongs (`Request::blocks`), as RESP does: writes (which
/// wait for the log), index builds and searches on the blocking pool, so they never stall
/// the runtime's threads; reads on the I/O thread, since the hand-off to the pool and back
/// costs two thread switches, more than most queries (the profile-search query over 1M
/// rows spent about 30% of the server's time in the scheduler that way); a long read is
/// bounded by the server's query time limit.
///
/// The answer waits until the log holds every write it could show (`Engine::settled`).
///
/// A request that changes documents runs inside the script gate (`blocking_in_gate`);
/// index builds do not, so a long one never holds up a script.
async fn apply(state: &Arc<ServerState>, request: Request) -> Result<Answer, ApiError> {
    // The barrier is taken right after the request ran: a later one would also wait for
    // writes that came after it, which its answer cannot show.
    let (answer, settled) = if request.changes_documents() {
        let inside = Arc::clone(state);
        blocking_in_gate(state, move || Ok((inside.engine.apply(request), inside.engine.settled()))).await?
    } else if request.blocks() {
        let inside = Arc::clone(state);
        blocking(move || Ok((inside.engine.apply(request), inside.engine.settled()))).await?
    } else {
        (state.engine.apply(request), state.engine.settled())
    };
    if let Some(settled) = settled {
        settled.await;
    }
    Ok(answer?)
}

/// Runs `work` on the blocking pool inside the script gate (`crate::gate`), as a RESP
/// batch runs: a write then never lands between a procedure's reads and the commit of its
/// writes. While a script holds the gate the request awaits its opening on the runtime
/// (HTTP has no `-BUSY`), holding no thread.
async fn blocking_in_gate<T, W>(state: &Arc<ServerState>, work: W) -> Result<T, ApiError>
where
    T: Send + 'static,
    W: FnOnce() -> Result<T, ApiError> + Send + 'static,
{
    let mut work = work;
    loop {
        let inside = Arc::clone(state);
        // Entered on the thread that runs it: a closed gate hands the work back untouched.
        let ran = blocking(move || match inside.gate.enter() {
            Some(reader) => {
                let done = work();
                drop(reader);
                Ok(Ok(done))
            }
            None => Ok(Err(work)),
        })
        .await?;
        match ran {
            Ok(done) => return done,
            Err(back) => {
                work = back;
                state.gate.wait_open().await;
            }
        }
    }
}

/// Runs `work` on the blocking pool.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(work).await.map_err(|e| {
        ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, ErrorCode::Internal, format!("the request failed: {e}"))
    })?
}

/// A JSON body, or a 400 with the code of what the body should have been (`schema` for
/// a namespace or index definition, `bad_document`, `bad_query`), as RESP's `DOC.*` do.
fn json_body(body: &[u8], what: &str, code: ErrorCode) -> Result<Value, ApiError> {
    Ok(decode::json(body, what, code)?)
}

/// An answer the request does not give: a bug between this file and `hotset_ops`.
fn unexpected(answer: &Answer) -> ApiError {
    ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, ErrorCode::Internal, format!("unexpected answer {answer:?}"))
}

async fn not_found() -> ApiError {
    ApiError::new(StatusCode::NOT_FOUND, ErrorCode::NotFound, "no such route; see GET /api/v1/namespaces")
}

/// 200 once the data is loaded: the listener only starts after recovery.
async fn health() -> Json<Value> {
    Json(json!({"status": "ok"}))
}

/// The OpenAPI document, as committed.
const OPENAPI: &str = include_str!("../openapi.json");

async fn openapi() -> Response {
    ([(header::CONTENT_TYPE, "application/json")], OPENAPI).into_response()
}

async fn metrics_text(State(state): AppState) -> Response {
    // Keyspaces are counted from inside the script gate: a script holds their shards
    // locked, and this thread must not wait for it. While one runs, they are left out.
    let reader = state.gate.enter();
    let text = metrics::render(&state, reader.is_some());
    drop(reader);
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], text).into_response()
}

async fn list_namespaces(State(state): AppState) -> ApiResult {
    let Answer::Names(names) = apply(&state, Request::Namespaces).await? else { unreachable!("names answer names") };
    let mut namespaces = Vec::with_capacity(names.len());
    for name in names {
        // A namespace dropped meanwhile is left out.
        if let Ok(Answer::Namespace(info)) = state.engine.apply(Request::Describe { name }) {
            namespaces.push(json!({"name": info.name, "documents": info.documents, "memory_bytes": info.memory_bytes}));
        }
    }
    Ok(Json(json!({"items": namespaces})))
}

async fn create_namespace(State(state): AppState, body: Bytes) -> Result<(StatusCode, Json<Value>), ApiError> {
    let body = json_body(&body, "the namespace definition", ErrorCode::Schema)?;
    let name =
        body.get("name").and_then(Value::as_str).ok_or_else(|| bad_request("name: a string is required"))?.to_string();
    let indexes = match body.get("indexes") {
        None => Vec::new(),
        Some(defs) => decode::index_defs(defs)?,
    };
    if let Some(key) = body.as_object().and_then(|o| o.keys().find(|k| !matches!(k.as_str(), "name" | "indexes"))) {
        return Err(bad_request(format!("unknown key '{key}' (expected name, indexes)")));
    }
    apply(&state, Request::CreateNamespace { name: name.clone(), indexes }).await?;
    Ok((StatusCode::CREATED, describe(&state, name).await?))
}

async fn describe(state: &Arc<ServerState>, name: String) -> ApiResult {
    match apply(state, Request::Describe { name }).await? {
        Answer::Namespace(info) => Ok(Json(info.to_json())),
        other => Err(unexpected(&other)),
    }
}

async fn describe_namespace(State(state): AppState, Path(ns): Path<String>) -> ApiResult {
    describe(&state, ns).await
}

async fn drop_namespace(State(state): AppState, Path(name): Path<String>) -> ApiResult {
    apply(&state, Request::DropNamespace { name }).await?;
    Ok(Json(json!({"dropped": true})))
}

async fn truncate(State(state): AppState, Path(name): Path<String>) -> ApiResult {
    apply(&state, Request::Truncate { name }).await?;
    Ok(Json(json!({"truncated": true})))
}

async fn add_index(
    State(state): AppState,
    Path(namespace): Path<String>,
    body: Bytes,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let index = decode::index_def(&body)?;
    apply(&state, Request::AddIndex { namespace: namespace.clone(), index }).await?;
    Ok((StatusCode::CREATED, describe(&state, namespace).await?))
}

async fn drop_index(State(state): AppState, Path((namespace, index)): Path<(String, String)>) -> ApiResult {
    apply(&state, Request::DropIndex { namespace: namespace.clone(), index }).await?;
    describe(&state, namespace).await
}

#[derive(serde::Deserialize)]
struct WriteParams {
    mode: Option<String>,
}

/// A write body's operations: NDJSON (each non-blank line's text, which the engine parses
/// once straight into the document's stored form), a JSON array, or one object. With
/// NDJSON, the line of each document, to name a refused one by (an array's are named by
/// their place).
fn documents(body: &[u8], mode: WriteMode) -> Result<(Vec<Op>, Option<Vec<usize>>), ApiError> {
    let text = std::str::from_utf8(body).map_err(|_| bad_request("the body is not UTF-8"))?;
    if text.trim_start().starts_with('[') {
        return match json_body(body, "the array of documents", ErrorCode::BadDocument)? {
            Value::Array(docs) => Ok((docs.into_iter().map(|doc| Op::Write(mode, Doc::Value(doc))).collect(), None)),
            _ => Err(bad_request("expected a JSON array of documents")),
        };
    }
    let (lines, ops) = text
        .lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(i, line)| (i + 1, Op::Write(mode, Doc::Json(line.as_bytes().to_vec()))))
        .unzip();
    Ok((ops, Some(lines)))
}

async fn write_items(
    State(state): AppState,
    Path(namespace): Path<String>,
    UrlQuery(params): UrlQuery<WriteParams>,
    body: Bytes,
) -> ApiResult {
    let mode_name = params.mode.unwrap_or_else(|| "upsert".into());
    let mode = WriteMode::named(&mode_name)
        .ok_or_else(|| bad_request(format!("mode must be upsert, insert or update, not '{mode_name}'")))?;
    // A write blocks (`Request::blocks`); splitting a large body is work too: both on the
    // blocking pool, in one hand-off.
    let engine_state = Arc::clone(&state);
    let (applied, lines) = blocking_in_gate(&state, move || {
        let (ops, lines) = documents(&body, mode)?;
        drop(body);
        Ok((engine_state.engine.apply(Request::Write { namespace, ops }), lines))
    })
    .await?;
    match applied {
        Ok(Answer::Count(count)) => Ok(Json(json!({"count": count}))),
        Ok(other) => Err(unexpected(&other)),
        Err(refused) => Err(named(refused, |at| match &lines {
            Some(lines) => format!("line {}", lines[at]),
            None => format!("document {}", at + 1),
        })),
    }
}

/// A transaction's operations from its JSON body; an operation that is not one is named
/// by its place, as the engine names one it refuses.
/// The operations of a transaction body, each with the namespace it names (`None`: the
/// route's).
fn operations(body: &[u8]) -> Result<Vec<(Option<String>, Op)>, ApiError> {
    let Value::Array(items) = json_body(body, "the operations", ErrorCode::BadRequest)? else {
        return Err(bad_request("expected a JSON array of operations"));
    };
    let refused = |at: usize, message: String| bad_request(format!("operation {}: {message}", at + 1));
    items
        .into_iter()
        .enumerate()
        .map(|(at, item)| {
            let Value::Object(mut item) = item else {
                return Err(refused(at, "an operation is an object with \"op\"".into()));
            };
            let op = item.remove("op").and_then(|op| op.as_str().map(str::to_ascii_lowercase));
            let (field, mode) = match op.as_deref() {
                Some("delete") => ("key", None),
                Some(name) => match WriteMode::named(name) {
                    Some(mode) => ("doc", Some(mode)),
                    None => return Err(refused(at, format!("unknown operation '{name}'"))),
                },
                None => return Err(refused(at, "\"op\" must be upsert, insert, update or delete".into())),
            };
            let argument = item.remove(field).ok_or_else(|| refused(at, format!("\"{field}\" is required")))?;
            let namespace = match item.remove("namespace") {
                None => None,
                Some(Value::String(namespace)) => Some(namespace),
                Some(_) => return Err(refused(at, "\"namespace\" must be a string".into())),
            };
            if let Some(extra) = item.keys().next() {
                return Err(refused(at, format!("unknown key '{extra}' (expected op, {field}, namespace)")));
            }
            let op = match mode {
                Some(mode) => Op::Write(mode, Doc::Value(argument)),
                None => Op::Delete(argument),
            };
            Ok((namespace, op))
        })
        .collect()
}

/// Mixed operations, all or nothing (`DOC.TXN` over HTTP): on the route's namespace, or
/// on the one an operation names (`"namespace"`), all of them in one commit.
async fn transaction(State(state): AppState, Path(namespace): Path<String>, body: Bytes) -> ApiResult {
    let request = Request::transaction(namespace, operations(&body)?);
    // A write blocks (`Request::blocks`): on the blocking pool, keeping the refusal's place.
    let inside = Arc::clone(&state);
    match blocking_in_gate(&state, move || Ok(inside.engine.apply(request))).await? {
        Ok(Answer::Count(count)) => Ok(Json(json!({"count": count}))),
        Ok(other) => Err(unexpected(&other)),
        Err(refused) => Err(named(refused, |at| format!("operation {}", at + 1))),
    }
}

/// The refusal of a multi-operation write, the refused operation named by `place`.
fn named(refusal: Refusal, place: impl Fn(usize) -> String) -> ApiError {
    let at = refusal.at;
    let mut refused = ApiError::from(refusal);
    if let Some(at) = at {
        refused.message = format!("{}: {}", place(at), refused.message);
    }
    refused
}

async fn get_item(
    State(state): AppState,
    Path((namespace, key)): Path<(String, String)>,
    RawQuery(raw): RawQuery,
) -> Result<Response, ApiError> {
    let key = decode::key(key.as_bytes());
    sources::wait(&state, &sources::after_in_url(raw.as_deref())?, None).await?;
    let fresh = sources::freshness(&state, Some(&[namespace.as_str()]));
    match apply(&state, Request::Get { namespace: namespace.clone(), key: key.clone() }).await? {
        Answer::Document(Some(doc)) => {
            Ok(with_freshness(([(header::CONTENT_TYPE, "application/json")], doc.to_vec()).into_response(), fresh))
        }
        Answer::Document(None) => Err(ApiError::from(Error::NotFound { namespace, key: key.to_string() })),
        other => Err(unexpected(&other)),
    }
}

/// An answer with the freshness header, when it read synced namespaces.
fn with_freshness(mut response: Response, fresh: Option<header::HeaderValue>) -> Response {
    if let Some(fresh) = fresh {
        response.headers_mut().insert(sources::POSITION_HEADER, fresh);
    }
    response
}

async fn delete_item(State(state): AppState, Path((namespace, key)): Path<(String, String)>) -> ApiResult {
    match apply(&state, Request::Delete { namespace, key: decode::key(key.as_bytes()) }).await? {
        Answer::Deleted(deleted) => Ok(Json(json!({"deleted": deleted}))),
        other => Err(unexpected(&other)),
    }
}

async fn query(State(state): AppState, RawQuery(raw): RawQuery, body: Bytes) -> Result<Response, ApiError> {
    run_query(state, None, raw, body).await
}

async fn query_namespace(
    State(state): AppState,
    Path(ns): Path<String>,
    RawQuery(raw): RawQuery,
    body: Bytes,
) -> Result<Response, ApiError> {
    run_query(state, Some(ns), raw, body).await
}

async fn run_query(
    state: Arc<ServerState>,
    ns: Option<String>,
    raw: Option<String>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let mut body = json_body(&body, "the query", ErrorCode::BadQuery)?;
    let mut after = sources::take_after(&mut body)?;
    after.extend(sources::after_in_url(raw.as_deref())?);
    let query = dsl::query_from_json(&body, ns.as_deref())?;
    sources::wait(&state, &after, query.timeout).await?;
    let mut namespaces = vec![query.namespace.as_str()];
    namespaces.extend(query.joins.iter().map(|join| join.query.namespace.as_str()));
    let fresh = sources::freshness(&state, Some(&namespaces));
    Ok(with_freshness(json_answer(apply(&state, Request::Query(query)).await?)?, fresh))
}

/// Full-text search across namespaces, merged by rank (`hotset_core::Search`).
/// With live-sync sources: `?after=` waits, and `Hotset-Source-Position` says how fresh.
async fn search(State(state): AppState, RawQuery(raw): RawQuery, body: Bytes) -> Result<Response, ApiError> {
    let search = hotset_core::Search::from_json(&json_body(&body, "the search", ErrorCode::BadQuery)?)?;
    sources::wait(&state, &sources::after_in_url(raw.as_deref())?, None).await?;
    let namespaces: Vec<&str> = search.targets.iter().map(|target| target.namespace.as_str()).collect();
    let fresh = sources::freshness(&state, Some(&namespaces));
    Ok(with_freshness(json_answer(apply(&state, Request::Search(search)).await?)?, fresh))
}

/// SQL text in, the statement's JSON answer out. A statement that cannot be parsed or is
/// not supported answers 400 with where the problem is (`line`, `column`).
async fn sql(State(state): AppState, RawQuery(raw): RawQuery, body: Bytes) -> Result<Response, ApiError> {
    let text = std::str::from_utf8(&body).map_err(|_| bad_request("the SQL text is not UTF-8"))?;
    sources::wait(&state, &sources::after_in_url(raw.as_deref())?, None).await?;
    let fresh = sources::freshness(&state, None);
    Ok(with_freshness(json_answer(apply(&state, Request::Sql(text.to_string())).await?)?, fresh))
}

/// A query's, search's or SQL statement's answer as its JSON body.
fn json_answer(answer: Answer) -> Result<Response, ApiError> {
    let out = match answer {
        Answer::Query(result) => {
            let mut out = Vec::with_capacity(256 + result.items.len() * 128);
            dsl::write_result_json(&result, &mut out);
            out
        }
        Answer::Search(result) => result.to_json().to_string().into_bytes(),
        Answer::Json(out) => out,
        other => return Err(unexpected(&other)),
    };
    Ok(([(header::CONTENT_TYPE, "application/json")], out).into_response())
}
