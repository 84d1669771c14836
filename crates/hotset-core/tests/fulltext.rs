//! Full-text conditions through the engine's API: combined with filters, sorts, paging,
//! totals, aggregations, joins, update and delete by query, transactions, index changes,
//! searches across namespaces and the DSL (restarts are `hotset-server/tests/fulltext.rs`).

use hotset_core::query::{Aggregation, AggregationResult, JoinKind, Op, Query, dsl};
use hotset_core::{Database, FieldType, IndexDef, Search, SearchTarget};
use serde_json::{Value, json};

fn catalogue() -> Database {
    let db = Database::new();
    db.create_namespace(
        "items",
        vec![
            IndexDef::hash("id", FieldType::Int).pk(),
            IndexDef::tree("year", FieldType::Int),
            IndexDef::hash("brand", FieldType::Int),
            IndexDef::text(&["title", "tags"]).named("search"),
        ],
    )
    .unwrap();
    db.create_namespace("brands", vec![IndexDef::hash("id", FieldType::Int).pk()]).unwrap();
    db.upsert("brands", &json!({"id": 1, "name": "Acme"})).unwrap();
    let rows = [
        (1, 2019, "Wireless headphones", json!(["audio", "bluetooth"])),
        (2, 2021, "Wired headphones", json!(["audio"])),
        (3, 2022, "Headphone case", json!("travel")),
        (4, 2023, "Bluetooth speaker", json!(["audio", "bluetooth"])),
        (5, 2020, "Running shoes", json!([])),
    ];
    for (id, year, title, tags) in rows {
        db.upsert("items", &json!({"id": id, "year": year, "brand": id % 2, "title": title, "tags": tags})).unwrap();
    }
    db
}

fn ids(db: &Database, query: &Query) -> Vec<i64> {
    db.query(query).unwrap().values().iter().map(|d| d["id"].as_i64().unwrap()).collect()
}

#[test]
fn matches_combine_with_the_rest_of_a_query() {
    let db = catalogue();
    let base = || Query::new("items").matching("search", "headphones");
    let mut all = ids(&db, &base());
    all.sort();
    assert_eq!(all, [1, 2, 3]);
    assert_eq!(ids(&db, &base().where_("year", Op::Ge, 2021).sort("year", true)), [3, 2]);
    let page = db.query(&base().sort("id", false).offset(1).limit(1).with_total()).unwrap();
    assert_eq!((page.values()[0]["id"].clone(), page.total), (json!(2), Some(3)));
    let counted = db.query(&base().aggregate(Aggregation::Count).aggregate(Aggregation::Max("year".into()))).unwrap();
    assert_eq!(counted.aggregations[0], AggregationResult::Count(3));
    // An array field is searched item by item; `tags` alone through its field name.
    assert_eq!(ids(&db, &Query::new("items").matching("tags", "bluetooth").sort("id", false)), [1, 4]);
    // NOT and OR around a match.
    let not = Query::new("items")
        .matching("search", "audio")
        .filter(hotset_core::Cond::new("search", Op::Match, "wired").not());
    assert_eq!(ids(&db, &not.sort("id", false)), [1, 4]);
    // A join keeps the rank order and the inner join drops unmatched rows.
    let joined = Query::new("items").matching("search", "bluetooth").join(
        JoinKind::Inner,
        Query::new("brands"),
        &[("brand", Op::Eq, "id")],
        "maker",
    );
    assert_eq!(ids(&db, &joined), [1]);
    // Explain names the text index.
    let explained = db.query(&base().explain()).unwrap().explain.unwrap();
    assert!(explained.steps.iter().any(|s| s.detail.contains("text index 'search'")), "{explained:?}");
}

#[test]
fn writes_of_every_kind_are_searchable_at_once() {
    let db = catalogue();
    let search = |text: &str| {
        let mut found = ids(&db, &Query::new("items").matching("search", text));
        found.sort();
        found
    };
    db.update_query(
        &Query::new("items").where_("id", Op::Eq, 5),
        &[hotset_core::query::SetField::Set("title".into(), hotset_core::query::Expr::value("Trail sneakers"))],
    )
    .unwrap();
    assert_eq!(search("sneakers"), [5]);
    assert_eq!(search("running"), Vec::<i64>::new());
    assert_eq!(db.delete_query(&Query::new("items").matching("search", "wired")).unwrap(), 1);
    assert_eq!(search("headphones"), [1, 3]);
    let mut txn = db.transaction("items").unwrap();
    txn.upsert(json!({"id": 6, "year": 2024, "brand": 0, "title": "Studio monitor headphones"})).unwrap();
    txn.commit().unwrap();
    assert_eq!(search("monitor"), [6]);
    // A failed transaction leaves the index as it was.
    let mut txn = db.transaction("items").unwrap();
    txn.upsert(json!({"id": 7, "year": 2024, "brand": 0, "title": "Ghost product"})).unwrap();
    assert!(txn.upsert(json!({"id": 8, "year": "bad"})).is_err() || txn.commit().is_err());
    assert_eq!(search("ghost"), Vec::<i64>::new());
    // A refused document (a number where the text index reads text) changes nothing.
    assert!(db.upsert("items", &json!({"id": 1, "year": 2019, "title": 42})).is_err());
    assert_eq!(search("wireless"), [1]);
    db.truncate("items").unwrap();
    assert_eq!(search("headphones"), Vec::<i64>::new());
}

#[test]
fn updates_that_keep_the_text_keep_it_searchable_and_updates_that_change_it_move_it() {
    let db = catalogue();
    let search = |text: &str| {
        let mut found = ids(&db, &Query::new("items").matching("search", text));
        found.sort();
        found
    };
    let hits_before = db.describe("items").unwrap().text[0].1.hits;
    // Same title and tags, other fields changed: the postings stay as they were.
    for round in 0..3 {
        db.upsert("items", &json!({"id": 1, "year": 2000 + round, "brand": round, "title": "Wireless headphones", "tags": ["audio", "bluetooth"]})).unwrap();
    }
    assert_eq!(search("wireless"), [1]);
    assert_eq!(ids(&db, &Query::new("items").matching("search", "wireless").where_("year", Op::Eq, 2002)), [1]);
    assert_eq!(db.describe("items").unwrap().text[0].1.hits, hits_before);
    // Dropping a tag is a change.
    db.upsert("items", &json!({"id": 1, "year": 2019, "title": "Wireless headphones", "tags": ["audio"]})).unwrap();
    assert_eq!(search("bluetooth"), [4]);
    db.upsert("items", &json!({"id": 1, "year": 2019, "title": "Wireless headphones bluetooth", "tags": ["audio"]}))
        .unwrap();
    assert_eq!(search("bluetooth"), [1, 4]);
    // A rolled back transaction that rewrote the same text leaves it indexed.
    let mut txn = db.transaction("items").unwrap();
    txn.upsert(json!({"id": 1, "year": 1, "title": "Wireless headphones bluetooth", "tags": ["audio"]})).unwrap();
    txn.insert(json!({"id": 2, "year": 1})).unwrap();
    assert!(txn.commit().is_err());
    assert_eq!(search("wireless"), [1]);
    db.verify_indexes().unwrap();
}

/// A large transaction on the catalogue: `n` rows written, some updated or deleted in the
/// same batch, then a failing one; the index must come out exactly right either way.
fn large_transaction(n: i64) {
    let db = catalogue();
    let title = |i: i64| format!("batch item{} {}", i % 13, if i % 2 == 0 { "even" } else { "odd" });
    let mut txn = db.transaction("items").unwrap();
    for i in 100..100 + n {
        txn.upsert(json!({"id": i, "year": 2000, "title": title(i)})).unwrap();
    }
    // Updates and deletes inside the batch, of rows written in it and before it.
    txn.upsert(json!({"id": 100, "year": 2000, "title": "renamed"})).unwrap();
    txn.delete(json!(101)).unwrap();
    txn.delete(json!(2)).unwrap();
    assert_eq!(txn.commit().unwrap(), n as usize + 3);
    db.verify_indexes().unwrap();
    let count = |text: &str| db.query(&Query::new("items").matching("search", text).with_total()).unwrap().total;
    assert_eq!(count("batch"), Some(n as usize - 2));
    assert_eq!(count("item7"), Some((100..100 + n).filter(|i| i % 13 == 7 && *i != 101).count()));
    assert_eq!(count("renamed"), Some(1));
    assert_eq!(count("wired"), Some(0));
    // A large transaction that fails leaves the index exactly as it was.
    let mut txn = db.transaction("items").unwrap();
    for i in 100_000..100_000 + n {
        txn.insert(json!({"id": i, "year": 2001, "title": "doomed words"})).unwrap();
    }
    txn.insert(json!({"id": 100, "year": 2001})).unwrap();
    assert!(txn.commit().is_err());
    db.verify_indexes().unwrap();
    assert_eq!(count("doomed"), Some(0));
    assert_eq!(count("batch"), Some(n as usize - 2));
    // And the index goes on taking single writes.
    db.upsert("items", &json!({"id": 100, "year": 2000, "title": "renamed again"})).unwrap();
    assert_eq!(count("again"), Some(1));
    db.verify_indexes().unwrap();
}

#[test]
fn large_transactions_post_their_words_in_one_batch_and_roll_back_whole() {
    large_transaction(1000);
}

#[test]
fn very_large_transactions_index_text_on_other_threads_and_roll_back_whole() {
    large_transaction(6000);
}

#[test]
fn text_indexes_come_and_go_on_live_namespaces() {
    let db = catalogue();
    db.add_index("items", IndexDef::text(&["title"]).named("titles")).unwrap();
    assert_eq!(ids(&db, &Query::new("items").matching("titles", "speaker")), [4]);
    let info = db.describe("items").unwrap();
    let stats = info.text.iter().find(|(name, _)| name == "titles").unwrap().1;
    assert_eq!(stats.rows, 5);
    assert!(stats.words >= 9 && stats.memory_bytes > 0, "{stats:?}");
    assert!(info.index_memory.iter().any(|(name, bytes)| name == "titles" && *bytes == stats.memory_bytes));
    db.drop_index("items", "titles").unwrap();
    let error = db.query(&Query::new("items").matching("titles", "speaker")).unwrap_err();
    assert!(error.to_string().contains("no text index is named 'titles'"), "{error}");
}

#[test]
fn search_merges_namespaces_by_rank() {
    let db = catalogue();
    db.create_namespace("articles", vec![IndexDef::hash("id", FieldType::Int).pk(), IndexDef::text(&["body"])])
        .unwrap();
    db.upsert("articles", &json!({"id": 100, "body": "headphones headphones headphones"})).unwrap();
    db.upsert("articles", &json!({"id": 101, "body": "a long story that mentions headphones once among many words"}))
        .unwrap();
    // Ranks are each namespace's own: articles about other things make the word rare there.
    for id in 102..106 {
        db.upsert("articles", &json!({"id": id, "body": format!("notes on topic {id}")})).unwrap();
    }
    let search = Search {
        text: "headphones".into(),
        targets: vec![
            SearchTarget { namespace: "items".into(), field: None, filter: None },
            SearchTarget { namespace: "articles".into(), field: None, filter: None },
        ],
        offset: 0,
        limit: 4,
        highlight: None,
        snippet: None,
        timeout: None,
    };
    let found = db.search(&search).unwrap();
    assert_eq!(found.total, 5);
    assert_eq!(found.items.len(), 4);
    let ranks: Vec<f32> = found.items.iter().map(|(_, item)| item.text.as_ref().unwrap().rank).collect();
    assert!(ranks.windows(2).all(|w| w[0] >= w[1]), "{ranks:?}");
    assert_eq!(found.items[0].0, "articles", "three times in three words ranks first");
    let from_json = Search::from_json(&json!({"query": "headphones", "namespaces": ["items", "articles"], "limit": 4}));
    assert_eq!(from_json.unwrap(), search);
    // The second page continues where the first stopped.
    let next = db.search(&Search { offset: 4, ..search.clone() }).unwrap();
    assert_eq!(next.items.len(), 1);
    assert!(next.items[0].1.text.as_ref().unwrap().rank <= *ranks.last().unwrap());
    let error = db
        .search(&Search {
            targets: vec![SearchTarget { namespace: "brands".into(), field: None, filter: None }],
            ..search
        })
        .unwrap_err();
    assert!(error.to_string().contains("no text index"), "{error}");
}

#[test]
fn the_dsl_reads_matches_ranks_and_markup() {
    let db = catalogue();
    let query: Value = json!({"namespace": "items", "filter": {"field": "search", "op": "match", "value": "hedphones"},
                              "sort": "-rank()", "limit": 2, "highlight": {"fields": ["title"]},
                              "snippet": {"fields": ["title"], "around": 0, "pre": "[", "post": "]"}});
    let result = db.query(&dsl::query_from_json(&query, None).unwrap()).unwrap();
    let items = result.values();
    assert_eq!(items.len(), 2);
    assert!(items[0]["_rank"].as_f64().unwrap() >= items[1]["_rank"].as_f64().unwrap());
    let title = items[0]["_highlight"]["title"].as_str().unwrap();
    assert!(title.contains("<b>Headphone") || title.contains("<b>headphones"), "{title}");
    assert!(items[0]["_snippet"]["title"].as_str().unwrap().starts_with('['), "{}", items[0]);
    for (bad, expected) in [
        (json!({"namespace": "items", "highlight": "yes"}), "highlight"),
        (json!({"namespace": "items", "snippet": {"around": 1000}}), "at most 100"),
        (json!({"namespace": "items", "snippet": {"colour": 1}}), "colour"),
    ] {
        let error = dsl::query_from_json(&bad, None).unwrap_err().to_string();
        assert!(error.contains(expected), "{bad}: {error}");
    }
}
