//! SQL DDL, black box: the real `hotset` binary driven over RESP with `DOC.SQL` by the
//! `redis` crate. Schema made in SQL is the engine's (DOC.NSINFO sees it, the planner uses
//! it) and outlives a restart.

mod common;

use common::Server;
use redis::{Connection, RedisResult, cmd};
use serde_json::{Value, json};

fn sql(c: &mut Connection, text: &str) -> Value {
    let answer: String = cmd("DOC.SQL").arg(text).query(c).unwrap_or_else(|e| panic!("{text}: {e}"));
    serde_json::from_str(&answer).unwrap()
}

fn sql_error(c: &mut Connection, text: &str) -> String {
    let result: RedisResult<String> = cmd("DOC.SQL").arg(text).query(c);
    let error = result.expect_err(text);
    format!("{} {}", error.code().unwrap_or("?"), error.detail().unwrap_or(""))
}

fn index_names(c: &mut Connection, namespace: &str) -> Vec<String> {
    let info: String = cmd("DOC.NSINFO").arg(namespace).query(c).unwrap();
    let info: Value = serde_json::from_str(&info).unwrap();
    info["indexes"].as_array().unwrap().iter().map(|i| i["name"].as_str().unwrap().to_string()).collect()
}

#[test]
fn sql_ddl_over_resp_outlives_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let mut c = server.client();
    let affected = |n: usize| json!({"items": [], "affected": n});
    assert_eq!(
        sql(&mut c, "CREATE TABLE books (id INT PRIMARY KEY, year INT, author TEXT COLLATE utf8_ci)"),
        affected(1)
    );
    assert_eq!(sql(&mut c, "CREATE TABLE IF NOT EXISTS books (id INT PRIMARY KEY)"), affected(0));
    assert_eq!(
        sql(&mut c, "INSERT INTO books (id, year, author) VALUES (1, 1999, 'Ann'), (2, 2011, 'bob')"),
        affected(2)
    );
    assert_eq!(sql(&mut c, "CREATE INDEX by_year ON books (year)"), affected(1));
    assert_eq!(index_names(&mut c, "books"), ["id", "year", "author", "by_year"]);
    let explained = sql(&mut c, "EXPLAIN SELECT * FROM books WHERE year > 2000");
    assert!(explained["explain"].to_string().contains("by_year"), "{explained}");
    // A type no index takes: the code the document API gives a bad definition (schema).
    let error = sql_error(&mut c, "CREATE TABLE t (id INT PRIMARY KEY,\n  at TIMESTAMP)");
    assert!(error.starts_with("SCHEMA column type TIMESTAMP is not supported"), "{error}");
    assert!(error.ends_with("at line 2, column 3"), "{error}");
    let error = sql_error(&mut c, "CREATE INDEX by_title ON books (title)");
    assert!(error.contains("the type of field 'title' is not known"), "{error}");
    server.stop();

    let server = Server::start(dir.path(), &[]);
    let mut c = server.client();
    assert_eq!(index_names(&mut c, "books"), ["id", "year", "author", "by_year"], "the schema was recovered");
    assert_eq!(sql(&mut c, "SELECT id FROM books WHERE author = 'ANN'")["items"], json!([{"id": 1}]));
    let explained = sql(&mut c, "EXPLAIN SELECT * FROM books WHERE year > 2000");
    assert!(explained["explain"].to_string().contains("by_year"), "{explained}");
    assert_eq!(sql(&mut c, "DROP INDEX by_year ON books"), affected(1));
    assert_eq!(sql(&mut c, "DROP INDEX IF EXISTS books.by_year"), affected(0));
    assert_eq!(sql(&mut c, "TRUNCATE TABLE books"), affected(1));
    assert_eq!(sql(&mut c, "SELECT COUNT(*) FROM books")["items"], json!([{"count(*)": 0}]));
    assert_eq!(sql(&mut c, "DROP TABLE books"), affected(1));
    assert_eq!(sql_error(&mut c, "DROP TABLE books"), "NOT_FOUND namespace 'books' does not exist");
    let names: Vec<String> = cmd("DOC.NSLIST").query(&mut c).unwrap();
    assert!(names.is_empty(), "{names:?}");
    server.stop();
}
