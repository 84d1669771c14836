//! The stream parts of the change record: a stream's whole value (`VALUE_STREAM`) and
//! the parts of one a write changed (`OP_STREAM_PARTS`).
//!
//! Owns: [`StreamData`], [`StreamMeta`], [`GroupData`], [`StreamPart`] and their bytes.
//! Never: describe an operation (XADD, XACK): each part states what is there now, or that
//! nothing is, so replaying it twice or over a later state converges as every change must.
//!
//! ```text
//! meta    = last:id first:id max_deleted:id entries_added:varint floor:id
//! id      = ms:varint seq:varint
//! value 7 = meta count (id count (field:bytes value:bytes)*)*
//!           count (name:bytes last:id entries_read:zigzag count (consumer:bytes seen:varint)*
//!                  count (id consumer:bytes delivery_time:varint delivery_count:varint)*)*
//! op 7    = key:bytes expire_at_ms:varint meta count part*
//! part    = 1 id (0 | 1 count (field:bytes value:bytes)*)              an entry, or gone
//!         | 2 group:bytes (0 | 1 last:id entries_read:zigzag)           a group's head, or gone
//!         | 3 group:bytes consumer:bytes (0 | 1 seen:varint)            a consumer, or gone
//!         | 4 group:bytes id (0 | 1 consumer:bytes time:varint count:varint)   pending, or not
//! ```
//! `floor` is the first live entry's id (the greatest id when there is none): recovery
//! drops every entry below it, which is how a trim is replayed without listing its ids.

use super::{Result, put_zigzag, zigzag};
use crate::wire::{Reader, put_bytes, put_varint};

/// A stream id as (milliseconds, sequence).
pub type Id = (u64, u64);

/// An entry's field-value pairs.
pub type Pairs<'a> = Vec<(&'a [u8], &'a [u8])>;

/// A stream's counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StreamMeta {
    /// The greatest id added (or set by XSETID).
    pub last_id: Id,
    /// The first entry's id as Redis records it.
    pub first_id: Id,
    /// The greatest id deleted.
    pub max_deleted: Id,
    /// Entries ever added.
    pub entries_added: u64,
    /// The first live entry's id; `(u64::MAX, u64::MAX)` when there is none.
    pub floor: Id,
}

/// A consumer group, whole.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GroupData<'a> {
    /// The group's name.
    pub name: &'a [u8],
    /// The last id delivered to it.
    pub last_id: Id,
    /// Entries it read; -1 when that cannot be known.
    pub entries_read: i64,
    /// Consumers with the time each was last seen.
    pub consumers: Vec<(&'a [u8], u64)>,
    /// Pending entries: id, consumer, delivery time, delivery count.
    pub pending: Vec<(Id, &'a [u8], u64, u64)>,
}

/// A stream, whole.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StreamData<'a> {
    /// Its counters.
    pub meta: StreamMeta,
    /// Live entries in id order, with their fields.
    pub entries: Vec<(Id, Pairs<'a>)>,
    /// Its consumer groups.
    pub groups: Vec<GroupData<'a>>,
}

/// One part of a stream as it is now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamPart<'a> {
    /// An entry and its fields, or `None`: no entry with this id.
    Entry {
        /// The entry's id.
        id: Id,
        /// Its fields.
        fields: Option<Pairs<'a>>,
    },
    /// A group's last id and read counter, or `None`: no such group.
    Group {
        /// The group.
        name: &'a [u8],
        /// Its last id and read counter.
        head: Option<(Id, i64)>,
    },
    /// A consumer's last-seen time, or `None`: no such consumer.
    Consumer {
        /// The group.
        group: &'a [u8],
        /// The consumer.
        name: &'a [u8],
        /// When it was last seen.
        seen: Option<u64>,
    },
    /// Who an entry is pending for, when last delivered and how often, or `None`: not
    /// pending.
    Pending {
        /// The group.
        group: &'a [u8],
        /// The entry's id.
        id: Id,
        /// Its consumer, delivery time and delivery count.
        owner: Option<(&'a [u8], u64, u64)>,
    },
}

const PART_ENTRY: u8 = 1;
const PART_GROUP: u8 = 2;
const PART_CONSUMER: u8 = 3;
const PART_PENDING: u8 = 4;

fn put_id(out: &mut Vec<u8>, (ms, seq): Id) {
    put_varint(out, ms);
    put_varint(out, seq);
}

fn id(reader: &mut Reader<'_>) -> Result<Id> {
    Ok((reader.varint()?, reader.varint()?))
}

fn put_pairs(out: &mut Vec<u8>, pairs: &[(&[u8], &[u8])]) {
    put_varint(out, pairs.len() as u64);
    for (field, value) in pairs {
        put_bytes(out, field);
        put_bytes(out, value);
    }
}

fn pairs<'a>(reader: &mut Reader<'a>) -> Result<Pairs<'a>> {
    let count = reader.count(2, "stream entry fields")?;
    (0..count).map(|_| Ok((reader.bytes()?, reader.bytes()?))).collect()
}

/// Whether a part states something (1) or its absence (0).
fn present(reader: &mut Reader<'_>) -> Result<bool> {
    match reader.byte()? {
        0 => Ok(false),
        1 => Ok(true),
        _ => reader.fail("a stream part is neither present nor absent"),
    }
}

impl StreamMeta {
    pub(super) fn encode(&self, out: &mut Vec<u8>) {
        put_id(out, self.last_id);
        put_id(out, self.first_id);
        put_id(out, self.max_deleted);
        put_varint(out, self.entries_added);
        put_id(out, self.floor);
    }

    pub(super) fn decode(reader: &mut Reader<'_>) -> Result<Self> {
        Ok(StreamMeta {
            last_id: id(reader)?,
            first_id: id(reader)?,
            max_deleted: id(reader)?,
            entries_added: reader.varint()?,
            floor: id(reader)?,
        })
    }
}

impl StreamData<'_> {
    pub(super) fn encode(&self, out: &mut Vec<u8>) {
        self.meta.encode(out);
        put_varint(out, self.entries.len() as u64);
        for (entry_id, fields) in &self.entries {
            put_id(out, *entry_id);
            put_pairs(out, fields);
        }
        put_varint(out, self.groups.len() as u64);
        for group in &self.groups {
            put_bytes(out, group.name);
            put_id(out, group.last_id);
            put_zigzag(out, group.entries_read);
            put_varint(out, group.consumers.len() as u64);
            for (name, seen) in &group.consumers {
                put_bytes(out, name);
                put_varint(out, *seen);
            }
            put_varint(out, group.pending.len() as u64);
            for (pending_id, consumer, time, count) in &group.pending {
                put_id(out, *pending_id);
                put_bytes(out, consumer);
                put_varint(out, *time);
                put_varint(out, *count);
            }
        }
    }
}

impl<'a> StreamData<'a> {
    pub(super) fn decode(reader: &mut Reader<'a>) -> Result<Self> {
        let meta = StreamMeta::decode(reader)?;
        let count = reader.count(3, "stream entries")?;
        let mut entries = Vec::with_capacity(count);
        for _ in 0..count {
            entries.push((id(reader)?, pairs(reader)?));
        }
        let count = reader.count(5, "stream groups")?;
        let mut groups = Vec::with_capacity(count);
        for _ in 0..count {
            let name = reader.bytes()?;
            let last_id = id(reader)?;
            let entries_read = zigzag(reader)?;
            let consumers_count = reader.count(2, "stream consumers")?;
            let mut consumers = Vec::with_capacity(consumers_count);
            for _ in 0..consumers_count {
                consumers.push((reader.bytes()?, reader.varint()?));
            }
            let pending_count = reader.count(5, "stream pending entries")?;
            let mut pending = Vec::with_capacity(pending_count);
            for _ in 0..pending_count {
                pending.push((id(reader)?, reader.bytes()?, reader.varint()?, reader.varint()?));
            }
            groups.push(GroupData { name, last_id, entries_read, consumers, pending });
        }
        Ok(StreamData { meta, entries, groups })
    }
}

impl StreamPart<'_> {
    pub(super) fn encode(&self, out: &mut Vec<u8>) {
        match self {
            StreamPart::Entry { id: entry_id, fields } => {
                out.push(PART_ENTRY);
                put_id(out, *entry_id);
                match fields {
                    Some(fields) => {
                        out.push(1);
                        put_pairs(out, fields);
                    }
                    None => out.push(0),
                }
            }
            StreamPart::Group { name, head } => {
                out.push(PART_GROUP);
                put_bytes(out, name);
                match head {
                    Some((last_id, entries_read)) => {
                        out.push(1);
                        put_id(out, *last_id);
                        put_zigzag(out, *entries_read);
                    }
                    None => out.push(0),
                }
            }
            StreamPart::Consumer { group, name, seen } => {
                out.push(PART_CONSUMER);
                put_bytes(out, group);
                put_bytes(out, name);
                match seen {
                    Some(seen) => {
                        out.push(1);
                        put_varint(out, *seen);
                    }
                    None => out.push(0),
                }
            }
            StreamPart::Pending { group, id: pending_id, owner } => {
                out.push(PART_PENDING);
                put_bytes(out, group);
                put_id(out, *pending_id);
                match owner {
                    Some((consumer, time, count)) => {
                        out.push(1);
                        put_bytes(out, consumer);
                        put_varint(out, *time);
                        put_varint(out, *count);
                    }
                    None => out.push(0),
                }
            }
        }
    }
}

impl<'a> StreamPart<'a> {
    pub(super) fn decode(reader: &mut Reader<'a>) -> Result<Self> {
        Ok(match reader.byte()? {
            PART_ENTRY => {
                let entry_id = id(reader)?;
                StreamPart::Entry { id: entry_id, fields: if present(reader)? { Some(pairs(reader)?) } else { None } }
            }
            PART_GROUP => {
                let name = reader.bytes()?;
                let head = if present(reader)? { Some((id(reader)?, zigzag(reader)?)) } else { None };
                StreamPart::Group { name, head }
            }
            PART_CONSUMER => {
                let (group, name) = (reader.bytes()?, reader.bytes()?);
                StreamPart::Consumer { group, name, seen: if present(reader)? { Some(reader.varint()?) } else { None } }
            }
            PART_PENDING => {
                let (group, pending_id) = (reader.bytes()?, id(reader)?);
                let owner =
                    if present(reader)? { Some((reader.bytes()?, reader.varint()?, reader.varint()?)) } else { None };
                StreamPart::Pending { group, id: pending_id, owner }
            }
            _ => return reader.fail("unknown stream part"),
        })
    }
}

/// Reads a count, then that many parts.
pub(super) fn parts<'a>(reader: &mut Reader<'a>) -> Result<Vec<StreamPart<'a>>> {
    let count = reader.count(3, "stream parts")?;
    (0..count).map(|_| StreamPart::decode(reader)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Format, KvChange, KvData, decode_kv_ops, decode_value, encode_value};

    fn sample() -> StreamData<'static> {
        StreamData {
            meta: StreamMeta {
                last_id: (9, 2),
                first_id: (1, 0),
                max_deleted: (3, 0),
                entries_added: 7,
                floor: (1, 0),
            },
            entries: vec![((1, 0), vec![(&b"f"[..], &b"v"[..])]), ((9, 2), vec![])],
            groups: vec![GroupData {
                name: b"g",
                last_id: (9, 2),
                entries_read: -1,
                consumers: vec![(b"alice", 5)],
                pending: vec![((1, 0), b"alice", 5, 2)],
            }],
        }
    }

    #[test]
    fn a_stream_and_its_parts_read_back_as_written() {
        let value = KvData::Stream(sample());
        let mut out = Vec::new();
        encode_value(&value, &mut out);
        assert_eq!(decode_value(&out).unwrap(), value);

        let parts = vec![
            StreamPart::Entry { id: (9, 3), fields: Some(vec![(b"a", b"b")]) },
            StreamPart::Entry { id: (2, 0), fields: None },
            StreamPart::Group { name: b"g", head: Some(((9, 3), 4)) },
            StreamPart::Group { name: b"old", head: None },
            StreamPart::Consumer { group: b"g", name: b"bob", seen: Some(11) },
            StreamPart::Consumer { group: b"g", name: b"gone", seen: None },
            StreamPart::Pending { group: b"g", id: (9, 3), owner: Some((b"bob", 11, 1)) },
            StreamPart::Pending { group: b"g", id: (1, 0), owner: None },
        ];
        let change = KvChange::StreamParts { key: b"s", meta: sample().meta, parts, expire_at_ms: Some(42) };
        let mut out = Vec::new();
        change.encode(&mut out);
        let mut reader = Reader::new(&out, "kv ops");
        assert_eq!(decode_kv_ops(&mut reader, Format::CURRENT).unwrap(), vec![change]);
    }

    #[test]
    fn a_damaged_stream_is_refused_not_guessed() {
        let change = KvChange::StreamParts {
            key: b"s",
            meta: StreamMeta::default(),
            parts: vec![StreamPart::Group { name: b"g", head: None }],
            expire_at_ms: None,
        };
        let mut out = Vec::new();
        change.encode(&mut out);
        // The part's tag, then its presence byte: neither may hold another value.
        let presence = out.len() - 1;
        let tag = presence - 2 - 1;
        for (at, bad) in [(tag, 9u8), (presence, 2u8)] {
            let mut damaged = out.clone();
            damaged[at] = bad;
            assert!(decode_kv_ops(&mut Reader::new(&damaged, "kv ops"), Format::CURRENT).is_err(), "byte {at} = {bad}");
        }
        let mut value = Vec::new();
        encode_value(&KvData::Stream(sample()), &mut value);
        for cut in [1, value.len() / 2, value.len() - 1] {
            assert!(decode_value(&value[..cut]).is_err(), "a stream cut at {cut} of {} bytes", value.len());
        }
    }
}
