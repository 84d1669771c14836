//! Sorted-set commands, as operations on locked shards.
//!
//! Owns: the semantics of ZADD (NX XX GT LT CH INCR), ZREM, the score and rank reads,
//! ZRANGE in all its forms (by rank, score or lex, reversed, with a limit), the
//! ZREMRANGEBY* family, ZPOPMIN/ZPOPMAX and ZRANDMEMBER on one shard, and of ZMPOP,
//! ZRANGESTORE and the sorted-set algebra (ZUNION, ZINTER, ZDIFF, their STORE forms and
//! ZINTERCARD) on a group of shards. The algebra takes plain sets too (each member
//! scoring 1), as Redis does.
//!
//! Must never: store an empty sorted set (a removal that empties one deletes the key; a
//! STORE of an empty result deletes the destination), store a NaN score (ZADD INCR and
//! ZINCRBY refuse one; the algebra turns one into 0, as Redis does), or change a set
//! before every fallible check passed.
//!
//! Logging: a write to an existing sorted set notes the members it may change
//! (`LiveEntry::touch_fields`), so the record holds those members (with their scores
//! now) only; a new or replaced sorted set is logged whole.
//!
//! Events, as Redis 7.0 notes them, once per command and only when it changed the set:
//! `zadd` (`zincr` for ZINCRBY and ZADD INCR), `zrem`, `zremrangebyrank`/`score`/`lex`,
//! `zpopmin`/`zpopmax` (ZMPOP and the blocking pops too), then `del` when the set
//! emptied; the STORE forms `zunionstore`, `zinterstore`, `zdiffstore` or `zrangestore`
//! on the destination, or `del` when an empty result deleted it.

use std::ops::{Deref, DerefMut};

use crate::access::{KvResult, ShardGroup};
use crate::error::KvError;
use crate::notify::class;
use crate::store::router::KeyRef;
use crate::store::shard::Shard;
use crate::types::lists::range_of;
use crate::types::sample::sample;
use crate::types::set::MemberSet;
use crate::types::zset::{LexBound, ScoreBound, SortedSet};
use crate::value::{Entry, Value};
use rand::RngExt;

/// Members with their scores, in the order a command answers them.
pub type Scored = Vec<(Vec<u8>, f64)>;

/// ZADD's flags.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ZAddOptions {
    /// Only add new members.
    pub nx: bool,
    /// Only update existing members.
    pub xx: bool,
    /// Only update when the new score is greater.
    pub gt: bool,
    /// Only update when the new score is less.
    pub lt: bool,
    /// Count changed members too, not only added ones.
    pub ch: bool,
    /// Add the score to the member's (ZINCRBY); one pair only.
    pub incr: bool,
}

/// What ZADD answers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ZAddOutcome {
    /// Members added (and changed, with CH).
    Count(usize),
    /// With INCR: the member's score now, `None` when a condition stopped it.
    Score(Option<f64>),
}

/// Which members a range command selects.
#[derive(Debug, Clone, PartialEq)]
pub enum ZRangeBy {
    /// Ranks `start..=stop`, negatives from the end (counted from the highest score when
    /// reversed).
    Rank(i64, i64),
    /// Scores between two bounds (`min`, `max`, whatever the direction).
    Score(ScoreBound, ScoreBound),
    /// Members between two bounds by their bytes.
    Lex(LexBound, LexBound),
}

/// A ZRANGE, parsed.
#[derive(Debug, Clone, PartialEq)]
pub struct ZRange {
    /// The selection.
    pub by: ZRangeBy,
    /// Highest first.
    pub rev: bool,
    /// LIMIT offset count (score and lex ranges): a negative offset selects nothing, a
    /// negative count everything after the offset.
    pub limit: Option<(i64, i64)>,
}

/// How the algebra combines the scores a member has in several inputs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Aggregate {
    /// Their sum (the default).
    #[default]
    Sum,
    /// The lowest.
    Min,
    /// The highest.
    Max,
}

/// Which algebra a multi-key sorted-set command computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ZAlgebra {
    /// Members in any input.
    Union,
    /// Members in every input.
    Inter,
    /// Members of the first input in none of the others (with the first's scores).
    Diff,
}

/// The inputs' weights and the aggregate of ZUNION/ZINTER (ZDIFF takes neither).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Combine {
    /// One weight per input key; empty: all 1.
    pub weights: Vec<f64>,
    /// How scores combine.
    pub aggregate: Aggregate,
}

/// The sorted set inside `value`, or WRONGTYPE.
fn as_zset(value: &Value) -> KvResult<&SortedSet> {
    match value {
        Value::ZSet(set) => Ok(set),
        _ => Err(KvError::WrongType),
    }
}

/// The sorted set inside `value`, mutably; the caller checked the type.
fn zset_mut(value: &mut Value) -> &mut SortedSet {
    match value {
        Value::ZSet(set) => set,
        _ => unreachable!("the caller checked that the key holds a sorted set"),
    }
}

/// Applies ZADD's pairs to `set`: (added, changed, the last pair's score now or `None`
/// when a condition skipped it). An INCR that would make NaN fails before any change.
fn apply_zadd(
    set: &mut SortedSet,
    options: ZAddOptions,
    pairs: &[(f64, &[u8])],
) -> KvResult<(usize, usize, Option<f64>)> {
    let (mut added, mut changed, mut last) = (0, 0, None);
    for &(score, member) in pairs {
        let current = set.score(member);
        last = None;
        if (current.is_some() && options.nx) || (current.is_none() && options.xx) {
            continue;
        }
        let wanted = match (options.incr, current) {
            (true, Some(current)) => current + score,
            _ => score,
        };
        // Checked before GT/LT, as Redis does: `ZADD GT INCR` of -inf onto inf fails.
        if wanted.is_nan() {
            return Err(KvError::ScoreNan);
        }
        if current.is_some_and(|current| (options.gt && wanted <= current) || (options.lt && wanted >= current)) {
            continue;
        }
        last = Some(wanted);
        match set.insert(member, wanted) {
            None => added += 1,
            Some(old) if old != wanted => changed += 1,
            Some(_) => {}
        }
    }
    Ok((added, changed, last))
}

/// The ranks `start..end` a range selects, in ascending rank order, after its limit.
fn span_of(set: &SortedSet, range: &ZRange) -> (usize, usize) {
    let len = set.len();
    let (start, end) = match &range.by {
        ZRangeBy::Rank(start, stop) => match range_of(*start, *stop, len) {
            Some((start, end)) if range.rev => (len - end, len - start),
            Some(span) => span,
            None => return (0, 0),
        },
        ZRangeBy::Score(min, max) => set.score_span(*min, *max),
        ZRangeBy::Lex(min, max) => set.lex_span(min, max),
    };
    let Some((offset, count)) = range.limit else { return (start, end) };
    let Ok(offset) = usize::try_from(offset) else { return (0, 0) };
    let offset = offset.min(end - start);
    let taken = usize::try_from(count).map_or(end - start - offset, |count| count.min(end - start - offset));
    match range.rev {
        true => (end - offset - taken, end - offset),
        false => (start + offset, start + offset + taken),
    }
}

/// The members a range selects, in the command's order.
fn select(set: &SortedSet, range: &ZRange) -> Scored {
    let (start, end) = span_of(set, range);
    let owned = |(member, score): (&[u8], f64)| (member.to_vec(), score);
    match range.rev {
        true => set.range_rev(start, end).map(owned).collect(),
        false => set.range(start, end).map(owned).collect(),
    }
}

/// A sorted set of `members` (in any order).
fn build(members: &Scored) -> SortedSet {
    members.iter().map(|(member, score)| (member.as_slice(), *score)).collect()
}

impl Shard {
    /// The sorted set stored at `key` (None if missing), or WRONGTYPE.
    pub fn read_zset(&self, key: KeyRef<'_>, now: u64) -> KvResult<Option<&SortedSet>> {
        self.get(key, now).map(|entry| as_zset(&entry.value)).transpose()
    }

    /// ZADD and ZINCRBY (`options.incr`).
    pub fn zadd(
        &mut self,
        key: KeyRef<'_>,
        now: u64,
        options: ZAddOptions,
        pairs: &[(f64, &[u8])],
    ) -> KvResult<ZAddOutcome> {
        let outcome = |(added, changed, last): (usize, usize, Option<f64>)| match options {
            ZAddOptions { incr: true, .. } => ZAddOutcome::Score(last),
            ZAddOptions { ch: true, .. } => ZAddOutcome::Count(added + changed),
            _ => ZAddOutcome::Count(added),
        };
        let counts = match self.get_mut_untouched(key, now) {
            Some(mut live) => {
                as_zset(live.value())?;
                live.touch_fields(pairs.iter().map(|(_, member)| *member));
                live.update(|value| apply_zadd(zset_mut(value), options, pairs))?
            }
            None => {
                let mut set = SortedSet::default();
                let counts = apply_zadd(&mut set, options, pairs)?;
                if !set.is_empty() {
                    self.insert(key, Entry::new(Value::ZSet(Box::new(set)), None));
                }
                counts
            }
        };
        // Redis notes a ZADD that added or re-scored a member; one that changed nothing
        // (conditions, same scores) notes nothing.
        if counts.0 + counts.1 > 0 {
            self.event(class::ZSET, if options.incr { "zincr" } else { "zadd" }, key.bytes);
        }
        Ok(outcome(counts))
    }

    /// ZREM: how many members were removed; deletes an emptied sorted set.
    pub fn zrem(&mut self, key: KeyRef<'_>, now: u64, members: &[&[u8]]) -> KvResult<usize> {
        let Some(mut live) = self.get_mut_untouched(key, now) else { return Ok(0) };
        as_zset(live.value())?;
        live.touch_fields(members.iter().copied());
        let (removed, empty) = live.update(|value| {
            let set = zset_mut(value);
            (members.iter().filter(|member| set.remove(member).is_some()).count(), set.is_empty())
        });
        if empty {
            live.remove();
            self.touch(key.bytes);
        }
        if removed > 0 {
            self.event(class::ZSET, "zrem", key.bytes);
        }
        if empty {
            self.event(class::GENERIC, "del", key.bytes);
        }
        Ok(removed)
    }

    /// ZRANGE and its older forms: the members selected, in the command's order.
    pub fn zrange(&self, key: KeyRef<'_>, now: u64, range: &ZRange) -> KvResult<Scored> {
        Ok(self.read_zset(key, now)?.map(|set| select(set, range)).unwrap_or_default())
    }

    /// ZCOUNT and ZLEXCOUNT: how many members a range (without a limit) selects.
    pub fn zcount(&self, key: KeyRef<'_>, now: u64, by: &ZRangeBy) -> KvResult<usize> {
        let range = ZRange { by: by.clone(), rev: false, limit: None };
        Ok(self.read_zset(key, now)?.map_or(0, |set| {
            let (start, end) = span_of(set, &range);
            end - start
        }))
    }

    /// ZREMRANGEBYRANK, ZREMRANGEBYSCORE, ZREMRANGEBYLEX: how many members went; deletes
    /// an emptied sorted set.
    pub fn zremrange(&mut self, key: KeyRef<'_>, now: u64, by: &ZRangeBy) -> KvResult<usize> {
        let Some(mut live) = self.get_mut_untouched(key, now) else { return Ok(0) };
        let set = as_zset(live.value())?;
        let (start, end) = span_of(set, &ZRange { by: by.clone(), rev: false, limit: None });
        if start == end {
            return Ok(0);
        }
        let doomed: Vec<Vec<u8>> = set.range(start, end).map(|(member, _)| member.to_vec()).collect();
        live.touch_fields(doomed.iter().map(Vec::as_slice));
        let empty = live.update(|value| {
            let set = zset_mut(value);
            set.remove_ranks(start, end);
            set.is_empty()
        });
        if empty {
            live.remove();
            self.touch(key.bytes);
        }
        let event = match by {
            ZRangeBy::Rank(..) => "zremrangebyrank",
            ZRangeBy::Score(..) => "zremrangebyscore",
            ZRangeBy::Lex(..) => "zremrangebylex",
        };
        self.event(class::ZSET, event, key.bytes);
        if empty {
            self.event(class::GENERIC, "del", key.bytes);
        }
        Ok(doomed.len())
    }

    /// ZPOPMIN and ZPOPMAX (`max`): up to `count` members from that end, removed; `None`
    /// when the key is missing. Deletes an emptied sorted set.
    pub fn zpop(&mut self, key: KeyRef<'_>, now: u64, max: bool, count: usize) -> KvResult<Option<Scored>> {
        let Some(mut live) = self.get_mut_untouched(key, now) else { return Ok(None) };
        let set = as_zset(live.value())?;
        let len = set.len();
        let taken = count.min(len);
        // A count of 0 pops nothing, and Redis notes nothing.
        if taken == 0 {
            return Ok(Some(Vec::new()));
        }
        let event = if max { "zpopmax" } else { "zpopmin" };
        if taken == len {
            let popped: Scored = match max {
                true => set.range_rev(0, len).map(|(m, s)| (m.to_vec(), s)).collect(),
                false => set.range(0, len).map(|(m, s)| (m.to_vec(), s)).collect(),
            };
            live.remove();
            self.touch(key.bytes);
            self.event(class::ZSET, event, key.bytes);
            self.event(class::GENERIC, "del", key.bytes);
            return Ok(Some(popped));
        }
        let popped = live.update(|value| zset_mut(value).pop(max, taken));
        // Noted after the change: the record reads the members back, and finds them gone.
        live.touch_fields(popped.iter().map(|(member, _)| member.as_slice()));
        self.event(class::ZSET, event, key.bytes);
        Ok(Some(popped))
    }

    /// ZRANDMEMBER key count (see `sample`); a missing key has none.
    pub fn zrandmember(&self, key: KeyRef<'_>, now: u64, count: i64) -> KvResult<Scored> {
        let Some(set) = self.read_zset(key, now)? else { return Ok(Vec::new()) };
        let mut rng = rand::rng();
        let picked = sample(
            count,
            set.len(),
            || set.random(|n| rng.random_range(0..n)).map(|(member, _)| member),
            || set.members().map(|(member, _)| member).collect(),
        );
        Ok(picked.into_iter().map(|member| (member.to_vec(), set.score(member).expect("a member"))).collect())
    }
}

/// An input of the algebra: a sorted set, or a plain set whose members score 1.
#[derive(Clone, Copy)]
enum Source<'s> {
    Sorted(&'s SortedSet),
    Plain(&'s MemberSet),
}

impl<'s> Source<'s> {
    fn len(&self) -> usize {
        match self {
            Self::Sorted(set) => set.len(),
            Self::Plain(set) => set.len(),
        }
    }

    fn score(&self, member: &[u8]) -> Option<f64> {
        match self {
            Self::Sorted(set) => set.score(member),
            Self::Plain(set) => set.contains(member).then_some(1.0),
        }
    }

    fn members(&self) -> Box<dyn Iterator<Item = (&'s [u8], f64)> + 's> {
        match *self {
            Self::Sorted(set) => Box::new(set.members()),
            Self::Plain(set) => Box::new(set.iter().map(|member| (member, 1.0))),
        }
    }
}

/// `weight × score`, with Redis' rule that a NaN product (0 × inf) counts as 0.
fn weighted(weight: f64, score: f64) -> f64 {
    let product = weight * score;
    if product.is_nan() { 0.0 } else { product }
}

fn aggregate(how: Aggregate, into: &mut f64, score: f64) {
    match how {
        Aggregate::Sum => {
            *into += score;
            if into.is_nan() {
                // inf + -inf: Redis counts it as 0.
                *into = 0.0;
            }
        }
        Aggregate::Min => *into = into.min(score),
        Aggregate::Max => *into = into.max(score),
    }
}

/// Sorts a result by score, then member, as a sorted set would hold it.
fn in_order(mut members: Scored) -> Scored {
    members.sort_by(|a, b| a.1.partial_cmp(&b.1).expect("scores are never NaN").then_with(|| a.0.cmp(&b.0)));
    members
}

impl<S: Deref<Target = Shard>> ShardGroup<S> {
    /// The inputs at `keys` (`None` for a missing key); WRONGTYPE on a key holding
    /// neither a sorted set nor a set.
    fn sources<'s>(&'s self, keys: &[&[u8]], now: u64) -> KvResult<Vec<Option<Source<'s>>>> {
        keys.iter()
            .map(|key| {
                let (shard, key) = self.shard(key)?;
                Ok(match shard.get(key, now).map(|entry| &entry.value) {
                    None => None,
                    Some(Value::ZSet(set)) => Some(Source::Sorted(set)),
                    Some(Value::Set(set)) => Some(Source::Plain(set)),
                    Some(_) => return Err(KvError::WrongType),
                })
            })
            .collect()
    }

    /// ZUNION, ZINTER, ZDIFF: the resulting members with their scores, lowest first.
    pub fn zalgebra(&self, algebra: ZAlgebra, keys: &[&[u8]], combine: &Combine, now: u64) -> KvResult<Scored> {
        let sources = self.sources(keys, now)?;
        let weight = |i: usize| combine.weights.get(i).copied().unwrap_or(1.0);
        let result: Scored = match algebra {
            ZAlgebra::Union => {
                let mut scores: hashbrown::HashMap<&[u8], f64> = hashbrown::HashMap::new();
                for (i, source) in sources.iter().enumerate() {
                    let Some(source) = source else { continue };
                    for (member, score) in source.members() {
                        let score = weighted(weight(i), score);
                        scores
                            .entry(member)
                            .and_modify(|into| aggregate(combine.aggregate, into, score))
                            .or_insert(score);
                    }
                }
                scores.into_iter().map(|(member, score)| (member.to_vec(), score)).collect()
            }
            ZAlgebra::Inter => {
                let Some(present) = sources.into_iter().collect::<Option<Vec<_>>>() else { return Ok(Vec::new()) };
                let mut inputs: Vec<(Source<'_>, f64)> =
                    present.into_iter().enumerate().map(|(i, source)| (source, weight(i))).collect();
                // Smallest first, as Redis walks them (a sum's rounding follows that order).
                inputs.sort_by_key(|(source, _)| source.len());
                let Some(((first, first_weight), rest)) = inputs.split_first() else { return Ok(Vec::new()) };
                first
                    .members()
                    .filter_map(|(member, score)| {
                        let mut total = weighted(*first_weight, score);
                        for (other, other_weight) in rest {
                            aggregate(combine.aggregate, &mut total, weighted(*other_weight, other.score(member)?));
                        }
                        Some((member.to_vec(), total))
                    })
                    .collect()
            }
            ZAlgebra::Diff => {
                let Some(Some(first)) = sources.first() else { return Ok(Vec::new()) };
                let rest = &sources[1..];
                first
                    .members()
                    .filter(|(member, _)| !rest.iter().flatten().any(|other| other.score(member).is_some()))
                    .map(|(member, score)| (member.to_vec(), score))
                    .collect()
            }
        };
        Ok(in_order(result))
    }

    /// ZINTERCARD: the intersection's size, counting stops at `limit` (0: none).
    pub fn zintercard(&self, keys: &[&[u8]], now: u64, limit: usize) -> KvResult<usize> {
        let Some(mut present) = self.sources(keys, now)?.into_iter().collect::<Option<Vec<_>>>() else { return Ok(0) };
        present.sort_by_key(Source::len);
        let Some((first, rest)) = present.split_first() else { return Ok(0) };
        let limit = if limit == 0 { usize::MAX } else { limit };
        Ok(first
            .members()
            .filter(|(member, _)| rest.iter().all(|other| other.score(member).is_some()))
            .take(limit)
            .count())
    }
}

impl<S: DerefMut<Target = Shard>> ShardGroup<S> {
    /// Stores `members` at `dst` as a new sorted set without a TTL (replacing whatever
    /// was there; an empty result deletes it); their count. Notes `event` (the storing
    /// command's), or `del` when an empty result deleted `dst`.
    fn store_scored(&mut self, dst: &[u8], now: u64, members: &Scored, event: &'static str) -> KvResult<usize> {
        let (shard, dst) = self.shard_mut(dst)?;
        if members.is_empty() {
            if shard.remove(dst, now).is_some() {
                shard.event(class::GENERIC, "del", dst.bytes);
            }
        } else {
            shard.put(dst, now, Value::ZSet(Box::new(build(members))), None);
            shard.event(class::ZSET, event, dst.bytes);
        }
        Ok(members.len())
    }

    /// ZUNIONSTORE, ZINTERSTORE, ZDIFFSTORE: the stored result's size.
    pub fn zalgebra_store(
        &mut self,
        algebra: ZAlgebra,
        dst: &[u8],
        keys: &[&[u8]],
        combine: &Combine,
        now: u64,
    ) -> KvResult<usize> {
        let members = self.zalgebra(algebra, keys, combine, now)?;
        let event = match algebra {
            ZAlgebra::Union => "zunionstore",
            ZAlgebra::Inter => "zinterstore",
            ZAlgebra::Diff => "zdiffstore",
        };
        self.store_scored(dst, now, &members, event)
    }

    /// ZRANGESTORE: stores the members `range` selects from `src` at `dst`; their count.
    pub fn zrangestore(&mut self, dst: &[u8], src: &[u8], range: &ZRange, now: u64) -> KvResult<usize> {
        let (shard, src_key) = self.shard(src)?;
        let members = shard.zrange(src_key, now, range)?;
        self.store_scored(dst, now, &members, "zrangestore")
    }

    /// ZMPOP: up to `count` members from the first of `keys` holding a sorted set, with
    /// that key; `None` when all are missing. WRONGTYPE on a key of another type met
    /// before one with members.
    pub fn zmpop(&mut self, keys: &[&[u8]], now: u64, max: bool, count: usize) -> KvResult<Option<(Vec<u8>, Scored)>> {
        for key in keys {
            let (shard, found) = self.shard_mut(key)?;
            if let Some(members) = shard.zpop(found, now, max, count)? {
                return Ok(Some((key.to_vec(), members)));
            }
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set_of(pairs: &[(&str, f64)]) -> SortedSet {
        pairs.iter().map(|(member, score)| (member.as_bytes(), *score)).collect()
    }

    fn members(scored: &Scored) -> Vec<&str> {
        scored.iter().map(|(member, _)| std::str::from_utf8(member).unwrap()).collect()
    }

    #[test]
    fn zadd_conditions_follow_redis() {
        let mut set = set_of(&[("a", 1.0)]);
        let add =
            |set: &mut SortedSet, options, score, member: &str| apply_zadd(set, options, &[(score, member.as_bytes())]);
        let gt = ZAddOptions { gt: true, ..ZAddOptions::default() };
        assert_eq!(add(&mut set, gt, 0.5, "a").unwrap(), (0, 0, None), "GT keeps a higher score");
        assert_eq!(add(&mut set, gt, 2.0, "a").unwrap(), (0, 1, Some(2.0)));
        assert_eq!(add(&mut set, gt, 0.5, "b").unwrap(), (1, 0, Some(0.5)), "GT still adds new members");
        let xx = ZAddOptions { xx: true, ..ZAddOptions::default() };
        assert_eq!(add(&mut set, xx, 1.0, "c").unwrap(), (0, 0, None));
        let incr = ZAddOptions { incr: true, ..ZAddOptions::default() };
        assert_eq!(add(&mut set, incr, 3.0, "a").unwrap(), (0, 1, Some(5.0)));
        assert_eq!(add(&mut set, incr, f64::INFINITY, "a").unwrap().2, Some(f64::INFINITY));
        assert_eq!(add(&mut set, incr, f64::NEG_INFINITY, "a"), Err(KvError::ScoreNan));
        assert_eq!(set.score(b"a"), Some(f64::INFINITY), "a refused INCR changes nothing");
    }

    #[test]
    fn ranges_apply_direction_and_limit() {
        let set = set_of(&[("a", 1.0), ("b", 2.0), ("c", 3.0), ("d", 4.0), ("e", 5.0)]);
        let rank = |start, stop, rev| ZRange { by: ZRangeBy::Rank(start, stop), rev, limit: None };
        assert_eq!(members(&select(&set, &rank(0, 1, true))), ["e", "d"]);
        assert_eq!(members(&select(&set, &rank(-2, -1, false))), ["d", "e"]);
        assert_eq!(members(&select(&set, &rank(3, 1, false))), Vec::<&str>::new());
        let bound = |value| ScoreBound { value, exclusive: false };
        let by_score = ZRangeBy::Score(bound(2.0), bound(f64::INFINITY));
        let limited = |offset, count, rev| ZRange { by: by_score.clone(), rev, limit: Some((offset, count)) };
        assert_eq!(members(&select(&set, &limited(1, 2, false))), ["c", "d"]);
        assert_eq!(members(&select(&set, &limited(1, 2, true))), ["d", "c"]);
        assert_eq!(members(&select(&set, &limited(1, -1, true))), ["d", "c", "b"]);
        assert_eq!(members(&select(&set, &limited(-1, 2, false))), Vec::<&str>::new());
        assert_eq!(members(&select(&set, &limited(10, 2, false))), Vec::<&str>::new());
    }

    #[test]
    fn weighted_sums_turn_nan_into_zero() {
        assert_eq!(weighted(0.0, f64::INFINITY), 0.0);
        let mut total = f64::INFINITY;
        aggregate(Aggregate::Sum, &mut total, f64::NEG_INFINITY);
        assert_eq!(total, 0.0);
        let mut low = 3.0;
        aggregate(Aggregate::Min, &mut low, 1.0);
        assert_eq!(low, 1.0);
    }
}
