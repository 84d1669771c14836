//! Live sync from PostgreSQL, black box (issue 16): a throwaway PostgreSQL 15
//! (hotset-testkit's `Postgres`, run as the `postgres` user) and the real `hotset` binary,
//! each test with its own of both in temporary folders. Through the sources API (HTTP and
//! the config file): the initial copy of every mapped type, a random mix of transactions
//! compared in full with a reader checking atomicity, kill -9 of the server during the
//! copy and during the stream, the source stopped, DDL, a table added later, TOAST,
//! waiting for a position, read-only namespaces, status and `INFO sources`, bad
//! declarations, and DELETE.
//!
//! The shared scenarios and the one comparison of a namespace with its table are in
//! `common/sync.rs`. Kill -9 runs `HOTSET_SYNC_CRASH_CYCLES` cycles (default 10);
//! `HOTSET_SYNC_SEED` replays a random run.

mod common;

use common::sync::{self, SOURCE, Source, assert_refused, assert_same, declaration, declare, header_position, status};
use common::{Server, curl_full, redis_cli};
use hotset_testkit::postgres::Postgres;
use serde_json::{Value, json};

/// Rows of the kill-during-copy table: enough for the copy to take a while.
const COPY_ROWS: u64 = 200_000;

fn table(name: &str) -> Value {
    json!([{"table": format!("public.{name}"), "namespace": name}])
}

fn start_server() -> (tempfile::TempDir, Server) {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    (dir, server)
}

/// A table with a column of every mapped type: one row with a value in each, one with
/// NULL in each.
const TYPES: &str = "CREATE TYPE mood AS ENUM ('sad', 'happy');
    CREATE TABLE items (
      id bigint PRIMARY KEY, small smallint, flag boolean, price numeric(12,2), big numeric,
      ratio double precision, name text, code char(3), tag varchar(10), uid uuid, born date,
      at timestamp, atz timestamptz, clock time, raw bytea, feeling mood, doc jsonb, plain json,
      tags text[], grid int[], nothing text);
    INSERT INTO items VALUES (1, -2, true, 12.50, 123456789012345678901234567890, 0.25, 'añb\tc\\d''q',
      'ab', 'x', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '2024-02-29', '2024-02-29 12:30:00.5',
      '2024-02-29 12:30:00+02', '08:15:00', '\\x00ff', 'happy', '{\"a\": [1, null], \"b\": {\"c\": \"d\"}}',
      '[true]', ARRAY['x y', NULL], '{{1,2},{3,4}}', NULL);
    INSERT INTO items (id) VALUES (2);";

/// Row 1 of `TYPES` as the issue's type mapping makes it (the defaults: numeric exact,
/// times RFC 3339): an exact decimal as a number, one no double holds as text, timestamps
/// in UTC with `Z`, bytea in base64, JSON nested, arrays as arrays, NULL as null.
fn typed_row() -> Value {
    json!({
        "id": 1, "small": -2, "flag": true, "price": 12.5, "big": "123456789012345678901234567890",
        "ratio": 0.25, "name": "añb\tc\\d'q", "code": "ab ", "tag": "x",
        "uid": "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "born": "2024-02-29",
        "at": "2024-02-29T12:30:00.5Z", "atz": "2024-02-29T10:30:00Z", "clock": "08:15:00",
        "raw": "AP8=", "feeling": "happy", "doc": {"a": [1, null], "b": {"c": "d"}}, "plain": [true],
        "tags": ["x y", null], "grid": [[1, 2], [3, 4]], "nothing": null
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
fn the_copy_maps_every_type_field_by_field_and_the_stream_alike() {
    let pg = Postgres::start();
    pg.app(TYPES);
    let (_dir, server) = start_server();
    let declared = declare(&server, &declaration(&pg, table("items")));
    assert_eq!(declared["name"], SOURCE, "{declared}");
    sync::wait_streaming(&server);
    let docs = by_id(sync::documents(&server, "items"));
    assert_eq!(docs, vec![typed_row(), null_row(2)]);

    // The stream maps a row as the copy did.
    pg.app(
        "INSERT INTO items SELECT 3, small, flag, price, big, ratio, name, code, tag, uid, born, at, atz, clock, raw, \
         feeling, doc, plain, tags, grid, nothing FROM items WHERE id = 1;
         UPDATE items SET name = 'second' WHERE id = 2",
    );
    sync::wait_applied(&server, "items", &pg.position());
    let mut third = typed_row();
    third["id"] = json!(3);
    let mut second = null_row(2);
    second["name"] = json!("second");
    assert_eq!(by_id(sync::documents(&server, "items")), vec![typed_row(), second, third]);
}

#[test]
fn value_options_give_numeric_as_text_and_times_as_epoch() {
    let pg = Postgres::start();
    pg.app(TYPES);
    let (_dir, server) = start_server();
    let mut body = declaration(&pg, table("items"));
    body["options"] = json!({"numeric": "string", "time": "epoch"});
    declare(&server, &body);
    sync::wait_streaming(&server);
    let doc = by_id(sync::documents(&server, "items")).remove(0);
    assert_eq!(doc["price"], json!("12.50"));
    assert_eq!(doc["big"], json!("123456789012345678901234567890"));
    assert_eq!(sync::normalise(&doc["at"]), json!(1709209800.5));
    assert_eq!(sync::normalise(&doc["atz"]), json!(1709202600));
    assert_eq!(sync::normalise(&doc["born"]), json!(1709164800), "a date: the epoch seconds of its midnight UTC");
    assert_eq!(doc["clock"], json!("08:15:00"), "times of day stay text");

    let mut double = declaration(&pg, json!([{"table": "public.items", "namespace": "items_double"}]));
    double["name"] = json!("doubles");
    double["options"] = json!({"numeric": "double"});
    declare(&server, &double);
    sync::wait_for("the doubles source to stream", || {
        let status = status(&server, "doubles");
        if sync::is_streaming(&status) { Ok(()) } else { Err(status.to_string()) }
    });
    let doc = by_id(sync::documents(&server, "items_double")).remove(0);
    assert_eq!(doc["price"], json!(12.5));
    assert_eq!(doc["big"], json!(1.2345678901234568e29));
}

#[test]
fn status_headers_and_info_report_the_source() {
    let pg = Postgres::start();
    pg.app("CREATE TABLE people (id int PRIMARY KEY, name text); INSERT INTO people VALUES (1, 'ann'), (2, 'bo');");
    let (_dir, server) = start_server();
    declare(&server, &declaration(&pg, table("people")));
    sync::wait_streaming(&server);
    pg.app("UPDATE people SET name = 'anne' WHERE id = 1");
    let position = pg.position();
    sync::wait_applied(&server, "people", &position);

    let status = status(&server, SOURCE);
    assert_eq!(status["name"], SOURCE);
    assert_eq!(status["kind"], "postgres");
    assert_eq!(status["url"], pg.url().replace(hotset_testkit::postgres::PASSWORD, "***"), "the password is hidden");
    assert!(!status.to_string().contains(hotset_testkit::postgres::PASSWORD), "the password leaks: {status}");
    assert_eq!(status["state"], "streaming");
    let at = status["position"].as_str().unwrap_or_else(|| panic!("no position: {status}"));
    assert!(sync::reached(at, &position), "status position {at} before {position}");
    assert!(status["lag_ms"].is_u64() || status["lag_ms"].is_null(), "{status}");
    assert!(status["pending_events"].is_u64(), "{status}");
    assert!(status["lag_bytes"].is_u64(), "PostgreSQL reports its WAL end: {status}");
    assert!(status["transactions"].as_u64().is_some_and(|n| n >= 1), "{status}");
    assert!(status["last_error"].is_null(), "{status}");
    let tables = status["tables"].as_array().unwrap();
    assert_eq!(tables.len(), 1, "{status}");
    assert_eq!(
        (&tables[0]["table"], &tables[0]["namespace"], &tables[0]["state"]),
        (&json!("public.people"), &json!("people"), &json!("copied"))
    );
    assert_eq!(tables[0]["rows_copied"], 2);
    assert!(tables[0]["estimated_rows"].is_u64(), "{status}");
    let listed = curl_full(&server, "GET", "/api/v1/sources", None);
    assert_eq!(listed.status, 200);
    assert_eq!(listed.json()["sources"].as_array().map(Vec::len), Some(1), "{}", listed.body);
    assert_eq!(listed.json()["sources"][0]["name"], SOURCE);
    assert_eq!(curl_full(&server, "GET", "/api/v1/sources/nope", None).status, 404);

    // Every kind of read says how fresh it is.
    let reads = [
        curl_full(&server, "GET", "/api/v1/namespaces/people/items/1", None),
        curl_full(&server, "POST", "/api/v1/namespaces/people/query", Some(b"{}")),
        curl_full(&server, "POST", "/api/v1/sql", Some(b"SELECT * FROM people")),
    ];
    for read in &reads {
        assert_eq!(read.status, 200, "{}", read.body);
        let seen = header_position(read, SOURCE).unwrap_or_else(|| panic!("no position header: {:?}", read.headers));
        assert!(sync::reached(&seen, &position), "{seen} before {position}");
    }
    assert_eq!(reads[0].json()["name"], "anne");

    // Over RESP, DOC.QUERY's answer carries the positions and its DSL takes "after".
    pg.app("UPDATE people SET name = 'bob' WHERE id = 2");
    let position = pg.position();
    let query = json!({"after": {SOURCE: position}, "filter": {"field": "id", "op": "=", "value": 2}});
    let answer: String =
        redis::cmd("DOC.QUERY").arg("people").arg(query.to_string()).query(&mut server.client()).expect("DOC.QUERY");
    let answer: serde_json::Value = serde_json::from_str(&answer).unwrap();
    assert_eq!(answer["items"][0]["name"], "bob", "the query waited for the update: {answer}");
    let seen = answer["positions"][SOURCE].as_str().unwrap_or_else(|| panic!("no positions: {answer}"));
    assert!(sync::reached(seen, &position), "{seen} before {position}");
    // DOC.SQL's and DOC.SEARCH's answers carry them too (what Python's sql() and search()
    // hand back as Result.positions).
    let answer: String =
        redis::cmd("DOC.SQL").arg("SELECT * FROM people").query(&mut server.client()).expect("DOC.SQL");
    let answer: serde_json::Value = serde_json::from_str(&answer).unwrap();
    assert_eq!(answer["items"].as_array().map(Vec::len), Some(2), "{answer}");
    let seen = answer["positions"][SOURCE].as_str().unwrap_or_else(|| panic!("no positions: {answer}"));
    assert!(sync::reached(seen, &position), "{seen} before {position}");
    let index = br#"{"name": "words", "field": "name", "index": "text"}"#;
    let added = curl_full(&server, "POST", "/api/v1/namespaces/people/indexes", Some(index));
    assert!(added.status == 200 || added.status == 201, "a client may index a synced namespace: {}", added.body);
    let search = json!({"query": "bob", "namespaces": ["people"]});
    let answer: String =
        redis::cmd("DOC.SEARCH").arg(search.to_string()).query(&mut server.client()).expect("DOC.SEARCH");
    let answer: serde_json::Value = serde_json::from_str(&answer).unwrap();
    assert_eq!(answer["items"][0]["id"], 2, "{answer}");
    let seen = answer["positions"][SOURCE].as_str().unwrap_or_else(|| panic!("no positions: {answer}"));
    assert!(sync::reached(seen, &position), "{seen} before {position}");
    // DOC.GET and DOC.SQL wait with AFTER, DOC.SEARCH with "after" in its JSON: each read
    // after an update sees it.
    pg.app("UPDATE people SET name = 'cyd' WHERE id = 2");
    let position = pg.position();
    let after = format!("{SOURCE}:{position}");
    let doc: String = redis::cmd("DOC.GET")
        .arg("people")
        .arg("2")
        .arg("after")
        .arg(&after)
        .query(&mut server.client())
        .expect("DOC.GET AFTER");
    assert!(doc.contains(r#""name":"cyd""#), "DOC.GET waited for the update: {doc}");
    pg.app("UPDATE people SET name = 'dee' WHERE id = 2");
    let position = pg.position();
    let answer: String = redis::cmd("DOC.SQL")
        .arg("SELECT name FROM people WHERE id = 2")
        .arg("AFTER")
        .arg(format!("{SOURCE}:{position}"))
        .query(&mut server.client())
        .expect("DOC.SQL AFTER");
    assert!(answer.contains(r#""name":"dee""#), "DOC.SQL waited for the update: {answer}");
    pg.app("UPDATE people SET name = 'eve' WHERE id = 2");
    let position = pg.position();
    let waiting = json!({"query": "eve", "namespaces": ["people"], "after": {SOURCE: position}});
    let answer: String =
        redis::cmd("DOC.SEARCH").arg(waiting.to_string()).query(&mut server.client()).expect("DOC.SEARCH after");
    let answer: serde_json::Value = serde_json::from_str(&answer).unwrap();
    assert_eq!(answer["items"][0]["id"], 2, "DOC.SEARCH waited for the update: {answer}");
    let refused = |args: &[&str]| {
        let mut command = redis::cmd(args[0]);
        args[1..].iter().for_each(|arg| {
            command.arg(*arg);
        });
        let error = command.query::<Option<String>>(&mut server.client()).expect_err(args[0]);
        format!("{} {}", error.code().unwrap_or("?"), error.detail().unwrap_or(""))
    };
    let unknown = refused(&["DOC.GET", "people", "2", "AFTER", "nope:0/0"]);
    assert!(unknown.starts_with("NOT_FOUND ") && unknown.contains("nope"), "{unknown}");
    let malformed = refused(&["DOC.SQL", "SELECT * FROM people", "AFTER", "app"]);
    assert!(malformed.starts_with("BAD_REQUEST ") && malformed.contains("source:position"), "{malformed}");
    let no_pairs = refused(&["DOC.SQL", "SELECT * FROM people", "BEFORE", "app:0/0"]);
    assert!(no_pairs.starts_with("BAD_REQUEST ") && no_pairs.contains("AFTER"), "{no_pairs}");
    // Over HTTP, the same search says how fresh in its header.
    let path = format!("/api/v1/search?after={SOURCE}:{position}");
    let searched = curl_full(&server, "POST", &path, Some(search.to_string().as_bytes()));
    assert_eq!(searched.status, 200, "{}", searched.body);
    let seen = header_position(&searched, SOURCE).unwrap_or_else(|| panic!("no header: {:?}", searched.headers));
    assert!(sync::reached(&seen, &position), "{seen} before {position}");

    // The same figures on /metrics, labelled by source.
    let metrics = curl_full(&server, "GET", "/metrics", None);
    assert_eq!(metrics.status, 200);
    for family in ["hotset_source_lag_bytes", "hotset_source_pending_events", "hotset_source_transactions_total"] {
        let line = format!("{family}{{source=\"{SOURCE}\"}} ");
        assert!(metrics.body.lines().any(|l| l.starts_with(&line)), "no {line}in /metrics: {}", metrics.body);
    }
    assert!(metrics.body.contains(&format!("hotset_source_state{{source=\"{SOURCE}\",state=\"streaming\"}} 1")));

    let info = redis_cli(&server, &["INFO", "sources"]);
    assert!(info.contains("# Sources"), "{info}");
    let line =
        info.lines().find(|l| l.starts_with("source_app:")).unwrap_or_else(|| panic!("no source_app line: {info}"));
    for field in ["state=streaming", "position=", "lag_ms=", "lag_bytes=", "transactions="] {
        assert!(line.contains(field), "{field} not in {line}");
    }
}

#[test]
fn synced_namespaces_are_read_only_to_clients_but_take_indexes() {
    let pg = Postgres::start();
    pg.app("CREATE TABLE people (id int PRIMARY KEY, name text, age int); INSERT INTO people VALUES (1, 'ann', 30);");
    let (_dir, server) = start_server();
    declare(&server, &declaration(&pg, table("people")));
    sync::wait_streaming(&server);
    let writes: [(&str, &str, &[u8]); 5] = [
        ("POST", "/api/v1/namespaces/people/items", br#"{"id": 9, "name": "x"}"#),
        ("DELETE", "/api/v1/namespaces/people/items/1", b""),
        ("POST", "/api/v1/namespaces/people/truncate", b""),
        ("POST", "/api/v1/namespaces/people/transaction", br#"[{"op": "upsert", "doc": {"id": 9}}]"#),
        ("POST", "/api/v1/sql", b"INSERT INTO people (id, name) VALUES (9, 'x')"),
    ];
    for (method, path, body) in writes {
        let response = curl_full(&server, method, path, (!body.is_empty()).then_some(body));
        assert_eq!(response.status, 409, "{method} {path}: {}", response.body);
        let body = response.json();
        assert_eq!(body["code"], "read_only", "{body}");
        assert!(body["error"].as_str().unwrap().contains(SOURCE), "the error names the source: {body}");
    }
    let error = redis::cmd("DOC.UPSERT")
        .arg("people")
        .arg(r#"{"id": 9, "name": "x"}"#)
        .query::<redis::Value>(&mut server.client())
        .expect_err("a RESP write is refused");
    let text = error.to_string();
    assert!(text.to_uppercase().contains("READ_ONLY") && text.contains(SOURCE), "{text}");

    let index = json!({"name": "by_age", "field": "age", "type": "int", "index": "tree"}).to_string();
    let added = curl_full(&server, "POST", "/api/v1/namespaces/people/indexes", Some(index.as_bytes()));
    assert_eq!(added.status, 201, "an index may be added: {}", added.body);
    pg.app("INSERT INTO people VALUES (2, 'bo', 41)");
    sync::wait_applied(&server, "people", &pg.position());
    let query = json!({"filter": [{"field": "age", "op": ">", "value": 35}]}).to_string();
    let found = curl_full(&server, "POST", "/api/v1/namespaces/people/query", Some(query.as_bytes())).json();
    assert_eq!(found["items"], json!([{"id": 2, "name": "bo", "age": 41}]));
    assert_same(&server, &pg, "people", "people", &["id", "name", "age"], &["id"]);
}

#[test]
fn random_mix_equals_the_source_and_no_transaction_is_half_visible() {
    let pg = Postgres::start();
    let (_dir, server) = sync::random_mix(&pg, 30);
    sync::assert_composite_key(&server, "order_lines", &["order_id", "line"]);
}

#[test]
fn kill_9_during_the_copy_resumes_and_ends_equal() {
    let pg = Postgres::start();
    sync::crash_during_copy(&pg, COPY_ROWS, sync::crash_cycles());
}

#[test]
fn kill_9_during_the_stream_never_skips_or_repeats_a_change() {
    let pg = Postgres::start();
    sync::crash_during_stream(&pg, sync::crash_cycles());
}

#[test]
fn the_source_stopped_reads_go_on_and_everything_catches_up() {
    let mut pg = Postgres::start();
    sync::source_stopped(&mut pg);
}

#[test]
fn added_dropped_and_renamed_columns_follow_in_documents_written_after() {
    let pg = Postgres::start();
    pg.app(
        "CREATE TABLE people (id int PRIMARY KEY, name text, age int);
         INSERT INTO people SELECT g, 'p' || g, g FROM generate_series(1, 5) g;",
    );
    let (_dir, server) = start_server();
    declare(&server, &declaration(&pg, table("people")));
    sync::wait_streaming(&server);
    let get = |id: i64| -> Value {
        let response = curl_full(&server, "GET", &format!("/api/v1/namespaces/people/items/{id}"), None);
        assert_eq!(response.status, 200, "item {id}: {}", response.body);
        response.json()
    };

    pg.app("ALTER TABLE people ADD COLUMN city text");
    pg.app("INSERT INTO people VALUES (10, 'new', 1, 'Oslo'); UPDATE people SET city = 'Bergen' WHERE id = 1");
    sync::wait_applied(&server, "people", &pg.position());
    assert_eq!(get(10), json!({"id": 10, "name": "new", "age": 1, "city": "Oslo"}));
    assert_eq!(get(1), json!({"id": 1, "name": "p1", "age": 1, "city": "Bergen"}));

    pg.app("ALTER TABLE people DROP COLUMN age");
    pg.app("UPDATE people SET name = 'two' WHERE id = 2; INSERT INTO people VALUES (11, 'eleven', 'Rome')");
    sync::wait_applied(&server, "people", &pg.position());
    assert_eq!(get(2), json!({"id": 2, "name": "two", "city": null}));
    assert_eq!(get(11), json!({"id": 11, "name": "eleven", "city": "Rome"}));

    pg.app("ALTER TABLE people RENAME COLUMN name TO full_name");
    pg.app("UPDATE people SET city = 'Lima' WHERE id = 3; INSERT INTO people VALUES (12, 'twelve', NULL)");
    sync::wait_applied(&server, "people", &pg.position());
    assert_eq!(get(3), json!({"id": 3, "full_name": "p3", "city": "Lima"}));
    assert_eq!(get(12), json!({"id": 12, "full_name": "twelve", "city": null}));
    let status = status(&server, SOURCE);
    assert_eq!(status["state"], "streaming", "{status}");
}

#[test]
fn a_type_change_an_index_cannot_take_fails_the_source_naming_it_and_keeps_what_was_applied() {
    let pg = Postgres::start();
    pg.app("CREATE TABLE scores (id int PRIMARY KEY, score int); INSERT INTO scores VALUES (1, 10), (2, 20);");
    let (_dir, server) = start_server();
    let tables = json!([{"table": "public.scores", "indexes": [{"field": "score", "type": "int", "index": "tree"}]}]);
    declare(&server, &declaration(&pg, tables));
    sync::wait_streaming(&server);
    pg.app("UPDATE scores SET score = 11 WHERE id = 1");
    sync::wait_applied(&server, "scores", &pg.position());

    // The column becomes text: the next change's value no longer fits the int index.
    pg.app("ALTER TABLE scores ALTER COLUMN score TYPE text; UPDATE scores SET score = 'high' WHERE id = 2");
    let failed = sync::wait_status(&server, "the source failing", |s| s["state"] == "failed");
    let message = failed["last_error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("namespace scores") && message.contains("resync"), "{failed}");
    assert!(failed["last_error"]["at"].is_string(), "{failed}");
    // What was applied stays, readable; the change that failed is not half there.
    let docs = by_id(sync::documents(&server, "scores"));
    assert_eq!(docs, vec![json!({"id": 1, "score": 11}), json!({"id": 2, "score": 20})]);
    let answer = curl_full(&server, "POST", "/api/v1/sql", Some(b"SELECT * FROM scores WHERE score > 15"));
    assert_eq!(answer.status, 200, "{}", answer.body);
    assert_eq!(answer.json()["items"], json!([{"id": 2, "score": 20}]));
}

#[test]
fn a_table_added_to_the_declaration_later_is_copied_then_streamed() {
    // PUT replaces the declaration: table a keeps its copy and streams on, b is copied.
    let pg = Postgres::start();
    pg.app(
        "CREATE TABLE a (id int PRIMARY KEY, v text); CREATE TABLE b (id int PRIMARY KEY, w int);
         INSERT INTO a SELECT g, 'a' || g FROM generate_series(1, 100) g;
         INSERT INTO b SELECT g, g * 2 FROM generate_series(1, 300) g;",
    );
    let (_dir, server) = start_server();
    declare(&server, &declaration(&pg, table("a")));
    sync::wait_streaming(&server);
    pg.app("UPDATE a SET v = 'changed' WHERE id <= 10");
    sync::wait_applied(&server, "a", &pg.position());

    let before = sync::status(&server, SOURCE)["transactions"].clone();
    pg.app("DELETE FROM a WHERE id = 100; INSERT INTO b VALUES (1000, 0)");
    let both = json!([{"table": "public.a", "namespace": "a"}, {"table": "public.b", "namespace": "b"}]);
    let body = declaration(&pg, both).to_string();
    let response = curl_full(&server, "PUT", &format!("/api/v1/sources/{SOURCE}"), Some(body.as_bytes()));
    assert_eq!(response.status, 200, "{}", response.body);
    let streaming = sync::wait_streaming(&server);
    assert_eq!(streaming["tables"][0]["rows_copied"], 0, "a is not copied again: {streaming}");
    assert!(before.is_u64());
    assert_eq!(streaming["tables"].as_array().map(Vec::len), Some(2), "{streaming}");
    assert_same(&server, &pg, "a", "a", &["id", "v"], &["id"]);
    assert_same(&server, &pg, "b", "b", &["id", "w"], &["id"]);
    pg.app("BEGIN; UPDATE a SET v = 'again' WHERE id = 1; UPDATE b SET w = -1 WHERE id = 1; COMMIT;");
    sync::wait_applied(&server, "b", &pg.position());
    assert_same(&server, &pg, "a", "a", &["id", "v"], &["id"]);
    assert_same(&server, &pg, "b", "b", &["id", "w"], &["id"]);
}

#[test]
fn toast_unchanged_columns_keep_their_value() {
    let pg = Postgres::start();
    // EXTERNAL: out of line and uncompressed, so a few KB are TOASTed and an UPDATE that
    // leaves them alone sends them as "unchanged".
    pg.app(
        "CREATE TABLE docs (id int PRIMARY KEY, n int, big text);
         ALTER TABLE docs ALTER COLUMN big SET STORAGE EXTERNAL;
         INSERT INTO docs SELECT g, 0, repeat(md5(g::text), 200) FROM generate_series(1, 20) g;",
    );
    let (_dir, server) = start_server();
    declare(&server, &declaration(&pg, table("docs")));
    sync::wait_streaming(&server);
    pg.app("INSERT INTO docs SELECT g, 0, repeat(md5(g::text), 150) FROM generate_series(21, 30) g");
    pg.app("UPDATE docs SET n = n + 1 WHERE id % 2 = 0");
    pg.app("UPDATE docs SET id = id + 100, n = n + 1 WHERE id IN (3, 25)");
    pg.app("UPDATE docs SET n = n + 1 WHERE id IN (103, 125)");
    sync::wait_applied(&server, "docs", &pg.position());
    let doc = curl_full(&server, "GET", "/api/v1/namespaces/docs/items/125", None).json();
    assert_eq!(doc["big"].as_str().map(str::len), Some(32 * 150), "{doc}");
    assert_same(&server, &pg, "docs", "docs", &["id", "n", "big"], &["id"]);
}

#[test]
fn a_query_after_a_position_sees_the_write_at_once() {
    let pg = Postgres::start();
    pg.app("CREATE TABLE people (id int PRIMARY KEY, name text)");
    let (_dir, server) = start_server();
    declare(&server, &declaration(&pg, table("people")));
    sync::wait_streaming(&server);
    // Each read is the first after its write and asks for the position read after the
    // commit: it must see the row without any retry.
    let write = |id: i64| -> String {
        pg.app(&format!("INSERT INTO people VALUES ({id}, 'n{id}')"));
        pg.position()
    };
    let lsn = write(1);
    let response = curl_full(&server, "GET", &format!("/api/v1/namespaces/people/items/1?after={SOURCE}:{lsn}"), None);
    assert_eq!((response.status, response.json()["name"].clone()), (200, json!("n1")), "{}", response.body);

    let lsn = write(2);
    let filter = json!({"filter": [{"field": "id", "op": "=", "value": 2}]}).to_string();
    let path = format!("/api/v1/namespaces/people/query?after={SOURCE}:{lsn}");
    let response = curl_full(&server, "POST", &path, Some(filter.as_bytes()));
    assert_eq!(response.json()["items"], json!([{"id": 2, "name": "n2"}]), "{}", response.body);
    assert!(sync::reached(&header_position(&response, SOURCE).unwrap(), &lsn));

    let lsn = write(3);
    let body = json!({"filter": [{"field": "id", "op": "=", "value": 3}], "after": {SOURCE: lsn}}).to_string();
    let response = curl_full(&server, "POST", "/api/v1/namespaces/people/query", Some(body.as_bytes()));
    assert_eq!(response.json()["items"], json!([{"id": 3, "name": "n3"}]), "the DSL's after: {}", response.body);

    let lsn = write(4);
    let path = format!("/api/v1/sql?after={SOURCE}:{lsn}");
    let response = curl_full(&server, "POST", &path, Some(b"SELECT name FROM people WHERE id = 4"));
    assert_eq!(response.json()["items"], json!([{"name": "n4"}]), "{}", response.body);

    // A position past the last change of the published tables (a write elsewhere) is
    // reached by the stream passing it.
    pg.app("CREATE TABLE elsewhere (id int); INSERT INTO elsewhere VALUES (1)");
    let lsn = pg.position();
    sync::wait_applied(&server, "people", &lsn);
}

#[test]
fn a_position_never_reached_times_out_with_504() {
    let pg = Postgres::start();
    pg.app("CREATE TABLE people (id int PRIMARY KEY, name text)");
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &["--query-timeout-ms", "700"]);
    declare(&server, &declaration(&pg, table("people")));
    sync::wait_streaming(&server);
    let future = "FFFFFFFF/0";
    let started = std::time::Instant::now();
    let body = json!({"timeout_ms": 300, "after": {SOURCE: future}}).to_string();
    let response = curl_full(&server, "POST", "/api/v1/namespaces/people/query", Some(body.as_bytes()));
    assert_eq!(response.status, 504, "{}", response.body);
    assert_eq!(response.json()["code"], "timeout", "{}", response.body);
    assert!(started.elapsed() >= std::time::Duration::from_millis(300), "answered before the time limit");
    // The server's own limit when the query sets none.
    let response =
        curl_full(&server, "POST", &format!("/api/v1/sql?after={SOURCE}:{future}"), Some(b"SELECT * FROM people"));
    assert_eq!((response.status, response.json()["code"].clone()), (504, json!("timeout")), "{}", response.body);
    // Over RESP the same: DOC.GET and DOC.SQL with AFTER, DOC.SEARCH with "after".
    let after = format!("{SOURCE}:{future}");
    let mut c = server.client();
    let timed_out = |result: redis::RedisResult<Option<String>>| {
        let error = result.expect_err("a wait past the limit fails");
        assert_eq!(error.code(), Some("TIMEOUT"), "{error}");
    };
    timed_out(redis::cmd("DOC.GET").arg("people").arg("1").arg("AFTER").arg(&after).query(&mut c));
    timed_out(redis::cmd("DOC.SQL").arg("SELECT * FROM people").arg("AFTER").arg(&after).query(&mut c));
    let search = json!({"query": "x", "namespaces": ["people"], "after": {SOURCE: future}});
    timed_out(redis::cmd("DOC.SEARCH").arg(search.to_string()).query(&mut c));
    // A source that does not exist is a bad request, not a wait.
    let response = curl_full(&server, "POST", "/api/v1/namespaces/people/query?after=nope:0/0", Some(b"{}"));
    assert!(matches!(response.status, 400 | 404), "after= an unknown source: {} {}", response.status, response.body);
}

#[test]
fn bad_declarations_are_refused_naming_the_cause_and_create_nothing() {
    let pg = Postgres::start();
    pg.app("CREATE TABLE keyed (id int PRIMARY KEY, v text); CREATE TABLE loose (v text)");
    let (_dir, server) = start_server();
    let keyed = table("keyed");
    let mut wrong = declaration(&pg, keyed.clone());
    wrong["url"] = json!(pg.url().replace(hotset_testkit::postgres::PASSWORD, "wrong-pw"));
    assert_refused(&server, &wrong, "password");
    assert_refused(&server, &declaration(&pg, table("missing")), "does not exist");
    assert_refused(&server, &declaration(&pg, table("loose")), "primary key");
    pg.sql("ALTER ROLE hotset NOREPLICATION");
    assert_refused(&server, &declaration(&pg, keyed.clone()), "REPLICATION");
    pg.sql("ALTER ROLE hotset REPLICATION");
    assert_eq!(pg.admin("SELECT count(*) FROM pg_replication_slots"), "0", "a refused declaration made a slot");
    assert_eq!(pg.admin("SELECT count(*) FROM pg_publication"), "0", "a refused declaration made a publication");

    let low = Postgres::start_with(&[("wal_level", "replica")]);
    low.app("CREATE TABLE keyed (id int PRIMARY KEY, v text)");
    assert_refused(&server, &declaration(&low, keyed.clone()), "wal_level");

    // A name taken: 409, and the first source is untouched.
    declare(&server, &declaration(&pg, keyed.clone()));
    let again = curl_full(&server, "POST", "/api/v1/sources", Some(declaration(&pg, keyed).to_string().as_bytes()));
    assert_eq!(again.status, 409, "{}", again.body);
    sync::wait_streaming(&server);
}

#[test]
fn delete_removes_the_slot_and_publication_and_keeps_the_namespaces() {
    let pg = Postgres::start();
    pg.app("CREATE TABLE people (id int PRIMARY KEY, name text); INSERT INTO people VALUES (1, 'ann');");
    let (_dir, server) = start_server();
    declare(&server, &declaration(&pg, table("people")));
    sync::wait_streaming(&server);
    assert_eq!(pg.admin("SELECT count(*) FROM pg_replication_slots"), "1");
    assert_eq!(pg.admin("SELECT count(*) FROM pg_publication"), "1");

    let deleted = curl_full(&server, "DELETE", &format!("/api/v1/sources/{SOURCE}"), None);
    assert_eq!(deleted.status, 204, "{}", deleted.body);
    assert_eq!(curl_full(&server, "GET", &format!("/api/v1/sources/{SOURCE}"), None).status, 404);
    assert_eq!(curl_full(&server, "GET", "/api/v1/sources", None).json(), json!({"sources": []}));
    assert_eq!(pg.admin("SELECT count(*) FROM pg_replication_slots"), "0", "the slot is left");
    assert_eq!(pg.admin("SELECT count(*) FROM pg_publication"), "0", "the publication is left");
    assert_eq!(curl_full(&server, "DELETE", &format!("/api/v1/sources/{SOURCE}"), None).status, 404);

    // The namespace stays, with its documents, and clients may now write it.
    assert_eq!(sync::documents(&server, "people"), vec![json!({"id": 1, "name": "ann"})]);
    let written = curl_full(&server, "POST", "/api/v1/namespaces/people/items", Some(br#"{"id": 2, "name": "own"}"#));
    assert_eq!(written.status, 200, "a write after DELETE: {}", written.body);
    let read = curl_full(&server, "GET", "/api/v1/namespaces/people/items/2", None);
    assert_eq!(read.json(), json!({"id": 2, "name": "own"}));
    assert!(header_position(&read, SOURCE).is_none(), "no source position after DELETE: {:?}", read.headers);
}

#[test]
fn resync_copies_afresh_and_streams_on() {
    let pg = Postgres::start();
    pg.app(
        "CREATE TABLE people (id int PRIMARY KEY, name text);
         INSERT INTO people SELECT g, 'p' || g FROM generate_series(1, 1000) g;",
    );
    let (_dir, server) = start_server();
    declare(&server, &declaration(&pg, table("people")));
    sync::wait_streaming(&server);
    pg.app("DELETE FROM people WHERE id > 900; UPDATE people SET name = 'x' WHERE id < 10");
    let resync = curl_full(&server, "POST", &format!("/api/v1/sources/{SOURCE}/resync"), None);
    assert_eq!(resync.status, 202, "{}", resync.body);
    let status = sync::wait_status(&server, "the fresh copy done", |status| {
        sync::is_streaming(status) && status["tables"][0]["rows_copied"] == 900
    });
    assert_eq!(status["tables"][0]["rows_copied"], 900, "{status}");
    assert_same(&server, &pg, "people", "people", &["id", "name"], &["id"]);
    pg.app("INSERT INTO people VALUES (5000, 'after')");
    sync::wait_applied(&server, "people", &pg.position());
    assert_same(&server, &pg, "people", "people", &["id", "name"], &["id"]);
    assert_eq!(curl_full(&server, "POST", "/api/v1/sources/nope/resync", None).status, 404);
}

#[test]
fn declared_in_the_config_file_and_followed_after_a_restart_without_it() {
    let pg = Postgres::start();
    pg.app(
        "CREATE TABLE profiles (id int PRIMARY KEY, first_name text, last_name text, secret text);
         INSERT INTO profiles VALUES (1, 'Ann', 'Lee', 's1'), (2, 'Åsa', 'Berg', 's2');",
    );
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("hotset.toml");
    std::fs::write(
        &config,
        format!(
            "[[sources]]\nname = \"{SOURCE}\"\nurl = \"{}\"\n\n[[sources.tables]]\ntable = \"public.profiles\"\n\
             namespace = \"people\"\ncolumns = [\"id\", \"first_name\", \"last_name\"]\n\
             indexes = [ {{ name = \"first_name\", field = \"first_name\", type = \"string\", index = \"tree\", \
             collate = \"utf8_ci\" }} ]\n",
            pg.url()
        ),
    )
    .unwrap();
    let data = dir.path().join("data");
    let server = Server::start(&data, &["--config", config.to_str().unwrap()]);
    sync::wait_streaming(&server);
    assert_same(&server, &pg, "profiles", "people", &["id", "first_name", "last_name"], &["id"]);
    let described = curl_full(&server, "GET", "/api/v1/namespaces/people", None).json();
    assert!(described.to_string().contains("utf8_ci"), "the declared index: {described}");
    let query = json!({"filter": [{"field": "first_name", "op": "=", "value": "åSA"}]}).to_string();
    let found = curl_full(&server, "POST", "/api/v1/namespaces/people/query", Some(query.as_bytes())).json();
    assert_eq!(found["items"], json!([{"id": 2, "first_name": "Åsa", "last_name": "Berg"}]), "utf8_ci finds it");
    server.stop();

    // Changes while Hotset is down; then a restart without the config file resumes.
    pg.app("INSERT INTO profiles VALUES (3, 'Bo', 'Ek', 's3'); UPDATE profiles SET last_name = 'Li' WHERE id = 1");
    let server = Server::start(&data, &[]);
    sync::wait_applied(&server, "people", &pg.position());
    assert_same(&server, &pg, "profiles", "people", &["id", "first_name", "last_name"], &["id"]);
    assert_eq!(status(&server, SOURCE)["state"], "streaming");
}
