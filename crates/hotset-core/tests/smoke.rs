//! End-to-end checks of the embedded API on small, hand-written data: each test states
//! the answer a user expects.

use hotset_core::query::{Aggregation, AggregationResult, Cond, JoinKind, Op, Query};
use hotset_core::{Collation, Database, FieldType, IndexDef, IndexKind};
use serde_json::{Value, json};

fn ids(db: &Database, q: &Query) -> Vec<i64> {
    db.query(q).unwrap().values().iter().map(|v| v["id"].as_i64().unwrap()).collect()
}

fn catalogue() -> Database {
    let db = Database::new();
    db.create_namespace(
        "items",
        vec![
            IndexDef::hash("id", FieldType::Int).pk(),
            IndexDef::hash("name", FieldType::String),
            IndexDef::tree("year", FieldType::Int),
            IndexDef::tree("tags", FieldType::Int).array(),
        ],
    )
    .unwrap();
    for (id, name, year, tags) in [
        (1, "a", 2001, vec![1, 5]),
        (2, "b", 2011, vec![5]),
        (3, "a", 2015, vec![]),
        (4, "a", 2012, vec![2]),
        (5, "c", 2020, vec![1, 2, 5]),
    ] {
        db.insert("items", &json!({"id": id, "name": name, "year": year, "tags": tags, "extra": {"deep": id * 10}}))
            .unwrap();
    }
    db
}

#[test]
fn filters_sorts_and_totals() {
    let db = catalogue();
    let q = Query::new("items")
        .where_("name", Op::Eq, "a")
        .where_("year", Op::Gt, 2010)
        .sort("year", false)
        .limit(10)
        .with_total();
    let r = db.query(&q).unwrap();
    assert_eq!(ids(&db, &q), vec![4, 3]);
    assert_eq!(r.total, Some(2));
    assert_eq!(ids(&db, &Query::new("items").where_("tags", Op::Eq, 5).sort("id", true)), vec![5, 2, 1]);
    assert_eq!(ids(&db, &Query::new("items").where_("tags", Op::AllSet, json!([1, 5])).sort("id", false)), vec![1, 5]);
    assert_eq!(ids(&db, &Query::new("items").where_("tags", Op::Empty, Value::Null)), vec![3]);
    assert_eq!(ids(&db, &Query::new("items").where_("extra.deep", Op::Ge, 30).sort("extra.deep", true)), vec![5, 4, 3]);
    let or = Query::new("items")
        .filter(Cond::eq("name", "b").or(Cond::new("year", Op::Range, json!([2014, 2016]))))
        .sort("id", false);
    assert_eq!(ids(&db, &or), vec![2, 3]);
    let not = Query::new("items").filter(Cond::eq("name", "a").not()).sort("year", true).offset(1).limit(1);
    assert_eq!(ids(&db, &not), vec![2]);
    let walk = Query::new("items").sort("year", true).offset(1).limit(2).with_total();
    assert_eq!(ids(&db, &walk), vec![3, 4]);
    assert_eq!(db.query(&walk).unwrap().total, Some(5));
}

#[test]
fn aggregations_and_facets() {
    let db = catalogue();
    let q = Query::new("items")
        .where_("year", Op::Gt, 2005)
        .aggregate(Aggregation::Sum("year".into()))
        .aggregate(Aggregation::Max("year".into()))
        .aggregate(Aggregation::Facet(hotset_core::query::Facet {
            fields: vec!["name".into()],
            sort: vec![],
            offset: 0,
            limit: None,
        }))
        .aggregate(Aggregation::Distinct("tags".into()));
    let r = db.query(&q).unwrap();
    assert_eq!(
        r.aggregations[0],
        AggregationResult::Value { kind: "sum", field: "year".into(), value: json!(2011 + 2015 + 2012 + 2020) }
    );
    assert_eq!(r.aggregations[1], AggregationResult::Value { kind: "max", field: "year".into(), value: json!(2020) });
    match &r.aggregations[2] {
        AggregationResult::Facet { groups, .. } => {
            assert_eq!(groups[0].values, vec![json!("a")]);
            assert_eq!(groups[0].count, 2);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        r.aggregations[3],
        AggregationResult::Distinct { field: "tags".into(), values: vec![json!(1), json!(2), json!(5)] }
    );
}

#[test]
fn case_insensitive_prefix_on_composite_is_an_index_range() {
    let db = Database::new();
    db.create_namespace(
        "users",
        vec![
            IndexDef::hash("id", FieldType::Int).pk(),
            IndexDef::composite(&["first_name", "last_name"], IndexKind::Tree, FieldType::String)
                .collate(Collation::Utf8Ci),
        ],
    )
    .unwrap();
    for (id, f, l) in
        [(1, "Ёлка", "Zed"), (2, "ёлочка", "Abc"), (3, "Anna", "Straße"), (4, "anna", "STRASSE"), (5, "Bob", "x")]
    {
        db.insert("users", &json!({"id": id, "first_name": f, "last_name": l})).unwrap();
    }
    let q = Query::new("users")
        .where_("first_name", Op::Like, "ЁЛ%")
        .sort("first_name", false)
        .sort("last_name", false)
        .limit(10)
        .explain();
    let r = db.query(&q).unwrap();
    assert_eq!(r.values().iter().map(|v| v["id"].as_i64().unwrap()).collect::<Vec<_>>(), vec![1, 2]);
    let plan = r.explain.as_ref().unwrap().to_text();
    assert!(plan.contains("index 'first_name+last_name' (tree) range [\"ёл\", \"ём\")"), "{plan}");
    // With many rows per prefix, paging walks the composite index in order instead of
    // sorting the matches.
    for id in 10..2000 {
        db.insert("users", &json!({"id": id, "first_name": format!("Name{}", id % 50), "last_name": format!("L{id}")}))
            .unwrap();
    }
    let q = Query::new("users")
        .where_("first_name", Op::Like, "name%")
        .sort("first_name", false)
        .sort("last_name", false)
        .offset(5)
        .limit(3)
        .explain();
    let r = db.query(&q).unwrap();
    let plan = r.explain.as_ref().unwrap().to_text();
    assert!(plan.contains("sorted by walking index 'first_name+last_name' forwards"), "{plan}");
    let names: Vec<String> = r.values().iter().map(|v| v["last_name"].as_str().unwrap().to_string()).collect();
    assert_eq!(names, vec!["L1200", "L1250", "L1300"]);
    let q = Query::new("users")
        .where_("first_name", Op::Eq, "ANNA")
        .where_("last_name", Op::Eq, "strasse")
        .sort("id", false);
    assert_eq!(ids(&db, &q), vec![3, 4]);
}

#[test]
fn joins_nest_documents() {
    let db = catalogue();
    db.create_namespace("names", vec![IndexDef::hash("code", FieldType::String).pk()]).unwrap();
    db.insert("names", &json!({"code": "a", "title": "Alpha"})).unwrap();
    db.insert("names", &json!({"code": "b", "title": "Beta"})).unwrap();
    let inner = Query::new("items").sort("id", false).join(
        JoinKind::Inner,
        Query::new("names"),
        &[("name", Op::Eq, "code")],
        "names",
    );
    let r = db.query(&inner).unwrap();
    assert_eq!(r.items.len(), 4);
    assert_eq!(r.values()[1]["names"], json!([{"code": "b", "title": "Beta"}]));
    let left = Query::new("items")
        .sort("id", false)
        .join(JoinKind::Left, Query::new("names"), &[("name", Op::Eq, "code")], "names")
        .with_total();
    let r = db.query(&left).unwrap();
    assert_eq!(r.total, Some(5));
    assert_eq!(r.values()[4]["names"], json!([]));
}

#[test]
fn update_and_delete_by_query() {
    use hotset_core::query::{ArithOp, Expr, SetField};
    let db = catalogue();
    let n = db
        .update_query(
            &Query::new("items").where_("name", Op::Eq, "a"),
            &[SetField::Set("year".into(), Expr::field("year").binary(ArithOp::Add, Expr::value(1)))],
        )
        .unwrap();
    assert_eq!(n, 3);
    assert_eq!(ids(&db, &Query::new("items").where_("year", Op::Eq, 2016)), vec![3]);
    let bad = db.update_query(&Query::new("items"), &[SetField::Set("year".into(), Expr::value("x"))]);
    assert!(matches!(bad, Err(hotset_core::Error::WrongType { .. })), "{bad:?}");
    assert_eq!(ids(&db, &Query::new("items").where_("year", Op::Eq, 2016)), vec![3]);
    assert_eq!(db.delete_query(&Query::new("items").where_("year", Op::Lt, 2012)).unwrap(), 2);
    assert_eq!(db.describe("items").unwrap().documents, 3);
}

#[test]
fn composite_primary_key_and_numeric_collation() {
    let db = Database::new();
    let pk = IndexDef::composite(&["shop", "sku"], IndexKind::Hash, FieldType::String).pk();
    let code = IndexDef::tree("code", FieldType::String).collate(Collation::Numeric);
    db.create_namespace("stock", vec![pk, code]).unwrap();
    for (shop, sku, code) in [("a", "1", "item10"), ("a", "2", "item9"), ("b", "1", "item100"), ("b", "2", "item2")] {
        db.insert("stock", &json!({"shop": shop, "sku": sku, "code": code})).unwrap();
    }
    let duplicate = db.insert("stock", &json!({"shop": "a", "sku": "1"}));
    assert!(matches!(duplicate, Err(hotset_core::Error::DuplicateKey { .. })), "{duplicate:?}");
    let doc = db.get("stock", &json!(["b", "1"])).unwrap().unwrap();
    assert_eq!(serde_json::from_slice::<Value>(&doc).unwrap()["code"], "item100");
    assert!(db.get("stock", &json!(["b"])).is_err());
    let codes: Vec<String> = db
        .query(&Query::new("stock").sort("code", false))
        .unwrap()
        .values()
        .iter()
        .map(|v| v["code"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(codes, ["item2", "item9", "item10", "item100"]);
    assert!(db.delete("stock", &json!(["a", "2"])).unwrap());
    assert_eq!(db.describe("stock").unwrap().documents, 3);
}

#[test]
fn joins_with_several_conditions_and_their_own_query() {
    let db = catalogue();
    db.create_namespace(
        "offers",
        vec![IndexDef::hash("oid", FieldType::Int).pk(), IndexDef::hash("item", FieldType::Int)],
    )
    .unwrap();
    for (oid, item, year, price) in
        [(1, 1, 2001, 5), (2, 1, 1999, 7), (3, 1, 2001, 9), (4, 2, 2011, 3), (5, 9, 2011, 1)]
    {
        db.insert("offers", &json!({"oid": oid, "item": item, "year": year, "price": price})).unwrap();
    }
    // Offers of the same item and year, cheapest first, at most one, price at least 4.
    let offers = Query::new("offers").where_("price", Op::Ge, 4).sort("price", true).limit(1);
    let query = Query::new("items").sort("id", false).join(
        JoinKind::Left,
        offers,
        &[("id", Op::Eq, "item"), ("year", Op::Eq, "year")],
        "offers",
    );
    let values = db.query(&query).unwrap().values();
    assert_eq!(values[0]["offers"], json!([{"oid": 3, "item": 1, "year": 2001, "price": 9}]));
    assert_eq!(values[1]["offers"], json!([]), "offer 4 is under the joined query's price filter");
    // A join on a non-equality condition only.
    let later = Query::new("items").where_("id", Op::Eq, 1).join(
        JoinKind::Inner,
        Query::new("offers").sort("oid", false),
        &[("year", Op::Lt, "year")],
        "later",
    );
    let values = db.query(&later).unwrap().values();
    let oids: Vec<i64> = values[0]["later"].as_array().unwrap().iter().map(|o| o["oid"].as_i64().unwrap()).collect();
    assert_eq!(oids, vec![4, 5]);
}

#[test]
fn keyspaces_are_reachable_from_the_database() {
    use hotset_core::kv::KvOps;
    let db = Database::new();
    let cache = db.keyspaces().get_or_create("cache");
    assert_eq!(cache.incr_by(b"hits", 2).unwrap(), 2);
    assert_eq!(cache.incr_by(b"hits", 3).unwrap(), 5);
    assert_eq!(cache.get(b"hits").unwrap().as_deref(), Some(&b"5"[..]));
    assert!(db.keyspaces().get("sessions").is_none());
}

#[test]
fn namespace_lifecycle_and_live_indexes() {
    let db = catalogue();
    assert_eq!(db.namespace_names(), vec!["items".to_string()]);
    let before = db.describe("items").unwrap();
    assert_eq!(before.documents, 5);
    assert!(before.memory_bytes > before.document_bytes && before.document_bytes > 0);
    // An index added to a live namespace serves the documents already there.
    db.add_index("items", IndexDef::tree("extra.deep", FieldType::Int)).unwrap();
    let q = Query::new("items").where_("extra.deep", Op::Ge, 40).sort("extra.deep", false).explain();
    let r = db.query(&q).unwrap();
    assert!(r.explain.as_ref().unwrap().to_text().contains("index 'extra.deep' (tree)"));
    assert_eq!(r.values().len(), 2);
    db.drop_index("items", "extra.deep").unwrap();
    assert_eq!(db.query(&Query::new("items").where_("extra.deep", Op::Ge, 40)).unwrap().items.len(), 2);
    // open_namespace keeps what exists and adds missing indexes.
    db.open_namespace(
        "items",
        vec![IndexDef::hash("id", FieldType::Int).pk(), IndexDef::hash("extra.deep", FieldType::Int)],
    )
    .unwrap();
    assert_eq!(db.describe("items").unwrap().indexes.len(), 5);
    db.truncate("items").unwrap();
    assert_eq!(db.describe("items").unwrap().documents, 0);
    assert_eq!(db.describe("items").unwrap().indexes.len(), 5);
    db.drop_namespace("items").unwrap();
    assert!(db.namespace_names().is_empty());
}
