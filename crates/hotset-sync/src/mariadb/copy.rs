//! The initial copy from MariaDB: one transaction `WITH CONSISTENT SNAPSHOT`, the binlog
//! position that snapshot stands at (`binlog_snapshot_file/position`, as a GTID list by
//! `BINLOG_GTID_POS`), and each listed table's rows streamed in batches.
//!
//! Owns: `copy`. Never: collect a table in memory (rows go out as they arrive, at most
//! `COPY_BATCH_ROWS` held), or keep the transaction open after the last row (DDL on the
//! source waits for it).

use super::connect::{classify, connect, identifier};
use super::inspect::qualified_name;
use super::value::{ValueKind, to_json};
use crate::position::Position;
use crate::source::{Declaration, DocumentWriter, Event, SyncError, TableInfo};
use futures_util::StreamExt;
use mysql_async::Conn;
use mysql_async::prelude::Queryable;
use tokio::sync::mpsc::Sender;

/// Rows per `Event::Rows`.
pub(crate) const COPY_BATCH_ROWS: usize = 4096;

/// Copies the tables `which` (declaration indexes) in one consistent snapshot and returns
/// the position of that snapshot: the stream from it has every later change, none before.
pub async fn copy(
    decl: &Declaration,
    tables: &[TableInfo],
    which: &[usize],
    events: &Sender<Event>,
) -> Result<Position, SyncError> {
    let mut conn = connect(decl).await?;
    let failed = |e: mysql_async::Error| classify(decl, "starting the copy's snapshot", &e);
    conn.query_drop("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ").await.map_err(failed)?;
    conn.query_drop("START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY").await.map_err(failed)?;
    let position = snapshot_position(decl, &mut conn).await?;
    let point = Event::CopyPoint { position: position.clone() };
    events.send(point).await.map_err(|_| SyncError::transient(format!("source {}: the sync stopped", decl.name)))?;
    for &index in which {
        let info = tables.iter().find(|t| t.index == index).unwrap_or_else(|| {
            panic!("copy of table {index}, which inspect did not return: the runner passes inspect's tables")
        });
        copy_table(decl, &mut conn, info, events).await?;
    }
    conn.query_drop("COMMIT").await.map_err(|e| classify(decl, "ending the copy", &e))?;
    let _ = conn.disconnect().await;
    Ok(position)
}

/// The snapshot's binlog position as a GTID list (empty: before any transaction).
async fn snapshot_position(decl: &Declaration, conn: &mut Conn) -> Result<Position, SyncError> {
    let failed = |e: mysql_async::Error| classify(decl, "reading the snapshot's binlog position", &e);
    let status: Vec<(String, String)> = conn.query("SHOW STATUS LIKE 'binlog_snapshot_%'").await.map_err(failed)?;
    let value = |name: &str| status.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.clone());
    let (Some(file), Some(offset)) = (value("binlog_snapshot_file"), value("binlog_snapshot_position")) else {
        return Err(SyncError::declaration(format!(
            "source {}: the server reports no binlog snapshot position: is log_bin on?",
            decl.name
        )));
    };
    let gtid: Option<Option<String>> =
        conn.exec_first("SELECT BINLOG_GTID_POS(?, ?)", (&file, &offset)).await.map_err(failed)?;
    let text = gtid.flatten().ok_or_else(|| {
        SyncError::transient(format!(
            "source {}: BINLOG_GTID_POS({file}, {offset}) is NULL: the binlog rotated under the copy (retrying)",
            decl.name
        ))
    })?;
    Position::parse(&text).filter(|p| matches!(p, Position::Gtid(_))).ok_or_else(|| {
        SyncError::transient(format!("source {}: the snapshot's GTID position {text:?} does not read", decl.name))
    })
}

/// Streams one table's selected columns as `CopyStart`, `Rows`..., `CopyDone`.
async fn copy_table(
    decl: &Declaration,
    conn: &mut Conn,
    info: &TableInfo,
    events: &Sender<Event>,
) -> Result<(), SyncError> {
    let table = info.index;
    let columns = super::selected_columns(&decl.tables[table], info);
    let kinds: Vec<ValueKind> = columns.iter().map(|c| ValueKind::from_column_type(&c.type_name)).collect();
    let names: Vec<String> = columns.iter().map(|c| c.name.clone()).collect();
    let (database, name) = qualified_name(decl, table)?;
    let list: Vec<String> = names.iter().map(|n| identifier(n)).collect();
    let sql = format!("SELECT {} FROM {}.{}", list.join(", "), identifier(&database), identifier(&name));
    send(decl, events, Event::CopyStart { table, estimated_rows: info.estimated_rows }).await?;
    let failed = |e: mysql_async::Error| classify(decl, &format!("copying {}", info.table), &e);
    // The binary protocol (a prepared statement) gives typed values: FLOAT and DOUBLE as
    // the numbers the binlog holds, not the server's rounded text.
    let mut result = conn.exec_iter(sql.as_str(), ()).await.map_err(failed)?;
    let mut stream = result.stream::<mysql_async::Row>().await.map_err(failed)?;
    let mut batch = Vec::with_capacity(COPY_BATCH_ROWS);
    let mut writer = DocumentWriter::new(names.iter().map(String::as_str));
    if let Some(stream) = stream.as_mut() {
        while let Some(row) = stream.next().await {
            let values = row.map_err(failed)?.unwrap();
            assert_eq!(values.len(), names.len(), "a row has the columns selected");
            for ((value, kind), name) in values.into_iter().zip(&kinds).zip(&names) {
                let json = to_json(value, kind, &decl.options).map_err(|error| {
                    SyncError::declaration(format!(
                        "source {}: table {} column {name}: a value does not map: {error}",
                        decl.name, info.table
                    ))
                })?;
                serde_json::to_writer(writer.field(), &json).expect("writing JSON to memory");
            }
            let document = writer.finish();
            batch.push(document);
            if batch.len() == COPY_BATCH_ROWS {
                let rows = std::mem::replace(&mut batch, Vec::with_capacity(COPY_BATCH_ROWS));
                send(decl, events, Event::Rows { table, docs: rows }).await?;
            }
        }
    }
    drop(stream);
    drop(result);
    if !batch.is_empty() {
        send(decl, events, Event::Rows { table, docs: batch }).await?;
    }
    send(decl, events, Event::CopyDone { table }).await
}

pub(crate) async fn send(decl: &Declaration, events: &Sender<Event>, event: Event) -> Result<(), SyncError> {
    events
        .send(event)
        .await
        .map_err(|_| SyncError::transient(format!("source {}: the runner stopped taking events", decl.name)))
}
