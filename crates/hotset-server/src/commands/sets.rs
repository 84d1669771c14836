//! Set commands: SADD, SREM, membership, SCARD, SMEMBERS, SPOP, SRANDMEMBER, SMOVE, the
//! set algebra (SINTER, SINTERCARD, SUNION, SDIFF and their STORE forms) and SSCAN.
//!
//! Owns: turning RESP arguments into `KvOps` calls for the `set` group, with Redis'
//! option parsing and error texts, and shaping their replies (a set in RESP3 where Redis
//! answers one), one function per command, each generic over `KvOps` so the table can
//! hold it for a keyspace and for EXEC's locked block. Never: hold semantics of its own,
//! write a reply before the call has succeeded, or decide anything by a command's name.

use super::args::{self, CmdError, CmdResult};
use super::keys::{ScanOptions, cursor};
use crate::resp::reply::Reply;
use hotset_core::kv::{KvOps, SetAlgebra};

/// Members as a RESP3 set (an array in RESP2).
fn members(items: &[Vec<u8>], r: &mut Reply<'_>) {
    r.set(items.len());
    items.iter().for_each(|item| r.bulk(item));
}

pub fn sadd<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    r.int(kv.sadd(a[1], &a[2..])? as i64);
    Ok(())
}

pub fn srem<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    r.int(kv.srem(a[1], &a[2..])? as i64);
    Ok(())
}

pub fn sismember<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    r.int(i64::from(kv.smismember(a[1], &a[2..3])?[0]));
    Ok(())
}

pub fn smismember<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    let found = kv.smismember(a[1], &a[2..])?;
    r.array(found.len());
    found.iter().for_each(|&found| r.int(i64::from(found)));
    Ok(())
}

pub fn scard<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    r.int(kv.scard(a[1])? as i64);
    Ok(())
}

pub fn smembers<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    members(&kv.smembers(a[1])?, r);
    Ok(())
}

/// SPOP key [count]: one member (or null), or with a count a set of up to that many.
pub fn spop<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    match a {
        [_, key] => {
            let popped = kv.spop(key, 1)?;
            r.bulk_or_null(popped.as_ref().and_then(|items| items.first()).map(Vec::as_slice));
        }
        [_, key, count] => {
            let out_of_range = || CmdError("ERR value is out of range, must be positive".into());
            let count = usize::try_from(args::int(count).map_err(|_| out_of_range())?).map_err(|_| out_of_range())?;
            members(&kv.spop(key, count)?.unwrap_or_default(), r);
        }
        _ => return Err(args::syntax()),
    }
    Ok(())
}

/// SRANDMEMBER key [count]: one member (or null), or with a count an array (distinct
/// members for a positive count, repeats allowed for a negative one).
pub fn srandmember<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    match a {
        [_, key] => r.bulk_or_null(kv.srandmember(key, 1)?.first().map(Vec::as_slice)),
        [_, key, count] => {
            let count = args::int(count)?;
            if count == i64::MIN {
                return Err(CmdError("ERR value is out of range".into()));
            }
            let picked = kv.srandmember(key, count)?;
            r.array(picked.len());
            picked.iter().for_each(|member| r.bulk(member));
        }
        _ => return Err(args::syntax()),
    }
    Ok(())
}

pub fn smove<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    r.int(i64::from(kv.smove(a[1], a[2], a[3])?));
    Ok(())
}

fn algebra<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>, which: SetAlgebra) -> CmdResult {
    members(&kv.set_algebra(which, &a[1..])?, r);
    Ok(())
}

fn algebra_store<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>, which: SetAlgebra) -> CmdResult {
    r.int(kv.set_algebra_store(which, a[1], &a[2..])? as i64);
    Ok(())
}

pub fn sinter<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    algebra(kv, a, r, SetAlgebra::Inter)
}

pub fn sunion<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    algebra(kv, a, r, SetAlgebra::Union)
}

pub fn sdiff<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    algebra(kv, a, r, SetAlgebra::Diff)
}

pub fn sinterstore<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    algebra_store(kv, a, r, SetAlgebra::Inter)
}

pub fn sunionstore<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    algebra_store(kv, a, r, SetAlgebra::Union)
}

pub fn sdiffstore<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    algebra_store(kv, a, r, SetAlgebra::Diff)
}

/// SINTERCARD numkeys key [key ...] [LIMIT limit].
pub fn sintercard<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    let numkeys = args::int(a[1])
        .ok()
        .and_then(|n| usize::try_from(n).ok())
        .filter(|&n| n > 0)
        .ok_or_else(|| CmdError("ERR numkeys should be greater than 0".into()))?;
    let keys_end = numkeys
        .checked_add(2)
        .filter(|&end| end <= a.len())
        .ok_or_else(|| CmdError("ERR Number of keys can't be greater than number of args".into()))?;
    r.int(kv.sintercard(&a[2..keys_end], limit_option(&a[keys_end..])?)? as i64);
    Ok(())
}

/// SINTERCARD's and ZINTERCARD's optional `LIMIT limit` after the keys (0: none).
pub(super) fn limit_option(rest: &[&[u8]]) -> Result<usize, CmdError> {
    match rest {
        [] => Ok(0),
        // Redis' one text for a limit that is no integer or is negative.
        [word, limit] if args::is(word, "LIMIT") => args::int(limit)
            .ok()
            .and_then(|limit| usize::try_from(limit).ok())
            .ok_or_else(|| CmdError("ERR LIMIT can't be negative".into())),
        _ => Err(args::syntax()),
    }
}

pub fn sscan<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    let cursor = cursor(a[2])?;
    let options = ScanOptions::parse(&a[3..])?;
    if options.kind.is_some() {
        return Err(args::syntax());
    }
    let (next, found) = kv.sscan(a[1], cursor, options.pattern, options.count)?;
    r.array(2);
    r.bulk(next.to_string().as_bytes());
    r.array(found.len());
    found.iter().for_each(|member| r.bulk(member));
    Ok(())
}
