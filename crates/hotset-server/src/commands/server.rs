//! Connection and server commands: PING, ECHO, SELECT, HELLO, AUTH, QUIT, RESET, CLIENT,
//! COMMAND, CONFIG, INFO, TIME, SAVE, BGSAVE, LASTSAVE.
//!
//! Owns: one handler per command, all of the table's session shape; the replies clients
//! and tools read at connect time (HELLO's map, INFO's sections, the CONFIG parameters
//! redis-benchmark asks for, COMMAND DOCS). Never: change server-wide settings that would
//! need a restart to be true (CONFIG SET refuses those), or decide anything by a
//! command's name (the table chose the handler; PING, ECHO and TIME, which EXEC runs with
//! the keyspace locked, touch neither the session nor any keyspace).

use super::Session;
use super::args::{self, CmdError, CmdResult, syntax, unknown_subcommand};
use super::table::{self, COMMANDS, Spec};
use crate::resp::reply::{Protocol, Reply};
use crate::state::ServerState;
use hotset_ops::Request;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

/// The Redis version whose command semantics this server follows, reported where
/// clients look for one (HELLO, INFO `redis_version`) to decide which commands to use.
pub const REDIS_COMPAT_VERSION: &str = "7.2.0";

/// Longest keyspace name SELECT accepts.
const KEYSPACE_NAME_MAX: usize = 64;

/// PING [message]; in RESP2's subscribed mode, `["pong", message or ""]` as Redis answers.
pub fn ping(_: &Arc<ServerState>, session: &mut Session, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    if session.subscriptions > 0 && r.protocol == Protocol::Resp2 {
        if a.len() > 2 {
            return Err(args::wrong_arity("PING"));
        }
        r.array(2);
        r.bulk(b"pong");
        r.bulk(a.get(1).copied().unwrap_or_default());
        return Ok(());
    }
    match a {
        [_] => r.simple("PONG"),
        [_, message] => r.bulk(message),
        _ => return Err(args::wrong_arity("PING")),
    }
    Ok(())
}

pub fn echo(_: &Arc<ServerState>, _: &mut Session, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    r.bulk(a[1]);
    Ok(())
}

pub fn time(_: &Arc<ServerState>, _: &mut Session, _: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    r.array(2);
    r.bulk(now.as_secs().to_string().as_bytes());
    r.bulk(now.subsec_micros().to_string().as_bytes());
    Ok(())
}

pub fn select(state: &Arc<ServerState>, session: &mut Session, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    select_keyspace(state, session, a[1])?;
    r.ok();
    Ok(())
}

/// AUTH password | AUTH default password
pub fn auth(state: &Arc<ServerState>, session: &mut Session, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    let password = match a {
        [_, password] => password,
        [_, user, password] if args::is(user, crate::auth::DEFAULT_USER) => password,
        [_, _, _] => return Err(CmdError("WRONGPASS invalid username-password pair or user is disabled.".into())),
        _ => return Err(syntax()),
    };
    authenticate(state, session, password)?;
    r.ok();
    Ok(())
}

pub fn quit(_: &Arc<ServerState>, session: &mut Session, _: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    session.closing = true;
    r.ok();
    Ok(())
}

/// RESET: the connection as it was after connecting (a transaction discarded, no
/// subscriptions, replies on, RESP2, keyspace 0, TEXT errors, no name, unauthenticated
/// when a password is set).
pub fn reset(state: &Arc<ServerState>, session: &mut Session, _: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    session.multi = None;
    state.watches.unwatch(session.id);
    session.errors_json = false;
    session.replies = super::Replies::On;
    state.pubsub.disconnect(session.id);
    session.subscriptions = 0;
    state.tracking.disable(session.id);
    session.tracking = None;
    session.caching = false;
    session.protocol = Protocol::Resp2;
    session.authenticated = state.config.password.is_none();
    select_keyspace(state, session, b"0")?;
    state.update_client(session.id, |info| {
        info.name.clear();
        info.protocol = 2;
    });
    r.protocol = Protocol::Resp2;
    r.simple("RESET");
    Ok(())
}

pub fn info(state: &Arc<ServerState>, _: &mut Session, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    r.verbatim(&super::info::text(state, &a[1..]));
    Ok(())
}

/// SAVE: a snapshot now, waited for.
/// SAVE: a snapshot now, through the operation layer (it blocks: the I/O thread's other
/// connections go on meanwhile); a failure in Redis' words.
pub fn save(state: &Arc<ServerState>, session: &mut Session, _: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    super::apply(state, &session.acks, Request::Save).map_err(|refusal| CmdError(format!("ERR {refusal}")))?;
    r.ok();
    Ok(())
}

/// BGSAVE: maintenance takes the snapshot; its outcome shows in INFO persistence.
pub fn bgsave(state: &Arc<ServerState>, session: &mut Session, _: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    super::apply(state, &session.acks, Request::Snapshot).map_err(|refusal| CmdError(format!("ERR {refusal}")))?;
    r.simple("Background saving started");
    Ok(())
}

pub fn lastsave(state: &Arc<ServerState>, _: &mut Session, _: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    r.int(last_save(state));
    Ok(())
}

/// DEBUG LOG message | DEBUG SLEEP seconds: the harmless part of Redis' DEBUG (test
/// suites mark their place in the server's log and wait on the server). The rest, which
/// reaches into Redis' internals, has no meaning here.
pub fn debug(_: &Arc<ServerState>, _: &mut Session, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    match a {
        [_, sub, message] if args::is(sub, "LOG") => {
            tracing::info!(target: "debug", "{}", String::from_utf8_lossy(message));
        }
        [_, sub, seconds] if args::is(sub, "SLEEP") => {
            let seconds = std::str::from_utf8(seconds)
                .ok()
                .and_then(|s| s.parse::<f64>().ok())
                .filter(|s| s.is_finite() && *s >= 0.0)
                .ok_or_else(|| CmdError("ERR value is not a valid float".into()))?;
            // The thread's other connections move to another thread meanwhile.
            tokio::task::block_in_place(|| std::thread::sleep(std::time::Duration::from_secs_f64(seconds.min(3600.0))));
            // The commands after it in the batch see the time it slept (keys expired meanwhile).
            hotset_core::clock::Pinned::refresh();
        }
        _ => return Err(unknown_subcommand("DEBUG", a[1])),
    }
    r.ok();
    Ok(())
}

/// MEMORY USAGE key [SAMPLES n] | STATS | DOCTOR | PURGE: what keys and the server hold.
/// A key's usage is what its shard counts for it (key, value, bookkeeping, TTL entry):
/// exact for strings, and for a collection its counted size whatever SAMPLES asks.
pub fn memory(state: &Arc<ServerState>, session: &mut Session, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    use hotset_core::kv::KvOps;
    let sub = a[1];
    if args::is(sub, "USAGE") {
        match a {
            [_, _, _] => {}
            [_, _, _, option, count] if args::is(option, "SAMPLES") => {
                args::int(count)?;
            }
            [_, _, _, ..] => return Err(syntax()),
            _ => return Err(CmdError("ERR wrong number of arguments for 'memory|usage' command".into())),
        }
        match session.keyspace.memory_usage(a[2])? {
            Some(bytes) => r.int(bytes as i64),
            None => r.null(),
        }
    } else if args::is(sub, "STATS") {
        let db = state.db();
        let spaces: Vec<_> = db.keyspaces().list().iter().filter_map(|n| db.keyspaces().get(n)).collect();
        let keys: usize = spaces.iter().map(|k| k.len()).sum();
        let dataset: usize = spaces.iter().map(|k| k.memory_bytes()).sum();
        r.map(3);
        r.bulk(b"keys.count");
        r.int(keys as i64);
        r.bulk(b"dataset.bytes");
        r.int(dataset as i64);
        r.bulk(b"clients.normal");
        r.int(state.connected_clients() as i64);
    } else if args::is(sub, "DOCTOR") {
        r.verbatim("Hotset reports its memory in INFO memory and MEMORY STATS; there is no diagnosis to add.\n");
    } else if args::is(sub, "PURGE") {
        r.ok();
    } else {
        return Err(unknown_subcommand("MEMORY", sub));
    }
    Ok(())
}

/// SELECT n (a keyspace by number, 0 .. databases-1) or SELECT name (any keyspace by
/// name, created on first use: one server serves one keyspace per domain).
fn select_keyspace(state: &ServerState, session: &mut Session, target: &[u8]) -> CmdResult {
    let name = keyspace_named(state, target)?;
    if name != session.keyspace_name {
        session.keyspace = state.db().keyspaces().get_or_create(&name);
        session.keyspace_name = name.clone();
        state.update_client(session.id, |info| info.keyspace = name);
    }
    Ok(())
}

/// SELECT inside a script, on the block the script runs on: the keyspace it already has
/// answers OK; another one is refused (the script holds the selected keyspace's locks
/// alone, and Redis' SELECT would not outlive the script anyway).
pub fn select_in_block(
    state: &ServerState,
    blocks: &super::Blocks<'_, '_>,
    a: &[&[u8]],
    r: &mut Reply<'_>,
) -> Option<CmdResult> {
    let selected = keyspace_named(state, a[1]).and_then(|name| match blocks.named(&name) {
        Some(_) => Ok(()),
        None => Err(CmdError("ERR SELECT of another keyspace is not supported inside a script".into())),
    });
    Some(selected.map(|()| r.ok()))
}

/// SELECT's argument resolved to a keyspace's name, with Redis' error texts.
fn keyspace_named(state: &ServerState, target: &[u8]) -> Result<String, CmdError> {
    Ok(match args::int(target) {
        Ok(n) if n >= 0 && (n as usize) < state.config.databases => n.to_string(),
        Ok(_) => return Err(CmdError("ERR DB index is out of range".into())),
        Err(_) => {
            let valid = !target.is_empty()
                && target.len() <= KEYSPACE_NAME_MAX
                && target.iter().all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b':'));
            if !valid {
                return Err(CmdError(format!(
                    "ERR invalid keyspace name: use a number below {} or up to {KEYSPACE_NAME_MAX} letters, digits and _-.:",
                    state.config.databases
                )));
            }
            String::from_utf8(target.to_vec()).expect("checked ASCII")
        }
    })
}

fn authenticate(state: &ServerState, session: &mut Session, password: &[u8]) -> CmdResult {
    match &state.config.password {
        None => Err(CmdError(
            "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?".into(),
        )),
        Some(expected) if crate::auth::password_matches(expected, password) => {
            session.authenticated = true;
            Ok(())
        }
        Some(_) => Err(CmdError("WRONGPASS invalid username-password pair or user is disabled.".into())),
    }
}

/// HELLO [protover [AUTH user password] [SETNAME name]]
pub fn hello(state: &Arc<ServerState>, session: &mut Session, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    let mut protocol = session.protocol;
    let mut at = 1;
    if let Some(version) = a.get(1) {
        protocol = match args::int(version) {
            Ok(2) => Protocol::Resp2,
            Ok(3) => Protocol::Resp3,
            Ok(_) => return Err(CmdError("NOPROTO unsupported protocol version".into())),
            Err(_) => return Err(CmdError("ERR Protocol version is not an integer or out of range".into())),
        };
        at = 2;
    }
    let mut name = None;
    while at < a.len() {
        if args::is(a[at], "AUTH") && at + 2 < a.len() {
            if !args::is(a[at + 1], "default") {
                return Err(CmdError("WRONGPASS invalid username-password pair or user is disabled.".into()));
            }
            authenticate(state, session, a[at + 2])?;
            at += 3;
        } else if args::is(a[at], "SETNAME") && at + 1 < a.len() {
            name = Some(client_name(a[at + 1])?);
            at += 2;
        } else {
            return Err(CmdError(format!("ERR Syntax error in HELLO option '{}'", String::from_utf8_lossy(a[at]))));
        }
    }
    if !session.authenticated {
        return Err(CmdError("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time".into()));
    }
    session.protocol = protocol;
    r.protocol = protocol;
    let version = if protocol == Protocol::Resp3 { 3 } else { 2 };
    state.update_client(session.id, |info| {
        info.protocol = version;
        if let Some(name) = name {
            info.name = name;
        }
    });
    r.map(7);
    r.bulk(b"server");
    r.bulk(b"hotset");
    r.bulk(b"version");
    r.bulk(REDIS_COMPAT_VERSION.as_bytes());
    r.bulk(b"proto");
    r.int(i64::from(version));
    r.bulk(b"id");
    r.int(session.id as i64);
    r.bulk(b"mode");
    r.bulk(b"standalone");
    r.bulk(b"role");
    r.bulk(b"master");
    r.bulk(b"modules");
    r.array(0);
    Ok(())
}

/// A client name: no spaces or line breaks (CLIENT LIST is space-separated).
fn client_name(arg: &[u8]) -> Result<String, CmdError> {
    if arg.iter().any(|&b| b <= b' ' || b == 0x7f) {
        return Err(CmdError("ERR Client names cannot contain spaces, newlines or special characters.".into()));
    }
    Ok(String::from_utf8_lossy(arg).into_owned())
}

/// CLIENT SETNAME | GETNAME | ID | INFO | LIST | SETINFO | REPLY | NO-EVICT | KILL |
/// UNBLOCK | TRACKING | CACHING | GETREDIR | TRACKINGINFO
pub fn client(state: &Arc<ServerState>, session: &mut Session, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    let sub = a[1].to_ascii_uppercase();
    session.caching_kept = true;
    match (sub.as_slice(), a.len()) {
        (b"SETNAME", 3) => {
            let name = client_name(a[2])?;
            state.update_client(session.id, |info| info.name = name);
            r.ok();
        }
        (b"GETNAME", 2) => {
            let name = state.clients.lock().get(&session.id).map(|info| info.name.clone()).unwrap_or_default();
            r.bulk_or_null((!name.is_empty()).then_some(name.as_bytes()));
        }
        (b"ID", 2) => r.int(session.id as i64),
        (b"INFO", 2) => {
            let line = state.clients.lock().get(&session.id).map(|info| client_line(state, info)).unwrap_or_default();
            r.verbatim(&line);
        }
        (b"LIST", 2) => {
            let list: String = state.clients.lock().values().map(|info| client_line(state, info)).collect();
            r.verbatim(&list);
        }
        (b"SETINFO", 4) => {
            let value = String::from_utf8_lossy(a[3]).into_owned();
            if args::is(a[2], "LIB-NAME") {
                state.update_client(session.id, |info| info.lib_name = value);
            } else if args::is(a[2], "LIB-VER") {
                state.update_client(session.id, |info| info.lib_ver = value);
            } else {
                return Err(CmdError(format!("ERR Unrecognized option '{}'", String::from_utf8_lossy(a[2]))));
            }
            r.ok();
        }
        (b"REPLY", 3) => {
            session.replies = if args::is(a[2], "ON") {
                super::Replies::On
            } else if args::is(a[2], "OFF") {
                super::Replies::Off
            } else if args::is(a[2], "SKIP") {
                super::Replies::Skip
            } else {
                return Err(syntax());
            };
            r.ok();
        }
        (b"NO-EVICT", 3) => {
            // Eviction never picks a client here (Redis evicts clients over
            // maxmemory-clients, which Hotset does not have): both settings hold.
            if !args::is(a[2], "ON") && !args::is(a[2], "OFF") {
                return Err(syntax());
            }
            r.ok();
        }
        (b"KILL", 3..) => client_kill(state, session, &a[2..], r)?,
        (b"UNBLOCK", 3 | 4) => {
            let error = crate::blocking::unblock_mode(a.get(3))?;
            let id = u64::try_from(args::int(a[2])?).unwrap_or(0);
            r.int(i64::from(state.blocking.unblock(id, error)));
        }
        (b"TRACKING", 3..) => {
            client_tracking(state, session, &a[2..])?;
            r.ok();
        }
        (b"CACHING", 3) => {
            let mode = session.tracking.ok_or_else(|| {
                CmdError("ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled".into())
            })?;
            if args::is(a[2], "YES") {
                if !mode.optin {
                    return Err(CmdError(
                        "ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.".into(),
                    ));
                }
            } else if args::is(a[2], "NO") {
                if !mode.optout {
                    return Err(CmdError(
                        "ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.".into(),
                    ));
                }
            } else {
                return Err(syntax());
            }
            session.caching = true;
            r.ok();
        }
        (b"GETREDIR", 2) => r.int(state.tracking.info(session.id).map_or(-1, |info| info.redirect as i64)),
        (b"TRACKINGINFO", 2) => tracking_info(state, session, r),
        (
            b"SETNAME" | b"GETNAME" | b"ID" | b"INFO" | b"LIST" | b"SETINFO" | b"REPLY" | b"NO-EVICT" | b"KILL"
            | b"UNBLOCK" | b"TRACKING" | b"CACHING" | b"GETREDIR" | b"TRACKINGINFO",
            _,
        ) => {
            return Err(CmdError(format!(
                "ERR wrong number of arguments for 'client|{}' command",
                String::from_utf8_lossy(&sub).to_lowercase()
            )));
        }
        _ => return Err(unknown_subcommand("CLIENT", a[1])),
    }
    Ok(())
}

/// CLIENT TRACKING ON|OFF [REDIRECT id] [PREFIX prefix ...] [BCAST] [OPTIN] [OPTOUT]
/// [NOLOOP]: `a` from ON|OFF on.
fn client_tracking(state: &ServerState, session: &mut Session, a: &[&[u8]]) -> CmdResult {
    let mut mode = crate::tracking::Mode::default();
    let (mut redirect, mut prefixes) = (None, Vec::new());
    let mut at = 1;
    while at < a.len() {
        let more = at + 1 < a.len();
        if args::is(a[at], "REDIRECT") && more {
            at += 1;
            if redirect.is_some() {
                return Err(CmdError("ERR A client can only redirect to a single other client".into()));
            }
            let id = args::int(a[at])?;
            let target = u64::try_from(id).ok().and_then(|id| state.clients.lock().get(&id).map(|c| c.outbox.clone()));
            let outbox =
                target.ok_or_else(|| CmdError("ERR The client ID you want redirect to does not exist".into()))?;
            redirect = Some((id as u64, outbox));
        } else if args::is(a[at], "BCAST") {
            mode.bcast = true;
        } else if args::is(a[at], "OPTIN") {
            mode.optin = true;
        } else if args::is(a[at], "OPTOUT") {
            mode.optout = true;
        } else if args::is(a[at], "NOLOOP") {
            mode.noloop = true;
        } else if args::is(a[at], "PREFIX") && more {
            at += 1;
            prefixes.push(a[at].to_vec());
        } else {
            return Err(syntax());
        }
        at += 1;
    }
    if args::is(a[0], "ON") {
        let options = crate::tracking::Options { mode, redirect, prefixes };
        state.tracking.enable(session.id, &session.outbox, options).map_err(CmdError)?;
        session.tracking = Some(mode);
    } else if args::is(a[0], "OFF") {
        state.tracking.disable(session.id);
        session.tracking = None;
        session.caching = false;
    } else {
        return Err(syntax());
    }
    Ok(())
}

/// CLIENT TRACKINGINFO: the connection's tracking flags, redirection and prefixes.
fn tracking_info(state: &ServerState, session: &Session, r: &mut Reply<'_>) {
    let info = state.tracking.info(session.id);
    let mut flags = vec![if info.is_some() { "on" } else { "off" }];
    if let Some(info) = &info {
        let mode = info.mode;
        let caching = session.caching;
        for (set, flag) in [
            (mode.bcast, "bcast"),
            (mode.optin, "optin"),
            (mode.optin && caching, "caching-yes"),
            (mode.optout, "optout"),
            (mode.optout && caching, "caching-no"),
            (mode.noloop, "noloop"),
            (info.broken, "broken_redirect"),
        ] {
            if set {
                flags.push(flag);
            }
        }
    }
    r.map(3);
    r.bulk(b"flags");
    r.set(flags.len());
    flags.iter().for_each(|flag| r.bulk(flag.as_bytes()));
    r.bulk(b"redirect");
    r.int(info.as_ref().map_or(-1, |info| info.redirect as i64));
    r.bulk(b"prefixes");
    let prefixes = info.map(|info| info.prefixes).unwrap_or_default();
    r.array(prefixes.len());
    prefixes.iter().for_each(|prefix| r.bulk(prefix));
}

/// CLIENT KILL addr:port (the old form: OK or an error), or CLIENT KILL with filters
/// (ID, ADDR, LADDR, TYPE, USER, SKIPME, MAXAGE): how many connections were told to close.
fn client_kill(state: &ServerState, session: &Session, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    if let [addr] = a {
        let clients = state.clients.lock();
        let target = clients.values().find(|info| info.addr.to_string().as_bytes() == *addr);
        let Some(info) = target else { return Err(CmdError("ERR No such client".into())) };
        info.outbox.kill();
        r.ok();
        return Ok(());
    }
    if !a.len().is_multiple_of(2) {
        return Err(syntax());
    }
    let (mut id, mut addr, mut skip_me, mut max_age, mut pubsub_only) = (None, None, true, None, None);
    let mut laddr = false;
    for pair in a.chunks_exact(2) {
        let (filter, value) = (pair[0], pair[1]);
        if args::is(filter, "ID") {
            id = Some(
                args::int(value)
                    .ok()
                    .filter(|id| *id > 0)
                    .ok_or_else(|| CmdError("ERR client-id should be greater than 0".into()))?,
            );
        } else if args::is(filter, "ADDR") {
            addr = Some(value);
        } else if args::is(filter, "LADDR") {
            // Connections do not record their local address: no connection matches one.
            laddr = true;
        } else if args::is(filter, "TYPE") {
            pubsub_only = Some(if args::is(value, "pubsub") {
                true
            } else if args::is(value, "normal") {
                false
            } else if args::is(value, "master") || args::is(value, "replica") || args::is(value, "slave") {
                // No replication: no connection is of these types.
                laddr = true;
                false
            } else {
                return Err(CmdError(format!("ERR Unknown client type '{}'", String::from_utf8_lossy(value))));
            });
        } else if args::is(filter, "USER") {
            if !args::is(value, crate::auth::DEFAULT_USER) {
                return Err(CmdError(format!("ERR No such user '{}'", String::from_utf8_lossy(value))));
            }
        } else if args::is(filter, "SKIPME") {
            skip_me = if args::is(value, "yes") {
                true
            } else if args::is(value, "no") {
                false
            } else {
                return Err(syntax());
            };
        } else if args::is(filter, "MAXAGE") {
            max_age = Some(args::int(value)?);
        } else {
            return Err(syntax());
        }
    }
    let mut killed = 0;
    for info in state.clients.lock().values() {
        let subscribed = state.pubsub.total(info.id) > 0;
        let matches = !laddr
            && id.is_none_or(|id| info.id as i64 == id)
            && addr.is_none_or(|addr| info.addr.to_string().as_bytes() == addr)
            && !(skip_me && info.id == session.id)
            && max_age.is_none_or(|age| info.connected.elapsed().as_secs() as i64 >= age)
            && pubsub_only.is_none_or(|pubsub| pubsub == subscribed);
        if matches {
            info.outbox.kill();
            killed += 1;
        }
    }
    r.int(killed);
    Ok(())
}

/// One CLIENT LIST line, in Redis' `key=value` form.
fn client_line(state: &ServerState, info: &crate::state::ClientInfo) -> String {
    let tracking = state.tracking.info(info.id);
    let mut flags = String::new();
    if state.blocking.is_blocked(info.id) {
        flags.push('b');
    }
    if let Some(tracking) = &tracking {
        flags.push('t');
        if tracking.broken {
            flags.push('R');
        }
        if tracking.mode.bcast {
            flags.push('B');
        }
    }
    if flags.is_empty() {
        flags.push('N');
    }
    let redir = tracking.map_or(-1, |tracking| tracking.redirect as i64);
    format!(
        "id={} addr={} laddr= fd=0 name={} age={} idle=0 flags={flags} db={} sub=0 psub=0 ssub=0 multi=-1 qbuf=0 qbuf-free=0 argv-mem=0 multi-mem=0 rbs=0 rbp=0 obl=0 oll=0 omem=0 tot-mem=0 events=r cmd=client|info user=default redir={redir} resp={} lib-name={} lib-ver={}\n",
        info.id,
        info.addr,
        info.name,
        info.connected.elapsed().as_secs(),
        info.keyspace,
        info.protocol,
        info.lib_name,
        info.lib_ver
    )
}

/// COMMAND [COUNT | DOCS [name...] | GETKEYS command args... | INFO [name...] | LIST]
pub fn command(_: &Arc<ServerState>, _: &mut Session, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    let Some(sub) = a.get(1) else {
        r.array(COMMANDS.len());
        COMMANDS.iter().for_each(|spec| command_info(spec, r));
        return Ok(());
    };
    let named = |names: &[&[u8]]| -> Vec<Option<&'static Spec>> {
        if names.is_empty() {
            COMMANDS.iter().map(Some).collect()
        } else {
            names.iter().map(|n| table::lookup(n)).collect()
        }
    };
    if args::is(sub, "COUNT") {
        r.int(COMMANDS.len() as i64);
    } else if args::is(sub, "LIST") {
        r.array(COMMANDS.len());
        COMMANDS.iter().for_each(|spec| r.bulk(spec.name.to_ascii_lowercase().as_bytes()));
    } else if args::is(sub, "INFO") {
        let specs = named(&a[2..]);
        r.array(specs.len());
        for spec in specs {
            match spec {
                Some(spec) => command_info(spec, r),
                None => r.null_array(),
            }
        }
    } else if args::is(sub, "GETKEYS") {
        let Some(spec) = a.get(2).and_then(|name| table::lookup(name)) else {
            return Err(CmdError("ERR Invalid command specified".into()));
        };
        let request = &a[2..];
        if !spec.arity_ok(request.len()) {
            return Err(CmdError("ERR Invalid number of arguments specified for command".into()));
        }
        let keys: Vec<&[u8]> = spec.key_args(request).collect();
        if keys.is_empty() {
            return Err(CmdError("ERR The command has no key arguments".into()));
        }
        r.array(keys.len());
        keys.iter().for_each(|key| r.bulk(key));
    } else if args::is(sub, "DOCS") {
        let specs: Vec<&Spec> = named(&a[2..]).into_iter().flatten().collect();
        r.map(specs.len());
        for spec in specs {
            r.bulk(spec.name.to_ascii_lowercase().as_bytes());
            r.map(3);
            r.bulk(b"summary");
            r.bulk(spec.summary.as_bytes());
            r.bulk(b"since");
            r.bulk(b"0.1.0");
            r.bulk(b"group");
            r.bulk(spec.group.as_bytes());
        }
    } else {
        return Err(unknown_subcommand("COMMAND", sub));
    }
    Ok(())
}

/// One COMMAND INFO entry: name, arity, flags, first key, last key, step.
fn command_info(spec: &Spec, r: &mut Reply<'_>) {
    r.array(6);
    r.bulk(spec.name.to_ascii_lowercase().as_bytes());
    r.int(i64::from(spec.arity));
    let flags = [
        (true, if spec.write { "write" } else { "readonly" }),
        (spec.denyoom, "denyoom"),
        (spec.noscript, "noscript"),
        (spec.busy == table::Busy::Runs, "allow_busy"),
        (spec.find_keys.is_some(), "movablekeys"),
    ];
    r.set(flags.iter().filter(|(set, _)| *set).count());
    for (_, flag) in flags.iter().filter(|(set, _)| *set) {
        r.simple(flag);
    }
    r.int(spec.keys.first);
    r.int(spec.keys.last);
    r.int(spec.keys.step);
}

/// CONFIG GET pattern... | CONFIG SET (refused: settings come from the file and flags) |
/// CONFIG RESETSTAT
/// Unix seconds of the last snapshot written or loaded (0 if none).
pub(super) fn last_save(state: &ServerState) -> i64 {
    snapshot_time(state).and_then(|t| t.duration_since(UNIX_EPOCH).ok()).map_or(0, |d| d.as_secs() as i64)
}

/// When the last snapshot was written or loaded (its file's modification time).
fn snapshot_time(state: &ServerState) -> Option<std::time::SystemTime> {
    let store = state.store().read();
    let Some((Some(snapshot), _)) = store.as_ref().map(|s| s.snapshot_state()) else { return None };
    std::fs::metadata(&snapshot.path).and_then(|m| m.modified()).ok()
}

/// Redis' `rdb_changes_since_last_save`: changes to keys since the last snapshot (counted
/// from when INFO first saw that snapshot).
pub(super) fn changes_since_save(state: &ServerState) -> u64 {
    let changes = state.db().keyspaces().changes();
    let saved = snapshot_time(state);
    let mut mark = state.stats.save_mark.lock();
    if mark.0 != saved {
        *mark = (saved, changes);
    }
    changes - mark.1
}

/// SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE] [ABORT]: stops the server as SIGTERM does (the log
/// is closed, so every acknowledged write is on disk; the snapshot options have nothing
/// more to keep). Like Redis, it answers nothing: the connection closes as the server
/// stops. ABORT has no shutdown to abort (a stop is never delayed). While a script keeps
/// the server busy only SHUTDOWN NOSAVE runs, and it drops the script (`server::serve`).
pub fn shutdown(state: &Arc<ServerState>, session: &mut Session, a: &[&[u8]], _: &mut Reply<'_>) -> CmdResult {
    let mut nosave = false;
    for word in &a[1..] {
        match word.to_ascii_uppercase().as_slice() {
            b"NOSAVE" => nosave = true,
            b"SAVE" | b"NOW" | b"FORCE" => {}
            b"ABORT" => return Err(CmdError("ERR No shutdown in progress.".into())),
            _ => return Err(syntax()),
        }
    }
    // While a script keeps the server busy, only NOSAVE stops it (Redis' rule: the script
    // is dropped, half done if it wrote).
    if let super::Pass::Busy(busy) = session.gate
        && !nosave
    {
        return Err(CmdError(busy.into()));
    }
    tracing::info!("SHUTDOWN requested by a client");
    state.shutdown.notify_one();
    Ok(())
}
