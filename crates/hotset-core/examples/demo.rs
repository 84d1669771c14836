//! The quick-start demo: builds a sample catalogue and user directory in memory, runs
//! the kinds of queries Hotset is for, and prints results with timings and plans.
//!
//! cargo run --release --example demo [-- ITEMS]

use hotset_core::query::{Aggregation, AggregationResult, Cond, Facet, JoinKind, Op, Query};
use hotset_core::{Collation, Database, FieldType, IndexDef, IndexKind};
use serde_json::json;
use std::time::Instant;

/// A small deterministic generator, so every run shows the same data.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn word(&mut self) -> String {
        const SYLLABLES: [&str; 16] =
            ["ka", "lo", "mi", "ra", "sen", "tu", "vo", "zel", "an", "bri", "cho", "dar", "el", "fi", "gor", "ha"];
        (0..2 + self.below(2)).map(|_| SYLLABLES[self.below(16) as usize]).collect()
    }
}

fn show(db: &Database, title: &str, query: &Query) {
    let start = Instant::now();
    let result = db.query(query).expect("demo queries are valid");
    let took = start.elapsed();
    println!("\n== {title}  ({} µs)", took.as_micros());
    if let Some(total) = result.total {
        println!("   total matches: {total}");
    }
    for item in result.items.iter().take(3) {
        let text = item.to_json();
        println!(
            "   {}",
            if text.len() > 150 {
                format!("{}…", &text[..text.char_indices().nth(150).map_or(text.len(), |(i, _)| i)])
            } else {
                text
            }
        );
    }
    for aggregation in &result.aggregations {
        match aggregation {
            AggregationResult::Facet { groups, .. } => {
                let shown: Vec<String> = groups.iter().map(|g| format!("{}={}", g.values[0], g.count)).collect();
                println!("   facet: {}", shown.join(" "));
            }
            other => println!("   {other:?}"),
        }
    }
    if let Some(explain) = &result.explain {
        for line in explain.to_text().lines() {
            println!("   | {line}");
        }
    }
}

fn main() {
    let count: u64 = std::env::args().nth(1).and_then(|n| n.parse().ok()).unwrap_or(200_000);
    let db = Database::new();
    db.create_namespace(
        "items",
        vec![
            IndexDef::hash("id", FieldType::Int).pk(),
            IndexDef::hash("name", FieldType::String),
            IndexDef::tree("year", FieldType::Int),
            IndexDef::hash("genre", FieldType::String),
            IndexDef::tree("tags", FieldType::String).array(),
            IndexDef::store("price", FieldType::Double),
        ],
    )
    .expect("schema");
    db.create_namespace(
        "users",
        vec![
            IndexDef::hash("id", FieldType::Int).pk(),
            IndexDef::composite(&["first_name", "last_name"], IndexKind::Tree, FieldType::String)
                .collate(Collation::Utf8Ci),
        ],
    )
    .expect("schema");
    db.create_namespace("genres", vec![IndexDef::hash("code", FieldType::String).pk()]).expect("schema");
    for (code, title) in [("drama", "Drama"), ("comedy", "Comedy"), ("doc", "Documentary"), ("anim", "Animation")] {
        db.insert("genres", &json!({"code": code, "title": title})).expect("insert");
    }

    let mut rng = Rng(0x5eed);
    let names: Vec<String> = (0..1000).map(|_| format!("{} {}", rng.word(), rng.word())).collect();
    let genres = ["drama", "comedy", "doc", "anim", "thriller"];
    let start = Instant::now();
    let mut tx = db.transaction("items").expect("namespace");
    for id in 0..count {
        let tags: Vec<String> = (0..rng.below(4)).map(|_| format!("t{}", rng.below(20))).collect();
        tx.insert(json!({
            "id": id,
            "name": names[rng.below(1000) as usize],
            "year": 2000 + rng.below(51),
            "genre": genres[rng.below(5) as usize],
            "tags": tags,
            "price": (rng.below(10_000) as f64) / 100.0,
            "meta": {"rating": rng.below(10), "title": format!("Title {id} «{}»", rng.word())}
        }))
        .expect("insert");
    }
    tx.commit().expect("commit");
    let firsts = ["Анна", "Ёлка", "Иван", "Alexander", "Alexandra", "Zoë", "Marie", "Ólafur"];
    let mut tx = db.transaction("users").expect("namespace");
    for id in 0..count {
        let first = if id % 3 == 0 { firsts[rng.below(8) as usize].to_string() } else { capitalise(&rng.word()) };
        tx.insert(
            json!({"id": id, "first_name": first, "last_name": capitalise(&rng.word()), "age": 14 + rng.below(70)}),
        )
        .expect("insert");
    }
    tx.commit().expect("commit");
    let items = db.describe("items").expect("namespace");
    println!(
        "loaded {} items and {} users in {:.2} s; items use {:.0} bytes per document in memory ({:.0} of them the stored JSON)",
        count,
        count,
        start.elapsed().as_secs_f64(),
        items.memory_bytes as f64 / items.documents as f64,
        items.document_bytes as f64 / items.documents as f64,
    );

    let name = names[7].clone();
    show(&db, "get by key: id = 42", &Query::new("items").where_("id", Op::Eq, 42));
    show(
        &db,
        &format!("name = '{name}' AND year > 2010 ORDER BY year LIMIT 10, with total"),
        &Query::new("items")
            .where_("name", Op::Eq, name.clone())
            .where_("year", Op::Gt, 2010)
            .sort("year", false)
            .limit(10)
            .with_total()
            .explain(),
    );
    show(
        &db,
        "year 2010..2020 ORDER BY year DESC LIMIT 20 OFFSET 100",
        &Query::new("items")
            .filter(Cond::new("year", Op::Range, json!([2010, 2020])))
            .sort("year", true)
            .offset(100)
            .limit(20)
            .explain(),
    );
    show(
        &db,
        "(genre = doc OR tags ALLSET [t1, t2]) AND NOT price > 50, facet by genre",
        &Query::new("items")
            .filter(Cond::eq("genre", "doc").or(Cond::new("tags", Op::AllSet, json!(["t1", "t2"]))))
            .filter(Cond::new("price", Op::Gt, 50).not())
            .limit(3)
            .with_total()
            .aggregate(Aggregation::Facet(Facet {
                fields: vec!["genre".into()],
                sort: vec![],
                offset: 0,
                limit: Some(5),
            }))
            .aggregate(Aggregation::Avg("price".into())),
    );
    show(
        &db,
        "users: first_name LIKE 'alex%' (case-insensitive) ORDER BY first_name, last_name, page 3",
        &Query::new("users")
            .where_("first_name", Op::Like, "alex%")
            .sort("first_name", false)
            .sort("last_name", false)
            .offset(20)
            .limit(10)
            .explain(),
    );
    show(
        &db,
        "users: first_name LIKE 'ЁЛ%' (Unicode case folding)",
        &Query::new("users").where_("first_name", Op::Like, "ЁЛ%").limit(3).with_total(),
    );
    show(
        &db,
        "items joined with their genre (inner join), year = 2020",
        &Query::new("items")
            .where_("year", Op::Eq, 2020)
            .limit(2)
            .join(JoinKind::Inner, Query::new("genres"), &[("genre", Op::Eq, "code")], "genre_info")
            .with_total(),
    );
}

fn capitalise(word: &str) -> String {
    let mut chars = word.chars();
    chars.next().map_or(String::new(), |c| c.to_uppercase().collect::<String>() + chars.as_str())
}
