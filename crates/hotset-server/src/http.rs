//! The HTTP/JSON listener (axum).
//!
//! Owns: routes, status codes and JSON shapes of the HTTP API, and the mapping of engine
//! errors to statuses. Never: command semantics that the engine already holds; handlers
//! translate, nothing more. Engine calls that may take long (queries, bulk writes, index
//! builds) run on the blocking pool so they never stall the runtime's threads.
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
//! - `POST /api/v1/query` (namespace in the body), `POST /api/v1/namespaces/{ns}/query`
//!   (the JSON DSL, `hotset_core::query::dsl`)
//! - `POST /api/v1/sql` (the SQL text as the body; `hotset_sql`)
//! - `GET /metrics` (Prometheus text)
//! - `GET /api/v1/openapi.json`: the OpenAPI 3.1 document of all of the above
//!   (`openapi.json` beside this crate's Cargo.toml; `tests/openapi.rs` checks real
//!   responses against it)

use crate::metrics;
use crate::state::ServerState;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Path, Query as UrlQuery, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use axum::{Json, Router};
use hotset_core::error::ErrorCode;
use hotset_core::query::dsl;
use hotset_core::{Error, IndexDef};
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
        .route("/api/v1/namespaces/{ns}/query", post(query_namespace))
        .route("/api/v1/query", post(query))
        .route("/api/v1/sql", post(sql))
        .route("/api/v1/search", post(search))
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

impl From<Error> for ApiError {
    fn from(error: Error) -> Self {
        let status = match &error {
            Error::UnknownNamespace { .. } | Error::UnknownIndex { .. } | Error::NotFound { .. } => {
                StatusCode::NOT_FOUND
            }
            Error::NamespaceExists { .. } | Error::IndexExists { .. } | Error::DuplicateKey { .. } => {
                StatusCode::CONFLICT
            }
            Error::LimitExceeded { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            // The server gave up on the query, not the client on sending it: 503 says
            // "not now" as for the other server-side refusals (408 would blame the client).
            Error::Timeout { .. } => StatusCode::SERVICE_UNAVAILABLE,
            Error::Storage { .. } => StatusCode::SERVICE_UNAVAILABLE,
            _ => StatusCode::BAD_REQUEST,
        };
        ApiError::new(status, error.code(), error.to_string())
    }
}

fn bad_request(message: impl Into<String>) -> ApiError {
    ApiError::new(StatusCode::BAD_REQUEST, ErrorCode::BadRequest, message)
}

type ApiResult<T = Json<Value>> = Result<T, ApiError>;

/// Runs an engine call on the blocking pool: writes (which wait for the log) and
/// administrative calls. Reads (`/query`, `SELECT`) run on the I/O thread instead, as RESP
/// runs them: the hand-off to the pool and back is two thread switches, which cost more
/// than most queries (the profile-search query over 1M rows spent about 30% of the server's
/// time in the scheduler that way); a long read is bounded by the server's query timeout.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(work).await.map_err(|e| {
        ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, ErrorCode::Internal, format!("the request failed: {e}"))
    })?
}

/// A JSON body, or a 400 with the code of what the body should have been (`schema` for
/// a namespace or index definition, `bad_document`, `bad_query`), as RESP's `DOC.*` do.
fn json_body(body: &[u8], code: ErrorCode) -> Result<Value, ApiError> {
    serde_json::from_slice(body).map_err(|e| ApiError::new(StatusCode::BAD_REQUEST, code, format!("invalid JSON: {e}")))
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
    let text = metrics::render(&state);
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], text).into_response()
}

async fn list_namespaces(State(state): AppState) -> ApiResult {
    let namespaces: Vec<Value> = state
        .db
        .namespace_names()
        .iter()
        .filter_map(|name| state.db.describe(name).ok())
        .map(|info| json!({"name": info.name, "documents": info.documents, "memory_bytes": info.memory_bytes}))
        .collect();
    Ok(Json(json!({"items": namespaces})))
}

async fn create_namespace(State(state): AppState, body: Bytes) -> Result<(StatusCode, Json<Value>), ApiError> {
    let body = json_body(&body, ErrorCode::Schema)?;
    let name =
        body.get("name").and_then(Value::as_str).ok_or_else(|| bad_request("name: a string is required"))?.to_string();
    let indexes = match body.get("indexes") {
        None => Vec::new(),
        Some(Value::Array(defs)) => defs.iter().map(IndexDef::from_json).collect::<Result<Vec<_>, _>>()?,
        Some(_) => return Err(bad_request("indexes: must be a list of index definitions")),
    };
    if let Some(key) = body.as_object().and_then(|o| o.keys().find(|k| !matches!(k.as_str(), "name" | "indexes"))) {
        return Err(bad_request(format!("unknown key '{key}' (expected name, indexes)")));
    }
    let db = Arc::clone(&state.db);
    let created = name.clone();
    blocking(move || Ok(db.create_namespace(&created, indexes)?)).await?;
    Ok((StatusCode::CREATED, describe(&state, &name)?))
}

fn describe(state: &ServerState, name: &str) -> ApiResult {
    Ok(Json(state.db.describe(name)?.to_json()))
}

async fn describe_namespace(State(state): AppState, Path(ns): Path<String>) -> ApiResult {
    describe(&state, &ns)
}

async fn drop_namespace(State(state): AppState, Path(ns): Path<String>) -> ApiResult {
    let db = Arc::clone(&state.db);
    blocking(move || Ok(db.drop_namespace(&ns)?)).await?;
    Ok(Json(json!({"dropped": true})))
}

async fn truncate(State(state): AppState, Path(ns): Path<String>) -> ApiResult {
    let db = Arc::clone(&state.db);
    blocking(move || Ok(db.truncate(&ns)?)).await?;
    Ok(Json(json!({"truncated": true})))
}

async fn add_index(
    State(state): AppState,
    Path(ns): Path<String>,
    body: Bytes,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let def = IndexDef::from_json(&json_body(&body, ErrorCode::Schema)?)?;
    let db = Arc::clone(&state.db);
    let namespace = ns.clone();
    blocking(move || Ok(db.add_index(&namespace, def)?)).await?;
    Ok((StatusCode::CREATED, describe(&state, &ns)?))
}

async fn drop_index(State(state): AppState, Path((ns, index)): Path<(String, String)>) -> ApiResult {
    let db = Arc::clone(&state.db);
    let namespace = ns.clone();
    blocking(move || Ok(db.drop_index(&namespace, &index)?)).await?;
    describe(&state, &ns)
}

#[derive(serde::Deserialize)]
struct WriteParams {
    mode: Option<String>,
}

/// The documents of a write body.
enum Documents {
    /// A JSON array, or one object: parsed here.
    Values(Vec<Value>),
    /// NDJSON: each non-blank line's text with its line number, handed to the engine as
    /// JSON text, which parses it once, straight into the document's stored form (no
    /// `Value` tree per document).
    Lines(Vec<(usize, Vec<u8>)>),
}

/// Splits a write body: NDJSON, a JSON array, or one object.
fn documents(body: &[u8]) -> Result<Documents, ApiError> {
    let text = std::str::from_utf8(body).map_err(|_| bad_request("the body is not UTF-8"))?;
    if text.trim_start().starts_with('[') {
        return match json_body(body, ErrorCode::BadDocument)? {
            Value::Array(docs) => Ok(Documents::Values(docs)),
            _ => Err(bad_request("expected a JSON array of documents")),
        };
    }
    let lines = text
        .lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(i, line)| (i + 1, line.as_bytes().to_vec()))
        .collect();
    Ok(Documents::Lines(lines))
}

async fn write_items(
    State(state): AppState,
    Path(ns): Path<String>,
    UrlQuery(params): UrlQuery<WriteParams>,
    body: Bytes,
) -> ApiResult {
    let mode = params.mode.unwrap_or_else(|| "upsert".into());
    if !matches!(mode.as_str(), "upsert" | "insert" | "update") {
        return Err(bad_request(format!("mode must be upsert, insert or update, not '{mode}'")));
    }
    let db = Arc::clone(&state.db);
    let count = blocking(move || {
        let docs = documents(&body)?;
        drop(body);
        let mut txn = db.transaction(&ns)?;
        // The line of each NDJSON document, to name a refused one by (an array's are named
        // by their place); formatted only on a failure.
        let lines: Option<Vec<usize>> = match docs {
            Documents::Values(values) => {
                for doc in values {
                    match mode.as_str() {
                        "insert" => txn.insert(doc),
                        "update" => txn.update(doc),
                        _ => txn.upsert(doc),
                    }?;
                }
                None
            }
            Documents::Lines(texts) => {
                let mut lines = Vec::with_capacity(texts.len());
                for (line, text) in texts {
                    lines.push(line);
                    match mode.as_str() {
                        "insert" => txn.insert_json(text),
                        "update" => txn.update_json(text),
                        _ => txn.upsert_json(text),
                    }?;
                }
                Some(lines)
            }
        };
        txn.commit_naming_failure().map_err(|(position, error)| {
            let mut refused = ApiError::from(error);
            match (position, &lines) {
                (Some(position), Some(lines)) => {
                    refused.message = format!("line {}: {}", lines[position], refused.message)
                }
                (Some(position), None) => refused.message = format!("document {}: {}", position + 1, refused.message),
                (None, _) => {}
            }
            refused
        })
    })
    .await?;
    Ok(Json(json!({"count": count})))
}

/// A key from the URL: JSON text when it parses (numbers, arrays for composite keys,
/// quoted strings), the text itself otherwise.
fn url_key(key: &str) -> Value {
    serde_json::from_str(key).unwrap_or_else(|_| Value::String(key.to_string()))
}

async fn get_item(State(state): AppState, Path((ns, key)): Path<(String, String)>) -> Result<Response, ApiError> {
    let key = url_key(&key);
    match state.db.get(&ns, &key)? {
        Some(doc) => Ok(([(header::CONTENT_TYPE, "application/json")], doc.to_vec()).into_response()),
        None => Err(ApiError::from(Error::NotFound { namespace: ns, key: key.to_string() })),
    }
}

async fn delete_item(State(state): AppState, Path((ns, key)): Path<(String, String)>) -> ApiResult {
    let db = Arc::clone(&state.db);
    let deleted = blocking(move || Ok(db.delete(&ns, &url_key(&key))?)).await?;
    Ok(Json(json!({"deleted": deleted})))
}

async fn query(State(state): AppState, body: Bytes) -> Result<Response, ApiError> {
    run_query(state, None, body).await
}

async fn query_namespace(State(state): AppState, Path(ns): Path<String>, body: Bytes) -> Result<Response, ApiError> {
    run_query(state, Some(ns), body).await
}

async fn run_query(state: Arc<ServerState>, ns: Option<String>, body: Bytes) -> Result<Response, ApiError> {
    let mut query = dsl::query_from_json(&json_body(&body, ErrorCode::BadQuery)?, ns.as_deref())?;
    state.limit_query(&mut query);
    // A read: on the I/O thread (see `blocking`).
    let result = state.db.query(&query)?;
    let mut out = Vec::with_capacity(256 + result.items.len() * 128);
    dsl::write_result_json(&result, &mut out);
    Ok(([(header::CONTENT_TYPE, "application/json")], out).into_response())
}

/// Full-text search across namespaces, merged by rank (`hotset_core::Search`).
async fn search(State(state): AppState, body: Bytes) -> Result<Response, ApiError> {
    let mut search = hotset_core::Search::from_json(&json_body(&body, ErrorCode::BadQuery)?)?;
    state.limit_search(&mut search);
    let out = blocking(move || Ok(state.db.search(&search)?.to_json().to_string())).await?;
    Ok(([(header::CONTENT_TYPE, "application/json")], out).into_response())
}

/// SQL text in, the statement's JSON answer out. A statement that cannot be parsed or is
/// not supported answers 400 with where the problem is (`line`, `column`).
async fn sql(State(state): AppState, body: Bytes) -> Result<Response, ApiError> {
    let text = std::str::from_utf8(&body).map_err(|_| bad_request("the SQL text is not UTF-8"))?;
    let mut statement = hotset_sql::parse(text).map_err(|error| {
        let status =
            if error.code == ErrorCode::Limit { StatusCode::PAYLOAD_TOO_LARGE } else { StatusCode::BAD_REQUEST };
        let mut refused = ApiError::new(status, error.code, error.to_string());
        refused.context.insert("line".into(), json!(error.line));
        refused.context.insert("column".into(), json!(error.column));
        refused
    })?;
    state.limit_sql(&mut statement);
    let out = if matches!(statement, hotset_sql::Statement::Select(_)) {
        hotset_sql::execute(&state.db, &statement)?
    } else {
        blocking(move || Ok(hotset_sql::execute(&state.db, &statement)?)).await?
    };
    Ok(([(header::CONTENT_TYPE, "application/json")], out).into_response())
}
