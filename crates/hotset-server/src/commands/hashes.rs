//! Hash commands: HSET, HGET, HMGET, HGETALL, HDEL, counters, HKEYS/HVALS and HSCAN.
//!
//! Owns: turning RESP arguments into `KvOps` calls for the `hash` group and shaping their
//! replies (HGETALL is a map in RESP3), one function per command, each generic over
//! `KvOps` so the table can hold it for a keyspace and for EXEC's locked block. Never:
//! hold semantics of its own, write a reply before the call has succeeded, or decide
//! anything by a command's name (the table chose this function).

use super::args::{self, CmdError, CmdResult};
use super::keys::{ScanOptions, cursor};
use crate::resp::reply::Reply;
use hotset_core::kv::KvOps;

/// HSET key field value [field value ...]: how many fields were new.
pub fn hset<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    let added = kv.hset(a[1], &args::pairs("HSET", &a[2..])?)?;
    r.int(added as i64);
    Ok(())
}

/// HMSET key field value [field value ...]: HSET answering OK.
pub fn hmset<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    kv.hset(a[1], &args::pairs("HMSET", &a[2..])?)?;
    r.ok();
    Ok(())
}

pub fn hsetnx<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    r.int(i64::from(kv.hsetnx(a[1], a[2], a[3])?));
    Ok(())
}

pub fn hget<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    r.bulk_or_null(kv.hget(a[1], a[2])?.as_deref());
    Ok(())
}

pub fn hmget<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    let values = kv.hmget(a[1], &a[2..])?;
    r.array(values.len());
    values.iter().for_each(|v| r.bulk_or_null(v.as_deref()));
    Ok(())
}

pub fn hgetall<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    let pairs = kv.hgetall(a[1])?;
    r.map(pairs.len());
    for (field, value) in &pairs {
        r.bulk(field);
        r.bulk(value);
    }
    Ok(())
}

pub fn hdel<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    r.int(kv.hdel(a[1], &a[2..])? as i64);
    Ok(())
}

pub fn hexists<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    r.int(i64::from(kv.hexists(a[1], a[2])?));
    Ok(())
}

pub fn hlen<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    r.int(kv.hlen(a[1])? as i64);
    Ok(())
}

pub fn hstrlen<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    r.int(kv.hstrlen(a[1], a[2])? as i64);
    Ok(())
}

pub fn hincrby<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    r.int(kv.hincr_by(a[1], a[2], args::int(a[3])?)?);
    Ok(())
}

pub fn hincrbyfloat<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    // Unlike INCRBYFLOAT (which refuses the result), Redis refuses an infinite increment
    // here, with its own words.
    let by = args::float_increment(a[3])?;
    if !by.is_finite() {
        return Err(CmdError("ERR value is NaN or Infinity".into()));
    }
    r.bulk(&kv.hincr_by_float(a[1], a[2], by)?);
    Ok(())
}

pub fn hkeys<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    bulks(&kv.hkeys(a[1])?, r);
    Ok(())
}

pub fn hvals<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    bulks(&kv.hvals(a[1])?, r);
    Ok(())
}

/// HRANDFIELD key [count [WITHVALUES]]: without a count one field or nil; with one, an
/// array (of [field, value] pairs in RESP3 with WITHVALUES, flat in RESP2).
pub fn hrandfield<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    let out_of_range = || CmdError("ERR value is out of range".into());
    let (count, with_values) = match a {
        [_, _] => {
            let pairs = kv.hrandfield(a[1], 1, false)?;
            r.bulk_or_null(pairs.first().map(|(field, _)| field.as_slice()));
            return Ok(());
        }
        [_, _, count] => (args::int(count)?, false),
        [_, _, count, option] if args::is(option, "WITHVALUES") => (args::int(count)?, true),
        _ => return Err(args::syntax()),
    };
    // Redis' bounds: -LONG_MAX at most, and half of it with values (two replies each).
    let limit = if with_values { i64::MAX / 2 } else { i64::MAX };
    if count < -limit || count > limit {
        return Err(out_of_range());
    }
    let pairs = kv.hrandfield(a[1], count, with_values)?;
    if with_values && r.protocol == crate::resp::reply::Protocol::Resp3 {
        r.array(pairs.len());
        for (field, value) in &pairs {
            r.array(2);
            r.bulk(field);
            r.bulk(value);
        }
    } else {
        r.array(pairs.len() * if with_values { 2 } else { 1 });
        for (field, value) in &pairs {
            r.bulk(field);
            if with_values {
                r.bulk(value);
            }
        }
    }
    Ok(())
}

/// An array of bulk strings (HKEYS, HVALS).
fn bulks(items: &[Vec<u8>], r: &mut Reply<'_>) {
    r.array(items.len());
    items.iter().for_each(|item| r.bulk(item));
}

/// HSCAN key cursor [MATCH pattern] [COUNT n]
pub fn hscan<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    let cursor = cursor(a[2])?;
    let options = ScanOptions::parse(&a[3..])?;
    if options.kind.is_some() {
        return Err(args::syntax());
    }
    let (next, pairs) = kv.hscan(a[1], cursor, options.pattern, options.count)?;
    r.array(2);
    r.bulk(next.to_string().as_bytes());
    r.array(pairs.len() * 2);
    for (field, value) in &pairs {
        r.bulk(field);
        r.bulk(value);
    }
    Ok(())
}
