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
use super::args::{self, CmdError, CmdResult, syntax};
use super::table::{self, COMMANDS, Spec};
use crate::resp::reply::{Protocol, Reply};
use crate::state::ServerState;
use hotset_ops::Request;
use std::fmt::Write as _;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{SystemTime, UNIX_EPOCH};

/// The Redis version whose command semantics this server follows, reported where
/// clients look for one (HELLO, INFO `redis_version`) to decide which commands to use.
pub const REDIS_COMPAT_VERSION: &str = "7.2.0";

/// Longest keyspace name SELECT accepts.
const KEYSPACE_NAME_MAX: usize = 64;

pub fn ping(_: &Arc<ServerState>, _: &mut Session, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
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

/// RESET: the connection as it was after connecting (a transaction discarded, RESP2,
/// keyspace 0, TEXT errors, no name, unauthenticated when a password is set).
pub fn reset(state: &Arc<ServerState>, session: &mut Session, _: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    session.multi = None;
    session.errors_json = false;
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
    r.verbatim(&info_text(state, a.get(1).copied()));
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

/// SELECT n (a keyspace by number, 0 .. databases-1) or SELECT name (any keyspace by
/// name, created on first use: one server serves one keyspace per domain).
fn select_keyspace(state: &ServerState, session: &mut Session, target: &[u8]) -> CmdResult {
    let name = match args::int(target) {
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
    };
    if name != session.keyspace_name {
        session.keyspace = state.db().keyspaces().get_or_create(&name);
        session.keyspace_name = name.clone();
        state.update_client(session.id, |info| info.keyspace = name);
    }
    Ok(())
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

/// CLIENT SETNAME | GETNAME | ID | INFO | LIST | SETINFO
pub fn client(state: &Arc<ServerState>, session: &mut Session, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    let sub = a[1].to_ascii_uppercase();
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
            let line = state.clients.lock().get(&session.id).map(client_line).unwrap_or_default();
            r.verbatim(&line);
        }
        (b"LIST", 2) => {
            let list: String = state.clients.lock().values().map(client_line).collect();
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
        (b"SETNAME" | b"GETNAME" | b"ID" | b"INFO" | b"LIST" | b"SETINFO", _) => {
            return Err(CmdError(format!(
                "ERR wrong number of arguments for 'client|{}' command",
                String::from_utf8_lossy(&sub).to_lowercase()
            )));
        }
        _ => return Err(unknown_subcommand("CLIENT", a[1])),
    }
    Ok(())
}

fn unknown_subcommand(command: &str, sub: &[u8]) -> CmdError {
    CmdError(format!(
        "ERR unknown subcommand '{}'. Try {command} HELP.",
        String::from_utf8_lossy(&sub[..sub.len().min(128)])
    ))
}

/// One CLIENT LIST line, in Redis' `key=value` form.
fn client_line(info: &crate::state::ClientInfo) -> String {
    format!(
        "id={} addr={} laddr= fd=0 name={} age={} idle=0 flags=N db={} sub=0 psub=0 ssub=0 multi=-1 qbuf=0 qbuf-free=0 argv-mem=0 multi-mem=0 rbs=0 rbp=0 obl=0 oll=0 omem=0 tot-mem=0 events=r cmd=client|info user=default redir=-1 resp={} lib-name={} lib-ver={}\n",
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

/// COMMAND [COUNT | DOCS [name...] | INFO [name...] | LIST]
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
    r.set(1);
    r.simple(if spec.write { "write" } else { "readonly" });
    r.int(spec.keys.first);
    r.int(spec.keys.last);
    r.int(spec.keys.step);
}

/// CONFIG GET pattern... | CONFIG SET (refused: settings come from the file and flags) |
/// CONFIG RESETSTAT
pub fn config(state: &Arc<ServerState>, _: &mut Session, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    let sub = a[1];
    if args::is(sub, "GET") {
        if a.len() < 3 {
            return Err(CmdError("ERR wrong number of arguments for 'config|get' command".into()));
        }
        let params = config_params(state);
        let matched: Vec<&(&str, String)> = params
            .iter()
            .filter(|(name, _)| {
                a[2..].iter().any(|pattern| hotset_core::kv::glob_match(&pattern.to_ascii_lowercase(), name.as_bytes()))
            })
            .collect();
        r.map(matched.len());
        for (name, value) in matched {
            r.bulk(name.as_bytes());
            r.bulk(value.as_bytes());
        }
    } else if args::is(sub, "SET") {
        return Err(CmdError(
            "ERR CONFIG SET is not supported: settings come from the config file and flags (restart to change them)"
                .into(),
        ));
    } else if args::is(sub, "RESETSTAT") {
        let stats = &state.stats;
        for counter in [
            &stats.commands,
            &stats.protocol_errors,
            &stats.batches,
            &stats.connections_received,
            &stats.connections_rejected,
        ] {
            counter.store(0, Ordering::Relaxed);
        }
        r.ok();
    } else {
        return Err(unknown_subcommand("CONFIG", sub));
    }
    Ok(())
}

/// The parameters CONFIG GET knows, with Redis' names where one exists.
fn config_params(state: &ServerState) -> Vec<(&'static str, String)> {
    let config = &state.config;
    let appendfsync = match config.fsync.as_str() {
        "periodic" => "everysec",
        other => other,
    };
    vec![
        ("appendfsync", appendfsync.to_string()),
        ("appendonly", "yes".into()),
        ("bind", config.bind.clone()),
        ("databases", config.databases.to_string()),
        ("dir", config.data.display().to_string()),
        ("maxclients", config.limits.max_clients.to_string()),
        ("maxmemory", "0".into()),
        ("port", config.resp_port.to_string()),
        ("proto-max-bulk-len", config.limits.max_bulk_bytes.to_string()),
        ("requirepass", if config.password.is_some() { "********".into() } else { String::new() }),
        ("save", String::new()),
        ("timeout", "0".into()),
    ]
}

/// INFO [section]: `# Section` headers and `key:value` lines, as Redis writes them.
fn info_text(state: &ServerState, section: Option<&[u8]>) -> String {
    let wanted = |name: &str| {
        section.is_none_or(|s| {
            args::is(s, name) || args::is(s, "all") || args::is(s, "everything") || args::is(s, "default")
        })
    };
    let mut text = String::new();
    let stats = &state.stats;
    if wanted("server") {
        let _ = write!(
            text,
            "# Server\r\nredis_version:{REDIS_COMPAT_VERSION}\r\nhotset_version:{}\r\nredis_mode:standalone\r\nos:{}\r\narch_bits:64\r\nprocess_id:{}\r\ntcp_port:{}\r\nuptime_in_seconds:{}\r\n\r\n",
            env!("CARGO_PKG_VERSION"),
            std::env::consts::OS,
            std::process::id(),
            state.config.resp_port,
            state.started.elapsed().as_secs(),
        );
    }
    if wanted("clients") {
        let _ = write!(
            text,
            "# Clients\r\nconnected_clients:{}\r\nmaxclients:{}\r\n\r\n",
            state.connected_clients(),
            state.config.limits.max_clients
        );
    }
    if wanted("memory") {
        let keyspaces: usize = state
            .db()
            .keyspaces()
            .list()
            .iter()
            .filter_map(|n| state.db().keyspaces().get(n))
            .map(|k| k.memory_bytes())
            .sum();
        // Documents and their indexes are most of what a server holds: used_memory counts
        // them too (it once counted key-value keys only: 15 KB beside a 75 MB namespace).
        let namespaces: usize = state
            .db()
            .namespace_names()
            .iter()
            .filter_map(|n| state.db().describe(n).ok())
            .map(|i| i.memory_bytes)
            .sum();
        let used = keyspaces + namespaces;
        let _ = write!(
            text,
            "# Memory\r\nused_memory:{used}\r\nused_memory_namespaces:{namespaces}\r\nused_memory_keyspaces:{keyspaces}\r\nmaxmemory:0\r\n\r\n"
        );
    }
    if wanted("persistence") {
        let store = state.store().read();
        if let Some(store) = store.as_ref() {
            let wal = store.wal_stats();
            let (snapshot, snapshot_error) = store.snapshot_state();
            let _ = write!(
                text,
                "# Persistence\r\nloading:0\r\naof_enabled:1\r\nappendfsync:{}\r\nwal_next_lsn:{}\r\nwal_durable_lsn:{}\r\nwal_bytes_written:{}\r\nwal_fsyncs:{}\r\nwal_segments:{}\r\nwal_failed:{}\r\nrdb_last_save_time:{}\r\nlast_snapshot_bytes:{}\r\nlast_snapshot_error:{}\r\n\r\n",
                state.config.fsync,
                wal.next_lsn,
                wal.durable_lsn,
                wal.bytes_written,
                wal.fsyncs,
                wal.segments,
                wal.failed.as_deref().unwrap_or(""),
                last_save(state),
                snapshot.map_or(0, |s| s.bytes),
                snapshot_error.unwrap_or_default().replace(['\r', '\n'], " "),
            );
        }
    }
    if wanted("stats") {
        let _ = write!(
            text,
            "# Stats\r\ntotal_connections_received:{}\r\nrejected_connections:{}\r\ntotal_commands_processed:{}\r\nprotocol_errors:{}\r\nrequest_batches:{}\r\ntls_handshake_failures:{}\r\n\r\n",
            stats.connections_received.load(Ordering::Relaxed),
            stats.connections_rejected.load(Ordering::Relaxed),
            stats.commands.load(Ordering::Relaxed),
            stats.protocol_errors.load(Ordering::Relaxed),
            stats.batches.load(Ordering::Relaxed),
            state.tls_handshake_failures(),
        );
    }
    if wanted("sources") {
        // Live-sync sources: one line each, as Redis writes its replicas.
        text.push_str("# Sources\r\n");
        for status in state.syncs.statuses() {
            let state_name = serde_json::to_value(status.state).ok().and_then(|v| v.as_str().map(str::to_string));
            let _ = write!(
                text,
                "source_{}:state={},position={},lag_ms={},lag_bytes={},pending_events={},transactions={}\r\n",
                status.name,
                state_name.unwrap_or_default(),
                status.position.as_deref().unwrap_or("-"),
                status.lag_ms.map_or("-".to_string(), |lag| lag.to_string()),
                status.lag_bytes.map_or("-".to_string(), |lag| lag.to_string()),
                status.pending_events,
                status.transactions,
            );
        }
        text.push_str("\r\n");
    }
    if wanted("keyspace") {
        text.push_str("# Keyspace\r\n");
        for name in state.db().keyspaces().list() {
            if let Some(space) = state.db().keyspaces().get(&name) {
                if space.is_empty() {
                    continue;
                }
                // Numbered keyspaces print as Redis' db<n>; named ones under their name.
                let label = if name.bytes().all(|b| b.is_ascii_digit()) { format!("db{name}") } else { name };
                let _ = write!(text, "{label}:keys={},expires={},avg_ttl=0\r\n", space.len(), space.volatile_len());
            }
        }
    }
    text
}

/// Unix seconds of the last snapshot written or loaded (0 if none).
fn last_save(state: &ServerState) -> i64 {
    let store = state.store().read();
    let Some((Some(snapshot), _)) = store.as_ref().map(|s| s.snapshot_state()) else { return 0 };
    std::fs::metadata(&snapshot.path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_secs() as i64)
}
