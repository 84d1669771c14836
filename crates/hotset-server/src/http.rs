//! The HTTP/JSON listener (axum).
//!
//! Owns: routes, status codes and JSON shapes of the HTTP API. Never: command semantics
//! that the engine or the RESP commands already hold; handlers translate, nothing more.
//! Engine calls are synchronous and short; the long ones (queries) run on the blocking
//! pool so they never stall the runtime's threads.

use crate::state::ServerState;
use axum::Router;
use axum::routing::get;
use std::sync::Arc;

/// Every route of the HTTP API.
pub fn router(state: Arc<ServerState>) -> Router {
    Router::new().route("/health", get(health)).with_state(state)
}

/// 200 once the data is loaded: the listener only starts after recovery.
async fn health() -> axum::Json<serde_json::Value> {
    axum::Json(serde_json::json!({"status": "ok"}))
}
