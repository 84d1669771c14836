//! The namespace's data: documents by row id, columns and indexes, and their schema.
//!
//! Owns: `NamespaceData` construction, row id allocation, the canonical column of each
//! field, and lookups by primary key. Never: change a row without going through `write`.

use super::extract::{Extracted, extract};
use crate::collate::Collation;
use crate::doc::FieldPath;
use crate::error::{Error, Result};
use crate::index::column::{Column, ColumnSpec};
use crate::index::{Index, Key};
use crate::schema::{IndexDef, IndexKind};
use crate::value::Scalar;
use roaring::RoaringBitmap;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;

/// Documents, columns and indexes of one namespace (guarded by `Namespace::data`).
#[derive(Debug)]
pub struct NamespaceData {
    pub(crate) name: String,
    pub(crate) indexes: Vec<Index>,
    /// Column slots; a slot is `None` once no index uses it (ids stay stable).
    pub(crate) columns: Vec<Option<Column>>,
    /// The column whose type and collation define how each indexed field compares:
    /// the first index (in declaration order) that covers the field.
    pub(crate) field_columns: HashMap<String, usize>,
    pub(crate) docs: Vec<Option<Arc<[u8]>>>,
    pub(crate) free_rows: Vec<u32>,
    pub(crate) live: RoaringBitmap,
    pub(crate) pk_index: usize,
    pub(crate) document_bytes: usize,
    /// Largest stored document; a bigger one is refused (`Limits::document_bytes_max`).
    pub(crate) document_bytes_max: usize,
    /// While set (recovery), deferrable indexes are left empty and built once, in bulk,
    /// by `finish_bulk_load`; nothing may query the namespace meanwhile.
    pub(crate) bulk_loading: bool,
    /// While set (live sync's copy of a table: `begin_tree_load`), deferrable indexes are
    /// left empty and unused by the planner, and built once by `finish_tree_load`; readers
    /// meanwhile see every row, found by scans.
    pub(crate) trees_deferred: bool,
    /// During a large batch (`begin_tree_batch`): the rows whose keys deferrable indexes
    /// have not taken yet. Their keys are read from the columns, sorted and merged in at
    /// `end_tree_batch`, one pass over each index instead of a search and a shift per key.
    pub(crate) deferred_rows: Option<RoaringBitmap>,
    /// Text indexes being filled on their own threads during a large batch.
    pub(crate) text_workers: super::text_batch::TextWorkers,
}

impl NamespaceData {
    /// An empty namespace with these indexes. Exactly one must be the primary key
    /// (`Error::NoPrimaryKey`, `Error::InvalidIndex`); each must validate and have a
    /// name of its own (`Error::IndexExists`).
    pub fn new(name: &str, defs: Vec<IndexDef>) -> Result<NamespaceData> {
        let mut data = NamespaceData {
            name: name.to_string(),
            indexes: Vec::new(),
            columns: Vec::new(),
            field_columns: HashMap::new(),
            docs: Vec::new(),
            free_rows: Vec::new(),
            live: RoaringBitmap::new(),
            pk_index: usize::MAX,
            document_bytes: 0,
            document_bytes_max: usize::MAX,
            bulk_loading: false,
            trees_deferred: false,
            deferred_rows: None,
            text_workers: Default::default(),
        };
        let pk_count = defs.iter().filter(|d| d.pk).count();
        if pk_count == 0 {
            return Err(Error::NoPrimaryKey { namespace: name.to_string() });
        }
        if pk_count > 1 {
            return Err(Error::InvalidIndex {
                index: defs.iter().filter(|d| d.pk).nth(1).map(|d| d.name.clone()).unwrap_or_default(),
                reason: "a namespace has exactly one primary key index".to_string(),
            });
        }
        for def in defs {
            data.check_new_index(&def)?;
            data.attach_index(def);
        }
        Ok(data)
    }

    pub(crate) fn check_new_index(&self, def: &IndexDef) -> Result<()> {
        def.validate()?;
        if self.indexes.iter().any(|i| i.def.name == def.name) {
            return Err(Error::IndexExists { namespace: self.name.clone(), index: def.name.clone() });
        }
        if def.pk && self.pk_index != usize::MAX {
            return Err(Error::InvalidIndex {
                index: def.name.clone(),
                reason: "the namespace already has a primary key".to_string(),
            });
        }
        Ok(())
    }

    /// Adds an index over an empty namespace or after its rows were checked to fit
    /// (`write::add_index` fills it).
    pub(crate) fn attach_index(&mut self, def: IndexDef) -> usize {
        let columns = def
            .paths()
            .into_iter()
            .enumerate()
            .map(|(position, path)| {
                let text = def.kind == IndexKind::Text;
                let spec = ColumnSpec {
                    path,
                    field_type: def.type_of(position),
                    collation: def.collation_of(position),
                    // A text field may hold one string or a list of them.
                    array: def.array || text,
                    transient: text,
                };
                self.column_for(spec)
            })
            .collect();
        if def.pk {
            self.pk_index = self.indexes.len();
        }
        self.indexes.push(Index::new(def, columns));
        self.refresh_field_columns();
        self.indexes.len() - 1
    }

    fn column_for(&mut self, spec: ColumnSpec) -> usize {
        let existing = self.columns.iter().position(|c| c.as_ref().is_some_and(|c| c.spec == spec));
        existing.unwrap_or_else(|| {
            self.columns.push(Some(Column::new(spec)));
            self.columns.len() - 1
        })
    }

    pub(crate) fn refresh_field_columns(&mut self) {
        self.field_columns.clear();
        for index in self.indexes.iter().filter(|i| i.text().is_none()) {
            for (field, &column) in index.def.fields.iter().zip(&index.columns) {
                self.field_columns.entry(field.clone()).or_insert(column);
            }
        }
        let used: Vec<bool> =
            (0..self.columns.len()).map(|c| self.indexes.iter().any(|i| i.columns.contains(&c))).collect();
        for (slot, used) in self.columns.iter_mut().zip(used) {
            if !used {
                *slot = None;
            }
        }
    }

    /// The namespace's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Documents stored.
    pub fn len(&self) -> usize {
        self.live.len() as usize
    }

    /// Whether no document is stored.
    pub fn is_empty(&self) -> bool {
        self.live.is_empty()
    }

    /// The index definitions, in the order the indexes were added.
    pub fn index_defs(&self) -> Vec<IndexDef> {
        self.indexes.iter().map(|i| i.def.clone()).collect()
    }

    pub(crate) fn column(&self, id: usize) -> &Column {
        self.columns[id].as_ref().expect("indexes only name live columns")
    }

    /// The collation a field compares with: its canonical column's, else exact.
    pub fn field_collation(&self, field: &str) -> Collation {
        self.field_columns.get(field).map_or(Collation::None, |&c| self.column(c).spec.collation)
    }

    pub(crate) fn pk(&self) -> &Index {
        &self.indexes[self.pk_index]
    }

    pub(crate) fn pk_paths(&self) -> Vec<FieldPath> {
        self.pk().def.paths()
    }

    pub(crate) fn extract(&self, doc: &Value) -> Result<Extracted> {
        extract(doc, &self.columns, &|column| self.column_owner(column))
    }

    /// The pk key of a document from its extracted values, or an error naming the field
    /// when the key is missing.
    pub(crate) fn pk_key(&self, values: &Extracted) -> Result<Key> {
        let pk = self.pk();
        pk_key_of(&self.name, &pk.columns, &pk.def.fields, values)
    }

    /// The pk key for a key given by a client: a JSON scalar, or an array for a
    /// composite key.
    pub(crate) fn key_from_json(&self, key: &Value) -> Result<Key> {
        let pk = self.pk();
        let parts: Vec<&Value> = match (pk.columns.len(), key) {
            (1, key) => vec![key],
            (n, Value::Array(items)) if items.len() == n => items.iter().collect(),
            (n, _) => {
                return Err(Error::InvalidQuery {
                    reason: format!("the primary key of '{}' has {n} fields; give them as an array", self.name),
                });
            }
        };
        let mut scalars = Vec::with_capacity(parts.len());
        for (value, (&column, field)) in parts.into_iter().zip(pk.columns.iter().zip(&pk.def.fields)) {
            let spec = &self.column(column).spec;
            match crate::value::scalar_for_type(value, spec.field_type, spec.collation) {
                Ok(Scalar::Null) | Err(_) => {
                    return Err(Error::WrongType {
                        index: pk.def.name.clone(),
                        field: field.clone(),
                        expected: spec.field_type.name().to_string(),
                        found: crate::error::json_kind(value).to_string(),
                    });
                }
                Ok(scalar) => scalars.push(scalar),
            }
        }
        Ok(match scalars.len() {
            1 => Key::One(scalars.pop().expect("one part")),
            _ => Key::Many(scalars.into_boxed_slice()),
        })
    }

    pub(crate) fn row_of(&self, key: &Key) -> Option<u32> {
        self.pk().get(key).map(|postings| {
            assert_eq!(postings.len(), 1, "a primary key maps to one row");
            let mut row = 0;
            postings.for_each(|r| {
                row = r;
                false
            });
            row
        })
    }

    /// One past the highest row id in use (live or free).
    pub fn row_capacity(&self) -> usize {
        self.docs.len()
    }

    /// The stored document (minified JSON) of row `row`; `None` for a free or unused row.
    pub fn doc(&self, row: u32) -> Option<&Arc<[u8]>> {
        self.docs.get(row as usize).and_then(Option::as_ref)
    }

    /// Approximate heap bytes held: documents, columns, index maps and row bookkeeping.
    pub fn memory_bytes(&self) -> usize {
        let docs =
            self.document_bytes + self.docs.capacity() * std::mem::size_of::<Option<Arc<[u8]>>>() + self.len() * 16;
        let columns: usize = self.columns.iter().flatten().map(Column::memory_bytes).sum();
        let indexes: usize = self.indexes.iter().map(Index::memory_bytes).sum();
        docs + columns + indexes + self.live.serialized_size() + self.free_rows.capacity() * 4
    }

    /// What `Database::describe` reports: definitions, counts and memory.
    pub fn info(&self) -> super::NamespaceInfo {
        super::NamespaceInfo {
            name: self.name.clone(),
            indexes: self.index_defs(),
            documents: self.len(),
            memory_bytes: self.memory_bytes(),
            document_bytes: self.document_bytes,
            index_memory: self.indexes.iter().map(|i| (i.def.name.clone(), i.memory_bytes())).collect(),
            text: self.indexes.iter().filter_map(|i| i.text().map(|t| (i.def.name.clone(), t.stats()))).collect(),
        }
    }
}

impl NamespaceData {
    /// Checks that every index holds exactly the keys its rows' columns say (each live
    /// row found under each of its keys; tree indexes counting no other row). O(n): for
    /// tests and operator checks, not hot paths.
    pub fn verify_indexes(&self) -> std::result::Result<(), String> {
        for index in &self.indexes {
            if let Some(text) = index.text() {
                text.verify().map_err(|e| format!("{}: text index {}: {e}", self.name, index.def.name))?;
            }
        }
        for index in self.indexes.iter().filter(|i| i.has_lookup()) {
            let mut pairs = 0;
            for row in self.live.iter() {
                for key in index.row_keys(&self.columns, row) {
                    pairs += 1;
                    if !index.get(&key).is_some_and(|rows| rows.contains(row)) {
                        return Err(format!("{}: index {} lacks row {row} under {key:?}", self.name, index.def.name));
                    }
                }
            }
            let counted = index.count_rows(std::ops::Bound::Unbounded, std::ops::Bound::Unbounded);
            if counted.is_some_and(|counted| counted != pairs) {
                return Err(format!(
                    "{}: index {} counts {counted:?} rows, expected {pairs}",
                    self.name, index.def.name
                ));
            }
        }
        Ok(())
    }
}

/// The pk key of a document from its extracted values (`columns` and `fields` of the pk
/// index), or an error naming the field when the key is missing.
pub(crate) fn pk_key_of(namespace: &str, columns: &[usize], fields: &[String], values: &Extracted) -> Result<Key> {
    let mut parts = Vec::with_capacity(columns.len());
    for (&column, field) in columns.iter().zip(fields) {
        match values[column].as_ref().and_then(|v| v.first()) {
            Some(value) => parts.push(value.clone()),
            None => return Err(Error::MissingKey { namespace: namespace.to_string(), field: field.clone() }),
        }
    }
    Ok(match parts.len() {
        1 => Key::One(parts.pop().expect("one part")),
        _ => Key::Many(parts.into_boxed_slice()),
    })
}
