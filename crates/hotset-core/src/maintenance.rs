//! The background work of one database, started, paced and stopped in one place.
//!
//! Owns: [`Maintenance`], one thread ("hotset-maint") that runs periodic [`Job`]s: active
//! key expiry and `ttl` index expiry always, and whatever its owner adds (a store adds its
//! snapshots). Jobs are paced by the database's clock (its monotonic reading), not by the
//! thread's sleeps: a job runs once its period has passed on that clock. That is what lets a
//! test with a `ManualClock` advance time and call [`Maintenance::run_due`] to run exactly
//! what is due, with no sleeping, and what makes the embedded engine (Python) expire keys
//! and documents the same way the server does.
//!
//! Never: run two rounds at once (a round holds `rounds`), let one failing job stop the
//! others (a failure is logged and the job tried again one period later), or keep the
//! database past `stop` (the thread's handle is dropped when it is joined).
//!
//! The thread waits on real time between rounds (at most [`WAKE_MAX`], less when a job is
//! due sooner), so a clock that does not move costs a wake-up a tenth of a second and
//! nothing else.
//!
//! Not here: the log's writer thread (it answers each append within microseconds, so it
//! waits on its queue, not on a period; the store starts it before this and stops it after)
//! and the threads a large write spreads its text indexes over (joined before that write
//! returns: part of the write, not background work).

use crate::database::Database;
use parking_lot::{Condvar, Mutex};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

/// Active key expiry: how often (Redis' default `hz 10`), and how many volatile keys a
/// round examines per keyspace (lazy expiry on access covers the rest, as in Redis).
pub const KEY_EXPIRY_PERIOD: Duration = Duration::from_millis(100);
/// Volatile keys one key expiry round examines per keyspace.
pub const KEY_EXPIRY_BUDGET: usize = 200;
/// `ttl` index expiry: how often (documents go within about this long of their time), and
/// how many documents one delete step takes per index (the namespace's write lock is
/// released between steps).
pub const TTL_EXPIRY_PERIOD: Duration = Duration::from_secs(1);
/// Documents one `ttl` delete step takes per index.
pub const TTL_EXPIRY_BATCH: usize = 10_000;
/// The longest the thread waits before it looks at the clock again.
pub const WAKE_MAX: Duration = Duration::from_millis(100);

/// One kind of periodic work.
pub trait Job: Send + Sync {
    /// A short name, for logs and for [`Maintenance::nudge`].
    fn name(&self) -> &'static str;
    /// How long after one run (on the database's clock) the next is due.
    fn period(&self) -> Duration;
    /// Does the work due now; returns how many things it did (keys or documents expired,
    /// snapshots written), or why it failed.
    fn run(&self, db: &Database) -> Result<u64, String>;
}

/// Deletes expired keys a budget at a time.
struct KeyExpiry;

impl Job for KeyExpiry {
    fn name(&self) -> &'static str {
        "key expiry"
    }
    fn period(&self) -> Duration {
        KEY_EXPIRY_PERIOD
    }
    fn run(&self, db: &Database) -> Result<u64, String> {
        Ok(db.keyspaces().active_expire_cycle(KEY_EXPIRY_BUDGET) as u64)
    }
}

/// Deletes the documents `ttl` indexes say are due, in steps that release the locks.
struct TtlExpiry;

impl Job for TtlExpiry {
    fn name(&self) -> &'static str {
        "ttl expiry"
    }
    fn period(&self) -> Duration {
        TTL_EXPIRY_PERIOD
    }
    fn run(&self, db: &Database) -> Result<u64, String> {
        let now_secs = db.clock().now_ms() / 1000;
        let mut total = 0;
        loop {
            let count = db.expire_documents(now_secs, TTL_EXPIRY_BATCH).map_err(|e| e.to_string())?;
            total += count as u64;
            // A full step means more may be due under this one reading of the clock.
            if count < TTL_EXPIRY_BATCH {
                return Ok(total);
            }
        }
    }
}

struct Scheduled {
    job: Box<dyn Job>,
    /// On the database's monotonic clock.
    next_due: Duration,
}

struct Shared {
    db: Arc<Database>,
    /// Held for a whole round: rounds never overlap, and `run_due` from another thread
    /// waits for the background one.
    rounds: Mutex<Vec<Scheduled>>,
    /// Each job's name and whether it was asked to run now, in the order of `rounds`:
    /// outside its lock, so `nudge` (BGSAVE, on a server's I/O thread) never waits for a
    /// round in progress (a snapshot can take seconds).
    nudged: Vec<(&'static str, AtomicBool)>,
    stop: Mutex<bool>,
    wake: Condvar,
}

/// What one round did: each job that ran, with its count or error.
pub type Round = Vec<(&'static str, Result<u64, String>)>;

/// The background work of a database. Dropping it stops it (see [`Maintenance::stop`]).
pub struct Maintenance {
    shared: Arc<Shared>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Maintenance {
    /// Starts the thread with the database's own jobs (key and `ttl` expiry) and `extra`
    /// ones after them. Each is first due one period from now.
    pub fn start(db: Arc<Database>, extra: Vec<Box<dyn Job>>) -> std::io::Result<Maintenance> {
        let now = db.clock().monotonic();
        let jobs: Vec<Box<dyn Job>> =
            [Box::new(KeyExpiry) as Box<dyn Job>, Box::new(TtlExpiry)].into_iter().chain(extra).collect();
        let nudged = jobs.iter().map(|job| (job.name(), AtomicBool::new(false))).collect();
        let scheduled = jobs.into_iter().map(|job| Scheduled { next_due: now + job.period(), job }).collect();
        let shared = Arc::new(Shared {
            db,
            rounds: Mutex::new(scheduled),
            nudged,
            stop: Mutex::new(false),
            wake: Condvar::new(),
        });
        let background = Arc::clone(&shared);
        let thread = std::thread::Builder::new().name("hotset-maint".into()).spawn(move || background.run())?;
        Ok(Maintenance { shared, thread: Mutex::new(Some(thread)) })
    }

    /// Runs, on the calling thread, every job due on the database's clock now (after the
    /// background round in progress, if any), and reports what ran. Tests that move a
    /// manual clock call this instead of waiting for the thread.
    pub fn run_due(&self) -> Round {
        self.shared.round()
    }

    /// Makes the job named `name` due now and wakes the thread (a requested snapshot);
    /// false if there is no such job.
    pub fn nudge(&self, name: &str) -> bool {
        let Some((_, nudged)) = self.shared.nudged.iter().find(|(job, _)| *job == name) else { return false };
        nudged.store(true, Ordering::Release);
        // Under the lock the thread checks `stop` and waits under: it cannot miss this.
        let _guard = self.shared.stop.lock();
        self.shared.wake.notify_all();
        true
    }

    /// Stops the thread after the round in progress; no job runs after this returns.
    /// Called again, does nothing.
    pub fn stop(&self) {
        *self.shared.stop.lock() = true;
        self.shared.wake.notify_all();
        if let Some(thread) = self.thread.lock().take() {
            // A panicking job is a bug: surface it here rather than hide it.
            if let Err(panic) = thread.join() {
                std::panic::resume_unwind(panic);
            }
        }
    }
}

impl Drop for Maintenance {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            self.stop();
        }
    }
}

impl Shared {
    fn run(&self) {
        loop {
            let wait = self.round_and_wait();
            let mut stop = self.stop.lock();
            if *stop {
                return;
            }
            // Checked under the lock `nudge` notifies under: a nudge is seen here or wakes the wait.
            if self.nudged.iter().any(|(_, nudged)| nudged.load(Ordering::Acquire)) {
                continue;
            }
            self.wake.wait_for(&mut stop, wait);
            if *stop {
                return;
            }
        }
    }

    /// A round, then how long to wait before the next look at the clock.
    fn round_and_wait(&self) -> Duration {
        for (name, outcome) in self.round() {
            match outcome {
                Ok(0) => {}
                Ok(count) => tracing::debug!(job = name, count, "maintenance"),
                Err(error) => tracing::warn!(job = name, %error, "maintenance job failed; tried again next period"),
            }
        }
        let now = self.db.clock().monotonic();
        let jobs = self.rounds.lock();
        let soonest = jobs.iter().map(|s| s.next_due.saturating_sub(now)).min().unwrap_or(WAKE_MAX);
        soonest.clamp(Duration::from_millis(1), WAKE_MAX)
    }

    fn round(&self) -> Round {
        let mut jobs = self.rounds.lock();
        if *self.stop.lock() {
            return Round::new();
        }
        let mut ran = Vec::new();
        for (scheduled, (_, nudged)) in jobs.iter_mut().zip(&self.nudged) {
            let now = self.db.clock().monotonic();
            if !nudged.swap(false, Ordering::AcqRel) && scheduled.next_due > now {
                continue;
            }
            let outcome = scheduled.job.run(&self.db);
            // From the end of the run: a job slower than its period does not run back to back.
            scheduled.next_due = self.db.clock().monotonic() + scheduled.job.period();
            ran.push((scheduled.job.name(), outcome));
        }
        ran
    }
}
