//! Live sync: Hotset follows tables of PostgreSQL and MariaDB/MySQL into namespaces by
//! itself, an initial copy and then the source's change stream.
//!
//! Owns: the declaration of sources (`source`), positions in their streams (`position`),
//! one driver per protocol that turns the source's copy and stream into `source::Event`s.
//! Never: write to a namespace except as the source that owns it (`Writes::as_owner`, one
//! group per copied batch or source transaction, with the source's position in it), or
//! move a source's acknowledged position past what Hotset's log holds durably.

pub mod civil;
pub mod mariadb;
pub mod pg;
pub mod position;
pub mod runner;
pub mod source;
pub mod state;

pub use position::{Gtid, Position};
pub use runner::{SourceState, Status, Syncs};
pub use source::{
    ChangeKind, Column, Declaration, ErrorKind, Event, Kind, Row, RowChange, SyncError, TableDecl, TableInfo,
};
