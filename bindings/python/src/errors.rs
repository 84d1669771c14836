//! The package's exception classes and how engine, storage and server errors map onto them.
//!
//! Owns: the hierarchy under `hotset.Error`, the attributes that carry an error's context
//! (`code`, `namespace`, `index`, `field`, `key`, `limit`, `line`...; None where an error
//! has none), and the one place that turns an engine `Error` or a server's error line into
//! a Python exception. Never: lose the engine's message, or choose a class by anything
//! but the error's stable code (`hotset_core::error::ErrorCode`), never by its words.
//!
//! ```text
//! Error                                             (bad_request, and lines of no known code)
//! ├── NotFoundError         not_found       unknown namespace, index or primary key
//! ├── AlreadyExistsError    already_exists  namespace, index or primary key already there
//! ├── DocumentError         bad_document    not an object, bad JSON, missing key field, wrong field type
//! ├── SchemaError           schema          bad index definition or namespace name, no primary key
//! ├── QueryError            bad_query       bad query, condition, LIKE pattern or SQL
//! ├── LimitError            limit, oom      over a configured limit (oom: a server over its maxmemory)
//! ├── QueryTimeoutError     timeout         past the query's time limit
//! ├── StorageError          storage, bad_change: the log or a snapshot cannot write or read
//! ├── ReadOnlyError         read_only       a write to a namespace a live-sync source keeps
//! ├── ConnectionError       the server cannot be reached or broke the connection
//! │   └── AuthError         auth            the server wants a password, or refused it
//! └── ClosedError           the database was closed
//! ```

use crate::backend::Failure;
use hotset_core::Error as EngineError;
use hotset_core::error::ErrorCode;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::{PyErr, create_exception};
use serde_json::{Map, Value};

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
create_exception!(
    hotset,
    ReadOnlyError,
    Error,
    "A write to a namespace that a live-sync source keeps: change the rows in the source database."
);
create_exception!(hotset, ConnectionError, Error, "The server could not be reached, or the connection broke.");
create_exception!(hotset, AuthError, ConnectionError, "The server wants a password, or refused the one given.");
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
    module.add("ReadOnlyError", py.get_type::<ReadOnlyError>())?;
    module.add("ConnectionError", py.get_type::<ConnectionError>())?;
    module.add("AuthError", py.get_type::<AuthError>())?;
    module.add("ClosedError", py.get_type::<ClosedError>())?;
    let base = py.get_type::<Error>();
    for name in ATTRIBUTES {
        base.setattr(name, py.None())?;
    }
    Ok(())
}

/// The context attributes every exception has (None unless its error names them), so
/// `except hotset.Error as e: e.namespace` never raises AttributeError.
const ATTRIBUTES: [&str; 12] = [
    "code",
    "namespace",
    "index",
    "field",
    "key",
    "pattern",
    "limit_name",
    "limit",
    "actual",
    "limit_ms",
    "line",
    "column",
];

/// A new exception of the class for `code`, with `code` set: the class is chosen by the
/// code alone.
pub fn of_code(code: ErrorCode, message: String) -> PyErr {
    with_attributes(class_of(code, message), code, vec![])
}

fn class_of(code: ErrorCode, message: String) -> PyErr {
    match code {
        ErrorCode::NotFound => NotFoundError::new_err(message),
        ErrorCode::AlreadyExists => AlreadyExistsError::new_err(message),
        ErrorCode::BadDocument => DocumentError::new_err(message),
        ErrorCode::BadQuery => QueryError::new_err(message),
        ErrorCode::Schema => SchemaError::new_err(message),
        // Over maxmemory is over a limit too (a client of a server that has one).
        ErrorCode::Limit | ErrorCode::Oom => LimitError::new_err(message),
        ErrorCode::Timeout => QueryTimeoutError::new_err(message),
        ErrorCode::Storage | ErrorCode::BadChange => StorageError::new_err(message),
        ErrorCode::ReadOnly => ReadOnlyError::new_err(message),
        ErrorCode::Auth => AuthError::new_err(message),
        _ => Error::new_err(message),
    }
}

/// A context attribute's value.
enum Attribute {
    Text(String),
    Number(u64),
}

/// `err` with its attributes set (and `code`).
fn with_attributes(err: PyErr, code: ErrorCode, context: Vec<(&str, Attribute)>) -> PyErr {
    Python::attach(|py| {
        let value = err.value(py);
        let mut set = value.setattr("code", code.as_str());
        for (name, attribute) in context {
            set = set.and_then(|()| match attribute {
                Attribute::Text(text) => value.setattr(name, text),
                Attribute::Number(n) => value.setattr(name, n),
            });
        }
        match set {
            Ok(()) => err,
            Err(e) => e,
        }
    })
}

/// An engine error as the Python exception of its code, with its context as attributes.
/// Embedded calls and a server's JSON error lines (rebuilt by `Error::from_json`) both
/// come here, so the two modes raise the same class, message and attributes.
pub fn engine(error: EngineError) -> PyErr {
    use Attribute::{Number, Text};
    let code = error.code();
    let err = class_of(code, error.to_string());
    let context = match error {
        EngineError::UnknownNamespace { namespace }
        | EngineError::NamespaceExists { namespace }
        | EngineError::NoPrimaryKey { namespace }
        | EngineError::InvalidName { name: namespace, .. }
        | EngineError::ReadOnly { namespace, .. } => vec![("namespace", Text(namespace))],
        EngineError::UnknownIndex { namespace, index } | EngineError::IndexExists { namespace, index } => {
            vec![("namespace", Text(namespace)), ("index", Text(index))]
        }
        EngineError::NotFound { namespace, key } | EngineError::DuplicateKey { namespace, key } => {
            vec![("namespace", Text(namespace)), ("key", Text(key))]
        }
        EngineError::MissingKey { namespace, field } | EngineError::PrimaryKeyUpdate { namespace, field } => {
            vec![("namespace", Text(namespace)), ("field", Text(field))]
        }
        EngineError::WrongType { index, field, .. } => vec![("index", Text(index)), ("field", Text(field))],
        EngineError::InvalidIndex { index, .. } => vec![("index", Text(index))],
        EngineError::InvalidPattern { pattern, .. } => vec![("pattern", Text(pattern))],
        EngineError::LimitExceeded { what, limit, actual } => {
            vec![("limit_name", Text(what.to_string())), ("limit", Number(limit)), ("actual", Number(actual))]
        }
        EngineError::Timeout { limit_ms } => vec![("limit_ms", Number(limit_ms))],
        _ => vec![],
    };
    with_attributes(err, code, context)
}

/// A SQL text that does not parse, with where (`line`, `column`; 1-based, 0 unknown).
pub fn sql(error: hotset_sql::SqlError) -> PyErr {
    let err = class_of(error.code, error.to_string());
    let context = vec![("line", Attribute::Number(error.line)), ("column", Attribute::Number(error.column))];
    with_attributes(err, error.code, context)
}

/// A server's error line. The client asks for JSON errors (`DOC.ERRORS JSON`), so a
/// `DOC.*` error is `CODE {json}`: an engine error's JSON form, rebuilt and raised as the
/// embedded engine raises it, or a SQL parse error with its line and column. Other lines
/// (Redis' own: MISCONF, NOAUTH; JSON this build does not know) get the class of their
/// code word alone, never of their message's words.
pub fn server(line: &str) -> PyErr {
    let (word, rest) = line.split_once(' ').unwrap_or((line, ""));
    if let Ok(Value::Object(object)) = serde_json::from_str::<Value>(rest) {
        return server_json(word, &object);
    }
    match word {
        "MISCONF" => StorageError::new_err(rest.to_string()),
        "NOAUTH" | "WRONGPASS" => of_code(ErrorCode::Auth, line.to_string()),
        _ => match ErrorCode::parse(word) {
            Some(code) => of_code(code, rest.to_string()),
            None => Error::new_err(rest.to_string()),
        },
    }
}

fn server_json(word: &str, object: &Map<String, Value>) -> PyErr {
    let json = Value::Object(object.clone());
    if let Some(error) = EngineError::from_json(&json) {
        return engine(error);
    }
    let number = |name: &str| object.get(name).and_then(Value::as_u64);
    let text = |name: &str| object.get(name).and_then(Value::as_str);
    if let (Some("Sql"), Some(message), Some(line), Some(column)) =
        (text("kind"), text("message"), number("line"), number("column"))
    {
        let code = text("code").and_then(ErrorCode::parse).unwrap_or(ErrorCode::BadQuery);
        return sql(hotset_sql::SqlError { message: message.to_string(), line, column, code });
    }
    let message = text("error").unwrap_or(word).to_string();
    match text("code").and_then(ErrorCode::parse).or_else(|| ErrorCode::parse(word)) {
        Some(code) => of_code(code, message),
        None => Error::new_err(message),
    }
}

/// A failed backend call as the exception of its kind.
pub fn failure(failure: Failure) -> PyErr {
    match failure {
        Failure::Engine(error) => engine(error),
        Failure::Sql(error) => sql(error),
        Failure::Server(line) => server(&line),
        Failure::Coded(code, message) => of_code(code, message),
        Failure::Connection(reason) => ConnectionError::new_err(reason),
        Failure::Storage(reason) => StorageError::new_err(reason),
        Failure::Unsupported(reason) => Error::new_err(reason),
        Failure::Closed => closed(),
    }
}

pub fn closed() -> PyErr {
    ClosedError::new_err("the database is closed")
}
