//! Generic key commands: DEL, EXISTS, the EXPIRE family, TTL, TYPE, KEYS, SCAN, RENAME,
//! COPY, MOVE, SWAPDB, SORT and SORT_RO, DBSIZE, FLUSHDB and FLUSHALL.
//!
//! Owns: turning RESP arguments into `KvOps` calls for the `generic` group and shaping
//! their replies, one function per command (or per family of Redis forms sharing a body),
//! each generic over `KvOps` so the table can hold it for a keyspace and for EXEC's locked
//! block; FLUSHALL, MOVE, SWAPDB and COPY ... DB, which reach other keyspaces, take the server
//! state and the session instead.
//! Never: hold semantics of its own, write a reply before the call has succeeded, or
//! decide anything by a command's name (the table chose this function).

use super::args::{self, CmdError, CmdResult, syntax};
use super::{Blocks, Session};
use crate::resp::reply::Reply;
use crate::state::ServerState;
use hotset_core::kv::{ExpireCondition, KvError, KvOps, RestoreOptions, SortOptions};
use hotset_core::{Acks, Durability};
use std::sync::Arc;

/// Keys SCAN returns per call when COUNT is not given (Redis' default).
const SCAN_COUNT_DEFAULT: usize = 10;

/// DEL and UNLINK (the same here: memory is freed at once).
pub fn del<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    r.int(kv.del(&a[1..])? as i64);
    Ok(())
}

pub fn exists<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    r.int(kv.exists(&a[1..])? as i64);
    Ok(())
}

pub fn ttl<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    r.int(seconds(kv.ttl_ms(a[1])?));
    Ok(())
}

pub fn pttl<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    r.int(kv.ttl_ms(a[1])?);
    Ok(())
}

pub fn expiretime<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    r.int(seconds(kv.expire_time_ms(a[1])?));
    Ok(())
}

pub fn pexpiretime<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    r.int(kv.expire_time_ms(a[1])?);
    Ok(())
}

pub fn persist<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    r.int(i64::from(kv.persist(a[1])?));
    Ok(())
}

/// TYPE key
pub fn key_type<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    r.simple(kv.key_type(a[1])?);
    Ok(())
}

pub fn keys<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    let keys = kv.keys(a[1])?;
    r.array(keys.len());
    keys.iter().for_each(|k| r.bulk(k));
    Ok(())
}

/// SORT's options after the key, in Redis' order of checks; the STORE destination (the
/// last one given) unless `readonly` (SORT_RO, where STORE is a syntax error).
fn sort_options<'a>(a: &[&'a [u8]], readonly: bool) -> Result<(SortOptions, Option<&'a [u8]>), CmdError> {
    let (mut options, mut store) = (SortOptions::default(), None);
    let mut at = 2;
    while at < a.len() {
        let (word, left) = (a[at], a.len() - at - 1);
        if args::is(word, "ASC") {
            options.desc = false;
        } else if args::is(word, "DESC") {
            options.desc = true;
        } else if args::is(word, "ALPHA") {
            options.alpha = true;
        } else if args::is(word, "LIMIT") && left >= 2 {
            options.limit = Some((args::int(a[at + 1])?, args::int(a[at + 2])?));
            at += 2;
        } else if !readonly && args::is(word, "STORE") && left >= 1 {
            store = Some(a[at + 1]);
            at += 1;
        } else if args::is(word, "BY") && left >= 1 {
            options.by = Some(a[at + 1].to_vec());
            at += 1;
        } else if args::is(word, "GET") && left >= 1 {
            options.gets.push(a[at + 1].to_vec());
            at += 1;
        } else {
            return Err(syntax());
        }
        at += 1;
    }
    Ok((options, store))
}

fn sort_command<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>, readonly: bool) -> CmdResult {
    let (mut options, store) = sort_options(a, readonly)?;
    // A set has no order of its own: for a script, BY <constant> sorts it by its members
    // (Redis' rule), so what a script does never depends on that order.
    if crate::scripting::called_by_script()
        && options.by.as_deref().is_some_and(|by| !by.contains(&b'*'))
        && kv.key_type(a[1])? == "set"
    {
        options.by = None;
        options.alpha = true;
    }
    if let Some(dst) = store {
        r.int(kv.sort_store(a[1], dst, &options)? as i64);
        return Ok(());
    }
    let items = kv.sort(a[1], &options)?;
    r.array(items.len());
    items.iter().for_each(|item| r.bulk_or_null(item.as_deref()));
    Ok(())
}

/// SORT key [BY pattern] [LIMIT offset count] [GET pattern ...] [ASC|DESC] [ALPHA]
/// [STORE destination].
pub fn sort<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    sort_command(kv, a, r, false)
}

/// SORT_RO: SORT without STORE.
pub fn sort_ro<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    sort_command(kv, a, r, true)
}

/// DUMP key: Hotset's payload of the value (see hotset-kv's `types/dump.rs`), or null.
pub fn dump<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    r.bulk_or_null(kv.dump(a[1])?.as_deref());
    Ok(())
}

/// RESTORE key ttl payload [REPLACE] [ABSTTL] [IDLETIME seconds] [FREQ frequency]
/// (IDLETIME is kept under an LRU policy, FREQ under an LFU one, as in Redis).
pub fn restore<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    let ttl = args::int(a[2])?;
    let (mut options, mut at) = (RestoreOptions::default(), 4);
    while at < a.len() {
        let word = a[at];
        if args::is(word, "REPLACE") {
            options.replace = true;
        } else if args::is(word, "ABSTTL") {
            options.absolute = true;
        } else if args::is(word, "IDLETIME") && at + 1 < a.len() {
            let idle = u64::try_from(args::int(a[at + 1])?);
            options.idle_secs = Some(idle.map_err(|_| CmdError("ERR Invalid IDLETIME value, must be >= 0".into()))?);
            at += 1;
        } else if args::is(word, "FREQ") && at + 1 < a.len() {
            let freq = u8::try_from(args::int(a[at + 1])?);
            options.freq = Some(freq.map_err(|_| CmdError("ERR Invalid FREQ value, must be >= 0 and <= 255".into()))?);
            at += 1;
        } else {
            return Err(syntax());
        }
        at += 1;
    }
    if options.idle_secs.is_some() && options.freq.is_some() {
        // Redis takes one of the two.
        return Err(syntax());
    }
    kv.restore(a[1], ttl, a[3], options)?;
    r.ok();
    Ok(())
}

/// OBJECT ENCODING|REFCOUNT|IDLETIME|FREQ key, OBJECT HELP. Hotset shares no values
/// between keys (REFCOUNT is 1). IDLETIME answers under an LRU policy, FREQ under an LFU
/// one, and each is refused under the other, in Redis' words.
pub fn object<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    let sub = a[1];
    if args::is(sub, "HELP") && a.len() == 2 {
        let lines = [
            "OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "ENCODING <key>",
            "    Return the kind of internal representation used in order to store the value",
            "    associated with a <key>.",
            "FREQ <key>",
            "    Return the access frequency index of the <key>.",
            "IDLETIME <key>",
            "    Return the idle time of the <key>, that is the approximated number of",
            "    seconds elapsed since the last access to the key.",
            "REFCOUNT <key>",
            "    Return the number of references of the value associated with the specified",
            "    <key>.",
            "HELP",
            "    Print this help.",
        ];
        args::help(r, &lines);
        return Ok(());
    }
    let [_, _, key] = a else { return Err(args::unknown_subcommand("OBJECT", sub)) };
    let encoding = kv.object_encoding(key)?;
    let Some(encoding) = encoding else {
        r.null();
        return Ok(());
    };
    if args::is(sub, "ENCODING") {
        r.bulk(encoding.as_bytes());
    } else if args::is(sub, "REFCOUNT") {
        r.int(1);
    } else if args::is(sub, "IDLETIME") || args::is(sub, "FREQ") {
        let lfu = hotset_core::kv::lfu_mode();
        let Some(access) = kv.object_access(key)? else {
            r.null();
            return Ok(());
        };
        match (args::is(sub, "FREQ"), lfu) {
            (false, false) => r.int(access.idle_secs as i64),
            (true, true) => r.int(i64::from(access.freq)),
            (false, true) => return Err(CmdError(
                "ERR An LFU maxmemory policy is selected, idle time not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust."
                    .into(),
            )),
            (true, false) => return Err(CmdError(
                "ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust."
                    .into(),
            )),
        }
    } else {
        return Err(args::unknown_subcommand("OBJECT", sub));
    }
    Ok(())
}

pub fn rename<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    kv.rename(a[1], a[2])?;
    r.ok();
    Ok(())
}

pub fn renamenx<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    r.int(i64::from(kv.rename_nx(a[1], a[2])?));
    Ok(())
}

/// COPY's options: REPLACE, and the DB argument when given.
fn copy_options<'a>(a: &[&'a [u8]]) -> Result<(bool, Option<&'a [u8]>), CmdError> {
    let (mut replace, mut db) = (false, None);
    let mut at = 3;
    while at < a.len() {
        if args::is(a[at], "REPLACE") {
            replace = true;
            at += 1;
        } else if args::is(a[at], "DB") && at + 1 < a.len() {
            db = Some(a[at + 1]);
            at += 2;
        } else {
            return Err(args::syntax());
        }
    }
    Ok((replace, db))
}

/// COPY source destination [REPLACE]: 1 when copied. The form with DB runs in
/// `copy_to_keyspace` (or `copy_in_txn` inside EXEC), which reach the other keyspace.
pub fn copy<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    let (replace, db) = copy_options(a)?;
    if db.is_some() {
        return Err(CmdError("ERR COPY with DB reached a single keyspace".into()));
    }
    if a[1] == a[2] {
        return Err(CmdError("ERR source and destination objects are the same".into()));
    }
    r.int(i64::from(kv.copy(a[1], a[2], replace)?));
    Ok(())
}

/// COPY ... DB n: into keyspace `n` (the selected one too, as a plain COPY).
pub fn copy_to_keyspace(
    state: &Arc<ServerState>,
    session: &mut Session,
    a: &[&[u8]],
    r: &mut Reply<'_>,
) -> Option<CmdResult> {
    let (replace, db) = match copy_options(a) {
        Ok((replace, Some(db))) => (replace, db),
        Ok((_, None)) => return None,
        Err(error) => return Some(Err(error)),
    };
    Some((|| {
        let target = database(state, db)?;
        let durability = Durability::Collect(&session.acks);
        let copied = if target == session.keyspace_name {
            if a[1] == a[2] {
                return Err(CmdError("ERR source and destination objects are the same".into()));
            }
            session.keyspace.writes(durability).copy(a[1], a[2], replace)?
        } else {
            let dest = state.db().keyspaces().get_or_create(&target);
            let copied = session.keyspace.copy_key_to(a[1], &dest, a[2], replace, durability)?;
            if copied {
                state.blocking.wake(&target, [a[2]]);
            }
            copied
        };
        r.int(i64::from(copied));
        Ok(())
    })())
}

/// COPY's database argument, when given (EXEC locks its keyspace).
pub fn copy_database<'a>(a: &[&'a [u8]]) -> Vec<&'a [u8]> {
    copy_options(a).ok().and_then(|(_, db)| db).into_iter().collect()
}

/// COPY ... DB n inside EXEC, on the blocks of both keyspaces.
pub fn copy_in_txn(state: &ServerState, blocks: &Blocks<'_, '_>, a: &[&[u8]], r: &mut Reply<'_>) -> Option<CmdResult> {
    let (replace, db) = match copy_options(a) {
        Ok((replace, Some(db))) => (replace, db),
        Ok((_, None)) => return None,
        Err(error) => return Some(Err(error)),
    };
    Some((|| {
        let target = database(state, db)?;
        let (current, block) = blocks.current;
        let copied = if target == current {
            if a[1] == a[2] {
                return Err(CmdError("ERR source and destination objects are the same".into()));
            }
            block.copy(a[1], a[2], replace)?
        } else {
            let dest = blocks.named(&target).expect("EXEC locks every keyspace its queue names");
            block.copy_key_to(a[1], dest, a[2], replace)?
        };
        r.int(i64::from(copied));
        Ok(())
    })())
}

/// MOVE's database argument.
pub fn move_database<'a>(a: &[&'a [u8]]) -> Vec<&'a [u8]> {
    a.get(2).copied().into_iter().collect()
}

/// MOVE inside EXEC, on the blocks of both keyspaces.
pub fn move_in_txn(state: &ServerState, blocks: &Blocks<'_, '_>, a: &[&[u8]], r: &mut Reply<'_>) -> Option<CmdResult> {
    Some((|| {
        let target = database(state, a[2])?;
        let (current, block) = blocks.current;
        if target == current {
            return Err(CmdError("ERR source and destination objects are the same".into()));
        }
        let dest = blocks.named(&target).expect("EXEC locks every keyspace its queue names");
        r.int(i64::from(block.move_key_to(a[1], dest)?));
        Ok(())
    })())
}

/// SWAPDB's two database arguments.
pub fn swapdb_databases<'a>(a: &[&'a [u8]]) -> Vec<&'a [u8]> {
    a[1..].to_vec()
}

/// SWAPDB inside EXEC, on the blocks of both keyspaces (later commands of the transaction
/// see the swapped contents).
pub fn swapdb_in_txn(
    state: &ServerState,
    blocks: &Blocks<'_, '_>,
    a: &[&[u8]],
    r: &mut Reply<'_>,
) -> Option<CmdResult> {
    Some((|| {
        let (first, second) = swapdb_names(state, a)?;
        if first != second {
            let named = |name: &str| blocks.named(name).expect("EXEC locks every keyspace its queue names");
            named(&first).swap_with(named(&second))?;
        }
        r.ok();
        Ok(())
    })())
}

/// MOVE key db: 1 when `key` moved to keyspace `db` (with its deadline); 0 when it is
/// not in the selected keyspace or is in `db` already.
pub fn move_key(state: &Arc<ServerState>, session: &mut Session, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    let target = database(state, a[2])?;
    if target == session.keyspace_name {
        return Err(CmdError("ERR source and destination objects are the same".into()));
    }
    let dest = state.db().keyspaces().get_or_create(&target);
    let moved = session.keyspace.move_key(a[1], &dest, Durability::Collect(&session.acks))?;
    if moved {
        state.blocking.wake(&target, [a[1]]);
    }
    r.int(i64::from(moved));
    Ok(())
}

/// SWAPDB index1 index2: the two keyspaces exchange their contents for every client.
pub fn swapdb(state: &Arc<ServerState>, session: &mut Session, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    let (first, second) = swapdb_names(state, a)?;
    if first != second {
        let spaces = state.db().keyspaces();
        let (one, other) = (spaces.get_or_create(&first), spaces.get_or_create(&second));
        one.swap_with(&other, Durability::Collect(&session.acks))?;
        // Clients blocked in either may find what they wait for now.
        state.blocking.wake_everyone(Some(&first));
        state.blocking.wake_everyone(Some(&second));
    }
    r.ok();
    Ok(())
}

/// SWAPDB's two keyspaces, with Redis' errors.
fn swapdb_names(state: &ServerState, a: &[&[u8]]) -> Result<(String, String), CmdError> {
    let index = |arg: &[u8], which: &str| {
        args::int(arg).map_err(|_| CmdError(format!("ERR invalid {which} DB index")))?;
        database(state, arg)
    };
    Ok((index(a[1], "first")?, index(a[2], "second")?))
}

/// A database number as MOVE, COPY and SWAPDB take it (Redis' errors): the keyspace it
/// names.
pub fn database(state: &ServerState, db: &[u8]) -> Result<String, CmdError> {
    match args::int(db)? {
        n if n >= 0 && (n as usize) < state.config.databases => Ok(n.to_string()),
        _ => Err(CmdError("ERR DB index is out of range".into())),
    }
}

pub fn randomkey<K: KvOps>(kv: &K, _: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    r.bulk_or_null(kv.random_key()?.as_deref());
    Ok(())
}

pub fn dbsize<K: KvOps>(kv: &K, _: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    r.int(kv.dbsize()? as i64);
    Ok(())
}

pub fn flushdb<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    flush_mode(a)?;
    kv.flush()?;
    r.ok();
    Ok(())
}

/// FLUSHALL: every keyspace, each flushed under its own locks (EXEC refuses it, as its
/// block locks one keyspace only).
pub fn flushall(state: &ServerState, acks: &Acks, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    flush_mode(a)?;
    for name in state.db().keyspaces().list() {
        if let Some(space) = state.db().keyspaces().get(&name) {
            space.writes(Durability::Collect(acks)).flush()?;
        }
    }
    r.ok();
    Ok(())
}

pub fn expire<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    set_expiry(kv, a, r, Expiry { command: "expire", unit_ms: 1000, absolute: false })
}

pub fn pexpire<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    set_expiry(kv, a, r, Expiry { command: "pexpire", unit_ms: 1, absolute: false })
}

pub fn expireat<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    set_expiry(kv, a, r, Expiry { command: "expireat", unit_ms: 1000, absolute: true })
}

pub fn pexpireat<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    set_expiry(kv, a, r, Expiry { command: "pexpireat", unit_ms: 1, absolute: true })
}

/// TTL-style milliseconds as seconds: negative codes (-1 no expiry, -2 no key) kept, a
/// remaining time rounded to the nearest second as Redis does.
fn seconds(ms: i64) -> i64 {
    if ms < 0 { ms } else { (ms + 500) / 1000 }
}

/// FLUSHDB / FLUSHALL [ASYNC|SYNC]: both run at once here (memory is freed in place).
fn flush_mode(a: &[&[u8]]) -> Result<(), CmdError> {
    match a {
        [_] => Ok(()),
        [_, mode] if args::is(mode, "ASYNC") || args::is(mode, "SYNC") => Ok(()),
        _ => Err(syntax()),
    }
}

/// How one form of EXPIRE reads its amount.
struct Expiry {
    /// The lower-case name its errors give.
    command: &'static str,
    /// Milliseconds per unit of the amount.
    unit_ms: i64,
    /// Whether the amount is a Unix time rather than a time to live.
    absolute: bool,
}

/// EXPIRE key seconds [NX | XX | GT | LT]... and its millisecond / absolute variants:
/// options combine as Redis allows (XX with GT or LT; NX alone; not GT with LT).
fn set_expiry<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>, expiry: Expiry) -> CmdResult {
    let (mut nx, mut xx, mut gt, mut lt) = (false, false, false, false);
    for word in &a[3..] {
        let flag = if args::is(word, "NX") {
            &mut nx
        } else if args::is(word, "XX") {
            &mut xx
        } else if args::is(word, "GT") {
            &mut gt
        } else if args::is(word, "LT") {
            &mut lt
        } else {
            return Err(CmdError(format!("ERR Unsupported option {}", String::from_utf8_lossy(word))));
        };
        *flag = true;
    }
    if nx && (xx || gt || lt) {
        return Err(CmdError("ERR NX and XX, GT or LT options at the same time are not compatible".into()));
    }
    if gt && lt {
        return Err(CmdError("ERR GT and LT options at the same time are not compatible".into()));
    }
    // GT already needs an expiry, so XX adds nothing to it; XX with LT does.
    let condition = match (nx, xx, gt, lt) {
        (true, ..) => Some(ExpireCondition::Nx),
        (_, true, _, true) => Some(ExpireCondition::XxLt),
        (_, _, true, _) => Some(ExpireCondition::Gt),
        (_, _, _, true) => Some(ExpireCondition::Lt),
        (_, true, ..) => Some(ExpireCondition::Xx),
        _ => None,
    };
    let amount = args::int(a[2])?;
    let command = expiry.command;
    let invalid = || CmdError(KvError::InvalidExpireTime { command }.to_string());
    let ms = amount.checked_mul(expiry.unit_ms).ok_or_else(invalid)?;
    let applied =
        if expiry.absolute { kv.expire_at_ms_if(a[1], ms, condition) } else { kv.expire_in_ms_if(a[1], ms, condition) }
            .map_err(|error| match error {
                KvError::InvalidExpireTime { .. } => invalid(),
                other => other.into(),
            })?;
    r.int(i64::from(applied));
    Ok(())
}

/// SCAN cursor [MATCH pattern] [COUNT n] [TYPE type]
pub fn scan<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    let cursor = cursor(a[1])?;
    let options = ScanOptions::parse(&a[2..])?;
    let (next, keys) = kv.scan(cursor, options.pattern, options.count)?;
    let keys: Vec<&Vec<u8>> = match options.kind {
        None => keys.iter().collect(),
        Some(kind) => {
            let mut kept = Vec::with_capacity(keys.len());
            for key in &keys {
                if kv.key_type(key)?.as_bytes().eq_ignore_ascii_case(kind) {
                    kept.push(key);
                }
            }
            kept
        }
    };
    r.array(2);
    r.bulk(next.to_string().as_bytes());
    r.array(keys.len());
    keys.iter().for_each(|k| r.bulk(k));
    Ok(())
}

/// A SCAN cursor: an unsigned 64-bit number.
pub fn cursor(arg: &[u8]) -> Result<u64, CmdError> {
    std::str::from_utf8(arg).ok().and_then(|t| t.parse().ok()).ok_or_else(|| CmdError("ERR invalid cursor".into()))
}

/// The options of SCAN and HSCAN.
pub struct ScanOptions<'a> {
    pub pattern: Option<&'a [u8]>,
    pub count: usize,
    pub kind: Option<&'a [u8]>,
}

impl<'a> ScanOptions<'a> {
    pub fn parse(a: &[&'a [u8]]) -> Result<ScanOptions<'a>, CmdError> {
        let mut options = ScanOptions { pattern: None, count: SCAN_COUNT_DEFAULT, kind: None };
        let mut at = 0;
        while at < a.len() {
            let value = *a.get(at + 1).ok_or_else(syntax)?;
            if args::is(a[at], "MATCH") {
                options.pattern = Some(value);
            } else if args::is(a[at], "COUNT") {
                options.count = args::count(value)?;
                if options.count == 0 {
                    return Err(syntax());
                }
            } else if args::is(a[at], "TYPE") {
                options.kind = Some(value);
            } else {
                return Err(syntax());
            }
            at += 2;
        }
        Ok(options)
    }
}
