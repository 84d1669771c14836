//! Recovery's parallel apply: snapshot blocks and log records applied on several threads,
//! each namespace and keyspace on one of them.
//!
//! ```text
//! reader (snapshot frames, log records) ── Router::apply ──┬─► lane 0: users, ...   ─► Database::apply_change
//!   checks every frame, routes by target   batches of ~1 MiB └─► lane 1: keyspace 0 ─► Database::apply_change
//! ```
//!
//! Every change names one namespace or one keyspace and touches nothing else
//! (`hotset_core::change::Change::target`), so changes to different targets commute: the
//! state after applying each target's changes in their order is the state after applying
//! all of them in log order. A target goes to a lane when it is first seen (the lane that
//! was handed the fewest bytes so far) and stays there, so its changes keep their order.
//! A group (one write across several namespaces) is split into its parts, each routed by
//! its own target: atomicity matters to readers, and recovery has none until it is done.
//!
//! Owns: the lane threads, the routing table, the batches and their bounded queues.
//! Never: apply a change out of its target's order, queue more than `LANE_QUEUE_BATCHES`
//! batches per lane (the reader waits instead), or let a lane's failure pass
//! unreported: the first failure (lowest tag) is returned, and the router tells the reader
//! to stop as soon as it knows of one.
//!
//! What differs from applying on the reader's thread: changes after a failing one (in
//! other lanes, and those the reader routed before it learned of the failure) may be
//! applied too. Recovery fails on any apply error and throws the database away, so only
//! the error report matters, and it names the failing change (the lowest tag).

use hotset_core::change::{Change, Format, Target};
use hotset_core::{Database, Replay};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, Sender, SyncSender, channel, sync_channel};

/// Lanes at most (one namespace or keyspace never uses more than one).
const LANES_MAX: usize = 4;
/// A batch holds at most this many payload bytes (or one larger change)...
const BATCH_BYTES: usize = 1 << 20;
/// ...and this many changes.
const BATCH_CHANGES: usize = 4096;
/// Batches queued for one lane at most (~256 MiB): how far the reader may run ahead of a
/// lane. Snapshots interleave namespaces and keyspaces, but one written before they did
/// holds each in one stretch, so while one lane works through a namespace the reader must
/// get past it to feed the other lanes; the queue lets it, up to this much.
const LANE_QUEUE_BATCHES: usize = 256;

/// Changes copied out of the reader's buffer, for one lane.
#[derive(Default)]
struct Batch {
    bytes: Vec<u8>,
    /// Each change: its tag (lsn or file offset), end in `bytes`, the format of the file
    /// it was read from, and replay mode.
    changes: Vec<(u64, usize, Format, Replay)>,
}

/// What the lanes did.
#[derive(Debug, Default)]
pub(crate) struct Applied {
    /// Operations skipped under `Replay::Fuzzy` (see `Database::apply_change`).
    pub skipped: u64,
    /// The first change that failed, by tag, and why.
    pub error: Option<(u64, hotset_core::Error)>,
}

/// Hands changes to the lanes (or applies them on this thread when there is one lane).
pub(crate) struct Router<'a> {
    db: &'a Database,
    senders: Vec<SyncSender<Batch>>,
    batches: Vec<Batch>,
    /// Batches the lanes are done with, emptied, to be filled again: their memory is
    /// touched already (a fresh megabyte costs 256 page faults, and mimalloc hands freed
    /// ones back to the kernel).
    returned: Receiver<Batch>,
    /// The lane of each namespace ([0]), keyspace ([1]) and metadata entry ([2]) seen so far.
    routes: [HashMap<Box<str>, usize>; 3],
    /// Payload bytes routed to each lane so far.
    load: Vec<u64>,
    failed: &'a AtomicBool,
    /// What this thread applied itself (one lane).
    inline: Applied,
}

impl Router<'_> {
    /// Applies (or routes) one change, read from a file in `format`; false once any change
    /// has failed, when the caller should stop reading.
    pub fn apply(&mut self, tag: u64, payload: &[u8], format: Format, mode: Replay) -> bool {
        if self.failed.load(Ordering::Relaxed) {
            return false;
        }
        if self.senders.is_empty() {
            apply_one(self.db, tag, (payload, format, mode), &mut self.inline, self.failed);
            return !self.failed.load(Ordering::Relaxed);
        }
        // A group's parts have a target each (and different ones): each goes to its lane.
        if let Ok(Target::Group) = Change::target(payload)
            && let Ok(parts) = Change::parts(payload)
        {
            return parts.into_iter().all(|part| self.apply(tag, part, format, mode));
        }
        let lane = self.lane_of(payload);
        self.load[lane] += payload.len() as u64;
        let batch = &self.batches[lane];
        if !batch.changes.is_empty() && batch.bytes.len() + payload.len() > BATCH_BYTES {
            self.send(lane);
        }
        let batch = &mut self.batches[lane];
        batch.bytes.extend_from_slice(payload);
        batch.changes.push((tag, batch.bytes.len(), format, mode));
        if batch.bytes.len() >= BATCH_BYTES || batch.changes.len() >= BATCH_CHANGES {
            self.send(lane);
        }
        true
    }

    /// The lane of the change's target; a new target goes to the least loaded lane. A
    /// change whose head does not decode goes to lane 0, whose `apply_change` reports it.
    fn lane_of(&mut self, payload: &[u8]) -> usize {
        let (routes, name) = match Change::target(payload) {
            Ok(Target::Namespace(name)) => (&mut self.routes[0], name),
            Ok(Target::Keyspace(name)) => (&mut self.routes[1], name),
            Ok(Target::Meta(name)) => (&mut self.routes[2], name),
            // A group whose parts do not frame: lane 0's `apply_change` reports it.
            Ok(Target::Group) | Err(_) => return 0,
        };
        if let Some(&lane) = routes.get(name) {
            return lane;
        }
        let lane = (0..self.load.len()).min_by_key(|&lane| self.load[lane]).expect("at least one lane");
        routes.insert(name.into(), lane);
        lane
    }

    fn send(&mut self, lane: usize) {
        let empty = self.returned.try_recv().unwrap_or_default();
        let batch = std::mem::replace(&mut self.batches[lane], empty);
        // A lane only stops receiving after the router is dropped.
        self.senders[lane].send(batch).expect("a lane outlives its router");
    }
}

fn apply_one(
    db: &Database,
    tag: u64,
    (payload, format, mode): (&[u8], Format, Replay),
    applied: &mut Applied,
    failed: &AtomicBool,
) {
    match db.apply_change(payload, format, mode) {
        Ok(skipped) => applied.skipped += skipped,
        Err(error) => {
            if applied.error.as_ref().is_none_or(|(first, _)| tag < *first) {
                applied.error = Some((tag, error));
            }
            failed.store(true, Ordering::Relaxed);
        }
    }
}

/// A lane: applies its batches in order, each with `Database::apply_changes` (so runs of
/// one-document log records are applied like one snapshot block, prepared on two
/// threads); after a failure it only drains its queue.
fn run_lane(db: &Database, batches: Receiver<Batch>, done: Sender<Batch>, failed: &AtomicBool) -> Applied {
    let mut applied = Applied::default();
    for mut batch in batches {
        if applied.error.is_some() {
            continue;
        }
        let mut start = 0;
        let changes: Vec<(&[u8], Format, Replay)> = batch
            .changes
            .iter()
            .map(|&(_, end, format, mode)| {
                let payload = &batch.bytes[start..end];
                start = end;
                (payload, format, mode)
            })
            .collect();
        match db.apply_changes(&changes) {
            Ok(skipped) => applied.skipped += skipped,
            Err((at, error)) => {
                applied.error = Some((batch.changes[at].0, error));
                failed.store(true, Ordering::Relaxed);
            }
        }
        drop(changes);
        batch.bytes.clear();
        batch.changes.clear();
        // The router may be gone (reading is over): then the batch is simply freed.
        let _ = done.send(batch);
    }
    applied
}

/// How many lanes recovery uses here: one per core, at most `LANES_MAX`.
fn lane_count() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get()).min(LANES_MAX)
}

/// Runs `read` with a router over `lane_count()` lanes; returns what `read` returned and
/// what the lanes did, once every routed change was applied (or the lanes stopped).
pub(crate) fn apply_in_lanes<R>(db: &Database, read: impl FnOnce(&mut Router<'_>) -> R) -> (R, Applied) {
    apply_in(db, lane_count(), read)
}

/// `apply_in_lanes` with `lanes` lanes (1: everything on this thread).
pub(crate) fn apply_in<R>(db: &Database, lanes: usize, read: impl FnOnce(&mut Router<'_>) -> R) -> (R, Applied) {
    assert!((1..=LANES_MAX).contains(&lanes), "{lanes} lanes");
    let failed = AtomicBool::new(false);
    let failed = &failed;
    let (done, returned) = channel();
    std::thread::scope(|scope| {
        let mut router = Router {
            db,
            senders: Vec::new(),
            batches: Vec::new(),
            returned,
            routes: Default::default(),
            load: vec![0; lanes],
            failed,
            inline: Applied::default(),
        };
        let mut handles = Vec::new();
        if lanes > 1 {
            for lane in 0..lanes {
                let (sender, receiver) = sync_channel(LANE_QUEUE_BATCHES);
                router.senders.push(sender);
                router.batches.push(Batch::default());
                let done = done.clone();
                let handle = std::thread::Builder::new()
                    .name(format!("hotset-recovery-{lane}"))
                    .spawn_scoped(scope, move || run_lane(db, receiver, done, failed))
                    .expect("spawn a recovery lane");
                handles.push(handle);
            }
        }
        let result = read(&mut router);
        for lane in 0..router.senders.len() {
            if !router.batches[lane].changes.is_empty() {
                router.send(lane);
            }
        }
        let mut applied = std::mem::take(&mut router.inline);
        drop(router);
        for handle in handles {
            let lane = handle.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            applied.skipped += lane.skipped;
            if let Some((tag, error)) = lane.error
                && applied.error.as_ref().is_none_or(|(first, _)| tag < *first)
            {
                applied.error = Some((tag, error));
            }
        }
        (result, applied)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use hotset_core::clock::ManualClock;
    use hotset_core::kv::{KvOps, SetExpiry, SetOptions};
    use hotset_core::{FieldType, IndexDef, Limits};
    use hotset_testkit::durable::{MemJournal, dump};
    use serde_json::json;
    use std::sync::Arc;

    fn schema() -> Vec<IndexDef> {
        vec![IndexDef::hash("id", FieldType::Int).pk(), IndexDef::tree("name", FieldType::String)]
    }

    /// A history over three namespaces and two keyspaces, interleaved record by record,
    /// with what makes order matter within a target: a namespace dropped and made again
    /// under its name, an index added midway, documents overwritten and deleted, a
    /// keyspace flushed, keys overwritten, deleted and given deadlines. Returns the
    /// database that wrote it and its records.
    fn history(clock: &Arc<ManualClock>) -> (Database, Vec<(u64, Vec<u8>)>) {
        let db = Database::with_clock(clock.clone(), Limits::default());
        let journal = Arc::new(MemJournal::default());
        assert!(db.attach_journal(journal.clone()));
        for name in ["a", "b", "c"] {
            db.create_namespace(name, schema()).unwrap();
        }
        let (k0, k1) = (db.keyspaces().get_or_create("0"), db.keyspaces().get_or_create("cache"));
        for i in 0..3_000i64 {
            let namespace = ["a", "b", "c"][i as usize % 3];
            db.upsert(namespace, &json!({"id": i % 700, "name": format!("n{}", i % 37), "v": i})).unwrap();
            let key = format!("k{}", i % 500);
            k0.set(key.as_bytes(), format!("v{i}").as_bytes(), SetOptions::default()).unwrap();
            if i % 7 == 0 {
                db.delete(namespace, &json!(i % 700)).unwrap();
                k0.del(&[key.as_bytes()]).unwrap();
            }
            if i % 11 == 0 {
                let expiry = Some(SetExpiry::Ex(if i % 2 == 0 { 1 } else { 1_000_000 }));
                k1.set(key.as_bytes(), b"x", SetOptions { expiry, ..SetOptions::default() }).unwrap();
                k1.hset(format!("h{}", i % 13).as_bytes(), &[(key.as_bytes(), b"1")]).unwrap();
            }
            match i {
                1_000 => db.drop_namespace("b").unwrap(),
                1_001 => db.create_namespace("b", schema()).unwrap(),
                1_500 => db.add_index("c", IndexDef::tree("v", FieldType::Int)).unwrap(),
                2_000 => k1.flush().unwrap(),
                _ => {}
            }
        }
        // Past the 1 ms deadlines: those keys come back expired.
        clock.advance(10);
        (db, journal.records_from(1))
    }

    fn rebuilt(clock: &Arc<ManualClock>, records: &[(u64, Vec<u8>)], lanes: usize) -> (Database, Applied) {
        let db = Database::with_clock(clock.clone(), Limits::default());
        db.begin_bulk_load();
        let ((), applied) = apply_in(&db, lanes, |router| {
            for (lsn, payload) in records {
                assert!(router.apply(*lsn, payload, Format::CURRENT, Replay::Exact), "record {lsn} is refused");
            }
        });
        db.finish_bulk_load();
        (db, applied)
    }

    #[test]
    fn any_number_of_lanes_gives_the_state_one_thread_gives() {
        let clock = Arc::new(ManualClock::new(1_000));
        let (source, records) = history(&clock);
        let expected = dump(&source);
        assert_eq!(expected.namespaces.len(), 3);
        assert!(expected.keyspaces["cache"].len() > 10, "keys written after the flush are kept");
        for lanes in 1..=LANES_MAX {
            let (db, applied) = rebuilt(&clock, &records, lanes);
            assert!(applied.error.is_none(), "{lanes} lanes: {:?}", applied.error);
            db.verify_indexes().expect("indexes agree with the documents");
            assert_eq!(dump(&db), expected, "{lanes} lanes");
        }
    }

    #[test]
    fn the_first_change_that_fails_is_reported_and_later_reads_are_refused() {
        let clock = Arc::new(ManualClock::new(1_000));
        let (_, mut records) = history(&clock);
        // Documents for a namespace that does not exist early on (a new target, so it may
        // get a lane of its own), and later a record with a stray byte: the early one is
        // reported whichever lane fails first.
        let mut bad = Vec::new();
        hotset_core::change::Change::Docs { namespace: "nowhere", ops: vec![] }.encode(&mut bad);
        let early = records[100].0;
        records[100].1 = bad;
        records[200].1.push(0xFF);
        for lanes in 1..=LANES_MAX {
            let db = Database::with_clock(clock.clone(), Limits::default());
            let (refused, applied) = apply_in(&db, lanes, |router| {
                records
                    .iter()
                    .filter(|(lsn, payload)| !router.apply(*lsn, payload, Format::CURRENT, Replay::Exact))
                    .count()
            });
            let (tag, error) = applied.error.expect("a failure");
            assert_eq!(tag, early, "{lanes} lanes: {error}");
            assert!(error.to_string().contains("nowhere"), "{error}");
            // Routing stops once a lane reports a failure, which happens while the reader
            // goes on (at once on one lane): later changes, the second bad one among them,
            // may or may not have been routed.
            assert!(refused <= records.len() - 100, "{lanes} lanes");
            if lanes == 1 {
                assert_eq!(refused, records.len() - 100, "one lane stops right at the failure");
            }
        }
    }
}
