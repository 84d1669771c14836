//! The live-sync part of the HTTP API: declaring, listing, removing and resyncing sources
//! (`/api/v1/sources...`), the freshness header on answers from synced namespaces, and
//! waiting for a source position before a read (`?after=source:position`, `"after"` in the
//! query DSL).
//!
//! Owns: those routes' JSON shapes and statuses, the `Hotset-Source-Position` header's
//! text. Never: sync semantics (`hotset_sync::Syncs` holds them).

use super::{ApiError, ApiResult, AppState, bad_request};
use crate::freshness;
use crate::state::ServerState;
use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use hotset_core::error::ErrorCode;
use hotset_sync::{Declaration, Position};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

/// The header naming, for each source an answer reflects, the position it reflects at
/// least: `app=0/16B6C50`, several joined by `; ` (a GTID list has commas of its own).
pub const POSITION_HEADER: &str = "hotset-source-position";

pub(super) async fn declare(State(state): AppState, body: Bytes) -> Result<(StatusCode, Json<Value>), ApiError> {
    let decl: Declaration =
        serde_json::from_slice(&body).map_err(|e| bad_request(format!("the source declaration: {e}")))?;
    let status = state.syncs.declare(decl).await?;
    Ok((StatusCode::CREATED, Json(json!(status))))
}

pub(super) async fn redeclare(
    State(state): AppState,
    Path(name): Path<String>,
    body: Bytes,
) -> Result<Json<Value>, ApiError> {
    let decl: Declaration =
        serde_json::from_slice(&body).map_err(|e| bad_request(format!("the source declaration: {e}")))?;
    if decl.name != name {
        return Err(bad_request(format!("the declaration names source {}, the path {name}", decl.name)));
    }
    Ok(Json(json!(state.syncs.redeclare(decl).await?)))
}

pub(super) async fn list(State(state): AppState) -> ApiResult {
    Ok(Json(json!({"sources": state.syncs.statuses()})))
}

pub(super) async fn status(State(state): AppState, Path(name): Path<String>) -> ApiResult {
    match state.syncs.status(&name) {
        Some(status) => Ok(Json(json!(status))),
        None => Err(ApiError::new(StatusCode::NOT_FOUND, ErrorCode::NotFound, format!("source {name} does not exist"))),
    }
}

pub(super) async fn remove(State(state): AppState, Path(name): Path<String>) -> Result<Response, ApiError> {
    match state.syncs.remove(&name).await? {
        None => Ok(StatusCode::NO_CONTENT.into_response()),
        Some(warning) => Ok(Json(json!({"removed": name, "warning": warning})).into_response()),
    }
}

pub(super) async fn resync(State(state): AppState, Path(name): Path<String>) -> Result<Response, ApiError> {
    state.syncs.resync(&name).await?;
    Ok((StatusCode::ACCEPTED, Json(json!({"resync": name}))).into_response())
}

/// The `after` of a URL's query string: `after=app:0/16B6C50`, the parameter repeated or
/// its pairs joined by `;`.
pub(super) fn after_in_url(raw: Option<&str>) -> Result<Vec<(String, Position)>, ApiError> {
    let mut wanted = Vec::new();
    for (key, value) in form_urlencoded::parse(raw.unwrap_or_default().as_bytes()) {
        if key != "after" {
            continue;
        }
        for one in value.split(';').filter(|one| !one.is_empty()) {
            wanted.push(source_position(one)?);
        }
    }
    Ok(wanted)
}

fn source_position(text: &str) -> Result<(String, Position), ApiError> {
    Ok(freshness::source_position(text)?)
}

/// `freshness::take_after` for an HTTP body.
pub(super) fn take_after(body: &mut Value) -> Result<Vec<(String, Position)>, ApiError> {
    Ok(freshness::take_after(body)?)
}

/// Waits until every source in `wanted` has applied its position; 504 past the limit.
pub(super) async fn wait(
    state: &Arc<ServerState>,
    wanted: &[(String, Position)],
    limit: Option<Duration>,
) -> Result<(), ApiError> {
    freshness::wait(state, wanted, limit).await.map_err(|refusal| {
        let mut error = ApiError::from(refusal);
        if error.code == ErrorCode::Timeout {
            error.status = StatusCode::GATEWAY_TIMEOUT;
        }
        error
    })
}

/// The header for an answer over `namespaces` (see `freshness::positions`).
pub(super) fn freshness(state: &ServerState, namespaces: Option<&[&str]>) -> Option<HeaderValue> {
    let pairs = freshness::positions(state, namespaces);
    if pairs.is_empty() {
        return None;
    }
    let text: Vec<String> = pairs.iter().map(|(source, position)| format!("{source}={position}")).collect();
    HeaderValue::from_str(&text.join("; ")).ok()
}
