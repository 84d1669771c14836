//! Statements built to exhaust a stack: long operator chains, deep brackets, huge texts.
//! Each must translate or fail with an error; none may crash the thread. They run on a
//! thread with a small stack (like a server's I/O thread, or smaller), which `parse`
//! must not exhaust whatever the text.

use super::*;

/// Runs `work` on a thread with a 256 KiB stack (a crash there aborts the test binary).
fn on_small_stack<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::Builder::new().stack_size(256 << 10).spawn(work).expect("spawn").join().expect("no panic")
}

fn or_chain(terms: usize) -> String {
    (0..terms).map(|i| format!("id = {i}")).collect::<Vec<_>>().join(" OR ")
}

/// Regression: 20,000 ORs through HTTP, 3,000 through DOC.SQL and 5,000 in the Python
/// package overflowed the stack and aborted the process. A chain of one operator is now
/// one flat condition, however long.
#[test]
fn a_long_or_chain_is_one_flat_condition() {
    let terms = 100_000;
    let query = on_small_stack(move || query_of(&format!("SELECT * FROM t WHERE {}", or_chain(terms))));
    match query.filter {
        Some(Cond::Or(items)) => {
            assert_eq!(items.len(), terms);
            assert_eq!(items[0], Cond::new("id", Op::Eq, 0));
            assert_eq!(items[terms - 1], Cond::new("id", Op::Eq, terms as i64 - 1));
        }
        other => panic!("expected one OR, got {:?}", other.map(|c| format!("{c:?}").len())),
    }
    // ANDs at the top and brackets around the same operator flatten too.
    let query = on_small_stack(|| {
        let ands = (0..50_000).map(|i| format!("f{} = 1", i % 7)).collect::<Vec<_>>().join(" AND ");
        query_of(&format!("SELECT * FROM t WHERE ({ands}) AND ((a = 1 OR b = 2) OR c = 3)"))
    });
    match query.filter {
        Some(Cond::And(items)) => {
            assert_eq!(items.len(), 50_001);
            assert!(matches!(&items[50_000], Cond::Or(or) if or.len() == 3));
        }
        other => panic!("expected one AND, got {:?}", other.map(|c| format!("{c:?}").len())),
    }
}

#[test]
fn a_long_chain_runs_against_the_engine() {
    let db = Database::new();
    db.create_namespace("t", vec![IndexDef::new("id", hotset_core::IndexKind::Hash, FieldType::Int).pk()]).unwrap();
    for id in 0..10 {
        db.upsert("t", &serde_json::json!({"id": id})).unwrap();
    }
    let statement = on_small_stack(|| parse(&format!("SELECT COUNT(*) FROM t WHERE {}", or_chain(30_000))));
    let answer: serde_json::Value =
        serde_json::from_slice(&execute(&db, &statement.unwrap(), Durability::Wait).unwrap()).unwrap();
    assert_eq!(answer["total"], 10, "{answer}");
}

#[test]
fn deep_nesting_is_refused_by_name() {
    // Brackets and minus signs: sqlparser's own recursion bound.
    for text in ["(".repeat(20_000) + "a = 1" + &")".repeat(20_000), "a = ".to_string() + &"- ".repeat(20_000) + "1"] {
        let error = on_small_stack(move || error_of(&format!("SELECT * FROM t WHERE {text}")));
        assert!(error.message.contains("recursion limit"), "{error}");
    }
    // A run of NOTs is a syntax error there (it reads one NOT at a time), not a crash.
    let error = on_small_stack(|| error_of(&format!("SELECT * FROM t WHERE {}a = 1", "NOT ".repeat(20_000))));
    assert!(error.line == 1 && error.column > 0, "{error}");
    // Arithmetic chains in SET: the engine's expression bound, named.
    let error = on_small_stack(|| error_of(&format!("UPDATE t SET x = {}", vec!["1"; 60_000].join("+"))));
    assert!(error.message.contains("expression_depth_max"), "{error}");
    assert!(
        error.to_string().len() < 300,
        "the refused expression is not echoed whole: {} bytes",
        error.to_string().len()
    );
    // Postfix chains are unsupported conditions; the message shows a bounded excerpt.
    let error = on_small_stack(|| error_of(&format!("SELECT * FROM t WHERE x {}", vec!["IS NULL"; 30_000].join(" "))));
    assert!(error.message.starts_with("expected a field name") || error.message.contains("unsupported"), "{error}");
    assert!(error.to_string().len() < 300, "{} bytes", error.to_string().len());
    // Conditions nested past the engine's bound through alternating operators.
    let mut nested = String::from("a = 1");
    for level in 0..200 {
        nested =
            if level % 2 == 0 { format!("({nested} OR b = {level})") } else { format!("({nested} AND c = {level})") };
    }
    let error = on_small_stack(move || error_of(&format!("SELECT * FROM t WHERE {nested}")));
    assert!(error.message.contains("condition_depth_max") || error.message.contains("recursion limit"), "{error}");
}

#[test]
fn a_text_over_the_limit_is_refused_before_parsing() {
    let text = format!("SELECT * FROM t WHERE a IN ({})", vec!["1"; SQL_BYTES_MAX / 2].join(","));
    let error = error_of(&text);
    assert!(error.message.contains("sql_bytes_max"), "{error}");
    assert_eq!(error.code, ErrorCode::Limit);
}

/// Regression: errors at the end of the text said "line 0, column 0".
#[test]
fn errors_at_the_end_point_past_the_last_character() {
    let error = error_of("SELECT * FROM t WHERE");
    assert_eq!((error.line, error.column), (1, 22), "{error}");
    let error = error_of("SELECT *\n  FROM t\n  WHERE a =");
    assert_eq!((error.line, error.column), (3, 12), "{error}");
    let error = error_of("SELECT * FROM t WHERE a =\n");
    assert_eq!((error.line, error.column), (2, 1), "{error}");
}

/// A chain of 50,000 operators in every place a statement takes an expression: each is
/// translated or refused with a short message, on a small stack. (Error messages and
/// positions used to display or measure the whole expression, recursing per level.)
#[test]
fn a_deep_expression_anywhere_is_refused_not_crashed() {
    let chain = |term: &str, op: &str| vec![term; 50_000].join(op);
    let texts = [
        format!("SELECT * FROM t WHERE a = {}", chain("1", "+")),
        format!("SELECT COUNT({}) FROM t", chain("1", "+")),
        format!("SELECT * FROM t WHERE a IN ({})", chain("1", "+")),
        format!("SELECT * FROM t ORDER BY {}", chain("a", "+")),
        format!("SELECT * FROM t LIMIT {}", chain("1", "+")),
        format!("SELECT {} FROM t", chain("a", "+")),
        format!("SELECT {}", chain("a", "+")),
        format!("SELECT * FROM t GROUP BY {}", chain("a", "+")),
        format!("SELECT * FROM t JOIN u ON {}", chain("a", "+")),
        format!("SELECT * FROM t WHERE MATCH(a, {})", chain("'x'", "||")),
        format!("SELECT * FROM t WHERE a::int{}", "::int".repeat(50_000)),
        format!("SELECT * FROM t WHERE a BETWEEN {} AND 2", chain("1", "+")),
        format!("INSERT INTO t (a) VALUES ({})", chain("1", "+")),
        format!("INSERT INTO t VALUES ({})", chain("1", "+")),
        format!("INSERT INTO t SELECT {}", chain("1", "+")),
        format!("CREATE INDEX i ON t ({})", chain("a", "+")),
        format!("VALUES ({})", chain("1", "+")),
        format!("EXPLAIN UPDATE t SET a = {}", chain("1", "+")),
        format!("DELETE FROM t WHERE {}", chain("a", "-")),
    ];
    for text in texts {
        let head: String = text.chars().take(40).collect();
        let error = on_small_stack(move || parse(&text).map(|_| ()).expect_err("refused"));
        assert!(error.to_string().len() < 300, "{head}: {} bytes of message", error.to_string().len());
        assert!(error.line >= 1, "{head}: {error}");
    }
}
