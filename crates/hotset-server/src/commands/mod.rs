//! Executing RESP commands: the per-connection session, the dispatcher, and MULTI/EXEC.
//!
//! Owns: `Session` (selected keyspace, protocol, name, authentication, the queued
//! transaction) and `execute`, which checks a request against the command table and runs
//! it, writing exactly one reply. Never: touch sockets or buffers beyond the reply it is
//! given, or wait for the log: every write notes its log record into the batch's `Acks`
//! (key-value commands run on `Keyspace::writes(Durability::Collect(acks))`, EXEC's block
//! too, `DOC.*` through `Engine::apply_into`), and the connection waits once for them all.
//!
//! Group modules: `strings`, `keys`, `hashes` (key-value commands, generic over `KvOps`
//! so they run the same on a keyspace and inside EXEC's locked block), `documents`
//! (`DOC.*`: namespaces, items, queries), `server` (connection and server commands).

pub mod args;
mod documents;
mod hashes;
mod keys;
mod server;
mod strings;
pub mod table;

use crate::resp::reply::{Protocol, Reply};
use crate::state::ServerState;
use args::{CmdError, CmdResult};
use hotset_core::kv::{Keyspace, KvOps};
use hotset_core::{Acks, Durability};
use std::sync::Arc;
use table::{Kind, Spec};

/// What a connection remembers between requests.
pub struct Session {
    pub id: u64,
    pub protocol: Protocol,
    pub keyspace: Arc<Keyspace>,
    pub keyspace_name: String,
    pub authenticated: bool,
    /// Set by QUIT: the connection closes once the reply is written.
    pub closing: bool,
    /// Commands queued since MULTI, with whether one was refused while queueing.
    pub multi: Option<Multi>,
    /// `DOC.ERRORS JSON`: `DOC.*` errors as `-CODE {json}` instead of `-ERR message`.
    pub errors_json: bool,
}

/// A transaction being queued.
#[derive(Default)]
pub struct Multi {
    pub queued: Vec<Vec<Vec<u8>>>,
    pub failed: bool,
}

impl Session {
    pub fn new(state: &ServerState, id: u64) -> Session {
        Session {
            id,
            protocol: Protocol::Resp2,
            keyspace: state.db.keyspaces().get_or_create("0"),
            keyspace_name: "0".into(),
            authenticated: state.config.password.is_none(),
            closing: false,
            multi: None,
            errors_json: false,
        }
    }
}

/// Runs one request (`args[0]` is the command name) and writes its reply to `out`. A write
/// notes its log record into `acks` and does not wait for it: the caller waits once on
/// `acks` for the batch before sending any reply. The caller counts and times requests,
/// once per batch.
pub fn execute(state: &Arc<ServerState>, acks: &Acks, session: &mut Session, args: &[&[u8]], out: &mut Vec<u8>) {
    let mut reply = Reply { out, protocol: session.protocol };
    if let Err(CmdError(message)) = dispatch(state, acks, session, args, &mut reply) {
        reply.error(&message);
    }
}

fn dispatch(
    state: &Arc<ServerState>,
    acks: &Acks,
    session: &mut Session,
    args: &[&[u8]],
    r: &mut Reply<'_>,
) -> CmdResult {
    let Some(spec) = table::lookup(args[0]) else {
        let error = unknown_command(args);
        if let Some(multi) = &mut session.multi {
            multi.failed = true;
        }
        return Err(error);
    };
    if !spec.arity_ok(args.len()) {
        if let Some(multi) = &mut session.multi {
            multi.failed = true;
        }
        return Err(CmdError(spec.arity_error()));
    }
    if !session.authenticated && !matches!(spec.name, "AUTH" | "HELLO" | "QUIT" | "RESET") {
        return Err(CmdError("NOAUTH Authentication required.".into()));
    }
    if let Some(multi) = &mut session.multi {
        match spec.name {
            "EXEC" | "DISCARD" | "MULTI" | "QUIT" | "RESET" => {}
            _ if spec.in_multi => {
                multi.queued.push(args.iter().map(|a| a.to_vec()).collect());
                r.simple("QUEUED");
                return Ok(());
            }
            _ => {
                multi.failed = true;
                return Err(CmdError(format!("ERR Command not allowed inside a transaction: {}", spec.name)));
            }
        }
    }
    match spec.kind {
        Kind::Kv => run_kv(state, acks, &session.keyspace.writes(Durability::Collect(acks)), spec, args, r),
        Kind::Document => {
            let handled = documents::run(state, acks, session, spec.name, args, r)?;
            assert!(handled, "every document command in the table has a handler: {}", spec.name);
            Ok(())
        }
        Kind::Connection => match spec.name {
            "MULTI" => multi(session, r),
            "EXEC" => exec(state, acks, session, r),
            "DISCARD" => match session.multi.take() {
                Some(_) => {
                    r.ok();
                    Ok(())
                }
                None => Err(CmdError("ERR DISCARD without MULTI".into())),
            },
            _ => server::run(state, session, spec, args, r),
        },
    }
}

/// Redis' text for an unknown command, with the first arguments quoted.
fn unknown_command(args: &[&[u8]]) -> CmdError {
    let shown: Vec<String> =
        args[1..].iter().take(8).map(|a| format!("'{}'", String::from_utf8_lossy(&a[..a.len().min(128)]))).collect();
    CmdError(format!(
        "ERR unknown command '{}', with args beginning with: {}",
        String::from_utf8_lossy(&args[0][..args[0].len().min(128)]),
        shown.join(" ")
    ))
}

/// Runs a key-value command on `kv` (a keyspace whose writes note into `acks`, or the
/// locked block inside EXEC).
fn run_kv<K: KvOps>(
    state: &ServerState,
    acks: &Acks,
    kv: &K,
    spec: &Spec,
    args: &[&[u8]],
    r: &mut Reply<'_>,
) -> CmdResult {
    if spec.name == "FLUSHALL" {
        keys::flush_mode(args)?;
        for name in state.db.keyspaces().list() {
            if let Some(space) = state.db.keyspaces().get(&name) {
                space.writes(Durability::Collect(acks)).flush()?;
            }
        }
        r.ok();
        return Ok(());
    }
    let handled = strings::run(kv, spec.name, args, r)?
        || keys::run(kv, spec.name, args, r)?
        || hashes::run(kv, spec.name, args, r)?;
    assert!(handled, "every key-value command in the table has a handler: {}", spec.name);
    Ok(())
}

fn multi(session: &mut Session, r: &mut Reply<'_>) -> CmdResult {
    if session.multi.is_some() {
        return Err(CmdError("ERR MULTI calls can not be nested".into()));
    }
    session.multi = Some(Multi::default());
    r.ok();
    Ok(())
}

/// EXEC: runs the queued commands with every shard of the keyspace locked, so no other
/// client sees a state between them, and as one log record, noted into `acks`.
fn exec(state: &ServerState, acks: &Acks, session: &mut Session, r: &mut Reply<'_>) -> CmdResult {
    let Some(multi) = session.multi.take() else {
        return Err(CmdError("ERR EXEC without MULTI".into()));
    };
    if multi.failed {
        return Err(CmdError("EXECABORT Transaction discarded because of previous errors.".into()));
    }
    // FLUSHALL reaches other keyspaces, which the block does not lock: refuse it here
    // rather than break atomicity.
    if multi.queued.iter().any(|cmd| args::is(&cmd[0], "FLUSHALL")) {
        return Err(CmdError("ERR FLUSHALL is not allowed inside MULTI; use FLUSHDB".into()));
    }
    let protocol = r.protocol;
    let replies = session.keyspace.writes(Durability::Collect(acks)).atomic_all(|txn| {
        let mut out = Vec::new();
        for command in &multi.queued {
            let args: Vec<&[u8]> = command.iter().map(Vec::as_slice).collect();
            let spec = table::lookup(args[0]).expect("queued commands were looked up");
            let mut reply = Reply { out: &mut out, protocol };
            let result = match spec.kind {
                Kind::Kv => run_kv(state, acks, txn, spec, &args, &mut reply),
                Kind::Connection | Kind::Document => server::run_in_multi(spec, &args, &mut reply),
            };
            if let Err(CmdError(message)) = result {
                reply.error(&message);
            }
        }
        out
    })?;
    r.array(multi.queued.len());
    r.out.extend_from_slice(&replies);
    Ok(())
}
