//! The child process of the crash tests (`tests/crash.rs`, `scripts/crash-soak`): it
//! opens a store with fsync `always` or `periodic` and writes until it is killed, printing
//! one line per acknowledged write. Not a tool for users.
//!
//! Usage: `hotset-crash-child DIR SEED always|periodic [pause-in-snapshot]`
//!
//! Each of `WORKERS` threads owns a slice of the data and runs numbered steps: step `n` of
//! worker `w` is one transaction (the worker's head document gets `seq = n`, two item
//! documents are written and one deleted, see `step_docs`), then INCR of the worker's
//! counter and two SETs with deadlines. Output lines, each printed only after the write
//! was acknowledged: `T w n` (transaction), `C w v` (counter value). With
//! `pause-in-snapshot` it writes a little, starts a snapshot, prints `P` once the snapshot
//! file is partly written, and blocks there until killed.

mod model;

use hotset_core::kv::{KvOps, SetExpiry, SetOptions};
use hotset_core::{FieldType, IndexDef};
use hotset_storage::{FsyncPolicy, SnapshotHooks, Store, StoreOptions};
use serde_json::json;
use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use model::WORKERS;

fn say(out: &Mutex<std::io::Stdout>, line: &str) {
    let mut out = out.lock().expect("stdout lock");
    // The parent reads lines as they come; a line only counts once it is flushed.
    writeln!(out, "{line}").and_then(|()| out.flush()).expect("the parent reads our output");
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let dir = args.get(1).expect("usage: hotset-crash-child DIR SEED always|periodic [pause-in-snapshot]");
    let seed: u64 = args.get(2).and_then(|s| s.parse().ok()).expect("SEED is a number");
    let fsync = match args.get(3).map(String::as_str) {
        Some("always") => FsyncPolicy::Always,
        Some("periodic") => FsyncPolicy::default(),
        other => panic!("the fsync policy is always or periodic, not {other:?}"),
    };
    let pause = args.get(4).is_some_and(|a| a == "pause-in-snapshot");
    let out = Arc::new(Mutex::new(std::io::stdout()));
    let mut options = StoreOptions::new(dir);
    options.fsync = fsync;
    options.segment_bytes = 64 << 10;
    options.snapshot_log_bytes = 256 << 10;
    options.snapshot_interval = None;
    options.snapshot_check_interval = Duration::from_millis(5);
    if pause {
        let out = out.clone();
        options.hooks = SnapshotHooks {
            after_write: Some(Arc::new(move |_| {
                say(&out, "P");
                loop {
                    std::thread::park();
                }
            })),
        };
    }
    let store = Arc::new(Store::open(options).expect("the store opens"));
    store
        .open_namespace(
            "crash",
            vec![IndexDef::hash("id", FieldType::String).pk(), IndexDef::tree("seq", FieldType::Int)],
        )
        .expect("the namespace opens");
    say(&out, "R");
    if pause {
        for w in 0..WORKERS {
            step(&store, &out, w, next_step(&store, w), seed);
        }
        // The after-write hook blocks inside; the parent kills us there.
        let _ = store.snapshot();
        unreachable!("the snapshot hook never returns");
    }
    let threads: Vec<_> = (0..WORKERS)
        .map(|w| {
            let (store, out) = (store.clone(), out.clone());
            std::thread::spawn(move || {
                let mut n = next_step(&store, w);
                loop {
                    step(&store, &out, w, n, seed);
                    n += 1;
                }
            })
        })
        .collect();
    for thread in threads {
        let _ = thread.join();
    }
}

/// The step after the last one this worker's head document records.
fn next_step(store: &Store, w: u64) -> u64 {
    match store.get("crash", &json!(format!("w{w}"))).expect("get works") {
        Some(doc) => {
            let doc: serde_json::Value = serde_json::from_slice(&doc).expect("stored JSON");
            doc["seq"].as_u64().expect("seq") + 1
        }
        None => 0,
    }
}

fn step(store: &Store, out: &Mutex<std::io::Stdout>, w: u64, n: u64, seed: u64) {
    let (puts, delete) = model::step_docs(w, n, seed);
    let mut txn = store.transaction("crash").expect("the namespace exists");
    for doc in puts {
        txn.upsert(doc).expect("queued");
    }
    txn.delete(json!(delete)).expect("queued");
    txn.commit().expect("the transaction commits");
    say(out, &format!("T {w} {n}"));
    let kv = store.keyspaces().get_or_create("0");
    let value = kv.incr_by(format!("c{w}").as_bytes(), 1).expect("INCR works");
    say(out, &format!("C {w} {value}"));
    let short = SetOptions { expiry: Some(SetExpiry::Ex(1)), ..SetOptions::default() };
    kv.set(format!("e{w}").as_bytes(), n.to_string().as_bytes(), short).expect("SET works");
    let long = SetOptions { expiry: Some(SetExpiry::Ex(3_600_000)), ..SetOptions::default() };
    kv.set(format!("l{w}").as_bytes(), n.to_string().as_bytes(), long).expect("SET works");
}
