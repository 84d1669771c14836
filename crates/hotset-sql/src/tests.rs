//! SQL translation and execution on an in-memory database.

use super::*;
use hotset_core::query::{Expr, JoinKind};
use hotset_core::{Aggregation, Cond, Database, Durability, FieldType, IndexDef, Op};
use serde_json::json;

fn query_of(sql: &str) -> Query {
    match parse(sql).unwrap_or_else(|e| panic!("{sql}: {e}")) {
        Statement::Select(select) => select.query,
        other => panic!("{sql}: not a select: {other:?}"),
    }
}

fn error_of(sql: &str) -> SqlError {
    parse(sql).expect_err(sql)
}

#[test]
fn select_translates_to_the_builder_form() {
    let query =
        query_of("SELECT * FROM items WHERE name = 'x' AND year > 2010 ORDER BY year DESC, id LIMIT 10 OFFSET 5");
    let expected = Query::new("items")
        .filter(Cond::new("name", Op::Eq, "x"))
        .filter(Cond::new("year", Op::Gt, 2010))
        .sort("year", true)
        .sort("id", false)
        .limit(10)
        .offset(5);
    assert_eq!(query, expected);
    let query = query_of("SELECT COUNT(*), * FROM items WHERE 2010 < year AND NOT (a IN (1, 2) OR b IS NULL)");
    assert!(query.total);
    assert_eq!(
        query.filter,
        Some(Cond::And(vec![
            Cond::new("year", Op::Gt, 2010),
            Cond::Not(Box::new(Cond::Or(vec![
                Cond::Field { field: "a".into(), op: Op::In, values: vec![json!(1), json!(2)] },
                Cond::Field { field: "b".into(), op: Op::Empty, values: vec![] },
            ]))),
        ]))
    );
    let query =
        query_of("SELECT * FROM t WHERE p BETWEEN -1.5 AND 3 AND s NOT LIKE 'a%' AND t.x.y <> 'q' AND z IS NOT NULL");
    let Some(Cond::And(parts)) = query.filter else { panic!("an AND") };
    assert_eq!(parts[0], Cond::Field { field: "p".into(), op: Op::Range, values: vec![json!(-1.5), json!(3)] });
    assert_eq!(parts[1], Cond::Not(Box::new(Cond::new("s", Op::Like, "a%"))));
    assert_eq!(parts[2], Cond::new("x.y", Op::Ne, "q"), "the table qualifier is dropped, the rest is a path");
    assert_eq!(parts[3], Cond::Field { field: "z".into(), op: Op::Any, values: vec![] });
}

#[test]
fn joins_aggregations_and_groups() {
    let select = match parse(
        "SELECT * FROM books b LEFT JOIN authors a ON b.author_id = a.id WHERE a.country = 'NO' AND b.year >= 2000",
    )
    .unwrap()
    {
        Statement::Select(select) => select,
        other => panic!("{other:?}"),
    };
    let join = &select.query.joins[0];
    assert_eq!((join.kind, join.alias.as_str(), join.query.namespace.as_str()), (JoinKind::Left, "a", "authors"));
    assert_eq!((join.on[0].left_field.as_str(), join.on[0].right_field.as_str()), ("author_id", "id"));
    assert_eq!(join.query.filter, Some(Cond::new("country", Op::Eq, "NO")), "joined conditions go to the joined query");
    assert_eq!(select.query.filter, Some(Cond::new("year", Op::Ge, 2000)));

    let select = match parse("SELECT SUM(price) AS revenue, COUNT(*), COUNT(DISTINCT city) FROM orders").unwrap() {
        Statement::Select(select) => select,
        other => panic!("{other:?}"),
    };
    assert_eq!(select.query.aggregations, vec![Aggregation::Sum("price".into()), Aggregation::Distinct("city".into())]);
    assert_eq!((select.query.total, select.query.limit), (true, Some(0)));
    let Projection::Aggregates(names) = &select.projection else { panic!("aggregates") };
    assert_eq!(names[0], ("revenue".to_string(), Some(0)));

    let select =
        match parse("SELECT year, COUNT(*) AS n FROM items GROUP BY year ORDER BY COUNT(*) DESC LIMIT 3").unwrap() {
            Statement::Select(select) => select,
            other => panic!("{other:?}"),
        };
    let Some(Aggregation::Facet(facet)) = select.query.aggregations.first() else { panic!("a facet") };
    assert_eq!(
        (facet.fields.clone(), facet.limit, facet.sort[0].field.as_str(), facet.sort[0].desc),
        (vec!["year".to_string()], Some(3), "count", true)
    );
}

#[test]
fn unknown_qualifiers_are_nested_paths_of_the_main_namespace() {
    let query = query_of("SELECT * FROM t WHERE a.x = 1 OR u.y = 2");
    assert_eq!(query.filter, Some(Cond::Or(vec![Cond::new("a.x", Op::Eq, 1), Cond::new("u.y", Op::Eq, 2)])));
}

#[test]
fn writes_translate() {
    let Statement::Insert { namespace, docs, conflict } =
        parse("INSERT INTO items (id, name, \"meta.tag\") VALUES (1, 'a', 'x'), (2, 'b', NULL)").unwrap()
    else {
        panic!("an insert")
    };
    assert_eq!(namespace, "items");
    assert_eq!(conflict, Conflict::Refuse, "a plain INSERT never upserts");
    assert_eq!(
        docs,
        vec![json!({"id": 1, "name": "a", "meta": {"tag": "x"}}), json!({"id": 2, "name": "b", "meta": {"tag": null}})]
    );
    let Statement::Insert { docs, .. } = parse(r#"INSERT INTO items VALUES ('{"id": 3, "tags": [1, 2]}')"#).unwrap()
    else {
        panic!("an insert")
    };
    assert_eq!(docs, vec![json!({"id": 3, "tags": [1, 2]})]);
    let Statement::Update { query, sets } =
        parse("UPDATE items SET price = price * 2 + 1, name = 'x' WHERE id = 3").unwrap()
    else {
        panic!("an update")
    };
    assert_eq!(query, Query::new("items").filter(Cond::new("id", Op::Eq, 3)));
    let Some(SetField::Set(field, expr)) = sets.first() else { panic!("a set") };
    assert_eq!(field, "price");
    assert_eq!(
        *expr,
        Expr::field("price")
            .binary(hotset_core::query::ArithOp::Mul, Expr::value(2))
            .binary(hotset_core::query::ArithOp::Add, Expr::value(1))
    );
    let Statement::Delete { query } = parse("DELETE FROM items WHERE year < 2000").unwrap() else { panic!("a delete") };
    assert_eq!(query, Query::new("items").filter(Cond::new("year", Op::Lt, 2000)));
}

#[test]
fn errors_point_at_the_position() {
    let error = error_of("SELECT * FORM items");
    assert_eq!((error.line, error.column), (1, 10), "{error}");
    let error = error_of("SELECT * FROM items WHERE\n  a = b");
    assert_eq!((error.line, error.column), (2, 3), "{error}");
    assert!(error.message.contains("a field on one side and a literal on the other"), "{error}");
    let error = error_of("SELECT * FROM items WHERE upper(a) = 'X'");
    assert_eq!((error.line, error.column), (1, 27), "{error}");
    let error = error_of("SELECT * FROM items WHERE a = NULL");
    assert!(error.message.contains("IS NULL"), "{error}");
    for (sql, expected) in [
        ("CREATE VIEW v AS SELECT * FROM t", "unsupported statement"),
        ("SELECT * FROM a, b", "exactly one FROM"),
        ("SELECT DISTINCT a FROM t", "SELECT DISTINCT is not supported"),
        ("SELECT a FROM t GROUP BY b", "select the grouped fields"),
        ("SELECT * FROM t LIMIT -1", "whole number"),
        ("SELECT * FROM t RIGHT JOIN u ON t.a = u.b", "only INNER and LEFT"),
        ("SELECT * FROM t JOIN u ON t.a = t.b", "ON compares a field of the main namespace"),
        ("INSERT INTO t (a, b) VALUES (1)", "1 values for 2 columns"),
        ("SELECT 1; SELECT 2", "one statement at a time"),
        ("", "no SQL statement"),
    ] {
        match parse(sql) {
            Err(error) => assert!(error.to_string().contains(expected), "{sql}: {error}"),
            Ok(statement) => assert!(expected.is_empty(), "{sql} parsed: {statement:?}"),
        }
    }
}

fn sample() -> Database {
    let db = Database::new();
    db.create_namespace(
        "items",
        vec![IndexDef::hash("id", FieldType::Int).pk(), IndexDef::tree("year", FieldType::Int)],
    )
    .unwrap();
    db.create_namespace("authors", vec![IndexDef::hash("id", FieldType::Int).pk()]).unwrap();
    for id in 0..20 {
        db.upsert("items", &json!({"id": id, "year": 2000 + id % 4, "author": id % 3, "price": id, "meta": {"n": id}}))
            .unwrap();
    }
    for id in 0..2 {
        db.upsert("authors", &json!({"id": id, "name": format!("author {id}")})).unwrap();
    }
    db
}

fn run(db: &Database, sql: &str) -> Value {
    let statement = parse(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
    serde_json::from_slice(&execute(db, &statement, Durability::Wait).unwrap_or_else(|e| panic!("{sql}: {e}"))).unwrap()
}

#[test]
fn execution_answers_in_the_documented_shape() {
    let db = sample();
    let all = run(&db, "SELECT COUNT(*), * FROM items WHERE year = 2001 ORDER BY id DESC LIMIT 2");
    assert_eq!(all["total"], 5);
    assert_eq!(
        all["items"].as_array().unwrap().iter().map(|d| d["id"].as_i64().unwrap()).collect::<Vec<_>>(),
        vec![17, 13]
    );
    let fields = run(&db, "SELECT id, meta.n AS n, missing FROM items WHERE id IN (3, 4) ORDER BY id");
    assert_eq!(fields["items"], json!([{"id": 3, "n": 3, "missing": null}, {"id": 4, "n": 4, "missing": null}]));
    assert!(fields.get("total").is_none(), "total only when asked");
    let aggregates = run(&db, "SELECT COUNT(*) AS n, SUM(price), MAX(price) AS top FROM items WHERE year >= 2002");
    assert_eq!(aggregates["items"], json!([{"n": 10, "sum(price)": 105, "top": 19}]));
    let groups = run(&db, "SELECT year, COUNT(*) AS n FROM items WHERE id < 10 GROUP BY year ORDER BY year");
    assert_eq!(
        groups["items"],
        json!([{"year": 2000, "n": 3}, {"year": 2001, "n": 3}, {"year": 2002, "n": 2}, {"year": 2003, "n": 2}])
    );
    let joined = run(&db, "SELECT * FROM items i INNER JOIN authors a ON i.author = a.id WHERE i.id < 3 ORDER BY i.id");
    let ids: Vec<i64> = joined["items"].as_array().unwrap().iter().map(|d| d["id"].as_i64().unwrap()).collect();
    assert_eq!(ids, vec![0, 1], "id 2's author 2 does not exist: the inner join drops it");
    assert_eq!(joined["items"][1]["a"][0]["name"], "author 1");
    assert!(run(&db, "EXPLAIN SELECT * FROM items WHERE year = 2001")["explain"]["steps"].is_array());

    assert_eq!(run(&db, "INSERT INTO items (id, year) VALUES (100, 1999), (101, 1999)")["affected"], 2);
    assert_eq!(run(&db, "UPDATE items SET price = price + 1000 WHERE year = 1999")["affected"], 2);
    assert_eq!(
        run(&db, "SELECT price FROM items WHERE id = 100")["items"],
        json!([{"price": null}]),
        "null + 1000 stays null"
    );
    assert_eq!(run(&db, "UPDATE items SET price = 5 WHERE id = 100")["affected"], 1);
    assert_eq!(run(&db, "SELECT price FROM items WHERE id = 100")["items"], json!([{"price": 5}]));
    assert_eq!(run(&db, "DELETE FROM items WHERE year = 1999")["affected"], 2);
    assert_eq!(run(&db, "SELECT COUNT(*) FROM items")["items"], json!([{"count(*)": 20}]));
    let error = execute(&db, &parse("SELECT * FROM nope").unwrap(), Durability::Wait).unwrap_err();
    assert_eq!(error.to_string(), "namespace 'nope' does not exist");
}

#[test]
fn full_text_match_rank_and_markup() {
    let db = sample();
    assert_eq!(run(&db, "CREATE INDEX search ON items USING TEXT (title, body)")["affected"], 1);
    let docs = [
        (1, "Cast iron frying pan", "Heavy pan for searing"),
        (2, "Pan lid", "Glass lid for a frying or sauce pan"),
        (3, "Wireless headphones", "Noise cancelling"),
    ];
    for (id, title, body) in docs {
        db.upsert("items", &json!({"id": id, "year": 2001, "title": title, "body": body})).unwrap();
    }
    let ids = |answer: &Value| -> Vec<i64> {
        answer["items"].as_array().unwrap().iter().map(|d| d["id"].as_i64().unwrap()).collect()
    };
    // Best rank first by default; rank() selected and sorted on.
    let ranked = run(&db, "SELECT id, rank() FROM items WHERE MATCH(search, 'frying pan')");
    assert_eq!(ids(&ranked), [1, 2]);
    let (first, second) =
        (ranked["items"][0]["rank()"].as_f64().unwrap(), ranked["items"][1]["rank()"].as_f64().unwrap());
    assert!(first > second && second > 0.0, "{ranked}");
    assert_eq!(ids(&run(&db, "SELECT id FROM items WHERE MATCH(search, 'frying pan') ORDER BY rank()")), [2, 1]);
    // One field of the index; combined with other conditions and a total.
    let lids = run(&db, "SELECT COUNT(*), id FROM items WHERE MATCH(body, 'lid') AND year = 2001");
    assert_eq!((ids(&lids), lids["total"].as_i64()), (vec![2], Some(1)));
    assert_eq!(ids(&run(&db, "SELECT id FROM items WHERE MATCH (title) AGAINST ('headphone')")), [3]);
    assert_eq!(ids(&run(&db, "SELECT id FROM items WHERE MATCH(search, 'pan') AND NOT MATCH(title, 'lid')")), [1]);
    let marked =
        run(&db, "SELECT highlight(title, '[', ']') AS t, snippet(body) FROM items WHERE MATCH(search, 'lid')");
    assert_eq!(marked["items"][0]["t"], "Pan [lid]");
    assert_eq!(marked["items"][0]["snippet(body)"], "Glass <b>lid</b> for a frying or sauce");
    let all = run(&db, "SELECT *, rank() FROM items WHERE MATCH(search, 'headphones')");
    assert!(all["items"][0]["_rank"].as_f64().unwrap() > 0.0);
    for (sql, expected) in [
        ("SELECT * FROM items WHERE MATCH(search)", "MATCH takes a field"),
        ("SELECT * FROM items WHERE MATCH(search, 5)", "query text as a string"),
        ("SELECT rank(1) FROM items", "rank() takes no arguments"),
    ] {
        let error = parse(sql).expect_err(sql);
        assert!(error.message.contains(expected), "{sql}: {error}");
    }
    for (sql, expected) in [
        ("SELECT * FROM items WHERE MATCH(year, 'x')", "no text index is named 'year'"),
        ("SELECT * FROM items WHERE MATCH(search, '\"open')", "not closed"),
        ("SELECT * FROM items ORDER BY rank()", "needs a full-text MATCH"),
    ] {
        let error = execute(&db, &parse(sql).unwrap(), Durability::Wait).unwrap_err().to_string();
        assert!(error.contains(expected), "{sql}: {error}");
    }
}

mod ddl;
mod deep;
mod upsert;

/// Regression: a quoted dotted column in SET (`"meta.tag"`) was written as the path
/// `"meta` . `tag"`, quotes included, where a condition or an INSERT reads meta.tag.
#[test]
fn update_sets_a_quoted_dotted_column_as_a_path() {
    let db = Database::new();
    run(&db, "CREATE TABLE t (id INT PRIMARY KEY)");
    run(&db, r#"INSERT INTO t (id, "meta.tag") VALUES (1, 'old')"#);
    run(&db, r#"UPDATE t SET "meta.tag" = 'new' WHERE id = 1"#);
    assert_eq!(run(&db, "SELECT * FROM t")["items"], json!([{"id": 1, "meta": {"tag": "new"}}]));
    assert_eq!(run(&db, "SELECT COUNT(*) AS n FROM t WHERE meta.tag = 'new'")["items"][0]["n"], 1);
}

/// A SQL error carries the code the same mistake gets through the document API, so every
/// interface reports one code for it: unreadable SQL is `bad_query`, a column type no index
/// takes `schema`, a row that is no document `bad_document`.
#[test]
fn sql_errors_carry_the_document_api_code_of_the_same_mistake() {
    use hotset_core::error::ErrorCode;
    let cases = [
        ("SELEC * FROM t", ErrorCode::BadQuery),
        ("SELECT * FROM t WHERE", ErrorCode::BadQuery),
        ("CREATE TABLE t (id BLOB PRIMARY KEY)", ErrorCode::Schema),
        ("CREATE TABLE t (id INT PRIMARY KEY, tags INT[][])", ErrorCode::Schema),
        ("CREATE INDEX i ON t USING spgist (a)", ErrorCode::Schema),
        ("INSERT INTO t VALUES ('5')", ErrorCode::BadDocument),
        ("INSERT INTO t VALUES ('{\"id\": ')", ErrorCode::BadDocument),
    ];
    for (sql, code) in cases {
        assert_eq!(error_of(sql).code, code, "{sql}: {}", error_of(sql));
    }
}

#[test]
fn reads_only_looks_at_the_first_word_past_comments() {
    use crate::reads_only;
    for read in
        ["SELECT 1", "  select * from t", "-- note\nSELECT * FROM t", "/* a */ explain select * from t", "(SELECT 1)"]
    {
        assert!(reads_only(read), "{read}");
    }
    for write in [
        "INSERT INTO t VALUES (1)",
        "update t set a = 1",
        "-- select\nDELETE FROM t",
        "/* select */ DROP TABLE t",
        "",
        "selected",
    ] {
        assert!(!reads_only(write), "{write}");
    }
}
