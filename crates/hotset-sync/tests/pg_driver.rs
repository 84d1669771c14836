//! The PostgreSQL driver alone against a real throwaway PostgreSQL: checks of bad
//! declarations, the copy of every mapped type, and the stream after it (no gap, no
//! duplicate), driven through a channel as the runner drives it.

use hotset_sync::source::{ChangeKind, Declaration, ErrorKind, Event, Row};
use hotset_sync::{Position, pg};
use hotset_testkit::postgres::Postgres;
use serde_json::{Value, json};
use std::time::Duration;
use tokio::sync::{mpsc, watch};

fn declaration(pg: &Postgres, tables: Value) -> Declaration {
    serde_json::from_value(json!({"name": "app", "url": pg.url(), "tables": tables})).unwrap()
}

async fn next(events: &mut mpsc::Receiver<Event>) -> Event {
    tokio::time::timeout(Duration::from_secs(30), events.recv())
        .await
        .expect("an event in time")
        .expect("the channel is open")
}

/// The next event that is not a `Progress` (or a `SourceEnd`: the sender's WAL end, which
/// must never be behind a position already streamed).
async fn next_change(events: &mut mpsc::Receiver<Event>) -> Event {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let mut passed = 0;
    loop {
        let event = tokio::time::timeout_at(deadline, events.recv()).await.expect("a change in time");
        match event.expect("the channel is open") {
            Event::Progress { position: Position::Lsn(at) } => passed = passed.max(at),
            Event::SourceEnd { position: Position::Lsn(end) } => {
                assert!(end >= passed, "the WAL end {end:X} is behind a position passed, {passed:X}")
            }
            event => return event,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_declarations_are_refused_naming_the_cause() {
    let pg = Postgres::start();
    pg.app("CREATE TABLE keyed (id int PRIMARY KEY, v text); CREATE TABLE loose (v text)");
    let refused = |decl: Declaration| async move {
        let error = pg::inspect(&decl).await.expect_err("refused");
        assert_eq!(error.kind, ErrorKind::Declaration, "{error}");
        error.message
    };
    let wrong = serde_json::from_value(json!({
        "name": "app", "url": pg.url().replace("hotset-pw", "nope"), "tables": [{"table": "keyed"}]
    }))
    .unwrap();
    assert!(refused(wrong).await.contains("password"));
    assert!(refused(declaration(&pg, json!([{"table": "public.missing"}]))).await.contains("does not exist"));
    assert!(refused(declaration(&pg, json!([{"table": "loose"}]))).await.contains("no primary key"));
    let message = refused(declaration(&pg, json!([{"table": "loose", "full_row_identity": true}]))).await;
    assert!(message.contains("REPLICA IDENTITY FULL"), "{message}");
    assert!(refused(declaration(&pg, json!([{"table": "keyed", "columns": ["nope"]}]))).await.contains("no column"));
    pg.sql("ALTER ROLE hotset NOREPLICATION");
    assert!(refused(declaration(&pg, json!([{"table": "keyed"}]))).await.contains("REPLICATION"));
    pg.sql("ALTER ROLE hotset REPLICATION");
    let tables = pg::inspect(&declaration(&pg, json!([{"table": "keyed"}]))).await.unwrap();
    assert_eq!(tables[0].key, vec!["id"]);

    let low = Postgres::start_with(&[("wal_level", "replica")]);
    let message = refused(declaration(&low, json!([{"table": "keyed"}]))).await;
    assert!(message.contains("wal_level"), "{message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_copy_maps_every_type_and_the_stream_follows_it() {
    let pg = Postgres::start();
    pg.app(
        "CREATE TYPE mood AS ENUM ('sad', 'happy');
         CREATE TABLE items (
           id bigint PRIMARY KEY, small smallint, flag boolean, price numeric(12,2), big numeric,
           ratio double precision, name text, code char(3), tag varchar(10), uid uuid, born date,
           at timestamp, atz timestamptz, clock time, raw bytea, feeling mood, doc jsonb, plain json,
           tags text[], grid int[], nothing text);
         INSERT INTO items VALUES (1, -2, true, 12.50, 123456789012345678901234567890, 0.25, 'añb\tc\\d',
           'ab', 'x', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '2024-02-29', '2024-02-29 12:30:00.5',
           '2024-02-29 12:30:00+02', '08:15:00', '\\x00ff', 'happy', '{\"a\": [1, null]}', '[true]',
           ARRAY['x y', NULL], '{{1,2},{3,4}}', NULL);
         INSERT INTO items (id, name) VALUES (2, 'second');",
    );
    let decl = declaration(&pg, json!([{"table": "items"}]));
    let tables = pg::inspect(&decl).await.unwrap();
    let (sender, mut events) = mpsc::channel(64);
    let from = pg::copy(&decl, &[0], &sender, true).await.unwrap();
    assert!(matches!(from, Position::Lsn(_)));
    assert_eq!(next(&mut events).await, Event::CopyPoint { position: from.clone() });
    assert_eq!(next(&mut events).await, Event::CopyStart { table: 0, estimated_rows: 0 });
    let Event::Rows { table: 0, docs } = next(&mut events).await else { panic!("rows") };
    let mut rows: Vec<Row> = docs.iter().map(|doc| decoded(doc)).collect();
    assert_eq!(next(&mut events).await, Event::CopyDone { table: 0 });
    rows.sort_by_key(|row| row["id"].as_i64());
    let first = Value::Object(rows[0].clone());
    assert_eq!(
        first,
        json!({
            "id": 1, "small": -2, "flag": true, "price": 12.5, "big": "123456789012345678901234567890",
            "ratio": 0.25, "name": "añb\tc\\d", "code": "ab ", "tag": "x",
            "uid": "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "born": "2024-02-29",
            "at": "2024-02-29T12:30:00.5Z", "atz": "2024-02-29T10:30:00Z", "clock": "08:15:00",
            "raw": "AP8=", "feeling": "happy", "doc": {"a": [1, null]}, "plain": [true],
            "tags": ["x y", null], "grid": [[1, 2], [3, 4]], "nothing": null
        })
    );
    assert_eq!(rows.len(), 2);

    // Changes after the copy's point come through the stream, in commit order.
    // (psql runs the statements of one -c as one transaction.)
    pg.app("INSERT INTO items (id, name) VALUES (3, 'third'); UPDATE items SET name = 'one' WHERE id = 1");
    pg.app("UPDATE items SET id = 20 WHERE id = 2");
    pg.app("DELETE FROM items WHERE id = 3");
    let (_acked_tx, acked) = watch::channel(None);
    let streaming = tokio::spawn({
        let (decl, tables, sender) = (decl.clone(), tables.clone(), sender.clone());
        async move { pg::stream(&decl, &tables, from, &sender, acked).await }
    });
    let Event::Transaction { changes, position, commit_time_us } = next_change(&mut events).await else { panic!() };
    assert!(commit_time_us.is_some());
    assert_eq!(changes.len(), 2);
    let ChangeKind::Insert(row) = &changes[0].kind else { panic!("{changes:?}") };
    assert_eq!((row["id"].clone(), row["name"].clone()), (json!(3), json!("third")));
    let ChangeKind::Update { old_key: None, row, .. } = &changes[1].kind else { panic!("{changes:?}") };
    assert_eq!(row["name"], json!("one"));
    let Event::Transaction { changes, position: second, .. } = next_change(&mut events).await else { panic!() };
    assert!(second.reached(&position) && second != position);
    let ChangeKind::Update { old_key: Some(old), row, .. } = &changes[0].kind else { panic!("{changes:?}") };
    assert_eq!((old.get("id"), &row["id"]), (Some(&json!(2)), &json!(20)));
    assert_eq!(old.len(), 1, "the old key only: {old:?}");
    let Event::Transaction { changes, .. } = next_change(&mut events).await else { panic!() };
    assert_eq!(changes[0].kind, ChangeKind::Delete(serde_json::from_value(json!({"id": 3})).unwrap()));
    streaming.abort();
}

/// A copied document as its row, checked to be in the engine's stored form already
/// (minified, columns in order: what encoding the row again gives byte for byte).
fn decoded(doc: &[u8]) -> Row {
    let row: Row = serde_json::from_slice(doc).expect("a copied document is JSON");
    assert_eq!(serde_json::to_vec(&row).unwrap(), doc, "a copied document is in its stored form");
    row
}
