//! `hotset.Database`: the object `hotset.open` and `hotset.connect` return, with every
//! namespace, document, query, SQL and transaction call.
//!
//! Owns: the Python signatures of those calls, converting their arguments (with the GIL)
//! before the work and their answers after it, and running the work itself without the
//! GIL so other Python threads go on meanwhile. Never: decide anything the engine decides;
//! a call here is the same call on the backend.

use crate::backend::{Backend, Outcome, WriteMode};
use crate::convert::{json_to_py, to_json, to_value, value_to_py};
use crate::errors::failure;
use crate::query::Query;
use crate::result::QueryResult;
use crate::transaction::Transaction;
use pyo3::prelude::*;
use pyo3::types::PyAny;
use std::sync::Arc;

/// A Hotset database: embedded (`hotset.open`) or a server (`hotset.connect`); the same
/// calls either way. Safe to share between threads; a context manager that closes it.
#[pyclass(frozen, module = "hotset")]
pub struct Database {
    backend: Arc<Backend>,
}

/// A procedure's argument as it reaches the function: text or bytes as they are, any other
/// value as its compact JSON text (as the HTTP route passes a JSON array's items).
fn argument(value: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    if let Ok(text) = value.cast::<pyo3::types::PyString>() {
        return Ok(text.to_str()?.as_bytes().to_vec());
    }
    if let Ok(bytes) = value.cast::<pyo3::types::PyBytes>() {
        return Ok(bytes.as_bytes().to_vec());
    }
    Ok(to_value(value)?.to_string().into_bytes())
}

impl Database {
    pub fn new(backend: Backend) -> Database {
        Database { backend: Arc::new(backend) }
    }

    /// Runs `work` on the backend without the GIL.
    fn run<T: Send>(&self, py: Python<'_>, work: impl FnOnce(&Backend) -> Outcome<T> + Send) -> PyResult<T> {
        let backend = &self.backend;
        py.detach(|| work(backend)).map_err(failure)
    }

    fn write(&self, py: Python<'_>, namespace: &str, mode: WriteMode, doc: &Bound<'_, PyAny>) -> PyResult<()> {
        let doc = to_value(doc)?;
        self.run(py, move |b| b.write(namespace, mode, doc))
    }

    fn write_many(&self, py: Python<'_>, namespace: &str, mode: WriteMode, docs: &Bound<'_, PyAny>) -> PyResult<usize> {
        let docs: Vec<Vec<u8>> = docs.try_iter()?.map(|doc| to_json(&doc?)).collect::<PyResult<_>>()?;
        self.run(py, |b| b.write_many(namespace, mode, docs))
    }
}

#[pymethods]
impl Database {
    /// Creates a namespace. `indexes` are dicts as the HTTP API takes them, e.g.
    /// `{"field": "id", "type": "int", "index": "hash", "pk": True}`,
    /// `{"field": "year", "type": "int", "index": "tree"}`,
    /// `{"field": "description", "index": "text"}`; one must be the primary key.
    #[pyo3(signature = (name, indexes = None))]
    fn create_namespace(&self, py: Python<'_>, name: &str, indexes: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        let defs = match indexes {
            None => Vec::new(),
            Some(list) => list.try_iter()?.map(|def| to_value(&def?)).collect::<PyResult<Vec<_>>>()?,
        };
        self.run(py, |b| b.create_namespace(name, &defs))
    }

    /// Drops a namespace and its documents.
    fn drop_namespace(&self, py: Python<'_>, name: &str) -> PyResult<()> {
        self.run(py, |b| b.drop_namespace(name))
    }

    /// Removes every document of a namespace, keeping its indexes.
    fn truncate(&self, py: Python<'_>, name: &str) -> PyResult<()> {
        self.run(py, |b| b.truncate(name))
    }

    /// The names of the namespaces.
    fn namespaces(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        self.run(py, Backend::namespaces)
    }

    /// A namespace's indexes, document count and memory, as a dict.
    fn describe<'py>(&self, py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyAny>> {
        let info = self.run(py, |b| b.describe(name))?;
        value_to_py(py, &info)
    }

    /// Adds an index (a dict as in `create_namespace`) and builds it.
    fn add_index(&self, py: Python<'_>, namespace: &str, index: &Bound<'_, PyAny>) -> PyResult<()> {
        let def = to_value(index)?;
        self.run(py, |b| b.add_index(namespace, &def))
    }

    /// Drops an index by name.
    fn drop_index(&self, py: Python<'_>, namespace: &str, index: &str) -> PyResult<()> {
        self.run(py, |b| b.drop_index(namespace, index))
    }

    /// Inserts a document; an existing primary key raises `AlreadyExistsError`.
    fn insert(&self, py: Python<'_>, namespace: &str, doc: &Bound<'_, PyAny>) -> PyResult<()> {
        self.write(py, namespace, WriteMode::Insert, doc)
    }

    /// Replaces an existing document; a missing key raises `NotFoundError`.
    fn update(&self, py: Python<'_>, namespace: &str, doc: &Bound<'_, PyAny>) -> PyResult<()> {
        self.write(py, namespace, WriteMode::Update, doc)
    }

    /// Inserts or replaces a document by its primary key.
    fn upsert(&self, py: Python<'_>, namespace: &str, doc: &Bound<'_, PyAny>) -> PyResult<()> {
        self.write(py, namespace, WriteMode::Upsert, doc)
    }

    /// Inserts documents (any iterable of dicts), all or nothing; returns how many.
    fn insert_many(&self, py: Python<'_>, namespace: &str, docs: &Bound<'_, PyAny>) -> PyResult<usize> {
        self.write_many(py, namespace, WriteMode::Insert, docs)
    }

    /// Updates documents, all or nothing; returns how many.
    fn update_many(&self, py: Python<'_>, namespace: &str, docs: &Bound<'_, PyAny>) -> PyResult<usize> {
        self.write_many(py, namespace, WriteMode::Update, docs)
    }

    /// Upserts documents, all or nothing; returns how many.
    fn upsert_many(&self, py: Python<'_>, namespace: &str, docs: &Bound<'_, PyAny>) -> PyResult<usize> {
        self.write_many(py, namespace, WriteMode::Upsert, docs)
    }

    /// Deletes by primary key (a scalar, or a tuple for a composite key); whether a
    /// document was deleted.
    fn delete(&self, py: Python<'_>, namespace: &str, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        let key = to_value(key)?;
        self.run(py, |b| b.delete(namespace, &key))
    }

    /// The document with primary key `key`, or None.
    fn get<'py>(&self, py: Python<'py>, namespace: &str, key: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let key = to_value(key)?;
        match self.run(py, |b| b.get(namespace, &key))? {
            Some(doc) => json_to_py(py, &doc),
            None => Ok(py.None().into_bound(py)),
        }
    }

    /// Starts a query on `namespace` (see `Query`).
    fn query(&self, namespace: &str) -> Query {
        Query::new(Arc::clone(&self.backend), namespace)
    }

    /// Runs one SQL statement: SELECT (with MATCH, JOIN, aggregates, EXPLAIN), INSERT,
    /// UPDATE, DELETE, CREATE/DROP TABLE and INDEX, TRUNCATE.
    fn sql(&self, py: Python<'_>, text: &str) -> PyResult<QueryResult> {
        let answer = self.run(py, |b| b.sql(text))?;
        QueryResult::from_answer(py, answer)
    }

    /// Full-text search across namespaces, merged by rank: `search` is the dict the
    /// HTTP API's `/api/v1/search` takes (`{"query": "words", "namespaces": [..], "limit": ..}`).
    fn search(&self, py: Python<'_>, search: &Bound<'_, PyAny>) -> PyResult<QueryResult> {
        let search = to_value(search)?;
        let answer = self.run(py, |b| b.search(&search))?;
        QueryResult::from_answer(py, answer)
    }

    /// A transaction on one namespace (a context manager; see `Transaction`).
    fn transaction(&self, namespace: &str) -> Transaction {
        Transaction::new(Arc::clone(&self.backend), namespace.to_string())
    }

    /// Calls function `name` of a loaded Lua library (a procedure) with `args` and returns
    /// its return value as Python objects (a table becomes a dict or a list, `hotset.null`
    /// None), as `DOC.CALL` and `POST /api/v1/functions/{name}` answer it. A str or bytes
    /// argument is passed as it is, anything else as its JSON text (the function can
    /// `hotset.fromjson` it). Its document writes are applied together when it returns
    /// without an error, or not at all. Embedded, it runs in this process (`redis.call` is
    /// refused: there are no keys); as a client, on the server.
    #[pyo3(signature = (name, *args))]
    fn call<'py>(&self, py: Python<'py>, name: &str, args: Vec<Bound<'py, PyAny>>) -> PyResult<Bound<'py, PyAny>> {
        let arguments = args.iter().map(argument).collect::<PyResult<Vec<Vec<u8>>>>()?;
        let answer = self.run(py, |backend| backend.call_function(name, &arguments))?;
        json_to_py(py, &answer)
    }

    /// Loads a Lua function library (its code starts with `#!lua name=<library>`), as
    /// FUNCTION LOAD does; `replace`: replace a library of that name. Returns the library's
    /// name. Kept with the database (on a folder, it is logged; a client's server logs it).
    #[pyo3(signature = (code, replace = false))]
    fn function_load(&self, py: Python<'_>, code: &Bound<'_, PyAny>, replace: bool) -> PyResult<String> {
        let code: Vec<u8> = match code.extract::<String>() {
            Ok(text) => text.into_bytes(),
            Err(_) => code.extract::<Vec<u8>>()?,
        };
        self.run(py, |backend| backend.function_load(&code, replace))
    }

    /// Every loaded library and its functions: `[{"library_name", "engine", "functions":
    /// [{"name", "description", "flags"}]}]`, as `GET /api/v1/functions` lists them.
    fn functions<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let listed = self.run(py, |backend| backend.functions())?;
        value_to_py(py, &listed)
    }

    /// Closes the database. Embedded on a folder: writes and fsyncs the log and releases
    /// the folder; a client closes its connections. Calls after this raise `ClosedError`
    /// (queries and transactions made before too); closing again does nothing.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let backend = &self.backend;
        py.detach(|| backend.close()).map_err(failure)
    }

    /// Runs now the background work that is due on the database's clock (expired keys,
    /// documents past their `ttl` index, a snapshot on a folder) and returns what each job
    /// did, e.g. `{"ttl expiry": 3}`. A background thread does this by itself; this is for
    /// tests that move a `hotset.ManualClock`. Embedded only.
    fn run_maintenance<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
        let round = self.run(py, |backend| backend.run_maintenance())?;
        let dict = pyo3::types::PyDict::new(py);
        for (job, count) in round {
            dict.set_item(job, count)?;
        }
        Ok(dict)
    }

    /// Whether `close()` was called.
    #[getter]
    fn closed(&self) -> bool {
        self.backend.is_closed()
    }

    fn __enter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    fn __exit__(
        &self,
        py: Python<'_>,
        _exc_type: Option<&Bound<'_, PyAny>>,
        _exc: Option<&Bound<'_, PyAny>>,
        _traceback: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        self.close(py)?;
        Ok(false)
    }

    fn __repr__(&self) -> String {
        format!("<hotset.Database {}>", self.backend.describe_self())
    }
}
