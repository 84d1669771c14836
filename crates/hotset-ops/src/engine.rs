//! The engine a server or an embedded database runs on, and the one function that applies
//! a request to it.
//!
//! Owns: `Engine` (the database, its folder's store when it has one, the background work
//! of a database in memory, the server-wide query time limit, the parsed SQL shapes) and
//! `Engine::apply` (which returns once the log has acknowledged a write) and
//! `Engine::apply_into` (which notes a write's log record into the caller's `Acks` and
//! returns at once: a server answering a pipeline waits once for all of them). Never:
//! decode or encode a wire form, wait for anything but the engine and its log, or hold a
//! lock of its own across a request (the store's lock is read-held only by SAVE, BGSAVE
//! and closing).

use crate::decode::SCAN_COUNT_MAX;
use crate::{Answer, Cause, Doc, Op, Refusal, Request, WriteMode};
use hotset_core::error::ErrorCode;
use hotset_core::maintenance::Round;
use hotset_core::query::QueryResult;
use hotset_core::{Acks, Database, Durability, Maintenance, Query, Writes};
use hotset_storage::{ReadBarrier, Store, StoreError};
use parking_lot::RwLock;
use std::sync::Arc;
use std::time::Duration;

/// Limits a server puts on every request (an embedded database has none by default).
#[derive(Debug, Clone, Copy, Default)]
pub struct Settings {
    /// The longest a query (alone, in a search or in a SQL statement) may run; a query
    /// asking for less keeps its own.
    pub query_timeout: Option<Duration>,
}

/// A database and what runs beside it.
pub struct Engine {
    db: Arc<Database>,
    /// The folder's store; `None` in memory, and once closed.
    store: RwLock<Option<Store>>,
    /// What an answer waits for on a folder (`None` in memory: nothing to lose).
    barrier: Option<ReadBarrier>,
    /// In memory, the database's background work (a store runs its own).
    maintenance: Option<Maintenance>,
    settings: Settings,
    /// Parsed SELECTs by shape: a statement repeated with other literals skips the parser.
    statements: hotset_sql::StatementCache,
    /// Who judges whether writes may add data now (a server's `maxmemory`); none: always.
    memory: std::sync::OnceLock<Arc<dyn MemoryGate>>,
}

/// Whether a write that adds data may run now: a server over its `maxmemory` first makes
/// room (evicting keys, never documents) and refuses when it cannot.
pub trait MemoryGate: Send + Sync {
    /// True when a write that adds data may go ahead; any eviction it does first is
    /// settled by `durability`.
    fn admit(&self, durability: Durability<'_>) -> bool;
}

/// The words of the refusal, as Redis says them (`OOM` leads them on RESP).
pub const OOM_MESSAGE: &str = "command not allowed when used memory > 'maxmemory'.";

impl Engine {
    /// The engine of a database on a folder.
    pub fn on_store(store: Store, settings: Settings) -> Engine {
        Engine {
            db: Arc::clone(store.database()),
            barrier: Some(store.read_barrier()),
            store: RwLock::new(Some(store)),
            maintenance: None,
            settings,
            statements: hotset_sql::StatementCache::default(),
            memory: std::sync::OnceLock::new(),
        }
    }

    /// The engine of a database in memory only; starts its background work (key expiry,
    /// `ttl` indexes) on the database's clock.
    pub fn in_memory(db: Arc<Database>, settings: Settings) -> std::io::Result<Engine> {
        let maintenance = Maintenance::start(Arc::clone(&db), Vec::new())?;
        Ok(Engine {
            db,
            store: RwLock::new(None),
            barrier: None,
            maintenance: Some(maintenance),
            settings,
            statements: hotset_sql::StatementCache::default(),
            memory: std::sync::OnceLock::new(),
        })
    }

    /// Sets who judges whether writes may add data (once; false when one was set).
    pub fn set_memory_gate(&self, gate: Arc<dyn MemoryGate>) -> bool {
        self.memory.set(gate).is_ok()
    }

    /// Refuses a write that adds data when the memory gate says no.
    fn admit(&self, durability: Durability<'_>) -> Result<(), Refusal> {
        match self.memory.get() {
            Some(gate) if !gate.admit(durability) => Err(Refusal::request(ErrorCode::Oom, OOM_MESSAGE)),
            _ => Ok(()),
        }
    }

    /// The database.
    pub fn database(&self) -> &Arc<Database> {
        &self.db
    }

    /// The folder's store (`None` in memory or once closed), for what is not a document
    /// operation: a server's INFO, waiting for the log, shutting down.
    pub fn store(&self) -> &RwLock<Option<Store>> {
        &self.store
    }

    /// What a server awaits before it sends an answer, so no client sees a write that a
    /// kill -9 could still take back (`hotset_storage::ReadBarrier`); `None`: send now.
    /// Every answer, reads' too: a read shows other clients' writes.
    pub fn settled(&self) -> Option<impl std::future::Future<Output = ()> + use<>> {
        self.barrier.as_ref()?.pending()
    }

    /// Stops the background work, then (on a folder) writes and fsyncs the log and
    /// releases the folder. Closing again does nothing.
    pub fn close(&self) -> Result<(), StoreError> {
        if let Some(maintenance) = &self.maintenance {
            maintenance.stop();
        }
        match self.store.write().take() {
            Some(store) => store.close(),
            None => Ok(()),
        }
    }

    /// Runs the background jobs due on the database's clock now; `None` once closed.
    pub fn run_maintenance(&self) -> Option<Round> {
        match (&self.maintenance, self.store.read().as_ref()) {
            (Some(maintenance), _) => Some(maintenance.run_due()),
            (None, Some(store)) => Some(store.run_maintenance()),
            (None, None) => None,
        }
    }

    /// The time limit of a query that asked for `asked`: the server's, or its own when
    /// that is shorter.
    fn time_limit(&self, asked: Option<Duration>) -> Option<Duration> {
        match (asked, self.settings.query_timeout) {
            (Some(asked), Some(limit)) => Some(asked.min(limit)),
            (asked, limit) => asked.or(limit),
        }
    }

    /// Gives a query the server's time limit (or its own, when that is shorter).
    pub fn limit_query(&self, query: &mut Query) {
        query.timeout = self.time_limit(query.timeout);
    }

    /// `Request::Query` for a caller that keeps its query (the Python builder runs the
    /// same query object again and again): a copy is made only when the server's time
    /// limit must be written into it.
    pub fn query(&self, query: &Query) -> Result<QueryResult, Refusal> {
        let mut query = std::borrow::Cow::Borrowed(query);
        let timeout = self.time_limit(query.timeout);
        if timeout != query.timeout {
            query.to_mut().timeout = timeout;
        }
        Ok(self.db.query(&query)?)
    }

    /// Applies one request. Writes return once the log has acknowledged them under its
    /// fsync policy.
    pub fn apply(&self, request: Request) -> Result<Answer, Refusal> {
        self.run(request, Durability::Wait)
    }

    /// Applies one request, a write noting its log record into `acks` and returning
    /// before the log has acknowledged it: the caller waits on `acks` (once for a whole
    /// batch of requests) before it tells anyone the write happened. SAVE still waits for
    /// its snapshot.
    pub fn apply_into(&self, request: Request, acks: &Acks) -> Result<Answer, Refusal> {
        self.run(request, Durability::Collect(acks))
    }

    fn run(&self, request: Request, durability: Durability<'_>) -> Result<Answer, Refusal> {
        let db = &*self.db;
        if request.adds_data() {
            self.admit(durability)?;
        }
        let writes = db.writes(durability);
        Ok(match request {
            Request::CreateNamespace { name, indexes } => {
                writes.create_namespace(&name, indexes)?;
                Answer::Done
            }
            Request::DropNamespace { name } => {
                writes.drop_namespace(&name)?;
                Answer::Done
            }
            Request::Truncate { name } => {
                writes.truncate(&name)?;
                Answer::Done
            }
            Request::Namespaces => Answer::Names(db.namespace_names()),
            Request::Describe { name } => Answer::Namespace(db.describe(&name)?),
            Request::AddIndex { namespace, index } => {
                writes.add_index(&namespace, index)?;
                Answer::Done
            }
            Request::DropIndex { namespace, index } => {
                writes.drop_index(&namespace, &index)?;
                Answer::Done
            }
            Request::Write { namespace, ops } => Answer::Count(write(writes, &namespace, ops)?),
            Request::Transaction { ops } => Answer::Count(transaction(writes, ops)?),
            Request::Get { namespace, key } => Answer::Document(db.get(&namespace, &key)?),
            Request::Delete { namespace, key } => Answer::Deleted(writes.delete(&namespace, &key)?),
            Request::Query(query) => Answer::Query(self.query(&query)?),
            Request::Search(mut search) => {
                search.timeout = self.time_limit(search.timeout);
                Answer::Search(db.search(&search)?)
            }
            Request::Sql(text) => self.sql(&text, durability)?,
            Request::Scan { namespace, cursor, count } => {
                let (next, documents) = db.scan(&namespace, cursor, count.clamp(1, SCAN_COUNT_MAX))?;
                Answer::Scan { next, documents }
            }
            Request::Save => {
                let store = self.store.read();
                let store = store.as_ref().ok_or_else(no_folder)?;
                store.snapshot().map_err(|e| Refusal::request(ErrorCode::Storage, format!("snapshot failed: {e}")))?;
                Answer::Done
            }
            Request::Snapshot => {
                self.store.read().as_ref().ok_or_else(no_folder)?.request_snapshot();
                Answer::Done
            }
        })
    }

    /// A SQL statement: a `SELECT *` answers the query's result (each interface shapes
    /// its documents as a query's), any other statement its JSON answer.
    fn sql(&self, text: &str, durability: Durability<'_>) -> Result<Answer, Refusal> {
        let mut statement = self.statements.parse(text)?;
        match &mut statement {
            hotset_sql::Statement::Select(select) => self.limit_query(&mut select.query),
            hotset_sql::Statement::Update { query, .. } | hotset_sql::Statement::Delete { query } => {
                self.limit_query(query)
            }
            _ => {}
        }
        if let hotset_sql::Statement::Select(hotset_sql::Select { query, projection: hotset_sql::Projection::All }) =
            &statement
        {
            return Ok(Answer::Query(self.db.query(query)?));
        }
        if matches!(
            statement,
            hotset_sql::Statement::Insert { .. }
                | hotset_sql::Statement::Update { .. }
                | hotset_sql::Statement::CreateNamespace { .. }
                | hotset_sql::Statement::CreateIndex { .. }
        ) {
            self.admit(durability)?;
        }
        Ok(Answer::Json(hotset_sql::execute(&self.db, &statement, durability)?))
    }
}

/// SAVE or BGSAVE without a folder (in memory, or closed).
fn no_folder() -> Refusal {
    Refusal::request(ErrorCode::Storage, "the database has no folder to snapshot to (in memory, or closed)")
}

/// Operations on several namespaces as one group, a refused one named by its place among
/// all of them (`GroupFailure::operation`).
fn transaction(writes: Writes<'_>, ops: Vec<(String, Op)>) -> Result<usize, Refusal> {
    let mut group = writes.group();
    for (i, (namespace, op)) in ops.into_iter().enumerate() {
        match op {
            Op::Write(mode, Doc::Value(doc)) => group.write(&namespace, doc, mode),
            Op::Write(mode, Doc::Json(text)) => group.write_json(&namespace, text, mode),
            Op::Delete(key) => group.delete(&namespace, key),
        }
        .map_err(|error| Refusal { cause: Box::new(Cause::Engine(error)), at: Some(i) })?;
    }
    group.commit().map_err(|failure| Refusal { cause: Box::new(Cause::Engine(failure.error)), at: failure.operation })
}

/// Applies a write's operations all together or not at all; how many were applied.
fn write(writes: Writes<'_>, namespace: &str, ops: Vec<Op>) -> Result<usize, Refusal> {
    let at = |i: usize| move |error| Refusal { cause: Box::new(Cause::Engine(error)), at: Some(i) };
    // One parsed document: the engine's single-document write, which skips a
    // transaction's buffers (the common call of a client writing as it goes).
    if let [Op::Write(mode, Doc::Value(doc))] = ops.as_slice() {
        match mode {
            WriteMode::Insert => writes.insert(namespace, doc),
            WriteMode::Update => writes.update(namespace, doc),
            WriteMode::Upsert => writes.upsert(namespace, doc),
        }
        .map_err(at(0))?;
        return Ok(1);
    }
    let mut txn = writes.transaction(namespace)?;
    for (i, op) in ops.into_iter().enumerate() {
        match op {
            Op::Write(WriteMode::Insert, Doc::Value(doc)) => txn.insert(doc),
            Op::Write(WriteMode::Update, Doc::Value(doc)) => txn.update(doc),
            Op::Write(WriteMode::Upsert, Doc::Value(doc)) => txn.upsert(doc),
            Op::Write(WriteMode::Insert, Doc::Json(text)) => txn.insert_json(text),
            Op::Write(WriteMode::Update, Doc::Json(text)) => txn.update_json(text),
            Op::Write(WriteMode::Upsert, Doc::Json(text)) => txn.upsert_json(text),
            Op::Delete(key) => txn.delete(key),
        }
        .map_err(at(i))?;
    }
    txn.commit_naming_failure()
        .map_err(|(position, error)| Refusal { cause: Box::new(Cause::Engine(error)), at: position })
}
