//! INSERT and its conflict actions: a plain INSERT refuses a stored key (and writes
//! nothing of its statement), each upsert form does what PostgreSQL, MySQL or SQLite do
//! with it, and what cannot be honoured is refused by name.

use super::{error_of, run};
use crate::{Conflict, execute, parse};
use hotset_core::{Database, Durability, Error};
use serde_json::{Value, json};

/// `t`: id (pk), n, name; rows 1 (n 10) and 2 (n 20).
fn two_rows() -> Database {
    let db = Database::new();
    run(&db, "CREATE TABLE t (id INT PRIMARY KEY, n INT, name TEXT)");
    run(&db, "INSERT INTO t (id, n, name) VALUES (1, 10, 'a'), (2, 20, 'b')");
    db
}

fn rows(db: &Database) -> Vec<Value> {
    run(db, "SELECT * FROM t ORDER BY id")["items"].as_array().unwrap().clone()
}

fn failed(db: &Database, sql: &str) -> Error {
    execute(db, &parse(sql).unwrap_or_else(|e| panic!("{sql}: {e}")), Durability::Wait).expect_err(sql)
}

#[test]
fn a_plain_insert_refuses_a_stored_key_and_writes_nothing_of_its_statement() {
    let db = two_rows();
    let before = rows(&db);
    let error = failed(&db, "INSERT INTO t (id, n) VALUES (3, 30), (1, 99)");
    assert!(matches!(error, Error::DuplicateKey { .. }), "{error}");
    assert_eq!(error.code(), hotset_core::error::ErrorCode::AlreadyExists);
    assert_eq!(rows(&db), before, "row 3 is not inserted either");
    // Twice the same new key in one statement: the second is the duplicate.
    assert!(matches!(failed(&db, "INSERT INTO t (id) VALUES (5), (5)"), Error::DuplicateKey { .. }));
    assert_eq!(rows(&db), before);
    assert_eq!(run(&db, "INSERT INTO t (id, n) VALUES (3, 30)")["affected"], 1);
}

/// Runs `sql` on the two rows; each form must count `affected` and leave `expected`.
fn assert_each_form(forms: &[&str], affected: u64, expected: &[Value]) {
    for sql in forms {
        let db = two_rows();
        assert_eq!(run(&db, sql)["affected"], affected, "{sql}");
        assert_eq!(rows(&db), expected, "{sql}");
    }
}

#[test]
fn on_conflict_do_nothing_and_insert_ignore_keep_the_stored_document() {
    let forms = [
        "INSERT INTO t (id, n) VALUES (1, 99), (3, 30) ON CONFLICT DO NOTHING",
        "INSERT INTO t (id, n) VALUES (1, 99), (3, 30) ON CONFLICT (id) DO NOTHING",
        "INSERT IGNORE INTO t (id, n) VALUES (1, 99), (3, 30)",
        "INSERT OR IGNORE INTO t (id, n) VALUES (1, 99), (3, 30)",
    ];
    // Only the new row counts.
    let kept =
        [json!({"id": 1, "n": 10, "name": "a"}), json!({"id": 2, "n": 20, "name": "b"}), json!({"id": 3, "n": 30})];
    assert_each_form(&forms, 1, &kept);
}

#[test]
fn upserts_update_the_stored_document_from_its_values_and_the_inserted_row() {
    let forms = [
        "INSERT INTO t (id, n, name) VALUES (1, 5, 'x'), (3, 30, 'c') ON CONFLICT (id) DO UPDATE SET n = n + EXCLUDED.n, name = excluded.name",
        "INSERT INTO t (id, n, name) VALUES (1, 5, 'x'), (3, 30, 'c') ON DUPLICATE KEY UPDATE n = n + VALUES(n), name = VALUES(t.name)",
        "INSERT INTO t (id, n, name) VALUES (1, 5, 'x'), (3, 30, 'c') AS new ON DUPLICATE KEY UPDATE n = t.n + new.n, t.name = new.name",
    ];
    let updated = [
        json!({"id": 1, "n": 15, "name": "x"}),
        json!({"id": 2, "n": 20, "name": "b"}),
        json!({"id": 3, "n": 30, "name": "c"}),
    ];
    assert_each_form(&forms, 2, &updated);
    // A dotted column is a nested field, in the inserted row as in the document.
    let nested = [
        r#"INSERT INTO t (id, "meta.tag") VALUES (1, 'new') ON CONFLICT (id) DO UPDATE SET "meta.tag" = EXCLUDED."meta.tag""#,
        r#"INSERT INTO t (id, "meta.tag") VALUES (1, 'new') ON DUPLICATE KEY UPDATE "meta.tag" = VALUES("meta.tag")"#,
    ];
    for sql in nested {
        let db = two_rows();
        run(&db, sql);
        assert_eq!(rows(&db)[0], json!({"id": 1, "n": 10, "name": "a", "meta": {"tag": "new"}}), "{sql}");
    }
}

#[test]
fn replace_puts_the_whole_new_document_in_place() {
    for sql in ["REPLACE INTO t (id, n) VALUES (1, 7)", "INSERT OR REPLACE INTO t (id, n) VALUES (1, 7)"] {
        let db = two_rows();
        assert_eq!(run(&db, sql)["affected"], 1);
        assert_eq!(rows(&db)[0], json!({"id": 1, "n": 7}), "{sql}: the old name is gone");
    }
    let Ok(crate::Statement::Insert { conflict, .. }) = parse("INSERT OR ABORT INTO t (id) VALUES (1)") else {
        panic!("an insert")
    };
    assert_eq!(conflict, Conflict::Refuse);
}

#[test]
fn a_failed_upsert_changes_nothing() {
    let db = two_rows();
    let before = rows(&db);
    // The update of row 1 fails (text plus a number); row 3 was inserted before it.
    let error = failed(&db, "INSERT INTO t (id, n) VALUES (3, 30), (1, 5) ON CONFLICT (id) DO UPDATE SET n = name + 1");
    assert!(matches!(error, Error::InvalidQuery { .. }), "{error}");
    assert_eq!(rows(&db), before);
    // The primary key cannot be set by an upsert, as by an update.
    let error = failed(&db, "INSERT INTO t (id) VALUES (1) ON CONFLICT (id) DO UPDATE SET id = 9");
    assert!(matches!(error, Error::PrimaryKeyUpdate { .. }), "{error}");
    // A conflict target that is not the primary key.
    let error = failed(&db, "INSERT INTO t (id, n) VALUES (1, 5) ON CONFLICT (n) DO NOTHING");
    assert!(error.to_string().contains("primary key is (id)"), "{error}");
    assert_eq!(rows(&db), before);
}

#[test]
fn forms_that_cannot_be_honoured_are_refused_by_name() {
    for (sql, words) in [
        ("INSERT INTO t (id) VALUES (1) ON CONFLICT ON CONSTRAINT t_pkey DO NOTHING", "ON CONSTRAINT"),
        ("INSERT INTO t (id, n) VALUES (1, 2) ON CONFLICT (id) DO UPDATE SET n = 3 WHERE n > 1", "WHERE"),
        ("INSERT OR FAIL INTO t (id) VALUES (1)", "OR FAIL"),
        ("INSERT OR ROLLBACK INTO t (id) VALUES (1)", "OR ROLLBACK"),
        ("INSERT INTO t (id) VALUES (1) RETURNING id", "RETURNING"),
        ("INSERT IGNORE INTO t (id) VALUES (1) ON DUPLICATE KEY UPDATE n = 1", "cannot be combined"),
        ("INSERT INTO t (id) VALUES (1) AS new(a) ON DUPLICATE KEY UPDATE n = 1", "column aliases"),
    ] {
        let error = error_of(sql);
        assert!(error.message.contains(words), "{sql}: {error}");
    }
}
