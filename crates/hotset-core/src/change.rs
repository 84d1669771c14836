//! Physical changes: the payload of every write-ahead log record and snapshot block.
//!
//! Owns: `Change` (what one committed write did, stated as resulting values: a document,
//! a deleted key, a key's value and deadline, a schema), its byte encoding, and `Format`,
//! the versions of that encoding this build reads. Never: describe an operation
//! ("increment", "update where"), because replaying a change must give the same state
//! however many times it is applied, and in any state that the change's own effects are
//! about to overwrite (that is what lets snapshots be fuzzy); decode a payload without
//! knowing the format of the file it came from; write any format but `Format::CURRENT`.
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
//!                                                      count field:bytes* }*
//!        value = 1 bytes | 2 zigzag-varint integer | 3 count (field:bytes value:bytes)*
//!   8 drop keyspace      keyspace:bytes
//!   9 group              count part:bytes*  (each part a payload of any kind but 9)
//!  10 metadata           key:bytes  { 0 (removed) | 1 value:bytes }
//! ```
//! Operation lists run to the end of the payload; the record's length comes from the log
//! frame around it. Formats differ only in the index definitions of kinds 1 and 4; the
//! head (kind, then the name of the namespace, keyspace or metadata key) is the same in
//! every format, which `Change::target` relies on. A group is the one change with several
//! targets: its parts are changes of their own, each with one target, and what recovery
//! routes are the parts (`Change::parts`).

use crate::error::Result;
use crate::schema::{IndexDef, codec, json_v1};
use crate::wire::{Reader, put_bytes, put_varint};

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

/// One change, borrowing its strings and bytes (from the engine when logging, from the
/// record when replaying).
#[derive(Debug, Clone, PartialEq)]
pub enum Change<'a> {
    /// Create (or replace with an empty one) a namespace.
    CreateNamespace {
        /// The namespace's name.
        name: &'a str,
        /// Its indexes in declaration order, the primary key among them.
        indexes: Vec<IndexDef>,
    },
    /// Drop a namespace with its documents and indexes.
    DropNamespace {
        /// The namespace's name.
        name: &'a str,
    },
    /// Delete every document of a namespace, keeping its indexes.
    Truncate {
        /// The namespace emptied.
        namespace: &'a str,
    },
    /// Add an index to a namespace and build it over the documents stored.
    AddIndex {
        /// The namespace indexed.
        namespace: &'a str,
        /// The new index.
        def: IndexDef,
    },
    /// Drop an index of a namespace (never its primary key).
    DropIndex {
        /// The namespace the index belongs to.
        namespace: &'a str,
        /// The index's name.
        index: &'a str,
    },
    /// Documents written (upserted) or deleted, in order, applied together.
    Docs {
        /// The namespace written.
        namespace: &'a str,
        /// Each document's resulting state, in the order the write made them.
        ops: Vec<DocChange<'a>>,
    },
    /// Key-value changes of one keyspace, applied together; `flush` empties the keyspace
    /// before `ops`.
    Kv {
        /// The keyspace written.
        keyspace: &'a str,
        /// Empty the keyspace first (FLUSHDB).
        flush: bool,
        /// Each key's resulting state, in order.
        ops: Vec<KvChange<'a>>,
    },
    /// Drop a keyspace with its keys.
    DropKeyspace {
        /// The keyspace's name.
        keyspace: &'a str,
    },
    /// Changes to several namespaces (and metadata entries) made by one write, logged as
    /// one record so that replay sees all of them or none: a source transaction of live
    /// sync across tables, with the source's position. No part is a group.
    Group {
        /// The changes, in the order they were made.
        parts: Vec<Change<'a>>,
    },
    /// A metadata entry of the database: a small named value kept with the data (a live
    /// sync source's declaration and position), logged and snapshotted like it.
    Meta {
        /// The entry's name.
        key: &'a str,
        /// Its value now; `None`: removed.
        value: Option<&'a [u8]>,
    },
}

/// The one namespace or keyspace a change changes (see `Change::target`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Target<'a> {
    /// A namespace, by name.
    Namespace(&'a str),
    /// A keyspace, by name.
    Keyspace(&'a str),
    /// A metadata entry, by name.
    Meta(&'a str),
    /// Several: the change is a group, whose parts (`Change::parts`) each have one.
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
}

mod kind {
    pub const CREATE_NAMESPACE: u8 = 1;
    pub const DROP_NAMESPACE: u8 = 2;
    pub const TRUNCATE: u8 = 3;
    pub const ADD_INDEX: u8 = 4;
    pub const DROP_INDEX: u8 = 5;
    pub const DOCS: u8 = 6;
    pub const KV: u8 = 7;
    pub const DROP_KEYSPACE: u8 = 8;
    pub const GROUP: u8 = 9;
    pub const META: u8 = 10;
    pub const OP_PUT: u8 = 1;
    pub const OP_DELETE: u8 = 2;
    pub const OP_HASH_FIELDS: u8 = 3;
    pub const VALUE_STR: u8 = 1;
    pub const VALUE_INT: u8 = 2;
    pub const VALUE_HASH: u8 = 3;
}

impl Change<'_> {
    /// Appends the encoding to `out`, in `Format::CURRENT`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Change::CreateNamespace { name, indexes } => {
                out.push(kind::CREATE_NAMESPACE);
                put_bytes(out, name.as_bytes());
                put_varint(out, indexes.len() as u64);
                for def in indexes {
                    put_definition(out, def);
                }
            }
            Change::DropNamespace { name } => {
                out.push(kind::DROP_NAMESPACE);
                put_bytes(out, name.as_bytes());
            }
            Change::Truncate { namespace } => {
                out.push(kind::TRUNCATE);
                put_bytes(out, namespace.as_bytes());
            }
            Change::AddIndex { namespace, def } => {
                out.push(kind::ADD_INDEX);
                put_bytes(out, namespace.as_bytes());
                put_definition(out, def);
            }
            Change::DropIndex { namespace, index } => {
                out.push(kind::DROP_INDEX);
                put_bytes(out, namespace.as_bytes());
                put_bytes(out, index.as_bytes());
            }
            Change::Docs { namespace, ops } => {
                encode_docs_head(out, namespace);
                for op in ops {
                    op.encode(out);
                }
            }
            Change::Kv { keyspace, flush, ops } => {
                encode_kv_head(out, keyspace, *flush);
                for op in ops {
                    op.encode(out);
                }
            }
            Change::DropKeyspace { keyspace } => {
                out.push(kind::DROP_KEYSPACE);
                put_bytes(out, keyspace.as_bytes());
            }
            Change::Group { parts } => {
                let mut encoded = Vec::new();
                let parts: Vec<Vec<u8>> = parts
                    .iter()
                    .map(|part| {
                        assert!(!matches!(part, Change::Group { .. }), "a group inside a group");
                        encoded.clear();
                        part.encode(&mut encoded);
                        encoded.clone()
                    })
                    .collect();
                encode_group(out, parts.iter().map(Vec::as_slice));
            }
            Change::Meta { key, value } => {
                out.push(kind::META);
                put_bytes(out, key.as_bytes());
                match value {
                    None => out.push(0),
                    Some(value) => {
                        out.push(1);
                        put_bytes(out, value);
                    }
                }
            }
        }
    }
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
                put_varint(out, removed.len() as u64);
                for field in removed {
                    put_bytes(out, field);
                }
            }
        }
    }
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
                put_varint(out, ((value << 1) ^ (value >> 63)) as u64);
            }
            KvData::Hash(pairs) => {
                out.push(kind::VALUE_HASH);
                put_varint(out, pairs.len() as u64);
                for (field, value) in pairs {
                    put_bytes(out, field);
                    put_bytes(out, value);
                }
            }
        }
    }
}

/// A definition as `bytes`: its own length first, so a reader can tell where it ends
/// without understanding it, and `codec::decode` checks it fills those bytes exactly.
fn put_definition(out: &mut Vec<u8>, def: &IndexDef) {
    let mut bytes = Vec::new();
    codec::encode(def, &mut bytes);
    put_bytes(out, &bytes);
}

/// Reads the index definitions of a `CreateNamespace` in `format`.
fn decode_definitions(reader: &mut Reader<'_>, format: Format) -> Result<Vec<IndexDef>> {
    match format {
        Format::V1 => {
            let defs = decode_json(reader)?;
            let Some(list) = defs.as_array() else {
                return reader.fail("index definitions are not a list");
            };
            list.iter().map(json_v1::decode).collect()
        }
        Format::V2 => {
            // A definition takes one byte at least (its length).
            let count = reader.count(1, "index definitions")?;
            (0..count).map(|_| codec::decode(reader.bytes()?)).collect()
        }
    }
}

/// Reads the index definition of an `AddIndex` in `format`.
fn decode_definition(reader: &mut Reader<'_>, format: Format) -> Result<IndexDef> {
    match format {
        Format::V1 => json_v1::decode(&decode_json(reader)?),
        Format::V2 => codec::decode(reader.bytes()?),
    }
}

/// Format 1's JSON text of index definitions.
fn decode_json(reader: &mut Reader<'_>) -> Result<serde_json::Value> {
    let text = reader.bytes()?;
    serde_json::from_slice(text).or_else(|_| reader.fail("an index definition is not JSON"))
}

impl<'a> Change<'a> {
    /// What the change in `bytes` changes, read from its head alone. Every change names
    /// one namespace or one keyspace and touches nothing else, so changes to different
    /// targets commute: recovery may apply them on different threads, each target's
    /// changes in order. An error for bytes whose head does not decode.
    /// The head is the same in every format, so this needs none.
    pub fn target(bytes: &'a [u8]) -> Result<Target<'a>> {
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
    pub fn parts(bytes: &'a [u8]) -> Result<Vec<&'a [u8]>> {
        let mut reader = Reader::new(bytes, "change");
        if reader.byte()? != kind::GROUP {
            return reader.fail("not a group");
        }
        // A part takes two bytes at least (its length and its kind).
        let count = reader.count(2, "group parts")?;
        let parts = (0..count).map(|_| reader.bytes()).collect::<Result<Vec<_>, _>>()?;
        reader.finish()?;
        Ok(parts)
    }

    /// Decodes a payload written in `format` (the format of the file it was read from).
    pub fn decode(bytes: &'a [u8], format: Format) -> Result<Change<'a>> {
        let mut reader = Reader::new(bytes, "change");
        let change = match reader.byte()? {
            kind::CREATE_NAMESPACE => {
                let name = reader.text()?;
                Change::CreateNamespace { name, indexes: decode_definitions(&mut reader, format)? }
            }
            kind::DROP_NAMESPACE => Change::DropNamespace { name: reader.text()? },
            kind::TRUNCATE => Change::Truncate { namespace: reader.text()? },
            kind::ADD_INDEX => {
                let namespace = reader.text()?;
                Change::AddIndex { namespace, def: decode_definition(&mut reader, format)? }
            }
            kind::DROP_INDEX => Change::DropIndex { namespace: reader.text()?, index: reader.text()? },
            kind::DOCS => Change::Docs { namespace: reader.text()?, ops: decode_doc_ops(&mut reader)? },
            kind::KV => {
                let keyspace = reader.text()?;
                let flush = reader.flag("flush")?;
                Change::Kv { keyspace, flush, ops: decode_kv_ops(&mut reader)? }
            }
            kind::DROP_KEYSPACE => Change::DropKeyspace { keyspace: reader.text()? },
            kind::GROUP => {
                let count = reader.count(2, "group parts")?;
                let mut parts = Vec::with_capacity(count);
                for _ in 0..count {
                    let part = reader.bytes()?;
                    if part.first() == Some(&kind::GROUP) {
                        return reader.fail("a group inside a group");
                    }
                    parts.push(Change::decode(part, format)?);
                }
                Change::Group { parts }
            }
            kind::META => {
                let key = reader.text()?;
                let value = if reader.flag("metadata value")? { Some(reader.bytes()?) } else { None };
                Change::Meta { key, value }
            }
            _ => return reader.fail("unknown change kind"),
        };
        reader.finish()?;
        Ok(change)
    }
}

fn decode_doc_ops<'a>(reader: &mut Reader<'a>) -> Result<Vec<DocChange<'a>>> {
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

fn decode_kv_ops<'a>(reader: &mut Reader<'a>) -> Result<Vec<KvChange<'a>>> {
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
                let count = reader.count(1, "removed hash fields")?;
                let removed = (0..count).map(|_| reader.bytes()).collect::<Result<_, _>>()?;
                KvChange::HashFields { key, set, removed, expire_at_ms }
            }
            _ => return reader.fail("unknown key-value operation"),
        });
    }
    Ok(ops)
}

fn decode_kv_value<'a>(reader: &mut Reader<'a>) -> Result<KvData<'a>> {
    Ok(match reader.byte()? {
        kind::VALUE_STR => KvData::Str(reader.bytes()?),
        kind::VALUE_INT => {
            let zigzag = reader.varint()?;
            KvData::Int(((zigzag >> 1) as i64) ^ -((zigzag & 1) as i64))
        }
        kind::VALUE_HASH => {
            let count = reader.count(2, "hash fields")?;
            let mut pairs = Vec::with_capacity(count);
            for _ in 0..count {
                pairs.push((reader.bytes()?, reader.bytes()?));
            }
            KvData::Hash(pairs)
        }
        _ => return reader.fail("unknown value kind"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::FieldType;
    use crate::collate::Collation;
    use crate::schema::IndexKind;

    fn samples() -> Vec<Change<'static>> {
        vec![
            Change::CreateNamespace {
                name: "items",
                indexes: vec![
                    IndexDef::hash("id", FieldType::Int).pk(),
                    IndexDef::composite_typed(
                        &[("name", FieldType::String), ("year", FieldType::Int)],
                        IndexKind::Tree,
                    )
                    .collate(Collation::Utf8Ci),
                    IndexDef::tree("tags", FieldType::String).array().sparse(),
                ],
            },
            Change::DropNamespace { name: "items" },
            Change::Truncate { namespace: "ns" },
            Change::AddIndex { namespace: "ns", def: IndexDef::store("score", FieldType::Double) },
            Change::DropIndex { namespace: "ns", index: "score" },
            Change::Docs {
                namespace: "ns",
                ops: vec![DocChange::Put(br#"{"id":1}"#), DocChange::Delete("[1,\"a\"]"), DocChange::Put(b"{}")],
            },
            Change::Docs { namespace: "empty", ops: vec![] },
            Change::Kv {
                keyspace: "0",
                flush: true,
                ops: vec![
                    KvChange::Put {
                        key: b"k",
                        value: KvData::Str(b"v\x00\xff"),
                        expire_at_ms: Some(1_700_000_000_000),
                    },
                    KvChange::Put { key: b"n", value: KvData::Int(i64::MIN), expire_at_ms: None },
                    KvChange::Put { key: b"m", value: KvData::Int(-1), expire_at_ms: None },
                    KvChange::Put {
                        key: b"h",
                        value: KvData::Hash(vec![(b"f", b"1"), (b"", b"")]),
                        expire_at_ms: None,
                    },
                    KvChange::Delete { key: b"gone" },
                    KvChange::HashFields {
                        key: b"h",
                        set: vec![(b"f", b"2"), (b"g", b"")],
                        removed: vec![b"x", b""],
                        expire_at_ms: Some(9),
                    },
                    KvChange::HashFields { key: b"e", set: vec![], removed: vec![], expire_at_ms: None },
                ],
            },
            Change::DropKeyspace { keyspace: "cache" },
            Change::Meta { key: "source:app", value: Some(b"{\"position\":\"0/16B6C50\"}") },
            Change::Meta { key: "source:gone", value: None },
            Change::Group {
                parts: vec![
                    Change::Docs { namespace: "orders", ops: vec![DocChange::Put(br#"{"id":1}"#)] },
                    Change::Docs { namespace: "lines", ops: vec![DocChange::Delete("[1,2]")] },
                    Change::Meta { key: "source:app", value: Some(b"0/1") },
                ],
            },
            Change::Group { parts: vec![] },
        ]
    }

    #[test]
    fn every_change_round_trips() {
        for change in samples() {
            let mut bytes = Vec::new();
            change.encode(&mut bytes);
            assert_eq!(Change::decode(&bytes, Format::CURRENT).unwrap(), change);
        }
    }

    /// The target read from a change's head is the one the decoded change names, so
    /// recovery routes every change to the thread that owns what it changes.
    #[test]
    fn every_change_names_its_target() {
        for change in samples() {
            let mut bytes = Vec::new();
            change.encode(&mut bytes);
            let expected = match change {
                Change::CreateNamespace { name, .. } | Change::DropNamespace { name } => Target::Namespace(name),
                Change::Truncate { namespace }
                | Change::AddIndex { namespace, .. }
                | Change::DropIndex { namespace, .. }
                | Change::Docs { namespace, .. } => Target::Namespace(namespace),
                Change::Kv { keyspace, .. } | Change::DropKeyspace { keyspace } => Target::Keyspace(keyspace),
                Change::Meta { key, .. } => Target::Meta(key),
                Change::Group { ref parts } => {
                    let split = Change::parts(&bytes).unwrap();
                    assert_eq!(split.len(), parts.len());
                    for (bytes, part) in split.iter().zip(parts) {
                        assert_eq!(&Change::decode(bytes, Format::CURRENT).unwrap(), part);
                    }
                    Target::Group
                }
            };
            assert_eq!(Change::target(&bytes).unwrap(), expected);
        }
        assert!(Change::target(&[]).is_err());
        assert!(Change::target(&[99, 1, b'x']).is_err(), "an unknown kind");
        assert!(Change::target(&[kind::DOCS, 5, b'x']).is_err(), "a name cut short");
        assert!(Change::parts(&[kind::DOCS, 1, b'x']).is_err(), "no group");
    }

    #[test]
    fn a_group_never_nests() {
        let mut inner = Vec::new();
        Change::Group { parts: vec![Change::Truncate { namespace: "n" }] }.encode(&mut inner);
        let mut outer = Vec::new();
        encode_group(&mut outer, [inner.as_slice()].into_iter());
        assert!(Change::decode(&outer, Format::CURRENT).is_err());
    }

    #[test]
    fn a_number_over_64_bits_is_an_error_not_another_number() {
        // What broke (found with the `wal_record` fuzz target): the tenth byte of a varint
        // may carry bit 63 only, but its other bits were shifted out silently, so a
        // damaged deadline, count or length decoded as another number (and the change
        // re-encoded to other bytes) instead of being refused.
        let mut bytes = vec![kind::KV, 1, b'0', 0, kind::OP_PUT, 1, b'k'];
        bytes.extend_from_slice(&[0xff; 9]);
        bytes.push(0x03);
        bytes.extend_from_slice(&[kind::VALUE_INT, 0]);
        assert!(Change::decode(&bytes, Format::CURRENT).is_err());
        // The largest number, u64::MAX, ends with a tenth byte of 1 and still decodes.
        let tenth = bytes.len() - 3;
        bytes[tenth] = 0x01;
        let Ok(Change::Kv { ops, .. }) = Change::decode(&bytes, Format::CURRENT) else { panic!("u64::MAX decodes") };
        assert!(matches!(ops[..], [KvChange::Put { expire_at_ms: Some(u64::MAX), .. }]));
    }

    #[test]
    fn every_cut_and_stray_byte_is_an_error_not_a_panic() {
        for change in samples() {
            let mut bytes = Vec::new();
            change.encode(&mut bytes);
            for cut in 0..bytes.len() {
                // A cut inside an operation list can leave a shorter valid list, but then
                // it must decode to something else than the whole change.
                if let Ok(decoded) = Change::decode(&bytes[..cut], Format::CURRENT) {
                    assert_ne!(decoded, change, "cut at {cut}");
                }
            }
            let mut longer = bytes.clone();
            longer.push(0xee);
            assert!(Change::decode(&longer, Format::CURRENT).is_err());
        }
        assert!(Change::decode(&[99], Format::CURRENT).is_err());
        assert!(Change::decode(&[kind::KV, 1, b'0', 2], Format::CURRENT).is_err());
        assert!(
            Change::decode(
                &[kind::DOCS, 1, b'n', 1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f],
                Format::CURRENT
            )
            .is_err()
        );
    }

    /// A format-1 payload, built byte by byte as format 1 wrote it (the definitions as the
    /// API's JSON), decodes as format 1, to the definitions that wrote it.
    #[test]
    fn format_1_payloads_decode_with_their_json_definitions() {
        let json = br#"[{"name":"id","field":"id","type":"int","index":"hash","pk":true},{"name":"name+year","field":["name","year"],"type":["string","int"],"index":"tree","collate":"utf8_ci"}]"#;
        let mut bytes = vec![kind::CREATE_NAMESPACE, 5];
        bytes.extend_from_slice(b"items");
        put_bytes(&mut bytes, json);
        let expected = Change::CreateNamespace {
            name: "items",
            indexes: vec![
                IndexDef::hash("id", FieldType::Int).pk(),
                IndexDef::composite_typed(&[("name", FieldType::String), ("year", FieldType::Int)], IndexKind::Tree)
                    .collate(Collation::Utf8Ci),
            ],
        };
        assert_eq!(Change::decode(&bytes, Format::V1).unwrap(), expected);
        // Never misread: the same bytes are no format-2 change.
        assert!(Change::decode(&bytes, Format::V2).is_err());

        let json = br#"{"name":"at","field":"at","type":"int","index":"ttl","expire_after":60}"#;
        let mut bytes = vec![kind::ADD_INDEX, 2, b'n', b's'];
        put_bytes(&mut bytes, json);
        let expected = Change::AddIndex { namespace: "ns", def: IndexDef::tree("at", FieldType::Int).expire_after(60) };
        assert_eq!(Change::decode(&bytes, Format::V1).unwrap(), expected);
        assert!(Change::decode(&bytes, Format::V2).is_err());
    }

    /// Format-2 schema changes are no format-1 changes either, and changes without
    /// index definitions read the same in both.
    #[test]
    fn formats_differ_only_in_index_definitions() {
        for change in samples() {
            let mut bytes = Vec::new();
            change.encode(&mut bytes);
            let as_v1 = Change::decode(&bytes, Format::V1);
            match change {
                Change::CreateNamespace { .. } | Change::AddIndex { .. } => assert!(as_v1.is_err(), "{change:?}"),
                _ => assert_eq!(as_v1.unwrap(), change),
            }
        }
    }

    #[test]
    fn format_numbers() {
        assert_eq!(Format::from_number(1), Some(Format::V1));
        assert_eq!(Format::from_number(2), Some(Format::V2));
        assert_eq!(Format::from_number(99), None);
        assert_eq!(Format::from_number(0), None);
        assert_eq!(Format::CURRENT, *Format::READABLE.last().unwrap());
        assert_eq!(Format::readable_list(), "1, 2");
    }
}
