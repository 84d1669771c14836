//! What each fuzz target checks, and what the targets share: the fixture database they
//! write into and query, a `Disk` kept in memory (so the storage decoders read fuzzer bytes
//! as files without touching the file system), and the way one input is split into several
//! records.
//!
//! Owns: nothing the product uses. The libFuzzer binaries of `fuzz/` (cargo-fuzz, nightly,
//! AddressSanitizer) are one line each around `targets::*::run`; this crate's test
//! `tests/corpus.rs` replays every committed corpus input through the same
//! functions on the stable toolchain, so the workspace's test run checks them without
//! cargo-fuzz. Never: hide a failure of the code under test. A helper here either returns
//! what the engine returned or panics with the input's story, which is what libFuzzer
//! records as a crash.
//!
//! Invariants: every fixture is deterministic (a manual clock, fixed documents), so a
//! crash input replays the same way on any machine.

pub mod targets;

use hotset_core::clock::ManualClock;
use hotset_core::kv::{KvOps, SetOptions};
use hotset_core::{Collation, Database, FieldType, IndexDef, IndexKind, Limits};
use hotset_storage::{Disk, DiskFile};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::io::{self, Cursor, Read};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// The fixture databases' clock: key deadlines compare against this fixed instant.
pub const NOW_MS: u64 = 1_700_000_000_000;

/// Splits one input into records (WAL payloads, snapshot blocks). Chosen over length
/// prefixes because libFuzzer's inserts and deletes inside one record then leave the
/// others intact.
pub const SEPARATOR: &[u8] = b"\n--\n";

/// The pieces of `data` between separators (one piece when there is none).
pub fn split_records(data: &[u8]) -> Vec<&[u8]> {
    let mut pieces = Vec::new();
    let mut rest = data;
    while let Some(at) = rest.windows(SEPARATOR.len()).position(|w| w == SEPARATOR) {
        pieces.push(&rest[..at]);
        rest = &rest[at + SEPARATOR.len()..];
    }
    pieces.push(rest);
    pieces
}

/// Joins records with the separator (the inverse of `split_records`).
pub fn join_records(records: &[Vec<u8>]) -> Vec<u8> {
    records.join(SEPARATOR)
}

/// An empty database on the fixed clock.
pub fn empty_database() -> Database {
    Database::with_clock(Arc::new(ManualClock::new(NOW_MS)), Limits::default())
}

/// The namespace most targets write into and query.
pub const ITEMS: &str = "items";
/// A second namespace, for joins.
pub const MAKERS: &str = "makers";
/// The text index of `items` (over `title` and `body`).
pub const TEXT_INDEX: &str = "text";

/// The indexes of `items`: one of each kind, type and option a client can declare.
pub fn item_indexes() -> Vec<IndexDef> {
    vec![
        IndexDef::hash("id", FieldType::Int).pk(),
        IndexDef::tree("name", FieldType::String).collate(Collation::Utf8Ci),
        IndexDef::tree("year", FieldType::Int).sparse(),
        IndexDef::tree("tags", FieldType::String).array().sparse(),
        IndexDef::store("price", FieldType::Double),
        IndexDef::hash("ok", FieldType::Bool).sparse(),
        IndexDef::tree("code", FieldType::String).collate(Collation::Numeric).sparse(),
        IndexDef::hash("meta.maker", FieldType::String).collate(Collation::AsciiCi).sparse(),
        IndexDef::composite_typed(&[("name", FieldType::String), ("year", FieldType::Int)], IndexKind::Tree),
        IndexDef::text(&["title", "body"]).named(TEXT_INDEX),
    ]
}

/// The documents of `items`.
pub fn item_documents() -> Vec<Value> {
    vec![
        json!({"id": 1, "name": "Frying Pan", "year": 2019, "tags": ["kitchen", "steel"], "price": 24.5,
               "ok": true, "code": "A10", "meta": {"maker": "acme"},
               "title": "Cast iron frying pan", "body": "Heavy pan for searing steaks and baking bread"}),
        json!({"id": 2, "name": "wireless headphones", "year": 2021, "tags": ["audio"], "price": 99.0,
               "ok": false, "code": "A9", "meta": {"maker": "Sonic"},
               "title": "Wireless headphones", "body": "Noise cancelling, 30 hours of battery"}),
        json!({"id": 3, "name": "Ёжик", "year": 2020, "tags": [], "price": -1.25, "code": "b2",
               "title": "Ёжик в тумане", "body": "Мультфильм про ёжика и медвежонка"}),
        json!({"id": 4, "name": "wi-fi router", "tags": ["network", "audio"], "price": 0,
               "meta": {"maker": "ACME"}, "title": "Wi-Fi 6 router", "body": "Mesh-ready router, four antennas"}),
        json!({"id": -5, "name": "", "year": -1, "title": "", "body": null, "extra": [[1, 2], {"a": "b"}]}),
        json!({"id": 6, "name": "Steak knife", "year": 2019, "tags": ["kitchen"], "price": 12.0, "ok": true,
               "title": "Steak knives", "body": "A set of six serrated steak knives"}),
    ]
}

/// The documents of `makers`.
pub fn maker_documents() -> Vec<Value> {
    vec![
        json!({"id": "acme", "country": "US", "since": 1950}),
        json!({"id": "sonic", "country": "JP", "since": 1999}),
        json!({"id": "Ёж", "country": "RU"}),
    ]
}

/// `items` and `makers` with their documents, and a keyspace with a string, a counter,
/// a hash and a key with a deadline.
pub fn fixture() -> Database {
    let db = empty_database();
    db.create_namespace(ITEMS, item_indexes()).expect("the fixture's schema is valid");
    for doc in item_documents() {
        db.insert(ITEMS, &doc).expect("the fixture's documents fit its schema");
    }
    let maker_indexes = vec![
        IndexDef::hash("id", FieldType::String).pk(),
        IndexDef::tree("country", FieldType::String).collate(Collation::AsciiCi).sparse(),
    ];
    db.create_namespace(MAKERS, maker_indexes).expect("the fixture's schema is valid");
    for doc in maker_documents() {
        db.insert(MAKERS, &doc).expect("the fixture's documents fit its schema");
    }
    let keyspace = db.keyspaces().get_or_create("0");
    keyspace.set(b"greeting", b"hello", SetOptions::default()).expect("SET on a fresh keyspace");
    keyspace.incr_by(b"counter", 41).expect("INCRBY on a fresh key");
    keyspace.hset(b"hash", &[(b"f", b"1"), (b"g", b"")]).expect("HSET on a fresh key");
    keyspace.set(b"later", b"x", SetOptions::default()).expect("SET on a fresh keyspace");
    keyspace.expire_at_ms(b"later", (NOW_MS + 60_000) as i64).expect("EXPIREAT on a string");
    db
}

/// Checks what must hold after any sequence of writes, however wrong the input: indexes
/// agree with the documents, and a snapshot of the database loads into an empty one that
/// then holds the same.
pub fn check_database(db: &Database, context: &str) {
    if let Err(problem) = db.verify_indexes() {
        panic!("{context}: indexes disagree with the documents: {problem}");
    }
    let before = hotset_testkit::durable::dump(db);
    let mut blocks: Vec<Vec<u8>> = Vec::new();
    db.write_snapshot(&mut |block: &[u8]| -> Result<(), ()> {
        blocks.push(block.to_vec());
        Ok(())
    })
    .expect("collecting snapshot blocks in memory cannot fail");
    let copy = empty_database();
    for (position, block) in blocks.iter().enumerate() {
        if let Err(error) = copy.apply_change(block, hotset_core::change::Format::CURRENT, hotset_core::Replay::Exact) {
            panic!("{context}: snapshot block {position} of the database does not load: {error}");
        }
    }
    assert_eq!(hotset_testkit::durable::dump(&copy), before, "{context}: a snapshot loads into something else");
}

/// A file system kept in memory: a map from path to bytes. Directories exist implicitly.
#[derive(Debug, Default, Clone)]
pub struct MemDisk {
    files: Arc<Mutex<BTreeMap<PathBuf, Vec<u8>>>>,
}

impl MemDisk {
    pub fn new() -> MemDisk {
        MemDisk::default()
    }

    /// Puts a whole file in place.
    pub fn put(&self, path: &Path, bytes: Vec<u8>) {
        self.files.lock().expect("not poisoned").insert(path.to_path_buf(), bytes);
    }

    /// A file's bytes, if it exists.
    pub fn get(&self, path: &Path) -> Option<Vec<u8>> {
        self.files.lock().expect("not poisoned").get(path).cloned()
    }

    fn missing(path: &Path) -> io::Error {
        io::Error::new(io::ErrorKind::NotFound, format!("{} does not exist", path.display()))
    }
}

/// An open file of a `MemDisk`: writes go to the end of the shared bytes.
#[derive(Debug)]
struct MemFile {
    disk: MemDisk,
    path: PathBuf,
}

impl DiskFile for MemFile {
    fn write_all(&mut self, data: &[u8]) -> io::Result<()> {
        let mut files = self.disk.files.lock().expect("not poisoned");
        files.get_mut(&self.path).ok_or_else(|| MemDisk::missing(&self.path))?.extend_from_slice(data);
        Ok(())
    }

    fn sync_data(&mut self) -> io::Result<()> {
        Ok(())
    }

    fn len(&self) -> io::Result<u64> {
        let files = self.disk.files.lock().expect("not poisoned");
        Ok(files.get(&self.path).ok_or_else(|| MemDisk::missing(&self.path))?.len() as u64)
    }

    fn set_len(&mut self, len: u64) -> io::Result<()> {
        let mut files = self.disk.files.lock().expect("not poisoned");
        files.get_mut(&self.path).ok_or_else(|| MemDisk::missing(&self.path))?.resize(len as usize, 0);
        Ok(())
    }
}

impl Disk for MemDisk {
    fn create(&self, path: &Path) -> io::Result<Box<dyn DiskFile>> {
        self.put(path, Vec::new());
        Ok(Box::new(MemFile { disk: self.clone(), path: path.to_path_buf() }))
    }

    fn open_append(&self, path: &Path) -> io::Result<Box<dyn DiskFile>> {
        self.get(path).ok_or_else(|| MemDisk::missing(path))?;
        Ok(Box::new(MemFile { disk: self.clone(), path: path.to_path_buf() }))
    }

    fn open_read(&self, path: &Path) -> io::Result<Box<dyn Read + Send>> {
        Ok(Box::new(Cursor::new(self.get(path).ok_or_else(|| MemDisk::missing(path))?)))
    }

    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        self.get(path).ok_or_else(|| MemDisk::missing(path))
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<PathBuf>> {
        let files = self.files.lock().expect("not poisoned");
        Ok(files.keys().filter(|path| path.parent() == Some(dir)).cloned().collect())
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        self.files.lock().expect("not poisoned").remove(path).map(drop).ok_or_else(|| MemDisk::missing(path))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut files = self.files.lock().expect("not poisoned");
        let bytes = files.remove(from).ok_or_else(|| MemDisk::missing(from))?;
        files.insert(to.to_path_buf(), bytes);
        Ok(())
    }

    fn truncate(&self, path: &Path, len: u64) -> io::Result<()> {
        let mut files = self.files.lock().expect("not poisoned");
        files.get_mut(path).ok_or_else(|| MemDisk::missing(path))?.resize(len as usize, 0);
        Ok(())
    }

    fn sync_dir(&self, _dir: &Path) -> io::Result<()> {
        Ok(())
    }

    fn create_dir_all(&self, _dir: &Path) -> io::Result<()> {
        Ok(())
    }

    fn file_len(&self, path: &Path) -> io::Result<u64> {
        let files = self.files.lock().expect("not poisoned");
        Ok(files.get(path).ok_or_else(|| MemDisk::missing(path))?.len() as u64)
    }
}

/// A query written as the JSON DSL and read back is the same query, and writing it again
/// gives the same JSON.
pub fn check_dsl_round_trip(query: &hotset_core::Query, context: &str) {
    use hotset_core::query::dsl;
    let json = dsl::query_to_json(query);
    let again = match dsl::query_from_json(&json, None) {
        Ok(again) => again,
        Err(error) => panic!("{context}: the DSL refuses what query_to_json wrote ({error}): {json}\nquery: {query:?}"),
    };
    assert_eq!(&again, query, "{context}: the DSL read back another query from {json}");
    assert_eq!(dsl::query_to_json(&again), json, "{context}: the DSL writes a query two ways");
}

/// A JSON answer (of a query, a search or a statement) is one JSON value.
pub fn check_json_answer(bytes: &[u8], context: &str) {
    if let Err(error) = serde_json::from_slice::<Value>(bytes) {
        panic!("{context}: the answer is not JSON ({error}): {}", String::from_utf8_lossy(bytes));
    }
}
