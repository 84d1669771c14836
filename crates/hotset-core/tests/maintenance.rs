//! Maintenance: the database's background jobs run when they are due on its clock. A
//! manual clock and `run_due` drive them here, so nothing sleeps; one test watches the
//! thread itself pick up what became due.

use hotset_core::clock::ManualClock;
use hotset_core::kv::{KvOps, SetExpiry, SetOptions};
use hotset_core::maintenance::{Job, KEY_EXPIRY_PERIOD, TTL_EXPIRY_PERIOD};
use hotset_core::query::{Op, Query};
use hotset_core::{Database, FieldType, IndexDef, Limits, Maintenance};
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

const START_MS: u64 = 1_700_000_000_000;

fn sessions(clock: &Arc<ManualClock>) -> Arc<Database> {
    let db = Arc::new(Database::with_clock(clock.clone(), Limits::default()));
    let ttl = IndexDef::tree("created", FieldType::Int).expire_after(60);
    db.create_namespace("sessions", vec![IndexDef::hash("id", FieldType::Int).pk(), ttl]).unwrap();
    let now = (START_MS / 1000) as i64;
    for (id, created) in [(1, now - 58), (2, now - 20), (3, now)] {
        db.insert("sessions", &json!({"id": id, "created": created})).unwrap();
    }
    db
}

fn ids(db: &Database) -> Vec<i64> {
    let query = Query::new("sessions").where_("id", Op::Gt, 0);
    let mut ids: Vec<i64> = db.query(&query).unwrap().values().iter().map(|v| v["id"].as_i64().unwrap()).collect();
    ids.sort_unstable();
    ids
}

fn count(round: &[(&'static str, Result<u64, String>)], job: &str) -> Option<u64> {
    round.iter().find(|(name, _)| *name == job).map(|(_, outcome)| *outcome.as_ref().unwrap())
}

#[test]
fn ttl_documents_expire_as_the_clock_passes_their_time() {
    let clock = Arc::new(ManualClock::new(START_MS));
    let db = sessions(&clock);
    let maintenance = Maintenance::start(Arc::clone(&db), Vec::new()).unwrap();
    assert!(maintenance.run_due().is_empty(), "nothing is due before a period has passed");

    clock.advance(TTL_EXPIRY_PERIOD.as_millis() as u64);
    let round = maintenance.run_due();
    assert_eq!(
        count(&round, "ttl expiry"),
        Some(0),
        "created 58 s before the start, 60 s to live: a second left after this one"
    );
    assert_eq!(ids(&db), [1, 2, 3]);
    assert!(maintenance.run_due().is_empty(), "a job that ran is not due again until its period passes");

    clock.advance(30_000);
    assert_eq!(count(&maintenance.run_due(), "ttl expiry"), Some(1));
    assert_eq!(ids(&db), [2, 3]);
    clock.advance(60_000);
    assert_eq!(count(&maintenance.run_due(), "ttl expiry"), Some(2));
    assert!(ids(&db).is_empty());
}

#[test]
fn expired_keys_are_deleted_without_being_read() {
    let clock = Arc::new(ManualClock::new(START_MS));
    let db = Arc::new(Database::with_clock(clock.clone(), Limits::default()));
    let space = db.keyspaces().get_or_create("0");
    for i in 0..50 {
        let expiry = SetOptions { expiry: Some(SetExpiry::Ex(10 + i)), ..SetOptions::default() };
        space.set(format!("k{i}").as_bytes(), b"v", expiry).unwrap();
    }
    space.set(b"kept", b"v", SetOptions::default()).unwrap();
    let maintenance = Maintenance::start(Arc::clone(&db), Vec::new()).unwrap();
    clock.advance(KEY_EXPIRY_PERIOD.as_millis() as u64);
    let round = maintenance.run_due();
    assert_eq!(count(&round, "key expiry"), Some(50));
    // `len` counts keys stored, expired or not: only an active delete brings it down.
    assert_eq!(space.len(), 1);
}

/// Counts its runs; fails every other one.
struct Flaky {
    runs: Arc<AtomicU64>,
}

impl Job for Flaky {
    fn name(&self) -> &'static str {
        "flaky"
    }
    fn period(&self) -> Duration {
        Duration::from_secs(3600)
    }
    fn run(&self, _: &Database) -> Result<u64, String> {
        let run = self.runs.fetch_add(1, Ordering::SeqCst) + 1;
        if run % 2 == 1 { Err(format!("run {run} failed")) } else { Ok(run) }
    }
}

#[test]
fn a_failing_job_is_retried_next_period_and_the_others_go_on() {
    let clock = Arc::new(ManualClock::new(START_MS));
    let db = sessions(&clock);
    let runs = Arc::new(AtomicU64::new(0));
    let maintenance = Maintenance::start(Arc::clone(&db), vec![Box::new(Flaky { runs: runs.clone() })]).unwrap();
    clock.advance(3_600_000);
    let round = maintenance.run_due();
    let flaky = round.iter().find(|(name, _)| *name == "flaky").unwrap();
    assert_eq!(flaky.1, Err("run 1 failed".to_string()));
    assert_eq!(count(&round, "ttl expiry"), Some(3), "the other jobs ran in the same round");
    assert!(maintenance.run_due().is_empty());
    clock.advance(3_600_000);
    assert_eq!(maintenance.run_due().iter().find(|(name, _)| *name == "flaky").unwrap().1, Ok(2));
}

#[test]
fn a_nudged_job_is_due_at_once_and_unknown_names_are_refused() {
    let clock = Arc::new(ManualClock::new(START_MS));
    let db = sessions(&clock);
    let runs = Arc::new(AtomicU64::new(0));
    let maintenance = Maintenance::start(Arc::clone(&db), vec![Box::new(Flaky { runs: runs.clone() })]).unwrap();
    assert!(!maintenance.nudge("no such job"));
    assert!(maintenance.nudge("flaky"));
    // The thread may have taken the nudged run already; either way it runs exactly once.
    let mine = maintenance.run_due().iter().any(|(name, _)| *name == "flaky");
    maintenance.stop();
    assert_eq!(runs.load(Ordering::SeqCst), 1, "ran on this thread: {mine}");
    assert!(maintenance.run_due().is_empty(), "still nothing due after stop");
}

/// The thread, not `run_due`: after the clock passes a document's time, the thread
/// deletes it within a few of its wake-ups (waited for by polling the outcome, with a
/// deadline far above the 100 ms wake-up).
#[test]
fn the_thread_runs_what_the_clock_made_due() {
    let clock = Arc::new(ManualClock::new(START_MS));
    let db = sessions(&clock);
    let maintenance = Maintenance::start(Arc::clone(&db), Vec::new()).unwrap();
    clock.advance(120_000);
    let deadline = Instant::now() + Duration::from_secs(20);
    while !ids(&db).is_empty() {
        assert!(Instant::now() < deadline, "the maintenance thread did not expire the documents");
        std::thread::yield_now();
    }
    maintenance.stop();
    db.insert("sessions", &json!({"id": 9, "created": 0})).unwrap();
    clock.advance(120_000);
    assert!(maintenance.run_due().is_empty(), "a stopped maintenance runs nothing");
    assert_eq!(ids(&db), [9]);
}

/// Holds its run until the test lets it go.
struct Held {
    started: std::sync::mpsc::SyncSender<()>,
    release: std::sync::Mutex<std::sync::mpsc::Receiver<()>>,
}

impl Job for Held {
    fn name(&self) -> &'static str {
        "held"
    }
    fn period(&self) -> Duration {
        Duration::from_secs(3600)
    }
    fn run(&self, _: &Database) -> Result<u64, String> {
        let _ = self.started.send(());
        let _ = self.release.lock().unwrap().recv();
        Ok(1)
    }
}

/// `nudge` (BGSAVE on a server's I/O thread) returns at once while a round is running a
/// long job (a snapshot can take seconds).
#[test]
fn a_nudge_does_not_wait_for_a_round_in_progress() {
    let clock = Arc::new(ManualClock::new(START_MS));
    let db = sessions(&clock);
    let (started, started_rx) = std::sync::mpsc::sync_channel(1);
    let (release, release_rx) = std::sync::mpsc::channel();
    let held = Held { started, release: std::sync::Mutex::new(release_rx) };
    let maintenance = Arc::new(Maintenance::start(Arc::clone(&db), vec![Box::new(held)]).unwrap());
    assert!(maintenance.nudge("held"));
    started_rx.recv_timeout(Duration::from_secs(20)).expect("the thread runs the nudged job");
    // The thread's round is inside the held job now.
    let nudging = Arc::clone(&maintenance);
    let (done, done_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        done.send(nudging.nudge("ttl expiry")).unwrap();
    });
    assert_eq!(done_rx.recv_timeout(Duration::from_secs(20)), Ok(true), "nudge waited for the round");
    release.send(()).unwrap();
    maintenance.stop();
}
