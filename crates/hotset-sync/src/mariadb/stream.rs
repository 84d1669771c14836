//! The binlog stream of a MariaDB source, read as a replica from a GTID position: the
//! connection's replica variables (`@mariadb_slave_capability`, `@slave_connect_state`,
//! a heartbeat period), COM_BINLOG_DUMP with an empty file name (MariaDB then starts from
//! the GTID state), and the decoded events handed to the runner.
//!
//! Owns: `stream`. Never: block on `acked` (MariaDB keeps its binlog by its own retention,
//! there is nothing to acknowledge), or return other than with an error (a silent
//! connection counts as one after `SILENCE_MAX`).

use super::connect::{classify, connect, literal};
use super::copy::send;
use super::decode::{Decoder, Outcome};
use super::inspect::read_table;
use crate::position::Position;
use crate::source::{Declaration, Event, SyncError, TableInfo};
use futures_util::StreamExt;
use mysql_async::prelude::Queryable;
use mysql_async::{BinlogStreamRequest, Conn};
use std::time::Duration;
use tokio::sync::mpsc::Sender;
use tokio::sync::watch;

/// How often an idle source sends a heartbeat.
const HEARTBEAT_PERIOD: Duration = Duration::from_secs(1);
/// How long the stream may stay silent (no event, no heartbeat) before the connection is
/// taken for dead and the stream fails (transient: the runner reconnects).
const SILENCE_MAX: Duration = Duration::from_secs(10);
/// MariaDB's replica capability that understands GTIDs (MARIA_SLAVE_CAPABILITY_GTID).
const SLAVE_CAPABILITY_GTID: u32 = 4;

/// Streams every group after `from` (see `source`'s contract); returns only with an error.
pub async fn stream(
    decl: &Declaration,
    tables: &[TableInfo],
    from: Position,
    events: &Sender<Event>,
    acked: watch::Receiver<Option<Position>>,
) -> Result<(), SyncError> {
    // Nothing to acknowledge on MariaDB; the receiver is only kept alive.
    let _acked = acked;
    let Position::Gtid(_) = &from else {
        return Err(SyncError::declaration(format!(
            "source {}: a MariaDB stream resumes from a GTID position (0-1-42), not {from}",
            decl.name
        )));
    };
    let mut conn = connect(decl).await?;
    let setup = format!(
        "SET @mariadb_slave_capability = {SLAVE_CAPABILITY_GTID}, @slave_connect_state = {}, \
         @slave_gtid_strict_mode = 1, @slave_gtid_ignore_duplicates = 0, @master_heartbeat_period = {}",
        literal(&from.to_string()),
        HEARTBEAT_PERIOD.as_nanos()
    );
    conn.query_drop(setup).await.map_err(|e| classify(decl, "preparing the binlog dump", &e))?;
    // mysql_async sets @master_binlog_checksum itself (to 'ALL': events carry the server's
    // CRC32, which mysql_common cuts off as the format description event says, without
    // checking it; TCP's own checksums stand guard) and registers the replica first.
    let request = BinlogStreamRequest::new(super::server_id(&decl.name));
    let mut binlog =
        conn.get_binlog_stream(request).await.map_err(|e| classify(decl, "starting the binlog dump", &e))?;
    let mut decoder = Decoder::new(decl, tables.to_vec(), from);
    let mut schema: Option<Conn> = None;
    loop {
        let event = match tokio::time::timeout(SILENCE_MAX, binlog.next()).await {
            Err(_) => {
                return Err(SyncError::transient(format!(
                    "source {}: no binlog event nor heartbeat for {SILENCE_MAX:?}: the connection is taken for dead (retrying)",
                    decl.name
                )));
            }
            Ok(None) => {
                return Err(SyncError::transient(format!(
                    "source {}: the source ended the binlog stream (retrying)",
                    decl.name
                )));
            }
            Ok(Some(Err(error))) => return Err(classify(decl, "reading the binlog", &error)),
            Ok(Some(Ok(event))) => event,
        };
        match decoder.on_event(&event)? {
            Outcome::Nothing => {}
            Outcome::Emit(event) => send(decl, events, event).await?,
            Outcome::RefreshThenEmit(altered, event) => {
                refresh(decl, &mut schema, &mut decoder, &altered).await?;
                send(decl, events, event).await?;
            }
        }
    }
}

/// Reads altered tables' columns again (their JSON and UUID columns, by name). The read
/// is of the table as it is now, which may be past the binlog's position; a table since
/// dropped keeps what was known.
async fn refresh(
    decl: &Declaration,
    schema: &mut Option<Conn>,
    decoder: &mut Decoder<'_>,
    altered: &[usize],
) -> Result<(), SyncError> {
    if schema.is_none() {
        *schema = Some(connect(decl).await?);
    }
    let conn = schema.as_mut().expect("connected just above");
    for &index in altered {
        match read_table(decl, conn, index).await {
            Ok(info) => decoder.replace_table(info),
            Err(error) => {
                tracing::warn!(source = %decl.name, table = index, %error, "an altered table's columns could not be read again")
            }
        }
    }
    Ok(())
}
