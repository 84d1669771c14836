//! Positions in a source's change stream, as users read and write them.
//!
//! Owns: `Position` (a PostgreSQL LSN `0/16B6C50`, a MariaDB GTID list `0-1-1234`, a MySQL
//! binlog `file:pos`), its text form both ways, and `reached` (has a stream at this position
//! passed a target). Never: guess an order between positions of different kinds.

use std::fmt;

/// Where a source's stream stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Position {
    /// A PostgreSQL WAL location.
    Lsn(u64),
    /// A MariaDB GTID list: per replication domain, the last sequence number (with the
    /// server id that wrote it), sorted by domain.
    Gtid(Vec<Gtid>),
    /// A MySQL binlog file and offset.
    File {
        /// The binlog file's name.
        file: String,
        /// The offset in it.
        pos: u64,
    },
}

/// One MariaDB GTID: domain, server id, sequence number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Gtid {
    /// The replication domain.
    pub domain: u32,
    /// The server that wrote the transaction.
    pub server: u32,
    /// The transaction's number in its domain.
    pub sequence: u64,
}

impl Position {
    /// Reads a position in its text form: `0/16B6C50`, `0-1-1234[,1-2-5...]` (empty: the
    /// start of every domain), `mysql-bin.000003:1547`.
    pub fn parse(text: &str) -> Option<Position> {
        let text = text.trim();
        if let Some((high, low)) = text.split_once('/') {
            let high = u64::from_str_radix(high, 16).ok().filter(|h| *h <= u32::MAX as u64)?;
            let low = u64::from_str_radix(low, 16).ok().filter(|l| *l <= u32::MAX as u64)?;
            return Some(Position::Lsn(high << 32 | low));
        }
        if let Some((file, pos)) = text.rsplit_once(':') {
            return Some(Position::File { file: file.to_string(), pos: pos.parse().ok()? });
        }
        let mut gtids = Vec::new();
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let mut fields = part.splitn(3, '-');
            let domain = fields.next()?.parse().ok()?;
            let server = fields.next()?.parse().ok()?;
            let sequence = fields.next()?.parse().ok()?;
            gtids.push(Gtid { domain, server, sequence });
        }
        gtids.sort();
        gtids.windows(2).all(|pair| pair[0].domain != pair[1].domain).then_some(Position::Gtid(gtids))
    }

    /// Whether a stream that stands at `self` has passed everything up to `target`: the
    /// same LSN or a later one; every domain of `target` at the same sequence or later;
    /// the same file at the same offset or later, or a later file. Positions of different
    /// kinds never reach each other.
    pub fn reached(&self, target: &Position) -> bool {
        match (self, target) {
            (Position::Lsn(at), Position::Lsn(target)) => at >= target,
            (Position::Gtid(at), Position::Gtid(target)) => target
                .iter()
                .all(|want| at.iter().any(|have| have.domain == want.domain && have.sequence >= want.sequence)),
            (Position::File { file, pos }, Position::File { file: target_file, pos: target_pos }) => {
                (file.as_str(), *pos) >= (target_file.as_str(), *target_pos)
            }
            _ => false,
        }
    }

    /// For a GTID list: the list with `gtid` in place of its domain's entry.
    pub fn with_gtid(&self, gtid: Gtid) -> Position {
        let mut list = match self {
            Position::Gtid(list) => list.clone(),
            _ => Vec::new(),
        };
        list.retain(|have| have.domain != gtid.domain);
        list.push(gtid);
        list.sort();
        Position::Gtid(list)
    }
}

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Position::Lsn(lsn) => write!(f, "{:X}/{:X}", lsn >> 32, lsn & 0xFFFF_FFFF),
            Position::Gtid(list) => {
                for (i, gtid) in list.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    write!(f, "{}-{}-{}", gtid.domain, gtid.server, gtid.sequence)?;
                }
                Ok(())
            }
            Position::File { file, pos } => write!(f, "{file}:{pos}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_forms_round_trip() {
        for text in ["0/16B6C50", "1A/0", "0-1-1234", "0-1-5,2-3-9", "mysql-bin.000003:1547"] {
            assert_eq!(Position::parse(text).unwrap().to_string(), text);
        }
        assert_eq!(Position::parse("0/16B6C50"), Some(Position::Lsn(0x16B6C50)));
        assert_eq!(Position::parse(""), Some(Position::Gtid(vec![])));
        for bad in ["x/1", "0/1/2", "0-1", "0-1-x", "0-1-2,0-1-3", "f:x", "100000000/0"] {
            assert_eq!(Position::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn reached_compares_within_a_kind() {
        let lsn = |t| Position::parse(t).unwrap();
        assert!(lsn("0/20").reached(&lsn("0/20")));
        assert!(lsn("1/0").reached(&lsn("0/FFFFFFFF")));
        assert!(!lsn("0/1F").reached(&lsn("0/20")));
        assert!(lsn("0-1-10,1-1-3").reached(&lsn("0-2-9")));
        assert!(!lsn("0-1-10").reached(&lsn("0-1-9,1-1-1")));
        assert!(lsn("b.2:4").reached(&lsn("b.1:900")));
        assert!(!lsn("b.1:4").reached(&lsn("b.1:900")));
        assert!(!lsn("0/20").reached(&lsn("0-1-1")));
        assert_eq!(lsn("0-1-10").with_gtid(Gtid { domain: 0, server: 2, sequence: 11 }), lsn("0-2-11"));
    }
}
