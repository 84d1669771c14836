//! The MariaDB driver: follows tables of a MariaDB 10.6+ server (MySQL 8 is refused for
//! now, clearly) by a consistent copy and then its row binlog, read as a replica.
//!
//! Owns, by file: `connect` (URL, session, errors sorted for the runner), `inspect`
//! (settings, privileges, tables), `copy` (the consistent snapshot and its position),
//! `stream` (the binlog dump from a GTID position), `decode` (binlog events to the runner's
//! events), `gtid` (MariaDB's GTID events, which `mysql_common` does not decode),
//! `statement` (TRUNCATE, ALTER and group boundaries in query events), `value` (values to
//! JSON, one mapping for copy and binlog). Never: write to the source (it reads, and its
//! session variables are its own), or hold the copy's transaction longer than the copy
//! (DDL on the source waits for it).
//!
//! The four functions follow `source`'s contract; what is MariaDB's own:
//! - Column names come from the binlog's table maps, so `binlog_row_metadata = FULL` is
//!   required (inspect says so); a table map also gives the primary key, signedness,
//!   character sets and ENUM/SET values as of the row event it describes. JSON columns
//!   (LONGTEXT with a `json_valid` check) and UUID columns are known by name from
//!   `information_schema`, read again after an ALTER TABLE of the table.
//! - The replica's server id is derived from the source's name (`server_id`), so two
//!   Hotset servers following one MariaDB must name their sources differently.
//! - Positions are MariaDB GTID lists: the copy's is `BINLOG_GTID_POS` of its snapshot's
//!   binlog offset; a transaction's is the previous position with its own GTID.
//! - Not handled yet, and said here so nobody assumes otherwise: DROP or RENAME TABLE of
//!   a declared table (its documents stay; rows under a new name are not followed); XA
//!   transactions (applied at XA PREPARE, as the binlog writes them); text in character
//!   sets other than UTF-8, ASCII and latin1 (decoded as UTF-8); MySQL 8 (its GTIDs,
//!   `COM_BINLOG_DUMP_GTID` and its consistent snapshot need their own code: inspect
//!   refuses a MySQL server). A source transaction is held in memory until its commit.

mod connect;
mod copy;
mod decode;
mod gtid;
mod inspect;
mod statement;
mod stream;
mod value;

pub use copy::copy;
pub use inspect::inspect;
pub use stream::stream;

use crate::source::{Column, Declaration, SyncError, TableDecl, TableInfo};

/// Nothing to remove: a MariaDB replica leaves nothing on its source (the binlog's
/// retention is the server's own settings).
pub async fn forget(decl: &Declaration) -> Result<(), SyncError> {
    connect::source(decl).map(|_| ())
}

/// The replica server id of a source: FNV-1a of its name with the top bit set, so it
/// does not meet the small ids servers are usually given. MariaDB drops an older dump
/// connection with the same id, which is what a restarted stream wants.
pub fn server_id(source_name: &str) -> u32 {
    let hash = source_name.bytes().fold(0x811c_9dc5u32, |hash, byte| (hash ^ byte as u32).wrapping_mul(0x0100_0193));
    hash | 0x8000_0000
}

/// The columns of a table that go into documents, in table order: the declared ones and
/// the key's, or every column.
pub(crate) fn selected_columns<'a>(decl: &TableDecl, info: &'a TableInfo) -> Vec<&'a Column> {
    info.columns
        .iter()
        .filter(|column| match &decl.columns {
            None => true,
            Some(wanted) => wanted.contains(&column.name) || info.key.contains(&column.name),
        })
        .collect()
}

/// Whether the column `name` goes into documents (a column added later goes in when
/// every column is declared).
pub(crate) fn is_selected(decl: &TableDecl, key: &[String], name: &str) -> bool {
    match &decl.columns {
        None => true,
        Some(wanted) => wanted.iter().any(|w| w == name) || key.iter().any(|k| k == name),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_ids_are_stable_and_high() {
        assert_eq!(server_id("app"), server_id("app"));
        assert_ne!(server_id("app"), server_id("app2"));
        assert!(server_id("") >= 0x8000_0000);
    }
}
