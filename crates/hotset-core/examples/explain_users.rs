use hotset_core::query::{Op, Query};
use hotset_core::{Collation, Database, FieldType, IndexDef, IndexKind};
fn main() {
    let path = std::env::args().nth(1).unwrap();
    let db = Database::new();
    db.create_namespace("users", vec![IndexDef::hash("id", FieldType::Int).pk(), IndexDef::composite(&["first_name", "last_name"], IndexKind::Tree, FieldType::String).collate(Collation::Utf8Ci)]).unwrap();
    for line in std::fs::read_to_string(path).unwrap().lines() { db.upsert_json("users", line.as_bytes()).unwrap(); }
    for _ in 0..3 {
        let q = Query::new("users").where_("first_name", Op::Like, "br%").sort("first_name", false).sort("last_name", false).offset(30).limit(10).explain();
        println!("{}", db.query(&q).unwrap().explain.unwrap().to_text());
    }
    let t = std::time::Instant::now();
    for _ in 0..200000 {
        let q = Query::new("users").where_("first_name", Op::Like, "br%").sort("first_name", false).sort("last_name", false).offset(30).limit(10);
        std::hint::black_box(db.query(&q).unwrap());
    }
    println!("{:?}", t.elapsed() / 200000);
}
