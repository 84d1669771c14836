//! Every write to a database's namespaces, and what it does with its log record.
//!
//! Owns: `Writes`, a database with a chosen `Durability`, whose methods are the one
//! implementation of each document write (namespace and index changes, single-document
//! writes, writes by query, transactions). `Database`'s write methods are this with
//! `Durability::Wait`: they return once the log has acknowledged the write. A caller that
//! batches acknowledgements (a server answering a pipeline) writes through
//! `db.writes(Durability::Collect(&acks))` and waits once on `acks`. Never: settle a record
//! while holding a lock (the wait comes after the lock is released, so other writers
//! queue their records meanwhile), or return without settling a record it appended.

use super::log::{self, Logged};
use super::{Database, Group, Transaction};
use crate::change::Change;
use crate::error::{Error, Result};
use crate::journal::{Durability, Journal};
use crate::namespace::write::WriteMode;
use crate::namespace::{Namespace, NamespaceData};
use crate::query::{Query, SetField, update};
use crate::schema::IndexDef;
use std::sync::Arc;

/// A database whose writes settle their log record by `durability` (see the module docs).
/// Made by [`Database::writes`]; cheap to copy.
#[derive(Debug, Clone, Copy)]
pub struct Writes<'a> {
    pub(super) db: &'a Database,
    durability: Durability<'a>,
    /// Who writes: `None` a client, `Some(source)` a live-sync source, the one writer of
    /// the namespaces it owns (`Database::set_owner`).
    owner: Option<&'a str>,
}

impl<'a> Writes<'a> {
    pub(super) fn new(db: &'a Database, durability: Durability<'a>) -> Writes<'a> {
        Writes { db, durability, owner: None }
    }

    /// These writes as live-sync source `owner`'s, the one writer of the namespaces it
    /// owns.
    pub fn as_owner(self, owner: &'a str) -> Writes<'a> {
        Writes { owner: Some(owner), ..self }
    }

    /// `Error::ReadOnly` for a namespace owned by another writer than this one.
    pub(super) fn check_owner(&self, namespace: &str) -> Result<()> {
        let owners = self.db.owners.read();
        match owners.get(namespace) {
            Some(owner) if Some(owner.as_str()) != self.owner => {
                Err(Error::ReadOnly { namespace: namespace.to_string(), owner: owner.clone() })
            }
            _ => Ok(()),
        }
    }

    /// The database written to.
    pub fn database(&self) -> &'a Database {
        self.db
    }

    /// Settles the record numbered `lsn` (none: the write logged nothing) by this view's
    /// durability. Called once the write's locks are released.
    pub(super) fn settle(&self, lsn: Option<u64>) -> Result<()> {
        self.durability.settle(self.db.journal.ack(lsn)).map_err(Error::from)
    }

    /// Runs `write` on a namespace's data under its write lock, after checking that this
    /// writer may change its documents and that the journal takes writes; `write`
    /// applies the change and returns the lsn of its record, which is settled once the
    /// lock is released.
    pub(super) fn write_namespace<T>(
        &self,
        name: &str,
        write: impl FnOnce(&Namespace, &mut NamespaceData, Option<&dyn Journal>) -> Result<(T, Option<u64>)>,
    ) -> Result<T> {
        self.check_owner(name)?;
        self.write_schema(name, write)
    }

    /// `write_namespace` for a change of indexes, which any writer may make.
    fn write_schema<T>(
        &self,
        name: &str,
        write: impl FnOnce(&Namespace, &mut NamespaceData, Option<&dyn Journal>) -> Result<(T, Option<u64>)>,
    ) -> Result<T> {
        let db = self.db;
        db.journal.writable()?;
        let namespace = db.namespace(name)?;
        let mut data = namespace.data.write();
        if namespace.is_dropped() {
            return Err(Error::UnknownNamespace { namespace: name.to_string() });
        }
        let written = write(&namespace, &mut data, db.journal());
        // Fair hand-over: a writer that releases and at once re-takes the lock would
        // otherwise keep readers waiting for milliseconds under a steady write load.
        parking_lot::RwLockWriteGuard::unlock_fair(data);
        let (value, lsn) = written?;
        self.settle(lsn)?;
        Ok(value)
    }

    /// [`Database::create_namespace`].
    pub fn create_namespace(&self, name: &str, indexes: Vec<IndexDef>) -> Result<()> {
        let db = self.db;
        db.check_name(name)?;
        self.check_owner(name)?;
        if indexes.len() > db.limits.indexes_max {
            return Err(Error::LimitExceeded {
                what: "indexes_max",
                limit: db.limits.indexes_max as u64,
                actual: indexes.len() as u64,
            });
        }
        for def in &indexes {
            db.check_name(&def.name)?;
        }
        let mut data = NamespaceData::new(name, indexes.clone())?;
        data.document_bytes_max = db.limits.document_bytes_max;
        // Before the lock: under back-pressure this waits, and readers need that lock.
        db.journal.writable()?;
        let mut namespaces = db.namespaces.write();
        if namespaces.contains_key(name) {
            return Err(Error::NamespaceExists { namespace: name.to_string() });
        }
        if namespaces.len() >= db.limits.namespaces_max {
            return Err(Error::LimitExceeded {
                what: "namespaces_max",
                limit: db.limits.namespaces_max as u64,
                actual: namespaces.len() as u64 + 1,
            });
        }
        let lsn = db.journal().map(|journal| log::change(journal, &Change::CreateNamespace { name, indexes }));
        namespaces.insert(name.to_string(), Arc::new(Namespace::new(name, data)));
        drop(namespaces);
        self.settle(lsn)
    }

    /// [`Database::open_namespace`].
    pub fn open_namespace(&self, name: &str, indexes: Vec<IndexDef>) -> Result<()> {
        let Ok(namespace) = self.db.namespace(name) else {
            return match self.create_namespace(name, indexes.clone()) {
                Err(Error::NamespaceExists { .. }) => self.open_namespace(name, indexes),
                other => other,
            };
        };
        for def in indexes {
            let exists = namespace.data.read().indexes.iter().any(|i| i.def.name == def.name);
            if !exists {
                match self.add_index(name, def) {
                    Ok(()) | Err(Error::IndexExists { .. }) => {}
                    Err(error) => return Err(error),
                }
            }
        }
        Ok(())
    }

    /// [`Database::drop_namespace`].
    pub fn drop_namespace(&self, name: &str) -> Result<()> {
        let db = self.db;
        self.check_owner(name)?;
        db.journal.writable()?;
        let mut namespaces = db.namespaces.write();
        let namespace =
            namespaces.remove(name).ok_or_else(|| Error::UnknownNamespace { namespace: name.to_string() })?;
        // Under the namespace's write lock, so no writer is half-way through it.
        let _data = namespace.data.write();
        namespace.mark_dropped();
        let lsn = db.journal().map(|journal| log::change(journal, &Change::DropNamespace { name }));
        drop(_data);
        drop(namespaces);
        self.settle(lsn)
    }

    /// [`Database::truncate`].
    pub fn truncate(&self, name: &str) -> Result<()> {
        self.write_namespace(name, |namespace, data, journal| {
            data.truncate();
            namespace.bump_schema_version();
            Ok(((), journal.map(|journal| log::change(journal, &Change::Truncate { namespace: name }))))
        })
    }

    /// [`Database::add_index`].
    pub fn add_index(&self, name: &str, def: IndexDef) -> Result<()> {
        self.db.check_name(&def.name)?;
        let indexes_max = self.db.limits.indexes_max;
        self.write_schema(name, |namespace, data, journal| {
            if data.indexes.len() >= indexes_max {
                return Err(Error::LimitExceeded {
                    what: "indexes_max",
                    limit: indexes_max as u64,
                    actual: data.indexes.len() as u64 + 1,
                });
            }
            data.add_index(def.clone())?;
            namespace.bump_schema_version();
            Ok(((), journal.map(|journal| log::change(journal, &Change::AddIndex { namespace: name, def }))))
        })
    }

    /// [`Database::drop_index`].
    pub fn drop_index(&self, name: &str, index: &str) -> Result<()> {
        self.write_schema(name, |namespace, data, journal| {
            data.drop_index(index)?;
            namespace.bump_schema_version();
            Ok(((), journal.map(|journal| log::change(journal, &Change::DropIndex { namespace: name, index }))))
        })
    }

    fn write(&self, namespace: &str, doc: &serde_json::Value, mode: WriteMode) -> Result<()> {
        self.write_namespace(namespace, |_, data, journal| {
            let undo = data.write(doc, mode)?;
            Ok(((), journal.map(|journal| log::docs(journal, data, [Logged::from(&undo)]))))
        })
    }

    /// [`Database::insert`].
    pub fn insert(&self, namespace: &str, doc: &serde_json::Value) -> Result<()> {
        self.write(namespace, doc, WriteMode::Insert)
    }

    /// [`Database::update`].
    pub fn update(&self, namespace: &str, doc: &serde_json::Value) -> Result<()> {
        self.write(namespace, doc, WriteMode::Update)
    }

    /// [`Database::upsert`].
    pub fn upsert(&self, namespace: &str, doc: &serde_json::Value) -> Result<()> {
        self.write(namespace, doc, WriteMode::Upsert)
    }

    /// [`Database::upsert_json`].
    pub fn upsert_json(&self, namespace: &str, json: &[u8]) -> Result<()> {
        let document_bytes_max = self.db.limits.document_bytes_max;
        if json.len() > document_bytes_max {
            return Err(Error::LimitExceeded {
                what: "document_bytes_max",
                limit: document_bytes_max as u64,
                actual: json.len() as u64,
            });
        }
        self.upsert(namespace, &crate::doc::parse_object(json)?)
    }

    /// [`Database::delete`].
    pub fn delete(&self, namespace: &str, key: &serde_json::Value) -> Result<bool> {
        self.write_namespace(namespace, |_, data, journal| match data.delete_key(key)? {
            Some(undo) => Ok((true, journal.map(|journal| log::docs(journal, data, [Logged::from(&undo)])))),
            None => Ok((false, None)),
        })
    }

    /// [`Database::transaction`]; its commit settles its record by this view's durability.
    pub fn transaction(&self, namespace: &str) -> Result<Transaction<'a>> {
        self.db.namespace(namespace)?;
        Ok(Transaction::new(*self, namespace))
    }

    /// [`Database::group`]; its commit settles its record by this view's durability.
    pub fn group(&self) -> Group<'a> {
        Group::new(*self)
    }

    /// [`Database::update_query`].
    pub fn update_query(&self, query: &Query, sets: &[SetField]) -> Result<usize> {
        let clock = &*self.db.clock;
        self.write_namespace(&query.namespace, |_, data, journal| {
            let rows = update::matching_rows(data, query, clock)?;
            let updates = update::updated_documents(data, &rows, sets)?;
            let count = updates.len();
            update::apply(data, updates);
            let logged = rows.iter().map(|&row| Logged::Row(row));
            Ok((count, journal.filter(|_| count > 0).map(|journal| log::docs(journal, data, logged))))
        })
    }

    /// [`Database::delete_query`].
    pub fn delete_query(&self, query: &Query) -> Result<usize> {
        let clock = &*self.db.clock;
        self.write_namespace(&query.namespace, |_, data, journal| {
            let rows = update::matching_rows(data, query, clock)?;
            let deleted: Vec<super::Document> = rows.iter().map(|&row| data.delete_row(row)).collect();
            let logged = deleted.iter().map(Logged::Deleted);
            Ok((rows.len(), journal.filter(|_| !rows.is_empty()).map(|journal| log::docs(journal, data, logged))))
        })
    }
}
