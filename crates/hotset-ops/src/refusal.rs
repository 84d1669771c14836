//! Why a request was refused: the engine's error, a SQL error, or a request its interface
//! could not read, always with a stable code (`hotset_core::error::ErrorCode`).
//!
//! Owns: `Refusal` and its JSON form. Never: a wire form of its own (a RESP line's prefix
//! word, an HTTP status): interfaces choose those from the code.

use hotset_core::Error;
use hotset_core::error::ErrorCode;
use serde_json::Value;

/// What went wrong.
#[derive(Debug)]
pub enum Cause {
    /// The engine refused.
    Engine(Error),
    /// SQL text that does not parse, or names what the engine cannot take.
    Sql(hotset_sql::SqlError),
    /// A request an interface could not read (not JSON where JSON is due, an unknown
    /// operation), or an administrative operation that failed; never the engine's.
    Request {
        /// Its code.
        code: ErrorCode,
        /// What was wrong.
        message: String,
    },
}

/// A refused request.
#[derive(Debug)]
pub struct Refusal {
    /// Why (boxed: a refusal travels in every `Result` of an interface, which stays small).
    pub cause: Box<Cause>,
    /// In a write of several operations, the refused one's place (from 0); interfaces
    /// name it their way (`document 2`, `operation 3`, `line 7`).
    pub at: Option<usize>,
}

impl From<Error> for Refusal {
    fn from(error: Error) -> Refusal {
        Refusal { cause: Box::new(Cause::Engine(error)), at: None }
    }
}

impl From<hotset_sql::SqlError> for Refusal {
    fn from(error: hotset_sql::SqlError) -> Refusal {
        Refusal { cause: Box::new(Cause::Sql(error)), at: None }
    }
}

impl Refusal {
    /// A request that could not be read, with the code of what it should have been.
    pub fn request(code: ErrorCode, message: impl Into<String>) -> Refusal {
        Refusal { cause: Box::new(Cause::Request { code, message: message.into() }), at: None }
    }

    /// A request whose arguments could not be read (`bad_request`).
    pub fn bad_request(message: impl Into<String>) -> Refusal {
        Refusal::request(ErrorCode::BadRequest, message)
    }

    /// The stable code clients branch on.
    pub fn code(&self) -> ErrorCode {
        match &*self.cause {
            Cause::Engine(error) => error.code(),
            Cause::Sql(error) => error.code,
            Cause::Request { code, .. } => *code,
        }
    }

    /// The engine error, when the engine refused.
    pub fn engine(&self) -> Option<&Error> {
        match &*self.cause {
            Cause::Engine(error) => Some(error),
            _ => None,
        }
    }

    /// The JSON form, without the place: the engine error's (`Error::to_json`); for SQL
    /// `{"code", "error", "kind": "Sql", "message", "line", "column"}`; for a request
    /// `{"code", "error"}` (no `kind`: no engine error).
    pub fn to_json(&self) -> Value {
        match &*self.cause {
            Cause::Engine(error) => error.to_json(),
            Cause::Sql(error) => serde_json::json!({
                "code": error.code.as_str(),
                "error": error.to_string(),
                "kind": "Sql",
                "message": error.message,
                "line": error.line,
                "column": error.column,
            }),
            Cause::Request { code, message } => serde_json::json!({"code": code.as_str(), "error": message}),
        }
    }
}

impl std::fmt::Display for Refusal {
    /// The message, without the place.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &*self.cause {
            Cause::Engine(error) => error.fmt(f),
            Cause::Sql(error) => error.fmt(f),
            Cause::Request { message, .. } => f.write_str(message),
        }
    }
}
