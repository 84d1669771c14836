//! Procedures over documents, engine side: a script's `hotset.*` calls as requests, its
//! document writes as one transaction, and the function libraries kept as data. The
//! server's script host and the Python package's embedded one both run here, so a
//! procedure means the same thing wherever it is called from.
//!
//! Why here: this is the operation layer's job (a call decodes into a `Request` as `DOC.*`
//! and HTTP decode theirs), and `hotset-script`, the Lua engine, depends on no crate of
//! ours, so the seam's types (`DocumentCall`, `DocumentError`) come from it and the
//! requests from here, with no crate depending on one above it. What differs between
//! hosts stays with them: the server's script gate, key-value block and batch collector;
//! the embedded database's lack of keys.
//!
//! A read decodes into a `Request` (the query through the JSON DSL's reader, SQL with its
//! parameters bound by `hotset_sql::bind`), is applied by `Engine::apply` under the
//! engine's query time limit, and answers the JSON text `DOC.*` answers (a document or
//! `null`; a result object). A refusal keeps the engine's stable code and message.
//!
//! Writes are buffered in the script's [`Procedure`] and applied by [`commit`] when the
//! script has returned without an error, as one `Request::Transaction`: one `Group`, one
//! log record, seen whole or not at all; a script that fails drops them. A procedure's own
//! pending writes are not readable: a read of a namespace it has written is refused, never
//! answered from the state before them.
//!
//! Owns: [`Procedure`], [`documents`], [`commit`], [`commit_error`], [`FUNCTIONS_META`] and
//! [`change_libraries`]. Never: apply a write before the script has ended (the host calls
//! [`commit`], at the point its own locks allow), or answer a read that its pending writes
//! would change.

use crate::{Answer, Cause, Doc, Engine, Op, Refusal, Request};
use hotset_core::Durability;
use hotset_core::error::ErrorCode;
use hotset_core::query::dsl;
use hotset_script::{CallContext, DocumentCall, DocumentError, RestorePolicy, ScriptError, WriteMode};

/// The metadata entry holding the function libraries (a FUNCTION DUMP payload): FUNCTION
/// LOAD, DELETE, FLUSH and RESTORE write it, and opening a database loads it back.
pub const FUNCTIONS_META: &str = "redis:functions";

/// A running procedure's document writes, not applied yet.
#[derive(Debug, Default)]
pub struct Procedure {
    /// (namespace, operation), in the order the script made them.
    pending: Vec<(String, Op)>,
    /// Whether the host can commit writes where the script runs (the server cannot inside
    /// MULTI: EXEC's key-value block is held to its end).
    writable: bool,
}

impl Procedure {
    /// A procedure with nothing written; `writable`: its host can commit writes.
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
    engine: &Engine,
    procedure: &mut Procedure,
    call: DocumentCall<'_>,
    context: &CallContext,
    wrote_keys: bool,
) -> Result<Vec<u8>, DocumentError> {
    let refused =
        |refusal: Refusal| DocumentError { code: refusal.code().as_str().to_string(), message: refusal.to_string() };
    match call {
        DocumentCall::Write { .. } | DocumentCall::Delete { .. } => {
            buffer(engine, procedure, call, context, wrote_keys).map_err(refused)
        }
        _ => read(procedure, call).and_then(|request| engine.apply(request)).map(answer_json).map_err(refused),
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
    engine: &Engine,
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
                WriteMode::Insert => crate::WriteMode::Insert,
                WriteMode::Upsert => crate::WriteMode::Upsert,
                WriteMode::Update => crate::WriteMode::Update,
            };
            (namespace, documents.iter().map(|document| Op::Write(mode, Doc::Value(document.clone()))).collect())
        }
        DocumentCall::Delete { namespace, keys } => {
            (namespace, keys.iter().map(|key| Op::Delete(key.clone())).collect())
        }
        _ => unreachable!("reads are not buffered"),
    };
    let limit = engine.database().limits().transaction_operations_max;
    if procedure.pending.len() + ops.len() > limit {
        let message = format!("{name}: a procedure writes at most {limit} operations (transaction_operations_max)");
        return Err(Refusal::request(ErrorCode::Limit, message));
    }
    let taken = ops.len();
    procedure.pending.extend(ops.into_iter().map(|op| (namespace.to_string(), op)));
    Ok(taken.to_string().into_bytes())
}

/// Applies a finished procedure's writes as one transaction through `apply` (the host's
/// way to apply a request: the server's collects the log record into its batch, the
/// embedded one waits for it); the refusal names the refused operation's place over the
/// whole procedure ([`commit_error`] words it).
pub fn commit(procedure: Procedure, apply: impl FnOnce(Request) -> Result<Answer, Refusal>) -> Result<(), Refusal> {
    if procedure.pending.is_empty() {
        return Ok(());
    }
    apply(Request::Transaction { ops: procedure.pending }).map(drop)
}

/// The error line a refused commit fails its script with (`ALREADY_EXISTS operation 2:
/// ...`, the operation counted from 1 over the whole procedure; `MISCONF` when the log
/// refused it).
pub fn commit_error(refusal: &Refusal) -> String {
    let place = refusal.at.map(|at| format!("operation {}: ", at + 1)).unwrap_or_default();
    match &*refusal.cause {
        Cause::Engine(hotset_core::Error::Storage { reason }) if refusal.at.is_none() => format!("MISCONF {reason}"),
        _ => format!("{} {place}{refusal}", refusal.code().as_str().to_ascii_uppercase()),
    }
}

/// Applies a change to the function libraries and logs them all as the metadata entry
/// [`FUNCTIONS_META`] with `durability`; a change the log refuses is undone (the error
/// is then the log's). The caller holds `scripts` for the whole call, so two changes are
/// logged in the order they were made.
pub fn change_libraries<R>(
    engine: &Engine,
    durability: Durability<'_>,
    scripts: &mut hotset_script::Engine,
    change: impl FnOnce(&mut hotset_script::Engine) -> Result<R, ScriptError>,
) -> Result<R, LibrariesError> {
    let before = scripts.function_dump();
    let changed = change(scripts).map_err(LibrariesError::Script)?;
    let mut group = engine.database().writes(durability).group();
    group.set_meta(FUNCTIONS_META, (!scripts.libraries().is_empty()).then(|| scripts.function_dump()));
    if let Err(failure) = group.commit() {
        scripts.function_restore(&before, RestorePolicy::Flush).expect("the libraries that were loaded load again");
        return Err(LibrariesError::Log(failure.error.to_string()));
    }
    Ok(changed)
}

/// Why a change to the function libraries was not made.
#[derive(Debug)]
pub enum LibrariesError {
    /// The engine refused it (a bad library, a name taken), in Redis' words.
    Script(ScriptError),
    /// The log refused it; the change was undone.
    Log(String),
}

/// Loads the libraries the database keeps into `scripts`, replacing its own (opening a
/// database). `Ok(false)` when it keeps none.
pub fn load_libraries(engine: &Engine, scripts: &mut hotset_script::Engine) -> Result<bool, ScriptError> {
    let Some(payload) = engine.database().meta(FUNCTIONS_META) else { return Ok(false) };
    scripts.function_restore(&payload, RestorePolicy::Flush)?;
    Ok(true)
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
