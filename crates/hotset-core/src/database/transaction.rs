//! Transactions: several writes committed all together or not at all.
//!
//! Owns: `Transaction` (writes to one namespace) and `Group` (writes to several
//! namespaces, with metadata entries), and their commits, which apply the operations under
//! the write locks of what they name, roll back on the first failure, and log the whole as
//! one record, settled by the durability of the `Writes` that started them
//! (`Database::transaction` waits for it). Never: hold a lock while the operations are
//! being collected, or take several namespaces' locks out of name order.

use super::Writes;
use super::log::{self, Logged};
use crate::change::{Change, encode_group};
use crate::error::{Error, Result};
use crate::namespace::write::WriteMode;
use crate::namespace::{NamespaceData, OnConflict, Undo, prepare};
use serde_json::Value;

/// Operations from which a commit posts text-index hits in one batch (`begin_text_batch`).
const TEXT_BATCH_MIN: usize = 256;

/// Operations collected for one atomic commit.
pub struct Transaction<'a> {
    /// The database, and what the commit does with its record.
    writes: Writes<'a>,
    namespace: String,
    operations: Vec<Operation>,
}

enum Operation {
    Write(Value, WriteMode),
    /// A document as JSON text, parsed when the commit applies it: a large transaction
    /// then holds its documents in their compact form, not as trees several times their
    /// size (a client library collecting 100k documents holds 50 MB, not 130).
    WriteJson(Vec<u8>, WriteMode),
    /// An upsert of a document in its stored form (`NamespaceData::upsert_shared`).
    UpsertStored(std::sync::Arc<[u8]>),
    Delete(Value),
    /// An insert that, when the key is already stored, does what the conflict action says.
    InsertOr(Value, OnConflict),
    /// Every document stored (`Group::delete_all`).
    DeleteAll,
}

impl<'a> Transaction<'a> {
    pub(super) fn new(writes: Writes<'a>, namespace: &str) -> Transaction<'a> {
        Transaction { writes, namespace: namespace.to_string(), operations: Vec::new() }
    }

    fn push(&mut self, operation: Operation) -> Result<()> {
        let limit = self.writes.db.limits.transaction_operations_max;
        if self.operations.len() >= limit {
            return Err(Error::LimitExceeded {
                what: "transaction_operations_max",
                limit: limit as u64,
                actual: self.operations.len() as u64 + 1,
            });
        }
        self.operations.push(operation);
        Ok(())
    }

    /// Adds an insert; at commit an existing primary key is `Error::DuplicateKey`. Like
    /// every adding method, fails with `Error::LimitExceeded` past
    /// `transaction_operations_max` operations.
    pub fn insert(&mut self, doc: Value) -> Result<()> {
        self.push(Operation::Write(doc, WriteMode::Insert))
    }
    /// Adds a replacement of a stored document; at commit a missing key is
    /// `Error::NotFound`.
    pub fn update(&mut self, doc: Value) -> Result<()> {
        self.push(Operation::Write(doc, WriteMode::Update))
    }
    /// Adds an insert-or-replace by primary key.
    pub fn upsert(&mut self, doc: Value) -> Result<()> {
        self.push(Operation::Write(doc, WriteMode::Upsert))
    }
    /// `insert`, `update` and `upsert` of a document given as JSON text (an object);
    /// text that does not parse fails the commit like any refused document.
    pub fn insert_json(&mut self, json: Vec<u8>) -> Result<()> {
        self.push(Operation::WriteJson(json, WriteMode::Insert))
    }
    /// `update` of a document given as JSON text.
    pub fn update_json(&mut self, json: Vec<u8>) -> Result<()> {
        self.push(Operation::WriteJson(json, WriteMode::Update))
    }
    /// `upsert` of a document given as JSON text.
    pub fn upsert_json(&mut self, json: Vec<u8>) -> Result<()> {
        self.push(Operation::WriteJson(json, WriteMode::Upsert))
    }
    /// Inserts, or when the primary key is already stored ignores the document or updates
    /// the stored one (`OnConflict`). An ignored document does not count as written.
    pub fn insert_or(&mut self, doc: Value, conflict: OnConflict) -> Result<()> {
        self.push(Operation::InsertOr(doc, conflict))
    }
    /// Deletes by key; deleting a missing key is not an error (nothing happens).
    pub fn delete(&mut self, key: Value) -> Result<()> {
        self.push(Operation::Delete(key))
    }

    /// Applies every operation under one write lock and returns how many were applied (an
    /// insert ignored on a conflict is not). On the first failure everything
    /// already applied is rolled back and that failure is returned. What was applied is
    /// logged as one record, so replay too sees all of it or none. Returns once the log
    /// has acknowledged it, unless the transaction was started by `Writes::transaction`
    /// with `Durability::Collect` (then its record is noted there).
    pub fn commit(self) -> Result<usize> {
        self.commit_naming_failure().map_err(|(_, error)| error)
    }

    /// `commit`, with the position (0-based, in the order added) of the operation that
    /// failed, when one did (not for a failure of the whole, such as a missing namespace
    /// or a log that cannot write), so a caller can say which document was refused.
    pub fn commit_naming_failure(self) -> std::result::Result<usize, (Option<usize>, Error)> {
        let operations = self.operations;
        let mut failed_at = None;
        self.writes
            .write_namespace(&self.namespace, |_, data, journal| {
                let mut undo: Vec<Undo> = Vec::with_capacity(operations.len());
                let applied = apply_all(data, &operations, &mut undo).map_err(|(position, error)| {
                    failed_at = Some(position);
                    error
                })?;
                let lsn = journal
                    .filter(|_| !undo.is_empty())
                    .map(|journal| log::docs(journal, data, undo.iter().map(Logged::from)));
                Ok((applied, lsn))
            })
            .map_err(|error| (failed_at, error))
    }
}

/// Applies `operations` to one namespace in order, noting each change in `undo`; returns
/// how many were applied (an insert ignored on a conflict is not). On the first failure,
/// everything this call applied is rolled back (and taken out of `undo`) and the failing
/// operation's position is returned with its error.
fn apply_all(
    data: &mut NamespaceData,
    operations: &[Operation],
    undo: &mut Vec<Undo>,
) -> std::result::Result<usize, (usize, Error)> {
    let before = undo.len();
    let batch = operations.len() >= TEXT_BATCH_MIN;
    if batch {
        data.begin_text_batch(operations.len());
    }
    data.begin_tree_batch(operations.len());
    let mut ignored = 0;
    // Documents given in their stored form are parsed and extracted partly on a second
    // thread while this one applies (`prepare::apply_prepared`): a live-sync copy's groups.
    let stored = operations.iter().filter(|op| matches!(op, Operation::UpsertStored(_))).count();
    let extractor = (stored >= prepare::PARALLEL_PUTS_MIN).then(|| data.extractor());
    let prepare = |operation: &Operation| match (operation, &extractor) {
        (Operation::UpsertStored(stored), Some(extractor)) => Some(extractor.prepare_shared(stored.clone())),
        _ => None,
    };
    let mut position = 0;
    let applied = prepare::apply_prepared(operations, prepare, |operation, prepared| {
        let applied = match operation {
            Operation::Write(doc, mode) => data.write(doc, *mode).map(Some),
            Operation::WriteJson(json, mode) => {
                crate::doc::parse_object(json).and_then(|doc| data.write(&doc, *mode)).map(Some)
            }
            Operation::UpsertStored(stored) => data.upsert_shared(stored.clone(), prepared.flatten()).map(Some),
            Operation::Delete(key) => data.delete_key(key),
            Operation::InsertOr(doc, conflict) => data.insert_or(doc, conflict).inspect(|undo| {
                ignored += usize::from(undo.is_none());
            }),
            Operation::DeleteAll => {
                data.delete_all(undo);
                Ok(None)
            }
        };
        match applied {
            Ok(record) => {
                undo.extend(record);
                position += 1;
                Ok(())
            }
            Err(error) => Err((position, error)),
        }
    });
    if batch {
        data.end_text_batch();
    }
    if let Err(failure) = applied {
        data.rollback(undo.split_off(before));
        data.end_tree_batch();
        return Err(failure);
    }
    data.end_tree_batch();
    Ok(operations.len() - ignored)
}

/// Writes to several namespaces and metadata entries committed together: all of them or
/// none, under the write locks of every namespace named (taken in name order, the
/// database's lock order), logged as one record (a `Change::Group`), so readers that hold
/// those namespaces' read locks together (a join, a read of several namespaces) and
/// replay alike see all of it or none. Made by `Writes::group`.
pub struct Group<'a> {
    writes: Writes<'a>,
    /// Each namespace's operations, in the order the namespace was first named.
    parts: Vec<(String, Vec<Operation>)>,
    /// For each part, the place of each of its operations among all of the group's (in
    /// the order added), so a failure names it as the caller counted.
    added_at: Vec<Vec<usize>>,
    meta: Vec<(String, Option<Vec<u8>>)>,
    operations: usize,
}

/// Why a group's commit failed, and where.
#[derive(Debug)]
pub struct GroupFailure {
    /// The namespace and the position of the operation that failed among that
    /// namespace's operations (0-based, in the order added), when one did (not for a
    /// missing namespace or a log that cannot write).
    pub at: Option<(String, usize)>,
    /// The same operation's place among all of the group's operations (0-based, in the
    /// order added), when one failed.
    pub operation: Option<usize>,
    /// The failure.
    pub error: Error,
}

impl GroupFailure {
    fn of_whole(error: impl Into<Error>) -> Box<GroupFailure> {
        Box::new(GroupFailure { at: None, operation: None, error: error.into() })
    }
}

impl<'a> Group<'a> {
    pub(super) fn new(writes: Writes<'a>) -> Group<'a> {
        Group { writes, parts: Vec::new(), added_at: Vec::new(), meta: Vec::new(), operations: 0 }
    }

    fn push(&mut self, namespace: &str, operation: Operation) -> Result<()> {
        let limit = self.writes.db.limits.transaction_operations_max;
        if self.operations >= limit {
            return Err(Error::LimitExceeded {
                what: "transaction_operations_max",
                limit: limit as u64,
                actual: self.operations as u64 + 1,
            });
        }
        let place = self.operations;
        self.operations += 1;
        match self.parts.iter().position(|(name, _)| name == namespace) {
            Some(part) => {
                self.parts[part].1.push(operation);
                self.added_at[part].push(place);
            }
            None => {
                self.parts.push((namespace.to_string(), vec![operation]));
                self.added_at.push(vec![place]);
            }
        }
        Ok(())
    }

    /// Adds a write of a document in `mode` to `namespace`.
    pub fn write(&mut self, namespace: &str, doc: Value, mode: WriteMode) -> Result<()> {
        self.push(namespace, Operation::Write(doc, mode))
    }
    /// Adds a write of a document given as JSON text (an object).
    pub fn write_json(&mut self, namespace: &str, json: Vec<u8>, mode: WriteMode) -> Result<()> {
        self.push(namespace, Operation::WriteJson(json, mode))
    }
    /// Adds an upsert of a document in its stored form: minified JSON of one object, as
    /// `doc::encode` writes it (checked as JSON, an object and within the size limit, then
    /// kept as given: not parsed whole nor encoded again, which is what makes a bulk copy
    /// cheap).
    pub fn upsert_stored(&mut self, namespace: &str, stored: std::sync::Arc<[u8]>) -> Result<()> {
        self.push(namespace, Operation::UpsertStored(stored))
    }
    /// Adds a delete by key (a missing key is no error).
    pub fn delete(&mut self, namespace: &str, key: Value) -> Result<()> {
        self.push(namespace, Operation::Delete(key))
    }
    /// Adds the deletion of every document of `namespace` stored at that point (each
    /// logged by key, so it can be part of an all-or-nothing commit).
    pub fn delete_all(&mut self, namespace: &str) -> Result<()> {
        self.push(namespace, Operation::DeleteAll)
    }
    /// Sets (`Some`) or removes (`None`) a metadata entry in the same commit.
    pub fn set_meta(&mut self, key: &str, value: Option<Vec<u8>>) {
        self.meta.retain(|(have, _)| have != key);
        self.meta.push((key.to_string(), value));
    }

    /// Applies every operation and metadata change, all or nothing, and returns how many
    /// operations were applied. On a failure nothing stays applied; the failure names the
    /// namespace and operation that failed when one did (not for a missing namespace or a
    /// log that cannot write). Settled by the durability of the `Writes` that made it.
    pub fn commit(self) -> std::result::Result<usize, Box<GroupFailure>> {
        let Group { writes, parts, added_at, meta, .. } = self;
        let db = writes.db;
        for (namespace, _) in &parts {
            writes.check_owner(namespace).map_err(GroupFailure::of_whole)?;
        }
        db.journal.writable().map_err(GroupFailure::of_whole)?;
        // Every namespace first, then their write locks in name order.
        let mut order: Vec<usize> = (0..parts.len()).collect();
        order.sort_by(|&a, &b| parts[a].0.cmp(&parts[b].0));
        let namespaces = order
            .iter()
            .map(|&i| db.namespace(&parts[i].0).map(|namespace| (i, namespace)))
            .collect::<Result<Vec<_>>>()
            .map_err(GroupFailure::of_whole)?;
        let mut guards: Vec<_> =
            namespaces.iter().map(|(i, namespace)| (*i, namespace, namespace.data.write())).collect();
        if let Some((_, namespace, _)) = guards.iter().find(|(_, namespace, _)| namespace.is_dropped()) {
            return Err(GroupFailure::of_whole(Error::UnknownNamespace { namespace: namespace.name.clone() }));
        }
        // Applied in the order the namespaces were named, each one's undo kept apart.
        guards.sort_by_key(|(i, _, _)| *i);
        let mut undos: Vec<Vec<Undo>> = Vec::with_capacity(guards.len());
        let mut applied = 0;
        let mut failure = None;
        for (i, _, data) in guards.iter_mut() {
            let mut undo = Vec::new();
            match apply_all(data, &parts[*i].1, &mut undo) {
                Ok(count) => {
                    applied += count;
                    undos.push(undo);
                }
                Err((position, error)) => {
                    let at = Some((parts[*i].0.clone(), position));
                    failure = Some(Box::new(GroupFailure { at, operation: Some(added_at[*i][position]), error }));
                    break;
                }
            }
        }
        if let Some(failure) = failure {
            for ((_, _, data), undo) in guards.iter_mut().zip(undos).rev() {
                data.rollback(undo);
            }
            return Err(failure);
        }
        let lsn = db.journal().map(|journal| {
            let mut encoded: Vec<Vec<u8>> = Vec::new();
            for ((_, _, data), undo) in guards.iter().zip(&undos).filter(|(_, undo)| !undo.is_empty()) {
                encoded.push(log::docs_payload(data, undo.iter().map(Logged::from)));
            }
            for (key, value) in &meta {
                let mut bytes = Vec::new();
                Change::Meta { key, value: value.as_deref() }.encode(&mut bytes);
                encoded.push(bytes);
            }
            journal.append(&mut |out| encode_group(out, encoded.iter().map(Vec::as_slice)))
        });
        {
            let mut entries = db.meta.write();
            for (key, value) in meta {
                match value {
                    Some(value) => entries.insert(key, value),
                    None => entries.remove(&key),
                };
            }
        }
        for (_, _, data) in guards {
            parking_lot::RwLockWriteGuard::unlock_fair(data);
        }
        writes.settle(lsn).map_err(GroupFailure::of_whole)?;
        Ok(applied)
    }
}
