//! The client side of `hotset.connect`: a pool of `hotset-client` connections (the one RESP
//! client of Hotset's tools) whose every connection asks for JSON errors.
//!
//! Owns: the setup each new connection sends (`DOC.ERRORS JSON`, after AUTH: errors come
//! back as `CODE {json}`, which `errors::server` rebuilds into the engine's error; a server
//! too old to know the command is refused when the connection opens, rather than have its
//! errors lose their kind). Never: parse addresses, pool or read replies itself (the
//! `hotset-client` crate does), or retry a command.

pub use hotset_client::{CallError, Pool as Remote, Reply};
use std::time::Duration;

/// Connects to `hotset://[:password@]host[:port]`.
pub fn connect(url: &str, timeout: Option<Duration>) -> Result<Remote, CallError> {
    Remote::connect(url, timeout, &[&[b"DOC.ERRORS", b"JSON"]])
}
