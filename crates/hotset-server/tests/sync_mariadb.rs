//! Live sync from MariaDB, black box (issue 16): a throwaway MariaDB 10.11
//! (hotset-testkit's `MariaDb`, row binlog with GTIDs) and the real `hotset` binary, each
//! test with its own of both in temporary folders. The core set of `sync_pg.rs`: the copy
//! of every mapped type (and the binlog mapping them alike), the random mix compared in
//! full with a reader checking atomicity, kill -9 during the copy and during the stream,
//! the source stopped, waiting for a GTID position, and bad declarations.
//!
//! The scenarios and the comparison are shared with PostgreSQL in `common/sync.rs`.
//! Kill -9 runs `HOTSET_SYNC_CRASH_CYCLES` cycles (default 10); `HOTSET_SYNC_SEED` replays
//! a random run.

mod common;

use common::sync::{self, SOURCE, Source, assert_refused, declaration, declare, header_position, status};
use common::{Server, curl_full};
use hotset_testkit::mariadb::{DATABASE, MariaDb, PASSWORD};
use serde_json::{Value, json};

/// Rows of the kill-during-copy table: enough for the copy to take a while.
const COPY_ROWS: u64 = 200_000;

fn table(name: &str) -> Value {
    json!([{"table": format!("{DATABASE}.{name}"), "namespace": name}])
}

fn start_server() -> (tempfile::TempDir, Server) {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    (dir, server)
}

const TYPES_TABLE: &str = "CREATE TABLE types (
    id INT PRIMARY KEY,
    t_tiny TINYINT, t_bool BOOL, t_small SMALLINT UNSIGNED, t_medium MEDIUMINT, t_int INT UNSIGNED,
    t_big BIGINT, t_ubig BIGINT UNSIGNED,
    t_dec DECIMAL(20,4), t_dec_big DECIMAL(38,10), t_double DOUBLE,
    t_char CHAR(10), t_varchar VARCHAR(100), t_text TEXT,
    t_enum ENUM('red','green','blue'), t_blob BLOB,
    t_date DATE, t_time TIME(3), t_datetime DATETIME(6), t_timestamp TIMESTAMP(6) NULL,
    t_json JSON, t_uuid UUID)";

const TYPES_ROWS: &str = "INSERT INTO types VALUES
    (1, -128, 1, 65535, -8388608, 4294967295, -9223372036854775808, 18446744073709551615,
     '1234567890.1250', '1234567890123456789012345678.0123456789', 3.141592653589793,
     'abc', 'héllo wörld ✓', 'a longer text', 'green', x'deadbeef',
     '2024-05-01', '-26:03:04.500', '2024-05-01 12:30:05.250000', '2024-05-01 12:30:05.000001',
     '{\"a\":[1,2,{\"b\":null}],\"c\":\"d\"}', '6ccd780c-baba-1026-9564-5b8c656024db'),
    (2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
     NULL, NULL, NULL, NULL, NULL)";

/// Row 1 as the type mapping makes it (the same as the driver's tests expect): exact
/// decimals as numbers when a double holds them, else text; DATETIME and TIMESTAMP in UTC
/// with `Z`; BLOB in base64; JSON nested.
fn typed_row() -> Value {
    json!({
        "id": 1, "t_tiny": -128, "t_bool": 1, "t_small": 65535, "t_medium": -8388608, "t_int": 4294967295u64,
        "t_big": i64::MIN, "t_ubig": u64::MAX,
        "t_dec": 1234567890.125, "t_dec_big": "1234567890123456789012345678.0123456789",
        "t_double": std::f64::consts::PI,
        "t_char": "abc", "t_varchar": "héllo wörld ✓", "t_text": "a longer text", "t_enum": "green",
        "t_blob": "3q2+7w==", "t_date": "2024-05-01", "t_time": "-26:03:04.500000",
        "t_datetime": "2024-05-01T12:30:05.250000Z", "t_timestamp": "2024-05-01T12:30:05.000001Z",
        "t_json": {"a": [1, 2, {"b": null}], "c": "d"}, "t_uuid": "6ccd780c-baba-1026-9564-5b8c656024db"
    })
}

fn null_row(id: i64) -> Value {
    let mut row = typed_row();
    for (name, value) in row.as_object_mut().unwrap() {
        *value = if name == "id" { json!(id) } else { Value::Null };
    }
    row
}

fn by_id(mut docs: Vec<Value>) -> Vec<Value> {
    docs.sort_by_key(|doc| doc["id"].as_i64());
    docs
}

#[test]
fn the_copy_maps_every_type_field_by_field_and_the_binlog_alike() {
    let db = MariaDb::start();
    db.sql(&format!("{TYPES_TABLE}; {TYPES_ROWS};"));
    let (_dir, server) = start_server();
    let declared = declare(&server, &declaration(&db, table("types")));
    assert_eq!(declared["kind"], "mysql", "{declared}");
    sync::wait_streaming(&server);
    assert_eq!(by_id(sync::documents(&server, "types")), vec![typed_row(), null_row(2)]);

    let columns: Vec<String> = typed_row().as_object().unwrap().keys().filter(|k| *k != "id").cloned().collect();
    let columns = columns.iter().map(|c| format!("`{c}`")).collect::<Vec<_>>().join(", ");
    db.sql(&format!("INSERT INTO types SELECT id + 100, {columns} FROM types"));
    let position = db.position();
    let response = sync::wait_applied(&server, "types", &position);
    let seen = header_position(&response, SOURCE).unwrap();
    assert!(seen.split('-').count() >= 3, "a GTID position: {seen}");
    let mut streamed = typed_row();
    streamed["id"] = json!(101);
    assert_eq!(by_id(sync::documents(&server, "types")), vec![typed_row(), null_row(2), streamed, null_row(102)]);

    let status = status(&server, SOURCE);
    assert_eq!(status["kind"], "mysql");
    assert_eq!(status["url"], db.url().replace(PASSWORD, "***"));
    assert!(sync::reached(status["position"].as_str().unwrap(), &position), "{status}");
    assert!(status["lag_bytes"].is_null(), "MariaDB says no log end: {status}");
}

#[test]
fn random_mix_equals_the_source_and_no_transaction_is_half_visible() {
    let db = MariaDb::start();
    let (_dir, server) = sync::random_mix(&db, 30);
    sync::assert_composite_key(&server, "order_lines", &["order_id", "line"]);
}

#[test]
fn kill_9_during_the_copy_resumes_and_ends_equal() {
    let db = MariaDb::start();
    sync::crash_during_copy(&db, COPY_ROWS, sync::crash_cycles());
}

#[test]
fn kill_9_during_the_stream_never_skips_or_repeats_a_change() {
    let db = MariaDb::start();
    sync::crash_during_stream(&db, sync::crash_cycles());
}

#[test]
fn the_source_stopped_reads_go_on_and_everything_catches_up() {
    let mut db = MariaDb::start();
    sync::source_stopped(&mut db);
}

#[test]
fn a_query_after_a_gtid_sees_the_write_at_once() {
    let db = MariaDb::start();
    db.sql("CREATE TABLE people (id INT PRIMARY KEY, name VARCHAR(20))");
    let (_dir, server) = start_server();
    declare(&server, &declaration(&db, table("people")));
    sync::wait_streaming(&server);
    db.sql("INSERT INTO people VALUES (1, 'ann')");
    let gtid = db.position();
    let path = format!("/api/v1/namespaces/people/items/1?after={SOURCE}:{gtid}");
    let response = curl_full(&server, "GET", &path, None);
    assert_eq!((response.status, response.json()), (200, json!({"id": 1, "name": "ann"})), "{}", response.body);
    db.sql("INSERT INTO people VALUES (2, 'bo')");
    let body =
        json!({"filter": [{"field": "id", "op": "=", "value": 2}], "after": {SOURCE: db.position()}}).to_string();
    let response = curl_full(&server, "POST", "/api/v1/namespaces/people/query", Some(body.as_bytes()));
    assert_eq!(response.json()["items"], json!([{"id": 2, "name": "bo"}]), "{}", response.body);
    // A position past the last change of the followed tables is reached by the stream
    // passing it (heartbeats count).
    db.sql("CREATE TABLE elsewhere (id INT PRIMARY KEY); INSERT INTO elsewhere VALUES (1)");
    sync::wait_applied(&server, "people", &db.position());
    // Far ahead: 504 at the query's time limit.
    let far = json!({"timeout_ms": 300, "after": {SOURCE: "0-1-999999999"}}).to_string();
    let response = curl_full(&server, "POST", "/api/v1/namespaces/people/query", Some(far.as_bytes()));
    assert_eq!((response.status, response.json()["code"].clone()), (504, json!("timeout")), "{}", response.body);
}

#[test]
fn bad_declarations_are_refused_naming_the_cause_and_create_nothing() {
    let db = MariaDb::start();
    db.sql("CREATE TABLE keyed (id INT PRIMARY KEY, v TEXT); CREATE TABLE loose (v TEXT)");
    let (_dir, server) = start_server();
    let keyed = table("keyed");
    let mut wrong = declaration(&db, keyed.clone());
    wrong["url"] = json!(db.url_as(hotset_testkit::mariadb::USER, "wrong-pw"));
    assert_refused(&server, &wrong, "password");
    assert_refused(&server, &declaration(&db, table("missing")), "does not exist");
    assert_refused(&server, &declaration(&db, table("loose")), "primary key");
    db.sql("CREATE USER 'reader'@'%' IDENTIFIED BY 'pw'; GRANT SELECT ON *.* TO 'reader'@'%';");
    let mut reader = declaration(&db, keyed.clone());
    reader["url"] = json!(db.url_as("reader", "pw"));
    assert_refused(&server, &reader, "REPLICATION");
    // Global settings reach new sessions only; each declaration connects anew.
    for (setting, bad, good) in [("binlog_format", "STATEMENT", "ROW"), ("binlog_row_image", "MINIMAL", "FULL")] {
        db.sql(&format!("SET GLOBAL {setting} = '{bad}'"));
        assert_refused(&server, &declaration(&db, keyed.clone()), setting);
        db.sql(&format!("SET GLOBAL {setting} = '{good}'"));
    }
    declare(&server, &declaration(&db, keyed.clone()));
    let again = curl_full(&server, "POST", "/api/v1/sources", Some(declaration(&db, keyed).to_string().as_bytes()));
    assert_eq!(again.status, 409, "a name taken: {}", again.body);
    sync::wait_streaming(&server);
}

#[test]
fn a_followed_table_dropped_or_renamed_fails_the_source_naming_it_and_keeps_what_was_applied() {
    let db = MariaDb::start();
    db.sql("CREATE TABLE kept (id INT PRIMARY KEY, v INT); INSERT INTO kept VALUES (1, 1), (2, 2);");
    let (_dir, server) = start_server();
    declare(&server, &declaration(&db, table("kept")));
    sync::wait_streaming(&server);
    db.sql("UPDATE kept SET v = 10 WHERE id = 1");
    sync::wait_applied(&server, "kept", &db.position());
    // A table nobody follows may come and go.
    db.sql("CREATE TABLE other (id INT PRIMARY KEY); DROP TABLE other; CREATE TABLE t2 (id INT PRIMARY KEY)");
    db.sql("RENAME TABLE t2 TO t3");
    sync::wait_applied(&server, "kept", &db.position());
    assert_eq!(sync::status(&server, SOURCE)["state"], "streaming");

    db.sql("RENAME TABLE kept TO kept_old");
    let failed = sync::wait_status(&server, "the source failing", |s| s["state"] == "failed");
    let message = failed["last_error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("kept") && message.contains("dropped or renamed"), "{failed}");
    let docs = by_id(sync::documents(&server, "kept"));
    assert_eq!(docs, vec![json!({"id": 1, "v": 10}), json!({"id": 2, "v": 2})], "what was applied stays");
}
