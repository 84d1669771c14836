//! The package's exception classes and how engine, storage and server errors map onto them.
//!
//! Owns: the hierarchy under `hotset.Error`, the attributes that carry an error's context
//! (`namespace`, `index`, `field`, `key`, `limit`...), and the one place that turns an
//! engine `Error` or a server's error line into a Python exception. Never: lose the
//! engine's message, or map an error to a class by anything other than what it is.
//!
//! ```text
//! Error
//! ├── NotFoundError         unknown namespace, index or primary key
//! ├── AlreadyExistsError    namespace, index or primary key already there
//! ├── DocumentError         not an object, bad JSON, missing key field, wrong field type
//! ├── SchemaError           bad index definition or namespace name, no primary key
//! ├── QueryError            bad query, condition, LIKE pattern or SQL
//! ├── LimitError            over a configured limit
//! ├── QueryTimeoutError     past the query's time limit
//! ├── StorageError          the log or a snapshot cannot write or read
//! ├── ConnectionError       the server cannot be reached or broke the connection
//! └── ClosedError           the database was closed
//! ```

use crate::backend::Failure;
use hotset_core::Error as EngineError;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::{PyErr, create_exception};

create_exception!(hotset, Error, PyException, "Base class of every error Hotset raises.");
create_exception!(hotset, NotFoundError, Error, "A namespace, index or primary key that does not exist.");
create_exception!(hotset, AlreadyExistsError, Error, "A namespace, index or primary key that already exists.");
create_exception!(hotset, DocumentError, Error, "A document the namespace cannot take as it is.");
create_exception!(hotset, SchemaError, Error, "An index definition or namespace name that is not valid.");
create_exception!(hotset, QueryError, Error, "A query, condition, pattern or SQL statement that is not valid.");
create_exception!(hotset, LimitError, Error, "A request over one of the database's limits.");
create_exception!(
    hotset,
    QueryTimeoutError,
    Error,
    "A query that ran past its time limit; nothing of it was returned."
);
create_exception!(
    hotset,
    StorageError,
    Error,
    "The log or a snapshot could not write or read: the write was not acknowledged."
);
create_exception!(hotset, ConnectionError, Error, "The server could not be reached, or the connection broke.");
create_exception!(hotset, ClosedError, Error, "The database (or client) was closed.");

/// Registers the classes on the module.
pub fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = module.py();
    module.add("Error", py.get_type::<Error>())?;
    module.add("NotFoundError", py.get_type::<NotFoundError>())?;
    module.add("AlreadyExistsError", py.get_type::<AlreadyExistsError>())?;
    module.add("DocumentError", py.get_type::<DocumentError>())?;
    module.add("SchemaError", py.get_type::<SchemaError>())?;
    module.add("QueryError", py.get_type::<QueryError>())?;
    module.add("LimitError", py.get_type::<LimitError>())?;
    module.add("QueryTimeoutError", py.get_type::<QueryTimeoutError>())?;
    module.add("StorageError", py.get_type::<StorageError>())?;
    module.add("ConnectionError", py.get_type::<ConnectionError>())?;
    module.add("ClosedError", py.get_type::<ClosedError>())?;
    Ok(())
}

/// An engine error as the Python exception of its kind, with its context as attributes.
pub fn engine(error: EngineError) -> PyErr {
    let message = error.to_string();
    Python::attach(|py| {
        let (err, context): (PyErr, Vec<(&str, String)>) = match error {
            EngineError::UnknownNamespace { namespace } => {
                (NotFoundError::new_err(message), vec![("namespace", namespace)])
            }
            EngineError::UnknownIndex { namespace, index } => {
                (NotFoundError::new_err(message), vec![("namespace", namespace), ("index", index)])
            }
            EngineError::NotFound { namespace, key } => {
                (NotFoundError::new_err(message), vec![("namespace", namespace), ("key", key)])
            }
            EngineError::NamespaceExists { namespace } => {
                (AlreadyExistsError::new_err(message), vec![("namespace", namespace)])
            }
            EngineError::IndexExists { namespace, index } => {
                (AlreadyExistsError::new_err(message), vec![("namespace", namespace), ("index", index)])
            }
            EngineError::DuplicateKey { namespace, key } => {
                (AlreadyExistsError::new_err(message), vec![("namespace", namespace), ("key", key)])
            }
            EngineError::InvalidJson { .. } | EngineError::NotAnObject { .. } => {
                (DocumentError::new_err(message), vec![])
            }
            EngineError::MissingKey { namespace, field } => {
                (DocumentError::new_err(message), vec![("namespace", namespace), ("field", field)])
            }
            EngineError::WrongType { index, field, .. } => {
                (DocumentError::new_err(message), vec![("index", index), ("field", field)])
            }
            EngineError::PrimaryKeyUpdate { namespace, field } => {
                (DocumentError::new_err(message), vec![("namespace", namespace), ("field", field)])
            }
            EngineError::InvalidIndex { index, .. } => (SchemaError::new_err(message), vec![("index", index)]),
            EngineError::InvalidName { name, .. } => (SchemaError::new_err(message), vec![("namespace", name)]),
            EngineError::NoPrimaryKey { namespace } => (SchemaError::new_err(message), vec![("namespace", namespace)]),
            EngineError::InvalidQuery { .. } => (QueryError::new_err(message), vec![]),
            EngineError::InvalidPattern { pattern, .. } => (QueryError::new_err(message), vec![("pattern", pattern)]),
            EngineError::LimitExceeded { what, limit, actual } => (
                LimitError::new_err(message),
                vec![("limit_name", what.to_string()), ("limit", limit.to_string()), ("actual", actual.to_string())],
            ),
            EngineError::Timeout { limit_ms } => {
                (QueryTimeoutError::new_err(message), vec![("limit_ms", limit_ms.to_string())])
            }
            EngineError::Storage { .. } | EngineError::BadChange { .. } => (StorageError::new_err(message), vec![]),
            _ => (Error::new_err(message), vec![]),
        };
        let value = err.value(py);
        for (name, text) in context {
            // Numbers are numbers in Python; names and keys stay text.
            let set = match text.parse::<u64>() {
                Ok(n) if matches!(name, "limit" | "actual" | "limit_ms") => value.setattr(name, n),
                _ => value.setattr(name, text),
            };
            if let Err(e) = set {
                return e;
            }
        }
        err
    })
}

/// A server's error line (`ERR namespace 'x' does not exist`) as the class the same
/// engine error has when embedded: the server sends the engine's message after its
/// Redis-style prefix, so the message tells the kind. `sql`: the line answers a SQL
/// statement, whose parse errors name a position rather than a kind.
pub fn server(line: &str, sql: bool) -> PyErr {
    let message = line.strip_prefix("ERR ").unwrap_or(line).to_string();
    let has = |needle: &str| message.contains(needle);
    if line.starts_with("MISCONF") {
        StorageError::new_err(message)
    } else if line.starts_with("NOAUTH") || line.starts_with("WRONGPASS") {
        ConnectionError::new_err(message)
    } else if has("query timed out") {
        QueryTimeoutError::new_err(message)
    } else if has("does not exist") || has("no document with primary key") {
        NotFoundError::new_err(message)
    } else if has("already exists") || has("duplicate primary key") {
        AlreadyExistsError::new_err(message)
    } else if has("over the limit of") {
        LimitError::new_err(message)
    } else if has("invalid index definition") || has("invalid namespace name") || has("has no primary key index") {
        SchemaError::new_err(message)
    } else if has("invalid query") || has("invalid LIKE pattern") || has("SQL") || has("syntax") {
        QueryError::new_err(message)
    } else if has("must be a JSON object")
        || has("not valid JSON")
        || has("invalid JSON")
        || has("has no primary key field")
        || has("expects")
        || has("cannot update primary key")
    {
        DocumentError::new_err(message)
    } else if sql {
        QueryError::new_err(message)
    } else {
        Error::new_err(message)
    }
}

/// A SQL text that does not parse, with where (`line`, `column`; 1-based, 0 unknown).
pub fn sql(error: hotset_sql::SqlError) -> PyErr {
    let err = QueryError::new_err(error.to_string());
    Python::attach(|py| {
        let value = err.value(py);
        match value.setattr("line", error.line).and_then(|()| value.setattr("column", error.column)) {
            Ok(()) => err,
            Err(e) => e,
        }
    })
}

/// A failed backend call as the exception of its kind.
pub fn failure(failure: Failure) -> PyErr {
    match failure {
        Failure::Engine(error) => engine(error),
        Failure::Sql(error) => sql(error),
        Failure::Server { line, sql } => server(&line, sql),
        Failure::Connection(reason) => ConnectionError::new_err(reason),
        Failure::Storage(reason) => StorageError::new_err(reason),
        Failure::Closed => closed(),
    }
}

pub fn closed() -> PyErr {
    ClosedError::new_err("the database is closed")
}
