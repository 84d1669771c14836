//! The MariaDB driver against a real MariaDB 10.11 started by the test (hotset-testkit's
//! `MariaDb`): inspect's refusals, the copy of every mapped type, the copy's position
//! against the stream, every kind of change in the stream, resuming, and the source's
//! failures. The driver's functions are driven directly with a channel.

use hotset_sync::mariadb;
use hotset_sync::source::{ChangeKind, Declaration, ErrorKind, Event, Row, RowChange, SyncError, TableInfo};
use hotset_sync::{Gtid, Position};
use hotset_testkit::mariadb::MariaDb;
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::time::Duration;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

/// How long a test waits for an event it expects.
const EVENT_WAIT_MAX: Duration = Duration::from_secs(30);

fn declaration(server: &MariaDb, tables: Value) -> Declaration {
    serde_json::from_value(json!({ "name": "app", "url": server.url(), "tables": tables })).unwrap()
}

async fn inspect_error(decl: &Declaration) -> SyncError {
    match mariadb::inspect(decl).await {
        Ok(tables) => panic!("inspect accepted {decl:?}: {tables:?}"),
        Err(error) => error,
    }
}

/// A stream task on its own channel.
struct Follower {
    events: mpsc::Receiver<Event>,
    task: JoinHandle<Result<(), SyncError>>,
    _acked: watch::Sender<Option<Position>>,
}

impl Follower {
    fn start(decl: &Declaration, tables: &[TableInfo], from: Position) -> Follower {
        let (sender, events) = mpsc::channel(1024);
        let (acked, acked_receiver) = watch::channel(None);
        let (decl, tables) = (decl.clone(), tables.to_vec());
        let task = tokio::spawn(async move { mariadb::stream(&decl, &tables, from, &sender, acked_receiver).await });
        Follower { events, task, _acked: acked }
    }

    async fn next(&mut self) -> Event {
        match tokio::time::timeout(EVENT_WAIT_MAX, self.events.recv()).await {
            Ok(Some(event)) => event,
            Ok(None) => panic!("the stream ended: {:?}", (&mut self.task).await),
            Err(_) => panic!("no event within {EVENT_WAIT_MAX:?}"),
        }
    }

    /// The next transaction, with the progress events before it.
    async fn transaction(&mut self) -> (Vec<RowChange>, Position, Vec<Position>) {
        let mut progress = Vec::new();
        loop {
            match self.next().await {
                Event::Transaction { changes, position, commit_time_us } => {
                    assert!(commit_time_us.is_some_and(|us| us > 1_600_000_000_000_000), "{commit_time_us:?}");
                    return (changes, position, progress);
                }
                Event::Progress { position } => progress.push(position),
                other => panic!("a stream sent {other:?}"),
            }
        }
    }

    /// Waits for the stream task's error.
    async fn error(self) -> SyncError {
        match tokio::time::timeout(EVENT_WAIT_MAX, self.task).await {
            Ok(Ok(Err(error))) => error,
            Ok(other) => panic!("the stream ended with {other:?}"),
            Err(_) => panic!("the stream did not fail within {EVENT_WAIT_MAX:?}"),
        }
    }

    fn stop(self) {
        self.task.abort();
    }
}

fn row(value: Value) -> Row {
    value.as_object().unwrap().clone()
}

fn insert(table: usize, value: Value) -> RowChange {
    RowChange { table, kind: ChangeKind::Insert(row(value)) }
}

fn gtid_position(server: &MariaDb) -> Position {
    Position::parse(&server.value("SELECT @@gtid_binlog_pos")).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inspect_reads_tables_and_refuses_bad_declarations() {
    let server = MariaDb::start();
    server.sql(
        "CREATE TABLE items (a INT, b VARCHAR(20), c JSON, d INT, PRIMARY KEY (b, a)); \
         INSERT INTO items VALUES (1, 'x', '{}', 4), (2, 'y', '[]', 5); ANALYZE TABLE items; \
         CREATE TABLE loose (a INT, b INT); CREATE VIEW seen AS SELECT a FROM items;",
    );
    let tables = mariadb::inspect(&declaration(
        &server,
        json!([{ "table": "items" }, { "table": "app.loose", "full_row_identity": true, "columns": ["a"] }]),
    ))
    .await
    .unwrap();
    assert_eq!(tables[0].table, "app.items");
    assert_eq!(tables[0].key, ["b", "a"]);
    let columns: Vec<(&str, &str)> =
        tables[0].columns.iter().map(|c| (c.name.as_str(), c.type_name.as_str())).collect();
    assert_eq!(columns, [("a", "int(11)"), ("b", "varchar(20)"), ("c", "json"), ("d", "int(11)")]);
    assert_eq!(tables[0].estimated_rows, 2);
    assert_eq!((tables[1].index, tables[1].key.clone()), (1, vec!["a".to_string()]));

    let refused = |decl: Declaration, needle: &'static str| async move {
        let error = inspect_error(&decl).await;
        assert_eq!(error.kind, ErrorKind::Declaration, "{error}");
        assert!(error.message.contains(needle), "{needle:?} not in: {error}");
    };
    let mut wrong_password = declaration(&server, json!([{ "table": "items" }]));
    wrong_password.url = server.url_as("hotset", "wrong");
    refused(wrong_password, "check the user and password").await;
    refused(declaration(&server, json!([{ "table": "nothing" }])), "table app.nothing does not exist").await;
    refused(declaration(&server, json!([{ "table": "loose" }])), "has no primary key").await;
    refused(declaration(&server, json!([{ "table": "seen" }])), "not a table").await;
    refused(declaration(&server, json!([{ "table": "items", "columns": ["zzz"] }])), "has no column zzz").await;

    server.sql("CREATE USER 'reader'@'%' IDENTIFIED BY 'pw'; GRANT SELECT ON *.* TO 'reader'@'%';");
    let mut reader = declaration(&server, json!([{ "table": "items" }]));
    reader.url = server.url_as("reader", "pw");
    refused(reader, "REPLICATION SLAVE").await;

    // Global settings reach new sessions only: inspect connects anew each time.
    for (setting, bad, good, needle) in [
        ("binlog_format", "STATEMENT", "ROW", "binlog_format is STATEMENT"),
        ("binlog_format", "MIXED", "ROW", "binlog_format is MIXED"),
        ("binlog_row_image", "MINIMAL", "FULL", "binlog_row_image is MINIMAL"),
        ("binlog_row_metadata", "MINIMAL", "FULL", "binlog_row_metadata is MINIMAL"),
    ] {
        server.sql(&format!("SET GLOBAL {setting} = '{bad}'"));
        refused(declaration(&server, json!([{ "table": "items" }])), needle).await;
        server.sql(&format!("SET GLOBAL {setting} = '{good}'"));
    }
    mariadb::inspect(&declaration(&server, json!([{ "table": "items" }]))).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inspect_refuses_a_server_without_binlog() {
    let server = MariaDb::start_with(&["--skip-log-bin"]);
    server.sql("CREATE TABLE items (id INT PRIMARY KEY)");
    let error = inspect_error(&declaration(&server, json!([{ "table": "items" }]))).await;
    assert_eq!(error.kind, ErrorKind::Declaration);
    assert!(error.message.contains("log_bin is off"), "{error}");
}

const TYPES_TABLE: &str = "CREATE TABLE types (
    id INT PRIMARY KEY,
    t_tiny TINYINT, t_bool BOOL, t_small SMALLINT UNSIGNED, t_medium MEDIUMINT, t_int INT UNSIGNED,
    t_big BIGINT, t_ubig BIGINT UNSIGNED,
    t_dec DECIMAL(20,4), t_dec_big DECIMAL(38,10), t_float FLOAT, t_double DOUBLE,
    t_bit BIT(12), t_year YEAR,
    t_char CHAR(10), t_varchar VARCHAR(100), t_text TEXT, t_latin VARCHAR(20) CHARACTER SET latin1,
    t_enum ENUM('red','green','blue'), t_set SET('a','b','c'),
    t_binary BINARY(4), t_varbinary VARBINARY(10), t_blob BLOB,
    t_date DATE, t_time TIME(3), t_datetime DATETIME(6), t_timestamp TIMESTAMP(6) NULL, t_datetime0 DATETIME,
    t_json JSON, t_uuid UUID
)";

/// Rows of `types`: every type with a value, every type NULL, and edge values.
const TYPES_ROWS: &str = "INSERT INTO types VALUES
    (1, -128, 1, 65535, -8388608, 4294967295, -9223372036854775808, 18446744073709551615,
     '1234567890.1250', '1234567890123456789012345678.0123456789', 1.1, 3.141592653589793,
     b'101010101010', 2024,
     'abc', 'héllo wörld ✓', 'a longer text', 'café',
     'green', 'a,c',
     'ab', x'00ff10', x'deadbeef',
     '2024-05-01', '-26:03:04.500', '2024-05-01 12:30:05.250000', '2024-05-01 12:30:05.000001', '1999-12-31 23:59:59',
     '{\"a\":[1,2,{\"b\":null}],\"c\":\"d\"}', '6ccd780c-baba-1026-9564-5b8c656024db'),
    (2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
     NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
    (3, 0, 0, 0, 0, 0, 9223372036854775807, 9223372036854775808,
     '-0.5000', '0.0000000001', -0.0, 1e300,
     b'0', 0,
     '', '', '', '',
     'red', '',
     x'00000000', x'', x'',
     '1000-01-01', '838:59:59', '9999-12-31 23:59:59.999999', '1970-01-01 00:00:01', '2000-02-29 00:00:00',
     '[]', 'f4d1b2c3-0000-4000-8000-0123456789a0')";

fn expected_types() -> Vec<Value> {
    vec![
        json!({
            "id": 1, "t_tiny": -128, "t_bool": 1, "t_small": 65535, "t_medium": -8388608, "t_int": 4294967295u64,
            "t_big": i64::MIN, "t_ubig": u64::MAX,
            "t_dec": 1234567890.125, "t_dec_big": "1234567890123456789012345678.0123456789", "t_float": 1.1,
            "t_double": std::f64::consts::PI,
            "t_bit": 2730, "t_year": 2024,
            "t_char": "abc", "t_varchar": "héllo wörld ✓", "t_text": "a longer text", "t_latin": "café",
            "t_enum": "green", "t_set": "a,c",
            "t_binary": "YWIAAA==", "t_varbinary": "AP8Q", "t_blob": "3q2+7w==",
            "t_date": "2024-05-01", "t_time": "-26:03:04.500000", "t_datetime": "2024-05-01T12:30:05.250000Z",
            "t_timestamp": "2024-05-01T12:30:05.000001Z", "t_datetime0": "1999-12-31T23:59:59Z",
            "t_json": { "a": [1, 2, { "b": null }], "c": "d" }, "t_uuid": "6ccd780c-baba-1026-9564-5b8c656024db"
        }),
        {
            let mut nulls = serde_json::Map::new();
            nulls.insert("id".into(), json!(2));
            for name in expected_types_names().iter().skip(1) {
                nulls.insert(name.to_string(), Value::Null);
            }
            Value::Object(nulls)
        },
        json!({
            "id": 3, "t_tiny": 0, "t_bool": 0, "t_small": 0, "t_medium": 0, "t_int": 0,
            "t_big": i64::MAX, "t_ubig": 9223372036854775808u64,
            "t_dec": -0.5, "t_dec_big": 1e-10, "t_float": -0.0, "t_double": 1e300,
            "t_bit": 0, "t_year": 0,
            "t_char": "", "t_varchar": "", "t_text": "", "t_latin": "",
            "t_enum": "red", "t_set": "",
            "t_binary": "AAAAAA==", "t_varbinary": "", "t_blob": "",
            "t_date": "1000-01-01", "t_time": "838:59:59", "t_datetime": "9999-12-31T23:59:59.999999Z",
            "t_timestamp": "1970-01-01T00:00:01Z", "t_datetime0": "2000-02-29T00:00:00Z",
            "t_json": [], "t_uuid": "f4d1b2c3-0000-4000-8000-0123456789a0"
        }),
    ]
}

fn expected_types_names() -> Vec<&'static str> {
    TYPES_TABLE
        .split(['(', ',', '\n'])
        .map(str::trim)
        .filter_map(|part| part.split_whitespace().next())
        .filter(|word| word.starts_with("t_") || *word == "id")
        .collect()
}

/// Runs a copy into a channel and returns its position and events.
async fn copy_all(decl: &Declaration, tables: &[TableInfo]) -> (Position, Vec<Event>) {
    let (sender, mut receiver) = mpsc::channel(64);
    let which: Vec<usize> = tables.iter().map(|t| t.index).collect();
    let (decl, tables) = (decl.clone(), tables.to_vec());
    let copy = tokio::spawn(async move { mariadb::copy(&decl, &tables, &which, &sender).await });
    let mut events = Vec::new();
    while let Some(event) = receiver.recv().await {
        events.push(event);
    }
    (copy.await.unwrap().unwrap(), events)
}

fn copied_rows(events: &[Event], table: usize) -> Vec<Row> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Rows { table: t, docs } if *t == table => {
                Some(docs.iter().map(|doc| decoded(doc)).collect::<Vec<_>>())
            }
            _ => None,
        })
        .flatten()
        .collect()
}

fn compare_rows(what: &str, got: &Row, want: &Value) {
    let want = want.as_object().unwrap();
    assert_eq!(got.keys().collect::<Vec<_>>(), want.keys().collect::<Vec<_>>(), "{what}: columns");
    for (name, value) in want {
        assert_eq!(got.get(name), Some(value), "{what}: column {name}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copy_maps_every_type_and_the_binlog_maps_them_the_same() {
    let server = MariaDb::start();
    server.sql(&format!("{TYPES_TABLE}; {TYPES_ROWS};"));
    let decl = declaration(&server, json!([{ "table": "types" }]));
    let tables = mariadb::inspect(&decl).await.unwrap();
    let (position, events) = copy_all(&decl, &tables).await;
    assert_eq!(position, gtid_position(&server));
    assert_eq!(events.first(), Some(&Event::CopyPoint { position: position.clone() }), "the point first");
    assert!(matches!(events.get(1), Some(Event::CopyStart { table: 0, .. })), "{events:?}");
    assert_eq!(events.last(), Some(&Event::CopyDone { table: 0 }));
    let mut copied = copied_rows(&events, 0);
    copied.sort_by_key(|r| r["id"].as_i64());
    let expected = expected_types();
    assert_eq!(copied.len(), expected.len());
    for (got, want) in copied.iter().zip(&expected) {
        compare_rows(&format!("copied row {}", want["id"]), got, want);
    }

    // The same values through the binlog: copies of the rows under new ids.
    let mut follower = Follower::start(&decl, &tables, position);
    let columns = expected_types_names()[1..].join(", ");
    server.sql(&format!("INSERT INTO types SELECT id + 100, {columns} FROM types ORDER BY id"));
    let (changes, _, _) = follower.transaction().await;
    assert_eq!(changes.len(), 3);
    for (change, want) in changes.iter().zip(&expected) {
        let ChangeKind::Insert(got) = &change.kind else { panic!("{change:?}") };
        let mut want = want.clone();
        want["id"] = json!(want["id"].as_i64().unwrap() + 100);
        compare_rows(&format!("streamed row {}", want["id"]), got, &want);
    }
    follower.stop();

    // The options: decimals as text, times as epoch seconds.
    let mut other = decl.clone();
    other.options.numeric = hotset_sync::source::NumericMode::String;
    other.options.time = hotset_sync::source::TimeMode::Epoch;
    let (_, events) = copy_all(&other, &tables).await;
    let first = copied_rows(&events, 0).into_iter().find(|r| r["id"] == 1).unwrap();
    assert_eq!(first["t_dec"], "1234567890.1250");
    assert_eq!(first["t_date"], 1714521600);
    assert_eq!(first["t_datetime"], 1714566605.25);
    assert_eq!(first["t_time"], "-26:03:04.500000");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_copy_position_splits_writes_without_gap_or_duplicate() {
    let server = MariaDb::start();
    server.sql(
        "CREATE TABLE items (id INT PRIMARY KEY, note VARCHAR(40), extra INT); \
         INSERT INTO items SELECT seq, 'before', seq FROM seq_1_to_20000;",
    );
    // Only the declared columns (and the key) are copied.
    let decl = declaration(&server, json!([{ "table": "items", "columns": ["note"] }]));
    let tables = mariadb::inspect(&decl).await.unwrap();
    // A writer commits one row per transaction while the copy runs.
    let writes: String =
        (20_001..=21_000).map(|id| format!("INSERT INTO items VALUES ({id}, 'during', {id});")).collect();
    let (position, events) = std::thread::scope(|scope| {
        let writer = scope.spawn(|| server.sql(&writes));
        let copied =
            tokio::task::block_in_place(|| tokio::runtime::Handle::current().block_on(copy_all(&decl, &tables)));
        writer.join().unwrap();
        copied
    });
    let copied: Vec<Row> = copied_rows(&events, 0);
    assert!(copied.iter().all(|r| r.keys().collect::<Vec<_>>() == ["id", "note"]), "{:?}", copied.first());
    let copied_ids: BTreeSet<i64> = copied.iter().map(|r| r["id"].as_i64().unwrap()).collect();
    assert_eq!(copied_ids.len(), copied.len(), "a row copied twice");
    assert!((1..=20_000).all(|id| copied_ids.contains(&id)));
    let batches = events.iter().filter(|e| matches!(e, Event::Rows { .. })).count();
    assert!(batches >= 20_000 / 4096, "rows come in batches: {batches}");

    let mut follower = Follower::start(&decl, &tables, position);
    let mut streamed = BTreeSet::new();
    let mut last = None;
    while streamed.len() + copied_ids.len() < 21_000 {
        let (changes, position, _) = follower.transaction().await;
        assert_eq!(changes.len(), 1);
        let ChangeKind::Insert(row) = &changes[0].kind else { panic!("{changes:?}") };
        assert_eq!(row.keys().collect::<Vec<_>>(), ["id", "note"]);
        let id = row["id"].as_i64().unwrap();
        assert!(!copied_ids.contains(&id), "row {id} both copied and streamed");
        assert!(streamed.insert(id), "row {id} streamed twice");
        last = Some(position);
    }
    assert_eq!((1..=21_000).filter(|id| !copied_ids.contains(id) && !streamed.contains(id)).count(), 0);
    if let Some(last) = last {
        assert_eq!(last, gtid_position(&server));
    }
    follower.stop();
}

fn update(table: usize, old_key: Option<Value>, value: Value) -> RowChange {
    RowChange { table, kind: ChangeKind::Update { old_key: old_key.map(row), row: row(value), unchanged: vec![] } }
}

fn delete(table: usize, key: Value) -> RowChange {
    RowChange { table, kind: ChangeKind::Delete(row(key)) }
}

/// Expects the next event to be a transaction with these changes, at the server's position.
async fn expect_transaction(follower: &mut Follower, server: &MariaDb, want: Vec<RowChange>) -> Position {
    let (changes, position, progress) = follower.transaction().await;
    assert_eq!(progress, vec![], "progress before {want:?}");
    assert_eq!(changes, want);
    assert_eq!(position, gtid_position(server));
    position
}

async fn expect_progress(follower: &mut Follower, server: &MariaDb) -> Position {
    match follower.next().await {
        Event::Progress { position } => {
            assert_eq!(position, gtid_position(server));
            position
        }
        other => panic!("expected progress, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stream_follows_every_kind_of_change_and_resumes() {
    let server = MariaDb::start();
    server.sql(
        "CREATE TABLE orders (id INT PRIMARY KEY, customer VARCHAR(20), total DECIMAL(10,2)); \
         CREATE TABLE order_lines (order_id INT, line INT, item VARCHAR(20), PRIMARY KEY (order_id, line)); \
         CREATE TABLE other (id INT PRIMARY KEY);",
    );
    let decl = declaration(&server, json!([{ "table": "orders" }, { "table": "app.order_lines" }]));
    let tables = mariadb::inspect(&decl).await.unwrap();
    let (start, _) = copy_all(&decl, &tables).await;
    let mut follower = Follower::start(&decl, &tables, start.clone());
    let mut positions = vec![start];

    server.sql("INSERT INTO orders VALUES (1, 'ann', 10.50)");
    let want = vec![insert(0, json!({ "id": 1, "customer": "ann", "total": 10.5 }))];
    positions.push(expect_transaction(&mut follower, &server, want).await);
    server.sql("UPDATE orders SET total = 12 WHERE id = 1");
    let want = vec![update(0, None, json!({ "id": 1, "customer": "ann", "total": 12 }))];
    positions.push(expect_transaction(&mut follower, &server, want).await);
    server.sql("UPDATE orders SET id = 2 WHERE id = 1");
    let want = vec![update(0, Some(json!({ "id": 1 })), json!({ "id": 2, "customer": "ann", "total": 12 }))];
    positions.push(expect_transaction(&mut follower, &server, want).await);
    let resume_at = positions.len() - 1;

    // One source transaction over both tables is one event, its changes in order.
    server.sql(
        "BEGIN; INSERT INTO orders VALUES (3, 'bo', 1.25); \
         INSERT INTO order_lines VALUES (3, 1, 'pen'), (3, 2, 'ink'); \
         UPDATE order_lines SET line = 5 WHERE order_id = 3 AND line = 2; COMMIT;",
    );
    let multi = vec![
        insert(0, json!({ "id": 3, "customer": "bo", "total": 1.25 })),
        insert(1, json!({ "order_id": 3, "line": 1, "item": "pen" })),
        insert(1, json!({ "order_id": 3, "line": 2, "item": "ink" })),
        update(1, Some(json!({ "order_id": 3, "line": 2 })), json!({ "order_id": 3, "line": 5, "item": "ink" })),
    ];
    positions.push(expect_transaction(&mut follower, &server, multi.clone()).await);
    server.sql("DELETE FROM order_lines WHERE order_id = 3 AND line = 1");
    let want = vec![delete(1, json!({ "order_id": 3, "line": 1 }))];
    positions.push(expect_transaction(&mut follower, &server, want).await);
    server.sql("INSERT INTO other VALUES (1)");
    positions.push(expect_progress(&mut follower, &server).await);
    server.sql("TRUNCATE TABLE order_lines");
    let want = vec![RowChange { table: 1, kind: ChangeKind::Truncate }];
    positions.push(expect_transaction(&mut follower, &server, want).await);

    // DDL: the rows after it carry the new columns.
    server.sql("ALTER TABLE orders ADD COLUMN note VARCHAR(10), ADD COLUMN doc JSON");
    positions.push(expect_progress(&mut follower, &server).await);
    server.sql("INSERT INTO orders VALUES (5, 'cy', 2, 'hi', '{\"k\": [1]}')");
    let want = vec![insert(0, json!({ "id": 5, "customer": "cy", "total": 2, "note": "hi", "doc": { "k": [1] } }))];
    positions.push(expect_transaction(&mut follower, &server, want).await);
    server.sql("ALTER TABLE orders DROP COLUMN customer");
    positions.push(expect_progress(&mut follower, &server).await);
    server.sql("INSERT INTO orders VALUES (6, 3, 'x', NULL)");
    let want = vec![insert(0, json!({ "id": 6, "total": 3, "note": "x", "doc": null }))];
    positions.push(expect_transaction(&mut follower, &server, want).await);
    server.sql("ALTER TABLE orders RENAME COLUMN note TO remark");
    positions.push(expect_progress(&mut follower, &server).await);
    server.sql("UPDATE orders SET remark = 'y' WHERE id = 6");
    let want = vec![update(0, None, json!({ "id": 6, "total": 3, "remark": "y", "doc": null }))];
    positions.push(expect_transaction(&mut follower, &server, want).await);
    follower.stop();

    // Resuming from a returned position repeats nothing and skips nothing: the same
    // events, at the same positions, as the first time.
    let mut resumed = Follower::start(&decl, &tables, positions[resume_at].clone());
    let (changes, position, _) = resumed.transaction().await;
    assert_eq!((changes, &position), (multi, &positions[resume_at + 1]));
    for expected in &positions[resume_at + 2..] {
        let position = match resumed.next().await {
            Event::Transaction { position, .. } | Event::Progress { position } => position,
            other => panic!("{other:?}"),
        };
        assert_eq!(&position, expected);
    }
    resumed.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_source_is_transient_and_the_stream_resumes_after_it() {
    let mut server = MariaDb::start();
    server.sql("CREATE TABLE items (id INT PRIMARY KEY)");
    let decl = declaration(&server, json!([{ "table": "items" }]));
    let tables = mariadb::inspect(&decl).await.unwrap();
    let (start, _) = copy_all(&decl, &tables).await;
    let mut follower = Follower::start(&decl, &tables, start);
    server.sql("INSERT INTO items VALUES (1)");
    let at = expect_transaction(&mut follower, &server, vec![insert(0, json!({ "id": 1 }))]).await;
    tokio::task::block_in_place(|| server.stop());
    let error = follower.error().await;
    assert_eq!(error.kind, ErrorKind::Transient, "{error}");
    // While it is down, a new stream fails the same way (connection refused).
    let refused = Follower::start(&decl, &tables, at.clone()).error().await;
    assert_eq!(refused.kind, ErrorKind::Transient, "{refused}");
    tokio::task::block_in_place(|| server.restart());
    let mut follower = Follower::start(&decl, &tables, at);
    server.sql("INSERT INTO items VALUES (2)");
    expect_transaction(&mut follower, &server, vec![insert(0, json!({ "id": 2 }))]).await;
    follower.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_purged_position_is_lost() {
    let server = MariaDb::start();
    server.sql("CREATE TABLE items (id INT PRIMARY KEY); INSERT INTO items VALUES (1);");
    let decl = declaration(&server, json!([{ "table": "items" }]));
    let tables = mariadb::inspect(&decl).await.unwrap();
    let old = gtid_position(&server);
    server.sql("INSERT INTO items VALUES (2); FLUSH BINARY LOGS; INSERT INTO items VALUES (3); FLUSH BINARY LOGS;");
    // A binlog is purged only once the engine no longer needs it for crash recovery (its
    // checkpoint comes a moment after the flush): purge until only the last one is left.
    let deadline = std::time::Instant::now() + EVENT_WAIT_MAX;
    while server.sql("PURGE BINARY LOGS TO 'binlog.000003'; SHOW BINARY LOGS").lines().count() > 1 {
        assert!(
            std::time::Instant::now() < deadline,
            "the binlogs were not purged: {}",
            server.sql("SHOW BINARY LOGS")
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let error = Follower::start(&decl, &tables, old).error().await;
    assert_eq!(error.kind, ErrorKind::Lost, "{error}");
    assert!(error.message.contains("resync"), "{error}");
    // The current position still streams.
    let mut follower = Follower::start(&decl, &tables, gtid_position(&server));
    server.sql("INSERT INTO items VALUES (4)");
    expect_transaction(&mut follower, &server, vec![insert(0, json!({ "id": 4 }))]).await;
    follower.stop();
}

#[test]
fn positions_pass_through_gtid_lists() {
    let position = Position::parse("0-1-5,2-3-9").unwrap();
    let next = position.with_gtid(Gtid { domain: 0, server: 1, sequence: 6 });
    assert_eq!(next.to_string(), "0-1-6,2-3-9");
}

/// The stream takes a connection that says nothing for 10 s for dead; an idle source
/// must keep it alive with heartbeats. (The wait is the point of the test, not a sync.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_source_keeps_the_stream_alive() {
    let server = MariaDb::start();
    server.sql("CREATE TABLE items (id INT PRIMARY KEY)");
    let decl = declaration(&server, json!([{ "table": "items" }]));
    let tables = mariadb::inspect(&decl).await.unwrap();
    let mut follower = Follower::start(&decl, &tables, gtid_position(&server));
    tokio::time::sleep(Duration::from_secs(12)).await;
    assert!(!follower.task.is_finished(), "the idle stream failed: {:?}", follower.task.await);
    server.sql("INSERT INTO items VALUES (1)");
    expect_transaction(&mut follower, &server, vec![insert(0, json!({ "id": 1 }))]).await;
    follower.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn full_row_identity_and_several_gtid_domains() {
    let server = MariaDb::start();
    server.sql("CREATE TABLE loose (a INT, b INT, c INT)");
    let decl = declaration(&server, json!([{ "table": "loose", "full_row_identity": true, "columns": ["a", "b"] }]));
    let tables = mariadb::inspect(&decl).await.unwrap();
    assert_eq!(tables[0].key, ["a", "b"]);
    let (start, _) = copy_all(&decl, &tables).await;
    let mut follower = Follower::start(&decl, &tables, start);
    server.sql("INSERT INTO loose VALUES (1, 2, 9)");
    expect_transaction(&mut follower, &server, vec![insert(0, json!({ "a": 1, "b": 2 }))]).await;
    // A write in another replication domain: the position lists both domains.
    server.sql("SET SESSION gtid_domain_id = 5; UPDATE loose SET b = 3");
    let want = vec![update(0, Some(json!({ "a": 1, "b": 2 })), json!({ "a": 1, "b": 3 }))];
    let two_domains = expect_transaction(&mut follower, &server, want).await;
    let Position::Gtid(list) = &two_domains else { panic!("{two_domains}") };
    assert_eq!(list.iter().map(|g| g.domain).collect::<Vec<_>>(), [0, 5]);
    // A change of a column outside the declaration still is a change of the row.
    server.sql("UPDATE loose SET c = 10");
    let want = vec![update(0, None, json!({ "a": 1, "b": 3 }))];
    expect_transaction(&mut follower, &server, want).await;
    follower.stop();
    let mut resumed = Follower::start(&decl, &tables, two_domains);
    server.sql("DELETE FROM loose");
    let (changes, _, _) = resumed.transaction().await;
    assert_eq!(
        changes[0].kind,
        ChangeKind::Update { old_key: None, row: row(json!({ "a": 1, "b": 3 })), unchanged: vec![] }
    );
    let (changes, position, _) = resumed.transaction().await;
    assert_eq!(changes, vec![delete(0, json!({ "a": 1, "b": 3 }))]);
    assert_eq!(position, gtid_position(&server));
    resumed.stop();
}

/// A copied document as its row, checked to be in the engine's stored form already
/// (minified, columns in order: what encoding the row again gives byte for byte).
fn decoded(doc: &[u8]) -> Row {
    let row: Row = serde_json::from_slice(doc).expect("a copied document is JSON");
    assert_eq!(serde_json::to_vec(&row).unwrap(), doc, "a copied document is in its stored form");
    row
}
