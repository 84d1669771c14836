//! Turning applied writes into journal records.
//!
//! Owns: encoding what a write did, read back from the namespace while its write lock is
//! still held, straight into the journal's buffer. Never: log intent ("update where"),
//! only results: the document now stored at a row, or the key of a document deleted.

use crate::change::{Change, DocChange, encode_docs_head};
use crate::doc;
use crate::journal::Journal;
use crate::namespace::{NamespaceData, Undo, key_json};
use std::sync::Arc;

/// One written row, as the log sees it.
pub(super) enum Logged<'a> {
    /// Whatever document the row holds now (none: it was freed again later in the batch).
    Row(u32),
    /// A deleted document, whose key is logged.
    Deleted(&'a Arc<[u8]>),
}

impl<'a> From<&'a Undo> for Logged<'a> {
    fn from(undo: &'a Undo) -> Logged<'a> {
        match undo {
            Undo::Inserted(row) | Undo::Replaced(row, _) => Logged::Row(*row),
            Undo::Deleted(old) => Logged::Deleted(old),
        }
    }
}

/// A row's entry in the record, prepared before the journal's lock is taken.
enum Entry<'a> {
    Put(&'a Arc<[u8]>),
    Delete(String),
}

/// Logs a batch of written rows as one `Docs` record.
///
/// Writing each row's *current* document is right even when a batch touched a row or a
/// key several times: a row's current document is its key's final state, and a key
/// deleted and then written again has a later `Row` entry after its `Deleted` one.
pub(super) fn docs<'a>(journal: &dyn Journal, data: &NamespaceData, rows: impl IntoIterator<Item = Logged<'a>>) -> u64 {
    // Keys of deleted documents are parsed before the journal's lock is taken, keeping
    // its critical section to copying bytes.
    let entries = Entries::of(data, rows);
    journal.append(&mut |out| entries.encode(out, data.name()))
}

/// The `Docs` payload of a batch of written rows, for a part of a group record.
pub(super) fn docs_payload<'a>(data: &NamespaceData, rows: impl IntoIterator<Item = Logged<'a>>) -> Vec<u8> {
    let mut out = Vec::new();
    Entries::of(data, rows).encode(&mut out, data.name());
    out
}

/// A batch's rows as their log entries, with the bytes they take.
struct Entries<'a> {
    rows: Vec<Entry<'a>>,
    size: usize,
}

impl<'a> Entries<'a> {
    fn of<'r>(data: &'a NamespaceData, rows: impl IntoIterator<Item = Logged<'r>>) -> Entries<'a> {
        let pk_paths = data.pk_paths();
        let rows: Vec<Entry<'_>> = rows
            .into_iter()
            .filter_map(|logged| match logged {
                Logged::Row(row) => data.doc(row).map(Entry::Put),
                Logged::Deleted(old) => Some(Entry::Delete(key_json(&doc::decode(old), &pk_paths).to_string())),
            })
            .collect();
        let size = rows
            .iter()
            .map(|entry| match entry {
                Entry::Put(doc) => doc.len(),
                Entry::Delete(key) => key.len(),
            } + 9)
            .sum();
        Entries { rows, size }
    }

    fn encode(&self, out: &mut Vec<u8>, namespace: &str) {
        // The record of a large transaction runs to megabytes: size the buffer once rather
        // than doubling it (each doubling copies the record and touches fresh pages).
        out.reserve(self.size + namespace.len() + 16);
        encode_docs_head(out, namespace);
        for entry in &self.rows {
            match entry {
                Entry::Put(doc) => DocChange::Put(doc).encode(out),
                Entry::Delete(key) => DocChange::Delete(key).encode(out),
            }
        }
    }
}

/// Logs a schema change.
pub(super) fn change(journal: &dyn Journal, change: &Change<'_>) -> u64 {
    journal.append(&mut |out| change.encode(out))
}
