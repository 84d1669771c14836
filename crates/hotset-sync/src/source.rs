//! What a source driver (PostgreSQL in `pg`, MariaDB/MySQL in `mariadb`) is given and what
//! it hands back: the declaration of a source, the tables it found, and the events of its
//! copy and its stream.
//!
//! Owns: `Declaration` (the user's `[[sources]]` entry, TOML and JSON alike), `TableInfo`,
//! `Event` and `RowChange`, `SyncError`. Never: touch the engine (the runner applies
//! events), or know a wire protocol.
//!
//! Each driver offers the same four async functions over these types:
//! - `inspect(&Declaration) -> Result<Vec<TableInfo>>`: checks the source's settings, the
//!   user's privileges, that every declared table exists and has a primary key (or may use
//!   its full row), and reads each table's columns. It changes nothing on the source.
//! - `copy(&Declaration, &[TableInfo], tables: &[usize], &Sender<Event>) -> Result<Position>`:
//!   a consistent copy of the listed tables (`CopyPoint` first, then `CopyStart`,
//!   `Rows`..., `CopyDone` per table); returns the position whose changes the copy holds
//!   all of, and none after (the one `CopyPoint` gave).
//! - `stream(&Declaration, &[TableInfo], from: Position, &Sender<Event>, acked)`: every
//!   committed transaction after `from` touching a declared table (`Transaction`), and
//!   `Progress` when the stream passed a position with nothing to apply; returns only on an
//!   error. `acked` tells the driver the highest position Hotset holds durably, so a source
//!   that keeps changes for its reader (a PostgreSQL slot) may release what is before it.
//! - `forget(&Declaration)`: removes what Hotset created on the source (slot, publication).

use crate::position::Position;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A row (or document) as a driver maps it: column name to JSON value.
pub type Row = serde_json::Map<String, Value>;

/// A copied row as the document it becomes, in the engine's stored form (minified JSON of
/// one object, the columns in the table's order: what `Group::upsert_stored` takes). The
/// copy builds these straight from the source's rows: no `Row` tree per row, and nothing
/// for the apply to encode.
pub type Document = std::sync::Arc<[u8]>;

/// Builds a copy's documents one row at a time: the column names are written as JSON keys
/// once per table; each row's values are appended in column order.
pub(crate) struct DocumentWriter {
    keys: Vec<Vec<u8>>,
    buffer: Vec<u8>,
    next: usize,
}

impl DocumentWriter {
    pub(crate) fn new<'a>(names: impl IntoIterator<Item = &'a str>) -> DocumentWriter {
        let keys = names
            .into_iter()
            .map(|name| {
                let mut key = serde_json::to_vec(name).expect("a string serialises");
                key.push(b':');
                key
            })
            .collect();
        DocumentWriter { keys, buffer: vec![b'{'], next: 0 }
    }

    /// Starts the next column's value: the text after it must be one JSON value.
    pub(crate) fn field(&mut self) -> &mut Vec<u8> {
        assert!(self.next < self.keys.len(), "a row has no more columns than the table");
        if self.next > 0 {
            self.buffer.push(b',');
        }
        self.buffer.extend_from_slice(&self.keys[self.next]);
        self.next += 1;
        &mut self.buffer
    }

    /// Ends the row (every column written) and returns its document.
    pub(crate) fn finish(&mut self) -> Document {
        assert_eq!(self.next, self.keys.len(), "a row has every column of the table");
        self.buffer.push(b'}');
        let document = Document::from(&self.buffer[..]);
        self.buffer.truncate(1);
        self.next = 0;
        document
    }
}

/// A source as the user declares it (`[[sources]]` in the config, `POST /api/v1/sources`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Declaration {
    /// Letters, digits, `_` and `-`; names the source in status, positions and on the
    /// source itself (the slot and publication Hotset creates).
    pub name: String,
    /// `postgres://user:password@host:port/database` or `mysql://user:password@host:port/database`
    /// (also `postgresql://` and `mariadb://`).
    pub url: String,
    /// The tables followed.
    pub tables: Vec<TableDecl>,
    /// How values are mapped, and names on the source.
    #[serde(default, skip_serializing_if = "Options::is_default")]
    pub options: Options,
}

/// One table followed into one namespace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TableDecl {
    /// `schema.table` (PostgreSQL; `public.` may be left out) or `database.table` (MySQL;
    /// the URL's database may be left out).
    pub table: String,
    /// The namespace written; the table's name without its schema by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// The columns copied into documents; every column by default. The primary key's
    /// columns are always copied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub columns: Option<Vec<String>>,
    /// Secondary indexes of the namespace, as the HTTP API writes index definitions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub indexes: Vec<Value>,
    /// A table without a primary key is followed by its whole row (PostgreSQL's REPLICA
    /// IDENTITY FULL); its documents are then keyed by every copied column. Off: such a
    /// table is refused.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub full_row_identity: bool,
}

/// Value mapping and source-side names.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Options {
    /// numeric/decimal columns.
    #[serde(default, skip_serializing_if = "is_default")]
    pub numeric: NumericMode,
    /// date, time and timestamp columns.
    #[serde(default, skip_serializing_if = "is_default")]
    pub time: TimeMode,
    /// PostgreSQL: the replication slot's name (default `hotset_<name>`, `-` as `_`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slot: Option<String>,
    /// PostgreSQL: the publication's name (default as the slot's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub publication: Option<String>,
}

fn is_default<T: Default + PartialEq>(value: &T) -> bool {
    *value == T::default()
}

impl Options {
    fn is_default(&self) -> bool {
        is_default(self)
    }
}

/// How numeric/decimal values become JSON.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NumericMode {
    /// A JSON number when the value reads back exactly from one (an integer in 64 bits, or
    /// a decimal whose double prints as the same text), otherwise its text: never rounded.
    #[default]
    Exact,
    /// Always the decimal text.
    String,
    /// Always a double (rounded where it must be).
    Double,
}

/// How dates and times become JSON.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TimeMode {
    /// RFC 3339 text (`2024-05-01`, `12:30:00`, `2024-05-01T12:30:00Z`).
    #[default]
    Rfc3339,
    /// Timestamps as Unix epoch seconds (a double when there are fractions); dates as the
    /// epoch seconds of their midnight UTC; times stay text.
    Epoch,
}

impl Declaration {
    /// The source kind its URL names.
    pub fn kind(&self) -> Result<Kind, SyncError> {
        let scheme = self.url.split("://").next().unwrap_or_default();
        match scheme {
            "postgres" | "postgresql" => Ok(Kind::Postgres),
            "mysql" | "mariadb" => Ok(Kind::MySql),
            _ => Err(SyncError::declaration(format!(
                "source {}: the url must start with postgres:// or mysql:// (it starts with {scheme:?})",
                self.name
            ))),
        }
    }

    /// The namespace table `index` is written to.
    pub fn namespace(&self, index: usize) -> String {
        let decl = &self.tables[index];
        decl.namespace.clone().unwrap_or_else(|| decl.table.rsplit('.').next().unwrap_or(&decl.table).to_string())
    }
}

/// Which protocol a source speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// PostgreSQL 10+ (logical replication with pgoutput).
    Postgres,
    /// MariaDB 10.6+ or MySQL 8 (row-based binlog).
    MySql,
}

/// A declared table as found on the source.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TableInfo {
    /// Its index in `Declaration::tables`.
    pub index: usize,
    /// The fully qualified name on the source (`public.profiles`, `appdb.profiles`).
    pub table: String,
    /// The primary key's columns, in key order (every column for a full-row identity).
    pub key: Vec<String>,
    /// Every column in table order, with the source's type name.
    pub columns: Vec<Column>,
    /// The source's estimate of its row count (statistics, not a count).
    pub estimated_rows: u64,
}

/// One column of a source table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Column {
    /// Its name.
    pub name: String,
    /// The source's name of its type (`int4`, `varchar(20)`, `_text` for an array).
    pub type_name: String,
}

/// What a driver hands the runner, in source order.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// The copy's snapshot is taken: the position it stands at, which `copy` returns too.
    /// Sent before any table's rows, so the runner can record it before the copy ends
    /// (what lets a copy cut short resume table by table).
    CopyPoint {
        /// The snapshot's position.
        position: Position,
    },
    /// The copy of a table begins.
    CopyStart {
        /// The table's index in the declaration.
        table: usize,
        /// The source's estimate of its rows.
        estimated_rows: u64,
    },
    /// Rows copied from a table.
    Rows {
        /// The table's index in the declaration.
        table: usize,
        /// The rows, mapped, as documents in their stored form.
        docs: Vec<Document>,
    },
    /// Every row of the table has been sent.
    CopyDone {
        /// The table's index in the declaration.
        table: usize,
    },
    /// One committed source transaction touching declared tables, changes in commit order.
    Transaction {
        /// Its changes.
        changes: Vec<RowChange>,
        /// Where the stream resumes after this transaction (PostgreSQL: the commit's end
        /// LSN; MariaDB: the GTID list with this transaction's GTID).
        position: Position,
        /// The commit's time on the source, Unix microseconds, when the protocol says
        /// (PostgreSQL: to the microsecond; MariaDB's binlog: to the second).
        commit_time_us: Option<i64>,
    },
    /// The stream has passed `position` with nothing to apply (a keepalive, a transaction
    /// on other tables).
    Progress {
        /// The position passed.
        position: Position,
    },
    /// How far the source's own log reaches (PostgreSQL: the WAL end its sender reports),
    /// what the lag in bytes is measured against. Sent now and then, not per change.
    SourceEnd {
        /// The end of the source's log.
        position: Position,
    },
}

/// One row change of a transaction.
#[derive(Debug, Clone, PartialEq)]
pub struct RowChange {
    /// The table's index in the declaration.
    pub table: usize,
    /// What happened.
    pub kind: ChangeKind,
}

/// What happened to a row.
#[derive(Debug, Clone, PartialEq)]
pub enum ChangeKind {
    /// A new row (every column).
    Insert(Row),
    /// A row changed.
    Update {
        /// The key columns before the change, when the source sent them (when the key
        /// changed, or a full-row identity); `None`: the key did not change.
        old_key: Option<Row>,
        /// The row after the change; columns listed in `unchanged` are absent.
        row: Row,
        /// Columns the source did not resend because they did not change (PostgreSQL's
        /// TOAST values): the stored document's values stand.
        unchanged: Vec<String>,
    },
    /// A row deleted; at least its key columns.
    Delete(Row),
    /// Every row of the table deleted.
    Truncate,
}

/// Why a driver stopped.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct SyncError {
    /// What the runner does next.
    pub kind: ErrorKind,
    /// For the user: names the cause and, where there is one, what to do.
    pub message: String,
}

/// What a failure means for the runner.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The declaration cannot work (wrong password, unknown table, source settings,
    /// privileges, no primary key): refused before anything changes.
    Declaration,
    /// The source went away or refused for now: retry with backoff, nothing is lost.
    Transient,
    /// The source no longer has what Hotset needs to go on (slot dropped, binlog purged):
    /// the source is `failed` until the user asks for a resync.
    Lost,
}

impl SyncError {
    /// A bad declaration.
    pub fn declaration(message: impl Into<String>) -> SyncError {
        SyncError { kind: ErrorKind::Declaration, message: message.into() }
    }
    /// A failure worth retrying.
    pub fn transient(message: impl Into<String>) -> SyncError {
        SyncError { kind: ErrorKind::Transient, message: message.into() }
    }
    /// A gap that only a resync closes.
    pub fn lost(message: impl Into<String>) -> SyncError {
        SyncError { kind: ErrorKind::Lost, message: message.into() }
    }
}
