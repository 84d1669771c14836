//! Recovery of keyspaces: applying logged key-value changes and snapshot chunks.
//!
//! Owns: `Keyspaces::restore` (one logged `Kv` change, whole: the keyspace created
//! without logging, flushed if the record says so, each operation applied in order) and
//! the `restore_*` operations of a keyspace it is made of.
//!
//! Must never: log what it applies (recovery runs before a journal is attached), or
//! refuse a state for being already applied: a fuzzy snapshot and the log after its start
//! may state a key's result twice, and applying it again must leave the same state. A
//! deadline already past deletes the key instead of storing it.

use std::num::NonZeroU64;

use crate::keyspace::Keyspace;
use crate::registry::Keyspaces;
use crate::store::router::KeyRef;
use crate::store::shard::Shard;
use crate::types::field_map::FieldMap;
use crate::types::list::{End, List};
use crate::value::{StrValue, Value};
use hotset_base::record::{KvChange, KvData};

impl Keyspace {
    /// Recovery: the write-locked shard of `key`, the key, now and its deadline; `None`
    /// (after deleting the key) when the deadline has already passed.
    pub(super) fn restore_target<'k>(
        &self,
        key: &'k [u8],
        expire_at_ms: Option<u64>,
    ) -> Option<(parking_lot::RwLockWriteGuard<'_, Shard>, KeyRef<'k>, u64, Option<NonZeroU64>)> {
        let now = self.now_ms();
        let key = KeyRef::new(key);
        let mut shard = self.shards[self.router.shard_of(key.hash)].write();
        let expire_at = expire_at_ms.and_then(NonZeroU64::new);
        if expire_at.is_some_and(|at| now > at.get()) {
            shard.remove(key, now);
            return None;
        }
        Some((shard, key, now, expire_at))
    }

    /// Recovery: sets a key's value and deadline; a deadline already past deletes it.
    pub fn restore_put(&self, key: &[u8], data: &KvData<'_>, expire_at_ms: Option<u64>) {
        let Some((mut shard, key, now, expire_at)) = self.restore_target(key, expire_at_ms) else { return };
        let value = value_of(data);
        if value_is_empty(&value) {
            shard.remove(key, now);
            return;
        }
        shard.put(key, now, value, expire_at);
    }

    /// Recovery: sets and removes some fields of a hash, and sets its deadline. A missing
    /// key (or one holding another type, which only the newer state of a fuzzy snapshot
    /// can show; later records set the key's final state) becomes a hash of the set fields.
    /// An emptied hash is deleted, as is a key whose deadline has passed.
    pub fn restore_hash_fields(
        &self,
        key: &[u8],
        set: &[(&[u8], &[u8])],
        removed: &[&[u8]],
        expire_at_ms: Option<u64>,
    ) {
        let Some((mut shard, key, now, expire_at)) = self.restore_target(key, expire_at_ms) else { return };
        if !shard.peek(key, now).is_some_and(|entry| matches!(entry.value, Value::Hash(_))) {
            let mut map = FieldMap::default();
            for (field, value) in set {
                map.insert(field, value.to_vec());
            }
            match map.is_empty() {
                true => drop(shard.remove(key, now)),
                false => shard.put(key, now, Value::Hash(Box::new(map)), expire_at),
            }
            return;
        }
        let mut live = shard.get_mut(key, now).expect("a live hash, checked above");
        let empty = live.update(|value| match value {
            Value::Hash(map) => {
                for (field, value) in set {
                    map.insert(field, value.to_vec());
                }
                for field in removed {
                    map.remove(field);
                }
                map.is_empty()
            }
            _ => unreachable!("a hash, checked above"),
        });
        if empty {
            live.remove();
        } else {
            live.set_expire_at(expire_at);
        }
    }

    /// Recovery: a list's window and the elements written in it (`KvChange::ListEdit`). A
    /// missing key, or one holding another type (as the newer state of a fuzzy snapshot
    /// can), becomes a list of the window with the elements the record holds.
    pub fn restore_list_edit(
        &self,
        key: &[u8],
        first: i64,
        len: u64,
        puts: &[(i64, &[u8])],
        expire_at_ms: Option<u64>,
    ) {
        let Some((mut shard, key, now, expire_at)) = self.restore_target(key, expire_at_ms) else { return };
        if len == 0 {
            shard.remove(key, now);
            return;
        }
        if !shard.peek(key, now).is_some_and(|entry| matches!(entry.value, Value::List(_))) {
            shard.put(key, now, Value::List(Box::new(List::starting_at(first))), expire_at);
        }
        let mut live = shard.get_mut(key, now).expect("a live list, stored above");
        live.update(|value| {
            let Value::List(list) = value else { unreachable!("a list, stored above") };
            list.restore_window(first, len);
            for (position, item) in puts {
                list.restore_at(*position, item);
            }
        });
        live.set_expire_at(expire_at);
    }

    /// Recovery: adds and removes some members of a set, and sets its deadline, as
    /// `restore_hash_fields` does for a hash.
    pub fn restore_set_members(&self, key: &[u8], added: &[&[u8]], removed: &[&[u8]], expire_at_ms: Option<u64>) {
        self.restore_members(
            key,
            expire_at_ms,
            |value| matches!(value, Value::Set(_)),
            || (!added.is_empty()).then(|| Value::Set(Box::new(added.iter().map(|member| member.to_vec()).collect()))),
            |value| {
                let Value::Set(set) = value else { unreachable!("a set, checked first") };
                added.iter().for_each(|member| {
                    let _ = set.insert(member);
                });
                removed.iter().for_each(|member| {
                    let _ = set.remove(member);
                });
                set.is_empty()
            },
        );
    }

    /// Recovery: sets and removes some members of a sorted set, and sets its deadline, as
    /// `restore_set_members` does for a set.
    pub fn restore_zset_members(
        &self,
        key: &[u8],
        added: &[(&[u8], f64)],
        removed: &[&[u8]],
        expire_at_ms: Option<u64>,
    ) {
        self.restore_members(
            key,
            expire_at_ms,
            |value| matches!(value, Value::ZSet(_)),
            || (!added.is_empty()).then(|| Value::ZSet(Box::new(added.iter().copied().collect()))),
            |value| {
                let Value::ZSet(set) = value else { unreachable!("a sorted set, checked first") };
                added.iter().for_each(|(member, score)| {
                    let _ = set.insert(member, *score);
                });
                removed.iter().for_each(|member| {
                    let _ = set.remove(member);
                });
                set.is_empty()
            },
        );
    }

    /// The frame of a member-wise restore: a key that holds the kind (`is_kind`) is
    /// edited in place (`edit`, true when it emptied it, which deletes the key); any
    /// other key becomes what `fresh` builds from the added members alone, or goes when
    /// there are none. Either way the deadline is set.
    fn restore_members(
        &self,
        key: &[u8],
        expire_at_ms: Option<u64>,
        is_kind: impl Fn(&Value) -> bool,
        fresh: impl FnOnce() -> Option<Value>,
        edit: impl FnOnce(&mut Value) -> bool,
    ) {
        let Some((mut shard, key, now, expire_at)) = self.restore_target(key, expire_at_ms) else { return };
        if !shard.get(key, now).is_some_and(|entry| is_kind(&entry.value)) {
            match fresh() {
                None => drop(shard.remove(key, now)),
                Some(value) => shard.put(key, now, value, expire_at),
            }
            return;
        }
        let mut live = shard.get_mut(key, now).expect("a live key, checked above");
        if live.update(edit) {
            live.remove();
        } else {
            live.set_expire_at(expire_at);
        }
    }

    /// Recovery: deletes a key.
    pub fn restore_delete(&self, key: &[u8]) {
        let now = self.now_ms();
        let key = KeyRef::new(key);
        self.shards[self.router.shard_of(key.hash)].write().remove(key, now);
    }

    /// Recovery: empties the keyspace.
    pub fn restore_flush(&self) {
        for shard in self.shards.iter() {
            shard.write().clear();
        }
    }
}

impl Keyspaces {
    /// Recovery: applies one logged key-value change to keyspace `name`, created without
    /// logging if missing: empties it first when `flush`, then sets each key's state as
    /// the operations say, in order. Idempotent, as replay needs: every operation states a
    /// result.
    pub fn restore(&self, name: &str, flush: bool, ops: Vec<KvChange<'_>>) {
        let keyspace = self.get_or_create_quiet(name);
        if flush {
            keyspace.restore_flush();
        }
        for op in ops {
            match op {
                KvChange::Put { key, value, expire_at_ms } => keyspace.restore_put(key, &value, expire_at_ms),
                KvChange::Delete { key } => keyspace.restore_delete(key),
                KvChange::HashFields { key, set, removed, expire_at_ms } => {
                    keyspace.restore_hash_fields(key, &set, &removed, expire_at_ms)
                }
                KvChange::ListEdit { key, first, len, puts, expire_at_ms } => {
                    keyspace.restore_list_edit(key, first, len, &puts, expire_at_ms)
                }
                KvChange::SetMembers { key, added, removed, expire_at_ms } => {
                    keyspace.restore_set_members(key, &added, &removed, expire_at_ms)
                }
                KvChange::ZSetMembers { key, added, removed, expire_at_ms } => {
                    keyspace.restore_zset_members(key, &added, &removed, expire_at_ms)
                }
                KvChange::StreamParts { key, meta, parts, expire_at_ms } => {
                    keyspace.restore_stream_parts(key, &meta, &parts, expire_at_ms)
                }
            }
        }
    }
}

/// The stored value a logged (or dumped) value describes.
pub(crate) fn value_of(data: &KvData<'_>) -> Value {
    match data {
        KvData::Str(bytes) => Value::Str(StrValue::from_bytes(bytes)),
        KvData::Int(number) => Value::Str(StrValue::Int(*number)),
        KvData::Hash(pairs) => {
            let mut map = FieldMap::default();
            for (field, value) in pairs {
                map.insert(field, value.to_vec());
            }
            Value::Hash(Box::new(map))
        }
        KvData::List { first, items } => {
            let mut list = List::starting_at(*first);
            items.iter().for_each(|item| list.push(End::Right, item));
            Value::List(Box::new(list))
        }
        KvData::Set(members) => Value::Set(Box::new(members.iter().map(|member| member.to_vec()).collect())),
        KvData::ZSet(members) => Value::ZSet(Box::new(members.iter().copied().collect())),
        KvData::Stream(stream) => Value::Stream(Box::new(super::stream_of(stream))),
    }
}

/// Whether a restored value holds nothing (a record never states an empty collection; a
/// damaged one that does deletes the key rather than store what no command leaves).
pub(crate) fn value_is_empty(value: &Value) -> bool {
    match value {
        Value::Str(_) => false,
        Value::Hash(map) => map.is_empty(),
        Value::List(list) => list.is_empty(),
        Value::Set(set) => set.is_empty(),
        Value::ZSet(set) => set.is_empty(),
        // An empty stream is a key like any other.
        Value::Stream(_) => false,
    }
}
