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
use crate::namespace::Namespace;
use std::sync::Arc;

/// What a snapshot held.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SnapshotCounts {
    pub namespaces: u64,
    pub documents: u64,
    pub keyspaces: u64,
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
    /// module docs for why that is enough).
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
        let namespaces: Vec<Arc<Namespace>> = self.namespaces.read().values().cloned().collect();
        for namespace in namespaces {
            let mut attempts = 0;
            // Schema changes restart the copy; after a few, the copy takes every document
            // handle under one read lock instead (a longer pause, but it always finishes).
            while !copy_namespace(&namespace, attempts >= RESTARTS_MAX, &mut buffer, &mut counts, &mut emit_block)? {
                attempts += 1;
            }
        }
        for name in self.keyspaces.list() {
            let Some(keyspace) = self.keyspaces.get(&name) else { continue };
            counts.keyspaces += 1;
            counts.keys +=
                keyspace.write_snapshot(&name, &mut buffer, &mut |buffer| emit_block(buffer, &mut counts))?;
        }
        Ok(counts)
    }
}

/// Copies one namespace; returns false when its schema changed during the copy (the
/// caller starts it over).
fn copy_namespace<E>(
    namespace: &Namespace,
    in_one_go: bool,
    buffer: &mut Vec<u8>,
    counts: &mut SnapshotCounts,
    emit_block: &mut impl FnMut(&mut Vec<u8>, &mut SnapshotCounts) -> Result<(), E>,
) -> Result<bool, E> {
    let version = {
        let data = namespace.data.read();
        if namespace.is_dropped() {
            return Ok(true);
        }
        Change::CreateNamespace { name: &namespace.name, indexes: data.index_defs() }.encode(buffer);
        namespace.schema_version()
    };
    emit_block(buffer, counts)?;
    counts.namespaces += 1;
    let mut next_row = 0usize;
    let mut chunk: Vec<Arc<[u8]>> = Vec::with_capacity(CHUNK_DOCUMENTS_MAX);
    if in_one_go {
        let data = namespace.data.read();
        if namespace.schema_version() != version {
            return Ok(false);
        }
        let all: Vec<Arc<[u8]>> = (0..data.row_capacity() as u32).filter_map(|row| data.doc(row).cloned()).collect();
        drop(data);
        for docs in all.chunks(CHUNK_DOCUMENTS_MAX) {
            encode_docs_head(buffer, &namespace.name);
            for doc in docs {
                DocChange::Put(doc).encode(buffer);
                counts.documents += 1;
            }
            emit_block(buffer, counts)?;
        }
        return Ok(true);
    }
    loop {
        {
            let data = namespace.data.read();
            if namespace.is_dropped() {
                return Ok(true);
            }
            if namespace.schema_version() != version {
                return Ok(false);
            }
            let mut bytes = 0;
            while next_row < data.row_capacity() && chunk.len() < CHUNK_DOCUMENTS_MAX && bytes < CHUNK_BYTES_MAX {
                if let Some(doc) = data.doc(next_row as u32) {
                    bytes += doc.len();
                    chunk.push(doc.clone());
                }
                next_row += 1;
            }
        }
        if chunk.is_empty() {
            return Ok(true);
        }
        encode_docs_head(buffer, &namespace.name);
        for doc in chunk.drain(..) {
            DocChange::Put(&doc).encode(buffer);
            counts.documents += 1;
        }
        emit_block(buffer, counts)?;
    }
}
