//! List commands: pushes and pops at both ends, ranges, LINDEX/LSET/LINSERT/LREM/LTRIM,
//! LPOS, LMOVE (RPOPLPUSH) and LMPOP.
//!
//! Owns: turning RESP arguments into `KvOps` calls for the `list` group, with Redis'
//! option parsing and error texts, and shaping their replies, one function per command,
//! each generic over `KvOps` so the table can hold it for a keyspace and for EXEC's
//! locked block. Never: hold semantics of its own, write a reply before the call has
//! succeeded, or decide anything by a command's name (the table chose this function).

use super::args::{self, CmdError, CmdResult};
use crate::resp::reply::Reply;
use hotset_core::kv::{End, KvOps, Popped, PosOptions};

/// `LEFT` or `RIGHT`, or a syntax error.
pub fn end(arg: &[u8]) -> Result<End, CmdError> {
    if args::is(arg, "LEFT") {
        Ok(End::Left)
    } else if args::is(arg, "RIGHT") {
        Ok(End::Right)
    } else {
        Err(args::syntax())
    }
}

/// A count that must be positive, with Redis' "must be positive" text.
fn positive_count(arg: &[u8]) -> Result<usize, CmdError> {
    let out_of_range = || CmdError("ERR value is out of range, must be positive".into());
    usize::try_from(args::int(arg).map_err(|_| out_of_range())?).map_err(|_| out_of_range())
}

fn bulks(items: &[Vec<u8>], r: &mut Reply<'_>) {
    r.array(items.len());
    items.iter().for_each(|item| r.bulk(item));
}

fn push<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>, end: End, only_existing: bool) -> CmdResult {
    r.int(kv.push(a[1], end, &a[2..], only_existing)? as i64);
    Ok(())
}

pub fn lpush<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    push(kv, a, r, End::Left, false)
}

pub fn rpush<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    push(kv, a, r, End::Right, false)
}

pub fn lpushx<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    push(kv, a, r, End::Left, true)
}

pub fn rpushx<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    push(kv, a, r, End::Right, true)
}

/// LPOP/RPOP key [count]: one element as a bulk string, or with a count an array (an
/// empty one for count 0 on a list); a missing key is null (a null array with a count).
fn pop<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>, end: End, name: &str) -> CmdResult {
    match a {
        [_, key] => {
            let items = kv.pop(key, end, 1)?;
            r.bulk_or_null(items.as_ref().and_then(|items| items.first()).map(Vec::as_slice));
        }
        [_, key, count] => match kv.pop(key, end, positive_count(count)?)? {
            Some(items) => bulks(&items, r),
            None => r.null_array(),
        },
        _ => return Err(args::wrong_arity(name)),
    }
    Ok(())
}

pub fn lpop<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    pop(kv, a, r, End::Left, "LPOP")
}

pub fn rpop<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    pop(kv, a, r, End::Right, "RPOP")
}

pub fn llen<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    r.int(kv.llen(a[1])? as i64);
    Ok(())
}

pub fn lindex<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    r.bulk_or_null(kv.lindex(a[1], args::int(a[2])?)?.as_deref());
    Ok(())
}

pub fn lrange<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    // Encoded as the list is walked: no copy of each element first.
    kv.lrange_with(a[1], args::int(a[2])?, args::int(a[3])?, |items| {
        r.array(items.len());
        items.for_each(|item| r.bulk(item));
    })?;
    Ok(())
}

pub fn lset<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    kv.lset(a[1], args::int(a[2])?, a[3])?;
    r.ok();
    Ok(())
}

/// LINSERT key BEFORE|AFTER pivot element.
pub fn linsert<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    let after = if args::is(a[2], "AFTER") {
        true
    } else if args::is(a[2], "BEFORE") {
        false
    } else {
        return Err(args::syntax());
    };
    r.int(kv.linsert(a[1], after, a[3], a[4])?);
    Ok(())
}

pub fn lrem<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    r.int(kv.lrem(a[1], args::int(a[2])?, a[3])? as i64);
    Ok(())
}

pub fn ltrim<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    kv.ltrim(a[1], args::int(a[2])?, args::int(a[3])?)?;
    r.ok();
    Ok(())
}

/// LPOS key element [RANK rank] [COUNT num] [MAXLEN len].
pub fn lpos<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    let mut options = PosOptions::default();
    let mut at = 3;
    while at < a.len() {
        let value = *a.get(at + 1).ok_or_else(args::syntax)?;
        if args::is(a[at], "RANK") {
            let rank = args::int(value)?;
            if rank == 0 {
                return Err(CmdError(
                    "ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... \
                     or use negative to start from the end of the list"
                        .into(),
                ));
            }
            if rank == i64::MIN {
                return Err(CmdError("ERR value is out of range".into()));
            }
            options.rank = rank;
        } else if args::is(a[at], "COUNT") {
            let count = args::int(value)?;
            options.count = Some(usize::try_from(count).map_err(|_| CmdError("ERR COUNT can't be negative".into()))?);
        } else if args::is(a[at], "MAXLEN") {
            let maxlen = args::int(value)?;
            options.maxlen = usize::try_from(maxlen).map_err(|_| CmdError("ERR MAXLEN can't be negative".into()))?;
        } else {
            return Err(args::syntax());
        }
        at += 2;
    }
    let found = kv.lpos(a[1], a[2], options)?;
    match options.count {
        None => match found.first() {
            Some(&index) => r.int(index as i64),
            None => r.null(),
        },
        Some(_) => {
            r.array(found.len());
            found.iter().for_each(|&index| r.int(index as i64));
        }
    }
    Ok(())
}

/// LMOVE source destination LEFT|RIGHT LEFT|RIGHT.
pub fn lmove<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    let (from, to) = (end(a[3])?, end(a[4])?);
    r.bulk_or_null(kv.lmove(a[1], a[2], from, to)?.as_deref());
    Ok(())
}

/// RPOPLPUSH source destination: LMOVE source destination RIGHT LEFT.
pub fn rpoplpush<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    r.bulk_or_null(kv.lmove(a[1], a[2], End::Right, End::Left)?.as_deref());
    Ok(())
}

/// The parsed form of LMPOP's (and BLMPOP's) `numkeys key [key ...] LEFT|RIGHT [COUNT n]`,
/// and of ZMPOP's, whose end is MIN|MAX (`W`).
pub struct MPop<'a, W = End> {
    pub keys: Vec<&'a [u8]>,
    pub end: W,
    pub count: usize,
}

impl<'a> MPop<'a> {
    /// Parses `a`, which starts at `numkeys`.
    pub fn parse(a: &[&'a [u8]]) -> Result<MPop<'a>, CmdError> {
        MPop::parse_with(a, end)
    }
}

impl<'a, W> MPop<'a, W> {
    /// Parses `a`, which starts at `numkeys`, reading the end word with `which`.
    pub fn parse_with(a: &[&'a [u8]], which: fn(&[u8]) -> Result<W, CmdError>) -> Result<MPop<'a, W>, CmdError> {
        let numkeys = args::int(a[0])
            .ok()
            .and_then(|n| usize::try_from(n).ok())
            .filter(|&n| n > 0)
            .ok_or_else(|| CmdError("ERR numkeys should be greater than 0".into()))?;
        let end_at = numkeys.checked_add(1).filter(|&at| at < a.len()).ok_or_else(args::syntax)?;
        let keys = a[1..end_at].to_vec();
        let end = which(a[end_at])?;
        let count = match &a[end_at + 1..] {
            [] => 1,
            [word, count] if args::is(word, "COUNT") => args::int(count)
                .ok()
                .and_then(|n| usize::try_from(n).ok())
                .filter(|&n| n > 0)
                .ok_or_else(|| CmdError("ERR count should be greater than 0".into()))?,
            _ => return Err(args::syntax()),
        };
        Ok(MPop { keys, end, count })
    }
}

/// Writes LMPOP's answer: `[key, [elements]]`, or a null array.
pub fn mpop_reply(popped: Option<Popped>, r: &mut Reply<'_>) {
    match popped {
        Some((key, items)) => {
            r.array(2);
            r.bulk(&key);
            bulks(&items, r);
        }
        None => r.null_array(),
    }
}

/// LMPOP numkeys key [key ...] LEFT|RIGHT [COUNT count].
pub fn lmpop<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    let mpop = MPop::parse(&a[1..])?;
    mpop_reply(kv.lmpop(&mpop.keys, mpop.end, mpop.count)?, r);
    Ok(())
}
