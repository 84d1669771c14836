//! Streams in the log and snapshots: a stream as a record's value, the record of the
//! parts a write changed, and replaying that record.
//!
//! Owns: `stream_data` and `stream_of` (a `Stream` to and from `StreamData`),
//! `encode_parts` (the parts `types::streams` noted, as they are now) and
//! `Keyspace::restore_stream_parts`. Never: log a part as the operation that changed it;
//! each part states what is there now (see `hotset_base::record::stream`).

use std::num::NonZeroU64;

use crate::keyspace::Keyspace;
use crate::types::stream::{Group, Stream, StreamId};
use crate::types::streams::part;
use crate::value::{Entry, Value};
use hotset_base::record::{GroupData, KvChange, StreamData, StreamMeta, StreamPart};

fn pair(id: StreamId) -> (u64, u64) {
    (id.ms, id.seq)
}

fn id_of((ms, seq): (u64, u64)) -> StreamId {
    StreamId::new(ms, seq)
}

fn meta(stream: &Stream) -> StreamMeta {
    StreamMeta {
        last_id: pair(stream.last_id),
        first_id: pair(stream.first_id),
        max_deleted: pair(stream.max_deleted),
        entries_added: stream.entries_added,
        floor: pair(stream.first_live_id().unwrap_or(StreamId::MAX)),
    }
}

fn set_meta(stream: &mut Stream, meta: &StreamMeta) {
    stream.remove_below(id_of(meta.floor));
    stream.last_id = id_of(meta.last_id);
    stream.first_id = id_of(meta.first_id);
    stream.max_deleted = id_of(meta.max_deleted);
    stream.entries_added = meta.entries_added;
}

/// A stream as the log and snapshots (and DUMP) hold it whole.
pub(crate) fn stream_data(stream: &Stream) -> StreamData<'_> {
    let entries = stream
        .range(StreamId::MIN, StreamId::MAX, false)
        .map(|(id, fields)| (pair(id), fields.pairs().collect()))
        .collect();
    let groups = stream
        .groups()
        .iter()
        .map(|(name, group)| GroupData {
            name,
            last_id: pair(group.last_id),
            entries_read: group.entries_read,
            consumers: group.consumers().iter().map(|(name, c)| (&**name, c.seen_time)).collect(),
            pending: group
                .pending()
                .iter()
                .map(|(id, p)| (pair(*id), &*p.consumer, p.delivery_time, p.delivery_count))
                .collect(),
        })
        .collect();
    StreamData { meta: meta(stream), entries, groups }
}

/// The stream a logged (or dumped) value describes.
pub(crate) fn stream_of(data: &StreamData<'_>) -> Stream {
    let mut stream = Stream::default();
    for (id, fields) in &data.entries {
        stream.restore_entry(id_of(*id), fields);
    }
    for group in &data.groups {
        let restored = stream.group_or_default(group.name);
        *restored = Group::new(id_of(group.last_id), group.entries_read);
        for (name, seen) in &group.consumers {
            restored.restore_consumer(name, *seen);
        }
        for (id, consumer, time, count) in &group.pending {
            restored.set_pending(id_of(*id), consumer, *time, *count);
        }
    }
    set_meta(&mut stream, &data.meta);
    stream
}

/// The record of a write that changed only the noted `parts` of a stream.
pub(super) fn encode_parts<'p>(out: &mut Vec<u8>, key: &[u8], entry: &Entry, parts: impl Iterator<Item = &'p [u8]>) {
    let Value::Stream(stream) = &entry.value else { unreachable!("the caller checked for a stream") };
    let mut stated = Vec::new();
    for name in parts {
        match name.first() {
            Some(&part::ENTRY) => {
                let Some(id) = StreamId::from_bytes(&name[1..]) else { continue };
                stated.push(StreamPart::Entry { id: pair(id), fields: stream.get(id).map(|f| f.pairs().collect()) });
            }
            Some(&part::GROUP) => {
                let group = &name[1..];
                let head = stream.group(group).map(|g| (pair(g.last_id), g.entries_read));
                stated.push(StreamPart::Group { name: group, head });
            }
            Some(&part::CONSUMER) => {
                let Some((group, consumer)) = part::split_group(name) else { continue };
                let seen = stream.group(group).and_then(|g| g.consumer(consumer)).map(|c| c.seen_time);
                stated.push(StreamPart::Consumer { group, name: consumer, seen });
            }
            Some(&part::PENDING) => {
                let Some((group, rest)) = part::split_group(name) else { continue };
                let Some(id) = StreamId::from_bytes(rest) else { continue };
                let owner = stream
                    .group(group)
                    .and_then(|g| g.pending().get(&id))
                    .map(|p| (&*p.consumer, p.delivery_time, p.delivery_count));
                stated.push(StreamPart::Pending { group, id: pair(id), owner });
            }
            // The counters travel with every part record.
            _ => {}
        }
    }
    let expire_at_ms = entry.expire_at().map(NonZeroU64::get);
    KvChange::StreamParts { key, meta: meta(stream), parts: stated, expire_at_ms }.encode(out);
}

impl Keyspace {
    /// Recovery: sets some parts of a stream and its counters. A missing key (or one of
    /// another type, which only a fuzzy snapshot's newer state can show) becomes a stream
    /// of these parts; later records bring the rest.
    pub fn restore_stream_parts(
        &self,
        key: &[u8],
        meta: &StreamMeta,
        parts: &[StreamPart<'_>],
        expire_at_ms: Option<u64>,
    ) {
        let Some((mut shard, key, now, expire_at)) = self.restore_target(key, expire_at_ms) else { return };
        if !shard.get(key, now).is_some_and(|entry| matches!(entry.value, Value::Stream(_))) {
            shard.put(key, now, Value::Stream(Box::default()), expire_at);
        }
        let mut live = shard.get_mut(key, now).expect("a live stream, stored above");
        live.update(|value| {
            let Value::Stream(stream) = value else { unreachable!("a stream, stored above") };
            for stated in parts {
                apply_part(stream, stated);
            }
            set_meta(stream, meta);
        });
        live.set_expire_at(expire_at);
    }
}

fn apply_part(stream: &mut Stream, stated: &StreamPart<'_>) {
    match stated {
        StreamPart::Entry { id, fields: Some(fields) } => stream.restore_entry(id_of(*id), fields),
        StreamPart::Entry { id, fields: None } => {
            stream.delete(id_of(*id));
        }
        StreamPart::Group { name, head: Some((last_id, entries_read)) } => {
            let group = stream.group_or_default(name);
            group.last_id = id_of(*last_id);
            group.entries_read = *entries_read;
        }
        StreamPart::Group { name, head: None } => {
            stream.destroy_group(name);
        }
        StreamPart::Consumer { group, name, seen: Some(seen) } => {
            stream.group_or_default(group).restore_consumer(name, *seen);
        }
        StreamPart::Consumer { group, name, seen: None } => {
            if let Some(group) = stream.group_mut(group) {
                group.remove_consumer(name);
            }
        }
        StreamPart::Pending { group, id, owner: Some((consumer, time, count)) } => {
            stream.group_or_default(group).set_pending(id_of(*id), consumer, *time, *count);
        }
        StreamPart::Pending { group, id, owner: None } => {
            if let Some(group) = stream.group_mut(group) {
                group.ack(id_of(*id));
            }
        }
    }
}
