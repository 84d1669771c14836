//! CREATE, DROP and TRUNCATE: translation, refusals with their positions, resolving
//! CREATE INDEX against a namespace, and running DDL on an in-memory database.

use super::{error_of, run};
use crate::{IndexSpec, Statement, execute, parse};
use hotset_core::{Collation, Database, Durability, FieldType, IndexDef, IndexKind};
use serde_json::{Value, json};

fn created(sql: &str) -> (String, Vec<IndexDef>, bool) {
    match parse(sql).unwrap_or_else(|e| panic!("{sql}: {e}")) {
        Statement::CreateNamespace { name, indexes, if_not_exists } => (name, indexes, if_not_exists),
        other => panic!("{sql}: not a CREATE TABLE: {other:?}"),
    }
}

fn index_spec(sql: &str) -> (String, IndexSpec, bool) {
    match parse(sql).unwrap_or_else(|e| panic!("{sql}: {e}")) {
        Statement::CreateIndex { namespace, index, if_not_exists } => (namespace, index, if_not_exists),
        other => panic!("{sql}: not a CREATE INDEX: {other:?}"),
    }
}

/// Each case: the SQL, a part of the message, and the line and column it points at.
fn assert_refused(cases: &[(&str, &str, u64, u64)]) {
    for &(sql, message, line, column) in cases {
        let error = error_of(sql);
        assert!(error.message.contains(message), "{sql}: {error}");
        assert_eq!((error.line, error.column), (line, column), "{sql}: {error}");
    }
}

/// Runs `sql` and returns the engine's error text.
fn run_error(db: &Database, sql: &str) -> String {
    let statement = parse(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
    execute(db, &statement, Durability::Wait).expect_err(sql).to_string()
}

#[test]
fn create_table_declares_the_primary_key_and_typed_columns() {
    let (name, indexes, if_not_exists) = created(
        "CREATE TABLE IF NOT EXISTS items (id BIGINT PRIMARY KEY, year INT NOT NULL, price NUMERIC(10, 2), \
         name VARCHAR(40) COLLATE utf8_ci, ok BOOLEAN, tags TEXT[], \"meta.tag\" TEXT)",
    );
    assert_eq!((name.as_str(), if_not_exists), ("items", true));
    let expected = [
        IndexDef::hash("id", FieldType::Int).pk(),
        IndexDef::store("year", FieldType::Int),
        IndexDef::store("price", FieldType::Double),
        IndexDef::store("name", FieldType::String).collate(Collation::Utf8Ci),
        IndexDef::store("ok", FieldType::Bool),
        IndexDef::store("tags", FieldType::String).array(),
        IndexDef::store("meta.tag", FieldType::String),
    ];
    assert_eq!(indexes, expected, "a quoted dotted column declares a nested field");
    assert_eq!(indexes[1].kind, IndexKind::Store, "other columns are typed store-only indexes");

    let (_, indexes, if_not_exists) =
        created("CREATE TABLE t (a INT, b TEXT COLLATE ascii_ci, v INT, CONSTRAINT t_pk PRIMARY KEY (a, b))");
    assert!(!if_not_exists);
    let key = IndexDef::composite_typed(&[("a", FieldType::Int), ("b", FieldType::String)], IndexKind::Hash)
        .pk()
        .collate(Collation::AsciiCi);
    assert_eq!(indexes, [key, IndexDef::store("v", FieldType::Int)], "key columns get no store index of their own");
    let (_, indexes, _) = created("CREATE TABLE t (\"Key\" TEXT NOT NULL PRIMARY KEY)");
    assert_eq!(indexes, [IndexDef::hash("Key", FieldType::String).pk()]);
}

#[test]
fn column_types_map_to_field_types() {
    let cases = [
        ("INT", FieldType::Int, false),
        ("INTEGER", FieldType::Int, false),
        ("BIGINT", FieldType::Int, false),
        ("SMALLINT", FieldType::Int, false),
        ("INT UNSIGNED", FieldType::Int, false),
        ("REAL", FieldType::Double, false),
        ("DOUBLE", FieldType::Double, false),
        ("DOUBLE PRECISION", FieldType::Double, false),
        ("FLOAT(8)", FieldType::Double, false),
        ("NUMERIC", FieldType::Double, false),
        ("DECIMAL(10, 2)", FieldType::Double, false),
        ("TEXT", FieldType::String, false),
        ("VARCHAR(3)", FieldType::String, false),
        ("CHARACTER VARYING(3)", FieldType::String, false),
        ("CHAR(2)", FieldType::String, false),
        ("STRING", FieldType::String, false),
        ("BOOL", FieldType::Bool, false),
        ("BOOLEAN", FieldType::Bool, false),
        ("INT[]", FieldType::Int, true),
        ("TEXT[3]", FieldType::String, true),
        ("ARRAY<DOUBLE>", FieldType::Double, true),
    ];
    for (sql_type, field_type, array) in cases {
        let (_, indexes, _) = created(&format!("CREATE TABLE t (id INT PRIMARY KEY, c {sql_type})"));
        let column = &indexes[1];
        assert_eq!((column.field_type, column.array), (field_type, array), "{sql_type}");
    }
}

#[test]
fn create_table_refusals_point_at_the_position() {
    assert_refused(&[
        ("CREATE TABLE t (a INT)", "needs a PRIMARY KEY", 1, 14),
        ("CREATE TABLE t (id INT PRIMARY KEY,\n  b JSONB)", "column type JSONB is not supported", 2, 3),
        ("CREATE TABLE t (id INT PRIMARY KEY, at TIMESTAMP)", "column type TIMESTAMP is not supported", 1, 37),
        ("CREATE TABLE t (id INT PRIMARY KEY, m INT[][])", "arrays of arrays", 1, 37),
        ("CREATE TABLE t (id INT PRIMARY KEY, b INT DEFAULT 3)", "DEFAULT (documents are stored as they come)", 1, 37),
        ("CREATE TABLE t (id INT PRIMARY KEY, b INT UNIQUE)", "UNIQUE (only the primary key is unique)", 1, 37),
        ("CREATE TABLE t (id INT PRIMARY KEY, u INT REFERENCES users (id))", "REFERENCES", 1, 37),
        ("CREATE TABLE t (id INT PRIMARY KEY, b INT CHECK (b > 0))", "CHECK is not supported", 1, 37),
        ("CREATE TABLE t (id INT PRIMARY KEY, b INT AUTO_INCREMENT)", "column option 'AUTO_INCREMENT'", 1, 37),
        ("CREATE TABLE t (id INT PRIMARY KEY, b INT, UNIQUE (b))", "UNIQUE constraints are not supported", 1, 52),
        ("CREATE TABLE t (id INT PRIMARY KEY, b INT, CHECK (b > 0))", "CHECK constraints", 1, 51),
        ("CREATE TABLE t (id INT PRIMARY KEY, b INT, FOREIGN KEY (b) REFERENCES u (id))", "FOREIGN KEY", 1, 57),
        ("CREATE TABLE t (a INT PRIMARY KEY, b INT, PRIMARY KEY (b))", "column 'a' declares another", 1, 17),
        ("CREATE TABLE t (a INT PRIMARY KEY, b INT PRIMARY KEY)", "column 'b' declares another", 1, 36),
        ("CREATE TABLE t (a INT, PRIMARY KEY (a), PRIMARY KEY (a))", "a table has one PRIMARY KEY", 1, 54),
        ("CREATE TABLE t (a INT, PRIMARY KEY (b))", "primary key column 'b' is not declared", 1, 37),
        ("CREATE TABLE t (a INT, PRIMARY KEY (a DESC))", "ASC, DESC and NULLS are not supported", 1, 37),
        ("CREATE TABLE t (a INT[] PRIMARY KEY)", "primary key column 'a' cannot be an array", 1, 17),
        ("CREATE TABLE t (id INT PRIMARY KEY, id TEXT)", "column 'id' is declared twice", 1, 37),
        ("CREATE TABLE t (id INT PRIMARY KEY, n TEXT COLLATE \"C\")", "unknown collation 'c'", 1, 37),
        (
            "CREATE TABLE t (id INT PRIMARY KEY, n INT COLLATE utf8_ci)",
            "a collation applies to string fields only",
            1,
            37,
        ),
        ("CREATE TABLE s.t (id INT PRIMARY KEY)", "expected a namespace name, found s.t", 1, 14),
        ("CREATE TABLE t (id INT PRIMARY KEY) WITH (fillfactor = 70)", "no OR REPLACE, TEMPORARY", 1, 14),
        ("CREATE TABLE t (id INT PRIMARY KEY) ENGINE = InnoDB", "table options", 1, 14),
        ("CREATE TEMPORARY TABLE t (id INT PRIMARY KEY)", "table options", 1, 24),
        ("CREATE OR REPLACE TABLE t (id INT PRIMARY KEY)", "table options", 1, 25),
        ("CREATE TABLE t AS SELECT * FROM u", "CREATE TABLE ... AS SELECT is not supported", 1, 14),
        ("CREATE TABLE t LIKE u", "table options", 1, 14),
    ]);
}

#[test]
fn create_index_translates_fields_kind_and_options() {
    let (namespace, spec, if_not_exists) = index_spec("CREATE INDEX by_year ON books (year)");
    assert_eq!((namespace.as_str(), if_not_exists), ("books", false));
    let tree = IndexSpec {
        name: "by_year".into(),
        fields: vec!["year".into()],
        kind: IndexKind::Tree,
        field_type: None,
        collate: None,
        array: None,
        sparse: false,
    };
    assert_eq!(spec, tree, "a tree by default, as PostgreSQL's btree");
    for sql in ["CREATE INDEX by_year ON books USING HASH (year)", "CREATE INDEX by_year ON books (year) USING HASH"] {
        assert_eq!(index_spec(sql).1, IndexSpec { kind: IndexKind::Hash, ..tree.clone() }, "{sql}");
    }
    assert_eq!(index_spec("CREATE INDEX by_year ON books USING btree (year)").1, tree);

    let (_, spec, if_not_exists) = index_spec(
        "CREATE INDEX ON books (author, \"meta.tag\", a.b) \
         WITH (type = 'string', collate = utf8_ci, array = false, sparse = true)",
    );
    assert!(!if_not_exists);
    assert!(index_spec("CREATE INDEX IF NOT EXISTS i ON books (a)").2);
    let composite = IndexSpec {
        name: "books_author_meta.tag_a.b_idx".into(),
        fields: vec!["author".into(), "meta.tag".into(), "a.b".into()],
        kind: IndexKind::Tree,
        field_type: Some(FieldType::String),
        collate: Some(Collation::Utf8Ci),
        array: Some(false),
        sparse: true,
    };
    assert_eq!(spec, composite, "unnamed indexes are named as PostgreSQL names them; WITH values may be unquoted");
}

#[test]
fn create_index_refusals_point_at_the_position() {
    assert_refused(&[
        ("CREATE UNIQUE INDEX i ON t (a)", "UNIQUE indexes are not supported", 1, 26),
        ("CREATE INDEX i ON t (a) WHERE a > 1", "partial, INCLUDE", 1, 19),
        ("CREATE INDEX i ON t (a) INCLUDE (b)", "partial, INCLUDE", 1, 19),
        ("CREATE INDEX i ON t (a) NULLS NOT DISTINCT", "NULLS DISTINCT", 1, 19),
        ("CREATE INDEX i ON t USING brin (a)", "index type BRIN is not supported", 1, 19),
        ("CREATE INDEX i ON t USING HASH (a) USING BTREE", "give USING once", 1, 19),
        ("CREATE INDEX i ON t (a) COMMENT 'x'", "COMMENT is not supported", 1, 19),
        ("CREATE INDEX i ON t (lower(a))", "an index on the expression lower(a) is not supported", 1, 22),
        ("CREATE INDEX i ON t ()", "Expected: an expression", 1, 22),
        ("CREATE INDEX i ON t (a DESC)", "ASC, DESC and NULLS are not supported", 1, 22),
        ("CREATE INDEX i ON t (a, b,\n a)", "field 'a' is listed twice", 2, 2),
        ("CREATE INDEX s.i ON t (a)", "an index name is one identifier", 1, 14),
        ("CREATE INDEX i ON s.t (a)", "expected a namespace name, found s.t", 1, 19),
        ("CREATE INDEX i ON t (a) WITH (kind = 'x')", "expected WITH (type", 1, 31),
        ("CREATE INDEX i ON t (a) WITH (type = 'date')", "unknown field type 'date'", 1, 38),
        ("CREATE INDEX i ON t (a) WITH (collate = 'de_DE')", "unknown collation 'de_de'", 1, 41),
        ("CREATE INDEX i ON t (a) WITH (array = 'yes')", "expected WITH (type", 1, 31),
        ("CREATE INDEX i ON t (a) WITH (type = 'int', type = 'bool')", "WITH gives type twice", 1, 45),
        ("CREATE INDEX i ON t (a) WITH (sparse = true, SPARSE = false)", "WITH gives sparse twice", 1, 46),
    ]);
}

#[test]
fn create_index_takes_declarations_from_the_namespace() {
    let (_, table, _) =
        created("CREATE TABLE t (id INT PRIMARY KEY, year INT, name TEXT COLLATE utf8_ci, tags TEXT[], code TEXT)");
    let spec = |sql: &str| index_spec(sql).1;
    let resolved = |sql: &str| spec(sql).resolve(&table).unwrap_or_else(|e| panic!("{sql}: {e}"));
    let refused = |sql: &str| spec(sql).resolve(&table).expect_err(sql).to_string();

    assert_eq!(resolved("CREATE INDEX i ON t (year)"), IndexDef::tree("year", FieldType::Int).named("i"));
    assert_eq!(
        resolved("CREATE INDEX i ON t USING HASH (name)"),
        IndexDef::hash("name", FieldType::String).collate(Collation::Utf8Ci).named("i"),
        "the declared collation comes along"
    );
    assert_eq!(
        resolved("CREATE INDEX i ON t (tags) WITH (sparse = true)"),
        IndexDef::tree("tags", FieldType::String).array().sparse().named("i")
    );
    assert_eq!(
        resolved("CREATE INDEX i ON t (author) WITH (type = 'string', collate = 'ascii_ci')"),
        IndexDef::tree("author", FieldType::String).collate(Collation::AsciiCi).named("i")
    );
    assert_eq!(
        resolved("CREATE INDEX ON t (year, author) WITH (type = 'text')"),
        IndexDef::composite_typed(&[("year", FieldType::Int), ("author", FieldType::String)], IndexKind::Tree)
            .named("t_year_author_idx"),
        "WITH types only the fields nothing declares"
    );
    assert_eq!(
        resolved("CREATE INDEX i ON t (id) WITH (type = 'int')"),
        IndexDef::tree("id", FieldType::Int).named("i")
    );

    for (sql, message) in [
        ("CREATE INDEX i ON t (author)", "the type of field 'author' is not known"),
        ("CREATE INDEX i ON t (year) WITH (type = 'string')", "field 'year' is int (index 'year')"),
        ("CREATE INDEX i ON t (name) WITH (collate = 'none')", "compares with collation utf8_ci (index 'name')"),
        ("CREATE INDEX i ON t (code) WITH (collate = 'utf8_ci')", "TEXT COLLATE utf8_ci"),
        ("CREATE INDEX i ON t (tags) WITH (array = false)", "WITH (array = false) contradicts it"),
        ("CREATE INDEX i ON t (year) WITH (array = true)", "WITH (array = true) contradicts it"),
        ("CREATE INDEX i ON t (id, tags)", "a composite index cannot include an array field"),
        ("CREATE INDEX i ON t (year) WITH (collate = 'utf8_ci')", "a collation applies to string fields only"),
    ] {
        let error = refused(sql);
        assert!(error.contains(message), "{sql}: {error}");
    }
}

#[test]
fn drop_and_truncate_translate() {
    let cases = [
        ("DROP TABLE a", Statement::DropNamespaces { names: vec!["a".into()], if_exists: false }),
        (
            "DROP TABLE IF EXISTS a, \"B\" RESTRICT",
            Statement::DropNamespaces { names: vec!["a".into(), "B".into()], if_exists: true },
        ),
        ("DROP INDEX t.i", Statement::DropIndex { namespace: "t".into(), index: "i".into(), if_exists: false }),
        (
            "DROP INDEX IF EXISTS t.\"a+b\"",
            Statement::DropIndex { namespace: "t".into(), index: "a+b".into(), if_exists: true },
        ),
        ("DROP INDEX i ON t", Statement::DropIndex { namespace: "t".into(), index: "i".into(), if_exists: false }),
        (
            "DROP INDEX IF EXISTS i ON t",
            Statement::DropIndex { namespace: "t".into(), index: "i".into(), if_exists: true },
        ),
        ("TRUNCATE a", Statement::Truncate { namespaces: vec!["a".into()] }),
        (
            "TRUNCATE TABLE ONLY a, b CONTINUE IDENTITY RESTRICT",
            Statement::Truncate { namespaces: vec!["a".into(), "b".into()] },
        ),
    ];
    for (sql, expected) in cases {
        assert_eq!(parse(sql).unwrap_or_else(|e| panic!("{sql}: {e}")), expected, "{sql}");
    }
    assert_refused(&[
        ("DROP INDEX i", "DROP INDEX namespace.index or DROP INDEX index ON namespace", 1, 12),
        ("DROP INDEX a.b.c", "DROP INDEX namespace.index", 1, 12),
        ("DROP INDEX t.i ON t", "DROP INDEX namespace.index", 1, 12),
        ("DROP INDEX t.i, t.j", "drop one index at a time", 1, 12),
        ("DROP VIEW v", "DROP VIEW is not supported", 1, 11),
        ("DROP TABLE t ON u", "DROP TABLE takes no ON", 1, 17),
        ("DROP TABLE t CASCADE", "CASCADE, PURGE and TEMPORARY are not supported", 1, 12),
        ("DROP TABLE t PURGE", "CASCADE, PURGE and TEMPORARY", 1, 12),
        ("DROP TEMPORARY TABLE t", "CASCADE, PURGE and TEMPORARY", 1, 22),
        ("DROP TABLE a, b,\n  a", "'a' is named twice", 2, 3),
        ("DROP TABLE s.t", "expected a namespace name, found s.t", 1, 12),
        ("TRUNCATE t RESTART IDENTITY", "RESTART IDENTITY", 1, 10),
        ("TRUNCATE TABLE t CASCADE", "CASCADE", 1, 16),
        ("TRUNCATE t PARTITION (a = 1)", "PARTITION", 1, 10),
        ("EXPLAIN DROP TABLE t", "EXPLAIN explains SELECT only", 1, 20),
        ("EXPLAIN CREATE TABLE t (id INT PRIMARY KEY)", "EXPLAIN explains SELECT only", 1, 22),
        ("ALTER TABLE t ADD COLUMN c INT", "unsupported statement: ALTER TABLE", 1, 13),
    ]);
}

#[test]
fn ddl_runs_create_insert_index_query_drop() {
    let db = Database::new();
    let affected = |n: usize| json!({"items": [], "affected": n});
    assert_eq!(
        run(&db, "CREATE TABLE books (id INT PRIMARY KEY, year INT, title TEXT, author TEXT COLLATE utf8_ci)"),
        affected(1)
    );
    assert_eq!(run(&db, "CREATE TABLE IF NOT EXISTS books (id INT PRIMARY KEY)"), affected(0));
    assert_eq!(run_error(&db, "CREATE TABLE books (id INT PRIMARY KEY)"), "namespace 'books' already exists");
    run(
        &db,
        "INSERT INTO books (id, year, title, author) VALUES (1, 1999, 'A', 'Ann'), (2, 2005, 'b', 'bob'), (3, 2011, 'c', 'ann')",
    );
    let wrong_type = run_error(&db, "INSERT INTO books (id, year) VALUES (4, 'soon')");
    assert!(wrong_type.contains("year"), "the declared type is enforced: {wrong_type}");

    // The type of `year` comes from the table; the index is used.
    assert_eq!(run(&db, "CREATE INDEX by_year ON books (year)"), affected(1));
    let by_year = db.describe("books").unwrap().indexes.into_iter().find(|d| d.name == "by_year").unwrap();
    assert_eq!(by_year, IndexDef::tree("year", FieldType::Int).named("by_year"));
    let explained = run(&db, "EXPLAIN SELECT * FROM books WHERE year > 2000");
    assert!(explained["explain"].to_string().contains("by_year"), "{explained}");
    assert_eq!(run(&db, "SELECT id FROM books WHERE year > 2000 ORDER BY id")["items"], json!([{"id": 2}, {"id": 3}]));

    // `author` compares case-insensitively, as declared; its hash index inherits that and is used.
    assert_eq!(run(&db, "CREATE INDEX by_author ON books USING HASH (author)"), affected(1));
    let explained = run(&db, "EXPLAIN SELECT * FROM books WHERE author = 'ANN'");
    assert!(explained["explain"].to_string().contains("by_author"), "{explained}");
    assert_eq!(
        run(&db, "SELECT id FROM books WHERE author = 'ANN' ORDER BY id")["items"],
        json!([{"id": 1}, {"id": 3}])
    );
    assert_eq!(run(&db, "CREATE INDEX IF NOT EXISTS by_author ON books (nothing_known)"), affected(0));
    assert!(run_error(&db, "CREATE INDEX by_author ON books (title)").contains("already exists"));
    let contradicted = run_error(&db, "CREATE INDEX by_title ON books (title) WITH (collate = 'utf8_ci')");
    assert!(contradicted.contains("would never be used"), "{contradicted}");
    assert_eq!(run(&db, "CREATE INDEX ON books (year, title)"), affected(1));
    assert!(db.describe("books").unwrap().indexes.iter().any(|d| d.name == "books_year_title_idx"));

    assert_eq!(run(&db, "DROP INDEX books.by_author"), affected(1));
    assert_eq!(run(&db, "DROP INDEX books_year_title_idx ON books"), affected(1));
    assert_eq!(run(&db, "DROP INDEX IF EXISTS books.by_author"), affected(0));
    assert_eq!(run(&db, "DROP INDEX IF EXISTS nope.by_author"), affected(0));
    assert_eq!(run_error(&db, "DROP INDEX books.by_author"), "index 'by_author' does not exist in namespace 'books'");
    assert!(run_error(&db, "DROP INDEX books.id").contains("the primary key index cannot be dropped"));
    let explained = run(&db, "EXPLAIN SELECT * FROM books WHERE author = 'ANN'");
    assert!(!explained["explain"].to_string().contains("by_author"), "{explained}");

    assert_eq!(run(&db, "TRUNCATE TABLE books"), affected(1));
    assert_eq!(db.describe("books").unwrap().documents, 0);
    assert_eq!(db.describe("books").unwrap().indexes.len(), 5, "TRUNCATE keeps the schema");
    assert_eq!(run(&db, "DROP TABLE books"), affected(1));
    assert!(db.describe("books").is_err());
    assert_eq!(run_error(&db, "DROP TABLE books"), "namespace 'books' does not exist");
}

#[test]
fn several_namespaces_change_together_or_not_at_all() {
    let db = Database::new();
    for name in ["a", "b"] {
        run(&db, &format!("CREATE TABLE {name} (id INT PRIMARY KEY)"));
        run(&db, &format!("INSERT INTO {name} (id) VALUES (1)"));
    }
    let documents = |name: &str| db.describe(name).unwrap().documents;
    assert_eq!(run_error(&db, "TRUNCATE a, missing"), "namespace 'missing' does not exist");
    assert_eq!(documents("a"), 1, "nothing is truncated when one namespace is missing");
    assert_eq!(run_error(&db, "DROP TABLE a, missing"), "namespace 'missing' does not exist");
    assert_eq!(db.namespace_names().len(), 2, "nothing is dropped when one namespace is missing");
    assert_eq!(run(&db, "TRUNCATE a, b")["affected"], 2);
    assert_eq!((documents("a"), documents("b")), (0, 0));
    assert_eq!(run(&db, "DROP TABLE IF EXISTS a, missing, b")["affected"], 2);
    assert!(db.namespace_names().is_empty());
    let unused: Value = run(&db, "DROP TABLE IF EXISTS a");
    assert_eq!(unused["affected"], 0);
}

#[test]
fn the_readme_ddl_examples_run() {
    let db = Database::new();
    for sql in [
        "CREATE TABLE IF NOT EXISTS items (id BIGINT PRIMARY KEY, year INT, price NUMERIC, name TEXT COLLATE utf8_ci, tags TEXT[])",
        "CREATE TABLE pairs (a INT, b TEXT, PRIMARY KEY (a, b))",
        "CREATE INDEX by_year ON items (year)",
        "CREATE INDEX ON items USING HASH (name)",
        "CREATE INDEX by_city ON items USING HASH (city) WITH (type = 'string', collate = 'utf8_ci', sparse = true)",
        "DROP INDEX IF EXISTS items.by_city",
        "DROP INDEX by_year ON items",
        "TRUNCATE TABLE items",
    ] {
        assert_eq!(run(&db, sql)["affected"], 1, "{sql}");
    }
    assert_eq!(run(&db, "DROP TABLE IF EXISTS items, pairs")["affected"], 2);
    assert!(db.namespace_names().is_empty());
}
