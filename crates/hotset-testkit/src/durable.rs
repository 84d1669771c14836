//! Support for durability tests: a journal kept in memory, and a comparable dump of a
//! whole database (namespaces with their schemas and documents, keyspaces with every
//! key's value and deadline), so a recovered database can be checked against the one
//! that wrote the log.

use hotset_core::kv::KvOps;
use hotset_core::{Database, Journal, Query};
use std::collections::BTreeMap;
use std::sync::Mutex;

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
    fn writable(&self) -> hotset_core::Result<()> {
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

    fn wait(&self, _lsn: u64) -> hotset_core::Result<()> {
        Ok(())
    }
}

/// Everything a database holds, in a form that compares with `==` and prints readably.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Dump {
    /// Namespace → (index definitions as JSON, documents as JSON text, sorted).
    pub namespaces: BTreeMap<String, (Vec<String>, Vec<String>)>,
    /// Keyspace → key → (TYPE, value or sorted hash pairs, absolute deadline).
    pub keyspaces: BTreeMap<String, BTreeMap<Vec<u8>, KeyDump>>,
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
                _ => continue,
            };
            let expire_at_ms = keyspace.expire_time_ms(&key).unwrap_or(-2);
            keys.insert(key, KeyDump { kind, value, expire_at_ms });
        }
        out.keyspaces.insert(name, keys);
    }
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
