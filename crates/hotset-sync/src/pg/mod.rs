//! The PostgreSQL driver: a publication and a logical replication slot (pgoutput) that
//! Hotset creates, the initial copy read through the snapshot the slot exports, then the
//! stream from the slot's consistent point.
//!
//! Owns: the control connection (`tokio-postgres`: checks, the publication, `COPY`), the
//! replication connection (`pgwire-replication`: creating slots, `START_REPLICATION`,
//! acknowledging), turning pgoutput messages into `Event`s. Never: acknowledge a position
//! to the slot that the runner has not said is durable (`acked`), or keep the copy's
//! snapshot transaction open longer than the copy.

pub mod pgoutput;
pub mod value;

use crate::position::Position;
use crate::source::{
    ChangeKind, Column, Declaration, Document, DocumentWriter, Event, Row, RowChange, SyncError, TableInfo,
};
use futures_util::StreamExt;
use pgoutput::{Datum, Message, Relation};
use pgwire_replication::{Lsn, ReplicationClient, ReplicationConfig, ReplicationEvent};
use std::collections::HashMap;
use std::str::FromStr;
use std::time::Duration;
use tokio::sync::{mpsc, watch};
use tokio_postgres::config::Host;
use value::Shape;

/// Rows per `Event::Rows` of the copy.
const COPY_BATCH: usize = 4096;
/// Session settings whose text forms `value` reads.
const SESSION: &str =
    "SET TimeZone = 'UTC'; SET DateStyle = 'ISO'; SET extra_float_digits = 3; SET bytea_output = 'hex'";
/// The same, as startup options of the replication connection (pgoutput's text values
/// are printed in the walsender's session).
const STARTUP_OPTIONS: &str = "-c TimeZone=UTC -c DateStyle=ISO -c extra_float_digits=3 -c bytea_output=hex";
/// Microseconds from the Unix epoch to PostgreSQL's (2000-01-01).
const PG_EPOCH_MICROS: i64 = 946_684_800_000_000;

/// Where and as whom to connect.
struct Endpoint {
    config: tokio_postgres::Config,
    host: String,
    port: u16,
    user: String,
    password: String,
    database: String,
}

fn endpoint(decl: &Declaration) -> Result<Endpoint, SyncError> {
    let url = decl.url.replacen("postgresql://", "postgres://", 1);
    let mut config = tokio_postgres::Config::from_str(&url)
        .map_err(|e| SyncError::declaration(format!("source {}: the url does not parse: {e}", decl.name)))?;
    config.connect_timeout(Duration::from_secs(10));
    config.application_name("hotset");
    let host = match config.get_hosts().first() {
        Some(Host::Tcp(host)) => host.clone(),
        Some(Host::Unix(path)) => path.display().to_string(),
        None => "localhost".to_string(),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let user = config.get_user().unwrap_or("postgres").to_string();
    let password = config.get_password().map(|p| String::from_utf8_lossy(p).into_owned()).unwrap_or_default();
    let database = config.get_dbname().unwrap_or(&user).to_string();
    Ok(Endpoint { config, host, port, user, password, database })
}

/// The slot's and the publication's names.
pub fn slot_name(decl: &Declaration) -> String {
    decl.options.slot.clone().unwrap_or_else(|| format!("hotset_{}", decl.name.to_ascii_lowercase().replace('-', "_")))
}

fn publication_name(decl: &Declaration) -> String {
    decl.options.publication.clone().unwrap_or_else(|| slot_name(decl))
}

/// A failure of the control connection, by what it means.
fn classify(decl: &Declaration, what: &str, error: tokio_postgres::Error) -> SyncError {
    use tokio_postgres::error::SqlState;
    let message = match error.as_db_error() {
        Some(db) => format!("source {}: {what}: {} ({})", decl.name, db.message(), db.code().code()),
        None => format!("source {}: {what}: {error}", decl.name),
    };
    match error.code() {
        Some(code)
            if *code == SqlState::INVALID_PASSWORD
                || *code == SqlState::INVALID_AUTHORIZATION_SPECIFICATION
                || *code == SqlState::INVALID_CATALOG_NAME
                || *code == SqlState::INSUFFICIENT_PRIVILEGE =>
        {
            SyncError::declaration(message)
        }
        _ => SyncError::transient(message),
    }
}

async fn connect(decl: &Declaration, endpoint: &Endpoint) -> Result<tokio_postgres::Client, SyncError> {
    let (client, connection) =
        endpoint.config.connect(tokio_postgres::NoTls).await.map_err(|e| classify(decl, "cannot connect", e))?;
    tokio::spawn(async move {
        // Ends when the client is dropped or the server goes away; the client's calls
        // report the latter.
        let _ = connection.await;
    });
    client.batch_execute(SESSION).await.map_err(|e| classify(decl, "session settings", e))?;
    Ok(client)
}

fn quote(ident: &str) -> String {
    format!("\"{}\"", ident.replace('"', "\"\""))
}

/// A declared table as the catalog describes it.
struct PgTable {
    schema: String,
    name: String,
    /// Every column: name, type OID, type name.
    columns: Vec<(String, u32, String)>,
    key: Vec<String>,
    estimated_rows: u64,
}

impl PgTable {
    fn qualified(&self) -> String {
        format!("{}.{}", quote(&self.schema), quote(&self.name))
    }
}

fn split_table(table: &str) -> (String, String) {
    match table.split_once('.') {
        Some((schema, name)) => (schema.to_string(), name.to_string()),
        None => ("public".to_string(), table.to_string()),
    }
}

async fn describe(decl: &Declaration, client: &tokio_postgres::Client, index: usize) -> Result<PgTable, SyncError> {
    let declared = &decl.tables[index];
    let (schema, name) = split_table(&declared.table);
    let fail = |e| classify(decl, &format!("reading table {}", declared.table), e);
    let rows = client
        .query(
            "SELECT c.oid, greatest(c.reltuples, 0)::int8, c.relreplident::text FROM pg_class c \
             JOIN pg_namespace n ON n.oid = c.relnamespace \
             WHERE n.nspname = $1 AND c.relname = $2 AND c.relkind IN ('r', 'p')",
            &[&schema, &name],
        )
        .await
        .map_err(fail)?;
    let Some(row) = rows.first() else {
        return Err(SyncError::declaration(format!(
            "source {}: table {schema}.{name} does not exist (or this user cannot see it)",
            decl.name
        )));
    };
    let oid: u32 = row.get(0);
    let estimated_rows = row.get::<_, i64>(1).max(0) as u64;
    let identity: String = row.get(2);
    let columns: Vec<(String, u32, String)> = client
        .query(
            "SELECT attname::text, atttypid, format_type(atttypid, atttypmod) FROM pg_attribute \
             WHERE attrelid = $1 AND attnum > 0 AND NOT attisdropped ORDER BY attnum",
            &[&oid],
        )
        .await
        .map_err(fail)?
        .iter()
        .map(|row| (row.get(0), row.get(1), row.get(2)))
        .collect();
    let mut key: Vec<String> = client
        .query(
            "SELECT a.attname::text FROM pg_index i \
             CROSS JOIN LATERAL unnest(i.indkey::int2[]) WITH ORDINALITY AS k(attnum, ord) \
             JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum \
             WHERE i.indrelid = $1 AND i.indisprimary ORDER BY k.ord",
            &[&oid],
        )
        .await
        .map_err(fail)?
        .iter()
        .map(|row| row.get(0))
        .collect();
    if let Some(wanted) = &declared.columns {
        let unknown: Vec<&String> = wanted.iter().filter(|c| !columns.iter().any(|(name, ..)| name == *c)).collect();
        if !unknown.is_empty() {
            return Err(SyncError::declaration(format!(
                "source {}: table {schema}.{name} has no column {}",
                decl.name,
                unknown.iter().map(|c| format!("{c:?}")).collect::<Vec<_>>().join(", ")
            )));
        }
    }
    if key.is_empty() {
        if !declared.full_row_identity {
            return Err(SyncError::declaration(format!(
                "source {}: table {schema}.{name} has no primary key; add one, or set \
                 full_row_identity = true to key its documents by the whole row",
                decl.name
            )));
        }
        if identity != "f" {
            return Err(SyncError::declaration(format!(
                "source {}: table {schema}.{name} has no primary key and full_row_identity needs \
                 its whole row in the log: run ALTER TABLE {schema}.{name} REPLICA IDENTITY FULL",
                decl.name
            )));
        }
        key = copied_columns(declared.columns.as_deref(), &columns, &[]);
    }
    Ok(PgTable { schema, name, columns, key, estimated_rows })
}

/// The columns copied into documents: the declared ones (every one by default) and the key's.
fn copied_columns(declared: Option<&[String]>, columns: &[(String, u32, String)], key: &[String]) -> Vec<String> {
    columns
        .iter()
        .map(|(name, ..)| name)
        .filter(|name| declared.is_none_or(|d| d.contains(name)) || key.contains(name))
        .cloned()
        .collect()
}

/// Checks the source and reads the declared tables (see `source`); changes nothing.
pub async fn inspect(decl: &Declaration) -> Result<Vec<TableInfo>, SyncError> {
    let endpoint = endpoint(decl)?;
    let client = connect(decl, &endpoint).await?;
    let level: String =
        client.query_one("SHOW wal_level", &[]).await.map_err(|e| classify(decl, "reading wal_level", e))?.get(0);
    if level != "logical" {
        return Err(SyncError::declaration(format!(
            "source {}: wal_level is {level:?}, live sync needs \"logical\": set wal_level = logical \
             in postgresql.conf and restart PostgreSQL",
            decl.name
        )));
    }
    let replicates: bool = client
        .query_one("SELECT rolreplication OR rolsuper FROM pg_roles WHERE rolname = current_user", &[])
        .await
        .map_err(|e| classify(decl, "reading the role", e))?
        .get(0);
    if !replicates {
        return Err(SyncError::declaration(format!(
            "source {}: user {} may not replicate: ALTER ROLE {} REPLICATION",
            decl.name, endpoint.user, endpoint.user
        )));
    }
    let mut tables = Vec::with_capacity(decl.tables.len());
    for index in 0..decl.tables.len() {
        let table = describe(decl, &client, index).await?;
        tables.push(TableInfo {
            index,
            table: format!("{}.{}", table.schema, table.name),
            key: table.key.clone(),
            columns: table
                .columns
                .iter()
                .map(|(name, _, ty)| Column { name: name.clone(), type_name: ty.clone() })
                .collect(),
            estimated_rows: table.estimated_rows,
        });
    }
    Ok(tables)
}

/// The primary key index's field type for each key column of a table.
pub async fn key_types(decl: &Declaration, index: usize) -> Result<Vec<hotset_core::FieldType>, SyncError> {
    let endpoint = endpoint(decl)?;
    let client = connect(decl, &endpoint).await?;
    let table = describe(decl, &client, index).await?;
    Ok(table
        .key
        .iter()
        .map(|key| {
            table
                .columns
                .iter()
                .find(|(name, ..)| name == key)
                .map_or(hotset_core::FieldType::String, |c| value::key_type(c.1))
        })
        .collect())
}

fn replication_config(endpoint: &Endpoint, decl: &Declaration) -> ReplicationConfig {
    ReplicationConfig::new(
        endpoint.host.clone(),
        endpoint.user.clone(),
        endpoint.password.clone(),
        endpoint.database.clone(),
        slot_name(decl),
        publication_name(decl),
    )
    .with_port(endpoint.port)
    .with_options(STARTUP_OPTIONS)
    .with_application_name("hotset")
    .with_status_interval(Duration::from_secs(1))
}

fn replication_error(decl: &Declaration, what: &str, error: pgwire_replication::PgWireError) -> SyncError {
    let text = format!("source {}: {what}: {error}", decl.name);
    if error.is_auth() {
        SyncError::declaration(text)
    } else if text.contains("replication slot") && text.contains("does not exist") {
        SyncError::lost(format!(
            "{text}; the slot is gone, so changes since Hotset's position may be lost: resync the source"
        ))
    } else if error.is_server() && text.contains("permission denied") {
        SyncError::declaration(text)
    } else {
        SyncError::transient(text)
    }
}

/// A consistent copy of the tables `which` (see `source`). `fresh`: drop the source's slot
/// if it exists and create it again, its consistent point the position returned (a first
/// copy, a resync); otherwise, when the slot exists, the copy reads a temporary slot's
/// snapshot and returns that slot's point (tables copied later than the stream's start).
pub async fn copy(
    decl: &Declaration,
    which: &[usize],
    events: &mpsc::Sender<Event>,
    fresh: bool,
) -> Result<Position, SyncError> {
    let endpoint = endpoint(decl)?;
    let client = connect(decl, &endpoint).await?;
    let mut tables = Vec::new();
    for index in 0..decl.tables.len() {
        tables.push(describe(decl, &client, index).await?);
    }
    publish(decl, &client, &tables).await?;
    let slot = slot_name(decl);
    let exists = !client
        .query("SELECT 1 FROM pg_replication_slots WHERE slot_name = $1", &[&slot])
        .await
        .map_err(|e| classify(decl, "reading replication slots", e))?
        .is_empty();
    if exists && fresh {
        client
            .execute("SELECT pg_drop_replication_slot($1)", &[&slot])
            .await
            .map_err(|e| classify(decl, "dropping the old replication slot", e))?;
    }
    let mut session = ReplicationClient::connect_gated(replication_config(&endpoint, decl))
        .await
        .map_err(|e| replication_error(decl, "replication connection", e))?;
    let create = if !exists || fresh {
        format!("CREATE_REPLICATION_SLOT {} LOGICAL pgoutput EXPORT_SNAPSHOT", quote(&slot))
    } else {
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        format!(
            "CREATE_REPLICATION_SLOT {} TEMPORARY LOGICAL pgoutput EXPORT_SNAPSHOT",
            quote(&format!("{slot}_copy_{nanos}"))
        )
    };
    let rows =
        session.simple_query(&create).await.map_err(|e| replication_error(decl, "creating a replication slot", e))?;
    let field = |i: usize| -> Result<String, SyncError> {
        rows.first()
            .and_then(|row| row.get(i).cloned().flatten())
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .ok_or_else(|| {
                SyncError::transient(format!("source {}: CREATE_REPLICATION_SLOT answered no {i}th field", decl.name))
            })
    };
    let point = field(1)?;
    let snapshot = field(2)?;
    let position = Position::parse(&point).ok_or_else(|| {
        SyncError::transient(format!("source {}: a consistent point that does not parse: {point}", decl.name))
    })?;
    client
        .batch_execute(&format!(
            "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; SET TRANSACTION SNAPSHOT '{snapshot}'"
        ))
        .await
        .map_err(|e| classify(decl, "opening the copy's snapshot", e))?;
    let closed = || SyncError::transient(format!("source {}: the sync stopped", decl.name));
    events.send(Event::CopyPoint { position: position.clone() }).await.map_err(|_| closed())?;
    for &index in which {
        copy_table(decl, &client, &tables[index], index, events).await?;
    }
    client.batch_execute("COMMIT").await.map_err(|e| classify(decl, "ending the copy", e))?;
    // The exported snapshot (and a temporary slot) lives as long as this session: ended by
    // dropping it (a gated session that never started has nothing to shut down).
    drop(session);
    Ok(position)
}

/// Creates the publication of every declared table, or sets its tables to them.
async fn publish(decl: &Declaration, client: &tokio_postgres::Client, tables: &[PgTable]) -> Result<(), SyncError> {
    let name = publication_name(decl);
    let list = tables.iter().map(PgTable::qualified).collect::<Vec<_>>().join(", ");
    let exists = !client
        .query("SELECT 1 FROM pg_publication WHERE pubname = $1", &[&name])
        .await
        .map_err(|e| classify(decl, "reading publications", e))?
        .is_empty();
    let sql = if exists {
        format!("ALTER PUBLICATION {} SET TABLE {list}", quote(&name))
    } else {
        format!("CREATE PUBLICATION {} FOR TABLE {list}", quote(&name))
    };
    client
        .batch_execute(&sql)
        .await
        .map_err(|e| classify(decl, "creating the publication (the user must own the tables)", e))
}

async fn copy_table(
    decl: &Declaration,
    client: &tokio_postgres::Client,
    table: &PgTable,
    index: usize,
    events: &mpsc::Sender<Event>,
) -> Result<(), SyncError> {
    let closed = || SyncError::transient("the sync stopped");
    let names = copied_columns(decl.tables[index].columns.as_deref(), &table.columns, &table.key);
    let shapes: Vec<(String, Shape, bool)> = names
        .iter()
        .map(|name| {
            let oid = table.columns.iter().find(|c| &c.0 == name).map_or(25, |c| c.1);
            (name.clone(), value::shape(oid), table.key.contains(name))
        })
        .collect();
    events.send(Event::CopyStart { table: index, estimated_rows: table.estimated_rows }).await.map_err(|_| closed())?;
    let select = names.iter().map(|n| quote(n)).collect::<Vec<_>>().join(", ");
    let sql = format!("COPY (SELECT {select} FROM {}) TO STDOUT", table.qualified());
    let stream = client.copy_out(sql.as_str()).await.map_err(|e| classify(decl, "copying", e))?;
    let mut stream = std::pin::pin!(stream);
    let mut pending: Vec<u8> = Vec::new();
    let mut docs: Vec<Document> = Vec::with_capacity(COPY_BATCH);
    let mut writer = DocumentWriter::new(shapes.iter().map(|(name, _, _)| name.as_str()));
    let options = &decl.options;
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| classify(decl, "copying", e))?;
        pending.extend_from_slice(&chunk);
        let mut start = 0;
        while let Some(end) = pending[start..].iter().position(|&b| b == b'\n') {
            let line = &pending[start..start + end];
            start += end + 1;
            let mut fields = value::copy_fields(line);
            for (_, shape, key) in &shapes {
                let out = writer.field();
                match fields.next().flatten() {
                    Some(text) => value::write_json(out, &text, *shape, options, *key),
                    None => out.extend_from_slice(b"null"),
                }
            }
            docs.push(writer.finish());
            if docs.len() == COPY_BATCH {
                let batch = std::mem::replace(&mut docs, Vec::with_capacity(COPY_BATCH));
                events.send(Event::Rows { table: index, docs: batch }).await.map_err(|_| closed())?;
            }
        }
        pending.drain(..start);
    }
    if !docs.is_empty() {
        events.send(Event::Rows { table: index, docs }).await.map_err(|_| closed())?;
    }
    events.send(Event::CopyDone { table: index }).await.map_err(|_| closed())
}

/// A relation of the stream, with the declared table it is (if any).
struct Known {
    relation: Relation,
    table: Option<usize>,
}

/// Follows the slot from `from` (see `source`); returns only on an error.
pub async fn stream(
    decl: &Declaration,
    tables: &[TableInfo],
    from: Position,
    events: &mpsc::Sender<Event>,
    mut acked: watch::Receiver<Option<Position>>,
) -> Result<(), SyncError> {
    let Position::Lsn(start) = from else {
        return Err(SyncError::lost(format!(
            "source {}: position {from} is no PostgreSQL LSN: resync the source",
            decl.name
        )));
    };
    let endpoint = endpoint(decl)?;
    let durable = match &*acked.borrow() {
        Some(Position::Lsn(lsn)) => *lsn,
        _ => start,
    };
    let config = replication_config(&endpoint, decl).with_start_lsn(Lsn(start)).with_ack_lsn(Lsn(durable.min(start)));
    let mut client =
        ReplicationClient::connect(config).await.map_err(|e| replication_error(decl, "replication connection", e))?;
    client.wait_started().await.map_err(|e| replication_error(decl, "starting replication", e))?;
    let closed = || SyncError::transient("the sync stopped");
    let mut relations: HashMap<u32, Known> = HashMap::new();
    let mut transaction: Option<Vec<RowChange>> = None;
    // The sender's WAL end, passed on at most every SOURCE_END_EVERY (the lag in bytes).
    let mut source_end = SourceEnd::default();
    loop {
        tokio::select! {
            event = client.recv() => {
                let Some(event) = event.map_err(|e| replication_error(decl, "stream", e))? else {
                    return Err(SyncError::transient(format!("source {}: the stream ended", decl.name)));
                };
                match event {
                    ReplicationEvent::Begin { .. } => transaction = Some(Vec::new()),
                    ReplicationEvent::XLogData { data, wal_end, .. } => {
                        source_end.send(events, wal_end.0).await?;
                        let message = pgoutput::decode(&data).map_err(|e| SyncError::transient(format!("source {}: {e}", decl.name)))?;
                        if let Message::Relation(relation) = message {
                            let name = format!("{}.{}", relation.schema, relation.name);
                            let table = tables.iter().find(|t| t.table == name).map(|t| t.index);
                            relations.insert(relation.id, Known { relation, table });
                            continue;
                        }
                        let changes = transaction.get_or_insert_with(Vec::new);
                        row_changes(decl, tables, &relations, message, changes)?;
                    }
                    ReplicationEvent::Commit { end_lsn, commit_time_micros, .. } => {
                        let changes = transaction.take().unwrap_or_default();
                        let position = Position::Lsn(end_lsn.0);
                        let event = if changes.is_empty() {
                            Event::Progress { position }
                        } else {
                            Event::Transaction { changes, position, commit_time_us: Some(commit_time_micros + PG_EPOCH_MICROS) }
                        };
                        events.send(event).await.map_err(|_| closed())?;
                    }
                    ReplicationEvent::KeepAlive { wal_end, .. } => {
                        source_end.send(events, wal_end.0).await?;
                        // Between transactions, a keepalive says the sender has read the
                        // log up to there: nothing before it is still coming.
                        if transaction.is_none() && wal_end.0 >= start {
                            events.send(Event::Progress { position: Position::Lsn(wal_end.0) }).await.map_err(|_| closed())?;
                        }
                    }
                    ReplicationEvent::Message { .. } => {}
                    ReplicationEvent::StoppedAt { .. } => return Err(SyncError::transient(format!("source {}: the stream stopped", decl.name))),
                }
            }
            changed = acked.changed() => {
                if changed.is_err() {
                    return Err(closed());
                }
                if let Some(Position::Lsn(lsn)) = &*acked.borrow() {
                    client.update_applied_lsn(Lsn(*lsn));
                }
            }
        }
    }
}

/// How often the stream passes the sender's WAL end on at most.
const SOURCE_END_EVERY: Duration = Duration::from_millis(100);

/// The sender's WAL end, as last passed on (`Event::SourceEnd`).
#[derive(Default)]
struct SourceEnd {
    sent: Option<(u64, std::time::Instant)>,
}

impl SourceEnd {
    /// Passes `wal_end` on when it moved and the last one is older than `SOURCE_END_EVERY`.
    async fn send(&mut self, events: &mpsc::Sender<Event>, wal_end: u64) -> Result<(), SyncError> {
        let due = self.sent.is_none_or(|(end, at)| wal_end > end && at.elapsed() >= SOURCE_END_EVERY);
        if due && wal_end > 0 {
            self.sent = Some((wal_end, std::time::Instant::now()));
            let event = Event::SourceEnd { position: Position::Lsn(wal_end) };
            events.send(event).await.map_err(|_| SyncError::transient("the sync stopped"))?;
        }
        Ok(())
    }
}

/// Appends the row changes of one message to the transaction's.
fn row_changes(
    decl: &Declaration,
    tables: &[TableInfo],
    relations: &HashMap<u32, Known>,
    message: Message,
    changes: &mut Vec<RowChange>,
) -> Result<(), SyncError> {
    let known = |relation: u32| -> Result<Option<(&Known, usize)>, SyncError> {
        match relations.get(&relation) {
            Some(known) => Ok(known.table.map(|table| (known, table))),
            None => Err(SyncError::transient(format!(
                "source {}: a change to relation {relation} before its description",
                decl.name
            ))),
        }
    };
    match message {
        Message::Insert { relation, new } => {
            if let Some((known, table)) = known(relation)? {
                let (row, _) = tuple_row(decl, &tables[table], known, &new, false);
                changes.push(RowChange { table, kind: ChangeKind::Insert(row) });
            }
        }
        Message::Update { relation, old, new } => {
            if let Some((known, table)) = known(relation)? {
                let (row, unchanged) = tuple_row(decl, &tables[table], known, &new, false);
                let old_key = old.map(|old| tuple_row(decl, &tables[table], known, &old, true).0);
                changes.push(RowChange { table, kind: ChangeKind::Update { old_key, row, unchanged } });
            }
        }
        Message::Delete { relation, old } => {
            if let Some((known, table)) = known(relation)? {
                let (key, _) = tuple_row(decl, &tables[table], known, &old, true);
                changes.push(RowChange { table, kind: ChangeKind::Delete(key) });
            }
        }
        Message::Truncate { relations: ids } => {
            for id in ids {
                if let Some((_, table)) = known(id)? {
                    changes.push(RowChange { table, kind: ChangeKind::Truncate });
                }
            }
        }
        Message::Relation(_) | Message::Other => {}
    }
    Ok(())
}

/// A tuple as a row of the copied columns (`key_only`: the key's columns); and the names
/// of columns the source left out as unchanged.
fn tuple_row(
    decl: &Declaration,
    table: &TableInfo,
    known: &Known,
    values: &[Datum],
    key_only: bool,
) -> (Row, Vec<String>) {
    let declared = decl.tables[table.index].columns.as_deref();
    let mut row = Row::with_capacity(values.len());
    let mut unchanged = Vec::new();
    for (column, datum) in known.relation.columns.iter().zip(values) {
        let key = table.key.contains(&column.name);
        if !key && (key_only || declared.is_some_and(|d| !d.contains(&column.name))) {
            continue;
        }
        match datum {
            Datum::Null => {
                row.insert(column.name.clone(), serde_json::Value::Null);
            }
            Datum::Unchanged => unchanged.push(column.name.clone()),
            Datum::Text(text) => {
                row.insert(
                    column.name.clone(),
                    value::to_json(text, value::shape(column.type_oid), &decl.options, key),
                );
            }
        }
    }
    (row, unchanged)
}

/// Drops the slot and the publication Hotset created for the source (missing ones are
/// no error).
pub async fn forget(decl: &Declaration) -> Result<(), SyncError> {
    let endpoint = endpoint(decl)?;
    let client = connect(decl, &endpoint).await?;
    let slot = slot_name(decl);
    // A stream just stopped may still hold the slot for a moment: end its sender (the
    // same role may), then drop the slot once it is free.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        client
            .execute(
                "SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots WHERE slot_name = $1 AND active",
                &[&slot],
            )
            .await
            .map_err(|e| classify(decl, "ending the slot's stream", e))?;
        let dropped = client
            .execute(
                "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = $1",
                &[&slot],
            )
            .await;
        match dropped {
            Ok(_) => break,
            Err(e) if std::time::Instant::now() < deadline && e.to_string().contains("is active") => {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(e) => return Err(classify(decl, "dropping the replication slot", e)),
        }
    }
    client
        .batch_execute(&format!("DROP PUBLICATION IF EXISTS {}", quote(&publication_name(decl))))
        .await
        .map_err(|e| classify(decl, "dropping the publication", e))
}
