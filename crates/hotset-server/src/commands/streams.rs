//! Stream commands: XADD, XLEN, XRANGE, XREVRANGE, XDEL, XTRIM, XSETID, XGROUP and its
//! subcommands, XACK, XPENDING, XCLAIM, XAUTOCLAIM, XINFO, and the parsing of XREAD and
//! XREADGROUP (which `crate::blocking` runs, since both may wait).
//!
//! Owns: turning RESP arguments into `KvOps` calls for the `stream` group, with Redis
//! 7.0's option parsing, id syntax and error texts, and shaping the replies (an entry is
//! `[id, [field, value, ...]]`; XREAD answers a map in RESP3). Never: hold semantics of
//! its own, write a reply before the call has succeeded, or decide anything by a
//! command's name.

use super::args::{self, CmdError, CmdResult};
use crate::resp::reply::{Protocol, Reply};
use hotset_core::kv::{
    ClaimDelivery, Claimed, GroupInfo, KvOps, MaybeEntry, PendingInfo, StreamEntry, StreamHead, StreamId, Trim,
    TrimArgs, XAdd, XAddId, XClaimOptions, XFrom, XGroupFrom,
};

fn invalid_id() -> CmdError {
    CmdError("ERR Invalid stream ID specified as stream command argument".into())
}

/// An unsigned decimal as Redis' `string2ull` reads it (through `strtoull` when it is
/// not a canonical integer: leading spaces and a `+` pass).
fn ull(text: &[u8]) -> Option<u64> {
    let trimmed = text.trim_ascii_start();
    let digits = trimmed.strip_prefix(b"+").unwrap_or(trimmed);
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(digits).ok()?.parse().ok()
}

/// A stream id argument: `ms-seq`, or `ms` with `missing_seq` for the sequence; `-` and
/// `+` unless `strict`. (`ms-*` is XADD's own, see `xadd_id`.)
pub fn stream_id(arg: &[u8], missing_seq: u64, strict: bool) -> Result<StreamId, CmdError> {
    if arg.len() > 127 {
        return Err(invalid_id());
    }
    match arg {
        b"-" if !strict => return Ok(StreamId::MIN),
        b"+" if !strict => return Ok(StreamId::MAX),
        _ => {}
    }
    let (ms, seq) = match arg.iter().position(|&b| b == b'-') {
        Some(dash) => (ull(&arg[..dash]), ull(&arg[dash + 1..])),
        None => (ull(arg), Some(missing_seq)),
    };
    match (ms, seq) {
        (Some(ms), Some(seq)) => Ok(StreamId::new(ms, seq)),
        _ => Err(invalid_id()),
    }
}

/// A range bound: an id, `-`/`+`, or `(id` (exclusive, moved to the next id inward).
fn interval_id(arg: &[u8], missing_seq: u64, start: bool) -> Result<StreamId, CmdError> {
    match arg.strip_prefix(b"(") {
        Some(rest) if arg.len() > 1 => {
            let id = stream_id(rest, missing_seq, true)?;
            let moved = if start { id.next() } else { id.prev() };
            moved.ok_or_else(|| {
                CmdError(format!("ERR invalid {} ID for the interval", if start { "start" } else { "end" }))
            })
        }
        _ => stream_id(arg, missing_seq, false),
    }
}

fn entry(r: &mut Reply<'_>, id: StreamId, fields: Option<&[(Vec<u8>, Vec<u8>)]>) {
    r.array(2);
    r.bulk(id.to_string().as_bytes());
    match fields {
        Some(fields) => {
            r.array(fields.len() * 2);
            for (field, value) in fields {
                r.bulk(field);
                r.bulk(value);
            }
        }
        None => r.null_array(),
    }
}

fn entries(r: &mut Reply<'_>, list: &[StreamEntry]) {
    r.array(list.len());
    for (id, fields) in list {
        entry(r, *id, Some(fields));
    }
}

fn maybe_entries(r: &mut Reply<'_>, list: &[MaybeEntry]) {
    r.array(list.len());
    for (id, fields) in list {
        entry(r, *id, fields.as_deref());
    }
}

fn id_reply(r: &mut Reply<'_>, id: StreamId) {
    r.bulk(id.to_string().as_bytes());
}

/// MAXLEN/MINID [=|~] threshold [LIMIT n], from `a[at]`; returns the position after it.
fn trim_option(a: &[&[u8]], at: usize, trim: &mut Option<TrimArgs>) -> Result<usize, CmdError> {
    if trim.is_some() {
        return Err(CmdError("ERR syntax error, MAXLEN and MINID options at the same time are not compatible".into()));
    }
    let more = a.len() - 1 - at;
    let mut next = at + 1;
    let mut approx = false;
    if more >= 2 && a[next] == b"~" {
        approx = true;
        next += 1;
    } else if more >= 2 && a[next] == b"=" {
        next += 1;
    }
    let rule = if args::is(a[at], "MAXLEN") {
        let max = args::int(a[next])?;
        if max < 0 {
            return Err(CmdError("ERR The MAXLEN argument must be >= 0.".into()));
        }
        Trim::MaxLen(max as u64)
    } else {
        Trim::MinId(stream_id(a[next], 0, true)?)
    };
    *trim = Some(TrimArgs { rule, approx, limit: None });
    Ok(next + 1)
}

/// XADD's and XTRIM's shared options, from `a[2]`: the trimming, NOMKSTREAM and (for
/// XADD) the id, whose position is returned.
fn add_or_trim_options(a: &[&[u8]], xadd: bool) -> Result<(Option<TrimArgs>, bool, XAddId, usize), CmdError> {
    let (mut trim, mut nomkstream, mut id) = (None, false, XAddId::Auto);
    let mut limit = None;
    let mut at = 2;
    while at < a.len() {
        let more = a.len() - 1 - at;
        let word = a[at];
        if xadd && word == b"*" {
            break;
        } else if (args::is(word, "MAXLEN") || args::is(word, "MINID")) && more > 0 {
            at = trim_option(a, at, &mut trim)?;
            continue;
        } else if args::is(word, "LIMIT") && more > 0 {
            let n = args::int(a[at + 1])?;
            if n < 0 {
                return Err(CmdError("ERR The LIMIT argument must be >= 0.".into()));
            }
            limit = Some(n as u64);
            at += 2;
            continue;
        } else if xadd && args::is(word, "NOMKSTREAM") {
            nomkstream = true;
        } else if xadd {
            id = xadd_id(word)?;
            break;
        } else {
            return Err(args::syntax());
        }
        at += 1;
    }
    if limit.is_some_and(|n| n > 0) && trim.is_none() {
        return Err(CmdError("ERR syntax error, LIMIT cannot be used without specifying a trimming strategy".into()));
    }
    if !xadd && trim.is_none() {
        return Err(CmdError("ERR syntax error, XTRIM must be called with a trimming strategy".into()));
    }
    if let Some(trim) = &mut trim {
        if limit.is_some() && !trim.approx {
            return Err(CmdError("ERR syntax error, LIMIT cannot be used without the special ~ option".into()));
        }
        trim.limit = limit;
    }
    Ok((trim, nomkstream, id, at))
}

/// XADD's id: `*`, `ms-*` or an explicit id.
fn xadd_id(arg: &[u8]) -> Result<XAddId, CmdError> {
    if let Some(ms) = arg.strip_suffix(b"-*") {
        return ull(ms).map(XAddId::Ms).ok_or_else(invalid_id);
    }
    stream_id(arg, 0, true).map(XAddId::Exact)
}

/// XADD key [NOMKSTREAM] [MAXLEN|MINID [=|~] threshold [LIMIT count]] *|id field value
/// [field value ...]
pub fn xadd<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    let (trim, nomkstream, id, at) = add_or_trim_options(a, true)?;
    let fields = &a[(at + 1).min(a.len())..];
    if fields.len() < 2 || !fields.len().is_multiple_of(2) {
        return Err(args::wrong_arity("xadd"));
    }
    let pairs = fields.chunks_exact(2).map(|pair| (pair[0], pair[1])).collect();
    match kv.xadd(a[1], &XAdd { id, nomkstream, trim, pairs })? {
        Some(id) => id_reply(r, id),
        None => r.null(),
    }
    Ok(())
}

/// XTRIM key MAXLEN|MINID [=|~] threshold [LIMIT count]
pub fn xtrim<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    let (trim, ..) = add_or_trim_options(a, false)?;
    r.int(kv.xtrim(a[1], trim.expect("XTRIM requires a strategy"))? as i64);
    Ok(())
}

/// XLEN key
pub fn xlen<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    r.int(kv.xlen(a[1])? as i64);
    Ok(())
}

fn range<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>, rev: bool) -> CmdResult {
    let (start_arg, end_arg) = if rev { (a[3], a[2]) } else { (a[2], a[3]) };
    let start = interval_id(start_arg, 0, true)?;
    let end = interval_id(end_arg, u64::MAX, false)?;
    let mut count = None;
    let mut at = 4;
    while at < a.len() {
        if args::is(a[at], "COUNT") && at + 1 < a.len() {
            count = Some(args::int(a[at + 1])?.max(0) as usize);
            at += 2;
        } else {
            return Err(args::syntax());
        }
    }
    if count == Some(0) {
        // Redis looks the key up first: a missing one is an empty array, a stream null.
        match kv.key_type(a[1])? {
            "none" => r.array(0),
            "stream" => r.null_array(),
            _ => return Err(hotset_core::kv::KvError::WrongType.into()),
        }
        return Ok(());
    }
    entries(r, &kv.xrange(a[1], start, end, count.unwrap_or(0), rev)?);
    Ok(())
}

/// XRANGE key start end [COUNT count]
pub fn xrange<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    range(kv, a, r, false)
}

/// XREVRANGE key end start [COUNT count]
pub fn xrevrange<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    range(kv, a, r, true)
}

/// Ids from `a[at..]`, every one checked before anything runs.
fn ids(a: &[&[u8]]) -> Result<Vec<StreamId>, CmdError> {
    a.iter().map(|arg| stream_id(arg, 0, true)).collect()
}

/// XDEL key id [id ...]
pub fn xdel<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    let ids = ids(&a[2..])?;
    r.int(kv.xdel(a[1], &ids)? as i64);
    Ok(())
}

/// XSETID key last-id [ENTRIESADDED entries-added] [MAXDELETEDID max-deleted-id]
pub fn xsetid<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    let id = stream_id(a[2], 0, true)?;
    let (mut added, mut max_deleted) = (None, None);
    let mut at = 3;
    while at < a.len() {
        let more = a.len() - 1 - at;
        if args::is(a[at], "ENTRIESADDED") && more > 0 {
            let n = args::int(a[at + 1])?;
            if n < 0 {
                return Err(CmdError("ERR entries_added must be positive".into()));
            }
            added = Some(n as u64);
        } else if args::is(a[at], "MAXDELETEDID") && more > 0 {
            let max = stream_id(a[at + 1], 0, true)?;
            if id < max {
                return Err(CmdError(
                    "ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id".into(),
                ));
            }
            max_deleted = Some(max);
        } else {
            return Err(args::syntax());
        }
        at += 2;
    }
    kv.xsetid(a[1], id, added, max_deleted)?;
    r.ok();
    Ok(())
}

const XGROUP_HELP: &[&str] = &[
    "XGROUP <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CREATE <key> <groupname> <id|$> [option]",
    "    Create a new consumer group. Options are:",
    "    * MKSTREAM",
    "      Create the empty stream if it does not exist.",
    "    * ENTRIESREAD entries_read",
    "      Set the group's entries_read counter (internal use).",
    "CREATECONSUMER <key> <groupname> <consumer>",
    "    Create a new consumer in the specified group.",
    "DELCONSUMER <key> <groupname> <consumer>",
    "    Remove the specified consumer.",
    "DESTROY <key> <groupname>",
    "    Remove the specified group.",
    "SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
    "    Set the current group ID and entries_read counter.",
    "HELP",
    "    Print this help.",
];

const XINFO_HELP: &[&str] = &[
    "XINFO <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CONSUMERS <key> <groupname>",
    "    Show consumers of <groupname>.",
    "GROUPS <key>",
    "    Show the stream consumer groups.",
    "STREAM <key> [FULL [COUNT <count>]",
    "    Show information about the stream.",
    "HELP",
    "    Print this help.",
];

/// A container command's subcommand checked against its arity (Redis' convention: `n`
/// exactly, `-n` at least), with Redis 7's errors for an unknown one and a wrong count.
fn subcommand(command: &str, a: &[&[u8]], arities: &[(&str, i32)]) -> Result<(), CmdError> {
    let sub = a[1];
    let Some((name, arity)) = arities.iter().find(|(name, _)| args::is(sub, name)) else {
        return Err(args::unknown_subcommand(command, sub));
    };
    let fits = if *arity < 0 { a.len() >= arity.unsigned_abs() as usize } else { a.len() == *arity as usize };
    if !fits {
        return Err(CmdError(format!(
            "ERR wrong number of arguments for '{}|{}' command",
            command.to_ascii_lowercase(),
            name.to_ascii_lowercase()
        )));
    }
    Ok(())
}

/// XGROUP CREATE|SETID|DESTROY|CREATECONSUMER|DELCONSUMER|HELP ...
pub fn xgroup<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    let sub = a[1];
    subcommand(
        "XGROUP",
        a,
        &[("CREATE", -5), ("SETID", -5), ("DESTROY", 4), ("CREATECONSUMER", 5), ("DELCONSUMER", 5), ("HELP", 2)],
    )?;
    if args::is(sub, "HELP") {
        args::help(r, XGROUP_HELP);
        return Ok(());
    }
    let (create, setid) = (args::is(sub, "CREATE"), args::is(sub, "SETID"));
    let (mut mkstream, mut entries_read) = (false, -1i64);
    if a.len() >= 4 {
        let mut at = 5;
        while at < a.len() {
            if create && args::is(a[at], "MKSTREAM") {
                mkstream = true;
                at += 1;
            } else if (create || setid) && args::is(a[at], "ENTRIESREAD") && at + 1 < a.len() {
                entries_read = args::int(a[at + 1])?;
                if entries_read < -1 {
                    return Err(CmdError("ERR value for ENTRIESREAD must be positive or -1".into()));
                }
                at += 2;
            } else {
                return Err(CmdError(format!(
                    "ERR unknown subcommand or wrong number of arguments for '{}'. Try XGROUP HELP.",
                    String::from_utf8_lossy(sub)
                )));
            }
        }
    }
    let wrong = || {
        CmdError(format!(
            "ERR unknown subcommand or wrong number of arguments for '{}'. Try XGROUP HELP.",
            String::from_utf8_lossy(sub)
        ))
    };
    let from = |arg: &[u8]| if arg == b"$" { Ok(None) } else { stream_id(arg, 0, create).map(Some) };
    if create && (5..=8).contains(&a.len()) {
        kv.xgroup_create(a[2], a[3], from(a[4])?, mkstream, entries_read)?;
        r.ok();
    } else if setid && (a.len() == 5 || a.len() == 7) {
        kv.xgroup_setid(a[2], a[3], from(a[4])?, entries_read)?;
        r.ok();
    } else if args::is(sub, "DESTROY") && a.len() == 4 {
        r.int(i64::from(kv.xgroup_destroy(a[2], a[3])?));
    } else if args::is(sub, "CREATECONSUMER") && a.len() == 5 {
        r.int(i64::from(kv.xgroup_createconsumer(a[2], a[3], a[4])?));
    } else if args::is(sub, "DELCONSUMER") && a.len() == 5 {
        r.int(kv.xgroup_delconsumer(a[2], a[3], a[4])? as i64);
    } else {
        return Err(wrong());
    }
    Ok(())
}

/// XACK key group id [id ...]
pub fn xack<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    // The key's type comes first; then every id must parse.
    kv.xlen(a[1])?;
    let ids = ids(&a[3..])?;
    r.int(kv.xack(a[1], a[2], &ids)? as i64);
    Ok(())
}

/// XPENDING key group [[IDLE min-idle-time] start end count [consumer]]
pub fn xpending<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    if a.len() != 3 && !(6..=9).contains(&a.len()) {
        return Err(args::syntax());
    }
    if a.len() == 3 {
        let summary = kv.xpending_summary(a[1], a[2])?;
        r.array(4);
        r.int(summary.count as i64);
        match summary.bounds {
            Some((first, last)) => {
                id_reply(r, first);
                id_reply(r, last);
                r.array(summary.consumers.len());
                for (name, count) in &summary.consumers {
                    r.array(2);
                    r.bulk(name);
                    r.bulk(count.to_string().as_bytes());
                }
            }
            None => {
                r.null();
                r.null();
                r.null_array();
            }
        }
        return Ok(());
    }
    let mut at = 3;
    let mut min_idle = 0;
    if args::is(a[3], "IDLE") {
        min_idle = args::int(a[4])?;
        if a.len() < 8 {
            return Err(args::syntax());
        }
        at = 5;
    }
    let count = args::int(a[at + 2])?.max(0) as usize;
    let start = interval_id(a[at], 0, true)?;
    let end = interval_id(a[at + 1], u64::MAX, false)?;
    let consumer = a.get(at + 3).copied();
    if a.len() > at + 4 {
        return Err(args::syntax());
    }
    let (now, pending) = kv.xpending_range(a[1], a[2], min_idle, start, end, count, consumer)?;
    r.array(pending.len());
    for PendingInfo { id, consumer, delivery_time, delivery_count } in &pending {
        r.array(4);
        id_reply(r, *id);
        r.bulk(consumer);
        r.int(now.saturating_sub(*delivery_time) as i64);
        r.int(*delivery_count as i64);
    }
    Ok(())
}

fn claimed(r: &mut Reply<'_>, list: &[Claimed], justid: bool) {
    r.array(list.len());
    for (id, fields) in list {
        if justid {
            id_reply(r, *id);
        } else {
            entry(r, *id, fields.as_deref());
        }
    }
}

/// XCLAIM key group consumer min-idle-time id [id ...] [IDLE ms] [TIME ms] [RETRYCOUNT
/// count] [FORCE] [JUSTID] [LASTID id]
pub fn xclaim<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    // Redis names the key and group first: a missing group is the error before any other.
    kv.xpending_summary(a[1], a[2])?;
    let min_idle = args::int(a[4]).map_err(|_| CmdError("ERR Invalid min-idle-time argument for XCLAIM".into()))?;
    let mut at = 5;
    let mut claim_ids = Vec::new();
    while at < a.len() {
        match stream_id(a[at], 0, true) {
            Ok(id) => claim_ids.push(id),
            Err(_) => break,
        }
        at += 1;
    }
    let mut options = XClaimOptions::default();
    while at < a.len() {
        let more = a.len() - 1 - at;
        let word = a[at];
        let number = |what: &str| {
            args::int(a[at + 1]).map_err(|_| CmdError(format!("ERR Invalid {what} option argument for XCLAIM")))
        };
        if args::is(word, "FORCE") {
            options.force = true;
        } else if args::is(word, "JUSTID") {
            options.justid = true;
        } else if args::is(word, "IDLE") && more > 0 {
            options.delivery = Some(ClaimDelivery::Idle(number("IDLE")?));
            at += 1;
        } else if args::is(word, "TIME") && more > 0 {
            options.delivery = Some(ClaimDelivery::At(number("TIME")?));
            at += 1;
        } else if args::is(word, "RETRYCOUNT") && more > 0 {
            // A negative count is Redis' "not given".
            options.retry_count = u64::try_from(number("RETRYCOUNT")?).ok();
            at += 1;
        } else if args::is(word, "LASTID") && more > 0 {
            options.last_id = Some(stream_id(a[at + 1], 0, true)?);
            at += 1;
        } else {
            return Err(CmdError(format!("ERR Unrecognized XCLAIM option '{}'", String::from_utf8_lossy(word))));
        }
        at += 1;
    }
    let list = kv.xclaim(a[1], a[2], a[3], min_idle.max(0), &claim_ids, options)?;
    claimed(r, &list, options.justid);
    Ok(())
}

/// XAUTOCLAIM key group consumer min-idle-time start [COUNT count] [JUSTID]
pub fn xautoclaim<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    let min_idle =
        args::int(a[4]).map_err(|_| CmdError("ERR Invalid min-idle-time argument for XAUTOCLAIM".into()))?.max(0);
    let start = interval_id(a[5], 0, true)?;
    let (mut count, mut justid) = (100usize, false);
    let mut at = 6;
    while at < a.len() {
        let more = a.len() - 1 - at;
        if args::is(a[at], "COUNT") && more > 0 {
            let n = args::int(a[at + 1]).map_err(|_| CmdError("ERR COUNT must be > 0".into()))?;
            if !(1..=(i64::MAX / 16)).contains(&n) {
                return Err(CmdError("ERR COUNT must be > 0".into()));
            }
            count = n as usize;
            at += 1;
        } else if args::is(a[at], "JUSTID") {
            justid = true;
        } else {
            return Err(args::syntax());
        }
        at += 1;
    }
    let (next, list, deleted) = kv.xautoclaim(a[1], a[2], a[3], min_idle, start, count, justid)?;
    r.array(3);
    id_reply(r, next);
    claimed(r, &list, justid);
    r.array(deleted.len());
    for id in deleted {
        id_reply(r, id);
    }
    Ok(())
}

fn head(r: &mut Reply<'_>, head: &StreamHead) {
    r.bulk(b"length");
    r.int(head.length as i64);
    r.bulk(b"radix-tree-keys");
    r.int(head.nodes as i64);
    r.bulk(b"radix-tree-nodes");
    // Redis counts its radix tree's inner nodes too; a node per key, plus the root.
    r.int(head.nodes as i64 + 1);
    r.bulk(b"last-generated-id");
    id_reply(r, head.last_id);
    r.bulk(b"max-deleted-entry-id");
    id_reply(r, head.max_deleted);
    r.bulk(b"entries-added");
    r.int(head.entries_added as i64);
    r.bulk(b"recorded-first-entry-id");
    id_reply(r, head.first_id);
}

fn group_fields(r: &mut Reply<'_>, info: &GroupInfo) {
    r.bulk(b"name");
    r.bulk(&info.name);
    r.bulk(b"consumers");
    r.int(info.consumers as i64);
    r.bulk(b"pending");
    r.int(info.pending as i64);
    progress(r, info);
}

/// A group's last-delivered-id, entries-read and lag (null when not known).
fn progress(r: &mut Reply<'_>, info: &GroupInfo) {
    r.bulk(b"last-delivered-id");
    id_reply(r, info.last_id);
    r.bulk(b"entries-read");
    match info.entries_read {
        Some(read) => r.int(read as i64),
        None => r.null(),
    }
    r.bulk(b"lag");
    match info.lag {
        Some(lag) => r.int(lag),
        None => r.null(),
    }
}

/// XINFO STREAM key [FULL [COUNT count]] | GROUPS key | CONSUMERS key group | HELP
pub fn xinfo<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    let sub = a[1];
    let wrong = || {
        CmdError(format!(
            "ERR unknown subcommand or wrong number of arguments for '{}'. Try XINFO HELP.",
            String::from_utf8_lossy(sub)
        ))
    };
    subcommand("XINFO", a, &[("CONSUMERS", 4), ("GROUPS", 3), ("STREAM", -3), ("HELP", 2)])?;
    if args::is(sub, "HELP") {
        args::help(r, XINFO_HELP);
        return Ok(());
    }
    let key = a[2];
    if args::is(sub, "CONSUMERS") && a.len() == 4 {
        let consumers = kv.xinfo_consumers(key, a[3])?;
        r.array(consumers.len());
        for consumer in &consumers {
            r.map(3);
            r.bulk(b"name");
            r.bulk(&consumer.name);
            r.bulk(b"pending");
            r.int(consumer.pending as i64);
            r.bulk(b"idle");
            r.int(consumer.idle as i64);
        }
    } else if args::is(sub, "GROUPS") && a.len() == 3 {
        let groups = kv.xinfo_groups(key)?;
        r.array(groups.len());
        for group in &groups {
            r.map(6);
            group_fields(r, group);
        }
    } else if args::is(sub, "STREAM") {
        let options = &a[3..];
        if options.is_empty() {
            let info = kv.xinfo_stream(key)?;
            r.map(10);
            head(r, &info.head);
            r.bulk(b"groups");
            r.int(info.groups as i64);
            for (name, found) in [(&b"first-entry"[..], &info.first), (b"last-entry", &info.last)] {
                r.bulk(name);
                match found {
                    Some((id, fields)) => entry(r, *id, Some(fields)),
                    None => r.null(),
                }
            }
            return Ok(());
        }
        if !(options.len() == 1 || options.len() == 3) || !args::is(options[0], "FULL") {
            return Err(wrong());
        }
        let mut count = 10;
        if options.len() == 3 {
            if !args::is(options[1], "COUNT") {
                return Err(wrong());
            }
            let n = args::int(options[2])?;
            count = if n < 0 { 10 } else { n as usize };
        }
        stream_full(kv, key, count, r)?;
    } else {
        return Err(wrong());
    }
    Ok(())
}

fn stream_full<K: KvOps>(kv: &K, key: &[u8], count: usize, r: &mut Reply<'_>) -> CmdResult {
    let full = kv.xinfo_stream_full(key, count)?;
    r.map(9);
    head(r, &full.head);
    r.bulk(b"entries");
    entries(r, &full.entries);
    r.bulk(b"groups");
    r.array(full.groups.len());
    for group in &full.groups {
        r.map(7);
        r.bulk(b"name");
        r.bulk(&group.info.name);
        progress(r, &group.info);
        r.bulk(b"pel-count");
        r.int(group.pel_count as i64);
        r.bulk(b"pending");
        r.array(group.pending.len());
        for pending in &group.pending {
            r.array(4);
            id_reply(r, pending.id);
            r.bulk(&pending.consumer);
            r.int(pending.delivery_time as i64);
            r.int(pending.delivery_count as i64);
        }
        r.bulk(b"consumers");
        r.array(group.consumers.len());
        for consumer in &group.consumers {
            r.map(4);
            r.bulk(b"name");
            r.bulk(&consumer.name);
            r.bulk(b"seen-time");
            r.int(consumer.seen_time as i64);
            r.bulk(b"pel-count");
            r.int(consumer.pel_count as i64);
            r.bulk(b"pending");
            r.array(consumer.pending.len());
            for pending in &consumer.pending {
                r.array(3);
                id_reply(r, pending.id);
                r.int(pending.delivery_time as i64);
                r.int(pending.delivery_count as i64);
            }
        }
    }
    Ok(())
}

/// XREAD's and XREADGROUP's arguments, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct XReadArgs {
    pub keys: Vec<Vec<u8>>,
    /// BLOCK's milliseconds (0: for ever), `None` without BLOCK.
    pub block: Option<u64>,
    pub count: usize,
    /// GROUP's group and consumer, and NOACK.
    pub group: Option<(Vec<u8>, Vec<u8>, bool)>,
    /// The ids, as written.
    pub ids: Vec<Vec<u8>>,
}

/// XREAD [COUNT count] [BLOCK ms] STREAMS key [key ...] id [id ...], and XREADGROUP
/// GROUP group consumer [COUNT count] [BLOCK ms] [NOACK] STREAMS ... (`group`).
pub fn parse_xread(a: &[&[u8]], group: bool) -> Result<XReadArgs, CmdError> {
    let (mut block, mut count, mut noack, mut names, mut streams) = (None, 0usize, false, None, None);
    let mut at = 1;
    while at < a.len() {
        let more = a.len() - 1 - at;
        let word = a[at];
        if args::is(word, "BLOCK") && more > 0 {
            let ms =
                args::int(a[at + 1]).map_err(|_| CmdError("ERR timeout is not an integer or out of range".into()))?;
            if ms < 0 {
                return Err(CmdError("ERR timeout is negative".into()));
            }
            block = Some(ms as u64);
            at += 2;
        } else if args::is(word, "COUNT") && more > 0 {
            count = args::int(a[at + 1])?.max(0) as usize;
            at += 2;
        } else if args::is(word, "STREAMS") && more > 0 {
            let rest = &a[at + 1..];
            if !rest.len().is_multiple_of(2) {
                // One text for both commands, as in Redis.
                return Err(CmdError(
                    "ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified.".into(),
                ));
            }
            streams = Some(rest.split_at(rest.len() / 2));
            break;
        } else if args::is(word, "GROUP") && more >= 2 {
            if !group {
                return Err(CmdError(
                    "ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead.".into(),
                ));
            }
            names = Some((a[at + 1].to_vec(), a[at + 2].to_vec()));
            at += 3;
        } else if args::is(word, "NOACK") {
            if !group {
                return Err(CmdError(
                    "ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead.".into(),
                ));
            }
            noack = true;
            at += 1;
        } else {
            return Err(args::syntax());
        }
    }
    let Some((keys, ids)) = streams else { return Err(args::syntax()) };
    if group && names.is_none() {
        return Err(CmdError("ERR Missing GROUP option for XREADGROUP".into()));
    }
    Ok(XReadArgs {
        keys: keys.iter().map(|k| k.to_vec()).collect(),
        block,
        count,
        group: names.map(|(g, c)| (g, c, noack)),
        ids: ids.iter().map(|id| id.to_vec()).collect(),
    })
}

/// XREAD's positions: `$` or an id.
pub fn xread_from(ids: &[Vec<u8>]) -> Result<Vec<XFrom>, CmdError> {
    ids.iter()
        .map(|id| match id.as_slice() {
            b"$" => Ok(XFrom::Last),
            b">" => Err(CmdError(
                "ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option."
                    .into(),
            )),
            other => stream_id(other, 0, true).map(XFrom::After),
        })
        .collect()
}

/// XREADGROUP's positions: `>` or an id.
pub fn xreadgroup_from(ids: &[Vec<u8>]) -> Result<Vec<XGroupFrom>, CmdError> {
    ids.iter()
        .map(|id| match id.as_slice() {
            b">" => Ok(XGroupFrom::New),
            b"$" => Err(CmdError(
                "ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of this \
                 consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID would just return \
                 an empty result set."
                    .into(),
            )),
            other => stream_id(other, 0, true).map(XGroupFrom::History),
        })
        .collect()
}

/// An XREAD or XREADGROUP answer: per stream served, its key and entries (a map in
/// RESP3).
pub fn xread_reply<T>(r: &mut Reply<'_>, served: &[(Vec<u8>, Vec<T>)], each: impl Fn(&mut Reply<'_>, &[T])) {
    match r.protocol {
        Protocol::Resp3 => r.map(served.len()),
        Protocol::Resp2 => r.array(served.len()),
    }
    for (key, list) in served {
        if r.protocol == Protocol::Resp2 {
            r.array(2);
        }
        r.bulk(key);
        each(r, list);
    }
}

/// Entries of an XREAD answer.
pub fn xread_entries(r: &mut Reply<'_>, list: &[StreamEntry]) {
    entries(r, list);
}

/// Entries of an XREADGROUP answer (deleted ones without fields).
pub fn xreadgroup_entries(r: &mut Reply<'_>, list: &[MaybeEntry]) {
    maybe_entries(r, list);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_parse_as_redis_reads_them() {
        assert_eq!(stream_id(b"5", 0, true).unwrap(), StreamId::new(5, 0));
        assert_eq!(stream_id(b"5", u64::MAX, true).unwrap(), StreamId::new(5, u64::MAX));
        assert_eq!(stream_id(b"5-3", 0, true).unwrap(), StreamId::new(5, 3));
        assert_eq!(stream_id(b"-", 0, false).unwrap(), StreamId::MIN);
        assert_eq!(stream_id(b"+", 0, false).unwrap(), StreamId::MAX);
        for bad in [&b"-"[..], b"+", b"a", b"1-", b"-1", b"1-2-3", b"18446744073709551616"] {
            assert!(stream_id(bad, 0, true).is_err(), "{}", String::from_utf8_lossy(bad));
        }
        assert_eq!(interval_id(b"(5-0", 0, true).unwrap(), StreamId::new(5, 1));
        assert_eq!(interval_id(b"(5-0", 0, false).unwrap(), StreamId::new(4, u64::MAX));
        assert!(interval_id(b"(0-0", 0, false).is_err());
        assert!(interval_id(b"(-", 0, true).is_err(), "an exclusive bound is a real id");
        assert_eq!(xadd_id(b"7-*").unwrap(), XAddId::Ms(7));
    }

    #[test]
    fn xread_arguments_parse() {
        let parsed =
            parse_xread(&[b"XREAD", b"COUNT", b"2", b"BLOCK", b"0", b"STREAMS", b"a", b"b", b"$", b"1"], false)
                .unwrap();
        assert_eq!(parsed.keys, vec![b"a".to_vec(), b"b".to_vec()]);
        assert_eq!((parsed.block, parsed.count), (Some(0), 2));
        assert!(parse_xread(&[b"XREAD", b"STREAMS", b"a"], false).unwrap_err().0.starts_with("ERR Unbalanced XREAD"));
        assert!(parse_xread(&[b"XREADGROUP", b"STREAMS", b"a", b">"], true).unwrap_err().0.contains("Missing GROUP"));
        assert_eq!(xread_from(&[b"$".to_vec()]).unwrap(), vec![XFrom::Last]);
        assert!(xreadgroup_from(&[b"$".to_vec()]).is_err());
    }
}
