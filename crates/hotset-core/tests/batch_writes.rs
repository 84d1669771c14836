//! Large transactions: their tree-index keys are merged in at commit (one sorted pass)
//! rather than inserted row by row. The same writes applied in small transactions (row
//! by row) must leave exactly the same indexes and answers, whatever the batch does to
//! rows it wrote itself: update them again, delete them, reuse their row ids, fail.

use hotset_core::query::{Op, Query};
use hotset_core::{Collation, Database, FieldType, IndexDef, IndexKind};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use serde_json::{Value, json};

fn database() -> Database {
    let db = Database::new();
    db.create_namespace(
        "people",
        vec![
            IndexDef::hash("id", FieldType::Int).pk(),
            IndexDef::tree("age", FieldType::Int),
            IndexDef::new("name", IndexKind::Tree, FieldType::String).collate(Collation::Utf8Ci),
            IndexDef::composite_typed(&[("name", FieldType::String), ("age", FieldType::Int)], IndexKind::Tree)
                .collate(Collation::Utf8Ci),
            IndexDef::tree("tags", FieldType::Int).array(),
            IndexDef::tree("score", FieldType::Int).sparse(),
        ],
    )
    .unwrap();
    db
}

fn person(rng: &mut StdRng, id: u64) -> Value {
    let names = ["Anna", "anna", "Bo", "Chen", "Dmitri", "Ëva", "Zoë"];
    let mut doc = json!({
        "id": id,
        "age": rng.random_range(0..90),
        "name": names[rng.random_range(0..names.len())],
        "tags": (0..rng.random_range(0..4)).map(|_| rng.random_range(0..10)).collect::<Vec<_>>(),
    });
    if rng.random_range(0..3) == 0 {
        doc["score"] = json!(rng.random_range(0..1000));
    }
    doc
}

enum Write {
    Upsert(Value),
    Delete(u64),
}

/// Writes that insert new ids, rewrite old and new ones (several times), delete both
/// kinds and bring deleted ids back (their row ids are reused).
fn writes(rng: &mut StdRng, count: usize, ids: u64) -> Vec<Write> {
    (0..count)
        .map(|_| {
            let id = rng.random_range(0..ids);
            if rng.random_range(0..5) == 0 { Write::Delete(id) } else { Write::Upsert(person(rng, id)) }
        })
        .collect()
}

fn apply(db: &Database, writes: &[Write], chunk: usize) {
    for part in writes.chunks(chunk) {
        let mut txn = db.transaction("people").unwrap();
        for write in part {
            match write {
                Write::Upsert(doc) => txn.upsert(doc.clone()).unwrap(),
                Write::Delete(id) => txn.delete(json!(id)).unwrap(),
            }
        }
        txn.commit().unwrap();
    }
}

/// Answers that read each tree index: walks in its order, ranges, counts.
fn answers(db: &Database) -> Vec<Value> {
    let queries = [
        Query::new("people").sort("age", false).sort("id", false).with_total(),
        Query::new("people").where_("name", Op::Like, "an%").sort("name", true).sort("id", false).with_total(),
        Query::new("people").where_("name", Op::Ge, "c").where_("age", Op::Lt, 40).sort("id", false).with_total(),
        Query::new("people").where_("tags", Op::Eq, 3).sort("id", false).with_total(),
        Query::new("people").where_("score", Op::Gt, 500).sort("score", false).sort("id", false).with_total(),
    ];
    queries
        .into_iter()
        .map(|q| {
            let result = db.query(&q.limit(100_000)).unwrap();
            json!({"total": result.total, "ids": result.values().iter().map(|v| v["id"].clone()).collect::<Vec<_>>()})
        })
        .collect()
}

#[test]
fn a_large_batch_leaves_the_indexes_row_by_row_writes_leave() {
    let mut rng = StdRng::seed_from_u64(0x9e37_79b9_7f4a_7c15);
    let first = writes(&mut rng, 3000, 2500);
    let batch = writes(&mut rng, 9000, 6000);
    let (merged, row_by_row) = (database(), database());
    for db in [&merged, &row_by_row] {
        apply(db, &first, 50);
    }
    apply(&merged, &batch, batch.len());
    apply(&row_by_row, &batch, 50);
    merged.verify_indexes().expect("merged indexes agree with the documents");
    row_by_row.verify_indexes().unwrap();
    assert_eq!(answers(&merged), answers(&row_by_row));
    let count = |db: &Database| db.query(&Query::new("people").limit(0).with_total()).unwrap().total;
    assert_eq!(count(&merged), count(&row_by_row));
    assert!(count(&merged).unwrap() > 3000, "the batch added rows");
}

#[test]
fn a_large_batch_that_fails_leaves_nothing_behind() {
    let mut rng = StdRng::seed_from_u64(0x2545_f491_4f6c_dd1d);
    let db = database();
    apply(&db, &writes(&mut rng, 2000, 1500), 50);
    let before = answers(&db);
    let mut txn = db.transaction("people").unwrap();
    for write in writes(&mut rng, 8000, 5000) {
        match write {
            Write::Upsert(doc) => txn.upsert(doc).unwrap(),
            Write::Delete(id) => txn.delete(json!(id)).unwrap(),
        }
    }
    // The last write is refused (not an object): everything before it is rolled back.
    txn.upsert_json(b"[1, 2]".to_vec()).unwrap();
    assert!(txn.commit().is_err());
    db.verify_indexes().expect("indexes agree with the documents after the rollback");
    assert_eq!(answers(&db), before);
}

/// The plans of queries on each tree index, as EXPLAIN writes them (its timings left out).
fn plans(db: &Database) -> String {
    let queries = [
        Query::new("people").where_("name", Op::Like, "an%").sort("name", true),
        Query::new("people").where_("age", Op::Lt, 40).sort("age", false),
        Query::new("people").where_("tags", Op::Eq, 3),
    ];
    let mut plans = String::new();
    for query in queries {
        let text = db.query(&query.explain()).unwrap().explain.unwrap().to_text();
        for line in text.lines().filter(|line| !line.starts_with("total")) {
            let untimed =
                line.rsplit_once(" (").filter(|(_, tail)| tail.ends_with("µs)")).map_or(line, |(head, _)| head);
            plans.push_str(untimed);
            plans.push('\n');
        }
    }
    plans
}

#[test]
fn a_tree_load_answers_rightly_throughout_and_builds_the_indexes_writes_leave() {
    let mut rng = StdRng::seed_from_u64(0x5851_f42d_4c95_7f2d);
    let first = writes(&mut rng, 1500, 1200);
    let load = writes(&mut rng, 6000, 4000);
    let (loaded, row_by_row) = (database(), database());
    for db in [&loaded, &row_by_row] {
        apply(db, &first, 50);
    }
    let indexed_plans = plans(&loaded);
    for index in ["'name'", "'age'", "'tags'"] {
        assert!(indexed_plans.contains(index), "index {index} answers before the load: {indexed_plans}");
    }
    loaded.begin_tree_load("people").unwrap();
    // Readers see every write of the load at once, answered from columns by scans: the
    // ordered indexes are not used while they wait for their build.
    for (part, rows) in load.chunks(1000).zip(0..) {
        apply(&loaded, part, if rows % 2 == 0 { part.len() } else { 40 });
        apply(&row_by_row, part, 40);
        assert_eq!(answers(&loaded), answers(&row_by_row), "answers during the load, after part {rows}");
        loaded.verify_indexes().expect("indexes still in use agree with the documents");
    }
    let loading_plans = plans(&loaded);
    assert!(!loading_plans.contains("index '"), "the waiting indexes are not planned on: {loading_plans}");
    loaded.finish_tree_load("people");
    loaded.finish_tree_load("people");
    loaded.verify_indexes().expect("built indexes agree with the documents");
    row_by_row.verify_indexes().unwrap();
    assert_eq!(answers(&loaded), answers(&row_by_row));
    assert_eq!(plans(&loaded), plans(&row_by_row), "the built indexes are planned on again");
    assert!(loaded.begin_tree_load("nobody").is_err(), "an unknown namespace");
}
