//! The server's side of procedures over documents: a script's `hotset.*` calls as
//! `hotset_ops` requests, and its document writes as one transaction.
//!
//! A script reaches here through its host (`commands::scripts`), holding the script gate
//! closed and its keyspace's block locked. A read decodes into a `Request` as `DOC.*` and
//! HTTP decode theirs (the query through the JSON DSL's reader, SQL with its parameters
//! bound by `hotset_sql::bind`), is applied by `Engine::apply` under the server's query
//! time limit, and answers the JSON text `DOC.*` answers (a document or `null`; a result
//! object). A refusal keeps the engine's stable code and message.
//!
//! Writes are buffered in the script's [`Procedure`] and applied when the script has
//! returned without an error, after its key-value block is released (still inside the
//! gate), as one `Request::Transaction`: one `Group`, one log record, seen whole or not at
//! all; a script that fails (raises, returns an error reply, is killed) drops them, so
//! nothing of it reaches the documents. Until the design's joined record is built
//! (docs/ARCHITECTURE.md, "Procedures over documents") a procedure writes documents or
//! keys, not both: once it has written one kind, a write of the other is refused. Its own
//! pending writes are not readable: a read of a namespace it has written is refused, never
//! answered from the state before them.
//!
//! Owns: [`Procedure`], [`documents`], [`commit`]. Never: apply a write while the script
//! holds its key-value block (a write that adds data may evict keys, which waits for those
//! shards), or answer a read that its pending writes would change.

use crate::state::ServerState;
use hotset_core::Acks;
use hotset_core::error::ErrorCode;
use hotset_core::query::dsl;
use hotset_ops::{Answer, Cause, Doc, Op, Refusal, Request};
use hotset_script::{CallContext, DocumentCall, DocumentError, WriteMode};

/// A running procedure's document writes, not applied yet.
#[derive(Debug, Default)]
pub struct Procedure {
    /// (namespace, operation), in the order the script made them.
    pending: Vec<(String, Op)>,
    /// Where the script runs: writes are taken only outside MULTI (the commit needs the
    /// key-value block released, and EXEC's is held to its end).
    writable: bool,
}

impl Procedure {
    /// A procedure with nothing written; `writable`: it runs outside MULTI.
    pub fn new(writable: bool) -> Procedure {
        Procedure { pending: Vec::new(), writable }
    }

    /// Whether the script has written documents.
    pub fn wrote(&self) -> bool {
        !self.pending.is_empty()
    }

    fn has_written(&self, namespace: &str) -> bool {
        self.pending.iter().any(|(written, _)| written == namespace)
    }
}

/// Runs one document call of a procedure; its answer as JSON text. `wrote_keys`: the
/// script has written keys already.
pub fn documents(
    state: &ServerState,
    procedure: &mut Procedure,
    call: DocumentCall<'_>,
    context: &CallContext,
    wrote_keys: bool,
) -> Result<Vec<u8>, DocumentError> {
    let refused =
        |refusal: Refusal| DocumentError { code: refusal.code().as_str().to_string(), message: refusal.to_string() };
    match call {
        DocumentCall::Write { .. } | DocumentCall::Delete { .. } => {
            buffer(state, procedure, call, context, wrote_keys).map_err(refused)
        }
        _ => read(procedure, call).and_then(|request| state.engine.apply(request)).map(answer_json).map_err(refused),
    }
}

/// The request a read stands for; refused when it would read the procedure's own
/// pending writes.
fn read(procedure: &Procedure, call: DocumentCall<'_>) -> Result<Request, Refusal> {
    let unreadable = |namespace: &str| {
        Refusal::bad_request(format!(
            "{} reads namespace '{namespace}', which this procedure has written: its own pending writes are \
             not readable yet (read before writing)",
            call.function_name()
        ))
    };
    Ok(match call {
        DocumentCall::Get { namespace, key } => {
            if procedure.has_written(namespace) {
                return Err(unreadable(namespace));
            }
            Request::Get { namespace: namespace.to_string(), key: key.clone() }
        }
        DocumentCall::Query { namespace, query } => {
            let query = dsl::query_from_json(query, Some(namespace))?;
            let mut read =
                std::iter::once(&query.namespace).chain(query.joins.iter().map(|join| &join.query.namespace));
            if let Some(written) = read.find(|namespace| procedure.has_written(namespace)) {
                return Err(unreadable(written));
            }
            Request::Query(query)
        }
        DocumentCall::Sql { text, parameters } => {
            let text = hotset_sql::bind(text, parameters)?;
            if !hotset_sql::reads_only(&text) {
                return Err(Refusal::request(
                    ErrorCode::BadRequest,
                    "hotset.sql runs SELECT and EXPLAIN only in procedures (write with hotset.insert, upsert, \
                     update and delete)",
                ));
            }
            if let Some((written, _)) = procedure.pending.first() {
                return Err(unreadable(written));
            }
            Request::Sql(text)
        }
        DocumentCall::Write { .. } | DocumentCall::Delete { .. } => unreachable!("writes are buffered"),
    })
}

/// Takes a write into the procedure's buffer; answers how many operations it took.
fn buffer(
    state: &ServerState,
    procedure: &mut Procedure,
    call: DocumentCall<'_>,
    context: &CallContext,
    wrote_keys: bool,
) -> Result<Vec<u8>, Refusal> {
    let name = call.function_name();
    if context.read_only {
        let message = format!("{name}: writes are not allowed from read-only scripts (EVAL_RO, FCALL_RO, no-writes)");
        return Err(Refusal::request(ErrorCode::ReadOnly, message));
    }
    if !procedure.writable {
        return Err(Refusal::bad_request(format!("{name}: a procedure inside MULTI does not write documents (yet)")));
    }
    if wrote_keys {
        return Err(Refusal::bad_request(format!(
            "{name}: this procedure wrote keys, and its key and document writes cannot be one transaction yet"
        )));
    }
    let (namespace, ops): (&str, Vec<Op>) = match call {
        DocumentCall::Write { namespace, mode, documents } => {
            let mode = match mode {
                WriteMode::Insert => hotset_ops::WriteMode::Insert,
                WriteMode::Upsert => hotset_ops::WriteMode::Upsert,
                WriteMode::Update => hotset_ops::WriteMode::Update,
            };
            (namespace, documents.iter().map(|document| Op::Write(mode, Doc::Value(document.clone()))).collect())
        }
        DocumentCall::Delete { namespace, keys } => {
            (namespace, keys.iter().map(|key| Op::Delete(key.clone())).collect())
        }
        _ => unreachable!("reads are not buffered"),
    };
    let limit = state.db().limits().transaction_operations_max;
    if procedure.pending.len() + ops.len() > limit {
        let message = format!("{name}: a procedure writes at most {limit} operations (transaction_operations_max)");
        return Err(Refusal::request(ErrorCode::Limit, message));
    }
    let taken = ops.len();
    procedure.pending.extend(ops.into_iter().map(|op| (namespace.to_string(), op)));
    Ok(taken.to_string().into_bytes())
}

/// Applies a finished procedure's writes as one transaction (noted into the batch's
/// `acks`); the error line its caller answers when refused (`ALREADY_EXISTS operation 2:
/// ...`, the operation counted from 1 over the whole procedure).
pub fn commit(state: &ServerState, acks: &Acks, procedure: Procedure) -> Result<(), String> {
    if procedure.pending.is_empty() {
        return Ok(());
    }
    match super::apply(state, acks, Request::Transaction { ops: procedure.pending }) {
        Ok(_) => Ok(()),
        Err(refusal) => {
            let place = refusal.at.map(|at| format!("operation {}: ", at + 1)).unwrap_or_default();
            Err(match &*refusal.cause {
                Cause::Engine(hotset_core::Error::Storage { reason }) if refusal.at.is_none() => {
                    format!("MISCONF {reason}")
                }
                _ => format!("{} {place}{refusal}", refusal.code().as_str().to_ascii_uppercase()),
            })
        }
    }
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
