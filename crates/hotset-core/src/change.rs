//! Physical changes: the payload of every write-ahead log record and snapshot block.
//!
//! Owns: `Change` (what one committed write did, stated as resulting values: a document,
//! a deleted key, a key's value and deadline, a schema), its encoding and decoding over
//! every kind, and the index definitions inside kinds 1 and 4 (`schema::codec`, and
//! `schema::json_v1` for format 1). The rest of the format is `hotset_base::record`'s: the
//! kind table, `Format`, `Target`, group framing and the document and key-value codecs,
//! re-exported here under their old paths; its module docs give every kind's bytes. Never:
//! describe an operation ("increment", "update where"), because replaying a change must
//! give the same state however many times it is applied, and in any state that the
//! change's own effects are about to overwrite (that is what lets snapshots be fuzzy);
//! decode a payload without knowing the format of the file it came from; write any format
//! but `Format::CURRENT`; number a kind or an operation itself (that is `record::kind`).

use crate::error::{Error, Result};
use crate::schema::{IndexDef, codec, json_v1};
use crate::wire::{Reader, put_bytes, put_varint};
use hotset_base::record::{self, decode_doc_ops, decode_kv_ops, encode_drop_keyspace, kind};
pub use hotset_base::record::{
    DocChange, Format, KvChange, KvData, Target, encode_docs_head, encode_group, encode_kv_head,
};

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
            Change::DropKeyspace { keyspace } => encode_drop_keyspace(out, keyspace),
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
    /// What the change in `bytes` changes, read from its head alone (`record::target`).
    /// Every change names one namespace or one keyspace and touches nothing else, so
    /// changes to different targets commute: recovery may apply them on different threads,
    /// each target's changes in order. An error for bytes whose head does not decode.
    pub fn target(bytes: &'a [u8]) -> Result<Target<'a>> {
        record::target(bytes).map_err(Error::from)
    }

    /// The payloads of a group's parts, in order (each with one target); an error for
    /// bytes that are no group or whose parts do not frame (`record::parts`).
    pub fn parts(bytes: &'a [u8]) -> Result<Vec<&'a [u8]>> {
        record::parts(bytes).map_err(Error::from)
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
                Change::Kv { keyspace, flush, ops: decode_kv_ops(&mut reader, format)? }
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
                    KvChange::Put {
                        key: b"l",
                        value: KvData::List { first: -3, items: vec![b"a", b"", b"\x00"] },
                        expire_at_ms: Some(5),
                    },
                    KvChange::ListEdit {
                        key: b"l",
                        first: i64::MIN,
                        len: u64::MAX,
                        puts: vec![(i64::MIN, b"x"), (-1, b""), (i64::MAX, b"y")],
                        expire_at_ms: None,
                    },
                    KvChange::ListEdit { key: b"l", first: 0, len: 0, puts: vec![], expire_at_ms: Some(1) },
                    KvChange::Put { key: b"s", value: KvData::Set(vec![b"m", b""]), expire_at_ms: None },
                    KvChange::Put { key: b"s0", value: KvData::Set(vec![]), expire_at_ms: None },
                    KvChange::SetMembers {
                        key: b"s",
                        added: vec![b"n"],
                        removed: vec![b"m", b""],
                        expire_at_ms: Some(7),
                    },
                    KvChange::Put {
                        key: b"z",
                        value: KvData::ZSet(vec![(b"a", -0.0), (b"", f64::INFINITY), (b"b", 1.1)]),
                        expire_at_ms: None,
                    },
                    KvChange::ZSetMembers {
                        key: b"z",
                        added: vec![(b"c", f64::NEG_INFINITY), (b"d", 2.5e-300)],
                        removed: vec![b"a"],
                        expire_at_ms: Some(8),
                    },
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

    /// The heads the key-value engine writes without building a `Change` (it has none)
    /// are the bytes of the changes they stand for.
    #[test]
    fn key_value_heads_are_their_changes_bytes() {
        for (keyspace, flush) in [("0", false), ("cache", true), ("", false)] {
            let (mut head, mut change) = (Vec::new(), Vec::new());
            encode_kv_head(&mut head, keyspace, flush);
            Change::Kv { keyspace, flush, ops: vec![] }.encode(&mut change);
            assert_eq!(head, change);
            let (mut head, mut change) = (Vec::new(), Vec::new());
            encode_drop_keyspace(&mut head, keyspace);
            Change::DropKeyspace { keyspace }.encode(&mut change);
            assert_eq!(head, change);
        }
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
