//! Golden files: data folders written by earlier builds, one per on-disk format version,
//! opened by this build and compared with what they must hold.
//!
//! `tests/golden/v<N>/` holds a snapshot and a log tail written by the build that
//! introduced format N, from the deterministic writes of [`before_snapshot`] and
//! [`after_snapshot`] (every kind of index and index option, documents, deletes, a
//! dropped index, a truncated and a dropped namespace, key-value strings, integers and
//! hashes with and without expiry, a dropped keyspace). The expected state is not read
//! from the files: it is the same writes applied to a fresh in-memory `Database`, so a
//! decoder that misreads an old file cannot agree with itself.
//!
//! When a format version is added, write its folder once with the new build and commit
//! it (the folders of earlier versions stay as they are, forever):
//!
//! ```text
//! CARGO_TARGET_DIR=/work/target-formats \
//!   cargo test -p hotset-storage --test golden -- --ignored write_golden_folder
//! ```
//!
//! It writes `tests/golden/v<Format::CURRENT>/` (replacing it). Bytes differ from run to
//! run only in the snapshot's creation time and in the order of namespaces and keyspaces
//! within it (hash map order); what the files hold is the same. The writes must stay the
//! same for every version: change them and every folder must be written again, which is
//! impossible for the old ones. Add writes for a new feature in a new function that
//! only the new version's folder runs, if ever needed.

use hotset_core::change::Format;
use hotset_core::clock::ManualClock;
use hotset_core::collate::Collation;
use hotset_core::kv::{KvOps, SetExpiry, SetOptions};
use hotset_core::text::{Language, Ranking, StopWords, TextConfig};
use hotset_core::{Database, FieldType, IndexDef, IndexKind, Limits, Query};
use hotset_storage::{FsyncPolicy, Store, StoreOptions};
use hotset_testkit::durable::copy_folder;
use serde_json::json;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The manual clock's reading for every write (2023-11-14): deadlines are absolute, so
/// opening the folder at the same reading gives the same TTLs.
const CLOCK_MS: u64 = 1_700_000_000_000;

/// The format version this build writes: the folder `write_golden_folder` fills.
fn current_version() -> u32 {
    Format::CURRENT.number()
}

fn golden_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

/// A text index with every option away from its default.
fn text_options() -> TextConfig {
    TextConfig {
        weights: vec![3.0, 0.5],
        languages: vec![Language::English],
        stop_words: StopWords::List(vec!["the".into(), "a".into()]),
        synonyms: vec![vec!["tv".into(), "television".into()], vec!["car".into(), "auto".into(), "automobile".into()]],
        typos: false,
        ranking: Ranking {
            k1: 1.5,
            b: 0.5,
            proximity: 1.25,
            stem: 0.7,
            prefix: 0.4,
            suffix: 0.3,
            typo: 0.45,
            translit: 0.65,
            layout: 0.55,
            synonym: 0.9,
        },
    }
}

fn catalog_schema() -> Vec<IndexDef> {
    vec![
        IndexDef::hash("id", FieldType::Int).pk(),
        IndexDef::tree("year", FieldType::Int),
        IndexDef::composite_typed(&[("name", FieldType::String), ("year", FieldType::Int)], IndexKind::Tree)
            .collate(Collation::Utf8Ci),
        IndexDef::tree("tags", FieldType::String).array().sparse().collate(Collation::AsciiCi),
        IndexDef::store("price", FieldType::Double),
        IndexDef::hash("code", FieldType::String).collate(Collation::Numeric).sparse(),
        IndexDef::hash("active", FieldType::Bool).sparse(),
        IndexDef::tree("expires", FieldType::Int).expire_after(3600).sparse(),
        IndexDef::text(&["title", "body"]).text_config(text_options()),
        IndexDef::composite(&["shelf", "bin"], IndexKind::Hash, FieldType::Int).named("place").sparse(),
    ]
}

fn events_schema() -> Vec<IndexDef> {
    let mut builtin = TextConfig::new(1);
    builtin.stop_words = StopWords::Builtin;
    vec![
        IndexDef::tree("key", FieldType::String).pk().collate(Collation::AsciiCi),
        IndexDef::composite_typed(&[("user", FieldType::String), ("day", FieldType::Int)], IndexKind::Hash),
        IndexDef::text(&["message"]).named("search").text_config(builtin),
        IndexDef::store("score", FieldType::Double).sparse(),
    ]
}

fn catalog_document(id: i64) -> serde_json::Value {
    let names = ["Ёлка", "straße", "Alpha", "beta", "Gamma"];
    let mut doc = json!({
        "id": id,
        "year": 1990 + id % 7,
        "name": names[id as usize % names.len()],
        "price": id as f64 * 1.25,
        "title": format!("The television number {id}"),
        "body": format!("A car for sale, item {id} of the catalog"),
    });
    if id % 2 == 0 {
        doc["tags"] = json!(["Red", format!("t{}", id % 3)]);
        doc["code"] = json!(format!("A{}", id * 7));
    }
    if id % 3 == 0 {
        doc["active"] = json!(id % 2 == 0);
        doc["shelf"] = json!(id % 4);
        doc["bin"] = json!(id);
    }
    if id % 5 == 0 {
        doc["expires"] = json!(1_700_000_000 + id * 60);
    }
    doc
}

/// The writes before the snapshot: they end up in the snapshot file.
fn before_snapshot(db: &Database) {
    db.create_namespace("catalog", catalog_schema()).unwrap();
    for id in 0..24 {
        db.upsert("catalog", &catalog_document(id)).unwrap();
    }
    db.delete("catalog", &json!(3)).unwrap();
    db.upsert("catalog", &json!({"id": 4, "year": 2020, "name": "changed", "price": 0.5})).unwrap();
    // An index added and dropped again, and one added that stays.
    db.add_index("catalog", IndexDef::hash("color", FieldType::String)).unwrap();
    db.drop_index("catalog", "color").unwrap();
    db.add_index("catalog", IndexDef::tree("rating", FieldType::Double).sparse()).unwrap();
    db.upsert("catalog", &json!({"id": 30, "year": 2001, "name": "rated", "rating": 4.5})).unwrap();

    db.create_namespace("events", events_schema()).unwrap();
    for n in 0..6 {
        let doc = json!({"key": format!("E{n}"), "user": format!("u{}", n % 2), "day": n, "message": "the quick fox"});
        db.upsert("events", &doc).unwrap();
    }
    db.delete("events", &json!("e2")).unwrap();

    db.create_namespace("scratch", vec![IndexDef::hash("id", FieldType::Int).pk()]).unwrap();
    db.upsert("scratch", &json!({"id": 1})).unwrap();
    db.drop_namespace("scratch").unwrap();

    db.create_namespace("emptied", vec![IndexDef::hash("id", FieldType::String).pk()]).unwrap();
    db.upsert("emptied", &json!({"id": "x"})).unwrap();
    db.truncate("emptied").unwrap();

    let kv = db.keyspaces().get_or_create("0");
    kv.set(b"plain", b"value", SetOptions::default()).unwrap();
    kv.set(b"binary\x00key", b"\x00\xff bytes", SetOptions::default()).unwrap();
    let expiring = SetOptions { expiry: Some(SetExpiry::Ex(60_000)), ..SetOptions::default() };
    kv.set(b"session", b"abc", expiring).unwrap();
    kv.incr_by(b"counter", 41).unwrap();
    kv.incr_by(b"counter", 1).unwrap();
    kv.decr_by(b"negative", 9_000_000_000).unwrap();
    kv.hset(b"user:1", &[(b"name", b"Ann"), (b"age", b"33"), (b"", b"empty field")]).unwrap();
    kv.hset(b"user:2", &[(b"name", b"Bob")]).unwrap();
    kv.expire_in_ms(b"user:2", 3_600_000).unwrap();
    kv.set(b"deleted", b"soon", SetOptions::default()).unwrap();
    kv.del(&[b"deleted"]).unwrap();
    let cache = db.keyspaces().get_or_create("cache");
    cache.set(b"gone", b"with the keyspace", SetOptions::default()).unwrap();
    db.keyspaces().drop("cache").unwrap();
    db.keyspaces().get_or_create("7").set(b"other", b"keyspace", SetOptions::default()).unwrap();
}

/// The writes after the snapshot: they stay in the log tail.
fn after_snapshot(db: &Database) {
    for id in 24..30 {
        db.upsert("catalog", &catalog_document(id)).unwrap();
    }
    db.delete("catalog", &json!(10)).unwrap();
    db.upsert("catalog", &json!({"id": 0, "year": 1999, "name": "rewritten", "tags": ["Blue"]})).unwrap();
    let mut notes = TextConfig::new(2);
    notes.weights = vec![2.0, 1.0];
    notes.languages = vec![Language::Russian, Language::English];
    notes.typos = false;
    db.add_index("events", IndexDef::text(&["message", "note"]).named("notes").text_config(notes)).unwrap();
    db.add_index("events", IndexDef::tree("day", FieldType::Int).named("by_day")).unwrap();
    db.drop_index("events", "score").unwrap();
    db.upsert("events", &json!({"key": "E9", "user": "u9", "day": 9, "message": "late", "note": "заметка"})).unwrap();

    db.create_namespace(
        "late",
        vec![
            IndexDef::tree("id", FieldType::Int).pk(),
            IndexDef::tree("at", FieldType::Int).expire_after(0),
            IndexDef::composite_typed(
                &[("a", FieldType::Bool), ("b", FieldType::Double), ("c", FieldType::String)],
                IndexKind::Tree,
            )
            .collate(Collation::Numeric),
        ],
    )
    .unwrap();
    db.upsert("late", &json!({"id": -5, "at": 1_800_000_000, "a": true, "b": -0.5, "c": "x10"})).unwrap();
    db.drop_namespace("events").unwrap();
    db.create_namespace("events", events_schema()).unwrap();
    db.upsert("events", &json!({"key": "again", "user": "u", "day": 1, "message": "recreated"})).unwrap();

    let kv = db.keyspaces().get_or_create("0");
    kv.set(b"plain", b"value 2", SetOptions::default()).unwrap();
    kv.incr_by(b"counter", -50).unwrap();
    kv.hset(b"user:1", &[(b"age", b"34")]).unwrap();
    kv.hdel(b"user:1", &[b""]).unwrap();
    kv.expire_in_ms(b"plain", 120_000).unwrap();
    kv.persist(b"session").unwrap();
    db.keyspaces().get_or_create("tail").set(b"k", b"v", SetOptions::default()).unwrap();
    db.keyspaces().get_or_create("temporary").set(b"k", b"v", SetOptions::default()).unwrap();
    db.keyspaces().drop("temporary").unwrap();
}

fn options(dir: &Path) -> StoreOptions {
    let mut options = StoreOptions::new(dir);
    options.fsync = FsyncPolicy::Always;
    options.snapshot_interval = None;
    options.clock = Arc::new(ManualClock::new(CLOCK_MS));
    options
}

/// Everything a database holds, comparable and readable: namespaces with every index
/// definition (every field, as `Debug` prints it) and every document; keyspaces with
/// every key's type, value, deadline and TTL.
fn dump(db: &Database) -> BTreeMap<String, Vec<String>> {
    let mut out = BTreeMap::new();
    for name in db.namespace_names() {
        let info = db.describe(&name).unwrap();
        let mut lines: Vec<String> = info.indexes.iter().map(|def| format!("index {def:?}")).collect();
        let mut docs: Vec<String> =
            db.query(&Query::new(&name)).unwrap().values().iter().map(|doc| format!("doc {doc}")).collect();
        docs.sort();
        lines.extend(docs);
        out.insert(format!("namespace {name}"), lines);
    }
    for name in db.keyspaces().list() {
        let keyspace = db.keyspaces().get(&name).unwrap();
        let mut lines = Vec::new();
        let mut keys = keyspace.keys(b"*").unwrap();
        keys.sort();
        for key in keys {
            let kind = keyspace.key_type(&key).unwrap();
            let value = match kind {
                "string" => keyspace.get(&key).unwrap().unwrap().escape_ascii().to_string(),
                "hash" => {
                    let mut pairs = keyspace.hgetall(&key).unwrap();
                    pairs.sort();
                    let pairs: Vec<String> = pairs
                        .iter()
                        .map(|(field, value)| format!("{}={}", field.escape_ascii(), value.escape_ascii()))
                        .collect();
                    pairs.join(" ")
                }
                other => panic!("a key of type {other}"),
            };
            let deadline = keyspace.expire_time_ms(&key).unwrap();
            let ttl = keyspace.ttl_ms(&key).unwrap();
            lines.push(format!("key {} {kind} {value} expire_at_ms {deadline} ttl_ms {ttl}", key.escape_ascii()));
        }
        out.insert(format!("keyspace {name}"), lines);
    }
    out
}

/// The state every golden folder must open to: the writes on a fresh in-memory database.
fn expected_dump() -> BTreeMap<String, Vec<String>> {
    let db = Database::with_clock(Arc::new(ManualClock::new(CLOCK_MS)), Limits::default());
    before_snapshot(&db);
    after_snapshot(&db);
    dump(&db)
}

/// The committed golden folders, oldest version first.
fn golden_folders() -> Vec<(u32, PathBuf)> {
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir(golden_root())
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter_map(|path| {
            let version = path.file_name()?.to_str()?.strip_prefix('v')?.parse().ok()?;
            Some((version, path))
        })
        .collect();
    found.sort();
    found
}

#[test]
fn every_golden_folder_opens_to_the_state_its_writes_made() {
    let folders = golden_folders();
    let versions: Vec<u32> = folders.iter().map(|(version, _)| *version).collect();
    let readable: Vec<u32> = Format::READABLE.iter().map(|format| format.number()).collect();
    assert_eq!(versions, readable, "a folder per format version this build reads");
    let expected = expected_dump();
    for (version, folder) in folders {
        let dir = tempfile::tempdir().unwrap();
        copy_folder(&folder, dir.path());
        let store = Store::open(options(dir.path())).unwrap_or_else(|e| panic!("v{version} does not open: {e}"));
        let report = store.recovery();
        assert!(report.snapshot.is_some(), "v{version}: the snapshot was loaded");
        assert!(report.records > 0, "v{version}: the log tail was replayed");
        store.verify_indexes().unwrap_or_else(|e| panic!("v{version}: {e}"));
        assert_eq!(dump(&store), expected, "v{version}");
        store.close().unwrap();
    }
}

/// Writes `tests/golden/v<current_version()>/`: run by hand when a format version is added
/// (see the module docs), never in a normal test run.
#[test]
#[ignore = "writes the golden folder of the current format; run by hand"]
fn write_golden_folder() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(options(dir.path())).unwrap();
    before_snapshot(&store);
    store.snapshot().unwrap();
    after_snapshot(&store);
    store.close().unwrap();
    let target = golden_root().join(format!("v{}", current_version()));
    if target.exists() {
        std::fs::remove_dir_all(&target).unwrap();
    }
    copy_folder(dir.path(), &target);
}

/// The golden folder of `version`, copied to a temporary folder.
fn copy_of(version: u32) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_folder(&golden_root().join(format!("v{version}")), dir.path());
    dir
}

fn only_file(dir: &Path) -> PathBuf {
    let files: Vec<PathBuf> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(files.len(), 1, "{files:?}");
    files[0].clone()
}

/// Sets the version digits of a file's magic (`HSWAL` + 3 digits, `HSSNAP` + 2).
fn patch_version(path: &Path, digits: &[u8]) {
    let mut bytes = std::fs::read(path).unwrap();
    bytes[8 - digits.len()..8].copy_from_slice(digits);
    std::fs::write(path, bytes).unwrap();
}

/// A file of a format newer than this build is refused with the version it has and the
/// versions this build reads, in every recovery mode, and left as it was: not taken for
/// damage (a torn header cut off, a snapshot passed over for the one before it).
#[test]
fn a_future_format_is_refused_naming_its_version() {
    for mode in [hotset_storage::RecoveryMode::Strict, hotset_storage::RecoveryMode::TruncateCorrupt] {
        let dir = copy_of(current_version());
        let segment = only_file(&dir.path().join("wal"));
        patch_version(&segment, b"099");
        let before = std::fs::read(&segment).unwrap();
        let mut options = options(dir.path());
        options.recovery = mode;
        let error = Store::open(options).err().expect("a segment of format 99 is refused").to_string();
        assert!(error.contains("format version 99"), "{error}");
        assert!(error.contains("versions 1, 2"), "{error}");
        assert!(error.contains(&*segment.to_string_lossy()), "{error}");
        assert_eq!(std::fs::read(&segment).unwrap(), before, "{mode:?}: the segment is untouched");
    }

    let dir = copy_of(current_version());
    let snapshot = only_file(&dir.path().join("snapshots"));
    patch_version(&snapshot, b"99");
    let error = Store::open(options(dir.path())).err().expect("a snapshot of format 99 is refused").to_string();
    assert!(error.contains("format version 99"), "{error}");
    assert!(error.contains("versions 1, 2"), "{error}");
    assert!(snapshot.exists(), "not set aside as damaged");
}

/// A folder of format 1 opened by this build and written to holds segments of both
/// formats (the old ones stay until a snapshot covers them); each is read in its own.
#[test]
fn a_format_1_folder_takes_writes_and_reopens() {
    let dir = copy_of(1);
    let more = |db: &Database| {
        db.upsert("catalog", &catalog_document(40)).unwrap();
        db.add_index("late", IndexDef::text(&["c"]).text_config(text_options_for_one())).unwrap();
        db.keyspaces().get_or_create("0").set(b"after upgrade", b"yes", SetOptions::default()).unwrap();
    };
    let store = Store::open(options(dir.path())).unwrap();
    more(&store);
    store.close().unwrap();
    let store = Store::open(options(dir.path())).unwrap();
    let expected = Database::with_clock(Arc::new(ManualClock::new(CLOCK_MS)), Limits::default());
    before_snapshot(&expected);
    after_snapshot(&expected);
    more(&expected);
    assert_eq!(dump(&store), dump(&expected));
    // Both formats were on disk: the golden folder's segment and this build's.
    let wal = dir.path().join("wal");
    let mut magics: Vec<Vec<u8>> =
        std::fs::read_dir(&wal).unwrap().map(|e| std::fs::read(e.unwrap().path()).unwrap()[..8].to_vec()).collect();
    magics.sort();
    magics.dedup();
    assert_eq!(magics, [b"HSWAL001".to_vec(), b"HSWAL002".to_vec()]);
    // A snapshot now writes everything in this build's format, and opens again.
    store.snapshot().unwrap();
    store.close().unwrap();
    let store = Store::open(options(dir.path())).unwrap();
    assert_eq!(dump(&store), dump(&expected));
}

fn text_options_for_one() -> TextConfig {
    let mut config = text_options();
    config.weights = vec![2.5];
    config
}
