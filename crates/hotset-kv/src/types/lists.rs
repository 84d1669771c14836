//! List commands, as operations on locked shards.
//!
//! Owns: the semantics of LPUSH, RPUSH, LPUSHX, RPUSHX, LPOP, RPOP, LLEN, LRANGE,
//! LINDEX, LSET, LINSERT, LREM, LTRIM and LPOS on one shard, and of LMOVE (RPOPLPUSH)
//! and LMPOP on a group of shards. The blocking forms are the same operations: the
//! server decides when to run them.
//!
//! Must never: leave an empty list stored (a pop or trim that empties it deletes the
//! key; a push of nothing creates nothing), or change a list before every fallible
//! check passed.
//!
//! Logging: a push, pop, LSET or LTRIM on an existing list notes the positions it wrote
//! (`LiveEntry::touch_span`), so the record holds the list's window and those elements
//! only; LINSERT and LREM shift positions and note the key whole.
//!
//! Events, as Redis 7.0 notes them: `lpush`/`rpush` (the X forms too), `lpop`/`rpop`
//! (LMPOP and the blocking pops too), `linsert`, `lset`, `lrem` (when it removed some),
//! `ltrim` (always, even when nothing went); an emptied list then notes `del`. LMOVE
//! notes the push on the destination before the pop on the source, as Redis does.

use std::ops::DerefMut;

use crate::access::{Ctx, KvResult, ShardGroup};
use crate::error::KvError;
use crate::notify::class;
use crate::store::router::KeyRef;
use crate::store::shard::Shard;
use crate::types::list::{End, Iter as ListIter, List};
use crate::value::{Entry, Value};

/// The list inside `value`, or WRONGTYPE.
fn as_list(value: &Value) -> KvResult<&List> {
    match value {
        Value::List(list) => Ok(list),
        _ => Err(KvError::WrongType),
    }
}

/// The list inside `value`, mutably; the caller checked the type.
fn list_mut(value: &mut Value) -> &mut List {
    match value {
        Value::List(list) => list,
        _ => unreachable!("the caller checked that the key holds a list"),
    }
}

/// Redis' index rule: negative counts from the tail; `None` when outside the list.
fn index_of(index: i64, len: usize) -> Option<usize> {
    let index = if index < 0 { index.checked_add(len as i64)? } else { index };
    usize::try_from(index).ok().filter(|&i| i < len)
}

/// Redis' range rule (LRANGE, LTRIM): `start..=stop`, negatives from the tail, clamped;
/// `None` when empty.
pub(crate) fn range_of(start: i64, stop: i64, len: usize) -> Option<(usize, usize)> {
    let len = len as i64;
    let start = if start < 0 { (start + len).max(0) } else { start };
    let stop = if stop < 0 { stop + len } else { stop.min(len - 1) };
    (start <= stop && start < len).then(|| (start as usize, stop as usize + 1))
}

/// The event of a push onto `end`.
fn push_event(end: End) -> &'static str {
    match end {
        End::Left => "lpush",
        End::Right => "rpush",
    }
}

/// The event of a pop from `end`.
fn pop_event(end: End) -> &'static str {
    match end {
        End::Left => "lpop",
        End::Right => "rpop",
    }
}

/// What LMPOP took: the key, and the elements popped from it.
pub type Popped = (Vec<u8>, Vec<Vec<u8>>);

/// LPOS's options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PosOptions {
    /// The match to start from: 1 the first from the head, -1 the first from the tail.
    pub rank: i64,
    /// How many matches to return; `None`: one, as an integer (0: all).
    pub count: Option<usize>,
    /// How many elements to look at at most (0: all).
    pub maxlen: usize,
}

impl Default for PosOptions {
    fn default() -> Self {
        PosOptions { rank: 1, count: None, maxlen: 0 }
    }
}

impl Shard {
    /// The list stored at `key` (None if missing), or WRONGTYPE.
    pub fn read_list(&self, key: KeyRef<'_>, now: u64) -> KvResult<Option<&List>> {
        self.get(key, now).map(|entry| as_list(&entry.value)).transpose()
    }

    /// LPUSH/RPUSH (LPUSHX/RPUSHX with `only_existing`): the list's new length (0 when
    /// `only_existing` found no list).
    pub fn push(
        &mut self,
        key: KeyRef<'_>,
        ctx: &Ctx,
        end: End,
        items: &[&[u8]],
        only_existing: bool,
    ) -> KvResult<usize> {
        for item in items {
            ctx.check_value_len(item.len())?;
        }
        if let Some(mut live) = self.get_mut_untouched(key, ctx.now) {
            let list = as_list(live.value())?;
            let written = match end {
                End::Left => list.first() - items.len() as i64..list.first(),
                End::Right => {
                    let tail = list.first() + list.len() as i64;
                    tail..tail + items.len() as i64
                }
            };
            live.touch_span(written);
            let len = live.update(|value| {
                let list = list_mut(value);
                items.iter().for_each(|item| list.push(end, item));
                list.len()
            });
            if !items.is_empty() {
                self.event(class::LIST, push_event(end), key.bytes);
            }
            return Ok(len);
        }
        if only_existing || items.is_empty() {
            return Ok(0);
        }
        let mut list = List::default();
        items.iter().for_each(|item| list.push(end, item));
        let len = list.len();
        self.insert(key, Entry::new(Value::List(Box::new(list)), None));
        self.event(class::LIST, push_event(end), key.bytes);
        Ok(len)
    }

    /// LPOP/RPOP: up to `count` elements from `end`; `None` when the key is missing.
    /// Deletes an emptied list.
    pub fn pop(&mut self, key: KeyRef<'_>, now: u64, end: End, count: usize) -> KvResult<Option<Vec<Vec<u8>>>> {
        let Some((items, emptied)) = self.take(key, now, end, count)? else { return Ok(None) };
        if !items.is_empty() {
            self.event(class::LIST, pop_event(end), key.bytes);
        }
        if emptied {
            self.event(class::GENERIC, "del", key.bytes);
        }
        Ok(Some(items))
    }

    /// `pop` without its events (LMOVE notes them in its own order): the elements, and
    /// whether the list was emptied and deleted.
    fn take(&mut self, key: KeyRef<'_>, now: u64, end: End, count: usize) -> KvResult<Option<(Vec<Vec<u8>>, bool)>> {
        let Some(mut live) = self.get_mut_untouched(key, now) else { return Ok(None) };
        let list = as_list(live.value())?;
        let span = list.first()..list.first();
        if count == 0 {
            return Ok(Some((Vec::new(), false)));
        }
        live.touch_span(span);
        let (items, empty) = live.update(|value| {
            let list = list_mut(value);
            let items: Vec<Vec<u8>> = (0..count).map_while(|_| list.pop(end)).collect();
            (items, list.is_empty())
        });
        if empty {
            live.remove();
            self.touch(key.bytes);
        }
        Ok(Some((items, empty)))
    }

    /// LLEN.
    pub fn llen(&self, key: KeyRef<'_>, now: u64) -> KvResult<usize> {
        Ok(self.read_list(key, now)?.map_or(0, List::len))
    }

    /// LINDEX.
    pub fn lindex(&self, key: KeyRef<'_>, now: u64, index: i64) -> KvResult<Option<Vec<u8>>> {
        let Some(list) = self.read_list(key, now)? else { return Ok(None) };
        Ok(index_of(index, list.len()).and_then(|i| list.get(i)).map(<[u8]>::to_vec))
    }

    /// LRANGE.
    pub fn lrange(&self, key: KeyRef<'_>, now: u64, start: i64, stop: i64) -> KvResult<Vec<Vec<u8>>> {
        self.lrange_with(key, now, start, stop, |items| items.map(<[u8]>::to_vec).collect())
    }

    /// LRANGE without copying the elements: `f` walks them (none for a missing key)
    /// while the shard is read-locked.
    pub fn lrange_with<R>(
        &self,
        key: KeyRef<'_>,
        now: u64,
        start: i64,
        stop: i64,
        f: impl FnOnce(ListIter<'_>) -> R,
    ) -> KvResult<R> {
        let Some(list) = self.read_list(key, now)? else { return Ok(f(ListIter::default())) };
        let Some((start, end)) = range_of(start, stop, list.len()) else { return Ok(f(ListIter::default())) };
        Ok(f(list.range(start, end)))
    }

    /// LSET: `ERR no such key` on a missing key, `ERR index out of range` outside it.
    pub fn lset(&mut self, key: KeyRef<'_>, ctx: &Ctx, index: i64, item: &[u8]) -> KvResult<()> {
        ctx.check_value_len(item.len())?;
        let Some(mut live) = self.get_mut_untouched(key, ctx.now) else { return Err(KvError::NoSuchKey) };
        let list = as_list(live.value())?;
        let index = index_of(index, list.len()).ok_or(KvError::IndexOutOfRange)?;
        let at = list.first() + index as i64;
        live.touch_span(at..at + 1);
        live.update(|value| list_mut(value).set(index, item));
        self.event(class::LIST, "lset", key.bytes);
        Ok(())
    }

    /// LINSERT: the new length, -1 when `pivot` is not in the list, 0 when the key is
    /// missing.
    pub fn linsert(&mut self, key: KeyRef<'_>, ctx: &Ctx, after: bool, pivot: &[u8], item: &[u8]) -> KvResult<i64> {
        ctx.check_value_len(item.len())?;
        let Some(mut live) = self.get_mut_untouched(key, ctx.now) else { return Ok(0) };
        let list = as_list(live.value())?;
        let Some(found) = list.iter().position(|element| element == pivot) else { return Ok(-1) };
        let len = live.update(|value| {
            let list = list_mut(value);
            list.insert(found + usize::from(after), item);
            list.len()
        });
        self.touch(key.bytes);
        self.event(class::LIST, "linsert", key.bytes);
        Ok(len as i64)
    }

    /// LREM: removes up to `count` elements equal to `item` (from the tail when negative,
    /// all when 0); how many went. Deletes an emptied list.
    pub fn lrem(&mut self, key: KeyRef<'_>, now: u64, count: i64, item: &[u8]) -> KvResult<usize> {
        let Some(mut live) = self.get_mut_untouched(key, now) else { return Ok(0) };
        as_list(live.value())?;
        let end = if count < 0 { End::Right } else { End::Left };
        let limit = usize::try_from(count.unsigned_abs()).unwrap_or(usize::MAX);
        let (removed, empty) = live.update(|value| {
            let list = list_mut(value);
            (list.remove_matching(end, limit, |element| element == item), list.is_empty())
        });
        if removed > 0 {
            if empty {
                live.remove();
            }
            self.touch(key.bytes);
            self.event(class::LIST, "lrem", key.bytes);
            if empty {
                self.event(class::GENERIC, "del", key.bytes);
            }
        }
        Ok(removed)
    }

    /// LTRIM: keeps `start..=stop`; deletes the key when nothing is kept.
    pub fn ltrim(&mut self, key: KeyRef<'_>, now: u64, start: i64, stop: i64) -> KvResult<()> {
        let Some(mut live) = self.get_mut_untouched(key, now) else { return Ok(()) };
        let list = as_list(live.value())?;
        let first = list.first();
        // Redis notes `ltrim` even when the range kept the whole list.
        match range_of(start, stop, list.len()) {
            Some((start, end)) => {
                live.touch_span(first..first);
                live.update(|value| list_mut(value).keep(start, end));
                self.event(class::LIST, "ltrim", key.bytes);
            }
            None => {
                live.remove();
                self.touch(key.bytes);
                self.event(class::LIST, "ltrim", key.bytes);
                self.event(class::GENERIC, "del", key.bytes);
            }
        }
        Ok(())
    }

    /// LPOS: the indexes of elements equal to `item` (see [`PosOptions`]).
    pub fn lpos(&self, key: KeyRef<'_>, now: u64, item: &[u8], options: PosOptions) -> KvResult<Vec<usize>> {
        let Some(list) = self.read_list(key, now)? else { return Ok(Vec::new()) };
        let len = list.len();
        let wanted = match options.count {
            None => 1,
            Some(0) => usize::MAX,
            Some(count) => count,
        };
        let skip = usize::try_from(options.rank.unsigned_abs() - 1).unwrap_or(usize::MAX);
        let looked = if options.maxlen == 0 { len } else { options.maxlen.min(len) };
        // One walk from the chosen end: an element found by index would walk its node.
        let indexed: Box<dyn Iterator<Item = (usize, &[u8])>> = match options.rank > 0 {
            true => Box::new(list.range(0, looked).enumerate()),
            false => Box::new(
                list.range(len - looked, len).rev().enumerate().map(|(back, element)| (len - 1 - back, element)),
            ),
        };
        Ok(indexed.filter(|&(_, element)| element == item).map(|(i, _)| i).skip(skip).take(wanted).collect())
    }
}

impl<S: DerefMut<Target = Shard>> ShardGroup<S> {
    /// LMOVE: pops from `src`'s `from` end and pushes onto `dst`'s `to` end, atomically;
    /// `None` when `src` is missing. WRONGTYPE when either key holds another type,
    /// checked before anything moves.
    ///
    /// Events, in Redis' order and all on `dst`'s shard (so that order holds across
    /// shards): `new` for a created `dst`, the push on `dst`, the pop on `src`, `del` for an
    /// emptied `src`.
    pub fn lmove(&mut self, src: &[u8], dst: &[u8], ctx: &Ctx, from: End, to: End) -> KvResult<Option<Vec<u8>>> {
        let (shard, src_key) = self.shard(src)?;
        let Some(list) = shard.read_list(src_key, ctx.now)? else { return Ok(None) };
        let onto_itself = list.get(0).filter(|_| src == dst && list.len() == 1).map(<[u8]>::to_vec);
        let (dst_shard, dst_key) = self.shard(dst)?;
        dst_shard.read_list(dst_key, ctx.now)?;
        if let Some(item) = onto_itself {
            // Moving a one-element list's element onto itself changes nothing; popping it
            // first would delete the key and create it again (a `new` Redis never notes).
            let (shard, key) = self.shard_mut(src)?;
            shard.touch(key.bytes);
            shard.event(class::LIST, push_event(to), src);
            shard.event(class::LIST, pop_event(from), src);
            return Ok(Some(item));
        }
        let (shard, src_key) = self.shard_mut(src)?;
        let Some((mut items, emptied)) = shard.take(src_key, ctx.now, from, 1)? else { return Ok(None) };
        let item = items.pop().expect("a stored list is never empty");
        let (dst_shard, dst_key) = self.shard_mut(dst)?;
        dst_shard.push(dst_key, ctx, to, &[&item], false)?;
        dst_shard.event(class::LIST, pop_event(from), src);
        if emptied {
            dst_shard.event(class::GENERIC, "del", src);
        }
        Ok(Some(item))
    }

    /// LMPOP: up to `count` elements from `end` of the first of `keys` holding a
    /// non-empty list, with that key; `None` when all are missing. WRONGTYPE on a key of
    /// another type met before one with elements.
    pub fn lmpop(&mut self, keys: &[&[u8]], now: u64, end: End, count: usize) -> KvResult<Option<Popped>> {
        for key in keys {
            let (shard, found) = self.shard_mut(key)?;
            if let Some(items) = shard.pop(found, now, end, count)? {
                return Ok(Some((key.to_vec(), items)));
            }
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indexes_and_ranges_follow_redis() {
        assert_eq!(index_of(-1, 3), Some(2));
        assert_eq!(index_of(-4, 3), None);
        assert_eq!(index_of(3, 3), None);
        assert_eq!(range_of(0, -1, 3), Some((0, 3)));
        assert_eq!(range_of(-100, 100, 3), Some((0, 3)));
        assert_eq!(range_of(2, 1, 3), None);
        assert_eq!(range_of(5, 10, 3), None);
        assert_eq!(range_of(-2, -2, 3), Some((1, 2)));
        assert_eq!(range_of(0, -4, 3), None);
        assert_eq!(range_of(i64::MIN, i64::MAX, 3), Some((0, 3)));
    }
}
