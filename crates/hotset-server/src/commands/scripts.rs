//! The scripting commands: EVAL, EVALSHA, FCALL and their `_RO` forms, SCRIPT and
//! FUNCTION; and the server's side of a running script, its `redis.call`s.
//!
//! A script command outside MULTI closes the script gate (`crate::gate`: no other batch
//! runs meanwhile, on any thread; it stays closed to the end of the batch) and runs on the
//! selected keyspace's locked block (`atomic_all`: every shard write-locked, so background
//! expiry and eviction wait too, and all its writes are one log record); inside EXEC it
//! runs on EXEC's block, EXEC having closed the gate. When another connection has the turn
//! to close the gate the request is left unread (`Session::deferred`) and the connection
//! queues for the turn. A `redis.call` runs
//! through the command table on that block, under Redis' rules in Redis' order (unknown
//! command, arity, `noscript`, writes from a read-only script, deny-oom commands over
//! `maxmemory`); a blocking command never waits; commands that would reach beyond the
//! block (INFO, FLUSHALL, another keyspace) are refused. FUNCTION LOAD, DELETE, FLUSH and
//! RESTORE log the libraries as the metadata entry `redis:functions` in the batch's log
//! wait, so they survive a restart; SCRIPT LOAD's cache is not kept, as in Redis.
//!
//! **Keyed scripts.** EVALSHA and FCALL (and their `_RO` forms) that declare keys, and
//! whose code does not name the `hotset` table, first run without the gate: on the
//! running thread's own engine (`Scripts::with_local`) with only the shards of their keys
//! write-locked (`atomic(keys)`), so scripts on different keys run side by side on every
//! I/O thread. They are atomic all the same: a command reaching one of those keys waits
//! for the shard, and one that cannot reach it sees nothing of the script. A keyed run
//! that leaves its shards (a key it did not declare on another shard, a command over the
//! whole keyspace or another one, a document call) or runs past [`KEYED_BUDGET`] before it
//! has written is abandoned, having changed nothing, and runs again the gated way, where
//! SCRIPT KILL and `-BUSY` apply; one that has written by then goes on: a key beyond its
//! shards makes it take that shard (every shard, for a command over the keyspace) if it is
//! free, never waiting for it (`KeyspaceTxn::try_lock_more`: waiting could deadlock), and
//! fail that command otherwise; past the budget it closes the gate at once
//! (`Gate::close_now`) so that the server answers `-BUSY` as Redis does while an
//! unkillable script runs. A procedure over documents that cannot write runs keyed too,
//! keys or not, its document reads each seeing a committed state.
//!
//! A procedure's `hotset.*` document calls go through the same host to
//! `hotset_ops::procedure` (shared with the Python package's embedded host); its document
//! writes are applied once the script has returned without an error and its block is
//! released (outside MULTI only).
//!
//! `DOC.CALL name arg...` is FCALL of `name` with no keys (`By::Procedure`): the same
//! gate, block, flags, kill and commit, but the function's return value answered as JSON
//! text by the document mapping (`hotset_script::Answer::Json`), so RESP, HTTP and Python
//! get the same answer. HTTP's `POST /api/v1/functions/{name}` runs it through
//! [`call_for_http`], a batch of one request on a session of its own.
//!
//! Owns: [`ScriptCommand`], the handlers, the `Host` a script calls through. Never: hold
//! the engine while waiting for the gate (the gate first, then the engine), run a script
//! without the gate closed or its keys' shards locked, or decide anything by a command's
//! name (the table's `Spec` says what a command is).

use super::args::{self, CmdError, CmdResult, unknown_subcommand};
use super::table::{self, Handler, Spec};
use super::{Blocks, Pass, Ran, Session};
use crate::gate::{Closed, Wait};
use crate::resp::reply::{Protocol, Reply};
use crate::scripting::Kind;
use crate::state::ServerState;
use hotset_core::Durability;
use hotset_core::kv::KvError::KeyNotLocked;
use hotset_ops::procedure::{self, LibrariesError, Procedure};
use hotset_script::{
    Answer, CallContext, DocumentCall, DocumentError, Engine, Host, Profile, RestorePolicy, RunOptions, ScriptError,
    ScriptFlags, Tick, Value, errors, split_keys,
};
use std::sync::Arc;
use std::time::Duration;

/// What a script command names its script by, and whether the script may write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScriptCommand {
    pub by: By,
    /// `EVAL_RO`, `EVALSHA_RO`, `FCALL_RO`.
    pub read_only: bool,
}

/// How a script command names what it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum By {
    /// EVAL: the body.
    Body,
    /// EVALSHA: a cached body's SHA1.
    Sha,
    /// FCALL: a function of a loaded library.
    Function,
    /// DOC.CALL: a function of a loaded library, with arguments and no keys, answering
    /// its return value as JSON text.
    Procedure,
}

impl By {
    /// Whether it names a function of a loaded library (FUNCTION KILL stops it).
    fn function(self) -> bool {
        matches!(self, By::Function | By::Procedure)
    }
}

/// A script command's arguments, checked.
struct Call<'a> {
    command: ScriptCommand,
    /// Every argument, the command's name included (FUNCTION STATS shows them).
    request: &'a [&'a [u8]],
    keys: &'a [&'a [u8]],
    args: &'a [&'a [u8]],
}

/// How a run ended, and what the connection must know of it.
struct Outcome {
    result: Result<Value, ScriptError>,
    wrote: bool,
    /// A keyed run left its shards (or ran long) before it wrote: it changed nothing and
    /// runs again the gated way.
    escaped: bool,
    /// Its document writes, applied once its key-value block is released.
    procedure: Procedure,
    /// The error replies the script's commands got: the script's own error, when it is
    /// one of them raised again, was counted in the error statistics already.
    command_errors: Vec<Vec<u8>>,
}

/// Closes the script gate for the rest of the batch, unless it did already; false when
/// another connection has the turn to close it: the request is deferred, and the
/// connection queues for the turn.
pub fn hold_gate(state: &Arc<ServerState>, session: &mut Session) -> bool {
    if session.gate_held.is_some() {
        return true;
    }
    let Some(turn) = session.turn.take().or_else(|| state.gate.take_turn()) else {
        session.deferred = Some(Wait::Turn);
        return false;
    };
    // Only the turn's holder closes the gate, and the last one opened it before it let
    // the turn go.
    let closed = state.gate.try_close(&turn);
    session.turn = Some(turn);
    match closed {
        Some(closed) => {
            session.gate_held = Some(closed);
            true
        }
        None => {
            session.deferred = Some(Wait::Open);
            false
        }
    }
}

/// EVAL, EVALSHA, FCALL and their `_RO` forms outside MULTI: the gate closed (for the rest
/// of the batch: a pipeline of scripts closes it once), the selected keyspace's block
/// locked. While another connection has the turn to close the gate the request is
/// deferred (left unread: the connection queues for the turn and sends it again).
pub fn call(
    state: &Arc<ServerState>,
    session: &mut Session,
    command: ScriptCommand,
    a: &[&[u8]],
    r: &mut Reply<'_>,
) -> CmdResult {
    if let Some(done) = keyed(state, session, command, a, r) {
        return done;
    }
    let call = prepare(state, session, command, a)?;
    if !hold_gate(state, session) {
        return Ok(());
    }
    let keyspace = Arc::clone(&session.keyspace);
    let name = session.keyspace_name.clone();
    // The block borrows the batch's collector while the script borrows the session.
    let acks = std::mem::take(&mut session.acks);
    let ran = keyspace.writes(Durability::Collect(&acks)).atomic_all(|txn| {
        let blocks = Blocks { current: (&name, txn), others: (&[], &[]) };
        run(state, session, &call, &blocks, true)
    });
    session.acks = acks;
    let mut outcome = ran?;
    debug_assert!(!outcome.escaped, "a gated run has nowhere to escape to");
    // A procedure's document writes, all or none, after its key-value block (applying a
    // write that adds data may evict keys) and still inside the gate. A script that failed
    // left none.
    let succeeded = matches!(outcome.result, Ok(ref value) if !value.is_error());
    let procedure = std::mem::take(&mut outcome.procedure);
    if succeeded
        && let Err(refused) = procedure::commit(procedure, |request| super::apply(state, &session.acks, request))
    {
        outcome.result = Err(ScriptError::Runtime(procedure::commit_error(&refused)));
    }
    // The clients its pushes serve are served before any other command runs, as in Redis.
    if outcome.wrote {
        state.blocking.wake_everyone(Some(&name));
    }
    answer(session, outcome, r)
}

/// How long a keyed script runs before, if it has not written, it is abandoned and runs
/// again the gated way (where it can be killed), or, if it has, makes the server busy.
/// Connections reaching its keys wait this long at most for a script that reads.
const KEYED_BUDGET: Duration = Duration::from_millis(5);

/// A keyed run (see the module's doc): `None` when the script goes the gated way (EVAL's
/// body, a batch that holds the gate already, no declared keys unless it is a read-only
/// procedure, a procedure that may write, anything `prepare` would refuse, or a run that
/// escaped).
fn keyed(
    state: &Arc<ServerState>,
    session: &mut Session,
    command: ScriptCommand,
    a: &[&[u8]],
    r: &mut Reply<'_>,
) -> Option<CmdResult> {
    if command.by == By::Body || session.gate_held.is_some() {
        return None;
    }
    let function = command.by.function();
    let (keys, args) = match command.by {
        By::Procedure => (&[][..], &a[2..]),
        _ => split_keys(a[2], &a[3..], command.by == By::Function).ok()?,
    };
    let call = Call { command, request: a, keys, args };
    let keyspace = Arc::clone(&session.keyspace);
    let name = session.keyspace_name.clone();
    let outcome = state.scripts.with_local(|engine| {
        let Profile { flags, documents } = if function {
            engine.function_profile(a[1])?
        } else {
            match engine.evalsha_profile(a[1]) {
                Some(profile) => profile,
                None => {
                    engine.script_load(&state.scripts.cached_body(a[1])?).ok()?;
                    engine.evalsha_profile(a[1])?
                }
            }
        };
        let may_fill = flags
            .is_some_and(|flags| !flags.contains(ScriptFlags::ALLOW_OOM) && !flags.contains(ScriptFlags::NO_WRITES));
        let read_only = command.read_only || flags.is_some_and(|flags| flags.contains(ScriptFlags::NO_WRITES));
        // A procedure over documents runs keyed only when it cannot write; a script runs
        // keyed only with keys (a read-only procedure's key reads lock nothing, and so go
        // the gated way).
        let keyed = if documents { read_only } else { !keys.is_empty() };
        if !keyed || (may_fill && session.over_memory) {
            return None;
        }
        let acks = std::mem::take(&mut session.acks);
        let ran = keyspace.writes(Durability::Collect(&acks)).atomic(keys, |txn| {
            let blocks = Blocks { current: (&name, txn), others: (&[], &[]) };
            run_on(engine, state, session, &call, &blocks, Mode::Keyed { documents })
        });
        session.acks = acks;
        Some(ran)
    })?;
    let outcome = match outcome {
        Ok(outcome) if outcome.escaped => return None,
        Ok(outcome) => outcome,
        Err(error) => return Some(Err(error.into())),
    };
    if outcome.wrote {
        state.blocking.wake_everyone(Some(&name));
    }
    Some(answer(session, outcome, r))
}

/// A script command queued in MULTI, run by EXEC on its block (EXEC holds the gate).
pub fn call_in_block(
    state: &Arc<ServerState>,
    session: &mut Session,
    command: ScriptCommand,
    a: &[&[u8]],
    blocks: &Blocks<'_, '_>,
    r: &mut Reply<'_>,
) -> CmdResult {
    let call = prepare(state, session, command, a)?;
    let outcome = run(state, session, &call, blocks, false);
    answer(session, outcome, r)
}

/// Checks the arguments in Redis' order (FCALL's function first, then numkeys, then
/// EVALSHA's script) and refuses, over `maxmemory`, a script that declared flags without
/// `allow-oom` or `no-writes` (Redis refuses it before it runs).
fn prepare<'a>(
    state: &ServerState,
    session: &Session,
    command: ScriptCommand,
    a: &'a [&'a [u8]],
) -> Result<Call<'a>, CmdError> {
    let engine = state.scripts.engine();
    let function = match command.by.function() {
        true => Some(engine.function_flags(a[1]).ok_or(ScriptError::FunctionNotFound).map_err(script_error)?),
        false => None,
    };
    let (keys, args) = match command.by {
        By::Procedure => (&[][..], &a[2..]),
        _ => split_keys(a[2], &a[3..], command.by == By::Function).map_err(script_error)?,
    };
    let flags = match command.by {
        By::Function | By::Procedure => function,
        By::Body => engine.eval_flags(a[1]).map_err(script_error)?,
        By::Sha => engine.evalsha_flags(a[1]).ok_or(ScriptError::NoScript).map_err(script_error)?,
    };
    let may_fill =
        flags.is_some_and(|flags| !flags.contains(ScriptFlags::ALLOW_OOM) && !flags.contains(ScriptFlags::NO_WRITES));
    if may_fill && session.over_memory {
        return Err(CmdError(crate::memory::OOM.into()));
    }
    Ok(Call { command, request: a, keys, args })
}

fn script_error(error: ScriptError) -> CmdError {
    CmdError(error.to_string())
}

/// Where a script runs, which decides what it may reach and who may stop it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Under the closed gate, on the shared engine: the server's one running script (SCRIPT
    /// KILL, FUNCTION STATS and `-BUSY` see it). `documents`: it may write documents
    /// (outside MULTI: they are applied after the block, see `hotset_ops::procedure`).
    Gated { documents: bool },
    /// With its keys' shards locked, on this thread's engine, beside other scripts.
    /// `documents`: a read-only procedure, whose document reads each see a committed
    /// state (they do not exclude writes from other connections).
    Keyed { documents: bool },
}

/// Runs the script gated (the caller closed the gate) with its `redis.call`s on the
/// selected keyspace's block; `documents`: see [`Mode::Gated`].
fn run(
    state: &Arc<ServerState>,
    session: &mut Session,
    call: &Call<'_>,
    blocks: &Blocks<'_, '_>,
    documents: bool,
) -> Outcome {
    let mut engine = state.scripts.engine();
    let kind = if call.command.by.function() { Kind::Function } else { Kind::Eval };
    state.scripts.begin(kind, call.request);
    state.gate.restart_clock();
    let outcome = run_on(&mut engine, state, session, call, blocks, Mode::Gated { documents });
    state.scripts.end(&engine);
    outcome
}

/// Runs the script on `engine` and `blocks`, `mode` deciding the rest.
fn run_on(
    engine: &mut Engine,
    state: &Arc<ServerState>,
    session: &mut Session,
    call: &Call<'_>,
    blocks: &Blocks<'_, '_>,
    mode: Mode,
) -> Outcome {
    let target = call.request[1];
    let over_memory = session.over_memory;
    let mut host = ScriptHost {
        state,
        session,
        blocks,
        declared: call.keys,
        request: call.request,
        kind: if call.command.by.function() { Kind::Function } else { Kind::Eval },
        mode,
        over_memory,
        wrote: false,
        escaped: false,
        busy: None,
        remembered: false,
        command_errors: Vec::new(),
        next_handoff: HANDOFF_FIRST,
        procedure: Procedure::new(mode == Mode::Gated { documents: true }),
    };
    let answer = if call.command.by == By::Procedure { Answer::Json } else { Answer::Reply };
    let options = RunOptions { read_only: call.command.read_only, answer };
    let result = match call.command.by {
        By::Body => engine.eval(target, call.keys, call.args, &mut host, options),
        By::Sha => engine.evalsha(target, call.keys, call.args, &mut host, options),
        By::Function | By::Procedure => engine.fcall(target, call.keys, call.args, &mut host, options),
    };
    if host.busy.take().is_some() {
        // A keyed script that kept the server busy: the gate opens as the value drops.
        state.scripts.stop();
    }
    Outcome {
        result,
        wrote: host.wrote,
        escaped: host.escaped,
        procedure: host.procedure,
        command_errors: host.command_errors,
    }
}

/// Writes the script's reply; an error (raised or returned) fails the command, and is
/// left out of the error statistics when a command of the script's got it first.
fn answer(session: &mut Session, outcome: Outcome, r: &mut Reply<'_>) -> CmdResult {
    let text = match outcome.result {
        Ok(Value::Error(text)) => text,
        Ok(value) => {
            value.write(lua_protocol(r.protocol), r.out);
            return Ok(());
        }
        Err(error) => error.to_string().into_bytes(),
    };
    session.error_counted = outcome.command_errors.iter().any(|error| text.starts_with(error));
    Err(CmdError(String::from_utf8_lossy(&text).into_owned()))
}

fn lua_protocol(protocol: Protocol) -> hotset_script::Protocol {
    match protocol {
        Protocol::Resp2 => hotset_script::Protocol::Resp2,
        Protocol::Resp3 => hotset_script::Protocol::Resp3,
    }
}

/// Whether a command's reply is the block's refusal of a key on a shard it does not hold.
fn is_key_not_locked(value: &Value) -> bool {
    matches!(value, Value::Error(text) if *text == KeyNotLocked.to_string().as_bytes())
}

/// What an abandoned keyed run's commands answer (never seen: the run is done again).
const ESCAPED: &str = "ERR the script left its keys' shards and runs again";
/// A keyed script that wrote and then reached a key beyond its shards that another block
/// held (it does not wait for it: that could deadlock).
const KEYED_UNDECLARED: &str = "ERR Script attempted to access a key not declared in KEYS on another shard after writing: declare every key it uses";
/// A keyed script that wrote and then reached the documents (by a name its code did not
/// show).
const KEYED_DOCUMENTS: &str = "a script that declares keys reaches the documents only before it writes";

/// A script that has run this long hands its I/O thread's other connections to another
/// thread (short scripts never pay for it).
const HANDOFF_FIRST: Duration = Duration::from_millis(2);
/// How long the script pauses at a hand-off, so the thread taking over can start: after
/// a hand-off that took, later ones cost only the pause.
const HANDOFF_PAUSE: Duration = Duration::from_millis(1);
/// How often a long script tries again, in case a hand-off did not take.
const HANDOFF_EVERY: Duration = Duration::from_millis(250);

/// What a running script asks of the server.
struct ScriptHost<'s, 'b, 't> {
    state: &'s Arc<ServerState>,
    session: &'s mut Session,
    /// The selected keyspace's block (`blocks.current`), alone.
    blocks: &'b Blocks<'b, 't>,
    /// The script's KEYS: a tracking caller remembers them once the script reads (Redis'
    /// rule for scripts).
    declared: &'s [&'s [u8]],
    /// The command that runs it, and what it is (a keyed script that turns busy shows
    /// them as the gated one would).
    request: &'s [&'s [u8]],
    kind: Kind,
    mode: Mode,
    /// A keyed run left its shards before it wrote (see `Outcome::escaped`).
    escaped: bool,
    /// A keyed script that wrote and ran past the budget holds the gate closed.
    busy: Option<Closed>,
    /// The server was over `maxmemory` when the script began.
    over_memory: bool,
    wrote: bool,
    remembered: bool,
    command_errors: Vec<Vec<u8>>,
    next_handoff: Duration,
    /// The procedure's document writes (`hotset.*`), not applied yet.
    procedure: Procedure,
}

impl Host for ScriptHost<'_, '_, '_> {
    fn call(&mut self, args: &[&[u8]], context: &CallContext) -> Value {
        if self.escaped {
            // The run is abandoned: nothing more runs (it stops at its next tick).
            return Value::error(ESCAPED);
        }
        let value = self.execute(args, context);
        if let Value::Error(text) = &value {
            self.state.stats.count_error(&String::from_utf8_lossy(text));
            self.command_errors.push(text.clone());
        }
        value
    }

    fn acl_check_cmd(&mut self, args: &[&[u8]]) -> Option<bool> {
        // One user, who may run every command.
        table::lookup(args.first()?).map(|_| true)
    }

    fn documents(&mut self, call: DocumentCall<'_>, context: &CallContext) -> Result<Vec<u8>, DocumentError> {
        if let Mode::Keyed { documents: true } = self.mode {
            return procedure::documents(&self.state.engine, &mut self.procedure, call, context, self.wrote);
        }
        if let Mode::Keyed { .. } = self.mode {
            // Documents are reached under the gate alone (a name the code did not show).
            if !self.wrote {
                self.escaped = true;
            }
            // The code leads the error line (`BAD_REQUEST ...`); an abandoned run's is never seen.
            let message = if self.wrote { KEYED_DOCUMENTS } else { "the run is abandoned and runs again" };
            return Err(DocumentError { code: "bad_request".into(), message: message.into() });
        }
        procedure::documents(&self.state.engine, &mut self.procedure, call, context, self.wrote)
    }

    fn tick(&mut self, elapsed: Duration) -> Tick {
        if matches!(self.mode, Mode::Keyed { .. }) {
            if self.escaped {
                return Tick::Kill;
            }
            if elapsed < KEYED_BUDGET {
                return Tick::Continue;
            }
            if !self.wrote {
                self.escaped = true;
                return Tick::Kill;
            }
            if self.busy.is_none()
                && let Some(closed) = self.state.gate.close_now()
            {
                self.busy = Some(closed);
                self.state.scripts.begin(self.kind, self.request);
                let unkillable = self.state.scripts.note_write();
                debug_assert!(unkillable, "nobody could ask to kill it before it was busy");
            }
        } else if self.state.scripts.kill_requested() {
            return Tick::Kill;
        }
        if elapsed >= self.next_handoff {
            // Connections queued on this I/O thread go on elsewhere (and see -BUSY)
            // rather than wait for the script, whatever the number of threads.
            self.next_handoff = elapsed + HANDOFF_EVERY;
            crate::gate::blocking_section(|| std::thread::sleep(HANDOFF_PAUSE));
        }
        Tick::Continue
    }
}

impl ScriptHost<'_, '_, '_> {
    fn execute(&mut self, args: &[&[u8]], context: &CallContext) -> Value {
        let Some(spec) = table::lookup(args[0]) else {
            return Value::error(errors::UNKNOWN_COMMAND);
        };
        if let Some(refusal) = self.refusal(spec, args, context) {
            self.session.tally(spec, Ran::Rejected);
            return Value::error(refusal);
        }
        if matches!(self.mode, Mode::Keyed { .. }) && spec.across.is_some() && !self.wrote {
            // Another keyspace's block is the gated way's to take.
            self.escaped = true;
            return Value::error(ESCAPED);
        }
        let wrote_before = self.wrote;
        if spec.write && matches!(self.mode, Mode::Keyed { .. }) {
            self.wrote = true;
        } else if spec.write {
            if !self.state.scripts.note_write() {
                // SCRIPT KILL came first: the script stops at its next tick, writing nothing.
                return Value::error("ERR Script killed by user with SCRIPT KILL...");
            }
            self.wrote = true;
        }
        if !spec.write && !self.remembered && matches!(spec.handler, Handler::Kv(_)) {
            self.remembered = true;
            super::remember_keys(self.state, self.session, self.declared.iter().copied());
        }
        let mut value = self.run_command(spec, args, context);
        if matches!(self.mode, Mode::Keyed { .. }) && is_key_not_locked(&value) {
            // Beyond its shards (the command changed nothing: a block refuses before it
            // touches anything). Abandoned if it has not written; else it takes the shards it
            // needs if they are free, those of the command's keys, then every one.
            if !wrote_before {
                self.escaped = true;
                return Value::error(ESCAPED);
            }
            let txn = self.blocks.current.1;
            let keys: Vec<&[u8]> = spec.key_args(args).collect();
            for wanted in [Some(keys.as_slice()), None] {
                if !is_key_not_locked(&value) || !txn.try_lock_more(wanted) {
                    break;
                }
                value = self.run_command(spec, args, context);
            }
            if is_key_not_locked(&value) {
                value = Value::error(KEYED_UNDECLARED);
            }
        }
        self.session.tally(spec, if value.is_error() { Ran::Failed } else { Ran::Ok });
        value
    }

    /// Runs one command the script called on its block, its reply as a value.
    fn run_command(&mut self, spec: &'static Spec, args: &[&[u8]], context: &CallContext) -> Value {
        let mut out = Vec::new();
        let mut reply = Reply { out: &mut out, protocol: server_protocol(context.protocol) };
        let ran = match spec.handler {
            Handler::Blocking(parse) if parse(args).is_ok_and(|request| request.stream_block()) => {
                Err(CmdError(format!(
                    "ERR {} command is not allowed with BLOCK option from scripts",
                    String::from_utf8_lossy(args[0])
                )))
            }
            _ => crate::scripting::calling(|| {
                super::run_in_block(self.state, self.session, spec, args, self.blocks, &mut reply)
                    .unwrap_or_else(|| Err(CmdError(errors::NOT_ALLOWED_FROM_SCRIPT.into())))
            }),
        };
        match ran {
            Ok(()) => hotset_script::parse_resp(&out)
                .map(|(value, _)| value)
                .unwrap_or_else(|error| Value::error(format!("ERR unreadable reply from {}: {error}", spec.name))),
            Err(CmdError(message)) => Value::error(message),
        }
    }

    /// Why `spec` may not run from this script, in Redis' words and order; `None` if it may.
    fn refusal(&self, spec: &Spec, args: &[&[u8]], context: &CallContext) -> Option<&'static str> {
        let allow_oom = context.flags.is_some_and(|flags| flags.contains(ScriptFlags::ALLOW_OOM));
        if !spec.arity_ok(args.len()) {
            Some(errors::WRONG_ARITY)
        } else if spec.noscript {
            Some(errors::NOT_ALLOWED_FROM_SCRIPT)
        } else if context.read_only && spec.write {
            Some(errors::WRITE_IN_READ_ONLY_SCRIPT)
        } else if spec.write && self.procedure.wrote() {
            Some("ERR this procedure wrote documents, and its key and document writes cannot be one transaction yet")
        } else if spec.denyoom && self.over_memory && !self.wrote && !allow_oom {
            Some(errors::OOM_COMMAND)
        } else if self.reaches_other_keyspaces(spec, args) {
            Some("ERR Commands that reach another keyspace are not allowed from scripts")
        } else {
            None
        }
    }

    /// MOVE, COPY ... DB and SWAPDB naming a keyspace other than the script's: the script
    /// holds its own keyspace's block alone.
    fn reaches_other_keyspaces(&self, spec: &Spec, args: &[&[u8]]) -> bool {
        let Some(across) = spec.across else { return false };
        (across.databases)(args)
            .into_iter()
            .any(|db| super::keys::database(self.state, db).is_ok_and(|name| self.blocks.named(&name).is_none()))
    }
}

fn server_protocol(protocol: hotset_script::Protocol) -> Protocol {
    match protocol {
        hotset_script::Protocol::Resp2 => Protocol::Resp2,
        hotset_script::Protocol::Resp3 => Protocol::Resp3,
    }
}

/// While a script keeps the server busy, SCRIPT and FUNCTION run (their table entries
/// let them through) for KILL and FUNCTION STATS alone: the rest is refused as Redis
/// refuses it.
fn refuse_while_busy(session: &Session, allowed: bool) -> CmdResult {
    match session.gate {
        Pass::Busy(text) if !allowed => Err(CmdError(text.into())),
        _ => Ok(()),
    }
}

/// Redis' text for a subcommand given the wrong number of arguments.
fn sub_arity(command: &str, sub: &str, arity: i32, given: usize) -> CmdResult {
    let fits = if arity >= 0 { given as i32 == arity } else { given as i32 >= -arity };
    if fits { Ok(()) } else { Err(args::wrong_arity(&format!("{command}|{sub}"))) }
}

/// SCRIPT KILL (`Kind::Eval`) or FUNCTION KILL (`Kind::Function`).
fn kill(state: &ServerState, kind: Kind, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    sub_arity(if kind == Kind::Eval { "script" } else { "function" }, "kill", 2, a.len())?;
    state.scripts.kill(kind).map_err(|text| CmdError(text.into()))?;
    r.ok();
    Ok(())
}

/// `command HELP` (its `lines`), or Redis' error for a subcommand it does not have.
fn help_or_unknown(command: &str, a: &[&[u8]], lines: &[&str], r: &mut Reply<'_>) -> CmdResult {
    if !args::is(a[1], "HELP") {
        return Err(unknown_subcommand(command, a[1]));
    }
    sub_arity(&command.to_ascii_lowercase(), "help", 2, a.len())?;
    args::help(r, lines);
    Ok(())
}

/// Redis' text for a subcommand's arguments it does not take.
fn sub_syntax(command: &str, sub: &str) -> CmdError {
    CmdError(format!("ERR unknown subcommand or wrong number of arguments for '{sub}'. Try {command} HELP."))
}

const SCRIPT_HELP: &[&str] = &[
    "SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "EXISTS <sha1> [<sha1> ...]",
    "    Return information about the existence of the scripts in the script cache.",
    "FLUSH [ASYNC|SYNC]",
    "    Flush the Lua scripts cache. Very dangerous on replicas.",
    "    When called without the optional mode argument, the behavior is determined by the",
    "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
    "    * ASYNC: Asynchronously flush the scripts cache.",
    "    * SYNC: Synchronously flush the scripts cache.",
    "KILL",
    "    Kill the currently executing Lua script.",
    "LOAD <script>",
    "    Load a script into the scripts cache without executing it.",
    "HELP",
    "    Print this help.",
];

/// SCRIPT LOAD | EXISTS | FLUSH [ASYNC|SYNC] | KILL | HELP. The cache is not persisted
/// (Redis' neither): clients load scripts again after a restart, on NOSCRIPT.
pub fn script(state: &Arc<ServerState>, session: &mut Session, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    let sub = a[1];
    refuse_while_busy(session, args::is(sub, "KILL"))?;
    if args::is(sub, "KILL") {
        kill(state, Kind::Eval, a, r)?;
    } else if args::is(sub, "LOAD") {
        sub_arity("script", "load", 3, a.len())?;
        let mut engine = state.scripts.engine();
        let sha = engine.script_load(a[2]).map_err(script_error)?;
        state.scripts.refresh(&engine);
        r.bulk(sha.as_bytes());
    } else if args::is(sub, "EXISTS") {
        sub_arity("script", "exists", -3, a.len())?;
        let engine = state.scripts.engine();
        r.array(a.len() - 2);
        a[2..].iter().for_each(|sha| r.int(i64::from(engine.script_exists(sha))));
    } else if args::is(sub, "FLUSH") {
        sub_arity("script", "flush", -2, a.len())?;
        if !matches!(a, [_, _] | [_, _, _])
            || a.get(2).is_some_and(|mode| !args::is(mode, "ASYNC") && !args::is(mode, "SYNC"))
        {
            return Err(CmdError("ERR SCRIPT FLUSH only support SYNC|ASYNC option".into()));
        }
        let mut engine = state.scripts.engine();
        engine.script_flush().map_err(script_error)?;
        state.scripts.scripts_flushed();
        state.scripts.refresh(&engine);
        r.ok();
    } else {
        return help_or_unknown("SCRIPT", a, SCRIPT_HELP, r);
    }
    Ok(())
}

const FUNCTION_HELP: &[&str] = &[
    "FUNCTION <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "LOAD [REPLACE] <FUNCTION CODE>",
    "    Create a new library with the given library name and code.",
    "DELETE <LIBRARY NAME>",
    "    Delete the given library.",
    "LIST [LIBRARYNAME PATTERN] [WITHCODE]",
    "    Return general information on all the libraries:",
    "    * Library name",
    "    * The engine used to run the Library",
    "    * Library description",
    "    * Functions list",
    "    * Library code (if WITHCODE is given)",
    "    It also possible to get only function that matches a pattern using LIBRARYNAME argument.",
    "STATS",
    "    Return information about the current function running:",
    "    * Function name",
    "    * Command used to run the function",
    "    * Duration in MS that the function is running",
    "    If no function is running, return nil",
    "    In addition, returns a list of available engines.",
    "KILL",
    "    Kill the current running function.",
    "FLUSH [ASYNC|SYNC]",
    "    Delete all the libraries.",
    "    When called without the optional mode argument, the behavior is determined by the",
    "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
    "    * ASYNC: Asynchronously flush the libraries.",
    "    * SYNC: Synchronously flush the libraries.",
    "DUMP",
    "    Return a serialized payload representing the current libraries, can be restored using FUNCTION RESTORE command",
    "RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
    "    Restore the libraries represented by the given payload, it is possible to give a restore policy to",
    "    control how to handle existing libraries (default APPEND):",
    "    * FLUSH: delete all existing libraries.",
    "    * APPEND: appends the restored libraries to the existing libraries. On collision, abort.",
    "    * REPLACE: appends the restored libraries to the existing libraries, On collision, replace the old",
    "      libraries with the new libraries (notice that even on this option there is a chance of failure",
    "      in case of functions name collision with another library).",
    "HELP",
    "    Print this help.",
];

/// `DOC.FUNCTIONS`: every library and its functions as JSON, `{"items": [...]}`, what
/// `GET /api/v1/functions` answers (FUNCTION LIST is Redis' form of the same).
pub fn functions_json(state: &Arc<ServerState>, _: &mut Session, _: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    let catalog = state.scripts.engine().function_catalog();
    r.bulk(serde_json::json!({ "items": catalog }).to_string().as_bytes());
    Ok(())
}

/// FUNCTION LOAD [REPLACE] | DELETE | FLUSH [ASYNC|SYNC] | LIST [LIBRARYNAME p] [WITHCODE] |
/// DUMP | RESTORE payload [FLUSH|APPEND|REPLACE] | STATS | KILL | HELP. Libraries are data:
/// every change is logged before it is answered.
pub fn function(state: &Arc<ServerState>, session: &mut Session, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    let sub = a[1];
    refuse_while_busy(session, args::is(sub, "KILL") || args::is(sub, "STATS"))?;
    if args::is(sub, "KILL") {
        kill(state, Kind::Function, a, r)?;
    } else if args::is(sub, "STATS") {
        sub_arity("function", "stats", 2, a.len())?;
        // Never the engine: a running function holds it. An EVAL script is not Redis'
        // running function: it answers that the server is busy with one.
        let stats = state.scripts.function_stats().map_err(|text| CmdError(text.into()))?;
        stats.write(lua_protocol(r.protocol), r.out);
    } else if args::is(sub, "LOAD") {
        sub_arity("function", "load", -3, a.len())?;
        let mut replace = false;
        for option in &a[2..a.len() - 1] {
            if !args::is(option, "REPLACE") {
                return Err(CmdError(format!("ERR Unknown option given: {}", String::from_utf8_lossy(option))));
            }
            replace = true;
        }
        refuse_over_memory(session)?;
        let code = a[a.len() - 1];
        let name = change_libraries(state, session, |engine| engine.function_load(code, replace))?;
        r.bulk(name.as_bytes());
    } else if args::is(sub, "DELETE") {
        sub_arity("function", "delete", 3, a.len())?;
        change_libraries(state, session, |engine| engine.function_delete(a[2]))?;
        r.ok();
    } else if args::is(sub, "FLUSH") {
        sub_arity("function", "flush", -2, a.len())?;
        match a {
            [_, _] => {}
            [_, _, mode] if args::is(mode, "ASYNC") || args::is(mode, "SYNC") => {}
            [_, _, _] => return Err(CmdError("ERR FUNCTION FLUSH only supports SYNC|ASYNC option".into())),
            _ => return Err(sub_syntax("FUNCTION", "flush")),
        }
        change_libraries(state, session, |engine| {
            engine.function_flush();
            Ok(())
        })?;
        r.ok();
    } else if args::is(sub, "LIST") {
        let list = state.scripts.engine().function_list(&a[2..]).map_err(script_error)?;
        list.write(lua_protocol(r.protocol), r.out);
    } else if args::is(sub, "DUMP") {
        sub_arity("function", "dump", 2, a.len())?;
        r.bulk(&state.scripts.engine().function_dump());
    } else if args::is(sub, "RESTORE") {
        sub_arity("function", "restore", -3, a.len())?;
        if a.len() > 4 {
            return Err(sub_syntax("FUNCTION", "restore"));
        }
        let policy = a.get(3).map(|policy| RestorePolicy::from_argument(policy)).transpose().map_err(script_error)?;
        refuse_over_memory(session)?;
        change_libraries(state, session, |engine| engine.function_restore(a[2], policy.unwrap_or_default()))?;
        r.ok();
    } else {
        return help_or_unknown("FUNCTION", a, FUNCTION_HELP, r);
    }
    Ok(())
}

/// FUNCTION LOAD and RESTORE add to memory (Redis flags them `denyoom`).
fn refuse_over_memory(session: &Session) -> CmdResult {
    if session.over_memory { Err(CmdError(crate::memory::OOM.into())) } else { Ok(()) }
}

/// Applies a change to the function libraries and logs them all (the metadata entry
/// `redis:functions`, in the batch's log wait, so the reply follows the log); a change the
/// log refuses is undone. Under the engine's lock, so two changes are logged in the order
/// they were made.
fn change_libraries<R>(
    state: &ServerState,
    session: &Session,
    change: impl FnOnce(&mut Engine) -> Result<R, ScriptError>,
) -> Result<R, CmdError> {
    let mut engine = state.scripts.engine();
    let changed = procedure::change_libraries(&state.engine, Durability::Collect(&session.acks), &mut engine, change);
    state.scripts.functions_changed(&engine);
    state.scripts.refresh(&engine);
    changed.map_err(|error| match error {
        LibrariesError::Script(error) => script_error(error),
        LibrariesError::Log(reason) => CmdError(format!("MISCONF {reason}")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::table::Busy;

    #[test]
    fn subcommand_errors_use_redis_texts() {
        assert_eq!(
            sub_arity("script", "load", 3, 2).unwrap_err().0,
            "ERR wrong number of arguments for 'script|load' command"
        );
        assert!(sub_arity("script", "exists", -3, 4).is_ok());
        assert_eq!(
            sub_syntax("FUNCTION", "restore").0,
            "ERR unknown subcommand or wrong number of arguments for 'restore'. Try FUNCTION HELP."
        );
    }

    #[test]
    fn every_script_command_refuses_being_called_from_a_script() {
        for spec in table::COMMANDS.iter().filter(|spec| matches!(spec.handler, Handler::Script(_))) {
            assert!(spec.noscript && spec.busy == Busy::Refused, "{}", spec.name);
        }
    }
}
