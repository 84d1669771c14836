//! The Redis protocol listener: frames (`parse`), replies (`reply`) and the connection
//! loop (`conn`).
//!
//! Owns: the wire format only. Never: command semantics (`crate::commands`) or engine
//! state.

pub mod conn;
pub mod parse;
pub mod reply;
