//! A password protects HTTP as it protects RESP: the real binary, driven with curl.
//! Regression: with `--password` set, RESP answered NOAUTH while HTTP let anyone in
//! (`POST /api/v1/sql "DROP TABLE t"` without credentials answered 200 and dropped it).

mod common;

use common::Server;
use std::io::Write;
use std::process::{Command, Stdio};

const PASSWORD: &str = "s3cret:with colon";

struct Answer {
    status: u16,
    headers: String,
    body: String,
}

/// One request with curl; `auth` is passed as it is to `-H 'Authorization: ...'`.
fn request(server: &Server, method: &str, path: &str, auth: Option<&str>, body: Option<&str>) -> Answer {
    let mut command = Command::new("curl");
    command.args(["-s", "-S", "-i", "-X", method, &format!("http://{}{path}", server.http)]);
    if let Some(auth) = auth {
        command.args(["-H", &format!("Authorization: {auth}")]);
    }
    if body.is_some() {
        command.args(["--data-binary", "@-"]);
    }
    let mut child = command.stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().expect("running curl");
    if let Some(body) = body {
        child.stdin.take().unwrap().write_all(body.as_bytes()).unwrap();
    }
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "curl {method} {path}");
    let text = String::from_utf8(output.stdout).unwrap();
    let (headers, body) = text.split_once("\r\n\r\n").expect("a header block");
    let status = headers.split_whitespace().nth(1).and_then(|s| s.parse().ok()).expect("a status line");
    Answer { status, headers: headers.to_ascii_lowercase(), body: body.to_string() }
}

fn basic(user: &str, password: &str) -> String {
    // The test encodes by hand so it checks the server against the standard, not itself.
    let bytes = format!("{user}:{password}").into_bytes();
    const TABLE: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, &b)| n | (u32::from(b) << (16 - 8 * i)));
        for i in 0..4 {
            out.push(if i <= chunk.len() { TABLE[(n >> (18 - 6 * i) & 63) as usize] as char } else { '=' });
        }
    }
    format!("Basic {out}")
}

/// Every route of the API, with a body where it takes one.
const ROUTES: &[(&str, &str, Option<&str>)] = &[
    ("GET", "/api/v1/namespaces", None),
    (
        "POST",
        "/api/v1/namespaces",
        Some(r#"{"name":"other","indexes":[{"field":"id","type":"int","index":"hash","pk":true}]}"#),
    ),
    ("GET", "/api/v1/namespaces/t", None),
    ("POST", "/api/v1/namespaces/t/indexes", Some(r#"{"field":"year","type":"int","index":"tree"}"#)),
    ("DELETE", "/api/v1/namespaces/t/indexes/year", None),
    ("POST", "/api/v1/namespaces/t/items", Some(r#"{"id":2}"#)),
    ("GET", "/api/v1/namespaces/t/items/1", None),
    ("POST", "/api/v1/namespaces/t/query", Some("{}")),
    ("POST", "/api/v1/query", Some(r#"{"namespace":"t"}"#)),
    ("POST", "/api/v1/search", Some(r#"{"namespaces":["t"],"query":"x"}"#)),
    ("POST", "/api/v1/sql", Some("SELECT * FROM t")),
    ("GET", "/api/v1/openapi.json", None),
    ("GET", "/metrics", None),
    ("GET", "/no/such/route", None),
    ("DELETE", "/api/v1/namespaces/t/items/1", None),
    ("POST", "/api/v1/namespaces/t/truncate", None),
    ("DELETE", "/api/v1/namespaces/t", None),
];

#[test]
fn every_route_but_health_needs_the_password() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &["--password", PASSWORD]);
    let bearer = format!("Bearer {PASSWORD}");
    let created = request(&server, "POST", "/api/v1/sql", Some(&bearer), Some("CREATE TABLE t (id INT PRIMARY KEY)"));
    assert_eq!(created.status, 200, "{}", created.body);
    assert_eq!(request(&server, "POST", "/api/v1/namespaces/t/items", Some(&bearer), Some(r#"{"id":1}"#)).status, 200);

    // The defect as reported: nothing is dropped without the password.
    let refused = request(&server, "POST", "/api/v1/sql", None, Some("DROP TABLE t"));
    assert_eq!(refused.status, 401, "{}", refused.body);
    assert!(refused.headers.contains("www-authenticate: bearer realm=\"hotset\", basic realm=\"hotset\""));
    let error: serde_json::Value = serde_json::from_str(&refused.body).unwrap();
    assert!(error["error"].as_str().unwrap().contains("authentication required"), "{error}");
    assert_eq!(request(&server, "GET", "/api/v1/namespaces/t/items/1", Some(&bearer), None).status, 200);

    let wrong = [None, Some("Bearer s3cret"), Some(basic("default", "s3cret").as_str()), Some("Token x")]
        .map(|auth| auth.map(str::to_string));
    let alice = Some(basic("alice", PASSWORD));
    for &(method, path, body) in ROUTES.iter().filter(|(_, path, _)| *path != "/api/v1/namespaces/t") {
        for auth in wrong.iter().chain([&alice]) {
            let answer = request(&server, method, path, auth.as_deref(), body);
            assert_eq!(answer.status, 401, "{method} {path} with {auth:?}: {}", answer.body);
            assert!(answer.headers.contains("www-authenticate:"), "{method} {path}");
        }
    }
    // With the password, as Bearer or as Basic for the default (or no) user, each goes
    // through to the route (some answer 4xx for their own reasons, none 401).
    let good = [bearer.clone(), basic("default", PASSWORD), basic("", PASSWORD)];
    for (i, &(method, path, body)) in ROUTES.iter().enumerate() {
        let answer = request(&server, method, path, Some(&good[i % good.len()]), body);
        assert_ne!(answer.status, 401, "{method} {path}: {}", answer.body);
        assert!(answer.status < 500, "{method} {path}: {} {}", answer.status, answer.body);
    }
    let health = request(&server, "GET", "/health", None, None);
    assert_eq!((health.status, health.body.as_str()), (200, r#"{"status":"ok"}"#));
    // RESP still asks for it too.
    assert!(common::redis_cli(&server, &["PING"]).contains("NOAUTH"));
    assert_eq!(common::redis_cli(&server, &["-a", PASSWORD, "--no-auth-warning", "PING"]).trim(), "PONG");
    server.stop();
}

#[test]
fn metrics_can_be_left_open_for_scrapers_and_nothing_else_is() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("hotset.toml");
    std::fs::write(&config, format!("password = {PASSWORD:?}\nmetrics_public = true\n")).unwrap();
    let server = Server::start(&dir.path().join("data"), &["--config", config.to_str().unwrap()]);
    let metrics = request(&server, "GET", "/metrics", None, None);
    assert_eq!(metrics.status, 200);
    assert!(metrics.body.contains("hotset_"), "{}", &metrics.body[..metrics.body.len().min(200)]);
    assert_eq!(request(&server, "GET", "/api/v1/namespaces", None, None).status, 401);
    server.stop();
}

#[test]
fn without_a_password_http_is_open_as_before() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    assert_eq!(request(&server, "GET", "/api/v1/namespaces", None, None).status, 200);
    let answer = request(&server, "GET", "/api/v1/namespaces", Some("Bearer anything"), None);
    assert_eq!(answer.status, 200, "a stray header is ignored when no password is set");
    server.stop();
}
