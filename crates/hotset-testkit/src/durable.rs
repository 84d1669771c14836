//! Support for durability tests: a journal kept in memory, a journal that acknowledges
//! only what a test releases (to tell a write that waited for the log from one that did
//! not), and a comparable dump of a whole database (namespaces with their schemas and
//! documents, keyspaces with every key's value and deadline), so a recovered database can
//! be checked against the one that wrote the log.

use hotset_core::journal::JournalError;
use hotset_core::kv::{KvOps, ZRange, ZRangeBy};
use hotset_core::{Database, Journal, Query};
use std::collections::BTreeMap;
use std::sync::{Condvar, Mutex};
use std::time::Duration;

/// A journal that keeps every record in memory, in lsn order, and acknowledges at once.
#[derive(Default)]
pub struct MemJournal {
    records: Mutex<Vec<(u64, Vec<u8>)>>,
}

impl MemJournal {
    /// The lsn the next record will get (what a snapshot records as its start).
    pub fn next_lsn(&self) -> u64 {
        self.records.lock().expect("not poisoned").len() as u64 + 1
    }

    /// Records with lsn >= `from`, in order.
    pub fn records_from(&self, from: u64) -> Vec<(u64, Vec<u8>)> {
        self.records.lock().expect("not poisoned").iter().filter(|(lsn, _)| *lsn >= from).cloned().collect()
    }
}

impl Journal for MemJournal {
    fn writable(&self) -> Result<(), JournalError> {
        Ok(())
    }

    fn append(&self, encode: &mut dyn FnMut(&mut Vec<u8>)) -> u64 {
        let mut payload = Vec::new();
        encode(&mut payload);
        let mut records = self.records.lock().expect("not poisoned");
        let lsn = records.len() as u64 + 1;
        records.push((lsn, payload));
        lsn
    }

    fn wait(&self, _lsn: u64) -> Result<(), JournalError> {
        Ok(())
    }
}

/// A journal that numbers records like a log but acknowledges none until the test
/// releases them (`release`), and records every wait it is asked for. A write that waits
/// for its record blocks in `wait` until then; one that collects its acknowledgement never
/// calls `wait` at all.
///
/// A wait not released within `GateJournal::WAIT_MAX` fails with a `JournalError` instead
/// of blocking for ever, so a write that wrongly waits fails its test rather than hanging
/// it. Nothing here sleeps: `waiters` blocks on a condition variable until a waiter
/// arrives.
#[derive(Default)]
pub struct GateJournal {
    state: Mutex<Gate>,
    changed: Condvar,
}

#[derive(Default)]
struct Gate {
    appended: u64,
    released: u64,
    waits: Vec<u64>,
}

impl GateJournal {
    /// How long a wait, or a test waiting for a waiter, is given before it fails.
    pub const WAIT_MAX: Duration = Duration::from_secs(10);

    /// The lsn of the last record appended (0 before any).
    pub fn appended(&self) -> u64 {
        self.state.lock().expect("not poisoned").appended
    }

    /// Every lsn a caller has waited for, in the order the waits began.
    pub fn waits(&self) -> Vec<u64> {
        self.state.lock().expect("not poisoned").waits.clone()
    }

    /// Acknowledges every record up to `lsn`, waking the waits it settles.
    pub fn release(&self, lsn: u64) {
        let mut gate = self.state.lock().expect("not poisoned");
        gate.released = gate.released.max(lsn);
        self.changed.notify_all();
    }

    /// Blocks until `count` waits have begun (panics after `WAIT_MAX`); returns their lsns.
    pub fn waiters(&self, count: usize) -> Vec<u64> {
        let gate = self.state.lock().expect("not poisoned");
        let (gate, timeout) = self
            .changed
            .wait_timeout_while(gate, Self::WAIT_MAX, |gate| gate.waits.len() < count)
            .expect("not poisoned");
        assert!(!timeout.timed_out(), "{count} waits expected, {} began", gate.waits.len());
        gate.waits.clone()
    }
}

impl Journal for GateJournal {
    fn writable(&self) -> Result<(), JournalError> {
        Ok(())
    }

    fn append(&self, encode: &mut dyn FnMut(&mut Vec<u8>)) -> u64 {
        encode(&mut Vec::new());
        let mut gate = self.state.lock().expect("not poisoned");
        gate.appended += 1;
        gate.appended
    }

    fn wait(&self, lsn: u64) -> Result<(), JournalError> {
        let mut gate = self.state.lock().expect("not poisoned");
        assert!(lsn <= gate.appended, "waiting for record {lsn}, never appended");
        gate.waits.push(lsn);
        self.changed.notify_all();
        let (_gate, timeout) =
            self.changed.wait_timeout_while(gate, Self::WAIT_MAX, |gate| gate.released < lsn).expect("not poisoned");
        match timeout.timed_out() {
            true => Err(JournalError { reason: format!("record {lsn} was never released") }),
            false => Ok(()),
        }
    }
}

/// Everything a database holds, in a form that compares with `==` and prints readably.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Dump {
    /// Namespace → (index definitions as JSON, documents as JSON text, sorted).
    pub namespaces: BTreeMap<String, (Vec<String>, Vec<String>)>,
    /// Keyspace → key → (TYPE, value or sorted hash pairs, absolute deadline).
    pub keyspaces: BTreeMap<String, BTreeMap<Vec<u8>, KeyDump>>,
    /// Metadata entries (live sync's sources and positions).
    pub meta: BTreeMap<String, Vec<u8>>,
}

/// One key: its type, its value (a hash as sorted `field=value` lines) and deadline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyDump {
    pub kind: &'static str,
    pub value: Vec<Vec<u8>>,
    pub expire_at_ms: i64,
}

/// Reads the whole database.
pub fn dump(db: &Database) -> Dump {
    let mut out = Dump::default();
    for name in db.namespace_names() {
        let Ok(info) = db.describe(&name) else { continue };
        let defs = info.indexes.iter().map(|d| d.to_json().to_string()).collect();
        let Ok(result) = db.query(&Query::new(&name)) else { continue };
        let mut docs: Vec<String> = result.values().iter().map(|v| v.to_string()).collect();
        docs.sort();
        out.namespaces.insert(name, (defs, docs));
    }
    for name in db.keyspaces().list() {
        let Some(keyspace) = db.keyspaces().get(&name) else { continue };
        let mut keys = BTreeMap::new();
        for key in keyspace.keys(b"*").expect("KEYS works") {
            let Ok(kind) = keyspace.key_type(&key) else { continue };
            let value = match kind {
                "string" => keyspace.get(&key).ok().flatten().into_iter().collect(),
                "hash" => {
                    let mut pairs: Vec<Vec<u8>> = keyspace
                        .hgetall(&key)
                        .unwrap_or_default()
                        .into_iter()
                        .map(|(f, v)| [f, b"=".to_vec(), v].concat())
                        .collect();
                    pairs.sort();
                    pairs
                }
                "list" => keyspace.lrange(&key, 0, -1).unwrap_or_default(),
                "set" => {
                    let mut members = keyspace.smembers(&key).unwrap_or_default();
                    members.sort();
                    members
                }
                // In order, each member with its score's exact bits.
                "zset" => {
                    let range = ZRange { by: ZRangeBy::Rank(0, -1), rev: false, limit: None };
                    let members = keyspace.zrange(&key, &range).unwrap_or_default();
                    members
                        .into_iter()
                        .map(|(m, score)| [m, b"=".to_vec(), score.to_bits().to_string().into_bytes()].concat())
                        .collect()
                }
                // Everything a stream holds, but how its entries fall into nodes (recovery
                // packs them afresh).
                "stream" => {
                    let Ok(mut full) = keyspace.xinfo_stream_full(&key, 0) else { continue };
                    full.head.nodes = 0;
                    vec![format!("{full:?}").into_bytes()]
                }
                _ => continue,
            };
            let expire_at_ms = keyspace.expire_time_ms(&key).unwrap_or(-2);
            keys.insert(key, KeyDump { kind, value, expire_at_ms });
        }
        out.keyspaces.insert(name, keys);
    }
    out.meta = db.meta_with_prefix("").into_iter().collect();
    out
}

/// Copies a database folder's log and snapshots (`wal/`, `snapshots/`) into `to`, so a test
/// can damage or reopen the copy and keep the original.
pub fn copy_folder(from: &std::path::Path, to: &std::path::Path) {
    for sub in ["wal", "snapshots"] {
        std::fs::create_dir_all(to.join(sub)).unwrap();
        for entry in std::fs::read_dir(from.join(sub)).unwrap() {
            let path = entry.unwrap().path();
            std::fs::copy(&path, to.join(sub).join(path.file_name().unwrap())).unwrap();
        }
    }
}
