use hotset_core::query::{Op, Query};
use hotset_core::{Database, FieldType, IndexDef};
fn main() {
    let path = std::env::args().nth(1).unwrap();
    let db = Database::new();
    db.create_namespace("items", vec![IndexDef::hash("id", FieldType::Int).pk(), IndexDef::hash("name", FieldType::String), IndexDef::tree("year", FieldType::Int)]).unwrap();
    for line in std::fs::read_to_string(path).unwrap().lines() { db.upsert_json("items", line.as_bytes()).unwrap(); }
    let name = "modrobra ca";
    for _ in 0..3 {
        let q = Query::new("items").where_("name", Op::Eq, name).where_("year", Op::Gt, 2010).sort("year", false).limit(10).with_total().explain();
        println!("{}", db.query(&q).unwrap().explain.unwrap().to_text());
        let q = Query::new("items").filter(hotset_core::Cond::new("year", Op::Range, serde_json::json!([2010, 2020]))).sort("year", true).offset(100).limit(20).explain();
        println!("{}", db.query(&q).unwrap().explain.unwrap().to_text());
    }
}
