//! Freshness of answers from synced namespaces, shared by HTTP and RESP: which source
//! positions an answer reflects, and waiting for a position before a read (`after`).
//!
//! Owns: reading `"after"` out of a query's JSON, the wait's time limit, and the list of
//! (source, position) pairs an answer carries. Never: sync semantics (`hotset_sync::Syncs`).

use crate::state::ServerState;
use hotset_core::error::ErrorCode;
use hotset_ops::Refusal;
use hotset_sync::Position;
use serde_json::Value;
use std::time::Duration;

/// How long a read waits for `after` when neither the query nor the server sets a limit.
const WAIT_DEFAULT: Duration = Duration::from_secs(10);

/// Takes `"after": {"app": "0/16B6C50"}` out of a query's JSON (the DSL proper does not
/// know sources).
pub fn take_after(body: &mut Value) -> Result<Vec<(String, Position)>, Refusal> {
    let Some(after) = body.as_object_mut().and_then(|object| object.remove("after")) else { return Ok(Vec::new()) };
    let bad = |message: String| Refusal::request(ErrorCode::BadRequest, message);
    let Value::Object(after) = after else {
        return Err(bad("after: an object of source names to positions, as {\"app\": \"0/16B6C50\"}".into()));
    };
    after
        .into_iter()
        .map(|(source, position)| match position.as_str().and_then(Position::parse) {
            Some(position) => Ok((source, position)),
            None => Err(bad(format!("after.{source}: {position} is no source position"))),
        })
        .collect()
}

/// One `source:position` pair, as `?after=` and RESP's `AFTER` write it (`app:0/16B6C50`).
pub fn source_position(text: &str) -> Result<(String, Position), Refusal> {
    let bad = |message: String| Refusal::request(ErrorCode::BadRequest, message);
    let (source, position) =
        text.split_once(':').ok_or_else(|| bad(format!("after={text}: write source:position, as app:0/16B6C50")))?;
    let position =
        Position::parse(position).ok_or_else(|| bad(format!("after={text}: {position} is no source position")))?;
    Ok((source.to_string(), position))
}

/// `wait` from a RESP command's handler: holds its connection (as any blocking request
/// does), not the I/O thread.
pub fn wait_blocking(
    state: &ServerState,
    wanted: &[(String, Position)],
    limit: Option<Duration>,
) -> Result<(), Refusal> {
    if wanted.is_empty() {
        return Ok(());
    }
    let waited = tokio::task::block_in_place(|| tokio::runtime::Handle::current().block_on(wait(state, wanted, limit)));
    // The read that follows judges expiry at the time it runs, not when its batch began.
    hotset_core::clock::Pinned::refresh();
    waited
}

/// Waits until every source in `wanted` has applied its position; a `timeout` refusal
/// past `limit` (the query's own, else the server's query limit, else ten seconds).
pub async fn wait(state: &ServerState, wanted: &[(String, Position)], limit: Option<Duration>) -> Result<(), Refusal> {
    let limit = limit.or(state.config.query_time_limit()).unwrap_or(WAIT_DEFAULT);
    for (source, position) in wanted {
        state.syncs.wait_for(source, position, limit).await?;
    }
    Ok(())
}

/// For an answer over `namespaces` (`None`: any namespace, as for SQL text and searches,
/// whose namespaces this layer does not read): each synced one's source with the position
/// it has applied, read before the answer is computed, so a lower bound of what the answer
/// reflects. Sorted by source.
pub fn positions(state: &ServerState, namespaces: Option<&[&str]>) -> Vec<(String, String)> {
    let mut pairs: Vec<(String, String)> = match namespaces {
        Some(namespaces) => namespaces
            .iter()
            .filter_map(|namespace| state.syncs.freshness(namespace))
            .filter_map(|(source, position)| Some((source, position?.to_string())))
            .collect(),
        None => state.syncs.positions().into_iter().map(|(source, position)| (source, position.to_string())).collect(),
    };
    pairs.sort();
    pairs.dedup();
    pairs
}
