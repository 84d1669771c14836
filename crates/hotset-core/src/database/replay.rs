//! Applying logged changes: what recovery does with snapshot blocks and log records.
//!
//! Owns: `Database::apply_change`, the idempotent application of one `Change`. Never: log
//! what it applies (recovery runs before a journal is attached), or refuse a change for
//! being already applied: a fuzzy snapshot plus the log after its start may state the same
//! result twice, and applying it again must leave the same state.
//!
//! Why `Replay::Fuzzy` exists: a snapshot copies namespaces while writes go on, so it may
//! hold a state newer than some records logged while it was being taken (a namespace
//! already dropped, a schema with an index added later). Such a record can fail to apply
//! to that newer state; it is then skipped, which is safe because the record that made the
//! state newer is replayed after it and sets the final result. Records logged after the
//! snapshot finished meet exactly the state they were logged against (`Replay::Exact`), so
//! there any failure is an error.

use super::Database;
use crate::change::{Change, DocChange, KvChange};
use crate::error::{Error, Result};
use crate::namespace::{Namespace, NamespaceData, Prepared};
use std::sync::Arc;

/// How strictly `apply_change` treats a change that does not apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Replay {
    /// Any failure is an error.
    Exact,
    /// Operations that fail are skipped and counted (records logged while the snapshot
    /// being loaded was taken).
    Fuzzy,
}

impl Database {
    /// Decodes and applies one change payload, as recovery does; returns how many
    /// operations were skipped (always 0 under `Replay::Exact`).
    pub fn apply_change(&self, payload: &[u8], mode: Replay) -> Result<u64> {
        let change = Change::decode(payload)?;
        let mut skipped = 0;
        let settle = |result: Result<()>, skipped: &mut u64| match (result, mode) {
            (Ok(()), _) => Ok(()),
            (Err(_), Replay::Fuzzy) => {
                *skipped += 1;
                Ok(())
            }
            (Err(error), Replay::Exact) => Err(error),
        };
        match change {
            Change::CreateNamespace { name, indexes } => {
                // Create means "this namespace, empty, with this schema": any older
                // namespace of that name is replaced, as the record's lsn says it was.
                let mut data = NamespaceData::new(name, indexes)?;
                data.document_bytes_max = self.limits.document_bytes_max;
                data.bulk_loading = self.bulk_loading.load(std::sync::atomic::Ordering::Acquire);
                let old = self.namespaces.write().insert(name.to_string(), Arc::new(Namespace::new(name, data)));
                if let Some(old) = old {
                    old.mark_dropped();
                }
            }
            Change::DropNamespace { name } => {
                if let Some(old) = self.namespaces.write().remove(name) {
                    old.mark_dropped();
                }
            }
            Change::Truncate { namespace } => settle(
                self.replay_namespace(namespace, |data| {
                    data.truncate();
                    Ok(())
                }),
                &mut skipped,
            )?,
            Change::AddIndex { namespace, def } => settle(
                self.replay_namespace(namespace, |data| {
                    match data.indexes.iter().find(|index| index.def.name == def.name) {
                        Some(index) if index.def == def => Ok(()),
                        Some(_) => {
                            data.drop_index(&def.name)?;
                            data.add_index(def)
                        }
                        None => data.add_index(def),
                    }
                }),
                &mut skipped,
            )?,
            Change::DropIndex { namespace, index } => settle(
                self.replay_namespace(namespace, |data| match data.drop_index(index) {
                    Err(Error::UnknownIndex { .. }) => Ok(()),
                    other => other,
                }),
                &mut skipped,
            )?,
            Change::Docs { namespace, ops } => {
                let mut failed = None;
                let result = self.replay_namespace(namespace, |data| {
                    let prepared = prepare_puts(data, &ops);
                    for (op, prepared) in ops.into_iter().zip(prepared) {
                        if let Err(error) = apply_doc(data, op, prepared) {
                            if mode == Replay::Exact {
                                return Err(error);
                            }
                            *failed.get_or_insert(0) += 1;
                        }
                    }
                    Ok(())
                });
                skipped += failed.unwrap_or(0);
                settle(result, &mut skipped)?;
            }
            Change::Kv { keyspace, flush, ops } => {
                let keyspace = self.keyspaces.get_or_create_quiet(keyspace);
                if flush {
                    keyspace.restore_flush();
                }
                for op in ops {
                    match op {
                        KvChange::Put { key, value, expire_at_ms } => keyspace.restore_put(key, &value, expire_at_ms),
                        KvChange::Delete { key } => keyspace.restore_delete(key),
                    }
                }
            }
            Change::DropKeyspace { keyspace } => {
                self.keyspaces.drop_quiet(keyspace);
            }
        }
        Ok(skipped)
    }

    /// Runs `apply` on a namespace that a replayed change names. A missing namespace is
    /// an error: every change to one is logged after the change that created it.
    fn replay_namespace(&self, name: &str, apply: impl FnOnce(&mut NamespaceData) -> Result<()>) -> Result<()> {
        let namespace = self.namespace(name)?;
        let mut data = namespace.data.write();
        apply(&mut data)?;
        namespace.bump_schema_version();
        Ok(())
    }
}

/// Documents in one change from which preparing them on two threads pays for starting
/// the second (a snapshot block holds up to 1,024).
const PARALLEL_PUTS_MIN: usize = 256;

/// Parses and extracts every put of a change (`NamespaceData::prepare_stored`), one
/// entry per op (`None` for deletes). Large changes are split between this thread and
/// one more: recovery spends most of its time here, and preparing changes nothing, so
/// the order the ops are applied in stays theirs.
fn prepare_puts(data: &NamespaceData, ops: &[DocChange<'_>]) -> Vec<Option<Result<Prepared>>> {
    let prepare = |ops: &[DocChange<'_>]| -> Vec<Option<Result<Prepared>>> {
        ops.iter()
            .map(|op| match op {
                DocChange::Put(bytes) => Some(data.prepare_stored(bytes)),
                DocChange::Delete(_) => None,
            })
            .collect()
    };
    if ops.len() < PARALLEL_PUTS_MIN || !crate::several_cores() {
        return prepare(ops);
    }
    let (first, second) = ops.split_at(ops.len() / 2);
    std::thread::scope(|scope| {
        let helper = scope.spawn(|| prepare(second));
        let mut all = prepare(first);
        all.extend(helper.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)));
        all
    })
}

fn apply_doc(data: &mut NamespaceData, op: DocChange<'_>, prepared: Option<Result<Prepared>>) -> Result<()> {
    match (op, prepared) {
        (DocChange::Put(_), Some(prepared)) => {
            data.upsert_prepared(prepared?);
            Ok(())
        }
        (DocChange::Put(bytes), None) => data.write_stored(bytes).map(drop),
        (DocChange::Delete(key), _) => {
            let key = serde_json::from_str(key)
                .map_err(|e| Error::BadChange { reason: format!("a deleted key is not JSON: {e}") })?;
            data.delete_key(&key).map(drop)
        }
    }
}
