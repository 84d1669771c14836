//! String commands: GET, SET and its options, counters, MGET/MSET and friends.
//!
//! Owns: turning RESP arguments into `KvOps` calls for the `string` group and shaping
//! their replies. Never: hold semantics of its own (expiry, NX/XX, integer rules live in
//! `hotset_core::kv`), or write a reply before the call has succeeded.

use super::args::{self, CmdError, CmdResult, syntax};
use crate::resp::reply::Reply;
use hotset_core::kv::{KvOps, SetCondition, SetExpiry, SetOptions};

/// Runs string command `name` (upper case); `Ok(false)` when it is not one.
pub fn run<K: KvOps>(kv: &K, name: &str, a: &[&[u8]], r: &mut Reply<'_>) -> Result<bool, CmdError> {
    match name {
        "GET" => kv.get_with(a[1], |value| r.bulk_or_null(value))?,
        "SET" => set(kv, a, r)?,
        "SETNX" => r.int(i64::from(kv.setnx(a[1], a[2])?)),
        "SETEX" | "PSETEX" => setex(kv, name, a, r)?,
        "GETSET" => r.bulk_or_null(kv.getset(a[1], a[2])?.as_deref()),
        "GETDEL" => r.bulk_or_null(kv.getdel(a[1])?.as_deref()),
        "APPEND" => r.int(kv.append(a[1], a[2])? as i64),
        "STRLEN" => r.int(kv.strlen(a[1])? as i64),
        "INCR" => r.int(kv.incr_by(a[1], 1)?),
        "DECR" => r.int(kv.decr_by(a[1], 1)?),
        "INCRBY" => r.int(kv.incr_by(a[1], args::int(a[2])?)?),
        "DECRBY" => r.int(kv.decr_by(a[1], args::int(a[2])?)?),
        "INCRBYFLOAT" => r.bulk(&kv.incr_by_float(a[1], args::float(a[2])?)?),
        "MGET" => {
            let values = kv.mget(&a[1..])?;
            r.array(values.len());
            values.iter().for_each(|v| r.bulk_or_null(v.as_deref()));
        }
        "MSET" => {
            kv.mset(&args::pairs(name, &a[1..])?)?;
            r.ok();
        }
        "MSETNX" => r.int(i64::from(kv.msetnx(&args::pairs(name, &a[1..])?)?)),
        _ => return Ok(false),
    }
    Ok(true)
}

/// SET key value [NX|XX] [GET] [EX s|PX ms|EXAT s|PXAT ms|KEEPTTL]
fn set<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    let mut options = SetOptions::default();
    let mut at = 3;
    while at < a.len() {
        let word = a[at];
        let expiry_arg = |scale: u64, absolute: bool| -> Result<SetExpiry, CmdError> {
            let value = a.get(at + 1).ok_or_else(syntax)?;
            let value = args::int(value)?;
            if value <= 0 {
                return Err(CmdError("ERR invalid expire time in 'set' command".into()));
            }
            let ms = (value as u64)
                .checked_mul(scale)
                .ok_or_else(|| CmdError("ERR invalid expire time in 'set' command".into()))?;
            Ok(if absolute { SetExpiry::At(ms) } else { SetExpiry::Ex(ms) })
        };
        let expiry = if args::is(word, "EX") {
            Some(expiry_arg(1000, false)?)
        } else if args::is(word, "PX") {
            Some(expiry_arg(1, false)?)
        } else if args::is(word, "EXAT") {
            Some(expiry_arg(1000, true)?)
        } else if args::is(word, "PXAT") {
            Some(expiry_arg(1, true)?)
        } else {
            None
        };
        if let Some(expiry) = expiry {
            if options.expiry.is_some() || options.keep_ttl {
                return Err(syntax());
            }
            options.expiry = Some(expiry);
            at += 2;
            continue;
        }
        if args::is(word, "NX") || args::is(word, "XX") {
            if options.condition.is_some() {
                return Err(syntax());
            }
            options.condition = Some(if args::is(word, "NX") { SetCondition::Nx } else { SetCondition::Xx });
        } else if args::is(word, "GET") {
            options.get_old = true;
        } else if args::is(word, "KEEPTTL") {
            if options.expiry.is_some() {
                return Err(syntax());
            }
            options.keep_ttl = true;
        } else {
            return Err(syntax());
        }
        at += 1;
    }
    let outcome = kv.set(a[1], a[2], options)?;
    if options.get_old {
        r.bulk_or_null(outcome.old.as_deref());
    } else if outcome.applied {
        r.ok();
    } else {
        r.null();
    }
    Ok(())
}

/// SETEX key seconds value / PSETEX key ms value
fn setex<K: KvOps>(kv: &K, name: &str, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    let ttl = args::int(a[2])?;
    let invalid = || CmdError(format!("ERR invalid expire time in '{}' command", name.to_ascii_lowercase()));
    if ttl <= 0 {
        return Err(invalid());
    }
    let ms = if name == "SETEX" { (ttl as u64).checked_mul(1000).ok_or_else(invalid)? } else { ttl as u64 };
    let options = SetOptions { expiry: Some(SetExpiry::Ex(ms)), ..SetOptions::default() };
    kv.set(a[1], a[3], options)?;
    r.ok();
    Ok(())
}
