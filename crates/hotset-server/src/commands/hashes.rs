//! Hash commands: HSET, HGET, HMGET, HGETALL, HDEL, counters, HKEYS/HVALS and HSCAN.
//!
//! Owns: turning RESP arguments into `KvOps` calls for the `hash` group and shaping their
//! replies (HGETALL is a map in RESP3). Never: hold semantics of its own, or write a reply
//! before the call has succeeded.

use super::args::{self, CmdError};
use super::keys::{ScanOptions, cursor};
use crate::resp::reply::Reply;
use hotset_core::kv::KvOps;

/// Runs hash command `name` (upper case); `Ok(false)` when it is not one.
pub fn run<K: KvOps>(kv: &K, name: &str, a: &[&[u8]], r: &mut Reply<'_>) -> Result<bool, CmdError> {
    match name {
        "HSET" | "HMSET" => {
            let added = kv.hset(a[1], &args::pairs(name, &a[2..])?)?;
            if name == "HSET" { r.int(added as i64) } else { r.ok() }
        }
        "HSETNX" => r.int(i64::from(kv.hsetnx(a[1], a[2], a[3])?)),
        "HGET" => r.bulk_or_null(kv.hget(a[1], a[2])?.as_deref()),
        "HMGET" => {
            let values = kv.hmget(a[1], &a[2..])?;
            r.array(values.len());
            values.iter().for_each(|v| r.bulk_or_null(v.as_deref()));
        }
        "HGETALL" => {
            let pairs = kv.hgetall(a[1])?;
            r.map(pairs.len());
            for (field, value) in &pairs {
                r.bulk(field);
                r.bulk(value);
            }
        }
        "HDEL" => r.int(kv.hdel(a[1], &a[2..])? as i64),
        "HEXISTS" => r.int(i64::from(kv.hexists(a[1], a[2])?)),
        "HLEN" => r.int(kv.hlen(a[1])? as i64),
        "HSTRLEN" => r.int(kv.hstrlen(a[1], a[2])? as i64),
        "HINCRBY" => r.int(kv.hincr_by(a[1], a[2], args::int(a[3])?)?),
        "HINCRBYFLOAT" => r.bulk(&kv.hincr_by_float(a[1], a[2], args::float(a[3])?)?),
        "HKEYS" | "HVALS" => {
            let items = if name == "HKEYS" { kv.hkeys(a[1])? } else { kv.hvals(a[1])? };
            r.array(items.len());
            items.iter().for_each(|item| r.bulk(item));
        }
        "HSCAN" => {
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
        }
        _ => return Ok(false),
    }
    Ok(true)
}
