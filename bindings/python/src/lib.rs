//! The `hotset` Python package's native module (`hotset._hotset`): Hotset's engine inside
//! the Python process, and a client for a Hotset server, behind one `Database` class.
//!
//! Owns: the module's functions (`open`, `connect`) and its classes, each in a module of
//! its own: `database` (the calls), `query` (the builder), `result` (answers as Python
//! objects), `transaction`, `errors` (exception classes), `convert` (Python values to
//! and from the engine's), `backend` (embedded or remote), `remote` (the RESP client), `procedures` (Lua function
//! libraries run embedded).
//! Never: hold the GIL while the engine or the network works.

mod backend;
mod convert;
mod database;
mod errors;
mod procedures;
mod query;
mod remote;
mod result;
mod transaction;

use backend::Backend;

/// The engine's own allocations (documents, indexes, a transaction's collected writes)
/// go through mimalloc: glibc malloc spent a large share of a bulk load in frees, and
/// kept freed memory in the process long after a large transaction. Python's objects
/// stay with Python's allocator.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
use database::Database;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use std::sync::Arc;

/// Opens a database in this process: on the folder `path` (created when missing; what it
/// holds is recovered, and every acknowledged write survives a crash under the fsync
/// policy: `"always"`, `"periodic"` (the default: fsync every second) or `"never"`), or
/// in memory only when `path` is None. `clock` (a `ManualClock`) replaces the system's
/// for key expiry, `ttl` indexes, snapshots' age and query time limits: tests move it.
#[pyfunction]
#[pyo3(signature = (path = None, *, fsync = "periodic", clock = None))]
fn open(
    py: Python<'_>,
    path: Option<std::path::PathBuf>,
    fsync: &str,
    clock: Option<PyRef<'_, ManualClock>>,
) -> PyResult<Database> {
    let policy = backend::fsync_policy(fsync)
        .ok_or_else(|| PyValueError::new_err(format!("fsync '{fsync}' is not 'always', 'periodic' or 'never'")))?;
    let clock = clock.map(|c| Arc::clone(&c.0) as Arc<dyn hotset_core::clock::Clock>);
    let backend = match path {
        None => py.detach(|| Backend::memory(clock)).map_err(errors::failure)?,
        Some(path) => {
            let path = path.to_string_lossy().into_owned();
            py.detach(|| Backend::open(&path, policy, clock)).map_err(errors::failure)?
        }
    };
    Ok(Database::new(backend))
}

/// A clock that moves only when told to, for `open(clock=...)`: milliseconds since the
/// Unix epoch, starting at `now_ms` (the system's time now when omitted).
#[pyclass(module = "hotset", frozen)]
struct ManualClock(Arc<hotset_core::clock::ManualClock>);

#[pymethods]
impl ManualClock {
    #[new]
    #[pyo3(signature = (now_ms = None))]
    fn new(now_ms: Option<u64>) -> ManualClock {
        use hotset_core::clock::Clock;
        let start = now_ms.unwrap_or_else(|| hotset_core::clock::SystemClock.now_ms());
        ManualClock(Arc::new(hotset_core::clock::ManualClock::new(start)))
    }

    /// Moves the clock forward by `ms` milliseconds; returns the new time.
    fn advance(&self, ms: u64) -> u64 {
        self.0.advance(ms)
    }

    /// Sets the time (milliseconds since the Unix epoch).
    fn set(&self, now_ms: u64) {
        self.0.set(now_ms);
    }

    /// The time, in milliseconds since the Unix epoch.
    #[getter]
    fn now_ms(&self) -> u64 {
        use hotset_core::clock::Clock;
        self.0.now_ms()
    }

    fn __repr__(&self) -> String {
        format!("<hotset.ManualClock {}>", self.now_ms())
    }
}

/// Connects to a running Hotset server: `url` is `hotset://[:password@]host[:port]`
/// (port 7379 by default). `timeout` (seconds) bounds connecting and each reply; None
/// waits as long as the server takes.
#[pyfunction]
#[pyo3(signature = (url, *, timeout = None))]
fn connect(py: Python<'_>, url: &str, timeout: Option<f64>) -> PyResult<Database> {
    let timeout = match timeout {
        Some(t) if t.is_finite() && t > 0.0 => Some(std::time::Duration::from_secs_f64(t)),
        Some(t) => return Err(PyValueError::new_err(format!("timeout must be a positive number of seconds, got {t}"))),
        None => None,
    };
    let backend = py.detach(|| Backend::connect(url, timeout)).map_err(errors::failure)?;
    Ok(Database::new(backend))
}

#[pymodule]
fn _hotset(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(open, module)?)?;
    module.add_function(wrap_pyfunction!(connect, module)?)?;
    module.add_class::<Database>()?;
    module.add_class::<ManualClock>()?;
    module.add_class::<query::Query>()?;
    module.add_class::<result::QueryResult>()?;
    module.add_class::<transaction::Transaction>()?;
    errors::register(module)?;
    Ok(())
}
