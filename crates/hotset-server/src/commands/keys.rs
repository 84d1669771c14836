//! Generic key commands: DEL, EXISTS, the EXPIRE family, TTL, TYPE, KEYS, SCAN, RENAME,
//! DBSIZE and FLUSHDB.
//!
//! Owns: turning RESP arguments into `KvOps` calls for the `generic` group and shaping
//! their replies. Never: hold semantics of its own, or write a reply before the call has
//! succeeded.

use super::args::{self, CmdError, syntax};
use crate::resp::reply::Reply;
use hotset_core::kv::{ExpireCondition, KvError, KvOps};

/// Keys SCAN returns per call when COUNT is not given (Redis' default).
const SCAN_COUNT_DEFAULT: usize = 10;

/// Runs generic key command `name` (upper case); `Ok(false)` when it is not one.
pub fn run<K: KvOps>(kv: &K, name: &str, a: &[&[u8]], r: &mut Reply<'_>) -> Result<bool, CmdError> {
    match name {
        "DEL" | "UNLINK" => r.int(kv.del(&a[1..])? as i64),
        "EXISTS" => r.int(kv.exists(&a[1..])? as i64),
        "EXPIRE" | "PEXPIRE" | "EXPIREAT" | "PEXPIREAT" => expire(kv, name, a, r)?,
        "TTL" => r.int(seconds(kv.ttl_ms(a[1])?)),
        "PTTL" => r.int(kv.ttl_ms(a[1])?),
        "EXPIRETIME" => r.int(seconds(kv.expire_time_ms(a[1])?)),
        "PEXPIRETIME" => r.int(kv.expire_time_ms(a[1])?),
        "PERSIST" => r.int(i64::from(kv.persist(a[1])?)),
        "TYPE" => r.simple(kv.key_type(a[1])?),
        "KEYS" => {
            let keys = kv.keys(a[1])?;
            r.array(keys.len());
            keys.iter().for_each(|k| r.bulk(k));
        }
        "SCAN" => scan(kv, a, r)?,
        "RENAME" => {
            kv.rename(a[1], a[2])?;
            r.ok();
        }
        "RENAMENX" => r.int(i64::from(kv.rename_nx(a[1], a[2])?)),
        "DBSIZE" => r.int(kv.dbsize()? as i64),
        "FLUSHDB" => {
            flush_mode(a)?;
            kv.flush()?;
            r.ok();
        }
        _ => return Ok(false),
    }
    Ok(true)
}

/// TTL-style milliseconds as seconds: negative codes (-1 no expiry, -2 no key) kept, a
/// remaining time rounded to the nearest second as Redis does.
fn seconds(ms: i64) -> i64 {
    if ms < 0 { ms } else { (ms + 500) / 1000 }
}

/// FLUSHDB / FLUSHALL [ASYNC|SYNC]: both run at once here (memory is freed in place).
pub fn flush_mode(a: &[&[u8]]) -> Result<(), CmdError> {
    match a {
        [_] => Ok(()),
        [_, mode] if args::is(mode, "ASYNC") || args::is(mode, "SYNC") => Ok(()),
        _ => Err(syntax()),
    }
}

/// EXPIRE key seconds [NX|XX|GT|LT] and its millisecond / absolute variants.
fn expire<K: KvOps>(kv: &K, name: &str, a: &[&[u8]], r: &mut Reply<'_>) -> Result<(), CmdError> {
    let condition = match a.get(3) {
        None => None,
        Some(word) if args::is(word, "NX") => Some(ExpireCondition::Nx),
        Some(word) if args::is(word, "XX") => Some(ExpireCondition::Xx),
        Some(word) if args::is(word, "GT") => Some(ExpireCondition::Gt),
        Some(word) if args::is(word, "LT") => Some(ExpireCondition::Lt),
        Some(word) => return Err(CmdError(format!("ERR Unsupported option {}", String::from_utf8_lossy(word)))),
    };
    if a.len() > 4 {
        return Err(syntax());
    }
    let amount = args::int(a[2])?;
    let command = match name {
        "EXPIRE" => "expire",
        "PEXPIRE" => "pexpire",
        "EXPIREAT" => "expireat",
        _ => "pexpireat",
    };
    let invalid = || CmdError(KvError::InvalidExpireTime { command }.to_string());
    let ms = match name {
        "EXPIRE" | "EXPIREAT" => amount.checked_mul(1000).ok_or_else(invalid)?,
        _ => amount,
    };
    let applied = match name {
        "EXPIRE" | "PEXPIRE" => kv.expire_in_ms_if(a[1], ms, condition),
        _ => kv.expire_at_ms_if(a[1], ms, condition),
    }
    .map_err(|error| match error {
        KvError::InvalidExpireTime { .. } => invalid(),
        other => other.into(),
    })?;
    r.int(i64::from(applied));
    Ok(())
}

/// SCAN cursor [MATCH pattern] [COUNT n] [TYPE type]
fn scan<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> Result<(), CmdError> {
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
