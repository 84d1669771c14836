//! Binlog events to the runner's events: event groups (a GTID event, then row and query
//! events, then an XID or COMMIT, or one standalone statement) become one
//! `Event::Transaction` when they touch a declared table, else one `Event::Progress`.
//!
//! Owns: `Decoder` (the position reached, the group being read, the table maps seen and
//! what they map to: declaration index, column names, kinds and key). Never: emit a
//! position before its group's last event (a group is all or nothing), or map a row by
//! position in the table rather than by the column names its table map gives.

use super::gtid::{self, GtidEvent};
use super::statement::{self, Statement};
use super::value::{ValueKind, binlog_to_json};
use crate::position::Position;
use crate::source::{ChangeKind, Declaration, Event, Row, RowChange, SyncError, TableInfo};
use mysql_async::binlog::events::{
    Event as BinlogEvent, EventData, OptionalMetaExtractor, OptionalMetadataField, RowsEventData, TableMapEvent,
};
use mysql_async::binlog::row::BinlogRow;
use mysql_async::consts::ColumnType;
use std::collections::HashMap;

/// What the stream does after an event.
#[derive(Debug)]
pub(crate) enum Outcome {
    /// Nothing yet (inside a group, or an event that says nothing).
    Nothing,
    /// A group ended: hand this to the runner.
    Emit(Event),
    /// A group that altered declared tables ended: read these tables' columns again, then
    /// hand the event on.
    RefreshThenEmit(Vec<usize>, Event),
}

/// A table map of a declared table, as rows are mapped with it.
struct Mapped {
    table: usize,
    /// Per column name: its kind, and whether it goes into documents.
    columns: HashMap<String, (ValueKind, bool)>,
    /// The key's column names, in key order.
    key: Vec<String>,
}

/// The event group being read.
struct Group {
    gtid: GtidEvent,
    changes: Vec<RowChange>,
    altered: Vec<usize>,
}

/// Reads binlog events in order and assembles transactions.
pub(crate) struct Decoder<'a> {
    decl: &'a Declaration,
    tables: Vec<TableInfo>,
    /// `(database, table)` to the index in `tables`.
    by_name: HashMap<(String, String), usize>,
    /// Table map id to its event and mapping (`None`: not a declared table).
    maps: HashMap<u64, (TableMapEvent<'static>, Option<Mapped>)>,
    position: Position,
    group: Option<Group>,
}

impl<'a> Decoder<'a> {
    pub(crate) fn new(decl: &'a Declaration, tables: Vec<TableInfo>, from: Position) -> Decoder<'a> {
        let by_name = tables
            .iter()
            .enumerate()
            .filter_map(|(at, info)| info.table.split_once('.').map(|(d, t)| ((d.to_string(), t.to_string()), at)))
            .collect();
        Decoder { decl, tables, by_name, maps: HashMap::new(), position: from, group: None }
    }

    /// A table's columns read again (after an ALTER TABLE).
    pub(crate) fn replace_table(&mut self, info: TableInfo) {
        if let Some(at) = self.tables.iter().position(|t| t.index == info.index) {
            self.tables[at] = info;
        }
    }

    /// Takes one event.
    pub(crate) fn on_event(&mut self, event: &BinlogEvent) -> Result<Outcome, SyncError> {
        let header = event.header();
        match header.event_type_raw() {
            gtid::GTID_EVENT => {
                let gtid = gtid::parse_gtid(event.data(), header.server_id()).map_err(|e| self.corrupt(&e))?;
                if let Some(open) = self.group.take() {
                    tracing::warn!(source = %self.decl.name, gtid = ?open.gtid.gtid, "a binlog event group without its end; dropped");
                }
                self.group = Some(Group { gtid, changes: Vec::new(), altered: Vec::new() });
                return Ok(Outcome::Nothing);
            }
            gtid::GTID_LIST_EVENT => {
                // The binlog state where a file (or the dump) starts: the groups after it
                // carry their own GTIDs, so it is only worth a trace.
                let list = gtid::parse_gtid_list(event.data()).map_err(|e| self.corrupt(&e))?;
                tracing::debug!(source = %self.decl.name, ?list, "binlog GTID list");
                return Ok(Outcome::Nothing);
            }
            gtid::ANNOTATE_ROWS_EVENT | gtid::BINLOG_CHECKPOINT_EVENT => return Ok(Outcome::Nothing),
            _ => {}
        }
        let commit_time_us = Some(header.timestamp() as i64 * 1_000_000);
        match event.read_data().map_err(|e| self.corrupt(&e.to_string()))? {
            Some(EventData::TableMapEvent(tme)) => {
                let mapped = self.map_table(&tme)?;
                self.maps.insert(tme.table_id(), (tme.into_owned(), mapped));
                Ok(Outcome::Nothing)
            }
            Some(EventData::RowsEvent(rows)) => {
                self.rows(&rows)?;
                Ok(Outcome::Nothing)
            }
            Some(EventData::QueryEvent(query)) => self.query(&query.query(), &query.schema(), commit_time_us),
            Some(EventData::XidEvent(_)) => Ok(self.end(commit_time_us)),
            _ => Ok(Outcome::Nothing),
        }
    }

    fn corrupt(&self, error: &str) -> SyncError {
        SyncError::transient(format!("source {}: a binlog event does not decode: {error} (retrying)", self.decl.name))
    }

    /// A query event: a group's boundary, a TRUNCATE or ALTER of a declared table, or
    /// (a standalone group's) statement that ends its group.
    /// A followed table dropped or renamed fails the stream: what comes after is not that
    /// table's (never a silent gap or a namespace quietly left behind).
    fn query(&mut self, query: &str, schema: &str, commit_time_us: Option<i64>) -> Result<Outcome, SyncError> {
        let Some(group) = self.group.as_mut() else { return Ok(Outcome::Nothing) };
        let statement = statement::classify(query, schema);
        match &statement {
            Statement::Begin => return Ok(Outcome::Nothing),
            Statement::End => return Ok(self.end(commit_time_us)),
            Statement::Truncate(database, table) => {
                if let Some(&at) = self.by_name.get(&(database.clone(), table.clone())) {
                    group.changes.push(RowChange { table: self.tables[at].index, kind: ChangeKind::Truncate });
                }
            }
            Statement::Alter(database, table) => {
                if let Some(&at) = self.by_name.get(&(database.clone(), table.clone())) {
                    group.altered.push(self.tables[at].index);
                }
            }
            Statement::Gone(names) => {
                if let Some((database, table)) = names.iter().find(|name| self.by_name.contains_key(name)) {
                    return Err(SyncError::lost(format!(
                        "source {}: table {database}.{table} was dropped or renamed on the source ({}); \
                         declare the tables again (PUT /api/v1/sources/{}) or resync",
                        self.decl.name,
                        query.trim().chars().take(200).collect::<String>(),
                        self.decl.name
                    )));
                }
            }
            Statement::Other => {}
        }
        Ok(if group.gtid.standalone() { self.end(commit_time_us) } else { Outcome::Nothing })
    }

    /// The group ends: its transaction, or progress when it touched no declared table.
    fn end(&mut self, commit_time_us: Option<i64>) -> Outcome {
        let Some(group) = self.group.take() else { return Outcome::Nothing };
        let position = self.position.with_gtid(group.gtid.gtid);
        self.position = position.clone();
        let event = if group.changes.is_empty() {
            Event::Progress { position }
        } else {
            Event::Transaction { changes: group.changes, position, commit_time_us }
        };
        if group.altered.is_empty() { Outcome::Emit(event) } else { Outcome::RefreshThenEmit(group.altered, event) }
    }

    /// What a table map maps to: a declared table's columns by name (binlog_row_metadata
    /// = FULL gives them), kinds and key.
    fn map_table(&self, tme: &TableMapEvent<'_>) -> Result<Option<Mapped>, SyncError> {
        let name = (tme.database_name().into_owned(), tme.table_name().into_owned());
        let Some(&at) = self.by_name.get(&name) else { return Ok(None) };
        let info = &self.tables[at];
        let decl_table = &self.decl.tables[info.index];
        let bad = |what: &str| self.corrupt(&format!("the table map of {}: {what}", info.table));
        let extractor = OptionalMetaExtractor::new(tme.iter_optional_meta()).map_err(|e| bad(&e.to_string()))?;
        let names: Vec<String> = extractor
            .iter_column_name()
            .map(|n| n.map(|n| n.name().into_owned()))
            .collect::<Result<_, _>>()
            .map_err(|e| bad(&e.to_string()))?;
        if names.len() as u64 != tme.columns_count() {
            return Err(SyncError::declaration(format!(
                "source {}: the binlog's table maps carry no column names: set binlog_row_metadata = FULL on the server",
                self.decl.name
            )));
        }
        let key: Vec<String> = {
            let indexes: Vec<u64> =
                extractor.iter_primary_key().collect::<Result<_, _>>().map_err(|e| bad(&e.to_string()))?;
            let key: Vec<String> = indexes.iter().filter_map(|&i| names.get(i as usize).cloned()).collect();
            if key.is_empty() { info.key.clone() } else { key }
        };
        let (mut enums, mut sets) = enum_and_set_values(tme).map_err(|e| bad(&e))?.into_iter().fold(
            (Vec::new(), Vec::new()),
            |(mut enums, mut sets), (is_enum, values)| {
                if is_enum {
                    enums.push(values)
                } else {
                    sets.push(values)
                }
                (enums, sets)
            },
        );
        enums.reverse();
        sets.reverse();
        let mut charsets = extractor.iter_charset();
        let mut unsigned = extractor.iter_signedness();
        let mut columns = HashMap::with_capacity(names.len());
        for (i, name) in names.iter().enumerate() {
            let column_type = tme
                .get_column_type(i)
                .map_err(|e| bad(&e.to_string()))?
                .ok_or_else(|| bad("a column without a type"))?;
            let is_unsigned = if column_type.is_numeric_type() { unsigned.next().unwrap_or(false) } else { false };
            let charset = if column_type.is_character_type() {
                charsets.next().transpose().map_err(|e| bad(&e.to_string()))?
            } else {
                None
            };
            let declared = info.columns.iter().find(|c| &c.name == name).map(|c| c.type_name.as_str());
            let kind = match column_type {
                ColumnType::MYSQL_TYPE_ENUM => ValueKind::Enum(enums.pop().unwrap_or_default()),
                ColumnType::MYSQL_TYPE_SET => ValueKind::Set(sets.pop().unwrap_or_default()),
                ColumnType::MYSQL_TYPE_INT24 if !is_unsigned => ValueKind::SignedMediumInt,
                _ => binlog_kind(column_type, tme.get_column_metadata(i).unwrap_or(&[]), charset, declared),
            };
            columns.insert(name.clone(), (kind, super::is_selected(decl_table, &key, name)));
        }
        Ok(Some(Mapped { table: info.index, columns, key }))
    }

    /// A row event of a declared table: its rows as changes of the open group.
    fn rows(&mut self, rows: &RowsEventData<'_>) -> Result<(), SyncError> {
        let Some((tme, Some(mapped))) = self.maps.get(&rows.table_id()) else { return Ok(()) };
        let Some(group) = self.group.as_mut() else {
            tracing::warn!(source = %self.decl.name, "a row event outside an event group; ignored");
            return Ok(());
        };
        let decl = self.decl;
        let bad = |e: String| {
            SyncError::transient(format!("source {}: a row event does not decode: {e} (retrying)", decl.name))
        };
        for pair in rows.rows(tme) {
            let (before, after) = pair.map_err(|e| bad(e.to_string()))?;
            let before = before.map(|row| document(decl, mapped, row)).transpose()?;
            let after = after.map(|row| document(decl, mapped, row)).transpose()?;
            let kind = match (rows, before, after) {
                (RowsEventData::WriteRowsEvent(_) | RowsEventData::WriteRowsEventV1(_), _, Some(row)) => {
                    ChangeKind::Insert(row)
                }
                (RowsEventData::DeleteRowsEvent(_) | RowsEventData::DeleteRowsEventV1(_), Some(row), _) => {
                    ChangeKind::Delete(key_of(&row, &mapped.key))
                }
                (_, Some(before), Some(after)) => {
                    let old_key = key_of(&before, &mapped.key);
                    let changed = old_key != key_of(&after, &mapped.key);
                    ChangeKind::Update { old_key: changed.then_some(old_key), row: after, unchanged: Vec::new() }
                }
                _ => return Err(bad("a row change without the image it needs (is binlog_row_image FULL?)".into())),
            };
            group.changes.push(RowChange { table: mapped.table, kind });
        }
        Ok(())
    }
}

/// A row image as a document: the selected columns, by the names the table map gives.
fn document(decl: &Declaration, mapped: &Mapped, row: BinlogRow) -> Result<Row, SyncError> {
    let columns = row.columns();
    let values = row.unwrap();
    let mut document = Row::new();
    for (column, value) in columns.iter().zip(values) {
        let name = column.name_str();
        let Some((kind, true)) = mapped.columns.get(name.as_ref()) else { continue };
        let json = binlog_to_json(value, kind, &decl.options).map_err(|error| {
            SyncError::declaration(format!("source {}: column {name}: a binlog value does not map: {error}", decl.name))
        })?;
        document.insert(name.into_owned(), json);
    }
    Ok(document)
}

fn key_of(row: &Row, key: &[String]) -> Row {
    key.iter().filter_map(|name| row.get(name).map(|value| (name.clone(), value.clone()))).collect()
}

/// The ENUM and SET value lists of a table map, in column order (`true`: an ENUM).
fn enum_and_set_values(tme: &TableMapEvent<'_>) -> Result<Vec<(bool, Vec<String>)>, String> {
    let mut enums = Vec::new();
    let mut sets = Vec::new();
    for field in tme.iter_optional_meta() {
        match field.map_err(|e| e.to_string())? {
            OptionalMetadataField::EnumStrValue(values) => {
                for column in values.iter_values() {
                    let column = column.map_err(|e| e.to_string())?;
                    enums.push(column.values().iter().map(|v| v.value().into_owned()).collect::<Vec<_>>());
                }
            }
            OptionalMetadataField::SetStrValue(values) => {
                for column in values.iter_values() {
                    let column = column.map_err(|e| e.to_string())?;
                    sets.push(column.values().iter().map(|v| v.value().into_owned()).collect::<Vec<_>>());
                }
            }
            _ => {}
        }
    }
    // Order them back by column: ENUMs and SETs each come in column order.
    let mut ordered = Vec::new();
    let (mut enums, mut sets) = (enums.into_iter(), sets.into_iter());
    for i in 0..tme.columns_count() as usize {
        match tme.get_column_type(i) {
            Ok(Some(ColumnType::MYSQL_TYPE_ENUM)) => ordered.push((true, enums.next().unwrap_or_default())),
            Ok(Some(ColumnType::MYSQL_TYPE_SET)) => ordered.push((false, sets.next().unwrap_or_default())),
            _ => {}
        }
    }
    Ok(ordered)
}

/// Latin1 collations (the binlog holds such text in latin1).
const LATIN1_COLLATIONS: [u16; 8] = [5, 8, 15, 31, 47, 48, 49, 94];
/// The binary pseudo-charset: bytes, not text.
const BINARY_CHARSET: u16 = 63;

/// A column's kind from its table map type, metadata and character set; JSON and UUID
/// columns are known by their declared type (`json`, `uuid`) as read from the source.
fn binlog_kind(column_type: ColumnType, metadata: &[u8], charset: Option<u16>, declared: Option<&str>) -> ValueKind {
    use ColumnType::*;
    match declared.map(|d| d.to_ascii_lowercase()) {
        Some(d) if d == "json" => return ValueKind::Json,
        Some(d) if d == "uuid" => return ValueKind::Uuid,
        _ => {}
    }
    match column_type {
        MYSQL_TYPE_TINY | MYSQL_TYPE_SHORT | MYSQL_TYPE_INT24 | MYSQL_TYPE_LONG | MYSQL_TYPE_LONGLONG => {
            ValueKind::Integer
        }
        MYSQL_TYPE_NEWDECIMAL | MYSQL_TYPE_DECIMAL => ValueKind::Decimal,
        MYSQL_TYPE_FLOAT => ValueKind::Float,
        MYSQL_TYPE_DOUBLE => ValueKind::Double,
        MYSQL_TYPE_YEAR => ValueKind::Year,
        MYSQL_TYPE_BIT => ValueKind::Bit,
        MYSQL_TYPE_DATE | MYSQL_TYPE_NEWDATE => ValueKind::Date,
        MYSQL_TYPE_TIME | MYSQL_TYPE_TIME2 => ValueKind::Time,
        MYSQL_TYPE_DATETIME | MYSQL_TYPE_DATETIME2 => ValueKind::DateTime,
        MYSQL_TYPE_TIMESTAMP | MYSQL_TYPE_TIMESTAMP2 => ValueKind::Timestamp,
        MYSQL_TYPE_JSON => ValueKind::Json,
        MYSQL_TYPE_GEOMETRY => ValueKind::Binary { fixed_bytes: None },
        _ if charset == Some(BINARY_CHARSET) => {
            let fixed_bytes = (column_type == MYSQL_TYPE_STRING).then(|| string_length(metadata));
            ValueKind::Binary { fixed_bytes }
        }
        _ => ValueKind::Text { latin1: charset.is_some_and(|c| LATIN1_COLLATIONS.contains(&c)) },
    }
}

/// The byte length of a CHAR/BINARY column from its two metadata bytes (the real type's
/// spare bits carry the length's high bits for lengths past 255).
fn string_length(metadata: &[u8]) -> usize {
    let (Some(&first), Some(&second)) = (metadata.first(), metadata.get(1)) else { return 0 };
    let (first, second) = (first as usize, second as usize);
    if first & 0x30 != 0x30 { second | (((first & 0x30) ^ 0x30) << 4) } else { second }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_from_table_maps() {
        use ColumnType::*;
        assert_eq!(
            binlog_kind(MYSQL_TYPE_STRING, &[0xfe, 4], Some(63), Some("binary(4)")),
            ValueKind::Binary { fixed_bytes: Some(4) }
        );
        assert_eq!(binlog_kind(MYSQL_TYPE_STRING, &[0xfe, 16], Some(63), Some("uuid")), ValueKind::Uuid);
        assert_eq!(binlog_kind(MYSQL_TYPE_BLOB, &[4], Some(45), Some("json")), ValueKind::Json);
        assert_eq!(binlog_kind(MYSQL_TYPE_BLOB, &[2], Some(63), None), ValueKind::Binary { fixed_bytes: None });
        assert_eq!(binlog_kind(MYSQL_TYPE_VARCHAR, &[80, 0], Some(8), None), ValueKind::Text { latin1: true });
        assert_eq!(binlog_kind(MYSQL_TYPE_VARCHAR, &[80, 0], Some(45), None), ValueKind::Text { latin1: false });
        assert_eq!(string_length(&[0xfe, 4]), 4);
        // CHAR(100) in utf8mb4: 400 bytes, the high bits in the type byte.
        assert_eq!(string_length(&[0xee, 0x90]), 400);
    }
}
