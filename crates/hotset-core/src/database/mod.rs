//! The embedded API: a `Database` of namespaces (and key-value keyspaces).
//!
//! Owns: the namespace registry, the locking discipline (a query takes read locks on its
//! namespace and its joins' namespaces, always in name order, so joins never deadlock
//! with writers), transactions, checking limits at the boundary, and handing every
//! committed write to the journal (see `journal` for the protocol; every write path is in
//! `writes`, with the `Durability` its caller chose: `Database`'s own write methods wait).
//! Never: do I/O, or hold a lock across anything but the in-memory work of one call and
//! queueing its record; waiting for durability happens after the lock is released.

mod log;
mod replay;
mod search;
mod snapshot;
mod transaction;
mod writes;

pub use replay::Replay;
pub use search::{Search, SearchResult, SearchTarget};
pub use snapshot::SnapshotCounts;
pub use transaction::{Group, GroupFailure, Transaction};
pub use writes::Writes;

use crate::clock::{Clock, SystemClock};
use crate::error::{Error, Result};
use crate::journal::{Durability, Journal, JournalSlot};
use crate::kv::{KeyspaceConfig, Keyspaces};
use crate::limits::Limits;
use crate::namespace::{Namespace, NamespaceData, NamespaceInfo};
use crate::query::{Choice, PlanChoice, Query, QueryResult, SetField, WalkChoice, exec};
use crate::schema::IndexDef;
use parking_lot::{RwLock, RwLockReadGuard};
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

/// An in-memory database: namespaces of JSON documents. `Send + Sync`; share it with
/// an `Arc` between threads.
pub struct Database {
    namespaces: RwLock<BTreeMap<String, Arc<Namespace>>>,
    /// Key expiry's wall clock and query time limits' monotonic one.
    clock: Arc<dyn Clock>,
    keyspaces: Keyspaces,
    limits: Limits,
    /// The planner's forced choices (tests), packed: two bits per tool.
    plan_choice: AtomicU8,
    journal: JournalSlot,
    /// Set between `begin_bulk_load` and `finish_bulk_load` (recovery).
    bulk_loading: AtomicBool,
    /// Metadata entries (`Change::Meta`): small named values kept, logged and
    /// snapshotted with the data, written only by a `Group` commit.
    meta: RwLock<BTreeMap<String, Vec<u8>>>,
    /// Namespaces kept by a live-sync source (namespace -> source): read-only to every
    /// writer but that source's (`Writes::as_owner`). Not persisted: the sync sets it up
    /// again from its declarations at start.
    owners: RwLock<std::collections::HashMap<String, String>>,
}

impl Default for Database {
    fn default() -> Database {
        Database::with_clock(Arc::new(SystemClock), Limits::default())
    }
}

impl std::fmt::Debug for Database {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Database")
            .field("namespaces", &self.namespace_names())
            .field("keyspaces", &self.keyspaces.list())
            .finish()
    }
}

/// A stored document.
pub type Document = Arc<[u8]>;

impl Database {
    /// An empty database on the system clock with the default limits.
    pub fn new() -> Database {
        Database::default()
    }

    /// An empty database on the system clock with the given limits.
    pub fn with_limits(limits: Limits) -> Database {
        Database::with_clock(Arc::new(SystemClock), limits)
    }

    /// A database that reads time from `clock`: key expiry its wall-clock time, query
    /// time limits its monotonic time (tests use a manual clock).
    pub fn with_clock(clock: Arc<dyn Clock>, limits: Limits) -> Database {
        let journal = JournalSlot::default();
        Database {
            namespaces: RwLock::new(BTreeMap::new()),
            keyspaces: Keyspaces::with_journal(clock.clone(), KeyspaceConfig::default(), journal.clone()),
            clock,
            limits,
            plan_choice: AtomicU8::new(0),
            journal,
            bulk_loading: AtomicBool::new(false),
            meta: RwLock::new(BTreeMap::new()),
            owners: RwLock::new(std::collections::HashMap::new()),
        }
    }

    /// Starts a bulk load (what recovery does before applying snapshot blocks and log
    /// records): ordered secondary indexes are not kept up to date row by row but built
    /// once, sorted, by `finish_bulk_load`. Queries must not run until then.
    pub fn begin_bulk_load(&self) {
        self.bulk_loading.store(true, Ordering::Release);
        for namespace in self.namespaces.read().values() {
            namespace.data.write().begin_bulk_load();
        }
    }

    /// Ends a bulk load: builds the deferred indexes of every namespace.
    pub fn finish_bulk_load(&self) {
        self.bulk_loading.store(false, Ordering::Release);
        for namespace in self.namespaces.read().values() {
            namespace.data.write().finish_bulk_load();
        }
    }

    /// Starts a load of many rows into a namespace that stays open to readers (live sync's
    /// copy of a table; `NamespaceData::begin_tree_load`): its ordered secondary indexes
    /// are built once by `finish_tree_load` instead of taking every write, and meanwhile
    /// queries answer their conditions from columns. Not logged: the indexes hold the same
    /// rows either way.
    pub fn begin_tree_load(&self, name: &str) -> Result<()> {
        self.namespace(name)?.data.write().begin_tree_load();
        Ok(())
    }

    /// Ends `begin_tree_load`: builds the namespace's deferred indexes (a no-op when none
    /// wait, or the namespace is gone).
    pub fn finish_tree_load(&self, name: &str) {
        if let Ok(namespace) = self.namespace(name) {
            namespace.data.write().finish_tree_load();
        }
    }

    /// Checks every namespace's indexes against its documents (`NamespaceData::verify_indexes`).
    pub fn verify_indexes(&self) -> std::result::Result<(), String> {
        let namespaces: Vec<Arc<Namespace>> = self.namespaces.read().values().cloned().collect();
        namespaces.iter().try_for_each(|namespace| namespace.data.read().verify_indexes())
    }

    /// Attaches the write-ahead log: from now on every committed write is logged and
    /// acknowledged by it. A database takes one journal for its life (attach it after
    /// recovery has replayed the old one); returns false if one was already attached.
    pub fn attach_journal(&self, journal: Arc<dyn Journal>) -> bool {
        self.journal.attach(journal)
    }

    fn journal(&self) -> Option<&dyn Journal> {
        self.journal.get().map(|journal| &**journal)
    }

    /// This database, its writes settling their log record by `durability`: `Wait` is
    /// what `Database`'s own write methods do; `Collect(&acks)` notes each write's record
    /// into `acks` and returns before the log has acknowledged it, for a caller that waits
    /// once for many writes (`Acks::wait`) before answering any of them.
    pub fn writes<'a>(&'a self, durability: Durability<'a>) -> Writes<'a> {
        Writes::new(self, durability)
    }

    fn waiting(&self) -> Writes<'_> {
        self.writes(Durability::Wait)
    }

    /// Sets when queries page by walking a tree index (cost-based by default; tests force
    /// each way to check both give the same answers).
    pub fn set_walk_choice(&self, choice: WalkChoice) {
        self.set_plan_choice(PlanChoice { walk: choice, ..self.plan_choice() });
    }

    /// Sets how the planner chooses among its tools (by cost by default; tests force each
    /// one on and off to check that every plan gives the same answers).
    pub fn set_plan_choice(&self, choice: PlanChoice) {
        let code = |choice: Choice| match choice {
            Choice::Cost => 0u8,
            Choice::Always => 1,
            Choice::Never => 2,
        };
        self.plan_choice.store(code(choice.walk) | code(choice.skip) << 2, Ordering::Relaxed);
    }

    fn plan_choice(&self) -> PlanChoice {
        let packed = self.plan_choice.load(Ordering::Relaxed);
        let choice = |code: u8| match code & 3 {
            1 => Choice::Always,
            2 => Choice::Never,
            _ => Choice::Cost,
        };
        PlanChoice { walk: choice(packed), skip: choice(packed >> 2) }
    }

    /// The key-value keyspaces (Redis-style strings, counters and hashes with expiry).
    pub fn keyspaces(&self) -> &Keyspaces {
        &self.keyspaces
    }

    /// The clock key expiry, `ttl` indexes, query time limits and maintenance read.
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    /// The limits the database enforces.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    fn check_name(&self, name: &str) -> Result<()> {
        let bad = |reason| Err(Error::InvalidName { name: name.chars().take(64).collect(), reason });
        if name.is_empty() {
            return bad("names cannot be empty");
        }
        if name.len() > self.limits.name_bytes_max {
            return bad("the name is too long");
        }
        if !name.chars().all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | '+')) {
            return bad("names use letters, digits, '_', '-', '.' and '+'");
        }
        Ok(())
    }

    /// Creates a namespace with its index definitions (exactly one `pk`).
    pub fn create_namespace(&self, name: &str, indexes: Vec<IndexDef>) -> Result<()> {
        self.waiting().create_namespace(name, indexes)
    }

    /// Opens a namespace, creating it when missing; an existing one keeps its indexes
    /// and gains any of `indexes` it lacks.
    pub fn open_namespace(&self, name: &str, indexes: Vec<IndexDef>) -> Result<()> {
        self.waiting().open_namespace(name, indexes)
    }

    /// The names of every namespace, sorted.
    pub fn namespace_names(&self) -> Vec<String> {
        self.namespaces.read().keys().cloned().collect()
    }

    fn namespace(&self, name: &str) -> Result<Arc<Namespace>> {
        self.namespaces.read().get(name).cloned().ok_or_else(|| Error::UnknownNamespace { namespace: name.to_string() })
    }

    /// A namespace's index definitions and document count; `Error::UnknownNamespace` when
    /// there is none of that name.
    pub fn describe(&self, name: &str) -> Result<NamespaceInfo> {
        Ok(self.namespace(name)?.data.read().info())
    }

    /// Removes a namespace with its documents and indexes. Refused (`Error::Storage`)
    /// when the log does not take writes.
    pub fn drop_namespace(&self, name: &str) -> Result<()> {
        self.waiting().drop_namespace(name)
    }

    /// Removes every document of a namespace, keeping its indexes.
    pub fn truncate(&self, name: &str) -> Result<()> {
        self.waiting().truncate(name)
    }

    /// Adds an index to namespace `name` and builds it over the documents already there.
    /// A document that does not fit the new index (`Error::WrongType`) leaves the
    /// namespace unchanged; a primary key index cannot be added after creation.
    pub fn add_index(&self, name: &str, def: IndexDef) -> Result<()> {
        self.waiting().add_index(name, def)
    }

    /// Drops the index `index` of namespace `name`; the primary key index cannot be
    /// dropped.
    pub fn drop_index(&self, name: &str, index: &str) -> Result<()> {
        self.waiting().drop_index(name, index)
    }

    /// Inserts a new document; an existing primary key is `Error::DuplicateKey`.
    pub fn insert(&self, namespace: &str, doc: &Value) -> Result<()> {
        self.waiting().insert(namespace, doc)
    }

    /// Replaces an existing document; a missing key is `Error::NotFound`.
    pub fn update(&self, namespace: &str, doc: &Value) -> Result<()> {
        self.waiting().update(namespace, doc)
    }

    /// Inserts or replaces a document by its primary key.
    pub fn upsert(&self, namespace: &str, doc: &Value) -> Result<()> {
        self.waiting().upsert(namespace, doc)
    }

    /// Upserts a document given as JSON text.
    pub fn upsert_json(&self, namespace: &str, json: &[u8]) -> Result<()> {
        self.waiting().upsert_json(namespace, json)
    }

    /// Deletes by primary key (a JSON scalar, or an array for a composite key); returns
    /// whether a document was deleted.
    pub fn delete(&self, namespace: &str, key: &Value) -> Result<bool> {
        self.waiting().delete(namespace, key)
    }

    /// The document with primary key `key`, if any.
    pub fn get(&self, namespace: &str, key: &Value) -> Result<Option<Document>> {
        let namespace = self.namespace(namespace)?;
        let data = namespace.data.read();
        let key = data.key_from_json(key)?;
        Ok(data.row_of(&key).and_then(|row| data.doc(row).cloned()))
    }

    /// Walks a namespace's documents in storage order, `count` at a time, like Redis SCAN:
    /// start with cursor 0 and pass back the cursor returned until it is 0 again. Every
    /// document present for the whole walk is returned exactly once (updates keep a
    /// document's place); one inserted or deleted meanwhile may or may not be. Adding or
    /// dropping an index, or truncating, renumbers the rows: a walk across one of those may
    /// miss or repeat documents. Each call holds the namespace's read lock only while it
    /// copies out (cheap handles to) its documents.
    pub fn scan(&self, namespace: &str, cursor: u64, count: usize) -> Result<(u64, Vec<Document>)> {
        let namespace = self.namespace(namespace)?;
        let data = namespace.data.read();
        let end = data.row_capacity() as u64;
        let mut row = cursor.min(end);
        let mut docs = Vec::with_capacity(count.min(4096));
        while row < end && docs.len() < count.max(1) {
            if let Some(doc) = data.doc(row as u32) {
                docs.push(doc.clone());
            }
            row += 1;
        }
        Ok((if row >= end { 0 } else { row }, docs))
    }

    /// Starts a transaction on one namespace: its operations apply all together or not
    /// at all, and readers see either none or all of them. Its commit returns once the log
    /// has acknowledged it (`Writes::transaction` for one that collects instead).
    pub fn transaction(&self, namespace: &str) -> Result<Transaction<'_>> {
        self.waiting().transaction(namespace)
    }

    /// Starts writes to several namespaces and metadata entries that commit all together
    /// or not at all, in one log record (see `Group`).
    pub fn group(&self) -> Group<'_> {
        self.waiting().group()
    }

    /// Makes `namespace` read-only to every writer but `owner`'s (`Writes::as_owner`), or
    /// (`None`) writable by all again. The namespace need not exist yet.
    pub fn set_owner(&self, namespace: &str, owner: Option<&str>) {
        let mut owners = self.owners.write();
        match owner {
            Some(owner) => owners.insert(namespace.to_string(), owner.to_string()),
            None => owners.remove(namespace),
        };
    }

    /// The live-sync source that keeps `namespace`, if one does.
    pub fn owner(&self, namespace: &str) -> Option<String> {
        self.owners.read().get(namespace).cloned()
    }

    /// The metadata entry named `key`.
    pub fn meta(&self, key: &str) -> Option<Vec<u8>> {
        self.meta.read().get(key).cloned()
    }

    /// Every metadata entry whose name starts with `prefix`, in name order.
    pub fn meta_with_prefix(&self, prefix: &str) -> Vec<(String, Vec<u8>)> {
        let entries = self.meta.read();
        entries
            .range(prefix.to_string()..)
            .take_while(|(key, _)| key.starts_with(prefix))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }

    /// Runs a query.
    pub fn query(&self, query: &Query) -> Result<QueryResult> {
        if query.joins.is_empty() {
            let namespace = self.namespace(&query.namespace)?;
            let data = namespace.data.read();
            return exec::run(&data, query, &[], self.plan_choice(), &*self.clock);
        }
        let mut names: Vec<&str> = vec![query.namespace.as_str()];
        names.extend(query.joins.iter().map(|j| j.query.namespace.as_str()));
        names.sort_unstable();
        names.dedup();
        let namespaces = names.iter().map(|n| self.namespace(n)).collect::<Result<Vec<_>>>()?;
        // Read locks in name order: a writer holds one namespace at a time, so ordered
        // readers cannot form a cycle with writers.
        let guards: Vec<RwLockReadGuard<'_, NamespaceData>> = namespaces.iter().map(|n| n.data.read()).collect();
        let by_name: Vec<(&str, &NamespaceData)> = names.iter().copied().zip(guards.iter().map(|g| &**g)).collect();
        let main = by_name.iter().find(|(n, _)| *n == query.namespace).expect("the main namespace is locked").1;
        exec::run(main, query, &by_name, self.plan_choice(), &*self.clock)
    }

    /// Sets fields of every document the query matches, atomically; returns how many.
    pub fn update_query(&self, query: &Query, sets: &[SetField]) -> Result<usize> {
        self.waiting().update_query(query, sets)
    }

    /// Deletes every document the query matches, atomically; returns how many.
    pub fn delete_query(&self, query: &Query) -> Result<usize> {
        self.waiting().delete_query(query)
    }

    /// Deletes the documents a TTL index says are due: its field (a Unix time in seconds)
    /// plus its `expire_after` is at or before `now_secs`. At most `limit` documents per
    /// index per call, so each call holds a namespace's write lock only briefly; a caller
    /// that gets `limit` back for an index calls again. Returns how many went. The deletes
    /// are logged like any other, so a restart does not bring them back.
    pub fn expire_documents(&self, now_secs: u64, limit: usize) -> Result<usize> {
        let due: Vec<(String, String, i64)> = self
            .namespaces
            .read()
            .iter()
            .flat_map(|(name, namespace)| {
                let defs = namespace.data.read().index_defs();
                defs.into_iter().filter_map(move |def| {
                    let cutoff = now_secs.saturating_sub(def.expire_after?);
                    Some((name.clone(), def.fields[0].clone(), i64::try_from(cutoff).unwrap_or(i64::MAX)))
                })
            })
            .collect();
        let mut expired = 0;
        for (namespace, field, cutoff) in due {
            let query = Query::new(&namespace).where_(&field, crate::query::Op::Le, cutoff).limit(limit);
            match self.delete_query(&query) {
                Ok(count) => expired += count,
                // Dropped since the list was made: nothing left to expire there.
                Err(Error::UnknownNamespace { .. }) => {}
                Err(error) => return Err(error),
            }
        }
        Ok(expired)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    fn assert_send_sync<T: Send + Sync>() {}

    #[test]
    fn database_is_send_and_sync() {
        assert_send_sync::<Database>();
    }
}
