//! `hotset.Transaction`: writes collected (to the transaction's namespace, or to another one
//! an operation names), then applied all together or not at all, in every namespace, as
//! one commit; a context manager that commits when its block ends normally and rolls back
//! when it raises.
//!
//! Owns: the collected operations and the transaction's state (open, committed, rolled
//! back). Never: apply anything before `commit` (readers see none of it until then, and
//! all of it after), or let a finished transaction take more operations.

use crate::backend::{Backend, TxOp, WriteMode};
use crate::convert::{to_json, to_value};
use crate::errors::{Error, failure};
use pyo3::prelude::*;
use pyo3::types::PyAny;
use std::sync::Arc;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Open,
    Committed,
    RolledBack,
}

/// Writes applied together by `commit()`: to the transaction's namespace, or to another one
/// an operation names (`namespace=`), all in one commit.
///
/// ```python
/// with db.transaction("items") as tx:
///     tx.upsert({"id": 1, "name": "a"})
///     tx.delete(2)
/// # committed here; an exception in the block rolls everything back
///
/// with db.transaction("orders") as tx:          # an order and its lines, seen together
///     tx.insert({"id": 1, "total": 30})
///     tx.insert({"id": 10, "order": 1}, namespace="lines")
/// ```
#[pyclass(module = "hotset")]
pub struct Transaction {
    backend: Arc<Backend>,
    namespace: String,
    /// Each operation, with the namespace it names (none: the transaction's).
    ops: Vec<(Option<String>, TxOp)>,
    state: State,
}

impl Transaction {
    pub fn new(backend: Arc<Backend>, namespace: String) -> Transaction {
        Transaction { backend, namespace, ops: Vec::new(), state: State::Open }
    }

    /// Adds `op` on `namespace` (the transaction's own when `None`).
    fn push(&mut self, namespace: Option<String>, op: TxOp) -> PyResult<()> {
        self.push_check()?;
        self.ops.push((namespace, op));
        Ok(())
    }
}

#[pymethods]
impl Transaction {
    /// Adds an insert (fails at commit if the key exists). `namespace`: another namespace
    /// than the transaction's, committed together with the rest.
    #[pyo3(signature = (doc, *, namespace = None))]
    fn insert(&mut self, doc: &Bound<'_, PyAny>, namespace: Option<String>) -> PyResult<()> {
        self.push(namespace, TxOp::Write(WriteMode::Insert, to_json(doc)?))
    }

    /// Adds an update (fails at commit if the key does not exist).
    #[pyo3(signature = (doc, *, namespace = None))]
    fn update(&mut self, doc: &Bound<'_, PyAny>, namespace: Option<String>) -> PyResult<()> {
        self.push(namespace, TxOp::Write(WriteMode::Update, to_json(doc)?))
    }

    /// Adds an insert-or-replace.
    #[pyo3(signature = (doc, *, namespace = None))]
    fn upsert(&mut self, doc: &Bound<'_, PyAny>, namespace: Option<String>) -> PyResult<()> {
        self.push(namespace, TxOp::Write(WriteMode::Upsert, to_json(doc)?))
    }

    /// Adds a delete by primary key (a missing key is not an error).
    #[pyo3(signature = (key, *, namespace = None))]
    fn delete(&mut self, key: &Bound<'_, PyAny>, namespace: Option<String>) -> PyResult<()> {
        self.push(namespace, TxOp::Delete(to_value(key)?))
    }

    /// Applies every operation, all or nothing; returns how many. On failure nothing is
    /// applied and the error names the operation (1-based) that failed.
    fn commit(&mut self, py: Python<'_>) -> PyResult<usize> {
        self.push_check()?;
        self.state = State::Committed;
        let ops = std::mem::take(&mut self.ops);
        let backend = &self.backend;
        let namespace = &self.namespace;
        py.detach(|| backend.transaction(namespace, ops)).map_err(failure)
    }

    /// Drops the collected operations; nothing was applied.
    fn rollback(&mut self) -> PyResult<()> {
        self.push_check()?;
        self.state = State::RolledBack;
        self.ops.clear();
        Ok(())
    }

    /// The namespace the transaction writes to.
    #[getter]
    fn namespace(&self) -> &str {
        &self.namespace
    }

    fn __len__(&self) -> usize {
        self.ops.len()
    }

    fn __enter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    /// Commits when the block ended normally (and the transaction is still open), rolls
    /// back when it raised; never swallows the block's exception.
    fn __exit__(
        &mut self,
        py: Python<'_>,
        exc_type: Option<&Bound<'_, PyAny>>,
        _exc: Option<&Bound<'_, PyAny>>,
        _traceback: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        if self.state == State::Open {
            match exc_type {
                Some(t) if !t.is_none() => self.rollback()?,
                _ => {
                    self.commit(py)?;
                }
            }
        }
        Ok(false)
    }

    fn __repr__(&self) -> String {
        format!("Transaction(namespace={:?}, operations={}, state={:?})", self.namespace, self.ops.len(), self.state)
    }
}

impl Transaction {
    fn push_check(&self) -> PyResult<()> {
        match self.state {
            State::Open => Ok(()),
            State::Committed => Err(Error::new_err("the transaction was already committed")),
            State::RolledBack => Err(Error::new_err("the transaction was already rolled back")),
        }
    }
}
