//! A database on a folder: recovery at open, the log under every write, snapshots in the
//! background.
//!
//! ```text
//! <dir>/LOCK                          held while open (lock.rs)
//! <dir>/wal/<first lsn>.wal           log segments (wal/)
//! <dir>/snapshots/<start lsn>.snap    snapshots (snapshot.rs); the newest two are kept
//! ```
//!
//! Owns: `Store` (open = lock, recover, start the log, attach it to the database; then the
//! database's maintenance, with snapshots as one of its jobs), `StoreOptions`, the recovery
//! report and its log lines. Never: let a write through before recovery finished, delete a
//! segment a kept snapshot still needs, or run two snapshots at once.
//!
//! Background work is the maintenance's (`hotset_core::maintenance`): key expiry, `ttl`
//! index expiry and snapshots (due by log growth or age, or requested by `BGSAVE`), paced
//! by the database's clock. The store starts it after the log and stops it before the log,
//! so no job writes to a closed log.
//!
//! Recovery: the newest snapshot that checks out is loaded (a damaged newest one is
//! reported and the one before it tried, which works while the log still reaches back to
//! it); the log is replayed from the snapshot's start lsn, records logged while the
//! snapshot was being copied in fuzzy mode (see `hotset_core::Replay`), later ones exactly.

use crate::disk::{Disk, OsDisk};
use crate::lanes;
use crate::lock::{FolderLock, LockError};
use crate::snapshot::{self, SnapshotError, SnapshotHooks, SnapshotInfo};
use crate::wal::{self, FsyncPolicy, RecoveryMode, TornTail, Wal, WalError, WalOptions, WalStats};
use hotset_core::change::Format;
use hotset_core::clock::{Clock, SystemClock};
use hotset_core::journal::JournalError;
use hotset_core::maintenance::{Job, Maintenance, Round};
use hotset_core::{Database, Journal, Limits, Replay};
use parking_lot::{Mutex, RwLock};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How a store is opened and run.
#[derive(Clone)]
pub struct StoreOptions {
    pub dir: PathBuf,
    pub fsync: FsyncPolicy,
    /// What recovery does with corruption in the log (see `RecoveryMode`).
    pub recovery: RecoveryMode,
    pub segment_bytes: u64,
    /// A snapshot is taken once the log has grown by this many bytes since the last one.
    pub snapshot_log_bytes: u64,
    /// ...or once this much time has passed with any write since the last one.
    pub snapshot_interval: Option<Duration>,
    /// How often maintenance checks whether a snapshot is due (on the database's clock).
    pub snapshot_check_interval: Duration,
    pub retry_interval: Duration,
    /// The log's queue limit and how long a write waits for room (see `WalOptions`).
    pub queue_bytes_max: u64,
    pub queue_wait: Duration,
    pub limits: Limits,
    pub clock: Arc<dyn Clock>,
    pub disk: Arc<dyn Disk>,
    pub hooks: SnapshotHooks,
}

impl StoreOptions {
    /// Defaults: fsync every second, strict recovery, 64 MiB segments, a snapshot after
    /// 256 MiB of log or an hour with writes.
    pub fn new(dir: impl Into<PathBuf>) -> StoreOptions {
        StoreOptions {
            dir: dir.into(),
            fsync: FsyncPolicy::default(),
            recovery: RecoveryMode::Strict,
            segment_bytes: wal::SEGMENT_BYTES_DEFAULT,
            snapshot_log_bytes: 256 << 20,
            snapshot_interval: Some(Duration::from_secs(3600)),
            snapshot_check_interval: Duration::from_millis(200),
            retry_interval: Duration::from_secs(1),
            queue_bytes_max: wal::QUEUE_BYTES_DEFAULT,
            queue_wait: wal::QUEUE_WAIT_DEFAULT,
            limits: Limits::default(),
            clock: Arc::new(SystemClock),
            disk: Arc::new(OsDisk),
            hooks: SnapshotHooks::default(),
        }
    }

    fn wal_options(&self) -> WalOptions {
        WalOptions {
            dir: self.dir.join("wal"),
            policy: self.fsync,
            segment_bytes: self.segment_bytes,
            retry_interval: self.retry_interval,
            queue_bytes_max: self.queue_bytes_max,
            queue_wait: self.queue_wait,
            disk: self.disk.clone(),
        }
    }
}

/// Why a store could not be opened or a snapshot taken.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    #[error(transparent)]
    Lock(#[from] LockError),
    #[error(transparent)]
    Wal(#[from] WalError),
    #[error(transparent)]
    Snapshot(#[from] SnapshotError),
    #[error("{op} {path}: {source}")]
    Io { op: &'static str, path: PathBuf, source: std::io::Error },
}

/// What recovery did, for logs, metrics and tests.
#[derive(Debug, Clone, Default)]
pub struct RecoveryReport {
    /// The snapshot loaded, if any.
    pub snapshot: Option<SnapshotInfo>,
    /// Damaged snapshots passed over (newest first), with why.
    pub skipped_snapshots: Vec<String>,
    /// Leftover temporary snapshot files removed (a crash during a snapshot).
    pub removed_temporary: Vec<PathBuf>,
    pub records: u64,
    pub log_bytes: u64,
    /// Operations of fuzzy-window records that met a newer state and were skipped.
    pub skipped_operations: u64,
    pub torn_tail: Option<TornTail>,
    /// What `RecoveryMode::TruncateCorrupt` cut off, as text.
    pub truncated_corruption: Option<String>,
    pub next_lsn: u64,
    /// Building the ordered indexes left for the end of the load (part of `duration_ms`).
    pub index_build_ms: u64,
    pub duration_ms: u64,
}

/// The log as the engine's journal, and the folder lock that goes with it. Closing it
/// (when the store closes) writes and fsyncs what is queued, stops the log and releases
/// the folder; a write through a handle kept after that (a cloned `Arc<Database>`, a
/// keyspace) is refused with `Error::Storage`. The read lock around `append` is what makes
/// "nothing is appended after the log stopped" hold.
struct WalJournal {
    wal: RwLock<Option<Arc<Wal>>>,
    /// The same log, for `writable`, which every write calls: an atomic load instead of
    /// a read lock (two read-modify-writes of a cache line all cores share). Whether the
    /// log is closed is read from `closed`; it can change right after either check anyway,
    /// which is why `append` still takes the lock.
    checked: Arc<Wal>,
    closed: std::sync::atomic::AtomicBool,
    lock: Mutex<Option<FolderLock>>,
}

/// `append` after close: a number no record has, which `wait` refuses.
const CLOSED_LSN: u64 = 0;

fn closed() -> JournalError {
    JournalError { reason: "the database is closed".into() }
}

impl WalJournal {
    fn wal(&self) -> Result<Arc<Wal>, WalError> {
        self.wal.read().clone().ok_or(WalError::Closed)
    }

    fn close(&self) -> Result<(), WalError> {
        self.closed.store(true, std::sync::atomic::Ordering::Release);
        let wal = self.wal.write().take();
        let result = wal.map_or(Ok(()), |wal| wal.close());
        self.lock.lock().take();
        result
    }
}

fn storage_error(error: WalError) -> JournalError {
    JournalError { reason: error.to_string() }
}

impl Journal for WalJournal {
    fn writable(&self) -> Result<(), JournalError> {
        if self.closed.load(std::sync::atomic::Ordering::Acquire) {
            return Err(closed());
        }
        self.checked.writable().map_err(storage_error)
    }
    fn append(&self, encode: &mut dyn FnMut(&mut Vec<u8>)) -> u64 {
        self.wal.read().as_ref().map_or(CLOSED_LSN, |wal| wal.append(encode))
    }
    fn wait(&self, lsn: u64) -> Result<(), JournalError> {
        if lsn == CLOSED_LSN {
            return Err(closed());
        }
        // A log closed meanwhile has written and fsynced this record, or failed it: its
        // outcome is known to `wait` either way.
        self.wal().map_err(storage_error)?.wait(lsn).map_err(storage_error)
    }
}

/// State shared with the snapshot job.
struct Shared {
    db: Arc<Database>,
    journal: Arc<WalJournal>,
    options: StoreOptions,
    /// One snapshot at a time; holds the log size when the last one started.
    snapshot_lock: Mutex<SnapshotMark>,
    /// A snapshot was asked for (`request_snapshot`): the next run takes one whether due or not.
    requested: AtomicBool,
}

struct SnapshotMark {
    /// `WalStats::bytes_written` when the last snapshot started.
    log_bytes: u64,
    /// Log bytes since the last snapshot that were written before this process started
    /// (replayed at recovery), so restarts do not postpone snapshots forever.
    carried: u64,
    lsn: u64,
    /// When the last snapshot was taken or tried, on the database's monotonic clock.
    at: Duration,
    last: Option<SnapshotInfo>,
    last_error: Option<String>,
}

/// An open database on a folder. Derefs to the `Database`; close it with `close` (or
/// drop it) to stop its maintenance and write and fsync what is queued.
pub struct Store {
    shared: Arc<Shared>,
    maintenance: Maintenance,
    report: RecoveryReport,
}

impl std::ops::Deref for Store {
    type Target = Database;
    fn deref(&self) -> &Database {
        &self.shared.db
    }
}

impl Store {
    /// Locks the folder, recovers what it holds, and starts logging.
    pub fn open(options: StoreOptions) -> Result<Store, StoreError> {
        let disk = options.disk.clone();
        for dir in [options.dir.clone(), options.dir.join("wal"), options.dir.join("snapshots")] {
            disk.create_dir_all(&dir).map_err(|source| StoreError::Io { op: "create", path: dir.clone(), source })?;
        }
        let lock = FolderLock::acquire(&options.dir)?;
        let (db, report) = recover(&options)?;
        let wal = Arc::new(Wal::start(options.wal_options(), report.next_lsn)?);
        let stats = wal.stats();
        let started = options.clock.monotonic();
        let journal = Arc::new(WalJournal {
            checked: Arc::clone(&wal),
            wal: RwLock::new(Some(wal)),
            closed: std::sync::atomic::AtomicBool::new(false),
            lock: Mutex::new(Some(lock)),
        });
        assert!(db.attach_journal(journal.clone()), "a recovered database has no journal yet");
        let shared = Arc::new(Shared {
            db: Arc::new(db),
            journal,
            options,
            snapshot_lock: Mutex::new(SnapshotMark {
                log_bytes: stats.bytes_written,
                carried: report.log_bytes,
                lsn: stats.next_lsn,
                at: started,
                last: report.snapshot.clone(),
                last_error: None,
            }),
            requested: AtomicBool::new(false),
        });
        let snapshots = Box::new(SnapshotJob(Arc::clone(&shared)));
        let maintenance = Maintenance::start(Arc::clone(&shared.db), vec![snapshots])
            .map_err(|source| StoreError::Io { op: "spawn", path: "maintenance thread".into(), source })?;
        Ok(Store { shared, maintenance, report })
    }

    /// The database, to share with threads that outlive a borrow of the store. Writes
    /// through a handle kept after the store is closed are still logged, and the folder
    /// stays locked until the last handle is dropped.
    pub fn database(&self) -> &Arc<Database> {
        &self.shared.db
    }

    pub fn recovery(&self) -> &RecoveryReport {
        &self.report
    }

    pub fn wal_stats(&self) -> WalStats {
        self.shared.journal.wal().map(|wal| wal.stats()).expect("the log is open while the store is")
    }

    /// The last snapshot written (or loaded), and the last snapshot error if the most
    /// recent attempt failed.
    pub fn snapshot_state(&self) -> (Option<SnapshotInfo>, Option<String>) {
        let mark = self.shared.snapshot_lock.lock();
        (mark.last.clone(), mark.last_error.clone())
    }

    /// Takes a snapshot now (waiting for a running one to finish first).
    pub fn snapshot(&self) -> Result<SnapshotInfo, StoreError> {
        self.shared.take_snapshot()
    }

    /// Asks maintenance for a snapshot and returns at once (`BGSAVE`); its outcome shows
    /// in `snapshot_state`.
    pub fn request_snapshot(&self) {
        self.shared.requested.store(true, Ordering::Release);
        let nudged = self.maintenance.nudge(SNAPSHOT_JOB);
        debug_assert!(nudged, "the store's maintenance has the snapshot job");
    }

    /// Runs the background jobs that are due on the database's clock now, on this thread
    /// (after a round in progress), and reports what ran: for tests and embedders that
    /// move a manual clock.
    pub fn run_maintenance(&self) -> Round {
        self.maintenance.run_due()
    }

    /// Writes and fsyncs everything logged so far, whatever the policy.
    pub fn sync(&self) -> Result<u64, StoreError> {
        Ok(self.shared.journal.wal()?.sync()?)
    }

    /// Waits, without holding a thread, until log record `lsn` is acknowledged under the
    /// fsync policy: the async form of the wait every write does (a server collects its
    /// batch's records in a `journal::Acks`, then awaits the highest one here).
    pub fn wait_acknowledged(&self, lsn: u64) -> impl std::future::Future<Output = hotset_core::Result<()>> + use<> {
        let wal = self.shared.journal.wal();
        async move {
            match wal {
                Ok(wal) => wal.wait_async(lsn).await.map_err(|error| storage_error(error).into()),
                Err(_) => Err(closed().into()),
            }
        }
    }

    /// What a server's reads wait on before they answer (see [`ReadBarrier`]).
    pub fn read_barrier(&self) -> ReadBarrier {
        ReadBarrier(Arc::clone(&self.shared.journal.checked))
    }

    /// Stops maintenance, writes and fsyncs the log, stops it and releases the folder.
    /// Handles to the database kept past this can read but no longer write.
    pub fn close(self) -> Result<(), StoreError> {
        self.maintenance.stop();
        Ok(self.shared.journal.close()?)
    }
}

impl Drop for Store {
    fn drop(&mut self) {
        self.maintenance.stop();
        // Errors here were also reported to the writers waiting for those records.
        if let Err(error) = self.shared.journal.close() {
            tracing::error!(%error, "closing the log failed");
        }
    }
}

/// Makes a server's answers no fresher than its log: a write is visible to readers as
/// soon as it is applied, before its record is written, so an answer sent at once could
/// show a client what a kill -9 a moment later takes back (a synced row's version going
/// back after a restart, a value that was read and then never existed). An answer waits
/// instead until every record appended before it was built is as safe as the fsync policy
/// promises a write's answer (written under `periodic`, fsynced under `always`, nothing
/// under `never`), as Redis sends no reply before its AOF buffer is written. Cheap when
/// nothing is pending (two atomic loads, no lock); under a write load a read waits for the
/// group commit it would otherwise overtake. Holds the log itself, not the store's lock:
/// after the store closes the wait ends at once.
#[derive(Clone)]
pub struct ReadBarrier(Arc<Wal>);

impl ReadBarrier {
    /// `None` when an answer can go now; else the wait (its outcome is not the reader's:
    /// a write the log failed was refused to its writer, and the reader answers anyway).
    pub fn pending(&self) -> Option<impl std::future::Future<Output = ()> + use<>> {
        let lsn = self.0.unsettled()?;
        let wait = self.0.wait_async(lsn);
        Some(async move {
            let _ = wait.await;
        })
    }
}

/// The maintenance job that takes snapshots when due or asked for.
struct SnapshotJob(Arc<Shared>);

const SNAPSHOT_JOB: &str = "snapshot";

impl Job for SnapshotJob {
    fn name(&self) -> &'static str {
        SNAPSHOT_JOB
    }
    fn period(&self) -> Duration {
        let options = &self.0.options;
        options.snapshot_check_interval.min(options.snapshot_interval.unwrap_or(Duration::MAX))
    }
    fn run(&self, _: &Database) -> Result<u64, String> {
        let requested = self.0.requested.swap(false, Ordering::AcqRel);
        if !requested && !self.0.snapshot_due() {
            return Ok(0);
        }
        // Failures are also kept in the mark (and logged); the next period tries again.
        self.0.take_snapshot().map(|_| 1).map_err(|e| e.to_string())
    }
}

impl Shared {
    fn snapshot_due(&self) -> bool {
        let Ok(wal) = self.journal.wal() else { return false };
        let stats = wal.stats();
        let mark = self.snapshot_lock.lock();
        if stats.failed.is_some() || (stats.next_lsn == mark.lsn && mark.carried == 0) {
            return false;
        }
        let grown =
            (stats.bytes_written + mark.carried).saturating_sub(mark.log_bytes) >= self.options.snapshot_log_bytes;
        let elapsed = self.options.clock.monotonic().saturating_sub(mark.at);
        let old = self.options.snapshot_interval.is_some_and(|interval| elapsed >= interval);
        grown || old
    }

    fn take_snapshot(&self) -> Result<SnapshotInfo, StoreError> {
        let mut mark = self.snapshot_lock.lock();
        let wal = self.journal.wal()?;
        let bytes_before = wal.stats().bytes_written;
        let result = self.write_snapshot(&wal);
        match &result {
            Ok(info) => {
                tracing::info!(
                    path = %info.path.display(), documents = info.counts.documents, keys = info.counts.keys,
                    bytes = info.bytes, ms = info.duration_ms, "snapshot written"
                );
                *mark = SnapshotMark {
                    log_bytes: bytes_before,
                    carried: 0,
                    lsn: info.start_lsn,
                    at: self.options.clock.monotonic(),
                    last: Some(info.clone()),
                    last_error: None,
                };
            }
            Err(error) => {
                tracing::warn!(%error, "snapshot failed");
                mark.last_error = Some(error.to_string());
                mark.at = self.options.clock.monotonic();
            }
        }
        result
    }

    fn write_snapshot(&self, wal: &Wal) -> Result<SnapshotInfo, StoreError> {
        let dir = self.options.dir.join("snapshots");
        // A new segment starts at the snapshot's start lsn, so older segments can go
        // whole once a newer snapshot covers them.
        let start = wal.rotate()?;
        let mut finish = || wal.sync().map(|durable| durable + 1).map_err(|e| e.to_string());
        let info = snapshot::write(&*self.options.disk, &dir, &self.db, start, &mut finish, &self.options.hooks)?;
        self.retire(wal, &dir)?;
        Ok(info)
    }

    /// Keeps the two newest snapshots and the log segments the older of them needs.
    fn retire(&self, wal: &Wal, dir: &Path) -> Result<(), StoreError> {
        let snapshots = snapshot::list(&*self.options.disk, dir)?;
        for (_, path) in snapshots.iter().skip(SNAPSHOTS_KEPT) {
            self.options.disk.remove(path).map_err(|source| StoreError::Io {
                op: "remove",
                path: path.clone(),
                source,
            })?;
        }
        if let Some((oldest_kept, _)) = snapshots.iter().take(SNAPSHOTS_KEPT).next_back() {
            wal.remove_covered(*oldest_kept)?;
        }
        Ok(())
    }
}

/// Snapshots kept: the newest, and one to fall back on if the newest is found damaged.
const SNAPSHOTS_KEPT: usize = 2;

/// Logs progress of a long load: percent and rate, at most every couple of seconds.
struct Progress {
    what: &'static str,
    started: Instant,
    last: Instant,
}

impl Progress {
    fn new(what: &'static str) -> Progress {
        Progress { what, started: Instant::now(), last: Instant::now() }
    }

    fn report(&mut self, done: u64, total: u64) {
        if self.last.elapsed() < Duration::from_secs(2) || total == 0 {
            return;
        }
        self.last = Instant::now();
        let seconds = self.started.elapsed().as_secs_f64().max(1e-3);
        let percent = (done as f64 * 100.0 / total as f64).min(100.0);
        let rate = done as f64 / seconds / (1 << 20) as f64;
        tracing::info!("{}: {percent:.0}% ({done} of {total} bytes, {rate:.1} MiB/s)", self.what);
    }
}

fn recover(options: &StoreOptions) -> Result<(Database, RecoveryReport), StoreError> {
    let started = Instant::now();
    let disk = &*options.disk;
    let dir = options.dir.join("snapshots");
    let mut report = RecoveryReport::default();
    for path in disk.list(&dir).map_err(|source| StoreError::Io { op: "list", path: dir.clone(), source })? {
        if path.extension().is_some_and(|e| e == "tmp") {
            tracing::warn!(path = %path.display(), "removing a snapshot left unfinished by a crash");
            disk.remove(&path).map_err(|source| StoreError::Io { op: "remove", path: path.clone(), source })?;
            report.removed_temporary.push(path);
        }
    }
    let fresh = || {
        let db = Database::with_clock(options.clock.clone(), options.limits);
        db.begin_bulk_load();
        db
    };
    let mut db = fresh();
    let mut last_error = None;
    let mut damaged = Vec::new();
    for (_, path) in snapshot::list(disk, &dir)? {
        let mut progress = Progress::new("loading snapshot");
        match snapshot::load(disk, &path, &db, &mut |done, total| progress.report(done, total)) {
            Ok(info) => {
                report.snapshot = Some(info);
                last_error = None;
                break;
            }
            // Not damage: passing over a snapshot in a newer format would recover an older
            // state, and its log is in that format too.
            Err(error @ (SnapshotError::Io { .. } | SnapshotError::UnsupportedFormat { .. })) => {
                return Err(error.into());
            }
            Err(error) => {
                tracing::error!(%error, "snapshot damaged; trying the one before it");
                report.skipped_snapshots.push(error.to_string());
                damaged.push(path);
                last_error = Some(error);
                db = fresh();
            }
        }
    }
    let from = report.snapshot.as_ref().map_or(1, |s| s.start_lsn);
    let exact_from = report.snapshot.as_ref().map_or(1, |s| s.end_lsn);
    let wal_options = options.wal_options();
    // Records are applied on recovery's lanes (`lanes.rs`) while this thread reads on.
    let (replayed, applied) = lanes::apply_in_lanes(&db, |router| {
        let mut apply = |lsn: u64, format: Format, payload: &[u8]| -> Result<(), String> {
            let mode = if lsn < exact_from { Replay::Fuzzy } else { Replay::Exact };
            match router.apply(lsn, payload, format, mode) {
                true => Ok(()),
                false => Err("stopped: an earlier record did not apply".into()),
            }
        };
        let mut progress = Progress::new("replaying the log");
        wal::replay(&wal_options, from, options.recovery, &mut apply, &mut |done, total| progress.report(done, total))
    });
    let skipped = applied.skipped;
    let replayed = match applied.error {
        // A record that does not apply is reported where it is, whatever the reader met
        // after it (the reader runs ahead of the lanes).
        Some((lsn, error)) => {
            let (file, offset) = wal::locate(&wal_options, lsn).unwrap_or_default();
            Err(WalError::Apply { lsn, file, offset, reason: error.to_string() })
        }
        None => replayed,
    };
    let replayed = match (replayed, last_error) {
        (Ok(replayed), _) => replayed,
        // The log does not reach back to an older snapshot: the damaged one is the error.
        (Err(WalError::MissingSegment { .. }), Some(snapshot_error)) => return Err(snapshot_error.into()),
        (Err(error), _) => return Err(error.into()),
    };
    let index_build = Instant::now();
    db.finish_bulk_load();
    report.index_build_ms = index_build.elapsed().as_millis() as u64;
    // The older snapshot and the log recovered everything: set the damaged ones aside
    // (kept for inspection) so they are neither loaded again nor counted as kept.
    for path in damaged {
        let aside = path.with_extension("snap.damaged");
        tracing::warn!(path = %path.display(), "renaming the damaged snapshot to {}", aside.display());
        disk.rename(&path, &aside).map_err(|source| StoreError::Io { op: "rename", path: path.clone(), source })?;
    }
    report.records = replayed.records;
    report.log_bytes = replayed.bytes;
    report.skipped_operations = skipped;
    report.torn_tail = replayed.torn_tail;
    report.truncated_corruption = replayed.truncated_corruption.map(|e| e.to_string());
    report.next_lsn = replayed.next_lsn;
    report.duration_ms = started.elapsed().as_millis() as u64;
    tracing::info!(
        snapshot = ?report.snapshot.as_ref().map(|s| s.path.display().to_string()),
        records = report.records, index_build_ms = report.index_build_ms, ms = report.duration_ms, "recovered"
    );
    Ok((db, report))
}
