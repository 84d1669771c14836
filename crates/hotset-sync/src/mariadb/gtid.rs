//! MariaDB's GTID events, which `mysql_common` does not decode: GTID (type 162) opens each
//! event group (a transaction, or one standalone statement), GTID_LIST (type 163) states
//! the binlog's position at the start of a file or a dump.
//!
//! Owns: the byte layouts of both events' bodies (after the 19-byte header, without the
//! checksum). Never: read past the body it is given (every read is bounds-checked), or
//! take the server id from the body (it is the event header's).

use crate::position::Gtid;

/// MariaDB's ANNOTATE_ROWS event (the statement of a row event group; ignored).
pub(crate) const ANNOTATE_ROWS_EVENT: u8 = 160;
/// MariaDB's BINLOG_CHECKPOINT event (ignored).
pub(crate) const BINLOG_CHECKPOINT_EVENT: u8 = 161;
/// MariaDB's GTID event: the start of an event group.
pub(crate) const GTID_EVENT: u8 = 162;
/// MariaDB's GTID_LIST event: the binlog state at a file's start.
pub(crate) const GTID_LIST_EVENT: u8 = 163;

/// The group is one statement with no BEGIN/COMMIT around it (DDL, a non-transactional
/// engine's statement): it ends with its first query event.
const FLAG_STANDALONE: u8 = 0x01;

/// A GTID event's content.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct GtidEvent {
    /// The group's GTID (the server id from the event header).
    pub gtid: Gtid,
    /// The event's `flags2` byte.
    pub flags: u8,
}

impl GtidEvent {
    /// Whether the group is a single statement that ends with its first query event.
    pub(crate) fn standalone(&self) -> bool {
        self.flags & FLAG_STANDALONE != 0
    }
}

/// A GTID event's body: sequence number (u64 LE), domain id (u32 LE), flags (u8), then
/// a commit id or padding and optional extras this reader does not need.
pub(crate) fn parse_gtid(body: &[u8], server: u32) -> Result<GtidEvent, String> {
    if body.len() < 13 {
        return Err(format!("a GTID event of {} bytes is shorter than its 13 fixed bytes", body.len()));
    }
    let sequence = u64::from_le_bytes(body[0..8].try_into().expect("8 bytes, length checked above"));
    let domain = u32::from_le_bytes(body[8..12].try_into().expect("4 bytes, length checked above"));
    Ok(GtidEvent { gtid: Gtid { domain, server, sequence }, flags: body[12] })
}

/// A GTID_LIST event's body: a count (u32 LE, its low 28 bits; the high 4 are flags),
/// then per entry domain (u32), server (u32), sequence (u64), all little-endian.
pub(crate) fn parse_gtid_list(body: &[u8]) -> Result<Vec<Gtid>, String> {
    let head: [u8; 4] = body.get(0..4).and_then(|b| b.try_into().ok()).ok_or("a GTID_LIST event without its count")?;
    let count = (u32::from_le_bytes(head) & 0x0FFF_FFFF) as usize;
    let needed = 4 + count * 16;
    if body.len() < needed {
        return Err(format!("a GTID_LIST event of {count} entries has {} bytes, fewer than {needed}", body.len()));
    }
    let list = body[4..needed]
        .chunks_exact(16)
        .map(|entry| Gtid {
            domain: u32::from_le_bytes(entry[0..4].try_into().expect("16-byte chunk")),
            server: u32::from_le_bytes(entry[4..8].try_into().expect("16-byte chunk")),
            sequence: u64::from_le_bytes(entry[8..16].try_into().expect("16-byte chunk")),
        })
        .collect();
    Ok(list)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bodies captured from MariaDB 10.11.19 (`mariadb-binlog --hexdump`), checksum cut.
    #[test]
    fn gtid_event_of_a_transaction() {
        let body = [4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x0c, 0, 0, 0, 0, 0, 0];
        let event = parse_gtid(&body, 1).unwrap();
        assert_eq!(event.gtid, Gtid { domain: 0, server: 1, sequence: 4 });
        assert!(!event.standalone());
    }

    #[test]
    fn gtid_event_of_ddl_and_other_domains() {
        // A standalone DDL group (flags STANDALONE | DDL) in domain 7, sequence 2^32 + 5.
        let mut body = vec![5, 0, 0, 0, 1, 0, 0, 0, 7, 0, 0, 0, 0x21];
        body.extend([0u8; 6]);
        let event = parse_gtid(&body, 42).unwrap();
        assert_eq!(event.gtid, Gtid { domain: 7, server: 42, sequence: (1 << 32) + 5 });
        assert!(event.standalone());
        assert!(parse_gtid(&body[..12], 1).is_err());
    }

    #[test]
    fn gtid_lists() {
        let body = [1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0];
        assert_eq!(parse_gtid_list(&body).unwrap(), vec![Gtid { domain: 0, server: 1, sequence: 3 }]);
        assert_eq!(parse_gtid_list(&[0, 0, 0, 0]).unwrap(), vec![]);
        // The count's high 4 bits are flags, not entries.
        assert_eq!(parse_gtid_list(&[0, 0, 0, 0x10]).unwrap(), vec![]);
        assert!(parse_gtid_list(&body[..19]).is_err());
        assert!(parse_gtid_list(&[1, 0]).is_err());
    }
}
