//! Requests built to exhaust a stack, against the real binary: each gets an answer or a
//! clear error, and the server, its other clients and its data go on.
//!
//! Regression: `SELECT * FROM nope WHERE id = 0 OR id = 1 OR ...` with 20,000 ORs sent to
//! `POST /api/v1/sql` killed the process (`thread 'hotset-io' has overflowed its stack`),
//! and 3,000 were enough through `DOC.SQL`; every client lost its connection.

mod common;

use common::Server;

fn or_chain(table: &str, terms: usize) -> String {
    let ors = (0..terms).map(|i| format!("id = {i}")).collect::<Vec<_>>().join(" OR ");
    format!("SELECT COUNT(*) FROM {table} WHERE {ors}")
}

#[test]
fn deep_requests_get_answers_and_the_server_stays_up() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let mut redis = server.client();
    let created: String = redis::cmd("DOC.SQL").arg("CREATE TABLE t (id INT PRIMARY KEY)").query(&mut redis).unwrap();
    assert!(!created.is_empty());
    let docs: Vec<String> = (0..50).map(|i| format!(r#"{{"id":{i}}}"#)).collect();
    let written: usize = redis::cmd("DOC.UPSERT").arg("t").arg(&docs).query(&mut redis).unwrap();
    assert_eq!(written, 50);
    // A second client, connected before, must keep its connection throughout.
    let mut bystander = server.client();

    // The reported requests, and bigger: long chains are answered.
    for terms in [3_000, 20_000, 100_000] {
        let (status, body) = common::curl(&server, "POST", "/api/v1/sql", Some(or_chain("t", terms).as_bytes()));
        assert_eq!(status, 200, "{terms} ORs over HTTP: {}", &body[..body.len().min(300)]);
        let answer: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(answer["total"], 50, "{terms} ORs over HTTP");
        let answer: String = redis::cmd("DOC.SQL").arg(or_chain("t", terms)).query(&mut redis).unwrap();
        let answer: serde_json::Value = serde_json::from_str(&answer).unwrap();
        assert_eq!(answer["total"], 50, "{terms} ORs over RESP");
    }
    let (status, body) = common::curl(&server, "POST", "/api/v1/sql", Some(or_chain("nope", 20_000).as_bytes()));
    assert_eq!(status, 404, "{}", &body[..body.len().min(300)]);

    // Nesting past the bounds is refused by name, over both protocols.
    let deep = [
        format!("SELECT * FROM t WHERE {}id = 1{}", "(".repeat(50_000), ")".repeat(50_000)),
        format!("UPDATE t SET x = {}", vec!["1"; 100_000].join("+")),
        format!("SELECT * FROM t WHERE x {}", vec!["IS NULL"; 50_000].join(" ")),
        format!("SELECT {} FROM t", vec!["id"; 100_000].join("*")),
    ];
    for text in &deep {
        let (status, body) = common::curl(&server, "POST", "/api/v1/sql", Some(text.as_bytes()));
        assert_eq!(status, 400, "{}", &body[..body.len().min(300)]);
        assert!(body.len() < 1_000, "the error does not echo the whole request: {} bytes", body.len());
        let error = redis::cmd("DOC.SQL").arg(text).query::<String>(&mut redis).unwrap_err().to_string();
        assert!(error.len() < 1_000 && !error.is_empty(), "{} bytes", error.len());
    }
    let nested = format!("{}{{\"field\": \"id\", \"value\": 1}}{}", "{\"not\": ".repeat(5_000), "}".repeat(5_000));
    let (status, body) = common::curl(
        &server,
        "POST",
        "/api/v1/namespaces/t/query",
        Some(format!("{{\"filter\": {nested}}}").as_bytes()),
    );
    assert_eq!(status, 400, "{}", &body[..body.len().min(300)]);

    // Nothing was lost, and the other client's connection is the one it had.
    let ping: String = redis::cmd("PING").query(&mut bystander).unwrap();
    assert_eq!(ping, "PONG");
    let (status, body) = common::curl(&server, "POST", "/api/v1/sql", Some(b"SELECT COUNT(*) FROM t"));
    assert_eq!((status, serde_json::from_str::<serde_json::Value>(&body).unwrap()["total"].clone()), (200, 50.into()));
    server.stop();
}
