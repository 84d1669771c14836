//! Query time limits on an injected clock: no test here waits for real time to pass.
//!
//! A query measures its limit on its database's clock (`Clock::monotonic`). With a
//! `ManualClock` that stands still, no limit passes however many rows a query visits;
//! with a clock that moves a fixed step at every reading, the limit passes at a known
//! reading, so each way a query visits rows (row-by-row filters, column passes, walks of
//! a sort index, sorts, inner joins, full-text matches, aggregations, searches, update
//! and delete by query) is shown to stop at the first reading past its limit and to fail
//! whole with `Error::Timeout`, leaving the data as it was.

use hotset_core::clock::{Clock, ManualClock};
use hotset_core::query::{Aggregation, Expr, JoinKind, Op, Query, SetField};
use hotset_core::{Database, Error, FieldType, IndexDef, Limits, Search, SearchTarget};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Documents in "items": enough for every row loop to read the clock many times (it reads
/// it once per 1,024 questions).
const ROWS: u64 = 10_000;

/// A clock whose monotonic time moves `step` milliseconds forward at every reading (it
/// stands still at step 0) and which counts its readings.
#[derive(Default)]
struct SteppingClock {
    now_ms: AtomicU64,
    step_ms: AtomicU64,
    reads: AtomicU64,
}

impl SteppingClock {
    fn step(&self, ms: u64) {
        self.step_ms.store(ms, Ordering::SeqCst);
    }

    /// The readings since the last call.
    fn take_reads(&self) -> u64 {
        self.reads.swap(0, Ordering::SeqCst)
    }
}

impl Clock for SteppingClock {
    fn now_ms(&self) -> u64 {
        1_700_000_000_000
    }

    fn monotonic(&self) -> Duration {
        self.reads.fetch_add(1, Ordering::SeqCst);
        Duration::from_millis(self.now_ms.fetch_add(self.step_ms.load(Ordering::SeqCst), Ordering::SeqCst))
    }
}

fn catalogue(clock: Arc<dyn Clock>) -> Database {
    let db = Database::with_clock(clock, Limits::default());
    db.create_namespace(
        "items",
        vec![
            IndexDef::hash("id", FieldType::Int).pk(),
            IndexDef::tree("year", FieldType::Int),
            IndexDef::text(&["title"]).named("search"),
        ],
    )
    .unwrap();
    db.create_namespace("brands", vec![IndexDef::hash("id", FieldType::Int).pk()]).unwrap();
    for id in 0..50 {
        db.upsert("brands", &json!({"id": id, "country": if id % 5 == 0 { "here" } else { "there" }})).unwrap();
    }
    let mut tx = db.transaction("items").unwrap();
    for id in 0..ROWS {
        let doc = json!({
            "id": id, "year": 1900 + id % 200, "label": format!("item {id}"), "brand": id % 50,
            "title": format!("common word{}", id % 100),
        });
        tx.upsert(doc).unwrap();
    }
    tx.commit().unwrap();
    db
}

/// What a run answered, comparable across runs.
type Answer = String;

fn answer(result: hotset_core::QueryResult) -> Answer {
    format!("{:?} {:?} {:?}", result.values(), result.total, result.aggregations)
}

/// Every document of every namespace: what a failed write must leave as it was.
fn dump(db: &Database) -> Vec<Value> {
    let mut docs = db.query(&Query::new("items").sort("id", false)).unwrap().values();
    docs.extend(db.query(&Query::new("brands").sort("id", false)).unwrap().values());
    docs
}

/// Runs a read with a time limit.
type Run = Box<dyn Fn(&Database, Option<Duration>) -> hotset_core::Result<Answer>>;

/// A way of running a query with a time limit.
struct Shape {
    name: &'static str,
    /// Whether it asks the deadline once per row it visits.
    row_loop: bool,
    run: Run,
}

fn query_shape(name: &'static str, row_loop: bool, query: Query) -> Shape {
    Shape {
        name,
        row_loop,
        run: Box::new(move |db, timeout| db.query(&Query { timeout, ..query.clone() }).map(answer)),
    }
}

/// A filter some rows pass; `label` has no index, so each row's document is read to check it.
fn some_labels() -> Query {
    Query::new("items").where_("label", Op::Like, "%99%")
}

/// The reads that visit every row of "items" (none stops early: no page fills up).
fn reads() -> Vec<Shape> {
    let brands_here = Query::new("brands").where_("country", Op::Eq, "here");
    let search = Search {
        text: "common".into(),
        targets: vec![SearchTarget {
            namespace: "items".into(),
            field: None,
            filter: Some(hotset_core::Cond::new("label", Op::Like, "%99%")),
        }],
        offset: 0,
        limit: 5,
        highlight: None,
        snippet: None,
        timeout: None,
    };
    vec![
        query_shape("a filter row by row", true, some_labels().limit(10_000)),
        query_shape("a filter over every row, for the total", true, some_labels().limit(5).with_total()),
        query_shape("a walk of the sort index", true, some_labels().sort("year", true).limit(10_000)),
        query_shape("a sort of the matches", true, some_labels().sort("label", true).limit(5)),
        query_shape("a sort of every row", false, Query::new("items").sort("label", true).limit(5)),
        query_shape(
            "an inner join",
            true,
            Query::new("items").join(JoinKind::Inner, brands_here, &[("brand", Op::Eq, "id")], "brand").limit(10_000),
        ),
        query_shape(
            "a full-text match with a filter",
            true,
            Query::new("items").matching("search", "common").where_("label", Op::Like, "%99%").limit(5).with_total(),
        ),
        query_shape("a full-text match alone", false, Query::new("items").matching("search", "common").limit(5)),
        query_shape(
            "aggregations",
            true,
            some_labels().limit(0).aggregate(Aggregation::Count).aggregate(Aggregation::Sum("year".into())),
        ),
        Shape {
            name: "a search across namespaces",
            row_loop: true,
            run: Box::new(move |db, timeout| {
                db.search(&Search { timeout, ..search.clone() }).map(|found| format!("{:?}", found.to_json()))
            }),
        },
    ]
}

#[test]
fn a_standing_clock_never_ends_a_query_however_many_rows_it_visits() {
    let clock = Arc::new(ManualClock::new(1_700_000_000_000));
    let db = catalogue(clock.clone());
    let tiny = Some(Duration::from_nanos(1));
    for shape in reads() {
        let unlimited = (shape.run)(&db, None).unwrap();
        assert_eq!((shape.run)(&db, tiny).unwrap(), unlimited, "{}", shape.name);
        // Time that passed before a query started is not held against it.
        clock.advance(60_000);
        assert_eq!((shape.run)(&db, tiny).unwrap(), unlimited, "{}", shape.name);
        // A zero limit has passed at the first question, clock or no clock.
        let error = (shape.run)(&db, Some(Duration::ZERO)).unwrap_err();
        assert_eq!(error, Error::Timeout { limit_ms: 0 }, "{}", shape.name);
    }
    let before = dump(&db);
    let update = some_labels();
    let sets = [SetField::Set("year".into(), Expr::value(1))];
    let limited = |query: &Query, timeout| Query { timeout, ..query.clone() };
    assert_eq!(db.update_query(&limited(&update, Some(Duration::ZERO)), &sets), Err(Error::Timeout { limit_ms: 0 }));
    assert_eq!(db.delete_query(&limited(&update, Some(Duration::ZERO))), Err(Error::Timeout { limit_ms: 0 }));
    assert_eq!(dump(&db), before, "a write past its limit changed nothing");
    let matched = db.query(&update.clone().with_total()).unwrap().total.unwrap();
    assert!(matched > 100, "{matched}");
    assert_eq!(db.update_query(&limited(&update, tiny), &sets), Ok(matched));
    assert_eq!(db.delete_query(&limited(&update, tiny)), Ok(matched));
    assert_eq!(db.query(&Query::new("items").with_total()).unwrap().total, Some(ROWS as usize - matched));
}

/// Runs `shape` with the clock stepping 1 ms per reading and a limit of `reads_allowed`
/// ms, so the limit passes at the `reads_allowed`-th reading after the query started;
/// returns the answer and the readings taken.
fn stepped(
    db: &Database,
    clock: &SteppingClock,
    reads_allowed: u64,
    run: impl FnOnce(&Database, Option<Duration>) -> hotset_core::Result<Answer>,
) -> (hotset_core::Result<Answer>, u64) {
    clock.take_reads();
    clock.step(1);
    let outcome = run(db, Some(Duration::from_millis(reads_allowed)));
    clock.step(0);
    (outcome, clock.take_reads())
}

#[test]
fn a_limit_passed_during_a_run_ends_it_at_the_next_clock_reading_and_fails_it_whole() {
    let clock = Arc::new(SteppingClock::default());
    let db = catalogue(clock.clone());
    for shape in reads() {
        let name = shape.name;
        let unlimited = (shape.run)(&db, None).unwrap();
        assert_eq!(clock.take_reads(), 0, "{name}: a query without a limit never reads the clock");
        // On a standing clock: the answer, and how many readings a whole run takes.
        assert_eq!((shape.run)(&db, Some(Duration::from_millis(1))).unwrap(), unlimited, "{name}");
        let whole = clock.take_reads();
        if shape.row_loop {
            // Every row asks (so the loop reads the clock), but only one question in
            // 1,024 reads it; a row asks at most twice (a walk asks per key and per row,
            // a row-by-row filter again for a row that does not match).
            assert!(whole > ROWS / 1_024, "{name}: {whole} readings");
            assert!(whole <= 2 * ROWS / 1_024 + 4, "{name}: {whole} readings");
        }
        assert!(whole >= 3, "{name}: {whole} readings");
        // The limit passes at the first reading after the start, half-way through, and at
        // the last reading a whole run takes (after its last row, before the answer):
        // each time the run stops at that reading and fails whole.
        for allowed in [1, whole / 2, whole - 1] {
            let (outcome, taken) = stepped(&db, &clock, allowed, &shape.run);
            assert_eq!(outcome, Err(Error::Timeout { limit_ms: allowed }), "{name}, {allowed} of {whole} readings");
            assert_eq!(taken, allowed + 1, "{name}: nothing runs past the reading that saw the limit pass");
        }
        // One more millisecond and the run finishes in time, with the whole answer.
        let (outcome, taken) = stepped(&db, &clock, whole, &shape.run);
        assert_eq!(outcome, Ok(unlimited), "{name}");
        assert_eq!(taken, whole, "{name}");
    }
}

#[test]
fn update_and_delete_by_query_past_their_limit_change_nothing() {
    let clock = Arc::new(SteppingClock::default());
    let db = catalogue(clock.clone());
    let query = some_labels();
    let matched = db.query(&query.clone().with_total()).unwrap().total.unwrap();
    let limited = |timeout| Query { timeout, ..query.clone() };
    // Update and delete find their rows the same way: a whole run's readings, measured
    // by an update that leaves every document as it was. Each row asks once, and once
    // more when it does not match (to stop at once), and one question in 1,024 reads.
    let same = [SetField::Set("year".into(), Expr::field("year"))];
    assert_eq!(db.update_query(&limited(Some(Duration::from_millis(1))), &same), Ok(matched));
    let whole = clock.take_reads();
    assert!(whole > ROWS / 1_024 && whole <= 2 * ROWS / 1_024 + 4, "{whole} readings");
    let before = dump(&db);
    let sets = [SetField::Set("year".into(), Expr::value(1))];
    for allowed in [1, whole / 2, whole - 1] {
        let (outcome, taken) = stepped(&db, &clock, allowed, |db, timeout| {
            db.update_query(&limited(timeout), &sets).map(|n| n.to_string())
        });
        assert_eq!(outcome, Err(Error::Timeout { limit_ms: allowed }));
        assert_eq!(taken, allowed + 1);
        let (outcome, taken) =
            stepped(&db, &clock, allowed, |db, timeout| db.delete_query(&limited(timeout)).map(|n| n.to_string()));
        assert_eq!(outcome, Err(Error::Timeout { limit_ms: allowed }));
        assert_eq!(taken, allowed + 1);
        assert_eq!(dump(&db), before, "a write past its limit changed nothing");
    }
    let (outcome, _) =
        stepped(&db, &clock, whole, |db, timeout| db.update_query(&limited(timeout), &sets).map(|n| n.to_string()));
    assert_eq!(outcome, Ok(matched.to_string()));
    let ones = db.query(&Query::new("items").where_("year", Op::Eq, 1).with_total()).unwrap().total;
    assert_eq!(ones, Some(matched));
    let (outcome, _) =
        stepped(&db, &clock, whole, |db, timeout| db.delete_query(&limited(timeout)).map(|n| n.to_string()));
    assert_eq!(outcome, Ok(matched.to_string()));
    assert_eq!(db.query(&Query::new("items").with_total()).unwrap().total, Some(ROWS as usize - matched));
}
