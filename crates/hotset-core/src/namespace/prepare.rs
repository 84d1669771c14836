//! Preparing stored documents for an upsert away from the namespace: parsing them and
//! extracting their index values with an owned copy of the schema.
//!
//! Owns: `Extractor` (the column specs, pk columns and index names one namespace's
//! extraction needs, copied out of it), `Prepared` (a document ready to upsert), and
//! `apply_prepared` (a large write's documents prepared partly on a helper thread while
//! the thread holding the namespace applies them: recovery's snapshot blocks, a live-sync
//! copy's groups).
//! Never: touch a namespace's data, so a thread preparing documents runs while another
//! thread holds the namespace to apply earlier ones (recovery does exactly that).

use super::extract::{Extracted, SpecSlot, extract};
use super::store::{NamespaceData, pk_key_of};
use crate::doc;
use crate::error::{Error, Result};
use crate::index::Key;
use crate::index::column::ColumnSpec;
use serde_json::Value;
use std::sync::Arc;

/// A stored document parsed and extracted, ready to upsert (`NamespaceData::upsert_prepared`)
/// into the namespace whose `Extractor` made it, while its schema is unchanged.
pub(crate) struct Prepared {
    pub(super) bytes: Arc<[u8]>,
    pub(super) values: Extracted,
    pub(super) key: Key,
}

/// What extracting a namespace's documents needs, owned.
pub(crate) struct Extractor {
    namespace: String,
    columns: Vec<Option<ColumnSpec>>,
    /// The index reported in a type error, per column slot.
    owners: Vec<String>,
    pk_columns: Vec<usize>,
    pk_fields: Vec<String>,
}

/// What preparing a document reads of a schema, borrowed from the namespace or from an
/// `Extractor`.
struct Schema<'a, S> {
    namespace: &'a str,
    columns: &'a [S],
    owner: &'a dyn Fn(usize) -> String,
    pk_columns: &'a [usize],
    pk_fields: &'a [String],
}

impl NamespaceData {
    /// A copy of what extraction needs from this namespace's schema.
    pub(crate) fn extractor(&self) -> Extractor {
        let pk = self.pk();
        Extractor {
            namespace: self.name.clone(),
            columns: self.columns.iter().map(|c| c.as_ref().map(|c| c.spec.clone())).collect(),
            owners: (0..self.columns.len()).map(|column| self.column_owner(column)).collect(),
            pk_columns: pk.columns.clone(),
            pk_fields: pk.def.fields.clone(),
        }
    }

    /// Prepares a stored document against this namespace's schema in place.
    pub(crate) fn prepare_stored(&self, stored: &[u8]) -> Result<Prepared> {
        self.prepare_shared(Arc::from(stored))
    }

    /// `prepare_stored` of bytes already shared: kept as they are, not copied.
    pub(crate) fn prepare_shared(&self, stored: Arc<[u8]>) -> Result<Prepared> {
        let pk = self.pk();
        let owner = |column: usize| self.column_owner(column);
        let schema = Schema {
            namespace: &self.name,
            columns: &self.columns,
            owner: &owner,
            pk_columns: &pk.columns,
            pk_fields: &pk.def.fields,
        };
        prepare(&schema, stored)
    }

    /// The name of the index that reads column slot `column`.
    pub(crate) fn column_owner(&self, column: usize) -> String {
        self.indexes.iter().find(|i| i.columns.contains(&column)).map(|i| i.def.name.clone()).unwrap_or_default()
    }
}

impl Extractor {
    /// Prepares a stored document against the schema copied into this extractor.
    pub(crate) fn prepare(&self, stored: &[u8]) -> Result<Prepared> {
        self.prepare_shared(Arc::from(stored))
    }

    /// `prepare` of bytes already shared: kept as they are, not copied.
    pub(crate) fn prepare_shared(&self, stored: Arc<[u8]>) -> Result<Prepared> {
        let owner = |column: usize| self.owners[column].clone();
        let schema = Schema {
            namespace: &self.namespace,
            columns: &self.columns,
            owner: &owner,
            pk_columns: &self.pk_columns,
            pk_fields: &self.pk_fields,
        };
        prepare(&schema, stored)
    }
}

/// Parses a stored document (minified JSON, as the log and snapshots carry it) and
/// extracts its index values and primary key.
///
/// Only the top-level fields some index reads are built (`doc::parse_fields`): an upsert
/// needs nothing else from the parsed document.
fn prepare<S: SpecSlot>(schema: &Schema<'_, S>, stored: Arc<[u8]>) -> Result<Prepared> {
    let columns = schema.columns;
    let indexed = |name: &str| columns.iter().filter_map(SpecSlot::spec).any(|c| c.path.parts()[0].as_ref() == name);
    let values = match doc::parse_fields(&stored, &indexed) {
        Some(fields) => extract(&fields, columns, schema.owner)?,
        // Not one object: the full parse names what is wrong.
        None => {
            let doc: Value =
                serde_json::from_slice(&stored).map_err(|e| Error::InvalidJson { reason: e.to_string() })?;
            if !doc.is_object() {
                return Err(Error::NotAnObject { found: crate::error::json_kind(&doc) });
            }
            extract(&doc, columns, schema.owner)?
        }
    };
    let key = pk_key_of(schema.namespace, schema.pk_columns, schema.pk_fields, &values)?;
    Ok(Prepared { bytes: stored, values, key })
}

/// Items in one write from which a second thread helps prepare their documents (a
/// snapshot block holds up to 1,024; a log record or a client's write usually one).
pub(crate) const PARALLEL_PUTS_MIN: usize = 256;

/// Share of a large write's items the helper thread prepares; this thread prepares the
/// rest and applies them all. Chosen by measurement: on the 1M-profile recovery 3/5
/// finished the snapshot load about 8% sooner than 3/4 (median of 7 interleaved runs).
const HELPER_SHARE: (usize, usize) = (3, 5);

/// Items the helper hands over at a time, so applying starts before it is done.
const HANDOVER_ITEMS: usize = 64;

/// Applies `items` in order with `apply`, each with what `prepare` made of it. On one core,
/// or for fewer than `PARALLEL_PUTS_MIN` items, `apply` gets `None` and prepares for
/// itself; otherwise a helper thread prepares the later share of the items (with a copy of
/// the schema: preparing changes nothing, so it runs beside the thread that holds the
/// namespace) while this thread prepares the first share and applies everything. Stops at
/// the first error `apply` returns (the helper stops soon after).
pub(crate) fn apply_prepared<T: Sync, P: Send, E>(
    items: &[T],
    prepare: impl Fn(&T) -> P + Sync,
    mut apply: impl FnMut(&T, Option<P>) -> std::result::Result<(), E>,
) -> std::result::Result<(), E> {
    if items.len() < PARALLEL_PUTS_MIN || !crate::several_cores() {
        return items.iter().try_for_each(|item| apply(item, None));
    }
    let prepare = &prepare;
    let (mine, theirs) = items.split_at(items.len() - items.len() * HELPER_SHARE.0 / HELPER_SHARE.1);
    std::thread::scope(|scope| {
        let (handover, arrivals) = std::sync::mpsc::sync_channel(theirs.len().div_ceil(HANDOVER_ITEMS));
        let helper = scope.spawn(move || {
            for chunk in theirs.chunks(HANDOVER_ITEMS) {
                // The receiver only goes away when applying failed; then stop early.
                if handover.send(chunk.iter().map(prepare).collect::<Vec<P>>()).is_err() {
                    return;
                }
            }
        });
        let applied = (|| {
            for item in mine {
                apply(item, Some(prepare(item)))?;
            }
            let mut rest = theirs.iter();
            for chunk in arrivals.iter() {
                // The chunk first: zip stops when it ends without taking one more item.
                for (prepared, item) in chunk.into_iter().zip(rest.by_ref()) {
                    apply(item, Some(prepared))?;
                }
            }
            Ok(())
        })();
        drop(arrivals);
        helper.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        applied
    })
}
