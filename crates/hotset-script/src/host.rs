//! The seam between the engine and the server that embeds it.
//!
//! Owns the [`Host`] trait (what a script may ask of the server) and the context handed with
//! each request ([`CallContext`]). The engine never touches keys, clients, replication or
//! locks: it asks the host, and the host enforces its rules (command table, ACLs, read-only
//! refusal, OOM, cluster slots) answering with Redis' error texts, which [`crate::errors`]
//! names. This module must never depend on how the host keeps its data.

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
}
