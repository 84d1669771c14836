//! The HTTP/JSON API, black box: the real `hotset` binary driven by curl.

mod common;

use common::Server;
use serde_json::{Value, json};

/// Sends one request with curl; returns the status and the body (parsed as JSON when it
/// is JSON, else as a string value).
fn call(server: &Server, method: &str, path: &str, body: Option<&[u8]>) -> (u16, Value) {
    let (status, body) = common::curl(server, method, path, body);
    (status, serde_json::from_str(&body).unwrap_or(Value::String(body)))
}

fn post(server: &Server, path: &str, body: &Value) -> (u16, Value) {
    call(server, "POST", path, Some(body.to_string().as_bytes()))
}

#[test]
fn namespaces_items_and_queries() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    assert_eq!(call(&server, "GET", "/health", None), (200, json!({"status": "ok"})));
    let schema = json!({"name": "items", "indexes": [
        {"field": "id", "type": "int", "index": "hash", "pk": true},
        {"field": "year", "type": "int", "index": "tree"},
        {"field": ["first_name", "last_name"], "type": "string", "index": "tree", "collate": "utf8_ci"},
        {"field": "tags", "type": "string", "index": "hash", "array": true},
    ]});
    let (status, created) = post(&server, "/api/v1/namespaces", &schema);
    assert_eq!(status, 201, "{created}");
    assert_eq!(created["indexes"].as_array().unwrap().len(), 4);
    assert_eq!(post(&server, "/api/v1/namespaces", &schema).0, 409);

    let ndjson: String = (0..100)
        .map(|i| {
            json!({"id": i, "year": 2000 + i % 20, "first_name": if i % 2 == 0 { "Ann" } else { "bob" },
                   "last_name": format!("L{i}"), "tags": [format!("t{}", i % 3)], "extra": {"nested": i}})
            .to_string()
                + "\n"
        })
        .collect();
    assert_eq!(
        call(&server, "POST", "/api/v1/namespaces/items/items", Some(ndjson.as_bytes())),
        (200, json!({"count": 100}))
    );
    let (status, doc) = call(&server, "GET", "/api/v1/namespaces/items/items/7", None);
    assert_eq!((status, doc["extra"]["nested"].clone()), (200, json!(7)));
    assert_eq!(call(&server, "GET", "/api/v1/namespaces/items/items/1000", None).0, 404);

    let query = json!({"filter": [{"field": "year", "op": ">", "value": 2015}, {"field": "tags", "op": "in", "values": ["t0"]}],
                       "sort": "-year", "limit": 3, "total": true,
                       "aggregations": [{"type": "count"}, {"type": "max", "field": "id"}]});
    let (status, result) = post(&server, "/api/v1/namespaces/items/query", &query);
    assert_eq!(status, 200, "{result}");
    let expected: Vec<i64> = {
        let mut ids: Vec<i64> = (0..100).filter(|i| 2000 + i % 20 > 2015 && i % 3 == 0).collect();
        ids.sort_by_key(|i| std::cmp::Reverse(2000 + i % 20));
        ids
    };
    assert_eq!(result["total"], json!(expected.len()));
    let years: Vec<i64> = result["items"].as_array().unwrap().iter().map(|d| d["year"].as_i64().unwrap()).collect();
    assert_eq!(years.len(), 3);
    assert!(years.windows(2).all(|w| w[0] >= w[1]), "{years:?}");
    assert_eq!(result["aggregations"][0], json!({"type": "count", "value": expected.len()}));
    assert_eq!(result["aggregations"][1]["value"], json!(expected.iter().max().unwrap()));
    let (status, found) = post(
        &server,
        "/api/v1/query",
        &json!({"namespace": "items", "filter": {"field": "first_name", "value": "ANN"}, "total": true, "limit": 0}),
    );
    assert_eq!((status, found["total"].clone()), (200, json!(50)), "utf8_ci collation matches ANN to Ann");

    // A write that fails leaves nothing behind: all or nothing.
    let bad = "{\"id\": 500, \"year\": 1}\n{\"id\": 501, \"year\": \"not a number\"}\n";
    let (status, error) = call(&server, "POST", "/api/v1/namespaces/items/items", Some(bad.as_bytes()));
    assert_eq!(status, 400);
    assert_eq!(error["error"], "line 2: field 'year' of index 'year' expects int, got string");
    // In a JSON array the refused document is named by its place.
    let bad = "[{\"id\": 500, \"year\": 1}, {\"id\": 501, \"year\": \"not a number\"}]";
    let (status, error) = call(&server, "POST", "/api/v1/namespaces/items/items", Some(bad.as_bytes()));
    assert_eq!(status, 400);
    assert_eq!(error["error"], "document 2: field 'year' of index 'year' expects int, got string");
    assert_eq!(call(&server, "GET", "/api/v1/namespaces/items/items/500", None).0, 404);
    assert_eq!(call(&server, "POST", "/api/v1/namespaces/items/items?mode=insert", Some(b"{\"id\": 1}")).0, 409);
    assert_eq!(call(&server, "POST", "/api/v1/namespaces/items/items?mode=update", Some(b"{\"id\": 999}")).0, 404);

    assert_eq!(call(&server, "DELETE", "/api/v1/namespaces/items/items/7", None), (200, json!({"deleted": true})));
    assert_eq!(call(&server, "DELETE", "/api/v1/namespaces/items/items/7", None), (200, json!({"deleted": false})));
    let (status, described) = post(
        &server,
        "/api/v1/namespaces/items/indexes",
        &json!({"field": "extra.nested", "type": "int", "index": "tree"}),
    );
    assert_eq!((status, described["indexes"].as_array().unwrap().len()), (201, 5));
    assert_eq!(call(&server, "DELETE", "/api/v1/namespaces/items/indexes/extra.nested", None).0, 200);
    let (status, list) = call(&server, "GET", "/api/v1/namespaces", None);
    assert_eq!((status, list["items"][0]["documents"].clone()), (200, json!(99)));

    let (status, metrics) = call(&server, "GET", "/metrics", None);
    let metrics = metrics.as_str().unwrap().to_string();
    assert_eq!(status, 200);
    assert!(metrics.contains("hotset_namespace_documents{namespace=\"items\"} 99\n"), "{metrics}");
    assert!(metrics.contains("hotset_request_duration_seconds_count{protocol=\"http\"}"), "{metrics}");
    assert!(metrics.contains("hotset_wal_next_lsn "), "{metrics}");
    // The allocator's count holds at least the 99 documents; no limit, nothing evicted.
    let used: f64 = metrics
        .lines()
        .find_map(|line| line.strip_prefix("hotset_memory_used_bytes "))
        .and_then(|value| value.parse().ok())
        .unwrap_or_else(|| panic!("{metrics}"));
    assert!(used > 99.0 * 20.0, "{metrics}");
    assert!(
        metrics.contains("hotset_memory_max_bytes 0\n") && metrics.contains("hotset_evicted_keys_total 0\n"),
        "{metrics}"
    );
    server.stop();

    // Everything came back after the restart.
    let server = Server::start(dir.path(), &[]);
    let (status, result) = post(&server, "/api/v1/query", &json!({"namespace": "items", "total": true, "limit": 1}));
    assert_eq!((status, result["total"].clone()), (200, json!(99)));
    server.stop();
}

/// `POST .../transaction`: mixed operations all together or none, a refused one named by
/// its place, and what is not an operation refused before anything runs.
#[test]
fn transactions_apply_all_or_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let schema = json!({"name": "t", "indexes": [{"field": "id", "type": "int", "index": "hash", "pk": true}]});
    assert_eq!(post(&server, "/api/v1/namespaces", &schema).0, 201);
    let ops = json!([{"op": "insert", "doc": {"id": 1, "a": 1}}, {"op": "upsert", "doc": {"id": 2}}]);
    assert_eq!(post(&server, "/api/v1/namespaces/t/transaction", &ops), (200, json!({"count": 2})));
    let ops = json!([
        {"op": "delete", "key": 1},
        {"op": "update", "doc": {"id": 2, "b": 2}},
        {"op": "insert", "doc": {"id": 2}},
    ]);
    let (status, refused) = post(&server, "/api/v1/namespaces/t/transaction", &ops);
    assert_eq!((status, refused["code"].as_str()), (409, Some("already_exists")), "{refused}");
    assert!(refused["error"].as_str().unwrap().starts_with("operation 3: "), "{refused}");
    assert_eq!(call(&server, "GET", "/api/v1/namespaces/t/items/1", None), (200, json!({"id": 1, "a": 1})));
    assert_eq!(call(&server, "GET", "/api/v1/namespaces/t/items/2", None), (200, json!({"id": 2})));
    for (ops, message) in [
        (
            json!([{"op": "upsert", "doc": {"id": 3}}, {"op": "merge", "doc": {}}]),
            "operation 2: unknown operation 'merge'",
        ),
        (json!([{"op": "delete"}]), "operation 1: \"key\" is required"),
        (json!([{"op": "upsert", "doc": {"id": 3}, "x": 1}]), "operation 1: unknown key 'x'"),
        (json!({"op": "upsert"}), "expected a JSON array of operations"),
    ] {
        let (status, refused) = post(&server, "/api/v1/namespaces/t/transaction", &ops);
        assert_eq!((status, refused["code"].as_str()), (400, Some("bad_request")), "{refused}");
        assert!(refused["error"].as_str().unwrap().starts_with(message), "{refused}");
    }
    assert_eq!(call(&server, "GET", "/api/v1/namespaces/t", None).1["documents"], 2, "nothing refused was written");
    let ops = json!([{"op": "delete", "key": 1}, {"op": "delete", "key": 1}]);
    assert_eq!(post(&server, "/api/v1/namespaces/t/transaction", &ops), (200, json!({"count": 2})));
    assert_eq!(call(&server, "GET", "/api/v1/namespaces/t/items/1", None).0, 404);
}

#[test]
fn bad_requests_get_clear_errors_and_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &["--max-bulk-bytes", "1048576"]);
    let schema = json!({"name": "n", "indexes": [{"field": "id", "type": "int", "index": "hash", "pk": true}]});
    assert_eq!(post(&server, "/api/v1/namespaces", &schema).0, 201);
    assert_eq!(call(&server, "POST", "/api/v1/namespaces/n/items", Some(b"{\"id\": 1, \"v\": \"kept\"}")).0, 200);
    let cases: Vec<(&str, &str, &[u8], u16, &str)> = vec![
        ("POST", "/api/v1/namespaces", b"{not json", 400, "the namespace definition is not valid JSON"),
        (
            "POST",
            "/api/v1/namespaces",
            b"{\"name\": \"x\", \"indexes\": [{\"field\": \"id\", \"type\": \"nope\"}]}",
            400,
            "invalid index definition",
        ),
        ("POST", "/api/v1/namespaces", b"{\"name\": \"x\", \"extra\": 1}", 400, "unknown key 'extra'"),
        ("POST", "/api/v1/namespaces/missing/items", b"{\"id\": 1}", 404, "does not exist"),
        ("POST", "/api/v1/namespaces/n/items", b"{\"id\": 2}\n\n{broken", 400, "line 3: invalid JSON"),
        (
            "POST",
            "/api/v1/namespaces/n/items",
            b"[{\"id\": 2}, {broken",
            400,
            "the array of documents is not valid JSON",
        ),
        ("POST", "/api/v1/namespaces/n/items", b"[1, 2]", 400, "a document must be a JSON object"),
        ("POST", "/api/v1/namespaces/n/items?mode=replace", b"{\"id\": 2}", 400, "mode must be"),
        (
            "POST",
            "/api/v1/namespaces/n/query",
            b"{\"filter\": {\"field\": \"id\", \"op\": \"~\", \"value\": 1}}",
            400,
            "filter.op: unknown operator",
        ),
        ("POST", "/api/v1/namespaces/n/query", b"{\"limit\": \"ten\"}", 400, "limit: must be a whole number"),
        ("POST", "/api/v1/query", b"{\"namespace\": \"nope\"}", 404, "namespace 'nope' does not exist"),
        ("GET", "/api/v1/nothing-here", b"", 404, "no such route"),
    ];
    for (method, path, body, status, message) in cases {
        let (got, answer) = call(&server, method, path, (!body.is_empty()).then_some(body));
        assert_eq!(got, status, "{method} {path}: {answer}");
        let text = answer["error"].as_str().unwrap_or_else(|| panic!("{method} {path}: no error field in {answer}"));
        assert!(text.contains(message), "{method} {path}: {text}");
    }
    let (status, doc) = call(&server, "GET", "/api/v1/namespaces/n/items/1", None);
    assert_eq!((status, doc["v"].clone()), (200, json!("kept")), "stored data is intact");
    server.stop();
}

#[test]
fn bodies_over_the_limit_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("hotset.toml");
    std::fs::write(&config, "[limits]\nmax_body_bytes = 1000\n").unwrap();
    let data = dir.path().join("data");
    let server = Server::start(&data, &["--config", config.to_str().unwrap()]);
    let schema = json!({"name": "n", "indexes": [{"field": "id", "type": "int", "index": "hash", "pk": true}]});
    assert_eq!(post(&server, "/api/v1/namespaces", &schema).0, 201);
    let big = format!("{{\"id\": 1, \"pad\": \"{}\"}}", "x".repeat(2000));
    let (status, error) = call(&server, "POST", "/api/v1/namespaces/n/items", Some(big.as_bytes()));
    assert_eq!(status, 413);
    assert!(error["error"].as_str().unwrap().contains("length limit exceeded"), "{error}");
    assert_eq!(error["code"], "limit", "the router's own refusal is coded too");
    assert_eq!(call(&server, "GET", "/health", None).0, 200, "the server goes on");
    server.stop();
}

#[test]
fn sql_over_http() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let schema = json!({"name": "items", "indexes": [
        {"field": "id", "type": "int", "index": "hash", "pk": true},
        {"field": "year", "type": "int", "index": "tree"},
    ]});
    assert_eq!(post(&server, "/api/v1/namespaces", &schema).0, 201);
    let sql = |text: &str| call(&server, "POST", "/api/v1/sql", Some(text.as_bytes()));
    assert_eq!(
        sql("INSERT INTO items (id, year, name) VALUES (1, 2001, 'a'), (2, 2005, 'b'), (3, 2012, 'c')"),
        (200, json!({"items": [], "affected": 3}))
    );
    let (status, answer) = sql("SELECT COUNT(*), * FROM items WHERE year > 2003 ORDER BY year DESC LIMIT 1");
    assert_eq!(status, 200, "{answer}");
    assert_eq!((answer["total"].clone(), answer["items"][0]["name"].clone()), (json!(2), json!("c")));
    let (_, answer) = sql("SELECT name FROM items WHERE name LIKE 'a%' OR id = 3 ORDER BY id");
    assert_eq!(answer, json!({"items": [{"name": "a"}, {"name": "c"}]}), "no total when not asked");
    assert_eq!(sql("UPDATE items SET year = year + 1 WHERE id = 1").1["affected"], 1);
    assert_eq!(sql("DELETE FROM items WHERE year < 2005").1["affected"], 1);
    let (status, error) = sql("SELECT * FROM items\nWHERE year >> 3");
    assert_eq!(status, 400);
    assert_eq!((error["line"].clone(), error["column"].clone()), (json!(2), json!(7)), "{error}");
    assert!(error["error"].as_str().unwrap().contains("unsupported operator"), "{error}");
    let (status, error) = sql("SELEC * FROM items");
    assert_eq!((status, error["line"].clone()), (400, json!(1)), "{error}");
    let (status, error) = sql("SELECT * FROM missing");
    assert_eq!((status, error["error"].clone()), (404, json!("namespace 'missing' does not exist")));
    server.stop();
}

#[test]
fn sql_ddl_creates_and_drops_namespaces_and_indexes() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let sql = |text: &str| call(&server, "POST", "/api/v1/sql", Some(text.as_bytes()));
    assert_eq!(sql("CREATE TABLE t (id INT PRIMARY KEY, year INT)"), (200, json!({"items": [], "affected": 1})));
    assert_eq!(sql("INSERT INTO t (id, year) VALUES (1, 2001), (2, 2012)").0, 200);
    assert_eq!(sql("CREATE INDEX by_year ON t (year)"), (200, json!({"items": [], "affected": 1})));
    let (status, described) = call(&server, "GET", "/api/v1/namespaces/t", None);
    assert_eq!(status, 200);
    assert_eq!(described["indexes"][2], json!({"name": "by_year", "field": "year", "type": "int", "index": "tree"}));
    // The declared type is enforced by the engine.
    let (status, error) = sql("INSERT INTO t (id, year) VALUES (3, 'soon')");
    assert_eq!(status, 400, "{error}");
    let (status, error) = sql("CREATE TABLE u (a INT,\n  b JSONB PRIMARY KEY)");
    assert_eq!((status, error["line"].clone(), error["column"].clone()), (400, json!(2), json!(3)), "{error}");
    assert_eq!(sql("DROP TABLE t"), (200, json!({"items": [], "affected": 1})));
    assert_eq!(call(&server, "GET", "/api/v1/namespaces/t", None).0, 404);
    server.stop();
}

/// Polls `done` until it holds or `limit` passes (a condition wait, not a sleep as
/// synchronisation: the answer is read from the server each time).
fn eventually(limit: std::time::Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = std::time::Instant::now() + limit;
    while std::time::Instant::now() < deadline {
        if done() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    done()
}

#[test]
fn ttl_indexes_delete_documents_when_their_time_comes_and_the_deletes_persist() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let schema = json!({"name": "sessions", "indexes": [
        {"field": "id", "type": "int", "index": "hash", "pk": true},
        {"field": "created", "type": "int", "index": "ttl", "expire_after": 60},
    ]});
    let (status, created) = post(&server, "/api/v1/namespaces", &schema);
    assert_eq!(status, 201, "{created}");
    assert_eq!(created["indexes"][1]["index"], "ttl");
    assert_eq!(created["indexes"][1]["expire_after"], 60);
    let bad = json!({"name": "bad", "indexes": [{"field": "id", "type": "int", "index": "hash", "pk": true},
                                               {"field": "created", "type": "int", "index": "ttl"}]});
    let (status, error) = post(&server, "/api/v1/namespaces", &bad);
    assert_eq!(status, 400);
    assert!(error["error"].as_str().unwrap().contains("expire_after"), "{error}");

    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64;
    // 1 and 2 are past due (created over 60 s ago); 3 has an hour left.
    let ndjson = [(1, now - 3_600), (2, now - 61), (3, now)]
        .map(|(id, at)| json!({"id": id, "created": at}).to_string())
        .join("\n");
    assert_eq!(call(&server, "POST", "/api/v1/namespaces/sessions/items", Some(ndjson.as_bytes())).0, 200);
    let present = |server: &Server, id: i64| {
        call(server, "GET", &format!("/api/v1/namespaces/sessions/items/{id}"), None).0 == 200
    };
    let gone = eventually(std::time::Duration::from_secs(15), || !present(&server, 1) && !present(&server, 2));
    assert!(gone, "past-due documents are deleted within seconds");
    assert!(present(&server, 3), "a document with time left stays");
    server.stop();

    let server = Server::start(dir.path(), &[]);
    assert!(!present(&server, 1) && !present(&server, 2), "they stay gone after a restart");
    assert!(present(&server, 3));
    server.stop();
}

#[test]
fn errors_the_http_layer_writes_are_json_too() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    for (method, path, status, says) in [
        ("GET", "/api/v1/namespaces/%ff", 400, "UTF-8"),
        ("PUT", "/api/v1/namespaces", 405, "method not allowed"),
        ("DELETE", "/api/v1/sql", 405, "method not allowed"),
        ("POST", "/api/v1/namespaces/x/items?mode=upsert&mode=insert", 400, "query string"),
        ("GET", "/no/such/path", 404, ""),
    ] {
        let (got, body) = call(&server, method, path, Some(b"{}"));
        assert_eq!(got, status, "{method} {path}: {body}");
        let message = body["error"].as_str().unwrap_or_else(|| panic!("{method} {path}: not {{\"error\"}}: {body}"));
        assert!(message.contains(says), "{method} {path}: {message}");
    }
    assert_eq!(call(&server, "GET", "/health", None).0, 200, "the server goes on");
    server.stop();
}
