//! The source of fuzzy snapshots: the whole database as a sequence of changes.
//!
//! Owns: `Database::write_snapshot`, which walks namespaces and keyspaces a chunk at a
//! time and hands each chunk, encoded as a `Change`, to the caller (who writes it to a
//! file). Never: hold a lock while the caller writes, or hold one for more than copying
//! one chunk's document handles, so readers and writers wait microseconds, not for disk.
//!
//! Why the result is correct although writes go on while it is taken: the caller reads
//! the journal's next lsn S before starting, so every record below S is already applied
//! in memory. A document not written after S stays at its row for the whole walk and is
//! copied exactly; one written after S may be copied in any of its states (or twice), and
//! replaying the log from S restores its final state. A schema change during the walk
//! restarts that namespace (a fresh `CreateNamespace` block replaces what came before).

use super::Database;
use crate::change::{Change, DocChange, encode_docs_head};
use crate::kv::{Keyspace, SnapshotCopy};
use crate::namespace::Namespace;
use std::sync::Arc;

/// What a snapshot held.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SnapshotCounts {
    /// Namespace headers written (a namespace copied again after a schema change during
    /// the walk counts again).
    pub namespaces: u64,
    /// Documents written, counted the same way.
    pub documents: u64,
    /// Key-value keyspaces copied.
    pub keyspaces: u64,
    /// Keys copied, over all keyspaces.
    pub keys: u64,
    /// Chunks handed to the caller.
    pub blocks: u64,
    /// Payload bytes handed to the caller.
    pub bytes: u64,
}

/// A chunk closes at this many documents or bytes, whichever comes first.
const CHUNK_DOCUMENTS_MAX: usize = 1024;
const CHUNK_BYTES_MAX: usize = 1 << 20;
/// Schema changes a namespace copy restarts for before it copies in one go.
const RESTARTS_MAX: usize = 3;

impl Database {
    /// Hands the database to `emit` as change payloads; loading them in order with
    /// `apply_change` rebuilds it (as of some moment during the call, per key; see the
    /// module docs for why that is enough). Namespaces and keyspaces are copied a chunk
    /// at a time, interleaved (the next chunk from whichever has handed over the fewest
    /// bytes), so recovery's lanes, one per namespace or keyspace, all get work from the
    /// start of the file rather than one after another.
    pub fn write_snapshot<E>(&self, emit: &mut dyn FnMut(&[u8]) -> Result<(), E>) -> Result<SnapshotCounts, E> {
        let mut counts = SnapshotCounts::default();
        let mut buffer = Vec::with_capacity(CHUNK_BYTES_MAX + (64 << 10));
        let mut emit_block = |buffer: &mut Vec<u8>, counts: &mut SnapshotCounts| {
            counts.blocks += 1;
            counts.bytes += buffer.len() as u64;
            let result = emit(buffer);
            buffer.clear();
            result
        };
        // Metadata first: a few small entries, each a change of its own.
        let entries: Vec<(String, Vec<u8>)> = self.meta.read().iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        for (key, value) in &entries {
            Change::Meta { key, value: Some(value) }.encode(&mut buffer);
            emit_block(&mut buffer, &mut counts)?;
        }
        let mut copies: Vec<(u64, Copy)> = Vec::new();
        for namespace in self.namespaces.read().values() {
            let copy = NamespaceCopy { namespace: namespace.clone(), version: None, next_row: 0, attempts: 0 };
            copies.push((0, Copy::Namespace(copy)));
        }
        for name in self.keyspaces.list() {
            let Some(keyspace) = self.keyspaces.get(&name) else { continue };
            counts.keyspaces += 1;
            copies.push((0, Copy::Keyspace { name, keyspace, copy: SnapshotCopy::default() }));
        }
        while let Some(next) = (0..copies.len()).min_by_key(|&i| copies[i].0) {
            let before = counts.bytes;
            let done = match &mut copies[next].1 {
                Copy::Namespace(copy) => copy.step(&mut buffer, &mut counts, &mut emit_block)?,
                Copy::Keyspace { name, keyspace, copy } => {
                    let step = keyspace
                        .snapshot_step(name, copy, &mut buffer, &mut |buffer| emit_block(buffer, &mut counts))?;
                    counts.keys += step.unwrap_or(0);
                    step.is_none()
                }
            };
            copies[next].0 += counts.bytes - before;
            if done {
                copies.swap_remove(next);
            }
        }
        Ok(counts)
    }
}

/// One namespace's or keyspace's copy in progress, with the bytes it handed over so far.
enum Copy {
    Namespace(NamespaceCopy),
    Keyspace { name: String, keyspace: Arc<Keyspace>, copy: SnapshotCopy },
}

/// Where a namespace's copy stands.
struct NamespaceCopy {
    namespace: Arc<Namespace>,
    /// The schema version its `CreateNamespace` block was written under (`None`: that
    /// block is next, at the start or after a schema change restarted the copy).
    version: Option<u64>,
    next_row: usize,
    /// Schema changes that restarted it.
    attempts: usize,
}

impl NamespaceCopy {
    /// Hands over the next block (the `CreateNamespace` one, one chunk of documents, or,
    /// after `RESTARTS_MAX` restarts, all of them); returns true once the copy is done.
    fn step<E>(
        &mut self,
        buffer: &mut Vec<u8>,
        counts: &mut SnapshotCounts,
        emit_block: &mut impl FnMut(&mut Vec<u8>, &mut SnapshotCounts) -> Result<(), E>,
    ) -> Result<bool, E> {
        let namespace = &*self.namespace;
        let Some(version) = self.version else {
            {
                let data = namespace.data.read();
                if namespace.is_dropped() {
                    return Ok(true);
                }
                Change::CreateNamespace { name: &namespace.name, indexes: data.index_defs() }.encode(buffer);
                self.version = Some(namespace.schema_version());
            }
            emit_block(buffer, counts)?;
            counts.namespaces += 1;
            self.next_row = 0;
            return Ok(false);
        };
        // Schema changes restart the copy; after a few, the copy takes every document
        // handle under one read lock instead (a longer pause, but it always finishes).
        let in_one_go = self.attempts >= RESTARTS_MAX;
        let mut chunk: Vec<Arc<[u8]>> = Vec::with_capacity(CHUNK_DOCUMENTS_MAX);
        {
            let data = namespace.data.read();
            if namespace.is_dropped() {
                return Ok(true);
            }
            if namespace.schema_version() != version {
                // A fresh `CreateNamespace` block replaces what came before.
                self.version = None;
                self.attempts += 1;
                return Ok(false);
            }
            let mut bytes = 0;
            while self.next_row < data.row_capacity()
                && (in_one_go || (chunk.len() < CHUNK_DOCUMENTS_MAX && bytes < CHUNK_BYTES_MAX))
            {
                if let Some(doc) = data.doc(self.next_row as u32) {
                    bytes += doc.len();
                    chunk.push(doc.clone());
                }
                self.next_row += 1;
            }
        }
        if chunk.is_empty() {
            return Ok(true);
        }
        for docs in chunk.chunks(CHUNK_DOCUMENTS_MAX) {
            encode_docs_head(buffer, &namespace.name);
            for doc in docs {
                DocChange::Put(doc).encode(buffer);
                counts.documents += 1;
            }
            emit_block(buffer, counts)?;
        }
        Ok(in_one_go)
    }
}
