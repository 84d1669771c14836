//! The engine's error type: every operating error a caller can cause, with its context.
//!
//! Owns: `Error` and `Result`, the closed set of stable `ErrorCode`s every interface
//! carries (a RESP error's prefix word, a Python exception class), and an error's JSON
//! form, which rebuilds the same `Error` on the other side of a connection. Never: panics
//! for bad input, strings without context, or errors that hide which namespace, index,
//! field or value was at fault. Programmer errors (broken invariants) panic instead of
//! appearing here.
//!
//! The JSON form is `{"code": ..., "error": <the message>, "kind": <the variant>, <each
//! context field by name>}`; `code` and `kind` are stable names, so a client decides by
//! them and never by a message's words.

use serde_json::{Map, Value};

/// An operating error of the document engine. Every variant names what was at fault.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A document or stored row that is not valid JSON, or JSON nested deeper than the
    /// engine takes.
    #[error("invalid JSON: {reason}")]
    InvalidJson {
        /// The parser's message, or which depth limit was passed.
        reason: String,
    },
    /// A document that is valid JSON but not an object (an array, a number, ...).
    #[error("a document must be a JSON object, got {found}")]
    NotAnObject {
        /// The JSON kind given instead: `array`, `string`, `int`, `null`, ...
        found: &'static str,
    },
    /// An operation, or a join, names a namespace the database does not have.
    #[error("namespace '{namespace}' does not exist")]
    UnknownNamespace {
        /// The namespace asked for.
        namespace: String,
    },
    /// Creating a namespace under a name already taken.
    #[error("namespace '{namespace}' already exists")]
    NamespaceExists {
        /// The name already taken.
        namespace: String,
    },
    /// A namespace or index name that is empty, over `name_bytes_max`, or has characters
    /// other than letters, digits, `_`, `-`, `.` and `+`.
    #[error("invalid namespace name '{name}': {reason}")]
    InvalidName {
        /// The refused name, cut to its first 64 characters.
        name: String,
        /// Which rule the name breaks.
        reason: &'static str,
    },
    /// Dropping an index the namespace does not have.
    #[error("index '{index}' does not exist in namespace '{namespace}'")]
    UnknownIndex {
        /// The namespace searched.
        namespace: String,
        /// The index asked for.
        index: String,
    },
    /// An index name the namespace already uses: adding an index, or two definitions of
    /// one name when the namespace is created.
    #[error("index '{index}' already exists in namespace '{namespace}'")]
    IndexExists {
        /// The namespace the index was added to.
        namespace: String,
        /// The name already taken.
        index: String,
    },
    /// An index definition that does not validate, a second primary key, or a primary
    /// key index added or dropped after the namespace was created.
    #[error("invalid index definition '{index}': {reason}")]
    InvalidIndex {
        /// The index at fault.
        index: String,
        /// What is wrong with it, in words.
        reason: String,
    },
    /// Creating a namespace without a primary key index among its definitions.
    #[error("namespace '{namespace}' has no primary key index")]
    NoPrimaryKey {
        /// The namespace being created.
        namespace: String,
    },
    /// A written document that lacks a field of the primary key.
    #[error("document in '{namespace}' has no primary key field '{field}'")]
    MissingKey {
        /// The namespace written to.
        namespace: String,
        /// The primary key field the document lacks (a dotted path).
        field: String,
    },
    /// An insert whose primary key is already stored.
    #[error("duplicate primary key {key} in namespace '{namespace}'")]
    DuplicateKey {
        /// The namespace written to.
        namespace: String,
        /// The key as JSON text (`3`, `"k"`, or an array for a key of several fields).
        key: String,
    },
    /// An update whose primary key is not stored.
    #[error("no document with primary key {key} in namespace '{namespace}'")]
    NotFound {
        /// The namespace written to.
        namespace: String,
        /// The key as JSON text, as in `DuplicateKey`.
        key: String,
    },
    /// A document (or a key given to a lookup) whose value for an indexed field does not
    /// convert to the index's type.
    #[error("field '{field}' of index '{index}' expects {expected}, got {found}")]
    WrongType {
        /// The index whose type was not met.
        index: String,
        /// The field's path.
        field: String,
        /// The type the index takes (`int`, or `int or an array of int` for an array
        /// field).
        expected: String,
        /// What was found instead, in words (a JSON kind such as `string`).
        found: String,
    },
    /// A query, search, join or update that cannot run as written (an unknown operator,
    /// the wrong number of values, nesting over the limits, a primary key given with the
    /// wrong number of parts, and the like).
    #[error("invalid query: {reason}")]
    InvalidQuery {
        /// What is wrong, in words.
        reason: String,
    },
    /// A LIKE pattern that ends with an escape or is over `LIKE_PATTERN_CHARS_MAX`.
    #[error("invalid LIKE pattern '{pattern}': {reason}")]
    InvalidPattern {
        /// The pattern (its first 64 characters when it is too long).
        pattern: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// `what` is the limit's name (`document_bytes_max`), `actual` what was asked.
    #[error("over the limit {what} ({limit}): {}", limit_subject(what, *actual))]
    LimitExceeded {
        /// The limit's name, a field of `Limits`.
        what: &'static str,
        /// The limit's value.
        limit: u64,
        /// The size or count that was asked for.
        actual: u64,
    },
    /// A query ran past its `Query::timeout`; nothing of it is returned.
    #[error("query timed out after {limit_ms} ms (its time limit)")]
    Timeout {
        /// The query's time limit in milliseconds.
        limit_ms: u64,
    },
    /// An update by query whose `SET` or drop touches a primary key field (or a path
    /// inside or around one).
    #[error("cannot update primary key field '{field}' by query in namespace '{namespace}'")]
    PrimaryKeyUpdate {
        /// The namespace updated.
        namespace: String,
        /// The field the update named.
        field: String,
    },
    /// A client's write to a namespace that live sync keeps (its documents come from a
    /// source database, so only the source changes them; adding and dropping indexes is
    /// allowed).
    #[error(
        "namespace '{namespace}' follows source '{owner}' and is read-only: change the rows in the source database"
    )]
    ReadOnly {
        /// The namespace written.
        namespace: String,
        /// The live-sync source that keeps it.
        owner: String,
    },
    /// The write-ahead log could not take or make durable a write: the write was not
    /// acknowledged (reads go on working).
    #[error("write not durable: {reason}")]
    Storage {
        /// The log's own error, in words.
        reason: String,
    },
    /// A logged change or snapshot block that checked out by checksum but does not
    /// decode or apply: a bug or a format mismatch, never silently skipped.
    #[error("bad change record: {reason}")]
    BadChange {
        /// What did not decode, and where.
        reason: String,
    },
}

/// What kind of failure an error is: a closed set of stable names, the same on every
/// interface. Every `Error` variant has exactly one; `BadRequest` is an interface's own
/// (arguments it cannot read before the engine sees them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorCode {
    /// A namespace, index or primary key that does not exist.
    NotFound,
    /// A namespace, index or primary key that already exists.
    AlreadyExists,
    /// A document the namespace cannot take as it is (not JSON, not an object, no key
    /// field, a field of the wrong type, a primary key changed by query).
    BadDocument,
    /// A query, condition, LIKE pattern or SQL statement that is not valid.
    BadQuery,
    /// An index definition or namespace name that is not valid, or no primary key.
    Schema,
    /// Over one of the named limits (`limits.rs`).
    Limit,
    /// A query that ran past its time limit.
    Timeout,
    /// The log could not take or make durable a write.
    Storage,
    /// A logged change or snapshot block that does not decode or apply.
    BadChange,
    /// A command's or request's arguments that an interface cannot read; never an
    /// engine `Error`.
    BadRequest,
    /// A write to a namespace that live sync keeps.
    ReadOnly,
    /// A request without the server's password (or with a wrong one); never an engine
    /// `Error`.
    Auth,
    /// The server failed to carry out a request it accepted (a bug, a task that died);
    /// never an engine `Error`.
    Internal,
    /// A write that needs memory while the server is over its `maxmemory` and eviction
    /// cannot make room (documents are never evicted); never an engine `Error`.
    Oom,
}

impl ErrorCode {
    /// Every code, in declaration order.
    pub const ALL: &'static [ErrorCode] = &[
        ErrorCode::NotFound,
        ErrorCode::AlreadyExists,
        ErrorCode::BadDocument,
        ErrorCode::BadQuery,
        ErrorCode::Schema,
        ErrorCode::Limit,
        ErrorCode::Timeout,
        ErrorCode::Storage,
        ErrorCode::BadChange,
        ErrorCode::BadRequest,
        ErrorCode::ReadOnly,
        ErrorCode::Auth,
        ErrorCode::Internal,
        ErrorCode::Oom,
    ];

    /// The code's stable name (snake_case): what clients match on.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::NotFound => "not_found",
            ErrorCode::AlreadyExists => "already_exists",
            ErrorCode::BadDocument => "bad_document",
            ErrorCode::BadQuery => "bad_query",
            ErrorCode::Schema => "schema",
            ErrorCode::Limit => "limit",
            ErrorCode::Timeout => "timeout",
            ErrorCode::Storage => "storage",
            ErrorCode::BadChange => "bad_change",
            ErrorCode::BadRequest => "bad_request",
            ErrorCode::ReadOnly => "read_only",
            ErrorCode::Auth => "auth",
            ErrorCode::Internal => "internal",
            ErrorCode::Oom => "oom",
        }
    }

    /// The code named `name` (as `as_str` writes it, in any letter case, so a RESP prefix
    /// word such as `NOT_FOUND` is one too).
    pub fn parse(name: &str) -> Option<ErrorCode> {
        ErrorCode::ALL.iter().copied().find(|code| code.as_str().eq_ignore_ascii_case(name))
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Each variant with its context fields (in declaration order) and its code. The
/// matches generated from this list are exhaustive, so a variant added to `Error` and
/// not here does not compile; a field's type picks its JSON form (`ContextField`).
macro_rules! variants {
    ($($variant:ident { $($field:ident),* } => $code:ident;)*) => {
        impl Error {
            /// The error's stable code.
            pub fn code(&self) -> ErrorCode {
                match self {
                    $(Error::$variant { .. } => ErrorCode::$code,)*
                }
            }

            /// The variant's name (`"UnknownNamespace"`), the JSON form's `kind`.
            pub fn kind(&self) -> &'static str {
                match self {
                    $(Error::$variant { .. } => stringify!($variant),)*
                }
            }

            /// Every kind `kind` answers, in declaration order.
            pub const KINDS: &'static [&'static str] = &[$(stringify!($variant)),*];

            fn context(&self) -> Vec<(&'static str, Value)> {
                match self {
                    $(Error::$variant { $($field),* } => vec![$((stringify!($field), ContextField::to_json($field))),*],)*
                }
            }

            fn from_context(kind: &str, object: &Map<String, Value>) -> Option<Error> {
                match kind {
                    $(stringify!($variant) => Some(Error::$variant {
                        $($field: ContextField::from_json(object.get(stringify!($field))?)?),*
                    }),)*
                    _ => None,
                }
            }
        }
    };
}

variants! {
    InvalidJson { reason } => BadDocument;
    NotAnObject { found } => BadDocument;
    UnknownNamespace { namespace } => NotFound;
    NamespaceExists { namespace } => AlreadyExists;
    InvalidName { name, reason } => Schema;
    UnknownIndex { namespace, index } => NotFound;
    IndexExists { namespace, index } => AlreadyExists;
    InvalidIndex { index, reason } => Schema;
    NoPrimaryKey { namespace } => Schema;
    MissingKey { namespace, field } => BadDocument;
    DuplicateKey { namespace, key } => AlreadyExists;
    NotFound { namespace, key } => NotFound;
    WrongType { index, field, expected, found } => BadDocument;
    InvalidQuery { reason } => BadQuery;
    InvalidPattern { pattern, reason } => BadQuery;
    LimitExceeded { what, limit, actual } => Limit;
    Timeout { limit_ms } => Timeout;
    PrimaryKeyUpdate { namespace, field } => BadDocument;
    ReadOnly { namespace, owner } => ReadOnly;
    Storage { reason } => Storage;
    BadChange { reason } => BadChange;
}

/// Names of the JSON form that are not context fields.
const JSON_HEAD: [&str; 3] = ["code", "error", "kind"];

impl Error {
    /// The error as JSON: `{"code", "error" (the message), "kind", <context fields>}`,
    /// from which `from_json` rebuilds it exactly.
    pub fn to_json(&self) -> Value {
        let mut object = Map::new();
        object.insert("code".into(), Value::from(self.code().as_str()));
        object.insert("error".into(), Value::from(self.to_string()));
        object.insert("kind".into(), Value::from(self.kind()));
        for (name, value) in self.context() {
            debug_assert!(!JSON_HEAD.contains(&name), "context field '{name}' shadows the JSON form's head");
            object.insert(name.into(), value);
        }
        Value::Object(object)
    }

    /// The error `to_json` wrote; `None` for JSON that is not one (an unknown kind, a
    /// context field missing or of the wrong type). Other names (a failing position an
    /// interface adds) are ignored; `code` and `error` are derived, not read.
    pub fn from_json(json: &Value) -> Option<Error> {
        let object = json.as_object()?;
        let error = Error::from_context(object.get("kind")?.as_str()?, object)?;
        debug_assert!(object.get("code").is_none_or(|code| code.as_str() == Some(error.code().as_str())));
        Some(error)
    }
}

/// A context field's JSON form.
trait ContextField: Sized {
    fn to_json(&self) -> Value;
    fn from_json(value: &Value) -> Option<Self>;
}

impl ContextField for String {
    fn to_json(&self) -> Value {
        Value::from(self.as_str())
    }
    fn from_json(value: &Value) -> Option<String> {
        value.as_str().map(str::to_string)
    }
}

impl ContextField for u64 {
    fn to_json(&self) -> Value {
        Value::from(*self)
    }
    fn from_json(value: &Value) -> Option<u64> {
        value.as_u64()
    }
}

impl ContextField for &'static str {
    fn to_json(&self) -> Value {
        Value::from(*self)
    }
    fn from_json(value: &Value) -> Option<&'static str> {
        static_text(value.as_str()?)
    }
}

/// Distinct texts `static_text` keeps at most, and the longest it keeps.
const STATIC_TEXTS_MAX: usize = 1024;
const STATIC_TEXT_BYTES_MAX: usize = 256;

/// `text` as a `&'static str`, for the fields that are literals in this build (a limit's
/// name, a reason, a JSON kind). Each distinct text is leaked once and kept; the set is
/// bounded (a peer sending ever new texts gets `None` past the bound, never unbounded
/// memory), and the literals of any build are far fewer than the bound.
fn static_text(text: &str) -> Option<&'static str> {
    static TEXTS: std::sync::LazyLock<parking_lot::Mutex<std::collections::HashSet<&'static str>>> =
        std::sync::LazyLock::new(Default::default);
    let mut texts = TEXTS.lock();
    if let Some(&kept) = texts.get(text) {
        return Some(kept);
    }
    if texts.len() >= STATIC_TEXTS_MAX || text.len() > STATIC_TEXT_BYTES_MAX {
        return None;
    }
    let kept: &'static str = Box::leak(text.to_string().into_boxed_str());
    texts.insert(kept);
    Some(kept)
}

/// What went over a limit, in words: `a document of 20971520 bytes` for
/// `document_bytes_max`, so the message reads the right way round.
fn limit_subject(what: &str, actual: u64) -> String {
    match what {
        "document_bytes_max" => format!("a document of {actual} bytes"),
        "name_bytes_max" => format!("a name of {actual} bytes"),
        "indexes_max" => format!("{actual} indexes"),
        "namespaces_max" => format!("{actual} namespaces"),
        "transaction_operations_max" => format!("a transaction of {actual} operations"),
        _ => format!("{actual}"),
    }
}

/// Result of an engine operation.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A record that does not decode is a `BadChange`, with the same text.
impl From<hotset_base::RecordError> for Error {
    fn from(error: hotset_base::RecordError) -> Error {
        Error::BadChange { reason: error.reason }
    }
}

/// A log that refuses or loses a write is a `Storage` error, with the same text.
impl From<hotset_base::JournalError> for Error {
    fn from(error: hotset_base::JournalError) -> Error {
        Error::Storage { reason: error.reason }
    }
}

/// Names a JSON value's kind for error messages.
pub(crate) fn json_kind(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "bool",
        serde_json::Value::Number(n) if n.is_f64() => "double",
        serde_json::Value::Number(_) => "int",
        serde_json::Value::String(_) => "string",
        serde_json::Value::Array(_) => "array",
        serde_json::Value::Object(_) => "object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// One error of every variant, with context that tells fields apart.
    fn one_of_each() -> Vec<Error> {
        let text = |s: &str| s.to_string();
        vec![
            Error::InvalidJson { reason: text("expected value at line 1 column 2") },
            Error::NotAnObject { found: "array" },
            Error::UnknownNamespace { namespace: text("items") },
            Error::NamespaceExists { namespace: text("items") },
            Error::InvalidName { name: text("a b"), reason: "names use letters, digits" },
            Error::UnknownIndex { namespace: text("items"), index: text("year") },
            Error::IndexExists { namespace: text("items"), index: text("year") },
            Error::InvalidIndex { index: text("year"), reason: text("unknown type 'intt'") },
            Error::NoPrimaryKey { namespace: text("items") },
            Error::MissingKey { namespace: text("items"), field: text("id") },
            Error::DuplicateKey { namespace: text("items"), key: text("3") },
            Error::NotFound { namespace: text("items"), key: text("\"k\"") },
            Error::WrongType { index: text("id"), field: text("id"), expected: text("int"), found: text("string") },
            Error::InvalidQuery { reason: text("unknown operator '~'") },
            Error::InvalidPattern { pattern: text("a\\"), reason: "ends with an escape" },
            Error::LimitExceeded { what: "indexes_max", limit: 64, actual: 65 },
            Error::Timeout { limit_ms: 0 },
            Error::PrimaryKeyUpdate { namespace: text("items"), field: text("id") },
            Error::ReadOnly { namespace: text("profiles"), owner: text("app") },
            Error::Storage { reason: text("no space left on device") },
            Error::BadChange { reason: text("record 7 does not decode") },
        ]
    }

    /// The errors of `hotset-base` become these with their text unchanged: a log failure
    /// reaches RESP clients as `MISCONF <text>` from the key-value engine (which shows the
    /// base error) and from the document engine (which shows this one) alike.
    #[test]
    fn base_errors_keep_their_text() {
        let journal = hotset_base::JournalError { reason: "no space left on device".into() };
        assert_eq!(Error::from(journal.clone()).to_string(), journal.to_string());
        assert_eq!(journal.to_string(), "write not durable: no space left on device");
        let record = hotset_base::RecordError { reason: "a length runs past the end at byte 2".into() };
        assert_eq!(Error::from(record.clone()).to_string(), record.to_string());
        assert_eq!(record.to_string(), "bad change record: a length runs past the end at byte 2");
    }

    #[test]
    fn every_variant_round_trips_through_its_json_form() {
        let errors = one_of_each();
        let kinds: Vec<&str> = errors.iter().map(Error::kind).collect();
        assert_eq!(kinds, Error::KINDS, "one error of every variant, in declaration order");
        for error in errors {
            let json = error.to_json();
            let object = json.as_object().unwrap();
            let head: Vec<&str> = object.keys().take(3).map(String::as_str).collect();
            assert_eq!(head, JSON_HEAD);
            assert_eq!(object["code"], error.code().as_str());
            assert_eq!(object["error"], error.to_string());
            assert_eq!(object["kind"], error.kind());
            assert_eq!(Error::from_json(&json).as_ref(), Some(&error), "{json}");
            // Through text too, as it travels.
            let text = serde_json::to_string(&json).unwrap();
            assert_eq!(Error::from_json(&serde_json::from_str(&text).unwrap()), Some(error));
        }
    }

    #[test]
    fn the_json_form_names_every_context_field() {
        let error = Error::LimitExceeded { what: "indexes_max", limit: 64, actual: 65 };
        assert_eq!(
            error.to_json().to_string(),
            r#"{"code":"limit","error":"over the limit indexes_max (64): 65 indexes","kind":"LimitExceeded","what":"indexes_max","limit":64,"actual":65}"#
        );
        let error = Error::UnknownIndex { namespace: "n".into(), index: "i".into() };
        assert_eq!(
            error.to_json(),
            json!({"code": "not_found", "error": "index 'i' does not exist in namespace 'n'",
                   "kind": "UnknownIndex", "namespace": "n", "index": "i"})
        );
    }

    #[test]
    fn json_that_is_not_an_error_gives_none() {
        let not_errors = [
            json!(null),
            json!("UnknownNamespace"),
            json!({"code": "not_found", "error": "x"}),
            json!({"kind": "NoSuchKind", "namespace": "n"}),
            json!({"kind": "UnknownNamespace"}),
            json!({"kind": "UnknownNamespace", "namespace": 3}),
            json!({"kind": "LimitExceeded", "what": "x", "limit": -1, "actual": 2}),
            json!({"kind": "LimitExceeded", "what": "x".repeat(STATIC_TEXT_BYTES_MAX + 1), "limit": 1, "actual": 2}),
        ];
        for json in not_errors {
            assert_eq!(Error::from_json(&json), None, "{json}");
        }
        // Names an interface adds (a failing position) are not context.
        let positioned =
            json!({"code": "already_exists", "kind": "DuplicateKey", "namespace": "n", "key": "1", "document": 2});
        assert_eq!(Error::from_json(&positioned), Some(Error::DuplicateKey { namespace: "n".into(), key: "1".into() }));
    }

    #[test]
    fn static_texts_are_kept_once() {
        let first = static_text("transaction_operations_max").unwrap();
        let again = static_text(&String::from("transaction_operations_max")).unwrap();
        assert!(std::ptr::eq(first, again));
    }

    #[test]
    fn codes_have_distinct_stable_names() {
        let names: std::collections::HashSet<&str> = ErrorCode::ALL.iter().map(|c| c.as_str()).collect();
        assert_eq!(names.len(), ErrorCode::ALL.len());
        for &code in ErrorCode::ALL {
            assert!(code.as_str().bytes().all(|b| b.is_ascii_lowercase() || b == b'_'), "{code}");
            assert_eq!(ErrorCode::parse(code.as_str()), Some(code));
            assert_eq!(ErrorCode::parse(&code.as_str().to_ascii_uppercase()), Some(code));
        }
        assert_eq!(ErrorCode::parse("ERR"), None);
        // The names are a contract: clients match on them.
        let expected = "not_found already_exists bad_document bad_query schema limit timeout storage bad_change bad_request read_only auth internal oom";
        assert_eq!(ErrorCode::ALL.iter().map(|c| c.as_str()).collect::<Vec<_>>().join(" "), expected);
        assert_eq!(Error::NotFound { namespace: "n".into(), key: "1".into() }.code(), ErrorCode::NotFound);
        assert_eq!(Error::Timeout { limit_ms: 5 }.code(), ErrorCode::Timeout);
    }
}
