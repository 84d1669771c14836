//! Hotset's durable storage: the write-ahead log now; snapshots and recovery next.
//!
//! Owns: every byte Hotset puts on disk and the rules for reading it back after a crash.
//! Never: interprets documents or queries (payloads are opaque bytes here), or touches a
//! file except through [`disk::Disk`], so tests can inject faults anywhere.
//!
//! Modules:
//! - [`disk`]: the file-system seam ([`Disk`], [`OsDisk`], [`FaultyDisk`]).
//! - [`frame`]: the checksummed frame shared by WAL segments and snapshot files.
//! - [`wal`]: segments, the group-commit writer ([`Wal`]) and [`replay`].
//! - `lanes`: recovery applies snapshot blocks and log records on one thread per core,
//!   each namespace and keyspace on one of them.

#![forbid(unsafe_code)]

pub mod disk;
pub mod frame;
mod lanes;
pub mod lock;
pub mod snapshot;
pub mod store;
pub mod wal;

pub use disk::{Disk, DiskFile, FaultyDisk, OsDisk};
pub use frame::{FRAME_HEADER_BYTES, FRAME_PAYLOAD_BYTES_MAX, FrameRead, encode_frame, read_frame};
pub use snapshot::{SnapshotError, SnapshotHooks, SnapshotInfo};
pub use store::{ReadBarrier, RecoveryReport, Store, StoreError, StoreOptions};
pub use wal::{FsyncPolicy, RecoveryMode, ReplayReport, TornTail, Wal, WalError, WalOptions, WalStats, replay};
