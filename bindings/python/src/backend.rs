//! Where a `hotset.Database` sends its work: the engine in this process (in memory or on
//! a folder), or a server over its Redis protocol. Both answer the same calls with the
//! same shapes, so Python code moves from one to the other by changing how it opens.
//!
//! Owns: `Backend` and its calls, which run without the GIL (the Python layer calls them
//! inside `Python::detach`) and never touch a Python object; `Answer`, what a query gave
//! back before it becomes Python objects; `Failure`, an error before it becomes a Python
//! exception. Never: semantics of its own: the embedded side applies a `hotset_ops`
//! request to its engine, the remote side sends the `DOC.*` command that applies the same
//! request on the server.

use crate::remote::{CallError, Remote, Reply};
use hotset_core::clock::{Clock, SystemClock};
use hotset_core::query::{QueryResult, dsl};
use hotset_core::{Database, Document, Error as EngineError, IndexDef, Limits, Query, Search, SearchResult};
use hotset_ops::{Doc, Engine, Op, Refusal, Request, Settings};
use hotset_storage::{FsyncPolicy, Store, StoreOptions};
use serde_json::Value;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// A failed call, before it is a Python exception (that needs the GIL).
#[derive(Debug)]
pub enum Failure {
    Engine(EngineError),
    Sql(hotset_sql::SqlError),
    /// A server's error line (`errors::server` reads it).
    Server(String),
    /// A request the operation layer refused before the engine saw it: its code and message.
    Coded(hotset_core::error::ErrorCode, String),
    Connection(String),
    Storage(String),
    /// A call this kind of database does not have (what, why).
    Unsupported(String),
    Closed,
}

impl From<EngineError> for Failure {
    fn from(error: EngineError) -> Failure {
        Failure::Engine(error)
    }
}

impl From<Refusal> for Failure {
    fn from(refusal: Refusal) -> Failure {
        match *refusal.cause {
            hotset_ops::Cause::Engine(error) => Failure::Engine(error),
            hotset_ops::Cause::Sql(error) => Failure::Sql(error),
            hotset_ops::Cause::Request { code, message } => Failure::Coded(code, message),
        }
    }
}

impl From<CallError> for Failure {
    fn from(error: CallError) -> Failure {
        match error {
            // The server's NOAUTH/WRONGPASS line: `errors::server` reads its code word.
            CallError::Server(line) | CallError::Auth(line) => Failure::Server(line),
            CallError::Connection(reason) => Failure::Connection(reason),
            CallError::Closed => Failure::Closed,
        }
    }
}

pub type Outcome<T> = Result<T, Failure>;

/// What a query, SQL statement or search answered, still in Rust.
pub enum Answer {
    /// The engine's own result (embedded queries).
    Local(QueryResult),
    /// A full-text search across namespaces (embedded).
    Search(SearchResult),
    /// JSON text in the DSL's result shape: a server's reply, or an embedded SQL answer.
    Wire(Vec<u8>),
}

pub use hotset_ops::WriteMode;

/// The `DOC.*` command of a write in `mode`.
fn write_command(mode: WriteMode) -> &'static [u8] {
    match mode {
        WriteMode::Insert => b"DOC.INSERT",
        WriteMode::Update => b"DOC.UPDATE",
        WriteMode::Upsert => b"DOC.UPSERT",
    }
}

/// One operation of a transaction; documents as JSON text (`convert::to_json`).
pub enum TxOp {
    Write(WriteMode, Vec<u8>),
    Delete(Value),
}

impl TxOp {
    /// The operation layer's form.
    fn into_request(self) -> Op {
        match self {
            TxOp::Write(mode, doc) => Op::Write(mode, Doc::Json(doc)),
            TxOp::Delete(key) => Op::Delete(key),
        }
    }
}

pub enum Backend {
    Embedded(Box<Embedded>),
    Remote(Remote),
}

pub struct Embedded {
    /// The database, its folder's store (or its background work in memory), and the
    /// parsed SQL shapes.
    engine: Engine,
    /// The Lua engine of procedures, made at their first use (`procedures.rs`).
    procedures: crate::procedures::Procedures,
    closed: AtomicBool,
    pub path: Option<String>,
}

/// The fsync policy named as the server's `--fsync` names it.
pub fn fsync_policy(name: &str) -> Option<FsyncPolicy> {
    match name {
        "always" => Some(FsyncPolicy::Always),
        "periodic" | "everysec" => Some(FsyncPolicy::Periodic(Duration::from_secs(1))),
        "never" | "no" => Some(FsyncPolicy::Never),
        _ => None,
    }
}

impl Backend {
    /// The engine in memory only, reading time from `clock` (the system's by default).
    pub fn memory(clock: Option<Arc<dyn Clock>>) -> Outcome<Backend> {
        let clock = clock.unwrap_or_else(|| Arc::new(SystemClock));
        let db = Arc::new(Database::with_clock(clock, Limits::default()));
        let engine = Engine::in_memory(db, Settings::default())
            .map_err(|e| Failure::Storage(format!("starting the maintenance thread: {e}")))?;
        Ok(Backend::Embedded(Box::new(Embedded {
            engine,
            procedures: Default::default(),
            closed: AtomicBool::new(false),
            path: None,
        })))
    }

    /// The engine on a folder: recovers what the folder holds, then logs every write.
    pub fn open(path: &str, fsync: FsyncPolicy, clock: Option<Arc<dyn Clock>>) -> Outcome<Backend> {
        let mut options = StoreOptions::new(path);
        options.fsync = fsync;
        if let Some(clock) = clock {
            options.clock = clock;
        }
        let store = Store::open(options).map_err(|e| Failure::Storage(format!("opening {path}: {e}")))?;
        Ok(Backend::Embedded(Box::new(Embedded {
            engine: Engine::on_store(store, Settings::default()),
            procedures: Default::default(),
            closed: AtomicBool::new(false),
            path: Some(path.to_string()),
        })))
    }

    pub fn connect(url: &str, timeout: Option<Duration>) -> Outcome<Backend> {
        Ok(Backend::Remote(crate::remote::connect(url, timeout)?))
    }

    pub fn describe_self(&self) -> String {
        match self {
            Backend::Embedded(embedded) => match &embedded.path {
                Some(path) => format!("embedded, on {path}"),
                None => "embedded, in memory".to_string(),
            },
            Backend::Remote(remote) => format!("client of hotset://{}", remote.address()),
        }
    }

    pub fn is_closed(&self) -> bool {
        match self {
            Backend::Embedded(embedded) => embedded.closed.load(Ordering::Acquire),
            Backend::Remote(remote) => remote.is_closed(),
        }
    }

    /// Closes the database: on a folder, writes and fsyncs the log and releases the folder;
    /// a client closes its connections. Every later call fails with `Failure::Closed`;
    /// closing again does nothing.
    pub fn close(&self) -> Outcome<()> {
        match self {
            Backend::Embedded(embedded) => {
                embedded.closed.store(true, Ordering::Release);
                embedded.engine.close().map_err(|e| Failure::Storage(e.to_string()))
            }
            Backend::Remote(remote) => {
                remote.close();
                Ok(())
            }
        }
    }

    /// Runs the background jobs due on the database's clock now (key expiry, `ttl` index
    /// expiry, snapshots on a folder) and says what each did. Embedded only: a server runs
    /// its own.
    pub fn run_maintenance(&self) -> Outcome<Vec<(&'static str, u64)>> {
        let Backend::Embedded(embedded) = self else {
            return Err(Failure::Unsupported(
                "run_maintenance is for an embedded database; a server runs its own".into(),
            ));
        };
        if embedded.closed.load(Ordering::Acquire) {
            return Err(Failure::Closed);
        }
        let round = embedded.engine.run_maintenance().ok_or(Failure::Closed)?;
        round
            .into_iter()
            .map(|(job, outcome)| {
                outcome.map(|count| (job, count)).map_err(|e| Failure::Storage(format!("{job}: {e}")))
            })
            .collect()
    }

    /// The engine when embedded and open; `None` for a client.
    fn engine(&self) -> Outcome<Option<&Engine>> {
        match self {
            Backend::Embedded(embedded) if embedded.closed.load(Ordering::Acquire) => Err(Failure::Closed),
            Backend::Embedded(embedded) => Ok(Some(&embedded.engine)),
            Backend::Remote(remote) if remote.is_closed() => Err(Failure::Closed),
            Backend::Remote(_) => Ok(None),
        }
    }

    /// The engine and its procedures when embedded and open; `None` for a client.
    fn embedded(&self) -> Outcome<Option<&Embedded>> {
        match self {
            Backend::Embedded(embedded) if embedded.closed.load(Ordering::Acquire) => Err(Failure::Closed),
            Backend::Embedded(embedded) => Ok(Some(embedded)),
            Backend::Remote(remote) if remote.is_closed() => Err(Failure::Closed),
            Backend::Remote(_) => Ok(None),
        }
    }

    fn remote(&self) -> &Remote {
        match self {
            Backend::Remote(remote) => remote,
            Backend::Embedded(_) => unreachable!("engine() answered None only for a remote backend"),
        }
    }

    fn call(&self, args: &[&[u8]]) -> Outcome<Reply> {
        Ok(self.remote().call(args)?)
    }

    fn call_bulk(&self, args: &[&[u8]]) -> Outcome<Vec<u8>> {
        match self.call(args)? {
            Reply::Bulk(bytes) => Ok(bytes),
            other => Err(unexpected(&other)),
        }
    }

    fn call_int(&self, args: &[&[u8]]) -> Outcome<i64> {
        match self.call(args)? {
            Reply::Int(n) => Ok(n),
            other => Err(unexpected(&other)),
        }
    }

    pub fn create_namespace(&self, name: &str, indexes: &[Value]) -> Outcome<()> {
        match self.engine()? {
            Some(engine) => {
                let indexes = indexes.iter().map(IndexDef::from_json).collect::<Result<Vec<_>, _>>()?;
                engine
                    .apply(Request::CreateNamespace { name: name.to_string(), indexes })
                    .map(drop)
                    .map_err(Failure::from)
            }
            None => {
                let defs = Value::Array(indexes.to_vec()).to_string();
                self.call(&[b"DOC.NSCREATE", name.as_bytes(), defs.as_bytes()]).map(drop)
            }
        }
    }

    pub fn drop_namespace(&self, name: &str) -> Outcome<()> {
        match self.engine()? {
            Some(engine) => done(engine, Request::DropNamespace { name: name.to_string() }),
            None => self.call(&[b"DOC.NSDROP", name.as_bytes()]).map(drop),
        }
    }

    pub fn truncate(&self, name: &str) -> Outcome<()> {
        match self.engine()? {
            Some(engine) => done(engine, Request::Truncate { name: name.to_string() }),
            None => self.call(&[b"DOC.NSTRUNCATE", name.as_bytes()]).map(drop),
        }
    }

    pub fn namespaces(&self) -> Outcome<Vec<String>> {
        match self.engine()? {
            Some(engine) => match engine.apply(Request::Namespaces)? {
                hotset_ops::Answer::Names(names) => Ok(names),
                other => Err(unexpected_answer(&other)),
            },
            None => match self.call(&[b"DOC.NSLIST"])? {
                Reply::Array(items) => items
                    .into_iter()
                    .map(|item| match item {
                        Reply::Bulk(name) => String::from_utf8(name).map_err(|_| protocol("a name that is not UTF-8")),
                        other => Err(unexpected(&other)),
                    })
                    .collect(),
                other => Err(unexpected(&other)),
            },
        }
    }

    pub fn describe(&self, name: &str) -> Outcome<Value> {
        match self.engine()? {
            Some(engine) => match engine.apply(Request::Describe { name: name.to_string() })? {
                hotset_ops::Answer::Namespace(info) => Ok(info.to_json()),
                other => Err(unexpected_answer(&other)),
            },
            None => {
                let bytes = self.call_bulk(&[b"DOC.NSINFO", name.as_bytes()])?;
                serde_json::from_slice(&bytes).map_err(|e| protocol(&format!("namespace info that is not JSON: {e}")))
            }
        }
    }

    pub fn add_index(&self, namespace: &str, index: &Value) -> Outcome<()> {
        match self.engine()? {
            Some(engine) => {
                done(engine, Request::AddIndex { namespace: namespace.to_string(), index: IndexDef::from_json(index)? })
            }
            None => {
                let def = index.to_string();
                self.call(&[b"DOC.INDEXADD", namespace.as_bytes(), def.as_bytes()]).map(drop)
            }
        }
    }

    pub fn drop_index(&self, namespace: &str, index: &str) -> Outcome<()> {
        match self.engine()? {
            Some(engine) => {
                done(engine, Request::DropIndex { namespace: namespace.to_string(), index: index.to_string() })
            }
            None => self.call(&[b"DOC.INDEXDROP", namespace.as_bytes(), index.as_bytes()]).map(drop),
        }
    }

    /// Writes one document.
    pub fn write(&self, namespace: &str, mode: WriteMode, doc: Value) -> Outcome<()> {
        match self.engine()? {
            Some(engine) => {
                let ops = vec![Op::Write(mode, Doc::Value(doc))];
                done(engine, Request::Write { namespace: namespace.to_string(), ops })
            }
            None => {
                let json = doc.to_string();
                self.call_int(&[write_command(mode), namespace.as_bytes(), json.as_bytes()]).map(drop)
            }
        }
    }

    /// Writes documents (JSON text) all together or not at all; returns how many.
    pub fn write_many(&self, namespace: &str, mode: WriteMode, docs: Vec<Vec<u8>>) -> Outcome<usize> {
        self.transaction(namespace, docs.into_iter().map(|doc| (None, TxOp::Write(mode, doc))).collect())
    }

    pub fn delete(&self, namespace: &str, key: &Value) -> Outcome<bool> {
        match self.engine()? {
            Some(engine) => {
                match engine.apply(Request::Delete { namespace: namespace.to_string(), key: key.clone() })? {
                    hotset_ops::Answer::Deleted(deleted) => Ok(deleted),
                    other => Err(unexpected_answer(&other)),
                }
            }
            None => {
                let key = key.to_string();
                Ok(self.call_int(&[b"DOC.DEL", namespace.as_bytes(), key.as_bytes()])? > 0)
            }
        }
    }

    pub fn get(&self, namespace: &str, key: &Value) -> Outcome<Option<Document>> {
        match self.engine()? {
            Some(engine) => match engine.apply(Request::Get { namespace: namespace.to_string(), key: key.clone() })? {
                hotset_ops::Answer::Document(doc) => Ok(doc),
                other => Err(unexpected_answer(&other)),
            },
            None => {
                let key = key.to_string();
                match self.call(&[b"DOC.GET", namespace.as_bytes(), key.as_bytes()])? {
                    Reply::Bulk(bytes) => Ok(Some(Document::from(bytes))),
                    Reply::Nil => Ok(None),
                    other => Err(unexpected(&other)),
                }
            }
        }
    }

    /// Applies operations on `namespace`, or on the one an operation names, all together or
    /// not at all (across several namespaces, in one commit); returns how many. Embedded:
    /// `Request::transaction`; as a client: `DOC.TXN`, with an `NS` pair where the
    /// namespace changes. Operations are numbered in the order given either way. With no
    /// operation, `namespace` must still exist.
    pub fn transaction(&self, namespace: &str, ops: Vec<(Option<String>, TxOp)>) -> Outcome<usize> {
        match self.engine()? {
            Some(engine) => {
                let _give_back = (ops.len() >= LARGE_TRANSACTION).then_some(GiveBackFreeMemory);
                let ops = ops.into_iter().map(|(namespace, op)| (namespace, op.into_request())).collect();
                match engine.apply(Request::transaction(namespace.to_string(), ops))? {
                    hotset_ops::Answer::Count(count) => Ok(count),
                    other => Err(unexpected_answer(&other)),
                }
            }
            None => {
                if ops.is_empty() {
                    // Nothing to send; the namespace must still exist, as embedded.
                    self.describe(namespace)?;
                    return Ok(0);
                }
                // Keys as JSON text, written first so the arguments can borrow everything.
                let keys: Vec<Option<String>> = ops
                    .iter()
                    .map(|(_, op)| match op {
                        TxOp::Delete(key) => Some(key.to_string()),
                        TxOp::Write(..) => None,
                    })
                    .collect();
                let mut args: Vec<&[u8]> = vec![b"DOC.TXN", namespace.as_bytes()];
                let mut current = namespace;
                for ((named, op), key) in ops.iter().zip(&keys) {
                    let target = named.as_deref().unwrap_or(namespace);
                    if target != current {
                        args.extend([&b"NS"[..], target.as_bytes()]);
                        current = target;
                    }
                    args.extend(match op {
                        TxOp::Write(WriteMode::Insert, doc) => [&b"INSERT"[..], doc.as_slice()],
                        TxOp::Write(WriteMode::Update, doc) => [&b"UPDATE"[..], doc.as_slice()],
                        TxOp::Write(WriteMode::Upsert, doc) => [&b"UPSERT"[..], doc.as_slice()],
                        TxOp::Delete(_) => [&b"DELETE"[..], key.as_deref().unwrap_or_default().as_bytes()],
                    });
                }
                Ok(self.call_int(&args)? as usize)
            }
        }
    }

    /// A query; `after`: live-sync positions the server waits for before running it.
    pub fn query(&self, query: &Query, after: &[(String, String)]) -> Outcome<Answer> {
        match self.engine()? {
            Some(_) if !after.is_empty() => Err(Failure::Coded(
                hotset_core::error::ErrorCode::NotFound,
                format!("source {} does not exist: an embedded database follows no source", after[0].0),
            )),
            Some(engine) => Ok(Answer::Local(engine.query(query)?)),
            None => {
                let mut json = dsl::query_to_json(query);
                if !after.is_empty() {
                    let positions: serde_json::Map<String, Value> = after
                        .iter()
                        .map(|(source, position)| (source.clone(), Value::from(position.as_str())))
                        .collect();
                    json["after"] = Value::Object(positions);
                }
                Ok(Answer::Wire(self.call_bulk(&[b"DOC.QUERY", json.to_string().as_bytes()])?))
            }
        }
    }

    /// A SQL statement. Embedded, a SELECT of whole documents answers as the builder's
    /// query does: its items become dicts straight from the engine's result (through JSON
    /// text, written and parsed back, it cost a third of a full-text query's time).
    pub fn sql(&self, text: &str) -> Outcome<Answer> {
        match self.engine()? {
            Some(engine) => answer(engine.apply(Request::Sql(text.to_string()))?),
            None => Ok(Answer::Wire(self.call_bulk(&[b"DOC.SQL", text.as_bytes()])?)),
        }
    }

    pub fn search(&self, search: &Value) -> Outcome<Answer> {
        match self.engine()? {
            Some(engine) => answer(engine.apply(Request::Search(Search::from_json(search)?))?),
            None => {
                let json = search.to_string();
                Ok(Answer::Wire(self.call_bulk(&[b"DOC.SEARCH", json.as_bytes()])?))
            }
        }
    }
}

impl Backend {
    /// Calls a function of a loaded library with `arguments`; its return value as JSON
    /// text. Embedded: in this process (`procedures.rs`); as a client: `DOC.CALL`.
    pub fn call_function(&self, name: &str, arguments: &[Vec<u8>]) -> Outcome<Vec<u8>> {
        match self.embedded()? {
            Some(embedded) => embedded.procedures.call(&embedded.engine, name, arguments),
            None => {
                let mut args: Vec<&[u8]> = vec![b"DOC.CALL", name.as_bytes()];
                args.extend(arguments.iter().map(Vec::as_slice));
                self.call_bulk(&args)
            }
        }
    }

    /// Loads a Lua library (FUNCTION LOAD [REPLACE]); its name.
    pub fn function_load(&self, code: &[u8], replace: bool) -> Outcome<String> {
        match self.embedded()? {
            Some(embedded) => embedded.procedures.load(&embedded.engine, code, replace),
            None => {
                let mut args: Vec<&[u8]> = vec![b"FUNCTION", b"LOAD"];
                if replace {
                    args.push(b"REPLACE");
                }
                args.push(code);
                let name = self.call_bulk(&args)?;
                String::from_utf8(name).map_err(|_| protocol("a library name that is not UTF-8"))
            }
        }
    }

    /// Every library and its functions, as JSON (`DOC.FUNCTIONS` as a client).
    pub fn functions(&self) -> Outcome<Value> {
        match self.embedded()? {
            Some(embedded) => embedded.procedures.list(&embedded.engine),
            None => {
                let text = self.call_bulk(&[b"DOC.FUNCTIONS"])?;
                let mut listed: Value =
                    serde_json::from_slice(&text).map_err(|_| protocol("a DOC.FUNCTIONS answer that is not JSON"))?;
                Ok(listed.get_mut("items").map(Value::take).unwrap_or_default())
            }
        }
    }
}

/// Applies a request that answers nothing but success.
fn done(engine: &Engine, request: Request) -> Outcome<()> {
    engine.apply(request).map(drop).map_err(Failure::from)
}

/// A query's, statement's or search's answer as this package keeps it.
fn answer(answer: hotset_ops::Answer) -> Outcome<Answer> {
    match answer {
        hotset_ops::Answer::Query(result) => Ok(Answer::Local(result)),
        hotset_ops::Answer::Search(result) => Ok(Answer::Search(result)),
        hotset_ops::Answer::Json(text) => Ok(Answer::Wire(text)),
        other => Err(unexpected_answer(&other)),
    }
}

fn unexpected_answer(answer: &hotset_ops::Answer) -> Failure {
    Failure::Storage(format!("the engine gave an unexpected answer: {answer:?}"))
}

/// Operations from which a transaction's freed memory is worth handing back to the
/// system at once after the commit (its collected documents alone can be a few hundred MB).
const LARGE_TRANSACTION: usize = 10_000;

/// After a large commit, returns what the allocator holds free to the system now instead
/// of over the next seconds, so a process that just loaded data is not left twice its
/// size.
struct GiveBackFreeMemory;

impl Drop for GiveBackFreeMemory {
    #[allow(unsafe_code)]
    fn drop(&mut self) {
        // SAFETY: mi_collect only walks mimalloc's own heaps (the global allocator here);
        // it takes no pointers and may be called from any thread at any time.
        unsafe { libmimalloc_sys::mi_collect(true) };
    }
}

fn protocol(what: &str) -> Failure {
    Failure::Connection(format!("the server sent {what}"))
}

fn unexpected(reply: &Reply) -> Failure {
    protocol(&format!("an unexpected reply: {reply:?}"))
}
