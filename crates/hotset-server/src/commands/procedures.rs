//! The server's side of procedures over documents: a script's `hotset.get`, `hotset.query`
//! and `hotset.sql` as `hotset_ops` requests.
//!
//! A script reaches here through its host (`commands::scripts`), holding the script gate
//! closed and its keyspace's block locked. Each call decodes into a `Request` as `DOC.*`
//! and HTTP decode theirs (the query through the JSON DSL's reader, SQL with its
//! parameters bound by `hotset_sql::bind`), is applied by `Engine::apply` under the
//! server's query time limit, and answers the JSON text `DOC.*` answers (a document or
//! `null`; a result object). A refusal keeps the engine's stable code and message.
//!
//! Owns: [`documents`]. Never: a write. Only reads are served for now (SQL must be a
//! SELECT or EXPLAIN): a procedure's writes are to be one transaction with its key-value
//! writes (docs/ARCHITECTURE.md, "Procedures over documents"), and a write applied here
//! would not be. Never a request that could wait on the key-value block the script holds
//! (a write that adds data may evict keys first: none is made here).

use crate::state::ServerState;
use hotset_core::error::ErrorCode;
use hotset_core::query::dsl;
use hotset_ops::{Answer, Refusal, Request};
use hotset_script::{DocumentCall, DocumentError};

/// Runs one document call of a procedure; its answer as JSON text.
pub fn documents(state: &ServerState, call: DocumentCall<'_>) -> Result<Vec<u8>, DocumentError> {
    request(call)
        .and_then(|request| state.engine.apply(request))
        .map(answer_json)
        .map_err(|refusal| DocumentError { code: refusal.code().as_str().to_string(), message: refusal.to_string() })
}

/// The request a call stands for.
fn request(call: DocumentCall<'_>) -> Result<Request, Refusal> {
    Ok(match call {
        DocumentCall::Get { namespace, key } => Request::Get { namespace: namespace.to_string(), key: key.clone() },
        DocumentCall::Query { namespace, query } => Request::Query(dsl::query_from_json(query, Some(namespace))?),
        DocumentCall::Sql { text, parameters } => {
            let text = hotset_sql::bind(text, parameters)?;
            if !hotset_sql::reads_only(&text) {
                return Err(Refusal::request(
                    ErrorCode::BadRequest,
                    "hotset.sql runs SELECT and EXPLAIN only: procedures do not write documents yet",
                ));
            }
            Request::Sql(text)
        }
    })
}

/// An answer as the JSON text `DOC.*` writes.
fn answer_json(answer: Answer) -> Vec<u8> {
    match answer {
        Answer::Document(Some(document)) => document.to_vec(),
        Answer::Document(None) => b"null".to_vec(),
        Answer::Query(result) => {
            let mut out = Vec::with_capacity(256 + result.items.len() * 128);
            dsl::write_result_json(&result, &mut out);
            out
        }
        Answer::Json(out) => out,
        other => unreachable!("a get, query or SELECT does not answer {other:?}"),
    }
}
