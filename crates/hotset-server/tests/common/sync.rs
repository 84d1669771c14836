//! Live-sync helpers shared by `sync_pg.rs` and `sync_mariadb.rs`: the source database
//! behind one trait (`Source`), the sources API of the server, the one comparison of a
//! namespace with its source table, and the scenarios both sources run alike (the random
//! mix of transactions with a reader checking atomicity, kill -9 during the copy and
//! during the stream, the source stopped).
//!
//! Never: sleep to synchronise. Waits poll a condition every `POLL` under a deadline
//! (`WAIT_MAX`), or ask the server to wait for a source position (`?after=`), which is the
//! feature under test.

#![allow(dead_code)]

use super::{Response, Server, curl_full, request_at};
use hotset_testkit::mariadb::MariaDb;
use hotset_testkit::postgres::Postgres;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Longest any wait of these tests lasts (a copy, a catch-up, a state change).
pub const WAIT_MAX: Duration = Duration::from_secs(120);
/// The pause between two looks at a polled condition.
pub const POLL: Duration = Duration::from_millis(50);
/// The name every test gives its source.
pub const SOURCE: &str = "app";

// ---------------------------------------------------------------------------------------
// Seeded randomness

/// SplitMix64: small, seeded, the same sequence for the same seed on every machine.
pub struct Rng(u64);

impl Rng {
    /// A generator seeded from `HOTSET_SYNC_SEED` or the clock; prints the seed so a
    /// failure replays with it.
    pub fn from_env(what: &str) -> Rng {
        let seed = std::env::var("HOTSET_SYNC_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64
        });
        eprintln!("{what}: seed {seed} (HOTSET_SYNC_SEED={seed} replays it)");
        Rng(seed)
    }

    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        assert!(n > 0);
        self.next() % n
    }

    /// A number in `low..=high`.
    pub fn range(&mut self, low: i64, high: i64) -> i64 {
        assert!(low <= high);
        low + self.below((high - low + 1) as u64) as i64
    }

    /// One of `items`.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }
}

// ---------------------------------------------------------------------------------------
// The source database

/// A throwaway source database as the scenarios use it.
pub trait Source: Sync {
    /// `postgres` or `mysql`: the status' `kind`.
    fn kind(&self) -> &'static str;
    /// The URL a declaration gives (the sync user, its password).
    fn url(&self) -> String;
    /// Runs SQL (several statements; `BEGIN; ... COMMIT;` for transactions) as a user that
    /// owns the tables; returns the client's output; panics on an error.
    fn exec(&self, sql: &str) -> String;
    /// The table's name as a declaration writes it (`public.t`, `app.t`).
    fn qualified(&self, table: &str) -> String;
    /// Every row of `table` as JSON objects of `columns`, as the source's own JSON
    /// functions write them.
    fn rows(&self, table: &str, columns: &[&str]) -> Vec<Value>;
    /// The source's current position, read after the last commit: `pg_current_wal_lsn()`,
    /// `@@gtid_binlog_pos`.
    fn position(&self) -> String;
    /// SQL that fills `table (id, version, payload)` with rows 1..=n.
    fn fill_sql(&self, table: &str, rows: u64) -> String;
    /// SQL that empties `tables` (in that order; PostgreSQL empties them in one statement,
    /// so in one transaction; MariaDB's TRUNCATE commits each on its own).
    fn truncate_sql(&self, tables: &[&str]) -> String;
    /// Stops the source server (its clients then fail to connect).
    fn stop(&mut self);
    /// Starts it again on the same data and port.
    fn resume(&mut self);
}

impl Source for Postgres {
    fn kind(&self) -> &'static str {
        "postgres"
    }
    fn url(&self) -> String {
        Postgres::url(self)
    }
    fn exec(&self, sql: &str) -> String {
        self.app(sql)
    }
    fn qualified(&self, table: &str) -> String {
        format!("public.{table}")
    }
    fn rows(&self, table: &str, columns: &[&str]) -> Vec<Value> {
        // TimeZone UTC: timestamptz values in row_to_json are then written with +00:00.
        let output = self.app(&format!(
            "SET TimeZone = 'UTC'; SELECT row_to_json(t) FROM (SELECT {} FROM {table}) t",
            columns.join(", ")
        ));
        output.lines().filter(|line| !line.is_empty() && *line != "SET").map(parse_line).collect()
    }
    fn position(&self) -> String {
        self.app("SELECT pg_current_wal_lsn()")
    }
    fn fill_sql(&self, table: &str, rows: u64) -> String {
        format!(
            "INSERT INTO {table} (id, version, payload) SELECT g, 0, md5(g::text) || repeat('p', 60) \
             FROM generate_series(1, {rows}) g"
        )
    }
    fn truncate_sql(&self, tables: &[&str]) -> String {
        format!("TRUNCATE {};", tables.join(", "))
    }
    fn stop(&mut self) {
        Postgres::stop(self)
    }
    fn resume(&mut self) {
        Postgres::resume(self)
    }
}

impl Source for MariaDb {
    fn kind(&self) -> &'static str {
        "mysql"
    }
    fn url(&self) -> String {
        MariaDb::url(self)
    }
    fn exec(&self, sql: &str) -> String {
        self.sql(sql)
    }
    fn qualified(&self, table: &str) -> String {
        format!("{}.{table}", hotset_testkit::mariadb::DATABASE)
    }
    fn rows(&self, table: &str, columns: &[&str]) -> Vec<Value> {
        let pairs: Vec<String> = columns.iter().map(|c| format!("'{c}', `{c}`")).collect();
        let output = self.sql(&format!("SELECT JSON_OBJECT({}) FROM {table}", pairs.join(", ")));
        // The client's batch mode escapes backslashes, tabs and newlines in its output.
        output.lines().filter(|line| !line.is_empty()).map(|line| parse_line(&unescape_batch(line))).collect()
    }
    fn position(&self) -> String {
        self.value("SELECT @@gtid_binlog_pos")
    }
    fn fill_sql(&self, table: &str, rows: u64) -> String {
        // seq_1_to_N: MariaDB's Sequence engine, built in.
        format!(
            "INSERT INTO {table} (id, version, payload) SELECT seq, 0, CONCAT(MD5(seq), REPEAT('p', 60)) \
             FROM seq_1_to_{rows}"
        )
    }
    fn truncate_sql(&self, tables: &[&str]) -> String {
        tables.iter().map(|t| format!("TRUNCATE TABLE {t};")).collect()
    }
    fn stop(&mut self) {
        MariaDb::stop(self)
    }
    fn resume(&mut self) {
        MariaDb::restart(self)
    }
}

fn parse_line(line: &str) -> Value {
    serde_json::from_str(line).unwrap_or_else(|e| panic!("a source row is not JSON ({e}): {line}"))
}

/// Undoes the `mariadb --batch` escapes (`\\`, `\t`, `\n`, `\0`).
fn unescape_batch(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('t') => out.push('\t'),
            Some('n') => out.push('\n'),
            Some('0') => out.push('\0'),
            Some(other) => out.push(other),
            None => out.push('\\'),
        }
    }
    out
}

// ---------------------------------------------------------------------------------------
// Positions

/// Whether position `a` is at or past `b`: PostgreSQL LSNs (`X/Y`, hexadecimal) compare
/// as numbers; MariaDB GTID lists (`D-S-N,...`) reach `b` when every domain of `b` has a
/// sequence number at least as high in `a`.
pub fn reached(a: &str, b: &str) -> bool {
    if b.contains('/') {
        return lsn(a) >= lsn(b);
    }
    let domains = |list: &str| -> BTreeMap<u64, u64> {
        list.split(',')
            .filter(|gtid| !gtid.trim().is_empty())
            .map(|gtid| {
                let parts: Vec<u64> = gtid.trim().split('-').map(|p| p.parse().expect("a GTID number")).collect();
                assert_eq!(parts.len(), 3, "a GTID is domain-server-sequence: {gtid}");
                (parts[0], parts[2])
            })
            .collect()
    };
    let a = domains(a);
    domains(b).iter().all(|(domain, sequence)| a.get(domain).is_some_and(|have| have >= sequence))
}

/// A PostgreSQL LSN (`16/B374D848`) as a number.
pub fn lsn(text: &str) -> u64 {
    let (high, low) = text.split_once('/').unwrap_or_else(|| panic!("an LSN is X/Y: {text:?}"));
    (u64::from_str_radix(high, 16).expect("hex") << 32) | u64::from_str_radix(low, 16).expect("hex")
}

/// Source `name`'s position in a `Hotset-Source-Position` header (`app=0/16B6C50`;
/// several sources separated by commas; a MariaDB GTID list has commas of its own, so a
/// part without `=` continues the previous value).
pub fn header_position(response: &Response, name: &str) -> Option<String> {
    let header = response.header("hotset-source-position")?;
    let mut found: Option<String> = None;
    let mut current: Option<String> = None;
    for part in header.split([',', ';']).map(str::trim) {
        match part.split_once('=') {
            Some((source, position)) => {
                current = Some(source.to_string());
                if source == name {
                    found = Some(position.to_string());
                }
            }
            None if current.as_deref() == Some(name) => {
                let position = found.as_mut().expect("the source's position started");
                position.push(',');
                position.push_str(part);
            }
            None => {}
        }
    }
    found
}

// ---------------------------------------------------------------------------------------
// The sources API

/// A declaration of source `SOURCE` with `tables`.
pub fn declaration(source: &dyn Source, tables: Value) -> Value {
    json!({"name": SOURCE, "url": source.url(), "tables": tables})
}

/// `POST /api/v1/sources`; asserts 201 and returns the status it answers.
pub fn declare(server: &Server, declaration: &Value) -> Value {
    let response = curl_full(server, "POST", "/api/v1/sources", Some(declaration.to_string().as_bytes()));
    assert_eq!(response.status, 201, "declaring {declaration}: {}", response.body);
    response.json()
}

/// `GET /api/v1/sources/{name}`; asserts 200.
pub fn status(server: &Server, name: &str) -> Value {
    let response = curl_full(server, "GET", &format!("/api/v1/sources/{name}"), None);
    assert_eq!(response.status, 200, "status of {name}: {}", response.body);
    response.json()
}

/// Polls `check` every `POLL` until it gives a value; panics with `what` and the last
/// thing seen after `WAIT_MAX`.
pub fn wait_for<T>(what: &str, mut check: impl FnMut() -> Result<T, String>) -> T {
    let deadline = Instant::now() + WAIT_MAX;
    loop {
        match check() {
            Ok(value) => return value,
            Err(last) if Instant::now() >= deadline => panic!("waited {WAIT_MAX:?} for {what}; last: {last}"),
            Err(_) => std::thread::sleep(POLL),
        }
    }
}

/// Polls the source's status until `condition` holds; returns that status.
pub fn wait_status(server: &Server, what: &str, condition: impl Fn(&Value) -> bool) -> Value {
    wait_for(what, || {
        let status = status(server, SOURCE);
        if condition(&status) { Ok(status) } else { Err(status.to_string()) }
    })
}

/// `wait_status` at a tight interval (5 ms), for a state that lasts only a moment.
pub fn poll_status(server: &Server, what: &str, condition: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + WAIT_MAX;
    loop {
        let status = status(server, SOURCE);
        if condition(&status) {
            return status;
        }
        assert!(Instant::now() < deadline, "waited {WAIT_MAX:?} for {what}; last: {status}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Whether a status is `streaming` with every table copied.
pub fn is_streaming(status: &Value) -> bool {
    status["state"] == "streaming"
        && status["tables"].as_array().is_some_and(|tables| tables.iter().all(|t| t["state"] == "copied"))
}

/// Waits until the source streams with every table copied.
pub fn wait_streaming(server: &Server) -> Value {
    wait_status(server, "the source to stream with every table copied", is_streaming)
}

/// Queries `ns` with `?after=SOURCE:position` until the server answers (a 504 is the
/// server's time limit: asked again until `WAIT_MAX`); asserts the answer's position
/// header reached `position`; returns the answer.
pub fn wait_applied(server: &Server, ns: &str, position: &str) -> Response {
    let path = format!("/api/v1/namespaces/{ns}/query?after={SOURCE}:{position}");
    let response = wait_for(&format!("{ns} to reflect {SOURCE} at {position}"), || {
        let response = curl_full(server, "POST", &path, Some(br#"{"limit": 0}"#));
        match response.status {
            200 => Ok(response),
            504 => Err(response.body),
            other => panic!("POST {path}: {other} {}", response.body),
        }
    });
    let seen = header_position(&response, SOURCE)
        .unwrap_or_else(|| panic!("no Hotset-Source-Position for {SOURCE}: {:?}", response.headers));
    assert!(reached(&seen, position), "asked for {position}, answered at {seen}");
    response
}

/// Every document of `ns` (one query with a limit above any table here).
pub fn documents(server: &Server, ns: &str) -> Vec<Value> {
    let response =
        curl_full(server, "POST", &format!("/api/v1/namespaces/{ns}/query"), Some(br#"{"limit": 10000000}"#));
    assert_eq!(response.status, 200, "query of {ns}: {}", response.body);
    response.json()["items"].as_array().cloned().unwrap_or_else(|| panic!("no items: {}", response.body))
}

/// Makes numbers comparable across the two sides: a number with no fraction becomes an
/// integer. A decimal column is `12.50` in the source's JSON (a double when parsed) and
/// may be `12.5` or the integer `12` in Hotset's (exact mode writes the shortest number
/// that reads back the same); both are the same number, and nothing here is large enough
/// for a double to blur two of them.
pub fn normalise(value: &Value) -> Value {
    match value {
        Value::Number(n) if n.is_f64() => {
            let f = n.as_f64().expect("a double");
            if f.fract() == 0.0 && f.abs() < 9.0e15 { json!(f as i64) } else { value.clone() }
        }
        Value::Array(items) => Value::Array(items.iter().map(normalise).collect()),
        Value::Object(fields) => Value::Object(fields.iter().map(|(k, v)| (k.clone(), normalise(v))).collect()),
        other => other.clone(),
    }
}

/// The key of a row or document: its `key` fields as JSON text.
fn key_of(row: &Value, key: &[&str]) -> String {
    let parts: Vec<&Value> = key.iter().map(|k| &row[*k]).collect();
    serde_json::to_string(&parts).unwrap()
}

/// Rows keyed by `key`, normalised; panics on a key seen twice.
fn keyed(rows: Vec<Value>, key: &[&str], side: &str) -> BTreeMap<String, Value> {
    let mut out = BTreeMap::new();
    for row in rows {
        let k = key_of(&row, key);
        let previous = out.insert(k.clone(), normalise(&row));
        assert!(previous.is_none(), "{side} has key {k} twice");
    }
    out
}

/// THE comparison: namespace `ns` holds exactly the rows of source table `table`, every
/// row and every field of `columns` (documents have no other fields), keyed by `key`.
pub fn assert_same(server: &Server, source: &dyn Source, table: &str, ns: &str, columns: &[&str], key: &[&str]) {
    let want = keyed(source.rows(table, columns), key, table);
    let got = keyed(documents(server, ns), key, ns);
    let missing: Vec<&String> = want.keys().filter(|k| !got.contains_key(*k)).take(5).collect();
    let extra: Vec<&String> = got.keys().filter(|k| !want.contains_key(*k)).take(5).collect();
    let differ: Vec<String> = want
        .iter()
        .filter_map(|(k, row)| {
            got.get(k).filter(|doc| *doc != row).map(|doc| format!("{k}: source {row} hotset {doc}"))
        })
        .take(5)
        .collect();
    assert!(
        missing.is_empty() && extra.is_empty() && differ.is_empty(),
        "{ns} differs from {table} ({} rows, {} documents): missing {missing:?}, extra {extra:?}, \
         differing {differ:#?}",
        want.len(),
        got.len()
    );
}

/// Asserts a declaration is refused with 400, code `bad_request` and a message containing
/// `cause` (as written: `REPLICATION` is the privilege, not any mention of replication), and that nothing was created: no source, no namespace.
pub fn assert_refused(server: &Server, declaration: &Value, cause: &str) {
    let response = curl_full(server, "POST", "/api/v1/sources", Some(declaration.to_string().as_bytes()));
    assert_eq!(response.status, 400, "{declaration} was not refused: {}", response.body);
    let body = response.json();
    assert_eq!(body["code"], "bad_request", "{body}");
    let message = body["error"].as_str().unwrap_or_else(|| panic!("no error message: {body}"));
    assert!(message.contains(cause), "the refusal does not name {cause:?}: {message}");
    let listed = curl_full(server, "GET", "/api/v1/sources", None);
    assert_eq!(listed.status, 200, "{}", listed.body);
    assert_eq!(listed.json(), json!({"sources": []}), "a refused declaration left a source");
    let namespaces = curl_full(server, "GET", "/api/v1/namespaces", None).json();
    assert_eq!(namespaces["items"], json!([]), "a refused declaration left a namespace");
}

// ---------------------------------------------------------------------------------------
// Orders and their lines: the random mix

/// Three tables in SQL both sources take: orders with a `line_count` a reader checks
/// against the lines it sees, the lines (a composite key), and notes changed alone.
pub const ORDERS_SCHEMA: &str = "CREATE TABLE orders (id INT PRIMARY KEY, customer VARCHAR(40), \
     line_count INT NOT NULL, total DECIMAL(12,2), version INT NOT NULL);
     CREATE TABLE order_lines (order_id INT NOT NULL, line INT NOT NULL, item VARCHAR(40), qty INT, \
     PRIMARY KEY (order_id, line));
     CREATE TABLE notes (id INT PRIMARY KEY, body TEXT, version INT NOT NULL);";

pub const ORDERS_COLUMNS: &[&str] = &["id", "customer", "line_count", "total", "version"];
pub const LINES_COLUMNS: &[&str] = &["order_id", "line", "item", "qty"];
pub const NOTES_COLUMNS: &[&str] = &["id", "body", "version"];

/// The declaration's tables for the orders schema (a secondary index on the lines'
/// order_id, which the reader's join uses).
pub fn orders_tables(source: &dyn Source) -> Value {
    json!([
        {"table": source.qualified("orders"), "namespace": "orders"},
        {"table": source.qualified("order_lines"), "namespace": "order_lines",
         "indexes": [{"name": "order_id", "field": "order_id", "type": "int", "index": "tree"}]},
        {"table": source.qualified("notes"), "namespace": "notes"},
    ])
}

/// Compares all three namespaces with their tables.
pub fn assert_orders_same(server: &Server, source: &dyn Source) {
    assert_same(server, source, "orders", "orders", ORDERS_COLUMNS, &["id"]);
    assert_same(server, source, "order_lines", "order_lines", LINES_COLUMNS, &["order_id", "line"]);
    assert_same(server, source, "notes", "notes", NOTES_COLUMNS, &["id"]);
}

/// What the test knows of the source's orders (it alone writes them), to write valid SQL.
#[derive(Default)]
pub struct Orders {
    /// Order id -> its line numbers.
    orders: BTreeMap<i64, Vec<i64>>,
    notes: Vec<i64>,
    next_order: i64,
    next_line: i64,
    next_note: i64,
}

const CUSTOMERS: &[&str] = &["ann", "bo", "O''Brien", "Zoë", "李", "x y z", ""];

impl Orders {
    fn any_order(&self, rng: &mut Rng) -> Option<i64> {
        (!self.orders.is_empty())
            .then(|| *self.orders.keys().nth(rng.below(self.orders.len() as u64) as usize).unwrap())
    }

    fn total(rng: &mut Rng) -> String {
        format!("{}.{:02}", rng.below(100_000), rng.below(100))
    }

    fn new_order(&mut self, rng: &mut Rng) -> String {
        self.next_order += 1;
        let id = self.next_order;
        let count = rng.range(1, 5);
        let customer = rng.pick(CUSTOMERS);
        let mut sql = format!("INSERT INTO orders VALUES ({id}, '{customer}', {count}, {}, 0);", Orders::total(rng));
        let mut lines = Vec::new();
        for _ in 0..count {
            self.next_line += 1;
            lines.push(self.next_line);
            sql.push_str(&format!(
                "INSERT INTO order_lines VALUES ({id}, {}, 'item {}', {});",
                self.next_line,
                rng.below(1000),
                rng.range(1, 9)
            ));
        }
        self.orders.insert(id, lines);
        sql
    }

    fn change_order(&mut self, rng: &mut Rng) -> String {
        let Some(id) = self.any_order(rng) else { return self.new_order(rng) };
        let bump = format!("version = version + 1 WHERE id = {id};");
        match rng.below(6) {
            0 => {
                self.next_line += 1;
                self.orders.get_mut(&id).unwrap().push(self.next_line);
                format!(
                    "INSERT INTO order_lines VALUES ({id}, {}, 'added', 1); \
                     UPDATE orders SET line_count = line_count + 1, {bump}",
                    self.next_line
                )
            }
            1 if !self.orders[&id].is_empty() => {
                let lines = self.orders.get_mut(&id).unwrap();
                let line = lines.remove(rng.below(lines.len() as u64) as usize);
                format!(
                    "DELETE FROM order_lines WHERE order_id = {id} AND line = {line}; \
                     UPDATE orders SET line_count = line_count - 1, {bump}"
                )
            }
            2 => {
                self.orders.remove(&id);
                format!("DELETE FROM order_lines WHERE order_id = {id}; DELETE FROM orders WHERE id = {id};")
            }
            3 => {
                // A primary-key update of the order, its lines moved with it.
                self.next_order += 1;
                let new = self.next_order;
                let lines = self.orders.remove(&id).unwrap();
                self.orders.insert(new, lines);
                format!(
                    "UPDATE orders SET id = {new}, version = version + 1 WHERE id = {id}; \
                     UPDATE order_lines SET order_id = {new} WHERE order_id = {id};"
                )
            }
            4 if !self.orders[&id].is_empty() => {
                // A primary-key update of one line (its second key column).
                self.next_line += 1;
                let lines = self.orders.get_mut(&id).unwrap();
                let at = rng.below(lines.len() as u64) as usize;
                let old = std::mem::replace(&mut lines[at], self.next_line);
                format!("UPDATE order_lines SET line = {} WHERE order_id = {id} AND line = {old};", self.next_line)
            }
            _ => format!(
                "UPDATE orders SET customer = '{}', total = {}, {bump}",
                rng.pick(CUSTOMERS),
                Orders::total(rng)
            ),
        }
    }

    fn change_note(&mut self, rng: &mut Rng) -> String {
        match rng.below(4) {
            0 | 1 if !self.notes.is_empty() => {
                let id = *rng.pick(&self.notes);
                format!("UPDATE notes SET body = 'note {}', version = version + 1 WHERE id = {id};", rng.next())
            }
            2 if !self.notes.is_empty() => {
                let id = self.notes.remove(rng.below(self.notes.len() as u64) as usize);
                format!("DELETE FROM notes WHERE id = {id};")
            }
            _ => {
                self.next_note += 1;
                self.notes.push(self.next_note);
                format!("INSERT INTO notes VALUES ({}, 'note {}', 0);", self.next_note, rng.next())
            }
        }
    }

    /// One source transaction of 1 to 4 random changes, orders and notes mixed.
    pub fn transaction(&mut self, rng: &mut Rng) -> String {
        let mut sql = String::from("BEGIN;");
        for _ in 0..rng.range(1, 4) {
            let change = match rng.below(10) {
                0..=2 => self.new_order(rng),
                3..=7 => self.change_order(rng),
                _ => self.change_note(rng),
            };
            sql.push_str(&change);
        }
        sql.push_str("COMMIT;");
        sql
    }

    /// `count` transactions as one batch of SQL (each its own BEGIN ... COMMIT).
    pub fn transactions(&mut self, rng: &mut Rng, count: usize) -> String {
        (0..count).map(|_| self.transaction(rng)).collect()
    }

    /// After TRUNCATE of orders and order_lines.
    pub fn truncated(&mut self) {
        self.orders.clear();
    }
}

/// Checks one joined answer (orders, each with its lines under `alias`): every order has
/// exactly `line_count` lines, all its own. Returns how many orders it saw.
pub fn check_orders(answer: &Value, alias: &str) -> usize {
    let items = answer["items"].as_array().unwrap_or_else(|| panic!("no items: {answer}"));
    for order in items {
        let lines = order[alias].as_array().map_or(0, Vec::len);
        assert_eq!(
            Some(lines as u64),
            order["line_count"].as_u64(),
            "an order seen without all its lines (half a source transaction visible): {order}"
        );
        for line in order[alias].as_array().into_iter().flatten() {
            assert_eq!(line["order_id"], order["id"], "{order}");
        }
    }
    items.len()
}

/// Reads orders joined to their lines until `stop`, alternating the JSON DSL's left join
/// and SQL's LEFT JOIN, checking each answer with `check_orders`; counts its reads.
pub fn read_orders_until(address: &str, stop: &AtomicBool, reads: &AtomicUsize) {
    let dsl = json!({"limit": 1000000, "joins": [{"type": "left", "namespace": "order_lines", "as": "lines",
                      "on": [{"left": "id", "right": "order_id"}]}]})
    .to_string();
    let sql = "SELECT * FROM orders o LEFT JOIN order_lines l ON o.id = l.order_id LIMIT 1000000";
    while !stop.load(Ordering::SeqCst) {
        let n = reads.fetch_add(1, Ordering::SeqCst);
        let (path, body, alias) = if n.is_multiple_of(2) {
            ("/api/v1/namespaces/orders/query", dsl.as_bytes(), "lines")
        } else {
            ("/api/v1/sql", sql.as_bytes(), "l")
        };
        let response = request_at(address, "POST", path, Some(body)).expect("the server answers");
        assert_eq!(response.status, 200, "{path}: {}", response.body);
        assert!(header_position(&response, SOURCE).is_some(), "{path}: no position header {:?}", response.headers);
        check_orders(&response.json(), alias);
    }
}

/// The random mix (issue 16): orders, lines and notes in the source, copied while the
/// source is written, then random transactions (inserts, updates, deletes, primary-key
/// updates of orders and of lines, several tables at once, a truncate half-way) while a
/// reader checks that no transaction is ever half visible; then the namespaces equal the
/// tables.
pub fn random_mix(source: &dyn Source, batches: usize) -> (tempfile::TempDir, Server) {
    let mut rng = Rng::from_env("random mix");
    source.exec(ORDERS_SCHEMA);
    let mut orders = Orders::default();
    source.exec(&orders.transactions(&mut rng, 300));
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    declare(&server, &declaration(source, orders_tables(source)));
    // Written while the copy runs: the stream must carry exactly what the copy missed.
    source.exec(&orders.transactions(&mut rng, 30));
    let copied = wait_streaming(&server);
    let before = copied["transactions"].as_u64().expect("transactions is a number");

    let stop = AtomicBool::new(false);
    let reads = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        let reader = scope.spawn(|| read_orders_until(&server.http, &stop, &reads));
        let mut written = 0;
        for batch in 0..batches {
            if batch == batches / 2 {
                source.exec(&source.truncate_sql(&["orders", "order_lines"]));
                orders.truncated();
            }
            source.exec(&orders.transactions(&mut rng, 10));
            written += 10;
        }
        let position = source.position();
        wait_applied(&server, "orders", &position);
        stop.store(true, Ordering::SeqCst);
        reader.join().expect("the reader saw no half transaction");
        let after = status(&server, SOURCE);
        let applied = after["transactions"].as_u64().unwrap() - before;
        assert!(applied >= written, "{written} transactions written, {applied} applied: {after}");
    });
    assert!(reads.load(Ordering::SeqCst) >= 5, "the reader ran only {} queries", reads.load(Ordering::SeqCst));
    assert_orders_same(&server, source);
    (dir, server)
}

/// Asserts namespace `ns`'s primary key is the composite of `fields`, in that order.
pub fn assert_composite_key(server: &Server, ns: &str, fields: &[&str]) {
    let described = curl_full(server, "GET", &format!("/api/v1/namespaces/{ns}"), None).json();
    let indexes = described["indexes"].as_array().unwrap_or_else(|| panic!("no indexes: {described}"));
    let pk = indexes.iter().find(|index| index["pk"] == true).unwrap_or_else(|| panic!("no primary key: {described}"));
    assert_eq!(pk["field"], json!(fields), "{described}");
}

// ---------------------------------------------------------------------------------------
// kill -9 of the server

/// How many kill -9 cycles each crash test runs: `HOTSET_SYNC_CRASH_CYCLES`, or 10 (the
/// issue's number).
pub fn crash_cycles() -> usize {
    std::env::var("HOTSET_SYNC_CRASH_CYCLES").ok().and_then(|n| n.parse().ok()).unwrap_or(10)
}

/// The `counters` table of the crash tests: `version` goes up by one on every update.
pub const COUNTERS_SCHEMA: &str =
    "CREATE TABLE counters (id INT PRIMARY KEY, version INT NOT NULL, payload VARCHAR(100));";
pub const COUNTERS_COLUMNS: &[&str] = &["id", "version", "payload"];

/// Commits small transactions on `counters` until `stop`: updates of 1 to 5 rows (each
/// version up by one), now and then an insert of a new id or a delete (ids are never
/// reused). Returns how many transactions it committed.
pub fn write_counters_until(source: &dyn Source, seed: u64, first_new: i64, stop: &AtomicBool) -> usize {
    let mut rng = Rng(seed);
    let mut next = first_new;
    let mut committed = 0;
    while !stop.load(Ordering::SeqCst) {
        let mut sql = String::new();
        for _ in 0..20 {
            sql.push_str("BEGIN;");
            match rng.below(20) {
                0 => {
                    next += 1;
                    sql.push_str(&format!("INSERT INTO counters VALUES ({next}, 0, 'new {next}');"));
                }
                1 => sql.push_str(&format!("DELETE FROM counters WHERE id = {};", rng.range(1, next))),
                _ => {
                    let ids: Vec<String> = (0..rng.range(1, 5)).map(|_| rng.range(1, next).to_string()).collect();
                    sql.push_str(&format!(
                        "UPDATE counters SET version = version + 1, payload = 'p{}' WHERE id IN ({});",
                        rng.next(),
                        ids.join(", ")
                    ));
                }
            }
            sql.push_str("COMMIT;");
        }
        source.exec(&sql);
        committed += 20;
    }
    committed
}

/// A reader that polls `counters` rows with id <= `window` on whichever server is up
/// (`address`, changed by the test at each restart) until `stop`, asserting that no
/// version it saw ever goes back and neither does the answer's source position, across
/// restarts too. A change applied twice (an old row image applied again after a newer
/// one, as a resume from too early a position would) shows as a version going back.
/// Returns how many answers it checked.
pub fn watch_versions_until(address: &Mutex<String>, window: i64, stop: &AtomicBool) -> usize {
    let body = json!({"filter": [{"field": "id", "op": "<=", "value": window}], "limit": 1000000}).to_string();
    let mut seen: BTreeMap<i64, i64> = BTreeMap::new();
    let mut last_position: Option<String> = None;
    let mut answers = 0;
    while !stop.load(Ordering::SeqCst) {
        let current = address.lock().unwrap().clone();
        // The server may be down between a kill and its restart: no answer is fine.
        let Ok(response) = request_at(&current, "POST", "/api/v1/namespaces/counters/query", Some(body.as_bytes()))
        else {
            continue;
        };
        if response.status != 200 {
            continue;
        }
        let position = header_position(&response, SOURCE);
        if let (Some(before), Some(now)) = (&last_position, &position) {
            assert!(reached(now, before), "the source position went back from {before} to {now}");
        }
        last_position = position.or(last_position);
        for doc in response.json()["items"].as_array().unwrap() {
            let (id, version) = (doc["id"].as_i64().unwrap(), doc["version"].as_i64().unwrap());
            let before = seen.insert(id, version).unwrap_or(0);
            assert!(version >= before, "row {id}'s version went back from {before} to {version}");
        }
        answers += 1;
    }
    answers
}

/// kill -9 during the stream: a writer commits all along, the server is killed after a
/// random number of applied transactions and restarted on its folder without any
/// declaration (it persisted), `cycles` times; then the namespace equals the table,
/// versions included, and the reader never saw a version go back.
pub fn crash_during_stream(source: &dyn Source, cycles: usize) {
    let mut rng = Rng::from_env("kill -9 during the stream");
    source.exec(COUNTERS_SCHEMA);
    source.exec(&source.fill_sql("counters", 1000));
    let dir = tempfile::tempdir().unwrap();
    let mut server = Server::start(dir.path(), &[]);
    declare(&server, &declaration(source, json!([{"table": source.qualified("counters"), "namespace": "counters"}])));
    wait_streaming(&server);
    let address = Mutex::new(server.http.clone());
    let (stop_writer, stop_reader) = (AtomicBool::new(false), AtomicBool::new(false));
    let seed = rng.next();
    let server = std::thread::scope(|scope| {
        let writer = scope.spawn(|| write_counters_until(source, seed, 1000, &stop_writer));
        let reader = scope.spawn(|| watch_versions_until(&address, 200, &stop_reader));
        for cycle in 0..cycles {
            let after = rng.range(1, 60) as u64;
            wait_status(&server, &format!("cycle {cycle}: {after} transactions applied"), |status| {
                status["transactions"].as_u64().is_some_and(|n| n >= after)
            });
            server.kill();
            server = Server::start(dir.path(), &[]);
            *address.lock().unwrap() = server.http.clone();
        }
        stop_writer.store(true, Ordering::SeqCst);
        let written = writer.join().expect("the writer");
        let position = source.position();
        wait_applied(&server, "counters", &position);
        stop_reader.store(true, Ordering::SeqCst);
        let answers = reader.join().expect("no version went back");
        assert!(written > 0 && answers > 0, "{written} transactions written, {answers} answers read");
        server
    });
    assert_same(&server, source, "counters", "counters", COUNTERS_COLUMNS, &["id"]);
    assert!(is_streaming(&status(&server, SOURCE)));
}

/// kill -9 during the initial copy of a table of `rows` rows: killed when the copy has
/// reached a random row count (or has finished), `cycles` times, while a writer changes
/// the table; each restart resumes (the declaration persisted). Then the namespace equals
/// the table. At least one kill must have hit the copy itself.
pub fn crash_during_copy(source: &dyn Source, rows: u64, cycles: usize) {
    let mut rng = Rng::from_env("kill -9 during the copy");
    source.exec(COUNTERS_SCHEMA);
    source.exec(&source.fill_sql("counters", rows));
    let dir = tempfile::tempdir().unwrap();
    // Small copy groups: the copy's progress shows in fine steps, so a kill can land
    // inside it whatever the machine's speed (16,384-row groups made a 200,000-row copy a
    // dozen steps, and a busy machine could see none of them).
    let start = || {
        Server::start_with_env(
            dir.path(),
            &["--resp-port", "0", "--http-port", "0"],
            &[],
            &[("HOTSET_SYNC_COPY_GROUP_ROWS", "500")],
        )
    };
    let mut server = start();
    declare(&server, &declaration(source, json!([{"table": source.qualified("counters"), "namespace": "counters"}])));
    let address = Mutex::new(server.http.clone());
    let (stop_writer, stop_reader) = (AtomicBool::new(false), AtomicBool::new(false));
    let seed = rng.next();
    let mut during_copy = 0;
    let server = std::thread::scope(|scope| {
        let writer = scope.spawn(|| write_counters_until(source, seed, rows as i64, &stop_writer));
        let reader = scope.spawn(|| watch_versions_until(&address, 200, &stop_reader));
        for cycle in 0..cycles {
            // Short of the end: the last groups go by faster than a poll.
            let target = rng.below(rows * 9 / 10);
            // Polled often: the whole copy takes a few hundred milliseconds.
            let seen = poll_status(&server, &format!("cycle {cycle}: the copy at row {target} or done"), |status| {
                // Not while it starts or retries: a kill then would not be during the copy.
                let copied = status["tables"][0]["rows_copied"].as_u64().unwrap_or(0);
                match status["state"].as_str() {
                    Some("snapshot") => copied >= target,
                    Some("streaming" | "failed") => true,
                    _ => false,
                }
            });
            let hit = seen["state"] == "snapshot";
            during_copy += usize::from(hit);
            server.kill();
            server = start();
            *address.lock().unwrap() = server.http.clone();
            if !hit {
                // The copy ended before the kill: copy again, so the next kill has one to hit.
                let response = curl_full(&server, "POST", &format!("/api/v1/sources/{SOURCE}/resync"), None);
                assert_eq!(response.status, 202, "resync: {}", response.body);
            }
        }
        stop_writer.store(true, Ordering::SeqCst);
        writer.join().expect("the writer");
        wait_streaming(&server);
        let position = source.position();
        wait_applied(&server, "counters", &position);
        stop_reader.store(true, Ordering::SeqCst);
        reader.join().expect("no version went back");
        server
    });
    eprintln!("{during_copy} of {cycles} kills hit the copy");
    assert!(during_copy > 0, "no kill hit the copy: the table is copied too fast for this test");
    assert_same(&server, source, "counters", "counters", COUNTERS_COLUMNS, &["id"]);
}

// ---------------------------------------------------------------------------------------
// The source stopped

/// The source stopped for a while during the stream: queries keep answering, the status
/// says `retrying` with the error, and once the source is back everything catches up.
pub fn source_stopped(source: &mut dyn Source) {
    let mut rng = Rng::from_env("the source stopped");
    source.exec(COUNTERS_SCHEMA);
    source.exec(&source.fill_sql("counters", 500));
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    declare(&server, &declaration(source, json!([{"table": source.qualified("counters"), "namespace": "counters"}])));
    wait_streaming(&server);
    source.exec(&counter_updates(&mut rng, 500, 20));
    wait_applied(&server, "counters", &source.position());

    source.stop();
    let retrying = wait_status(&server, "the status to say retrying with the error", |status| {
        status["state"] == "retrying" && status["last_error"]["message"].as_str().is_some_and(|m| !m.is_empty())
    });
    assert!(retrying["last_error"]["at"].is_string(), "last_error.at: {retrying}");
    // Reads go on from memory while the source is away, with the position they reflect.
    assert_eq!(documents(&server, "counters").len(), 500);
    let response = curl_full(&server, "GET", "/api/v1/namespaces/counters/items/1", None);
    assert_eq!(response.status, 200, "GET item while the source is down: {}", response.body);
    assert!(header_position(&response, SOURCE).is_some(), "{:?}", response.headers);
    let sql = curl_full(&server, "POST", "/api/v1/sql", Some(b"SELECT COUNT(*) FROM counters"));
    assert_eq!(sql.status, 200, "SQL while the source is down: {}", sql.body);

    source.resume();
    source.exec(&counter_updates(&mut rng, 500, 20));
    wait_applied(&server, "counters", &source.position());
    wait_status(&server, "streaming again", is_streaming);
    assert_same(&server, source, "counters", "counters", COUNTERS_COLUMNS, &["id"]);
}

/// `count` transactions each updating 1 to 5 of the rows 1..=rows (version + 1).
pub fn counter_updates(rng: &mut Rng, rows: i64, count: usize) -> String {
    let mut sql = String::new();
    for _ in 0..count {
        let ids: Vec<String> = (0..rng.range(1, 5)).map(|_| rng.range(1, rows).to_string()).collect();
        sql.push_str(&format!(
            "BEGIN; UPDATE counters SET version = version + 1, payload = 'q{}' WHERE id IN ({}); COMMIT;",
            rng.next(),
            ids.join(", ")
        ));
    }
    sql
}
