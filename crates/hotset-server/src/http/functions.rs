//! Procedures over HTTP: listing the function libraries, loading one, and calling a
//! function (`/api/v1/functions...`), answering what `DOC.CALL` answers.
//!
//! A call and a load are not run a second way: each is the RESP command (`DOC.CALL name
//! arg...`, `FUNCTION LOAD [REPLACE] code`) executed through the command table on a
//! session of its own, as a RESP connection runs a batch of one request: inside the script
//! gate (a call closes it with the turn, exactly as FCALL does, and holds it while the
//! function runs), on the blocking pool, its writes collected and awaited from the log
//! before the answer. Where a RESP client would be answered `-BUSY` an HTTP request waits
//! (for the gate to open, or for its turn to close it), holding no thread meanwhile.
//!
//! Owns: those routes' JSON shapes (arguments from a JSON array, the answer's statuses).
//! Never: run a script itself, or hold the script engine outside the gate (a running
//! script holds it).

use super::{ApiError, ApiResult, AppState, bad_request, blocking, blocking_in_gate, json_body, status_of};
use crate::commands::{self, Pass, Session};
use crate::gate::Wait;
use crate::state::ServerState;
use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, Query as UrlQuery, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use hotset_core::error::ErrorCode;
use hotset_core::journal::Acks;
use hotset_script::Value as Reply;
use serde_json::{Value, json};
use std::sync::Arc;

/// `GET /api/v1/functions`: every library and its functions (name, description, flags),
/// as FUNCTION LIST tells them.
pub(super) async fn list(State(state): AppState) -> ApiResult {
    let inside = Arc::clone(&state);
    // Inside the gate: a running script holds the engine.
    let catalog = blocking_in_gate(&state, move || Ok(inside.scripts.engine().function_catalog())).await?;
    Ok(Json(json!({ "items": catalog })))
}

#[derive(serde::Deserialize)]
pub(super) struct LoadParams {
    replace: Option<bool>,
}

/// `POST /api/v1/functions[?replace=true]`: the body is a Lua library (`#!lua
/// name=...`), loaded as FUNCTION LOAD [REPLACE] loads it (logged before the answer).
pub(super) async fn load(
    State(state): AppState,
    UrlQuery(params): UrlQuery<LoadParams>,
    body: Bytes,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let mut request = vec![b"FUNCTION".to_vec(), b"LOAD".to_vec()];
    if params.replace == Some(true) {
        request.push(b"REPLACE".to_vec());
    }
    request.push(body.to_vec());
    match run_command(&state, request, false).await? {
        Reply::Bulk(name) => Ok((StatusCode::CREATED, Json(json!({ "library_name": String::from_utf8_lossy(&name) })))),
        other => Err(unexpected(&other)),
    }
}

/// `POST /api/v1/functions/{name}`: the body is a JSON array of arguments; answers the
/// function's return value as JSON (`DOC.CALL`).
pub(super) async fn call(State(state): AppState, Path(name): Path<String>, body: Bytes) -> Result<Response, ApiError> {
    let Value::Array(arguments) = json_body(&body, "the argument list", ErrorCode::BadRequest)? else {
        return Err(bad_request("expected a JSON array of arguments"));
    };
    let mut request = vec![b"DOC.CALL".to_vec(), name.into_bytes()];
    request.extend(arguments.iter().map(argument));
    match run_command(&state, request, true).await? {
        Reply::Bulk(json) => Ok(([(header::CONTENT_TYPE, "application/json")], json).into_response()),
        other => Err(unexpected(&other)),
    }
}

/// An argument as the function receives it (Lua sees strings): a string as it is, any
/// other value as its compact JSON text (the function may `hotset.fromjson` it).
fn argument(value: &Value) -> Vec<u8> {
    match value {
        Value::String(text) => text.clone().into_bytes(),
        other => other.to_string().into_bytes(),
    }
}

/// Runs one RESP command as a connection runs a batch of one (see the module's header)
/// and answers its reply; an error reply is the API's error. `script`: it closes the gate
/// (it waits for its turn while another holds it), else it waits for the gate to open.
async fn run_command(state: &Arc<ServerState>, request: Vec<Vec<u8>>, script: bool) -> Result<Reply, ApiError> {
    let (outbox, _inbox) = crate::pubsub::outbox();
    let mut session = Session::new(state, state.session_id(), outbox);
    // The route passed `crate::auth` already.
    session.authenticated = true;
    let mut pending = (session, request);
    let (out, acks, settled) = loop {
        let inside = Arc::clone(state);
        let (back, ran) = blocking(move || {
            let ran = batch_of_one(&inside, &mut pending.0, &pending.1, script);
            Ok((pending, ran))
        })
        .await?;
        pending = back;
        match ran {
            Ok(out) => {
                // Taken right after the run, as a RESP batch takes it.
                let settled = state.engine.settled();
                break (out, std::mem::take(&mut pending.0.acks), settled);
            }
            Err(Wait::Turn) => pending.0.turn = Some(state.gate.wait_turn().await),
            Err(Wait::Open) => state.gate.wait_open().await,
        }
    };
    if let Some(lsn) = acks.last_lsn() {
        crate::resp::conn::settle(state, lsn)
            .await
            .map_err(|reason| ApiError::new(StatusCode::SERVICE_UNAVAILABLE, ErrorCode::Storage, reason))?;
    }
    if let Some(settled) = settled {
        settled.await;
    }
    match hotset_script::parse_resp(&out) {
        Ok((Reply::Error(text), _)) => Err(refused(&String::from_utf8_lossy(&text))),
        Ok((reply, _)) => Ok(reply),
        Err(error) => Err(ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            ErrorCode::Internal,
            format!("unreadable reply: {error}"),
        )),
    }
}

/// One batch of one request on the calling (blocking-pool) thread: the gate entered, the
/// command executed through the table, the gate left; `Err` with what to wait for when it
/// could not run (the gate closed, or another connection's turn to close it).
fn batch_of_one(
    state: &Arc<ServerState>,
    session: &mut Session,
    request: &[Vec<u8>],
    script: bool,
) -> Result<Vec<u8>, Wait> {
    // A batch never begins holding the gate: the last one opened it before it ended.
    assert!(session.gate_held.is_none(), "a batch of one begins with the gate open");
    let started = std::time::Instant::now();
    let _now = hotset_core::clock::pin_now();
    let Some(reader) = state.gate.enter() else {
        session.turn = None;
        return Err(if script { Wait::Turn } else { Wait::Open });
    };
    session.gate = Pass::Reader;
    session.acks = Acks::new();
    session.over_memory = crate::memory::Memory::over_limit(state);
    let args: Vec<&[u8]> = request.iter().map(Vec::as_slice).collect();
    let mut out = Vec::new();
    commands::execute(state, session, &args, &mut out);
    state.stats.add_tallies(&session.tallies, started.elapsed());
    session.tallies.clear();
    // The gate opens, then the turn passes on, as at the end of a RESP batch.
    session.gate_held = None;
    session.turn = None;
    drop(reader);
    match session.deferred.take() {
        Some(wait) => Err(wait),
        None => Ok(out),
    }
}

/// A command's error reply as the API's error: an engine code leading it (`NOT_FOUND`,
/// `ALREADY_EXISTS operation 2: ...`: a procedure's refused commit or an uncaught refusal
/// of `hotset.*`) keeps its status; an unknown function is 404, memory 507, the log 503;
/// anything else (a Lua error the function raised or returned, a bad library) is 400.
fn refused(text: &str) -> ApiError {
    let word = text.split(' ').next().unwrap_or_default();
    let code = ErrorCode::ALL.iter().copied().find(|code| code.as_str().eq_ignore_ascii_case(word));
    let code = match (code, word) {
        (Some(code), _) => code,
        _ if text == hotset_script::ScriptError::FunctionNotFound.to_string() => ErrorCode::NotFound,
        (None, "OOM") => ErrorCode::Oom,
        (None, "MISCONF") => ErrorCode::Storage,
        _ => ErrorCode::BadRequest,
    };
    ApiError::new(status_of(code), code, text)
}

fn unexpected(reply: &Reply) -> ApiError {
    ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, ErrorCode::Internal, format!("unexpected reply {reply:?}"))
}
