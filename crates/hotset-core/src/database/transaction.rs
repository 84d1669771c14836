//! Transactions: several writes to one namespace committed all together or not at all.
//!
//! Owns: `Transaction` (the collected operations) and its commit, which applies them
//! under one write lock, rolls back on the first failure, and logs the whole batch as one
//! record, settled by the durability of the `Writes` that started it (`Database::transaction`
//! waits for it). Never: hold the lock while the operations are being collected.

use super::Writes;
use super::log::{self, Logged};
use crate::error::{Error, Result};
use crate::namespace::write::WriteMode;
use crate::namespace::{OnConflict, Undo};
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
    Delete(Value),
    /// An insert that, when the key is already stored, does what the conflict action says.
    InsertOr(Value, OnConflict),
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
                let batch = operations.len() >= TEXT_BATCH_MIN;
                if batch {
                    data.begin_text_batch(operations.len());
                }
                data.begin_tree_batch(operations.len());
                let mut failure = None;
                let mut ignored = 0;
                for (position, operation) in operations.iter().enumerate() {
                    let applied = match operation {
                        Operation::Write(doc, mode) => data.write(doc, *mode).map(Some),
                        Operation::WriteJson(json, mode) => {
                            crate::doc::parse_object(json).and_then(|doc| data.write(&doc, *mode)).map(Some)
                        }
                        Operation::Delete(key) => data.delete_key(key),
                        Operation::InsertOr(doc, conflict) => data.insert_or(doc, conflict).inspect(|undo| {
                            ignored += usize::from(undo.is_none());
                        }),
                    };
                    match applied {
                        Ok(record) => undo.extend(record),
                        Err(error) => {
                            failure = Some((position, error));
                            break;
                        }
                    }
                }
                if batch {
                    data.end_text_batch();
                }
                if let Some((position, error)) = failure {
                    data.rollback(undo);
                    data.end_tree_batch();
                    failed_at = Some(position);
                    return Err(error);
                }
                data.end_tree_batch();
                let lsn = journal
                    .filter(|_| !undo.is_empty())
                    .map(|journal| log::docs(journal, data, undo.iter().map(Logged::from)));
                Ok((operations.len() - ignored, lsn))
            })
            .map_err(|error| (failed_at, error))
    }
}
