//! The seam between the engine and the server that embeds it.
//!
//! Owns the [`Host`] trait (what a script may ask of the server) and the context handed with
//! each request ([`CallContext`]). The engine never touches keys, clients, replication or
//! locks: it asks the host, and the host enforces its rules (command table, ACLs, read-only
//! refusal, OOM, cluster slots) answering with Redis' error texts, which [`crate::errors`]
//! names. A procedure's document calls (`hotset.get`, `hotset.query`, `hotset.sql`) reach the
//! host the same way, as a [`DocumentCall`] answered with JSON text or a [`DocumentError`].
//! This module must never depend on how the host keeps its data.

use std::time::Duration;

use crate::flags::ScriptFlags;
use crate::value::{Protocol, Value};

/// What the engine tells the host with each `redis.call` / `redis.pcall`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallContext {
    /// The protocol the script wants the reply in (`redis.setresp`, 2 unless changed).
    pub protocol: Protocol,
    /// Write commands (and may-replicate ones) must be refused with
    /// [`crate::errors::WRITE_IN_READ_ONLY_SCRIPT`]: EVAL_RO, FCALL_RO, or a script that
    /// declared `no-writes`.
    pub read_only: bool,
    /// The flags the script declared; `None` for an EVAL script without a shebang (Redis'
    /// compatibility mode: the command's own flags apply).
    pub flags: Option<ScriptFlags>,
    /// Where the script's writes are to be propagated (`redis.set_repl`).
    pub replication: Replication,
}

/// `redis.set_repl` targets: bit 1 the append-only file, bit 2 replicas (Redis' values).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Replication(pub u8);

impl Replication {
    /// `REPL_NONE`.
    pub const NONE: Replication = Replication(0);
    /// `REPL_AOF`.
    pub const AOF: Replication = Replication(1);
    /// `REPL_REPLICA` (and `REPL_SLAVE`).
    pub const REPLICA: Replication = Replication(2);
    /// `REPL_ALL`, the default.
    pub const ALL: Replication = Replication(3);
}

/// `redis.log` levels, Redis' numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum LogLevel {
    /// `redis.LOG_DEBUG`, 0.
    Debug,
    /// `redis.LOG_VERBOSE`, 1.
    Verbose,
    /// `redis.LOG_NOTICE`, 2.
    Notice,
    /// `redis.LOG_WARNING`, 3.
    Warning,
}

impl LogLevel {
    /// The level Redis numbers `number`.
    pub fn from_number(number: i64) -> Option<LogLevel> {
        match number {
            0 => Some(LogLevel::Debug),
            1 => Some(LogLevel::Verbose),
            2 => Some(LogLevel::Notice),
            3 => Some(LogLevel::Warning),
            _ => None,
        }
    }
}

/// The host's answer to [`Host::tick`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tick {
    /// Let the script go on.
    Continue,
    /// Stop the script now with Redis' "killed by user" error (SCRIPT KILL / FUNCTION KILL).
    /// The host decides whether killing is allowed (Redis refuses once the script wrote).
    Kill,
}

/// A document operation a procedure asks for (`hotset.*`), its arguments already JSON.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum DocumentCall<'a> {
    /// `hotset.get(ns, key)`: a document by primary key (a scalar, or an array for a
    /// composite key).
    Get {
        /// The namespace.
        namespace: &'a str,
        /// The key.
        key: &'a serde_json::Value,
    },
    /// `hotset.query(ns, dsl)`: a query in the JSON DSL the HTTP API takes (an object;
    /// its `namespace`, when given, must be `namespace`).
    Query {
        /// The namespace.
        namespace: &'a str,
        /// The query.
        query: &'a serde_json::Value,
    },
    /// `hotset.sql(text, ...)`: one statement with its positional parameters (`?`, `?N`,
    /// `$N`) bound by the host.
    Sql {
        /// The statement.
        text: &'a str,
        /// Its parameters, in order.
        parameters: &'a [serde_json::Value],
    },
}

impl DocumentCall<'_> {
    /// The Lua function that made the call (`hotset.get`), for error texts.
    pub fn function_name(&self) -> &'static str {
        match self {
            DocumentCall::Get { .. } => "hotset.get",
            DocumentCall::Query { .. } => "hotset.query",
            DocumentCall::Sql { .. } => "hotset.sql",
        }
    }
}

/// Why the host refused a document call: the engine's stable code (`not_found`,
/// `bad_query`...) and its message. The script sees a Lua error `{err = "CODE message"}`
/// (the code upper-cased, as `DOC.*` commands write it), which `pcall` catches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocumentError {
    /// The stable code, lower-case (`not_found`).
    pub code: String,
    /// What went wrong.
    pub message: String,
}

/// What a running script may ask of the server.
pub trait Host {
    /// Runs one command for the script and returns its reply in `context.protocol`. `args[0]`
    /// is the command name as the script wrote it. Refusals (unknown command, wrong arity,
    /// commands denied to scripts, writes from a read-only script, OOM, ACL) are error replies
    /// with Redis' texts, without a leading `-` (see [`crate::errors`]); the engine turns them
    /// into Lua errors as Redis does.
    fn call(&mut self, args: &[&[u8]], context: &CallContext) -> Value;

    /// `redis.acl_check_cmd`: whether the calling user may run `args`; `None` for a command
    /// the host does not know. The default allows everything it is asked about.
    fn acl_check_cmd(&mut self, args: &[&[u8]]) -> Option<bool> {
        let _ = args;
        Some(true)
    }

    /// Called about every [`crate::limits::HOOK_INSTRUCTIONS`] Lua instructions while a script
    /// runs (not while it loads a library), with the time since it started. The host uses it
    /// to start answering `-BUSY` once the script is slow and to honour SCRIPT KILL /
    /// FUNCTION KILL. The default lets the script run.
    fn tick(&mut self, elapsed: Duration) -> Tick {
        let _ = elapsed;
        Tick::Continue
    }

    /// Runs a procedure's document call and answers JSON text: the document (or `null`
    /// when none is stored) for `Get`, the result object (`items`, `total`,
    /// `aggregations`...) for `Query` and `Sql`, as the HTTP API writes them. The default
    /// refuses: a host without documents.
    fn documents(&mut self, call: DocumentCall<'_>, context: &CallContext) -> Result<Vec<u8>, DocumentError> {
        let _ = context;
        Err(DocumentError {
            code: "bad_request".into(),
            message: format!("{} is not available on this server", call.function_name()),
        })
    }
}
