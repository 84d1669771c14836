//! Running sources: each declared source is a task that checks the source, copies what is
//! not copied, then applies the stream, retrying with backoff when the source goes away.
//!
//! Owns: `Syncs` (the sources of one engine: declaring, removing, resyncing, status,
//! freshness, waiting for a position), each source's task and its `Status`, and the apply
//! of driver events to the engine: a copied batch or a source transaction is one group
//! write (`Database::group`) by the source as the namespaces' owner, with the source's
//! state (position, copied tables) in the same record. Never: acknowledge a position to the
//! driver before the log holds every change up to it durably, apply a change a table's
//! copy already holds, or let a client write to a namespace a source keeps.

use crate::position::Position;
use crate::source::{ChangeKind, Declaration, Document, ErrorKind, Event, Kind, Row, RowChange, SyncError, TableInfo};
use crate::state::{self, State};
use crate::{mariadb, pg};
use hotset_core::error::ErrorCode;
use hotset_core::{Acks, Database, Durability, FieldType, IndexDef, IndexKind, WriteMode};
use hotset_ops::{Engine, Refusal};
use parking_lot::Mutex;
use serde::Serialize;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::sync::{mpsc, watch};

/// Events queued between a driver and the apply at most.
const QUEUE: usize = 1024;
/// Transactions applied before one wait for the log (more are applied when they queue up).
const ACK_BATCH: usize = 256;
/// A copy's rows are written in groups of this many rows, or fewer once they hold this
/// many bytes of documents: large enough that a group's documents are parsed on a second
/// thread while the first applies them (`prepare::apply_prepared`) and the log takes few
/// records, small enough that a group holds little memory and keeps the namespace's
/// readers waiting only a few milliseconds. (The ordered indexes take no part: a table's
/// copy builds them once, at its end: `TreeLoad`.)
/// `HOTSET_SYNC_COPY_GROUP_ROWS` sets another count (smaller groups: less memory held,
/// and a copy's progress seen in finer steps, as the crash tests need to stop it midway).
const COPY_GROUP_ROWS: usize = 16_384;

fn copy_group_rows() -> usize {
    static ROWS: std::sync::LazyLock<usize> = std::sync::LazyLock::new(|| {
        std::env::var("HOTSET_SYNC_COPY_GROUP_ROWS")
            .ok()
            .and_then(|n| n.parse().ok())
            .filter(|n| *n > 0)
            .unwrap_or(COPY_GROUP_ROWS)
    });
    *ROWS
}
const COPY_GROUP_BYTES: usize = 16 << 20;
/// Retry delays after a transient failure.
const BACKOFF_MIN: Duration = Duration::from_millis(100);
const BACKOFF_MAX: Duration = Duration::from_secs(5);

/// What a source is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SourceState {
    /// Checking the source and getting ready.
    Starting,
    /// Copying tables.
    Snapshot,
    /// Applying the stream.
    Streaming,
    /// The source failed for now: retrying with backoff.
    Retrying,
    /// Stopped until the user acts (`last_error` says what to do).
    Failed,
}

/// A table's copy.
#[derive(Debug, Clone, Serialize)]
pub struct TableStatus {
    /// The table as declared.
    pub table: String,
    /// The namespace it is followed into.
    pub namespace: String,
    /// `pending`, `copying` or `copied`.
    pub state: &'static str,
    /// Rows copied by the latest copy of it.
    pub rows_copied: u64,
    /// The source's estimate of its rows.
    pub estimated_rows: u64,
}

/// The last failure.
#[derive(Debug, Clone, Serialize)]
pub struct LastError {
    /// What failed, naming the cause.
    pub message: String,
    /// When, RFC 3339 in UTC (`2026-11-28T05:52:57.493Z`).
    pub at: String,
}

/// A source's status.
#[derive(Debug, Clone, Serialize)]
pub struct Status {
    /// The source's name.
    pub name: String,
    /// `postgres` or `mysql`.
    pub kind: &'static str,
    /// The URL with its password replaced by `***`.
    pub url: String,
    /// What it is doing.
    pub state: SourceState,
    /// The position applied (every change before it is visible).
    pub position: Option<String>,
    /// The commit-to-visible delay of the last transaction applied, in milliseconds (from
    /// the source's commit time; 0 once the stream has nothing left to apply).
    pub lag_ms: Option<u64>,
    /// Commit on the source to visible in Hotset, over every transaction applied since
    /// the source started (from the source's commit times: to the millisecond from
    /// PostgreSQL, to the second from MariaDB's binlog).
    pub visible_ms: Visibility,
    /// Events received from the source and not applied yet.
    pub pending_events: u64,
    /// Bytes of the source's log past the position applied (PostgreSQL: the WAL its
    /// sender last reported the end of; `null` where the source does not say, MariaDB).
    pub lag_bytes: Option<u64>,
    #[serde(skip)]
    source_end: Option<Position>,
    /// Source transactions applied since the server started.
    pub transactions: u64,
    /// Per table, its copy.
    pub tables: Vec<TableStatus>,
    #[serde(skip)]
    visible: Histogram,
    /// The last failure, if any.
    pub last_error: Option<LastError>,
}

fn now_ms() -> u64 {
    now_us() / 1000
}

fn now_us() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_micros() as u64)
}

/// Commit-to-visible delays summarised: how many, and the median, 99th percentile and
/// largest, in milliseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Visibility {
    /// Transactions measured.
    pub count: u64,
    /// The median.
    pub p50: f64,
    /// The 99th percentile.
    pub p99: f64,
    /// The largest.
    pub max: f64,
}

/// Delays in microseconds, counted in buckets eight to a power of two (each within 9% of
/// the delays it holds), so percentiles over millions of transactions take 4 KB.
#[derive(Debug, Clone)]
struct Histogram {
    buckets: Vec<u64>,
    count: u64,
    max_us: u64,
}

impl Default for Histogram {
    fn default() -> Histogram {
        Histogram { buckets: vec![0; 64 * 8], count: 0, max_us: 0 }
    }
}

impl Histogram {
    fn bucket(us: u64) -> usize {
        if us < 8 {
            return us as usize;
        }
        let power = 63 - us.leading_zeros() as usize;
        let fraction = ((us >> (power - 3)) & 7) as usize;
        power * 8 + fraction
    }

    /// The largest delay a bucket holds.
    fn upper(bucket: usize) -> u64 {
        if bucket < 8 {
            return bucket as u64;
        }
        let (power, fraction) = (bucket / 8, (bucket % 8) as u64);
        ((8 + fraction + 1) << (power - 3)) - 1
    }

    fn record(&mut self, us: u64) {
        self.buckets[Histogram::bucket(us)] += 1;
        self.count += 1;
        self.max_us = self.max_us.max(us);
    }

    fn quantile_us(&self, q: f64) -> u64 {
        let rank = ((self.count as f64) * q).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (bucket, count) in self.buckets.iter().enumerate() {
            seen += count;
            if seen >= rank {
                return Histogram::upper(bucket).min(self.max_us);
            }
        }
        self.max_us
    }

    fn summary(&self) -> Visibility {
        let ms = |us: u64| us as f64 / 1000.0;
        Visibility {
            count: self.count,
            p50: ms(self.quantile_us(0.5)),
            p99: ms(self.quantile_us(0.99)),
            max: ms(self.max_us),
        }
    }
}

/// The URL without its password.
fn masked(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else { return url.to_string() };
    let Some((credentials, host)) = rest.rsplit_once('@') else { return url.to_string() };
    match credentials.split_once(':') {
        Some((user, _)) => format!("{scheme}://{user}:***@{host}"),
        None => url.to_string(),
    }
}

/// One running source.
struct Shared {
    decl: Declaration,
    status: Mutex<Status>,
    /// The position applied (visible), for freshness and waits.
    applied: watch::Sender<Option<Position>>,
    stop: watch::Sender<bool>,
    /// Set by `resync`: the next run copies everything again.
    resync: std::sync::atomic::AtomicBool,
}

impl Shared {
    fn new(decl: Declaration) -> Shared {
        let kind = match decl.kind() {
            Ok(Kind::Postgres) => "postgres",
            Ok(Kind::MySql) => "mysql",
            Err(_) => "unknown",
        };
        let tables = (0..decl.tables.len())
            .map(|i| TableStatus {
                table: decl.tables[i].table.clone(),
                namespace: decl.namespace(i),
                state: "pending",
                rows_copied: 0,
                estimated_rows: 0,
            })
            .collect();
        let status = Status {
            name: decl.name.clone(),
            kind,
            url: masked(&decl.url),
            state: SourceState::Starting,
            position: None,
            lag_ms: None,
            visible_ms: Visibility::default(),
            pending_events: 0,
            lag_bytes: None,
            source_end: None,
            transactions: 0,
            tables,
            last_error: None,
            visible: Histogram::default(),
        };
        Shared {
            decl,
            status: Mutex::new(status),
            applied: watch::channel(None).0,
            stop: watch::channel(false).0,
            resync: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// The status as of now; its figures derived from the running state (the position from
    /// the applied watch, the delays' summary from their histogram) are filled in here,
    /// not on every event.
    fn status(&self) -> Status {
        let mut status = self.status.lock().clone();
        let applied = self.applied.borrow().clone();
        status.position = applied.as_ref().map(Position::to_string);
        status.lag_bytes = match (&status.source_end, &applied) {
            (Some(Position::Lsn(end)), Some(Position::Lsn(at))) => Some(end.saturating_sub(*at)),
            _ => None,
        };
        status.visible_ms = status.visible.summary();
        status
    }

    fn set_state(&self, state: SourceState) {
        self.status.lock().state = state;
    }

    fn fail(&self, state: SourceState, error: &SyncError) {
        tracing::warn!(source = %self.decl.name, "{}", error.message);
        let mut status = self.status.lock();
        status.state = state;
        status.last_error = Some(LastError { message: error.message.clone(), at: crate::civil::rfc3339_ms(now_ms()) });
    }

    /// Notes the position applied: visible from now on.
    fn applied(&self, position: &Position) {
        self.applied.send_if_modified(|applied| {
            let newer = applied.as_ref().is_none_or(|at| !at.reached(position));
            if newer {
                *applied = Some(position.clone());
            }
            newer
        });
    }
}

struct Running {
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
}

/// The sources of one engine.
pub struct Syncs {
    engine: Arc<Engine>,
    runtime: tokio::runtime::Handle,
    sources: Mutex<BTreeMap<String, Running>>,
}

fn refusal(code: ErrorCode, message: impl Into<String>) -> Refusal {
    Refusal::request(code, message)
}

fn check_name(name: &str) -> Result<(), Refusal> {
    let valid =
        !name.is_empty() && name.len() <= 64 && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if valid {
        Ok(())
    } else {
        Err(refusal(ErrorCode::BadRequest, format!("source name {name:?}: use 1 to 64 letters, digits, _ and -")))
    }
}

/// The index definitions a table's namespace gets: its key as primary key, then the
/// declared ones.
fn namespace_indexes(decl: &Declaration, table: &TableInfo) -> Result<Vec<IndexDef>, SyncError> {
    let key_type = |column: &str| {
        let type_name = table.columns.iter().find(|c| c.name == column).map_or("", |c| c.type_name.as_str());
        field_type(type_name)
    };
    let pk = match &table.key[..] {
        [one] => IndexDef::hash(one, key_type(one)).pk(),
        several => {
            let fields: Vec<(&str, FieldType)> = several.iter().map(|c| (c.as_str(), key_type(c))).collect();
            IndexDef::composite_typed(&fields, IndexKind::Hash).pk()
        }
    };
    let mut indexes = vec![pk];
    for def in &decl.tables[table.index].indexes {
        indexes.push(IndexDef::from_json(def).map_err(|e| {
            SyncError::declaration(format!("source {}: table {}: index {def}: {e}", decl.name, table.table))
        })?);
    }
    Ok(indexes)
}

/// The index type of a key column by its source type name (`bigint`, `int(11) unsigned`,
/// `character varying(20)`, `double precision`, `boolean`): integers, floats and booleans
/// as such, everything else (decimals included: their key is their text) a string.
fn field_type(type_name: &str) -> FieldType {
    let name = type_name.to_ascii_lowercase();
    if name.starts_with("bool") {
        FieldType::Bool
    } else if name.contains("int") && !name.contains("interval") && !name.contains("point") {
        FieldType::Int
    } else if name.starts_with("double") || name.starts_with("float") || name.starts_with("real") {
        FieldType::Double
    } else {
        FieldType::String
    }
}

impl Syncs {
    /// The sources of `engine`, none running yet; their tasks run on `runtime`.
    pub fn new(engine: Arc<Engine>, runtime: tokio::runtime::Handle) -> Arc<Syncs> {
        Arc::new(Syncs { engine, runtime, sources: Mutex::new(BTreeMap::new()) })
    }

    fn db(&self) -> &Arc<Database> {
        self.engine.database()
    }

    /// Starts every source stored in the database, after storing `configured` ones (the
    /// config file's `[[sources]]`): a configured source replaces a stored one of its name
    /// when they differ. Returns the configured declarations refused (bad names or URLs).
    pub fn start_all(self: &Arc<Self>, configured: Vec<Declaration>) -> Vec<Refusal> {
        let mut refused = Vec::new();
        for decl in configured {
            let checked = check_name(&decl.name)
                .and_then(|()| decl.kind().map(drop).map_err(|e| refusal(ErrorCode::BadRequest, e.message)));
            if let Err(error) = checked {
                refused.push(error);
                continue;
            }
            let stored = self.db().meta(&state::declaration_key(&decl.name));
            let bytes = serde_json::to_vec(&decl).expect("a declaration serialises");
            if stored.as_deref() != Some(&bytes[..])
                && let Err(error) = self.store_declaration(&decl.name, Some(bytes))
            {
                refused.push(error);
            }
        }
        for decl in state::load_declarations(self.db()) {
            self.launch(decl, false);
        }
        refused
    }

    fn store_declaration(&self, name: &str, bytes: Option<Vec<u8>>) -> Result<(), Refusal> {
        let mut group = self.db().group();
        group.set_meta(&state::declaration_key(name), bytes.clone());
        if bytes.is_none() {
            group.set_meta(&state::state_key(name), None);
        }
        group.commit().map(drop).map_err(|failure| Refusal::from(failure.error))
    }

    fn launch(self: &Arc<Self>, decl: Declaration, resync: bool) {
        let name = decl.name.clone();
        for i in 0..decl.tables.len() {
            self.db().set_owner(&decl.namespace(i), Some(&name));
        }
        let shared = Arc::new(Shared::new(decl));
        shared.resync.store(resync, std::sync::atomic::Ordering::Release);
        let task = self.runtime.spawn(run(Arc::clone(&self.engine), Arc::clone(&shared)));
        self.sources.lock().insert(name, Running { shared, task });
    }

    /// Declares a new source: checks it against the source (refused with the cause before
    /// anything changes), stores it, and starts following it.
    pub async fn declare(self: &Arc<Self>, decl: Declaration) -> Result<Status, Refusal> {
        check_name(&decl.name)?;
        if self.sources.lock().contains_key(&decl.name) {
            return Err(refusal(ErrorCode::AlreadyExists, format!("source {} exists", decl.name)));
        }
        self.check(&decl).await?;
        let bytes = serde_json::to_vec(&decl).expect("a declaration serialises");
        self.store_declaration(&decl.name, Some(bytes))?;
        let name = decl.name.clone();
        self.launch(decl, false);
        Ok(self.status(&name).expect("just launched"))
    }

    /// Replaces a source's declaration (its URL, tables, options): tables it had keep their
    /// copy and stream on; a table added is copied, then streamed, without disturbing the
    /// others; a table left out is no longer followed (its namespace stays, writable).
    pub async fn redeclare(self: &Arc<Self>, decl: Declaration) -> Result<Status, Refusal> {
        let old = self.sources.lock().get(&decl.name).map(|running| running.shared.decl.clone());
        let Some(old) = old else {
            return Err(refusal(ErrorCode::NotFound, format!("source {} does not exist", decl.name)));
        };
        self.check(&decl).await?;
        let running = self.sources.lock().remove(&decl.name);
        if let Some(running) = running {
            running.shared.stop.send_replace(true);
            let _ = running.task.await;
        }
        let kept: Vec<String> = (0..decl.tables.len()).map(|i| decl.namespace(i)).collect();
        for i in 0..old.tables.len() {
            let namespace = old.namespace(i);
            if !kept.contains(&namespace) {
                self.db().set_owner(&namespace, None);
            }
        }
        let bytes = serde_json::to_vec(&decl).expect("a declaration serialises");
        self.store_declaration(&decl.name, Some(bytes))?;
        let name = decl.name.clone();
        self.launch(decl, false);
        Ok(self.status(&name).expect("just launched"))
    }

    /// Checks a declaration against its source and the database: refused naming the cause
    /// when it cannot work, or when a namespace it names is another's or already holds
    /// documents of its own.
    async fn check(&self, decl: &Declaration) -> Result<(), Refusal> {
        check_name(&decl.name)?;
        if decl.tables.is_empty() {
            return Err(refusal(ErrorCode::BadRequest, format!("source {}: declare at least one table", decl.name)));
        }
        let bad = |e: SyncError| refusal(ErrorCode::BadRequest, e.message);
        let tables = match decl.kind().map_err(bad)? {
            Kind::Postgres => pg::inspect(decl).await,
            Kind::MySql => mariadb::inspect(decl).await,
        }
        .map_err(bad)?;
        for table in &tables {
            namespace_indexes(decl, table).map_err(bad)?;
            let namespace = decl.namespace(table.index);
            match self.db().owner(&namespace) {
                Some(owner) if owner == decl.name => continue,
                Some(owner) => {
                    return Err(refusal(
                        ErrorCode::AlreadyExists,
                        format!("namespace {namespace} already follows source {owner}"),
                    ));
                }
                None => {}
            }
            if self.db().describe(&namespace).is_ok() {
                return Err(refusal(
                    ErrorCode::AlreadyExists,
                    format!(
                        "namespace {namespace} exists: drop it or follow table {} into another namespace",
                        table.table
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Stops a source, removes what Hotset created on it (slot, publication) and forgets
    /// it; its namespaces stay, writable again. Returns a warning when the source could not
    /// be cleaned (it was unreachable: its slot must then be dropped by hand).
    pub async fn remove(&self, name: &str) -> Result<Option<String>, Refusal> {
        let running = self.sources.lock().remove(name);
        let Some(running) = running else {
            return Err(refusal(ErrorCode::NotFound, format!("source {name} does not exist")));
        };
        running.shared.stop.send_replace(true);
        let _ = running.task.await;
        let decl = &running.shared.decl;
        let forgotten = match decl.kind() {
            Ok(Kind::Postgres) => pg::forget(decl).await,
            Ok(Kind::MySql) => mariadb::forget(decl).await,
            Err(error) => Err(error),
        };
        self.store_declaration(name, None)?;
        for i in 0..decl.tables.len() {
            self.db().set_owner(&decl.namespace(i), None);
        }
        Ok(forgotten.err().map(|e| format!("source {name} removed, but not cleaned on the source: {}", e.message)))
    }

    /// Copies a source's tables afresh (a new slot on PostgreSQL), then streams on.
    pub async fn resync(self: &Arc<Self>, name: &str) -> Result<(), Refusal> {
        let running = self.sources.lock().remove(name);
        let Some(running) = running else {
            return Err(refusal(ErrorCode::NotFound, format!("source {name} does not exist")));
        };
        running.shared.stop.send_replace(true);
        let _ = running.task.await;
        self.launch(running.shared.decl.clone(), true);
        Ok(())
    }

    /// A source's status.
    pub fn status(&self, name: &str) -> Option<Status> {
        self.sources.lock().get(name).map(|running| running.shared.status())
    }

    /// Every source's status, by name.
    pub fn statuses(&self) -> Vec<Status> {
        self.sources.lock().values().map(|running| running.shared.status()).collect()
    }

    /// Every source with the position it has applied (none yet: left out), by name:
    /// what an answer read after this call reflects at least, whatever it read.
    pub fn positions(&self) -> Vec<(String, Position)> {
        let sources = self.sources.lock();
        sources
            .iter()
            .filter_map(|(name, running)| Some((name.clone(), running.shared.applied.borrow().clone()?)))
            .collect()
    }

    /// The source that keeps `namespace` and the position it has applied (what an answer
    /// read after this call reflects at least).
    pub fn freshness(&self, namespace: &str) -> Option<(String, Option<Position>)> {
        let owner = self.db().owner(namespace)?;
        let sources = self.sources.lock();
        let running = sources.get(&owner)?;
        let position = running.shared.applied.borrow().clone();
        Some((owner, position))
    }

    /// Waits until source `name` has applied `target` (a change after it may be visible
    /// too); an error when there is no such source, or `limit` passes first.
    pub async fn wait_for(&self, name: &str, target: &Position, limit: Duration) -> Result<(), Refusal> {
        let mut applied = {
            let sources = self.sources.lock();
            let running = sources
                .get(name)
                .ok_or_else(|| refusal(ErrorCode::NotFound, format!("source {name} does not exist")))?;
            running.shared.applied.subscribe()
        };
        let reached = applied.wait_for(|at| at.as_ref().is_some_and(|at| at.reached(target)));
        let outcome = tokio::time::timeout(limit, reached).await.map(|reached| reached.map(drop));
        match outcome {
            Ok(Ok(())) => Ok(()),
            Ok(Err(_)) => Err(refusal(ErrorCode::NotFound, format!("source {name} was removed"))),
            Err(_) => {
                let at = applied.borrow().as_ref().map_or("nothing yet".to_string(), Position::to_string);
                Err(refusal(
                    ErrorCode::Timeout,
                    format!(
                        "source {name} did not reach {target} within {} ms (it has applied {at})",
                        limit.as_millis()
                    ),
                ))
            }
        }
    }

    /// Stops every source (their state is in the log already).
    pub async fn shutdown(&self) {
        let running: Vec<Running> = std::mem::take(&mut *self.sources.lock()).into_values().collect();
        for running in running {
            running.shared.stop.send_replace(true);
            let _ = running.task.await;
        }
    }
}

/// A source's task: runs it until stopped, retrying transient failures with backoff and
/// waiting for a resync (or a stop) after a failure only the user can mend.
async fn run(engine: Arc<Engine>, shared: Arc<Shared>) {
    let mut stop = shared.stop.subscribe();
    let mut backoff = BACKOFF_MIN;
    loop {
        let started = Instant::now();
        let error = tokio::select! {
            error = run_once(&engine, &shared) => error,
            _ = stop.wait_for(|stop| *stop) => return,
        };
        match error.kind {
            ErrorKind::Transient => {
                shared.fail(SourceState::Retrying, &error);
                // A run that went on for a while was a success: start the backoff over.
                if started.elapsed() > Duration::from_secs(30) {
                    backoff = BACKOFF_MIN;
                }
                tokio::select! {
                    _ = tokio::time::sleep(backoff) => {}
                    _ = stop.wait_for(|stop| *stop) => return,
                }
                backoff = (backoff * 2).min(BACKOFF_MAX);
            }
            ErrorKind::Declaration | ErrorKind::Lost => {
                shared.fail(SourceState::Failed, &error);
                let _ = stop.wait_for(|stop| *stop).await;
                return;
            }
        }
    }
}

/// Runs a blocking engine step off the runtime's threads.
async fn blocking<T: Send + 'static>(
    step: impl FnOnce() -> Result<T, SyncError> + Send + 'static,
) -> Result<T, SyncError> {
    tokio::task::spawn_blocking(step)
        .await
        .unwrap_or_else(|e| Err(SyncError::transient(format!("an apply task failed: {e}"))))
}

/// One run: check, copy what is not copied, stream. Returns why it stopped.
async fn run_once(engine: &Arc<Engine>, shared: &Arc<Shared>) -> SyncError {
    match run_inner(engine, shared).await {
        Ok(never) => match never {},
        Err(error) => error,
    }
}

async fn run_inner(engine: &Arc<Engine>, shared: &Arc<Shared>) -> Result<std::convert::Infallible, SyncError> {
    let decl = &shared.decl;
    let kind = decl.kind()?;
    shared.set_state(SourceState::Starting);
    let tables = match kind {
        Kind::Postgres => pg::inspect(decl).await?,
        Kind::MySql => mariadb::inspect(decl).await?,
    };
    {
        let mut status = shared.status.lock();
        for table in &tables {
            status.tables[table.index].estimated_rows = table.estimated_rows;
        }
    }
    let mut state = {
        let (engine, decl, tables) = (Arc::clone(engine), decl.clone(), tables.clone());
        blocking(move || prepare(&engine, &decl, &tables)).await?
    };
    if shared.resync.swap(false, std::sync::atomic::Ordering::AcqRel) {
        state = State::default();
    }
    let fresh = state.position.is_none();
    let missing: Vec<usize> =
        (0..decl.tables.len()).filter(|&i| fresh || state.copied_at(&decl.tables[i].table).is_none()).collect();
    {
        let mut status = shared.status.lock();
        for (i, table) in status.tables.iter_mut().enumerate() {
            table.state = if missing.contains(&i) { "pending" } else { "copied" };
        }
    }
    if !missing.is_empty() {
        shared.set_state(SourceState::Snapshot);
        let (sender, receiver) = mpsc::channel(QUEUE);
        let apply = {
            let (engine, shared, state) = (Arc::clone(engine), Arc::clone(shared), state.clone());
            tokio::task::spawn_blocking(move || apply_copy(&engine, &shared, receiver, state, fresh))
        };
        let copied = match kind {
            Kind::Postgres => pg::copy(decl, &missing, &sender, fresh).await,
            Kind::MySql => mariadb::copy(decl, &tables, &missing, &sender).await,
        };
        drop(sender);
        let applied =
            apply.await.unwrap_or_else(|e| Err(SyncError::transient(format!("the copy's apply task failed: {e}"))));
        // The apply's failure is the cause when both failed (the copy then saw its channel close).
        state = applied?;
        copied?;
    }
    let from =
        state.position().ok_or_else(|| SyncError::lost(format!("source {}: no position after the copy", decl.name)))?;
    shared.applied(&from);
    shared.set_state(SourceState::Streaming);
    let (sender, receiver) = mpsc::channel(QUEUE);
    let (acked_sender, acked) = watch::channel(Some(from.clone()));
    let apply = {
        let (engine, shared, tables) = (Arc::clone(engine), Arc::clone(shared), tables.clone());
        tokio::task::spawn_blocking(move || apply_stream(&engine, &shared, &tables, receiver, state, acked_sender))
    };
    let streamed = match kind {
        Kind::Postgres => pg::stream(decl, &tables, from, &sender, acked).await,
        Kind::MySql => mariadb::stream(decl, &tables, from, &sender, acked).await,
    };
    drop(sender);
    let applied =
        apply.await.unwrap_or_else(|e| Err(SyncError::transient(format!("the stream's apply task failed: {e}"))));
    applied?;
    Err(streamed.err().unwrap_or_else(|| SyncError::transient(format!("source {}: the stream ended", decl.name))))
}

/// Creates each table's namespace (or adds declared indexes it lacks), owned by the
/// source; returns the source's stored state.
fn prepare(engine: &Engine, decl: &Declaration, tables: &[TableInfo]) -> Result<State, SyncError> {
    let db = engine.database();
    let writes = db.writes(Durability::Wait).as_owner(&decl.name);
    for table in tables {
        let namespace = decl.namespace(table.index);
        db.set_owner(&namespace, Some(&decl.name));
        writes.open_namespace(&namespace, namespace_indexes(decl, table)?).map_err(|e| {
            SyncError::lost(format!(
                "source {}: namespace {namespace} cannot follow table {}: {e}",
                decl.name, table.table
            ))
        })?;
    }
    Ok(state::load_state(db, &decl.name))
}

/// A failed write of the apply: the namespaces no longer take what the source sends (an
/// index whose type a source column no longer fits): the user must mend and resync.
fn apply_failure(decl: &Declaration, failure: &hotset_core::GroupFailure) -> SyncError {
    let place = failure.at.as_ref().map_or(String::new(), |(namespace, _)| format!(" to namespace {namespace}"));
    match failure.error.code() {
        ErrorCode::Storage => SyncError::transient(format!("source {}: writing{place}: {}", decl.name, failure.error)),
        _ => SyncError::lost(format!(
            "source {}: a change{place} does not apply: {}; fix the namespace's indexes (or the source) and resync",
            decl.name, failure.error
        )),
    }
}

fn commit_state(db: &Database, decl: &Declaration, acks: &Acks, state: &State) -> Result<(), SyncError> {
    let mut group = db.writes(Durability::Collect(acks)).as_owner(&decl.name).group();
    group.set_meta(&state::state_key(&decl.name), Some(state.to_bytes()));
    group.commit().map(drop).map_err(|failure| apply_failure(decl, &failure))
}

fn settle(acks: &Acks, decl: &Declaration) -> Result<(), SyncError> {
    acks.wait().map_err(|e| SyncError::transient(format!("source {}: the log: {e}", decl.name)))
}

/// Applies a copy's events; returns the state with the copied tables noted.
/// A table's namespace during its copy: its ordered indexes are built once, sorted, when
/// the copy ends (`Database::begin_tree_load`), instead of merging every group's keys into
/// them, and readers meanwhile get their answers from scans. Built on drop, so a copy
/// that stops half way (an error, the source gone) leaves usable indexes over the rows it
/// wrote, which the next attempt replaces anyway.
struct TreeLoad {
    db: Arc<Database>,
    namespace: String,
}

impl TreeLoad {
    fn begin(db: &Arc<Database>, namespace: &str) -> hotset_core::Result<TreeLoad> {
        db.begin_tree_load(namespace)?;
        Ok(TreeLoad { db: db.clone(), namespace: namespace.to_string() })
    }
}

impl Drop for TreeLoad {
    fn drop(&mut self) {
        self.db.finish_tree_load(&self.namespace);
    }
}

fn apply_copy(
    engine: &Engine,
    shared: &Shared,
    mut events: mpsc::Receiver<Event>,
    mut state: State,
    fresh: bool,
) -> Result<State, SyncError> {
    let decl = &shared.decl;
    let db = engine.database();
    let acks = Acks::default();
    let writes = db.writes(Durability::Collect(&acks)).as_owner(&decl.name);
    let mut point: Option<Position> = None;
    // Documents held for the next group write: (table, documents, their bytes).
    let mut pending: Option<(usize, Vec<Document>, usize)> = None;
    // Tables being copied, by index: their namespaces' ordered indexes wait for the end.
    let mut loads: HashMap<usize, TreeLoad> = HashMap::new();
    let flush = |pending: &mut Option<(usize, Vec<Document>, usize)>| -> Result<(), SyncError> {
        let Some((table, docs, _)) = pending.take() else { return Ok(()) };
        let namespace = decl.namespace(table);
        let count = docs.len() as u64;
        let mut group = writes.group();
        for doc in docs {
            group.upsert_stored(&namespace, doc).map_err(|e| SyncError::lost(format!("source {}: {e}", decl.name)))?;
        }
        group.commit().map_err(|failure| apply_failure(decl, &failure))?;
        shared.status.lock().tables[table].rows_copied += count;
        Ok(())
    };
    while let Some(event) = events.blocking_recv() {
        match event {
            Event::CopyPoint { position } => {
                if fresh {
                    // Recorded before any row: a copy cut short resumes from here, table
                    // by table, instead of starting the source over.
                    state = State { position: Some(position.to_string()), copied: BTreeMap::new() };
                    commit_state(db, decl, &acks, &state)?;
                    settle(&acks, decl)?;
                }
                point = Some(position);
            }
            Event::CopyStart { table, estimated_rows } => {
                flush(&mut pending)?;
                let namespace = decl.namespace(table);
                tracing::info!(source = %decl.name, table = %decl.tables[table].table, estimated_rows, "copying");
                writes.truncate(&namespace).map_err(|e| {
                    SyncError::lost(format!("source {}: emptying namespace {namespace} for its copy: {e}", decl.name))
                })?;
                let load = TreeLoad::begin(db, &namespace).map_err(|e| {
                    SyncError::lost(format!("source {}: loading namespace {namespace} for its copy: {e}", decl.name))
                })?;
                loads.insert(table, load);
                let mut status = shared.status.lock();
                status.tables[table].state = "copying";
                status.tables[table].rows_copied = 0;
                status.tables[table].estimated_rows = estimated_rows;
            }
            Event::Rows { table, docs } => {
                if pending.as_ref().is_some_and(|(held, _, _)| *held != table) {
                    flush(&mut pending)?;
                }
                let (_, held, bytes) = pending.get_or_insert_with(|| (table, Vec::new(), 0));
                *bytes += docs.iter().map(|doc| doc.len()).sum::<usize>();
                held.extend(docs);
                if held.len() >= copy_group_rows() || *bytes >= COPY_GROUP_BYTES {
                    flush(&mut pending)?;
                }
            }
            Event::CopyDone { table } => {
                flush(&mut pending)?;
                // The ordered indexes are built before the table counts as copied.
                drop(loads.remove(&table));
                let point = point.as_ref().ok_or_else(|| {
                    SyncError::transient(format!("source {}: a copy without its snapshot's position", decl.name))
                })?;
                state.copied.insert(decl.tables[table].table.clone(), point.to_string());
                commit_state(db, decl, &acks, &state)?;
                settle(&acks, decl)?;
                let mut status = shared.status.lock();
                status.tables[table].state = "copied";
                tracing::info!(source = %decl.name, table = %decl.tables[table].table, rows = status.tables[table].rows_copied, "copied");
            }
            other => {
                return Err(SyncError::transient(format!("source {}: the copy sent {other:?}", decl.name)));
            }
        }
    }
    settle(&acks, decl)?;
    Ok(state)
}

/// A row's primary key as the namespace's key value: the column's value, or an array of
/// them for a composite key.
fn key_of(row: &Row, key: &[String]) -> Value {
    match key {
        [one] => row.get(one).cloned().unwrap_or(Value::Null),
        several => Value::Array(several.iter().map(|c| row.get(c).cloned().unwrap_or(Value::Null)).collect()),
    }
}

/// Applies the stream's events: each transaction one group with the source's position;
/// after each run of events, one wait for the log, then the driver hears that position
/// is durable.
fn apply_stream(
    engine: &Engine,
    shared: &Shared,
    tables: &[TableInfo],
    mut events: mpsc::Receiver<Event>,
    mut state: State,
    acked: watch::Sender<Option<Position>>,
) -> Result<(), SyncError> {
    let decl = &shared.decl;
    let db = engine.database();
    let targets: Vec<Option<Target>> = (0..decl.tables.len())
        .map(|i| {
            let info = tables.iter().find(|t| t.index == i)?;
            Some(Target {
                namespace: decl.namespace(i),
                key: info.key.clone(),
                copied_at: state.copied_at(&decl.tables[i].table),
            })
        })
        .collect();
    while let Some(first) = events.blocking_recv() {
        let acks = Acks::default();
        let mut last = None;
        let mut next = Some(first);
        let mut applied = 0;
        while let Some(event) = next.take() {
            match event {
                Event::Transaction { changes, position, commit_time_us } => {
                    state.position = Some(position.to_string());
                    apply_transaction(db, decl, &targets, &acks, changes, &position, &state)?;
                    shared.applied(&position);
                    let mut status = shared.status.lock();
                    status.transactions += 1;
                    if let Some(at) = commit_time_us {
                        let lag_us = now_us().saturating_sub(at.max(0) as u64);
                        status.lag_ms = Some(lag_us / 1000);
                        status.visible.record(lag_us);
                    }
                    last = Some(position);
                    applied += 1;
                }
                Event::Progress { position } => {
                    shared.applied(&position);
                    last = Some(position);
                }
                Event::SourceEnd { position } => shared.status.lock().source_end = Some(position),
                other => return Err(SyncError::transient(format!("source {}: the stream sent {other:?}", decl.name))),
            }
            if applied < ACK_BATCH {
                next = events.try_recv().ok();
            }
        }
        settle(&acks, decl)?;
        {
            let mut status = shared.status.lock();
            status.pending_events = events.len() as u64;
            if events.is_empty() && applied == 0 {
                status.lag_ms = Some(0);
            }
        }
        if let Some(last) = last {
            acked.send_replace(Some(last));
        }
    }
    Ok(())
}

/// Where a declared table's changes go, worked out once for the stream.
struct Target {
    namespace: String,
    /// The table's key columns.
    key: Vec<String>,
    /// The position of the table's copy: changes it reached are in the copy already.
    copied_at: Option<Position>,
}

/// One source transaction as one group, the source's state in it. `targets`: by the
/// table's index in the declaration (`None`: a table the source did not find).
fn apply_transaction(
    db: &Database,
    decl: &Declaration,
    targets: &[Option<Target>],
    acks: &Acks,
    changes: Vec<RowChange>,
    position: &Position,
    state: &State,
) -> Result<(), SyncError> {
    let writes = db.writes(Durability::Collect(acks)).as_owner(&decl.name);
    let mut group = writes.group();
    // Rows this transaction wrote, by table and key: an update that leaves a column out
    // (PostgreSQL's unchanged TOAST values) takes it from here first, then from the store.
    let mut written: HashMap<(usize, String), Row> = HashMap::new();
    let bad = |e: hotset_core::Error| SyncError::lost(format!("source {}: {e}", decl.name));
    for RowChange { table, kind } in changes {
        let Some(Target { namespace, key: key_columns, copied_at }) = &targets[table] else { continue };
        // A change the table's copy already holds (the copy was taken after it).
        if copied_at.as_ref().is_some_and(|at| at.reached(position)) {
            continue;
        }
        match kind {
            ChangeKind::Insert(row) => {
                let key = key_of(&row, key_columns);
                group.write(namespace, Value::Object(row.clone()), WriteMode::Upsert).map_err(bad)?;
                written.insert((table, key.to_string()), row);
            }
            ChangeKind::Update { old_key, mut row, unchanged } => {
                let key = key_of(&row, key_columns);
                let old = old_key.map(|old| key_of(&old, key_columns)).filter(|old| *old != key);
                if !unchanged.is_empty() {
                    let before = old.as_ref().unwrap_or(&key);
                    let stored = match written.get(&(table, before.to_string())) {
                        Some(row) => Some(row.clone()),
                        None => db
                            .get(namespace, before)
                            .ok()
                            .flatten()
                            .and_then(|doc| serde_json::from_slice::<Row>(&doc).ok()),
                    };
                    for column in unchanged {
                        if let Some(value) = stored.as_ref().and_then(|stored| stored.get(&column)) {
                            row.insert(column, value.clone());
                        }
                    }
                }
                if let Some(old) = old {
                    written.remove(&(table, old.to_string()));
                    group.delete(namespace, old).map_err(bad)?;
                }
                group.write(namespace, Value::Object(row.clone()), WriteMode::Upsert).map_err(bad)?;
                written.insert((table, key.to_string()), row);
            }
            ChangeKind::Delete(row) => {
                let key = key_of(&row, key_columns);
                written.remove(&(table, key.to_string()));
                group.delete(namespace, key).map_err(bad)?;
            }
            ChangeKind::Truncate => {
                written.retain(|(t, _), _| *t != table);
                group.delete_all(namespace).map_err(bad)?;
            }
        }
    }
    group.set_meta(&state::state_key(&decl.name), Some(state.to_bytes()));
    group.commit().map(drop).map_err(|failure| apply_failure(decl, &failure))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_lose_their_password_and_types_pick_key_indexes() {
        assert_eq!(masked("postgres://u:secret@h:5432/db"), "postgres://u:***@h:5432/db");
        assert_eq!(masked("mysql://u:p@ss@h/db"), "mysql://u:***@h/db");
        assert_eq!(masked("postgres://h/db"), "postgres://h/db");
        assert_eq!(field_type("bigint"), FieldType::Int);
        assert_eq!(field_type("int(11) unsigned"), FieldType::Int);
        assert_eq!(field_type("interval"), FieldType::String);
        assert_eq!(field_type("character varying(20)"), FieldType::String);
        assert_eq!(field_type("double precision"), FieldType::Double);
        assert_eq!(field_type("boolean"), FieldType::Bool);
        assert_eq!(field_type("numeric(12,2)"), FieldType::String);
        let mut histogram = Histogram::default();
        for us in 1..=10_000u64 {
            assert!(Histogram::upper(Histogram::bucket(us)) >= us, "{us}");
            assert!(Histogram::upper(Histogram::bucket(us)) as f64 <= us as f64 * 1.13 + 1.0, "{us}");
            histogram.record(us);
        }
        let summary = histogram.summary();
        assert_eq!((summary.count, summary.max), (10_000, 10.0));
        assert!((4.9..=5.6).contains(&summary.p50) && (9.8..=10.0).contains(&summary.p99), "{summary:?}");
    }
}
