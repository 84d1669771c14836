//! The change record: the bytes of every write-ahead log record and snapshot block, as far
//! as they do not need the document engine's schema types.
//!
//! Owns: `Format` (the versions of the encoding this build reads), the table of change
//! kinds (`kind`), `Target` and reading it from a record's head (`target`), the framing of
//! a group (`encode_group`, `parts`), the heads of document and key-value changes, and the
//! codecs of their operations (`DocChange`, `KvChange`, `KvData`). `hotset-core`'s
//! `change` module holds the `Change` enum over all kinds and encodes the rest (namespaces,
//! index definitions, metadata) with this module's kinds. Never: describe an operation
//! ("increment", "update where"), because replaying a change must give the same state
//! however many times it is applied, and in any state that the change's own effects are
//! about to overwrite (that is what lets snapshots be fuzzy); decode a payload without
//! knowing the format of the file it came from; write any format but `Format::CURRENT`;
//! number a kind, an operation or a value anywhere but in `kind`.
//!
//! Encoding (all integers are LEB128 varints unless said; `bytes` = varint length + bytes):
//! ```text
//! payload = kind:u8, then by kind
//!   1 create namespace   name:bytes  format 2: count definition:bytes*  (schema::codec)
//!                                    format 1: indexes:bytes (JSON array, schema::json_v1)
//!   2 drop namespace     name:bytes
//!   3 truncate           namespace:bytes
//!   4 add index          namespace:bytes  format 2: definition:bytes  (schema::codec)
//!                                         format 1: definition:bytes (JSON object)
//!   5 drop index         namespace:bytes  index:bytes
//!   6 documents          namespace:bytes  { 1 document:bytes (minified JSON)
//!                                         | 2 key:bytes (primary key as JSON) }*
//!   7 key-value          keyspace:bytes  flush:u8  { 1 key:bytes expire_at_ms:varint (0 = none) value
//!                                                  | 2 key:bytes
//!                                                  | 3 key:bytes expire_at_ms:varint
//!                                                      count (field:bytes value:bytes)*
//!                                                      count field:bytes*
//!                                                  | 4 key:bytes expire_at_ms:varint first:zigzag
//!                                                      length:varint count (position:zigzag element:bytes)*
//!                                                  | 5 key:bytes expire_at_ms:varint count member:bytes*
//!                                                      count member:bytes*
//!                                                  | 6 key:bytes expire_at_ms:varint count (member:bytes score:f64)*
//!                                                      count member:bytes*
//!                                                  | 7 key:bytes expire_at_ms:varint stream parts (record::stream) }*
//!        value = 1 bytes | 2 zigzag-varint integer | 3 count (field:bytes value:bytes)*
//!              | 4 first:zigzag count element:bytes* | 5 count member:bytes*
//!              | 6 count (member:bytes score:f64)* | 7 stream (record::stream)
//!   8 drop keyspace      keyspace:bytes
//!   9 group              count part:bytes*  (each part a payload of any kind but 9)
//!  10 metadata           key:bytes  { 0 (removed) | 1 value:bytes }
//! ```
//! (`schema::codec` and `schema::json_v1` are `hotset-core`'s.) Operation lists run to the
//! end of the payload; the record's length comes from the log frame around it. Formats
//! differ only in the index definitions of kinds 1 and 4; the head (kind, then the name of
//! the namespace, keyspace or metadata key) is the same in every format, which `target`
//! relies on. Key-value operations 4 and 5 and values 4 and 5 (lists and sets) came
//! without a new format: they add bytes no earlier file holds and read no earlier byte
//! differently, so a build without them stops at them as at any unknown kind. A group is the one change with several targets: its parts are changes of
//! their own, each with one target, and what recovery routes are the parts (`parts`).

use crate::wire::{Reader, RecordError, put_bytes, put_f64, put_varint};

mod stream;

pub use stream::{GroupData, StreamData, StreamMeta, StreamPart};

/// What the record's fallible reads return.
type Result<T> = std::result::Result<T, RecordError>;

/// A version of the on-disk format of changes: log segments and snapshot files carry it in
/// their header, and their payloads are decoded as it says. A new version is added when the
/// bytes of any change would be read differently; readers of every earlier version stay.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// Index definitions as the HTTP API's JSON (`IndexDef::to_json` until it was retired).
    V1,
    /// Index definitions in the binary form of `schema::codec`.
    V2,
}

impl Format {
    /// The format this build writes.
    pub const CURRENT: Format = Format::V2;
    /// Every format this build reads, oldest first.
    pub const READABLE: [Format; 2] = [Format::V1, Format::V2];

    /// The version number, as file headers spell it.
    pub fn number(self) -> u32 {
        match self {
            Format::V1 => 1,
            Format::V2 => 2,
        }
    }

    /// The format numbered `number`, if this build reads it.
    pub fn from_number(number: u32) -> Option<Format> {
        Format::READABLE.into_iter().find(|format| format.number() == number)
    }

    /// The readable version numbers, for error messages: "1, 2".
    pub fn readable_list() -> String {
        Format::READABLE.map(|format| format.number().to_string()).join(", ")
    }
}

/// The one namespace or keyspace a change changes (see [`target`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Target<'a> {
    /// A namespace, by name.
    Namespace(&'a str),
    /// A keyspace, by name.
    Keyspace(&'a str),
    /// A metadata entry, by name.
    Meta(&'a str),
    /// Several: the change is a group, whose parts ([`parts`]) each have one.
    Group,
}

/// One document's resulting state.
#[derive(Debug, Clone, PartialEq)]
pub enum DocChange<'a> {
    /// The whole document as stored (minified JSON).
    Put(&'a [u8]),
    /// The primary key (JSON text) of a deleted document.
    Delete(&'a str),
}

/// One key's resulting state.
#[derive(Debug, Clone, PartialEq)]
pub enum KvChange<'a> {
    /// The key holds this value now, whole (created, overwritten, or retyped).
    Put {
        /// The key.
        key: &'a [u8],
        /// Its whole value.
        value: KvData<'a>,
        /// Its deadline in milliseconds since the Unix epoch; `None` for no expiry.
        expire_at_ms: Option<u64>,
    },
    /// The key is gone (deleted, or expired and removed).
    Delete {
        /// The key.
        key: &'a [u8],
    },
    /// Some fields of an existing hash: their values now, and the fields now absent. The
    /// key's deadline rides along, so the record restores the key on its own. Logged
    /// instead of a whole `Put` when a write changed a few fields of a hash that existed,
    /// so HSET on a big hash logs O(fields written), not O(hash).
    HashFields {
        /// The hash's key.
        key: &'a [u8],
        /// Fields written, with their values now.
        set: Vec<(&'a [u8], &'a [u8])>,
        /// Fields that no longer exist.
        removed: Vec<&'a [u8]>,
        /// The key's deadline in milliseconds since the Unix epoch; `None` for no expiry.
        expire_at_ms: Option<u64>,
    },
    /// An existing list after a write that did not shift its elements (pushes and pops at
    /// either end, LSET, LTRIM): the positions it covers now and the elements written at
    /// their positions. Elements have absolute positions (a push at the head takes the
    /// one before the head), so replaying this sets the same state however often it is
    /// applied: the list is cut or padded to the window, then the elements are put.
    ListEdit {
        /// The list's key.
        key: &'a [u8],
        /// The position of the head now.
        first: i64,
        /// How many elements it holds now.
        len: u64,
        /// Elements written, by position (all inside the window).
        puts: Vec<(i64, &'a [u8])>,
        /// The key's deadline in milliseconds since the Unix epoch; `None` for no expiry.
        expire_at_ms: Option<u64>,
    },
    /// Some members of an existing set: members now present and members now absent, as
    /// `HashFields` is for hashes.
    SetMembers {
        /// The set's key.
        key: &'a [u8],
        /// Members now in the set.
        added: Vec<&'a [u8]>,
        /// Members now absent.
        removed: Vec<&'a [u8]>,
        /// The key's deadline in milliseconds since the Unix epoch; `None` for no expiry.
        expire_at_ms: Option<u64>,
    },
    /// Some members of an existing sorted set: members now present with their scores,
    /// and members now absent, as `SetMembers` is for sets.
    ZSetMembers {
        /// The sorted set's key.
        key: &'a [u8],
        /// Members now in the sorted set, with their scores.
        added: Vec<(&'a [u8], f64)>,
        /// Members now absent.
        removed: Vec<&'a [u8]>,
        /// The key's deadline in milliseconds since the Unix epoch; `None` for no expiry.
        expire_at_ms: Option<u64>,
    },
    /// Some parts of a stream, as they are now (see `record::stream`).
    StreamParts {
        /// The key.
        key: &'a [u8],
        /// The stream's counters now.
        meta: StreamMeta,
        /// The parts the write changed.
        parts: Vec<StreamPart<'a>>,
        /// The key's deadline in milliseconds since the Unix epoch; `None` for no expiry.
        expire_at_ms: Option<u64>,
    },
}

/// A key's value.
#[derive(Debug, Clone, PartialEq)]
pub enum KvData<'a> {
    /// A string of bytes.
    Str(&'a [u8]),
    /// A string kept as a number (what INCR made or found).
    Int(i64),
    /// A hash: field and value pairs.
    Hash(Vec<(&'a [u8], &'a [u8])>),
    /// A list: the absolute position of its head (see [`KvChange::ListEdit`]) and its
    /// elements from the head.
    List {
        /// The position of the head.
        first: i64,
        /// The elements, head first.
        items: Vec<&'a [u8]>,
    },
    /// A set: its members.
    Set(Vec<&'a [u8]>),
    /// A sorted set: its members with their scores (never NaN).
    ZSet(Vec<(&'a [u8], f64)>),
    /// A stream: its counters, entries and groups.
    Stream(StreamData<'a>),
}

/// The numbers of change kinds, of the operations inside `Docs` and `Kv` changes, and of
/// key values: the one table of them (operations and values are numbered per kind).
pub mod kind {
    /// Change kind 1: create (or replace with an empty one) a namespace.
    pub const CREATE_NAMESPACE: u8 = 1;
    /// Change kind 2: drop a namespace.
    pub const DROP_NAMESPACE: u8 = 2;
    /// Change kind 3: delete every document of a namespace.
    pub const TRUNCATE: u8 = 3;
    /// Change kind 4: add an index to a namespace.
    pub const ADD_INDEX: u8 = 4;
    /// Change kind 5: drop an index of a namespace.
    pub const DROP_INDEX: u8 = 5;
    /// Change kind 6: documents written or deleted.
    pub const DOCS: u8 = 6;
    /// Change kind 7: key-value changes of one keyspace.
    pub const KV: u8 = 7;
    /// Change kind 8: drop a keyspace.
    pub const DROP_KEYSPACE: u8 = 8;
    /// Change kind 9: a group of changes to several targets.
    pub const GROUP: u8 = 9;
    /// Change kind 10: a metadata entry.
    pub const META: u8 = 10;
    /// Operation 1 of a `Docs` or `Kv` change: a document, or a key's whole value.
    pub const OP_PUT: u8 = 1;
    /// Operation 2 of a `Docs` or `Kv` change: a deleted document or key.
    pub const OP_DELETE: u8 = 2;
    /// Operation 3 of a `Kv` change: some fields of a hash.
    pub const OP_HASH_FIELDS: u8 = 3;
    /// Operation 4 of a `Kv` change: a list's window and the elements written in it.
    pub const OP_LIST_EDIT: u8 = 4;
    /// Operation 5 of a `Kv` change: some members of a set.
    pub const OP_SET_MEMBERS: u8 = 5;
    /// Operation 6 of a `Kv` change: some members of a sorted set, with their scores.
    pub const OP_ZSET_MEMBERS: u8 = 6;
    /// Operation 7 of a `Kv` change: some parts of a stream (see `record::stream`).
    pub const OP_STREAM_PARTS: u8 = 7;
    /// Value kind 1 of a key: a string of bytes.
    pub const VALUE_STR: u8 = 1;
    /// Value kind 2 of a key: an integer (zigzag varint).
    pub const VALUE_INT: u8 = 2;
    /// Value kind 3 of a key: a hash.
    pub const VALUE_HASH: u8 = 3;
    /// Value kind 4 of a key: a list.
    pub const VALUE_LIST: u8 = 4;
    /// Value kind 5 of a key: a set.
    pub const VALUE_SET: u8 = 5;
    /// Value kind 6 of a key: a sorted set (members with scores).
    pub const VALUE_ZSET: u8 = 6;
    /// Value kind 7 of a key: a stream (see `record::stream`).
    pub const VALUE_STREAM: u8 = 7;
}

/// What the change in `bytes` changes, read from its head alone. Every change names
/// one namespace or one keyspace and touches nothing else, so changes to different
/// targets commute: recovery may apply them on different threads, each target's
/// changes in order. An error for bytes whose head does not decode.
/// The head is the same in every format, so this needs none.
pub fn target<'a>(bytes: &'a [u8]) -> Result<Target<'a>> {
    let mut reader = Reader::new(bytes, "change");
    match reader.byte()? {
        kind::CREATE_NAMESPACE
        | kind::DROP_NAMESPACE
        | kind::TRUNCATE
        | kind::ADD_INDEX
        | kind::DROP_INDEX
        | kind::DOCS => Ok(Target::Namespace(reader.text()?)),
        kind::KV | kind::DROP_KEYSPACE => Ok(Target::Keyspace(reader.text()?)),
        kind::META => Ok(Target::Meta(reader.text()?)),
        kind::GROUP => Ok(Target::Group),
        _ => reader.fail("unknown change kind"),
    }
}

/// The payloads of a group's parts, in order (each with one target); an error for
/// bytes that are no group or whose parts do not frame.
pub fn parts(bytes: &[u8]) -> Result<Vec<&[u8]>> {
    let mut reader = Reader::new(bytes, "change");
    if reader.byte()? != kind::GROUP {
        return reader.fail("not a group");
    }
    // A part takes two bytes at least (its length and its kind).
    let count = reader.count(2, "group parts")?;
    let parts = (0..count).map(|_| reader.bytes()).collect::<Result<Vec<_>>>()?;
    reader.finish()?;
    Ok(parts)
}

/// Encodes a group of already encoded parts (each a payload of one target, no group).
pub fn encode_group<'p>(out: &mut Vec<u8>, parts: impl ExactSizeIterator<Item = &'p [u8]>) {
    out.push(kind::GROUP);
    put_varint(out, parts.len() as u64);
    for part in parts {
        put_bytes(out, part);
    }
}

/// Starts a `Docs` change whose operations the caller appends with `DocChange::encode`
/// (so a big batch is encoded without collecting it first).
pub fn encode_docs_head(out: &mut Vec<u8>, namespace: &str) {
    out.push(kind::DOCS);
    put_bytes(out, namespace.as_bytes());
}

/// Starts a `Kv` change whose operations the caller appends with `KvChange::encode`.
pub fn encode_kv_head(out: &mut Vec<u8>, keyspace: &str, flush: bool) {
    out.push(kind::KV);
    put_bytes(out, keyspace.as_bytes());
    out.push(u8::from(flush));
}

/// Encodes a `DropKeyspace` change.
pub fn encode_drop_keyspace(out: &mut Vec<u8>, keyspace: &str) {
    out.push(kind::DROP_KEYSPACE);
    put_bytes(out, keyspace.as_bytes());
}

impl DocChange<'_> {
    /// Appends the operation's encoding to `out` (after a `Docs` head).
    pub fn encode(&self, out: &mut Vec<u8>) {
        match self {
            DocChange::Put(doc) => {
                out.push(kind::OP_PUT);
                put_bytes(out, doc);
            }
            DocChange::Delete(key) => {
                out.push(kind::OP_DELETE);
                put_bytes(out, key.as_bytes());
            }
        }
    }
}

impl KvChange<'_> {
    /// Appends the operation's encoding to `out` (after a `Kv` head).
    pub fn encode(&self, out: &mut Vec<u8>) {
        match self {
            KvChange::Put { key, value, expire_at_ms } => {
                out.push(kind::OP_PUT);
                put_bytes(out, key);
                put_varint(out, expire_at_ms.unwrap_or(0));
                value.encode(out);
            }
            KvChange::Delete { key } => {
                out.push(kind::OP_DELETE);
                put_bytes(out, key);
            }
            KvChange::HashFields { key, set, removed, expire_at_ms } => {
                out.push(kind::OP_HASH_FIELDS);
                put_bytes(out, key);
                put_varint(out, expire_at_ms.unwrap_or(0));
                put_varint(out, set.len() as u64);
                for (field, value) in set {
                    put_bytes(out, field);
                    put_bytes(out, value);
                }
                put_list(out, removed);
            }
            KvChange::ListEdit { key, first, len, puts, expire_at_ms } => {
                out.push(kind::OP_LIST_EDIT);
                put_bytes(out, key);
                put_varint(out, expire_at_ms.unwrap_or(0));
                put_zigzag(out, *first);
                put_varint(out, *len);
                put_varint(out, puts.len() as u64);
                for (position, item) in puts {
                    put_zigzag(out, *position);
                    put_bytes(out, item);
                }
            }
            KvChange::SetMembers { key, added, removed, expire_at_ms } => {
                out.push(kind::OP_SET_MEMBERS);
                put_bytes(out, key);
                put_varint(out, expire_at_ms.unwrap_or(0));
                put_list(out, added);
                put_list(out, removed);
            }
            KvChange::ZSetMembers { key, added, removed, expire_at_ms } => {
                out.push(kind::OP_ZSET_MEMBERS);
                put_bytes(out, key);
                put_varint(out, expire_at_ms.unwrap_or(0));
                put_scored(out, added);
                put_list(out, removed);
            }
            KvChange::StreamParts { key, meta, parts, expire_at_ms } => {
                out.push(kind::OP_STREAM_PARTS);
                put_bytes(out, key);
                put_varint(out, expire_at_ms.unwrap_or(0));
                meta.encode(out);
                put_varint(out, parts.len() as u64);
                for part in parts {
                    part.encode(out);
                }
            }
        }
    }
}

/// A count, then each member with its score.
fn put_scored(out: &mut Vec<u8>, members: &[(&[u8], f64)]) {
    put_varint(out, members.len() as u64);
    for (member, score) in members {
        put_bytes(out, member);
        put_f64(out, *score);
    }
}

/// Reads what `put_scored` wrote; a NaN score is refused (no command stores one).
fn scored<'a>(reader: &mut Reader<'a>, what: &str) -> Result<Vec<(&'a [u8], f64)>> {
    // A member takes its length byte and its eight score bytes at least.
    let count = reader.count(9, what)?;
    let mut members = Vec::with_capacity(count);
    for _ in 0..count {
        let member = reader.bytes()?;
        let score = reader.f64()?;
        if score.is_nan() {
            return reader.fail("a sorted set member scores NaN");
        }
        members.push((member, score));
    }
    Ok(members)
}

/// A count, then each of `items` as bytes.
fn put_list(out: &mut Vec<u8>, items: &[&[u8]]) {
    put_varint(out, items.len() as u64);
    for item in items {
        put_bytes(out, item);
    }
}

/// A signed integer as a zigzag varint (small magnitudes take few bytes either side of 0).
fn put_zigzag(out: &mut Vec<u8>, value: i64) {
    put_varint(out, ((value << 1) ^ (value >> 63)) as u64);
}

/// Reads what `put_zigzag` wrote.
fn zigzag(reader: &mut Reader<'_>) -> Result<i64> {
    let zigzag = reader.varint()?;
    Ok(((zigzag >> 1) as i64) ^ -((zigzag & 1) as i64))
}

/// Reads what `put_list` wrote.
fn list<'a>(reader: &mut Reader<'a>, what: &str) -> Result<Vec<&'a [u8]>> {
    let count = reader.count(1, what)?;
    (0..count).map(|_| reader.bytes()).collect()
}

/// Encodes one key's value alone, as a `Put` holds it (DUMP's payload carries this).
pub fn encode_value(value: &KvData<'_>, out: &mut Vec<u8>) {
    value.encode(out);
}

/// Reads what `encode_value` wrote: the whole of `bytes` must be one value.
pub fn decode_value(bytes: &[u8]) -> Result<KvData<'_>> {
    let mut reader = Reader::new(bytes, "value");
    let value = decode_kv_value(&mut reader)?;
    reader.finish()?;
    Ok(value)
}

impl KvData<'_> {
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            KvData::Str(bytes) => {
                out.push(kind::VALUE_STR);
                put_bytes(out, bytes);
            }
            KvData::Int(value) => {
                out.push(kind::VALUE_INT);
                put_zigzag(out, *value);
            }
            KvData::Hash(pairs) => {
                out.push(kind::VALUE_HASH);
                put_varint(out, pairs.len() as u64);
                for (field, value) in pairs {
                    put_bytes(out, field);
                    put_bytes(out, value);
                }
            }
            KvData::List { first, items } => {
                out.push(kind::VALUE_LIST);
                put_zigzag(out, *first);
                put_list(out, items);
            }
            KvData::Set(members) => {
                out.push(kind::VALUE_SET);
                put_list(out, members);
            }
            KvData::ZSet(members) => {
                out.push(kind::VALUE_ZSET);
                put_scored(out, members);
            }
            KvData::Stream(stream) => {
                out.push(kind::VALUE_STREAM);
                stream.encode(out);
            }
        }
    }
}

/// Reads the operations of a `Docs` change, after its head, to the end of the payload.
pub fn decode_doc_ops<'a>(reader: &mut Reader<'a>) -> Result<Vec<DocChange<'a>>> {
    let mut ops = Vec::new();
    while !reader.done() {
        ops.push(match reader.byte()? {
            kind::OP_PUT => DocChange::Put(reader.bytes()?),
            kind::OP_DELETE => DocChange::Delete(reader.text()?),
            _ => return reader.fail("unknown document operation"),
        });
    }
    Ok(ops)
}

/// Reads the operations of a `Kv` change written in `format`, after its head, to the end of
/// the payload.
pub fn decode_kv_ops<'a>(reader: &mut Reader<'a>, format: Format) -> Result<Vec<KvChange<'a>>> {
    // Every format so far writes key-value operations alike. One that changes them
    // branches here, beside the readers of the formats before it (a variant added to
    // `Format` fails to compile here until it is placed).
    match format {
        Format::V1 | Format::V2 => {}
    }
    let mut ops = Vec::new();
    while !reader.done() {
        ops.push(match reader.byte()? {
            kind::OP_PUT => {
                let key = reader.bytes()?;
                let expire_at_ms = Some(reader.varint()?).filter(|&at| at != 0);
                KvChange::Put { key, value: decode_kv_value(reader)?, expire_at_ms }
            }
            kind::OP_DELETE => KvChange::Delete { key: reader.bytes()? },
            kind::OP_HASH_FIELDS => {
                let key = reader.bytes()?;
                let expire_at_ms = Some(reader.varint()?).filter(|&at| at != 0);
                let count = reader.count(2, "hash fields")?;
                let mut set = Vec::with_capacity(count);
                for _ in 0..count {
                    set.push((reader.bytes()?, reader.bytes()?));
                }
                let removed = list(reader, "removed hash fields")?;
                KvChange::HashFields { key, set, removed, expire_at_ms }
            }
            kind::OP_LIST_EDIT => {
                let key = reader.bytes()?;
                let expire_at_ms = Some(reader.varint()?).filter(|&at| at != 0);
                let first = zigzag(reader)?;
                let len = reader.varint()?;
                let count = reader.count(2, "list elements")?;
                let mut puts = Vec::with_capacity(count);
                for _ in 0..count {
                    puts.push((zigzag(reader)?, reader.bytes()?));
                }
                KvChange::ListEdit { key, first, len, puts, expire_at_ms }
            }
            kind::OP_SET_MEMBERS => {
                let key = reader.bytes()?;
                let expire_at_ms = Some(reader.varint()?).filter(|&at| at != 0);
                let added = list(reader, "set members")?;
                let removed = list(reader, "removed set members")?;
                KvChange::SetMembers { key, added, removed, expire_at_ms }
            }
            kind::OP_ZSET_MEMBERS => {
                let key = reader.bytes()?;
                let expire_at_ms = Some(reader.varint()?).filter(|&at| at != 0);
                let added = scored(reader, "sorted set members")?;
                let removed = list(reader, "removed sorted set members")?;
                KvChange::ZSetMembers { key, added, removed, expire_at_ms }
            }
            kind::OP_STREAM_PARTS => {
                let key = reader.bytes()?;
                let expire_at_ms = Some(reader.varint()?).filter(|&at| at != 0);
                let meta = StreamMeta::decode(reader)?;
                KvChange::StreamParts { key, meta, parts: stream::parts(reader)?, expire_at_ms }
            }
            _ => return reader.fail("unknown key-value operation"),
        });
    }
    Ok(ops)
}

fn decode_kv_value<'a>(reader: &mut Reader<'a>) -> Result<KvData<'a>> {
    Ok(match reader.byte()? {
        kind::VALUE_STR => KvData::Str(reader.bytes()?),
        kind::VALUE_INT => KvData::Int(zigzag(reader)?),
        kind::VALUE_HASH => {
            let count = reader.count(2, "hash fields")?;
            let mut pairs = Vec::with_capacity(count);
            for _ in 0..count {
                pairs.push((reader.bytes()?, reader.bytes()?));
            }
            KvData::Hash(pairs)
        }
        kind::VALUE_LIST => KvData::List { first: zigzag(reader)?, items: list(reader, "list elements")? },
        kind::VALUE_SET => KvData::Set(list(reader, "set members")?),
        kind::VALUE_ZSET => KvData::ZSet(scored(reader, "sorted set members")?),
        kind::VALUE_STREAM => KvData::Stream(StreamData::decode(reader)?),
        _ => return reader.fail("unknown value kind"),
    })
}
