//! What Hotset keeps of each source, in the database's metadata entries (so it is logged,
//! snapshotted and recovered with the data it describes).
//!
//! Owns: the entries' names and contents: `sync/<name>/declaration` (the declaration as
//! JSON) and `sync/<name>/state` (the position applied and, per table, the position its
//! copy stands at). Never: write an entry except inside the group that writes the changes
//! it describes (the position a record carries covers exactly the changes in it).

use crate::position::Position;
use crate::source::Declaration;
use hotset_core::Database;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

const PREFIX: &str = "sync/";

/// The entry holding a source's declaration.
pub fn declaration_key(name: &str) -> String {
    format!("{PREFIX}{name}/declaration")
}

/// The entry holding a source's progress.
pub fn state_key(name: &str) -> String {
    format!("{PREFIX}{name}/state")
}

/// A source's progress.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct State {
    /// The stream's position: every change before it is applied (`None`: no copy has
    /// started yet).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub position: Option<String>,
    /// Per declared table (by its name in the declaration): the position its copy stands
    /// at. A table not listed is not copied (yet); the stream skips a table's changes up to
    /// its copy's position, which the copy already holds.
    #[serde(default)]
    pub copied: BTreeMap<String, String>,
}

impl State {
    /// The stream's position, parsed.
    pub fn position(&self) -> Option<Position> {
        self.position.as_deref().and_then(Position::parse)
    }

    /// The position table `table`'s copy stands at, if it is copied.
    pub fn copied_at(&self, table: &str) -> Option<Position> {
        self.copied.get(table).and_then(|p| Position::parse(p))
    }

    /// The entry's bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("a state serialises")
    }
}

/// A source's progress as stored (the default when nothing is).
pub fn load_state(db: &Database, name: &str) -> State {
    db.meta(&state_key(name)).and_then(|bytes| serde_json::from_slice(&bytes).ok()).unwrap_or_default()
}

/// Every declaration stored, by name.
pub fn load_declarations(db: &Database) -> Vec<Declaration> {
    db.meta_with_prefix(PREFIX)
        .into_iter()
        .filter(|(key, _)| key.ends_with("/declaration"))
        .filter_map(|(_, bytes)| serde_json::from_slice(&bytes).ok())
        .collect()
}
