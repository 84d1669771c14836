//! The pgoutput messages (protocol version 1) inside a logical replication stream's
//! XLogData, decoded: relations, inserts, updates, deletes, truncates. Begin and Commit
//! are decoded by `pgwire-replication` itself.
//!
//! Owns: the byte layout of those messages and of tuple data. Never: map values (that is
//! `value`), or panic on bytes from the wire (every read is bounds-checked and a short or
//! unknown message is an error).

/// A relation (table) as a Relation message describes it; sent before the first change
/// to it in a session and again after its schema changed.
#[derive(Debug, Clone, PartialEq)]
pub struct Relation {
    /// The table's OID.
    pub id: u32,
    /// Its schema.
    pub schema: String,
    /// Its name.
    pub name: String,
    /// Its columns, in table order.
    pub columns: Vec<RelationColumn>,
}

/// One column of a relation.
#[derive(Debug, Clone, PartialEq)]
pub struct RelationColumn {
    /// Part of the replica identity (the primary key by default).
    pub key: bool,
    /// Its name.
    pub name: String,
    /// Its type's OID.
    pub type_oid: u32,
}

/// One column's value in tuple data.
#[derive(Debug, Clone, PartialEq)]
pub enum Datum {
    /// SQL NULL.
    Null,
    /// An out-of-line (TOAST) value the change did not touch: not sent.
    Unchanged,
    /// The value's text form.
    Text(String),
}

/// A decoded message.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// A relation's description.
    Relation(Relation),
    /// A new row.
    Insert {
        /// The relation's OID.
        relation: u32,
        /// Its columns' values.
        new: Vec<Datum>,
    },
    /// A changed row.
    Update {
        /// The relation's OID.
        relation: u32,
        /// The old row's key columns (`K`, when the key changed) or whole old row (`O`,
        /// REPLICA IDENTITY FULL); other columns `Null`.
        old: Option<Vec<Datum>>,
        /// The new row.
        new: Vec<Datum>,
    },
    /// A deleted row: its key columns (or whole row with REPLICA IDENTITY FULL).
    Delete {
        /// The relation's OID.
        relation: u32,
        /// The old row's values.
        old: Vec<Datum>,
    },
    /// Rows of several relations truncated.
    Truncate {
        /// The relations' OIDs.
        relations: Vec<u32>,
    },
    /// Something this sync does not use (Type, Origin...).
    Other,
}

/// A bounds-checked reader of one message.
struct Reader<'a> {
    bytes: &'a [u8],
}

type Result<T> = std::result::Result<T, String>;

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        if self.bytes.len() < n {
            return Err(format!("pgoutput: message cut short ({} bytes left, {n} needed)", self.bytes.len()));
        }
        let (head, tail) = self.bytes.split_at(n);
        self.bytes = tail;
        Ok(head)
    }
    fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }
    fn u16(&mut self) -> Result<u16> {
        Ok(u16::from_be_bytes(self.take(2)?.try_into().expect("two bytes")))
    }
    fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_be_bytes(self.take(4)?.try_into().expect("four bytes")))
    }
    fn string(&mut self) -> Result<String> {
        let end = self.bytes.iter().position(|&b| b == 0).ok_or("pgoutput: a string without its end")?;
        let text = String::from_utf8_lossy(&self.bytes[..end]).into_owned();
        self.bytes = &self.bytes[end + 1..];
        Ok(text)
    }
    fn tuple(&mut self) -> Result<Vec<Datum>> {
        let count = self.u16()? as usize;
        let mut values = Vec::with_capacity(count.min(self.bytes.len()));
        for _ in 0..count {
            values.push(match self.u8()? {
                b'n' => Datum::Null,
                b'u' => Datum::Unchanged,
                b't' => {
                    let len = self.u32()? as usize;
                    Datum::Text(String::from_utf8_lossy(self.take(len)?).into_owned())
                }
                other => return Err(format!("pgoutput: unknown column kind {:?}", other as char)),
            });
        }
        Ok(values)
    }
}

/// Decodes one pgoutput message (the data of an XLogData).
pub fn decode(bytes: &[u8]) -> Result<Message> {
    let mut r = Reader { bytes };
    let message = match r.u8()? {
        b'R' => {
            let id = r.u32()?;
            let schema = r.string()?;
            let name = r.string()?;
            let _replica_identity = r.u8()?;
            let count = r.u16()? as usize;
            let mut columns = Vec::with_capacity(count.min(bytes.len()));
            for _ in 0..count {
                let flags = r.u8()?;
                let name = r.string()?;
                let type_oid = r.u32()?;
                let _modifier = r.u32()?;
                columns.push(RelationColumn { key: flags & 1 != 0, name, type_oid });
            }
            Message::Relation(Relation { id, schema, name, columns })
        }
        b'I' => {
            let relation = r.u32()?;
            match r.u8()? {
                b'N' => Message::Insert { relation, new: r.tuple()? },
                other => return Err(format!("pgoutput: insert without a new tuple ({:?})", other as char)),
            }
        }
        b'U' => {
            let relation = r.u32()?;
            let mut old = None;
            let mut marker = r.u8()?;
            if marker == b'K' || marker == b'O' {
                old = Some(r.tuple()?);
                marker = r.u8()?;
            }
            if marker != b'N' {
                return Err(format!("pgoutput: update without a new tuple ({:?})", marker as char));
            }
            Message::Update { relation, old, new: r.tuple()? }
        }
        b'D' => {
            let relation = r.u32()?;
            match r.u8()? {
                b'K' | b'O' => Message::Delete { relation, old: r.tuple()? },
                other => return Err(format!("pgoutput: delete without an old tuple ({:?})", other as char)),
            }
        }
        b'T' => {
            let count = r.u32()? as usize;
            let _options = r.u8()?;
            let relations = (0..count).map(|_| r.u32()).collect::<Result<Vec<_>>>()?;
            Message::Truncate { relations }
        }
        b'Y' | b'O' | b'B' | b'C' | b'M' => Message::Other,
        other => return Err(format!("pgoutput: unknown message {:?}", other as char)),
    };
    Ok(message)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tuple(out: &mut Vec<u8>, values: &[Option<&str>]) {
        out.extend_from_slice(&(values.len() as u16).to_be_bytes());
        for value in values {
            match value {
                None => out.push(b'n'),
                Some("\u{0}unchanged") => out.push(b'u'),
                Some(text) => {
                    out.push(b't');
                    out.extend_from_slice(&(text.len() as u32).to_be_bytes());
                    out.extend_from_slice(text.as_bytes());
                }
            }
        }
    }

    #[test]
    fn messages_decode_and_short_ones_are_errors() {
        let mut relation = vec![b'R'];
        relation.extend_from_slice(&16385u32.to_be_bytes());
        relation.extend_from_slice(b"public\0items\0d");
        relation.extend_from_slice(&2u16.to_be_bytes());
        relation.extend_from_slice(b"\x01id\0");
        relation.extend_from_slice(&23u32.to_be_bytes());
        relation.extend_from_slice(&(-1i32).to_be_bytes());
        relation.extend_from_slice(b"\x00body\0");
        relation.extend_from_slice(&25u32.to_be_bytes());
        relation.extend_from_slice(&(-1i32).to_be_bytes());
        let Message::Relation(decoded) = decode(&relation).unwrap() else { panic!() };
        assert_eq!(decoded.name, "items");
        assert_eq!(
            decoded.columns,
            vec![
                RelationColumn { key: true, name: "id".into(), type_oid: 23 },
                RelationColumn { key: false, name: "body".into(), type_oid: 25 }
            ]
        );

        let mut update = vec![b'U'];
        update.extend_from_slice(&16385u32.to_be_bytes());
        update.push(b'K');
        tuple(&mut update, &[Some("1"), None]);
        update.push(b'N');
        tuple(&mut update, &[Some("2"), Some("\u{0}unchanged")]);
        assert_eq!(
            decode(&update).unwrap(),
            Message::Update {
                relation: 16385,
                old: Some(vec![Datum::Text("1".into()), Datum::Null]),
                new: vec![Datum::Text("2".into()), Datum::Unchanged],
            }
        );
        for messages in [&relation, &update] {
            for cut in 1..messages.len() {
                assert!(decode(&messages[..cut]).is_err(), "cut at {cut}");
            }
        }
        let mut truncate = vec![b'T'];
        truncate.extend_from_slice(&2u32.to_be_bytes());
        truncate.push(0);
        truncate.extend_from_slice(&7u32.to_be_bytes());
        truncate.extend_from_slice(&9u32.to_be_bytes());
        assert_eq!(decode(&truncate).unwrap(), Message::Truncate { relations: vec![7, 9] });
        assert!(decode(b"Z").is_err());
        assert!(decode(b"").is_err());
    }
}
