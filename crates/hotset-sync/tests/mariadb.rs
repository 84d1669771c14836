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
                Event::Transaction { changes, position, commit_time_ms } => {
                    assert!(commit_time_ms.is_some_and(|ms| ms > 1_600_000_000_000), "{commit_time_ms:?}");
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
