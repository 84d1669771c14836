//! Criterion benchmarks of the engine's hot paths on a synthetic catalogue shaped like
//! `../shared/bench/gen_dataset.py items` (names from 1000, years 2000–2050) and user
//! profiles for the case-insensitive prefix search. The side-by-side figures against
//! peers come from `bench/run_core.py`; these track regressions of each path.

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use hotset_core::query::{Cond, Op, Query};
use hotset_core::{Collation, Database, FieldType, IndexDef, IndexKind};
use serde_json::{Value, json};
use std::hint::black_box;

const ITEMS: u64 = 100_000;

struct Rng(u64);
impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
    fn word(&mut self) -> String {
        const SYLLABLES: [&str; 12] = ["ka", "lo", "mi", "ra", "se", "tu", "vo", "ze", "an", "br", "ch", "da"];
        (0..2 + self.below(3)).map(|_| SYLLABLES[self.below(12) as usize]).collect()
    }
}

fn item(rng: &mut Rng, id: u64, names: &[String]) -> Value {
    let description: Vec<String> = (0..50).map(|_| rng.word()).collect();
    json!({"id": id, "name": names[rng.below(1000) as usize], "year": 2000 + rng.below(51), "description": description.join(" ")})
}

fn catalogue() -> (Database, Vec<String>) {
    let db = Database::new();
    let indexes = vec![
        IndexDef::hash("id", FieldType::Int).pk(),
        IndexDef::hash("name", FieldType::String),
        IndexDef::tree("year", FieldType::Int),
    ];
    db.create_namespace("items", indexes).unwrap();
    let mut rng = Rng(42);
    let names: Vec<String> = (0..1000).map(|_| format!("{} {}", rng.word(), rng.word())).collect();
    for id in 0..ITEMS {
        db.insert("items", &item(&mut rng, id, &names)).unwrap();
    }
    (db, names)
}

fn items(c: &mut Criterion) {
    let (db, names) = catalogue();
    let mut rng = Rng(7);
    c.bench_function("get_by_key", |b| b.iter(|| black_box(db.get("items", &json!(rng.below(ITEMS))).unwrap())));
    c.bench_function("name_eq_year_gt_sorted_limit10_total", |b| {
        b.iter(|| {
            let name = names[rng.below(1000) as usize].clone();
            let query =
                Query::new("items").where_("name", Op::Eq, name).where_("year", Op::Gt, 2010).sort("year", false);
            black_box(db.query(&query.limit(10).with_total()).unwrap())
        })
    });
    let range = Query::new("items").filter(Cond::new("year", Op::Range, json!([2010, 2020]))).sort("year", true);
    let range = range.offset(100).limit(20);
    c.bench_function("year_range_desc_offset100_limit20", |b| b.iter(|| black_box(db.query(&range).unwrap())));
    let mut writer = Rng(9);
    c.bench_function("upsert_by_key", |b| {
        b.iter_batched(
            || {
                let id = writer.below(ITEMS);
                item(&mut writer, id, &names)
            },
            |doc| db.upsert("items", &doc).unwrap(),
            BatchSize::SmallInput,
        )
    });
}

fn bulk_insert(c: &mut Criterion) {
    let mut rng = Rng(1);
    let names: Vec<String> = (0..1000).map(|_| format!("{} {}", rng.word(), rng.word())).collect();
    let docs: Vec<Value> = (0..10_000).map(|id| item(&mut rng, id, &names)).collect();
    let mut group = c.benchmark_group("bulk");
    group.sample_size(10);
    group.bench_function("insert_10k_in_one_transaction", |b| {
        b.iter_batched(
            || {
                let db = Database::new();
                db.create_namespace("items", vec![IndexDef::hash("id", FieldType::Int).pk()]).unwrap();
                (db, docs.clone())
            },
            |(db, docs)| {
                let mut tx = db.transaction("items").unwrap();
                for doc in docs {
                    tx.insert(doc).unwrap();
                }
                tx.commit().unwrap()
            },
            BatchSize::LargeInput,
        )
    });
    group.finish();
}

fn prefix_search(c: &mut Criterion) {
    let db = Database::new();
    let composite = IndexDef::composite(&["first_name", "last_name"], IndexKind::Tree, FieldType::String);
    let indexes = vec![IndexDef::hash("id", FieldType::Int).pk(), composite.collate(Collation::Utf8Ci)];
    db.create_namespace("users", indexes).unwrap();
    let mut rng = Rng(3);
    let capital = |w: String| w[..1].to_uppercase() + &w[1..];
    for id in 0..ITEMS {
        let user = json!({"id": id, "first_name": capital(rng.word()), "last_name": capital(rng.word())});
        db.insert("users", &user).unwrap();
    }
    let prefixes = ["ka", "lo", "mi", "br", "chda", "ze"];
    c.bench_function("users_ci_prefix_page", |b| {
        b.iter(|| {
            let prefix = prefixes[rng.below(prefixes.len() as u64) as usize];
            let query = Query::new("users")
                .where_("first_name", Op::Like, format!("{}%", prefix.to_uppercase()))
                .sort("first_name", false)
                .sort("last_name", false)
                .offset(rng.below(5) as usize * 10)
                .limit(10);
            black_box(db.query(&query).unwrap())
        })
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().measurement_time(std::time::Duration::from_secs(3)).warm_up_time(std::time::Duration::from_secs(1));
    targets = items, bulk_insert, prefix_search
}
criterion_main!(benches);
