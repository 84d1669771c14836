//! Hotset's operation layer: every document operation as a typed [`Request`], applied by
//! one function, [`Engine::apply`], against the engine in this process (or
//! [`Engine::apply_into`], the same with a write's log acknowledgement collected into the
//! caller's `Acks` instead of waited for).
//!
//! Owns: what a request means (which engine calls it makes, in what order, with which
//! server-wide limits), what it answers ([`Answer`]), why it was refused ([`Refusal`], with
//! a stable code), and where it should run ([`Request::blocks`]). Every interface (RESP's
//! `DOC.*`, the HTTP routes, SQL over both, the Python package embedded) only decodes its
//! wire form into a `Request` and encodes the `Answer`; later callers (live sync,
//! procedures, replicas) build requests the same way. Never: know a wire form (bytes of
//! RESP, HTTP statuses, Python objects), or hold semantics the engine already holds.
//!
//! Modules: `request` (the requests and their parts), `answer`, `refusal`, `engine`
//! (the `Engine` a server or an embedded database runs on, and `apply`), `decode` (the
//! readers of JSON text every text interface shares: documents, keys, index lists),
//! `procedure` (a Lua procedure's document calls and its writes as one transaction, and
//! the function libraries kept as data: the server's script host and the embedded
//! Python database share it).

mod answer;
pub mod decode;
mod engine;
pub mod procedure;
mod refusal;
mod request;

pub use answer::Answer;
pub use engine::{Engine, MemoryGate, OOM_MESSAGE, Settings};
pub use refusal::{Cause, Refusal};
pub use request::{Doc, Op, Request, WriteMode};

#[cfg(test)]
mod tests;
