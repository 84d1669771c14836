//! Writes the seed corpora under `fuzz/corpus/<target>/` (run from anywhere:
//! `cargo +nightly run --manifest-path fuzz/Cargo.toml --example make_seeds`).
//!
//! Seeds are small valid inputs of each decoder, made with the project's own encoders
//! where there is one (change records from a journal, snapshot files from
//! `snapshot::write`), so they follow the formats as they are. Each file is named by a
//! hash of its bytes, as libFuzzer names the inputs it keeps; running this again writes
//! the same files. It never deletes: remove a target's folder first to drop old seeds.

use hotset_core::kv::{KvOps, SetOptions};
use hotset_core::query::dsl;
use hotset_core::{Aggregation, Cond, Database, FieldType, IndexDef, Op, Query, Replay};
use hotset_fuzz::targets::resp_frame::encode_multibulk;
use hotset_fuzz::{ITEMS, MAKERS, MemDisk, fixture, item_documents, join_records, maker_documents};
use hotset_storage::snapshot;
use hotset_testkit::durable::MemJournal;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::Arc;

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus");
    let sets: [(&str, Vec<Vec<u8>>); 7] = [
        ("resp_frame", resp_frames()),
        ("sql", sql_statements()),
        ("dsl", dsl_queries()),
        ("fulltext_query", fulltext_queries()),
        ("document", documents()),
        ("wal_record", wal_records()),
        ("snapshot_block", snapshot_files()),
    ];
    for (target, seeds) in sets {
        let dir = root.join(target);
        std::fs::create_dir_all(&dir).expect("create the corpus folder");
        for seed in &seeds {
            std::fs::write(dir.join(name_of(seed)), seed).expect("write a seed");
        }
        println!("{target}: {} seeds", seeds.len());
    }
}

/// FNV-1a of the bytes, in hex: a stable file name.
fn name_of(bytes: &[u8]) -> String {
    let hash = bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3));
    format!("seed-{hash:016x}")
}

fn texts(items: &[&str]) -> Vec<Vec<u8>> {
    items.iter().map(|s| s.as_bytes().to_vec()).collect()
}

fn resp_frames() -> Vec<Vec<u8>> {
    let commands: [&[&[u8]]; 12] = [
        &[b"PING"],
        &[b"GET", b"k"],
        &[b"SET", b"key", b"value", b"EX", b"10"],
        &[b"SET", b"bin", b"a\r\nb\x00\xff"],
        &[b"HSET", b"h", b"f", b"1", b"g", b""],
        &[b"DOC.QUERY", br#"{"namespace":"items","filter":{"field":"year","op":">","value":2019}}"#],
        &[b"DOC.SQL", b"SELECT * FROM items WHERE id = 1"],
        &[b"DOC.UPSERT", b"items", br#"{"id":7,"name":"x"}"#],
        &[b"MSET", b"a", b"1", b"b", b"2"],
        &[b"AUTH", b"s3cret"],
        &[b""],
        &[],
    ];
    let mut seeds: Vec<Vec<u8>> = commands.iter().map(|args| encode_multibulk(args)).collect();
    let pipeline: Vec<u8> = commands[..4].iter().flat_map(|args| encode_multibulk(args)).collect();
    seeds.push(pipeline);
    seeds.extend(texts(&[
        "PING\r\n",
        "SET  k\tv\r\n",
        "GET k\n",
        "\r\n",
        "*-1\r\n",
        "*0\r\n*1\r\n$4\r\nPING\r\n",
        "*2\r\n$3\r\nGET\r\n$1\r\nk",
        "*1\r\n$-1\r\n",
        "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$10\r\n0123456789\r\n",
        "SET \"a b\" c\r\n",
        "PING\r\nPING\r\n*1\r\n$4\r\nPING\r\n",
        "*1\r\n+PING\r\n",
    ]));
    seeds
}

/// SQL statements found in hotset-sql's tests (string literals that start with a
/// statement keyword), plus a few written here.
fn sql_statements() -> Vec<Vec<u8>> {
    let sources = ["../crates/hotset-sql/src/tests.rs", "../crates/hotset-sql/src/tests/ddl.rs"];
    let mut statements: Vec<String> = Vec::new();
    for source in sources {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(source);
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
        for literal in string_literals(&text) {
            let head = literal.trim_start().to_ascii_uppercase();
            let keywords = ["SELECT", "INSERT", "UPDATE", "DELETE", "CREATE", "DROP", "TRUNCATE", "EXPLAIN"];
            if keywords.iter().any(|k| head.starts_with(k)) && !statements.contains(&literal) {
                statements.push(literal);
            }
        }
    }
    // Sixty of them, short to long, evenly spread.
    statements.sort_by_key(|s| (s.len(), s.clone()));
    let step = statements.len().div_ceil(60).max(1);
    let mut statements: Vec<String> = statements.into_iter().step_by(step).collect();
    statements.extend(
        [
            "SELECT * FROM items WHERE id = 0 OR id = 1 OR id = 2 OR id = 3",
            "SELECT name, COUNT(*) FROM items WHERE MATCH(text, 'pan~ +steak*') GROUP BY name",
            "SELECT i.name, m.country FROM items AS i LEFT JOIN makers AS m ON i.meta.maker = m.id ORDER BY i.year DESC LIMIT 3 OFFSET 1",
            "UPDATE items SET price = price * 2 + 1, tags = NULL WHERE year BETWEEN 2019 AND 2021",
            "INSERT INTO items (id, name, \"meta.maker\") VALUES (9, 'x', 'acme'), (10, 'y', NULL)",
            "CREATE INDEX IF NOT EXISTS ON items USING HASH (code) WITH (type = 'string', collate = 'numeric')",
        ]
        .map(str::to_string),
    );
    statements.into_iter().map(String::into_bytes).collect()
}

/// The contents of the `"..."` literals of Rust source (escapes `\"`, `\\`, `\n`, `\'`
/// and `\t` undone; raw strings skipped).
fn string_literals(source: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut chars = source.chars().peekable();
    let mut previous = ' ';
    while let Some(c) = chars.next() {
        if c == '"' && previous != 'r' && previous != '#' && previous != '\'' {
            let mut literal = String::new();
            while let Some(c) = chars.next() {
                match c {
                    '"' => break,
                    '\\' => match chars.next() {
                        Some('n') => literal.push('\n'),
                        Some('t') => literal.push('\t'),
                        Some(other) => literal.push(other),
                        None => break,
                    },
                    other => literal.push(other),
                }
            }
            out.push(literal);
            previous = '"';
            continue;
        }
        previous = c;
    }
    out
}

fn dsl_queries() -> Vec<Vec<u8>> {
    let built = [
        Query::new(ITEMS),
        Query::new(ITEMS).where_("year", Op::Ge, 2019).sort("price", true).limit(3).offset(1).with_total(),
        Query::new(ITEMS).filter(Cond::eq("name", "frying pan").or(Cond::new("tags", Op::AllSet, json!(["audio"])))),
        Query::new(ITEMS).filter(Cond::new("code", Op::Range, json!(["A1", "A99"])).not()),
        Query::new(ITEMS).where_("name", Op::Like, "wi%").aggregate(Aggregation::Count),
        Query::new(ITEMS).matching("text", "steak* -knife").explain(),
        Query::new(ITEMS).where_("meta.maker", Op::In, json!(["acme", "sonic"])).where_("ok", Op::Any, Value::Null),
        Query::new(ITEMS).aggregate(Aggregation::Sum("price".into())).aggregate(Aggregation::Distinct("tags".into())),
        Query::new(ITEMS).join(
            hotset_core::query::JoinKind::Inner,
            Query::new(MAKERS),
            &[("meta.maker", Op::Eq, "id")],
            "maker",
        ),
    ];
    let mut seeds: Vec<Vec<u8>> = built.iter().map(|q| dsl::query_to_json(q).to_string().into_bytes()).collect();
    seeds.extend(texts(&[
        r#"{"namespace":"items","filter":[{"field":"year","op":"range","values":[2019,2020]},{"field":"price","op":"<","value":50}]}"#,
        r#"{"namespace":"items","filter":{"or":[{"field":"tags","op":"empty"},{"not":{"field":"ok","value":true}}]},"sort":["-year","name"]}"#,
        r#"{"namespace":"items","aggregations":[{"type":"facet","fields":["year","ok"],"sort":"-count","limit":2},{"type":"avg","field":"price"},{"type":"min","field":"year"},{"type":"max","field":"name"}]}"#,
        r#"{"namespace":"items","filter":{"field":"text","op":"match","value":"frying pan~"},"highlight":{"fields":["title"],"pre":"[","post":"]"},"snippet":{"around":3,"fragments":2,"separator":" .. "},"limit":5}"#,
        r#"{"namespace":"items","joins":[{"type":"left","namespace":"makers","as":"m","on":[{"left":"meta.maker","op":"=","right":"id"}],"filter":{"field":"country","value":"us"},"sort":"country","limit":1}]}"#,
        r#"{"namespace":"items","timeout_ms":1000,"total":true,"explain":true,"offset":0,"limit":null}"#,
        r#"{"namespace":"items","filter":{"field":"name","op":"like","value":"%\\_%"}}"#,
        r#"{"namespace":"items","filter":{"field":"id","op":"in","values":[1,2.0,"3",null,true]}}"#,
        r#"{"query":"steak pan","namespaces":["items",{"name":"items","field":"text","filter":{"field":"year","value":2019}}],"limit":3,"highlight":true,"snippet":{"around":2}}"#,
        r#"{"namespace":"nope"}"#,
        r#"{"filter":{"field":"a"}}"#,
    ]));
    seeds
}

fn fulltext_queries() -> Vec<Vec<u8>> {
    texts(&[
        "pan",
        "frying pan",
        "+steak -knife",
        "head*^2",
        "*phone",
        "*ireles*",
        "wireles~",
        "wirelesss~2",
        "cat~0",
        "\"frying pan\"",
        "\"steak knives\"~3^1.5",
        "@title^3,body steak",
        "@* router",
        "wi-fi",
        "[kt,",
        "ёжик",
        "ежик туман",
        "Ёж*",
        "ntrcn",
        "\"open phrase",
        "word~3",
        "word^0",
        "@ word",
        "@title^-1 word",
        "  ... ",
        "a b c d e f g h i j k l m n o p q r s t u v w x y z",
        "+\"cast iron\" -\"non stick\" pan*^10 @body searing~1",
        "naïve café résumé",
        "日本語 テキスト",
        "x^1000.0 y^0.001",
    ])
}

fn documents() -> Vec<Vec<u8>> {
    let mut seeds: Vec<Vec<u8>> =
        item_documents().iter().chain(&maker_documents()).map(|d| d.to_string().into_bytes()).collect();
    seeds.extend(texts(&[
        "{}",
        r#"{"id":7}"#,
        r#"{"id":8,"name":"x","year":"2020"}"#,
        r#"{"id":9,"tags":"not an array","price":"1"}"#,
        r#"{"id":10,"meta":{"maker":["a","b"]},"ok":1}"#,
        r#"{"id":11,"price":1e308,"year":9007199254740993,"code":"0001"}"#,
        r#"{"id":12,"price":-0.0,"year":-9223372036854775808}"#,
        r#"{"id":18446744073709551615}"#,
        r#"{"id":13,"name":"\u00e9\ud83e\udd94\n\"","title":"a\u0000b"}"#,
        r#"{"id":14,"a":{"b":{"c":{"d":[[[[1]]]]}}}}"#,
        r#"{"id":15,"id":16}"#,
        r#"{ "id" : 17 , "name" : "spaced" }"#,
        r#"{"id":19,"tags":["a",null,["b",["c"]],{"x":1}]}"#,
        r#"{"id":20,"price":0.1,"body":"steak steak steak","title":null}"#,
        "[1,2]",
        "\"text\"",
        r#"{"id":21,"name":"#,
        r#"{"id":22} trailing"#,
    ]));
    seeds
}

/// Change records as a journal receives them from a workload of every kind of write,
/// each alone and in runs joined by the separator.
fn wal_records() -> Vec<Vec<u8>> {
    let journal = Arc::new(MemJournal::default());
    let db = Database::new();
    assert!(db.attach_journal(journal.clone()));
    workload(&db);
    let records: Vec<Vec<u8>> = journal.records_from(1).into_iter().map(|(_, payload)| payload).collect();
    let mut seeds = records.clone();
    for run in records.chunks(5) {
        seeds.push(join_records(run));
    }
    seeds
}

/// Every write path once: schema changes, document writes and deletes, a transaction,
/// key-value writes of every type, deadlines, flushes and drops.
fn workload(db: &Database) {
    db.create_namespace(ITEMS, hotset_fuzz::item_indexes()).expect("create items");
    for doc in item_documents() {
        db.insert(ITEMS, &doc).expect("insert");
    }
    db.upsert(ITEMS, &json!({"id": 2, "name": "wired headphones", "year": 2022})).expect("upsert");
    db.delete(ITEMS, &json!(6)).expect("delete");
    db.add_index(ITEMS, IndexDef::tree("price", FieldType::Double).named("by_price")).expect("add index");
    db.drop_index(ITEMS, "by_price").expect("drop index");
    let mut txn = db.transaction(ITEMS).expect("transaction");
    txn.upsert(json!({"id": 30, "name": "a"})).expect("txn upsert");
    txn.upsert(json!({"id": 31, "name": "b", "tags": ["x"]})).expect("txn upsert");
    txn.delete(json!(1)).expect("txn delete");
    txn.commit().expect("commit");
    db.create_namespace(
        "pairs",
        vec![
            IndexDef::composite_typed(&[("a", FieldType::Int), ("b", FieldType::String)], hotset_core::IndexKind::Hash)
                .pk(),
        ],
    )
    .expect("composite key");
    db.insert("pairs", &json!({"a": 1, "b": "x"})).expect("insert pair");
    db.delete("pairs", &json!([1, "x"])).expect("delete pair");
    db.truncate("pairs").expect("truncate");
    db.drop_namespace("pairs").expect("drop");
    let keyspace = db.keyspaces().get_or_create("0");
    keyspace.set(b"k", b"v\x00\xff", SetOptions::default()).expect("SET");
    keyspace.incr_by(b"n", -7).expect("INCRBY");
    keyspace.hset(b"h", &[(b"f", b"1"), (b"g", b"2")]).expect("HSET");
    keyspace.hset(b"h", &[(b"f", b"3")]).expect("HSET of one field");
    keyspace.hdel(b"h", &[b"g"]).expect("HDEL");
    keyspace.expire_at_ms(b"k", 1_900_000_000_000).expect("EXPIREAT");
    keyspace.del(&[b"n"]).expect("DEL");
    keyspace.flush().expect("FLUSHDB");
    let other = db.keyspaces().get_or_create("cache");
    other.set(b"x", b"y", SetOptions::default()).expect("SET");
    db.keyspaces().drop("cache").expect("drop keyspace");
}

/// Snapshot files of the fixture and of a small database: whole files (mode byte 0),
/// and their payloads joined by the separator (mode byte 1, framed by the target).
fn snapshot_files() -> Vec<Vec<u8>> {
    let mut seeds = Vec::new();
    let small = Database::new();
    small.create_namespace("t", vec![IndexDef::hash("id", FieldType::Int).pk()]).expect("create");
    small.insert("t", &json!({"id": 1, "v": "a"})).expect("insert");
    for (db, start_lsn) in [(fixture(), 42), (small, 1), (Database::new(), 7)] {
        let disk = MemDisk::new();
        let dir = PathBuf::from("/snapshots");
        let info = snapshot::write(&disk, &dir, &db, start_lsn, &mut || Ok(start_lsn + 3), &Default::default())
            .expect("write a snapshot in memory");
        let file = disk.get(&info.path).expect("the snapshot file");
        seeds.push([&[0u8][..], &file].concat());
        let mut payloads = Vec::new();
        let mut offset = 8;
        while let hotset_storage::FrameRead::Frame { payload, next, .. } = hotset_storage::read_frame(&file, offset) {
            payloads.push(payload.to_vec());
            offset = next;
        }
        seeds.push([&[1u8][..], &join_records(&payloads)].concat());
        // The blocks alone apply to an empty database, as loading does.
        let copy = Database::new();
        for block in &payloads[1..payloads.len() - 1] {
            copy.apply_change(block, hotset_core::change::Format::CURRENT, Replay::Exact).expect("a block applies");
        }
    }
    seeds
}
