//! Write paths of a namespace: every change to rows, columns and indexes.
//!
//! Owns: insert/update/upsert/delete of documents, inserts with a conflict action, replacing a row's document, index
//! add/drop on a live namespace, truncate, and `Undo` records that roll a failed batch
//! back. Never: change anything before every check of the operation has passed, so a
//! failed call leaves the namespace exactly as it was.

use super::extract::Extracted;
use super::prepare::Prepared;
use super::store::NamespaceData;
use super::text_batch::{self, Job, TextWorkers};
use crate::doc;
use crate::error::{Error, Result};
use crate::query::SetField;
use crate::schema::IndexDef;
use roaring::RoaringBitmap;
use serde_json::Value;
use std::sync::Arc;

/// Fewest rows for which a batch defers its tree keys (`begin_tree_batch`).
const TREE_BATCH_ROWS_MIN: usize = 4096;
/// A batch defers its tree keys when it is at least 1/this of the namespace's rows: the
/// merge passes over every key, so a small batch into a big index is cheaper row by row.
const TREE_BATCH_SHARE_MAX: usize = 16;

/// How to roll back one applied write.
#[derive(Debug)]
pub enum Undo {
    /// A new row was added: delete it.
    Inserted(u32),
    /// A row's document was replaced: put the old one back.
    Replaced(u32, Arc<[u8]>),
    /// A row was deleted: insert its document again.
    Deleted(Arc<[u8]>),
}

/// The kind of a single-document write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteMode {
    /// A stored primary key is `Error::DuplicateKey`.
    Insert,
    /// A missing primary key is `Error::NotFound`.
    Update,
    /// Inserts or replaces.
    Upsert,
}

impl WriteMode {
    /// The mode by its name in requests (`insert`, `update`, `upsert`, any letter case).
    pub fn named(name: &str) -> Option<WriteMode> {
        match name.to_ascii_lowercase().as_str() {
            "insert" => Some(WriteMode::Insert),
            "update" => Some(WriteMode::Update),
            "upsert" => Some(WriteMode::Upsert),
            _ => None,
        }
    }
}

/// What an insert does when a document with its primary key is already stored (SQL's
/// `ON CONFLICT`, MySQL's `INSERT IGNORE` and `ON DUPLICATE KEY UPDATE`).
#[derive(Debug, Clone, PartialEq)]
pub enum OnConflict {
    /// Keep the stored document; the insert changes nothing.
    Ignore,
    /// Change the stored document by these assignments, computed from its values (as an
    /// update by query does); the primary key cannot be among them.
    Update(Vec<SetField>),
}

impl NamespaceData {
    /// Writes one document; returns how to undo it.
    pub fn write(&mut self, doc: &Value, mode: WriteMode) -> Result<Undo> {
        doc::ensure_object(doc)?;
        let bytes = self.encode_checked(doc)?;
        self.write_encoded(doc, bytes, mode)
    }

    /// Inserts a document, or when its primary key is already stored does what
    /// `conflict` says; returns how to undo it, or `None` when nothing changed. The insert
    /// is `write`'s (the same checks in the same order, so the same error for a bad
    /// document); only its duplicate-key refusal turns into the conflict action.
    pub fn insert_or(&mut self, doc: &Value, conflict: &OnConflict) -> Result<Option<Undo>> {
        match self.write(doc, WriteMode::Insert) {
            Err(Error::DuplicateKey { .. }) => {}
            inserted => return inserted.map(Some),
        }
        let OnConflict::Update(sets) = conflict else { return Ok(None) };
        let key = self.pk_key(&self.extract(doc)?)?;
        let row = self.row_of(&key).expect("a duplicate key is stored");
        let mut updated = crate::query::update::updated_documents(self, &[row], sets)?;
        let (row, bytes, values) = updated.pop().expect("one document for one row");
        debug_assert!(updated.is_empty());
        Ok(Some(Undo::Replaced(row, self.replace_row(row, bytes, values))))
    }

    /// Upserts a document given in its stored form (minified JSON, as the log and
    /// snapshots carry it): parsed once and kept as given, not encoded again. The parser
    /// bounds nesting like `ensure_object` does; the size limit was checked when the
    /// document was first written.
    pub fn write_stored(&mut self, stored: &[u8]) -> Result<Undo> {
        let prepared = self.prepare_stored(stored)?;
        Ok(self.upsert_prepared(prepared))
    }

    /// Upserts a document already in its stored form and shared (a live-sync copy builds
    /// it so): `write_stored` without the copy, and with the size limit a client's
    /// document meets. The bytes must be minified JSON of one object, as `doc::encode`
    /// writes it; they are checked as JSON and kept as given.
    /// `prepared`: what `Extractor::prepare_shared` made of it under this schema, if it ran.
    pub(crate) fn upsert_shared(&mut self, stored: Arc<[u8]>, prepared: Option<Result<Prepared>>) -> Result<Undo> {
        if stored.len() > self.document_bytes_max {
            return Err(Error::LimitExceeded {
                what: "document_bytes_max",
                limit: self.document_bytes_max as u64,
                actual: stored.len() as u64,
            });
        }
        let prepared = match prepared {
            Some(prepared) => prepared?,
            None => self.prepare_shared(stored)?,
        };
        Ok(self.upsert_prepared(prepared))
    }

    /// The writing half of `write_stored`, on this namespace's schema as it was when
    /// `prepared` was made.
    pub(crate) fn upsert_prepared(&mut self, prepared: Prepared) -> Undo {
        let Prepared { bytes, values, key } = prepared;
        match self.row_of(&key) {
            Some(row) => Undo::Replaced(row, self.replace_row(row, bytes, values)),
            None => Undo::Inserted(self.insert_row(bytes, values)),
        }
    }

    fn write_encoded(&mut self, doc: &Value, bytes: Arc<[u8]>, mode: WriteMode) -> Result<Undo> {
        let values = self.extract(doc)?;
        let key = self.pk_key(&values)?;
        match (self.row_of(&key), mode) {
            (Some(_), WriteMode::Insert) => Err(Error::DuplicateKey {
                namespace: self.name.clone(),
                key: super::key_json(doc, &self.pk_paths()).to_string(),
            }),
            (None, WriteMode::Update) => Err(Error::NotFound {
                namespace: self.name.clone(),
                key: super::key_json(doc, &self.pk_paths()).to_string(),
            }),
            (Some(row), _) => Ok(Undo::Replaced(row, self.replace_row(row, bytes, values))),
            (None, _) => Ok(Undo::Inserted(self.insert_row(bytes, values))),
        }
    }

    /// The stored form of `doc`, refused when over `document_bytes_max`.
    pub(crate) fn encode_checked(&self, doc: &Value) -> Result<Arc<[u8]>> {
        let bytes = doc::encode(doc);
        if bytes.len() > self.document_bytes_max {
            return Err(Error::LimitExceeded {
                what: "document_bytes_max",
                limit: self.document_bytes_max as u64,
                actual: bytes.len() as u64,
            });
        }
        Ok(bytes)
    }

    /// Deletes the document with primary key `key` (JSON); returns its undo, or `None`
    /// when there was no such document.
    pub fn delete_key(&mut self, key: &Value) -> Result<Option<Undo>> {
        let key = self.key_from_json(key)?;
        Ok(self.row_of(&key).map(|row| Undo::Deleted(self.delete_row(row))))
    }

    /// Deletes every document, one by one, with an undo record each (`truncate` drops
    /// them all at once but cannot be rolled back): what a truncate inside a transaction
    /// does.
    pub fn delete_all(&mut self, undo: &mut Vec<Undo>) {
        for row in 0..self.row_capacity() as u32 {
            if self.doc(row).is_some() {
                undo.push(Undo::Deleted(self.delete_row(row)));
            }
        }
    }

    /// Applies undo records in reverse order. Undo cannot fail: it only restores
    /// documents that fitted the indexes a moment ago.
    pub fn rollback(&mut self, undo: Vec<Undo>) {
        for record in undo.into_iter().rev() {
            match record {
                Undo::Inserted(row) => {
                    self.delete_row(row);
                }
                Undo::Replaced(row, old) => {
                    let values = self.extract(&doc::decode(&old)).expect("an old document fits its indexes");
                    self.replace_row(row, old, values);
                }
                Undo::Deleted(old) => {
                    let values = self.extract(&doc::decode(&old)).expect("an old document fits its indexes");
                    self.insert_row(old, values);
                }
            }
        }
    }

    pub(crate) fn insert_row(&mut self, bytes: Arc<[u8]>, values: Extracted) -> u32 {
        let row = self.free_rows.pop().unwrap_or_else(|| {
            self.docs.push(None);
            u32::try_from(self.docs.len() - 1).expect("row ids fit in u32")
        });
        assert!(self.docs[row as usize].is_none(), "a free row id holds no document");
        self.document_bytes += bytes.len();
        self.docs[row as usize] = Some(bytes);
        self.live.insert(row);
        self.index_row(row, values, 0);
        row
    }

    /// Replaces the document of a live row (same primary key); returns the old one.
    pub(crate) fn replace_row(&mut self, row: u32, bytes: Arc<[u8]>, values: Extracted) -> Arc<[u8]> {
        // A text index whose fields read as before keeps the row's postings: re-indexing
        // unchanged text is most of the cost of an update that changes other fields.
        let mut keep_text = 0u64;
        // (Text indexes on workers are not here to ask: they are rewritten.)
        let text_here = self.text_workers.is_empty();
        for (i, index) in self.indexes.iter().enumerate().take(if text_here { 64 } else { 0 }) {
            if let Some(text) = index.text() {
                let hash = text.content_hash(index.columns.iter().map(|&c| values[c].as_deref().unwrap_or(&[])));
                if text.holds(row, hash) {
                    keep_text |= 1 << i;
                }
            }
        }
        self.unindex_row(row, keep_text);
        self.document_bytes += bytes.len();
        let old = self.docs[row as usize].replace(bytes).expect("replacing a live row");
        self.document_bytes -= old.len();
        self.index_row(row, values, keep_text);
        old
    }

    pub(crate) fn delete_row(&mut self, row: u32) -> Arc<[u8]> {
        self.unindex_row(row, 0);
        let old = self.docs[row as usize].take().expect("deleting a live row");
        self.document_bytes -= old.len();
        self.live.remove(row);
        self.free_rows.push(row);
        old
    }

    /// Takes the values by value: the columns keep them (strings are not copied). Text
    /// indexes read them first, since their columns keep nothing.
    /// `keep_text`: bit i set when text index i already holds this row's text.
    fn index_row(&mut self, row: u32, values: Extracted, keep_text: u64) {
        for (i, index) in self.indexes.iter_mut().enumerate() {
            if i < 64 && keep_text & (1 << i) != 0 {
                continue;
            }
            if let crate::index::Lookup::Text(text) = &mut index.lookup {
                if !self.text_workers.is_empty() {
                    let fields = index.columns.iter().map(|&c| values[c].clone().unwrap_or_default()).collect();
                    if self.text_workers.send(i, Job::Insert(row, fields)) {
                        continue;
                    }
                }
                text.insert(row, index.columns.iter().map(|&c| values[c].as_deref().unwrap_or(&[])));
            }
        }
        for (slot, values) in self.columns.iter_mut().zip(values) {
            if let (Some(column), Some(values)) = (slot, values) {
                column.set(row, values);
            }
        }
        let defer = self.bulk_loading || self.trees_deferred || self.deferred_rows.is_some();
        if let Some(pending) = &mut self.deferred_rows {
            pending.insert(row);
        }
        for index in self.indexes.iter_mut().filter(|i| !(defer && i.deferrable())) {
            for key in index.row_keys(&self.columns, row) {
                index.insert(key, row);
            }
        }
    }

    fn unindex_row(&mut self, row: u32, keep_text: u64) {
        for (i, index) in self.indexes.iter_mut().enumerate() {
            if i < 64 && keep_text & (1 << i) != 0 {
                continue;
            }
            if let Some(text) = index.text_mut()
                && (self.text_workers.is_empty() || !self.text_workers.send(i, Job::Remove(row)))
            {
                text.remove(row);
            }
        }
        // A row whose keys wait in a tree batch is not in the deferrable indexes: its
        // current keys are taken at the end (an update removes a row's keys before it
        // adds the new ones, so a row is pending only after its old keys are gone).
        let defer = self.bulk_loading
            || self.trees_deferred
            || self.deferred_rows.as_ref().is_some_and(|pending| pending.contains(row));
        for index in self.indexes.iter_mut().filter(|i| !(defer && i.deferrable())) {
            for key in index.row_keys(&self.columns, row) {
                index.remove(&key, row);
            }
        }
        for column in self.columns.iter_mut().flatten() {
            column.clear(row);
        }
    }

    /// Removes every document, keeping the schema.
    pub fn truncate(&mut self) {
        let defs = self.index_defs();
        let (limit, bulk_loading, trees_deferred) = (self.document_bytes_max, self.bulk_loading, self.trees_deferred);
        *self = NamespaceData::new(&self.name, defs).expect("the current schema is valid");
        self.document_bytes_max = limit;
        if bulk_loading {
            self.begin_bulk_load();
        }
        if trees_deferred {
            self.begin_tree_load();
        }
    }

    /// Starts a bulk load (recovery): deferrable indexes stop being kept up to date.
    pub fn begin_bulk_load(&mut self) {
        self.bulk_loading = true;
        self.begin_text_batch(0);
    }

    /// Starts a batch of writes under one write lock (a large transaction, a load): text
    /// indexes post their hits together at `end_text_batch`, which must follow before the
    /// lock is released.
    /// `rows_hint`: about how many rows the batch writes (0: unknown).
    pub fn begin_text_batch(&mut self, rows_hint: usize) {
        if rows_hint >= text_batch::THREAD_MIN_ROWS && self.text_workers.is_empty() {
            // Many rows: each text index takes them on a thread of its own.
            self.text_workers = TextWorkers::start(&mut self.indexes, rows_hint);
            return;
        }
        self.indexes.iter_mut().filter_map(|i| i.text_mut()).for_each(|t| t.begin_batch(rows_hint));
    }

    /// Ends the batch `begin_text_batch` started: every text index posts its hits (and
    /// worker threads, if any, are joined).
    pub fn end_text_batch(&mut self) {
        std::mem::take(&mut self.text_workers).finish(&mut self.indexes);
        self.indexes.iter_mut().filter_map(|i| i.text_mut()).for_each(|t| t.end_batch());
    }

    /// Starts a batch of about `rows` writes under one write lock, which must be ended by
    /// `end_tree_batch` before the lock is released. When the batch is large against the
    /// namespace, deferrable indexes take its keys at the end, sorted and merged in one
    /// pass; otherwise nothing changes.
    pub fn begin_tree_batch(&mut self, rows: usize) {
        let worth_it = rows >= TREE_BATCH_ROWS_MIN && rows * TREE_BATCH_SHARE_MAX >= self.live.len() as usize;
        let deferring = self.bulk_loading || self.trees_deferred;
        if worth_it && !deferring && self.indexes.iter().any(|index| index.deferrable()) {
            self.deferred_rows = Some(RoaringBitmap::new());
        }
    }

    /// Ends a tree batch: the live rows it left pending enter the deferrable indexes.
    pub fn end_tree_batch(&mut self) {
        let Some(mut pending) = self.deferred_rows.take() else { return };
        pending &= &self.live;
        let rows: Vec<u32> = pending.iter().collect();
        let columns = &self.columns;
        let mut deferrable: Vec<&mut crate::index::Index> =
            self.indexes.iter_mut().filter(|index| index.deferrable()).collect();
        if rows.len() >= TREE_BATCH_ROWS_MIN && deferrable.len() > 1 && crate::several_cores() {
            // Indexes are independent: half of them merge on a second thread.
            let half = deferrable.len() / 2;
            let (mine, theirs) = deferrable.split_at_mut(half);
            std::thread::scope(|scope| {
                scope.spawn(|| theirs.iter_mut().for_each(|index| index.merge_rows(columns, &rows)));
                mine.iter_mut().for_each(|index| index.merge_rows(columns, &rows));
            });
        } else {
            deferrable.iter_mut().for_each(|index| index.merge_rows(columns, &rows));
        }
    }

    /// Starts a load of many rows into a namespace readers can see (live sync's copy of a
    /// table): deferrable indexes are emptied and stop being kept up to date, and until
    /// `finish_tree_load` the planner does not use them, so every answer stays right (its
    /// conditions are checked on columns) while the load skips a merge into each ordered
    /// index per batch. Text indexes and the primary key are kept as usual.
    pub fn begin_tree_load(&mut self) {
        if std::mem::replace(&mut self.trees_deferred, true) {
            return;
        }
        self.indexes.iter_mut().filter(|index| index.deferrable()).for_each(|index| index.set_unbuilt());
    }

    /// Ends a tree load: builds each deferrable index from the live rows in one sort, and
    /// the planner may use it again.
    pub fn finish_tree_load(&mut self) {
        if !std::mem::replace(&mut self.trees_deferred, false) {
            return;
        }
        debug_assert!(self.deferred_rows.is_none(), "a tree load ends outside a tree batch");
        let rows: Vec<u32> = self.live.iter().collect();
        for index in self.indexes.iter_mut().filter(|index| index.deferrable()) {
            index.rebuild_tree(&self.columns, &rows);
        }
    }

    /// Ends a bulk load: builds every deferrable index from the live rows in one sort.
    pub fn finish_bulk_load(&mut self) {
        if !std::mem::replace(&mut self.bulk_loading, false) {
            return;
        }
        // A tree load would leave its indexes marked built but missing later rows.
        assert!(!self.trees_deferred, "a bulk load ends inside a tree load");
        for text in self.indexes.iter_mut().filter_map(|i| i.text_mut()) {
            text.end_batch();
            text.finish_load();
        }
        let rows: Vec<u32> = self.live.iter().collect();
        for index in self.indexes.iter_mut().filter(|index| index.deferrable()) {
            index.rebuild_tree(&self.columns, &rows);
        }
    }

    /// Adds an index and builds it over the existing documents. Every document is
    /// checked against the new schema first, so one that does not fit leaves the
    /// namespace unchanged.
    pub fn add_index(&mut self, def: IndexDef) -> Result<()> {
        self.check_new_index(&def)?;
        if def.pk {
            return Err(Error::InvalidIndex {
                index: def.name,
                reason: "the primary key is fixed when the namespace is created".to_string(),
            });
        }
        let mut defs = self.index_defs();
        defs.push(def);
        *self = self.rebuilt(defs)?;
        Ok(())
    }

    /// Drops an index by name; the primary key index cannot be dropped.
    pub fn drop_index(&mut self, name: &str) -> Result<()> {
        let position = self
            .indexes
            .iter()
            .position(|i| i.def.name == name)
            .ok_or_else(|| Error::UnknownIndex { namespace: self.name.clone(), index: name.to_string() })?;
        if position == self.pk_index {
            return Err(Error::InvalidIndex {
                index: name.to_string(),
                reason: "the primary key index cannot be dropped".to_string(),
            });
        }
        self.indexes.remove(position);
        if self.pk_index > position {
            self.pk_index -= 1;
        }
        self.refresh_field_columns();
        Ok(())
    }

    /// A copy of this namespace's documents under another schema, with the same row ids
    /// (so unsorted results keep their order).
    fn rebuilt(&self, defs: Vec<IndexDef>) -> Result<NamespaceData> {
        let mut fresh = NamespaceData::new(&self.name, defs)?;
        fresh.document_bytes_max = self.document_bytes_max;
        // Built in bulk: tree indexes are sorted once instead of searched per row.
        fresh.begin_bulk_load();
        fresh.docs = vec![None; self.docs.len()];
        fresh.free_rows = self.free_rows.clone();
        for row in self.live.iter() {
            let bytes = self.docs[row as usize].clone().expect("live rows have documents");
            let values = fresh.extract(&doc::decode(&bytes))?;
            fresh.document_bytes += bytes.len();
            fresh.docs[row as usize] = Some(bytes);
            fresh.live.insert(row);
            fresh.index_row(row, values, 0);
        }
        if !self.bulk_loading {
            fresh.finish_bulk_load();
        }
        Ok(fresh)
    }
}
