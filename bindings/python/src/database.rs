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
