//! SORT and SORT_RO, on a group of locked shards.
//!
//! Owns: what SORT answers for a list, set or sorted set: the elements compared as
//! numbers (ties by their bytes) or as bytes (ALPHA), by themselves or by the values a
//! BY pattern finds (`weight_*`, `obj_*->field`), in either direction, a LIMIT window,
//! GET patterns (`#` for the element itself), and STORE as a list; BY without a `*`
//! (`nosort`) keeps the collection's own order (a sorted set's by score).
//!
//! Must never: read a key the caller did not lock (a command with patterns locks every
//! shard, since any key may be named), or store an empty list (an empty result deletes
//! the destination, as Redis does).
//!
//! Events: SORT ... STORE notes `sortstore` (a list event) on the destination, or `del`
//! when an empty answer deleted it, as Redis 7.0 does.

use std::cmp::Ordering;
use std::ops::{Deref, DerefMut};

use crate::access::{KvResult, ShardGroup};
use crate::error::KvError;
use crate::notify::class;
use crate::store::shard::Shard;
use crate::types::list::{End, List};
use crate::value::Value;

/// SORT's options, parsed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SortOptions {
    /// BY pattern: without a `*` (conventionally `nosort`) the elements keep their order.
    pub by: Option<Vec<u8>>,
    /// GET patterns, in order; none: the elements themselves.
    pub gets: Vec<Vec<u8>>,
    /// LIMIT offset count (a negative count: to the end).
    pub limit: Option<(i64, i64)>,
    /// Highest first.
    pub desc: bool,
    /// Compare as bytes rather than as numbers.
    pub alpha: bool,
}

impl SortOptions {
    /// Whether answering reads keys other than the sorted one (so every shard is locked).
    pub fn reads_other_keys(&self) -> bool {
        self.by.as_deref().is_some_and(|by| by.contains(&b'*')) || self.gets.iter().any(|get| get.as_slice() != b"#")
    }

    fn dont_sort(&self) -> bool {
        self.by.as_deref().is_some_and(|by| !by.contains(&b'*'))
    }
}

/// Redis' SORT window: `(start, end)` inclusive over `len` elements, empty when end <
/// start.
fn window(limit: Option<(i64, i64)>, len: usize) -> (i64, i64) {
    let len = len as i64;
    let (offset, count) = limit.unwrap_or((0, -1));
    let start = offset.clamp(0, len);
    let count = count.clamp(-1, len);
    let end = if count < 0 { len - 1 } else { start + count - 1 };
    if start >= len {
        return (len - 1, len - 2);
    }
    (start, end.min(len - 1))
}

/// A number as SORT reads one: C's `strtod` over the whole text (leading spaces allowed,
/// an empty text is 0), out of range or NaN refused.
fn sort_number(bytes: &[u8]) -> Option<f64> {
    let text = std::str::from_utf8(bytes).ok()?.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']);
    if text.is_empty() {
        return Some(0.0);
    }
    let value: f64 = text.parse().ok()?;
    let overflowed =
        value.is_infinite() && !text.trim_start_matches(['+', '-']).to_ascii_lowercase().starts_with("inf");
    (!value.is_nan() && !overflowed).then_some(value)
}

/// The elements SORT starts from, and the window `(start, end)` (inclusive) over them.
type SortSource = (Vec<Vec<u8>>, (i64, i64));

impl<S: Deref<Target = Shard>> ShardGroup<S> {
    /// The value `pattern` names for `element`: `#` is the element; the first `*` is
    /// replaced by it; `->field` after the `*` reads that field of a hash; otherwise a
    /// string. `None` without a `*`, for a missing key or one of another type.
    fn lookup(&self, pattern: &[u8], element: &[u8], now: u64) -> Option<Vec<u8>> {
        if pattern == b"#" {
            return Some(element.to_vec());
        }
        let star = pattern.iter().position(|&b| b == b'*')?;
        let arrow = pattern[star + 1..].windows(2).position(|pair| pair == b"->").map(|at| star + 1 + at);
        let (key_end, field) = match arrow {
            Some(at) if at + 2 < pattern.len() => (at, Some(&pattern[at + 2..])),
            _ => (pattern.len(), None),
        };
        let key = [&pattern[..star], element, &pattern[star + 1..key_end]].concat();
        let (shard, key) = self.shard(&key).ok()?;
        let entry = shard.get(key, now)?;
        match (&entry.value, field) {
            (Value::Str(text), None) => Some(text.to_bytes()),
            (Value::Hash(map), Some(field)) => map.get(field).map(<[u8]>::to_vec),
            _ => None,
        }
    }

    /// The elements SORT starts from, in their own order, and the window already applied
    /// when they keep that order (`nosort` on a list or sorted set).
    fn sort_source(&self, key: &[u8], options: &SortOptions, now: u64) -> KvResult<SortSource> {
        let (shard, found) = self.shard(key)?;
        let value = shard.get(found, now).map(|entry| &entry.value);
        let owned = |items: &mut dyn Iterator<Item = &[u8]>| items.map(<[u8]>::to_vec).collect::<Vec<_>>();
        let len = match value {
            None => 0,
            Some(Value::List(list)) => list.len(),
            Some(Value::Set(set)) => set.len(),
            Some(Value::ZSet(set)) => set.len(),
            Some(_) => return Err(KvError::WrongType),
        };
        let (start, end) = window(options.limit, len);
        let ordered_window = options.dont_sort() && matches!(value, Some(Value::List(_) | Value::ZSet(_)));
        if ordered_window {
            let taken = (end - start + 1).max(0) as usize;
            let (start, len_after) = (start as usize, len - start as usize);
            let items = match value {
                Some(Value::List(list)) if options.desc => owned(&mut list.range(len_after - taken, len_after).rev()),
                Some(Value::List(list)) => owned(&mut list.range(start, start + taken)),
                Some(Value::ZSet(set)) if options.desc => {
                    owned(&mut set.range_rev(len_after - taken, len_after).map(|(member, _)| member))
                }
                Some(Value::ZSet(set)) => owned(&mut set.range(start, start + taken).map(|(member, _)| member)),
                _ => unreachable!("a list or a sorted set"),
            };
            return Ok((items, (0, taken as i64 - 1)));
        }
        let items = match value {
            None => Vec::new(),
            Some(Value::List(list)) => owned(&mut list.iter()),
            Some(Value::Set(set)) => owned(&mut set.iter()),
            Some(Value::ZSet(set)) => owned(&mut set.members().map(|(member, _)| member)),
            Some(_) => unreachable!("checked above"),
        };
        Ok((items, (start, end)))
    }

    /// SORT: the answer's items in order (GET values, `None` where a pattern names
    /// nothing; or the elements).
    pub fn sort(&self, key: &[u8], options: &SortOptions, now: u64, for_store: bool) -> KvResult<Vec<Option<Vec<u8>>>> {
        let (mut items, (start, end)) = self.sort_source(key, options, now)?;
        let mut options = options.clone();
        let (shard, found) = self.shard(key)?;
        // Stored sets sort by their bytes, so the stored list does not depend on a
        // hash's order (Redis does the same).
        if options.dont_sort() && for_store && matches!(shard.get(found, now).map(|e| &e.value), Some(Value::Set(_))) {
            options = SortOptions { by: None, alpha: true, ..options };
        }
        if !options.dont_sort() {
            sort_items(self, &mut items, &options, now)?;
        }
        let window = if end >= start { &items[start as usize..=end as usize] } else { &[][..] };
        if options.gets.is_empty() {
            return Ok(window.iter().map(|item| Some(item.clone())).collect());
        }
        Ok(window
            .iter()
            .flat_map(|item| options.gets.iter().map(move |pattern| (pattern, item)))
            .map(|(pattern, item)| self.lookup(pattern, item, now))
            .collect())
    }
}

/// Sorts `items` by SORT's comparison: numbers (ties by bytes) or bytes, of the elements
/// or of what the BY pattern finds (a missing one is 0, or first when ALPHA).
fn sort_items<S: Deref<Target = Shard>>(
    group: &ShardGroup<S>,
    items: &mut Vec<Vec<u8>>,
    options: &SortOptions,
    now: u64,
) -> KvResult<()> {
    let by = options.by.as_deref();
    let keys: Vec<Option<Vec<u8>>> = items
        .iter()
        .map(|item| match by {
            Some(pattern) => group.lookup(pattern, item, now),
            None => Some(item.clone()),
        })
        .collect();
    let mut order: Vec<usize> = (0..items.len()).collect();
    if options.alpha {
        order.sort_by(|&a, &b| {
            let cmp = keys[a].cmp(&keys[b]);
            if options.desc { cmp.reverse() } else { cmp }
        });
    } else {
        let scores = keys
            .iter()
            .map(|key| key.as_deref().map_or(Some(0.0), sort_number))
            .collect::<Option<Vec<f64>>>()
            .ok_or(KvError::SortNotNumber)?;
        order.sort_by(|&a, &b| {
            let cmp =
                scores[a].partial_cmp(&scores[b]).unwrap_or(Ordering::Equal).then_with(|| items[a].cmp(&items[b]));
            if options.desc { cmp.reverse() } else { cmp }
        });
    }
    let mut taken: Vec<Option<Vec<u8>>> = std::mem::take(items).into_iter().map(Some).collect();
    *items = order.into_iter().map(|at| taken[at].take().expect("each index once")).collect();
    Ok(())
}

impl<S: DerefMut<Target = Shard>> ShardGroup<S> {
    /// SORT ... STORE: stores the answer at `dst` as a list (a missing GET value as an
    /// empty string), replacing what was there; an empty answer deletes it. Its length.
    pub fn sort_store(&mut self, key: &[u8], dst: &[u8], options: &SortOptions, now: u64) -> KvResult<usize> {
        let items = self.sort(key, options, now, true)?;
        let len = items.len();
        let (shard, dst) = self.shard_mut(dst)?;
        if len == 0 {
            if shard.remove(dst, now).is_some() {
                shard.event(class::GENERIC, "del", dst.bytes);
            }
            return Ok(0);
        }
        let mut list = List::default();
        for item in &items {
            list.push(End::Right, item.as_deref().unwrap_or_default());
        }
        shard.put(dst, now, Value::List(Box::new(list)), None);
        shard.event(class::LIST, "sortstore", dst.bytes);
        Ok(len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_follow_redis() {
        assert_eq!(window(None, 5), (0, 4));
        assert_eq!(window(Some((1, 2)), 5), (1, 2));
        assert_eq!(window(Some((-10, 100)), 5), (0, 4));
        assert_eq!(window(Some((5, 10)), 5), (4, 3), "past the end: empty");
        assert_eq!(window(Some((0, 0)), 5), (0, -1));
        assert_eq!(window(None, 0), (-1, -2));
    }

    #[test]
    fn numbers_read_as_strtod_does() {
        assert_eq!(sort_number(b" 1.5"), Some(1.5));
        assert_eq!(sort_number(b""), Some(0.0));
        assert_eq!(sort_number(b"-inf"), Some(f64::NEG_INFINITY));
        assert!(sort_number(b"1e400").is_none() && sort_number(b"abc").is_none() && sort_number(b"nan").is_none());
    }
}
