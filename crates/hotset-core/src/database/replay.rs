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
use crate::change::{Change, DocChange, Format};
use crate::error::{Error, Result};
use crate::namespace::{Namespace, NamespaceData, Prepared, prepare};
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
    /// operations were skipped (always 0 under `Replay::Exact`). `format` is the format of
    /// the file the payload was read from (`Format::CURRENT` for one this build encoded).
    pub fn apply_change(&self, payload: &[u8], format: Format, mode: Replay) -> Result<u64> {
        self.apply_decoded(Change::decode(payload, format)?, mode)
    }

    fn apply_decoded(&self, change: Change<'_>, mode: Replay) -> Result<u64> {
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
                if self.bulk_loading.load(std::sync::atomic::Ordering::Acquire) {
                    data.begin_bulk_load();
                }
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
                let mut failed = 0;
                let result = self.replay_namespace(namespace, |data| apply_docs(data, &ops, mode, &mut failed, &mut 0));
                skipped += failed;
                settle(result, &mut skipped)?;
            }
            Change::Kv { keyspace, flush, ops } => self.keyspaces.restore(keyspace, flush, ops),
            Change::DropKeyspace { keyspace } => {
                self.keyspaces.drop_quiet(keyspace);
            }
            Change::Meta { key, value } => {
                let mut entries = self.meta.write();
                match value {
                    Some(value) => entries.insert(key.to_string(), value.to_vec()),
                    None => entries.remove(key),
                };
            }
            Change::Group { parts } => {
                for part in parts {
                    skipped += self.apply_decoded(part, mode)?;
                }
            }
        }
        Ok(skipped)
    }

    /// Applies `changes` in order, as `apply_change` on each would, but a run of document
    /// changes to one namespace (under one mode) is applied as one large change: under
    /// one lock, and prepared partly on a second thread (recovery's log holds one record
    /// per write, usually of one document, too small for that on its own). Returns the
    /// operations skipped, or the position in `changes` of the change that failed and why.
    /// Each change comes with the format of the file it was read from.
    pub fn apply_changes(&self, changes: &[(&[u8], Format, Replay)]) -> std::result::Result<u64, (usize, Error)> {
        let mut skipped = 0;
        let mut decoded = changes
            .iter()
            .enumerate()
            .map(|(at, &(payload, format, mode))| (at, Change::decode(payload, format), mode))
            .peekable();
        while let Some((at, change, mode)) = decoded.next() {
            let change = change.map_err(|error| (at, error))?;
            let Change::Docs { namespace, mut ops } = change else {
                skipped += self.apply_decoded(change, mode).map_err(|error| (at, error))?;
                continue;
            };
            // Where each change's operations start in `ops`, to name a failing one.
            let mut starts = vec![0];
            while let Some((_, Ok(Change::Docs { namespace: next, .. }), next_mode)) = decoded.peek()
                && *next == namespace
                && *next_mode == mode
            {
                let Some((_, Ok(Change::Docs { ops: more, .. }), _)) = decoded.next() else {
                    unreachable!("the change just peeked at")
                };
                starts.push(ops.len());
                ops.extend(more);
            }
            let (mut failed, mut done) = (0, 0);
            let result = self.replay_namespace(namespace, |data| apply_docs(data, &ops, mode, &mut failed, &mut done));
            skipped += failed;
            match (result, mode) {
                (Ok(()), _) => {}
                // What `apply_change` on each would count: one per change.
                (Err(_), Replay::Fuzzy) => skipped += starts.len() as u64,
                (Err(error), Replay::Exact) => {
                    // The change holding operation `done`, the first that did not apply.
                    let change = starts.partition_point(|&start| start <= done) - 1;
                    return Err((at + change, error));
                }
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

/// Applies a change's document operations in order. Large changes (recovery's snapshot
/// blocks) are prepared partly on a second thread (`prepare::apply_prepared`) while this
/// thread applies. `failed` counts the operations that failed under `Replay::Fuzzy`;
/// `done` the operations handled (on an error, the position of the one that failed).
fn apply_docs(
    data: &mut NamespaceData,
    ops: &[DocChange<'_>],
    mode: Replay,
    failed: &mut u64,
    done: &mut usize,
) -> Result<()> {
    let extractor = (ops.len() >= prepare::PARALLEL_PUTS_MIN).then(|| data.extractor());
    let prepare = |op: &DocChange<'_>| match (op, &extractor) {
        (DocChange::Put(bytes), Some(extractor)) => Some(extractor.prepare(bytes)),
        _ => None,
    };
    prepare::apply_prepared(ops, prepare, |op, prepared| {
        match apply_doc(data, op, prepared.flatten()) {
            Err(error) if mode == Replay::Exact => return Err(error),
            Err(_) => *failed += 1,
            Ok(()) => {}
        }
        *done += 1;
        Ok(())
    })
}

fn apply_doc(data: &mut NamespaceData, op: &DocChange<'_>, prepared: Option<Result<Prepared>>) -> Result<()> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{FieldType, IndexDef};

    fn docs(namespace: &str, ops: &[&str]) -> Vec<u8> {
        let mut bytes = Vec::new();
        Change::Docs { namespace, ops: ops.iter().map(|doc| DocChange::Put(doc.as_bytes())).collect() }
            .encode(&mut bytes);
        bytes
    }

    fn database() -> Database {
        let db = Database::new();
        for name in ["n", "m"] {
            db.create_namespace(name, vec![IndexDef::hash("id", FieldType::Int).pk()]).unwrap();
        }
        db
    }

    /// Runs of one-document changes are applied as one (on two threads from 256
    /// documents); a failure is still named by the change that holds it, and what
    /// `Replay::Fuzzy` skips is counted as `apply_change` on each would count it.
    #[test]
    fn apply_changes_names_the_change_that_fails_inside_a_run() {
        let good: Vec<String> = (0..400).map(|id| format!(r#"{{"id":{id}}}"#)).collect();
        let mut changes: Vec<Vec<u8>> = good.iter().map(|doc| docs("n", &[doc])).collect();
        changes.insert(10, docs("n", &[]));
        changes.insert(20, docs("m", &[r#"{"id":1}"#]));
        changes[300] = docs("n", &[r#"{"id":"not an int"}"#]);
        changes.push(docs("gone", &[r#"{"id":1}"#]));
        let exact: Vec<(&[u8], Format, Replay)> =
            changes.iter().map(|c| (c.as_slice(), Format::CURRENT, Replay::Exact)).collect();
        let db = database();
        let (at, error) = db.apply_changes(&exact).expect_err("a document that does not fit");
        assert_eq!(at, 300, "{error}");
        assert_eq!(db.describe("n").unwrap().documents, 298, "the run's documents before it are in");
        assert_eq!(db.describe("m").unwrap().documents, 1);

        let fuzzy: Vec<(&[u8], Format, Replay)> =
            changes.iter().map(|c| (c.as_slice(), Format::CURRENT, Replay::Fuzzy)).collect();
        let db = database();
        assert_eq!(db.apply_changes(&fuzzy).unwrap(), 2, "the bad document and the missing namespace");
        assert_eq!(db.describe("n").unwrap().documents, 399, "all but the one replaced");
        let one_by_one = database();
        let skipped: u64 =
            changes.iter().map(|c| one_by_one.apply_change(c, Format::CURRENT, Replay::Fuzzy).unwrap()).sum();
        assert_eq!(skipped, 2);

        let db = database();
        let (at, _) = db.apply_changes(&exact[301..]).expect_err("the missing namespace");
        assert_eq!(at, exact.len() - 302, "the last change, position counted from the slice");
    }
}
