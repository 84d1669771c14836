//! The command table: every command the RESP listener knows, with its handler, arity,
//! flags, key positions and documentation.
//!
//! Owns: looking a command up by name (ASCII case-insensitive, no allocation), which
//! yields the function that runs it; the arity check with Redis' error text; how a command
//! behaves before AUTH and inside MULTI; and what COMMAND COUNT/INFO/DOCS report. Never:
//! execute anything (the dispatcher in `commands` calls the handler), or let a command
//! name decide anything outside this table: a group module has one function per command
//! and never matches on a name, so a command's behaviour is found from its entry alone.

use super::args::{self, CmdError, CmdResult};
use super::scripts::{By, ScriptCommand};
use super::{
    Session, config, documents, geo, hashes, hll, keys, lists, pubsub, scripts, server, sets, streams, strings, zsets,
};
use crate::blocking::{self, BlockRequest};
use crate::resp::reply::Reply;
use crate::state::ServerState;
use hotset_core::Acks;
use hotset_core::kv::{KeyspaceTxn, KeyspaceWrites};
use std::sync::Arc;

/// A key-value command, instantiated for both places it runs: a keyspace, and the locked
/// block of a keyspace inside EXEC. The group modules write each command once, generic
/// over `KvOps`; a function pointer must name one type, so the table keeps both.
#[derive(Debug, Clone, Copy)]
pub struct KvHandler {
    pub direct: fn(&KeyspaceWrites<'_>, &[&[u8]], &mut Reply<'_>) -> CmdResult,
    pub in_txn: fn(&KeyspaceTxn<'_>, &[&[u8]], &mut Reply<'_>) -> CmdResult,
}

/// A command that runs with the connection's session: connection and server commands,
/// MULTI/EXEC/DISCARD, and `DOC.*`.
pub type SessionHandler = fn(&Arc<ServerState>, &mut Session, &[&[u8]], &mut Reply<'_>) -> CmdResult;

/// What runs a command.
#[derive(Debug, Clone, Copy)]
pub enum Handler {
    /// Key-value command on the selected keyspace.
    Kv(KvHandler),
    /// Key-value command that reaches every keyspace (FLUSHALL). It has no form for EXEC:
    /// the locked block covers one keyspace, so EXEC refuses a transaction holding one.
    AllKeyspaces(fn(&ServerState, &Acks, &[&[u8]], &mut Reply<'_>) -> CmdResult),
    /// Connection, server or document command.
    Session(SessionHandler),
    /// A blocking list command, by its parser: it pops at once when it can (inside EXEC
    /// it never waits, and answers null when there is nothing), else the connection
    /// blocks (`crate::blocking`).
    Blocking(fn(&[&[u8]]) -> Result<BlockRequest, CmdError>),
    /// EVAL, EVALSHA, FCALL and their `_RO` forms (`commands::scripts`): outside MULTI the
    /// script runs with the gate closed (`crate::gate`) on the selected keyspace's locked
    /// block; inside EXEC on EXEC's block (EXEC closes the gate for a queue holding one).
    Script(ScriptCommand),
}

/// What a command does when sent between MULTI and EXEC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InMulti {
    /// Queued, and run by EXEC: key-value commands on the locked block, and connection
    /// commands that touch neither the session nor any keyspace (PING, ECHO, TIME).
    Queue,
    /// Queued, and answered by EXEC with `ERR <name> cannot run inside MULTI`: INFO and
    /// LASTSAVE read every keyspace or the store, and the block holds the selected
    /// keyspace's locks.
    QueueThenRefuse,
    /// Runs at once, MULTI or not: MULTI, EXEC, DISCARD, QUIT, RESET.
    RunAtOnce,
    /// Refused while queueing, which fails the transaction: commands that change the
    /// connection, and `DOC.*` (a transaction's lock covers one keyspace).
    Refuse,
}

/// How a command behaves while a RESP2 connection is subscribed to a channel (RESP3
/// connections run every command then).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subscribed {
    /// Refused with Redis' "only (P|S)SUBSCRIBE ... are allowed in this context".
    Refused,
    /// Runs: PING, QUIT, RESET.
    Allowed,
    /// Runs, and its replies are pushes: written even under CLIENT REPLY OFF or SKIP
    /// (the (P|S)(UN)SUBSCRIBE family).
    Pushes,
}

/// How a command behaves while a script keeps the server busy (it has held the gate past
/// `busy-reply-threshold`): Redis' `allow-busy` flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Busy {
    /// Answered `-BUSY`; inside MULTI the transaction fails.
    Refused,
    /// Runs without entering the gate, so it must touch no keyspace: SCRIPT and FUNCTION
    /// (their handlers run KILL and STATS, and answer `-BUSY` to the rest), SHUTDOWN, AUTH,
    /// HELLO, QUIT, RESET, MULTI, DISCARD, UNWATCH. WATCH, which Redis lets through,
    /// reads its keys and is refused here.
    Runs,
    /// Refused, and inside MULTI the transaction is discarded with `-EXECABORT` naming the
    /// BUSY error: EXEC.
    EndsTransaction,
}

/// Where a command's keys are, as COMMAND INFO reports them (Redis' first key, last key,
/// step; `-1` as last means the final argument).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyPositions {
    pub first: i64,
    pub last: i64,
    pub step: i64,
}

/// One command.
#[derive(Debug)]
pub struct Spec {
    /// Upper-case name.
    pub name: &'static str,
    /// Redis convention: `n` exactly n arguments (name included), `-n` at least n.
    pub arity: i32,
    pub handler: Handler,
    /// Whether it writes (COMMAND INFO flags; `write` or `readonly`).
    pub write: bool,
    /// Whether it may add to memory (Redis' `denyoom`): over `maxmemory`, when eviction
    /// cannot make room, it is refused with `-OOM` (other commands go on).
    pub denyoom: bool,
    pub in_multi: InMulti,
    /// Whether a connection that has not authenticated may send it.
    pub before_auth: bool,
    pub keys: KeyPositions,
    /// What it does on a RESP2 connection in subscribed mode.
    pub subscribed: Subscribed,
    /// Which blocked clients it may serve (it pushed onto a list, added to a stream, or
    /// deleted a key an XREADGROUP waits on): after it ran, they are tried again.
    pub wakes: Wakes,
    /// For a command whose keys move (SORT's STORE, numkeys forms): the positions of its
    /// keys in a request, which `keys` cannot say (COMMAND GETKEYS, waking).
    pub find_keys: Option<FindKeys>,
    /// For a command that reaches other keyspaces (MOVE, SWAPDB, COPY ... DB): how.
    pub across: Option<Across>,
    /// Refused when a script calls it (Redis' `noscript`: transactions, blocking pops,
    /// connection state, scripting itself; and `DOC.*`).
    pub noscript: bool,
    /// What it does while a script keeps the server busy.
    pub busy: Busy,
    /// Redis command group, for COMMAND DOCS.
    pub group: &'static str,
    pub summary: &'static str,
}

/// Which blocked clients a command may serve.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wakes {
    /// None.
    Nobody,
    /// Those blocked on its keys.
    Keys,
    /// Every one blocked in the selected keyspace.
    Keyspace,
    /// Every one.
    Everyone,
}

/// The positions of the keys in a request of a command whose keys move.
pub type FindKeys = fn(&[&[u8]]) -> Vec<usize>;

/// How a command that reaches other keyspaces runs.
#[derive(Debug, Clone, Copy)]
pub struct Across {
    /// Outside MULTI, before the command's handler: answers a form naming another
    /// keyspace itself (`Some`), or leaves the request to the handler (`None`). MOVE and
    /// SWAPDB have none (their handler reaches the keyspaces).
    pub direct: Option<AcrossHandler>,
    /// The database arguments of a request: EXEC locks their keyspaces with the selected
    /// one, all in the engine's order, and logs the transaction as one record.
    pub databases: for<'a> fn(&[&'a [u8]]) -> Vec<&'a [u8]>,
    /// Inside EXEC, on those blocks: answers the form reaching other keyspaces (`Some`),
    /// or leaves the request to the command's handler (`None`).
    pub in_txn: AcrossInTxn,
}

/// See `Across::direct`.
pub type AcrossHandler = fn(&Arc<ServerState>, &mut Session, &[&[u8]], &mut Reply<'_>) -> Option<CmdResult>;

/// See `Across::in_txn`.
pub type AcrossInTxn = fn(&ServerState, &super::Blocks<'_, '_>, &[&[u8]], &mut Reply<'_>) -> Option<CmdResult>;

const NO_KEYS: KeyPositions = KeyPositions { first: 0, last: 0, step: 0 };

/// A key-value command's entry from one function generic over `KvOps`. The EXEC form goes
/// through a closure because `KeyspaceTxn<'_>` carries a lifetime: the generic function
/// instantiated for one lifetime is no pointer for every lifetime, the closure is.
macro_rules! kv {
    ($name:literal, $arity:literal, $write:literal, $group:literal, $summary:literal, $handler:path) => {
        Spec {
            name: $name,
            arity: $arity,
            handler: Handler::Kv(KvHandler {
                direct: |kv: &KeyspaceWrites<'_>, a: &[&[u8]], r: &mut Reply<'_>| $handler(kv, a, r),
                in_txn: |kv: &KeyspaceTxn<'_>, a: &[&[u8]], r: &mut Reply<'_>| $handler(kv, a, r),
            }),
            write: $write,
            denyoom: false,
            in_multi: InMulti::Queue,
            before_auth: false,
            keys: KeyPositions { first: 1, last: 1, step: 1 },
            subscribed: Subscribed::Refused,
            wakes: Wakes::Nobody,
            find_keys: None,
            across: None,
            noscript: false,
            busy: Busy::Refused,
            group: $group,
            summary: $summary,
        }
    };
}

const fn all_keyspaces(
    name: &'static str,
    arity: i32,
    group: &'static str,
    summary: &'static str,
    handler: fn(&ServerState, &Acks, &[&[u8]], &mut Reply<'_>) -> CmdResult,
) -> Spec {
    Spec {
        name,
        arity,
        handler: Handler::AllKeyspaces(handler),
        write: true,
        denyoom: false,
        in_multi: InMulti::Queue,
        before_auth: false,
        keys: NO_KEYS,
        subscribed: Subscribed::Refused,
        wakes: Wakes::Nobody,
        find_keys: None,
        across: None,
        noscript: false,
        busy: Busy::Refused,
        group,
        summary,
    }
}

const fn conn(name: &'static str, arity: i32, handler: SessionHandler, summary: &'static str) -> Spec {
    Spec {
        name,
        arity,
        handler: Handler::Session(handler),
        write: false,
        denyoom: false,
        in_multi: InMulti::Refuse,
        before_auth: false,
        keys: NO_KEYS,
        subscribed: Subscribed::Refused,
        wakes: Wakes::Nobody,
        find_keys: None,
        across: None,
        noscript: false,
        busy: Busy::Refused,
        group: "connection",
        summary,
    }
}

/// A `DOC.*` command.
const fn doc(name: &'static str, arity: i32, write: bool, handler: SessionHandler, summary: &'static str) -> Spec {
    Spec {
        name,
        arity,
        handler: Handler::Session(handler),
        write,
        denyoom: false,
        in_multi: InMulti::Refuse,
        before_auth: false,
        keys: NO_KEYS,
        subscribed: Subscribed::Refused,
        wakes: Wakes::Nobody,
        find_keys: None,
        across: None,
        noscript: true,
        busy: Busy::Refused,
        group: "document",
        summary,
    }
}

/// A blocking list command (see `Handler::Blocking`).
const fn blocking(
    name: &'static str,
    arity: i32,
    parse: fn(&[&[u8]]) -> Result<BlockRequest, CmdError>,
    summary: &'static str,
) -> Spec {
    Spec {
        name,
        arity,
        handler: Handler::Blocking(parse),
        write: true,
        denyoom: false,
        in_multi: InMulti::Queue,
        before_auth: false,
        keys: KeyPositions { first: 1, last: 1, step: 1 },
        subscribed: Subscribed::Refused,
        wakes: Wakes::Nobody,
        find_keys: None,
        across: None,
        noscript: false,
        busy: Busy::Refused,
        group: "list",
        summary,
    }
}

/// A script command (see `Handler::Script`): its keys follow numkeys, it runs as a
/// transaction runs (queued inside MULTI), and it may serve blocked clients.
const fn script(name: &'static str, by: By, read_only: bool, summary: &'static str) -> Spec {
    Spec {
        name,
        arity: -3,
        handler: Handler::Script(ScriptCommand { by, read_only }),
        write: !read_only,
        denyoom: false,
        in_multi: InMulti::Queue,
        before_auth: false,
        keys: NO_KEYS,
        subscribed: Subscribed::Refused,
        wakes: Wakes::Keyspace,
        find_keys: Some(keys_of_script),
        across: None,
        noscript: true,
        busy: Busy::Refused,
        group: "scripting",
        summary,
    }
}

impl Spec {
    const fn keys(self, first: i64, last: i64, step: i64) -> Spec {
        Spec { keys: KeyPositions { first, last, step }, ..self }
    }

    const fn keyless(self) -> Spec {
        Spec { keys: NO_KEYS, ..self }
    }

    const fn queue(self) -> Spec {
        Spec { in_multi: InMulti::Queue, ..self }
    }

    const fn queue_then_refuse(self) -> Spec {
        Spec { in_multi: InMulti::QueueThenRefuse, ..self }
    }

    const fn run_at_once(self) -> Spec {
        Spec { in_multi: InMulti::RunAtOnce, ..self }
    }

    const fn before_auth(self) -> Spec {
        Spec { before_auth: true, ..self }
    }

    const fn in_subscribed_mode(self) -> Spec {
        Spec { subscribed: Subscribed::Allowed, ..self }
    }

    const fn pushes(self) -> Spec {
        Spec { subscribed: Subscribed::Pushes, ..self }
    }

    const fn denyoom(self) -> Spec {
        Spec { denyoom: true, ..self }
    }

    const fn wakes(self) -> Spec {
        Spec { wakes: Wakes::Keys, ..self }
    }

    /// Wakes every client blocked in the keyspace (FLUSHDB), or in any (FLUSHALL).
    const fn wakes_all(self, scope: Wakes) -> Spec {
        Spec { wakes: scope, ..self }
    }

    /// Refused from scripts (Redis' `noscript`).
    const fn noscript(self) -> Spec {
        Spec { noscript: true, ..self }
    }

    /// Runs while a script keeps the server busy (Redis' `allow-busy`).
    const fn while_busy(self) -> Spec {
        Spec { busy: Busy::Runs, ..self }
    }

    const fn in_group(self, group: &'static str) -> Spec {
        Spec { group, ..self }
    }

    /// A command reaching other keyspaces (`Spec::across`).
    const fn across(self, across: Across) -> Spec {
        Spec { across: Some(across), ..self }
    }

    /// A command whose keys move: `find` gives their positions (`keys` says none).
    const fn movable(self, find: FindKeys) -> Spec {
        Spec { find_keys: Some(find), keys: NO_KEYS, ..self }
    }

    /// The arguments that are keys, by `keys`, or by `find_keys` for a command whose keys
    /// move (which alone allocates).
    pub fn key_args<'a>(&self, args: &'a [&'a [u8]]) -> impl Iterator<Item = &'a [u8]> + 'a {
        let KeyPositions { first, last, step } = self.keys;
        let last = if last < 0 { args.len() as i64 + last } else { last };
        let (first, last, step) = if first > 0 && step > 0 { (first, last, step) } else { (1, 0, 1) };
        let moved = self.find_keys.map(|find| find(args)).unwrap_or_default();
        let fixed = (first..=last).step_by(step as usize).map(|at| at as usize);
        fixed.chain(moved).filter_map(move |at| args.get(at).copied())
    }
}

/// The keys of `numkeys key [key ...]` starting at `at` (ZUNION, ZMPOP, SINTERCARD...),
/// preceded by `before` (a STORE form's destination at 1).
fn numkeys_at(args: &[&[u8]], at: usize, before: &[usize]) -> Vec<usize> {
    let count = args.get(at).and_then(|n| args::int(n).ok()).and_then(|n| usize::try_from(n).ok()).unwrap_or(0);
    let end = (at + 1 + count).min(args.len());
    before.iter().copied().chain(at + 1..end).collect()
}

/// Keys of ZUNION, ZINTER, ZDIFF, ZINTERCARD, SINTERCARD, LMPOP, ZMPOP: numkeys at 1.
fn keys_after_numkeys(args: &[&[u8]]) -> Vec<usize> {
    numkeys_at(args, 1, &[])
}

/// Keys of EVAL, EVALSHA, FCALL and their `_RO` forms: numkeys at 2.
fn keys_of_script(args: &[&[u8]]) -> Vec<usize> {
    numkeys_at(args, 2, &[])
}

/// Keys of BLMPOP and BZMPOP: the timeout at 1, numkeys at 2.
fn keys_after_timeout(args: &[&[u8]]) -> Vec<usize> {
    numkeys_at(args, 2, &[])
}

/// Keys of ZUNIONSTORE, ZINTERSTORE, ZDIFFSTORE: the destination, then numkeys at 2.
fn keys_of_store(args: &[&[u8]]) -> Vec<usize> {
    numkeys_at(args, 2, &[1])
}

/// Keys of XREAD and XREADGROUP: the first half of what follows STREAMS.
fn keys_of_xread(args: &[&[u8]]) -> Vec<usize> {
    let Some(at) = args.iter().position(|arg| args::is(arg, "STREAMS")) else { return Vec::new() };
    let count = (args.len() - at - 1) / 2;
    (at + 1..at + 1 + count).collect()
}

/// Keys of SORT and SORT_RO: the sorted key and the last STORE's destination (options
/// taking values are skipped over, as Redis does).
fn keys_of_sort(args: &[&[u8]]) -> Vec<usize> {
    let mut keys = vec![1];
    let mut store = None;
    let mut at = 2;
    while at < args.len() {
        let skip = match args[at].to_ascii_uppercase().as_slice() {
            b"LIMIT" => 2,
            b"GET" | b"BY" => 1,
            b"STORE" => {
                store = Some(at + 1).filter(|&dst| dst < args.len());
                1
            }
            _ => 0,
        };
        at += skip + 1;
    }
    keys.extend(store);
    keys
}

/// Every command, sorted by name (the order COMMAND lists them in).
pub static COMMANDS: &[Spec] = &[
    kv!("APPEND", 3, true, "string", "Appends a string to the value of a key.", strings::append).denyoom(),
    conn("AUTH", -2, server::auth, "Authenticates the connection.").before_auth().noscript().while_busy(),
    conn("BGSAVE", -1, server::bgsave, "Takes a snapshot of the database in the background.").noscript(),
    kv!("BITCOUNT", -2, false, "bitmap", "Counts the set bits of a string, or of a range of it.", strings::bitcount),
    kv!("BITFIELD", -2, true, "bitmap", "Reads and writes integer fields of a string.", strings::bitfield).denyoom(),
    kv!("BITFIELD_RO", -2, false, "bitmap", "Reads integer fields of a string.", strings::bitfield_ro),
    kv!("BITOP", -4, true, "bitmap", "Stores a bitwise operation over strings.", strings::bitop)
        .keys(2, -1, 1)
        .denyoom(),
    kv!("BITPOS", -3, false, "bitmap", "The first bit set to 1 or 0 in a string.", strings::bitpos),
    blocking("BLMOVE", 6, blocking::parse_blmove, "LMOVE, waiting for an element when the source is empty.")
        .keys(1, 2, 1)
        .wakes()
        .denyoom()
        .noscript(),
    blocking("BLMPOP", -5, blocking::parse_blmpop, "LMPOP, waiting for an element when every list is empty.")
        .movable(keys_after_timeout),
    blocking("BLPOP", -3, blocking::parse_blpop, "LPOP of the first non-empty list, waiting when all are empty.")
        .keys(1, -2, 1)
        .noscript(),
    blocking("BRPOP", -3, blocking::parse_brpop, "RPOP of the first non-empty list, waiting when all are empty.")
        .keys(1, -2, 1)
        .noscript(),
    blocking(
        "BRPOPLPUSH",
        4,
        blocking::parse_brpoplpush,
        "RPOPLPUSH, waiting for an element when the source is empty.",
    )
    .keys(1, 2, 1)
    .wakes()
    .denyoom()
    .noscript(),
    blocking("BZMPOP", -5, blocking::parse_bzmpop, "ZMPOP, waiting for a member when every sorted set is empty.")
        .movable(keys_after_timeout)
        .in_group("sorted-set"),
    blocking(
        "BZPOPMAX",
        -3,
        blocking::parse_bzpopmax,
        "ZPOPMAX of the first non-empty sorted set, waiting when all are empty.",
    )
    .keys(1, -2, 1)
    .in_group("sorted-set")
    .noscript(),
    blocking(
        "BZPOPMIN",
        -3,
        blocking::parse_bzpopmin,
        "ZPOPMIN of the first non-empty sorted set, waiting when all are empty.",
    )
    .keys(1, -2, 1)
    .in_group("sorted-set")
    .noscript(),
    conn(
        "CLIENT",
        -2,
        server::client,
        "Connection management: SETNAME, GETNAME, ID, INFO, LIST, SETINFO, KILL, REPLY, UNBLOCK.",
    )
    .noscript(),
    conn("COMMAND", -1, server::command, "Information about the commands: COUNT, DOCS, INFO, LIST."),
    // Queued as Redis queues it: EXEC runs it (it touches no keyspace) and a refused SET
    // is that command's error in EXEC's answer.
    conn("CONFIG", -2, config::config, "Redis' runtime parameters: GET, SET, RESETSTAT, REWRITE.").queue().noscript(),
    kv!("COPY", -3, true, "generic", "Copies a key's value and deadline to another key.", keys::copy)
        .across(Across {
            direct: Some(keys::copy_to_keyspace),
            databases: keys::copy_database,
            in_txn: keys::copy_in_txn,
        })
        .keys(1, 2, 1)
        .wakes()
        .denyoom(),
    kv!("DBSIZE", 1, false, "server", "Number of keys in the selected keyspace.", keys::dbsize).keyless(),
    conn("DEBUG", -2, server::debug, "Harmless debugging aids: LOG message, SLEEP seconds.")
        .queue_then_refuse()
        .noscript(),
    kv!("DECR", 2, true, "string", "Decrements the integer value of a key by one.", strings::decr).denyoom(),
    kv!("DECRBY", 3, true, "string", "Decrements the integer value of a key by a number.", strings::decrby).denyoom(),
    // DEL, UNLINK, SET and XGROUP wake too: an XREADGROUP waiting on a key they delete
    // or replace, or on a group XGROUP destroys, is answered with the error.
    kv!("DEL", -2, true, "generic", "Deletes keys.", keys::del).keys(1, -1, 1).wakes(),
    conn("DISCARD", 1, super::discard, "Discards a transaction.").run_at_once().noscript().while_busy(),
    // FCALL of a function with no keys, its return value answered as JSON text
    // (`commands::scripts`): a script command in every other way (the gate, MULTI, BUSY).
    Spec {
        arity: -2,
        find_keys: None,
        group: "document",
        ..script(
            "DOC.CALL",
            By::Procedure,
            false,
            "Calls a function of a loaded library with arguments; answers its return value as JSON.",
        )
    },
    doc("DOC.DEL", 3, true, documents::del_doc, "Deletes a document by primary key; 1 if it existed."),
    doc(
        "DOC.ERRORS",
        -1,
        false,
        documents::errors,
        "Sets the connection's DOC.* error form: TEXT (-ERR message) or JSON (-CODE {json}).",
    ),
    doc(
        "DOC.EXPLAIN",
        -2,
        false,
        documents::explain_query,
        "Runs a JSON DSL query and returns its result with the plan and timings.",
    ),
    doc(
        "DOC.FUNCTIONS",
        1,
        false,
        scripts::functions_json,
        "The Lua function libraries and their functions as JSON (what GET /api/v1/functions answers).",
    ),
    doc(
        "DOC.GET",
        -3,
        false,
        documents::get_doc,
        "A document by primary key (JSON), or null; AFTER source:position... waits for live-sync sources first.",
    ),
    doc("DOC.INDEXADD", 3, true, documents::indexadd, "Adds an index (JSON definition) to a namespace and builds it."),
    doc("DOC.INDEXDROP", 3, true, documents::indexdrop, "Drops an index of a namespace."),
    doc(
        "DOC.INSERT",
        -3,
        true,
        documents::insert_docs,
        "Inserts documents (JSON); fails on an existing key; all or nothing.",
    ),
    doc("DOC.NSCREATE", -2, true, documents::nscreate, "Creates a namespace with index definitions (JSON list)."),
    doc("DOC.NSDROP", 2, true, documents::nsdrop, "Drops a namespace and its documents."),
    doc("DOC.NSINFO", 2, false, documents::nsinfo, "A namespace's indexes, document count and memory (JSON)."),
    doc("DOC.NSLIST", 1, false, documents::nslist, "The names of the namespaces."),
    doc(
        "DOC.NSTRUNCATE",
        2,
        true,
        documents::nstruncate,
        "Removes every document of a namespace, keeping its indexes.",
    ),
    doc(
        "DOC.QUERY",
        -2,
        false,
        documents::query_docs,
        "Runs a JSON DSL query; returns items, total and aggregations (JSON).",
    ),
    doc(
        "DOC.SCAN",
        -3,
        false,
        documents::scan_docs,
        "Walks a namespace's documents: [next cursor, [documents]]; cursor 0 starts and ends.",
    ),
    doc(
        "DOC.SEARCH",
        2,
        false,
        documents::search_docs,
        "Full-text search across namespaces, merged by rank (JSON in, JSON out).",
    ),
    doc(
        "DOC.SQL",
        -2,
        true,
        documents::sql_text,
        "Runs one SQL statement; returns its JSON answer (items, total, aggregations, affected); AFTER source:position... waits for live-sync sources first.",
    ),
    doc(
        "DOC.TXN",
        -4,
        true,
        documents::txn,
        "Applies UPSERT/INSERT/UPDATE document and DELETE key operations (NS name: to another namespace), all or nothing.",
    ),
    doc(
        "DOC.UPDATE",
        -3,
        true,
        documents::update_docs,
        "Updates existing documents (JSON); fails on a missing key; all or nothing.",
    ),
    doc("DOC.UPSERT", -3, true, documents::upsert_docs, "Inserts or replaces documents (JSON); all or nothing."),
    kv!("DUMP", 2, false, "generic", "A key's value as a payload RESTORE takes back.", keys::dump),
    conn("ECHO", 2, server::echo, "Returns the given string.").queue(),
    script("EVAL", By::Body, false, "Runs a Lua script (compiled and cached by its SHA1)."),
    script("EVALSHA", By::Sha, false, "Runs a cached Lua script by its SHA1."),
    script("EVALSHA_RO", By::Sha, true, "Runs a cached Lua script that may not write."),
    script("EVAL_RO", By::Body, true, "Runs a Lua script that may not write."),
    Spec {
        busy: Busy::EndsTransaction,
        ..conn("EXEC", 1, super::exec, "Executes the queued commands atomically.").run_at_once().noscript()
    },
    kv!("EXISTS", -2, false, "generic", "Counts how many of the keys exist.", keys::exists).keys(1, -1, 1),
    kv!("EXPIRE", -3, true, "generic", "Sets a key's time to live in seconds.", keys::expire),
    kv!("EXPIREAT", -3, true, "generic", "Sets a key's expiry as a Unix time in seconds.", keys::expireat),
    kv!("EXPIRETIME", 2, false, "generic", "A key's expiry as a Unix time in seconds.", keys::expiretime),
    script("FCALL", By::Function, false, "Calls a function of a loaded library."),
    script("FCALL_RO", By::Function, true, "Calls a function (flagged no-writes) that may not write."),
    all_keyspaces("FLUSHALL", -1, "server", "Removes every key of every keyspace.", keys::flushall)
        .wakes_all(Wakes::Everyone),
    kv!("FLUSHDB", -1, true, "server", "Removes every key of the selected keyspace.", keys::flushdb)
        .keyless()
        .wakes_all(Wakes::Keyspace),
    conn(
        "FUNCTION",
        -2,
        scripts::function,
        "Function libraries: LOAD, DELETE, FLUSH, LIST, DUMP, RESTORE, STATS, KILL, HELP.",
    )
    .in_group("scripting")
    .noscript()
    .while_busy(),
    kv!("GEOADD", -5, true, "geo", "Adds points (longitude, latitude, member) to a sorted set.", geo::geoadd)
        .wakes()
        .denyoom(),
    kv!("GEODIST", -4, false, "geo", "The distance between two members.", geo::geodist),
    kv!("GEOHASH", -2, false, "geo", "Members' positions as standard 11-character geohashes.", geo::geohash),
    kv!("GEOPOS", -2, false, "geo", "Members' longitudes and latitudes.", geo::geopos),
    kv!("GEORADIUS", -6, true, "geo", "Members within a radius of a point (or STORE them).", geo::georadius).denyoom(),
    kv!(
        "GEORADIUSBYMEMBER",
        -5,
        true,
        "geo",
        "Members within a radius of a member (or STORE them).",
        geo::georadiusbymember
    )
    .denyoom(),
    kv!("GEORADIUSBYMEMBER_RO", -5, false, "geo", "Members within a radius of a member.", geo::georadiusbymember_ro),
    kv!("GEORADIUS_RO", -6, false, "geo", "Members within a radius of a point.", geo::georadius_ro),
    kv!("GEOSEARCH", -7, false, "geo", "Members within a circle or a box around a member or a point.", geo::geosearch),
    kv!("GEOSEARCHSTORE", -8, true, "geo", "Stores the members GEOSEARCH finds.", geo::geosearchstore)
        .keys(1, 2, 1)
        .wakes()
        .denyoom(),
    kv!("GET", 2, false, "string", "The string value of a key.", strings::get),
    kv!("GETBIT", 3, false, "bitmap", "The bit at an offset of a string.", strings::getbit),
    kv!("GETDEL", 2, true, "string", "Returns a key's string value and deletes the key.", strings::getdel),
    kv!("GETEX", -2, true, "string", "A key's string value, changing its expiry.", strings::getex),
    kv!("GETRANGE", 4, false, "string", "A substring of a string value.", strings::getrange),
    kv!("GETSET", 3, true, "string", "Sets a key's string value and returns the old one.", strings::getset).denyoom(),
    kv!("HDEL", -3, true, "hash", "Deletes fields of a hash.", hashes::hdel),
    conn("HELLO", -1, server::hello, "Handshake: protocol version, authentication, client name.")
        .before_auth()
        .noscript()
        .while_busy(),
    kv!("HEXISTS", 3, false, "hash", "Whether a hash field exists.", hashes::hexists),
    kv!("HGET", 3, false, "hash", "The value of a hash field.", hashes::hget),
    kv!("HGETALL", 2, false, "hash", "Every field and value of a hash.", hashes::hgetall),
    kv!("HINCRBY", 4, true, "hash", "Increments the integer value of a hash field.", hashes::hincrby).denyoom(),
    kv!("HINCRBYFLOAT", 4, true, "hash", "Increments the floating-point value of a hash field.", hashes::hincrbyfloat)
        .denyoom(),
    kv!("HKEYS", 2, false, "hash", "Every field of a hash.", hashes::hkeys),
    kv!("HLEN", 2, false, "hash", "Number of fields in a hash.", hashes::hlen),
    kv!("HMGET", -3, false, "hash", "The values of several hash fields.", hashes::hmget),
    kv!("HMSET", -4, true, "hash", "Sets several hash fields (deprecated form of HSET).", hashes::hmset).denyoom(),
    kv!("HRANDFIELD", -2, false, "hash", "Random fields of a hash, with their values on request.", hashes::hrandfield),
    kv!("HSCAN", -3, false, "hash", "Iterates over the fields of a hash.", hashes::hscan),
    kv!("HSET", -4, true, "hash", "Sets hash fields; returns how many were new.", hashes::hset).denyoom(),
    kv!("HSETNX", 4, true, "hash", "Sets a hash field only if it does not exist.", hashes::hsetnx).denyoom(),
    kv!("HSTRLEN", 3, false, "hash", "Length of a hash field's value.", hashes::hstrlen),
    kv!("HVALS", 2, false, "hash", "Every value of a hash.", hashes::hvals),
    kv!("INCR", 2, true, "string", "Increments the integer value of a key by one.", strings::incr).denyoom(),
    kv!("INCRBY", 3, true, "string", "Increments the integer value of a key by a number.", strings::incrby).denyoom(),
    kv!("INCRBYFLOAT", 3, true, "string", "Increments the floating-point value of a key.", strings::incrbyfloat)
        .denyoom(),
    conn("INFO", -1, server::info, "Server information and statistics.").queue_then_refuse(),
    kv!("KEYS", 2, false, "generic", "Every key matching a glob pattern.", keys::keys).keyless(),
    conn("LASTSAVE", 1, server::lastsave, "Unix time of the last successful snapshot.").queue_then_refuse(),
    kv!("LCS", -3, false, "string", "The longest common subsequence of two strings.", strings::lcs).keys(1, 2, 1),
    kv!("LINDEX", 3, false, "list", "The element of a list at an index.", lists::lindex),
    kv!("LINSERT", 5, true, "list", "Inserts an element before or after another in a list.", lists::linsert)
        .wakes()
        .denyoom(),
    kv!("LLEN", 2, false, "list", "The length of a list.", lists::llen),
    kv!("LMOVE", 5, true, "list", "Pops an element from one list and pushes it onto another.", lists::lmove)
        .keys(1, 2, 1)
        .wakes()
        .denyoom(),
    kv!("LMPOP", -4, true, "list", "Pops elements from the first non-empty list of several.", lists::lmpop)
        .movable(keys_after_numkeys),
    kv!("LPOP", -2, true, "list", "Removes and returns the first elements of a list.", lists::lpop),
    kv!("LPOS", -3, false, "list", "The indexes of the elements of a list equal to a value.", lists::lpos),
    kv!("LPUSH", -3, true, "list", "Prepends elements to a list.", lists::lpush).wakes().denyoom(),
    kv!("LPUSHX", -3, true, "list", "Prepends elements to a list only if it exists.", lists::lpushx).wakes().denyoom(),
    kv!("LRANGE", 4, false, "list", "A range of the elements of a list.", lists::lrange),
    kv!("LREM", 4, true, "list", "Removes elements equal to a value from a list.", lists::lrem),
    kv!("LSET", 4, true, "list", "Sets the element of a list at an index.", lists::lset).denyoom(),
    kv!("LTRIM", 4, true, "list", "Trims a list to a range.", lists::ltrim),
    conn("MEMORY", -2, server::memory, "Memory use: USAGE key, STATS, DOCTOR, PURGE.")
        .keys(2, 2, 1)
        .queue_then_refuse(),
    kv!("MGET", -2, false, "string", "The values of several keys.", strings::mget).keys(1, -1, 1),
    Spec {
        write: true,
        keys: KeyPositions { first: 1, last: 1, step: 1 },
        ..conn("MOVE", 3, keys::move_key, "Moves a key, with its deadline, to another keyspace.")
            .in_group("generic")
            .queue()
            .across(Across { direct: None, databases: keys::move_database, in_txn: keys::move_in_txn })
    },
    kv!("MSET", -3, true, "string", "Sets several keys atomically.", strings::mset).keys(1, -1, 2).denyoom(),
    kv!("MSETNX", -3, true, "string", "Sets several keys only if none of them exists.", strings::msetnx)
        .keys(1, -1, 2)
        .denyoom(),
    conn("MULTI", 1, super::multi, "Starts a transaction.").run_at_once().noscript().while_busy(),
    kv!(
        "OBJECT",
        -2,
        false,
        "generic",
        "How a key's value is stored: ENCODING, REFCOUNT, IDLETIME, FREQ.",
        keys::object
    )
    .keys(2, 2, 1),
    kv!("PERSIST", 2, true, "generic", "Removes a key's expiry.", keys::persist),
    kv!("PEXPIRE", -3, true, "generic", "Sets a key's time to live in milliseconds.", keys::pexpire),
    kv!("PEXPIREAT", -3, true, "generic", "Sets a key's expiry as a Unix time in milliseconds.", keys::pexpireat),
    kv!("PEXPIRETIME", 2, false, "generic", "A key's expiry as a Unix time in milliseconds.", keys::pexpiretime),
    kv!("PFADD", -2, true, "hyperloglog", "Adds elements to a HyperLogLog.", hll::pfadd).denyoom(),
    kv!("PFCOUNT", -2, true, "hyperloglog", "The estimated number of distinct elements of HyperLogLogs.", hll::pfcount)
        .keys(1, -1, 1),
    kv!("PFDEBUG", 3, true, "hyperloglog", "Internals of a HyperLogLog: GETREG DECODE ENCODING TODENSE.", hll::pfdebug)
        .keys(2, 2, 1)
        .denyoom(),
    kv!("PFMERGE", -2, true, "hyperloglog", "Merges HyperLogLogs into one.", hll::pfmerge).keys(1, -1, 1).denyoom(),
    kv!("PFSELFTEST", 1, false, "hyperloglog", "Checks the HyperLogLog implementation.", hll::pfselftest).keyless(),
    conn("PING", -1, server::ping, "Returns PONG, or the given message.").queue().in_subscribed_mode(),
    kv!("PSETEX", 4, true, "string", "Sets a key's value and time to live in milliseconds.", strings::psetex).denyoom(),
    conn("PSUBSCRIBE", -2, pubsub::psubscribe, "Subscribes to the channels matching glob patterns.")
        .pushes()
        .noscript(),
    kv!("PTTL", 2, false, "generic", "A key's time to live in milliseconds.", keys::pttl),
    conn("PUBLISH", 3, pubsub::publish, "Posts a message to a channel; the number of receivers.").queue(),
    conn("PUBSUB", -2, pubsub::pubsub, "Pub/sub introspection: CHANNELS, NUMSUB, NUMPAT, SHARDCHANNELS, SHARDNUMSUB."),
    conn("PUNSUBSCRIBE", -1, pubsub::punsubscribe, "Unsubscribes from patterns (all without arguments).")
        .pushes()
        .noscript(),
    conn("QUIT", -1, server::quit, "Closes the connection.")
        .run_at_once()
        .before_auth()
        .in_subscribed_mode()
        .noscript()
        .while_busy(),
    kv!("RANDOMKEY", 1, false, "generic", "A random key.", keys::randomkey).keyless(),
    kv!("RENAME", 3, true, "generic", "Renames a key, replacing the destination.", keys::rename).keys(1, 2, 1).wakes(),
    kv!("RENAMENX", 3, true, "generic", "Renames a key only if the destination does not exist.", keys::renamenx)
        .keys(1, 2, 1)
        .wakes(),
    conn("RESET", 1, server::reset, "Resets the connection's state.")
        .run_at_once()
        .before_auth()
        .in_subscribed_mode()
        .noscript()
        .while_busy(),
    kv!("RESTORE", -4, true, "generic", "Stores a DUMP payload at a key.", keys::restore).wakes().denyoom(),
    kv!("RPOP", -2, true, "list", "Removes and returns the last elements of a list.", lists::rpop),
    kv!("RPOPLPUSH", 3, true, "list", "Pops the last element of a list and pushes it onto another.", lists::rpoplpush)
        .keys(1, 2, 1)
        .wakes()
        .denyoom(),
    kv!("RPUSH", -3, true, "list", "Appends elements to a list.", lists::rpush).wakes().denyoom(),
    kv!("RPUSHX", -3, true, "list", "Appends elements to a list only if it exists.", lists::rpushx).wakes().denyoom(),
    kv!("SADD", -3, true, "set", "Adds members to a set.", sets::sadd).denyoom(),
    conn("SAVE", 1, server::save, "Takes a snapshot of the database and waits for it.").noscript(),
    kv!("SCAN", -2, false, "generic", "Iterates over the keys of the keyspace.", keys::scan).keyless(),
    kv!("SCARD", 2, false, "set", "The number of members of a set.", sets::scard),
    conn("SCRIPT", -2, scripts::script, "The Lua script cache: LOAD, EXISTS, FLUSH, KILL, HELP.")
        .in_group("scripting")
        .noscript()
        .while_busy(),
    kv!("SDIFF", -2, false, "set", "The members of a set in none of the others.", sets::sdiff).keys(1, -1, 1),
    kv!("SDIFFSTORE", -3, true, "set", "Stores the difference of sets.", sets::sdiffstore).keys(1, -1, 1).denyoom(),
    // A script may SELECT the keyspace it runs on (and learns Redis' error for a bad one).
    conn("SELECT", 2, server::select, "Selects a keyspace by number or by name.").across(Across {
        direct: None,
        databases: |_| Vec::new(),
        in_txn: server::select_in_block,
    }),
    kv!("SET", -3, true, "string", "Sets a key's string value, with expiry and condition options.", strings::set)
        .wakes()
        .denyoom(),
    kv!("SETBIT", 4, true, "bitmap", "Sets or clears the bit at an offset of a string.", strings::setbit).denyoom(),
    kv!("SETEX", 4, true, "string", "Sets a key's value and time to live in seconds.", strings::setex).denyoom(),
    kv!("SETNX", 3, true, "string", "Sets a key's value only if the key does not exist.", strings::setnx).denyoom(),
    kv!("SETRANGE", 4, true, "string", "Overwrites part of a string at an offset.", strings::setrange).denyoom(),
    conn("SHUTDOWN", -1, server::shutdown, "Stops the server cleanly, as SIGTERM does.").noscript().while_busy(),
    kv!("SINTER", -2, false, "set", "The members in every one of several sets.", sets::sinter).keys(1, -1, 1),
    kv!("SINTERCARD", -3, false, "set", "The size of the intersection of sets.", sets::sintercard)
        .movable(keys_after_numkeys),
    kv!("SINTERSTORE", -3, true, "set", "Stores the intersection of sets.", sets::sinterstore).keys(1, -1, 1).denyoom(),
    kv!("SISMEMBER", 3, false, "set", "Whether a value is a member of a set.", sets::sismember),
    kv!("SMEMBERS", 2, false, "set", "Every member of a set.", sets::smembers),
    kv!("SMISMEMBER", -3, false, "set", "Whether each of several values is a member of a set.", sets::smismember),
    kv!("SMOVE", 4, true, "set", "Moves a member from one set to another.", sets::smove).keys(1, 2, 1),
    kv!("SORT", -2, true, "generic", "Sorts a list, set or sorted set, or stores the result.", keys::sort)
        .movable(keys_of_sort)
        .wakes()
        .denyoom(),
    kv!("SORT_RO", -2, false, "generic", "Sorts a list, set or sorted set.", keys::sort_ro).movable(keys_of_sort),
    kv!("SPOP", -2, true, "set", "Removes and returns random members of a set.", sets::spop),
    conn("SPUBLISH", 3, pubsub::spublish, "Posts a message to a shard channel; the number of receivers.").queue(),
    kv!("SRANDMEMBER", -2, false, "set", "Random members of a set.", sets::srandmember),
    kv!("SREM", -3, true, "set", "Removes members from a set.", sets::srem),
    kv!("SSCAN", -3, false, "set", "Iterates over the members of a set.", sets::sscan),
    conn("SSUBSCRIBE", -2, pubsub::ssubscribe, "Subscribes to shard channels.").pushes().noscript(),
    kv!("STRLEN", 2, false, "string", "Length of a key's string value.", strings::strlen),
    conn("SUBSCRIBE", -2, pubsub::subscribe, "Subscribes to channels.").pushes().noscript(),
    kv!("SUBSTR", 4, false, "string", "A substring of a string value (GETRANGE's old name).", strings::getrange),
    kv!("SUNION", -2, false, "set", "The members of any of several sets.", sets::sunion).keys(1, -1, 1),
    kv!("SUNIONSTORE", -3, true, "set", "Stores the union of sets.", sets::sunionstore).keys(1, -1, 1).denyoom(),
    conn("SUNSUBSCRIBE", -1, pubsub::sunsubscribe, "Unsubscribes from shard channels (all without arguments).")
        .pushes()
        .noscript(),
    Spec {
        write: true,
        ..conn("SWAPDB", 3, keys::swapdb, "Exchanges the contents of two keyspaces.")
            .in_group("server")
            .queue()
            .across(Across { direct: None, databases: keys::swapdb_databases, in_txn: keys::swapdb_in_txn })
    },
    conn("TIME", 1, server::time, "The server's time.").queue(),
    kv!("TTL", 2, false, "generic", "A key's time to live in seconds.", keys::ttl),
    kv!("TYPE", 2, false, "generic", "The type of a key's value.", keys::key_type),
    kv!("UNLINK", -2, true, "generic", "Deletes keys (the same as DEL here: memory is freed at once).", keys::del)
        .keys(1, -1, 1)
        .wakes(),
    conn("UNSUBSCRIBE", -1, pubsub::unsubscribe, "Unsubscribes from channels (all without arguments).")
        .pushes()
        .noscript(),
    conn("UNWATCH", 1, super::unwatch, "Forgets the watched keys.").queue().noscript().while_busy(),
    conn("WATCH", -2, super::watch, "Watches keys: EXEC runs only if none changes first.")
        .run_at_once()
        .keys(1, -1, 1)
        .noscript(),
    kv!("XACK", -4, true, "stream", "Acknowledges pending entries of a consumer group.", streams::xack),
    kv!("XADD", -5, true, "stream", "Appends an entry to a stream, trimming it if asked.", streams::xadd)
        .wakes()
        .denyoom(),
    kv!(
        "XAUTOCLAIM",
        -6,
        true,
        "stream",
        "Claims a group's entries pending for too long, from a cursor.",
        streams::xautoclaim
    ),
    kv!("XCLAIM", -6, true, "stream", "Transfers pending entries of a group to a consumer.", streams::xclaim),
    kv!("XDEL", -3, true, "stream", "Deletes entries from a stream.", streams::xdel),
    kv!("XGROUP", -2, true, "stream", "Creates, changes and destroys consumer groups and consumers.", streams::xgroup)
        .keys(2, 2, 1)
        .wakes(),
    kv!("XINFO", -2, false, "stream", "Reports on a stream, its groups or a group's consumers.", streams::xinfo)
        .keys(2, 2, 1),
    kv!("XLEN", 2, false, "stream", "The number of entries in a stream.", streams::xlen),
    kv!("XPENDING", -3, false, "stream", "Entries delivered to a group and not yet acknowledged.", streams::xpending),
    kv!("XRANGE", -4, false, "stream", "Entries of a stream between two ids.", streams::xrange),
    Spec {
        write: false,
        ..blocking("XREAD", -4, blocking::parse_xread, "Entries of streams after given ids, waiting with BLOCK.")
            .in_group("stream")
            .movable(keys_of_xread)
    },
    blocking("XREADGROUP", -7, blocking::parse_xreadgroup, "Entries for a consumer of a group, waiting with BLOCK.")
        .in_group("stream")
        .movable(keys_of_xread),
    kv!("XREVRANGE", -4, false, "stream", "Entries of a stream between two ids, last first.", streams::xrevrange),
    kv!("XSETID", -3, true, "stream", "Sets a stream's last id and counters.", streams::xsetid).denyoom(),
    kv!("XTRIM", -4, true, "stream", "Trims a stream to a length or a lowest id.", streams::xtrim),
    kv!(
        "ZADD",
        -4,
        true,
        "sorted-set",
        "Adds members with scores to a sorted set, or updates their scores.",
        zsets::zadd
    )
    .wakes()
    .denyoom(),
    kv!("ZCARD", 2, false, "sorted-set", "The number of members of a sorted set.", zsets::zcard),
    kv!("ZCOUNT", 4, false, "sorted-set", "The number of members with scores in a range.", zsets::zcount),
    kv!("ZDIFF", -3, false, "sorted-set", "The members of a sorted set in none of the others.", zsets::zdiff)
        .movable(keys_after_numkeys),
    kv!("ZDIFFSTORE", -4, true, "sorted-set", "Stores the difference of sorted sets.", zsets::zdiffstore)
        .movable(keys_of_store)
        .wakes()
        .denyoom(),
    kv!("ZINCRBY", 4, true, "sorted-set", "Adds to the score of a member of a sorted set.", zsets::zincrby)
        .wakes()
        .denyoom(),
    kv!("ZINTER", -3, false, "sorted-set", "The intersection of sorted sets.", zsets::zinter)
        .movable(keys_after_numkeys),
    kv!("ZINTERCARD", -3, false, "sorted-set", "The size of the intersection of sorted sets.", zsets::zintercard)
        .movable(keys_after_numkeys),
    kv!("ZINTERSTORE", -4, true, "sorted-set", "Stores the intersection of sorted sets.", zsets::zinterstore)
        .movable(keys_of_store)
        .wakes()
        .denyoom(),
    kv!(
        "ZLEXCOUNT",
        4,
        false,
        "sorted-set",
        "The number of members between two members by their bytes.",
        zsets::zlexcount
    ),
    kv!("ZMPOP", -4, true, "sorted-set", "Pops members from the first non-empty sorted set of several.", zsets::zmpop)
        .movable(keys_after_numkeys),
    kv!("ZMSCORE", -3, false, "sorted-set", "The scores of several members of a sorted set.", zsets::zmscore),
    kv!("ZPOPMAX", -2, true, "sorted-set", "Pops the members with the highest scores.", zsets::zpopmax),
    kv!("ZPOPMIN", -2, true, "sorted-set", "Pops the members with the lowest scores.", zsets::zpopmin),
    kv!("ZRANDMEMBER", -2, false, "sorted-set", "Random members of a sorted set.", zsets::zrandmember),
    kv!("ZRANGE", -4, false, "sorted-set", "Members of a sorted set by rank, score or bytes.", zsets::zrange),
    kv!(
        "ZRANGEBYLEX",
        -4,
        false,
        "sorted-set",
        "Members of a sorted set between two members by their bytes.",
        zsets::zrangebylex
    ),
    kv!(
        "ZRANGEBYSCORE",
        -4,
        false,
        "sorted-set",
        "Members of a sorted set with scores in a range.",
        zsets::zrangebyscore
    ),
    kv!("ZRANGESTORE", -5, true, "sorted-set", "Stores a range of a sorted set.", zsets::zrangestore)
        .keys(1, 2, 1)
        .wakes()
        .denyoom(),
    kv!("ZRANK", 3, false, "sorted-set", "The rank of a member, from the lowest score.", zsets::zrank),
    kv!("ZREM", -3, true, "sorted-set", "Removes members from a sorted set.", zsets::zrem),
    kv!(
        "ZREMRANGEBYLEX",
        4,
        true,
        "sorted-set",
        "Removes the members between two members by their bytes.",
        zsets::zremrangebylex
    ),
    kv!("ZREMRANGEBYRANK", 4, true, "sorted-set", "Removes the members in a range of ranks.", zsets::zremrangebyrank),
    kv!(
        "ZREMRANGEBYSCORE",
        4,
        true,
        "sorted-set",
        "Removes the members with scores in a range.",
        zsets::zremrangebyscore
    ),
    kv!(
        "ZREVRANGE",
        -4,
        false,
        "sorted-set",
        "Members of a sorted set by rank, from the highest score.",
        zsets::zrevrange
    ),
    kv!("ZREVRANGEBYLEX", -4, false, "sorted-set", "ZRANGEBYLEX from the highest member.", zsets::zrevrangebylex),
    kv!("ZREVRANGEBYSCORE", -4, false, "sorted-set", "ZRANGEBYSCORE from the highest score.", zsets::zrevrangebyscore),
    kv!("ZREVRANK", 3, false, "sorted-set", "The rank of a member, from the highest score.", zsets::zrevrank),
    kv!("ZSCAN", -3, false, "sorted-set", "Iterates over the members and scores of a sorted set.", zsets::zscan),
    kv!("ZSCORE", 3, false, "sorted-set", "The score of a member of a sorted set.", zsets::zscore),
    kv!("ZUNION", -3, false, "sorted-set", "The union of sorted sets.", zsets::zunion).movable(keys_after_numkeys),
    kv!("ZUNIONSTORE", -4, true, "sorted-set", "Stores the union of sorted sets.", zsets::zunionstore)
        .movable(keys_of_store)
        .wakes()
        .denyoom(),
];

/// Longest command name the index covers (longer names are unknown).
const NAME_MAX: usize = 24;

/// Commands by (name length, first letter folded to 5 bits): each bucket holds one to
/// three names, so a lookup is an index and a short case-insensitive compare. A binary
/// search over the table cost about seven `memcmp` calls per request, measured at ~4% of
/// a pipelined INCR.
static INDEX: std::sync::LazyLock<Vec<Vec<&'static Spec>>> = std::sync::LazyLock::new(|| {
    let mut index = vec![Vec::new(); (NAME_MAX + 1) * 32];
    for spec in COMMANDS {
        index[bucket(spec.name.as_bytes()).expect("command names fit the index")].push(spec);
    }
    index
});

fn bucket(name: &[u8]) -> Option<usize> {
    let first = *name.first()?;
    (name.len() <= NAME_MAX).then(|| name.len() * 32 + usize::from(first & 0x1f))
}

/// The place of `spec` in `COMMANDS` (INFO commandstats counts by it).
pub fn index_of(spec: &'static Spec) -> usize {
    let offset = (spec as *const Spec as usize).wrapping_sub(COMMANDS.as_ptr() as usize);
    let index = offset / std::mem::size_of::<Spec>();
    debug_assert!(std::ptr::eq(&COMMANDS[index], spec), "a spec of the table");
    index
}

/// The command named `name`, in any letter case.
pub fn lookup(name: &[u8]) -> Option<&'static Spec> {
    let candidates = INDEX.get(bucket(name)?)?;
    candidates.iter().copied().find(|spec| spec.name.as_bytes().eq_ignore_ascii_case(name))
}

impl Spec {
    /// Whether `args` (the name included) fit the arity.
    pub fn arity_ok(&self, args: usize) -> bool {
        let args = args as i32;
        if self.arity >= 0 { args == self.arity } else { args >= -self.arity }
    }

    /// Redis' text for a wrong number of arguments.
    pub fn arity_error(&self) -> String {
        args::wrong_arity(self.name).0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_sorted_and_found_in_any_case() {
        assert!(COMMANDS.windows(2).all(|w| w[0].name < w[1].name), "sorted, as COMMAND lists them");
        assert_eq!(lookup(b"get").map(|s| s.name), Some("GET"));
        assert_eq!(lookup(b"HiNcRbYfLoAt").map(|s| s.name), Some("HINCRBYFLOAT"));
        assert!(lookup(b"nosuchcommand").is_none());
        assert!(lookup(b"GEt\0").is_none() && lookup(b"gex").is_none() && lookup(&[b'G'; 40]).is_none());
        // Every command is found under its own name, lower-cased too.
        for spec in COMMANDS {
            assert!(std::ptr::eq(lookup(spec.name.as_bytes()).unwrap(), spec), "{}", spec.name);
            assert!(std::ptr::eq(lookup(spec.name.to_ascii_lowercase().as_bytes()).unwrap(), spec));
        }
        assert!(lookup(b"").is_none());
        let set = lookup(b"set").unwrap();
        assert!(!set.arity_ok(2) && set.arity_ok(3) && set.arity_ok(7));
        assert_eq!(set.arity_error(), "ERR wrong number of arguments for 'set' command");
    }

    /// What MULTI does with a command fits what its handler can do inside EXEC's block.
    #[test]
    fn multi_rules_fit_the_handlers() {
        for spec in COMMANDS {
            match (spec.in_multi, spec.handler) {
                // EXEC runs these; FLUSHALL's queueing makes EXEC refuse the transaction.
                (
                    InMulti::Queue,
                    Handler::Kv(_)
                    | Handler::Session(_)
                    | Handler::AllKeyspaces(_)
                    | Handler::Blocking(_)
                    | Handler::Script(_),
                ) => {}
                (InMulti::QueueThenRefuse | InMulti::RunAtOnce | InMulti::Refuse, Handler::Session(_)) => {}
                (rule, _) => panic!("{}: {rule:?} needs a session handler", spec.name),
            }
        }
        let queued: Vec<&str> = COMMANDS
            .iter()
            .filter(|s| s.in_multi == InMulti::Queue && matches!(s.handler, Handler::Session(_)))
            .filter(|s| s.across.is_none())
            .map(|s| s.name)
            .collect();
        assert_eq!(
            queued,
            ["CONFIG", "ECHO", "PING", "PUBLISH", "SPUBLISH", "TIME", "UNWATCH"],
            "EXEC runs these with the keyspace locked"
        );
        // These reach other keyspaces: EXEC runs them on the blocks it locked with the
        // selected keyspace's, never through their session handler.
        let across: Vec<&str> = COMMANDS.iter().filter(|s| s.across.is_some()).map(|s| s.name).collect();
        assert_eq!(across, ["COPY", "MOVE", "SELECT", "SWAPDB"]);
        let before_auth: Vec<&str> = COMMANDS.iter().filter(|s| s.before_auth).map(|s| s.name).collect();
        assert_eq!(before_auth, ["AUTH", "HELLO", "QUIT", "RESET"], "the commands a stranger may send");
    }

    /// Scripts may call what Redis 7.0 lets them (its `noscript` flag, for the commands
    /// both have), and `DOC.*` is refused; while a script keeps the server busy, what
    /// Redis lets through runs (its `allow-busy` flag) but WATCH, which reads keys.
    #[test]
    fn script_and_busy_rules_follow_redis() {
        let redis_noscript = [
            "AUTH",
            "BGSAVE",
            "BLMOVE",
            "BLPOP",
            "BRPOP",
            "BRPOPLPUSH",
            "BZPOPMAX",
            "BZPOPMIN",
            "CLIENT",
            "CONFIG",
            "DEBUG",
            "DISCARD",
            "EVAL",
            "EVALSHA",
            "EVALSHA_RO",
            "EVAL_RO",
            "EXEC",
            "FCALL",
            "FCALL_RO",
            "FUNCTION",
            "HELLO",
            "MULTI",
            "PSUBSCRIBE",
            "PUNSUBSCRIBE",
            "QUIT",
            "RESET",
            "SAVE",
            "SCRIPT",
            "SHUTDOWN",
            "SSUBSCRIBE",
            "SUBSCRIBE",
            "SUNSUBSCRIBE",
            "UNSUBSCRIBE",
            "UNWATCH",
            "WATCH",
        ];
        let noscript: Vec<&str> =
            COMMANDS.iter().filter(|s| s.noscript && !s.name.starts_with("DOC.")).map(|s| s.name).collect();
        assert_eq!(noscript, redis_noscript);
        assert!(COMMANDS.iter().filter(|s| s.name.starts_with("DOC.")).all(|s| s.noscript));
        let busy: Vec<&str> = COMMANDS.iter().filter(|s| s.busy == Busy::Runs).map(|s| s.name).collect();
        assert_eq!(
            busy,
            ["AUTH", "DISCARD", "FUNCTION", "HELLO", "MULTI", "QUIT", "RESET", "SCRIPT", "SHUTDOWN", "UNWATCH"]
        );
        let ends: Vec<&str> = COMMANDS.iter().filter(|s| s.busy == Busy::EndsTransaction).map(|s| s.name).collect();
        assert_eq!(ends, ["EXEC"]);
    }

    /// The table is the one place a command's name decides anything: no module of
    /// `commands` matches a request on a command's name (a string `match` or comparison),
    /// so a command is never half in the table and half in a second dispatch.
    #[test]
    fn no_module_dispatches_by_name() {
        let sources = [
            ("mod.rs", include_str!("mod.rs")),
            ("strings.rs", include_str!("strings.rs")),
            ("keys.rs", include_str!("keys.rs")),
            ("hashes.rs", include_str!("hashes.rs")),
            ("lists.rs", include_str!("lists.rs")),
            ("sets.rs", include_str!("sets.rs")),
            ("zsets.rs", include_str!("zsets.rs")),
            ("streams.rs", include_str!("streams.rs")),
            ("geo.rs", include_str!("geo.rs")),
            ("hll.rs", include_str!("hll.rs")),
            ("server.rs", include_str!("server.rs")),
            ("documents.rs", include_str!("documents.rs")),
            ("config.rs", include_str!("config.rs")),
            ("pubsub.rs", include_str!("pubsub.rs")),
            ("scripts.rs", include_str!("scripts.rs")),
        ];
        for (file, source) in sources {
            for pattern in ["spec.name ==", "match spec.name", "matches!(spec.name", "match name", "name =="] {
                assert!(!source.contains(pattern), "{file} dispatches by name: {pattern}");
            }
            for spec in COMMANDS {
                let quoted = format!("\"{}\"", spec.name);
                for (at, _) in source.match_indices(&quoted) {
                    // A byte string (`b"INFO"`, a CLIENT subcommand) is no command name.
                    if source[..at].ends_with('b') {
                        continue;
                    }
                    let before = source[..at].trim_end();
                    let after = source[at + quoted.len()..].trim_start();
                    let in_pattern = before.ends_with('|') || after.starts_with("=>") || after.starts_with('|');
                    assert!(!in_pattern, "{file} matches on the name {}", spec.name);
                }
            }
        }
    }
}
