//! Executing RESP commands: the per-connection session, the dispatcher, and MULTI/EXEC.
//!
//! Owns: `Session` (selected keyspace, protocol, name, authentication, the queued
//! transaction) and `execute`, which looks a request up in the command table, applies the
//! entry's rules (arity, authentication, MULTI queueing) and calls the entry's handler,
//! writing exactly one reply. Never: touch sockets or buffers beyond the reply it is
//! given, wait for the log (every write notes its log record into the batch's
//! `Session::acks`: key-value commands run on `Keyspace::writes(Durability::Collect(..))`,
//! EXEC's block too, `DOC.*` through `Engine::apply_into`; the connection waits once for
//! them all), or look at a command's name: what a command is and does is its
//! `table::Spec`.
//!
//! Group modules hold one handler per command: `strings`, `keys`, `hashes`, `lists`, `sets` (key-value
//! commands, each written once generic over `KvOps` and held by the table for a keyspace
//! and for EXEC's locked block), `documents` (`DOC.*`: namespaces, items, queries),
//! `server` (connection and server commands), `scripts` (EVAL, FCALL, SCRIPT, FUNCTION);
//! MULTI, EXEC and DISCARD are here, and `run_in_block`, how EXEC and a script's
//! `redis.call` run a command on a locked block.
//!
//! While a script keeps the server busy (`crate::gate`), a batch runs without entering the
//! gate (`Session::gate` is `Pass::Busy`): every command is answered `-BUSY` but those the
//! table lets through (`table::Busy`).

pub mod args;
mod config;
mod documents;
mod geo;
mod hashes;
mod hll;
mod info;
mod keys;
pub mod lists;
pub mod pubsub;
pub mod scripts;
mod server;
mod sets;
pub mod streams;
mod strings;
pub mod table;
pub mod zsets;

use crate::blocking::BlockRequest;
use crate::pubsub::Outbox;
use crate::resp::reply::{Protocol, Reply};
use crate::state::ServerState;
use args::{CmdError, CmdResult};
use hotset_core::kv::{Keyspace, KeyspaceTxn};
use hotset_core::{Acks, Durability};
use hotset_ops::{Answer, Refusal, Request};
use std::sync::Arc;
use table::{Busy, Handler, InMulti, Spec, Subscribed, Wakes};

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
    /// The log records the current batch's writes noted (a fresh collector per batch:
    /// the connection sets it, executes the batch, takes it and waits once).
    pub acks: Acks,
    /// Where pushes for this connection go (its subscriptions hold a copy).
    pub outbox: Outbox,
    /// Channels, patterns and shard channels subscribed to: above zero, a RESP2
    /// connection is in subscribed mode.
    pub subscriptions: usize,
    /// CLIENT REPLY: whether replies are written.
    pub replies: Replies,
    /// The current batch's calls per command, added to the server's counts once per
    /// batch (`Stats::add_tallies`): per-command shared counters cost cache-line traffic
    /// between cores on every request.
    pub tallies: Vec<Tally>,
    /// Set when the last command blocked (BLPOP and kin): `Some(deadline)` (`None` inside:
    /// no timeout). The connection reads no further request until a push or the deadline
    /// ends the wait.
    pub blocked: Option<Option<std::time::Instant>>,
    /// The command the connection is blocked in (its failure is counted when it ends).
    pub blocked_by: Option<&'static Spec>,
    /// The server was over `maxmemory` when this batch began (checked once per batch):
    /// the next command makes room first, and one that needs memory is refused when no
    /// room can be made (`crate::memory`).
    pub over_memory: bool,
    /// CLIENT TRACKING: how this connection tracks, when it does (`crate::tracking`).
    pub tracking: Option<crate::tracking::Mode>,
    /// CLIENT CACHING YES/NO was given: it holds for the next command (or the next
    /// transaction), then lapses.
    pub caching: bool,
    /// Set by every CLIENT subcommand: CLIENT CACHING's choice outlives the command that
    /// follows it only when that command is another CLIENT one (Redis' rule).
    pub caching_kept: bool,
    /// How the current batch passed the script gate (set by the connection per batch).
    pub gate: Pass,
    /// The gate closed by this batch's first script, until the batch ends
    /// (`scripts::hold_gate`).
    pub gate_held: Option<crate::gate::Closed>,
    /// The turn to close the gate, from the time the connection was given it until its
    /// batch ends.
    pub turn: Option<crate::gate::Turn>,
    /// Set by a script command that could not run yet (another connection has the turn):
    /// the request is left unread, and the connection waits as said before sending it
    /// again.
    pub deferred: Option<crate::gate::Wait>,
    /// Set by a script command whose error reply was counted in the error statistics
    /// already (a command of the script got it first, as Redis counts it once).
    pub error_counted: bool,
}

/// How a batch passed the script gate (`crate::gate`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pass {
    /// Inside: commands run.
    Reader,
    /// A script holds the gate past `busy-reply-threshold`: commands the table lets
    /// through run, the rest are answered with this `-BUSY` text.
    Busy(&'static str),
}

/// One command's calls in a batch.
#[derive(Debug, Clone, Copy)]
pub struct Tally {
    /// The command's place in `table::COMMANDS`.
    pub command: usize,
    pub calls: u64,
    pub failed: u64,
    pub rejected: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ran {
    Ok,
    Failed,
    Rejected,
}

/// CLIENT REPLY's modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Replies {
    On,
    Off,
    /// The next command's reply is dropped (set by CLIENT REPLY SKIP, whose own reply is
    /// dropped too).
    Skip,
}

/// A transaction being queued.
#[derive(Default)]
pub struct Multi {
    pub queued: Vec<Queued>,
    pub failed: bool,
}

/// A command MULTI queued: its entry, and its arguments (the name included) copied out of
/// the read buffer.
pub struct Queued {
    pub spec: &'static Spec,
    pub args: Vec<Vec<u8>>,
}

impl Session {
    pub fn new(state: &ServerState, id: u64, outbox: Outbox) -> Session {
        Session {
            id,
            protocol: Protocol::Resp2,
            keyspace: state.db().keyspaces().get_or_create("0"),
            keyspace_name: "0".into(),
            authenticated: state.config.password.is_none(),
            closing: false,
            multi: None,
            errors_json: false,
            acks: Acks::new(),
            outbox,
            subscriptions: 0,
            replies: Replies::On,
            tallies: Vec::new(),
            blocked: None,
            blocked_by: None,
            over_memory: false,
            tracking: None,
            caching: false,
            caching_kept: false,
            gate: Pass::Reader,
            gate_held: None,
            turn: None,
            deferred: None,
            error_counted: false,
        }
    }

    fn tally(&mut self, spec: &'static Spec, ran: Ran) {
        let command = table::index_of(spec);
        let tally = match self.tallies.iter_mut().find(|t| t.command == command) {
            Some(tally) => tally,
            None => {
                self.tallies.push(Tally { command, calls: 0, failed: 0, rejected: 0 });
                self.tallies.last_mut().expect("just pushed")
            }
        };
        match ran {
            Ran::Ok => tally.calls += 1,
            Ran::Failed => {
                tally.calls += 1;
                tally.failed += 1;
            }
            Ran::Rejected => tally.rejected += 1,
        }
    }
}

/// Runs one request (`args[0]` is the command name) and writes its reply to `out`. The
/// caller counts and times requests, once per batch.
pub fn execute(state: &Arc<ServerState>, session: &mut Session, args: &[&[u8]], out: &mut Vec<u8>) {
    let start = out.len();
    let replies = session.replies;
    // Invalidations this command causes for this very connection wait for its reply.
    let _running = state.tracking.running(session.id);
    let mut reply = Reply { out, protocol: session.protocol };
    let dispatched = dispatch(state, session, args, &mut reply);
    // What the command changed is invalidated in the order it names its keys.
    let spec = match &dispatched {
        Ok(spec) => Some(*spec),
        Err(failure) => failure.spec,
    };
    state.tracking.settle(|| spec.into_iter().flat_map(|spec| spec.key_args(args)));
    let pushes = match dispatched {
        // Not run: the request is sent again once the gate opens.
        Ok(_) if session.deferred.is_some() => {
            out.truncate(start);
            return;
        }
        Ok(spec) => {
            session.tally(spec, Ran::Ok);
            session.blocked_by = session.blocked.is_some().then_some(spec);
            spec.subscribed == Subscribed::Pushes
        }
        Err(Failure { spec, error: CmdError(message), rejected }) => {
            reply.error(&message);
            if !std::mem::take(&mut session.error_counted) {
                state.stats.count_error(&message);
            }
            if let Some(spec) = spec {
                session.tally(spec, if rejected { Ran::Rejected } else { Ran::Failed });
            }
            false
        }
    };
    // CLIENT REPLY: OFF (or SKIP) set by this command silences its own reply too; SKIP
    // set before silences this one and ends. Subscription confirmations are pushes,
    // written whatever the mode.
    let silent = match replies {
        Replies::Skip => {
            if session.replies == Replies::Skip {
                session.replies = Replies::On;
            }
            true
        }
        _ => session.replies != Replies::On,
    };
    if silent && !pushes {
        out.truncate(start);
    }
    // Pushes are written whatever CLIENT REPLY says.
    write_pending(state, session, out);
    if !std::mem::take(&mut session.caching_kept) && session.multi.is_none() {
        session.caching = false;
    }
}

/// Writes the invalidations waiting for this connection's running command.
fn write_pending(state: &ServerState, session: &Session, out: &mut Vec<u8>) {
    for push in state.tracking.take_pending() {
        pubsub::write_push(&push, session.protocol, session.subscriptions > 0, out);
    }
}

/// Client-side caching: a read registers its keys before it runs (`crate::tracking`).
fn remember_reads(state: &ServerState, session: &Session, spec: &Spec, args: &[&[u8]]) {
    if !spec.write && matches!(spec.handler, Handler::Kv(_)) {
        remember_keys(state, session, spec.key_args(args));
    }
}

/// Registers `keys` as read by the connection, when it tracks them.
fn remember_keys<'k>(state: &ServerState, session: &Session, keys: impl IntoIterator<Item = &'k [u8]>) {
    if let Some(mode) = session.tracking
        && mode.remembers(session.caching)
    {
        state.tracking.remember(session.id, keys.into_iter());
    }
}

/// Why a request was answered with an error.
struct Failure {
    /// The command, when the name was known.
    spec: Option<&'static Spec>,
    error: CmdError,
    /// Refused before it ran (arity, authentication, subscribed mode, MULTI), which
    /// INFO commandstats counts apart from a command that ran and failed.
    rejected: bool,
}

/// Runs the request; the entry that ran it, or why it failed.
fn dispatch(
    state: &Arc<ServerState>,
    session: &mut Session,
    args: &[&[u8]],
    r: &mut Reply<'_>,
) -> Result<&'static Spec, Failure> {
    let Some(spec) = table::lookup(args[0]) else {
        if let Some(multi) = &mut session.multi {
            multi.failed = true;
        }
        return Err(Failure { spec: None, error: unknown_command(args), rejected: true });
    };
    let reject = |error: String| Err(Failure { spec: Some(spec), error: CmdError(error), rejected: true });
    if !spec.arity_ok(args.len()) {
        if let Some(multi) = &mut session.multi {
            multi.failed = true;
        }
        return reject(spec.arity_error());
    }
    if !session.authenticated && !spec.before_auth {
        return reject("NOAUTH Authentication required.".into());
    }
    if session.subscriptions > 0 && session.protocol == Protocol::Resp2 && spec.subscribed == Subscribed::Refused {
        return reject(format!(
            "ERR Can't execute '{}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context",
            spec.name.to_ascii_lowercase()
        ));
    }
    if let Pass::Busy(busy) = session.gate
        && spec.busy != Busy::Runs
    {
        // As Redis: a transaction that met -BUSY fails, and EXEC met by it ends.
        if let Some(multi) = &mut session.multi {
            multi.failed = true;
        }
        if spec.busy == Busy::EndsTransaction && session.multi.take().is_some() {
            state.watches.unwatch(session.id);
            return reject(format!("EXECABORT Transaction discarded because of: {busy}"));
        }
        return reject(busy.into());
    }
    if session.over_memory {
        // As Redis: every command first makes room; one that needs memory is refused when
        // none can be made, and inside MULTI so is everything but EXEC, DISCARD and kin
        // (queueing takes memory too).
        let room = crate::memory::Memory::make_room(state, Durability::Collect(&session.acks));
        session.over_memory = !room;
        // Keys evicted for this command are announced before its reply, as Redis does.
        write_pending(state, session, r.out);
        let queues = session.multi.is_some() && spec.in_multi != InMulti::RunAtOnce;
        if !room && (spec.denyoom || queues) {
            if let Some(multi) = &mut session.multi {
                multi.failed = true;
            }
            return reject(crate::memory::OOM.into());
        }
    }
    if let Some(multi) = &mut session.multi {
        match spec.in_multi {
            InMulti::RunAtOnce => {}
            InMulti::Queue | InMulti::QueueThenRefuse => {
                multi.queued.push(Queued { spec, args: args.iter().map(|a| a.to_vec()).collect() });
                r.simple("QUEUED");
                return Ok(spec);
            }
            InMulti::Refuse => {
                multi.failed = true;
                return reject(format!("ERR Command not allowed inside a transaction: {}", spec.name));
            }
        }
    }
    remember_reads(state, session, spec, args);
    let across = spec.across.and_then(|across| across.direct).and_then(|run| run(state, session, args, r));
    let ran = if let Some(ran) = across {
        ran
    } else {
        match spec.handler {
            Handler::Kv(kv) => (kv.direct)(&session.keyspace.writes(Durability::Collect(&session.acks)), args, r),
            Handler::AllKeyspaces(run) => run(state, &session.acks, args, r),
            Handler::Session(run) => run(state, session, args, r),
            Handler::Blocking(parse) => block(state, session, parse(args), r),
            Handler::Script(command) => scripts::call(state, session, command, args, r),
        }
    };
    if session.multi.is_none() {
        wake(state, &session.keyspace_name, spec, args);
    }
    ran.map(|()| spec).map_err(|error| Failure { spec: Some(spec), error, rejected: false })
}

/// What EXEC's commands that reach other keyspaces run on: the selected keyspace's block
/// and those of the others the queue names, all locked for the whole transaction.
pub struct Blocks<'b, 't> {
    pub current: (&'b str, &'b KeyspaceTxn<'t>),
    pub others: (&'b [String], &'b [KeyspaceTxn<'t>]),
}

impl<'t> Blocks<'_, 't> {
    /// The block of keyspace `name` (EXEC locked every keyspace its queue names).
    pub fn named(&self, keyspace: &str) -> Option<&KeyspaceTxn<'t>> {
        if keyspace == self.current.0 {
            return Some(self.current.1);
        }
        let (names, blocks) = self.others;
        names.iter().position(|other| other == keyspace).map(|at| &blocks[at])
    }
}

/// Runs `spec` on the locked blocks (the selected keyspace's is `blocks.current`): a
/// command EXEC runs, or one a script calls (which has refused what scripts may not call
/// first). `None` when the command cannot run there: it needs the session's keyspace
/// unlocked (INFO, FLUSHALL, COMMAND...). A blocking command never waits there: null when
/// there is nothing.
fn run_in_block(
    state: &Arc<ServerState>,
    session: &mut Session,
    spec: &'static Spec,
    args: &[&[u8]],
    blocks: &Blocks<'_, '_>,
    r: &mut Reply<'_>,
) -> Option<CmdResult> {
    let txn = blocks.current.1;
    if let Some(result) = spec.across.and_then(|across| (across.in_txn)(state, blocks, args, r)) {
        return Some(result);
    }
    Some(match (spec.in_multi, spec.handler) {
        (InMulti::Queue, Handler::Kv(kv)) => (kv.in_txn)(txn, args, r),
        (InMulti::Queue, Handler::Session(run)) => run(state, session, args, r),
        (InMulti::Queue, Handler::Blocking(parse)) => parse(args).and_then(|mut request| {
            if !crate::blocking::attempt(txn, &mut request, false, r)? {
                r.null_array();
            }
            Ok(())
        }),
        (InMulti::Queue, Handler::Script(command)) => scripts::call_in_block(state, session, command, args, blocks, r),
        _ => return None,
    })
}

/// Tries again the blocked clients `spec` may have served, after it ran.
fn wake(state: &ServerState, keyspace: &str, spec: &Spec, args: &[&[u8]]) {
    match spec.wakes {
        Wakes::Nobody => {}
        Wakes::Keys => state.blocking.wake(keyspace, spec.key_args(args)),
        Wakes::Keyspace => state.blocking.wake_everyone(Some(keyspace)),
        Wakes::Everyone => state.blocking.wake_everyone(None),
    }
}

/// A blocking command outside MULTI: pops at once when it can, else blocks the
/// connection (`Session::blocked`) until a push serves it or its timeout passes.
fn block(
    state: &ServerState,
    session: &mut Session,
    request: Result<BlockRequest, CmdError>,
    r: &mut Reply<'_>,
) -> CmdResult {
    let mut request = request?;
    let kv = session.keyspace.writes(Durability::Collect(&session.acks));
    if crate::blocking::attempt(&kv, &mut request, false, r)? {
        return Ok(());
    }
    if !request.waits() {
        r.null_array();
        return Ok(());
    }
    let deadline = request.timeout.map(|timeout| std::time::Instant::now() + timeout);
    let blocked = state.blocking.block(
        session.id,
        &session.keyspace,
        &session.keyspace_name,
        request,
        &session.outbox,
        &session.acks,
        r,
    )?;
    if blocked {
        session.blocked = Some(deadline);
    }
    Ok(())
}

/// Applies an operation-layer request (`DOC.*`, SAVE, BGSAVE) on this thread; one that
/// blocks (`Request::blocks`) first hands the thread's other connections to another
/// thread, so they go on while it runs.
/// Its writes note their log records into `acks` (the batch's).
pub(crate) fn apply(state: &ServerState, acks: &Acks, request: Request) -> Result<Answer, Refusal> {
    if request.blocks() {
        tokio::task::block_in_place(|| state.engine.apply_into(request, acks))
    } else {
        state.engine.apply_into(request, acks)
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

fn multi(_: &Arc<ServerState>, session: &mut Session, _: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    if session.multi.is_some() {
        return Err(CmdError("ERR MULTI calls can not be nested".into()));
    }
    session.multi = Some(Multi::default());
    r.ok();
    Ok(())
}

fn discard(state: &Arc<ServerState>, session: &mut Session, _: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    state.watches.unwatch(session.id);
    match session.multi.take() {
        Some(_) => {
            r.ok();
            Ok(())
        }
        None => Err(CmdError("ERR DISCARD without MULTI".into())),
    }
}

/// WATCH key [key ...]: EXEC will not run the transaction if one of them changes first.
fn watch(state: &Arc<ServerState>, session: &mut Session, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    if session.multi.is_some() {
        return Err(CmdError("ERR WATCH inside MULTI is not allowed".into()));
    }
    state.watches.watch(session.id, &session.keyspace_name, &*session.keyspace, &a[1..]);
    r.ok();
    Ok(())
}

/// UNWATCH: forgets the connection's watched keys.
fn unwatch(state: &Arc<ServerState>, session: &mut Session, _: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    state.watches.unwatch(session.id);
    r.ok();
    Ok(())
}

/// EXEC: runs the queued commands with every shard of the keyspace locked, so no other
/// client sees a state between them, and as one log record; nothing at all (a null
/// answer) when a watched key changed since WATCH.
fn exec(state: &Arc<ServerState>, session: &mut Session, _: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    // A queued script makes the transaction hold the script gate, as the script alone
    // would: no other batch runs meanwhile, and SCRIPT KILL and -BUSY work inside it.
    let scripted = session.multi.as_ref().is_some_and(|multi| {
        !multi.failed && multi.queued.iter().any(|q| matches!(q.spec.handler, Handler::Script(_)))
    });
    if scripted && !scripts::hold_gate(state, session) {
        return Ok(());
    }
    let Some(multi) = session.multi.take() else {
        return Err(CmdError("ERR EXEC without MULTI".into()));
    };
    if multi.failed {
        state.watches.unwatch(session.id);
        return Err(CmdError("EXECABORT Transaction discarded because of previous errors.".into()));
    }
    if session.over_memory && multi.queued.iter().any(|queued| queued.spec.denyoom) {
        state.watches.unwatch(session.id);
        return Err(CmdError(format!("EXECABORT Transaction discarded because of: {}", crate::memory::OOM)));
    }
    // FLUSHALL reaches other keyspaces, which the block does not lock: refuse it here
    // rather than break atomicity.
    if let Some(queued) = multi.queued.iter().find(|q| matches!(q.spec.handler, Handler::AllKeyspaces(_))) {
        return Err(CmdError(format!("ERR {} is not allowed inside MULTI; use FLUSHDB", queued.spec.name)));
    }
    for queued in &multi.queued {
        let args: Vec<&[u8]> = queued.args.iter().map(Vec::as_slice).collect();
        remember_reads(state, session, queued.spec, &args);
    }
    let protocol = r.protocol;
    // Keyspaces the queue reaches besides the selected one (MOVE, SWAPDB, COPY ... DB):
    // locked with it, all in the engine's order, as one block.
    let mut others: Vec<String> = Vec::new();
    for queued in &multi.queued {
        let Some(across) = queued.spec.across else { continue };
        let args: Vec<&[u8]> = queued.args.iter().map(Vec::as_slice).collect();
        for db in (across.databases)(&args) {
            if let Ok(name) = keys::database(state, db)
                && name != session.keyspace_name
                && !others.contains(&name)
            {
                others.push(name);
            }
        }
    }
    // The block borrows the keyspace and the batch's collector while the queued
    // connection commands borrow the session, so the block holds its own of each (the
    // collector goes back to the session after the block).
    let keyspace = Arc::clone(&session.keyspace);
    let acks = std::mem::take(&mut session.acks);
    let (id, keyspace_name) = (session.id, session.keyspace_name.clone());
    let run = |txn: &KeyspaceTxn<'_>, blocks: &Blocks<'_, '_>, session: &mut Session| {
        // With every shard locked, no write comes between this check and the queue.
        if !state.watches.still_clean(id, txn, &keyspace_name) {
            return None;
        }
        let mut out = Vec::new();
        for queued in &multi.queued {
            let args: Vec<&[u8]> = queued.args.iter().map(Vec::as_slice).collect();
            let mut reply = Reply { out: &mut out, protocol };
            let result = run_in_block(state, session, queued.spec, &args, blocks, &mut reply)
                .unwrap_or_else(|| Err(CmdError(format!("ERR {} cannot run inside MULTI", queued.spec.name))));
            if let Err(CmdError(message)) = result {
                reply.error(&message);
                // Counted in INFO errorstats as Redis counts a queued command's error (once:
                // a script's error its own command raised was counted already).
                if !std::mem::take(&mut session.error_counted) {
                    state.stats.count_error(&message);
                }
            }
        }
        Some(out)
    };
    let replies = if others.is_empty() {
        keyspace
            .writes(Durability::Collect(&acks))
            .atomic_all(|txn| run(txn, &Blocks { current: (&keyspace_name, txn), others: (&[], &[]) }, session))
    } else {
        let spaces: Vec<Arc<Keyspace>> = others.iter().map(|name| state.db().keyspaces().get_or_create(name)).collect();
        let refs: Vec<&Keyspace> = spaces.iter().map(|space| &**space).collect();
        keyspace.atomic_all_across(&refs, Durability::Collect(&acks), |txn, theirs| {
            run(txn, &Blocks { current: (&keyspace_name, txn), others: (&others, theirs) }, session)
        })
    };
    session.acks = acks;
    let Some(replies) = replies? else {
        // A watched key was touched: the transaction does not run.
        r.null_array();
        return Ok(());
    };
    for queued in multi.queued.iter().filter(|queued| queued.spec.wakes != Wakes::Nobody) {
        let args: Vec<&[u8]> = queued.args.iter().map(Vec::as_slice).collect();
        wake(state, &session.keyspace_name, queued.spec, &args);
    }
    // What a MOVE, COPY or SWAPDB brought into another keyspace may serve its blocked
    // clients (a SWAPDB, the selected keyspace's too).
    if !others.is_empty() {
        state.blocking.wake_everyone(Some(&session.keyspace_name));
        for name in &others {
            state.blocking.wake_everyone(Some(name));
        }
    }
    r.array(multi.queued.len());
    r.out.extend_from_slice(&replies);
    Ok(())
}
