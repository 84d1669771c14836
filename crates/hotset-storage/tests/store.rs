//! A database on a folder, end to end: what a restart keeps, and what each kind of damage
//! to the files does (torn tail, flipped byte in the log and in a snapshot, missing
//! segment, full disk, a second process).

use hotset_core::clock::ManualClock;
use hotset_core::kv::{KvOps, SetExpiry, SetOptions};
use hotset_core::{Error, FieldType, IndexDef, Query, WriteMode};
use hotset_storage::frame::{FrameRead, read_frame};
use hotset_storage::wal::segment::{SEGMENT_HEADER_BYTES, parse_segment_name};
use hotset_storage::{FaultyDisk, FsyncPolicy, RecoveryMode, Store, StoreOptions};
use hotset_testkit::block_on;
use hotset_testkit::durable::{copy_folder, dump};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn options(dir: &Path) -> StoreOptions {
    let mut options = StoreOptions::new(dir);
    options.fsync = FsyncPolicy::Always;
    options.snapshot_interval = None;
    options
}

fn schema() -> Vec<IndexDef> {
    vec![IndexDef::hash("id", FieldType::Int).pk(), IndexDef::tree("year", FieldType::Int)]
}

fn fill(store: &Store, ids: std::ops::Range<i64>) {
    for id in ids {
        store.upsert("items", &json!({"id": id, "year": 2000 + id % 50, "name": format!("item {id}")})).unwrap();
    }
}

/// Opens a store on a fresh folder, writes documents `0..count` and closes it.
fn write_items(options: StoreOptions, count: i64) {
    let store = Store::open(options).unwrap();
    store.create_namespace("items", schema()).unwrap();
    fill(&store, 0..count);
    store.close().unwrap();
}

fn ids(store: &Store) -> Vec<i64> {
    store.verify_indexes().expect("indexes agree with the recovered documents");
    let mut ids: Vec<i64> =
        store.query(&Query::new("items")).unwrap().values().iter().map(|d| d["id"].as_i64().unwrap()).collect();
    ids.sort_unstable();
    ids
}

fn segments(dir: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir.join("wal"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| parse_segment_name(p).is_some())
        .collect();
    found.sort();
    found
}

/// Byte offsets of the records in a segment file.
fn record_offsets(bytes: &[u8]) -> Vec<usize> {
    let mut offsets = Vec::new();
    let mut at = SEGMENT_HEADER_BYTES;
    while let FrameRead::Frame { next, .. } = read_frame(bytes, at) {
        offsets.push(at);
        at = next;
    }
    offsets
}

/// The last segment that holds records.
fn last_segment_with_records(dir: &Path) -> PathBuf {
    segments(dir).into_iter().rev().find(|p| !record_offsets(&std::fs::read(p).unwrap()).is_empty()).unwrap()
}

#[test]
fn a_restart_keeps_namespaces_indexes_documents_and_keys() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(1_700_000_000_000));
    let open = || {
        let mut options = options(dir.path());
        options.clock = clock.clone();
        Store::open(options).unwrap()
    };
    let store = open();
    store.create_namespace("items", schema()).unwrap();
    store.create_namespace("gone", schema()).unwrap();
    fill(&store, 0..300);
    store.delete("items", &json!(7)).unwrap();
    store.add_index("items", IndexDef::hash("name", FieldType::String)).unwrap();
    store.drop_namespace("gone").unwrap();
    let kv = store.keyspaces().get_or_create("0");
    kv.set(b"plain", b"v", SetOptions::default()).unwrap();
    kv.set(b"short", b"v", SetOptions { expiry: Some(SetExpiry::Ex(100)), ..SetOptions::default() }).unwrap();
    kv.set(b"long", b"v", SetOptions { expiry: Some(SetExpiry::Ex(100_000)), ..SetOptions::default() }).unwrap();
    kv.incr_by(b"n", 41).unwrap();
    kv.hset(b"h", &[(b"f", b"1"), (b"g", b"2")]).unwrap();
    store.keyspaces().get_or_create("empty");
    let before = dump(&store);
    store.close().unwrap();

    let store = open();
    assert_eq!(dump(&store), before, "from the log alone");
    assert!(store.recovery().snapshot.is_none());
    store.snapshot().unwrap();
    fill(&store, 300..350);
    let kv = store.keyspaces().get_or_create("0");
    kv.incr_by(b"n", 1).unwrap();
    let before = dump(&store);
    drop(store);

    // The short key's deadline passes while the database is down: it stays expired.
    clock.advance(1_000);
    let store = open();
    assert!(store.recovery().snapshot.is_some(), "from the snapshot and the log after it");
    let mut expected = before;
    expected.keyspaces.get_mut("0").unwrap().remove(b"short".as_slice());
    assert_eq!(dump(&store), expected);
    let kv = store.keyspaces().get_or_create("0");
    assert_eq!(kv.get(b"short").unwrap(), None);
    assert_eq!(kv.ttl_ms(b"long").unwrap(), 99_000, "deadlines are absolute");
    assert_eq!(kv.get(b"n").unwrap(), Some(b"42".to_vec()));
}

#[test]
fn a_torn_tail_is_cut_at_every_byte_of_the_last_record() {
    let dir = tempfile::tempdir().unwrap();
    write_items(options(dir.path()), 20);
    let segment = last_segment_with_records(dir.path());
    let bytes = std::fs::read(&segment).unwrap();
    let last = *record_offsets(&bytes).last().unwrap();
    for cut in last..bytes.len() {
        let copy = tempfile::tempdir().unwrap();
        copy_folder(dir.path(), copy.path());
        let torn = copy.path().join("wal").join(segment.file_name().unwrap());
        std::fs::write(&torn, &bytes[..cut]).unwrap();
        let store = Store::open(options(copy.path())).unwrap();
        assert_eq!(ids(&store), (0..19).collect::<Vec<_>>(), "cut at {cut}");
        let torn_tail = store.recovery().torn_tail.clone();
        assert_eq!(torn_tail.is_some(), cut > last, "cut at {cut}: {torn_tail:?}");
        // The cut is made on disk, so the next start sees a clean log and writes go on.
        fill(&store, 19..20);
        drop(store);
        let store = Store::open(options(copy.path())).unwrap();
        assert!(store.recovery().torn_tail.is_none());
        assert_eq!(ids(&store), (0..20).collect::<Vec<_>>());
    }
}

/// A group (writes to several namespaces with metadata, one record) comes back whole from
/// the log, where recovery's lanes split it by namespace, and from a snapshot, which holds
/// the metadata entries.
#[test]
fn groups_and_metadata_recover_from_the_log_and_from_a_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let open = || Store::open(options(dir.path())).unwrap();
    let write = |store: &Store, ids: std::ops::Range<i64>| {
        for id in ids {
            let mut group = store.group();
            group.write("a", json!({"id": id, "year": id, "name": "a"}), WriteMode::Upsert).unwrap();
            group.write("b", json!({"id": id, "year": id, "name": "b"}), WriteMode::Upsert).unwrap();
            if id % 10 == 0 {
                group.delete("a", json!(id - 5)).unwrap();
            }
            group.set_meta("position", Some(id.to_string().into_bytes()));
            group.set_meta(&format!("entry {}", id % 3), (id % 4 != 0).then(|| vec![id as u8]));
            group.commit().unwrap();
        }
    };
    let store = open();
    store.create_namespace("a", schema()).unwrap();
    store.create_namespace("b", schema()).unwrap();
    write(&store, 0..2_000);
    let before = dump(&store);
    assert_eq!(before.meta["position"], b"1999");
    store.close().unwrap();
    let store = open();
    assert_eq!(dump(&store), before, "from the log");
    store.snapshot().unwrap();
    write(&store, 2_000..2_100);
    let before = dump(&store);
    store.close().unwrap();
    let store = open();
    assert!(store.recovery().snapshot.is_some());
    assert_eq!(dump(&store), before, "from the snapshot and the log after it");
}

/// Recovery applies each namespace and keyspace on its own thread (`lanes.rs`): after
/// interleaved writes to two namespaces and two keyspaces, thousands of them before a
/// snapshot and after it, and a torn last record, a restart gives exactly the
/// state before that record, and the next one the state after writes go on.
#[test]
fn interleaved_namespaces_and_keyspaces_recover_with_a_torn_tail() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(1_700_000_000_000));
    let open = || {
        let mut options = options(dir.path());
        options.fsync = FsyncPolicy::Never;
        options.clock = clock.clone();
        Store::open(options).unwrap()
    };
    let write = |store: &Store, ids: std::ops::Range<i64>| {
        let (k0, k1) = (store.keyspaces().get_or_create("0"), store.keyspaces().get_or_create("1"));
        for id in ids {
            let namespace = if id % 2 == 0 { "a" } else { "b" };
            store.upsert(namespace, &json!({"id": id % 3_000, "year": id, "name": format!("n{}", id % 17)})).unwrap();
            k0.set(format!("k{}", id % 2_500).as_bytes(), format!("{id}").as_bytes(), SetOptions::default()).unwrap();
            if id % 5 == 0 {
                k1.hset(format!("h{}", id % 40).as_bytes(), &[(b"f", format!("{id}").as_bytes())]).unwrap();
                store.delete(namespace, &json!((id + 1_000) % 3_000)).unwrap();
            }
        }
    };
    let store = open();
    store.create_namespace("a", schema()).unwrap();
    store.create_namespace("b", schema()).unwrap();
    write(&store, 0..3_000);
    store.snapshot().unwrap();
    write(&store, 3_000..6_000);
    let before = dump(&store);
    store.keyspaces().get_or_create("1").set(b"last", b"record", SetOptions::default()).unwrap();
    store.close().unwrap();

    let segment = last_segment_with_records(dir.path());
    let bytes = std::fs::read(&segment).unwrap();
    let last = *record_offsets(&bytes).last().unwrap();
    std::fs::write(&segment, &bytes[..(last + bytes.len()) / 2]).unwrap();
    let store = open();
    assert!(store.recovery().snapshot.is_some() && store.recovery().torn_tail.is_some());
    // 3,000 upserts and sets, 600 hash writes and deletes, the torn one not counted.
    assert_eq!(store.recovery().records, 7_200);
    store.verify_indexes().expect("indexes agree with the recovered documents");
    assert_eq!(dump(&store), before);
    write(&store, 6_000..6_100);
    let after = dump(&store);
    drop(store);
    assert_eq!(dump(&open()), after);
}

#[test]
fn a_flipped_byte_in_a_middle_record_stops_start_up_naming_file_and_offset() {
    let dir = tempfile::tempdir().unwrap();
    write_items(options(dir.path()), 20);
    let segment = last_segment_with_records(dir.path());
    let mut bytes = std::fs::read(&segment).unwrap();
    let offsets = record_offsets(&bytes);
    let middle = offsets[offsets.len() / 2];
    bytes[middle + 20] ^= 0x40;
    std::fs::write(&segment, &bytes).unwrap();

    let error = Store::open(options(dir.path())).err().expect("start-up stops").to_string();
    let name = segment.file_name().unwrap().to_str().unwrap();
    assert!(error.contains(name) && error.contains(&format!("offset {middle}")), "{error}");
    assert!(error.contains("TruncateCorrupt"), "the message names the operator option: {error}");

    let mut truncate = options(dir.path());
    truncate.recovery = RecoveryMode::TruncateCorrupt;
    let store = Store::open(truncate).unwrap();
    assert!(store.recovery().truncated_corruption.is_some());
    let kept = ids(&store);
    assert!(!kept.is_empty() && kept.len() < 20 && kept == (0..kept.len() as i64).collect::<Vec<_>>(), "{kept:?}");
}

#[test]
fn a_damaged_snapshot_falls_back_to_the_one_before_or_stops_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(options(dir.path())).unwrap();
    store.create_namespace("items", schema()).unwrap();
    fill(&store, 0..100);
    store.snapshot().unwrap();
    fill(&store, 100..200);
    let newest = store.snapshot().unwrap();
    fill(&store, 200..250);
    store.close().unwrap();
    let mut bytes = std::fs::read(&newest.path).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 0x01;
    std::fs::write(&newest.path, &bytes).unwrap();

    let store = Store::open(options(dir.path())).unwrap();
    assert_eq!(ids(&store), (0..250).collect::<Vec<_>>(), "the older snapshot and the log cover everything");
    assert_eq!(store.recovery().skipped_snapshots.len(), 1);
    assert!(!newest.path.exists() && newest.path.with_extension("snap.damaged").exists(), "set aside");
    // A fresh snapshot; then damage it with no older one to fall back on.
    let only = store.snapshot().unwrap();
    store.close().unwrap();
    for entry in std::fs::read_dir(dir.path().join("snapshots")).unwrap() {
        let path = entry.unwrap().path();
        if path != only.path {
            std::fs::remove_file(path).unwrap();
        }
    }
    let mut bytes = std::fs::read(&only.path).unwrap();
    bytes[40] ^= 0x01;
    std::fs::write(&only.path, &bytes).unwrap();
    let error = Store::open(options(dir.path())).err().expect("nothing to fall back on").to_string();
    let name = only.path.file_name().unwrap().to_str().unwrap();
    assert!(error.contains(name) && error.contains("damaged at byte"), "{error}");
}

#[test]
fn a_missing_segment_stops_start_up() {
    let dir = tempfile::tempdir().unwrap();
    let mut small = options(dir.path());
    small.segment_bytes = 2_000;
    write_items(small.clone(), 200);
    let all = segments(dir.path());
    assert!(all.len() > 4, "{} segments", all.len());
    std::fs::remove_file(&all[all.len() / 2]).unwrap();
    let error = Store::open(small).err().expect("start-up stops").to_string();
    assert!(error.contains("segment missing"), "{error}");
}

#[test]
fn a_full_disk_refuses_writes_keeps_reads_and_recovers() {
    let dir = tempfile::tempdir().unwrap();
    let disk = Arc::new(FaultyDisk::new());
    let mut faulty = options(dir.path());
    faulty.disk = disk.clone();
    faulty.retry_interval = Duration::from_millis(5);
    let store = Store::open(faulty).unwrap();
    store.create_namespace("items", schema()).unwrap();
    fill(&store, 0..50);
    let kv = store.keyspaces().get_or_create("0");
    kv.set(b"k", b"1", SetOptions::default()).unwrap();

    disk.set_full(true);
    let refused = store.upsert("items", &json!({"id": 1000, "year": 2001}));
    assert!(matches!(refused, Err(Error::Storage { .. })), "{refused:?}");
    // Whatever the first failure left behind, from now on writes are refused up front.
    let refused = store.upsert("items", &json!({"id": 1001, "year": 2001}));
    assert!(matches!(refused, Err(Error::Storage { .. })), "{refused:?}");
    let kv_refused = kv.set(b"k", b"2", SetOptions::default()).unwrap_err().to_string();
    assert!(kv_refused.starts_with("MISCONF"), "{kv_refused}");
    assert!(store.wal_stats().failed.is_some());
    assert!(store.get("items", &json!(3)).unwrap().is_some(), "reads go on");
    assert_eq!(store.query(&Query::new("items").limit(5)).unwrap().items.len(), 5);
    assert_eq!(kv.get(b"k").unwrap(), Some(b"1".to_vec()));

    disk.set_full(false);
    let deadline = Instant::now() + Duration::from_secs(20);
    while store.wal_stats().failed.is_some() {
        assert!(Instant::now() < deadline, "the log leaves its failed state once the disk has room");
        std::thread::yield_now();
    }
    fill(&store, 50..60);
    kv.set(b"k", b"3", SetOptions::default()).unwrap();
    store.close().unwrap();
    let store = Store::open(options(dir.path())).unwrap();
    let found = ids(&store);
    for id in 0..60 {
        assert!(found.contains(&id), "acknowledged document {id} is there");
    }
    assert!(!found.contains(&1001), "a write refused up front never happened");
    assert_eq!(store.keyspaces().get_or_create("0").get(b"k").unwrap(), Some(b"3".to_vec()));
}

#[test]
fn a_second_open_of_the_folder_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(options(dir.path())).unwrap();
    let error = Store::open(options(dir.path())).err().expect("refused").to_string();
    assert!(error.contains("in use by another process"), "{error}");
    drop(store);
    Store::open(options(dir.path())).unwrap();
}

#[test]
fn old_snapshots_and_the_segments_they_cover_are_removed() {
    let dir = tempfile::tempdir().unwrap();
    let mut small = options(dir.path());
    small.segment_bytes = 4_000;
    let store = Store::open(small).unwrap();
    store.create_namespace("items", schema()).unwrap();
    let mut taken = Vec::new();
    for round in 0..5 {
        fill(&store, round * 100..round * 100 + 100);
        taken.push(store.snapshot().unwrap());
    }
    let snapshots: Vec<_> =
        std::fs::read_dir(dir.path().join("snapshots")).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(snapshots.len(), 2, "the newest two are kept");
    // A segment is wholly covered once the next one starts at or below the older kept
    // snapshot's start; then at most one remaining segment starts at or below it.
    let oldest_kept = taken[3].start_lsn;
    let starts: Vec<u64> = segments(dir.path()).iter().map(|s| parse_segment_name(s).unwrap()).collect();
    assert!(starts.iter().filter(|&&first| first <= oldest_kept).count() <= 1, "{starts:?} vs {oldest_kept}");
    drop(store);
    let store = Store::open(options(dir.path())).unwrap();
    assert_eq!(ids(&store).len(), 500);
}

#[test]
fn handles_kept_after_close_read_but_cannot_write_and_the_folder_is_free() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(options(dir.path())).unwrap();
    store.create_namespace("items", schema()).unwrap();
    fill(&store, 0..3);
    let db = store.database().clone();
    let kv = store.keyspaces().get_or_create("0");
    kv.set(b"k", b"v", SetOptions::default()).unwrap();
    store.close().unwrap();
    assert!(db.get("items", &json!(1)).unwrap().is_some(), "reads go on");
    assert!(matches!(db.upsert("items", &json!({"id": 9, "year": 2000})), Err(Error::Storage { .. })));
    assert!(kv.set(b"k", b"w", SetOptions::default()).is_err());
    let reopened = Store::open(options(dir.path())).unwrap();
    assert_eq!(ids(&reopened), vec![0, 1, 2]);
    assert_eq!(reopened.keyspaces().get_or_create("0").get(b"k").unwrap(), Some(b"v".to_vec()));
}

/// Files in the snapshot folder, by name.
fn snapshot_files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir.join("snapshots"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

/// A snapshot that meets a full disk, at every stage (the log's new segment, the file's
/// first bytes, its middle, its last bytes), fails and leaves nothing that
/// recovery would load: no new `.snap`, no `.tmp`. The store goes on; once the disk has
/// room its writes go through, and a restart recovers every document and key from the
/// older snapshot and the log.
#[test]
fn a_snapshot_on_a_full_disk_fails_cleanly_and_everything_is_recovered() {
    let dir = tempfile::tempdir().unwrap();
    let disk = Arc::new(FaultyDisk::new());
    let mut faulty = options(dir.path());
    faulty.disk = disk.clone();
    faulty.retry_interval = Duration::from_millis(1);
    let store = Store::open(faulty).unwrap();
    store.create_namespace("items", schema()).unwrap();
    fill(&store, 0..200);
    let kv = store.keyspaces().get_or_create("0");
    kv.hset(b"h", &[(b"f", b"1")]).unwrap();
    let good = store.snapshot().unwrap();
    let kept = snapshot_files(dir.path());
    // Bytes a snapshot writes before it fails: none (the disk is full), then a budget
    // that the log's new segment header takes (16 bytes), plus part of the snapshot.
    let size = good.bytes;
    let budgets = [None, Some(0), Some(16), Some(16 + 4), Some(16 + size / 2), Some(16 + size - 1)];
    for (round, budget) in budgets.into_iter().enumerate() {
        let round = round as i64;
        fill(&store, 1_000 + round * 10..1_000 + round * 10 + 10);
        kv.incr_by(b"rounds", 1).unwrap();
        match budget {
            None => disk.set_full(true),
            Some(bytes) => disk.fail_after_bytes(bytes),
        }
        let error = store.snapshot().err().unwrap_or_else(|| panic!("round {round}: the snapshot cannot be written"));
        assert!(error.to_string().contains("No space"), "round {round}: {error}");
        assert!(store.snapshot_state().1.is_some(), "round {round}: the failure is kept for status");
        assert_eq!(snapshot_files(dir.path()), kept, "round {round}: no new or temporary snapshot file");
        disk.set_full(false);
        // The log may have failed too (its new segment met the full disk): it retries.
        let deadline = Instant::now() + Duration::from_secs(20);
        while store.wal_stats().failed.is_some() {
            assert!(Instant::now() < deadline, "round {round}: the log leaves its failed state");
            std::thread::yield_now();
        }
        fill(&store, 2_000 + round..2_001 + round);
    }
    let before = dump(&store);
    store.close().unwrap();
    let store = Store::open(options(dir.path())).unwrap();
    assert_eq!(dump(&store), before, "every acknowledged write is recovered");
    let recovered = store.recovery();
    assert_eq!(recovered.snapshot.as_ref().map(|s| &s.path), Some(&good.path), "the good snapshot is loaded");
    assert!(recovered.skipped_snapshots.is_empty() && recovered.removed_temporary.is_empty(), "{recovered:?}");
    assert_eq!(store.keyspaces().get_or_create("0").get(b"rounds").unwrap(), Some(b"6".to_vec()));
}

/// Appends a frame holding `payload` to the segment with the last record, as the next
/// record: valid by checksum and lsn. Returns the segment and the frame's offset.
fn append_record(dir: &Path, payload: &[u8]) -> (PathBuf, usize) {
    let segment = last_segment_with_records(dir);
    let mut bytes = std::fs::read(&segment).unwrap();
    let last = *record_offsets(&bytes).last().unwrap();
    let FrameRead::Frame { lsn, .. } = read_frame(&bytes, last) else { unreachable!("a record") };
    let offset = bytes.len();
    hotset_storage::encode_frame(&mut bytes, lsn + 1, &mut |out| out.extend_from_slice(payload));
    std::fs::write(&segment, &bytes).unwrap();
    (segment, offset)
}

/// Payloads that pass every check of the frame but do not apply: one that does not decode
/// (an unknown change kind) and one that decodes but does not fit the schema.
fn records_that_do_not_apply() -> Vec<(&'static str, Vec<u8>)> {
    use hotset_core::change::{Change, DocChange};
    let mut wrong_type = Vec::new();
    let ops = vec![DocChange::Put(br#"{"id":1,"year":"not an int"}"#)];
    Change::Docs { namespace: "items", ops }.encode(&mut wrong_type);
    vec![("unknown kind", vec![0x63, 1, 2, 3]), ("wrong type", wrong_type)]
}

/// A log record that checks out but does not apply stops start-up naming the file and
/// the record's offset, in strict mode and in `TruncateCorrupt` mode alike (it is a bug
/// or a format mismatch, not damage that cutting the log could explain), and leaves the
/// files as they were.
#[test]
fn a_log_record_that_does_not_apply_stops_start_up_naming_file_and_offset() {
    for (what, payload) in records_that_do_not_apply() {
        let dir = tempfile::tempdir().unwrap();
        write_items(options(dir.path()), 20);
        let (segment, offset) = append_record(dir.path(), &payload);
        let files_before = segments(dir.path());
        let bytes_before = std::fs::read(&segment).unwrap();
        for mode in [RecoveryMode::Strict, RecoveryMode::TruncateCorrupt] {
            let mut opening = options(dir.path());
            opening.recovery = mode;
            let error = Store::open(opening).err().unwrap_or_else(|| panic!("{what}, {mode:?}: start-up stops"));
            let text = error.to_string();
            let name = segment.file_name().unwrap().to_str().unwrap();
            assert!(text.contains(name) && text.contains(&format!("offset {offset}")), "{what}, {mode:?}: {text}");
            assert_eq!(segments(dir.path()), files_before, "{what}, {mode:?}: no segment set aside");
            assert_eq!(std::fs::read(&segment).unwrap(), bytes_before, "{what}, {mode:?}: nothing cut");
        }
        // Without the record, everything before it is there.
        std::fs::write(&segment, &bytes_before[..offset]).unwrap();
        let store = Store::open(options(dir.path())).unwrap();
        assert_eq!(ids(&store), (0..20).collect::<Vec<_>>(), "{what}");
    }
}

/// Rewrites a snapshot file with `payload` as its first change block (frame 2), the later
/// frames renumbered and the footer's count raised: every frame checks out. Returns the
/// block's offset.
fn insert_snapshot_block(path: &Path, payload: &[u8]) -> usize {
    let bytes = std::fs::read(path).unwrap();
    let mut payloads: Vec<&[u8]> = Vec::new();
    let mut at = 8;
    while let FrameRead::Frame { payload, next, .. } = read_frame(&bytes, at) {
        payloads.push(payload);
        at = next;
    }
    assert_eq!(at, bytes.len(), "a whole snapshot");
    let (meta, rest) = payloads.split_first().unwrap();
    let (footer, blocks) = rest.split_last().unwrap();
    assert_eq!(footer[0], 0xF1, "the footer is last");
    let mut out = bytes[..8].to_vec();
    hotset_storage::encode_frame(&mut out, 1, &mut |o| o.extend_from_slice(meta));
    let offset = out.len();
    hotset_storage::encode_frame(&mut out, 2, &mut |o| o.extend_from_slice(payload));
    for (i, block) in blocks.iter().enumerate() {
        hotset_storage::encode_frame(&mut out, i as u64 + 3, &mut |o| o.extend_from_slice(block));
    }
    let mut new_footer = footer[..9].to_vec();
    new_footer.extend_from_slice(&(blocks.len() as u64 + 1).to_le_bytes());
    hotset_storage::encode_frame(&mut out, blocks.len() as u64 + 3, &mut |o| o.extend_from_slice(&new_footer));
    std::fs::write(path, out).unwrap();
    offset
}

/// A snapshot block that checks out but does not apply makes the snapshot unusable: with
/// an older snapshot and the log to fall back on, start-up recovers everything from them
/// and sets the bad one aside; with nothing to fall back on, it stops naming the file and
/// the block's offset.
#[test]
fn a_snapshot_block_that_does_not_apply_falls_back_or_stops_naming_file_and_offset() {
    for (what, payload) in records_that_do_not_apply() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(options(dir.path())).unwrap();
        store.create_namespace("items", schema()).unwrap();
        fill(&store, 0..100);
        store.snapshot().unwrap();
        fill(&store, 100..200);
        let newest = store.snapshot().unwrap();
        fill(&store, 200..250);
        store.close().unwrap();
        insert_snapshot_block(&newest.path, &payload);

        let store = Store::open(options(dir.path())).unwrap();
        assert_eq!(ids(&store), (0..250).collect::<Vec<_>>(), "{what}: the older snapshot and the log");
        let skipped = &store.recovery().skipped_snapshots;
        assert!(skipped.len() == 1 && skipped[0].contains("does not apply"), "{what}: {skipped:?}");
        assert!(newest.path.with_extension("snap.damaged").exists(), "{what}: set aside");
        let only = store.snapshot().unwrap();
        store.close().unwrap();
        for name in snapshot_files(dir.path()) {
            if dir.path().join("snapshots").join(&name) != only.path {
                std::fs::remove_file(dir.path().join("snapshots").join(name)).unwrap();
            }
        }
        let offset = insert_snapshot_block(&only.path, &payload);
        let error = Store::open(options(dir.path())).err().unwrap_or_else(|| panic!("{what}: nothing to fall back on"));
        let text = error.to_string();
        let name = only.path.file_name().unwrap().to_str().unwrap();
        assert!(text.contains(name) && text.contains(&format!("byte {offset}")), "{what}: {text}");
    }
}

/// Snapshots are maintenance's: due once the database's clock says the last one is
/// `snapshot_interval` old, or at once when asked for (`BGSAVE`), never when nothing was
/// written since.
#[test]
fn maintenance_takes_snapshots_by_the_clock_and_on_request() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(1_700_000_000_000));
    let mut options = options(dir.path());
    options.clock = clock.clone();
    options.snapshot_interval = Some(Duration::from_secs(600));
    let store = Store::open(options).unwrap();
    let snapshots = || std::fs::read_dir(dir.path().join("snapshots")).unwrap().count();
    let ran = |store: &Store, job: &str| {
        store.run_maintenance().into_iter().find(|(name, _)| *name == job).map(|(_, outcome)| outcome.unwrap())
    };
    store.create_namespace("items", schema()).unwrap();
    fill(&store, 0..10);
    assert_eq!(ran(&store, "snapshot"), None, "not due before its check period");
    clock.advance(599_000);
    assert_eq!(ran(&store, "snapshot"), Some(0), "checked, and not yet old enough");
    clock.advance(1_000);
    assert_eq!(ran(&store, "snapshot"), Some(1));
    assert_eq!(snapshots(), 1);
    clock.advance(600_000);
    assert_eq!(ran(&store, "snapshot"), Some(0), "nothing written since the last one");

    fill(&store, 10..20);
    store.request_snapshot();
    // The thread may take the request first; this round then waits for it to finish.
    store.run_maintenance();
    assert_eq!(snapshots(), 2);
    assert_eq!(store.snapshot_state().0.unwrap().counts.documents, 20);
    store.close().unwrap();
}

/// Lifts the stall when dropped: a failed assertion must not leave the store's close
/// waiting on a disk that never answers (declared after the store, so dropped first).
struct Unstall(Arc<FaultyDisk>);

impl Drop for Unstall {
    fn drop(&mut self) {
        self.0.set_stalled(false);
    }
}

/// A store whose log sits on a disk that can stall, with a small queue limit.
fn stalling_store(dir: &Path, queue_wait: Duration) -> (Store, Arc<FaultyDisk>) {
    let disk = Arc::new(FaultyDisk::new());
    let mut options = options(dir);
    // Nobody waits for a record to be written: only the queue's limit can hold writers.
    options.fsync = FsyncPolicy::Never;
    options.disk = disk.clone();
    options.queue_bytes_max = QUEUE_LIMIT;
    options.queue_wait = queue_wait;
    let store = Store::open(options).unwrap();
    store.create_namespace("items", schema()).unwrap();
    store.keyspaces().get_or_create("0").set(b"k", b"v", SetOptions::default()).unwrap();
    (store, disk)
}

const QUEUE_LIMIT: u64 = 64 << 10;

/// About a kilobyte of log per write.
fn big_item(id: i64) -> serde_json::Value {
    json!({"id": id, "year": 2000, "name": "x".repeat(1_000)})
}

/// Runs `read` on another thread and says whether it finished within a deadline far
/// above its cost (a read stuck behind the stalled log never would).
fn finishes<T: Send + 'static>(read: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = done.send(read());
    });
    finished.recv_timeout(Duration::from_secs(20)).ok()
}

/// A disk that stops answering: writers fill the log's queue to its limit and then wait
/// (memory stays bounded), reads of documents and keys go on, and once the disk answers
/// again every write completes and survives a restart.
#[test]
fn a_stalled_disk_makes_writers_wait_at_the_queue_limit_while_reads_go_on() {
    let dir = tempfile::tempdir().unwrap();
    let (store, disk) = stalling_store(dir.path(), Duration::from_secs(600));
    let store = Arc::new(store);
    let _unstall = Unstall(disk.clone());
    disk.set_stalled(true);
    const WRITES: i64 = 1_000;
    let done = Arc::new(std::sync::atomic::AtomicI64::new(0));
    let writer = {
        let (store, done) = (Arc::clone(&store), Arc::clone(&done));
        std::thread::spawn(move || {
            for id in 0..WRITES {
                store.upsert("items", &big_item(id)).unwrap();
                done.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            }
        })
    };
    // The writer thread's first batch is held by the disk; then the queue fills.
    let deadline = Instant::now() + Duration::from_secs(60);
    while disk.blocked() == 0 || store.wal_stats().queued_bytes < QUEUE_LIMIT {
        assert!(Instant::now() < deadline, "the queue never filled: {:?}", store.wal_stats());
        std::thread::yield_now();
    }
    let record_max = 2 << 10;
    for _ in 0..3 {
        let reader = Arc::clone(&store);
        let found = finishes(move || reader.get("items", &json!(0)).unwrap().is_some());
        assert_eq!(found, Some(true), "a document read goes on");
        let reader = Arc::clone(&store);
        let value = finishes(move || reader.keyspaces().get_or_create("0").get(b"k").unwrap());
        assert_eq!(value, Some(Some(b"v".to_vec())), "a key read goes on");
        let queued = store.wal_stats().queued_bytes;
        assert!(queued < QUEUE_LIMIT + record_max, "the queue stays at its limit: {queued} bytes");
    }
    let written = done.load(std::sync::atomic::Ordering::SeqCst);
    assert!(written < WRITES, "the writer waits: {written} writes done");

    disk.set_stalled(false);
    writer.join().unwrap();
    assert_eq!(store.query(&Query::new("items")).unwrap().items.len(), WRITES as usize);
    let store = Arc::into_inner(store).unwrap();
    store.close().unwrap();
    let store = Store::open(options(dir.path())).unwrap();
    assert_eq!(store.query(&Query::new("items")).unwrap().items.len(), WRITES as usize, "all of them were logged");
}

/// A write that finds no room within `queue_wait` is refused with the storage error and
/// changes nothing; once the disk answers, writes go on.
#[test]
fn a_write_that_finds_no_room_in_time_gets_the_storage_error() {
    let dir = tempfile::tempdir().unwrap();
    let (store, disk) = stalling_store(dir.path(), Duration::from_millis(200));
    let _unstall = Unstall(disk.clone());
    disk.set_stalled(true);
    let mut id = 0;
    let error = loop {
        match store.upsert("items", &big_item(id)) {
            Ok(_) => id += 1,
            Err(error) => break error,
        }
        assert!(id < 10_000, "no write was ever refused");
    };
    assert!(matches!(&error, Error::Storage { reason } if reason.contains("queue")), "{error}");
    assert!(store.get("items", &json!(id)).unwrap().is_none(), "the refused write changed nothing");
    let kv = store.keyspaces().get_or_create("0");
    assert!(kv.set(b"k", b"w", SetOptions::default()).is_err(), "key writes wait and are refused too");
    assert_eq!(kv.get(b"k").unwrap(), Some(b"v".to_vec()));
    disk.set_stalled(false);
    store.upsert("items", &big_item(id)).unwrap();
    kv.set(b"k", b"w", SetOptions::default()).unwrap();
    store.close().unwrap();
    let store = Store::open(options(dir.path())).unwrap();
    assert_eq!(store.query(&Query::new("items")).unwrap().items.len(), id as usize + 1);
}

/// The read barrier: while a write's record is not yet written (the disk stalled), an
/// answer that could show the write waits for it; once the disk answers, the wait ends,
/// and with every record written nothing is pending.
#[test]
fn a_read_barrier_waits_for_the_records_before_it_and_no_longer() {
    let dir = tempfile::tempdir().unwrap();
    let disk = Arc::new(FaultyDisk::new());
    let mut options = options(dir.path());
    options.fsync = FsyncPolicy::Periodic(Duration::from_secs(1));
    options.disk = disk.clone();
    let store = Store::open(options).unwrap();
    store.create_namespace("items", schema()).unwrap();
    store.upsert("items", &json!({"id": 1, "year": 2000, "name": "a"})).unwrap();
    let barrier = store.read_barrier();
    assert!(barrier.pending().is_none(), "every record was written before the write answered");

    let _unstall = Unstall(disk.clone());
    disk.set_stalled(true);
    let acks = hotset_core::Acks::new();
    let writes = store.database().writes(hotset_core::Durability::Collect(&acks));
    writes.upsert("items", &json!({"id": 2, "year": 2001, "name": "b"})).unwrap();
    assert!(store.get("items", &json!(2)).unwrap().is_some(), "the write is visible before its record is written");
    let pending = barrier.pending().expect("an answer now must wait for the write's record");
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        block_on(pending);
        let _ = done.send(());
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    while disk.blocked() == 0 {
        assert!(Instant::now() < deadline, "nobody ever tried to write the record");
        std::thread::yield_now();
    }
    assert!(finished.try_recv().is_err(), "the barrier ended while the record could not be written");
    disk.set_stalled(false);
    finished.recv_timeout(Duration::from_secs(20)).expect("the barrier ends once the record is written");
    assert!(barrier.pending().is_none(), "nothing is pending once every record is written");
    acks.wait().unwrap();
    store.close().unwrap();
}
