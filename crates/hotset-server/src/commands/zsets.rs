//! Sorted-set commands: ZADD and ZINCRBY, ZREM, the score, rank and count reads, ZRANGE
//! in all its forms and ZRANGESTORE, the ZREMRANGEBY* family, ZPOPMIN/ZPOPMAX and ZMPOP,
//! ZRANDMEMBER, the algebra (ZUNION, ZINTER, ZDIFF, their STORE forms, ZINTERCARD) and
//! ZSCAN.
//!
//! Owns: turning RESP arguments into `KvOps` calls for the `sorted-set` group, with
//! Redis' option parsing, argument order of checks and error texts, and shaping their
//! replies (scores as RESP3 doubles, member-score pairs nested in RESP3 where Redis nests
//! them), one function per command, each generic over `KvOps` so the table can hold it
//! for a keyspace and for EXEC's locked block. Never: hold semantics of its own, write a
//! reply before the call has succeeded, or decide anything by a command's name.

use super::args::{self, CmdError, CmdResult};
use super::keys::{ScanOptions, cursor};
use super::lists::MPop;
use super::sets::limit_option;
use crate::resp::reply::{Protocol, Reply};
use hotset_core::kv::{
    Aggregate, Combine, KvOps, LexBound, ScoreBound, Scored, ZAddOptions, ZAddOutcome, ZAlgebra, ZRange, ZRangeBy,
    parse_f64, write_d2string,
};

fn not_float() -> CmdError {
    CmdError("ERR value is not a valid float".into())
}

/// A score argument (ZADD, ZINCRBY): a float, `inf` included, NaN refused.
fn score(arg: &[u8]) -> Result<f64, CmdError> {
    parse_f64(arg).ok_or_else(not_float)
}

/// A range bound's number as C's `strtod` reads it whole: leading spaces allowed, an
/// empty text is 0, out-of-range texts saturate to infinity; NaN and trailing bytes
/// refused.
fn strtod(text: &[u8]) -> Option<f64> {
    let text = std::str::from_utf8(text).ok()?.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']);
    if text.is_empty() {
        return Some(0.0);
    }
    text.parse::<f64>().ok().filter(|value| !value.is_nan())
}

/// A score range bound: `1.5`, `(1.5` (exclusive), `-inf`, `+inf`.
fn score_bound(arg: &[u8]) -> Option<ScoreBound> {
    match arg.strip_prefix(b"(") {
        Some(rest) => Some(ScoreBound { value: strtod(rest)?, exclusive: true }),
        None => Some(ScoreBound { value: strtod(arg)?, exclusive: false }),
    }
}

/// A lex range bound: `-`, `+`, `[member`, `(member`.
fn lex_bound(arg: &[u8]) -> Option<LexBound> {
    match arg {
        b"-" => Some(LexBound::Min),
        b"+" => Some(LexBound::Max),
        [b'[', rest @ ..] => Some(LexBound::Inclusive(rest.to_vec())),
        [b'(', rest @ ..] => Some(LexBound::Exclusive(rest.to_vec())),
        _ => None,
    }
}

fn score_span(min: &[u8], max: &[u8]) -> Result<ZRangeBy, CmdError> {
    match (score_bound(min), score_bound(max)) {
        (Some(min), Some(max)) => Ok(ZRangeBy::Score(min, max)),
        _ => Err(CmdError("ERR min or max is not a float".into())),
    }
}

fn lex_span(min: &[u8], max: &[u8]) -> Result<ZRangeBy, CmdError> {
    match (lex_bound(min), lex_bound(max)) {
        (Some(min), Some(max)) => Ok(ZRangeBy::Lex(min, max)),
        _ => Err(CmdError("ERR min or max not valid string range item".into())),
    }
}

/// Members, with their scores when `withscores`: a flat array in RESP2, pairs in RESP3.
fn scored_reply(members: &Scored, withscores: bool, r: &mut Reply<'_>) {
    let nested = withscores && r.protocol == Protocol::Resp3;
    r.array(if withscores && !nested { members.len() * 2 } else { members.len() });
    for (member, score) in members {
        if nested {
            r.array(2);
        }
        r.bulk(member);
        if withscores {
            r.double(*score);
        }
    }
}

/// ZADD's flags from argument 2 on (GEOADD's: `all` false, NX XX CH only), and where
/// the pairs start.
pub fn add_flags(a: &[&[u8]], all: bool) -> (ZAddOptions, usize) {
    let mut options = ZAddOptions::default();
    let mut at = 2;
    while let Some(word) = a.get(at) {
        let flag = match word.to_ascii_uppercase().as_slice() {
            b"NX" => &mut options.nx,
            b"XX" => &mut options.xx,
            b"CH" => &mut options.ch,
            b"GT" if all => &mut options.gt,
            b"LT" if all => &mut options.lt,
            b"INCR" if all => &mut options.incr,
            _ => break,
        };
        *flag = true;
        at += 1;
    }
    (options, at)
}

/// ZADD key [NX|XX] [GT|LT] [CH] [INCR] score member [score member ...].
pub fn zadd<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    let (options, at) = add_flags(a, true);
    run_zadd(kv, a[1], options, &a[at..], r)
}

/// ZINCRBY key increment member.
pub fn zincrby<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    run_zadd(kv, a[1], ZAddOptions { incr: true, ..ZAddOptions::default() }, &a[2..], r)
}

/// ZADD's checks in Redis' order (pairs, option conflicts, every score), then the write.
fn run_zadd<K: KvOps>(kv: &K, key: &[u8], options: ZAddOptions, rest: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    if rest.is_empty() || !rest.len().is_multiple_of(2) {
        return Err(args::syntax());
    }
    if options.nx && options.xx {
        return Err(CmdError("ERR XX and NX options at the same time are not compatible".into()));
    }
    if [options.gt, options.lt, options.nx].into_iter().filter(|&on| on).count() > 1 {
        return Err(CmdError("ERR GT, LT, and/or NX options at the same time are not compatible".into()));
    }
    if options.incr && rest.len() > 2 {
        return Err(CmdError("ERR INCR option supports a single increment-element pair".into()));
    }
    let pairs =
        rest.chunks_exact(2).map(|pair| Ok((score(pair[0])?, pair[1]))).collect::<Result<Vec<_>, CmdError>>()?;
    run_zadd_pairs(kv, key, options, &pairs, r)
}

/// ZADD of parsed pairs (GEOADD's too) and its reply.
pub fn run_zadd_pairs<K: KvOps>(
    kv: &K,
    key: &[u8],
    options: ZAddOptions,
    pairs: &[(f64, &[u8])],
    r: &mut Reply<'_>,
) -> CmdResult {
    if pairs.is_empty() {
        return Err(args::syntax());
    }
    match kv.zadd(key, options, pairs)? {
        ZAddOutcome::Count(count) => r.int(count as i64),
        ZAddOutcome::Score(score) => r.double_or_null(score),
    }
    Ok(())
}

pub fn zrem<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    r.int(kv.zrem(a[1], &a[2..])? as i64);
    Ok(())
}

pub fn zcard<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    r.int(kv.zcard(a[1])? as i64);
    Ok(())
}

pub fn zscore<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    r.double_or_null(kv.zmscore(a[1], &a[2..3])?[0]);
    Ok(())
}

pub fn zmscore<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    let scores = kv.zmscore(a[1], &a[2..])?;
    r.array(scores.len());
    scores.into_iter().for_each(|score| r.double_or_null(score));
    Ok(())
}

fn rank<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>, rev: bool) -> CmdResult {
    match kv.zrank(a[1], a[2], rev)? {
        Some(rank) => r.int(rank as i64),
        None => r.null(),
    }
    Ok(())
}

pub fn zrank<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    rank(kv, a, r, false)
}

pub fn zrevrank<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    rank(kv, a, r, true)
}

pub fn zcount<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    r.int(kv.zcount(a[1], &score_span(a[2], a[3])?)? as i64);
    Ok(())
}

pub fn zlexcount<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    r.int(kv.zcount(a[1], &lex_span(a[2], a[3])?)? as i64);
    Ok(())
}

/// How a range command's selection is given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum By {
    /// Chosen by the BYSCORE/BYLEX words (ZRANGE, ZRANGESTORE); ranks without them.
    Auto,
    Rank,
    Score,
    Lex,
}

/// A range command's arguments after the key: `min max [options...]`, parsed as Redis'
/// generic range command does. `rev` is fixed by the older commands (ZREVRANGE...) and
/// `None` where the REV word may set it; `store`: ZRANGESTORE, which takes no WITHSCORES.
/// Returns the range and whether scores are wanted.
fn parse_range(a: &[&[u8]], by: By, rev: Option<bool>, store: bool) -> Result<(ZRange, bool), CmdError> {
    let (mut by, mut reversed, mut withscores, mut limit) = (by, rev.unwrap_or(false), false, None);
    let mut at = 2;
    while at < a.len() {
        let word = a[at];
        let left = a.len() - at - 1;
        if !store && args::is(word, "WITHSCORES") {
            withscores = true;
        } else if args::is(word, "LIMIT") && left >= 2 {
            limit = Some((args::int(a[at + 1])?, args::int(a[at + 2])?));
            at += 2;
        } else if rev.is_none() && !reversed && args::is(word, "REV") {
            reversed = true;
        } else if by == By::Auto && args::is(word, "BYLEX") {
            by = By::Lex;
        } else if by == By::Auto && args::is(word, "BYSCORE") {
            by = By::Score;
        } else {
            return Err(args::syntax());
        }
        at += 1;
    }
    let by = if by == By::Auto { By::Rank } else { by };
    // Redis lets a rank range carry a LIMIT whose count is -1 (and ignores it).
    if limit.is_some_and(|(_, count)| count != -1) && by == By::Rank {
        return Err(CmdError(
            "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX".into(),
        ));
    }
    if withscores && by == By::Lex {
        return Err(CmdError("ERR syntax error, WITHSCORES not supported in combination with BYLEX".into()));
    }
    // Score and lex ranges come as max then min when reversed.
    let (low, high) = if reversed && by != By::Rank { (a[1], a[0]) } else { (a[0], a[1]) };
    let (by, limit) = match by {
        By::Score => (score_span(low, high)?, limit),
        By::Lex => (lex_span(low, high)?, limit),
        _ => (ZRangeBy::Rank(args::int(low)?, args::int(high)?), None),
    };
    Ok((ZRange { by, rev: reversed, limit }, withscores))
}

fn range<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>, by: By, rev: Option<bool>) -> CmdResult {
    let (range, withscores) = parse_range(&a[2..], by, rev, false)?;
    scored_reply(&kv.zrange(a[1], &range)?, withscores, r);
    Ok(())
}

/// ZRANGE key start stop [BYSCORE|BYLEX] [REV] [LIMIT offset count] [WITHSCORES].
pub fn zrange<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    range(kv, a, r, By::Auto, None)
}

pub fn zrevrange<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    range(kv, a, r, By::Rank, Some(true))
}

pub fn zrangebyscore<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    range(kv, a, r, By::Score, Some(false))
}

pub fn zrevrangebyscore<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    range(kv, a, r, By::Score, Some(true))
}

pub fn zrangebylex<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    range(kv, a, r, By::Lex, Some(false))
}

pub fn zrevrangebylex<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    range(kv, a, r, By::Lex, Some(true))
}

/// ZRANGESTORE dst src min max [BYSCORE|BYLEX] [REV] [LIMIT offset count].
pub fn zrangestore<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    let (range, _) = parse_range(&a[3..], By::Auto, None, true)?;
    r.int(kv.zrangestore(a[1], a[2], &range)? as i64);
    Ok(())
}

pub fn zremrangebyrank<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    let by = ZRangeBy::Rank(args::int(a[2])?, args::int(a[3])?);
    r.int(kv.zremrange(a[1], &by)? as i64);
    Ok(())
}

pub fn zremrangebyscore<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    r.int(kv.zremrange(a[1], &score_span(a[2], a[3])?)? as i64);
    Ok(())
}

pub fn zremrangebylex<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    r.int(kv.zremrange(a[1], &lex_span(a[2], a[3])?)? as i64);
    Ok(())
}

/// A positive count (ZPOPMIN's, ZRANDMEMBER's), with Redis' text.
fn positive(arg: &[u8]) -> Result<usize, CmdError> {
    let out_of_range = || CmdError("ERR value is out of range, must be positive".into());
    usize::try_from(args::int(arg).map_err(|_| out_of_range())?).map_err(|_| out_of_range())
}

fn pop<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>, max: bool) -> CmdResult {
    let count = match a {
        [_, _] => None,
        [_, _, count] => Some(positive(count)?),
        _ => return Err(args::syntax()),
    };
    let popped = kv.zpop(a[1], max, count.unwrap_or(1))?.unwrap_or_default();
    // Pairs nest in RESP3 only when a count was given; a missing key is an empty array.
    let nested = count.is_some() && r.protocol == Protocol::Resp3;
    r.array(if nested { popped.len() } else { popped.len() * 2 });
    for (member, score) in &popped {
        if nested {
            r.array(2);
        }
        r.bulk(member);
        r.double(*score);
    }
    Ok(())
}

pub fn zpopmin<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    pop(kv, a, r, false)
}

pub fn zpopmax<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    pop(kv, a, r, true)
}

/// MIN or MAX (ZMPOP, BZMPOP): whether it is MAX.
pub fn min_or_max(arg: &[u8]) -> Result<bool, CmdError> {
    match arg {
        _ if args::is(arg, "MIN") => Ok(false),
        _ if args::is(arg, "MAX") => Ok(true),
        _ => Err(args::syntax()),
    }
}

/// Writes ZMPOP's and BZMPOP's answer: `[key, [[member, score], ...]]`, or a null array.
pub fn zmpop_reply(popped: Option<(Vec<u8>, Scored)>, r: &mut Reply<'_>) {
    let Some((key, members)) = popped else { return r.null_array() };
    r.array(2);
    r.bulk(&key);
    r.array(members.len());
    for (member, score) in &members {
        r.array(2);
        r.bulk(member);
        r.double(*score);
    }
}

/// ZMPOP numkeys key [key ...] MIN|MAX [COUNT count].
pub fn zmpop<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    let mpop = MPop::parse_with(&a[1..], min_or_max)?;
    zmpop_reply(kv.zmpop(&mpop.keys, mpop.end, mpop.count)?, r);
    Ok(())
}

/// ZRANDMEMBER key [count [WITHSCORES]].
pub fn zrandmember<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    let out_of_range = || CmdError("ERR value is out of range".into());
    match a {
        [_, key] => r.bulk_or_null(kv.zrandmember(key, 1)?.first().map(|(member, _)| member.as_slice())),
        [_, key, count, rest @ ..] => {
            let count = args::int(count)?;
            let withscores = match rest {
                [] => false,
                [word] if args::is(word, "WITHSCORES") => true,
                _ => return Err(args::syntax()),
            };
            if count == i64::MIN {
                return Err(CmdError(
                    "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807".into(),
                ));
            }
            if withscores && count.unsigned_abs() > (i64::MAX / 2) as u64 {
                return Err(out_of_range());
            }
            scored_reply(&kv.zrandmember(key, count)?, withscores, r);
        }
        _ => return Err(args::syntax()),
    }
    Ok(())
}

/// The algebra's `numkeys key [key ...] [WEIGHTS w ...] [AGGREGATE SUM|MIN|MAX]
/// [WITHSCORES]` (no WITHSCORES for a STORE form, neither WEIGHTS nor AGGREGATE for
/// ZDIFF); `command` names the command in the numkeys error. Returns the keys, the
/// combination and whether scores are wanted.
fn parse_algebra<'a>(
    a: &[&'a [u8]],
    command: &str,
    algebra: ZAlgebra,
    store: bool,
) -> Result<(Vec<&'a [u8]>, Combine, bool), CmdError> {
    let numkeys = args::int(a[0])?;
    if numkeys < 1 {
        return Err(CmdError(format!("ERR at least 1 input key is needed for '{command}' command")));
    }
    let numkeys = usize::try_from(numkeys).ok().filter(|&n| n < a.len()).ok_or_else(args::syntax)?;
    let keys = a[1..=numkeys].to_vec();
    let (mut combine, mut withscores) = (Combine::default(), false);
    let mut at = numkeys + 1;
    while at < a.len() {
        let left = a.len() - at;
        let word = a[at];
        if algebra != ZAlgebra::Diff && left > numkeys && args::is(word, "WEIGHTS") {
            combine.weights = a[at + 1..=at + numkeys]
                .iter()
                .map(|weight| parse_f64(weight).ok_or_else(|| CmdError("ERR weight value is not a float".into())))
                .collect::<Result<_, _>>()?;
            at += numkeys + 1;
        } else if algebra != ZAlgebra::Diff && left >= 2 && args::is(word, "AGGREGATE") {
            combine.aggregate = match a[at + 1].to_ascii_uppercase().as_slice() {
                b"SUM" => Aggregate::Sum,
                b"MIN" => Aggregate::Min,
                b"MAX" => Aggregate::Max,
                _ => return Err(args::syntax()),
            };
            at += 2;
        } else if !store && args::is(word, "WITHSCORES") {
            withscores = true;
            at += 1;
        } else {
            return Err(args::syntax());
        }
    }
    Ok((keys, combine, withscores))
}

fn algebra<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>, which: ZAlgebra, command: &str) -> CmdResult {
    let (keys, combine, withscores) = parse_algebra(&a[1..], command, which, false)?;
    scored_reply(&kv.zalgebra(which, &keys, &combine)?, withscores, r);
    Ok(())
}

fn algebra_store<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>, which: ZAlgebra, command: &str) -> CmdResult {
    let (keys, combine, _) = parse_algebra(&a[2..], command, which, true)?;
    r.int(kv.zalgebra_store(which, a[1], &keys, &combine)? as i64);
    Ok(())
}

pub fn zunion<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    algebra(kv, a, r, ZAlgebra::Union, "zunion")
}

pub fn zinter<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    algebra(kv, a, r, ZAlgebra::Inter, "zinter")
}

pub fn zdiff<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    algebra(kv, a, r, ZAlgebra::Diff, "zdiff")
}

pub fn zunionstore<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    algebra_store(kv, a, r, ZAlgebra::Union, "zunionstore")
}

pub fn zinterstore<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    algebra_store(kv, a, r, ZAlgebra::Inter, "zinterstore")
}

pub fn zdiffstore<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    algebra_store(kv, a, r, ZAlgebra::Diff, "zdiffstore")
}

/// ZINTERCARD numkeys key [key ...] [LIMIT limit].
pub fn zintercard<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    let numkeys = args::int(a[1])?;
    if numkeys < 1 {
        return Err(CmdError("ERR at least 1 input key is needed for 'zintercard' command".into()));
    }
    let keys_end = usize::try_from(numkeys).ok().and_then(|n| n.checked_add(2)).filter(|&end| end <= a.len());
    let keys_end = keys_end.ok_or_else(args::syntax)?;
    r.int(kv.zintercard(&a[2..keys_end], limit_option(&a[keys_end..])?)? as i64);
    Ok(())
}

/// ZSCAN key cursor [MATCH pattern] [COUNT count]: members and scores, flat, the scores
/// as bulk strings printed as Redis' `d2string` does.
pub fn zscan<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    let cursor = cursor(a[2])?;
    let options = ScanOptions::parse(&a[3..])?;
    if options.kind.is_some() {
        return Err(args::syntax());
    }
    let (next, found) = kv.zscan(a[1], cursor, options.pattern, options.count)?;
    r.array(2);
    r.bulk(next.to_string().as_bytes());
    r.array(found.len() * 2);
    let mut text = Vec::new();
    for (member, score) in &found {
        r.bulk(member);
        text.clear();
        write_d2string(*score, &mut text);
        r.bulk(&text);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_parse_as_redis_reads_them() {
        assert_eq!(score_bound(b"(1.5"), Some(ScoreBound { value: 1.5, exclusive: true }));
        assert_eq!(score_bound(b"-inf"), Some(ScoreBound { value: f64::NEG_INFINITY, exclusive: false }));
        assert_eq!(score_bound(b" 2"), Some(ScoreBound { value: 2.0, exclusive: false }), "strtod skips spaces");
        assert_eq!(score_bound(b"("), Some(ScoreBound { value: 0.0, exclusive: true }));
        assert!(score_bound(b"1x").is_none() && score_bound(b"nan").is_none() && score_bound(b"2 ").is_none());
        assert_eq!(lex_bound(b"[a"), Some(LexBound::Inclusive(b"a".to_vec())));
        assert_eq!(lex_bound(b"("), Some(LexBound::Exclusive(Vec::new())));
        assert!(lex_bound(b"a").is_none() && lex_bound(b"").is_none());
    }

    #[test]
    fn range_options_follow_redis() {
        let (range, withscores) =
            parse_range(&[b"(1", b"5", b"BYSCORE", b"LIMIT", b"1", b"2", b"WITHSCORES"], By::Auto, None, false)
                .unwrap();
        assert!(withscores);
        assert_eq!(range.limit, Some((1, 2)));
        let (range, _) = parse_range(&[b"5", b"(1", b"byscore", b"rev"], By::Auto, None, false).unwrap();
        let ZRangeBy::Score(min, max) = range.by else { panic!("a score range") };
        assert_eq!((min.value, min.exclusive, max.value, range.rev), (1.0, true, 5.0, true), "REV takes max first");
        let error = |a: &[&[u8]]| parse_range(a, By::Auto, None, false).unwrap_err().0;
        assert!(error(&[b"0", b"1", b"LIMIT", b"0", b"1"]).contains("LIMIT is only supported"));
        assert!(error(&[b"[a", b"+", b"BYLEX", b"WITHSCORES"]).contains("WITHSCORES not supported"));
        assert_eq!(error(&[b"0", b"1", b"BYSCORE", b"BYLEX"]), "ERR syntax error");
        assert!(
            parse_range(&[b"0", b"1", b"LIMIT", b"0", b"-1"], By::Auto, None, false).is_ok(),
            "count -1 is no limit"
        );
        assert_eq!(parse_range(&[b"0", b"1", b"WITHSCORES"], By::Auto, None, true).unwrap_err().0, "ERR syntax error");
    }
}
